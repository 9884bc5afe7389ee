//! The database: indexes in spaces, the system trees, transactions over them, recovery and purge.
//!
//! This module holds the types (`Engine`, `Transaction`, `Scan`, their fields) and the engine's
//! life cycle; the behaviour is split by concern: [`open`] (opening and recovery), [`read`]
//! (visibility and the history store), [`transaction`] (snapshots, reads, commit, rollback),
//! [`write`] (row writes, locks, undo), [`savepoint`], [`scan`], [`purge`] (with the
//! graveyard) and [`catalog_change`] (the undo entries of DDL, and claims on the names it
//! changes).
//!
//! ```text
//! system space 0:  meta tree (1)      next transaction id block, next index id
//!                  history tree (2)   old versions, keyed (index, pk, !start csn)   see [`crate::version`]
//!                  undo tree (3)      each transaction's writes (rows, and catalog changes), then
//!                                     its commit marker
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
//!   since (read back from the undo tree: rows inserted in runs have theirs only there), newest
//!   first, deletes them, and forgets the rows first written since. The versions those
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

mod catalog_change;
mod open;
mod purge;
mod read;
mod row_counts;
pub mod row_lock;
mod savepoint;
mod scan;
mod transaction;
mod unlocked;
mod write;

use open::read_counter;
use row_counts::{RowCounts, RowDeltas, RowKind};
pub use unlocked::{DeleteOutcome, InPlace, SeenRow, UnlockedChange};

use std::collections::{HashMap, HashSet, VecDeque};
use std::ops::Bound;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use parking_lot::{Mutex, RwLock};
use steady_storage::btree::{BTree, Entries, LeafWalk, TreeIoCounts};
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
    history_key, history_last, split_undo_key, undo_key, IndexId, OldVersion, UndoAction,
    UndoEntry, Version, COMMIT_MARKER, PACKED_UNDO_BYTES,
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
pub const TXN_LOCKS: IndexId = u64::MAX;
/// The lock-table "index" of DDL locks: DDL on a table holds the key of the table's id
/// exclusively until it ends, so two DDL statements on one table never overlap, while the table's
/// own lock (which its writers take shared) is held by an online index build only for moments.
pub const DDL_LOCKS: IndexId = u64::MAX - 2;
/// Pause between background purge passes (at least; see `purge::pause_after`).
const PURGE_INTERVAL: Duration = Duration::from_millis(10);
/// Most pinned transactions one purge pass takes (a backlog goes in passes of this size, about
/// 15 ms of work each, paced between them).
const PASS_LIMIT: usize = 2048;
/// The niceness of background work that no writer waits for — index builds' scans and sorts,
/// purge (Linux: +10 gives a thread about a tenth of the share of a foreground thread when the
/// cores are busy, all of an idle core).
const BACKGROUND_NICENESS: i32 = 10;

/// Lowers the calling thread's CPU priority to [`BACKGROUND_NICENESS`], so that on a busy
/// machine its work takes the CPU time the foreground transactions leave, instead of a core.
pub(crate) fn run_in_background_priority() {
    // SAFETY: setpriority only reads its arguments; on Linux, PRIO_PROCESS with 0 names the
    // calling thread. A failure leaves the priority as it was.
    unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, BACKGROUND_NICENESS) };
}

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
    writes: Vec<UndoEntry>,
    /// Per write: whether purge is done with the version it replaced. Beside the writes, not in
    /// them: the writes are the transaction's own list, handed over at commit without a copy.
    done: Vec<bool>,
    /// Whether the transaction deleted rows: only then can its writes have left delete marks
    /// (a bulk load's purge then has no row to visit).
    deleted: bool,
    /// Its delete marks have been moved to the graveyard.
    buried: bool,
}

impl PurgeItem {
    fn new(txn: TxnId, csn: Csn, writes: Vec<UndoEntry>, deleted: bool) -> Self {
        PurgeItem {
            txn,
            csn,
            done: vec![false; writes.len()],
            writes,
            deleted,
            buried: false,
        }
    }
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
    /// Each table's live rows and delete marks (see [`row_counts`]).
    pub(crate) row_counts: RowCounts,
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
    /// The length of `pinned`, readable while a pass holds the list.
    pinned_count: AtomicUsize,
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
    /// Names claimed by open transactions' DDL, with the claiming transaction (see
    /// [`catalog_change`]).
    claims: Mutex<HashMap<String, TxnId>>,
    /// How many names are claimed: statements look at `claims` only when some are.
    claim_count: AtomicUsize,
    /// The indexes of tables whose contents a committed TRUNCATE or rebuild replaced, with its
    /// CSN and the table's name: a snapshot older than that is refused there (40001), since the
    /// old contents are no longer where it would look. Forgotten once the horizon passes.
    rewritten: RwLock<HashMap<IndexId, (Csn, String)>>,
    /// How many indexes `rewritten` holds: reads look at it only when some.
    rewritten_count: AtomicUsize,
    /// The online index builds running, with the rows written to their tables meanwhile.
    pub(crate) builds: crate::index_build::Builds,
    id_allocation: Mutex<()>,
    /// The hidden row ids reserved: next to hand out, end of the block.
    row_ids: Mutex<(u64, u64)>,
}

/// The buffer pool a backup's copy is prepared (recovered) with.
const BACKUP_PREPARE_POOL: usize = 64 << 20;

impl Engine {
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// An online physical backup into `dest` (see `steady_storage::backup`), with DDL kept out
    /// while it copies (a space created meanwhile would be missing from the copy): DDL waits
    /// for the copy to end, row writes go on.
    ///
    /// The copy is then prepared: opened once, which replays its log and rolls back the
    /// transactions that had not committed when the copy ended, and closed, so that it is a
    /// cleanly shut down directory (`steady check` verifies it as it is).
    pub fn backup_to(
        &self,
        dest: &std::path::Path,
    ) -> Result<steady_storage::backup::BackupReport> {
        let report = {
            let _no_ddl = self.ddl.read();
            self.store.backup_to(dest)?
        };
        let config = EngineConfig {
            store: StoreConfig {
                page_size: self.store.page_size(),
                buffer_pool_bytes: BACKUP_PREPARE_POOL,
                ..StoreConfig::default()
            },
            background_purge: false,
            ..EngineConfig::default()
        };
        Engine::open(dest, &config)?.close()?;
        Ok(report)
    }

    pub fn locks(&self) -> &LockManager {
        &self.locks
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

    /// A table's live rows and delete marks, estimated as PostgreSQL's `reltuples` is: its leaf
    /// count (read from the branch pages) times the average per leaf of up to [`SAMPLED_LEAVES`]
    /// leaves spread over the clustered tree. Exact for a table of that many leaves or fewer, and
    /// never a scan of a large one: monitoring answers in milliseconds whatever the table's size.
    pub fn estimate_rows(&self, table: IndexId) -> Result<RowEstimate> {
        let tree = self.tree(table)?;
        let leaves = tree.stats()?.leaf_pages as u64;
        let cuts = tree.partition(SAMPLED_LEAVES, Bound::Unbounded, Bound::Unbounded)?;
        let starts = std::iter::once(Bound::Unbounded)
            .chain(cuts.keys.iter().map(|key| Bound::Included(key.as_slice())));
        let mut entries = Entries::default();
        let (mut sampled, mut sample) = (0u64, RowEstimate::default());
        for start in starts {
            tree.read_leaf(
                &mut LeafWalk::default(),
                start,
                Bound::Unbounded,
                &mut entries,
            )?;
            sampled += 1;
            for entry in 0..entries.len() {
                match Version::in_record(entries.value(entry))? {
                    (_, true) => sample.dead += 1,
                    (_, false) => sample.live += 1,
                }
            }
        }
        let scale = |n: u64| {
            if sampled >= leaves {
                n
            } else {
                n * leaves / sampled
            }
        };
        Ok(RowEstimate {
            live: scale(sample.live),
            dead: scale(sample.dead),
        })
    }

    /// A table's live rows and delete marks from its counters (see [`row_counts`]): no page is
    /// read, unless the counters have not been settled by a sample yet (just after opening the
    /// database or a rewrite, before the purge thread got to them): then this samples them.
    pub fn table_rows(&self, table: IndexId) -> Result<RowEstimate> {
        if let Some(counts) = self.row_counts.get(table) {
            return Ok(counts);
        }
        let sample = self.estimate_rows(table)?;
        self.row_counts.settle(table, sample);
        Ok(self.row_counts.get(table).unwrap_or(sample))
    }

    /// Settles, with a sample of each, the row counters of the tables that have none yet.
    pub(super) fn settle_row_counts(&self) -> Result<()> {
        for table in self.tables() {
            if !self.row_counts.is_settled(table.id) {
                match self.estimate_rows(table.id) {
                    Ok(sample) => self.row_counts.settle(table.id, sample),
                    // Dropped since the list was read.
                    Err(EngineError::NoSuchIndex(_)) => {}
                    Err(err) => return Err(err),
                }
            }
        }
        Ok(())
    }

    /// The ids of every user index, in order.
    pub fn index_ids(&self) -> Vec<IndexId> {
        let mut ids: Vec<IndexId> = self.indexes.read().keys().copied().collect();
        ids.sort_unstable();
        ids
    }

    /// The page requests made through index `index` (the table's own id for its rows) since
    /// its tree was opened or built (`steady_storage::btree::TreeIo`); None for no such index.
    pub fn index_io(&self, index: IndexId) -> Option<TreeIoCounts> {
        self.indexes.read().get(&index).map(|tree| tree.io())
    }

    /// The space the tree of `index` is in now (without taking a reference to the tree).
    pub(crate) fn tree_space(&self, index: IndexId) -> Result<steady_storage::SpaceId> {
        self.indexes
            .read()
            .get(&index)
            .map(|tree| tree.space().id())
            .ok_or(EngineError::NoSuchIndex(index))
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
            undo_length: 0,
            undo_runs: false,
            written: HashMap::default(),
            generation: AtomicU64::new(0),
            rewrites: Vec::new(),
            replaced: HashMap::new(),
            wrote: false,
            used_sequence: false,
            holds_own_lock: false,
            locked_writes: HashSet::new(),
            deleted: false,
            locked_rows: HashMap::default(),
            discarded: Vec::new(),
            claimed: Vec::new(),
            rewrote: Vec::new(),
            row_deltas: RowDeltas::default(),
            lock_timeout: self.lock_timeout,
            statement_deadline: None,
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
    /// pinned list is counted by `pinned_count`, never locked here: a pass holds it for its whole
    /// length, and a query of `steady_metrics` must not wait for a pass.
    fn purge_lag(&self) -> usize {
        let queued = self.purge_queue.lock().len();
        let in_flight = self.purge_in_flight.load(Ordering::Acquire);
        queued + in_flight + self.pinned_count.load(Ordering::Acquire)
    }

    /// Committed transactions purge has not passed over once yet (queued, or in the running
    /// pass); those it keeps pinned for older snapshots, their rows buried, are not counted.
    fn purge_queued(&self) -> usize {
        self.purge_queue.lock().len() + self.purge_in_flight.load(Ordering::Acquire)
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
            purge_queued: self.purge_queued(),
            graveyard_length: self.graveyard_length.load(Ordering::Relaxed).max(0) as u64,
        }
    }
}

/// Leaves [`Engine::estimate_rows`] reads at most, spread over the tree.
const SAMPLED_LEAVES: usize = 64;

/// A table's rows as [`Engine::estimate_rows`] estimates them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RowEstimate {
    /// Records in place that are rows (committed or not), not delete marks.
    pub live: u64,
    /// Delete marks in place: rows deleted that purge has not removed yet.
    pub dead: u64,
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
    /// Committed transactions purge has not passed over once yet.
    pub purge_queued: usize,
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
    /// The undo entries purge will need, in order: every entry but those of rows inserted in runs,
    /// which are only in the undo tree (a bulk load keeps no entry per row in memory). Rollback
    /// reads the undo tree, which holds them all.
    pub(crate) writes: Vec<UndoEntry>,
    /// How many undo entries the transaction has written: the sequence number of the next one.
    undo_length: u64,
    /// Whether some undo entries are only in the undo tree (`writes` lacks rows inserted in runs).
    undo_runs: bool,
    /// The rows written, each with the savepoint generation its version was last saved in (by its
    /// undo entry, or in `rewrites`); a write in a later generation saves it again. Rows written
    /// before any savepoint are not listed: their own version in place says generation 0 (a bulk
    /// UPDATE or DELETE keeps no map entry per row).
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
    /// Whether a sequence handed this transaction a value: its commit then syncs the log even
    /// if it wrote no row, so that a value used is never handed out again after a crash.
    pub(crate) used_sequence: bool,
    /// Whether it holds the lock on its own id (it inserted rows without row locks).
    holds_own_lock: bool,
    /// The trees this transaction wrote by the locking path (`write_locked`, a batch of locked
    /// rows): inserts into them take that path too, so a run of inserts without row locks only
    /// ever meets rows of other transactions or rows this one inserted in runs — the undo entry
    /// a run writes for each row before it knows the key is present then removes, at a rollback
    /// (recovery's included), nothing this transaction must keep.
    locked_writes: HashSet<IndexId>,
    /// Whether it has delete-marked a row (even if a savepoint undid it since).
    deleted: bool,
    /// Rows `lock_row` locked, with their newest versions, for the writes that follow (see
    /// [`Transaction::lock_row`]), by primary key: at most [`LOCKED_ROWS_KEPT`], one per key.
    locked_rows: HashMap<Vec<u8>, LockedRow, ahash::RandomState>,
    /// Own live versions the last write replaced without saving them (see `discard_own`): their
    /// secondary entries are dropped where no version of the row still has them.
    discarded: Vec<(IndexId, Vec<u8>, Version)>,
    /// The names this transaction's DDL claimed (see [`catalog_change`]).
    claimed: Vec<String>,
    /// The tables whose contents it replaced (TRUNCATE, rebuilds), for `Engine::rewritten` at
    /// its commit.
    rewrote: Vec<Arc<TableDef>>,
    /// What its row writes change in its tables' counts of rows and delete marks, added to them
    /// at commit (see [`row_counts`]).
    row_deltas: RowDeltas,
    /// How long a lock is waited for before the statement fails (None: forever); the engine's
    /// `lock_timeout` unless the session sets one ([`Transaction::set_lock_timeout`]).
    pub(crate) lock_timeout: Option<Duration>,
    /// When the running statement times out (`statement_timeout`), for work that looks at the
    /// clock itself: an index build or a table rewrite
    /// ([`Transaction::set_statement_deadline`]).
    pub(crate) statement_deadline: Option<Instant>,
    pub(crate) ended: bool,
}

/// The most rows `lock_row` keeps for the writes that follow (more than an UPDATE or DELETE locks
/// before it writes a batch).
const LOCKED_ROWS_KEPT: usize = 128;

/// A row a transaction has locked and the newest version it read under the lock, in the tree it
/// read it from (a table rewritten since is not this tree any more).
struct LockedRow {
    tree: Arc<BTree>,
    index: IndexId,
    current: Version,
}

/// A point in a transaction that [`Transaction::rollback_to`] goes back to: the lengths of its undo
/// log (in the undo tree and in memory) and of its list of replaced own versions. It stays valid after rolling back to it, but not
/// after rolling back to an earlier savepoint (as in SQL).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Savepoint {
    txn: TxnId,
    undo_length: u64,
    writes: usize,
    rewrites: usize,
    rewrote: usize,
    row_deltas: RowDeltas,
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

/// The rows of a range as a transaction sees them (its snapshot, its own writes); each item is
/// `Ok((pk, row))`. It borrows no transaction, so the transaction may write while scanning.
pub struct Scan {
    engine: Arc<Engine>,
    reader: TxnId,
    tree: Arc<BTree>,
    index: IndexId,
    snapshot: Option<Csn>,
    /// Where the next leaf's entries start; None once the range is read.
    next_start: Option<Bound<Vec<u8>>>,
    end: Bound<Vec<u8>>,
    leaf: scan::ScanLeaf,
}
