//! The listener: accepts connections, serves each on a thread of its own, and shuts down cleanly.
//!
//! # One thread per connection
//!
//! The engine is synchronous, so a statement runs on the thread that read it from the socket: each
//! connection gets an OS thread with a current-thread tokio runtime that drives pgwire's protocol
//! state machine and calls into its `Session` inline. A message goes socket → parse → execute →
//! encode → socket without a hand-off between threads, as in PostgreSQL's process per connection,
//! and a plain connection's socket is read and written with blocking calls
//! ([`crate::socket`]): one `recv` and one `send` per statement, no `epoll_wait`.
//! (The first design ran statements on tokio's blocking pool from a multi-thread runtime: two
//! thread hand-offs per statement, which profiles of pgbench -S showed as about half of all CPU
//! in futex waits and wake-ups.) A slow statement or a lock wait blocks only its own connection.
//!
//! Shutdown: once the `shutdown` future completes the listener closes, no new statement starts
//! (57P01), every running statement is canceled (57P01, as PostgreSQL's fast shutdown) and every
//! connection thread is told to stop; each drops its connection (a client in the middle of a
//! transaction sees its connection drop, and the transaction rolls back when its session is
//! dropped) and exits. [`Server::run`] returns once every connection thread has ended, so the
//! engine then holds the only handles to itself and can be closed — or, should some statement not
//! stop within [`SHUTDOWN_GRACE`], with [`ServerError::ShutdownTimeout`]: the process must then
//! exit without closing the engine, and the next start recovers from the redo log, which holds
//! every acknowledged commit.

use std::future::Future;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use bytes::BytesMut;
use futures::{FutureExt, StreamExt};
use pgwire::api::auth::sasl::scram::ScramAuth;
use pgwire::api::RandomPidSecretKeyGenerator;
use pgwire::api::{ClientInfo, PgWireConnectionState};
use pgwire::error::PgWireError;
use pgwire::messages::PgWireFrontendMessage;
use pgwire::tokio::server::{
    negotiate_tls, process_error, process_message, MaybeTls, PgWireMessageServerCodec,
};
use steady_sql::execution::cancel::CancelReason;
use steady_sql::Database;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::time::Sleep;
use tokio_util::codec::FramedParts;

use crate::cancel::CancelRegistry;
use crate::connection::{Connection, Statement};
use crate::error::{fatal, ServerError};
use crate::hangup::HangupWatch;
use crate::session::LiveSessions;
use crate::socket::ConnectionSocket;
use crate::startup::scram;

/// How often a connection checks whether it must end between statements (idle in a transaction
/// for too long, or terminated).
const IDLE_CHECK: Duration = Duration::from_millis(200);

/// How long a shutdown waits for running statements to stop once canceled.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// How long a client may take to start up and authenticate (pgwire's own limit).
const STARTUP_TIMEOUT: Duration = Duration::from_secs(60);

/// How long accepting pauses after an error (e.g. out of file descriptors).
const ACCEPT_BACKOFF: Duration = Duration::from_millis(100);

/// How to serve.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// The address to listen on (`host:port`).
    pub listen: String,
    /// When set, every client authenticates with SCRAM-SHA-256 against it; when not, only
    /// loopback clients may connect, without a password.
    pub password: Option<String>,
    /// When set, clients that ask for SSL get TLS with this certificate and key.
    pub tls: Option<crate::tls::TlsFiles>,
}

/// What every connection of a server shares.
pub struct Shared {
    pub db: Arc<Database>,
    pub scram: Option<ScramAuth>,
    pub cancels: Arc<CancelRegistry>,
    pub keys: Arc<RandomPidSecretKeyGenerator>,
    pub live: LiveSessions,
    pub hangups: HangupWatch,
    pub tls: Option<tokio_rustls::TlsAcceptor>,
    /// Set when the server shuts down: no statement starts after it.
    pub shutting_down: AtomicBool,
}

/// A PostgreSQL-protocol server over one database.
pub struct Server {
    listener: TcpListener,
    shared: Arc<Shared>,
}

impl Server {
    /// Listens on `config.listen`.
    pub async fn bind(db: Arc<Database>, config: &ServerConfig) -> Result<Server, ServerError> {
        let listener =
            TcpListener::bind(&config.listen)
                .await
                .map_err(|source| ServerError::Bind {
                    addr: config.listen.clone(),
                    source,
                })?;
        let shared = Shared {
            scram: config.password.as_deref().map(|p| scram(p, &db)),
            db,
            cancels: Arc::default(),
            keys: Arc::default(),
            live: LiveSessions::default(),
            hangups: HangupWatch::start().map_err(ServerError::HangupWatch)?,
            tls: config.tls.as_ref().map(crate::tls::acceptor).transpose()?,
            shutting_down: AtomicBool::new(false),
        };
        Ok(Server {
            listener,
            shared: Arc::new(shared),
        })
    }

    /// The address the server listens on (with the port chosen, if 0 was asked for).
    pub fn local_addr(&self) -> Result<SocketAddr, ServerError> {
        self.listener.local_addr().map_err(ServerError::LocalAddr)
    }

    /// Serves connections until `shutdown` completes, then stops them all and waits for every
    /// connection thread to end (at most [`SHUTDOWN_GRACE`]).
    pub async fn run(self, shutdown: impl Future<Output = ()>) -> Result<(), ServerError> {
        let (stop, stopped) = watch::channel(false);
        let mut threads: Vec<JoinHandle<()>> = Vec::new();
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                () = &mut shutdown => break,
                accepted = self.listener.accept() => match accepted {
                    Ok((stream, _)) => {
                        threads.retain(|thread| !thread.is_finished());
                        match spawn_connection(stream, Arc::clone(&self.shared), stopped.clone()) {
                            Ok(thread) => threads.push(thread),
                            Err(err) => tracing::error!("starting a connection thread failed: {err}"),
                        }
                    }
                    Err(err) => {
                        tracing::error!("accepting a connection failed: {err}");
                        tokio::time::sleep(ACCEPT_BACKOFF).await;
                    }
                },
            }
        }
        drop(self.listener);
        let open = self.shared.live.current();
        if open > 0 {
            tracing::info!("closing {open} session(s)");
        }
        self.shared.shutting_down.store(true, Ordering::SeqCst);
        let _ = stop.send(true);
        self.shared.cancels.cancel_all(CancelReason::Terminate);
        let joined = tokio::task::spawn_blocking(move || {
            for thread in threads {
                let _ = thread.join();
            }
        });
        let ended = async {
            let _ = joined.await;
            self.shared.live.all_closed().await;
        };
        tokio::time::timeout(SHUTDOWN_GRACE, ended)
            .await
            .map_err(|_| ServerError::ShutdownTimeout {
                sessions: self.shared.live.current(),
            })
    }
}

/// Starts the thread that serves one accepted connection until the client leaves or `stopped`
/// turns true.
fn spawn_connection(
    stream: TcpStream,
    shared: Arc<Shared>,
    mut stopped: watch::Receiver<bool>,
) -> std::io::Result<JoinHandle<()>> {
    let stream = stream.into_std()?;
    std::thread::Builder::new()
        .name("steady-conn".into())
        .spawn(move || {
            let runtime = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(runtime) => runtime,
                Err(err) => {
                    tracing::error!("starting a connection's runtime failed: {err}");
                    return;
                }
            };
            runtime.block_on(async move {
                let stream = match TcpStream::from_std(stream) {
                    Ok(stream) => stream,
                    Err(err) => {
                        tracing::error!("registering a connection failed: {err}");
                        return;
                    }
                };
                tokio::select! {
                    () = serve(stream, shared) => {}
                    _ = stopped.wait_for(|stop| *stop) => {}
                }
            });
        })
}

/// Serves one connection until the client leaves, until it has been idle in a transaction block
/// for longer than its `idle_in_transaction_session_timeout`, or until `pg_terminate_backend`
/// ends it (then the connection is closed and its transaction rolled back, as PostgreSQL does).
async fn serve(stream: TcpStream, shared: Arc<Shared>) {
    let _ = stream.set_nodelay(true);
    let tls = shared.tls.clone();
    let connection = Arc::new(Connection::new(shared, stream.as_raw_fd()));
    tokio::select! {
        result = protocol(stream, tls, Arc::clone(&connection)) => {
            if let Err(err) = result {
                if err.kind() != std::io::ErrorKind::ConnectionReset {
                    tracing::warn!("connection ended with an error: {err}");
                }
            }
        }
        reason = must_end(&connection) => tracing::info!("{reason}"),
    }
}

/// A connection's messages framed by pgwire's codec over the socket `S`.
type Framed<S> = tokio_util::codec::Framed<S, PgWireMessageServerCodec<Statement>>;

/// Runs the protocol on one connection, as pgwire's `process_socket` does, except that a plain
/// (not TLS) connection is read and written with blocking calls ([`ConnectionSocket`]).
async fn protocol(
    stream: TcpStream,
    tls: Option<tokio_rustls::TlsAcceptor>,
    connection: Arc<Connection>,
) -> std::io::Result<()> {
    let startup_timeout = tokio::time::sleep(STARTUP_TIMEOUT);
    tokio::pin!(startup_timeout);
    let negotiated = tokio::select! {
        () = &mut startup_timeout => return Ok(()),
        negotiated = negotiate_tls(stream, tls) => negotiated?,
    };
    // A client that opened with TLS while the server has none: nothing to serve.
    let Some(socket) = negotiated else {
        return Ok(());
    };
    let parts = socket.into_parts();
    match parts.io {
        MaybeTls::Plain(plain) => {
            let io = ConnectionSocket::new(plain.into_std()?)?;
            let mut socket = reframed(io, parts.codec, parts.read_buf, parts.write_buf);
            messages(&mut socket, startup_timeout, &connection).await
        }
        io => {
            let mut socket = reframed(io, parts.codec, parts.read_buf, parts.write_buf);
            messages(&mut socket, startup_timeout, &connection).await
        }
    }
}

/// The connection's next message: None at the end of the stream, an error (FATAL, 08P01) for one
/// that cannot be decoded. pgwire 0.42's decoders read a message's fields from the whole read
/// buffer rather than from the message's declared length, and panic (in `bytes`) when a field
/// runs past what has been received: a malformed Parse or Bind would end the connection's thread
/// without a word. The panic is caught here and the client told why its connection ends.
async fn next_message<S>(
    socket: &mut Framed<S>,
) -> Option<Result<PgWireFrontendMessage, PgWireError>>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + Sync + 'static,
{
    match AssertUnwindSafe(socket.next()).catch_unwind().await {
        Ok(message) => message,
        Err(_) => Some(Err(fatal("08P01", "invalid frontend message format"))),
    }
}

/// How many bytes of queued messages a connection holds before it writes them out in the middle of
/// a result. tokio-util's default, 8 KiB, split a 100-row sysbench range (≈ 13 KiB) into two sends,
/// and the client woke for the first only to wait for the second; 64 KiB sends most results whole
/// while a large one still streams in bounded pieces.
const WRITE_BATCH_BYTES: usize = 64 * 1024;

/// A framed socket over `io`, keeping what the codec had buffered.
fn reframed<S>(
    io: S,
    codec: PgWireMessageServerCodec<Statement>,
    read_buf: BytesMut,
    write_buf: BytesMut,
) -> Framed<S> {
    let mut parts = FramedParts::new(io, codec);
    parts.read_buf = read_buf;
    parts.write_buf = write_buf;
    let mut framed = Framed::from_parts(parts);
    framed.set_backpressure_boundary(WRITE_BATCH_BYTES);
    framed
}

/// Handles the connection's messages one at a time until the client leaves (Terminate or end of
/// stream), a FATAL error ends the session, or the startup takes longer than its timeout.
async fn messages<S>(
    socket: &mut Framed<S>,
    mut startup_timeout: Pin<&mut Sleep>,
    connection: &Arc<Connection>,
) -> std::io::Result<()>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + Sync + 'static,
{
    loop {
        let starting = matches!(
            socket.state(),
            PgWireConnectionState::AwaitingStartup
                | PgWireConnectionState::AuthenticationInProgress
        );
        let message = if starting {
            tokio::select! {
                () = &mut startup_timeout => None,
                message = next_message(socket) => message,
            }
        } else {
            next_message(socket).await
        };
        let message = match message {
            None => return Ok(()),
            Some(Ok(message)) => message,
            Some(Err(err)) => return process_error(socket, err, false).await,
        };
        // A client that sends Terminate waits for the server to close the socket (asyncpg).
        if matches!(message, PgWireFrontendMessage::Terminate(_)) {
            return Ok(());
        }
        let in_extended_query = match socket.state() {
            PgWireConnectionState::CopyInProgress(extended) => extended,
            _ => message.is_extended_query(),
        };
        let cancel_request = matches!(message, PgWireFrontendMessage::CancelRequest(_));
        let handled = process_message(
            message,
            socket,
            Arc::clone(connection),
            Arc::clone(connection),
            Arc::clone(connection),
            Arc::clone(connection),
            Arc::clone(&connection.shared.cancels),
        )
        .await;
        if let Err(err) = handled {
            let fatal = err.is_fatal();
            process_error(socket, err, in_extended_query).await?;
            if fatal {
                return Ok(());
            }
        }
        // A cancel request comes on a connection of its own, which then ends.
        if cancel_request {
            return Ok(());
        }
    }
}

/// Completes once the connection must end between statements, with the reason.
async fn must_end(connection: &Connection) -> &'static str {
    loop {
        tokio::time::sleep(IDLE_CHECK).await;
        if let Some(reason) = connection.must_end() {
            return reason;
        }
    }
}
