//! Foreign-key checks that wait for the end of the statement or of the transaction, and the
//! transaction's `SET CONSTRAINTS` modes.
//!
//! A foreign key is checked where a row is written ([`crate::execution::constraints`]). When
//! that check fails it is not an error yet: as in PostgreSQL, a foreign key is checked when the
//! statement ends (so `INSERT INTO tree VALUES (2, 1), (1, NULL)` and `DELETE FROM tree` of a
//! self-referencing table pass), and a deferred one (`DEFERRABLE INITIALLY DEFERRED`, or made
//! DEFERRED by `SET CONSTRAINTS`) when the transaction commits or `SET CONSTRAINTS ... IMMEDIATE`
//! names it. The failed check is queued here with the error it would raise; run again then, it
//! looks at the rows as they are: a child row deleted or given another key since is not checked,
//! and under NO ACTION a parent key inserted again satisfies the rows that reference it.
//!
//! A check that passes where the row is written is never queued: the parent row it found stays
//! locked until the transaction ends, and a later delete of that parent is checked in its turn.
//! Only failed checks are queued, so a statement whose rows all find their parents pays nothing.
//!
//! Invariants: the queues and modes belong to one transaction — emptied when it commits or rolls
//! back; ROLLBACK TO SAVEPOINT drops what was queued and set after the savepoint ([`Mark`]); a
//! statement that fails leaves nothing in the statement queue. ADD FOREIGN KEY's check of the
//! existing rows never queues (it fails at once, deferrable or not, as PostgreSQL's does).

use steady_types::Value;

use crate::error::{Result, SqlError};
use crate::execution::constraints::{foreign_keys, parent_exists, references, ForeignKey};
use crate::execution::executor::ExecCtx;

/// A failed foreign-key check, to be made again later: while a row of `child` holds `key` in
/// the foreign key's columns, the parent must hold it too — under RESTRICT, no child row may
/// hold it at all (its parent row is gone or changed, and a new row with the key does not count).
/// The same check serves a child row that found no parent and a parent row whose key was
/// still referenced: either way the foreign key holds for `key` when it runs again if no child
/// row references it any more or the parent has it.
#[derive(Debug, Clone)]
pub struct PendingCheck {
    /// The table holding the foreign key (the child).
    pub child: String,
    /// The foreign key's name.
    pub constraint: String,
    pub key: Vec<Value>,
    pub restrict: bool,
    /// What the check raises if it fails again.
    pub error: SqlError,
}

/// The deferred checks and modes of the open transaction, and the checks of the running
/// statement.
#[derive(Debug, Default)]
pub struct ForeignKeyChecks {
    statement: Vec<PendingCheck>,
    deferred: Vec<PendingCheck>,
    /// `SET CONSTRAINTS` of the transaction, in order: the constraint named (None: ALL) and
    /// whether it was made DEFERRED. The last that names a constraint wins.
    modes: Vec<(Option<String>, bool)>,
}

/// How far the queues and modes had grown at a savepoint.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Mark {
    deferred: usize,
    modes: usize,
}

impl ForeignKeyChecks {
    /// Whether `fk`'s checks wait for the commit in this transaction.
    pub fn is_deferred(&self, fk: &ForeignKey) -> bool {
        if !fk.actions.deferral.deferrable() {
            return false;
        }
        self.modes
            .iter()
            .rev()
            .find(|(name, _)| name.as_ref().is_none_or(|n| *n == fk.name))
            .map_or(fk.actions.deferral.initially_deferred(), |(_, deferred)| {
                *deferred
            })
    }

    /// Queues a failed check of `fk` for the end of the statement, or for the commit when the
    /// constraint is deferred (a RESTRICT check never is, as in PostgreSQL).
    pub fn queue(&mut self, fk: &ForeignKey, check: PendingCheck) {
        if !check.restrict && self.is_deferred(fk) {
            self.deferred.push(check);
        } else {
            self.statement.push(check);
        }
    }

    /// Records `SET CONSTRAINTS {ALL | name} {DEFERRED | IMMEDIATE}`; returns the deferred checks
    /// the statement makes immediate, which the caller runs now.
    pub fn set_mode(&mut self, name: Option<String>, deferred: bool) -> Vec<PendingCheck> {
        let now = if deferred {
            Vec::new()
        } else {
            let (now, later) = std::mem::take(&mut self.deferred)
                .into_iter()
                .partition(|c| name.as_ref().is_none_or(|n| *n == c.constraint));
            self.deferred = later;
            now
        };
        self.modes.push((name, deferred));
        now
    }

    pub fn take_statement(&mut self) -> Vec<PendingCheck> {
        std::mem::take(&mut self.statement)
    }

    pub fn take_deferred(&mut self) -> Vec<PendingCheck> {
        std::mem::take(&mut self.deferred)
    }

    pub fn mark(&self) -> Mark {
        Mark {
            deferred: self.deferred.len(),
            modes: self.modes.len(),
        }
    }

    /// Forgets what was queued and set after `mark` (ROLLBACK TO SAVEPOINT).
    pub fn rollback_to(&mut self, mark: Mark) {
        self.deferred.truncate(mark.deferred);
        self.modes.truncate(mark.modes);
        self.statement.clear();
    }

    /// Forgets everything (the transaction ended, or the statement failed and takes its block
    /// with it).
    pub fn clear(&mut self) {
        *self = ForeignKeyChecks::default();
    }

    /// Forgets the running statement's checks (it failed).
    pub fn clear_statement(&mut self) {
        self.statement.clear();
    }
}

/// Makes each check again, in the order queued; the first that still fails is the error.
pub fn run_checks(ctx: &mut ExecCtx, checks: Vec<PendingCheck>) -> Result<()> {
    for check in checks {
        if !holds(ctx, &check)? {
            return Err(check.error);
        }
    }
    Ok(())
}

fn holds(ctx: &mut ExecCtx, check: &PendingCheck) -> Result<bool> {
    let engine = ctx.engine()?.clone();
    // A table or key dropped since leaves nothing to check.
    let Some(child) = engine.table(&check.child) else {
        return Ok(true);
    };
    let Some(fk) = foreign_keys(&child)
        .into_iter()
        .find(|fk| fk.name == check.constraint)
    else {
        return Ok(true);
    };
    let Some(parent) = engine.table(&fk.table) else {
        return Ok(true);
    };
    if !check.restrict && parent_exists(ctx, &parent, &fk.ref_columns, &check.key)? {
        return Ok(true);
    }
    Ok(!references(ctx, &child, &fk, &check.key)?)
}

/// `SET CONSTRAINTS` names a constraint that does not exist (42704) or one that cannot be
/// deferred (42809: not DEFERRABLE, or a unique or primary key, which SteadyDB always checks at
/// once), as PostgreSQL says.
pub fn check_named(engine: &steady_engine::engine::Engine, name: &str) -> Result<()> {
    let tables = engine.tables();
    let keys: Vec<ForeignKey> = tables
        .iter()
        .flat_map(|t| foreign_keys(t))
        .filter(|fk| fk.name == name)
        .collect();
    let unique = tables.iter().any(|t| {
        t.index(name).is_some_and(|i| i.unique)
            || (!t.primary_key.is_empty() && format!("{}_pkey", t.name) == name)
    });
    if keys.is_empty() && !unique {
        return Err(SqlError::new(
            "42704",
            format!("constraint \"{name}\" does not exist"),
        ));
    }
    if unique || keys.iter().any(|fk| !fk.actions.deferral.deferrable()) {
        return Err(SqlError::new(
            "42809",
            format!("constraint \"{name}\" is not deferrable"),
        ));
    }
    Ok(())
}
