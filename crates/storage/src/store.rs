//! A data directory: the system space, the table spaces, and the buffer pool they share.
//!
//! ```text
//! steady-data/
//!   space_000000.sdb           system space (catalog and history store, later issues)
//!   space_000001.sdb           one file per table: its clustered index and secondary indexes
//!   space_000007.sdb.dropped   the file of a dropped space, being shrunk and removed (trash)
//!   redo.log                   the redo log
//! ```
//!
//! The page size is chosen when the directory is created and read back from the system space's
//! header afterwards; a configured page size that disagrees with an existing directory is an error.
//! Invariant: every open space is registered here exactly once, under its id.
//!
//! # Dropping a space (seed 004)
//!
//! Removing a large file stalls this kind of disk: `rm` of a 3 GiB file takes over a second on
//! ext4, and a concurrent fdatasync waits up to 190 ms meanwhile. So [`Store::drop_space`] does O(1)
//! work and leaves the file to the **reclaimer**, a background thread of the store:
//!
//! ```text
//!  drop_space (foreground)                          reclaimer (background)
//!  leave the map, mark dropped (version bump)
//!  rename space_N.sdb -> space_N.sdb.dropped,  -->  set_len(len - slice), pause, ... set_len(0),
//!  sync the directory                               remove the file, sync the directory
//! ```
//!
//! 1. The space leaves the map and is marked dropped: its cached pages are invalid at once through
//!    the space version (no pool scan), are never written back, and any further access fails.
//! 2. The rename to the trash name, made durable by syncing the directory, *is* the drop: after it
//!    no open or recovery sees the space again. It needs no log record.
//! 3. The reclaimer, at a lowered thread priority, shrinks the trash file with `ftruncate` in slices
//!    of [`StoreConfig::reclaim_slice_bytes`] (8 MiB: a few ms of kernel time each here, where
//!    64 MiB slices took 18-44 ms and showed up in concurrent query latency), pausing
//!    [`StoreConfig::reclaim_pause`] between them, so the file system frees the blocks in bounded
//!    steps; then it removes the empty file.
//!
//! Invariants:
//! * A trash file is never a space: [`Space::id_from_file_name`] does not match the `.dropped`
//!   suffix, so open, `check` and recovery ignore it (recovery skips the redo of spaces without a
//!   file).
//! * The reclaimer holds no lock a query or the buffer pool needs: only its own queue's mutex, and
//!   never across I/O. Neither do `drop_space` and `create_space_at`: the map of spaces is
//!   locked only to take a space out or put one in, never across a rename, a file creation or a
//!   sync.
//! * A crash or a close in the middle leaves a (shorter) trash file; [`Store::open`] hands every
//!   trash file it finds to the reclaimer once recovery is done.
//! * Within a process a space id is never handed out twice, and never while a file or trash file of
//!   that id exists: the log may still hold records of a dropped space until the next checkpoint,
//!   and recovery would replay them into a new space of the same id. After a restart an id whose
//!   files are all gone may come back, as recovery has checkpointed past every record of the old
//!   space.

use std::collections::{BTreeMap, VecDeque};
use std::io;
use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use parking_lot::{Condvar, Mutex, RwLock};

use crate::btree;
use crate::buffer_pool::doublewrite::Doublewrite;
use crate::buffer_pool::{BufferPool, PoolConfig, PoolStats};
use crate::io::{OsVfs, Vfs};
use crate::page::DEFAULT_PAGE_SIZE;
use crate::redo;
use crate::space::{Space, CREATING_SUFFIX};
use crate::wal::{Wal, WalStats, LOG_FILE};
use crate::{Result, SpaceId, StorageError};

/// The space holding the catalog.
pub const SYSTEM_SPACE: SpaceId = 0;

/// The open spaces of a directory, by id.
type SpaceMap = BTreeMap<SpaceId, Arc<Space>>;

/// Suffix of a dropped space's file name until the reclaimer has removed it.
const TRASH_SUFFIX: &str = ".dropped";

/// How to open or create a data directory.
#[derive(Debug, Clone)]
pub struct StoreConfig {
    /// Page size of a new directory; an existing directory keeps the one it was created with.
    pub page_size: usize,
    /// Memory budget of the buffer pool in bytes.
    pub buffer_pool_bytes: usize,
    /// Open files with O_DIRECT (bypassing the OS page cache).
    pub direct_io: bool,
    /// Run the background flusher.
    pub background_flush: bool,
    /// Size of the redo log of a new directory, in bytes (default 1 GiB: a checkpoint starts at half
    /// of it, and with a 256 MiB log the full page images after each checkpoint were most of the
    /// log written under a write-heavy load).
    pub log_capacity: u64,
    /// Bytes the reclaimer cuts off a dropped space's file at a time (more than 0).
    pub reclaim_slice_bytes: u64,
    /// The reclaimer's pause between two slices, which spreads the file system's work out.
    pub reclaim_pause: Duration,
    /// Told how far crash recovery has gone, when the directory needs it.
    pub recovery_watch: RecoveryWatch,
}

/// How far crash recovery has replayed the redo log (after reading it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecoveryProgress {
    pub records_done: u64,
    pub records_total: u64,
    /// Bytes of log records after the last checkpoint.
    pub log_bytes: u64,
}

/// A function told of recovery's progress: once with nothing done, then at most every
/// [`RecoveryWatch::EVERY`] records and once at the end. None by default.
#[derive(Clone, Default)]
pub struct RecoveryWatch(Option<Arc<dyn Fn(RecoveryProgress) + Send + Sync>>);

impl RecoveryWatch {
    /// Records replayed between two reports.
    pub const EVERY: u64 = 4096;

    pub fn new(watch: impl Fn(RecoveryProgress) + Send + Sync + 'static) -> Self {
        RecoveryWatch(Some(Arc::new(watch)))
    }

    fn report(&self, progress: RecoveryProgress) {
        if let Some(watch) = &self.0 {
            watch(progress);
        }
    }
}

impl std::fmt::Debug for RecoveryWatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "RecoveryWatch(set)"
        } else {
            "RecoveryWatch(none)"
        })
    }
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            page_size: DEFAULT_PAGE_SIZE,
            buffer_pool_bytes: 128 << 20,
            direct_io: false,
            background_flush: true,
            log_capacity: 1 << 30,
            reclaim_slice_bytes: 8 << 20,
            reclaim_pause: Duration::from_millis(10),
            recovery_watch: RecoveryWatch::default(),
        }
    }
}

/// An open data directory.
pub struct Store {
    vfs: Arc<dyn Vfs>,
    pool: Arc<BufferPool>,
    spaces: RwLock<SpaceMap>,
    /// The lowest id `create_space` may hand out; only grows, under the write lock of `spaces`.
    next_id: AtomicU32,
    reclaimer: Reclaimer,
}

/// Counters of the reclaimer, which shrinks and removes the files of dropped spaces.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReclaimStats {
    /// Trash files queued or being shrunk (a file abandoned at close stays counted).
    pub pending: usize,
    /// Trash files removed.
    pub files_reclaimed: u64,
    /// Bytes cut off trash files.
    pub bytes_reclaimed: u64,
    /// Trash files given up after an I/O error; the next open retries them.
    pub failures: u64,
}

impl Store {
    /// Opens the directory at `dir` on the real file system, creating it if needed.
    pub fn open_dir(dir: &Path, config: &StoreConfig) -> Result<Store> {
        let vfs = OsVfs::new(dir, config.direct_io).map_err(|e| {
            StorageError::io(format!("opening data directory {}", dir.display()), e)
        })?;
        Self::open(Arc::new(vfs), config)
    }

    /// Opens the data directory behind `vfs`, creating it if it is new and recovering it from the
    /// redo log otherwise. Trash files left by an interrupted drop go to the reclaimer once
    /// recovery is done.
    pub fn open(vfs: Arc<dyn Vfs>, config: &StoreConfig) -> Result<Store> {
        let (mut spaces, trash) = scan_directory(vfs.as_ref())?;
        let system = match spaces.get(&SYSTEM_SPACE) {
            Some(system) => system.clone(),
            None if spaces.is_empty() => {
                let system = Space::create(vfs.as_ref(), SYSTEM_SPACE, config.page_size)?;
                spaces.insert(SYSTEM_SPACE, system.clone());
                system
            }
            None => {
                return Err(StorageError::Format(
                    "data directory has no system space".into(),
                ))
            }
        };
        let page_size = system.page_size();
        if let Some(other) = spaces.values().find(|s| s.page_size() != page_size) {
            return Err(StorageError::Format(format!(
                "space {} has page size {}, the database uses {page_size}",
                other.id(),
                other.page_size()
            )));
        }
        let mut pool_config = PoolConfig::with_budget(page_size, config.buffer_pool_bytes);
        pool_config.background_flush = config.background_flush;
        let pool = BufferPool::new(pool_config)?;
        let doublewrite = Doublewrite::open(vfs.as_ref(), page_size)?;
        if vfs.exists(LOG_FILE) {
            let restored = doublewrite.restore_torn(&spaces)?;
            if restored > 0 {
                tracing::info!(
                    "{restored} pages whose write the crash interrupted restored from the doublewrite area"
                );
            }
            pool.attach_doublewrite(doublewrite);
            recover(vfs.as_ref(), &pool, &spaces, &config.recovery_watch)?;
        } else {
            pool.attach_doublewrite(doublewrite);
            pool.attach_wal(Arc::new(Wal::create(vfs.as_ref(), config.log_capacity)?));
        }
        if let (true, Some(wal)) = (config.background_flush, pool.wal()) {
            wal.start_writer()?;
        }
        for space in spaces.values() {
            space.load_allocation()?;
            btree::discard_unfinished_builds(&pool, space)?;
        }
        let last_id = spaces.keys().chain(&trash).max().copied();
        let reclaimer = Reclaimer::start(vfs.clone(), config)?;
        for &id in &trash {
            reclaimer.queue.push(trash_name(id));
        }
        Ok(Store {
            vfs,
            pool,
            spaces: RwLock::new(spaces),
            next_id: AtomicU32::new(last_id.map_or(SYSTEM_SPACE, |id| id + 1)),
            reclaimer,
        })
    }

    /// Counters of the redo log.
    pub fn wal_stats(&self) -> WalStats {
        self.pool.wal().map(|wal| wal.stats()).unwrap_or_default()
    }

    /// Makes every change made so far durable (one group-committed log flush).
    pub fn sync_log(&self) -> Result<()> {
        match self.pool.wal() {
            Some(wal) => wal.flush_all(),
            None => Ok(()),
        }
    }

    /// For background writers (purge), at the end of their work: syncs the log when much of it
    /// waits for a sync ([`Wal::flush_if_behind`]).
    pub fn sync_log_if_behind(&self) -> Result<()> {
        match self.pool.wal() {
            Some(wal) => wal.flush_if_behind(),
            None => Ok(()),
        }
    }

    /// For bulk writers, between mini-transactions: lets waiting commits sync first
    /// ([`Wal::yield_to_commits`]).
    pub fn yield_log_to_commits(&self) {
        if let Some(wal) = self.pool.wal() {
            wal.yield_to_commits();
        }
    }

    pub fn pool(&self) -> &Arc<BufferPool> {
        &self.pool
    }

    pub fn vfs(&self) -> &Arc<dyn Vfs> {
        &self.vfs
    }

    pub fn page_size(&self) -> usize {
        self.pool.page_size()
    }

    pub fn pool_stats(&self) -> PoolStats {
        self.pool.stats()
    }

    /// The open space `id`.
    pub fn space(&self, id: SpaceId) -> Option<Arc<Space>> {
        self.spaces.read().get(&id).cloned()
    }

    /// All open spaces, by id.
    pub fn spaces(&self) -> Vec<Arc<Space>> {
        self.spaces.read().values().cloned().collect()
    }

    /// Creates a new, empty space with an id never handed out before by this store and with no file
    /// or trash file in the directory.
    pub fn create_space(&self) -> Result<Arc<Space>> {
        self.create_space_at(self.reserve_space_id())
    }

    /// An id no space has or had (no file, live or in the trash, carries it) and no other call
    /// returns, for [`Store::create_space_at`]: a caller can log it before the file exists.
    pub fn reserve_space_id(&self) -> SpaceId {
        let _spaces = self.spaces.write();
        let mut id = self.next_id.load(Ordering::Relaxed);
        while self.vfs.exists(&Space::file_name(id)) || self.vfs.exists(&trash_name(id)) {
            id += 1;
        }
        self.next_id.store(id + 1, Ordering::Relaxed);
        id
    }

    /// Creates the space of a reserved id.
    pub fn create_space_at(&self, id: SpaceId) -> Result<Arc<Space>> {
        // The file is made outside the map's lock, which every space lookup takes; the reserved
        // id is this caller's alone.
        let space = Space::create(self.vfs.as_ref(), id, self.page_size())?;
        self.spaces.write().insert(id, space.clone());
        Ok(space)
    }

    /// Drops a space in O(1): its cached pages become invalid at once (no pool scan) and its file
    /// is durably renamed to the trash name; the reclaimer shrinks and removes it in the
    /// background. If syncing the directory fails, the trash file waits for the next open.
    pub fn drop_space(&self, id: SpaceId) -> Result<()> {
        if id == SYSTEM_SPACE {
            return Err(StorageError::Config(
                "the system space cannot be dropped".into(),
            ));
        }
        let trash = trash_name(id);
        // The rename runs outside the map's lock, which every space lookup takes.
        let space = self
            .spaces
            .write()
            .remove(&id)
            .ok_or(StorageError::SpaceDropped(id))?;
        if let Err(err) = self.vfs.rename(&Space::file_name(id), &trash) {
            self.spaces.write().insert(id, space);
            return Err(StorageError::io(
                format!("renaming the file of space {id}"),
                err,
            ));
        }
        space.mark_dropped();
        self.vfs
            .sync_dir()
            .map_err(|e| StorageError::io(format!("syncing the drop of space {id}"), e))?;
        self.reclaimer.queue.push(trash);
        Ok(())
    }

    /// Counters of the reclaimer.
    pub fn reclaim_stats(&self) -> ReclaimStats {
        self.reclaimer.queue.state.lock().stats
    }

    /// Trash files not yet removed by the reclaimer.
    pub fn pending_reclaims(&self) -> usize {
        self.reclaim_stats().pending
    }

    /// Waits up to `timeout` for the reclaimer to have removed every trash file; returns whether it
    /// has.
    pub fn wait_reclaimed(&self, timeout: Duration) -> bool {
        self.reclaimer.queue.wait_idle(timeout)
    }

    /// A checkpoint (see [`BufferPool::checkpoint`]), then the extents that were free at the end
    /// of each space before it began go back to the OS (see [`Space::shrink`]).
    pub fn checkpoint(&self) -> Result<()> {
        let marks: Vec<_> = self
            .spaces()
            .into_iter()
            .map(|space| (space.tail_mark(), space))
            .collect();
        self.pool.checkpoint()?;
        for (mark, space) in marks {
            if space.shrink(mark)? > 0 {
                space.sync()?;
            }
        }
        Ok(())
    }

    /// A clean shutdown: checkpoint, then stop background work. The reclaimer (stopped when the
    /// store is dropped, closed or not) abandons the file it is shrinking; the next open finishes
    /// it.
    pub fn close(self) -> Result<()> {
        self.checkpoint()?;
        self.pool.stop_flusher();
        Ok(())
    }
}

/// The file name of dropped space `id` until the reclaimer has removed it.
fn trash_name(id: SpaceId) -> String {
    format!("{}{TRASH_SUFFIX}", Space::file_name(id))
}

/// Opens the space files of a directory (unloaded, for recovery), finds its trash files and
/// removes the files of spaces whose creation a crash interrupted.
fn scan_directory(vfs: &dyn Vfs) -> Result<(SpaceMap, Vec<SpaceId>)> {
    let mut spaces = BTreeMap::new();
    let mut trash = Vec::new();
    for name in vfs
        .list()
        .map_err(|e| StorageError::io("listing the data directory", e))?
    {
        if let Some(id) = Space::id_from_file_name(&name) {
            spaces.insert(id, Space::open_unloaded(vfs, id)?);
        } else if name.ends_with(CREATING_SUFFIX) {
            vfs.remove(&name)
                .map_err(|e| StorageError::io(format!("removing unfinished {name}"), e))?;
        } else if let Some(id) = name
            .strip_suffix(TRASH_SUFFIX)
            .and_then(Space::id_from_file_name)
        {
            trash.push(id);
        }
    }
    Ok((spaces, trash))
}

/// The reclaimer's thread; dropping it stops the thread, abandoning the file being shrunk.
struct Reclaimer {
    queue: Arc<ReclaimQueue>,
    thread: Option<JoinHandle<()>>,
}

/// Trash files waiting for the reclaimer, shared with its thread.
struct ReclaimQueue {
    vfs: Arc<dyn Vfs>,
    slice_bytes: u64,
    pause: Duration,
    state: Mutex<ReclaimState>,
    /// Wakes the thread: a file was queued or the store is closing.
    wake: Condvar,
    /// Wakes `wait_idle`: nothing is pending any more.
    idle: Condvar,
}

#[derive(Default)]
struct ReclaimState {
    files: VecDeque<String>,
    stop: bool,
    stats: ReclaimStats,
}

impl Reclaimer {
    fn start(vfs: Arc<dyn Vfs>, config: &StoreConfig) -> Result<Reclaimer> {
        if config.reclaim_slice_bytes == 0 {
            return Err(StorageError::Config(
                "reclaim_slice_bytes must be more than 0".into(),
            ));
        }
        let queue = Arc::new(ReclaimQueue {
            vfs,
            slice_bytes: config.reclaim_slice_bytes,
            pause: config.reclaim_pause,
            state: Mutex::new(ReclaimState::default()),
            wake: Condvar::new(),
            idle: Condvar::new(),
        });
        let worker = queue.clone();
        let thread = std::thread::Builder::new()
            .name("steady-reclaimer".into())
            .spawn(move || worker.run())
            .map_err(|e| StorageError::io("starting the space reclaimer", e))?;
        Ok(Reclaimer {
            queue,
            thread: Some(thread),
        })
    }
}

impl Drop for Reclaimer {
    fn drop(&mut self) {
        self.queue.state.lock().stop = true;
        self.queue.wake.notify_all();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

impl ReclaimQueue {
    fn push(&self, name: String) {
        let mut state = self.state.lock();
        state.files.push_back(name);
        state.stats.pending += 1;
        self.wake.notify_one();
    }

    fn wait_idle(&self, timeout: Duration) -> bool {
        let mut state = self.state.lock();
        self.idle
            .wait_while_for(&mut state, |s| s.stats.pending > 0, timeout);
        state.stats.pending == 0
    }

    fn run(&self) {
        lower_thread_priority();
        while let Some(name) = self.next_file() {
            let outcome = self.reclaim(&name);
            self.finish(&name, outcome);
        }
    }

    /// The next trash file, waiting for one; `None` once the store is closing.
    fn next_file(&self) -> Option<String> {
        let mut state = self.state.lock();
        self.wake
            .wait_while(&mut state, |s| !s.stop && s.files.is_empty());
        if state.stop {
            return None;
        }
        state.files.pop_front()
    }

    /// Cuts trash file `name` down slice by slice, then removes it. `Ok(false)`: the store is
    /// closing and the file was abandoned.
    fn reclaim(&self, name: &str) -> io::Result<bool> {
        let file = self.vfs.open(name, false)?;
        let mut len = file.file_len()?;
        while len > 0 {
            let shorter = len.saturating_sub(self.slice_bytes);
            file.set_len(shorter)?;
            self.state.lock().stats.bytes_reclaimed += len - shorter;
            len = shorter;
            if len > 0 && !self.pause_unless_stopped() {
                return Ok(false);
            }
        }
        drop(file);
        self.vfs.remove(name)?;
        self.vfs.sync_dir()?;
        Ok(true)
    }

    /// Waits the pause between two slices; false if the store is closing.
    fn pause_unless_stopped(&self) -> bool {
        let mut state = self.state.lock();
        self.wake
            .wait_while_for(&mut state, |s| !s.stop, self.pause);
        !state.stop
    }

    fn finish(&self, name: &str, outcome: io::Result<bool>) {
        let mut state = self.state.lock();
        match outcome {
            Ok(false) => return,
            Ok(true) => state.stats.files_reclaimed += 1,
            Err(err) => {
                tracing::error!("reclaiming {name} failed, the next open retries it: {err}");
                state.stats.failures += 1;
            }
        }
        state.stats.pending -= 1;
        if state.stats.pending == 0 {
            self.idle.notify_all();
        }
    }
}

/// Redoes every logged change after the last checkpoint, then attaches the log and checkpoints, so
/// that the directory is consistent before anything reads it. Changes to spaces without a file
/// (dropped after the checkpoint: removed, or renamed to trash) are skipped.
fn recover(
    vfs: &dyn Vfs,
    pool: &Arc<BufferPool>,
    spaces: &SpaceMap,
    watch: &RecoveryWatch,
) -> Result<()> {
    let started = std::time::Instant::now();
    let opened = Wal::open(vfs)?;
    let records_total = opened.records.len() as u64;
    let log_bytes = opened.records.iter().map(|(_, p)| p.len() as u64).sum();
    let progress = |records_done| RecoveryProgress {
        records_done,
        records_total,
        log_bytes,
    };
    if records_total > 0 {
        tracing::info!("recovering: {records_total} redo records ({log_bytes} bytes) after the last checkpoint");
    }
    watch.report(progress(0));
    for (done, (lsn, payload)) in opened.records.iter().enumerate() {
        let end = lsn + (crate::wal::RECORD_HEADER + payload.len()) as u64;
        for change in redo::decode(payload, pool.page_size())? {
            if let Some(space) = spaces.get(&change.space) {
                space.ensure_page(change.page)?;
                pool.redo_change(space, &change, end)?;
            }
        }
        if (done as u64 + 1).is_multiple_of(RecoveryWatch::EVERY) {
            watch.report(progress(done as u64 + 1));
        }
    }
    pool.attach_wal(Arc::new(opened.wal));
    pool.checkpoint()?;
    watch.report(progress(records_total));
    if records_total > 0 {
        tracing::info!("recovered in {:.2} s", started.elapsed().as_secs_f64());
    }
    Ok(())
}

/// Makes the calling thread yield to query threads: on Linux, `setpriority(PRIO_PROCESS, 0, ..)`
/// applies to the calling thread only. Failing to lower it is harmless.
fn lower_thread_priority() {
    // SAFETY: setpriority has no memory-safety preconditions.
    unsafe {
        libc::setpriority(libc::PRIO_PROCESS, 0, 10);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::MemVfs;

    #[test]
    fn a_directory_remembers_its_spaces_and_page_size() {
        let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
        let config = StoreConfig {
            page_size: 8192,
            ..Default::default()
        };
        let store = Store::open(vfs.clone(), &config).unwrap();
        let table = store.create_space().unwrap();
        assert_eq!(table.id(), 1);
        store.create_space().unwrap();
        store.drop_space(2).unwrap();
        store.close().unwrap();
        let reopened = Store::open(vfs, &StoreConfig::default()).unwrap();
        assert_eq!(reopened.page_size(), 8192);
        let ids: Vec<SpaceId> = reopened.spaces().iter().map(|s| s.id()).collect();
        assert_eq!(ids, vec![0, 1]);
    }

    #[test]
    fn a_space_file_a_crash_left_unfinished_is_removed_on_open() {
        let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
        let store = Store::open(vfs.clone(), &StoreConfig::default()).unwrap();
        store.create_space().unwrap();
        store.close().unwrap();
        let unfinished = format!("{}{CREATING_SUFFIX}", Space::file_name(2));
        vfs.open(&unfinished, true).unwrap();
        let reopened = Store::open(vfs.clone(), &StoreConfig::default()).unwrap();
        assert!(!vfs.exists(&unfinished));
        let ids: Vec<SpaceId> = reopened.spaces().iter().map(|s| s.id()).collect();
        assert_eq!(ids, vec![0, 1]);
        assert_eq!(reopened.create_space().unwrap().id(), 2);
        assert!(vfs.exists(&Space::file_name(2)));
    }
}
