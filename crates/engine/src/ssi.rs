//! Serializable snapshot isolation: SERIALIZABLE transactions are REPEATABLE READ ones that also
//! track read/write anti-dependencies and fail (SQLSTATE 40001) where a cycle could form.
//!
//! ```text
//!    I --rw--> P --rw--> O        I read something P wrote after I's snapshot (P's write invisible
//!                                 to I); P read something O wrote. P is the pivot.
//! ```
//!
//! An edge `R --rw--> W` is recorded when W writes a key R has read (by a point read or inside a
//! scanned range) while W's write is invisible to R: R is still running, or committed after W's
//! snapshot. It is found from either side: when W writes (look for readers) and when R reads (look
//! for writers). A *dangerous structure* `I -> P -> O` (I may be O) fails when O committed first:
//! before P, before I (unless I is O), and, if I is a read-only transaction that already committed,
//! before I took its snapshot. This is the rule of PostgreSQL's SSI (Ports and Grittner, VLDB 2012).
//! The check runs when an edge is added — failing the transaction doing the read or write if it is
//! part of the structure — and when a transaction commits, failing it if it is a pivot.
//!
//! Only SERIALIZABLE transactions take part. A committed one is remembered while a SERIALIZABLE
//! transaction that overlapped it is still running; a rolled-back one is forgotten at once.

use std::collections::{HashMap, HashSet};
use std::ops::Bound;

use parking_lot::Mutex;

use crate::txn::{Csn, TxnId};
use crate::version::IndexId;

/// A range of keys of one index that a transaction scanned.
type ReadRange = (IndexId, Bound<Vec<u8>>, Bound<Vec<u8>>);

#[derive(Default)]
struct SerialTxn {
    snapshot: Csn,
    committed: Option<Csn>,
    points: HashSet<(IndexId, Vec<u8>)>,
    ranges: Vec<ReadRange>,
    writes: HashSet<(IndexId, Vec<u8>)>,
    ins: HashSet<TxnId>,
    outs: HashSet<TxnId>,
}

impl SerialTxn {
    fn has_read(&self, index: IndexId, key: &[u8]) -> bool {
        self.points.contains(&(index, key.to_vec()))
            || self
                .ranges
                .iter()
                .any(|(i, low, high)| *i == index && in_range(key, low, high))
    }

    fn wrote_within(&self, index: IndexId, low: &Bound<Vec<u8>>, high: &Bound<Vec<u8>>) -> bool {
        self.writes
            .iter()
            .any(|(i, key)| *i == index && in_range(key, low, high))
    }

    /// Whether this transaction's writes are invisible to a transaction with `snapshot`.
    fn invisible_to(&self, snapshot: Csn) -> bool {
        self.committed.is_none_or(|csn| csn > snapshot)
    }
}

fn in_range(key: &[u8], low: &Bound<Vec<u8>>, high: &Bound<Vec<u8>>) -> bool {
    let above = match low {
        Bound::Unbounded => true,
        Bound::Included(low) => key >= low.as_slice(),
        Bound::Excluded(low) => key > low.as_slice(),
    };
    let below = match high {
        Bound::Unbounded => true,
        Bound::Included(high) => key <= high.as_slice(),
        Bound::Excluded(high) => key < high.as_slice(),
    };
    above && below
}

/// A serialization failure found by the SSI checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Conflict;

/// The read/write dependency tracker of SERIALIZABLE transactions.
#[derive(Default)]
pub struct SsiTracker {
    txns: Mutex<HashMap<TxnId, SerialTxn>>,
}

impl SsiTracker {
    pub fn new() -> Self {
        Self::default()
    }

    /// Starts tracking a SERIALIZABLE transaction that has taken `snapshot`.
    pub fn register(&self, txn: TxnId, snapshot: Csn) {
        self.txns.lock().insert(
            txn,
            SerialTxn {
                snapshot,
                ..Default::default()
            },
        );
    }

    /// Records a point read by `reader`; adds edges to writers it could not see.
    pub fn read_point(&self, reader: TxnId, index: IndexId, key: &[u8]) -> Result<(), Conflict> {
        let range = (Bound::Included(key.to_vec()), Bound::Included(key.to_vec()));
        self.read(reader, index, range, |t| {
            t.points.insert((index, key.to_vec()))
        })
    }

    /// Records a range scan by `reader`; adds edges to writers it could not see.
    pub fn read_range(
        &self,
        reader: TxnId,
        index: IndexId,
        low: Bound<Vec<u8>>,
        high: Bound<Vec<u8>>,
    ) -> Result<(), Conflict> {
        let range = (low.clone(), high.clone());
        self.read(reader, index, range, |t| {
            t.ranges.push((index, low, high));
            true
        })
    }

    fn read(
        &self,
        reader: TxnId,
        index: IndexId,
        (low, high): (Bound<Vec<u8>>, Bound<Vec<u8>>),
        record: impl FnOnce(&mut SerialTxn) -> bool,
    ) -> Result<(), Conflict> {
        let mut txns = self.txns.lock();
        let Some(me) = txns.get_mut(&reader) else {
            return Ok(());
        };
        record(me);
        let snapshot = me.snapshot;
        let writers: Vec<TxnId> = txns
            .iter()
            .filter(|(&id, t)| id != reader && t.invisible_to(snapshot))
            .filter(|(_, t)| t.wrote_within(index, &low, &high))
            .map(|(&id, _)| id)
            .collect();
        writers
            .into_iter()
            .try_for_each(|writer| add_edge(&mut txns, reader, writer, reader))
    }

    /// Records a write by `writer`; adds edges from readers that cannot see it.
    pub fn write(&self, writer: TxnId, index: IndexId, key: &[u8]) -> Result<(), Conflict> {
        let mut txns = self.txns.lock();
        let Some(me) = txns.get_mut(&writer) else {
            return Ok(());
        };
        me.writes.insert((index, key.to_vec()));
        let snapshot = me.snapshot;
        let readers: Vec<TxnId> = txns
            .iter()
            .filter(|(&id, t)| id != writer && t.committed.is_none_or(|csn| csn > snapshot))
            .filter(|(_, t)| t.has_read(index, key))
            .map(|(&id, _)| id)
            .collect();
        readers
            .into_iter()
            .try_for_each(|reader| add_edge(&mut txns, reader, writer, writer))
    }

    /// The commit-time check: a pivot whose out-neighbour already committed fails.
    pub fn check_commit(&self, txn: TxnId) -> Result<(), Conflict> {
        let txns = self.txns.lock();
        if txns.contains_key(&txn) && pivot_is_dangerous(&txns, txn) {
            return Err(Conflict);
        }
        Ok(())
    }

    /// Marks a transaction committed at `csn` and forgets what no running transaction needs.
    pub fn committed(&self, txn: TxnId, csn: Csn) {
        let mut txns = self.txns.lock();
        if let Some(t) = txns.get_mut(&txn) {
            t.committed = Some(csn);
        }
        prune(&mut txns);
    }

    /// Forgets a rolled-back transaction and its edges.
    pub fn aborted(&self, txn: TxnId) {
        let mut txns = self.txns.lock();
        if txns.remove(&txn).is_some() {
            for t in txns.values_mut() {
                t.ins.remove(&txn);
                t.outs.remove(&txn);
            }
        }
        prune(&mut txns);
    }

    /// Transactions tracked (running or remembered after commit).
    pub fn tracked(&self) -> usize {
        self.txns.lock().len()
    }
}

/// Adds `reader --rw--> writer` and fails `current` if it is now part of a dangerous structure.
fn add_edge(
    txns: &mut HashMap<TxnId, SerialTxn>,
    reader: TxnId,
    writer: TxnId,
    current: TxnId,
) -> Result<(), Conflict> {
    if let Some(t) = txns.get_mut(&reader) {
        t.outs.insert(writer);
    }
    if let Some(t) = txns.get_mut(&writer) {
        t.ins.insert(reader);
    }
    let dangerous = [reader, writer]
        .into_iter()
        .any(|pivot| involves(txns, pivot, current) && pivot_is_dangerous(txns, pivot));
    if dangerous {
        Err(Conflict)
    } else {
        Ok(())
    }
}

/// Whether `current` is the pivot or one of its in-neighbours.
fn involves(txns: &HashMap<TxnId, SerialTxn>, pivot: TxnId, current: TxnId) -> bool {
    pivot == current || txns.get(&pivot).is_some_and(|p| p.ins.contains(&current))
}

/// Whether some `I -> pivot -> O` has O committed before the pivot and before I (see the module
/// documentation).
fn pivot_is_dangerous(txns: &HashMap<TxnId, SerialTxn>, pivot: TxnId) -> bool {
    let Some(p) = txns.get(&pivot) else {
        return false;
    };
    p.outs.iter().any(|&out| {
        let Some(out_csn) = txns.get(&out).and_then(|o| o.committed) else {
            return false;
        };
        let before_pivot = p.committed.is_none_or(|csn| out_csn < csn);
        before_pivot
            && p.ins
                .iter()
                .any(|&inn| inn == out || txns.get(&inn).is_some_and(|i| out_first(i, out_csn)))
    })
}

/// Whether O, committed at `out_csn`, committed before the in-neighbour `i` (and, for a read-only
/// `i` that committed, before `i`'s snapshot).
fn out_first(i: &SerialTxn, out_csn: Csn) -> bool {
    match i.committed {
        None => true,
        Some(_) if i.writes.is_empty() => out_csn <= i.snapshot,
        Some(csn) => out_csn < csn,
    }
}

/// Forgets committed transactions that no running SERIALIZABLE transaction overlaps.
fn prune(txns: &mut HashMap<TxnId, SerialTxn>) {
    let oldest_running = txns
        .values()
        .filter(|t| t.committed.is_none())
        .map(|t| t.snapshot)
        .min();
    let gone: Vec<TxnId> = txns
        .iter()
        .filter(|(_, t)| {
            t.committed
                .is_some_and(|csn| oldest_running.is_none_or(|oldest| csn <= oldest))
        })
        .map(|(&id, _)| id)
        .collect();
    for id in &gone {
        txns.remove(id);
    }
    for t in txns.values_mut() {
        for id in &gone {
            t.ins.remove(id);
            t.outs.remove(id);
        }
    }
}
