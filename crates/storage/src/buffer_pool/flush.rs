//! Writing pages back: the flush list (dirty frames by the LSN of their oldest unwritten change),
//! write-back under the WAL rule (the log first, up to the page's LSN), fuzzy checkpoints, and the
//! background flusher that keeps dirty pages under their share and starts checkpoints.

use super::*;

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
        let frame = &self.frames[frame_id];
        let mut copy = AlignedBuf::zeroed(self.page_size);
        // The frame is clean from here on, but its flush-list entry stays until the copy is written:
        // a checkpoint that begins meanwhile must wait for this write (on the frame's write-back
        // lock), not pass a page whose changes are not yet in its file.
        let (space, oldest_lsn) = {
            let data = frame.data.read();
            let mut meta = frame.meta.lock();
            let oldest_lsn = meta.oldest_lsn;
            if oldest_lsn == 0 {
                return Ok(());
            }
            meta.oldest_lsn = 0;
            copy.copy_from_slice(&data);
            (meta.space.clone(), oldest_lsn)
        };
        let done = || self.flush_list.lock().remove(&(oldest_lsn, frame_id));
        let current = |s: &Arc<Space>| s.version() == frame.version.load(Ordering::Acquire);
        let Some(space) = space.filter(current) else {
            done();
            return Ok(());
        };
        let (page_no, page_lsn) = (
            page::Page::new(&copy).page_no(),
            page::Page::new(&copy).lsn(),
        );
        page::stamp_checksum(&mut copy);
        let written = self
            .make_durable(page_lsn)
            .and_then(|_| space.write_page(page_no, &copy));
        match written {
            Ok(written) => {
                if written {
                    self.counters.pages_written.fetch_add(1, Ordering::Relaxed);
                    self.unsynced.lock().entry(space.id()).or_insert(space);
                }
                done();
                Ok(())
            }
            Err(err) => {
                let mut meta = frame.meta.lock();
                if meta.oldest_lsn != 0 {
                    self.flush_list.lock().remove(&(meta.oldest_lsn, frame_id));
                }
                meta.oldest_lsn = oldest_lsn;
                Err(err)
            }
        }
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
        for &frame_id in &batch {
            self.write_back(frame_id)?;
        }
        Ok(batch.len())
    }

    /// A fuzzy checkpoint: writes the pages changed before the redo point, syncs the files written,
    /// and records the redo point in the log. Returns the redo point (0 without a log). A page's
    /// oldest LSN is the *end* of the record that first dirtied it, so a page whose oldest LSN equals
    /// the redo point was changed by a record that recovery will not replay: it is written too.
    pub fn checkpoint(&self) -> Result<Lsn> {
        let Some(wal) = self.wal() else {
            self.flush_all()?;
            self.sync_written()?;
            return Ok(0);
        };
        let redo = wal.begin_checkpoint();
        loop {
            let batch: Vec<FrameId> = {
                let list = self.flush_list.lock();
                list.iter()
                    .take_while(|(lsn, _)| *lsn <= redo)
                    .take(256)
                    .map(|&(_, f)| f)
                    .collect()
            };
            if batch.is_empty() {
                break;
            }
            for frame_id in batch {
                self.write_back(frame_id)?;
            }
        }
        self.sync_written()?;
        wal.write_checkpoint(redo)?;
        Ok(redo)
    }

    pub(super) fn sync_written(&self) -> Result<()> {
        let spaces: Vec<Arc<Space>> = self.unsynced.lock().drain().map(|(_, s)| s).collect();
        for space in spaces.iter().filter(|s| !s.is_dropped()) {
            space.sync()?;
        }
        Ok(())
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
            if wal.checkpoint_age() > wal.capacity() / 2 {
                let started = std::time::Instant::now();
                let age = wal.checkpoint_age();
                match pool.checkpoint() {
                    Ok(redo) => eprintln!(
                        "steady: checkpoint at redo lsn {redo} ({} MiB of log) took {:.1} s",
                        age >> 20,
                        started.elapsed().as_secs_f64()
                    ),
                    Err(err) => eprintln!("steady: background checkpoint failed: {err}"),
                }
            }
        }
        let dirty = pool.flush_list.lock().len();
        if dirty > pool.max_dirty / 2 {
            let excess = dirty - pool.max_dirty / 2;
            if let Err(err) = pool.flush_oldest(excess.min(1024)) {
                eprintln!("steady: background flush failed: {err}");
            }
        }
    }
}
