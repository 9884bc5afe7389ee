//! Set-returning functions in a select list, as in
//! `SELECT unnest(indkey), generate_subscripts(indkey, 1) FROM pg_index`: the
//! [`crate::execution::plan::Plan::ProjectSet`] node computes each call's rows for an input row
//! and gives out as many rows as the longest call has, the input's columns followed by one column
//! per call, a shorter call's column NULL past its end (PostgreSQL 10's rule); an input row whose
//! calls all give no rows gives none.
//!
//! Arrays are their text form (see `steady_types::array`): `unnest` gives each element as an
//! untyped value (its type is the one the context asks for, as for `arr[i]`).

use steady_types::json::Json;
use steady_types::{DataType, Value};

use crate::error::{Result, SqlError};
use crate::execution::expr::Expr;
use crate::execution::json;
use std::cmp::Ordering;

use crate::types::ops::{arith, as_i64, ArithOp};
use steady_types::array::TextArray;

/// A set-returning function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SetFunction {
    Unnest,
    GenerateSubscripts,
    GenerateSeries,
    /// `json_array_elements` / `jsonb_array_elements`, or their `_text` forms.
    JsonArrayElements {
        binary: bool,
        text: bool,
    },
    JsonObjectKeys,
    /// The keys (`value: false`) or the values of an object's members, as `json_each` /
    /// `jsonb_each` and their `_text` forms give them in FROM: two calls on one document make
    /// its two columns, row by row ([`json_each_columns`]).
    JsonEach {
        binary: bool,
        text: bool,
        value: bool,
    },
    RegexpMatches,
    RegexpSplitToTable,
}

/// One call of a set-returning function in a select list.
#[derive(Debug, Clone)]
pub struct SetCall {
    pub function: SetFunction,
    pub args: Vec<Expr>,
}

impl SetFunction {
    pub fn by_name(name: &str) -> Option<SetFunction> {
        use SetFunction::*;
        Some(match name {
            "unnest" => Unnest,
            "generate_subscripts" => GenerateSubscripts,
            "generate_series" => GenerateSeries,
            "json_array_elements" => JsonArrayElements {
                binary: false,
                text: false,
            },
            "jsonb_array_elements" => JsonArrayElements {
                binary: true,
                text: false,
            },
            "json_array_elements_text" | "jsonb_array_elements_text" => JsonArrayElements {
                binary: false,
                text: true,
            },
            "json_object_keys" | "jsonb_object_keys" => JsonObjectKeys,
            "regexp_matches" => RegexpMatches,
            "regexp_split_to_table" => RegexpSplitToTable,
            _ => return None,
        })
    }

    /// The argument counts the function takes.
    pub fn arguments(self) -> (usize, usize) {
        match self {
            SetFunction::GenerateSubscripts => (2, 2),
            SetFunction::GenerateSeries => (2, 3),
            SetFunction::RegexpMatches | SetFunction::RegexpSplitToTable => (2, 3),
            _ => (1, 1),
        }
    }

    /// The type of the values it gives (None: untyped, for `unnest`'s elements).
    pub fn result_type(self, args: &[Option<DataType>]) -> Option<DataType> {
        match self {
            SetFunction::Unnest => None,
            SetFunction::GenerateSubscripts => Some(DataType::Integer),
            SetFunction::GenerateSeries => match args.first().copied().flatten() {
                Some(DataType::SmallInt) | None => Some(DataType::Integer),
                first => first,
            },
            SetFunction::JsonArrayElements { text: true, .. }
            | SetFunction::JsonEach { value: false, .. }
            | SetFunction::JsonEach { text: true, .. }
            | SetFunction::JsonObjectKeys
            | SetFunction::RegexpSplitToTable => Some(DataType::Text),
            SetFunction::RegexpMatches => Some(DataType::TextArray),
            SetFunction::JsonArrayElements { binary: true, .. }
            | SetFunction::JsonEach { binary: true, .. } => Some(DataType::Jsonb),
            SetFunction::JsonArrayElements { .. } | SetFunction::JsonEach { .. } => {
                Some(DataType::Json)
            }
        }
    }

    /// The values of one call with arguments `args` (none where an argument is NULL).
    pub fn values(self, args: &[Value]) -> Result<Vec<Value>> {
        if args.iter().any(Value::is_null) {
            return Ok(Vec::new());
        }
        match self {
            SetFunction::Unnest => Ok(TextArray::parse(&args[0].to_string())?
                .elements
                .into_iter()
                .map(|e| e.map_or(Value::Null, Value::Text))
                .collect()),
            SetFunction::GenerateSubscripts => {
                let array = TextArray::parse(&args[0].to_string())?;
                if as_i64(&args[1]) != 1 || array.elements.is_empty() {
                    return Ok(Vec::new());
                }
                let lower = array.lower;
                let upper = lower + array.elements.len() as i64 - 1;
                Ok((lower..=upper).map(|i| Value::Integer(i as i32)).collect())
            }
            SetFunction::GenerateSeries => series(args),
            SetFunction::RegexpMatches => crate::execution::regex::regexp_matches(args),
            SetFunction::RegexpSplitToTable => Ok(crate::execution::regex::regexp_split(args)?
                .into_iter()
                .map(Value::Text)
                .collect()),
            SetFunction::JsonArrayElements { binary, text } => {
                let Json::Array(items) = json::document(&args[0])? else {
                    return Err(SqlError::new(
                        "22023",
                        "cannot extract elements from an object or a scalar",
                    ));
                };
                Ok(items
                    .into_iter()
                    .map(|item| json_value(item, binary, text))
                    .collect())
            }
            SetFunction::JsonEach {
                binary,
                text,
                value,
            } => {
                let document = json::document(&args[0])?;
                let document = if binary {
                    document.into_jsonb()
                } else {
                    document
                };
                let Json::Object(members) = document else {
                    let name = if binary { "jsonb_each" } else { "json_each" };
                    return Err(SqlError::new(
                        "22023",
                        format!("cannot call {name} on a non-object"),
                    ));
                };
                Ok(members
                    .into_iter()
                    .map(|(key, item)| match value {
                        false => Value::Text(key),
                        true => json_value(item, binary, text),
                    })
                    .collect())
            }
            SetFunction::JsonObjectKeys => match json::document(&args[0])?.into_jsonb() {
                Json::Object(members) => {
                    Ok(members.into_iter().map(|(k, _)| Value::Text(k)).collect())
                }
                _ => Err(SqlError::new(
                    "22023",
                    "cannot call jsonb_object_keys on a scalar or an array",
                )),
            },
        }
    }
}

/// An element or member value as the json functions give it: its text (`_text` forms; NULL for
/// a JSON null), or json / jsonb.
fn json_value(item: Json, binary: bool, text: bool) -> Value {
    match (text, binary) {
        (true, _) => item.to_unquoted().map_or(Value::Null, Value::Text),
        (false, true) => Value::Jsonb(item.into_jsonb().to_jsonb_text()),
        (false, false) => Value::Json(item.to_jsonb_text()),
    }
}

/// `json_each(doc)` and its kin in FROM: the two calls giving their `key` and `value` columns.
pub fn json_each_columns(name: &str) -> Option<[(SetFunction, &'static str); 2]> {
    let (binary, text) = match name {
        "json_each" => (false, false),
        "jsonb_each" => (true, false),
        "json_each_text" => (false, true),
        "jsonb_each_text" => (true, true),
        _ => return None,
    };
    let part = |value| SetFunction::JsonEach {
        binary,
        text,
        value,
    };
    Some([(part(false), "key"), (part(true), "value")])
}

/// The most rows one `generate_series` call in a select list may give.
const MAX_SERIES: i64 = 100_000_000;

fn series(args: &[Value]) -> Result<Vec<Value>> {
    let mut series = Series::new(args[0].clone(), args[1].clone(), args.get(2).cloned())?;
    let mut values = Vec::new();
    while let Some(value) = series.next_value() {
        if values.len() as i64 >= MAX_SERIES {
            return Err(SqlError::new(
                "54000",
                format!("generate_series in a select list gives at most {MAX_SERIES} rows"),
            ));
        }
        values.push(value);
    }
    Ok(values)
}

/// `generate_series`'s values: from `start` to `stop` by `step` (1 when none), of whatever type
/// `start + step` is (in FROM and in a select list alike).
pub struct Series {
    next: Value,
    stop: Value,
    step: Value,
    /// Which way the step goes: a number's sign, or which way an interval moves `start`; None
    /// (a NULL step) gives no rows, as PostgreSQL's strict function does.
    direction: Option<Ordering>,
}

impl Series {
    pub fn new(start: Value, stop: Value, step: Option<Value>) -> Result<Series> {
        let step = step.unwrap_or(Value::Integer(1));
        let direction = step.compare(&Value::Integer(0)).or_else(|| {
            let moved = arith(ArithOp::Add, &start, &step).ok()?;
            moved.compare(&start)
        });
        if direction == Some(Ordering::Equal) {
            return Err(SqlError::new("22023", "step size cannot equal zero"));
        }
        Ok(Series {
            next: start,
            stop,
            step,
            direction,
        })
    }

    pub fn next_value(&mut self) -> Option<Value> {
        let done = match (self.next.compare(&self.stop), self.direction) {
            (None, _) | (_, None) => true,
            (Some(o), Some(Ordering::Greater)) => o == Ordering::Greater,
            (Some(o), _) => o == Ordering::Less,
        };
        if done {
            return None;
        }
        let current = self.next.clone();
        self.next = match arith(ArithOp::Add, &current, &self.step) {
            Ok(v) => v
                .cast_to(&current.data_type().unwrap_or(DataType::BigInt))
                .unwrap_or(Value::Null),
            Err(_) => Value::Null,
        };
        Some(current)
    }
}
