//! Writing pages back: the flush list (dirty frames by the LSN of their oldest unwritten change),
//! write-back under the WAL rule (the log first, up to the page's LSN), fuzzy checkpoints, and the
//! background flusher that keeps dirty pages under their share and starts checkpoints.
//!
//! Eviction writes one page; the flusher and checkpoints write batches ([`BufferPool::write_batch`]):
//! the pages are copied, the log is made durable once up to the newest copy's LSN, and the copies
//! go out in page order, neighbours as one vectored write, many in flight at once on io_uring
//! (positioned writes where the kernel gives no ring). A batch holds many frames' write-back
//! locks at once, so it never waits for a lock or a latch while it holds them: a frame whose
//! write-back lock or page latch is taken is left to the one-page path after the batch.

use super::*;
use crate::io::batch::{BatchIo, Completion, Direction};

/// Pages a checkpoint writes in one batch.
const CHECKPOINT_BATCH: usize = 64;
/// How long a spread checkpoint ahead of its schedule pauses before it looks again.
const CHECKPOINT_NAP: Duration = Duration::from_millis(5);
/// The longest a spread checkpoint takes when little log is written meanwhile.
const CHECKPOINT_SPREAD: Duration = Duration::from_secs(30);
/// Pages a checkpoint writes before it syncs the files written: the device then takes them in
/// slices a commit's log sync can wait behind, not in one burst at the end (PostgreSQL's
/// checkpoint_flush_after).
const CHECKPOINT_SYNC_PAGES: usize = 512;
/// Writes a batch keeps in flight.
const WRITE_DEPTH: usize = 32;
/// The largest run of neighbouring pages written as one request.
const MAX_WRITE_RUN_BYTES: usize = 1 << 20;

/// A dirty page copied for writing (see [`BufferPool::copy_for_write`]).
struct Copied {
    frame_id: FrameId,
    space: Arc<Space>,
    page_no: PageNo,
    /// The page's LSN: the log must be durable up to it before the copy is written.
    page_lsn: Lsn,
    /// The frame's flush-list entry.
    oldest_lsn: Lsn,
    copy: AlignedBuf,
}

impl BufferPool {
    /// Stops the background flusher (dirty pages stay in memory; call `flush_all` first to keep them).
    pub fn stop_flusher(&self) {
        self.flusher_state.lock().stop = true;
        self.flusher_wake.notify_all();
        if let Some(handle) = self.flusher.lock().take() {
            if handle.thread().id() != std::thread::current().id() {
                let _ = handle.join();
            }
        }
    }

    /// Writes one dirty frame to its file if it is still dirty (used by eviction and flushing).
    pub(super) fn write_back(&self, frame_id: FrameId) -> Result<()> {
        let frame = &self.frames[frame_id];
        let key = frame.key.load(Ordering::Acquire);
        if key == NO_KEY {
            return Ok(());
        }
        {
            let shard = self.table[shard_of(key)].lock();
            if shard.get(&key) != Some(&frame_id) {
                return Ok(());
            }
            frame.pins.fetch_add(1, Ordering::AcqRel);
        }
        let result = {
            let _in_order = frame.write_back.lock();
            self.write_pinned(frame_id)
        };
        self.unpin(frame_id);
        result
    }

    pub(super) fn write_pinned(&self, frame_id: FrameId) -> Result<()> {
        let Some(mut page) = self.copy_for_write(frame_id, true).flatten() else {
            return Ok(());
        };
        let written = self.make_durable(page.page_lsn).and_then(|_| {
            let _protected = self.protect(std::slice::from_ref(&page))?;
            page.space.write_page(page.page_no, &page.copy)
        });
        self.finish_write(&mut page, written)
    }

    /// Copies a pinned frame's page for writing, with its checksum, if it is dirty; the frame is
    /// clean from then on. The caller holds the frame's write-back lock until
    /// [`BufferPool::finish_write`]. Some(None) for a clean frame, and for a page of a dropped or
    /// truncated space (which is never written; its flush-list entry goes at once); None when
    /// `wait` is false and the page is latched for writing.
    fn copy_for_write(&self, frame_id: FrameId, wait: bool) -> Option<Option<Copied>> {
        let frame = &self.frames[frame_id];
        let mut copy = AlignedBuf::zeroed(self.page_size);
        // The frame is clean from here on, but its flush-list entry stays until the copy is written:
        // a checkpoint that begins meanwhile must wait for this write (on the frame's write-back
        // lock), not pass a page whose changes are not yet in its file.
        let (space, oldest_lsn) = {
            let data = match wait {
                true => frame.data.read(),
                false => frame.data.try_read()?,
            };
            let mut meta = frame.meta.lock();
            let oldest_lsn = meta.oldest_lsn;
            if oldest_lsn == 0 {
                return Some(None);
            }
            meta.oldest_lsn = 0;
            copy.copy_from_slice(&data);
            (meta.space.clone(), oldest_lsn)
        };
        let current = |s: &Arc<Space>| s.version() == frame.version.load(Ordering::Acquire);
        let Some(space) = space.filter(current) else {
            self.flush_list.lock().remove(&(oldest_lsn, frame_id));
            return Some(None);
        };
        let page = page::Page::new(&copy);
        let (page_no, page_lsn) = (page.page_no(), page.lsn());
        page::stamp_checksum(&mut copy);
        Some(Some(Copied {
            frame_id,
            space,
            page_no,
            page_lsn,
            oldest_lsn,
            copy,
        }))
    }

    /// Ends the write of a copy: written, the frame leaves the flush list; failed, it is dirty
    /// again as of its old LSN and the error is returned.
    fn finish_write(&self, page: &mut Copied, written: Result<bool>) -> Result<()> {
        let frame_id = page.frame_id;
        let done = || self.flush_list.lock().remove(&(page.oldest_lsn, frame_id));
        match written {
            Ok(written) => {
                if written {
                    self.counters.pages_written.fetch_add(1, Ordering::Relaxed);
                    let space = Arc::clone(&page.space);
                    self.unsynced.lock().entry(space.id()).or_insert(space);
                }
                done();
                Ok(())
            }
            Err(err) => {
                let mut meta = self.frames[frame_id].meta.lock();
                if meta.oldest_lsn != 0 {
                    self.flush_list.lock().remove(&(meta.oldest_lsn, frame_id));
                }
                meta.oldest_lsn = page.oldest_lsn;
                Err(err)
            }
        }
    }

    /// Writes the dirty pages of `frame_ids` (see the module doc); returns the first error, after
    /// every write has ended.
    fn write_batch(&self, frame_ids: &[FrameId]) -> Result<()> {
        let mut locked = Vec::new();
        let mut busy = Vec::new();
        for &frame_id in frame_ids {
            if !self.pin_mapped(frame_id) {
                continue;
            }
            match self.frames[frame_id].write_back.try_lock() {
                Some(lock) => locked.push((frame_id, lock)),
                None => {
                    self.unpin(frame_id);
                    busy.push(frame_id);
                }
            }
        }
        let mut pages = Vec::new();
        for &(frame_id, _) in &locked {
            match self.copy_for_write(frame_id, false) {
                Some(copied) => pages.extend(copied),
                None => busy.push(frame_id),
            }
        }
        let result = self.write_copies(&mut pages);
        for (frame_id, lock) in locked {
            drop(lock);
            self.unpin(frame_id);
        }
        let mut result = result;
        for frame_id in busy {
            let written = self.write_back(frame_id);
            result = result.and(written);
        }
        result
    }

    /// Pins a frame if it still holds a page (as [`BufferPool::write_back`] does).
    fn pin_mapped(&self, frame_id: FrameId) -> bool {
        let frame = &self.frames[frame_id];
        let key = frame.key.load(Ordering::Acquire);
        if key == NO_KEY {
            return false;
        }
        let shard = self.table[shard_of(key)].lock();
        if shard.get(&key) != Some(&frame_id) {
            return false;
        }
        frame.pins.fetch_add(1, Ordering::AcqRel);
        true
    }

    /// Copies `pages` into the doublewrite area, if the pool has one (see [`doublewrite`]); the
    /// caller writes them in place while it holds the guard.
    fn protect(&self, pages: &[Copied]) -> Result<Option<doublewrite::Protected<'_>>> {
        let Some(area) = self.doublewrite.get() else {
            return Ok(None);
        };
        let images: Vec<(&Arc<Space>, &[u8])> =
            pages.iter().map(|p| (&p.space, &p.copy[..])).collect();
        area.protect(&images).map(Some)
    }

    /// Writes copies under the WAL rule, through the doublewrite area as many at a time as it
    /// holds, in page order and runs of neighbours, and finishes each.
    fn write_copies(&self, pages: &mut [Copied]) -> Result<()> {
        let newest = pages.iter().map(|p| p.page_lsn).max().unwrap_or(0);
        if let Err(err) = self.make_durable(newest) {
            return self.fail_writes(pages, err);
        }
        pages.sort_unstable_by_key(|p| (p.space.id(), p.page_no));
        let per_protection = self.doublewrite.get().map_or(usize::MAX, |a| a.slots());
        let mut result = Ok(());
        for part in pages.chunks_mut(per_protection) {
            let written = match self.protect(part) {
                Ok(_protected) => self.write_in_place(part),
                Err(err) => self.fail_writes(part, err),
            };
            result = result.and(written);
        }
        result
    }

    /// Ends the writes of `pages` with `err` (each page is dirty again) and returns it.
    fn fail_writes(&self, pages: &mut [Copied], err: StorageError) -> Result<()> {
        for page in pages.iter_mut() {
            let _ = self.finish_write(
                page,
                Err(StorageError::io(
                    "writing pages back",
                    std::io::Error::other(err.to_string()),
                )),
            );
        }
        Err(err)
    }

    /// Writes sorted copies to their files, neighbours as one request, and finishes each.
    fn write_in_place(&self, pages: &mut [Copied]) -> Result<()> {
        let runs = write_runs(pages, (MAX_WRITE_RUN_BYTES / self.page_size).max(1));
        let mut batch = BatchIo::new(WRITE_DEPTH, true);
        let mut completed: Vec<Completion> = Vec::new();
        // Per run: how many of its pages lie in the file (the rest, freed and cut off, are not
        // written, as write_page skips them), and how its write ended.
        let mut in_file = vec![0; runs.len()];
        let mut outcomes: Vec<Option<std::io::Result<()>>> =
            (0..runs.len()).map(|_| None).collect();
        {
            let sizes: HashMap<SpaceId, parking_lot::RwLockReadGuard<'_, u32>> = pages
                .iter()
                .map(|p| (p.space.id(), &p.space))
                .collect::<HashMap<_, _>>()
                .into_iter()
                .map(|(id, space)| (id, space.size_for_writing()))
                .collect();
            let iovecs: Vec<Vec<libc::iovec>> = runs
                .iter()
                .map(|run| {
                    pages[run.clone()]
                        .iter()
                        .map(|p| libc::iovec {
                            iov_base: p.copy.as_ptr() as *mut libc::c_void,
                            iov_len: p.copy.len(),
                        })
                        .collect()
                })
                .collect();
            for (tag, run) in runs.iter().enumerate() {
                let first = &pages[run.start];
                let size = *sizes[&first.space.id()];
                in_file[tag] = pages[run.clone()]
                    .iter()
                    .take_while(|p| p.page_no < size)
                    .count();
                if in_file[tag] == 0 {
                    outcomes[tag] = Some(Ok(()));
                    continue;
                }
                let iovecs = &iovecs[tag][..in_file[tag]];
                let (file, offset) = first.space.page_location(first.page_no);
                // SAFETY: the copies (and the iovecs naming them) are neither moved nor changed
                // until every completion is taken below; the spaces, which own the files, are
                // held by the copies.
                unsafe {
                    batch.queue(
                        Direction::Write,
                        file,
                        iovecs,
                        offset,
                        tag as u64,
                        &mut completed,
                    );
                }
            }
            batch.complete(batch.pending(), &mut completed);
            for (tag, outcome) in completed.drain(..) {
                outcomes[tag as usize] = Some(outcome);
            }
        }
        let mut result = Ok(());
        for ((run, outcome), in_file) in runs.into_iter().zip(outcomes).zip(in_file) {
            let outcome = outcome.expect("every run's write ended");
            for (i, page) in pages[run].iter_mut().enumerate() {
                let written = match &outcome {
                    Ok(()) => Ok(i < in_file),
                    Err(err) => Err(StorageError::io(
                        format!("writing page {} of space {}", page.page_no, page.space.id()),
                        std::io::Error::new(err.kind(), err.to_string()),
                    )),
                };
                result = result.and(self.finish_write(page, written));
            }
        }
        result
    }

    /// Marks a write-latched frame dirty as of `lsn` (keeping an earlier oldest LSN).
    pub(super) fn mark_dirty(&self, frame_id: FrameId, lsn: Lsn) {
        let mut meta = self.frames[frame_id].meta.lock();
        if meta.oldest_lsn == 0 {
            meta.oldest_lsn = lsn;
            let dirty = {
                let mut list = self.flush_list.lock();
                list.insert((lsn, frame_id));
                list.len()
            };
            if dirty > self.max_dirty {
                self.flusher_wake.notify_one();
            }
        }
    }

    /// Writes the `limit` oldest dirty pages; returns how many were written.
    pub fn flush_oldest(&self, limit: usize) -> Result<usize> {
        let batch: Vec<FrameId> = self
            .flush_list
            .lock()
            .iter()
            .take(limit)
            .map(|&(_, f)| f)
            .collect();
        self.write_batch(&batch)?;
        Ok(batch.len())
    }

    /// A fuzzy checkpoint: writes the pages changed before the redo point, syncs the files written,
    /// and records the redo point in the log. Returns the redo point (0 without a log). A page's
    /// oldest LSN is the *end* of the record that first dirtied it, so a page whose oldest LSN equals
    /// the redo point was changed by a record that recovery will not replay: it is written too.
    ///
    /// Checkpoints run one at a time; one that must wait for a spread checkpoint makes it stop
    /// pacing itself, so it waits no longer than the writes take.
    pub fn checkpoint(&self) -> Result<Lsn> {
        self.checkpoints_waiting.fetch_add(1, Ordering::AcqRel);
        let _one_at_a_time = self.checkpoint_lock.lock();
        self.checkpoints_waiting.fetch_sub(1, Ordering::AcqRel);
        self.checkpoint_on(None)
    }

    /// Keeps checkpoints from running until the guard is dropped: the redo point stays where it
    /// is and the log after it is not overwritten (a backup copies the files meanwhile). A spread
    /// checkpoint under way stops pacing itself, as for [`BufferPool::checkpoint`].
    pub fn hold_checkpoints(&self) -> parking_lot::MutexGuard<'_, ()> {
        self.checkpoints_waiting.fetch_add(1, Ordering::AcqRel);
        let held = self.checkpoint_lock.lock();
        self.checkpoints_waiting.fetch_sub(1, Ordering::AcqRel);
        held
    }

    /// The background flusher's checkpoint: as [`BufferPool::checkpoint`], with its writes spread
    /// over the log written meanwhile ([`Schedule`]).
    fn spread_checkpoint(&self) -> Result<Lsn> {
        let _one_at_a_time = self.checkpoint_lock.lock();
        self.checkpoint_on(self.wal().map(|wal| Schedule::start(wal)))
    }

    /// Whether a spread checkpoint should stop pacing itself: another checkpoint waits for it, or
    /// the flusher is stopping.
    fn checkpoint_in_a_hurry(&self) -> bool {
        self.checkpoints_waiting.load(Ordering::Acquire) > 0 || self.flusher_state.lock().stop
    }

    fn checkpoint_on(&self, mut schedule: Option<Schedule>) -> Result<Lsn> {
        let Some(wal) = self.wal() else {
            self.flush_all()?;
            self.sync_written()?;
            return Ok(0);
        };
        self.refuse_after_failed_sync()?;
        let redo = wal.begin_checkpoint();
        let older = |list: &BTreeSet<(Lsn, FrameId)>| -> Vec<FrameId> {
            let pages = list.iter().take_while(|(lsn, _)| *lsn <= redo);
            pages.take(CHECKPOINT_BATCH).map(|&(_, f)| f).collect()
        };
        if let Some(schedule) = &mut schedule {
            schedule.pages = self
                .flush_list
                .lock()
                .range(..=(redo, FrameId::MAX))
                .count();
        }
        let (mut written, mut unsynced) = (0, 0);
        loop {
            let batch = older(&self.flush_list.lock());
            if batch.is_empty() {
                break;
            }
            self.write_batch(&batch)?;
            written += batch.len();
            unsynced += batch.len();
            if unsynced >= CHECKPOINT_SYNC_PAGES {
                self.sync_written()?;
                unsynced = 0;
            }
            if let Some(schedule) = &schedule {
                while schedule.ahead(wal, written)
                    && self.flush_list.lock().len() < self.max_dirty
                    && !self.checkpoint_in_a_hurry()
                {
                    std::thread::sleep(CHECKPOINT_NAP);
                }
            }
        }
        self.sync_written()?;
        wal.write_checkpoint(redo)?;
        Ok(redo)
    }

    /// Syncs the spaces written since the last call. A failed sync fails this and every later
    /// checkpoint until a restart: the kernel may have dropped the pages it did not make durable
    /// (and a later sync succeeds without them), so no redo point may pass their changes;
    /// recovery at the next start replays them from the log, which keeps everything after the
    /// last good checkpoint.
    pub(super) fn sync_written(&self) -> Result<()> {
        self.refuse_after_failed_sync()?;
        let spaces: Vec<Arc<Space>> = self.unsynced.lock().drain().map(|(_, s)| s).collect();
        for space in spaces.iter().filter(|s| !s.is_hidden()) {
            if let Err(err) = space.sync() {
                self.data_sync_failed.store(true, Ordering::Release);
                return Err(err);
            }
        }
        Ok(())
    }

    /// Fails once a sync of a data file has failed (see [`BufferPool::sync_written`]).
    pub(super) fn refuse_after_failed_sync(&self) -> Result<()> {
        match self.data_sync_failed.load(Ordering::Acquire) {
            true => Err(StorageError::io(
                "checkpointing",
                std::io::Error::other(
                    "an earlier sync of a data file failed; restart the server to recover",
                ),
            )),
            false => Ok(()),
        }
    }

    /// Writes every dirty page (of every space) to the files, without syncing them.
    pub fn flush_all(&self) -> Result<()> {
        loop {
            if self.flush_oldest(256)? == 0 {
                return Ok(());
            }
        }
    }
}

/// The background flusher: keeps dirty pages under the configured share, oldest first.
pub(super) fn run_flusher(pool: Weak<BufferPool>) {
    loop {
        let Some(pool) = pool.upgrade() else { return };
        {
            let mut state = pool.flusher_state.lock();
            if state.stop {
                return;
            }
            pool.flusher_wake
                .wait_for(&mut state, Duration::from_millis(100));
            if state.stop {
                return;
            }
        }
        if let Some(wal) = pool.wal() {
            if wal.checkpoint_age() as f64 > wal.capacity() as f64 * Schedule::BEGIN {
                let started = std::time::Instant::now();
                let age = wal.checkpoint_age();
                match pool.spread_checkpoint() {
                    Ok(redo) => tracing::info!(
                        "checkpoint at redo lsn {redo} ({} MiB of log) took {:.1} s",
                        age >> 20,
                        started.elapsed().as_secs_f64()
                    ),
                    Err(err) => tracing::error!("background checkpoint failed: {err}"),
                }
            }
        }
        let dirty = pool.flush_list.lock().len();
        if dirty > pool.max_dirty / 2 {
            let excess = dirty - pool.max_dirty / 2;
            if let Err(err) = pool.flush_oldest(excess.min(1024)) {
                tracing::error!("background flush failed: {err}");
            }
        }
    }
}

/// When a spread checkpoint should have written how much (PostgreSQL's
/// checkpoint_completion_target): it starts when [`Schedule::BEGIN`] of the log is in use,
/// writers wait for room when three quarters are, so it aims to be done at [`Schedule::FINISH`]
/// of the log, or after [`CHECKPOINT_SPREAD`] if the log fills slower; its share of pages written
/// may not run ahead of the larger of the two shares elapsed. Spread so, its writes — and the
/// device's work that every commit's log sync waits behind — come a little at a time instead of
/// all at once.
///
/// It begins at a quarter, not at half as before: with a bulk build filling the log at ~35 MB/s
/// (ALTER COLUMN TYPE of 1 GiB), the eighth of the log between half and [`Schedule::FINISH`]
/// lasted ~4 s, and its 45,000 pages went out at 11–13k pages/s, taking commits to 0.57–0.62x
/// for those seconds. Three eighths spread them three times as thin. Checkpoints come more often
/// when the log fills fast; since no page is logged whole after one (the doublewrite area
/// protects torn pages), that costs page writes only.
struct Schedule {
    /// The pages it has to write.
    pages: usize,
    start_age: u64,
    finish_age: u64,
    started: std::time::Instant,
}

impl Schedule {
    /// The share of the log's capacity in use at which the flusher begins a checkpoint.
    const BEGIN: f64 = 0.25;
    /// The share of the log's capacity in use by which a spread checkpoint aims to be done.
    const FINISH: f64 = 0.625;

    fn start(wal: &Wal) -> Schedule {
        let start_age = wal.checkpoint_age();
        Schedule {
            pages: 0,
            start_age,
            finish_age: ((wal.capacity() as f64 * Self::FINISH) as u64).max(start_age + 1),
            started: std::time::Instant::now(),
        }
    }

    /// Whether `written` pages are more than the schedule asks for by now.
    fn ahead(&self, wal: &Wal, written: usize) -> bool {
        let age = wal.checkpoint_age();
        if age >= self.finish_age {
            return false;
        }
        let by_log =
            age.saturating_sub(self.start_age) as f64 / (self.finish_age - self.start_age) as f64;
        let by_time = self.started.elapsed().as_secs_f64() / CHECKPOINT_SPREAD.as_secs_f64();
        written as f64 / self.pages.max(1) as f64 > by_log.max(by_time)
    }
}

/// Splits copies sorted by (space, page) into runs of neighbouring pages of one space, each at
/// most `most` pages long.
fn write_runs(pages: &[Copied], most: usize) -> Vec<std::ops::Range<usize>> {
    let mut runs: Vec<std::ops::Range<usize>> = Vec::new();
    for (i, page) in pages.iter().enumerate() {
        match runs.last_mut() {
            Some(run)
                if run.len() < most
                    && pages[run.end - 1].space.id() == page.space.id()
                    && pages[run.end - 1].page_no + 1 == page.page_no =>
            {
                run.end = i + 1;
            }
            _ => runs.push(i..i + 1),
        }
    }
    runs
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::MemVfs;
    use crate::wal::MIN_CAPACITY;

    /// A spread checkpoint's writes keep pace with the log written since it started: ahead of
    /// the log's share it pauses, and once the log reaches the finish mark it never does.
    #[test]
    fn a_spread_checkpoint_keeps_pace_with_the_log() {
        let vfs = MemVfs::new();
        let wal = Wal::create(&vfs, MIN_CAPACITY).unwrap();
        let quarter = (MIN_CAPACITY / 4) as usize;
        wal.append(&vec![0u8; quarter]).unwrap();
        wal.append(&vec![0u8; quarter]).unwrap();
        let mut schedule = Schedule::start(&wal);
        schedule.pages = 100;
        assert!(
            schedule.ahead(&wal, 1),
            "no log written yet: one page is ahead"
        );
        // A fifth of the way from the start to the finish mark.
        let to_finish = schedule.finish_age - schedule.start_age;
        wal.append(&vec![0u8; (to_finish / 5) as usize]).unwrap();
        assert!(
            !schedule.ahead(&wal, 15),
            "15% of the pages at 20% of the log"
        );
        assert!(
            schedule.ahead(&wal, 30),
            "30% of the pages at 20% of the log"
        );
        wal.append(&vec![0u8; to_finish as usize]).unwrap();
        assert!(!schedule.ahead(&wal, 99), "past the finish mark it hurries");
    }
}
