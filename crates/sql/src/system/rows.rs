//! Building catalog rows: the engine has no `oid`, `name`, `"char"` or array types, so an oid is a
//! `bigint`, a name or `"char"` is `text`, and an array is its text form (`{1,2}`), or NULL where
//! nothing reads it.

use steady_types::Value;

use crate::execution::executor::Row;

pub type Rows = Vec<Row>;

pub fn oid(value: impl Into<i64>) -> Value {
    Value::BigInt(value.into())
}

pub fn name(text: &str) -> Value {
    Value::Text(text.to_owned())
}

pub fn flag(value: bool) -> Value {
    Value::Boolean(value)
}

/// A 1-based attribute number (`int2`).
pub fn attnum(position: usize) -> Value {
    Value::SmallInt(position as i16 + 1)
}

/// The `int2[]` of the attribute numbers of column positions: `{1,3}`.
pub fn attnum_array(positions: &[usize]) -> Value {
    let numbers: Vec<String> = positions.iter().map(|p| (p + 1).to_string()).collect();
    Value::Text(format!("{{{}}}", numbers.join(",")))
}

/// The `int2vector` of the attribute numbers of column positions: `1 3`.
pub fn attnum_vector(positions: &[usize]) -> Value {
    let numbers: Vec<String> = positions.iter().map(|p| (p + 1).to_string()).collect();
    Value::Text(numbers.join(" "))
}
