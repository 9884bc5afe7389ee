//! Any text as SQL, run by one session of a database with a few tables: each statement gives a
//! result or an error with a SQLSTATE — never a panic. Statements time out after a second, so
//! that a runaway query (a huge series, a cross product) ends as an error.
#![no_main]

use std::sync::{Mutex, OnceLock};

use libfuzzer_sys::fuzz_target;
use steady_sql::Session;

const SETUP: &str = "
    SET statement_timeout = '1s';
    CREATE TABLE t (a integer PRIMARY KEY, b text, c numeric, d timestamptz, e jsonb);
    CREATE INDEX t_b ON t (b);
    CREATE TABLE u (a integer, b text);
    INSERT INTO t SELECT g, 'x' || g, g / 3.0, now(), '{\"k\": 1}' FROM generate_series(1, 50) g;
    INSERT INTO u SELECT g % 7, 'y' FROM generate_series(1, 20) g;
";

/// The session every input runs in, on a database in a temporary directory (left behind when
/// the fuzzer exits: the session is never dropped).
fn session() -> &'static Mutex<Session> {
    static SESSION: OnceLock<(tempfile::TempDir, Mutex<Session>)> = OnceLock::new();
    &SESSION
        .get_or_init(|| {
            let (dir, db) = steady_fuzz::database("fuzz", "fuzz", SETUP);
            let session = db.session("fuzz");
            (dir, Mutex::new(session))
        })
        .1
}

fuzz_target!(|text: &str| {
    let mut session = session()
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let _ = session.execute(text);
    let _ = session.execute("ROLLBACK");
});
