//! `json` and `jsonb`: the JSON document model ([`Json`]), its parser, PostgreSQL's two text forms,
//! and what the operators need (path access, containment, key existence, jsonb order).
//!
//! A `json` value is the text it was given, checked to be JSON (`Value::Json`); a `jsonb` value is
//! its canonical text (`Value::Jsonb`), as PostgreSQL prints jsonb: object keys unique (the last
//! of duplicates wins) and sorted shorter first, then byte-wise; `": "` after keys and `", "`
//! between items; numbers as `numeric` prints them (`1e2` is `100`, `1.50` stays `1.50`).
//! Operators parse the text when they run.
//!
//! Invariants: the text in a `Value::Jsonb` is what [`Json::to_jsonb_text`] gives for its document,
//! so two jsonb values with equal documents have equal texts; numbers in a parsed [`Json`] are
//! valid JSON number texts.

use std::cmp::Ordering;
use std::fmt::Write;

use crate::{DataType, TypeError, Value};

/// A JSON document. Objects keep their members in the order the text gave them (`json`) or in
/// jsonb's canonical order (after [`Json::into_jsonb`]).
#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    Null,
    Bool(bool),
    /// The number's text (a JSON number; canonical `numeric` text in jsonb).
    Number(String),
    String(String),
    Array(Vec<Json>),
    Object(Vec<(String, Json)>),
}

impl Json {
    /// Parses JSON text; the error is PostgreSQL's 22P02 (which names type json for jsonb too).
    pub fn parse(text: &str) -> Result<Json, TypeError> {
        let mut parser = Parser {
            text: text.as_bytes(),
            at: 0,
            depth: 0,
        };
        let invalid = || {
            TypeError::InvalidTextRepresentation("invalid input syntax for type json".to_owned())
        };
        let json = parser.value().ok_or_else(invalid)?;
        parser.skip_space();
        if parser.at != parser.text.len() {
            return Err(invalid());
        }
        Ok(json)
    }

    /// The document as jsonb holds it: object keys unique (last wins) and in canonical order,
    /// numbers canonical.
    pub fn into_jsonb(self) -> Json {
        match self {
            Json::Number(n) => Json::Number(canonical_number(&n)),
            Json::Array(items) => Json::Array(items.into_iter().map(Json::into_jsonb).collect()),
            Json::Object(members) => {
                let mut sorted: Vec<(String, Json)> = Vec::with_capacity(members.len());
                for (key, value) in members {
                    let value = value.into_jsonb();
                    match sorted.binary_search_by(|(k, _)| key_order(k, &key)) {
                        Ok(at) => sorted[at].1 = value,
                        Err(at) => sorted.insert(at, (key, value)),
                    }
                }
                Json::Object(sorted)
            }
            other => other,
        }
    }

    /// jsonb's text: `{"a": 1, "b": [1, 2]}`.
    pub fn to_jsonb_text(&self) -> String {
        let mut out = String::new();
        self.write(&mut out, ": ", ", ");
        out
    }

    /// `json`'s text of a document built or extracted (not typed in): `{"a" : 1, "b" : [1,2]}`
    /// as PostgreSQL's json builders write it.
    pub fn to_json_text(&self) -> String {
        let mut out = String::new();
        self.write(&mut out, " : ", ", ");
        out
    }

    fn write(&self, out: &mut String, colon: &str, comma: &str) {
        match self {
            Json::Null => out.push_str("null"),
            Json::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Json::Number(n) => out.push_str(n),
            Json::String(s) => write_string(out, s),
            Json::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(comma);
                    }
                    item.write(out, colon, comma);
                }
                out.push(']');
            }
            Json::Object(members) => {
                out.push('{');
                for (i, (key, value)) in members.iter().enumerate() {
                    if i > 0 {
                        out.push_str(comma);
                    }
                    write_string(out, key);
                    out.push_str(colon);
                    value.write(out, colon, comma);
                }
                out.push('}');
            }
        }
    }

    /// The text `->>` gives: a string's contents, null as SQL NULL, anything else as jsonb text.
    pub fn to_unquoted(&self) -> Option<String> {
        match self {
            Json::Null => None,
            Json::String(s) => Some(s.clone()),
            other => Some(other.to_jsonb_text()),
        }
    }

    /// `jsonb_typeof`.
    pub fn type_name(&self) -> &'static str {
        match self {
            Json::Null => "null",
            Json::Bool(_) => "boolean",
            Json::Number(_) => "number",
            Json::String(_) => "string",
            Json::Array(_) => "array",
            Json::Object(_) => "object",
        }
    }

    /// An object's member (the last of that name, for `json`).
    pub fn member(&self, key: &str) -> Option<&Json> {
        match self {
            Json::Object(members) => members.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    /// An array's element; a negative index counts from the end.
    pub fn element(&self, index: i64) -> Option<&Json> {
        let Json::Array(items) = self else {
            return None;
        };
        let at = if index < 0 {
            items
                .len()
                .checked_sub(usize::try_from(index.unsigned_abs()).ok()?)?
        } else {
            usize::try_from(index).ok()?
        };
        items.get(at)
    }

    /// `#>`: the element at a path of keys and array indexes (given as text).
    pub fn at_path<S: AsRef<str>>(&self, path: &[S]) -> Option<&Json> {
        path.iter().try_fold(self, |json, step| {
            let step = step.as_ref();
            match json {
                Json::Object(_) => json.member(step),
                Json::Array(_) => json.element(step.trim().parse().ok()?),
                _ => None,
            }
        })
    }

    /// jsonb's `?`: a top-level key, or a string element of a top-level array (or the string
    /// itself).
    pub fn has_key(&self, key: &str) -> bool {
        match self {
            Json::Object(_) => self.member(key).is_some(),
            Json::Array(items) => items
                .iter()
                .any(|i| matches!(i, Json::String(s) if s == key)),
            Json::String(s) => s == key,
            _ => false,
        }
    }

    /// jsonb's `@>`: whether this document contains `other` (objects: every member of `other`
    /// contained in the same member here; arrays: every element of `other` contained in some
    /// element here; a top-level array contains a scalar it has as an element).
    pub fn contains(&self, other: &Json) -> bool {
        match (self, other) {
            (Json::Object(_), Json::Object(wanted)) => wanted.iter().all(|(key, value)| {
                self.member(key)
                    .is_some_and(|have| have.contains_value(value))
            }),
            (Json::Array(items), Json::Array(wanted)) => wanted
                .iter()
                .all(|w| items.iter().any(|have| have.contains_value(w))),
            (Json::Array(items), scalar) if !matches!(scalar, Json::Object(_)) => items
                .iter()
                .any(|have| have.compare(scalar) == Ordering::Equal),
            (a, b) => a.compare(b) == Ordering::Equal,
        }
    }

    /// Containment below the top level: an array contains only arrays there.
    fn contains_value(&self, other: &Json) -> bool {
        match (self, other) {
            (Json::Array(_), Json::Array(_)) | (Json::Object(_), Json::Object(_)) => {
                self.contains(other)
            }
            (Json::Array(_), _) | (_, Json::Array(_)) => false,
            (a, b) => a.compare(b) == Ordering::Equal,
        }
    }

    /// jsonb's sort order: object > array > boolean > number > string > null; containers with
    /// more members sort higher, equal sizes member by member (keys, then values); numbers by
    /// value, strings byte-wise.
    pub fn compare(&self, other: &Json) -> Ordering {
        let rank = |j: &Json| match j {
            Json::Null => 0,
            Json::String(_) => 1,
            Json::Number(_) => 2,
            Json::Bool(_) => 3,
            Json::Array(_) => 4,
            Json::Object(_) => 5,
        };
        match (self, other) {
            (Json::String(a), Json::String(b)) => a.cmp(b),
            (Json::Number(a), Json::Number(b)) => compare_numbers(a, b),
            (Json::Bool(a), Json::Bool(b)) => a.cmp(b),
            (Json::Array(a), Json::Array(b)) => a
                .len()
                .cmp(&b.len())
                .then_with(|| compare_all(a.iter().zip(b), |(x, y)| x.compare(y))),
            (Json::Object(a), Json::Object(b)) => a.len().cmp(&b.len()).then_with(|| {
                compare_all(a.iter().zip(b), |((ka, va), (kb, vb))| {
                    key_order(ka, kb).then_with(|| va.compare(vb))
                })
            }),
            (a, b) => rank(a).cmp(&rank(b)),
        }
    }
}

fn compare_all<T>(pairs: impl Iterator<Item = T>, mut cmp: impl FnMut(T) -> Ordering) -> Ordering {
    pairs
        .map(&mut cmp)
        .find(|o| o.is_ne())
        .unwrap_or(Ordering::Equal)
}

/// jsonb's order of object keys: shorter first, then byte-wise.
fn key_order(a: &str, b: &str) -> Ordering {
    a.len().cmp(&b.len()).then_with(|| a.cmp(b))
}

/// Compares two JSON number texts by value.
fn compare_numbers(a: &str, b: &str) -> Ordering {
    let (a, b) = (canonical_number(a), canonical_number(b));
    let negative = |n: &str| n.starts_with('-');
    match (negative(&a), negative(&b)) {
        (true, false) => Ordering::Less,
        (false, true) => Ordering::Greater,
        (true, true) => compare_magnitudes(&b[1..], &a[1..]),
        (false, false) => compare_magnitudes(&a, &b),
    }
}

/// Compares two unsigned canonical decimal texts by value.
fn compare_magnitudes(a: &str, b: &str) -> Ordering {
    let split = |n: &str| -> (String, String) {
        let (int, frac) = n.split_once('.').unwrap_or((n, ""));
        (int.to_owned(), frac.trim_end_matches('0').to_owned())
    };
    let ((ai, af), (bi, bf)) = (split(a), split(b));
    ai.len()
        .cmp(&bi.len())
        .then_with(|| ai.cmp(&bi))
        .then_with(|| af.cmp(&bf))
}

/// A JSON number as `numeric` prints it: no exponent, the scale it implies (`1.0e1` is `10`,
/// `1.5e-3` is `0.0015`), `-0` as `0`.
pub fn canonical_number(text: &str) -> String {
    let (negative, unsigned) = match text.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let (mantissa, exponent) = match unsigned.find(['e', 'E']) {
        Some(at) => (
            &unsigned[..at],
            unsigned[at + 1..].parse::<i64>().unwrap_or(0),
        ),
        None => (unsigned, 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let digits: String = format!("{int}{frac}");
    let point = int.len() as i64 + exponent;
    let scale = (frac.len() as i64 - exponent).max(0);
    let mut whole = String::new();
    let mut fraction = String::new();
    for (i, d) in digits.chars().enumerate() {
        if (i as i64) < point {
            whole.push(d);
        } else {
            fraction.push(d);
        }
    }
    for _ in digits.len() as i64..point {
        whole.push('0');
    }
    if point < 0 {
        fraction.insert_str(0, &"0".repeat(point.unsigned_abs() as usize));
    }
    let whole = whole.trim_start_matches('0');
    let mut out = String::new();
    out.push_str(if whole.is_empty() { "0" } else { whole });
    let scale = scale as usize;
    if scale > 0 {
        let mut fraction: String = fraction.chars().take(scale).collect();
        while fraction.len() < scale {
            fraction.push('0');
        }
        out.push('.');
        out.push_str(&fraction);
    }
    let zero = out.chars().all(|c| c == '0' || c == '.');
    if negative && !zero {
        out.insert(0, '-');
    }
    out
}

/// Writes `s` as a JSON string, escaped as PostgreSQL escapes it.
pub fn write_string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

/// The deepest nesting the parser follows (PostgreSQL stops at its stack depth limit).
const MAX_DEPTH: usize = 6400;

struct Parser<'t> {
    text: &'t [u8],
    at: usize,
    depth: usize,
}

impl Parser<'_> {
    fn skip_space(&mut self) {
        while self
            .text
            .get(self.at)
            .is_some_and(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
        {
            self.at += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_space();
        self.text.get(self.at).copied()
    }

    fn eat(&mut self, byte: u8) -> bool {
        if self.peek() == Some(byte) {
            self.at += 1;
            return true;
        }
        false
    }

    fn literal(&mut self, word: &str, json: Json) -> Option<Json> {
        let end = self.at + word.len();
        (self.text.get(self.at..end)? == word.as_bytes()).then(|| {
            self.at = end;
            json
        })
    }

    fn value(&mut self) -> Option<Json> {
        match self.peek()? {
            b'{' => self.nested(Parser::object),
            b'[' => self.nested(Parser::array),
            b'"' => self.string().map(Json::String),
            b't' => self.literal("true", Json::Bool(true)),
            b'f' => self.literal("false", Json::Bool(false)),
            b'n' => self.literal("null", Json::Null),
            _ => self.number(),
        }
    }

    fn nested(&mut self, parse: fn(&mut Self) -> Option<Json>) -> Option<Json> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return None;
        }
        let json = parse(self);
        self.depth -= 1;
        json
    }

    fn object(&mut self) -> Option<Json> {
        self.sequence(b'}', Parser::member).map(Json::Object)
    }

    fn array(&mut self) -> Option<Json> {
        self.sequence(b']', Parser::value).map(Json::Array)
    }

    fn member(&mut self) -> Option<(String, Json)> {
        if self.peek()? != b'"' {
            return None;
        }
        let key = self.string()?;
        if !self.eat(b':') {
            return None;
        }
        Some((key, self.value()?))
    }

    /// The comma-separated items after an opening bracket, up to `close`.
    fn sequence<T>(&mut self, close: u8, item: fn(&mut Self) -> Option<T>) -> Option<Vec<T>> {
        self.at += 1;
        let mut items = Vec::new();
        if self.eat(close) {
            return Some(items);
        }
        loop {
            items.push(item(self)?);
            if self.eat(close) {
                return Some(items);
            }
            if !self.eat(b',') {
                return None;
            }
        }
    }

    fn string(&mut self) -> Option<String> {
        self.at += 1;
        let mut out = String::new();
        loop {
            let start = self.at;
            while self
                .text
                .get(self.at)
                .is_some_and(|&b| b != b'"' && b != b'\\' && b >= 0x20)
            {
                self.at += 1;
            }
            out.push_str(std::str::from_utf8(&self.text[start..self.at]).ok()?);
            match self.text.get(self.at)? {
                b'"' => {
                    self.at += 1;
                    return Some(out);
                }
                b'\\' => {
                    self.at += 1;
                    out.push(self.escape()?);
                }
                _ => return None,
            }
        }
    }

    fn escape(&mut self) -> Option<char> {
        let byte = *self.text.get(self.at)?;
        self.at += 1;
        Some(match byte {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => return self.unicode_escape(),
            _ => return None,
        })
    }

    fn hex4(&mut self) -> Option<u32> {
        let digits = std::str::from_utf8(self.text.get(self.at..self.at + 4)?).ok()?;
        self.at += 4;
        u32::from_str_radix(digits, 16).ok()
    }

    /// `\uXXXX`, a surrogate pair as two of them; `\u0000` is refused, as PostgreSQL does.
    fn unicode_escape(&mut self) -> Option<char> {
        let first = self.hex4()?;
        if (0xD800..0xDC00).contains(&first) {
            if self.text.get(self.at..self.at + 2)? != b"\\u" {
                return None;
            }
            self.at += 2;
            let second = self.hex4()?;
            if !(0xDC00..0xE000).contains(&second) {
                return None;
            }
            return char::from_u32(0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00));
        }
        if first == 0 {
            return None;
        }
        char::from_u32(first)
    }

    fn number(&mut self) -> Option<Json> {
        let start = self.at;
        let digits = |p: &mut Self| {
            let from = p.at;
            while p.text.get(p.at).is_some_and(u8::is_ascii_digit) {
                p.at += 1;
            }
            p.at - from
        };
        if self.text.get(self.at) == Some(&b'-') {
            self.at += 1;
        }
        let leading_zero = self.text.get(self.at) == Some(&b'0');
        let int = digits(self);
        if int == 0 || (leading_zero && int > 1) {
            return None;
        }
        if self.text.get(self.at) == Some(&b'.') {
            self.at += 1;
            if digits(self) == 0 {
                return None;
            }
        }
        if matches!(self.text.get(self.at), Some(b'e' | b'E')) {
            self.at += 1;
            if matches!(self.text.get(self.at), Some(b'+' | b'-')) {
                self.at += 1;
            }
            if digits(self) == 0 {
                return None;
            }
        }
        let text = std::str::from_utf8(&self.text[start..self.at]).ok()?;
        Some(Json::Number(text.to_owned()))
    }
}

/// The canonical jsonb text of JSON text (22P02 if it is not JSON).
pub fn jsonb_text(text: &str) -> Result<String, TypeError> {
    Ok(Json::parse(text)?.into_jsonb().to_jsonb_text())
}

/// Checks that `text` is JSON (22P02 if not) and returns it unchanged, as `json` keeps it.
pub fn json_text(text: &str) -> Result<String, TypeError> {
    Json::parse(text)?;
    Ok(text.to_owned())
}

/// Compares two canonical jsonb texts in jsonb's order.
pub fn compare_jsonb(a: &str, b: &str) -> Ordering {
    match (Json::parse(a), Json::parse(b)) {
        (Ok(a), Ok(b)) => a.compare(&b),
        _ => a.cmp(b),
    }
}

/// `jsonb::boolean`, `jsonb::integer`, `jsonb::numeric`...: a JSON boolean or number to that
/// type (22023 for any other JSON value or target type).
pub fn cast_jsonb_scalar(text: &str, ty: &DataType) -> Result<Value, TypeError> {
    let json = Json::parse(text)?;
    let numeric = DataType::Numeric {
        precision: None,
        scale: None,
    };
    match (&json, ty) {
        (Json::Bool(b), DataType::Boolean) => Ok(Value::Boolean(*b)),
        (
            Json::Number(n),
            DataType::SmallInt
            | DataType::Integer
            | DataType::BigInt
            | DataType::Real
            | DataType::Double
            | DataType::Numeric { .. },
        ) => Value::parse(&numeric, n)?.cast_to(ty),
        _ => {
            let kind = match json {
                Json::Number(_) => "numeric",
                other => other.type_name(),
            };
            Err(TypeError::InvalidParameterValue(format!(
                "cannot cast jsonb {kind} to type {ty}"
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jsonb_text_is_canonical() {
        let cases = [
            (
                r#"{"b": 1, "a": 2, "aa": [1,2,{"x":null}]}"#,
                r#"{"a": 2, "b": 1, "aa": [1, 2, {"x": null}]}"#,
            ),
            (r#"{"a":1,"a":2}"#, r#"{"a": 2}"#),
            ("1e2", "100"),
            ("1.0e1", "10"),
            ("1.5e-3", "0.0015"),
            ("-0", "0"),
            ("1.50", "1.50"),
            ("12E+1", "120"),
            (r#""a\u00e9\n\"""#, r#""aé\n\"""#),
            (r#""\ud83d\ude00""#, "\"😀\""),
        ];
        for (input, expected) in cases {
            assert_eq!(jsonb_text(input).unwrap(), expected, "{input}");
        }
    }

    #[test]
    fn invalid_json_is_refused() {
        for bad in [
            "",
            "{",
            "[1,]",
            "01",
            "1.",
            "'a'",
            "{\"a\" 1}",
            "tru",
            "\"\\u0000\"",
            "1 2",
        ] {
            assert!(jsonb_text(bad).is_err(), "{bad:?} accepted");
        }
    }

    #[test]
    fn containment_and_order_follow_postgresql() {
        let j = |t: &str| Json::parse(t).unwrap().into_jsonb();
        assert!(j(r#"{"a": [1, 2, 3], "b": 1}"#).contains(&j(r#"{"a": [3, 1]}"#)));
        assert!(!j(r#"{"a": [1, 2]}"#).contains(&j(r#"{"a": 1}"#)));
        assert!(j("[1, 2]").contains(&j("1")));
        assert!(!j("[[1, 2]]").contains(&j("1")));
        assert!(j("[1, [2, 3]]").contains(&j("[[3]]")));
        assert!(j("1.0").contains(&j("1")));
        assert_eq!(j("{}").compare(&j("[1, 2, 3]")), Ordering::Greater);
        assert_eq!(j("[2]").compare(&j("[1, 1]")), Ordering::Less);
        assert_eq!(j("10").compare(&j("9.5")), Ordering::Greater);
        assert_eq!(j("-10").compare(&j("-9.5")), Ordering::Less);
        assert_eq!(j("true").compare(&j("100")), Ordering::Greater);
    }

    #[test]
    fn paths_reach_members_and_elements() {
        let j = Json::parse(r#"{"a": {"b": [10, 20, 30]}}"#).unwrap();
        assert_eq!(
            j.at_path(&["a", "b", "-1"]),
            Some(&Json::Number("30".into()))
        );
        assert_eq!(j.at_path(&["a", "c"]), None);
        assert_eq!(j.member("a").unwrap().type_name(), "object");
    }
}
