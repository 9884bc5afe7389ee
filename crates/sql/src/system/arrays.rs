//! Arrays as the catalog has them: text in PostgreSQL's array syntax (`{a,"b c",NULL}`, 1-based),
//! or in the `int2vector` / `oidvector` form (`1 3`, 0-based), one dimension only (read and
//! written by `steady_types::array`). This module implements the array functions and operators client catalog
//! queries use on it: `array_to_string`, `array_upper`, `x = ANY(arr)`, `arr[i]`, `ARRAY(...)`.

use steady_types::{DataType, Value};

use crate::error::Result;
use crate::execution::executor::ExecCtx;
use crate::execution::expr::Expr;
use crate::execution::functions::Function;
use crate::types::ops::text_of;
use steady_types::array::{quote_element, TextArray};

fn array_arg(value: &Value) -> Result<TextArray> {
    Ok(TextArray::parse(&text_of(value))?)
}

/// An integer argument, also from text (arguments of catalog functions may be untyped literals).
pub fn int_arg(value: &Value) -> Option<i64> {
    match value {
        Value::SmallInt(v) => Some(i64::from(*v)),
        Value::Integer(v) => Some(i64::from(*v)),
        Value::BigInt(v) => Some(*v),
        Value::Text(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn first_dimension(args: &[Value]) -> bool {
    int_arg(&args[1]) == Some(1)
}

/// `array_to_string(arr, sep [, null_text])`.
pub fn array_to_string(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let array = array_arg(&args[0])?;
    let separator = text_of(&args[1]);
    let null_text = args.get(2).map(text_of);
    let parts: Vec<String> = array
        .elements
        .into_iter()
        .filter_map(|e| e.or_else(|| null_text.clone()))
        .collect();
    Ok(Value::Text(parts.join(&separator)))
}

/// `array_upper(arr, 1)`: NULL for an empty array or another dimension.
pub fn array_upper(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let array = array_arg(&args[0])?;
    Ok(match array.upper() {
        Some(upper) if first_dimension(args) => Value::Integer(upper as i32),
        _ => Value::Null,
    })
}

/// `array_lower(arr, 1)`.
pub fn array_lower(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let array = array_arg(&args[0])?;
    Ok(match array.upper() {
        Some(_) if first_dimension(args) => Value::Integer(array.lower as i32),
        _ => Value::Null,
    })
}

/// `array_length(arr, 1)`.
pub fn array_length(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let array = array_arg(&args[0])?;
    Ok(match array.upper() {
        Some(_) if first_dimension(args) => Value::Integer(array.elements.len() as i32),
        _ => Value::Null,
    })
}

/// `cardinality(arr)`.
pub fn cardinality(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    Ok(Value::Integer(array_arg(&args[0])?.elements.len() as i32))
}

/// `array_position(arr, x)`: the subscript of the first element equal to `x` (as text).
pub fn array_position(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    if args[0].is_null() || args[1].is_null() {
        return Ok(Value::Null);
    }
    let array = array_arg(&args[0])?;
    let wanted = text_of(&args[1]);
    Ok(array
        .elements
        .iter()
        .position(|e| e.as_deref() == Some(wanted.as_str()))
        .map_or(Value::Null, |i| {
            Value::Integer((array.lower + i as i64) as i32)
        }))
}

/// `arr[i]`: the element (an integer when it reads as one), NULL outside the array.
pub fn subscript(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let array = array_arg(&args[0])?;
    let Some(index) = int_arg(&args[1]) else {
        return Ok(Value::Null);
    };
    let element = usize::try_from(index - array.lower)
        .ok()
        .and_then(|i| array.elements.get(i).cloned().flatten());
    Ok(match element {
        Some(text) => text.parse().map_or(Value::Text(text), Value::BigInt),
        None => Value::Null,
    })
}

/// `arr[lower:upper]`: the elements with subscripts in `lower..=upper` (clamped to the array's),
/// as a new array (subscripts from 1); `{}` when none.
pub fn slice(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let array = array_arg(&args[0])?;
    let (Some(lower), Some(upper)) = (int_arg(&args[1]), int_arg(&args[2])) else {
        return Ok(Value::Null);
    };
    let first = lower.max(array.lower) - array.lower;
    let end = upper.saturating_sub(array.lower).saturating_add(1);
    let end = end.min(array.elements.len() as i64);
    let kept: Vec<Value> = (first..end)
        .map(|i| array.elements[i as usize].clone())
        .map(|e| e.map_or(Value::Null, Value::Text))
        .collect();
    Ok(Value::Text(steady_types::array::array_text(&kept)))
}

/// `array_dims(arr)`: its bounds as `[1:3]`; NULL for an empty array.
pub fn array_dims(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let array = array_arg(&args[0])?;
    if array.elements.is_empty() {
        return Ok(Value::Null);
    }
    let upper = array.lower + array.elements.len() as i64 - 1;
    Ok(Value::Text(format!("[{}:{upper}]", array.lower)))
}

/// One element of `ARRAY(subquery)`, quoted for the array's text (NULL is `NULL`).
pub fn array_element_text(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    Ok(Value::Text(quote_element(&args[0])))
}

/// `ARRAY[a, b, ...]`: the array's text from its elements.
pub fn array_of(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    Ok(Value::Text(steady_types::array::array_text(args)))
}

/// `a || b` of two arrays (an element operand comes as a one-element array): their elements one
/// after the other; a NULL array counts as empty, and two give NULL.
pub fn array_cat(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    if args.iter().all(Value::is_null) {
        return Ok(Value::Null);
    }
    let mut elements = Vec::new();
    for array in args.iter().filter(|a| !a.is_null()) {
        let parsed = array_arg(array)?.elements.into_iter();
        elements.extend(parsed.map(|e| e.map_or(Value::Null, Value::Text)));
    }
    Ok(Value::Text(steady_types::array::array_text(&elements)))
}

/// `array_append(arr, x)`: `arr` with `x` after its elements (a NULL array counts as empty).
pub fn array_append(args: &[Value], ctx: &mut ExecCtx) -> Result<Value> {
    let element = Value::Text(steady_types::array::array_text(&args[1..2]));
    array_cat(&[args[0].clone(), element], ctx)
}

/// `array_prepend(x, arr)`: `arr` with `x` before its elements (a NULL array counts as empty).
pub fn array_prepend(args: &[Value], ctx: &mut ExecCtx) -> Result<Value> {
    let element = Value::Text(steady_types::array::array_text(&args[0..1]));
    array_cat(&[element, args[1].clone()], ctx)
}

/// `ARRAY(subquery)` from its elements' texts joined by commas (NULL when there were none).
pub fn array_from_elements(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    Ok(Value::Text(match &args[0] {
        Value::Null => "{}".to_owned(),
        joined => format!("{{{}}}", text_of(joined)),
    }))
}

/// `current_schemas(include_implicit)`.
pub fn current_schemas(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let implicit = matches!(args[0], Value::Boolean(true));
    Ok(Value::Text(
        if implicit {
            "{pg_catalog,public}"
        } else {
            "{public}"
        }
        .to_owned(),
    ))
}

/// `array_remove(arr, x)`: `arr` without the elements equal to `x` (without its NULLs when `x` is
/// NULL); NULL for a NULL array.
pub fn array_remove(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    if args[0].is_null() {
        return Ok(Value::Null);
    }
    let removed = (!args[1].is_null()).then(|| text_of(&args[1]));
    let kept: Vec<Value> = array_arg(&args[0])?
        .elements
        .into_iter()
        .filter(|e| *e != removed)
        .map(|e| e.map_or(Value::Null, Value::Text))
        .collect();
    Ok(Value::Text(steady_types::array::array_text(&kept)))
}

/// `array_replace(arr, from, to)`: `arr` with each element equal to `from` (compared as text,
/// as [`array_remove`]; NULL replaces NULLs) replaced by `to`.
pub fn array_replace(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    if args[0].is_null() {
        return Ok(Value::Null);
    }
    let from = (!args[1].is_null()).then(|| text_of(&args[1]));
    let replaced: Vec<Value> = array_arg(&args[0])?
        .elements
        .into_iter()
        .map(|e| match e {
            e if e == from => args[2].clone(),
            e => e.map_or(Value::Null, Value::Text),
        })
        .collect();
    Ok(Value::Text(steady_types::array::array_text(&replaced)))
}

/// `array_ndims(arr)`: 1, or NULL for an empty array (SteadyDB's arrays have one dimension).
pub fn array_ndims(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let array = array_arg(&args[0])?;
    Ok(match array.elements.is_empty() {
        true => Value::Null,
        false => Value::Integer(1),
    })
}

/// Arrays compare element by element, by the elements' type (`{9} < {10}` for integers), a
/// shorter array before a longer one it begins, NULL elements after the others — as PostgreSQL
/// compares them. An array value is its text, so the binder has comparisons and ORDER BY of
/// arrays compare [`ARRAY_ORDER_KEY`]s instead: the elements' index key encoding (whose byte
/// order is the elements' SQL order), ended by a byte below any element's first.
pub static ARRAY_ORDER_KEY: Function =
    crate::execution::functions::strict("array_order_key", (2, 2), bytea, array_order_key);

fn bytea(_: &[Option<DataType>]) -> Option<DataType> {
    Some(DataType::Bytea)
}

/// `expr` as what comparisons and sorts of its type must compare: the [`ARRAY_ORDER_KEY`] of an
/// array, any other expression as it is.
pub fn ordered_array(expr: Expr, ty: Option<DataType>) -> Expr {
    crate::execution::functions::call_on_array(&ARRAY_ORDER_KEY, expr, ty)
}

fn array_order_key(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let element = crate::execution::functions::array_element_type(&text_of(&args[1]));
    let elements = steady_types::array::array_values(&text_of(&args[0]), &element)?;
    let mut key = steady_engine::codec::encode_key(&elements);
    key.push(0);
    Ok(Value::Bytea(key))
}

/// An array as text: the text PostgreSQL prints for it (a `timestamptz[]`'s elements in the
/// session's zone, see [`steady_types::array::array_output`]). Bound by [`shown_array`].
pub static ARRAY_SHOWN: Function =
    crate::execution::functions::strict("array_shown", (2, 2), text, array_shown);

fn text(_: &[Option<DataType>]) -> Option<DataType> {
    Some(DataType::Text)
}

/// `expr` of type `ty` as the text it prints as, for a cast to a string type: an array whose
/// kept text is not what it prints goes through [`ARRAY_SHOWN`], anything else as it is.
pub fn shown_array(expr: Expr, ty: Option<DataType>) -> Expr {
    match ty.as_ref().and_then(DataType::element_type) {
        Some(DataType::TimestampTz) => {
            crate::execution::functions::call_on_array(&ARRAY_SHOWN, expr, ty)
        }
        _ => expr,
    }
}

fn array_shown(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let element = crate::execution::functions::array_element_type(&text_of(&args[1]));
    let text = text_of(&args[0]);
    Ok(Value::Text(
        steady_types::array::array_output(&text, &element).unwrap_or(text),
    ))
}

/// `x op ANY (arr)` / `x op ALL (arr)`, bound by the binder as this call with arguments
/// `[x, arr, op, all, element type]`: each element read as the element type (the array's, or
/// `x`'s for an array of unknown type such as a catalog vector), compared with `x` by `op`, and
/// the answers combined by SQL's three-valued logic — ANY is true if one comparison is, NULL if
/// none is but one is NULL, else false; ALL the other way round; over no element ANY is false
/// and ALL true.
pub static ARRAY_QUANTIFIED: Function = crate::execution::functions::lenient(
    "array_quantified",
    (5, 5),
    crate::execution::functions::boolean,
    array_quantified,
);

fn array_quantified(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    if args[1].is_null() {
        return Ok(Value::Null);
    }
    let op = comparison_named(&text_of(&args[2]));
    let all = args[3] == Value::Boolean(true);
    let element = crate::execution::functions::array_element_type(&text_of(&args[4]));
    let mut unknown = false;
    for item in array_arg(&args[1])?.elements {
        let element = match item {
            Some(text) => Value::parse(&element, &text)?,
            None => Value::Null,
        };
        match crate::types::ops::compare(op, &args[0], &element) {
            Value::Boolean(holds) if holds != all => return Ok(Value::Boolean(holds)),
            Value::Boolean(_) => {}
            _ => unknown = true,
        }
    }
    Ok(if unknown {
        Value::Null
    } else {
        Value::Boolean(all)
    })
}

/// `a @> b`, `a <@ b` and `a && b` of arrays, called as `[a, b, operator, element type]`: an
/// element matches an element of the other array equal to it by its type; a NULL element
/// matches none, as in PostgreSQL (so `{1,NULL} @> {NULL}` is false).
pub static ARRAY_SET_OPERATOR: Function = crate::execution::functions::strict(
    "array_set_operator",
    (4, 4),
    crate::execution::functions::boolean,
    array_set_operator,
);

fn array_set_operator(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let element = crate::execution::functions::array_element_type(&text_of(&args[3]));
    let elements = |value: &Value| steady_types::array::array_values(&text_of(value), &element);
    let (a, b) = (elements(&args[0])?, elements(&args[1])?);
    let within = |item: &Value, of: &[Value]| {
        of.iter()
            .any(|other| item.compare(other).is_some_and(|o| o.is_eq()))
    };
    Ok(Value::Boolean(match text_of(&args[2]).as_str() {
        "@>" => b.iter().all(|item| within(item, &a)),
        "<@" => a.iter().all(|item| within(item, &b)),
        _ => a.iter().any(|item| within(item, &b)),
    }))
}

fn comparison_named(symbol: &str) -> crate::types::ops::CmpOp {
    use crate::types::ops::CmpOp;
    [
        CmpOp::Eq,
        CmpOp::NotEq,
        CmpOp::Lt,
        CmpOp::LtEq,
        CmpOp::Gt,
        CmpOp::GtEq,
    ]
    .into_iter()
    .find(|op| op.symbol() == symbol)
    .unwrap_or(CmpOp::Eq)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Vec<Option<String>> {
        TextArray::parse(text).expect("parses").elements
    }

    #[test]
    fn array_text_reads_quotes_and_nulls() {
        let s = |t: &str| Some(t.to_owned());
        assert_eq!(parsed("{}"), Vec::<Option<String>>::new());
        assert_eq!(parsed("{1,2}"), vec![s("1"), s("2")]);
        assert_eq!(
            parsed("{\"a,b\",NULL,\"NULL\"}"),
            vec![s("a,b"), None, s("NULL")]
        );
        assert_eq!(TextArray::parse("1 3").expect("vector").lower, 0);
        assert!(TextArray::parse("{1,2").is_err());
    }

    #[test]
    fn elements_are_quoted_when_needed() {
        assert_eq!(quote_element(&Value::Text("ab".into())), "ab");
        assert_eq!(quote_element(&Value::Text("a b".into())), "\"a b\"");
        assert_eq!(quote_element(&Value::Text("".into())), "\"\"");
        assert_eq!(quote_element(&Value::Null), "NULL");
    }
}
