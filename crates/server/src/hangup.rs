//! Statements whose client has gone. While a statement runs, its connection's thread is inside the
//! engine and reads nothing from the socket, so a client that disconnects (a killed psql, a
//! driver's timeout) would leave its statement running to the end, holding a core and its locks.
//! The [`HangupWatch`] keeps the sockets of the connections running a statement, and one thread
//! polls them for a hang-up (`POLLRDHUP`, as PostgreSQL's `client_connection_check_interval`
//! does) every [`CHECK_INTERVAL`]; the statement of a client that hung up is canceled
//! ([`CancelReason::ClientGone`]), its connection then ends and its transaction rolls back.
//!
//! Invariants: a socket is in the watch only while its connection runs a statement (a
//! [`Watching`] guard), so its descriptor stays open, and cannot be reused by another connection,
//! for as long as it is registered. A hang-up seen on a descriptor polled from a snapshot acts only
//! on the same registration (by id), never on a later one that reused the number. The thread
//! sleeps on a condition variable while no statement runs.

use std::collections::HashMap;
use std::os::fd::RawFd;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::thread::JoinHandle;
use std::time::Duration;

use steady_sql::execution::cancel::{CancelHandle, CancelReason};

/// How often the sockets of running statements are checked.
pub const CHECK_INTERVAL: Duration = Duration::from_millis(200);

/// A registered running statement.
struct Running {
    socket: RawFd,
    cancel: CancelHandle,
    /// Set once its client hung up (and the statement was canceled): not polled again.
    hung_up: bool,
}

#[derive(Default)]
struct Registry {
    next_id: u64,
    running: HashMap<u64, Running>,
    /// The watch thread waits for a statement to watch.
    waiting: bool,
    stopped: bool,
}

#[derive(Default)]
struct Shared {
    registry: Mutex<Registry>,
    wake: Condvar,
}

impl Shared {
    fn registry(&self) -> MutexGuard<'_, Registry> {
        self.registry.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The server's watch over the sockets of running statements.
pub struct HangupWatch {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
}

impl HangupWatch {
    /// Starts the watch thread.
    pub fn start() -> std::io::Result<HangupWatch> {
        let shared = Arc::new(Shared::default());
        let watched = Arc::clone(&shared);
        let thread = std::thread::Builder::new()
            .name("steady-hangup".into())
            .spawn(move || watch(&watched))?;
        Ok(HangupWatch {
            shared,
            thread: Some(thread),
        })
    }

    /// Watches `socket` until the returned guard is dropped; a hang-up cancels `cancel`'s
    /// statement. `socket` must stay open while the guard lives.
    pub fn watch(&self, socket: RawFd, cancel: CancelHandle) -> Watching<'_> {
        let mut registry = self.shared.registry();
        let id = registry.next_id;
        registry.next_id += 1;
        registry.running.insert(
            id,
            Running {
                socket,
                cancel,
                hung_up: false,
            },
        );
        if registry.waiting {
            registry.waiting = false;
            self.shared.wake.notify_one();
        }
        Watching { watch: self, id }
    }
}

impl Drop for HangupWatch {
    fn drop(&mut self) {
        self.shared.registry().stopped = true;
        self.shared.wake.notify_one();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A statement's socket in the watch, until dropped.
pub struct Watching<'a> {
    watch: &'a HangupWatch,
    id: u64,
}

impl Drop for Watching<'_> {
    fn drop(&mut self) {
        self.watch.shared.registry().running.remove(&self.id);
    }
}

/// The watch thread: polls the sockets of running statements until the watch stops.
fn watch(shared: &Shared) {
    while let Some(sockets) = next_round(shared) {
        let mut polled: Vec<libc::pollfd> = sockets
            .iter()
            .map(|&(_, fd)| libc::pollfd {
                fd,
                events: libc::POLLRDHUP,
                revents: 0,
            })
            .collect();
        let timeout = CHECK_INTERVAL.as_millis() as libc::c_int;
        // SAFETY: `polled` is a valid, exclusively borrowed array of `polled.len()` pollfds.
        let ready =
            unsafe { libc::poll(polled.as_mut_ptr(), polled.len() as libc::nfds_t, timeout) };
        if ready <= 0 {
            continue;
        }
        let hung_up = sockets
            .iter()
            .zip(&polled)
            .filter(|(_, p)| p.revents & (libc::POLLRDHUP | libc::POLLHUP | libc::POLLERR) != 0)
            .map(|(&(id, _), _)| id);
        cancel_hung_up(shared, hung_up);
    }
}

/// Waits until some statement runs whose client has not hung up, and returns their ids and
/// sockets; None once the watch stops.
fn next_round(shared: &Shared) -> Option<Vec<(u64, RawFd)>> {
    let mut registry = shared.registry();
    loop {
        if registry.stopped {
            return None;
        }
        let sockets: Vec<(u64, RawFd)> = registry
            .running
            .iter()
            .filter(|(_, r)| !r.hung_up)
            .map(|(&id, r)| (id, r.socket))
            .collect();
        if !sockets.is_empty() {
            return Some(sockets);
        }
        registry.waiting = true;
        registry = shared
            .wake
            .wait(registry)
            .unwrap_or_else(PoisonError::into_inner);
    }
}

fn cancel_hung_up(shared: &Shared, ids: impl Iterator<Item = u64>) {
    let mut registry = shared.registry();
    for id in ids {
        // Gone if its statement ended after the snapshot: its socket may be another's now.
        if let Some(running) = registry.running.get_mut(&id) {
            running.hung_up = true;
            running.cancel.cancel(CancelReason::ClientGone);
            tracing::info!("canceling a statement: its client disconnected");
        }
    }
}

#[cfg(test)]
mod tests {
    use std::io::Write;
    use std::net::{TcpListener, TcpStream};
    use std::os::fd::AsRawFd;
    use std::time::Instant;

    use super::*;

    /// Waits (bounded) until `handle`'s statement has been asked to stop.
    fn wait_canceled(handle: &CancelHandle, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if handle.check().is_err() {
                return true;
            }
            std::thread::yield_now();
        }
        false
    }

    #[test]
    fn a_hang_up_cancels_only_the_statement_of_that_client() {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let address = listener.local_addr().unwrap();
        let mut staying = TcpStream::connect(address).unwrap();
        let (staying_server, _) = listener.accept().unwrap();
        let leaving = TcpStream::connect(address).unwrap();
        let (leaving_server, _) = listener.accept().unwrap();
        let watch = HangupWatch::start().unwrap();
        let (stays, leaves) = (CancelHandle::default(), CancelHandle::default());
        let _a = watch.watch(staying_server.as_raw_fd(), stays.clone());
        let _b = watch.watch(leaving_server.as_raw_fd(), leaves.clone());
        staying
            .write_all(b"pipelined bytes are not a hang-up")
            .unwrap();
        drop(leaving);
        assert!(wait_canceled(&leaves, Duration::from_secs(5)));
        let err = leaves.check().unwrap_err();
        assert_eq!(err.code, "08006");
        // The staying client's socket has been polled (the round that saw the hang-up) and is
        // still fine.
        assert!(stays.check().is_ok());
    }
}
