//! Writes through views: an INSERT, UPDATE or DELETE naming an automatically updatable view is
//! rewritten into the same write of the view's table, as PostgreSQL's rewriter does, and bound
//! as that (a view over an updatable view is rewritten again, one level per round).
//!
//! A view is automatically updatable when its query is `SELECT columns FROM one_table [WHERE
//! condition]` — one table or view in FROM, no WITH, DISTINCT, GROUP BY, HAVING, window, LIMIT,
//! OFFSET, ORDER BY or set operation, no aggregate or set-returning function in its list. Its
//! columns that are plain columns of the table (renamed or not) can be written; another column
//! (an expression) cannot (0A000), and a view that is not updatable at all is refused with 55000,
//! both with PostgreSQL's messages. The rewrite:
//! - names the table instead of the view, under the view's name (or the statement's alias), so
//!   that `v.x` in the statement still reads;
//! - writes each view column's table column (`SET x = ...` on a view column `x` that is the
//!   table's `a` sets `a`), and reads it wherever the statement names the view column;
//! - adds the view's condition to an UPDATE's or DELETE's WHERE: rows the view does not show are
//!   not touched;
//! - leaves unqualified names inside subqueries alone (they may be the subquery's own columns;
//!   a view column named there unqualified then fails to resolve instead of reading another);
//! - `WITH [CASCADED | LOCAL] CHECK OPTION`: rows an INSERT or UPDATE writes must satisfy the
//!   view's condition (CASCADED: and the conditions of the views under it), else 44000.
//!
//! Not rewritten (0A000): ON CONFLICT into a view, and an INSERT without a column list into a
//! view with a column that cannot be written (PostgreSQL accepts it when the VALUES stop before
//! that column).

use std::ops::ControlFlow;

use sqlparser::ast::{
    self, Expr as AstExpr, Ident, ObjectName, ObjectNamePart, VisitMut, VisitorMut,
};
use steady_engine::view::{CheckOption, ViewDef};

use crate::error::{Result, SqlError};
use crate::execution::privileges::{Privilege, RelationKind};
use crate::planner::bind::view::view_query;
use crate::planner::bind::Binder;
use crate::types::{normalize_ident, object_name};

/// A view's condition that rows written through it must satisfy (its check option).
#[derive(Debug, Clone)]
pub struct ViewCheck {
    /// The view whose check option failed, for the error.
    pub view: String,
    /// The condition over the table's columns, unqualified.
    pub condition: AstExpr,
}

/// A column of an updatable view.
struct ViewColumn {
    name: String,
    /// The table column it is, or None for an expression (which cannot be written).
    source: Option<String>,
    /// What it is over the table's row, unqualified: its table column or its expression.
    expr: AstExpr,
}

/// What a write through a view writes instead.
struct Updatable {
    /// The table (or view) the view selects from.
    table: ObjectName,
    /// The view's columns.
    columns: Vec<ViewColumn>,
    /// The view's WHERE, with the table's qualifiers removed.
    condition: Option<AstExpr>,
}

impl Binder<'_> {
    /// The statement `statement` becomes when the table it writes is an updatable view; None
    /// when it writes no view.
    pub(crate) fn rewrite_view_write(
        &mut self,
        statement: &ast::Statement,
    ) -> Result<Option<ast::Statement>> {
        let Some((name, alias)) = write_target(statement) else {
            return Ok(None);
        };
        let (schema, relation) = object_name(name);
        if !matches!(schema.as_deref(), None | Some("public"))
            || self.user_table(schema.as_deref(), &relation)?.is_some()
        {
            return Ok(None);
        }
        let Some(view) = self.engine.view(&relation)? else {
            return Ok(None);
        };
        let (verb, privilege) = match statement {
            ast::Statement::Insert(_) => ("insert into", Privilege::Insert),
            ast::Statement::Update(_) => ("update", Privilege::Update),
            _ => ("delete from", Privilege::Delete),
        };
        self.require(view.id, &view.name, RelationKind::View, privilege);
        let updatable = updatable(&view, verb)?;
        let alias = alias.unwrap_or_else(|| view.name.clone());
        self.add_view_checks(&view, &updatable);
        let mut rewritten = statement.clone();
        match &mut rewritten {
            ast::Statement::Insert(insert) => updatable.rewrite_insert(insert, &view, &alias)?,
            ast::Statement::Update(update) => updatable.rewrite_update(update, &view, &alias)?,
            ast::Statement::Delete(delete) => updatable.rewrite_delete(delete, &alias),
            _ => unreachable!("write_target names only writes"),
        }
        Ok(Some(rewritten))
    }

    /// Records the conditions rows written through `view` must satisfy, and renames the view's
    /// columns in the conditions recorded by the views above it.
    fn add_view_checks(&mut self, view: &ViewDef, updatable: &Updatable) {
        for check in &mut self.view_checks {
            updatable.read_table_columns(&mut check.condition, &[]);
        }
        let checked = view.check_option.is_some() || self.cascaded_check;
        if view.check_option == Some(CheckOption::Cascaded) {
            self.cascaded_check = true;
        }
        if let (true, Some(condition)) = (checked, &updatable.condition) {
            self.view_checks.push(ViewCheck {
                view: view.name.clone(),
                condition: condition.clone(),
            });
        }
    }
}

/// 0A000 unless `view` is automatically updatable (its check option needs that).
pub(crate) fn require_updatable(view: &ViewDef) -> Result<()> {
    updatable(view, "insert into").map(drop).map_err(|err| {
        SqlError::new(
            "0A000",
            "WITH CHECK OPTION is supported only on automatically updatable views",
        )
        .with_hint(err.detail.unwrap_or_default())
    })
}

/// The relation an INSERT, UPDATE or DELETE writes, and the alias the statement gives it.
fn write_target(statement: &ast::Statement) -> Option<(&ObjectName, Option<String>)> {
    match statement {
        ast::Statement::Insert(insert) => match &insert.table {
            ast::TableObject::TableName(name) => Some((
                name,
                insert
                    .table_alias
                    .as_ref()
                    .map(|a| normalize_ident(&a.alias)),
            )),
            _ => None,
        },
        ast::Statement::Update(update) => table_factor_target(&update.table.relation),
        ast::Statement::Delete(delete) => {
            let (ast::FromTable::WithFromKeyword(from) | ast::FromTable::WithoutKeyword(from)) =
                &delete.from;
            table_factor_target(&from.first()?.relation)
        }
        _ => None,
    }
}

fn table_factor_target(relation: &ast::TableFactor) -> Option<(&ObjectName, Option<String>)> {
    match relation {
        ast::TableFactor::Table { name, alias, .. } => {
            Some((name, alias.as_ref().map(|a| normalize_ident(&a.name))))
        }
        _ => None,
    }
}

/// How `view` is written through, or why it cannot be (`verb`: "insert into", "update" or
/// "delete from", for the error).
fn updatable(view: &ViewDef, verb: &str) -> Result<Updatable> {
    let query = view_query(&view.query)?;
    let hint = match verb {
        "insert into" => "To enable inserting into the view, provide an INSTEAD OF INSERT trigger or an unconditional ON INSERT DO INSTEAD rule.",
        "update" => "To enable updating the view, provide an INSTEAD OF UPDATE trigger or an unconditional ON UPDATE DO INSTEAD rule.",
        _ => "To enable deleting from the view, provide an INSTEAD OF DELETE trigger or an unconditional ON DELETE DO INSTEAD rule.",
    };
    let not_updatable = |detail: &str| {
        SqlError::new("55000", format!("cannot {verb} view \"{}\"", view.name))
            .with_detail(detail)
            .with_hint(hint)
    };
    let (select, table, table_alias) =
        crate::system::views::updatable_select(&query).map_err(not_updatable)?;
    let qualifiers = [Some(object_name(table).1), table_alias.map(normalize_ident)];
    let mut condition = select.selection.clone();
    if let Some(condition) = &mut condition {
        unqualify(condition, &qualifiers);
    }
    Ok(Updatable {
        columns: view_columns(view, &select.projection, &qualifiers),
        table: table.clone(),
        condition,
    })
}

/// The view's columns: each with the table column it is (a `*` stands for the table's columns
/// the view stored when it was created, which are named as the table's) or its expression.
fn view_columns(
    view: &ViewDef,
    projection: &[ast::SelectItem],
    qualifiers: &[Option<String>],
) -> Vec<ViewColumn> {
    let mut exprs: Vec<AstExpr> = Vec::new();
    for item in projection {
        match item {
            ast::SelectItem::UnnamedExpr(e) | ast::SelectItem::ExprWithAlias { expr: e, .. } => {
                let mut e = e.clone();
                unqualify(&mut e, qualifiers);
                exprs.push(e);
            }
            ast::SelectItem::ExprWithAliases { expr, .. } => exprs.push(expr.clone()),
            ast::SelectItem::Wildcard(_) | ast::SelectItem::QualifiedWildcard(..) => {
                let rest = view.columns.iter().skip(exprs.len());
                let columns = rest.map(|(name, _)| AstExpr::Identifier(quoted(name)));
                exprs.extend(columns);
            }
        }
    }
    view.columns
        .iter()
        .zip(exprs)
        .map(|((name, _), expr)| ViewColumn {
            name: name.clone(),
            source: column_of(&expr),
            expr,
        })
        .collect()
}

fn quoted(name: &str) -> Ident {
    Ident::with_quote('"', name)
}

/// The column a select item is, if it is a plain column reference.
fn column_of(expr: &AstExpr) -> Option<String> {
    match expr {
        AstExpr::Identifier(ident) => Some(normalize_ident(ident)),
        AstExpr::CompoundIdentifier(parts) if parts.len() == 2 => Some(normalize_ident(&parts[1])),
        AstExpr::Nested(inner) => column_of(inner),
        _ => None,
    }
}

/// Makes column references qualified by one of `qualifiers` unqualified.
fn unqualify(expr: &mut AstExpr, qualifiers: &[Option<String>]) {
    visit_outside_subqueries(expr, |e| {
        if let AstExpr::CompoundIdentifier(parts) = e {
            if parts.len() == 2 && qualifiers.contains(&Some(normalize_ident(&parts[0]))) {
                *e = AstExpr::Identifier(parts[1].clone());
            }
        }
        ControlFlow::Continue(())
    });
}

impl Updatable {
    /// The table column view column `name` writes: 42703 for none, 0A000 for an expression.
    fn table_column(&self, name: &str, view: &ViewDef, verb: &str) -> Result<Ident> {
        let Some(column) = self.columns.iter().find(|column| column.name == name) else {
            return Err(SqlError::new(
                "42703",
                format!(
                    "column \"{name}\" of relation \"{}\" does not exist",
                    view.name
                ),
            ));
        };
        let Some(source) = &column.source else {
            return Err(SqlError::new(
                "0A000",
                format!("cannot {verb} column \"{name}\" of view \"{}\"", view.name),
            )
            .with_detail(
                "View columns that are not columns of their base relation are not updatable.",
            ));
        };
        Ok(quoted(source))
    }

    /// Makes the references to view columns in `expr` (unqualified, or qualified by one of
    /// `qualifiers`) read what they are over the table's row, qualified as they were.
    fn read_table_columns(&self, expr: &mut AstExpr, qualifiers: &[&str]) {
        visit_with_depth(expr, |e, depth| {
            let (qualifier, name) = match e {
                AstExpr::Identifier(ident) if depth == 0 => (None, normalize_ident(ident)),
                AstExpr::CompoundIdentifier(parts)
                    if parts.len() == 2 && qualifiers.contains(&&*normalize_ident(&parts[0])) =>
                {
                    (Some(parts[0].clone()), normalize_ident(&parts[1]))
                }
                _ => return ControlFlow::Continue(()),
            };
            let Some(column) = self.columns.iter().find(|column| column.name == name) else {
                return ControlFlow::Continue(());
            };
            if column.source.as_deref() != Some(name.as_str()) {
                let mut replacement = column.expr.clone();
                if let Some(qualifier) = &qualifier {
                    requalify_unqualified(&mut replacement, &qualifier.value);
                }
                *e = AstExpr::Nested(Box::new(replacement));
            }
            ControlFlow::Continue(())
        });
    }

    /// The view's condition, qualified by `alias`, ANDed to `selection`.
    fn restrict(&self, selection: &mut Option<AstExpr>, alias: &str) {
        let Some(condition) = &self.condition else {
            return;
        };
        let mut condition = condition.clone();
        requalify_unqualified(&mut condition, alias);
        *selection = Some(match selection.take() {
            Some(own) => AstExpr::BinaryOp {
                left: Box::new(AstExpr::Nested(Box::new(condition))),
                op: ast::BinaryOperator::And,
                right: Box::new(AstExpr::Nested(Box::new(own))),
            },
            None => condition,
        });
    }

    /// A RETURNING list over the view's columns, over the table's: `*` is the view's columns,
    /// and a view column returned keeps its name.
    fn read_in_items(&self, items: &mut Option<Vec<ast::SelectItem>>, alias: &str) {
        let Some(items) = items else {
            return;
        };
        let mut read = Vec::new();
        for item in items.drain(..) {
            match item {
                ast::SelectItem::Wildcard(_) => read.extend(self.columns.iter().map(|column| {
                    ast::SelectItem::UnnamedExpr(AstExpr::Identifier(quoted(&column.name)))
                })),
                ast::SelectItem::QualifiedWildcard(..) => {
                    read.extend(self.columns.iter().map(|column| {
                        let parts = vec![quoted(alias), quoted(&column.name)];
                        ast::SelectItem::UnnamedExpr(AstExpr::CompoundIdentifier(parts))
                    }))
                }
                item => read.push(item),
            }
        }
        for item in &mut read {
            if let ast::SelectItem::UnnamedExpr(e) = item {
                if let Some(shown) = column_of(e) {
                    *item = ast::SelectItem::ExprWithAlias {
                        expr: e.clone(),
                        alias: quoted(&shown),
                    };
                }
            }
            if let ast::SelectItem::UnnamedExpr(e)
            | ast::SelectItem::ExprWithAlias { expr: e, .. } = item
            {
                self.read_table_columns(e, &[alias]);
            }
        }
        *items = read;
    }

    /// The view columns an INSERT without a column list writes: as many as its rows have
    /// values (all when that cannot be told before binding).
    fn inserted_columns(&self, insert: &ast::Insert) -> Vec<String> {
        let given = insert
            .source
            .as_deref()
            .and_then(|query| match query.body.as_ref() {
                ast::SetExpr::Values(values) => values.rows.first().map(|row| row.len()),
                ast::SetExpr::Select(select) => {
                    let plain = |item: &ast::SelectItem| {
                        !matches!(
                            item,
                            ast::SelectItem::Wildcard(_) | ast::SelectItem::QualifiedWildcard(..)
                        )
                    };
                    select
                        .projection
                        .iter()
                        .all(plain)
                        .then_some(select.projection.len())
                }
                _ => None,
            });
        let count = given.unwrap_or(self.columns.len());
        self.columns
            .iter()
            .take(count)
            .map(|column| column.name.clone())
            .collect()
    }

    /// ON CONFLICT of an INSERT through the view: its columns and assignments are the table's.
    fn rewrite_on_conflict(
        &self,
        conflict: &mut ast::OnConflict,
        view: &ViewDef,
        alias: &str,
    ) -> Result<()> {
        if let Some(ast::ConflictTarget::Columns(columns)) = &mut conflict.conflict_target {
            // The predicate the parser carries as a marked name (see
            // `parser::on_conflict_where_marked`) is left as it is.
            let named = columns
                .iter_mut()
                .filter(|column| !column.value.starts_with(crate::parser::CONFLICT_PREDICATE));
            for column in named {
                *column = self.table_column(&normalize_ident(column), view, "insert into")?;
            }
        }
        if let ast::OnConflictAction::DoUpdate(update) = &mut conflict.action {
            self.rewrite_assignments(&mut update.assignments, view, &[alias, "excluded"])?;
            if let Some(selection) = &mut update.selection {
                self.read_table_columns(selection, &[alias, "excluded"]);
            }
        }
        Ok(())
    }

    fn rewrite_assignments(
        &self,
        assignments: &mut [ast::Assignment],
        view: &ViewDef,
        qualifiers: &[&str],
    ) -> Result<()> {
        for assignment in assignments {
            let ast::AssignmentTarget::ColumnName(name) = &mut assignment.target else {
                return Err(SqlError::unsupported("assigning a row of view columns"));
            };
            let column = self.table_column(&object_name(name).1, view, "update")?;
            *name = ObjectName(vec![ObjectNamePart::Identifier(column)]);
            self.read_table_columns(&mut assignment.value, qualifiers);
        }
        Ok(())
    }

    fn rewrite_insert(&self, insert: &mut ast::Insert, view: &ViewDef, alias: &str) -> Result<()> {
        match &mut insert.on {
            Some(ast::OnInsert::OnConflict(conflict)) => {
                self.rewrite_on_conflict(conflict, view, alias)?;
            }
            Some(_) => return Err(SqlError::unsupported("ON DUPLICATE KEY")),
            None => {}
        }
        let named: Vec<String> = if insert.columns.is_empty() {
            self.inserted_columns(insert)
        } else {
            insert
                .columns
                .iter()
                .map(|column| object_name(column).1)
                .collect()
        };
        insert.columns = named
            .iter()
            .map(|name| {
                let column = self.table_column(name, view, "insert into")?;
                Ok(ObjectName(vec![ObjectNamePart::Identifier(column)]))
            })
            .collect::<Result<_>>()?;
        insert.table = ast::TableObject::TableName(self.table.clone());
        insert.table_alias = Some(ast::TableAliasWithoutColumns {
            explicit: true,
            alias: Ident::with_quote('"', alias),
        });
        self.read_in_items(&mut insert.returning, alias);
        Ok(())
    }

    fn rewrite_update(&self, update: &mut ast::Update, view: &ViewDef, alias: &str) -> Result<()> {
        self.rewrite_assignments(&mut update.assignments, view, &[alias])?;
        if let Some(selection) = &mut update.selection {
            self.read_table_columns(selection, &[alias]);
        }
        self.restrict(&mut update.selection, alias);
        self.read_in_items(&mut update.returning, alias);
        rename_relation(&mut update.table.relation, &self.table, alias);
        Ok(())
    }

    fn rewrite_delete(&self, delete: &mut ast::Delete, alias: &str) {
        if let Some(selection) = &mut delete.selection {
            self.read_table_columns(selection, &[alias]);
        }
        self.restrict(&mut delete.selection, alias);
        self.read_in_items(&mut delete.returning, alias);
        let (ast::FromTable::WithFromKeyword(from) | ast::FromTable::WithoutKeyword(from)) =
            &mut delete.from;
        if let Some(first) = from.first_mut() {
            rename_relation(&mut first.relation, &self.table, alias);
        }
    }
}

/// Qualifies the unqualified column references of a view's condition by `alias`, so that it
/// reads the written table even beside the other tables of an UPDATE ... FROM.
fn requalify_unqualified(expr: &mut AstExpr, alias: &str) {
    visit_outside_subqueries(expr, |e| {
        if let AstExpr::Identifier(ident) = e {
            *e = AstExpr::CompoundIdentifier(vec![Ident::with_quote('"', alias), ident.clone()]);
        }
        ControlFlow::Continue(())
    });
}

/// Makes an UPDATE's or DELETE's target name `table` under `alias`.
fn rename_relation(relation: &mut ast::TableFactor, table: &ObjectName, alias: &str) {
    if let ast::TableFactor::Table {
        name,
        alias: target_alias,
        ..
    } = relation
    {
        *name = table.clone();
        *target_alias = Some(ast::TableAlias {
            explicit: true,
            name: Ident::with_quote('"', alias),
            columns: Vec::new(),
            at: None,
        });
    }
}

/// Calls `f` on every expression of `expr` that is not inside a subquery: an unqualified name
/// inside a subquery may be the subquery's own table's column, so the rewrite leaves it alone (a
/// view column named there then fails to resolve rather than read another column).
fn visit_outside_subqueries(
    expr: &mut AstExpr,
    mut f: impl FnMut(&mut AstExpr) -> ControlFlow<()>,
) {
    visit_with_depth(expr, |e, depth| {
        if depth == 0 {
            f(e)
        } else {
            ControlFlow::Continue(())
        }
    });
}

/// Calls `f` on every expression of `expr` with how many subqueries deep it is.
fn visit_with_depth(expr: &mut AstExpr, f: impl FnMut(&mut AstExpr, usize) -> ControlFlow<()>) {
    struct Outside<F> {
        depth: usize,
        f: F,
    }
    impl<F: FnMut(&mut AstExpr, usize) -> ControlFlow<()>> VisitorMut for Outside<F> {
        type Break = ();
        fn pre_visit_query(&mut self, _: &mut ast::Query) -> ControlFlow<()> {
            self.depth += 1;
            ControlFlow::Continue(())
        }
        fn post_visit_query(&mut self, _: &mut ast::Query) -> ControlFlow<()> {
            self.depth -= 1;
            ControlFlow::Continue(())
        }
        fn post_visit_expr(&mut self, expr: &mut AstExpr) -> ControlFlow<()> {
            (self.f)(expr, self.depth)
        }
    }
    let _ = expr.visit(&mut Outside { depth: 0, f });
}
