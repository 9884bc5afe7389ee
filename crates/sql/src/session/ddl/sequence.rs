//! Sequences as objects: CREATE SEQUENCE and DROP SEQUENCE, and the sequences serial and
//! identity columns own (created with their table or column, dropped with it).
//!
//! A sequence counts up by one from its start (`steady_engine::sequence`), as a `bigint`, or as
//! the `smallint` or `integer` it is declared `AS` (a serial column's is its column's type), up to
//! that type's maximum (2200H past it): the options that say otherwise — INCREMENT other than 1,
//! MINVALUE, MAXVALUE, CYCLE, CACHE other than 1, OWNED BY — are refused (0A000) rather than
//! ignored.
//! Sequences share the namespace of tables and indexes. A sequence a column default reads
//! (`nextval('s')`) cannot be dropped (2BP01).

use sqlparser::ast::{self, SequenceOptions};

use super::{Ddl, TableSpec};
use crate::error::{Result, SqlError};
use crate::session::QueryResult;
use crate::types::convert_type;

/// What CREATE SEQUENCE asks for.
pub(super) struct SequenceSpec {
    /// The first value `nextval` gives.
    pub(super) start: i64,
    /// The width in bytes of the integer type it counts in (`AS smallint | integer | bigint`).
    pub(super) width: u8,
}

/// The width of a sequence counting in `ty` (smallint, integer or bigint; others 0A000).
pub(super) fn width_of(ty: &steady_types::DataType) -> Result<u8> {
    use steady_types::DataType;
    match ty {
        DataType::SmallInt => Ok(2),
        DataType::Integer => Ok(4),
        DataType::BigInt => Ok(8),
        other => Err(SqlError::new(
            "22023",
            format!("sequence type must be smallint, integer, or bigint, not {other}"),
        )),
    }
}

impl SequenceSpec {
    pub(super) fn new(
        data_type: Option<&ast::DataType>,
        options: &[SequenceOptions],
    ) -> Result<Self> {
        let width = match data_type {
            Some(data_type) => width_of(&convert_type(data_type)?)?,
            None => 8,
        };
        let mut start = 1;
        for option in options {
            match option {
                SequenceOptions::StartWith(expr, _) => start = integer(expr)?,
                SequenceOptions::IncrementBy(expr, _) if integer(expr)? == 1 => {}
                SequenceOptions::Cache(expr) if integer(expr)? == 1 => {}
                SequenceOptions::MinValue(None)
                | SequenceOptions::MaxValue(None)
                | SequenceOptions::Cycle(true) => {}
                other => {
                    return Err(SqlError::unsupported(format!(
                        "sequence option {}",
                        other.to_string().trim()
                    )))
                }
            }
        }
        let max = steady_engine::sequence::sequence_max(width);
        if start > max {
            return Err(SqlError::new(
                "22023",
                format!("START value ({start}) cannot be greater than MAXVALUE ({max})"),
            ));
        }
        Ok(SequenceSpec { start, width })
    }
}

/// `ALTER SEQUENCE name OWNED BY table.column | NONE`. A sequence belongs to a column when it
/// is named `<table>_<column>_seq` and the column's default calls it (what a serial column
/// gets; DROP TABLE then drops it): OWNED BY that column is accepted — pg_dump writes it before
/// the `SET DEFAULT` that completes the pair —, and so is OWNED BY NONE of a sequence no column
/// owns. Any other owner would need an ownership SteadyDB does not record, and is refused.
pub(crate) fn owned_by(
    engine: &steady_engine::engine::Engine,
    if_exists: bool,
    sequence: &str,
    owner: Option<(&str, &str)>,
) -> Result<QueryResult> {
    if !engine.sequence_exists(sequence)? {
        if if_exists {
            return Ok(QueryResult::command("ALTER SEQUENCE").with_notice(
                "NOTICE",
                "00000",
                format!("relation \"{sequence}\" does not exist, skipping"),
            ));
        }
        return Err(SqlError::undefined_table(sequence));
    }
    let owned = |table: &str, column: &str| sequence == super::sequence_name(table, column);
    match owner {
        Some((table, column)) => {
            let def = engine
                .table(table)
                .ok_or_else(|| SqlError::undefined_table(table))?;
            if def.column(column).is_none() {
                return Err(SqlError::undefined_column(column));
            }
            if !owned(table, column) {
                return Err(SqlError::unsupported(format!(
                    "OWNED BY {table}.{column} of a sequence not named {}",
                    super::sequence_name(table, column)
                )));
            }
        }
        None => {
            let owner = engine.tables().into_iter().find_map(|t| {
                let column = t.columns.iter().find(|c| {
                    owned(&t.name, &c.name)
                        && c.default.as_deref() == Some(&format!("nextval('{sequence}')"))
                })?;
                Some(format!("{}.{}", t.name, column.name))
            });
            if let Some(owner) = owner {
                return Err(SqlError::unsupported(format!(
                    "OWNED BY NONE of the sequence of serial column {owner}"
                )));
            }
        }
    }
    Ok(QueryResult::command("ALTER SEQUENCE"))
}

/// A signed integer literal of a sequence option.
pub(super) fn integer(expr: &ast::Expr) -> Result<i64> {
    let text = expr.to_string().replace(' ', "");
    text.parse()
        .map_err(|_| SqlError::syntax(format!("a sequence option needs an integer, not {expr}")))
}

impl Ddl<'_> {
    pub(super) fn create_sequence(
        &self,
        name: &str,
        if_not_exists: bool,
        spec: SequenceSpec,
    ) -> Result<QueryResult> {
        if let Some(skipped) = self.existing_relation(name, if_not_exists, "CREATE SEQUENCE")? {
            return Ok(skipped);
        }
        self.txn().create_sequence(name, spec.start, spec.width)?;
        Ok(QueryResult::command("CREATE SEQUENCE"))
    }

    pub(super) fn drop_sequences(
        &self,
        names: &[ast::ObjectName],
        if_exists: bool,
    ) -> Result<QueryResult> {
        let (names, mut result) = super::drop_names(
            names,
            if_exists,
            "sequence",
            QueryResult::command("DROP SEQUENCE"),
        )?;
        for name in &names {
            if !self.engine().sequence_exists(name)? {
                if !if_exists {
                    return Err(SqlError::new(
                        "42P01",
                        format!("sequence \"{name}\" does not exist"),
                    ));
                }
                continue;
            }
            self.refuse_if_read_by_a_default(name)?;
        }
        for name in &names {
            if !self.engine().sequence_exists(name)? {
                let message = format!("sequence \"{name}\" does not exist, skipping");
                result = result.with_notice("NOTICE", "00000", message);
                continue;
            }
            self.txn().drop_sequence(name)?;
        }
        Ok(result)
    }

    /// 2BP01 when a column default reads sequence `name`.
    fn refuse_if_read_by_a_default(&self, name: &str) -> Result<()> {
        let call = format!("nextval('{name}')");
        for table in self.engine().tables() {
            let reading = table
                .columns
                .iter()
                .find(|c| c.default.as_deref().is_some_and(|d| d.contains(&call)));
            if let Some(column) = reading {
                return Err(SqlError::new(
                    "2BP01",
                    format!("cannot drop sequence {name} because other objects depend on it"),
                )
                .with_detail(format!(
                    "default value for column {} of table {} depends on sequence {name}",
                    column.name, table.name
                )));
            }
        }
        Ok(())
    }

    /// Creates the sequences of a new table's (or column's) serial and identity columns.
    pub(super) fn create_owned_sequences(&self, spec: &TableSpec) -> Result<()> {
        for (sequence, start, width) in &spec.sequences {
            self.txn().drop_sequence(sequence)?;
            self.txn().create_sequence(sequence, *start, *width)?;
        }
        Ok(())
    }
}
