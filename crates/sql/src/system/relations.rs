//! The `pg_catalog` views of relations: `pg_class`, `pg_attribute`, `pg_attrdef`, `pg_index`,
//! `pg_constraint`, and the `pg_tables` / `pg_indexes` views over them.
//!
//! Each is computed from [`super::model`]; the columns are those psql 15 and common drivers read,
//! with PostgreSQL's names and meanings.

use std::collections::HashSet;

use steady_types::{DataType, Value};

use super::model::{self, indexes, ConstraintInfo, IndexInfo, Relation};
use super::pg_type::{type_modifier, type_oid, DEFAULT_COLLATION};
use super::rows::{attnum, attnum_array, attnum_vector, flag, name, oid, Rows};
use super::{oids, SystemTable};
use crate::error::Result;
use crate::execution::constraints::{checks, foreign_keys};
use crate::execution::executor::ExecCtx;
use crate::execution::privileges::acl_value;

use DataType::{BigInt, Boolean, Integer, Real, SmallInt, Text, TextArray};

pub const VIEWS: &[SystemTable] = &[
    SystemTable {
        schema: "pg_catalog",
        name: "pg_class",
        columns: &[
            ("oid", BigInt),
            ("relname", Text),
            ("relnamespace", BigInt),
            ("reltype", BigInt),
            ("reloftype", BigInt),
            ("relowner", BigInt),
            ("relam", BigInt),
            ("relfilenode", BigInt),
            ("reltablespace", BigInt),
            ("relpages", Integer),
            ("reltuples", Real),
            ("relallvisible", Integer),
            ("reltoastrelid", BigInt),
            ("relhasindex", Boolean),
            ("relisshared", Boolean),
            ("relpersistence", Text),
            ("relkind", Text),
            ("relnatts", SmallInt),
            ("relchecks", SmallInt),
            ("relhasrules", Boolean),
            ("relhastriggers", Boolean),
            ("relhassubclass", Boolean),
            ("relrowsecurity", Boolean),
            ("relforcerowsecurity", Boolean),
            ("relispopulated", Boolean),
            ("relreplident", Text),
            ("relispartition", Boolean),
            ("relrewrite", BigInt),
            ("relacl", TextArray),
            ("reloptions", TextArray),
            ("relpartbound", Text),
            ("relfrozenxid", BigInt),
            ("relminmxid", BigInt),
        ],
        rows: pg_class,
    },
    SystemTable {
        schema: "pg_catalog",
        name: "pg_attribute",
        columns: &[
            ("attrelid", BigInt),
            ("attname", Text),
            ("atttypid", BigInt),
            ("attstattarget", Integer),
            ("attlen", SmallInt),
            ("attnum", SmallInt),
            ("attndims", Integer),
            ("atttypmod", Integer),
            ("attbyval", Boolean),
            ("attnotnull", Boolean),
            ("atthasdef", Boolean),
            ("atthasmissing", Boolean),
            ("attidentity", Text),
            ("attgenerated", Text),
            ("attisdropped", Boolean),
            ("attislocal", Boolean),
            ("attinhcount", Integer),
            ("attcollation", BigInt),
            ("attacl", Text),
            ("attoptions", TextArray),
            ("attstorage", Text),
            ("attcompression", Text),
            ("attalign", Text),
            ("attfdwoptions", TextArray),
            ("attmissingval", Text),
        ],
        rows: pg_attribute,
    },
    SystemTable {
        schema: "pg_catalog",
        name: "pg_sequence",
        columns: &[
            ("seqrelid", BigInt),
            ("seqtypid", BigInt),
            ("seqstart", BigInt),
            ("seqincrement", BigInt),
            ("seqmax", BigInt),
            ("seqmin", BigInt),
            ("seqcache", BigInt),
            ("seqcycle", Boolean),
        ],
        rows: pg_sequence,
    },
    SystemTable {
        schema: "pg_catalog",
        name: "pg_attrdef",
        columns: &[
            ("oid", BigInt),
            ("adrelid", BigInt),
            ("adnum", SmallInt),
            ("adbin", Text),
        ],
        rows: pg_attrdef,
    },
    SystemTable {
        schema: "pg_catalog",
        name: "pg_index",
        columns: &[
            ("indexrelid", BigInt),
            ("indrelid", BigInt),
            ("indnatts", SmallInt),
            ("indnkeyatts", SmallInt),
            ("indisunique", Boolean),
            ("indnullsnotdistinct", Boolean),
            ("indisprimary", Boolean),
            ("indisexclusion", Boolean),
            ("indimmediate", Boolean),
            ("indisclustered", Boolean),
            ("indisvalid", Boolean),
            ("indcheckxmin", Boolean),
            ("indisready", Boolean),
            ("indislive", Boolean),
            ("indisreplident", Boolean),
            ("indkey", Text),
            ("indcollation", Text),
            ("indclass", Text),
            ("indoption", Text),
            ("indexprs", Text),
            ("indpred", Text),
        ],
        rows: pg_index,
    },
    SystemTable {
        schema: "pg_catalog",
        name: "pg_constraint",
        columns: &[
            ("oid", BigInt),
            ("conname", Text),
            ("connamespace", BigInt),
            ("contype", Text),
            ("condeferrable", Boolean),
            ("condeferred", Boolean),
            ("convalidated", Boolean),
            ("conrelid", BigInt),
            ("contypid", BigInt),
            ("conindid", BigInt),
            ("conparentid", BigInt),
            ("confrelid", BigInt),
            ("confupdtype", Text),
            ("confdeltype", Text),
            ("confmatchtype", Text),
            ("conislocal", Boolean),
            ("coninhcount", Integer),
            ("connoinherit", Boolean),
            ("conkey", Text),
            ("confkey", Text),
            ("conbin", Text),
        ],
        rows: pg_constraint,
    },
    SystemTable {
        schema: "pg_catalog",
        name: "pg_depend",
        columns: &[
            ("classid", BigInt),
            ("objid", BigInt),
            ("objsubid", Integer),
            ("refclassid", BigInt),
            ("refobjid", BigInt),
            ("refobjsubid", Integer),
            ("deptype", Text),
        ],
        rows: pg_depend,
    },
    SystemTable {
        schema: "pg_catalog",
        name: "pg_tables",
        columns: &[
            ("schemaname", Text),
            ("tablename", Text),
            ("tableowner", Text),
            ("tablespace", Text),
            ("hasindexes", Boolean),
            ("hasrules", Boolean),
            ("hastriggers", Boolean),
            ("rowsecurity", Boolean),
        ],
        rows: pg_tables,
    },
    SystemTable {
        schema: "pg_catalog",
        name: "pg_indexes",
        columns: &[
            ("schemaname", Text),
            ("tablename", Text),
            ("indexname", Text),
            ("tablespace", Text),
            ("indexdef", Text),
        ],
        rows: pg_indexes,
    },
];

/// The names of the tables some foreign key refers to or starts from (`relhastriggers`).
fn tables_with_foreign_keys(ctx: &mut ExecCtx) -> Result<HashSet<String>> {
    let mut names = HashSet::new();
    for table in ctx.engine()?.tables() {
        for fk in foreign_keys(&table) {
            names.insert(table.name.clone());
            names.insert(fk.table);
        }
    }
    Ok(names)
}

fn pg_class(ctx: &mut ExecCtx) -> Result<Rows> {
    let engine = ctx.engine()?.clone();
    let triggers = tables_with_foreign_keys(ctx)?;
    let owner = ctx.bootstrap_name();
    model::relations(&engine)?
        .iter()
        .map(|r| {
            let pages = match r {
                Relation::Table(t) => engine
                    .store()
                    .space(t.space)
                    .map_or(0, |s| s.size_in_pages()),
                _ => 0,
            };
            let acl = match r {
                Relation::Table(t) => acl_value(&engine.grants(t.id)?, &owner),
                Relation::UserView(v) => acl_value(&engine.grants(v.id)?, &owner),
                _ => Value::Null,
            };
            let mut row = class_row(r, &triggers, pages);
            row[RELACL] = acl;
            Ok(row)
        })
        .collect()
}

/// The position of `relacl` in a `pg_class` row.
const RELACL: usize = 28;

/// The `pg_class` row of `relation`, which has `pages` pages on disk.
fn class_row(relation: &Relation, triggers: &HashSet<String>, pages: u32) -> Vec<Value> {
    let (am, has_index, has_triggers, replident) = match relation {
        Relation::Table(t) => (
            oids::HEAP,
            !indexes(t).is_empty(),
            triggers.contains(&t.name),
            "d",
        ),
        Relation::Index(..) => (oids::BTREE, false, false, "n"),
        Relation::View(..) | Relation::UserView(_) | Relation::Sequence(..) => {
            (0, false, false, "n")
        }
    };
    let filenode = if am == 0 { 0 } else { relation.oid() };
    vec![
        oid(relation.oid()),
        name(relation.name()),
        oid(relation.namespace()),
        oid(0),
        oid(0),
        oid(oids::SUPERUSER),
        oid(am),
        oid(filenode),
        oid(0),
        Value::Integer(i32::try_from(pages).unwrap_or(i32::MAX)),
        Value::Real(-1.0),
        Value::Integer(0),
        oid(0),
        flag(has_index),
        flag(false),
        name("p"),
        name(relation.kind()),
        Value::SmallInt(relation.attributes().len() as i16),
        Value::SmallInt(match relation {
            Relation::Table(t) => checks(t).len() as i16,
            _ => 0,
        }),
        flag(false),
        flag(has_triggers),
        flag(false),
        flag(false),
        flag(false),
        flag(match relation {
            Relation::Table(t) => t.materialized.as_ref().is_none_or(|m| m.populated),
            _ => true,
        }),
        name(replident),
        flag(false),
        oid(0),
        Value::Null,
        reloptions(relation),
        Value::Null,
        Value::BigInt(0),
        Value::BigInt(0),
    ]
}

/// `pg_class.reloptions`: a view's check option (what pg_dump reads it from), else NULL.
fn reloptions(relation: &Relation) -> Value {
    match relation {
        Relation::UserView(view) => match view.check_option {
            Some(steady_engine::view::CheckOption::Local) => {
                Value::Text("{check_option=local}".to_owned())
            }
            Some(steady_engine::view::CheckOption::Cascaded) => {
                Value::Text("{check_option=cascaded}".to_owned())
            }
            None => Value::Null,
        },
        _ => Value::Null,
    }
}

/// The dependencies clients order and group objects by (pg_dump creates what an object needs
/// before it): a view on the relations its query reads ('n'), a column default on the sequences
/// it calls `nextval` of ('n'), and a serial column's sequence on its column ('a'; 'i' for an
/// identity column's), so that it goes with its table.
fn pg_depend(ctx: &mut ExecCtx) -> Result<Rows> {
    let engine = ctx.engine()?.clone();
    let relations = model::relations(&engine)?;
    let oid_of = |name: &str| {
        relations
            .iter()
            .find(|r| r.namespace() == oids::PUBLIC && r.name() == name)
            .map(Relation::oid)
    };
    let class = super::catalog_oid("pg_class");
    let attrdef = super::catalog_oid("pg_attrdef");
    let row = |classid, objid, refobjid, refobjsubid: i32, deptype| {
        vec![
            oid(classid),
            oid(objid),
            Value::Integer(0),
            oid(class),
            oid(refobjid),
            Value::Integer(refobjsubid),
            name(deptype),
        ]
    };
    let mut rows = Vec::new();
    for relation in &relations {
        let Relation::UserView(view) = relation else {
            continue;
        };
        for read in view.depends_on.iter().filter_map(|n| oid_of(n)) {
            rows.push(row(class, relation.oid(), read, 0, "n"));
        }
    }
    for table in engine.tables() {
        for (position, column) in table.columns.iter().enumerate() {
            let attnum = position as i32 + 1;
            let owned = crate::execution::sequences::owned_sequence(&table.name, &column.name);
            let default = column.default.as_deref().unwrap_or_default();
            if let Some(sequence) = oid_of(&owned) {
                if column.identity.is_some() {
                    rows.push(row(class, sequence, oids::relation(table.id), attnum, "i"));
                } else if default == format!("nextval('{owned}')") {
                    rows.push(row(class, sequence, oids::relation(table.id), attnum, "a"));
                }
            }
            let default_oid = oids::default_value(table.id, position + 1);
            for called in nextval_arguments(default).filter_map(|n| oid_of(&n)) {
                rows.push(row(attrdef, default_oid, called, 0, "n"));
            }
        }
    }
    Ok(rows)
}

/// The sequences a default expression calls `nextval` of.
fn nextval_arguments(default: &str) -> impl Iterator<Item = String> + '_ {
    default
        .match_indices("nextval('")
        .filter_map(move |(at, call)| {
            let rest = &default[at + call.len()..];
            let argument = &rest[..rest.find('\'')?];
            Some(crate::execution::sequences::relation_name(argument))
        })
}

fn pg_attribute(ctx: &mut ExecCtx) -> Result<Rows> {
    let engine = ctx.engine()?.clone();
    let mut rows = Vec::new();
    for relation in model::relations(&engine)? {
        for (position, attribute) in relation.attributes().iter().enumerate() {
            rows.push(attribute_row(relation.oid(), position, attribute));
        }
    }
    Ok(rows)
}

fn attribute_row(relid: i64, position: usize, attribute: &model::Attribute) -> Vec<Value> {
    let (type_id, typmod, collation) = match &attribute.ty {
        Some(ty) => {
            let type_id = type_oid(ty);
            let collatable = super::pg_type::lookup(type_id)
                .is_some_and(|(t, _)| t.collation == DEFAULT_COLLATION);
            let collation = if collatable { DEFAULT_COLLATION } else { 0 };
            (type_id, type_modifier(ty), collation)
        }
        None => (0, -1, 0),
    };
    let (len, by_value) = match (super::pg_type::lookup(type_id), &attribute.ty) {
        (Some((t, false)), _) => (t.len, t.by_value),
        (_, Some(DataType::Enum(_))) => (4, true),
        _ => (-1, false),
    };
    vec![
        oid(relid),
        name(&attribute.name),
        oid(type_id),
        Value::Integer(-1),
        Value::SmallInt(len),
        attnum(position),
        Value::Integer(0),
        Value::Integer(typmod),
        flag(by_value),
        flag(attribute.not_null),
        flag(attribute.default.is_some()),
        flag(false),
        name(match attribute.identity {
            Some(steady_engine::catalog::Identity::Always) => "a",
            Some(steady_engine::catalog::Identity::ByDefault) => "d",
            None => "",
        }),
        name(if attribute.generated { "s" } else { "" }),
        flag(attribute.ty.is_none()),
        flag(true),
        Value::Integer(0),
        oid(collation),
        Value::Null,
        Value::Null,
        name(if len > 0 { "p" } else { "x" }),
        name(""),
        name(match len {
            8 => "d",
            2 => "s",
            1 => "c",
            _ => "i",
        }),
        Value::Null,
        Value::Null,
    ]
}

/// Every sequence counts up by 1 from its start to its type's maximum, without a cache or
/// cycling (the options CREATE SEQUENCE accepts).
fn pg_sequence(ctx: &mut ExecCtx) -> Result<Rows> {
    let engine = ctx.engine()?.clone();
    let mut rows = Vec::new();
    for (n, name) in engine.sequences()?.into_iter().enumerate() {
        let width = engine.sequence_width(&name)?;
        let ty = match width {
            2 => SmallInt,
            4 => Integer,
            _ => BigInt,
        };
        rows.push(vec![
            oid(oids::sequence(n)),
            oid(i64::from(type_oid(&ty))),
            Value::BigInt(engine.sequence_start(&name)?),
            Value::BigInt(1),
            Value::BigInt(steady_engine::sequence::sequence_max(width)),
            Value::BigInt(1),
            Value::BigInt(1),
            Value::Boolean(false),
        ]);
    }
    Ok(rows)
}

fn pg_attrdef(ctx: &mut ExecCtx) -> Result<Rows> {
    let mut rows = Vec::new();
    for table in ctx.engine()?.tables() {
        let relation = Relation::Table(table.clone());
        for (position, attribute) in relation.attributes().into_iter().enumerate() {
            if let Some(default) = attribute.default {
                rows.push(vec![
                    oid(oids::default_value(table.id, position + 1)),
                    oid(relation.oid()),
                    attnum(position),
                    Value::Text(default),
                ]);
            }
        }
    }
    Ok(rows)
}

fn pg_index(ctx: &mut ExecCtx) -> Result<Rows> {
    let mut rows = Vec::new();
    for table in ctx.engine()?.tables() {
        for index in indexes(&table) {
            rows.push(index_row(oids::relation(table.id), &index));
        }
    }
    Ok(rows)
}

fn index_row(table_oid: i64, index: &IndexInfo) -> Vec<Value> {
    let all = index.all_columns();
    vec![
        oid(index.oid),
        oid(table_oid),
        Value::SmallInt(all.len() as i16),
        Value::SmallInt(index.columns.len() as i16),
        flag(index.unique),
        flag(false),
        flag(index.primary),
        flag(false),
        flag(true),
        flag(false),
        flag(true),
        flag(false),
        flag(true),
        flag(true),
        flag(false),
        attnum_vector(&all),
        // Collations, operator classes (pg_opclass lists no non-default one) and options
        // (ascending, NULLS LAST) of the key columns: every one the default.
        zero_vector(index.columns.len()),
        zero_vector(index.columns.len()),
        zero_vector(index.columns.len()),
        Value::Null,
        Value::Null,
    ]
}

/// An `oidvector` / `int2vector` of `n` zeros.
fn zero_vector(n: usize) -> Value {
    Value::Text(vec!["0"; n].join(" "))
}

fn pg_constraint(ctx: &mut ExecCtx) -> Result<Rows> {
    let engine = ctx.engine()?.clone();
    Ok(model::all_constraints(&engine)
        .iter()
        .map(constraint_row)
        .collect())
}

fn constraint_row(constraint: &ConstraintInfo) -> Vec<Value> {
    let foreign = constraint.kind == "f";
    let (parent, parent_columns) = match &constraint.parent {
        Some((table, columns)) => (oids::relation(table.id), attnum_array(columns)),
        None => (0, Value::Null),
    };
    let (update_action, delete_action) = match foreign {
        true => (
            if constraint.actions.update_restrict {
                "r"
            } else {
                "a"
            },
            constraint.actions.on_delete.code(),
        ),
        false => (" ", " "),
    };
    vec![
        oid(constraint.oid),
        name(&constraint.name),
        oid(oids::PUBLIC),
        name(constraint.kind),
        flag(constraint.actions.deferral.deferrable()),
        flag(constraint.actions.deferral.initially_deferred()),
        flag(true),
        oid(oids::relation(constraint.table.id)),
        oid(0),
        oid(constraint.index),
        oid(0),
        oid(parent),
        name(update_action),
        name(delete_action),
        name(if foreign { "s" } else { " " }),
        flag(true),
        Value::Integer(0),
        flag(true),
        attnum_array(&constraint.columns),
        parent_columns,
        Value::Null,
    ]
}

fn pg_tables(ctx: &mut ExecCtx) -> Result<Rows> {
    let owner = ctx.bootstrap_name();
    let triggers = tables_with_foreign_keys(ctx)?;
    Ok(ctx
        .engine()?
        .tables()
        .iter()
        .filter(|t| t.materialized.is_none())
        .map(|t| {
            vec![
                name("public"),
                name(&t.name),
                name(&owner),
                Value::Null,
                flag(!indexes(t).is_empty()),
                flag(false),
                flag(triggers.contains(&t.name)),
                flag(false),
            ]
        })
        .collect())
}

fn pg_indexes(ctx: &mut ExecCtx) -> Result<Rows> {
    let mut rows = Vec::new();
    for table in ctx.engine()?.tables() {
        for index in indexes(&table) {
            rows.push(vec![
                name("public"),
                name(&table.name),
                name(&index.name),
                Value::Null,
                Value::Text(index_definition(&table, &index)),
            ]);
        }
    }
    Ok(rows)
}

/// `pg_get_indexdef`: `CREATE UNIQUE INDEX accounts_pkey ON public.accounts USING btree (id)`.
pub fn index_definition(table: &steady_engine::catalog::TableDef, index: &IndexInfo) -> String {
    let predicate = index_predicate(table, &index.columns).map(|p| format!(" WHERE ({p})"));
    let include = (!index.include.is_empty())
        .then(|| format!(" INCLUDE ({})", column_list(table, &index.include)));
    format!(
        "CREATE {}INDEX {} ON public.{} USING btree ({}){}{}",
        if index.unique { "UNIQUE " } else { "" },
        model::quote_ident(&index.name),
        model::quote_ident(&table.name),
        column_list(table, &index.columns),
        include.unwrap_or_default(),
        predicate.unwrap_or_default()
    )
}

/// A partial index's predicate, from the hidden column of its first element (`positions`).
pub fn index_predicate(
    table: &steady_engine::catalog::TableDef,
    positions: &[usize],
) -> Option<String> {
    let first = &table.columns[*positions.first()?].name;
    crate::execution::constraints::column_partial(first).map(|(_, p)| p.to_owned())
}

/// `a, b`: the names of columns at `positions`, quoted where needed; an expression index's
/// column as its expression (in parentheses unless a function call or already in parentheses,
/// as PostgreSQL writes it), a partial index's as its element.
pub fn column_list(table: &steady_engine::catalog::TableDef, positions: &[usize]) -> String {
    let names: Vec<String> = positions
        .iter()
        .map(|&p| {
            let name = &table.columns[p].name;
            let partial = crate::execution::constraints::column_partial(name);
            let element = partial.map(|(element, _)| element);
            match crate::execution::constraints::column_expression(name).or(element) {
                Some(expression) if stands_alone(expression) => expression.to_owned(),
                Some(expression) if partial.is_some() && !expression.contains(' ') => {
                    expression.to_owned()
                }
                Some(expression) => format!("({expression})"),
                None => model::quote_ident(name),
            }
        })
        .collect();
    names.join(", ")
}

/// Whether an expression's text is a function call or in parentheses as a whole: what an index
/// definition writes without parentheses of its own.
fn stands_alone(expression: &str) -> bool {
    let Some(open) = expression.find('(') else {
        return false;
    };
    let function = &expression[..open];
    let named = function
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.');
    let mut depth = 0;
    for (at, c) in expression.char_indices().skip(open) {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            _ => {}
        }
        if depth == 0 {
            return named && at == expression.len() - 1;
        }
    }
    false
}

/// `pg_get_constraintdef`: `PRIMARY KEY (id)`, `UNIQUE (x)`, `FOREIGN KEY (a) REFERENCES p(id)`.
pub fn constraint_definition(constraint: &ConstraintInfo) -> String {
    if let Some(check) = &constraint.check {
        return format!("CHECK ({check})");
    }
    let columns = column_list(&constraint.table, &constraint.columns);
    match (&constraint.parent, constraint.kind) {
        (Some((parent, parent_columns)), _) => format!(
            "FOREIGN KEY ({columns}) REFERENCES {}({}){}",
            model::quote_ident(&parent.name),
            column_list(parent, parent_columns),
            constraint.actions.clauses()
        ),
        (None, "p") => format!("PRIMARY KEY ({columns})"),
        (None, _) => format!("UNIQUE ({columns})"),
    }
}
