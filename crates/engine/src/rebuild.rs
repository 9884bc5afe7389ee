//! Table rebuilds: ALTER TABLE ... ADD PRIMARY KEY and VACUUM FULL write a table's live rows and
//! its secondary indexes into a fresh space by bulk build and switch the table to it, as writes
//! of a transaction: a rollback drops the new space and puts the old definition back; after the
//! commit, purge drops the old space (O(1); reclaimed in the background).
//!
//! * **Records are copied as stored**, restamped as written by no transaction (writer 0): only the
//!   columns of each key are decoded, and the definition keeps the missing values that rows
//!   stored before an ADD COLUMN read.
//! * **Rows in key order stream.** The clustered tree is built while the old one is read, with
//!   nothing held in memory but the secondary entries: VACUUM FULL reads its rows in key order,
//!   and ADD PRIMARY KEY finds them in the order of the new key when they were loaded in it (a
//!   restore, `pgbench -i`). Only rows out of that order are gathered and sorted — the partial
//!   build is then dropped with its space.
//! * **VACUUM FULL is online**, as an index build is ([`crate::index_build`]): it copies the rows
//!   a snapshot of its own sees while the table's writers go on and note the rows they write;
//!   catch-up rounds copy those rows' newest committed versions over (a row deleted since is
//!   removed, with the index entries of the copy it replaces), and the switch, under the table's
//!   lock, copies the last few. ADD PRIMARY KEY, which re-clusters the rows, still waits for the
//!   table's writers and keeps new ones out.
//! * A snapshot older than a rebuild's commit no longer finds the versions it replaced, so it is
//!   refused on that table with 40001 (`EngineError::TableRewritten`); newer snapshots read the
//!   rebuilt rows.

use std::ops::Bound;
use std::sync::Arc;

use steady_storage::btree::BTree;
use steady_storage::space::Space;

use crate::catalog::{EntryFormat, IndexDef, RowDecoder, TableDef};
use crate::codec::encode_row;
use crate::engine::{Engine, Transaction};
use crate::error::{EngineError, Result};
use crate::index_build::in_background;
use crate::sorter::KeySorter;
use crate::table::{corrupt_row, entry_key, entry_value, has_null, index_key, wanted_columns};
use crate::version::{IndexId, StorageObject, Version};

/// A clustered record with its key: `(key, record)`.
type Record = (Vec<u8>, Vec<u8>);

/// `table` with the column types of `altered`, another version of it (the same columns
/// otherwise). 0A000 for a primary-key column or an indexed one of a type no key can hold.
fn retyped(table: &TableDef, altered: &TableDef) -> Result<TableDef> {
    let mut new = table.clone();
    if new.columns.len() != altered.columns.len() {
        return Err(EngineError::TableChanged(table.name.clone()));
    }
    for (position, (column, wanted)) in new.columns.iter_mut().zip(&altered.columns).enumerate() {
        if column.data_type != wanted.data_type && table.primary_key.contains(&position) {
            return Err(EngineError::UnsupportedKeyType {
                column: column.name.clone(),
                ty: wanted.data_type,
            });
        }
        column.data_type = wanted.data_type;
    }
    for index in &new.indexes {
        crate::table::check_key_columns(&new.columns, &index.columns)?;
    }
    Ok(new)
}

/// Rows of a table's old definition made rows of its rewritten one: values of the columns whose
/// types changed converted to the new types as an assignment converts them, each row written
/// whole (so the new definition needs no missing values); rows copied as stored when no type
/// changed.
struct RowConverter {
    new: TableDef,
    old: RowDecoder,
    /// The positions of the columns whose types changed.
    casts: Vec<usize>,
}

impl RowConverter {
    fn new(old: &TableDef, mut new: TableDef) -> Self {
        let casts: Vec<usize> = (0..old.columns.len())
            .filter(|&c| old.columns[c].data_type != new.columns[c].data_type)
            .collect();
        if !casts.is_empty() {
            new.columns.iter_mut().for_each(|c| c.missing = None);
        }
        RowConverter {
            old: old.decoder(None),
            new,
            casts,
        }
    }

    /// The stored row `row` of the old definition as one of the new.
    fn row(&self, row: &[u8]) -> Result<Vec<u8>> {
        if self.casts.is_empty() {
            return Ok(row.to_vec());
        }
        let mut values = self.old.decode(row).map_err(corrupt_row)?;
        for &column in &self.casts {
            values[column] = values[column].assign_to(&self.new.columns[column].data_type)?;
        }
        Ok(encode_row(&values))
    }
}

/// A table's trees written into a fresh space, not yet in use.
struct BuiltTable {
    table: TableDef,
    trees: Vec<(IndexId, BTree)>,
}

impl BuiltTable {
    fn tree(&self, id: IndexId) -> Result<&BTree> {
        let found = self.trees.iter().find(|(tree, _)| *tree == id);
        found
            .map(|(_, tree)| tree)
            .ok_or(EngineError::NoSuchIndex(id))
    }
}

impl Transaction {
    /// Rebuilds a table clustered by new primary-key columns (ALTER TABLE ... ADD PRIMARY KEY),
    /// with its secondary indexes. Fails with 23505 on a duplicate key and 23502 on a NULL in a
    /// key column.
    pub fn add_primary_key(&mut self, name: &str, columns: Vec<usize>) -> Result<Arc<TableDef>> {
        let engine = self.engine();
        let table = self.lock_table_for_ddl(name)?;
        crate::table::check_key_columns(&table.columns, &columns)?;
        let rebuilt = TableDef {
            primary_key: columns.clone(),
            ..(*table).clone()
        };
        let new_key = NewKey::new(&table, columns);
        let tree = engine.tree(table.id)?;
        let mut out_of_order = false;
        let mut last: Option<Vec<u8>> = None;
        let in_order = live_records(&tree).map_while(|record| {
            let keyed = record.and_then(|(_, record)| Ok((new_key.of(&record)?, record)));
            let Ok((key, record)) = keyed else {
                return Some(keyed);
            };
            if last.as_ref().is_some_and(|last| *last >= key) {
                out_of_order = true;
                return None;
            }
            last = Some(key.clone());
            Some(Ok((key, record)))
        });
        let built = self.build_table(rebuilt.clone(), in_order)?;
        if !out_of_order {
            return self.switch_to(&table, built);
        }
        engine.drop_storage(StorageObject {
            space: built.table.space,
            tree: None,
        })?;
        let sorted = sorted_by_new_key(&tree, &new_key, table.id)?;
        let built = self.build_table(rebuilt, sorted.into_pairs().map(Ok))?;
        self.switch_to(&table, built)
    }

    /// VACUUM FULL: rewrites a table's live rows and its indexes compactly into a fresh space,
    /// online: from a snapshot while the table's writers go on, then their changes copied over,
    /// as an index build does ([`crate::index_build`]).
    pub fn rewrite_table(&mut self, name: &str) -> Result<Arc<TableDef>> {
        self.rewrite_online(name, "VACUUM FULL", |table| Ok(table.clone()))
    }

    /// ALTER COLUMN ... TYPE: rewrites the table online, as VACUUM FULL, with each value of a
    /// column whose type `altered` changes converted as an assignment; a value that does not fit
    /// fails the statement (22P02, 22003...). Primary-key columns keep their types (0A000).
    pub fn alter_column_types(&mut self, altered: TableDef) -> Result<Arc<TableDef>> {
        let name = self
            .engine()
            .table_by_id(altered.id)
            .ok_or_else(|| EngineError::NoSuchTable(altered.name.clone()))?
            .name
            .clone();
        self.rewrite_online(&name, "ALTER TABLE", |current| retyped(current, &altered))
    }

    /// Rewrites table `name` into a fresh space with definition `rewritten(current)`, from a
    /// snapshot while the table's writers go on, then their changes copied over, as an index
    /// build does ([`crate::index_build`]).
    fn rewrite_online(
        &mut self,
        name: &str,
        command: &'static str,
        rewritten: impl FnOnce(&TableDef) -> Result<TableDef>,
    ) -> Result<Arc<TableDef>> {
        let engine = self.engine();
        let no_table = || EngineError::NoSuchTable(name.to_string());
        let id = engine.table(name).ok_or_else(no_table)?.id;
        self.lock_ddl(id)?;
        let build = self.start_build(id, command)?;
        let table = engine.table_by_id(id).ok_or_else(no_table)?;
        let convert = RowConverter::new(&table, rewritten(&table)?);
        let stop = self.stop_check();
        let built = in_background(|| {
            let mut rows = self.scan_all_at(id, Some(build.snapshot()))?;
            let rows_done = &build.log.rows_done;
            let records = std::iter::from_fn(|| {
                let row = rows.next_entry()?;
                let counted = engine.count_build_row(&stop, rows_done);
                let record = counted.and(row).and_then(|(pk, row)| {
                    Ok((pk.to_vec(), Version::encode_live(0, &convert.row(row)?)))
                });
                Some(record)
            });
            self.build_table(convert.new.clone(), records)
        })?;
        self.catch_up(&build.log, |txn, pks| {
            txn.copy_changed_rows(&table, &convert, &built, pks)
        })?;
        let locked = self.lock_table_for_switch(&build.log, name)?;
        let left = self.copy_changed_rows(&table, &convert, &built, build.log.drain())?;
        debug_assert!(left.is_empty(), "a writer of the table is still running");
        drop(build);
        self.switch_to(&locked, built)
    }

    /// Copies the newest versions of rows `pks` (ascending) of `table` whose writers have
    /// committed into the rebuilt trees — a row deleted since is removed — with their index
    /// entries; returns the rows left for later.
    fn copy_changed_rows(
        &mut self,
        table: &TableDef,
        convert: &RowConverter,
        built: &BuiltTable,
        pks: Vec<Vec<u8>>,
    ) -> Result<Vec<Vec<u8>>> {
        let engine = self.engine();
        let versions = engine.current_versions(&*engine.tree(table.id)?, table.id, &pks)?;
        let clustered = built.tree(table.id)?;
        let new = &built.table;
        let decoders: Vec<RowDecoder> = new
            .indexes
            .iter()
            .map(|index| new.decoder(Some(wanted_columns(new, &index.columns))))
            .collect();
        let mut left = Vec::new();
        for (pk, version) in pks.into_iter().zip(versions) {
            if version.as_ref().is_some_and(|v| !self.settled(v.writer)) {
                left.push(pk);
                continue;
            }
            let now = version.filter(|v| !v.deleted).map(|v| convert.row(&v.row));
            let now = now.transpose()?;
            let before = clustered.get(&pk)?;
            let before = before.as_deref().map(Version::record_row).transpose()?;
            for (index, decoder) in new.indexes.iter().zip(&decoders) {
                let entry_of = |row: &[u8]| -> Result<Vec<u8>> {
                    let values = decoder.decode(row).map_err(corrupt_row)?;
                    Ok(entry_key(&index_key(&values, &index.columns), &pk))
                };
                let old = before.map(entry_of).transpose()?;
                let new = now.as_deref().map(entry_of).transpose()?;
                if old == new {
                    continue;
                }
                let tree = built.tree(index.id)?;
                if let Some(old) = old {
                    tree.delete(&old)?;
                }
                if let Some(new) = new {
                    tree.insert(&new, &entry_value(index.entry_format, &pk))?;
                }
            }
            match now {
                Some(row) => drop(clustered.insert(&pk, &Version::encode_live(0, &row))?),
                None if before.is_some() => drop(clustered.delete(&pk)?),
                None => {}
            }
        }
        Ok(left)
    }

    /// Builds `table`'s trees in a fresh space from `records` (sorted by key); on failure the
    /// space is dropped.
    fn build_table(
        &mut self,
        mut table: TableDef,
        records: impl Iterator<Item = Result<Record>>,
    ) -> Result<BuiltTable> {
        let space = self.new_space()?;
        table.space = space.id();
        for index in &mut table.indexes {
            index.entry_format = EntryFormat::PkLength;
        }
        let engine = self.engine();
        match engine.build_trees(&table, &space, records) {
            Ok(trees) => Ok(BuiltTable { table, trees }),
            Err(err) => {
                let space = space.id();
                engine.drop_storage(StorageObject { space, tree: None })?;
                Err(err)
            }
        }
    }

    /// Makes `built` the table's definition and trees; the old space is dropped by purge after
    /// the commit.
    fn switch_to(&mut self, old: &TableDef, built: BuiltTable) -> Result<Arc<TableDef>> {
        let engine = self.engine();
        let _ddl = engine.ddl.write();
        let trees = built.trees.into_iter().map(|(id, t)| (id, Arc::new(t)));
        self.engine.indexes.write().extend(trees);
        let table = self.save_table(built.table)?;
        self.note_rewrite(table.clone());
        self.drop_after_commit(StorageObject {
            space: old.space,
            tree: None,
        })?;
        Ok(table)
    }
}

impl Engine {
    /// The clustered tree, streamed from `records`, then each secondary index from the entries
    /// gathered on the way, sorted.
    fn build_trees(
        &self,
        table: &TableDef,
        space: &Arc<Space>,
        records: impl Iterator<Item = Result<Record>>,
    ) -> Result<Vec<(IndexId, BTree)>> {
        let pool = self.store.pool().clone();
        let mut indexes: Vec<SecondaryEntries> = table
            .indexes
            .iter()
            .map(|index| SecondaryEntries::new(table, index))
            .collect();
        let mut failure = None;
        let tapped = records.map_while(|record| {
            let noted = record.and_then(|(pk, record)| {
                for index in &mut indexes {
                    index.add(&pk, &record)?;
                }
                Ok((pk, record))
            });
            noted.map_err(|err| failure = Some(err)).ok().map(Ok)
        });
        let pace = &mut |_| self.pace_build();
        let clustered = BTree::bulk_build(pool.clone(), space.clone(), table.id, tapped, pace)?;
        if let Some(err) = failure {
            return Err(err);
        }
        let mut trees = vec![(table.id, clustered)];
        for mut index in indexes {
            let id = index.id;
            let entries = index.sorted().map(Ok);
            let pace = &mut |_| self.pace_build();
            let tree = BTree::bulk_build(pool.clone(), space.clone(), id, entries, pace)?;
            trees.push((id, tree));
        }
        Ok(trees)
    }
}

/// Every live in-place record of a clustered tree with its key, in key order, restamped as
/// written by no transaction (writer 0).
fn live_records(tree: &BTree) -> impl Iterator<Item = Result<Record>> + '_ {
    tree.range(Bound::Unbounded, Bound::Unbounded)
        .filter_map(|record| {
            let restamped = record
                .map_err(EngineError::from)
                .and_then(|(pk, bytes)| Ok(Version::restamped_live(bytes, 0)?.map(|r| (pk, r))));
            restamped.transpose()
        })
}

/// The live records of `tree` keyed by `new_key`, sorted; 23505 if two keys are equal.
fn sorted_by_new_key(tree: &BTree, new_key: &NewKey, table: IndexId) -> Result<KeySorter> {
    let mut keyed = KeySorter::default();
    for record in live_records(tree) {
        let (_, record) = record?;
        keyed.push(&new_key.of(&record)?, &record, false);
    }
    keyed.sort();
    if keyed.any_neighbours(|(a, ..), (b, ..)| a == b) {
        return Err(EngineError::UniqueViolation { index: table });
    }
    Ok(keyed)
}

/// The new primary key of a table's records.
struct NewKey {
    decoder: RowDecoder,
    columns: Vec<usize>,
    table: String,
}

impl NewKey {
    fn new(table: &TableDef, columns: Vec<usize>) -> Self {
        NewKey {
            decoder: table.decoder(Some(wanted_columns(table, &columns))),
            columns,
            table: table.name.clone(),
        }
    }

    /// The key of a clustered record; 23502 if a key column is NULL.
    fn of(&self, record: &[u8]) -> Result<Vec<u8>> {
        let values = self
            .decoder
            .decode(Version::record_row(record)?)
            .map_err(corrupt_row)?;
        if has_null(&values, &self.columns) {
            return Err(EngineError::NotNullViolation(self.table.clone()));
        }
        Ok(index_key(&values, &self.columns))
    }
}

/// The entries `(entry key, primary key)` of one secondary index, gathered during a rebuild.
struct SecondaryEntries {
    id: IndexId,
    columns: Vec<usize>,
    format: EntryFormat,
    decoder: RowDecoder,
    entries: KeySorter,
}

impl SecondaryEntries {
    fn new(table: &TableDef, index: &IndexDef) -> Self {
        SecondaryEntries {
            id: index.id,
            decoder: table.decoder(Some(wanted_columns(table, &index.columns))),
            columns: index.columns.clone(),
            format: index.entry_format,
            entries: KeySorter::default(),
        }
    }

    fn add(&mut self, pk: &[u8], record: &[u8]) -> Result<()> {
        let values = self
            .decoder
            .decode(Version::record_row(record)?)
            .map_err(corrupt_row)?;
        let key = entry_key(&index_key(&values, &self.columns), pk);
        self.entries.push(&key, pk, false);
        Ok(())
    }

    /// The entries `(key, value)`, sorted.
    fn sorted(&mut self) -> impl Iterator<Item = (&[u8], Vec<u8>)> {
        self.entries.sort();
        let format = self.format;
        self.entries
            .iter()
            .map(move |(key, pk, _)| (key, entry_value(format, pk)))
    }
}
