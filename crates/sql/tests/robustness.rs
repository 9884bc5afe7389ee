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
];

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
