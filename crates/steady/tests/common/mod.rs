//! Shared by the tests that run a real `steady serve`: starting it on a free loopback port.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// Starts `steady serve` on `dir` and port 0; returns the process and the port it listens on.
/// Its log is drained in the background.
pub fn start_server(dir: &Path) -> (Child, u16) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_steady"))
        .args([
            "serve",
            "--data",
            dir.to_str().unwrap(),
            "--listen",
            "127.0.0.1:0",
        ])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start steady serve");
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut logged = String::new();
    let port = loop {
        let Some(line) = lines.next() else {
            panic!("steady serve ended before it logged its address; its log:\n{logged}");
        };
        let line = line.expect("stderr");
        logged.push_str(&line);
        logged.push('\n');
        if let Some((_, rest)) = line.split_once("listening on 127.0.0.1:") {
            break rest.split(' ').next().unwrap().parse().unwrap();
        }
    };
    std::thread::spawn(move || lines.for_each(drop));
    (child, port)
}
