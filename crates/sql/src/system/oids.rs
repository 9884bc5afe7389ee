//! The object ids the catalog views give everything that is not a type (types: [`super::pg_type`]).
//!
//! Oids are derived, never stored, so they are stable as long as the schema is:
//!
//! ```text
//!   11, 99, 2200, 13000       namespaces pg_catalog, pg_toast, public, information_schema
//!   826 .. 6237               the system views that are PostgreSQL 15 catalogs: its oids
//!   12000 + n                 the other system views (the n-th in registry order)
//!   16384 + id                a table (id = its clustered index) or a secondary index
//!   16384 + 1_000_000 + id    table id's primary key, shown as the index `<table>_pkey`
//!   16384 + 2_000_000 + id    the PRIMARY KEY / UNIQUE constraint behind index (or table) id
//!   16384 + 3_000_000 + ...   foreign key n of table id: id * 1000 + n
//!   16384 + 4_000_000 + ...   the default of column attnum of table id: id * 1000 + attnum
//!   16384 + 5_000_000 + n     the n-th sequence (by name)
//!   16384 + id                a role (its id is from the relations' id space)
//! ```

pub const PG_CATALOG: i64 = 11;
pub const PG_TOAST: i64 = 99;
pub const PUBLIC: i64 = 2200;
pub const INFORMATION_SCHEMA: i64 = 13000;

/// The one role: the superuser every session runs as.
pub const SUPERUSER: i64 = 10;
/// PostgreSQL's built-in role that stands for a database's owner: schema `public`'s owner, as in
/// PostgreSQL 15 (pg_dump then leaves the schema's ownership alone).
pub const DATABASE_OWNER: i64 = 6171;
pub const DATABASE_OWNER_NAME: &str = "pg_database_owner";
/// Schema `public`'s description, PostgreSQL 15's.
pub const PUBLIC_DESCRIPTION: &str = "standard public schema";
/// The one database.
pub const DATABASE: i64 = 5;
pub const DEFAULT_TABLESPACE: i64 = 1663;
pub const GLOBAL_TABLESPACE: i64 = 1664;
/// Access methods.
pub const HEAP: i64 = 2;
pub const BTREE: i64 = 403;
/// PostgreSQL's `UTF8` encoding number.
pub const UTF8: i32 = 6;

/// A role of the catalog.
pub fn role(id: u64) -> i64 {
    FIRST_USER + id as i64
}

const FIRST_VIEW: i64 = 12000;
const FIRST_USER: i64 = 16384;
const PRIMARY_KEY_INDEXES: i64 = FIRST_USER + 1_000_000;
const KEY_CONSTRAINTS: i64 = FIRST_USER + 2_000_000;
const FOREIGN_KEYS: i64 = FIRST_USER + 3_000_000;
const DEFAULTS: i64 = FIRST_USER + 4_000_000;
const SEQUENCES: i64 = FIRST_USER + 5_000_000;

/// The namespaces, by oid.
pub const NAMESPACES: &[(i64, &str)] = &[
    (PG_CATALOG, "pg_catalog"),
    (PG_TOAST, "pg_toast"),
    (PUBLIC, "public"),
    (INFORMATION_SCHEMA, "information_schema"),
];

pub fn namespace_oid(name: &str) -> Option<i64> {
    NAMESPACES.iter().find(|(_, n)| *n == name).map(|(o, _)| *o)
}

/// The name of a user object (table, index, view, sequence) named by a DDL statement: unqualified
/// or in schema `public`, the only schema that holds them. Another schema is refused, never
/// ignored, so that no statement creates, changes or drops `public.x` when `other.x` was named:
/// 3F000 for a schema that does not exist, 0A000 for a system schema.
pub fn public_object_name(name: &sqlparser::ast::ObjectName) -> crate::error::Result<String> {
    match crate::types::object_name(name) {
        (None, name) => Ok(name),
        (Some(schema), name) if schema == "public" => Ok(name),
        (Some(schema), name) if namespace_oid(&schema).is_some() => {
            Err(crate::error::SqlError::unsupported(format!(
                "objects of your own in schema {schema} ({schema}.{name})"
            )))
        }
        (Some(schema), _) => Err(crate::types::missing_schema(&schema)),
    }
}

pub fn namespace_name(oid: i64) -> Option<&'static str> {
    NAMESPACES.iter().find(|(o, _)| *o == oid).map(|(_, n)| *n)
}

/// The n-th sequence, in name order.
pub fn sequence(n: usize) -> i64 {
    SEQUENCES + n as i64
}

/// The oid of system view `name`, the n-th: PostgreSQL 15's for its catalogs (clients such as
/// pg_dump compare `tableoid` and `classid` values with these numbers), else `12000 + n`.
pub fn view(n: usize, name: &str) -> i64 {
    PG_CATALOG_OIDS
        .iter()
        .find(|(catalog, _)| *catalog == name)
        .map_or(FIRST_VIEW + n as i64, |(_, oid)| *oid)
}

/// PostgreSQL 15's catalog tables (`pg_class.oid` where `relnamespace = 11 AND relkind = 'r'`).
const PG_CATALOG_OIDS: &[(&str, i64)] = &[
    ("pg_am", 2601),
    ("pg_amop", 2602),
    ("pg_amproc", 2603),
    ("pg_attrdef", 2604),
    ("pg_attribute", 1249),
    ("pg_auth_members", 1261),
    ("pg_authid", 1260),
    ("pg_cast", 2605),
    ("pg_class", 1259),
    ("pg_collation", 3456),
    ("pg_constraint", 2606),
    ("pg_conversion", 2607),
    ("pg_database", 1262),
    ("pg_db_role_setting", 2964),
    ("pg_default_acl", 826),
    ("pg_depend", 2608),
    ("pg_description", 2609),
    ("pg_enum", 3501),
    ("pg_event_trigger", 3466),
    ("pg_extension", 3079),
    ("pg_foreign_data_wrapper", 2328),
    ("pg_foreign_server", 1417),
    ("pg_foreign_table", 3118),
    ("pg_index", 2610),
    ("pg_inherits", 2611),
    ("pg_init_privs", 3394),
    ("pg_language", 2612),
    ("pg_largeobject_metadata", 2995),
    ("pg_namespace", 2615),
    ("pg_opclass", 2616),
    ("pg_operator", 2617),
    ("pg_opfamily", 2753),
    ("pg_partitioned_table", 3350),
    ("pg_policy", 3256),
    ("pg_proc", 1255),
    ("pg_publication", 6104),
    ("pg_publication_namespace", 6237),
    ("pg_publication_rel", 6106),
    ("pg_range", 3541),
    ("pg_rewrite", 2618),
    ("pg_sequence", 2224),
    ("pg_shseclabel", 3592),
    ("pg_statistic_ext", 3381),
    ("pg_subscription", 6100),
    ("pg_tablespace", 1213),
    ("pg_transform", 3576),
    ("pg_trigger", 2620),
    ("pg_ts_config", 3602),
    ("pg_ts_dict", 3600),
    ("pg_ts_parser", 3601),
    ("pg_ts_template", 3764),
    ("pg_type", 1247),
];

/// A table or secondary index, by engine index id.
pub fn relation(id: u64) -> i64 {
    FIRST_USER + id as i64
}

pub fn primary_key_index(table_id: u64) -> i64 {
    PRIMARY_KEY_INDEXES + table_id as i64
}

/// The constraint behind a unique index (for the primary key: the table's id).
pub fn key_constraint(index_id: u64) -> i64 {
    KEY_CONSTRAINTS + index_id as i64
}

pub fn foreign_key(table_id: u64, n: usize) -> i64 {
    FOREIGN_KEYS + table_id as i64 * 1000 + n as i64
}

pub fn default_value(table_id: u64, attnum: usize) -> i64 {
    DEFAULTS + table_id as i64 * 1000 + attnum as i64
}
