//! Transactional DDL: catalog changes made by a transaction, undone with it.
//!
//! A DDL statement runs in a transaction like any write and logs undo entries for what it
//! changes, so a rollback (a whole one, to a savepoint, or recovery's after a crash) puts the
//! catalog and the files back as they were, and a commit makes them durable with its marker:
//!
//! * **A catalog entry** (a table, view or sequence definition in the meta tree) is changed after
//!   a `Catalog` undo entry holding what it held before; undoing it puts that back, and the
//!   in-memory table it defines with the trees of the space it names.
//! * **A new space or tree** is created after a `Created` entry naming it (for a space, the log is
//!   made durable first: its file is not in the log); undoing it drops the object.
//! * **A space or tree no longer used** (DROP TABLE, DROP INDEX, the old space of a TRUNCATE or a
//!   rebuild) gets a `Dropped` entry and stays as it is until the transaction commits and purge
//!   reaches it, once no snapshot older than the commit is open (a statement still reading it
//!   finishes); a rollback only forgets the entry. After a crash, committed transactions' entries
//!   go back to purge, so no file is left behind either way.
//!
//! **Isolation.** A transaction takes the table lock of every table whose definition it changes
//! exclusively, until it ends: other transactions' writes to the table wait (they hold it shared),
//! and so does its DDL. Definitions change in the shared in-memory catalog at once, so the names
//! a transaction's DDL touched are registered as *claimed* until it ends; the SQL layer makes a
//! statement of another transaction that names one wait for the claimer's end before it binds
//! ([`Engine::wait_for_claim`]), so no other session ever plans with a definition that may
//! still be rolled back. A statement bound before a claim reads with the committed definition.

use super::savepoint::undo_write;
use super::transaction::txn_lock_key;
use super::*;
use crate::catalog::table_key;
use crate::version::StorageObject;

impl Engine {
    /// Runs `work` in a transaction of its own (READ COMMITTED) and commits it, or rolls it back
    /// if `work` fails: a DDL statement outside a transaction block.
    pub fn autocommit<T>(
        self: &Arc<Self>,
        work: impl FnOnce(&mut Transaction) -> Result<T>,
    ) -> Result<T> {
        let mut txn = self.begin(Isolation::ReadCommitted)?;
        match work(&mut txn) {
            Ok(value) => {
                txn.commit()?;
                Ok(value)
            }
            Err(err) => {
                txn.rollback()?;
                Err(err)
            }
        }
    }

    /// The transaction that claimed `name` with uncommitted DDL, if one did.
    pub fn claimer(&self, name: &str) -> Option<TxnId> {
        if self.claim_count.load(Ordering::Acquire) == 0 {
            return None;
        }
        self.claims.lock().get(name).copied()
    }

    /// Waits (at most `timeout` each time) until no transaction other than `waiter` claims
    /// `name`: the claimer has committed or rolled back, and `name`'s definition is a committed
    /// one (waits for the claimer's own lock, so deadlocks are found and a cancel ends the wait).
    pub fn wait_for_claim(
        &self,
        name: &str,
        waiter: TxnId,
        timeout: Option<Duration>,
    ) -> Result<()> {
        while let Some(claimer) = self.claimer(name).filter(|&c| c != waiter) {
            let key = txn_lock_key(claimer);
            self.locks
                .lock(waiter, key.clone(), LockMode::Shared, timeout)?;
            self.locks.release(waiter, &key);
        }
        Ok(())
    }

    /// Tables whose contents a transaction committed at `csn` replaced: snapshots older than it
    /// are refused there from now on (see [`Engine::rewritten`]).
    pub(super) fn note_rewritten(&self, tables: &[Arc<TableDef>], csn: Csn) {
        if tables.is_empty() {
            return;
        }
        let mut rewritten = self.rewritten.write();
        for table in tables {
            let ids = std::iter::once(table.id).chain(table.indexes.iter().map(|i| i.id));
            for id in ids {
                rewritten.insert(id, (csn, table.name.clone()));
            }
        }
        self.rewritten_count
            .store(rewritten.len(), Ordering::Release);
    }

    /// Forgets the rewrites every open snapshot is newer than (purge, at horizon `horizon`).
    pub(super) fn forget_rewrites(&self, horizon: Csn) {
        if self.rewritten_count.load(Ordering::Acquire) == 0 {
            return;
        }
        let mut rewritten = self.rewritten.write();
        rewritten.retain(|_, (csn, _)| *csn > horizon);
        self.rewritten_count
            .store(rewritten.len(), Ordering::Release);
    }

    /// 40001 if `snapshot` is older than a TRUNCATE or rebuild of `index`'s table.
    fn check_not_rewritten(&self, index: IndexId, snapshot: Option<Csn>) -> Result<()> {
        let (Some(snapshot), true) = (snapshot, self.rewritten_count.load(Ordering::Acquire) > 0)
        else {
            return Ok(());
        };
        match self.rewritten.read().get(&index) {
            Some((csn, name)) if snapshot < *csn => Err(EngineError::TableRewritten(name.clone())),
            _ => Ok(()),
        }
    }

    /// Undoes one catalog change of a rolled-back transaction (see the module documentation);
    /// safe to repeat.
    pub(super) fn undo_catalog_change(&self, entry: &UndoEntry) -> Result<()> {
        match &entry.action {
            UndoAction::Catalog { before } => {
                restore_meta(&self.meta, &entry.pk, before.as_deref())?;
                self.reload_table(&entry.pk, before.as_deref())
            }
            UndoAction::Created => self.drop_storage(StorageObject::of(entry)?),
            _ => Ok(()),
        }
    }

    /// Makes the in-memory catalog follow the definition under meta key `key` (None: no table).
    fn reload_table(&self, key: &[u8], definition: Option<&[u8]>) -> Result<()> {
        let Some(id) = table_id_of(key) else {
            crate::catalog::changed();
            return Ok(());
        };
        match definition {
            None => {
                self.catalog.write().remove(&id);
            }
            Some(json) => {
                let table = decode_table(json)?;
                open_table_trees(&self.store, &table, &mut self.indexes.write())?;
                self.catalog.write().insert(id, Arc::new(table));
            }
        }
        crate::catalog::changed();
        Ok(())
    }

    /// Drops a space or tree, forgetting its trees first; one already gone is skipped.
    pub(crate) fn drop_storage(&self, object: StorageObject) -> Result<()> {
        forget_trees(&mut self.indexes.write(), object);
        drop_storage(&self.store, object)
    }

    /// Drops what committed transactions' DDL left `Dropped` (purge, once no snapshot older
    /// than their commits is open).
    pub(super) fn drop_unused_storage(&self, items: &[PurgeItem]) -> Result<()> {
        let dropped = items.iter().flat_map(|item| &item.writes);
        for write in dropped.filter(|w| w.action == UndoAction::Dropped) {
            self.drop_storage(StorageObject::of(write)?)?;
        }
        Ok(())
    }
}

impl Transaction {
    /// Sets meta entry `key` to `value` (None removes it), logging what it held first.
    pub(crate) fn write_catalog(&mut self, key: &[u8], value: Option<&[u8]>) -> Result<()> {
        let engine = Arc::clone(&self.engine);
        let before = engine.meta.get(key)?;
        self.append_undo(UndoEntry {
            index: META_INDEX,
            pk: key.to_vec(),
            action: UndoAction::Catalog { before },
        })?;
        match value {
            Some(value) => engine.meta.insert(key, value).map(drop)?,
            None => engine.meta.delete(key).map(drop)?,
        }
        Ok(())
    }

    /// Saves a table's definition and makes it the current one.
    pub(crate) fn save_table(&mut self, table: TableDef) -> Result<Arc<TableDef>> {
        let json = serde_json::to_vec(&table).map_err(|e| EngineError::Corrupt(e.to_string()))?;
        self.write_catalog(&table_key(table.id), Some(&json))?;
        let table = Arc::new(table);
        self.engine.catalog.write().insert(table.id, table.clone());
        crate::catalog::changed();
        Ok(table)
    }

    /// Removes a table's definition; its space is dropped after the commit.
    pub(crate) fn remove_table(&mut self, table: &TableDef) -> Result<()> {
        self.drop_grants(table.id)?;
        self.write_catalog(&table_key(table.id), None)?;
        self.engine.catalog.write().remove(&table.id);
        crate::catalog::changed();
        self.drop_after_commit(StorageObject {
            space: table.space,
            tree: None,
        })
    }

    /// A new space, dropped again if the transaction rolls back.
    pub(crate) fn new_space(&mut self) -> Result<Arc<Space>> {
        let engine = Arc::clone(&self.engine);
        let id = engine.store.reserve_space_id();
        self.append_undo(
            StorageObject {
                space: id,
                tree: None,
            }
            .entry(UndoAction::Created),
        )?;
        engine.store.sync_log()?;
        Ok(engine.store.create_space_at(id)?)
    }

    /// A new tree id in `space`, whose tree is dropped again if the transaction rolls back (the
    /// tree's pages reach the log after this entry).
    pub(crate) fn new_tree_id(&mut self, space: steady_storage::SpaceId) -> Result<IndexId> {
        let id = self.engine.allocate_index_id()?;
        let tree = Some(id);
        self.append_undo(StorageObject { space, tree }.entry(UndoAction::Created))?;
        Ok(id)
    }

    /// The snapshot reads of `index` use (see [`Transaction::snapshot`]), refused (40001) if a
    /// TRUNCATE or rebuild of its table committed after it was taken.
    pub(crate) fn snapshot_of(&mut self, index: IndexId) -> Result<Option<Csn>> {
        let snapshot = self.snapshot()?;
        self.engine.check_not_rewritten(index, snapshot)?;
        Ok(snapshot)
    }

    /// The table's contents are replaced by this transaction (TRUNCATE, a rebuild): older
    /// snapshots are refused there once it commits.
    pub(crate) fn note_rewrite(&mut self, table: Arc<TableDef>) {
        self.rewrote.push(table);
    }

    /// Drops `object` once the transaction has committed and no older snapshot is open.
    pub(crate) fn drop_after_commit(&mut self, object: StorageObject) -> Result<()> {
        self.append_undo(object.entry(UndoAction::Dropped))
    }

    /// Claims `name` for this transaction's DDL until it ends, after waiting for another
    /// transaction that claimed it to end (a table dropped by one must not be created by another
    /// while the drop may still roll back): other transactions' statements naming it wait
    /// ([`Engine::wait_for_claim`]). Never called under the engine's DDL lock (the wait could
    /// be for a transaction that needs it).
    pub(crate) fn claim(&mut self, name: &str) -> Result<()> {
        self.hold_own_lock()?;
        let engine = self.engine();
        loop {
            engine.wait_for_claim(name, self.id, self.lock_timeout)?;
            let mut claims = engine.claims.lock();
            match claims.get(name) {
                Some(&claimer) if claimer == self.id => return Ok(()),
                Some(_) => continue,
                None => {
                    claims.insert(name.to_string(), self.id);
                    engine.claim_count.fetch_add(1, Ordering::AcqRel);
                    self.claimed.push(name.to_string());
                    return Ok(());
                }
            }
        }
    }

    /// Releases this transaction's claims (at its end).
    pub(super) fn release_claims(&mut self) {
        if self.claimed.is_empty() {
            return;
        }
        let mut claims = self.engine.claims.lock();
        for name in self.claimed.drain(..) {
            if claims.get(&name) == Some(&self.id) {
                claims.remove(&name);
                self.engine.claim_count.fetch_sub(1, Ordering::AcqRel);
            }
        }
    }

    /// Locks table `name` for a change of its definition or of all its rows, until the
    /// transaction ends (waiting for the transactions that wrote to it: they hold the lock
    /// shared), claims its name, and returns its definition as it is under the lock. Taken
    /// before the engine's DDL lock, so a writer in the middle of its transaction can always
    /// finish.
    pub(crate) fn lock_table_for_ddl(&mut self, name: &str) -> Result<Arc<TableDef>> {
        let engine = Arc::clone(&self.engine);
        let no_table = || EngineError::NoSuchTable(name.to_string());
        let id = engine.table(name).ok_or_else(no_table)?.id;
        self.lock_ddl(id)?;
        let key = LockKey::new(id, Vec::new());
        engine
            .locks
            .lock(self.id, key, LockMode::Exclusive, self.lock_timeout)?;
        self.claim(name)?;
        engine.table_by_id(id).ok_or_else(no_table)
    }

    /// `LOCK TABLE`: takes table `name`'s lock until the transaction ends — shared as its
    /// writers take it (DDL on the table waits), or `exclusive` (its writers wait too; readers
    /// never take it). `nowait` fails at once (55P03) instead of waiting.
    pub fn lock_table(&mut self, name: &str, exclusive: bool, nowait: bool) -> Result<()> {
        let engine = Arc::clone(&self.engine);
        let id = engine
            .table(name)
            .ok_or_else(|| EngineError::NoSuchTable(name.to_string()))?
            .id;
        let mode = if exclusive {
            LockMode::Exclusive
        } else {
            LockMode::Shared
        };
        let timeout = if nowait {
            Some(std::time::Duration::ZERO)
        } else {
            self.lock_timeout
        };
        Ok(engine
            .locks
            .lock(self.id, LockKey::new(id, Vec::new()), mode, timeout)?)
    }

    /// Takes table `table`'s DDL lock until the transaction ends: no other DDL on the table runs
    /// meanwhile (the table's writers never take it).
    pub(crate) fn lock_ddl(&mut self, table: IndexId) -> Result<()> {
        let key = LockKey::new(DDL_LOCKS, table.to_be_bytes());
        let engine = Arc::clone(&self.engine);
        Ok(engine
            .locks
            .lock(self.id, key, LockMode::Exclusive, self.lock_timeout)?)
    }

    /// Locks a new table's id (its name is claimed already), as
    /// [`Transaction::lock_table_for_ddl`] locks an existing one.
    pub(crate) fn lock_new_table(&mut self, id: IndexId) -> Result<()> {
        let key = LockKey::new(id, Vec::new());
        let engine = Arc::clone(&self.engine);
        Ok(engine.locks.lock(self.id, key, LockMode::Exclusive, None)?)
    }

    /// Undoes one logged write during a rollback: a row write in `trees` (returning the history
    /// key it left, as [`super::savepoint::undo_in_place`]), or a catalog change, after which
    /// `trees` is read again (the change may have put other trees in place).
    pub(super) fn undo_entry(
        &self,
        trees: &mut HashMap<IndexId, Arc<BTree>>,
        entry: &UndoEntry,
        keep_history: bool,
    ) -> Result<Option<Vec<u8>>> {
        if entry.action.is_row_write() {
            if keep_history {
                return super::savepoint::undo_in_place(
                    &self.engine.history,
                    trees,
                    self.id,
                    entry,
                );
            }
            if undo_write(&self.engine.history, trees, self.id, entry)? {
                self.engine.history_length.fetch_sub(1, Ordering::Relaxed);
            }
            return Ok(None);
        }
        self.engine.undo_catalog_change(entry)?;
        *trees = self.engine.indexes.read().clone();
        Ok(None)
    }
}

/// Recovery's undo of a catalog change of a transaction that did not commit: the meta entry put
/// back, a created space or tree dropped (and forgotten from `trees`). The in-memory catalog is
/// read from the meta tree afterwards.
pub(super) fn recover_catalog_change(
    store: &Store,
    meta: &BTree,
    trees: &mut HashMap<IndexId, Arc<BTree>>,
    entry: &UndoEntry,
) -> Result<()> {
    match &entry.action {
        UndoAction::Catalog { before } => {
            restore_meta(meta, &entry.pk, before.as_deref())?;
            match (table_id_of(&entry.pk), before) {
                (Some(_), Some(json)) => open_table_trees(store, &decode_table(json)?, trees),
                _ => Ok(()),
            }
        }
        UndoAction::Created => {
            let object = StorageObject::of(entry)?;
            forget_trees(trees, object);
            drop_storage(store, object)
        }
        _ => Ok(()),
    }
}

/// Puts `before` back under meta key `key` (None: removes the key).
fn restore_meta(meta: &BTree, key: &[u8], before: Option<&[u8]>) -> Result<()> {
    match before {
        Some(value) => meta.insert(key, value).map(drop)?,
        None => meta.delete(key).map(drop)?,
    }
    Ok(())
}

/// The table id of a table definition's meta key; None for any other key.
fn table_id_of(key: &[u8]) -> Option<IndexId> {
    let id = key.strip_prefix(TABLE_PREFIX)?;
    Some(IndexId::from_be_bytes(id.try_into().ok()?))
}

pub(super) fn decode_table(json: &[u8]) -> Result<TableDef> {
    serde_json::from_slice(json).map_err(|e| EngineError::Corrupt(format!("catalog entry: {e}")))
}

/// Makes `trees` map the table's clustered and secondary index ids to the trees of the space its
/// definition names (after a TRUNCATE or rebuild, another space holds trees of the same ids).
pub(super) fn open_table_trees(
    store: &Store,
    table: &TableDef,
    trees: &mut HashMap<IndexId, Arc<BTree>>,
) -> Result<()> {
    let space = store
        .space(table.space)
        .ok_or(EngineError::NoSuchIndex(table.id))?;
    let ids = std::iter::once(table.id).chain(table.indexes.iter().map(|i| i.id));
    for id in ids {
        if trees
            .get(&id)
            .is_some_and(|t| t.space().id() == table.space)
        {
            continue;
        }
        let tree = BTree::open(store.pool().clone(), space.clone(), id)?;
        trees.insert(id, Arc::new(tree));
    }
    Ok(())
}

/// Forgets the trees of `object` (a whole space's, or one tree if it is in that space).
fn forget_trees(trees: &mut HashMap<IndexId, Arc<BTree>>, object: StorageObject) {
    trees.retain(|&id, tree| {
        tree.space().id() != object.space || object.tree.is_some_and(|t| t != id)
    });
}

/// Drops a space or one tree of it; skipped if it is gone already (or was never made).
fn drop_storage(store: &Store, object: StorageObject) -> Result<()> {
    let Some(space) = store.space(object.space) else {
        return Ok(());
    };
    match object.tree {
        None => store.drop_space(object.space)?,
        Some(tree) if space.trees().iter().any(|t| t.index_id == tree) => {
            let mut mtr = steady_storage::mtr::Mtr::new(store.pool())?;
            space.drop_tree(&mut mtr, tree)?;
            mtr.commit();
        }
        Some(_) => {}
    }
    Ok(())
}
