//! PostgreSQL text output of values (`Display`): floats in their shortest exact form, dates and
//! timestamps with eras, bytea in hex.

use std::fmt;

use crate::*;

impl fmt::Display for Value {
    /// PostgreSQL's text output; NULL shows as `NULL`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Value::Null => f.write_str("NULL"),
            Value::Boolean(b) => f.write_str(if *b { "t" } else { "f" }),
            Value::SmallInt(v) => write!(f, "{v}"),
            Value::Integer(v) => write!(f, "{v}"),
            Value::BigInt(v) => write!(f, "{v}"),
            Value::Real(v) => f.write_str(&float_text(&format!("{v:e}"), 6)),
            Value::Double(v) => f.write_str(&float_text(&format!("{v:e}"), 15)),
            Value::Numeric(d) => write!(f, "{d}"),
            Value::Text(s) => f.write_str(s),
            Value::Bytea(b) => write_hex(f, b),
            Value::Date(d) => write_date(f, *d),
            Value::Timestamp(t) => write_timestamp(f, *t),
            Value::Uuid(u) => crate::uuid::write_uuid(f, u),
            Value::TimestampTz(t) => crate::zone::write_timestamptz(f, *t),
            Value::Time(t) => write_clock(f, *t),
            Value::Interval(i) => crate::interval::write_interval(f, i),
            Value::Json(text) | Value::Jsonb(text) => f.write_str(text),
            Value::Enum { oid, position } => f.write_str(&crate::enums::label(*oid, *position)),
        }
    }
}

/// Lays out Rust's shortest round-trip digits (`{:e}` output) the way PostgreSQL's Ryu output
/// does: fixed notation for decimal exponents in `-4..fixed_below`, else `d.ddde±XX`.
pub(crate) fn float_text(scientific: &str, fixed_below: i32) -> String {
    match scientific {
        "NaN" => return "NaN".to_owned(),
        "inf" => return "Infinity".to_owned(),
        "-inf" => return "-Infinity".to_owned(),
        _ => {}
    }
    let (sign, unsigned) = match scientific.strip_prefix('-') {
        Some(rest) => ("-", rest),
        None => ("", scientific),
    };
    let (mantissa, exponent) = unsigned.split_once('e').unwrap_or((unsigned, "0"));
    let exponent: i32 = exponent.parse().unwrap_or(0);
    let digits: String = mantissa.chars().filter(|c| *c != '.').collect();
    if (-4..fixed_below).contains(&exponent) {
        format!("{sign}{}", fixed_notation(&digits, exponent))
    } else {
        format!("{sign}{}", scientific_notation(&digits, exponent))
    }
}

pub(crate) fn fixed_notation(digits: &str, exponent: i32) -> String {
    if exponent < 0 {
        let zeros = "0".repeat(exponent.unsigned_abs() as usize - 1);
        return format!("0.{zeros}{digits}");
    }
    let int_len = exponent as usize + 1;
    if digits.len() <= int_len {
        format!("{digits}{}", "0".repeat(int_len - digits.len()))
    } else {
        format!("{}.{}", &digits[..int_len], &digits[int_len..])
    }
}

pub(crate) fn scientific_notation(digits: &str, exponent: i32) -> String {
    let (first, rest) = digits.split_at(1);
    let point = if rest.is_empty() { "" } else { "." };
    let sign = if exponent < 0 { '-' } else { '+' };
    format!("{first}{point}{rest}e{sign}{:02}", exponent.unsigned_abs())
}

pub(crate) fn write_hex(f: &mut fmt::Formatter<'_>, bytes: &[u8]) -> fmt::Result {
    f.write_str("\\x")?;
    bytes.iter().try_for_each(|b| write!(f, "{b:02x}"))
}

pub(crate) fn write_date(f: &mut fmt::Formatter<'_>, days: i32) -> fmt::Result {
    match days {
        i32::MAX => f.write_str("infinity"),
        i32::MIN => f.write_str("-infinity"),
        _ => {
            let bc = write_calendar_day(f, i64::from(days))?;
            write_era(f, bc)
        }
    }
}

pub(crate) fn write_timestamp(f: &mut fmt::Formatter<'_>, micros: i64) -> fmt::Result {
    match micros {
        i64::MAX => f.write_str("infinity"),
        i64::MIN => f.write_str("-infinity"),
        _ => {
            let bc = write_calendar_day(f, micros.div_euclid(USECS_PER_DAY))?;
            write_time_of_day(f, micros.rem_euclid(USECS_PER_DAY))?;
            write_era(f, bc)
        }
    }
}

/// Writes `YYYY-MM-DD` for a day number since 2000-01-01; returns whether the year is BC.
pub(crate) fn write_calendar_day(
    f: &mut fmt::Formatter<'_>,
    days: i64,
) -> Result<bool, fmt::Error> {
    let (year, month, day) = civil_from_days(days + PG_EPOCH_UNIX_DAYS);
    let bc = year <= 0;
    let shown_year = if bc { 1 - year } else { year };
    write!(f, "{shown_year:04}-{month:02}-{day:02}")?;
    Ok(bc)
}

/// Writes ` HH:MM:SS[.f…]`, the time of day after a timestamp's date.
pub(crate) fn write_time_of_day(f: &mut fmt::Formatter<'_>, micros: i64) -> fmt::Result {
    f.write_str(" ")?;
    write_clock(f, micros)
}

/// Writes `HH:MM:SS[.f…]` (trailing zeros of the fraction dropped) for `micros` since midnight.
pub(crate) fn write_clock(f: &mut fmt::Formatter<'_>, micros: i64) -> fmt::Result {
    let seconds = micros / 1_000_000;
    let (hour, minute, second) = (seconds / 3600, seconds / 60 % 60, seconds % 60);
    write!(f, "{hour:02}:{minute:02}:{second:02}")?;
    match micros % 1_000_000 {
        0 => Ok(()),
        fraction => write!(f, ".{}", format!("{fraction:06}").trim_end_matches('0')),
    }
}

pub(crate) fn write_era(f: &mut fmt::Formatter<'_>, bc: bool) -> fmt::Result {
    if bc {
        f.write_str(" BC")
    } else {
        Ok(())
    }
}
