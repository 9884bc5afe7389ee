//! SQL data types and values: what a column can hold, how a value looks as PostgreSQL text, how text
//! becomes a value, how values convert (casts) and how they compare.
//!
//! This module owns the *meaning* of values; `codec` owns their bytes. Everything here follows
//! PostgreSQL 15 so that psql, drivers and the regression habits of users see the answers they
//! expect, including SQLSTATEs and message texts of errors.
//!
//! # Types and their values
//!
//! | `DataType`                    | PostgreSQL name               | `Value` variant    | range / representation                       |
//! |-------------------------------|-------------------------------|--------------------|----------------------------------------------|
//! | `Boolean`                     | `boolean`                     | `Boolean(bool)`    |                                              |
//! | `SmallInt`                    | `smallint`                    | `SmallInt(i16)`    |                                              |
//! | `Integer`                     | `integer`                     | `Integer(i32)`     |                                              |
//! | `BigInt`                      | `bigint`                      | `BigInt(i64)`      |                                              |
//! | `Real`                        | `real`                        | `Real(f32)`        | IEEE, incl. `NaN`, `±Infinity`, `-0`         |
//! | `Double`                      | `double precision`            | `Double(f64)`      | IEEE, incl. `NaN`, `±Infinity`, `-0`         |
//! | `Numeric{precision, scale}`   | `numeric[(p,s)]`              | `Numeric(Decimal)` | 96-bit mantissa (~28 digits), scale 0..=28   |
//! | `Char(n)`                     | `character(n)`                | `Text(String)`     | exactly n characters, space padded           |
//! | `Varchar(n)`                  | `character varying[(n)]`      | `Text(String)`     | at most n characters                         |
//! | `Text`                        | `text`                        | `Text(String)`     |                                              |
//! | `Bytea`                       | `bytea`                       | `Bytea(Vec<u8>)`   |                                              |
//! | `Date`                        | `date`                        | `Date(i32)`        | days since 2000-01-01; `i32::MIN/MAX` = ∓infinity |
//! | `Timestamp`                   | `timestamp without time zone` | `Timestamp(i64)`   | µs since 2000-01-01 00:00:00; `i64::MIN/MAX` = ∓infinity |
//!
//! `Null` belongs to every type. Dates run from 4714-11-24 BC to 5874897-12-31 and timestamps from
//! 4714-11-24 BC to 294276-12-31, as in PostgreSQL; the calendar is the proleptic Gregorian one, and
//! year 0 is written `0001 BC`.
//!
//! # Text formats (output, `Display` / `to_pg_text`)
//!
//! | type             | output                                    | example                        |
//! |------------------|-------------------------------------------|--------------------------------|
//! | boolean          | `t` / `f`                                 | `t`                            |
//! | integers         | decimal                                   | `-42`                          |
//! | real, double     | shortest text that reads back exactly; scientific when the decimal exponent is < -4 or ≥ 6 (real) / 15 (double) | `0.1`, `1e+15`, `1.5e-05`, `NaN`, `-Infinity` |
//! | numeric          | plain decimal with the value's scale      | `1.50`                         |
//! | char/varchar/text| the string                                | `abc`                          |
//! | bytea            | `\x` then lowercase hex                   | `\x00ff`                       |
//! | date             | `YYYY-MM-DD[ BC]`                         | `2024-02-29`                   |
//! | timestamp        | `YYYY-MM-DD HH:MM:SS[.ffffff][ BC]`, trailing zeros of the fraction dropped | `2024-02-29 13:05:00.25` |
//!
//! Input (`Value::parse`) accepts, around surrounding whitespace: booleans `t/true/y/yes/on/1`,
//! `f/false/n/no/off/0` and their unambiguous prefixes in any case; integers with a sign; floats
//! with exponent, `Infinity`, `-Infinity`, `inf`, `NaN`; numerics with exponent; dates
//! `YYYY-MM-DD[ BC]`; timestamps `YYYY-MM-DD[( |T)HH:MM[:SS[.f…]]][ BC]`; `infinity`, `-infinity`
//! and `epoch` for both; bytea in hex (`\x…`) and escape (`\\`, `\ooo`) formats.
//!
//! # Invariants
//!
//! - A value stored in a column has been through [`Value::assign_to`] for that column's type, so a
//!   `Char(n)` value has exactly n characters and a `Numeric{precision: Some(_), scale}` value has
//!   exactly that scale. The codecs rely on it.
//! - `==` on `Value` is identity of representation (floats by bits, numerics by value *and* scale);
//!   SQL equality and order are [`Value::compare`].
//! - Strings compare byte-wise (the C collation); numbers compare across widths; `NaN` equals
//!   `NaN` and sorts above `+Infinity`; `-0` equals `0`; a date compares with a timestamp as its
//!   midnight.
//! - Numeric has no `NaN`/`Infinity` (rust_decimal cannot hold them): such input is refused with
//!   SQLSTATE 0A000 rather than silently changed.

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

use rust_decimal::{Decimal, RoundingStrategy};

/// The type of a column or expression. Length and precision modifiers are part of the type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum DataType {
    Boolean,
    SmallInt,
    Integer,
    BigInt,
    Real,
    Double,
    /// `precision: None` is unconstrained `numeric` (the scale is then ignored).
    Numeric {
        precision: Option<u32>,
        scale: Option<u32>,
    },
    Char(u32),
    Varchar(Option<u32>),
    Text,
    Bytea,
    Date,
    Timestamp,
}

impl fmt::Display for DataType {
    /// PostgreSQL's `format_type` spelling, as used in error messages and `\d`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DataType::Boolean => f.write_str("boolean"),
            DataType::SmallInt => f.write_str("smallint"),
            DataType::Integer => f.write_str("integer"),
            DataType::BigInt => f.write_str("bigint"),
            DataType::Real => f.write_str("real"),
            DataType::Double => f.write_str("double precision"),
            DataType::Numeric {
                precision: Some(p),
                scale,
            } => write!(f, "numeric({p},{})", scale.unwrap_or(0)),
            DataType::Numeric { .. } => f.write_str("numeric"),
            DataType::Char(n) => write!(f, "character({n})"),
            DataType::Varchar(Some(n)) => write!(f, "character varying({n})"),
            DataType::Varchar(None) => f.write_str("character varying"),
            DataType::Text => f.write_str("text"),
            DataType::Bytea => f.write_str("bytea"),
            DataType::Date => f.write_str("date"),
            DataType::Timestamp => f.write_str("timestamp without time zone"),
        }
    }
}

/// A conversion or input error, with PostgreSQL's SQLSTATE and message text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TypeError {
    /// 22P02, e.g. `invalid input syntax for type integer: "abc"`.
    #[error("{0}")]
    InvalidTextRepresentation(String),
    /// 22003, e.g. `integer out of range`.
    #[error("{0}")]
    NumericValueOutOfRange(String),
    /// 22003: a value does not fit `numeric(precision, scale)`; see [`TypeError::detail`].
    #[error("numeric field overflow")]
    NumericFieldOverflow { precision: u32, scale: u32 },
    /// 22001: an assignment to `char(n)`/`varchar(n)` would cut non-space characters.
    #[error("value too long for type {0}")]
    StringDataRightTruncation(DataType),
    /// 22007, e.g. `invalid input syntax for type date: "x"`.
    #[error("{0}")]
    InvalidDatetimeFormat(String),
    /// 22008, e.g. `date/time field value out of range: "2001-02-29"`.
    #[error("{0}")]
    DatetimeFieldOverflow(String),
    /// 22023, e.g. `invalid hexadecimal digit: "z"`.
    #[error("{0}")]
    InvalidParameterValue(String),
    /// 42846: no cast exists between the two types.
    #[error("cannot cast type {from} to {to}")]
    CannotCoerce { from: DataType, to: DataType },
    /// 0A000: a value this engine cannot represent (numeric NaN and infinity).
    #[error("{0}")]
    FeatureNotSupported(String),
}

impl TypeError {
    /// The PostgreSQL error code.
    pub fn sqlstate(&self) -> &'static str {
        match self {
            TypeError::InvalidTextRepresentation(_) => "22P02",
            TypeError::NumericValueOutOfRange(_) | TypeError::NumericFieldOverflow { .. } => {
                "22003"
            }
            TypeError::StringDataRightTruncation(_) => "22001",
            TypeError::InvalidDatetimeFormat(_) => "22007",
            TypeError::DatetimeFieldOverflow(_) => "22008",
            TypeError::InvalidParameterValue(_) => "22023",
            TypeError::CannotCoerce { .. } => "42846",
            TypeError::FeatureNotSupported(_) => "0A000",
        }
    }

    /// PostgreSQL's DETAIL line, where it gives one.
    pub fn detail(&self) -> Option<String> {
        let TypeError::NumericFieldOverflow { precision, scale } = self else {
            return None;
        };
        let max_digits = i64::from(*precision) - i64::from(*scale);
        let bound = if max_digits != 0 {
            format!("10^{max_digits}")
        } else {
            "1".to_owned()
        };
        Some(format!(
            "A field with precision {precision}, scale {scale} must round to an absolute value less than {bound}."
        ))
    }
}

fn invalid_syntax(type_name: &str, input: &str) -> TypeError {
    TypeError::InvalidTextRepresentation(format!(
        "invalid input syntax for type {type_name}: \"{input}\""
    ))
}

/// A SQL value. See the module documentation for each variant's representation.
#[derive(Debug, Clone)]
pub enum Value {
    Null,
    Boolean(bool),
    SmallInt(i16),
    Integer(i32),
    BigInt(i64),
    Real(f32),
    Double(f64),
    Numeric(Decimal),
    Text(String),
    Bytea(Vec<u8>),
    /// Days since 2000-01-01.
    Date(i32),
    /// Microseconds since 2000-01-01 00:00:00.
    Timestamp(i64),
}

impl PartialEq for Value {
    /// Identity of representation: floats by bits, numerics by value and scale.
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Value::Null, Value::Null) => true,
            (Value::Boolean(a), Value::Boolean(b)) => a == b,
            (Value::SmallInt(a), Value::SmallInt(b)) => a == b,
            (Value::Integer(a), Value::Integer(b)) | (Value::Date(a), Value::Date(b)) => a == b,
            (Value::BigInt(a), Value::BigInt(b)) | (Value::Timestamp(a), Value::Timestamp(b)) => {
                a == b
            }
            (Value::Real(a), Value::Real(b)) => a.to_bits() == b.to_bits(),
            (Value::Double(a), Value::Double(b)) => a.to_bits() == b.to_bits(),
            (Value::Numeric(a), Value::Numeric(b)) => a == b && a.scale() == b.scale(),
            (Value::Text(a), Value::Text(b)) => a == b,
            (Value::Bytea(a), Value::Bytea(b)) => a == b,
            _ => false,
        }
    }
}

impl Eq for Value {}

impl Value {
    pub fn is_null(&self) -> bool {
        matches!(self, Value::Null)
    }

    /// The value's own type (`None` for NULL). Strings report `Text`, numerics an unconstrained
    /// `Numeric`: the column type, not the value, carries length and precision.
    pub fn data_type(&self) -> Option<DataType> {
        Some(match self {
            Value::Null => return None,
            Value::Boolean(_) => DataType::Boolean,
            Value::SmallInt(_) => DataType::SmallInt,
            Value::Integer(_) => DataType::Integer,
            Value::BigInt(_) => DataType::BigInt,
            Value::Real(_) => DataType::Real,
            Value::Double(_) => DataType::Double,
            Value::Numeric(_) => DataType::Numeric {
                precision: None,
                scale: None,
            },
            Value::Text(_) => DataType::Text,
            Value::Bytea(_) => DataType::Bytea,
            Value::Date(_) => DataType::Date,
            Value::Timestamp(_) => DataType::Timestamp,
        })
    }

    /// PostgreSQL's text output of the value; `None` for NULL (sent as a NULL, not as text).
    pub fn to_pg_text(&self) -> Option<String> {
        (!self.is_null()).then(|| self.to_string())
    }

    /// Reads PostgreSQL text input as a value of type `ty`, applying the type's length or
    /// precision as an assignment does (too long a string is an error, not truncated).
    pub fn parse(ty: &DataType, text: &str) -> Result<Value, TypeError> {
        match ty {
            DataType::Boolean => parse_bool(text).map(Value::Boolean),
            DataType::SmallInt | DataType::Integer | DataType::BigInt => parse_int(ty, text),
            DataType::Real => parse_real(text).map(Value::Real),
            DataType::Double => parse_double(text).map(Value::Double),
            DataType::Numeric { precision, scale } => {
                apply_numeric_typmod(parse_numeric(text)?, *precision, *scale).map(Value::Numeric)
            }
            DataType::Char(_) | DataType::Varchar(_) | DataType::Text => {
                fit_string(text.to_owned(), ty, true).map(Value::Text)
            }
            DataType::Bytea => parse_bytea(text).map(Value::Bytea),
            DataType::Date => parse_date(text).map(Value::Date),
            DataType::Timestamp => parse_timestamp(text).map(Value::Timestamp),
        }
    }

    /// An explicit cast (`CAST(x AS ty)`, `x::ty`): strings longer than `char(n)`/`varchar(n)`
    /// are truncated. NULL casts to NULL.
    pub fn cast_to(&self, ty: &DataType) -> Result<Value, TypeError> {
        self.convert(ty, false)
    }

    /// An assignment cast (INSERT, UPDATE, COPY): like [`Value::cast_to`], except that a string
    /// too long for `char(n)`/`varchar(n)` is an error unless only spaces would be cut.
    pub fn assign_to(&self, ty: &DataType) -> Result<Value, TypeError> {
        self.convert(ty, true)
    }

    /// SQL comparison: `None` when either side is NULL or the types are not comparable.
    pub fn compare(&self, other: &Value) -> Option<Ordering> {
        match (self, other) {
            (Value::Null, _) | (_, Value::Null) => None,
            (Value::Boolean(a), Value::Boolean(b)) => Some(a.cmp(b)),
            (Value::Text(a), Value::Text(b)) => Some(a.cmp(b)),
            (Value::Bytea(a), Value::Bytea(b)) => Some(a.cmp(b)),
            _ => compare_numbers(self, other).or_else(|| compare_datetimes(self, other)),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Output
// ---------------------------------------------------------------------------------------------

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
        }
    }
}

/// Lays out Rust's shortest round-trip digits (`{:e}` output) the way PostgreSQL's Ryu output
/// does: fixed notation for decimal exponents in `-4..fixed_below`, else `d.ddde±XX`.
fn float_text(scientific: &str, fixed_below: i32) -> String {
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

fn fixed_notation(digits: &str, exponent: i32) -> String {
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

fn scientific_notation(digits: &str, exponent: i32) -> String {
    let (first, rest) = digits.split_at(1);
    let point = if rest.is_empty() { "" } else { "." };
    let sign = if exponent < 0 { '-' } else { '+' };
    format!("{first}{point}{rest}e{sign}{:02}", exponent.unsigned_abs())
}

fn write_hex(f: &mut fmt::Formatter<'_>, bytes: &[u8]) -> fmt::Result {
    f.write_str("\\x")?;
    bytes.iter().try_for_each(|b| write!(f, "{b:02x}"))
}

fn write_date(f: &mut fmt::Formatter<'_>, days: i32) -> fmt::Result {
    match days {
        i32::MAX => f.write_str("infinity"),
        i32::MIN => f.write_str("-infinity"),
        _ => {
            let bc = write_calendar_day(f, i64::from(days))?;
            write_era(f, bc)
        }
    }
}

fn write_timestamp(f: &mut fmt::Formatter<'_>, micros: i64) -> fmt::Result {
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
fn write_calendar_day(f: &mut fmt::Formatter<'_>, days: i64) -> Result<bool, fmt::Error> {
    let (year, month, day) = civil_from_days(days + PG_EPOCH_UNIX_DAYS);
    let bc = year <= 0;
    let shown_year = if bc { 1 - year } else { year };
    write!(f, "{shown_year:04}-{month:02}-{day:02}")?;
    Ok(bc)
}

fn write_time_of_day(f: &mut fmt::Formatter<'_>, micros: i64) -> fmt::Result {
    let seconds = micros / 1_000_000;
    let (hour, minute, second) = (seconds / 3600, seconds / 60 % 60, seconds % 60);
    write!(f, " {hour:02}:{minute:02}:{second:02}")?;
    match micros % 1_000_000 {
        0 => Ok(()),
        fraction => write!(f, ".{}", format!("{fraction:06}").trim_end_matches('0')),
    }
}

fn write_era(f: &mut fmt::Formatter<'_>, bc: bool) -> fmt::Result {
    if bc {
        f.write_str(" BC")
    } else {
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------
// Input
// ---------------------------------------------------------------------------------------------

/// Trims what C's `isspace` calls whitespace, as PostgreSQL's input functions do.
fn pg_trim(text: &str) -> &str {
    text.trim_matches(|c| matches!(c, ' ' | '\t' | '\n' | '\r' | '\x0b' | '\x0c'))
}

fn parse_bool(text: &str) -> Result<bool, TypeError> {
    let s = pg_trim(text).to_ascii_lowercase();
    let abbreviates = |word: &str, min_len: usize| s.len() >= min_len && word.starts_with(&s);
    if abbreviates("true", 1) || abbreviates("yes", 1) || abbreviates("on", 2) || s == "1" {
        Ok(true)
    } else if abbreviates("false", 1) || abbreviates("no", 1) || abbreviates("off", 2) || s == "0" {
        Ok(false)
    } else {
        Err(invalid_syntax("boolean", text))
    }
}

fn parse_int(ty: &DataType, text: &str) -> Result<Value, TypeError> {
    let s = pg_trim(text);
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(invalid_syntax(&ty.to_string(), text));
    }
    let out_of_range = || {
        TypeError::NumericValueOutOfRange(format!("value \"{text}\" is out of range for type {ty}"))
    };
    let wide: i64 = s.parse().map_err(|_| out_of_range())?;
    int_value(ty, wide).map_err(|_| out_of_range())
}

fn parse_double(text: &str) -> Result<f64, TypeError> {
    let s = pg_trim(text);
    let v: f64 = s
        .parse()
        .map_err(|_| invalid_syntax("double precision", text))?;
    check_float_input(s, v.is_infinite(), v == 0.0, "double precision")?;
    Ok(v)
}

fn parse_real(text: &str) -> Result<f32, TypeError> {
    let s = pg_trim(text);
    let v: f32 = s.parse().map_err(|_| invalid_syntax("real", text))?;
    check_float_input(s, v.is_infinite(), v == 0.0, "real")?;
    Ok(v)
}

/// Refuses input that overflowed to infinity or underflowed to zero, as `strtod`'s ERANGE does.
fn check_float_input(
    s: &str,
    infinite: bool,
    zero: bool,
    type_name: &str,
) -> Result<(), TypeError> {
    let spelled_infinite = s
        .trim_start_matches(['+', '-'])
        .get(..3)
        .is_some_and(|p| p.eq_ignore_ascii_case("inf"));
    let mantissa = s.split(['e', 'E']).next().unwrap_or("");
    let spelled_nonzero = mantissa.bytes().any(|b| (b'1'..=b'9').contains(&b));
    if (infinite && !spelled_infinite) || (zero && spelled_nonzero) {
        return Err(TypeError::NumericValueOutOfRange(format!(
            "\"{s}\" is out of range for type {type_name}"
        )));
    }
    Ok(())
}

fn parse_numeric(text: &str) -> Result<Decimal, TypeError> {
    let s = pg_trim(text);
    let unsigned = s.strip_prefix(['+', '-']).unwrap_or(s).to_ascii_lowercase();
    match unsigned.as_str() {
        "nan" => return Err(unsupported("numeric NaN is not supported")),
        "inf" | "infinity" => return Err(unsupported("numeric infinity is not supported")),
        _ => {}
    }
    let parts = DecimalText::split(s).ok_or_else(|| invalid_syntax("numeric", text))?;
    parts.to_decimal().ok_or_else(|| {
        TypeError::NumericValueOutOfRange("value overflows numeric format".to_owned())
    })
}

fn unsupported(message: &str) -> TypeError {
    TypeError::FeatureNotSupported(message.to_owned())
}

/// The pieces of `[+-]digits[.digits][e[+-]digits]`.
struct DecimalText<'a> {
    negative: bool,
    integer: &'a str,
    fraction: &'a str,
    exponent: i64,
}

impl<'a> DecimalText<'a> {
    fn split(s: &'a str) -> Option<Self> {
        let negative = s.starts_with('-');
        let s = s.strip_prefix(['+', '-']).unwrap_or(s);
        let (mantissa, exponent) = match s.split_once(['e', 'E']) {
            Some((m, e)) => (m, e.parse::<i64>().ok().filter(|e| e.abs() <= 1000)?),
            None => (s, 0),
        };
        let (integer, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
        let all_digits = |p: &str| p.bytes().all(|b| b.is_ascii_digit());
        let valid =
            all_digits(integer) && all_digits(fraction) && mantissa != "." && !mantissa.is_empty();
        valid.then_some(DecimalText {
            negative,
            integer,
            fraction,
            exponent,
        })
    }

    /// The value with PostgreSQL's display scale (`max(0, fraction digits - exponent)`), rounded
    /// to 28 fractional digits; `None` if it does not fit a `Decimal`.
    fn to_decimal(&self) -> Option<Decimal> {
        let digits = format!("{}{}", self.integer, self.fraction);
        let scale = self.fraction.len() as i64 - self.exponent;
        let plain = match usize::try_from(scale) {
            Ok(scale) => {
                let padded = format!("{digits:0>width$}", width = scale + 1);
                let (int, frac) = padded.split_at(padded.len() - scale);
                format!("{int}.{frac}")
            }
            Err(_) => format!("{digits}{}", "0".repeat(scale.unsigned_abs() as usize)),
        };
        let mut d = Decimal::from_str(&plain).ok()?;
        d.set_sign_negative(self.negative && !d.is_zero());
        Some(d)
    }
}

/// Rounds (half away from zero) to the column's scale and checks its precision.
fn apply_numeric_typmod(
    d: Decimal,
    precision: Option<u32>,
    scale: Option<u32>,
) -> Result<Decimal, TypeError> {
    let Some(precision) = precision else {
        return Ok(d);
    };
    let scale = scale.unwrap_or(0);
    let mut rounded = without_negative_zero(
        d.round_dp_with_strategy(scale, RoundingStrategy::MidpointAwayFromZero),
    );
    rounded.rescale(scale);
    let integer_digits = i64::from(precision) - i64::from(scale);
    match power_of_ten(integer_digits) {
        Some(bound) if rounded.abs() >= bound => {
            Err(TypeError::NumericFieldOverflow { precision, scale })
        }
        _ => Ok(rounded),
    }
}

fn without_negative_zero(mut d: Decimal) -> Decimal {
    if d.is_zero() {
        d.set_sign_positive(true);
    }
    d
}

/// 10^exponent, or `None` when it exceeds every `Decimal` (so bounds nothing).
fn power_of_ten(exponent: i64) -> Option<Decimal> {
    match exponent {
        29.. => None,
        0..=28 => Some(Decimal::from_i128_with_scale(
            10i128.pow(exponent as u32),
            0,
        )),
        -28..=-1 => Some(Decimal::from_i128_with_scale(
            1,
            exponent.unsigned_abs() as u32,
        )),
        _ => Some(Decimal::ZERO),
    }
}

fn parse_bytea(text: &str) -> Result<Vec<u8>, TypeError> {
    match text.strip_prefix("\\x") {
        Some(hex) => decode_hex(hex),
        None => decode_escaped(text.as_bytes()),
    }
}

/// Hex format: pairs of hex digits, whitespace allowed between pairs.
fn decode_hex(hex: &str) -> Result<Vec<u8>, TypeError> {
    let mut out = Vec::with_capacity(hex.len() / 2);
    let mut chars = hex.chars();
    while let Some(c) = chars.next() {
        if matches!(c, ' ' | '\t' | '\n' | '\r') {
            continue;
        }
        let low = chars.next().ok_or_else(|| {
            TypeError::InvalidParameterValue(
                "invalid hexadecimal data: odd number of digits".to_owned(),
            )
        })?;
        out.push(hex_digit(c)? << 4 | hex_digit(low)?);
    }
    Ok(out)
}

fn hex_digit(c: char) -> Result<u8, TypeError> {
    c.to_digit(16).map(|d| d as u8).ok_or_else(|| {
        TypeError::InvalidParameterValue(format!("invalid hexadecimal digit: \"{c}\""))
    })
}

/// Escape format: bytes as they are, `\\` for a backslash, `\ooo` (octal) for any byte.
fn decode_escaped(mut rest: &[u8]) -> Result<Vec<u8>, TypeError> {
    let mut out = Vec::with_capacity(rest.len());
    while let Some((&byte, tail)) = rest.split_first() {
        rest = match (byte, tail) {
            (b'\\', [b'\\', more @ ..]) => {
                out.push(b'\\');
                more
            }
            (b'\\', [a @ b'0'..=b'3', b @ b'0'..=b'7', c @ b'0'..=b'7', more @ ..]) => {
                out.push((a - b'0') << 6 | (b - b'0') << 3 | (c - b'0'));
                more
            }
            (b'\\', _) => {
                return Err(TypeError::InvalidTextRepresentation(
                    "invalid input syntax for type bytea".to_owned(),
                ))
            }
            _ => {
                out.push(byte);
                tail
            }
        };
    }
    Ok(out)
}

/// Applies `char(n)`/`varchar(n)`: cuts to n characters (an error in an assignment unless only
/// spaces are cut) and pads `char(n)` with spaces.
fn fit_string(mut s: String, ty: &DataType, assignment: bool) -> Result<String, TypeError> {
    let limit = match *ty {
        DataType::Char(n) | DataType::Varchar(Some(n)) => n as usize,
        _ => return Ok(s),
    };
    if let Some((cut, _)) = s.char_indices().nth(limit) {
        if assignment && s[cut..].bytes().any(|b| b != b' ') {
            return Err(TypeError::StringDataRightTruncation(*ty));
        }
        s.truncate(cut);
    }
    if let DataType::Char(_) = ty {
        let missing = limit - s.chars().count();
        s.extend(std::iter::repeat_n(' ', missing));
    }
    Ok(s)
}

// ---------------------------------------------------------------------------------------------
// Dates and timestamps
// ---------------------------------------------------------------------------------------------

pub const USECS_PER_DAY: i64 = 86_400_000_000;
/// Days from 1970-01-01 to 2000-01-01.
pub const PG_EPOCH_UNIX_DAYS: i64 = 10_957;
/// First valid date (4714-11-24 BC, Julian day 0) and first invalid one (5874898-01-01).
const DATE_RANGE: std::ops::Range<i64> = -2_451_545..2_145_031_949;
/// First valid timestamp (4714-11-24 00:00 BC) and first invalid one (294277-01-01 00:00).
const TIMESTAMP_RANGE: std::ops::Range<i128> = -211_813_488_000_000_000..9_223_371_331_200_000_000;

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

fn days_in_month(year: i64, month: i64) -> i64 {
    let leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// What a date/timestamp text denotes, before its type's range is checked.
enum DateTimeInput {
    Finite { days: i64, micros: i64 },
    Infinity,
    NegativeInfinity,
}

/// Why a date/timestamp text was refused.
enum DateTimeFault {
    Format,
    FieldRange,
}

impl DateTimeFault {
    fn into_error(self, type_name: &str, text: &str) -> TypeError {
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
struct DateTimeFields {
    year: i64,
    month: i64,
    day: i64,
    hour: i64,
    minute: i64,
    second: i64,
    micros: i64,
    bc: bool,
}

impl DateTimeFields {
    fn astronomical_year(&self) -> i64 {
        if self.bc {
            1 - self.year
        } else {
            self.year
        }
    }

    fn in_range(&self) -> bool {
        let time_ok = self.hour < 24 || (self.minute == 0 && self.second == 0 && self.micros == 0);
        self.year >= 1
            && (1..=12).contains(&self.month)
            && (1..=days_in_month(self.astronomical_year(), self.month)).contains(&self.day)
            && self.hour <= 24
            && self.minute <= 59
            && self.second <= 60
            && time_ok
    }

    fn to_input(&self) -> DateTimeInput {
        let days = days_from_civil(self.astronomical_year(), self.month, self.day);
        let seconds = (self.hour * 60 + self.minute) * 60 + self.second;
        DateTimeInput::Finite {
            days: days - PG_EPOCH_UNIX_DAYS,
            micros: seconds * 1_000_000 + self.micros,
        }
    }
}

/// A cursor over the bytes of a date/time text.
struct Scanner<'a> {
    rest: &'a [u8],
}

impl<'a> Scanner<'a> {
    fn digits(&mut self) -> &'a [u8] {
        let n = self.rest.iter().take_while(|b| b.is_ascii_digit()).count();
        let (digits, rest) = self.rest.split_at(n);
        self.rest = rest;
        digits
    }

    fn number(&mut self, max_digits: usize) -> Option<i64> {
        let digits = self.digits();
        (1..=max_digits).contains(&digits.len()).then(|| {
            digits
                .iter()
                .fold(0, |acc, d| acc * 10 + i64::from(d - b'0'))
        })
    }

    fn eat(&mut self, byte: u8) -> bool {
        let matched = self.rest.first() == Some(&byte);
        if matched {
            self.rest = &self.rest[1..];
        }
        matched
    }

    fn skip_spaces(&mut self) -> bool {
        let n = self
            .rest
            .iter()
            .take_while(|b| b.is_ascii_whitespace())
            .count();
        self.rest = &self.rest[n..];
        n > 0
    }
}

fn scan_datetime(text: &str) -> Result<DateTimeInput, DateTimeFault> {
    match pg_trim(text).to_ascii_lowercase().as_str() {
        "infinity" | "+infinity" => return Ok(DateTimeInput::Infinity),
        "-infinity" => return Ok(DateTimeInput::NegativeInfinity),
        "epoch" => {
            return Ok(DateTimeInput::Finite {
                days: -PG_EPOCH_UNIX_DAYS,
                micros: 0,
            })
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

fn scan_fields(text: &str) -> Option<DateTimeFields> {
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

fn scan_time(scan: &mut Scanner<'_>, fields: &mut DateTimeFields) -> Option<()> {
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
fn fraction_micros(digits: &[u8]) -> Option<i64> {
    let digit = |i: usize| digits.get(i).map_or(0, |d| i64::from(d - b'0'));
    let micros = (0..6).fold(0, |acc, i| acc * 10 + digit(i));
    (!digits.is_empty()).then_some(micros + i64::from(digit(6) >= 5))
}

fn parse_date(text: &str) -> Result<i32, TypeError> {
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

fn parse_timestamp(text: &str) -> Result<i64, TypeError> {
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

fn timestamp_to_date(micros: i64) -> i32 {
    match micros {
        i64::MAX => i32::MAX,
        i64::MIN => i32::MIN,
        // |i64 µs| / µs-per-day < 1.1e8, so every timestamp's day number fits an i32.
        _ => micros.div_euclid(USECS_PER_DAY) as i32,
    }
}

fn date_to_timestamp(days: i32) -> Result<i64, TypeError> {
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

// ---------------------------------------------------------------------------------------------
// Casts
// ---------------------------------------------------------------------------------------------

impl Value {
    fn convert(&self, ty: &DataType, assignment: bool) -> Result<Value, TypeError> {
        match (self, ty) {
            (Value::Null, _) => Ok(Value::Null),
            (_, DataType::Char(_) | DataType::Varchar(_) | DataType::Text) => {
                fit_string(self.cast_text(), ty, assignment).map(Value::Text)
            }
            (Value::Text(s), _) => Value::parse(ty, s),
            (_, DataType::Boolean) => self.to_boolean(),
            (_, DataType::SmallInt | DataType::Integer | DataType::BigInt) => self.to_int(ty),
            (_, DataType::Real) => self.to_real(),
            (_, DataType::Double) => self.to_double(),
            (_, DataType::Numeric { precision, scale }) => {
                apply_numeric_typmod(self.to_numeric(ty)?, *precision, *scale).map(Value::Numeric)
            }
            (Value::Bytea(_), DataType::Bytea) => Ok(self.clone()),
            (_, DataType::Date) => self.to_date(),
            (_, DataType::Timestamp) => self.to_timestamp(),
            (_, DataType::Bytea) => Err(self.cannot_cast(ty)),
        }
    }

    /// PostgreSQL names the types without their modifiers here.
    fn cannot_cast(&self, to: &DataType) -> TypeError {
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
    fn cast_text(&self) -> String {
        match self {
            Value::Text(s) => s.clone(),
            Value::Boolean(b) => b.to_string(),
            other => other.to_string(),
        }
    }

    fn to_boolean(&self) -> Result<Value, TypeError> {
        match *self {
            Value::Boolean(b) => Ok(Value::Boolean(b)),
            Value::Integer(i) => Ok(Value::Boolean(i != 0)),
            _ => Err(self.cannot_cast(&DataType::Boolean)),
        }
    }

    fn to_int(&self, ty: &DataType) -> Result<Value, TypeError> {
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

    fn to_real(&self) -> Result<Value, TypeError> {
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

    fn to_double(&self) -> Result<Value, TypeError> {
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
    fn to_numeric(&self, ty: &DataType) -> Result<Decimal, TypeError> {
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

    fn to_date(&self) -> Result<Value, TypeError> {
        match *self {
            Value::Date(d) => Ok(Value::Date(d)),
            Value::Timestamp(t) => Ok(Value::Date(timestamp_to_date(t))),
            _ => Err(self.cannot_cast(&DataType::Date)),
        }
    }

    fn to_timestamp(&self) -> Result<Value, TypeError> {
        match *self {
            Value::Timestamp(t) => Ok(Value::Timestamp(t)),
            Value::Date(d) => date_to_timestamp(d).map(Value::Timestamp),
            _ => Err(self.cannot_cast(&DataType::Timestamp)),
        }
    }
}

fn int_out_of_range(ty: &DataType) -> TypeError {
    TypeError::NumericValueOutOfRange(format!("{ty} out of range"))
}

fn int_value(ty: &DataType, wide: i64) -> Result<Value, TypeError> {
    let value = match ty {
        DataType::SmallInt => i16::try_from(wide).ok().map(Value::SmallInt),
        DataType::Integer => i32::try_from(wide).ok().map(Value::Integer),
        _ => Some(Value::BigInt(wide)),
    };
    value.ok_or_else(|| int_out_of_range(ty))
}

/// Rounds half to even (C's `rint`), as PostgreSQL's float-to-integer casts do.
fn float_to_i64(x: f64, ty: &DataType) -> Result<i64, TypeError> {
    let rounded = x.round_ties_even();
    let bound = 2f64.powi(63);
    if (-bound..bound).contains(&rounded) {
        Ok(rounded as i64)
    } else {
        Err(int_out_of_range(ty))
    }
}

fn double_to_real(x: f64) -> Result<f32, TypeError> {
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

fn float_to_numeric(x: f64, significant_digits: usize) -> Result<Decimal, TypeError> {
    if x.is_nan() {
        return Err(unsupported("cannot convert NaN to numeric"));
    }
    if x.is_infinite() {
        return Err(unsupported("cannot convert infinity to numeric"));
    }
    let text = format!("{x:.prec$e}", prec = significant_digits - 1);
    Ok(parse_numeric(&text)?.normalize())
}

// ---------------------------------------------------------------------------------------------
// Comparison
// ---------------------------------------------------------------------------------------------

/// A number widened for comparison across types.
enum Number {
    Int(i64),
    Decimal(Decimal),
    Float(f64),
}

impl Number {
    fn of(value: &Value) -> Option<Number> {
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
    fn to_f64(&self) -> f64 {
        match self {
            Number::Int(i) => *i as f64,
            Number::Decimal(d) => d.to_string().parse().unwrap_or(f64::NAN),
            Number::Float(x) => *x,
        }
    }
}

fn compare_numbers(a: &Value, b: &Value) -> Option<Ordering> {
    Some(match (Number::of(a)?, Number::of(b)?) {
        (Number::Int(x), Number::Int(y)) => x.cmp(&y),
        (Number::Int(x), Number::Decimal(y)) => Decimal::from(x).cmp(&y),
        (Number::Decimal(x), Number::Int(y)) => x.cmp(&Decimal::from(y)),
        (Number::Decimal(x), Number::Decimal(y)) => x.cmp(&y),
        (x, y) => compare_floats(x.to_f64(), y.to_f64()),
    })
}

/// PostgreSQL's float order: NaN equals NaN and is above everything else; -0 equals 0.
fn compare_floats(a: f64, b: f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        (false, false) => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
    }
}

fn compare_datetimes(a: &Value, b: &Value) -> Option<Ordering> {
    Some(instant(a)?.cmp(&instant(b)?))
}

/// A date or timestamp as microseconds on one axis, infinities at the ends.
fn instant(value: &Value) -> Option<i128> {
    match *value {
        Value::Date(i32::MAX) | Value::Timestamp(i64::MAX) => Some(i128::MAX),
        Value::Date(i32::MIN) | Value::Timestamp(i64::MIN) => Some(i128::MIN),
        Value::Date(d) => Some(i128::from(d) * i128::from(USECS_PER_DAY)),
        Value::Timestamp(t) => Some(i128::from(t)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn text(v: Value) -> String {
        v.to_string()
    }

    fn err(result: Result<Value, TypeError>) -> (String, &'static str) {
        let e = result.expect_err("expected an error");
        (e.to_string(), e.sqlstate())
    }

    fn dec(s: &str) -> Decimal {
        Decimal::from_str(s).expect("decimal literal")
    }

    #[test]
    fn double_output_matches_postgres() {
        let cases = [
            (0.1, "0.1"),
            (1.0 / 3.0, "0.3333333333333333"),
            (1e15, "1e+15"),
            (1e14, "100000000000000"),
            (123456789012345.0, "123456789012345"),
            (1e-5, "1e-05"),
            (0.0001, "0.0001"),
            (1.5e300, "1.5e+300"),
            (-2.5e-300, "-2.5e-300"),
            (0.0, "0"),
            (-0.0, "-0"),
            (f64::NAN, "NaN"),
            (f64::INFINITY, "Infinity"),
            (f64::NEG_INFINITY, "-Infinity"),
        ];
        for (v, want) in cases {
            assert_eq!(text(Value::Double(v)), want, "{v:e}");
        }
    }

    #[test]
    fn real_output_matches_postgres() {
        let cases = [
            (0.1f32, "0.1"),
            (100000.0, "100000"),
            (1e6, "1e+06"),
            (1234567.0, "1.234567e+06"),
            (3.4028235e38, "3.4028235e+38"),
        ];
        for (v, want) in cases {
            assert_eq!(text(Value::Real(v)), want);
        }
    }

    #[test]
    fn other_outputs_match_postgres() {
        assert_eq!(text(Value::Boolean(true)), "t");
        assert_eq!(text(Value::Bytea(vec![0, 0xab, 0xff])), "\\x00abff");
        assert_eq!(text(Value::Numeric(dec("1.50"))), "1.50");
        assert_eq!(text(Value::Date(0)), "2000-01-01");
        assert_eq!(text(Value::Date(-1)), "1999-12-31");
        assert_eq!(text(Value::Date(i32::MAX)), "infinity");
        assert_eq!(text(Value::Timestamp(1_500_000)), "2000-01-01 00:00:01.5");
        assert_eq!(text(Value::Timestamp(-1)), "1999-12-31 23:59:59.999999");
        assert_eq!(Value::Null.to_pg_text(), None);
    }

    #[test]
    fn dates_round_trip_through_text() {
        for s in [
            "2024-02-29",
            "0001-01-01",
            "0001-12-31 BC",
            "4714-11-24 BC",
            "5874897-12-31",
        ] {
            let v = Value::parse(&DataType::Date, s).expect(s);
            assert_eq!(text(v), s);
        }
        let ts = "2020-01-02 03:04:05.123456";
        assert_eq!(text(Value::parse(&DataType::Timestamp, ts).expect(ts)), ts);
        let t = Value::parse(&DataType::Timestamp, " 2020-01-02T03:04:05 ").expect("iso");
        assert_eq!(text(t), "2020-01-02 03:04:05");
        let d = Value::parse(&DataType::Date, "2020-01-02 10:00").expect("date with time");
        assert_eq!(text(d), "2020-01-02");
        assert_eq!(
            Value::parse(&DataType::Date, "epoch"),
            Ok(Value::Date(-10_957))
        );
    }

    #[test]
    fn date_errors_match_postgres() {
        let bad = err(Value::parse(&DataType::Date, "2001-02-29"));
        assert_eq!(
            bad,
            (
                "date/time field value out of range: \"2001-02-29\"".into(),
                "22008"
            )
        );
        let bad = err(Value::parse(&DataType::Date, "yesterday-ish"));
        assert_eq!(
            bad,
            (
                "invalid input syntax for type date: \"yesterday-ish\"".into(),
                "22007"
            )
        );
        let bad = err(Value::parse(&DataType::Timestamp, "300000-01-01"));
        assert_eq!(
            bad,
            ("timestamp out of range: \"300000-01-01\"".into(), "22008")
        );
    }

    #[test]
    fn booleans_accept_postgres_spellings() {
        for s in ["t", "TRUE", " yes ", "on", "1", "tr", "y"] {
            assert_eq!(
                Value::parse(&DataType::Boolean, s),
                Ok(Value::Boolean(true)),
                "{s}"
            );
        }
        for s in ["f", "False", "no", "OFF", "0", "of"] {
            assert_eq!(
                Value::parse(&DataType::Boolean, s),
                Ok(Value::Boolean(false)),
                "{s}"
            );
        }
        let bad = err(Value::parse(&DataType::Boolean, "o"));
        assert_eq!(
            bad,
            (
                "invalid input syntax for type boolean: \"o\"".into(),
                "22P02"
            )
        );
    }

    #[test]
    fn integer_input_matches_postgres() {
        assert_eq!(
            Value::parse(&DataType::Integer, "  -42 "),
            Ok(Value::Integer(-42))
        );
        assert_eq!(Value::parse(&DataType::BigInt, "+7"), Ok(Value::BigInt(7)));
        let bad = err(Value::parse(&DataType::Integer, "abc"));
        assert_eq!(
            bad,
            (
                "invalid input syntax for type integer: \"abc\"".into(),
                "22P02"
            )
        );
        let bad = err(Value::parse(&DataType::SmallInt, "99999"));
        assert_eq!(
            bad,
            (
                "value \"99999\" is out of range for type smallint".into(),
                "22003"
            )
        );
        let bad = err(Value::parse(&DataType::BigInt, "99999999999999999999"));
        assert_eq!(bad.1, "22003");
    }

    #[test]
    fn float_and_numeric_input_match_postgres() {
        let inf = Value::parse(&DataType::Double, " -Infinity ");
        assert_eq!(inf, Ok(Value::Double(f64::NEG_INFINITY)));
        assert!(matches!(Value::parse(&DataType::Real, "NaN"), Ok(Value::Real(x)) if x.is_nan()));
        let bad = err(Value::parse(&DataType::Double, "1e400"));
        assert_eq!(
            bad,
            (
                "\"1e400\" is out of range for type double precision".into(),
                "22003"
            )
        );
        assert_eq!(err(Value::parse(&DataType::Real, "1e-50")).1, "22003");
        let unconstrained = DataType::Numeric {
            precision: None,
            scale: None,
        };
        let n = Value::parse(&unconstrained, "1.50e1").expect("numeric");
        assert_eq!(text(n), "15.0");
        assert_eq!(
            text(Value::parse(&unconstrained, "-0.00").expect("zero")),
            "0.00"
        );
        let bad = err(Value::parse(&unconstrained, "1.2.3"));
        assert_eq!(
            bad,
            (
                "invalid input syntax for type numeric: \"1.2.3\"".into(),
                "22P02"
            )
        );
        assert_eq!(err(Value::parse(&unconstrained, "NaN")).1, "0A000");
    }

    #[test]
    fn bytea_input_matches_postgres() {
        assert_eq!(
            Value::parse(&DataType::Bytea, "\\x0aFF"),
            Ok(Value::Bytea(vec![10, 255]))
        );
        assert_eq!(
            Value::parse(&DataType::Bytea, "a\\\\b\\001"),
            Ok(Value::Bytea(b"a\\b\x01".to_vec()))
        );
        let bad = err(Value::parse(&DataType::Bytea, "\\xabc"));
        assert_eq!(
            bad,
            (
                "invalid hexadecimal data: odd number of digits".into(),
                "22023"
            )
        );
        let bad = err(Value::parse(&DataType::Bytea, "\\xzz"));
        assert_eq!(bad, ("invalid hexadecimal digit: \"z\"".into(), "22023"));
        assert_eq!(err(Value::parse(&DataType::Bytea, "\\9")).1, "22P02");
    }

    #[test]
    fn integer_casts_check_range() {
        let bad = err(Value::BigInt(100_000).cast_to(&DataType::SmallInt));
        assert_eq!(bad, ("smallint out of range".into(), "22003"));
        let bad = err(Value::Double(3e9).cast_to(&DataType::Integer));
        assert_eq!(bad, ("integer out of range".into(), "22003"));
        let bad = err(Value::Numeric(dec("1e19")).cast_to(&DataType::BigInt));
        assert_eq!(bad, ("bigint out of range".into(), "22003"));
        let bad = err(Value::Text("abc".into()).cast_to(&DataType::Integer));
        assert_eq!(
            bad,
            (
                "invalid input syntax for type integer: \"abc\"".into(),
                "22P02"
            )
        );
    }

    #[test]
    fn casts_round_like_postgres() {
        let int = DataType::Integer;
        assert_eq!(Value::Double(2.5).cast_to(&int), Ok(Value::Integer(2)));
        assert_eq!(Value::Double(3.5).cast_to(&int), Ok(Value::Integer(4)));
        assert_eq!(
            Value::Numeric(dec("2.5")).cast_to(&int),
            Ok(Value::Integer(3))
        );
        assert_eq!(
            Value::Numeric(dec("-2.5")).cast_to(&int),
            Ok(Value::Integer(-3))
        );
        let numeric = DataType::Numeric {
            precision: None,
            scale: None,
        };
        let third = Value::Double(1.0 / 3.0).cast_to(&numeric).expect("numeric");
        assert_eq!(text(third), "0.333333333333333");
        assert_eq!(
            text(Value::Real(0.1).cast_to(&numeric).expect("numeric")),
            "0.1"
        );
        assert_eq!(err(Value::Double(f64::NAN).cast_to(&numeric)).1, "0A000");
        assert_eq!(
            Value::Boolean(true).cast_to(&DataType::Text),
            Ok(Value::Text("true".into()))
        );
    }

    #[test]
    fn numeric_typmod_rounds_and_checks_precision() {
        let ty = DataType::Numeric {
            precision: Some(5),
            scale: Some(2),
        };
        assert_eq!(
            text(Value::Numeric(dec("123.456")).cast_to(&ty).expect("fits")),
            "123.46"
        );
        assert_eq!(
            text(Value::Integer(7).assign_to(&ty).expect("fits")),
            "7.00"
        );
        assert_eq!(
            text(Value::Numeric(dec("-0.001")).cast_to(&ty).expect("fits")),
            "0.00"
        );
        let e = Value::Numeric(dec("999.995"))
            .cast_to(&ty)
            .expect_err("overflow");
        assert_eq!(
            (e.to_string(), e.sqlstate()),
            ("numeric field overflow".into(), "22003")
        );
        assert_eq!(
            e.detail().as_deref(),
            Some(
                "A field with precision 5, scale 2 must round to an absolute value less than 10^3."
            )
        );
    }

    #[test]
    fn string_lengths_follow_cast_context() {
        let varchar5 = DataType::Varchar(Some(5));
        let long = Value::Text("abcdefg".into());
        assert_eq!(long.cast_to(&varchar5), Ok(Value::Text("abcde".into())));
        let bad = err(long.assign_to(&varchar5));
        assert_eq!(
            bad,
            (
                "value too long for type character varying(5)".into(),
                "22001"
            )
        );
        let spaces = Value::Text("abc    ".into());
        assert_eq!(spaces.assign_to(&varchar5), Ok(Value::Text("abc  ".into())));
        assert_eq!(
            Value::Text("ab".into()).assign_to(&DataType::Char(4)),
            Ok(Value::Text("ab  ".into()))
        );
        let bad = err(Value::parse(&DataType::Char(2), "héllo"));
        assert_eq!(
            bad,
            ("value too long for type character(2)".into(), "22001")
        );
        assert_eq!(
            Value::Text("héllo".into()).cast_to(&DataType::Char(2)),
            Ok(Value::Text("hé".into()))
        );
    }

    #[test]
    fn impossible_casts_are_refused() {
        let bad = err(Value::Boolean(true).cast_to(&DataType::Date));
        assert_eq!(bad, ("cannot cast type boolean to date".into(), "42846"));
        let bad = err(Value::Boolean(true).cast_to(&DataType::BigInt));
        assert_eq!(bad, ("cannot cast type boolean to bigint".into(), "42846"));
        assert_eq!(Value::Null.cast_to(&DataType::Date), Ok(Value::Null));
    }

    #[test]
    fn date_and_timestamp_casts() {
        let ts = Value::parse(&DataType::Timestamp, "1999-12-31 23:00").expect("ts");
        assert_eq!(ts.cast_to(&DataType::Date), Ok(Value::Date(-1)));
        assert_eq!(
            Value::Date(1).cast_to(&DataType::Timestamp),
            Ok(Value::Timestamp(USECS_PER_DAY))
        );
        let far = Value::parse(&DataType::Date, "5000000-01-01").expect("date");
        assert_eq!(err(far.cast_to(&DataType::Timestamp)).1, "22008");
        assert_eq!(
            text(ts.cast_to(&DataType::Text).expect("text")),
            "1999-12-31 23:00:00"
        );
    }

    #[test]
    fn comparison_follows_sql() {
        use Ordering::*;
        let num = |s| Value::Numeric(dec(s));
        assert_eq!(Value::Integer(1).compare(&Value::Double(1.0)), Some(Equal));
        assert_eq!(Value::BigInt(2).compare(&num("1.5")), Some(Greater));
        assert_eq!(Value::SmallInt(-1).compare(&Value::BigInt(0)), Some(Less));
        assert_eq!(
            Value::Double(f64::NAN).compare(&Value::Double(f64::INFINITY)),
            Some(Greater)
        );
        assert_eq!(
            Value::Double(-0.0).compare(&Value::Double(0.0)),
            Some(Equal)
        );
        assert_eq!(
            Value::Date(1).compare(&Value::Timestamp(USECS_PER_DAY)),
            Some(Equal)
        );
        assert_eq!(
            Value::Text("a".into()).compare(&Value::Text("B".into())),
            Some(Greater)
        );
        assert_eq!(Value::Null.compare(&Value::Null), None);
        assert_eq!(Value::Text("1".into()).compare(&Value::Integer(1)), None);
    }

    /// Every type with a value in its valid range.
    fn typed_value() -> impl Strategy<Value = (DataType, Value)> {
        let numeric = DataType::Numeric {
            precision: None,
            scale: None,
        };
        let mantissa = -(1i128 << 96) + 1..1i128 << 96;
        prop_oneof![
            any::<bool>().prop_map(|b| (DataType::Boolean, Value::Boolean(b))),
            any::<i16>().prop_map(|i| (DataType::SmallInt, Value::SmallInt(i))),
            any::<i32>().prop_map(|i| (DataType::Integer, Value::Integer(i))),
            any::<i64>().prop_map(|i| (DataType::BigInt, Value::BigInt(i))),
            any::<f32>().prop_map(|x| (DataType::Real, Value::Real(x))),
            any::<f64>().prop_map(|x| (DataType::Double, Value::Double(x))),
            (mantissa, 0u32..=28).prop_map(move |(m, s)| {
                (numeric, Value::Numeric(Decimal::from_i128_with_scale(m, s)))
            }),
            any::<String>().prop_map(|s| (DataType::Text, Value::Text(s))),
            any::<Vec<u8>>().prop_map(|b| (DataType::Bytea, Value::Bytea(b))),
            DATE_RANGE.prop_map(|d| (DataType::Date, Value::Date(d as i32))),
            (TIMESTAMP_RANGE.start as i64..TIMESTAMP_RANGE.end as i64)
                .prop_map(|t| (DataType::Timestamp, Value::Timestamp(t))),
        ]
    }

    proptest! {
        #[test]
        fn text_output_reads_back((ty, value) in typed_value()) {
            let text = value.to_string();
            let parsed = Value::parse(&ty, &text);
            let reads_back = |p: &Value| *p == value || p.to_string() == "NaN";
            prop_assert!(parsed.as_ref().is_ok_and(reads_back), "{text} -> {parsed:?}");
        }
    }
}
