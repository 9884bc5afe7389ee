//! `pg_statio_user_tables` and `pg_statio_user_indexes` (and their `_all_` twins, the same rows:
//! every table of a SteadyDB database is a user table): per table and per index, the page
//! requests found in the buffer pool (`*_blks_hit`) and those read from the file (`*_blks_read`).
//!
//! The figures are the engine's per-tree counters (`steady_storage::btree::TreeIo`). A table's
//! rows live in its clustered tree: its leaves (and their overflow pages) are the table's *heap*
//! blocks, its branch pages the primary key index's blocks (the part of a PostgreSQL primary key
//! index a lookup walks); without a primary key the whole clustered tree is heap. A secondary
//! index's pages are all its own. As in PostgreSQL, `idx_blks_*` of a table sum its indexes and
//! are NULL when it has none; overflow values are not a separate TOAST relation, so the `toast_*`
//! and `tidx_*` columns are NULL. Counters live in memory, start at zero with the server, and
//! start over when a rewrite (TRUNCATE, VACUUM FULL, ALTER COLUMN TYPE) builds a new tree.

use steady_engine::catalog::TableDef;
use steady_engine::engine::Engine;
use steady_types::{DataType, Value};

use super::model::{indexes, IndexInfo, Relation};
use super::rows::{name, oid, Rows};
use super::SystemTable;
use crate::error::Result;
use crate::execution::executor::ExecCtx;

use DataType::{BigInt, Text};

const TABLE_COLUMNS: &[(&str, DataType)] = &[
    ("relid", BigInt),
    ("schemaname", Text),
    ("relname", Text),
    ("heap_blks_read", BigInt),
    ("heap_blks_hit", BigInt),
    ("idx_blks_read", BigInt),
    ("idx_blks_hit", BigInt),
    ("toast_blks_read", BigInt),
    ("toast_blks_hit", BigInt),
    ("tidx_blks_read", BigInt),
    ("tidx_blks_hit", BigInt),
];

const INDEX_COLUMNS: &[(&str, DataType)] = &[
    ("relid", BigInt),
    ("indexrelid", BigInt),
    ("schemaname", Text),
    ("relname", Text),
    ("indexrelname", Text),
    ("idx_blks_read", BigInt),
    ("idx_blks_hit", BigInt),
];

pub const VIEWS: &[SystemTable] = &[
    SystemTable {
        schema: "pg_catalog",
        name: "pg_statio_user_tables",
        columns: TABLE_COLUMNS,
        rows: table_rows,
    },
    SystemTable {
        schema: "pg_catalog",
        name: "pg_statio_all_tables",
        columns: TABLE_COLUMNS,
        rows: table_rows,
    },
    SystemTable {
        schema: "pg_catalog",
        name: "pg_statio_user_indexes",
        columns: INDEX_COLUMNS,
        rows: index_rows,
    },
    SystemTable {
        schema: "pg_catalog",
        name: "pg_statio_all_indexes",
        columns: INDEX_COLUMNS,
        rows: index_rows,
    },
];

/// Blocks read and found, in that order (the views' column order).
#[derive(Default, Clone, Copy)]
struct Blocks {
    read: u64,
    hit: u64,
}

impl Blocks {
    fn plus(self, other: Blocks) -> Blocks {
        Blocks {
            read: self.read + other.read,
            hit: self.hit + other.hit,
        }
    }

    fn values(self) -> [Value; 2] {
        [
            Value::BigInt(self.read as i64),
            Value::BigInt(self.hit as i64),
        ]
    }
}

/// The clustered tree's heap (leaf) and primary-key (branch) blocks of `table`.
fn clustered_blocks(engine: &Engine, table: &TableDef) -> (Blocks, Blocks) {
    let io = engine.index_io(table.id).unwrap_or_default();
    let leaves = Blocks {
        read: io.leaf_reads,
        hit: io.leaf_hits,
    };
    let branches = Blocks {
        read: io.branch_reads,
        hit: io.branch_hits,
    };
    match table.primary_key.is_empty() {
        true => (leaves.plus(branches), Blocks::default()),
        false => (leaves, branches),
    }
}

fn secondary_blocks(engine: &Engine, index: u64) -> Blocks {
    let io = engine.index_io(index).unwrap_or_default();
    Blocks {
        read: io.leaf_reads + io.branch_reads,
        hit: io.leaf_hits + io.branch_hits,
    }
}

/// The blocks of each index of `table` (primary key first, whose blocks are `primary`), with
/// its `pg_index` description.
fn index_blocks(engine: &Engine, table: &TableDef, primary: Blocks) -> Vec<(IndexInfo, Blocks)> {
    indexes(table)
        .into_iter()
        .map(|index| {
            let blocks = match index.primary {
                true => primary,
                false => secondary_blocks(engine, index.engine_id),
            };
            (index, blocks)
        })
        .collect()
}

fn table_rows(ctx: &mut ExecCtx) -> Result<Rows> {
    let engine = ctx.engine()?.clone();
    let mut rows = Vec::new();
    for table in engine.tables() {
        let (heap, primary) = clustered_blocks(&engine, &table);
        let of_indexes = index_blocks(&engine, &table, primary);
        let idx = match of_indexes.is_empty() {
            true => [Value::Null, Value::Null],
            false => of_indexes
                .iter()
                .fold(Blocks::default(), |sum, (_, b)| sum.plus(*b))
                .values(),
        };
        let mut row = vec![
            oid(Relation::Table(table.clone()).oid()),
            name("public"),
            name(&table.name),
        ];
        row.extend(heap.values());
        row.extend(idx);
        row.extend([Value::Null, Value::Null, Value::Null, Value::Null]);
        rows.push(row);
    }
    Ok(rows)
}

fn index_rows(ctx: &mut ExecCtx) -> Result<Rows> {
    let engine = ctx.engine()?.clone();
    let mut rows = Vec::new();
    for table in engine.tables() {
        let relid = Relation::Table(table.clone()).oid();
        let (_, primary) = clustered_blocks(&engine, &table);
        for (index, blocks) in index_blocks(&engine, &table, primary) {
            let mut row = vec![
                oid(relid),
                oid(index.oid),
                name("public"),
                name(&table.name),
                name(&index.name),
            ];
            row.extend(blocks.values());
            rows.push(row);
        }
    }
    Ok(rows)
}
