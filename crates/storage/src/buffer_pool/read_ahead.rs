//! Read-ahead: a scan names the pages it will want next ([`BufferPool::read_ahead`]) and returns
//! at once; one thread per pool reads them into cold frames, many at a time through a
//! [`BatchReader`] (io_uring, or positioned reads where the kernel gives no ring), in page-number
//! order so that neighbouring pages reach the disk as neighbouring requests.
//!
//! * **Loading protocol.** A page being read ahead is mapped in the page table and write-latched by
//!   the read-ahead thread from before its read is queued until it is verified, exactly as a
//!   synchronous load holds it: a scan that reaches it first pins it and waits on the latch; a
//!   failed read unmaps it and the scan then reads (and reports) the page itself.
//! * **Scan pages.** Read-ahead pages enter the cold region unreferenced (as [`AccessHint::Scan`]
//!   loads do), so read-ahead never pushes out the hot set; frames are claimed without waiting,
//!   and a request that finds no free frame is cut short.
//! * **Advice only.** Requests beyond [`QUEUE_LIMIT`] pages waiting are dropped; pages already
//!   cached are skipped; nothing waits for read-ahead but the scans that reach its pages.
//! * **Accounting.** `read_ahead_reads` counts pages read; a page read ahead and evicted before
//!   any request for it counts in `read_ahead_wasted`; the first request of a read-ahead page
//!   counts as a read-ahead hit of the requesting thread ([`ThreadIo::read_ahead`]).

use super::*;
use crate::io::batch::{BatchReader, Completion};

/// Reads the read-ahead thread keeps in flight.
pub const READ_AHEAD_DEPTH: usize = 32;
/// Pages that may wait in the queue; later requests are dropped until it drains.
pub const QUEUE_LIMIT: usize = 4096;

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
    requests: Vec<(Arc<Space>, Vec<PageNo>)>,
    pages: usize,
    /// The thread is serving requests it took.
    serving: bool,
    stop: bool,
}

/// A page whose read is in flight: its frame, pinned and write-latched until the read ends.
struct InFlight<'a> {
    frame_id: FrameId,
    key: u64,
    data: RwLockWriteGuard<'a, AlignedBuf>,
    space: Arc<Space>,
    page_no: PageNo,
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
    fn request(&self, space: &Arc<Space>, pages: Vec<PageNo>) -> bool {
        let mut state = self.queue.state.lock();
        if state.stop || state.pages + pages.len() > QUEUE_LIMIT {
            return false;
        }
        state.pages += pages.len();
        state.requests.push((Arc::clone(space), pages));
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
    let mut reader = BatchReader::new(READ_AHEAD_DEPTH, true);
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
    /// for them (see the module doc). Pages already cached cost only a look-up.
    pub fn read_ahead(self: &Arc<Self>, space: &Arc<Space>, pages: Vec<PageNo>) {
        if pages.is_empty() {
            return;
        }
        let worker = self.read_ahead.get_or_init(|| {
            ReadAheadWorker::start(Arc::downgrade(self)).expect("the read-ahead thread starts")
        });
        worker.request(space, pages);
    }

    /// Waits until every read-ahead asked for so far has ended (for tests and benchmarks).
    pub fn wait_read_ahead(&self) {
        if let Some(worker) = self.read_ahead.get() {
            worker.wait_idle();
        }
    }

    /// Reads the pages of `requests` that are not cached, in (space, page) order, keeping the
    /// reader's depth of reads in flight; returns when every read has ended.
    fn serve_read_ahead(&self, requests: Vec<(Arc<Space>, Vec<PageNo>)>, reader: &mut BatchReader) {
        let mut wanted: Vec<(SpaceId, PageNo, &Arc<Space>)> = requests
            .iter()
            .flat_map(|(space, pages)| pages.iter().map(move |&page| (space.id(), page, space)))
            .collect();
        wanted.sort_unstable_by_key(|&(space, page, _)| (space, page));
        wanted.dedup_by_key(|&mut (space, page, _)| (space, page));
        let mut in_flight: Vec<Option<InFlight>> = Vec::new();
        let mut free_tags: Vec<usize> = Vec::new();
        let mut completed: Vec<Completion> = Vec::new();
        for (_, page_no, space) in wanted {
            if space.is_dropped() || self.lookup(space, page_no).is_some() {
                continue;
            }
            let Ok(Some(frame_id)) = self.try_claim_victim() else {
                break;
            };
            let key = page_key(space.id(), page_no);
            let Some(mut data) = self.map_frame(frame_id, space, key, space.version()) else {
                continue;
            };
            self.counters.reads.fetch_add(1, Ordering::Relaxed);
            self.counters
                .read_ahead_reads
                .fetch_add(1, Ordering::Relaxed);
            let buf = data.as_mut_ptr();
            let page = InFlight {
                frame_id,
                key,
                data,
                space: Arc::clone(space),
                page_no,
            };
            let tag = match free_tags.pop() {
                Some(tag) => {
                    in_flight[tag] = Some(page);
                    tag
                }
                None => {
                    in_flight.push(Some(page));
                    in_flight.len() - 1
                }
            };
            let (file, offset) = space.page_location(page_no);
            // SAFETY: the frame's buffer is write-latched (by `data`, kept in `in_flight`) and
            // pinned until this read's completion is handled below, and the space (which owns
            // the file) is held by the same entry.
            unsafe {
                reader.queue(
                    file,
                    buf,
                    self.page_size,
                    offset,
                    tag as u64,
                    &mut completed,
                );
            }
            self.end_reads(&mut completed, &mut in_flight, &mut free_tags);
        }
        reader.complete(reader.pending(), &mut completed);
        self.end_reads(&mut completed, &mut in_flight, &mut free_tags);
    }

    /// Verifies completed reads and releases their frames.
    fn end_reads<'a>(
        &'a self,
        completed: &mut Vec<Completion>,
        in_flight: &mut [Option<InFlight<'a>>],
        free_tags: &mut Vec<usize>,
    ) {
        for (tag, outcome) in completed.drain(..) {
            let page = in_flight[tag as usize]
                .take()
                .expect("a completion belongs to a read in flight");
            free_tags.push(tag as usize);
            let (space, page_no) = (page.space.id(), page.page_no);
            let loaded = outcome
                .map_err(|err| page.space.read_error(page_no, err))
                .and_then(|()| page::verify(&page.data, space, page_no));
            let ended = self.end_load(
                page.frame_id,
                page.key,
                page.data,
                loaded,
                AccessHint::Scan,
                true,
            );
            // A failed page was unmapped: the scan that wants it reads it and reports the error.
            if ended.is_ok() {
                self.unpin(page.frame_id);
            }
        }
    }
}
