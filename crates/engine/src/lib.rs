//! steady-engine: rows, transactions and versions on top of the storage layer's B+trees.
//!
//! This crate knows nothing of SQL text. Its parts: [`txn`] (transaction ids, CSNs, snapshots),
//! [`lock`] (row locks, deadlock detection), [`ssi`] (read/write dependencies of SERIALIZABLE
//! transactions), [`version`] (the formats of row versions, history and
//! undo entries), [`engine`] (the database: writes, reads at each isolation level, commit, rollback,
//! recovery, purge), [`catalog`] and [`table`] (typed rows, secondary indexes, DDL), `index_build` (online CREATE INDEX), [`index_check`] (indexes verified against their tables), [`rebuild`]
//! (ADD PRIMARY KEY and VACUUM FULL by bulk build), [`view`] (views as stored queries), [`enum_type`] (enum types), [`role`] (roles and the privileges granted on relations), [`codec`] (the
//! encodings of `steady-types` values), [`io`] (page-I/O counters) and [`error`].

pub mod catalog;
pub mod codec;
mod ddl;
pub mod engine;
pub mod error;
mod index_build;
pub use index_build::BuildProgress;
pub mod enum_type;
pub mod index_check;
pub mod io;
pub mod lock;
pub mod rebuild;
pub mod role;
pub mod sequence;
mod sorter;
pub mod ssi;
pub mod table;
pub mod txn;
pub mod version;
pub mod view;
