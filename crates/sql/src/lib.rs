//! steady-sql: the SQL layer (see docs/ARCHITECTURE.md) — text to results over the engine.
//!
//! A statement flows [`parse`] → [`bind`] (names, types; [`access`] picks index paths) →
//! [`plan`] → [`exec`] (with [`expr`], [`ops`], [`functions`], [`aggregate`]), or to [`dml`]
//! (with [`constraints`]), [`ddl`] and [`explain`]. [`session`] holds a client's transaction
//! block, [`settings`] and prepared statements, and [`cancel`] stops its running statement;
//! [`system`] serves the system views; [`stats`] keeps ANALYZE's statistics; [`types`] maps SQL
//! names and type names.

pub mod access;
pub mod aggregate;
pub mod bind;
mod bind_expr;
pub mod cancel;
pub mod constraints;
pub mod ddl;
pub mod dml;
pub mod error;
pub mod exec;
pub mod explain;
pub mod expr;
pub mod functions;
pub mod ops;
pub mod parse;
pub mod plan;
pub mod session;
pub mod settings;
pub mod stats;
pub mod system;
pub mod types;

pub use error::SqlError;
pub use session::{Database, Prepared, QueryResult, Session, TransactionStatus};
