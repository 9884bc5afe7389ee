//! Read-ahead: a scan names the pages it will want next ([`BufferPool::read_ahead`]) and returns
//! at once; one thread per pool reads them into cold frames, many at a time through a
//! [`BatchIo`] (io_uring, or positioned reads where the kernel gives no ring), in page-number
//! order, neighbouring pages (up to an extent's worth, [`MAX_RUN_BYTES`]) as one vectored read into
//! their frames, so that a table laid out in key order is read in large sequential requests.
//!
//! * **Loading protocol.** A page being read ahead is mapped in the page table and write-latched by
//!   the read-ahead thread from before its read is queued until it is verified, exactly as a
//!   synchronous load holds it: a scan that reaches it first pins it and waits on the latch; a
//!   failed read unmaps it and the scan then reads (and reports) the page itself.
//! * **Scan pages.** Read-ahead pages enter the cold region unreferenced (as [`AccessHint::Scan`]
//!   loads do), and take only clean cold frames (one turn of the clock, without waiting): never a
//!   hot page, a dirty one, or another read-ahead page not used yet; a request that finds no such
//!   frame is cut short. Ordinary loads pass over unused read-ahead pages on their first turn.
//! * **Advice only.** Requests beyond [`QUEUE_LIMIT`] pages waiting are dropped; pages already
//!   cached are skipped, and so are pages the asking scan has already reached ([`ScanProgress`]:
//!   when the thread falls behind, say on a busy CPU, it does not read what the scan read itself
//!   and may have evicted since); nothing waits for read-ahead but the scans that reach its pages.
//! * **Accounting.** `read_ahead_reads` counts pages read; a page read ahead and evicted before
//!   any request for it counts in `read_ahead_wasted`; the first request of a read-ahead page
//!   counts as a read-ahead hit of the requesting thread ([`ThreadIo::read_ahead`]).

use super::*;
use crate::io::batch::{BatchIo, Completion, Direction};

/// Reads the read-ahead thread keeps in flight.
pub const READ_AHEAD_DEPTH: usize = 32;
/// Pages that may wait in the queue; later requests are dropped until it drains.
pub const QUEUE_LIMIT: usize = 4096;
/// The largest run of neighbouring pages read as one request.
pub const MAX_RUN_BYTES: usize = 1 << 20;

/// How far a scan has got, in leaves read, for the read-ahead thread to skip pages it has
/// reached.
#[derive(Debug, Default)]
pub struct ScanProgress(AtomicU64);

impl ScanProgress {
    /// The scan is reading its `leaf`-th leaf.
    pub fn reach(&self, leaf: u64) {
        self.0.store(leaf, Ordering::Relaxed);
    }

    fn reached(&self, leaf: u64) -> bool {
        self.0.load(Ordering::Relaxed) >= leaf
    }
}

/// Pages a scan asks for, in the order it will read them: the first is its `first`-th leaf.
pub struct ScanAhead {
    pub progress: Arc<ScanProgress>,
    pub first: u64,
}

/// A queued request.
struct Request {
    space: Arc<Space>,
    pages: Vec<PageNo>,
    scan: Option<ScanAhead>,
}

impl Request {
    /// Whether the asking scan has reached the request's `index`-th page.
    fn passed(&self, index: usize) -> bool {
        self.scan
            .as_ref()
            .is_some_and(|scan| scan.progress.reached(scan.first + index as u64))
    }
}

/// The read-ahead thread and its queue of requests.
pub(super) struct ReadAheadWorker {
    queue: Arc<Queue>,
    handle: JoinHandle<()>,
}

#[derive(Default)]
struct Queue {
    state: Mutex<QueueState>,
    /// Signalled when a request arrives or the thread must stop.
    wake: Condvar,
    /// Signalled when the thread has served every request.
    idle: Condvar,
}

#[derive(Default)]
struct QueueState {
    requests: Vec<Request>,
    pages: usize,
    /// The thread is serving requests it took.
    serving: bool,
    stop: bool,
}

/// Neighbouring pages of one space read as one request: their frames, each pinned and
/// write-latched until the read ends, and the buffers the read fills.
struct Run<'a> {
    space: Arc<Space>,
    first: PageNo,
    frames: Vec<(FrameId, u64, RwLockWriteGuard<'a, AlignedBuf>)>,
    iovecs: Vec<libc::iovec>,
}

impl<'a> Run<'a> {
    fn new(space: &Arc<Space>, first: PageNo) -> Self {
        Run {
            space: Arc::clone(space),
            first,
            frames: Vec::new(),
            iovecs: Vec::new(),
        }
    }

    /// Whether `page_no` of `space` extends the run, which holds fewer than `most` pages.
    fn extended_by(&self, space: &Space, page_no: PageNo, most: usize) -> bool {
        self.space.id() == space.id()
            && self.first as usize + self.frames.len() == page_no as usize
            && self.frames.len() < most
    }

    fn push(&mut self, frame_id: FrameId, key: u64, mut data: RwLockWriteGuard<'a, AlignedBuf>) {
        self.iovecs.push(libc::iovec {
            iov_base: data.as_mut_ptr().cast(),
            iov_len: data.len(),
        });
        self.frames.push((frame_id, key, data));
    }
}

/// The runs whose reads are in flight, by tag.
#[derive(Default)]
struct InFlight<'a> {
    runs: Vec<Option<Run<'a>>>,
    free_tags: Vec<usize>,
    completed: Vec<Completion>,
}

impl ReadAheadWorker {
    fn start(pool: Weak<BufferPool>) -> Result<Self> {
        let queue = Arc::new(Queue::default());
        let worker_queue = Arc::clone(&queue);
        let handle = std::thread::Builder::new()
            .name("steady-read-ahead".into())
            .spawn(move || run_read_ahead(pool, &worker_queue))
            .map_err(|e| StorageError::io("starting the read-ahead thread", e))?;
        Ok(ReadAheadWorker { queue, handle })
    }

    /// Queues a request; false when the queue is full.
    fn request(&self, request: Request) -> bool {
        let mut state = self.queue.state.lock();
        if state.stop || state.pages + request.pages.len() > QUEUE_LIMIT {
            return false;
        }
        state.pages += request.pages.len();
        state.requests.push(request);
        self.queue.wake.notify_one();
        true
    }

    fn wait_idle(&self) {
        let mut state = self.queue.state.lock();
        while (state.serving || !state.requests.is_empty()) && !state.stop {
            self.queue.idle.wait(&mut state);
        }
    }

    /// Stops the thread after the reads in flight end (from the pool's drop).
    pub(super) fn stop(self) {
        self.queue.state.lock().stop = true;
        self.queue.wake.notify_all();
        if self.handle.thread().id() != std::thread::current().id() {
            let _ = self.handle.join();
        }
    }
}

fn run_read_ahead(pool: Weak<BufferPool>, queue: &Queue) {
    let mut reader = BatchIo::new(READ_AHEAD_DEPTH, true);
    loop {
        let requests = {
            let mut state = queue.state.lock();
            state.serving = false;
            queue.idle.notify_all();
            while state.requests.is_empty() && !state.stop {
                queue.wake.wait(&mut state);
            }
            if state.stop {
                return;
            }
            state.pages = 0;
            state.serving = true;
            std::mem::take(&mut state.requests)
        };
        let Some(pool) = pool.upgrade() else { return };
        pool.serve_read_ahead(requests, &mut reader);
    }
}

impl BufferPool {
    /// Asks for `pages` of `space` to be read into the pool soon, as scan pages, without waiting
    /// for them (see the module doc); `scan` says which of its leaves the pages are, in order, so
    /// that pages it reaches first are skipped. Pages already cached cost only a look-up here, and
    /// a request of cached pages only never wakes the read-ahead thread.
    pub fn read_ahead(
        self: &Arc<Self>,
        space: &Arc<Space>,
        pages: Vec<PageNo>,
        scan: Option<ScanAhead>,
    ) {
        if pages.iter().all(|&page| self.lookup(space, page).is_some()) {
            return;
        }
        let worker = self.read_ahead.get_or_init(|| {
            ReadAheadWorker::start(Arc::downgrade(self)).expect("the read-ahead thread starts")
        });
        worker.request(Request {
            space: Arc::clone(space),
            pages,
            scan,
        });
    }

    /// Waits until every read-ahead asked for so far has ended (for tests and benchmarks).
    pub fn wait_read_ahead(&self) {
        if let Some(worker) = self.read_ahead.get() {
            worker.wait_idle();
        }
    }

    /// Reads the pages of `requests` that are not cached, in (space, page) order, in runs of
    /// neighbours, keeping the reader's depth of reads in flight; returns when every read has
    /// ended.
    fn serve_read_ahead(&self, requests: Vec<Request>, reader: &mut BatchIo) {
        let mut wanted: Vec<(SpaceId, PageNo, &Request, usize)> = requests
            .iter()
            .flat_map(|request| {
                let space = request.space.id();
                (request.pages.iter().enumerate()).map(move |(i, &page)| (space, page, request, i))
            })
            .collect();
        wanted.sort_unstable_by_key(|&(space, page, _, _)| (space, page));
        wanted.dedup_by_key(|&mut (space, page, _, _)| (space, page));
        let most = (MAX_RUN_BYTES / self.page_size).max(1);
        let mut in_flight = InFlight::default();
        let mut run: Option<Run> = None;
        for (_, page_no, request, index) in wanted {
            let space = &request.space;
            if space.is_hidden() || request.passed(index) || self.lookup(space, page_no).is_some() {
                continue;
            }
            let Ok(Some(frame_id)) = self.try_claim_victim(READ_AHEAD_PASSES) else {
                break;
            };
            let key = page_key(space.id(), page_no);
            let Some(data) = self.map_frame(frame_id, space, key, space.version()) else {
                continue;
            };
            self.counters.reads.fetch_add(1, Ordering::Relaxed);
            self.counters
                .read_ahead_reads
                .fetch_add(1, Ordering::Relaxed);
            if !run
                .as_ref()
                .is_some_and(|run| run.extended_by(space, page_no, most))
            {
                if let Some(full) = run.take() {
                    self.start_run(full, reader, &mut in_flight);
                }
            }
            run.get_or_insert_with(|| Run::new(space, page_no))
                .push(frame_id, key, data);
        }
        if let Some(last) = run {
            self.start_run(last, reader, &mut in_flight);
        }
        reader.complete(reader.pending(), &mut in_flight.completed);
        self.end_runs(&mut in_flight);
    }

    /// Queues the read of a run, then ends the runs whose reads completed meanwhile.
    fn start_run<'a>(&'a self, run: Run<'a>, reader: &mut BatchIo, in_flight: &mut InFlight<'a>) {
        let tag = match in_flight.free_tags.pop() {
            Some(tag) => tag,
            None => {
                in_flight.runs.push(None);
                in_flight.runs.len() - 1
            }
        };
        let run = in_flight.runs[tag].insert(run);
        let (file, offset) = run.space.page_location(run.first);
        // SAFETY: the frames' buffers are write-latched and pinned, and the iovecs that name them
        // kept unchanged, by the run, which stays in `in_flight` until its completion is handled
        // by `end_runs`; the run also holds the space, which owns the file.
        unsafe {
            reader.queue(
                Direction::Read,
                file,
                &run.iovecs,
                offset,
                tag as u64,
                &mut in_flight.completed,
            );
        }
        self.end_runs(in_flight);
    }

    /// Verifies the pages of completed runs and releases their frames.
    fn end_runs(&self, in_flight: &mut InFlight<'_>) {
        for (tag, outcome) in in_flight.completed.drain(..) {
            let run = in_flight.runs[tag as usize]
                .take()
                .expect("a completion belongs to a read in flight");
            in_flight.free_tags.push(tag as usize);
            let space = &run.space;
            let failed = outcome.err().map(|err| err.to_string());
            for (page_no, (frame_id, key, data)) in (run.first..).zip(run.frames) {
                let loaded = match &failed {
                    Some(err) => Err(space.read_error(page_no, std::io::Error::other(err.clone()))),
                    None => page::verify(&data, space.id(), page_no),
                };
                // A failed page is unmapped: the scan that wants it reads it and reports the error.
                if self
                    .end_load(frame_id, key, data, loaded, AccessHint::Scan, true)
                    .is_ok()
                {
                    self.unpin(frame_id);
                }
            }
        }
    }
}
