use super::*;
use crate::config::{Config, ConfigInput, Given};
use crate::error::{Error, Field, Rule};
use crate::state::State;
use crate::transition::{advance, filled_at, initial_state};
use proptest::prelude::*;

/// Ms since the epoch of `year-month-day hour:00` UTC.
fn at(year: i64, month: u32, day: u32, hour: u32) -> f64 {
    days_from_civil(year, month, day) as f64 * DAY_MS + f64::from(hour) * 3_600_000.0
}

fn calendar(rate: f64, unit: CalendarUnit, start: Option<f64>) -> Config {
    let input = ConfigInput::calendar(rate, unit);
    Config::try_from(&start.map_or(input, |start| input.with("start", start))).unwrap()
}

/// The starts of `count` windows from the one holding `from`.
fn starts(unit: CalendarUnit, anchor_ms: f64, from: f64, count: usize) -> Vec<f64> {
    let mut window = window_at(unit, anchor_ms, from);
    let mut starts = vec![window.start_ms];
    for _ in 1..count {
        window = window_at(unit, anchor_ms, window.end_ms);
        starts.push(window.start_ms);
    }
    starts
}

#[test]
fn civil_dates_round_trip_and_know_their_epoch() {
    assert_eq!(days_from_civil(1970, 1, 1), 0);
    assert_eq!(days_from_civil(2000, 3, 1), 11_017);
    assert_eq!(civil_from_days(-1), (1969, 12, 31));
    for days in (-800_000..800_000).step_by(97) {
        let (year, month, day) = civil_from_days(days);
        assert_eq!(days_from_civil(year, month, day), days);
    }
    // The last day of a 400-year era (Feb 29 of a year divisible by 400), which the stride above
    // steps over (found by the mutation run: `- days / 146_096` made `+` went unseen).
    for year in [1600, 2000, 2400, -400] {
        assert_eq!(civil_from_days(days_from_civil(year, 2, 29)), (year, 2, 29));
        assert_eq!(civil_from_days(days_from_civil(year, 3, 1)), (year, 3, 1));
    }
}

#[test]
fn leap_years_are_every_fourth_but_not_2100_and_yes_2000() {
    assert!(is_leap_year(2000) && is_leap_year(2024) && is_leap_year(-4));
    assert!(!is_leap_year(2100) && !is_leap_year(1900) && !is_leap_year(2023));
    assert_eq!((days_in_month(2100, 2), days_in_month(2000, 2), days_in_month(2024, 4)), (28, 29, 30));
    // Feb 28, 2100 is followed by Mar 1.
    assert_eq!(civil_from_days(days_from_civil(2100, 2, 28) + 1), (2100, 3, 1));
}

#[test]
fn a_month_anchored_on_the_31st_starts_on_the_last_day_of_shorter_months_and_never_drifts() {
    let anchor = at(2024, 1, 31, 0);
    let expected = [at(2024, 1, 31, 0), at(2024, 2, 29, 0), at(2024, 3, 31, 0), at(2024, 4, 30, 0), at(2024, 5, 31, 0)];
    assert_eq!(starts(CalendarUnit::Month, anchor, at(2024, 2, 10, 5), 5), expected);
    assert_eq!(starts(CalendarUnit::Month, anchor, at(2025, 2, 1, 0), 2), [at(2025, 1, 31, 0), at(2025, 2, 28, 0)]);
    // 2100 is not a leap year: Feb 28.
    assert_eq!(starts(CalendarUnit::Month, anchor, at(2100, 2, 15, 0), 2), [at(2100, 1, 31, 0), at(2100, 2, 28, 0)]);
}

#[test]
fn months_anchored_on_the_29th_and_30th_clamp_in_february_only() {
    for (day, february) in [(29, at(2023, 2, 28, 6)), (30, at(2023, 2, 28, 6))] {
        let anchor = at(2022, 11, day, 6);
        assert_eq!(starts(CalendarUnit::Month, anchor, at(2023, 1, 30, 7), 3), [at(2023, 1, day, 6), february, at(2023, 3, day, 6)]);
    }
    assert_eq!(starts(CalendarUnit::Month, at(2022, 11, 29, 0), at(2024, 2, 29, 0), 1), [at(2024, 2, 29, 0)]);
}

#[test]
fn a_year_anchored_on_feb_29_starts_on_feb_28_in_common_years() {
    let anchor = at(2024, 2, 29, 12);
    let expected = [at(2024, 2, 29, 12), at(2025, 2, 28, 12), at(2026, 2, 28, 12), at(2027, 2, 28, 12), at(2028, 2, 29, 12)];
    assert_eq!(starts(CalendarUnit::Year, anchor, at(2024, 6, 1, 0), 5), expected);
    assert_eq!(starts(CalendarUnit::Year, anchor, at(2100, 3, 1, 0), 2), [at(2100, 2, 28, 12), at(2101, 2, 28, 12)]);
}

#[test]
fn without_start_windows_begin_at_midnight_on_monday_on_the_first_and_on_january_first() {
    let now = at(2026, 11, 28, 18); // a Saturday
    let window = |unit: CalendarUnit| window_at(unit, unit.default_anchor_ms(), now);
    assert_eq!(window(CalendarUnit::Day).start_ms, at(2026, 11, 28, 0));
    assert_eq!(window(CalendarUnit::Week).start_ms, at(2026, 11, 23, 0));
    assert_eq!(window(CalendarUnit::Week).end_ms, at(2026, 11, 30, 0));
    assert_eq!((window(CalendarUnit::Month).start_ms, window(CalendarUnit::Month).end_ms), (at(2026, 11, 1, 0), at(2026, 12, 1, 0)));
    assert_eq!((window(CalendarUnit::Year).start_ms, window(CalendarUnit::Year).end_ms), (at(2026, 1, 1, 0), at(2027, 1, 1, 0)));
    // A fresh state starts at the window's start, never at random.
    for unit in CalendarUnit::ALL {
        let config = calendar(5.0, unit, None);
        assert_eq!(initial_state(&config, now, 0.75), State { value: 5.0, ts: window(unit).start_ms }, "{unit:?}");
    }
}

#[test]
fn days_and_weeks_start_at_the_anchors_time_and_weekday() {
    let anchor = at(2026, 1, 7, 9); // a Wednesday, 09:00
    assert_eq!(window_at(CalendarUnit::Day, anchor, at(2026, 11, 28, 8)).start_ms, at(2026, 11, 27, 9));
    assert_eq!(window_at(CalendarUnit::Week, anchor, at(2026, 11, 28, 8)).start_ms, at(2026, 11, 25, 9));
    assert_eq!(window_at(CalendarUnit::Week, anchor, at(2026, 11, 25, 9)).start_ms, at(2026, 11, 25, 9));
}

#[test]
fn a_monthly_quota_refills_on_the_anchor_day_and_says_when() {
    let config = calendar(100.0, CalendarUnit::Month, Some(at(2024, 1, 31, 0)));
    let state = State { value: 3.0, ts: at(2024, 1, 31, 0) };
    let refused = advance(state, &config, at(2024, 2, 20, 0), 5.0);
    assert_eq!((refused.value, refused.ts, refused.retry_after_ms), (-2.0, at(2024, 1, 31, 0), Some(at(2024, 2, 29, 0) - at(2024, 2, 20, 0))));
    let refilled = advance(state, &config, at(2024, 2, 29, 0), 5.0);
    assert_eq!((refilled.value, refilled.ts), (95.0, at(2024, 2, 29, 0)));
}

#[test]
fn unused_quota_carries_over_one_rate_per_calendar_window_up_to_capacity() {
    let input = ConfigInput::calendar(10.0, CalendarUnit::Month).with("capacity", 100.0);
    let config = Config::try_from(&input).unwrap();
    let state = State { value: 0.0, ts: at(2023, 1, 1, 0) };
    assert_eq!(advance(state, &config, at(2023, 12, 31, 23), 0.0).value, 100.0);
    assert_eq!(advance(state, &config, at(2023, 7, 4, 0), 0.0).value, 60.0);
    assert_eq!(advance(state, &config, at(2024, 3, 1, 0), 0.0).value, 100.0);
}

#[test]
fn a_clock_stepping_back_over_a_boundary_keeps_the_later_window() {
    let config = calendar(10.0, CalendarUnit::Month, None);
    let later = State { value: 2.0, ts: at(2026, 12, 1, 0) };
    let seen = advance(later, &config, at(2026, 11, 30, 23), 1.0);
    assert_eq!((seen.value, seen.ts), (1.0, at(2026, 12, 1, 0)));
    let short = advance(later, &config, at(2026, 11, 30, 23), 3.0);
    // Due no earlier than the end of the state's own window (Jan 1).
    assert!(at(2026, 11, 30, 23) + short.retry_after_ms.unwrap() >= at(2027, 1, 1, 0));
}

#[test]
fn a_calendar_period_is_a_fixed_windows_unsharded_and_anything_else_is_named() {
    let problem = |input: ConfigInput| match Config::try_from(&input).unwrap_err() {
        Error::InvalidConfig(problem) => (problem.field, problem.rule),
        other => panic!("{other:?}"),
    };
    let bucket = ConfigInput { period: Given::Calendar(CalendarUnit::Day), ..ConfigInput::token_bucket(1.0, 1.0) };
    assert_eq!(problem(bucket), (Field::Period, Rule::CalendarOfBucket));
    let sliding = ConfigInput { period: Given::Calendar(CalendarUnit::Day), ..ConfigInput::sliding_window(1.0, 1.0) };
    assert_eq!(problem(sliding), (Field::Period, Rule::CalendarOfBucket));
    assert_eq!(problem(ConfigInput::calendar(4.0, CalendarUnit::Week).with("shards", 2.0)), (Field::Shards, Rule::CalendarShards));
    assert_eq!(problem(ConfigInput::fixed_window(1.0, 1.0).with("period", Given::Other)), (Field::Period, Rule::PeriodName));
    assert_eq!(problem(ConfigInput::calendar(4.0, CalendarUnit::Week).with("start", 1e300)), (Field::Start, Rule::StartOfWindow));
    let month = calendar(4.0, CalendarUnit::Month, None);
    assert_eq!((month.period_ms, month.start_ms, month.calendar), (2_629_746_000.0, Some(0.0), Some(CalendarUnit::Month)));
    let beyond = crate::request::check_now(&month, 1e16).unwrap_err();
    assert_eq!(beyond.problem().map(|problem| (problem.field, problem.rule)), Some((Field::Now, Rule::CalendarInstant)));
}

#[test]
fn draft_10_figures_reset_at_the_windows_end_and_show_its_length() {
    let config = calendar(10.0, CalendarUnit::Month, None);
    let now = at(2026, 2, 27, 0);
    let shown = crate::figures::figures(State { value: 4.0, ts: at(2026, 2, 1, 0) }, &config, now, None, 1);
    assert_eq!((shown.remaining, shown.reset, shown.window), (4.0, 2.0 * 86_400.0, 28.0 * 86_400.0));
    // Draft-11's effective window: until the window ends, as any fixed window's.
    assert_eq!(shown.effective_window, 2.0 * 86_400.0);
}

fn a_unit() -> impl Strategy<Value = CalendarUnit> {
    prop_oneof![Just(CalendarUnit::Day), Just(CalendarUnit::Week), Just(CalendarUnit::Month), Just(CalendarUnit::Year)]
}

/// An anchor: the unit's default, a whole ms, or a month end / Feb 29.
fn an_anchor() -> impl Strategy<Value = Option<f64>> {
    prop_oneof![
        Just(None),
        (-4e12..8e12f64).prop_map(|ms| Some(crate::math::floor(ms))),
        prop_oneof![Just(at(2024, 2, 29, 0)), Just(at(2023, 1, 31, 23)), Just(at(2022, 5, 30, 12)), Just(at(2000, 1, 29, 0))].prop_map(Some),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2_000, ..ProptestConfig::default() })]

    #[test]
    fn every_instant_lies_in_its_window_and_windows_tile(unit in a_unit(), anchor in an_anchor(), now in -8e15..8e15f64) {
        let config = calendar(1.0, unit, anchor);
        let anchor = config.start_ms.unwrap();
        let window = window_at(unit, anchor, now);
        prop_assert!(window.start_ms <= now && now < window.end_ms);
        prop_assert!(window.end_ms - window.start_ms <= unit.longest_ms());
        prop_assert_eq!(window_at(unit, anchor, window.end_ms).start_ms, window.end_ms);
        prop_assert_eq!(window_at(unit, anchor, window.start_ms), window);
    }

    /// Windows passed are counted from the mean length: exact between any two window starts.
    #[test]
    fn the_windows_between_two_starts_are_counted_exactly(unit in a_unit(), anchor in an_anchor(), from in -4e12..8e12f64, apart in 0usize..400) {
        let config = calendar(1.0, unit, anchor);
        let grid = starts(unit, config.start_ms.unwrap(), from, apart + 1);
        let counted = crate::math::floor((grid[apart] - grid[0]) / unit.nominal_ms() + 0.5);
        prop_assert_eq!(counted, apart as f64);
    }

    /// A wait is never early: at `now + retryAfter` the window has rolled and the same call is granted.
    #[test]
    fn retry_after_is_never_early(
        unit in a_unit(), anchor in an_anchor(), rate in prop_oneof![Just(1.0), Just(100.0), 0.5..50.0f64],
        capacity_factor in 1.0..4.0f64, value_factor in -3.0..1.0f64, from in 0.0..4e12f64, back in 0usize..3,
        later in 0.0..1.0f64, count_factor in 0.0..1.0f64,
    ) {
        let config = Config::try_from(&{
            let input = ConfigInput::calendar(rate, unit).with("capacity", rate * capacity_factor);
            anchor.map_or(input, |anchor| input.with("start", anchor))
        }).unwrap();
        let anchor = config.start_ms.unwrap();
        // A state on the grid: from a window at or before now's, or (clock stepped back) after it.
        let window = window_at(unit, anchor, from);
        let ts = starts(unit, anchor, window.start_ms, back + 1)[back];
        let now = window.start_ms + later * (window.end_ms - window.start_ms - 1.0);
        let state = State { value: config.capacity * value_factor, ts };
        let count = config.capacity * count_factor;
        let next = advance(state, &config, now, count);
        if let Some(wait) = next.retry_after_ms {
            let then = now + wait;
            prop_assert!(window_at(unit, anchor, then).start_ms > window_at(unit, anchor, now).start_ms);
            prop_assert!(window_at(unit, anchor, then).start_ms > next.ts);
            prop_assert!(advance(state, &config, then, count).value >= 0.0, "short at {} + {}", now, wait);
        } else {
            prop_assert!(next.value >= 0.0);
        }
        let written = State { value: next.value, ts: next.ts };
        let filled = filled_at(written, &config);
        prop_assert!(filled.is_finite());
        let then = advance(written, &config, filled, 0.0).value;
        prop_assert!(then >= config.capacity, "filled at {} holds {}", filled, then);
    }
}
