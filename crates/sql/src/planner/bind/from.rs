//! The FROM clause: tables, system views, table functions (generate_series, unnest), subqueries,
//! joins with ON / USING / NATURAL (their columns merged as PostgreSQL does) and LATERAL.
//!
//! LATERAL: a table function always, and a subquery written LATERAL, is bound with the items
//! before it (after a comma, or the left side of its JOIN) as its enclosing scope. When it reads
//! them it becomes a `Plan::Lateral`, run once per left row (INNER or LEFT only, 42P10
//! otherwise); when it does not, it is joined like any other item, so the join planner still
//! chooses its method.

use super::*;

impl Binder<'_> {
    /// The FROM clause as one plan (comma-separated items are cross joined) and its scope. A
    /// table function or a LATERAL subquery may read the items before it.
    pub fn bind_from(&mut self, from: &[ast::TableWithJoins]) -> Result<(Plan, Scope)> {
        let mut result: Option<(Plan, Scope)> = None;
        for item in from {
            let (mut plan, mut scope) = match result.take() {
                Some((left, left_scope)) if may_be_lateral(&item.relation) => {
                    let none = ast::JoinConstraint::None;
                    let inner = JoinKind::Inner;
                    self.bind_lateral(left, left_scope, &item.relation, inner, &none)?
                }
                Some((left, left_scope)) => {
                    let (mut plan, mut scope) = self.bind_factor(&item.relation)?;
                    for join in &item.joins {
                        (plan, scope) = self.bind_join(plan, scope, join)?;
                    }
                    check_aliases(&left_scope, &scope)?;
                    result = Some(cross_join(left, left_scope, plan, scope, self.stats));
                    continue;
                }
                None => self.bind_factor(&item.relation)?,
            };
            for join in &item.joins {
                (plan, scope) = self.bind_join(plan, scope, join)?;
            }
            result = Some((plan, scope));
        }
        Ok(result.unwrap_or_else(|| (Plan::single_row(), Scope::default())))
    }

    pub(super) fn bind_join(
        &mut self,
        left: Plan,
        left_scope: Scope,
        join: &ast::Join,
    ) -> Result<(Plan, Scope)> {
        use ast::JoinOperator as J;
        let (kind, constraint) = match &join.join_operator {
            J::Join(c) | J::Inner(c) | J::CrossJoin(c) => (JoinKind::Inner, c),
            J::Left(c) | J::LeftOuter(c) => (JoinKind::Left, c),
            J::Right(c) | J::RightOuter(c) => (JoinKind::Right, c),
            J::FullOuter(c) => (JoinKind::Full, c),
            other => return Err(SqlError::unsupported(format!("join {other:?}"))),
        };
        if may_be_lateral(&join.relation) {
            return self.bind_lateral(left, left_scope, &join.relation, kind, constraint);
        }
        let (right, right_scope) = self.bind_factor(&join.relation)?;
        check_aliases(&left_scope, &right_scope)?;
        let right_width = right_scope.columns.len();
        let mut scope = left_scope.clone();
        scope.columns.extend(right_scope.columns.iter().cloned());
        let using: Option<Vec<String>> = match constraint {
            ast::JoinConstraint::Using(names) => {
                Some(names.iter().map(|n| object_name(n).1).collect())
            }
            ast::JoinConstraint::Natural => Some(common_columns(&left_scope, &right_scope)),
            _ => None,
        };
        let on = match (constraint, &using) {
            (_, Some(names)) => using_condition(names, &left_scope, &right_scope)?,
            (ast::JoinConstraint::On(e), None) => {
                let (on, ty) = self.with_level(scope.clone(), |b| b.bind_expr(e, &scope))?;
                expect_boolean(ty, "JOIN/ON")?;
                Some(on)
            }
            _ => None,
        };
        let widths = (left_scope.columns.len(), right_width);
        let plan = crate::planner::join::join(left, right, kind, on, widths, self.stats);
        match using {
            Some(names) => merge_using(plan, &names, kind, &left_scope, &right_scope),
            None => Ok((plan, scope)),
        }
    }

    pub(super) fn bind_factor(&mut self, factor: &TableFactor) -> Result<(Plan, Scope)> {
        match factor {
            TableFactor::Table {
                name,
                alias,
                args,
                with_ordinality,
                sample,
                ..
            } => {
                if sample.is_some() {
                    return Err(SqlError::unsupported("TABLESAMPLE"));
                }
                let (schema, table) = object_name(name);
                if let Some(args) = args {
                    if table != "generate_series" {
                        return crate::planner::binding::bind_table_function(
                            self,
                            &table,
                            &args.args,
                            alias.as_ref(),
                            *with_ordinality,
                        );
                    }
                    return self.bind_table_function(&table, &args.args, alias.as_ref());
                }
                if schema.is_none() {
                    if let Some(cte) = self.cte_source(&table, alias.as_ref())? {
                        return Ok(cte);
                    }
                }
                if let Some(view) = self.view_source(schema.as_deref(), &table, alias.as_ref())? {
                    return Ok(view);
                }
                let alias_name = alias
                    .as_ref()
                    .map_or(table.clone(), |a| normalize_ident(&a.name));
                let (plan, columns) = self.table_source(schema.as_deref(), &table)?;
                let columns = apply_column_aliases(columns, alias.as_ref());
                let mut scope = Scope::of_table(&alias_name, &columns);
                match &plan {
                    Plan::Scan { table, .. } => {
                        for &k in &table.primary_key {
                            scope.columns[k].key = true;
                        }
                    }
                    Plan::System(..) => scope.columns.push(ScopeColumn {
                        table: Some(alias_name),
                        name: crate::execution::plan::TABLEOID.to_owned(),
                        ty: Some(DataType::BigInt),
                        hidden: false,
                        key: false,
                        system: true,
                    }),
                    _ => {}
                }
                Ok((plan, scope))
            }
            TableFactor::Function {
                name,
                args,
                alias,
                with_ordinality,
                ..
            } => {
                let (_, function) = object_name(name);
                if function == "generate_series" {
                    return self.bind_table_function(&function, args, alias.as_ref());
                }
                crate::planner::binding::bind_table_function(
                    self,
                    &function,
                    args,
                    alias.as_ref(),
                    *with_ordinality,
                )
            }
            TableFactor::Derived {
                subquery, alias, ..
            } => {
                let (bound, correlated) = self.bind_subquery(subquery)?;
                if correlated {
                    return Err(SqlError::unsupported("LATERAL subqueries"));
                }
                let alias_name = alias
                    .as_ref()
                    .map(|a| normalize_ident(&a.name))
                    .unwrap_or_default();
                let columns = apply_column_aliases(bound.columns, alias.as_ref());
                Ok((bound.plan, Scope::of_table(&alias_name, &columns)))
            }
            TableFactor::NestedJoin {
                table_with_joins, ..
            } => self.bind_from(std::slice::from_ref(table_with_joins)),
            TableFactor::UNNEST {
                alias,
                array_exprs,
                with_offset: false,
                with_ordinality,
                ..
            } if !array_exprs.is_empty() => crate::planner::binding::bind_unnest(
                self,
                &array_exprs.iter().collect::<Vec<_>>(),
                alias.as_ref(),
                *with_ordinality,
            ),
            other => Err(SqlError::unsupported(format!("FROM item {other}"))),
        }
    }

    /// `left JOIN right` where `right` may read `left`'s columns (a table function, or a
    /// subquery written LATERAL): bound with `left`'s scope as its enclosing one. One that reads
    /// them runs once per left row (an INNER or LEFT join, ON or no condition); one that does not
    /// is an ordinary join.
    pub(super) fn bind_lateral(
        &mut self,
        left: Plan,
        left_scope: Scope,
        factor: &TableFactor,
        kind: JoinKind,
        constraint: &ast::JoinConstraint,
    ) -> Result<(Plan, Scope)> {
        let (right, right_scope, correlated) = self.bind_lateral_factor(&left_scope, factor)?;
        if correlated && !matches!(kind, JoinKind::Inner | JoinKind::Left) {
            return Err(SqlError::new(
                "42P10",
                "the combining JOIN type must be INNER or LEFT for a LATERAL reference",
            ));
        }
        check_aliases(&left_scope, &right_scope)?;
        let widths = (left_scope.columns.len(), right_scope.columns.len());
        let mut scope = left_scope;
        scope.columns.extend(right_scope.columns);
        let on = match constraint {
            ast::JoinConstraint::On(e) => {
                let (on, ty) = self.with_level(scope.clone(), |b| b.bind_expr(e, &scope))?;
                expect_boolean(ty, "JOIN/ON")?;
                Some(on)
            }
            ast::JoinConstraint::None => None,
            _ => return Err(SqlError::unsupported("USING or NATURAL with LATERAL")),
        };
        if !correlated {
            let plan = crate::planner::join::join(left, right, kind, on, widths, self.stats);
            return Ok((plan, scope));
        }
        let plan = Plan::Lateral {
            left: Box::new(left),
            right: Box::new(right),
            kind,
            on,
            right_width: widths.1,
        };
        Ok((plan, scope))
    }

    /// Binds a FROM item with `left_scope` as its enclosing scope; also whether it reads it.
    fn bind_lateral_factor(
        &mut self,
        left_scope: &Scope,
        factor: &TableFactor,
    ) -> Result<(Plan, Scope, bool)> {
        self.with_level(left_scope.clone(), |b| match factor {
            TableFactor::Derived {
                subquery, alias, ..
            } => {
                let (bound, correlated) = b.bind_subquery(subquery)?;
                let alias_name = alias
                    .as_ref()
                    .map(|a| normalize_ident(&a.name))
                    .unwrap_or_default();
                let columns = apply_column_aliases(bound.columns, alias.as_ref());
                Ok((
                    bound.plan,
                    Scope::of_table(&alias_name, &columns),
                    correlated,
                ))
            }
            other => {
                let level = b.scopes.len();
                b.correlated.truncate(level);
                let bound = b.bind_factor(other);
                let correlated = b.correlated.get(level).copied().unwrap_or(false);
                b.correlated.truncate(level);
                let (plan, scope) = bound?;
                Ok((plan, scope, correlated))
            }
        })
    }

    /// A user table or a system view.
    pub fn table_source(
        &mut self,
        schema: Option<&str>,
        name: &str,
    ) -> Result<(Plan, Vec<Column>)> {
        if let Some(table) = self.user_table(schema, name)? {
            super::view::refuse_unpopulated(&table)?;
            self.relations_read.push(table.name.clone());
            self.require(
                table.id,
                &table.name,
                RelationKind::Table,
                Privilege::Select,
            );
            let columns = table_columns(&table);
            let plan = Plan::Scan {
                table,
                access: crate::execution::plan::Access::Full,
                filter: None,
                columns: None,
            };
            return Ok((plan, columns));
        }
        if matches!(schema, None | Some("public")) && self.engine.sequence_exists(name)? {
            return Ok(sequence_source(name));
        }
        let system = system::lookup(schema, name).ok_or_else(|| SqlError::undefined_table(name))?;
        let oid = system::view_oid(system);
        Ok((Plan::System(system, oid), system_columns(system)))
    }

    /// The user table `name` (schema `public` or none), once no other transaction's DDL claims
    /// the name.
    pub fn user_table(&self, schema: Option<&str>, name: &str) -> Result<Option<Arc<TableDef>>> {
        match schema {
            None | Some("public") => {
                self.wait_for_claim(name)?;
                Ok(self.engine.table(name))
            }
            Some(_) => Ok(None),
        }
    }

    pub(super) fn bind_table_function(
        &mut self,
        name: &str,
        args: &[ast::FunctionArg],
        alias: Option<&ast::TableAlias>,
    ) -> Result<(Plan, Scope)> {
        if name != "generate_series" {
            return Err(SqlError::undefined_function(format!(
                "function {name} does not exist"
            )));
        }
        let empty = Scope::default();
        let mut bound = Vec::new();
        for arg in args {
            let ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) = arg else {
                return Err(SqlError::syntax("generate_series takes plain arguments"));
            };
            bound.push(self.bind_expr_with_level(e, &empty)?);
        }
        if !(2..=3).contains(&bound.len()) {
            return Err(SqlError::undefined_function(
                "function generate_series with these arguments does not exist",
            ));
        }
        let (exprs, ty) = series_args(bound)?;
        let mut exprs = exprs.into_iter();
        let null = || Expr::Literal(Value::Null);
        let plan = Plan::Series {
            start: exprs.next().unwrap_or_else(null),
            stop: exprs.next().unwrap_or_else(null),
            step: exprs.next(),
        };
        let alias_name = alias.map_or("generate_series".to_owned(), |a| normalize_ident(&a.name));
        let columns = apply_column_aliases(vec![Column::new("generate_series", Some(ty))], alias);
        let columns = if alias.is_some_and(|a| a.columns.is_empty()) {
            vec![Column::new(alias_name.clone(), Some(ty))]
        } else {
            columns
        };
        Ok((plan, Scope::of_table(&alias_name, &columns)))
    }
}

/// Whether a FROM item may read the items before it: a table function (always, as in
/// PostgreSQL) or a subquery written LATERAL.
fn may_be_lateral(factor: &TableFactor) -> bool {
    matches!(
        factor,
        TableFactor::Derived { lateral: true, .. }
            | TableFactor::Function { .. }
            | TableFactor::Table { args: Some(_), .. }
            | TableFactor::UNNEST { .. }
    )
}

pub(super) fn cross_join(
    left: Plan,
    left_scope: Scope,
    right: Plan,
    right_scope: Scope,
    stats: &Statistics,
) -> (Plan, Scope) {
    let widths = (left_scope.columns.len(), right_scope.columns.len());
    let mut scope = left_scope;
    scope.columns.extend(right_scope.columns);
    let plan = crate::planner::join::join(left, right, JoinKind::Inner, None, widths, stats);
    (plan, scope)
}

pub(super) fn using_condition(
    names: &[String],
    left: &Scope,
    right: &Scope,
) -> Result<Option<Expr>> {
    let mut condition: Option<Expr> = None;
    for column in names {
        let l = left
            .find(None, column)?
            .ok_or_else(|| using_missing(column, "left"))?;
        let r = right
            .find(None, column)?
            .ok_or_else(|| using_missing(column, "right"))?;
        let eq = Expr::Compare(
            CmpOp::Eq,
            Box::new(Expr::Column(l)),
            Box::new(Expr::Column(left.columns.len() + r)),
        );
        condition = Some(match condition {
            None => eq,
            Some(c) => Expr::And(Box::new(c), Box::new(eq)),
        });
    }
    Ok(condition)
}

pub(super) fn using_missing(column: &str, side: &str) -> SqlError {
    SqlError::undefined_column(column).with_detail(format!(
        "column \"{column}\" specified in USING clause does not exist in {side} table"
    ))
}

/// The column names two sides have in common (NATURAL JOIN), in the left side's order.
pub(super) fn common_columns(left: &Scope, right: &Scope) -> Vec<String> {
    left.columns
        .iter()
        .filter(|c| {
            let joinable = |c: &ScopeColumn| !c.hidden && !c.system;
            joinable(c)
                && right
                    .columns
                    .iter()
                    .any(|r| joinable(r) && r.name == c.name)
        })
        .map(|c| c.name.clone())
        .collect()
}

/// After a USING / NATURAL join: the joined columns once (first), then the other columns of each
/// side; each side's own copy stays reachable by its qualified name.
pub(super) fn merge_using(
    plan: Plan,
    names: &[String],
    kind: JoinKind,
    left: &Scope,
    right: &Scope,
) -> Result<(Plan, Scope)> {
    let offset = left.columns.len();
    let mut exprs = Vec::new();
    let mut columns = Vec::new();
    let mut sides = left.clone();
    sides.columns.extend(right.columns.iter().cloned());
    for name in names {
        let l = left
            .find(None, name)?
            .ok_or_else(|| using_missing(name, "left"))?;
        let r = right
            .find(None, name)?
            .ok_or_else(|| using_missing(name, "right"))?
            + offset;
        let merged = match kind {
            JoinKind::Right | JoinKind::RightAnti => Expr::Column(r),
            JoinKind::Full => Expr::Case {
                operand: None,
                whens: vec![(
                    Expr::Not(Box::new(Expr::IsNull(Box::new(Expr::Column(l))))),
                    Expr::Column(l),
                )],
                otherwise: Some(Box::new(Expr::Column(r))),
            },
            JoinKind::Inner | JoinKind::Left | JoinKind::Anti => Expr::Column(l),
        };
        exprs.push(merged);
        columns.push(ScopeColumn {
            table: None,
            name: name.clone(),
            ty: sides.columns[l].ty,
            hidden: false,
            key: false,
            system: false,
        });
        sides.columns[l].hidden = true;
        sides.columns[r].hidden = true;
    }
    for (i, column) in sides.columns.into_iter().enumerate() {
        exprs.push(Expr::Column(i));
        columns.push(column);
    }
    let plan = Plan::Project {
        input: Box::new(plan),
        exprs,
    };
    Ok((plan, Scope { columns }))
}

/// Two FROM items may not have the same name.
pub(super) fn check_aliases(left: &Scope, right: &Scope) -> Result<()> {
    for column in &right.columns {
        if let Some(table) = column.table.as_deref().filter(|t| !t.is_empty()) {
            if left.has_table(table) {
                return Err(SqlError::new(
                    "42712",
                    format!("table name \"{table}\" specified more than once"),
                ));
            }
        }
    }
    Ok(())
}

pub(super) fn apply_column_aliases(
    mut columns: Vec<Column>,
    alias: Option<&ast::TableAlias>,
) -> Vec<Column> {
    if let Some(alias) = alias {
        for (column, name) in columns.iter_mut().zip(&alias.columns) {
            column.name = normalize_ident(&name.name);
        }
    }
    columns
}

/// Sequence `name` as a relation: one row of `last_value`, `log_cnt` (always 0: no values are
/// logged ahead) and `is_called`, read when the statement runs.
fn sequence_source(name: &str) -> (Plan, Vec<Column>) {
    use crate::execution::sequences::{IS_CALLED, LAST_VALUE};
    let name = || vec![Expr::Literal(Value::Text(name.to_owned()))];
    let row = vec![
        Expr::Call(&LAST_VALUE, name()),
        Expr::Literal(Value::BigInt(0)),
        Expr::Call(&IS_CALLED, name()),
    ];
    let columns = vec![
        Column::new("last_value", Some(DataType::BigInt)),
        Column::new("log_cnt", Some(DataType::BigInt)),
        Column::new("is_called", Some(DataType::Boolean)),
    ];
    let plan = Plan::Values {
        rows: vec![row],
        width: 3,
    };
    (plan, columns)
}

pub(super) fn system_columns(table: &SystemTable) -> Vec<Column> {
    table
        .columns
        .iter()
        .map(|(name, ty)| Column::new(*name, Some(*ty)))
        .collect()
}

/// `generate_series`'s arguments coerced to the series' type, and that type: a timestamp series
/// when an argument is a date, a timestamp or an interval (`timestamp` when one is a timestamp
/// without time zone, else `timestamptz`, as PostgreSQL resolves `'2024-01-01', ..., interval`),
/// its step an interval; else the widest of integer, bigint and numeric.
pub(crate) fn series_args(args: Vec<Typed>) -> Result<(Vec<Expr>, DataType)> {
    let types: Vec<Option<DataType>> = args.iter().map(|(_, t)| *t).collect();
    let ty = series_type(&types);
    let datetime = matches!(ty, DataType::Timestamp | DataType::TimestampTz);
    let exprs = args
        .into_iter()
        .enumerate()
        .map(|(i, (e, t))| {
            let target = if i == 2 && datetime {
                DataType::Interval
            } else {
                ty
            };
            match t {
                // A date or timestamp where the series is of another timestamp type.
                Some(from) if datetime && from != target => Ok(Expr::Cast(Box::new(e), target)),
                _ => coerce_to(e, t, target),
            }
        })
        .collect::<Result<Vec<Expr>>>()?;
    Ok((exprs, ty))
}

fn series_type(types: &[Option<DataType>]) -> DataType {
    use DataType::{Date, Interval, Timestamp, TimestampTz};
    if types
        .iter()
        .any(|t| matches!(t, Some(Date | Timestamp | TimestampTz | Interval)))
    {
        let plain = types.contains(&Some(Timestamp)) && !types.contains(&Some(TimestampTz));
        return if plain { Timestamp } else { TimestampTz };
    }
    let mut ty = DataType::Integer;
    for t in types {
        match t {
            Some(DataType::BigInt) if ty == DataType::Integer => ty = DataType::BigInt,
            Some(DataType::Numeric { .. }) => {
                ty = DataType::Numeric {
                    precision: None,
                    scale: None,
                }
            }
            _ => {}
        }
    }
    ty
}
