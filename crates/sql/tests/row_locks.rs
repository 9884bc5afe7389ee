//! `SELECT ... FOR UPDATE / FOR SHARE` between sessions: SKIP LOCKED hands each worker its own
//! row and locks no more than LIMIT returns, NOWAIT fails at once (55P03), shared locks share,
//! READ COMMITTED returns a row's newest version if it still matches, REPEATABLE READ fails
//! with 40001, and a READ ONLY transaction refuses to lock (25006).

mod common;
#[path = "common/sessions.rs"]
mod session_helpers;

use session_helpers::{ok, run};

use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use steady_sql::{Database, Session};

fn open() -> (tempfile::TempDir, Arc<Database>) {
    session_helpers::open(1024)
}

/// The rows of a query, each as its cells' text joined by `|`.
fn rows(session: &mut Session, sql: &str) -> Vec<String> {
    ok(session, sql)
        .rows
        .iter()
        .map(|row| {
            row.iter()
                .map(|v| v.to_string())
                .collect::<Vec<_>>()
                .join("|")
        })
        .collect()
}

fn jobs(db: &Arc<Database>, count: u32) -> Session {
    let mut setup = db.session("setup");
    ok(
        &mut setup,
        "CREATE TABLE jobs (id integer PRIMARY KEY, state text NOT NULL, v integer)",
    );
    ok(
        &mut setup,
        &format!("INSERT INTO jobs SELECT g, 'new', g FROM generate_series(1, {count}) g"),
    );
    setup
}

/// Waits until the lock manager has counted `waits` waits in all (another session is blocked).
fn until_lock_waits(db: &Database, waits: u64) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while db.engine().locks().stats().lock_waits < waits {
        assert!(Instant::now() < deadline, "no session started waiting");
        thread::sleep(Duration::from_millis(1));
    }
}

const NEXT_JOB: &str =
    "SELECT id FROM jobs WHERE state = 'new' ORDER BY id LIMIT 1 FOR UPDATE SKIP LOCKED";

#[test]
fn skip_locked_hands_each_worker_its_own_job_and_locks_only_the_row_returned() {
    let (_dir, db) = open();
    let _setup = jobs(&db, 10);
    let mut workers: Vec<Session> = (0..3).map(|i| db.session(&format!("w{i}"))).collect();
    let mut taken = Vec::new();
    for worker in &mut workers {
        ok(worker, "BEGIN");
        taken.extend(rows(worker, NEXT_JOB));
    }
    assert_eq!(taken, ["1", "2", "3"]);

    ok(
        &mut workers[0],
        "UPDATE jobs SET state = 'done' WHERE id = 1",
    );
    ok(&mut workers[0], "COMMIT");
    let mut late = db.session("late");
    ok(&mut late, "BEGIN");
    assert_eq!(rows(&mut late, NEXT_JOB), ["4"]);

    // Rows past each worker's LIMIT were never locked: another session takes them at once.
    let mut other = db.session("other");
    let free = "SELECT id FROM jobs WHERE id >= 5 ORDER BY id FOR UPDATE NOWAIT";
    assert_eq!(rows(&mut other, free).len(), 6);
    assert_eq!(rows(&mut other, NEXT_JOB), ["5"]);
}

#[test]
fn nowait_fails_at_once_on_a_held_row_and_shared_locks_share() {
    let (_dir, db) = open();
    let _setup = jobs(&db, 3);
    let (mut a, mut b, mut c) = (db.session("a"), db.session("b"), db.session("c"));
    ok(&mut a, "BEGIN");
    assert_eq!(
        rows(&mut a, "SELECT v FROM jobs WHERE id = 1 FOR SHARE"),
        ["1"]
    );
    ok(&mut b, "BEGIN");
    let shared = "SELECT v FROM jobs WHERE id = 1 FOR SHARE NOWAIT";
    assert_eq!(rows(&mut b, shared), ["1"]);

    let started = Instant::now();
    let err = run(&mut c, "SELECT v FROM jobs WHERE id = 1 FOR UPDATE NOWAIT").unwrap_err();
    assert_eq!(err.code, "55P03", "{err}");
    assert_eq!(
        err.message,
        "could not obtain lock on row in relation \"jobs\""
    );
    assert!(started.elapsed() < Duration::from_secs(1));
    let skipped = "SELECT id FROM jobs ORDER BY id FOR UPDATE SKIP LOCKED";
    assert_eq!(rows(&mut c, skipped), ["2", "3"]);

    ok(&mut a, "COMMIT");
    ok(&mut b, "COMMIT");
    let locked = "SELECT v FROM jobs WHERE id = 1 FOR UPDATE NOWAIT";
    assert_eq!(rows(&mut c, locked), ["1"]);
}

#[test]
fn a_writer_waits_for_a_share_lock_and_a_locker_for_a_writer() {
    let (_dir, db) = open();
    let _setup = jobs(&db, 1);
    let (mut reader, mut writer) = (db.session("reader"), db.session("writer"));
    ok(&mut reader, "BEGIN");
    ok(&mut reader, "SELECT v FROM jobs WHERE id = 1 FOR SHARE");
    let waits = db.engine().locks().stats().lock_waits;
    let update = thread::spawn(move || {
        ok(&mut writer, "UPDATE jobs SET v = v + 10 WHERE id = 1");
        writer
    });
    until_lock_waits(&db, waits + 1);
    // The reader's lock stands while the writer waits: the row still reads as before.
    assert_eq!(rows(&mut reader, "SELECT v FROM jobs WHERE id = 1"), ["1"]);
    ok(&mut reader, "COMMIT");
    let mut writer = update.join().unwrap();

    ok(&mut writer, "BEGIN");
    ok(&mut writer, "UPDATE jobs SET v = v + 100 WHERE id = 1");
    let waits = db.engine().locks().stats().lock_waits;
    let locker = thread::spawn(move || {
        let seen = rows(&mut reader, "SELECT v FROM jobs WHERE id = 1 FOR UPDATE");
        (reader, seen)
    });
    until_lock_waits(&db, waits + 1);
    ok(&mut writer, "COMMIT");
    let (_, seen) = locker.join().unwrap();
    assert_eq!(seen, ["111"], "the locker returns the row as committed");
}

#[test]
fn read_committed_returns_the_newest_row_only_if_it_still_matches() {
    let (_dir, db) = open();
    let _setup = jobs(&db, 4);
    let (mut a, mut b) = (db.session("a"), db.session("b"));
    ok(&mut a, "BEGIN");
    ok(&mut a, "UPDATE jobs SET state = 'done' WHERE id = 2");
    ok(&mut a, "UPDATE jobs SET v = 30 WHERE id = 3");
    let waits = db.engine().locks().stats().lock_waits;
    let locker = thread::spawn(move || {
        let sql = "SELECT id, v FROM jobs WHERE state = 'new' ORDER BY id FOR UPDATE";
        rows(&mut b, sql)
    });
    until_lock_waits(&db, waits + 1);
    ok(&mut a, "COMMIT");
    assert_eq!(locker.join().unwrap(), ["1|1", "3|30", "4|4"]);
}

#[test]
fn repeatable_read_fails_to_lock_a_row_changed_since_its_snapshot() {
    let (_dir, db) = open();
    let _setup = jobs(&db, 2);
    let (mut a, mut b) = (db.session("a"), db.session("b"));
    ok(&mut a, "BEGIN ISOLATION LEVEL REPEATABLE READ");
    assert_eq!(rows(&mut a, "SELECT count(*) FROM jobs"), ["2"]);
    ok(&mut b, "UPDATE jobs SET v = 20 WHERE id = 2");
    assert_eq!(
        rows(&mut a, "SELECT v FROM jobs WHERE id = 1 FOR UPDATE"),
        ["1"]
    );
    let err = run(&mut a, "SELECT v FROM jobs WHERE id = 2 FOR UPDATE").unwrap_err();
    assert_eq!(err.code, "40001", "{err}");
    ok(&mut a, "ROLLBACK");
}

#[test]
fn locking_clauses_refuse_what_they_cannot_lock() {
    let (_dir, db) = open();
    let mut s = jobs(&db, 2);
    let refused = [
        ("SELECT count(*) FROM jobs FOR UPDATE", "0A000"),
        ("SELECT DISTINCT state FROM jobs FOR SHARE", "0A000"),
        ("SELECT state FROM jobs GROUP BY state FOR UPDATE", "0A000"),
        ("SELECT * FROM jobs a, jobs b FOR UPDATE", "0A000"),
        ("SELECT * FROM (SELECT * FROM jobs) s FOR UPDATE", "0A000"),
        ("SELECT row_number() OVER () FROM jobs FOR UPDATE", "0A000"),
        ("VALUES (1) FOR UPDATE", "0A000"),
        ("SELECT * FROM jobs FOR UPDATE OF other", "42P01"),
    ];
    for (sql, code) in refused {
        let err = run(&mut s, sql).unwrap_err();
        assert_eq!(err.code, code, "{sql}: {err}");
    }
    assert_eq!(
        rows(
            &mut s,
            "SELECT j.id FROM jobs j ORDER BY 1 DESC FOR UPDATE OF j"
        ),
        ["2", "1"]
    );
    ok(&mut s, "BEGIN READ ONLY");
    let err = run(&mut s, "SELECT * FROM jobs FOR SHARE").unwrap_err();
    assert_eq!(err.code, "25006", "{err}");
    ok(&mut s, "ROLLBACK");
}
