//! A transaction's writes: a row lock (or, for inserts into tables without secondary indexes, the
//! writer's own transaction lock), the first-updater-wins check, the undo entry and the replaced
//! version saved to history, then the new version in place — in that order, each its own
//! mini-transaction, so recovery can undo any prefix. Updates and deletes of rows read for a
//! change may skip the row lock (`unlocked.rs`).
//!
//! Bulk inserts keep that order per batch: `insert_many` writes the undo entries of a batch of
//! rows first, then the rows in runs of ascending keys, one mini-transaction per leaf; an undo
//! entry whose row never went in is harmless (undoing it removes only this transaction's own
//! version). Rows inserted this way before any savepoint get no entry in `written`: their version
//! in place, naming this transaction, says they were written in generation 0; and their undo
//! entries stay in the undo tree only, not in the transaction's memory.

use super::transaction::{dependency_failure, txn_lock_key};
use super::*;

impl Transaction {
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

    pub(super) fn write(
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
        self.write_locked(index, pk, row, kind)
    }

    /// A write under a row lock: the path of every update and delete, and of the inserts that
    /// cannot go without a row lock.
    fn write_locked(
        &mut self,
        index: IndexId,
        pk: &[u8],
        row: Option<&[u8]>,
        kind: WriteKind,
    ) -> Result<bool> {
        let (tree, current) = self.lock_current(index, pk)?;
        if !self.checked_write(index, pk, current.as_ref(), kind)? {
            return Ok(false);
        }
        self.locked_writes.insert(index);
        // A buried delete mark is the current version too (`Engine::current_version`).
        let before = RowKind::of(current.as_ref());
        let keep = self.save_version(index, pk, current, row.is_none())?;
        tree.insert(pk, &self.new_version(row, keep))?;
        self.engine.unbury(index, pk)?;
        self.row_deltas.note(index, before, RowKind::written(row));
        Ok(true)
    }

    /// With the row locked: whether the write applies (`may_write`), and under SERIALIZABLE the
    /// write recorded for the dependency tracker.
    fn checked_write(
        &mut self,
        index: IndexId,
        pk: &[u8],
        current: Option<&Version>,
        kind: WriteKind,
    ) -> Result<bool> {
        if !self.may_write(index, pk, current, kind)? {
            return Ok(false);
        }
        if self.isolation == Isolation::Serializable {
            let ssi = &self.engine.ssi;
            ssi.write(self.id, index, pk).map_err(dependency_failure)?;
        }
        Ok(true)
    }

    /// The version a write puts in place: `row` by this transaction, or its delete mark (noted in
    /// `deleted`), keeping the row it deletes where `keep` gives it (see `first_write`).
    pub(super) fn new_version(&mut self, row: Option<&[u8]>, keep: Option<Vec<u8>>) -> Vec<u8> {
        self.deleted |= row.is_none();
        match (row, keep) {
            (Some(row), _) => Version::encode_live(self.id, row),
            (None, Some(kept)) => Version::encode_kept_mark(self.id, &kept),
            (None, None) => Version::encode_mark(self.id),
        }
    }

    /// The common insert of a new key into a table without secondary indexes, with no row lock:
    /// the new version names this transaction as its writer, and that is its lock (implicit, as
    /// InnoDB's). Whoever locks the row afterwards finds a running writer in place and waits for
    /// this transaction's own lock ([`TXN_LOCKS`], taken here once) before going on
    /// (`Transaction::lock_current`). The undo entry comes first; the version goes in only if the
    /// key is still absent, checked under the leaf's latch (no descent beforehand to look: a
    /// present key is the rare case, and costs only a harmless undo entry). False, with the insert
    /// left to the locking path, when the key is present, a delete mark may be buried for it, the table has
    /// secondary indexes (purge removes their stale entries under row locks), or SERIALIZABLE
    /// must track the write. An undo entry of an insert that did not happen is harmless: undoing
    /// it removes only a version this transaction wrote.
    pub(super) fn insert_without_row_lock(
        &mut self,
        index: IndexId,
        pk: &[u8],
        row: &[u8],
    ) -> Result<bool> {
        if !self.may_insert_without_row_lock(index) {
            return Ok(false);
        }
        self.locked_rows.clear();
        let engine = Arc::clone(&self.engine);
        self.check_open()?;
        let tree = engine.tree(index)?;
        self.snapshot_of(index)?;
        let written_key = (index, pk.to_vec());
        if self.written.contains_key(&written_key) {
            return Ok(false);
        }
        self.hold_own_lock()?;
        self.append_undo(UndoEntry {
            index,
            pk: pk.to_vec(),
            action: UndoAction::Inserted,
        })?;
        if !tree.insert_if_absent(pk, &Version::encode_live(self.id, row))? {
            return Ok(false);
        }
        self.row_deltas.note_inserted(index, 1);
        let generation = self.generation.load(Ordering::Relaxed);
        self.written.insert(written_key, generation);
        Ok(true)
    }

    /// Whether inserts into `index` may go without row locks: see
    /// [`Transaction::insert_without_row_lock`].
    fn may_insert_without_row_lock(&self, index: IndexId) -> bool {
        let unindexed = self
            .engine
            .table_by_id(index)
            .is_some_and(|t| t.indexes.is_empty());
        unindexed
            && !self.locked_writes.contains(&index)
            && self.isolation != Isolation::Serializable
            && self.engine.graveyard_length.load(Ordering::Acquire) == 0
    }

    /// Inserts new rows `(pk, row)` in their order, as [`Transaction::insert`] does one by one,
    /// but where rows may go without row locks their undo entries are written first as one
    /// ascending run, and then the rows themselves in runs of ascending keys, one mini-transaction
    /// per leaf ([`BTree::insert_run_if_absent`]): a bulk load costs a descent and a redo record
    /// per leaf, not per row. A row whose key is present, or that this transaction wrote before,
    /// takes the locking path on its own (a unique violation there ends the call). On error,
    /// returns the position of the row that failed; the rows before it are inserted.
    pub fn insert_many(
        &mut self,
        index: IndexId,
        rows: &[(Vec<u8>, Vec<u8>)],
    ) -> std::result::Result<(), (usize, EngineError)> {
        self.locked_rows.clear();
        if !self.may_insert_without_row_lock(index) {
            for (at, (pk, row)) in rows.iter().enumerate() {
                self.insert(index, pk, row).map_err(|e| (at, e))?;
            }
            return Ok(());
        }
        self.insert_many_without_row_locks(index, rows)
    }

    fn insert_many_without_row_locks(
        &mut self,
        index: IndexId,
        rows: &[(Vec<u8>, Vec<u8>)],
    ) -> std::result::Result<(), (usize, EngineError)> {
        let engine = Arc::clone(&self.engine);
        let at_start = |e| (0, e);
        self.check_open().map_err(at_start)?;
        let tree = engine.tree(index).map_err(at_start)?;
        self.snapshot().map_err(at_start)?;
        self.hold_own_lock().map_err(at_start)?;
        let first_undo = self.undo_length;
        let per_row_undo = self
            .append_insert_undo(&tree, index, rows)
            .map_err(at_start)?;
        let versions: Vec<(Vec<u8>, Vec<u8>)> = rows
            .iter()
            .map(|(pk, row)| (pk.clone(), Version::encode_live(self.id, row)))
            .collect();
        let generation = self.generation.load(Ordering::Relaxed);
        let mut at = 0;
        while at < rows.len() {
            let inserted = tree
                .insert_run_if_absent(&versions[at..])
                .map_err(|e| (at, e.into()))?;
            let run = &versions[at..at + inserted];
            self.note_inserted(index, run.iter().map(|(pk, _)| pk), generation);
            self.row_deltas.note_inserted(index, inserted);
            at += inserted;
            if inserted == 0 {
                let undo = per_row_undo.then_some(first_undo + at as u64);
                self.insert_one_of_many(&tree, index, &rows[at], &versions[at].1, undo, generation)
                    .map_err(|e| (at, e))?;
                at += 1;
            }
        }
        Ok(())
    }

    /// One row of [`Transaction::insert_many`] that did not go in a run (its undo entry, number
    /// `undo` of this transaction, is written, or a range entry covers it): on its own without a
    /// row lock if its key is absent, else by the locking path — after removing a row's own undo
    /// entry, which says the row was not there: a rollback would remove whatever version is in
    /// place (this transaction's own update of the row, say) instead of putting back what the
    /// locking path replaces. A range entry stays: its range held no key when it was logged, so
    /// the key present now is another transaction's, and the locking path's own undo entry,
    /// newer, puts that version back before the range entry is undone.
    fn insert_one_of_many(
        &mut self,
        tree: &BTree,
        index: IndexId,
        (pk, row): &(Vec<u8>, Vec<u8>),
        version: &[u8],
        undo: Option<u64>,
        generation: u64,
    ) -> Result<()> {
        if tree.insert_if_absent(pk, version)? {
            self.note_inserted(index, [pk], generation);
            self.row_deltas.note_inserted(index, 1);
            return Ok(());
        }
        if let Some(undo) = undo {
            self.engine.undo.delete(&undo_key(self.id, undo))?;
        }
        self.write_locked(index, pk, Some(row), WriteKind::Insert)
            .map(drop)
    }

    /// Notes rows this transaction inserted in runs as written (in `generation`). Before any
    /// savepoint nothing needs noting: a row whose in-place version names this transaction and
    /// that `written` does not hold was inserted in generation 0 (see `save_version`), which
    /// spares a bulk load a map entry per row. A row `written` holds always has a version of this
    /// transaction in place, so a run that meets one stops at its present key.
    fn note_inserted<'k>(
        &mut self,
        index: IndexId,
        pks: impl IntoIterator<Item = &'k Vec<u8>>,
        generation: u64,
    ) {
        if generation > 0 {
            for pk in pks {
                self.written.insert((index, pk.clone()), generation);
            }
        }
    }

    /// The undo of inserts of `rows` into `index`. Rows whose keys ascend into a range of the
    /// tree that holds no key yet (a bulk load in key order, or appending) get one
    /// `InsertedRange` entry; other batches one entry per row, written as one ascending run.
    /// Returns whether the entries are per row. They stay only in the undo tree: purge needs none
    /// of them unless the transaction deletes a row it inserted (then commit reads them back),
    /// and rollback reads the undo tree.
    fn append_insert_undo(
        &mut self,
        tree: &BTree,
        index: IndexId,
        rows: &[(Vec<u8>, Vec<u8>)],
    ) -> Result<bool> {
        self.undo_runs = true;
        if let Some(range) = new_key_range(tree, rows)? {
            self.write_undo_run(&[UndoEntry {
                index,
                pk: range.0.to_vec(),
                action: UndoAction::InsertedRange {
                    last: range.1.to_vec(),
                },
            }])?;
            return Ok(false);
        }
        let entries: Vec<UndoEntry> = rows
            .iter()
            .map(|(pk, _)| UndoEntry {
                index,
                pk: pk.clone(),
                action: UndoAction::Inserted,
            })
            .collect();
        self.write_undo_run(&entries)?;
        Ok(true)
    }

    /// Appends `entries` to the undo log as one ascending run of undo records (one
    /// mini-transaction per leaf of the undo tree), a record per entry: a row inserted in a run
    /// can still remove its own entry by number (`insert_one_of_many`).
    fn write_undo_run(&mut self, entries: &[UndoEntry]) -> Result<()> {
        self.write_undo_records(entries.chunks(1))
    }

    /// [`Transaction::write_undo_run`] with the entries packed, several to a record (see
    /// [`UndoEntry::encode_packed`]): for the first writes of UPDATE and DELETE, whose entries are
    /// never addressed one by one.
    fn write_packed_undo_run(&mut self, entries: &[UndoEntry]) -> Result<()> {
        self.write_undo_records(packs(entries).into_iter())
    }

    fn write_undo_records<'e>(
        &mut self,
        packs: impl Iterator<Item = &'e [UndoEntry]>,
    ) -> Result<()> {
        let first = self.undo_length;
        let records: Vec<(Vec<u8>, Vec<u8>)> = (first..)
            .zip(packs)
            .map(|(sequence, pack)| (undo_key(self.id, sequence), UndoEntry::encode_packed(pack)))
            .collect();
        self.undo_length += records.len() as u64;
        self.wrote = true;
        insert_run(&self.engine.undo, &records)?;
        Ok(())
    }

    /// Writes rows this transaction holds locked (`Some(row)` replaces, `None` deletes), keys
    /// ascending, as [`Transaction::write`] one by one would, but in runs: the current versions
    /// are those `lock_row` kept (others are locked and read in one walk), then the undo entries
    /// go in as one run, the
    /// replaced versions into history and the new versions in place as runs, one
    /// mini-transaction per leaf of each tree. Per row the order is the one of a single write
    /// (undo, history, in place), so recovery can still undo any prefix. Returns which rows were
    /// written (false where this transaction sees no row).
    pub(crate) fn write_many_locked(
        &mut self,
        index: IndexId,
        rows: &[(Vec<u8>, Option<Vec<u8>>)],
    ) -> Result<Vec<bool>> {
        self.check_open()?;
        let engine = Arc::clone(&self.engine);
        let tree = engine.tree(index)?;
        self.snapshot_of(index)?;
        let keys: Vec<Vec<u8>> = rows.iter().map(|(pk, _)| pk.clone()).collect();
        let currents = self.locked_versions(&tree, index, &keys)?;
        // Every check first: a failure then leaves no row noted as written without its undo entry.
        let mut changing = Vec::with_capacity(rows.len());
        for (at, ((pk, row), current)) in rows.iter().zip(currents).enumerate() {
            let kind = if row.is_some() {
                WriteKind::Update
            } else {
                WriteKind::Delete
            };
            if self.checked_write(index, pk, current.as_ref(), kind)? {
                changing.push((at, pk, row, current));
            }
        }
        self.locked_writes.insert(index);
        let mut written: Vec<bool> = vec![false; rows.len()];
        let (mut replaced, mut targets, mut befores) = (Vec::new(), Vec::new(), Vec::new());
        for (at, pk, row, current) in changing {
            written[at] = true;
            befores.push(RowKind::of(current.as_ref()));
            replaced.push((pk.as_slice(), current, row.is_none()));
            targets.push((pk, row));
        }
        let keeps = self.log_first_writes(index, replaced)?;
        let mut in_place = Vec::with_capacity(targets.len());
        let mut afters = Vec::with_capacity(targets.len());
        for ((pk, row), keep) in targets.into_iter().zip(keeps) {
            afters.push(RowKind::written(row.as_deref()));
            in_place.push((pk.clone(), self.new_version(row.as_deref(), keep)));
        }
        replace_run(&tree, &in_place)?;
        for (((pk, _), before), after) in in_place.iter().zip(befores).zip(afters) {
            engine.unbury(index, pk)?;
            self.row_deltas.note(index, before, after);
        }
        Ok(written)
    }

    /// Logs what the writes of rows (`(pk, version in place, whether a delete whose mark may keep
    /// the row)`) replace, each kind as one run: the undo entries, then the versions that go to
    /// history (see `first_write_log`). Returns, per row, the row its delete mark keeps.
    pub(super) fn log_first_writes<'k>(
        &mut self,
        index: IndexId,
        replaced: impl IntoIterator<Item = (&'k [u8], Option<Version>, bool)>,
    ) -> Result<Vec<Option<KeptRow>>> {
        let (mut undo, mut history, mut keeps) = (Vec::new(), Vec::new(), Vec::new());
        for (pk, current, keep_in_mark) in replaced {
            let log = self.first_write_log(index, pk, current, keep_in_mark)?;
            undo.extend(log.undo);
            history.extend(
                log.history
                    .into_iter()
                    .map(|(key, old)| (key, old.encode())),
            );
            keeps.push(log.keep);
        }
        self.write_packed_undo_run(&undo)?;
        self.writes.extend(undo);
        history.sort_unstable();
        let added = insert_run(&self.engine.history, &history)?;
        self.engine
            .history_length
            .fetch_add(added as i64, Ordering::Relaxed);
        Ok(keeps)
    }

    /// The newest versions of the rows under `pks` (ascending), locked: those `lock_row` kept,
    /// the others locked here (waiting for a writer that inserted them without a row lock, as
    /// `lock_current` does) and read in one walk.
    fn locked_versions(
        &mut self,
        tree: &Arc<BTree>,
        index: IndexId,
        pks: &[Vec<u8>],
    ) -> Result<Vec<Option<Version>>> {
        let mut versions: Vec<Option<Version>> = Vec::with_capacity(pks.len());
        let mut unread = Vec::new();
        for (at, pk) in pks.iter().enumerate() {
            let kept = self.take_locked(tree, index, pk);
            if kept.is_none() {
                unread.push(at);
            }
            versions.push(kept);
        }
        if unread.is_empty() {
            return Ok(versions);
        }
        let keys: Vec<Vec<u8>> = unread.iter().map(|&at| pks[at].clone()).collect();
        for pk in &keys {
            self.lock_exclusive(index, pk)?;
        }
        let engine = Arc::clone(&self.engine);
        let currents = engine.current_versions(tree, index, &keys)?;
        for (&at, current) in unread.iter().zip(currents) {
            versions[at] = if current.as_ref().is_some_and(|v| self.uncommitted_other(v)) {
                self.lock_current(index, &pks[at])?.1
            } else {
                current
            };
        }
        Ok(versions)
    }

    /// Locks the rows under `pks` (ascending) and returns the versions updates would change, as
    /// [`Transaction::lock_row`] one by one would (each version kept for the write that follows),
    /// the rows read in one walk.
    pub fn lock_rows(&mut self, index: IndexId, pks: &[Vec<u8>]) -> Result<Vec<Option<Vec<u8>>>> {
        self.check_open()?;
        let tree = self.engine.tree(index)?;
        self.snapshot_of(index)?;
        let versions = self.locked_versions(&tree, index, pks)?;
        let mut rows = Vec::with_capacity(pks.len());
        for (pk, current) in pks.iter().zip(versions) {
            rows.push(self.row_to_change(index, pk, current.as_ref())?);
            if let Some(current) = current {
                self.keep_locked(&tree, index, pk, current);
            }
        }
        Ok(rows)
    }

    /// Keeps a locked row's newest version for the write that follows (see `lock_row`).
    pub(super) fn keep_locked(
        &mut self,
        tree: &Arc<BTree>,
        index: IndexId,
        pk: &[u8],
        current: Version,
    ) {
        if self.locked_rows.len() >= LOCKED_ROWS_KEPT {
            self.locked_rows.clear();
        }
        self.locked_rows.insert(
            pk.to_vec(),
            LockedRow {
                tree: Arc::clone(tree),
                index,
                current,
            },
        );
    }

    /// Takes the lock on this transaction's own id, once.
    pub(super) fn hold_own_lock(&mut self) -> Result<()> {
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
    pub(super) fn may_write(
        &mut self,
        index: IndexId,
        pk: &[u8],
        current: Option<&Version>,
        kind: WriteKind,
    ) -> Result<bool> {
        if kind != WriteKind::Insert {
            return self.changeable(index, pk, current);
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
    pub(super) fn row_to_change(
        &mut self,
        index: IndexId,
        pk: &[u8],
        current: Option<&Version>,
    ) -> Result<Option<Vec<u8>>> {
        Ok(self
            .changeable(index, pk, current)?
            .then(|| current.map(|v| v.row.clone()))
            .flatten())
    }

    /// Whether an update or delete changes the row whose newest version is `current` (see
    /// [`Transaction::row_to_change`]), without copying the row.
    fn changeable(&mut self, index: IndexId, pk: &[u8], current: Option<&Version>) -> Result<bool> {
        let snapshot = self.snapshot_of(index)?;
        let seen = self.sees_a_row(index, pk, current, snapshot)?;
        self.track_read(index, Bound::Included(pk), Bound::Included(pk))?;
        let (true, Some(current)) = (seen, current) else {
            return Ok(false);
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
        Ok(!current.deleted)
    }

    /// Whether this transaction's snapshot sees a row under `pk`, whose newest version is
    /// `current`: read from that version when the snapshot sees it (the common case, no copy),
    /// else from history.
    fn sees_a_row(
        &self,
        index: IndexId,
        pk: &[u8],
        current: Option<&Version>,
        snapshot: Option<Csn>,
    ) -> Result<bool> {
        let Some(version) = current else {
            return Ok(false);
        };
        let seen =
            snapshot.is_none_or(|snapshot| self.engine.committed_by(version.writer, snapshot));
        if version.writer == self.id || seen {
            return Ok(!version.deleted);
        }
        let tree = self.engine.tree(index)?;
        let row = self
            .engine
            .visible(&tree, index, pk, current.cloned(), self.id, snapshot)?;
        Ok(row.is_some())
    }

    /// Locks a row for writing (waiting for its current writer to finish) and returns the version an
    /// update would change, as `SELECT ... FOR UPDATE` does: see `row_to_change`.
    ///
    /// The version read is kept for a write of the same row that follows (UPDATE and DELETE lock,
    /// re-check, then write, a batch of rows at a time): that write then neither locks nor reads
    /// the row again. Only a present version is kept — with the row lock held, no one else can
    /// change it (purge and inserts without row locks leave locked or present keys alone) — and
    /// a write of the row takes it; inserts and `rollback_to` drop them all.
    pub fn lock_row(&mut self, index: IndexId, pk: &[u8]) -> Result<Option<Vec<u8>>> {
        let (tree, current) = self.lock_current(index, pk)?;
        let row = self.row_to_change(index, pk, current.as_ref())?;
        if let Some(current) = current {
            self.keep_locked(&tree, index, pk, current);
        }
        Ok(row)
    }

    /// The version `lock_row` kept for the row, taken out of the kept ones (None if it kept none,
    /// or read it from another tree than `tree`).
    fn take_locked(&mut self, tree: &Arc<BTree>, index: IndexId, pk: &[u8]) -> Option<Version> {
        if self.locked_rows.get(pk)?.index != index {
            return None;
        }
        let locked = self.locked_rows.remove(pk)?;
        Arc::ptr_eq(&locked.tree, tree).then_some(locked.current)
    }

    /// Takes the snapshot (before any wait, as PostgreSQL's statement does), locks the row, and
    /// reads its newest version: the start of every write and of `lock_row`.
    ///
    /// A version whose writer is still running and is not this transaction was inserted without a
    /// row lock (see [`Transaction::insert_without_row_lock`]): the row is that writer's until it
    /// ends, so this waits for it (on its transaction lock) and reads the row again.
    pub(super) fn lock_current(
        &mut self,
        index: IndexId,
        pk: &[u8],
    ) -> Result<(Arc<BTree>, Option<Version>)> {
        self.lock_current_in(index, pk, LockMode::Exclusive, self.lock_timeout)
    }

    /// [`Transaction::lock_current`] with the lock's mode and the longest wait (for the row's
    /// lock, then for a writer that holds the row implicitly) given.
    pub(super) fn lock_current_in(
        &mut self,
        index: IndexId,
        pk: &[u8],
        mode: LockMode,
        timeout: Option<Duration>,
    ) -> Result<(Arc<BTree>, Option<Version>)> {
        self.check_open()?;
        let tree = self.engine.tree(index)?;
        if let Some(current) = self.take_locked(&tree, index, pk) {
            return Ok((tree, Some(current)));
        }
        self.snapshot_of(index)?;
        self.lock_key(index, pk, mode, timeout)?;
        let mut waited_for = None;
        loop {
            let current = self.engine.current_version(&tree, index, pk)?;
            match &current {
                Some(version) if self.uncommitted_other(version) => {
                    if waited_for == Some(version.writer) && self.rolled_back(version.writer) {
                        return Err(EngineError::Corrupt(format!(
                            "row version of rolled-back transaction {} left in place",
                            version.writer
                        )));
                    }
                    self.wait_for(version.writer, timeout)?;
                    waited_for = Some(version.writer);
                }
                _ => return Ok((tree, current)),
            }
        }
    }

    /// Whether `version` was written by another transaction that has not committed: one still
    /// running, which holds the row implicitly (wait for it, then read the row again), or one
    /// that rolled back after the version was read — its undo has put the row's previous version
    /// back since (undo comes before the abort), so the version read is stale and the row must
    /// be read again. (Read again after that writer ended, its version still in place would be
    /// a rollback that was not done: an error, not a wait.)
    fn uncommitted_other(&self, version: &Version) -> bool {
        version.writer != self.id
            && !matches!(
                self.engine.txns.status(version.writer),
                TxnStatus::Committed(_)
            )
    }

    fn rolled_back(&self, writer: TxnId) -> bool {
        self.engine.txns.status(writer) == TxnStatus::Aborted
    }

    /// Waits until transaction `writer` has ended (at most `timeout`).
    pub(super) fn wait_for(&self, writer: TxnId, timeout: Option<Duration>) -> Result<()> {
        let engine = Arc::clone(&self.engine);
        let key = txn_lock_key(writer);
        engine
            .locks
            .lock(self.id, key.clone(), LockMode::Shared, timeout)?;
        engine.locks.release(self.id, &key);
        Ok(())
    }

    pub(crate) fn lock_exclusive(&self, index: IndexId, pk: &[u8]) -> Result<()> {
        self.lock_key(index, pk, LockMode::Exclusive, self.lock_timeout)
    }

    /// Locks the row under `pk` in `mode`, waiting at most `timeout`.
    fn lock_key(
        &self,
        index: IndexId,
        pk: &[u8],
        mode: LockMode,
        timeout: Option<Duration>,
    ) -> Result<()> {
        let key = LockKey {
            index_id: index,
            key: pk.to_vec(),
        };
        Ok(self.engine.locks.lock(self.id, key, mode, timeout)?)
    }

    /// Saves what a write of the row replaces (`first_write_log`; `keep_in_mark`: the write is a
    /// delete): the undo entry, then what goes to history. Returns the row its mark keeps.
    pub(super) fn save_version(
        &mut self,
        index: IndexId,
        pk: &[u8],
        current: Option<Version>,
        keep_in_mark: bool,
    ) -> Result<Option<KeptRow>> {
        let log = self.first_write_log(index, pk, current, keep_in_mark)?;
        if let Some(entry) = log.undo {
            self.append_undo(entry)?;
        }
        for (key, old) in &log.history {
            self.engine.history_insert(key, old)?;
        }
        Ok(log.keep)
    }

    /// What saving the version a write of the row replaces needs logged (`keep_in_mark`: the write
    /// is a delete whose mark may keep the row):
    /// on the row's first write (in this savepoint generation) the undo entry and what
    /// `first_write` says; a write in a later generation keeps the own version in `rewrites`
    /// instead; the row is noted as written in the current generation (before any savepoint
    /// nothing is noted: an own version in place was saved in generation 0). An own delete mark
    /// that keeps a row, replaced, sends that row to history first (old snapshots read it there
    /// once the mark is gone).
    fn first_write_log(
        &mut self,
        index: IndexId,
        pk: &[u8],
        current: Option<Version>,
        keep_in_mark: bool,
    ) -> Result<WriteLog> {
        let generation = self.generation.load(Ordering::Relaxed);
        let own = current.as_ref().is_some_and(|v| v.writer == self.id);
        let mut log = WriteLog::default();
        if own {
            let version = current.as_ref().expect("own version");
            log.history
                .extend(kept_to_history(index, pk, version, self.id));
        }
        if generation == 0 {
            return if own {
                self.discard_own(index, pk, current);
                Ok(log)
            } else {
                self.first_write(index, pk, current, keep_in_mark)
            };
        }
        let saved = self.written.insert((index, pk.to_vec()), generation);
        match saved.or(own.then_some(0)) {
            None => self.first_write(index, pk, current, keep_in_mark),
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
                Ok(log)
            }
            Some(_) => {
                self.discard_own(index, pk, current);
                Ok(log)
            }
        }
    }

    /// Drops the secondary entries that only the own versions this transaction's last write
    /// replaced had (a row it wrote twice: the first new version is replaced in place, never sent
    /// to history, so purge never meets it), where no version of the row still has them (nor one
    /// a savepoint of this transaction keeps) — as purge does for the versions it removes. The
    /// rows are this transaction's (row-locked, or their versions in place name it: the implicit
    /// lock), as such a removal needs.
    pub(crate) fn drop_discarded_entries(&mut self) -> Result<()> {
        for (index, pk, version) in std::mem::take(&mut self.discarded) {
            self.drop_own_entries(index, &pk, version)?;
        }
        Ok(())
    }

    /// At commit: drops the secondary entries that only the own versions kept for savepoints had
    /// (the savepoints end with the transaction), as [`Transaction::drop_discarded_entries`].
    pub(super) fn drop_savepoint_versions(&mut self) -> Result<()> {
        for rewrite in std::mem::take(&mut self.rewrites) {
            if !rewrite.version.deleted {
                self.drop_own_entries(rewrite.index, &rewrite.pk, rewrite.version)?;
            }
        }
        Ok(())
    }

    /// Drops the secondary entries of row `pk` only its own version `version` had.
    fn drop_own_entries(&self, index: IndexId, pk: &[u8], version: Version) -> Result<()> {
        let Some(table) = self.engine.table_by_id(index) else {
            return Ok(());
        };
        let saved = self
            .rewrites
            .iter()
            .filter(|r| r.index == index && r.pk == pk);
        let saved = saved.map(|r| r.version.clone()).collect();
        let old = OldVersion {
            version,
            superseded_by: self.id,
        };
        self.engine
            .remove_stale_entries_besides(&table, pk, &old, saved)
    }

    /// Notes an own live version a write replaces without saving it anywhere (written in the same
    /// savepoint generation): the secondary entries only it had are dropped after the write
    /// (`Transaction::drop_discarded_entries`), since purge never meets a version that no
    /// history entry holds.
    fn discard_own(&mut self, index: IndexId, pk: &[u8], current: Option<Version>) {
        if let Some(version) = current.filter(|v| v.writer == self.id && !v.deleted) {
            self.discarded.push((index, pk.to_vec(), version));
        }
    }

    /// The undo entry of a row's first write and the committed version it replaces: a delete's
    /// mark keeps that version where `keep_in_mark` and its writer had settled (start 0: see
    /// `Version::kept`), with no copy to history; any other write sends it to history under its
    /// start. A committed delete mark replaced goes to history as a plain mark, the row it
    /// kept under start 0.
    fn first_write(
        &self,
        index: IndexId,
        pk: &[u8],
        current: Option<Version>,
        keep_in_mark: bool,
    ) -> Result<WriteLog> {
        let Some(version) = current else {
            return Ok(WriteLog {
                undo: Some(UndoEntry {
                    index,
                    pk: pk.to_vec(),
                    action: UndoAction::Inserted,
                }),
                ..WriteLog::default()
            });
        };
        let previous_start = match self.engine.txns.status(version.writer) {
            TxnStatus::Committed(csn) => csn,
            status @ (TxnStatus::Active | TxnStatus::Aborted) => {
                return Err(EngineError::Corrupt(format!(
                    "row locked by transaction {} names writer {}, which is {status:?}",
                    self.id, version.writer
                )))
            }
        };
        let mut log = WriteLog {
            undo: Some(UndoEntry {
                index,
                pk: pk.to_vec(),
                action: UndoAction::Replaced { previous_start },
            }),
            ..WriteLog::default()
        };
        log.history
            .extend(kept_to_history(index, pk, &version, version.writer));
        if keep_in_mark && !version.deleted && previous_start == 0 {
            log.keep = Some(version.row);
            return Ok(log);
        }
        let key = history_key(index, pk, previous_start);
        let old = OldVersion {
            version,
            superseded_by: self.id,
        };
        log.history.push((key, old));
        Ok(log)
    }

    /// Appends an entry to this transaction's undo log (durable with the next log flush).
    pub(crate) fn append_undo(&mut self, entry: UndoEntry) -> Result<()> {
        let key = undo_key(self.id, self.undo_length);
        self.undo_length += 1;
        self.wrote = true;
        self.engine.undo.insert(&key, &entry.encode())?;
        self.writes.push(entry);
        Ok(())
    }
}

/// The history entry of the row a kept delete mark keeps (superseded by `deleter`, the mark's
/// writer), for when the mark leaves its place; None for any other version.
fn kept_to_history(
    index: IndexId,
    pk: &[u8],
    version: &Version,
    deleter: TxnId,
) -> Option<(Vec<u8>, OldVersion)> {
    let old = OldVersion {
        version: version.kept_version()?,
        superseded_by: deleter,
    };
    Some((history_key(index, pk, 0), old))
}

/// Whether the in-place record of `pk` names writer `txn`.
pub(super) fn written_by(tree: &BTree, pk: &[u8], txn: TxnId) -> Result<bool> {
    let current = tree.get(pk)?.map(|b| Version::decode(&b)).transpose()?;
    Ok(current.is_some_and(|v| v.writer == txn))
}

/// The first and last keys of `rows` if there are several, they strictly ascend, and `tree` holds
/// no key between them (both included): then one `InsertedRange` undoes them all.
fn new_key_range<'r>(
    tree: &BTree,
    rows: &'r [(Vec<u8>, Vec<u8>)],
) -> Result<Option<(&'r [u8], &'r [u8])>> {
    let (Some(first), Some(last)) = (rows.first(), rows.last()) else {
        return Ok(None);
    };
    let ascending = rows.windows(2).all(|pair| pair[0].0 < pair[1].0);
    if rows.len() < 2 || !ascending {
        return Ok(None);
    }
    let (first, last) = (first.0.as_slice(), last.0.as_slice());
    let mut present = tree.range(Bound::Included(first), Bound::Included(last));
    Ok(present
        .next()
        .transpose()?
        .is_none()
        .then_some((first, last)))
}

/// The keys from `first` to `last` whose version in place `txn` wrote (an `InsertedRange`).
pub(super) fn keys_written_by(
    tree: &BTree,
    first: &[u8],
    last: &[u8],
    txn: TxnId,
) -> Result<Vec<Vec<u8>>> {
    let mut keys = Vec::new();
    for record in tree.range(Bound::Included(first), Bound::Included(last)) {
        let (key, bytes) = record?;
        if Version::in_record(&bytes)?.0 == txn {
            keys.push(key);
        }
    }
    Ok(keys)
}

/// Replaces the values of present keys of `records` (ascending) in runs, a record whose run
/// stops on its own.
fn replace_run(tree: &BTree, records: &[(Vec<u8>, Vec<u8>)]) -> Result<()> {
    let mut at = 0;
    while at < records.len() {
        let replaced = tree.replace_run(&records[at..])?;
        at += replaced;
        if replaced == 0 {
            let (key, value) = &records[at];
            tree.insert(key, value)?;
            at += 1;
        }
    }
    Ok(())
}

/// The row a delete mark keeps.
pub(super) type KeptRow = Vec<u8>;

/// What a write of a row logs before it goes in place: its undo entry (a row's first write in its
/// savepoint generation), the versions that go to history (with their keys), and the row its
/// delete mark keeps.
#[derive(Default)]
struct WriteLog {
    undo: Option<UndoEntry>,
    history: Vec<(Vec<u8>, OldVersion)>,
    keep: Option<KeptRow>,
}

/// `entries` cut into packs for [`UndoEntry::encode_packed`]: consecutive entries of one index,
/// at most [`PACKED_UNDO_BYTES`] of them.
fn packs(entries: &[UndoEntry]) -> Vec<&[UndoEntry]> {
    let mut packs = Vec::new();
    let (mut start, mut bytes) = (0, 0);
    for (at, entry) in entries.iter().enumerate() {
        let len = entry.packed_len();
        if at > start && (entry.index != entries[start].index || bytes + len > PACKED_UNDO_BYTES) {
            packs.push(&entries[start..at]);
            (start, bytes) = (at, 0);
        }
        bytes += len;
    }
    if start < entries.len() {
        packs.push(&entries[start..]);
    }
    packs
}

/// Inserts `records` (ascending keys) into `tree` in runs, a record whose run stops on its own
/// (replacing a present key); returns how many keys were new.
fn insert_run(tree: &BTree, records: &[(Vec<u8>, Vec<u8>)]) -> Result<usize> {
    let (mut at, mut added) = (0, 0);
    while at < records.len() {
        let inserted = tree.insert_run_if_absent(&records[at..])?;
        added += inserted;
        at += inserted;
        if inserted == 0 {
            let (key, value) = &records[at];
            added += usize::from(tree.insert(key, value)?.is_none());
            at += 1;
        }
    }
    Ok(added)
}
