//! Garbage in SQL: random token soups and random bytes never panic the SQL layer, and the
//! database stays usable and unchanged by statements that failed.

mod common;

use std::sync::Arc;
use std::time::Duration;

use proptest::prelude::*;
use steady_engine::engine::EngineConfig;
use steady_sql::{Database, Session};
use steady_types::Value;

const TOKENS: &[&str] = &[
    "SELECT",
    "FROM",
    "WHERE",
    "INSERT",
    "INTO",
    "VALUES",
    "UPDATE",
    "SET",
    "DELETE",
    "CREATE",
    "TABLE",
    "INDEX",
    "ON",
    "DROP",
    "ALTER",
    "ADD",
    "COLUMN",
    "PRIMARY",
    "KEY",
    "BEGIN",
    "COMMIT",
    "ROLLBACK",
    "SAVEPOINT",
    "GROUP",
    "BY",
    "ORDER",
    "HAVING",
    "LIMIT",
    "OFFSET",
    "JOIN",
    "LEFT",
    "USING",
    "AND",
    "OR",
    "NOT",
    "NULL",
    "IS",
    "IN",
    "EXISTS",
    "CASE",
    "WHEN",
    "THEN",
    "ELSE",
    "END",
    "AS",
    "DISTINCT",
    "count(*)",
    "sum(",
    "max(",
    "coalesce(",
    "(",
    ")",
    ",",
    ";",
    "*",
    "+",
    "-",
    "/",
    "%",
    "=",
    "<",
    ">",
    "<=",
    "<>",
    "||",
    "::",
    "integer",
    "text",
    "numeric(5,2)",
    "date",
    "bytea",
    "t",
    "u",
    "a",
    "b",
    "t.a",
    "u.b",
    "0",
    "1",
    "-1",
    "2147483648",
    "9223372036854775808",
    "1.5e308",
    "'x'",
    "''",
    "'2024-02-30'",
    "'\\x0g'",
    "$1",
    "EXPLAIN",
    "ANALYZE",
    "VACUUM",
    "TRUNCATE",
    "generate_series(1, 3)",
    "RETURNING",
    "ON CONFLICT",
    "DO NOTHING",
    "LIKE",
    "'%'",
    "BETWEEN",
    "ANY",
    "ALL",
    "UNION",
    "FETCH",
    "WITH",
    "RECURSIVE",
    "MATERIALIZED",
    "x AS (SELECT a FROM t)",
    "d AS (DELETE FROM u RETURNING a)",
    "w AS (UPDATE u SET b = 'y' RETURNING a, b)",
    "i AS (INSERT INTO u VALUES (9, 'z') RETURNING *)",
    "INSERT INTO u SELECT * FROM x",
    "RIGHT",
    "FULL",
    "CROSS",
    "INNER",
    "LATERAL",
    "t.a = u.a",
    "'{\"k\": [1, {\"x\": null}]}'::jsonb",
    "'[1,'::json",
    "->",
    "->>",
    "#>",
    "@>",
    "?",
    "?|",
    "||",
    "'{k,0}'",
    "jsonb_build_object('k', 1)",
    "jsonb_agg(b)",
    "jsonb_set(",
    "::jsonb",
    "unnest(ARRAY[1, NULL])",
    "generate_subscripts('{a,b}', 1)",
    "array_agg(b)",
    "to_char(now(), 'FMDay HH24:MI')",
    "to_char(1.5, '9,999.00MI')",
    "CREATE TYPE m AS ENUM ('x', 'y')",
    "ALTER TYPE m ADD VALUE 'z'",
    "DROP TYPE m",
    "TYPE",
    "ENUM",
    "'x'::m",
    "ROW(1, 'x')",
    "ROW(",
    "row_to_json(t)",
    "json_agg(t)",
    "to_jsonb(u)",
    "jsonb_each('{\"k\": 1}')",
    "to_number('1,234.5-', '9G999D9S')",
    "regexp_like(",
    "(ARRAY[1, 2, 3])[2:]",
    "[:",
    "array_append(",
    "log(",
    "div(",
    "to_date('2024-02-31', 'YYYY-MM-DD')",
    "format('%s %I %L', b, b, b)",
    "string_to_array(b, '')",
    "'{1,x}'::int[]",
    "'{1, NULL}'::bigint[]",
    "'{t,NULL}'::boolean[]",
    "ARRAY[1, 2] || 3",
    "ARRAY[a] || ARRAY[b]",
    "(ARRAY[1.5, 2])[a]",
    "::numeric[]",
    "time",
    "'25:00'::time",
    "time '23:00' + interval '2 hours'",
    "make_time(a, 0, 0)",
    "GENERATED ALWAYS AS (a * 2) STORED",
    "GENERATED ALWAYS AS (now()) STORED",
    "ROLLUP (",
    "CUBE (",
    "GROUPING SETS (",
    "GROUPING(a)",
    "percentile_cont(0.5) WITHIN GROUP (ORDER BY a)",
    "mode() WITHIN GROUP (ORDER BY b)",
    "(a, b) IN ((1, 'x'))",
    "'today'::date",
    "CREATE INDEX ON t (lower(b))",
    "CREATE UNIQUE INDEX ON t ((a + 1)) WHERE b IS NULL",
    "WHERE a IS NULL",
    "lower(b)",
    "AT TIME ZONE",
    "now() AT TIME ZONE 'Europe/Berlin'",
    "a AT TIME ZONE b",
    "generate_series(now(), now() + interval '1 hour', interval '10 minutes')",
    "DELETE FROM t ORDER BY a LIMIT 1",
    "encode(decode(b, 'base64'), 'hex')",
    "convert_from(decode(b, 'escape'), 'LATIN1')",
    "convert_to(b, 'UTF8')",
    "CREATE TABLE other.t (a int)",
    "DROP TABLE IF EXISTS other.t",
    "sum(a) OVER (ORDER BY a RANGE BETWEEN 1 PRECEDING AND 2 FOLLOWING)",
    "count(*) OVER (ORDER BY now() RANGE INTERVAL '1 day' PRECEDING)",
    "OVER (ORDER BY a GROUPS BETWEEN",
    "RANGE BETWEEN -1 PRECEDING AND",
    "CREATE TABLE c (x int REFERENCES t (a) DEFERRABLE INITIALLY DEFERRED)",
    "SET CONSTRAINTS ALL DEFERRED",
    "SET CONSTRAINTS",
    "IMMEDIATE",
    "'{2024-01-01,NULL}'::date[]",
    "ARRAY[now(), NULL]",
    "'{}'::uuid[]",
    "VALUES (1), ('2'), (NULL)",
];

/// FROM items of generated queries: tables, WITH queries, a subquery, a table function.
const FROM_ITEMS: &[&str] = &[
    "t",
    "u",
    "x",
    "r",
    "(SELECT a, b FROM t WHERE a > 0)",
    "generate_series(1, 3)",
];
/// Conditions over the items `q0`, `q1`, ... of generated queries (`{l}`, `{r}`: two of them).
const CONDITIONS: &[&str] = &[
    "{l}.a = {r}.a",
    "{l}.b = {r}.b",
    "{l}.a = {r}.a + 1",
    "{l}.a < 2",
    "{r}.a IS NULL",
    "({l}.a = {r}.a) IS TRUE",
    "EXISTS (SELECT 1 FROM u WHERE u.a = {l}.a)",
    "{l}.a IN (SELECT a FROM x)",
];
const JOINS: &[&str] = &[
    ", ",
    " JOIN ",
    " LEFT JOIN ",
    " RIGHT JOIN ",
    " FULL JOIN ",
    " CROSS JOIN ",
];

/// A query over up to five FROM items joined in random ways, under WITH queries (one
/// recursive), its conditions in ON and WHERE.
fn generated_query() -> impl Strategy<Value = String> {
    let item = (0..FROM_ITEMS.len(), 0..JOINS.len(), 0..CONDITIONS.len());
    (
        prop::collection::vec(item, 1..6),
        prop::collection::vec((0..CONDITIONS.len(), 0..5usize, 0..5usize), 0..4),
        any::<bool>(),
    )
        .prop_map(|(items, filters, materialized)| {
            let condition = |at: usize, l: usize, r: usize| {
                CONDITIONS[at]
                    .replace("{l}", &format!("q{l}"))
                    .replace("{r}", &format!("q{r}"))
            };
            let mut from = String::new();
            for (i, &(item, join, on)) in items.iter().enumerate() {
                let source = format!("{} q{i}", FROM_ITEMS[item]);
                if i == 0 {
                    from = source;
                    continue;
                }
                from.push_str(JOINS[join]);
                from.push_str(&source);
                if !matches!(JOINS[join], ", " | " CROSS JOIN ") {
                    from.push_str(&format!(" ON {}", condition(on, i - 1, i)));
                }
            }
            let filter: Vec<String> = filters
                .iter()
                .map(|&(at, l, r)| condition(at, l % items.len(), r % items.len()))
                .collect();
            let filter = match filter.is_empty() {
                true => String::new(),
                false => format!(" WHERE {}", filter.join(" AND ")),
            };
            let hint = if materialized { "MATERIALIZED " } else { "" };
            format!(
                "WITH RECURSIVE r(a, b) AS (SELECT 1, 'r' UNION ALL SELECT a + 1, b FROM r WHERE a < 4), \
                 x AS {hint}(SELECT a, b FROM t) SELECT count(*) FROM {from}{filter}"
            )
        })
}

fn open() -> (tempfile::TempDir, Arc<Database>) {
    let dir = tempfile::tempdir().unwrap();
    let config = EngineConfig {
        lock_timeout: Some(Duration::from_secs(1)),
        ..common::config(256)
    };
    let db = common::open_database(dir.path(), &config);
    (dir, db)
}

fn setup(session: &mut Session) {
    for sql in [
        "CREATE TABLE t (a integer PRIMARY KEY, b text)",
        "CREATE TABLE u (a integer, b text)",
        "INSERT INTO t VALUES (1, 'one'), (2, 'two')",
        "INSERT INTO u VALUES (1, 'x')",
    ] {
        for result in session.execute(sql) {
            result.unwrap();
        }
    }
}

fn count(session: &mut Session, sql: &str) -> i64 {
    match session.execute(sql).pop().unwrap().unwrap().rows[0][0] {
        Value::BigInt(n) => n,
        ref other => panic!("{other:?}"),
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn token_soups_never_panic(soups in prop::collection::vec(
        prop::collection::vec(prop::sample::select(TOKENS), 1..24), 1..40)
    ) {
        let (_dir, db) = open();
        let mut session = db.session("fuzz");
        setup(&mut session);
        for soup in &soups {
            let sql = soup.join(" ");
            let _ = session.execute(&sql);
        }
        let _ = session.execute("ROLLBACK");
        let mut fresh = db.session("check");
        let tables = fresh.execute("SELECT count(*) FROM steady_tables").pop().unwrap();
        prop_assert!(tables.is_ok());
    }

    #[test]
    fn generated_joins_and_with_queries_never_panic(queries in prop::collection::vec(generated_query(), 1..12)) {
        let (_dir, db) = open();
        let mut session = db.session("fuzz");
        setup(&mut session);
        let _ = session.execute("SET statement_timeout = 5000");
        for sql in &queries {
            let _ = session.execute(sql);
            let _ = session.execute(&format!("EXPLAIN {sql}"));
        }
        let _ = session.execute("ANALYZE");
        for sql in &queries {
            let _ = session.execute(sql);
        }
        prop_assert_eq!(count(&mut session, "SELECT count(*) FROM t"), 2);
    }

    #[test]
    fn random_bytes_never_panic(inputs in prop::collection::vec(prop::collection::vec(any::<u8>(), 0..64), 1..20)) {
        let (_dir, db) = open();
        let mut session = db.session("fuzz");
        setup(&mut session);
        for bytes in &inputs {
            let _ = session.execute(&String::from_utf8_lossy(bytes));
        }
        prop_assert_eq!(count(&mut session, "SELECT count(*) FROM t"), 2);
    }
}
