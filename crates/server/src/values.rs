//! Values on the wire: the RowDescription of a result, DataRow encoding in text or binary per
//! column, and the decoding of Bind parameters into engine values.
//!
//! Type oids and modifiers come from the SQL layer's `pg_type` (`steady_sql::system`), so a
//! column described here matches what `pg_attribute` says about it. A column the SQL layer could
//! not type (`ty: None`, an untyped NULL or literal) is described and sent as `text`, and a
//! parameter it could not type is read as text, as PostgreSQL does for `unknown`.

use std::fmt::Write as _;
use std::sync::Arc;

use bytes::{BufMut, BytesMut};
use pgwire::api::portal::Format;
use pgwire::api::results::{FieldFormat, FieldInfo};
use pgwire::api::Type;
use pgwire::messages::data::{DataRow, RowDescription};
use steady_sql::execution::plan::Column;
use steady_sql::system::{type_modifier, type_oid};
use steady_sql::values::{ArrayElement, DataType, Value};
use steady_sql::SqlError;

use crate::binary;

/// The oid of `text`, used for columns and parameters of unknown type.
const TEXT_OID: u32 = 25;

/// The wire type of a column or parameter type.
pub fn wire_type(ty: Option<&DataType>) -> Type {
    if let Some(DataType::Enum(oid)) = ty {
        return enum_wire_type(*oid);
    }
    let oid = ty.map_or(TEXT_OID, type_oid);
    Type::from_oid(oid).unwrap_or(Type::TEXT)
}

/// An enum type as the wire names it: its own oid (a client that does not know it reads the
/// label as text).
fn enum_wire_type(oid: u32) -> Type {
    let enum_type = steady_sql::values::enums::enum_type(oid);
    let (name, labels) = enum_type.map_or_else(
        || (format!("enum {oid}"), Vec::new()),
        |t| (t.name.clone(), t.labels.clone()),
    );
    Type::new(
        name,
        oid,
        postgres_types::Kind::Enum(labels),
        "public".to_owned(),
    )
}

/// The engine type a Parse message declared for a parameter (`None`: unknown or not a type the
/// engine has, left to inference).
pub fn declared_type(ty: Option<&Type>) -> Option<DataType> {
    let ty = ty?;
    Some(match *ty {
        Type::BOOL => DataType::Boolean,
        Type::INT2 => DataType::SmallInt,
        Type::INT4 => DataType::Integer,
        Type::INT8 => DataType::BigInt,
        Type::FLOAT4 => DataType::Real,
        Type::FLOAT8 => DataType::Double,
        Type::NUMERIC => DataType::Numeric {
            precision: None,
            scale: None,
        },
        Type::BPCHAR | Type::VARCHAR => DataType::Varchar(None),
        Type::TEXT => DataType::Text,
        Type::BYTEA => DataType::Bytea,
        Type::DATE => DataType::Date,
        Type::TIMESTAMP => DataType::Timestamp,
        Type::TIMESTAMPTZ => DataType::TimestampTz,
        Type::TIME => DataType::Time,
        Type::UUID => DataType::Uuid,
        Type::INTERVAL => DataType::Interval,
        Type::JSON => DataType::Json,
        Type::JSONB => DataType::Jsonb,
        Type::TEXT_ARRAY | Type::VARCHAR_ARRAY => DataType::TextArray,
        Type::BOOL_ARRAY => DataType::Array(ArrayElement::Boolean),
        Type::INT2_ARRAY => DataType::Array(ArrayElement::SmallInt),
        Type::INT4_ARRAY => DataType::Array(ArrayElement::Integer),
        Type::INT8_ARRAY => DataType::Array(ArrayElement::BigInt),
        Type::FLOAT4_ARRAY => DataType::Array(ArrayElement::Real),
        Type::FLOAT8_ARRAY => DataType::Array(ArrayElement::Double),
        Type::NUMERIC_ARRAY => DataType::Array(ArrayElement::Numeric),
        Type::DATE_ARRAY => DataType::Array(ArrayElement::Date),
        Type::TIMESTAMP_ARRAY => DataType::Array(ArrayElement::Timestamp),
        Type::TIMESTAMPTZ_ARRAY => DataType::Array(ArrayElement::TimestampTz),
        Type::TIME_ARRAY => DataType::Array(ArrayElement::Time),
        Type::UUID_ARRAY => DataType::Array(ArrayElement::Uuid),
        Type::INTERVAL_ARRAY => DataType::Array(ArrayElement::Interval),
        Type::JSON_ARRAY => DataType::Array(ArrayElement::Json),
        Type::JSONB_ARRAY => DataType::Array(ArrayElement::Jsonb),
        _ => return None,
    })
}

/// The format of result column `index` under a Bind message's format codes.
pub fn column_format(format: &Format, index: usize) -> FieldFormat {
    match format {
        Format::UnifiedText => FieldFormat::Text,
        Format::UnifiedBinary => FieldFormat::Binary,
        Format::Individual(codes) => codes
            .get(index)
            .map_or(FieldFormat::Text, |code| FieldFormat::from(*code)),
    }
}

/// The description of result columns, each in the format `format` gives it.
pub fn fields(columns: &[Column], format: &Format) -> Vec<FieldInfo> {
    columns
        .iter()
        .enumerate()
        .map(|(i, column)| field(column, column_format(format, i)))
        .collect()
}

fn field(column: &Column, format: FieldFormat) -> FieldInfo {
    let ty = column.ty.as_ref();
    FieldInfo::new(column.name.clone(), None, None, wire_type(ty), format)
        .with_type_size(type_size(ty))
        .with_type_modifier(ty.map_or(-1, type_modifier))
}

/// `pg_type.typlen`: the fixed width of a type, -1 for variable-length ones.
fn type_size(ty: Option<&DataType>) -> i16 {
    match ty {
        Some(DataType::Boolean) => 1,
        Some(DataType::SmallInt) => 2,
        Some(DataType::Integer | DataType::Real | DataType::Date) => 4,
        Some(
            DataType::BigInt
            | DataType::Double
            | DataType::Timestamp
            | DataType::TimestampTz
            | DataType::Time,
        ) => 8,
        Some(DataType::Uuid | DataType::Interval) => 16,
        _ => -1,
    }
}

/// A RowDescription message for `fields`.
pub fn row_description(fields: &[FieldInfo]) -> RowDescription {
    RowDescription::new(fields.iter().map(Into::into).collect())
}

/// The encoder of a result's rows: column types and per-column formats.
#[derive(Clone)]
pub struct RowEncoder {
    columns: Arc<Vec<(Option<DataType>, FieldFormat)>>,
}

impl RowEncoder {
    pub fn new(columns: &[Column], format: &Format) -> Self {
        let columns = columns
            .iter()
            .enumerate()
            .map(|(i, c)| (c.ty, column_format(format, i)))
            .collect();
        RowEncoder {
            columns: Arc::new(columns),
        }
    }

    /// One DataRow: each value as a length-prefixed text or binary field, NULL as length -1.
    ///
    /// The buffer is sized for the row up front and text is formatted straight into it: one
    /// allocation per row (a `to_string` per value and the buffer's regrowth for a long text were
    /// three, visible in profiles of sysbench's range queries).
    pub fn encode(&self, row: &[Value]) -> Result<DataRow, SqlError> {
        let mut data = BytesMut::with_capacity(row.iter().map(encoded_len_hint).sum());
        for (value, (ty, format)) in row.iter().zip(self.columns.iter()) {
            let start = data.len();
            data.put_i32(-1);
            if value.is_null() {
                continue;
            }
            match (format, ty) {
                (FieldFormat::Binary, Some(ty)) => binary::encode(value, ty, &mut data)?,
                _ => write_text(&mut data, value, ty.as_ref())?,
            }
            let length = (data.len() - start - 4) as i32;
            data[start..start + 4].copy_from_slice(&length.to_be_bytes());
        }
        Ok(DataRow::new(data, row.len() as i16))
    }
}

/// A value's text field: PostgreSQL's output of it as a value of `ty` (an array keeps its text,
/// which a `timestamptz[]` shows in the session's zone).
fn write_text(data: &mut BytesMut, value: &Value, ty: Option<&DataType>) -> Result<(), SqlError> {
    if let (Value::Text(text), Some(element)) = (value, ty.and_then(DataType::element_type)) {
        if let Some(shown) = steady_sql::values::array::array_output(text, &element) {
            data.extend_from_slice(shown.as_bytes());
            return Ok(());
        }
    }
    write!(data, "{value}")
        .map_err(|_| SqlError::new("XX000", format!("could not format a {ty:?} value")))
}

/// About how many bytes `value` takes as a field (its length word and its text or bytes).
fn encoded_len_hint(value: &Value) -> usize {
    4 + match value {
        Value::Text(text) | Value::Json(text) | Value::Jsonb(text) => text.len(),
        Value::Bytea(bytes) => 2 + 2 * bytes.len(),
        _ => 12,
    }
}

/// The values of a Bind message's parameters, read per their format codes as the types the
/// statement has for them.
pub fn decode_params(
    params: &[Option<bytes::Bytes>],
    format: &Format,
    types: &[Option<DataType>],
) -> Result<Vec<Value>, SqlError> {
    if params.len() != types.len() {
        return Err(SqlError::new(
            "08P01",
            format!(
                "bind message supplies {} parameters, but prepared statement requires {}",
                params.len(),
                types.len()
            ),
        ));
    }
    params
        .iter()
        .zip(types)
        .enumerate()
        .map(|(i, (param, ty))| {
            let Some(bytes) = param else {
                return Ok(Value::Null);
            };
            match column_format(format, i) {
                FieldFormat::Binary => binary::decode(bytes, ty.as_ref()),
                FieldFormat::Text => decode_text(bytes, ty.as_ref()),
            }
        })
        .collect()
}

fn decode_text(bytes: &[u8], ty: Option<&DataType>) -> Result<Value, SqlError> {
    let text = std::str::from_utf8(bytes)
        .map_err(|_| SqlError::new("22021", "invalid byte sequence for encoding \"UTF8\""))?;
    match ty {
        Some(ty) => Value::parse(ty, text).map_err(Into::into),
        None => Ok(Value::Text(text.to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields_of(row: &DataRow) -> Vec<Option<Vec<u8>>> {
        let mut data = &row.data[..];
        (0..row.field_count)
            .map(|_| {
                let len = i32::from_be_bytes(data[..4].try_into().unwrap());
                data = &data[4..];
                (len >= 0).then(|| {
                    let (field, rest) = data.split_at(len as usize);
                    data = rest;
                    field.to_vec()
                })
            })
            .collect()
    }

    #[test]
    fn rows_encode_per_column_format() {
        let columns = vec![
            Column::new("a", Some(DataType::Integer)),
            Column::new("b", Some(DataType::Text)),
            Column::new("c", None),
        ];
        let encoder = RowEncoder::new(&columns, &Format::Individual(vec![1, 0, 1]));
        let row = encoder
            .encode(&[Value::Integer(5), Value::Text("x".into()), Value::Null])
            .unwrap();
        assert_eq!(
            fields_of(&row),
            [Some(5i32.to_be_bytes().to_vec()), Some(b"x".to_vec()), None]
        );
    }

    #[test]
    fn binary_output_casts_to_the_column_type() {
        let columns = vec![Column::new("n", Some(DataType::BigInt))];
        let encoder = RowEncoder::new(&columns, &Format::UnifiedBinary);
        let row = encoder.encode(&[Value::Integer(3)]).unwrap();
        assert_eq!(fields_of(&row), [Some(3i64.to_be_bytes().to_vec())]);
    }

    #[test]
    fn parameters_decode_text_and_binary() {
        let params = vec![
            Some(bytes::Bytes::from_static(b"42")),
            Some(bytes::Bytes::copy_from_slice(&7i64.to_be_bytes())),
            None,
            Some(bytes::Bytes::from_static(b"free")),
        ];
        let types = [
            Some(DataType::Integer),
            Some(DataType::BigInt),
            Some(DataType::Text),
            None,
        ];
        let values = decode_params(&params, &Format::Individual(vec![0, 1, 0, 0]), &types).unwrap();
        assert_eq!(
            values,
            [
                Value::Integer(42),
                Value::BigInt(7),
                Value::Null,
                Value::Text("free".into())
            ]
        );
        assert_eq!(
            decode_params(&params[..1], &Format::UnifiedText, &types)
                .unwrap_err()
                .code,
            "08P01"
        );
    }
}
