//! Named sessions of one database, each on a thread of its own, so that a statement waiting for a
//! row lock leaves the script free to go on with another session.
//!
//! After each statement the sessions are settled: every session with a statement in flight has
//! either answered or is waiting in the engine's lock manager. Waiting is read from the lock
//! manager itself (`LockManager::waiting_for` over the transaction ids handed out so far), so the
//! outcome does not depend on timing: a blocked statement stays blocked until another session ends
//! or rolls back the transaction it waits for, and no sleep stands in for synchronisation.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use steady_engine::engine::Isolation;
use steady_sql::execution::cancel::{CancelHandle, CancelReason};
use steady_sql::{Database, QueryResult, SqlError};

/// How long one look at the answers waits before the lock manager is read again.
const POLL: Duration = Duration::from_millis(2);

/// The answer of a session to one statement, formatted.
type Answer = (String, String);

/// A session's thread and what the script knows about it.
struct SessionThread {
    requests: Option<Sender<String>>,
    cancel: CancelHandle,
    /// A statement was sent and has not answered yet.
    in_flight: bool,
    thread: Option<JoinHandle<()>>,
}

/// What one statement of a session led to.
pub struct Outcome {
    /// The session's own answer, or `(blocked)`.
    pub output: String,
    /// Other sessions whose blocked statements finished meanwhile, by name.
    pub released: Vec<Answer>,
}

/// The sessions of one database.
pub struct Sessions {
    db: Arc<Database>,
    threads: BTreeMap<String, SessionThread>,
    answers: Receiver<Answer>,
    answer_sender: Sender<Answer>,
    /// No transaction of a session has an id below this one.
    first_txn: u64,
}

impl Sessions {
    pub fn new(db: Arc<Database>) -> Self {
        let (answer_sender, answers) = mpsc::channel();
        let first_txn = next_txn_id(&db);
        Sessions {
            db,
            threads: BTreeMap::new(),
            answers,
            answer_sender,
            first_txn,
        }
    }

    /// Runs `sql` in session `name` (opened at its first statement) and settles every session.
    pub fn execute(&mut self, name: &str, sql: &str) -> Result<Outcome, String> {
        if !self.threads.contains_key(name) {
            let thread = self.spawn(name);
            self.threads.insert(name.to_owned(), thread);
        }
        let thread = self.threads.get_mut(name).expect("just opened");
        if thread.in_flight {
            return Err(format!(
                "{name} is blocked and cannot run another statement"
            ));
        }
        let requests = thread.requests.as_ref().expect("the session is open");
        requests.send(sql.to_owned()).map_err(|e| e.to_string())?;
        thread.in_flight = true;
        let mut answers = self.settle();
        let output = match answers.iter().position(|(n, _)| n == name) {
            Some(at) => answers.remove(at).1,
            None => "(blocked)\n".to_owned(),
        };
        Ok(Outcome {
            output,
            released: answers,
        })
    }

    /// The sessions whose statements are blocked.
    pub fn blocked(&self) -> Vec<String> {
        let in_flight = self.threads.iter().filter(|(_, t)| t.in_flight);
        in_flight.map(|(name, _)| name.clone()).collect()
    }

    /// The database the sessions share.
    pub fn database(&self) -> &Arc<Database> {
        &self.db
    }

    /// Ends every session: blocked statements are cancelled, open transactions roll back.
    pub fn close(&mut self) {
        for thread in self.threads.values() {
            if thread.in_flight {
                thread.cancel.cancel(CancelReason::UserRequest);
            }
        }
        for thread in self.threads.values_mut() {
            thread.requests = None;
            if let Some(handle) = thread.thread.take() {
                handle.join().expect("a session thread panicked");
            }
        }
        self.threads.clear();
    }

    fn spawn(&self, name: &str) -> SessionThread {
        let mut session = self.db.session(name);
        let cancel = session.cancel_handle();
        let (requests, incoming) = mpsc::channel::<String>();
        let answers = self.answer_sender.clone();
        let owner = name.to_owned();
        let thread = std::thread::spawn(move || {
            for sql in incoming {
                let output = format_results(&session.execute(&sql));
                if answers.send((owner.clone(), output)).is_err() {
                    return;
                }
            }
        });
        SessionThread {
            requests: Some(requests),
            cancel,
            in_flight: false,
            thread: Some(thread),
        }
    }

    /// Waits until every statement in flight has answered or waits for a lock, and returns the
    /// answers in the order they came.
    fn settle(&mut self) -> Vec<Answer> {
        let mut answers = Vec::new();
        loop {
            while let Ok(answer) = self.answers.try_recv() {
                self.record(&answer);
                answers.push(answer);
            }
            let in_flight = self.threads.values().filter(|t| t.in_flight).count();
            if in_flight == 0 || self.waiting_transactions() == in_flight {
                return answers;
            }
            match self.answers.recv_timeout(POLL) {
                Ok(answer) => {
                    self.record(&answer);
                    answers.push(answer);
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => unreachable!("the runner keeps a sender"),
            }
        }
    }

    fn record(&mut self, (name, _): &Answer) {
        if let Some(thread) = self.threads.get_mut(name) {
            thread.in_flight = false;
        }
    }

    /// How many transactions wait in the lock manager right now. Only sessions take locks, and a
    /// session waits in at most one transaction, so this counts the blocked sessions.
    fn waiting_transactions(&self) -> usize {
        let locks = self.db.engine().locks();
        let end = next_txn_id(&self.db);
        let waiting = (self.first_txn..end).filter(|&txn| locks.waiting_for(txn).is_some());
        waiting.count()
    }
}

impl Drop for Sessions {
    fn drop(&mut self) {
        self.close();
    }
}

/// An id above every transaction begun so far (the id of a transaction begun and ended at once).
fn next_txn_id(db: &Database) -> u64 {
    let probe = db
        .engine()
        .begin(Isolation::ReadCommitted)
        .expect("a transaction begins");
    let id = probe.id();
    probe.rollback().expect("an empty transaction rolls back");
    id
}

/// The answers to the statements of one command: rows one per line (values separated by `, `,
/// `(0 rows)` for none), the command tag for statements without rows, notices as `NOTICE: ...`,
/// and an error as `ERROR: <SQLSTATE> <message>`.
pub fn format_results(results: &[Result<QueryResult, SqlError>]) -> String {
    let mut out = String::new();
    for result in results {
        match result {
            Ok(result) => format_result(&mut out, result),
            Err(err) => {
                let _ = writeln!(out, "ERROR: {} {}", err.code, err.message);
            }
        }
    }
    out
}

fn format_result(out: &mut String, result: &QueryResult) {
    for notice in &result.notices {
        let _ = writeln!(out, "{}: {}", notice.severity, notice.message);
    }
    if !result.has_rows() {
        let _ = writeln!(out, "{}", result.tag);
        return;
    }
    if result.rows.is_empty() {
        out.push_str("(0 rows)\n");
    }
    for row in &result.rows {
        let cells: Vec<String> = row.iter().map(ToString::to_string).collect();
        let _ = writeln!(out, "{}", cells.join(", "));
    }
}
