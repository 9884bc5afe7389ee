//! The goldenscript runner of the recovery scenarios: the database lives in a child process (this
//! test binary, run as `scenario_child`), so that `crash` is a real one — SIGKILL, with whatever the
//! process had not written to its files lost, no rollback, no checkpoint — and `restart` opens the
//! same directory in a new child, which runs recovery.
//!
//! Commands: SQL for the session named by the prefix (as in the isolation runner; a statement must
//! not block here), `crash` (kill the child), and `restart` (a clean shutdown first if the child is
//! running: sessions end, open transactions roll back, the engine closes with a checkpoint; then a
//! new child). The parent sends one JSON line per command on the child's stdin; the child answers
//! with one line starting with [`REPLY`] on its stdout.

use std::error::Error;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::Arc;

use goldenscript::Context;
use serde_json::{json, Value};

use crate::common;
use crate::runner::{sql_of, MAIN_SESSION};
use crate::sessions::Sessions;

/// The environment variable that gives the child its data directory.
pub const CHILD_DIR_ENV: &str = "STEADY_SCENARIO_CHILD_DIR";
/// The start of every answer line of the child.
const REPLY: &str = "scenario-reply: ";

struct Running {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

pub struct ProcessRunner {
    dir: tempfile::TempDir,
    running: Option<Running>,
}

impl ProcessRunner {
    pub fn new() -> Self {
        ProcessRunner {
            dir: tempfile::tempdir().expect("a temporary directory"),
            running: None,
        }
    }

    fn start(&mut self) -> Result<&mut Running, Box<dyn Error>> {
        if self.running.is_none() {
            let mut child = Command::new(std::env::current_exe()?)
                .args([
                    "scenario_child",
                    "--exact",
                    "--ignored",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env(CHILD_DIR_ENV, self.dir.path())
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::inherit())
                .spawn()?;
            let stdin = child.stdin.take().ok_or("no stdin")?;
            let stdout = BufReader::new(child.stdout.take().ok_or("no stdout")?);
            self.running = Some(Running {
                child,
                stdin,
                stdout,
            });
        }
        Ok(self.running.as_mut().expect("started"))
    }

    fn ask(&mut self, request: &Value) -> Result<String, Box<dyn Error>> {
        let running = self.start()?;
        writeln!(running.stdin, "{request}")?;
        running.stdin.flush()?;
        let mut line = String::new();
        loop {
            line.clear();
            if running.stdout.read_line(&mut line)? == 0 {
                return Err("the database process ended without answering".into());
            }
            // libtest's own `test scenario_child ... ` may precede the first reply on its line.
            if let Some((_, reply)) = line.trim_end().split_once(REPLY) {
                let reply: Value = serde_json::from_str(reply)?;
                if let Some(error) = reply.get("error").and_then(Value::as_str) {
                    return Err(error.into());
                }
                let output = reply.get("output").and_then(Value::as_str);
                return Ok(output.unwrap_or_default().to_owned());
            }
        }
    }

    fn crash(&mut self) -> Result<(), Box<dyn Error>> {
        let mut running = self.running.take().ok_or("no database process to crash")?;
        running.child.kill()?;
        running.child.wait()?;
        Ok(())
    }

    fn shut_down(&mut self) -> Result<(), Box<dyn Error>> {
        if self.running.is_some() {
            self.ask(&json!({ "shutdown": true }))?;
            let mut running = self.running.take().expect("running");
            let status = running.child.wait()?;
            if !status.success() {
                return Err(format!("the database process exited with {status}").into());
            }
        }
        Ok(())
    }
}

impl goldenscript::Runner for ProcessRunner {
    type Command = goldenscript::Command;

    fn run(
        &mut self,
        command: &goldenscript::Command,
        context: &Context,
    ) -> Result<String, Box<dyn Error>> {
        match command.name.as_str() {
            "crash" if command.args.is_empty() => self.crash().map(|()| String::new()),
            "restart" if command.args.is_empty() => {
                self.shut_down()?;
                self.start().map(|_| String::new())
            }
            _ => {
                let session = context.prefix.as_deref().unwrap_or(MAIN_SESSION);
                self.ask(&json!({ "session": session, "sql": sql_of(command)? }))
            }
        }
    }

    fn end_script(&mut self) -> Result<(), Box<dyn Error>> {
        self.shut_down()
    }
}

impl Drop for ProcessRunner {
    fn drop(&mut self) {
        if let Some(mut running) = self.running.take() {
            let _ = running.child.kill();
            let _ = running.child.wait();
        }
    }
}

/// The child: opens the database on `dir` and serves requests from stdin until told to shut down
/// (or killed).
pub fn serve(dir: &Path) {
    let config = common::config(1024);
    let mut sessions = Sessions::new(common::open_database(dir, &config));
    let mut stdout = std::io::stdout().lock();
    for line in std::io::stdin().lock().lines() {
        let request: Value = serde_json::from_str(&line.expect("a request")).expect("JSON");
        if request.get("shutdown").is_some() {
            let engine = Arc::clone(sessions.database().engine());
            drop(sessions);
            let reply = match engine.close() {
                Ok(()) => json!({ "output": "" }),
                Err(err) => json!({ "error": format!("closing the engine: {err}") }),
            };
            writeln!(stdout, "{REPLY}{reply}").expect("stdout");
            return;
        }
        let session = request["session"].as_str().expect("a session");
        let sql = request["sql"].as_str().expect("SQL");
        let reply = match sessions.execute(session, sql) {
            Ok(outcome) if outcome.released.is_empty() && sessions.blocked().is_empty() => {
                json!({ "output": outcome.output })
            }
            Ok(_) => json!({ "error": "a statement blocked, which recovery scenarios do not do" }),
            Err(err) => json!({ "error": err }),
        };
        writeln!(stdout, "{REPLY}{reply}").expect("stdout");
        stdout.flush().expect("stdout");
    }
}
