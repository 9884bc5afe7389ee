//! Clients that send what no well-behaved driver sends — found by the `wire` fuzz target — get
//! an answer or a FATAL error naming the fault, and the server goes on serving everyone else.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// A protocol-3.0 startup message for user `steady` on database `postgres`.
fn startup_message() -> Vec<u8> {
    let mut body = 196_608_i32.to_be_bytes().to_vec();
    for text in ["user", "steady", "database", "postgres", ""] {
        body.extend_from_slice(text.as_bytes());
        body.push(0);
    }
    let mut message = (body.len() as i32 + 4).to_be_bytes().to_vec();
    message.extend_from_slice(&body);
    message
}

/// A typed frontend message.
fn message(kind: u8, body: &[u8]) -> Vec<u8> {
    let mut message = vec![kind];
    message.extend_from_slice(&(body.len() as i32 + 4).to_be_bytes());
    message.extend_from_slice(body);
    message
}

/// Sends `bytes` after a startup message and returns all the server wrote back until it closed
/// the connection (on a FATAL error or a Terminate the bytes end with). The sending side stays
/// open: a half-closed socket reads as a client that hung up, and its statement is canceled.
fn exchange(port: u16, bytes: &[u8]) -> Vec<u8> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .expect("timeout");
    let mut sent = startup_message();
    sent.extend_from_slice(bytes);
    stream.write_all(&sent).expect("send");
    let mut answer = Vec::new();
    stream
        .read_to_end(&mut answer)
        .expect("the server closes the connection");
    answer
}

/// The text of the answer's messages' fields, for searching.
fn printable(answer: &[u8]) -> String {
    answer
        .iter()
        .map(|&b| {
            if b.is_ascii_graphic() || b == b' ' {
                b as char
            } else {
                '|'
            }
        })
        .collect()
}

/// A Parse whose declared length is shorter than its fields made pgwire's decoder panic and end
/// the connection's thread without a word.
#[test]
fn a_malformed_message_ends_only_its_connection_with_a_fatal_08p01() {
    let dir = tempfile::tempdir().unwrap();
    let (mut server, port, _) = common::serve(dir.path());
    // A Parse whose declared length (24) ends inside its query text: the decoder reads the
    // parameter count and types past the message, into a Bind and beyond what was sent.
    let mut malformed = vec![b'P', 0, 0, 0, 0x18, 0];
    malformed.extend_from_slice(b"sele\0");
    malformed.extend_from_slice(&[0x18, 0]);
    malformed.extend_from_slice(b"select $1::int\0\0\0");
    malformed.extend_from_slice(&message(b'B', &[0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 9, 0, 0, 0]));
    malformed.extend_from_slice(&message(b'S', &[]));
    let answer = printable(&exchange(port, &malformed));
    assert!(
        answer.contains("FATAL") && answer.contains("08P01"),
        "no FATAL 08P01 in {answer}"
    );

    let query = message(b'Q', b"SELECT 40 + 2\0");
    let answer = printable(&exchange(port, &[query, message(b'X', &[])].concat()));
    assert!(
        answer.contains("42"),
        "the next client got no row: {answer}"
    );
    server.kill().unwrap();
    server.wait().unwrap();
}

/// An Execute may ask for up to 2^31 - 1 rows; pgwire reserved room for that many before
/// fetching, and the failed allocation aborted the whole server.
#[test]
fn an_execute_asking_for_two_billion_rows_gets_the_rows_there_are() {
    let dir = tempfile::tempdir().unwrap();
    let (mut server, port, _) = common::serve(dir.path());
    let parse = message(b'P', b"\0SELECT g FROM generate_series(1, 3) g\0\0\0");
    let bind = message(b'B', &[0, 0, 0, 0, 0, 0, 0, 0]);
    let mut execute_body = vec![0];
    execute_body.extend_from_slice(&i32::MAX.to_be_bytes());
    let execute = message(b'E', &execute_body);
    let sync = message(b'S', &[]);
    let terminate = message(b'X', &[]);
    let answer = exchange(port, &[parse, bind, execute, sync, terminate].concat());
    let data_rows = answer
        .windows(5)
        .filter(|w| w[0] == b'D' && w[1..5] == [0, 0, 0, 11])
        .count();
    assert_eq!(data_rows, 3, "{}", printable(&answer));
    assert!(
        printable(&answer).contains("SELECT 3"),
        "{}",
        printable(&answer)
    );
    server.kill().unwrap();
    server.wait().unwrap();
}
