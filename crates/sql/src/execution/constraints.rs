//! Constraints the SQL layer enforces on top of the engine: NOT NULL, CHECK, foreign keys (ON
//! DELETE NO ACTION / RESTRICT / CASCADE / SET NULL, ON UPDATE NO ACTION / RESTRICT), and the
//! names and messages of unique violations.
//!
//! CHECK constraints and foreign keys are stored in [`TableDef::constraints`] as JSON; a CHECK
//! keeps its expression as SQL text, bound with each INSERT or UPDATE plan ([`CheckExpr`]) and
//! evaluated on every new row: false fails the write (23514), true and NULL pass, as in
//! PostgreSQL. A child row's parent is looked up
//! and locked (so it cannot be deleted before the child's transaction ends); deleting or changing
//! a referenced key looks for child rows through an index on the child's key columns when one
//! exists, else by a scan of the child table. ON DELETE CASCADE and SET NULL lock each child
//! row, delete it or set its key columns to NULL in the same transaction, and go on to the rows
//! that reference *it* — from a work list, not by recursion, so a deep chain (a tree of rows
//! referencing rows of their own table) cannot overflow the stack; a row is deleted before its
//! own children are looked at, so a row that references itself ends the walk.

use std::ops::Bound;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use steady_engine::catalog::TableDef;
use steady_engine::codec::encode_key;
use steady_engine::engine::Engine;
use steady_engine::error::EngineError;
use steady_engine::table::index_key;
use steady_types::Value;

use crate::error::{Result, SqlError};
use crate::execution::executor::ExecCtx;
use crate::execution::fk_checks::PendingCheck;

/// Column names the SQL layer gives dropped columns (kept in rows, hidden from SQL).
pub const DROPPED_PREFIX: &str = "........pg.dropped.";

/// The prefix of every column name hidden from SQL.
const HIDDEN_PREFIX: &str = "........pg.";

/// Column names of the hidden columns that hold an expression index's values: the prefix, then
/// the expression's SQL text (a generated column of that expression, hidden from SQL).
pub const EXPRESSION_PREFIX: &str = "........pg.expr.";

/// Column names of the hidden columns that hold a partial index's values: the prefix, then
/// `<element> WHERE <predicate>`; the column is `CASE WHEN predicate THEN element END`, NULL —
/// never in conflict, never found by a key — for the rows outside the index.
pub const PARTIAL_PREFIX: &str = "........pg.part.";

/// Whether a column is hidden from SQL: a dropped column or an index's hidden column.
pub fn is_hidden(name: &str) -> bool {
    name.starts_with(HIDDEN_PREFIX)
}

/// The name of the hidden column holding the values of expression `text`.
pub fn expression_column(text: &str) -> String {
    format!("{EXPRESSION_PREFIX}{text}")
}

/// The expression whose values a hidden column holds, if it is an expression index's column.
pub fn column_expression(name: &str) -> Option<&str> {
    name.strip_prefix(EXPRESSION_PREFIX)
}

/// The name of the hidden column of a partial index's `element` under `predicate`.
pub fn partial_column(element: &str, predicate: &str) -> String {
    format!("{PARTIAL_PREFIX}{element} WHERE {predicate}")
}

/// A partial index column's element and predicate.
pub fn column_partial(name: &str) -> Option<(&str, &str)> {
    name.strip_prefix(PARTIAL_PREFIX)?.split_once(" WHERE ")
}

/// Whether a column is an index's hidden column (an expression's or a partial index's).
pub fn is_index_column(name: &str) -> bool {
    column_expression(name).is_some() || column_partial(name).is_some()
}

/// How messages and EXPLAIN name a column: an expression index's column by its expression.
pub fn shown_column(name: &str) -> &str {
    column_expression(name)
        .or_else(|| column_partial(name).map(|(element, _)| element))
        .unwrap_or(name)
}

/// A constraint kept in a table definition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Constraint {
    ForeignKey(ForeignKey),
    Check(Check),
}

/// `CONSTRAINT name CHECK (expression)`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Check {
    pub name: String,
    /// The expression, as SQL text over the table's columns.
    pub expression: String,
}

/// A CHECK constraint bound over a table's row.
#[derive(Debug, Clone)]
pub struct CheckExpr {
    pub name: String,
    pub expr: crate::execution::expr::Expr,
    /// Set for a view's check option (the view's name): its error is 44000.
    pub view: Option<String>,
}

pub fn checks(table: &TableDef) -> Vec<Check> {
    decoded(table)
        .filter_map(|c| match c {
            Constraint::Check(check) => Some(check),
            Constraint::ForeignKey(_) => None,
        })
        .collect()
}

/// Fails with 23514 if a CHECK constraint is false for the new row `values`.
pub fn check_constraints(
    checks: &[CheckExpr],
    table: &TableDef,
    values: &[Value],
    ctx: &mut ExecCtx,
) -> Result<()> {
    for check in checks {
        if check.expr.eval(values, ctx)? == Value::Boolean(false) {
            let violation = match &check.view {
                Some(view) => SqlError::new(
                    "44000",
                    format!("new row violates check option for view \"{view}\""),
                ),
                None => check_violation(&table.name, &check.name),
            };
            return Err(violation.with_detail(format!(
                "Failing row contains ({}).",
                row_text(table, values)
            )));
        }
    }
    Ok(())
}

pub fn check_violation(table: &str, name: &str) -> SqlError {
    SqlError::new(
        "23514",
        format!("new row for relation \"{table}\" violates check constraint \"{name}\""),
    )
}

/// A row as PostgreSQL's "Failing row contains" shows it (dropped columns left out).
fn row_text(table: &TableDef, values: &[Value]) -> String {
    let shown: Vec<String> = table
        .columns
        .iter()
        .zip(values)
        .filter(|(column, _)| !is_hidden(&column.name))
        .map(|(_, v)| {
            if v.is_null() {
                "null".to_owned()
            } else {
                v.to_string()
            }
        })
        .collect();
    shown.join(", ")
}

/// `FOREIGN KEY (columns) REFERENCES table (ref_columns) [ON DELETE action]`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ForeignKey {
    pub name: String,
    pub columns: Vec<usize>,
    pub table: String,
    pub ref_columns: Vec<usize>,
    #[serde(flatten)]
    pub actions: Actions,
}

/// What a foreign key does besides requiring its parent: its ON DELETE, ON UPDATE and when it
/// is checked. Each is absent from keys stored before it existed, and reads as the default.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Actions {
    #[serde(default)]
    pub on_delete: OnDelete,
    /// `ON UPDATE RESTRICT` (else NO ACTION, the only other ON UPDATE SteadyDB takes).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub update_restrict: bool,
    #[serde(default)]
    pub deferral: Deferral,
}

impl Actions {
    /// The clauses `pg_get_constraintdef` ends a foreign key with.
    pub fn clauses(&self) -> String {
        let update = if self.update_restrict {
            " ON UPDATE RESTRICT"
        } else {
            ""
        };
        format!(
            "{update}{}{}",
            self.on_delete.clause(),
            self.deferral.clause()
        )
    }
}

/// When a foreign key is checked (PostgreSQL's `DEFERRABLE` and `INITIALLY ...`): at the end
/// of each statement, or — deferred — at the commit ([`crate::execution::fk_checks`]).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Deferral {
    #[default]
    NotDeferrable,
    /// `DEFERRABLE INITIALLY IMMEDIATE`: checked per statement until SET CONSTRAINTS defers it.
    Immediate,
    /// `DEFERRABLE INITIALLY DEFERRED`: checked at the commit unless SET CONSTRAINTS says
    /// IMMEDIATE.
    Deferred,
}

impl Deferral {
    pub fn deferrable(self) -> bool {
        self != Deferral::NotDeferrable
    }

    pub fn initially_deferred(self) -> bool {
        self == Deferral::Deferred
    }

    /// The words `pg_get_constraintdef` ends a foreign key with.
    pub fn clause(self) -> &'static str {
        match self {
            Deferral::NotDeferrable => "",
            Deferral::Immediate => " DEFERRABLE",
            Deferral::Deferred => " DEFERRABLE INITIALLY DEFERRED",
        }
    }
}

/// What deleting a referenced row does to the rows that reference it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum OnDelete {
    /// The delete fails while a row references the key (checked at once, as RESTRICT).
    #[default]
    NoAction,
    Restrict,
    /// The referencing rows are deleted too.
    Cascade,
    /// The referencing rows' key columns become NULL.
    SetNull,
}

impl OnDelete {
    /// `pg_constraint.confdeltype`.
    pub fn code(self) -> &'static str {
        match self {
            OnDelete::NoAction => "a",
            OnDelete::Restrict => "r",
            OnDelete::Cascade => "c",
            OnDelete::SetNull => "n",
        }
    }

    /// The clause `pg_get_constraintdef` ends a foreign key with (none for NO ACTION).
    pub fn clause(self) -> &'static str {
        match self {
            OnDelete::NoAction => "",
            OnDelete::Restrict => " ON DELETE RESTRICT",
            OnDelete::Cascade => " ON DELETE CASCADE",
            OnDelete::SetNull => " ON DELETE SET NULL",
        }
    }
}

pub fn encode(constraint: &Constraint) -> String {
    serde_json::to_string(constraint).expect("constraints serialise")
}

/// The table's constraints, decoded (an entry that does not decode is skipped).
fn decoded(table: &TableDef) -> impl Iterator<Item = Constraint> + '_ {
    table
        .constraints
        .iter()
        .filter_map(|c| serde_json::from_str(c).ok())
}

pub fn foreign_keys(table: &TableDef) -> Vec<ForeignKey> {
    decoded(table)
        .filter_map(|c| match c {
            Constraint::ForeignKey(fk) => Some(fk),
            Constraint::Check(_) => None,
        })
        .collect()
}

/// Every foreign key of every table that references `table`, with its table.
pub fn referencing(
    engine: &steady_engine::engine::Engine,
    table: &str,
) -> Vec<(Arc<TableDef>, ForeignKey)> {
    engine
        .tables()
        .into_iter()
        .flat_map(|t| {
            foreign_keys(&t)
                .into_iter()
                .filter(|fk| fk.table == table)
                .map(move |fk| (t.clone(), fk))
        })
        .collect()
}

/// Names of the constraint behind a unique index: `<table>_pkey` for the primary key.
pub fn index_constraint_name(table: &TableDef, index: u64) -> String {
    if index == table.id {
        return format!("{}_pkey", table.name);
    }
    table
        .indexes
        .iter()
        .find(|i| i.id == index)
        .map_or_else(|| format!("{}_key", table.name), |i| i.name.clone())
}

fn key_text(table: &TableDef, columns: &[usize], values: &[Value]) -> String {
    let names: Vec<&str> = columns
        .iter()
        .map(|&c| shown_column(&table.columns[c].name))
        .collect();
    let shown: Vec<String> = columns.iter().map(|&c| values[c].to_string()).collect();
    format!("({})=({})", names.join(", "), shown.join(", "))
}

/// Turns an engine error into the SQL error a client expects, naming the constraint and key.
pub fn write_error(err: EngineError, table: &TableDef, values: &[Value]) -> SqlError {
    match err {
        EngineError::UniqueViolation { index } => {
            let columns = if index == table.id {
                table.primary_key.clone()
            } else {
                table
                    .indexes
                    .iter()
                    .find(|i| i.id == index)
                    .map(|i| i.columns.clone())
                    .unwrap_or_default()
            };
            SqlError::new(
                "23505",
                format!(
                    "duplicate key value violates unique constraint \"{}\"",
                    index_constraint_name(table, index)
                ),
            )
            .with_detail(format!(
                "Key {} already exists.",
                key_text(table, &columns, values)
            ))
        }
        other => other.into(),
    }
}

/// NOT NULL of every column, then the primary key's columns.
pub fn check_not_null(table: &TableDef, values: &[Value]) -> Result<()> {
    for (column, value) in table.columns.iter().zip(values) {
        if value.is_null()
            && (!column.nullable || table.primary_key.contains(&index_of(table, &column.name)))
        {
            return Err(SqlError::new(
                "23502",
                format!(
                    "null value in column \"{}\" of relation \"{}\" violates not-null constraint",
                    column.name, table.name
                ),
            ));
        }
    }
    Ok(())
}

fn index_of(table: &TableDef, name: &str) -> usize {
    table.column(name).unwrap_or(usize::MAX)
}

/// Every foreign key of `table` finds its parent row for the row `values` (NULL keys pass). A key
/// that finds none is checked again when the statement ends, or at the commit when the foreign
/// key is deferred ([`crate::execution::fk_checks`]): a later row of the statement, or of the transaction, may
/// bring the parent.
pub fn check_parents(ctx: &mut ExecCtx, table: &TableDef, values: &[Value]) -> Result<()> {
    for fk in foreign_keys(table) {
        if let Some((key, error)) = missing_parent(ctx, table, &fk, values)? {
            let check = PendingCheck {
                child: table.name.clone(),
                constraint: fk.name.clone(),
                key,
                restrict: false,
                error,
            };
            ctx.foreign_key_checks().queue(&fk, check);
        }
    }
    Ok(())
}

/// Fails unless every foreign key of `table` finds its parent row for the row `values` now
/// (ADD FOREIGN KEY's check of the rows a table holds, which is never deferred).
pub fn require_parents(ctx: &mut ExecCtx, table: &TableDef, values: &[Value]) -> Result<()> {
    for fk in foreign_keys(table) {
        if let Some((_, error)) = missing_parent(ctx, table, &fk, values)? {
            return Err(error);
        }
    }
    Ok(())
}

/// The parent key (as the parent's types) that the row `values` of `table` does not find
/// through `fk`, with the error that says so; None when the key is NULL or found.
fn missing_parent(
    ctx: &mut ExecCtx,
    table: &TableDef,
    fk: &ForeignKey,
    values: &[Value],
) -> Result<Option<(Vec<Value>, SqlError)>> {
    if fk.columns.iter().any(|&c| values[c].is_null()) {
        return Ok(None);
    }
    let engine = ctx.engine()?.clone();
    let parent = engine
        .table(&fk.table)
        .ok_or_else(|| SqlError::undefined_table(&fk.table))?;
    let key: Vec<Value> = fk
        .columns
        .iter()
        .zip(&fk.ref_columns)
        .map(|(&c, &r)| values[c].cast_to(&parent.columns[r].data_type))
        .collect::<std::result::Result<_, _>>()?;
    if parent_exists(ctx, &parent, &fk.ref_columns, &key)? {
        return Ok(None);
    }
    let error = SqlError::new(
        "23503",
        format!(
            "insert or update on table \"{}\" violates foreign key constraint \"{}\"",
            table.name, fk.name
        ),
    )
    .with_detail(format!(
        "Key {} is not present in table \"{}\".",
        key_text(table, &fk.columns, values),
        fk.table
    ));
    Ok(Some((key, error)))
}

/// Whether `parent` has a row with `key` in `columns`; a primary-key match is locked.
pub(crate) fn parent_exists(
    ctx: &mut ExecCtx,
    parent: &TableDef,
    columns: &[usize],
    key: &[Value],
) -> Result<bool> {
    if columns == parent.primary_key.as_slice() {
        let pk = encode_key(key);
        return Ok(ctx.txn()?.lock_table_row(parent, &pk)?.is_some());
    }
    let index = parent
        .indexes
        .iter()
        .find(|i| i.unique && i.columns == columns)
        .ok_or_else(|| {
            SqlError::new(
                "42830",
                format!(
                    "there is no unique constraint matching given keys for referenced table \"{}\"",
                    parent.name
                ),
            )
        })?;
    let encoded = encode_key(key);
    let rows = ctx.txn()?.index_rows(
        parent,
        index,
        Bound::Included(&encoded),
        Bound::Included(&encoded),
    )?;
    Ok(!rows.is_empty())
}

/// The rows referencing the key a parent row `old` is losing: a change of the key (`new`) fails
/// while one exists; a delete fails, or deletes them (CASCADE), or sets their keys to NULL (SET
/// NULL), by each foreign key's ON DELETE — and so on for the rows those changes remove keys
/// from (see the module documentation).
pub fn check_no_children(
    ctx: &mut ExecCtx,
    table: &TableDef,
    old: &[Value],
    new: Option<&[Value]>,
) -> Result<()> {
    let engine = ctx.engine()?.clone();
    if new.is_some() {
        return restrict_key_change(ctx, &engine, table, old, new);
    }
    let mut deleted: Vec<(Arc<TableDef>, Vec<Value>)> = Vec::new();
    delete_children(ctx, &engine, table, old, &mut deleted)?;
    while let Some((table, row)) = deleted.pop() {
        // A cascade down a long chain is long work: cancel and statement_timeout end it.
        ctx.check_interrupt()?;
        delete_children(ctx, &engine, &table, &row, &mut deleted)?;
    }
    Ok(())
}

/// Applies each ON DELETE of the keys `table`'s row `old` had; the child rows deleted by a
/// CASCADE go onto `deleted`.
fn delete_children(
    ctx: &mut ExecCtx,
    engine: &Engine,
    table: &TableDef,
    old: &[Value],
    deleted: &mut Vec<(Arc<TableDef>, Vec<Value>)>,
) -> Result<()> {
    for (child, fk) in referencing(engine, &table.name) {
        let key: Vec<Value> = fk.ref_columns.iter().map(|&r| old[r].clone()).collect();
        if key.iter().any(Value::is_null) {
            continue;
        }
        match fk.actions.on_delete {
            OnDelete::NoAction | OnDelete::Restrict => {
                let restrict = fk.actions.on_delete == OnDelete::Restrict;
                queue_if_referenced(ctx, table, (&child, &fk), old, key, restrict)?;
            }
            OnDelete::Cascade => {
                for (pk, row) in locked_children(ctx, &child, &fk, &key)? {
                    ctx.txn()?.delete_row(&child, &pk)?;
                    deleted.push((child.clone(), row));
                }
            }
            OnDelete::SetNull => {
                for (pk, row) in locked_children(ctx, &child, &fk, &key)? {
                    let mut nulled = row.clone();
                    for &c in &fk.columns {
                        nulled[c] = Value::Null;
                    }
                    set_null_allowed(&child)?;
                    check_not_null(&child, &nulled)?;
                    restrict_key_change(ctx, engine, &child, &row, Some(&nulled))?;
                    ctx.txn()?.update_row(&child, &pk, &nulled)?;
                }
            }
        }
    }
    Ok(())
}

/// ON DELETE SET NULL writes a child row without the checks an UPDATE plan binds: refused where
/// the child has CHECK constraints or generated columns, which it would skip.
fn set_null_allowed(child: &TableDef) -> Result<()> {
    let checked = decoded(child).any(|c| matches!(c, Constraint::Check(_)));
    if checked || child.columns.iter().any(|c| c.generated.is_some()) {
        return Err(SqlError::unsupported(format!(
            "ON DELETE SET NULL into table \"{}\", which has CHECK constraints or generated columns",
            child.name
        )));
    }
    Ok(())
}

/// The child rows referencing `key` through `fk`, each locked and read again: a row whose key
/// changed meanwhile is left out.
fn locked_children(
    ctx: &mut ExecCtx,
    child: &TableDef,
    fk: &ForeignKey,
    key: &[Value],
) -> Result<Vec<(Vec<u8>, Vec<Value>)>> {
    let mut locked = Vec::new();
    for (pk, _) in child_rows(ctx, child, &fk.columns, key, false)? {
        let Some(row) = ctx.txn()?.lock_table_row(child, &pk)? else {
            continue;
        };
        let references = fk
            .columns
            .iter()
            .zip(key)
            .all(|(&c, k)| row[c].compare(k).is_some_and(|o| o.is_eq()));
        if references {
            locked.push((pk, row));
        }
    }
    Ok(locked)
}

/// A change of a referenced key (UPDATE of the parent, or SET NULL of a child that is itself a
/// parent) fails while a row references the old key: ON UPDATE is NO ACTION or RESTRICT.
fn restrict_key_change(
    ctx: &mut ExecCtx,
    engine: &Engine,
    table: &TableDef,
    old: &[Value],
    new: Option<&[Value]>,
) -> Result<()> {
    for (child, fk) in referencing(engine, &table.name) {
        let key: Vec<Value> = fk.ref_columns.iter().map(|&r| old[r].clone()).collect();
        if key.iter().any(Value::is_null) {
            continue;
        }
        if let Some(new) = new {
            if fk
                .ref_columns
                .iter()
                .all(|&r| old[r].compare(&new[r]).is_some_and(|o| o.is_eq()))
            {
                continue;
            }
        }
        queue_if_referenced(
            ctx,
            table,
            (&child, &fk),
            old,
            key,
            fk.actions.update_restrict,
        )?;
    }
    Ok(())
}

/// A row of `table` lost the key `old` held in `fk`'s referenced columns (`key`): while rows of
/// `child` reference it, the check is made again when the statement ends — under RESTRICT
/// without letting a row that holds the key again count — or, under NO ACTION with `fk`
/// deferred, at the commit ([`crate::execution::fk_checks`]).
fn queue_if_referenced(
    ctx: &mut ExecCtx,
    table: &TableDef,
    (child, fk): (&TableDef, &ForeignKey),
    old: &[Value],
    key: Vec<Value>,
    restrict: bool,
) -> Result<()> {
    if !references(ctx, child, fk, &key)? {
        return Ok(());
    }
    let check = PendingCheck {
        child: child.name.clone(),
        constraint: fk.name.clone(),
        key,
        restrict,
        error: still_referenced(table, fk, child, old),
    };
    ctx.foreign_key_checks().queue(fk, check);
    Ok(())
}

/// Whether a row of `child` references the parent key `key` through `fk`.
pub(crate) fn references(
    ctx: &mut ExecCtx,
    child: &TableDef,
    fk: &ForeignKey,
    key: &[Value],
) -> Result<bool> {
    Ok(!child_rows(ctx, child, &fk.columns, key, true)?.is_empty())
}

fn still_referenced(
    table: &TableDef,
    fk: &ForeignKey,
    child: &TableDef,
    old: &[Value],
) -> SqlError {
    SqlError::new(
        "23503",
        format!(
            "update or delete on table \"{}\" violates foreign key constraint \"{}\" on table \"{}\"",
            table.name, fk.name, child.name
        ),
    )
    .with_detail(format!(
        "Key {} is still referenced from table \"{}\".",
        key_text(table, &fk.ref_columns, old),
        child.name
    ))
}

/// The rows of `child` whose `columns` hold `key` (primary key and values), through an index on
/// those columns when one exists, else by a scan; only the first when `first_only`.
fn child_rows(
    ctx: &mut ExecCtx,
    child: &TableDef,
    columns: &[usize],
    key: &[Value],
    first_only: bool,
) -> Result<Vec<(Vec<u8>, Vec<Value>)>> {
    let key: Vec<Value> = columns
        .iter()
        .zip(key)
        .map(|(&c, v)| v.cast_to(&child.columns[c].data_type))
        .collect::<std::result::Result<_, _>>()?;
    let encoded = encode_key(&key);
    let matches = |values: &[Value]| index_key(values, columns) == encoded;
    let mut found = Vec::new();
    if let Some(index) = child
        .indexes
        .iter()
        .find(|i| i.columns.starts_with(columns))
    {
        let rows = ctx.txn()?.index_rows(
            child,
            index,
            Bound::Included(&encoded),
            Bound::Included(&encoded),
        )?;
        found.extend(rows.into_iter().filter(|(_, v)| matches(v)));
        found.truncate(if first_only { 1 } else { found.len() });
        return Ok(found);
    }
    let range = if child.primary_key.starts_with(columns) {
        (
            Bound::Included(encoded.clone()),
            steady_engine::codec::prefix_successor(&encoded)
                .map_or(Bound::Unbounded, Bound::Excluded),
        )
    } else {
        (Bound::Unbounded, Bound::Unbounded)
    };
    let scan = ctx.txn()?.scan_rows(
        child,
        crate::execution::executor::as_ref(&range.0),
        crate::execution::executor::as_ref(&range.1),
    )?;
    for row in scan {
        let row = row?;
        if matches(&row.1) {
            found.push(row);
            if first_only {
                break;
            }
        }
    }
    Ok(found)
}
