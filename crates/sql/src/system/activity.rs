//! `pg_stat_activity` — one row per live session, from the database's activity registry
//! ([`crate::execution::activity`]) — and the functions that act on another session:
//! `pg_cancel_backend(pid)` and `pg_terminate_backend(pid)`.
//!
//! The columns are PostgreSQL 15's, in its order; what SteadyDB does not track (parallel leaders,
//! host names, wait events, transaction ids, query ids) is NULL. Every session is a
//! `client backend`: purge and checkpoints are threads of the server, not sessions.

use steady_types::{DataType, Value};

use super::arrays::int_arg;
use super::oids;
use super::rows::{name, oid, Rows};
use super::SystemTable;
use crate::error::{Result, SqlError};
use crate::execution::activity::Activity;
use crate::execution::executor::ExecCtx;

use DataType::{BigInt, Integer, Text, Timestamp};

pub const VIEWS: &[SystemTable] = &[SystemTable {
    schema: "pg_catalog",
    name: "pg_stat_activity",
    columns: &[
        ("datid", BigInt),
        ("datname", Text),
        ("pid", Integer),
        ("leader_pid", Integer),
        ("usesysid", BigInt),
        ("usename", Text),
        ("application_name", Text),
        ("client_addr", Text),
        ("client_hostname", Text),
        ("client_port", Integer),
        ("backend_start", Timestamp),
        ("xact_start", Timestamp),
        ("query_start", Timestamp),
        ("state_change", Timestamp),
        ("wait_event_type", Text),
        ("wait_event", Text),
        ("state", Text),
        ("backend_xid", Text),
        ("backend_xmin", Text),
        ("query_id", BigInt),
        ("query", Text),
        ("backend_type", Text),
    ],
    rows: pg_stat_activity,
}];

/// Every session; a role that is not a superuser sees what other roles' sessions run as
/// `<insufficient privilege>`, as in PostgreSQL.
fn pg_stat_activity(ctx: &mut ExecCtx) -> Result<Rows> {
    let database = ctx.database_name();
    let sessions = ctx.activities()?.all();
    let viewer = (!ctx.is_superuser()?).then(|| ctx.current_user());
    Ok(sessions
        .iter()
        .map(|session| {
            let mut row = activity_row(&database, session);
            if viewer.as_ref().is_some_and(|v| *v != session.user) {
                row[QUERY] = name("<insufficient privilege>");
            }
            row
        })
        .collect())
}

/// The position of `query` in a `pg_stat_activity` row.
const QUERY: usize = 20;

fn activity_row(database: &str, session: &Activity) -> Vec<Value> {
    let doing = session.doing();
    let time = |t: Option<i64>| t.map_or(Value::Null, Value::Timestamp);
    vec![
        oid(oids::DATABASE),
        name(database),
        Value::Integer(session.pid),
        Value::Null,
        oid(oids::SUPERUSER),
        name(&session.user),
        name(&doing.application_name),
        session
            .address
            .map_or(Value::Null, |a| name(&a.ip().to_string())),
        Value::Null,
        session
            .address
            .map_or(Value::Integer(-1), |a| Value::Integer(a.port().into())),
        Value::Timestamp(session.backend_start),
        time(doing.xact_start),
        time(doing.query_start),
        Value::Timestamp(doing.state_change),
        Value::Null,
        Value::Null,
        name(doing.state.name()),
        Value::Null,
        Value::Null,
        Value::Null,
        name(&doing.query),
        name("client backend"),
    ]
}

/// `pg_cancel_backend(pid)`: cancels that session's running statement; false if none has `pid`.
pub fn cancel_backend(args: &[Value], ctx: &mut ExecCtx) -> Result<Value> {
    let pid = pid_argument(&args[0])?;
    check_signal(ctx, pid, "query is being canceled")?;
    Ok(Value::Boolean(ctx.activities()?.cancel(pid)))
}

/// `pg_terminate_backend(pid)`: ends that session (its running statement canceled, its
/// transaction rolled back); false if none has `pid`.
pub fn terminate_backend(args: &[Value], ctx: &mut ExecCtx) -> Result<Value> {
    let pid = pid_argument(&args[0])?;
    check_signal(ctx, pid, "process is being terminated")?;
    Ok(Value::Boolean(ctx.activities()?.terminate(pid)))
}

/// A role that is not a superuser may cancel or end only its own sessions (PostgreSQL's rule;
/// SteadyDB has no `pg_signal_backend` membership).
fn check_signal(ctx: &mut ExecCtx, pid: i32, whose: &str) -> Result<()> {
    if ctx.is_superuser()? {
        return Ok(());
    }
    let user = ctx.current_user();
    let target = ctx.activities()?.all().into_iter().find(|a| a.pid == pid);
    match target {
        Some(activity) if activity.user != user => Err(SqlError::new(
            "42501",
            format!("must be a member of the role whose {whose}"),
        )),
        _ => Ok(()),
    }
}

fn pid_argument(value: &Value) -> Result<i32> {
    int_arg(value)
        .and_then(|pid| i32::try_from(pid).ok())
        .ok_or_else(|| SqlError::new("22003", "a process id must be an integer"))
}
