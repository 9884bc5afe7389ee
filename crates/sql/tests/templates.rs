//! Statement templates (`parser::template`, `session::templates`): a simple-query statement run
//! through its template's kept plan answers exactly as the same text run the ordinary way
//! (parsed and bound with its literals). A trailing comment makes the template scan give up, so
//! `sql -- plain` is the ordinary path.

mod common;

use std::sync::Arc;

use proptest::prelude::*;
use steady_sql::{Database, Session};

const SCHEMA: &str = "CREATE TABLE t (id integer PRIMARY KEY, n bigint, d numeric(10,2), \
                      s text, day date, ok boolean)";

fn open() -> (tempfile::TempDir, Arc<Database>) {
    let dir = tempfile::tempdir().unwrap();
    let db = common::open_database(dir.path(), &common::config(1024));
    (dir, db)
}

/// What a statement did, as a comparable string: its tag and rows, or its error code.
fn outcome(session: &mut Session, sql: &str) -> String {
    match session.execute(sql).pop().expect("a statement") {
        Ok(result) => format!("{} {:?}", result.tag, result.rows),
        Err(err) => format!("error {}", err.code),
    }
}

fn quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

fn number() -> impl Strategy<Value = String> {
    prop_oneof![
        (-20i64..20).prop_map(|n| n.to_string()),
        Just("2147483647".to_owned()),
        Just("2147483648".to_owned()),
        Just("-2147483648".to_owned()),
        Just("99999999999999999999".to_owned()),
        (0u32..1000).prop_map(|n| format!("{}.{:02}", n / 100, n % 100)),
    ]
}

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[ab']{0,3}".prop_map(|s| quoted(&s)),
        Just("'2024-02-29'".to_owned()),
        Just("'7'".to_owned()),
        Just("'true'".to_owned()),
        Just("'not a date'".to_owned()),
    ]
}

/// A statement of one of the shapes clients send, with literals from the strategies above.
fn statement() -> impl Strategy<Value = String> {
    let (n, m, s) = (number(), number(), text());
    (0usize..12, n, m, s).prop_map(|(shape, n, m, s)| match shape {
        0 => format!("SELECT id, n, s FROM t WHERE id = {n}"),
        1 => format!("SELECT count(*) FROM t WHERE n = {n} OR s = {s}"),
        2 => format!("UPDATE t SET n = n + -{n}, s = {s} WHERE id = {m}"),
        3 => format!("UPDATE t SET d = d * {n} WHERE id = {m}"),
        4 => format!("INSERT INTO t VALUES ({n}, {m}, {m}, {s}, {s}, {s})"),
        5 => format!("INSERT INTO t (id, n, s) VALUES ({n}, {m}, {s}), ({m}, -{n}, 'x')"),
        6 => format!("DELETE FROM t WHERE id = {n}"),
        7 => format!("SELECT id FROM t WHERE day = {s}"),
        8 => format!("SELECT id FROM t WHERE ok = {s} ORDER BY 1 LIMIT 3"),
        9 => format!("UPDATE t SET day = {s}, ok = {s} WHERE n = {n}"),
        10 => format!("SELECT id * {n}, s FROM t WHERE id = -{m} + 1"),
        _ => format!("INSERT INTO t VALUES ({n}, {n}, {s}, {s}, '2020-01-01', {s})"),
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(40))]

    /// The same statements applied to two databases, one through templates and one the
    /// ordinary way: every statement has the same outcome and the tables end equal.
    #[test]
    fn templates_answer_as_the_ordinary_path(statements in prop::collection::vec(statement(), 1..40)) {
        let (_a_dir, a) = open();
        let (_b_dir, b) = open();
        let mut templated = a.session("a");
        let mut plain = b.session("b");
        for session in [&mut templated, &mut plain] {
            session.execute(SCHEMA).pop().unwrap().unwrap();
        }
        for sql in &statements {
            prop_assert_eq!(
                outcome(&mut templated, sql),
                outcome(&mut plain, &format!("{sql} -- plain")),
                "{}", sql
            );
        }
        let all = "SELECT * FROM t ORDER BY id";
        prop_assert_eq!(outcome(&mut templated, all), outcome(&mut plain, all));
    }
}

#[test]
fn a_template_is_planned_anew_after_the_table_changes() {
    let (_dir, db) = open();
    let mut session = db.session("s");
    assert_eq!(
        outcome(&mut session, "CREATE TABLE u (a int, b text)"),
        "CREATE TABLE []"
    );
    assert!(outcome(&mut session, "INSERT INTO u VALUES (1, '2')").starts_with("INSERT 0 1"));
    assert_eq!(outcome(&mut session, "DROP TABLE u"), "DROP TABLE []");
    assert_eq!(
        outcome(&mut session, "CREATE TABLE u (a bigint, b int)"),
        "CREATE TABLE []"
    );
    // The same template: '2' is now an integer for column b.
    assert!(outcome(&mut session, "INSERT INTO u VALUES (1, '2')").starts_with("INSERT 0 1"));
    assert_eq!(
        outcome(&mut session, "SELECT b + 1 FROM u WHERE a = 1"),
        "SELECT 1 [[Integer(3)]]"
    );
    assert_eq!(
        outcome(&mut session, "INSERT INTO u VALUES (2, 'x')"),
        "error 22P02"
    );
}

#[test]
fn an_error_through_a_template_fails_the_block_as_always() {
    let (_dir, db) = open();
    let mut session = db.session("s");
    outcome(&mut session, SCHEMA);
    let insert = |id: i32| format!("INSERT INTO t (id, n) VALUES ({id}, 5)");
    assert!(outcome(&mut session, &insert(1)).starts_with("INSERT"));
    assert_eq!(outcome(&mut session, "BEGIN"), "BEGIN []");
    assert_eq!(outcome(&mut session, &insert(1)), "error 23505");
    assert_eq!(outcome(&mut session, &insert(2)), "error 25P02");
    assert_eq!(outcome(&mut session, "ROLLBACK"), "ROLLBACK []");
    assert!(outcome(&mut session, &insert(2)).starts_with("INSERT 0 1"));
    assert_eq!(
        outcome(&mut session, "SELECT count(*) FROM t WHERE n = 5"),
        "SELECT 1 [[BigInt(2)]]"
    );
}
