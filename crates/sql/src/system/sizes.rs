//! Relation, database and tablespace sizes as PostgreSQL's functions report them
//! (`pg_relation_size`, `pg_table_size`, `pg_indexes_size`, `pg_total_relation_size`,
//! `pg_database_size`, `pg_tablespace_size`, `pg_tablespace_location`) and `pg_size_pretty`,
//! which psql's `\dt+`, `\di+`, `\l+` and `\db+` and monitoring queries call.
//!
//! A table and its indexes share one space (one file). The table's rows live in its clustered
//! tree, which is also its primary key, so:
//! * `pg_relation_size` of a table is its clustered tree's pages, of a secondary index its tree's
//!   pages, and of a primary key 0 (its entries are the table's rows, counted there);
//! * `pg_indexes_size` is the secondary indexes' pages;
//! * `pg_total_relation_size` is the whole file (overflow pages and free extents included), and
//!   `pg_table_size` that less the secondary indexes, so that total = table + indexes as in
//!   PostgreSQL.
//!
//! Tree pages are counted from branch pages only (`BTree::stats`): answering never scans leaves.
//! An argument is a relation's oid (`c.oid` from `pg_class`) or its name (`'t'`, as a `regclass`
//! literal); an oid that names no relation gives NULL, an unknown name error 42P01. Views and
//! sequences have no storage here: 0.

use rust_decimal::prelude::ToPrimitive;
use steady_engine::engine::Engine;
use steady_types::Value;

use super::model::{self, Relation};
use crate::error::{Result, SqlError};
use crate::execution::executor::ExecCtx;
use crate::types::ops::text_of;

/// The relation an argument names, if any.
fn relation_arg(engine: &Engine, arg: &Value) -> Result<Option<Relation>> {
    let oid = match arg {
        Value::SmallInt(_) | Value::Integer(_) | Value::BigInt(_) => super::functions::oid_arg(arg),
        _ => {
            let name = text_of(arg);
            model::relation_by_name(engine, &name)?
                .ok_or_else(|| SqlError::undefined_table(&name))?
        }
    };
    model::relation(engine, oid)
}

/// Bytes of the pages of a tree of the engine.
fn tree_bytes(engine: &Engine, tree: u64) -> Result<i64> {
    let page_size = engine.store().pool().page_size() as i64;
    Ok(engine.index_pages(tree)? as i64 * page_size)
}

/// Bytes of the space (file) of a table.
fn space_bytes(engine: &Engine, space: u32) -> i64 {
    let page_size = engine.store().pool().page_size() as i64;
    engine
        .store()
        .space(space)
        .map_or(0, |s| i64::from(s.size_in_pages()) * page_size)
}

fn indexes_bytes(engine: &Engine, table: &steady_engine::catalog::TableDef) -> Result<i64> {
    table
        .indexes
        .iter()
        .map(|index| tree_bytes(engine, index.id))
        .sum()
}

/// Runs `size` on the relation the first argument names; NULL when it names none.
fn sized(
    args: &[Value],
    ctx: &mut ExecCtx,
    size: impl FnOnce(&Engine, Relation) -> Result<i64>,
) -> Result<Value> {
    let engine = ctx.engine()?.clone();
    Ok(match relation_arg(&engine, &args[0])? {
        Some(relation) => Value::BigInt(size(&engine, relation)?),
        None => Value::Null,
    })
}

/// `pg_relation_size(relation [, fork])`: the main fork; other forks are empty here.
pub(super) fn relation_size(args: &[Value], ctx: &mut ExecCtx) -> Result<Value> {
    let main_fork = args.get(1).is_none_or(|fork| text_of(fork) == "main");
    sized(args, ctx, |engine, relation| match relation {
        _ if !main_fork => Ok(0),
        Relation::Table(table) => tree_bytes(engine, table.id),
        Relation::Index(_, index) if index.primary => Ok(0),
        Relation::Index(_, index) => tree_bytes(engine, index.engine_id),
        _ => Ok(0),
    })
}

/// `pg_table_size(relation)`: a table's file less its secondary indexes.
pub(super) fn table_size(args: &[Value], ctx: &mut ExecCtx) -> Result<Value> {
    sized(args, ctx, |engine, relation| match relation {
        Relation::Table(table) => {
            Ok(space_bytes(engine, table.space) - indexes_bytes(engine, &table)?)
        }
        Relation::Index(_, index) if index.primary => Ok(0),
        Relation::Index(_, index) => tree_bytes(engine, index.engine_id),
        _ => Ok(0),
    })
}

/// `pg_indexes_size(relation)`: a table's secondary indexes.
pub(super) fn indexes_size(args: &[Value], ctx: &mut ExecCtx) -> Result<Value> {
    sized(args, ctx, |engine, relation| match relation {
        Relation::Table(table) => indexes_bytes(engine, &table),
        _ => Ok(0),
    })
}

/// `pg_total_relation_size(relation)`: a table's whole file.
pub(super) fn total_relation_size(args: &[Value], ctx: &mut ExecCtx) -> Result<Value> {
    sized(args, ctx, |engine, relation| match relation {
        Relation::Table(table) => Ok(space_bytes(engine, table.space)),
        Relation::Index(_, index) if index.primary => Ok(0),
        Relation::Index(_, index) => tree_bytes(engine, index.engine_id),
        _ => Ok(0),
    })
}

/// `pg_database_size(name | oid)`: the data files of the one database (every space's file; the
/// redo log is not counted, as PostgreSQL does not count its WAL). Another name is error 3D000;
/// another oid gives NULL.
pub(super) fn database_size(args: &[Value], ctx: &mut ExecCtx) -> Result<Value> {
    let ours = match &args[0] {
        Value::SmallInt(_) | Value::Integer(_) | Value::BigInt(_) => {
            super::functions::oid_arg(&args[0]) == super::oids::DATABASE
        }
        other => {
            let name = text_of(other);
            if name != ctx.database_name() {
                return Err(SqlError::new(
                    "3D000",
                    format!("database \"{name}\" does not exist"),
                ));
            }
            true
        }
    };
    if !ours {
        return Ok(Value::Null);
    }
    Ok(Value::BigInt(data_files_bytes(ctx)?))
}

/// `pg_tablespace_size(name | oid)`: `pg_default` holds every data file, `pg_global` nothing;
/// another name is error 42704, another oid gives NULL.
pub(super) fn tablespace_size(args: &[Value], ctx: &mut ExecCtx) -> Result<Value> {
    use super::oids::{DEFAULT_TABLESPACE, GLOBAL_TABLESPACE};
    let tablespace = match &args[0] {
        Value::SmallInt(_) | Value::Integer(_) | Value::BigInt(_) => {
            super::functions::oid_arg(&args[0])
        }
        other => match text_of(other).as_str() {
            "pg_default" => DEFAULT_TABLESPACE,
            "pg_global" => GLOBAL_TABLESPACE,
            name => {
                return Err(SqlError::new(
                    "42704",
                    format!("tablespace \"{name}\" does not exist"),
                ))
            }
        },
    };
    Ok(match tablespace {
        DEFAULT_TABLESPACE => Value::BigInt(data_files_bytes(ctx)?),
        GLOBAL_TABLESPACE => Value::BigInt(0),
        _ => Value::Null,
    })
}

/// Bytes of every space's file.
fn data_files_bytes(ctx: &mut ExecCtx) -> Result<i64> {
    let engine = ctx.engine()?.clone();
    Ok(engine
        .store()
        .spaces()
        .iter()
        .map(|space| space_bytes(&engine, space.id()))
        .sum())
}

/// `pg_tablespace_location(oid)`: empty, as PostgreSQL's for its two built-in tablespaces (the
/// data directory holds every file).
pub(super) fn tablespace_location(_: &[Value], _: &mut ExecCtx) -> Result<Value> {
    Ok(Value::Text(String::new()))
}

/// `pg_size_pretty(bigint | numeric)`: PostgreSQL 15's units and rounding (half away from zero,
/// a unit used up to 20 x 1024 - 1 of it).
pub(super) fn size_pretty(args: &[Value], _: &mut ExecCtx) -> Result<Value> {
    let size = match &args[0] {
        Value::Numeric(n) => n
            .trunc()
            .to_i64()
            .ok_or_else(|| SqlError::new("22003", "bigint out of range"))?,
        other => super::arrays::int_arg(other).ok_or_else(|| {
            SqlError::undefined_function("function pg_size_pretty does not exist for this type")
        })?,
    };
    Ok(Value::Text(pretty(size)))
}

/// The units of `pg_size_pretty`: name, the limit below which it is used, whether it is
/// rounded by halves, and its power of two.
const UNITS: [(&str, i64, bool, u32); 6] = [
    ("bytes", 10 * 1024, false, 0),
    ("kB", 20 * 1024 - 1, true, 10),
    ("MB", 20 * 1024 - 1, true, 20),
    ("GB", 20 * 1024 - 1, true, 30),
    ("TB", 20 * 1024 - 1, true, 40),
    ("PB", 20 * 1024 - 1, true, 50),
];

fn pretty(mut size: i64) -> String {
    let half_rounded = |x: i64| (x + if x < 0 { -1 } else { 1 }) / 2;
    for (i, &(name, limit, rounded, bits)) in UNITS.iter().enumerate() {
        let Some(&(_, _, next_rounded, next_bits)) = UNITS.get(i + 1) else {
            return format!("{} {name}", if rounded { half_rounded(size) } else { size });
        };
        if size.abs() < limit {
            return format!("{} {name}", if rounded { half_rounded(size) } else { size });
        }
        let shift = next_bits - bits - u32::from(next_rounded) + u32::from(rounded);
        size /= 1i64 << shift;
    }
    unreachable!("the last unit always answers")
}

#[cfg(test)]
mod tests {
    use super::pretty;

    /// Values checked against PostgreSQL 15's `pg_size_pretty`.
    #[test]
    fn sizes_print_as_postgresql_prints_them() {
        for (size, expected) in [
            (0, "0 bytes"),
            (10239, "10239 bytes"),
            (10240, "10 kB"),
            (-10240, "-10 kB"),
            (1_000_000, "977 kB"),
            (20_970_000, "20 MB"),
            (20_971_520, "20 MB"),
            (123_456_789_012, "115 GB"),
            (-123_456_789_012, "-115 GB"),
            (1 << 50, "1024 TB"),
            (i64::MAX, "8192 PB"),
        ] {
            assert_eq!(pretty(size), expected, "{size}");
        }
    }
}
