//! Sequence functions — `nextval`, `setval`, `currval`, `lastval`, `pg_get_serial_sequence` —
//! and what a session remembers of the values `nextval` gave it.
//!
//! A sequence is named as PostgreSQL's `regclass` input reads a name: `s`, `public.s` (the one
//! schema), `"S"` (quoted: case kept). `currval(s)` is the last value `nextval(s)` (or
//! `setval(s, v)`, `setval(s, v, true)`) gave this session, `lastval()` the last value `nextval`
//! gave it for any sequence; before that both fail with 55000, as in PostgreSQL. Sequence values
//! are not transactional (see `steady_engine::sequence`).

use crate::execution::functions::{bigint, boolean, contextual, Function};
use std::collections::HashMap;

use steady_types::Value;

use crate::error::{Result, SqlError};
use crate::execution::executor::ExecCtx;
use crate::types::ops::{as_i64, text_of};

/// The values `nextval` gave one session.
#[derive(Debug, Default)]
pub struct SessionSequences {
    /// Per sequence: the value `currval` returns.
    current: HashMap<String, i64>,
    /// The value `lastval` returns.
    latest: Option<i64>,
}

/// The sequence a serial or identity column of `table` owns (PostgreSQL's `t_c_seq`).
pub fn owned_sequence(table: &str, column: &str) -> String {
    format!("{table}_{column}_seq")
}

/// The relation a `regclass`-style argument names (`s`, `public.s`, `"S"`).
pub fn relation_name(text: &str) -> String {
    let text = text.trim();
    let text = text.strip_prefix("public.").unwrap_or(text);
    match text.strip_prefix('"').and_then(|t| t.strip_suffix('"')) {
        Some(quoted) => quoted.replace("\"\"", "\""),
        None => text.to_lowercase(),
    }
}

fn no_sequence(name: &str) -> SqlError {
    SqlError::new("42P01", format!("relation \"{name}\" does not exist"))
}

fn sequence_arg(value: &Value, ctx: &ExecCtx) -> Result<String> {
    let name = relation_name(&text_of(value));
    match ctx.engine()?.sequence_exists(&name)? {
        true => Ok(name),
        false => Err(no_sequence(&name)),
    }
}

/// An engine error of a sequence operation: a sequence dropped meanwhile is named as missing,
/// any other error (exhausted, I/O) is itself.
fn sequence_error(err: steady_engine::error::EngineError, name: &str) -> SqlError {
    match err {
        steady_engine::error::EngineError::NoSuchTable(_) => no_sequence(name),
        other => other.into(),
    }
}

pub(crate) fn nextval(args: &[Value], ctx: &mut ExecCtx) -> Result<Value> {
    let name = sequence_arg(&args[0], ctx)?;
    let value = ctx
        .txn()?
        .next_sequence_value(&name)
        .map_err(|e| sequence_error(e, &name))?;
    let mut session = ctx.sequences().lock();
    session.current.insert(name, value);
    session.latest = Some(value);
    Ok(Value::BigInt(value))
}

/// `setval(s, v [, is_called])`: the next `nextval` gives `v + 1` (or `v` when not called).
pub(crate) fn setval(args: &[Value], ctx: &mut ExecCtx) -> Result<Value> {
    let name = sequence_arg(&args[0], ctx)?;
    let value = as_i64(&args[1]);
    let engine = ctx.engine()?;
    let max = steady_engine::sequence::sequence_max(engine.sequence_width(&name)?);
    if !(1..=max).contains(&value) {
        return Err(SqlError::new(
            "22003",
            format!("setval: value {value} is out of bounds for sequence \"{name}\" (1..{max})"),
        ));
    }
    let called = args
        .get(2)
        .is_none_or(|c| matches!(c, Value::Boolean(true)));
    let last = if called { value } else { value - 1 };
    ctx.txn()?
        .set_sequence_value(&name, last)
        .map_err(|e| sequence_error(e, &name))?;
    if called {
        ctx.sequences().lock().current.insert(name, value);
    }
    Ok(Value::BigInt(value))
}

pub(crate) fn currval(args: &[Value], ctx: &mut ExecCtx) -> Result<Value> {
    let name = sequence_arg(&args[0], ctx)?;
    let current = ctx.sequences().lock().current.get(&name).copied();
    current.map(Value::BigInt).ok_or_else(|| {
        SqlError::new(
            "55000",
            format!("currval of sequence \"{name}\" is not yet defined in this session"),
        )
    })
}

pub(crate) fn lastval(_: &[Value], ctx: &mut ExecCtx) -> Result<Value> {
    let latest = ctx.sequences().lock().latest;
    latest
        .map(Value::BigInt)
        .ok_or_else(|| SqlError::new("55000", "lastval is not yet defined in this session"))
}

/// `pg_get_serial_sequence(table, column)`: the sequence a serial or identity column takes its
/// values from (`public.t_c_seq`), NULL for any other column. The column name is taken as
/// written (case kept), the table name as `regclass` reads it.
pub(crate) fn serial_sequence(args: &[Value], ctx: &mut ExecCtx) -> Result<Value> {
    let table_name = relation_name(&text_of(&args[0]));
    let column_name = text_of(&args[1]);
    let table = ctx
        .engine()?
        .table(&table_name)
        .ok_or_else(|| no_sequence(&table_name))?;
    let column = table.column(&column_name).ok_or_else(|| {
        SqlError::new(
            "42703",
            format!("column \"{column_name}\" of relation \"{table_name}\" does not exist"),
        )
    })?;
    let owned = owned_sequence(&table_name, &column_name);
    let default = table.columns[column].default.as_deref();
    Ok(match default == Some(&format!("nextval('{owned}')")) {
        true => Value::Text(format!("public.{owned}")),
        false => Value::Null,
    })
}

/// `SELECT last_value, log_cnt, is_called FROM s` reads PostgreSQL's one-row sequence relation:
/// before the first value, the start and not called; after it, the last value handed out and
/// called. (A `setval(s, v, false)` shows as `v - 1` called when `v` is above the start: the same
/// next value.) The binder makes the row of calls of these two (volatile, so a kept plan reads
/// the sequence at each execution).
fn sequence_position(args: &[Value], ctx: &ExecCtx) -> Result<(i64, bool)> {
    let name = sequence_arg(&args[0], ctx)?;
    let engine = ctx.engine()?;
    let last = engine
        .sequence_last(&name)
        .map_err(|e| sequence_error(e, &name))?;
    let start = engine
        .sequence_start(&name)
        .map_err(|e| sequence_error(e, &name))?;
    Ok(if last < start {
        (last + 1, false)
    } else {
        (last, true)
    })
}

pub(crate) fn sequence_last_value(args: &[Value], ctx: &mut ExecCtx) -> Result<Value> {
    Ok(Value::BigInt(sequence_position(args, ctx)?.0))
}

pub(crate) fn sequence_is_called(args: &[Value], ctx: &mut ExecCtx) -> Result<Value> {
    Ok(Value::Boolean(sequence_position(args, ctx)?.1))
}

/// The calls the binder reads a sequence relation's row with.
pub static LAST_VALUE: Function =
    contextual("sequence_last_value", (1, 1), bigint, sequence_last_value);
pub static IS_CALLED: Function =
    contextual("sequence_is_called", (1, 1), boolean, sequence_is_called);
