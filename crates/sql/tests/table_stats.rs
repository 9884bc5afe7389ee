//! `pg_stat_user_tables`: what statements did to each table since the server started.

mod common;

use steady_engine::engine::EngineConfig;
use steady_sql::{QueryResult, Session};

fn ok(session: &mut Session, sql: &str) -> QueryResult {
    let result = session.execute(sql).pop().expect("a statement");
    result.unwrap_or_else(|err| panic!("{sql}: {err}"))
}

const FIGURES: &str = "SELECT seq_scan, seq_tup_read, idx_scan, idx_tup_fetch, n_tup_ins, \
     n_tup_upd, n_tup_del, n_live_tup, n_dead_tup, analyze_count, last_analyze IS NOT NULL, \
     vacuum_count, last_vacuum IS NOT NULL FROM pg_stat_user_tables WHERE relname = $1";

fn figures(session: &mut Session, table: &str) -> Vec<String> {
    let sql = FIGURES.replace("$1", &format!("'{table}'"));
    let rows = ok(session, &sql).rows;
    assert_eq!(rows.len(), 1, "{table}: {rows:?}");
    rows[0].iter().map(|v| v.to_string()).collect()
}

#[test]
fn pg_stat_user_tables_counts_scans_row_writes_and_maintenance_of_each_table() {
    // Without background purge, so the delete marks stay until VACUUM.
    let dir = tempfile::tempdir().unwrap();
    let config = EngineConfig {
        background_purge: false,
        ..common::config(1024)
    };
    let db = common::open_database(dir.path(), &config);
    let mut session = db.session("s");
    ok(
        &mut session,
        "CREATE TABLE a (id integer PRIMARY KEY, v integer)",
    );
    ok(&mut session, "CREATE TABLE b (id integer PRIMARY KEY)");
    ok(
        &mut session,
        "INSERT INTO a SELECT g, g % 10 FROM generate_series(1, 100) g",
    );
    // Through the primary key: 30 rows updated.
    ok(&mut session, "UPDATE a SET v = v + 1 WHERE id <= 30");
    // A full scan: v = 5 is 4, 14, 24 (updated) and 35, 45, ..., 95.
    ok(&mut session, "DELETE FROM a WHERE v = 5");
    // A full scan reading the 90 rows left, then one row by key.
    ok(&mut session, "SELECT id FROM a WHERE v > 100");
    ok(&mut session, "SELECT * FROM a WHERE id = 50");
    ok(&mut session, "ANALYZE a");
    let expected = [
        "2", "90", "2", "1", "100", "30", "10", "90", "10", "1", "t", "0", "f",
    ];
    assert_eq!(figures(&mut session, "a"), expected);
    let untouched = [
        "0", "0", "0", "0", "0", "0", "0", "0", "0", "0", "f", "0", "f",
    ];
    assert_eq!(figures(&mut session, "b"), untouched);
    // Another session's counts reach the view at the latest when it ends.
    let mut other = db.session("other");
    ok(&mut other, "INSERT INTO b VALUES (1), (2)");
    drop(other);
    assert_eq!(figures(&mut session, "b")[4], "2");
    // VACUUM purges the ten delete marks and is counted.
    ok(&mut session, "VACUUM a");
    let after = figures(&mut session, "a");
    assert_eq!(
        (after[8].as_str(), after[11].as_str(), after[12].as_str()),
        ("0", "1", "t")
    );
}
