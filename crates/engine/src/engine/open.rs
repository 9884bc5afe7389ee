//! Opening a database: the system trees and user indexes found in the store, the catalog and
//! counters read back, and recovery — every transaction without a commit marker in the undo tree
//! is rolled back; committed transactions purge had not finished (a crash, or a shutdown with
//! purge behind) go back into the purge queue, so their delete marks, stale index entries, old
//! versions and undo entries are removed as any others; with none, history and undo are emptied
//! at once (no snapshot survives a restart). The graveyard is always emptied: its marks are out
//! of their tables already and no snapshot can need them.

use super::catalog_change::{open_table_trees, recover_catalog_change};
use super::savepoint::undo_write;
use super::*;

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
        let mut indexes = open_user_indexes(&store)?;
        trees_of_catalog(&store, &load_catalog(&meta)?, &mut indexes)?;
        let first_txn = read_counter(&meta, META_NEXT_TXN)?.unwrap_or(1);
        let history = open_or_create(&store, &system, HISTORY_INDEX)?;
        let undo = open_or_create(&store, &system, UNDO_INDEX)?;
        let recovery = Recovery {
            store: &store,
            meta: &meta,
            history: &history,
        };
        let leftover = recovery.roll_back_unfinished(&undo, &mut indexes)?;
        let catalog = load_catalog(&meta)?;
        trees_of_catalog(&store, &catalog, &mut indexes)?;
        let (history, undo, history_length) = if leftover.committed.is_empty() {
            let history = recreate(&store, &system, history)?;
            (history, recreate(&store, &system, undo)?, 0)
        } else {
            let length = history.range(Bound::Unbounded, Bound::Unbounded).count();
            (history, undo, length as i64)
        };
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
            row_counts: RowCounts::new(),
            indexes: RwLock::new(indexes),
            txn_block_end: Mutex::new(first_txn + TXN_BLOCK),
            sequences: Mutex::new(()),
            lock_timeout: config.lock_timeout,
            purge_queue: Mutex::new(VecDeque::new()),
            pinned: Mutex::new(VecDeque::new()),
            pinned_count: AtomicUsize::new(0),
            purge_in_flight: AtomicUsize::new(0),
            forgotten_below: AtomicU64::new(0),
            purge_running: Mutex::new(()),
            purge_thread: Mutex::new(None),
            stop_purge: AtomicBool::new(false),
            max_snapshot_age: config.max_snapshot_age,
            history_length: AtomicI64::new(history_length),
            catalog: RwLock::new(catalog),
            ddl: RwLock::new(()),
            claims: Mutex::new(HashMap::new()),
            claim_count: AtomicUsize::new(0),
            rewritten: RwLock::new(HashMap::new()),
            rewritten_count: AtomicUsize::new(0),
            builds: Default::default(),
            id_allocation: Mutex::new(()),
            row_ids: Mutex::new((0, 0)),
        });
        engine.register_enum_types()?;
        engine.requeue(leftover)?;
        if config.background_purge {
            engine.start_purge()?;
        }
        Ok(engine)
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
}

/// What recovery found in the undo tree: the transactions it rolled back, and the committed
/// ones with their writes (purge had not finished them).
pub(super) struct Leftover {
    rolled_back: Vec<TxnId>,
    committed: Vec<(TxnId, Vec<UndoEntry>)>,
}

impl Engine {
    /// Puts committed transactions found in the undo tree back into the purge queue (every
    /// snapshot that could see their old versions ended with the restart, so a pass finishes
    /// them), and removes the undo entries of the transactions recovery rolled back.
    fn requeue(&self, leftover: Leftover) -> Result<()> {
        if leftover.committed.is_empty() {
            return Ok(());
        }
        self.delete_undo(leftover.rolled_back)?;
        let mut queue = self.purge_queue.lock();
        for (txn, writes) in leftover.committed {
            let writes = self.rows_of_ranges(txn, writes)?;
            let deleted = writes
                .iter()
                .any(|w| matches!(w.action, UndoAction::Replaced { .. }));
            queue.push_back(PurgeItem::new(txn, 0, writes, deleted));
        }
        Ok(())
    }
}

/// What recovery works on before the engine exists.
struct Recovery<'s> {
    store: &'s Store,
    meta: &'s BTree,
    history: &'s BTree,
}

impl Recovery<'_> {
    /// Rolls back every transaction in the undo tree that has no commit marker: its row writes in
    /// `trees`, and its catalog changes (which `trees` follows).
    fn roll_back_unfinished(
        &self,
        undo: &BTree,
        trees: &mut HashMap<IndexId, Arc<BTree>>,
    ) -> Result<Leftover> {
        let mut by_txn: HashMap<TxnId, (Vec<UndoEntry>, bool)> = HashMap::new();
        for entry in undo.range(Bound::Unbounded, Bound::Unbounded) {
            let (key, value) = entry?;
            let (txn, sequence) = split_undo_key(&key)?;
            let slot = by_txn.entry(txn).or_default();
            if sequence == COMMIT_MARKER {
                slot.1 = true;
            } else {
                slot.0.extend(UndoEntry::decode_record(&value)?);
            }
        }
        let mut leftover = Leftover {
            rolled_back: Vec::new(),
            committed: Vec::new(),
        };
        for (txn, (writes, committed)) in by_txn {
            if committed {
                leftover.committed.push((txn, writes));
                continue;
            }
            for entry in writes.iter().rev() {
                if entry.action.is_row_write() {
                    undo_write(self.history, trees, txn, entry)?;
                } else {
                    recover_catalog_change(self.store, self.meta, trees, entry)?;
                }
            }
            leftover.rolled_back.push(txn);
        }
        Ok(leftover)
    }
}

/// Makes `trees` follow the catalog: each table's ids map to the trees of the space it names.
fn trees_of_catalog(
    store: &Store,
    catalog: &HashMap<IndexId, Arc<TableDef>>,
    trees: &mut HashMap<IndexId, Arc<BTree>>,
) -> Result<()> {
    catalog
        .values()
        .try_for_each(|table| open_table_trees(store, table, trees))
}

pub(super) fn open_or_create(store: &Store, space: &Arc<Space>, index: IndexId) -> Result<BTree> {
    let pool = store.pool().clone();
    let tree = if space.trees().iter().any(|t| t.index_id == index) {
        BTree::open(pool, space.clone(), index)?
    } else {
        BTree::create(pool, space.clone(), index)?
    };
    Ok(tree)
}

/// Drops a system tree with all its pages and creates it again, empty.
pub(super) fn recreate(store: &Store, space: &Arc<Space>, tree: BTree) -> Result<BTree> {
    let index = tree.index_id();
    drop(tree);
    let mut mtr = steady_storage::mtr::Mtr::new(store.pool())?;
    space.drop_tree(&mut mtr, index)?;
    mtr.commit();
    Ok(BTree::create(store.pool().clone(), space.clone(), index)?)
}

pub(super) fn open_user_indexes(store: &Store) -> Result<HashMap<IndexId, Arc<BTree>>> {
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

pub(super) fn load_catalog(meta: &BTree) -> Result<HashMap<IndexId, Arc<TableDef>>> {
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
pub(super) fn first_csn(catalog: &HashMap<IndexId, Arc<TableDef>>) -> Csn {
    catalog
        .values()
        .flat_map(|t| t.indexes.iter().map(|i| i.valid_from))
        .max()
        .unwrap_or(0)
}

pub(super) fn read_counter(meta: &BTree, key: &[u8]) -> Result<Option<u64>> {
    meta.get(key)?
        .map(|bytes| {
            let array: [u8; 8] = bytes.as_slice().try_into().map_err(|_| {
                EngineError::Corrupt(format!("meta counter of {} bytes", bytes.len()))
            })?;
            Ok(u64::from_le_bytes(array))
        })
        .transpose()
}
