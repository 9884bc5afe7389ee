//! `interval`: months, days and microseconds, kept apart as PostgreSQL keeps them (a month is not
//! a fixed number of days, nor a day of hours across a DST change), with PostgreSQL's input forms,
//! its `postgres` output style, its order and its arithmetic.
//!
//! * Input: `[@] quantity unit [quantity unit ...] [hh:mm[:ss[.f]]] [ago]` with PostgreSQL's unit
//!   names (`1 year 2 mons`, `3 days 04:05:06`, `1.5 hours`, `-2 weeks`, `10` = ten seconds),
//!   and ISO 8601 `P1Y2M3DT4H5M6S`. A fraction spills down as in PostgreSQL: a fraction of a
//!   month becomes days of 30, of a day microseconds of 24 hours.
//! * Output (IntervalStyle `postgres`): `1 year 2 mons 3 days 04:05:06.5`, `-1 days +02:00:00`,
//!   `00:00:00`.
//! * Order and equality: by the span with a month as 30 days and a day as 24 hours, so
//!   `'1 mon' = '30 days'` (PostgreSQL's `interval_cmp`). Two equal intervals may be written
//!   differently, so an interval cannot be a key column (`steady_engine` refuses it).
//! * Arithmetic: field by field for `+`/`-`; a timestamp plus an interval adds the months on the
//!   calendar (the day clamped to the month's last), then the days, then the time.

use std::cmp::Ordering;
use std::fmt;

use crate::calendar::{civil_from_days, days_from_civil, days_in_month, USECS_PER_DAY};
use crate::TypeError;

const USECS_PER_HOUR: i64 = 3_600_000_000;
const USECS_PER_MINUTE: i64 = 60_000_000;
const USECS_PER_SECOND: i64 = 1_000_000;
const DAYS_PER_MONTH: i64 = 30;

/// An interval value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Interval {
    pub months: i32,
    pub days: i32,
    pub micros: i64,
}

impl Interval {
    pub const ZERO: Interval = Interval {
        months: 0,
        days: 0,
        micros: 0,
    };

    /// The span in microseconds, a month counted as 30 days: what order and equality compare.
    pub fn span(&self) -> i128 {
        let days = i128::from(self.months) * i128::from(DAYS_PER_MONTH) + i128::from(self.days);
        days * i128::from(USECS_PER_DAY) + i128::from(self.micros)
    }

    pub fn compare(&self, other: &Interval) -> Ordering {
        self.span().cmp(&other.span())
    }

    /// Field-wise sum (`interval + interval`); None on overflow.
    pub fn checked_add(&self, other: &Interval) -> Option<Interval> {
        Some(Interval {
            months: self.months.checked_add(other.months)?,
            days: self.days.checked_add(other.days)?,
            micros: self.micros.checked_add(other.micros)?,
        })
    }

    /// `-interval`; None on overflow.
    pub fn checked_neg(&self) -> Option<Interval> {
        Some(Interval {
            months: self.months.checked_neg()?,
            days: self.days.checked_neg()?,
            micros: self.micros.checked_neg()?,
        })
    }

    /// `interval * factor`, a fraction of a month spilling into days and of a day into time
    /// (PostgreSQL's `interval_mul`); None when out of range.
    pub fn scaled(&self, factor: f64) -> Option<Interval> {
        let months = f64::from(self.months) * factor;
        let days = f64::from(self.days) * factor + months.fract() * DAYS_PER_MONTH as f64;
        let micros = self.micros as f64 * factor + days.fract() * USECS_PER_DAY as f64;
        let whole = |x: f64, max: f64| (x.is_finite() && x.abs() <= max).then_some(x.trunc());
        Some(Interval {
            months: whole(months, f64::from(i32::MAX))? as i32,
            days: whole(days, f64::from(i32::MAX))? as i32,
            micros: whole(micros.round(), i64::MAX as f64)? as i64,
        })
    }

    /// `timestamp - timestamp`: the difference as days and time (PostgreSQL's `timestamp_mi`
    /// with `interval_justify_hours`).
    pub fn between(later: i64, earlier: i64) -> Option<Interval> {
        let micros = later.checked_sub(earlier)?;
        Some(Interval {
            months: 0,
            days: i32::try_from(micros / USECS_PER_DAY).ok()?,
            micros: micros % USECS_PER_DAY,
        })
    }

    /// `timestamp + interval` (microseconds since 2000-01-01); None when out of range.
    pub fn add_to_timestamp(&self, timestamp: i64) -> Option<i64> {
        let mut timestamp = timestamp;
        if self.months != 0 {
            let days = timestamp.div_euclid(USECS_PER_DAY);
            let time = timestamp.rem_euclid(USECS_PER_DAY);
            let (year, month, day) = civil_from_days(days + crate::PG_EPOCH_UNIX_DAYS);
            let total = year * 12 + (month - 1) + i64::from(self.months);
            let (year, month) = (total.div_euclid(12), total.rem_euclid(12) + 1);
            let day = day.min(days_in_month(year, month));
            let days = days_from_civil(year, month, day) - crate::PG_EPOCH_UNIX_DAYS;
            timestamp = days.checked_mul(USECS_PER_DAY)?.checked_add(time)?;
        }
        let days = i64::from(self.days).checked_mul(USECS_PER_DAY)?;
        timestamp.checked_add(days)?.checked_add(self.micros)
    }
}

impl PartialOrd for Interval {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.compare(other))
    }
}

/// Reads PostgreSQL's interval input.
pub(crate) fn parse_interval(text: &str) -> Result<Interval, TypeError> {
    let invalid = || {
        TypeError::InvalidDatetimeFormat(format!(
            "invalid input syntax for type interval: \"{text}\""
        ))
    };
    let trimmed = text.trim();
    let parsed = match trimmed.strip_prefix('P') {
        Some(iso) => parse_iso(iso),
        None => parse_verbose(trimmed),
    };
    let (months, days, micros) = parsed.ok_or_else(invalid)?;
    let out_of_range = || {
        TypeError::DatetimeFieldOverflow(format!("interval field value out of range: \"{text}\""))
    };
    Ok(Interval {
        months: i32::try_from(months).map_err(|_| out_of_range())?,
        days: i32::try_from(days).map_err(|_| out_of_range())?,
        micros: i64::try_from(micros).map_err(|_| out_of_range())?,
    })
}

/// Months, days and microseconds being summed, before range checks.
#[derive(Default)]
struct Fields {
    months: f64,
    days: f64,
    micros: i128,
}

impl Fields {
    /// Adds `quantity` of `unit`; false for an unknown unit.
    fn add(&mut self, quantity: f64, unit: &str) -> bool {
        let (months, days, micros) = match unit {
            "microsecond" | "microseconds" | "us" | "usec" | "usecs" => (0.0, 0.0, 1.0),
            "millisecond" | "milliseconds" | "ms" | "msec" | "msecs" => (0.0, 0.0, 1e3),
            "second" | "seconds" | "s" | "sec" | "secs" => (0.0, 0.0, 1e6),
            "minute" | "minutes" | "m" | "min" | "mins" => (0.0, 0.0, 6e7),
            "hour" | "hours" | "h" | "hr" | "hrs" => (0.0, 0.0, 3.6e9),
            "day" | "days" | "d" => (0.0, 1.0, 0.0),
            "week" | "weeks" | "w" => (0.0, 7.0, 0.0),
            "month" | "months" | "mon" | "mons" => (1.0, 0.0, 0.0),
            "year" | "years" | "y" | "yr" | "yrs" => (12.0, 0.0, 0.0),
            "decade" | "decades" => (120.0, 0.0, 0.0),
            "century" | "centuries" => (1200.0, 0.0, 0.0),
            "millennium" | "millennia" => (12000.0, 0.0, 0.0),
            _ => return false,
        };
        self.months += quantity * months;
        self.days += quantity * days;
        self.micros += (quantity * micros).round() as i128;
        true
    }

    /// Spills fractions down (months → days of 30, days → microseconds) and checks the range.
    fn finish(self) -> Option<(i64, i64, i128)> {
        let months = self.months.trunc();
        let days = self.days + self.months.fract() * DAYS_PER_MONTH as f64;
        let micros = self.micros + (days.fract() * USECS_PER_DAY as f64).round() as i128;
        let fits = |x: f64| x.is_finite() && x.abs() < 1e15;
        (fits(months) && fits(days)).then(|| (months as i64, days.trunc() as i64, micros))
    }
}

/// `[@] quantity unit ... [hh:mm[:ss]] [ago]`.
fn parse_verbose(text: &str) -> Option<(i64, i64, i128)> {
    let lower = text.to_lowercase();
    let mut words: Vec<&str> = lower.split_whitespace().collect();
    if words.first() == Some(&"@") {
        words.remove(0);
    }
    let ago = words.last() == Some(&"ago");
    if ago {
        words.pop();
    }
    if words.is_empty() {
        return None;
    }
    let mut fields = Fields::default();
    let mut at = 0;
    while at < words.len() {
        let word = words[at];
        if word.contains(':') {
            fields.micros += time_of_day(word)?;
            at += 1;
            continue;
        }
        let (number, glued) = split_number(word)?;
        let quantity: f64 = number.parse().ok()?;
        let unit = if !glued.is_empty() {
            glued
        } else if let Some(next) = words.get(at + 1).filter(|w| !is_number_start(w)) {
            at += 1;
            next
        } else {
            "second"
        };
        if !fields.add(quantity, unit) {
            return None;
        }
        at += 1;
    }
    let (months, days, micros) = fields.finish()?;
    Some(match ago {
        true => (-months, -days, -micros),
        false => (months, days, micros),
    })
}

fn is_number_start(word: &str) -> bool {
    word.starts_with(|c: char| c.is_ascii_digit() || c == '-' || c == '+' || c == '.')
}

/// A word's leading signed decimal number and the unit glued to it (`10days`).
fn split_number(word: &str) -> Option<(&str, &str)> {
    let end = word
        .char_indices()
        .find(|&(i, c)| !(c.is_ascii_digit() || c == '.' || (i == 0 && (c == '-' || c == '+'))))
        .map_or(word.len(), |(i, _)| i);
    let number = &word[..end];
    (!number.is_empty() && number != "-" && number != "+").then_some((number, &word[end..]))
}

/// `[-]hh:mm[:ss[.ffffff]]` as microseconds.
fn time_of_day(word: &str) -> Option<i128> {
    let (negative, body) = match word.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, word.strip_prefix('+').unwrap_or(word)),
    };
    let parts: Vec<&str> = body.split(':').collect();
    if parts.len() < 2 || parts.len() > 3 || parts.iter().any(|p| p.is_empty()) {
        return None;
    }
    let hours: i128 = parts[0].parse().ok()?;
    let minutes: i128 = parts[1].parse().ok()?;
    let seconds: f64 = match parts.get(2) {
        Some(s) if s.chars().all(|c| c.is_ascii_digit() || c == '.') => s.parse().ok()?,
        Some(_) => return None,
        None => 0.0,
    };
    if minutes > 59 || seconds >= 60.0 {
        return None;
    }
    let micros = hours * i128::from(USECS_PER_HOUR)
        + minutes * i128::from(USECS_PER_MINUTE)
        + (seconds * USECS_PER_SECOND as f64).round() as i128;
    Some(if negative { -micros } else { micros })
}

/// ISO 8601 `P[nY][nM][nW][nD][T[nH][nM][nS]]` (after the `P`).
fn parse_iso(text: &str) -> Option<(i64, i64, i128)> {
    let (date, time) = match text.split_once('T') {
        Some((date, time)) => (date, Some(time)),
        None => (text, None),
    };
    let mut fields = Fields::default();
    let designators = |part: &str, units: &[(char, &str)], fields: &mut Fields| -> Option<()> {
        let mut number = String::new();
        for c in part.chars() {
            match units.iter().find(|(d, _)| *d == c) {
                Some((_, unit)) if !number.is_empty() => {
                    fields.add(number.parse().ok()?, unit);
                    number.clear();
                }
                Some(_) => return None,
                None => number.push(c),
            }
        }
        number.is_empty().then_some(())
    };
    designators(
        date,
        &[('Y', "year"), ('M', "month"), ('W', "week"), ('D', "day")],
        &mut fields,
    )?;
    if let Some(time) = time {
        designators(
            time,
            &[('H', "hour"), ('M', "minute"), ('S', "second")],
            &mut fields,
        )?;
    }
    (!text.is_empty()).then_some(())?;
    fields.finish()
}

/// PostgreSQL's `postgres` IntervalStyle output.
pub(crate) fn write_interval(f: &mut fmt::Formatter<'_>, interval: &Interval) -> fmt::Result {
    let mut state = (true, false); // (nothing written yet, the previous field was negative)
    let years = interval.months / 12;
    let months = interval.months % 12;
    for (value, unit) in [
        (i64::from(years), "year"),
        (i64::from(months), "mon"),
        (i64::from(interval.days), "day"),
    ] {
        if value == 0 {
            continue;
        }
        let space = if state.0 { "" } else { " " };
        let plus = if state.1 && value > 0 { "+" } else { "" };
        let plural = if value != 1 { "s" } else { "" };
        write!(f, "{space}{plus}{value} {unit}{plural}")?;
        state = (false, value < 0);
    }
    if state.0 || interval.micros != 0 {
        let micros = interval.micros;
        let space = if state.0 { "" } else { " " };
        let sign = if micros < 0 {
            "-"
        } else if state.1 {
            "+"
        } else {
            ""
        };
        let magnitude = micros.unsigned_abs();
        let hours = magnitude / USECS_PER_HOUR as u64;
        let minutes = magnitude / USECS_PER_MINUTE as u64 % 60;
        let seconds = magnitude / USECS_PER_SECOND as u64 % 60;
        let fraction = magnitude % USECS_PER_SECOND as u64;
        write!(f, "{space}{sign}{hours:02}:{minutes:02}:{seconds:02}")?;
        if fraction != 0 {
            let digits = format!("{fraction:06}");
            write!(f, ".{}", digits.trim_end_matches('0'))?;
        }
    }
    Ok(())
}
