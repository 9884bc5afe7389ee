//! The catalog of the database's views: `pg_views`, `information_schema.views`, `pg_matviews`
//! and `pg_get_viewdef` (what `\d+ view` shows). Views also appear in `pg_class` (relkind `v`,
//! `m` for a materialized view), `pg_attribute` and `information_schema.tables`/`columns`
//! (views only) through [`super::model::Relation`].
//!
//! A view's definition is its stored query text (sqlparser's rendering of what was written), not
//! PostgreSQL's deparsed form.

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
            let mut row = vec![
                name(&database),
                name("public"),
                name(&v.name),
                Value::Text(definition(&v.query)),
                name("NONE"),
            ];
            row.extend((0..5).map(|_| name("NO")));
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
