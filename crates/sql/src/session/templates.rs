//! A session's plans for statement templates (`parser::template`): the first time a simple-query
//! text with a new template arrives, the template is parsed and described with each literal's
//! type declared for its parameter and kept as a [`Prepared`] statement; this and every later
//! text of the same template then runs that statement's kept plan with the literals as its
//! parameter values, skipping the tokenizer, the parser and the binder.
//!
//! Invariants:
//! - The key is the template's text and each literal's type (a number's from its digits:
//!   integer, bigint or numeric; a string's unknown), so a plan is only reused for literals of
//!   the types it was bound with.
//! - An entry, kept or refused, belongs to one catalog generation; after DDL it is made anew
//!   (parameter types inferred from columns may have changed). Statistics changes re-plan
//!   through `Prepared` itself.
//! - A template that does not parse or bind as one query or write is remembered as refused and
//!   its statements take the ordinary path, which reports their errors as always.
//! - At most [`MAX_TEMPLATES`] entries; the map is emptied when full (cheap, rarely reached).
//!
//! Short texts without a template (`BEGIN`, `END`, `SET ...`) keep their parsed statements by
//! exact text (parsing is a function of the text alone), at most [`MAX_TEMPLATES`] of at most
//! [`MAX_SHORT_TEXT`] bytes.

use std::collections::HashMap;
use std::sync::Arc;

use steady_types::{DataType, Value};

use super::{Prepared, QueryResult, Session};
use crate::error::{Result, SqlError};
use crate::parser::template::{template, Literal};
use crate::parser::{parse, Statement};
use crate::types::parse_number;

/// The most templates a session keeps plans for.
const MAX_TEMPLATES: usize = 256;

/// The longest text whose parsed statements are kept by exact text.
const MAX_SHORT_TEXT: usize = 64;

/// A session's template plans, and the parsed statements of short texts.
#[derive(Default)]
pub(super) struct Templates {
    entries: HashMap<String, Entry>,
    short: HashMap<Box<str>, Vec<Statement>>,
}

struct Entry {
    /// The prepared template, or `None` if it could not be prepared.
    prepared: Option<Arc<Prepared>>,
    catalog: u64,
}

/// A literal as a parameter: its value and its declared type (`None`: unknown).
struct Param {
    value: Value,
    declared: Option<DataType>,
}

impl Templates {
    pub(super) fn clear(&mut self) {
        self.entries.clear();
        self.short.clear();
    }

    /// The statements of `sql`, parsed now unless it is a short text parsed before.
    pub(super) fn parse(&mut self, sql: &str) -> Result<Vec<Statement>> {
        if sql.len() > MAX_SHORT_TEXT {
            return parse(sql);
        }
        if let Some(statements) = self.short.get(sql) {
            return Ok(statements.clone());
        }
        let statements = parse(sql)?;
        if self.short.len() >= MAX_TEMPLATES {
            self.short.clear();
        }
        self.short.insert(sql.into(), statements.clone());
        Ok(statements)
    }
}

impl Session {
    /// Runs `sql` through its template's kept plan; `None` if it has no usable template.
    pub(super) fn execute_template(&mut self, sql: &str) -> Option<Result<QueryResult>> {
        if self.block.as_ref().is_some_and(|b| b.failed) {
            return None;
        }
        let template = template(sql)?;
        let params = template
            .literals
            .into_iter()
            .map(param)
            .collect::<Option<Vec<_>>>()?;
        let key = key(template.text, &params);
        let prepared = self.template_plan(key, &params)?;
        self.counted_text = Some(Arc::clone(&prepared.text));
        Some(self.run_template(&prepared, params))
    }

    /// The kept statement for `key`, prepared now if it is new or its catalog generation passed.
    fn template_plan(&mut self, key: String, params: &[Param]) -> Option<Arc<Prepared>> {
        let catalog = steady_engine::catalog::generation();
        if let Some(entry) = self.templates.entries.get(&key) {
            if entry.catalog == catalog {
                return entry.prepared.clone();
            }
        }
        let text = &key[..key.find('\0').unwrap_or(key.len())];
        let prepared = self.prepare_template(text, params).map(Arc::new);
        if self.templates.entries.len() >= MAX_TEMPLATES {
            self.templates.clear();
        }
        self.templates.entries.insert(
            key,
            Entry {
                prepared: prepared.clone(),
                catalog,
            },
        );
        prepared
    }

    fn prepare_template(&self, text: &str, params: &[Param]) -> Option<Prepared> {
        let mut statements = parse(text).ok()?;
        let statement = statements.pop().filter(|_| statements.is_empty())?;
        let declared = params.iter().map(|p| p.declared).collect();
        let (types, columns) = self.describe(&statement, declared).ok()?;
        let prepared = Prepared::new(statement, text, types, columns);
        prepared.planned().is_some().then_some(prepared)
    }

    fn run_template(&mut self, prepared: &Prepared, params: Vec<Param>) -> Result<QueryResult> {
        let Some(statement) = prepared.planned() else {
            return Err(SqlError::new(
                "XX000",
                "a statement template without a plan",
            ));
        };
        self.guarded(&prepared.statement, |session| {
            let values = typed_values(prepared, params)?;
            session.execute_planned(prepared, statement, &values)
        })
    }
}

/// A literal as a parameter; `None` for a number the binder would refuse (left to it).
fn param(literal: Literal) -> Option<Param> {
    Some(match literal {
        Literal::Number(text) => {
            let value = parse_number(&text).ok()?;
            Param {
                declared: value.data_type(),
                value,
            }
        }
        Literal::Text(text) => Param {
            value: Value::Text(text),
            declared: None,
        },
    })
}

/// The template's text, a NUL, then a letter per literal for its declared type.
fn key(mut text: String, params: &[Param]) -> String {
    text.push('\0');
    text.extend(params.iter().map(|p| match p.declared {
        None => 'u',
        Some(DataType::Integer) => 'i',
        Some(DataType::BigInt) => 'b',
        Some(_) => 'n',
    }));
    text
}

/// The parameter values: a string converted to the type the template's binding gave it, as the
/// binder converts an unknown literal (the same function, so the same errors).
fn typed_values(prepared: &Prepared, params: Vec<Param>) -> Result<Vec<Value>> {
    params
        .into_iter()
        .zip(&prepared.params)
        .map(|(param, ty)| match (param.value, ty) {
            (Value::Text(text), Some(ty)) if *ty != DataType::Text => Ok(Value::parse(ty, &text)?),
            (value, _) => Ok(value),
        })
        .collect()
}
