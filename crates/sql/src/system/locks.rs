//! `pg_locks` — one row per lock a transaction holds or waits for, from the engine's lock
//! manager (`LockManager::snapshot`), with the pid of the session whose transaction it is.
//!
//! The engine's locks map onto PostgreSQL's kinds: a table's lock (`relation`; writers hold it
//! shared, shown as `RowExclusiveLock`, and DDL exclusively, `AccessExclusiveLock`), a
//! transaction's own lock (`transactionid`; a wait for another transaction's end — a row it wrote
//! without a row lock, or its uncommitted DDL — is a `ShareLock` request on it), and a row or a
//! unique key value (`tuple`, on the table or index it belongs to). A waiting request has
//! `granted = false`, so PostgreSQL's monitoring queries find who blocks whom.

use steady_engine::engine::{DDL_LOCKS, TXN_LOCKS};
use steady_engine::lock::{LockInfo, LockMode};
use steady_types::{DataType, Value};

use super::oids;
use super::rows::{name, oid, Rows};
use super::SystemTable;
use crate::error::Result;
use crate::execution::executor::ExecCtx;

use DataType::{BigInt, Boolean, Integer, Text, Timestamp};

pub const VIEWS: &[SystemTable] = &[SystemTable {
    schema: "pg_catalog",
    name: "pg_locks",
    columns: &[
        ("locktype", Text),
        ("database", BigInt),
        ("relation", BigInt),
        ("page", Integer),
        ("tuple", Integer),
        ("virtualxid", Text),
        ("transactionid", Text),
        ("classid", BigInt),
        ("objid", BigInt),
        ("objsubid", Integer),
        ("virtualtransaction", Text),
        ("pid", Integer),
        ("mode", Text),
        ("granted", Boolean),
        ("fastpath", Boolean),
        ("waitstart", Timestamp),
    ],
    rows: pg_locks,
}];

fn pg_locks(ctx: &mut ExecCtx) -> Result<Rows> {
    let sessions: Vec<(u64, i32)> = ctx
        .activities()?
        .all()
        .iter()
        .map(|a| (a.transaction(), a.pid))
        .collect();
    let pid = |txn: u64| {
        sessions
            .iter()
            .find(|(t, _)| *t == txn)
            .map_or(Value::Null, |(_, pid)| Value::Integer(*pid))
    };
    let mut locks = ctx.engine()?.locks().snapshot();
    locks.sort_by(|a, b| (&a.key, a.txn, !a.granted).cmp(&(&b.key, b.txn, !b.granted)));
    Ok(locks
        .iter()
        .map(|lock| lock_row(lock, pid(lock.txn)))
        .collect())
}

fn lock_row(lock: &LockInfo, pid: Value) -> Vec<Value> {
    let (kind, relation, transaction) = if lock.key.index_id == TXN_LOCKS {
        let owner = lock.key.key.as_slice().try_into().map(u64::from_be_bytes);
        (
            "transactionid",
            Value::Null,
            owner.map_or(Value::Null, |t| name(&t.to_string())),
        )
    } else if lock.key.index_id == DDL_LOCKS {
        let table = lock.key.key.as_slice().try_into().map(u64::from_be_bytes);
        (
            "relation",
            table.map_or(Value::Null, |t| oid(oids::relation(t))),
            Value::Null,
        )
    } else if lock.key.key.is_empty() {
        (
            "relation",
            oid(oids::relation(lock.key.index_id)),
            Value::Null,
        )
    } else {
        ("tuple", oid(oids::relation(lock.key.index_id)), Value::Null)
    };
    let mode = match (kind, lock.mode) {
        // The DDL lock conflicts with itself only, as PostgreSQL's SHARE UPDATE EXCLUSIVE.
        _ if lock.key.index_id == DDL_LOCKS => "ShareUpdateExclusiveLock",
        ("relation", LockMode::Shared) => "RowExclusiveLock",
        ("relation", LockMode::Exclusive) => "AccessExclusiveLock",
        (_, LockMode::Shared) => "ShareLock",
        (_, LockMode::Exclusive) => "ExclusiveLock",
    };
    vec![
        name(kind),
        oid(oids::DATABASE),
        relation,
        Value::Null,
        Value::Null,
        Value::Null,
        transaction,
        Value::Null,
        Value::Null,
        Value::Null,
        name(&format!("1/{}", lock.txn)),
        pid,
        name(mode),
        Value::Boolean(lock.granted),
        Value::Boolean(false),
        Value::Null,
    ]
}
