//! The source of [`Plan::LockRows`](crate::execution::plan::Plan::LockRows): `SELECT ... FOR
//! UPDATE / FOR SHARE` locking each row as it is pulled.
//!
//! Each input row (the table's columns, as the statement's snapshot saw them) is locked through
//! [`Transaction::lock_table_row_for`](steady_engine::engine::Transaction) and replaced by the
//! row's newest version. Under READ COMMITTED a row changed since the snapshot is returned as it
//! is now if it still passes the WHERE clause, and left out otherwise (PostgreSQL's
//! EvalPlanQual); under REPEATABLE READ and SERIALIZABLE the engine fails the statement with
//! 40001 instead. A row deleted meanwhile, or held by another transaction under SKIP LOCKED, is
//! left out; under NOWAIT a held row fails the statement with 55P03, as PostgreSQL's "could not
//! obtain lock on row".

use std::sync::Arc;

use steady_engine::catalog::TableDef;
use steady_engine::engine::row_lock::{RowLockMode, RowLockWait, RowLocked};
use steady_engine::error::EngineError;
use steady_engine::lock::LockError;
use steady_engine::table::primary_key;

use super::{BoxedSource, ExecCtx, Row, Source};
use crate::error::{Result, SqlError};
use crate::execution::expr::Expr;

pub(super) struct LockRowsSource<'p> {
    pub(super) input: BoxedSource<'p>,
    pub(super) table: &'p Arc<TableDef>,
    pub(super) lock: (RowLockMode, RowLockWait),
    pub(super) recheck: Option<&'p Expr>,
}

impl Source for LockRowsSource<'_> {
    fn next(&mut self, ctx: &mut ExecCtx) -> Result<Option<Row>> {
        while let Some(seen) = self.input.next(ctx)? {
            ctx.check_interrupt()?;
            let pk = primary_key(self.table, &seen);
            let (mode, wait) = self.lock;
            let locked = ctx
                .txn()?
                .lock_table_row_for(self.table, &pk, mode, wait)
                .map_err(|err| self.lock_error(err))?;
            let RowLocked::Row(Some(newest)) = locked else {
                continue;
            };
            if match self.recheck {
                Some(predicate) => predicate.eval_predicate(&newest, ctx)?,
                None => true,
            } {
                return Ok(Some(newest));
            }
        }
        Ok(None)
    }
}

impl LockRowsSource<'_> {
    /// NOWAIT's lock timeout in PostgreSQL's words; every other error as the engine gives it.
    fn lock_error(&self, err: EngineError) -> SqlError {
        match err {
            EngineError::Lock(LockError::Timeout) if self.lock.1 == RowLockWait::NoWait => {
                SqlError::new(
                    "55P03",
                    format!(
                        "could not obtain lock on row in relation \"{}\"",
                        self.table.name
                    ),
                )
            }
            err => err.into(),
        }
    }
}
