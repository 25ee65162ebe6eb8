//! How a calendar period crosses the boundary: a config's `period` number is
//! its ms, or minus its calendar unit's code (`-1` day, `-2` week, `-3` month,
//! `-4` year), which no valid period in ms can be. Named once here, for
//! [`super::io`]'s compiled configs.

use crate::calendar::CalendarUnit;
use crate::config::Config;

/// A compiled config's `period` number read back: the ms the transitions count
/// in (a calendar unit's mean length) and the calendar unit, if any.
pub fn period_of(period: f64) -> (f64, Option<CalendarUnit>) {
    let calendar = if period < 0.0 { CalendarUnit::from_code(-period) } else { None };
    (calendar.map_or(period, CalendarUnit::nominal_ms), calendar)
}

/// A config's `period` as it crosses: its ms, or minus its calendar unit's code.
pub fn period_number(config: &Config) -> f64 {
    config.calendar.map_or(config.period_ms, |unit| -f64::from(unit as u8))
}
