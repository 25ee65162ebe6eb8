/** One second in milliseconds, the unit of `period`, `ts`, `start` and `retryAfter`. */
export const SECOND = 1000;
/** One minute in milliseconds. */
export const MINUTE = 60 * SECOND;
/** One hour in milliseconds. */
export const HOUR = 60 * MINUTE;
/** One day in milliseconds. */
export const DAY = 24 * HOUR;
/** One week in milliseconds. */
export const WEEK = 7 * DAY;
