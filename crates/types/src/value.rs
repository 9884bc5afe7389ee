//! SQL types and values: `DataType` (what a column can hold), `Value`, the `TypeError`s of
//! conversions, and SQL comparison (`Value::compare`).

use std::cmp::Ordering;
use std::fmt;

use rust_decimal::Decimal;

use crate::*;

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
    TimestampTz,
    /// `time without time zone`: a time of day.
    Time,
    Uuid,
    Interval,
    Json,
    Jsonb,
    /// `text[]`, one dimension, held as its text form (`{a,"b c",NULL}`) in a `Value::Text`.
    TextArray,
    /// An array of numbers, booleans, dates and times, uuids or json (`integer[]`, `date[]`, ...), one
    /// dimension, held as its canonical text form (`{1,2,NULL}`, each element as its type writes
    /// it) in a `Value::Text`.
    Array(ArrayElement),
    /// A type made by `CREATE TYPE ... AS ENUM`, by its oid (see [`crate::enums`]).
    Enum(u32),
}

/// The element types of [`DataType::Array`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum ArrayElement {
    Boolean,
    SmallInt,
    Integer,
    BigInt,
    Real,
    Double,
    Numeric,
    Date,
    Timestamp,
    /// Elements are kept in UTC and shown in the reader's TimeZone (see [`crate::array`]).
    TimestampTz,
    Time,
    Uuid,
    Interval,
    Json,
    Jsonb,
}

impl ArrayElement {
    /// The element type of arrays of `ty`, if it has one here (`text[]` is `DataType::TextArray`;
    /// a numeric with a precision has none: its modifier would not be kept).
    pub fn of(ty: &DataType) -> Option<ArrayElement> {
        Some(match ty {
            DataType::Boolean => ArrayElement::Boolean,
            DataType::SmallInt => ArrayElement::SmallInt,
            DataType::Integer => ArrayElement::Integer,
            DataType::BigInt => ArrayElement::BigInt,
            DataType::Real => ArrayElement::Real,
            DataType::Double => ArrayElement::Double,
            DataType::Numeric {
                precision: None, ..
            } => ArrayElement::Numeric,
            DataType::Date => ArrayElement::Date,
            DataType::Timestamp => ArrayElement::Timestamp,
            DataType::TimestampTz => ArrayElement::TimestampTz,
            DataType::Time => ArrayElement::Time,
            DataType::Uuid => ArrayElement::Uuid,
            DataType::Interval => ArrayElement::Interval,
            DataType::Json => ArrayElement::Json,
            DataType::Jsonb => ArrayElement::Jsonb,
            _ => return None,
        })
    }

    pub fn data_type(self) -> DataType {
        match self {
            ArrayElement::Boolean => DataType::Boolean,
            ArrayElement::SmallInt => DataType::SmallInt,
            ArrayElement::Integer => DataType::Integer,
            ArrayElement::BigInt => DataType::BigInt,
            ArrayElement::Real => DataType::Real,
            ArrayElement::Double => DataType::Double,
            ArrayElement::Numeric => DataType::Numeric {
                precision: None,
                scale: None,
            },
            ArrayElement::Date => DataType::Date,
            ArrayElement::Timestamp => DataType::Timestamp,
            ArrayElement::TimestampTz => DataType::TimestampTz,
            ArrayElement::Time => DataType::Time,
            ArrayElement::Uuid => DataType::Uuid,
            ArrayElement::Interval => DataType::Interval,
            ArrayElement::Json => DataType::Json,
            ArrayElement::Jsonb => DataType::Jsonb,
        }
    }
}

impl DataType {
    /// The type of an array's elements: `text` for `text[]`, the element type of `Array`.
    pub fn element_type(&self) -> Option<DataType> {
        match self {
            DataType::TextArray => Some(DataType::Text),
            DataType::Array(element) => Some(element.data_type()),
            _ => None,
        }
    }

    /// The array type whose elements are `self`, if there is one.
    pub fn array_type(&self) -> Option<DataType> {
        match self {
            DataType::Char(_) | DataType::Varchar(_) | DataType::Text => Some(DataType::TextArray),
            other => ArrayElement::of(other).map(DataType::Array),
        }
    }
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
            DataType::TimestampTz => f.write_str("timestamp with time zone"),
            DataType::Time => f.write_str("time without time zone"),
            DataType::Uuid => f.write_str("uuid"),
            DataType::Json => f.write_str("json"),
            DataType::Jsonb => f.write_str("jsonb"),
            DataType::TextArray => f.write_str("text[]"),
            DataType::Array(element) => write!(f, "{}[]", element.data_type()),
            DataType::Interval => f.write_str("interval"),
            DataType::Enum(oid) => f.write_str(&crate::enums::type_name(*oid)),
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

pub(crate) fn invalid_syntax(type_name: &str, input: &str) -> TypeError {
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
    /// Microseconds since 2000-01-01 00:00 UTC (see [`crate::zone`]).
    TimestampTz(i64),
    /// Microseconds since midnight, `0..=24:00:00`.
    Time(i64),
    Uuid([u8; 16]),
    Interval(crate::Interval),
    /// JSON text exactly as given (see [`crate::json`]).
    Json(String),
    /// Canonical jsonb text (see [`crate::json`]).
    Jsonb(String),
    /// A value of enum type `oid`: the position of its label (see [`crate::enums`]).
    Enum {
        oid: u32,
        position: u32,
    },
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
            (Value::Uuid(a), Value::Uuid(b)) => a == b,
            (Value::Json(a), Value::Json(b)) | (Value::Jsonb(a), Value::Jsonb(b)) => a == b,
            (Value::TimestampTz(a), Value::TimestampTz(b)) | (Value::Time(a), Value::Time(b)) => {
                a == b
            }
            (Value::Interval(a), Value::Interval(b)) => a == b,
            (
                Value::Enum { oid, position },
                Value::Enum {
                    oid: o,
                    position: p,
                },
            ) => (oid, position) == (o, p),
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
            Value::Uuid(_) => DataType::Uuid,
            Value::TimestampTz(_) => DataType::TimestampTz,
            Value::Time(_) => DataType::Time,
            Value::Interval(_) => DataType::Interval,
            Value::Json(_) => DataType::Json,
            Value::Jsonb(_) => DataType::Jsonb,
            Value::Enum { oid, .. } => DataType::Enum(*oid),
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
            DataType::TextArray => crate::array::canonical_text_array(text).map(Value::Text),
            DataType::Array(element) => {
                crate::array::canonical_array(text, &element.data_type()).map(Value::Text)
            }
            DataType::Bytea => parse_bytea(text).map(Value::Bytea),
            DataType::Date => parse_date(text).map(Value::Date),
            DataType::Timestamp => {
                crate::zone::parse_timestamp_ignoring_zone(text).map(Value::Timestamp)
            }
            DataType::Uuid => crate::uuid::parse_uuid(text).map(Value::Uuid),
            DataType::TimestampTz => crate::zone::parse_timestamptz(text).map(Value::TimestampTz),
            DataType::Time => parse_time(text).map(Value::Time),
            DataType::Interval => crate::interval::parse_interval(text).map(Value::Interval),
            DataType::Json => crate::json::json_text(text).map(Value::Json),
            DataType::Jsonb => crate::json::jsonb_text(text).map(Value::Jsonb),
            DataType::Enum(oid) => crate::enums::parse(*oid, text).map(|position| Value::Enum {
                oid: *oid,
                position,
            }),
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

    /// [`Value::assign_to`] for a value the caller gives up: a string is fitted in place and a
    /// value already of a type without modifiers is kept as it is, without a copy.
    pub fn assign_into(self, ty: &DataType) -> Result<Value, TypeError> {
        match (self, ty) {
            (Value::Text(s), DataType::Char(_) | DataType::Varchar(_) | DataType::Text) => {
                fit_string(s, ty, true).map(Value::Text)
            }
            (value, ty) if value.data_type().as_ref() == Some(ty) => Ok(value),
            (value, ty) => value.assign_to(ty),
        }
    }

    /// A date or timestamp as microseconds since 2000-01-01 on the one axis comparisons use
    /// (a date is its midnight; infinities at the ends); None for any other value.
    pub fn instant(&self) -> Option<i128> {
        crate::compare::instant(self)
    }

    /// SQL comparison: `None` when either side is NULL or the types are not comparable.
    pub fn compare(&self, other: &Value) -> Option<Ordering> {
        match (self, other) {
            (Value::Null, _) | (_, Value::Null) => None,
            (Value::Boolean(a), Value::Boolean(b)) => Some(a.cmp(b)),
            (Value::Text(a), Value::Text(b)) => Some(a.cmp(b)),
            (Value::Bytea(a), Value::Bytea(b)) => Some(a.cmp(b)),
            (Value::Uuid(a), Value::Uuid(b)) => Some(a.cmp(b)),
            (Value::Time(a), Value::Time(b)) => Some(a.cmp(b)),
            (Value::Interval(a), Value::Interval(b)) => Some(a.compare(b)),
            (Value::Jsonb(a), Value::Jsonb(b)) => Some(crate::json::compare_jsonb(a, b)),
            (
                Value::Enum { oid, position },
                Value::Enum {
                    oid: o,
                    position: p,
                },
            ) if oid == o => Some(position.cmp(p)),
            _ => compare_numbers(self, other).or_else(|| compare_datetimes(self, other)),
        }
    }
}
