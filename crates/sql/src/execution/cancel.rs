//! Stopping a running statement from another thread: a client's cancel request, a statement
//! timeout, a client that hung up, or the server shutting down. The request is a flag the executor checks between rows (and in key-ordered writes);
//! a statement waiting for a row lock is woken through the engine's lock manager at once, and one
//! about to wait does not start to (`LockManager::interrupt`).
//!
//! A statement timeout is noticed by the executor's checks, and also by one process-wide watcher
//! thread ([`TimeoutWatch`], PostgreSQL's SIGALRM timer) that cancels a statement still running
//! at its deadline: a statement waiting for a lock checks nothing, and must be woken.
//!
//! A cancel request or a timeout only affects the query running when it arrives: each query
//! message clears them when it arrives, before `pg_stat_activity` shows it active, as PostgreSQL
//! ignores a cancel that finds the session idle. A hung-up client and a termination stay (PostgreSQL's `ProcDiePending`): they end
//! whatever statement runs next, so one that arrives between a statement's registration with the
//! hang-up watch and its start is not lost (the watch reports a hang-up once).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use steady_engine::engine::Engine;
use steady_engine::txn::TxnId;

use crate::error::{Result, SqlError};

/// Why a statement is being stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CancelReason {
    UserRequest,
    StatementTimeout,
    /// The client disconnected while the statement ran; nobody will read its result.
    ClientGone,
    /// The server is shutting down (or an administrator ended the session).
    Terminate,
}

impl CancelReason {
    const ALL: [CancelReason; 4] = [
        CancelReason::UserRequest,
        CancelReason::StatementTimeout,
        CancelReason::ClientGone,
        CancelReason::Terminate,
    ];

    /// The flag's value for this reason (0 is "none").
    fn code(self) -> u8 {
        self as u8 + 1
    }

    fn error(self) -> SqlError {
        match self {
            CancelReason::UserRequest => {
                SqlError::new("57014", "canceling statement due to user request")
            }
            CancelReason::StatementTimeout => {
                SqlError::new("57014", "canceling statement due to statement timeout")
            }
            CancelReason::ClientGone => SqlError::new("08006", "connection to client lost"),
            CancelReason::Terminate => SqlError::new(
                "57P01",
                "terminating connection due to administrator command",
            ),
        }
    }
}

const NONE: u8 = 0;

#[derive(Default)]
struct CancelState {
    reason: AtomicU8,
    running: Mutex<Option<(Arc<Engine>, TxnId)>>,
    /// The running statement's entry in the [`TimeoutWatch`]: its deadline (`statement_timeout`).
    watched: Mutex<Option<WatchKey>>,
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
    /// Asks the running statement to stop; it fails with the reason's error (57014 for a cancel
    /// or a timeout).
    pub fn cancel(&self, reason: CancelReason) {
        self.state.reason.store(reason.code(), Ordering::Release);
        if let Some((engine, txn)) = self.state.running.lock().as_ref() {
            engine.locks().interrupt(*txn);
        }
    }

    /// A query message arrives, before it shows as active in `pg_stat_activity`: earlier cancel
    /// requests and timeouts no longer apply; a hang-up or a termination still does. A cancel
    /// sent by someone who saw the query active therefore always reaches it, however long its
    /// parse and plan take before [`CancelHandle::start`].
    pub(crate) fn arm(&self) {
        let transient = [CancelReason::UserRequest, CancelReason::StatementTimeout];
        let _ = self
            .state
            .reason
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |code| {
                transient.iter().any(|r| r.code() == code).then_some(NONE)
            });
    }

    /// A statement of the armed query starts (in transaction `txn`): a lock wait can now be
    /// woken, and its timeout runs.
    pub(crate) fn start(&self, engine: &Arc<Engine>, txn: TxnId, timeout: Option<Duration>) {
        // A timeout is the statement's own: one that fired as the last statement ended is stale.
        let _ = self.state.reason.compare_exchange(
            CancelReason::StatementTimeout.code(),
            NONE,
            Ordering::AcqRel,
            Ordering::Acquire,
        );
        let mut running = self.state.running.lock();
        *running = Some((Arc::clone(engine), txn));
        if self.state.reason.load(Ordering::Acquire) != NONE {
            engine.locks().interrupt(txn);
        }
        drop(running);
        *self.state.watched.lock() = timeout
            .map(|t| TimeoutWatch::get().watch(Instant::now() + t, Arc::downgrade(&self.state)));
    }

    /// The statement ended. The lock manager holds an interrupt for it only if a reason was set
    /// (`cancel` sets one before it interrupts, under the same `running` lock), so a statement
    /// nobody stopped does not touch the lock manager's interrupts.
    pub(crate) fn finish(&self) {
        if let Some(key) = self.state.watched.lock().take() {
            TimeoutWatch::get().forget(key);
        }
        let mut running = self.state.running.lock();
        let Some((engine, txn)) = running.take() else {
            return;
        };
        if self.state.reason.load(Ordering::Acquire) != NONE {
            engine.locks().forget_interrupt(txn);
        }
    }

    /// The error a stopped statement ends with: a 57014 raised below (a lock wait or a build the
    /// lock manager interrupted) names the reason it was stopped for.
    pub(crate) fn explain(&self, err: SqlError) -> SqlError {
        if err.code != "57014" {
            return err;
        }
        match self.check() {
            Err(reason) => reason,
            Ok(()) => err,
        }
    }

    /// Fails with 57014 if the statement was asked to stop.
    pub fn check(&self) -> Result<()> {
        let timed_out = self
            .state
            .watched
            .lock()
            .is_some_and(|(deadline, _)| Instant::now() >= deadline);
        if timed_out {
            let _ = self.state.reason.compare_exchange(
                NONE,
                CancelReason::StatementTimeout.code(),
                Ordering::AcqRel,
                Ordering::Acquire,
            );
        }
        let code = self.state.reason.load(Ordering::Acquire);
        match CancelReason::ALL.into_iter().find(|r| r.code() == code) {
            None => Ok(()),
            Some(reason) => Err(reason.error()),
        }
    }
}

/// The running statements with a timeout, by deadline, and the thread that cancels each one
/// still running at its deadline (started by the first statement with a timeout). A statement
/// leaves the map when it ends, so the map holds at most one entry per session.
struct TimeoutWatch {
    due: Mutex<BTreeMap<WatchKey, Weak<CancelState>>>,
    next_seq: AtomicU64,
    earlier: Condvar,
}

/// A watched statement's deadline, made unique by a sequence number.
type WatchKey = (Instant, u64);

impl TimeoutWatch {
    fn get() -> &'static TimeoutWatch {
        static WATCH: OnceLock<TimeoutWatch> = OnceLock::new();
        WATCH.get_or_init(|| {
            std::thread::Builder::new()
                .name("steady-timeouts".into())
                .spawn(|| TimeoutWatch::get().run())
                .expect("spawn the statement timeout thread");
            TimeoutWatch {
                due: Mutex::new(BTreeMap::new()),
                next_seq: AtomicU64::new(0),
                earlier: Condvar::new(),
            }
        })
    }

    /// Watches the statement `state` runs until `deadline`; returns its key.
    fn watch(&self, deadline: Instant, state: Weak<CancelState>) -> WatchKey {
        let key = (deadline, self.next_seq.fetch_add(1, Ordering::Relaxed));
        let mut due = self.due.lock();
        due.insert(key, state);
        if due
            .first_key_value()
            .is_some_and(|(first, _)| *first == key)
        {
            self.earlier.notify_one();
        }
        key
    }

    fn forget(&self, key: WatchKey) {
        self.due.lock().remove(&key);
    }

    /// Cancels each watched statement at its deadline (it is still running: an ended one has
    /// left the map).
    fn run(&self) {
        let mut due = self.due.lock();
        loop {
            let now = Instant::now();
            match due.first_key_value() {
                None => self.earlier.wait(&mut due),
                Some((&(deadline, _), _)) if deadline > now => {
                    self.earlier.wait_for(&mut due, deadline - now);
                }
                Some(_) => {
                    let Some((_, state)) = due.pop_first() else {
                        continue;
                    };
                    if let Some(state) = state.upgrade() {
                        CancelHandle { state }.cancel(CancelReason::StatementTimeout);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_watch_cancels_at_the_deadline_and_forgets_an_ended_statement() {
        let watch = TimeoutWatch::get();
        let ended = Arc::new(CancelState::default());
        let far = Instant::now() + Duration::from_secs(3600);
        let key = watch.watch(far, Arc::downgrade(&ended));
        assert!(watch.due.lock().contains_key(&key));
        watch.forget(key);
        assert!(
            !watch.due.lock().contains_key(&key),
            "an ended statement leaves"
        );

        let running = Arc::new(CancelState::default());
        let key = watch.watch(Instant::now(), Arc::downgrade(&running));
        let handle = CancelHandle { state: running };
        let give_up = Instant::now() + Duration::from_secs(10);
        while handle.check().is_ok() {
            assert!(Instant::now() < give_up, "the watch never cancelled");
            std::thread::yield_now();
        }
        let err = handle.check().unwrap_err();
        assert_eq!(err.message, "canceling statement due to statement timeout");
        assert!(!watch.due.lock().contains_key(&key));
    }
}
