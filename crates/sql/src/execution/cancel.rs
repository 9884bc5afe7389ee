//! Stopping a running statement from another thread: a client's cancel request or a statement
//! timeout. The request is a flag the executor checks between rows (and in key-ordered writes);
//! a statement waiting for a row lock is woken through the engine's lock manager at once.
//!
//! A request only affects the statement running when it arrives: each statement clears the flag
//! when it starts, as PostgreSQL ignores a cancel that finds the session idle.

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use steady_engine::engine::Engine;
use steady_engine::txn::TxnId;

use crate::error::{Result, SqlError};

/// Why a statement is being stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelReason {
    UserRequest,
    StatementTimeout,
}

const NONE: u8 = 0;
const USER: u8 = 1;
const TIMEOUT: u8 = 2;

#[derive(Default)]
struct CancelState {
    reason: AtomicU8,
    running: Mutex<Option<(Arc<Engine>, TxnId)>>,
    /// When the running statement times out (`statement_timeout`).
    deadline: Mutex<Option<Instant>>,
}

/// A handle on one session's running statement; cheap to clone and send to other threads.
#[derive(Clone, Default)]
pub struct CancelHandle {
    state: Arc<CancelState>,
}

impl std::fmt::Debug for CancelHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CancelHandle")
    }
}

impl CancelHandle {
    /// Asks the running statement to stop; it fails with 57014.
    pub fn cancel(&self, reason: CancelReason) {
        let code = match reason {
            CancelReason::UserRequest => USER,
            CancelReason::StatementTimeout => TIMEOUT,
        };
        self.state.reason.store(code, Ordering::Release);
        if let Some((engine, txn)) = self.state.running.lock().as_ref() {
            engine.locks().cancel(*txn);
        }
    }

    /// A statement starts (in transaction `txn`): earlier requests no longer apply.
    pub(crate) fn start(&self, engine: &Arc<Engine>, txn: TxnId, timeout: Option<Duration>) {
        self.state.reason.store(NONE, Ordering::Release);
        *self.state.running.lock() = Some((Arc::clone(engine), txn));
        *self.state.deadline.lock() = timeout.map(|t| Instant::now() + t);
    }

    /// The statement ended.
    pub(crate) fn finish(&self) {
        *self.state.running.lock() = None;
    }

    /// Fails with 57014 if the statement was asked to stop.
    pub fn check(&self) -> Result<()> {
        let timed_out = self
            .state
            .deadline
            .lock()
            .is_some_and(|d| Instant::now() >= d);
        if timed_out {
            self.state.reason.store(TIMEOUT, Ordering::Release);
        }
        match self.state.reason.load(Ordering::Acquire) {
            NONE => Ok(()),
            TIMEOUT => Err(SqlError::new(
                "57014",
                "canceling statement due to statement timeout",
            )),
            _ => Err(SqlError::new(
                "57014",
                "canceling statement due to user request",
            )),
        }
    }
}
