//! Index verification: does each secondary index agree with its table? (`steady check`, tests.)
//!
//! Under one snapshot, every row it sees must have its entry in each secondary index of the
//! table: an entry missing is a row that queries through the index do not find. An entry that
//! no row the snapshot sees has is *stale* — left for an older snapshot, a version purge has not
//! reached yet, or one never to be removed; readers skip those, so they are counted, not faulted.
//! An entry a row the snapshot sees needs, but marked stale for the snapshot, counts as missing
//! (readers pass over it).
//! Once writers have stopped and purge has caught up, an index without stale entries is exactly
//! the index a fresh build would make.

use std::cmp::Ordering;
use std::ops::Bound;
use std::sync::Arc;

use crate::engine::{Engine, Isolation};
use crate::error::Result;
use crate::table::passes_over;

/// What the verification of one secondary index found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexCheck {
    pub table: String,
    pub index: String,
    /// Entries in the index.
    pub entries: u64,
    /// Primary keys of rows the index has no entry for (the first [`MISSING_SHOWN`]).
    pub missing: Vec<Vec<u8>>,
    /// How many rows the index has no entry for.
    pub missing_count: u64,
    /// Entries no row the snapshot sees has.
    pub stale: u64,
}

/// How many missing rows a check names.
pub const MISSING_SHOWN: usize = 10;

impl Engine {
    /// Verifies every secondary index of every table against its table, under one snapshot.
    pub fn check_indexes(self: &Arc<Self>) -> Result<Vec<IndexCheck>> {
        let mut txn = self.begin(Isolation::RepeatableRead)?;
        let mut checks = Vec::new();
        for table in self.tables() {
            for index in &table.indexes {
                let snapshot = txn.snapshot()?;
                let expected =
                    txn.index_entries(&table, &index.without_unique(), snapshot, None)?;
                let mut check = IndexCheck {
                    table: table.name.clone(),
                    index: index.name.clone(),
                    entries: 0,
                    missing: Vec::new(),
                    missing_count: 0,
                    stale: 0,
                };
                let mut expected = expected.iter().map(|(key, pk, _)| (key, pk)).peekable();
                let tree = self.tree(index.id)?;
                for entry in tree.range(Bound::Unbounded, Bound::Unbounded) {
                    let (key, value) = entry?;
                    check.entries += 1;
                    while let Some((_, pk)) = expected.next_if(|(want, _)| *want < &key[..]) {
                        check.note_missing(pk);
                    }
                    match expected.peek().map(|(want, _)| (*want).cmp(&key[..])) {
                        // An entry marked stale for this snapshot hides its row from readers.
                        Some(Ordering::Equal) => match expected.next() {
                            Some((_, pk)) if passes_over(index.entry_format, &value, snapshot) => {
                                check.note_missing(pk)
                            }
                            _ => {}
                        },
                        _ => check.stale += 1,
                    }
                }
                expected.for_each(|(_, pk)| check.note_missing(pk));
                checks.push(check);
            }
        }
        txn.commit()?;
        Ok(checks)
    }
}

impl IndexCheck {
    fn note_missing(&mut self, pk: &[u8]) {
        self.missing_count += 1;
        if self.missing.len() < MISSING_SHOWN {
            self.missing.push(pk.to_vec());
        }
    }
}
