//! Row locks a reader asks for: `SELECT ... FOR UPDATE` and `FOR SHARE`, waiting, `NOWAIT` or
//! `SKIP LOCKED`.
//!
//! **What it owns.** [`Transaction::lock_row_for`], on top of the writers' path
//! (`lock_current_in`): the row's lock in the lock manager (exclusive for UPDATE, shared for
//! SHARE), then a wait for a writer that holds the row implicitly (an insert without a row lock),
//! then the version an update would change (`row_to_change`: under snapshot isolation a row
//! changed since the snapshot fails with 40001, as PostgreSQL's "could not serialize access due
//! to concurrent update").
//!
//! **Invariants.** A lock taken is held to the end of the transaction, like every row lock. A
//! request that does not wait (`NOWAIT`, `SKIP LOCKED`) fails or skips without leaving any trace
//! in the lock manager. PostgreSQL's two weaker modes are not offered: `FOR NO KEY UPDATE` would
//! be `Update` here and `FOR KEY SHARE` `Share`, each blocking at least what PostgreSQL's does.

use super::*;
use crate::lock::LockError;

/// The strength of a reader's row lock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum RowLockMode {
    /// `FOR SHARE`: other readers may lock the row too; writers wait.
    Share,
    /// `FOR UPDATE`: the row is this transaction's, as if it were updating it.
    Update,
}

/// What a row lock does when another transaction holds the row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowLockWait {
    /// Waits (at most `lock_timeout`).
    Block,
    /// `NOWAIT`: fails at once with a lock timeout (55P03).
    NoWait,
    /// `SKIP LOCKED`: leaves the row out.
    SkipLocked,
}

/// What [`Transaction::lock_row_for`] found (`R`: the row's bytes, or its decoded values).
#[derive(Debug, PartialEq, Eq)]
pub enum RowLocked<R = Vec<u8>> {
    /// The row is locked; its newest version as an update would see it, None if it is gone.
    Row(Option<R>),
    /// Another transaction holds the row and the request skips locked rows.
    Skipped,
}

impl Transaction {
    /// Locks the row under `pk` for a reader (see the module doc).
    pub fn lock_row_for(
        &mut self,
        index: IndexId,
        pk: &[u8],
        mode: RowLockMode,
        wait: RowLockWait,
    ) -> Result<RowLocked> {
        let lock_mode = match mode {
            RowLockMode::Share => LockMode::Shared,
            RowLockMode::Update => LockMode::Exclusive,
        };
        let timeout = match wait {
            RowLockWait::Block => self.lock_timeout,
            RowLockWait::NoWait | RowLockWait::SkipLocked => Some(Duration::ZERO),
        };
        let (tree, current) = match self.lock_current_in(index, pk, lock_mode, timeout) {
            Err(EngineError::Lock(LockError::Timeout)) if wait == RowLockWait::SkipLocked => {
                return Ok(RowLocked::Skipped)
            }
            locked => locked?,
        };
        let row = self.row_to_change(index, pk, current.as_ref())?;
        if let (RowLockMode::Update, Some(current)) = (mode, current) {
            self.keep_locked(&tree, index, pk, current);
        }
        Ok(RowLocked::Row(row))
    }
}
