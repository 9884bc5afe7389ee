//! Regular expressions for the SQL functions and operators that take them (`~`, `substring`,
//! `regexp_replace`, `regexp_matches`, `regexp_split_to_*`): patterns compiled once per thread
//! while a scan matches the same one row after row, PostgreSQL's flags, and its rules for the
//! parts a split gives.

use std::cell::RefCell;

use regex::{Regex, RegexBuilder};
use steady_types::Value;

use crate::error::{Result, SqlError};
use crate::execution::executor::ExecCtx;
use crate::types::ops::text_of;

thread_local! {
    /// The last regular expression compiled on this thread (a scan matches one pattern per row).
    static LAST_REGEX: RefCell<Option<(String, bool, Regex)>> = const { RefCell::new(None) };
}

/// Runs `f` with `pattern` compiled (the thread's last compiled pattern is kept).
pub(crate) fn with_regex<T>(
    pattern: String,
    case_insensitive: bool,
    f: impl FnOnce(&Regex) -> T,
) -> Result<T> {
    LAST_REGEX.with(|cell| {
        let mut last = cell.borrow_mut();
        let kept = last
            .take()
            .filter(|(p, ci, _)| *p == pattern && *ci == case_insensitive);
        let (pattern, regex) = match kept {
            Some((pattern, _, regex)) => (pattern, regex),
            None => {
                let regex = RegexBuilder::new(&pattern)
                    .case_insensitive(case_insensitive)
                    .build()
                    .map_err(|e| {
                        SqlError::new("2201B", format!("invalid regular expression: {e}"))
                    })?;
                (pattern, regex)
            }
        };
        let result = f(&regex);
        *last = Some((pattern, case_insensitive, regex));
        Ok(result)
    })
}

/// The flags of the regular expression functions: `g` (every match) and `i` / `c` (ignore case
/// or not); any other is 22023, as in PostgreSQL.
pub(crate) fn regex_flags(flags: Option<&Value>) -> Result<(bool, bool)> {
    let (mut global, mut case_insensitive) = (false, false);
    for flag in flags.map(text_of).unwrap_or_default().chars() {
        match flag {
            'g' => global = true,
            'i' => case_insensitive = true,
            'c' => case_insensitive = false,
            other => {
                return Err(SqlError::new(
                    "22023",
                    format!("invalid regular expression option: \"{other}\""),
                ))
            }
        }
    }
    Ok((global, case_insensitive))
}

/// `regexp_matches(string, pattern [, flags])`'s rows: for the first match (every match with
/// `g`), a text array of its parenthesized groups' texts (NULL for a group that took no part), or
/// of the whole match when the pattern has no group.
pub(crate) fn regexp_matches(args: &[Value]) -> Result<Vec<Value>> {
    let (global, case_insensitive) = regex_flags(args.get(2))?;
    let text = text_of(&args[0]);
    with_regex(text_of(&args[1]), case_insensitive, |regex| {
        let groups = regex.captures_len();
        regex
            .captures_iter(&text)
            .take(if global { usize::MAX } else { 1 })
            .map(|captures| {
                let parts: Vec<Value> = (if groups == 1 { 0..1 } else { 1..groups })
                    .map(|i| {
                        captures
                            .get(i)
                            .map_or(Value::Null, |m| Value::Text(m.as_str().to_owned()))
                    })
                    .collect();
                Value::Text(steady_types::array::array_text(&parts))
            })
            .collect()
    })
}

/// `regexp_split_to_table(string, pattern [, flags])`: the parts between the matches, where, as
/// in PostgreSQL, an empty match at the start or end of the string or right after the previous
/// match splits nothing.
pub(crate) fn regexp_split(args: &[Value]) -> Result<Vec<String>> {
    let (global, case_insensitive) = regex_flags(args.get(2))?;
    if global {
        return Err(SqlError::new(
            "22023",
            "regexp_split_to_table() does not support the \"global\" option",
        ));
    }
    let text = text_of(&args[0]);
    with_regex(text_of(&args[1]), case_insensitive, |regex| {
        let mut parts = Vec::new();
        let mut start = 0;
        for m in regex.find_iter(&text) {
            let idle = m.is_empty() && (m.start() == start || m.start() == text.len());
            if idle {
                continue;
            }
            parts.push(text[start..m.start()].to_owned());
            start = m.end();
        }
        parts.push(text[start..].to_owned());
        parts
    })
}

/// `similar_to_escape(pattern [, escape])`: a SQL `SIMILAR TO` pattern as the POSIX regular
/// expression PostgreSQL's `similar_escape` makes of it — anchored at both ends, `%` any string,
/// `_` any character, `(` a non-capturing group, `.`, `^` and `$` literal, the escape character
/// (`\` unless given; none when given empty) making the next character literal, a bracket
/// expression copied as it is. `SIMILAR TO` is `~` with it.
pub fn similar_to_escape(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let escape = match args.get(1) {
        None => Some('\\'),
        Some(value) => {
            let text = text_of(value);
            let mut chars = text.chars();
            match (chars.next(), chars.next()) {
                (None, _) => None,
                (Some(c), None) => Some(c),
                _ => {
                    return Err(SqlError::new("22025", "invalid escape string")
                        .with_hint("Escape string must be empty or one character."))
                }
            }
        }
    };
    Ok(Value::Text(similar_regex(&text_of(&args[0]), escape)))
}

fn similar_regex(pattern: &str, escape: Option<char>) -> String {
    let mut out = String::from("^(?:");
    let (mut after_escape, mut in_brackets) = (false, false);
    for c in pattern.chars() {
        if after_escape {
            out.push_str(&regex::escape(&c.to_string()));
            after_escape = false;
        } else if Some(c) == escape {
            after_escape = true;
        } else if in_brackets {
            if c == ']' {
                in_brackets = false;
            }
            out.push(c);
        } else {
            match c {
                '[' => {
                    in_brackets = true;
                    out.push(c);
                }
                '%' => out.push_str(".*"),
                '_' => out.push('.'),
                '(' => out.push_str("(?:"),
                '.' | '^' | '$' | '\\' => {
                    out.push('\\');
                    out.push(c);
                }
                c => out.push(c),
            }
        }
    }
    out.push_str(")$");
    out
}

/// `regexp_count(string, pattern [, start [, flags]])`: how many times the pattern matches, the
/// matches not overlapping, from character `start` (1-based) on.
pub fn regexp_count(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let start = match args.get(2) {
        Some(value) => crate::types::ops::as_i64(value),
        None => 1,
    };
    if start < 1 {
        return Err(SqlError::new(
            "22023",
            format!("invalid value for parameter \"start\": {start}"),
        ));
    }
    let (global, case_insensitive) = regex_flags(args.get(3))?;
    if global {
        return Err(SqlError::new(
            "22023",
            "regexp_count() does not support the \"global\" option",
        ));
    }
    let subject: String = text_of(&args[0]).chars().skip(start as usize - 1).collect();
    with_regex(text_of(&args[1]), case_insensitive, |regex| {
        Value::Integer(regex.find_iter(&subject).count() as i32)
    })
}

/// `regexp_substr(string, pattern [, start [, n [, flags [, subexpr]]]])`: the `n`-th match
/// (1-based) from character `start` on, or its `subexpr`-th parenthesised group; NULL when there
/// is none.
pub fn regexp_substr(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let number = |at: usize, name: &str, least: i64| -> Result<i64> {
        let value = args.get(at).map_or(least.max(1), crate::types::ops::as_i64);
        if value < least {
            return Err(SqlError::new(
                "22023",
                format!("invalid value for parameter \"{name}\": {value}"),
            ));
        }
        Ok(value)
    };
    let start = number(2, "start", 1)?;
    let nth = number(3, "n", 1)?;
    let (global, case_insensitive) = regex_flags(args.get(4))?;
    if global {
        return Err(SqlError::new(
            "22023",
            "regexp_substr() does not support the \"global\" option",
        ));
    }
    let group = match args.get(5) {
        Some(value) => number(5, "subexpr", 0)?.max(crate::types::ops::as_i64(value)),
        None => 0,
    };
    let subject: String = text_of(&args[0]).chars().skip(start as usize - 1).collect();
    with_regex(text_of(&args[1]), case_insensitive, |regex| {
        regex
            .captures_iter(&subject)
            .nth(nth as usize - 1)
            .and_then(|found| found.get(group as usize))
            .map_or(Value::Null, |m| Value::Text(m.as_str().to_owned()))
    })
}
