//! Transactions at the engine API: what each isolation level lets a reader see, first-updater-wins,
//! row-lock waits, rollback, savepoints, one-seek history reads, purge (also between open
//! snapshots), and recovery after a crash that leaves a transaction unfinished.

mod common;

use std::ops::Bound;
use std::sync::Arc;
use std::time::Duration;

use steady_engine::catalog::ColumnDef;
use steady_engine::codec::encode_key;
use steady_engine::engine::{Engine, EngineConfig, Isolation, Transaction};
use steady_engine::error::EngineError;
use steady_engine::io::thread_io;
use steady_engine::table::primary_key;
use steady_engine::version::IndexId;
use steady_storage::io::{MemVfs, Vfs};
use steady_storage::wal::BULK_BYTES_PER_SYNC;
use steady_types::{DataType, Value};

fn config() -> EngineConfig {
    common::config(512, 16 << 20)
}

fn engine() -> (Arc<dyn Vfs>, Arc<Engine>) {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let engine = Engine::open_vfs(vfs.clone(), &config()).unwrap();
    (vfs, engine)
}

fn value(bytes: Option<Vec<u8>>) -> Option<String> {
    bytes.map(|b| String::from_utf8(b).unwrap())
}

#[test]
fn snapshots_see_what_committed_before_them() {
    let (_, engine) = engine();
    let table = engine.create_index().unwrap();
    let mut writer = engine.begin(Isolation::ReadCommitted).unwrap();
    writer.insert(table, b"k", b"v1").unwrap();
    let mut repeatable = engine.begin(Isolation::RepeatableRead).unwrap();
    let mut committed = engine.begin(Isolation::ReadCommitted).unwrap();
    let mut dirty = engine.begin(Isolation::ReadUncommitted).unwrap();
    assert_eq!(repeatable.get(table, b"k").unwrap(), None);
    assert_eq!(committed.get(table, b"k").unwrap(), None);
    assert_eq!(
        value(dirty.get(table, b"k").unwrap()).as_deref(),
        Some("v1"),
        "a dirty read"
    );
    assert_eq!(
        value(writer.get(table, b"k").unwrap()).as_deref(),
        Some("v1"),
        "own write"
    );
    writer.commit().unwrap();
    assert_eq!(
        repeatable.get(table, b"k").unwrap(),
        None,
        "the snapshot is the transaction's"
    );
    assert_eq!(
        committed.get(table, b"k").unwrap(),
        None,
        "same statement, same snapshot"
    );
    committed.begin_statement();
    assert_eq!(
        value(committed.get(table, b"k").unwrap()).as_deref(),
        Some("v1")
    );
}

#[test]
fn the_first_updater_wins_under_repeatable_read() {
    let (_, engine) = engine();
    let table = engine.create_index().unwrap();
    let mut setup = engine.begin(Isolation::ReadCommitted).unwrap();
    setup.insert(table, b"k", b"v0").unwrap();
    setup.commit().unwrap();
    let mut first = engine.begin(Isolation::RepeatableRead).unwrap();
    let mut second = engine.begin(Isolation::RepeatableRead).unwrap();
    assert_eq!(
        value(first.get(table, b"k").unwrap()).as_deref(),
        Some("v0")
    );
    assert_eq!(
        value(second.get(table, b"k").unwrap()).as_deref(),
        Some("v0")
    );
    assert!(second.update(table, b"k", b"v2").unwrap());
    second.commit().unwrap();
    let err = first.update(table, b"k", b"v1").unwrap_err();
    assert!(matches!(err, EngineError::SerializationFailure), "{err}");
    assert_eq!(err.sqlstate(), "40001");
    assert_eq!(
        value(first.get(table, b"k").unwrap()).as_deref(),
        Some("v0"),
        "still its snapshot"
    );
}

#[test]
fn a_writer_waits_for_the_row_lock_and_read_committed_updates_the_new_version() {
    let (_, engine) = engine();
    let table = engine.create_index().unwrap();
    let mut setup = engine.begin(Isolation::ReadCommitted).unwrap();
    setup.insert(table, b"k", b"0").unwrap();
    setup.commit().unwrap();
    let mut first = engine.begin(Isolation::ReadCommitted).unwrap();
    assert!(first.update(table, b"k", b"1").unwrap());
    std::thread::scope(|scope| {
        let waiter = scope.spawn(|| {
            let mut second = engine.begin(Isolation::ReadCommitted).unwrap();
            assert!(second.update(table, b"k", b"2").unwrap());
            second.commit().unwrap();
        });
        std::thread::sleep(Duration::from_millis(200));
        assert!(
            !waiter.is_finished(),
            "the second writer must wait for the row lock"
        );
        first.commit().unwrap();
        waiter.join().unwrap();
    });
    let mut reader = engine.begin(Isolation::RepeatableRead).unwrap();
    assert_eq!(
        value(reader.get(table, b"k").unwrap()).as_deref(),
        Some("2")
    );
}

#[test]
fn rollback_restores_every_row() {
    let (_, engine) = engine();
    let table = engine.create_index().unwrap();
    let mut setup = engine.begin(Isolation::ReadCommitted).unwrap();
    setup.insert(table, b"a", b"a0").unwrap();
    setup.insert(table, b"b", b"b0").unwrap();
    setup.commit().unwrap();
    let mut txn = engine.begin(Isolation::RepeatableRead).unwrap();
    assert!(txn.update(table, b"a", b"a1").unwrap());
    assert!(txn.update(table, b"a", b"a2").unwrap());
    assert!(txn.delete(table, b"b").unwrap());
    txn.insert(table, b"c", b"c1").unwrap();
    assert!(!txn.delete(table, b"zz").unwrap());
    txn.rollback().unwrap();
    let mut reader = engine.begin(Isolation::RepeatableRead).unwrap();
    let rows: Vec<(Vec<u8>, Vec<u8>)> = reader
        .scan(table, Bound::Unbounded, Bound::Unbounded)
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    assert_eq!(
        rows,
        vec![
            (b"a".to_vec(), b"a0".to_vec()),
            (b"b".to_vec(), b"b0".to_vec())
        ]
    );
    assert_eq!(engine.stats().history_length, 0);
}

#[test]
fn an_old_snapshot_reads_its_version_in_one_seek_and_purge_keeps_only_what_snapshots_need() {
    let (_, engine) = engine();
    let table = engine.create_index().unwrap();
    let write = |v: u32| {
        let mut txn = engine.begin(Isolation::ReadCommitted).unwrap();
        txn.update(table, b"hot", v.to_string().as_bytes()).unwrap();
        txn.commit().unwrap();
    };
    let mut setup = engine.begin(Isolation::ReadCommitted).unwrap();
    setup.insert(table, b"hot", b"0").unwrap();
    setup.commit().unwrap();
    let mut old = engine.begin(Isolation::RepeatableRead).unwrap();
    assert_eq!(value(old.get(table, b"hot").unwrap()).as_deref(), Some("0"));
    (1..=500).for_each(write);
    let mut middle = engine.begin(Isolation::RepeatableRead).unwrap();
    assert_eq!(
        value(middle.get(table, b"hot").unwrap()).as_deref(),
        Some("500")
    );
    (501..=1000).for_each(write);
    assert_eq!(engine.stats().history_length, 1000);
    engine.purge().unwrap();
    assert_eq!(
        engine.stats().history_length,
        2,
        "only the versions the two open snapshots see stay"
    );
    assert_eq!(value(old.get(table, b"hot").unwrap()).as_deref(), Some("0"));
    assert_eq!(
        value(middle.get(table, b"hot").unwrap()).as_deref(),
        Some("500")
    );
    old.commit().unwrap();
    middle.commit().unwrap();
    engine.purge().unwrap();
    assert_eq!(engine.stats().history_length, 0);
    assert_eq!(engine.stats().purge_lag, 0);
}

#[test]
fn purge_removes_deleted_rows_once_no_snapshot_sees_them() {
    let (_, engine) = engine();
    let table = engine.create_index().unwrap();
    let mut setup = engine.begin(Isolation::ReadCommitted).unwrap();
    for i in 0..100u32 {
        setup.insert(table, &i.to_be_bytes(), b"row").unwrap();
    }
    setup.commit().unwrap();
    let mut reader = engine.begin(Isolation::RepeatableRead).unwrap();
    assert_eq!(
        reader
            .scan(table, Bound::Unbounded, Bound::Unbounded)
            .unwrap()
            .count(),
        100
    );
    let mut deleter = engine.begin(Isolation::ReadCommitted).unwrap();
    for i in 0..100u32 {
        assert!(deleter.delete(table, &i.to_be_bytes()).unwrap());
    }
    deleter.commit().unwrap();
    engine.purge().unwrap();
    assert_eq!(
        reader
            .scan(table, Bound::Unbounded, Bound::Unbounded)
            .unwrap()
            .count(),
        100
    );
    reader.commit().unwrap();
    engine.purge().unwrap();
    let mut after = engine.begin(Isolation::ReadCommitted).unwrap();
    assert_eq!(
        after
            .scan(table, Bound::Unbounded, Bound::Unbounded)
            .unwrap()
            .count(),
        0
    );
    assert_eq!(engine.stats().history_length, 0);
}

/// A purge pass syncs the log it wrote when much of it waits: the first commit after a large
/// purge does not write and sync the purge's log as well as its own.
#[test]
fn a_purge_pass_syncs_its_own_log() {
    // A pool that holds every page: no eviction syncs the log before a dirty page is written.
    let engine =
        Engine::open_vfs(Arc::new(MemVfs::new()), &common::config(16_384, 64 << 20)).unwrap();
    let table = engine.create_index().unwrap();
    let rows = 40_000u32;
    let mut setup = engine.begin(Isolation::ReadCommitted).unwrap();
    for i in 0..rows {
        setup.insert(table, &i.to_be_bytes(), b"row").unwrap();
    }
    setup.commit().unwrap();
    let mut deleter = engine.begin(Isolation::ReadCommitted).unwrap();
    for i in 0..rows {
        assert!(deleter.delete(table, &i.to_be_bytes()).unwrap());
    }
    deleter.commit().unwrap();
    let before = engine.store().wal_stats();
    engine.purge().unwrap();
    let after = engine.store().wal_stats();
    assert!(
        after.current_lsn - before.current_lsn > BULK_BYTES_PER_SYNC,
        "the purge wrote {} bytes of log, too few to show anything",
        after.current_lsn - before.current_lsn
    );
    assert!(
        after.current_lsn - after.flushed_lsn < BULK_BYTES_PER_SYNC,
        "{} bytes of the purge's log wait for the next commit's sync",
        after.current_lsn - after.flushed_lsn
    );
    assert_eq!(engine.stats().purge_lag, 0);
}

/// Purge of a transaction that only inserted visits none of its rows (no delete mark can be
/// left) and removes its undo entries by key range: far fewer page requests than rows, where a
/// visit of every row costs a descent each. The rows stay.
#[test]
fn purge_of_an_insert_only_transaction_visits_no_row() {
    let (_, engine) = engine();
    let table = engine.create_index().unwrap();
    let rows = 20_000u32;
    let mut loader = engine.begin(Isolation::ReadCommitted).unwrap();
    for i in 0..rows {
        loader.insert(table, &i.to_be_bytes(), b"row").unwrap();
    }
    loader.commit().unwrap();
    let before = thread_io();
    engine.purge().unwrap();
    let io = thread_io().since(before);
    let requests = io.hits + io.reads;
    assert!(
        requests < u64::from(rows) / 4,
        "purge of {rows} inserted rows made {requests} page requests"
    );
    let mut reader = engine.begin(Isolation::ReadCommitted).unwrap();
    let count = reader
        .scan(table, Bound::Unbounded, Bound::Unbounded)
        .unwrap()
        .count();
    assert_eq!(count, rows as usize);
}

/// Rows inserted in runs keep their undo entries only in the undo tree: a savepoint rolled back
/// after a run removes the run's rows (and only those), rollback removes the rest, and when the
/// transaction deletes rows it inserted in a run, purge still finds and removes their delete marks.
#[test]
fn rows_inserted_in_runs_are_undone_by_savepoints_and_their_delete_marks_purged() {
    let (_, engine) = engine();
    let column = common::int_column;
    let def = engine
        .autocommit(|t| t.create_table("loaded", vec![column("id"), column("v")], vec![0]))
        .unwrap();
    let table = def.id;
    let rows = |range: std::ops::Range<i32>| -> Vec<Vec<Value>> {
        range
            .map(|i| vec![Value::Integer(i), Value::Integer(i)])
            .collect()
    };
    let key = |i: i32| primary_key(&def, &[Value::Integer(i)]);
    let count = |txn: &mut Transaction| {
        txn.scan(table, Bound::Unbounded, Bound::Unbounded)
            .unwrap()
            .count()
    };
    let mut txn = engine.begin(Isolation::ReadCommitted).unwrap();
    txn.insert_rows(&def, &rows(0..3000)).unwrap();
    let savepoint = txn.savepoint();
    txn.insert_rows(&def, &rows(3000..5000)).unwrap();
    let changed = vec![Value::Integer(10), Value::Integer(-1)];
    assert!(txn.update_row(&def, &key(10), &changed).unwrap());
    txn.rollback_to(&savepoint).unwrap();
    assert_eq!(count(&mut txn), 3000);
    assert_eq!(
        txn.get_row(&def, &key(10)).unwrap(),
        Some(rows(10..11)[0].clone())
    );
    for i in 0..1000 {
        assert!(txn.delete_row(&def, &key(i)).unwrap());
    }
    txn.commit().unwrap();
    assert_eq!(engine.index_records(table).unwrap(), 3000);
    engine.purge().unwrap();
    assert_eq!(engine.index_records(table).unwrap(), 2000);
    assert_eq!(
        count(&mut engine.begin(Isolation::ReadCommitted).unwrap()),
        2000
    );

    let mut undone = engine.begin(Isolation::ReadCommitted).unwrap();
    undone.insert_rows(&def, &rows(10_000..14_000)).unwrap();
    undone.rollback().unwrap();
    assert_eq!(engine.index_records(table).unwrap(), 2000);
}

/// The rows of table `def` a new transaction sees, as (id, v).
fn loaded_rows(engine: &Arc<Engine>, def: &steady_engine::catalog::TableDef) -> Vec<(i32, i32)> {
    let mut txn = engine.begin(Isolation::ReadCommitted).unwrap();
    let rows = txn
        .scan_rows(def, Bound::Unbounded, Bound::Unbounded)
        .unwrap()
        .map(|r| match r.unwrap().1[..] {
            [Value::Integer(id), Value::Integer(v)] => (id, v),
            ref other => panic!("unexpected row {other:?}"),
        })
        .collect();
    txn.commit().unwrap();
    rows
}

/// A load of ascending new keys is undone by one range entry (see `UndoAction::InsertedRange`):
/// whether the transaction rolls back or dies in a crash, another transaction's row that arrived
/// inside the range meanwhile stays — as it was before this transaction updated it — and every
/// loaded row goes, the one it deleted included. Committed, its delete of a loaded row is purged.
#[test]
fn a_load_in_key_order_is_undone_around_rows_other_transactions_put_in_its_range() {
    for ending in ["rollback", "crash", "commit"] {
        let (vfs, engine) = engine();
        let column = common::int_column;
        let def = engine
            .autocommit(|t| t.create_table("loaded", vec![column("id"), column("v")], vec![0]))
            .unwrap();
        let row = |id: i32, v: i32| vec![Value::Integer(id), Value::Integer(v)];
        let key = |id: i32| primary_key(&def, &[Value::Integer(id)]);
        let evens: Vec<Vec<Value>> = (0..50).map(|i| row(2 * i, 0)).collect();
        let mut load = engine.begin(Isolation::ReadCommitted).unwrap();
        load.insert_rows(&def, &evens).unwrap();
        let mut other = engine.begin(Isolation::ReadCommitted).unwrap();
        other.insert_rows(&def, &[row(3, 3)]).unwrap();
        other.commit().unwrap();
        load.begin_statement();
        assert!(load.update_row(&def, &key(3), &row(3, -3)).unwrap());
        assert!(load.delete_row(&def, &key(4)).unwrap());
        let loaded: Vec<(i32, i32)> = (0..50)
            .map(|i| (2 * i, 0))
            .filter(|&(id, _)| id != 4)
            .chain([(3, -3)])
            .collect();
        let mut expected_loaded = loaded.clone();
        expected_loaded.sort_unstable();
        match ending {
            "rollback" => load.rollback().unwrap(),
            "crash" => {
                engine.store().sync_log().unwrap();
                std::mem::forget(load);
                drop(engine);
                let engine = Engine::open_vfs(vfs.clone(), &config()).unwrap();
                assert_eq!(loaded_rows(&engine, &def), [(3, 3)], "after the crash");
                assert_eq!(engine.index_records(def.id).unwrap(), 1);
                engine.close().unwrap();
                continue;
            }
            _ => {
                load.commit().unwrap();
                engine.purge().unwrap();
                assert_eq!(loaded_rows(&engine, &def), expected_loaded, "committed");
                assert_eq!(engine.index_records(def.id).unwrap(), 50, "purged");
                continue;
            }
        }
        assert_eq!(loaded_rows(&engine, &def), [(3, 3)], "after {ending}");
        engine.purge().unwrap();
        assert_eq!(engine.index_records(def.id).unwrap(), 1);
    }
}

#[test]
fn a_crash_keeps_committed_transactions_and_rolls_back_the_rest() {
    let (vfs, engine) = engine();
    let table = engine.create_index().unwrap();
    let mut committed = engine.begin(Isolation::ReadCommitted).unwrap();
    committed.insert(table, b"kept", b"1").unwrap();
    committed.insert(table, b"changed", b"old").unwrap();
    committed.commit().unwrap();
    let mut unfinished = engine.begin(Isolation::ReadCommitted).unwrap();
    unfinished.insert(table, b"lost", b"x").unwrap();
    unfinished.update(table, b"changed", b"new").unwrap();
    unfinished.delete(table, b"kept").unwrap();
    engine.store().sync_log().unwrap();
    std::mem::forget(unfinished);
    drop(engine);
    let engine = Engine::open_vfs(vfs.clone(), &config()).unwrap();
    let mut reader = engine.begin(Isolation::RepeatableRead).unwrap();
    let rows: Vec<(Vec<u8>, Vec<u8>)> = reader
        .scan(table, Bound::Unbounded, Bound::Unbounded)
        .unwrap()
        .map(|r| r.unwrap())
        .collect();
    assert_eq!(
        rows,
        vec![
            (b"changed".to_vec(), b"old".to_vec()),
            (b"kept".to_vec(), b"1".to_vec())
        ]
    );
    let mut writer = engine.begin(Isolation::ReadCommitted).unwrap();
    assert!(
        writer.update(table, b"kept", b"2").unwrap(),
        "ids of the earlier run read as committed"
    );
    writer.commit().unwrap();
    reader.commit().unwrap();
    engine.close().unwrap();
    let report = steady_storage::check::check_directory(vfs.as_ref(), &mut |_| {}).unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
}

#[test]
fn a_snapshot_older_than_max_snapshot_age_is_refused_and_holds_nothing_back() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let config = EngineConfig {
        max_snapshot_age: Some(Duration::from_millis(100)),
        ..config()
    };
    let engine = Engine::open_vfs(vfs, &config).unwrap();
    let table = engine.create_index().unwrap();
    let mut setup = engine.begin(Isolation::ReadCommitted).unwrap();
    setup.insert(table, b"k", b"0").unwrap();
    setup.commit().unwrap();
    let mut old = engine.begin(Isolation::RepeatableRead).unwrap();
    assert!(old.get(table, b"k").unwrap().is_some());
    std::thread::sleep(Duration::from_millis(150));
    for v in 1..=10u8 {
        let mut txn = engine.begin(Isolation::ReadCommitted).unwrap();
        txn.update(table, b"k", &[v]).unwrap();
        txn.commit().unwrap();
    }
    engine.purge().unwrap();
    assert_eq!(
        engine.stats().history_length,
        0,
        "the expired snapshot kept no history: {:?}",
        engine.stats()
    );
    let err = old.get(table, b"k").unwrap_err();
    assert_eq!(err.sqlstate(), "72000", "{err}");
}

#[test]
fn background_purge_keeps_history_short() {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let config = EngineConfig {
        background_purge: true,
        ..config()
    };
    let engine = Engine::open_vfs(vfs, &config).unwrap();
    let table = engine.create_index().unwrap();
    let mut setup = engine.begin(Isolation::ReadCommitted).unwrap();
    setup.insert(table, b"k", b"0").unwrap();
    setup.commit().unwrap();
    for v in 0..200u32 {
        let mut txn = engine.begin(Isolation::ReadCommitted).unwrap();
        txn.update(table, b"k", &v.to_be_bytes()).unwrap();
        txn.commit().unwrap();
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while engine.stats().history_length > 0 || engine.stats().purge_lag > 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "purge did not catch up: {:?}",
            engine.stats()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    engine.close().unwrap();
}

/// Seed 000's `DELETE ... LIMIT n`, repeated while an old snapshot is open: the delete marks the
/// old snapshot keeps move out of the table, so each statement reads about as many pages as the
/// first, and the old snapshot still sees every row.
#[test]
fn repeated_delete_limit_stays_linear_with_an_old_snapshot_open() {
    let (_, engine) = engine();
    let table = engine.create_index().unwrap();
    let rows = 6000u32;
    let mut setup = engine.begin(Isolation::ReadCommitted).unwrap();
    for i in 0..rows {
        setup.insert(table, &i.to_be_bytes(), &[7u8; 100]).unwrap();
    }
    setup.commit().unwrap();
    let mut old = engine.begin(Isolation::RepeatableRead).unwrap();
    assert_eq!(
        old.scan(table, Bound::Unbounded, Bound::Unbounded)
            .unwrap()
            .count(),
        rows as usize
    );
    let mut requests = Vec::new();
    for _ in 0..(rows / 200) {
        let mut txn = engine.begin(Isolation::ReadCommitted).unwrap();
        let before = engine.store().pool_stats().read_requests;
        let victims: Vec<Vec<u8>> = txn
            .scan(table, Bound::Unbounded, Bound::Unbounded)
            .unwrap()
            .take(200)
            .map(|r| r.unwrap().0)
            .collect();
        requests.push(engine.store().pool_stats().read_requests - before);
        for pk in &victims {
            assert!(txn.delete(table, pk).unwrap());
        }
        txn.commit().unwrap();
        engine.purge().unwrap();
    }
    let (first, last) = (requests[0], *requests.last().unwrap());
    assert!(
        last <= first * 2,
        "the last DELETE LIMIT's scan made {last} page requests, the first's {first}"
    );
    assert!(engine.stats().graveyard_length > 0);
    assert_eq!(
        old.scan(table, Bound::Unbounded, Bound::Unbounded)
            .unwrap()
            .count(),
        rows as usize
    );
    assert!(old.get(table, &0u32.to_be_bytes()).unwrap().is_some());
    let some_keys: Vec<Vec<u8>> = (0..rows)
        .step_by(7)
        .map(|i| i.to_be_bytes().to_vec())
        .collect();
    let seen = old.get_many(table, &some_keys).unwrap();
    assert!(seen
        .iter()
        .all(|row| row.as_deref() == Some(&[7u8; 100][..])));
    let mut now = engine.begin(Isolation::ReadCommitted).unwrap();
    assert!(now
        .get_many(table, &some_keys)
        .unwrap()
        .iter()
        .all(Option::is_none));
    assert_eq!(
        now.scan(table, Bound::Unbounded, Bound::Unbounded)
            .unwrap()
            .count(),
        0
    );
    assert!(now.get(table, &0u32.to_be_bytes()).unwrap().is_none());
    now.insert(table, &0u32.to_be_bytes(), b"back").unwrap();
    now.commit().unwrap();
    assert_eq!(
        old.get(table, &0u32.to_be_bytes()).unwrap(),
        Some(vec![7u8; 100])
    );
    old.commit().unwrap();
    engine.purge().unwrap();
    assert_eq!(engine.stats().graveyard_length, 0);
    assert_eq!(engine.stats().history_length, 0);
}

/// Every row of `index` as `txn` sees it, as `key=value` strings.
fn contents(txn: &mut Transaction, index: IndexId) -> Vec<String> {
    txn.scan(index, Bound::Unbounded, Bound::Unbounded)
        .unwrap()
        .map(|r| {
            let (k, v) = r.unwrap();
            format!("{}={}", value(Some(k)).unwrap(), value(Some(v)).unwrap())
        })
        .collect()
}

fn committed_contents(engine: &Arc<Engine>, index: IndexId) -> Vec<String> {
    contents(&mut engine.begin(Isolation::RepeatableRead).unwrap(), index)
}

/// A write right after `lock_row` uses the version the lock read; a savepoint rolled back in
/// between makes it read the row again (the version kept from before is stale), so the
/// committed version is saved to history and restored on rollback, and an older snapshot keeps
/// seeing it throughout.
#[test]
fn a_write_after_lock_row_saves_what_is_in_place_also_after_rolling_back_to_a_savepoint() {
    let (_, engine) = engine();
    let table = engine.create_index().unwrap();
    let mut setup = engine.begin(Isolation::ReadCommitted).unwrap();
    setup.insert(table, b"k", b"v0").unwrap();
    setup.commit().unwrap();
    let mut reader = engine.begin(Isolation::RepeatableRead).unwrap();
    assert_eq!(value(reader.get(table, b"k").unwrap()), Some("v0".into()));
    let mut txn = engine.begin(Isolation::ReadCommitted).unwrap();
    let savepoint = txn.savepoint();
    assert_eq!(value(txn.lock_row(table, b"k").unwrap()), Some("v0".into()));
    assert!(txn.update(table, b"k", b"v1").unwrap());
    assert_eq!(value(txn.lock_row(table, b"k").unwrap()), Some("v1".into()));
    txn.rollback_to(&savepoint).unwrap();
    assert!(txn.update(table, b"k", b"v2").unwrap());
    assert_eq!(value(txn.get(table, b"k").unwrap()), Some("v2".into()));
    assert_eq!(value(reader.get(table, b"k").unwrap()), Some("v0".into()));
    txn.rollback().unwrap();
    assert_eq!(value(reader.get(table, b"k").unwrap()), Some("v0".into()));
    assert_eq!(committed_contents(&engine, table), ["k=v0"]);
    reader.commit().unwrap();
}

#[test]
fn rollback_to_a_savepoint_restores_what_the_transaction_saw_and_commits_the_rest() {
    let (vfs, engine) = engine();
    let table = engine.create_index().unwrap();
    let mut setup = engine.begin(Isolation::ReadCommitted).unwrap();
    for (k, v) in [("a", "a0"), ("b", "b0"), ("c", "c0")] {
        setup.insert(table, k.as_bytes(), v.as_bytes()).unwrap();
    }
    setup.commit().unwrap();
    let mut txn = engine.begin(Isolation::RepeatableRead).unwrap();
    assert!(txn.update(table, b"a", b"a1").unwrap());
    assert!(txn.update(table, b"b", b"b1").unwrap());
    txn.insert(table, b"d", b"d1").unwrap();
    let at_savepoint = contents(&mut txn, table);
    assert_eq!(at_savepoint, ["a=a1", "b=b1", "c=c0", "d=d1"]);
    let savepoint = txn.savepoint();
    for round in 0..2 {
        assert!(txn.update(table, b"a", b"a2").unwrap());
        assert!(txn.update(table, b"a", b"a3").unwrap());
        assert!(txn.delete(table, b"b").unwrap());
        assert!(txn.update(table, b"c", b"c1").unwrap());
        assert!(txn.delete(table, b"d").unwrap());
        txn.insert(table, b"e", b"e1").unwrap();
        assert_eq!(contents(&mut txn, table), ["a=a3", "c=c1", "e=e1"]);
        assert_eq!(
            committed_contents(&engine, table),
            ["a=a0", "b=b0", "c=c0"],
            "round {round}"
        );
        txn.rollback_to(&savepoint).unwrap();
        assert_eq!(contents(&mut txn, table), at_savepoint, "round {round}");
        assert_eq!(
            engine.stats().history_length,
            3,
            "a, b and the undone c: versions are counted once"
        );
    }
    assert!(txn.update(table, b"c", b"c2").unwrap());
    txn.insert(table, b"e", b"e2").unwrap();
    assert_eq!(
        committed_contents(&engine, table),
        ["a=a0", "b=b0", "c=c0"],
        "a reader that meets c's in-place version again finds c0 in history"
    );
    txn.commit().unwrap();
    let expected = ["a=a1", "b=b1", "c=c2", "d=d1", "e=e2"];
    assert_eq!(committed_contents(&engine, table), expected);
    engine.purge().unwrap();
    assert_eq!(engine.stats().history_length, 0);
    assert_eq!(engine.stats().purge_lag, 0);
    engine.close().unwrap();
    let engine = Engine::open_vfs(vfs.clone(), &config()).unwrap();
    assert_eq!(committed_contents(&engine, table), expected);
    engine.close().unwrap();
    let report = steady_storage::check::check_directory(vfs.as_ref(), &mut |_| {}).unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
}

#[test]
fn nested_savepoints_give_back_each_own_version() {
    let (_, engine) = engine();
    let table = engine.create_index().unwrap();
    let mut txn = engine.begin(Isolation::ReadCommitted).unwrap();
    txn.insert(table, b"k", b"v0").unwrap();
    let outer = txn.savepoint();
    assert!(txn.update(table, b"k", b"v1").unwrap());
    let inner = txn.savepoint();
    assert!(txn.update(table, b"k", b"v2").unwrap());
    txn.insert(table, b"n", b"new").unwrap();
    txn.rollback_to(&inner).unwrap();
    assert_eq!(contents(&mut txn, table), ["k=v1"]);
    assert!(txn.delete(table, b"k").unwrap());
    txn.rollback_to(&outer).unwrap();
    assert_eq!(contents(&mut txn, table), ["k=v0"]);
    assert!(txn.update(table, b"k", b"v3").unwrap());
    txn.commit().unwrap();
    assert_eq!(committed_contents(&engine, table), ["k=v3"]);
    engine.purge().unwrap();
    assert_eq!(engine.stats().history_length, 0);
    assert_eq!(engine.index_records(table).unwrap(), 1);
}

#[test]
fn a_transaction_whose_writes_were_all_undone_by_a_savepoint_commits_or_rolls_back_cleanly() {
    let (_, engine) = engine();
    let table = engine.create_index().unwrap();
    let mut setup = engine.begin(Isolation::ReadCommitted).unwrap();
    setup.insert(table, b"k", b"v0").unwrap();
    setup.commit().unwrap();
    for commit in [true, false] {
        let mut txn = engine.begin(Isolation::RepeatableRead).unwrap();
        let savepoint = txn.savepoint();
        assert!(txn.update(table, b"k", b"v1").unwrap());
        txn.insert(table, b"gone", b"x").unwrap();
        txn.rollback_to(&savepoint).unwrap();
        if commit {
            txn.commit().unwrap();
        } else {
            txn.rollback().unwrap();
        }
        assert_eq!(committed_contents(&engine, table), ["k=v0"]);
    }
    engine.purge().unwrap();
    assert_eq!(engine.stats().history_length, 0);
    assert_eq!(engine.stats().purge_lag, 0);
    assert_eq!(engine.stats().active_transactions, 0);
}

#[test]
fn an_unfinished_transaction_that_rolled_back_to_a_savepoint_leaves_no_trace_after_a_crash() {
    let (vfs, engine) = engine();
    let table = engine.create_index().unwrap();
    let mut setup = engine.begin(Isolation::ReadCommitted).unwrap();
    setup.insert(table, b"a", b"a0").unwrap();
    setup.insert(table, b"b", b"b0").unwrap();
    setup.commit().unwrap();
    let mut txn = engine.begin(Isolation::ReadCommitted).unwrap();
    assert!(txn.update(table, b"a", b"a1").unwrap());
    txn.insert(table, b"c", b"c1").unwrap();
    let savepoint = txn.savepoint();
    assert!(txn.update(table, b"a", b"a2").unwrap());
    assert!(txn.delete(table, b"b").unwrap());
    txn.rollback_to(&savepoint).unwrap();
    assert!(txn.update(table, b"b", b"b1").unwrap());
    txn.insert(table, b"d", b"d1").unwrap();
    engine.store().sync_log().unwrap();
    std::mem::forget(txn);
    drop(engine);
    let engine = Engine::open_vfs(vfs.clone(), &config()).unwrap();
    assert_eq!(committed_contents(&engine, table), ["a=a0", "b=b0"]);
    assert_eq!(engine.index_records(table).unwrap(), 2);
    let mut writer = engine.begin(Isolation::ReadCommitted).unwrap();
    assert!(writer.update(table, b"a", b"a3").unwrap());
    writer.insert(table, b"c", b"c3").unwrap();
    writer.commit().unwrap();
    assert_eq!(committed_contents(&engine, table), ["a=a3", "b=b0", "c=c3"]);
    engine.close().unwrap();
    let report = steady_storage::check::check_directory(vfs.as_ref(), &mut |_| {}).unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
}

fn people(engine: &Arc<Engine>) -> Arc<steady_engine::catalog::TableDef> {
    let column = |name: &str, data_type| ColumnDef::plain(name, data_type);
    let columns = vec![
        column("id", DataType::Integer),
        column("email", DataType::Text),
    ];
    engine
        .autocommit(|t| t.create_table("people", columns, vec![0]))
        .unwrap();
    engine
        .autocommit(|t| t.create_secondary_index("people", "by_email", vec![1], true))
        .unwrap()
}

fn person(id: i32, email: &str) -> Vec<Value> {
    vec![Value::Integer(id), Value::Text(email.into())]
}

fn ids_by_email(
    txn: &mut Transaction,
    table: &steady_engine::catalog::TableDef,
    email: &str,
) -> Vec<i32> {
    let index = table.index("by_email").unwrap();
    let key = encode_key(&[Value::Text(email.into())]);
    txn.index_rows(table, index, Bound::Included(&key), Bound::Included(&key))
        .unwrap()
        .iter()
        .map(|(_, values)| match values[0] {
            Value::Integer(id) => id,
            _ => panic!("id is an integer"),
        })
        .collect()
}

#[test]
fn rollback_to_a_savepoint_removes_secondary_entries_and_frees_unique_keys() {
    let (_, engine) = engine();
    let table = people(&engine);
    let index = table.index("by_email").unwrap().id;
    let mut txn = engine.begin(Isolation::ReadCommitted).unwrap();
    txn.insert_row(&table, &person(1, "ann@x")).unwrap();
    let savepoint = txn.savepoint();
    txn.insert_row(&table, &person(2, "bob@x")).unwrap();
    let ann = primary_key(&table, &person(1, ""));
    assert!(txn.update_row(&table, &ann, &person(1, "cid@x")).unwrap());
    let err = txn.insert_row(&table, &person(3, "bob@x")).unwrap_err();
    assert_eq!(err.sqlstate(), "23505");
    txn.rollback_to(&savepoint).unwrap();
    assert_eq!(
        engine.index_records(index).unwrap(),
        1,
        "only ann@x is left"
    );
    assert_eq!(ids_by_email(&mut txn, &table, "ann@x"), [1]);
    assert!(ids_by_email(&mut txn, &table, "cid@x").is_empty());
    txn.insert_row(&table, &person(3, "bob@x")).unwrap();
    txn.insert_row(&table, &person(4, "cid@x")).unwrap();
    txn.commit().unwrap();
    let mut reader = engine.begin(Isolation::ReadCommitted).unwrap();
    assert_eq!(ids_by_email(&mut reader, &table, "bob@x"), [3]);
    assert_eq!(ids_by_email(&mut reader, &table, "cid@x"), [4]);
    assert_eq!(ids_by_email(&mut reader, &table, "ann@x"), [1]);
    let err = reader.insert_row(&table, &person(5, "bob@x")).unwrap_err();
    assert_eq!(err.sqlstate(), "23505");
    drop(reader);
    engine.purge().unwrap();
    assert_eq!(engine.index_records(index).unwrap(), 3);
    assert_eq!(engine.index_records(table.id).unwrap(), 3);
    assert_eq!(engine.stats().history_length, 0);
}

/// Commits `rows` (key, value) to `index`.
fn committed_rows(engine: &Arc<Engine>, index: IndexId, rows: &[(&str, &str)]) {
    let mut setup = engine.begin(Isolation::ReadCommitted).unwrap();
    for (key, value) in rows {
        setup
            .insert(index, key.as_bytes(), value.as_bytes())
            .unwrap();
    }
    setup.commit().unwrap();
}

/// Reads `keys` for a change and changes each as `changes` says (None deletes) without row
/// locks; returns which were written.
fn change_unlocked(
    txn: &mut Transaction,
    index: IndexId,
    keys: &[&str],
    changes: &[Option<&str>],
) -> Vec<bool> {
    let pks: Vec<Vec<u8>> = keys.iter().map(|k| k.as_bytes().to_vec()).collect();
    let seen = txn.get_many_for_change(index, &pks).unwrap();
    let in_place: Vec<_> = seen
        .into_iter()
        .map(|s| s.and_then(|s| s.in_place()).expect("seen in place"))
        .collect();
    let writes: Vec<_> = pks
        .iter()
        .zip(&in_place)
        .zip(changes)
        .map(|((pk, read), row)| (pk.as_slice(), read, row.map(|r| r.as_bytes().to_vec())))
        .collect();
    txn.write_many_unlocked(index, &writes).unwrap()
}

/// A row read for a change is written without a row lock only if it is still as read and nobody
/// holds its row lock: one changed by a commit since, and one another transaction locked, are
/// refused (left to the locking path) and keep what they had; the others are written, an older
/// snapshot still reads what they were, and the transaction's rollback or commit ends them as
/// for locked writes.
#[test]
fn rows_changed_without_row_locks_are_refused_once_changed_or_locked_since_read() {
    let (_, engine) = engine();
    let table = engine.create_index().unwrap();
    let four = [("a", "0"), ("b", "0"), ("c", "0"), ("d", "0")];
    committed_rows(&engine, table, &four);
    let mut old_reader = engine.begin(Isolation::RepeatableRead).unwrap();
    assert_eq!(contents(&mut old_reader, table).len(), 4);
    let mut changer = engine.begin(Isolation::ReadCommitted).unwrap();
    let keys = ["a", "b", "c", "d"];
    let pks: Vec<Vec<u8>> = keys.iter().map(|k| k.as_bytes().to_vec()).collect();
    let seen = changer.get_many_for_change(table, &pks).unwrap();
    let mut other = engine.begin(Isolation::ReadCommitted).unwrap();
    assert!(other.update(table, b"b", b"other").unwrap());
    other.commit().unwrap();
    let mut locker = engine.begin(Isolation::ReadCommitted).unwrap();
    locker.lock_row(table, b"c").unwrap();
    let in_place: Vec<_> = seen
        .into_iter()
        .map(|s| s.unwrap().in_place().unwrap())
        .collect();
    let rows = [
        Some(b"1".to_vec()),
        Some(b"1".to_vec()),
        Some(b"1".to_vec()),
        None,
    ];
    let writes: Vec<_> = pks
        .iter()
        .zip(&in_place)
        .zip(rows)
        .map(|((pk, read), row)| (pk.as_slice(), read, row))
        .collect();
    let written = changer.write_many_unlocked(table, &writes).unwrap();
    assert_eq!(written, vec![true, false, false, true]);
    changer.begin_statement();
    assert_eq!(contents(&mut changer, table), vec!["a=1", "b=other", "c=0"]);
    assert_eq!(
        contents(&mut old_reader, table),
        vec!["a=0", "b=0", "c=0", "d=0"],
        "an older snapshot reads the versions replaced"
    );
    locker.rollback().unwrap();
    changer.rollback().unwrap();
    assert_eq!(
        committed_contents(&engine, table),
        vec!["a=0", "b=other", "c=0", "d=0"]
    );
    let mut changer = engine.begin(Isolation::ReadCommitted).unwrap();
    let written = change_unlocked(&mut changer, table, &["a", "d"], &[Some("2"), None]);
    assert_eq!(written, vec![true, true]);
    changer.commit().unwrap();
    assert_eq!(
        contents(&mut old_reader, table),
        vec!["a=0", "b=0", "c=0", "d=0"]
    );
    old_reader.commit().unwrap();
    engine.purge().unwrap();
    assert_eq!(
        committed_contents(&engine, table),
        vec!["a=2", "b=other", "c=0"]
    );
    assert_eq!(
        engine.stats().history_length,
        0,
        "purge removed the history"
    );
}

/// A row changed without a row lock belongs to its writer until it ends: a READ COMMITTED writer
/// waits for it and then changes the new version; a REPEATABLE READ one whose snapshot predates
/// the commit fails with a serialization failure; a reader never waits.
#[test]
fn a_row_changed_without_a_row_lock_is_its_writers_until_it_ends() {
    let (_, engine) = engine();
    let table = engine.create_index().unwrap();
    committed_rows(&engine, table, &[("k", "0")]);
    let mut repeatable = engine.begin(Isolation::RepeatableRead).unwrap();
    assert_eq!(
        value(repeatable.get(table, b"k").unwrap()).as_deref(),
        Some("0")
    );
    let mut first = engine.begin(Isolation::ReadCommitted).unwrap();
    assert_eq!(
        change_unlocked(&mut first, table, &["k"], &[Some("1")]),
        vec![true]
    );
    let waits_before = engine.locks().stats().lock_waits;
    std::thread::scope(|scope| {
        let waiter = scope.spawn(|| {
            let mut second = engine.begin(Isolation::ReadCommitted).unwrap();
            assert!(second.update(table, b"k", b"2").unwrap());
            second.commit().unwrap();
        });
        while engine.locks().stats().lock_waits == waits_before {
            std::thread::yield_now();
        }
        assert!(
            !waiter.is_finished(),
            "the second writer waits for the first"
        );
        let mut reader = engine.begin(Isolation::ReadCommitted).unwrap();
        assert_eq!(
            value(reader.get(table, b"k").unwrap()).as_deref(),
            Some("0")
        );
        first.commit().unwrap();
        waiter.join().unwrap();
    });
    let err = repeatable.update(table, b"k", b"3").unwrap_err();
    assert!(matches!(err, EngineError::SerializationFailure), "{err}");
    assert_eq!(committed_contents(&engine, table), vec!["k=2"]);
}

/// Changes made without row locks by a transaction that never ended are rolled back by recovery,
/// and the directory checks clean.
#[test]
fn a_crash_rolls_back_changes_made_without_row_locks() {
    let (vfs, engine) = engine();
    let table = engine.create_index().unwrap();
    committed_rows(&engine, table, &[("a", "0"), ("b", "0"), ("c", "0")]);
    let many: Vec<String> = (0..600).map(|i| format!("m{i:04}")).collect();
    let many: Vec<&str> = many.iter().map(String::as_str).collect();
    let rows: Vec<(&str, &str)> = many.iter().map(|k| (*k, "0")).collect();
    committed_rows(&engine, table, &rows);
    let before = committed_contents(&engine, table);
    let mut unfinished = engine.begin(Isolation::ReadCommitted).unwrap();
    let written = change_unlocked(&mut unfinished, table, &["a", "c"], &[Some("x"), None]);
    assert_eq!(written, vec![true, true]);
    // Many rows in one call: their undo entries go packed, several to an undo record.
    let changes: Vec<Option<&str>> = (0..many.len())
        .map(|i| (i % 3 != 0).then_some("y"))
        .collect();
    let written = change_unlocked(&mut unfinished, table, &many, &changes);
    assert!(written.iter().all(|w| *w));
    engine.store().sync_log().unwrap();
    std::mem::forget(unfinished);
    drop(engine);
    let engine = Engine::open_vfs(vfs.clone(), &config()).unwrap();
    assert_eq!(committed_contents(&engine, table), before);
    assert_eq!(&before[..3], &["a=0", "b=0", "c=0"]);
    engine.close().unwrap();
    let report = steady_storage::check::check_directory(vfs.as_ref(), &mut |_| {}).unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
}

/// A delete of a settled row (its writer committed before every open snapshot, and purge has
/// passed) keeps the row in its delete mark instead of copying it to history:
/// an older snapshot reads it there; when the mark is replaced — by a re-insert of the deleting
/// transaction, or by another transaction's insert after the delete committed — the kept row
/// goes to history first, so the older snapshot still reads it; rollbacks (to a savepoint and
/// whole) and recovery after a crash put the kept row back in place; purge leaves nothing.
#[test]
fn a_delete_keeps_its_row_in_the_mark_for_older_snapshots() {
    let (vfs, engine) = engine();
    let table = engine.create_index().unwrap();
    committed_rows(&engine, table, &[("a", "0"), ("b", "0"), ("c", "0")]);
    engine.purge().unwrap();
    let mut old_reader = engine.begin(Isolation::RepeatableRead).unwrap();
    let all_zero = vec!["a=0", "b=0", "c=0"];
    assert_eq!(contents(&mut old_reader, table), all_zero);
    let mut deleter = engine.begin(Isolation::ReadCommitted).unwrap();
    assert!(deleter.delete(table, b"a").unwrap());
    assert_eq!(
        change_unlocked(&mut deleter, table, &["b"], &[None]),
        vec![true]
    );
    assert_eq!(engine.stats().history_length, 0, "no copy of a deleted row");
    assert_eq!(contents(&mut old_reader, table), all_zero);
    let savepoint = deleter.savepoint();
    deleter.insert(table, b"a", b"again").unwrap();
    assert_eq!(contents(&mut old_reader, table), all_zero);
    deleter.rollback_to(&savepoint).unwrap();
    deleter.begin_statement();
    assert_eq!(contents(&mut deleter, table), vec!["c=0"]);
    assert_eq!(contents(&mut old_reader, table), all_zero);
    deleter.rollback().unwrap();
    assert_eq!(committed_contents(&engine, table), all_zero);

    let mut deleter = engine.begin(Isolation::ReadCommitted).unwrap();
    assert!(deleter.delete(table, b"a").unwrap());
    assert!(deleter.delete(table, b"c").unwrap());
    deleter.commit().unwrap();
    let mut inserter = engine.begin(Isolation::ReadCommitted).unwrap();
    inserter.insert(table, b"a", b"new").unwrap();
    inserter.commit().unwrap();
    assert_eq!(contents(&mut old_reader, table), all_zero);
    assert_eq!(committed_contents(&engine, table), vec!["a=new", "b=0"]);

    let mut unfinished = engine.begin(Isolation::ReadCommitted).unwrap();
    assert!(unfinished.delete(table, b"b").unwrap());
    engine.store().sync_log().unwrap();
    std::mem::forget(unfinished);
    drop(old_reader);
    drop(engine);
    let engine = Engine::open_vfs(vfs.clone(), &config()).unwrap();
    assert_eq!(committed_contents(&engine, table), vec!["a=new", "b=0"]);
    engine.purge().unwrap();
    assert_eq!(
        engine.stats().history_length,
        0,
        "purge removed the history"
    );
    engine.close().unwrap();
    let report = steady_storage::check::check_directory(vfs.as_ref(), &mut |_| {}).unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
}

/// A delete keeps a row whose writer has settled (every snapshot sees it) in its mark, and copies
/// a row written since an open snapshot began to history, with and without row locks; the older
/// snapshot reads every row as it was, a rollback restores them, and after the commit purge
/// leaves neither history nor marks.
#[test]
fn deletes_keep_settled_rows_in_their_marks_and_copy_recent_ones_to_history() {
    let (vfs, engine) = engine();
    let table = engine.create_index().unwrap();
    let key = |k: u32| format!("k{k:05}");
    let rows: Vec<(Vec<u8>, Vec<u8>)> = (0..3000)
        .map(|k| (key(k).into_bytes(), b"old".to_vec()))
        .collect();
    let mut load = engine.begin(Isolation::ReadCommitted).unwrap();
    load.insert_many(table, &rows).map_err(|(_, e)| e).unwrap();
    load.commit().unwrap();
    let mut old_reader = engine.begin(Isolation::RepeatableRead).unwrap();
    let originals = contents(&mut old_reader, table);
    engine.purge().unwrap();
    let mut updater = engine.begin(Isolation::ReadCommitted).unwrap();
    for k in 0..10 {
        assert!(updater.update(table, key(k).as_bytes(), b"new").unwrap());
    }
    updater.commit().unwrap();
    assert_eq!(engine.stats().history_length, 10);
    assert_eq!(originals.len(), 3000);
    assert!(originals.iter().all(|row| row.ends_with("=old")));
    for round in 0..2 {
        let mut deleter = engine.begin(Isolation::ReadCommitted).unwrap();
        let unlocked: Vec<String> = (0..3000).step_by(2).map(key).collect();
        let unlocked: Vec<&str> = unlocked.iter().map(String::as_str).collect();
        let written = change_unlocked(&mut deleter, table, &unlocked, &vec![None; unlocked.len()]);
        assert!(written.iter().all(|&w| w));
        for k in (1..3000).step_by(2) {
            assert!(deleter.delete(table, key(k).as_bytes()).unwrap());
        }
        assert_eq!(
            engine.stats().history_length,
            20,
            "only the ten rows written since the old snapshot are copied"
        );
        assert_eq!(contents(&mut old_reader, table), originals);
        deleter.begin_statement();
        assert!(contents(&mut deleter, table).is_empty());
        if round == 0 {
            deleter.rollback().unwrap();
            let restored = committed_contents(&engine, table);
            assert_eq!(restored.len(), 3000);
            assert_eq!(restored.iter().filter(|r| r.ends_with("=new")).count(), 10);
        } else {
            deleter.commit().unwrap();
        }
    }
    assert_eq!(contents(&mut old_reader, table), originals);
    old_reader.commit().unwrap();
    engine.purge().unwrap();
    assert!(committed_contents(&engine, table).is_empty());
    assert_eq!(engine.stats().history_length, 0);
    engine.close().unwrap();
    let report = steady_storage::check::check_directory(vfs.as_ref(), &mut |_| {}).unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
}
