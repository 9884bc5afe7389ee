//! PostgreSQL's binary wire format for the engine's types, both ways: results a client asked for
//! in binary (sysbench, psycopg's binary cursors) and Bind parameters sent in binary.
//!
//! | type                  | bytes                                                          |
//! |-----------------------|----------------------------------------------------------------|
//! | boolean               | 1 byte, 0 or 1                                                 |
//! | smallint/int/bigint   | 2/4/8 bytes, big-endian two's complement                       |
//! | real/double precision | 4/8 bytes, big-endian IEEE 754                                 |
//! | numeric               | i16 ndigits, i16 weight, u16 sign, u16 dscale, ndigits × i16 base-10000 digits |
//! | char/varchar/text     | the UTF-8 bytes                                                |
//! | bytea                 | the bytes                                                      |
//! | date                  | i32 days since 2000-01-01 (the engine's own representation)    |
//! | timestamp             | i64 µs since 2000-01-01 00:00:00 (the engine's own representation) |
//! | json                  | the UTF-8 text                                                 |
//! | jsonb                 | version byte 1, then the UTF-8 text                            |
//! | text[], integer[]...  | i32 dimensions (0 or 1), i32 has-nulls, u32 element type oid, then for one dimension i32 length and i32 lower bound 1, each element i32 length (-1: NULL) and its binary form |
//!
//! Integers decode by their length, whatever the declared type, and are then cast to the
//! parameter's type, so a client sending an int8 for an integer parameter gets PostgreSQL's
//! range check (22003) rather than garbage.

use bytes::{BufMut, BytesMut};
use rust_decimal::Decimal;
use steady_sql::system::type_oid;
use steady_sql::values::array::{array_text, array_values};
use steady_sql::values::{DataType, Interval, Value};
use steady_sql::SqlError;

/// Numeric sign words.
const NUMERIC_POSITIVE: u16 = 0x0000;
const NUMERIC_NEGATIVE: u16 = 0x4000;
/// The version byte before jsonb's text in its binary form.
const JSONB_VERSION: u8 = 1;

/// Appends the binary form of `value` as a value of column type `ty` (a different value type is
/// cast first). NULL is the caller's business (it has no bytes).
pub fn encode(value: &Value, ty: &DataType, out: &mut BytesMut) -> Result<(), SqlError> {
    if encode_same(value, ty, out) {
        return Ok(());
    }
    let cast = value.cast_to(ty)?;
    if encode_same(&cast, ty, out) {
        return Ok(());
    }
    Err(SqlError::unsupported(format!("binary output of {ty}")))
}

/// Encodes `value` if its representation is the one `ty` uses; false otherwise.
fn encode_same(value: &Value, ty: &DataType, out: &mut BytesMut) -> bool {
    match (ty, value) {
        (DataType::Boolean, Value::Boolean(b)) => out.put_u8(u8::from(*b)),
        (DataType::SmallInt, Value::SmallInt(v)) => out.put_i16(*v),
        (DataType::Integer, Value::Integer(v)) | (DataType::Date, Value::Date(v)) => {
            out.put_i32(*v)
        }
        (DataType::BigInt, Value::BigInt(v))
        | (DataType::Timestamp, Value::Timestamp(v))
        | (DataType::TimestampTz, Value::TimestampTz(v))
        | (DataType::Time, Value::Time(v)) => out.put_i64(*v),
        (DataType::Real, Value::Real(v)) => out.put_f32(*v),
        (DataType::Double, Value::Double(v)) => out.put_f64(*v),
        (DataType::Numeric { .. }, Value::Numeric(d)) => encode_numeric(d, out),
        (DataType::Char(_) | DataType::Varchar(_) | DataType::Text, Value::Text(s)) => {
            out.put_slice(s.as_bytes())
        }
        (DataType::Bytea, Value::Bytea(b)) => out.put_slice(b),
        (DataType::Json, Value::Json(text)) => out.put_slice(text.as_bytes()),
        (DataType::TextArray | DataType::Array(_), Value::Text(text)) => {
            return encode_array(text, ty, out)
        }
        (DataType::Jsonb, Value::Jsonb(text)) => {
            out.put_u8(JSONB_VERSION);
            out.put_slice(text.as_bytes())
        }
        (DataType::Uuid, Value::Uuid(u)) => out.put_slice(u),
        (DataType::Enum(_), Value::Enum { .. }) => out.put_slice(value.to_string().as_bytes()),
        (DataType::Interval, Value::Interval(i)) => {
            out.put_i64(i.micros);
            out.put_i32(i.days);
            out.put_i32(i.months);
        }
        _ => return false,
    }
    true
}

/// An array (`ty`: `text[]` or `Array`) in its binary form, from its text form; false if that
/// text is not an array of `ty`'s elements.
fn encode_array(text: &str, ty: &DataType, out: &mut BytesMut) -> bool {
    let element = ty.element_type().expect("an array type");
    let Ok(elements) = array_values(text, &element) else {
        return false;
    };
    let dimensions = i32::from(!elements.is_empty());
    out.put_i32(dimensions);
    out.put_i32(i32::from(elements.iter().any(Value::is_null)));
    out.put_u32(type_oid(&element));
    if dimensions == 0 {
        return true;
    }
    out.put_i32(elements.len() as i32);
    out.put_i32(1);
    for value in &elements {
        if value.is_null() {
            out.put_i32(-1);
            continue;
        }
        let at = out.len();
        out.put_i32(0);
        if !encode_same(value, &element, out) {
            return false;
        }
        let length = (out.len() - at - 4) as i32;
        out[at..at + 4].copy_from_slice(&length.to_be_bytes());
    }
    true
}

/// A binary array parameter of type `ty` (`text[]` or `Array`) as its text form.
fn decode_array(bytes: &[u8], ty: &DataType) -> Result<Value, SqlError> {
    let element_type = ty.element_type().expect("an array type");
    let mut reader = bytes;
    let dimensions = take_i32(&mut reader, ty)?;
    let _has_nulls = take_i32(&mut reader, ty)?;
    let _element_oid = take_i32(&mut reader, ty)?;
    if dimensions == 0 {
        return Ok(Value::Text("{}".to_owned()));
    }
    if dimensions != 1 {
        return Err(SqlError::unsupported("multidimensional arrays"));
    }
    let length = take_i32(&mut reader, ty)?;
    let _lower = take_i32(&mut reader, ty)?;
    let mut elements = Vec::with_capacity(length.clamp(0, 1024) as usize);
    for _ in 0..length {
        let len = take_i32(&mut reader, ty)?;
        if len < 0 {
            elements.push(Value::Null);
            continue;
        }
        let (element, rest) = reader
            .split_at_checked(len as usize)
            .ok_or_else(|| malformed(ty))?;
        reader = rest;
        elements.push(decode(element, Some(&element_type))?);
    }
    Ok(Value::Text(array_text(&elements)))
}

/// The next big-endian i32 of a binary value.
fn take_i32(reader: &mut &[u8], ty: &DataType) -> Result<i32, SqlError> {
    let (head, rest) = reader
        .split_first_chunk::<4>()
        .ok_or_else(|| malformed(ty))?;
    *reader = rest;
    Ok(i32::from_be_bytes(*head))
}

/// The numeric wire form: base-10000 digit groups aligned on the decimal point.
fn encode_numeric(d: &Decimal, out: &mut BytesMut) {
    let text = d.abs().to_string();
    let (int_part, frac_part) = text.split_once('.').unwrap_or((&text, ""));
    let int_digits = int_part.trim_start_matches('0');
    let int_pad = (4 - int_digits.len() % 4) % 4;
    let frac_pad = (4 - frac_part.len() % 4) % 4;
    let digits = format!(
        "{}{int_digits}{frac_part}{}",
        "0".repeat(int_pad),
        "0".repeat(frac_pad)
    );
    let mut groups: Vec<i16> = digits
        .as_bytes()
        .chunks(4)
        .map(|c| c.iter().fold(0i16, |acc, b| acc * 10 + i16::from(b - b'0')))
        .collect();
    let mut weight = ((int_pad + int_digits.len()) / 4) as i16 - 1;
    let leading = groups.iter().take_while(|g| **g == 0).count();
    groups.drain(..leading);
    weight -= leading as i16;
    while groups.last() == Some(&0) {
        groups.pop();
    }
    if groups.is_empty() {
        weight = 0;
    }
    let sign = if d.is_sign_negative() && !d.is_zero() {
        NUMERIC_NEGATIVE
    } else {
        NUMERIC_POSITIVE
    };
    out.put_i16(groups.len() as i16);
    out.put_i16(weight);
    out.put_u16(sign);
    out.put_u16(d.scale() as u16);
    groups.iter().for_each(|g| out.put_i16(*g));
}

/// Reads a binary Bind parameter as a value of type `ty` (`None`: unknown, read as text).
pub fn decode(bytes: &[u8], ty: Option<&DataType>) -> Result<Value, SqlError> {
    let Some(ty) = ty else {
        return Ok(Value::Text(utf8(bytes)?.to_owned()));
    };
    let value = match ty {
        DataType::Boolean => match bytes {
            [b] => Value::Boolean(*b != 0),
            _ => return Err(malformed(ty)),
        },
        DataType::SmallInt | DataType::Integer | DataType::BigInt => decode_int(bytes, ty)?,
        DataType::Real | DataType::Double => decode_float(bytes, ty)?,
        DataType::Numeric { .. } => {
            return Value::parse(ty, &decode_numeric(bytes, ty)?).map_err(Into::into)
        }
        DataType::Char(_)
        | DataType::Varchar(_)
        | DataType::Text
        | DataType::Json
        | DataType::Enum(_) => return Value::parse(ty, utf8(bytes)?).map_err(Into::into),
        DataType::TextArray | DataType::Array(_) => return decode_array(bytes, ty),
        DataType::Jsonb => match bytes.split_first() {
            Some((&JSONB_VERSION, text)) => {
                return Value::parse(ty, utf8(text)?).map_err(Into::into)
            }
            _ => return Err(malformed(ty)),
        },
        DataType::Bytea => Value::Bytea(bytes.to_vec()),
        DataType::Date => Value::Date(i32::from_be_bytes(fixed(bytes, ty)?)),
        DataType::Timestamp => Value::Timestamp(i64::from_be_bytes(fixed(bytes, ty)?)),
        DataType::TimestampTz => Value::TimestampTz(i64::from_be_bytes(fixed(bytes, ty)?)),
        DataType::Time => {
            let micros = i64::from_be_bytes(fixed(bytes, ty)?);
            if !(0..=steady_sql::values::USECS_PER_DAY).contains(&micros) {
                return Err(SqlError::new("22008", "time out of range"));
            }
            Value::Time(micros)
        }
        DataType::Uuid => Value::Uuid(fixed(bytes, ty)?),
        DataType::Interval => {
            let raw: [u8; 16] = fixed(bytes, ty)?;
            let field = |at: usize, n: usize| &raw[at..at + n];
            Value::Interval(Interval {
                micros: i64::from_be_bytes(field(0, 8).try_into().expect("8 bytes")),
                days: i32::from_be_bytes(field(8, 4).try_into().expect("4 bytes")),
                months: i32::from_be_bytes(field(12, 4).try_into().expect("4 bytes")),
            })
        }
    };
    value.cast_to(ty).map_err(Into::into)
}

fn decode_int(bytes: &[u8], ty: &DataType) -> Result<Value, SqlError> {
    Ok(match bytes.len() {
        2 => Value::SmallInt(i16::from_be_bytes(fixed(bytes, ty)?)),
        4 => Value::Integer(i32::from_be_bytes(fixed(bytes, ty)?)),
        8 => Value::BigInt(i64::from_be_bytes(fixed(bytes, ty)?)),
        _ => return Err(malformed(ty)),
    })
}

fn decode_float(bytes: &[u8], ty: &DataType) -> Result<Value, SqlError> {
    Ok(match bytes.len() {
        4 => Value::Real(f32::from_be_bytes(fixed(bytes, ty)?)),
        8 => Value::Double(f64::from_be_bytes(fixed(bytes, ty)?)),
        _ => return Err(malformed(ty)),
    })
}

/// The decimal text of a binary numeric.
fn decode_numeric(bytes: &[u8], ty: &DataType) -> Result<String, SqlError> {
    let word = |i: usize| -> Result<[u8; 2], SqlError> {
        bytes
            .get(i * 2..i * 2 + 2)
            .map(|w| [w[0], w[1]])
            .ok_or_else(|| malformed(ty))
    };
    let ndigits = i16::from_be_bytes(word(0)?);
    let weight = i64::from(i16::from_be_bytes(word(1)?));
    let sign = u16::from_be_bytes(word(2)?);
    let dscale = usize::from(u16::from_be_bytes(word(3)?));
    if sign != NUMERIC_POSITIVE && sign != NUMERIC_NEGATIVE {
        return Err(SqlError::unsupported("numeric NaN or infinity"));
    }
    let mut int_part = String::new();
    let mut frac_part = String::new();
    for i in 0..ndigits.max(0) as usize {
        let group = format!("{:04}", i16::from_be_bytes(word(4 + i)?));
        if (i as i64) <= weight {
            int_part.push_str(&group);
        } else {
            frac_part.push_str(&group);
        }
    }
    let int_groups = (weight + 1).max(0) as usize;
    let present_int = int_part.len() / 4;
    int_part.push_str(&"0000".repeat(int_groups.saturating_sub(present_int)));
    let leading_frac = (-(weight + 1)).max(0) as usize;
    frac_part.insert_str(0, &"0000".repeat(leading_frac));
    frac_part.truncate(dscale);
    frac_part.push_str(&"0".repeat(dscale - frac_part.len()));
    let int_part = match int_part.trim_start_matches('0') {
        "" => "0",
        digits => digits,
    };
    let sign = if sign == NUMERIC_NEGATIVE { "-" } else { "" };
    let point = if dscale > 0 { "." } else { "" };
    Ok(format!("{sign}{int_part}{point}{frac_part}"))
}

fn fixed<const N: usize>(bytes: &[u8], ty: &DataType) -> Result<[u8; N], SqlError> {
    bytes.try_into().map_err(|_| malformed(ty))
}

fn utf8(bytes: &[u8]) -> Result<&str, SqlError> {
    std::str::from_utf8(bytes)
        .map_err(|_| SqlError::new("22021", "invalid byte sequence for encoding \"UTF8\""))
}

fn malformed(ty: &DataType) -> SqlError {
    SqlError::new(
        "22P03",
        format!("incorrect binary data format in bind parameter of type {ty}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numeric_round_trip(text: &str) -> String {
        let ty = DataType::Numeric {
            precision: None,
            scale: None,
        };
        let value = Value::parse(&ty, text).unwrap();
        let mut out = BytesMut::new();
        encode(&value, &ty, &mut out).unwrap();
        decode_numeric(&out, &ty).unwrap()
    }

    #[test]
    fn numerics_survive_the_binary_form() {
        for text in [
            "0",
            "1",
            "-1",
            "12345.678",
            "0.0001",
            "-0.00012",
            "10000",
            "1.50",
            "99999999.9999",
            "0.10",
        ] {
            assert_eq!(numeric_round_trip(text), text);
        }
    }

    #[test]
    fn numeric_layout_matches_postgres() {
        let mut out = BytesMut::new();
        encode_numeric(&"12345.678".parse().unwrap(), &mut out);
        // ndigits 3, weight 1, positive, dscale 3, digits 1 2345 6780
        let words: Vec<i16> = out
            .chunks(2)
            .map(|w| i16::from_be_bytes([w[0], w[1]]))
            .collect();
        assert_eq!(words, [3, 1, 0, 3, 1, 2345, 6780]);
    }

    #[test]
    fn integers_decode_by_length_and_cast() {
        let eight = 7i64.to_be_bytes();
        assert_eq!(
            decode(&eight, Some(&DataType::Integer)).unwrap(),
            Value::Integer(7)
        );
        let big = (i64::from(i32::MAX) + 1).to_be_bytes();
        assert_eq!(
            decode(&big, Some(&DataType::Integer)).unwrap_err().code,
            "22003"
        );
        assert_eq!(
            decode(&[1, 2, 3], Some(&DataType::Integer))
                .unwrap_err()
                .code,
            "22P03"
        );
    }

    #[test]
    fn timestamps_and_dates_keep_the_engine_epoch() {
        let mut out = BytesMut::new();
        encode(&Value::Date(-1), &DataType::Date, &mut out).unwrap();
        assert_eq!(
            decode(&out, Some(&DataType::Date)).unwrap(),
            Value::Date(-1)
        );
    }

    #[test]
    fn a_time_is_microseconds_since_midnight_within_a_day() {
        let noon = 12 * 3_600_000_000;
        let mut out = BytesMut::new();
        encode(&Value::Time(noon), &DataType::Time, &mut out).unwrap();
        assert_eq!(&out[..], &noon.to_be_bytes());
        assert_eq!(
            decode(&out, Some(&DataType::Time)).unwrap(),
            Value::Time(noon)
        );
        let past_midnight = (steady_sql::values::USECS_PER_DAY + 1).to_be_bytes();
        assert_eq!(
            decode(&past_midnight, Some(&DataType::Time))
                .unwrap_err()
                .code,
            "22008"
        );
    }
}
