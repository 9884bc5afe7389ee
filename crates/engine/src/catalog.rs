//! The catalog: tables, their columns and their indexes, kept in the meta tree of the system space
//! and cached in memory.
//!
//! ```text
//! meta tree key                 value
//! "table/" ++ table id u64 BE   the table definition (JSON)
//! ```
//!
//! A table is a clustered index (its id is the table's id) keyed by the primary-key columns in the
//! memcomparable encoding of [`crate::codec`] (a hidden 8-byte row id when no primary key is
//! declared), plus secondary indexes keyed by `(index columns ++ primary key)`, all in one space.
//! Catalog changes are made durable before they take effect (DDL commits on its own, outside user
//! transactions).

use serde::{Deserialize, Serialize};

use crate::types::DataType;
use crate::version::IndexId;
use steady_storage::SpaceId;

/// One column of a table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ColumnDef {
    pub name: String,
    pub data_type: DataType,
    pub nullable: bool,
    /// The default expression as SQL text, evaluated by the SQL layer.
    pub default: Option<String>,
}

/// A secondary index of a table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IndexDef {
    pub id: IndexId,
    pub name: String,
    /// Positions of the indexed columns in the table's columns.
    pub columns: Vec<usize>,
    pub unique: bool,
    /// Snapshots older than this CSN must not use the index: it was built after their time.
    pub valid_from: u64,
}

/// A table: its columns, primary key and secondary indexes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TableDef {
    /// The table's id, which is also its clustered index's id.
    pub id: IndexId,
    pub name: String,
    pub space: SpaceId,
    pub columns: Vec<ColumnDef>,
    /// Positions of the primary-key columns; empty: a hidden row id is the key.
    pub primary_key: Vec<usize>,
    pub indexes: Vec<IndexDef>,
    /// Free-form constraints the SQL layer enforces (foreign keys, checks), as it serialises them.
    pub constraints: Vec<String>,
}

impl TableDef {
    pub fn column_types(&self) -> Vec<DataType> {
        self.columns.iter().map(|c| c.data_type).collect()
    }

    /// The position of column `name` (case-sensitive, as the SQL layer normalises names).
    pub fn column(&self, name: &str) -> Option<usize> {
        self.columns.iter().position(|c| c.name == name)
    }

    pub fn index(&self, name: &str) -> Option<&IndexDef> {
        self.indexes.iter().find(|i| i.name == name)
    }
}

/// The meta-tree key of a table definition.
pub fn table_key(id: IndexId) -> Vec<u8> {
    let mut key = b"table/".to_vec();
    key.extend_from_slice(&id.to_be_bytes());
    key
}

/// The prefix of every table definition's key.
pub const TABLE_PREFIX: &[u8] = b"table/";

/// A process-wide count of catalog changes (any table or index of any database of the process
/// created, altered or dropped). A plan bound at one generation is still valid while the count
/// stays the same; counting every database together can only invalidate a plan too often, never
/// too late.
static GENERATION: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The current catalog generation (see [`GENERATION`]).
pub fn generation() -> u64 {
    GENERATION.load(std::sync::atomic::Ordering::Acquire)
}

/// Marks a change of the catalog; called after every change of the in-memory catalog.
pub(crate) fn changed() {
    GENERATION.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
}
