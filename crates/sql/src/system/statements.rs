//! `pg_stat_statements`: each statement's calls, execution time and rows since the server
//! started ([`crate::execution::statements`]), with PostgreSQL 15's columns for them (the
//! planning and buffer columns PostgreSQL's extension adds are not kept), and
//! `pg_stat_statements_reset()`. The extension is built in: there is nothing to CREATE.

use steady_types::{DataType, Value};

use super::rows::{flag, name, oid, Rows};
use super::{oids, SystemTable};
use crate::error::{Result, SqlError};
use crate::execution::executor::ExecCtx;
use crate::execution::statements::{query_id, StatementStats};

use DataType::{BigInt, Boolean, Double, Text};

pub const VIEWS: &[SystemTable] = &[SystemTable {
    schema: "pg_catalog",
    name: "pg_stat_statements",
    columns: &[
        ("userid", BigInt),
        ("dbid", BigInt),
        ("toplevel", Boolean),
        ("queryid", BigInt),
        ("query", Text),
        ("calls", BigInt),
        ("total_exec_time", Double),
        ("min_exec_time", Double),
        ("max_exec_time", Double),
        ("mean_exec_time", Double),
        ("stddev_exec_time", Double),
        ("rows", BigInt),
    ],
    rows: pg_stat_statements,
}];

fn stats<'a>(ctx: &'a ExecCtx) -> Result<&'a StatementStats> {
    ctx.statement_stats()
        .ok_or_else(|| SqlError::new("XX000", "no statement counters outside a database"))
}

fn pg_stat_statements(ctx: &mut ExecCtx) -> Result<Rows> {
    let roles = ctx.engine()?.roles()?;
    let user_oid = |user: &str| {
        roles
            .iter()
            .find(|r| r.name == user)
            .map_or(oids::SUPERUSER, |r| oids::role(r.id))
    };
    let ms = |micros: u64| Value::Double(micros as f64 / 1000.0);
    // A role that is not a superuser sees only its own statements' text, as in PostgreSQL.
    let viewer = (!ctx.is_superuser()?).then(|| ctx.current_user());
    Ok(stats(ctx)?
        .snapshot()
        .into_iter()
        .map(|(key, c)| {
            vec![
                oid(user_oid(&key.user)),
                oid(oids::DATABASE),
                flag(true),
                Value::BigInt(query_id(&key.query)),
                match &viewer {
                    Some(viewer) if *viewer != key.user => name("<insufficient privilege>"),
                    _ => name(&key.query),
                },
                Value::BigInt(c.calls as i64),
                ms(c.total_micros),
                ms(c.min_micros),
                ms(c.max_micros),
                Value::Double(c.total_micros as f64 / 1000.0 / c.calls.max(1) as f64),
                Value::Double(c.stddev_ms()),
                Value::BigInt(c.rows as i64),
            ]
        })
        .collect())
}

/// `pg_stat_statements_reset()`: forgets every statement's counters (superusers only).
pub fn reset(_: &[Value], ctx: &mut ExecCtx) -> Result<Value> {
    if !ctx.is_superuser()? {
        return Err(SqlError::new(
            "42501",
            "permission denied for function pg_stat_statements_reset",
        ));
    }
    stats(ctx)?.reset();
    Ok(Value::Null)
}
