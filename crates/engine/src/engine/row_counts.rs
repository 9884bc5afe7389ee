//! Each table's live rows and delete marks, kept as counters rather than found by reading the
//! table, so monitoring (`steady_tables`) answers without waiting for a single leaf latch while
//! a build, a purge or a bulk delete runs (issue 14).
//!
//! A transaction notes what each of its row writes does to its table ([`RowDeltas`]: an insert
//! adds a live row, a delete turns a live row into a delete mark, an insert over a delete mark
//! turns it back); commit adds the notes to the table's counters ([`RowCounts`]), purge takes off
//! each delete mark it removes. A rollback drops the notes with the writes; a savepoint keeps a
//! copy of them to go back to.
//!
//! Invariants:
//! * The counters describe committed work: live rows are the rows committed transactions
//!   inserted less those they deleted; delete marks are the rows committed transactions deleted
//!   that purge has not removed yet (in place or in the graveyard) and no later write replaced.
//! * A table created in this process is counted exactly from its creation. The counters are not
//!   stored: a table of an earlier run, and one whose contents a committed TRUNCATE or rebuild
//!   replaced, starts from a sample of its leaves (`Engine::estimate_rows`, as PostgreSQL's
//!   `reltuples`), taken by the purge thread, then follows every commit and purge. Writes that
//!   commit while the sample is read may be counted twice or not at all: the figure is an
//!   estimate until then.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};

use parking_lot::Mutex;

use super::RowEstimate;
use crate::version::{IndexId, Version};

/// What a table's row under a key is, before or after a write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum RowKind {
    Absent,
    Live,
    Mark,
}

impl RowKind {
    /// The kind of a version in place (None: no record).
    pub(super) fn of(version: Option<&Version>) -> RowKind {
        match version {
            None => RowKind::Absent,
            Some(version) if version.deleted => RowKind::Mark,
            Some(_) => RowKind::Live,
        }
    }

    /// The kind a write leaves: its row, or (None) its delete mark.
    pub(super) fn written(row: Option<&[u8]>) -> RowKind {
        if row.is_some() {
            RowKind::Live
        } else {
            RowKind::Mark
        }
    }

    fn counts(self) -> (i64, i64) {
        match self {
            RowKind::Absent => (0, 0),
            RowKind::Live => (1, 0),
            RowKind::Mark => (0, 1),
        }
    }
}

/// A change of a table's live rows and delete marks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Delta {
    live: i64,
    dead: i64,
}

/// A transaction's changes of its tables' counts, applied when it commits. Transactions write
/// few tables: a list searched from its end.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct RowDeltas(Vec<(IndexId, Delta)>);

impl RowDeltas {
    /// Notes a write of `table` that turned a row of kind `before` into one of kind `after`.
    pub(super) fn note(&mut self, table: IndexId, before: RowKind, after: RowKind) {
        let (before, after) = (before.counts(), after.counts());
        let delta = self.of(table);
        delta.live += after.0 - before.0;
        delta.dead += after.1 - before.1;
    }

    /// Notes `rows` new rows inserted into `table` where no record was.
    pub(super) fn note_inserted(&mut self, table: IndexId, rows: usize) {
        self.of(table).live += rows as i64;
    }

    fn of(&mut self, table: IndexId) -> &mut Delta {
        match self.0.iter().rposition(|(id, _)| *id == table) {
            Some(at) => &mut self.0[at].1,
            None => {
                self.0.push((table, Delta::default()));
                &mut self.0.last_mut().expect("just pushed").1
            }
        }
    }
}

/// One table's counters.
#[derive(Debug, Clone, Copy, Default)]
struct TableCounts {
    live: i64,
    dead: i64,
    /// Whether they started from the table's creation or a sample (else only changes since
    /// this process opened the database, or since a rewrite, are in them).
    settled: bool,
}

/// Every table's counters (see the module documentation).
#[derive(Debug)]
pub(crate) struct RowCounts {
    tables: Mutex<HashMap<IndexId, TableCounts>>,
    /// Some table's counters are not settled: the purge thread samples it.
    unsettled: AtomicBool,
}

impl RowCounts {
    /// Counters for tables of an earlier run: all unsettled until sampled.
    pub(super) fn new() -> Self {
        RowCounts {
            tables: Mutex::default(),
            unsettled: AtomicBool::new(true),
        }
    }

    /// A table created now: it has no rows.
    pub(crate) fn created(&self, table: IndexId) {
        let settled = TableCounts {
            settled: true,
            ..TableCounts::default()
        };
        self.tables.lock().insert(table, settled);
    }

    /// Adds a committed transaction's changes.
    pub(super) fn commit(&self, deltas: &RowDeltas) {
        if deltas.0.is_empty() {
            return;
        }
        let mut tables = self.tables.lock();
        for (table, delta) in &deltas.0 {
            let counts = tables.entry(*table).or_default();
            counts.live += delta.live;
            counts.dead += delta.dead;
        }
    }

    /// Purge removed `marks` delete marks of `table`.
    pub(super) fn marks_removed(&self, table: IndexId, marks: usize) {
        if marks > 0 {
            let mut tables = self.tables.lock();
            tables.entry(table).or_default().dead -= marks as i64;
        }
    }

    /// A committed rewrite replaced these tables' contents: their counters start again from a
    /// sample.
    pub(super) fn forget(&self, tables: impl IntoIterator<Item = IndexId>) {
        let mut counts = self.tables.lock();
        for table in tables {
            counts.remove(&table);
        }
        self.unsettled.store(true, Ordering::Release);
    }

    /// Whether some table's counters wait for a sample (cleared: the caller samples them).
    pub(super) fn take_unsettled(&self) -> bool {
        self.unsettled.swap(false, Ordering::AcqRel)
    }

    /// Settles a table's counters with a sample of its leaves.
    pub(super) fn settle(&self, table: IndexId, sample: RowEstimate) {
        let mut tables = self.tables.lock();
        let counts = tables.entry(table).or_default();
        if !counts.settled {
            *counts = TableCounts {
                live: sample.live as i64,
                dead: sample.dead as i64,
                settled: true,
            };
        }
    }

    /// A table's settled counters (None: not settled yet).
    pub(super) fn get(&self, table: IndexId) -> Option<RowEstimate> {
        let counts = *self.tables.lock().get(&table)?;
        counts.settled.then(|| RowEstimate {
            live: counts.live.max(0) as u64,
            dead: counts.dead.max(0) as u64,
        })
    }

    /// Whether a table's counters are settled.
    pub(super) fn is_settled(&self, table: IndexId) -> bool {
        self.tables.lock().get(&table).is_some_and(|c| c.settled)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deltas_follow_each_kind_of_write() {
        let mut deltas = RowDeltas::default();
        deltas.note_inserted(20, 3);
        deltas.note(20, RowKind::Live, RowKind::Mark);
        deltas.note(20, RowKind::Live, RowKind::Live);
        deltas.note(21, RowKind::Mark, RowKind::Live);
        let counts = RowCounts::new();
        counts.created(20);
        counts.created(21);
        counts.commit(&deltas);
        counts.marks_removed(20, 1);
        assert_eq!(counts.get(20), Some(RowEstimate { live: 2, dead: 0 }));
        // 21 had a mark this process did not count (a sample would have): shown as none.
        assert_eq!(counts.get(21), Some(RowEstimate { live: 1, dead: 0 }));
    }

    #[test]
    fn a_sample_settles_only_unsettled_counters() {
        let counts = RowCounts::new();
        let mut deltas = RowDeltas::default();
        deltas.note_inserted(30, 5);
        counts.commit(&deltas);
        assert_eq!(counts.get(30), None);
        let sample = RowEstimate { live: 100, dead: 7 };
        counts.settle(30, sample);
        assert_eq!(counts.get(30), Some(sample));
        counts.settle(30, RowEstimate::default());
        assert_eq!(counts.get(30), Some(sample));
        counts.forget([30]);
        assert!(counts.take_unsettled());
        assert_eq!(counts.get(30), None);
    }
}
