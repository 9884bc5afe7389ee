//! System views: SteadyDB's own (`steady_metrics`, `steady_tables`) and the `pg_catalog` /
//! `information_schema` subset that psql 15 (`\l`, `\dt`, `\di`, `\d NAME`, `\dn`, `\du`) and
//! drivers such as psycopg 3 query, with the catalog functions, casts and operators those queries
//! use.
//!
//! A system view is computed from the engine when a scan of it opens; it is never stored. Views
//! are read-only and visible under their own name or their schema's (`pg_catalog.pg_class`); an
//! unqualified name finds only views of the search path (`pg_catalog`, `public`), as in
//! PostgreSQL. Catalog values follow PostgreSQL's meanings and oids ([`oids`], [`pg_type`]), in
//! the value types of `steady-types` ([`rows`]).
//!
//! Modules: [`steady`], [`activity`] (pg_stat_activity), [`table_stats`] (pg_stat_user_tables), [`statio`] (pg_statio_*), [`locks`] (pg_locks), [`views`] (pg_views & co.), [`relations`] (pg_class & co.), [`globals`] (everything else in
//! pg_catalog), [`information_schema`], [`sizes`] (pg_relation_size & co.); [`model`] derives relations, indexes and constraints from
//! the engine; [`functions`] and [`arrays`] are what the binder calls (with
//! `planner::binding`).

mod activity;
pub(crate) mod arrays;
pub(crate) mod functions;
mod globals;
mod information_schema;
mod locks;
mod model;
mod oids;
pub(crate) mod pg_type;
mod relations;
pub use relations::{column_list, index_predicate};
mod rows;
mod sizes;
mod statements;
mod statio;
mod steady;
mod table_stats;
pub mod views;

use sqlparser::ast::BinaryOperator;

use crate::execution::functions::Function;

pub use crate::execution::plan::SystemTable;
pub use oids::{namespace_oid, public_object_name};
pub use pg_type::{format_type, type_modifier, type_oid};

static GROUPS: &[&[SystemTable]] = &[
    steady::VIEWS,
    relations::VIEWS,
    globals::VIEWS,
    information_schema::VIEWS,
    activity::VIEWS,
    views::VIEWS,
    locks::VIEWS,
    table_stats::VIEWS,
    statements::VIEWS,
    statio::VIEWS,
];

/// The system view `name`, in `schema` or, unqualified, in a schema of the search path.
pub fn lookup(schema: Option<&str>, name: &str) -> Option<&'static SystemTable> {
    all().find(|t| {
        t.name == name
            && match schema {
                Some(s) => s == t.schema,
                None => t.schema != "information_schema",
            }
    })
}

/// The oid of a system view (its `tableoid` and its `pg_class` row's).
pub fn view_oid(table: &SystemTable) -> i64 {
    let position = all().position(|t| std::ptr::eq(t, table));
    oids::view(position.unwrap_or(usize::MAX >> 8), table.name)
}

/// The oid of the `pg_catalog` view `name` (what `'name'::regclass` gives).
pub fn catalog_oid(name: &str) -> i64 {
    lookup(Some("pg_catalog"), name).map_or(0, view_oid)
}

/// Every system view, in a fixed order (a view's oid is its position).
pub fn all() -> impl Iterator<Item = &'static SystemTable> {
    GROUPS.iter().flat_map(|group| group.iter())
}

/// The function implementing an operator other than arithmetic and comparison, if any: the
/// regular-expression matches, also as `OPERATOR(pg_catalog.~)`.
pub fn operator_function(op: &BinaryOperator) -> Option<&'static str> {
    let symbol = match op {
        BinaryOperator::PGRegexMatch => "~",
        BinaryOperator::PGRegexIMatch => "~*",
        BinaryOperator::PGRegexNotMatch => "!~",
        BinaryOperator::PGRegexNotIMatch => "!~*",
        BinaryOperator::PGCustomBinaryOperator(parts) => match parts.as_slice() {
            [symbol] => symbol.as_str(),
            [schema, symbol] if schema == "pg_catalog" => symbol.as_str(),
            _ => return None,
        },
        _ => return None,
    };
    let function = match symbol {
        "~" => &functions::REGEX_MATCH,
        "~*" => &functions::REGEX_IMATCH,
        "!~" => &functions::REGEX_NOT_MATCH,
        "!~*" => &functions::REGEX_NOT_IMATCH,
        _ => return None,
    };
    Some(function.name)
}

/// Catalog functions (`pg_table_is_visible`, `format_type`...).
pub fn function(name: &str, args: usize) -> Option<&'static Function> {
    functions::lookup(name, args)
}
