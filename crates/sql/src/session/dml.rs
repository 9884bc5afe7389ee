//! Queries and data changes: SELECT, INSERT (VALUES, SELECT, ON CONFLICT, RETURNING), UPDATE and
//! DELETE (with the `DELETE ... LIMIT n` extension), and EXPLAIN of each.
//!
//! UPDATE and DELETE never walk an index and the table in step (seed 000): they first collect the
//! primary keys of the candidate rows — from the secondary index alone when the planner chose one,
//! else from a scan in key order — sort them, and then visit each row once, in primary-key order:
//! the row must be visible to the statement's snapshot and match the WHERE clause, then it is
//! locked and the clause re-checked on the newest version (READ COMMITTED's re-check), and only
//! then changed. So each clustered page is read at most once per statement.

use std::ops::Bound;
use std::sync::Arc;

use sqlparser::ast::{self, Expr as AstExpr};
use steady_engine::catalog::TableDef;
use steady_engine::engine::Transaction;
use steady_engine::error::EngineError;
use steady_engine::table::primary_key;
use steady_engine::types::{DataType, Value};

use crate::error::{Result, SqlError};
use crate::execution::constraints::{
    check_no_children, check_not_null, check_parents, is_dropped, write_error,
};
use crate::execution::executor::{as_ref, collect, encode_range, ExecCtx, Row};
use crate::execution::expr::Expr;
use crate::execution::plan::{Access, Column, Plan};
use crate::planner::bind::{table_columns, Binder, BoundQuery, Scope};
use crate::session::{QueryResult, Session};
use crate::types::ops::{self, Category};
use crate::types::{normalize_ident, object_name};

/// Whether a statement changes data (refused in READ ONLY transactions).
pub fn writes(statement: &ast::Statement) -> bool {
    matches!(
        statement,
        ast::Statement::Insert(_) | ast::Statement::Update(_) | ast::Statement::Delete(_)
    )
}

/// Runs a query or DML statement.
pub fn execute(
    binder: &mut Binder,
    ctx: &mut ExecCtx,
    statement: &ast::Statement,
    session: &Session,
) -> Result<QueryResult> {
    match statement {
        ast::Statement::Query(query) => run_query(&binder.bind_query(query)?, ctx),
        ast::Statement::Insert(insert) => bind_insert(binder, insert)?.run(ctx),
        ast::Statement::Update(update) => bind_update(binder, update)?.run(ctx),
        ast::Statement::Delete(delete) => bind_delete(binder, delete)?.run(ctx),
        ast::Statement::Explain {
            statement,
            analyze,
            options,
            ..
        } => crate::session::explain::explain(
            binder,
            ctx,
            statement,
            *analyze,
            options.as_deref(),
            session,
        ),
        other => Err(SqlError::unsupported(format!(
            "statement {}",
            first_words(other)
        ))),
    }
}

/// Runs a bound query to its rows.
pub fn run_query(bound: &BoundQuery, ctx: &mut ExecCtx) -> Result<QueryResult> {
    let rows = collect(&bound.plan, ctx)?;
    Ok(QueryResult::rows(
        format!("SELECT {}", rows.len()),
        bound.columns.clone(),
        rows,
    ))
}

fn first_words(statement: &ast::Statement) -> String {
    statement
        .to_string()
        .split_whitespace()
        .take(2)
        .collect::<Vec<_>>()
        .join(" ")
}

/// The result columns of a statement, binding it without running it.
pub fn describe(
    binder: &mut Binder,
    statement: &ast::Statement,
    _session: &Session,
) -> Result<Vec<Column>> {
    Ok(match statement {
        ast::Statement::Query(query) => binder.bind_query(query)?.columns,
        ast::Statement::Insert(insert) => bind_insert(binder, insert)?.returning_columns(),
        ast::Statement::Update(update) => bind_update(binder, update)?.returning_columns(),
        ast::Statement::Delete(delete) => bind_delete(binder, delete)?.returning_columns(),
        ast::Statement::Explain { .. } => vec![Column::new("QUERY PLAN", Some(DataType::Text))],
        ast::Statement::ShowVariable { variable } => {
            let name: Vec<String> = variable.iter().map(normalize_ident).collect();
            vec![Column::new(name.join(" "), Some(DataType::Text))]
        }
        _ => vec![],
    })
}

/// `RETURNING` expressions over a table row.
struct Returning {
    exprs: Vec<Expr>,
    columns: Vec<Column>,
}

fn bind_returning(
    binder: &mut Binder,
    items: Option<&Vec<ast::SelectItem>>,
    scope: &Scope,
) -> Result<Option<Returning>> {
    let Some(items) = items else { return Ok(None) };
    let (exprs, columns) = binder.bind_select_list(items, scope)?;
    Ok(Some(Returning { exprs, columns }))
}

fn returning_columns(returning: &Option<Returning>) -> Vec<Column> {
    returning
        .as_ref()
        .map(|r| r.columns.clone())
        .unwrap_or_default()
}

fn returning_rows(
    returning: &Option<Returning>,
    rows: &[Row],
    ctx: &mut ExecCtx,
) -> Result<(Vec<Column>, Vec<Row>)> {
    let Some(returning) = returning else {
        return Ok((vec![], vec![]));
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
    Ok((returning.columns.clone(), out))
}

fn lookup_table(binder: &Binder, name: &ast::ObjectName) -> Result<Arc<TableDef>> {
    let (schema, table) = object_name(name);
    binder.user_table(schema.as_deref(), &table).ok_or_else(|| {
        if crate::system::lookup(schema.as_deref(), &table).is_some() {
            SqlError::new("42809", format!("cannot change system view \"{table}\""))
        } else {
            SqlError::undefined_table(&table)
        }
    })
}

fn table_scope(table: &TableDef, alias: Option<&str>) -> Scope {
    Scope::of_table(alias.unwrap_or(&table.name), &table_columns(table))
}

/// Checks that a value of type `from` may be assigned to a column of type `to` (PostgreSQL's
/// assignment casts): within a category, or anything into a string.
pub fn check_assignable(column: &str, from: Option<DataType>, to: DataType) -> Result<()> {
    let Some(from) = from else { return Ok(()) };
    let ok = ops::category(&from) == ops::category(&to) || ops::category(&to) == Category::String;
    if ok {
        return Ok(());
    }
    Err(SqlError::datatype_mismatch(format!(
        "column \"{column}\" is of type {to} but expression is of type {from}"
    ))
    .with_hint("You will need to rewrite or cast the expression."))
}

/// Binds an expression assigned to column `index` of `table`.
fn bind_assignment(
    binder: &mut Binder,
    table: &TableDef,
    index: usize,
    e: &AstExpr,
    scope: &Scope,
) -> Result<Expr> {
    let column = &table.columns[index];
    let (expr, ty) = binder.bind_expr_with_level(e, scope)?;
    check_assignable(&column.name, ty, column.data_type)?;
    binder.settle(expr, ty, column.data_type)
}

/// The default of each column, bound (NULL where none).
fn bind_defaults(binder: &mut Binder, table: &TableDef) -> Result<Vec<Option<Expr>>> {
    table
        .columns
        .iter()
        .enumerate()
        .map(|(i, column)| {
            column
                .default
                .as_ref()
                .map(|text| {
                    let ast = crate::session::ddl::parse_expr(text)?;
                    bind_assignment(binder, table, i, &ast, &Scope::default())
                })
                .transpose()
        })
        .collect()
}

fn is_default_keyword(e: &AstExpr) -> bool {
    matches!(e, AstExpr::Identifier(ident) if ident.quote_style.is_none() && ident.value.eq_ignore_ascii_case("default"))
}

// ---------------------------------------------------------------------------------------------
// INSERT
// ---------------------------------------------------------------------------------------------

enum InsertSource {
    /// Rows of expressions; `None` is DEFAULT.
    Values(Vec<Vec<Option<Expr>>>),
    Query(Box<Plan>),
}

enum ConflictAction {
    Nothing,
    /// Assignments and filter over `existing row ++ proposed row`.
    Update {
        assignments: Vec<(usize, Expr)>,
        filter: Option<Expr>,
    },
}

struct OnConflict {
    /// The unique index (table id for the primary key) it applies to; `None`: any.
    index: Option<u64>,
    action: ConflictAction,
}

struct InsertPlan {
    table: Arc<TableDef>,
    targets: Vec<usize>,
    source: InsertSource,
    defaults: Vec<Option<Expr>>,
    on_conflict: Option<OnConflict>,
    returning: Option<Returning>,
}

fn bind_insert(binder: &mut Binder, insert: &ast::Insert) -> Result<InsertPlan> {
    let ast::TableObject::TableName(name) = &insert.table else {
        return Err(SqlError::unsupported("INSERT into a function"));
    };
    let table = lookup_table(binder, name)?;
    let targets = insert_targets(&table, &insert.columns)?;
    let source = match insert.source.as_deref() {
        None => InsertSource::Values(vec![vec![None; targets.len()]]),
        Some(query) => {
            bind_insert_source(binder, &table, &targets, !insert.columns.is_empty(), query)?
        }
    };
    let defaults = bind_defaults(binder, &table)?;
    let alias = insert
        .table_alias
        .as_ref()
        .map(|a| normalize_ident(&a.alias));
    let scope = table_scope(&table, alias.as_deref());
    let on_conflict = match &insert.on {
        Some(ast::OnInsert::OnConflict(conflict)) => {
            Some(bind_on_conflict(binder, &table, conflict, &scope)?)
        }
        Some(_) => return Err(SqlError::unsupported("ON DUPLICATE KEY")),
        None => None,
    };
    let returning = bind_returning(binder, insert.returning.as_ref(), &scope)?;
    Ok(InsertPlan {
        table,
        targets,
        source,
        defaults,
        on_conflict,
        returning,
    })
}

fn insert_targets(table: &TableDef, columns: &[ast::ObjectName]) -> Result<Vec<usize>> {
    if columns.is_empty() {
        return Ok((0..table.columns.len())
            .filter(|&i| !is_dropped(&table.columns[i].name))
            .collect());
    }
    let mut targets = Vec::with_capacity(columns.len());
    for column in columns {
        let name = object_name(column).1;
        let index = table
            .column(&name)
            .filter(|_| !is_dropped(&name))
            .ok_or_else(|| {
                SqlError::undefined_column(&name)
                    .with_detail(format!("of relation \"{}\"", table.name))
            })?;
        if targets.contains(&index) {
            return Err(SqlError::new(
                "42701",
                format!("column \"{name}\" specified more than once"),
            ));
        }
        targets.push(index);
    }
    Ok(targets)
}

fn bind_insert_source(
    binder: &mut Binder,
    table: &TableDef,
    targets: &[usize],
    listed: bool,
    query: &ast::Query,
) -> Result<InsertSource> {
    if let ast::SetExpr::Values(values) = query.body.as_ref() {
        if query.order_by.is_none() && query.limit_clause.is_none() {
            let width = values.rows.first().map_or(0, |r| r.len());
            let mut rows = Vec::with_capacity(values.rows.len());
            for row in &values.rows {
                if row.len() != width {
                    return Err(SqlError::syntax("VALUES lists must all be the same length"));
                }
                if row.len() > targets.len() {
                    return Err(SqlError::syntax(
                        "INSERT has more expressions than target columns",
                    ));
                }
                if listed && row.len() < targets.len() {
                    return Err(SqlError::syntax(
                        "INSERT has more target columns than expressions",
                    ));
                }
                let mut bound = Vec::with_capacity(targets.len());
                for (e, &column) in row.iter().zip(targets) {
                    bound.push(if is_default_keyword(e) {
                        None
                    } else {
                        Some(bind_assignment(
                            binder,
                            table,
                            column,
                            e,
                            &Scope::default(),
                        )?)
                    });
                }
                bound.resize(targets.len(), None);
                rows.push(bound);
            }
            return Ok(InsertSource::Values(rows));
        }
    }
    let bound = binder.bind_query(query)?;
    if bound.columns.len() > targets.len() {
        return Err(SqlError::syntax(
            "INSERT has more expressions than target columns",
        ));
    }
    if listed && bound.columns.len() < targets.len() {
        return Err(SqlError::syntax(
            "INSERT has more target columns than expressions",
        ));
    }
    for (column, &target) in bound.columns.iter().zip(targets) {
        let def = &table.columns[target];
        check_assignable(&def.name, column.ty, def.data_type)?;
    }
    Ok(InsertSource::Query(Box::new(bound.plan)))
}

fn bind_on_conflict(
    binder: &mut Binder,
    table: &TableDef,
    conflict: &ast::OnConflict,
    scope: &Scope,
) -> Result<OnConflict> {
    let index = match &conflict.conflict_target {
        None => None,
        Some(ast::ConflictTarget::Columns(columns)) => Some(conflict_index(table, columns)?),
        Some(ast::ConflictTarget::OnConstraint(name)) => {
            let name = object_name(name).1;
            if name == format!("{}_pkey", table.name) {
                Some(table.id)
            } else {
                let index = table.index(&name).filter(|i| i.unique).ok_or_else(|| {
                    SqlError::new(
                        "42704",
                        format!(
                            "constraint \"{name}\" for table \"{}\" does not exist",
                            table.name
                        ),
                    )
                })?;
                Some(index.id)
            }
        }
    };
    let action = match &conflict.action {
        ast::OnConflictAction::DoNothing => ConflictAction::Nothing,
        ast::OnConflictAction::DoUpdate(update) => {
            if index.is_none() {
                return Err(SqlError::syntax(
                    "ON CONFLICT DO UPDATE requires inference specification or constraint name",
                ));
            }
            let mut both = scope.clone();
            both.columns
                .extend(table_scope(table, Some("excluded")).columns);
            let assignments = bind_set(binder, table, &update.assignments, &both)?;
            let filter = update
                .selection
                .as_ref()
                .map(|s| {
                    binder
                        .bind_expr_as(s, &both, DataType::Boolean)
                        .map(|t| t.0)
                })
                .transpose()?;
            ConflictAction::Update {
                assignments,
                filter,
            }
        }
    };
    Ok(OnConflict { index, action })
}

fn conflict_index(table: &TableDef, columns: &[ast::Ident]) -> Result<u64> {
    let mut positions: Vec<usize> = columns
        .iter()
        .map(|c| {
            let name = normalize_ident(c);
            table
                .column(&name)
                .ok_or_else(|| SqlError::undefined_column(&name))
        })
        .collect::<Result<_>>()?;
    positions.sort_unstable();
    let same = |cols: &[usize]| {
        let mut sorted = cols.to_vec();
        sorted.sort_unstable();
        sorted == positions
    };
    if !table.primary_key.is_empty() && same(&table.primary_key) {
        return Ok(table.id);
    }
    table
        .indexes
        .iter()
        .find(|i| i.unique && same(&i.columns))
        .map(|i| i.id)
        .ok_or_else(|| {
            SqlError::new(
                "42P10",
                "there is no unique or exclusion constraint matching the ON CONFLICT specification",
            )
        })
}

fn bind_set(
    binder: &mut Binder,
    table: &TableDef,
    assignments: &[ast::Assignment],
    scope: &Scope,
) -> Result<Vec<(usize, Expr)>> {
    let mut bound: Vec<(usize, Expr)> = Vec::new();
    for assignment in assignments {
        let pairs: Vec<(&ast::ObjectName, &AstExpr)> = match (&assignment.target, &assignment.value)
        {
            (ast::AssignmentTarget::ColumnName(name), value) => vec![(name, value)],
            (ast::AssignmentTarget::Tuple(names), AstExpr::Tuple(values))
                if names.len() == values.len() =>
            {
                names.iter().zip(values).collect()
            }
            (ast::AssignmentTarget::Tuple(_), _) => {
                return Err(SqlError::syntax(
                    "number of columns does not match number of values",
                ))
            }
        };
        for (name, value) in pairs {
            let index = assignment_column(table, name)?;
            if bound.iter().any(|(i, _)| *i == index) {
                return Err(SqlError::new(
                    "42601",
                    format!(
                        "multiple assignments to same column \"{}\"",
                        table.columns[index].name
                    ),
                ));
            }
            let expr = if is_default_keyword(value) {
                match &table.columns[index].default {
                    Some(text) => {
                        let default = crate::session::ddl::parse_expr(text)?;
                        bind_assignment(binder, table, index, &default, &Scope::default())?
                    }
                    None => Expr::Literal(Value::Null),
                }
            } else {
                bind_assignment(binder, table, index, value, scope)?
            };
            bound.push((index, expr));
        }
    }
    Ok(bound)
}

/// The position of an assigned column.
fn assignment_column(table: &TableDef, name: &ast::ObjectName) -> Result<usize> {
    let name = object_name(name).1;
    table
        .column(&name)
        .filter(|_| !is_dropped(&name))
        .ok_or_else(|| {
            SqlError::undefined_column(&name).with_detail(format!("of relation \"{}\"", table.name))
        })
}

impl InsertPlan {
    fn returning_columns(&self) -> Vec<Column> {
        returning_columns(&self.returning)
    }

    fn run(self, ctx: &mut ExecCtx) -> Result<QueryResult> {
        let sources: Vec<Vec<Option<Value>>> = match &self.source {
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
        };
        let mut written = Vec::new();
        let mut updated_keys: Vec<Vec<u8>> = Vec::new();
        for source in sources {
            let values = self.full_row(source, ctx)?;
            if let Some(row) = self.insert_one(values, &mut updated_keys, ctx)? {
                written.push(row);
            }
        }
        let (columns, rows) = returning_rows(&self.returning, &written, ctx)?;
        let mut result = QueryResult::rows(format!("INSERT 0 {}", written.len()), columns, rows);
        if self.returning.is_none() {
            result.rows.clear();
        }
        Ok(result)
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
struct Target {
    table: Arc<TableDef>,
    access: Access,
    /// Over the table's row, or with `others` over the table's row followed by an other row.
    filter: Option<Expr>,
    /// `UPDATE ... FROM` / `DELETE ... USING`: the other tables, joined to each row by `filter`.
    others: Option<Plan>,
}

fn bind_target(
    binder: &mut Binder,
    relation: &ast::TableFactor,
    from: &[ast::TableWithJoins],
    selection: Option<&AstExpr>,
) -> Result<(Target, Scope)> {
    let ast::TableFactor::Table { name, alias, .. } = relation else {
        return Err(SqlError::unsupported("this UPDATE/DELETE target"));
    };
    let table = lookup_table(binder, name)?;
    let alias = alias.as_ref().map(|a| normalize_ident(&a.name));
    let mut scope = table_scope(&table, alias.as_deref());
    let others = if from.is_empty() {
        None
    } else {
        let (plan, other_scope) = binder.bind_from(from)?;
        scope.columns.extend(other_scope.columns);
        Some(plan)
    };
    let predicate = match selection {
        Some(selection) => {
            let (predicate, ty) = binder.bind_expr_with_level(selection, &scope)?;
            if ty.is_some_and(|t| t != DataType::Boolean) {
                return Err(SqlError::datatype_mismatch(
                    "argument of WHERE must be type boolean",
                ));
            }
            Some(predicate)
        }
        None => None,
    };
    let scan = Plan::Scan {
        table: table.clone(),
        access: Access::Full,
        filter: None,
        columns: None,
    };
    let (access, filter) = match (predicate, &others) {
        (Some(predicate), None) => {
            match crate::planner::access::filter(scan, predicate, binder.stats) {
                Plan::Scan { access, filter, .. } => (access, filter),
                _ => unreachable!("filtering a bare scan gives a scan"),
            }
        }
        (predicate, _) => (Access::Full, predicate),
    };
    let target = Target {
        table,
        access,
        filter,
        others,
    };
    Ok((target, scope))
}

impl Target {
    /// The scan plan, for EXPLAIN.
    fn plan(&self) -> Plan {
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

struct UpdatePlan {
    target: Target,
    assignments: Vec<(usize, Expr)>,
    returning: Option<Returning>,
}

fn bind_update(binder: &mut Binder, update: &ast::Update) -> Result<UpdatePlan> {
    if !update.table.joins.is_empty() {
        return Err(SqlError::unsupported("UPDATE of a join"));
    }
    let from = match &update.from {
        Some(
            ast::UpdateTableFromKind::BeforeSet(from) | ast::UpdateTableFromKind::AfterSet(from),
        ) => from.as_slice(),
        None => &[],
    };
    let (target, scope) = bind_target(
        binder,
        &update.table.relation,
        from,
        update.selection.as_ref(),
    )?;
    let assignments = bind_set(binder, &target.table, &update.assignments, &scope)?;
    let returning = bind_returning(binder, update.returning.as_ref(), &scope)?;
    Ok(UpdatePlan {
        target,
        assignments,
        returning,
    })
}

impl UpdatePlan {
    fn returning_columns(&self) -> Vec<Column> {
        returning_columns(&self.returning)
    }

    fn run(self, ctx: &mut ExecCtx) -> Result<QueryResult> {
        let table = self.target.table.clone();
        let mut written = Vec::new();
        let mut moved: Vec<Vec<u8>> = Vec::new();
        let count = self.target.for_each_row(ctx, None, |ctx, pk, old, row| {
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
        let (columns, rows) = returning_rows(&self.returning, &written, ctx)?;
        Ok(QueryResult::rows(format!("UPDATE {count}"), columns, rows))
    }
}

struct DeletePlan {
    target: Target,
    limit: Option<Expr>,
    returning: Option<Returning>,
}

fn bind_delete(binder: &mut Binder, delete: &ast::Delete) -> Result<DeletePlan> {
    let from = match &delete.from {
        ast::FromTable::WithFromKeyword(from) | ast::FromTable::WithoutKeyword(from) => from,
    };
    let [relation] = from.as_slice() else {
        return Err(SqlError::unsupported("DELETE from several tables"));
    };
    if !relation.joins.is_empty() {
        return Err(SqlError::unsupported("DELETE from a join"));
    }
    let using = delete.using.as_deref().unwrap_or_default();
    let (target, scope) =
        bind_target(binder, &relation.relation, using, delete.selection.as_ref())?;
    let limit = delete
        .limit
        .as_ref()
        .map(|l| {
            binder
                .bind_expr_as(l, &Scope::default(), DataType::BigInt)
                .map(|t| t.0)
        })
        .transpose()?;
    let returning = bind_returning(binder, delete.returning.as_ref(), &scope)?;
    Ok(DeletePlan {
        target,
        limit,
        returning,
    })
}

impl DeletePlan {
    fn returning_columns(&self) -> Vec<Column> {
        returning_columns(&self.returning)
    }

    fn run(self, ctx: &mut ExecCtx) -> Result<QueryResult> {
        let limit = match &self.limit {
            Some(e) => match e.eval(&[], ctx)? {
                Value::Null => None,
                v => Some(
                    usize::try_from(ops::as_i64(&v))
                        .map_err(|_| SqlError::new("2201W", "LIMIT must not be negative"))?,
                ),
            },
            None => None,
        };
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
        let (columns, rows) = returning_rows(&self.returning, &deleted, ctx)?;
        Ok(QueryResult::rows(format!("DELETE {count}"), columns, rows))
    }
}

/// The scan plan behind an UPDATE or DELETE (for EXPLAIN), with its root label.
pub fn dml_plan(binder: &mut Binder, statement: &ast::Statement) -> Result<Option<(String, Plan)>> {
    Ok(match statement {
        ast::Statement::Update(update) => {
            let plan = bind_update(binder, update)?;
            Some((
                format!("Update on {}", plan.target.table.name),
                plan.target.plan(),
            ))
        }
        ast::Statement::Delete(delete) => {
            let plan = bind_delete(binder, delete)?;
            Some((
                format!("Delete on {}", plan.target.table.name),
                plan.target.plan(),
            ))
        }
        _ => None,
    })
}

/// Row count and a uniform sample (reservoir) of a table's rows, for ANALYZE.
pub fn sample_table(txn: &mut Transaction, table: &TableDef) -> Result<(u64, Vec<Row>)> {
    use rand::Rng;
    let mut rng = rand::thread_rng();
    let mut sample = Vec::new();
    let mut seen: u64 = 0;
    for row in txn.scan_rows(table, Bound::Unbounded, Bound::Unbounded)? {
        let (_, values) = row?;
        seen += 1;
        if sample.len() < crate::planner::stats::SAMPLE_ROWS {
            sample.push(values);
        } else {
            let slot = rng.gen_range(0..seen);
            if let Some(entry) = sample.get_mut(slot as usize) {
                *entry = values;
            }
        }
    }
    Ok((seen, sample))
}

/// Rows of `COPY ... FROM STDIN`: each field is a value's text, or `None` for NULL.
pub type CopyRows<'a> = &'a mut dyn Iterator<Item = Result<Vec<Option<String>>>>;

/// `COPY table [(columns)] FROM STDIN`: parses each field as its column's type and inserts the
/// rows with the checks of INSERT (defaults for columns not listed, NOT NULL, unique, foreign
/// keys). Returns the number of rows.
pub fn copy_rows(
    binder: &mut Binder,
    ctx: &mut ExecCtx,
    table: &str,
    columns: &[String],
    rows: CopyRows,
) -> Result<u64> {
    let table = binder
        .user_table(None, table)
        .ok_or_else(|| SqlError::undefined_table(table))?;
    let names: Vec<ast::ObjectName> = columns
        .iter()
        .map(|c| ast::ObjectName::from(vec![ast::Ident::with_quote('"', c.as_str())]))
        .collect();
    let targets = insert_targets(&table, &names)?;
    let plan = InsertPlan {
        defaults: bind_defaults(binder, &table)?,
        table,
        targets,
        source: InsertSource::Values(vec![]),
        on_conflict: None,
        returning: None,
    };
    let mut count = 0;
    for (line, row) in rows.enumerate() {
        ctx.check_interrupt()?;
        let row = row?;
        if row.len() != plan.targets.len() {
            return Err(SqlError::new(
                "22P04",
                format!("wrong number of columns in line {}", line + 1),
            ));
        }
        let values = row
            .iter()
            .zip(&plan.targets)
            .map(|(field, &c)| {
                field
                    .as_ref()
                    .map(|text| Value::parse(&plan.table.columns[c].data_type, text))
                    .transpose()
            })
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|err| {
                SqlError::from(err).with_detail(format!(
                    "COPY {}, line {}",
                    plan.table.name,
                    line + 1
                ))
            })?;
        let values = plan.full_row(values, ctx)?;
        plan.insert_one(values, &mut Vec::new(), ctx)?;
        count += 1;
    }
    Ok(count)
}
