//! SQL names and type names ([`ops`]: operations on values): identifier case folding, qualified names, the mapping of type names
//! (`int4`, `varchar(10)`, `serial`...) to engine [`DataType`]s, and numeric literals.

pub mod ops;

use sqlparser::ast::{self, CharacterLength, ExactNumberInfo};
use steady_types::{ArrayElement, DataType, Value};

use crate::error::{Result, SqlError};

/// An identifier as PostgreSQL folds it: unquoted names are lower-cased.
pub fn normalize_ident(ident: &ast::Ident) -> String {
    if ident.quote_style.is_some() {
        ident.value.clone()
    } else {
        ident.value.to_lowercase()
    }
}

/// `(schema, name)` of a possibly qualified name (a leading database name is ignored).
pub fn object_name(name: &ast::ObjectName) -> (Option<String>, String) {
    let parts: Vec<String> = name
        .0
        .iter()
        .map(|part| match part {
            ast::ObjectNamePart::Identifier(ident) => normalize_ident(ident),
            ast::ObjectNamePart::Function(f) => normalize_ident(&f.name),
        })
        .collect();
    match parts.as_slice() {
        [] => (None, String::new()),
        [name] => (None, name.clone()),
        [.., schema, name] => (Some(schema.clone()), name.clone()),
    }
}

/// A type's name in an error message: `unknown` for an untyped operand (NULL, a bare literal), as
/// PostgreSQL writes it.
pub fn type_name(ty: Option<DataType>) -> String {
    ty.map_or_else(|| "unknown".to_owned(), |t| t.to_string())
}

/// 3F000: a schema that does not exist.
pub fn missing_schema(schema: &str) -> SqlError {
    SqlError::new("3F000", format!("schema \"{schema}\" does not exist"))
}

/// Whether a column type is `serial`/`bigserial`/`smallserial` (an integer with a sequence).
pub fn serial_type(data_type: &ast::DataType) -> Option<DataType> {
    let ast::DataType::Custom(name, _) = data_type else {
        return None;
    };
    match object_name(name).1.as_str() {
        "serial" | "serial4" => Some(DataType::Integer),
        "bigserial" | "serial8" => Some(DataType::BigInt),
        "smallserial" | "serial2" => Some(DataType::SmallInt),
        _ => None,
    }
}

fn char_length(length: &Option<CharacterLength>) -> Result<Option<u32>> {
    match length {
        None => Ok(None),
        Some(CharacterLength::IntegerLength { length, .. }) => {
            let n = u32::try_from(*length)
                .ok()
                .filter(|n| (1..=10_485_760).contains(n))
                .ok_or_else(|| {
                    SqlError::new("22023", "length for type varchar must be at least 1")
                })?;
            Ok(Some(n))
        }
        Some(CharacterLength::Max) => Err(SqlError::unsupported("varchar(max)")),
    }
}

fn numeric_type(info: &ExactNumberInfo) -> Result<DataType> {
    let (precision, scale) = match info {
        ExactNumberInfo::None => (None, None),
        ExactNumberInfo::Precision(p) => (Some(*p), Some(0)),
        ExactNumberInfo::PrecisionAndScale(p, s) => (Some(*p), Some(*s)),
    };
    if let Some(p) = precision {
        if !(1..=28).contains(&p) {
            return Err(SqlError::new(
                "22023",
                format!("NUMERIC precision {p} must be between 1 and 28"),
            ));
        }
    }
    let scale = match scale {
        Some(s) if s < 0 || Some(s as u64) > precision => {
            return Err(SqlError::new(
                "22023",
                format!("NUMERIC scale {s} must be between 0 and precision"),
            ))
        }
        other => other.map(|s| s as u32),
    };
    Ok(DataType::Numeric {
        precision: precision.map(|p| p as u32),
        scale,
    })
}

/// A date/time type's precision (fractional digits of its seconds): values keep microseconds,
/// so 6 — the default — or more (PostgreSQL reduces those to 6) is what they hold; fewer digits,
/// which would round every value, are refused rather than ignored.
fn microsecond_precision(type_name: &str, precision: Option<u64>) -> Result<()> {
    match precision {
        Some(p) if p < 6 => Err(SqlError::unsupported(format!(
            "{type_name}({p}) (a precision below microseconds)"
        ))),
        _ => Ok(()),
    }
}

/// The engine type of a SQL type name, the enum types of `engine` included (a built-in name
/// wins, as `pg_catalog` comes first on PostgreSQL's search path).
pub fn convert_type_in(
    data_type: &ast::DataType,
    engine: &steady_engine::engine::Engine,
) -> Result<DataType> {
    if let ast::DataType::Custom(name, modifiers) = data_type {
        let name = object_name(name).1;
        if modifiers.is_empty() && builtin_type(&name).is_none() {
            if let Some(enum_type) = engine.enum_type(&name)? {
                return Ok(DataType::Enum(enum_type.oid));
            }
        }
    }
    convert_type(data_type)
}

/// The built-in type a name (without modifiers) spells, if any.
pub fn builtin_type(name: &str) -> Option<DataType> {
    let named = ast::DataType::Custom(ast::ObjectName::from(vec![ast::Ident::new(name)]), vec![]);
    convert_type(&named).ok().or_else(|| {
        let parsed = sqlparser::parser::Parser::new(&sqlparser::dialect::PostgreSqlDialect {})
            .try_with_sql(name)
            .ok()?
            .parse_data_type()
            .ok()?;
        convert_type(&parsed).ok()
    })
}

/// The engine type of a SQL type name.
pub fn convert_type(data_type: &ast::DataType) -> Result<DataType> {
    use ast::DataType as T;
    Ok(match data_type {
        T::Boolean | T::Bool => DataType::Boolean,
        T::SmallInt(_) | T::Int2(_) => DataType::SmallInt,
        T::Int(_) | T::Integer(_) | T::Int4(_) => DataType::Integer,
        T::BigInt(_) | T::Int8(_) => DataType::BigInt,
        T::Real | T::Float4 => DataType::Real,
        T::Double(_) | T::DoublePrecision | T::Float8 => DataType::Double,
        T::Float(ExactNumberInfo::Precision(p)) if *p <= 24 => DataType::Real,
        T::Float(_) => DataType::Double,
        T::Numeric(info) | T::Decimal(info) | T::Dec(info) => numeric_type(info)?,
        T::Char(len) | T::Character(len) => DataType::Char(char_length(len)?.unwrap_or(1)),
        T::Varchar(len) | T::CharacterVarying(len) | T::CharVarying(len) => {
            DataType::Varchar(char_length(len)?)
        }
        T::Text | T::String(None) => DataType::Text,
        T::Bytea => DataType::Bytea,
        T::Uuid => DataType::Uuid,
        T::JSON => DataType::Json,
        T::JSONB => DataType::Jsonb,
        T::Interval {
            fields: None,
            precision: None,
        } => DataType::Interval,
        T::Date => DataType::Date,
        T::Timestamp(p, ast::TimezoneInfo::None | ast::TimezoneInfo::WithoutTimeZone) => {
            microsecond_precision("timestamp", *p)?;
            DataType::Timestamp
        }
        T::Timestamp(p, ast::TimezoneInfo::WithTimeZone | ast::TimezoneInfo::Tz) => {
            microsecond_precision("timestamp with time zone", *p)?;
            DataType::TimestampTz
        }
        T::Time(p, ast::TimezoneInfo::None | ast::TimezoneInfo::WithoutTimeZone) => {
            microsecond_precision("time", *p)?;
            DataType::Time
        }
        T::Time(..) => return Err(SqlError::unsupported("time with time zone")),
        T::Custom(name, modifiers) => custom_type(&object_name(name).1, modifiers)?,
        T::Array(element) => array_type(element)?,
        other => {
            return Err(SqlError::new(
                "42704",
                format!(
                    "type \"{}\" does not exist",
                    other.to_string().to_lowercase()
                ),
            ))
        }
    })
}

/// The element type an array type names (`text[]`, `varchar ARRAY`).
pub fn array_element(array: &ast::ArrayElemTypeDef) -> Option<&ast::DataType> {
    match array {
        ast::ArrayElemTypeDef::None => None,
        ast::ArrayElemTypeDef::AngleBracket(element)
        | ast::ArrayElemTypeDef::SquareBracket(element, _)
        | ast::ArrayElemTypeDef::Parenthesis(element)
        | ast::ArrayElemTypeDef::Qualified(element, _) => Some(element),
    }
}

/// An array type: `text[]` (of any string type) is one; arrays of other types are refused as
/// a column or cast type (a value of one stays its text form elsewhere).
pub fn array_type(array: &ast::ArrayElemTypeDef) -> Result<DataType> {
    let element = array_element(array).map(convert_type).transpose()?;
    match element {
        Some(DataType::Text | DataType::Varchar(None)) => Ok(DataType::TextArray),
        Some(other) => ArrayElement::of(&other)
            .map(DataType::Array)
            .ok_or_else(|| SqlError::unsupported(format!("arrays of {other}"))),
        None => Err(SqlError::unsupported("arrays without an element type")),
    }
}

fn custom_type(name: &str, modifiers: &[String]) -> Result<DataType> {
    Ok(match name {
        "int2" => DataType::SmallInt,
        "int4" => DataType::Integer,
        "int8" => DataType::BigInt,
        "float4" => DataType::Real,
        "float8" => DataType::Double,
        "bool" => DataType::Boolean,
        "bpchar" => DataType::Char(parse_modifier(modifiers)?.unwrap_or(1)),
        "timestamptz" => DataType::TimestampTz,
        "name" | "regclass" | "regtype" | "regproc" | "regnamespace" => DataType::Text,
        "oid" | "xid" | "cid" => DataType::BigInt,
        "serial" | "serial4" => DataType::Integer,
        "bigserial" | "serial8" => DataType::BigInt,
        "smallserial" | "serial2" => DataType::SmallInt,
        other => {
            return Err(SqlError::new(
                "42704",
                format!("type \"{other}\" does not exist"),
            ))
        }
    })
}

fn parse_modifier(modifiers: &[String]) -> Result<Option<u32>> {
    modifiers
        .first()
        .map(|m| {
            m.parse::<u32>()
                .map_err(|_| SqlError::syntax(format!("invalid type modifier {m}")))
        })
        .transpose()
}

/// The column name PostgreSQL gives `CAST(literal AS type)`: the type's name.
pub fn type_output_name(data_type: &ast::DataType) -> String {
    convert_type(data_type).map_or_else(|_| "?column?".into(), |ty| internal_name(&ty))
}

/// The internal name of a type (an array's is its element's, as PostgreSQL names a cast column).
fn internal_name(ty: &DataType) -> String {
    match ty {
        DataType::Array(element) => internal_name(&element.data_type()),
        DataType::Boolean => "bool".into(),
        DataType::SmallInt => "int2".into(),
        DataType::Integer => "int4".into(),
        DataType::BigInt => "int8".into(),
        DataType::Real => "float4".into(),
        DataType::Double => "float8".into(),
        DataType::Numeric { .. } => "numeric".into(),
        DataType::Char(_) => "bpchar".into(),
        DataType::Varchar(_) => "varchar".into(),
        DataType::Text => "text".into(),
        DataType::Bytea => "bytea".into(),
        DataType::Date => "date".into(),
        DataType::Timestamp => "timestamp".into(),
        DataType::TimestampTz => "timestamptz".into(),
        DataType::Time => "time".into(),
        DataType::Uuid => "uuid".into(),
        DataType::Interval => "interval".into(),
        DataType::Json => "json".into(),
        DataType::Jsonb => "jsonb".into(),
        DataType::TextArray => "text".into(),
        DataType::Enum(oid) => steady_types::enums::type_name(*oid),
    }
}

/// A numeric literal: integer when it fits `integer`, then `bigint`, else numeric — or, when
/// its magnitude is past what SteadyDB's numeric holds (about 7.9e28; PostgreSQL's literal would
/// be a numeric of up to 1,000 digits), double precision if it is a finite one (`1e+300`, as
/// pg_dump --inserts writes a double column's value). A literal numeric would round (too many
/// digits, `1e-40`) stays refused with 22003.
pub fn parse_number(text: &str) -> Result<Value> {
    if let Ok(v) = text.parse::<i32>() {
        return Ok(Value::Integer(v));
    }
    if let Ok(v) = text.parse::<i64>() {
        return Ok(Value::BigInt(v));
    }
    let numeric = DataType::Numeric {
        precision: None,
        scale: None,
    };
    match Value::parse(&numeric, text) {
        Ok(value) => Ok(value),
        Err(err) => match text.parse::<f64>() {
            Ok(double)
                if double.is_finite() && double.abs() > 7.9e28 && err.sqlstate() == "22003" =>
            {
                Ok(Value::Double(double))
            }
            _ => Err(err.into()),
        },
    }
}

/// Whether `name` is lower-case letters, digits and `_`, not starting with a digit: it reads
/// back as itself unquoted (unless it is a keyword).
pub fn is_plain_identifier(name: &str) -> bool {
    name.chars()
        .next()
        .is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// An identifier as PostgreSQL prints it: quoted unless it is a plain identifier.
pub fn quote_ident(name: &str) -> String {
    if is_plain_identifier(name) {
        name.to_owned()
    } else {
        format!("\"{}\"", name.replace('"', "\"\""))
    }
}
