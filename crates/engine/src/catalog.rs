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

use crate::codec::{decode_row, decode_row_columns_into, encoded_columns, CodecError};
use crate::version::IndexId;
use steady_storage::SpaceId;
use steady_types::{DataType, Value};

/// One column of a table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ColumnDef {
    pub name: String,
    pub data_type: DataType,
    pub nullable: bool,
    /// The default expression as SQL text, evaluated by the SQL layer.
    pub default: Option<String>,
    /// What rows stored before the column was added read for it: the constant default an
    /// `ADD COLUMN` gave them without rewriting them (PostgreSQL's `attmissingval`), encoded as a
    /// one-column row of the row codec. None: NULL.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub missing: Option<Vec<u8>>,
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

    /// Decodes a stored row of this table, only the `wanted` columns when given (the others read
    /// as NULL). Columns added after the row was stored read as their `missing` value.
    pub fn decode_row(
        &self,
        bytes: &[u8],
        wanted: Option<&[bool]>,
    ) -> Result<Vec<Value>, CodecError> {
        self.decoder(wanted.map(<[bool]>::to_vec)).decode(bytes)
    }

    /// A decoder of this table's stored rows (only the `wanted` columns when given), for decoding
    /// many rows without looking up the column types and missing values for each.
    pub fn decoder(&self, wanted: Option<Vec<bool>>) -> RowDecoder {
        RowDecoder {
            types: self.column_types(),
            missing: self.missing_values(),
            wanted,
        }
    }

    /// The columns with a missing value: `(position, type, encoded value)`.
    pub fn missing_values(&self) -> Vec<(usize, DataType, Vec<u8>)> {
        let with_missing = self.columns.iter().enumerate();
        with_missing
            .filter_map(|(i, c)| Some((i, c.data_type, c.missing.clone()?)))
            .collect()
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

/// Decodes the stored rows of one table definition: see [`TableDef::decoder`].
#[derive(Debug, Clone)]
pub struct RowDecoder {
    types: Vec<DataType>,
    missing: Vec<(usize, DataType, Vec<u8>)>,
    wanted: Option<Vec<bool>>,
}

impl RowDecoder {
    /// The row's values; columns not wanted read as NULL.
    pub fn decode(&self, bytes: &[u8]) -> Result<Vec<Value>, CodecError> {
        let mut values = Vec::with_capacity(self.types.len());
        self.decode_into(bytes, &mut values)?;
        Ok(values)
    }

    /// As [`RowDecoder::decode`], into `values` (cleared first).
    pub fn decode_into(&self, bytes: &[u8], values: &mut Vec<Value>) -> Result<(), CodecError> {
        let wanted = self.wanted.as_deref();
        decode_row_columns_into(bytes, &self.types, wanted, values)?;
        fill_missing(values, bytes, &self.missing, wanted)
    }

    /// Decodes only the columns `wanted` marks from now on.
    pub fn only_columns(&mut self, wanted: Vec<bool>) {
        self.wanted = Some(wanted);
    }
}

/// Marks a change of the catalog; called after every change of the in-memory catalog.
pub(crate) fn changed() {
    GENERATION.fetch_add(1, std::sync::atomic::Ordering::AcqRel);
}

/// Gives the columns a stored row lacks (it was stored before they were added) their missing
/// values (`(position, type, encoded value)`, see [`ColumnDef::missing`]), where `wanted`.
pub fn fill_missing(
    values: &mut [Value],
    bytes: &[u8],
    missing: &[(usize, DataType, Vec<u8>)],
    wanted: Option<&[bool]>,
) -> Result<(), CodecError> {
    if missing.is_empty() {
        return Ok(());
    }
    let stored = encoded_columns(bytes)?;
    for (i, ty, value) in missing.iter().filter(|(i, ..)| *i >= stored) {
        if wanted.is_none_or(|wanted| wanted.get(*i).copied().unwrap_or(true)) {
            values[*i] = decode_row(value, &[*ty])?.pop().unwrap_or(Value::Null);
        }
    }
    Ok(())
}
