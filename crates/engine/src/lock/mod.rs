//! The row lock manager of the transaction layer.
//!
//! **What it owns.** Every lock any transaction holds or waits for. A resource is a [`LockKey`]
//! (an index id and key bytes: a row's primary key in a table's clustered index, an empty key for a
//! whole-table lock, or any other named resource). Modes are [`LockMode::Shared`] and
//! [`LockMode::Exclusive`]; only Shared is compatible with Shared. Locks are held until
//! [`LockManager::release_all`] at the end of the transaction (strict two-phase locking).
//!
//! **Layout.**
//! * The lock table is split into [`SHARDS`] shards by a hash of the key, each a mutex over a map
//!   `key → (holders, FIFO queue of waiters)`, so unrelated rows never contend on one mutex. The
//!   uncontended path (grant at once, release) takes one shard mutex and nothing else.
//! * Each transaction's list of held keys (for `release_all`) lives in a second table sharded by
//!   transaction id.
//! * The waits-for view is global: one mutex over `txn → the request it waits on`. Only a request
//!   that has to wait takes it (and the waiter once more when its wait ends).
//! * A waiter blocks on its own condition variable, used with its key's shard mutex; the thread
//!   that grants, cancels or withdraws the request sets the waiter's state and notifies it. The
//!   waiter never polls.
//!
//! **Invariants** (each under the shard mutex of the key).
//! * The holders of a key are pairwise compatible; a transaction appears at most once among them.
//! * A queued request is granted only when it is compatible with every other holder and with every
//!   request queued ahead of it (FIFO: a writer is not starved by a stream of later readers).
//! * A new request is granted at once under the same rule (no earlier incompatible waiter).
//!   Re-acquiring a held lock in the same or a weaker mode returns at once. An upgrade
//!   (Shared → Exclusive) of a sole holder is granted at once; otherwise it queues ahead of every
//!   non-upgrade waiter (those wait for the upgrader anyway, so queueing it behind them would be
//!   a deadlock by construction).
//! * A request that leaves the queue without being granted (timeout, deadlock, cancel) leaves no
//!   trace, and the requests behind it are re-examined at once.
//! * A key with neither holders nor waiters has no entry.
//!
//! **Lock order.** waits-for mutex → lock-table shards (ascending when several). Only the deadlock
//! check holds more than one lock-table shard; a transaction-table shard is never held together
//! with any other lock.
//!
//! **Deadlock detection.** Waiter `A` waits for `B` when `B` holds the key in a mode incompatible
//! with `A`'s request, or `B`'s incompatible request is queued ahead of `A`'s (PostgreSQL's hard and
//! soft edges). A cycle can only be closed by a new waiter, and new waiters register one at a time
//! under the waits-for mutex, so every requester that has to wait checks at once, before sleeping,
//! whether a cycle runs through itself: it takes every lock-table shard (a consistent snapshot, as
//! PostgreSQL's `DeadLockCheck` takes every lock partition) and searches breadth-first from its own
//! request. If there is a cycle, the requester that closed it withdraws and fails with
//! [`LockError::Deadlock`] (SQLSTATE 40P01), whose detail names every transaction and key on the
//! (shortest) cycle; the others keep waiting and proceed once the victim's transaction releases
//! its locks. PostgreSQL first sleeps `deadlock_timeout` (1 s) because its check is expensive; this
//! one costs [`SHARDS`] uncontended mutex acquisitions and a walk over the waiters, and only runs
//! when a request has to wait anyway.
//!
//! **Timeouts and cancellation.** `lock` takes an optional timeout ([`LockError::Timeout`], 55P03);
//! a zero timeout never waits (NOWAIT). [`LockManager::cancel`] ends the wait a transaction is in
//! right now with [`LockError::Cancelled`] (57014) and tells whether there was one; a transaction
//! that is not waiting is not affected. [`LockManager::interrupt`] is the cancel that cannot be
//! lost: it ends the current wait, or else is remembered (under the waits-for mutex, which every
//! wait registers under) and ends the transaction's next wait at once, until
//! [`LockManager::forget_interrupt`] or `release_all`. A statement's cancel request uses it, so a
//! cancel that lands between the statement's last look at its flag and a lock wait still ends it.
//!
//! One thread at a time acts for a transaction (`lock` and `release_all` are not called
//! concurrently for the same `TxnId`); `cancel`, `holds`, `waiting_for` and `stats` may be called
//! from any thread.

use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt;
use std::sync::atomic::{AtomicU64, AtomicU8, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;
use std::time::{Duration, Instant};

use ahash::RandomState;
use parking_lot::{Condvar, Mutex, MutexGuard};

/// A transaction id, as the lock manager sees it.
pub type TxnId = u64;

/// One lock a transaction holds (`granted`) or waits for, as [`LockManager::snapshot`] saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LockInfo {
    pub key: LockKey,
    pub txn: TxnId,
    pub mode: LockMode,
    pub granted: bool,
}

/// Number of lock-table shards (and of transaction-table shards).
pub const SHARDS: usize = 64;

/// A lockable resource.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LockKey {
    pub index_id: u64,
    pub key: Vec<u8>,
}

impl LockKey {
    pub fn new(index_id: u64, key: impl Into<Vec<u8>>) -> Self {
        Self {
            index_id,
            key: key.into(),
        }
    }
}

impl fmt::Display for LockKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "(index {}, key \\x", self.index_id)?;
        self.key.iter().try_for_each(|b| write!(f, "{b:02x}"))?;
        write!(f, ")")
    }
}

/// A lock mode; `Exclusive` is stronger than `Shared`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LockMode {
    Shared,
    Exclusive,
}

impl LockMode {
    /// Whether two transactions may hold the key in these modes at the same time.
    pub fn compatible(self, other: LockMode) -> bool {
        self == LockMode::Shared && other == LockMode::Shared
    }
}

/// Why a lock request failed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum LockError {
    #[error("canceling statement due to lock timeout")]
    Timeout,
    /// `cycle` starts with the requester that closed it; each waits for the next.
    #[error("deadlock detected")]
    Deadlock { cycle: Vec<TxnId>, detail: String },
    #[error("canceling statement due to user request")]
    Cancelled,
}

impl LockError {
    /// The PostgreSQL SQLSTATE of this error.
    pub fn sqlstate(&self) -> &'static str {
        match self {
            LockError::Timeout => "55P03",
            LockError::Deadlock { .. } => "40P01",
            LockError::Cancelled => "57014",
        }
    }

    /// The error's DETAIL line, if it has one.
    pub fn detail(&self) -> Option<&str> {
        match self {
            LockError::Deadlock { detail, .. } => Some(detail),
            _ => None,
        }
    }
}

/// Counters since the manager was created (`locks_held`: right now).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LockStats {
    pub lock_waits: u64,
    pub deadlocks: u64,
    pub timeouts: u64,
    pub locks_held: usize,
}

/// The lock manager; see the module documentation.
pub struct LockManager {
    hasher: RandomState,
    shards: Box<[Mutex<Table>]>,
    txns: Box<[Mutex<HeldKeys>]>,
    waits: Mutex<Waits>,
    /// Transactions whose next wait ends at once ([`LockManager::interrupt`]); taken only while
    /// holding `waits`, or alone.
    interrupted: Mutex<HashSet<TxnId, RandomState>>,
    counters: Counters,
}

/// Lock tables hash with aHash (keyed per process, so clients cannot pick colliding keys): the
/// standard SipHash was the larger part of a row lock's cost in profiles of bulk inserts.
type Table = HashMap<LockKey, LockEntry, RandomState>;
type Waits = HashMap<TxnId, Wait, RandomState>;
/// The keys each transaction holds, for `release_all`.
type HeldKeys = HashMap<TxnId, Vec<LockKey>, RandomState>;

#[derive(Default)]
struct Counters {
    lock_waits: AtomicU64,
    deadlocks: AtomicU64,
    timeouts: AtomicU64,
    locks_held: AtomicUsize,
}

/// What a waiting transaction waits on (the waits-for view).
struct Wait {
    key: LockKey,
    mode: LockMode,
    slot: Arc<Slot>,
}

/// A queued request's wake-up point. `state` only changes under the key's shard mutex (it is
/// atomic just to be shared), and `cv` is only used with that mutex.
struct Slot {
    cv: Condvar,
    state: AtomicU8,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum SlotState {
    Waiting,
    Granted,
    Cancelled,
    Withdrawn,
}

impl Slot {
    fn new() -> Self {
        Self {
            cv: Condvar::new(),
            state: AtomicU8::new(SlotState::Waiting as u8),
        }
    }

    fn state(&self) -> SlotState {
        match self.state.load(Relaxed) {
            0 => SlotState::Waiting,
            1 => SlotState::Granted,
            2 => SlotState::Cancelled,
            _ => SlotState::Withdrawn,
        }
    }

    /// Ends the wait; the caller holds the key's shard mutex.
    fn finish(&self, state: SlotState) {
        self.state.store(state as u8, Relaxed);
        self.cv.notify_one();
    }

    /// The outcome of a wait that has ended.
    fn result(&self) -> Result<(), LockError> {
        match self.state() {
            SlotState::Granted => Ok(()),
            _ => Err(LockError::Cancelled),
        }
    }
}

struct Holder {
    txn: TxnId,
    mode: LockMode,
}

struct Waiter {
    txn: TxnId,
    mode: LockMode,
    slot: Arc<Slot>,
}

/// The holders and the FIFO queue of one key.
#[derive(Default)]
struct LockEntry {
    holders: Vec<Holder>,
    queue: VecDeque<Waiter>,
}

/// A granted request: `New` when the transaction did not hold the key before.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Grant {
    New,
    Held,
}

/// The outcome of a request made under the waits-for mutex.
enum Step {
    Granted(Grant),
    Wait { slot: Arc<Slot>, grant: Grant },
}

impl LockEntry {
    fn held_by(&self, txn: TxnId) -> Option<LockMode> {
        self.holders.iter().find(|h| h.txn == txn).map(|h| h.mode)
    }

    fn is_empty(&self) -> bool {
        self.holders.is_empty() && self.queue.is_empty()
    }

    /// Compatible with every other holder and with `ahead`, the strongest request queued before it.
    fn admits(&self, txn: TxnId, mode: LockMode, ahead: Option<LockMode>) -> bool {
        ahead.is_none_or(|a| a.compatible(mode))
            && self
                .holders
                .iter()
                .all(|h| h.txn == txn || h.mode.compatible(mode))
    }

    fn grant(&mut self, txn: TxnId, mode: LockMode) {
        match self.holders.iter_mut().find(|h| h.txn == txn) {
            Some(holder) => holder.mode = holder.mode.max(mode),
            None => self.holders.push(Holder { txn, mode }),
        }
    }

    /// Grants a new request at once if the rules allow it.
    fn try_grant(&mut self, txn: TxnId, mode: LockMode) -> Option<Grant> {
        let held = self.held_by(txn);
        if held.is_some_and(|h| h >= mode) {
            return Some(Grant::Held);
        }
        // An upgrader would queue ahead of every waiter, so only the holders can stop it.
        let ahead = match held {
            Some(_) => None,
            None => self.queue.iter().map(|w| w.mode).max(),
        };
        if !self.admits(txn, mode, ahead) {
            return None;
        }
        self.grant(txn, mode);
        Some(if held.is_some() {
            Grant::Held
        } else {
            Grant::New
        })
    }

    /// Queues a request: upgrades after the upgrades already queued, others at the tail.
    fn enqueue(&mut self, waiter: Waiter) {
        let at = match self.held_by(waiter.txn) {
            Some(_) => self
                .queue
                .iter()
                .position(|w| self.held_by(w.txn).is_none())
                .unwrap_or(self.queue.len()),
            None => self.queue.len(),
        };
        self.queue.insert(at, waiter);
    }

    /// Grants, in queue order, every waiter the rules now allow, and wakes it.
    fn grant_waiters(&mut self) {
        let mut ahead = None;
        for waiter in std::mem::take(&mut self.queue) {
            if self.admits(waiter.txn, waiter.mode, ahead) {
                self.grant(waiter.txn, waiter.mode);
                waiter.slot.finish(SlotState::Granted);
            } else {
                ahead = ahead.max(Some(waiter.mode));
                self.queue.push_back(waiter);
            }
        }
    }

    fn remove_waiter(&mut self, slot: &Arc<Slot>) {
        self.queue.retain(|w| !Arc::ptr_eq(&w.slot, slot));
    }

    /// Who the queued request `slot` waits for (sorted), or None if it is not queued.
    fn blockers(&self, slot: &Arc<Slot>) -> Option<Vec<TxnId>> {
        let at = self.queue.iter().position(|w| Arc::ptr_eq(&w.slot, slot))?;
        let me = &self.queue[at];
        let holders = self.holders.iter().map(|h| (h.txn, h.mode));
        let ahead = self.queue.range(..at).map(|w| (w.txn, w.mode));
        let mut out: Vec<TxnId> = holders
            .chain(ahead)
            .filter(|&(txn, mode)| txn != me.txn && !mode.compatible(me.mode))
            .map(|(txn, _)| txn)
            .collect();
        out.sort_unstable();
        out.dedup();
        Some(out)
    }
}

/// Grants what the queue of `key` now allows and drops the entry if nothing is left.
fn settle(table: &mut Table, key: &LockKey) {
    if let Some(entry) = table.get_mut(key) {
        entry.grant_waiters();
        if entry.is_empty() {
            table.remove(key);
        }
    }
}

impl Default for LockManager {
    fn default() -> Self {
        Self::new()
    }
}

impl LockManager {
    pub fn new() -> Self {
        Self {
            hasher: RandomState::new(),
            shards: (0..SHARDS).map(|_| Mutex::default()).collect(),
            txns: (0..SHARDS).map(|_| Mutex::default()).collect(),
            waits: Mutex::default(),
            interrupted: Mutex::default(),
            counters: Counters::default(),
        }
    }

    /// Acquires `key` in `mode` for `txn`, waiting up to `timeout` (None: forever; zero: never
    /// waits). Fails with Timeout, Deadlock (this request would close a cycle) or Cancelled.
    pub fn lock(
        &self,
        txn: TxnId,
        key: LockKey,
        mode: LockMode,
        timeout: Option<Duration>,
    ) -> Result<(), LockError> {
        let grant = match self.try_now(txn, &key, mode) {
            Some(grant) => grant,
            None if timeout == Some(Duration::ZERO) => {
                self.counters.timeouts.fetch_add(1, Relaxed);
                return Err(LockError::Timeout);
            }
            None => {
                let deadline = timeout.and_then(|t| Instant::now().checked_add(t));
                let result = self.lock_slow(txn, &key, mode, deadline);
                self.count_failure(&result);
                result?
            }
        };
        if grant == Grant::New {
            self.remember(txn, key);
        }
        Ok(())
    }

    /// Releases every lock of `txn` and grants what that unblocks.
    pub fn release_all(&self, txn: TxnId) {
        self.forget_interrupt(txn);
        let keys = self.txn_shard(txn).lock().remove(&txn).unwrap_or_default();
        self.counters.locks_held.fetch_sub(keys.len(), Relaxed);
        for key in keys {
            let mut table = self.shard(&key).lock();
            if let Some(entry) = table.get_mut(&key) {
                entry.holders.retain(|h| h.txn != txn);
            }
            settle(&mut table, &key);
        }
    }

    /// Releases the lock `txn` holds on `key` (its most recent one, typically: a wait for another
    /// transaction's end is over) and grants what that unblocks.
    pub fn release(&self, txn: TxnId, key: &LockKey) {
        let released = {
            let mut held = self.txn_shard(txn).lock();
            let keys = held.get_mut(&txn);
            keys.and_then(|keys| {
                let at = keys.iter().rposition(|k| k == key)?;
                Some(keys.swap_remove(at))
            })
        };
        if released.is_none() {
            return;
        }
        self.counters.locks_held.fetch_sub(1, Relaxed);
        let mut table = self.shard(key).lock();
        if let Some(entry) = table.get_mut(key) {
            entry.holders.retain(|h| h.txn != txn);
        }
        settle(&mut table, key);
    }

    /// The mode in which `txn` holds `key`, if it does.
    pub fn holds(&self, txn: TxnId, key: &LockKey) -> Option<LockMode> {
        self.shard(key).lock().get(key)?.held_by(txn)
    }

    /// Whether any transaction holds `key` or waits for it. A writer that changes a row without
    /// a row lock asks this with the row's leaf latched: a lock granted before it looked is seen,
    /// and a holder that locks later reads the row after the change (see the engine's
    /// `Transaction::write_many_unlocked`).
    pub fn is_locked(&self, key: &LockKey) -> bool {
        self.shard(key).lock().contains_key(key)
    }

    /// The transactions `txn` waits for (sorted), or None if it is not waiting.
    pub fn waiting_for(&self, txn: TxnId) -> Option<Vec<TxnId>> {
        let waits = self.waits.lock();
        let wait = waits.get(&txn)?;
        self.shard(&wait.key)
            .lock()
            .get(&wait.key)?
            .blockers(&wait.slot)
    }

    /// Ends the wait `txn` is in right now with [`LockError::Cancelled`]; false if it was not
    /// waiting (nothing is remembered for a later wait).
    pub fn cancel(&self, txn: TxnId) -> bool {
        self.cancel_wait(&mut self.waits.lock(), txn)
    }

    fn cancel_wait(&self, waits: &mut Waits, txn: TxnId) -> bool {
        let Some(wait) = waits.get(&txn) else {
            return false;
        };
        let cancelled = self.withdraw(&wait.key, &wait.slot, SlotState::Cancelled);
        if cancelled {
            waits.remove(&txn);
        }
        cancelled
    }

    /// Ends the wait `txn` is in right now with [`LockError::Cancelled`], or else its next wait,
    /// until [`LockManager::forget_interrupt`] (its statement ended) or `release_all`.
    pub fn interrupt(&self, txn: TxnId) {
        let mut waits = self.waits.lock();
        if !self.cancel_wait(&mut waits, txn) {
            self.interrupted.lock().insert(txn);
        }
    }

    /// Whether an interrupt for `txn` is pending (its statement was cancelled while not waiting):
    /// long work that never waits looks at it now and then.
    pub fn is_interrupted(&self, txn: TxnId) -> bool {
        self.interrupted.lock().contains(&txn)
    }

    /// `txn` no longer wants its next wait interrupted.
    pub fn forget_interrupt(&self, txn: TxnId) {
        self.interrupted.lock().remove(&txn);
    }

    /// Every lock held or waited for now, shard by shard (each shard consistent in itself, as
    /// PostgreSQL's `pg_locks` is per partition): holders first, then the queue in order.
    pub fn snapshot(&self) -> Vec<LockInfo> {
        let mut locks = Vec::new();
        for shard in &self.shards {
            for (key, entry) in shard.lock().iter() {
                let held = entry.holders.iter().map(|h| (h.txn, h.mode, true));
                let queued = entry.queue.iter().map(|w| (w.txn, w.mode, false));
                locks.extend(held.chain(queued).map(|(txn, mode, granted)| LockInfo {
                    key: key.clone(),
                    txn,
                    mode,
                    granted,
                }));
            }
        }
        locks
    }

    pub fn stats(&self) -> LockStats {
        LockStats {
            lock_waits: self.counters.lock_waits.load(Relaxed),
            deadlocks: self.counters.deadlocks.load(Relaxed),
            timeouts: self.counters.timeouts.load(Relaxed),
            locks_held: self.counters.locks_held.load(Relaxed),
        }
    }

    fn shard_index(&self, key: &LockKey) -> usize {
        (self.hasher.hash_one(key) % SHARDS as u64) as usize
    }

    fn shard(&self, key: &LockKey) -> &Mutex<Table> {
        &self.shards[self.shard_index(key)]
    }

    fn txn_shard(&self, txn: TxnId) -> &Mutex<HeldKeys> {
        &self.txns[(txn % SHARDS as u64) as usize]
    }

    fn remember(&self, txn: TxnId, key: LockKey) {
        self.txn_shard(txn).lock().entry(txn).or_default().push(key);
        self.counters.locks_held.fetch_add(1, Relaxed);
    }

    fn count_failure(&self, result: &Result<Grant, LockError>) {
        let counter = match result {
            Err(LockError::Timeout) => &self.counters.timeouts,
            Err(LockError::Deadlock { .. }) => &self.counters.deadlocks,
            _ => return,
        };
        counter.fetch_add(1, Relaxed);
    }

    /// The fast path: one shard mutex, grant at once or report that the request must wait.
    fn try_now(&self, txn: TxnId, key: &LockKey, mode: LockMode) -> Option<Grant> {
        let mut table = self.shard(key).lock();
        match table.get_mut(key) {
            Some(entry) => entry.try_grant(txn, mode),
            None => {
                let entry = LockEntry {
                    holders: vec![Holder { txn, mode }],
                    queue: VecDeque::new(),
                };
                table.insert(key.clone(), entry);
                Some(Grant::New)
            }
        }
    }

    /// The slow path: register the wait, check for a deadlock, then sleep until the wait ends.
    fn lock_slow(
        &self,
        txn: TxnId,
        key: &LockKey,
        mode: LockMode,
        deadline: Option<Instant>,
    ) -> Result<Grant, LockError> {
        let mut waits = self.waits.lock();
        let (slot, grant) = match self.enqueue(txn, key, mode) {
            Step::Granted(grant) => return Ok(grant),
            Step::Wait { slot, grant } => (slot, grant),
        };
        if self.interrupted.lock().remove(&txn) {
            return self
                .abandon(&mut waits, txn, key, &slot, LockError::Cancelled)
                .map(|()| grant);
        }
        self.counters.lock_waits.fetch_add(1, Relaxed);
        let wait = Wait {
            key: key.clone(),
            mode,
            slot: Arc::clone(&slot),
        };
        waits.insert(txn, wait);
        if let Some(cycle) = self.find_cycle(&waits, txn) {
            let detail = describe(&waits, &cycle);
            let err = LockError::Deadlock { cycle, detail };
            return self
                .abandon(&mut waits, txn, key, &slot, err)
                .map(|()| grant);
        }
        drop(waits);
        self.await_grant(txn, key, &slot, deadline).map(|()| grant)
    }

    /// Grants at once if the state changed since the fast path, otherwise queues the request.
    fn enqueue(&self, txn: TxnId, key: &LockKey, mode: LockMode) -> Step {
        let mut table = self.shard(key).lock();
        let entry = table.entry(key.clone()).or_default();
        if let Some(grant) = entry.try_grant(txn, mode) {
            return Step::Granted(grant);
        }
        let grant = match entry.held_by(txn) {
            Some(_) => Grant::Held,
            None => Grant::New,
        };
        let slot = Arc::new(Slot::new());
        let waiter = Waiter {
            txn,
            mode,
            slot: Arc::clone(&slot),
        };
        entry.enqueue(waiter);
        Step::Wait { slot, grant }
    }

    /// Sleeps until the request is granted or cancelled, or withdraws it at the deadline.
    fn await_grant(
        &self,
        txn: TxnId,
        key: &LockKey,
        slot: &Arc<Slot>,
        deadline: Option<Instant>,
    ) -> Result<(), LockError> {
        let mut table = self.shard(key).lock();
        while slot.state() == SlotState::Waiting {
            let Some(deadline) = deadline else {
                slot.cv.wait(&mut table);
                continue;
            };
            if slot.cv.wait_until(&mut table, deadline).timed_out() {
                drop(table);
                return self.abandon(&mut self.waits.lock(), txn, key, slot, LockError::Timeout);
            }
        }
        drop(table);
        self.waits.lock().remove(&txn);
        slot.result()
    }

    /// Withdraws the requester's own wait and fails with `err`, unless the wait has already
    /// ended (then its outcome stands).
    fn abandon(
        &self,
        waits: &mut Waits,
        txn: TxnId,
        key: &LockKey,
        slot: &Arc<Slot>,
        err: LockError,
    ) -> Result<(), LockError> {
        let withdrawn = self.withdraw(key, slot, SlotState::Withdrawn);
        waits.remove(&txn);
        if withdrawn {
            Err(err)
        } else {
            slot.result()
        }
    }

    /// Takes a still-waiting request out of its queue, ending it in `state`, and re-examines the
    /// requests behind it. False if the wait had already ended.
    fn withdraw(&self, key: &LockKey, slot: &Arc<Slot>, state: SlotState) -> bool {
        let mut table = self.shard(key).lock();
        if slot.state() != SlotState::Waiting {
            return false;
        }
        if let Some(entry) = table.get_mut(key) {
            entry.remove_waiter(slot);
        }
        slot.finish(state);
        settle(&mut table, key);
        true
    }

    /// The shortest waits-for cycle through `start`, starting with `start`, on a consistent
    /// snapshot of every shard.
    fn find_cycle(&self, waits: &Waits, start: TxnId) -> Option<Vec<TxnId>> {
        let tables: Vec<MutexGuard<'_, Table>> = self.shards.iter().map(|s| s.lock()).collect();
        let mut parent: HashMap<TxnId, TxnId> = HashMap::new();
        let mut frontier = VecDeque::from([start]);
        while let Some(txn) = frontier.pop_front() {
            for blocker in self.blockers_in(&tables, waits, txn) {
                if blocker == start {
                    return Some(path_to(&parent, start, txn));
                }
                if let Entry::Vacant(slot) = parent.entry(blocker) {
                    slot.insert(txn);
                    frontier.push_back(blocker);
                }
            }
        }
        None
    }

    fn blockers_in(
        &self,
        tables: &[MutexGuard<'_, Table>],
        waits: &Waits,
        txn: TxnId,
    ) -> Vec<TxnId> {
        waits
            .get(&txn)
            .and_then(|w| {
                tables[self.shard_index(&w.key)]
                    .get(&w.key)?
                    .blockers(&w.slot)
            })
            .unwrap_or_default()
    }
}

/// The path `start → … → end` recorded in `parent` (child → the node it was reached from).
fn path_to(parent: &HashMap<TxnId, TxnId>, start: TxnId, end: TxnId) -> Vec<TxnId> {
    let mut path = vec![end];
    while let Some(&prev) = path.last().and_then(|t| parent.get(t)) {
        path.push(prev);
    }
    debug_assert_eq!(path.last(), Some(&start));
    path.reverse();
    path
}

/// The DETAIL of a deadlock error: one line per edge of the cycle.
fn describe(waits: &Waits, cycle: &[TxnId]) -> String {
    let next = cycle.iter().cycle().skip(1);
    let lines: Vec<String> = cycle
        .iter()
        .zip(next)
        .map(|(txn, blocker)| {
            let wait = &waits[txn];
            format!(
                "Transaction {txn} waits for {:?} lock on {}; blocked by transaction {blocker}.",
                wait.mode, wait.key
            )
        })
        .collect();
    lines.join("\n")
}

#[cfg(test)]
mod tests;
