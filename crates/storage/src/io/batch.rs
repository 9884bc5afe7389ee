//! Batches of page reads in flight at once: an `io_uring` ring where the kernel gives one, plain
//! positioned reads otherwise (chosen when the reader is made and logged once per process).
//!
//! A caller queues reads ([`BatchReader::queue`]), each into a buffer it keeps alive and untouched
//! until that read's completion comes back from [`BatchReader::complete`]; up to the reader's depth
//! are in the kernel at once. Files without a descriptor (the in-memory file system of tests), and
//! every file under the fallback, are read at once in the calling thread; their completions come
//! back from the next [`BatchReader::complete`] like the others.

use std::io;
use std::os::fd::RawFd;
use std::sync::Once;

use io_uring::{opcode, types, IoUring};

use super::FileIo;

/// A read's completion: the tag it was queued with and how it ended.
pub type Completion = (u64, io::Result<()>);

/// Reads in flight on an io_uring ring, or read at once.
pub struct BatchReader {
    ring: Option<IoUring>,
    depth: usize,
    /// Reads handed to the ring and not yet reaped.
    in_flight: usize,
    /// Completions of reads done at once, not yet returned.
    done: Vec<Completion>,
}

impl BatchReader {
    /// A reader keeping up to `depth` reads in flight: on io_uring unless `use_ring` is false or
    /// the kernel refuses a ring.
    pub fn new(depth: usize, use_ring: bool) -> Self {
        let depth = depth.clamp(1, 4096);
        let ring = match use_ring.then(|| IoUring::new(depth.next_power_of_two() as u32)) {
            Some(Ok(ring)) => {
                log_choice(&format!("io_uring ({depth} reads in flight)"));
                Some(ring)
            }
            Some(Err(err)) => {
                log_choice(&format!("positioned reads (io_uring unavailable: {err})"));
                None
            }
            None => None,
        };
        BatchReader {
            ring,
            depth,
            in_flight: 0,
            done: Vec::new(),
        }
    }

    /// Whether reads go through io_uring.
    pub fn uses_ring(&self) -> bool {
        self.ring.is_some()
    }

    /// Reads queued whose completions have not been returned yet.
    pub fn pending(&self) -> usize {
        self.in_flight + self.done.len()
    }

    /// Queues a read of `len` bytes at `offset` of `file` into `buf`; when the ring is full, first
    /// waits for earlier reads, whose completions go to `completed`.
    ///
    /// # Safety
    /// `buf` must be valid for writes of `len` bytes, aligned as the file's mode needs, and left
    /// alone until [`BatchReader::complete`] (or `queue`) returns this read's completion; `file`
    /// must stay open until then.
    pub unsafe fn queue(
        &mut self,
        file: &dyn FileIo,
        buf: *mut u8,
        len: usize,
        offset: u64,
        tag: u64,
        completed: &mut Vec<Completion>,
    ) {
        match (self.ring.is_some(), file.raw_fd()) {
            (true, Some(fd)) => {
                // SAFETY: passed on from the caller.
                unsafe { self.submit_read(fd, buf, len, offset, tag, completed) }
            }
            _ => {
                // SAFETY: the caller gives a buffer valid for `len` bytes that nobody else uses.
                let buf = unsafe { std::slice::from_raw_parts_mut(buf, len) };
                self.done.push((tag, file.read_at(buf, offset)));
            }
        }
    }

    /// Moves completions into `completed`: at least `wait_for` of the pending reads (all of them
    /// when fewer are pending), and any others already finished.
    pub fn complete(&mut self, wait_for: usize, completed: &mut Vec<Completion>) {
        let from_done = self.done.len();
        completed.append(&mut self.done);
        self.reap(wait_for.saturating_sub(from_done), completed);
    }

    unsafe fn submit_read(
        &mut self,
        fd: RawFd,
        buf: *mut u8,
        len: usize,
        offset: u64,
        tag: u64,
        completed: &mut Vec<Completion>,
    ) {
        while self.in_flight >= self.depth {
            self.reap(1, completed);
        }
        let entry = opcode::Read::new(types::Fd(fd), buf, len as u32)
            .offset(offset)
            .build()
            .user_data(encode_tag(tag, len));
        let ring = self.ring.as_mut().expect("only called with a ring");
        // SAFETY: the buffer and the descriptor outlive the read (the caller's promise), and the
        // ring has room: it holds at least `depth` entries and fewer are in flight.
        unsafe { ring.submission().push(&entry) }.expect("the ring has room for `depth` reads");
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
                completed.push((tag, read_outcome(entry.result(), len)));
                reaped += 1;
                self.in_flight -= 1;
            }
            if reaped >= wait_for {
                return;
            }
            if let Err(err) = ring.submit_and_wait(1) {
                // Reads in flight own their buffers: the reader cannot give up on them.
                assert!(
                    err.kind() == io::ErrorKind::Interrupted,
                    "io_uring wait failed with reads in flight: {err}"
                );
            }
        }
    }
}

impl Drop for BatchReader {
    /// Waits for every read in flight: their buffers must not be reused under the kernel.
    fn drop(&mut self) {
        let mut completed = Vec::new();
        self.complete(self.pending(), &mut completed);
    }
}

fn read_outcome(result: i32, len: usize) -> io::Result<()> {
    if result < 0 {
        return Err(io::Error::from_raw_os_error(-result));
    }
    if result as usize != len {
        return Err(io::Error::new(
            io::ErrorKind::UnexpectedEof,
            format!("short read: {result} of {len} bytes"),
        ));
    }
    Ok(())
}

/// A read's tag and length share the ring's 64-bit user data: 40 bits of tag, 24 of length.
fn encode_tag(tag: u64, len: usize) -> u64 {
    assert!(
        tag < 1 << 40 && len < 1 << 24,
        "a batched read's tag or length is too large"
    );
    (tag << 24) | len as u64
}

fn decode_tag(data: u64) -> (u64, usize) {
    (data >> 24, (data & ((1 << 24) - 1)) as usize)
}

fn log_choice(what: &str) {
    static LOGGED: Once = Once::new();
    LOGGED.call_once(|| eprintln!("steady: batched page reads use {what}"));
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::{AlignedBuf, OsVfs, Vfs, IO_ALIGN};

    fn read_back_in_batches(use_ring: bool) {
        let dir = tempfile::tempdir().unwrap();
        let vfs = OsVfs::new(dir.path(), false).unwrap();
        let file = vfs.open("pages", true).unwrap();
        let pages = 100u64;
        for page in 0..pages {
            let mut buf = AlignedBuf::zeroed(IO_ALIGN);
            buf.fill(page as u8);
            file.write_at(&buf, page * IO_ALIGN as u64).unwrap();
        }
        let mut reader = BatchReader::new(8, use_ring);
        assert_eq!(reader.uses_ring(), use_ring);
        let mut bufs: Vec<AlignedBuf> = (0..pages).map(|_| AlignedBuf::zeroed(IO_ALIGN)).collect();
        let mut completed = Vec::new();
        for (page, buf) in bufs.iter_mut().enumerate().rev() {
            let offset = page as u64 * IO_ALIGN as u64;
            // SAFETY: the buffers outlive the reader's completions, taken below.
            unsafe {
                reader.queue(
                    file.as_ref(),
                    buf.as_mut_ptr(),
                    IO_ALIGN,
                    offset,
                    page as u64,
                    &mut completed,
                )
            };
        }
        // One read past the end of the file fails alone.
        let mut past_end = AlignedBuf::zeroed(IO_ALIGN);
        let offset = pages * IO_ALIGN as u64;
        unsafe {
            reader.queue(
                file.as_ref(),
                past_end.as_mut_ptr(),
                IO_ALIGN,
                offset,
                pages,
                &mut completed,
            )
        };
        reader.complete(reader.pending(), &mut completed);
        assert_eq!(reader.pending(), 0);
        completed.sort_by_key(|(tag, _)| *tag);
        assert_eq!(completed.len(), pages as usize + 1);
        for (tag, outcome) in &completed[..pages as usize] {
            assert!(outcome.is_ok(), "read {tag}: {outcome:?}");
            assert!(bufs[*tag as usize].iter().all(|&b| b == *tag as u8));
        }
        assert!(completed[pages as usize].1.is_err());
    }

    #[test]
    fn pages_read_in_batches_on_io_uring_arrive_whole() {
        read_back_in_batches(true);
    }

    #[test]
    fn pages_read_in_batches_without_io_uring_arrive_whole() {
        read_back_in_batches(false);
    }
}
