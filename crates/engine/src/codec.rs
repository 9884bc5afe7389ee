//! The bytes of rows and keys: the row codec (compact, for B+tree values) and the key codec
//! (memcomparable, for B+tree keys). `types` owns what values mean; this module owns how they are
//! laid out. Both formats are on disk: changing either needs a format version.
//!
//! Neither encoding names its types: the decoder is given the column types, and each value must
//! be of its column's type (it has been through `Value::assign_to`). Decoding never panics: bytes
//! that are not a valid encoding for the given types are a [`CodecError`].
//!
//! # Row format
//!
//! | field        | size          | content                                                       |
//! |--------------|---------------|---------------------------------------------------------------|
//! | column count | varint        | n, unsigned LEB128 (7 bits a byte, low bits first)            |
//! | null bitmap  | ⌈n/8⌉ bytes   | bit `i % 8` of byte `i / 8` set ⇔ column i is NULL            |
//! | bodies       | rest          | the body of each non-NULL column, in column order             |
//!
//! | type                        | body                                                        |
//! |-----------------------------|-------------------------------------------------------------|
//! | boolean                     | 1 byte, 0 or 1                                              |
//! | smallint                    | 2 bytes, little-endian two's complement                     |
//! | integer, date               | 4 bytes, little-endian two's complement                     |
//! | bigint, timestamp(tz)       | 8 bytes, little-endian two's complement                     |
//! | real, double                | 4 / 8 bytes, little-endian IEEE 754 bits (NaN payload kept) |
//! | numeric                     | 1 byte `sign << 7 \| scale`, then the mantissa magnitude as a varint (≤ 96 bits) |
//! | char, varchar, text, bytea  | length as a varint, then the bytes (UTF-8 for strings)      |
//! | uuid                        | its 16 bytes                                                |
//! | interval                    | months (4), days (4), microseconds (8), little-endian       |
//!
//! A row with fewer columns than the decoder is given (`n < column_types.len()`) decodes with NULL
//! for the missing trailing columns: ADD COLUMN (with a NULL default) needs no rewrite. A row with
//! more columns than given is an error. Bytes after the last body are an error.
//!
//! # Key format
//!
//! A key is the concatenation of its columns' encodings, so comparing two keys with `memcmp`
//! compares the tuples column by column, and the encoding of the first k columns is a byte prefix
//! of the whole key (an index-prefix range is a byte-prefix range; see [`prefix_successor`]).
//!
//! | column                     | bytes                                                                 |
//! |----------------------------|-----------------------------------------------------------------------|
//! | NULL                       | `02` (after every non-NULL: ASC NULLS LAST)                           |
//! | non-NULL                   | `01`, then the body below                                             |
//!
//! | type              | body                                                                   |
//! |-------------------|------------------------------------------------------------------------|
//! | boolean           | `00` false, `01` true                                                  |
//! | smallint … bigint | big-endian two's complement, sign bit flipped (2, 4, 8 bytes)          |
//! | date, timestamp   | as integer and bigint (∓infinity are the extreme values)               |
//! | real, double      | big-endian IEEE bits: sign bit set if positive, all bits inverted if negative |
//! | numeric           | sign byte `01` negative / `02` zero / `03` positive, then for non-zero: |
//! |                   | exponent byte `E + 128`, digit pairs `10·a + b + 1`, terminator `00`   |
//! | text, bytea       | the bytes with `00` written as `00 FF`, then the terminator `00 01`    |
//! | uuid              | its 16 bytes (uuids order by their bytes)                              |
//! | interval          | its span (µs, a month as 30 days) as 16 bytes, big-endian, sign bit flipped; it decodes normalized (30-day months, 24-hour days), so no table keys on an interval (`Engine::check_key_columns`) |
//!
//! - Floats: `-0` is written as `0` and every NaN as the canonical positive NaN, which sorts above
//!   `+Infinity`, as PostgreSQL orders them.
//! - Numeric: the value is `0.d1d2d3… × 10^E` with `d1 ≠ 0` and no trailing zeros, so equal values
//!   (1.5, 1.50) encode equally; an odd last digit is paired with 0. For a negative value every
//!   byte after the sign byte is inverted (a larger magnitude sorts first, the terminator is `FF`).
//! - Strings: the terminator `00 01` sorts below any continuation (`00 FF` or a byte ≥ `01`), so a
//!   string sorts before its extensions and the next column's bytes never affect the order.
//!
//! Consequences the SQL layer relies on: a key column is encoded with its own width, so a search
//! value must be cast to the column's type first; strings order byte-wise (the C collation); a
//! numeric decoded from a key has lost its display scale, which `decode_key` restores from
//! `Numeric { scale: Some(s), .. }` and which is otherwise the minimal one.

use rust_decimal::Decimal;

use steady_types::{DataType, Interval, Value};

/// A byte string that is not a valid row or key encoding for the given column types.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CodecError {
    #[error("encoded value ends unexpectedly")]
    UnexpectedEnd,
    #[error("{0} bytes follow the last encoded value")]
    TrailingBytes(usize),
    #[error("row has {encoded} columns but only {expected} column types were given")]
    TooManyColumns { encoded: u128, expected: usize },
    #[error("invalid {0} encoding")]
    Invalid(&'static str),
}

// ---------------------------------------------------------------------------------------------
// Rows
// ---------------------------------------------------------------------------------------------

/// Encodes a row (see the module documentation for the format).
pub fn encode_row(values: &[Value]) -> Vec<u8> {
    // Room for a count, the null bitmap and a fixed-width value per column: most rows of
    // numbers then never grow their buffer.
    let mut out = Vec::with_capacity(4 + values.len().div_ceil(8) + values.len() * 9);
    put_varint(&mut out, values.len() as u128);
    let bitmap = out.len();
    out.resize(bitmap + values.len().div_ceil(8), 0);
    for (i, value) in values.iter().enumerate() {
        if value.is_null() {
            out[bitmap + i / 8] |= 1 << (i % 8);
        }
        put_row_body(&mut out, value);
    }
    out
}

/// How many columns a stored row holds (a row stored before ADD COLUMN holds fewer than its
/// table has).
pub fn encoded_columns(bytes: &[u8]) -> Result<usize, CodecError> {
    let encoded = Reader { rest: bytes }.varint()?;
    usize::try_from(encoded).map_err(|_| CodecError::Invalid("column count"))
}

/// Decodes a row of the given column types; missing trailing columns are NULL.
pub fn decode_row(bytes: &[u8], column_types: &[DataType]) -> Result<Vec<Value>, CodecError> {
    decode_row_columns(bytes, column_types, None)
}

/// Decodes the columns of a row that `wanted` marks (all when None); the others are skipped
/// without being materialised and come back as NULL. A scan that needs two columns of a wide row
/// then builds two values, not all of them.
pub fn decode_row_columns(
    bytes: &[u8],
    column_types: &[DataType],
    wanted: Option<&[bool]>,
) -> Result<Vec<Value>, CodecError> {
    let mut row = Vec::with_capacity(column_types.len());
    decode_row_columns_into(bytes, column_types, wanted, &mut row)?;
    Ok(row)
}

/// As [`decode_row_columns`], into `row`: a scan that looks at each row and lets it go decodes
/// every row into the same vector. A vector that already holds one value per column has its
/// values overwritten in place; any other is cleared and filled.
pub fn decode_row_columns_into(
    bytes: &[u8],
    column_types: &[DataType],
    wanted: Option<&[bool]>,
    row: &mut Vec<Value>,
) -> Result<(), CodecError> {
    let mut reader = Reader { rest: bytes };
    let encoded = reader.varint()?;
    let count = usize::try_from(encoded)
        .ok()
        .filter(|&n| n <= column_types.len())
        .ok_or(CodecError::TooManyColumns {
            encoded,
            expected: column_types.len(),
        })?;
    let bitmap = reader.take(count.div_ceil(8))?;
    let is_null = |i: usize| i >= count || bitmap[i / 8] & (1 << (i % 8)) != 0;
    let skipped = |i: usize| wanted.is_some_and(|wanted| !wanted.get(i).copied().unwrap_or(true));
    if row.len() == column_types.len() {
        for ((i, ty), slot) in column_types.iter().enumerate().zip(row.iter_mut()) {
            if is_null(i) {
                store_null(slot);
            } else if skipped(i) {
                skip_row_body(&mut reader, ty)?;
                store_null(slot);
            } else {
                store_row_body(&mut reader, ty, slot)?;
            }
        }
    } else {
        row.clear();
        for (i, ty) in column_types.iter().enumerate() {
            if is_null(i) {
                row.push(Value::Null);
            } else if skipped(i) {
                skip_row_body(&mut reader, ty)?;
                row.push(Value::Null);
            } else {
                push_row_body(&mut reader, ty, row)?;
            }
        }
    }
    reader.finish()
}

/// Makes `slot` NULL, writing it only when it is not NULL already: a scan's skipped columns stay
/// NULL from row to row without a store per row. (Pushing `Value::Null` builds the value on the
/// stack with a one-byte store and copies it with wide loads — a store-forwarding stall that cost
/// a fifth of a warm aggregate's scan.)
#[inline]
fn store_null(slot: &mut Value) {
    if !matches!(slot, Value::Null) {
        *slot = Value::Null;
    }
}

/// Decodes one value onto `row`. The common fixed-width types are built in place in the vector:
/// returned through `read_row_body`'s `Result`, a value was stored to the stack in parts and
/// loaded back whole, a store-forwarding stall that cost a third of a warm scan's time.
#[inline]
fn push_row_body(
    reader: &mut Reader<'_>,
    ty: &DataType,
    row: &mut Vec<Value>,
) -> Result<(), CodecError> {
    match ty {
        DataType::Integer => row.push(Value::Integer(i32::from_le_bytes(reader.array()?))),
        DataType::BigInt => row.push(Value::BigInt(i64::from_le_bytes(reader.array()?))),
        DataType::Double => row.push(Value::Double(f64::from_bits(u64::from_le_bytes(
            reader.array()?,
        )))),
        _ => row.push(read_row_body(reader, ty)?),
    }
    Ok(())
}

/// Decodes one value into `slot`, as [`push_row_body`] onto a vector.
#[inline]
fn store_row_body(
    reader: &mut Reader<'_>,
    ty: &DataType,
    slot: &mut Value,
) -> Result<(), CodecError> {
    match ty {
        DataType::Integer => *slot = Value::Integer(i32::from_le_bytes(reader.array()?)),
        DataType::BigInt => *slot = Value::BigInt(i64::from_le_bytes(reader.array()?)),
        DataType::Double => {
            *slot = Value::Double(f64::from_bits(u64::from_le_bytes(reader.array()?)))
        }
        _ => *slot = read_row_body(reader, ty)?,
    }
    Ok(())
}

fn put_row_body(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Null => {}
        Value::Boolean(b) => out.push(u8::from(*b)),
        Value::SmallInt(i) => out.extend(i.to_le_bytes()),
        Value::Integer(i) | Value::Date(i) => out.extend(i.to_le_bytes()),
        Value::BigInt(i) | Value::Timestamp(i) | Value::TimestampTz(i) | Value::Time(i) => {
            out.extend(i.to_le_bytes())
        }
        Value::Real(x) => out.extend(x.to_bits().to_le_bytes()),
        Value::Double(x) => out.extend(x.to_bits().to_le_bytes()),
        Value::Numeric(d) => {
            let sign = if d.is_sign_negative() { 0x80 } else { 0 };
            out.push(sign | d.scale() as u8);
            put_varint(out, d.mantissa().unsigned_abs());
        }
        Value::Text(s) | Value::Json(s) | Value::Jsonb(s) => put_length_prefixed(out, s.as_bytes()),
        Value::Bytea(b) => put_length_prefixed(out, b),
        Value::Uuid(u) => out.extend_from_slice(u),
        Value::Enum { position, .. } => out.extend(position.to_le_bytes()),
        Value::Interval(i) => {
            out.extend(i.months.to_le_bytes());
            out.extend(i.days.to_le_bytes());
            out.extend(i.micros.to_le_bytes());
        }
    }
}

fn read_row_body(reader: &mut Reader<'_>, ty: &DataType) -> Result<Value, CodecError> {
    Ok(match ty {
        DataType::Boolean => Value::Boolean(read_boolean(reader)?),
        DataType::SmallInt => Value::SmallInt(i16::from_le_bytes(reader.array()?)),
        DataType::Integer => Value::Integer(i32::from_le_bytes(reader.array()?)),
        DataType::Date => Value::Date(i32::from_le_bytes(reader.array()?)),
        DataType::BigInt => Value::BigInt(i64::from_le_bytes(reader.array()?)),
        DataType::Timestamp => Value::Timestamp(i64::from_le_bytes(reader.array()?)),
        DataType::TimestampTz => Value::TimestampTz(i64::from_le_bytes(reader.array()?)),
        DataType::Time => Value::Time(i64::from_le_bytes(reader.array()?)),
        DataType::Real => Value::Real(f32::from_bits(u32::from_le_bytes(reader.array()?))),
        DataType::Double => Value::Double(f64::from_bits(u64::from_le_bytes(reader.array()?))),
        DataType::Numeric { .. } => Value::Numeric(read_row_numeric(reader)?),
        DataType::Char(_)
        | DataType::Varchar(_)
        | DataType::Text
        | DataType::TextArray
        | DataType::Array(_) => Value::Text(utf8(reader.length_prefixed()?.to_vec())?),
        DataType::Bytea => Value::Bytea(reader.length_prefixed()?.to_vec()),
        DataType::Json => Value::Json(utf8(reader.length_prefixed()?.to_vec())?),
        DataType::Jsonb => Value::Jsonb(utf8(reader.length_prefixed()?.to_vec())?),
        DataType::Uuid => Value::Uuid(reader.array()?),
        DataType::Enum(oid) => Value::Enum {
            oid: *oid,
            position: u32::from_le_bytes(reader.array()?),
        },
        DataType::Interval => Value::Interval(Interval {
            months: i32::from_le_bytes(reader.array()?),
            days: i32::from_le_bytes(reader.array()?),
            micros: i64::from_le_bytes(reader.array()?),
        }),
    })
}

fn skip_row_body(reader: &mut Reader<'_>, ty: &DataType) -> Result<(), CodecError> {
    let fixed = match ty {
        DataType::Boolean => 1,
        DataType::SmallInt => 2,
        DataType::Integer | DataType::Date | DataType::Real | DataType::Enum(_) => 4,
        DataType::BigInt
        | DataType::Timestamp
        | DataType::TimestampTz
        | DataType::Time
        | DataType::Double => 8,
        DataType::Uuid | DataType::Interval => 16,
        DataType::Numeric { .. } => {
            reader.byte()?;
            reader.varint()?;
            return Ok(());
        }
        DataType::Char(_)
        | DataType::Varchar(_)
        | DataType::Text
        | DataType::TextArray
        | DataType::Array(_)
        | DataType::Bytea
        | DataType::Json
        | DataType::Jsonb => {
            reader.length_prefixed()?;
            return Ok(());
        }
    };
    reader.take(fixed).map(drop)
}

fn read_row_numeric(reader: &mut Reader<'_>) -> Result<Decimal, CodecError> {
    let header = reader.byte()?;
    let mantissa = i128::try_from(reader.varint()?).map_err(|_| CodecError::Invalid("numeric"))?;
    let mut d = Decimal::try_from_i128_with_scale(mantissa, u32::from(header & 0x7f))
        .map_err(|_| CodecError::Invalid("numeric"))?;
    d.set_sign_negative(header & 0x80 != 0);
    Ok(d)
}

fn read_boolean(reader: &mut Reader<'_>) -> Result<bool, CodecError> {
    match reader.byte()? {
        0 => Ok(false),
        1 => Ok(true),
        _ => Err(CodecError::Invalid("boolean")),
    }
}

fn utf8(bytes: Vec<u8>) -> Result<String, CodecError> {
    String::from_utf8(bytes).map_err(|_| CodecError::Invalid("UTF-8 text"))
}

/// Appends `n` as a LEB128 varint (7 bits a byte, low first; one byte below 128).
pub(crate) fn put_varint(out: &mut Vec<u8>, mut n: u128) {
    while n >= 0x80 {
        out.push(n as u8 | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

fn put_length_prefixed(out: &mut Vec<u8>, bytes: &[u8]) {
    put_varint(out, bytes.len() as u128);
    out.extend_from_slice(bytes);
}

// ---------------------------------------------------------------------------------------------
// Keys
// ---------------------------------------------------------------------------------------------

const KEY_PRESENT: u8 = 0x01;
const KEY_NULL: u8 = 0x02;
const NUMERIC_NEGATIVE: u8 = 0x01;
const NUMERIC_ZERO: u8 = 0x02;
const NUMERIC_POSITIVE: u8 = 0x03;
/// More digits than any `Decimal` has (29), rounded up to whole digit pairs.
const NUMERIC_MAX_DIGITS: u32 = 30;

/// Encodes a tuple so that byte order is SQL order (see the module documentation). Encoding a
/// prefix of the tuple gives a prefix of the bytes.
pub fn encode_key(values: &[Value]) -> Vec<u8> {
    let mut out = Vec::new();
    for value in values {
        match value {
            Value::Null => out.push(KEY_NULL),
            present => {
                out.push(KEY_PRESENT);
                put_key_body(&mut out, present);
            }
        }
    }
    out
}

/// Decodes a key of exactly the given column types.
pub fn decode_key(bytes: &[u8], types: &[DataType]) -> Result<Vec<Value>, CodecError> {
    let mut reader = Reader { rest: bytes };
    let mut key = Vec::with_capacity(types.len());
    for ty in types {
        key.push(match reader.byte()? {
            KEY_NULL => Value::Null,
            KEY_PRESENT => read_key_body(&mut reader, ty)?,
            _ => return Err(CodecError::Invalid("key null marker")),
        });
    }
    reader.finish()?;
    Ok(key)
}

/// The smallest byte string greater than every string that starts with `prefix`; `None` when no
/// such string exists (the prefix is empty or all `FF`), meaning "to the end".
pub fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let last = prefix.iter().rposition(|&b| b != 0xff)?;
    let mut successor = prefix[..=last].to_vec();
    successor[last] += 1;
    Some(successor)
}

fn put_key_body(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Null => {}
        Value::Boolean(b) => out.push(u8::from(*b)),
        Value::SmallInt(i) => out.extend((*i as u16 ^ (1 << 15)).to_be_bytes()),
        Value::Integer(i) | Value::Date(i) => out.extend((*i as u32 ^ (1 << 31)).to_be_bytes()),
        Value::BigInt(i) | Value::Timestamp(i) | Value::TimestampTz(i) | Value::Time(i) => {
            out.extend((*i as u64 ^ (1 << 63)).to_be_bytes())
        }
        Value::Real(x) => out.extend(real_key(*x).to_be_bytes()),
        Value::Double(x) => out.extend(double_key(*x).to_be_bytes()),
        Value::Numeric(d) => put_key_numeric(out, d),
        Value::Text(s) | Value::Json(s) | Value::Jsonb(s) => put_key_bytes(out, s.as_bytes()),
        Value::Bytea(b) => put_key_bytes(out, b),
        Value::Uuid(u) => out.extend_from_slice(u),
        Value::Enum { position, .. } => out.extend(position.to_be_bytes()),
        Value::Interval(i) => out.extend((i.span() as u128 ^ (1 << 127)).to_be_bytes()),
    }
}

fn read_key_body(reader: &mut Reader<'_>, ty: &DataType) -> Result<Value, CodecError> {
    Ok(match ty {
        DataType::Boolean => Value::Boolean(read_boolean(reader)?),
        DataType::SmallInt => {
            Value::SmallInt((u16::from_be_bytes(reader.array()?) ^ (1 << 15)) as i16)
        }
        DataType::Integer => Value::Integer(read_key_i32(reader)?),
        DataType::Date => Value::Date(read_key_i32(reader)?),
        DataType::BigInt => Value::BigInt(read_key_i64(reader)?),
        DataType::Timestamp => Value::Timestamp(read_key_i64(reader)?),
        DataType::TimestampTz => Value::TimestampTz(read_key_i64(reader)?),
        DataType::Time => Value::Time(read_key_i64(reader)?),
        DataType::Real => Value::Real(real_from_key(u32::from_be_bytes(reader.array()?))),
        DataType::Double => Value::Double(double_from_key(u64::from_be_bytes(reader.array()?))),
        DataType::Numeric { scale, .. } => Value::Numeric(read_key_numeric(reader, *scale)?),
        DataType::Char(_)
        | DataType::Varchar(_)
        | DataType::Text
        | DataType::TextArray
        | DataType::Array(_) => Value::Text(utf8(read_key_bytes(reader)?)?),
        DataType::Bytea => Value::Bytea(read_key_bytes(reader)?),
        DataType::Json => Value::Json(utf8(read_key_bytes(reader)?)?),
        DataType::Jsonb => Value::Jsonb(utf8(read_key_bytes(reader)?)?),
        DataType::Uuid => Value::Uuid(reader.array()?),
        DataType::Enum(oid) => Value::Enum {
            oid: *oid,
            position: u32::from_be_bytes(reader.array()?),
        },
        DataType::Interval => {
            let span = (u128::from_be_bytes(reader.array()?) ^ (1 << 127)) as i128;
            let day = i128::from(steady_types::USECS_PER_DAY);
            let invalid = |_| CodecError::Invalid("interval");
            Value::Interval(Interval {
                months: i32::try_from(span / (30 * day)).map_err(invalid)?,
                days: (span % (30 * day) / day) as i32,
                micros: (span % day) as i64,
            })
        }
    })
}

fn read_key_i32(reader: &mut Reader<'_>) -> Result<i32, CodecError> {
    Ok((u32::from_be_bytes(reader.array()?) ^ (1 << 31)) as i32)
}

fn read_key_i64(reader: &mut Reader<'_>) -> Result<i64, CodecError> {
    Ok((u64::from_be_bytes(reader.array()?) ^ (1 << 63)) as i64)
}

fn double_key(x: f64) -> u64 {
    let canonical = if x.is_nan() { f64::NAN } else { x + 0.0 };
    let bits = canonical.to_bits();
    if bits >> 63 == 1 {
        !bits
    } else {
        bits | (1 << 63)
    }
}

fn double_from_key(key: u64) -> f64 {
    f64::from_bits(if key >> 63 == 1 {
        key ^ (1 << 63)
    } else {
        !key
    })
}

fn real_key(x: f32) -> u32 {
    let canonical = if x.is_nan() { f32::NAN } else { x + 0.0 };
    let bits = canonical.to_bits();
    if bits >> 31 == 1 {
        !bits
    } else {
        bits | (1 << 31)
    }
}

fn real_from_key(key: u32) -> f32 {
    f32::from_bits(if key >> 31 == 1 {
        key ^ (1 << 31)
    } else {
        !key
    })
}

fn put_key_numeric(out: &mut Vec<u8>, d: &Decimal) {
    if d.is_zero() {
        out.push(NUMERIC_ZERO);
        return;
    }
    let all_digits = d.mantissa().unsigned_abs().to_string();
    let exponent = all_digits.len() as i32 - d.scale() as i32;
    let digits = all_digits.trim_end_matches('0').as_bytes();
    let mut body = vec![(exponent + 128) as u8];
    body.extend(digits.chunks(2).map(|pair| {
        let low = pair.get(1).map_or(0, |d| d - b'0');
        (pair[0] - b'0') * 10 + low + 1
    }));
    body.push(0);
    if d.is_sign_negative() {
        out.push(NUMERIC_NEGATIVE);
        out.extend(body.iter().map(|b| !b));
    } else {
        out.push(NUMERIC_POSITIVE);
        out.extend(body);
    }
}

fn read_key_numeric(reader: &mut Reader<'_>, scale: Option<u32>) -> Result<Decimal, CodecError> {
    let mut d = match reader.byte()? {
        NUMERIC_ZERO => Decimal::ZERO,
        NUMERIC_POSITIVE => read_numeric_magnitude(reader, 0x00)?,
        NUMERIC_NEGATIVE => -read_numeric_magnitude(reader, 0xff)?,
        _ => return Err(CodecError::Invalid("numeric key sign")),
    };
    if let Some(scale) = scale {
        d.rescale(scale);
    }
    Ok(d)
}

/// Reads exponent, digit pairs and terminator, each byte XORed with `flip`.
fn read_numeric_magnitude(reader: &mut Reader<'_>, flip: u8) -> Result<Decimal, CodecError> {
    let invalid = || CodecError::Invalid("numeric key");
    let exponent = i64::from(reader.byte()? ^ flip) - 128;
    let (mut mantissa, mut digits) = (0u128, 0u32);
    loop {
        let pair = match reader.byte()? ^ flip {
            0 => break,
            byte @ 1..=100 if digits < NUMERIC_MAX_DIGITS => u128::from(byte - 1),
            _ => return Err(invalid()),
        };
        mantissa = mantissa * 100 + pair;
        digits += 2;
    }
    let mut scale = i64::from(digits) - exponent;
    while scale > 0 && mantissa % 10 == 0 && mantissa > 0 {
        (mantissa, scale) = (mantissa / 10, scale - 1);
    }
    if scale < 0 {
        let factor = 10u128
            .checked_pow(scale.unsigned_abs() as u32)
            .ok_or_else(invalid)?;
        (mantissa, scale) = (mantissa.checked_mul(factor).ok_or_else(invalid)?, 0);
    }
    let mantissa = i128::try_from(mantissa).map_err(|_| invalid())?;
    Decimal::try_from_i128_with_scale(mantissa, scale as u32).map_err(|_| invalid())
}

fn put_key_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    for &b in bytes {
        out.push(b);
        if b == 0 {
            out.push(0xff);
        }
    }
    out.extend([0x00, 0x01]);
}

fn read_key_bytes(reader: &mut Reader<'_>) -> Result<Vec<u8>, CodecError> {
    let mut out = Vec::new();
    loop {
        match reader.byte()? {
            0 => match reader.byte()? {
                0xff => out.push(0),
                0x01 => return Ok(out),
                _ => return Err(CodecError::Invalid("key string escape")),
            },
            b => out.push(b),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Reading
// ---------------------------------------------------------------------------------------------

/// The varint that is the whole of `bytes` (see [`put_varint`]).
pub(crate) fn read_whole_varint(bytes: &[u8]) -> Result<u128, CodecError> {
    let mut reader = Reader { rest: bytes };
    let n = reader.varint()?;
    if !reader.rest.is_empty() {
        return Err(CodecError::Invalid("bytes after a varint"));
    }
    Ok(n)
}

/// A cursor over encoded bytes that fails instead of running past the end.
struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], CodecError> {
        if n > self.rest.len() {
            return Err(CodecError::UnexpectedEnd);
        }
        let (taken, rest) = self.rest.split_at(n);
        self.rest = rest;
        Ok(taken)
    }

    fn byte(&mut self) -> Result<u8, CodecError> {
        Ok(self.take(1)?[0])
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], CodecError> {
        self.take(N)?
            .try_into()
            .map_err(|_| CodecError::UnexpectedEnd)
    }

    fn varint(&mut self) -> Result<u128, CodecError> {
        let mut n = 0u128;
        for shift in (0..128).step_by(7) {
            let byte = self.byte()?;
            let bits = u128::from(byte & 0x7f);
            if (bits << shift) >> shift != bits {
                break;
            }
            n |= bits << shift;
            if byte & 0x80 == 0 {
                return Ok(n);
            }
        }
        Err(CodecError::Invalid("varint"))
    }

    fn length_prefixed(&mut self) -> Result<&'a [u8], CodecError> {
        let len = usize::try_from(self.varint()?).map_err(|_| CodecError::UnexpectedEnd)?;
        self.take(len)
    }

    fn finish(self) -> Result<(), CodecError> {
        match self.rest.len() {
            0 => Ok(()),
            n => Err(CodecError::TrailingBytes(n)),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::cmp::Ordering;

    use proptest::prelude::*;

    use super::*;

    fn numeric_type() -> impl Strategy<Value = DataType> {
        prop_oneof![
            Just(DataType::Numeric {
                precision: None,
                scale: None
            }),
            (1u32..=28)
                .prop_flat_map(|p| (Just(p), 0..=p))
                .prop_map(|(p, s)| DataType::Numeric {
                    precision: Some(p),
                    scale: Some(s)
                }),
        ]
    }

    fn data_type() -> impl Strategy<Value = DataType> {
        prop_oneof![
            Just(DataType::Boolean),
            Just(DataType::SmallInt),
            Just(DataType::Integer),
            Just(DataType::BigInt),
            Just(DataType::Real),
            Just(DataType::Double),
            numeric_type(),
            (1u32..8).prop_map(DataType::Char),
            proptest::option::of(1u32..8).prop_map(DataType::Varchar),
            Just(DataType::Text),
            Just(DataType::Bytea),
            Just(DataType::Date),
            Just(DataType::Timestamp),
            Just(DataType::TimestampTz),
            Just(DataType::Time),
            Just(DataType::Uuid),
            Just(DataType::Interval),
            Just(DataType::Enum(1 << 30)),
        ]
    }

    fn double() -> impl Strategy<Value = f64> {
        prop_oneof![
            any::<f64>(),
            (-3i8..3).prop_map(f64::from),
            prop::sample::select(vec![
                f64::NAN,
                -f64::NAN,
                -0.0,
                f64::INFINITY,
                f64::NEG_INFINITY
            ]),
        ]
    }

    /// A decimal that fits the numeric type (its scale, if constrained, exactly).
    fn decimal(ty: DataType) -> BoxedStrategy<Decimal> {
        match ty {
            DataType::Numeric {
                precision: Some(p),
                scale: Some(s),
            } => {
                let bound = 10i128.pow(p) - 1;
                prop_oneof![-bound..=bound, -3i128..3]
                    .prop_map(move |m| Decimal::from_i128_with_scale(m, s))
                    .boxed()
            }
            _ => {
                let bound = (1i128 << 96) - 1;
                (prop_oneof![-bound..=bound, -300i128..300], 0u32..=28)
                    .prop_map(|(m, s)| Decimal::from_i128_with_scale(m, s))
                    .boxed()
            }
        }
    }

    fn non_null(ty: DataType) -> BoxedStrategy<Value> {
        match ty {
            DataType::Boolean => any::<bool>().prop_map(Value::Boolean).boxed(),
            DataType::SmallInt => prop_oneof![any::<i16>(), -3i16..3]
                .prop_map(Value::SmallInt)
                .boxed(),
            DataType::Integer => prop_oneof![any::<i32>(), -3i32..3]
                .prop_map(Value::Integer)
                .boxed(),
            DataType::BigInt => prop_oneof![any::<i64>(), -3i64..3]
                .prop_map(Value::BigInt)
                .boxed(),
            DataType::Date => prop_oneof![any::<i32>(), -3i32..3]
                .prop_map(Value::Date)
                .boxed(),
            DataType::Timestamp => prop_oneof![any::<i64>(), -3i64..3]
                .prop_map(Value::Timestamp)
                .boxed(),
            DataType::TimestampTz => prop_oneof![any::<i64>(), -3i64..3]
                .prop_map(Value::TimestampTz)
                .boxed(),
            DataType::Time => (0..=steady_types::USECS_PER_DAY)
                .prop_map(Value::Time)
                .boxed(),
            DataType::Real => double().prop_map(|x| Value::Real(x as f32)).boxed(),
            DataType::Double => double().prop_map(Value::Double).boxed(),
            DataType::Numeric { .. } => decimal(ty).prop_map(Value::Numeric).boxed(),
            DataType::Char(_)
            | DataType::Varchar(_)
            | DataType::Text
            | DataType::TextArray
            | DataType::Array(_) => prop_oneof!["[ab\\x00]{0,3}", any::<String>()]
                .prop_map(Value::Text)
                .boxed(),
            DataType::Bytea => prop_oneof![
                proptest::collection::vec(prop::sample::select(vec![0u8, 1, 0xff]), 0..4),
                proptest::collection::vec(any::<u8>(), 0..24),
            ]
            .prop_map(Value::Bytea)
            .boxed(),
            DataType::Uuid => prop_oneof![
                any::<[u8; 16]>(),
                prop::sample::select(vec![[0u8; 16], [0xff; 16]]),
            ]
            .prop_map(Value::Uuid)
            .boxed(),
            DataType::Json => any::<String>().prop_map(Value::Json).boxed(),
            DataType::Jsonb => any::<String>().prop_map(Value::Jsonb).boxed(),
            DataType::Enum(oid) => prop_oneof![any::<u32>(), 0u32..3]
                .prop_map(move |position| Value::Enum { oid, position })
                .boxed(),
            DataType::Interval => (-99_999i32..99_999, any::<i32>(), any::<i64>())
                .prop_map(|(months, days, micros)| {
                    Value::Interval(Interval {
                        months,
                        days,
                        micros,
                    })
                })
                .boxed(),
        }
    }

    fn value(ty: DataType) -> BoxedStrategy<Value> {
        prop_oneof![1 => Just(Value::Null), 4 => non_null(ty)].boxed()
    }

    fn tuple_of(types: &[DataType]) -> Vec<BoxedStrategy<Value>> {
        types.iter().map(|ty| value(*ty)).collect()
    }

    /// A schema of `columns` columns and two tuples of it.
    fn schema_and_tuples(
        columns: std::ops::Range<usize>,
    ) -> impl Strategy<Value = (Vec<DataType>, Vec<Value>, Vec<Value>)> {
        proptest::collection::vec(data_type(), columns).prop_flat_map(|types| {
            let (a, b) = (tuple_of(&types), tuple_of(&types));
            (Just(types), a, b)
        })
    }

    /// SQL tuple order with NULLs last, built on `Value::compare`.
    fn tuple_order(a: &[Value], b: &[Value]) -> Ordering {
        a.iter()
            .zip(b)
            .map(|(x, y)| match (x.is_null(), y.is_null()) {
                (true, true) => Ordering::Equal,
                (true, false) => Ordering::Greater,
                (false, true) => Ordering::Less,
                (false, false) => x.compare(y).expect("same-typed values compare"),
            })
            .find(|o| o.is_ne())
            .unwrap_or_else(|| a.len().cmp(&b.len()))
    }

    proptest! {
        #[test]
        fn rows_round_trip((types, row, _) in schema_and_tuples(0..5)) {
            prop_assert_eq!(decode_row(&encode_row(&row), &types)?, row);
        }

        #[test]
        fn rows_decode_only_the_wanted_columns(
            (types, row, _) in schema_and_tuples(0..5),
            wanted in proptest::collection::vec(any::<bool>(), 0..6),
        ) {
            let decoded = decode_row_columns(&encode_row(&row), &types, Some(&wanted))?;
            for (i, value) in decoded.iter().enumerate() {
                let expected = if wanted.get(i).copied().unwrap_or(true) { &row[i] } else { &Value::Null };
                prop_assert_eq!(value, expected);
            }
        }

        /// A scan decodes every row into one vector, overwritten in place: each row decodes to
        /// what a fresh vector gets, whatever the row before it left there.
        #[test]
        fn rows_decoded_into_a_reused_vector_equal_fresh_ones(
            (types, first, second) in schema_and_tuples(0..5),
            wanted in proptest::collection::vec(any::<bool>(), 0..6),
        ) {
            let mut reused = Vec::new();
            for row in [&first, &second, &first] {
                let bytes = encode_row(row);
                decode_row_columns_into(&bytes, &types, Some(&wanted), &mut reused)?;
                prop_assert_eq!(&reused, &decode_row_columns(&bytes, &types, Some(&wanted))?);
                decode_row_columns_into(&bytes, &types, None, &mut reused)?;
                prop_assert_eq!(&reused, row);
            }
        }

        #[test]
        fn rows_read_missing_trailing_columns_as_null(
            (types, row, _) in schema_and_tuples(0..5),
            cut in 0usize..5,
        ) {
            let kept = cut.min(row.len());
            let decoded = decode_row(&encode_row(&row[..kept]), &types)?;
            prop_assert_eq!(&decoded[..kept], &row[..kept]);
            prop_assert!(decoded[kept..].iter().all(Value::is_null));
        }

        #[test]
        fn keys_round_trip((types, key, _) in schema_and_tuples(0..5)) {
            let bytes = encode_key(&key);
            let decoded = decode_key(&bytes, &types)?;
            prop_assert_eq!(tuple_order(&decoded, &key), Ordering::Equal);
            prop_assert_eq!(encode_key(&decoded), bytes);
            for (value, ty) in decoded.iter().zip(&types) {
                if let (Value::Numeric(d), DataType::Numeric { scale: Some(s), .. }) = (value, ty) {
                    prop_assert_eq!(d.scale(), *s);
                }
            }
        }

        /// json and jsonb are never key columns (their key bytes would not follow jsonb's
        /// order), so `data_type` leaves them out; their rows round-trip here.
        #[test]
        fn json_rows_round_trip(json in non_null(DataType::Json), jsonb in non_null(DataType::Jsonb)) {
            let row = vec![json, Value::Null, jsonb];
            let types = [DataType::Json, DataType::Jsonb, DataType::Jsonb];
            prop_assert_eq!(decode_row(&encode_row(&row), &types)?, row);
        }

        #[test]
        fn key_bytes_sort_in_sql_order((_, a, b) in schema_and_tuples(0..5)) {
            prop_assert_eq!(encode_key(&a).cmp(&encode_key(&b)), tuple_order(&a, &b));
        }

        #[test]
        fn key_prefixes_are_byte_prefixes((_, key, other) in schema_and_tuples(0..5)) {
            let full = encode_key(&key);
            for k in 0..=key.len() {
                let prefix = encode_key(&key[..k]);
                prop_assert!(full.starts_with(&prefix));
                if let Some(end) = prefix_successor(&prefix) {
                    prop_assert!(full < end);
                    let other_key = encode_key(&other);
                    let shares_prefix = tuple_order(&other[..k], &key[..k]).is_eq();
                    prop_assert_eq!(other_key.starts_with(&prefix), shares_prefix);
                    prop_assert_eq!(prefix <= other_key && other_key < end, shares_prefix);
                }
            }
        }

        #[test]
        fn truncated_encodings_are_errors(
            (types, row, _) in schema_and_tuples(1..5),
            cut in any::<prop::sample::Index>(),
        ) {
            let row_bytes = encode_row(&row);
            let row_cut = &row_bytes[..cut.index(row_bytes.len())];
            prop_assert!(decode_row(row_cut, &types).is_err());
            let key_bytes = encode_key(&row);
            let key_cut = &key_bytes[..cut.index(key_bytes.len())];
            prop_assert!(decode_key(key_cut, &types).is_err());
        }

        #[test]
        fn random_bytes_never_panic(
            types in proptest::collection::vec(data_type(), 0..6),
            bytes in proptest::collection::vec(any::<u8>(), 0..64),
        ) {
            let _ = decode_row(&bytes, &types);
            let _ = decode_key(&bytes, &types);
        }
    }

    #[test]
    fn prefix_successor_skips_trailing_ff() {
        assert_eq!(prefix_successor(&[1, 2, 0xff, 0xff]), Some(vec![1, 3]));
        assert_eq!(prefix_successor(&[0xff]), None);
        assert_eq!(prefix_successor(&[]), None);
    }

    #[test]
    fn numeric_keys_ignore_display_scale() {
        let a = encode_key(&[Value::Numeric(Decimal::new(15, 1))]);
        let b = encode_key(&[Value::Numeric(Decimal::new(150, 2))]);
        assert_eq!(a, b);
        let typed = DataType::Numeric {
            precision: Some(5),
            scale: Some(2),
        };
        assert_eq!(
            decode_key(&a, &[typed]),
            Ok(vec![Value::Numeric(Decimal::new(150, 2))])
        );
    }

    #[test]
    fn row_layout_is_compact() {
        let row = [Value::Integer(7), Value::Null, Value::Text("ab".into())];
        assert_eq!(encode_row(&row), [3, 0b010, 7, 0, 0, 0, 2, b'a', b'b']);
        let too_many = decode_row(&encode_row(&row), &[DataType::Integer]);
        assert_eq!(
            too_many,
            Err(CodecError::TooManyColumns {
                encoded: 3,
                expected: 1
            })
        );
    }
}
