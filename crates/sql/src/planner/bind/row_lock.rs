//! The locking clauses of a query, `SELECT ... FOR UPDATE / FOR SHARE [OF t] [NOWAIT | SKIP
//! LOCKED]`, bound into a [`Plan::LockRows`] over the query's one table.
//!
//! As in PostgreSQL, several clauses on the table act as the strongest one, NOWAIT wins over SKIP
//! LOCKED, and the lock sits above the sort and below LIMIT: `ORDER BY ... LIMIT 1 FOR UPDATE
//! SKIP LOCKED` locks the one row it returns (a job queue's worker). What SteadyDB cannot lock is
//! refused (0A000), never run without its locks: a query over a join, a view, a subquery or a
//! function, or one with grouping, aggregates, DISTINCT, window functions or set operations
//! (PostgreSQL refuses the last four too).

use sqlparser::ast::{self, TableFactor};
use steady_engine::engine::row_lock::{RowLockMode, RowLockWait};

use super::{Binder, BoundQuery, Projection};
use crate::error::{Result, SqlError};
use crate::execution::expr::Expr;
use crate::execution::plan::{Plan, SortKey};
use crate::types::{normalize_ident, object_name};

/// A query's locking clauses, merged.
#[derive(Debug, Clone)]
pub(crate) struct RowLockClause {
    mode: RowLockMode,
    wait: RowLockWait,
    /// The relations named by `OF` (empty: every one in FROM).
    of: Vec<String>,
}

impl RowLockClause {
    /// The merged clauses of a query, if it has any.
    pub(crate) fn of_query(locks: &[ast::LockClause]) -> Option<Self> {
        let mut merged: Option<RowLockClause> = None;
        for clause in locks {
            let mode = match clause.lock_type {
                ast::LockType::Update => RowLockMode::Update,
                ast::LockType::Share => RowLockMode::Share,
            };
            let wait = match clause.nonblock {
                Some(ast::NonBlock::Nowait) => RowLockWait::NoWait,
                Some(ast::NonBlock::SkipLocked) => RowLockWait::SkipLocked,
                None => RowLockWait::Block,
            };
            let of = clause
                .of
                .iter()
                .map(|name| object_name(name).1)
                .collect::<Vec<_>>();
            merged = Some(match merged {
                None => RowLockClause { mode, wait, of },
                Some(before) => RowLockClause {
                    mode: before.mode.max(mode),
                    wait: stronger_wait(before.wait, wait),
                    of: if before.of.is_empty() || of.is_empty() {
                        Vec::new()
                    } else {
                        [before.of, of].concat()
                    },
                },
            });
        }
        merged
    }

    /// The clause's words in messages: `FOR UPDATE` or `FOR SHARE`.
    pub(crate) fn words(&self) -> &'static str {
        match self.mode {
            RowLockMode::Update => "FOR UPDATE",
            RowLockMode::Share => "FOR SHARE",
        }
    }

    /// 0A000 for a query shape the clause cannot be applied to.
    pub(crate) fn not_allowed_with(&self, what: &str) -> SqlError {
        SqlError::new(
            "0A000",
            format!("{} is not allowed with {what}", self.words()),
        )
    }
}

/// NOWAIT over SKIP LOCKED over waiting, as PostgreSQL merges them.
fn stronger_wait(a: RowLockWait, b: RowLockWait) -> RowLockWait {
    use RowLockWait::*;
    match (a, b) {
        (NoWait, _) | (_, NoWait) => NoWait,
        (SkipLocked, _) | (_, SkipLocked) => SkipLocked,
        _ => Block,
    }
}

impl Binder<'_> {
    /// Finishes a SELECT with a locking clause: its rows sorted, then locked one by one as LIMIT
    /// pulls them, then projected. `predicate` is the WHERE clause, checked again on each row's
    /// newest version.
    pub(super) fn finish_locking_select(
        &self,
        lock: RowLockClause,
        from: &[ast::TableWithJoins],
        (plan, predicate): (Plan, Option<Expr>),
        projection: Projection,
        order_keys: Vec<SortKey>,
    ) -> Result<BoundQuery> {
        let table = match (locked_table(&plan), from) {
            (Some(table), [only]) if only.joins.is_empty() => table.clone(),
            _ => {
                return Err(SqlError::unsupported(format!(
                    "{} over a join, a view, a subquery or a function",
                    lock.words()
                )))
            }
        };
        check_of(&lock, &from[0].relation)?;
        let mut plan = plan;
        if !order_keys.is_empty() {
            plan = Plan::Sort {
                input: Box::new(plan),
                keys: order_keys,
            };
        }
        let plan = Plan::LockRows {
            input: Box::new(plan),
            table,
            mode: lock.mode,
            wait: lock.wait,
            recheck: predicate,
        };
        Ok(BoundQuery {
            plan: Plan::Project {
                input: Box::new(plan),
                exprs: projection.exprs,
            },
            columns: projection.columns,
            required: Vec::new(),
        })
    }
}

/// The user table a plan scans, if it scans exactly one (filtered or not).
fn locked_table(plan: &Plan) -> Option<&std::sync::Arc<steady_engine::catalog::TableDef>> {
    match plan {
        Plan::Scan { table, .. } => Some(table),
        Plan::Filter { input, .. } => locked_table(input),
        _ => None,
    }
}

/// Every relation `OF` names is the one in FROM (by its alias, or its name without one).
fn check_of(lock: &RowLockClause, relation: &TableFactor) -> Result<()> {
    let TableFactor::Table { name, alias, .. } = relation else {
        return Ok(());
    };
    let known = match alias {
        Some(alias) => normalize_ident(&alias.name),
        None => object_name(name).1,
    };
    match lock.of.iter().find(|named| **named != known) {
        Some(named) => Err(SqlError::new(
            "42P01",
            format!(
                "relation \"{named}\" in {} clause not found in FROM clause",
                lock.words()
            ),
        )),
        None => Ok(()),
    }
}
