//! Page I/O as the layers above see it: the per-thread counters of buffer-pool hits and reads that
//! EXPLAIN (ANALYZE, BUFFERS) reports per plan node. They come from the storage layer, re-exported
//! here so that SQL does not reach past the engine.

pub use steady_storage::buffer_pool::{thread_io, ThreadIo};
