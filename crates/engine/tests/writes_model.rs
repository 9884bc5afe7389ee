//! One transaction's writes against a model: random inserts, updates and deletes, one row at a
//! time and in batches of locked rows (the paths UPDATE and DELETE take), with savepoints and
//! rollbacks to them, then a commit or a rollback. Throughout, the transaction sees the model's
//! rows, and a snapshot taken before it began sees the rows as they were; after it ends, every
//! new transaction sees the outcome (by primary key and through the secondary index), before
//! and after purge and after a restart, and purge leaves no stale index entry (also of versions
//! the transaction replaced itself). The table has a secondary index or none (then inserts
//! take the path without row locks, and batches of ascending new keys log one range entry).
//! The table's row counters (`Engine::table_rows`) give the model's rows after every end, and no
//! delete mark once purge has run, also after a restart (where they start from a sample).

mod common;

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;

use proptest::prelude::*;
use steady_engine::catalog::TableDef;
use steady_engine::codec::encode_key;
use steady_engine::engine::{Engine, EngineConfig, Isolation, Transaction};
use steady_engine::table::primary_key;
use steady_storage::io::{MemVfs, Vfs};
use steady_types::Value;

/// Rows by id: the value of column `v`.
type Rows = BTreeMap<i32, i32>;

const KEYS: i32 = 12;

#[derive(Debug, Clone)]
enum Op {
    Insert(Vec<i32>, i32),
    Update(i32, i32),
    Delete(i32),
    UpdateLocked(Vec<i32>, i32),
    DeleteLocked(Vec<i32>),
    Savepoint,
    RollbackTo(usize),
}

fn op() -> impl Strategy<Value = Op> {
    let keys = prop::collection::vec(0..KEYS, 1..6);
    prop_oneof![
        (keys.clone(), 0..4).prop_map(|(k, v)| Op::Insert(k, v)),
        (0..KEYS, 0..4).prop_map(|(k, v)| Op::Update(k, v)),
        (0..KEYS).prop_map(Op::Delete),
        (keys.clone(), 0..4).prop_map(|(k, v)| Op::UpdateLocked(k, v)),
        keys.prop_map(Op::DeleteLocked),
        Just(Op::Savepoint),
        (0..4usize).prop_map(Op::RollbackTo),
    ]
}

fn config() -> EngineConfig {
    common::config(256, 16 << 20)
}

/// Table `t`; with `indexed`, a secondary index on `v` (without one, inserts go without row locks
/// and a batch of ascending new keys is undone by one range entry).
fn table(engine: &Arc<Engine>, indexed: bool) -> Arc<TableDef> {
    let column = common::int_column;
    let table = engine
        .autocommit(|t| t.create_table("t", vec![column("id"), column("v")], vec![0]))
        .unwrap();
    if !indexed {
        return table;
    }
    engine
        .autocommit(|t| t.create_secondary_index("t", "by_v", vec![1], false))
        .unwrap()
}

fn row(id: i32, v: i32) -> Vec<Value> {
    vec![Value::Integer(id), Value::Integer(v)]
}

fn key(table: &TableDef, id: i32) -> Vec<u8> {
    primary_key(table, &[Value::Integer(id)])
}

fn int(value: &Value) -> i32 {
    match value {
        Value::Integer(i) => *i,
        other => panic!("not an integer: {other:?}"),
    }
}

/// The rows `txn` sees, by a scan of the table.
fn scanned(txn: &mut Transaction, table: &TableDef) -> Rows {
    txn.scan_rows(table, Bound::Unbounded, Bound::Unbounded)
        .unwrap()
        .map(|r| {
            let (_, values) = r.unwrap();
            (int(&values[0]), int(&values[1]))
        })
        .collect()
}

/// The rows `txn` sees through the secondary index, one lookup per value of `v` (by a scan if
/// the table has no index).
fn by_index(txn: &mut Transaction, table: &TableDef) -> Rows {
    let Some(index) = table.index("by_v") else {
        return scanned(txn, table);
    };
    let mut rows = Rows::new();
    for v in 0..4 {
        let k = encode_key(&[Value::Integer(v)]);
        for (_, values) in txn
            .index_rows(table, index, Bound::Included(&k), Bound::Included(&k))
            .unwrap()
        {
            assert_eq!(
                int(&values[1]),
                v,
                "an index entry names a row with another v"
            );
            rows.insert(int(&values[0]), v);
        }
    }
    rows
}

/// The ids of `ids` (sorted, without duplicates) and their keys.
fn sorted_keys(table: &TableDef, ids: &[i32]) -> (Vec<i32>, Vec<Vec<u8>>) {
    let mut ids = ids.to_vec();
    ids.sort_unstable();
    ids.dedup();
    let keys = ids.iter().map(|&id| key(table, id)).collect();
    (ids, keys)
}

fn apply(txn: &mut Transaction, table: &TableDef, model: &mut Rows, op: &Op) {
    match op {
        Op::Insert(ids, v) => {
            let (ids, _) = sorted_keys(table, ids);
            let new: Vec<i32> = ids
                .into_iter()
                .filter(|id| !model.contains_key(id))
                .collect();
            let rows: Vec<Vec<Value>> = new.iter().map(|&id| row(id, *v)).collect();
            txn.insert_rows(table, &rows).unwrap();
            model.extend(new.iter().map(|&id| (id, *v)));
        }
        Op::Update(id, v) => {
            let changed = txn
                .update_row(table, &key(table, *id), &row(*id, *v))
                .unwrap();
            assert_eq!(changed, model.contains_key(id));
            if changed {
                model.insert(*id, *v);
            }
        }
        Op::Delete(id) => {
            let deleted = txn.delete_row(table, &key(table, *id)).unwrap();
            assert_eq!(deleted, model.remove(id).is_some());
        }
        Op::UpdateLocked(ids, v) => {
            let (ids, keys) = sorted_keys(table, ids);
            let seen = txn.lock_table_rows(table, &keys).unwrap();
            let mut rows = Vec::new();
            for ((id, pk), seen) in ids.iter().zip(keys).zip(seen) {
                assert_eq!(seen.map(|r| int(&r[1])), model.get(id).copied());
                if model.contains_key(id) {
                    rows.push((pk, row(*id, *v)));
                    model.insert(*id, *v);
                }
            }
            assert_eq!(txn.update_rows(table, &rows).unwrap(), rows.len());
        }
        Op::DeleteLocked(ids) => {
            let (ids, keys) = sorted_keys(table, ids);
            let seen = txn.lock_table_rows(table, &keys).unwrap();
            let mut pks = Vec::new();
            for ((id, pk), seen) in ids.iter().zip(keys).zip(seen) {
                assert_eq!(seen.map(|r| int(&r[1])), model.get(id).copied());
                if model.remove(id).is_some() {
                    pks.push(pk);
                }
            }
            assert_eq!(txn.delete_rows(table, &pks).unwrap(), pks.len());
        }
        Op::Savepoint | Op::RollbackTo(_) => unreachable!("handled by the caller"),
    }
}

fn check_committed(engine: &Arc<Engine>, table: &TableDef, expected: &Rows, when: &str) {
    let mut txn = engine.begin(Isolation::RepeatableRead).unwrap();
    assert_eq!(&scanned(&mut txn, table), expected, "scan {when}");
    assert_eq!(&by_index(&mut txn, table), expected, "index {when}");
    txn.commit().unwrap();
}

/// The table's counters give `rows` live rows and, when `purged`, no delete mark; the delete
/// marks they count are never fewer than the committed rows the transaction deleted.
fn check_counts(engine: &Engine, table: &TableDef, rows: usize, marks: usize, when: &str) {
    let counts = engine.table_rows(table.id).unwrap();
    assert_eq!(counts.live, rows as u64, "live rows counted {when}");
    assert!(
        counts.dead >= marks as u64,
        "{counts:?}: {marks} marks at least {when}"
    );
}

fn run(initial: Rows, ops: Vec<Op>, commit: bool, indexed: bool) {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    let engine = Engine::open_vfs(vfs.clone(), &config()).unwrap();
    let table = table(&engine, indexed);
    let mut setup = engine.begin(Isolation::ReadCommitted).unwrap();
    let rows: Vec<Vec<Value>> = initial.iter().map(|(&id, &v)| row(id, v)).collect();
    setup.insert_rows(&table, &rows).unwrap();
    setup.commit().unwrap();
    check_counts(&engine, &table, initial.len(), 0, "after the load");

    let mut old_reader = engine.begin(Isolation::RepeatableRead).unwrap();
    assert_eq!(scanned(&mut old_reader, &table), initial);
    let mut txn = engine.begin(Isolation::RepeatableRead).unwrap();
    let mut model = initial.clone();
    let mut savepoints = Vec::new();
    for op in &ops {
        match op {
            Op::Savepoint => savepoints.push((txn.savepoint(), model.clone())),
            Op::RollbackTo(at) => {
                if let Some((savepoint, saved)) = savepoints.get(*at) {
                    txn.rollback_to(savepoint).unwrap();
                    model = saved.clone();
                    savepoints.truncate(at + 1);
                }
            }
            op => apply(&mut txn, &table, &mut model, op),
        }
        assert_eq!(scanned(&mut txn, &table), model, "own scan after {op:?}");
        assert_eq!(by_index(&mut txn, &table), model, "own index after {op:?}");
        assert_eq!(
            scanned(&mut old_reader, &table),
            initial,
            "old snapshot after {op:?}"
        );
    }
    let outcome = if commit {
        txn.commit().unwrap();
        model
    } else {
        txn.rollback().unwrap();
        initial.clone()
    };
    assert_eq!(
        scanned(&mut old_reader, &table),
        initial,
        "old snapshot at the end"
    );
    assert_eq!(
        by_index(&mut old_reader, &table),
        initial,
        "old snapshot's index"
    );
    check_committed(&engine, &table, &outcome, "after the end");
    let deleted = initial.keys().filter(|id| !outcome.contains_key(id));
    check_counts(
        &engine,
        &table,
        outcome.len(),
        deleted.count(),
        "after the end",
    );
    engine.purge().unwrap();
    check_committed(
        &engine,
        &table,
        &outcome,
        "after purge under the old snapshot",
    );
    old_reader.commit().unwrap();
    while engine.purge().unwrap() > 0 {}
    check_committed(&engine, &table, &outcome, "after purge");
    check_counts(&engine, &table, outcome.len(), 0, "after purge");
    assert_eq!(
        engine.table_rows(table.id).unwrap().dead,
        0,
        "marks after purge"
    );
    for check in engine.check_indexes().unwrap() {
        assert_eq!(check.stale, 0, "stale entries after purge: {check:?}");
    }
    engine.close().unwrap();
    let engine = Engine::open_vfs(vfs, &config()).unwrap();
    let table = engine.table("t").unwrap();
    check_committed(&engine, &table, &outcome, "after a restart");
    check_counts(&engine, &table, outcome.len(), 0, "after a restart");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn a_transactions_writes_match_the_model(
        initial in prop::collection::btree_map(0..KEYS, 0..4, 0..KEYS as usize),
        ops in prop::collection::vec(op(), 1..24),
        commit in any::<bool>(),
        indexed in any::<bool>(),
    ) {
        run(initial, ops, commit, indexed);
    }
}
