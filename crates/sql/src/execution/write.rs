//! Writes: the INSERT, UPDATE and DELETE nodes of a plan and how they run — INSERT from VALUES or
//! a query with ON CONFLICT and RETURNING, UPDATE and DELETE (with the `DELETE ... LIMIT n`
//! extension) over their target rows. The planner builds these nodes
//! (`planner::bind_write`); the executor opens them like any other node, and their rows are the
//! RETURNING rows (the count of rows written goes to `ExecCtx::take_changed`).
//!
//! INSERT without ON CONFLICT into a table without foreign keys hands the engine [`RUN_ROWS`]
//! rows at a time (the engine puts runs of ascending keys into a leaf at once); errors still come
//! in row order. Its source streams when it reads no table; otherwise every source row is
//! evaluated first, so the statement never sees its own rows.
//!
//! Every new version of a row — inserted, updated, or updated by ON CONFLICT — has its values
//! assigned to the column types, then its generated columns computed from it, then NOT NULL and
//! the CHECK constraints checked, in that order (PostgreSQL's).
//!
//! UPDATE and DELETE never walk an index and the table in step (seed 000): they first collect the
//! primary keys of a batch of candidate rows — from the secondary index alone when the planner
//! chose one, else from a scan in key order — sort them, and then visit each row once, in
//! primary-key order; then the next batch, after the walk's last key. A batch holds at most
//! [`CANDIDATE_BATCH`] keys, and under a LIMIT only as many as rows are still to take, so the
//! memory a statement holds is bounded and `DELETE ... LIMIT n` reads about n rows' worth of the
//! walk, not all of it. An UPDATE of a column of the key it walks by (which could move a row
//! ahead of the walk) and `DELETE ... ORDER BY <primary key> LIMIT n` through an index collect
//! every candidate in one batch ([`Walk::Whole`]). Each row is visited thus:
//! the row must be visible to the statement's snapshot and match the WHERE clause, then it is
//! locked and the clause re-checked on the newest version (READ COMMITTED's re-check), and only
//! then changed. The candidates of a statement that writes in batches skip the lock where they
//! can (`Target::write_unlocked`): a row whose version in place is the one the
//! snapshot saw is changed if it is still there and unlocked when written (the engine checks
//! that under the leaf's latch; the new version is the writer's implicit lock), and only the
//! rows refused go through the lock and the re-check. Rows are read and locked [`READ_BATCH`] at
//! a time and written [`WRITE_BATCH`] at a time (the engine writes a batch in runs, a
//! mini-transaction per leaf); both batches are small, so the pages of a batch are still in the
//! pool when it is written, and each clustered page is read about once per statement. A DELETE
//! without RETURNING whose WHERE clause reads only the row does better: each batch is read,
//! checked and deleted in one visit of each leaf ([`Target::delete_in_place`]), the clause
//! evaluated with the leaf latched; only the rows it cannot decide there take the two-step way.

use std::ops::Bound;
use std::sync::Arc;

use steady_engine::catalog::{RowDecoder, TableDef};
use steady_engine::engine::DeleteOutcome;
use steady_engine::error::EngineError;
use steady_engine::table::primary_key;
use steady_types::{DataType, Value};

use crate::error::{Result, SqlError};
use crate::execution::constraints::{
    check_constraints, check_no_children, check_not_null, check_parents, foreign_keys, referencing,
    write_error, CheckExpr,
};
use crate::execution::executor::{
    as_ref, collect, encode_range, open, single_key, typed_param, ExecCtx, Row,
};
use crate::execution::expr::Expr;
use crate::execution::plan::{mark_columns, Access, Column, Plan};
use crate::types::ops;

/// The most rows an INSERT hands the engine at once (see [`InsertPlan::insert_in_runs`]).
const RUN_ROWS: usize = 1024;

/// The values an INSERT's source gives for one row (None where a target takes its default).
type SourceRow = Vec<Option<Value>>;

/// Pulls the next source row of an INSERT.
type NextSource<'a> = dyn FnMut(&mut ExecCtx) -> Result<Option<SourceRow>> + 'a;

/// `RETURNING` expressions over a table row.
#[derive(Debug, Clone)]
pub struct Returning {
    pub exprs: Vec<Expr>,
    pub columns: Vec<Column>,
}

/// What a write did: how many rows it wrote, and the rows its RETURNING clause gives.
pub struct Written {
    pub count: u64,
    pub returned: Vec<Row>,
}

/// The RETURNING rows of the rows a write wrote (none without RETURNING).
fn returning_rows(
    returning: &Option<Returning>,
    rows: &[Row],
    ctx: &mut ExecCtx,
) -> Result<Vec<Row>> {
    let Some(returning) = returning else {
        return Ok(vec![]);
    };
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        out.push(
            returning
                .exprs
                .iter()
                .map(|e| e.eval(row, ctx))
                .collect::<Result<Row>>()?,
        );
    }
    Ok(out)
}

#[derive(Debug, Clone)]
pub enum InsertSource {
    /// Rows of expressions; `None` is DEFAULT.
    Values(Vec<Vec<Option<Expr>>>),
    Query(Box<Plan>),
}

#[derive(Debug, Clone)]
pub enum ConflictAction {
    Nothing,
    /// Assignments and filter over `existing row ++ proposed row`.
    Update {
        assignments: Vec<(usize, Expr)>,
        filter: Option<Expr>,
    },
}

#[derive(Debug, Clone)]
pub struct OnConflict {
    /// The unique index (table id for the primary key) it applies to; `None`: any.
    pub index: Option<u64>,
    pub action: ConflictAction,
}

#[derive(Debug, Clone)]
pub struct InsertPlan {
    pub table: Arc<TableDef>,
    pub targets: Vec<usize>,
    pub source: InsertSource,
    pub defaults: Vec<Option<Expr>>,
    pub on_conflict: Option<OnConflict>,
    pub returning: Option<Returning>,
    /// The table's CHECK constraints, bound over its row.
    pub checks: Vec<CheckExpr>,
    /// The table's generated columns and their expressions, bound over its row.
    pub generated: Vec<(usize, Expr)>,
}

impl InsertPlan {
    pub fn run(&self, ctx: &mut ExecCtx) -> Result<Written> {
        let mut written = Vec::new();
        let in_runs = self.on_conflict.is_none() && foreign_keys(&self.table).is_empty();
        let count = match (&self.source, ctx.take_param_rows()) {
            (_, Some(rows)) => {
                let types = self.parameter_types()?;
                let mut rows = rows.into_iter();
                let mut next = |_: &mut ExecCtx| {
                    rows.next()
                        .map(|row| parameter_row(row, &types))
                        .transpose()
                };
                if in_runs {
                    self.insert_in_runs(&mut next, &mut written, ctx)?
                } else {
                    let sources =
                        std::iter::from_fn(|| next(ctx).transpose()).collect::<Result<_>>()?;
                    self.insert_each(sources, &mut written, ctx)?
                }
            }
            (InsertSource::Query(plan), None) if in_runs && reads_no_table(plan) => {
                let mut source = open(plan, ctx, &mut 0)?;
                let mut next = |ctx: &mut ExecCtx| {
                    Ok(source
                        .next(ctx)?
                        .map(|row| row.into_iter().map(Some).collect()))
                };
                self.insert_in_runs(&mut next, &mut written, ctx)?
            }
            (_, None) => {
                let sources = self.materialise(ctx)?;
                if in_runs {
                    let mut sources = sources.into_iter();
                    self.insert_in_runs(&mut |_| Ok(sources.next()), &mut written, ctx)?
                } else {
                    self.insert_each(sources, &mut written, ctx)?
                }
            }
        };
        let returned = returning_rows(&self.returning, &written, ctx)?;
        Ok(Written { count, returned })
    }

    /// The types of the parameters `$1, …` that are the one row of `VALUES`, in order — the
    /// only source that rows of parameter values can replace (`ExecCtx::take_param_rows`).
    pub(crate) fn parameter_types(&self) -> Result<Vec<Option<DataType>>> {
        let InsertSource::Values(rows) = &self.source else {
            return Err(not_a_parameter_row());
        };
        let [row] = rows.as_slice() else {
            return Err(not_a_parameter_row());
        };
        row.iter()
            .enumerate()
            .map(|(i, expr)| match expr {
                Some(Expr::Param { index, ty }) if *index == i => Ok(*ty),
                _ => Err(not_a_parameter_row()),
            })
            .collect()
    }

    /// Every source row, evaluated before the first is inserted (a query reading the target table
    /// must not see the statement's own rows).
    fn materialise(&self, ctx: &mut ExecCtx) -> Result<Vec<SourceRow>> {
        Ok(match &self.source {
            InsertSource::Values(rows) => {
                let mut out = Vec::with_capacity(rows.len());
                for row in rows {
                    let values = row
                        .iter()
                        .map(|e| e.as_ref().map(|e| e.eval(&[], ctx)).transpose())
                        .collect::<Result<Vec<_>>>()?;
                    out.push(values);
                }
                out
            }
            InsertSource::Query(plan) => collect(plan, ctx)?
                .into_iter()
                .map(|row| row.into_iter().map(Some).collect())
                .collect(),
        })
    }

    /// Inserts row by row, each with its foreign-key checks and ON CONFLICT action; returns the
    /// count and keeps the written rows for RETURNING.
    fn insert_each(
        &self,
        sources: Vec<SourceRow>,
        written: &mut Vec<Row>,
        ctx: &mut ExecCtx,
    ) -> Result<u64> {
        let mut count = 0;
        let mut updated_keys: Vec<Vec<u8>> = Vec::new();
        for source in sources {
            let values = self.full_row(source, ctx)?;
            if let Some(row) = self.insert_one(values, &mut updated_keys, ctx)? {
                count += 1;
                if self.returning.is_some() {
                    written.push(row);
                }
            }
        }
        Ok(count)
    }

    /// Inserts into a table without foreign keys and without ON CONFLICT, [`RUN_ROWS`] rows at a
    /// time through `Transaction::insert_rows` (runs of ascending keys go into a leaf at once).
    /// Errors come in row order, as one by one: a row that fails its NOT NULL check ends the
    /// statement after the rows before it are inserted.
    fn insert_in_runs(
        &self,
        next_source: &mut NextSource<'_>,
        written: &mut Vec<Row>,
        ctx: &mut ExecCtx,
    ) -> Result<u64> {
        let mut count = 0;
        let mut exhausted = false;
        while !exhausted {
            let mut chunk = Vec::with_capacity(RUN_ROWS);
            let mut failed = None;
            while chunk.len() < RUN_ROWS {
                let row = next_source(ctx).and_then(|source| {
                    let Some(source) = source else {
                        return Ok(None);
                    };
                    let values = self.full_row(source, ctx)?;
                    check_not_null(&self.table, &values)?;
                    check_constraints(&self.checks, &self.table, &values, ctx)?;
                    Ok(Some(values))
                });
                match row {
                    Ok(Some(values)) => chunk.push(values),
                    Ok(None) => {
                        exhausted = true;
                        break;
                    }
                    Err(err) => {
                        failed = Some(err);
                        break;
                    }
                }
            }
            ctx.txn()?
                .insert_rows(&self.table, &chunk)
                .map_err(|(at, err)| write_error(err, &self.table, &chunk[at]))?;
            count += chunk.len() as u64;
            if let Some(err) = failed {
                return Err(err);
            }
            if self.returning.is_some() {
                written.append(&mut chunk);
            }
        }
        Ok(count)
    }

    /// A whole table row from the target values, with defaults for the other columns.
    fn full_row(&self, source: Vec<Option<Value>>, ctx: &mut ExecCtx) -> Result<Row> {
        let mut values = if self.gives_every_column(&source) {
            // Collected in place: no allocation (an Option<Value> is as large as a Value).
            source
                .into_iter()
                .map(|v| v.unwrap_or(Value::Null))
                .collect()
        } else {
            self.with_defaults(source, ctx)?
        };
        assign_types(&self.table, &mut values)?;
        fill_generated(&self.generated, &self.table, &mut values, ctx)?;
        Ok(values)
    }

    /// The row of the table's columns from the source's targets, DEFAULT and the columns it
    /// leaves out taking their defaults.
    fn with_defaults(&self, source: Vec<Option<Value>>, ctx: &mut ExecCtx) -> Result<Row> {
        let mut values = vec![Value::Null; self.table.columns.len()];
        let mut given = vec![false; values.len()];
        for (value, &target) in source.into_iter().zip(&self.targets) {
            if let Some(value) = value {
                values[target] = value;
                given[target] = true;
            }
        }
        for (i, default) in self.defaults.iter().enumerate() {
            if !given[i] {
                if let Some(default) = default {
                    values[i] = default.eval(&[], ctx)?;
                }
            }
        }
        Ok(values)
    }

    /// Whether `source` gives a value for every column of the table, in the table's order.
    fn gives_every_column(&self, source: &[Option<Value>]) -> bool {
        source.len() == self.table.columns.len()
            && self.targets.iter().enumerate().all(|(i, &t)| i == t)
            && source.iter().all(Option::is_some)
    }

    /// Inserts one row, or applies ON CONFLICT; returns the row written, if any. `updated` holds
    /// the keys this statement wrote (a conflict with one of them is an error, 21000).
    fn insert_one(
        &self,
        values: Row,
        updated: &mut Vec<Vec<u8>>,
        ctx: &mut ExecCtx,
    ) -> Result<Option<Row>> {
        check_not_null(&self.table, &values)?;
        check_constraints(&self.checks, &self.table, &values, ctx)?;
        check_parents(ctx, &self.table, &values)?;
        loop {
            let err = match ctx.txn()?.insert_row(&self.table, &values) {
                Ok(pk) => {
                    if self.on_conflict.is_some() {
                        updated.push(pk);
                    }
                    return Ok(Some(values));
                }
                Err(err) => err,
            };
            let EngineError::UniqueViolation { index } = err else {
                return Err(write_error(err, &self.table, &values));
            };
            let Some(conflict) = self
                .on_conflict
                .as_ref()
                .filter(|c| c.index.is_none_or(|i| i == index))
            else {
                return Err(write_error(err, &self.table, &values));
            };
            let ConflictAction::Update {
                assignments,
                filter,
            } = &conflict.action
            else {
                return Ok(None);
            };
            let Some(pk) = conflicting_key(ctx, &self.table, index, &values)? else {
                continue;
            };
            let Some(existing) = ctx.txn()?.lock_table_row(&self.table, &pk)? else {
                continue;
            };
            if updated.contains(&pk) {
                return Err(SqlError::new("21000", "ON CONFLICT DO UPDATE command cannot affect row a second time")
                    .with_hint("Ensure that no rows proposed for insertion within the same command have duplicate constrained values."));
            }
            let mut both = existing.clone();
            both.extend(values.iter().cloned());
            if let Some(filter) = filter {
                if !filter.eval_predicate(&both, ctx)? {
                    return Ok(None);
                }
            }
            let change = RowChange {
                assignments,
                generated: &self.generated,
                checks: &self.checks,
            };
            let new = apply_assignments(&self.table, &change, &existing, &both, ctx)?;
            let new_pk = write_update(ctx, &self.table, &pk, &existing, new.clone())?;
            updated.push(new_pk);
            return Ok(Some(new));
        }
    }
}

/// Whether a query reads no table, directly or in a subquery (so an INSERT may stream its rows
/// without seeing its own): only series, literal rows, projections and filters over them.
fn reads_no_table(plan: &Plan) -> bool {
    match plan {
        Plan::Series { start, stop, step } => {
            without_subquery([start, stop].into_iter().chain(step.as_ref()))
        }
        Plan::Values { rows, .. } => without_subquery(rows.iter().flatten()),
        Plan::Project { input, exprs } => without_subquery(exprs) && reads_no_table(input),
        Plan::Filter { input, predicate } => without_subquery([predicate]) && reads_no_table(input),
        _ => false,
    }
}

fn without_subquery<'e>(exprs: impl IntoIterator<Item = &'e Expr>) -> bool {
    exprs.into_iter().all(|expr| {
        let mut found = false;
        expr.visit(&mut |e| found |= matches!(e, Expr::Subquery(_)));
        !found
    })
}

/// The key of the live row holding `values`' key in unique index `index`.
fn conflicting_key(
    ctx: &mut ExecCtx,
    table: &TableDef,
    index: u64,
    values: &[Value],
) -> Result<Option<Vec<u8>>> {
    if index == table.id {
        return Ok(Some(primary_key(table, values)));
    }
    let Some(def) = table.indexes.iter().find(|i| i.id == index) else {
        return Ok(None);
    };
    let key = steady_engine::table::index_key(values, &def.columns);
    let rows = ctx
        .txn()?
        .index_rows(table, def, Bound::Included(&key), Bound::Included(&key))?;
    Ok(rows.into_iter().next().map(|(pk, _)| pk))
}

/// A row of parameter values as an INSERT's source row.
fn parameter_row(mut row: Vec<Value>, types: &[Option<DataType>]) -> Result<SourceRow> {
    if row.len() != types.len() {
        return Err(SqlError::new(
            "08P01",
            format!(
                "{} parameter values for {} parameters",
                row.len(),
                types.len()
            ),
        ));
    }
    for (value, ty) in row.iter_mut().zip(types) {
        *value = typed_param(std::mem::replace(value, Value::Null), ty.as_ref())?;
    }
    // Collected in place, as in `InsertPlan::full_row`.
    Ok(row.into_iter().map(Some).collect())
}

pub(crate) fn not_a_parameter_row() -> SqlError {
    SqlError::new(
        "XX000",
        "rows of parameters need an INSERT of one row of parameters $1, $2, … in order",
    )
}

/// Converts every value to its column's type (assignment rules: strings too long fail).
fn assign_types(table: &TableDef, values: &mut [Value]) -> Result<()> {
    for (value, column) in values.iter_mut().zip(&table.columns) {
        if !value.is_null() {
            *value = std::mem::replace(value, Value::Null).assign_into(&column.data_type)?;
        }
    }
    Ok(())
}

/// Computes each generated column of `row` (its other columns assigned) from its expression.
fn fill_generated(
    generated: &[(usize, Expr)],
    table: &TableDef,
    row: &mut Row,
    ctx: &mut ExecCtx,
) -> Result<()> {
    for (column, expr) in generated {
        row[*column] = expr
            .eval(row, ctx)?
            .assign_into(&table.columns[*column].data_type)?;
    }
    Ok(())
}

/// What an UPDATE (or ON CONFLICT DO UPDATE) makes of a row: its SET list, then its generated
/// columns and checks.
struct RowChange<'p> {
    assignments: &'p [(usize, Expr)],
    generated: &'p [(usize, Expr)],
    checks: &'p [CheckExpr],
}

fn apply_assignments(
    table: &TableDef,
    change: &RowChange<'_>,
    old: &[Value],
    input: &[Value],
    ctx: &mut ExecCtx,
) -> Result<Row> {
    let mut new = old.to_vec();
    for (column, expr) in change.assignments {
        new[*column] = expr.eval(input, ctx)?;
    }
    assign_types(table, &mut new)?;
    fill_generated(change.generated, table, &mut new, ctx)?;
    let checks = change.checks;
    check_not_null(table, &new)?;
    check_constraints(checks, table, &new, ctx)?;
    Ok(new)
}

/// Replaces the row under `pk` (locked, with newest values `old`) by `new`; a changed primary
/// key becomes a delete and an insert. Returns the row's key afterwards.
fn write_update(
    ctx: &mut ExecCtx,
    table: &TableDef,
    pk: &[u8],
    old: &[Value],
    new: Row,
) -> Result<Vec<u8>> {
    check_parents(ctx, table, &new)?;
    check_no_children(ctx, table, old, Some(&new))?;
    let new_pk = if table.primary_key.is_empty() {
        pk.to_vec()
    } else {
        primary_key(table, &new)
    };
    let txn = ctx.txn()?;
    if new_pk == pk {
        txn.update_row(table, pk, &new)
            .map_err(|e| write_error(e, table, &new))?;
        return Ok(new_pk);
    }
    txn.delete_row(table, pk)?;
    txn.insert_row(table, &new)
        .map_err(|e| write_error(e, table, &new))
}

// ---------------------------------------------------------------------------------------------
// UPDATE and DELETE
// ---------------------------------------------------------------------------------------------

/// The rows an UPDATE or DELETE visits: a scan of its table with the WHERE clause.
#[derive(Debug, Clone)]
pub struct Target {
    pub table: Arc<TableDef>,
    pub access: Access,
    /// Over the table's row, or with `others` over the table's row followed by an other row.
    pub filter: Option<Expr>,
    /// `UPDATE ... FROM` / `DELETE ... USING`: the other tables, joined to each row by `filter`.
    pub others: Option<Plan>,
    /// The scan (and join) EXPLAIN shows under the write.
    pub shown: Box<Plan>,
}

impl Target {
    /// The scan plan as EXPLAIN shows it (kept in [`Target::shown`]).
    pub fn explain_plan(&self) -> Plan {
        let scan = Plan::Scan {
            table: self.table.clone(),
            access: self.access.clone(),
            filter: if self.others.is_some() {
                None
            } else {
                self.filter.clone()
            },
            columns: None,
        };
        match &self.others {
            None => scan,
            Some(others) => Plan::Join {
                left: Box::new(scan),
                right: Box::new(others.clone()),
                kind: crate::execution::plan::JoinKind::Inner,
                keys: Vec::new(),
                on: self.filter.clone(),
                left_width: self.table.columns.len(),
                right_width: 0,
            },
        }
    }

    /// How a statement that assigns the columns `assigned` (none for a DELETE) walks its
    /// candidates; `in_key_order`: its LIMIT takes the first rows in primary-key order (ORDER BY
    /// the primary key).
    pub(crate) fn walk(
        &self,
        mut assigned: impl Iterator<Item = usize>,
        in_key_order: bool,
    ) -> Walk {
        let pk = &self.table.primary_key;
        let (moves_rows, through_index) = match &self.access {
            Access::Index(index, _) => (
                assigned.any(|c| index.columns.contains(&c) || pk.contains(&c)),
                true,
            ),
            _ => (assigned.any(|c| pk.contains(&c)), false),
        };
        if moves_rows || (through_index && in_key_order) {
            Walk::Whole
        } else {
            Walk::Batches
        }
    }

    /// The next batch of candidate rows (at most `max_keys`, after the walk's key `after`): their
    /// primary keys in key order, from the secondary index alone when one is used, else from a
    /// scan in key order that checks the WHERE clause.
    fn candidates(
        &self,
        others: &[Row],
        after: Option<Vec<u8>>,
        max_keys: usize,
        ctx: &mut ExecCtx,
    ) -> Result<Candidates> {
        if let Access::Index(index, range) = &self.access {
            let Some((start, end)) = encode_range(range, ctx)? else {
                return Ok(Candidates::none());
            };
            let start = after.map_or(start, Bound::Excluded);
            let batch =
                ctx.txn()?
                    .index_candidates(index, as_ref(&start), as_ref(&end), max_keys)?;
            return Ok(Candidates {
                keys: batch.keys,
                check_snapshot: true,
                resume_after: batch.resume_after,
            });
        }
        if let Access::Primary(range) = &self.access {
            if let Some(key) = single_key(range, ctx)? {
                return Ok(Candidates {
                    keys: key.into_iter().collect(),
                    check_snapshot: true,
                    resume_after: None,
                });
            }
        }
        let (start, end) = match &self.access {
            Access::Primary(range) => match encode_range(range, ctx)? {
                Some(bounds) => bounds,
                None => return Ok(Candidates::none()),
            },
            _ => (Bound::Unbounded, Bound::Unbounded),
        };
        let start = after.map_or(start, Bound::Excluded);
        let scan = ctx
            .txn()?
            .scan_rows(&self.table, as_ref(&start), as_ref(&end))?;
        let mut keys = Vec::new();
        for row in scan {
            let (pk, values) = row?;
            if self.matching(&values, others, ctx)?.is_some() {
                keys.push(pk);
                if keys.len() >= max_keys {
                    let resume_after = keys.last().cloned();
                    return Ok(Candidates {
                        keys,
                        check_snapshot: false,
                        resume_after,
                    });
                }
            }
        }
        Ok(Candidates {
            keys,
            check_snapshot: false,
            resume_after: None,
        })
    }

    /// The row the statement works on for the table row `values`: the row itself, or joined with
    /// the first of `others` that matches; `None` when the WHERE clause rejects it.
    fn matching(&self, values: &[Value], others: &[Row], ctx: &mut ExecCtx) -> Result<Option<Row>> {
        if self.others.is_none() {
            let keep = match &self.filter {
                Some(filter) => filter.eval_predicate(values, ctx)?,
                None => true,
            };
            return Ok(keep.then(|| values.to_vec()));
        }
        for other in others {
            let mut row = values.to_vec();
            row.extend_from_slice(other);
            let keep = match &self.filter {
                Some(filter) => filter.eval_predicate(&row, ctx)?,
                None => true,
            };
            if keep {
                return Ok(Some(row));
            }
        }
        Ok(None)
    }

    /// Hands `writer` the candidate rows, locked, with their newest values (each still matching
    /// the WHERE clause), and has it write them every `writer.batch()` rows taken and at the end.
    /// Candidates are collected a batch at a time as `walk` allows, each batch visited in key
    /// order; a batch is read, locked and re-read [`READ_BATCH`] rows at a time (one walk of the
    /// table each; under a LIMIT never more rows than are still to take, so that no row past it
    /// is locked). Stops as soon as `limit` rows are taken: under a LIMIT a batch holds only as
    /// many candidates as rows are still to take. Returns how many it took.
    fn for_each_row(
        &self,
        ctx: &mut ExecCtx,
        limit: Option<usize>,
        walk: Walk,
        writer: &mut dyn RowWriter,
    ) -> Result<usize> {
        let others = match &self.others {
            Some(plan) => collect(plan, ctx)?,
            None => Vec::new(),
        };
        let batch = writer.batch(ctx)?;
        let visit = Visit {
            others: &others,
            limit,
            batch,
        };
        let mut tally = Tally::default();
        let mut after = None;
        loop {
            let left = limit.map(|l| l.saturating_sub(tally.taken));
            if left == Some(0) {
                break;
            }
            let max_keys = match walk {
                Walk::Whole => usize::MAX,
                Walk::Batches => left.unwrap_or(CANDIDATE_BATCH).min(CANDIDATE_BATCH),
            };
            let candidates = self.candidates(&others, after.take(), max_keys, ctx)?;
            self.take_candidates(&candidates, &visit, &mut tally, writer, ctx)?;
            match candidates.resume_after {
                Some(key) => after = Some(key),
                None => break,
            }
        }
        writer.flush(ctx)?;
        Ok(tally.taken)
    }

    /// Visits one batch of candidates for [`Target::for_each_row`].
    fn take_candidates(
        &self,
        candidates: &Candidates,
        visit: &Visit<'_>,
        tally: &mut Tally,
        writer: &mut dyn RowWriter,
        ctx: &mut ExecCtx,
    ) -> Result<()> {
        let unlocked = visit.batch > 1;
        let in_place = unlocked && writer.deletes_in_place() && self.filter_reads_only_the_row();
        let filter_decoder = in_place.then(|| self.filter_decoder());
        let read_batch = if in_place {
            visit.batch
        } else {
            visit.batch.min(READ_BATCH)
        };
        let mut rest = candidates.keys.as_slice();
        while !rest.is_empty() {
            ctx.check_interrupt()?;
            let left = visit
                .limit
                .map_or(usize::MAX, |l| l.saturating_sub(tally.taken));
            if left == 0 {
                break;
            }
            let (keys, after) = rest.split_at(rest.len().min(read_batch).min(left));
            rest = after;
            let keys = if let Some(decoder) = &filter_decoder {
                let (deleted, deferred) = self.delete_in_place(keys, decoder, ctx)?;
                tally.taken += deleted;
                let (written, rest) = self.write_unlocked(&deferred, visit.others, writer, ctx)?;
                tally.taken += written;
                rest
            } else if unlocked {
                let (written, rest) = self.write_unlocked(keys, visit.others, writer, ctx)?;
                tally.taken += written;
                rest
            } else if candidates.check_snapshot {
                self.seen_matching(keys, visit.others, ctx)?
            } else {
                keys.to_vec()
            };
            if keys.is_empty() {
                continue;
            }
            let currents = ctx.txn()?.lock_table_rows(&self.table, &keys)?;
            for (pk, current) in keys.into_iter().zip(currents) {
                let Some(current) = current else { continue };
                let Some(row) = self.matching(&current, visit.others, ctx)? else {
                    continue;
                };
                if writer.take(ctx, pk, current, row)? {
                    tally.taken += 1;
                    tally.pending += 1;
                }
            }
            if tally.pending >= visit.batch {
                writer.flush(ctx)?;
                tally.pending = 0;
            }
        }
        Ok(())
    }

    /// Writes the candidates whose row the statement's snapshot sees in place and matches the
    /// WHERE clause (again, for candidates a scan already matched: the same snapshot gives the
    /// same answer) without row locks, where the engine can (the row is still as read and
    /// nobody holds its lock: `Transaction::change_rows_unlocked`), and `writer` allows it (its
    /// checks need no other row). Returns how many it wrote, and the matching candidates left to
    /// the locking path (which locks them and checks the clause again on their newest versions;
    /// an UPDATE then evaluates its SET expressions again, as PostgreSQL's re-check does).
    fn write_unlocked(
        &self,
        candidates: &[Vec<u8>],
        others: &[Row],
        writer: &mut dyn RowWriter,
        ctx: &mut ExecCtx,
    ) -> Result<(usize, Vec<Vec<u8>>)> {
        if candidates.is_empty() {
            return Ok((0, Vec::new()));
        }
        let seen = ctx.txn()?.get_rows_for_change(&self.table, candidates)?;
        let (mut changes, mut rows, mut locked) = (Vec::new(), Vec::new(), Vec::new());
        for (pk, seen) in candidates.iter().zip(seen) {
            let Some((values, in_place)) = seen else {
                continue;
            };
            let Some(row) = self.matching(&values, others, ctx)? else {
                continue;
            };
            let change = match in_place {
                Some(in_place) => writer
                    .unlocked_change(ctx, pk, &values, &row)?
                    .map(|change| (in_place, change)),
                None => None,
            };
            match change {
                Some((in_place, change)) => {
                    changes.push((pk.clone(), in_place, change));
                    rows.push(row);
                }
                None => locked.push(pk.clone()),
            }
        }
        if changes.is_empty() {
            return Ok((0, locked));
        }
        let written = ctx.txn()?.change_rows_unlocked(&self.table, &changes)?;
        let mut count = 0;
        for ((pk, _, change), (row, written)) in
            changes.into_iter().zip(rows.into_iter().zip(written))
        {
            if written {
                writer.note_unlocked(row, change);
                count += 1;
            } else {
                locked.push(pk);
            }
        }
        locked.sort_unstable();
        Ok((count, locked))
    }

    /// Whether the WHERE clause reads nothing but the target row (no join, no subquery, no
    /// volatile function), so that it may be evaluated with the row's leaf latched.
    fn filter_reads_only_the_row(&self) -> bool {
        self.others.is_none() && self.filter.as_ref().is_none_or(Expr::is_movable)
    }

    /// A decoder of the table's rows in the columns the WHERE clause reads.
    fn filter_decoder(&self) -> RowDecoder {
        let mut read = vec![false; self.table.columns.len()];
        mark_columns(&mut read, self.filter.iter());
        self.table.decoder(Some(read))
    }

    /// Deletes the candidates whose row the statement's snapshot sees in place and the WHERE
    /// clause accepts, each read, checked and deleted in one visit of its leaf, without a row
    /// lock (`Transaction::delete_rows_unlocked_where`; the clause reads only the row, decoded by
    /// `decoder` in the columns it reads: [`Target::filter_decoder`]). Returns how many it
    /// deleted, and the candidates it left (an older version seen, a locked row) for
    /// [`Target::write_unlocked`] and the locking path.
    fn delete_in_place(
        &self,
        candidates: &[Vec<u8>],
        decoder: &RowDecoder,
        ctx: &mut ExecCtx,
    ) -> Result<(usize, Vec<Vec<u8>>)> {
        let (mut values, mut failure) = (Vec::new(), None);
        let outcomes = ctx.with_txn_apart(|txn, ctx| {
            let mut matches = |row: &[u8]| {
                let accepted = match decoder.decode_into(row, &mut values) {
                    Err(error) => Err(SqlError::from(EngineError::Corrupt(error.to_string()))),
                    Ok(()) => self
                        .filter
                        .as_ref()
                        .map_or(Ok(true), |filter| filter.eval_predicate(&values, ctx)),
                };
                accepted.map_err(|error| failure = Some(error)).ok()
            };
            txn.delete_rows_unlocked_where(&self.table, candidates, &mut matches)
        })?;
        if let Some(error) = failure {
            return Err(error);
        }
        let outcomes = outcomes?;
        let deleted = outcomes.iter().filter(|&&o| o == DeleteOutcome::Deleted);
        let deferred = candidates.iter().zip(&outcomes);
        let deferred = deferred.filter(|(_, &o)| o == DeleteOutcome::Deferred);
        Ok((
            deleted.count(),
            deferred.map(|(pk, _)| pk.clone()).collect(),
        ))
    }

    /// The index candidates whose row, as the statement's snapshot sees it, matches the WHERE
    /// clause (an index entry may be stale).
    fn seen_matching(
        &self,
        candidates: &[Vec<u8>],
        others: &[Row],
        ctx: &mut ExecCtx,
    ) -> Result<Vec<Vec<u8>>> {
        let seen = ctx.txn()?.get_rows(&self.table, candidates)?;
        let mut matching = Vec::with_capacity(candidates.len());
        for (pk, row) in candidates.iter().zip(seen) {
            if let Some(row) = row {
                if self.matching(&row, others, ctx)?.is_some() {
                    matching.push(pk.clone());
                }
            }
        }
        Ok(matching)
    }
}

/// How [`Target::for_each_row`] collects the candidates of its statement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Walk {
    /// A batch at a time, each sorted by primary key: the statement moves no row to a place its
    /// walk has still to pass (it changes no column of the key it walks by).
    Batches,
    /// All at once, sorted by primary key: the statement may move rows ahead of its walk (an
    /// UPDATE of the key it walks by), or its LIMIT must take the first rows in primary-key
    /// order and it walks an index (`DELETE ... ORDER BY <primary key> LIMIT n`).
    Whole,
}

/// One batch of candidates (see [`Target::candidates`]).
struct Candidates {
    /// Primary keys, in key order.
    keys: Vec<Vec<u8>>,
    /// Whether each still needs the snapshot check (from an index) or was read and matched (scan).
    check_snapshot: bool,
    /// The key of the walk (an index entry's or a primary key) the next batch starts after; None
    /// when the walk is done.
    resume_after: Option<Vec<u8>>,
}

impl Candidates {
    fn none() -> Self {
        Candidates {
            keys: Vec::new(),
            check_snapshot: false,
            resume_after: None,
        }
    }
}

/// What [`Target::take_candidates`] needs beside the batch: the other rows of a join, the LIMIT,
/// and the writer's batch size.
struct Visit<'a> {
    others: &'a [Row],
    limit: Option<usize>,
    batch: usize,
}

/// The rows [`Target::for_each_row`] took, and how many of them wait for a flush.
#[derive(Default)]
struct Tally {
    taken: usize,
    pending: usize,
}

/// How UPDATE and DELETE write the rows [`Target::for_each_row`] hands them: rows taken are
/// written in batches (the engine writes a batch of locked rows in runs, a mini-transaction per
/// leaf), so the statement's checks of a row run when it is taken, its write at the next flush.
trait RowWriter {
    /// How many rows may wait for a flush: one where a check of a row must see the rows before it
    /// written (foreign keys between rows of the table, unique secondary indexes).
    fn batch(&self, ctx: &mut ExecCtx) -> Result<usize>;
    /// The change of a row the statement's snapshot sees in place (its key, values, and the row
    /// the statement's expressions see) if it may be written without a row lock: its new values,
    /// or None for a delete. None (the outer one) leaves the row to the locking path.
    fn unlocked_change(
        &mut self,
        ctx: &mut ExecCtx,
        pk: &[u8],
        values: &Row,
        row: &Row,
    ) -> Result<Option<Option<Row>>>;
    /// Whether the writer deletes and keeps nothing of the rows it deletes (no RETURNING), so
    /// that its rows may be deleted in one visit of their leaves ([`Target::delete_in_place`]).
    fn deletes_in_place(&self) -> bool {
        false
    }
    /// Notes a change [`RowWriter::unlocked_change`] gave that was written (for RETURNING).
    fn note_unlocked(&mut self, row: Row, change: Option<Row>);
    /// Takes a locked row (its key, newest values, and the row the statement's expressions see);
    /// returns whether it changes it.
    fn take(&mut self, ctx: &mut ExecCtx, pk: Vec<u8>, current: Row, row: Row) -> Result<bool>;
    /// Writes the rows taken since the last flush.
    fn flush(&mut self, ctx: &mut ExecCtx) -> Result<()>;
}

/// Rows an UPDATE or DELETE takes before writing them, where no check needs a row written first.
/// Small on purpose (seed 000): the batch's write reads the pages its rows were read from again,
/// so they must still be in the pool — a few dozen leaves at most, however small the pool.
const WRITE_BATCH: usize = 64;

/// Candidates an UPDATE or DELETE reads and locks at a time (one walk of the table each). Smaller
/// than [`WRITE_BATCH`]: the more leaves lie between a row's read and its write, the likelier a
/// small pool has let one go in between (seed 000; `delete_through_an_index_reads_each_page_at_most_once`
/// reads 15% more pages at 64 than one at a time, 13% at 16).
const READ_BATCH: usize = 16;

/// The most candidates an UPDATE or DELETE collects before visiting them (about 40 MiB of
/// integer keys): the memory a statement holds stays bounded, and a 10% DELETE of a 10,000,000-row
/// table through an index still visits its candidates in one walk of the table (seed 000: each
/// batch is a walk of the pages its keys are on).
const CANDIDATE_BATCH: usize = 1 << 20;

/// Whether rows of `table` may be written in batches: no foreign key from or to the table (a
/// check of one row could need another row of the statement written).
fn batches_writes(ctx: &mut ExecCtx, table: &TableDef) -> Result<bool> {
    let engine = ctx.engine()?.clone();
    Ok(foreign_keys(table).is_empty() && referencing(&engine, &table.name).is_empty())
}

#[derive(Debug, Clone)]
pub struct UpdatePlan {
    pub target: Target,
    pub assignments: Vec<(usize, Expr)>,
    /// The table's CHECK constraints, bound over its row.
    pub checks: Vec<CheckExpr>,
    /// The table's generated columns and their expressions, bound over its row.
    pub generated: Vec<(usize, Expr)>,
    /// `LIMIT n`: only the first n rows the walk meets (see [`DeletePlan::limit`]).
    pub limit: Option<Expr>,
    pub returning: Option<Returning>,
}

impl UpdatePlan {
    fn change(&self) -> RowChange<'_> {
        RowChange {
            assignments: &self.assignments,
            generated: &self.generated,
            checks: &self.checks,
        }
    }

    pub fn run(&self, ctx: &mut ExecCtx) -> Result<Written> {
        let limit = row_limit(self.limit.as_ref(), ctx)?;
        let mut writer = UpdateWriter {
            plan: self,
            pending: Vec::new(),
            moved: Vec::new(),
            written: Vec::new(),
        };
        let assigned = self.assignments.iter().chain(&self.generated);
        let walk = self.target.walk(assigned.map(|(column, _)| *column), false);
        let count = self.target.for_each_row(ctx, limit, walk, &mut writer)?;
        let returned = returning_rows(&self.returning, &writer.written, ctx)?;
        Ok(Written {
            count: count as u64,
            returned,
        })
    }
}

/// Writes an UPDATE's rows: rows keeping their primary key in batches, a row whose key changes
/// as a delete and an insert of its own (after the batch before it).
struct UpdateWriter<'p> {
    plan: &'p UpdatePlan,
    pending: Vec<(Vec<u8>, Row)>,
    /// The new keys of rows whose primary key changed (the scan may meet them again).
    moved: Vec<Vec<u8>>,
    /// The new rows, for RETURNING.
    written: Vec<Row>,
}

impl RowWriter for UpdateWriter<'_> {
    fn batch(&self, ctx: &mut ExecCtx) -> Result<usize> {
        let table = &self.plan.target.table;
        let unique = table.indexes.iter().any(|index| index.unique);
        Ok(if !unique && batches_writes(ctx, table)? {
            WRITE_BATCH
        } else {
            1
        })
    }

    fn unlocked_change(
        &mut self,
        ctx: &mut ExecCtx,
        pk: &[u8],
        values: &Row,
        row: &Row,
    ) -> Result<Option<Option<Row>>> {
        let table = &self.plan.target.table;
        if self.moved.iter().any(|moved| moved == pk) {
            return Ok(None);
        }
        let plan = self.plan;
        let new = apply_assignments(table, &plan.change(), values, row, ctx)?;
        let same_key = table.primary_key.is_empty() || primary_key(table, &new) == pk;
        Ok(same_key.then_some(Some(new)))
    }

    fn note_unlocked(&mut self, _: Row, change: Option<Row>) {
        if let (Some(new), Some(_)) = (change, &self.plan.returning) {
            self.written.push(new);
        }
    }

    fn take(&mut self, ctx: &mut ExecCtx, pk: Vec<u8>, old: Row, row: Row) -> Result<bool> {
        if self.moved.contains(&pk) {
            return Ok(false);
        }
        let table = &self.plan.target.table;
        let new = apply_assignments(table, &self.plan.change(), &old, &row, ctx)?;
        check_parents(ctx, table, &new)?;
        check_no_children(ctx, table, &old, Some(&new))?;
        if self.plan.returning.is_some() {
            self.written.push(new.clone());
        }
        if table.primary_key.is_empty() || primary_key(table, &new) == pk {
            self.pending.push((pk, new));
            return Ok(true);
        }
        self.flush(ctx)?;
        let txn = ctx.txn()?;
        txn.delete_row(table, &pk)?;
        let new_pk = txn
            .insert_row(table, &new)
            .map_err(|e| write_error(e, table, &new))?;
        self.moved.push(new_pk);
        Ok(true)
    }

    fn flush(&mut self, ctx: &mut ExecCtx) -> Result<()> {
        let table = &self.plan.target.table;
        let rows = std::mem::take(&mut self.pending);
        if let [(pk, new)] = rows.as_slice() {
            ctx.txn()?
                .update_row(table, pk, new)
                .map_err(|e| write_error(e, table, new))?;
        } else if !rows.is_empty() {
            ctx.txn()?.update_rows(table, &rows)?;
        }
        Ok(())
    }
}

#[derive(Debug, Clone)]
pub struct DeletePlan {
    pub target: Target,
    /// `LIMIT n` (MySQL's): only the first n rows the walk meets — in primary-key order through
    /// the primary key or a scan; through an index, in the index's order (each batch of
    /// candidates in key order), unless `in_key_order`.
    pub limit: Option<Expr>,
    /// `ORDER BY` the primary key: LIMIT takes the first rows in primary-key order.
    pub in_key_order: bool,
    pub returning: Option<Returning>,
}

impl DeletePlan {
    pub fn run(&self, ctx: &mut ExecCtx) -> Result<Written> {
        let limit = row_limit(self.limit.as_ref(), ctx)?;
        let mut writer = DeleteWriter {
            table: &self.target.table,
            pending: Vec::new(),
            deleted: Vec::new(),
            keep_rows: self.returning.is_some(),
        };
        let walk = self.target.walk(std::iter::empty(), self.in_key_order);
        let count = self.target.for_each_row(ctx, limit, walk, &mut writer)?;
        let returned = returning_rows(&self.returning, &writer.deleted, ctx)?;
        Ok(Written {
            count: count as u64,
            returned,
        })
    }
}

/// Deletes a DELETE's rows in batches.
struct DeleteWriter<'p> {
    table: &'p TableDef,
    pending: Vec<Vec<u8>>,
    /// The deleted rows, for RETURNING (when `keep_rows`).
    deleted: Vec<Row>,
    keep_rows: bool,
}

impl RowWriter for DeleteWriter<'_> {
    fn batch(&self, ctx: &mut ExecCtx) -> Result<usize> {
        Ok(if batches_writes(ctx, self.table)? {
            WRITE_BATCH
        } else {
            1
        })
    }

    fn unlocked_change(
        &mut self,
        _: &mut ExecCtx,
        _: &[u8],
        _: &Row,
        _: &Row,
    ) -> Result<Option<Option<Row>>> {
        Ok(Some(None))
    }

    fn deletes_in_place(&self) -> bool {
        !self.keep_rows
    }

    fn note_unlocked(&mut self, row: Row, _: Option<Row>) {
        if self.keep_rows {
            self.deleted.push(row);
        }
    }

    fn take(&mut self, ctx: &mut ExecCtx, pk: Vec<u8>, old: Row, row: Row) -> Result<bool> {
        check_no_children(ctx, self.table, &old, None)?;
        self.pending.push(pk);
        if self.keep_rows {
            self.deleted.push(row);
        }
        Ok(true)
    }

    fn flush(&mut self, ctx: &mut ExecCtx) -> Result<()> {
        let pks = std::mem::take(&mut self.pending);
        if !pks.is_empty() {
            ctx.txn()?.delete_rows(self.table, &pks)?;
        }
        Ok(())
    }
}

/// The row count of a write's `LIMIT` (None: no limit, or LIMIT NULL).
fn row_limit(limit: Option<&Expr>, ctx: &mut ExecCtx) -> Result<Option<usize>> {
    let Some(limit) = limit else { return Ok(None) };
    match limit.eval(&[], ctx)? {
        Value::Null => Ok(None),
        v => usize::try_from(ops::as_i64(&v))
            .map(Some)
            .map_err(|_| SqlError::new("2201W", "LIMIT must not be negative")),
    }
}
