//! One client connection: the handlers pgwire calls for each of its messages, and its state — the
//! SQL session (opened once authentication succeeds), the cancel flag, and a COPY FROM STDIN in
//! progress. Prepared statements and portals of the extended protocol are kept by pgwire's
//! portal store, as [`Statement`]s.
//!
//! Invariant: a connection's messages are handled one at a time, in order, so its session, its
//! COPY and its statements are never used by two tasks at once.

use std::os::fd::RawFd;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use async_trait::async_trait;
use pgwire::api::auth::AuthDriver;
use pgwire::api::portal::Format;
use pgwire::api::results::FieldInfo;
use pgwire::api::stmt::QueryParser;
use pgwire::api::{ClientInfo, Type};
use pgwire::error::PgWireResult;
use pgwire::messages::response::TransactionStatus as WireStatus;
use pgwire::messages::startup::SecretKey;
use steady_sql::execution::activity::Peer;
use steady_sql::execution::settings::Settings;
use steady_sql::{Prepared, Session, TransactionStatus};

use crate::cancel::CancelFlag;
use crate::copy::command::{self, CopyCommand};
use crate::copy::load::CopyIn;
use crate::error::{fatal, user_error};
use crate::server::Shared;
use crate::session::SessionHandle;
use crate::startup::Parameters;
use crate::values::{declared_type, fields, wire_type};

/// A statement of the extended protocol, as Parse left it.
#[derive(Debug, Clone)]
pub enum Statement {
    Sql(Arc<Prepared>),
    Copy(Arc<CopyCommand>),
}

/// The session slot, filled at startup and shared with the [`Parser`].
type SessionSlot = Arc<OnceLock<SessionHandle>>;

fn session_in(slot: &SessionSlot) -> PgWireResult<&SessionHandle> {
    slot.get()
        .ok_or_else(|| fatal("08P01", "a query arrived before authentication finished"))
}

/// A connection's state and handlers.
pub struct Connection {
    pub(crate) shared: Arc<Shared>,
    pub(crate) driver: AuthDriver<Parameters>,
    pub(crate) cancel: Arc<CancelFlag>,
    /// The client's socket, watched for a hang-up while a statement runs.
    socket: RawFd,
    copy_in: Mutex<Option<CopyIn>>,
    session: SessionSlot,
    pub(crate) parser: Arc<Parser>,
    key: OnceLock<(i32, SecretKey)>,
}

impl Connection {
    /// A connection on `socket`, which stays open as long as the connection.
    pub fn new(shared: Arc<Shared>, socket: RawFd) -> Self {
        let session = SessionSlot::default();
        Connection {
            driver: AuthDriver::new(Parameters)
                .with_pid_secret_key_generator(Arc::clone(&shared.keys) as _),
            shared,
            cancel: Arc::default(),
            socket,
            copy_in: Mutex::default(),
            parser: Arc::new(Parser {
                session: Arc::clone(&session),
            }),
            session,
            key: OnceLock::new(),
        }
    }

    /// Opens the session of an authenticated client with its startup `settings`, named by its backend key's pid, and
    /// registers the key for cancels.
    pub(crate) fn open(&self, peer: &Peer, settings: Settings, pid: i32, secret: SecretKey) {
        let session = self.shared.db.connect_with(peer, Some(pid), settings);
        self.cancel.attach(session.cancel_handle());
        let _ = self
            .session
            .set(SessionHandle::new(session, &self.shared.live));
        self.shared.cancels.register(pid, &secret, &self.cancel);
        let _ = self.key.set((pid, secret));
    }

    /// Why the connection must end between statements, if it must: its session has been idle in
    /// a transaction block for too long, or `pg_terminate_backend` ended it.
    pub(crate) fn must_end(&self) -> Option<&'static str> {
        let session = self.session.get()?;
        if session.terminated() {
            Some("terminating connection due to administrator command")
        } else if session.idle_in_transaction_expired() {
            Some("terminating connection due to idle-in-transaction timeout")
        } else {
            None
        }
    }

    pub(crate) fn session(&self) -> PgWireResult<&SessionHandle> {
        session_in(&self.session)
    }

    /// Runs `f` on the session, canceled if the client hangs up meanwhile, then reports the
    /// session's transaction status to the client (the next ReadyForQuery carries it).
    pub(crate) async fn run<C, T, F>(&self, client: &mut C, f: F) -> PgWireResult<T>
    where
        C: ClientInfo + Send,
        F: FnOnce(&mut Session) -> T,
    {
        let session = self.session()?;
        let terminated =
            || self.shared.shutting_down.load(Ordering::SeqCst) || session.terminated();
        if terminated() {
            return Err(terminating());
        }
        let watching = self
            .shared
            .hangups
            .watch(self.socket, session.cancel_handle());
        let (value, status) = session.run(move |session| {
            let value = f(session);
            (value, session.transaction_status())
        })?;
        drop(watching);
        if terminated() {
            return Err(terminating());
        }
        client.set_transaction_status(match status {
            TransactionStatus::Idle => WireStatus::Idle,
            TransactionStatus::InBlock => WireStatus::Transaction,
            TransactionStatus::Failed => WireStatus::Error,
        });
        Ok(value)
    }

    /// Queues data on the COPY FROM in progress; true when it is time to load it.
    pub(crate) fn queue_copy_data(&self, data: &[u8]) -> bool {
        self.copy_slot()
            .as_mut()
            .is_some_and(|copy| copy.queue(data))
    }

    /// Takes the COPY FROM in progress, if any.
    pub(crate) fn take_copy(&self) -> Option<CopyIn> {
        self.copy_slot().take()
    }

    pub(crate) fn put_copy(&self, copy: CopyIn) {
        *self.copy_slot() = Some(copy);
    }

    fn copy_slot(&self) -> std::sync::MutexGuard<'_, Option<CopyIn>> {
        self.copy_in.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        if let Some(session) = self.session.get() {
            session.close();
        }
        if let Some((pid, secret)) = self.key.get() {
            self.shared.cancels.unregister(*pid, secret);
        }
    }
}

/// The FATAL error that ends a connection on shutdown or `pg_terminate_backend`.
fn terminating() -> pgwire::error::PgWireError {
    fatal(
        "57P01",
        "terminating connection due to administrator command",
    )
}

/// Turns Parse messages into [`Statement`]s and describes them.
pub struct Parser {
    session: SessionSlot,
}

#[async_trait]
impl QueryParser for Parser {
    type Statement = Statement;

    async fn parse_sql<C>(
        &self,
        _client: &C,
        sql: &str,
        types: &[Option<Type>],
    ) -> PgWireResult<Option<Statement>>
    where
        C: ClientInfo + Unpin + Send + Sync,
    {
        if command::is_blank(sql) {
            return Ok(None);
        }
        if let Some(copy) = command::parse(sql) {
            let copy = copy.map_err(|err| user_error(&err))?;
            return Ok(Some(Statement::Copy(Arc::new(copy))));
        }
        let declared: Vec<_> = types.iter().map(|t| declared_type(t.as_ref())).collect();
        let sql = sql.to_owned();
        let prepared = session_in(&self.session)?
            .run(move |session| session.prepare(&sql, &declared))?
            .map_err(|err| user_error(&err))?;
        Ok(Some(Statement::Sql(Arc::new(prepared))))
    }

    fn get_parameter_types(&self, statement: &Statement) -> PgWireResult<Vec<Type>> {
        Ok(match statement {
            Statement::Sql(prepared) => prepared
                .params
                .iter()
                .map(|ty| wire_type(ty.as_ref()))
                .collect(),
            Statement::Copy(_) => Vec::new(),
        })
    }

    fn get_result_schema(
        &self,
        statement: &Statement,
        format: Option<&Format>,
    ) -> PgWireResult<Vec<FieldInfo>> {
        Ok(match statement {
            Statement::Sql(prepared) => {
                fields(&prepared.columns, format.unwrap_or(&Format::UnifiedText))
            }
            Statement::Copy(_) => Vec::new(),
        })
    }
}
