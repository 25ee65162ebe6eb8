//! Calendar periods: fixed windows of one UTC day, week, month or year,
//! aligned to an anchor instant (the config's `start`), in pure civil-date
//! arithmetic (Howard Hinnant's `days_from_civil` and `civil_from_days`).
//!
//! A month anchored on the 31st starts on the last day of shorter months and
//! on the 31st again where the month has one: the anchor's day is clamped in
//! each month, never carried over. A year anchored on Feb 29 starts on Feb 28
//! in common years. Every window starts at the anchor's time of day.

/// Milliseconds in a UTC day (no leap seconds: UTC as JavaScript's `Date` counts it).
pub const DAY_MS: f64 = 86_400_000.0;

/// A calendar period's unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum CalendarUnit {
    /// One UTC day, from the anchor's time of day.
    Day = 1,
    /// Seven days, from the anchor's weekday and time of day.
    Week = 2,
    /// One month, from the anchor's day of the month (clamped) and time of day.
    Month = 3,
    /// One year, from the anchor's month and day (Feb 29: Feb 28 in common years) and time of day.
    Year = 4,
}

impl CalendarUnit {
    /// Every unit, in the order of their codes (from 1).
    pub const ALL: [CalendarUnit; 4] = [CalendarUnit::Day, CalendarUnit::Week, CalendarUnit::Month, CalendarUnit::Year];

    /// The name configs use for it: `"day"`, `"week"`, `"month"` or `"year"`.
    pub fn name(self) -> &'static str {
        match self {
            CalendarUnit::Day => "day",
            CalendarUnit::Week => "week",
            CalendarUnit::Month => "month",
            CalendarUnit::Year => "year",
        }
    }

    /// The unit with code `code` (1 to 4), if any.
    pub fn from_code(code: f64) -> Option<CalendarUnit> {
        CalendarUnit::ALL.into_iter().find(|unit| f64::from(*unit as u8) == code)
    }

    /// The mean length of its windows in ms (a Gregorian month is 30.436875
    /// days, a year 365.2425): the `period` its refill rate and its count of
    /// windows passed are measured in. Exact for days and weeks.
    pub fn nominal_ms(self) -> f64 {
        match self {
            CalendarUnit::Day => DAY_MS,
            CalendarUnit::Week => 7.0 * DAY_MS,
            CalendarUnit::Month => 2_629_746_000.0,
            CalendarUnit::Year => 31_556_952_000.0,
        }
    }

    /// The longest of its windows in ms (31 days, 366 days): waits and fills
    /// that span more than the current window count these, so they are never early.
    pub fn longest_ms(self) -> f64 {
        match self {
            CalendarUnit::Day => DAY_MS,
            CalendarUnit::Week => 7.0 * DAY_MS,
            CalendarUnit::Month => 31.0 * DAY_MS,
            CalendarUnit::Year => 366.0 * DAY_MS,
        }
    }

    /// Where its windows start when a config names no `start`: midnight UTC
    /// (days), Monday midnight UTC (weeks: 1970-01-05), the 1st (months) and
    /// Jan 1 (years).
    pub fn default_anchor_ms(self) -> f64 {
        match self {
            CalendarUnit::Week => 4.0 * DAY_MS,
            _ => 0.0,
        }
    }
}

/// One window: `start_ms <= instant < end_ms`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Window {
    /// Its first instant, ms since the epoch.
    pub start_ms: f64,
    /// The first instant of the next window.
    pub end_ms: f64,
}

/// Days since 1970-01-01 of the civil date `year`-`month`-`day` (proleptic Gregorian).
pub fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month_from_march = i64::from(if month > 2 { month - 3 } else { month + 9 });
    let day_of_year = (153 * month_from_march + 2) / 5 + i64::from(day) - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// The civil date `(year, month, day)` of `days` since 1970-01-01.
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let days = days + 719_468;
    let era = days.div_euclid(146_097);
    let day_of_era = days - era * 146_097;
    let year_of_era = (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = (day_of_year - (153 * month_from_march + 2) / 5 + 1) as u32;
    let month = if month_from_march < 10 { month_from_march + 3 } else { month_from_march - 9 } as u32;
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// Whether `year` has a Feb 29 (every 4th, but not every 100th, but every 400th).
pub fn is_leap_year(year: i64) -> bool {
    year.rem_euclid(4) == 0 && (year.rem_euclid(100) != 0 || year.rem_euclid(400) == 0)
}

/// The number of days in `month` of `year`.
pub fn days_in_month(year: i64, month: u32) -> u32 {
    match month {
        2 if is_leap_year(year) => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// The most days from the epoch [`split`] keeps: far beyond any instant a
/// call may name (2^53 ms is about 1.04e8 days), and far inside the range
/// where the civil arithmetic's `i64`s are exact.
const MAX_DAYS: f64 = 1e12;

/// An instant split into whole days since the epoch and the ms into that day
/// (`0 <= ms < DAY_MS`). Total: an instant beyond ±[`MAX_DAYS`] days (which no
/// call reaches: requests are checked) saturates there instead of overflowing.
fn split(instant_ms: f64) -> (i64, f64) {
    let days = crate::math::floor(instant_ms / DAY_MS).clamp(-MAX_DAYS, MAX_DAYS);
    let mut time_of_day = instant_ms - days * DAY_MS;
    let mut days = days as i64;
    // Division can round across midnight: keep the time of day in range.
    if time_of_day < 0.0 {
        days -= 1;
        time_of_day += DAY_MS;
    } else if time_of_day >= DAY_MS {
        days += 1;
        time_of_day -= DAY_MS;
    }
    (days, time_of_day)
}

/// The window of `unit` anchored at `anchor_ms` that holds `now_ms`.
///
/// Both instants must be within ±[`MAX_INSTANT_MS`](crate::MAX_INSTANT_MS)
/// (the config and the request check it).
///
/// ```
/// use ratebound::{window_at, CalendarUnit};
/// // Anchored on 2024-01-31: the window holding 2024-02-15 is Jan 31 to Feb 29 (a leap year).
/// let window = window_at(CalendarUnit::Month, 1_706_659_200_000.0, 1_707_955_200_000.0);
/// assert_eq!((window.start_ms, window.end_ms), (1_706_659_200_000.0, 1_709_164_800_000.0));
/// ```
pub fn window_at(unit: CalendarUnit, anchor_ms: f64, now_ms: f64) -> Window {
    match unit {
        CalendarUnit::Day | CalendarUnit::Week => {
            let length_ms = unit.nominal_ms();
            let mut start_ms = anchor_ms + crate::math::floor((now_ms - anchor_ms) / length_ms) * length_ms;
            // Rounding may put the start an ulp past either edge: keep now inside.
            if start_ms > now_ms {
                start_ms -= length_ms;
            } else if start_ms + length_ms <= now_ms {
                start_ms += length_ms;
            }
            Window { start_ms, end_ms: start_ms + length_ms }
        }
        CalendarUnit::Month | CalendarUnit::Year => {
            let (anchor_days, time_of_day) = split(anchor_ms);
            let (_, anchor_month, anchor_day) = civil_from_days(anchor_days);
            let (year, month, _) = civil_from_days(split(now_ms).0);
            let months = if unit == CalendarUnit::Month { 1 } else { 12 };
            // Windows are numbered in months since year 0: a year's starts in its anchor's month.
            let start_of = |index: i64| {
                let (year, month) = (index.div_euclid(12), index.rem_euclid(12) as u32 + 1);
                let day = anchor_day.min(days_in_month(year, month));
                days_from_civil(year, month, day) as f64 * DAY_MS + time_of_day
            };
            let mut index = match unit {
                CalendarUnit::Month => year * 12 + i64::from(month) - 1,
                _ => year * 12 + i64::from(anchor_month) - 1,
            };
            if start_of(index) > now_ms {
                index -= months;
            }
            Window { start_ms: start_of(index), end_ms: start_of(index + months) }
        }
    }
}

#[cfg(test)]
mod tests;
