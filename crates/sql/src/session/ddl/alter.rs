//! ALTER TABLE: ADD COLUMN (a constant default is kept as the column's missing value, no rewrite;
//! a volatile one rewrites), DROP COLUMN, ADD/DROP CONSTRAINT, ADD PRIMARY KEY (a re-clustering
//! bulk rebuild) and ALTER COLUMN (`alter_column`).

use super::*;
use crate::execution::constraints::is_index_column;
use crate::execution::expr::Expr;
use steady_types::DataType;

impl Ddl<'_> {
    pub(super) fn alter_table(&self, alter: &ast::AlterTable) -> Result<QueryResult> {
        let skipped = || {
            QueryResult::command("ALTER TABLE").with_notice(
                "NOTICE",
                "00000",
                format!(
                    "relation \"{}\" does not exist, skipping",
                    object_name(&alter.name).1
                ),
            )
        };
        let name = match crate::system::public_object_name(&alter.name) {
            Err(err) if err.code == "3F000" && alter.if_exists => return Ok(skipped()),
            name => name?,
        };
        let owner_only = alter
            .operations
            .iter()
            .all(|o| matches!(o, AlterTableOperation::OwnerTo { .. }));
        if owner_only && (self.relation_exists(&name)? || self.engine().view(&name)?.is_some()) {
            return self.keep_owner(&alter.operations);
        }
        match self.engine().table(&name) {
            Some(table) => {
                super::materialized::refuse_as_table(&table, Some(super::materialized::ALTER_HINT))?
            }
            None if alter.if_exists => return Ok(skipped()),
            None => return Err(SqlError::undefined_table(&name)),
        }
        for operation in &alter.operations {
            let table = self
                .engine()
                .table(&name)
                .ok_or_else(|| SqlError::undefined_table(&name))?;
            self.alter_one(&table, operation)?;
        }
        Ok(QueryResult::command("ALTER TABLE"))
    }

    /// `ALTER TABLE name OWNER TO role` of a table, view or sequence ([`check_new_owner`]).
    fn keep_owner(&self, operations: &[AlterTableOperation]) -> Result<QueryResult> {
        for operation in operations {
            let AlterTableOperation::OwnerTo { new_owner } = operation else {
                continue;
            };
            let ast::Owner::Ident(role) = new_owner else {
                continue;
            };
            let role = crate::types::normalize_ident(role);
            check_new_owner(self.session, self.engine(), &role)?;
        }
        Ok(QueryResult::command("ALTER TABLE"))
    }

    pub(super) fn alter_one(
        &self,
        table: &TableDef,
        operation: &AlterTableOperation,
    ) -> Result<()> {
        match operation {
            AlterTableOperation::AddColumn {
                if_not_exists,
                column_def,
                ..
            } => self.add_column(table, column_def, *if_not_exists),
            AlterTableOperation::DropColumn {
                column_names,
                if_exists,
                ..
            } => {
                for column in column_names {
                    let column = normalize_ident(column);
                    self.refuse_if_viewed(&table.name, &column)?;
                    self.drop_column(table, &column, *if_exists)?;
                }
                Ok(())
            }
            AlterTableOperation::AddConstraint { constraint, .. } => {
                self.add_constraint(table, constraint)
            }
            AlterTableOperation::DropConstraint {
                if_exists, name, ..
            } => self.drop_constraint(table, &normalize_ident(name), *if_exists),
            AlterTableOperation::AlterColumn { column_name, op } => {
                self.alter_column(table, column_name, op)
            }
            AlterTableOperation::RenameColumn {
                old_column_name,
                new_column_name,
            } => self.rename_column(
                table,
                &normalize_ident(old_column_name),
                &normalize_ident(new_column_name),
            ),
            AlterTableOperation::RenameTable {
                table_name: ast::RenameTableNameKind::To(new) | ast::RenameTableNameKind::As(new),
            } => self.rename_table(table, &object_name(new).1),
            other => Err(SqlError::unsupported(format!("ALTER TABLE {other}"))),
        }
    }

    pub(super) fn add_column(
        &self,
        table: &TableDef,
        column: &ast::ColumnDef,
        if_not_exists: bool,
    ) -> Result<()> {
        let name = normalize_ident(&column.name);
        if table.column(&name).is_some() {
            if if_not_exists {
                return Ok(());
            }
            return Err(SqlError::new(
                "42701",
                format!(
                    "column \"{name}\" of relation \"{}\" already exists",
                    table.name
                ),
            ));
        }
        let mut spec = TableSpec {
            columns: table.columns.clone(),
            ..TableSpec::default()
        };
        self.add_column_spec(&table.name, column, &mut spec)?;
        if spec.primary_key.is_some() {
            return Err(SqlError::unsupported("ADD COLUMN ... PRIMARY KEY"));
        }
        let position = spec.columns.len() - 1;
        let mut altered = table.clone();
        altered.columns = spec.columns.clone();
        if let Some(default) = &altered.columns[position].default {
            self.check_default(&altered, position, default)?;
        }
        if let Some(generation) = &altered.columns[position].generated {
            self.check_generated(&altered, position, generation)?;
        }
        self.create_owned_sequences(&spec)?;
        self.fill_new_column(table, &altered, position)?;
        let altered = self
            .engine()
            .table(&table.name)
            .ok_or_else(|| SqlError::undefined_table(&table.name))?;
        self.add_table_constraints(&altered, &spec)
    }

    /// Switches to the definition with the new column and gives existing rows its default
    /// (failing with 23502 when the column is NOT NULL without a default and rows exist): a
    /// constant default becomes the column's missing value, read by rows stored before it; a
    /// volatile one (`nextval`, `random()`, `now()`) is evaluated for each row, which is rewritten,
    /// and so is a generation expression, over each row.
    pub(super) fn fill_new_column(
        &self,
        old: &TableDef,
        altered: &TableDef,
        position: usize,
    ) -> Result<()> {
        let engine = Arc::clone(self.engine());
        let column = &altered.columns[position];
        let has_rows = self.txn().scan_latest_rows(old)?.next().is_some();
        let valued = column.default.is_some() || column.generated.is_some();
        if has_rows && !valued && !column.nullable {
            return Err(null_values(column, old));
        }
        let ty = column.data_type;
        if let Some(generation) = &column.generated {
            let scope = crate::planner::bind_write::table_scope(altered, None);
            let (expr, _) = self
                .generation_binder()
                .bind_expr_with_level(&parse_expr(generation)?, &scope)?;
            return self.rewrite_new_column(altered, position, &expr);
        }
        let mut binder = Binder::new(&engine, self.db.stats(), vec![]);
        let Some(default) = &column.default else {
            self.txn().alter_table(altered.clone())?;
            return Ok(());
        };
        let (expr, _) = binder.bind_expr_as(&parse_expr(default)?, &Scope::default(), ty)?;
        if expr.is_constant() {
            // Existing rows read the value without being rewritten (PostgreSQL's attmissingval):
            // ADD COLUMN with a constant default takes the same time whatever the table's size.
            let value = crate::execution::executor::eval_constant(&expr)?.assign_to(&ty)?;
            let mut altered = altered.clone();
            altered.columns[position].missing =
                (!value.is_null()).then(|| steady_engine::codec::encode_row(&[value]));
            self.txn().alter_table(altered)?;
            return Ok(());
        }
        self.rewrite_new_column(altered, position, &expr)
    }

    /// Switches to `altered` and rewrites every row with its new column's value from `expr`,
    /// evaluated over the row (23502 for a NULL in a NOT NULL column). A failure leaves the rows
    /// and the definition to the transaction's rollback.
    fn rewrite_new_column(&self, altered: &TableDef, position: usize, expr: &Expr) -> Result<()> {
        let altered = self.txn().alter_table(altered.clone())?;
        self.fill_rows(&altered, position, expr)
    }

    /// Gives every row of `table` its column `position`'s value from `expr`.
    fn fill_rows(&self, table: &TableDef, position: usize, expr: &Expr) -> Result<()> {
        let engine = Arc::clone(self.engine());
        let column = &table.columns[position];
        let mut txn = self.txn();
        let rows: Vec<(Vec<u8>, Vec<Value>)> = txn
            .scan_latest_rows(table)?
            .collect::<std::result::Result<_, _>>()?;
        let info = self.session.info().clone();
        let mut ctx = ExecCtx::new(Some(engine), Some(&mut *txn), &[], &info);
        rows.into_iter().try_for_each(|(pk, mut values)| {
            values[position] = expr.eval(&values, &mut ctx)?.assign_to(&column.data_type)?;
            if values[position].is_null() && !column.nullable {
                return Err(null_values(column, table));
            }
            ctx.txn()?.update_row(table, &pk, &values)?;
            Ok(())
        })
    }

    pub(super) fn drop_column(&self, table: &TableDef, name: &str, if_exists: bool) -> Result<()> {
        let table = self
            .engine()
            .table(&table.name)
            .ok_or_else(|| SqlError::undefined_table(&table.name))?;
        let Some(position) = table.column(name).filter(|_| !is_hidden(name)) else {
            if if_exists {
                return Ok(());
            }
            return Err(SqlError::undefined_column(name)
                .with_detail(format!("of relation \"{}\"", table.name)));
        };
        if table.primary_key.contains(&position) {
            return Err(SqlError::unsupported("dropping a primary-key column"));
        }
        let referenced = referencing(self.engine(), &table.name)
            .iter()
            .any(|(_, fk)| fk.ref_columns.contains(&position));
        // Expression indexes reading the column go with it, as PostgreSQL drops them; other
        // generated columns reading it keep it.
        let (expressions, generated): (Vec<usize>, Vec<usize>) = self
            .generated_reading(&table, position)?
            .into_iter()
            .partition(|&c| is_index_column(&table.columns[c].name));
        let generated = generated.first().copied();
        if referenced || generated.is_some() {
            let error = SqlError::new(
                "2BP01",
                format!(
                    "cannot drop column {name} of table {} because other objects depend on it",
                    table.name
                ),
            );
            return Err(match generated {
                Some(column) => error
                    .with_detail(format!(
                        "column {} of table {} depends on column {name} of table {}",
                        table.columns[column].name, table.name, table.name
                    ))
                    .with_hint("Use DROP ... CASCADE to drop the dependent objects too."),
                None => error,
            });
        }
        for index in table.indexes.iter().filter(|i| {
            i.include.contains(&position)
                || i.columns
                    .iter()
                    .any(|c| *c == position || expressions.contains(c))
        }) {
            self.txn().drop_secondary_index(&table.name, &index.name)?;
        }
        let mut altered = (*self
            .engine()
            .table(&table.name)
            .ok_or_else(|| SqlError::undefined_table(&table.name))?)
        .clone();
        altered.columns[position] = dropped_column(position, altered.columns[position].data_type);
        let reading = self.checks_reading(&table, position)?;
        altered
            .constraints
            .retain(|c| match serde_json::from_str(c) {
                Ok(Constraint::ForeignKey(fk)) => !fk.columns.contains(&position),
                Ok(Constraint::Check(check)) => !reading.contains(&check.name),
                Err(_) => true,
            });
        self.txn().alter_table(altered)?;
        self.retire_unused_expressions(&table.name)
    }

    /// Turns the hidden index columns (of expressions, of partial indexes) no index holds any
    /// more into dropped columns
    /// (computed no more; their old values stay in the rows, unread, as a dropped column's do).
    pub(super) fn retire_unused_expressions(&self, table_name: &str) -> Result<()> {
        let table = self
            .engine()
            .table(table_name)
            .ok_or_else(|| SqlError::undefined_table(table_name))?;
        let mut altered = (*table).clone();
        let mut retired = false;
        for (position, column) in table.columns.iter().enumerate() {
            let indexed = table.indexes.iter().any(|i| i.columns.contains(&position));
            if is_index_column(&column.name) && !indexed {
                altered.columns[position] = dropped_column(position, column.data_type);
                retired = true;
            }
        }
        if retired {
            self.txn().alter_table(altered)?;
        }
        Ok(())
    }

    pub(super) fn add_constraint(
        &self,
        table: &TableDef,
        constraint: &TableConstraint,
    ) -> Result<()> {
        let positions = |columns: &[String]| -> Result<Vec<usize>> {
            columns
                .iter()
                .map(|c| {
                    table
                        .column(c)
                        .filter(|_| !is_hidden(c))
                        .ok_or_else(|| missing_key_column(c))
                })
                .collect()
        };
        match constraint {
            TableConstraint::PrimaryKey(pk) => {
                super::refuse_deferrable(pk.characteristics.as_ref(), "primary key")?;
                if !table.primary_key.is_empty() {
                    return Err(SqlError::new(
                        "42P16",
                        format!(
                            "multiple primary keys for table \"{}\" are not allowed",
                            table.name
                        ),
                    ));
                }
                let columns = positions(&index_column_names(&pk.columns)?)?;
                self.add_primary_key(table, columns)
            }
            TableConstraint::Unique(unique) => {
                super::refuse_deferrable(unique.characteristics.as_ref(), "unique")?;
                let columns = positions(&index_column_names(&unique.columns)?)?;
                let name = unique
                    .name
                    .as_ref()
                    .map(normalize_ident)
                    .unwrap_or_else(|| derived_name(&table.name, table, &columns, "key"));
                if self.relation_exists(&name)? {
                    return Err(SqlError::new(
                        "42P07",
                        format!("relation \"{name}\" already exists"),
                    ));
                }
                self.txn()
                    .create_secondary_index(&table.name, &name, columns, true)
                    .map_err(|err| match err {
                        EngineError::UniqueViolation { .. } => SqlError::new(
                            "23505",
                            format!("could not create unique index \"{name}\""),
                        ),
                        other => other.into(),
                    })?;
                Ok(())
            }
            TableConstraint::ForeignKey(fk) => {
                let names: Vec<String> = fk.columns.iter().map(normalize_ident).collect();
                let columns = positions(&names)?;
                let refs: Vec<String> = fk.referred_columns.iter().map(normalize_ident).collect();
                self.add_foreign_key(
                    table,
                    fk.name.as_ref().map(normalize_ident),
                    columns,
                    &fk.foreign_table,
                    &refs,
                    super::fk_actions(fk)?,
                )
            }
            TableConstraint::Check(c) => {
                self.add_checks(table, &[super::check::written(c.name.as_ref(), &c.expr)])
            }
            other => Err(SqlError::unsupported(format!("constraint {other}"))),
        }
    }

    /// ADD PRIMARY KEY: the columns become NOT NULL and the table is re-clustered on them.
    pub(super) fn add_primary_key(&self, table: &TableDef, columns: Vec<usize>) -> Result<()> {
        let rebuilt = self
            .txn()
            .add_primary_key(&table.name, columns.clone())
            .map_err(|err| match err {
                EngineError::UniqueViolation { .. } => SqlError::new(
                    "23505",
                    format!("could not create unique index \"{}_pkey\"", table.name),
                ),
                EngineError::NotNullViolation(_) => {
                    let column = &table.columns[columns[0]].name;
                    SqlError::new(
                        "23502",
                        format!(
                            "column \"{column}\" of relation \"{}\" contains null values",
                            table.name
                        ),
                    )
                }
                other => other.into(),
            })?;
        let mut altered = (*rebuilt).clone();
        for &c in &columns {
            altered.columns[c].nullable = false;
        }
        self.txn().alter_table(altered)?;
        Ok(())
    }

    pub(super) fn drop_constraint(
        &self,
        table: &TableDef,
        name: &str,
        if_exists: bool,
    ) -> Result<()> {
        if foreign_keys(table).iter().any(|fk| fk.name == name)
            || constraints::checks(table).iter().any(|c| c.name == name)
        {
            return self.remove_constraint(table, name);
        }
        if table.index(name).is_some_and(|i| i.unique) {
            self.txn().drop_secondary_index(&table.name, name)?;
            return Ok(());
        }
        if if_exists {
            return Ok(());
        }
        Err(SqlError::new(
            "42704",
            format!(
                "constraint \"{name}\" of relation \"{}\" does not exist",
                table.name
            ),
        ))
    }
}

/// 23502: a NOT NULL column added to rows that would hold NULL in it.
fn null_values(column: &ColumnDef, table: &TableDef) -> SqlError {
    SqlError::new(
        "23502",
        format!(
            "column \"{}\" of relation \"{}\" contains null values",
            column.name, table.name
        ),
    )
}

/// The definition a dropped column keeps at `position`: hidden, NULL in new rows.
fn dropped_column(position: usize, data_type: DataType) -> ColumnDef {
    ColumnDef::plain(
        format!("{DROPPED_PREFIX}{}........", position + 1),
        data_type,
    )
}

/// `OWNER TO role` of a relation or a type: every object belongs to the bootstrap superuser
/// (`execution::privileges`), so giving it to that superuser — the session's user, when it
/// logged in as it — changes nothing and is accepted (pg_dump writes it after each object); a
/// role of the catalog cannot own one (0A000: restore with `--no-owner`), and another name is no
/// role (42704).
pub(crate) fn check_new_owner(session: &Session, engine: &Engine, role: &str) -> Result<()> {
    if session.is_bootstrap_name(role) {
        return Ok(());
    }
    if engine.role(role)?.is_some() {
        return Err(SqlError::unsupported(format!(
            "ownership by role \"{role}\": every object belongs to the bootstrap superuser \
             (restore a dump with --no-owner)"
        )));
    }
    Err(SqlError::new(
        "42704",
        format!("role \"{role}\" does not exist"),
    ))
}
