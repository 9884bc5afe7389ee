//! Helpers shared by the engine's test binaries.

use std::time::Duration;

use steady_engine::catalog::ColumnDef;
use steady_engine::engine::EngineConfig;
use steady_storage::store::StoreConfig;
use steady_types::DataType;

/// An engine for tests: 4 KiB pages, a pool of `pool_pages` pages, a redo ring of `log_bytes`, no
/// background flushing or purge (a test purges when it means to), lock waits bounded at 5 s.
#[allow(dead_code)] // not every test binary uses it
pub fn config(pool_pages: usize, log_bytes: u64) -> EngineConfig {
    EngineConfig {
        store: StoreConfig {
            page_size: 4096,
            buffer_pool_bytes: pool_pages * 4096,
            background_flush: false,
            log_capacity: log_bytes,
            ..Default::default()
        },
        lock_timeout: Some(Duration::from_secs(5)),
        background_purge: false,
        ..Default::default()
    }
}

/// A NOT NULL integer column named `name`.
#[allow(dead_code)] // not every test binary uses it
pub fn int_column(name: &str) -> ColumnDef {
    ColumnDef {
        nullable: false,
        ..ColumnDef::plain(name, DataType::Integer)
    }
}
