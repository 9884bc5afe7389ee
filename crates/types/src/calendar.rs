//! The calendar: dates as days and timestamps as microseconds since 2000-01-01 (proleptic
//! Gregorian, year 0 written `0001 BC`), their ranges, and the scanning of date/time input.

use crate::*;

pub const USECS_PER_DAY: i64 = 86_400_000_000;
/// Days from 1970-01-01 to 2000-01-01.
pub const PG_EPOCH_UNIX_DAYS: i64 = 10_957;
/// First valid date (4714-11-24 BC, Julian day 0) and first invalid one (5874898-01-01).
pub(crate) const DATE_RANGE: std::ops::Range<i64> = -2_451_545..2_145_031_949;
/// First valid timestamp (4714-11-24 00:00 BC) and first invalid one (294277-01-01 00:00).
pub(crate) const TIMESTAMP_RANGE: std::ops::Range<i128> =
    -211_813_488_000_000_000..9_223_371_331_200_000_000;

/// Days since 1970-01-01 of a proleptic Gregorian date (astronomical year numbering).
pub fn days_from_civil(year: i64, month: i64, day: i64) -> i64 {
    let y = if month <= 2 { year - 1 } else { year };
    let (era, year_of_era) = (y.div_euclid(400), y.rem_euclid(400));
    let day_of_year = (153 * ((month + 9) % 12) + 2) / 5 + day - 1;
    let day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    era * 146_097 + day_of_era - 719_468
}

/// The inverse of [`days_from_civil`].
pub fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let (era, day_of_era) = (z.div_euclid(146_097), z.rem_euclid(146_097));
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let shifted_month = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * shifted_month + 2) / 5 + 1;
    let month = if shifted_month < 10 {
        shifted_month + 3
    } else {
        shifted_month - 9
    };
    (year_of_era + era * 400 + i64::from(month <= 2), month, day)
}

/// The days of `month` (1–12) in the proleptic Gregorian `year`.
pub fn days_in_month(year: i64, month: i64) -> i64 {
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// What a date/timestamp text denotes, before its type's range is checked.
pub(crate) enum DateTimeInput {
    Finite { days: i64, micros: i64 },
    Infinity,
    NegativeInfinity,
}

/// Why a date/timestamp text was refused.
pub(crate) enum DateTimeFault {
    Format,
    FieldRange,
}

impl DateTimeFault {
    pub(crate) fn into_error(self, type_name: &str, text: &str) -> TypeError {
        match self {
            DateTimeFault::Format => TypeError::InvalidDatetimeFormat(format!(
                "invalid input syntax for type {type_name}: \"{text}\""
            )),
            DateTimeFault::FieldRange => TypeError::DatetimeFieldOverflow(format!(
                "date/time field value out of range: \"{text}\""
            )),
        }
    }
}

/// The fields of `YYYY-MM-DD[( |T)HH:MM[:SS[.f…]]][ BC|AD]`, year as written (1 = 1 AD or 1 BC).
#[derive(Default)]
pub(crate) struct DateTimeFields {
    year: i64,
    month: i64,
    day: i64,
    pub(crate) hour: i64,
    pub(crate) minute: i64,
    pub(crate) second: i64,
    pub(crate) micros: i64,
    bc: bool,
}

impl DateTimeFields {
    pub(crate) fn astronomical_year(&self) -> i64 {
        if self.bc {
            1 - self.year
        } else {
            self.year
        }
    }

    pub(crate) fn in_range(&self) -> bool {
        let time_ok = self.hour < 24 || (self.minute == 0 && self.second == 0 && self.micros == 0);
        self.year >= 1
            && (1..=12).contains(&self.month)
            && (1..=days_in_month(self.astronomical_year(), self.month)).contains(&self.day)
            && self.hour <= 24
            && self.minute <= 59
            && self.second <= 60
            && time_ok
    }

    pub(crate) fn to_input(&self) -> DateTimeInput {
        let days = days_from_civil(self.astronomical_year(), self.month, self.day);
        let seconds = (self.hour * 60 + self.minute) * 60 + self.second;
        DateTimeInput::Finite {
            days: days - PG_EPOCH_UNIX_DAYS,
            micros: seconds * 1_000_000 + self.micros,
        }
    }
}

/// A cursor over the bytes of a date/time text.
pub(crate) struct Scanner<'a> {
    rest: &'a [u8],
}

impl<'a> Scanner<'a> {
    pub(crate) fn new(text: &'a str) -> Self {
        Scanner {
            rest: text.as_bytes(),
        }
    }

    pub(crate) fn at_end(&self) -> bool {
        self.rest.is_empty()
    }

    pub(crate) fn digits(&mut self) -> &'a [u8] {
        let n = self.rest.iter().take_while(|b| b.is_ascii_digit()).count();
        let (digits, rest) = self.rest.split_at(n);
        self.rest = rest;
        digits
    }

    pub(crate) fn number(&mut self, max_digits: usize) -> Option<i64> {
        let digits = self.digits();
        (1..=max_digits).contains(&digits.len()).then(|| {
            digits
                .iter()
                .fold(0, |acc, d| acc * 10 + i64::from(d - b'0'))
        })
    }

    pub(crate) fn eat(&mut self, byte: u8) -> bool {
        let matched = self.rest.first() == Some(&byte);
        if matched {
            self.rest = &self.rest[1..];
        }
        matched
    }

    pub(crate) fn skip_spaces(&mut self) -> bool {
        let n = self
            .rest
            .iter()
            .take_while(|b| b.is_ascii_whitespace())
            .count();
        self.rest = &self.rest[n..];
        n > 0
    }
}

pub(crate) fn scan_datetime(text: &str) -> Result<DateTimeInput, DateTimeFault> {
    match pg_trim(text).to_ascii_lowercase().as_str() {
        "infinity" | "+infinity" => return Ok(DateTimeInput::Infinity),
        "-infinity" => return Ok(DateTimeInput::NegativeInfinity),
        "epoch" => {
            return Ok(DateTimeInput::Finite {
                days: -PG_EPOCH_UNIX_DAYS,
                micros: 0,
            })
        }
        word @ ("now" | "today" | "tomorrow" | "yesterday") => {
            let local = crate::zone::local_now();
            let (days, micros) = (
                local.div_euclid(USECS_PER_DAY),
                local.rem_euclid(USECS_PER_DAY),
            );
            return Ok(match word {
                "now" => DateTimeInput::Finite { days, micros },
                "today" => DateTimeInput::Finite { days, micros: 0 },
                "tomorrow" => DateTimeInput::Finite {
                    days: days + 1,
                    micros: 0,
                },
                _ => DateTimeInput::Finite {
                    days: days - 1,
                    micros: 0,
                },
            });
        }
        _ => {}
    }
    let fields = scan_fields(pg_trim(text)).ok_or(DateTimeFault::Format)?;
    if fields.in_range() {
        Ok(fields.to_input())
    } else {
        Err(DateTimeFault::FieldRange)
    }
}

/// The fields of a date/time text: ISO's form, else [`other_fields`].
pub(crate) fn scan_fields(text: &str) -> Option<DateTimeFields> {
    iso_fields(text).or_else(|| other_fields(text))
}

fn iso_fields(text: &str) -> Option<DateTimeFields> {
    let mut scan = Scanner {
        rest: text.as_bytes(),
    };
    let mut fields = DateTimeFields {
        year: scan.number(9)?,
        month: scan.eat(b'-').then(|| scan.number(2))??,
        day: scan.eat(b'-').then(|| scan.number(2))??,
        ..DateTimeFields::default()
    };
    let separated = scan.eat(b'T') || scan.eat(b't') || scan.skip_spaces();
    if separated && scan.rest.first().is_some_and(u8::is_ascii_digit) {
        scan_time(&mut scan, &mut fields)?;
        scan.skip_spaces();
    }
    fields.bc = match scan.rest.to_ascii_lowercase().as_slice() {
        b"" | b"ad" => false,
        b"bc" => true,
        _ => return None,
    };
    Some(fields)
}

/// The order of day, month and year in a numeric date other than ISO's (`01/02/2020`): the
/// DateStyle setting's, as [`use_date_order`] made it this thread's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DateOrder {
    #[default]
    Mdy,
    Dmy,
    Ymd,
}

thread_local! {
    static DATE_ORDER: std::cell::Cell<DateOrder> = const { std::cell::Cell::new(DateOrder::Mdy) };
}

/// Makes `order` the one this thread reads numeric dates in (the session's DateStyle, set before
/// each statement as the session's time zone is).
pub fn use_date_order(order: DateOrder) {
    DATE_ORDER.with(|current| current.set(order));
}

/// The order this thread reads numeric dates in.
pub fn date_order() -> DateOrder {
    DATE_ORDER.with(std::cell::Cell::get)
}

/// A date/time text in a form other than ISO's, as PostgreSQL reads it: the date as three
/// numbers separated by `/`, `-`, `.` or spaces in the DateStyle's order (a first number of three
/// or more digits is the year: `1999/01/08`), as a month name with the day and the year in either
/// order (`Jan 8 1999`, `January 8, 1999`, `8 Jan 1999`, `1999-Jan-08`, a weekday name allowed
/// before), or as `YYYYMMDD`; then optionally the time (`HH:MM[:SS[.f]]`, AM or PM after it)
/// and BC or AD. A year of one or two digits is the nearest to 2020 (`99` is 1999, `08` 2008),
/// as PostgreSQL's.
fn other_fields(text: &str) -> Option<DateTimeFields> {
    let mut words: Vec<&str> = text.split_ascii_whitespace().collect();
    let era = words.last().map(|w| w.to_ascii_lowercase());
    let bc = era.as_deref() == Some("bc");
    if matches!(era.as_deref(), Some("bc" | "ad")) {
        words.pop();
    }
    let time_at = words
        .iter()
        .position(|w| w.contains(':'))
        .unwrap_or(words.len());
    let mut fields = date_fields(&words[..time_at])?;
    let time = words[time_at..].concat().to_ascii_lowercase();
    if !time.is_empty() {
        let (clock, meridiem) = match (time.strip_suffix("am"), time.strip_suffix("pm")) {
            (Some(clock), _) => (clock, Some(false)),
            (_, Some(clock)) => (clock, Some(true)),
            _ => (time.as_str(), None),
        };
        let mut scan = Scanner::new(clock);
        scan_time(&mut scan, &mut fields)?;
        if !scan.at_end() {
            return None;
        }
        if let Some(pm) = meridiem {
            fields.hour = match (fields.hour, pm) {
                (hour, _) if hour > 12 => INVALID_HOUR,
                (12, false) => 0,
                (hour, true) if hour != 12 => hour + 12,
                (hour, _) => hour,
            };
        }
    }
    fields.bc = bc;
    Some(fields)
}

/// An hour no time has: [`DateTimeFields::in_range`] refuses it (AM or PM after an hour past 12).
const INVALID_HOUR: i64 = 25;

/// Year, month and day of the date words of [`other_fields`].
fn date_fields(words: &[&str]) -> Option<DateTimeFields> {
    let parts: Vec<&str> = words
        .iter()
        .flat_map(|w| w.split(['-', '/', '.', ',']))
        .filter(|p| !p.is_empty() && !is_weekday(p))
        .collect();
    let numeric = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
    let (year, month, day) = match parts[..] {
        [compact] if compact.len() == 8 && numeric(compact) => {
            (&compact[..4], &compact[4..6], &compact[6..])
        }
        [a, b, c] => match parts.iter().position(|p| month_number(p).is_some()) {
            Some(at) => {
                let month = month_number(parts[at])?;
                let rest: Vec<&str> = (0..3).filter(|&i| i != at).map(|i| parts[i]).collect();
                let (day, year) = if rest[0].len() > 2 {
                    (rest[1], rest[0])
                } else {
                    (rest[0], rest[1])
                };
                return numbered_fields(year, month, day);
            }
            None if a.len() > 2 => (a, b, c),
            None => match DATE_ORDER.with(std::cell::Cell::get) {
                DateOrder::Mdy => (c, a, b),
                DateOrder::Dmy => (c, b, a),
                DateOrder::Ymd => (a, b, c),
            },
        },
        _ => return None,
    };
    if !numeric(month) || month.len() > 2 {
        return None;
    }
    numbered_fields(year, month.parse().ok()?, day)
}

fn numbered_fields(year: &str, month: i64, day: &str) -> Option<DateTimeFields> {
    let digits = |p: &str, max: usize| {
        (p.len() <= max && !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()))
            .then(|| p.parse::<i64>().ok())
            .flatten()
    };
    let written = digits(year, 9)?;
    let year = match year.len() {
        1 | 2 if written < 70 => 2000 + written,
        1 | 2 => 1900 + written,
        _ => written,
    };
    Some(DateTimeFields {
        year,
        month,
        day: digits(day, 2)?,
        ..DateTimeFields::default()
    })
}

/// The month a name or PostgreSQL's abbreviation of it (`jan`, `sept`) denotes.
fn month_number(word: &str) -> Option<i64> {
    const MONTHS: [&str; 12] = [
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
    ];
    let word = word.to_ascii_lowercase();
    if word == "sept" {
        return Some(9);
    }
    MONTHS
        .iter()
        .position(|m| word == *m || word.len() == 3 && m.starts_with(&word))
        .map(|i| i as i64 + 1)
}

fn is_weekday(word: &str) -> bool {
    const DAYS: [&str; 7] = [
        "monday",
        "tuesday",
        "wednesday",
        "thursday",
        "friday",
        "saturday",
        "sunday",
    ];
    let word = word.to_ascii_lowercase();
    DAYS.iter()
        .any(|d| word == *d || word.len() == 3 && d.starts_with(&word))
}

pub(crate) fn scan_time(scan: &mut Scanner<'_>, fields: &mut DateTimeFields) -> Option<()> {
    fields.hour = scan.number(2)?;
    fields.minute = scan.eat(b':').then(|| scan.number(2))??;
    if scan.eat(b':') {
        fields.second = scan.number(2)?;
        if scan.eat(b'.') {
            fields.micros = fraction_micros(scan.digits())?;
        }
    }
    Some(())
}

/// Microseconds of a fraction of a second given by its digits, rounded half up.
pub(crate) fn fraction_micros(digits: &[u8]) -> Option<i64> {
    let digit = |i: usize| digits.get(i).map_or(0, |d| i64::from(d - b'0'));
    let micros = (0..6).fold(0, |acc, i| acc * 10 + digit(i));
    (!digits.is_empty()).then_some(micros + i64::from(digit(6) >= 5))
}

pub(crate) fn parse_date(text: &str) -> Result<i32, TypeError> {
    match scan_datetime(text).map_err(|f| f.into_error("date", text))? {
        DateTimeInput::Infinity => Ok(i32::MAX),
        DateTimeInput::NegativeInfinity => Ok(i32::MIN),
        DateTimeInput::Finite { days, .. } => i32::try_from(days)
            .ok()
            .filter(|_| DATE_RANGE.contains(&days))
            .ok_or_else(|| {
                TypeError::DatetimeFieldOverflow(format!("date out of range: \"{text}\""))
            }),
    }
}

pub(crate) fn parse_timestamp(text: &str) -> Result<i64, TypeError> {
    match scan_datetime(text).map_err(|f| f.into_error("timestamp", text))? {
        DateTimeInput::Infinity => Ok(i64::MAX),
        DateTimeInput::NegativeInfinity => Ok(i64::MIN),
        DateTimeInput::Finite { days, micros } => {
            let t = i128::from(days) * i128::from(USECS_PER_DAY) + i128::from(micros);
            i64::try_from(t)
                .ok()
                .filter(|_| TIMESTAMP_RANGE.contains(&t))
                .ok_or_else(|| {
                    TypeError::DatetimeFieldOverflow(format!("timestamp out of range: \"{text}\""))
                })
        }
    }
}

pub(crate) fn timestamp_to_date(micros: i64) -> i32 {
    match micros {
        i64::MAX => i32::MAX,
        i64::MIN => i32::MIN,
        // |i64 µs| / µs-per-day < 1.1e8, so every timestamp's day number fits an i32.
        _ => micros.div_euclid(USECS_PER_DAY) as i32,
    }
}

pub(crate) fn date_to_timestamp(days: i32) -> Result<i64, TypeError> {
    match days {
        i32::MAX => Ok(i64::MAX),
        i32::MIN => Ok(i64::MIN),
        _ => {
            let t = i128::from(days) * i128::from(USECS_PER_DAY);
            i64::try_from(t)
                .ok()
                .filter(|_| TIMESTAMP_RANGE.contains(&t))
                .ok_or_else(|| {
                    TypeError::DatetimeFieldOverflow("date out of range for timestamp".to_owned())
                })
        }
    }
}
