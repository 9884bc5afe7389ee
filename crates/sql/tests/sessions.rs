//! Sessions against each other through SQL: isolation, write conflicts, deadlocks, and stopping a
//! running statement (cancel request, statement_timeout).

mod common;
#[path = "common/sessions.rs"]
mod session_helpers;

use session_helpers::{ok, run};

use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use steady_sql::execution::activity::State;
use steady_sql::execution::cancel::CancelReason;
use steady_sql::{Database, Session};

fn open() -> (tempfile::TempDir, Arc<Database>) {
    session_helpers::open(1024)
}

fn cell(session: &mut Session, sql: &str) -> String {
    ok(session, sql).rows[0][0].to_string()
}

const LONG_QUERY: &str = "SELECT count(*) FROM generate_series(1, 2000000000)";

#[test]
fn statement_timeout_stops_a_long_query_and_the_session_goes_on() {
    let (_dir, db) = open();
    let mut session = db.session("s");
    ok(&mut session, "SET statement_timeout = 200");
    let started = Instant::now();
    let err = run(&mut session, LONG_QUERY).unwrap_err();
    assert_eq!(err.code, "57014", "{err}");
    assert!(err.message.contains("statement timeout"), "{err}");
    assert!(started.elapsed() < Duration::from_secs(5));
    ok(&mut session, "RESET statement_timeout");
    assert_eq!(cell(&mut session, "SELECT 1 + 1"), "2");
}

#[test]
fn statement_timeout_stops_a_long_on_delete_cascade_and_undoes_it() {
    let (_dir, db) = open();
    let mut session = db.session("s");
    ok(
        &mut session,
        "CREATE TABLE chain (id int PRIMARY KEY, parent int REFERENCES chain ON DELETE CASCADE)",
    );
    ok(&mut session, "CREATE INDEX chain_parent ON chain (parent)");
    ok(
        &mut session,
        "INSERT INTO chain SELECT g, nullif(g - 1, 0) FROM generate_series(1, 200000) g",
    );
    ok(&mut session, "SET statement_timeout = 50");
    let err = run(&mut session, "DELETE FROM chain WHERE id = 1").unwrap_err();
    assert_eq!(err.code, "57014", "{err}");
    ok(&mut session, "RESET statement_timeout");
    assert_eq!(cell(&mut session, "SELECT count(*) FROM chain"), "200000");
}

/// Waits (bounded) until the lock manager has queued one more wait than `before`; a cancel or a
/// commit from then on finds the waiter.
fn wait_for_lock_wait(db: &Database, before: u64) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while db.engine().locks().stats().lock_waits == before {
        assert!(Instant::now() < deadline, "no statement began to wait");
        thread::yield_now();
    }
}

/// Cancels `session`'s query as soon as `pg_stat_activity` shows it active, as a client that
/// watched it would: the cancel may land before the statement has been parsed and planned.
fn cancel_once_active(session: &Session) -> thread::JoinHandle<()> {
    let handle = session.cancel_handle();
    let activity = Arc::clone(session.activity());
    thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(30);
        while activity.doing().state != State::Active {
            assert!(Instant::now() < deadline, "the query never became active");
            std::hint::spin_loop();
        }
        handle.cancel(CancelReason::UserRequest);
    })
}

#[test]
fn a_cancel_request_stops_the_running_statement_however_early_it_lands() {
    let (_dir, db) = open();
    let mut session = db.session("s");
    for _ in 0..50 {
        let canceller = cancel_once_active(&session);
        let err = run(&mut session, LONG_QUERY).unwrap_err();
        canceller.join().unwrap();
        assert_eq!(err.code, "57014", "{err}");
        assert_eq!(cell(&mut session, "SELECT 'still here'"), "still here");
    }
}

/// Two sessions on table `t`: the holder has updated its row 1 in an open transaction.
fn holder_and_waiter(db: &Arc<Database>) -> (Session, Session) {
    let mut holder = db.session("holder");
    let waiter = db.session("waiter");
    ok(
        &mut holder,
        "CREATE TABLE t (id integer PRIMARY KEY, v integer)",
    );
    ok(&mut holder, "INSERT INTO t VALUES (1, 0)");
    ok(&mut holder, "BEGIN");
    ok(&mut holder, "UPDATE t SET v = 1 WHERE id = 1");
    (holder, waiter)
}

#[test]
fn a_cancel_request_wakes_a_statement_waiting_for_a_row_lock() {
    let (_dir, db) = open();
    let (mut holder, mut waiter) = holder_and_waiter(&db);
    let handle = waiter.cancel_handle();
    let waits_before = db.engine().locks().stats().lock_waits;
    let observer = Arc::clone(&db);
    let canceller = thread::spawn(move || {
        wait_for_lock_wait(&observer, waits_before);
        handle.cancel(CancelReason::UserRequest);
    });
    let err = run(&mut waiter, "UPDATE t SET v = 2 WHERE id = 1").unwrap_err();
    canceller.join().unwrap();
    assert_eq!(err.code, "57014", "{err}");
    ok(&mut holder, "COMMIT");
    assert_eq!(cell(&mut waiter, "SELECT v FROM t WHERE id = 1"), "1");
}

#[test]
fn statement_timeout_wakes_a_statement_waiting_for_a_row_lock() {
    let (_dir, db) = open();
    let (mut holder, mut waiter) = holder_and_waiter(&db);
    ok(&mut waiter, "SET statement_timeout = 200");
    let started = std::time::Instant::now();
    let err = run(&mut waiter, "UPDATE t SET v = 2 WHERE id = 1").unwrap_err();
    assert_eq!(err.code, "57014", "{err}");
    assert!(err.message.contains("statement timeout"), "{err}");
    assert!(started.elapsed() >= std::time::Duration::from_millis(200));
    ok(&mut waiter, "RESET statement_timeout");
    ok(&mut holder, "COMMIT");
    assert_eq!(cell(&mut waiter, "SELECT v FROM t WHERE id = 1"), "1");
    ok(&mut waiter, "UPDATE t SET v = 3 WHERE id = 1");
}

#[test]
fn repeatable_read_sees_its_snapshot_and_a_concurrent_update_fails_with_40001() {
    let (_dir, db) = open();
    let mut a = db.session("a");
    let mut b = db.session("b");
    ok(
        &mut a,
        "CREATE TABLE acct (id integer PRIMARY KEY, balance integer)",
    );
    ok(&mut a, "INSERT INTO acct VALUES (1, 100), (2, 100)");
    ok(&mut a, "BEGIN ISOLATION LEVEL REPEATABLE READ");
    assert_eq!(cell(&mut a, "SELECT sum(balance) FROM acct"), "200");
    ok(
        &mut b,
        "UPDATE acct SET balance = balance - 50 WHERE id = 1",
    );
    assert_eq!(cell(&mut a, "SELECT balance FROM acct WHERE id = 1"), "100");
    let err = run(&mut a, "UPDATE acct SET balance = balance + 1 WHERE id = 1").unwrap_err();
    assert_eq!(err.code, "40001", "{err}");
    assert_eq!(run(&mut a, "SELECT 1").unwrap_err().code, "25P02");
    ok(&mut a, "ROLLBACK");
    assert_eq!(cell(&mut a, "SELECT balance FROM acct WHERE id = 1"), "50");
}

#[test]
fn a_cancel_request_ends_a_lock_wait_however_early_it_lands() {
    let (_dir, db) = open();
    let (mut holder, mut waiter) = holder_and_waiter(&db);
    for _ in 0..50 {
        let canceller = cancel_once_active(&waiter);
        let err = run(&mut waiter, "UPDATE t SET v = 2 WHERE id = 1").unwrap_err();
        canceller.join().unwrap();
        assert_eq!(err.code, "57014", "{err}");
    }
    ok(&mut holder, "COMMIT");
    assert_eq!(cell(&mut waiter, "SELECT v FROM t WHERE id = 1"), "1");
}

#[test]
fn read_committed_update_waits_for_the_writer_and_applies_to_the_newest_row() {
    let (_dir, db) = open();
    let mut a = db.session("a");
    let mut b = db.session("b");
    ok(&mut a, "CREATE TABLE c (id integer PRIMARY KEY, n integer)");
    ok(&mut a, "INSERT INTO c VALUES (1, 0)");
    ok(&mut a, "BEGIN");
    ok(&mut a, "UPDATE c SET n = n + 1 WHERE id = 1");
    let waits_before = db.engine().locks().stats().lock_waits;
    let waiter = thread::spawn(move || {
        let result = ok(&mut b, "UPDATE c SET n = n + 10 WHERE id = 1");
        result.tag
    });
    wait_for_lock_wait(&db, waits_before);
    ok(&mut a, "COMMIT");
    assert_eq!(waiter.join().unwrap(), "UPDATE 1");
    assert_eq!(cell(&mut a, "SELECT n FROM c WHERE id = 1"), "11");
}

#[test]
fn crossing_updates_end_in_a_deadlock_error_for_one_session() {
    let (_dir, db) = open();
    let mut a = db.session("a");
    let mut b = db.session("b");
    ok(&mut a, "CREATE TABLE d (id integer PRIMARY KEY, n integer)");
    ok(&mut a, "INSERT INTO d VALUES (1, 0), (2, 0)");
    ok(&mut a, "BEGIN");
    ok(&mut b, "BEGIN");
    ok(&mut a, "UPDATE d SET n = 1 WHERE id = 1");
    ok(&mut b, "UPDATE d SET n = 2 WHERE id = 2");
    let waits_before = db.engine().locks().stats().lock_waits;
    let second = thread::spawn(move || {
        let result = run(&mut b, "UPDATE d SET n = 2 WHERE id = 1");
        let end = if result.is_ok() { "COMMIT" } else { "ROLLBACK" };
        ok(&mut b, end);
        result.map(|r| r.tag)
    });
    wait_for_lock_wait(&db, waits_before);
    let first = run(&mut a, "UPDATE d SET n = 1 WHERE id = 2");
    let end = if first.is_ok() { "COMMIT" } else { "ROLLBACK" };
    ok(&mut a, end);
    let second = second.join().unwrap();
    let first = first.map(|r| r.tag);
    let codes: Vec<&str> = [&first, &second]
        .iter()
        .filter_map(|r| r.as_ref().err().map(|e| e.code))
        .collect();
    assert_eq!(
        codes,
        vec!["40P01"],
        "exactly one session is chosen as the victim"
    );
}

/// A prepared query keeps its plan between executions, and binds again once the catalog or the
/// statistics change: after the table is dropped and created again, and after an index appears and
/// ANALYZE runs, it reads the new table through the new path.
#[test]
fn a_prepared_query_is_planned_again_after_ddl_and_analyze() {
    let (_dir, db) = open();
    let mut session = db.session("s");
    ok(
        &mut session,
        "CREATE TABLE t (id integer PRIMARY KEY, v integer)",
    );
    ok(
        &mut session,
        "INSERT INTO t SELECT g, g % 10 FROM generate_series(1, 2000) g",
    );
    let prepared = session
        .prepare("SELECT count(*) FROM t WHERE v = $1", &[])
        .unwrap();
    let count = |session: &mut Session, v: i32| {
        let result = session
            .execute_prepared(&prepared, &[steady_types::Value::Integer(v)])
            .unwrap();
        result.rows[0][0].to_string()
    };
    assert_eq!(count(&mut session, 3), "200");
    assert_eq!(
        count(&mut session, 4),
        "200",
        "the kept plan runs with new parameters"
    );
    ok(&mut session, "DROP TABLE t");
    ok(
        &mut session,
        "CREATE TABLE t (id integer PRIMARY KEY, v integer)",
    );
    ok(
        &mut session,
        "INSERT INTO t SELECT g, g % 100 FROM generate_series(1, 2000) g",
    );
    assert_eq!(
        count(&mut session, 3),
        "20",
        "bound again against the new table"
    );
    ok(&mut session, "CREATE INDEX t_v ON t (v)");
    ok(&mut session, "ANALYZE t");
    let explain = ok(&mut session, "EXPLAIN SELECT count(*) FROM t WHERE v = 3");
    assert!(
        format!("{:?}", explain.rows).contains("t_v"),
        "{:?}",
        explain.rows
    );
    assert_eq!(count(&mut session, 3), "20");
    ok(&mut session, "DELETE FROM t WHERE v = 3 AND id > 1000");
    assert_eq!(count(&mut session, 3), "10", "the plan reads current data");
}

/// A prepared write keeps its plan too: it runs again with new parameters, gives its command tag
/// and RETURNING rows, is refused in a READ ONLY block, and is bound again after the table changes
/// (a column added before the assigned one moves its position).
#[test]
fn a_prepared_write_keeps_its_plan_until_the_table_changes() {
    use steady_types::Value;
    let (_dir, db) = open();
    let mut session = db.session("s");
    ok(
        &mut session,
        "CREATE TABLE t (id integer PRIMARY KEY, v integer)",
    );
    ok(&mut session, "INSERT INTO t VALUES (1, 10), (2, 20)");
    let update = session
        .prepare("UPDATE t SET v = v + $1 WHERE id = $2 RETURNING v", &[])
        .unwrap();
    let add = |session: &mut Session, amount: i32, id: i32| {
        let result = session
            .execute_prepared(&update, &[Value::Integer(amount), Value::Integer(id)])
            .unwrap();
        (result.tag, result.rows[0][0].to_string())
    };
    assert_eq!(
        add(&mut session, 1, 1),
        ("UPDATE 1".to_owned(), "11".to_owned())
    );
    assert_eq!(
        add(&mut session, 5, 2),
        ("UPDATE 1".to_owned(), "25".to_owned())
    );
    ok(&mut session, "BEGIN READ ONLY");
    let err = session
        .execute_prepared(&update, &[Value::Integer(1), Value::Integer(1)])
        .unwrap_err();
    assert_eq!(err.code, "25006", "{err}");
    ok(&mut session, "ROLLBACK");
    ok(&mut session, "DROP TABLE t");
    ok(
        &mut session,
        "CREATE TABLE t (id integer PRIMARY KEY, w text, v integer)",
    );
    ok(&mut session, "INSERT INTO t VALUES (1, 'one', 100)");
    assert_eq!(
        add(&mut session, 1, 1),
        ("UPDATE 1".to_owned(), "101".to_owned())
    );
    assert_eq!(cell(&mut session, "SELECT w FROM t WHERE id = 1"), "one");
}

/// Rows of parameters (COPY FROM's batches) run a prepared one-row INSERT as one statement: each
/// value is converted to its parameter's type and then assigned to its column (char padded,
/// numeric rounded), columns not named take their defaults, a failing row leaves none of the
/// statement's rows, the row-at-a-time path (a foreign key) takes the same rows, and a statement
/// that is not an INSERT of one row of parameters is refused before it runs.
#[test]
fn rows_of_parameters_run_a_prepared_insert_once_as_one_statement() {
    use steady_types::{DataType, Value};
    let (_dir, db) = open();
    let mut session = db.session("s");
    ok(
        &mut session,
        "CREATE TABLE t (id integer PRIMARY KEY, name char(3), n numeric(5,1), d integer DEFAULT 7)",
    );
    let insert = session
        .prepare(
            "INSERT INTO t (id, name, n) VALUES ($1, $2, $3)",
            &[Some(DataType::Integer), Some(DataType::Text), None],
        )
        .unwrap();
    let text = |s: &str| Value::Text(s.to_owned());
    let rows = vec![
        vec![Value::Integer(1), text("a"), text("2.25")],
        vec![Value::Integer(2), text("bb"), Value::Null],
    ];
    let result = session.execute_prepared_rows(&insert, rows).unwrap();
    assert_eq!(result.tag, "INSERT 0 2");
    let all = "SELECT string_agg(id || ':' || name || octet_length(name) || ':' || coalesce(n::text, '-') || ':' || d, ',' ORDER BY id) FROM t";
    assert_eq!(cell(&mut session, all), "1:a3:2.3:7,2:bb3:-:7");

    let failing = vec![
        vec![Value::Integer(3), text("c"), Value::Null],
        vec![Value::Integer(1), text("dup"), Value::Null],
    ];
    let err = session.execute_prepared_rows(&insert, failing).unwrap_err();
    assert_eq!(err.code, "23505", "{err}");
    let short = vec![vec![Value::Integer(4), text("d")]];
    let err = session.execute_prepared_rows(&insert, short).unwrap_err();
    assert_eq!(err.code, "08P01", "{err}");
    let long = vec![vec![Value::Integer(5), text("long"), Value::Null]];
    let err = session.execute_prepared_rows(&insert, long).unwrap_err();
    assert_eq!(err.code, "22001", "{err}");
    assert_eq!(cell(&mut session, "SELECT count(*) FROM t"), "2");

    ok(
        &mut session,
        "CREATE TABLE c (id integer PRIMARY KEY, t_id integer REFERENCES t (id))",
    );
    let child = session
        .prepare("INSERT INTO c VALUES ($1, $2)", &[])
        .unwrap();
    let pair = |a: i32, b: i32| vec![Value::Integer(a), Value::Integer(b)];
    let result = session
        .execute_prepared_rows(&child, vec![pair(1, 1), pair(2, 2)])
        .unwrap();
    assert_eq!(result.tag, "INSERT 0 2");
    let err = session
        .execute_prepared_rows(&child, vec![pair(3, 1), pair(4, 9)])
        .unwrap_err();
    assert_eq!(err.code, "23503", "{err}");
    assert_eq!(cell(&mut session, "SELECT count(*) FROM c"), "2");

    for sql in [
        "INSERT INTO t (id) VALUES ($1), ($2)",
        "INSERT INTO t (id, d) VALUES ($2, $1)",
        "INSERT INTO t (id) VALUES ($1 + 10)",
        "UPDATE t SET d = $1",
        "SELECT $1::int",
    ] {
        let prepared = session.prepare(sql, &[]).unwrap();
        let rows = vec![vec![Value::Integer(1), Value::Integer(2)]];
        let err = session.execute_prepared_rows(&prepared, rows).unwrap_err();
        assert_eq!(err.code, "XX000", "{sql}: {err}");
    }
    assert_eq!(
        cell(&mut session, "SELECT sum(d) FROM t"),
        "14",
        "nothing ran"
    );
}

/// ADD COLUMN with a constant default rewrites no row: rows stored before it read the default (in
/// scans, through indexes, in aggregates), later writes store the column, a volatile default still
/// gives each row its own value, and the default survives a restart.
#[test]
fn add_column_with_a_constant_default_reads_it_from_old_rows_without_rewriting_them() {
    let dir = tempfile::tempdir().unwrap();
    let config = common::config(1024);
    let db = common::open_database(dir.path(), &config);
    let mut session = db.session("s");
    ok(
        &mut session,
        "CREATE TABLE t (id integer PRIMARY KEY, v integer)",
    );
    ok(
        &mut session,
        "INSERT INTO t SELECT g, g FROM generate_series(1, 5000) g",
    );
    // Redo generated (not yet written) counts; the insert's purge is done first, so that its
    // redo does not count as the ALTERs'.
    let written = |session: &mut Session| {
        cell(
            session,
            "SELECT value FROM steady_metrics WHERE name = 'wal_current_lsn'",
        )
        .parse::<u64>()
        .unwrap()
    };
    ok(&mut session, "VACUUM");
    let before = written(&mut session);
    ok(&mut session, "ALTER TABLE t ADD COLUMN w integer DEFAULT 7");
    ok(
        &mut session,
        "ALTER TABLE t ADD COLUMN label text DEFAULT 'new' NOT NULL",
    );
    let logged = written(&mut session) - before;
    assert!(logged < 50_000, "no row was rewritten: {logged} redo bytes");
    assert_eq!(cell(&mut session, "SELECT sum(w) FROM t"), "35000");
    assert_eq!(
        cell(&mut session, "SELECT label FROM t WHERE id = 42"),
        "new"
    );
    ok(&mut session, "UPDATE t SET w = 8 WHERE id <= 10");
    ok(&mut session, "INSERT INTO t (id, v) VALUES (5001, 0)");
    ok(&mut session, "CREATE INDEX t_w ON t (w)");
    assert_eq!(
        cell(&mut session, "SELECT count(*) FROM t WHERE w = 7"),
        "4991"
    );
    assert_eq!(
        cell(&mut session, "SELECT count(*) FROM t WHERE w = 8"),
        "10"
    );
    ok(
        &mut session,
        "ALTER TABLE t ADD COLUMN r double precision DEFAULT random()",
    );
    assert_eq!(
        cell(&mut session, "SELECT count(DISTINCT r) > 4000 FROM t"),
        "t"
    );
    drop(session);
    drop(db);
    let db = common::open_database(dir.path(), &config);
    let mut session = db.session("s");
    assert_eq!(
        cell(&mut session, "SELECT sum(w), min(label) FROM t"),
        "35017"
    );
    assert_eq!(
        cell(&mut session, "SELECT count(*) FROM t WHERE label = 'new'"),
        "5001"
    );
}

/// `UPDATE ... LIMIT n` changes the first n matching rows in primary-key order, as `DELETE ...
/// LIMIT n` does; an ORDER BY (which would choose other rows) is refused and changes nothing, never
/// run as if it were absent: 0A000 for DELETE, a syntax error for UPDATE (as in PostgreSQL).
#[test]
fn write_limits_take_rows_in_key_order_and_order_by_is_refused() {
    let (_dir, db) = open();
    let mut session = db.session("s");
    ok(
        &mut session,
        "CREATE TABLE t (id integer PRIMARY KEY, v integer)",
    );
    ok(
        &mut session,
        "INSERT INTO t SELECT g, 0 FROM generate_series(1, 10) g",
    );
    let updated = ok(&mut session, "UPDATE t SET v = 1 WHERE id > 3 LIMIT 2");
    assert_eq!(updated.tag, "UPDATE 2");
    assert_eq!(
        cell(
            &mut session,
            "SELECT string_agg(id::text, ',') FROM t WHERE v = 1"
        ),
        "4,5"
    );
    for (statement, code) in [
        ("DELETE FROM t ORDER BY id DESC LIMIT 1", "0A000"),
        ("UPDATE t SET v = 2 ORDER BY id DESC LIMIT 1", "42601"),
    ] {
        let err = session.execute(statement).remove(0).unwrap_err();
        assert_eq!(err.code, code, "{statement}: {err}");
    }
    assert_eq!(
        cell(&mut session, "SELECT count(*) FROM t WHERE v = 2"),
        "0"
    );
    let deleted = ok(&mut session, "DELETE FROM t WHERE v = 0 LIMIT 3");
    assert_eq!(deleted.tag, "DELETE 3");
    assert_eq!(cell(&mut session, "SELECT min(id) FROM t"), "4");
}

/// SUM and AVG of integer columns are exact beyond the bigint range, give 0 for inputs that cancel
/// out and NULL without inputs, as in PostgreSQL.
#[test]
fn sums_of_integers_are_exact_and_null_without_inputs() {
    let (_dir, db) = open();
    let mut session = db.session("s");
    ok(&mut session, "CREATE TABLE s (b bigint, i integer)");
    ok(
        &mut session,
        "INSERT INTO s VALUES (9223372036854775807, 1), (9223372036854775807, -1), (NULL, NULL)",
    );
    assert_eq!(
        cell(&mut session, "SELECT sum(b) FROM s"),
        "18446744073709551614"
    );
    assert_eq!(cell(&mut session, "SELECT sum(i) FROM s"), "0");
    assert_eq!(
        cell(&mut session, "SELECT avg(b) = 9223372036854775807 FROM s"),
        "t"
    );
    assert_eq!(
        cell(&mut session, "SELECT sum(i) IS NULL FROM s WHERE i IS NULL"),
        "t"
    );
    assert_eq!(cell(&mut session, "SELECT sum(i + 0.5) FROM s"), "1.0");
}

/// An INSERT of a key the transaction itself wrote before fails with 23505 and leaves that row
/// as the transaction had it: the run of inserts it started must not leave an undo entry that
/// removes the row when the transaction (or a savepoint) rolls back.
#[test]
fn a_failed_insert_of_a_key_the_transaction_wrote_loses_no_row() {
    let (_dir, db) = open();
    let mut s = db.session("s");
    let reset = |s: &mut Session| {
        ok(s, "DROP TABLE IF EXISTS t");
        ok(s, "CREATE TABLE t (id int PRIMARY KEY, v int)");
        ok(s, "INSERT INTO t VALUES (1, 10), (2, 20)");
    };
    let rows = |s: &mut Session| {
        let result = ok(s, "SELECT id, v FROM t ORDER BY id");
        result
            .rows
            .iter()
            .map(|r| format!("{}={}", r[0], r[1]))
            .collect::<Vec<_>>()
            .join(" ")
    };
    // Rolled back: the committed row is back as it was.
    reset(&mut s);
    ok(&mut s, "BEGIN");
    ok(&mut s, "UPDATE t SET v = 11 WHERE id = 1");
    assert_eq!(
        run(&mut s, "INSERT INTO t VALUES (1, 99)")
            .unwrap_err()
            .code,
        "23505"
    );
    ok(&mut s, "ROLLBACK");
    assert_eq!(rows(&mut s), "1=10 2=20");
    // Back to a savepoint, then committed: the update before the savepoint stays.
    reset(&mut s);
    ok(&mut s, "BEGIN");
    ok(&mut s, "UPDATE t SET v = 11 WHERE id = 1");
    ok(&mut s, "SAVEPOINT a");
    assert_eq!(
        run(&mut s, "INSERT INTO t VALUES (1, 99)")
            .unwrap_err()
            .code,
        "23505"
    );
    ok(&mut s, "ROLLBACK TO SAVEPOINT a");
    ok(&mut s, "COMMIT");
    assert_eq!(rows(&mut s), "1=11 2=20");
    // Inserted by this transaction, then again after a savepoint: back to it keeps the first.
    reset(&mut s);
    ok(&mut s, "BEGIN");
    ok(&mut s, "INSERT INTO t VALUES (5, 50)");
    ok(&mut s, "SAVEPOINT a");
    assert_eq!(
        run(&mut s, "INSERT INTO t VALUES (4, 40), (5, 99)")
            .unwrap_err()
            .code,
        "23505"
    );
    ok(&mut s, "ROLLBACK TO SAVEPOINT a");
    ok(&mut s, "COMMIT");
    assert_eq!(rows(&mut s), "1=10 2=20 5=50");
    // A row the transaction deleted can be inserted again, and rolled back.
    reset(&mut s);
    ok(&mut s, "BEGIN");
    ok(&mut s, "DELETE FROM t WHERE id = 1");
    ok(&mut s, "INSERT INTO t VALUES (1, 12), (3, 30)");
    assert_eq!(rows(&mut s), "1=12 2=20 3=30");
    ok(&mut s, "ROLLBACK");
    assert_eq!(rows(&mut s), "1=10 2=20");
}

/// Views survive a restart with their definitions and dependencies; kept plans of a statement
/// that reads a view are bound again when the view is replaced.
#[test]
fn views_survive_a_restart_and_replacing_one_rebinds_kept_plans() {
    let dir = tempfile::tempdir().unwrap();
    let config = common::config(256);
    let db = common::open_database(dir.path(), &config);
    let mut session = db.session("s");
    ok(
        &mut session,
        "CREATE TABLE t (id integer PRIMARY KEY, v integer)",
    );
    ok(
        &mut session,
        "INSERT INTO t SELECT g, g % 3 FROM generate_series(1, 30) g",
    );
    ok(
        &mut session,
        "CREATE VIEW odd AS SELECT id FROM t WHERE id % 2 = 1",
    );
    let prepared = session.prepare("SELECT count(*) FROM odd", &[]).unwrap();
    let count = |session: &mut Session| {
        session.execute_prepared(&prepared, &[]).unwrap().rows[0][0].to_string()
    };
    assert_eq!(count(&mut session), "15");
    ok(
        &mut session,
        "CREATE OR REPLACE VIEW odd AS SELECT id FROM t WHERE id % 2 = 1 AND v = 0",
    );
    assert_eq!(
        count(&mut session),
        "5",
        "the kept plan read the old definition"
    );
    drop(session);
    drop(db);
    let db = common::open_database(dir.path(), &config);
    let mut session = db.session("s");
    assert_eq!(cell(&mut session, "SELECT count(*) FROM odd"), "5");
    let err = run(&mut session, "DROP TABLE t").unwrap_err();
    assert_eq!(err.code, "2BP01", "the dependency survives too: {err}");
}

/// currval and lastval are each session's own; sequences, their values and identity columns
/// survive a restart, and a GENERATED ALWAYS column still refuses a given value after it.
#[test]
fn sequences_and_identity_columns_survive_a_restart_and_currval_is_per_session() {
    let dir = tempfile::tempdir().unwrap();
    let config = common::config(256);
    let db = common::open_database(dir.path(), &config);
    let (mut a, mut b) = (db.session("a"), db.session("b"));
    ok(&mut a, "CREATE SEQUENCE s START WITH 5");
    ok(
        &mut a,
        "CREATE TABLE t (id integer GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v text)",
    );
    ok(&mut a, "INSERT INTO t (v) VALUES ('a'), ('b')");
    assert_eq!(cell(&mut a, "SELECT nextval('s')"), "5");
    assert_eq!(cell(&mut b, "SELECT nextval('s')"), "6");
    assert_eq!(cell(&mut a, "SELECT currval('s')"), "5");
    assert_eq!(cell(&mut b, "SELECT lastval()"), "6");
    let fresh = run(&mut db.session("c"), "SELECT currval('s')").unwrap_err();
    assert_eq!(fresh.code, "55000", "{fresh}");
    drop((a, b));
    drop(db);

    let db = common::open_database(dir.path(), &config);
    let mut session = db.session("s");
    assert_eq!(cell(&mut session, "SELECT nextval('s')"), "7");
    let inserted = ok(&mut session, "INSERT INTO t (v) VALUES ('c') RETURNING id");
    assert_eq!(inserted.rows[0][0].to_string(), "3");
    let err = run(&mut session, "INSERT INTO t VALUES (9, 'd')").unwrap_err();
    assert_eq!(err.code, "428C9", "{err}");
}

/// A hang-up noticed just before a statement starts still ends it (the hang-up watch reports a
/// client once), while a cancel request that finds the session idle is ignored, as PostgreSQL's.
#[test]
fn a_hang_up_before_a_statement_starts_ends_it_and_an_idle_cancel_does_not() {
    let (_dir, db) = open();
    let mut session = db.session("s");
    let handle = session.cancel_handle();
    handle.cancel(CancelReason::UserRequest);
    let counted = "SELECT count(*) FROM generate_series(1, 100000)";
    assert_eq!(cell(&mut session, counted), "100000");
    handle.cancel(CancelReason::ClientGone);
    let err = run(&mut session, LONG_QUERY).unwrap_err();
    assert_eq!(err.code, "08006", "{err}");
}

/// A statement of another session that names a table whose definition an open transaction has
/// changed waits for that transaction, then binds with the committed definition: the new one
/// after COMMIT, the old one after ROLLBACK — never the uncommitted one. A table created in an
/// open transaction is waited for likewise, and is gone for the waiter if it rolls back.
#[test]
fn a_statement_naming_a_table_with_uncommitted_ddl_waits_for_that_transaction() {
    let (_dir, db) = open();
    let mut ddl = db.session("ddl");
    ok(&mut ddl, "CREATE TABLE t (id integer PRIMARY KEY)");
    ok(&mut ddl, "INSERT INTO t VALUES (1)");
    for (end, columns) in [("ROLLBACK", 1), ("COMMIT", 2)] {
        ok(&mut ddl, "BEGIN");
        ok(&mut ddl, "ALTER TABLE t ADD COLUMN c integer DEFAULT 7");
        let before = db.engine().locks().stats().lock_waits;
        let reader = thread::spawn({
            let db = Arc::clone(&db);
            move || {
                ok(&mut db.session("reader"), "SELECT * FROM t")
                    .columns
                    .len()
            }
        });
        wait_for_lock_wait(&db, before);
        ok(&mut ddl, end);
        assert_eq!(reader.join().unwrap(), columns, "after {end}");
    }
    ok(&mut ddl, "BEGIN");
    ok(&mut ddl, "CREATE TABLE fresh (id integer)");
    let before = db.engine().locks().stats().lock_waits;
    let writer = thread::spawn({
        let db = Arc::clone(&db);
        move || run(&mut db.session("writer"), "INSERT INTO fresh VALUES (1)").map(|r| r.tag)
    });
    wait_for_lock_wait(&db, before);
    ok(&mut ddl, "ROLLBACK");
    assert_eq!(writer.join().unwrap().unwrap_err().code, "42P01");
}

/// Table `t (id, v)` with the row (1, 0), the session that made it, and another session whose
/// lock waits end after 150 ms (55P03).
fn table_and_impatient_session(db: &Arc<Database>) -> (Session, Session) {
    let mut holder = db.session("holder");
    ok(
        &mut holder,
        "CREATE TABLE t (id integer PRIMARY KEY, v integer)",
    );
    ok(&mut holder, "INSERT INTO t VALUES (1, 0)");
    let mut waiter = db.session("waiter");
    ok(&mut waiter, "SET lock_timeout = '150ms'");
    (holder, waiter)
}

/// `SET lock_timeout` bounds every lock wait of the session's statements: a row lock, a table's
/// lock that DDL needs, and the wait for another transaction's uncommitted DDL; each fails with
/// 55P03 and the session goes on.
#[test]
fn lock_timeout_bounds_row_table_and_ddl_waits() {
    let (_dir, db) = open();
    let (mut holder, mut waiter) = table_and_impatient_session(&db);
    ok(&mut holder, "BEGIN");
    ok(&mut holder, "UPDATE t SET v = 1 WHERE id = 1");
    for statement in [
        "UPDATE t SET v = 2 WHERE id = 1",
        "ALTER TABLE t ADD COLUMN w integer",
    ] {
        let started = Instant::now();
        let err = run(&mut waiter, statement).unwrap_err();
        assert_eq!(err.code, "55P03", "{statement}: {err}");
        assert!(started.elapsed() < Duration::from_secs(5), "{statement}");
    }
    ok(&mut holder, "ALTER TABLE t ADD COLUMN w integer");
    let err = run(&mut waiter, "SELECT * FROM t").unwrap_err();
    assert_eq!(err.code, "55P03", "{err}");
    ok(&mut holder, "COMMIT");
    assert_eq!(ok(&mut waiter, "SELECT * FROM t").columns.len(), 3);
}

/// `pg_locks` shows who holds and who awaits: the holder's table lock granted, and the waiter's
/// request for the holder's transaction (whose version the row holds) not granted, each with
/// its session's pid, as PostgreSQL's monitoring queries read them.
#[test]
fn pg_locks_shows_a_row_lock_wait_and_who_holds_the_lock() {
    let (_dir, db) = open();
    let mut holder = db.session("holder");
    ok(
        &mut holder,
        "CREATE TABLE t (id integer PRIMARY KEY, v integer)",
    );
    ok(&mut holder, "INSERT INTO t VALUES (1, 0)");
    ok(&mut holder, "BEGIN");
    ok(&mut holder, "UPDATE t SET v = 1 WHERE id = 1");
    let holder_pid = cell(&mut holder, "SELECT pg_backend_pid()");
    let before = db.engine().locks().stats().lock_waits;
    let (waiter_pid, waiter) = run_in_session(&db, "UPDATE t SET v = 2 WHERE id = 1");
    wait_for_lock_wait(&db, before);
    let mut observer = db.session("observer");
    let table_lock = ok(
        &mut observer,
        "SELECT pid, mode, granted FROM pg_locks l JOIN pg_class c ON c.oid = l.relation \
         WHERE c.relname = 't' AND l.locktype = 'relation' ORDER BY pid",
    );
    let rows = texts(&table_lock);
    assert!(
        rows.contains(&vec![
            holder_pid.clone(),
            "RowExclusiveLock".into(),
            "t".into()
        ]),
        "{rows:?}"
    );
    let waiting = ok(
        &mut observer,
        "SELECT w.pid, w.locktype, h.pid FROM pg_locks w JOIN pg_locks h \
         ON h.locktype = w.locktype AND h.relation IS NOT DISTINCT FROM w.relation \
         AND h.transactionid IS NOT DISTINCT FROM w.transactionid AND h.granted \
         WHERE NOT w.granted",
    );
    assert_eq!(
        texts(&waiting),
        [[waiter_pid, "transactionid".into(), holder_pid]],
        "the waiter awaits the holder's transaction, as in PostgreSQL (the row's version names it)"
    );
    ok(&mut holder, "COMMIT");
    waiter.join().unwrap();
    let left = ok(
        &mut observer,
        "SELECT count(*) FROM pg_locks WHERE NOT granted",
    );
    assert_eq!(left.rows[0][0].to_string(), "0");
}

/// Runs `sql` in a new session on a thread of its own; the session's pid (once it has one) and
/// the thread.
fn run_in_session(db: &Arc<Database>, sql: &'static str) -> (String, thread::JoinHandle<()>) {
    let (pid_sender, pid) = std::sync::mpsc::channel();
    let db = Arc::clone(db);
    let runner = thread::spawn(move || {
        let mut session = db.session("runner");
        let own_pid = cell(&mut session, "SELECT pg_backend_pid()");
        pid_sender.send(own_pid).unwrap();
        ok(&mut session, sql);
    });
    (pid.recv().unwrap(), runner)
}

/// Creates table `t (id integer PRIMARY KEY, v integer)` with ids 1..=`rows` and `v = id %
/// modulo`.
fn create_t(session: &mut Session, rows: u32, modulo: u32) {
    ok(
        session,
        "CREATE TABLE t (id integer PRIMARY KEY, v integer)",
    );
    ok(
        session,
        &format!("INSERT INTO t SELECT g, g % {modulo} FROM generate_series(1, {rows}) g"),
    );
}

/// The rows of a result as text.
fn texts(result: &steady_sql::QueryResult) -> Vec<Vec<String>> {
    let rows = result.rows.iter();
    rows.map(|r| r.iter().map(|v| v.to_string()).collect())
        .collect()
}

/// `steady_progress` shows an online CREATE INDEX with its session's pid while it runs (here
/// at its start, waiting for a transaction that has written to the table to end), and nothing
/// once the build is done.
#[test]
fn steady_progress_shows_a_running_index_build() {
    let (_dir, db) = open();
    let mut writer = db.session("writer");
    create_t(&mut writer, 1000, 10);
    ok(&mut writer, "BEGIN");
    ok(&mut writer, "UPDATE t SET v = 0 WHERE id = 1");
    let before = db.engine().locks().stats().lock_waits;
    let (builder_pid, builder) = run_in_session(&db, "CREATE INDEX t_v ON t (v)");
    wait_for_lock_wait(&db, before);
    let mut observer = db.session("observer");
    let shown = ok(
        &mut observer,
        "SELECT pid, relation, command, phase, tuples_done FROM steady_progress",
    );
    assert_eq!(
        texts(&shown),
        [[
            builder_pid,
            "t".into(),
            "CREATE INDEX".into(),
            "waiting for writers".into(),
            "0".into()
        ]]
    );
    ok(&mut writer, "COMMIT");
    builder.join().unwrap();
    let left = ok(&mut observer, "SELECT count(*) FROM steady_progress");
    assert_eq!(left.rows[0][0].to_string(), "0");
    let zeros = ok(&mut observer, "SELECT count(*) FROM t WHERE v = 0");
    assert_eq!(zeros.rows[0][0].to_string(), "101");
}

/// `steady_tables.live_rows` is the table's row count after every kind of write SQL makes —
/// a bulk INSERT, a DELETE through an index (one visit per leaf), an UPDATE and a DELETE of rows
/// read first, a DELETE with a subquery, a rolled-back transaction, TRUNCATE — from counters, so
/// it is exact where a sample of the leaves would not be.
#[test]
fn steady_tables_counts_the_rows_every_write_leaves() {
    let (_dir, db) = open();
    let mut session = db.session("s");
    // Large enough that a sample of its leaves would not give the exact count.
    create_t(&mut session, 60_000, 10);
    ok(&mut session, "CREATE INDEX t_v ON t (v)");
    let live = |session: &mut Session| {
        cell(
            session,
            "SELECT live_rows FROM steady_tables WHERE name = 't'",
        )
    };
    let steps = [
        "DELETE FROM t WHERE v = 3",
        "UPDATE t SET v = 3 WHERE v = 4",
        "DELETE FROM t WHERE id <= 100",
        "DELETE FROM t WHERE v = 5 AND id IN (SELECT id FROM t WHERE id % 7 = 0)",
        "INSERT INTO t SELECT g, 1 FROM generate_series(100001, 100500) g",
        "BEGIN; DELETE FROM t WHERE v = 6; ROLLBACK",
        "BEGIN; DELETE FROM t WHERE v = 7; SAVEPOINT a; DELETE FROM t WHERE v = 8; \
         ROLLBACK TO a; COMMIT",
        "TRUNCATE t",
        "INSERT INTO t VALUES (1, 1), (2, 2)",
    ];
    for step in steps {
        for statement in step.split("; ") {
            ok(&mut session, statement);
        }
        let count = cell(&mut session, "SELECT count(*) FROM t");
        assert_eq!(live(&mut session), count, "after {step}");
    }
}

/// A cancel request ends a VACUUM FULL (57014) however early it lands — while the rewrite reads
/// the table, or before it starts — and the table stays as it was; uncancelled, the rewrite
/// completes.
#[test]
fn a_cancel_request_ends_a_vacuum_full_and_leaves_the_table() {
    let (_dir, db) = open();
    let mut session = db.session("s");
    create_t(&mut session, 100000, 7);
    let canceller = cancel_once_active(&session);
    let err = run(&mut session, "VACUUM FULL t").unwrap_err();
    canceller.join().unwrap();
    assert_eq!(err.code, "57014", "{err}");
    assert_eq!(cell(&mut session, "SELECT count(*) FROM t"), "100000");
    ok(&mut session, "VACUUM FULL t");
    assert_eq!(cell(&mut session, "SELECT sum(v) FROM t"), "300000");
}

/// statement_timeout ends a CREATE INDEX and a VACUUM FULL while they read the table (57014),
/// which stays as it was.
#[test]
fn statement_timeout_ends_an_index_build_and_a_vacuum_full() {
    let (_dir, db) = open();
    let mut session = db.session("s");
    create_t(&mut session, 100000, 7);
    ok(&mut session, "SET statement_timeout = 1");
    for statement in ["CREATE INDEX t_v ON t (v)", "VACUUM FULL t"] {
        let err = run(&mut session, statement).unwrap_err();
        assert_eq!(err.code, "57014", "{statement}: {err}");
        assert!(err.message.contains("statement timeout"), "{err}");
    }
    ok(&mut session, "RESET statement_timeout");
    assert_eq!(cell(&mut session, "SELECT count(*) FROM t"), "100000");
    let indexes = "SELECT count(*) FROM pg_indexes WHERE tablename = 't'";
    assert_eq!(cell(&mut session, indexes), "1", "the primary key's only");
}

/// `DELETE ... ORDER BY <primary key> LIMIT n` (MySQL's) deletes the first n matching rows in key
/// order, also where an index whose order differs serves the WHERE clause; an order SteadyDB
/// cannot honour is refused and deletes nothing. Without ORDER BY, LIMIT takes the first rows the
/// statement's walk meets.
#[test]
fn delete_ordered_by_the_primary_key_takes_the_first_rows_in_key_order() {
    let (_dir, db) = open();
    let mut session = db.session("s");
    ok(
        &mut session,
        "CREATE TABLE t (id integer PRIMARY KEY, v integer)",
    );
    ok(
        &mut session,
        "INSERT INTO t SELECT g, 1000 - g FROM generate_series(1, 1000) g",
    );
    ok(&mut session, "CREATE INDEX t_v ON t (v)");
    ok(&mut session, "ANALYZE t");
    let statement = "DELETE FROM t WHERE v < 100 ORDER BY id LIMIT 3";
    let plan = ok(&mut session, &format!("EXPLAIN {statement}"));
    let lines: Vec<String> = plan.rows.iter().map(|row| format!("{}", row[0])).collect();
    assert_eq!(
        lines[..3],
        ["Delete on t", "  Order: primary key (id)", "  Limit: 3"],
        "{lines:?}"
    );
    assert!(lines[3].contains("Index Scan using t_v"), "{lines:?}");
    assert_eq!(ok(&mut session, statement).tag, "DELETE 3");
    assert_eq!(
        cell(
            &mut session,
            "SELECT string_agg(id::text, ',' ORDER BY id) FROM t WHERE id BETWEEN 899 AND 905"
        ),
        "899,900,904,905"
    );
    for statement in [
        "DELETE FROM t ORDER BY v LIMIT 1",
        "DELETE FROM t ORDER BY id DESC LIMIT 1",
        "DELETE FROM t ORDER BY id + 1 LIMIT 1",
    ] {
        let err = session.execute(statement).remove(0).unwrap_err();
        assert_eq!(err.code, "0A000", "{statement}: {err}");
    }
    assert_eq!(cell(&mut session, "SELECT count(*) FROM t"), "997");
    let deleted = ok(&mut session, "DELETE FROM t WHERE v < 100 LIMIT 4");
    assert_eq!(deleted.tag, "DELETE 4");
    assert_eq!(
        cell(&mut session, "SELECT count(*) FROM t WHERE v < 100"),
        "93"
    );
}

/// A write's LIMIT goes on past candidates that no longer match — index entries of old values
/// an open snapshot still reads through — a batch of candidates at a time, until it has its rows.
#[test]
fn a_write_limit_passes_stale_index_entries_until_it_has_its_rows() {
    let (_dir, db) = open();
    let mut session = db.session("s");
    ok(
        &mut session,
        "CREATE TABLE t (id integer PRIMARY KEY, v integer)",
    );
    ok(
        &mut session,
        "INSERT INTO t SELECT g, g % 100 FROM generate_series(1, 2000) g",
    );
    ok(&mut session, "CREATE INDEX t_v ON t (v)");
    ok(&mut session, "ANALYZE t");
    let mut old = db.session("old");
    ok(&mut old, "BEGIN ISOLATION LEVEL REPEATABLE READ");
    assert_eq!(cell(&mut old, "SELECT count(*) FROM t WHERE v < 5"), "100");
    ok(&mut session, "UPDATE t SET v = 500 WHERE v < 5");
    ok(&mut session, "VACUUM");
    let plan = ok(&mut session, "EXPLAIN DELETE FROM t WHERE v < 8 LIMIT 12");
    assert!(
        format!("{:?}", plan.rows).contains("Index Scan using t_v"),
        "{:?}",
        plan.rows
    );
    let deleted = ok(&mut session, "DELETE FROM t WHERE v < 8 LIMIT 12");
    assert_eq!(deleted.tag, "DELETE 12");
    assert_eq!(
        cell(
            &mut session,
            "SELECT count(*) FROM t WHERE v >= 5 AND v < 8"
        ),
        "48"
    );
    assert_eq!(cell(&mut session, "SELECT count(*) FROM t"), "1988");
    let updated = ok(&mut session, "UPDATE t SET v = v + 100 WHERE v < 8 LIMIT 5");
    assert_eq!(updated.tag, "UPDATE 5");
    assert_eq!(
        cell(&mut session, "SELECT count(*) FROM t WHERE v < 8"),
        "43"
    );
    assert_eq!(cell(&mut old, "SELECT count(*) FROM t WHERE v < 5"), "100");
    ok(&mut old, "COMMIT");
}

/// Seed 000's repeated `DELETE ... LIMIT n` with an old snapshot open, over a primary-key range:
/// each statement stops at its LIMIT instead of collecting every candidate of the range first,
/// and the rows deleted before (their delete marks moved out of the table by purge while the old
/// snapshot still reads them) are not walked again, so every statement makes about as many page
/// requests, a small part of a scan of the table.
#[test]
fn repeated_delete_limit_reads_about_as_many_pages_each_time_with_an_old_snapshot_open() {
    let (_dir, db) = open();
    let mut session = db.session("s");
    ok(
        &mut session,
        "CREATE TABLE t (id integer PRIMARY KEY, pad text)",
    );
    ok(
        &mut session,
        "INSERT INTO t SELECT g, repeat('p', 100) FROM generate_series(1, 20000) g",
    );
    let mut old = db.session("old");
    ok(&mut old, "BEGIN ISOLATION LEVEL REPEATABLE READ");
    assert_eq!(cell(&mut old, "SELECT count(*) FROM t"), "20000");
    let table_requests = page_requests(&mut session, "SELECT count(*) FROM t");
    let mut requests = Vec::new();
    for _ in 0..20 {
        requests.push(page_requests(
            &mut session,
            "DELETE FROM t WHERE id <= 10000 LIMIT 50",
        ));
        ok(&mut session, "VACUUM");
    }
    assert_eq!(cell(&mut session, "SELECT min(id) FROM t"), "1001");
    // From the second statement on, reads of deleted rows also look in the graveyard.
    let (low, high) = (
        requests[1..].iter().min().unwrap(),
        requests.iter().max().unwrap(),
    );
    assert!(
        *high <= low * 2 && high * 4 < table_requests,
        "page requests per DELETE: {requests:?}; a scan of the table: {table_requests}"
    );
    assert_eq!(cell(&mut old, "SELECT count(*) FROM t"), "20000");
    ok(&mut old, "COMMIT");
}

/// CHECKPOINT writes every page changed before it and moves the redo point to the log's end:
/// recovery would replay nothing of the writes before it. It also runs inside a transaction
/// block, as PostgreSQL's does.
#[test]
fn checkpoint_leaves_no_redo_to_replay() {
    let (_dir, db) = open();
    let mut session = db.session("checkpointer");
    let age = "SELECT value FROM steady_metrics WHERE name = 'wal_checkpoint_age'";
    create_t(&mut session, 1000, 10);
    // Purge's work for the insert first, so that no background redo follows the checkpoint.
    while db.engine().purge().unwrap() > 0 {}
    assert_ne!(
        cell(&mut session, age),
        "0",
        "the rows' redo is not checkpointed yet"
    );
    assert_eq!(ok(&mut session, "CHECKPOINT").tag, "CHECKPOINT");
    assert_eq!(cell(&mut session, age), "0");
    ok(&mut session, "BEGIN");
    ok(&mut session, "UPDATE t SET v = v + 1");
    ok(&mut session, "CHECKPOINT");
    ok(&mut session, "COMMIT");
    assert_eq!(cell(&mut session, "SELECT sum(v) FROM t"), "5500");
    let err = run(&mut session, "CHECKPOINT now").unwrap_err();
    assert_eq!(err.code, "42601");
}

/// The buffer pool's page requests made while `sql` ran.
fn page_requests(session: &mut Session, sql: &str) -> u64 {
    let metric = "SELECT value FROM steady_metrics WHERE name = 'buffer_pool_read_requests'";
    let before: u64 = cell(session, metric).parse().unwrap();
    ok(session, sql);
    let after: u64 = cell(session, metric).parse().unwrap();
    after - before
}

/// A DELETE through an index deletes the rows it sees in place in one visit of their leaves, and
/// leaves the others to the locking path: a row locked by another session makes it wait, a row
/// that session changed is checked again on its newest version (READ COMMITTED), and under
/// REPEATABLE READ a row changed after the snapshot fails it with 40001.
#[test]
fn a_delete_in_place_leaves_locked_and_changed_rows_to_the_locking_path() {
    let (_dir, db) = open();
    let mut holder = db.session("holder");
    create_t(&mut holder, 1000, 10);
    ok(&mut holder, "CREATE INDEX t_v ON t (v)");
    ok(&mut holder, "BEGIN");
    ok(&mut holder, "SELECT * FROM t WHERE id = 505 FOR UPDATE");
    ok(&mut holder, "UPDATE t SET v = 7 WHERE id = 525");
    let waits_before = db.engine().locks().stats().lock_waits;
    let deleter = Arc::clone(&db);
    let waiter = thread::spawn(move || {
        let mut session = deleter.session("waiter");
        ok(&mut session, "DELETE FROM t WHERE v = 5").tag
    });
    wait_for_lock_wait(&db, waits_before);
    ok(&mut holder, "COMMIT");
    assert_eq!(waiter.join().unwrap(), "DELETE 99");
    assert_eq!(cell(&mut holder, "SELECT count(*) FROM t WHERE v = 5"), "0");
    assert_eq!(cell(&mut holder, "SELECT v FROM t WHERE id = 525"), "7");
    assert_eq!(cell(&mut holder, "SELECT count(*) FROM t"), "901");

    let mut reader = db.session("reader");
    ok(&mut reader, "BEGIN ISOLATION LEVEL REPEATABLE READ");
    assert_eq!(
        cell(&mut reader, "SELECT count(*) FROM t WHERE v = 3"),
        "100"
    );
    ok(&mut holder, "UPDATE t SET v = 3 WHERE id = 993");
    let err = run(&mut reader, "DELETE FROM t WHERE v = 3").unwrap_err();
    assert_eq!(err.code, "40001", "{err}");
    ok(&mut reader, "ROLLBACK");
    assert_eq!(
        cell(&mut holder, "SELECT count(*) FROM t WHERE v = 3"),
        "100"
    );
}

/// An error in the WHERE clause part-way through a DELETE that deletes rows in place (division
/// by zero on one row) fails the statement and leaves every row, those deleted before it too.
#[test]
fn an_error_part_way_through_a_delete_in_place_leaves_every_row() {
    let (_dir, db) = open();
    let mut session = db.session("s");
    create_t(&mut session, 10_000, 10);
    ok(&mut session, "CREATE INDEX t_v ON t (v)");
    let err = run(
        &mut session,
        "DELETE FROM t WHERE v = 5 AND 1 / (id - 5005) > -2",
    )
    .unwrap_err();
    assert_eq!(err.code, "22012", "{err}");
    assert_eq!(
        cell(&mut session, "SELECT count(*) FROM t WHERE v = 5"),
        "1000"
    );
    ok(&mut session, "DELETE FROM t WHERE v = 5 AND id < 5005");
    assert_eq!(
        cell(&mut session, "SELECT count(*) FROM t WHERE v = 5"),
        "500"
    );
}

/// `LOCK TABLE` holds the table until the block ends, as pg_dump relies on: in ACCESS SHARE
/// mode DDL on it waits (here until `lock_timeout`) while its writers go on; in EXCLUSIVE mode
/// its writers wait too and its readers still go on; at COMMIT both go through.
#[test]
fn lock_table_keeps_ddl_or_writers_out_until_the_block_ends() {
    let (_dir, db) = open();
    let (mut holder, mut other) = table_and_impatient_session(&db);

    ok(&mut holder, "BEGIN");
    ok(&mut holder, "LOCK TABLE t IN ACCESS SHARE MODE");
    for ddl in [
        "DROP TABLE t",
        "TRUNCATE t",
        "ALTER TABLE t ADD COLUMN w integer",
    ] {
        let err = run(&mut other, ddl).unwrap_err();
        assert_eq!(err.code, "55P03", "{ddl}: {err}");
    }
    ok(&mut other, "INSERT INTO t VALUES (2, 0)");
    ok(&mut holder, "COMMIT");

    ok(&mut holder, "BEGIN");
    ok(&mut holder, "LOCK TABLE t IN EXCLUSIVE MODE");
    let err = run(&mut other, "UPDATE t SET v = 1 WHERE id = 1").unwrap_err();
    assert_eq!(err.code, "55P03", "{err}");
    assert_eq!(cell(&mut other, "SELECT count(*) FROM t"), "2");
    ok(&mut holder, "COMMIT");

    ok(&mut other, "UPDATE t SET v = 1 WHERE id = 1");
    ok(&mut other, "DROP TABLE t");
}

/// A role that is not a superuser sees its own sessions' statements in `pg_stat_activity` and
/// `<insufficient privilege>` for other roles', as in PostgreSQL; a superuser sees them all.
#[test]
fn pg_stat_activity_hides_other_roles_statements_from_ordinary_roles() {
    let (_dir, db) = open();
    let mut admin = db.session("steady");
    ok(&mut admin, "CREATE ROLE alice LOGIN");
    let mut alice = db.session("alice");
    let shown = |session: &mut Session, user: &str| {
        let sql = format!("SELECT query FROM pg_stat_activity WHERE usename = '{user}'");
        ok(session, &sql).rows[0][0].to_string()
    };
    assert_eq!(shown(&mut alice, "steady"), "<insufficient privilege>");
    assert!(shown(&mut alice, "alice").starts_with("SELECT query"));
    assert!(shown(&mut admin, "alice").starts_with("SELECT query"));
}

fn deferred_tables(session: &mut Session) {
    ok(session, "CREATE TABLE p (id integer PRIMARY KEY)");
    ok(
        session,
        "CREATE TABLE c (id integer PRIMARY KEY, p integer REFERENCES p DEFERRABLE INITIALLY DEFERRED)",
    );
}

#[test]
fn a_deferred_foreign_key_finds_a_parent_another_session_commits_before_the_commit() {
    let (_dir, db) = open();
    let mut a = db.session("a");
    let mut b = db.session("b");
    deferred_tables(&mut a);
    ok(&mut a, "BEGIN");
    ok(&mut a, "INSERT INTO c VALUES (1, 10)");
    ok(&mut b, "INSERT INTO p VALUES (10)");
    ok(&mut a, "COMMIT");
    assert_eq!(cell(&mut b, "SELECT count(*) FROM c WHERE p = 10"), "1");
}

#[test]
fn a_parent_delete_deferred_to_the_commit_keeps_the_parent_locked_until_its_check_fails() {
    let (_dir, db) = open();
    let mut a = db.session("a");
    let mut b = db.session("b");
    deferred_tables(&mut a);
    ok(&mut a, "INSERT INTO p VALUES (10)");
    ok(&mut a, "INSERT INTO c VALUES (1, 10)");
    ok(&mut a, "BEGIN");
    ok(&mut a, "DELETE FROM p WHERE id = 10");
    let waits_before = db.engine().locks().stats().lock_waits;
    let inserter = thread::spawn(move || {
        let result = run(&mut b, "INSERT INTO c VALUES (2, 10)");
        (b, result)
    });
    wait_for_lock_wait(&db, waits_before);
    let err = run(&mut a, "COMMIT").unwrap_err();
    assert_eq!(err.code, "23503", "{err}");
    let (mut b, inserted) = inserter.join().unwrap();
    inserted.expect("the child finds its parent once the delete is rolled back");
    assert_eq!(cell(&mut b, "SELECT count(*) FROM p"), "1");
    assert_eq!(cell(&mut b, "SELECT count(*) FROM c WHERE p = 10"), "2");
}

#[test]
fn a_refresh_in_progress_leaves_other_sessions_the_rows_of_the_last_one() {
    let (_dir, db) = open();
    let mut a = db.session("a");
    let mut b = db.session("b");
    ok(&mut a, "CREATE TABLE src (id integer PRIMARY KEY)");
    ok(&mut a, "INSERT INTO src SELECT generate_series(1, 10)");
    ok(
        &mut a,
        "CREATE MATERIALIZED VIEW counted AS SELECT count(*) AS n FROM src",
    );
    ok(&mut a, "INSERT INTO src SELECT generate_series(11, 15)");
    ok(&mut a, "BEGIN");
    ok(&mut a, "REFRESH MATERIALIZED VIEW counted");
    assert_eq!(cell(&mut a, "SELECT n FROM counted"), "15");
    assert_eq!(cell(&mut b, "SELECT n FROM counted"), "10");
    ok(&mut a, "COMMIT");
    assert_eq!(cell(&mut b, "SELECT n FROM counted"), "15");
}
