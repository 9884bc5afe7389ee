//! The page requests made through one tree, for `pg_statio_*`: per level kind (leaf or branch),
//! those the pool served and those read from the file for them.
//!
//! A request is measured as the difference of the calling thread's [`thread_io`] around the
//! pool call, so it costs two thread-local reads and one add to this thread's stripe of a
//! [`StripedCounter`] (no cache line shared between threads). A page read ahead for a scan counts
//! as read at its first request (it came from the file for that scan), as EXPLAIN's BUFFERS does.
//! Overflow pages count with the leaves that own them. The counts belong to the tree object: a
//! rewrite that builds a new tree (TRUNCATE, VACUUM FULL, ALTER COLUMN TYPE) starts them over.

use crate::buffer_pool::{thread_io, StripedCounter, ThreadIo};

/// Counters of one tree's page requests.
#[derive(Default)]
pub struct TreeIo {
    leaf_hits: StripedCounter,
    leaf_reads: StripedCounter,
    branch_hits: StripedCounter,
    branch_reads: StripedCounter,
}

/// A sample of [`TreeIo`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TreeIoCounts {
    pub leaf_hits: u64,
    pub leaf_reads: u64,
    pub branch_hits: u64,
    pub branch_reads: u64,
}

/// The calling thread's requests before a pool call, to be counted after it.
#[derive(Clone, Copy)]
pub(crate) struct IoMark(ThreadIo);

impl IoMark {
    #[inline]
    pub(crate) fn now() -> IoMark {
        IoMark(thread_io())
    }
}

impl TreeIo {
    /// Counts the requests made since `mark`, on a page of `level`. Inlined: it runs on every
    /// page request, and as a call it was 0.4% of a write profile (oltp_update_index).
    #[inline]
    pub(crate) fn count_since(&self, mark: IoMark, level: u16) {
        let io = thread_io().since(mark.0);
        let reads = io.reads + io.read_ahead;
        let hits = io.hits - io.read_ahead;
        let (hit_counter, read_counter) = match level {
            0 => (&self.leaf_hits, &self.leaf_reads),
            _ => (&self.branch_hits, &self.branch_reads),
        };
        if hits > 0 {
            hit_counter.add(hits);
        }
        if reads > 0 {
            read_counter.add(reads);
        }
    }

    pub fn counts(&self) -> TreeIoCounts {
        TreeIoCounts {
            leaf_hits: self.leaf_hits.sum(),
            leaf_reads: self.leaf_reads.sum(),
            branch_hits: self.branch_hits.sum(),
            branch_reads: self.branch_reads.sum(),
        }
    }
}
