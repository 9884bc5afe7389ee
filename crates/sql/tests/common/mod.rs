//! Shared by the SQL layer's integration tests: a small engine configuration and a database on a
//! directory.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use steady_engine::engine::{Engine, EngineConfig};
use steady_sql::Database;
use steady_storage::store::StoreConfig;

/// 4 KiB pages, a pool of `pool_pages` pages, a 64 MiB redo log, no background flushing, and row
/// locks waited for at most 10 s.
pub fn config(pool_pages: usize) -> EngineConfig {
    EngineConfig {
        store: StoreConfig {
            page_size: 4096,
            buffer_pool_bytes: pool_pages * 4096,
            background_flush: false,
            log_capacity: 64 << 20,
            ..Default::default()
        },
        lock_timeout: Some(Duration::from_secs(10)),
        ..Default::default()
    }
}

/// Opens (creating if needed) a database named `steady` on `dir`.
pub fn open_database(dir: &Path, config: &EngineConfig) -> Arc<Database> {
    Database::new(Engine::open(dir, config).expect("engine opens"), "steady")
}
