//! Comparison across types: numbers across widths, floats with `NaN` above `+Infinity`, dates
//! against timestamps as their midnight.

use std::cmp::Ordering;

use rust_decimal::Decimal;

use crate::*;

/// A number widened for comparison across types.
pub(crate) enum Number {
    Int(i64),
    Decimal(Decimal),
    Float(f64),
}

impl Number {
    pub(crate) fn of(value: &Value) -> Option<Number> {
        Some(match *value {
            Value::SmallInt(i) => Number::Int(i64::from(i)),
            Value::Integer(i) => Number::Int(i64::from(i)),
            Value::BigInt(i) => Number::Int(i),
            Value::Real(x) => Number::Float(f64::from(x)),
            Value::Double(x) => Number::Float(x),
            Value::Numeric(d) => Number::Decimal(d),
            _ => return None,
        })
    }

    /// Numeric converts to float8 through its text, as PostgreSQL's implicit cast does.
    pub(crate) fn to_f64(&self) -> f64 {
        match self {
            Number::Int(i) => *i as f64,
            Number::Decimal(d) => d.to_string().parse().unwrap_or(f64::NAN),
            Number::Float(x) => *x,
        }
    }
}

pub(crate) fn compare_numbers(a: &Value, b: &Value) -> Option<Ordering> {
    Some(match (Number::of(a)?, Number::of(b)?) {
        (Number::Int(x), Number::Int(y)) => x.cmp(&y),
        (Number::Int(x), Number::Decimal(y)) => Decimal::from(x).cmp(&y),
        (Number::Decimal(x), Number::Int(y)) => x.cmp(&Decimal::from(y)),
        (Number::Decimal(x), Number::Decimal(y)) => x.cmp(&y),
        (x, y) => compare_floats(x.to_f64(), y.to_f64()),
    })
}

/// PostgreSQL's float order: NaN equals NaN and is above everything else; -0 equals 0.
pub(crate) fn compare_floats(a: f64, b: f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
    }
}

/// Dates and timestamps on one axis; beside a `timestamptz`, a date or timestamp is first read
/// as local time in the session zone (PostgreSQL casts it to `timestamptz`).
pub(crate) fn compare_datetimes(a: &Value, b: &Value) -> Option<Ordering> {
    let zoned = matches!(a, Value::TimestampTz(_)) || matches!(b, Value::TimestampTz(_));
    if zoned {
        let as_instant = |v: &Value| match v.to_timestamptz() {
            Ok(Value::TimestampTz(t)) => instant(&Value::TimestampTz(t)),
            _ => None,
        };
        return Some(as_instant(a)?.cmp(&as_instant(b)?));
    }
    Some(instant(a)?.cmp(&instant(b)?))
}

/// A date or timestamp as microseconds on one axis, infinities at the ends.
pub(crate) fn instant(value: &Value) -> Option<i128> {
    match *value {
        Value::Date(i32::MAX) | Value::Timestamp(i64::MAX) | Value::TimestampTz(i64::MAX) => {
            Some(i128::MAX)
        }
        Value::Date(i32::MIN) | Value::Timestamp(i64::MIN) | Value::TimestampTz(i64::MIN) => {
            Some(i128::MIN)
        }
        Value::Date(d) => Some(i128::from(d) * i128::from(USECS_PER_DAY)),
        Value::Timestamp(t) | Value::TimestampTz(t) => Some(i128::from(t)),
        _ => None,
    }
}
