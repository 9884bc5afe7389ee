//! A plain TCP connection's socket as the protocol loop reads and writes it: blocking system calls
//! on the connection's own thread, with the runtime's readiness only after a quiet spell.
//!
//! # Why blocking
//!
//! Every connection has an OS thread and a current-thread runtime of its own (see
//! [`crate::server`]), so nothing else waits to run while the connection waits for its client.
//! Through tokio's `TcpStream` each statement cost three system calls — `epoll_wait`, then `recv`,
//! then `send` — because tokio clears a socket's readiness after every short read. Here a read is
//! one blocking `recv` and a write one blocking `send`, as in PostgreSQL's backends: two system
//! calls per statement, and the thread sleeps in the socket's own wait queue.
//!
//! The runtime still has timers to run between statements (the idle-in-transaction check, the
//! shutdown signal), so a blocking call waits at most [`BLOCKING_WAIT`] (`SO_RCVTIMEO` /
//! `SO_SNDTIMEO`). When it times out, the socket falls back to readiness: it waits through the
//! runtime (`AsyncFd`, registered once) and retries without blocking (`MSG_DONTWAIT`), so the
//! runtime's timers run while the client is quiet.
//!
//! Invariant: the descriptor stays in blocking mode with both timeouts set for its whole life;
//! only calls made with `MSG_DONTWAIT` return without waiting.

use std::io::{self, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::os::fd::AsRawFd;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// How long one blocking read or write waits before handing the wait to the runtime.
pub const BLOCKING_WAIT: Duration = Duration::from_millis(200);

/// A connected TCP socket read and written with blocking calls (see the module doc).
pub struct ConnectionSocket {
    stream: AsyncFd<TcpStream>,
}

impl ConnectionSocket {
    /// Takes `stream` (in either mode) and puts it in blocking mode with the timeouts; must be
    /// called inside a runtime, with which it registers the socket.
    pub fn new(stream: TcpStream) -> io::Result<Self> {
        stream.set_nonblocking(false)?;
        stream.set_read_timeout(Some(BLOCKING_WAIT))?;
        stream.set_write_timeout(Some(BLOCKING_WAIT))?;
        // SAFETY: the descriptor is the stream's own, open until the `AsyncFd` drops it.
        let stream = unsafe { AsyncFd::register(stream) }?;
        Ok(ConnectionSocket { stream })
    }

    /// Reads what has arrived without waiting.
    fn read_now(&self, into: &mut [u8]) -> io::Result<usize> {
        let fd = self.stream.get_ref().as_raw_fd();
        // SAFETY: `into` is valid for writes of its length, and `fd` is open while `self` lives.
        let read =
            unsafe { libc::recv(fd, into.as_mut_ptr().cast(), into.len(), libc::MSG_DONTWAIT) };
        usize::try_from(read).map_err(|_| io::Error::last_os_error())
    }

    /// Writes what fits now without waiting.
    fn write_now(&self, from: &[u8]) -> io::Result<usize> {
        let fd = self.stream.get_ref().as_raw_fd();
        let flags = libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL;
        // SAFETY: `from` is valid for reads of its length, and `fd` is open while `self` lives.
        let written = unsafe { libc::send(fd, from.as_ptr().cast(), from.len(), flags) };
        usize::try_from(written).map_err(|_| io::Error::last_os_error())
    }
}

/// Whether a blocking call's error only means it waited its [`BLOCKING_WAIT`] in vain (or a
/// signal interrupted it).
fn waited_in_vain(err: &io::Error) -> bool {
    matches!(
        err.kind(),
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut | io::ErrorKind::Interrupted
    )
}

impl AsyncRead for ConnectionSocket {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let into = buf.initialize_unfilled();
        let read = match this.stream.get_ref().read(into) {
            Err(err) if waited_in_vain(&err) => loop {
                let mut ready = ready!(this.stream.poll_read_ready(cx))?;
                if let Ok(read) = ready.try_io(|_| this.read_now(into)) {
                    break read;
                }
            },
            read => read,
        }?;
        buf.advance(read);
        Poll::Ready(Ok(()))
    }
}

impl AsyncWrite for ConnectionSocket {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        from: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        match this.stream.get_ref().write(from) {
            Err(err) if waited_in_vain(&err) => loop {
                let mut ready = ready!(this.stream.poll_write_ready(cx))?;
                if let Ok(written) = ready.try_io(|_| this.write_now(from)) {
                    return Poll::Ready(written);
                }
            },
            written => Poll::Ready(written),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(self.stream.get_ref().shutdown(Shutdown::Write))
    }
}
