//! Mini-transactions: the unit in which pages change together.
//!
//! A mini-transaction (mtr) write-latches the pages it changes and keeps them latched until
//! [`Mtr::commit`], which stamps one LSN into every modified page and marks them dirty at once. A
//! B+tree split (three pages), an allocation (the extent map) and the tree change that needed it are one
//! mtr, so no other thread — and, once the redo log records mtrs as units, no recovery — sees half of
//! it.
//!
//! Latch order, which every caller follows so that mtrs cannot deadlock:
//! 1. tree pages top-down, and left to right among siblings;
//! 2. then a space's allocation lock ([`Mtr::lock_allocation`], taken by the first allocation or free
//!    in that space and held until commit), and under it the space's header and extent-map pages.
//!
//! After its first allocation or free in a space, an mtr latches no tree page of that space other than
//! pages it has just allocated.
//!
//! An mtr may be opened while the same thread holds another (a *nested* one): the engine logs a
//! row's undo entry and history copy in other trees while the row's clustered leaf stays latched
//! (`BTree::replace_run_where`), so that no other writer can change the row in between. Only the
//! outermost mtr of a thread waits for redo log room ([`BufferPool::reserve_log`], with no page
//! latched); a nested one must not (the checkpoint it would wait for may need the page the outer
//! one holds) and uses the room the outer one reserved — a quarter of the log, far more than a
//! leaf's worth of rows. Nested mtrs latch pages of other trees only.

use std::cell::Cell;
use std::sync::Arc;

use parking_lot::{lock_api::ArcMutexGuard, RawMutex};

use crate::buffer_pool::{BufferPool, PageWriteGuard};
use crate::page::PageMut;
use crate::space::Space;
use crate::{Lsn, PageNo, Result, SpaceId};

/// Index of a page latched by an mtr.
pub type PageHandle = usize;

/// A set of page changes that become visible and durable together.
pub struct Mtr<'a> {
    pool: &'a BufferPool,
    pages: Vec<Option<PageWriteGuard<'a>>>,
    /// Redo of pages already released by [`Mtr::spill_fresh`].
    spilled: Vec<u8>,
    allocation_locks: Vec<(SpaceId, ArcMutexGuard<RawMutex, ()>)>,
}

thread_local! {
    /// How many mtrs this thread holds open (see the module documentation on nested mtrs).
    static OPEN_MTRS: Cell<usize> = const { Cell::new(0) };
}

impl<'a> Mtr<'a> {
    pub fn new(pool: &'a BufferPool) -> Result<Self> {
        if OPEN_MTRS.get() == 0 {
            pool.reserve_log()?;
        }
        OPEN_MTRS.set(OPEN_MTRS.get() + 1);
        Ok(Mtr {
            pool,
            pages: Vec::new(),
            spilled: Vec::new(),
            allocation_locks: Vec::new(),
        })
    }

    pub fn pool(&self) -> &'a BufferPool {
        self.pool
    }

    /// The handle of a page this mtr already holds.
    pub fn find(&self, space: SpaceId, page_no: PageNo) -> Option<PageHandle> {
        self.pages.iter().position(|slot| {
            slot.as_ref()
                .is_some_and(|g| g.space_id() == space && g.page_no() == page_no)
        })
    }

    /// Write-latches a page (reading it if needed); a page already held is returned as is.
    pub fn latch(&mut self, space: &Arc<Space>, page_no: PageNo) -> Result<PageHandle> {
        if let Some(handle) = self.find(space.id(), page_no) {
            return Ok(handle);
        }
        let guard = self.pool.fetch_write(space, page_no)?;
        Ok(self.adopt(guard))
    }

    /// Write-latches a freshly allocated page, zeroed, without reading it.
    pub fn create(&mut self, space: &Arc<Space>, page_no: PageNo) -> Result<PageHandle> {
        if let Some(handle) = self.find(space.id(), page_no) {
            self.page_mut(handle).fill(0);
            return Ok(handle);
        }
        let guard = self.pool.create_page(space, page_no)?;
        Ok(self.adopt(guard))
    }

    /// Takes over a write guard obtained elsewhere (e.g. during a latch-coupled descent).
    pub fn adopt(&mut self, guard: PageWriteGuard<'a>) -> PageHandle {
        self.pages.push(Some(guard));
        self.pages.len() - 1
    }

    fn guard(&self, handle: PageHandle) -> &PageWriteGuard<'a> {
        self.pages[handle]
            .as_ref()
            .expect("page handle used after release")
    }

    fn guard_mut(&mut self, handle: PageHandle) -> &mut PageWriteGuard<'a> {
        self.pages[handle]
            .as_mut()
            .expect("page handle used after release")
    }

    pub fn page_no(&self, handle: PageHandle) -> PageNo {
        self.guard(handle).page_no()
    }

    pub fn page(&self, handle: PageHandle) -> &[u8] {
        self.guard(handle)
    }

    /// The page bytes for changing them as raw bytes; the page is committed with the mtr. Redo then
    /// compares the page with a copy taken before the change: prefer [`Mtr::edit`].
    pub fn page_mut(&mut self, handle: PageHandle) -> &mut [u8] {
        self.guard_mut(handle).page_mut()
    }

    /// The page for changing it through [`PageMut`]'s operations, which record the bytes they change
    /// so that redo logs just those; the page is committed with the mtr.
    pub fn edit(&mut self, handle: PageHandle) -> PageMut<'_> {
        self.guard_mut(handle).edit()
    }

    /// Releases an unmodified page early (latch coupling). Modified pages stay until commit.
    pub fn release(&mut self, handle: PageHandle) {
        if !self.guard(handle).is_modified() {
            self.pages[handle] = None;
        }
    }

    /// Logs a freshly created page that is complete and releases it before commit, so that writing
    /// many new pages (a long overflow chain) does not pin them all. The page must be reachable only
    /// through changes this mtr has yet to commit.
    pub fn spill_fresh(&mut self, handle: PageHandle) {
        let mut guard = self.pages[handle]
            .take()
            .expect("page handle used after release");
        guard.spill_fresh(&mut self.spilled);
    }

    /// Serialises allocation in `space` with other mtrs until this one commits.
    pub(crate) fn lock_allocation(&mut self, space: &Space) {
        if self
            .allocation_locks
            .iter()
            .any(|(id, _)| *id == space.id())
        {
            return;
        }
        let guard = space.allocation_lock().lock_arc();
        self.allocation_locks.push((space.id(), guard));
    }

    /// Logs every change of this mtr as one redo record, makes them visible as one unit, and releases
    /// all latches. Returns the record's end LSN: the changes are durable once the log is flushed to
    /// it ([`BufferPool::make_durable`]).
    pub fn commit(mut self) -> Lsn {
        let lsn = commit_guards(self.pool, &self.spilled, self.pages.iter_mut().flatten());
        while self.pages.pop().is_some() {}
        self.allocation_locks.clear();
        lsn
    }
}

impl Drop for Mtr<'_> {
    fn drop(&mut self) {
        OPEN_MTRS.set(OPEN_MTRS.get() - 1);
    }
}

/// Logs the modified pages among `guards`, after the already encoded `spilled` changes, as one record
/// and stamps them with its end LSN (or, without a redo log, with the next modification number).
pub(crate) fn commit_guards<'a, 'g>(
    pool: &BufferPool,
    spilled: &[u8],
    guards: impl Iterator<Item = &'g mut PageWriteGuard<'a>>,
) -> Lsn
where
    'a: 'g,
{
    let mut modified: Vec<&mut PageWriteGuard<'a>> = guards.filter(|g| g.is_modified()).collect();
    let lsn = match pool.wal() {
        None => {
            let lsn = pool.next_lsn();
            modified.iter().for_each(|guard| guard.mark_dirty(lsn));
            lsn
        }
        Some(_) if modified.is_empty() && spilled.is_empty() => return 0,
        Some(wal) => {
            // Encoded before the log's lock is taken: the lock covers only the copy.
            let mut payload = spilled.to_vec();
            let images = modified
                .iter()
                .filter(|guard| guard.encode_redo(&mut payload))
                .count();
            wal.count_full_images(images as u64);
            let (_, end) = wal
                .append_with(&payload, |start| {
                    modified.iter().for_each(|guard| guard.mark_dirty(start))
                })
                .expect(
                    "a mini-transaction's record fits the redo log (capacity checked at creation)",
                );
            end
        }
    };
    for guard in modified.iter_mut() {
        guard.commit_changes(lsn);
    }
    lsn
}
