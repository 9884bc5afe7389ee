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

/// `[heap_blks_read, heap_blks_hit, idx_blks_read, idx_blks_hit]` of `table`, then per index
/// (by name) `[idx_blks_read, idx_blks_hit]`.
fn blocks(session: &mut Session, table: &str) -> (Vec<i64>, Vec<(String, Vec<i64>)>) {
    let int = |v: &steady_types::Value| v.to_string().parse::<i64>().unwrap();
    let sql = format!(
        "SELECT heap_blks_read, heap_blks_hit, idx_blks_read, idx_blks_hit \
         FROM pg_statio_user_tables WHERE relname = '{table}'"
    );
    let rows = ok(session, &sql).rows;
    assert_eq!(rows.len(), 1, "{rows:?}");
    let of_table = rows[0].iter().map(int).collect();
    let sql = format!(
        "SELECT indexrelname, idx_blks_read, idx_blks_hit FROM pg_statio_user_indexes \
         WHERE relname = '{table}' ORDER BY indexrelname"
    );
    let of_indexes = ok(session, &sql)
        .rows
        .iter()
        .map(|row| (row[0].to_string(), row[1..].iter().map(int).collect()))
        .collect();
    (of_table, of_indexes)
}

fn minus(after: &[i64], before: &[i64]) -> Vec<i64> {
    after.iter().zip(before).map(|(a, b)| a - b).collect()
}

#[test]
fn pg_statio_counts_each_trees_pages_found_in_the_pool_and_read_from_the_file() {
    // Without background purge: its first pass samples every table (its row counts), and those
    // page requests would land between this test's samples.
    let dir = tempfile::tempdir().unwrap();
    let config = EngineConfig {
        background_purge: false,
        ..common::config(4096)
    };
    let db = common::open_database(dir.path(), &config);
    let mut session = db.session("s");
    ok(
        &mut session,
        "CREATE TABLE t (id integer PRIMARY KEY, v integer, pad text)",
    );
    ok(&mut session, "CREATE INDEX t_v ON t (v)");
    ok(&mut session, "CREATE TABLE bare (x integer)");
    // About 600 KB of rows: a clustered tree of two levels (a branch root over its leaves).
    ok(
        &mut session,
        "INSERT INTO t SELECT g, g % 50, repeat('x', 100) FROM generate_series(1, 5000) g",
    );
    let (before, _) = blocks(&mut session, "t");
    // One row by its key: the root (the primary key's block) and one leaf (a heap block).
    ok(&mut session, "SELECT pad FROM t WHERE id = 77");
    let (after, indexes) = blocks(&mut session, "t");
    assert_eq!(minus(&after, &before), [0, 1, 0, 1]);
    let names: Vec<&str> = indexes.iter().map(|(name, _)| name.as_str()).collect();
    assert_eq!(names, ["t_pkey", "t_v"]);
    // Through the secondary index: its own pages, then the rows' leaves.
    let t_v_before = indexes[1].1.clone();
    ok(&mut session, "SELECT pad FROM t WHERE v = 7");
    let (later, indexes) = blocks(&mut session, "t");
    let t_v = minus(&indexes[1].1, &t_v_before);
    assert!(t_v[0] == 0 && t_v[1] >= 2, "t_v: {t_v:?}");
    assert!(minus(&later, &after)[1] >= 1, "{later:?} {after:?}");
    // A table without indexes has NULL idx_blks_* and no index rows, as in PostgreSQL.
    let rows = ok(
        &mut session,
        "SELECT idx_blks_read IS NULL, idx_blks_hit IS NULL, toast_blks_read IS NULL \
         FROM pg_statio_user_tables WHERE relname = 'bare'",
    )
    .rows;
    assert_eq!(
        rows[0].iter().map(|v| v.to_string()).collect::<Vec<_>>(),
        ["t", "t", "t"]
    );
    // A full scan of the cached table finds each leaf in the pool.
    let scan = "SELECT count(*) FROM t WHERE pad <> ''";
    ok(&mut session, scan);
    let (first, _) = blocks(&mut session, "t");
    ok(&mut session, scan);
    let (second, _) = blocks(&mut session, "t");
    let leaves = minus(&second, &first);
    assert!(leaves[1] > 30 && leaves[0] == 0, "{leaves:?}");
    // The walk steps from leaf to leaf through their parent: the primary key's branch pages.
    assert!(leaves[2] == 0 && leaves[3] >= leaves[1], "{leaves:?}");
    drop(session);
    drop(db);

    // Reopened with a pool smaller than the table, the same scan reads leaves from the file,
    // and every leaf is counted once, read or found.
    let small = EngineConfig {
        background_purge: false,
        ..common::config(32)
    };
    let db = common::open_database(dir.path(), &small);
    let mut session = db.session("s");
    let (start, _) = blocks(&mut session, "t");
    ok(&mut session, scan);
    let (cold, _) = blocks(&mut session, "t");
    let counted = minus(&cold, &start);
    assert!(counted[0] > 0, "{counted:?}");
    assert_eq!(counted[0] + counted[1], leaves[1], "{counted:?}");
}
