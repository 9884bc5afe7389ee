//! A data directory: the system space, the table spaces, and the buffer pool they share.
//!
//! ```text
//! steady-data/
//!   space_000000.sdb   system space (catalog and history store, later issues)
//!   space_000001.sdb   one file per table: its clustered index and secondary indexes
//! ```
//!
//! The page size is chosen when the directory is created and read back from the system space's
//! header afterwards; a configured page size that disagrees with an existing directory is an error.
//! Invariant: every open space is registered here exactly once, under its id.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use parking_lot::RwLock;

use crate::btree;
use crate::buffer_pool::{BufferPool, PoolConfig, PoolStats};
use crate::io::{OsVfs, Vfs};
use crate::page::DEFAULT_PAGE_SIZE;
use crate::redo;
use crate::space::Space;
use crate::wal::{Wal, WalStats, LOG_FILE};
use crate::{Result, SpaceId, StorageError};

/// The space holding the catalog.
pub const SYSTEM_SPACE: SpaceId = 0;

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
    /// Size of the redo log of a new directory, in bytes.
    pub log_capacity: u64,
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            page_size: DEFAULT_PAGE_SIZE,
            buffer_pool_bytes: 128 << 20,
            direct_io: false,
            background_flush: true,
            log_capacity: 256 << 20,
        }
    }
}

/// An open data directory.
pub struct Store {
    vfs: Arc<dyn Vfs>,
    pool: Arc<BufferPool>,
    spaces: RwLock<BTreeMap<SpaceId, Arc<Space>>>,
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
    /// redo log otherwise.
    pub fn open(vfs: Arc<dyn Vfs>, config: &StoreConfig) -> Result<Store> {
        let mut spaces = BTreeMap::new();
        for name in vfs
            .list()
            .map_err(|e| StorageError::io("listing the data directory", e))?
        {
            if let Some(id) = Space::id_from_file_name(&name) {
                spaces.insert(id, Space::open_unloaded(vfs.as_ref(), id)?);
            }
        }
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
        if vfs.exists(LOG_FILE) {
            recover(vfs.as_ref(), &pool, &spaces)?;
        } else {
            pool.attach_wal(Arc::new(Wal::create(vfs.as_ref(), config.log_capacity)?));
        }
        for space in spaces.values() {
            space.load_allocation()?;
            btree::discard_unfinished_builds(&pool, space)?;
        }
        Ok(Store {
            vfs,
            pool,
            spaces: RwLock::new(spaces),
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

    /// Creates a new, empty space with the next free id.
    pub fn create_space(&self) -> Result<Arc<Space>> {
        let mut spaces = self.spaces.write();
        let id = spaces
            .keys()
            .next_back()
            .map_or(SYSTEM_SPACE, |last| last + 1);
        let space = Space::create(self.vfs.as_ref(), id, self.page_size())?;
        spaces.insert(id, space.clone());
        Ok(space)
    }

    /// Drops a space: its cached pages become invalid at once (no pool scan), then its file is
    /// removed.
    pub fn drop_space(&self, id: SpaceId) -> Result<()> {
        if id == SYSTEM_SPACE {
            return Err(StorageError::Config(
                "the system space cannot be dropped".into(),
            ));
        }
        let space = self
            .spaces
            .write()
            .remove(&id)
            .ok_or(StorageError::SpaceDropped(id))?;
        space.mark_dropped();
        self.vfs
            .remove(&Space::file_name(id))
            .and_then(|_| self.vfs.sync_dir())
            .map_err(|e| StorageError::io(format!("removing the file of space {id}"), e))
    }

    /// A checkpoint (see [`BufferPool::checkpoint`]), then free tail extents go back to the OS.
    pub fn checkpoint(&self) -> Result<()> {
        self.pool.checkpoint()?;
        for space in self.spaces() {
            if space.shrink()? > 0 {
                space.sync()?;
            }
        }
        Ok(())
    }

    /// A clean shutdown: checkpoint, then stop background work.
    pub fn close(self) -> Result<()> {
        self.checkpoint()?;
        self.pool.stop_flusher();
        Ok(())
    }
}

/// Redoes every logged change after the last checkpoint, then attaches the log and checkpoints, so
/// that the directory is consistent before anything reads it. Changes to spaces whose files are gone
/// (dropped after the checkpoint) are skipped.
fn recover(
    vfs: &dyn Vfs,
    pool: &Arc<BufferPool>,
    spaces: &BTreeMap<SpaceId, Arc<Space>>,
) -> Result<()> {
    let opened = Wal::open(vfs)?;
    for (lsn, payload) in &opened.records {
        let end = lsn + (crate::wal::RECORD_HEADER + payload.len()) as u64;
        for change in redo::decode(payload, pool.page_size())? {
            if let Some(space) = spaces.get(&change.space) {
                space.ensure_page(change.page)?;
                pool.redo_change(space, &change, end)?;
            }
        }
    }
    pool.attach_wal(Arc::new(opened.wal));
    pool.checkpoint()?;
    Ok(())
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
}
