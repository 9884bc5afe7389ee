//! Purge and the graveyard: removing history versions no open snapshot can see, delete-marked
//! rows every snapshot sees as deleted (moved to the graveyard while an old snapshot still needs
//! them), then the undo entries of purged transactions; each kind of removal sorted by key (seed
//! 000). The background purge thread runs passes.

use super::*;

impl Engine {
    /// One purge pass: removes old versions no snapshot can see, delete-marked rows every snapshot
    /// sees as deleted, and the undo entries of fully purged transactions. Each kind of removal is
    /// sorted by key and applied in that order (seed 000). Returns how many records were removed.
    pub fn purge(&self) -> Result<usize> {
        Ok(self.purge_pass()?.removed)
    }

    /// [`Engine::purge`], telling also whether the pass left a backlog for the next ones.
    fn purge_pass(&self) -> Result<PurgePass> {
        let _pass = self.purge_running.lock();
        let released = match self.max_snapshot_age {
            Some(_) => 0,
            None => self.txns.take_lowest_released(),
        };
        let (horizon, new_items) = {
            let mut queue = self.purge_queue.lock();
            let horizon = self.txns.horizon(self.max_snapshot_age);
            // Counted in flight before they leave the queue, so no reader of the counters sees
            // them in neither.
            self.purge_in_flight.store(queue.len(), Ordering::Release);
            (horizon, std::mem::take(&mut *queue))
        };
        let mut pinned = self.pinned.lock();
        let (mut items, backlog) = take_due(&mut pinned, horizon, released, PASS_LIMIT);
        if backlog {
            // The rest of the backlog comes first in the next passes; the revisit waits for it.
            self.txns.restore_lowest_released(released);
        }
        self.pinned_count.store(pinned.len(), Ordering::Release);
        items.extend(new_items);
        self.purge_in_flight.store(items.len(), Ordering::Release);
        let mut removed = self.purge_versions(&mut items, horizon)?;
        let (done, mut kept): (Vec<PurgeItem>, Vec<PurgeItem>) =
            items.into_iter().partition(|item| item.csn <= horizon);
        self.bury_delete_marks(&mut kept)?;
        removed += self.purge_delete_marks(&done)?;
        self.drop_unused_storage(&done)?;
        self.delete_undo(done.iter().map(|item| item.txn))?;
        // The pass's redo is synced here, in the background, not by the next commit.
        self.store.sync_log_if_behind()?;
        pinned.extend(kept);
        self.pinned_count.store(pinned.len(), Ordering::Release);
        self.purge_in_flight.store(0, Ordering::Release);
        drop(pinned);
        self.forget_rewrites(horizon);
        if self.forgotten_below.fetch_max(horizon, Ordering::AcqRel) < horizon {
            self.txns.forget_below(horizon);
        }
        Ok(PurgePass { removed, backlog })
    }

    /// Removes the versions committed transactions replaced that no open snapshot can see: every
    /// version older than the horizon, and versions valid only between two open snapshots.
    pub(super) fn purge_versions(
        &self,
        items: &mut VecDeque<PurgeItem>,
        horizon: Csn,
    ) -> Result<usize> {
        let snapshots = self.txns.snapshot_csns();
        let pinned = |from: Csn, to: Csn| {
            let first = snapshots.partition_point(|&csn| csn < from);
            snapshots.get(first).is_some_and(|&csn| csn < to)
        };
        let mut garbage = Vec::new();
        for item in items.iter_mut() {
            let writes = item.writes.iter().zip(item.done.iter_mut());
            for (write, done) in writes.filter(|(_, done)| !**done) {
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
    pub(super) fn remove_stale_entries_locked(
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
    pub(super) fn with_row_locked<T>(
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
    pub(super) fn purge_delete_marks(&self, items: &[PurgeItem]) -> Result<usize> {
        let mut marks: Vec<(IndexId, &[u8], TxnId)> = items
            .iter()
            .filter(|item| item.deleted)
            .flat_map(|item| {
                item.writes
                    .iter()
                    .filter(|w| is_clustered_write(&w.action))
                    .map(move |w| (w.index, w.pk.as_slice(), item.txn))
            })
            .collect();
        marks.sort_unstable();
        let mut removed = 0;
        for run in marks.chunk_by(|a, b| a.0 == b.0) {
            let mut of_index = 0;
            for &(index, pk, txn) in run {
                of_index += usize::from(self.remove_delete_mark(index, pk, txn)?);
            }
            self.row_counts.marks_removed(run[0].0, of_index);
            removed += of_index;
        }
        Ok(removed)
    }

    pub(super) fn remove_delete_mark(&self, index: IndexId, pk: &[u8], txn: TxnId) -> Result<bool> {
        let removed =
            self.with_row_locked(index, pk, || self.delete_if_marked_by(index, pk, txn))?;
        Ok(removed.unwrap_or(false))
    }

    /// Removes the row's delete mark by `txn` from its clustered index or the graveyard, and then
    /// the secondary entries only the row the mark kept had (with the row locked by purge).
    pub(super) fn delete_if_marked_by(
        &self,
        index: IndexId,
        pk: &[u8],
        txn: TxnId,
    ) -> Result<bool> {
        let Ok(tree) = self.tree(index) else {
            return Ok(false);
        };
        let marked = |bytes: &[u8]| -> Result<Option<Version>> {
            let version = Version::decode(bytes)?;
            Ok((version.deleted && version.writer == txn).then_some(version))
        };
        let mark = if let Some(bytes) = tree.get(pk)? {
            let Some(mark) = marked(&bytes)? else {
                return Ok(false);
            };
            tree.delete(pk)?;
            mark
        } else {
            let key = graveyard_key(index, pk);
            let Some(mark) = self
                .graveyard
                .get(&key)?
                .map(|b| marked(&b))
                .transpose()?
                .flatten()
            else {
                return Ok(false);
            };
            self.graveyard.delete(&key)?;
            self.graveyard_length.fetch_sub(1, Ordering::AcqRel);
            mark
        };
        if let (Some(kept), Some(table)) = (mark.kept_version(), self.table_by_id(index)) {
            let old = OldVersion {
                version: kept,
                superseded_by: txn,
            };
            self.remove_stale_entries(&table, pk, &old)?;
        }
        Ok(true)
    }

    /// Moves the delete marks of committed transactions that some snapshot still keeps from being
    /// purged out of their clustered index, into the graveyard: scans stop stepping over them, so
    /// repeated `DELETE ... LIMIT n` stays linear while an old snapshot is open (seed 000).
    pub(super) fn bury_delete_marks(&self, items: &mut [PurgeItem]) -> Result<()> {
        let mut marks: Vec<(IndexId, Vec<u8>, TxnId, Csn)> = Vec::new();
        for item in items.iter_mut().filter(|item| !item.buried) {
            item.buried = true;
            if !item.deleted {
                continue;
            }
            let clustered = item.writes.iter().filter(|w| is_clustered_write(&w.action));
            marks.extend(clustered.map(|w| (w.index, w.pk.clone(), item.txn, item.csn)));
        }
        marks.sort_unstable();
        for (index, pk, txn, csn) in marks {
            self.with_row_locked(index, &pk, || self.bury(index, &pk, txn, csn))?;
        }
        Ok(())
    }

    /// Moves one row's delete mark by `txn` to the graveyard (with the row locked). The graveyard
    /// gets it before the clustered index loses it, so a reader always finds it in one of them.
    /// The row's secondary entries are then marked stale from `csn` (the delete's commit).
    pub(super) fn bury(&self, index: IndexId, pk: &[u8], txn: TxnId, csn: Csn) -> Result<()> {
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
        if let Some(table) = self.table_by_id(index).filter(|t| !t.indexes.is_empty()) {
            if let Some(last) = self.row_before_delete(index, pk, &version)? {
                self.mark_entries_stale(&table, pk, &last, csn)?;
            }
        }
        Ok(())
    }

    /// The version the delete mark `mark` of the row under `pk` ended: the row the mark keeps,
    /// else the newest of the row's versions in history.
    fn row_before_delete(
        &self,
        index: IndexId,
        pk: &[u8],
        mark: &Version,
    ) -> Result<Option<Version>> {
        if let Some(kept) = mark.kept_version() {
            return Ok(Some(kept));
        }
        let (first, last) = (
            crate::version::history_prefix(index, pk),
            crate::version::history_last(index, pk),
        );
        let mut newest = None;
        for entry in self
            .history
            .range(Bound::Included(&first), Bound::Included(&last))
        {
            newest = Some(entry?.1);
        }
        newest
            .map(|bytes| OldVersion::decode(&bytes).map(|old| old.version))
            .transpose()
    }

    /// A write replaced a row whose delete mark was in the graveyard: it leaves the graveyard.
    pub(super) fn unbury(&self, index: IndexId, pk: &[u8]) -> Result<()> {
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
    pub(super) fn buried_in_range(
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
    pub(super) fn start_purge(self: &Arc<Self>) -> Result<()> {
        let weak = Arc::downgrade(self);
        let handle = std::thread::Builder::new()
            .name("steady-purge".into())
            .spawn(move || run_purge(weak))
            .map_err(|e| StorageError::io("starting the purge thread", e))?;
        *self.purge_thread.lock() = Some(handle);
        Ok(())
    }

    /// Removes the undo entries of `txns`, all in one key-ordered pass over the undo tree (a leaf's
    /// entries go in one mini-transaction, whichever transactions they belong to), each
    /// transaction's as one key range found in the leaves themselves (`BTree::delete_ranges`).
    pub(super) fn delete_undo(&self, txns: impl IntoIterator<Item = TxnId>) -> Result<()> {
        let mut txns: Vec<TxnId> = txns.into_iter().collect();
        txns.sort_unstable();
        txns.dedup();
        let ranges: Vec<(Vec<u8>, Vec<u8>)> = txns
            .into_iter()
            .map(|txn| (undo_key(txn, 0), undo_key(txn, COMMIT_MARKER)))
            .collect();
        self.undo.delete_ranges(&ranges)?;
        Ok(())
    }
}

/// The pinned transactions a pass must look at: those the horizon has passed (all of them purgeable
/// now), oldest first and at most `limit` of them, and, when that took them all, those committed
/// after the oldest snapshot released since the last pass (some of their versions may be free
/// now). The rest stay pinned, untouched. Also tells whether the limit left some the horizon
/// has passed for the next passes (a backlog).
pub(super) fn take_due(
    pinned: &mut VecDeque<PurgeItem>,
    horizon: Csn,
    released: Csn,
    limit: usize,
) -> (VecDeque<PurgeItem>, bool) {
    let passed = pinned.partition_point(|item| item.csn <= horizon);
    let mut due: VecDeque<PurgeItem> = pinned.drain(..passed.min(limit)).collect();
    let backlog = passed > limit;
    if !backlog {
        let revisit = pinned.partition_point(|item| item.csn <= released);
        due.extend(pinned.drain(revisit..));
    }
    (due, backlog)
}

/// The background purge: a pass whenever committed transactions wait, until told to stop.
pub(super) fn run_purge(engine: Weak<Engine>) {
    // A pass after an old snapshot ends can have hundreds of thousands of transactions to purge;
    // at full priority it took a core from the foreground for seconds (sysbench
    // oltp_update_index: one second at 0.35x). At a lower priority it takes the idle time and a
    // small share of a busy machine.
    run_in_background_priority();
    let mut last_commit = 0;
    loop {
        let Some(engine) = engine.upgrade() else {
            return;
        };
        if engine.stop_purge.load(Ordering::Acquire) {
            return;
        }
        if engine.row_counts.take_unsettled() {
            if let Err(err) = engine.settle_row_counts() {
                tracing::error!("counting rows failed: {err}");
            }
        }
        let queued = !engine.purge_queue.lock().is_empty();
        let started = Instant::now();
        let mut backlog = false;
        if queued || engine.pinned_count.load(Ordering::Acquire) > 0 {
            match engine.purge_pass() {
                Ok(pass) => backlog = pass.backlog,
                Err(err) => tracing::error!("purge failed: {err}"),
            }
        }
        let worked = started.elapsed();
        let commit = engine.txns.stats().last_csn;
        let foreground_busy = std::mem::replace(&mut last_commit, commit) != commit;
        drop(engine);
        std::thread::sleep(pause_after(worked, backlog && foreground_busy));
    }
}

/// What one purge pass did.
struct PurgePass {
    removed: usize,
    /// The pass took its limit of due transactions, and more wait (see [`take_due`]).
    backlog: bool,
}

/// The pause after a purge pass that took `worked`: [`PURGE_INTERVAL`], or, when the pass is one
/// of a backlog's (the passes after an old snapshot ends) and transactions committed meanwhile,
/// one and a half times as long as the pass, so that the backlog takes at most 40% of a core and
/// of the log's bandwidth from them. Passes that keep up with the commits are never paced: a
/// purge that falls behind leaves later statements more dead rows to look at (repeated
/// `DELETE ... LIMIT` behind an old snapshot went from 1.1 to 2.1 s when every pass was paced).
/// Measured with sysbench oltp_update_index behind a 30-second snapshot: unpaced, the 360,000
/// transactions purged in 2.6 s pulled one second's TPS to 0.35x (at nice 10: 0.6x), the log at
/// 35-80 MB/s against the transactions' 8-15; paced, the worst second was 0.76-0.8x, the rest of
/// the ~13 s drain 0.85-0.9x.
fn pause_after(worked: Duration, paced: bool) -> Duration {
    if paced {
        (worked * 3 / 2).max(PURGE_INTERVAL)
    } else {
        PURGE_INTERVAL
    }
}

/// Whether an undo entry is a write of a row in a clustered index (where a delete mark may be).
fn is_clustered_write(action: &UndoAction) -> bool {
    action.is_row_write() && *action != UndoAction::IndexEntry
}

/// The graveyard key of a row: its index, then its primary key.
pub(super) fn graveyard_key(index: IndexId, pk: &[u8]) -> Vec<u8> {
    let mut key = Vec::with_capacity(8 + pk.len());
    key.extend_from_slice(&index.to_be_bytes());
    key.extend_from_slice(pk);
    key
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pinned(csns: &[Csn]) -> VecDeque<PurgeItem> {
        let item = |&csn: &Csn| PurgeItem {
            txn: csn,
            csn,
            writes: Vec::new(),
            done: Vec::new(),
            deleted: false,
            buried: false,
        };
        csns.iter().map(item).collect()
    }

    fn csns(items: &VecDeque<PurgeItem>) -> Vec<Csn> {
        items.iter().map(|item| item.csn).collect()
    }

    /// A backlog the horizon has passed goes oldest first, at most `limit` a pass, and the
    /// transactions a released snapshot frees are revisited only once the backlog is taken.
    #[test]
    fn a_pass_takes_at_most_its_limit_of_the_backlog_oldest_first() {
        let mut queue = pinned(&[1, 2, 3, 4, 5, 8, 9]);
        let (due, backlog) = take_due(&mut queue, 5, 7, 3);
        assert_eq!(
            (csns(&due), csns(&queue), backlog),
            (vec![1, 2, 3], vec![4, 5, 8, 9], true)
        );
        let (due, backlog) = take_due(&mut queue, 5, 7, 3);
        assert_eq!(
            (csns(&due), csns(&queue), backlog),
            (vec![4, 5, 8, 9], vec![], false)
        );
        let mut queue = pinned(&[6, 8, 9]);
        let (due, backlog) = take_due(&mut queue, 5, 8, 3);
        assert_eq!(
            (csns(&due), csns(&queue), backlog),
            (vec![9], vec![6, 8], false)
        );
        // A revisit that brings the pass to its limit is no backlog: nothing passed is left.
        let mut queue = pinned(&[1, 6, 7, 8]);
        let (due, backlog) = take_due(&mut queue, 5, 5, 3);
        assert_eq!((csns(&due), backlog), (vec![1, 6, 7, 8], false));
    }

    #[test]
    fn a_backlog_is_paced_only_when_asked() {
        let long = Duration::from_millis(40);
        assert_eq!(pause_after(long, true), Duration::from_millis(60));
        assert_eq!(pause_after(long, false), PURGE_INTERVAL);
        assert_eq!(pause_after(Duration::ZERO, true), PURGE_INTERVAL);
    }
}
