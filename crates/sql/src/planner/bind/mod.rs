//! The binder: parsed SQL (sqlparser's AST) to bound expressions and query plans.
//!
//! It resolves names against scopes (the columns of the FROM clause, then enclosing queries for
//! correlated subqueries), types every expression, coerces untyped string literals and parameters
//! to the type their context asks for (as PostgreSQL does with `unknown`), and refuses operators
//! that do not exist for their operand types (42883) before anything runs. Access paths are chosen
//! by [`crate::planner::access`].

pub(crate) mod from;
mod grouping;
mod row_lock;
pub(crate) mod view;
mod window;
mod with;

use std::sync::Arc;

use sqlparser::ast::{self, Expr as AstExpr, SelectItem, SetExpr, TableFactor};
use steady_engine::catalog::TableDef;
use steady_engine::engine::Engine;
use steady_types::{DataType, Value};

use crate::error::{Result, SqlError};
use crate::execution::aggregate::AggCall;
use crate::execution::expr::Expr;
use crate::execution::plan::{Column, JoinKind, Plan, SetOpKind, SortKey};
use crate::execution::privileges::{Privilege, RelationKind, Required};
use crate::execution::set_functions::SetCall;
use crate::execution::window::{Frame, WindowCall, WindowFunc};
use crate::planner::stats::Statistics;
use crate::system::arrays::ordered_array;
use crate::system::{self, SystemTable};
use crate::types::ops::{self, Category, CmpOp};
use crate::types::{normalize_ident, object_name};

/// A typed bound expression.
pub type Typed = (Expr, Option<DataType>);

/// A column visible to expressions: its table alias, name and type.
#[derive(Debug, Clone)]
pub struct ScopeColumn {
    pub table: Option<String>,
    pub name: String,
    pub ty: Option<DataType>,
    /// Reachable only by a qualified name (a dropped column, or one side of a USING column).
    pub hidden: bool,
    /// Part of its table's primary key (GROUP BY the key allows the table's other columns).
    pub key: bool,
    /// A system column (`tableoid` of a system view): found by its name, left out of `*`.
    pub system: bool,
}

/// The columns of one query level's input row.
#[derive(Debug, Clone, Default)]
pub struct Scope {
    pub columns: Vec<ScopeColumn>,
}

impl Scope {
    pub fn of_table(alias: &str, columns: &[Column]) -> Scope {
        Scope {
            columns: columns
                .iter()
                .map(|c| ScopeColumn {
                    table: Some(alias.to_owned()),
                    name: c.name.clone(),
                    ty: c.ty,
                    hidden: crate::execution::constraints::is_hidden(&c.name),
                    key: false,
                    system: false,
                })
                .collect(),
        }
    }

    pub(crate) fn find(&self, table: Option<&str>, name: &str) -> Result<Option<usize>> {
        let mut found = None;
        for (i, column) in self.columns.iter().enumerate() {
            let table_matches = match table {
                Some(t) => column.table.as_deref() == Some(t),
                None => !column.hidden,
            };
            if table_matches && column.name == name {
                if found.is_some() {
                    return Err(SqlError::new(
                        "42702",
                        format!("column reference \"{name}\" is ambiguous"),
                    ));
                }
                found = Some(i);
            }
        }
        Ok(found)
    }

    /// The columns of FROM item `table` in order, when `table` names one and no column: a
    /// whole-row reference (`row_to_json(t)`); its hidden and system columns left out.
    pub(crate) fn whole_row(&self, table: &str) -> Option<Vec<usize>> {
        if self.columns.iter().any(|c| !c.hidden && c.name == table) {
            return None;
        }
        let columns: Vec<usize> = (0..self.columns.len())
            .filter(|&i| {
                let c = &self.columns[i];
                c.table.as_deref() == Some(table) && !c.hidden && !c.system
            })
            .collect();
        (!columns.is_empty()).then_some(columns)
    }

    fn has_table(&self, table: &str) -> bool {
        self.columns
            .iter()
            .any(|c| c.table.as_deref() == Some(table))
    }
}

/// A bound query: its plan and its output columns.
#[derive(Debug, Clone)]
pub struct BoundQuery {
    pub plan: Plan,
    pub columns: Vec<Column>,
    /// The privileges running it needs (the whole statement's, on the top-level query only).
    pub required: Vec<Required>,
}

/// Binds the statements of one execution. Parameters are typed as they are met.
pub struct Binder<'a> {
    pub engine: &'a Arc<Engine>,
    pub stats: &'a Statistics,
    /// The types of `$1`, `$2`...: declared, or inferred from their first use.
    pub params: Vec<Option<DataType>>,
    /// Enclosing query levels' scopes, innermost last (the current level is last).
    pub(crate) scopes: Vec<Scope>,
    /// Per level: whether an expression at that level or below referred to a level above it.
    pub(crate) correlated: Vec<bool>,
    /// Aggregates met while binding a grouped query's expressions.
    aggregates: Option<Vec<AggCall>>,
    /// Window calls met while binding a select list or ORDER BY (`None` where none may be).
    windows: Option<Vec<crate::execution::window::WindowCall>>,
    /// The `WINDOW name AS (...)` definitions of the select being bound.
    named_windows: Vec<ast::NamedWindowDefinition>,
    /// Set-returning calls met while binding a select list (`None` where none may be), and the
    /// input width their columns follow.
    pub(crate) set_calls: Option<(usize, Vec<SetCall>)>,
    /// The user tables and views the statement names (a view's dependencies).
    pub relations_read: Vec<String>,
    /// The privileges the statement needs, gathered as it is bound (none inside a view).
    pub required: Vec<Required>,
    /// An INSERT may give GENERATED ALWAYS columns values (`OVERRIDING SYSTEM VALUE`).
    pub overriding_system_value: bool,
    /// An INSERT's values for identity columns are replaced by their sequences'
    /// (`OVERRIDING USER VALUE`).
    pub overriding_user_value: bool,
    /// A materialized view's REFRESH is binding its writes (the only writes it takes).
    pub refreshing: bool,
    /// The conditions of the views a write goes through that its new rows must satisfy (see
    /// `planner::view_write`), and whether a view above has a CASCADED check option.
    pub(crate) view_checks: Vec<crate::planner::view_write::ViewCheck>,
    pub(crate) cascaded_check: bool,
    /// How many views deep the binding is.
    view_depth: usize,
    next_subquery: usize,
    /// WITH queries in scope, innermost last.
    ctes: Vec<with::CteDef>,
    /// Whether the next WITH list bound is the statement's own (the only place an INSERT,
    /// UPDATE or DELETE may be in one).
    pub(crate) top_level_with: bool,
    /// The recursive term of a WITH RECURSIVE query being bound.
    working: Option<with::Working>,
    /// Whether a volatile function was bound (since the binding of a WITH query began).
    pub(crate) volatile_seen: bool,
    /// Whether an expression an expression index holds binds to the index's hidden column
    /// (off while binding the generation expressions that compute those columns).
    pub(crate) expression_columns: bool,
    /// The transaction the statement will run in: a table or view it names that another
    /// transaction's uncommitted DDL has claimed is looked up only after that one ends
    /// (`Engine::wait_for_claim`). None: bound without running (Describe, the shell's binding).
    waiter: Option<(steady_engine::txn::TxnId, Option<std::time::Duration>)>,
}

impl<'a> Binder<'a> {
    pub fn new(
        engine: &'a Arc<Engine>,
        stats: &'a Statistics,
        params: Vec<Option<DataType>>,
    ) -> Self {
        Binder {
            engine,
            stats,
            params,
            scopes: Vec::new(),
            correlated: Vec::new(),
            aggregates: None,
            windows: None,
            named_windows: Vec::new(),
            set_calls: None,
            relations_read: Vec::new(),
            required: Vec::new(),
            overriding_system_value: false,
            overriding_user_value: false,
            refreshing: false,
            view_checks: Vec::new(),
            cascaded_check: false,
            view_depth: 0,
            next_subquery: 0,
            ctes: Vec::new(),
            top_level_with: false,
            working: None,
            volatile_seen: false,
            expression_columns: true,
            waiter: None,
        }
    }

    /// A binder for a statement that runs in transaction `txn` (see [`Binder::waiter`]).
    pub fn for_transaction(mut self, txn: &steady_engine::engine::Transaction) -> Self {
        self.waiter = Some((txn.id(), txn.lock_timeout()));
        self
    }

    /// Waits, if the statement runs in a transaction, until no other transaction's DDL claims
    /// relation `name` (its definition is then committed or rolled back).
    pub(crate) fn wait_for_claim(&self, name: &str) -> Result<()> {
        if let Some((waiter, timeout)) = self.waiter {
            self.engine.wait_for_claim(name, waiter, timeout)?;
        }
        Ok(())
    }

    /// Records that the statement needs `privilege` on relation `relation` (called `name`),
    /// named by the statement itself: inside a view, the view owner's rights apply
    /// (`execution::privileges`).
    pub(crate) fn require(
        &mut self,
        relation: u64,
        name: &str,
        kind: RelationKind,
        privilege: Privilege,
    ) {
        let need = Required {
            relation,
            name: name.to_owned(),
            kind,
            privilege,
        };
        if self.view_depth == 0 && !self.required.contains(&need) {
            self.required.push(need);
        }
    }

    // -----------------------------------------------------------------------------------------
    // Queries
    // -----------------------------------------------------------------------------------------

    /// Binds a query at a new level (nested in the current one, if any).
    pub fn bind_query(&mut self, query: &ast::Query) -> Result<BoundQuery> {
        match &query.with {
            Some(with) => self.bind_with(with, query),
            None => self.bind_query_body(query),
        }
    }

    /// Binds a query's body, ORDER BY and LIMIT (its WITH queries already in scope).
    fn bind_query_body(&mut self, query: &ast::Query) -> Result<BoundQuery> {
        let order_by = match &query.order_by {
            Some(ob) => match &ob.kind {
                ast::OrderByKind::Expressions(items) => items.as_slice(),
                ast::OrderByKind::All(_) => return Err(SqlError::unsupported("ORDER BY ALL")),
            },
            None => &[],
        };
        let (limit, offset) = self.bind_limit(query)?;
        let with_ties = query.fetch.as_ref().is_some_and(|f| f.with_ties);
        if with_ties && order_by.is_empty() {
            return Err(SqlError::syntax(
                "WITH TIES cannot be specified without ORDER BY clause",
            ));
        }
        let lock = row_lock::RowLockClause::of_query(&query.locks);
        let mut bound = match query.body.as_ref() {
            SetExpr::Select(select) => self.bind_select(select, order_by, lock)?,
            other if lock.is_some() => {
                let lock = lock.expect("checked");
                return Err(match other {
                    SetExpr::Values(_) => SqlError::new(
                        "0A000",
                        format!("{} cannot be applied to VALUES", lock.words()),
                    ),
                    _ => lock.not_allowed_with("UNION/INTERSECT/EXCEPT"),
                });
            }
            other => {
                let bound = self.bind_set_expr(other)?;
                self.order_outputs(bound, order_by)?
            }
        };
        if with_ties {
            bound.plan = limit_with_ties(bound.plan, limit, offset)?;
        } else if limit.is_some() || offset.is_some() {
            bound.plan = Plan::Limit {
                input: Box::new(bound.plan),
                limit,
                offset,
                ties: Vec::new(),
            };
        }
        crate::execution::plan::prune_scan_columns(&mut bound.plan, None);
        Ok(bound)
    }

    fn bind_limit(&mut self, query: &ast::Query) -> Result<(Option<Expr>, Option<Expr>)> {
        if let Some(fetch) = &query.fetch {
            return self.bind_fetch(fetch, query.limit_clause.as_ref());
        }
        let Some(clause) = &query.limit_clause else {
            return Ok((None, None));
        };
        let empty = Scope::default();
        let mut bind_count = |e: &AstExpr| -> Result<Expr> {
            let (expr, _) = self.bind_expr_as(e, &empty, DataType::BigInt)?;
            Ok(expr)
        };
        match clause {
            ast::LimitClause::LimitOffset { limit, offset, .. } => Ok((
                limit.as_ref().map(&mut bind_count).transpose()?,
                offset.as_ref().map(|o| bind_count(&o.value)).transpose()?,
            )),
            ast::LimitClause::OffsetCommaLimit { offset, limit } => {
                Ok((Some(bind_count(limit)?), Some(bind_count(offset)?)))
            }
        }
    }

    /// `[OFFSET n] FETCH FIRST m ROWS ONLY`.
    fn bind_fetch(
        &mut self,
        fetch: &ast::Fetch,
        clause: Option<&ast::LimitClause>,
    ) -> Result<(Option<Expr>, Option<Expr>)> {
        if fetch.percent {
            return Err(SqlError::unsupported("FETCH ... PERCENT"));
        }
        let empty = Scope::default();
        let count = match &fetch.quantity {
            Some(q) => self.bind_expr_as(q, &empty, DataType::BigInt)?.0,
            None => Expr::Literal(Value::BigInt(1)),
        };
        let offset = match clause {
            Some(ast::LimitClause::LimitOffset {
                offset: Some(o), ..
            }) => Some(self.bind_expr_as(&o.value, &empty, DataType::BigInt)?.0),
            _ => None,
        };
        Ok((Some(count), offset))
    }

    fn bind_set_expr(&mut self, body: &SetExpr) -> Result<BoundQuery> {
        match body {
            SetExpr::Select(select) => self.bind_select(select, &[], None),
            SetExpr::Query(query) => self.bind_query(query),
            SetExpr::Values(values) => self.bind_values(values),
            SetExpr::SetOperation {
                left,
                op,
                set_quantifier,
                right,
            } => {
                let left = self.bind_set_expr(left)?;
                let right = self.bind_set_expr(right)?;
                if left.columns.len() != right.columns.len() {
                    return Err(SqlError::syntax(
                        "each UNION query must have the same number of columns",
                    ));
                }
                let op = match op {
                    ast::SetOperator::Union => SetOpKind::Union,
                    ast::SetOperator::Intersect => SetOpKind::Intersect,
                    ast::SetOperator::Except | ast::SetOperator::Minus => SetOpKind::Except,
                };
                let types: Vec<DataType> = left
                    .columns
                    .iter()
                    .zip(&right.columns)
                    .map(|(l, r)| {
                        crate::planner::bind_expr::common_type([l.ty, r.ty].into_iter(), "UNION")
                    })
                    .collect::<Result<_>>()?;
                let left = self.coerce_outputs(left, &types)?;
                let right = self.coerce_outputs(right, &types)?;
                let columns = left.columns.clone();
                Ok(BoundQuery {
                    plan: Plan::SetOp {
                        left: Box::new(left.plan),
                        right: Box::new(right.plan),
                        op,
                        all: matches!(set_quantifier, ast::SetQuantifier::All),
                    },
                    columns,
                    required: Vec::new(),
                })
            }
            other => Err(SqlError::unsupported(format!("query body {other}"))),
        }
    }

    /// `VALUES (...), (...)`: columns `column1`, `column2`... typed by their first typed row.
    /// One side of a set operation with each output column brought to the operation's column
    /// type (`types`) — an untyped literal of one side too — so that the rows of both sides
    /// compare, sort and deduplicate as one type.
    fn coerce_outputs(&mut self, side: BoundQuery, types: &[DataType]) -> Result<BoundQuery> {
        let same = |(c, t): (&Column, &DataType)| c.ty.as_ref() == Some(t);
        if side.columns.iter().zip(types).all(same) {
            return Ok(side);
        }
        let mut exprs = Vec::with_capacity(types.len());
        let mut columns = Vec::with_capacity(types.len());
        for (i, (column, ty)) in side.columns.iter().zip(types).enumerate() {
            exprs.push(self.coerce_branch(Expr::Column(i), column.ty, *ty)?);
            columns.push(Column::new(column.name.clone(), Some(*ty)));
        }
        Ok(BoundQuery {
            plan: Plan::Project {
                input: Box::new(side.plan),
                exprs,
            },
            columns,
            required: side.required,
        })
    }

    pub fn bind_values(&mut self, values: &ast::Values) -> Result<BoundQuery> {
        let width = values.rows.first().map_or(0, |r| r.len());
        let empty = Scope::default();
        let mut typed_rows = Vec::with_capacity(values.rows.len());
        for row in &values.rows {
            if row.len() != width {
                return Err(SqlError::syntax("VALUES lists must all be the same length"));
            }
            let bound: Vec<(Expr, Option<DataType>)> = row
                .iter()
                .map(|e| self.bind_expr(e, &empty))
                .collect::<Result<_>>()?;
            typed_rows.push(bound);
        }
        // Each column takes the common type of its values (PostgreSQL's UNION/VALUES rule), and
        // every value is brought to it — an untyped literal in a later row too — so that rows
        // compare and sort as one type; a column of nothing but untyped literals stays so.
        let mut types: Vec<Option<DataType>> = vec![None; width];
        for (i, ty) in types.iter_mut().enumerate() {
            if typed_rows.iter().any(|row| row[i].1.is_some()) {
                *ty = Some(crate::planner::bind_expr::common_type(
                    typed_rows.iter().map(|row| row[i].1),
                    "VALUES",
                )?);
            }
        }
        let mut rows = Vec::with_capacity(typed_rows.len());
        for row in typed_rows {
            let mut bound = Vec::with_capacity(width);
            for ((expr, from), to) in row.into_iter().zip(&types) {
                bound.push(match to {
                    Some(to) => self.coerce_branch(expr, from, *to)?,
                    None => expr,
                });
            }
            rows.push(bound);
        }
        let columns = types
            .iter()
            .enumerate()
            .map(|(i, ty)| Column::new(format!("column{}", i + 1), *ty))
            .collect();
        Ok(BoundQuery {
            plan: Plan::Values { rows, width },
            columns,
            required: Vec::new(),
        })
    }

    /// ORDER BY over a query's output columns (for set operations and VALUES).
    fn order_outputs(
        &mut self,
        bound: BoundQuery,
        order_by: &[ast::OrderByExpr],
    ) -> Result<BoundQuery> {
        if order_by.is_empty() {
            return Ok(bound);
        }
        let scope = Scope {
            columns: bound
                .columns
                .iter()
                .map(|c| ScopeColumn {
                    table: None,
                    name: c.name.clone(),
                    ty: c.ty,
                    hidden: false,
                    key: false,
                    system: false,
                })
                .collect(),
        };
        let mut keys = Vec::new();
        for item in order_by {
            let expr = match position_literal(&item.expr) {
                Some(p) if (1..=bound.columns.len()).contains(&p) => Expr::Column(p - 1),
                Some(p) => return Err(order_position_error(p)),
                None => {
                    self.with_level(scope.clone(), |b| b.bind_expr(&item.expr, &scope))?
                        .0
                }
            };
            keys.push(sort_key(expr, &item.options)?);
        }
        Ok(BoundQuery {
            plan: Plan::Sort {
                input: Box::new(bound.plan),
                keys,
            },
            columns: bound.columns,
            required: Vec::new(),
        })
    }

    /// Runs `f` with `scope` as a new innermost level.
    pub(crate) fn with_level<T>(
        &mut self,
        scope: Scope,
        f: impl FnOnce(&mut Self) -> Result<T>,
    ) -> Result<T> {
        let level = self.scopes.len();
        if self.correlated.len() <= level {
            self.correlated.resize(level + 1, false);
        }
        self.scopes.push(scope);
        let result = f(self);
        self.scopes.pop();
        result
    }

    /// Takes the aggregate collector (a subquery's expressions do not feed the outer aggregates).
    pub(crate) fn take_aggregates(&mut self) -> Option<Vec<AggCall>> {
        self.aggregates.take()
    }

    pub(crate) fn restore_aggregates(&mut self, aggregates: Option<Vec<AggCall>>) {
        self.aggregates = aggregates;
    }

    pub(crate) fn next_subquery_id(&mut self) -> usize {
        self.next_subquery += 1;
        self.next_subquery
    }

    /// Binds a select list (or RETURNING list) over `scope` as a level of its own.
    pub fn bind_select_list(
        &mut self,
        items: &[SelectItem],
        scope: &Scope,
    ) -> Result<(Vec<Expr>, Vec<Column>)> {
        self.with_level(scope.clone(), |b| {
            let projection = b.bind_projection(items, scope)?;
            Ok((projection.exprs, projection.columns))
        })
    }

    /// Binds an expression over `scope` as a level of its own (subqueries may refer to it).
    pub fn bind_expr_with_level(&mut self, e: &AstExpr, scope: &Scope) -> Result<Typed> {
        self.with_level(scope.clone(), |b| b.bind_expr(e, scope))
    }

    /// Binds a subquery one level down; returns it and whether it refers to enclosing levels.
    pub(crate) fn bind_subquery(&mut self, query: &ast::Query) -> Result<(BoundQuery, bool)> {
        let level = self.scopes.len();
        self.correlated.truncate(level);
        let bound = self.bind_query(query);
        let correlated = self.correlated.get(level).copied().unwrap_or(false);
        self.correlated.truncate(level);
        Ok((bound?, correlated))
    }

    fn bind_select(
        &mut self,
        select: &ast::Select,
        order_by: &[ast::OrderByExpr],
        lock: Option<row_lock::RowLockClause>,
    ) -> Result<BoundQuery> {
        if select.into.is_some() {
            // A top-level SELECT INTO is CREATE TABLE AS (the session takes it before binding).
            return Err(SqlError::new(
                "42601",
                "SELECT ... INTO is not allowed here",
            ));
        }
        let (input, scope) = self.bind_from(&select.from)?;
        self.with_level(scope.clone(), |b| {
            b.bind_select_body(select, order_by, input, &scope, lock)
        })
    }
}

/// The 1-based output position an ORDER BY / GROUP BY item names, if it is an integer literal.
fn position_literal(expr: &AstExpr) -> Option<usize> {
    match expr {
        AstExpr::Value(v) => match &v.value {
            ast::Value::Number(n, _) => n.parse().ok(),
            _ => None,
        },
        _ => None,
    }
}

/// `FETCH FIRST n ROWS WITH TIES`: the limit goes right above the query's sort (below the
/// projection that drops hidden sort columns, if any), so it can compare rows by the sort keys.
fn limit_with_ties(plan: Plan, limit: Option<Expr>, offset: Option<Expr>) -> Result<Plan> {
    let limited = |sorted: Plan| match sorted {
        Plan::Sort { input, keys } => Ok(Plan::Limit {
            ties: keys.clone(),
            input: Box::new(Plan::Sort { input, keys }),
            limit: limit.clone(),
            offset: offset.clone(),
        }),
        _ => Err(SqlError::unsupported("FETCH ... WITH TIES here")),
    };
    match plan {
        Plan::Project { input, exprs } if matches!(*input, Plan::Sort { .. }) => {
            Ok(Plan::Project {
                input: Box::new(limited(*input)?),
                exprs,
            })
        }
        other => limited(other),
    }
}

fn order_position_error(p: usize) -> SqlError {
    SqlError::new(
        "42P10",
        format!("ORDER BY position {p} is not in select list"),
    )
}

fn sort_key(expr: Expr, options: &ast::OrderByOptions) -> Result<SortKey> {
    let descending = sort_descending(options)?;
    Ok(SortKey {
        expr,
        descending,
        nulls_first: options.nulls_first.unwrap_or(descending),
    })
}

/// Whether an ORDER BY item sorts descending: DESC, or `USING >` (`USING <` is ascending); USING
/// another operator is refused (0A000), never taken as ascending.
pub(crate) fn sort_descending(options: &ast::OrderByOptions) -> Result<bool> {
    match &options.sort {
        None | Some(ast::OrderBySort::Asc) => Ok(false),
        Some(ast::OrderBySort::Desc) => Ok(true),
        Some(ast::OrderBySort::Using(operator)) => match operator.to_string().as_str() {
            "<" => Ok(false),
            ">" => Ok(true),
            other => Err(SqlError::unsupported(format!("ORDER BY ... USING {other}"))),
        },
    }
}

/// The output of binding a select list: expressions over the input and their columns.
struct Projection {
    exprs: Vec<Expr>,
    columns: Vec<Column>,
}

impl Binder<'_> {
    fn bind_select_body(
        &mut self,
        select: &ast::Select,
        order_by: &[ast::OrderByExpr],
        input: Plan,
        scope: &Scope,
        lock: Option<row_lock::RowLockClause>,
    ) -> Result<BoundQuery> {
        if select.having.is_some() && matches!(select.group_by, ast::GroupByExpr::All(_)) {
            return Err(SqlError::unsupported("GROUP BY ALL"));
        }
        let mut plan = input;
        let mut where_predicate = None;
        if let Some(selection) = &select.selection {
            let (predicate, ty) = self.bind_expr(selection, scope)?;
            expect_boolean(ty, "WHERE")?;
            let predicate = self.with_partial_index_keys(selection, predicate, scope)?;
            if lock.is_some() {
                where_predicate = Some(predicate.clone());
            }
            plan = crate::planner::access::filter(plan, predicate, self.stats);
        }
        plan = crate::planner::join::reorder(plan, self.stats);
        plan = crate::planner::join::join_methods(plan, self.stats);
        let group_exprs = match &select.group_by {
            ast::GroupByExpr::Expressions(exprs, _) => exprs.as_slice(),
            ast::GroupByExpr::All(_) => return Err(SqlError::unsupported("GROUP BY ALL")),
        };
        self.aggregates = Some(Vec::new());
        let outer_windows = self.windows.replace(Vec::new());
        let outer_named = std::mem::replace(&mut self.named_windows, select.named_window.clone());
        let outer_sets = self.set_calls.replace((scope.columns.len(), Vec::new()));
        let projection = self.bind_projection(&select.projection, scope);
        let set_calls = std::mem::replace(&mut self.set_calls, outer_sets)
            .map(|(_, calls)| calls)
            .unwrap_or_default();
        let windows = self.windows.take();
        let having = select
            .having
            .as_ref()
            .map(|h| self.bind_expr(h, scope))
            .transpose();
        self.windows = windows;
        let order = self.bind_order_items(order_by, scope, projection.as_ref().ok());
        let distinct_on = match &order {
            Ok((keys, _)) => self.bind_distinct_on(select, scope, projection.as_ref().ok(), keys),
            Err(_) => Ok(None),
        };
        let aggregates = self.aggregates.take().unwrap_or_default();
        let mut windows = std::mem::replace(&mut self.windows, outer_windows).unwrap_or_default();
        self.named_windows = outer_named;
        let (mut projection, having, (mut order_keys, hidden)) = (projection?, having?, order?);
        let mut distinct_on = distinct_on?;
        let grouped = !group_exprs.is_empty() || !aggregates.is_empty() || having.is_some();
        if let Some(lock) = lock {
            let distinct = select.distinct.is_some();
            let refused = [
                (!group_exprs.is_empty(), "GROUP BY clause"),
                (having.is_some(), "HAVING clause"),
                (!aggregates.is_empty(), "aggregate functions"),
                (distinct, "DISTINCT clause"),
                (!windows.is_empty(), "window functions"),
                (!set_calls.is_empty(), "set-returning functions"),
            ];
            if let Some((_, what)) = refused.iter().find(|(refused, _)| *refused) {
                return Err(lock.not_allowed_with(what));
            }
            let input = (plan, where_predicate);
            return self.finish_locking_select(lock, &select.from, input, projection, order_keys);
        }
        if !set_calls.is_empty() {
            if grouped || !windows.is_empty() || select.distinct.is_some() {
                return Err(SqlError::unsupported(
                    "set-returning functions in a select list with aggregates, window functions or DISTINCT",
                ));
            }
            plan = Plan::ProjectSet {
                input: Box::new(plan),
                calls: set_calls,
            };
        }
        let mut width = scope.columns.len();
        if grouped {
            let (groups, sets) = self.bind_grouping(group_exprs, scope, &projection)?;
            grouping::check_grouping_calls(&aggregates, &groups)?;
            width = groups.len() + aggregates.len();
            let post = |e: Expr| post_aggregate(e, &groups);
            projection.exprs = projection
                .exprs
                .into_iter()
                .map(post)
                .collect::<Result<_>>()?;
            for key in &mut order_keys {
                key.expr = post_aggregate(key.expr.clone(), &groups)?;
            }
            for expr in distinct_on.iter_mut().flatten() {
                *expr = post_aggregate(expr.clone(), &groups)?;
            }
            windows = windows
                .into_iter()
                .map(|call| window::map_window_exprs(call, &mut |e| post_aggregate(e, &groups)))
                .collect::<Result<_>>()?;
            plan = Plan::Aggregate {
                input: Box::new(plan),
                groups: groups.clone(),
                aggregates,
                sets,
            };
            if let Some((predicate, ty)) = having {
                expect_boolean(ty, "HAVING")?;
                plan = Plan::Filter {
                    input: Box::new(plan),
                    predicate: post_aggregate(predicate, &groups)?,
                };
            }
        }
        let resolved = projection
            .exprs
            .iter_mut()
            .chain(order_keys.iter_mut().map(|k| &mut k.expr))
            .chain(distinct_on.iter_mut().flatten());
        plan = self.place_windows(plan, width, windows, resolved)?;
        let distinct = matches!(select.distinct, Some(ast::Distinct::Distinct));
        if distinct && hidden > 0 {
            return Err(SqlError::new(
                "42P10",
                "for SELECT DISTINCT, ORDER BY expressions must appear in select list",
            ));
        }
        if let Some(on) = distinct_on {
            return Ok(finish_distinct_on(plan, projection, order_keys, on));
        }
        Ok(finish_select(plan, projection, order_keys, distinct))
    }

    /// GROUP BY items as grouping expressions, and the grouping sets over them (each a mask of
    /// the expressions it groups by; none for a plain GROUP BY, see [`grouping`]).
    fn bind_grouping(
        &mut self,
        items: &[AstExpr],
        scope: &Scope,
        projection: &Projection,
    ) -> Result<(Vec<Expr>, Vec<Vec<bool>>)> {
        let Some(sets) = grouping::expand(items)? else {
            return Ok((self.bind_group_by(items, scope, projection)?, Vec::new()));
        };
        let mut distinct: Vec<&AstExpr> = Vec::new();
        for item in sets.iter().flatten() {
            if !distinct.contains(item) {
                distinct.push(item);
            }
        }
        let mut groups: Vec<Expr> = Vec::new();
        let mut position_of = Vec::with_capacity(distinct.len());
        for item in &distinct {
            let expr = self.bind_group_item(item, scope, projection)?;
            let at = groups.iter().position(|g| *g == expr).unwrap_or_else(|| {
                groups.push(expr);
                groups.len() - 1
            });
            position_of.push(at);
        }
        let masks = sets
            .iter()
            .map(|set| {
                let mut active = vec![false; groups.len()];
                for item in set {
                    let at = distinct.iter().position(|d| d == item).expect("bound");
                    active[position_of[at]] = true;
                }
                active
            })
            .collect();
        Ok((groups, masks))
    }

    /// GROUP BY items: output positions, output aliases, or expressions over the input.
    fn bind_group_by(
        &mut self,
        items: &[AstExpr],
        scope: &Scope,
        projection: &Projection,
    ) -> Result<Vec<Expr>> {
        let mut groups = Vec::with_capacity(items.len());
        for item in items {
            groups.push(self.bind_group_item(item, scope, projection)?);
        }
        add_key_dependents(&mut groups, scope);
        Ok(groups)
    }

    /// One GROUP BY expression: an output position, an output alias, or an expression over the
    /// input.
    fn bind_group_item(
        &mut self,
        item: &AstExpr,
        scope: &Scope,
        projection: &Projection,
    ) -> Result<Expr> {
        let expr = if let Some(p) = position_literal(item) {
            projection
                .exprs
                .get(p.wrapping_sub(1))
                .cloned()
                .ok_or_else(|| {
                    SqlError::new(
                        "42P10",
                        format!("GROUP BY position {p} is not in select list"),
                    )
                })?
        } else if let Some(i) = self.output_alias(item, scope, projection) {
            projection.exprs[i].clone()
        } else {
            self.bind_expr(item, scope)?.0
        };
        if matches!(expr, Expr::AggRef(_)) {
            return Err(SqlError::new(
                "42803",
                "aggregate functions are not allowed in GROUP BY",
            ));
        }
        Ok(expr)
    }

    /// The output column an identifier names, when it is an alias and not an input column.
    fn output_alias(
        &self,
        item: &AstExpr,
        scope: &Scope,
        projection: &Projection,
    ) -> Option<usize> {
        let AstExpr::Identifier(ident) = item else {
            return None;
        };
        let name = normalize_ident(ident);
        if scope.find(None, &name).ok().flatten().is_some() {
            return None;
        }
        projection.columns.iter().position(|c| c.name == name)
    }

    /// ORDER BY items as sort keys over the projected row; items that are not outputs are added as
    /// hidden outputs (their count is returned).
    fn bind_order_items(
        &mut self,
        items: &[ast::OrderByExpr],
        scope: &Scope,
        projection: Option<&Projection>,
    ) -> Result<(Vec<SortKey>, usize)> {
        let Some(projection) = projection else {
            return Ok((Vec::new(), 0));
        };
        let mut keys = Vec::new();
        let mut hidden = Vec::new();
        for item in items {
            let (expr, ty) = self.bind_output_item(&item.expr, scope, projection, "ORDER BY")?;
            if !projection.exprs.contains(&expr) && !hidden.contains(&expr) {
                hidden.push(expr.clone());
            }
            keys.push(sort_key(ordered_array(expr, ty), &item.options)?);
        }
        Ok((keys, hidden.len()))
    }

    /// An ORDER BY or DISTINCT ON item: an output position, an output alias, or an expression
    /// over the input.
    fn bind_output_item(
        &mut self,
        item: &AstExpr,
        scope: &Scope,
        projection: &Projection,
        clause: &str,
    ) -> Result<Typed> {
        let output = |i: usize| (projection.exprs[i].clone(), projection.columns[i].ty);
        if let Some(p) = position_literal(item) {
            if !(1..=projection.columns.len()).contains(&p) {
                return Err(SqlError::new(
                    "42P10",
                    format!("{clause} position {p} is not in select list"),
                ));
            }
            return Ok(output(p - 1));
        }
        if let Some(i) = self.output_alias(item, scope, projection) {
            return Ok(output(i));
        }
        self.bind_expr(item, scope)
    }

    /// DISTINCT ON's expressions (none without it), checked against the ORDER BY as PostgreSQL
    /// does: the ORDER BY must begin with them.
    fn bind_distinct_on(
        &mut self,
        select: &ast::Select,
        scope: &Scope,
        projection: Option<&Projection>,
        order: &[SortKey],
    ) -> Result<Option<Vec<Expr>>> {
        let (Some(ast::Distinct::On(items)), Some(projection)) = (&select.distinct, projection)
        else {
            return Ok(None);
        };
        let exprs = items
            .iter()
            .map(|item| {
                let (expr, ty) =
                    self.bind_output_item(item, scope, projection, "SELECT DISTINCT ON")?;
                Ok(ordered_array(expr, ty))
            })
            .collect::<Result<Vec<_>>>()?;
        let mut covered = vec![false; exprs.len()];
        let mut skipped = false;
        let mismatch = || {
            SqlError::new(
                "42P10",
                "SELECT DISTINCT ON expressions must match initial ORDER BY expressions",
            )
        };
        for key in order {
            match exprs.iter().position(|e| *e == key.expr) {
                Some(_) if skipped => return Err(mismatch()),
                Some(at) => covered[at] = true,
                None => skipped = true,
            }
        }
        if skipped && covered.contains(&false) {
            return Err(mismatch());
        }
        Ok(Some(exprs))
    }

    fn bind_projection(&mut self, items: &[SelectItem], scope: &Scope) -> Result<Projection> {
        let mut exprs = Vec::new();
        let mut columns = Vec::new();
        for item in items {
            match item {
                SelectItem::UnnamedExpr(e) => {
                    let (expr, ty) = self.bind_expr(e, scope)?;
                    exprs.push(expr);
                    columns.push(Column::new(output_name(e), ty));
                }
                SelectItem::ExprWithAlias { expr, alias } => {
                    let (bound, ty) = self.bind_expr(expr, scope)?;
                    exprs.push(bound);
                    columns.push(Column::new(normalize_ident(alias), ty));
                }
                SelectItem::Wildcard(_) => {
                    if scope.columns.is_empty() {
                        return Err(SqlError::syntax(
                            "SELECT * with no tables specified is not valid",
                        ));
                    }
                    for (i, c) in scope
                        .columns
                        .iter()
                        .enumerate()
                        .filter(|(_, c)| !c.hidden && !c.system)
                    {
                        exprs.push(Expr::Column(i));
                        columns.push(Column::new(c.name.clone(), c.ty));
                    }
                }
                SelectItem::QualifiedWildcard(kind, _) => {
                    let table = match kind {
                        ast::SelectItemQualifiedWildcardKind::ObjectName(name) => {
                            object_name(name).1
                        }
                        ast::SelectItemQualifiedWildcardKind::Expr(_) => {
                            return Err(SqlError::unsupported("this wildcard"))
                        }
                    };
                    if !scope.has_table(&table) {
                        return Err(SqlError::new(
                            "42P01",
                            format!("missing FROM-clause entry for table \"{table}\""),
                        ));
                    }
                    for (i, c) in scope.columns.iter().enumerate() {
                        if c.table.as_deref() == Some(table.as_str())
                            && !crate::execution::constraints::is_hidden(&c.name)
                            && !c.system
                        {
                            exprs.push(Expr::Column(i));
                            columns.push(Column::new(c.name.clone(), c.ty));
                        }
                    }
                }
                SelectItem::ExprWithAliases { .. } => {
                    return Err(SqlError::unsupported("multiple aliases"))
                }
            }
        }
        Ok(Projection { exprs, columns })
    }

    // -----------------------------------------------------------------------------------------
    // FROM
    // -----------------------------------------------------------------------------------------
}

/// Finishes a SELECT: project outputs (plus hidden sort keys), DISTINCT, sort, strip hidden keys.
fn finish_select(
    plan: Plan,
    projection: Projection,
    keys: Vec<SortKey>,
    distinct: bool,
) -> BoundQuery {
    let width = projection.exprs.len();
    let mut outputs = projection.exprs.clone();
    let mut sort_keys = Vec::new();
    for key in keys {
        let position = match outputs.iter().position(|e| *e == key.expr) {
            Some(p) => p,
            None => {
                outputs.push(key.expr.clone());
                outputs.len() - 1
            }
        };
        sort_keys.push(SortKey {
            expr: Expr::Column(position),
            ..key
        });
    }
    let extra = outputs.len() > width;
    let mut plan = Plan::Project {
        input: Box::new(plan),
        exprs: outputs,
    };
    if distinct {
        plan = Plan::Distinct {
            input: Box::new(plan),
        };
    }
    if !sort_keys.is_empty() {
        plan = Plan::Sort {
            input: Box::new(plan),
            keys: sort_keys,
        };
    }
    if extra {
        plan = Plan::Project {
            input: Box::new(plan),
            exprs: (0..width).map(Expr::Column).collect(),
        };
    }
    BoundQuery {
        plan,
        columns: projection.columns,
        required: Vec::new(),
    }
}

/// Finishes a SELECT DISTINCT ON: the first row (in ORDER BY order) of each group of equal `on`
/// values is the one kept — row_number() over a window partitioned by `on` and ordered by the
/// ORDER BY, filtered to 1 — then the ORDER BY sorts what is left.
fn finish_distinct_on(
    plan: Plan,
    projection: Projection,
    keys: Vec<SortKey>,
    on: Vec<Expr>,
) -> BoundQuery {
    let width = projection.exprs.len();
    let mut outputs = projection.exprs.clone();
    let mut position = |expr: &Expr| match outputs.iter().position(|e| e == expr) {
        Some(p) => p,
        None => {
            outputs.push(expr.clone());
            outputs.len() - 1
        }
    };
    let keys: Vec<SortKey> = keys
        .into_iter()
        .map(|key| SortKey {
            expr: Expr::Column(position(&key.expr)),
            ..key
        })
        .collect();
    let partition: Vec<Expr> = on.iter().map(|e| Expr::Column(position(e))).collect();
    let row_number = outputs.len();
    let mut plan = Plan::Window {
        input: Box::new(Plan::Project {
            input: Box::new(plan),
            exprs: outputs,
        }),
        calls: vec![WindowCall {
            func: WindowFunc::RowNumber,
            args: Vec::new(),
            partition,
            order: keys.clone(),
            frame: Frame::default(),
        }],
    };
    plan = Plan::Filter {
        input: Box::new(plan),
        predicate: Expr::Compare(
            CmpOp::Eq,
            Box::new(Expr::Column(row_number)),
            Box::new(Expr::Literal(Value::BigInt(1))),
        ),
    };
    if !keys.is_empty() {
        plan = Plan::Sort {
            input: Box::new(plan),
            keys,
        };
    }
    BoundQuery {
        plan: Plan::Project {
            input: Box::new(plan),
            exprs: (0..width).map(Expr::Column).collect(),
        },
        columns: projection.columns,
        required: Vec::new(),
    }
}

/// Rewrites an expression bound over a grouped query's input into one over the aggregate's
/// output (group values, then aggregate values), matching whole GROUP BY expressions first. A
/// column outside the groups is an error.
fn post_aggregate(expr: Expr, groups: &[Expr]) -> Result<Expr> {
    if let Some(i) = groups.iter().position(|g| *g == expr) {
        return Ok(Expr::Column(i));
    }
    match expr {
        Expr::AggRef(i) => Ok(Expr::Column(groups.len() + i)),
        Expr::Column(_) => Err(SqlError::new(
            "42803",
            "column must appear in the GROUP BY clause or be used in an aggregate function",
        )),
        other => other.map_children(&mut |child| post_aggregate(child, groups)),
    }
}

/// Grouping by a table's whole primary key determines its other columns: they are added as
/// groups too, so the select list may use them (PostgreSQL's functional dependency rule).
fn add_key_dependents(groups: &mut Vec<Expr>, scope: &Scope) {
    let mut tables: Vec<&str> = scope
        .columns
        .iter()
        .filter(|c| c.key)
        .filter_map(|c| c.table.as_deref())
        .collect();
    tables.dedup();
    for table in tables {
        let of_table = |c: &ScopeColumn| c.table.as_deref() == Some(table);
        let grouped = scope
            .columns
            .iter()
            .enumerate()
            .filter(|(_, c)| c.key && of_table(c))
            .all(|(i, _)| groups.contains(&Expr::Column(i)));
        if !grouped {
            continue;
        }
        for (i, _) in scope
            .columns
            .iter()
            .enumerate()
            .filter(|(_, c)| of_table(c))
        {
            if !groups.contains(&Expr::Column(i)) {
                groups.push(Expr::Column(i));
            }
        }
    }
}

pub fn table_columns(table: &TableDef) -> Vec<Column> {
    table
        .columns
        .iter()
        .map(|c| Column::new(c.name.clone(), Some(c.data_type)))
        .collect()
}

fn expect_boolean(ty: Option<DataType>, clause: &str) -> Result<()> {
    match ty {
        None | Some(DataType::Boolean) => Ok(()),
        Some(other) => Err(SqlError::datatype_mismatch(format!(
            "argument of {clause} must be type boolean, not type {other}"
        ))),
    }
}

/// PostgreSQL's name for an unaliased output column.
fn output_name(expr: &AstExpr) -> String {
    ranked_output_name(expr).0
}

/// An output column's name and how strongly the expression names it, as PostgreSQL's
/// `FigureColnameInternal`: 2 for a column, function or keyword form, 1 for a cast's type name
/// or `case` (an outer cast's type wins over them), 0 for `?column?`.
fn ranked_output_name(expr: &AstExpr) -> (String, u8) {
    let named = |name: &str| (name.to_owned(), 2);
    match expr {
        AstExpr::Identifier(ident) => (normalize_ident(ident), 2),
        AstExpr::CompoundIdentifier(parts) => {
            (parts.last().map(normalize_ident).unwrap_or_default(), 2)
        }
        AstExpr::Function(f) => (object_name(&f.name).1, 2),
        AstExpr::Cast {
            expr, data_type, ..
        } => match ranked_output_name(expr) {
            (_, 0 | 1) => (crate::types::type_output_name(data_type), 1),
            strong => strong,
        },
        AstExpr::Nested(e) => ranked_output_name(e),
        AstExpr::Case { .. } => ("case".into(), 1),
        AstExpr::Exists { .. } => named("exists"),
        AstExpr::Subquery(q) => match q.body.as_ref() {
            SetExpr::Select(s) => match s.projection.first() {
                Some(SelectItem::UnnamedExpr(e)) => ranked_output_name(e),
                Some(SelectItem::ExprWithAlias { alias, .. }) => (normalize_ident(alias), 2),
                _ => ("?column?".into(), 0),
            },
            _ => ("?column?".into(), 0),
        },
        AstExpr::Extract { .. } => named("extract"),
        AstExpr::Substring { .. } => named("substring"),
        AstExpr::Trim { .. } => named("btrim"),
        AstExpr::Position { .. } => named("position"),
        AstExpr::Ceil { .. } => named("ceil"),
        AstExpr::Floor { .. } => named("floor"),
        AstExpr::TypedString(t) => (crate::types::type_output_name(&t.data_type), 1),
        _ => ("?column?".into(), 0),
    }
}

/// Coerces an expression to `target` where PostgreSQL would do it implicitly: untyped literals
/// and parameters take the type; numbers widen. Returns the expression unchanged otherwise.
pub fn coerce_to(expr: Expr, from: Option<DataType>, target: DataType) -> Result<Expr> {
    match (expr, from) {
        (Expr::Literal(Value::Text(s)), None) => Ok(Expr::Literal(Value::parse(&target, &s)?)),
        (Expr::Literal(Value::Null), _) => Ok(Expr::Literal(Value::Null)),
        (Expr::Param { index, ty: None }, _) => Ok(Expr::Param {
            index,
            ty: Some(target),
        }),
        (expr, Some(from))
            if from != target
                && ops::category(&from) == Category::Numeric
                && ops::category(&target) == Category::Numeric =>
        {
            Ok(Expr::Cast(Box::new(expr), target))
        }
        // An untyped value computed at run time (`arr[i]`, `unnest(arr)`) takes the type its
        // context asks for, as an untyped literal does.
        (expr, None) => Ok(Expr::Cast(Box::new(expr), target)),
        (expr, _) => Ok(expr),
    }
}
