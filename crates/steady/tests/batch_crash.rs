//! SIGKILL of `steady serve` while transactions UPDATE a tenth of a table through an index (the
//! batched write path: rows read, locked and written in runs) and DELETE a row each, then a
//! restart on the same directory: every transaction is all or nothing, and every commit psql
//! saw acknowledged is there. Needs psql from PostgreSQL 15 (scripts/test.sh installs it).

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::serve;

const PSQL: &str = "/usr/lib/postgresql/15/bin/psql";
const ROWS: i64 = 20_000;
const CYCLES: u64 = 2;

fn psql(port: u16) -> Command {
    let mut command = Command::new(PSQL);
    command.args([
        "-X",
        "-h",
        "127.0.0.1",
        "-p",
        &port.to_string(),
        "-U",
        "steady",
    ]);
    command.args(["-d", "postgres"]);
    command
}

fn query(port: u16, sql: &str) -> String {
    let output = psql(port).args(["-Atc", sql]).output().expect("run psql");
    assert!(
        output.status.success(),
        "psql {sql}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}

/// Transaction `i`: adds one to `w` of every row of class `i % 10` (a tenth of the table, found
/// through the index on `v`) and deletes row `ROWS + 1 - i` (`i` counts from 1).
fn transaction(i: i64) -> String {
    format!(
        "BEGIN;\nUPDATE b SET w = w + 1 WHERE v = {};\nDELETE FROM b WHERE id = {};\nCOMMIT;\n",
        i % 10,
        ROWS + 1 - i
    )
}

/// Runs transactions from `first` on until the server dies; returns how many commits psql saw
/// acknowledged.
fn run_until_killed(
    port: u16,
    first: i64,
    server: &mut std::process::Child,
    after: Duration,
) -> i64 {
    let mut client = psql(port)
        .args(["-v", "ON_ERROR_STOP=1"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("psql");
    let script: String = (first..first + 2_000).map(transaction).collect();
    let mut stdin = client.stdin.take().unwrap();
    let writer = std::thread::spawn(move || {
        let _ = stdin.write_all(script.as_bytes());
    });
    let stdout = client.stdout.take().unwrap();
    let reader = std::thread::spawn(move || {
        BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
            .filter(|line| line == "COMMIT")
            .count() as i64
    });
    std::thread::sleep(after);
    server.kill().expect("SIGKILL the server");
    server.wait().unwrap();
    let _ = client.wait();
    let _ = writer.join();
    reader.join().unwrap()
}

/// Checks that every class was updated as a whole, and returns how many transactions committed
/// (each added one to a class and deleted one row).
fn committed(port: u16) -> i64 {
    let classes = query(
        port,
        "SELECT v, min(w), max(w) FROM b GROUP BY v ORDER BY v",
    );
    let mut updates = 0;
    for class in classes.lines() {
        let fields: Vec<i64> = class.split('|').map(|f| f.parse().unwrap()).collect();
        assert_eq!(fields[1], fields[2], "class {} was half updated", fields[0]);
        updates += fields[1];
    }
    let rows: i64 = query(port, "SELECT count(*) FROM b").parse().unwrap();
    assert_eq!(
        ROWS - rows,
        updates,
        "as many rows deleted as classes updated"
    );
    let past: i64 = query(
        port,
        &format!("SELECT count(*) FROM b WHERE id > {}", ROWS - updates),
    )
    .parse()
    .unwrap();
    assert_eq!(
        past, 0,
        "the rows deleted are those of the committed transactions"
    );
    updates
}

#[test]
fn sigkill_during_batched_updates_and_deletes_keeps_every_transaction_whole() {
    assert!(
        Path::new(PSQL).exists(),
        "psql 15 is needed: apt-get install postgresql-15 (scripts/test.sh does)"
    );
    let dir = tempfile::tempdir().unwrap();
    let (mut server, mut port, _) = serve(dir.path());
    query(
        port,
        "CREATE TABLE b (id int PRIMARY KEY, v int NOT NULL, w int NOT NULL)",
    );
    query(
        port,
        &format!("INSERT INTO b SELECT g, g % 10, 0 FROM generate_series(1, {ROWS}) g"),
    );
    query(port, "CREATE INDEX b_v ON b (v)");
    query(port, "ANALYZE b");
    let mut done = 0;
    for cycle in 0..CYCLES {
        let after = Duration::from_millis(1_500 + 700 * cycle);
        let acknowledged = run_until_killed(port, done + 1, &mut server, after);
        (server, port, _) = serve(dir.path());
        let now = committed(port);
        eprintln!(
            "cycle {cycle}: {acknowledged} acknowledged, {} committed",
            now - done
        );
        assert!(
            now >= done + acknowledged && now <= done + acknowledged + 1,
            "cycle {cycle}: {now} committed, {done} before and {acknowledged} acknowledged since"
        );
        assert!(
            acknowledged > 0,
            "cycle {cycle}: some transactions committed before the kill"
        );
        done = now;
    }
    server.kill().unwrap();
    server.wait().unwrap();
}
