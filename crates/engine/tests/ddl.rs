//! Transactional DDL at the engine API: catalog changes made in a transaction are undone by its
//! rollback, by a rollback to a savepoint, and by recovery when it was unfinished at a crash,
//! leaving the catalog, the rows and the data files as they were; a dropped table's space goes
//! only after the commit, once no older snapshot is open, also when a crash came in between.

mod common;

use std::ops::Bound;
use std::sync::Arc;
use std::time::Duration;

use steady_engine::catalog::{ColumnDef, TableDef};
use steady_engine::engine::{Engine, EngineConfig, Isolation, Transaction};
use steady_storage::io::{MemVfs, Vfs};
use steady_storage::store::StoreConfig;
use steady_types::{DataType, Value};

fn config() -> EngineConfig {
    common::config(256, 16 << 20)
}

fn open(vfs: &Arc<dyn Vfs>) -> Arc<Engine> {
    Engine::open_vfs(vfs.clone(), &config()).unwrap()
}

/// A database with table `accounts (id, owner, balance)` of 300 rows and an index on owner.
fn database() -> (Arc<dyn Vfs>, Arc<Engine>) {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let engine = open(&vfs);
    let columns = vec![
        ColumnDef::plain("id", DataType::BigInt),
        ColumnDef::plain("owner", DataType::Text),
        ColumnDef::plain("balance", DataType::BigInt),
    ];
    engine
        .autocommit(|t| t.create_table("accounts", columns, vec![0]))
        .unwrap();
    let table = engine.table("accounts").unwrap();
    engine
        .autocommit(|t| {
            for id in 0..300 {
                let owner = Value::Text(format!("owner{}", id % 7));
                t.insert_row(&table, &[Value::BigInt(id), owner, Value::BigInt(id * 10)])?;
            }
            Ok(())
        })
        .unwrap();
    engine
        .autocommit(|t| t.create_secondary_index("accounts", "by_owner", vec![1], false))
        .unwrap();
    (vfs, engine)
}

/// Everything DDL may change: each table's definition and committed rows, and the data files
/// (once dropped spaces are reclaimed).
#[derive(Debug, PartialEq)]
struct Snapshot {
    tables: Vec<(TableDef, Vec<Vec<Value>>)>,
    files: Vec<String>,
}

fn snapshot(vfs: &Arc<dyn Vfs>, engine: &Arc<Engine>) -> Snapshot {
    assert!(engine.store().wait_reclaimed(Duration::from_secs(10)));
    let mut reader = engine.begin(Isolation::RepeatableRead).unwrap();
    let tables = engine
        .tables()
        .into_iter()
        .map(|table| {
            let rows = rows(&mut reader, &table);
            ((*table).clone(), rows)
        })
        .collect();
    reader.commit().unwrap();
    let files = vfs
        .list()
        .unwrap()
        .into_iter()
        .filter(|name| name.starts_with("space_"))
        .collect();
    Snapshot { tables, files }
}

fn rows(txn: &mut Transaction, table: &TableDef) -> Vec<Vec<Value>> {
    txn.scan_rows(table, Bound::Unbounded, Bound::Unbounded)
        .unwrap()
        .map(|row| row.unwrap().1)
        .collect()
}

/// Every kind of DDL on `accounts` and a new table, with rows written around them.
fn change_everything(engine: &Arc<Engine>, txn: &mut Transaction) {
    let columns = vec![ColumnDef::plain("k", DataType::Integer)];
    let created = txn.create_table("created", columns, vec![0]).unwrap();
    txn.insert_row(&created, &[Value::Integer(1)]).unwrap();
    txn.create_secondary_index("created", "created_k", vec![0], true)
        .unwrap();
    let accounts = engine.table("accounts").unwrap();
    txn.insert_row(
        &accounts,
        &[Value::BigInt(1000), Value::Text("new".into()), Value::Null],
    )
    .unwrap();
    txn.create_secondary_index("accounts", "by_balance", vec![2], false)
        .unwrap();
    txn.drop_secondary_index("accounts", "by_owner").unwrap();
    let mut altered = (*engine.table("accounts").unwrap()).clone();
    altered
        .columns
        .push(ColumnDef::plain("note", DataType::Text));
    txn.alter_table(altered).unwrap();
    txn.truncate_table("accounts").unwrap();
    let accounts = engine.table("accounts").unwrap();
    txn.insert_row(
        &accounts,
        &[Value::BigInt(5), Value::Null, Value::Null, Value::Null],
    )
    .unwrap();
    txn.add_primary_key("accounts", vec![0]).unwrap();
    txn.rewrite_table("accounts").unwrap();
    txn.drop_table("created").unwrap();
}

#[test]
fn ddl_rolled_back_with_its_transaction_leaves_catalog_rows_and_files_as_before() {
    let (vfs, engine) = database();
    let before = snapshot(&vfs, &engine);
    let mut txn = engine.begin(Isolation::ReadCommitted).unwrap();
    change_everything(&engine, &mut txn);
    assert_eq!(rows(&mut txn, &engine.table("accounts").unwrap()).len(), 1);
    txn.rollback().unwrap();
    engine.purge().unwrap();
    assert_eq!(snapshot(&vfs, &engine), before);
    // The table still takes writes through its restored index.
    engine
        .autocommit(|t| t.create_secondary_index("accounts", "by_balance", vec![2], false))
        .unwrap();
    engine.close().unwrap();
    let report = steady_storage::check::check_directory(vfs.as_ref(), &mut |_| {}).unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
}

#[test]
fn ddl_after_a_savepoint_is_undone_by_rolling_back_to_it_and_ddl_before_it_commits() {
    let (vfs, engine) = database();
    let mut txn = engine.begin(Isolation::ReadCommitted).unwrap();
    txn.create_secondary_index("accounts", "by_owner_id", vec![1, 0], false)
        .unwrap();
    let savepoint = txn.savepoint();
    change_everything(&engine, &mut txn);
    txn.rollback_to(&savepoint).unwrap();
    txn.commit().unwrap();
    engine.purge().unwrap();
    let after = snapshot(&vfs, &engine);
    let (accounts, rows) = &after.tables[0];
    assert_eq!(after.tables.len(), 1);
    let indexes: Vec<&str> = accounts.indexes.iter().map(|i| i.name.as_str()).collect();
    assert_eq!(indexes, ["by_owner", "by_owner_id"]);
    assert_eq!(accounts.columns.len(), 3);
    assert_eq!(rows.len(), 300);
    assert_eq!(after.files.len(), 2, "{:?}", after.files);
}

#[test]
fn ddl_of_a_transaction_unfinished_at_a_crash_is_undone_on_open() {
    let (vfs, engine) = database();
    let before = snapshot(&vfs, &engine);
    let mut txn = engine.begin(Isolation::ReadCommitted).unwrap();
    change_everything(&engine, &mut txn);
    engine.store().sync_log().unwrap();
    std::mem::forget(txn);
    drop(engine);
    let engine = open(&vfs);
    assert_eq!(snapshot(&vfs, &engine), before);
    engine.close().unwrap();
    let report = steady_storage::check::check_directory(vfs.as_ref(), &mut |_| {}).unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
}

#[test]
fn a_dropped_tables_space_stays_for_older_snapshots_and_goes_after_the_commit_and_a_crash() {
    let (vfs, engine) = database();
    let files = |vfs: &Arc<dyn Vfs>| snapshot(vfs, &open_view(vfs)).files.len();
    let mut older = engine.begin(Isolation::RepeatableRead).unwrap();
    assert_eq!(
        rows(&mut older, &engine.table("accounts").unwrap()).len(),
        300
    );
    let accounts = engine.table("accounts").unwrap();
    engine.autocommit(|t| t.drop_table("accounts")).unwrap();
    assert!(engine.table("accounts").is_none());
    engine.purge().unwrap();
    // The older snapshot's scan of the dropped table still reads its space.
    assert_eq!(rows(&mut older, &accounts).len(), 300);
    assert_eq!(snapshot(&vfs, &engine).files.len(), 2);
    older.commit().unwrap();
    // Crash before purge reaches the drop: the restart's purge drops the space.
    drop(engine);
    assert_eq!(files(&vfs), 1);
}

/// The database in `vfs` opened and purged (what a restart does in the background).
fn open_view(vfs: &Arc<dyn Vfs>) -> Arc<Engine> {
    let engine = open(vfs);
    engine.purge().unwrap();
    engine
}

/// A snapshot older than a committed TRUNCATE or rebuild is refused on that table (40001), since
/// its old contents are no longer where it would look; newer snapshots read the new contents,
/// other tables are not affected, and a rolled-back TRUNCATE refuses nothing.
#[test]
fn a_snapshot_older_than_a_truncate_or_rebuild_is_refused_on_that_table() {
    let (_vfs, engine) = database();
    let columns = vec![ColumnDef::plain("k", DataType::Integer)];
    let other = engine
        .autocommit(|t| t.create_table("other", columns, vec![0]))
        .unwrap();
    let refused = |older: &mut Transaction| {
        let accounts = engine.table("accounts").unwrap();
        let err = older
            .scan_rows(&accounts, Bound::Unbounded, Bound::Unbounded)
            .err()
            .expect("an older snapshot is refused");
        assert_eq!(err.sqlstate(), "40001", "{err}");
        assert!(rows(older, &other).is_empty(), "other tables are read");
    };
    let mut older = engine.begin(Isolation::RepeatableRead).unwrap();
    assert_eq!(
        rows(&mut older, &engine.table("accounts").unwrap()).len(),
        300
    );
    let mut rolled_back = engine.begin(Isolation::ReadCommitted).unwrap();
    rolled_back.truncate_table("accounts").unwrap();
    rolled_back.rollback().unwrap();
    assert_eq!(
        rows(&mut older, &engine.table("accounts").unwrap()).len(),
        300
    );
    engine.autocommit(|t| t.rewrite_table("accounts")).unwrap();
    refused(&mut older);
    older.rollback().unwrap();
    let mut newer = engine.begin(Isolation::RepeatableRead).unwrap();
    assert_eq!(
        rows(&mut newer, &engine.table("accounts").unwrap()).len(),
        300
    );
    engine.autocommit(|t| t.truncate_table("accounts")).unwrap();
    refused(&mut newer);
    newer.rollback().unwrap();
    let mut newest = engine.begin(Isolation::RepeatableRead).unwrap();
    assert!(rows(&mut newest, &engine.table("accounts").unwrap()).is_empty());
    newest.commit().unwrap();
}

/// A name another transaction's DDL has claimed is not taken until that transaction ends: a
/// table dropped by an open transaction is not created again under its name by another, which
/// waits, then fails if the drop rolled back (the table is back) and succeeds if it committed.
#[test]
fn creating_a_table_under_a_name_an_open_drop_claims_waits_for_the_drop() {
    let (_vfs, engine) = database();
    for (end, created) in [("rollback", false), ("commit", true)] {
        let mut dropper = engine.begin(Isolation::ReadCommitted).unwrap();
        dropper.drop_table("accounts").unwrap();
        let waits = engine.locks().stats().lock_waits;
        let creator = std::thread::spawn({
            let engine = Arc::clone(&engine);
            move || {
                let columns = vec![ColumnDef::plain("id", DataType::BigInt)];
                engine.autocommit(|t| t.create_table("accounts", columns, vec![0]))
            }
        });
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while engine.locks().stats().lock_waits == waits {
            assert!(
                std::time::Instant::now() < deadline,
                "the creator never waited"
            );
            std::thread::yield_now();
        }
        match end {
            "rollback" => dropper.rollback().unwrap(),
            _ => dropper.commit().unwrap(),
        }
        let outcome = creator.join().unwrap();
        assert_eq!(outcome.is_ok(), created, "after {end}: {outcome:?}");
        assert_eq!(engine.tables().len(), 1);
    }
    assert_eq!(engine.table("accounts").unwrap().columns.len(), 1);
}

/// CREATE INDEX on one table holds no lock that writers of other tables take across its scan,
/// sort and build: inserts into another table go on while it builds.
#[test]
fn an_index_build_lets_writers_of_other_tables_go_on() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let engine = Engine::open_vfs(
        vfs,
        &EngineConfig {
            store: StoreConfig {
                buffer_pool_bytes: 64 << 20,
                ..config().store
            },
            ..config()
        },
    )
    .unwrap();
    let columns = || {
        vec![
            ColumnDef::plain("id", DataType::BigInt),
            ColumnDef::plain("v", DataType::BigInt),
        ]
    };
    let big = engine
        .autocommit(|t| t.create_table("big", columns(), vec![0]))
        .unwrap();
    let other = engine
        .autocommit(|t| t.create_table("other", columns(), vec![0]))
        .unwrap();
    engine
        .autocommit(|t| {
            let rows: Vec<Vec<Value>> = (0..300_000)
                .map(|id| vec![Value::BigInt(id), Value::BigInt(id * 7 % 1000)])
                .collect();
            t.insert_rows(&big, &rows).map_err(|(_, e)| e)?;
            Ok(())
        })
        .unwrap();
    let build = std::thread::spawn({
        let engine = Arc::clone(&engine);
        move || engine.autocommit(|t| t.create_secondary_index("big", "big_v", vec![1], false))
    });
    let mut during_build = 0;
    let mut id = 0;
    while !build.is_finished() {
        engine
            .autocommit(|t| t.insert_row(&other, &[Value::BigInt(id), Value::BigInt(id)]))
            .unwrap();
        id += 1;
        if !build.is_finished() {
            during_build += 1;
        }
    }
    build.join().unwrap().unwrap();
    // Holding the engine's DDL lock across the build, as before, lets 3 to 5 through (those
    // that commit before the build starts); without it, about a hundred on this machine.
    assert!(
        during_build >= 25,
        "{during_build} inserts while the index was built"
    );
}

/// A covering index records its included columns in the catalog: they are there after a restart,
/// and the index finds by its key columns alone what an index without them finds.
#[test]
fn a_covering_indexs_included_columns_outlive_a_restart() {
    let (vfs, engine) = database();
    engine
        .autocommit(|t| t.create_covering_index("accounts", "by_balance", vec![2], vec![1], true))
        .unwrap();
    engine.close().unwrap();
    let engine = open(&vfs);
    let table = engine.table("accounts").unwrap();
    let index = table.index("by_balance").unwrap();
    assert_eq!(
        (index.columns.as_slice(), index.include.as_slice()),
        (&[2][..], &[1][..])
    );
    assert!(table.index("by_owner").unwrap().include.is_empty());
    let found = engine
        .autocommit(|t| {
            let key = steady_engine::table::index_key(&[Value::BigInt(50)], &[0]);
            t.index_rows(&table, index, Bound::Included(&key), Bound::Included(&key))
        })
        .unwrap();
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].1[0], Value::BigInt(5));
}
