//! Shared by the tests that run a real `steady serve`: starting it on a free loopback port.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;

/// Starts `steady serve` on `dir` and port 0 (a new directory gets a small redo log:
/// [`small_redo_log`]); returns the process, the port it listens on, and its stderr lines
/// (read by a thread until the server ends; dropping the receiver discards them).
pub fn serve(dir: &Path) -> (Child, u16, mpsc::Receiver<String>) {
    small_redo_log(dir);
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
    let (sender, log) = mpsc::channel();
    for line in logged.lines() {
        let _ = sender.send(line.to_owned());
    }
    std::thread::spawn(move || {
        for line in lines.map_while(Result::ok) {
            let _ = sender.send(line);
        }
    });
    (child, port, log)
}

/// Gives `dir`, when it holds no database yet, a 64 MB redo log (`redo_log_size` added to its
/// steady.toml) instead of the default 1 GB: tests run several servers at once, and a CI
/// machine's disk is small.
pub fn small_redo_log(dir: &Path) {
    if dir.join("space_000000.sdb").exists() {
        return;
    }
    let config = dir.join("steady.toml");
    let mut text = std::fs::read_to_string(&config).unwrap_or_default();
    if !text.contains("redo_log_size") {
        text.push_str("redo_log_size = \"64MB\"\n");
        std::fs::write(&config, text).expect("write steady.toml");
    }
}
