//! What every session of a database is doing: the rows of `pg_stat_activity`, and the way
//! `pg_cancel_backend` and `pg_terminate_backend` reach another session.
//!
//! Each session owns one [`Activity`], registered in its database's [`Activities`] under its pid
//! from its creation until it is dropped ([`Registered`]). The session writes its own record when a
//! statement starts and ends — one uncontended mutex each, as PostgreSQL's backend status array —
//! and a reader of `pg_stat_activity` copies every record.
//!
//! Invariants: a pid is in the registry exactly while its session lives, and the pids of live
//! sessions are distinct. Terminating a session cancels its running statement
//! ([`CancelReason::Terminate`]) and marks it; whoever drives the session (the wire server) ends
//! the connection once it sees the mark.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::execution::cancel::{CancelHandle, CancelReason};

/// Who opened a session, as its client announced itself.
#[derive(Debug, Clone, Default)]
pub struct Peer {
    pub user: String,
    pub application_name: String,
    /// The client's address; `None` for a session inside this process (the shell).
    pub address: Option<SocketAddr>,
}

/// A session's state, as `pg_stat_activity.state` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    Idle,
    Active,
    IdleInTransaction,
    IdleInTransactionAborted,
}

impl State {
    pub fn name(self) -> &'static str {
        match self {
            State::Idle => "idle",
            State::Active => "active",
            State::IdleInTransaction => "idle in transaction",
            State::IdleInTransactionAborted => "idle in transaction (aborted)",
        }
    }
}

/// What a session is doing now. Times are microseconds since 2000-01-01 (timestamp values).
#[derive(Debug, Clone)]
pub struct Doing {
    pub state: State,
    /// The last statement's text (the running one while active).
    pub query: Arc<str>,
    pub query_start: Option<i64>,
    pub xact_start: Option<i64>,
    pub state_change: i64,
    pub application_name: Arc<str>,
}

/// One session's record.
#[derive(Debug)]
pub struct Activity {
    pub pid: i32,
    pub user: String,
    pub address: Option<SocketAddr>,
    pub backend_start: i64,
    /// The engine transaction the session's latest statement ran in (0: none yet), so that
    /// `pg_locks` can name the session holding or awaiting a lock.
    transaction: std::sync::atomic::AtomicU64,
    cancel: CancelHandle,
    terminated: AtomicBool,
    doing: Mutex<Doing>,
}

impl Activity {
    /// A copy of what the session is doing now.
    pub fn doing(&self) -> Doing {
        self.doing.lock().clone()
    }

    /// The session's statement runs in engine transaction `txn`.
    pub(crate) fn in_transaction(&self, txn: u64) {
        self.transaction.store(txn, Ordering::Release);
    }

    /// The engine transaction of the session's latest statement (0: none yet).
    pub fn transaction(&self) -> u64 {
        self.transaction.load(Ordering::Acquire)
    }

    /// Whether the session has been told to end.
    pub fn terminated(&self) -> bool {
        self.terminated.load(Ordering::Acquire)
    }

    /// A statement starts at `now`, in a transaction that started at `xact_start`.
    pub(crate) fn statement_started(&self, query: Arc<str>, now: i64, xact_start: i64) {
        let mut doing = self.doing.lock();
        doing.state = State::Active;
        doing.query = query;
        doing.query_start = Some(now);
        doing.xact_start = Some(xact_start);
        doing.state_change = now;
    }

    /// The statement ended at `now`, leaving the session in `state`.
    pub(crate) fn statement_ended(&self, state: State, now: i64) {
        let mut doing = self.doing.lock();
        doing.state = state;
        doing.state_change = now;
        if state == State::Idle {
            doing.xact_start = None;
        }
    }

    pub(crate) fn set_application_name(&self, name: &str) {
        let mut doing = self.doing.lock();
        if *doing.application_name != *name {
            doing.application_name = name.into();
        }
    }
}

/// Every live session's record, by pid.
#[derive(Debug, Default)]
pub struct Activities {
    sessions: Mutex<BTreeMap<i32, Arc<Activity>>>,
}

impl Activities {
    /// Registers a new session's record; `pid` must not be a live session's.
    pub(crate) fn register(
        self: &Arc<Self>,
        pid: i32,
        peer: &Peer,
        cancel: CancelHandle,
        now: i64,
    ) -> Registered {
        let activity = Arc::new(Activity {
            pid,
            user: peer.user.clone(),
            address: peer.address,
            backend_start: now,
            transaction: Default::default(),
            cancel,
            terminated: AtomicBool::new(false),
            doing: Mutex::new(Doing {
                state: State::Idle,
                query: Arc::from(""),
                query_start: None,
                xact_start: None,
                state_change: now,
                application_name: peer.application_name.as_str().into(),
            }),
        });
        self.sessions.lock().insert(pid, Arc::clone(&activity));
        Registered {
            activities: Arc::clone(self),
            activity,
        }
    }

    /// Every live session's record, by pid.
    pub fn all(&self) -> Vec<Arc<Activity>> {
        self.sessions.lock().values().cloned().collect()
    }

    /// Cancels session `pid`'s running statement; false if there is no such session.
    pub fn cancel(&self, pid: i32) -> bool {
        self.find(pid)
            .inspect(|a| a.cancel.cancel(CancelReason::UserRequest))
            .is_some()
    }

    /// Ends session `pid` (its running statement is canceled); false if there is no such session.
    pub fn terminate(&self, pid: i32) -> bool {
        self.find(pid)
            .inspect(|a| {
                a.terminated.store(true, Ordering::Release);
                a.cancel.cancel(CancelReason::Terminate);
            })
            .is_some()
    }

    fn find(&self, pid: i32) -> Option<Arc<Activity>> {
        self.sessions.lock().get(&pid).cloned()
    }
}

/// A session's record, in the registry until dropped.
#[derive(Debug)]
pub struct Registered {
    activities: Arc<Activities>,
    activity: Arc<Activity>,
}

impl Registered {
    pub fn activity(&self) -> &Arc<Activity> {
        &self.activity
    }

    pub fn activities(&self) -> &Arc<Activities> {
        &self.activities
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.activities.sessions.lock().remove(&self.activity.pid);
    }
}
