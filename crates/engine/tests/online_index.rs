//! Online index builds at the engine API: writers of the table go on during a CREATE INDEX, their
//! writes reach the new index through the build's change log, and the index ends equal to a fresh
//! build of the same rows (checked with `Engine::check_indexes` once purge has caught up); a
//! UNIQUE build that meets a duplicate written during the build fails and leaves nothing behind.

mod common;

use std::ops::Bound;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::thread;

use steady_engine::catalog::{ColumnDef, TableDef};
use steady_engine::engine::{Engine, Isolation, Transaction};
use steady_engine::error::EngineError;
use steady_engine::index_check::IndexCheck;
use steady_engine::lock::LockKey;
use steady_engine::table::index_key;
use steady_storage::io::{MemVfs, Vfs};
use steady_types::{DataType, Value};

fn open() -> Arc<Engine> {
    let config = common::config(2048, 64 << 20);
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    Engine::open_vfs(vfs, &config).unwrap()
}

/// Table `t (id bigint primary key, v bigint, w text)` with `rows` rows, v = id % 97.
fn table(engine: &Arc<Engine>, rows: i64) -> Arc<TableDef> {
    let columns = vec![
        ColumnDef::plain("id", DataType::BigInt),
        ColumnDef::plain("v", DataType::BigInt),
        ColumnDef::plain("w", DataType::Text),
    ];
    engine
        .autocommit(|t| t.create_table("t", columns, vec![0]))
        .unwrap();
    let table = engine.table("t").unwrap();
    engine
        .autocommit(|t| {
            for id in 0..rows {
                t.insert_row(&table, &row(id, id % 97))?;
            }
            Ok(())
        })
        .unwrap();
    table
}

fn row(id: i64, v: i64) -> Vec<Value> {
    vec![
        Value::BigInt(id),
        Value::BigInt(v),
        Value::Text(format!("row {id}")),
    ]
}

/// Spins until `ready` holds (another thread's progress, observed; nothing is timed).
fn wait_until(ready: impl Fn() -> bool) {
    while !ready() {
        thread::yield_now();
    }
}

/// How many transactions wait for table `table`'s lock.
fn waiting(engine: &Engine, table: &TableDef) -> usize {
    let key = LockKey::new(table.id, Vec::new());
    let locks = engine.locks().snapshot();
    locks.iter().filter(|l| l.key == key && !l.granted).count()
}

/// Runs `build` in a thread of its own while another transaction runs `during` after the build's
/// start (so that its writes are in no snapshot of the build, only in its change log) and
/// commits only once the build waits to switch; returns what the build returned.
///
/// The order is forced with the table's lock, never with time: a transaction that has written
/// to the table makes the build's start wait; the writer's first write queues behind the start;
/// the first transaction then commits, so the writer's writes follow the start; and the build's
/// switch waits for the writer, which commits once it sees that. `during` must not start another
/// transaction that writes to the table: it would queue behind the build's switch, which waits for
/// `during`'s own transaction.
fn build_while_writing(
    engine: &Arc<Engine>,
    table: &Arc<TableDef>,
    build: impl FnOnce(&mut Transaction) -> Result<Arc<TableDef>, EngineError> + Send + 'static,
    during: impl FnOnce(&mut Transaction) + Send + 'static,
) -> Result<Arc<TableDef>, EngineError> {
    let mut first = engine.begin(Isolation::ReadCommitted).unwrap();
    first.update_row(table, &pk(0), &row(0, 0)).unwrap();
    let builder = {
        let engine = engine.clone();
        thread::spawn(move || engine.autocommit(build))
    };
    wait_until(|| waiting(engine, table) == 1);
    let (written, wrote) = mpsc::channel();
    let (commit, committing) = mpsc::channel::<()>();
    let writer = {
        let engine = engine.clone();
        thread::spawn(move || {
            let mut txn = engine.begin(Isolation::ReadCommitted).unwrap();
            during(&mut txn);
            written.send(()).unwrap();
            committing.recv().unwrap();
            txn.commit().unwrap();
        })
    };
    wait_until(|| waiting(engine, table) == 2);
    first.commit().unwrap();
    wrote.recv().unwrap();
    assert_eq!(engine.index_builds_running(), 1);
    wait_until(|| waiting(engine, table) == 1 || builder.is_finished());
    assert!(
        !builder.is_finished(),
        "the build ended before the writer did"
    );
    commit.send(()).unwrap();
    writer.join().unwrap();
    builder.join().unwrap()
}

/// Purges until nothing is left to remove, then checks every index of every table.
fn checked(engine: &Arc<Engine>) -> Vec<IndexCheck> {
    while engine.purge().unwrap() > 0 {}
    engine.check_indexes().unwrap()
}

fn assert_fresh(checks: &[IndexCheck]) {
    for check in checks {
        assert_eq!(check.missing_count, 0, "{check:?}");
        assert_eq!(check.stale, 0, "{check:?}");
    }
}

#[test]
fn writes_made_during_a_build_reach_the_index() {
    let engine = open();
    let table = table(&engine, 3000);
    let built = build_while_writing(
        &engine,
        &table,
        |t| t.create_secondary_index("t", "by_v", vec![1], false),
        writes_during(&table),
    )
    .unwrap();
    assert_eq!(engine.index_builds_running(), 0);
    let index = built.index("by_v").unwrap().clone();
    let mut reader = engine.begin(Isolation::ReadCommitted).unwrap();
    let key = index_key(&[Value::BigInt(3000)], &[0]);
    let (from, to) = (Bound::Included(&key[..]), Bound::Included(&key[..]));
    let found = reader.index_rows(&built, &index, from, to).unwrap();
    assert_eq!(found.len(), 100, "rows updated during the build");
    reader.commit().unwrap();
    let checks = checked(&engine);
    assert_eq!(checks.len(), 1);
    assert_eq!(checks[0].entries, 3000 - 100 + 100);
    assert_fresh(&checks);
}

/// The writes `build_while_writing` makes during a build of table `t` of 3,000 rows: writes
/// undone by a savepoint, 100 inserts, 100 updates of v to 3000 and 100 deletes.
fn writes_during(table: &Arc<TableDef>) -> impl FnOnce(&mut Transaction) + Send + 'static {
    let table = table.clone();
    move |writer| {
        // Undone writes first: the build's snapshot saw the versions they put back.
        let savepoint = writer.savepoint();
        for id in 201..301 {
            writer.update_row(&table, &pk(id), &row(id, 1000)).unwrap();
        }
        writer.rollback_to(&savepoint).unwrap();
        for id in 5000..5100 {
            writer.insert_row(&table, &row(id, 2000 + id % 3)).unwrap();
        }
        for id in 1..101 {
            writer.update_row(&table, &pk(id), &row(id, 3000)).unwrap();
        }
        for id in 101..201 {
            assert!(writer.delete_row(&table, &pk(id)).unwrap());
        }
    }
}

/// The rows of table `t` after `writes_during`, by key.
fn rows_after_writes() -> Vec<Vec<Value>> {
    let kept = (0..3000).filter(|id| !(101..201).contains(id));
    let old = kept.map(|id| {
        row(
            id,
            if (1..101).contains(&id) {
                3000
            } else {
                id % 97
            },
        )
    });
    old.chain((5000..5100).map(|id| row(id, 2000 + id % 3)))
        .collect()
}

#[test]
fn a_vacuum_full_keeps_the_writes_made_during_it() {
    let engine = open();
    table(&engine, 3000);
    let by_v = |t: &mut Transaction| t.create_secondary_index("t", "by_v", vec![1], false);
    let table = engine.autocommit(by_v).unwrap();
    let rebuilt = build_while_writing(
        &engine,
        &table,
        |t| t.rewrite_table("t"),
        writes_during(&table),
    )
    .unwrap();
    assert_ne!(
        rebuilt.space, table.space,
        "the rows moved to a fresh space"
    );
    let mut reader = engine.begin(Isolation::ReadCommitted).unwrap();
    let scan = reader.scan_rows(&rebuilt, Bound::Unbounded, Bound::Unbounded);
    let rows: Vec<Vec<Value>> = scan.unwrap().map(|r| r.unwrap().1).collect();
    assert_eq!(rows, rows_after_writes());
    reader.commit().unwrap();
    assert_fresh(&checked(&engine));
}

#[test]
fn a_unique_build_meeting_a_duplicate_written_during_it_fails_and_leaves_nothing() {
    let engine = open();
    let table = table(&engine, 3000);
    let trees_before = engine.store().space(table.space).unwrap().trees().len();
    let writes_table = table.clone();
    let failed = build_while_writing(
        &engine,
        &table,
        |t| t.create_secondary_index("t", "by_w", vec![2], true),
        move |writer| {
            let mut duplicate = row(9000, 1);
            duplicate[2] = Value::Text("row 17".into());
            writer.insert_row(&writes_table, &duplicate).unwrap();
        },
    );
    assert!(
        matches!(failed, Err(EngineError::UniqueViolation { .. })),
        "{failed:?}"
    );
    assert!(engine.table("t").unwrap().indexes.is_empty());
    assert_eq!(engine.index_builds_running(), 0);
    let trees = engine.store().space(table.space).unwrap().trees().len();
    assert_eq!(trees, trees_before, "the new index's tree is dropped");
}

/// A table of some 250 leaves is read and sorted in parts, one per core: a UNIQUE build finds
/// two equal keys in its first and last rows (parts apart) and leaves nothing, and a plain
/// build's index holds every row.
#[test]
fn a_build_read_in_parts_finds_duplicates_across_them_and_misses_no_row() {
    let engine = open();
    let table = table(&engine, 20_000);
    let mut last = row(19_999, 19_999 % 97);
    last[2] = Value::Text("row 0".into());
    engine
        .autocommit(|t| t.update_row(&table, &pk(19_999), &last))
        .unwrap();
    let unique = engine.autocommit(|t| t.create_secondary_index("t", "by_w", vec![2], true));
    assert!(
        matches!(unique, Err(EngineError::UniqueViolation { .. })),
        "{unique:?}"
    );
    assert!(engine.table("t").unwrap().indexes.is_empty());
    engine
        .autocommit(|t| t.create_secondary_index("t", "by_v", vec![1], false))
        .unwrap();
    let checks = checked(&engine);
    assert_eq!(checks.len(), 1);
    assert_eq!(checks[0].entries, 20_000);
    assert_fresh(&checks);
}

#[test]
fn builds_and_a_rebuild_under_a_stream_of_writers_end_equal_to_fresh_builds() {
    let engine = open();
    let table = table(&engine, 20_000);
    let stop = Arc::new(AtomicBool::new(false));
    let committed = Arc::new(AtomicUsize::new(0));
    let writers: Vec<_> = (0..2)
        .map(|n| {
            let (engine, table) = (engine.clone(), table.clone());
            let (stop, committed) = (stop.clone(), committed.clone());
            thread::spawn(move || write_randomly(&engine, &table, n, &stop, &committed))
        })
        .collect();
    let steps: [&DdlStep; 4] = [
        &|t| t.create_secondary_index("t", "by_v", vec![1], false),
        &|t| t.create_secondary_index("t", "by_w", vec![2], true),
        &|t| t.rewrite_table("t"),
        &|t| t.create_secondary_index("t", "by_v2", vec![1], false),
    ];
    for step in steps {
        let before = committed.load(Ordering::Acquire);
        engine.autocommit(step).unwrap();
        wait_until(|| committed.load(Ordering::Acquire) > before);
    }
    stop.store(true, Ordering::Release);
    for writer in writers {
        writer.join().unwrap();
    }
    let checks = checked(&engine);
    assert_eq!(checks.len(), 3);
    assert_fresh(&checks);
}

/// A DDL statement on table `t`.
type DdlStep = dyn Fn(&mut Transaction) -> Result<Arc<TableDef>, EngineError>;

/// Transactions of a few random inserts, updates (of v, and of w keeping it unique) and deletes,
/// one in five rolled back, until `stop`.
fn write_randomly(
    engine: &Arc<Engine>,
    table: &Arc<TableDef>,
    writer: i64,
    stop: &AtomicBool,
    committed: &AtomicUsize,
) {
    let mut state = 0x9e37_79b9_7f4a_7c15_u64 ^ writer as u64;
    let mut next = |n: i64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n as u64) as i64
    };
    let mut fresh_id = 1_000_000 * (writer + 1);
    while !stop.load(Ordering::Acquire) {
        let table = engine.table("t").unwrap_or_else(|| table.clone());
        let mut txn = engine.begin(Isolation::ReadCommitted).unwrap();
        let result = (|| {
            for _ in 0..4 {
                // Each writer changes only its own residue class of ids: no row-lock waits.
                let id = next(10_000) * 2 + writer;
                match next(4) {
                    0 => {
                        fresh_id += 1;
                        txn.insert_row(&table, &row(fresh_id, next(97)))?;
                    }
                    1 => drop(txn.delete_row(&table, &pk(id))?),
                    _ => drop(txn.update_row(&table, &pk(id), &row(id, next(500)))?),
                }
            }
            Ok::<_, EngineError>(())
        })();
        match (result, next(5)) {
            (Ok(()), 0) => txn.rollback().unwrap(),
            (Ok(()), _) => {
                txn.commit().unwrap();
                committed.fetch_add(1, Ordering::AcqRel);
            }
            (Err(EngineError::TableChanged(_) | EngineError::TableRewritten(_)), _) => {
                txn.rollback().unwrap()
            }
            (Err(err), _) => panic!("writer {writer}: {err}"),
        }
    }
}

fn pk(id: i64) -> Vec<u8> {
    index_key(&[Value::BigInt(id)], &[0])
}

/// A write planned with the definition from before an index was built or a VACUUM FULL ran
/// goes by the current one: it keeps the new indexes up to date, a new UNIQUE index included.
/// Rows planned before a column was added no longer fit: 40001.
#[test]
fn a_write_planned_before_an_index_was_built_keeps_it_up_to_date() {
    let engine = open();
    let planned = table(&engine, 100);
    let by_v = |t: &mut Transaction| t.create_secondary_index("t", "by_v", vec![1], false);
    engine.autocommit(by_v).unwrap();
    let by_w = |t: &mut Transaction| t.create_secondary_index("t", "by_w", vec![2], true);
    engine.autocommit(by_w).unwrap();
    engine.autocommit(|t| t.rewrite_table("t")).unwrap();
    engine
        .autocommit(|t| {
            t.update_row(&planned, &pk(5), &row(5, 500))?;
            t.insert_row(&planned, &row(200, 7))
        })
        .unwrap();
    let mut duplicate = row(300, 1);
    duplicate[2] = Value::Text("row 5".into());
    let refused = engine.autocommit(|t| t.insert_row(&planned, &duplicate));
    assert!(
        matches!(refused, Err(EngineError::UniqueViolation { .. })),
        "{refused:?}"
    );
    assert_fresh(&checked(&engine));
    let mut widened = (*engine.table("t").unwrap()).clone();
    widened
        .columns
        .push(ColumnDef::plain("x", DataType::Integer));
    engine.autocommit(|t| t.alter_table(widened)).unwrap();
    let refused = engine.autocommit(|t| t.insert_row(&planned, &row(400, 1)));
    assert!(
        matches!(refused, Err(EngineError::TableChanged(_))),
        "{refused:?}"
    );
}

/// ALTER COLUMN ... TYPE rewrites online as VACUUM FULL does: the rows written during it, in the
/// old type, reach the rewritten table converted, and the index on the column is rebuilt.
#[test]
fn a_column_type_change_converts_the_writes_made_during_it() {
    let engine = open();
    table(&engine, 3000);
    let by_v = |t: &mut Transaction| t.create_secondary_index("t", "by_v", vec![1], false);
    let table = engine.autocommit(by_v).unwrap();
    let mut retyped = (*table).clone();
    retyped.columns[1].data_type = DataType::Text;
    let altered = build_while_writing(
        &engine,
        &table,
        move |t| t.alter_column_types(retyped),
        writes_during(&table),
    )
    .unwrap();
    assert_eq!(altered.columns[1].data_type, DataType::Text);
    let mut reader = engine.begin(Isolation::ReadCommitted).unwrap();
    let scan = reader.scan_rows(&altered, Bound::Unbounded, Bound::Unbounded);
    let rows: Vec<Vec<Value>> = scan.unwrap().map(|r| r.unwrap().1).collect();
    let as_text = |mut row: Vec<Value>| {
        row[1] = Value::Text(row[1].to_string());
        row
    };
    let expected: Vec<Vec<Value>> = rows_after_writes().into_iter().map(as_text).collect();
    assert_eq!(rows, expected);
    reader.commit().unwrap();
    assert_fresh(&checked(&engine));
}

/// Rows of a rewritten table are never decoded by a definition from before the rewrite (a plan
/// made before it): reads by that definition are refused with 40001 while the ALTER COLUMN ...
/// TYPE is uncommitted (its trees are switched before its commit) and after its commit. Before,
/// they read the new `integer` rows as `bigint`: "undecodable row", or wrong values.
#[test]
fn a_read_planned_before_a_column_type_change_is_refused_not_misread() {
    let engine = open();
    let planned = table(&engine, 100);
    let mut retyped = (*planned).clone();
    retyped.columns[1].data_type = DataType::Integer;
    let mut ddl = engine.begin(Isolation::ReadCommitted).unwrap();
    let altered = ddl.alter_column_types(retyped).unwrap();
    let assert_refused = |engine: &Arc<Engine>| {
        let mut reader = engine.begin(Isolation::ReadCommitted).unwrap();
        let scanned = reader
            .scan_rows(&planned, Bound::Unbounded, Bound::Unbounded)
            .map(|scan| scan.count());
        let got = reader.get_row(&planned, &pk(5));
        let many = reader.get_rows(&planned, &[pk(5), pk(6)]);
        for refused in [scanned.map(|_| ()), got.map(|_| ()), many.map(|_| ())] {
            assert!(
                matches!(refused, Err(EngineError::TableChanged(_))),
                "{refused:?}"
            );
        }
        reader.commit().unwrap();
    };
    assert_refused(&engine);
    ddl.commit().unwrap();
    assert_refused(&engine);
    let mut reader = engine.begin(Isolation::ReadCommitted).unwrap();
    let row = reader.get_row(&altered, &pk(5)).unwrap();
    assert_eq!(row.unwrap()[1], Value::Integer(5));
    let rows = reader.scan_rows(&altered, Bound::Unbounded, Bound::Unbounded);
    assert_eq!(rows.unwrap().count(), 100);
    reader.commit().unwrap();
}

/// A cancel of the statement that lands while a build reads its rows (no lock wait to end)
/// ends the build with 57014; rolled back, it leaves no index and no new tree or space.
#[test]
fn a_cancel_during_a_build_or_rebuild_ends_it_and_leaves_nothing() {
    let engine = open();
    let table = table(&engine, 3000);
    let trees = |space| engine.store().space(space).unwrap().trees().len();
    let trees_before = trees(table.space);
    let steps: [&DdlStep; 2] = [
        &|t| t.create_secondary_index("t", "by_v", vec![1], false),
        &|t| t.rewrite_table("t"),
    ];
    for step in steps {
        let mut txn = engine.begin(Isolation::ReadCommitted).unwrap();
        // As a cancel request does while the statement runs but does not wait.
        engine.locks().interrupt(txn.id());
        let cancelled = step(&mut txn).unwrap_err();
        assert_eq!(cancelled.sqlstate(), "57014", "{cancelled}");
        txn.rollback().unwrap();
        let now = engine.table("t").unwrap();
        assert_eq!((now.space, now.indexes.len()), (table.space, 0));
        assert_eq!(trees(table.space), trees_before);
        assert_eq!(engine.index_builds_running(), 0);
    }
    assert!(engine
        .store()
        .wait_reclaimed(std::time::Duration::from_secs(10)));
}
