//! COPY through the session: FROM STDIN inserts the rows a client streams in batches of
//! multi-row INSERTs with parameters; TO STDOUT runs a query and formats its rows.
//!
//! A COPY FROM is atomic, as in PostgreSQL: outside a transaction block it runs in a block of its
//! own (BEGIN at the start, COMMIT at the end, ROLLBACK on any error); inside a block an error
//! leaves the block failed (25P02 until ROLLBACK), whether the session raised it (a constraint)
//! or the server did (bad data, a cancel).
//!
//! Each batch runs `INSERT INTO t (c1, …) VALUES ($1, …)`, prepared once per COPY with the
//! columns' types declared, once per row of the batch (`Session::execute_prepared_rows`: one
//! statement, the rows moved into the table and never cloned), with values the server has
//! already converted from text — so no SQL is parsed per batch and no value is ever spliced
//! into SQL.

use steady_sql::values::{DataType, Value};
use steady_sql::{Prepared, QueryResult, Session, SqlError, TransactionStatus};

use super::format::{CopyOptions, Fields, RowReader, RowWriter};

/// The most rows one INSERT carries.
const BATCH_ROWS: usize = 1000;
/// The most values one INSERT carries.
const BATCH_VALUES: usize = 30_000;
/// Data queued before it is parsed and loaded: each load is one call into the session, and
/// pgbench sends every row in a CopyData message of its own.
const LOAD_BYTES: usize = 256 << 10;

/// A COPY FROM STDIN in progress.
pub struct CopyIn {
    reader: RowReader,
    batches: Batches,
    own_block: bool,
}

/// The rows converted and not yet inserted, and how they are inserted.
struct Batches {
    table: String,
    columns: Vec<Column>,
    pending: Vec<Vec<Value>>,
    batch_rows: usize,
    insert: Prepared,
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
        let columns = named_or_default(session, table, columns);
        let table = qualified_name(table);
        let columns = describe(session, &table, &columns)?;
        let insert = prepare_insert(session, &table, &columns)?;
        let own_block = session.transaction_status() == TransactionStatus::Idle;
        if own_block {
            run(session, "BEGIN")?;
        }
        let batch_rows = (BATCH_VALUES / columns.len().max(1)).clamp(1, BATCH_ROWS);
        Ok(CopyIn {
            reader: RowReader::new(options),
            batches: Batches {
                table,
                columns,
                pending: Vec::new(),
                batch_rows,
                insert,
                copied: 0,
            },
            own_block,
        })
    }

    pub fn columns(&self) -> usize {
        self.batches.columns.len()
    }

    /// Queues a chunk of data; true when enough is queued to be worth a [`CopyIn::load`].
    pub fn queue(&mut self, data: &[u8]) -> bool {
        self.reader.append(data);
        self.reader.buffered() >= LOAD_BYTES
    }

    /// Inserts every full batch the queued data completes.
    pub fn load(&mut self, session: &mut Session) -> Result<(), SqlError> {
        let rows = self.reader.rows(false)?;
        self.batches.add(session, rows)
    }

    /// Inserts what is left, ends the COPY's own block, and returns the rows copied.
    pub fn finish(&mut self, session: &mut Session) -> Result<u64, SqlError> {
        let rows = self.reader.rows(true)?;
        self.batches.add(session, rows)?;
        self.batches.flush(session)?;
        if self.own_block {
            run(session, "COMMIT")?;
        }
        Ok(self.batches.copied)
    }

    /// Undoes the COPY after an error: rolls its own block back, or fails the client's block.
    pub fn abort(self, session: &mut Session) {
        if self.own_block {
            let _ = run(session, "ROLLBACK");
        } else if session.transaction_status() == TransactionStatus::InBlock {
            fail_block(session);
        }
    }
}

impl Batches {
    /// Converts and queues `rows` (each with its line number), inserting every full batch.
    fn add(&mut self, session: &mut Session, rows: Vec<(u64, Fields)>) -> Result<(), SqlError> {
        for (line, row) in rows {
            self.convert(row)
                .map_err(|err| self.with_context(err, line))?;
            if self.pending.len() == self.batch_rows {
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
        let row = fields
            .into_iter()
            .zip(&self.columns)
            .map(|(field, column)| match field {
                None => Ok(Value::Null),
                Some(text) => Value::parse(&column.ty, &text),
            })
            .collect::<Result<Vec<_>, _>>()?;
        self.pending.push(row);
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
        if self.pending.is_empty() {
            return Ok(());
        }
        let rows = std::mem::take(&mut self.pending);
        let count = rows.len() as u64;
        session.execute_prepared_rows(&self.insert, rows)?;
        self.copied += count;
        Ok(())
    }
}

/// `INSERT INTO table (c1, …) VALUES ($1, …)` with the columns' parameter types declared.
fn prepare_insert(
    session: &mut Session,
    table: &str,
    columns: &[Column],
) -> Result<Prepared, SqlError> {
    let names: Vec<&str> = columns.iter().map(|c| c.quoted.as_str()).collect();
    let params: Vec<String> = (1..=columns.len()).map(|c| format!("${c}")).collect();
    let sql = format!(
        "INSERT INTO {table} ({}) VALUES ({})",
        names.join(", "),
        params.join(", ")
    );
    let types: Vec<Option<DataType>> = columns.iter().map(|c| Some(param_type(c.ty))).collect();
    session.prepare_copy_insert(&sql, &types)
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
    /// The lines (the header's, then each row's), one after the other in chunks of about
    /// [`COPY_OUT_CHUNK`] bytes, each with the offsets where its lines end: a few large
    /// buffers rather than one per line, and none that grows by copying.
    pub chunks: Vec<(bytes::Bytes, Vec<usize>)>,
    pub rows: usize,
}

/// The size of a [`CopyOut`] chunk.
const COPY_OUT_CHUNK: usize = 1 << 20;

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
    let mut chunks = Vec::new();
    let mut data = Vec::with_capacity(COPY_OUT_CHUNK + COPY_OUT_CHUNK / 8);
    let mut ends = Vec::new();
    if let Some(header) = writer.header(&names) {
        data.extend_from_slice(&header);
        ends.push(data.len());
    }
    let mut scratch = String::new();
    for row in &result.rows {
        writer.write_row(&mut data, row, &mut scratch);
        ends.push(data.len());
        if data.len() >= COPY_OUT_CHUNK {
            let capacity = data.capacity();
            let full = std::mem::replace(&mut data, Vec::with_capacity(capacity));
            chunks.push((full.into(), std::mem::take(&mut ends)));
        }
    }
    chunks.push((data.into(), ends));
    Ok(CopyOut {
        columns: names.len(),
        chunks,
        rows: result.rows.len(),
    })
}

/// The query text a COPY TO of a table runs.
pub fn table_query(session: &Session, table: &[String], columns: &[String]) -> String {
    let columns = named_or_default(session, table, columns);
    select_columns(&columns, &qualified_name(table))
}

/// The columns a COPY names, or when it names none, the table's columns but its generated ones.
fn named_or_default(session: &Session, table: &[String], columns: &[String]) -> Vec<String> {
    if !columns.is_empty() {
        return columns.to_vec();
    }
    let (schema, name) = match table {
        [schema, name] => (Some(schema.as_str()), name),
        [.., name] => (None, name),
        [] => return Vec::new(),
    };
    session.copy_columns(schema, name).unwrap_or_default()
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
