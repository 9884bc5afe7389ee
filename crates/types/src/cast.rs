//! Casts between types (`Value::cast`, `Value::assign_to`), with PostgreSQL's rounding, range
//! checks and errors.

use rust_decimal::{Decimal, RoundingStrategy};

use crate::*;

impl Value {
    pub(crate) fn convert(&self, ty: &DataType, assignment: bool) -> Result<Value, TypeError> {
        match (self, ty) {
            (Value::Null, _) => Ok(Value::Null),
            (_, DataType::Char(_) | DataType::Varchar(_) | DataType::Text) => {
                fit_string(self.cast_text(), ty, assignment).map(Value::Text)
            }
            (_, DataType::TextArray | DataType::Array(_)) => Value::parse(ty, &self.cast_text()),
            (Value::Text(s), _) => Value::parse(ty, s),
            (Value::Json(text), DataType::Jsonb) => Value::parse(ty, text),
            (Value::Jsonb(text), DataType::Json) => Ok(Value::Json(text.clone())),
            (Value::Jsonb(_), DataType::Jsonb) => Ok(self.clone()),
            (Value::Jsonb(text), _) => crate::json::cast_jsonb_scalar(text, ty),
            (_, DataType::Boolean) => self.to_boolean(),
            (_, DataType::SmallInt | DataType::Integer | DataType::BigInt) => self.to_int(ty),
            (_, DataType::Real) => self.to_real(),
            (_, DataType::Double) => self.to_double(),
            (_, DataType::Numeric { precision, scale }) => {
                apply_numeric_typmod(self.to_numeric(ty)?, *precision, *scale).map(Value::Numeric)
            }
            (Value::Enum { oid, .. }, DataType::Enum(to)) if oid == to => Ok(self.clone()),
            (Value::Bytea(_), DataType::Bytea)
            | (Value::Uuid(_), DataType::Uuid)
            | (Value::Interval(_), DataType::Interval)
            | (Value::Json(_), DataType::Json) => Ok(self.clone()),
            (_, DataType::Date) => self.to_date(),
            (_, DataType::Timestamp) => self.to_timestamp(),
            (_, DataType::TimestampTz) => self.to_timestamptz(),
            (_, DataType::Time) => self.to_time(),
            (Value::Time(t), DataType::Interval) => Ok(Value::Interval(Interval {
                months: 0,
                days: 0,
                micros: *t,
            })),
            (
                _,
                DataType::Bytea
                | DataType::Uuid
                | DataType::Interval
                | DataType::Json
                | DataType::Jsonb
                | DataType::Enum(_),
            ) => Err(self.cannot_cast(ty)),
        }
    }

    /// PostgreSQL names the types without their modifiers here.
    pub(crate) fn cannot_cast(&self, to: &DataType) -> TypeError {
        let to = match to {
            DataType::Numeric { .. } => DataType::Numeric {
                precision: None,
                scale: None,
            },
            other => *other,
        };
        TypeError::CannotCoerce {
            from: self.data_type().unwrap_or(to),
            to,
        }
    }

    /// The text a cast to a string type starts from (booleans become `true`/`false` there).
    pub(crate) fn cast_text(&self) -> String {
        match self {
            Value::Text(s) => s.clone(),
            Value::Boolean(b) => b.to_string(),
            other => other.to_string(),
        }
    }

    pub(crate) fn to_boolean(&self) -> Result<Value, TypeError> {
        match *self {
            Value::Boolean(b) => Ok(Value::Boolean(b)),
            Value::Integer(i) => Ok(Value::Boolean(i != 0)),
            _ => Err(self.cannot_cast(&DataType::Boolean)),
        }
    }

    pub(crate) fn to_int(&self, ty: &DataType) -> Result<Value, TypeError> {
        let wide = match *self {
            Value::Boolean(b) if *ty == DataType::Integer => i64::from(b),
            Value::SmallInt(i) => i64::from(i),
            Value::Integer(i) => i64::from(i),
            Value::BigInt(i) => i,
            Value::Real(x) => float_to_i64(f64::from(x), ty)?,
            Value::Double(x) => float_to_i64(x, ty)?,
            Value::Numeric(d) => d
                .round_dp_with_strategy(0, RoundingStrategy::MidpointAwayFromZero)
                .try_into()
                .map_err(|_| int_out_of_range(ty))?,
            _ => return Err(self.cannot_cast(ty)),
        };
        int_value(ty, wide)
    }

    pub(crate) fn to_real(&self) -> Result<Value, TypeError> {
        let v = match *self {
            Value::SmallInt(i) => f32::from(i),
            Value::Integer(i) => i as f32,
            Value::BigInt(i) => i as f32,
            Value::Real(x) => x,
            Value::Double(x) => double_to_real(x)?,
            Value::Numeric(d) => parse_real(&d.to_string())?,
            _ => return Err(self.cannot_cast(&DataType::Real)),
        };
        Ok(Value::Real(v))
    }

    pub(crate) fn to_double(&self) -> Result<Value, TypeError> {
        let v = match *self {
            Value::SmallInt(i) => f64::from(i),
            Value::Integer(i) => f64::from(i),
            Value::BigInt(i) => i as f64,
            Value::Real(x) => f64::from(x),
            Value::Double(x) => x,
            Value::Numeric(d) => parse_double(&d.to_string())?,
            _ => return Err(self.cannot_cast(&DataType::Double)),
        };
        Ok(Value::Double(v))
    }

    /// PostgreSQL converts floats to numeric through their `FLT_DIG`/`DBL_DIG` significant digits.
    pub(crate) fn to_numeric(&self, ty: &DataType) -> Result<Decimal, TypeError> {
        match *self {
            Value::SmallInt(i) => Ok(Decimal::from(i)),
            Value::Integer(i) => Ok(Decimal::from(i)),
            Value::BigInt(i) => Ok(Decimal::from(i)),
            Value::Real(x) => float_to_numeric(f64::from(x), 6),
            Value::Double(x) => float_to_numeric(x, 15),
            Value::Numeric(d) => Ok(d),
            _ => Err(self.cannot_cast(ty)),
        }
    }

    pub(crate) fn to_date(&self) -> Result<Value, TypeError> {
        match *self {
            Value::Date(d) => Ok(Value::Date(d)),
            Value::Timestamp(t) => Ok(Value::Date(timestamp_to_date(t))),
            Value::TimestampTz(t) => Ok(Value::Date(timestamp_to_date(
                crate::zone::session_zone().to_local(t),
            ))),
            _ => Err(self.cannot_cast(&DataType::Date)),
        }
    }

    pub(crate) fn to_timestamp(&self) -> Result<Value, TypeError> {
        match *self {
            Value::Timestamp(t) => Ok(Value::Timestamp(t)),
            Value::Date(d) => date_to_timestamp(d).map(Value::Timestamp),
            Value::TimestampTz(t) => Ok(Value::Timestamp(crate::zone::session_zone().to_local(t))),
            _ => Err(self.cannot_cast(&DataType::Timestamp)),
        }
    }

    /// The time of day of a timestamp (a `timestamptz`'s in the session zone; NULL for an
    /// infinite one, as in PostgreSQL), or an interval's time part modulo a day.
    pub(crate) fn to_time(&self) -> Result<Value, TypeError> {
        let time = match *self {
            Value::Time(t) => Some(t),
            Value::Timestamp(t) => time_of_timestamp(t),
            Value::TimestampTz(t) => time_of_timestamp(t)
                .and_then(|_| time_of_timestamp(zone::session_zone().to_local(t))),
            Value::Interval(i) => Some(time_of_interval(&i)),
            _ => return Err(self.cannot_cast(&DataType::Time)),
        };
        Ok(time.map_or(Value::Null, Value::Time))
    }

    /// A timestamp or date read as local time in the session zone; an instant as it is.
    pub(crate) fn to_timestamptz(&self) -> Result<Value, TypeError> {
        match *self {
            Value::TimestampTz(t) => Ok(Value::TimestampTz(t)),
            Value::Timestamp(t) => Ok(Value::TimestampTz(crate::zone::session_zone().to_utc(t))),
            Value::Date(d) => date_to_timestamp(d)
                .map(|t| Value::TimestampTz(crate::zone::session_zone().to_utc(t))),
            _ => Err(self.cannot_cast(&DataType::TimestampTz)),
        }
    }
}

pub(crate) fn int_out_of_range(ty: &DataType) -> TypeError {
    TypeError::NumericValueOutOfRange(format!("{ty} out of range"))
}

pub(crate) fn int_value(ty: &DataType, wide: i64) -> Result<Value, TypeError> {
    let value = match ty {
        DataType::SmallInt => i16::try_from(wide).ok().map(Value::SmallInt),
        DataType::Integer => i32::try_from(wide).ok().map(Value::Integer),
        _ => Some(Value::BigInt(wide)),
    };
    value.ok_or_else(|| int_out_of_range(ty))
}

/// Rounds half to even (C's `rint`), as PostgreSQL's float-to-integer casts do.
pub(crate) fn float_to_i64(x: f64, ty: &DataType) -> Result<i64, TypeError> {
    let rounded = x.round_ties_even();
    let bound = 2f64.powi(63);
    if (-bound..bound).contains(&rounded) {
        Ok(rounded as i64)
    } else {
        Err(int_out_of_range(ty))
    }
}

pub(crate) fn double_to_real(x: f64) -> Result<f32, TypeError> {
    let narrowed = x as f32;
    let fault = if narrowed.is_infinite() && x.is_finite() {
        "value out of range: overflow"
    } else if narrowed == 0.0 && x != 0.0 {
        "value out of range: underflow"
    } else {
        return Ok(narrowed);
    };
    Err(TypeError::NumericValueOutOfRange(fault.to_owned()))
}

pub(crate) fn float_to_numeric(x: f64, significant_digits: usize) -> Result<Decimal, TypeError> {
    if x.is_nan() {
        return Err(unsupported("cannot convert NaN to numeric"));
    }
    if x.is_infinite() {
        return Err(unsupported("cannot convert infinity to numeric"));
    }
    let text = format!("{x:.prec$e}", prec = significant_digits - 1);
    Ok(parse_numeric(&text)?.normalize())
}
