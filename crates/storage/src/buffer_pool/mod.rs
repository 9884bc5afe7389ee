//! The buffer pool: a fixed budget of page frames shared by every space.
//!
//! ```text
//!  page table (sharded)          frames                         flush list
//!  (space,page) -> frame    [pins|latch|page bytes|meta]   BTreeSet<(oldest LSN, frame)>
//! ```
//!
//! * **Hit path.** One shard mutex (of [`SHARDS`]) to find the frame and pin it, then the frame's own
//!   read/write latch. No global mutex is taken on a hit, and the pin itself touches no latch: a
//!   frame's load state (an atomic) tells a loaded page from one still being read, whose reader
//!   holds the write latch until the bytes are in. The pool's count of requests is striped by
//!   thread ([`StripedCounter`]), so a hit writes no cache line every thread writes.
//! * **Pins and identity.** A frame's identity (space, page, space version) changes only while it has no
//!   pins, under the lock of the shard that maps it; a pin is only taken under that same lock. So a
//!   pinned frame always holds the page it was pinned for, and only pinned users hold latches.
//! * **Replacement (2Q over CLOCK).** A page enters *cold*. A later ordinary hit promotes it to *hot*;
//!   hits from scans ([`AccessHint::Scan`]) never do. The clock hand evicts cold frames in load order
//!   and gives hot frames a second chance through their reference bit; hot frames are demoted only
//!   while the hot region is larger than [`HOT_FRACTION`] of the pool. A scan of a table ten times the
//!   pool therefore cycles through the cold region and leaves the hot working set where it is.
//! * **Space versions.** Each frame remembers the version its space had when the page was loaded.
//!   Dropping or truncating a space bumps the version (O(1), see [`Space::invalidate`]); a frame whose
//!   version is stale is a miss for lookups, is never written back, and is reused when the clock reaches
//!   it. The pool is never scanned for a space.
//! * **Dirty pages.** A page becomes dirty when a mini-transaction that modified it commits; it joins the
//!   flush list with its oldest-modification LSN and leaves it when written. A background flusher
//!   writes the oldest pages when dirty pages exceed [`PoolConfig::max_dirty_fraction`]; eviction
//!   writes a dirty victim itself only when no clean one is found. Write-backs of one page are
//!   serialised by a per-frame lock held from copying the page to the end of its write, so an
//!   older copy never lands on disk after a newer one.
//! * **Torn pages.** With a redo log, a page is written in place only once a copy of it is durable
//!   in the doublewrite area ([`doublewrite`]), so the log carries no full-page image.
//! * **Per-thread counters.** Besides the pool's global counters, each thread counts the page
//!   requests it made itself ([`thread_io`]): a *hit* when the page was found in the pool, a *read*
//!   when this thread read it from its file (prefetches included). They live in a thread-local cell
//!   (no atomics, no sharing), only grow, and cover every pool the thread used; a caller measures a
//!   piece of work as the [`ThreadIo::since`] difference of two samples (EXPLAIN ... BUFFERS).

pub mod doublewrite;
mod flush;
mod read_ahead;

use doublewrite::Doublewrite;
use flush::run_flusher;
use read_ahead::ReadAheadWorker;
pub use read_ahead::{ScanAhead, ScanProgress};

use std::cell::Cell;
use std::collections::{BTreeSet, HashMap};
use std::ops::Deref;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::{Condvar, Mutex, RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::io::AlignedBuf;
use crate::page::{self, PageMut, PageOps};
use crate::redo;
use crate::space::Space;
use crate::wal::Wal;
use crate::{Lsn, PageNo, Result, SpaceId, StorageError};

/// Number of page-table shards.
pub const SHARDS: usize = 64;
/// Largest share of the frames the hot region may keep before hot frames are demoted.
pub const HOT_FRACTION: f64 = 0.625;
/// Turns of the clock a load makes looking for a victim before it waits for unpins.
const CLOCK_PASSES: usize = 4;
/// Turns a read-ahead makes: it takes only clean cold frames, never a hot page, a dirty one or a
/// page read ahead and not used yet; it stops instead.
const READ_AHEAD_PASSES: usize = 1;
/// How long a load waits for a frame to be unpinned before the pool reports itself exhausted.
pub const PIN_WAIT: Duration = Duration::from_secs(10);

type FrameId = usize;

/// How a page is being accessed, for the replacement policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AccessHint {
    /// Point access: a repeated access makes the page hot.
    Normal,
    /// Part of a scan or read-ahead: never makes the page hot.
    Scan,
}

/// Sizing and flushing settings of the pool.
#[derive(Debug, Clone)]
pub struct PoolConfig {
    pub page_size: usize,
    /// Number of frames (the memory budget is `frames * page_size`).
    pub frames: usize,
    /// Dirty share above which the background flusher writes the oldest pages.
    pub max_dirty_fraction: f64,
    /// Whether to run the background flusher thread.
    pub background_flush: bool,
}

impl PoolConfig {
    /// A pool of `bytes` worth of `page_size` frames (at least 16 frames).
    pub fn with_budget(page_size: usize, bytes: usize) -> Self {
        PoolConfig {
            page_size,
            frames: (bytes / page_size).max(16),
            max_dirty_fraction: 0.5,
            background_flush: true,
        }
    }
}

/// Counters of the pool, as reported by [`BufferPool::stats`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PoolStats {
    pub frames: usize,
    pub read_requests: u64,
    pub reads: u64,
    /// Pages read by read-ahead ([`BufferPool::read_ahead`]), also counted in `reads`.
    pub read_ahead_reads: u64,
    /// Pages read ahead and evicted (or dropped) before anyone asked for them.
    pub read_ahead_wasted: u64,
    pub pages_written: u64,
    pub evictions: u64,
    pub dirty_pages: usize,
    pub hot_pages: usize,
}

/// The page requests of one thread: those served from the pool, and those it read from a file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ThreadIo {
    pub hits: u64,
    pub reads: u64,
    /// Of the hits, those on pages read ahead for it (the first request of a read-ahead page).
    pub read_ahead: u64,
}

impl ThreadIo {
    /// The requests counted after `earlier` (a sample taken before this one on the same thread).
    pub fn since(self, earlier: ThreadIo) -> ThreadIo {
        ThreadIo {
            hits: self.hits.saturating_sub(earlier.hits),
            reads: self.reads.saturating_sub(earlier.reads),
            read_ahead: self.read_ahead.saturating_sub(earlier.read_ahead),
        }
    }
}

thread_local! {
    static THREAD_IO: Cell<ThreadIo> = const {
        Cell::new(ThreadIo { hits: 0, reads: 0, read_ahead: 0 })
    };
}

/// The page requests the calling thread has made so far, in every pool.
pub fn thread_io() -> ThreadIo {
    THREAD_IO.with(Cell::get)
}

fn count_thread_io(hits: u64, reads: u64, read_ahead: u64) {
    THREAD_IO.with(|io| {
        let now = io.get();
        io.set(ThreadIo {
            hits: now.hits + hits,
            reads: now.reads + reads,
            read_ahead: now.read_ahead + read_ahead,
        });
    });
}

/// Stripes of a [`StripedCounter`].
const COUNTER_STRIPES: usize = 16;

/// A counter every thread bumps on every page request: one cache line per stripe, a thread
/// always on its own stripe, so threads on different cores do not pass one line to and fro (one
/// shared atomic add was 45% of `pin_page` in a purge thread running beside one connection).
#[derive(Default)]
pub(crate) struct StripedCounter {
    stripes: [PaddedCounter; COUNTER_STRIPES],
}

#[derive(Default)]
#[repr(align(128))]
struct PaddedCounter(AtomicU64);

thread_local! {
    /// The stripe of [`StripedCounter`]s this thread adds to, given out in turn.
    static COUNTER_STRIPE: usize = {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        NEXT.fetch_add(1, Ordering::Relaxed) % COUNTER_STRIPES
    };
}

impl StripedCounter {
    pub(crate) fn add(&self, n: u64) {
        let stripe = COUNTER_STRIPE.with(|stripe| *stripe);
        self.stripes[stripe].0.fetch_add(n, Ordering::Relaxed);
    }

    pub(crate) fn sum(&self) -> u64 {
        self.stripes
            .iter()
            .map(|s| s.0.load(Ordering::Relaxed))
            .sum()
    }
}

#[derive(Default)]
struct Counters {
    read_requests: StripedCounter,
    reads: AtomicU64,
    read_ahead_reads: AtomicU64,
    read_ahead_wasted: AtomicU64,
    pages_written: AtomicU64,
    evictions: AtomicU64,
}

/// What a frame holds; changed only with no pins, under the mapping shard's lock.
#[derive(Default)]
struct FrameMeta {
    space: Option<Arc<Space>>,
    /// LSN of the first change not yet written; 0 when clean.
    oldest_lsn: Lsn,
}

/// Where the load of a mapped frame's page stands ([`Frame::load`]).
const LOADING: u8 = 0;
const LOADED: u8 = 1;
/// The page failed to load; the frame is reusable once unpinned.
const LOAD_FAILED: u8 = 2;

struct Frame {
    data: RwLock<AlignedBuf>,
    /// Held from taking a copy of the page to the end of writing it, so two write-backs of one
    /// page reach the file in the order their copies were taken. Taken by write-back code only,
    /// before the page latch, while holding no other latch.
    write_back: Mutex<()>,
    pins: AtomicU32,
    key: AtomicU64,
    version: AtomicU64,
    hot: AtomicBool,
    referenced: AtomicBool,
    /// Loaded by read-ahead and not requested since.
    read_ahead: AtomicBool,
    /// [`LOADING`] from mapping until the page's bytes are in, then [`LOADED`] or
    /// [`LOAD_FAILED`]: set before the mapping is published and before the loader releases the
    /// write latch, so a thread that pinned the frame finds a loaded page without touching its
    /// latch (on a hot page held by a writer, waiting for the latch there and then again to
    /// take it doubled every wait).
    load: AtomicU8,
    meta: Mutex<FrameMeta>,
}

const NO_KEY: u64 = u64::MAX;

fn page_key(space: SpaceId, page: PageNo) -> u64 {
    ((space as u64) << 32) | page as u64
}

fn shard_of(key: u64) -> usize {
    (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 58) as usize % SHARDS
}

/// The shared page cache.
pub struct BufferPool {
    page_size: usize,
    frames: Box<[Frame]>,
    table: Box<[Mutex<HashMap<u64, FrameId>>]>,
    clock_hand: Mutex<FrameId>,
    flush_list: Mutex<BTreeSet<(Lsn, FrameId)>>,
    hot_count: AtomicUsize,
    hot_limit: usize,
    max_dirty: usize,
    next_lsn: AtomicU64,
    counters: Counters,
    flusher: Mutex<Option<JoinHandle<()>>>,
    flusher_wake: Condvar,
    flusher_state: Mutex<FlusherState>,
    wal: OnceLock<Arc<Wal>>,
    /// Where pages go before they are written in place; set with the redo log (by the store).
    doublewrite: OnceLock<Doublewrite>,
    /// Spaces written since the last checkpoint, to be synced by it.
    unsynced: Mutex<HashMap<SpaceId, Arc<Space>>>,
    /// Set when a sync of a data file fails: no checkpoint succeeds after it (see
    /// `BufferPool::sync_written`).
    data_sync_failed: AtomicBool,
    /// Held by the running checkpoint: checkpoints run one at a time, so their redo points reach
    /// the log in the order they were taken (an older one written last would send recovery back to
    /// log that may be overwritten, and replay changes to pages a shrink has since cut off).
    checkpoint_lock: Mutex<()>,
    /// Checkpoints waiting for the lock: a spread checkpoint stops pacing itself while one waits.
    checkpoints_waiting: AtomicUsize,
    /// The read-ahead thread, started by the first request.
    read_ahead: OnceLock<ReadAheadWorker>,
}

#[derive(Default)]
struct FlusherState {
    stop: bool,
}

impl BufferPool {
    /// Creates the pool and, if configured, its background flusher.
    pub fn new(config: PoolConfig) -> Result<Arc<Self>> {
        page::validate_page_size(config.page_size)?;
        if config.frames < 16 {
            return Err(StorageError::Config(format!(
                "buffer pool of {} frames is too small (at least 16)",
                config.frames
            )));
        }
        let frames = (0..config.frames)
            .map(|_| Frame {
                data: RwLock::new(AlignedBuf::zeroed(config.page_size)),
                write_back: Mutex::new(()),
                pins: AtomicU32::new(0),
                key: AtomicU64::new(NO_KEY),
                version: AtomicU64::new(0),
                hot: AtomicBool::new(false),
                referenced: AtomicBool::new(false),
                read_ahead: AtomicBool::new(false),
                load: AtomicU8::new(LOADING),
                meta: Mutex::new(FrameMeta::default()),
            })
            .collect();
        let pool = Arc::new(BufferPool {
            page_size: config.page_size,
            frames,
            table: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
            clock_hand: Mutex::new(0),
            flush_list: Mutex::new(BTreeSet::new()),
            hot_count: AtomicUsize::new(0),
            hot_limit: (config.frames as f64 * HOT_FRACTION) as usize,
            max_dirty: ((config.frames as f64 * config.max_dirty_fraction) as usize).max(1),
            next_lsn: AtomicU64::new(1),
            counters: Counters::default(),
            flusher: Mutex::new(None),
            flusher_wake: Condvar::new(),
            flusher_state: Mutex::new(FlusherState::default()),
            wal: OnceLock::new(),
            doublewrite: OnceLock::new(),
            unsynced: Mutex::new(HashMap::new()),
            data_sync_failed: AtomicBool::new(false),
            checkpoint_lock: Mutex::new(()),
            checkpoints_waiting: AtomicUsize::new(0),
            read_ahead: OnceLock::new(),
        });
        if config.background_flush {
            let weak = Arc::downgrade(&pool);
            let handle = std::thread::Builder::new()
                .name("steady-flusher".into())
                .spawn(move || run_flusher(weak))
                .map_err(|e| StorageError::io("starting the page flusher", e))?;
            *pool.flusher.lock() = Some(handle);
        }
        Ok(pool)
    }

    pub fn page_size(&self) -> usize {
        self.page_size
    }

    /// Connects the redo log: from now on every change is logged before it can reach a data file.
    pub fn attach_wal(&self, wal: Arc<Wal>) {
        if self.wal.set(wal).is_err() {
            panic!("a redo log is already attached to this buffer pool");
        }
    }

    /// Connects the doublewrite area (before recovery replays the log, whose pages it protects
    /// too): from now on every page reaches its file through it.
    pub fn attach_doublewrite(&self, doublewrite: Doublewrite) {
        if self.doublewrite.set(doublewrite).is_err() {
            panic!("a doublewrite area is already attached to this buffer pool");
        }
    }

    pub fn wal(&self) -> Option<&Arc<Wal>> {
        self.wal.get()
    }

    /// Makes every change up to `lsn` durable (a no-op without a redo log).
    pub fn make_durable(&self, lsn: Lsn) -> Result<()> {
        match self.wal() {
            Some(wal) => wal.flush(lsn),
            None => Ok(()),
        }
    }

    /// Called before a mini-transaction starts, with no page latched: if the log is nearly full,
    /// waits while the flusher checkpoints, or checkpoints itself when no flusher runs (a writer
    /// never overwrites log that recovery still needs). Fails when that checkpoint fails, or once
    /// a sync of a data file has failed: no checkpoint can free the log until a restart, and the
    /// writer would wait forever.
    pub(crate) fn reserve_log(&self) -> Result<()> {
        let Some(wal) = self.wal() else {
            return Ok(());
        };
        while wal.checkpoint_age() > wal.capacity() / 4 * 3 {
            self.refuse_after_failed_sync()?;
            if self.flusher.lock().is_none() {
                self.checkpoint()?;
                continue;
            }
            self.flusher_wake.notify_one();
            wal.wait_for_room((wal.capacity() / 4) as usize, Duration::from_millis(10));
        }
        Ok(())
    }

    pub fn frame_count(&self) -> usize {
        self.frames.len()
    }

    /// Pins `page_no` of `space` and latches it for reading, loading it on a miss.
    pub fn fetch_read(
        &self,
        space: &Arc<Space>,
        page_no: PageNo,
        hint: AccessHint,
    ) -> Result<PageReadGuard<'_>> {
        let frame_id = self.pin_page(space, page_no, hint, Load::Read)?;
        let data = self.frames[frame_id].data.read();
        Ok(PageReadGuard {
            pool: self,
            frame_id,
            page_no,
            data: Some(data),
        })
    }

    /// Pins `page_no` of `space` and latches it for writing, loading it on a miss.
    pub fn fetch_write(&self, space: &Arc<Space>, page_no: PageNo) -> Result<PageWriteGuard<'_>> {
        let frame_id = self.pin_page(space, page_no, AccessHint::Normal, Load::Read)?;
        Ok(self.write_guard(space, frame_id, page_no))
    }

    /// Pins and write-latches a frame for a freshly allocated page without reading it; the caller
    /// formats it. Any cached copy of the page is reused.
    pub fn create_page(&self, space: &Arc<Space>, page_no: PageNo) -> Result<PageWriteGuard<'_>> {
        let frame_id = self.pin_page(space, page_no, AccessHint::Normal, Load::Zero)?;
        let mut guard = self.write_guard(space, frame_id, page_no);
        guard.fresh = true;
        guard.data.as_mut().expect("latched until drop").fill(0);
        Ok(guard)
    }

    fn write_guard(
        &self,
        space: &Arc<Space>,
        frame_id: FrameId,
        page_no: PageNo,
    ) -> PageWriteGuard<'_> {
        let data = self.frames[frame_id].data.write();
        PageWriteGuard {
            pool: self,
            frame_id,
            space_id: space.id(),
            page_no,
            data: Some(data),
            modified: false,
            fresh: false,
            changes: Changes::Clean,
        }
    }

    /// Replays one logged page change during recovery (before the log is attached): a full image or
    /// a zeroed page's bytes are installed without reading the page; other changes are applied to
    /// the page read from disk (whole: the doublewrite area put back any torn one) unless it
    /// already carries this record's LSN.
    pub fn redo_change(
        &self,
        space: &Arc<Space>,
        change: &redo::PageChange,
        end_lsn: Lsn,
    ) -> Result<()> {
        let mut guard = if change.body.is_self_contained() {
            self.create_page(space, change.page)?
        } else {
            self.fetch_write(space, change.page)?
        };
        if page::Page::new(&guard).lsn() < end_lsn {
            redo::apply(&change.body, guard.page_mut(), end_lsn).map_err(|_| {
                StorageError::corrupt(
                    space.id(),
                    change.page,
                    "a redo record's page operations do not fit the page".to_owned(),
                )
            })?;
            guard.mark_dirty(end_lsn);
            guard.commit_changes(end_lsn);
        }
        Ok(())
    }

    /// The frame holding a current copy of the page, if any (no pin is taken).
    fn lookup(&self, space: &Space, page_no: PageNo) -> Option<FrameId> {
        let key = page_key(space.id(), page_no);
        let shard = self.table[shard_of(key)].lock();
        let &frame_id = shard.get(&key)?;
        (self.frames[frame_id].version.load(Ordering::Acquire) == space.version())
            .then_some(frame_id)
    }

    /// Whether a current copy of the page is cached.
    pub fn contains(&self, space: &Space, page_no: PageNo) -> bool {
        self.lookup(space, page_no).is_some()
    }

    fn pin_page(
        &self,
        space: &Arc<Space>,
        page_no: PageNo,
        hint: AccessHint,
        load: Load,
    ) -> Result<FrameId> {
        self.counters.read_requests.add(1);
        let key = page_key(space.id(), page_no);
        loop {
            let version = space.version();
            if space.is_hidden() {
                return Err(StorageError::SpaceDropped(space.id()));
            }
            {
                let shard = self.table[shard_of(key)].lock();
                if let Some(&frame_id) = shard.get(&key) {
                    let frame = &self.frames[frame_id];
                    if frame.version.load(Ordering::Acquire) == version {
                        frame.pins.fetch_add(1, Ordering::AcqRel);
                        drop(shard);
                        if self.wait_loaded(frame_id) {
                            let read_ahead = frame.read_ahead.load(Ordering::Relaxed)
                                && frame.read_ahead.swap(false, Ordering::Relaxed);
                            count_thread_io(1, 0, u64::from(read_ahead));
                            self.note_hit(frame, hint);
                            return Ok(frame_id);
                        }
                        continue;
                    }
                }
            }
            if let Some(frame_id) = self.load_page(space, page_no, key, version, hint, load)? {
                return Ok(frame_id);
            }
        }
    }

    /// Waits for a concurrent load of a pinned frame; false (and unpinned) if that load failed.
    /// A recursive read is used so that a thread already holding this page's read latch cannot
    /// deadlock behind a queued writer here.
    fn wait_loaded(&self, frame_id: FrameId) -> bool {
        let frame = &self.frames[frame_id];
        if frame.load.load(Ordering::Acquire) == LOADED {
            return true;
        }
        drop(frame.data.read_recursive());
        if frame.load.load(Ordering::Acquire) == LOAD_FAILED {
            self.unpin(frame_id);
            return false;
        }
        true
    }

    fn note_hit(&self, frame: &Frame, hint: AccessHint) {
        if hint == AccessHint::Scan {
            return;
        }
        if !frame.referenced.load(Ordering::Relaxed) {
            frame.referenced.store(true, Ordering::Relaxed);
        }
        if !frame.hot.load(Ordering::Relaxed) && !frame.hot.swap(true, Ordering::AcqRel) {
            self.hot_count.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Loads a page into a victim frame; `None` if another thread mapped the page meanwhile.
    fn load_page(
        &self,
        space: &Arc<Space>,
        page_no: PageNo,
        key: u64,
        version: u64,
        hint: AccessHint,
        load: Load,
    ) -> Result<Option<FrameId>> {
        let frame_id = self.claim_victim()?;
        let Some(mut data) = self.map_frame(frame_id, space, key, version) else {
            return Ok(None);
        };
        let loaded = match load {
            Load::Zero => {
                data.fill(0);
                Ok(())
            }
            Load::Read => self.read_page(space, page_no, &mut data),
        };
        self.end_load(frame_id, key, data, loaded, hint, false)?;
        Ok(Some(frame_id))
    }

    /// Maps a claimed frame (pinned once, unmapped) to the page `key` and returns the frame's
    /// write latch, which the loader holds until the page's bytes are in: anyone who finds the
    /// frame meanwhile pins it and waits on the latch. `None` (and the frame released) if another
    /// thread mapped the page first.
    fn map_frame(
        &self,
        frame_id: FrameId,
        space: &Arc<Space>,
        key: u64,
        version: u64,
    ) -> Option<RwLockWriteGuard<'_, AlignedBuf>> {
        let frame = &self.frames[frame_id];
        let data = frame.data.write();
        let mut shard = self.table[shard_of(key)].lock();
        if let Some(&other) = shard.get(&key) {
            if self.frames[other].version.load(Ordering::Acquire) == version {
                frame.pins.store(0, Ordering::Release);
                return None;
            }
        }
        frame.key.store(key, Ordering::Release);
        frame.version.store(version, Ordering::Release);
        *frame.meta.lock() = FrameMeta {
            space: Some(space.clone()),
            oldest_lsn: 0,
        };
        frame.load.store(LOADING, Ordering::Release);
        shard.insert(key, frame_id);
        Some(data)
    }

    /// Ends the load of a mapped frame, releasing its latch: on failure the page is unmapped, its
    /// waiters learn it failed, the frame is unpinned and the error returned; on success the
    /// frame stays pinned for the loader.
    fn end_load(
        &self,
        frame_id: FrameId,
        key: u64,
        data: RwLockWriteGuard<'_, AlignedBuf>,
        loaded: Result<()>,
        hint: AccessHint,
        read_ahead: bool,
    ) -> Result<()> {
        let frame = &self.frames[frame_id];
        if let Err(err) = loaded {
            self.forget_frame(frame_id, key);
            frame.load.store(LOAD_FAILED, Ordering::Release);
            drop(data);
            self.unpin(frame_id);
            return Err(err);
        }
        frame.hot.store(false, Ordering::Relaxed);
        frame
            .referenced
            .store(hint == AccessHint::Normal, Ordering::Relaxed);
        frame.read_ahead.store(read_ahead, Ordering::Relaxed);
        frame.load.store(LOADED, Ordering::Release);
        drop(data);
        Ok(())
    }

    fn read_page(&self, space: &Space, page_no: PageNo, buf: &mut [u8]) -> Result<()> {
        self.counters.reads.fetch_add(1, Ordering::Relaxed);
        count_thread_io(0, 1, 0);
        space.read_page(page_no, buf)?;
        page::verify(buf, space.id(), page_no)
    }

    /// Removes the table entry of `key` if it still maps to `frame_id`.
    fn forget_frame(&self, frame_id: FrameId, key: u64) {
        let mut shard = self.table[shard_of(key)].lock();
        if shard.get(&key) == Some(&frame_id) {
            shard.remove(&key);
        }
    }

    /// Finds a frame to reuse and returns it pinned once, unmapped and clean. When every frame is
    /// pinned, waits for other threads to unpin some (up to [`PIN_WAIT`]) before giving up.
    fn claim_victim(&self) -> Result<FrameId> {
        let deadline = std::time::Instant::now() + PIN_WAIT;
        loop {
            if let Some(frame_id) = self.try_claim_victim(CLOCK_PASSES)? {
                return Ok(frame_id);
            }
            if std::time::Instant::now() >= deadline {
                return Err(StorageError::PoolExhausted {
                    frames: self.frames.len(),
                });
            }
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// One look for a victim: up to `passes` turns of the clock (see [`BufferPool::try_claim`]).
    fn try_claim_victim(&self, passes: usize) -> Result<Option<FrameId>> {
        let frames = self.frames.len();
        for pass in 0..passes {
            for _ in 0..frames {
                let frame_id = {
                    let mut hand = self.clock_hand.lock();
                    let id = *hand;
                    *hand = (id + 1) % frames;
                    id
                };
                match self.try_claim(frame_id, pass) {
                    Claim::Taken => return Ok(Some(frame_id)),
                    Claim::Dirty if pass >= 2 => self.write_back(frame_id)?,
                    Claim::Dirty | Claim::Skip => {}
                }
            }
        }
        Ok(None)
    }

    /// Claims the frame if the clock's `pass` may take it: at pass 0 a clean cold frame that is
    /// not a read-ahead page waiting for its reader (hot frames spend their second chance); at
    /// pass 1 also those read-ahead pages and hot frames whose chance is spent; from pass 2 on,
    /// dirty frames are written back.
    fn try_claim(&self, frame_id: FrameId, pass: usize) -> Claim {
        let frame = &self.frames[frame_id];
        if frame.pins.load(Ordering::Acquire) > 0
            || (pass == 0 && frame.read_ahead.load(Ordering::Relaxed))
        {
            return Claim::Skip;
        }
        let key = frame.key.load(Ordering::Acquire);
        let reusable_now = {
            let Some(meta) = frame.meta.try_lock() else {
                return Claim::Skip;
            };
            match &meta.space {
                None => true,
                Some(space)
                    if frame.load.load(Ordering::Acquire) == LOAD_FAILED
                        || space.version() != frame.version.load(Ordering::Acquire) =>
                {
                    true
                }
                Some(_) if meta.oldest_lsn != 0 => return Claim::Dirty,
                Some(_) => false,
            }
        };
        if !reusable_now && !self.second_chance_spent(frame, pass) {
            return Claim::Skip;
        }
        let mut shard = (key != NO_KEY).then(|| self.table[shard_of(key)].lock());
        if frame.pins.load(Ordering::Acquire) > 0 || frame.key.load(Ordering::Acquire) != key {
            return Claim::Skip;
        }
        let mut meta = frame.meta.lock();
        if meta.oldest_lsn != 0 && !reusable_now {
            return Claim::Dirty;
        }
        if meta.oldest_lsn != 0 {
            self.flush_list.lock().remove(&(meta.oldest_lsn, frame_id));
        }
        if let Some(shard) = shard.as_mut() {
            if shard.get(&key) == Some(&frame_id) {
                shard.remove(&key);
            }
        }
        if meta.space.is_some() && frame.load.load(Ordering::Acquire) != LOAD_FAILED {
            self.counters.evictions.fetch_add(1, Ordering::Relaxed);
        }
        if frame.read_ahead.swap(false, Ordering::Relaxed) {
            self.counters
                .read_ahead_wasted
                .fetch_add(1, Ordering::Relaxed);
        }
        *meta = FrameMeta::default();
        frame.key.store(NO_KEY, Ordering::Release);
        if frame.hot.swap(false, Ordering::AcqRel) {
            self.hot_count.fetch_sub(1, Ordering::Relaxed);
        }
        frame.pins.store(1, Ordering::Release);
        Claim::Taken
    }

    /// The clock's judgement on a valid, clean, unpinned frame: true when it may be evicted now.
    fn second_chance_spent(&self, frame: &Frame, pass: usize) -> bool {
        if frame.hot.load(Ordering::Relaxed) {
            if frame.referenced.swap(false, Ordering::Relaxed) {
                return false;
            }
            if self.hot_count.load(Ordering::Relaxed) > self.hot_limit
                && frame.hot.swap(false, Ordering::AcqRel)
            {
                self.hot_count.fetch_sub(1, Ordering::Relaxed);
                return false;
            }
            return pass >= 1;
        }
        true
    }

    fn unpin(&self, frame_id: FrameId) {
        let previous = self.frames[frame_id].pins.fetch_sub(1, Ordering::AcqRel);
        debug_assert!(previous > 0, "unpin of an unpinned frame");
    }

    /// A new LSN for a modification. The redo log will supply these once it exists; until then the
    /// sequence only orders the flush list.
    pub fn next_lsn(&self) -> Lsn {
        self.next_lsn.fetch_add(1, Ordering::Relaxed)
    }

    /// Current counters.
    pub fn stats(&self) -> PoolStats {
        let c = &self.counters;
        PoolStats {
            frames: self.frames.len(),
            read_requests: c.read_requests.sum(),
            reads: c.reads.load(Ordering::Relaxed),
            read_ahead_reads: c.read_ahead_reads.load(Ordering::Relaxed),
            read_ahead_wasted: c.read_ahead_wasted.load(Ordering::Relaxed),
            pages_written: c.pages_written.load(Ordering::Relaxed),
            evictions: c.evictions.load(Ordering::Relaxed),
            dirty_pages: self.flush_list.lock().len(),
            hot_pages: self.hot_count.load(Ordering::Relaxed),
        }
    }
}

impl Drop for BufferPool {
    fn drop(&mut self) {
        self.stop_flusher();
        if let Some(worker) = self.read_ahead.take() {
            worker.stop();
        }
    }
}

#[derive(Clone, Copy)]
enum Load {
    Read,
    Zero,
}

enum Claim {
    Taken,
    Dirty,
    Skip,
}

/// A pinned, read-latched page.
pub struct PageReadGuard<'a> {
    pool: &'a BufferPool,
    frame_id: FrameId,
    page_no: PageNo,
    data: Option<RwLockReadGuard<'a, AlignedBuf>>,
}

impl PageReadGuard<'_> {
    pub fn page_no(&self) -> PageNo {
        self.page_no
    }
}

impl Deref for PageReadGuard<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.data.as_ref().expect("latched until drop")
    }
}

impl Drop for PageReadGuard<'_> {
    fn drop(&mut self) {
        self.data.take();
        self.pool.unpin(self.frame_id);
    }
}

/// What a write guard knows of the changes made through it, for its redo.
enum Changes {
    /// Nothing changed yet.
    Clean,
    /// Every change went through [`PageWriteGuard::edit`], which logged these operations.
    Ops(PageOps),
    /// The page was changed as raw bytes; this is a copy of it from before the first change, to
    /// diff against at commit (kept only with a redo log).
    Before(Box<[u8]>),
    /// Raw changes after recorded ones: nothing to diff against, so the page is logged whole.
    Whole,
}

/// A pinned, write-latched page. Changes made through [`PageWriteGuard::edit`] (logged page
/// operations) or [`PageWriteGuard::page_mut`] (raw bytes) make the page dirty when the guard is
/// committed by its mini-transaction (or, failing that, when it is dropped).
///
/// Redo of a guard's changes ([`PageWriteGuard::encode_redo`]): a fresh page is logged as "zeroed,
/// then these bytes" (its non-zero bytes); any other page as its logged operations (unless they
/// outweigh the page), or the ranges that differ from the copy taken before the first raw change.
/// No page is logged whole for torn-page protection: the doublewrite area gives that.
pub struct PageWriteGuard<'a> {
    pool: &'a BufferPool,
    frame_id: FrameId,
    space_id: SpaceId,
    page_no: PageNo,
    data: Option<RwLockWriteGuard<'a, AlignedBuf>>,
    modified: bool,
    /// A freshly allocated page: it was zeroed, and its redo says so.
    fresh: bool,
    changes: Changes,
}

impl PageWriteGuard<'_> {
    pub fn page_no(&self) -> PageNo {
        self.page_no
    }

    pub fn space_id(&self) -> SpaceId {
        self.space_id
    }

    /// Whether the page was changed through this guard.
    pub fn is_modified(&self) -> bool {
        self.modified
    }

    /// The page bytes, for changing them as raw bytes (redo then compares the page with a copy).
    /// Prefer [`PageWriteGuard::edit`].
    pub fn page_mut(&mut self) -> &mut [u8] {
        self.modified = true;
        let data = self.data.as_mut().expect("latched until drop");
        let logged = self.pool.wal.get().is_some();
        match self.changes {
            Changes::Clean if logged && !self.fresh => {
                self.changes = Changes::Before(Box::from(&data[..]));
            }
            Changes::Ops(_) => self.changes = Changes::Whole,
            Changes::Clean | Changes::Before(_) | Changes::Whole => {}
        }
        data
    }

    /// The page for changing it through [`PageMut`]'s operations, which are logged as such.
    pub fn edit(&mut self) -> PageMut<'_> {
        self.modified = true;
        let data = self.data.as_mut().expect("latched until drop");
        if matches!(self.changes, Changes::Clean) {
            self.changes = Changes::Ops(PageOps::default());
        }
        match &mut self.changes {
            Changes::Ops(ops) => PageMut::logged(data, ops),
            _ => PageMut::new(data),
        }
    }

    /// Appends this page's redo to a record payload (see the type's doc). Returns whether it logged
    /// a full image.
    pub(crate) fn encode_redo(&self, out: &mut Vec<u8>) -> bool {
        let page: &[u8] = self;
        if self.fresh {
            match &self.changes {
                Changes::Ops(ops) if !ops.raw && ops.bytes.len() < page.len() / 2 => {
                    redo::encode_rebuilt(out, self.space_id, self.page_no, &ops.bytes)
                }
                _ => redo::encode_zeroed(out, self.space_id, self.page_no, page),
            }
            return false;
        }
        match &self.changes {
            Changes::Ops(ops) if !ops.raw && ops.bytes.len() < page.len() / 2 => {
                redo::encode_ops(out, self.space_id, self.page_no, &ops.bytes)
            }
            Changes::Before(before) => {
                redo::encode_diff(out, self.space_id, self.page_no, before, page)
            }
            Changes::Clean | Changes::Whole | Changes::Ops(_) => {
                self.encode_image(out);
                return true;
            }
        }
        false
    }

    /// Appends a self-contained image of the page: a B+tree page changed only through operations
    /// as the operations that rebuild it (`PageOps::image_of`), any other page whole.
    fn encode_image(&self, out: &mut Vec<u8>) {
        let page: &[u8] = self;
        let by_ops = matches!(&self.changes, Changes::Ops(ops) if !ops.raw);
        let slotted = matches!(
            page::Page::new(page).page_type(),
            page::PageType::Leaf | page::PageType::Branch
        );
        if by_ops && slotted {
            let ops = page::PageOps::image_of(page);
            redo::encode_rebuilt(out, self.space_id, self.page_no, &ops.bytes);
        } else {
            redo::encode_full(out, self.space_id, self.page_no, page);
        }
    }

    /// Logs a freshly created page now (into `out`) and marks it dirty, so the mini-transaction can
    /// release it before it commits. Only for pages nothing can reach until that commit: if the page
    /// reaches disk first, it is an unreferenced free page.
    ///
    /// The page is stamped with the log's current LSN, which is at most the start of the record that
    /// will carry it. That stamp is what makes it safe on disk: recovery skips the records of the
    /// page's previous life (all below it) instead of replaying them onto the new contents, and
    /// writing the page first makes the log durable up to it, so the record that freed the page is
    /// never lost while the page is overwritten.
    pub(crate) fn spill_fresh(&mut self, out: &mut Vec<u8>) {
        assert!(self.fresh, "only a freshly created page can be spilled");
        self.encode_redo(out);
        let provisional = match self.pool.wal() {
            Some(wal) => wal.current_lsn(),
            None => self.pool.next_lsn(),
        };
        PageMut::new(self.data.as_mut().expect("latched until drop")).set_lsn(provisional);
        self.pool.mark_dirty(self.frame_id, provisional);
        self.modified = false;
    }

    /// Puts the page on the flush list as of `lsn` (with a redo log, the start of the record that
    /// logs its change), if it is not there already.
    pub(crate) fn mark_dirty(&self, lsn: Lsn) {
        self.pool.mark_dirty(self.frame_id, lsn);
    }

    /// Stamps `lsn` into a modified page; called by the mini-transaction at commit, after it put
    /// the page on the flush list ([`PageWriteGuard::mark_dirty`]).
    pub(crate) fn commit_changes(&mut self, lsn: Lsn) {
        if !self.modified {
            return;
        }
        PageMut::new(self.data.as_mut().expect("latched until drop")).set_lsn(lsn);
        self.modified = false;
        self.fresh = false;
        self.changes = Changes::Clean;
    }
}

impl Deref for PageWriteGuard<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.data.as_ref().expect("latched until drop")
    }
}

impl Drop for PageWriteGuard<'_> {
    fn drop(&mut self) {
        if self.modified {
            let pool = self.pool;
            crate::mtr::commit_guards(pool, &[], std::iter::once(&mut *self));
        }
        self.data.take();
        self.pool.unpin(self.frame_id);
    }
}
