//! SIGKILL of `steady serve` in the middle of a pgbench run, then a restart on the same directory:
//! recovery leaves the pgbench balances consistent (every transaction is all or nothing) and the
//! server serves again. Needs pgbench and psql from PostgreSQL 15 (scripts/test.sh installs them).

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::serve;

const PG_BIN: &str = "/usr/lib/postgresql/15/bin";
const CYCLES: usize = 3;

fn pg_tool(name: &str, port: u16) -> Command {
    let mut command = Command::new(format!("{PG_BIN}/{name}"));
    command.args(["-h", "127.0.0.1", "-p", &port.to_string(), "-U", "steady"]);
    command
}

fn psql(port: u16, sql: &str) -> String {
    let output = pg_tool("psql", port)
        .args(["-d", "postgres", "-Atc", sql])
        .output()
        .expect("run psql");
    assert!(
        output.status.success(),
        "psql {sql}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap().trim().to_owned()
}

fn balances(port: u16) -> Vec<i64> {
    let sums = psql(
        port,
        "select (select sum(abalance) from pgbench_accounts), (select sum(bbalance) from pgbench_branches), \
         (select sum(tbalance) from pgbench_tellers), (select coalesce(sum(delta), 0) from pgbench_history)",
    );
    sums.split('|').map(|s| s.parse().expect("a sum")).collect()
}

#[test]
fn sigkill_during_pgbench_then_restart_keeps_the_balances_consistent() {
    assert!(
        Path::new(PG_BIN).join("pgbench").exists(),
        "pgbench 15 is needed: apt-get install postgresql-15 (scripts/test.sh does)"
    );
    let dir = tempfile::tempdir().unwrap();
    let (mut server, port, _) = serve(dir.path());
    let init = pg_tool("pgbench", port)
        .args(["-i", "-s", "1", "postgres"])
        .output()
        .expect("pgbench -i");
    assert!(
        init.status.success(),
        "{}",
        String::from_utf8_lossy(&init.stderr)
    );
    let mut port = port;
    for cycle in 0..CYCLES {
        let mut bench = pg_tool("pgbench", port)
            .args(["-c", "8", "-j", "2", "-T", "30", "-n", "postgres"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("pgbench run");
        std::thread::sleep(Duration::from_millis(1500 + 500 * cycle as u64));
        server.kill().expect("SIGKILL the server");
        server.wait().unwrap();
        let _ = bench.wait();

        (server, port, _) = serve(dir.path());
        let sums = balances(port);
        assert!(
            sums.iter().all(|s| *s == sums[0]),
            "cycle {cycle}: balances {sums:?}"
        );
        let history: i64 = psql(port, "select count(*) from pgbench_history")
            .parse()
            .unwrap();
        assert!(
            history > 0,
            "cycle {cycle}: some transactions committed before the kill"
        );
    }
    assert_eq!(psql(port, "select count(*) from pgbench_branches"), "1");
    server.kill().unwrap();
    server.wait().unwrap();
}
