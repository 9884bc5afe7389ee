//! SIGKILL of `steady serve` while a client runs DDL — CREATE INDEX, ALTER TABLE (ADD COLUMN
//! with a constant and a volatile default, ALTER COLUMN TYPE, DROP COLUMN), CREATE TABLE AS,
//! VACUUM FULL, TRUNCATE and DROP, on their own and inside a transaction block — then a restart
//! on the same directory: the rows are all there, every table the catalog holds can be read, no
//! data file is left that no table uses (once purge has finished the committed drops), and
//! `steady check` accepts the stopped directory, its pages and every index against its table.
//! Needs psql from PostgreSQL 15 (scripts/test.sh installs it).

mod common;

use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::serve;

const PSQL: &str = "/usr/lib/postgresql/15/bin/psql";
const ROWS: i64 = 20_000;
const CYCLES: u64 = 4;

fn query(port: u16, sql: &str) -> String {
    let output = Command::new(PSQL)
        .args(["-X", "-h", "127.0.0.1", "-p", &port.to_string()])
        .args(["-U", "steady", "-d", "postgres", "-Atc", sql])
        .output()
        .expect("run psql");
    assert!(
        output.status.success(),
        "psql {sql}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}

/// Round `i` of DDL on `base` and a side table of its own.
fn round(i: u64) -> String {
    format!(
        "CREATE INDEX base_v_{i} ON base (v);
ALTER TABLE base ADD COLUMN c_{i} integer DEFAULT {i};
ALTER TABLE base ALTER COLUMN c_{i} TYPE bigint;
ALTER TABLE base ADD COLUMN r_{i} double precision DEFAULT random();
CREATE TABLE side_{i} AS SELECT id, v FROM base WHERE id % 3 = 0;
CREATE UNIQUE INDEX side_{i}_id ON side_{i} (id);
VACUUM FULL side_{i};
BEGIN;
DROP INDEX base_v_{i};
ALTER TABLE base DROP COLUMN c_{i};
TRUNCATE side_{i};
INSERT INTO side_{i} SELECT id, v FROM base WHERE id % 5 = 0;
COMMIT;
DROP TABLE side_{i};
ALTER TABLE base DROP COLUMN r_{i};
"
    )
}

/// Runs rounds of DDL from `first` on and kills the server after `after`.
fn run_until_killed(port: u16, first: u64, server: &mut Child, after: Duration) {
    let mut client = Command::new(PSQL)
        .args(["-X", "-q", "-h", "127.0.0.1", "-p", &port.to_string()])
        .args(["-U", "steady", "-d", "postgres", "-v", "ON_ERROR_STOP=1"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("psql");
    let script: String = (first..first + 200).map(round).collect();
    let mut stdin = client.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(script.as_bytes());
    });
    std::thread::sleep(after);
    server.kill().expect("SIGKILL the server");
    server.wait().unwrap();
    let _ = client.wait();
    let _ = writer.join();
}

/// The data files in `dir` (trash files being reclaimed are not counted).
fn space_files(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.starts_with("space_") && name.ends_with(".sdb")
        })
        .count()
}

/// Checks the restarted database: `base` whole and readable through every index, every table
/// readable, and, once purge has carried out the committed drops, one data file per table and
/// the system's.
fn check_consistent(port: u16, dir: &Path) {
    assert_eq!(
        query(port, "SELECT count(*), sum(v) FROM base"),
        format!("{ROWS}|{}", (1..=ROWS).map(|i| i % 50).sum::<i64>())
    );
    assert_eq!(query(port, "SELECT count(*) FROM base WHERE v = 7"), "400");
    let tables = query(port, "SELECT relname FROM pg_class WHERE relkind = 'r'");
    for table in tables.lines() {
        query(port, &format!("SELECT count(*) FROM {table}"));
    }
    let columns = query(
        port,
        "SELECT count(*) FROM information_schema.columns WHERE table_name = 'base'",
    );
    eprintln!("restarted: tables {tables:?}, base has {columns} columns");
    let expected = 1 + tables.lines().count();
    let deadline = Instant::now() + Duration::from_secs(60);
    while space_files(dir) != expected {
        assert!(
            Instant::now() < deadline,
            "{} data files for {expected} (tables: {tables})",
            space_files(dir)
        );
        std::thread::yield_now();
    }
}

fn stop(server: &mut Child) {
    unsafe { libc::kill(server.id() as i32, libc::SIGTERM) };
    assert!(server.wait().unwrap().success());
}

#[test]
fn sigkill_during_ddl_leaves_a_consistent_schema_and_no_orphan_file() {
    assert!(
        Path::new(PSQL).exists(),
        "psql 15 is needed: apt-get install postgresql-15 (scripts/test.sh does)"
    );
    let dir = tempfile::tempdir().unwrap();
    let (mut server, port, _) = serve(dir.path());
    query(
        port,
        "CREATE TABLE base (id integer PRIMARY KEY, v integer NOT NULL)",
    );
    query(
        port,
        &format!("INSERT INTO base SELECT g, g % 50 FROM generate_series(1, {ROWS}) g"),
    );
    query(port, "CREATE INDEX base_v ON base (v)");
    let mut port = port;
    for cycle in 0..CYCLES {
        let after = Duration::from_millis(400 + 350 * cycle);
        run_until_killed(port, 1 + cycle * 1000, &mut server, after);
        (server, port, _) = serve(dir.path());
        check_consistent(port, dir.path());
        stop(&mut server);
        let check = Command::new(env!("CARGO_BIN_EXE_steady"))
            .args(["check", dir.path().to_str().unwrap()])
            .output()
            .unwrap();
        let report = String::from_utf8_lossy(&check.stdout);
        assert!(check.status.success(), "cycle {cycle}: {report}");
        assert!(report.contains(" 0 problems"), "cycle {cycle}: {report}");
        (server, port, _) = serve(dir.path());
    }
    stop(&mut server);
}
