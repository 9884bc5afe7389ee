//! `steady serve` end to end: the real binary on a free loopback port and a temporary data
//! directory, driven by real clients — tokio-postgres (simple and extended protocol, binary
//! results, portals, transactions, SQLSTATEs, COPY, cancel, SCRAM, concurrency) and psql when it
//! is installed — then a clean shutdown on SIGTERM and a restart that finds the data.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use futures::SinkExt;
use tokio_postgres::error::SqlState;
use tokio_postgres::{Client, NoTls, SimpleQueryMessage};

mod common;

/// How long a server may take to open its directory and listen.
const START_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a whole scenario may take before the test fails rather than hangs.
const SCENARIO_TIMEOUT: Duration = Duration::from_secs(120);

/// A running `steady serve`, stopped with SIGTERM when dropped.
struct ServerProcess {
    child: Child,
    port: u16,
    /// The server's stderr lines.
    log: mpsc::Receiver<String>,
}

impl ServerProcess {
    /// Starts `steady serve` on `dir` (a new directory with a small redo log).
    fn start(dir: &Path) -> ServerProcess {
        let (child, port, log) = common::serve(dir);
        ServerProcess { child, port, log }
    }

    async fn connect(&self) -> Client {
        self.connect_as(&format!("user=steady dbname=anything port={}", self.port))
            .await
            .expect("connect")
    }

    async fn connect_as(&self, params: &str) -> Result<Client, tokio_postgres::Error> {
        let (client, connection) =
            tokio_postgres::connect(&format!("host=127.0.0.1 {params}"), NoTls).await?;
        tokio::spawn(connection);
        Ok(client)
    }

    /// Sends SIGTERM and returns whether it exited successfully and its remaining log.
    fn stop(mut self) -> (bool, String) {
        let pid = self.child.id() as libc::pid_t;
        // SAFETY: plain kill(2) on our own child's pid.
        unsafe { libc::kill(pid, libc::SIGTERM) };
        let status = self.child.wait().expect("steady serve exits");
        // The reader thread may not have passed on the last lines yet: read until it ends (at
        // the pipe's end, dropping its sender).
        let mut log = Vec::new();
        while let Ok(line) = self.log.recv_timeout(START_TIMEOUT) {
            log.push(line);
        }
        (status.success(), log.join("\n"))
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs an async scenario on a fresh runtime, bounded in time.
fn scenario<F: std::future::Future<Output = ()>>(f: F) {
    tokio::runtime::Runtime::new()
        .unwrap()
        .block_on(async { tokio::time::timeout(SCENARIO_TIMEOUT, f).await })
        .expect("the scenario finishes in time");
}

/// A statement that would run for minutes.
const LONG_QUERY: &str = "SELECT count(*) FROM generate_series(1, 2000000000) g WHERE g % 7 = 3";

/// Waits (bounded) until another session runs `query`, as `pg_stat_activity` shows; its pid.
async fn wait_until_running(observer: &Client, query: &str) -> i32 {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let rows = observer
            .query(
                "SELECT pid FROM pg_stat_activity \
                 WHERE state = 'active' AND query = $1 AND pid <> pg_backend_pid()",
                &[&query],
            )
            .await
            .unwrap();
        if let Some(row) = rows.first() {
            return row.get(0);
        }
        assert!(std::time::Instant::now() < deadline, "{query} never ran");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Waits (bounded by `within`) until session `pid` is gone from `pg_stat_activity`; how long.
async fn wait_until_gone(observer: &Client, pid: i32, within: Duration) -> Duration {
    let start = std::time::Instant::now();
    loop {
        let rows = observer
            .query("SELECT 1 FROM pg_stat_activity WHERE pid = $1", &[&pid])
            .await
            .unwrap();
        if rows.is_empty() {
            return start.elapsed();
        }
        assert!(
            start.elapsed() < within,
            "session {pid} still there after {within:?}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// CPU time (user + system, in clock ticks) process `pid` has used.
fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<&str> = stat[stat.rfind(')').unwrap() + 2..].split(' ').collect();
    // utime and stime are fields 14 and 15 of stat(5); `fields` starts at field 3.
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

fn simple_rows(messages: &[SimpleQueryMessage]) -> Vec<Vec<Option<String>>> {
    messages
        .iter()
        .filter_map(|m| match m {
            SimpleQueryMessage::Row(row) => Some(
                (0..row.len())
                    .map(|i| row.get(i).map(str::to_owned))
                    .collect(),
            ),
            _ => None,
        })
        .collect()
}

#[test]
fn clients_query_copy_and_share_one_server() {
    let dir = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(dir.path());
    scenario(async {
        let client = server.connect().await;
        simple_protocol(&client).await;
        extended_protocol(&client).await;
        portals_suspend(&server).await;
        transactions_and_errors(&client).await;
        copy_in_and_out(&client).await;
        cancel_stops_a_copy(&server).await;
        cancel_stops_a_running_query(&server).await;
        idle_in_transaction_ends_the_connection(&server).await;
        concurrent_connections(&server).await;
        startup_settings(&server).await;
    });
    psql_select_one(server.port);
    let (clean, log) = server.stop();
    assert!(clean, "steady serve exits 0 on SIGTERM: {log}");
    assert!(log.contains("SIGTERM received"), "{log}");
    assert!(log.contains("shut down cleanly"), "{log}");

    let server = ServerProcess::start(dir.path());
    scenario(async {
        let client = server.connect().await;
        let rows = client
            .query("SELECT count(*) FROM items", &[])
            .await
            .unwrap();
        assert_eq!(
            rows[0].get::<_, i64>(0),
            2002,
            "the data survives a restart"
        );
    });
}

async fn simple_protocol(client: &Client) {
    client
        .batch_execute(
            "CREATE TABLE items (id int PRIMARY KEY, name text, price double precision, \
             flag boolean, data bytea, big bigint); \
             INSERT INTO items VALUES (1, 'one', 1.5, true, '\\x0102', 10), \
             (2, NULL, NULL, NULL, NULL, NULL)",
        )
        .await
        .unwrap();
    let messages = client
        .simple_query("SELECT id, name FROM items ORDER BY id; SELECT 'x' AS y")
        .await
        .unwrap();
    assert_eq!(
        simple_rows(&messages),
        [
            vec![Some("1".to_owned()), Some("one".to_owned())],
            vec![Some("2".to_owned()), None],
            vec![Some("x".to_owned())]
        ]
    );
    let complete: Vec<u64> = messages
        .iter()
        .filter_map(|m| match m {
            SimpleQueryMessage::CommandComplete(n) => Some(*n),
            _ => None,
        })
        .collect();
    assert_eq!(complete, [2, 1]);
    let empty = client.simple_query("  ; -- nothing").await.unwrap();
    assert!(simple_rows(&empty).is_empty());
}

async fn extended_protocol(client: &Client) {
    // tokio-postgres asks for every result column in binary.
    let row = client
        .query_one(
            "SELECT id, name, price, flag, data, big FROM items WHERE id = $1",
            &[&1i32],
        )
        .await
        .unwrap();
    assert_eq!(row.get::<_, i32>(0), 1);
    assert_eq!(row.get::<_, String>(1), "one");
    assert_eq!(row.get::<_, f64>(2), 1.5);
    assert!(row.get::<_, bool>(3));
    assert_eq!(row.get::<_, Vec<u8>>(4), [1, 2]);
    assert_eq!(row.get::<_, i64>(5), 10);

    let insert = client
        .prepare("INSERT INTO items (id, name, big) VALUES ($1::int, $2::text, $3::bigint)")
        .await
        .unwrap();
    for id in 3..=5i32 {
        let name = format!("item {id}");
        let inserted = client
            .execute(&insert, &[&id, &name, &i64::from(id * 100)])
            .await
            .unwrap();
        assert_eq!(inserted, 1);
    }
    let row = client
        .query_one("SELECT name, big FROM items WHERE id = $1", &[&4i32])
        .await
        .unwrap();
    assert_eq!(row.get::<_, String>(0), "item 4");
    assert_eq!(row.get::<_, i64>(1), 400);
    let null: Option<String> = client
        .query_one("SELECT name FROM items WHERE id = $1", &[&2i32])
        .await
        .unwrap()
        .get(0);
    assert_eq!(null, None);
    client
        .execute("DELETE FROM items WHERE id >= $1", &[&3i32])
        .await
        .unwrap();
}

async fn portals_suspend(server: &ServerProcess) {
    let mut client = server.connect().await;
    let txn = client.transaction().await.unwrap();
    let portal = txn
        .bind("SELECT id FROM items ORDER BY id", &[])
        .await
        .unwrap();
    let first = txn.query_portal(&portal, 1).await.unwrap();
    let rest = txn.query_portal(&portal, 10).await.unwrap();
    let ids = |rows: &[tokio_postgres::Row]| rows.iter().map(|r| r.get(0)).collect::<Vec<i32>>();
    assert_eq!((ids(&first), ids(&rest)), (vec![1], vec![2]));
    txn.commit().await.unwrap();
}

async fn transactions_and_errors(client: &Client) {
    client.batch_execute("BEGIN").await.unwrap();
    client
        .execute("INSERT INTO items (id) VALUES (10)", &[])
        .await
        .unwrap();
    client.batch_execute("ROLLBACK").await.unwrap();
    let count: i64 = client
        .query_one("SELECT count(*) FROM items WHERE id = 10", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(count, 0, "a rolled-back insert is gone");

    let err = client
        .execute("INSERT INTO items (id) VALUES (1)", &[])
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(&SqlState::UNIQUE_VIOLATION), "{err}");

    client.batch_execute("BEGIN").await.unwrap();
    let err = client.batch_execute("SELECT 1/0").await.unwrap_err();
    assert_eq!(err.code(), Some(&SqlState::DIVISION_BY_ZERO));
    let err = client.query("SELECT 1", &[]).await.unwrap_err();
    assert_eq!(err.code(), Some(&SqlState::IN_FAILED_SQL_TRANSACTION));
    client.batch_execute("ROLLBACK").await.unwrap();

    let err = client.batch_execute("SELEC 1").await.unwrap_err();
    assert_eq!(err.code(), Some(&SqlState::SYNTAX_ERROR));
    let err = client
        .query("SELECT * FROM missing", &[])
        .await
        .unwrap_err();
    assert_eq!(err.code(), Some(&SqlState::UNDEFINED_TABLE));
    client
        .query("SELECT 1", &[])
        .await
        .expect("the connection goes on");
}

async fn copy_in_and_out(client: &Client) {
    let sink = client
        .copy_in("COPY items (id, name, big) FROM STDIN")
        .await
        .unwrap();
    let mut sink = Box::pin(sink);
    let mut data = String::new();
    for id in 100..2100 {
        data.push_str(&format!("{id}\tname {id}\t\\N\n"));
    }
    for chunk in data.as_bytes().chunks(1000) {
        sink.send(bytes::Bytes::copy_from_slice(chunk))
            .await
            .unwrap();
    }
    assert_eq!(sink.as_mut().finish().await.unwrap(), 2000);

    let row = client
        .query_one("SELECT name, big FROM items WHERE id = 2099", &[])
        .await
        .unwrap();
    assert_eq!(row.get::<_, String>(0), "name 2099");
    assert_eq!(row.get::<_, Option<i64>>(1), None);

    let count = |row: tokio_postgres::Row| row.get::<_, i64>(0);
    let before = count(
        client
            .query_one("SELECT count(*) FROM items", &[])
            .await
            .unwrap(),
    );
    let sink = client.copy_in("COPY items FROM STDIN").await.unwrap();
    let mut sink = Box::pin(sink);
    sink.send(bytes::Bytes::from_static(
        b"5000\tvalid\t\\N\t\\N\t\\N\t\\N\n1\tduplicate\t\\N\t\\N\t\\N\t\\N\n",
    ))
    .await
    .unwrap();
    let err = sink.as_mut().finish().await.unwrap_err();
    assert_eq!(err.code(), Some(&SqlState::UNIQUE_VIOLATION), "{err}");
    let after = count(
        client
            .query_one("SELECT count(*) FROM items", &[])
            .await
            .unwrap(),
    );
    assert_eq!(after, before, "a failed COPY inserts none of its rows");

    let stream = client
        .copy_out("COPY (SELECT id, name FROM items WHERE id < 3 ORDER BY id) TO STDOUT")
        .await
        .unwrap();
    let chunks: Vec<bytes::Bytes> = futures::TryStreamExt::try_collect(stream).await.unwrap();
    assert_eq!(chunks.concat(), b"1\tone\n2\t\\N\n");
    copy_into_fixed_width_columns(client).await;
}

/// COPY fits values to char(n) and varchar(n) as an INSERT does: padded, trailing spaces cut,
/// and a value too long refused (22001) with its line, leaving nothing copied.
async fn copy_into_fixed_width_columns(client: &Client) {
    client
        .batch_execute("CREATE TABLE fixed (id int PRIMARY KEY, c char(5), v varchar(3))")
        .await
        .unwrap();
    let sink = client.copy_in("COPY fixed FROM STDIN").await.unwrap();
    let mut sink = Box::pin(sink);
    sink.send(bytes::Bytes::from_static(b"1\tab\tabc\n2\tabcde  \tx  \n"))
        .await
        .unwrap();
    assert_eq!(sink.as_mut().finish().await.unwrap(), 2);
    let rows = client
        .query("SELECT c, v FROM fixed ORDER BY id", &[])
        .await
        .unwrap();
    let got: Vec<(String, String)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    assert_eq!(
        got,
        [
            ("ab   ".into(), "abc".into()),
            ("abcde".into(), "x  ".into())
        ]
    );
    let sink = client.copy_in("COPY fixed FROM STDIN").await.unwrap();
    let mut sink = Box::pin(sink);
    sink.send(bytes::Bytes::from_static(b"3\tok\tok\n4\ttoo long\tx\n"))
        .await
        .unwrap();
    let err = sink.as_mut().finish().await.unwrap_err();
    assert_eq!(
        err.code(),
        Some(&SqlState::STRING_DATA_RIGHT_TRUNCATION),
        "{err}"
    );
    let db = err.as_db_error().expect("a server error");
    assert!(
        format!("{db:?}").contains("line 2"),
        "the error names its line: {db:?}"
    );
    let count: i64 = client
        .query_one("SELECT count(*) FROM fixed", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(count, 2);
}

/// Sends `client`'s cancel request and waits until the server has acted on it. A client only
/// writes its cancel and leaves (libpq and tokio-postgres alike), so the server may act on it at
/// any later moment; the server closes the request's connection once the cancel is in effect,
/// and this waits for that close.
async fn cancel_and_wait(server: &ServerProcess, client: &Client) {
    use tokio::io::AsyncReadExt;
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", server.port))
        .await
        .unwrap();
    client
        .cancel_token()
        .cancel_query_raw(&mut stream, NoTls)
        .await
        .unwrap();
    let mut rest = Vec::new();
    stream.read_to_end(&mut rest).await.unwrap();
    assert!(rest.is_empty(), "a cancel request has no reply");
}

async fn cancel_stops_a_copy(server: &ServerProcess) {
    let client = server.connect().await;
    client
        .batch_execute("CREATE TABLE sink (n int, filler text)")
        .await
        .unwrap();
    let sink = client.copy_in("COPY sink FROM STDIN").await.unwrap();
    let mut sink = Box::pin(sink);
    let line = format!("1\t{}\n", "x".repeat(1000));
    let chunk = bytes::Bytes::from(line.repeat(100));
    for _ in 0..4 {
        sink.send(chunk.clone()).await.unwrap();
    }
    cancel_and_wait(server, &client).await;
    let mut outcome = Ok(());
    for _ in 0..8 {
        outcome = sink.send(chunk.clone()).await;
        if outcome.is_err() {
            break;
        }
    }
    let err = match outcome {
        Err(err) => err,
        Ok(()) => sink.as_mut().finish().await.unwrap_err(),
    };
    assert_eq!(err.code(), Some(&SqlState::QUERY_CANCELED), "{err}");
    let client = server.connect().await;
    let count: i64 = client
        .query_one("SELECT count(*) FROM sink", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(count, 0, "a canceled COPY leaves nothing behind");
}

async fn cancel_stops_a_running_query(server: &ServerProcess) {
    let client = server.connect().await;
    let observer = server.connect().await;
    let token = client.cancel_token();
    let canceller = tokio::spawn(async move {
        wait_until_running(&observer, LONG_QUERY).await;
        token.cancel_query(NoTls).await
    });
    let err = client.simple_query(LONG_QUERY).await.unwrap_err();
    canceller.await.unwrap().unwrap();
    assert_eq!(err.code(), Some(&SqlState::QUERY_CANCELED), "{err}");
    let rows = client.simple_query("SELECT 1").await.unwrap();
    assert_eq!(simple_rows(&rows), vec![vec![Some("1".to_owned())]]);
}

async fn idle_in_transaction_ends_the_connection(server: &ServerProcess) {
    let client = server.connect().await;
    client
        .batch_execute("CREATE TABLE idle_t (id integer PRIMARY KEY)")
        .await
        .unwrap();
    client
        .batch_execute(
            "SET idle_in_transaction_session_timeout = 300; BEGIN; INSERT INTO idle_t VALUES (1)",
        )
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(
        client.simple_query("SELECT 1").await.is_err(),
        "the connection is gone"
    );
    let other = server.connect().await;
    let rows = other
        .simple_query("SELECT count(*) FROM idle_t")
        .await
        .unwrap();
    assert_eq!(
        simple_rows(&rows),
        vec![vec![Some("0".to_owned())]],
        "its insert rolled back"
    );
}

async fn concurrent_connections(server: &ServerProcess) {
    let setup = server.connect().await;
    setup
        .batch_execute("CREATE TABLE hits (client int, n int, PRIMARY KEY (client, n))")
        .await
        .unwrap();
    let mut tasks = tokio::task::JoinSet::new();
    for c in 0..20i32 {
        let client = server.connect().await;
        tasks.spawn(async move {
            let insert = client
                .prepare("INSERT INTO hits VALUES ($1::int, $2::int)")
                .await
                .unwrap();
            for n in 0..25i32 {
                client.execute(&insert, &[&c, &n]).await.unwrap();
            }
            let count: i64 = client
                .query_one("SELECT count(*) FROM hits WHERE client = $1", &[&c])
                .await
                .unwrap()
                .get(0);
            assert_eq!(count, 25);
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.expect("every client succeeds");
    }
    let total: i64 = setup
        .query_one("SELECT count(*) FROM hits", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(total, 500);
}

/// psql 15 against the server, when psql is installed.
fn psql_select_one(port: u16) {
    let output = Command::new("psql")
        .args(["-h", "127.0.0.1", "-p", &port.to_string(), "-U", "steady"])
        .args([
            "-X", "-A", "-t", "-c", "select 1", "-c", "\\dt", "-c", "\\dt+", "-c", "\\l+", "-c",
            "\\db+", "-c", "\\dx", "-c", "\\dT+", "-c", "\\df+", "-c", "\\dn+", "-c", "\\do", "-c",
            "\\dF", "-c", "\\ds", "-c", "\\dv",
        ])
        .env("PGCONNECT_TIMEOUT", "10")
        .output();
    let Ok(output) = output else {
        eprintln!("psql is not installed: skipping its check");
        return;
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "psql failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stdout.starts_with("1\n"), "{stdout}");
    assert!(stdout.contains("items"), "\\dt lists the tables: {stdout}");
    assert!(!stderr.contains("ERROR"), "{stderr}");
    assert!(
        stdout.lines().any(|line| line.contains("|items|table|")
            && (line.contains(" kB|") || line.contains(" bytes|") || line.contains(" MB|"))),
        "\\dt+ shows each table's size (pg_table_size, pg_size_pretty): {stdout}"
    );
}

#[test]
fn a_password_requires_scram() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("steady.toml"),
        "password = \"s3cret\"\nbuffer_pool_size = \"16MB\"\n",
    )
    .unwrap();
    let server = ServerProcess::start(dir.path());
    scenario(async {
        let port = server.port;
        let client = server
            .connect_as(&format!("port={port} user=alice password=s3cret"))
            .await
            .expect("the right password is accepted");
        let rows = client.query("SELECT 1", &[]).await.unwrap();
        assert_eq!(rows.len(), 1);
        let err = server
            .connect_as(&format!("port={port} user=alice password=wrong"))
            .await
            .expect_err("a wrong password is refused");
        assert_eq!(err.code(), Some(&SqlState::INVALID_PASSWORD), "{err}");
        roles_log_in_with_their_own_passwords_and_need_grants(&server, &client).await;
    });
}

async fn login_as(
    server: &ServerProcess,
    user: &str,
    password: &str,
) -> Result<Client, tokio_postgres::Error> {
    let port = server.port;
    server
        .connect_as(&format!("port={port} user={user} password={password}"))
        .await
}

/// A role logs in with its own password (SCRAM against its verifier), not the server's; a role
/// without a grant gets 42501, and a GRANT lets it in at its next statement; a NOLOGIN role
/// and a role without a password cannot log in.
async fn roles_log_in_with_their_own_passwords_and_need_grants(
    server: &ServerProcess,
    admin: &Client,
) {
    admin
        .batch_execute(
            "CREATE TABLE ledger (id int PRIMARY KEY, amount int);
             INSERT INTO ledger VALUES (1, 10), (2, 20);
             CREATE ROLE clerk LOGIN PASSWORD 'clerk-pw';
             CREATE ROLE ghost NOLOGIN PASSWORD 'ghost-pw';
             CREATE ROLE nopass LOGIN",
        )
        .await
        .unwrap();
    let err = login_as(server, "clerk", "s3cret")
        .await
        .expect_err("the server's password is not the role's");
    assert_eq!(err.code(), Some(&SqlState::INVALID_PASSWORD), "{err}");
    let clerk = login_as(server, "clerk", "clerk-pw")
        .await
        .expect("the role's password");
    let err = clerk
        .query("SELECT sum(amount) FROM ledger", &[])
        .await
        .expect_err("no grant yet");
    assert_eq!(err.code(), Some(&SqlState::INSUFFICIENT_PRIVILEGE), "{err}");
    let err = clerk
        .execute("INSERT INTO ledger VALUES (3, 30)", &[])
        .await
        .expect_err("no grant yet");
    assert_eq!(err.code(), Some(&SqlState::INSUFFICIENT_PRIVILEGE), "{err}");
    admin
        .batch_execute("GRANT SELECT ON ledger TO clerk")
        .await
        .unwrap();
    let sum: i64 = clerk
        .query_one("SELECT sum(amount) FROM ledger", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(sum, 30);
    let who: String = clerk
        .query_one("SELECT current_user", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(who, "clerk");
    let err = login_as(server, "ghost", "ghost-pw")
        .await
        .expect_err("NOLOGIN");
    assert_eq!(
        err.code(),
        Some(&SqlState::INVALID_AUTHORIZATION_SPECIFICATION),
        "{err}"
    );
    let err = login_as(server, "nopass", "anything")
        .await
        .expect_err("no password to check");
    assert_eq!(err.code(), Some(&SqlState::INVALID_PASSWORD), "{err}");
}

/// With `metrics_listen` in steady.toml, `GET /metrics` there answers the `steady_metrics`
/// figures in Prometheus' text format; any other request is 404.
#[test]
fn metrics_listen_serves_prometheus_text() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("steady.toml"),
        "metrics_listen = \"127.0.0.1:0\"\nbuffer_pool_size = \"16MB\"\n",
    )
    .unwrap();
    let server = ServerProcess::start(dir.path());
    let address = loop {
        let line = server
            .log
            .recv_timeout(START_TIMEOUT)
            .expect("steady serve logs its metrics address");
        if let Some((_, rest)) = line.split_once("metrics on http://") {
            break rest.split('/').next().unwrap().to_owned();
        }
    };
    let get = |path: &str| {
        use std::io::{Read, Write};
        let mut stream = std::net::TcpStream::connect(&address).unwrap();
        write!(stream, "GET {path} HTTP/1.1\r\nHost: localhost\r\n\r\n").unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        response
    };
    let metrics = get("/metrics");
    assert!(metrics.starts_with("HTTP/1.1 200 OK"), "{metrics}");
    assert!(
        metrics.contains("Content-Type: text/plain; version=0.0.4"),
        "{metrics}"
    );
    let wal = metrics
        .lines()
        .find_map(|l| l.strip_prefix("steady_wal_bytes_written "))
        .expect("the redo figure is there");
    assert!(wal.parse::<u64>().is_ok(), "{wal}");
    assert!(get("/").starts_with("HTTP/1.1 404"));
}

/// With `log_format = "json"` every line of the log is a JSON object with a timestamp and a
/// level; with `log_min_duration_statement` in steady.toml each statement that takes at least
/// that long is logged with its duration, until a session SETs it off (-1).
#[test]
fn the_log_is_json_lines_and_names_statements_past_the_duration_threshold() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("steady.toml"),
        "log_format = \"json\"\nlog_min_duration_statement = \"0ms\"\nbuffer_pool_size = \"16MB\"\n",
    )
    .unwrap();
    let server = ServerProcess::start(dir.path());
    scenario(async {
        let client = server.connect().await;
        client.simple_query("SELECT 4242").await.unwrap();
        client
            .simple_query("SET log_min_duration_statement = -1")
            .await
            .unwrap();
        client.simple_query("SELECT 4343").await.unwrap();
    });
    let (clean, log) = server.stop();
    assert!(clean, "{log}");
    let lines: Vec<serde_json::Value> = log
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect();
    for line in &lines {
        assert!(
            line["timestamp"].as_str().is_some_and(|t| t.ends_with('Z')),
            "{line}"
        );
        assert!(line["level"].as_str().is_some(), "{line}");
    }
    let message = |line: &serde_json::Value| line["message"].as_str().unwrap_or("").to_owned();
    let slow: Vec<&serde_json::Value> = lines
        .iter()
        .filter(|line| message(line).contains("statement: SELECT 4242"))
        .collect();
    assert_eq!(slow.len(), 1, "{log}");
    assert!(slow[0]["duration_ms"].as_f64().is_some(), "{}", slow[0]);
    assert!(!log.contains("SELECT 4343"), "{log}");
    assert!(
        lines
            .iter()
            .any(|line| message(line).contains("shut down cleanly")),
        "{log}"
    );
}

/// A served data directory belongs to its server: a second `steady serve` and a `steady check` of
/// it fail with an error naming the holder's pid, and leave the server working; once the server
/// has stopped, `steady check` opens the directory.
#[test]
fn a_served_directory_refuses_a_second_process() {
    let dir = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(dir.path());
    let holder = format!("pid {}", server.child.id());
    let data = dir.path().to_str().unwrap();
    for args in [
        vec!["serve", "--data", data, "--listen", "127.0.0.1:0"],
        vec!["check", data],
    ] {
        let output = Command::new(env!("CARGO_BIN_EXE_steady"))
            .args(&args)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(!output.status.success(), "{args:?} succeeded: {stderr}");
        assert!(
            stderr.contains("in use by another process") && stderr.contains(&holder),
            "{args:?}: {stderr}"
        );
    }
    scenario(async {
        let client = server.connect().await;
        client.simple_query("SELECT 1").await.unwrap();
    });
    let (stopped, log) = server.stop();
    assert!(stopped, "{log}");
    let check = Command::new(env!("CARGO_BIN_EXE_steady"))
        .args(["check", data])
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
}

/// Runs `steady serve` on `dir`, which must fail to start; its stderr.
fn failed_serve(dir: &Path) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_steady"))
        .args(["serve", "--data", dir.to_str().unwrap()])
        .args(["--listen", "127.0.0.1:0"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(!output.status.success(), "{stderr}");
    stderr
}

/// Settings a client asks for when it connects — `options` switches (`PGOPTIONS`) and other
/// startup parameters — are the session's from its first statement and what RESET returns to; an
/// unknown setting, a bad value or a switch the server does not take refuses the connection with
/// PostgreSQL's SQLSTATE.
async fn startup_settings(server: &ServerProcess) {
    let port = server.port;
    let options =
        "options='-c statement_timeout=1000 --default-transaction-isolation=serializable'";
    let client = server
        .connect_as(&format!(
            "user=steady port={port} application_name=app {options}"
        ))
        .await
        .expect("connect with options");
    let show = |name: &'static str| {
        let client = &client;
        async move {
            let rows = client.query(&format!("SHOW {name}"), &[]).await.unwrap();
            rows[0].get::<_, String>(0)
        }
    };
    assert_eq!(show("statement_timeout").await, "1s");
    assert_eq!(show("default_transaction_isolation").await, "serializable");
    assert_eq!(show("application_name").await, "app");
    client.batch_execute("RESET ALL").await.unwrap();
    assert_eq!(
        show("statement_timeout").await,
        "1s",
        "RESET returns to the startup value"
    );
    let err = client.query(LONG_QUERY, &[]).await.unwrap_err();
    assert_eq!(err.code(), Some(&SqlState::QUERY_CANCELED), "{err}");

    for (options, code) in [
        ("-c no_such_setting=1", SqlState::UNDEFINED_OBJECT),
        (
            "-c statement_timeout=soon",
            SqlState::INVALID_PARAMETER_VALUE,
        ),
        ("-c statement_timeout", SqlState::SYNTAX_ERROR),
        ("-B 100", SqlState::SYNTAX_ERROR),
    ] {
        let refused = server
            .connect_as(&format!("user=steady port={port} options='{options}'"))
            .await
            .err()
            .unwrap_or_else(|| panic!("options '{options}' are refused"));
        assert_eq!(refused.code(), Some(&code), "{options}: {refused}");
    }
}

/// `redo_log_size` in steady.toml sizes a new directory's redo log; one below the 16 MB minimum
/// is refused rather than raised; an existing directory keeps its log's size and says so when
/// asked for another.
#[test]
fn redo_log_size_sizes_a_new_directorys_log() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("steady.toml");
    std::fs::write(&config, "redo_log_size = \"1MB\"\n").unwrap();
    let stderr = failed_serve(dir.path());
    assert!(stderr.contains("must be at least 16 MB"), "{stderr}");

    std::fs::write(&config, "redo_log_size = \"20MB\"\n").unwrap();
    let server = ServerProcess::start(dir.path());
    let log_len = || {
        std::fs::metadata(dir.path().join("redo.log"))
            .unwrap()
            .len()
    };
    assert_eq!(
        log_len(),
        (20 << 20) + 4096,
        "20 MB of ring after a 4 kB header"
    );
    let (clean, log) = server.stop();
    assert!(clean, "{log}");

    std::fs::write(&config, "redo_log_size = \"32MB\"\n").unwrap();
    let server = ServerProcess::start(dir.path());
    let (clean, log) = server.stop();
    assert!(clean, "{log}");
    assert_eq!(log_len(), (20 << 20) + 4096);
    assert!(log.contains("stays 20 MiB (asked for 32 MiB)"), "{log}");
}

/// `steady serve --data DIR` on a directory that holds other files and no database (a mistyped
/// `--data`) refuses it, naming what is there, and creates nothing in it.
#[test]
fn a_directory_that_is_not_a_database_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("notes.txt"), "mine").unwrap();
    let stderr = failed_serve(dir.path());
    assert!(
        stderr.contains("is not a SteadyDB data directory") && stderr.contains("\"notes.txt\""),
        "{stderr}"
    );
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, vec!["notes.txt".to_owned()]);
}

/// A statement never outlives its session: a client that hangs up mid-statement has its statement
/// stopped (the server's CPU idle again within a second), `pg_cancel_backend` and
/// `pg_terminate_backend` reach another session's running statement, and SIGTERM during a long
/// statement stops it and exits cleanly, so the next start needs no recovery.
#[test]
fn a_statement_never_outlives_its_session() {
    let dir = tempfile::tempdir().unwrap();
    let server = ServerProcess::start(dir.path());
    scenario(async {
        let observer = server.connect().await;
        a_hang_up_stops_the_statement(&server, &observer).await;
        cancel_and_terminate_backend(&server, &observer).await;
    });
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let client = runtime.block_on(server.connect());
    let running = runtime.spawn(async move { client.simple_query(LONG_QUERY).await });
    runtime.block_on(async {
        let observer = server.connect().await;
        wait_until_running(&observer, LONG_QUERY).await;
    });
    let (clean, log) = server.stop();
    assert!(clean, "steady serve exits 0 on SIGTERM: {log}");
    assert!(log.contains("shut down cleanly"), "{log}");
    let err = runtime.block_on(running).unwrap().unwrap_err();
    assert_eq!(err.code(), Some(&SqlState::ADMIN_SHUTDOWN), "{err}");

    let server = ServerProcess::start(dir.path());
    scenario(async {
        let client = server.connect().await;
        client.simple_query("SELECT 1").await.unwrap();
    });
    let (clean, log) = server.stop();
    assert!(clean, "{log}");
    assert!(
        !log.contains("recover"),
        "a clean shutdown needs no recovery: {log}"
    );
}

async fn a_hang_up_stops_the_statement(server: &ServerProcess, observer: &Client) {
    let (client, connection) = tokio_postgres::connect(
        &format!("host=127.0.0.1 user=steady port={}", server.port),
        NoTls,
    )
    .await
    .unwrap();
    let connection = tokio::spawn(connection);
    let query = tokio::spawn(async move { client.simple_query(LONG_QUERY).await });
    let pid = wait_until_running(observer, LONG_QUERY).await;
    // The client goes away without a word: its socket closes.
    connection.abort();
    query.abort();
    let gone = wait_until_gone(observer, pid, Duration::from_secs(1)).await;
    let server_pid = server.child.id();
    let before = cpu_ticks(server_pid);
    tokio::time::sleep(Duration::from_millis(500)).await;
    let used = cpu_ticks(server_pid) - before;
    // 100 ticks a second: a statement still running would use about 50 in half a second.
    assert!(
        used <= 10,
        "{used} ticks of CPU in the 500 ms after a hang-up ({gone:?})"
    );
}

async fn cancel_and_terminate_backend(server: &ServerProcess, observer: &Client) {
    let client = server.connect().await;
    let running = tokio::spawn(async move {
        let err = client.simple_query(LONG_QUERY).await.unwrap_err();
        (client, err)
    });
    let pid = wait_until_running(observer, LONG_QUERY).await;
    let canceled: bool = observer
        .query_one("SELECT pg_cancel_backend($1::integer)", &[&pid])
        .await
        .unwrap()
        .get(0);
    assert!(canceled);
    let (client, err) = running.await.unwrap();
    assert_eq!(err.code(), Some(&SqlState::QUERY_CANCELED), "{err}");
    client.simple_query("SELECT 1").await.unwrap();

    let running = tokio::spawn(async move { client.simple_query(LONG_QUERY).await });
    let pid = wait_until_running(observer, LONG_QUERY).await;
    let terminated: bool = observer
        .query_one("SELECT pg_terminate_backend($1::integer)", &[&pid])
        .await
        .unwrap()
        .get(0);
    assert!(terminated);
    let err = running.await.unwrap().unwrap_err();
    assert_eq!(err.code(), Some(&SqlState::ADMIN_SHUTDOWN), "{err}");
    wait_until_gone(observer, pid, Duration::from_secs(5)).await;
    // An idle session is ended too, between statements.
    let idle = server.connect().await;
    let idle_pid: i32 = idle
        .query_one("SELECT pg_backend_pid()", &[])
        .await
        .unwrap()
        .get(0);
    let terminated: bool = observer
        .query_one("SELECT pg_terminate_backend($1::integer)", &[&idle_pid])
        .await
        .unwrap()
        .get(0);
    assert!(terminated);
    wait_until_gone(observer, idle_pid, Duration::from_secs(5)).await;
    assert!(
        idle.simple_query("SELECT 1").await.is_err(),
        "its connection is closed"
    );
    let unknown: bool = observer
        .query_one("SELECT pg_terminate_backend(7)", &[])
        .await
        .unwrap()
        .get(0);
    assert!(!unknown, "no session has pid 7");
}

/// `ssl = true` with a certificate and key in the data directory: psql with `sslmode=require`
/// gets TLS, and a client that does not ask still connects in the clear; `ssl = true` without
/// usable files stops the server at start with an error naming the file.
#[test]
fn tls_is_served_to_clients_that_ask() {
    let dir = tempfile::tempdir().unwrap();
    let made = Command::new("openssl")
        .args([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
        ])
        .args(["-subj", "/CN=localhost", "-keyout"])
        .arg(dir.path().join("server.key"))
        .arg("-out")
        .arg(dir.path().join("server.crt"))
        .output()
        .expect("openssl is installed (scripts/lib/install.sh)");
    assert!(
        made.status.success(),
        "{}",
        String::from_utf8_lossy(&made.stderr)
    );
    std::fs::write(dir.path().join("steady.toml"), "ssl = true\n").unwrap();
    let server = ServerProcess::start(dir.path());
    let conninfo = |mode: &str| {
        let output = Command::new("psql")
            .arg(format!(
                "host=127.0.0.1 port={} user=steady sslmode={mode}",
                server.port
            ))
            .args(["-X", "-A", "-t", "-c", "select 1", "-c", "\\conninfo"])
            .env("PGCONNECT_TIMEOUT", "10")
            .output()
            .expect("psql is installed (scripts/lib/install.sh)");
        assert!(
            output.status.success(),
            "sslmode={mode}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    let secure = conninfo("require");
    assert!(secure.contains("SSL connection (protocol: TLS"), "{secure}");
    let plain = conninfo("disable");
    assert!(
        plain.starts_with("1\n") && !plain.contains("SSL"),
        "{plain}"
    );
    let (stopped, log) = server.stop();
    assert!(stopped, "{log}");

    std::fs::remove_file(dir.path().join("server.key")).unwrap();
    let stderr = failed_serve(dir.path());
    assert!(
        stderr.contains("cannot set up TLS") && stderr.contains("server.key"),
        "{stderr}"
    );
}
