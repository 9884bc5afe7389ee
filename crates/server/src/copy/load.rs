//! COPY through the session: FROM STDIN inserts the rows a client streams in batches of
//! multi-row INSERTs with parameters; TO STDOUT runs a query and formats its rows.
//!
//! A COPY FROM is atomic, as in PostgreSQL: outside a transaction block it runs in a block of its
//! own (BEGIN at the start, COMMIT at the end, ROLLBACK on any error); inside a block an error
//! leaves the block failed (25P02 until ROLLBACK), whether the session raised it (a constraint)
//! or the server did (bad data, a cancel).
//!
//! Each batch is `INSERT INTO t (c1, …) VALUES ($1, …), (…)` prepared once per batch size with the
//! columns' types declared, and run with values the server has already converted from text — so
//! the SQL text is never re-parsed per batch and no value is ever spliced into SQL.

use std::collections::HashMap;

use steady_sql::values::{DataType, Value};
use steady_sql::{Prepared, QueryResult, Session, SqlError, TransactionStatus};

use super::format::{CopyOptions, Fields, RowReader, RowWriter};

/// The most rows one INSERT carries.
const BATCH_ROWS: usize = 1000;
/// The most parameters one INSERT carries.
const BATCH_PARAMS: usize = 30_000;
/// Data queued before it is parsed and loaded: each load is one call into the session, and
/// pgbench sends every row in a CopyData message of its own.
const LOAD_BYTES: usize = 256 << 10;

/// A COPY FROM STDIN in progress.
pub struct CopyIn {
    table: String,
    columns: Vec<Column>,
    reader: RowReader,
    pending: Vec<Value>,
    pending_rows: usize,
    batch_rows: usize,
    inserts: HashMap<usize, Prepared>,
    own_block: bool,
    copied: u64,
}

/// A target column: its name, quoted for SQL, and its type.
struct Column {
    name: String,
    quoted: String,
    ty: DataType,
}

impl CopyIn {
    /// Checks the table and columns and opens the COPY's own block if none is open.
    pub fn start(
        session: &mut Session,
        table: &[String],
        columns: &[String],
        options: &CopyOptions,
    ) -> Result<CopyIn, SqlError> {
        if session.transaction_status() == TransactionStatus::Failed {
            return Err(aborted());
        }
        let table = qualified_name(table);
        let columns = describe(session, &table, columns)?;
        let own_block = session.transaction_status() == TransactionStatus::Idle;
        if own_block {
            run(session, "BEGIN")?;
        }
        let batch_rows = (BATCH_PARAMS / columns.len().max(1)).clamp(1, BATCH_ROWS);
        Ok(CopyIn {
            table,
            columns,
            reader: RowReader::new(options),
            pending: Vec::new(),
            pending_rows: 0,
            batch_rows,
            inserts: HashMap::new(),
            own_block,
            copied: 0,
        })
    }

    pub fn columns(&self) -> usize {
        self.columns.len()
    }

    /// Queues a chunk of data; true when enough is queued to be worth a [`CopyIn::load`].
    pub fn queue(&mut self, data: &[u8]) -> bool {
        self.reader.append(data);
        self.reader.buffered() >= LOAD_BYTES
    }

    /// Inserts every full batch the queued data completes.
    pub fn load(&mut self, session: &mut Session) -> Result<(), SqlError> {
        let rows = self.reader.rows(false)?;
        self.add(session, rows)
    }

    /// Inserts what is left, ends the COPY's own block, and returns the rows copied.
    pub fn finish(&mut self, session: &mut Session) -> Result<u64, SqlError> {
        let rows = self.reader.rows(true)?;
        self.add(session, rows)?;
        self.flush(session)?;
        if self.own_block {
            run(session, "COMMIT")?;
        }
        Ok(self.copied)
    }

    /// Undoes the COPY after an error: rolls its own block back, or fails the client's block.
    pub fn abort(self, session: &mut Session) {
        if self.own_block {
            let _ = run(session, "ROLLBACK");
        } else if session.transaction_status() == TransactionStatus::InBlock {
            fail_block(session);
        }
    }

    fn add(&mut self, session: &mut Session, rows: Vec<Fields>) -> Result<(), SqlError> {
        let first_line = self.reader.line - rows.len() as u64 + 1;
        for (line, row) in (first_line..).zip(rows) {
            self.convert(row)
                .map_err(|err| self.with_context(err, line))?;
            if self.pending_rows == self.batch_rows {
                self.flush(session)?;
            }
        }
        Ok(())
    }

    /// Converts one row's fields to the columns' types and queues it.
    fn convert(&mut self, fields: Fields) -> Result<(), SqlError> {
        if fields.len() < self.columns.len() {
            let missing = &self.columns[fields.len()].name;
            return Err(SqlError::new(
                "22P04",
                format!("missing data for column \"{missing}\""),
            ));
        }
        if fields.len() > self.columns.len() {
            return Err(SqlError::new(
                "22P04",
                "extra data after last expected column",
            ));
        }
        for (field, column) in fields.into_iter().zip(&self.columns) {
            let value = match field {
                None => Value::Null,
                Some(text) => Value::parse(&column.ty, &text)?,
            };
            self.pending.push(value);
        }
        self.pending_rows += 1;
        Ok(())
    }

    fn with_context(&self, mut err: SqlError, line: u64) -> SqlError {
        if err.detail.is_none() {
            err.detail = Some(format!("COPY {}, line {line}", self.table));
        }
        err
    }

    /// Inserts the queued rows.
    fn flush(&mut self, session: &mut Session) -> Result<(), SqlError> {
        if self.pending_rows == 0 {
            return Ok(());
        }
        let rows = self.pending_rows;
        if !self.inserts.contains_key(&rows) {
            let prepared = self.prepare_insert(session, rows)?;
            self.inserts.insert(rows, prepared);
        }
        session.execute_prepared(&self.inserts[&rows], &self.pending)?;
        self.copied += rows as u64;
        self.pending.clear();
        self.pending_rows = 0;
        Ok(())
    }

    fn prepare_insert(&self, session: &mut Session, rows: usize) -> Result<Prepared, SqlError> {
        let names: Vec<&str> = self.columns.iter().map(|c| c.quoted.as_str()).collect();
        let width = self.columns.len();
        let tuples: Vec<String> = (0..rows)
            .map(|r| {
                let params: Vec<String> =
                    (1..=width).map(|c| format!("${}", r * width + c)).collect();
                format!("({})", params.join(", "))
            })
            .collect();
        let sql = format!(
            "INSERT INTO {} ({}) VALUES {}",
            self.table,
            names.join(", "),
            tuples.join(", ")
        );
        let types: Vec<Option<DataType>> = (0..rows)
            .flat_map(|_| self.columns.iter().map(|c| Some(param_type(c.ty))))
            .collect();
        session.prepare(&sql, &types)
    }
}

/// The type a batch declares for a column's parameter: the column's own, but `text` for
/// `char(n)` and `varchar(n)`, whose values `CopyIn::convert` has already fitted to the column
/// (so a parameter is not parsed and padded again; the INSERT's assignment only checks it).
fn param_type(column: DataType) -> DataType {
    match column {
        DataType::Char(_) | DataType::Varchar(_) => DataType::Text,
        other => other,
    }
}

/// The columns COPY fills: those named, or all of the table's, with their types.
fn describe(
    session: &mut Session,
    table: &str,
    columns: &[String],
) -> Result<Vec<Column>, SqlError> {
    let described = session.prepare(&select_columns(columns, table), &[])?;
    Ok(described
        .columns
        .into_iter()
        .map(|c| Column {
            quoted: quote_ident(&c.name),
            ty: c.ty.unwrap_or(DataType::Text),
            name: c.name,
        })
        .collect())
}

/// The output of a COPY TO STDOUT: its lines, the header first if asked for.
pub struct CopyOut {
    pub columns: usize,
    pub lines: Vec<Vec<u8>>,
    pub rows: usize,
}

/// Runs the query behind a COPY TO and formats its rows.
pub fn copy_out(
    session: &mut Session,
    query: &str,
    options: &CopyOptions,
) -> Result<CopyOut, SqlError> {
    let result = single_result(session, query)?;
    if !result.has_rows() {
        return Err(SqlError::unsupported(
            "COPY of a statement that returns no rows",
        ));
    }
    let names: Vec<String> = result.columns.iter().map(|c| c.name.clone()).collect();
    let writer = RowWriter::new(options, &names);
    let mut lines: Vec<Vec<u8>> = writer.header(&names).into_iter().collect();
    lines.extend(result.rows.iter().map(|row| {
        let fields: Vec<Option<String>> = row.iter().map(Value::to_pg_text).collect();
        writer.line(&fields)
    }));
    Ok(CopyOut {
        columns: names.len(),
        lines,
        rows: result.rows.len(),
    })
}

/// The query text a COPY TO of a table runs.
pub fn table_query(table: &[String], columns: &[String]) -> String {
    select_columns(columns, &qualified_name(table))
}

/// `SELECT "a", "b" FROM table` (`*` when no columns are named).
fn select_columns(columns: &[String], table: &str) -> String {
    let list = if columns.is_empty() {
        "*".to_owned()
    } else {
        columns
            .iter()
            .map(|c| quote_ident(c))
            .collect::<Vec<_>>()
            .join(", ")
    };
    format!("SELECT {list} FROM {table}")
}

fn single_result(session: &mut Session, sql: &str) -> Result<QueryResult, SqlError> {
    let mut results = session.execute(sql);
    if results.len() != 1 {
        return Err(SqlError::syntax("COPY takes exactly one query"));
    }
    results.remove(0)
}

/// Runs a statement of the COPY's own making, keeping its first error.
fn run(session: &mut Session, sql: &str) -> Result<(), SqlError> {
    session
        .execute(sql)
        .into_iter()
        .try_for_each(|r| r.map(drop))
}

/// Marks the open block failed after an error the session did not raise itself.
fn fail_block(session: &mut Session) {
    session.fail_block();
}

fn aborted() -> SqlError {
    SqlError::new(
        "25P02",
        "current transaction is aborted, commands ignored until end of transaction block",
    )
}

fn qualified_name(parts: &[String]) -> String {
    parts
        .iter()
        .map(|p| quote_ident(p))
        .collect::<Vec<_>>()
        .join(".")
}

fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
}
