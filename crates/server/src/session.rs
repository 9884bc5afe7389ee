//! A connection's SQL session, driven from async code but run on tokio's blocking pool.
//!
//! The engine is synchronous: every call into a [`Session`] runs in `spawn_blocking`, so a slow
//! statement occupies one pool thread and never a runtime worker, and the other connections' I/O
//! goes on. A connection handles its messages one at a time, so the session's mutex is never
//! contended; it only makes the session shareable with the blocking task.
//!
//! Invariant: a session counts as live in [`LiveSessions`] until it is dropped — including while a
//! blocking task still runs a statement for a connection that is already gone — so that a
//! shutdown can wait for every session (and the engine handles its transactions hold) to be gone
//! before the engine closes.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use pgwire::error::PgWireResult;
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

/// A connection's session, shareable with the blocking tasks that run its statements; empty once
/// closed.
#[derive(Clone)]
pub struct SessionHandle {
    inner: Arc<Mutex<Option<Counted>>>,
    activity: Arc<Mutex<Activity>>,
}

impl SessionHandle {
    pub fn new(session: Session, live: &LiveSessions) -> Self {
        SessionHandle {
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

    fn record(&self, update: impl FnOnce(&mut Activity)) {
        update(&mut self.activity.lock().unwrap_or_else(PoisonError::into_inner));
    }

    /// Drops the session — rolling back an open transaction, which may take a while — on the
    /// blocking pool, after the statement it may be running.
    pub fn close(&self) {
        let inner = Arc::clone(&self.inner);
        let close = move || drop(inner.lock().unwrap_or_else(PoisonError::into_inner).take());
        match tokio::runtime::Handle::try_current() {
            Ok(runtime) => drop(runtime.spawn_blocking(close)),
            Err(_) => close(),
        }
    }

    /// Runs `f` on the session in the blocking pool and returns its result. A panic in `f` ends
    /// the connection (FATAL): the session may be half-way through a change.
    pub async fn run<T, F>(&self, f: F) -> PgWireResult<T>
    where
        F: FnOnce(&mut Session) -> T + Send + 'static,
        T: Send + 'static,
    {
        let inner = Arc::clone(&self.inner);
        self.record(|a| a.running = true);
        let activity = Arc::clone(&self.activity);
        tokio::task::spawn_blocking(move || {
            let mut counted = inner.lock().unwrap_or_else(PoisonError::into_inner);
            let result = counted.as_mut().map(|counted| f(&mut counted.session));
            if let Some(counted) = counted.as_ref() {
                let session = &counted.session;
                let mut activity = activity.lock().unwrap_or_else(PoisonError::into_inner);
                *activity = Activity {
                    running: false,
                    since: Instant::now(),
                    status: session.transaction_status(),
                    idle_timeout: session
                        .settings()
                        .timeout("idle_in_transaction_session_timeout"),
                };
            }
            result
        })
        .await
        .map_err(|err| {
            fatal(
                "XX000",
                format!("internal error running a statement: {err}"),
            )
        })?
        .ok_or_else(|| fatal("57P01", "terminating connection: the session is closed"))
    }
}
