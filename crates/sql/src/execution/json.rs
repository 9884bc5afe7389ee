//! The json and jsonb operators and functions (the document model and its text forms are
//! `steady_types::json`).
//!
//! Operators are bound to the statics here (`->`, `->>`, `#>`, `#>>`, `@>`, `<@`, `?`, `?|`, `?&`,
//! `||`, `-`, `#-`); the functions users call by name are in [`FUNCTIONS`]. Each works on `json`
//! and `jsonb` alike and gives its result in the type it was asked for: the `json_` forms
//! give `json` text (kept as written for a document extracted from a json value, except for
//! spacing), the `jsonb_` forms canonical jsonb. An untyped string argument is read as JSON.
//! Arrays are their text form (`'{a,b}'` for a path), as elsewhere.

use steady_types::json::Json;
use steady_types::{DataType, Value};

use crate::error::{Result, SqlError};
use crate::execution::executor::ExecCtx;
use crate::execution::expr::Expr;
use crate::execution::functions::{boolean, integer, lenient, strict, text, Function};
use crate::types::ops::text_of;
use steady_types::array::TextArray;

fn json(_: &[Option<DataType>]) -> Option<DataType> {
    Some(DataType::Json)
}
fn jsonb(_: &[Option<DataType>]) -> Option<DataType> {
    Some(DataType::Jsonb)
}

/// The JSON document of a json, jsonb or untyped (text) value.
pub fn document(value: &Value) -> Result<Json> {
    match value {
        Value::Json(text) | Value::Jsonb(text) | Value::Text(text) => Ok(Json::parse(text)?),
        other => Err(SqlError::undefined_function(format!(
            "function expects json, got {}",
            crate::types::type_name(other.data_type())
        ))),
    }
}

/// A document as a value of `json` (`B` false) or `jsonb` (`B` true).
fn output<const B: bool>(json: Json) -> Value {
    if B {
        Value::Jsonb(json.into_jsonb().to_jsonb_text())
    } else {
        Value::Json(json.to_jsonb_text())
    }
}

/// A document built by a json builder (`json_build_object`...): jsonb canonical, json in
/// PostgreSQL's builder spacing.
fn built<const B: bool>(json: Json) -> Value {
    if B {
        output::<true>(json)
    } else {
        Value::Json(json.to_json_text())
    }
}

/// `to_json` / `to_jsonb` of a SQL value: numbers and booleans as themselves, json as its
/// document, dates and times in ISO 8601, anything else as its text.
pub fn to_document(value: &Value) -> Result<Json> {
    Ok(match value {
        Value::Null => Json::Null,
        Value::Boolean(b) => Json::Bool(*b),
        Value::SmallInt(_) | Value::Integer(_) | Value::BigInt(_) | Value::Numeric(_) => {
            Json::Number(value.to_string())
        }
        Value::Real(_) | Value::Double(_) => {
            let text = value.to_string();
            if text.chars().any(|c| c.is_ascii_alphabetic() && c != 'e') {
                Json::String(text)
            } else {
                Json::Number(steady_types::json::canonical_number(&text))
            }
        }
        Value::Json(_) | Value::Jsonb(_) => document(value)?,
        Value::Timestamp(_) | Value::TimestampTz(_) => Json::String(iso_timestamp(value)),
        other => Json::String(other.to_string()),
    })
}

/// A timestamp as JSON writes it: `2024-02-29T13:05:00`, with `+00:00` for timestamptz.
fn iso_timestamp(value: &Value) -> String {
    let text = value.to_string().replacen(' ', "T", 1);
    let offset_at = text.rfind(['+', '-']).filter(|&at| at > 10);
    match (value, offset_at) {
        (Value::TimestampTz(_), Some(at)) if text.len() - at == 3 => format!("{text}:00"),
        _ => text,
    }
}

/// `->`: an object's member (text key) or an array's element (integer index).
fn arrow<const B: bool>(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    Ok(step(args)?.map_or(Value::Null, output::<B>))
}

/// `->>`: the member or element as text.
fn arrow_text(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    Ok(step(args)?
        .and_then(|j| j.to_unquoted())
        .map_or(Value::Null, Value::Text))
}

fn step(args: &[Value]) -> Result<Option<Json>> {
    let doc = document(&args[0])?;
    let found = match &args[1] {
        Value::SmallInt(_) | Value::Integer(_) | Value::BigInt(_) => {
            doc.element(crate::types::ops::as_i64(&args[1]))
        }
        key => doc.member(&text_of(key)),
    };
    Ok(found.cloned())
}

/// The path steps of a text-array argument (`'{a,0}'`).
fn path_steps(value: &Value) -> Result<Vec<String>> {
    let array = TextArray::parse(&text_of(value))?;
    array
        .elements
        .into_iter()
        .map(|e| e.ok_or_else(|| SqlError::new("22004", "path element must not be null")))
        .collect()
}

/// `#>`: the element at a path given as a text array.
fn path<const B: bool>(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    found::<B>(&args[0], &path_steps(&args[1])?)
}

/// `#>>`: the element at a path, as text.
fn path_text(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    found_text(&args[0], &path_steps(&args[1])?)
}

/// `jsonb_extract_path(doc, VARIADIC steps)`.
fn extract_path<const B: bool>(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    found::<B>(&args[0], &variadic_steps(args))
}

fn extract_path_text(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    found_text(&args[0], &variadic_steps(args))
}

fn variadic_steps(args: &[Value]) -> Vec<String> {
    args[1..].iter().map(text_of).collect()
}

/// The element of `doc` at `steps`, as json or jsonb (NULL where there is none).
fn found<const B: bool>(doc: &Value, steps: &[String]) -> Result<Value> {
    let doc = document(doc)?;
    Ok(doc.at_path(steps).cloned().map_or(Value::Null, output::<B>))
}

/// The element of `doc` at `steps`, as text.
fn found_text(doc: &Value, steps: &[String]) -> Result<Value> {
    let doc = document(doc)?;
    Ok(doc
        .at_path(steps)
        .and_then(Json::to_unquoted)
        .map_or(Value::Null, Value::Text))
}

/// `@>`.
fn contains(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let (a, b) = (jsonb_doc(&args[0])?, jsonb_doc(&args[1])?);
    Ok(Value::Boolean(a.contains(&b)))
}

/// `<@`.
fn contained(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let (a, b) = (jsonb_doc(&args[0])?, jsonb_doc(&args[1])?);
    Ok(Value::Boolean(b.contains(&a)))
}

fn jsonb_doc(value: &Value) -> Result<Json> {
    Ok(document(value)?.into_jsonb())
}

/// `?`.
fn exists(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let doc = jsonb_doc(&args[0])?;
    Ok(Value::Boolean(doc.has_key(&text_of(&args[1]))))
}

/// `?|` (`ALL` false) and `?&` (`ALL` true).
fn exists_keys<const ALL: bool>(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let doc = jsonb_doc(&args[0])?;
    let keys = TextArray::parse(&text_of(&args[1]))?.elements;
    let mut present = keys.iter().flatten().map(|k| doc.has_key(k));
    Ok(Value::Boolean(if ALL {
        present.all(|p| p)
    } else {
        present.any(|p| p)
    }))
}

/// `||`: objects merged (the right side's members win), arrays (or a scalar and an array)
/// concatenated.
fn concat(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let (a, b) = (jsonb_doc(&args[0])?, jsonb_doc(&args[1])?);
    let joined = match (a, b) {
        (Json::Object(mut a), Json::Object(b)) => {
            a.extend(b);
            Json::Object(a)
        }
        (a, b) => {
            let items = |j: Json| match j {
                Json::Array(items) => items,
                other => vec![other],
            };
            let mut all = items(a);
            all.extend(items(b));
            Json::Array(all)
        }
    };
    Ok(output::<true>(joined))
}

/// `-`: an object without a key, or an array without an element (by index, or every string
/// element equal to a text).
fn delete(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let doc = jsonb_doc(&args[0])?;
    let result = match (doc, &args[1]) {
        (Json::Array(mut items), Value::SmallInt(_) | Value::Integer(_) | Value::BigInt(_)) => {
            let index = crate::types::ops::as_i64(&args[1]);
            let len = items.len() as i64;
            let at = if index < 0 { len + index } else { index };
            if (0..len).contains(&at) {
                items.remove(at as usize);
            }
            Json::Array(items)
        }
        (_, Value::SmallInt(_) | Value::Integer(_) | Value::BigInt(_)) => {
            return Err(SqlError::new(
                "22023",
                "cannot delete from object using integer index",
            ))
        }
        (Json::Object(members), key) => {
            let key = text_of(key);
            Json::Object(members.into_iter().filter(|(k, _)| *k != key).collect())
        }
        (Json::Array(items), key) => {
            let key = text_of(key);
            Json::Array(
                items
                    .into_iter()
                    .filter(|i| !matches!(i, Json::String(s) if *s == key))
                    .collect(),
            )
        }
        _ => return Err(SqlError::new("22023", "cannot delete from scalar")),
    };
    Ok(output::<true>(result))
}

/// `json_build_object(k1, v1, ...)` and `jsonb_build_object` (keys as text, not NULL).
fn build_object<const B: bool>(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    if !args.len().is_multiple_of(2) {
        return Err(
            SqlError::new("22023", "argument list must have even number of elements").with_hint(
                "The arguments of json_build_object() must consist of alternating keys and values.",
            ),
        );
    }
    if let Some(i) = args.chunks(2).position(|pair| pair[0].is_null()) {
        return Err(SqlError::new(
            "22023",
            format!("argument {}: key must not be null", 2 * i + 1),
        ));
    }
    if !B {
        let members = args.chunks(2).map(|pair| {
            let mut key = String::new();
            steady_types::json::write_string(&mut key, &text_of(&pair[0]));
            Ok(format!("{key} : {}", json_text(&pair[1])?))
        });
        return Ok(Value::Json(format!("{{{}}}", joined(members)?)));
    }
    let mut members = Vec::with_capacity(args.len() / 2);
    for pair in args.chunks(2) {
        members.push((text_of(&pair[0]), to_document(&pair[1])?));
    }
    Ok(built::<B>(Json::Object(members)))
}

/// `json_build_array(...)` and `jsonb_build_array`.
fn build_array<const B: bool>(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    if !B {
        let items = args.iter().map(json_text);
        return Ok(Value::Json(format!("[{}]", joined(items)?)));
    }
    let items = args.iter().map(to_document).collect::<Result<_>>()?;
    Ok(built::<B>(Json::Array(items)))
}

/// Json texts apart by `, `, as PostgreSQL's json builders write them.
fn joined(texts: impl Iterator<Item = Result<String>>) -> Result<String> {
    Ok(texts.collect::<Result<Vec<String>>>()?.join(", "))
}

/// `to_json(x)`: json keeps a json or jsonb argument's text as it is (PostgreSQL's json
/// builders never rewrite a json value); `to_jsonb` normalises.
fn to_json<const B: bool>(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    if !B {
        return Ok(Value::Json(json_text(&args[0])?));
    }
    Ok(built::<B>(to_document(&args[0])?))
}

fn type_of(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    Ok(Value::Text(document(&args[0])?.type_name().to_owned()))
}

fn array_length(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    match document(&args[0])? {
        Json::Array(items) => Ok(Value::Integer(items.len() as i32)),
        Json::Object(_) => Err(SqlError::new(
            "22023",
            "cannot get array length of a non-array",
        )),
        _ => Err(SqlError::new(
            "22023",
            "cannot get array length of a scalar",
        )),
    }
}

/// `jsonb_pretty`: four-space indentation, one member or element per line.
fn pretty(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let mut out = String::new();
    write_pretty(&jsonb_doc(&args[0])?, 0, &mut out);
    Ok(Value::Text(out))
}

fn write_pretty(json: &Json, depth: usize, out: &mut String) {
    let indent = |out: &mut String, depth: usize| out.push_str(&"    ".repeat(depth));
    match json {
        Json::Array(items) if !items.is_empty() => {
            out.push_str("[\n");
            for (i, item) in items.iter().enumerate() {
                indent(out, depth + 1);
                write_pretty(item, depth + 1, out);
                out.push_str(if i + 1 < items.len() { ",\n" } else { "\n" });
            }
            indent(out, depth);
            out.push(']');
        }
        Json::Object(members) if !members.is_empty() => {
            out.push_str("{\n");
            for (i, (key, value)) in members.iter().enumerate() {
                indent(out, depth + 1);
                steady_types::json::write_string(out, key);
                out.push_str(": ");
                write_pretty(value, depth + 1, out);
                out.push_str(if i + 1 < members.len() { ",\n" } else { "\n" });
            }
            indent(out, depth);
            out.push('}');
        }
        Json::Array(_) => {
            out.push_str("[\n");
            indent(out, depth);
            out.push(']');
        }
        Json::Object(_) => {
            out.push_str("{\n");
            indent(out, depth);
            out.push('}');
        }
        other => out.push_str(&other.to_jsonb_text()),
    }
}

fn strip_nulls<const B: bool>(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    fn strip(json: Json) -> Json {
        match json {
            Json::Object(members) => Json::Object(
                members
                    .into_iter()
                    .filter(|(_, v)| *v != Json::Null)
                    .map(|(k, v)| (k, strip(v)))
                    .collect(),
            ),
            Json::Array(items) => Json::Array(items.into_iter().map(strip).collect()),
            other => other,
        }
    }
    Ok(output::<B>(strip(document(&args[0])?)))
}

/// `jsonb_set(target, path, new [, create_missing])`: the document with the element at `path`
/// replaced (or, when `create_missing` and only the last step is missing, added).
fn set(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    if args[..3].iter().any(Value::is_null) {
        return Ok(Value::Null);
    }
    let mut doc = jsonb_doc(&args[0])?;
    let steps = path_steps(&args[1])?;
    let new = jsonb_doc(&args[2])?;
    let create = !matches!(args.get(3), Some(Value::Boolean(false)));
    set_at(&mut doc, &steps, new, create)?;
    Ok(output::<true>(doc))
}

fn set_at(json: &mut Json, steps: &[String], new: Json, create: bool) -> Result<()> {
    let Some((first, rest)) = steps.split_first() else {
        *json = new;
        return Ok(());
    };
    match json {
        Json::Object(members) => match members.iter_mut().find(|(k, _)| k == first) {
            Some((_, value)) => set_at(value, rest, new, create)?,
            None if create && rest.is_empty() => members.push((first.clone(), new)),
            None => {}
        },
        Json::Array(items) => {
            let index: i64 = first.trim().parse().map_err(|_| {
                SqlError::new(
                    "22P02",
                    format!("path element at position 1 is not an integer: \"{first}\""),
                )
            })?;
            let len = items.len() as i64;
            let at = if index < 0 { len + index } else { index };
            if (0..len).contains(&at) {
                set_at(&mut items[at as usize], rest, new, create)?;
            } else if create && rest.is_empty() {
                if at < 0 {
                    items.insert(0, new);
                } else {
                    items.push(new);
                }
            }
        }
        _ => return Err(SqlError::new("22023", "cannot set path in scalar")),
    }
    Ok(())
}

pub static JSON_ARROW: Function = strict("json_object_field", (2, 2), json, arrow::<false>);
pub static JSONB_ARROW: Function = strict("jsonb_object_field", (2, 2), jsonb, arrow::<true>);
pub static ARROW_TEXT: Function = strict("json_object_field_text", (2, 2), text, arrow_text);
pub static JSON_PATH: Function = strict("json_extract_path_op", (2, 2), json, path::<false>);
pub static JSONB_PATH: Function = strict("jsonb_extract_path_op", (2, 2), jsonb, path::<true>);
pub static PATH_TEXT: Function = strict("json_extract_path_text_op", (2, 2), text, path_text);
pub static CONTAINS: Function = strict("jsonb_contains", (2, 2), boolean, contains);
pub static CONTAINED: Function = strict("jsonb_contained", (2, 2), boolean, contained);
pub static EXISTS: Function = strict("jsonb_exists", (2, 2), boolean, exists);
pub static EXISTS_ANY: Function = strict("jsonb_exists_any", (2, 2), boolean, exists_keys::<false>);
pub static EXISTS_ALL: Function = strict("jsonb_exists_all", (2, 2), boolean, exists_keys::<true>);
pub static CONCAT: Function = strict("jsonb_concat", (2, 2), jsonb, concat);
pub static DELETE: Function = strict("jsonb_delete", (2, 2), jsonb, delete);

/// `row_to_json` of a whole row, its columns' names and values given alternately (bound by the
/// binder from `row_to_json(t)`; not callable by name).
pub static ROW_TO_JSON: Function = lenient("row_to_json", (0, 2000), json, row_to_json);

/// A row as json, as PostgreSQL writes one: `{"a":1,"b":"x"}`, a json or jsonb value as its
/// own text.
fn row_to_json(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let mut out = String::from("{");
    for (i, pair) in args.chunks(2).enumerate() {
        if i > 0 {
            out.push(',');
        }
        steady_types::json::write_string(&mut out, &text_of(&pair[0]));
        out.push(':');
        out.push_str(&json_text(&pair[1])?);
    }
    out.push('}');
    Ok(Value::Json(out))
}

/// A value's json text inside a row or a `json_agg`: a json or jsonb value as its own text,
/// any other as `to_json` writes it.
fn json_text(value: &Value) -> Result<String> {
    Ok(match value {
        Value::Json(text) | Value::Jsonb(text) => text.clone(),
        other => to_document(other)?.to_jsonb_text(),
    })
}

/// `json_agg`'s document: `[a, b]`, the items apart by `separator`, each item's json text as
/// [`json_text`] writes it (a row from `row_to_json` kept as written), NULL as null.
pub fn json_agg_text(values: impl Iterator<Item = Value>, separator: &str) -> Result<Value> {
    let mut out = String::from("[");
    for (i, value) in values.enumerate() {
        if i > 0 {
            out.push_str(separator);
        }
        out.push_str(&json_text(&value)?);
    }
    out.push(']');
    Ok(Value::Json(out))
}

/// An array as json (`[1,2]`, `["a",null]`): the binder wraps an array given to a json builder
/// (`to_json`, `json_build_object`, a whole row ...) in this call, whose second argument names
/// the element type, since an array value is its text (see [`array_as_json`]).
pub static ARRAY_TO_JSON: Function = strict("array_to_json", (2, 2), json, array_to_json);

/// The call of [`ARRAY_TO_JSON`] for an array-typed `expr` of type `ty`; any other expression as
/// it is.
pub fn array_as_json(expr: Expr, ty: Option<DataType>) -> Expr {
    crate::execution::functions::call_on_array(&ARRAY_TO_JSON, expr, ty)
}

fn array_to_json(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let element = crate::execution::functions::array_element_type(&text_of(&args[1]));
    let texts = TextArray::parse(&text_of(&args[0]))?
        .elements
        .into_iter()
        .map(|item| {
            let value = item.map_or(Ok(Value::Null), |text| Value::parse(&element, &text))?;
            Ok(to_document(&value)?.to_jsonb_text())
        })
        .collect::<Result<Vec<String>>>()?;
    Ok(Value::Json(format!("[{}]", texts.join(","))))
}

/// The json functions users call by name.
pub static FUNCTIONS: &[Function] = &[
    lenient("json_build_object", (0, 100), json, build_object::<false>),
    lenient("jsonb_build_object", (0, 100), jsonb, build_object::<true>),
    lenient("json_build_array", (0, 100), json, build_array::<false>),
    lenient("jsonb_build_array", (0, 100), jsonb, build_array::<true>),
    strict("to_json", (1, 1), json, to_json::<false>),
    strict("to_jsonb", (1, 1), jsonb, to_json::<true>),
    strict("json_typeof", (1, 1), text, type_of),
    strict("jsonb_typeof", (1, 1), text, type_of),
    strict("json_array_length", (1, 1), integer, array_length),
    strict("jsonb_array_length", (1, 1), integer, array_length),
    strict("json_extract_path", (2, 100), json, extract_path::<false>),
    strict("jsonb_extract_path", (2, 100), jsonb, extract_path::<true>),
    strict("json_extract_path_text", (2, 100), text, extract_path_text),
    strict("jsonb_extract_path_text", (2, 100), text, extract_path_text),
    strict("json_object_field", (2, 2), json, arrow::<false>),
    strict("jsonb_object_field", (2, 2), jsonb, arrow::<true>),
    strict("json_object_field_text", (2, 2), text, arrow_text),
    strict("jsonb_object_field_text", (2, 2), text, arrow_text),
    strict("jsonb_pretty", (1, 1), text, pretty),
    strict("json_strip_nulls", (1, 1), json, strip_nulls::<false>),
    strict("jsonb_strip_nulls", (1, 1), jsonb, strip_nulls::<true>),
    lenient("jsonb_set", (3, 4), jsonb, set),
    strict("jsonb_contains", (2, 2), boolean, contains),
    strict("jsonb_exists", (2, 2), boolean, exists),
];

/// `jsonb_agg`'s document: the array of its items (NULL as null); `json_agg`'s is
/// [`json_agg_text`].
pub fn jsonb_aggregate(items: Vec<Json>) -> Value {
    output::<true>(Json::Array(items))
}

/// `json_object_agg`'s document (json's is written `{ "a" : 1, "b" : 2 }`, as PostgreSQL
/// writes it).
pub fn object_aggregate(members: Vec<(String, Json)>, binary: bool) -> Value {
    if binary {
        return output::<true>(Json::Object(members));
    }
    let text = Json::Object(members).to_json_text();
    Value::Json(format!("{{ {} }}", &text[1..text.len() - 1]))
}
