//! Tables at the engine API: typed rows, secondary indexes kept in step (also for old snapshots,
//! rollback and purge), unique indexes, hidden row ids, and DDL that survives a restart.

mod common;

use std::ops::Bound;
use std::sync::Arc;

use steady_engine::catalog::{ColumnDef, TableDef};
use steady_engine::codec::encode_key;
use steady_engine::engine::{Engine, EngineConfig, Isolation};
use steady_engine::table::primary_key;
use steady_storage::io::{MemVfs, Vfs};
use steady_types::{DataType, Value};

fn config() -> EngineConfig {
    common::config(256, 16 << 20)
}

fn column(name: &str, data_type: DataType) -> ColumnDef {
    ColumnDef::plain(name, data_type)
}

fn accounts(engine: &Arc<Engine>) {
    let columns = vec![
        column("id", DataType::Integer),
        column("owner", DataType::Text),
        column("balance", DataType::BigInt),
    ];
    engine
        .autocommit(|t| t.create_table("accounts", columns, vec![0]))
        .unwrap();
    engine
        .autocommit(|t| t.create_secondary_index("accounts", "by_owner", vec![1], false))
        .unwrap();
}

/// A fresh engine with table `t (id integer primary key, <second>)`.
fn keyed_table(second: (&str, DataType)) -> (Arc<Engine>, Arc<TableDef>) {
    let engine = Engine::open_vfs(Arc::new(MemVfs::new()), &config()).unwrap();
    let columns = vec![column("id", DataType::Integer), column(second.0, second.1)];
    engine
        .autocommit(|t| t.create_table("t", columns, vec![0]))
        .unwrap();
    let table = engine.table("t").unwrap();
    (engine, table)
}

fn row(id: i32, owner: &str, balance: i64) -> Vec<Value> {
    vec![
        Value::Integer(id),
        Value::Text(owner.into()),
        Value::BigInt(balance),
    ]
}

fn owner_key(owner: &str) -> Vec<u8> {
    encode_key(&[Value::Text(owner.into())])
}

fn ids_of(rows: &[(Vec<u8>, Vec<Value>)]) -> Vec<i32> {
    rows.iter()
        .map(|(_, v)| match v[0] {
            Value::Integer(id) => id,
            _ => panic!("id is an integer"),
        })
        .collect()
}

#[test]
fn secondary_indexes_follow_updates_for_every_snapshot_and_purge_drops_stale_entries() {
    let engine = Engine::open_vfs(Arc::new(MemVfs::new()), &config()).unwrap();
    accounts(&engine);
    let table = engine.table("accounts").unwrap();
    let index = table.index("by_owner").unwrap().clone();
    let mut setup = engine.begin(Isolation::ReadCommitted).unwrap();
    for (id, owner) in [(1, "ann"), (2, "bob"), (3, "ann")] {
        setup.insert_row(&table, &row(id, owner, 100)).unwrap();
    }
    setup.commit().unwrap();
    let ann = owner_key("ann");
    let mut old = engine.begin(Isolation::RepeatableRead).unwrap();
    assert_eq!(
        ids_of(
            &old.index_rows(&table, &index, Bound::Included(&ann), Bound::Included(&ann))
                .unwrap()
        ),
        vec![1, 3]
    );

    let mut mover = engine.begin(Isolation::ReadCommitted).unwrap();
    let pk = primary_key(&table, &row(1, "", 0));
    assert!(mover.update_row(&table, &pk, &row(1, "bob", 100)).unwrap());
    mover.commit().unwrap();

    let mut now = engine.begin(Isolation::RepeatableRead).unwrap();
    let bob = owner_key("bob");
    assert_eq!(
        ids_of(
            &now.index_rows(&table, &index, Bound::Included(&ann), Bound::Included(&ann))
                .unwrap()
        ),
        vec![3]
    );
    assert_eq!(
        ids_of(
            &now.index_rows(&table, &index, Bound::Included(&bob), Bound::Included(&bob))
                .unwrap()
        ),
        vec![1, 2]
    );
    assert_eq!(
        ids_of(
            &old.index_rows(&table, &index, Bound::Included(&ann), Bound::Included(&ann))
                .unwrap()
        ),
        vec![1, 3],
        "the old snapshot still reaches row 1 through its old key"
    );
    assert_eq!(
        engine.index_records(index.id).unwrap(),
        4,
        "(ann,1) stays for the old snapshot"
    );
    old.commit().unwrap();
    now.commit().unwrap();
    engine.purge().unwrap();
    assert_eq!(
        engine.index_records(index.id).unwrap(),
        3,
        "purge removed the stale (ann,1)"
    );
    let mut after = engine.begin(Isolation::RepeatableRead).unwrap();
    let all = after
        .index_rows(&table, &index, Bound::Unbounded, Bound::Unbounded)
        .unwrap();
    assert_eq!(
        ids_of(&all),
        vec![3, 1, 2],
        "index order: ann (3), then bob (1, 2)"
    );
}

#[test]
fn rollback_removes_new_index_entries_and_unique_indexes_refuse_duplicates() {
    let engine = Engine::open_vfs(Arc::new(MemVfs::new()), &config()).unwrap();
    accounts(&engine);
    engine
        .autocommit(|t| t.create_secondary_index("accounts", "unique_balance", vec![2], true))
        .unwrap();
    let table = engine.table("accounts").unwrap();
    let mut txn = engine.begin(Isolation::ReadCommitted).unwrap();
    txn.insert_row(&table, &row(1, "ann", 10)).unwrap();
    let err = txn.insert_row(&table, &row(2, "bob", 10)).unwrap_err();
    assert_eq!(err.sqlstate(), "23505");
    txn.insert_row(&table, &row(3, "cid", 30)).unwrap();
    txn.commit().unwrap();
    let mut failed = engine.begin(Isolation::ReadCommitted).unwrap();
    failed.insert_row(&table, &row(4, "dan", 40)).unwrap();
    failed.rollback().unwrap();
    let index = table.index("by_owner").unwrap();
    let mut reader = engine.begin(Isolation::ReadCommitted).unwrap();
    let dan = owner_key("dan");
    assert!(reader
        .index_rows(&table, index, Bound::Included(&dan), Bound::Included(&dan))
        .unwrap()
        .is_empty());
    let mut again = engine.begin(Isolation::ReadCommitted).unwrap();
    again.insert_row(&table, &row(4, "dan", 40)).unwrap();
    again.commit().unwrap();
    assert_eq!(
        engine
            .autocommit(|t| t.create_secondary_index("accounts", "by_owner", vec![1], false))
            .unwrap_err()
            .sqlstate(),
        "42P07"
    );
}

#[test]
fn ddl_survives_a_restart_and_drop_and_truncate_are_immediate() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let engine = Engine::open_vfs(vfs.clone(), &config()).unwrap();
    accounts(&engine);
    engine
        .autocommit(|t| t.create_table("log", vec![column("line", DataType::Text)], vec![]))
        .unwrap();
    let table = engine.table("accounts").unwrap();
    let log = engine.table("log").unwrap();
    let mut txn = engine.begin(Isolation::ReadCommitted).unwrap();
    for id in 0..200 {
        txn.insert_row(&table, &row(id, "x", 1)).unwrap();
        txn.insert_row(&log, &[Value::Text(format!("line {id}"))])
            .unwrap();
    }
    txn.commit().unwrap();
    engine.close().unwrap();

    let engine = Engine::open_vfs(vfs.clone(), &config()).unwrap();
    let names: Vec<String> = engine.tables().iter().map(|t| t.name.clone()).collect();
    assert_eq!(names, vec!["accounts", "log"]);
    let table = engine.table("accounts").unwrap();
    let log = engine.table("log").unwrap();
    let mut txn = engine.begin(Isolation::ReadCommitted).unwrap();
    assert_eq!(
        txn.scan_rows(&table, Bound::Unbounded, Bound::Unbounded)
            .unwrap()
            .count(),
        200
    );
    assert_eq!(
        txn.scan_rows(&log, Bound::Unbounded, Bound::Unbounded)
            .unwrap()
            .count(),
        200
    );
    txn.insert_row(&log, &[Value::Text("after restart".into())])
        .unwrap();
    txn.commit().unwrap();
    engine.autocommit(|t| t.truncate_table("log")).unwrap();
    let log = engine.table("log").unwrap();
    let mut txn = engine.begin(Isolation::ReadCommitted).unwrap();
    assert_eq!(
        txn.scan_rows(&log, Bound::Unbounded, Bound::Unbounded)
            .unwrap()
            .count(),
        0
    );
    drop(txn);
    engine.autocommit(|t| t.drop_table("accounts")).unwrap();
    assert!(engine.table("accounts").is_none());
    assert_eq!(
        engine
            .autocommit(|t| t.drop_table("accounts"))
            .unwrap_err()
            .sqlstate(),
        "42P01"
    );
    accounts(&engine);
    let table = engine.table("accounts").unwrap();
    let mut txn = engine.begin(Isolation::ReadCommitted).unwrap();
    assert_eq!(
        txn.scan_rows(&table, Bound::Unbounded, Bound::Unbounded)
            .unwrap()
            .count(),
        0
    );
    drop(txn);
    engine.close().unwrap();
    let report = steady_storage::check::check_directory(vfs.as_ref(), &mut |_| {}).unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
}

/// Seed 000 in miniature, on counters: a table four times the buffer pool and an index on
/// `v = id % 50`; deleting `v < 5` through the index, in primary-key order, reads each page of the
/// table and of the index at most once.
#[test]
fn deleting_through_an_index_reads_each_clustered_page_once() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let mut config = config();
    config.store.buffer_pool_bytes = 256 * 4096;
    let engine = Engine::open_vfs(vfs, &config).unwrap();
    let columns = vec![
        column("id", DataType::Integer),
        column("v", DataType::Integer),
        column("pad", DataType::Text),
    ];
    engine
        .autocommit(|t| t.create_table("t", columns, vec![0]))
        .unwrap();
    let table = engine.table("t").unwrap();
    let rows = 22_000;
    let mut txn = engine.begin(Isolation::ReadCommitted).unwrap();
    for id in 0..rows {
        let values = vec![
            Value::Integer(id),
            Value::Integer(id % 50),
            Value::Text("p".repeat(150)),
        ];
        txn.insert_row(&table, &values).unwrap();
    }
    txn.commit().unwrap();
    let table = engine
        .autocommit(|t| t.create_secondary_index("t", "by_v", vec![1], false))
        .unwrap();
    let index = table.index("by_v").unwrap().clone();
    engine.store().checkpoint().unwrap();
    let space = engine.store().space(table.space).unwrap();
    let table_pages = space.allocated_pages().len() as u64;
    assert!(
        table_pages > 4 * 256,
        "the table ({table_pages} pages) must be 4x the pool"
    );

    let before = engine.store().pool_stats().reads;
    let mut txn = engine.begin(Isolation::ReadCommitted).unwrap();
    let low = encode_key(&[Value::Integer(0)]);
    let high = encode_key(&[Value::Integer(5)]);
    let keys = txn
        .index_candidates(
            &index,
            Bound::Included(&low),
            Bound::Excluded(&high),
            usize::MAX,
        )
        .unwrap();
    assert!(keys.resume_after.is_none());
    let mut deleted = 0;
    for pk in keys.keys {
        let Some(row) = txn.lock_table_row(&table, &pk).unwrap() else {
            continue;
        };
        if matches!(row[1], Value::Integer(v) if v < 5) && txn.delete_row(&table, &pk).unwrap() {
            deleted += 1;
        }
    }
    txn.commit().unwrap();
    let reads = engine.store().pool_stats().reads - before;
    assert_eq!(deleted, rows as usize / 10);
    assert!(
        reads <= table_pages,
        "{reads} page reads for a table of {table_pages} pages (index included)"
    );
}

/// UPDATE and DELETE write locked rows in batches (`update_rows`, `delete_rows`): the rows, their
/// index entries and their old versions are as one by one — an older snapshot still reads the old
/// rows, through the index too; a savepoint and a rollback undo the batch; and a row written in a
/// batch without `lock_row` first is still locked (a row another writer holds makes it wait).
#[test]
fn batched_updates_and_deletes_write_as_one_by_one() {
    let engine = Engine::open_vfs(Arc::new(MemVfs::new()), &config()).unwrap();
    accounts(&engine);
    engine
        .autocommit(|t| t.create_secondary_index("accounts", "by_balance", vec![2], false))
        .unwrap();
    let table = engine.table("accounts").unwrap();
    let key = |id: i32| primary_key(&table, &[Value::Integer(id)]);
    let mut setup = engine.begin(Isolation::ReadCommitted).unwrap();
    for id in 0..1000 {
        setup.insert_row(&table, &row(id, "o", 1)).unwrap();
    }
    setup.commit().unwrap();
    let index = table.index("by_balance").unwrap();
    let balance_rows = |txn: &mut steady_engine::engine::Transaction, balance: i64| {
        let k = encode_key(&[Value::BigInt(balance)]);
        let found = txn.index_rows(&table, index, Bound::Included(&k), Bound::Included(&k));
        found.unwrap().len()
    };
    let mut old = engine.begin(Isolation::RepeatableRead).unwrap();
    assert_eq!(balance_rows(&mut old, 1), 1000);

    let mut txn = engine.begin(Isolation::ReadCommitted).unwrap();
    let thirds: Vec<Vec<u8>> = (0..1000).filter(|id| id % 3 == 0).map(key).collect();
    let mut probe = thirds[..3].to_vec();
    probe.push(key(5000));
    let seen = txn.get_rows(&table, &probe).unwrap();
    let expected = [
        Some(row(0, "o", 1)),
        Some(row(3, "o", 1)),
        Some(row(6, "o", 1)),
        None,
    ];
    assert_eq!(seen, expected);
    let locked = txn.lock_table_rows(&table, &thirds).unwrap();
    let mut updates = Vec::new();
    for (pk, current) in thirds.iter().zip(locked) {
        let current = current.unwrap();
        let new = vec![current[0].clone(), current[1].clone(), Value::BigInt(2)];
        updates.push((pk.clone(), new));
    }
    assert_eq!(txn.update_rows(&table, &updates).unwrap(), 334);
    let savepoint = txn.savepoint();
    let doomed: Vec<Vec<u8>> = (0..1000).filter(|id| id % 3 == 1).map(key).collect();
    assert_eq!(txn.delete_rows(&table, &doomed).unwrap(), 333);
    assert_eq!(balance_rows(&mut txn, 1), 333);
    txn.rollback_to(&savepoint).unwrap();
    assert_eq!(balance_rows(&mut txn, 1), 666);
    assert_eq!(balance_rows(&mut txn, 2), 334);
    assert_eq!(txn.delete_rows(&table, &doomed).unwrap(), 333);
    txn.commit().unwrap();

    assert_eq!(balance_rows(&mut old, 1), 1000);
    assert_eq!(old.get_row(&table, &key(1)).unwrap(), Some(row(1, "o", 1)));
    old.commit().unwrap();
    let mut now = engine.begin(Isolation::ReadCommitted).unwrap();
    assert_eq!(balance_rows(&mut now, 2), 334);
    assert_eq!(balance_rows(&mut now, 1), 333);
    assert_eq!(now.get_row(&table, &key(1)).unwrap(), None);
    now.commit().unwrap();
    engine.purge().unwrap();
    assert_eq!(engine.stats().history_length, 0);

    let mut undone = engine.begin(Isolation::ReadCommitted).unwrap();
    let all: Vec<Vec<u8>> = (0..1000).filter(|id| id % 3 != 1).map(key).collect();
    assert_eq!(undone.delete_rows(&table, &all).unwrap(), 667);
    undone.rollback().unwrap();
    let mut after = engine.begin(Isolation::ReadCommitted).unwrap();
    assert_eq!(
        balance_rows(&mut after, 2) + balance_rows(&mut after, 1),
        667
    );
    after.commit().unwrap();

    let mut holder = engine.begin(Isolation::ReadCommitted).unwrap();
    assert!(holder
        .update_row(&table, &key(0), &row(0, "held", 2))
        .unwrap());
    let waits_before = engine.locks().stats().lock_waits;
    std::thread::scope(|s| {
        let waiter = s.spawn(|| {
            let mut txn = engine.begin(Isolation::ReadCommitted).unwrap();
            let deleted = txn.delete_rows(&table, &[key(0), key(3)]).unwrap();
            txn.commit().unwrap();
            deleted
        });
        while engine.locks().stats().lock_waits == waits_before {
            assert!(!waiter.is_finished(), "a batch must wait for a held row");
            std::thread::yield_now();
        }
        holder.commit().unwrap();
        assert_eq!(waiter.join().unwrap(), 2);
    });
}

/// A batch that fails on one of its rows (first-updater-wins under REPEATABLE READ) writes none
/// of them and notes none as written: after ROLLBACK TO SAVEPOINT, a write of a row before the
/// failing one still saves the committed version, so a rollback puts it back.
#[test]
fn a_batch_failing_midway_leaves_its_earlier_rows_as_they_were() {
    let engine = Engine::open_vfs(Arc::new(MemVfs::new()), &config()).unwrap();
    accounts(&engine);
    let table = engine.table("accounts").unwrap();
    let key = |id: i32| primary_key(&table, &[Value::Integer(id)]);
    let mut setup = engine.begin(Isolation::ReadCommitted).unwrap();
    for id in 0..10 {
        setup.insert_row(&table, &row(id, "o", 1)).unwrap();
    }
    setup.commit().unwrap();
    let mut txn = engine.begin(Isolation::RepeatableRead).unwrap();
    assert_eq!(txn.get_row(&table, &key(0)).unwrap(), Some(row(0, "o", 1)));
    let mut other = engine.begin(Isolation::ReadCommitted).unwrap();
    assert!(other
        .update_row(&table, &key(5), &row(5, "other", 2))
        .unwrap());
    other.commit().unwrap();
    let savepoint = txn.savepoint();
    let all: Vec<Vec<u8>> = (0..10).map(key).collect();
    let err = txn.delete_rows(&table, &all).unwrap_err();
    assert_eq!(err.sqlstate(), "40001");
    txn.rollback_to(&savepoint).unwrap();
    assert_eq!(txn.get_row(&table, &key(1)).unwrap(), Some(row(1, "o", 1)));
    assert!(txn.update_row(&table, &key(1), &row(1, "mine", 3)).unwrap());
    txn.rollback().unwrap();
    let mut after = engine.begin(Isolation::ReadCommitted).unwrap();
    assert_eq!(
        after.get_row(&table, &key(1)).unwrap(),
        Some(row(1, "o", 1))
    );
    assert_eq!(
        after.get_row(&table, &key(5)).unwrap(),
        Some(row(5, "other", 2))
    );
}

/// pgbench creates its tables without primary keys, loads them, then adds the keys: the table is
/// rebuilt clustered by the new key, with its indexes.
#[test]
fn adding_a_primary_key_reclusters_a_loaded_table() {
    let engine = Engine::open_vfs(Arc::new(MemVfs::new()), &config()).unwrap();
    let columns = vec![
        column("aid", DataType::Integer),
        column("abalance", DataType::Integer),
    ];
    let table = engine
        .autocommit(|t| t.create_table("pgbench_accounts", columns, vec![]))
        .unwrap();
    let mut txn = engine.begin(Isolation::ReadCommitted).unwrap();
    for aid in (0..500).rev() {
        txn.insert_row(&table, &[Value::Integer(aid), Value::Integer(0)])
            .unwrap();
    }
    txn.commit().unwrap();
    engine
        .autocommit(|t| t.create_secondary_index("pgbench_accounts", "by_balance", vec![1], false))
        .unwrap();
    let table = engine
        .autocommit(|t| t.add_primary_key("pgbench_accounts", vec![0]))
        .unwrap();
    assert_eq!(table.primary_key, vec![0]);
    let mut txn = engine.begin(Isolation::ReadCommitted).unwrap();
    let key = primary_key(&table, &[Value::Integer(42), Value::Null]);
    assert_eq!(
        txn.get_row(&table, &key).unwrap(),
        Some(vec![Value::Integer(42), Value::Integer(0)])
    );
    let first: Vec<Value> = txn
        .scan_rows(&table, Bound::Unbounded, Bound::Unbounded)
        .unwrap()
        .take(3)
        .map(|r| r.unwrap().1[0].clone())
        .collect();
    assert_eq!(
        first,
        vec![Value::Integer(0), Value::Integer(1), Value::Integer(2)]
    );
    let index = table.index("by_balance").unwrap();
    let zero = encode_key(&[Value::Integer(0)]);
    assert_eq!(
        txn.index_rows(
            &table,
            index,
            Bound::Included(&zero),
            Bound::Included(&zero)
        )
        .unwrap()
        .len(),
        500
    );
    assert!(txn
        .update_row(&table, &key, &[Value::Integer(42), Value::Integer(7)])
        .unwrap());
    txn.commit().unwrap();
    let mut dup = engine.begin(Isolation::ReadCommitted).unwrap();
    assert_eq!(
        dup.insert_row(&table, &[Value::Integer(42), Value::Integer(1)])
            .unwrap_err()
            .sqlstate(),
        "23505"
    );
}

/// Rows loaded in the order of the new key are streamed into the rebuilt table; a row out of
/// that order late in the load makes the rebuild gather and sort them instead. Either way every
/// row and index entry is there, and a NULL or a repeated key fails without changing the table.
#[test]
fn adding_a_primary_key_streams_rows_in_key_order_and_sorts_the_rest() {
    let engine = Engine::open_vfs(Arc::new(MemVfs::new()), &config()).unwrap();
    let load = |name: &str, keys: &[Value]| {
        let columns = vec![
            column("id", DataType::Integer),
            column("v", DataType::Integer),
        ];
        let table = engine
            .autocommit(|t| t.create_table(name, columns, vec![]))
            .unwrap();
        let mut txn = engine.begin(Isolation::ReadCommitted).unwrap();
        for key in keys {
            txn.insert_row(&table, &[key.clone(), Value::Integer(7)])
                .unwrap();
        }
        txn.commit().unwrap();
        engine
            .autocommit(|t| t.create_secondary_index(name, &format!("{name}_v"), vec![1], false))
            .unwrap();
    };
    let ascending: Vec<Value> = (0..3000).map(Value::Integer).collect();
    let mut late_disorder = ascending.clone();
    late_disorder.push(Value::Integer(-1));
    for (name, keys) in [("in_order", &ascending), ("late_disorder", &late_disorder)] {
        load(name, keys);
        let table = engine
            .autocommit(|t| t.add_primary_key(name, vec![0]))
            .unwrap();
        let mut txn = engine.begin(Isolation::ReadCommitted).unwrap();
        let ids: Vec<Value> = txn
            .scan_rows(&table, Bound::Unbounded, Bound::Unbounded)
            .unwrap()
            .map(|r| r.unwrap().1[0].clone())
            .collect();
        let mut expected = keys.clone();
        expected.sort_by_key(|v| match v {
            Value::Integer(i) => *i,
            _ => unreachable!(),
        });
        assert_eq!(ids, expected, "{name}");
        let index = table.index(&format!("{name}_v")).unwrap();
        let seven = encode_key(&[Value::Integer(7)]);
        let through_index = txn
            .index_rows(
                &table,
                index,
                Bound::Included(&seven),
                Bound::Included(&seven),
            )
            .unwrap();
        assert_eq!(through_index.len(), keys.len(), "{name}");
    }
    let mut repeated = ascending.clone();
    repeated.insert(2000, Value::Integer(1999));
    load("repeated", &repeated);
    let err = engine
        .autocommit(|t| t.add_primary_key("repeated", vec![0]))
        .unwrap_err();
    assert_eq!(err.sqlstate(), "23505");
    let mut with_null = ascending.clone();
    with_null.push(Value::Null);
    load("with_null", &with_null);
    let err = engine
        .autocommit(|t| t.add_primary_key("with_null", vec![0]))
        .unwrap_err();
    assert_eq!(err.sqlstate(), "23502");
    for name in ["repeated", "with_null"] {
        let table = engine.table(name).unwrap();
        assert!(table.primary_key.is_empty());
        let mut txn = engine.begin(Isolation::ReadCommitted).unwrap();
        let rows = txn
            .scan_rows(&table, Bound::Unbounded, Bound::Unbounded)
            .unwrap()
            .count();
        assert_eq!(rows, 3001, "{name}");
    }
}

/// DDL on a table waits for the transactions that wrote to it; a writer holding a definition
/// from before an index was built keeps the index up to date, and one from before a column was
/// added is told to repeat its statement.
#[test]
fn ddl_waits_for_writers_of_the_table() {
    let engine = Engine::open_vfs(Arc::new(MemVfs::new()), &config()).unwrap();
    accounts(&engine);
    let table = engine.table("accounts").unwrap();
    let mut writer = engine.begin(Isolation::ReadCommitted).unwrap();
    writer.insert_row(&table, &row(1, "ann", 1)).unwrap();
    let table_lock = steady_engine::lock::LockKey::new(table.id, Vec::new());
    std::thread::scope(|s| {
        let ddl = s.spawn(|| {
            engine
                .autocommit(|t| t.create_secondary_index("accounts", "by_balance", vec![2], false))
        });
        let waits = || {
            let locks = engine.locks().snapshot();
            locks.iter().any(|l| l.key == table_lock && !l.granted)
        };
        while !waits() {
            assert!(
                !ddl.is_finished(),
                "the index build must wait for the writer"
            );
            std::thread::yield_now();
        }
        writer.insert_row(&table, &row(2, "bob", 2)).unwrap();
        writer.commit().unwrap();
        ddl.join().unwrap().unwrap();
    });
    let mut late = engine.begin(Isolation::ReadCommitted).unwrap();
    late.insert_row(&table, &row(3, "cid", 3)).unwrap();
    late.commit().unwrap();
    let table = engine.table("accounts").unwrap();
    let mut widened = (*table).clone();
    widened
        .columns
        .push(ColumnDef::plain("note", DataType::Text));
    engine.autocommit(|t| t.alter_table(widened)).unwrap();
    let mut outdated = engine.begin(Isolation::ReadCommitted).unwrap();
    let refused = outdated.insert_row(&table, &row(4, "dan", 4)).unwrap_err();
    assert_eq!(refused.sqlstate(), "40001");
    outdated.rollback().unwrap();
    let index = table.index("by_balance").unwrap();
    let mut reader = engine.begin(Isolation::ReadCommitted).unwrap();
    assert_eq!(
        reader
            .index_rows(&table, index, Bound::Unbounded, Bound::Unbounded)
            .unwrap()
            .len(),
        3
    );
}

/// Inserts into a table without secondary indexes take no row lock and do not look for the key
/// before writing; a key that is present still ends in a unique violation, the rows already there
/// stay as they were (after the statement's own rollback too), and a key this transaction deleted
/// can be inserted again.
#[test]
fn an_insert_of_a_present_key_without_a_row_lock_is_a_unique_violation_that_changes_nothing() {
    let engine = Engine::open_vfs(Arc::new(MemVfs::new()), &config()).unwrap();
    let columns = vec![
        column("id", DataType::Integer),
        column("v", DataType::Integer),
    ];
    let table = engine
        .autocommit(|t| t.create_table("plain", columns, vec![0]))
        .unwrap();
    let mut txn = engine.begin(Isolation::ReadCommitted).unwrap();
    for id in 0..100 {
        txn.insert_row(&table, &[Value::Integer(id), Value::Integer(id)])
            .unwrap();
    }
    txn.commit().unwrap();

    let mut txn = engine.begin(Isolation::ReadCommitted).unwrap();
    txn.insert_row(&table, &[Value::Integer(100), Value::Integer(0)])
        .unwrap();
    let err = txn
        .insert_row(&table, &[Value::Integer(7), Value::Integer(-1)])
        .unwrap_err();
    assert!(
        matches!(
            err,
            steady_engine::error::EngineError::UniqueViolation { .. }
        ),
        "{err}"
    );
    let pk = primary_key(&table, &[Value::Integer(7)]);
    assert!(txn.delete_row(&table, &pk).unwrap());
    txn.insert_row(&table, &[Value::Integer(7), Value::Integer(70)])
        .unwrap();
    txn.rollback().unwrap();

    let mut txn = engine.begin(Isolation::ReadCommitted).unwrap();
    assert_eq!(
        txn.get_row(&table, &pk).unwrap(),
        Some(vec![Value::Integer(7), Value::Integer(7)])
    );
    let pk_new = primary_key(&table, &[Value::Integer(100)]);
    assert_eq!(txn.get_row(&table, &pk_new).unwrap(), None);
    let rows = txn
        .scan_rows(&table, Bound::Unbounded, Bound::Unbounded)
        .unwrap()
        .count();
    assert_eq!(rows, 100);
    txn.commit().unwrap();
}

/// Committed deletes and index-key updates that purge had not reached when the server stopped
/// (a crash here; a shutdown with purge behind is the same) are purged after the restart: the
/// delete marks leave the table and the stale index entries leave the index, and the rows a
/// transaction left unfinished are rolled back as before.
#[test]
fn purge_finishes_after_a_restart_what_it_had_not_reached() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let engine = Engine::open_vfs(vfs.clone(), &config()).unwrap();
    accounts(&engine);
    let table = engine.table("accounts").unwrap();
    let index = table.index("by_owner").unwrap().id;
    let mut setup = engine.begin(Isolation::ReadCommitted).unwrap();
    for id in 0..200 {
        setup.insert_row(&table, &row(id, "ann", 100)).unwrap();
    }
    setup.commit().unwrap();
    engine.purge().unwrap();
    let mut writer = engine.begin(Isolation::ReadCommitted).unwrap();
    for id in 0..100 {
        let pk = primary_key(&table, &row(id, "", 0));
        if id % 2 == 0 {
            assert!(writer.delete_row(&table, &pk).unwrap());
        } else {
            assert!(writer
                .update_row(&table, &pk, &row(id, "bob", 100))
                .unwrap());
        }
    }
    writer.commit().unwrap();
    let mut unfinished = engine.begin(Isolation::ReadCommitted).unwrap();
    unfinished.insert_row(&table, &row(500, "eve", 1)).unwrap();
    std::mem::forget(unfinished);
    assert_eq!(
        engine.index_records(table.id).unwrap(),
        201,
        "delete marks in place"
    );
    assert_eq!(
        engine.index_records(index).unwrap(),
        251,
        "stale (ann) entries and eve"
    );
    drop(engine);

    let engine = Engine::open_vfs(vfs, &config()).unwrap();
    let table = engine.table("accounts").unwrap();
    assert!(
        engine.stats().purge_lag > 0,
        "the unfinished purge is queued again"
    );
    engine.purge().unwrap();
    assert_eq!(
        engine.index_records(table.id).unwrap(),
        150,
        "live rows only"
    );
    assert_eq!(
        engine.index_records(index).unwrap(),
        150,
        "one entry per live row"
    );
    assert_eq!(engine.stats().history_length, 0);
    assert_eq!(engine.stats().purge_lag, 0);
    let mut reader = engine.begin(Isolation::ReadCommitted).unwrap();
    let bob = owner_key("bob");
    let bobs = reader
        .index_rows(
            &table,
            table.index("by_owner").unwrap(),
            Bound::Included(&bob),
            Bound::Included(&bob),
        )
        .unwrap();
    assert_eq!(bobs.len(), 50);
    reader.commit().unwrap();
}

/// `index_candidates` a batch at a time: each batch at most `max_keys` keys in primary-key order,
/// and the batches resumed one after another give every candidate the whole range gives.
#[test]
fn index_candidates_in_batches_give_the_whole_range_in_key_ordered_batches() {
    let (engine, table) = keyed_table(("v", DataType::Integer));
    let mut txn = engine.begin(Isolation::ReadCommitted).unwrap();
    for id in 0..300 {
        let values = [Value::Integer(id), Value::Integer(id % 7)];
        txn.insert_row(&table, &values).unwrap();
    }
    txn.commit().unwrap();
    let table = engine
        .autocommit(|t| t.create_secondary_index("t", "by_v", vec![1], false))
        .unwrap();
    let index = table.index("by_v").unwrap().clone();
    let (low, high) = (
        encode_key(&[Value::Integer(2)]),
        encode_key(&[Value::Integer(5)]),
    );
    let mut txn = engine.begin(Isolation::ReadCommitted).unwrap();
    let whole = txn
        .index_candidates(
            &index,
            Bound::Included(&low),
            Bound::Included(&high),
            usize::MAX,
        )
        .unwrap();
    assert_eq!(
        whole.keys.len(),
        (0..300).filter(|id| (2..=5).contains(&(id % 7))).count()
    );
    let (mut batched, mut batches, mut after) = (Vec::new(), 0, None::<Vec<u8>>);
    loop {
        let start = after
            .as_deref()
            .map_or(Bound::Included(&low[..]), Bound::Excluded);
        let batch = txn
            .index_candidates(&index, start, Bound::Included(&high), 16)
            .unwrap();
        assert!(batch.keys.len() <= 16);
        assert!(batch.keys.windows(2).all(|pair| pair[0] < pair[1]));
        batched.extend(batch.keys);
        batches += 1;
        match batch.resume_after {
            Some(key) => after = Some(key),
            None => break,
        }
    }
    assert!(batches > whole.keys.len() / 16);
    batched.sort();
    assert_eq!(batched, whole.keys);
}

/// A transaction that writes a row several times leaves no secondary entry of its in-between
/// versions (replaced in place, never in history, so purge never meets them), whether it commits
/// or rolls back; a version a savepoint keeps keeps its entries until the savepoint is undone.
#[test]
fn rows_written_twice_by_one_transaction_leave_no_stale_index_entries() {
    let (engine, _) = keyed_table(("v", DataType::Integer));
    let table = engine
        .autocommit(|t| t.create_secondary_index("t", "by_v", vec![1], false))
        .unwrap();
    let row = |id: i32, v: i32| vec![Value::Integer(id), Value::Integer(v)];
    let pk = |id: i32| primary_key(&table, &row(id, 0));
    engine
        .autocommit(|t| (0..4).try_for_each(|id| t.insert_row(&table, &row(id, 0)).map(drop)))
        .unwrap();
    let mut txn = engine.begin(Isolation::ReadCommitted).unwrap();
    for v in [1, 2, 3] {
        assert!(txn.update_row(&table, &pk(0), &row(0, v)).unwrap());
    }
    assert!(txn.update_row(&table, &pk(1), &row(1, 5)).unwrap());
    assert!(txn.delete_row(&table, &pk(1)).unwrap());
    assert!(txn.update_row(&table, &pk(2), &row(2, 6)).unwrap());
    let savepoint = txn.savepoint();
    assert!(txn.update_row(&table, &pk(2), &row(2, 7)).unwrap());
    txn.rollback_to(&savepoint).unwrap();
    txn.commit().unwrap();
    let mut txn = engine.begin(Isolation::ReadCommitted).unwrap();
    for v in [8, 9] {
        assert!(txn.update_row(&table, &pk(3), &row(3, v)).unwrap());
    }
    txn.rollback().unwrap();
    while engine.purge().unwrap() > 0 {}
    for check in engine.check_indexes().unwrap() {
        assert_eq!(check.missing_count, 0, "{check:?}");
        assert_eq!(check.stale, 0, "{check:?}");
        assert_eq!(check.entries, 3, "{check:?}");
    }
}

/// `estimate_rows` counts a small table's rows and delete marks exactly, and estimates a large
/// one's from a sample of its leaves — close to the truth, reading a small part of its pages.
#[test]
fn row_estimates_are_exact_for_a_small_table_and_close_for_a_large_one_without_a_scan() {
    let (engine, table) = keyed_table(("pad", DataType::Text));
    let fill = |from: i32, to: i32| {
        engine
            .autocommit(|t| {
                let rows: Vec<Vec<Value>> = (from..to)
                    .map(|id| vec![Value::Integer(id), Value::Text("p".repeat(100))])
                    .collect();
                t.insert_rows(&table, &rows).map_err(|(_, err)| err)
            })
            .unwrap();
    };
    fill(0, 500);
    engine
        .autocommit(|t| {
            (0..100).try_for_each(|id| {
                t.delete_row(
                    &table,
                    &primary_key(&table, &[Value::Integer(id), Value::Null]),
                )
                .map(drop)
            })
        })
        .unwrap();
    let small = engine.estimate_rows(table.id).unwrap();
    assert_eq!((small.live, small.dead), (400, 100));
    while engine.purge().unwrap() > 0 {}
    assert_eq!(engine.estimate_rows(table.id).unwrap().dead, 0);

    fill(500, 60_000);
    let before = engine.store().pool_stats().read_requests;
    let large = engine.estimate_rows(table.id).unwrap();
    let requests = engine.store().pool_stats().read_requests - before;
    let truth = 59_900;
    assert!(
        large.live.abs_diff(truth) < truth / 10 && large.dead == 0,
        "estimated {large:?} for {truth} rows"
    );
    let leaves = engine.index_pages(table.id).unwrap();
    assert!(
        requests * 5 < leaves,
        "{requests} page requests for an estimate of a table of {leaves} pages"
    );
}

/// A table's row counters (`Engine::table_rows`) follow committed inserts and deletes, a delete
/// mark in the graveyard that an insert replaces, a rolled-back transaction and savepoint (which
/// change nothing), purge, TRUNCATE and a restart — without reading the table.
#[test]
fn row_counters_follow_commits_purge_truncate_and_a_restart() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let engine = Engine::open_vfs(vfs.clone(), &config()).unwrap();
    accounts(&engine);
    let table = engine.table("accounts").unwrap();
    let counts = |engine: &Engine| {
        let rows = engine.table_rows(table.id).unwrap();
        (rows.live, rows.dead)
    };
    let pk = |id: i32| primary_key(&table, &row(id, "", 0));
    engine
        .autocommit(|t| (0..10).try_for_each(|id| t.insert_row(&table, &row(id, "a", 1)).map(drop)))
        .unwrap();
    // An older snapshot keeps the marks: purge moves them to the graveyard, still counted.
    let mut old = engine.begin(Isolation::RepeatableRead).unwrap();
    old.scan_rows(&table, Bound::Unbounded, Bound::Unbounded)
        .unwrap()
        .for_each(drop);
    engine
        .autocommit(|t| (0..3).try_for_each(|id| t.delete_row(&table, &pk(id)).map(drop)))
        .unwrap();
    assert_eq!(counts(&engine), (7, 3));
    engine.purge().unwrap();
    assert_eq!(engine.stats().graveyard_length, 3);
    assert_eq!(counts(&engine), (7, 3));
    engine
        .autocommit(|t| t.insert_row(&table, &row(1, "b", 2)).map(drop))
        .unwrap();
    assert_eq!(counts(&engine), (8, 2), "an insert over a buried mark");

    let mut txn = engine.begin(Isolation::ReadCommitted).unwrap();
    let savepoint = txn.savepoint();
    txn.delete_row(&table, &pk(5)).unwrap();
    txn.insert_row(&table, &row(20, "c", 3)).unwrap();
    txn.rollback_to(&savepoint).unwrap();
    txn.delete_row(&table, &pk(6)).unwrap();
    txn.commit().unwrap();
    assert_eq!(
        counts(&engine),
        (7, 3),
        "only the write after the savepoint"
    );
    let mut txn = engine.begin(Isolation::ReadCommitted).unwrap();
    (3..10).for_each(|id| assert!(txn.delete_row(&table, &pk(id)).unwrap() || id == 6));
    txn.rollback().unwrap();
    assert_eq!(counts(&engine), (7, 3), "a rolled-back transaction");

    old.commit().unwrap();
    while engine.purge().unwrap() > 0 {}
    assert_eq!(counts(&engine), (7, 0));
    engine.close().unwrap();

    let engine = Engine::open_vfs(vfs, &config()).unwrap();
    assert_eq!(counts(&engine), (7, 0), "sampled after a restart");
    engine
        .autocommit(|t| t.insert_row(&table, &row(30, "d", 4)).map(drop))
        .unwrap();
    assert_eq!(counts(&engine), (8, 0));
    engine
        .autocommit(|t| {
            t.truncate_table("accounts")?;
            t.insert_row(&table, &row(40, "e", 5)).map(drop)
        })
        .unwrap();
    assert_eq!(counts(&engine), (1, 0), "after TRUNCATE and an insert");
}

/// Repeated DELETE ... LIMIT through an index with an old snapshot open: purge marks the entries
/// of the rows it buries stale, so the next statement's candidates pass over them and it reads
/// about as many pages as the first; the old snapshot still finds every row through the index, a
/// row given its key again is found by new snapshots, and the index checks whole.
#[test]
fn entries_of_buried_rows_are_passed_over_by_newer_snapshots_only() {
    let (engine, _) = keyed_table(("v", DataType::Integer));
    let table = engine
        .autocommit(|t| t.create_secondary_index("t", "by_v", vec![1], false))
        .unwrap();
    let index = table.index("by_v").unwrap().clone();
    let row = |id: i32| vec![Value::Integer(id), Value::Integer(id % 5)];
    let rows = 20_000;
    engine
        .autocommit(|t| (0..rows).try_for_each(|id| t.insert_row(&table, &row(id)).map(drop)))
        .unwrap();
    let mut old = engine.begin(Isolation::RepeatableRead).unwrap();
    let zero = encode_key(&[Value::Integer(0)]);
    let through_index = |txn: &mut steady_engine::engine::Transaction| {
        txn.index_rows(
            &table,
            &index,
            Bound::Included(&zero),
            Bound::Included(&zero),
        )
        .unwrap()
        .len()
    };
    assert_eq!(through_index(&mut old), rows as usize / 5);
    let mut requests = Vec::new();
    for _ in 0..(rows / 5 / 100) {
        let mut txn = engine.begin(Isolation::ReadCommitted).unwrap();
        let before = engine.store().pool_stats().read_requests;
        let batch = txn
            .index_candidates(&index, Bound::Included(&zero), Bound::Included(&zero), 100)
            .unwrap();
        let mut deleted = 0;
        for pk in &batch.keys {
            if txn.lock_table_row(&table, pk).unwrap().is_some()
                && txn.delete_row(&table, pk).unwrap()
            {
                deleted += 1;
            }
        }
        requests.push(engine.store().pool_stats().read_requests - before);
        assert_eq!(deleted, 100, "every candidate is a live row");
        txn.commit().unwrap();
        engine.purge().unwrap();
    }
    let (first, last) = (requests[0], *requests.last().unwrap());
    assert!(
        last <= first * 2,
        "the last DELETE LIMIT made {last} page requests, the first {first}"
    );
    assert_eq!(through_index(&mut old), rows as usize / 5);
    let mut now = engine.begin(Isolation::ReadCommitted).unwrap();
    assert_eq!(through_index(&mut now), 0);
    now.insert_row(&table, &row(0)).unwrap();
    now.commit().unwrap();
    let mut now = engine.begin(Isolation::ReadCommitted).unwrap();
    assert_eq!(through_index(&mut now), 1);
    for check in engine.check_indexes().unwrap() {
        assert_eq!(check.missing_count, 0, "{check:?}");
    }
    old.commit().unwrap();
    while engine.purge().unwrap() > 0 {}
    for check in engine.check_indexes().unwrap() {
        assert_eq!(check.missing_count, 0, "{check:?}");
        assert_eq!(check.stale, 0, "{check:?}");
        assert_eq!(check.entries, (rows - rows / 5 + 1) as u64, "{check:?}");
    }
}
