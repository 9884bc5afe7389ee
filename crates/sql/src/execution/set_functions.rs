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
use crate::types::ops::as_i64;
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
            _ => return None,
        })
    }

    /// The argument counts the function takes.
    pub fn arguments(self) -> (usize, usize) {
        match self {
            SetFunction::GenerateSubscripts => (2, 2),
            SetFunction::GenerateSeries => (2, 3),
            _ => (1, 1),
        }
    }

    /// The type of the values it gives (None: untyped, for `unnest`'s elements).
    pub fn result_type(self, args: &[Option<DataType>]) -> Option<DataType> {
        match self {
            SetFunction::Unnest => None,
            SetFunction::GenerateSubscripts => Some(DataType::Integer),
            SetFunction::GenerateSeries => match args.iter().flatten().next() {
                Some(DataType::BigInt) => Some(DataType::BigInt),
                _ => Some(DataType::Integer),
            },
            SetFunction::JsonArrayElements { text: true, .. } | SetFunction::JsonObjectKeys => {
                Some(DataType::Text)
            }
            SetFunction::JsonArrayElements { binary: true, .. } => Some(DataType::Jsonb),
            SetFunction::JsonArrayElements { .. } => Some(DataType::Json),
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
            SetFunction::JsonArrayElements { binary, text } => {
                let Json::Array(items) = json::document(&args[0])? else {
                    return Err(SqlError::new(
                        "22023",
                        "cannot extract elements from an object or a scalar",
                    ));
                };
                Ok(items
                    .into_iter()
                    .map(|item| match (text, binary) {
                        (true, _) => item.to_unquoted().map_or(Value::Null, Value::Text),
                        (false, true) => Value::Jsonb(item.into_jsonb().to_jsonb_text()),
                        (false, false) => Value::Json(item.to_jsonb_text()),
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

/// The most rows one `generate_series` call in a select list may give.
const MAX_SERIES: i64 = 100_000_000;

fn series(args: &[Value]) -> Result<Vec<Value>> {
    let (start, stop) = (as_i64(&args[0]), as_i64(&args[1]));
    let step = args.get(2).map_or(1, as_i64);
    if step == 0 {
        return Err(SqlError::new("22023", "step size cannot equal zero"));
    }
    let count = ((stop - start) / step + 1).max(0);
    if count > MAX_SERIES {
        return Err(SqlError::new(
            "54000",
            format!("generate_series in a select list gives at most {MAX_SERIES} rows"),
        ));
    }
    let wide = matches!(args[0], Value::BigInt(_)) || matches!(args[1], Value::BigInt(_));
    Ok((0..count)
        .map(|i| start + i * step)
        .map(|v| {
            if wide {
                Value::BigInt(v)
            } else {
                Value::Integer(v as i32)
            }
        })
        .collect())
}
