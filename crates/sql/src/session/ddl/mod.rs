//! DDL: CREATE/DROP TABLE, CREATE/DROP INDEX, ALTER TABLE (ADD/DROP COLUMN, ADD PRIMARY KEY,
//! ADD UNIQUE / FOREIGN KEY, DROP CONSTRAINT) and TRUNCATE, on the engine's catalog.
//!
//! Each statement runs in the session's transaction (the block's, or one of its own) and is undone
//! with it: a statement that fails half-way, say a CREATE TABLE whose UNIQUE constraint finds
//! a duplicate, leaves its partial changes to the rollback. Names follow PostgreSQL's
//! conventions (`t_pkey`, `t_a_key`, `t_a_fkey`, `t_a_idx`, `t_id_seq`); tables and indexes share
//! one namespace. A dropped column stays in stored rows under a hidden name (as PostgreSQL's
//! `attisdropped`), so DROP COLUMN rewrites nothing; ADD COLUMN with a non-NULL default fills the
//! existing rows in one transaction.
//!
//! Generated columns keep their expression as text in the column's definition. An expression
//! index (`CREATE INDEX ON t (lower(email))`) indexes a hidden generated column named after the
//! expression's text (added once per expression, every row rewritten), which the binder reads
//! wherever a query writes that expression; the column is retired (made a dropped column) when
//! no index holds it any more. Expressions must be immutable (42P17). A partial index
//! (`... WHERE deleted_at IS NULL`) indexes, per element, a hidden column `CASE WHEN predicate
//! THEN element END`: rows outside the predicate hold NULL, which never conflicts in a unique
//! index and is never found by an equality, so uniqueness holds only where the predicate does;
//! a WHERE clause holding every conjunct of the predicate and `element = x` is given the implied
//! `column = x`, which the index serves.

mod alter;
pub(crate) use alter::check_new_owner;
mod alter_column;
mod check;
pub(crate) mod create_as;
mod enum_type;
pub(crate) mod identity;
pub(crate) mod materialized;
mod rename;
pub(crate) mod sequence;
mod view;

use std::cell::{RefCell, RefMut};
use std::sync::Arc;

use sqlparser::ast::{self, AlterTableOperation, ColumnOption, GeneratedAs, TableConstraint};
use steady_engine::catalog::{ColumnDef, Identity, TableDef};
use steady_engine::engine::{Engine, Transaction};
use steady_engine::error::EngineError;
use steady_types::Value;

use crate::error::{Result, SqlError};
use crate::execution::constraints::{
    self, foreign_keys, is_hidden, referencing, Actions, Constraint, Deferral, ForeignKey,
    OnDelete, DROPPED_PREFIX,
};
use crate::execution::executor::ExecCtx;
use crate::parser::parse_expr;
use crate::planner::bind::{Binder, Scope};
use crate::session::{Database, QueryResult, Session};
use crate::system::public_object_name;
use crate::types::{convert_type_in, missing_schema, normalize_ident, object_name, serial_type};

/// Whether a statement is DDL (runs outside the session's transaction).
pub fn is_ddl(statement: &ast::Statement) -> bool {
    matches!(
        statement,
        ast::Statement::CreateTable(_)
            | ast::Statement::CreateSequence { .. }
            | ast::Statement::CreateView(_)
            | ast::Statement::CreateIndex(_)
            | ast::Statement::Drop { .. }
            | ast::Statement::AlterTable(_)
            | ast::Statement::Truncate(_)
            | ast::Statement::CreateSchema { .. }
            | ast::Statement::CreateType { .. }
            | ast::Statement::AlterType(_)
    )
}

/// Runs a DDL statement as a write of `txn` (the block's transaction, or one of its own).
pub fn execute(
    db: &Arc<Database>,
    session: &Session,
    txn: &mut Transaction,
    statement: &ast::Statement,
) -> Result<QueryResult> {
    let ddl = Ddl::new(db, session, txn);
    match statement {
        ast::Statement::CreateTable(create) => ddl.create_table(create),
        ast::Statement::CreateIndex(create) => ddl.create_index(create),
        ast::Statement::CreateView(create) => ddl.create_view(create),
        ast::Statement::CreateSequence {
            temporary,
            if_not_exists,
            name,
            data_type,
            sequence_options,
            owned_by,
        } => {
            create_as::refuse_temporary(*temporary)?;
            if owned_by.is_some() {
                return Err(SqlError::unsupported("CREATE SEQUENCE ... OWNED BY"));
            }
            let spec = sequence::SequenceSpec::new(data_type.as_ref(), sequence_options)?;
            ddl.create_sequence(&public_object_name(name)?, *if_not_exists, spec)
        }
        ast::Statement::Drop {
            object_type,
            if_exists,
            names,
            cascade,
            ..
        } => match object_type {
            ast::ObjectType::Table => ddl.drop_tables(names, *if_exists, *cascade),
            ast::ObjectType::Index => ddl.drop_indexes(names, *if_exists),
            ast::ObjectType::View => ddl.drop_views(names, *if_exists, *cascade),
            ast::ObjectType::MaterializedView => {
                ddl.drop_materialized_views(names, *if_exists, *cascade)
            }
            ast::ObjectType::Sequence => ddl.drop_sequences(names, *if_exists),
            ast::ObjectType::Type => ddl.drop_types(names, *if_exists, *cascade),
            other => Err(SqlError::unsupported(format!("DROP {other}"))),
        },
        ast::Statement::AlterTable(alter) => ddl.alter_table(alter),
        ast::Statement::CreateSchema {
            schema_name: ast::SchemaName::Simple(name),
            if_not_exists,
            ..
        } => create_schema(&object_name(name).1, *if_not_exists),
        ast::Statement::Truncate(truncate) => ddl.truncate(truncate),
        ast::Statement::CreateType {
            name,
            representation,
        } => ddl.create_type(name, representation.as_ref()),
        ast::Statement::AlterType(alter) => ddl.alter_type(alter),
        other => Err(SqlError::unsupported(format!("{other}"))),
    }
}

struct Ddl<'a> {
    db: &'a Arc<Database>,
    session: &'a Session,
    /// The transaction the statement's catalog changes and row checks are made in.
    txn: RefCell<&'a mut Transaction>,
}

/// A foreign key declared in CREATE TABLE, added once the table exists.
struct PendingForeignKey {
    name: Option<String>,
    columns: Vec<usize>,
    parent: ast::ObjectName,
    ref_columns: Vec<String>,
    actions: Actions,
}

/// Partitioned and inheriting tables are refused (0A000): a table created without its
/// PARTITION BY or INHERITS would take rows PostgreSQL routes elsewhere or refuses.
fn refuse_table_kinds(create: &ast::CreateTable) -> Result<()> {
    let refused = [
        (
            create.partition_by.is_some(),
            "CREATE TABLE ... PARTITION BY",
        ),
        (
            create.partition_of.is_some(),
            "CREATE TABLE ... PARTITION OF",
        ),
        (create.inherits.is_some(), "CREATE TABLE ... INHERITS"),
    ];
    match refused.iter().find(|(refused, _)| *refused) {
        Some((_, what)) => Err(SqlError::unsupported(*what)),
        None => Ok(()),
    }
}

/// A foreign key's actions and deferral; the forms SteadyDB does not carry out are refused
/// (0A000), never ignored: ON UPDATE other than NO ACTION / RESTRICT, ON DELETE SET DEFAULT,
/// MATCH FULL and MATCH PARTIAL, NOT ENFORCED.
pub(super) fn fk_actions(fk: &ast::ForeignKeyConstraint) -> Result<Actions> {
    use ast::ReferentialAction as Action;
    if let Some(action @ (Action::Cascade | Action::SetNull | Action::SetDefault)) = fk.on_update {
        return Err(SqlError::unsupported(format!("ON UPDATE {action}")));
    }
    if let Some(
        kind @ (ast::ConstraintReferenceMatchKind::Full
        | ast::ConstraintReferenceMatchKind::Partial),
    ) = fk.match_kind
    {
        return Err(SqlError::unsupported(format!("{kind} in a foreign key")));
    }
    let on_delete = match fk.on_delete {
        None | Some(Action::NoAction) => OnDelete::NoAction,
        Some(Action::Restrict) => OnDelete::Restrict,
        Some(Action::Cascade) => OnDelete::Cascade,
        Some(Action::SetNull) => OnDelete::SetNull,
        Some(action @ Action::SetDefault) => {
            return Err(SqlError::unsupported(format!("ON DELETE {action}")))
        }
    };
    Ok(Actions {
        on_delete,
        update_restrict: fk.on_update == Some(Action::Restrict),
        deferral: deferral(fk.characteristics.as_ref())?,
    })
}

/// `[NOT] DEFERRABLE [INITIALLY {DEFERRED | IMMEDIATE}]` of a foreign key, as PostgreSQL reads
/// it: INITIALLY DEFERRED alone means DEFERRABLE; NOT DEFERRABLE INITIALLY DEFERRED is an
/// error (42601).
fn deferral(characteristics: Option<&ast::ConstraintCharacteristics>) -> Result<Deferral> {
    let Some(c) = characteristics else {
        return Ok(Deferral::NotDeferrable);
    };
    if c.enforced == Some(false) {
        return Err(SqlError::unsupported("NOT ENFORCED constraints"));
    }
    let initially_deferred = c.initially == Some(ast::DeferrableInitial::Deferred);
    match (c.deferrable, initially_deferred) {
        (Some(false), true) => Err(SqlError::new(
            "42601",
            "constraint declared INITIALLY DEFERRED must be DEFERRABLE",
        )),
        (_, true) => Ok(Deferral::Deferred),
        (Some(true), false) => Ok(Deferral::Immediate),
        (_, false) => Ok(Deferral::NotDeferrable),
    }
}

/// A unique or primary key declared DEFERRABLE is refused (0A000): SteadyDB checks them as each
/// row is written, and a deferred check would let a transaction do what PostgreSQL allows and
/// SteadyDB would refuse midway.
pub(super) fn refuse_deferrable(
    characteristics: Option<&ast::ConstraintCharacteristics>,
    what: &str,
) -> Result<()> {
    match deferral(characteristics)? {
        Deferral::NotDeferrable => Ok(()),
        _ => Err(SqlError::unsupported(format!(
            "DEFERRABLE {what} constraints"
        ))),
    }
}

/// A column's constraints gathered from its definition.
#[derive(Default)]
struct TableSpec {
    columns: Vec<ColumnDef>,
    primary_key: Option<Vec<usize>>,
    unique: Vec<(Option<String>, Vec<usize>)>,
    foreign_keys: Vec<PendingForeignKey>,
    /// The sequences of serial and identity columns: name and first value.
    sequences: Vec<(String, i64, u8)>,
    checks: Vec<check::WrittenCheck>,
}

impl<'a> Ddl<'a> {
    fn new(db: &'a Arc<Database>, session: &'a Session, txn: &'a mut Transaction) -> Self {
        Ddl {
            db,
            session,
            txn: RefCell::new(txn),
        }
    }
}

impl Ddl<'_> {
    fn engine(&self) -> &Arc<Engine> {
        self.db.engine()
    }

    /// The statement's transaction (borrowed for one engine call or one scan at a time).
    fn txn(&self) -> RefMut<'_, Transaction> {
        RefMut::map(self.txn.borrow_mut(), |txn| &mut **txn)
    }

    /// Whether a table, index or sequence is named `name` (one namespace, as PostgreSQL's).
    fn relation_exists(&self, name: &str) -> Result<bool> {
        Ok(self.engine().table(name).is_some()
            || self.index_owner(name).is_some()
            || self.engine().sequence_exists(name)?)
    }

    /// When `name` is taken: a notice result with IF NOT EXISTS, else 42P07.
    fn existing_relation(
        &self,
        name: &str,
        if_not_exists: bool,
        tag: &str,
    ) -> Result<Option<QueryResult>> {
        if !self.relation_exists(name)? {
            return Ok(None);
        }
        if if_not_exists {
            let message = format!("relation \"{name}\" already exists, skipping");
            return Ok(Some(
                QueryResult::command(tag).with_notice("NOTICE", "42P07", message),
            ));
        }
        Err(SqlError::new(
            "42P07",
            format!("relation \"{name}\" already exists"),
        ))
    }

    /// `base`, or while that is taken `base1`, `base2`…: PostgreSQL's choice of a name it
    /// derives for an index.
    fn free_relation_name(&self, base: &str) -> Result<String> {
        let mut name = base.to_owned();
        let mut n = 0;
        while self.relation_exists(&name)? {
            n += 1;
            name = format!("{base}{n}");
        }
        Ok(name)
    }

    /// A partial index's predicate: boolean (42804), immutable (42P17), no subquery (0A000).
    fn check_index_predicate(&self, table: &TableDef, predicate: &ast::Expr) -> Result<()> {
        let (_, ty) = self.bind_immutable(
            table,
            predicate,
            "cannot use subquery in index predicate",
            "functions in index predicate must be marked IMMUTABLE",
        )?;
        if !matches!(ty, Some(steady_types::DataType::Boolean) | None) {
            return Err(SqlError::datatype_mismatch(format!(
                "argument of WHERE must be type boolean, not type {}",
                crate::types::type_name(ty)
            )));
        }
        Ok(())
    }

    /// Binds `expr` over `table`'s row as a generation expression, an index expression or a
    /// partial index's predicate is bound: 0A000 (`subquery`) if it holds a subquery, 42P17
    /// (`volatile`) if it calls a volatile function.
    fn bind_immutable(
        &self,
        table: &TableDef,
        expr: &ast::Expr,
        subquery: &str,
        volatile: &str,
    ) -> Result<(crate::execution::expr::Expr, Option<steady_types::DataType>)> {
        let scope = crate::planner::bind_write::table_scope(table, None);
        let (bound, ty) = self
            .generation_binder()
            .bind_expr_with_level(expr, &scope)?;
        if bound.holds_subquery() {
            return Err(SqlError::new("0A000", subquery));
        }
        if !bound.is_movable() {
            return Err(SqlError::new("42P17", volatile));
        }
        Ok((bound, ty))
    }

    fn index_owner(&self, index: &str) -> Option<Arc<TableDef>> {
        self.engine()
            .tables()
            .into_iter()
            .find(|t| t.index(index).is_some())
    }

    fn table(&self, name: &ast::ObjectName) -> Result<Arc<TableDef>> {
        let name = public_object_name(name)?;
        self.engine()
            .table(&name)
            .ok_or_else(|| SqlError::undefined_table(&name))
    }

    // -----------------------------------------------------------------------------------------
    // CREATE TABLE
    // -----------------------------------------------------------------------------------------

    fn create_table(&self, create: &ast::CreateTable) -> Result<QueryResult> {
        let name = public_object_name(&create.name)?;
        create_as::refuse_temporary(create.temporary)?;
        refuse_table_kinds(create)?;
        if let Some(skipped) =
            self.existing_relation(&name, create.if_not_exists, "CREATE TABLE")?
        {
            return Ok(skipped);
        }
        let spec = self.table_spec(&name, create)?;
        self.create_owned_sequences(&spec)?;
        let primary_key = spec.primary_key.clone().unwrap_or_default();
        let table = self
            .txn()
            .create_table(&name, spec.columns.clone(), primary_key)?;
        self.add_table_constraints(&table, &spec)?;
        Ok(QueryResult::command("CREATE TABLE"))
    }

    fn add_table_constraints(&self, table: &TableDef, spec: &TableSpec) -> Result<()> {
        for (constraint_name, columns) in &spec.unique {
            let index_name = constraint_name
                .clone()
                .unwrap_or_else(|| derived_name(&table.name, table, columns, "key"));
            self.txn()
                .create_secondary_index(&table.name, &index_name, columns.clone(), true)?;
        }
        for fk in &spec.foreign_keys {
            let current = self
                .engine()
                .table(&table.name)
                .ok_or_else(|| SqlError::undefined_table(&table.name))?;
            self.add_foreign_key(
                &current,
                fk.name.clone(),
                fk.columns.clone(),
                &fk.parent,
                &fk.ref_columns,
                fk.actions,
            )?;
        }
        let current = self
            .engine()
            .table(&table.name)
            .ok_or_else(|| SqlError::undefined_table(&table.name))?;
        self.add_checks(&current, &spec.checks)
    }

    fn table_spec(&self, table: &str, create: &ast::CreateTable) -> Result<TableSpec> {
        let mut spec = TableSpec::default();
        if let Some(
            ast::CreateTableLikeKind::Parenthesized(like) | ast::CreateTableLikeKind::Plain(like),
        ) = &create.like
        {
            spec.columns = self.like_columns(like)?;
        }
        for column in &create.columns {
            self.add_column_spec(table, column, &mut spec)?;
        }
        for constraint in &create.constraints {
            self.add_constraint_spec(constraint, &mut spec)?;
        }
        if let Some(pk) = &spec.primary_key {
            for &c in pk {
                spec.columns[c].nullable = false;
            }
        }
        let columns = spec.columns.clone();
        let probe = probe_table(table, &columns);
        for (i, column) in columns.iter().enumerate() {
            if let Some(default) = &column.default {
                self.check_default(&probe, i, default)?;
            }
            if let Some(generation) = &column.generated {
                self.check_generated(&probe, i, generation)?;
            }
        }
        Ok(spec)
    }

    /// `LIKE source`'s columns: each visible column's name, type and NOT NULL, its default with
    /// INCLUDING DEFAULTS — no identity, generation expression or constraint, as PostgreSQL's
    /// LIKE without further INCLUDING options.
    fn like_columns(&self, like: &ast::CreateTableLike) -> Result<Vec<ColumnDef>> {
        let source = self.table(&like.name)?;
        let defaults = matches!(like.defaults, Some(ast::CreateTableLikeDefaults::Including));
        Ok(source
            .columns
            .iter()
            .filter(|c| !is_hidden(&c.name))
            .map(|c| ColumnDef {
                default: c.default.clone().filter(|_| defaults),
                missing: None,
                identity: None,
                generated: None,
                ..c.clone()
            })
            .collect())
    }

    /// The generated columns of `table`, other than `position` itself, whose expressions read
    /// column `position`.
    fn generated_reading(&self, table: &TableDef, position: usize) -> Result<Vec<usize>> {
        let mut binder = Binder::new(self.engine(), self.db.stats(), vec![]);
        let generated = crate::planner::bind_write::bind_generated(&mut binder, table)?;
        let reading = generated.into_iter().filter(|(column, expr)| {
            let mut reads = false;
            expr.visit(&mut |e| {
                reads |= matches!(e, crate::execution::expr::Expr::Column(c) if *c == position)
            });
            reads && *column != position
        });
        Ok(reading.map(|(column, _)| column).collect())
    }

    /// A binder for generation expressions: an expression an index holds is computed there, not
    /// read from the index's hidden column (which they compute).
    fn generation_binder(&self) -> Binder<'_> {
        let mut binder = Binder::new(self.engine(), self.db.stats(), vec![]);
        binder.expression_columns = false;
        binder
    }

    /// Binds a generation expression over the row once, so a bad one fails at CREATE / ALTER
    /// time: it reads only the row's other plain columns, through immutable functions, without
    /// a subquery, and its value is assignable to the column.
    fn check_generated(&self, table: &TableDef, column: usize, text: &str) -> Result<()> {
        let volatile = match constraints::is_index_column(&table.columns[column].name) {
            true => "functions in index expression must be marked IMMUTABLE",
            false => "generation expression is not immutable",
        };
        let (bound, ty) = self.bind_immutable(
            table,
            &parse_expr(text)?,
            "cannot use subquery in column generation expression",
            volatile,
        )?;
        let mut generated_read = None;
        bound.visit(&mut |e| {
            if let crate::execution::expr::Expr::Column(c) = e {
                if table.columns[*c].generated.is_some() {
                    generated_read = Some(*c);
                }
            }
        });
        if let Some(read) = generated_read {
            return Err(SqlError::new(
                "42P17",
                format!(
                    "cannot use generated column \"{}\" in column generation expression",
                    table.columns[read].name
                ),
            )
            .with_detail("A generated column cannot reference another generated column."));
        }
        crate::planner::bind_write::check_assignable(
            &table.columns[column].name,
            ty,
            table.columns[column].data_type,
        )
    }

    /// Binds a default expression once, so a bad one fails at CREATE / ALTER time.
    fn check_default(&self, table: &TableDef, column: usize, text: &str) -> Result<()> {
        let expr = parse_expr(text)?;
        let mut binder = Binder::new(self.engine(), self.db.stats(), vec![]);
        let (_, ty) = binder.bind_expr(&expr, &Scope::default()).map_err(|err| {
            if err.code == "42703" {
                SqlError::new("0A000", "cannot use column reference in DEFAULT expression")
            } else {
                err
            }
        })?;
        crate::planner::bind_write::check_assignable(
            &table.columns[column].name,
            ty,
            table.columns[column].data_type,
        )
    }

    fn add_column_spec(
        &self,
        table: &str,
        column: &ast::ColumnDef,
        spec: &mut TableSpec,
    ) -> Result<()> {
        let name = normalize_ident(&column.name);
        if spec.columns.iter().any(|c| c.name == name) {
            return Err(SqlError::new(
                "42701",
                format!("column \"{name}\" specified more than once"),
            ));
        }
        let index = spec.columns.len();
        let mut def = column_def(table, &name, &column.data_type, self.engine())?;
        if let Some(ty) = serial_type(&column.data_type) {
            let width = sequence::width_of(&ty)?;
            spec.sequences.push((sequence_name(table, &name), 1, width));
        }
        for option in &column.options {
            match &option.option {
                ColumnOption::Generated {
                    generated_as: generated_as @ (GeneratedAs::Always | GeneratedAs::ByDefault),
                    sequence_options,
                    generation_expr: None,
                    ..
                } => {
                    let identity = match generated_as {
                        GeneratedAs::Always => Identity::Always,
                        _ => Identity::ByDefault,
                    };
                    let options = sequence_options.as_deref().unwrap_or(&[]);
                    let start = sequence::SequenceSpec::new(None, options)?.start;
                    identity::make_identity(table, &mut def, identity)?;
                    let width = sequence::width_of(&def.data_type)?;
                    spec.sequences
                        .push((sequence_name(table, &name), start, width));
                }
                ColumnOption::Generated {
                    generated_as: GeneratedAs::ExpStored,
                    generation_expr: Some(expr),
                    ..
                } => def.generated = Some(expr.to_string()),
                ColumnOption::Generated {
                    generation_expr: Some(_),
                    ..
                } => {
                    return Err(SqlError::unsupported(
                        "virtual generated columns (write GENERATED ALWAYS AS (...) STORED)",
                    ))
                }
                ColumnOption::Null => def.nullable = true,
                ColumnOption::NotNull => def.nullable = false,
                ColumnOption::Default(expr) => def.default = Some(stored_default(expr)),
                ColumnOption::PrimaryKey(pk) => {
                    refuse_deferrable(pk.characteristics.as_ref(), "primary key")?;
                    set_primary_key(spec, table, vec![index])?
                }
                ColumnOption::Unique(unique) => {
                    refuse_deferrable(unique.characteristics.as_ref(), "unique")?;
                    spec.unique
                        .push((option.name.as_ref().map(normalize_ident), vec![index]))
                }
                ColumnOption::ForeignKey(fk) => spec.foreign_keys.push(PendingForeignKey {
                    name: option
                        .name
                        .as_ref()
                        .or(fk.name.as_ref())
                        .map(normalize_ident),
                    columns: vec![index],
                    parent: fk.foreign_table.clone(),
                    ref_columns: fk.referred_columns.iter().map(normalize_ident).collect(),
                    actions: fk_actions(fk)?,
                }),
                ColumnOption::Check(c) => spec.checks.push(check::written(
                    option.name.as_ref().or(c.name.as_ref()),
                    &c.expr,
                )),
                other => return Err(SqlError::unsupported(format!("column option {other}"))),
            }
        }
        let has_default = column
            .options
            .iter()
            .any(|o| matches!(o.option, ColumnOption::Default(_)));
        let both = match (has_default, def.identity.is_some(), def.generated.is_some()) {
            (true, true, _) => Some("default and identity"),
            (true, _, true) => Some("default and generation expression"),
            (_, true, true) => Some("identity and generation expression"),
            _ => None,
        };
        if let Some(both) = both {
            return Err(SqlError::new(
                "42601",
                format!("both {both} specified for column \"{name}\" of table \"{table}\""),
            ));
        }
        spec.columns.push(def);
        Ok(())
    }

    fn add_constraint_spec(
        &self,
        constraint: &TableConstraint,
        spec: &mut TableSpec,
    ) -> Result<()> {
        let positions = |columns: &[String]| -> Result<Vec<usize>> {
            columns
                .iter()
                .map(|c| {
                    spec.columns
                        .iter()
                        .position(|d| d.name == *c)
                        .ok_or_else(|| missing_key_column(c))
                })
                .collect()
        };
        match constraint {
            TableConstraint::PrimaryKey(pk) => {
                refuse_deferrable(pk.characteristics.as_ref(), "primary key")?;
                let columns = positions(&index_column_names(&pk.columns)?)?;
                set_primary_key(spec, "", columns)
            }
            TableConstraint::Unique(unique) => {
                refuse_deferrable(unique.characteristics.as_ref(), "unique")?;
                let columns = positions(&index_column_names(&unique.columns)?)?;
                spec.unique
                    .push((unique.name.as_ref().map(normalize_ident), columns));
                Ok(())
            }
            TableConstraint::ForeignKey(fk) => {
                let names: Vec<String> = fk.columns.iter().map(normalize_ident).collect();
                let columns = positions(&names)?;
                spec.foreign_keys.push(PendingForeignKey {
                    name: fk.name.as_ref().map(normalize_ident),
                    columns,
                    parent: fk.foreign_table.clone(),
                    ref_columns: fk.referred_columns.iter().map(normalize_ident).collect(),
                    actions: fk_actions(fk)?,
                });
                Ok(())
            }
            TableConstraint::Check(c) => {
                spec.checks.push(check::written(c.name.as_ref(), &c.expr));
                Ok(())
            }
            other => Err(SqlError::unsupported(format!("constraint {other}"))),
        }
    }

    // -----------------------------------------------------------------------------------------
    // Foreign keys
    // -----------------------------------------------------------------------------------------

    /// Adds a foreign key to `table` after checking the parent's key and every existing row.
    fn add_foreign_key(
        &self,
        table: &TableDef,
        name: Option<String>,
        columns: Vec<usize>,
        parent: &ast::ObjectName,
        ref_names: &[String],
        actions: Actions,
    ) -> Result<()> {
        let parent_name = public_object_name(parent)?;
        let parent = if parent_name == table.name {
            Arc::new(table.clone())
        } else {
            self.engine()
                .table(&parent_name)
                .ok_or_else(|| SqlError::undefined_table(&parent_name))?
        };
        let ref_columns: Vec<usize> = if ref_names.is_empty() {
            if parent.primary_key.is_empty() {
                return Err(SqlError::new(
                    "42830",
                    format!(
                        "there is no primary key for referenced table \"{}\"",
                        parent.name
                    ),
                ));
            }
            parent.primary_key.clone()
        } else {
            ref_names
                .iter()
                .map(|n| parent.column(n).ok_or_else(|| SqlError::new("42703", format!("column \"{n}\" referenced in foreign key constraint does not exist"))))
                .collect::<Result<_>>()?
        };
        if ref_columns.len() != columns.len() {
            return Err(SqlError::new(
                "42830",
                "number of referencing and referenced columns for foreign key disagree",
            ));
        }
        let unique = parent.primary_key == ref_columns
            || parent
                .indexes
                .iter()
                .any(|i| i.unique && i.columns == ref_columns);
        if !unique {
            return Err(SqlError::new(
                "42830",
                format!(
                    "there is no unique constraint matching given keys for referenced table \"{}\"",
                    parent.name
                ),
            ));
        }
        for (&c, &r) in columns.iter().zip(&ref_columns) {
            let (child_type, parent_type) =
                (table.columns[c].data_type, parent.columns[r].data_type);
            if !crate::planner::bind_expr::comparable(&child_type, &parent_type) {
                return Err(SqlError::new("42804", format!(
                    "foreign key constraint cannot be implemented: key columns \"{}\" and \"{}\" are of incompatible types: {child_type} and {parent_type}",
                    table.columns[c].name, parent.columns[r].name
                )));
            }
        }
        let name = name.unwrap_or_else(|| derived_name(&table.name, table, &columns, "fkey"));
        if self.constraint_exists(table, &name) {
            return Err(SqlError::new(
                "42710",
                format!(
                    "constraint \"{name}\" for relation \"{}\" already exists",
                    table.name
                ),
            ));
        }
        let fk = ForeignKey {
            name,
            columns,
            table: parent.name.clone(),
            ref_columns,
            actions,
        };
        let mut altered = table.clone();
        altered
            .constraints
            .push(constraints::encode(&Constraint::ForeignKey(fk)));
        self.validate_rows(&altered)?;
        self.txn().alter_table(altered)?;
        Ok(())
    }

    fn constraint_exists(&self, table: &TableDef, name: &str) -> bool {
        foreign_keys(table).iter().any(|fk| fk.name == name)
            || table.index(name).is_some()
            || name == format!("{}_pkey", table.name)
    }

    /// Checks every row of `table` against its foreign keys.
    fn validate_rows(&self, table: &TableDef) -> Result<()> {
        let engine = Arc::clone(self.engine());
        let mut txn = self.txn();
        let rows: Vec<Vec<Value>> = txn
            .scan_latest_rows(table)?
            .map(|r| r.map(|(_, v)| v))
            .collect::<std::result::Result<_, _>>()?;
        let info = self.session.info().clone();
        let mut ctx = ExecCtx::new(Some(engine), Some(&mut *txn), &[], &info);
        for values in &rows {
            constraints::require_parents(&mut ctx, table, values)?;
        }
        Ok(())
    }

    // -----------------------------------------------------------------------------------------
    // DROP, TRUNCATE
    // -----------------------------------------------------------------------------------------

    fn drop_tables(
        &self,
        names: &[ast::ObjectName],
        if_exists: bool,
        cascade: bool,
    ) -> Result<QueryResult> {
        let (names, mut result) = drop_names(
            names,
            if_exists,
            "table",
            QueryResult::command("DROP TABLE"),
        )?;
        let existing: Vec<String> = names
            .iter()
            .filter(|n| self.engine().table(n).is_some())
            .cloned()
            .collect();
        result = self.release_dependents(&existing, "table", cascade, result)?;
        for name in &names {
            let table = self.engine().table(name);
            if let Some(table) = &table {
                materialized::refuse_as_table(table, Some(materialized::DROP_HINT))?;
            }
            let Some(table) = table else {
                if self.engine().view(name)?.is_some() {
                    return Err(SqlError::new("42809", format!("\"{name}\" is not a table"))
                        .with_hint("Use DROP VIEW to remove a view."));
                }
                if if_exists {
                    result = result.with_notice(
                        "NOTICE",
                        "00000",
                        format!("table \"{name}\" does not exist, skipping"),
                    );
                    continue;
                }
                return Err(SqlError::undefined_table(name));
            };
            let dependents: Vec<_> = referencing(self.engine(), name)
                .into_iter()
                .filter(|(child, _)| !names.contains(&child.name))
                .collect();
            if !dependents.is_empty() && !cascade {
                return Err(SqlError::new(
                    "2BP01",
                    format!("cannot drop table {name} because other objects depend on it"),
                )
                .with_hint("Use DROP ... CASCADE to drop the dependent objects too."));
            }
            for (child, fk) in dependents {
                self.remove_constraint(&child, &fk.name)?;
            }
            self.txn().drop_table(name)?;
            self.db.stats().forget(table.id);
            for sequence in owned_sequences(&table) {
                self.txn().drop_sequence(&sequence)?;
            }
        }
        Ok(result)
    }

    fn remove_constraint(&self, table: &TableDef, name: &str) -> Result<()> {
        let current = self
            .engine()
            .table(&table.name)
            .ok_or_else(|| SqlError::undefined_table(&table.name))?;
        let mut altered = (*current).clone();
        altered
            .constraints
            .retain(|c| match serde_json::from_str(c) {
                Ok(Constraint::ForeignKey(fk)) => fk.name != name,
                Ok(Constraint::Check(check)) => check.name != name,
                Err(_) => true,
            });
        self.txn().alter_table(altered)?;
        Ok(())
    }

    fn drop_indexes(&self, names: &[ast::ObjectName], if_exists: bool) -> Result<QueryResult> {
        let (names, mut result) = drop_names(
            names,
            if_exists,
            "index",
            QueryResult::command("DROP INDEX"),
        )?;
        for name in names {
            let Some(table) = self.index_owner(&name) else {
                if if_exists {
                    result = result.with_notice(
                        "NOTICE",
                        "00000",
                        format!("index \"{name}\" does not exist, skipping"),
                    );
                    continue;
                }
                return Err(SqlError::new(
                    "42704",
                    format!("index \"{name}\" does not exist"),
                ));
            };
            self.txn().drop_secondary_index(&table.name, &name)?;
            self.retire_unused_expressions(&table.name)?;
        }
        Ok(result)
    }

    /// TRUNCATE of tables; with CASCADE also of every table that references one of them (and so
    /// on); RESTART IDENTITY resets the sequences of their serial and identity columns — refused
    /// in a transaction block, since SteadyDB's sequence changes are not undone by a rollback
    /// (PostgreSQL's reset here is).
    fn truncate(&self, truncate: &ast::Truncate) -> Result<QueryResult> {
        let mut names: Vec<String> = truncate
            .table_names
            .iter()
            .map(|t| public_object_name(&t.name))
            .collect::<Result<_>>()?;
        let restart = matches!(
            truncate.identity,
            Some(ast::TruncateIdentityOption::Restart)
        );
        if restart && self.session.block.is_some() {
            return Err(SqlError::unsupported(
                "TRUNCATE ... RESTART IDENTITY inside a transaction block",
            ));
        }
        let mut result = QueryResult::command("TRUNCATE TABLE");
        if matches!(truncate.cascade, Some(ast::CascadeOption::Cascade)) {
            let mut at = 0;
            while let Some(name) = names.get(at).cloned() {
                for (child, _) in referencing(self.engine(), &name) {
                    if !names.contains(&child.name) {
                        let message = format!("truncate cascades to table \"{}\"", child.name);
                        result = result.with_notice("NOTICE", "00000", message);
                        names.push(child.name.clone());
                    }
                }
                at += 1;
            }
        }
        for name in &names {
            let table = self
                .engine()
                .table(name)
                .ok_or_else(|| SqlError::undefined_table(name))?;
            materialized::refuse_as_table(&table, None)?;
            let blocking = referencing(self.engine(), name)
                .into_iter()
                .find(|(child, _)| !names.contains(&child.name));
            if let Some((child, _)) = blocking {
                return Err(SqlError::new(
                    "0A000",
                    "cannot truncate a table referenced in a foreign key constraint",
                )
                .with_detail(format!("Table \"{}\" references \"{name}\".", child.name))
                .with_hint(format!(
                    "Truncate table \"{}\" at the same time, or use TRUNCATE ... CASCADE.",
                    child.name
                )));
            }
        }
        for name in &names {
            self.txn().truncate_table(name)?;
        }
        if restart {
            for name in &names {
                let table = self
                    .engine()
                    .table(name)
                    .ok_or_else(|| SqlError::undefined_table(name))?;
                for sequence in owned_sequences(&table) {
                    let start = self.engine().sequence_start(&sequence)?;
                    self.txn().set_sequence_value(&sequence, start - 1)?;
                }
            }
        }
        Ok(result)
    }

    // -----------------------------------------------------------------------------------------
    // CREATE INDEX
    // -----------------------------------------------------------------------------------------

    fn create_index(&self, create: &ast::CreateIndex) -> Result<QueryResult> {
        let table = self.table(&create.table_name)?;
        let include = included_columns(&table, &create.include)?;
        let elements: Vec<&ast::Expr> = create.columns.iter().map(|c| &c.column.expr).collect();
        for name in elements.iter().filter_map(|e| plain_column(e)) {
            table
                .column(&name)
                .filter(|_| !is_hidden(&name))
                .ok_or_else(|| SqlError::undefined_column(&name))?;
        }
        let name = match &create.name {
            Some(name) => public_object_name(name)?,
            None => {
                let parts: Vec<String> = elements.iter().map(|e| element_name_part(e)).collect();
                self.free_relation_name(&format!("{}_{}_idx", table.name, parts.join("_")))?
            }
        };
        if let Some(predicate) = &create.predicate {
            self.check_index_predicate(&table, predicate)?;
        }
        if let Some(skipped) =
            self.existing_relation(&name, create.if_not_exists, "CREATE INDEX")?
        {
            return Ok(skipped);
        }
        let mut columns = Vec::with_capacity(elements.len());
        for element in elements {
            columns.push(match (plain_column(element), &create.predicate) {
                (Some(column), None) => table
                    .column(&column)
                    .ok_or_else(|| SqlError::undefined_column(&column))?,
                (None, None) => self.index_column(
                    &table.name,
                    constraints::expression_column(&element.to_string()),
                    element.to_string(),
                )?,
                (_, Some(predicate)) => self.index_column(
                    &table.name,
                    constraints::partial_column(&element.to_string(), &predicate.to_string()),
                    format!("CASE WHEN {predicate} THEN {element} END"),
                )?,
            });
        }
        let table = self.table(&create.table_name)?;
        self.txn()
            .create_covering_index(&table.name, &name, columns, include, create.unique)
            .map_err(|err| match err {
                EngineError::UniqueViolation { .. } => {
                    SqlError::new("23505", format!("could not create unique index \"{name}\""))
                }
                other => other.into(),
            })?;
        Ok(QueryResult::command("CREATE INDEX"))
    }

    /// The position of index column `name`, a hidden generated column of expression `text`,
    /// added (every row rewritten) unless an index already has it.
    fn index_column(&self, table_name: &str, name: String, text: String) -> Result<usize> {
        let table = self
            .engine()
            .table(table_name)
            .ok_or_else(|| SqlError::undefined_table(table_name))?;
        if let Some(position) = table.column(&name) {
            return Ok(position);
        }
        let scope = crate::planner::bind_write::table_scope(&table, None);
        let (_, ty) = self
            .generation_binder()
            .bind_expr_with_level(&parse_expr(&text)?, &scope)?;
        let mut altered = (*table).clone();
        altered.columns.push(ColumnDef {
            generated: Some(text.clone()),
            ..ColumnDef::plain(name, ty.unwrap_or(steady_types::DataType::Text))
        });
        let position = altered.columns.len() - 1;
        self.check_generated(&altered, position, &text)?;
        self.fill_new_column(&table, &altered, position)?;
        Ok(position)
    }

    // -----------------------------------------------------------------------------------------
    // ALTER TABLE
    // -----------------------------------------------------------------------------------------
}

/// CREATE SCHEMA: the schemas that exist (`public`, `pg_catalog`, `information_schema`) are the
/// only ones, so `IF NOT EXISTS` of one of them is a notice and the statement is done (what
/// migration tools send first); a schema of another name is refused, not created.
fn create_schema(name: &str, if_not_exists: bool) -> Result<QueryResult> {
    if name.starts_with("pg_") {
        return Err(
            SqlError::new("42939", format!("unacceptable schema name \"{name}\""))
                .with_detail("The prefix \"pg_\" is reserved for system schemas."),
        );
    }
    let exists = crate::system::namespace_oid(name).is_some();
    match (exists, if_not_exists) {
        (true, true) => Ok(QueryResult::command("CREATE SCHEMA").with_notice(
            "NOTICE",
            "42P06",
            format!("schema \"{name}\" already exists, skipping"),
        )),
        (true, false) => Err(SqlError::new(
            "42P06",
            format!("schema \"{name}\" already exists"),
        )),
        (false, _) => Err(SqlError::unsupported(format!(
            "CREATE SCHEMA {name} (tables live in schema public)"
        ))),
    }
}

/// 42703 for a key (PRIMARY KEY, UNIQUE) naming a column the table lacks.
fn missing_key_column(column: &str) -> SqlError {
    SqlError::new(
        "42703",
        format!("column \"{column}\" named in key does not exist"),
    )
}

fn set_primary_key(spec: &mut TableSpec, table: &str, columns: Vec<usize>) -> Result<()> {
    if spec.primary_key.is_some() {
        return Err(SqlError::new(
            "42P16",
            format!("multiple primary keys for table \"{table}\" are not allowed"),
        ));
    }
    spec.primary_key = Some(columns);
    Ok(())
}

fn column_def(
    table: &str,
    name: &str,
    data_type: &ast::DataType,
    engine: &Engine,
) -> Result<ColumnDef> {
    if let Some(ty) = serial_type(data_type) {
        return Ok(ColumnDef {
            nullable: false,
            default: Some(format!("nextval('{}')", sequence_name(table, name))),
            ..ColumnDef::plain(name, ty)
        });
    }
    Ok(ColumnDef::plain(name, convert_type_in(data_type, engine)?))
}

pub use crate::execution::sequences::owned_sequence as sequence_name;

/// A default as it is kept: `nextval('s'::regclass)` — how PostgreSQL and pg_dump write a
/// serial column's default — as `nextval('s')`, what a serial column gets (so a column whose
/// sequence is `<table>_<column>_seq` owns it again after a dump is restored); any other
/// expression as written.
pub(super) fn stored_default(expr: &ast::Expr) -> String {
    let text = expr.to_string();
    let argument = text
        .strip_prefix("nextval('")
        .and_then(|rest| rest.split_once('\''))
        .filter(|(_, rest)| rest.eq_ignore_ascii_case("::regclass)"))
        .map(|(argument, _)| crate::execution::sequences::relation_name(argument));
    match argument {
        Some(name)
            if name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_') =>
        {
            format!("nextval('{name}')")
        }
        _ => text,
    }
}

/// The sequences a table's serial columns own.
fn owned_sequences(table: &TableDef) -> Vec<String> {
    table
        .columns
        .iter()
        .filter(|c| {
            c.default.as_deref()
                == Some(&format!(
                    "nextval('{}')",
                    sequence_name(&table.name, &c.name)
                ))
        })
        .map(|c| sequence_name(&table.name, &c.name))
        .collect()
}

/// The columns a query gives a new relation (CREATE TABLE AS, CREATE VIEW): the `listed` names
/// first, then the query's own; each of the query's types (text where unknown, as PostgreSQL's).
/// More listed names than columns fails with `too_many` (42601); a repeated name with 42701.
fn named_columns(
    listed: &[String],
    query: &[crate::execution::plan::Column],
    too_many: &str,
) -> Result<Vec<(String, steady_types::DataType)>> {
    if listed.len() > query.len() {
        return Err(SqlError::new("42601", too_many));
    }
    let mut columns: Vec<(String, steady_types::DataType)> = Vec::with_capacity(query.len());
    for (at, column) in query.iter().enumerate() {
        let name = listed.get(at).unwrap_or(&column.name).clone();
        if columns.iter().any(|(n, _)| *n == name) {
            return Err(SqlError::new(
                "42701",
                format!("column \"{name}\" specified more than once"),
            ));
        }
        columns.push((name, column.ty.unwrap_or(steady_types::DataType::Text)));
    }
    Ok(columns)
}

/// `<table>_<columns>_<suffix>`, PostgreSQL's name for a constraint or index.
fn derived_name(table: &str, def: &TableDef, columns: &[usize], suffix: &str) -> String {
    let names: Vec<&str> = columns
        .iter()
        .map(|&c| def.columns[c].name.as_str())
        .collect();
    format!("{table}_{}_{suffix}", names.join("_"))
}

/// What an index element gives a derived index name: a column's name, or for an expression
/// PostgreSQL's choice — the function's name for a call, else `expr`.
fn element_name_part(element: &ast::Expr) -> String {
    if let Some(column) = plain_column(element) {
        return column;
    }
    match element {
        ast::Expr::Function(call) => object_name(&call.name).1,
        _ => "expr".to_owned(),
    }
}

/// The column an index element names, when it is a plain (or parenthesised) column.
fn plain_column(expr: &ast::Expr) -> Option<String> {
    match expr {
        ast::Expr::Identifier(ident) => Some(normalize_ident(ident)),
        ast::Expr::Nested(inner) => plain_column(inner),
        _ => None,
    }
}

/// A table definition of just columns, for checking defaults before the table exists.
fn probe_table(name: &str, columns: &[ColumnDef]) -> TableDef {
    TableDef {
        id: 0,
        name: name.to_owned(),
        space: 0,
        columns: columns.to_vec(),
        primary_key: vec![],
        indexes: vec![],
        constraints: vec![],
        materialized: None,
    }
}

/// The plain column names of an index definition (expressions are refused).
fn index_column_names(columns: &[ast::IndexColumn]) -> Result<Vec<String>> {
    columns
        .iter()
        .map(|c| match &c.column.expr {
            ast::Expr::Identifier(ident) => Ok(normalize_ident(ident)),
            other => Err(SqlError::unsupported(format!(
                "index on expression {other}"
            ))),
        })
        .collect()
}

/// The names of a DROP list of `kind` objects (see [`public_object_name`]); with IF EXISTS, a
/// name in a schema that does not exist, or one that a system schema does not hold, is skipped
/// with PostgreSQL's notice, as a missing object is.
pub(super) fn drop_names(
    names: &[ast::ObjectName],
    if_exists: bool,
    kind: &str,
    mut result: QueryResult,
) -> Result<(Vec<String>, QueryResult)> {
    let mut found = Vec::new();
    for name in names {
        let skipped = match (object_name(name), if_exists) {
            ((Some(schema), _), true) if crate::system::namespace_oid(&schema).is_none() => {
                Some(missing_schema(&schema).message)
            }
            ((Some(schema), object), true)
                if schema != "public"
                    && crate::system::lookup(Some(&schema), &object).is_none() =>
            {
                Some(format!("{kind} \"{object}\" does not exist"))
            }
            _ => None,
        };
        match skipped {
            Some(message) => {
                result = result.with_notice("NOTICE", "00000", format!("{message}, skipping"));
            }
            None => found.push(public_object_name(name)?),
        }
    }
    Ok((found, result))
}

/// The positions of the columns of a CREATE INDEX's `INCLUDE (...)` (see `IndexDef::include`).
fn included_columns(table: &TableDef, names: &[ast::Ident]) -> Result<Vec<usize>> {
    names
        .iter()
        .map(|ident| {
            let name = normalize_ident(ident);
            table
                .column(&name)
                .filter(|_| !is_hidden(&name))
                .ok_or_else(|| SqlError::undefined_column(&name))
        })
        .collect()
}
