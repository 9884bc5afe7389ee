//! Batches of page reads and writes in flight at once: an `io_uring` ring where the kernel gives
//! one, plain positioned I/O otherwise (chosen when the batch is made and logged once per process).
//!
//! A caller queues reads or writes ([`BatchIo::queue`]), each of a run of neighbouring pages of
//! one file from or into buffers it names in an `iovec` array (one vectored request: a run of pages
//! reaches the disk as one request), and keeps the array and the buffers alive and untouched until
//! that request's completion comes back from [`BatchIo::complete`]; up to the batch's depth are
//! in the kernel at once. Files without a descriptor (the in-memory file system of tests), and
//! every file under the fallback, are read or written at once in the calling thread; their
//! completions come back from the next [`BatchIo::complete`] like the others.

use std::io;
use std::os::fd::RawFd;
use std::sync::Once;

use io_uring::{opcode, types, IoUring};

use super::FileIo;

/// A request's completion: the tag it was queued with and how it ended.
pub type Completion = (u64, io::Result<()>);

/// Which way a request moves the bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Read,
    Write,
}

/// Requests in flight on an io_uring ring, or done at once.
pub struct BatchIo {
    ring: Option<IoUring>,
    depth: usize,
    /// Reads handed to the ring and not yet reaped.
    in_flight: usize,
    /// Completions of requests done at once, not yet returned.
    done: Vec<Completion>,
}

impl BatchIo {
    /// A batch keeping up to `depth` requests in flight: on io_uring unless `use_ring` is false or
    /// the kernel refuses a ring.
    pub fn new(depth: usize, use_ring: bool) -> Self {
        let depth = depth.clamp(1, 4096);
        let ring = match use_ring.then(|| IoUring::new(depth.next_power_of_two() as u32)) {
            Some(Ok(ring)) => {
                log_choice(&format!("io_uring ({depth} requests in flight)"));
                Some(ring)
            }
            Some(Err(err)) => {
                log_choice(&format!("positioned I/O (io_uring unavailable: {err})"));
                None
            }
            None => None,
        };
        BatchIo {
            ring,
            depth,
            in_flight: 0,
            done: Vec::new(),
        }
    }

    /// Whether requests go through io_uring.
    pub fn uses_ring(&self) -> bool {
        self.ring.is_some()
    }

    /// Requests queued whose completions have not been returned yet.
    pub fn pending(&self) -> usize {
        self.in_flight + self.done.len()
    }

    /// Queues one request moving the bytes at `offset` of `file` from or into the buffers of
    /// `iovecs`, in order; when the ring is full, first waits for earlier requests, whose
    /// completions go to `completed`.
    ///
    /// # Safety
    /// Each buffer must be valid for its length (for writes into it, for a read), aligned as the
    /// file's mode needs, and left alone — like `iovecs` itself — until [`BatchIo::complete`] (or
    /// `queue`) returns this request's completion; `file` must stay open until then.
    pub unsafe fn queue(
        &mut self,
        direction: Direction,
        file: &dyn FileIo,
        iovecs: &[libc::iovec],
        offset: u64,
        tag: u64,
        completed: &mut Vec<Completion>,
    ) {
        match (self.ring.is_some(), file.raw_fd()) {
            (true, Some(fd)) => {
                // SAFETY: passed on from the caller.
                unsafe { self.submit(direction, fd, iovecs, offset, tag, completed) }
            }
            _ => {
                // SAFETY: passed on from the caller.
                let done = unsafe { move_each(direction, file, iovecs, offset) };
                self.done.push((tag, done));
            }
        }
    }

    /// Moves completions into `completed`: at least `wait_for` of the pending requests (all of them
    /// when fewer are pending), and any others already finished.
    pub fn complete(&mut self, wait_for: usize, completed: &mut Vec<Completion>) {
        let from_done = self.done.len();
        completed.append(&mut self.done);
        self.reap(wait_for.saturating_sub(from_done), completed);
    }

    unsafe fn submit(
        &mut self,
        direction: Direction,
        fd: RawFd,
        iovecs: &[libc::iovec],
        offset: u64,
        tag: u64,
        completed: &mut Vec<Completion>,
    ) {
        while self.in_flight >= self.depth {
            self.reap(1, completed);
        }
        let len = iovecs.iter().map(|iovec| iovec.iov_len).sum();
        let count = u32::try_from(iovecs.len()).expect("a request's buffers fit in u32");
        let fd = types::Fd(fd);
        let entry = match direction {
            Direction::Read => opcode::Readv::new(fd, iovecs.as_ptr(), count)
                .offset(offset)
                .build(),
            Direction::Write => opcode::Writev::new(fd, iovecs.as_ptr(), count)
                .offset(offset)
                .build(),
        }
        .user_data(encode_tag(tag, len));
        let ring = self.ring.as_mut().expect("only called with a ring");
        // SAFETY: the buffers and the descriptor outlive the request (the caller's promise), and
        // the ring has room: it holds at least `depth` entries and fewer are in flight.
        unsafe { ring.submission().push(&entry) }.expect("the ring has room for `depth` requests");
        // A refused submit (EBUSY, EAGAIN) leaves the entry queued; the next wait submits it.
        let _ = ring.submit();
        self.in_flight += 1;
    }

    /// Takes every finished ring completion, waiting until at least `wait_for` (or all in
    /// flight) are taken.
    fn reap(&mut self, wait_for: usize, completed: &mut Vec<Completion>) {
        let Some(ring) = self.ring.as_mut() else {
            return;
        };
        let wait_for = wait_for.min(self.in_flight);
        let mut reaped = 0;
        loop {
            for entry in ring.completion() {
                let (tag, len) = decode_tag(entry.user_data());
                completed.push((tag, outcome(entry.result(), len)));
                reaped += 1;
                self.in_flight -= 1;
            }
            if reaped >= wait_for {
                return;
            }
            if let Err(err) = ring.submit_and_wait(1) {
                // Requests in flight own their buffers: the batch cannot give up on them.
                assert!(
                    err.kind() == io::ErrorKind::Interrupted,
                    "io_uring wait failed with requests in flight: {err}"
                );
            }
        }
    }
}

impl Drop for BatchIo {
    /// Waits for every read in flight: their buffers must not be reused under the kernel.
    fn drop(&mut self) {
        let mut completed = Vec::new();
        self.complete(self.pending(), &mut completed);
    }
}

/// Reads or writes the buffers of `iovecs` one after the other from `offset` of `file`.
///
/// # Safety
/// As for [`BatchIo::queue`]; the buffers are done with when this returns.
unsafe fn move_each(
    direction: Direction,
    file: &dyn FileIo,
    iovecs: &[libc::iovec],
    offset: u64,
) -> io::Result<()> {
    let mut at = offset;
    for iovec in iovecs {
        // SAFETY: the caller gives buffers valid for their lengths that nobody else uses.
        let buf =
            unsafe { std::slice::from_raw_parts_mut(iovec.iov_base.cast::<u8>(), iovec.iov_len) };
        match direction {
            Direction::Read => file.read_at(buf, at)?,
            Direction::Write => file.write_at(buf, at)?,
        }
        at += iovec.iov_len as u64;
    }
    Ok(())
}

fn outcome(result: i32, len: usize) -> io::Result<()> {
    if result < 0 {
        return Err(io::Error::from_raw_os_error(-result));
    }
    if result as usize != len {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            format!("short transfer: {result} of {len} bytes"),
        ));
    }
    Ok(())
}

/// A request's tag and length share the ring's 64-bit user data: 40 bits of tag, 24 of length.
fn encode_tag(tag: u64, len: usize) -> u64 {
    assert!(
        tag < 1 << 40 && len < 1 << 24,
        "a batched request's tag or length is too large"
    );
    (tag << 24) | len as u64
}

fn decode_tag(data: u64) -> (u64, usize) {
    (data >> 24, (data & ((1 << 24) - 1)) as usize)
}

fn log_choice(what: &str) {
    static LOGGED: Once = Once::new();
    LOGGED.call_once(|| tracing::info!("batched page I/O uses {what}"));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::{AlignedBuf, OsVfs, Vfs, IO_ALIGN};

    /// Writes 100 pages, each filled with its number, and reads them back in runs of 1 to 4
    /// pages queued in reverse order; the last run reaches past the end of the file.
    fn read_back_in_runs(use_ring: bool) {
        let dir = tempfile::tempdir().unwrap();
        let vfs = OsVfs::new(dir.path(), false).unwrap();
        let file = vfs.open("pages", true).unwrap();
        let pages = 100;
        for page in 0..pages {
            let mut buf = AlignedBuf::zeroed(IO_ALIGN);
            buf.fill(page as u8);
            file.write_at(&buf, (page * IO_ALIGN) as u64).unwrap();
        }
        let mut reader = BatchIo::new(8, use_ring);
        assert_eq!(reader.uses_ring(), use_ring);
        let mut bufs: Vec<AlignedBuf> = (0..=pages).map(|_| AlignedBuf::zeroed(IO_ALIGN)).collect();
        let iovecs: Vec<libc::iovec> = bufs
            .iter_mut()
            .map(|buf| libc::iovec {
                iov_base: buf.as_mut_ptr().cast(),
                iov_len: buf.len(),
            })
            .collect();
        let mut runs = Vec::new();
        let mut first = 0;
        while first < pages {
            let last = (first + 1 + first % 4).min(pages + 1);
            runs.push(first..last);
            first = last;
        }
        let mut completed = Vec::new();
        for (tag, run) in runs.iter().enumerate().rev() {
            let offset = (run.start * IO_ALIGN) as u64;
            // SAFETY: the buffers and the iovecs outlive the completions, all taken below.
            unsafe {
                reader.queue(
                    Direction::Read,
                    file.as_ref(),
                    &iovecs[run.clone()],
                    offset,
                    tag as u64,
                    &mut completed,
                )
            };
        }
        reader.complete(reader.pending(), &mut completed);
        assert_eq!(reader.pending(), 0);
        completed.sort_by_key(|(tag, _)| *tag);
        assert_eq!(completed.len(), runs.len());
        for ((tag, outcome), run) in completed.iter().zip(&runs) {
            if run.end > pages {
                assert!(outcome.is_err(), "the run past the end fails");
                continue;
            }
            assert!(outcome.is_ok(), "read {tag}: {outcome:?}");
            for page in run.clone() {
                assert!(bufs[page].iter().all(|&b| b == page as u8), "page {page}");
            }
        }
        assert!(
            runs.last().unwrap().end > pages,
            "a run reached past the end"
        );
    }

    #[test]
    fn runs_of_pages_read_on_io_uring_arrive_whole() {
        read_back_in_runs(true);
    }

    #[test]
    fn runs_of_pages_read_without_io_uring_arrive_whole() {
        read_back_in_runs(false);
    }
}
