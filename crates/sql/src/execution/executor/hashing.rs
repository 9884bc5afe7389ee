//! Hashes of values that agree with SQL equality, for hash joins and hash aggregation: two
//! values `=` calls equal (or, for grouping, two NULLs) hash alike.
//!
//! Each value is hashed in a canonical form. Every number — integer, numeric or float — is its
//! value rounded to the nearest float (integers by `as`, numerics by parsing their text, as
//! PostgreSQL's numeric-to-float8 cast and `Value::compare` across number types do; -0 as 0, one
//! NaN), since `=` compares numbers of different types either exactly (then their nearest floats
//! are equal too) or as floats. Dates and timestamps are one instant on the axis comparisons use;
//! strings and byte strings their bytes. Distinct values may share a form (integers beyond 2^53,
//! numerics closer than a float can tell): a hash only narrows, and a match is always confirmed
//! by comparing the values.

use std::hash::{BuildHasher, Hash, Hasher};

use rust_decimal::prelude::ToPrimitive;

use super::*;

/// A value's form for hashing (see the module doc).
#[derive(Hash)]
enum Canonical<'v> {
    Null,
    Boolean(bool),
    Number(u64),
    Instant(i128),
    Text(&'v str),
    Bytes(&'v [u8]),
    Uuid(&'v [u8; 16]),
    /// An interval's span: equal intervals (`'1 mon'`, `'30 days'`) hash alike.
    Span(i128),
    /// An enum value: its type and label position.
    Enum(u32, u32),
}

fn canonical(value: &Value) -> Canonical<'_> {
    match value {
        Value::Null => Canonical::Null,
        Value::Boolean(b) => Canonical::Boolean(*b),
        Value::SmallInt(i) => number(f64::from(*i)),
        Value::Integer(i) => number(f64::from(*i)),
        Value::BigInt(i) => number(*i as f64),
        Value::Real(x) => number(f64::from(*x)),
        Value::Double(x) => number(*x),
        Value::Numeric(d) => number(match d.is_integer().then(|| d.to_i64()).flatten() {
            Some(i) => i as f64,
            None => d.to_string().parse().unwrap_or(f64::NAN),
        }),
        Value::Text(s) | Value::Json(s) | Value::Jsonb(s) => Canonical::Text(s),
        Value::Bytea(b) => Canonical::Bytes(b),
        Value::Uuid(u) => Canonical::Uuid(u),
        Value::Interval(i) => Canonical::Span(i.span()),
        Value::Enum { oid, position } => Canonical::Enum(*oid, *position),
        Value::Time(t) => Canonical::Instant(i128::from(*t)),
        Value::Date(_) | Value::Timestamp(_) | Value::TimestampTz(_) => match value.instant() {
            Some(instant) => Canonical::Instant(instant),
            None => Canonical::Null,
        },
    }
}

fn number(x: f64) -> Canonical<'static> {
    let x = if x.is_nan() {
        f64::NAN
    } else if x == 0.0 {
        0.0
    } else {
        x
    };
    Canonical::Number(x.to_bits())
}

/// Hashes rows of values so that rows equal value by value hash alike.
pub(super) struct RowHasher(ahash::RandomState);

impl RowHasher {
    pub(super) fn new() -> Self {
        RowHasher(ahash::RandomState::new())
    }

    /// The hash of `values`, NULLs included (as grouping compares them: equal to each other).
    pub(super) fn hash(&self, values: &[Value]) -> u64 {
        let mut hasher = self.0.build_hasher();
        for value in values {
            canonical(value).hash(&mut hasher);
        }
        hasher.finish()
    }

    /// The hash of join key values; None if one is NULL (such a key equals nothing).
    pub(super) fn hash_key(&self, values: &[Value]) -> Option<u64> {
        match values.iter().any(Value::is_null) {
            true => None,
            false => Some(self.hash(values)),
        }
    }
}
