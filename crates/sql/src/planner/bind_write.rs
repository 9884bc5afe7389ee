//! Binding of writes: INSERT, UPDATE and DELETE become the write nodes of a plan
//! (`execution::write`) — the target table, the columns assigned and their bound expressions,
//! defaults, ON CONFLICT, the rows an UPDATE or DELETE visits (with the access path the planner
//! picks from the WHERE clause) and RETURNING.

use std::sync::Arc;

use sqlparser::ast::{self, Expr as AstExpr};
use steady_engine::catalog::{ColumnDef, Identity, TableDef};
use steady_types::{DataType, Value};

use crate::error::{Result, SqlError};
use crate::execution::constraints::{checks, is_hidden, CheckExpr};
use crate::execution::expr::Expr;
use crate::execution::plan::{Access, Plan};
use crate::execution::privileges::{Privilege, RelationKind};
use crate::execution::write::{
    ConflictAction, DeletePlan, InsertPlan, InsertSource, OnConflict, Returning, Target, UpdatePlan,
};
use crate::parser::parse_expr;
use crate::planner::bind::{table_columns, Binder, BoundQuery, Scope};
use crate::types::ops::{self, Category};
use crate::types::{normalize_ident, object_name};

impl Binder<'_> {
    /// Binds a query or a write into a plan and the columns it returns (a write's RETURNING
    /// columns; none without RETURNING). Other statements are not planned here.
    pub fn bind_statement(&mut self, statement: &ast::Statement) -> Result<Option<BoundQuery>> {
        if let Some(rewritten) = self.rewrite_view_write(statement)? {
            return self.bind_statement(&rewritten);
        }
        let (plan, returning) = match statement {
            ast::Statement::Query(query) => {
                self.top_level_with = query.with.is_some();
                let mut bound = self.bind_query(query)?;
                bound.required = std::mem::take(&mut self.required);
                return Ok(Some(bound));
            }
            ast::Statement::Insert(insert) => {
                let insert = bind_insert(self, insert)?;
                let columns = returning_columns(&insert.returning);
                (Plan::Insert(Box::new(insert)), columns)
            }
            ast::Statement::Update(update) => {
                let update = bind_update(self, update)?;
                let columns = returning_columns(&update.returning);
                (Plan::Update(Box::new(update)), columns)
            }
            ast::Statement::Delete(delete) => {
                let delete = bind_delete(self, delete)?;
                let columns = returning_columns(&delete.returning);
                (Plan::Delete(Box::new(delete)), columns)
            }
            _ => return Ok(None),
        };
        Ok(Some(BoundQuery {
            plan,
            columns: returning,
            required: std::mem::take(&mut self.required),
        }))
    }
}

impl Binder<'_> {
    /// `INSERT INTO table` (every column) the rows of an already bound query: CREATE TABLE AS.
    pub fn bind_insert_rows(&mut self, table: Arc<TableDef>, source: Plan) -> Result<BoundQuery> {
        let table_for_checks = Arc::clone(&table);
        let targets = insert_targets(&table, &[])?;
        let defaults = bind_defaults(self, &table)?;
        let insert = InsertPlan {
            table,
            targets,
            source: InsertSource::Query(Box::new(source)),
            defaults,
            on_conflict: None,
            returning: None,
            checks: bind_checks(self, &table_for_checks)?,
            generated: bind_generated(self, &table_for_checks)?,
        };
        Ok(BoundQuery {
            plan: Plan::Insert(Box::new(insert)),
            columns: Vec::new(),
            required: Vec::new(),
        })
    }
}

fn returning_columns(returning: &Option<Returning>) -> Vec<crate::execution::plan::Column> {
    returning
        .as_ref()
        .map(|r| r.columns.clone())
        .unwrap_or_default()
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

/// Records what a write of `table` needs: `privilege`, and SELECT when it reads the rows (a
/// WHERE clause, another table, RETURNING), as PostgreSQL asks for SELECT on the columns read.
fn require_write(binder: &mut Binder, table: &TableDef, privilege: Privilege, reads_rows: bool) {
    let table_kind = RelationKind::Table;
    binder.require(table.id, &table.name, table_kind, privilege);
    if reads_rows {
        binder.require(table.id, &table.name, table_kind, Privilege::Select);
    }
}

fn lookup_table(binder: &Binder, name: &ast::ObjectName) -> Result<Arc<TableDef>> {
    let (schema, table) = object_name(name);
    if let Some(found) = binder.user_table(schema.as_deref(), &table)? {
        if !binder.refreshing {
            crate::planner::bind::view::refuse_write(&found)?;
        }
        return Ok(found);
    }
    if crate::system::lookup(schema.as_deref(), &table).is_some() {
        return Err(SqlError::new(
            "42809",
            format!("cannot change system view \"{table}\""),
        ));
    }
    if binder.engine.view(&table)?.is_some() {
        return Err(SqlError::unsupported(format!(
            "writing to view \"{table}\" (write to its tables)"
        )));
    }
    Err(SqlError::undefined_table(&table))
}

pub fn table_scope(table: &TableDef, alias: Option<&str>) -> Scope {
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
                    let ast = parse_expr(text)?;
                    bind_assignment(binder, table, i, &ast, &Scope::default())
                })
                .transpose()
        })
        .collect()
}

/// The table's CHECK constraints, bound over its row.
pub fn bind_checks(binder: &mut Binder, table: &TableDef) -> Result<Vec<CheckExpr>> {
    let scope = table_scope(table, None);
    checks(table)
        .into_iter()
        .map(|check| {
            let ast = parse_expr(&check.expression)?;
            let (expr, _) = binder.bind_expr_with_level(&ast, &scope)?;
            Ok(CheckExpr {
                name: check.name,
                expr,
                view: None,
            })
        })
        .collect()
}

/// The check options of the views a write goes through, bound over the table's row; taken
/// from the binder, so that each write binds only its own.
fn bind_view_checks(binder: &mut Binder, table: &TableDef) -> Result<Vec<CheckExpr>> {
    binder.cascaded_check = false;
    let scope = table_scope(table, None);
    std::mem::take(&mut binder.view_checks)
        .into_iter()
        .map(|check| {
            let (expr, _) = binder.bind_expr_with_level(&check.condition, &scope)?;
            Ok(CheckExpr {
                name: String::new(),
                expr,
                view: Some(check.view),
            })
        })
        .collect()
}

/// The table's generated columns, each with its expression bound over the row.
pub fn bind_generated(binder: &mut Binder, table: &TableDef) -> Result<Vec<(usize, Expr)>> {
    let scope = table_scope(table, None);
    let matching = std::mem::replace(&mut binder.expression_columns, false);
    let generated = table.columns.iter().enumerate();
    let bound = generated
        .filter_map(|(i, column)| Some((i, column.generated.as_ref()?)))
        .map(|(i, text)| {
            let (expr, _) = binder.bind_expr_with_level(&parse_expr(text)?, &scope)?;
            Ok((i, expr))
        })
        .collect();
    binder.expression_columns = matching;
    bound
}

fn is_default_keyword(e: &AstExpr) -> bool {
    matches!(e, AstExpr::Identifier(ident) if ident.quote_style.is_none() && ident.value.eq_ignore_ascii_case("default"))
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
    require_write(binder, &table, Privilege::Insert, returning.is_some());
    if on_conflict
        .as_ref()
        .is_some_and(|c| matches!(c.action, ConflictAction::Update { .. }))
    {
        require_write(binder, &table, Privilege::Update, true);
    }
    let mut checks = bind_checks(binder, &table)?;
    checks.extend(bind_view_checks(binder, &table)?);
    let generated = bind_generated(binder, &table)?;
    Ok(InsertPlan {
        checks,
        generated,
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
            .filter(|&i| !is_hidden(&table.columns[i].name))
            .collect());
    }
    let mut targets = Vec::with_capacity(columns.len());
    for column in columns {
        let name = object_name(column).1;
        let index = table
            .column(&name)
            .filter(|_| !is_hidden(&name))
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
                    let overridden =
                        binder.overriding_user_value && table.columns[column].identity.is_some();
                    bound.push(if is_default_keyword(e) || overridden {
                        None
                    } else {
                        if !binder.overriding_system_value {
                            always_on_insert(&table.columns[column])?;
                        }
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
    if binder.overriding_user_value {
        return Err(SqlError::unsupported(
            "INSERT ... OVERRIDING USER VALUE of a query (give VALUES)",
        ));
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
        if !binder.overriding_system_value {
            always_on_insert(def)?;
        }
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
    let (marked, columns): (Vec<&ast::Ident>, Vec<&ast::Ident>) = columns.iter().partition(|c| {
        c.quote_style.is_some() && c.value.starts_with(crate::parser::CONFLICT_PREDICATE)
    });
    let predicate = marked
        .first()
        .map(|c| crate::parser::parse_expr(&c.value[crate::parser::CONFLICT_PREDICATE.len()..]))
        .transpose()?;
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
    let names: Vec<String> = columns.iter().map(|c| normalize_ident(c)).collect();
    let partial_fits = |index: &steady_engine::catalog::IndexDef| {
        let Some(predicate) = &predicate else {
            return false;
        };
        let parts: Option<Vec<(&str, &str)>> = index
            .columns
            .iter()
            .map(|&c| crate::execution::constraints::column_partial(&table.columns[c].name))
            .collect();
        let Some(parts) = parts else { return false };
        let mut elements: Vec<String> = parts.iter().map(|(e, _)| e.to_string()).collect();
        let mut wanted = names.clone();
        elements.sort();
        wanted.sort();
        elements == wanted
            && parts
                .first()
                .is_some_and(|(_, p)| crate::planner::bind_expr::implies(predicate, p))
    };
    table
        .indexes
        .iter()
        .find(|i| i.unique && (same(&i.columns) || partial_fits(i)))
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
                        let default = parse_expr(text)?;
                        bind_assignment(binder, table, index, &default, &Scope::default())?
                    }
                    None => Expr::Literal(Value::Null),
                }
            } else {
                always_on_update(&table.columns[index])?;
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
        .filter(|_| !is_hidden(&name))
        .ok_or_else(|| {
            SqlError::undefined_column(&name).with_detail(format!("of relation \"{}\"", table.name))
        })
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
            let keyed = binder.with_level(scope.clone(), |b| {
                b.with_partial_index_keys(selection, predicate, &scope)
            })?;
            Some(keyed)
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
    let mut target = Target {
        table,
        access,
        filter,
        others,
        shown: Box::new(Plan::single_row()),
    };
    target.shown = Box::new(target.explain_plan());
    Ok((target, scope))
}

fn bind_update(binder: &mut Binder, update: &ast::Update) -> Result<UpdatePlan> {
    if !update.table.joins.is_empty() {
        return Err(SqlError::unsupported("UPDATE of a join"));
    }
    refuse_unhonoured(
        "UPDATE",
        &update.order_by,
        update.or.is_some(),
        &update.output,
    )?;
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
    let limit = bind_write_limit(binder, update.limit.as_ref())?;
    let returning = bind_returning(binder, update.returning.as_ref(), &scope)?;
    let reads_rows = update.selection.is_some() || !from.is_empty() || returning.is_some();
    require_write(binder, &target.table, Privilege::Update, reads_rows);
    let mut checks = bind_checks(binder, &target.table)?;
    checks.extend(bind_view_checks(binder, &target.table)?);
    let generated = bind_generated(binder, &target.table)?;
    Ok(UpdatePlan {
        checks,
        generated,
        target,
        assignments,
        limit,
        returning,
    })
}

/// `LIMIT n` of an UPDATE or DELETE (an extension: the first n rows in primary-key order).
fn bind_write_limit(binder: &mut Binder, limit: Option<&AstExpr>) -> Result<Option<Expr>> {
    limit
        .map(|l| {
            binder
                .bind_expr_as(l, &Scope::default(), DataType::BigInt)
                .map(|t| t.0)
        })
        .transpose()
}

/// Refuses the clauses of other dialects that the parser accepts but SteadyDB does not honour
/// (0A000), rather than running the statement without them: ORDER BY (which rows a LIMIT takes),
/// SQLite's `UPDATE OR ...` and SQL Server's OUTPUT.
fn refuse_unhonoured(
    statement: &str,
    order_by: &[ast::OrderByExpr],
    sqlite_or: bool,
    output: &Option<ast::OutputClause>,
) -> Result<()> {
    let clause = if !order_by.is_empty() {
        "ORDER BY"
    } else if sqlite_or {
        "OR"
    } else if output.is_some() {
        "OUTPUT"
    } else {
        return Ok(());
    };
    Err(SqlError::unsupported(format!("{statement} ... {clause}")))
}

fn bind_delete(binder: &mut Binder, delete: &ast::Delete) -> Result<DeletePlan> {
    // A delete writes no row a view's check option could refuse.
    binder.view_checks.clear();
    binder.cascaded_check = false;
    let from = match &delete.from {
        ast::FromTable::WithFromKeyword(from) | ast::FromTable::WithoutKeyword(from) => from,
    };
    let [relation] = from.as_slice() else {
        return Err(SqlError::unsupported("DELETE from several tables"));
    };
    if !relation.joins.is_empty() || !delete.tables.is_empty() {
        return Err(SqlError::unsupported("DELETE from a join"));
    }
    refuse_unhonoured("DELETE", &[], false, &delete.output)?;
    let using = delete.using.as_deref().unwrap_or_default();
    let (target, scope) =
        bind_target(binder, &relation.relation, using, delete.selection.as_ref())?;
    let in_key_order = bind_key_order(binder, &target.table, &delete.order_by, &scope)?;
    let limit = bind_write_limit(binder, delete.limit.as_ref())?;
    let returning = bind_returning(binder, delete.returning.as_ref(), &scope)?;
    let reads_rows = delete.selection.is_some() || !using.is_empty() || returning.is_some();
    require_write(binder, &target.table, Privilege::Delete, reads_rows);
    Ok(DeletePlan {
        target,
        limit,
        in_key_order,
        returning,
    })
}

/// `DELETE ... ORDER BY` (MySQL's, for the rows a LIMIT takes): honoured when it orders by the
/// table's primary key, or the key's first columns, ascending — the order SteadyDB writes in;
/// any other order is refused (0A000), never ignored. Whether there is one.
fn bind_key_order(
    binder: &mut Binder,
    table: &TableDef,
    order_by: &[ast::OrderByExpr],
    scope: &Scope,
) -> Result<bool> {
    for (position, item) in order_by.iter().enumerate() {
        let (expr, _) = binder.bind_expr(&item.expr, scope)?;
        let descending = crate::planner::bind::sort_descending(&item.options)?;
        let key_column =
            matches!(expr, Expr::Column(c) if table.primary_key.get(position) == Some(&c));
        if descending || !key_column || item.with_fill.is_some() {
            return Err(SqlError::unsupported(
                "DELETE ... ORDER BY other than the primary key's columns in ascending order",
            ));
        }
    }
    Ok(!order_by.is_empty())
}

/// 428C9 for a value other than DEFAULT given to a GENERATED ALWAYS column by INSERT.
fn always_on_insert(column: &ColumnDef) -> Result<()> {
    match always_detail(column) {
        Some(detail) => Err(SqlError::new(
            "428C9",
            format!(
                "cannot insert a non-DEFAULT value into column \"{}\"",
                column.name
            ),
        )
        .with_detail(detail)),
        None => Ok(()),
    }
}

/// 428C9 for a value other than DEFAULT given to a GENERATED ALWAYS column by UPDATE.
fn always_on_update(column: &ColumnDef) -> Result<()> {
    match always_detail(column) {
        Some(detail) => Err(SqlError::new(
            "428C9",
            format!("column \"{}\" can only be updated to DEFAULT", column.name),
        )
        .with_detail(detail)),
        None => Ok(()),
    }
}

/// Why a column takes no value but DEFAULT (an identity column GENERATED ALWAYS, a generated
/// column), as PostgreSQL's DETAIL says; None when it takes any value.
fn always_detail(column: &ColumnDef) -> Option<String> {
    if column.generated.is_some() {
        return Some(format!("Column \"{}\" is a generated column.", column.name));
    }
    (column.identity == Some(Identity::Always)).then(|| {
        format!(
            "Column \"{}\" is an identity column defined as GENERATED ALWAYS.",
            column.name
        )
    })
}
