//! The text form of one-dimensional arrays, as SteadyDB's arrays are their text: PostgreSQL's
//! array syntax (`{a,"b c",NULL}`, 1-based) or the `int2vector` / `oidvector` form (`1 3`,
//! 0-based). `text[]` values are kept in their canonical form; the SQL layer's catalog array
//! functions and json paths (`'{a,0}'`) read this form too.

use crate::{DataType, TypeError, Value};

/// A one-dimensional array read from its text form.
#[derive(Debug, PartialEq)]
pub struct TextArray {
    pub elements: Vec<Option<String>>,
    /// The subscript of the first element: 1, or 0 for a vector.
    pub lower: i64,
}

impl TextArray {
    pub fn parse(text: &str) -> Result<TextArray, TypeError> {
        let text = text.trim();
        let Some(body) = text.strip_prefix('{') else {
            let elements = text
                .split_whitespace()
                .map(|e| Some(e.to_owned()))
                .collect();
            return Ok(TextArray { elements, lower: 0 });
        };
        let body = body
            .strip_suffix('}')
            .ok_or_else(|| malformed(text, "missing \"}\""))?;
        Ok(TextArray {
            elements: split_elements(body),
            lower: 1,
        })
    }

    pub fn upper(&self) -> Option<i64> {
        (!self.elements.is_empty()).then(|| self.lower + self.elements.len() as i64 - 1)
    }
}

fn malformed(text: &str, detail: &str) -> TypeError {
    TypeError::InvalidTextRepresentation(format!("malformed array literal: \"{text}\" ({detail})"))
}

/// The canonical text of a `text[]` given as text (`{a, "b"}` is `{a,b}`): PostgreSQL's array
/// input, braces required (22P02 without them).
pub fn canonical_text_array(text: &str) -> Result<String, TypeError> {
    canonical_array(text, &DataType::Text)
}

/// The canonical text of an array of `element` given as text: each element read as its type
/// reads input (`{ 1, 02}` is `{1,2}` for integers; a bad element is that type's error).
pub fn canonical_array(text: &str, element: &DataType) -> Result<String, TypeError> {
    Ok(array_text(&array_values(text, element)?))
}

/// The elements of an array of `element` given as text, as values of that type.
pub fn array_values(text: &str, element: &DataType) -> Result<Vec<Value>, TypeError> {
    if !text.trim_start().starts_with('{') {
        return Err(malformed(text, "array value must start with \"{\""));
    }
    TextArray::parse(text)?
        .elements
        .into_iter()
        .map(|e| e.map_or(Ok(Value::Null), |e| Value::parse(element, &e)))
        .collect()
}

/// The text of the one-dimensional array of `values`, each quoted as it needs (`{a,"b c",NULL}`):
/// the form an array value keeps. A `timestamptz` element is kept in UTC, so that the text does
/// not depend on the writer's TimeZone; [`array_output`] shows it in the reader's.
pub fn array_text<'v>(values: impl IntoIterator<Item = &'v Value>) -> String {
    let elements: Vec<String> = values
        .into_iter()
        .map(|value| match value {
            Value::TimestampTz(t) => quote_text(crate::zone::InUtc(*t).to_string()),
            value => quote_element(value),
        })
        .collect();
    format!("{{{}}}", elements.join(","))
}

/// An array value of `element`s as PostgreSQL prints it: its kept text, except that the
/// elements of a `timestamptz[]` show in the session's TimeZone. `None` when the kept text is
/// what is printed.
pub fn array_output(text: &str, element: &DataType) -> Option<String> {
    if *element != DataType::TimestampTz {
        return None;
    }
    let values = array_values(text, element).ok()?;
    let elements: Vec<String> = values.iter().map(quote_element).collect();
    Some(format!("{{{}}}", elements.join(",")))
}

/// A value's text as PostgreSQL prints a value of type `ty` (NULL as `NULL`): its `Display`, but
/// an array's elements as [`array_output`] shows them.
pub fn shown_text(value: &Value, ty: Option<&DataType>) -> String {
    let element = ty.and_then(DataType::element_type);
    match (value, element) {
        (Value::Text(text), Some(element)) => {
            array_output(text, &element).unwrap_or_else(|| text.clone())
        }
        (value, _) => value.to_string(),
    }
}

/// The elements between the braces: quoted (`"a,b"`, with `\` escapes) or bare (`NULL` is null).
fn split_elements(body: &str) -> Vec<Option<String>> {
    if body.trim().is_empty() {
        return Vec::new();
    }
    let mut elements = Vec::new();
    let mut current = String::new();
    let (mut quoted, mut was_quoted) = (false, false);
    let mut chars = body.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => current.extend(chars.next()),
            '"' => {
                quoted = !quoted;
                was_quoted = true;
            }
            ',' if !quoted => {
                elements.push(element(&current, was_quoted));
                current.clear();
                was_quoted = false;
            }
            // Space around a quoted element is not part of it.
            c if !quoted && c.is_whitespace() && (was_quoted || current.is_empty()) => {}
            c => current.push(c),
        }
    }
    elements.push(element(&current, was_quoted));
    elements
}

fn element(text: &str, quoted: bool) -> Option<String> {
    if quoted {
        return Some(text.to_owned());
    }
    let text = text.trim();
    (!text.eq_ignore_ascii_case("null")).then(|| text.to_owned())
}

/// One element as it appears in an array's text: quoted when it would not read back as itself.
pub fn quote_element(value: &Value) -> String {
    if value.is_null() {
        return "NULL".to_owned();
    }
    quote_text(value.to_string())
}

/// An element's text, quoted when it would not read back as itself.
fn quote_text(text: String) -> String {
    let special = |c: char| c.is_whitespace() || "{},\"\\".contains(c);
    if text.is_empty() || text.eq_ignore_ascii_case("null") || text.chars().any(special) {
        format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
    } else {
        text
    }
}
