//! `pg_stat_user_tables` (and `pg_stat_all_tables`, the same rows: every table of a SteadyDB
//! database is a user table) — per table, the scans started and the rows they read, the rows
//! inserted, updated and deleted since the server started
//! ([`crate::execution::table_activity`]), the live rows and delete marks the engine keeps at
//! commit and purge (`n_live_tup`, `n_dead_tup`), and the last VACUUM and ANALYZE.
//!
//! The columns are PostgreSQL 15's, in its order. Purge runs continuously rather than as
//! autovacuum, so `last_autovacuum`, `last_autoanalyze` and their counts are NULL and 0; HOT
//! updates do not exist here (`n_tup_hot_upd` 0); the counters of rows changed since the last
//! ANALYZE or VACUUM are not kept (NULL).

use std::sync::atomic::Ordering;

use steady_types::{DataType, Value};

use super::model::Relation;
use super::rows::{name, oid, Rows};
use super::SystemTable;
use crate::error::Result;
use crate::execution::executor::ExecCtx;

use DataType::{BigInt, Text, TimestampTz};

const COLUMNS: &[(&str, DataType)] = &[
    ("relid", BigInt),
    ("schemaname", Text),
    ("relname", Text),
    ("seq_scan", BigInt),
    ("seq_tup_read", BigInt),
    ("idx_scan", BigInt),
    ("idx_tup_fetch", BigInt),
    ("n_tup_ins", BigInt),
    ("n_tup_upd", BigInt),
    ("n_tup_del", BigInt),
    ("n_tup_hot_upd", BigInt),
    ("n_live_tup", BigInt),
    ("n_dead_tup", BigInt),
    ("n_mod_since_analyze", BigInt),
    ("n_ins_since_vacuum", BigInt),
    ("last_vacuum", TimestampTz),
    ("last_autovacuum", TimestampTz),
    ("last_analyze", TimestampTz),
    ("last_autoanalyze", TimestampTz),
    ("vacuum_count", BigInt),
    ("autovacuum_count", BigInt),
    ("analyze_count", BigInt),
    ("autoanalyze_count", BigInt),
];

pub const VIEWS: &[SystemTable] = &[
    SystemTable {
        schema: "pg_catalog",
        name: "pg_stat_user_tables",
        columns: COLUMNS,
        rows: pg_stat_tables,
    },
    SystemTable {
        schema: "pg_catalog",
        name: "pg_stat_all_tables",
        columns: COLUMNS,
        rows: pg_stat_tables,
    },
];

fn pg_stat_tables(ctx: &mut ExecCtx) -> Result<Rows> {
    let engine = ctx.engine()?.clone();
    let mut rows = Vec::new();
    let Some(activity) = ctx.table_activity().cloned() else {
        return Ok(Vec::new());
    };
    for table in engine.tables() {
        let counters = activity.of(table.id);
        let count =
            |c: &std::sync::atomic::AtomicU64| Value::BigInt(c.load(Ordering::Relaxed) as i64);
        let last = |t: &std::sync::atomic::AtomicI64| match t.load(Ordering::Relaxed) {
            0 => Value::Null,
            micros => Value::TimestampTz(micros),
        };
        let estimate = engine.table_rows(table.id)?;
        let relid = Relation::Table(table.clone()).oid();
        rows.push(vec![
            oid(relid),
            name("public"),
            name(&table.name),
            count(&counters.seq_scan),
            count(&counters.seq_tup_read),
            count(&counters.idx_scan),
            count(&counters.idx_tup_fetch),
            count(&counters.n_tup_ins),
            count(&counters.n_tup_upd),
            count(&counters.n_tup_del),
            Value::BigInt(0),
            Value::BigInt(estimate.live as i64),
            Value::BigInt(estimate.dead as i64),
            Value::Null,
            Value::Null,
            last(&counters.last_vacuum),
            Value::Null,
            last(&counters.last_analyze),
            Value::Null,
            count(&counters.vacuum_count),
            Value::BigInt(0),
            count(&counters.analyze_count),
            Value::BigInt(0),
        ]);
    }
    Ok(rows)
}
