//! Parallel aggregation against the serial run: the same answers, under other sessions'
//! uncommitted and committed writes, and errors raised by helper threads reach the session.

mod common;
#[path = "common/sessions.rs"]
mod session_helpers;

use session_helpers::{ok, run};

use std::sync::Arc;

use steady_sql::{Database, Session};
use steady_types::Value;

/// Rows enough for a couple of hundred 4 KiB leaves, so the parallel path is taken.
const ROWS: i64 = 20_000;

fn open() -> (tempfile::TempDir, Arc<Database>) {
    session_helpers::open(2048)
}

fn rows(session: &mut Session, sql: &str) -> Vec<Vec<Value>> {
    ok(session, sql).rows
}

fn parts_scanned(session: &mut Session) -> i64 {
    let sql = "SELECT value FROM steady_metrics WHERE name = 'parallel_scan_parts'";
    match rows(session, sql)[0][0] {
        Value::BigInt(parts) => parts,
        ref other => panic!("parallel_scan_parts is {other:?}"),
    }
}

/// The rows of `sql` run in parallel and serially; asserts they are equal and that the first run
/// was split into parts (or not, as `parallel` says).
fn same_as_serial(session: &mut Session, sql: &str, parallel: bool) -> Vec<Vec<Value>> {
    let before = parts_scanned(session);
    let split = rows(session, sql);
    let parts = parts_scanned(session) - before;
    assert_eq!(parts >= 2, parallel, "{sql}: {parts} parts");
    ok(session, "SET max_parallel_workers_per_gather = 0");
    let serial = rows(session, sql);
    ok(session, "RESET max_parallel_workers_per_gather");
    assert_eq!(
        parts_scanned(session) - before,
        parts,
        "{sql}: serial run split"
    );
    assert_eq!(split, serial, "{sql}");
    split
}

fn load(session: &mut Session) {
    ok(
        session,
        "CREATE TABLE t (id bigint PRIMARY KEY, g int, v int, n numeric(12,2), s text, b boolean)",
    );
    ok(
        session,
        &format!(
            "INSERT INTO t SELECT i, i % 7, (i * 7919) % 1000, \
             CASE WHEN i % 5 = 0 THEN NULL ELSE i / 100.0 END, 'row ' || (i % 997), i % 3 = 0 \
             FROM generate_series(1, {ROWS}) i"
        ),
    );
}

const QUERIES: &[&str] = &[
    "SELECT count(*), count(n), sum(v), avg(v), sum(n), avg(n), min(s), max(s), min(n), \
     max(v), bool_and(b), bool_or(b) FROM t",
    "SELECT g, count(*), sum(v), max(s) FROM t WHERE v % 3 = 0 GROUP BY g ORDER BY g",
    "SELECT count(*) FILTER (WHERE b), sum(v + 1) FROM t WHERE id BETWEEN 500 AND 15000",
    "SELECT b, g % 2, avg(n) FROM t GROUP BY b, g % 2 ORDER BY 1, 2",
];

#[test]
fn parallel_aggregates_give_the_serial_answers() {
    let (_dir, db) = open();
    let mut session = db.session("s");
    load(&mut session);
    for sql in QUERIES {
        same_as_serial(&mut session, sql, true);
    }
    let counted = same_as_serial(&mut session, "SELECT count(*) FROM t", true);
    assert_eq!(counted, vec![vec![Value::BigInt(ROWS)]]);
    // A range with no rows, and one no cut falls into: the serial path's answers.
    same_as_serial(
        &mut session,
        "SELECT count(*), sum(v) FROM t WHERE id > 1000000",
        false,
    );
    same_as_serial(
        &mut session,
        "SELECT sum(v) FROM t WHERE id BETWEEN 10 AND 20",
        false,
    );
}

#[test]
fn aggregates_that_cannot_be_split_run_serially() {
    let (_dir, db) = open();
    let mut session = db.session("s");
    load(&mut session);
    for sql in [
        "SELECT count(DISTINCT g) FROM t",
        "SELECT length(string_agg(s, ',')) FROM t WHERE id < 1000",
        "SELECT g, count(*) FROM t WHERE v > (SELECT min(v) FROM t WHERE id < 10) GROUP BY g ORDER BY g",
    ] {
        same_as_serial(&mut session, sql, false);
    }
    let before = parts_scanned(&mut session);
    ok(&mut session, "SELECT count(*) FROM t WHERE random() < 2");
    assert_eq!(
        parts_scanned(&mut session),
        before,
        "random() ran in parallel"
    );
}

#[test]
fn parallel_aggregates_see_the_statements_snapshot() {
    let (_dir, db) = open();
    let mut reader = db.session("reader");
    let mut writer = db.session("writer");
    load(&mut reader);
    let sql = "SELECT count(*), sum(v), count(n) FROM t";
    let at_start = same_as_serial(&mut reader, sql, true);
    // Uncommitted changes all over the table are not seen.
    ok(&mut writer, "BEGIN");
    ok(&mut writer, "UPDATE t SET v = v + 1 WHERE id % 10 = 0");
    ok(&mut writer, "DELETE FROM t WHERE id % 10 = 1");
    ok(&mut writer, "INSERT INTO t VALUES (0, 0, 0, 0, '', true)");
    assert_eq!(same_as_serial(&mut reader, sql, true), at_start);
    // A repeatable-read snapshot taken before the commit keeps the old answer in every part.
    ok(&mut reader, "BEGIN ISOLATION LEVEL REPEATABLE READ");
    assert_eq!(same_as_serial(&mut reader, sql, true), at_start);
    ok(&mut writer, "COMMIT");
    assert_eq!(same_as_serial(&mut reader, sql, true), at_start);
    ok(&mut reader, "COMMIT");
    let after = same_as_serial(&mut reader, sql, true);
    let deleted = ROWS / 10;
    assert_eq!(after[0][0], Value::BigInt(ROWS - deleted + 1));
}

#[test]
fn an_error_in_a_helper_thread_fails_the_statement_and_the_session_goes_on() {
    let (_dir, db) = open();
    let mut session = db.session("s");
    load(&mut session);
    // Only the last rows divide by zero: they lie in the helper's part.
    let sql = format!("SELECT sum(v / (id - {ROWS})) FROM t");
    let err = run(&mut session, &sql).unwrap_err();
    assert_eq!(err.code, "22012", "{err}");
    let err = run(&mut session, "SELECT sum(v / (id - 1)) FROM t").unwrap_err();
    assert_eq!(err.code, "22012", "{err}");
    let counted = rows(&mut session, "SELECT count(*) FROM t");
    assert_eq!(counted, vec![vec![Value::BigInt(ROWS)]]);
}

#[test]
fn a_parallel_scan_counts_each_part_and_every_row_in_pg_stat_user_tables() {
    let (_dir, db) = open();
    let mut session = db.session("s");
    load(&mut session);
    let before = parts_scanned(&mut session);
    ok(&mut session, "SELECT count(*) FROM t");
    let parts = parts_scanned(&mut session) - before;
    assert!(parts >= 2, "{parts} parts");
    let sql = "SELECT seq_scan, seq_tup_read FROM pg_stat_user_tables WHERE relname = 't'";
    assert_eq!(
        rows(&mut session, sql),
        [[Value::BigInt(parts), Value::BigInt(ROWS)]]
    );
}

/// Helper threads evaluate expressions as the session's own thread does: in the session's time
/// zone and DateStyle order.
#[test]
fn helper_threads_use_the_sessions_zone_and_datestyle() {
    let (_dir, db) = open();
    let mut session = db.session("s");
    load(&mut session);
    ok(&mut session, "SET TimeZone = 'Asia/Tokyo'");
    ok(&mut session, "SET datestyle = 'DMY'");
    let hour = "('2020-01-01 00:00'::timestamp + id * interval '1 hour')::timestamptz::text";
    let day = "(lpad((id % 28 + 1)::text, 2, '0') || '/02/2020')::date";
    let sql = format!(
        "SELECT count(*) FILTER (WHERE {hour} LIKE '%+09'), \
         count(*) FILTER (WHERE extract(month FROM {day}) = 2) FROM t"
    );
    let answer = same_as_serial(&mut session, &sql, true);
    assert_eq!(answer, vec![vec![Value::BigInt(ROWS), Value::BigInt(ROWS)]]);
}
