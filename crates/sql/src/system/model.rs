//! The relations, indexes and constraints of the database as the catalog views present them,
//! derived from the engine's table definitions each time a view or function needs them.
//!
//! Relations are the user tables (relkind `r`), their indexes (`i`) and the system views (`v`). A
//! table's primary key is its clustered index, but it is shown as PostgreSQL shows it: an index
//! `<table>_pkey` of its own, backing a `p` constraint. Every unique index backs a `u` constraint
//! (the engine does not tell `UNIQUE` constraints from unique indexes). Column positions include
//! dropped columns, so attribute number = position + 1 everywhere.

use std::sync::Arc;

use steady_engine::catalog::TableDef;
use steady_engine::engine::Engine;
use steady_engine::view::ViewDef;
use steady_types::DataType;

use super::{oids, SystemTable};
use crate::error::Result;
use crate::execution::constraints::{checks, foreign_keys, is_hidden, Actions};

/// An index as `pg_index` shows it.
pub struct IndexInfo {
    pub oid: i64,
    pub name: String,
    pub columns: Vec<usize>,
    /// The columns of `INCLUDE (...)`, after the key columns.
    pub include: Vec<usize>,
    pub unique: bool,
    pub primary: bool,
    /// The engine's id of the index: the table's own for the primary key.
    pub engine_id: u64,
}

/// The primary key (if any) and the secondary indexes of a table.
pub fn indexes(table: &TableDef) -> Vec<IndexInfo> {
    let primary = (!table.primary_key.is_empty()).then(|| IndexInfo {
        oid: oids::primary_key_index(table.id),
        name: format!("{}_pkey", table.name),
        columns: table.primary_key.clone(),
        include: Vec::new(),
        unique: true,
        primary: true,
        engine_id: table.id,
    });
    let secondary = table.indexes.iter().map(|i| IndexInfo {
        oid: oids::relation(i.id),
        name: i.name.clone(),
        columns: i.columns.clone(),
        include: i.include.clone(),
        unique: i.unique,
        primary: false,
        engine_id: i.id,
    });
    primary.into_iter().chain(secondary).collect()
}

impl IndexInfo {
    /// Every column of the index: the key columns, then the included ones (`pg_index.indkey`).
    pub fn all_columns(&self) -> Vec<usize> {
        [self.columns.as_slice(), self.include.as_slice()].concat()
    }
}

/// A constraint as `pg_constraint` shows it.
pub struct ConstraintInfo {
    pub oid: i64,
    pub name: String,
    /// `p`, `u`, `f` or `c`.
    pub kind: &'static str,
    pub table: Arc<TableDef>,
    pub columns: Vec<usize>,
    /// The unique index behind it (for a foreign key: the referenced table's).
    pub index: i64,
    /// The referenced table and columns of a foreign key.
    pub parent: Option<(Arc<TableDef>, Vec<usize>)>,
    /// A CHECK constraint's expression.
    pub check: Option<String>,
    /// A foreign key's actions and deferral (the defaults for the other kinds).
    pub actions: Actions,
}

/// Where CHECK constraints' numbers start in a table's constraint oids (after its foreign keys').
const CHECK_OIDS_FROM: usize = 500;

/// The key constraints (from the unique indexes), then the foreign keys, then the CHECK
/// constraints of `table`.
pub fn constraints(engine: &Engine, table: &Arc<TableDef>) -> Vec<ConstraintInfo> {
    let keys = indexes(table)
        .into_iter()
        .filter(|i| i.unique)
        .map(|i| ConstraintInfo {
            oid: oids::key_constraint(i.engine_id),
            name: i.name,
            kind: if i.primary { "p" } else { "u" },
            table: table.clone(),
            columns: i.columns,
            index: i.oid,
            parent: None,
            check: None,
            actions: Actions::default(),
        });
    let foreign = foreign_keys(table).into_iter().enumerate().map(|(n, fk)| {
        let parent = engine.table(&fk.table);
        let index = parent.as_deref().map_or(0, |p| {
            indexes(p)
                .into_iter()
                .find(|i| i.unique && i.columns == fk.ref_columns)
                .map_or(0, |i| i.oid)
        });
        ConstraintInfo {
            oid: oids::foreign_key(table.id, n),
            name: fk.name,
            kind: "f",
            table: table.clone(),
            columns: fk.columns,
            index,
            parent: parent.map(|p| (p, fk.ref_columns)),
            check: None,
            actions: fk.actions,
        }
    });
    let checked = checks(table)
        .into_iter()
        .enumerate()
        .map(|(n, check)| ConstraintInfo {
            oid: oids::foreign_key(table.id, CHECK_OIDS_FROM + n),
            name: check.name,
            kind: "c",
            table: table.clone(),
            columns: Vec::new(),
            index: 0,
            parent: None,
            check: Some(check.expression),
            actions: Actions::default(),
        });
    keys.chain(foreign).chain(checked).collect()
}

/// Every constraint of every table.
pub fn all_constraints(engine: &Engine) -> Vec<ConstraintInfo> {
    engine
        .tables()
        .iter()
        .flat_map(|t| constraints(engine, t))
        .collect()
}

/// One column of a relation; `ty` is `None` for a dropped column.
pub struct Attribute {
    pub name: String,
    pub ty: Option<DataType>,
    pub not_null: bool,
    /// The default expression (None for an identity column: PostgreSQL shows none), or the
    /// generation expression of a generated column (`pg_attrdef` holds both).
    pub default: Option<String>,
    pub identity: Option<steady_engine::catalog::Identity>,
    /// A generated column (`attgenerated = 's'`): `default` is its expression.
    pub generated: bool,
}

/// A relation of `pg_class`.
pub enum Relation {
    Table(Arc<TableDef>),
    Index(Arc<TableDef>, IndexInfo),
    /// A system view: its position among them, and it.
    View(usize, &'static SystemTable),
    /// A view of the database.
    UserView(ViewDef),
    /// A sequence: its position among them (by name), and its name.
    Sequence(usize, String),
}

impl Relation {
    pub fn oid(&self) -> i64 {
        match self {
            Relation::Table(t) => oids::relation(t.id),
            Relation::Index(_, i) => i.oid,
            Relation::View(n, v) => oids::view(*n, v.name),
            Relation::UserView(v) => oids::relation(v.id),
            Relation::Sequence(n, _) => oids::sequence(*n),
        }
    }

    pub fn name(&self) -> &str {
        match self {
            Relation::Table(t) => &t.name,
            Relation::Index(_, i) => &i.name,
            Relation::View(_, v) => v.name,
            Relation::UserView(v) => &v.name,
            Relation::Sequence(_, name) => name,
        }
    }

    pub fn namespace(&self) -> i64 {
        match self {
            Relation::View(_, v) => oids::namespace_oid(v.schema).unwrap_or(oids::PUBLIC),
            _ => oids::PUBLIC,
        }
    }

    /// `relkind`.
    pub fn kind(&self) -> &'static str {
        match self {
            Relation::Table(t) if t.materialized.is_some() => "m",
            Relation::Table(_) => "r",
            Relation::Index(..) => "i",
            Relation::View(..) | Relation::UserView(_) => "v",
            Relation::Sequence(..) => "S",
        }
    }

    /// The columns, in attribute-number order.
    pub fn attributes(&self) -> Vec<Attribute> {
        match self {
            Relation::Table(t) => t.columns.iter().map(table_attribute).collect(),
            Relation::Index(t, i) => i
                .columns
                .iter()
                .map(|&c| plain_attribute(&t.columns[c].name, t.columns[c].data_type))
                .collect(),
            Relation::View(_, v) => v
                .columns
                .iter()
                .map(|(name, ty)| plain_attribute(name, *ty))
                .collect(),
            Relation::UserView(v) => v
                .columns
                .iter()
                .map(|(name, ty)| plain_attribute(name, *ty))
                .collect(),
            Relation::Sequence(..) => [
                ("last_value", DataType::BigInt),
                ("log_cnt", DataType::BigInt),
                ("is_called", DataType::Boolean),
            ]
            .iter()
            .map(|(name, ty)| plain_attribute(name, *ty))
            .collect(),
        }
    }
}

fn table_attribute(column: &steady_engine::catalog::ColumnDef) -> Attribute {
    let dropped = is_hidden(&column.name);
    Attribute {
        name: column.name.clone(),
        ty: (!dropped).then_some(column.data_type),
        not_null: !dropped && !column.nullable,
        default: column
            .generated
            .clone()
            .or_else(|| {
                column
                    .default
                    .as_deref()
                    .filter(|_| column.identity.is_none())
                    .map(|d| shown_default(d, column.data_type))
            })
            .filter(|_| !dropped),
        identity: column.identity,
        generated: column.generated.is_some(),
    }
}

/// A default as PostgreSQL's catalog shows it: a sequence's `nextval('s')` (what serial columns
/// get) with its argument's type, `nextval('s'::regclass)`; a quoted unsigned integer on an
/// integer column as the number (`DEFAULT '0'` is `0`, PostgreSQL's folded constant); any
/// other as written.
fn shown_default(default: &str, ty: DataType) -> String {
    let integer = default
        .strip_prefix('\'')
        .and_then(|rest| rest.strip_suffix('\''))
        .filter(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()));
    if let (Some(number), DataType::SmallInt | DataType::Integer | DataType::BigInt) = (integer, ty)
    {
        return number.to_owned();
    }
    let sequence = default
        .strip_prefix("nextval('")
        .and_then(|rest| rest.strip_suffix("')"))
        .filter(|name| !name.contains('\''));
    match sequence {
        Some(name) => format!("nextval('{name}'::regclass)"),
        None => default.to_owned(),
    }
}

fn plain_attribute(name: &str, ty: DataType) -> Attribute {
    Attribute {
        name: name.to_owned(),
        ty: Some(ty),
        not_null: false,
        default: None,
        identity: None,
        generated: false,
    }
}

/// Every relation: tables, each followed by its indexes, then the views, then the system views.
pub fn relations(engine: &Engine) -> Result<Vec<Relation>> {
    let mut relations = Vec::new();
    for table in engine.tables() {
        relations.push(Relation::Table(table.clone()));
        for index in indexes(&table) {
            relations.push(Relation::Index(table.clone(), index));
        }
    }
    relations.extend(engine.views()?.into_iter().map(Relation::UserView));
    let sequences = engine.sequences()?.into_iter().enumerate();
    relations.extend(sequences.map(|(n, name)| Relation::Sequence(n, name)));
    relations.extend(super::all().enumerate().map(|(n, v)| Relation::View(n, v)));
    Ok(relations)
}

/// The relation with oid `oid`.
pub fn relation(engine: &Engine, oid: i64) -> Result<Option<Relation>> {
    Ok(relations(engine)?.into_iter().find(|r| r.oid() == oid))
}

/// The oid of the relation a possibly qualified name (`accounts`, `public."Accounts"`) names;
/// unqualified names are looked up in `pg_catalog`, then `public`.
pub fn relation_by_name(engine: &Engine, text: &str) -> Result<Option<i64>> {
    let parts = split_qualified(text);
    let (schema, name) = match parts.as_slice() {
        [name] => (None, name.as_str()),
        [schema, name] => (Some(schema.as_str()), name.as_str()),
        _ => return Ok(None),
    };
    let search = [oids::PG_CATALOG, oids::PUBLIC];
    let namespaces: Vec<i64> = match schema {
        Some(s) => oids::namespace_oid(s).into_iter().collect(),
        None => search.to_vec(),
    };
    let relations = relations(engine)?;
    Ok(namespaces.iter().find_map(|ns| {
        relations
            .iter()
            .find(|r| r.namespace() == *ns && r.name() == name)
            .map(Relation::oid)
    }))
}

/// The parts of a dotted name, unquoted (`"A"` keeps its case, `A` is lower-cased).
pub fn split_qualified(text: &str) -> Vec<String> {
    let mut parts = vec![String::new()];
    let mut quoted = false;
    let mut chars = text.trim().chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                chars.next();
                parts.last_mut().expect("one part").push('"');
            }
            '"' => quoted = !quoted,
            '.' if !quoted => parts.push(String::new()),
            c if quoted => parts.last_mut().expect("one part").push(c),
            c => parts.last_mut().expect("one part").extend(c.to_lowercase()),
        }
    }
    parts
}

pub use crate::types::quote_ident;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qualified_names_split_and_unquote() {
        assert_eq!(split_qualified("accounts"), vec!["accounts"]);
        assert_eq!(
            split_qualified("Public.Accounts"),
            vec!["public", "accounts"]
        );
        assert_eq!(split_qualified("\"My.T\"\"x\""), vec!["My.T\"x"]);
    }

    #[test]
    fn identifiers_are_quoted_when_needed() {
        assert_eq!(quote_ident("owner_1"), "owner_1");
        assert_eq!(quote_ident("Owner"), "\"Owner\"");
        assert_eq!(quote_ident("a b"), "\"a b\"");
    }
}
