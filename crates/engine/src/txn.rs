//! Transaction ids, commit sequence numbers and snapshots.
//!
//! A writer gets a [`TxnId`] when it begins; at commit it gets the next [`Csn`] from one counter. A
//! snapshot is the last CSN handed out when it was taken: it sees exactly the versions whose writer
//! committed with a CSN at or below it (plus its own writes).
//!
//! ```text
//! txn ids:  [ from earlier runs: all committed ][ this run: active | committed(csn) | aborted ]
//!           0                           first_of_run                                 next
//! ```
//!
//! Invariants: every id below `first_of_run` belongs to a transaction that committed before the last
//! restart (recovery rolled back the others), so its versions are visible to every snapshot. An
//! aborted transaction has undone all its writes before it leaves the active set, so a record never
//! names an aborted writer. Committed transactions are forgotten once their CSN is at or below every
//! open snapshot ([`TxnManager::forget_below`]); a forgotten id reads as committed at CSN 0.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// Identifies a transaction.
pub type TxnId = u64;
/// A commit sequence number; a snapshot is the CSN it was taken at.
pub type Csn = u64;

/// An open snapshot: the CSN it sees up to, and a serial number telling it from others at that CSN.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Snapshot {
    pub csn: Csn,
    serial: u64,
}

/// What is known of a transaction that wrote a version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxnStatus {
    Active,
    Committed(Csn),
    /// Rolled back: its versions are gone, but a reader may still hold one it read just before.
    Aborted,
}

/// Transaction bookkeeping shared by all sessions.
///
/// Every id below `settled_below` belongs to a transaction that committed so long ago that every
/// snapshot, open or future, sees it (its CSN is forgotten): [`TxnManager::status`] answers for
/// such an id without taking the lock, which is what most rows of a table carry once purge has
/// passed them. The bound only rises, at [`TxnManager::forget_below`].
pub struct TxnManager {
    state: Mutex<State>,
    settled_below: AtomicU64,
}

struct State {
    first_of_run: TxnId,
    next_txn: TxnId,
    last_csn: Csn,
    active: HashSet<TxnId>,
    committed: HashMap<TxnId, Csn>,
    /// Rolled-back transactions, each with the next id at the time: remembered until every
    /// transaction that was running then has ended.
    aborted: HashMap<TxnId, TxnId>,
    /// Open snapshots by (CSN, serial number), with when each was taken.
    snapshots: BTreeMap<Snapshot, Instant>,
    next_serial: u64,
    lowest_released: Csn,
}

impl State {
    fn status(&self, txn: TxnId) -> TxnStatus {
        if txn >= self.first_of_run && self.active.contains(&txn) {
            return TxnStatus::Active;
        }
        if self.aborted.contains_key(&txn) {
            return TxnStatus::Aborted;
        }
        TxnStatus::Committed(self.committed.get(&txn).copied().unwrap_or(0))
    }
}

impl TxnManager {
    /// Starts handing out ids at `first_of_run` (every smaller id is an earlier run's committed
    /// transaction) and CSNs after `last_csn`.
    pub fn new(first_of_run: TxnId, last_csn: Csn) -> Self {
        TxnManager {
            settled_below: AtomicU64::new(first_of_run),
            state: Mutex::new(State {
                first_of_run,
                next_txn: first_of_run,
                last_csn,
                active: HashSet::new(),
                committed: HashMap::new(),
                aborted: HashMap::new(),
                snapshots: BTreeMap::new(),
                next_serial: 0,
                lowest_released: Csn::MAX,
            }),
        }
    }

    /// A new active transaction id.
    pub fn begin(&self) -> TxnId {
        let mut state = self.state.lock();
        let id = state.next_txn;
        state.next_txn += 1;
        state.active.insert(id);
        id
    }

    /// The next id `begin` will hand out.
    pub fn next_txn(&self) -> TxnId {
        self.state.lock().next_txn
    }

    /// Takes a snapshot and registers it until [`TxnManager::release_snapshot`].
    pub fn take_snapshot(&self) -> Snapshot {
        let mut state = self.state.lock();
        state.next_serial += 1;
        let snapshot = Snapshot {
            csn: state.last_csn,
            serial: state.next_serial,
        };
        state.snapshots.insert(snapshot, Instant::now());
        snapshot
    }

    pub fn release_snapshot(&self, snapshot: Snapshot) {
        let mut state = self.state.lock();
        state.snapshots.remove(&snapshot);
        state.lowest_released = state.lowest_released.min(snapshot.csn);
    }

    /// The lowest CSN of the snapshots released since the last call (`Csn::MAX` if none). A version
    /// valid before that CSN that some open snapshot needed at the last call is still needed: new
    /// snapshots only see newer data.
    pub fn take_lowest_released(&self) -> Csn {
        std::mem::replace(&mut self.state.lock().lowest_released, Csn::MAX)
    }

    /// Gives back what [`TxnManager::take_lowest_released`] returned, for a later call, when the
    /// caller could not act on it yet.
    pub fn restore_lowest_released(&self, csn: Csn) {
        let mut state = self.state.lock();
        state.lowest_released = state.lowest_released.min(csn);
    }

    /// The CSNs of the open snapshots, ascending (with repeats).
    pub fn snapshot_csns(&self) -> Vec<Csn> {
        self.state.lock().snapshots.keys().map(|s| s.csn).collect()
    }

    /// Commits an active transaction: it gets the next CSN, visible to snapshots taken from now on.
    pub fn commit(&self, txn: TxnId) -> Csn {
        let mut state = self.state.lock();
        state.last_csn += 1;
        let csn = state.last_csn;
        state.active.remove(&txn);
        state.committed.insert(txn, csn);
        csn
    }

    /// Ends a transaction that wrote nothing.
    pub fn finish_read_only(&self, txn: TxnId) {
        self.state.lock().active.remove(&txn);
    }

    /// Ends a rolled-back transaction (after its writes were undone).
    pub fn abort(&self, txn: TxnId) {
        let mut state = self.state.lock();
        state.active.remove(&txn);
        let next = state.next_txn;
        state.aborted.insert(txn, next);
    }

    /// Every id below this one is a settled transaction (see the type's doc): committed, and seen
    /// by every snapshot.
    pub fn settled_below(&self) -> TxnId {
        self.settled_below.load(Ordering::Acquire)
    }

    /// The status of the writer of a version.
    pub fn status(&self, txn: TxnId) -> TxnStatus {
        if txn < self.settled_below.load(Ordering::Acquire) {
            return TxnStatus::Committed(0);
        }
        self.state.lock().status(txn)
    }

    /// The statuses of many writers under at most one acquisition of the lock (a scan's batch).
    pub fn statuses(&self, txns: impl IntoIterator<Item = TxnId>) -> HashMap<TxnId, TxnStatus> {
        let settled = self.settled_below.load(Ordering::Acquire);
        let mut statuses = HashMap::new();
        let mut unsettled = Vec::new();
        for txn in txns {
            if txn < settled {
                statuses.insert(txn, TxnStatus::Committed(0));
            } else {
                unsettled.push(txn);
            }
        }
        if !unsettled.is_empty() {
            let state = self.state.lock();
            statuses.extend(unsettled.into_iter().map(|txn| (txn, state.status(txn))));
        }
        statuses
    }

    /// The CSN below which no open snapshot (or future one) can see a difference: the oldest open
    /// snapshot, or the last CSN when none is open. Snapshots older than `max_age` do not count:
    /// their transactions are refused further reads.
    pub fn horizon(&self, max_age: Option<Duration>) -> Csn {
        let state = self.state.lock();
        state
            .snapshots
            .iter()
            .find(|(_, taken)| max_age.is_none_or(|age| taken.elapsed() <= age))
            .map_or(state.last_csn, |(snapshot, _)| snapshot.csn)
    }

    /// Forgets committed transactions whose CSN is at or below `horizon` (every snapshot sees them),
    /// and rolled-back ones no running transaction can have met.
    pub fn forget_below(&self, horizon: Csn) {
        let mut state = self.state.lock();
        state.committed.retain(|_, csn| *csn > horizon);
        let oldest_running = state.active.iter().min().copied().unwrap_or(state.next_txn);
        state.aborted.retain(|_, next| *next > oldest_running);
        let remembered = state.committed.keys().chain(state.aborted.keys()).min();
        let settled = remembered.map_or(oldest_running, |&txn| txn.min(oldest_running));
        self.settled_below.fetch_max(settled, Ordering::AcqRel);
    }

    /// Counters: open transactions and snapshots, the last CSN.
    pub fn stats(&self) -> TxnStats {
        let state = self.state.lock();
        TxnStats {
            active: state.active.len(),
            snapshots: state.snapshots.len(),
            last_csn: state.last_csn,
            oldest_snapshot: state.snapshots.keys().next().map(|s| s.csn),
        }
    }
}

/// Figures of the transaction manager.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TxnStats {
    pub active: usize,
    pub snapshots: usize,
    pub last_csn: Csn,
    pub oldest_snapshot: Option<Csn>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snapshots_see_commits_at_or_before_them() {
        let txns = TxnManager::new(100, 0);
        assert_eq!(
            txns.status(5),
            TxnStatus::Committed(0),
            "ids of earlier runs are committed"
        );
        let a = txns.begin();
        let snapshot = txns.take_snapshot();
        let before = snapshot.csn;
        assert_eq!(txns.status(a), TxnStatus::Active);
        let csn = txns.commit(a);
        assert!(csn > before);
        assert_eq!(txns.status(a), TxnStatus::Committed(csn));
        assert_eq!(txns.snapshot_csns(), vec![before]);
        assert_eq!(txns.horizon(None), before);
        assert_eq!(
            txns.horizon(Some(Duration::ZERO)),
            csn,
            "an expired snapshot holds nothing back"
        );
        txns.release_snapshot(snapshot);
        assert_eq!(txns.horizon(None), csn);
        txns.forget_below(csn);
        assert_eq!(txns.status(a), TxnStatus::Committed(0));
    }

    #[test]
    fn only_forgotten_commits_are_settled() {
        let txns = TxnManager::new(100, 0);
        let old = txns.begin();
        let rolled_back = txns.begin();
        let running = txns.begin();
        let committed = txns.commit(old);
        txns.abort(rolled_back);
        let later = txns.begin();
        let later_csn = txns.commit(later);
        let snapshot = txns.take_snapshot();
        txns.forget_below(committed);
        assert_eq!(
            txns.status(old),
            TxnStatus::Committed(0),
            "forgotten: settled"
        );
        assert_eq!(
            txns.status(rolled_back),
            TxnStatus::Aborted,
            "met by a running one"
        );
        assert_eq!(txns.status(running), TxnStatus::Active);
        assert_eq!(txns.status(later), TxnStatus::Committed(later_csn));
        let statuses = txns.statuses([old, rolled_back, running, later]);
        assert_eq!(statuses[&rolled_back], TxnStatus::Aborted);
        assert_eq!(statuses[&later], TxnStatus::Committed(later_csn));
        txns.release_snapshot(snapshot);
        let last = txns.commit(running);
        txns.forget_below(last);
        assert_eq!(
            txns.status(running),
            TxnStatus::Committed(0),
            "all ended: settled"
        );
    }
}
