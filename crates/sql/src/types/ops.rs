//! Operators on values: arithmetic, comparison, concatenation and LIKE, with PostgreSQL's result
//! types, overflow errors and NULL handling.
//!
//! Integers keep the wider operand's width and fail with 22003 on overflow; an integer with a
//! numeric gives a numeric, anything with a float gives a double (real with real stays real).
//! Numeric division picks its scale as PostgreSQL's `select_div_scale` does, so `avg` and `/` print
//! the digits psql users expect. A NULL operand gives NULL; the binder has already refused operand
//! types no operator exists for.

use std::cmp::Ordering;

use rust_decimal::prelude::{FromPrimitive, ToPrimitive};
use rust_decimal::{Decimal, RoundingStrategy};
use steady_types::{DataType, Value};

use crate::error::{Result, SqlError};

/// An arithmetic or string operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArithOp {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Concat,
}

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    NotEq,
    Lt,
    LtEq,
    Gt,
    GtEq,
}

impl CmpOp {
    pub fn holds(self, ordering: Ordering) -> bool {
        match self {
            CmpOp::Eq => ordering == Ordering::Equal,
            CmpOp::NotEq => ordering != Ordering::Equal,
            CmpOp::Lt => ordering == Ordering::Less,
            CmpOp::LtEq => ordering != Ordering::Greater,
            CmpOp::Gt => ordering == Ordering::Greater,
            CmpOp::GtEq => ordering != Ordering::Less,
        }
    }

    /// The operator with its operands swapped (`a < b` is `b > a`).
    pub fn flipped(self) -> CmpOp {
        match self {
            CmpOp::Lt => CmpOp::Gt,
            CmpOp::LtEq => CmpOp::GtEq,
            CmpOp::Gt => CmpOp::Lt,
            CmpOp::GtEq => CmpOp::LtEq,
            other => other,
        }
    }

    pub fn symbol(self) -> &'static str {
        match self {
            CmpOp::Eq => "=",
            CmpOp::NotEq => "<>",
            CmpOp::Lt => "<",
            CmpOp::LtEq => "<=",
            CmpOp::Gt => ">",
            CmpOp::GtEq => ">=",
        }
    }
}

impl ArithOp {
    pub fn symbol(self) -> &'static str {
        match self {
            ArithOp::Add => "+",
            ArithOp::Sub => "-",
            ArithOp::Mul => "*",
            ArithOp::Div => "/",
            ArithOp::Mod => "%",
            ArithOp::Concat => "||",
        }
    }
}

/// SQL comparison; NULL when either side is NULL.
pub fn compare(op: CmpOp, left: &Value, right: &Value) -> Value {
    match left.compare(right) {
        Some(ordering) => Value::Boolean(op.holds(ordering)),
        None => Value::Null,
    }
}

/// The type category an operand belongs to, for deciding whether an operator exists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Category {
    Boolean,
    Numeric,
    String,
    Bytea,
    DateTime,
    Time,
    Uuid,
    Interval,
    Json,
    /// An enum type's values, by its oid: comparable only among themselves.
    Enum(u32),
}

pub fn category(ty: &DataType) -> Category {
    match ty {
        DataType::Boolean => Category::Boolean,
        DataType::SmallInt
        | DataType::Integer
        | DataType::BigInt
        | DataType::Real
        | DataType::Double
        | DataType::Numeric { .. } => Category::Numeric,
        DataType::Char(_)
        | DataType::Varchar(_)
        | DataType::Text
        | DataType::TextArray
        | DataType::Array(_) => Category::String,
        DataType::Bytea => Category::Bytea,
        DataType::Date | DataType::Timestamp | DataType::TimestampTz => Category::DateTime,
        DataType::Time => Category::Time,
        DataType::Uuid => Category::Uuid,
        DataType::Interval => Category::Interval,
        DataType::Json | DataType::Jsonb => Category::Json,
        DataType::Enum(oid) => Category::Enum(*oid),
    }
}

/// The result type of `left op right`, or None when no such operator exists.
pub fn arith_type(op: ArithOp, left: &DataType, right: &DataType) -> Option<DataType> {
    use DataType::*;
    if op == ArithOp::Concat {
        return match (left, right) {
            (Bytea, Bytea) => Some(Bytea),
            _ if category(left) == Category::String || category(right) == Category::String => {
                Some(Text)
            }
            _ => None,
        };
    }
    if let Some(ty) = interval_arith_type(op, left, right).or(time_arith_type(op, left, right)) {
        return Some(ty);
    }
    match (left, right) {
        (Date, SmallInt | Integer) if matches!(op, ArithOp::Add | ArithOp::Sub) => Some(Date),
        (SmallInt | Integer, Date) if op == ArithOp::Add => Some(Date),
        (Date, Date) if op == ArithOp::Sub => Some(Integer),
        _ if category(left) != Category::Numeric || category(right) != Category::Numeric => None,
        (Real, Real) => Some(Real),
        (Real | Double, _) | (_, Real | Double) => Some(Double),
        (Numeric { .. }, _) | (_, Numeric { .. }) => Some(Numeric {
            precision: None,
            scale: None,
        }),
        (BigInt, _) | (_, BigInt) => Some(BigInt),
        (Integer, _) | (_, Integer) => Some(Integer),
        _ => Some(SmallInt),
    }
}

/// Evaluates `left op right`.
pub fn arith(op: ArithOp, left: &Value, right: &Value) -> Result<Value> {
    if op == ArithOp::Concat {
        return concat(left, right);
    }
    if left.is_null() || right.is_null() {
        return Ok(Value::Null);
    }
    let (Some(lt), Some(rt)) = (left.data_type(), right.data_type()) else {
        return Ok(Value::Null);
    };
    let result_type = arith_type(op, &lt, &rt).ok_or_else(|| {
        SqlError::undefined_function(format!(
            "operator does not exist: {lt} {} {rt}",
            op.symbol()
        ))
    })?;
    if interval_arith_type(op, &lt, &rt).is_some() {
        return interval_arith(op, left, right);
    }
    if time_arith_type(op, &lt, &rt).is_some() {
        return time_arith(op, left, right);
    }
    match result_type {
        DataType::Date => date_arith(op, left, right),
        DataType::Integer if lt == DataType::Date => match (left, right) {
            (Value::Date(a), Value::Date(b)) => Ok(Value::Integer(a - b)),
            _ => unreachable!("date - date has date operands"),
        },
        DataType::SmallInt | DataType::Integer | DataType::BigInt => {
            int_arith(op, as_i64(left), as_i64(right), &result_type)
        }
        DataType::Real => float_arith(op, as_f64(left), as_f64(right)).and_then(|v| {
            let narrowed = v as f32;
            if narrowed.is_infinite() && v.is_finite() {
                return Err(SqlError::new("22003", "value out of range: overflow"));
            }
            Ok(Value::Real(narrowed))
        }),
        DataType::Double => float_arith(op, as_f64(left), as_f64(right)).map(Value::Double),
        _ => numeric_arith(op, as_decimal(left)?, as_decimal(right)?).map(Value::Numeric),
    }
}

/// The operators of intervals and with them (PostgreSQL's): `timestamp ± interval`,
/// `date ± interval` (a timestamp), `interval ± interval`, `interval * number`,
/// `number * interval`, `interval / number`, `timestamp - timestamp` (and with a date).
fn interval_arith_type(op: ArithOp, left: &DataType, right: &DataType) -> Option<DataType> {
    use DataType::*;
    let numeric = |t: &DataType| category(t) == Category::Numeric;
    let add_sub = matches!(op, ArithOp::Add | ArithOp::Sub);
    match (left, right) {
        (TimestampTz, Interval) if add_sub => Some(TimestampTz),
        (Interval, TimestampTz) if op == ArithOp::Add => Some(TimestampTz),
        (TimestampTz, TimestampTz | Timestamp | Date) | (Timestamp | Date, TimestampTz)
            if op == ArithOp::Sub =>
        {
            Some(Interval)
        }
        (Timestamp | Date, Interval) if add_sub => Some(Timestamp),
        (Interval, Timestamp | Date) if op == ArithOp::Add => Some(Timestamp),
        (Interval, Interval) if add_sub => Some(Interval),
        (Interval, n) if numeric(n) && matches!(op, ArithOp::Mul | ArithOp::Div) => Some(Interval),
        (n, Interval) if numeric(n) && op == ArithOp::Mul => Some(Interval),
        (Timestamp, Timestamp) | (Timestamp, Date) | (Date, Timestamp) if op == ArithOp::Sub => {
            Some(Interval)
        }
        _ => None,
    }
}

fn interval_arith(op: ArithOp, left: &Value, right: &Value) -> Result<Value> {
    let overflow = || SqlError::new("22008", "interval out of range");
    let timestamp_overflow = || SqlError::new("22008", "timestamp out of range");
    // Infinite timestamps and dates stay infinite (and cannot be subtracted), as in PostgreSQL.
    let zoned = matches!(left, Value::TimestampTz(_)) || matches!(right, Value::TimestampTz(_));
    let micros = |v: &Value| -> Result<i64> {
        match *v {
            Value::Timestamp(t) if zoned => Ok(steady_types::zone::session_zone().to_utc(t)),
            Value::Date(d) if zoned && d != i32::MAX && d != i32::MIN => {
                let midnight = i64::from(d) * steady_types::USECS_PER_DAY;
                Ok(steady_types::zone::session_zone().to_utc(midnight))
            }
            Value::Timestamp(t) | Value::TimestampTz(t) => Ok(t),
            Value::Date(i32::MAX) => Ok(i64::MAX),
            Value::Date(i32::MIN) => Ok(i64::MIN),
            Value::Date(d) => Ok(i64::from(d) * steady_types::USECS_PER_DAY),
            _ => unreachable!("a timestamp or date operand"),
        }
    };
    let infinite = |t: i64| t == i64::MAX || t == i64::MIN;
    Ok(match (left, right) {
        (Value::Interval(a), Value::Interval(b)) => {
            let b = if op == ArithOp::Sub {
                b.checked_neg().ok_or_else(overflow)?
            } else {
                *b
            };
            Value::Interval(a.checked_add(&b).ok_or_else(overflow)?)
        }
        (Value::Interval(i), n) if op == ArithOp::Div => {
            let divisor = as_f64(n);
            if divisor == 0.0 {
                return Err(SqlError::new("22012", "division by zero"));
            }
            Value::Interval(i.scaled(1.0 / divisor).ok_or_else(overflow)?)
        }
        (Value::Interval(i), n) | (n, Value::Interval(i)) if op == ArithOp::Mul => {
            Value::Interval(i.scaled(as_f64(n)).ok_or_else(overflow)?)
        }
        (Value::Interval(i), t) | (t, Value::Interval(i)) => {
            let i = if op == ArithOp::Sub {
                i.checked_neg().ok_or_else(overflow)?
            } else {
                *i
            };
            let start = micros(t)?;
            if infinite(start) {
                return Ok(retyped(t, start));
            }
            if let Value::TimestampTz(_) = t {
                return zoned_add(&i, start)
                    .map(Value::TimestampTz)
                    .ok_or_else(timestamp_overflow);
            }
            let added = i.add_to_timestamp(start).ok_or_else(timestamp_overflow)?;
            Value::Timestamp(added)
        }
        (a, b) => {
            let (a, b) = (micros(a)?, micros(b)?);
            if infinite(a) || infinite(b) {
                return Err(SqlError::new(
                    "22008",
                    "cannot subtract infinite timestamps",
                ));
            }
            Value::Interval(steady_types::Interval::between(a, b).ok_or_else(overflow)?)
        }
    })
}

/// The operators of `time` (PostgreSQL's): `time ± interval` (wrapping around midnight),
/// `interval + time`, `time - time` (an interval), `date + time` and `time + date` (a timestamp).
fn time_arith_type(op: ArithOp, left: &DataType, right: &DataType) -> Option<DataType> {
    use DataType::*;
    match (left, right) {
        (Time, Interval) if matches!(op, ArithOp::Add | ArithOp::Sub) => Some(Time),
        (Interval, Time) if op == ArithOp::Add => Some(Time),
        (Time, Time) if op == ArithOp::Sub => Some(Interval),
        (Date, Time) | (Time, Date) if op == ArithOp::Add => Some(Timestamp),
        _ => None,
    }
}

fn time_arith(op: ArithOp, left: &Value, right: &Value) -> Result<Value> {
    Ok(match (left, right) {
        (Value::Time(t), Value::Interval(i)) | (Value::Interval(i), Value::Time(t)) => {
            let i = if op == ArithOp::Sub {
                i.checked_neg()
                    .ok_or_else(|| SqlError::new("22008", "interval out of range"))?
            } else {
                *i
            };
            Value::Time(steady_types::add_interval_to_time(*t, &i))
        }
        (Value::Time(a), Value::Time(b)) => Value::Interval(steady_types::Interval {
            months: 0,
            days: 0,
            micros: a - b,
        }),
        (Value::Date(d), Value::Time(t)) | (Value::Time(t), Value::Date(d)) => {
            match Value::Date(*d).cast_to(&DataType::Timestamp)? {
                Value::Timestamp(midnight) if midnight != i64::MAX && midnight != i64::MIN => {
                    Value::Timestamp(midnight + t)
                }
                infinite => infinite,
            }
        }
        _ => unreachable!("time arithmetic has time operands"),
    })
}

/// A `timestamptz` (`start`, an instant) plus an interval, as PostgreSQL's: months and days on
/// the session zone's calendar (the wall clock kept across a DST change), then the time.
fn zoned_add(interval: &steady_types::Interval, start: i64) -> Option<i64> {
    if interval.months == 0 && interval.days == 0 {
        return start.checked_add(interval.micros);
    }
    let zone = steady_types::zone::session_zone();
    let calendar = steady_types::Interval {
        micros: 0,
        ..*interval
    };
    let local = calendar.add_to_timestamp(zone.to_local(start))?;
    zone.to_utc(local).checked_add(interval.micros)
}

/// An infinite result of the operand's type.
fn retyped(operand: &Value, micros: i64) -> Value {
    match operand {
        Value::TimestampTz(_) => Value::TimestampTz(micros),
        _ => Value::Timestamp(micros),
    }
}

fn concat(left: &Value, right: &Value) -> Result<Value> {
    Ok(match (left, right) {
        (Value::Null, _) | (_, Value::Null) => Value::Null,
        (Value::Bytea(a), Value::Bytea(b)) => Value::Bytea([a.as_slice(), b].concat()),
        _ => Value::Text(format!("{}{}", concat_text(left), concat_text(right))),
    })
}

/// An operand of `||` as text: PostgreSQL's `anytextcat` casts it to text, so a boolean is
/// `true`/`false` there (not its output form `t`/`f`, which `concat()` uses).
fn concat_text(value: &Value) -> String {
    match value {
        Value::Boolean(b) => b.to_string(),
        other => text_of(other),
    }
}

/// The text form of a value as concatenation and string functions see it (`char(n)` padding is
/// kept, as stored).
pub fn text_of(value: &Value) -> String {
    value.to_string()
}

fn date_arith(op: ArithOp, left: &Value, right: &Value) -> Result<Value> {
    let (days, offset) = match (left, right) {
        (Value::Date(d), n) => (*d, as_i64(n)),
        (n, Value::Date(d)) => (*d, as_i64(n)),
        _ => unreachable!("date arithmetic has a date operand"),
    };
    let offset = if op == ArithOp::Sub { -offset } else { offset };
    i32::try_from(i64::from(days) + offset)
        .ok()
        .filter(|d| *d != i32::MIN && *d != i32::MAX)
        .map(Value::Date)
        .ok_or_else(|| SqlError::new("22008", "date out of range"))
}

pub fn as_i64(value: &Value) -> i64 {
    match value {
        Value::SmallInt(v) => i64::from(*v),
        Value::Integer(v) => i64::from(*v),
        Value::BigInt(v) => *v,
        _ => 0,
    }
}

pub fn as_f64(value: &Value) -> f64 {
    match value {
        Value::SmallInt(v) => f64::from(*v),
        Value::Integer(v) => f64::from(*v),
        Value::BigInt(v) => *v as f64,
        Value::Real(v) => f64::from(*v),
        Value::Double(v) => *v,
        Value::Numeric(d) => d.to_f64().unwrap_or(f64::NAN),
        _ => f64::NAN,
    }
}

pub fn as_decimal(value: &Value) -> Result<Decimal> {
    match value {
        Value::Numeric(d) => Ok(*d),
        Value::SmallInt(_) | Value::Integer(_) | Value::BigInt(_) => {
            Ok(Decimal::from(as_i64(value)))
        }
        other => Decimal::from_f64(as_f64(other))
            .ok_or_else(|| SqlError::new("22003", "value out of range for type numeric")),
    }
}

fn int_out_of_range(ty: &DataType) -> SqlError {
    SqlError::new("22003", format!("{ty} out of range"))
}

fn int_arith(op: ArithOp, a: i64, b: i64, ty: &DataType) -> Result<Value> {
    let wide = match op {
        ArithOp::Add => a.checked_add(b),
        ArithOp::Sub => a.checked_sub(b),
        ArithOp::Mul => a.checked_mul(b),
        ArithOp::Div | ArithOp::Mod if b == 0 => {
            return Err(SqlError::new("22012", "division by zero"))
        }
        ArithOp::Div => a.checked_div(b),
        ArithOp::Mod => Some(a.checked_rem(b).unwrap_or(0)),
        ArithOp::Concat => unreachable!("concatenation is not arithmetic"),
    }
    .ok_or_else(|| int_out_of_range(ty))?;
    match ty {
        DataType::SmallInt => i16::try_from(wide).map(Value::SmallInt).ok(),
        DataType::Integer => i32::try_from(wide).map(Value::Integer).ok(),
        _ => Some(Value::BigInt(wide)),
    }
    .ok_or_else(|| int_out_of_range(ty))
}

fn float_arith(op: ArithOp, a: f64, b: f64) -> Result<f64> {
    let result = match op {
        ArithOp::Add => a + b,
        ArithOp::Sub => a - b,
        ArithOp::Mul => a * b,
        ArithOp::Div | ArithOp::Mod if b == 0.0 => {
            return Err(SqlError::new("22012", "division by zero"))
        }
        ArithOp::Div => a / b,
        ArithOp::Mod => a % b,
        ArithOp::Concat => unreachable!("concatenation is not arithmetic"),
    };
    if result.is_infinite() && a.is_finite() && b.is_finite() {
        return Err(SqlError::new("22003", "value out of range: overflow"));
    }
    Ok(result)
}

fn numeric_overflow() -> SqlError {
    SqlError::new("22003", "value overflows numeric format")
}

fn numeric_arith(op: ArithOp, a: Decimal, b: Decimal) -> Result<Decimal> {
    match op {
        ArithOp::Add => exact(op, a, b, a.checked_add(b)),
        ArithOp::Sub => exact(op, a, b, a.checked_sub(b)),
        ArithOp::Mul => exact(op, a, b, a.checked_mul(b)),
        ArithOp::Div | ArithOp::Mod if b.is_zero() => {
            Err(SqlError::new("22012", "division by zero"))
        }
        ArithOp::Div => numeric_div(a, b),
        ArithOp::Mod => a.checked_rem(b).ok_or_else(numeric_overflow),
        ArithOp::Concat => unreachable!("concatenation is not arithmetic"),
    }
}

/// The result of `a op b` (addition, subtraction or multiplication) as computed, if it is the
/// exact one. PostgreSQL's numeric computes these exactly with up to 1,000 digits; a `Decimal`
/// holds 28 to 29 and rounds the rest away silently (`1e20 + 1e-10`, or the product of two
/// 15-digit fractions): a result that lost digits so is refused with 22003 instead of returned
/// changed. Rounding only ever lowers the scale, so a result with at least the exact result's
/// scale is exact; otherwise the exact value is worked out in `i128` (trailing zeros dropped)
/// and compared.
fn exact(op: ArithOp, a: Decimal, b: Decimal, result: Option<Decimal>) -> Result<Decimal> {
    let result = result.ok_or_else(numeric_overflow)?;
    let exact_scale = match op {
        ArithOp::Mul => a.scale() + b.scale(),
        _ => a.scale().max(b.scale()),
    };
    if result.scale() >= exact_scale || exact_value(op, a, b) == Some(normalized(result)) {
        return Ok(result);
    }
    Err(SqlError::new(
        "22003",
        format!(
            "the result of {a} {} {b} has more digits than SteadyDB's numeric holds exactly (28)",
            op_symbol(op)
        ),
    ))
}

fn op_symbol(op: ArithOp) -> &'static str {
    match op {
        ArithOp::Add => "+",
        ArithOp::Sub => "-",
        _ => "*",
    }
}

/// `(mantissa, scale)` of `d` without trailing zeros.
fn normalized(d: Decimal) -> (i128, u32) {
    let d = d.normalize();
    (d.mantissa(), d.scale())
}

/// `a op b` exactly as `(mantissa, scale)` without trailing zeros; None when it takes more
/// than an `i128`, far more than a `Decimal` holds.
fn exact_value(op: ArithOp, a: Decimal, b: Decimal) -> Option<(i128, u32)> {
    let ((ma, sa), (mb, sb)) = (normalized(a), normalized(b));
    let (mut mantissa, mut scale) = match op {
        ArithOp::Mul => (ma.checked_mul(mb)?, sa + sb),
        _ => {
            let scale = sa.max(sb);
            let ma = ma.checked_mul(10i128.checked_pow(scale - sa)?)?;
            let mb = mb.checked_mul(10i128.checked_pow(scale - sb)?)?;
            let sum = if op == ArithOp::Add {
                ma.checked_add(mb)?
            } else {
                ma.checked_sub(mb)?
            };
            (sum, scale)
        }
    };
    while scale > 0 && mantissa % 10 == 0 {
        mantissa /= 10;
        scale -= 1;
    }
    Some((mantissa, scale))
}

/// Division with PostgreSQL's result scale: at least 16 significant digits, and never fewer
/// decimals than either operand has.
pub fn numeric_div(a: Decimal, b: Decimal) -> Result<Decimal> {
    let quotient = a.checked_div(b).ok_or_else(numeric_overflow)?;
    let scale = div_scale(a, b).min(28);
    let rounded = quotient.round_dp_with_strategy(scale, RoundingStrategy::MidpointAwayFromZero);
    Ok(with_scale(rounded, scale))
}

/// Gives `d` exactly `scale` decimals (adding zeros), as far as the 28-digit mantissa allows.
pub fn with_scale(mut d: Decimal, scale: u32) -> Decimal {
    while d.scale() < scale {
        let before = d;
        d.rescale(scale);
        if d == before && d.scale() < scale {
            break;
        }
    }
    d
}

/// `select_div_scale` of PostgreSQL's numeric.c, on base-10000 digit weights.
fn div_scale(a: Decimal, b: Decimal) -> u32 {
    const MIN_SIG_DIGITS: i64 = 16;
    let (weight1, first1) = base_10000_lead(a);
    let (weight2, first2) = base_10000_lead(b);
    let mut quotient_weight = weight1 - weight2;
    if first1 <= first2 {
        quotient_weight -= 1;
    }
    let scale = (MIN_SIG_DIGITS - quotient_weight * 4)
        .max(i64::from(a.scale()))
        .max(i64::from(b.scale()))
        .clamp(0, 1000);
    scale as u32
}

/// The weight (power of 10000) and value of the leading base-10000 digit of `d`.
fn base_10000_lead(d: Decimal) -> (i64, i64) {
    let magnitude = d.abs();
    if magnitude.is_zero() {
        return (0, 0);
    }
    let digits = magnitude.mantissa().to_string().len() as i64;
    let exponent = digits - 1 - i64::from(magnitude.scale());
    let weight = exponent.div_euclid(4);
    let shift = 4 * weight;
    let scaled = if shift >= 0 {
        magnitude / Decimal::from(10i64.pow(shift as u32).max(1))
    } else {
        magnitude * Decimal::from(10i64.pow((-shift) as u32))
    };
    (weight, scaled.trunc().to_i64().unwrap_or(0))
}

/// SQL LIKE: `%` matches any run, `_` one character, `\` escapes the next one.
pub fn like(text: &str, pattern: &str, case_insensitive: bool) -> bool {
    let (text, pattern) = if case_insensitive {
        (text.to_lowercase(), pattern.to_lowercase())
    } else {
        (text.to_owned(), pattern.to_owned())
    };
    let text: Vec<char> = text.chars().collect();
    let pattern: Vec<char> = pattern.chars().collect();
    like_match(&text, &pattern)
}

fn like_match(text: &[char], pattern: &[char]) -> bool {
    let (mut t, mut p) = (0, 0);
    let mut backtrack: Option<(usize, usize)> = None;
    while t < text.len() {
        match pattern.get(p) {
            Some('%') => {
                backtrack = Some((p, t));
                p += 1;
                continue;
            }
            Some('\\') if pattern.get(p + 1) == Some(&text[t]) => {
                p += 2;
                t += 1;
                continue;
            }
            Some('_') => {
                p += 1;
                t += 1;
                continue;
            }
            Some(c) if *c != '\\' && *c == text[t] => {
                p += 1;
                t += 1;
                continue;
            }
            _ => {}
        }
        match backtrack {
            Some((star, start)) => {
                p = star + 1;
                t = start + 1;
                backtrack = Some((star, start + 1));
            }
            None => return false,
        }
    }
    pattern[p..].iter().all(|c| *c == '%')
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// `(mantissa, scale)` without trailing zeros.
    fn stripped(mut mantissa: i128, mut scale: u32) -> (i128, u32) {
        while scale > 0 && mantissa % 10 == 0 {
            mantissa /= 10;
            scale -= 1;
        }
        (mantissa, scale)
    }

    proptest! {
        /// A sum, difference or product of numerics is the exact one (worked out in `i128`
        /// here), or, when no `Decimal` holds that, refused with 22003 — never rounded.
        #[test]
        fn sums_and_products_are_exact_or_refused(
            ma in -10i64.pow(15)..10i64.pow(15),
            sa in 0u32..20,
            mb in -10i64.pow(15)..10i64.pow(15),
            sb in 0u32..20,
            op in prop_oneof![Just(ArithOp::Add), Just(ArithOp::Sub), Just(ArithOp::Mul)],
        ) {
            let (a, b) = (Decimal::new(ma, sa), Decimal::new(mb, sb));
            let (ma, mb) = (i128::from(ma), i128::from(mb));
            let (mantissa, scale) = match op {
                ArithOp::Mul => (ma * mb, sa + sb),
                _ => {
                    let scale = sa.max(sb);
                    let ma = ma * 10i128.pow(scale - sa);
                    let mb = mb * 10i128.pow(scale - sb);
                    (if op == ArithOp::Add { ma + mb } else { ma - mb }, scale)
                }
            };
            let (mantissa, scale) = stripped(mantissa, scale);
            let exact = Decimal::try_from_i128_with_scale(mantissa, scale).ok();
            match (numeric_arith(op, a, b), exact) {
                (Ok(result), Some(exact)) => prop_assert_eq!(result, exact),
                (Ok(result), None) => prop_assert!(false, "{a} {op:?} {b} rounded to {result}"),
                (Err(err), Some(exact)) => prop_assert!(false, "{a} {op:?} {b} = {exact} refused: {err}"),
                (Err(err), None) => prop_assert_eq!(err.code, "22003"),
            }
        }
    }

    #[test]
    fn like_patterns() {
        assert!(like("hello", "h%o", false));
        assert!(like("hello", "_ello", false));
        assert!(!like("hello", "h_o", false));
        assert!(like("50%", "50\\%", false));
        assert!(!like("500", "50\\%", false));
        assert!(like("HeLLo", "hel%", true));
        assert!(like("", "%", false));
        assert!(like("abcabc", "%abc", false));
    }

    #[test]
    fn numeric_division_scale_follows_postgres() {
        let d = |s: &str| s.parse::<Decimal>().unwrap();
        assert_eq!(
            numeric_div(d("5"), d("2")).unwrap().to_string(),
            "2.5000000000000000"
        );
        assert_eq!(
            numeric_div(d("1"), d("3")).unwrap().to_string(),
            "0.33333333333333333333"
        );
        assert_eq!(
            numeric_div(d("10"), d("4")).unwrap().to_string(),
            "2.5000000000000000"
        );
        assert_eq!(
            numeric_div(d("12345"), d("1")).unwrap().to_string(),
            "12345.0000000000000000"
        );
    }
}
