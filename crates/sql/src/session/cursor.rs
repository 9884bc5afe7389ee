//! Cursors: `DECLARE name [NO SCROLL] CURSOR [WITH HOLD] FOR query`, `FETCH`, `CLOSE` — what
//! psycopg's and Django's server-side cursors and `pg_dump --inserts` send.
//!
//! A cursor's query runs when the cursor is declared, so it reads the snapshot of that moment
//! (as PostgreSQL's does, whatever the block does afterwards), and its rows wait in the session
//! until FETCH takes them, forward only: `FETCH [FORWARD] n | NEXT | ALL`; a direction that
//! goes back or jumps is refused (0A000), as are BINARY cursors. A cursor ends with its
//! transaction block unless declared WITH HOLD (then it outlives the COMMIT, as PostgreSQL's);
//! a rollback also ends the WITH HOLD cursors the block declared. DECLARE without WITH HOLD
//! outside a block is 25P01, as in PostgreSQL.

use std::collections::VecDeque;

use sqlparser::ast::{CloseCursor, FetchDirection};

use super::*;
use crate::execution::executor::Row;

/// A declared cursor: the columns and the rows not fetched yet.
#[derive(Debug)]
pub(super) struct Cursor {
    columns: Vec<Column>,
    rows: VecDeque<Row>,
    hold: bool,
    /// Declared in the block now open (a rollback ends it even WITH HOLD).
    in_block: bool,
}

impl Session {
    pub(super) fn declare_cursor(
        &mut self,
        declares: &[ast::Declare],
        params: &[Value],
        types: Vec<Option<DataType>>,
    ) -> Result<QueryResult> {
        let [declare] = declares else {
            return Err(SqlError::syntax("DECLARE names one cursor"));
        };
        let (Some(ast::DeclareType::Cursor), Some(query), [name]) = (
            &declare.declare_type,
            &declare.for_query,
            declare.names.as_slice(),
        ) else {
            return Err(SqlError::unsupported(
                "DECLARE other than DECLARE ... CURSOR FOR",
            ));
        };
        if declare.binary == Some(true) {
            return Err(SqlError::unsupported("BINARY cursors"));
        }
        let name = crate::types::normalize_ident(name);
        let hold = declare.hold == Some(true);
        if !hold && self.block.is_none() {
            return Err(SqlError::new(
                "25P01",
                "DECLARE CURSOR can only be used in transaction blocks",
            ));
        }
        if self.cursors.contains_key(&name) {
            return Err(SqlError::new(
                "42P03",
                format!("cursor \"{name}\" already exists"),
            ));
        }
        let statement = ast::Statement::Query(query.clone());
        let result = self.in_transaction(|session, txn| {
            session.execute_dml(&statement, txn, params, types, None)
        })?;
        let cursor = Cursor {
            columns: result.columns,
            rows: result.rows.into(),
            hold,
            in_block: self.block.is_some(),
        };
        self.cursors.insert(name, cursor);
        Ok(QueryResult::command("DECLARE CURSOR"))
    }

    pub(super) fn fetch(
        &mut self,
        name: &ast::Ident,
        direction: &FetchDirection,
    ) -> Result<QueryResult> {
        let count = fetch_count(direction)?;
        let cursor = self.cursor_mut(name)?;
        let taken = count.unwrap_or(cursor.rows.len()).min(cursor.rows.len());
        let rows: Vec<Row> = cursor.rows.drain(..taken).collect();
        let tag = format!("FETCH {}", rows.len());
        Ok(QueryResult::rows(tag, cursor.columns.clone(), rows))
    }

    pub(super) fn close_cursor(&mut self, cursor: &CloseCursor) -> Result<QueryResult> {
        match cursor {
            CloseCursor::All => self.cursors.clear(),
            CloseCursor::Specific { name } => {
                self.cursor_mut(name)?;
                self.cursors.remove(&crate::types::normalize_ident(name));
            }
        }
        Ok(QueryResult::command("CLOSE CURSOR"))
    }

    /// The columns of cursor `name` (named as the client sends it: a Describe of the portal),
    /// if there is one.
    pub fn cursor_description(&self, name: &str) -> Option<Vec<Column>> {
        self.cursors.get(name).map(|c| c.columns.clone())
    }

    /// The columns FETCH from cursor `name` returns (for Describe).
    pub(super) fn cursor_columns(&self, name: &ast::Ident) -> Result<Vec<Column>> {
        let key = crate::types::normalize_ident(name);
        self.cursor_description(&key)
            .ok_or_else(|| missing_cursor(&key))
    }

    /// The block ended: its cursors end, but those WITH HOLD when it committed.
    pub(super) fn end_block_cursors(&mut self, committed: bool) {
        self.cursors
            .retain(|_, cursor| cursor.hold && (committed || !cursor.in_block));
        for cursor in self.cursors.values_mut() {
            cursor.in_block = false;
        }
    }

    fn cursor_mut(&mut self, name: &ast::Ident) -> Result<&mut Cursor> {
        let key = crate::types::normalize_ident(name);
        self.cursors
            .get_mut(&key)
            .ok_or_else(|| missing_cursor(&key))
    }
}

fn missing_cursor(name: &str) -> SqlError {
    SqlError::new("34000", format!("cursor \"{name}\" does not exist"))
}

/// How many rows a FETCH takes (None: all that are left).
fn fetch_count(direction: &FetchDirection) -> Result<Option<usize>> {
    let count = |limit: &dyn std::fmt::Display| -> Result<Option<usize>> {
        let text = limit.to_string();
        match text.parse::<i64>() {
            Ok(n) if n >= 0 => Ok(Some(n as usize)),
            Ok(_) => Err(SqlError::unsupported(
                "FETCH backward (cursors go forward only)",
            )),
            Err(_) => Err(SqlError::syntax(format!("invalid FETCH count {text}"))),
        }
    };
    match direction {
        FetchDirection::Next | FetchDirection::Forward { limit: None } => Ok(Some(1)),
        FetchDirection::Count { limit } | FetchDirection::Forward { limit: Some(limit) } => {
            count(limit)
        }
        FetchDirection::All | FetchDirection::ForwardAll => Ok(None),
        other => Err(SqlError::unsupported(format!(
            "FETCH {other} (cursors go forward only)"
        ))),
    }
}
