//! A connection's SQL session, driven from async code and run inline on the connection's thread.
//!
//! The engine is synchronous, and every connection has an OS thread of its own (see
//! [`crate::server`]), so a call into a [`Session`] simply runs where the message was read: a slow
//! statement blocks its own connection and no other. A connection handles its messages one at a
//! time, so the session's mutex is never contended; it is shared only with the idle-in-transaction
//! watchdog's view of the session's activity.
//!
//! Invariant: a session counts as live in [`LiveSessions`] until it is dropped, so that a shutdown
//! can wait for every session (and the engine handles its transactions hold) to be gone before the
//! engine closes.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use pgwire::error::PgWireResult;
use steady_sql::execution::cancel::CancelHandle;
use steady_sql::{Session, TransactionStatus};
use tokio::sync::watch;

use crate::error::fatal;

/// The number of sessions alive in a server.
pub struct LiveSessions {
    count: watch::Sender<usize>,
}

impl Default for LiveSessions {
    fn default() -> Self {
        LiveSessions {
            count: watch::Sender::new(0),
        }
    }
}

impl LiveSessions {
    /// Waits until every session has been dropped.
    pub async fn all_closed(&self) {
        let mut count = self.count.subscribe();
        // The sender lives in `self`, so the channel cannot close while we wait.
        let _ = count.wait_for(|n| *n == 0).await;
    }

    pub fn current(&self) -> usize {
        *self.count.borrow()
    }

    fn enter(&self) -> LiveGuard {
        self.count.send_modify(|n| *n += 1);
        LiveGuard {
            count: self.count.clone(),
        }
    }
}

/// Counts one session as live until dropped.
struct LiveGuard {
    count: watch::Sender<usize>,
}

impl Drop for LiveGuard {
    fn drop(&mut self) {
        self.count.send_modify(|n| *n -= 1);
    }
}

/// A session and its place in the live count; fields drop in order, the session first.
struct Counted {
    session: Session,
    _live: LiveGuard,
}

/// What the idle-in-transaction watchdog needs to know about a session between statements.
#[derive(Debug, Clone, Copy)]
struct Activity {
    running: bool,
    since: Instant,
    status: TransactionStatus,
    idle_timeout: Option<Duration>,
}

/// A connection's session and its activity as the idle-in-transaction watchdog sees it; empty once
/// closed.
#[derive(Clone)]
pub struct SessionHandle {
    inner: Arc<Mutex<Option<Counted>>>,
    activity: Arc<Mutex<Activity>>,
    cancel: CancelHandle,
    record: Arc<steady_sql::execution::activity::Activity>,
}

impl SessionHandle {
    pub fn new(session: Session, live: &LiveSessions) -> Self {
        SessionHandle {
            cancel: session.cancel_handle(),
            record: Arc::clone(session.activity()),
            inner: Arc::new(Mutex::new(Some(Counted {
                session,
                _live: live.enter(),
            }))),
            activity: Arc::new(Mutex::new(Activity {
                running: false,
                since: Instant::now(),
                status: TransactionStatus::Idle,
                idle_timeout: None,
            })),
        }
    }

    /// Whether the session has sat in an open transaction block, with no statement running, for
    /// longer than its `idle_in_transaction_session_timeout`.
    pub fn idle_in_transaction_expired(&self) -> bool {
        let activity = *self.activity.lock().unwrap_or_else(PoisonError::into_inner);
        !activity.running
            && activity.status != TransactionStatus::Idle
            && activity
                .idle_timeout
                .is_some_and(|timeout| activity.since.elapsed() > timeout)
    }

    /// Whether `pg_terminate_backend` ended the session.
    pub fn terminated(&self) -> bool {
        self.record.terminated()
    }

    /// The handle that stops the session's running statement.
    pub fn cancel_handle(&self) -> CancelHandle {
        self.cancel.clone()
    }

    fn record(&self, update: impl FnOnce(&mut Activity)) {
        update(&mut self.activity.lock().unwrap_or_else(PoisonError::into_inner));
    }

    /// Drops the session, rolling back an open transaction.
    pub fn close(&self) {
        drop(
            self.inner
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take(),
        );
    }

    /// Runs `f` on the session, on this connection's thread, and returns its result. A panic in
    /// `f` ends the connection (FATAL): the session may be half-way through a change, so it is
    /// dropped (its transaction rolls back).
    pub fn run<T, F>(&self, f: F) -> PgWireResult<T>
    where
        F: FnOnce(&mut Session) -> T,
    {
        self.record(|a| a.running = true);
        let mut counted = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        let session = &mut counted
            .as_mut()
            .ok_or_else(|| fatal("57P01", "terminating connection: the session is closed"))?
            .session;
        let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(session)));
        let Ok(value) = result else {
            counted.take();
            return Err(fatal("XX000", "internal error running a statement"));
        };
        let activity = Activity {
            running: false,
            since: Instant::now(),
            status: session.transaction_status(),
            idle_timeout: session
                .settings()
                .timeout("idle_in_transaction_session_timeout"),
        };
        drop(counted);
        self.record(|a| *a = activity);
        Ok(value)
    }
}
