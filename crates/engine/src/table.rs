//! Tables: rows as typed values over the versioned indexes of [`crate::engine`], secondary indexes
//! kept in step with the clustered index, and DDL.
//!
//! ```text
//! clustered index   encode_key(primary key) -> version(encode_row(values))
//! secondary index   encode_key(index columns) ++ encode_key(primary key) -> primary key
//! ```
//!
//! * **Secondary entries are not versioned.** A write adds the entry for the row's new index key if
//!   it is missing (logged in the undo log, so a rollback removes it) and never removes one: an
//!   older snapshot may still reach the row through its old key. A reader through a secondary index
//!   fetches the version its snapshot sees from the clustered index and keeps it only if that
//!   version still has the entry's index key. Purge removes an entry once no version of the row
//!   that any snapshot can see has that key.
//! * **Stale marks.** While an old snapshot keeps a deleted row, purge buries its delete mark
//!   and marks the row's entries (in `PkLength` format) with the delete's commit csn: a reader
//!   whose snapshot sees that commit passes over the entry without looking the row up, so
//!   repeated `DELETE ... LIMIT` through an index stays flat behind an old snapshot (seed 000).
//!   The mark is set with the row locked by purge and only while the row's newest version is
//!   that delete; a write that gives the row the entry's key again clears it. When every entry
//!   of a leaf is marked, purge tags the leaf with the newest of their marks (the page's leaf
//!   tag, which any insert or replace in the leaf clears), and a reader that sees that commit
//!   passes over the whole leaf: behind an old snapshot, the entries of rows deleted in key order
//!   cost a later statement one look at a leaf header per leaf, not one per entry.
//! * **Unique secondary indexes** lock the index key value itself for the rest of the transaction,
//!   then look for another live row with that value.
//! * **DDL** ([`crate::ddl`]) is a write of a transaction, undone with it. Row writes take the
//!   table's lock shared until their transaction ends and the engine's DDL lock shared for the
//!   duration of one write; DDL takes the table's lock exclusively, and the DDL lock only for its
//!   catalog switch, so writers of other tables go on during a build. An index build is online
//!   ([`crate::index_build`]), and so is VACUUM FULL ([`crate::rebuild`]): each holds the table's
//!   lock only at its start and its switch, and every write notes its row for the builds running
//!   on the table.

use std::ops::Bound;
use std::sync::Arc;

use steady_storage::btree::{BTree, Partition};

use crate::catalog::{ColumnDef, EntryFormat, IndexDef, RowDecoder, TableDef};
use crate::codec::{encode_key, encode_row, put_varint, read_whole_varint};
use crate::engine::row_lock::{RowLockMode, RowLockWait, RowLocked};
use crate::engine::{DeleteOutcome, Engine, InPlace, Transaction, UnlockedChange};
use crate::error::{EngineError, Result};
use crate::lock::{LockKey, LockMode};
use crate::sorter::KeySorter;
use crate::txn::Csn;
use crate::version::{
    history_last, history_prefix, IndexId, OldVersion, UndoAction, UndoEntry, Version,
};
use steady_types::Value;

impl Engine {
    /// A sorter with room for the index entries of one of `parts` parts of the table in
    /// `clustered`: at most as many as the part's leaves can hold records (the smallest takes
    /// [`MIN_RECORD_BYTES`]), with an arena the size of its leaves (entries are a row's key
    /// columns and primary key, usually smaller than the row; past that the arena grows). A part
    /// is taken as half as large again as an even share: parts are about equal.
    pub(crate) fn sorter_for(&self, clustered: &BTree, parts: usize) -> Result<KeySorter> {
        let leaf_bytes = clustered.stats()?.leaf_pages * self.store.pool().page_size();
        let part_bytes = if parts > 1 {
            leaf_bytes / parts * 3 / 2
        } else {
            leaf_bytes
        };
        Ok(KeySorter::with_capacity(
            part_bytes / MIN_RECORD_BYTES,
            part_bytes,
        ))
    }

    /// The table called `name`.
    pub fn table(&self, name: &str) -> Option<Arc<TableDef>> {
        self.catalog
            .read()
            .values()
            .find(|t| t.name == name)
            .cloned()
    }

    /// Every table, by name.
    pub fn tables(&self) -> Vec<Arc<TableDef>> {
        let mut tables: Vec<Arc<TableDef>> = self.catalog.read().values().cloned().collect();
        tables.sort_by(|a, b| a.name.cmp(&b.name));
        tables
    }

    pub(crate) fn table_by_id(&self, id: IndexId) -> Option<Arc<TableDef>> {
        self.catalog.read().get(&id).cloned()
    }

    /// Removes the secondary entries of an old version that no other version of its row still
    /// has; called by purge once the version itself is gone, with the row locked.
    pub(crate) fn remove_stale_entries(
        &self,
        table: &TableDef,
        pk: &[u8],
        old: &OldVersion,
    ) -> Result<()> {
        self.remove_stale_entries_besides(table, pk, old, Vec::new())
    }

    /// Marks the secondary entries of `row` (the last version of the row under `pk`, which a
    /// delete committed at `csn` ended) stale from `csn`, so that readers seeing that commit pass
    /// over them (module doc). Called by purge with the row locked and its delete mark newest.
    pub(crate) fn mark_entries_stale(
        &self,
        table: &TableDef,
        pk: &[u8],
        row: &Version,
        csn: Csn,
    ) -> Result<()> {
        let Ok(values) = table.decode_row(&row.row, None) else {
            return Ok(());
        };
        let marked = stale_entry_value(pk.len(), csn);
        let marked_format = |index: &&IndexDef| index.entry_format == EntryFormat::PkLength;
        for index in table.indexes.iter().filter(marked_format) {
            let Ok(tree) = self.tree(index.id) else {
                continue;
            };
            let key = entry_key(&index_key(&values, &index.columns), pk);
            let unmarked = tree
                .get(&key)?
                .is_some_and(|value| entry_stale_from(index.entry_format, &value).is_none());
            if unmarked {
                tree.insert(&key, &marked)?;
                tree.tag_leaf(&key, |_, value| entry_stale_from(index.entry_format, value))?;
            }
        }
        Ok(())
    }

    /// As [`Engine::remove_stale_entries`], keeping also the entries of `others` (versions of the
    /// row a running transaction keeps for its savepoints).
    pub(crate) fn remove_stale_entries_besides(
        &self,
        table: &TableDef,
        pk: &[u8],
        old: &OldVersion,
        mut others: Vec<Version>,
    ) -> Result<()> {
        if table.indexes.is_empty() || old.version.deleted {
            return Ok(());
        }
        // A version stored before an ALTER COLUMN ... TYPE rewrite need not decode with the
        // current definition; its entries were in the space the rewrite replaced, and it keeps
        // none of the rebuilt indexes' entries (only the versions since have theirs), so a
        // version that does not decode is passed over.
        let Ok(old_values) = table.decode_row(&old.version.row, None) else {
            return Ok(());
        };
        if let Some(bytes) = self.tree(table.id)?.get(pk)? {
            let in_place = Version::decode(&bytes)?;
            others.extend(in_place.kept_version());
            others.push(in_place);
        }
        let (prefix, last) = (history_prefix(table.id, pk), history_last(table.id, pk));
        for entry in self
            .history
            .range(Bound::Included(&prefix), Bound::Included(&last))
        {
            let (_, value) = entry?;
            others.push(OldVersion::decode(&value)?.version);
        }
        let other_values: Vec<Vec<Value>> = others
            .iter()
            .filter(|v| !v.deleted)
            .filter_map(|v| table.decode_row(&v.row, None).ok())
            .collect();
        for index in &table.indexes {
            let sk = index_key(&old_values, &index.columns);
            if other_values
                .iter()
                .any(|v| index_key(v, &index.columns) == sk)
            {
                continue;
            }
            if let Ok(tree) = self.tree(index.id) {
                tree.delete_compacting(&entry_key(&sk, pk))?;
            }
        }
        Ok(())
    }
}

/// A row read for a change: its values, and its version in place where a change may go without a
/// row lock ([`Transaction::get_rows_for_change`]).
pub type RowForChange = (Vec<Value>, Option<InPlace>);

/// A change without a row lock ([`Transaction::change_rows_unlocked`]): the row's primary key, the
/// version read, and its new values (None deletes it).
pub type RowChange = (Vec<u8>, InPlace, Option<Vec<Value>>);

/// The memcomparable key of the given columns of a row.
pub fn index_key(values: &[Value], columns: &[usize]) -> Vec<u8> {
    let picked: Vec<Value> = columns.iter().map(|&c| values[c].clone()).collect();
    encode_key(&picked)
}

/// The clustered key of a row with a declared primary key.
/// Refuses key columns (`positions` in `columns`) whose values the key codec cannot keep as they
/// are: an interval's key is its span, so `'1 mon'` and `'30 days'` would be one key.
pub(crate) fn check_key_columns(columns: &[ColumnDef], positions: &[usize]) -> Result<()> {
    let refused = positions.iter().map(|&p| &columns[p]).find(|c| {
        use steady_types::DataType::{Array, Interval, Json, Jsonb, TextArray};
        matches!(c.data_type, Interval | Json | Jsonb | TextArray | Array(_))
    });
    match refused {
        Some(column) => Err(EngineError::UnsupportedKeyType {
            column: column.name.clone(),
            ty: column.data_type,
        }),
        None => Ok(()),
    }
}

pub fn primary_key(table: &TableDef, values: &[Value]) -> Vec<u8> {
    index_key(values, &table.primary_key)
}

/// The fewest bytes a clustered leaf record takes: slot, length, key length, a one-byte key,
/// kind, and a version header.
const MIN_RECORD_BYTES: usize = 2 + 2 + 2 + 1 + 1 + 9;

pub(crate) fn entry_key(sk: &[u8], pk: &[u8]) -> Vec<u8> {
    let mut key = Vec::with_capacity(sk.len() + pk.len());
    key.extend_from_slice(sk);
    key.extend_from_slice(pk);
    key
}

/// The value of a secondary entry for the row under `pk`, in `format`.
pub(crate) fn entry_value(format: EntryFormat, pk: &[u8]) -> Vec<u8> {
    match format {
        EntryFormat::PkInValue => pk.to_vec(),
        EntryFormat::PkLength => {
            let mut out = Vec::with_capacity(2);
            put_varint(&mut out, pk.len() as u128);
            out
        }
    }
}

/// The value of a `PkLength` entry for a primary key of `pk_len` bytes, marked stale for the
/// snapshots that see the commit `csn` (the delete of its row; see the module doc).
pub(crate) fn stale_entry_value(pk_len: usize, csn: Csn) -> Vec<u8> {
    let mut out = Vec::with_capacity(2 + STALE_MARK_BYTES);
    put_varint(&mut out, pk_len as u128);
    out.extend_from_slice(&csn.to_be_bytes());
    out
}

/// Bytes a stale mark adds to a `PkLength` entry's value: the delete's commit csn.
const STALE_MARK_BYTES: usize = 8;

/// The commit csn a `PkLength` entry's value is marked stale from, if it is marked.
pub(crate) fn entry_stale_from(format: EntryFormat, value: &[u8]) -> Option<Csn> {
    if format == EntryFormat::PkInValue || value.len() <= STALE_MARK_BYTES {
        return None;
    }
    let mark = value[value.len() - STALE_MARK_BYTES..].try_into().ok()?;
    Some(Csn::from_be_bytes(mark))
}

/// Whether a reader at `snapshot` (None: the newest versions) may pass over an entry whose value
/// is `value` without looking its row up: the entry is marked stale by a delete it sees.
pub(crate) fn passes_over(format: EntryFormat, value: &[u8], snapshot: Option<Csn>) -> bool {
    entry_stale_from(format, value).is_some_and(|from| sees(snapshot, from))
}

/// Whether a reader at `snapshot` may pass over a whole leaf of a secondary index whose tag is
/// `tag`: every entry there is marked stale from `tag` or earlier (purge tags a leaf whose entries
/// it has all marked, [`Engine::mark_entries_stale`]), and the reader sees that commit.
pub(crate) fn passes_over_leaf(snapshot: Option<Csn>) -> impl Fn(u64) -> bool {
    move |tag| sees(snapshot, tag)
}

/// Whether a reader at `snapshot` (None: the newest versions) sees the commit `csn`.
fn sees(snapshot: Option<Csn>, csn: Csn) -> bool {
    snapshot.is_none_or(|s| csn <= s)
}

/// The primary key a secondary entry `(key, value)` in `format` names.
pub(crate) fn entry_pk(format: EntryFormat, key: &[u8], value: &[u8]) -> Result<Vec<u8>> {
    if format == EntryFormat::PkInValue {
        return Ok(value.to_vec());
    }
    let length_bytes = match entry_stale_from(format, value) {
        Some(_) => &value[..value.len() - STALE_MARK_BYTES],
        None => value,
    };
    let length = read_whole_varint(length_bytes)
        .ok()
        .and_then(|n| usize::try_from(n).ok())
        .filter(|&n| n <= key.len())
        .ok_or_else(|| EngineError::Corrupt(format!("secondary entry value {value:?}")))?;
    Ok(key[key.len() - length..].to_vec())
}

/// Whether `tree` (a secondary index in `format`) lacks the entry `key` for the row `pk`; an
/// entry there marked stale is cleared in place (the row has that key again).
pub(crate) fn lacks_entry(
    tree: &BTree,
    format: EntryFormat,
    key: &[u8],
    pk: &[u8],
) -> Result<bool> {
    match tree.get(key)? {
        Some(value) if entry_stale_from(format, &value).is_none() => Ok(false),
        Some(_) => {
            tree.insert(key, &entry_value(format, pk))?;
            Ok(false)
        }
        None => Ok(true),
    }
}

/// Whether a row has a NULL in one of the columns (NULLs never collide in a unique index).
pub(crate) fn has_null(values: &[Value], columns: &[usize]) -> bool {
    columns.iter().any(|&c| values[c].is_null())
}

/// The `wanted` mask of a decoder of only `columns` of `table`.
pub(crate) fn wanted_columns(table: &TableDef, columns: &[usize]) -> Vec<bool> {
    let mut wanted = vec![false; table.columns.len()];
    for &column in columns {
        wanted[column] = true;
    }
    wanted
}

/// Decodes stored rows of `table` (None stays None).
fn decode_rows(table: &TableDef, rows: Vec<Option<Vec<u8>>>) -> Result<Vec<Option<Vec<Value>>>> {
    let decoder = table.decoder(None);
    rows.into_iter()
        .map(|row| {
            row.map(|bytes| decoder.decode(&bytes).map_err(corrupt_row))
                .transpose()
        })
        .collect()
}

/// 40001 (`TableChanged`) unless `space`, where a read of `table`'s rows went, is the space
/// `table` — the caller's definition, from its plan — puts them in. A rewrite (ALTER COLUMN
/// TYPE, VACUUM FULL, TRUNCATE) moves a table to a fresh space and switches its trees before
/// its commit: a plan made before that would decode the new rows by the old column types (an
/// `integer` read where a `bigint` was written), and while the rewrite is uncommitted no plan has
/// the new definition but its own.
fn same_layout(table: &TableDef, space: steady_storage::SpaceId) -> Result<()> {
    if space == table.space {
        Ok(())
    } else {
        Err(EngineError::TableChanged(table.name.clone()))
    }
}

pub(crate) fn corrupt_row(err: crate::codec::CodecError) -> EngineError {
    EngineError::Corrupt(format!("undecodable row: {err:?}"))
}

/// The rows of a table as a transaction sees them; each item is `Ok((pk, values))`.
pub struct RowScan {
    inner: crate::engine::Scan,
    decoder: RowDecoder,
}

impl RowScan {
    /// Decodes only the columns `wanted` marks; the others come back as NULL.
    pub fn only_columns(mut self, wanted: Vec<bool>) -> Self {
        self.decoder.only_columns(wanted);
        self
    }
}

impl RowScan {
    /// The next row's values, without its clustered key (a query that only reads rows needs no
    /// copy of the key).
    pub fn next_values(&mut self) -> Option<Result<Vec<Value>>> {
        Some(match self.inner.next_entry()? {
            Ok((_, row)) => self.decoder.decode(row).map_err(corrupt_row),
            Err(err) => Err(err),
        })
    }

    /// As [`RowScan::next_values`], into `values` (overwritten in place when it holds one value
    /// per column; see `RowDecoder::decode_into`); None at the end.
    #[inline]
    pub fn next_values_into(&mut self, values: &mut Vec<Value>) -> Option<Result<()>> {
        Some(match self.inner.next_entry()? {
            Ok((_, row)) => self.decoder.decode_into(row, values).map_err(corrupt_row),
            Err(err) => Err(err),
        })
    }
}

impl Iterator for RowScan {
    type Item = Result<(Vec<u8>, Vec<Value>)>;

    fn next(&mut self) -> Option<Self::Item> {
        Some(match self.inner.next_entry()? {
            Ok((pk, row)) => self
                .decoder
                .decode(row)
                .map(|values| (pk.to_vec(), values))
                .map_err(corrupt_row),
            Err(err) => Err(err),
        })
    }
}

/// A batch of candidates from [`Transaction::index_candidates`].
#[derive(Debug)]
pub struct IndexCandidates {
    /// The primary keys of the batch's entries, sorted, without repeats.
    pub keys: Vec<Vec<u8>>,
    /// The entry key the batch ended at when the range goes on; None when the range is done.
    pub resume_after: Option<Vec<u8>>,
}

impl Transaction {
    /// The rows with clustered keys in the range, in key order.
    pub fn scan_rows(
        &mut self,
        table: &TableDef,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
    ) -> Result<RowScan> {
        Ok(RowScan {
            inner: self.scan_table(table, start, end)?,
            decoder: table.decoder(None),
        })
    }

    /// The stored rows of `table` (clustered key, row bytes) in the key range, as
    /// [`Transaction::scan`] reads them, from the tree `table` describes (see [`same_layout`]).
    pub fn scan_table(
        &mut self,
        table: &TableDef,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
    ) -> Result<crate::engine::Scan> {
        let scan = self.scan(table.id, start, end)?;
        same_layout(table, scan.space())?;
        Ok(scan)
    }

    /// Every row of a table as it is now (see [`Transaction::scan_latest`]).
    pub fn scan_latest_rows(&mut self, table: &TableDef) -> Result<RowScan> {
        let inner = self.scan_latest(table.id)?;
        same_layout(table, inner.space())?;
        Ok(RowScan {
            inner,
            decoder: table.decoder(None),
        })
    }

    /// Refuses (see [`same_layout`]) rows just read by `table`'s id unless its clustered tree is
    /// still the one `table` describes. Called after the read and before the rows are decoded: a
    /// tree switched before the read is seen here; one switched in between refuses rows that
    /// were still readable, which only costs a retry.
    fn check_layout(&self, table: &TableDef) -> Result<()> {
        same_layout(table, self.engine.tree_space(table.id)?)
    }

    /// Clustered keys cutting the table's rows in `start..end` into at most `parts` parts of about
    /// equal size, for a scan split among threads (see [`steady_storage::btree::Partition`]).
    pub fn partition_rows(
        &mut self,
        table: &TableDef,
        parts: usize,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
    ) -> Result<Partition> {
        self.check_open()?;
        Ok(self.engine.tree(table.id)?.partition(parts, start, end)?)
    }

    /// Inserts a row; returns its clustered key. Unique secondary indexes are checked.
    pub fn insert_row(&mut self, table: &TableDef, values: &[Value]) -> Result<Vec<u8>> {
        let engine = Arc::clone(&self.engine);
        let table = &*self.lock_table_for_write(table)?;
        let _ddl = engine.ddl.read();
        let pk = if table.primary_key.is_empty() {
            engine.allocate_row_id()?.to_be_bytes().to_vec()
        } else {
            primary_key(table, values)
        };
        self.check_unique(table, &pk, values)?;
        self.insert(table.id, &pk, &encode_row(values))?;
        self.add_index_entries(table, &pk, values)?;
        self.rows_written(table.id, [pk.as_slice()])?;
        Ok(pk)
    }

    /// Inserts rows in their order, as [`Transaction::insert_row`] one by one would; into a
    /// table without secondary indexes the rows go in runs (see [`Transaction::insert_many`]). On
    /// error, the position of the row that failed with the error; the rows before it are
    /// inserted.
    pub fn insert_rows(
        &mut self,
        table: &TableDef,
        rows: &[Vec<Value>],
    ) -> std::result::Result<(), (usize, EngineError)> {
        let engine = Arc::clone(&self.engine);
        let table = &*self.lock_table_for_write(table).map_err(|e| (0, e))?;
        if !table.indexes.is_empty() {
            for (at, values) in rows.iter().enumerate() {
                self.insert_row(table, values).map_err(|e| (at, e))?;
            }
            return Ok(());
        }
        let _ddl = engine.ddl.read();
        let mut keyed = Vec::with_capacity(rows.len());
        for (at, values) in rows.iter().enumerate() {
            let pk = if table.primary_key.is_empty() {
                engine
                    .allocate_row_id()
                    .map_err(|e| (at, e))?
                    .to_be_bytes()
                    .to_vec()
            } else {
                primary_key(table, values)
            };
            keyed.push((pk, encode_row(values)));
        }
        let inserted = self.insert_many(table.id, &keyed);
        engine
            .builds
            .note(table.id, keyed.iter().map(|(pk, _)| pk.as_slice()));
        inserted
    }

    /// Replaces the row under `pk` (whose primary-key columns must not change; the SQL layer
    /// turns a key change into a delete and an insert). False if this transaction sees no row.
    pub fn update_row(&mut self, table: &TableDef, pk: &[u8], values: &[Value]) -> Result<bool> {
        let table = &*self.lock_table_for_write(table)?;
        let engine = Arc::clone(&self.engine);
        let _ddl = engine.ddl.read();
        self.check_unique(table, pk, values)?;
        if !self.update(table.id, pk, &encode_row(values))? {
            return Ok(false);
        }
        self.add_index_entries(table, pk, values)?;
        self.rows_written(table.id, [pk])?;
        Ok(true)
    }

    /// Deletes the row under `pk`; false if this transaction sees no row.
    pub fn delete_row(&mut self, table: &TableDef, pk: &[u8]) -> Result<bool> {
        let table = &*self.lock_table_for_write(table)?;
        let engine = Arc::clone(&self.engine);
        let _ddl = engine.ddl.read();
        let deleted = self.delete(table.id, pk)?;
        self.rows_written(table.id, [pk])?;
        Ok(deleted)
    }

    /// Deletes rows this transaction holds locked (each returned by
    /// [`Transaction::lock_table_row`]), keys ascending, as [`Transaction::delete_row`] one by one
    /// would, in runs (see `Transaction::write_many_locked`). Returns how many it deleted.
    pub fn delete_rows(&mut self, table: &TableDef, pks: &[Vec<u8>]) -> Result<usize> {
        let table = &*self.lock_table_for_write(table)?;
        let engine = Arc::clone(&self.engine);
        let _ddl = engine.ddl.read();
        let rows: Vec<(Vec<u8>, Option<Vec<u8>>)> =
            pks.iter().map(|pk| (pk.clone(), None)).collect();
        let written = self.write_many_locked(table.id, &rows)?;
        self.rows_written(table.id, pks.iter().map(Vec::as_slice))?;
        Ok(written.into_iter().filter(|&w| w).count())
    }

    /// Replaces rows this transaction holds locked (each returned by
    /// [`Transaction::lock_table_row`]), keys ascending and primary keys unchanged, as
    /// [`Transaction::update_row`] one by one would: the rows in runs (see
    /// `Transaction::write_many_locked`), then their new index entries. A table with a unique
    /// secondary index takes the rows one by one: a row's unique check must see the rows before it
    /// in place. Returns how many it replaced.
    pub fn update_rows(
        &mut self,
        table: &TableDef,
        rows: &[(Vec<u8>, Vec<Value>)],
    ) -> Result<usize> {
        let table = &*self.lock_table_for_write(table)?;
        if table.indexes.iter().any(|index| index.unique) {
            let mut updated = 0;
            for (pk, values) in rows {
                updated += usize::from(self.update_row(table, pk, values)?);
            }
            return Ok(updated);
        }
        let engine = Arc::clone(&self.engine);
        let _ddl = engine.ddl.read();
        let encoded: Vec<(Vec<u8>, Option<Vec<u8>>)> = rows
            .iter()
            .map(|(pk, values)| (pk.clone(), Some(encode_row(values))))
            .collect();
        let written = self.write_many_locked(table.id, &encoded)?;
        let mut updated = Vec::new();
        for ((pk, values), _) in rows.iter().zip(written).filter(|(_, w)| *w) {
            self.add_index_entries(table, pk, values)?;
            updated.push(pk.as_slice());
        }
        self.rows_written(table.id, updated.iter().copied())?;
        Ok(updated.len())
    }

    /// The row under `pk`, as this transaction sees it.
    pub fn get_row(&mut self, table: &TableDef, pk: &[u8]) -> Result<Option<Vec<Value>>> {
        let row = self.get(table.id, pk)?;
        self.check_layout(table)?;
        row.map(|bytes| table.decode_row(&bytes, None).map_err(corrupt_row))
            .transpose()
    }

    /// The rows under `pks` (ascending), as [`Transaction::get_row`] one by one sees them, the
    /// table read in one walk.
    pub fn get_rows(
        &mut self,
        table: &TableDef,
        pks: &[Vec<u8>],
    ) -> Result<Vec<Option<Vec<Value>>>> {
        let rows = self.get_many(table.id, pks)?;
        self.check_layout(table)?;
        decode_rows(table, rows)
    }

    /// The rows under `pks` (ascending), as [`Transaction::get_rows`] sees them, each with the
    /// version in place where [`Transaction::change_rows_unlocked`] may change it without a row
    /// lock (see `Transaction::get_many_for_change`).
    pub fn get_rows_for_change(
        &mut self,
        table: &TableDef,
        pks: &[Vec<u8>],
    ) -> Result<Vec<Option<RowForChange>>> {
        let decoder = table.decoder(None);
        let rows = self.get_many_for_change(table.id, pks)?;
        self.check_layout(table)?;
        rows.into_iter()
            .map(|seen| {
                seen.map(|seen| {
                    let values = decoder.decode(seen.row()).map_err(corrupt_row)?;
                    Ok((values, seen.in_place()))
                })
                .transpose()
            })
            .collect()
    }

    /// Deletes (None) or replaces (primary keys unchanged) rows read by
    /// [`Transaction::get_rows_for_change`], keys ascending, without row locks where each is still
    /// as read and unlocked (see `Transaction::write_many_unlocked`), then adds the new index
    /// entries of the rows replaced. Returns which rows it wrote: the others changed since they
    /// were read, or someone holds their row lock, and must be locked and checked again. Replacing
    /// rows of a table with a unique secondary index writes none (a row's unique check must see the
    /// rows before it in place: `update_rows` takes those one by one).
    pub fn change_rows_unlocked(
        &mut self,
        table: &TableDef,
        changes: &[RowChange],
    ) -> Result<Vec<bool>> {
        let table = &*self.lock_table_for_write(table)?;
        let unique = table.indexes.iter().any(|index| index.unique);
        if unique && changes.iter().any(|(_, _, values)| values.is_some()) {
            return Ok(vec![false; changes.len()]);
        }
        let engine = Arc::clone(&self.engine);
        let _ddl = engine.ddl.read();
        let encoded: Vec<UnlockedChange<'_>> = changes
            .iter()
            .map(|(pk, read, values)| (pk.as_slice(), read, values.as_deref().map(encode_row)))
            .collect();
        let written = self.write_many_unlocked(table.id, &encoded)?;
        let mut changed = Vec::new();
        for ((pk, _, values), _) in changes.iter().zip(&written).filter(|(_, &w)| w) {
            if let Some(values) = values {
                self.add_index_entries(table, pk, values)?;
            }
            changed.push(pk.as_slice());
        }
        self.rows_written(table.id, changed)?;
        Ok(written)
    }

    /// Deletes the rows under `pks` (ascending) whose stored bytes `matches` accepts, each read,
    /// decided and deleted in one visit of its leaf without a row lock where it can be (see
    /// `Transaction::delete_many_unlocked_where`); every other key comes back deferred, for the
    /// reading and locking path ([`Transaction::get_rows_for_change`] and after).
    pub fn delete_rows_unlocked_where(
        &mut self,
        table: &TableDef,
        pks: &[Vec<u8>],
        matches: &mut dyn FnMut(&[u8]) -> Option<bool>,
    ) -> Result<Vec<DeleteOutcome>> {
        let table = &*self.lock_table_for_write(table)?;
        let engine = Arc::clone(&self.engine);
        let _ddl = engine.ddl.read();
        let outcomes = self.delete_many_unlocked_where(table.id, pks, matches)?;
        let deleted = pks.iter().zip(&outcomes);
        let deleted = deleted.filter(|(_, &outcome)| outcome == DeleteOutcome::Deleted);
        self.rows_written(table.id, deleted.map(|(pk, _)| pk.as_slice()))?;
        Ok(outcomes)
    }

    /// Locks the rows under `pks` (ascending) for writing and returns their newest versions, as
    /// [`Transaction::lock_table_row`] one by one would, the table read in one walk.
    pub fn lock_table_rows(
        &mut self,
        table: &TableDef,
        pks: &[Vec<u8>],
    ) -> Result<Vec<Option<Vec<Value>>>> {
        let rows = self.lock_rows(table.id, pks)?;
        self.check_layout(table)?;
        decode_rows(table, rows)
    }

    /// Locks the row under `pk` for a reader, `SELECT ... FOR UPDATE / FOR SHARE` (see
    /// [`Transaction::lock_row_for`]).
    pub fn lock_table_row_for(
        &mut self,
        table: &TableDef,
        pk: &[u8],
        mode: RowLockMode,
        wait: RowLockWait,
    ) -> Result<RowLocked<Vec<Value>>> {
        let locked = self.lock_row_for(table.id, pk, mode, wait)?;
        self.check_layout(table)?;
        Ok(match locked {
            RowLocked::Row(row) => RowLocked::Row(
                row.map(|bytes| table.decode_row(&bytes, None).map_err(corrupt_row))
                    .transpose()?,
            ),
            RowLocked::Skipped => RowLocked::Skipped,
        })
    }

    /// Locks the row under `pk` for writing and returns its newest version (see
    /// [`Transaction::lock_row`]).
    pub fn lock_table_row(&mut self, table: &TableDef, pk: &[u8]) -> Result<Option<Vec<Value>>> {
        let row = self.lock_row(table.id, pk)?;
        self.check_layout(table)?;
        row.map(|bytes| table.decode_row(&bytes, None).map_err(corrupt_row))
            .transpose()
    }

    /// The rows whose index key lies in the range (bounds on the encoded index key, which may be a
    /// prefix of the index's columns), in index order, as this transaction sees them.
    ///
    /// A multi-range read (seed 003): the rows are fetched in primary-key order, in one walk of
    /// the table that reads the leaves of the coming keys ahead ([`Transaction::get_rows`]), and
    /// then put back in index order; fetched in index order, each row of a large range would be
    /// a synchronous read of a random leaf.
    pub fn index_rows(
        &mut self,
        table: &TableDef,
        index: &IndexDef,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
    ) -> Result<Vec<(Vec<u8>, Vec<Value>)>> {
        let entries = self.index_entries_in(index, start, end)?;
        let mut by_pk: Vec<usize> = (0..entries.len()).collect();
        by_pk.sort_by(|&a, &b| entries[a].1.cmp(&entries[b].1));
        let pks: Vec<Vec<u8>> = by_pk.iter().map(|&i| entries[i].1.clone()).collect();
        let mut fetched = vec![None; entries.len()];
        for (row, i) in self.get_rows(table, &pks)?.into_iter().zip(by_pk) {
            fetched[i] = row;
        }
        let mut rows = Vec::new();
        for ((key, pk), values) in entries.into_iter().zip(fetched) {
            let Some(values) = values else { continue };
            if entry_key(&index_key(&values, &index.columns), &pk) == key {
                rows.push((pk, values));
            }
        }
        Ok(rows)
    }

    /// The raw entries `(entry key, primary key)` of `index` in the range (bounds on the index key),
    /// refused if the index was built after this transaction's snapshot.
    fn index_entries_in(
        &mut self,
        index: &IndexDef,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
    ) -> Result<Vec<(Vec<u8>, Vec<u8>)>> {
        let tree = self.ready_index(index)?;
        let snapshot = self.snapshot_of(index.id)?;
        let end = entry_end(end);
        let mut entries = Vec::new();
        tree.for_each_in_range::<EngineError>(
            start,
            end.as_ref().map(Vec::as_slice),
            passes_over_leaf(snapshot),
            |key, value| {
                if !passes_over(index.entry_format, value, snapshot) {
                    entries.push((key.to_vec(), entry_pk(index.entry_format, key, value)?));
                }
                Ok(true)
            },
        )?;
        Ok(entries)
    }

    /// The tree of `index`, refused if the index was built after this transaction's snapshot.
    fn ready_index(&mut self, index: &IndexDef) -> Result<Arc<BTree>> {
        let snapshot = self.snapshot_of(index.id)?;
        if snapshot.is_some_and(|csn| csn < index.valid_from) {
            return Err(EngineError::IndexNotReady(index.name.clone()));
        }
        self.engine.tree(index.id)
    }

    /// The primary keys of the next `max_keys` entries of `index` in the range, sorted and without
    /// repeats, read from the index alone: the candidates of a statement that finds its rows
    /// through the index, a batch at a time. Sorted and unique, so that visiting them changes the
    /// rows in key order and reads each clustered page once per batch (seed 000); entries may be
    /// stale, so the caller locks each row and checks it again. The next batch starts after
    /// [`IndexCandidates::resume_after`] (`start` = `Bound::Excluded` of it).
    pub fn index_candidates(
        &mut self,
        index: &IndexDef,
        start: Bound<&[u8]>,
        end: Bound<&[u8]>,
        max_keys: usize,
    ) -> Result<IndexCandidates> {
        let mut keys = Vec::new();
        let mut resume_after = None;
        let tree = self.ready_index(index)?;
        let snapshot = self.snapshot_of(index.id)?;
        let end = entry_end(end);
        tree.for_each_in_range::<EngineError>(
            start,
            end.as_ref().map(Vec::as_slice),
            passes_over_leaf(snapshot),
            |key, value| {
                if passes_over(index.entry_format, value, snapshot) {
                    return Ok(true);
                }
                keys.push(entry_pk(index.entry_format, key, value)?);
                if keys.len() >= max_keys {
                    resume_after = Some(key.to_vec());
                    return Ok(false);
                }
                Ok(true)
            },
        )?;
        keys.sort_unstable();
        keys.dedup();
        Ok(IndexCandidates { keys, resume_after })
    }

    /// Takes the table's lock shared until the transaction ends, so DDL on the table waits for
    /// it, and returns the table's current definition, which the write goes by. The rows the
    /// caller encoded must still fit it: the same columns, key and constraints. Only its indexes
    /// may have changed since the caller's statement was planned (an index built or dropped, a
    /// VACUUM FULL): the write then keeps the current ones up to date; otherwise 40001.
    fn lock_table_for_write(&mut self, table: &TableDef) -> Result<Arc<TableDef>> {
        let engine = Arc::clone(&self.engine);
        let key = LockKey::new(table.id, Vec::new());
        engine
            .locks
            .lock(self.id, key, LockMode::Shared, self.lock_timeout)?;
        match engine.table_by_id(table.id) {
            Some(current) if std::ptr::eq(&*current, table) || rows_fit(&current, table) => {
                Ok(current)
            }
            _ => Err(EngineError::TableChanged(table.name.clone())),
        }
    }

    /// After a write of rows `pks` of `table`: drops the entries of the own versions it replaced
    /// unsaved ([`Transaction::drop_discarded_entries`]) and notes the rows for an online build or
    /// rebuild of the table running meanwhile.
    fn rows_written<'k>(
        &mut self,
        table: IndexId,
        pks: impl IntoIterator<Item = &'k [u8]>,
    ) -> Result<()> {
        self.drop_discarded_entries()?;
        self.engine.builds.note(table, pks);
        Ok(())
    }

    /// Adds the entries of a row's new version to each secondary index that lacks them.
    fn add_index_entries(&mut self, table: &TableDef, pk: &[u8], values: &[Value]) -> Result<()> {
        for index in &table.indexes {
            let key = entry_key(&index_key(values, &index.columns), pk);
            let tree = self.engine.tree(index.id)?;
            if !lacks_entry(&tree, index.entry_format, &key, pk)? {
                continue;
            }
            self.log_index_entry(index.id, &key)?;
            tree.insert(&key, &entry_value(index.entry_format, pk))?;
        }
        Ok(())
    }

    /// Fails with a unique violation if another live row already has one of this row's unique
    /// index keys; the key values stay locked until the transaction ends.
    fn check_unique(&mut self, table: &TableDef, pk: &[u8], values: &[Value]) -> Result<()> {
        for index in table.indexes.iter().filter(|i| i.unique) {
            if has_null(values, &index.columns) {
                continue;
            }
            let sk = index_key(values, &index.columns);
            let engine = Arc::clone(&self.engine);
            let lock = LockKey {
                index_id: index.id,
                key: sk.clone(),
            };
            engine
                .locks
                .lock(self.id, lock, LockMode::Exclusive, self.lock_timeout)?;
            if self.live_row_with_key(table, index, &sk, pk)? {
                return Err(EngineError::UniqueViolation { index: index.id });
            }
        }
        Ok(())
    }

    /// Whether a row other than `pk` has index key `sk` in its newest version.
    fn live_row_with_key(
        &mut self,
        table: &TableDef,
        index: &IndexDef,
        sk: &[u8],
        pk: &[u8],
    ) -> Result<bool> {
        let engine = Arc::clone(&self.engine);
        let tree = engine.tree(index.id)?;
        let clustered = engine.tree(table.id)?;
        let end = entry_end(Bound::Included(sk));
        for entry in tree.range(Bound::Included(sk), end.as_ref().map(Vec::as_slice)) {
            let (key, value) = entry?;
            let other = entry_pk(index.entry_format, &key, &value)?;
            if other == pk || key.len() != sk.len() + other.len() {
                continue;
            }
            let Some(bytes) = clustered.get(&other)? else {
                continue;
            };
            let version = Version::decode(&bytes)?;
            if version.deleted {
                continue;
            }
            let values = table.decode_row(&version.row, None).map_err(corrupt_row)?;
            if index_key(&values, &index.columns) == sk {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Logs a new secondary entry so that rollback (or recovery) removes it.
    fn log_index_entry(&mut self, index: IndexId, key: &[u8]) -> Result<()> {
        let entry = UndoEntry {
            index,
            pk: key.to_vec(),
            action: UndoAction::IndexEntry,
        };
        self.append_undo(entry)
    }
}

/// Whether rows written for definition `planned` fit `current`, another version of it.
fn rows_fit(current: &TableDef, planned: &TableDef) -> bool {
    current.columns == planned.columns
        && current.primary_key == planned.primary_key
        && current.constraints == planned.constraints
}

/// Index entries are `index key ++ primary key`: an inclusive end bound on the index key must
/// include every primary key after it.
fn entry_end(end: Bound<&[u8]>) -> Bound<Vec<u8>> {
    match end {
        Bound::Included(key) => match crate::codec::prefix_successor(key) {
            Some(successor) => Bound::Excluded(successor),
            None => Bound::Unbounded,
        },
        Bound::Excluded(key) => Bound::Excluded(key.to_vec()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_name_their_rows_in_either_format() {
        for pk_len in [1, 5, 127, 128, 300] {
            let pk: Vec<u8> = (0..pk_len).map(|i| i as u8).collect();
            let key = entry_key(b"sk", &pk);
            for format in [EntryFormat::PkInValue, EntryFormat::PkLength] {
                let value = entry_value(format, &pk);
                assert_eq!(entry_pk(format, &key, &value).unwrap(), pk, "{format:?}");
            }
            let short = entry_value(EntryFormat::PkLength, &pk);
            assert_eq!(short.len(), if pk_len < 128 { 1 } else { 2 });
        }
        let corrupt = |value: &[u8]| entry_pk(EntryFormat::PkLength, b"abc", value);
        assert!(corrupt(&[4]).is_err(), "longer than the key");
        assert!(corrupt(&[]).is_err(), "empty");
        assert!(corrupt(&[0x81]).is_err(), "unterminated");
        assert!(corrupt(&[1, 0]).is_err(), "trailing bytes");
        assert!(corrupt(&[0xff; 12]).is_err(), "overlong");
    }
}
