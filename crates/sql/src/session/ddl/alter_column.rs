//! `ALTER TABLE t ALTER [COLUMN] c` forms that change only the catalog: SET DEFAULT, DROP
//! DEFAULT, DROP NOT NULL, SET NOT NULL after a scan that finds no NULL (23502 otherwise), and
//! TYPE where every stored value is already a value of the new type in the same bytes — a string
//! column made longer or unlimited (`varchar(30)` to `varchar(150)` or `text`), as PostgreSQL
//! also does without a rewrite. Any other change of type that PostgreSQL makes without USING
//! (an assignment cast; USING is not supported, 42804 otherwise) rewrites the table online
//! (`Transaction::alter_column_types`: writers go on; each value converted as an assignment, a value
//! that does not convert failing the statement), except for a primary-key column, whose new
//! encoding would re-cluster the table (0A000). Otherwise rows are never rewritten: a new default
//! applies to rows inserted later, as in PostgreSQL (rows stored before an ADD COLUMN keep reading
//! their `missing` value).
//!
//! As PostgreSQL: an identity column's default and nullability belong to its identity (42601),
//! and a primary key column stays NOT NULL (42P16). SET NOT NULL's scan, like ADD CHECK's
//! validation, reads the rows as they are under the table's lock (held exclusively: no other
//! writer has a change in flight), its own transaction's writes included.

use sqlparser::ast::AlterColumnOperation;

use super::*;
use crate::execution::constraints::is_hidden;

impl Ddl<'_> {
    pub(super) fn alter_column(
        &self,
        table: &TableDef,
        column: &ast::Ident,
        operation: &AlterColumnOperation,
    ) -> Result<()> {
        let name = normalize_ident(column);
        let position = table
            .column(&name)
            .filter(|_| !is_hidden(&name))
            .ok_or_else(|| {
                SqlError::new(
                    "42703",
                    format!(
                        "column \"{name}\" of relation \"{}\" does not exist",
                        table.name
                    ),
                )
            })?;
        let mut altered = table.clone();
        let def = &mut altered.columns[position];
        let identity = || {
            SqlError::new(
                "42601",
                format!(
                    "column \"{name}\" of relation \"{}\" is an identity column",
                    table.name
                ),
            )
        };
        let generated = def.generated.is_some();
        match operation {
            AlterColumnOperation::SetDefault { .. } | AlterColumnOperation::DropDefault
                if generated =>
            {
                let error = SqlError::new(
                    "42601",
                    format!(
                        "column \"{name}\" of relation \"{}\" is a generated column",
                        table.name
                    ),
                );
                return Err(match operation {
                    AlterColumnOperation::DropDefault => error
                        .with_hint("Use ALTER TABLE ... ALTER COLUMN ... DROP EXPRESSION instead."),
                    _ => error,
                });
            }
            AlterColumnOperation::SetDefault { value } if def.identity.is_none() => {
                self.check_sequence_named(&super::stored_default(value))?;
                def.default = Some(super::stored_default(value));
                self.check_default(&altered, position, &super::stored_default(value))?;
            }
            AlterColumnOperation::DropDefault if def.identity.is_none() => def.default = None,
            AlterColumnOperation::SetDefault { .. } => return Err(identity()),
            AlterColumnOperation::DropDefault => {
                return Err(identity()
                    .with_hint("Use ALTER TABLE ... ALTER COLUMN ... DROP IDENTITY instead."))
            }
            AlterColumnOperation::AddGenerated {
                generated_as,
                sequence_options,
            } => self.add_identity(&table.name, def, *generated_as, sequence_options.as_deref())?,
            AlterColumnOperation::DropNotNull if def.identity.is_some() => return Err(identity()),
            AlterColumnOperation::DropNotNull if table.primary_key.contains(&position) => {
                return Err(SqlError::new(
                    "42P16",
                    format!("column \"{name}\" is in a primary key"),
                ))
            }
            AlterColumnOperation::DropNotNull => def.nullable = true,
            AlterColumnOperation::SetNotNull => {
                def.nullable = false;
                self.refuse_nulls(table, position)?;
            }
            AlterColumnOperation::SetDataType {
                data_type,
                using: None,
                ..
            } => {
                let new = crate::types::convert_type_in(data_type, self.engine())?;
                if !self.generated_reading(table, position)?.is_empty() {
                    return Err(SqlError::unsupported(
                        "altering the type of a column used by a generated column",
                    ));
                }
                if !widens_in_place(&def.data_type, &new) {
                    if table.primary_key.contains(&position) {
                        return Err(SqlError::unsupported(format!(
                            "ALTER COLUMN ... TYPE of primary-key column \"{name}\" from {} to {new} \
                             (it needs the table re-clustered)",
                            def.data_type
                        )));
                    }
                    if !assignable(&def.data_type, &new) {
                        return Err(SqlError::new(
                            "42804",
                            format!("column \"{name}\" cannot be cast automatically to type {new}"),
                        )
                        .with_hint(format!(
                            "You might need to specify \"USING {name}::{new}\"."
                        )));
                    }
                    def.data_type = new;
                    self.txn().alter_column_types(altered)?;
                    return Ok(());
                }
                def.data_type = new;
            }
            other => return Err(SqlError::unsupported(format!("ALTER COLUMN ... {other}"))),
        }
        self.txn().alter_table(altered)?;
        Ok(())
    }

    /// `ADD GENERATED { ALWAYS | BY DEFAULT } AS IDENTITY [(options)]`: `def`, NOT NULL and
    /// without a default, becomes an identity column of `table` with a new sequence.
    fn add_identity(
        &self,
        table: &str,
        def: &mut ColumnDef,
        generated_as: Option<ast::GeneratedAs>,
        options: Option<&[ast::SequenceOptions]>,
    ) -> Result<()> {
        let refused = |code: &'static str, what: &str| {
            SqlError::new(
                code,
                format!("column \"{}\" of relation \"{table}\" {what}", def.name),
            )
        };
        if def.identity.is_some() {
            return Err(refused("55000", "is already an identity column"));
        }
        if def.default.is_some() {
            return Err(refused("55000", "already has a default value"));
        }
        if def.nullable {
            return Err(refused(
                "55000",
                "must be declared NOT NULL before identity can be added",
            ));
        }
        let identity = match generated_as {
            Some(ast::GeneratedAs::ByDefault) => Identity::ByDefault,
            _ => Identity::Always,
        };
        let start = super::sequence::SequenceSpec::new(None, options.unwrap_or(&[]))?.start;
        super::identity::make_identity(table, def, identity)?;
        let sequence = super::sequence_name(table, &def.name);
        if self.engine().sequence_exists(&sequence)? {
            return Err(SqlError::new(
                "42P07",
                format!("relation \"{sequence}\" already exists"),
            ));
        }
        let width = super::sequence::width_of(&def.data_type)?;
        self.txn().create_sequence(&sequence, start, width)?;
        Ok(())
    }

    /// 42P01 if `default` is `nextval('s')` of a sequence `s` that does not exist (PostgreSQL
    /// resolves the `regclass` when the default is set).
    fn check_sequence_named(&self, default: &str) -> Result<()> {
        let named = default
            .strip_prefix("nextval('")
            .and_then(|rest| rest.split_once('\''))
            .map(|(argument, _)| crate::execution::sequences::relation_name(argument));
        match named {
            Some(name) if !self.engine().sequence_exists(&name)? => {
                Err(SqlError::undefined_table(&name))
            }
            _ => Ok(()),
        }
    }

    /// 23502 if some row, as a fresh snapshot sees the table, has NULL in column `position`.
    fn refuse_nulls(&self, table: &TableDef, position: usize) -> Result<()> {
        for row in self.txn().scan_latest_rows(table)? {
            let (_, values) = row?;
            if values[position].is_null() {
                return Err(SqlError::new(
                    "23502",
                    format!(
                        "column \"{}\" of relation \"{}\" contains null values",
                        table.columns[position].name, table.name
                    ),
                ));
            }
        }
        Ok(())
    }
}

/// Whether every value of type `old` is, in the same stored bytes, a value of type `new`: a
/// string type whose length limit stays or grows (`varchar(n)` to `varchar(m)`, m >= n, or to
/// `varchar` / `text`). Strings are stored and keyed alike whatever their limit.
fn widens_in_place(old: &steady_types::DataType, new: &steady_types::DataType) -> bool {
    use steady_types::DataType::{Text, Varchar};
    match (old, new) {
        (Varchar(Some(n)), Varchar(Some(m))) => m >= n,
        (Varchar(_) | Text, Varchar(None) | Text) => true,
        _ => false,
    }
}

/// Whether PostgreSQL converts values of type `old` to `new` in an assignment (so ALTER COLUMN
/// ... TYPE needs no USING): between numeric types, from any type to a string type, and between
/// the date and timestamp types.
fn assignable(old: &steady_types::DataType, new: &steady_types::DataType) -> bool {
    use steady_types::DataType::{
        BigInt, Char, Date, Double, Integer, Numeric, Real, SmallInt, Text, Timestamp, TimestampTz,
        Varchar,
    };
    let numeric = |t: &steady_types::DataType| {
        matches!(
            t,
            SmallInt | Integer | BigInt | Real | Double | Numeric { .. }
        )
    };
    let datetime = |t: &steady_types::DataType| matches!(t, Date | Timestamp | TimestampTz);
    (numeric(old) && numeric(new))
        || matches!(new, Text | Varchar(_) | Char(_))
        || (datetime(old) && datetime(new))
}
