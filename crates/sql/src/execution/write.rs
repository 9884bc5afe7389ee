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
//! UPDATE and DELETE never walk an index and the table in step (seed 000): they first collect the
//! primary keys of the candidate rows — from the secondary index alone when the planner chose one,
//! else from a scan in key order — sort them, and then visit each row once, in primary-key order:
//! the row must be visible to the statement's snapshot and match the WHERE clause, then it is
//! locked and the clause re-checked on the newest version (READ COMMITTED's re-check), and only
//! then changed. So each clustered page is read at most once per statement.

use std::ops::Bound;
use std::sync::Arc;

use steady_engine::catalog::TableDef;
use steady_engine::error::EngineError;
use steady_engine::table::primary_key;
use steady_types::Value;

use crate::error::{Result, SqlError};
use crate::execution::constraints::{
    check_no_children, check_not_null, check_parents, foreign_keys, write_error,
};
use crate::execution::executor::{as_ref, collect, encode_range, open, ExecCtx, Row};
use crate::execution::expr::Expr;
use crate::execution::plan::{Access, Column, Plan};
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
}

impl InsertPlan {
    pub fn run(&self, ctx: &mut ExecCtx) -> Result<Written> {
        let mut written = Vec::new();
        let in_runs = self.on_conflict.is_none() && foreign_keys(&self.table).is_empty();
        let count = match &self.source {
            InsertSource::Query(plan) if in_runs && reads_no_table(plan) => {
                let mut source = open(plan, ctx, &mut 0)?;
                let mut next = |ctx: &mut ExecCtx| {
                    Ok(source
                        .next(ctx)?
                        .map(|row| row.into_iter().map(Some).collect()))
                };
                self.insert_in_runs(&mut next, &mut written, ctx)?
            }
            _ => {
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
        assign_types(&self.table, &mut values)?;
        Ok(values)
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
            let new = apply_assignments(&self.table, &existing, assignments, &both, ctx)?;
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

/// Converts every value to its column's type (assignment rules: strings too long fail).
fn assign_types(table: &TableDef, values: &mut [Value]) -> Result<()> {
    for (value, column) in values.iter_mut().zip(&table.columns) {
        if !value.is_null() {
            *value = value.assign_to(&column.data_type)?;
        }
    }
    Ok(())
}

fn apply_assignments(
    table: &TableDef,
    old: &[Value],
    assignments: &[(usize, Expr)],
    input: &[Value],
    ctx: &mut ExecCtx,
) -> Result<Row> {
    let mut new = old.to_vec();
    for (column, expr) in assignments {
        new[*column] = expr.eval(input, ctx)?;
    }
    assign_types(table, &mut new)?;
    check_not_null(table, &new)?;
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
                on: self.filter.clone(),
                left_width: self.table.columns.len(),
                right_width: 0,
            },
        }
    }

    /// Primary keys of the candidate rows in key order, and whether each still needs the
    /// snapshot check (index candidates) or was already read and matched (scan candidates).
    fn candidates(&self, others: &[Row], ctx: &mut ExecCtx) -> Result<(Vec<Vec<u8>>, bool)> {
        if let Access::Index(index, range) = &self.access {
            let Some((start, end)) = encode_range(range, ctx)? else {
                return Ok((vec![], false));
            };
            let keys = ctx
                .txn()?
                .index_candidates(index, as_ref(&start), as_ref(&end))?;
            return Ok((keys, true));
        }
        let (start, end) = match &self.access {
            Access::Primary(range) => match encode_range(range, ctx)? {
                Some(bounds) => bounds,
                None => return Ok((vec![], false)),
            },
            _ => (Bound::Unbounded, Bound::Unbounded),
        };
        let scan = ctx
            .txn()?
            .scan_rows(&self.table, as_ref(&start), as_ref(&end))?;
        let mut keys = Vec::new();
        for row in scan {
            let (pk, values) = row?;
            if self.matching(&values, others, ctx)?.is_some() {
                keys.push(pk);
            }
        }
        Ok((keys, false))
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

    /// Visits the candidate rows in key order, locked, with their newest values (each still
    /// matching the WHERE clause); `visit` gets the key, the newest values and the row the
    /// statement's expressions see (with `others`, joined), and returns whether it changed the
    /// row. Stops after `limit` changes.
    fn for_each_row(
        &self,
        ctx: &mut ExecCtx,
        limit: Option<usize>,
        mut visit: impl FnMut(&mut ExecCtx, &[u8], Row, Row) -> Result<bool>,
    ) -> Result<usize> {
        let others = match &self.others {
            Some(plan) => collect(plan, ctx)?,
            None => Vec::new(),
        };
        let (keys, check_snapshot) = self.candidates(&others, ctx)?;
        let mut changed = 0;
        for pk in keys {
            ctx.check_interrupt()?;
            if limit.is_some_and(|l| changed >= l) {
                break;
            }
            if check_snapshot {
                let Some(seen) = ctx.txn()?.get_row(&self.table, &pk)? else {
                    continue;
                };
                if self.matching(&seen, &others, ctx)?.is_none() {
                    continue;
                }
            }
            let Some(current) = ctx.txn()?.lock_table_row(&self.table, &pk)? else {
                continue;
            };
            let Some(row) = self.matching(&current, &others, ctx)? else {
                continue;
            };
            changed += usize::from(visit(ctx, &pk, current, row)?);
        }
        Ok(changed)
    }
}

#[derive(Debug, Clone)]
pub struct UpdatePlan {
    pub target: Target,
    pub assignments: Vec<(usize, Expr)>,
    /// `LIMIT n`: only the first n rows in primary-key order.
    pub limit: Option<Expr>,
    pub returning: Option<Returning>,
}

impl UpdatePlan {
    pub fn run(&self, ctx: &mut ExecCtx) -> Result<Written> {
        let limit = row_limit(self.limit.as_ref(), ctx)?;
        let table = self.target.table.clone();
        let mut written = Vec::new();
        let mut moved: Vec<Vec<u8>> = Vec::new();
        let count = self.target.for_each_row(ctx, limit, |ctx, pk, old, row| {
            if moved.iter().any(|k| k.as_slice() == pk) {
                return Ok(false);
            }
            let new = apply_assignments(&table, &old, &self.assignments, &row, ctx)?;
            let new_pk = write_update(ctx, &table, pk, &old, new.clone())?;
            if new_pk != pk {
                moved.push(new_pk);
            }
            if self.returning.is_some() {
                written.push(new);
            }
            Ok(true)
        })?;
        let returned = returning_rows(&self.returning, &written, ctx)?;
        Ok(Written {
            count: count as u64,
            returned,
        })
    }
}

#[derive(Debug, Clone)]
pub struct DeletePlan {
    pub target: Target,
    pub limit: Option<Expr>,
    pub returning: Option<Returning>,
}

impl DeletePlan {
    pub fn run(&self, ctx: &mut ExecCtx) -> Result<Written> {
        let limit = row_limit(self.limit.as_ref(), ctx)?;
        let table = self.target.table.clone();
        let mut deleted = Vec::new();
        let keep_rows = self.returning.is_some();
        let count = self.target.for_each_row(ctx, limit, |ctx, pk, old, row| {
            check_no_children(ctx, &table, &old, None)?;
            let done = ctx.txn()?.delete_row(&table, pk)?;
            if done && keep_rows {
                deleted.push(row);
            }
            Ok(done)
        })?;
        let returned = returning_rows(&self.returning, &deleted, ctx)?;
        Ok(Written {
            count: count as u64,
            returned,
        })
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
