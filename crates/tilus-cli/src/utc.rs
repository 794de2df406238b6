//! The UTC date and time of a moment as ISO 8601 (`2026-12-01T15:30:00Z`), for the rows
//! `bench matmul --record` writes. A few lines of calendar arithmetic instead of a date crate:
//! the command needs one format, in UTC only, and nothing else a date library offers.

use std::time::{SystemTime, UNIX_EPOCH};

/// `t` as `YYYY-MM-DDTHH:MM:SSZ`, in UTC, to the second (a moment before 1970, from a clock
/// set wrong, is written as what it is rather than refused).
pub fn iso8601(t: SystemTime) -> String {
    let secs = match t.duration_since(UNIX_EPOCH) {
        Ok(d) => i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
        Err(e) => {
            // the second a moment falls in, counted down: 0.5 s before 1970 is in second -1
            let d = e.duration();
            -i64::try_from(d.as_secs() + u64::from(d.subsec_nanos() > 0)).unwrap_or(i64::MAX)
        }
    };
    from_unix_seconds(secs)
}

/// Seconds since 1970-01-01T00:00:00Z as ISO 8601.
pub fn from_unix_seconds(secs: i64) -> String {
    let (days, rest) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z",
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

/// The proleptic Gregorian (year, month, day) of a day counted from 1970-01-01, by Howard
/// Hinnant's `civil_from_days`: the calendar shifted to start in March, so that the leap day
/// ends a year, then counted in 400-year eras of 146 097 days.
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468; // days from 0000-03-01
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097); // day of the era, [0, 146096]
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365; // [0, 399]
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100); // day of the March-based year
    let mp = (5 * doy + 2) / 153; // March = 0
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn known_moments_are_written_in_utc() {
        for (secs, text) in [
            (0, "1970-01-01T00:00:00Z"),
            (-1, "1969-12-31T23:59:59Z"),
            (951_868_799, "2000-02-29T23:59:59Z"),
            (1_796_139_000, "2026-12-01T15:30:00Z"),
            (4_107_542_400, "2100-03-01T00:00:00Z"),
            (-2_208_988_800, "1900-01-01T00:00:00Z"),
        ] {
            assert_eq!(from_unix_seconds(secs), text, "{secs}");
        }
    }

    #[test]
    fn every_day_follows_the_one_before() {
        // 1600-03-01 to 2400-03-01: leap years by the 4/100/400 rule, each day once
        assert_eq!(civil_from_days(-135_080), (1600, 3, 1));
        assert_eq!(civil_from_days(157_114), (2400, 3, 1));
        let mut last = civil_from_days(-135_080);
        for day in -135_079..=157_114 {
            let (y, m, d) = civil_from_days(day);
            let leap = (last.0 % 4 == 0 && last.0 % 100 != 0) || last.0 % 400 == 0;
            let len = [
                31,
                if leap { 29 } else { 28 },
                31,
                30,
                31,
                30,
                31,
                31,
                30,
                31,
                30,
                31,
            ];
            let next = if last.2 < len[(last.1 - 1) as usize] {
                (last.0, last.1, last.2 + 1)
            } else if last.1 < 12 {
                (last.0, last.1 + 1, 1)
            } else {
                (last.0 + 1, 1, 1)
            };
            assert_eq!((y, m, d), next, "day {day}");
            last = (y, m, d);
        }
    }

    #[test]
    fn system_times_convert_on_both_sides_of_1970() {
        let at = |s: u64| UNIX_EPOCH + Duration::from_secs(s);
        assert_eq!(iso8601(at(1_796_139_000)), "2026-12-01T15:30:00Z");
        let before = UNIX_EPOCH - Duration::from_millis(500);
        assert_eq!(iso8601(before), "1969-12-31T23:59:59Z");
    }
}
