//! Any bytes as a client's side of a PostgreSQL-protocol connection to a running server: the
//! server answers or closes the connection — it never panics (libfuzzer-sys aborts the process on
//! a panic in any thread, the connection threads included) and keeps serving the next client.
//!
//! A panic in pgwire's decoding of a frontend message is contained by the server (see
//! `tolerate_contained_decoder_panics`); every other panic is a finding.
//!
//! The first byte chooses where the input starts: odd, after a valid startup message (user
//! `steady`, database `postgres`) and a query setting `statement_timeout` to one second, so that the input
//! reaches the query and COPY messages; even, from the very first byte (startup, SSL and cancel
//! requests). The harness then closes its side and reads until the server closes its own (or
//! gives up after a few seconds: a statement can outlive its client by a moment).
#![no_main]

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::sync::OnceLock;
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use steady_server::server::{Server, ServerConfig};

const SETUP: &str = "
    CREATE TABLE t (a integer PRIMARY KEY, b text, c numeric);
    INSERT INTO t SELECT g, 'x' || g, g / 3.0 FROM generate_series(1, 50) g;
";

/// How long the harness reads the server's answer before it gives up on a connection.
const READ_LIMIT: Duration = Duration::from_secs(5);

/// The address of the server every input talks to, started once on a database in a temporary
/// directory (left behind when the fuzzer exits: the server is never stopped).
fn server() -> SocketAddr {
    static ADDRESS: OnceLock<(tempfile::TempDir, SocketAddr)> = OnceLock::new();
    ADDRESS
        .get_or_init(|| {
            let (dir, db) = steady_fuzz::database("postgres", "steady", SETUP);
            tolerate_contained_decoder_panics();
            let (sender, address) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                let runtime = tokio::runtime::Runtime::new().expect("runtime");
                runtime.block_on(async move {
                    let config = ServerConfig {
                        listen: "127.0.0.1:0".into(),
                        password: None,
                        tls: None,
                    };
                    let server = Server::bind(db, &config).await.expect("bind");
                    sender
                        .send(server.local_addr().expect("address"))
                        .expect("send");
                    server.run(std::future::pending()).await.expect("serve");
                });
            });
            (dir, address.recv().expect("server address"))
        })
        .1
}

/// pgwire 0.42's message decoders panic (in `bytes`) on a message whose fields run past what
/// was received; the server catches that panic and ends the connection with FATAL 08P01
/// (`steady_server::server::next_message`, tested by `steady/tests/hostile_clients.rs`).
/// libfuzzer-sys's panic hook aborts on any panic, caught or not, so this hook lets through those
/// raised while pgwire decodes a frontend message and hands every other panic to it.
fn tolerate_contained_decoder_panics() {
    let fuzzer_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let trace = std::backtrace::Backtrace::force_capture().to_string();
        if !trace.contains("decode_packet<pgwire::messages::") {
            fuzzer_hook(info);
        }
    }));
}

/// A protocol-3.0 startup message for user `steady` on database `postgres`, then a query that
/// sets `statement_timeout` to one second.
fn startup_message() -> Vec<u8> {
    let mut body = 196_608_i32.to_be_bytes().to_vec();
    for (name, value) in [("user", "steady"), ("database", "postgres")] {
        body.extend_from_slice(name.as_bytes());
        body.push(0);
        body.extend_from_slice(value.as_bytes());
        body.push(0);
    }
    body.push(0);
    let mut message = (i32::try_from(body.len() + 4).expect("short"))
        .to_be_bytes()
        .to_vec();
    message.extend_from_slice(&body);
    let query = b"SET statement_timeout = '1s'\0";
    message.push(b'Q');
    message.extend_from_slice(&(i32::try_from(query.len() + 4).expect("short")).to_be_bytes());
    message.extend_from_slice(query);
    message
}

fuzz_target!(|input: &[u8]| {
    let Some((&mode, rest)) = input.split_first() else {
        return;
    };
    let mut stream = TcpStream::connect(server()).expect("the server accepts connections");
    stream.set_read_timeout(Some(READ_LIMIT)).expect("timeout");
    let mut bytes = if mode % 2 == 1 {
        startup_message()
    } else {
        Vec::new()
    };
    bytes.extend_from_slice(rest);
    // The server may close the connection before it has read everything (a FATAL error).
    let _ = stream.write_all(&bytes);
    let _ = stream.shutdown(Shutdown::Write);
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
});
