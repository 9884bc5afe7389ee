//! Per-table counters of what statements did to each table since the server started: the
//! figures of `pg_stat_user_tables` (scans started, rows they read, rows inserted, updated and
//! deleted, ANALYZE and VACUUM runs), as PostgreSQL's cumulative statistics.
//!
//! A scan adds its rows once, when it ends, so a row read costs no shared write; a write
//! statement adds its count when it ends, committed or not (as PostgreSQL's `n_tup_*`). Live and
//! dead row counts are not kept here: the view reads the engine's, kept at commit and purge
//! (`Engine::table_rows`). Counters live in memory only and start at zero with the server.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::RwLock;
use steady_engine::version::IndexId;

use crate::execution::plan::Access;

/// The counters of one table.
#[derive(Debug, Default)]
pub struct TableCounters {
    pub seq_scan: AtomicU64,
    pub seq_tup_read: AtomicU64,
    pub idx_scan: AtomicU64,
    pub idx_tup_fetch: AtomicU64,
    pub n_tup_ins: AtomicU64,
    pub n_tup_upd: AtomicU64,
    pub n_tup_del: AtomicU64,
    pub vacuum_count: AtomicU64,
    pub analyze_count: AtomicU64,
    /// Microseconds since the Unix epoch of the last VACUUM / ANALYZE; 0 for never.
    pub last_vacuum: AtomicI64,
    pub last_analyze: AtomicI64,
}

impl TableCounters {
    /// Counts a scan starting through `access` (a full scan, or the primary key or an index).
    pub fn scan_started(&self, access: &Access) {
        let counter = match access {
            Access::Full => &self.seq_scan,
            Access::Primary(_) | Access::Index(..) => &self.idx_scan,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts `rows` rows read by a scan through `access`.
    pub fn rows_read(&self, access: &Access, rows: u64) {
        let counter = match access {
            Access::Full => &self.seq_tup_read,
            Access::Primary(_) | Access::Index(..) => &self.idx_tup_fetch,
        };
        counter.fetch_add(rows, Ordering::Relaxed);
    }

    /// Notes a VACUUM (`analyze` false) or ANALYZE run ending at `micros`.
    pub fn maintained(&self, analyze: bool, micros: i64) {
        let (count, last) = match analyze {
            true => (&self.analyze_count, &self.last_analyze),
            false => (&self.vacuum_count, &self.last_vacuum),
        };
        count.fetch_add(1, Ordering::Relaxed);
        last.store(micros, Ordering::Relaxed);
    }
}

/// The counters of every table of a database, by table id.
#[derive(Debug, Default)]
pub struct TableActivity {
    tables: RwLock<HashMap<IndexId, Arc<TableCounters>>>,
}

impl TableActivity {
    /// The counters of table `id`, created at zero on first use.
    pub fn of(&self, id: IndexId) -> Arc<TableCounters> {
        if let Some(counters) = self.tables.read().get(&id) {
            return Arc::clone(counters);
        }
        Arc::clone(self.tables.write().entry(id).or_default())
    }
}
