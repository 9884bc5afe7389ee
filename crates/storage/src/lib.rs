//! steady-storage: keys and values in B+trees on paged files, durably.
//!
//! This crate knows nothing of rows, transactions or SQL (map: docs/ARCHITECTURE.md). Its parts,
//! bottom up: [`io`] (the file seam), [`page`] (the page format and the page operations redo
//! replays), [`redo`] (what a log record says of each page) and [`wal`] (the log file, group
//! commit, checkpoints), [`buffer_pool`] (the page cache; it logs through the WAL), [`mtr`] (pages
//! that change together), [`space`] (files of extents and segments, allocated through mtrs),
//! [`btree`] (the index structure), [`store`] (a data directory of spaces: open, recovery, drop)
//! and [`check`] (offline verification).

pub mod backup;
pub mod btree;
pub mod buffer_pool;
pub mod check;
pub mod error;
pub mod io;
pub mod mtr;
pub mod page;
pub mod redo;
pub mod space;
pub mod store;
pub mod wal;

pub use error::{Result, StorageError};

/// Identifies a space (one file) within a database.
pub type SpaceId = u32;
/// A page's number within its space.
pub type PageNo = u32;
/// A log sequence number.
pub type Lsn = u64;
