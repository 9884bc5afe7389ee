//! Savepoints: what a write replaces is saved once per savepoint generation; rolling back to a
//! savepoint puts back the transaction's own versions and undoes the undo entries logged since,
//! newest first.

use super::write::{keys_written_by, written_by};

use super::*;

impl Engine {
    /// `writes` with each `InsertedRange` replaced by the `Inserted` rows it covers that hold
    /// `txn`'s version (purge looks for delete marks row by row).
    pub(super) fn rows_of_ranges(
        &self,
        txn: TxnId,
        writes: Vec<UndoEntry>,
    ) -> Result<Vec<UndoEntry>> {
        let mut rows = Vec::with_capacity(writes.len());
        for write in writes {
            let UndoAction::InsertedRange { last } = &write.action else {
                rows.push(write);
                continue;
            };
            let Ok(tree) = self.tree(write.index) else {
                continue;
            };
            for pk in keys_written_by(&tree, &write.pk, last, txn)? {
                rows.push(UndoEntry {
                    index: write.index,
                    pk,
                    action: UndoAction::Inserted,
                });
            }
        }
        Ok(rows)
    }
}

impl Transaction {
    /// Marks the current point of the transaction, to come back to with
    /// [`Transaction::rollback_to`]; a new savepoint generation starts.
    pub fn savepoint(&self) -> Savepoint {
        self.generation.fetch_add(1, Ordering::Relaxed);
        Savepoint {
            txn: self.id,
            undo_length: self.undo_length,
            writes: self.writes.len(),
            rewrites: self.rewrites.len(),
            rewrote: self.rewrote.len(),
            row_deltas: self.row_deltas.clone(),
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
                && savepoint.undo_length <= self.undo_length
                && savepoint.rewrites <= self.rewrites.len(),
            "not a savepoint of transaction {}",
            self.id
        );
        self.locked_rows.clear();
        let trees = self.engine.indexes.read().clone();
        self.restore_rewrites(&trees, savepoint.rewrites)?;
        self.undo_writes_since(trees, savepoint.undo_length)?;
        if savepoint.undo_length < self.undo_length {
            let since = undo_key(self.id, savepoint.undo_length);
            let last = undo_key(self.id, self.undo_length - 1);
            self.engine.undo.delete_ranges(&[(since, last)])?;
        }
        self.undo_length = savepoint.undo_length;
        self.writes.truncate(savepoint.writes);
        self.rewrote.truncate(savepoint.rewrote);
        self.row_deltas = savepoint.row_deltas.clone();
        Ok(())
    }

    /// The undo entries this transaction has written from sequence number `from` on, oldest first,
    /// read from the undo tree (which, unlike `writes`, also holds the rows inserted in runs).
    pub(super) fn logged_writes(&self, from: u64) -> Result<Vec<UndoEntry>> {
        if from >= self.undo_length {
            return Ok(Vec::new());
        }
        let start = undo_key(self.id, from);
        let end = undo_key(self.id, self.undo_length);
        let range = self
            .engine
            .undo
            .range(Bound::Included(&start), Bound::Excluded(&end));
        let mut entries = Vec::new();
        for record in range {
            entries.extend(UndoEntry::decode_record(&record?.1)?);
        }
        Ok(entries)
    }

    /// At commit, the writes purge must look at, each not yet done: the replaced versions to
    /// remove from history (those of writes savepoints undid included) and, if the transaction
    /// deleted rows, every row it wrote (a delete mark may be on any of them, rows inserted in
    /// runs included, read back from the undo tree).
    pub(super) fn writes_to_purge(&mut self) -> Result<Vec<UndoEntry>> {
        let mut writes = if self.deleted && self.undo_runs {
            let logged = self.logged_writes(0)?;
            self.engine.rows_of_ranges(self.id, logged)?
        } else {
            std::mem::take(&mut self.writes)
        };
        if !self.deleted {
            writes
                .retain(|w| matches!(w.action, UndoAction::Replaced { .. } | UndoAction::Dropped));
        }
        writes.extend(std::mem::take(&mut self.replaced).into_values());
        Ok(writes)
    }

    /// Puts back, newest first, the own versions in `rewrites[from..]`, and the generations their
    /// rows had been saved in.
    pub(super) fn restore_rewrites(
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

    /// Undoes the undo entries from sequence number `from` on, newest first, leaving their
    /// replaced versions in history (noted in `replaced`), and forgets the rows they first wrote.
    pub(super) fn undo_writes_since(
        &mut self,
        mut trees: HashMap<IndexId, Arc<BTree>>,
        from: u64,
    ) -> Result<()> {
        for entry in self.logged_writes(from)?.iter().rev() {
            if let Some(key) = self.undo_entry(&mut trees, entry, true)? {
                self.replaced.insert(key, entry.clone());
            }
            match &entry.action {
                UndoAction::IndexEntry
                | UndoAction::Catalog { .. }
                | UndoAction::Created
                | UndoAction::Dropped => {}
                UndoAction::InsertedRange { last } => {
                    let (index, first) = (entry.index, &entry.pk);
                    self.written.retain(|(i, pk), _| {
                        *i != index || pk.as_slice() < first.as_slice() || pk > last
                    });
                }
                _ => {
                    self.written.remove(&(entry.index, entry.pk.clone()));
                }
            }
        }
        Ok(())
    }
}

/// Rolls back one write of transaction `txn`; safe to repeat and to run on a write that was only
/// partly done (recovery), or on an index dropped since. Returns whether a history entry was removed.
pub(super) fn undo_write(
    history: &BTree,
    trees: &HashMap<IndexId, Arc<BTree>>,
    txn: TxnId,
    entry: &UndoEntry,
) -> Result<bool> {
    let Some(key) = undo_in_place(history, trees, txn, entry)? else {
        return Ok(false);
    };
    let removed = history.delete_if(&key, |bytes| OldVersion::superseded_by_is(bytes, txn))?;
    Ok(removed.is_some())
}

/// Rolls back one write of transaction `txn` in its index only, as `undo_write` does: removes the
/// row it inserted or the secondary entry it added, or puts back the version it replaced. Returns
/// the key of the history entry `txn` moved that version to, if it is there.
pub(super) fn undo_in_place(
    history: &BTree,
    trees: &HashMap<IndexId, Arc<BTree>>,
    txn: TxnId,
    entry: &UndoEntry,
) -> Result<Option<Vec<u8>>> {
    let Some(tree) = trees.get(&entry.index) else {
        return Ok(None);
    };
    match &entry.action {
        UndoAction::IndexEntry => {
            tree.delete(&entry.pk)?;
            Ok(None)
        }
        UndoAction::Catalog { .. } | UndoAction::Created | UndoAction::Dropped => Ok(None),
        UndoAction::Inserted => {
            if written_by(tree, &entry.pk, txn)? {
                tree.delete(&entry.pk)?;
            }
            Ok(None)
        }
        UndoAction::InsertedRange { last } => {
            for key in keys_written_by(tree, &entry.pk, last, txn)? {
                tree.delete(&key)?;
            }
            Ok(None)
        }
        UndoAction::Replaced { previous_start } => {
            let key = history_key(entry.index, &entry.pk, *previous_start);
            let saved = match history.get(&key)? {
                Some(bytes) => {
                    Some(OldVersion::decode(&bytes)?).filter(|old| old.superseded_by == txn)
                }
                None => None,
            };
            let in_place = tree
                .get(&entry.pk)?
                .map(|b| Version::decode(&b))
                .transpose()?;
            if let Some(in_place) = in_place.filter(|v| v.writer == txn) {
                // The row this transaction's delete mark keeps, or else the one it sent to history.
                let restored = in_place
                    .kept_version()
                    .or_else(|| saved.as_ref().map(|old| old.version.clone()));
                if let Some(restored) = restored {
                    tree.insert(&entry.pk, &restored.encode())?;
                }
            }
            Ok(saved.map(|_| key))
        }
    }
}
