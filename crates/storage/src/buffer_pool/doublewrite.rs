//! The doublewrite area: torn-page protection off the commit path (InnoDB's doublewrite buffer).
//!
//! Every page the pool writes back to its space file is first written, checksummed, into a slot of
//! the file [`DOUBLEWRITE_FILE`], and that file is synced; only then is the page written in place.
//! A crash during an in-place write can leave a torn page, but a whole copy of it is then in the
//! area, and open puts the copy back ([`Doublewrite::restore_torn`]) before recovery replays the
//! log. So the redo log carries no page image for torn-page protection: a page's first change
//! after a checkpoint is logged as the change it is, however large the table (PostgreSQL's
//! full_page_writes logs the whole page there, and a write-heavy load's log right after each
//! checkpoint is mostly those images). The price is paid by write-back, which is off the commit
//! path: every page is written twice, and one area sync per batch of pages.
//!
//! Invariants:
//! * a page is written in place only while a durable copy of it is in the area (the slots are
//!   written and synced before [`Doublewrite::protect`] runs the in-place writes);
//! * a slot is overwritten only once the in-place write of the copy it holds is durable: the area
//!   is a ring, and before it starts over it syncs every space file written since it last did.
//!   So the copy of any page whose write a crash interrupted is still in the area;
//! * one batch at a time: the ring's lock ([`Protected`]) is held from the slots' write to the end
//!   of the in-place writes (page writes are serialised, which the flusher's batches make cheap).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use parking_lot::{Mutex, MutexGuard};

use crate::io::{AlignedBuf, FileIo, Vfs};
use crate::page::{self, Page};
use crate::space::Space;
use crate::{Lsn, PageNo, Result, SpaceId, StorageError};

/// The file of the doublewrite area in a data directory.
pub const DOUBLEWRITE_FILE: &str = "doublewrite.sdb";

/// The area's size: the in-place writes it covers between two syncs of the space files.
const AREA_BYTES: usize = 8 << 20;

/// The doublewrite area of a data directory.
pub struct Doublewrite {
    file: Arc<dyn FileIo>,
    page_size: usize,
    slots: usize,
    ring: Mutex<Ring>,
}

/// Held while protected pages are written in place: no other batch takes slots meanwhile.
pub(crate) struct Protected<'a> {
    _ring: MutexGuard<'a, Ring>,
}

/// Where the next copies go, and the spaces written in place since the ring last started over.
struct Ring {
    next: usize,
    written: HashMap<SpaceId, Arc<Space>>,
}

impl Doublewrite {
    /// Opens the area of the directory behind `vfs`, creating it if it is missing.
    pub fn open(vfs: &dyn Vfs, page_size: usize) -> Result<Doublewrite> {
        let error = |e| StorageError::io(format!("opening {DOUBLEWRITE_FILE}"), e);
        let created = !vfs.exists(DOUBLEWRITE_FILE);
        let file = vfs.open(DOUBLEWRITE_FILE, true).map_err(error)?;
        let slots = (AREA_BYTES / page_size).max(1);
        if created || file.file_len().map_err(error)? < (slots * page_size) as u64 {
            file.set_len((slots * page_size) as u64)
                .and_then(|_| file.sync_data())
                .and_then(|_| vfs.sync_dir())
                .map_err(error)?;
        }
        Ok(Doublewrite {
            file,
            page_size,
            slots,
            ring: Mutex::new(Ring {
                next: 0,
                written: HashMap::new(),
            }),
        })
    }

    /// How many pages one call of [`Doublewrite::protect`] may cover.
    pub fn slots(&self) -> usize {
        self.slots
    }

    /// Makes copies of `pages` (checksummed page images with the space each belongs to) durable in
    /// the area; the caller writes them in place while it holds the returned guard. At most
    /// [`Doublewrite::slots`] pages.
    pub(crate) fn protect(&self, pages: &[(&Arc<Space>, &[u8])]) -> Result<Protected<'_>> {
        assert!(pages.len() <= self.slots, "a batch fits the area");
        let mut ring = self.ring.lock();
        if ring.next + pages.len() > self.slots {
            for space in ring.written.values() {
                space.sync()?;
            }
            ring.written.clear();
            ring.next = 0;
        }
        let mut copies = AlignedBuf::zeroed(pages.len() * self.page_size);
        for (copy, (space, page)) in copies.chunks_mut(self.page_size).zip(pages) {
            copy.copy_from_slice(page);
            ring.written
                .entry(space.id())
                .or_insert_with(|| Arc::clone(space));
        }
        let at = (ring.next * self.page_size) as u64;
        self.file
            .write_at(&copies, at)
            .and_then(|_| self.file.sync_data())
            .map_err(|e| StorageError::io(format!("writing {DOUBLEWRITE_FILE}"), e))?;
        ring.next += pages.len();
        Ok(Protected { _ring: ring })
    }

    /// Puts back, from their copies in the area, the pages of `spaces` that a crash tore during
    /// their in-place write: a page that fails its check while the area holds a whole copy of it
    /// (the newest if it holds several) at least as new as the LSN in the page's header (a torn
    /// write leaves there the old LSN or the copy's). A page corrupted later than the write of a
    /// copy the area still holds is left as it is, to be reported. Returns how many it put back.
    /// Runs before recovery; each space written is synced once at the end (a crash during it
    /// leaves the area as it was, so the next open restores the same pages again).
    pub fn restore_torn(&self, spaces: &BTreeMap<SpaceId, Arc<Space>>) -> Result<usize> {
        let mut area = AlignedBuf::zeroed(self.slots * self.page_size);
        self.file
            .read_at(&mut area, 0)
            .map_err(|e| StorageError::io(format!("reading {DOUBLEWRITE_FILE}"), e))?;
        let mut newest: HashMap<(SpaceId, PageNo), (Lsn, &[u8])> = HashMap::new();
        for copy in area.chunks(self.page_size) {
            let view = Page::new(copy);
            let (space, page_no, lsn) = (view.space_id(), view.page_no(), view.lsn());
            if page::verify(copy, space, page_no).is_err() {
                continue;
            }
            let entry = newest.entry((space, page_no)).or_insert((lsn, copy));
            if entry.0 < lsn {
                *entry = (lsn, copy);
            }
        }
        let mut restored = 0;
        let mut written = std::collections::BTreeSet::new();
        let mut in_place = AlignedBuf::zeroed(self.page_size);
        for ((space_id, page_no), (copy_lsn, copy)) in newest {
            let Some(space) = spaces.get(&space_id) else {
                continue;
            };
            let (file, offset) = space.page_location(page_no);
            let len = file.file_len().map_err(|e| space.read_error(page_no, e))?;
            if offset + self.page_size as u64 > len {
                continue;
            }
            file.read_at(&mut in_place, offset)
                .map_err(|e| space.read_error(page_no, e))?;
            if page::verify(&in_place, space_id, page_no).is_ok()
                || Page::new(&in_place).lsn() > copy_lsn
            {
                continue;
            }
            file.write_at(copy, offset).map_err(|e| {
                StorageError::io(format!("restoring page {page_no} of space {space_id}"), e)
            })?;
            written.insert(space_id);
            restored += 1;
        }
        for space_id in written {
            spaces[&space_id].sync()?;
        }
        Ok(restored)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::MemVfs;
    use crate::page::{PageMut, PageType};

    const PAGE: usize = 4096;

    fn image(space: SpaceId, page_no: PageNo, lsn: Lsn, fill: u8) -> AlignedBuf {
        let mut buf = AlignedBuf::zeroed(PAGE);
        let mut page = PageMut::new(&mut buf);
        page.format(PageType::Overflow, space, page_no, 0, 0);
        page.set_lsn(lsn);
        buf[page::HEADER_SIZE..].fill(fill);
        page::stamp_checksum(&mut buf);
        buf
    }

    #[test]
    fn a_torn_page_gets_its_newest_copy_back_and_whole_or_newer_pages_are_left_alone() {
        let vfs = MemVfs::new();
        let space = Space::create(&vfs, 1, PAGE).unwrap();
        let area = Doublewrite::open(&vfs, PAGE).unwrap();
        let write = |images: &[&AlignedBuf]| {
            let pages: Vec<(&Arc<Space>, &[u8])> =
                images.iter().map(|i| (&space, &i[..])).collect();
            let _protected = area.protect(&pages).unwrap();
            for image in images {
                let page_no = Page::new(image).page_no();
                assert!(space.write_page(page_no, image).unwrap());
            }
        };
        let (old, new, other) = (image(1, 5, 10, 1), image(1, 5, 20, 2), image(1, 6, 30, 3));
        write(&[&old]);
        write(&[&new, &other]);
        let newer_other = image(1, 6, 40, 4);
        assert!(space.write_page(6, &newer_other).unwrap());
        let (file, offset) = space.page_location(5);
        file.write_at(&[0xA5; PAGE / 2], offset + PAGE as u64 / 2)
            .unwrap();
        let spaces = BTreeMap::from([(1, Arc::clone(&space))]);
        assert_eq!(area.restore_torn(&spaces).unwrap(), 1);
        let read = |page_no: PageNo| {
            let mut read = AlignedBuf::zeroed(PAGE);
            file.read_at(&mut read, space.page_location(page_no).1)
                .unwrap();
            read
        };
        assert_eq!(&read(5)[..], &new[..]);
        assert_eq!(&read(6)[..], &newer_other[..]);

        write(&[&image(1, 7, 50, 5)]);
        let mut rotten = image(1, 7, 60, 6);
        rotten[PAGE - 1] ^= 1;
        assert!(space.write_page(7, &rotten).unwrap());
        assert_eq!(
            area.restore_torn(&spaces).unwrap(),
            0,
            "an older copy is kept out"
        );
        assert_eq!(&read(7)[..], &rotten[..]);
        let reopened = Doublewrite::open(&vfs, PAGE).unwrap();
        assert_eq!(reopened.restore_torn(&spaces).unwrap(), 0);
    }
}
