//! A transaction's life: its snapshot per statement, reads (`get`, `scan`, SSI read tracking),
//! commit (the commit marker, the durable log, then the CSN) and rollback.

use super::*;

impl Transaction {
    pub fn id(&self) -> TxnId {
        self.id
    }

    pub fn isolation(&self) -> Isolation {
        self.isolation
    }

    /// How long this transaction's lock waits last before they fail with 55P03 (None: the
    /// engine's `lock_timeout`): a session's `lock_timeout`, set before each statement.
    pub fn set_lock_timeout(&mut self, timeout: Option<Duration>) {
        self.lock_timeout = timeout.or(self.engine.lock_timeout);
    }

    /// When the statement now running times out (None: never); an index build or a table
    /// rewrite then fails with [`EngineError::StatementTimeout`] (57014). Set before each
    /// statement.
    pub fn set_statement_deadline(&mut self, deadline: Option<Instant>) {
        self.statement_deadline = deadline;
    }

    /// The longest a lock wait of this transaction lasts (None: no limit).
    pub fn lock_timeout(&self) -> Option<Duration> {
        self.lock_timeout
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
        let snapshot = self.snapshot_of(index)?;
        let record = self.engine.current_version(&tree, index, pk)?;
        let row = self
            .engine
            .visible(&tree, index, pk, record, self.id, snapshot)?;
        self.track_read(index, Bound::Included(pk), Bound::Included(pk))?;
        Ok(row)
    }

    /// The rows stored under `pks` (ascending) in `index`, as [`Transaction::get`] one by one
    /// sees them, the tree read in one walk.
    pub fn get_many(&mut self, index: IndexId, pks: &[Vec<u8>]) -> Result<Vec<Option<Vec<u8>>>> {
        let rows = self.get_many_for_change(index, pks)?;
        Ok(rows
            .into_iter()
            .map(|seen| seen.map(SeenRow::into_row))
            .collect())
    }

    /// SERIALIZABLE: records a read for the dependency tracker, failing if it completes a
    /// dangerous structure.
    pub(super) fn track_read(
        &self,
        index: IndexId,
        low: Bound<&[u8]>,
        high: Bound<&[u8]>,
    ) -> Result<()> {
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
        let snapshot = self.snapshot_of(index)?;
        self.track_read(index, start, end)?;
        Ok(Scan {
            engine: Arc::clone(&self.engine),
            reader: self.id,
            tree,
            index,
            snapshot,
            next_start: Some(start.map(<[u8]>::to_vec)),
            end: end.map(<[u8]>::to_vec),
            leaf: Default::default(),
        })
    }

    /// The rows of `index` in key order as they are now, as READ UNCOMMITTED sees them: this
    /// transaction's writes and every committed one. DDL checks a table's rows so, under the
    /// table's lock held exclusively (no other transaction has a write in flight there), whatever
    /// the transaction's snapshot.
    pub fn scan_latest(&mut self, index: IndexId) -> Result<Scan> {
        self.scan_all_at(index, None)
    }

    /// Every row of `index` in key order as `snapshot` sees it (None: as they are now), with this
    /// transaction's own writes; an online index build reads its table so, from a snapshot of its
    /// own (see [`crate::index_build`]).
    pub(crate) fn scan_all_at(&mut self, index: IndexId, snapshot: Option<Csn>) -> Result<Scan> {
        self.scan_range_at(index, snapshot, Bound::Unbounded, Bound::Unbounded)
    }

    /// [`Transaction::scan_all_at`] over the keys in `start..end` only.
    pub(crate) fn scan_range_at(
        &mut self,
        index: IndexId,
        snapshot: Option<Csn>,
        start: Bound<Vec<u8>>,
        end: Bound<Vec<u8>>,
    ) -> Result<Scan> {
        self.check_open()?;
        Ok(Scan {
            engine: Arc::clone(&self.engine),
            reader: self.id,
            tree: self.engine.tree(index)?,
            index,
            snapshot,
            next_start: Some(start),
            end,
            leaf: Default::default(),
        })
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
            if self.used_sequence {
                engine.store.sync_log()?;
            }
            engine.txns.finish_read_only(self.id);
            engine.ssi.committed(self.id, engine.txns.stats().last_csn);
            self.end();
            return Ok(());
        }
        self.drop_savepoint_versions()?;
        engine.undo.insert(&undo_key(self.id, COMMIT_MARKER), &[])?;
        engine.store.sync_log()?;
        let writes = self.writes_to_purge()?;
        engine.row_counts.commit(&self.row_deltas);
        if !self.rewrote.is_empty() {
            engine
                .row_counts
                .forget(self.rewrote.iter().map(|table| table.id));
        }
        let mut queue = engine.purge_queue.lock();
        let csn = engine.txns.commit(self.id);
        engine.note_rewritten(&self.rewrote, csn);
        engine.ssi.committed(self.id, csn);
        queue.push_back(PurgeItem::new(self.id, csn, writes, self.deleted));
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
    pub(super) fn undo_all(&mut self) -> Result<()> {
        let engine = Arc::clone(&self.engine);
        let mut trees = engine.indexes.read().clone();
        for entry in self.logged_writes(0)?.iter().rev() {
            self.undo_entry(&mut trees, entry, false)?;
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

    pub(super) fn end(&mut self) {
        if let Some(snapshot) = self.snapshot.take() {
            self.engine.txns.release_snapshot(snapshot);
        }
        self.engine.locks.release_all(self.id);
        self.release_claims();
        self.ended = true;
    }
}

impl Drop for Transaction {
    fn drop(&mut self) {
        if !self.ended {
            if let Err(err) = self.undo_all() {
                tracing::error!("rolling back transaction {} failed: {err}", self.id);
                self.end();
            }
        }
    }
}

/// The lock-table key of transaction `txn`'s own lock.
pub(super) fn txn_lock_key(txn: TxnId) -> LockKey {
    LockKey {
        index_id: TXN_LOCKS,
        key: txn.to_be_bytes().to_vec(),
    }
}

pub(super) fn dependency_failure(_: Conflict) -> EngineError {
    EngineError::SerializationDependency
}
