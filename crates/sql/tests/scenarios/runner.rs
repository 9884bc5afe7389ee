//! The goldenscript runner of the isolation and EXPLAIN scenarios: each command is SQL for the
//! session named by its prefix (`t1: > UPDATE ...`; no prefix: the session `main`), run on one
//! in-process database.
//!
//! A command is SQL either written literally after `>` or as bare words (`t1: BEGIN ISOLATION LEVEL
//! SERIALIZABLE`). A statement that waits for a row lock answers `(blocked)`; when a later command
//! releases it, its answer is shown at the end of that command's block as `t2: ...`, and the block
//! must end there so the output keeps the order things happened in.

use std::error::Error;

use goldenscript::{Argument, Block, Command, Context};

use steady_engine::engine::EngineConfig;

use crate::common;
use crate::sessions::Sessions;

/// The session of commands without a prefix.
pub const MAIN_SESSION: &str = "main";

pub struct SqlRunner {
    sessions: Sessions,
    /// Answers of released sessions, shown at the end of the block.
    released: Vec<(String, String)>,
    /// The database's directory (dropped after the sessions).
    _dir: tempfile::TempDir,
}

impl SqlRunner {
    /// A fresh database in a temporary directory: row locks waited for at most 10 s, purge in the
    /// foreground only (plans and counts do not depend on a background thread's progress).
    pub fn open() -> Self {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let config = EngineConfig {
            background_purge: false,
            ..common::config(1024)
        };
        let db = common::open_database(dir.path(), &config);
        SqlRunner {
            sessions: Sessions::new(db),
            released: Vec::new(),
            _dir: dir,
        }
    }
}

impl goldenscript::Runner for SqlRunner {
    type Command = Command;

    fn run(&mut self, command: &Command, context: &Context) -> Result<String, Box<dyn Error>> {
        if let Some((name, _)) = self.released.first() {
            return Err(format!(
                "{name}'s blocked statement finished: end the block after the command that released it"
            )
            .into());
        }
        let sql = sql_of(command)?;
        let session = context.prefix.as_deref().unwrap_or(MAIN_SESSION);
        let outcome = self.sessions.execute(session, &sql)?;
        self.released = outcome.released;
        Ok(outcome.output)
    }

    fn end_block(&mut self, _: &Block) -> Result<String, Box<dyn Error>> {
        let mut out = String::new();
        for (name, answer) in self.released.drain(..) {
            for line in answer.lines() {
                out.push_str(&format!("{name}: {line}\n"));
            }
        }
        Ok(out)
    }

    fn end_script(&mut self) -> Result<(), Box<dyn Error>> {
        let blocked = self.sessions.blocked();
        self.sessions.close();
        if blocked.is_empty() {
            Ok(())
        } else {
            Err(format!("still blocked at the end of the script: {blocked:?}").into())
        }
    }
}

/// The SQL of a command: its name (a `>` literal holds the whole statement) followed by its bare
/// words.
pub fn sql_of(command: &Command) -> Result<String, Box<dyn Error>> {
    let mut sql = command.name.clone();
    for arg in &command.args {
        let Argument::Positional(word) = arg else {
            return Err(format!("write SQL with '=' as a literal: > {}", command.name).into());
        };
        sql.push(' ');
        sql.push_str(word);
    }
    Ok(sql)
}
