//! The Hermitage isolation tests (github.com/ept/hermitage, postgres.md) at the engine API, at READ
//! COMMITTED, REPEATABLE READ and SERIALIZABLE, expecting PostgreSQL's outcomes: which statement
//! blocks, which fails with 40001, what each read returns. Plus a dirty read at READ UNCOMMITTED,
//! which PostgreSQL does not offer.
//!
//! Every test starts from `test(id int primary key, value int)` holding (1, 10), (2, 20). A
//! statement with a WHERE clause is carried out as the SQL executor will: scan with the statement's
//! snapshot, lock each matching row, and re-check the condition on the version the lock returns.

use std::ops::Bound;
use std::sync::Arc;
use std::thread::ScopedJoinHandle;
use std::time::Duration;

use steady_engine::engine::{Engine, EngineConfig, Isolation, Transaction};
use steady_engine::error::EngineError;
use steady_engine::version::IndexId;
use steady_storage::io::MemVfs;
use steady_storage::store::StoreConfig;

use Isolation::{
    ReadCommitted as RC, ReadUncommitted as RU, RepeatableRead as RR, Serializable as SER,
};

type Rows = Vec<(i32, i32)>;

struct Db {
    engine: Arc<Engine>,
    table: IndexId,
}

fn setup() -> Db {
    let config = EngineConfig {
        store: StoreConfig {
            page_size: 4096,
            buffer_pool_bytes: 256 * 4096,
            background_flush: false,
            log_capacity: 16 << 20,
            ..Default::default()
        },
        lock_timeout: Some(Duration::from_secs(10)),
        ..Default::default()
    };
    let engine = Engine::open_vfs(Arc::new(MemVfs::new()), &config).unwrap();
    let table = engine.create_index().unwrap();
    let db = Db { engine, table };
    let mut txn = db.begin(RC);
    db.insert(&mut txn, 1, 10).unwrap();
    db.insert(&mut txn, 2, 20).unwrap();
    txn.commit().unwrap();
    db
}

fn key(id: i32) -> [u8; 4] {
    (id as u32 ^ 0x8000_0000).to_be_bytes()
}

fn id_of(key: &[u8]) -> i32 {
    (u32::from_be_bytes(key.try_into().unwrap()) ^ 0x8000_0000) as i32
}

fn value_of(row: &[u8]) -> i32 {
    i32::from_le_bytes(row.try_into().unwrap())
}

impl Db {
    fn begin(&self, isolation: Isolation) -> Transaction {
        self.engine.begin(isolation).unwrap()
    }

    fn insert(&self, txn: &mut Transaction, id: i32, value: i32) -> Result<(), EngineError> {
        txn.begin_statement();
        txn.insert(self.table, &key(id), &value.to_le_bytes())
    }

    /// `select * from test where filter`
    fn select(
        &self,
        txn: &mut Transaction,
        filter: impl Fn(i32, i32) -> bool,
    ) -> Result<Rows, EngineError> {
        txn.begin_statement();
        let mut rows = Vec::new();
        for row in txn.scan(self.table, Bound::Unbounded, Bound::Unbounded)? {
            let (k, v) = row?;
            let (id, value) = (id_of(&k), value_of(&v));
            if filter(id, value) {
                rows.push((id, value));
            }
        }
        Ok(rows)
    }

    /// `select * from test where id = id`, as a point read.
    fn get(&self, txn: &mut Transaction, id: i32) -> Result<Option<i32>, EngineError> {
        txn.begin_statement();
        Ok(txn.get(self.table, &key(id))?.map(|v| value_of(&v)))
    }

    /// `update test set value = set(value) where filter`; returns the rows updated.
    fn update(
        &self,
        txn: &mut Transaction,
        filter: impl Fn(i32, i32) -> bool,
        set: impl Fn(i32) -> i32,
    ) -> Result<usize, EngineError> {
        self.change(txn, filter, |txn, id, value| {
            txn.update(self.table, &key(id), &set(value).to_le_bytes())
        })
    }

    /// `update test set value = value where id = id`, found through the primary key (a point read,
    /// as PostgreSQL's index scan does).
    fn update_id(&self, txn: &mut Transaction, id: i32, value: i32) -> Result<usize, EngineError> {
        txn.begin_statement();
        if txn.lock_row(self.table, &key(id))?.is_none() {
            return Ok(0);
        }
        Ok(usize::from(txn.update(
            self.table,
            &key(id),
            &value.to_le_bytes(),
        )?))
    }

    /// `delete from test where filter`; returns the rows deleted.
    fn delete(
        &self,
        txn: &mut Transaction,
        filter: impl Fn(i32, i32) -> bool,
    ) -> Result<usize, EngineError> {
        self.change(txn, filter, |txn, id, _| txn.delete(self.table, &key(id)))
    }

    fn change(
        &self,
        txn: &mut Transaction,
        filter: impl Fn(i32, i32) -> bool,
        apply: impl Fn(&mut Transaction, i32, i32) -> Result<bool, EngineError>,
    ) -> Result<usize, EngineError> {
        let candidates = self.select(txn, &filter)?;
        let mut changed = 0;
        for (id, _) in candidates {
            let Some(newest) = txn.lock_row(self.table, &key(id))? else {
                continue;
            };
            let value = value_of(&newest);
            if filter(id, value) && apply(txn, id, value)? {
                changed += 1;
            }
        }
        Ok(changed)
    }
}

fn all(_: i32, _: i32) -> bool {
    true
}

/// Asserts that a statement run on another thread is still blocked after a while.
fn assert_blocked<T>(handle: &ScopedJoinHandle<'_, T>) {
    std::thread::sleep(Duration::from_millis(150));
    assert!(!handle.is_finished(), "the statement should be blocked");
}

fn is_serialization_failure<T: std::fmt::Debug>(result: Result<T, EngineError>) -> bool {
    match result {
        Err(err) => err.sqlstate() == "40001",
        Ok(value) => panic!("expected 40001, got {value:?}"),
    }
}

// ---- G0: write cycles (dirty writes) ----

fn g0(level: Isolation) {
    let db = setup();
    let mut t1 = db.begin(level);
    let mut t2 = db.begin(level);
    assert_eq!(db.update_id(&mut t1, 1, 11).unwrap(), 1);
    std::thread::scope(|s| {
        let blocked = s.spawn(|| {
            let result = db.update_id(&mut t2, 1, 12);
            (result, t2)
        });
        assert_blocked(&blocked);
        assert_eq!(db.update_id(&mut t1, 2, 21).unwrap(), 1);
        t1.commit().unwrap();
        let (result, mut t2) = blocked.join().unwrap();
        if level == RC {
            assert_eq!(result.unwrap(), 1);
            let mut t1 = db.begin(level);
            assert_eq!(db.select(&mut t1, all).unwrap(), vec![(1, 11), (2, 21)]);
            assert_eq!(db.update_id(&mut t2, 2, 22).unwrap(), 1);
            t2.commit().unwrap();
            let mut either = db.begin(level);
            assert_eq!(db.select(&mut either, all).unwrap(), vec![(1, 12), (2, 22)]);
        } else {
            assert!(is_serialization_failure(result));
        }
    });
}

#[test]
fn g0_read_committed() {
    g0(RC);
}
#[test]
fn g0_repeatable_read() {
    g0(RR);
}
#[test]
fn g0_serializable() {
    g0(SER);
}

// ---- G1a: aborted reads; G1b: intermediate reads; G1c: circular information flow ----

fn g1a(level: Isolation) {
    let db = setup();
    let mut t1 = db.begin(level);
    let mut t2 = db.begin(level);
    db.update_id(&mut t1, 1, 101).unwrap();
    assert_eq!(db.select(&mut t2, all).unwrap(), vec![(1, 10), (2, 20)]);
    t1.rollback().unwrap();
    assert_eq!(db.select(&mut t2, all).unwrap(), vec![(1, 10), (2, 20)]);
    t2.commit().unwrap();
}

fn g1b(level: Isolation) {
    let db = setup();
    let mut t1 = db.begin(level);
    let mut t2 = db.begin(level);
    db.update_id(&mut t1, 1, 101).unwrap();
    assert_eq!(db.select(&mut t2, all).unwrap(), vec![(1, 10), (2, 20)]);
    db.update_id(&mut t1, 1, 11).unwrap();
    t1.commit().unwrap();
    let expected = if level == RC {
        vec![(1, 11), (2, 20)]
    } else {
        vec![(1, 10), (2, 20)]
    };
    assert_eq!(db.select(&mut t2, all).unwrap(), expected);
    t2.commit().unwrap();
}

fn g1c(level: Isolation) {
    let db = setup();
    let mut t1 = db.begin(level);
    let mut t2 = db.begin(level);
    db.update_id(&mut t1, 1, 11).unwrap();
    db.update_id(&mut t2, 2, 22).unwrap();
    assert_eq!(db.get(&mut t1, 2).unwrap(), Some(20));
    assert_eq!(db.get(&mut t2, 1).unwrap(), Some(10));
    t1.commit().unwrap();
    let result = t2.commit();
    if level == SER {
        assert!(
            is_serialization_failure(result),
            "each read the other's old value: a cycle"
        );
    } else {
        result.unwrap();
    }
}

#[test]
fn g1_at_every_level() {
    for level in [RC, RR, SER] {
        g1a(level);
        g1b(level);
        g1c(level);
    }
}

// ---- OTV: observed transaction vanishes ----

fn otv(level: Isolation) {
    let db = setup();
    let mut t1 = db.begin(level);
    let mut t2 = db.begin(level);
    let mut t3 = db.begin(level);
    db.update_id(&mut t1, 1, 11).unwrap();
    db.update_id(&mut t1, 2, 19).unwrap();
    std::thread::scope(|s| {
        let blocked = s.spawn(|| (db.update_id(&mut t2, 1, 12), t2));
        assert_blocked(&blocked);
        t1.commit().unwrap();
        let (result, mut t2) = blocked.join().unwrap();
        if level != RC {
            assert!(is_serialization_failure(result));
            assert_eq!(
                db.get(&mut t3, 1).unwrap(),
                Some(11),
                "T3's snapshot is taken now"
            );
            assert_eq!(db.get(&mut t3, 2).unwrap(), Some(19));
            return;
        }
        result.unwrap();
        assert_eq!(db.get(&mut t3, 1).unwrap(), Some(11));
        db.update_id(&mut t2, 2, 18).unwrap();
        assert_eq!(db.get(&mut t3, 2).unwrap(), Some(19));
        t2.commit().unwrap();
        assert_eq!(db.get(&mut t3, 2).unwrap(), Some(18));
        assert_eq!(db.get(&mut t3, 1).unwrap(), Some(12));
        t3.commit().unwrap();
    });
}

#[test]
fn otv_at_every_level() {
    for level in [RC, RR, SER] {
        otv(level);
    }
}

// ---- PMP: predicate many preceders ----

fn pmp(level: Isolation) {
    let db = setup();
    let mut t1 = db.begin(level);
    let mut t2 = db.begin(level);
    assert_eq!(db.select(&mut t1, |_, v| v == 30).unwrap(), vec![]);
    db.insert(&mut t2, 3, 30).unwrap();
    t2.commit().unwrap();
    let expected = if level == RC { vec![(3, 30)] } else { vec![] };
    assert_eq!(db.select(&mut t1, |_, v| v % 3 == 0).unwrap(), expected);
    t1.commit().unwrap();
}

fn pmp_write(level: Isolation) {
    let db = setup();
    let mut t1 = db.begin(level);
    let mut t2 = db.begin(level);
    assert_eq!(db.update(&mut t1, all, |v| v + 10).unwrap(), 2);
    std::thread::scope(|s| {
        let blocked = s.spawn(|| (db.delete(&mut t2, |_, v| v == 20), t2));
        assert_blocked(&blocked);
        t1.commit().unwrap();
        let (result, mut t2) = blocked.join().unwrap();
        if level == RC {
            assert_eq!(
                result.unwrap(),
                0,
                "the re-checked condition no longer holds"
            );
            assert_eq!(db.select(&mut t2, |_, v| v == 20).unwrap(), vec![(1, 20)]);
            t2.commit().unwrap();
        } else {
            assert!(is_serialization_failure(result));
        }
    });
}

#[test]
fn pmp_at_every_level() {
    for level in [RC, RR, SER] {
        pmp(level);
        pmp_write(level);
    }
}

// ---- P4: lost update ----

fn p4(level: Isolation) {
    let db = setup();
    let mut t1 = db.begin(level);
    let mut t2 = db.begin(level);
    db.get(&mut t1, 1).unwrap();
    db.get(&mut t2, 1).unwrap();
    db.update_id(&mut t1, 1, 11).unwrap();
    std::thread::scope(|s| {
        let blocked = s.spawn(|| (db.update_id(&mut t2, 1, 11), t2));
        assert_blocked(&blocked);
        t1.commit().unwrap();
        let (result, t2) = blocked.join().unwrap();
        if level == RC {
            assert_eq!(result.unwrap(), 1);
            t2.commit().unwrap();
        } else {
            assert!(is_serialization_failure(result));
        }
    });
}

#[test]
fn p4_at_every_level() {
    for level in [RC, RR, SER] {
        p4(level);
    }
}

// ---- G-single: read skew ----

fn g_single(level: Isolation) {
    let db = setup();
    let mut t1 = db.begin(level);
    let mut t2 = db.begin(level);
    assert_eq!(db.get(&mut t1, 1).unwrap(), Some(10));
    db.get(&mut t2, 1).unwrap();
    db.get(&mut t2, 2).unwrap();
    db.update_id(&mut t2, 1, 12).unwrap();
    db.update_id(&mut t2, 2, 18).unwrap();
    t2.commit().unwrap();
    let expected = if level == RC { 18 } else { 20 };
    assert_eq!(db.get(&mut t1, 2).unwrap(), Some(expected));
    t1.commit().unwrap();
}

fn g_single_predicate(level: Isolation) {
    let db = setup();
    let mut t1 = db.begin(level);
    let mut t2 = db.begin(level);
    db.select(&mut t1, |_, v| v % 5 == 0).unwrap();
    db.update(&mut t2, |_, v| v == 10, |_| 12).unwrap();
    t2.commit().unwrap();
    let expected = if level == RC { vec![(1, 12)] } else { vec![] };
    assert_eq!(db.select(&mut t1, |_, v| v % 3 == 0).unwrap(), expected);
    t1.commit().unwrap();
}

fn g_single_write_predicate(level: Isolation) {
    let db = setup();
    let mut t1 = db.begin(level);
    let mut t2 = db.begin(level);
    assert_eq!(db.get(&mut t1, 1).unwrap(), Some(10));
    db.select(&mut t2, all).unwrap();
    db.update_id(&mut t2, 1, 12).unwrap();
    db.update_id(&mut t2, 2, 18).unwrap();
    t2.commit().unwrap();
    let result = db.delete(&mut t1, |_, v| v == 20);
    if level == RC {
        assert_eq!(result.unwrap(), 0);
    } else {
        assert!(is_serialization_failure(result));
    }
}

#[test]
fn g_single_at_every_level() {
    for level in [RC, RR, SER] {
        g_single(level);
        g_single_predicate(level);
        g_single_write_predicate(level);
    }
}

// ---- G2-item: write skew; G2: anti-dependency cycles ----

fn g2_item(level: Isolation) {
    let db = setup();
    let mut t1 = db.begin(level);
    let mut t2 = db.begin(level);
    db.select(&mut t1, |id, _| id == 1 || id == 2).unwrap();
    db.select(&mut t2, |id, _| id == 1 || id == 2).unwrap();
    db.update_id(&mut t1, 1, 11).unwrap();
    db.update_id(&mut t2, 2, 21).unwrap();
    t1.commit().unwrap();
    let result = t2.commit();
    if level == SER {
        let err = result.unwrap_err();
        assert_eq!(err.sqlstate(), "40001");
        assert_eq!(
            err.to_string(),
            "could not serialize access due to read/write dependencies among transactions"
        );
    } else {
        result.unwrap();
    }
}

fn g2(level: Isolation) {
    let db = setup();
    let mut t1 = db.begin(level);
    let mut t2 = db.begin(level);
    db.select(&mut t1, |_, v| v % 3 == 0).unwrap();
    db.select(&mut t2, |_, v| v % 3 == 0).unwrap();
    db.insert(&mut t1, 3, 30).unwrap();
    db.insert(&mut t2, 4, 42).unwrap();
    t1.commit().unwrap();
    let result = t2.commit();
    let mut either = db.begin(level);
    if level == SER {
        assert!(is_serialization_failure(result));
        assert_eq!(
            db.select(&mut either, |_, v| v % 3 == 0).unwrap(),
            vec![(3, 30)]
        );
    } else {
        result.unwrap();
        assert_eq!(
            db.select(&mut either, |_, v| v % 3 == 0).unwrap(),
            vec![(3, 30), (4, 42)]
        );
    }
}

#[test]
fn g2_item_at_every_level() {
    for level in [RC, RR, SER] {
        g2_item(level);
    }
}

#[test]
fn g2_at_every_level() {
    for level in [RC, RR, SER] {
        g2(level);
    }
}

/// Fekete et al.'s read-only anomaly: two anti-dependency edges through a read-only transaction.
fn g2_fekete(level: Isolation) {
    let db = setup();
    let mut t1 = db.begin(level);
    assert_eq!(db.select(&mut t1, all).unwrap(), vec![(1, 10), (2, 20)]);
    let mut t2 = db.begin(level);
    db.update(&mut t2, |id, _| id == 2, |v| v + 5).unwrap();
    t2.commit().unwrap();
    let mut t3 = db.begin(level);
    assert_eq!(db.select(&mut t3, all).unwrap(), vec![(1, 10), (2, 25)]);
    t3.commit().unwrap();
    let result = db.update_id(&mut t1, 1, 0);
    if level == SER {
        assert!(is_serialization_failure(result));
    } else {
        assert_eq!(result.unwrap(), 1);
        t1.commit().unwrap();
    }
}

#[test]
fn g2_fekete_at_every_level() {
    for level in [RC, RR, SER] {
        g2_fekete(level);
    }
}

// ---- READ UNCOMMITTED: true dirty reads ----

#[test]
fn read_uncommitted_sees_uncommitted_writes() {
    let db = setup();
    let mut t1 = db.begin(RC);
    let mut reader = db.begin(RU);
    db.update_id(&mut t1, 1, 101).unwrap();
    db.delete(&mut t1, |id, _| id == 2).unwrap();
    assert_eq!(db.select(&mut reader, all).unwrap(), vec![(1, 101)]);
    t1.rollback().unwrap();
    assert_eq!(db.select(&mut reader, all).unwrap(), vec![(1, 10), (2, 20)]);
}

/// SERIALIZABLE transactions that touch disjoint rows do not fail each other.
#[test]
fn serializable_transactions_on_disjoint_rows_both_commit() {
    let db = setup();
    let mut t1 = db.begin(SER);
    let mut t2 = db.begin(SER);
    db.get(&mut t1, 1).unwrap();
    db.get(&mut t2, 2).unwrap();
    db.update_id(&mut t1, 1, 11).unwrap();
    db.update_id(&mut t2, 2, 21).unwrap();
    t1.commit().unwrap();
    t2.commit().unwrap();
}
