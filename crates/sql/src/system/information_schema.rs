//! `information_schema.schemata`, `.tables` and `.columns`: the SQL-standard views of the same
//! relations `pg_class` shows (user tables as `BASE TABLE`, system views as `VIEW`); dropped
//! columns are left out and `ordinal_position` is the attribute number.

use steady_types::{DataType, Value};

use super::model::{self, Relation};
use super::pg_type::{format_type, lookup, type_oid};
use super::rows::{name, Rows};
use super::{oids, SystemTable};
use crate::error::Result;
use crate::execution::executor::ExecCtx;

use DataType::{Integer, Text};

pub const VIEWS: &[SystemTable] = &[
    SystemTable {
        schema: "information_schema",
        name: "schemata",
        columns: &[
            ("catalog_name", Text),
            ("schema_name", Text),
            ("schema_owner", Text),
        ],
        rows: schemata,
    },
    SystemTable {
        schema: "information_schema",
        name: "tables",
        columns: &[
            ("table_catalog", Text),
            ("table_schema", Text),
            ("table_name", Text),
            ("table_type", Text),
            ("is_insertable_into", Text),
            ("is_typed", Text),
        ],
        rows: tables,
    },
    SystemTable {
        schema: "information_schema",
        name: "columns",
        columns: &[
            ("table_catalog", Text),
            ("table_schema", Text),
            ("table_name", Text),
            ("column_name", Text),
            ("ordinal_position", Integer),
            ("column_default", Text),
            ("is_nullable", Text),
            ("data_type", Text),
            ("character_maximum_length", Integer),
            ("numeric_precision", Integer),
            ("numeric_scale", Integer),
            ("udt_name", Text),
            ("is_identity", Text),
            ("is_generated", Text),
            ("generation_expression", Text),
            ("is_updatable", Text),
        ],
        rows: columns,
    },
];

fn schemata(ctx: &mut ExecCtx) -> Result<Rows> {
    let (database, owner) = (ctx.database_name(), ctx.bootstrap_name());
    Ok(oids::NAMESPACES
        .iter()
        .map(|(_, nsp)| vec![name(&database), name(nsp), name(&owner)])
        .collect())
}

/// The tables and views, with their schema's name.
fn listed(ctx: &mut ExecCtx) -> Result<Vec<(Relation, &'static str)>> {
    let engine = ctx.engine()?.clone();
    Ok(model::relations(&engine)?
        .into_iter()
        // PostgreSQL lists tables and views here, not indexes, sequences or materialized views.
        .filter(|r| matches!(r.kind(), "r" | "v"))
        .map(|r| {
            let schema = oids::namespace_name(r.namespace()).unwrap_or("public");
            (r, schema)
        })
        .collect())
}

fn yes_no(yes: bool) -> Value {
    name(if yes { "YES" } else { "NO" })
}

fn tables(ctx: &mut ExecCtx) -> Result<Rows> {
    let database = ctx.database_name();
    Ok(listed(ctx)?
        .iter()
        .map(|(r, schema)| {
            let table = r.kind() == "r";
            vec![
                name(&database),
                name(schema),
                name(r.name()),
                name(if table { "BASE TABLE" } else { "VIEW" }),
                yes_no(table),
                yes_no(false),
            ]
        })
        .collect())
}

fn columns(ctx: &mut ExecCtx) -> Result<Rows> {
    let database = ctx.database_name();
    let mut rows = Vec::new();
    for (relation, schema) in listed(ctx)? {
        let updatable = relation.kind() == "r";
        for (position, attribute) in relation.attributes().into_iter().enumerate() {
            let Some(ty) = attribute.ty else { continue };
            let mut row = vec![
                name(&database),
                name(schema),
                name(relation.name()),
                name(&attribute.name),
                Value::Integer(position as i32 + 1),
                attribute
                    .default
                    .clone()
                    .filter(|_| !attribute.generated)
                    .map_or(Value::Null, Value::Text),
                yes_no(!attribute.not_null),
                name(&match ty {
                    DataType::Enum(_) => "USER-DEFINED".to_owned(),
                    _ => format_type(type_oid(&ty), None),
                }),
            ];
            row.extend(sizes(&ty));
            let udt = match ty {
                DataType::Enum(oid) => steady_types::enums::type_name(oid),
                _ => lookup(type_oid(&ty)).map_or("", |(t, _)| t.name).to_owned(),
            };
            let udt = udt.as_str();
            let identity = yes_no(attribute.identity.is_some());
            let (generated, expression) = match attribute.default {
                Some(expression) if attribute.generated => ("ALWAYS", Value::Text(expression)),
                _ => ("NEVER", Value::Null),
            };
            row.extend([name(udt), identity, name(generated), expression]);
            row.push(yes_no(updatable));
            rows.push(row);
        }
    }
    Ok(rows)
}

/// `character_maximum_length`, `numeric_precision` and `numeric_scale`.
fn sizes(ty: &DataType) -> [Value; 3] {
    let int = |n: u32| Value::Integer(n as i32);
    match ty {
        DataType::Char(n) | DataType::Varchar(Some(n)) => [int(*n), Value::Null, Value::Null],
        DataType::SmallInt => [Value::Null, int(16), int(0)],
        DataType::Integer => [Value::Null, int(32), int(0)],
        DataType::BigInt => [Value::Null, int(64), int(0)],
        DataType::Real => [Value::Null, int(24), Value::Null],
        DataType::Double => [Value::Null, int(53), Value::Null],
        DataType::Numeric {
            precision: Some(p),
            scale,
        } => [Value::Null, int(*p), int(scale.unwrap_or(0))],
        _ => [Value::Null, Value::Null, Value::Null],
    }
}
