//! Garbage on the wire: connections that send random bytes, random frames after a valid startup,
//! frames that lie about their length, and random token soups as queries. Meanwhile one well-
//! behaved client keeps querying. The server must neither panic nor hang, and the good client must
//! be served throughout. Runs for `STEADY_FUZZ_SECONDS` (default 15).

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use common::serve;

const TOKENS: &[&str] = &[
    "SELECT",
    "FROM",
    "WHERE",
    "INSERT",
    "INTO",
    "VALUES",
    "(",
    ")",
    ",",
    ";",
    "*",
    "1",
    "'x'",
    "t",
    "a",
    "BEGIN",
    "COMMIT",
    "ROLLBACK",
    "$1",
    "::",
    "integer",
    "COPY",
    "STDIN",
    "NULL",
    "generate_series(1,5)",
    "ORDER",
    "BY",
    "GROUP",
    "JOIN",
    "ON",
    "=",
    "UPDATE",
    "SET",
    "DELETE",
];

fn startup_message() -> Vec<u8> {
    let mut body = 196_608i32.to_be_bytes().to_vec();
    for part in ["user", "fuzz", "database", "steady", ""] {
        body.extend_from_slice(part.as_bytes());
        body.push(0);
    }
    let mut message = ((body.len() + 4) as i32).to_be_bytes().to_vec();
    message.extend(body);
    message
}

fn frame(kind: u8, payload: &[u8]) -> Vec<u8> {
    let mut message = vec![kind];
    message.extend(((payload.len() + 4) as i32).to_be_bytes());
    message.extend_from_slice(payload);
    message
}

/// Up to `max` random bytes.
fn random_bytes(rng: &mut StdRng, max: usize) -> Vec<u8> {
    let n = rng.gen_range(0..max);
    (0..n).map(|_| rng.gen()).collect()
}

/// One hostile connection's bytes.
fn garbage(rng: &mut StdRng) -> Vec<u8> {
    match rng.gen_range(0..5) {
        0 => random_bytes(rng, 256),
        1 => {
            let mut bytes = startup_message();
            bytes.extend(random_bytes(rng, 512));
            bytes
        }
        2 => {
            let mut bytes = startup_message();
            for _ in 0..rng.gen_range(1..8) {
                let kind = *b"QPBEDSCHXdcfp".get(rng.gen_range(0..13)).unwrap();
                let payload = random_bytes(rng, 64);
                bytes.extend(frame(kind, &payload));
            }
            bytes
        }
        3 => {
            let mut bytes = startup_message();
            bytes.push(b'Q');
            bytes.extend(rng.gen_range(i32::MIN..i32::MAX).to_be_bytes());
            bytes.extend(random_bytes(rng, 16));
            bytes
        }
        _ => {
            let mut bytes = startup_message();
            let soup: Vec<&str> = (0..rng.gen_range(1..20))
                .map(|_| TOKENS[rng.gen_range(0..TOKENS.len())])
                .collect();
            let mut query = soup.join(" ").into_bytes();
            query.push(0);
            bytes.extend(frame(b'Q', &query));
            bytes.extend(frame(b'X', &[]));
            bytes
        }
    }
}

/// Sends one hostile connection's bytes and reads what comes back for a moment.
fn attack(port: u16, bytes: &[u8]) {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_millis(200)));
    let _ = stream.write_all(bytes);
    let mut sink = [0u8; 4096];
    let _ = stream.read(&mut sink);
}

fn good_client(port: u16, stop: Arc<AtomicBool>, served: Arc<AtomicU64>) -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    runtime.block_on(async move {
        let params = format!("host=127.0.0.1 port={port} user=steady dbname=steady");
        let (client, connection) = tokio_postgres::connect(&params, tokio_postgres::NoTls)
            .await
            .map_err(|e| e.to_string())?;
        tokio::spawn(connection);
        while !stop.load(Ordering::Relaxed) {
            let query = client.query_one("SELECT 40 + 2", &[]);
            let row = tokio::time::timeout(Duration::from_secs(10), query)
                .await
                .map_err(|_| "the good client waited 10 s for an answer".to_owned())?
                .map_err(|e| e.to_string())?;
            if row.get::<_, i32>(0) != 42 {
                return Err("wrong answer".into());
            }
            served.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    })
}

#[test]
fn garbage_on_the_wire_neither_crashes_nor_stalls_the_server() {
    let seconds: u64 = std::env::var("STEADY_FUZZ_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(15);
    let dir = tempfile::tempdir().unwrap();
    let (mut server, port, _) = serve(dir.path());
    let stop = Arc::new(AtomicBool::new(false));
    let served = Arc::new(AtomicU64::new(0));
    let good = {
        let (stop, served) = (Arc::clone(&stop), Arc::clone(&served));
        std::thread::spawn(move || good_client(port, stop, served))
    };
    let mut rng = StdRng::seed_from_u64(seconds);
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let mut attacks = 0;
    while Instant::now() < deadline {
        attack(port, &garbage(&mut rng));
        attacks += 1;
        assert!(
            server.try_wait().unwrap().is_none(),
            "the server died after {attacks} attacks"
        );
    }
    stop.store(true, Ordering::Relaxed);
    good.join()
        .unwrap()
        .expect("the good client was served throughout");
    assert!(
        served.load(Ordering::Relaxed) > 10,
        "the good client got few answers"
    );
    eprintln!(
        "{attacks} hostile connections; the good client got {} answers",
        served.load(Ordering::Relaxed)
    );
    attack(port, &garbage(&mut rng));
    assert!(server.try_wait().unwrap().is_none());
    server.kill().unwrap();
    server.wait().unwrap();
}
