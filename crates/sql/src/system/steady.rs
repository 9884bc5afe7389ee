//! SteadyDB's own views: `steady_metrics` (the counters of every layer), `steady_tables` (per
//! table: the pages of its file, its live rows and delete marks — counters kept at commit and
//! purge, no page read (`Engine::table_rows`) — the pages its
//! B+trees use, the free space of its file outside them, and the history store's length) and `steady_progress` (each online
//! CREATE INDEX or VACUUM FULL running: its phase, the rows of its snapshot read, and the rows
//! written meanwhile applied and still waiting, as PostgreSQL's `pg_stat_progress_create_index`).
//! They live in `pg_catalog`, as PostgreSQL's `pg_stat_*` views do: found unqualified, not
//! listed with the database's own relations (`\dv`) and not dumped by pg_dump.

use steady_types::{DataType, Value};

use super::SystemTable;
use crate::error::Result;
use crate::execution::executor::{ExecCtx, Row};

pub const VIEWS: &[SystemTable] = &[
    SystemTable {
        schema: "pg_catalog",
        name: "steady_metrics",
        columns: &[("name", DataType::Text), ("value", DataType::BigInt)],
        rows: metrics,
    },
    SystemTable {
        schema: "pg_catalog",
        name: "steady_tables",
        columns: &[
            ("name", DataType::Text),
            ("pages", DataType::BigInt),
            ("live_rows", DataType::BigInt),
            ("dead_rows", DataType::BigInt),
            ("tree_pages", DataType::BigInt),
            ("free_bytes", DataType::BigInt),
            ("history_entries", DataType::BigInt),
        ],
        rows: tables,
    },
    SystemTable {
        schema: "pg_catalog",
        name: "steady_progress",
        columns: &[
            ("pid", DataType::Integer),
            ("relation", DataType::Text),
            ("command", DataType::Text),
            ("phase", DataType::Text),
            ("tuples_done", DataType::BigInt),
            ("changes_applied", DataType::BigInt),
            ("changes_waiting", DataType::BigInt),
        ],
        rows: progress,
    },
];

fn progress(ctx: &mut ExecCtx) -> Result<Vec<Row>> {
    let engine = ctx.engine()?.clone();
    let activities = ctx.activities()?.all();
    let tables = engine.tables();
    let rows = engine.builds_in_progress().into_iter().map(|build| {
        let pid = activities.iter().find(|a| a.transaction() == build.txn);
        let table = tables.iter().find(|t| t.id == build.table);
        vec![
            pid.map_or(Value::Null, |a| Value::Integer(a.pid)),
            table.map_or(Value::Null, |t| Value::Text(t.name.clone())),
            Value::Text(build.command.to_string()),
            Value::Text(build.phase.to_string()),
            Value::BigInt(build.rows_done as i64),
            Value::BigInt(build.changes_applied as i64),
            Value::BigInt(build.changes_waiting as i64),
        ]
    });
    Ok(rows.collect())
}

fn metric(name: &str, value: u64) -> Row {
    vec![Value::Text(name.to_owned()), Value::BigInt(value as i64)]
}

fn metrics(ctx: &mut ExecCtx) -> Result<Vec<Row>> {
    let engine = ctx.engine()?;
    let pool = engine.store().pool().stats();
    let wal = engine.store().wal_stats();
    let stats = engine.stats();
    let locks = engine.locks().stats();
    Ok(vec![
        metric("buffer_pool_frames", pool.frames as u64),
        metric("buffer_pool_read_requests", pool.read_requests),
        metric("buffer_pool_reads", pool.reads),
        metric("buffer_pool_read_ahead_reads", pool.read_ahead_reads),
        metric("buffer_pool_read_ahead_wasted", pool.read_ahead_wasted),
        metric("buffer_pool_pages_written", pool.pages_written),
        metric("buffer_pool_evictions", pool.evictions),
        metric("buffer_pool_dirty_pages", pool.dirty_pages as u64),
        metric("wal_bytes_written", wal.bytes_written),
        metric("wal_current_lsn", wal.current_lsn),
        metric("wal_fsyncs", wal.fsyncs),
        metric("wal_full_page_images", wal.full_page_images),
        metric("wal_checkpoint_age", wal.checkpoint_age),
        metric("wal_capacity", wal.capacity),
        metric("transactions_active", stats.active_transactions as u64),
        metric("snapshots_open", stats.open_snapshots as u64),
        metric("last_commit_csn", stats.last_csn),
        metric("history_length", stats.history_length),
        metric("purge_lag", stats.purge_lag as u64),
        metric("purge_queued", stats.purge_queued as u64),
        metric("graveyard_length", stats.graveyard_length),
        metric("locks_held", locks.locks_held as u64),
        metric("lock_waits", locks.lock_waits),
        metric("lock_timeouts", locks.timeouts),
        metric("deadlocks", locks.deadlocks),
        metric(
            "parallel_scan_parts",
            crate::execution::executor::parallel_parts_scanned(),
        ),
    ])
}

fn tables(ctx: &mut ExecCtx) -> Result<Vec<Row>> {
    let engine = ctx.engine()?.clone();
    let history = engine.stats().history_length;
    let page_size = engine.store().pool().page_size() as u64;
    let mut rows = Vec::new();
    for table in engine.tables() {
        let pages = engine
            .store()
            .space(table.space)
            .map_or(0, |s| u64::from(s.size_in_pages()));
        let estimate = engine.table_rows(table.id)?;
        let mut tree_pages = engine.index_pages(table.id)?;
        for index in &table.indexes {
            tree_pages += engine.index_pages(index.id)?;
        }
        let free_bytes = pages.saturating_sub(tree_pages) * page_size;
        rows.push(vec![
            Value::Text(table.name.clone()),
            Value::BigInt(pages as i64),
            Value::BigInt(estimate.live as i64),
            Value::BigInt(estimate.dead as i64),
            Value::BigInt(tree_pages as i64),
            Value::BigInt(free_bytes as i64),
            Value::BigInt(history as i64),
        ]);
    }
    Ok(rows)
}
