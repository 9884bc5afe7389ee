//! steady-server: the PostgreSQL wire protocol (v3) over a SteadyDB database, so that psql,
//! psycopg, pgbench and sysbench work unmodified (see docs/ARCHITECTURE.md).
//!
//! [`Server`] accepts connections ([`server`]); each is a [`connection::Connection`] whose
//! handlers pgwire calls per message: [`startup`] (trust on loopback or SCRAM-SHA-256),
//! [`query`] (simple and extended protocol), [`copy`] (COPY FROM STDIN / TO STDOUT) and
//! [`cancel`] (cancel requests); [`hangup`] cancels the statement of a client that disconnected; [`tls`] makes the TLS acceptor.
//! Each connection has a thread of its own and one
//! `steady_sql::Session`, run inline on that thread ([`session`]); [`values`] and [`binary`] put values on the wire and take
//! parameters off it; [`error`] maps SQL errors to ErrorResponse.

pub mod binary;
pub mod cancel;
pub mod connection;
pub mod copy;
pub mod error;
pub mod hangup;
pub mod query;
pub mod server;
pub mod session;
pub mod socket;
pub mod startup;
pub mod tls;
pub mod values;

pub use error::ServerError;
pub use server::{Server, ServerConfig};
