//! Faults below the engine, on a simulated file system ([`sim::SimVfs`]): a crash at every write
//! point of a workload of row writes and of one of DDL, with unsynced writes lost or torn at
//! random; a full disk; failing syncs.
//! After each, the database must open, hold every acknowledged commit and nothing of a
//! transaction that did not commit, keep its indexes in step with its rows, and pass the offline
//! check (`steady check`'s).

mod common;
#[path = "faults/sim.rs"]
mod sim;

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

use sim::SimVfs;
use steady_engine::catalog::ColumnDef;
use steady_engine::engine::{Engine, EngineConfig, Isolation};
use steady_engine::error::EngineError;
use steady_engine::table::primary_key;
use steady_storage::check::check_directory;
use steady_storage::io::Vfs;
use steady_types::{DataType, Value};

/// Rows by id: (v, s).
type Rows = BTreeMap<i32, (i32, String)>;

/// A small pool (pages are evicted and written mid-workload) and a small log (checkpoints are
/// forced by it).
fn config() -> EngineConfig {
    common::config(24, 1 << 20)
}

/// A fresh database with `t (id integer primary key, v integer, s text)` and an index on v,
/// closed cleanly.
fn base() -> SimVfs {
    let vfs = SimVfs::new();
    let engine = Engine::open_vfs(Arc::new(vfs.clone()), &config()).unwrap();
    let columns = [
        ("id", DataType::Integer),
        ("v", DataType::Integer),
        ("s", DataType::Text),
    ]
    .map(|(name, data_type)| ColumnDef {
        nullable: false,
        ..ColumnDef::plain(name, data_type)
    })
    .to_vec();
    engine
        .autocommit(|t| t.create_table("t", columns, vec![0]))
        .unwrap();
    engine
        .autocommit(|t| t.create_secondary_index("t", "t_v", vec![1], false))
        .unwrap();
    engine.close().unwrap();
    vfs.crash_image(0)
}

fn row(id: i32, v: i32, s: &str) -> Vec<Value> {
    vec![Value::Integer(id), Value::Integer(v), Value::Text(s.into())]
}

/// What the workload left: the rows of every acknowledged commit, and the rows if the commit
/// that failed (its outcome unknown) took effect.
#[derive(Default)]
struct Outcome {
    committed: Rows,
    in_doubt: Option<Rows>,
}

/// Transaction `i` of the workload applied to `rows`: five inserts of rows of growing text, an
/// update that lengthens an earlier row, a delete.
fn transaction(i: i32, rows: &Rows) -> Vec<(i32, Option<(i32, String)>)> {
    let mut changes = Vec::new();
    for id in 5 * i..5 * i + 5 {
        changes.push((
            id,
            Some((id % 7, format!("r{id}").repeat((id % 40) as usize))),
        ));
    }
    if let Some((v, s)) = rows.get(&(5 * (i - 2) + 1)) {
        changes.push((
            5 * (i - 2) + 1,
            Some((v + 1, format!("{s}{}", "u".repeat(30)))),
        ));
    }
    if rows.contains_key(&(5 * (i - 3) + 2)) {
        changes.push((5 * (i - 3) + 2, None));
    }
    changes
}

const TRANSACTIONS: i32 = 60;

/// Runs the workload until it ends or an operation fails.
fn workload(engine: &Arc<Engine>, outcome: &mut Outcome) -> Result<(), EngineError> {
    let table = engine.table("t").expect("table t");
    for i in 0..TRANSACTIONS {
        let changes = transaction(i, &outcome.committed);
        let mut txn = engine.begin(Isolation::ReadCommitted)?;
        let mut after = outcome.committed.clone();
        for (id, change) in changes {
            let pk = primary_key(&table, &[Value::Integer(id)]);
            match change {
                Some((v, s)) if after.contains_key(&id) => {
                    txn.update_row(&table, &pk, &row(id, v, &s))?;
                    after.insert(id, (v, s));
                }
                Some((v, s)) => {
                    txn.insert_row(&table, &row(id, v, &s))?;
                    after.insert(id, (v, s));
                }
                None => {
                    txn.delete_row(&table, &pk)?;
                    after.remove(&id);
                }
            }
        }
        if let Err(err) = txn.commit() {
            outcome.in_doubt = Some(after);
            return Err(err);
        }
        outcome.committed = after;
        if i % 10 == 9 {
            engine.store().checkpoint()?;
        }
    }
    Ok(())
}

/// The rows of t as a new transaction sees them.
fn rows_of(engine: &Arc<Engine>) -> Rows {
    let table = engine.table("t").expect("table t");
    let mut txn = engine.begin(Isolation::RepeatableRead).unwrap();
    let scan = txn
        .scan_rows(&table, Bound::Unbounded, Bound::Unbounded)
        .unwrap();
    scan.map(|row| match row.unwrap().1.as_slice() {
        [Value::Integer(id), Value::Integer(v), Value::Text(s)] => (*id, (*v, s.to_string())),
        other => panic!("unexpected row {other:?}"),
    })
    .collect()
}

/// Opens the database left on `vfs` and checks it against `outcome` (see the module doc).
fn assert_recovers(vfs: &SimVfs, outcome: &Outcome, what: &str) {
    let engine = Engine::open_vfs(Arc::new(vfs.clone()), &config())
        .unwrap_or_else(|err| panic!("{what}: the database does not open: {err}"));
    let rows = rows_of(&engine);
    let expected = outcome
        .in_doubt
        .as_ref()
        .filter(|rows_if| **rows_if == rows);
    assert!(
        rows == outcome.committed || expected.is_some(),
        "{what}: {} rows recovered, {} committed (ids recovered {:?}, committed {:?})",
        rows.len(),
        outcome.committed.len(),
        rows.keys().collect::<Vec<_>>(),
        outcome.committed.keys().collect::<Vec<_>>()
    );
    assert_consistent(engine, vfs, what);
}

/// Every index of the database `engine` has on `vfs` holds every row, and, once it is closed,
/// the offline check (`steady check`'s) finds no problem.
fn assert_consistent(engine: Arc<Engine>, vfs: &SimVfs, what: &str) {
    for check in engine.check_indexes().unwrap() {
        assert_eq!(
            check.missing_count, 0,
            "{what}: index {} misses rows",
            check.index
        );
    }
    engine.close().unwrap();
    let vfs: &dyn Vfs = vfs;
    let report = check_directory(vfs, &mut |_| {}).unwrap();
    assert!(report.problems.is_empty(), "{what}: {:?}", report.problems);
}

/// Runs the workload on a copy of `base` crashing at write `n`; returns the crashed file system
/// and what the workload got done, or None if it ended before write `n`.
fn crashed_run(base: &SimVfs, n: u64) -> Option<(SimVfs, Outcome)> {
    let vfs = base.crash_image(0);
    vfs.crash_at_write(n);
    let mut outcome = Outcome::default();
    if let Ok(engine) = Engine::open_vfs(Arc::new(vfs.clone()), &config()) {
        let _ = workload(&engine, &mut outcome);
    }
    vfs.has_crashed().then_some((vfs, outcome))
}

#[test]
fn a_crash_at_every_write_point_loses_no_acknowledged_commit() {
    let base = base();
    let mut n = 1;
    while let Some((crashed, outcome)) = crashed_run(&base, n) {
        for seed in 0..2 {
            let image = crashed.crash_image(n * 2 + seed);
            assert_recovers(
                &image,
                &outcome,
                &format!("crash at write {n}, image {seed}"),
            );
        }
        n += 1;
    }
    assert!(n > 100, "the workload made only {n} writes");
}

/// Opens the database on `vfs`.
fn open(vfs: &SimVfs) -> Arc<Engine> {
    Engine::open_vfs(Arc::new(vfs.clone()), &config()).unwrap()
}

/// Inserts rows `ids` (with 200 bytes of text each) in one transaction and commits it.
fn insert_committed(
    engine: &Arc<Engine>,
    ids: std::ops::Range<i32>,
    rows: &mut Rows,
) -> Result<(), EngineError> {
    let table = engine.table("t").expect("table t");
    let mut txn = engine.begin(Isolation::ReadCommitted)?;
    let mut after = rows.clone();
    for id in ids {
        let s = format!("{id:0200}");
        txn.insert_row(&table, &row(id, id % 7, &s))?;
        after.insert(id, (id % 7, s));
    }
    txn.commit()?;
    *rows = after;
    Ok(())
}

#[test]
fn a_full_disk_fails_the_writes_that_need_room_and_loses_nothing() {
    let vfs = base();
    let engine = open(&vfs);
    vfs.set_capacity(Some(vfs.used() + (2 << 20)));
    let mut committed = Rows::new();
    let mut batch = 0;
    let full = loop {
        assert!(batch < 2000, "the disk never filled");
        if let Err(err) = insert_committed(&engine, batch * 50..batch * 50 + 50, &mut committed) {
            break err;
        }
        batch += 1;
    };
    assert!(batch > 0, "the first batch failed: {full}");
    assert_eq!(full.sqlstate(), "53100", "{full}");
    assert_eq!(rows_of(&engine), committed, "reads after the disk filled");
    vfs.set_capacity(None);
    let more = batch * 50 + 1000..batch * 50 + 1050;
    insert_committed(&engine, more, &mut committed).expect("writes go on once there is room");
    engine.close().unwrap();
    let outcome = Outcome {
        committed,
        in_doubt: None,
    };
    assert_recovers(&vfs, &outcome, "after a full disk");
}

/// Commits three batches, the second's with a failing sync of the files named `prefix...`, and
/// a checkpoint after each; returns the rows acknowledged and whether the later work failed.
fn run_with_failing_sync(vfs: &SimVfs, prefix: &str) -> (Outcome, Vec<bool>) {
    let engine = open(vfs);
    let mut outcome = Outcome::default();
    let mut failed = Vec::new();
    for batch in 0..3 {
        if batch == 1 {
            vfs.fail_next_syncs(prefix, 1);
        }
        let mut rows = outcome.committed.clone();
        let committed = insert_committed(&engine, batch * 100..batch * 100 + 100, &mut rows);
        let checkpointed = committed.is_ok() && engine.store().checkpoint().is_ok();
        match committed {
            Ok(()) => outcome.committed = rows,
            Err(_) => outcome.in_doubt = outcome.in_doubt.or(Some(rows)),
        }
        failed.push(!checkpointed);
    }
    (outcome, failed)
}

/// After a failed sync of the files named `prefix...`, the commit or checkpoint it served and
/// every later one fail, and a crash then loses nothing acknowledged.
fn assert_failed_sync_is_survived(prefix: &str) {
    let vfs = base();
    let (outcome, failed) = run_with_failing_sync(&vfs, prefix);
    assert_eq!(failed, [false, true, true]);
    for seed in 0..4 {
        assert_recovers(&vfs.crash_image(seed), &outcome, &format!("image {seed}"));
    }
}

#[test]
fn after_a_failed_sync_of_the_log_no_commit_is_acknowledged_until_a_restart() {
    assert_failed_sync_is_survived("redo");
}

#[test]
fn after_a_failed_sync_of_a_data_file_no_checkpoint_passes_its_writes() {
    assert_failed_sync_is_survived("space_");
}

/// After a failed sync of a data file no checkpoint can free the redo log until a restart: a
/// writer that needs room in it gets an error instead of waiting forever (it used to wait in
/// `reserve_log`, retrying the checkpoint every 10 ms), and a crash then loses nothing
/// acknowledged.
#[test]
fn after_a_failed_sync_of_a_data_file_a_writer_needing_log_room_fails_instead_of_waiting() {
    let vfs = base();
    let engine = open(&vfs);
    let mut committed = Rows::new();
    insert_committed(&engine, 0..100, &mut committed).unwrap();
    vfs.fail_next_syncs("space_", 1);
    assert!(engine.store().checkpoint().is_err());
    let mut batch = 1;
    let refused = loop {
        assert!(batch < 1000, "the redo log never filled");
        let ids = batch * 100..batch * 100 + 100;
        if let Err(err) = insert_committed(&engine, ids, &mut committed) {
            break err;
        }
        batch += 1;
    };
    assert!(
        batch > 1,
        "the first batch after the failed sync failed: {refused}"
    );
    assert_eq!(refused.sqlstate(), "58030", "{refused}");
    drop(engine);
    let outcome = Outcome {
        committed,
        in_doubt: None,
    };
    for seed in 0..4 {
        assert_recovers(&vfs.crash_image(seed), &outcome, &format!("image {seed}"));
    }
}

/// A schema and its data as DDL leaves them: per table its name, index names and row count;
/// and the space files (once dropped spaces are reclaimed).
#[derive(Debug, PartialEq)]
struct Schema {
    tables: Vec<(String, Vec<String>, usize)>,
    files: Vec<String>,
}

fn schema(vfs: &SimVfs, engine: &Arc<Engine>) -> Schema {
    engine.purge().unwrap();
    assert!(engine
        .store()
        .wait_reclaimed(std::time::Duration::from_secs(10)));
    let mut reader = engine.begin(Isolation::RepeatableRead).unwrap();
    let mut tables: Vec<_> = engine
        .tables()
        .iter()
        .map(|table| {
            let mut indexes: Vec<String> = table.indexes.iter().map(|i| i.name.clone()).collect();
            indexes.sort();
            let scan = reader.scan_rows(table, Bound::Unbounded, Bound::Unbounded);
            (table.name.clone(), indexes, scan.unwrap().count())
        })
        .collect();
    tables.sort();
    let files = vfs.list().unwrap().into_iter();
    let files = files.filter(|name| name.starts_with("space_")).collect();
    Schema { tables, files }
}

const DDL_STEPS: usize = 6;

/// DDL step `step` (0-based) of the DDL workload, each committed on its own and followed by a
/// purge pass (which drops the spaces DDL left behind).
fn ddl_step(engine: &Arc<Engine>, step: usize) -> Result<(), EngineError> {
    let columns = || vec![ColumnDef::plain("k", DataType::Integer)];
    engine.autocommit(|t| match step {
        0 => t
            .create_secondary_index("t", "t_s", vec![2], false)
            .map(drop),
        1 => t.rewrite_table("t").map(drop),
        2 => {
            let u = t.create_table("u", columns(), vec![0])?;
            for k in 0..200 {
                t.insert_row(&u, &[Value::Integer(k)])?;
            }
            Ok(())
        }
        3 => t.truncate_table("u"),
        4 => t.drop_secondary_index("t", "t_v").map(drop),
        _ => t.drop_table("u"),
    })?;
    engine.purge().map(drop)
}

/// `base` with 300 rows in t.
fn ddl_base() -> SimVfs {
    let vfs = base();
    let engine = open(&vfs);
    insert_committed(&engine, 0..300, &mut Rows::new()).unwrap();
    engine.close().unwrap();
    vfs.crash_image(0)
}

#[test]
fn a_crash_at_every_write_point_of_ddl_leaves_the_schema_before_or_after_it_and_no_orphan_file() {
    let base = ddl_base();
    let reference: Vec<Schema> = {
        let vfs = base.crash_image(0);
        let engine = open(&vfs);
        let mut schemas = vec![schema(&vfs, &engine)];
        for step in 0..DDL_STEPS {
            ddl_step(&engine, step).unwrap();
            schemas.push(schema(&vfs, &engine));
        }
        schemas
    };
    let mut n = 1;
    loop {
        let vfs = base.crash_image(0);
        vfs.crash_at_write(n);
        let mut done = 0;
        if let Ok(engine) = Engine::open_vfs(Arc::new(vfs.clone()), &config()) {
            while done < DDL_STEPS && ddl_step(&engine, done).is_ok() {
                done += 1;
            }
        }
        if !vfs.has_crashed() {
            break;
        }
        let image = vfs.crash_image(n);
        let engine = open(&image);
        let recovered = schema(&image, &engine);
        let what = format!("crash at write {n}, after {done} steps");
        assert!(
            recovered == reference[done] || reference.get(done + 1) == Some(&recovered),
            "{what}: {recovered:?}\nexpected {:?}",
            reference[done]
        );
        assert_consistent(engine, &image, &what);
        n += 1;
    }
    assert!(n > 100, "the DDL workload made only {n} writes");
}
