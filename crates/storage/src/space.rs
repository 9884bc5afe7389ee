//! Spaces: one file of pages per table (plus the system space), and page allocation within it.
//!
//! ```text
//! extent 0 (system)              extent 1 (segment 3)   extent 2 (segment 2)   ...
//! | header | extent map | ... |  | leaf | leaf | ... |  | branch | ... |
//!   page 0    page 1
//! ```
//!
//! * Pages are allocated in **extents** of 1 MiB (`1 MiB / page_size` pages). Every extent is owned by
//!   one **segment** or is free; each B+tree has a leaf segment and a branch segment, so the leaves of an
//!   index fill whole extents of their own and stay physically close (seed 003).
//! * The **extent map**: extents are grouped, `(page_size - 64) / 36` extents a group; the first page
//!   of each group's first extent holds the group's descriptors (group 0: page 1, as page 0 is the
//!   header). A descriptor is the owning segment (u32, 0 = free, 1 = system) and a bitmap of used pages
//!   (32 bytes, up to 256 pages an extent). The first extent of each group is owned by the system.
//! * The **header** (page 0): magic, format version, page size, space id, next segment id, and the
//!   directory of trees stored in the space (index id, root page, leaf and branch segments).
//!
//! ```text
//! header body  offset size field
//!              64     4    magic "STDY"
//!              68     4    format version
//!              72     4    page size
//!              76     4    next segment id
//!              80     4    tree count
//!              84    20*n  trees: index id u64, root u32, leaf segment u32, branch segment u32
//! ```
//!
//! Invariants: the file length is a whole number of extents and is the space's size (no size field to
//! disagree with it); a page is handed out only from an extent owned by the asking segment; an extent
//! whose pages are all free returns to the free pool at once; free extents at the end of the file are
//! cut off by [`Space::shrink`], but only those that were free before a checkpoint's redo point
//! ([`Space::tail_mark`]), so that recovery never replays a change to a page no longer in the file.
//! The in-memory descriptors mirror the extent map pages exactly, and both change only under the
//! allocation lock, which an mtr holds until it commits.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

use crate::io::{AlignedBuf, FileIo, Vfs};
use crate::mtr::Mtr;
use crate::page::{
    self, read_u32, read_u64, write_u32, write_u64, Page, PageMut, PageType, HEADER_SIZE,
};
use crate::{PageNo, Result, SpaceId, StorageError};

/// Identifies a segment within a space.
pub type SegmentId = u32;
/// Owner value of a free extent.
pub const FREE_SEGMENT: SegmentId = 0;
/// Owner of the extents holding space metadata.
pub const SYSTEM_SEGMENT: SegmentId = 1;

const EXTENT_BYTES: usize = 1 << 20;
/// Suffix of a space file whose first pages are not yet durable; [`Store`](crate::Store)'s open
/// removes such files (their space was never used).
pub const CREATING_SUFFIX: &str = ".creating";
const MAGIC: &[u8; 4] = b"STDY";
const FORMAT_VERSION: u32 = 1;
const HEADER_PAGE: PageNo = 0;
const OFF_MAGIC: usize = HEADER_SIZE;
const OFF_FORMAT: usize = HEADER_SIZE + 4;
const OFF_PAGE_SIZE: usize = HEADER_SIZE + 8;
const OFF_NEXT_SEGMENT: usize = HEADER_SIZE + 12;
const OFF_TREE_COUNT: usize = HEADER_SIZE + 16;
const OFF_TREES: usize = HEADER_SIZE + 20;
const TREE_ENTRY: usize = 20;
const DESCRIPTOR: usize = 36;
const BITMAP_WORDS: usize = 4;

/// Version numbers of spaces come from one global counter, so a version is never reused, even by a
/// new space that gets the id of a dropped one.
static NEXT_VERSION: AtomicU64 = AtomicU64::new(1);

fn fresh_version() -> u64 {
    NEXT_VERSION.fetch_add(1, Ordering::Relaxed)
}

/// One B+tree stored in a space, as listed in the space header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TreeEntry {
    pub index_id: u64,
    pub root: PageNo,
    pub leaf_segment: SegmentId,
    pub branch_segment: SegmentId,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct ExtentDescriptor {
    owner: SegmentId,
    used: [u64; BITMAP_WORDS],
}

impl ExtentDescriptor {
    fn is_used(&self, page: usize) -> bool {
        self.used[page / 64] & (1 << (page % 64)) != 0
    }
    fn set_used(&mut self, page: usize, used: bool) {
        if used {
            self.used[page / 64] |= 1 << (page % 64);
        } else {
            self.used[page / 64] &= !(1 << (page % 64));
        }
    }
    /// The first of the extent's `pages` pages not in use, found a word of the bitmap at a time
    /// (every allocation looks at each extent of its segment: bit by bit, loading a table took
    /// time quadratic in its size). Bits past `pages` are never set.
    fn first_free(&self, pages: usize) -> Option<usize> {
        self.used
            .iter()
            .enumerate()
            .find(|(_, &word)| word != u64::MAX)
            .map(|(at, word)| at * 64 + word.trailing_ones() as usize)
            .filter(|&page| page < pages)
    }
    fn is_empty(&self) -> bool {
        self.used.iter().all(|&w| w == 0)
    }
    fn encode(&self, out: &mut [u8]) {
        write_u32(out, 0, self.owner);
        for (i, word) in self.used.iter().enumerate() {
            write_u64(out, 4 + 8 * i, *word);
        }
    }
    fn decode(bytes: &[u8]) -> Self {
        let mut used = [0; BITMAP_WORDS];
        for (i, word) in used.iter_mut().enumerate() {
            *word = read_u64(bytes, 4 + 8 * i);
        }
        ExtentDescriptor {
            owner: read_u32(bytes, 0),
            used,
        }
    }
}

/// Allocation state mirrored from the header and extent-map pages.
struct AllocState {
    extents: Vec<ExtentDescriptor>,
    next_segment: SegmentId,
    trees: Vec<TreeEntry>,
    /// Extents handed out from the free pool since the space was opened (see [`TailMark`]).
    extents_taken: u64,
}

/// The free extents at the end of a space at one moment, taken before a checkpoint begins (see
/// [`Space::shrink`]).
#[derive(Debug, Clone, Copy)]
pub struct TailMark {
    /// Extents before the free tail.
    keep: usize,
    extents_taken: u64,
}

/// Geometry of a space, derived from its page size.
#[derive(Debug, Clone, Copy)]
struct Geometry {
    page_size: usize,
    pages_per_extent: usize,
    extents_per_group: usize,
}

impl Geometry {
    fn new(page_size: usize) -> Self {
        Geometry {
            page_size,
            pages_per_extent: EXTENT_BYTES / page_size,
            extents_per_group: (page_size - HEADER_SIZE) / DESCRIPTOR,
        }
    }
    fn extent_of(&self, page: PageNo) -> usize {
        page as usize / self.pages_per_extent
    }
    fn first_page(&self, extent: usize) -> PageNo {
        (extent * self.pages_per_extent) as PageNo
    }
    /// The extent-map page and byte offset of an extent's descriptor.
    fn descriptor_location(&self, extent: usize) -> (PageNo, usize) {
        let group = extent / self.extents_per_group;
        let map_page = if group == 0 {
            1
        } else {
            self.first_page(group * self.extents_per_group)
        };
        (
            map_page,
            HEADER_SIZE + DESCRIPTOR * (extent % self.extents_per_group),
        )
    }
    fn starts_group(&self, extent: usize) -> bool {
        extent.is_multiple_of(self.extents_per_group)
    }
}

/// One space: its file, its version in the buffer pool, and its allocator.
pub struct Space {
    id: SpaceId,
    file: Arc<dyn FileIo>,
    geometry: Geometry,
    version: AtomicU64,
    dropped: AtomicBool,
    allocation_lock: Arc<Mutex<()>>,
    alloc: Mutex<AllocState>,
    /// Size in pages; writes read-lock it so that a shrink never races a write past the new end.
    size: RwLock<u32>,
}

impl Space {
    /// The file name of space `id` within the data directory.
    pub fn file_name(id: SpaceId) -> String {
        format!("space_{id:06}.sdb")
    }

    /// The space id named by a file name, if it is a space file.
    pub fn id_from_file_name(name: &str) -> Option<SpaceId> {
        name.strip_prefix("space_")?
            .strip_suffix(".sdb")?
            .parse()
            .ok()
    }

    /// Creates the file of a new, empty space: header, extent map, one system extent. The file is
    /// written under its name plus [`CREATING_SUFFIX`] and takes its own name only once those
    /// pages are durable, so a crash meanwhile leaves no space file without a header.
    pub fn create(vfs: &dyn Vfs, id: SpaceId, page_size: usize) -> Result<Arc<Space>> {
        page::validate_page_size(page_size)?;
        let name = Self::file_name(id);
        if vfs.exists(&name) {
            return Err(StorageError::Format(format!(
                "space file {name} already exists"
            )));
        }
        let unfinished = format!("{name}{CREATING_SUFFIX}");
        if vfs.exists(&unfinished) {
            vfs.remove(&unfinished)
                .map_err(|e| StorageError::io(format!("removing {unfinished}"), e))?;
        }
        let file = vfs
            .open(&unfinished, true)
            .map_err(|e| StorageError::io(format!("creating {unfinished}"), e))?;
        let mut system = ExtentDescriptor {
            owner: SYSTEM_SEGMENT,
            ..Default::default()
        };
        system.set_used(0, true);
        system.set_used(1, true);
        let mut header = AlignedBuf::zeroed(page_size);
        format_header(&mut header, id, page_size);
        let mut map = AlignedBuf::zeroed(page_size);
        PageMut::new(&mut map).format(PageType::ExtentMap, id, 1, 0, 0);
        system.encode(&mut map[HEADER_SIZE..HEADER_SIZE + DESCRIPTOR]);
        let write = |buf: &mut AlignedBuf, page_no: PageNo| {
            page::stamp_checksum(buf);
            file.write_at(buf, page_no as u64 * page_size as u64)
        };
        write(&mut header, HEADER_PAGE)
            .and_then(|_| write(&mut map, 1))
            .and_then(|_| file.set_len(EXTENT_BYTES as u64))
            .and_then(|_| file.sync_data())
            .and_then(|_| vfs.rename(&unfinished, &name))
            .and_then(|_| vfs.sync_dir())
            .map_err(|e| StorageError::io(format!("initialising {name}"), e))?;
        Self::open_file(file, id, page_size)
    }

    /// Opens an existing space file and loads its allocation state.
    pub fn open(vfs: &dyn Vfs, id: SpaceId) -> Result<Arc<Space>> {
        let space = Self::open_unloaded(vfs, id)?;
        space.load_allocation()?;
        Ok(space)
    }

    /// Opens a space file without reading its allocation state, as recovery does before the header
    /// and extent-map pages have been repaired from the log; call [`Space::load_allocation`] after.
    pub fn open_unloaded(vfs: &dyn Vfs, id: SpaceId) -> Result<Arc<Space>> {
        let name = Self::file_name(id);
        let file = vfs
            .open(&name, false)
            .map_err(|e| StorageError::io(format!("opening {name}"), e))?;
        let page_size = read_page_size(file.as_ref(), id)?;
        let len = file
            .file_len()
            .map_err(|e| StorageError::io(format!("reading the size of space {id}"), e))?;
        let extent_count = (len as usize / EXTENT_BYTES).max(1);
        Ok(Self::unloaded(file, id, page_size, extent_count))
    }

    fn open_file(file: Arc<dyn FileIo>, id: SpaceId, page_size: usize) -> Result<Arc<Space>> {
        let space = Self::unloaded(file, id, page_size, 1);
        space.load_allocation()?;
        Ok(space)
    }

    fn unloaded(
        file: Arc<dyn FileIo>,
        id: SpaceId,
        page_size: usize,
        extents: usize,
    ) -> Arc<Space> {
        let geometry = Geometry::new(page_size);
        Arc::new(Space {
            id,
            file,
            geometry,
            version: AtomicU64::new(fresh_version()),
            dropped: AtomicBool::new(false),
            allocation_lock: Arc::new(Mutex::new(())),
            alloc: Mutex::new(AllocState {
                extents: Vec::new(),
                next_segment: SYSTEM_SEGMENT + 1,
                trees: Vec::new(),
                extents_taken: 0,
            }),
            size: RwLock::new((extents * geometry.pages_per_extent) as u32),
        })
    }

    /// Reads the header and extent map from the file into the in-memory allocation state.
    pub fn load_allocation(&self) -> Result<()> {
        let (id, page_size, geometry) = (self.id, self.page_size(), self.geometry);
        let file = &self.file;
        let len = file
            .file_len()
            .map_err(|e| StorageError::io(format!("reading the size of space {id}"), e))?;
        let extent_count = (len as usize / EXTENT_BYTES).max(1);
        let mut buf = AlignedBuf::zeroed(page_size);
        read_verified(file.as_ref(), id, HEADER_PAGE, &mut buf)?;
        let header = Page::new(&buf);
        if &header.bytes()[OFF_MAGIC..OFF_MAGIC + 4] != MAGIC {
            return Err(StorageError::corrupt(
                id,
                HEADER_PAGE,
                "not a SteadyDB space (bad magic)",
            ));
        }
        let format = read_u32(&buf, OFF_FORMAT);
        if format != FORMAT_VERSION {
            return Err(StorageError::Format(format!(
                "space {id} has format {format}, expected {FORMAT_VERSION}"
            )));
        }
        let next_segment = read_u32(&buf, OFF_NEXT_SEGMENT);
        let trees = decode_trees(&buf, id)?;
        let mut extents = Vec::with_capacity(extent_count);
        for extent in 0..extent_count {
            let (map_page, offset) = geometry.descriptor_location(extent);
            if extent == 0 || geometry.starts_group(extent) {
                read_verified(file.as_ref(), id, map_page, &mut buf)?;
            }
            extents.push(ExtentDescriptor::decode(&buf[offset..offset + DESCRIPTOR]));
        }
        *self.alloc.lock() = AllocState {
            extents,
            next_segment,
            trees,
            extents_taken: 0,
        };
        *self.size.write() = (extent_count * geometry.pages_per_extent) as u32;
        Ok(())
    }

    /// Grows the file so that it holds page `page_no` (recovery replays changes to pages of extents
    /// whose file extension was not yet durable).
    pub fn ensure_page(&self, page_no: PageNo) -> Result<()> {
        if page_no < self.size_in_pages() {
            return Ok(());
        }
        self.grow_file(self.geometry.extent_of(page_no) + 1)
    }

    pub fn id(&self) -> SpaceId {
        self.id
    }

    pub fn page_size(&self) -> usize {
        self.geometry.page_size
    }

    pub fn pages_per_extent(&self) -> usize {
        self.geometry.pages_per_extent
    }

    /// The version cached pages of this space must carry to be valid.
    pub fn version(&self) -> u64 {
        self.version.load(Ordering::Acquire)
    }

    /// Invalidates every cached page of this space at once (O(1)): they become misses, are never
    /// written back, and are recycled when the replacement policy reaches them.
    pub fn invalidate(&self) {
        self.version.store(fresh_version(), Ordering::Release);
    }

    /// Marks the space dropped: its cached pages are invalid and any further access fails.
    pub fn mark_dropped(&self) {
        self.dropped.store(true, Ordering::Release);
        self.invalidate();
    }

    pub fn is_hidden(&self) -> bool {
        self.dropped.load(Ordering::Acquire)
    }

    pub(crate) fn allocation_lock(&self) -> &Arc<Mutex<()>> {
        &self.allocation_lock
    }

    /// Size of the file in pages.
    pub fn size_in_pages(&self) -> u32 {
        *self.size.read()
    }

    /// Reads a page from the file (no checksum check: the caller verifies).
    pub fn read_page(&self, page_no: PageNo, buf: &mut [u8]) -> Result<()> {
        let (file, offset) = self.page_location(page_no);
        file.read_at(buf, offset)
            .map_err(|e| self.read_error(page_no, e))
    }

    /// The file holding `page_no` and the page's offset in it, for batched reads.
    pub(crate) fn page_location(&self, page_no: PageNo) -> (&dyn FileIo, u64) {
        (self.file.as_ref(), page_no as u64 * self.page_size() as u64)
    }

    /// The error of a failed read of `page_no`.
    pub(crate) fn read_error(&self, page_no: PageNo, err: std::io::Error) -> StorageError {
        StorageError::io(format!("reading page {page_no} of space {}", self.id), err)
    }

    /// Writes a page to the file; returns false (and writes nothing) for a page past the end, which
    /// can only be a freed page whose extent was cut off.
    pub fn write_page(&self, page_no: PageNo, buf: &[u8]) -> Result<bool> {
        let size = self.size.read();
        if page_no >= *size {
            return Ok(false);
        }
        let offset = page_no as u64 * self.page_size() as u64;
        self.file.write_at(buf, offset).map_err(|e| {
            StorageError::io(format!("writing page {page_no} of space {}", self.id), e)
        })?;
        Ok(true)
    }

    /// The space's size in pages, read-locked: pages below it may be written while the guard is
    /// held (a shrink waits for it), as [`Space::write_page`] does for one page.
    pub(crate) fn size_for_writing(&self) -> parking_lot::RwLockReadGuard<'_, u32> {
        self.size.read()
    }

    /// Makes all written pages durable.
    pub fn sync(&self) -> Result<()> {
        self.file
            .sync_data()
            .map_err(|e| StorageError::io(format!("syncing space {}", self.id), e))
    }

    /// The trees listed in the header.
    pub fn trees(&self) -> Vec<TreeEntry> {
        self.alloc.lock().trees.clone()
    }

    /// Creates a new segment id (persisted in the header within `mtr`).
    pub fn create_segment(self: &Arc<Self>, mtr: &mut Mtr<'_>) -> Result<SegmentId> {
        mtr.lock_allocation(self);
        let header = mtr.latch(self, HEADER_PAGE)?;
        let mut state = self.alloc.lock();
        let segment = state.next_segment;
        state.next_segment += 1;
        write_u32(mtr.page_mut(header), OFF_NEXT_SEGMENT, state.next_segment);
        Ok(segment)
    }

    /// Adds a tree to the header directory within `mtr`.
    pub fn register_tree(self: &Arc<Self>, mtr: &mut Mtr<'_>, tree: TreeEntry) -> Result<()> {
        mtr.lock_allocation(self);
        let header = mtr.latch(self, HEADER_PAGE)?;
        let mut state = self.alloc.lock();
        if state.trees.iter().any(|t| t.index_id == tree.index_id) {
            return Err(StorageError::Format(format!(
                "index {} already exists in space {}",
                tree.index_id, self.id
            )));
        }
        if OFF_TREES + TREE_ENTRY * (state.trees.len() + 1) > self.page_size() {
            return Err(StorageError::Config(format!(
                "space {} cannot hold more trees",
                self.id
            )));
        }
        state.trees.push(tree);
        encode_trees(mtr.page_mut(header), &state.trees);
        Ok(())
    }

    /// Sets the root page of a registered tree within `mtr` (a bulk build registers its tree with
    /// root [`page::NO_PAGE`] and sets the root when it finishes).
    pub fn set_tree_root(
        self: &Arc<Self>,
        mtr: &mut Mtr<'_>,
        index_id: u64,
        root: PageNo,
    ) -> Result<()> {
        mtr.lock_allocation(self);
        let header = mtr.latch(self, HEADER_PAGE)?;
        let mut state = self.alloc.lock();
        let tree = state
            .trees
            .iter_mut()
            .find(|t| t.index_id == index_id)
            .ok_or_else(|| {
                StorageError::Format(format!("no index {index_id} in space {}", self.id))
            })?;
        tree.root = root;
        encode_trees(mtr.page_mut(header), &state.trees);
        Ok(())
    }

    /// Removes a tree within `mtr`: every extent of its two segments returns to the free pool and its
    /// entry leaves the header. Its pages are not touched (their cached copies just become free
    /// pages, reused when allocated again).
    pub fn drop_tree(self: &Arc<Self>, mtr: &mut Mtr<'_>, index_id: u64) -> Result<()> {
        mtr.lock_allocation(self);
        let header = mtr.latch(self, HEADER_PAGE)?;
        let freed: Vec<usize> = {
            let mut state = self.alloc.lock();
            let position = state
                .trees
                .iter()
                .position(|t| t.index_id == index_id)
                .ok_or_else(|| {
                    StorageError::Format(format!("no index {index_id} in space {}", self.id))
                })?;
            let tree = state.trees.remove(position);
            encode_trees(mtr.page_mut(header), &state.trees);
            let segments = [tree.leaf_segment, tree.branch_segment];
            let owned: Vec<usize> = (0..state.extents.len())
                .filter(|&e| segments.contains(&state.extents[e].owner))
                .collect();
            for &extent in &owned {
                state.extents[extent] = ExtentDescriptor::default();
            }
            owned
        };
        freed
            .into_iter()
            .try_for_each(|extent| self.persist_descriptor(mtr, extent))
    }

    /// Allocates one page for `segment` within `mtr`; the caller formats it via [`Mtr::create`].
    pub fn allocate_page(
        self: &Arc<Self>,
        mtr: &mut Mtr<'_>,
        segment: SegmentId,
    ) -> Result<PageNo> {
        assert!(
            segment > SYSTEM_SEGMENT,
            "allocation for a reserved segment"
        );
        mtr.lock_allocation(self);
        let ppe = self.geometry.pages_per_extent;
        let (extent, newly_owned) = {
            let state = self.alloc.lock();
            let owned = state
                .extents
                .iter()
                .position(|d| d.owner == segment && d.first_free(ppe).is_some());
            match owned {
                Some(extent) => (Some(extent), false),
                None => (
                    state.extents.iter().position(|d| d.owner == FREE_SEGMENT),
                    true,
                ),
            }
        };
        let extent = match extent {
            Some(extent) => extent,
            None => self.extend(mtr)?,
        };
        let page_in_extent = {
            let mut state = self.alloc.lock();
            state.extents_taken += u64::from(newly_owned);
            let descriptor = &mut state.extents[extent];
            if newly_owned {
                descriptor.owner = segment;
            }
            let free = descriptor.first_free(ppe).expect("extent has a free page");
            descriptor.set_used(free, true);
            free
        };
        self.persist_descriptor(mtr, extent)?;
        Ok(self.geometry.first_page(extent) + page_in_extent as PageNo)
    }

    /// Frees a page within `mtr`; an extent left empty returns to the free pool.
    pub fn free_page(self: &Arc<Self>, mtr: &mut Mtr<'_>, page_no: PageNo) -> Result<()> {
        mtr.lock_allocation(self);
        let extent = self.geometry.extent_of(page_no);
        {
            let mut state = self.alloc.lock();
            let descriptor = state
                .extents
                .get_mut(extent)
                .filter(|d| d.owner > SYSTEM_SEGMENT)
                .ok_or_else(|| {
                    StorageError::corrupt(self.id, page_no, "freeing a page no segment owns")
                })?;
            let index = page_no as usize % self.geometry.pages_per_extent;
            if !descriptor.is_used(index) {
                return Err(StorageError::corrupt(
                    self.id,
                    page_no,
                    "freeing a page twice",
                ));
            }
            descriptor.set_used(index, false);
            if descriptor.is_empty() {
                descriptor.owner = FREE_SEGMENT;
            }
        }
        self.persist_descriptor(mtr, extent)
    }

    /// Whether a page is allocated, and to which segment.
    pub fn page_owner(&self, page_no: PageNo) -> Option<SegmentId> {
        let state = self.alloc.lock();
        let extent = self.geometry.extent_of(page_no);
        let descriptor = state.extents.get(extent)?;
        descriptor
            .is_used(page_no as usize % self.geometry.pages_per_extent)
            .then_some(descriptor.owner)
    }

    /// Every allocated page with its owning segment, in page order.
    pub fn allocated_pages(&self) -> Vec<(PageNo, SegmentId)> {
        let state = self.alloc.lock();
        let ppe = self.geometry.pages_per_extent;
        let mut pages = Vec::new();
        for (extent, descriptor) in state.extents.iter().enumerate() {
            for index in (0..ppe).filter(|&i| descriptor.is_used(i)) {
                pages.push((
                    self.geometry.first_page(extent) + index as PageNo,
                    descriptor.owner,
                ));
            }
        }
        pages
    }

    /// Extents owned by each segment: `(segment, extent count)`.
    pub fn extents_by_owner(&self) -> Vec<(SegmentId, usize)> {
        let state = self.alloc.lock();
        let mut counts = std::collections::BTreeMap::new();
        for descriptor in &state.extents {
            *counts.entry(descriptor.owner).or_insert(0) += 1;
        }
        counts.into_iter().collect()
    }

    fn persist_descriptor(self: &Arc<Self>, mtr: &mut Mtr<'_>, extent: usize) -> Result<()> {
        let (map_page, offset) = self.geometry.descriptor_location(extent);
        let handle = mtr.latch(self, map_page)?;
        let descriptor = self.alloc.lock().extents[extent];
        descriptor.encode(&mut mtr.page_mut(handle)[offset..offset + DESCRIPTOR]);
        Ok(())
    }

    /// Grows the file by one extent and returns it (free). A new group gets its extent-map page.
    fn extend(self: &Arc<Self>, mtr: &mut Mtr<'_>) -> Result<usize> {
        let ppe = self.geometry.pages_per_extent;
        let mut extent = self.alloc.lock().extents.len();
        if self.geometry.starts_group(extent) {
            self.grow_file(extent + 1)?;
            let mut system = ExtentDescriptor {
                owner: SYSTEM_SEGMENT,
                ..Default::default()
            };
            system.set_used(0, true);
            self.alloc.lock().extents.push(system);
            let map_page = self.geometry.first_page(extent);
            let handle = mtr.create(self, map_page)?;
            mtr.edit(handle)
                .format(PageType::ExtentMap, self.id, map_page, 0, 0);
            self.persist_descriptor(mtr, extent)?;
            extent += 1;
        }
        self.grow_file(extent + 1)?;
        self.alloc.lock().extents.push(ExtentDescriptor::default());
        debug_assert_eq!(
            self.alloc.lock().extents.len() * ppe,
            *self.size.read() as usize
        );
        Ok(extent)
    }

    fn grow_file(&self, extents: usize) -> Result<()> {
        let mut size = self.size.write();
        self.file
            .set_len((extents * EXTENT_BYTES) as u64)
            .map_err(|e| StorageError::io(format!("extending space {}", self.id), e))?;
        *size = (extents * self.geometry.pages_per_extent) as u32;
        Ok(())
    }

    /// Marks the free extents at the end of the file, for [`Space::shrink`] after a checkpoint that
    /// begins later. Taken under the allocation lock, which an mtr holds until it commits, so every
    /// change to a page of those extents is in the log before the checkpoint's redo point.
    pub fn tail_mark(&self) -> TailMark {
        let _allocation = self.allocation_lock.lock();
        let state = self.alloc.lock();
        TailMark {
            keep: Self::extents_before_free_tail(&state),
            extents_taken: state.extents_taken,
        }
    }

    fn extents_before_free_tail(state: &AllocState) -> usize {
        state
            .extents
            .iter()
            .rposition(|d| d.owner != FREE_SEGMENT)
            .map_or(1, |last| last + 1)
    }

    /// Cuts the free extents of `mark` off the end of the file, returning the space to the OS, once
    /// a checkpoint that began after the mark is durable: recovery then replays no change to their
    /// pages (a change after the redo point to a page cut off would meet a page of zeros). Nothing
    /// is cut if an extent was handed out since the mark (it may have been changed and freed again
    /// after the redo point); the next checkpoint's mark does it. Returns the number of pages
    /// released.
    pub fn shrink(&self, mark: TailMark) -> Result<u32> {
        let _allocation = self.allocation_lock.lock();
        let mut state = self.alloc.lock();
        let keep = mark.keep.max(Self::extents_before_free_tail(&state));
        let changed = state.extents_taken != mark.extents_taken;
        if changed || keep >= state.extents.len() || self.is_hidden() {
            return Ok(0);
        }
        let mut size = self.size.write();
        let new_size = (keep * self.geometry.pages_per_extent) as u32;
        self.file
            .set_len((keep * EXTENT_BYTES) as u64)
            .map_err(|e| StorageError::io(format!("truncating space {}", self.id), e))?;
        let released = *size - new_size;
        *size = new_size;
        state.extents.truncate(keep);
        Ok(released)
    }
}

fn format_header(buf: &mut [u8], id: SpaceId, page_size: usize) {
    PageMut::new(buf).format(PageType::SpaceHeader, id, HEADER_PAGE, 0, 0);
    buf[OFF_MAGIC..OFF_MAGIC + 4].copy_from_slice(MAGIC);
    write_u32(buf, OFF_FORMAT, FORMAT_VERSION);
    write_u32(buf, OFF_PAGE_SIZE, page_size as u32);
    write_u32(buf, OFF_NEXT_SEGMENT, SYSTEM_SEGMENT + 1);
    write_u32(buf, OFF_TREE_COUNT, 0);
}

fn encode_trees(buf: &mut [u8], trees: &[TreeEntry]) {
    write_u32(buf, OFF_TREE_COUNT, trees.len() as u32);
    for (i, tree) in trees.iter().enumerate() {
        let at = OFF_TREES + TREE_ENTRY * i;
        write_u64(buf, at, tree.index_id);
        write_u32(buf, at + 8, tree.root);
        write_u32(buf, at + 12, tree.leaf_segment);
        write_u32(buf, at + 16, tree.branch_segment);
    }
}

fn decode_trees(buf: &[u8], id: SpaceId) -> Result<Vec<TreeEntry>> {
    let count = read_u32(buf, OFF_TREE_COUNT) as usize;
    if OFF_TREES + TREE_ENTRY * count > buf.len() {
        return Err(StorageError::corrupt(
            id,
            HEADER_PAGE,
            format!("tree count {count} too large"),
        ));
    }
    Ok((0..count)
        .map(|i| {
            let at = OFF_TREES + TREE_ENTRY * i;
            TreeEntry {
                index_id: read_u64(buf, at),
                root: read_u32(buf, at + 8),
                leaf_segment: read_u32(buf, at + 12),
                branch_segment: read_u32(buf, at + 16),
            }
        })
        .collect())
}

/// Reads the page size from a space file's header without knowing it in advance.
fn read_page_size(file: &dyn FileIo, id: SpaceId) -> Result<usize> {
    let mut probe = AlignedBuf::zeroed(page::MIN_PAGE_SIZE);
    file.read_at(&mut probe, 0)
        .map_err(|e| StorageError::io(format!("reading the header of space {id}"), e))?;
    let size = read_u32(&probe, OFF_PAGE_SIZE) as usize;
    page::validate_page_size(size).map_err(|_| {
        StorageError::corrupt(
            id,
            HEADER_PAGE,
            format!("invalid page size {size} in header"),
        )
    })?;
    Ok(size)
}

fn read_verified(file: &dyn FileIo, id: SpaceId, page_no: PageNo, buf: &mut [u8]) -> Result<()> {
    file.read_at(buf, page_no as u64 * buf.len() as u64)
        .map_err(|e| StorageError::io(format!("reading page {page_no} of space {id}"), e))?;
    page::verify(buf, id, page_no)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buffer_pool::{BufferPool, PoolConfig};
    use crate::io::MemVfs;
    use proptest::prelude::*;

    proptest! {
        /// The first free page, found by words, is the first page whose bit is clear.
        #[test]
        fn first_free_is_the_first_clear_bit(
            used in prop::collection::vec(any::<bool>(), 0..=BITMAP_WORDS * 64),
            full_words in 0..=BITMAP_WORDS,
            pages in 1..=BITMAP_WORDS * 64,
        ) {
            let mut extent = ExtentDescriptor { owner: 1, used: [0; BITMAP_WORDS] };
            for page in 0..pages {
                let set = page < full_words * 64 || used.get(page).copied().unwrap_or(false);
                extent.set_used(page, set);
            }
            let by_bits = (0..pages).find(|&page| !extent.is_used(page));
            prop_assert_eq!(extent.first_free(pages), by_bits);
        }
    }

    #[test]
    fn segments_get_whole_extents_and_empty_extents_return() {
        let vfs = MemVfs::new();
        let space = Space::create(&vfs, 7, 4096).unwrap();
        let pool = BufferPool::new(PoolConfig::with_budget(4096, 1 << 20)).unwrap();
        let mut mtr = Mtr::new(&pool).unwrap();
        let leaves = space.create_segment(&mut mtr).unwrap();
        let branches = space.create_segment(&mut mtr).unwrap();
        let a = space.allocate_page(&mut mtr, leaves).unwrap();
        let b = space.allocate_page(&mut mtr, branches).unwrap();
        let c = space.allocate_page(&mut mtr, leaves).unwrap();
        mtr.commit();
        assert_eq!((a, c), (256, 257), "leaves share their own extent");
        assert_eq!(b, 512, "branches start another extent");
        let mut mtr = Mtr::new(&pool).unwrap();
        space.free_page(&mut mtr, b).unwrap();
        mtr.commit();
        assert_eq!(space.page_owner(b), None);
        let mark = space.tail_mark();
        let mut mtr = Mtr::new(&pool).unwrap();
        let again = space.allocate_page(&mut mtr, branches).unwrap();
        space.free_page(&mut mtr, again).unwrap();
        mtr.commit();
        assert_eq!(
            space.shrink(mark).unwrap(),
            0,
            "an extent handed out since the mark may hold changes after the redo point"
        );
        let mark = space.tail_mark();
        assert_eq!(space.shrink(mark).unwrap(), 256);
        assert_eq!(space.size_in_pages(), 512);
        pool.flush_all().unwrap();
        let reopened = Space::open(&vfs, 7).unwrap();
        assert_eq!(reopened.allocated_pages(), space.allocated_pages());
    }
}
