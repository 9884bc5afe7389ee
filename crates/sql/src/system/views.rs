//! The catalog of the database's views: `pg_views`, `information_schema.views`, `pg_matviews`
//! and `pg_get_viewdef` (what `\d+ view` shows). Views also appear in `pg_class` (relkind `v`,
//! `m` for a materialized view), `pg_attribute` and `information_schema.tables`/`columns`
//! (views only) through [`super::model::Relation`].
//!
//! A view's definition is its stored query text (sqlparser's rendering of what was written), not
//! PostgreSQL's deparsed form.

use sqlparser::ast;
use steady_engine::view::CheckOption;
use steady_types::{DataType, Value};

use super::functions::oid_arg;
use super::model::{self, Relation};
use super::rows::{name, Rows};
use super::SystemTable;
use crate::error::Result;
use crate::execution::executor::ExecCtx;

use DataType::{Boolean, Text};

pub const VIEWS: &[SystemTable] = &[
    SystemTable {
        schema: "pg_catalog",
        name: "pg_views",
        columns: &[
            ("schemaname", Text),
            ("viewname", Text),
            ("viewowner", Text),
            ("definition", Text),
        ],
        rows: pg_views,
    },
    SystemTable {
        schema: "information_schema",
        name: "views",
        columns: &[
            ("table_catalog", Text),
            ("table_schema", Text),
            ("table_name", Text),
            ("view_definition", Text),
            ("check_option", Text),
            ("is_updatable", Text),
            ("is_insertable_into", Text),
            ("is_trigger_updatable", Text),
            ("is_trigger_deletable", Text),
            ("is_trigger_insertable_into", Text),
        ],
        rows: information_schema_views,
    },
    SystemTable {
        schema: "pg_catalog",
        name: "pg_matviews",
        columns: &[
            ("schemaname", Text),
            ("matviewname", Text),
            ("matviewowner", Text),
            ("tablespace", Text),
            ("hasindexes", Boolean),
            ("ispopulated", Boolean),
            ("definition", Text),
        ],
        rows: pg_matviews,
    },
];

fn pg_matviews(ctx: &mut ExecCtx) -> Result<Rows> {
    let owner = ctx.bootstrap_name();
    Ok(ctx
        .engine()?
        .tables()
        .iter()
        .filter_map(|t| {
            let materialized = t.materialized.as_ref()?;
            Some(vec![
                name("public"),
                name(&t.name),
                name(&owner),
                Value::Null,
                Value::Boolean(!t.indexes.is_empty()),
                Value::Boolean(materialized.populated),
                Value::Text(definition(&materialized.query)),
            ])
        })
        .collect())
}

fn pg_views(ctx: &mut ExecCtx) -> Result<Rows> {
    let owner = ctx.bootstrap_name();
    Ok(ctx
        .engine()?
        .views()?
        .iter()
        .map(|v| {
            vec![
                name("public"),
                name(&v.name),
                name(&owner),
                Value::Text(definition(&v.query)),
            ]
        })
        .collect())
}

fn information_schema_views(ctx: &mut ExecCtx) -> Result<Rows> {
    let database = ctx.database_name();
    Ok(ctx
        .engine()?
        .views()?
        .iter()
        .map(|v| {
            let updatable = if is_updatable(v) { "YES" } else { "NO" };
            let mut row = vec![
                name(&database),
                name("public"),
                name(&v.name),
                Value::Text(definition(&v.query)),
                name(match v.check_option {
                    None => "NONE",
                    Some(CheckOption::Local) => "LOCAL",
                    Some(CheckOption::Cascaded) => "CASCADED",
                }),
                name(updatable),
                name(updatable),
            ];
            row.extend((0..3).map(|_| name("NO")));
            row
        })
        .collect())
}

/// `pg_get_viewdef(view [, pretty])`: the view's query, or NULL for another relation.
pub fn get_viewdef(args: &[Value], ctx: &mut ExecCtx) -> Result<Value> {
    Ok(match model::relation(ctx.engine()?, oid_arg(&args[0]))? {
        Some(Relation::UserView(view)) => Value::Text(definition(&view.query)),
        Some(Relation::Table(table)) => table
            .materialized
            .as_ref()
            .map_or(Value::Null, |m| Value::Text(definition(&m.query))),
        _ => Value::Null,
    })
}

/// A definition as PostgreSQL shows one: ending with a semicolon.
fn definition(query: &str) -> String {
    format!(" {query};")
}

/// Whether `view` is automatically updatable: its query has the shape [`updatable_select`] asks.
fn is_updatable(view: &steady_engine::view::ViewDef) -> bool {
    let Ok(statements) = crate::parser::parse(&view.query) else {
        return false;
    };
    match statements.as_slice() {
        [crate::parser::Statement::Sql(statement)] => match statement.as_ref() {
            ast::Statement::Query(query) => updatable_select(query).is_ok(),
            _ => false,
        },
        _ => false,
    }
}

/// A view query writes can go through (PostgreSQL's automatically updatable views): one SELECT
/// from one table or view, without WITH, LIMIT, OFFSET, DISTINCT, GROUP BY, HAVING, aggregate or
/// window calls. Gives the SELECT, the relation and its alias in the query; or why not, in
/// PostgreSQL's words (its DETAIL).
pub fn updatable_select(
    query: &ast::Query,
) -> std::result::Result<(&ast::Select, &ast::ObjectName, Option<&ast::Ident>), &'static str> {
    let ast::SetExpr::Select(select) = query.body.as_ref() else {
        return Err(
            "Views containing UNION, INTERSECT, or EXCEPT are not automatically updatable.",
        );
    };
    if query.with.is_some() {
        return Err("Views containing WITH are not automatically updatable.");
    }
    if query.limit_clause.is_some() || query.fetch.is_some() {
        return Err("Views containing LIMIT or OFFSET are not automatically updatable.");
    }
    if select.distinct.is_some() {
        return Err("Views containing DISTINCT are not automatically updatable.");
    }
    let grouped = !matches!(&select.group_by, ast::GroupByExpr::Expressions(e, _) if e.is_empty());
    if grouped || select.having.is_some() {
        return Err("Views containing GROUP BY are not automatically updatable.");
    }
    let single = match select.from.as_slice() {
        [only] if only.joins.is_empty() => match &only.relation {
            ast::TableFactor::Table {
                name, alias, args, ..
            } if args.is_none() => Some((name, alias.as_ref().map(|a| &a.name))),
            _ => None,
        },
        _ => None,
    };
    let Some((table, alias)) = single else {
        return Err(
            "Views that do not select from a single table or view are not automatically updatable.",
        );
    };
    if has_aggregate_or_window(&select.projection) {
        return Err("Views that return aggregate functions are not automatically updatable.");
    }
    Ok((select, table, alias))
}

/// Whether a select list has an aggregate or window call.
fn has_aggregate_or_window(projection: &[ast::SelectItem]) -> bool {
    projection.iter().any(|item| {
        let (ast::SelectItem::UnnamedExpr(expr) | ast::SelectItem::ExprWithAlias { expr, .. }) =
            item
        else {
            return false;
        };
        let mut found = false;
        let mut expr = expr.clone();
        let _ = ast::visit_expressions_mut(&mut expr, |e| {
            if let ast::Expr::Function(call) = e {
                let name = crate::types::object_name(&call.name).1;
                found |= call.over.is_some()
                    || crate::execution::aggregate::AggFunc::by_name(&name).is_some();
            }
            std::ops::ControlFlow::<()>::Continue(())
        });
        found
    })
}
