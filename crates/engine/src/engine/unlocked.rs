//! Updates and deletes without row locks — InnoDB's implicit locks, for the rows a statement
//! reads before it changes them.
//!
//! A row this transaction read as its snapshot sees it, from the version in place
//! ([`Transaction::get_many_for_change`]), is changed without a row lock if that version is still
//! in place when the write comes ([`Transaction::write_many_unlocked`]). The check is made with
//! the row's leaf latched, and the undo entry and the history copy are written under that same
//! latch (nested mini-transactions, `BTree::replace_run_where`), so no one changes the row between
//! the check and the write; the redo order per row is still undo, history, in place. The new
//! version names this transaction as its writer, and that is its lock: whoever wants the row
//! afterwards finds a running writer in place and waits for this transaction's own lock
//! (`Transaction::lock_current`), as for rows inserted without a row lock. A rollback puts the
//! row back without a row lock too, so a reader that found the version in place and then finds
//! its writer aborted reads the row again (undo comes before the abort): a version by a writer
//! that did not commit is never written over.
//!
//! **Deletes in one visit.** [`Transaction::delete_many_unlocked_where`] does the read and the
//! write in one visit of each leaf (`BTree::rewrite_run`): with the leaf latched it checks each
//! row's version in place as above, asks the caller's condition about the row's bytes there, and
//! writes the delete mark, logging undo and history first under the same latch. What it cannot
//! decide there it leaves to the caller, who reads and writes those rows the two-step way.
//!
//! **Refused rows.** A row is left unwritten — the caller then locks it and checks it again, the
//! locking path — when its version in place is not the one read (someone changed it since), or
//! someone holds or waits for its row lock (`SELECT ... FOR UPDATE / SHARE`, a writer on the
//! locking path, purge). A row lock taken before the check is seen by it (the lock table is asked
//! with the leaf latched); one taken after it reads the row after the write (under the same
//! latch) and waits for this transaction. SERIALIZABLE transactions always take the locking path,
//! where their reads and writes go to the dependency tracker.
//!
//! **Invariants.** A row is changed only by its row lock's holder or by a writer that found, under
//! its leaf latch, the version it read in place and no row lock on it; the version read was
//! committed before this transaction's snapshot (or is its own), so first-updater-wins has
//! nothing to refuse.

use std::borrow::Cow;

use steady_storage::btree::RunChoice;

use super::*;

/// A row read for a change: the version in place when this transaction's snapshot sees it, which
/// [`Transaction::write_many_unlocked`] may replace without a row lock; otherwise the row as the
/// snapshot sees it, an older version that only the locking path may change.
pub enum SeenRow {
    InPlace(InPlace),
    Older(Vec<u8>),
}

/// The version in place a change without a row lock must find still there.
#[derive(Clone)]
pub struct InPlace(Version);

impl SeenRow {
    pub fn row(&self) -> &[u8] {
        match self {
            SeenRow::InPlace(InPlace(version)) => &version.row,
            SeenRow::Older(row) => row,
        }
    }

    pub fn into_row(self) -> Vec<u8> {
        match self {
            SeenRow::InPlace(InPlace(version)) => version.row,
            SeenRow::Older(row) => row,
        }
    }

    pub fn in_place(self) -> Option<InPlace> {
        match self {
            SeenRow::InPlace(version) => Some(version),
            SeenRow::Older(_) => None,
        }
    }
}

/// A change without a row lock: the row's key, the version read, and its new row (None deletes).
pub type UnlockedChange<'c> = (&'c [u8], &'c InPlace, Option<Vec<u8>>);

impl Transaction {
    /// The rows under `pks` (ascending) in `index`, as [`Transaction::get_many`] sees them, each
    /// marked as the version in place where this transaction may change it without a row lock.
    pub fn get_many_for_change(
        &mut self,
        index: IndexId,
        pks: &[Vec<u8>],
    ) -> Result<Vec<Option<SeenRow>>> {
        self.check_open()?;
        let engine = Arc::clone(&self.engine);
        let tree = engine.tree(index)?;
        let snapshot = self.snapshot_of(index)?;
        let mut rows = Vec::with_capacity(pks.len());
        let currents = engine.versions_for_snapshot(&tree, index, pks, snapshot)?;
        for (pk, current) in pks.iter().zip(currents) {
            self.track_read(index, Bound::Included(pk), Bound::Included(pk))?;
            let changeable = current
                .as_ref()
                .is_some_and(|version| self.may_change_unlocked(version, snapshot));
            rows.push(match current {
                Some(version) if changeable => Some(SeenRow::InPlace(InPlace(version))),
                current => engine
                    .visible(&tree, index, pk, current, self.id, snapshot)?
                    .map(SeenRow::Older),
            });
        }
        Ok(rows)
    }

    /// Whether `version`, in place, is live and seen by `snapshot` as the row's newest version, so
    /// that this transaction may replace it without a row lock.
    fn may_change_unlocked(&self, version: &Version, snapshot: Option<Csn>) -> bool {
        self.isolation != Isolation::Serializable
            && seen_in_place(
                &self.engine,
                self.id,
                snapshot,
                version.writer,
                version.deleted,
            )
    }

    /// Writes `changes` (keys ascending, each read by [`Transaction::get_many_for_change`]) without
    /// row locks, in runs of one mini-transaction per leaf, where each row's version in place is
    /// still the one read and nobody holds or waits for its row lock; see the module
    /// documentation. Returns which rows it wrote; the caller takes the others by the locking path.
    pub fn write_many_unlocked(
        &mut self,
        index: IndexId,
        changes: &[UnlockedChange<'_>],
    ) -> Result<Vec<bool>> {
        self.check_open()?;
        let engine = Arc::clone(&self.engine);
        let tree = engine.tree(index)?;
        self.snapshot_of(index)?;
        let mut written = vec![false; changes.len()];
        if changes.is_empty() || self.isolation == Isolation::Serializable {
            return Ok(written);
        }
        self.hold_own_lock()?;
        self.locked_writes.insert(index);
        // Decided once per row: whether a delete's mark keeps the row (its writer had settled),
        // which both the version in place and what is logged for it follow.
        let keeps: Vec<bool> = changes
            .iter()
            .map(|(_, InPlace(read), row)| row.is_none() && self.may_keep(read))
            .collect();
        let entries: Vec<(Vec<u8>, Vec<u8>)> = changes
            .iter()
            .zip(&keeps)
            .map(|((pk, InPlace(read), row), &keep)| {
                let version = match (row, keep) {
                    (Some(row), _) => Version::encode_live(self.id, row),
                    (None, true) => Version::encode_kept_mark(self.id, &read.row),
                    (None, false) => Version::encode_mark(self.id),
                };
                (pk.to_vec(), version)
            })
            .collect();
        let mut at = 0;
        while at < entries.len() {
            let run = &changes[at..];
            let unchanged = |i: usize, present: &[u8]| {
                let (pk, InPlace(read), _) = &run[i];
                let in_place = Version::in_record(present).ok();
                in_place == Some((read.writer, false))
                    && !engine.locks.is_locked(&LockKey::new(index, *pk))
            };
            let replaced = tree.replace_run_where(&entries[at..], unchanged, |count| {
                self.log_unlocked_writes(index, &run[..count], &keeps[at..at + count])
            })?;
            written[at..at + replaced].fill(true);
            at += replaced.max(1);
        }
        for ((pk, _, row), _) in changes.iter().zip(&written).filter(|(_, &w)| w) {
            engine.unbury(index, pk)?;
            let after = RowKind::written(row.as_deref());
            self.row_deltas.note(index, RowKind::Live, after);
        }
        Ok(written)
    }

    /// Whether a delete of `read` keeps it in the mark: another transaction wrote it and had
    /// settled (see `Version::kept`; `first_write` decides the same way).
    fn may_keep(&self, read: &Version) -> bool {
        keeps_in_mark(&self.engine, self.id, read.writer)
    }

    /// With the leaf of `changes` latched, before they go in place: what their first writes
    /// replace, logged (see `log_first_writes`), deletes keeping their rows in their marks where
    /// `keeps` says. Their versions were checked when read (`may_change_unlocked`) and are still
    /// in place, so there is nothing to check again.
    fn log_unlocked_writes(
        &mut self,
        index: IndexId,
        changes: &[UnlockedChange<'_>],
        keeps: &[bool],
    ) -> Result<()> {
        self.deleted |= changes.iter().any(|(_, _, row)| row.is_none());
        let replaced = changes
            .iter()
            .zip(keeps)
            .map(|((pk, InPlace(read), _), &keep)| (*pk, Some(read.clone()), keep));
        self.log_first_writes(index, replaced).map(drop)
    }

    /// Deletes the rows under `pks` (ascending) that `matches` accepts, each read, decided and
    /// deleted under its leaf's latch in one visit (`BTree::rewrite_run`), without a row lock:
    /// a row is deleted here when its version in place is the one this transaction's snapshot
    /// sees and nobody holds or waits for its row lock, as [`Transaction::write_many_unlocked`]
    /// requires; `matches` gets the row's bytes (the caller's WHERE clause, evaluated with the
    /// leaf latched: it must read nothing else). Every other key — an older version seen, a
    /// locked row, an absent key, a SERIALIZABLE transaction — is left to the caller
    /// ([`DeleteOutcome::Deferred`]), who reads, locks and checks it the usual way. `matches`
    /// returning None stops the walk there (the caller's error): the keys not yet decided are
    /// deferred.
    pub fn delete_many_unlocked_where(
        &mut self,
        index: IndexId,
        pks: &[Vec<u8>],
        matches: &mut dyn FnMut(&[u8]) -> Option<bool>,
    ) -> Result<Vec<DeleteOutcome>> {
        self.check_open()?;
        let engine = Arc::clone(&self.engine);
        let tree = engine.tree(index)?;
        let snapshot = self.snapshot_of(index)?;
        let mut outcomes = vec![DeleteOutcome::Deferred; pks.len()];
        if pks.is_empty() || self.isolation == Isolation::Serializable {
            return Ok(outcomes);
        }
        self.hold_own_lock()?;
        self.locked_writes.insert(index);
        let id = self.id;
        let mut at = 0;
        let mut stopped = false;
        while at < pks.len() && !stopped {
            let run = &pks[at..];
            let outcomes_run = &mut outcomes[at..];
            let decide = |i: usize, present: &[u8]| -> Result<RunChoice<'static, Deleted>> {
                let (writer, deleted) = Version::in_record(present)?;
                if !seen_in_place(&engine, id, snapshot, writer, deleted)
                    || engine
                        .locks
                        .is_locked(&LockKey::new(index, run[i].as_slice()))
                {
                    return Ok(RunChoice::Pass);
                }
                match matches(Version::record_row(present)?) {
                    None => {
                        stopped = true;
                        Ok(RunChoice::Stop)
                    }
                    Some(false) => {
                        outcomes_run[i] = DeleteOutcome::Unmatched;
                        Ok(RunChoice::Pass)
                    }
                    Some(true) => {
                        let read = Version::decode(present)?;
                        let keep = keeps_in_mark(&engine, id, writer);
                        let mark = if keep {
                            Version::encode_kept_mark(id, &read.row)
                        } else {
                            Version::encode_mark(id)
                        };
                        Ok(RunChoice::Replace(Cow::Owned(mark), (i, Some(read), keep)))
                    }
                }
            };
            let done = tree.rewrite_run(run.iter().map(Vec::as_slice), decide, |deleted| {
                self.deleted = true;
                let replaced = deleted
                    .iter_mut()
                    .map(|(i, read, keep)| (run[*i].as_slice(), read.take(), *keep));
                self.log_first_writes(index, replaced).map(drop)
            })?;
            for &i in &done.positions {
                outcomes[at + i] = DeleteOutcome::Deleted;
                engine.unbury(index, &run[i])?;
                self.row_deltas.note(index, RowKind::Live, RowKind::Mark);
            }
            at += done.passed.max(1);
        }
        Ok(outcomes)
    }
}

/// What [`Transaction::delete_many_unlocked_where`] did with a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeleteOutcome {
    /// The row, seen in place and accepted, is deleted.
    Deleted,
    /// The row, seen in place, was not accepted.
    Unmatched,
    /// Left to the caller's reading and locking path.
    Deferred,
}

/// A row [`Transaction::delete_many_unlocked_where`] deletes: its position in the run, the
/// version it replaces (until logged) and whether its mark keeps the row.
type Deleted = (usize, Option<Version>, bool);

/// Whether a version in place by `writer` is live and seen by `snapshot` (of transaction `id`)
/// as the row's newest version.
fn seen_in_place(
    engine: &Engine,
    id: TxnId,
    snapshot: Option<Csn>,
    writer: TxnId,
    deleted: bool,
) -> bool {
    let seen = writer == id
        || matches!(engine.txns.status(writer),
            TxnStatus::Committed(csn) if snapshot.is_none_or(|s| csn <= s));
    seen && !deleted
}

/// Whether a delete by `id` of a version by `writer` keeps the row in its mark: another
/// transaction wrote it and had settled (see `Version::kept`).
fn keeps_in_mark(engine: &Engine, id: TxnId, writer: TxnId) -> bool {
    writer != id && engine.txns.status(writer) == TxnStatus::Committed(0)
}
