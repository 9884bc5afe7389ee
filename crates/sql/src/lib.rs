//! steady-sql: the SQL layer (see docs/ARCHITECTURE.md) — text to results over the engine.
//!
//! The crate is cut by stage; each folder uses only the folders listed before it (checked by
//! `tests/layering.rs`):
//!
//! 1. [`types`]: SQL names and type names, and the operations on values.
//! 2. [`parser`]: SQL text to statements.
//! 3. [`execution`]: the plan a statement becomes and the executor that runs it (expressions,
//!    functions, aggregates, constraint checks, a statement's cancel flag and the settings it
//!    reads).
//! 4. [`system`]: the system views and catalog functions, rows computed from the engine.
//! 5. [`planner`]: binding names and types into plans, access-path choice and ANALYZE statistics.
//! 6. [`session`]: a client's transaction block, prepared statements, and the dispatch of each
//!    statement (queries, writes, DDL, EXPLAIN).

pub mod error;
pub mod execution;
pub mod parser;
pub mod planner;
pub mod session;
pub mod system;
pub mod types;

/// The values the SQL layer works in (`steady-types`), re-exported for the layers above.
pub use steady_types as values;

pub use error::SqlError;
pub use session::{Database, Prepared, QueryResult, Session, TransactionStatus};
