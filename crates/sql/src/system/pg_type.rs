//! The types clients see: PostgreSQL's type oids, type modifiers and `format_type` spellings for
//! the engine's [`DataType`]s, plus the catalog-only types (`oid`, `name`, `regclass`...).
//!
//! Oids are PostgreSQL's own, because drivers decode values by them. Every base type has an array
//! type (`_int4`, oid [`TypeInfo::array`]) whose element is the base type. A type modifier is
//! PostgreSQL's: `n + 4` for `character(n)` / `character varying(n)`, `((p << 16) | s) + 4` for
//! `numeric(p,s)`, -1 when the type has none.

use steady_types::{DataType, Value};

use super::rows::{name, oid, Rows};

/// One base type of `pg_type`.
pub struct TypeInfo {
    pub oid: u32,
    /// `typname`.
    pub name: &'static str,
    /// `format_type`'s spelling without a modifier.
    pub sql_name: &'static str,
    pub len: i16,
    pub by_value: bool,
    pub category: &'static str,
    pub array: u32,
    /// The default collation of values of this type (0: not collatable).
    pub collation: u32,
}

/// `pg_collation`'s `default` and `C`.
pub const DEFAULT_COLLATION: u32 = 100;
pub const C_COLLATION: u32 = 950;

const fn base(
    oid: u32,
    name: &'static str,
    sql_name: &'static str,
    len: i16,
    category: &'static str,
    array: u32,
) -> TypeInfo {
    TypeInfo {
        oid,
        name,
        sql_name,
        len,
        by_value: len > 0 && len <= 8,
        category,
        array,
        collation: 0,
    }
}

const fn collatable(mut info: TypeInfo, collation: u32) -> TypeInfo {
    info.collation = collation;
    info
}

pub const BPCHAR: u32 = 1042;
pub const VARCHAR: u32 = 1043;
pub const NUMERIC: u32 = 1700;
pub const TIMESTAMP: u32 = 1114;
pub const TIME: u32 = 1083;
pub const UUID: u32 = 2950;
pub const INTERVAL: u32 = 1186;
pub const JSON: u32 = 114;
pub const JSONB: u32 = 3802;
pub const TEXT_ARRAY: u32 = 1009;

pub static TYPES: &[TypeInfo] = &[
    base(16, "bool", "boolean", 1, "B", 1000),
    base(17, "bytea", "bytea", -1, "U", 1001),
    base(18, "char", "\"char\"", 1, "Z", 1002),
    collatable(base(19, "name", "name", 64, "S", 1003), C_COLLATION),
    base(20, "int8", "bigint", 8, "N", 1016),
    base(21, "int2", "smallint", 2, "N", 1005),
    base(22, "int2vector", "int2vector", -1, "A", 1006),
    base(23, "int4", "integer", 4, "N", 1007),
    base(24, "regproc", "regproc", 4, "N", 1008),
    collatable(base(25, "text", "text", -1, "S", 1009), DEFAULT_COLLATION),
    base(26, "oid", "oid", 4, "N", 1028),
    base(30, "oidvector", "oidvector", -1, "A", 1013),
    base(700, "float4", "real", 4, "N", 1021),
    base(701, "float8", "double precision", 8, "N", 1022),
    base(705, "unknown", "unknown", -2, "X", 0),
    collatable(
        base(BPCHAR, "bpchar", "character", -1, "S", 1014),
        DEFAULT_COLLATION,
    ),
    collatable(
        base(VARCHAR, "varchar", "character varying", -1, "S", 1015),
        DEFAULT_COLLATION,
    ),
    base(1082, "date", "date", 4, "D", 1182),
    base(
        TIMESTAMP,
        "timestamp",
        "timestamp without time zone",
        8,
        "D",
        1115,
    ),
    base(
        1184,
        "timestamptz",
        "timestamp with time zone",
        8,
        "D",
        1185,
    ),
    base(TIME, "time", "time without time zone", 8, "D", 1183),
    base(NUMERIC, "numeric", "numeric", -1, "N", 1231),
    base(2205, "regclass", "regclass", 4, "N", 2210),
    base(2206, "regtype", "regtype", 4, "N", 2211),
    base(UUID, "uuid", "uuid", 16, "U", 2951),
    base(INTERVAL, "interval", "interval", 16, "T", 1187),
    base(JSON, "json", "json", -1, "U", 199),
    base(JSONB, "jsonb", "jsonb", -1, "U", 3807),
    base(4089, "regnamespace", "regnamespace", 4, "N", 4090),
];

/// The type oid of an engine type.
pub fn type_oid(ty: &DataType) -> u32 {
    match ty {
        DataType::Boolean => 16,
        DataType::SmallInt => 21,
        DataType::Integer => 23,
        DataType::BigInt => 20,
        DataType::Real => 700,
        DataType::Double => 701,
        DataType::Numeric { .. } => NUMERIC,
        DataType::Char(_) => BPCHAR,
        DataType::Varchar(_) => VARCHAR,
        DataType::Text => 25,
        DataType::Bytea => 17,
        DataType::Date => 1082,
        DataType::Timestamp => TIMESTAMP,
        DataType::TimestampTz => 1184,
        DataType::Time => TIME,
        DataType::Uuid => UUID,
        DataType::Interval => INTERVAL,
        DataType::Json => JSON,
        DataType::Jsonb => JSONB,
        DataType::TextArray => TEXT_ARRAY,
        DataType::Enum(oid) => *oid,
        DataType::Array(element) => {
            let element = type_oid(&element.data_type());
            lookup(element).map_or(0, |(info, _)| info.array)
        }
    }
}

/// The type modifier (`atttypmod`) of an engine type.
pub fn type_modifier(ty: &DataType) -> i32 {
    match ty {
        DataType::Char(n) | DataType::Varchar(Some(n)) => *n as i32 + 4,
        DataType::Numeric {
            precision: Some(p),
            scale,
        } => ((*p as i32) << 16 | scale.unwrap_or(0) as i32) + 4,
        _ => -1,
    }
}

/// The base type with oid `oid`, or the element type and `true` when `oid` is an array type.
pub fn lookup(oid: u32) -> Option<(&'static TypeInfo, bool)> {
    TYPES.iter().find_map(|t| match oid {
        o if o == t.oid => Some((t, false)),
        o if o == t.array && o != 0 => Some((t, true)),
        _ => None,
    })
}

/// PostgreSQL's `format_type(oid, typmod)`: `None` is a NULL modifier (the bare type name).
pub fn format_type(type_oid: u32, typmod: Option<i32>) -> String {
    let Some((info, array)) = lookup(type_oid) else {
        return match steady_types::enums::enum_type(type_oid) {
            Some(enum_type) => enum_type.name.clone(),
            None => "???".to_owned(),
        };
    };
    let modifier = typmod.filter(|m| *m >= 0);
    let base = match (info.oid, modifier) {
        (BPCHAR, None) if typmod.is_some() => "bpchar".to_owned(),
        (BPCHAR | VARCHAR, Some(m)) => format!("{}({})", info.sql_name, m - 4),
        (NUMERIC, Some(m)) => format!("numeric({},{})", (m - 4) >> 16, (m - 4) & 0xffff),
        (TIMESTAMP, Some(p)) => format!("timestamp({p}) without time zone"),
        _ => info.sql_name.to_owned(),
    };
    if array {
        base + "[]"
    } else {
        base
    }
}

/// The oid of a type named as SQL or `pg_type` spells it (`integer`, `int4`, `varchar(20)`,
/// `int4[]`, `_int4`), if any.
pub fn type_by_name(text: &str) -> Option<u32> {
    let text = text.trim().to_lowercase();
    let text = text.strip_prefix("pg_catalog.").unwrap_or(&text);
    let (text, array) = match text.strip_suffix("[]") {
        Some(element) => (element, true),
        None => (text, false),
    };
    let bare = text.split('(').next().unwrap_or(text).trim();
    let (bare, array) = match bare.strip_prefix('_') {
        Some(element) if !array => (element, true),
        _ => (bare, array),
    };
    let alias = match bare {
        "int" => "int4",
        "decimal" => "numeric",
        "float" => "float8",
        "character" | "char" => "bpchar",
        "timestamp" | "timestamp without time zone" => "timestamp",
        other => other,
    };
    let info = TYPES
        .iter()
        .find(|t| t.name == alias || t.sql_name == alias)?;
    Some(if array { info.array } else { info.oid })
}

/// `pg_type`: every base type and its array type.
pub fn pg_type_rows() -> Rows {
    let mut rows = Vec::new();
    for t in TYPES {
        rows.push(type_row(t.oid, t.name.to_owned(), t, false));
        if t.array != 0 {
            rows.push(type_row(t.array, format!("_{}", t.name), t, true));
        }
    }
    rows
}

/// The `pg_type` row of enum type `t` (typtype `e`, category `E`, four bytes by value).
pub fn enum_type_row(t: &steady_types::enums::EnumType) -> Vec<Value> {
    let info = TypeInfo {
        oid: t.oid,
        name: "",
        sql_name: "",
        len: 4,
        by_value: true,
        category: "E",
        array: 0,
        collation: 0,
    };
    let mut row = type_row(t.oid, t.name.clone(), &info, false);
    row[2] = oid(super::oids::PUBLIC);
    row[6] = name("e");
    row
}

/// The `pg_type` row of `t`, or of its array type when `array_of`.
fn type_row(type_oid: u32, type_name: String, t: &TypeInfo, array_of: bool) -> Vec<Value> {
    let (len, by_value, category, elem, array) = if array_of {
        (-1, false, "A", t.oid, 0)
    } else {
        (t.len, t.by_value, t.category, 0, t.array)
    };
    vec![
        oid(type_oid),
        name(&type_name),
        oid(super::oids::PG_CATALOG),
        oid(super::oids::SUPERUSER),
        Value::SmallInt(len),
        Value::Boolean(by_value),
        name("b"),
        name(category),
        Value::Boolean(false),
        Value::Boolean(true),
        name(","),
        oid(0),
        oid(elem),
        oid(array),
        oid(0),
        Value::Integer(-1),
        Value::Integer(0),
        oid(t.collation),
        Value::Boolean(false),
        Value::Null,
        Value::Null,
        // Fixed-length types are stored plain, the others extended (PostgreSQL's defaults).
        name(if len > 0 { "p" } else { "x" }),
    ]
}

/// The columns of [`pg_type_rows`].
pub const PG_TYPE_COLUMNS: &[(&str, DataType)] = &[
    ("oid", DataType::BigInt),
    ("typname", DataType::Text),
    ("typnamespace", DataType::BigInt),
    ("typowner", DataType::BigInt),
    ("typlen", DataType::SmallInt),
    ("typbyval", DataType::Boolean),
    ("typtype", DataType::Text),
    ("typcategory", DataType::Text),
    ("typispreferred", DataType::Boolean),
    ("typisdefined", DataType::Boolean),
    ("typdelim", DataType::Text),
    ("typrelid", DataType::BigInt),
    ("typelem", DataType::BigInt),
    ("typarray", DataType::BigInt),
    ("typbasetype", DataType::BigInt),
    ("typtypmod", DataType::Integer),
    ("typndims", DataType::Integer),
    ("typcollation", DataType::BigInt),
    ("typnotnull", DataType::Boolean),
    ("typdefault", DataType::Text),
    ("typacl", DataType::Text),
    ("typstorage", DataType::Text),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_type_spells_modifiers_as_postgres() {
        let varchar = DataType::Varchar(Some(20));
        let numeric = DataType::Numeric {
            precision: Some(12),
            scale: Some(2),
        };
        let spelled = |ty: &DataType| format_type(type_oid(ty), Some(type_modifier(ty)));
        assert_eq!(spelled(&varchar), "character varying(20)");
        assert_eq!(spelled(&numeric), "numeric(12,2)");
        assert_eq!(spelled(&DataType::Char(3)), "character(3)");
        assert_eq!(spelled(&DataType::Integer), "integer");
        assert_eq!(format_type(BPCHAR, Some(-1)), "bpchar");
        assert_eq!(format_type(BPCHAR, None), "character");
        assert_eq!(format_type(1007, None), "integer[]");
    }

    #[test]
    fn type_names_resolve_to_oids() {
        assert_eq!(type_by_name("integer"), Some(23));
        assert_eq!(type_by_name("pg_catalog.int4"), Some(23));
        assert_eq!(type_by_name("varchar(20)"), Some(VARCHAR));
        assert_eq!(type_by_name("int4[]"), Some(1007));
        assert_eq!(type_by_name("_text"), Some(1009));
        assert_eq!(type_by_name("hstore"), None);
    }
}
