//! The database: indexes in spaces, the system trees, transactions over them, recovery and purge.
//!
//! ```text
//! system space 0:  meta tree (1)      next transaction id block, next index id
//!                  history tree (2)   old versions, keyed (index, pk, !start csn)   see [`crate::version`]
//!                  undo tree (3)      each transaction's writes, then its commit marker
//! space n:         the trees of one table: clustered index (and, later, its secondary indexes)
//! ```
//!
//! * **A write** (under an exclusive row lock held to the end of the transaction) is three
//!   mini-transactions in this order: the undo entry, the replaced version into history (on the
//!   transaction's first write of that row), the new version in place naming its writer. A crash after
//!   any prefix is undone by recovery, which is idempotent: it puts back the history version only if
//!   the in-place record names the dead writer, and drops history entries the dead writer added.
//! * **Savepoints** ([`Transaction::savepoint`], [`Transaction::rollback_to`]). What a write
//!   replaces is saved once per *savepoint generation* (the number of savepoints taken so far): a
//!   row's first write logs its undo entry as above; a write of it in a later generation keeps the
//!   transaction's own version it replaces in memory (crash recovery and a full rollback never need
//!   one). Rolling back to a savepoint puts those own versions back, undoes the undo entries logged
//!   since, newest first, deletes them, and forgets the rows first written since. The versions those
//!   writes had moved to history stay there until the transaction ends (then purged with its other
//!   replaced versions, or deleted by its rollback; recovery empties history anyway): a reader that
//!   met an undone version may still be seeking it while the transaction writes the row again under
//!   the same id. Locks taken since the savepoint (rows, unique keys, tables, SSI reads and writes)
//!   are kept until the transaction ends. A transaction that wrote ends committed (with a CSN) or
//!   aborted, never as read-only, even if savepoints undid all its writes: a reader may still hold
//!   one of its undone versions.
//! * **Commit** appends the commit marker to the undo tree, makes the log durable (group commit), and
//!   only then hands out the CSN that makes the writes visible.
//! * **Reads** take the in-place version if its writer committed at or before the snapshot (or is
//!   the reader), else seek the history store once.
//! * **Recovery** (in [`Engine::open`]) rolls back every transaction in the undo tree without a commit
//!   marker, then empties the history and undo trees: after a restart no snapshot can need an old
//!   version. Transaction ids are handed out in blocks recorded in the meta tree, so ids never repeat
//!   across restarts, and every id from an earlier run reads as committed.
//! * **Graveyard** (system tree 4). A committed delete leaves a delete mark in place until every
//!   snapshot sees it. While an old snapshot keeps it, purge moves the mark out of the clustered
//!   index into the graveyard, so scans of newer snapshots no longer step over it (repeated
//!   `DELETE ... LIMIT n` stays linear, seed 000); a snapshot older than the newest buried delete
//!   merges the graveyard's entries into its scans, and point reads and writes that miss the
//!   clustered index look there while it is not empty.
//! * **Purge** ([`Engine::purge`]) removes a history version as soon as no open snapshot falls in the
//!   CSN range it was valid for (so versions between two open snapshots go too), and a delete-marked
//!   row once every snapshot sees the delete; then the transaction's undo entries. A committed
//!   transaction is then forgotten: its versions read as committed at CSN 0, and a version it wrote
//!   goes to history under start 0. That is safe only because (a) a commit takes its CSN and joins
//!   the purge queue atomically (under the queue's lock, which a pass also holds while it reads the
//!   horizon), so a pass at horizon `h` holds every transaction committed at or below `h`, and (b)
//!   such a pass removes every history version those transactions replaced before forgetting them:
//!   no entry with a real start CSN can remain below a start-0 entry of the same row.

use std::collections::{HashMap, VecDeque};
use std::ops::Bound;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Mutex, RwLock};
use steady_storage::btree::BTree;
use steady_storage::io::{OsVfs, Vfs};
use steady_storage::space::Space;
use steady_storage::store::{Store, StoreConfig, SYSTEM_SPACE};
use steady_storage::StorageError;

use crate::catalog::{TableDef, TABLE_PREFIX};
use crate::error::{EngineError, Result};
use crate::lock::{LockKey, LockManager, LockMode};
use crate::ssi::{Conflict, SsiTracker};
use crate::txn::{Csn, Snapshot, TxnId, TxnManager, TxnStatus};
use crate::version::{
    history_key, history_prefix, split_undo_key, undo_key, IndexId, OldVersion, UndoAction,
    UndoEntry, Version, COMMIT_MARKER,
};

const META_INDEX: IndexId = 1;
const HISTORY_INDEX: IndexId = 2;
const UNDO_INDEX: IndexId = 3;
const GRAVEYARD_INDEX: IndexId = 4;
/// The first id of a user index; smaller ids are the system trees'.
const FIRST_USER_INDEX: IndexId = 16;
const META_NEXT_TXN: &[u8] = b"next_txn";
const META_NEXT_INDEX: &[u8] = b"next_index";
const META_NEXT_ROW_ID: &[u8] = b"next_row_id";
/// Hidden row ids reserved (and recorded durably) at a time.
const ROW_ID_BLOCK: u64 = 1 << 16;
/// Transaction ids reserved (and recorded durably) at a time.
const TXN_BLOCK: TxnId = 1 << 20;
/// The transaction id purge uses to take row locks.
const PURGE_TXN: TxnId = u64::MAX - 1;
/// The lock-table "index" of transaction locks: a transaction that inserts rows without row locks
/// holds the key of its own id exclusively until it ends; a transaction that meets one of those
/// rows waits on that key (see [`Transaction::insert_without_row_lock`]).
const TXN_LOCKS: IndexId = u64::MAX;
/// Pause between background purge passes.
const PURGE_INTERVAL: Duration = Duration::from_millis(10);
/// Entries read from an index per descent by a scan.
const SCAN_BATCH: usize = 256;

/// How to open a database.
#[derive(Debug, Clone)]
pub struct EngineConfig {
    pub store: StoreConfig,
    /// How long a row lock is waited for before the statement fails (None: forever).
    pub lock_timeout: Option<Duration>,
    /// Run purge in a background thread.
    pub background_purge: bool,
    /// A snapshot older than this is refused ("snapshot too old") and no longer holds back purge
    /// (None: snapshots may grow as old as they like).
    pub max_snapshot_age: Option<Duration>,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            store: StoreConfig::default(),
            lock_timeout: None,
            background_purge: true,
            max_snapshot_age: None,
        }
    }
}

/// The four isolation levels, with PostgreSQL's semantics (and a true READ UNCOMMITTED).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Isolation {
    ReadUncommitted,
    ReadCommitted,
    RepeatableRead,
    Serializable,
}

/// A committed transaction's writes waiting for purge, each with whether the version it replaced
/// has been removed from history (writes undone by a savepoint count with their replaced version).
struct PurgeItem {
    txn: TxnId,
    csn: Csn,
    writes: Vec<(UndoEntry, bool)>,
    /// Its delete marks have been moved to the graveyard.
    buried: bool,
}

/// An open database.
pub struct Engine {
    pub(crate) store: Store,
    pub(crate) txns: TxnManager,
    pub(crate) locks: LockManager,
    pub(crate) ssi: SsiTracker,
    pub(crate) meta: BTree,
    pub(crate) history: BTree,
    pub(crate) undo: BTree,
    /// Delete marks moved out of their clustered index while a snapshot may still need the row
    /// (see the module documentation), keyed `index u64 BE ++ pk`.
    graveyard: BTree,
    graveyard_length: AtomicI64,
    /// The highest CSN of a transaction whose delete mark went to the graveyard: a snapshot at or
    /// above it sees every graveyard entry as deleted and never looks there during scans.
    graveyard_max_csn: AtomicU64,
    pub(crate) indexes: RwLock<HashMap<IndexId, Arc<BTree>>>,
    pub(crate) txn_block_end: Mutex<TxnId>,
    /// Serialises sequence updates (see [`crate::sequence`]).
    pub(crate) sequences: Mutex<()>,
    pub(crate) lock_timeout: Option<Duration>,
    purge_queue: Mutex<VecDeque<PurgeItem>>,
    /// Committed transactions whose remaining versions or delete marks open snapshots still need,
    /// in CSN order. A pass looks at them again only when the horizon passes them or a snapshot
    /// older than their commit is released, so a long-lived snapshot does not make every pass
    /// re-walk its backlog.
    pinned: Mutex<VecDeque<PurgeItem>>,
    /// Transactions a running purge pass has taken out of the queue.
    purge_in_flight: AtomicUsize,
    /// The horizon up to which committed transactions have been forgotten.
    forgotten_below: AtomicU64,
    /// Held by a purge pass, so that passes do not overlap.
    pub(crate) purge_running: Mutex<()>,
    pub(crate) purge_thread: Mutex<Option<JoinHandle<()>>>,
    pub(crate) stop_purge: AtomicBool,
    pub(crate) max_snapshot_age: Option<Duration>,
    pub(crate) history_length: AtomicI64,
    /// Tables by id (the id of their clustered index).
    pub(crate) catalog: RwLock<HashMap<IndexId, Arc<TableDef>>>,
    /// Held shared by each row write and exclusively by DDL.
    pub(crate) ddl: RwLock<()>,
    id_allocation: Mutex<()>,
    /// The hidden row ids reserved: next to hand out, end of the block.
    row_ids: Mutex<(u64, u64)>,
}

impl Engine {
    /// Opens (or creates) the database in directory `dir`.
    pub fn open(dir: &Path, config: &EngineConfig) -> Result<Arc<Engine>> {
        let vfs = OsVfs::new(dir, config.store.direct_io).map_err(|e| {
            StorageError::io(format!("opening data directory {}", dir.display()), e)
        })?;
        Self::open_vfs(Arc::new(vfs), config)
    }

    /// Opens (or creates) the database behind `vfs`, recovering it if it was not shut down cleanly.
    pub fn open_vfs(vfs: Arc<dyn Vfs>, config: &EngineConfig) -> Result<Arc<Engine>> {
        let store = Store::open(vfs, &config.store)?;
        let system = store
            .space(SYSTEM_SPACE)
            .expect("a store has a system space");
        let meta = open_or_create(&store, &system, META_INDEX)?;
        let catalog = load_catalog(&meta)?;
        let indexes = open_user_indexes(&store)?;
        let first_txn = read_counter(&meta, META_NEXT_TXN)?.unwrap_or(1);
        let history = open_or_create(&store, &system, HISTORY_INDEX)?;
        let undo = open_or_create(&store, &system, UNDO_INDEX)?;
        roll_back_unfinished(&undo, &history, &indexes)?;
        let history = recreate(&store, &system, history)?;
        let undo = recreate(&store, &system, undo)?;
        let graveyard = open_or_create(&store, &system, GRAVEYARD_INDEX)?;
        let graveyard = recreate(&store, &system, graveyard)?;
        meta.insert(META_NEXT_TXN, &(first_txn + TXN_BLOCK).to_le_bytes())?;
        store.sync_log()?;
        let engine = Arc::new(Engine {
            store,
            txns: TxnManager::new(first_txn, first_csn(&catalog)),
            locks: LockManager::new(),
            ssi: SsiTracker::new(),
            meta,
            history,
            undo,
            graveyard,
            graveyard_length: AtomicI64::new(0),
            graveyard_max_csn: AtomicU64::new(0),
            indexes: RwLock::new(indexes),
            txn_block_end: Mutex::new(first_txn + TXN_BLOCK),
            sequences: Mutex::new(()),
            lock_timeout: config.lock_timeout,
            purge_queue: Mutex::new(VecDeque::new()),
            pinned: Mutex::new(VecDeque::new()),
            purge_in_flight: AtomicUsize::new(0),
            forgotten_below: AtomicU64::new(0),
            purge_running: Mutex::new(()),
            purge_thread: Mutex::new(None),
            stop_purge: AtomicBool::new(false),
            max_snapshot_age: config.max_snapshot_age,
            history_length: AtomicI64::new(0),
            catalog: RwLock::new(catalog),
            ddl: RwLock::new(()),
            id_allocation: Mutex::new(()),
            row_ids: Mutex::new((0, 0)),
        });
        if config.background_purge {
            engine.start_purge()?;
        }
        Ok(engine)
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    pub fn locks(&self) -> &LockManager {
        &self.locks
    }

    /// Stops purge, then shuts the store down cleanly (a checkpoint). Fails if other handles to
    /// the engine are still alive.
    pub fn close(self: Arc<Self>) -> Result<()> {
        self.stop_purge.store(true, Ordering::Release);
        let purge = self.purge_thread.lock().take();
        if let Some(handle) = purge {
            let _ = handle.join();
        }
        let engine = Arc::try_unwrap(self).map_err(|_| {
            EngineError::Corrupt("the engine is still in use and cannot be closed".into())
        })?;
        engine.store.close()?;
        Ok(())
    }

    /// Creates an empty index in a space of its own and returns its id.
    pub fn create_index(&self) -> Result<IndexId> {
        let id = self.allocate_index_id()?;
        let space = self.store.create_space()?;
        let tree = BTree::create(self.store.pool().clone(), space, id)?;
        self.store.sync_log()?;
        self.indexes.write().insert(id, Arc::new(tree));
        Ok(id)
    }

    /// A new index id (recorded in the meta tree; durable with the next log flush).
    pub(crate) fn allocate_index_id(&self) -> Result<IndexId> {
        let _serial = self.id_allocation.lock();
        let id = read_counter(&self.meta, META_NEXT_INDEX)?.unwrap_or(FIRST_USER_INDEX);
        self.meta.insert(META_NEXT_INDEX, &(id + 1).to_le_bytes())?;
        Ok(id)
    }

    /// A new hidden row id for a table without a primary key. Ids are reserved in durable blocks,
    /// like transaction ids, so none repeats after a restart.
    pub(crate) fn allocate_row_id(&self) -> Result<u64> {
        let mut block = self.row_ids.lock();
        if block.0 >= block.1 {
            let start = read_counter(&self.meta, META_NEXT_ROW_ID)?
                .unwrap_or(1)
                .max(block.0);
            self.meta
                .insert(META_NEXT_ROW_ID, &(start + ROW_ID_BLOCK).to_le_bytes())?;
            self.store.sync_log()?;
            *block = (start, start + ROW_ID_BLOCK);
        }
        block.0 += 1;
        Ok(block.0 - 1)
    }

    /// How many records an index holds (all versions' entries, live or not): a full scan.
    pub fn index_records(&self, index: IndexId) -> Result<u64> {
        let tree = self.tree(index)?;
        let mut count = 0;
        for entry in tree.range(Bound::Unbounded, Bound::Unbounded) {
            entry?;
            count += 1;
        }
        Ok(count)
    }

    /// The branch and leaf pages of an index's B+tree (overflow pages not counted), read from its
    /// branch pages only.
    pub fn index_pages(&self, index: IndexId) -> Result<u64> {
        let stats = self.tree(index)?.stats()?;
        Ok((stats.branch_pages + stats.leaf_pages) as u64)
    }

    /// The ids of every user index, in order.
    pub fn index_ids(&self) -> Vec<IndexId> {
        let mut ids: Vec<IndexId> = self.indexes.read().keys().copied().collect();
        ids.sort_unstable();
        ids
    }

    pub(crate) fn tree(&self, index: IndexId) -> Result<Arc<BTree>> {
        self.indexes
            .read()
            .get(&index)
            .cloned()
            .ok_or(EngineError::NoSuchIndex(index))
    }

    /// Starts a transaction.
    pub fn begin(self: &Arc<Self>, isolation: Isolation) -> Result<Transaction> {
        let id = self.txns.begin();
        self.extend_txn_block(id)?;
        Ok(Transaction {
            engine: Arc::clone(self),
            id,
            isolation,
            snapshot: None,
            snapshot_taken: Instant::now(),
            writes: Vec::new(),
            written: HashMap::default(),
            generation: AtomicU64::new(0),
            rewrites: Vec::new(),
            replaced: HashMap::new(),
            wrote: false,
            holds_own_lock: false,
            ended: false,
        })
    }

    /// Records a new block of transaction ids durably before the first id of it is used.
    fn extend_txn_block(&self, id: TxnId) -> Result<()> {
        let mut end = self.txn_block_end.lock();
        if id >= *end {
            *end = id + TXN_BLOCK;
            self.meta.insert(META_NEXT_TXN, &end.to_le_bytes())?;
            self.store.sync_log()?;
        }
        Ok(())
    }

    /// Committed transactions not yet fully purged: queued, pinned, or in the running pass. The
    /// locks are taken one at a time (a pass holds the pinned list for its whole length).
    fn purge_lag(&self) -> usize {
        let queued = self.purge_queue.lock().len();
        let in_flight = self.purge_in_flight.load(Ordering::Acquire);
        queued + in_flight + self.pinned.lock().len()
    }

    /// Counters of the engine.
    pub fn stats(&self) -> EngineStats {
        let txns = self.txns.stats();
        EngineStats {
            active_transactions: txns.active,
            open_snapshots: txns.snapshots,
            last_csn: txns.last_csn,
            history_length: self.history_length.load(Ordering::Relaxed).max(0) as u64,
            purge_lag: self.purge_lag(),
            graveyard_length: self.graveyard_length.load(Ordering::Relaxed).max(0) as u64,
        }
    }

    /// The version of `pk` that `snapshot` sees, given the in-place record read from `tree`
    /// (`snapshot` None: the newest, as READ UNCOMMITTED reads), from the point of view of
    /// transaction `reader`. When the history store is consulted because the writer had not
    /// committed, the in-place record is read again afterwards: if its writer changed meanwhile (it
    /// rolled back, which puts the old version back in place *before* removing it from history),
    /// the decision is made again. A rollback to a savepoint leaves the replaced version in history,
    /// so the same writer coming back in place (it wrote the row again) cannot mislead this check.
    /// A committed writer's replaced version stays in history for as long as this snapshot is
    /// open, so then one seek is the answer.
    pub(crate) fn visible(
        &self,
        tree: &BTree,
        index: IndexId,
        pk: &[u8],
        mut record: Option<Version>,
        reader: TxnId,
        snapshot: Option<Csn>,
    ) -> Result<Option<Vec<u8>>> {
        loop {
            let Some(version) = record else {
                return Ok(None);
            };
            let Some(snapshot) = snapshot else {
                return Ok((!version.deleted).then_some(version.row));
            };
            let status = self.txns.status(version.writer);
            let seen = matches!(status, TxnStatus::Committed(csn) if csn <= snapshot);
            if version.writer == reader || seen {
                return Ok((!version.deleted).then_some(version.row));
            }
            let old = self.history_version(index, pk, snapshot)?;
            if matches!(status, TxnStatus::Committed(_)) {
                return Ok(old);
            }
            record = self.current_version(tree, index, pk)?;
            if record
                .as_ref()
                .is_some_and(|again| again.writer == version.writer)
            {
                return Ok(old);
            }
        }
    }

    /// The newest version of a row: its in-place record, or its delete mark in the graveyard.
    pub(crate) fn current_version(
        &self,
        tree: &BTree,
        index: IndexId,
        pk: &[u8],
    ) -> Result<Option<Version>> {
        if let Some(bytes) = tree.get(pk)? {
            return Ok(Some(Version::decode(&bytes)?));
        }
        if self.graveyard_length.load(Ordering::Acquire) <= 0 {
            return Ok(None);
        }
        self.graveyard
            .get(&graveyard_key(index, pk))?
            .map(|bytes| Version::decode(&bytes))
            .transpose()
    }

    /// Whether `writer` committed at or before `snapshot`.
    pub(crate) fn committed_by(&self, writer: TxnId, snapshot: Csn) -> bool {
        matches!(self.txns.status(writer), TxnStatus::Committed(csn) if csn <= snapshot)
    }

    /// The row as `snapshot` saw it, from the history store: one seek.
    pub(crate) fn history_version(
        &self,
        index: IndexId,
        pk: &[u8],
        snapshot: Csn,
    ) -> Result<Option<Vec<u8>>> {
        let from = history_key(index, pk, snapshot);
        let Some(entry) = self
            .history
            .range(Bound::Included(&from), Bound::Unbounded)
            .next()
        else {
            return Ok(None);
        };
        let (key, value) = entry?;
        if !key.starts_with(&history_prefix(index, pk)) {
            return Ok(None);
        }
        let old = OldVersion::decode(&value)?;
        Ok((!old.version.deleted).then_some(old.version.row))
    }

    fn history_insert(&self, key: &[u8], old: &OldVersion) -> Result<()> {
        if self.history.insert(key, &old.encode())?.is_none() {
            self.history_length.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Removes a history entry if transaction `txn` put it there (the same key may since hold a
    /// version a later transaction replaced); returns the removed version.
    fn history_delete_if_superseded_by(
        &self,
        key: &[u8],
        txn: TxnId,
    ) -> Result<Option<OldVersion>> {
        let Some(bytes) = self.history.get(key)? else {
            return Ok(None);
        };
        let old = OldVersion::decode(&bytes)?;
        if old.superseded_by != txn {
            return Ok(None);
        }
        self.history.delete(key)?;
        self.history_length.fetch_sub(1, Ordering::Relaxed);
        Ok(Some(old))
    }

    /// One purge pass: removes old versions no snapshot can see, delete-marked rows every snapshot
    /// sees as deleted, and the undo entries of fully purged transactions. Each kind of removal is
    /// sorted by key and applied in that order (seed 000). Returns how many records were removed.
    pub fn purge(&self) -> Result<usize> {
        let _pass = self.purge_running.lock();
        let released = match self.max_snapshot_age {
            Some(_) => 0,
            None => self.txns.take_lowest_released(),
        };
        let (horizon, new_items) = {
            let mut queue = self.purge_queue.lock();
            let horizon = self.txns.horizon(self.max_snapshot_age);
            (horizon, std::mem::take(&mut *queue))
        };
        let mut pinned = self.pinned.lock();
        let mut items = take_due(&mut pinned, horizon, released);
        items.extend(new_items);
        self.purge_in_flight.store(items.len(), Ordering::Release);
        let mut removed = self.purge_versions(&mut items, horizon)?;
        let (done, mut kept): (Vec<PurgeItem>, Vec<PurgeItem>) =
            items.into_iter().partition(|item| item.csn <= horizon);
        self.bury_delete_marks(&mut kept)?;
        removed += self.purge_delete_marks(&done)?;
        self.delete_undo(done.iter().map(|item| item.txn))?;
        pinned.extend(kept);
        self.purge_in_flight.store(0, Ordering::Release);
        drop(pinned);
        if self.forgotten_below.fetch_max(horizon, Ordering::AcqRel) < horizon {
            self.txns.forget_below(horizon);
        }
        Ok(removed)
    }

    /// Removes the versions committed transactions replaced that no open snapshot can see: every
    /// version older than the horizon, and versions valid only between two open snapshots.
    fn purge_versions(&self, items: &mut VecDeque<PurgeItem>, horizon: Csn) -> Result<usize> {
        let snapshots = self.txns.snapshot_csns();
        let pinned = |from: Csn, to: Csn| {
            let first = snapshots.partition_point(|&csn| csn < from);
            snapshots.get(first).is_some_and(|&csn| csn < to)
        };
        let mut garbage = Vec::new();
        for item in items.iter_mut() {
            for (write, done) in item.writes.iter_mut().filter(|(_, done)| !done) {
                let UndoAction::Replaced { previous_start } = write.action else {
                    *done = true;
                    continue;
                };
                if item.csn > horizon && pinned(previous_start, item.csn) {
                    continue;
                }
                let key = history_key(write.index, &write.pk, previous_start);
                garbage.push((key, item.txn, write.index, write.pk.clone()));
                *done = true;
            }
        }
        garbage.sort_unstable();
        let mut removed = 0;
        for (key, txn, index, pk) in garbage {
            if let Some(old) = self.history_delete_if_superseded_by(&key, txn)? {
                removed += 1;
                self.remove_stale_entries_locked(index, &pk, &old)?;
            }
        }
        Ok(removed)
    }

    /// Drops the secondary entries only a purged version had, with its row locked (skipped if a
    /// writer holds the row: the entries are then still a writer's concern).
    fn remove_stale_entries_locked(
        &self,
        index: IndexId,
        pk: &[u8],
        old: &OldVersion,
    ) -> Result<()> {
        let Some(table) = self.table_by_id(index).filter(|t| !t.indexes.is_empty()) else {
            return Ok(());
        };
        self.with_row_locked(index, pk, || self.remove_stale_entries(&table, pk, old))
            .map(drop)
    }

    /// Runs `work` with the row locked by purge, or returns `None` at once if a writer holds it
    /// (purge never waits: the row is looked at again later, or needs nothing).
    fn with_row_locked<T>(
        &self,
        index: IndexId,
        pk: &[u8],
        work: impl FnOnce() -> Result<T>,
    ) -> Result<Option<T>> {
        let key = LockKey {
            index_id: index,
            key: pk.to_vec(),
        };
        if self
            .locks
            .lock(PURGE_TXN, key, LockMode::Exclusive, Some(Duration::ZERO))
            .is_err()
        {
            return Ok(None);
        }
        let outcome = work();
        self.locks.release_all(PURGE_TXN);
        outcome.map(Some)
    }

    /// Removes rows that purged transactions left delete-marked, unless written again since.
    fn purge_delete_marks(&self, items: &[PurgeItem]) -> Result<usize> {
        let mut marks: Vec<(IndexId, &[u8], TxnId)> = items
            .iter()
            .flat_map(|item| {
                item.writes
                    .iter()
                    .filter(|(w, _)| w.action != UndoAction::IndexEntry)
                    .map(move |(w, _)| (w.index, w.pk.as_slice(), item.txn))
            })
            .collect();
        marks.sort_unstable();
        let mut removed = 0;
        for (index, pk, txn) in marks {
            removed += usize::from(self.remove_delete_mark(index, pk, txn)?);
        }
        Ok(removed)
    }

    fn remove_delete_mark(&self, index: IndexId, pk: &[u8], txn: TxnId) -> Result<bool> {
        let removed =
            self.with_row_locked(index, pk, || self.delete_if_marked_by(index, pk, txn))?;
        Ok(removed.unwrap_or(false))
    }

    fn delete_if_marked_by(&self, index: IndexId, pk: &[u8], txn: TxnId) -> Result<bool> {
        let Ok(tree) = self.tree(index) else {
            return Ok(false);
        };
        let marked = |bytes: &[u8]| -> Result<bool> {
            let version = Version::decode(bytes)?;
            Ok(version.deleted && version.writer == txn)
        };
        if let Some(bytes) = tree.get(pk)? {
            if marked(&bytes)? {
                tree.delete(pk)?;
                return Ok(true);
            }
            return Ok(false);
        }
        let key = graveyard_key(index, pk);
        match self.graveyard.get(&key)? {
            Some(bytes) if marked(&bytes)? => {
                self.graveyard.delete(&key)?;
                self.graveyard_length.fetch_sub(1, Ordering::AcqRel);
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    /// Moves the delete marks of committed transactions that some snapshot still keeps from being
    /// purged out of their clustered index, into the graveyard: scans stop stepping over them, so
    /// repeated `DELETE ... LIMIT n` stays linear while an old snapshot is open (seed 000).
    fn bury_delete_marks(&self, items: &mut [PurgeItem]) -> Result<()> {
        let mut marks: Vec<(IndexId, Vec<u8>, TxnId, Csn)> = Vec::new();
        for item in items.iter_mut().filter(|item| !item.buried) {
            item.buried = true;
            let clustered = item
                .writes
                .iter()
                .filter(|(w, _)| w.action != UndoAction::IndexEntry);
            marks.extend(clustered.map(|(w, _)| (w.index, w.pk.clone(), item.txn, item.csn)));
        }
        marks.sort_unstable();
        for (index, pk, txn, csn) in marks {
            self.with_row_locked(index, &pk, || self.bury(index, &pk, txn, csn))?;
        }
        Ok(())
    }

    /// Moves one row's delete mark by `txn` to the graveyard (with the row locked). The graveyard
    /// gets it before the clustered index loses it, so a reader always finds it in one of them.
    fn bury(&self, index: IndexId, pk: &[u8], txn: TxnId, csn: Csn) -> Result<()> {
        let Ok(tree) = self.tree(index) else {
            return Ok(());
        };
        let Some(bytes) = tree.get(pk)? else {
            return Ok(());
        };
        let version = Version::decode(&bytes)?;
        if !version.deleted || version.writer != txn {
            return Ok(());
        }
        self.graveyard_max_csn.fetch_max(csn, Ordering::AcqRel);
        self.graveyard_length.fetch_add(1, Ordering::AcqRel);
        self.graveyard.insert(&graveyard_key(index, pk), &bytes)?;
        tree.delete(pk)?;
        Ok(())
    }

    /// A write replaced a row whose delete mark was in the graveyard: it leaves the graveyard.
    fn unbury(&self, index: IndexId, pk: &[u8]) -> Result<()> {
        if self.graveyard_length.load(Ordering::Acquire) <= 0 {
            return Ok(());
        }
        if self.graveyard.delete(&graveyard_key(index, pk))?.is_some() {
            self.graveyard_length.fetch_sub(1, Ordering::AcqRel);
        }
        Ok(())
    }

    /// Graveyard entries of `index` with keys in the range that `snapshot` may see as live rows
    /// (deleted after it was taken); empty when no such entry can exist.
    fn buried_in_range(
        &self,
        index: IndexId,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
        snapshot: Option<Csn>,
    ) -> Result<Vec<(Vec<u8>, Version)>> {
        let relevant = snapshot.is_some_and(|s| s < self.graveyard_max_csn.load(Ordering::Acquire));
        if !relevant || self.graveyard_length.load(Ordering::Acquire) <= 0 {
            return Ok(Vec::new());
        }
        let low = match start {
            Bound::Unbounded => Bound::Included(index.to_be_bytes().to_vec()),
            bound => bound.map(|k| graveyard_key(index, k)),
        };
        let high = match end {
            Bound::Unbounded => index.checked_add(1).map_or(Bound::Unbounded, |next| {
                Bound::Excluded(next.to_be_bytes().to_vec())
            }),
            bound => bound.map(|k| graveyard_key(index, k)),
        };
        let mut buried = Vec::new();
        let range = self.graveyard.range(
            low.as_ref().map(Vec::as_slice),
            high.as_ref().map(Vec::as_slice),
        );
        for entry in range {
            let (key, bytes) = entry?;
            buried.push((key[8..].to_vec(), Version::decode(&bytes)?));
        }
        Ok(buried)
    }

    /// Runs purge passes in the background until the engine is dropped or closed.
    fn start_purge(self: &Arc<Self>) -> Result<()> {
        let weak = Arc::downgrade(self);
        let handle = std::thread::Builder::new()
            .name("steady-purge".into())
            .spawn(move || run_purge(weak))
            .map_err(|e| StorageError::io("starting the purge thread", e))?;
        *self.purge_thread.lock() = Some(handle);
        Ok(())
    }

    /// Removes the undo entries of `txns`, all in one key-ordered pass over the undo tree (a leaf's
    /// entries go in one mini-transaction, whichever transactions they belong to).
    fn delete_undo(&self, txns: impl IntoIterator<Item = TxnId>) -> Result<()> {
        let mut keys = Vec::new();
        for txn in txns {
            let from = undo_key(txn, 0);
            let to = undo_key(txn, COMMIT_MARKER);
            for entry in self
                .undo
                .range(Bound::Included(&from), Bound::Included(&to))
            {
                keys.push(entry?.0);
            }
        }
        keys.sort_unstable();
        self.undo.delete_sorted(&keys)?;
        Ok(())
    }
}

/// The pinned transactions a pass must look at: those the horizon has passed (all of them purgeable
/// now) and those committed after the oldest snapshot released since the last pass (some of their
/// versions may be free now). The rest stay pinned, untouched.
fn take_due(pinned: &mut VecDeque<PurgeItem>, horizon: Csn, released: Csn) -> VecDeque<PurgeItem> {
    let mut due: VecDeque<PurgeItem> = pinned
        .drain(..pinned.partition_point(|item| item.csn <= horizon))
        .collect();
    let revisit = pinned.partition_point(|item| item.csn <= released);
    due.extend(pinned.drain(revisit..));
    due
}

/// The background purge: a pass whenever committed transactions wait, until told to stop.
fn run_purge(engine: Weak<Engine>) {
    loop {
        let Some(engine) = engine.upgrade() else {
            return;
        };
        if engine.stop_purge.load(Ordering::Acquire) {
            return;
        }
        let queued = !engine.purge_queue.lock().is_empty();
        if queued || !engine.pinned.lock().is_empty() {
            if let Err(err) = engine.purge() {
                eprintln!("steady: purge failed: {err}");
            }
        }
        drop(engine);
        std::thread::sleep(PURGE_INTERVAL);
    }
}

/// Figures of the engine.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EngineStats {
    pub active_transactions: usize,
    pub open_snapshots: usize,
    pub last_csn: Csn,
    /// Versions in the history store.
    pub history_length: u64,
    /// Committed transactions not yet fully purged.
    pub purge_lag: usize,
    /// Delete marks moved out of their tables, waiting for the snapshots that keep them.
    pub graveyard_length: u64,
}

/// One transaction. Dropped without commit, it rolls back.
pub struct Transaction {
    pub(crate) engine: Arc<Engine>,
    pub(crate) id: TxnId,
    pub(crate) isolation: Isolation,
    pub(crate) snapshot: Option<Snapshot>,
    pub(crate) snapshot_taken: Instant,
    pub(crate) writes: Vec<UndoEntry>,
    /// The rows written, each with the savepoint generation its version was last saved in (by its
    /// undo entry, or in `rewrites`); a write in a later generation saves it again.
    written: HashMap<(IndexId, Vec<u8>), u64, ahash::RandomState>,
    /// The savepoint generation: how many savepoints have been taken.
    generation: AtomicU64,
    /// Own versions replaced by writes in a later savepoint generation, oldest first.
    rewrites: Vec<Rewrite>,
    /// The undo entries, by history key, of writes undone by `rollback_to` whose replaced versions
    /// stay in history until the transaction ends (see the module documentation).
    replaced: HashMap<Vec<u8>, UndoEntry>,
    /// Whether the transaction has written, even if savepoints have undone it since.
    wrote: bool,
    /// Whether it holds the lock on its own id (it inserted rows without row locks).
    holds_own_lock: bool,
    pub(crate) ended: bool,
}

/// A point in a transaction that [`Transaction::rollback_to`] goes back to: the lengths of its undo
/// log and of its list of replaced own versions. It stays valid after rolling back to it, but not
/// after rolling back to an earlier savepoint (as in SQL).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Savepoint {
    txn: TxnId,
    writes: usize,
    rewrites: usize,
}

/// A transaction's own version of a row, replaced by its write in a later savepoint generation.
struct Rewrite {
    index: IndexId,
    pk: Vec<u8>,
    version: Version,
    /// The generation the row's version had been saved in before.
    saved_in: u64,
}

/// What a write does to a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum WriteKind {
    Insert,
    Update,
    Delete,
}

impl Transaction {
    pub fn id(&self) -> TxnId {
        self.id
    }

    pub fn isolation(&self) -> Isolation {
        self.isolation
    }

    /// Marks the start of a statement: READ COMMITTED takes a new snapshot for each.
    pub fn begin_statement(&mut self) {
        if self.isolation == Isolation::ReadCommitted {
            if let Some(old) = self.snapshot.take() {
                self.engine.txns.release_snapshot(old);
            }
        }
    }

    /// The snapshot reads use (`None` for READ UNCOMMITTED), taken at the first read; refused once
    /// older than `max_snapshot_age`.
    pub(crate) fn snapshot(&mut self) -> Result<Option<Csn>> {
        if self.isolation == Isolation::ReadUncommitted {
            return Ok(None);
        }
        if let Some(snapshot) = self.snapshot {
            let expired = self
                .engine
                .max_snapshot_age
                .is_some_and(|age| self.snapshot_taken.elapsed() > age);
            return if expired {
                Err(EngineError::SnapshotTooOld)
            } else {
                Ok(Some(snapshot.csn))
            };
        }
        self.snapshot_taken = Instant::now();
        let snapshot = *self.snapshot.insert(self.engine.txns.take_snapshot());
        if self.isolation == Isolation::Serializable {
            self.engine.ssi.register(self.id, snapshot.csn);
        }
        Ok(Some(snapshot.csn))
    }

    pub(crate) fn check_open(&self) -> Result<()> {
        if self.ended {
            return Err(EngineError::TransactionEnded);
        }
        Ok(())
    }

    /// The row stored under `pk` in `index`, as this transaction sees it.
    pub fn get(&mut self, index: IndexId, pk: &[u8]) -> Result<Option<Vec<u8>>> {
        self.check_open()?;
        let tree = self.engine.tree(index)?;
        let snapshot = self.snapshot()?;
        let record = self.engine.current_version(&tree, index, pk)?;
        let row = self
            .engine
            .visible(&tree, index, pk, record, self.id, snapshot)?;
        self.track_read(index, Bound::Included(pk), Bound::Included(pk))?;
        Ok(row)
    }

    /// SERIALIZABLE: records a read for the dependency tracker, failing if it completes a
    /// dangerous structure.
    fn track_read(&self, index: IndexId, low: Bound<&[u8]>, high: Bound<&[u8]>) -> Result<()> {
        if self.isolation != Isolation::Serializable {
            return Ok(());
        }
        let ssi = &self.engine.ssi;
        let tracked = match (low, high) {
            (Bound::Included(a), Bound::Included(b)) if a == b => ssi.read_point(self.id, index, a),
            _ => ssi.read_range(
                self.id,
                index,
                low.map(<[u8]>::to_vec),
                high.map(<[u8]>::to_vec),
            ),
        };
        tracked.map_err(dependency_failure)
    }

    /// The rows of `index` with keys in the range, in key order, as this transaction sees them.
    pub fn scan(&mut self, index: IndexId, start: Bound<&[u8]>, end: Bound<&[u8]>) -> Result<Scan> {
        self.check_open()?;
        let tree = self.engine.tree(index)?;
        let snapshot = self.snapshot()?;
        self.track_read(index, start, end)?;
        Ok(Scan {
            engine: Arc::clone(&self.engine),
            reader: self.id,
            tree,
            index,
            snapshot,
            next_start: start.map(<[u8]>::to_vec),
            end: end.map(<[u8]>::to_vec),
            batch: VecDeque::new(),
            exhausted: false,
        })
    }

    /// Inserts a new row; fails with a unique violation if the key holds a live row.
    pub fn insert(&mut self, index: IndexId, pk: &[u8], row: &[u8]) -> Result<()> {
        self.write(index, pk, Some(row), WriteKind::Insert)
            .map(drop)
    }

    /// Replaces the row this transaction sees under `pk`; false if it sees none.
    pub fn update(&mut self, index: IndexId, pk: &[u8], row: &[u8]) -> Result<bool> {
        self.write(index, pk, Some(row), WriteKind::Update)
    }

    /// Deletes the row this transaction sees under `pk`; false if it sees none.
    pub fn delete(&mut self, index: IndexId, pk: &[u8]) -> Result<bool> {
        self.write(index, pk, None, WriteKind::Delete)
    }

    fn write(
        &mut self,
        index: IndexId,
        pk: &[u8],
        row: Option<&[u8]>,
        kind: WriteKind,
    ) -> Result<bool> {
        if let (WriteKind::Insert, Some(row)) = (kind, row) {
            if self.insert_without_row_lock(index, pk, row)? {
                return Ok(true);
            }
        }
        let (tree, current) = self.lock_current(index, pk)?;
        let engine = Arc::clone(&self.engine);
        if !self.may_write(index, pk, current.as_ref(), kind)? {
            return Ok(false);
        }
        if self.isolation == Isolation::Serializable {
            engine
                .ssi
                .write(self.id, index, pk)
                .map_err(dependency_failure)?;
        }
        self.save_version(index, pk, current)?;
        let version = Version {
            writer: self.id,
            deleted: row.is_none(),
            row: row.unwrap_or_default().to_vec(),
        };
        tree.insert(pk, &version.encode())?;
        engine.unbury(index, pk)?;
        Ok(true)
    }

    /// The common insert of a new key into a table without secondary indexes, with no row lock:
    /// the new version names this transaction as its writer, and that is its lock (implicit, as
    /// InnoDB's). Whoever locks the row afterwards finds a running writer in place and waits for
    /// this transaction's own lock ([`TXN_LOCKS`], taken here once) before going on
    /// (`Transaction::lock_current`). The undo entry comes first; the version goes in only if the
    /// key is still absent, checked under the leaf's latch. False, with the insert left to the
    /// locking path, when the key is present, a delete mark may be buried for it, the table has
    /// secondary indexes (purge removes their stale entries under row locks), or SERIALIZABLE
    /// must track the write. An undo entry of an insert that did not happen is harmless: undoing
    /// it removes only a version this transaction wrote.
    fn insert_without_row_lock(&mut self, index: IndexId, pk: &[u8], row: &[u8]) -> Result<bool> {
        let engine = Arc::clone(&self.engine);
        let unindexed = engine
            .table_by_id(index)
            .is_some_and(|t| t.indexes.is_empty());
        if !unindexed
            || self.isolation == Isolation::Serializable
            || engine.graveyard_length.load(Ordering::Acquire) > 0
        {
            return Ok(false);
        }
        self.check_open()?;
        let tree = engine.tree(index)?;
        self.snapshot()?;
        let written_key = (index, pk.to_vec());
        if self.written.contains_key(&written_key) || tree.get(pk)?.is_some() {
            return Ok(false);
        }
        self.hold_own_lock()?;
        self.append_undo(UndoEntry {
            index,
            pk: pk.to_vec(),
            action: UndoAction::Inserted,
        })?;
        let version = Version {
            writer: self.id,
            deleted: false,
            row: row.to_vec(),
        };
        if !tree.insert_if_absent(pk, &version.encode())? {
            return Ok(false);
        }
        let generation = self.generation.load(Ordering::Relaxed);
        self.written.insert(written_key, generation);
        Ok(true)
    }

    /// Takes the lock on this transaction's own id, once.
    fn hold_own_lock(&mut self) -> Result<()> {
        if !self.holds_own_lock {
            let engine = Arc::clone(&self.engine);
            engine
                .locks
                .lock(self.id, txn_lock_key(self.id), LockMode::Exclusive, None)?;
            self.holds_own_lock = true;
        }
        Ok(())
    }

    /// Decides, with the row locked, whether the write applies: false when an update or delete finds
    /// no row; a unique violation when an insert finds a live one.
    fn may_write(
        &mut self,
        index: IndexId,
        pk: &[u8],
        current: Option<&Version>,
        kind: WriteKind,
    ) -> Result<bool> {
        if kind != WriteKind::Insert {
            return Ok(self.row_to_change(index, pk, current)?.is_some());
        }
        if current.is_some_and(|v| !v.deleted) {
            return Err(EngineError::UniqueViolation { index });
        }
        Ok(true)
    }

    /// With the row locked: the version an update or delete would change. None if this transaction
    /// does not see the row, or (READ COMMITTED) a later commit deleted it. Under REPEATABLE READ and
    /// SERIALIZABLE, a version committed after the snapshot is a serialization failure
    /// (first-updater-wins); READ COMMITTED changes the newest version, and its caller re-checks
    /// the statement's conditions on it.
    fn row_to_change(
        &mut self,
        index: IndexId,
        pk: &[u8],
        current: Option<&Version>,
    ) -> Result<Option<Vec<u8>>> {
        let snapshot = self.snapshot()?;
        let tree = self.engine.tree(index)?;
        let seen = self
            .engine
            .visible(&tree, index, pk, current.cloned(), self.id, snapshot)?;
        self.track_read(index, Bound::Included(pk), Bound::Included(pk))?;
        let (Some(_), Some(current)) = (seen, current) else {
            return Ok(None);
        };
        let newer = snapshot.is_some_and(|snapshot| {
            current.writer != self.id && !self.engine.committed_by(current.writer, snapshot)
        });
        let snapshot_isolation = matches!(
            self.isolation,
            Isolation::RepeatableRead | Isolation::Serializable
        );
        if newer && snapshot_isolation {
            return Err(EngineError::SerializationFailure);
        }
        Ok((!current.deleted).then(|| current.row.clone()))
    }

    /// Locks a row for writing (waiting for its current writer to finish) and returns the version an
    /// update would change, as `SELECT ... FOR UPDATE` does: see `row_to_change`.
    pub fn lock_row(&mut self, index: IndexId, pk: &[u8]) -> Result<Option<Vec<u8>>> {
        let (_, current) = self.lock_current(index, pk)?;
        self.row_to_change(index, pk, current.as_ref())
    }

    /// Takes the snapshot (before any wait, as PostgreSQL's statement does), locks the row, and
    /// reads its newest version: the start of every write and of `lock_row`.
    ///
    /// A version whose writer is still running and is not this transaction was inserted without a
    /// row lock (see [`Transaction::insert_without_row_lock`]): the row is that writer's until it
    /// ends, so this waits for it (on its transaction lock) and reads the row again.
    fn lock_current(&mut self, index: IndexId, pk: &[u8]) -> Result<(Arc<BTree>, Option<Version>)> {
        self.check_open()?;
        let tree = self.engine.tree(index)?;
        self.snapshot()?;
        self.lock_exclusive(index, pk)?;
        loop {
            let current = self.engine.current_version(&tree, index, pk)?;
            match &current {
                Some(version)
                    if version.writer != self.id
                        && self.engine.txns.status(version.writer) == TxnStatus::Active =>
                {
                    self.wait_for(version.writer)?
                }
                _ => return Ok((tree, current)),
            }
        }
    }

    /// Waits until transaction `writer` has ended.
    fn wait_for(&self, writer: TxnId) -> Result<()> {
        let engine = Arc::clone(&self.engine);
        let key = txn_lock_key(writer);
        engine
            .locks
            .lock(self.id, key.clone(), LockMode::Shared, engine.lock_timeout)?;
        engine.locks.release(self.id, &key);
        Ok(())
    }

    pub(crate) fn lock_exclusive(&self, index: IndexId, pk: &[u8]) -> Result<()> {
        let key = LockKey {
            index_id: index,
            key: pk.to_vec(),
        };
        let engine = Arc::clone(&self.engine);
        Ok(engine
            .locks
            .lock(self.id, key, LockMode::Exclusive, engine.lock_timeout)?)
    }

    /// Saves what a write of the row replaces, once per savepoint generation: the first write logs
    /// it (`log_first_write`), a write in a later generation keeps the own version in `rewrites`.
    fn save_version(&mut self, index: IndexId, pk: &[u8], current: Option<Version>) -> Result<()> {
        let generation = self.generation.load(Ordering::Relaxed);
        match self.written.insert((index, pk.to_vec()), generation) {
            None => self.log_first_write(index, pk, current),
            Some(saved_in) if saved_in < generation => {
                let version = current.ok_or_else(|| {
                    EngineError::Corrupt(format!("a row written by {} is gone", self.id))
                })?;
                self.rewrites.push(Rewrite {
                    index,
                    pk: pk.to_vec(),
                    version,
                    saved_in,
                });
                Ok(())
            }
            Some(_) => Ok(()),
        }
    }

    /// Before the first change of a row: the undo entry, then the replaced version into history.
    fn log_first_write(
        &mut self,
        index: IndexId,
        pk: &[u8],
        current: Option<Version>,
    ) -> Result<()> {
        let engine = Arc::clone(&self.engine);
        let action = match &current {
            None => UndoAction::Inserted,
            Some(version) => UndoAction::Replaced {
                previous_start: match engine.txns.status(version.writer) {
                    TxnStatus::Committed(csn) => csn,
                    TxnStatus::Active | TxnStatus::Aborted => {
                        return Err(EngineError::Corrupt(format!(
                            "row locked by transaction {} still names active writer {}",
                            self.id, version.writer
                        )))
                    }
                },
            },
        };
        self.append_undo(UndoEntry {
            index,
            pk: pk.to_vec(),
            action: action.clone(),
        })?;
        if let (Some(version), UndoAction::Replaced { previous_start }) = (current, action) {
            let old = OldVersion {
                version,
                superseded_by: self.id,
            };
            engine.history_insert(&history_key(index, pk, previous_start), &old)?;
        }
        Ok(())
    }

    /// Appends an entry to this transaction's undo log (durable with the next log flush).
    pub(crate) fn append_undo(&mut self, entry: UndoEntry) -> Result<()> {
        let key = undo_key(self.id, self.writes.len() as u64);
        self.engine.undo.insert(&key, &entry.encode())?;
        self.writes.push(entry);
        self.wrote = true;
        Ok(())
    }

    /// Marks the current point of the transaction, to come back to with
    /// [`Transaction::rollback_to`]; a new savepoint generation starts.
    pub fn savepoint(&self) -> Savepoint {
        self.generation.fetch_add(1, Ordering::Relaxed);
        Savepoint {
            txn: self.id,
            writes: self.writes.len(),
            rewrites: self.rewrites.len(),
        }
    }

    /// Undoes the writes made since `savepoint`, newest first; the transaction goes on. Locks taken
    /// since stay held until it ends. After a failure it can only be rolled back.
    ///
    /// # Panics
    ///
    /// If `savepoint` is another transaction's, or lies beyond the transaction's current point (as
    /// one taken after an earlier savepoint rolled back to since may; such a savepoint is no longer
    /// valid even where this check cannot tell).
    pub fn rollback_to(&mut self, savepoint: &Savepoint) -> Result<()> {
        self.check_open()?;
        assert!(
            savepoint.txn == self.id
                && savepoint.writes <= self.writes.len()
                && savepoint.rewrites <= self.rewrites.len(),
            "not a savepoint of transaction {}",
            self.id
        );
        let trees = self.engine.indexes.read().clone();
        self.restore_rewrites(&trees, savepoint.rewrites)?;
        self.undo_writes_since(&trees, savepoint.writes)?;
        for position in savepoint.writes..self.writes.len() {
            self.engine
                .undo
                .delete(&undo_key(self.id, position as u64))?;
        }
        self.writes.truncate(savepoint.writes);
        Ok(())
    }

    /// Puts back, newest first, the own versions in `rewrites[from..]`, and the generations their
    /// rows had been saved in.
    fn restore_rewrites(
        &mut self,
        trees: &HashMap<IndexId, Arc<BTree>>,
        from: usize,
    ) -> Result<()> {
        for rewrite in self.rewrites.drain(from..).rev() {
            if let Some(tree) = trees.get(&rewrite.index) {
                tree.insert(&rewrite.pk, &rewrite.version.encode())?;
            }
            self.written
                .insert((rewrite.index, rewrite.pk), rewrite.saved_in);
        }
        Ok(())
    }

    /// Undoes `writes[from..]` newest first, leaving their replaced versions in history (noted in
    /// `replaced`), and forgets the rows they first wrote.
    fn undo_writes_since(
        &mut self,
        trees: &HashMap<IndexId, Arc<BTree>>,
        from: usize,
    ) -> Result<()> {
        for entry in self.writes[from..].iter().rev() {
            if let Some(key) = undo_in_place(&self.engine.history, trees, self.id, entry)? {
                self.replaced.insert(key, entry.clone());
            }
            if entry.action != UndoAction::IndexEntry {
                self.written.remove(&(entry.index, entry.pk.clone()));
            }
        }
        Ok(())
    }

    /// Makes the transaction's writes durable, then visible.
    pub fn commit(mut self) -> Result<()> {
        self.check_open()?;
        let engine = Arc::clone(&self.engine);
        if self.isolation == Isolation::Serializable && engine.ssi.check_commit(self.id).is_err() {
            self.undo_all()?;
            return Err(EngineError::SerializationDependency);
        }
        if !self.wrote {
            engine.txns.finish_read_only(self.id);
            engine.ssi.committed(self.id, engine.txns.stats().last_csn);
            self.end();
            return Ok(());
        }
        engine.undo.insert(&undo_key(self.id, COMMIT_MARKER), &[])?;
        engine.store.sync_log()?;
        let replaced = std::mem::take(&mut self.replaced).into_values();
        let writes = std::mem::take(&mut self.writes)
            .into_iter()
            .chain(replaced)
            .map(|write| (write, false))
            .collect();
        let mut queue = engine.purge_queue.lock();
        let csn = engine.txns.commit(self.id);
        engine.ssi.committed(self.id, csn);
        queue.push_back(PurgeItem {
            txn: self.id,
            csn,
            writes,
            buried: false,
        });
        drop(queue);
        self.end();
        Ok(())
    }

    /// Undoes the transaction's writes, newest first.
    pub fn rollback(mut self) -> Result<()> {
        self.check_open()?;
        self.undo_all()
    }

    /// Undoes the writes, newest first, and removes the versions that writes undone by savepoints
    /// left in history.
    fn undo_all(&mut self) -> Result<()> {
        let engine = Arc::clone(&self.engine);
        let trees = engine.indexes.read().clone();
        for entry in self.writes.iter().rev() {
            if undo_write(&engine.history, &trees, self.id, entry)? {
                engine.history_length.fetch_sub(1, Ordering::Relaxed);
            }
        }
        for key in self.replaced.keys() {
            engine.history_delete_if_superseded_by(key, self.id)?;
        }
        engine.ssi.aborted(self.id);
        if self.wrote {
            engine.delete_undo([self.id])?;
            engine.txns.abort(self.id);
        } else {
            engine.txns.finish_read_only(self.id);
        }
        self.end();
        Ok(())
    }

    fn end(&mut self) {
        if let Some(snapshot) = self.snapshot.take() {
            self.engine.txns.release_snapshot(snapshot);
        }
        self.engine.locks.release_all(self.id);
        self.ended = true;
    }
}

impl Drop for Transaction {
    fn drop(&mut self) {
        if !self.ended {
            if let Err(err) = self.undo_all() {
                eprintln!("steady: rolling back transaction {} failed: {err}", self.id);
                self.end();
            }
        }
    }
}

/// The rows of a range as a transaction sees them (its snapshot, its own writes); each item is
/// `Ok((pk, row))`. It borrows no transaction, so the transaction may write while scanning.
pub struct Scan {
    engine: Arc<Engine>,
    reader: TxnId,
    tree: Arc<BTree>,
    index: IndexId,
    snapshot: Option<Csn>,
    next_start: Bound<Vec<u8>>,
    end: Bound<Vec<u8>>,
    batch: VecDeque<(Vec<u8>, Vec<u8>)>,
    exhausted: bool,
}

impl Scan {
    /// Reads the next batch of in-place records, holding no latch between batches. With an old
    /// snapshot, rows whose delete marks went to the graveyard are merged in. The writers' statuses
    /// are looked up once per batch; only rows whose in-place version the snapshot cannot see go
    /// to the history store.
    fn refill(&mut self) -> Result<()> {
        let start = self.next_start.clone();
        let end = self.end.as_ref().map(Vec::as_slice);
        let mut records = Vec::new();
        let range = self.tree.range(start.as_ref().map(Vec::as_slice), end);
        for entry in range.take(SCAN_BATCH) {
            let (pk, bytes) = entry?;
            records.push((pk, Version::decode(&bytes)?));
        }
        self.exhausted = records.len() < SCAN_BATCH;
        let batch_end = match (self.exhausted, records.last()) {
            (false, Some((last, _))) => Bound::Included(last.clone()),
            _ => self.end.clone(),
        };
        if let Some((last, _)) = records.last() {
            self.next_start = Bound::Excluded(last.clone());
        }
        let engine = Arc::clone(&self.engine);
        let buried = engine.buried_in_range(
            self.index,
            start.as_ref().map(Vec::as_slice),
            batch_end.as_ref().map(Vec::as_slice),
            self.snapshot,
        )?;
        if !buried.is_empty() {
            records.extend(buried);
            records.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        }
        let settled = engine.txns.settled_below();
        let unsettled = records
            .iter()
            .map(|(_, v)| v.writer)
            .filter(|&w| w >= settled);
        let statuses = engine.txns.statuses(unsettled);
        for (pk, version) in records {
            let in_place = self.snapshot.is_none_or(|snapshot| {
                version.writer == self.reader
                    || version.writer < settled
                    || matches!(statuses[&version.writer], TxnStatus::Committed(csn) if csn <= snapshot)
            });
            let seen = if in_place {
                (!version.deleted).then_some(version.row)
            } else {
                let tree = &self.tree;
                let (index, reader, snapshot) = (self.index, self.reader, self.snapshot);
                engine.visible(tree, index, &pk, Some(version), reader, snapshot)?
            };
            if let Some(row) = seen {
                self.batch.push_back((pk, row));
            }
        }
        Ok(())
    }
}

impl Iterator for Scan {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(row) = self.batch.pop_front() {
                return Some(Ok(row));
            }
            if self.exhausted {
                return None;
            }
            if let Err(err) = self.refill() {
                self.exhausted = true;
                return Some(Err(err));
            }
        }
    }
}

/// The lock-table key of transaction `txn`'s own lock.
fn txn_lock_key(txn: TxnId) -> LockKey {
    LockKey {
        index_id: TXN_LOCKS,
        key: txn.to_be_bytes().to_vec(),
    }
}

fn dependency_failure(_: Conflict) -> EngineError {
    EngineError::SerializationDependency
}

/// Rolls back one write of transaction `txn`; safe to repeat and to run on a write that was only
/// partly done (recovery), or on an index dropped since. Returns whether a history entry was removed.
fn undo_write(
    history: &BTree,
    trees: &HashMap<IndexId, Arc<BTree>>,
    txn: TxnId,
    entry: &UndoEntry,
) -> Result<bool> {
    let Some(key) = undo_in_place(history, trees, txn, entry)? else {
        return Ok(false);
    };
    history.delete(&key)?;
    Ok(true)
}

/// Rolls back one write of transaction `txn` in its index only, as `undo_write` does: removes the
/// row it inserted or the secondary entry it added, or puts back the version it replaced. Returns
/// the key of the history entry `txn` moved that version to, if it is there.
fn undo_in_place(
    history: &BTree,
    trees: &HashMap<IndexId, Arc<BTree>>,
    txn: TxnId,
    entry: &UndoEntry,
) -> Result<Option<Vec<u8>>> {
    let Some(tree) = trees.get(&entry.index) else {
        return Ok(None);
    };
    match entry.action {
        UndoAction::IndexEntry => {
            tree.delete(&entry.pk)?;
            Ok(None)
        }
        UndoAction::Inserted => {
            if written_by(tree, &entry.pk, txn)? {
                tree.delete(&entry.pk)?;
            }
            Ok(None)
        }
        UndoAction::Replaced { previous_start } => {
            let key = history_key(entry.index, &entry.pk, previous_start);
            let Some(bytes) = history.get(&key)? else {
                return Ok(None);
            };
            let old = OldVersion::decode(&bytes)?;
            if old.superseded_by != txn {
                return Ok(None);
            }
            if written_by(tree, &entry.pk, txn)? {
                tree.insert(&entry.pk, &old.version.encode())?;
            }
            Ok(Some(key))
        }
    }
}

/// Whether the in-place record of `pk` names writer `txn`.
fn written_by(tree: &BTree, pk: &[u8], txn: TxnId) -> Result<bool> {
    let current = tree.get(pk)?.map(|b| Version::decode(&b)).transpose()?;
    Ok(current.is_some_and(|v| v.writer == txn))
}

/// Rolls back every transaction in the undo tree that has no commit marker.
fn roll_back_unfinished(
    undo: &BTree,
    history: &BTree,
    trees: &HashMap<IndexId, Arc<BTree>>,
) -> Result<()> {
    let mut by_txn: HashMap<TxnId, (Vec<UndoEntry>, bool)> = HashMap::new();
    for entry in undo.range(Bound::Unbounded, Bound::Unbounded) {
        let (key, value) = entry?;
        let (txn, sequence) = split_undo_key(&key)?;
        let slot = by_txn.entry(txn).or_default();
        if sequence == COMMIT_MARKER {
            slot.1 = true;
        } else {
            slot.0.push(UndoEntry::decode(&value)?);
        }
    }
    for (txn, (writes, committed)) in by_txn {
        if !committed {
            for entry in writes.iter().rev() {
                undo_write(history, trees, txn, entry)?;
            }
        }
    }
    Ok(())
}

fn open_or_create(store: &Store, space: &Arc<Space>, index: IndexId) -> Result<BTree> {
    let pool = store.pool().clone();
    let tree = if space.trees().iter().any(|t| t.index_id == index) {
        BTree::open(pool, space.clone(), index)?
    } else {
        BTree::create(pool, space.clone(), index)?
    };
    Ok(tree)
}

/// Drops a system tree with all its pages and creates it again, empty.
fn recreate(store: &Store, space: &Arc<Space>, tree: BTree) -> Result<BTree> {
    let index = tree.index_id();
    drop(tree);
    let mut mtr = steady_storage::mtr::Mtr::new(store.pool());
    space.drop_tree(&mut mtr, index)?;
    mtr.commit();
    Ok(BTree::create(store.pool().clone(), space.clone(), index)?)
}

fn open_user_indexes(store: &Store) -> Result<HashMap<IndexId, Arc<BTree>>> {
    let mut indexes = HashMap::new();
    for space in store.spaces() {
        if space.id() == SYSTEM_SPACE {
            continue;
        }
        for entry in space.trees() {
            let tree = BTree::open(store.pool().clone(), space.clone(), entry.index_id)?;
            indexes.insert(entry.index_id, Arc::new(tree));
        }
    }
    Ok(indexes)
}

/// The graveyard key of a row: its index, then its primary key.
fn graveyard_key(index: IndexId, pk: &[u8]) -> Vec<u8> {
    let mut key = Vec::with_capacity(8 + pk.len());
    key.extend_from_slice(&index.to_be_bytes());
    key.extend_from_slice(pk);
    key
}

fn load_catalog(meta: &BTree) -> Result<HashMap<IndexId, Arc<TableDef>>> {
    let mut tables = HashMap::new();
    for entry in meta.range(Bound::Included(TABLE_PREFIX), Bound::Unbounded) {
        let (key, value) = entry?;
        if !key.starts_with(TABLE_PREFIX) {
            break;
        }
        let table: TableDef = serde_json::from_slice(&value)
            .map_err(|e| EngineError::Corrupt(format!("catalog entry: {e}")))?;
        tables.insert(table.id, Arc::new(table));
    }
    Ok(tables)
}

/// Where commit sequence numbers start in this run: above every index's `valid_from`, so that an
/// index built in an earlier run is usable by every snapshot of this one (CSNs are not persisted;
/// they only order the commits of one run).
fn first_csn(catalog: &HashMap<IndexId, Arc<TableDef>>) -> Csn {
    catalog
        .values()
        .flat_map(|t| t.indexes.iter().map(|i| i.valid_from))
        .max()
        .unwrap_or(0)
}

fn read_counter(meta: &BTree, key: &[u8]) -> Result<Option<u64>> {
    meta.get(key)?
        .map(|bytes| {
            let array: [u8; 8] = bytes.as_slice().try_into().map_err(|_| {
                EngineError::Corrupt(format!("meta counter of {} bytes", bytes.len()))
            })?;
            Ok(u64::from_le_bytes(array))
        })
        .transpose()
}
