//! Cancel requests: the registry from a connection's backend key (pid, secret) to its cancel flag.
//!
//! A cancel reaches the session's own [`CancelHandle`], which stops a running statement between
//! rows or while it waits for a row lock, and the server's flag, checked before each load of a
//! COPY FROM STDIN (every 256 KiB of data). A cancel that arrives while no query runs is ignored,
//! as in PostgreSQL. A query that notices the cancel fails with SQLSTATE 57014.
//!
//! ```text
//!   idle ──begin──▶ running ──cancel request──▶ canceled
//!    ▲                 │                           │
//!    └──────end────────┴───────────end─────────────┘
//! ```

use std::collections::HashMap;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, Weak};

use async_trait::async_trait;
use bytes::Bytes;
use pgwire::api::cancel::CancelHandler;
use pgwire::messages::cancel::CancelRequest;
use pgwire::messages::startup::SecretKey;
use steady_sql::execution::cancel::{CancelHandle, CancelReason};
use steady_sql::SqlError;

use crate::error::query_canceled;

const IDLE: u8 = 0;
const RUNNING: u8 = 1;
const CANCELED: u8 = 2;

/// Whether the query a connection is running has been asked to stop.
#[derive(Debug, Default)]
pub struct CancelFlag {
    state: AtomicU8,
    /// The session's handle, once the session is open.
    session: OnceLock<CancelHandle>,
}

impl CancelFlag {
    /// A query starts: an older cancel no longer counts.
    pub fn begin(&self) {
        self.state.store(RUNNING, Ordering::SeqCst);
    }

    /// The query has ended.
    pub fn end(&self) {
        self.state.store(IDLE, Ordering::SeqCst);
    }

    /// A check point: 57014 if the running query was canceled.
    pub fn check(&self) -> Result<(), SqlError> {
        match self.state.load(Ordering::SeqCst) {
            CANCELED => Err(query_canceled()),
            _ => Ok(()),
        }
    }

    /// Connects the flag to the session's own cancel handle.
    pub fn attach(&self, handle: CancelHandle) {
        let _ = self.session.set(handle);
    }

    fn cancel(&self, reason: CancelReason) {
        let _ = self
            .state
            .compare_exchange(RUNNING, CANCELED, Ordering::SeqCst, Ordering::SeqCst);
        if let Some(handle) = self.session.get() {
            handle.cancel(reason);
        }
    }
}

type BackendKey = (i32, Bytes);

/// Every connection's backend key and cancel flag.
#[derive(Debug, Default)]
pub struct CancelRegistry {
    flags: Mutex<HashMap<BackendKey, Weak<CancelFlag>>>,
}

impl CancelRegistry {
    pub fn register(&self, pid: i32, secret: &SecretKey, flag: &Arc<CancelFlag>) {
        self.flags()
            .insert((pid, secret.to_bytes()), Arc::downgrade(flag));
    }

    pub fn unregister(&self, pid: i32, secret: &SecretKey) {
        self.flags().remove(&(pid, secret.to_bytes()));
    }

    /// Stops every connection's running statement for `reason` (a shutdown).
    pub fn cancel_all(&self, reason: CancelReason) {
        let flags: Vec<Arc<CancelFlag>> = self.flags().values().filter_map(Weak::upgrade).collect();
        for flag in flags {
            flag.cancel(reason);
        }
    }

    fn flags(&self) -> std::sync::MutexGuard<'_, HashMap<BackendKey, Weak<CancelFlag>>> {
        self.flags.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[async_trait]
impl CancelHandler for CancelRegistry {
    async fn on_cancel_request(&self, request: CancelRequest) {
        let key = (request.pid, request.secret_key.to_bytes());
        let flag = self.flags().get(&key).and_then(Weak::upgrade);
        if let Some(flag) = flag {
            flag.cancel(CancelReason::UserRequest);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_cancel_stops_only_the_running_query() {
        let registry = CancelRegistry::default();
        let flag = Arc::new(CancelFlag::default());
        let key = SecretKey::I32(99);
        registry.register(7, &key, &flag);
        let request = || CancelRequest::new(7, SecretKey::I32(99));
        registry.on_cancel_request(request()).await;
        assert!(flag.check().is_ok(), "idle: ignored");
        flag.begin();
        registry.on_cancel_request(request()).await;
        assert_eq!(flag.check().unwrap_err().code, "57014");
        flag.begin();
        assert!(flag.check().is_ok(), "a new query starts clean");
        registry.unregister(7, &key);
        registry.on_cancel_request(request()).await;
        assert!(flag.check().is_ok());
    }
}
