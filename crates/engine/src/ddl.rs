//! DDL on tables and their indexes, as writes of a transaction: CREATE/ALTER/DROP TABLE,
//! TRUNCATE, CREATE/DROP INDEX. Each takes the table's DDL lock and the table's lock exclusively
//! until the transaction ends (no writer of the table has a change in flight, and none starts one;
//! an index build takes the table's lock only for moments), and the engine's DDL
//! lock — which every row write of every table takes shared — only for the catalog switch at its
//! end, never across a scan, a sort, a build or a log sync; it logs what it changes so that a
//! rollback puts it back (see [`crate::engine`]'s `catalog_change` module for the undo entries and for how other
//! transactions are kept from planning with an uncommitted definition).
//!
//! * **DROP TABLE and TRUNCATE are O(1)** (seed 004): the definition changes, and the old space is
//!   dropped by purge after the commit, through the store's background reclaimer.
//! * **TRUNCATE moves the table to a fresh space** with empty trees of the same ids; a statement
//!   already reading the old trees finishes on them. A snapshot older than the TRUNCATE's commit
//!   that reads the table afterwards is refused with 40001 (`EngineError::TableRewritten`) rather
//!   than shown an empty table, as PostgreSQL would show it; so are rebuilds
//!   ([`crate::rebuild`]).
//! * **CREATE INDEX** is online ([`crate::index_build`]): the table's writers go on during the
//!   scan, sort and build, and wait only for its start and its catalog switch; an index is usable
//!   only by snapshots taken after its switch ([`crate::catalog::IndexDef::valid_from`]).

use std::sync::Arc;

use steady_storage::btree::BTree;

use crate::catalog::{ColumnDef, TableDef};
use crate::engine::{Engine, Transaction};
use crate::error::{EngineError, Result};
use crate::table::check_key_columns;
use crate::version::StorageObject;

impl Transaction {
    /// Creates a table in a space of its own.
    pub fn create_table(
        &mut self,
        name: &str,
        columns: Vec<ColumnDef>,
        primary_key: Vec<usize>,
    ) -> Result<Arc<TableDef>> {
        check_key_columns(&columns, &primary_key)?;
        let engine = self.engine();
        self.claim(name)?;
        let id = engine.allocate_index_id()?;
        self.lock_new_table(id)?;
        let space = self.new_space()?;
        let tree = BTree::create(engine.store.pool().clone(), space.clone(), id)?;
        let _ddl = engine.ddl.write();
        engine.check_free_name(name)?;
        engine.indexes.write().insert(id, Arc::new(tree));
        engine.row_counts.created(id);
        self.save_table(TableDef {
            id,
            name: name.to_string(),
            space: space.id(),
            columns,
            primary_key,
            indexes: Vec::new(),
            constraints: Vec::new(),
            materialized: None,
        })
    }

    /// Replaces a table's definition (columns added, constraints changed; the same id and space).
    pub fn alter_table(&mut self, table: TableDef) -> Result<Arc<TableDef>> {
        let engine = self.engine();
        let current = engine
            .table_by_id(table.id)
            .ok_or_else(|| EngineError::NoSuchTable(table.name.clone()))?;
        let current = self.lock_table_for_ddl(&current.name)?;
        if table.indexes != current.indexes {
            // Derived from a definition an index build or drop has changed since.
            return Err(EngineError::TableChanged(current.name.clone()));
        }
        if table.name != current.name {
            self.claim(&table.name)?;
        }
        let _ddl = engine.ddl.write();
        self.save_table(table)
    }

    /// Drops a table: its definition at once, its space by purge after the commit (seed 004).
    pub fn drop_table(&mut self, name: &str) -> Result<()> {
        let engine = self.engine();
        let table = self.lock_table_for_ddl(name)?;
        let _ddl = engine.ddl.write();
        self.remove_table(&table)
    }

    /// Empties a table: it moves to a fresh space with empty trees, and the old one is dropped by
    /// purge after the commit (O(1)).
    pub fn truncate_table(&mut self, name: &str) -> Result<()> {
        let engine = self.engine();
        let table = self.lock_table_for_ddl(name)?;
        let space = self.new_space()?;
        let ids = std::iter::once(table.id).chain(table.indexes.iter().map(|i| i.id));
        let mut trees = Vec::new();
        for id in ids {
            let tree = BTree::create(engine.store.pool().clone(), space.clone(), id)?;
            trees.push((id, Arc::new(tree)));
        }
        let _ddl = engine.ddl.write();
        engine.indexes.write().extend(trees);
        self.save_table(TableDef {
            space: space.id(),
            ..(*table).clone()
        })?;
        self.note_rewrite(table.clone());
        self.drop_after_commit(StorageObject {
            space: table.space,
            tree: None,
        })
    }

    /// Drops a secondary index: from the definition at once, its tree by purge after the commit.
    pub fn drop_secondary_index(&mut self, table: &str, name: &str) -> Result<Arc<TableDef>> {
        let engine = self.engine();
        let table = self.lock_table_for_ddl(table)?;
        let _ddl = engine.ddl.write();
        let index = table
            .index(name)
            .ok_or_else(|| EngineError::NoSuchIndexName(name.to_string()))?
            .clone();
        let mut altered = (*table).clone();
        altered.indexes.retain(|i| i.id != index.id);
        let altered = self.save_table(altered)?;
        self.drop_after_commit(StorageObject {
            space: table.space,
            tree: Some(index.id),
        })?;
        Ok(altered)
    }

    /// The engine, as a handle of its own (so that its locks can be held while `self` writes).
    pub(crate) fn engine(&self) -> Arc<Engine> {
        Arc::clone(&self.engine)
    }
}

impl Engine {
    /// Fails if a table or view is called `name` (under the DDL lock).
    pub(crate) fn check_free_name(&self, name: &str) -> Result<()> {
        if self.table(name).is_some() || self.view_exists(name)? {
            return Err(EngineError::DuplicateTable(name.to_string()));
        }
        Ok(())
    }
}
