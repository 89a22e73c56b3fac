//! HTTP-date parsing (RFC 9110 §5.6.7), for Retry-After values given as a date.
//!
//! RFC 9110 requires a recipient to accept all three formats that HTTP has used:
//!
//! - IMF-fixdate, the one senders must use: `Sun, 06 Nov 1994 08:49:37 GMT`;
//! - the obsolete RFC 850 format: `Sunday, 06-Nov-94 08:49:37 GMT`;
//! - the obsolete asctime format: `Sun Nov  6 08:49:37 1994`.
//!
//! Parsing is strict: wrong separators, an impossible date or a weekday that does not match the
//! date are errors, because a client that guesses at a malformed date may guess "wait forever".
//! Calendar arithmetic is done here (proleptic Gregorian, UTC) so that nothing depends on the
//! machine's time zone or a date crate's version.

use std::fmt;

const DAY_NAMES: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
const LONG_DAY_NAMES: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];
const MONTH_NAMES: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

/// Why a value is not an HTTP-date.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpDateError(String);

impl fmt::Display for HttpDateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for HttpDateError {}

fn error(message: impl Into<String>) -> HttpDateError {
    HttpDateError(message.into())
}

/// Parses an HTTP-date into seconds since the Unix epoch.
///
/// `now_unix_s` is needed only for the RFC 850 format's two-digit year: RFC 9110 says a year
/// that would lie more than 50 years in the future means the most recent past year with the
/// same last two digits.
pub fn parse_http_date(value: &str, now_unix_s: i64) -> Result<i64, HttpDateError> {
    let (weekday_name, rest) = match value.split_once(", ") {
        Some(split) => split,
        None => {
            return parse_asctime(value);
        }
    };
    if let Some(weekday) = DAY_NAMES.iter().position(|name| *name == weekday_name) {
        return parse_imf_fixdate(rest, weekday);
    }
    if let Some(weekday) = LONG_DAY_NAMES.iter().position(|name| *name == weekday_name) {
        return parse_rfc850(rest, weekday, now_unix_s);
    }
    Err(error(format!(
        "`{weekday_name}` is not a day name (expected Sun..Sat, or Sunday..Saturday in the RFC 850 format)"
    )))
}

/// `06 Nov 1994 08:49:37 GMT`, after `Sun, `.
fn parse_imf_fixdate(rest: &str, weekday: usize) -> Result<i64, HttpDateError> {
    let parts: Vec<&str> = rest.split(' ').collect();
    let [day, month, year, time, zone] = parts[..] else {
        return Err(error(
            "expected IMF-fixdate `Sun, 06 Nov 1994 08:49:37 GMT`",
        ));
    };
    expect_gmt(zone)?;
    let date = CivilDate {
        year: digits(year, 4, "year")?,
        month: month_number(month)?,
        day: digits(day, 2, "day")?,
    };
    date.to_unix_seconds(time, weekday)
}

/// `06-Nov-94 08:49:37 GMT`, after `Sunday, `.
fn parse_rfc850(rest: &str, weekday: usize, now_unix_s: i64) -> Result<i64, HttpDateError> {
    let parts: Vec<&str> = rest.split(' ').collect();
    let [date, time, zone] = parts[..] else {
        return Err(error(
            "expected RFC 850 date `Sunday, 06-Nov-94 08:49:37 GMT`",
        ));
    };
    expect_gmt(zone)?;
    let date_parts: Vec<&str> = date.split('-').collect();
    let [day, month, two_digit_year] = date_parts[..] else {
        return Err(error(format!("`{date}` is not a date like `06-Nov-94`")));
    };
    let two_digit_year = digits(two_digit_year, 2, "year")?;
    let (now_year, _, _) = civil_from_days(now_unix_s.div_euclid(86_400));
    let mut year = now_year - now_year.rem_euclid(100) + two_digit_year;
    if year > now_year + 50 {
        year -= 100;
    }
    let date = CivilDate {
        year,
        month: month_number(month)?,
        day: digits(day, 2, "day")?,
    };
    date.to_unix_seconds(time, weekday)
}

/// `Sun Nov  6 08:49:37 1994`: the day of the month is two digits or a space and one digit.
fn parse_asctime(value: &str) -> Result<i64, HttpDateError> {
    let shape = "expected an HTTP-date such as `Sun, 06 Nov 1994 08:49:37 GMT`";
    // Fixed layout: "Www Mmm DD HH:MM:SS YYYY", 24 bytes.
    if value.len() != 24 || !value.is_ascii() {
        return Err(error(shape));
    }
    let field = |range: std::ops::Range<usize>| &value[range];
    if [3, 7, 10, 19].iter().any(|&i| &value[i..=i] != " ") {
        return Err(error(shape));
    }
    let weekday = DAY_NAMES
        .iter()
        .position(|name| *name == field(0..3))
        .ok_or_else(|| error(shape))?;
    let day_text = field(8..10);
    let day = match day_text.strip_prefix(' ') {
        Some(single) => digits(single, 1, "day")?,
        None => digits(day_text, 2, "day")?,
    };
    let date = CivilDate {
        year: digits(field(20..24), 4, "year")?,
        month: month_number(field(4..7))?,
        day,
    };
    date.to_unix_seconds(field(11..19), weekday)
}

fn expect_gmt(zone: &str) -> Result<(), HttpDateError> {
    if zone == "GMT" {
        Ok(())
    } else {
        Err(error(format!(
            "time zone `{zone}` is not allowed: HTTP-dates are always `GMT`"
        )))
    }
}

fn month_number(name: &str) -> Result<i64, HttpDateError> {
    MONTH_NAMES
        .iter()
        .position(|month| *month == name)
        .map(|index| index as i64 + 1)
        .ok_or_else(|| error(format!("`{name}` is not a month name (Jan..Dec)")))
}

/// Exactly `count` ASCII digits.
fn digits(text: &str, count: usize, what: &str) -> Result<i64, HttpDateError> {
    if text.len() == count && text.bytes().all(|b| b.is_ascii_digit()) {
        Ok(text.parse().expect("ASCII digits of bounded length parse"))
    } else {
        Err(error(format!(
            "`{text}` is not a {what} of {count} digit{}",
            if count == 1 { "" } else { "s" }
        )))
    }
}

struct CivilDate {
    year: i64,
    month: i64,
    day: i64,
}

impl CivilDate {
    /// Checks the date and the `HH:MM:SS` time, checks the weekday, and converts to Unix time.
    fn to_unix_seconds(&self, time: &str, weekday: usize) -> Result<i64, HttpDateError> {
        let days_in_month = match self.month {
            2 if is_leap_year(self.year) => 29,
            2 => 28,
            4 | 6 | 9 | 11 => 30,
            _ => 31,
        };
        if !(1..=days_in_month).contains(&self.day) {
            return Err(error(format!(
                "{:04}-{:02} has no day {}",
                self.year, self.month, self.day
            )));
        }
        let time_parts: Vec<&str> = time.split(':').collect();
        let [hour, minute, second] = time_parts[..] else {
            return Err(error(format!("`{time}` is not a time like `08:49:37`")));
        };
        let (hour, minute, second) = (
            digits(hour, 2, "hour")?,
            digits(minute, 2, "minute")?,
            digits(second, 2, "second")?,
        );
        // RFC 9110 allows second 60 for a leap second.
        if hour > 23 || minute > 59 || second > 60 {
            return Err(error(format!("`{time}` is not a valid time of day")));
        }
        let days = days_from_civil(self.year, self.month, self.day);
        let actual_weekday = (days + 4).rem_euclid(7) as usize; // 1970-01-01 was a Thursday.
        if actual_weekday != weekday {
            return Err(error(format!(
                "{:04}-{:02}-{:02} is a {}, not a {}",
                self.year, self.month, self.day, DAY_NAMES[actual_weekday], DAY_NAMES[weekday]
            )));
        }
        Ok(days * 86_400 + hour * 3600 + minute * 60 + second)
    }
}

fn is_leap_year(year: i64) -> bool {
    (year % 4 == 0 && year % 100 != 0) || year % 400 == 0
}

/// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's algorithm).
fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let year_of_era = year - era * 400;
    let month_from_march = (month + 9) % 12;
    let day_of_year = (153 * month_from_march + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// The inverse of [`days_from_civil`]: `(year, month, day)`.
fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let shifted = days + 719_468;
    let era = shifted.div_euclid(146_097);
    let day_of_era = shifted - era * 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let month_from_march = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * month_from_march + 2) / 5 + 1;
    let month = if month_from_march < 10 {
        month_from_march + 3
    } else {
        month_from_march - 9
    };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sun, 06 Nov 1994 08:49:37 GMT, the RFC's example.
    const RFC_EXAMPLE: i64 = 784_111_777;
    const NOW_2026: i64 = 1_796_000_000; // 2026-11-29

    #[test]
    fn the_three_formats_of_the_rfc_example_agree() {
        for value in [
            "Sun, 06 Nov 1994 08:49:37 GMT",
            "Sunday, 06-Nov-94 08:49:37 GMT",
            "Sun Nov  6 08:49:37 1994",
        ] {
            assert_eq!(parse_http_date(value, NOW_2026), Ok(RFC_EXAMPLE), "{value}");
        }
    }

    #[test]
    fn epoch_and_leap_days() {
        assert_eq!(parse_http_date("Thu, 01 Jan 1970 00:00:00 GMT", 0), Ok(0));
        assert_eq!(
            parse_http_date("Tue, 29 Feb 2000 12:00:00 GMT", 0),
            Ok(951_825_600)
        );
        assert!(parse_http_date("Thu, 29 Feb 1900 00:00:00 GMT", 0).is_err());
    }

    #[test]
    fn civil_round_trip_over_centuries() {
        for days in (-800_000..800_000).step_by(997) {
            let (year, month, day) = civil_from_days(days);
            assert_eq!(days_from_civil(year, month, day), days);
        }
    }

    #[test]
    fn rfc850_two_digit_years_stay_within_fifty_years_ahead() {
        // In 2026, "76" is 2076 (50 years ahead) and "77" is 1977.
        let in_2076 = parse_http_date("Sunday, 01-Nov-76 00:00:00 GMT", NOW_2026).unwrap();
        let in_1977 = parse_http_date("Tuesday, 01-Nov-77 00:00:00 GMT", NOW_2026).unwrap();
        assert_eq!(civil_from_days(in_2076 / 86_400), (2076, 11, 1));
        assert_eq!(civil_from_days(in_1977 / 86_400), (1977, 11, 1));
    }

    #[test]
    fn malformed_dates_are_errors_that_say_why() {
        let cases = [
            ("Sun, 06 Nov 1994 08:49:37 UTC", "time zone `UTC`"),
            ("Mon, 06 Nov 1994 08:49:37 GMT", "is a Sun, not a Mon"),
            (
                "Sun, 6 Nov 1994 08:49:37 GMT",
                "`6` is not a day of 2 digits",
            ),
            ("Sun, 06 Foo 1994 08:49:37 GMT", "`Foo` is not a month"),
            ("Sun, 06 Nov 1994 24:00:00 GMT", "not a valid time"),
            ("Sun, 31 Nov 1994 08:49:37 GMT", "has no day 31"),
            ("Funday, 06-Nov-94 08:49:37 GMT", "not a day name"),
            ("tomorrow", "expected an HTTP-date"),
            ("", "expected an HTTP-date"),
        ];
        for (value, expected) in cases {
            let message = parse_http_date(value, NOW_2026).unwrap_err().to_string();
            assert!(message.contains(expected), "{value:?}: {message}");
        }
    }
}
