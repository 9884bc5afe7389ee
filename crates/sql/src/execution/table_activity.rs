//! Per-table counters of what statements did to each table since the server started: the
//! figures of `pg_stat_user_tables` (scans started, rows they read, rows inserted, updated and
//! deleted, ANALYZE and VACUUM runs), as PostgreSQL's cumulative statistics.
//!
//! As PostgreSQL's backend-local pending statistics, a session counts into its own
//! [`PendingCounts`] (its own mutex, never contended: a scan adds its rows once, when it ends;
//! a write statement its count, committed or not, as PostgreSQL's `n_tup_*`) and adds them to
//! the database's counters at most every [`FLUSH_INTERVAL`], when it ends, and before it reads
//! the view itself; so the view may lag other sessions by that much, and no statement writes a
//! shared counter (8 sysbench threads on 2 cores would otherwise contend on the same cache
//! lines for every scan; A/B runs of oltp_point_select could not tell the two apart within
//! their ±10% noise). Live and dead row counts are not kept here: the view reads the engine's,
//! kept at commit and purge (`Engine::table_rows`). Counters live in memory only and start at
//! zero with the server.

use std::collections::HashMap;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::{Mutex, RwLock};
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
    /// When the last VACUUM / ANALYZE ended, in microseconds since PostgreSQL's epoch
    /// (2000-01-01, a `timestamptz` value); 0 for never.
    pub last_vacuum: AtomicI64,
    pub last_analyze: AtomicI64,
}

impl TableCounters {
    fn add(&self, counts: &Counts) {
        let pairs = [
            (&self.seq_scan, counts.seq_scan),
            (&self.seq_tup_read, counts.seq_tup_read),
            (&self.idx_scan, counts.idx_scan),
            (&self.idx_tup_fetch, counts.idx_tup_fetch),
            (&self.n_tup_ins, counts.n_tup_ins),
            (&self.n_tup_upd, counts.n_tup_upd),
            (&self.n_tup_del, counts.n_tup_del),
        ];
        for (counter, n) in pairs.into_iter().filter(|(_, n)| *n > 0) {
            counter.fetch_add(n, Ordering::Relaxed);
        }
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

/// How often at most a session adds its pending counts to the database's.
pub const FLUSH_INTERVAL: Duration = Duration::from_millis(500);

/// One table's counts not yet added to the database's.
#[derive(Debug, Default, Clone, Copy)]
pub struct Counts {
    pub seq_scan: u64,
    pub seq_tup_read: u64,
    pub idx_scan: u64,
    pub idx_tup_fetch: u64,
    pub n_tup_ins: u64,
    pub n_tup_upd: u64,
    pub n_tup_del: u64,
}

impl Counts {
    /// Counts a scan through `access` (a full scan, or the primary key or an index) that read
    /// `rows` rows.
    pub fn scan(&mut self, access: &Access, rows: u64) {
        let (scans, read) = match access {
            Access::Full => (&mut self.seq_scan, &mut self.seq_tup_read),
            Access::Primary(_) | Access::Index(..) => (&mut self.idx_scan, &mut self.idx_tup_fetch),
        };
        *scans += 1;
        *read += rows;
    }
}

/// One session's counts not yet added to the database's (see the module doc).
#[derive(Debug)]
pub struct PendingCounts {
    tables: Mutex<Vec<(IndexId, Counts)>>,
    last_flush: Mutex<Instant>,
}

impl Default for PendingCounts {
    fn default() -> Self {
        PendingCounts {
            tables: Mutex::default(),
            last_flush: Mutex::new(Instant::now()),
        }
    }
}

impl PendingCounts {
    /// Counts into table `table`'s pending counts.
    pub fn add(&self, table: IndexId, count: impl FnOnce(&mut Counts)) {
        let mut tables = self.tables.lock();
        let at = match tables.iter().position(|(id, _)| *id == table) {
            Some(at) => at,
            None => {
                tables.push((table, Counts::default()));
                tables.len() - 1
            }
        };
        count(&mut tables[at].1);
    }

    /// Adds the pending counts to `shared` and clears them.
    pub fn flush_into(&self, shared: &TableActivity) {
        let tables = std::mem::take(&mut *self.tables.lock());
        for (table, counts) in &tables {
            shared.of(*table).add(counts);
        }
        *self.last_flush.lock() = Instant::now();
    }

    /// [`PendingCounts::flush_into`] if [`FLUSH_INTERVAL`] has passed since the last.
    pub fn flush_if_due(&self, shared: &TableActivity) {
        if self.last_flush.lock().elapsed() >= FLUSH_INTERVAL {
            self.flush_into(shared);
        }
    }
}
