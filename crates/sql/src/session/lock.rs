//! `LOCK [TABLE] [ONLY] name [, ...] [IN mode MODE] [NOWAIT]`, inside a transaction block.
//!
//! SteadyDB's tables have one lock of their own (`steady_engine`'s table lock), which writers
//! take shared and DDL exclusive; readers take none, as MVCC needs none. So ACCESS SHARE, ROW
//! SHARE and ROW EXCLUSIVE take it shared (DROP, TRUNCATE, ALTER TABLE and VACUUM FULL of the
//! table wait for the block to end — what pg_dump relies on), and EXCLUSIVE takes it exclusive
//! (the table's writers wait as well, its readers go on), each as PostgreSQL's mode of that name
//! conflicts with what those statements take. SHARE, SHARE ROW EXCLUSIVE and SHARE UPDATE
//! EXCLUSIVE (self-compatible, or compatible with writers) and ACCESS EXCLUSIVE (it stops
//! readers), which is also the mode when none is named, are refused (0A000) rather than taken
//! as something else.

use sqlparser::ast::{Lock, LockTableMode};

use super::{QueryResult, Session};
use crate::error::{Result, SqlError};
use crate::system::public_object_name;

impl Session {
    pub(super) fn lock_tables(&mut self, lock: &Lock) -> Result<QueryResult> {
        if self.block.is_none() {
            return Err(SqlError::new(
                "25P01",
                "LOCK TABLE can only be used in transaction blocks",
            ));
        }
        let exclusive = match &lock.lock_mode {
            Some(
                LockTableMode::AccessShare | LockTableMode::RowShare | LockTableMode::RowExclusive,
            ) => false,
            Some(LockTableMode::Exclusive) => true,
            Some(other) => return Err(unsupported_mode(&other.to_string())),
            None => return Err(unsupported_mode("ACCESS EXCLUSIVE")),
        };
        let names = lock
            .tables
            .iter()
            .map(|t| public_object_name(&t.name))
            .collect::<Result<Vec<String>>>()?;
        self.check_lock_privileges(&names, lock.lock_mode.as_ref())?;
        self.in_transaction(|_, txn| {
            for name in &names {
                txn.lock_table(name, exclusive, lock.nowait)?;
            }
            Ok(QueryResult::command("LOCK TABLE"))
        })
    }
}

impl Session {
    /// A role that is not a superuser locks a table only with a privilege on it, as PostgreSQL
    /// 15 asks: SELECT for ACCESS SHARE, one of INSERT, UPDATE, DELETE, TRUNCATE for ROW
    /// EXCLUSIVE, one of UPDATE, DELETE, TRUNCATE for the others (42501).
    fn check_lock_privileges(&self, names: &[String], mode: Option<&LockTableMode>) -> Result<()> {
        use crate::execution::privileges::{self as p, Privilege, RelationKind};
        let engine = self.db.engine();
        let role = self.info.role.as_deref();
        let (Some(name), false) = (role, p::is_superuser(engine, role)?) else {
            return Ok(());
        };
        let wanted: &[Privilege] = match mode {
            Some(LockTableMode::AccessShare) => &[Privilege::Select],
            Some(LockTableMode::RowExclusive) => &[
                Privilege::Insert,
                Privilege::Update,
                Privilege::Delete,
                Privilege::Truncate,
            ],
            _ => &[Privilege::Update, Privilege::Delete, Privilege::Truncate],
        };
        for table in names {
            let def = engine
                .table(table)
                .ok_or_else(|| SqlError::undefined_table(table))?;
            let grants = engine.grants(def.id)?;
            if !wanted.iter().any(|w| p::allows(&grants, name, *w)) {
                return Err(p::denied(RelationKind::Table, table));
            }
        }
        Ok(())
    }
}

fn unsupported_mode(mode: &str) -> SqlError {
    SqlError::unsupported(format!(
        "LOCK TABLE ... IN {mode} MODE (ACCESS SHARE, ROW SHARE, ROW EXCLUSIVE and EXCLUSIVE are)"
    ))
}
