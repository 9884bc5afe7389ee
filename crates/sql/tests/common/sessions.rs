//! Statement helpers for tests that drive sessions directly: a database on a fresh directory, and
//! the one result of a statement (as it came, or unwrapped). Included with `#[path]` by the tests
//! that use all of it.

use std::sync::Arc;

use steady_sql::{Database, QueryResult, Session, SqlError};

/// A database on a fresh directory with a pool of `pool_pages` pages.
pub fn open(pool_pages: usize) -> (tempfile::TempDir, Arc<Database>) {
    let dir = tempfile::tempdir().unwrap();
    let db = super::common::open_database(dir.path(), &super::common::config(pool_pages));
    (dir, db)
}

pub fn run(session: &mut Session, sql: &str) -> Result<QueryResult, SqlError> {
    session.execute(sql).pop().expect("a statement")
}

pub fn ok(session: &mut Session, sql: &str) -> QueryResult {
    run(session, sql).unwrap_or_else(|err| panic!("{sql}: {err}"))
}
