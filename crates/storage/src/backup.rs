//! Online physical backup: a copy of a data directory, taken while it serves, that opens as the
//! directory would after a crash at the moment the copy ended.
//!
//! ```text
//!  hold checkpoints (the redo point C stays; the log from C is not overwritten)
//!  copy every space file page by page, each page checked: a page caught half-written by the
//!      flusher fails its checksum and is read again
//!  copy the doublewrite file
//!  make the log durable up to its end E, copy redo.log's header (redo point C) and its records
//!      from C to E in place (the rest of the copy a hole: zeros end recovery's scan)
//!  sync the copies and the directory, release checkpoints
//! ```
//!
//! Why it is consistent: every page change in a copied file had its log made durable before the
//! page was written (the log rule), and the log is copied last, so the copy's log holds every
//! change its pages carry, from C — whose changes before it are in the files, as C is a finished
//! checkpoint — to at least E. Opening the copy recovers it as after a crash: pages are brought
//! forward by the log from C, and transactions the log does not show committed are rolled back.
//!
//! Invariants and limits:
//! * No checkpoint runs during the copy, so the log written meanwhile must fit in the log's
//!   capacity: past that, writers wait for the copy to end (the 1 GiB default holds minutes of
//!   pgbench).
//! * Files of spaces created during the copy are not in it (recovery skips the log of spaces
//!   without a file); the engine keeps DDL out while it copies. A space dropped meanwhile is
//!   skipped.
//! * The destination must be new or an empty directory; files are written, synced, then the
//!   directory is synced.

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::Duration;

use crate::buffer_pool::doublewrite::DOUBLEWRITE_FILE;
use crate::io::{AlignedBuf, FileIo};
use crate::page::{compute_checksum, read_u32};
use crate::space::Space;
use crate::store::Store;
use crate::wal::{Wal, HEADER_BLOCK, LOG_FILE};
use crate::{Lsn, Result, StorageError};

/// Pages read and checked at a time.
const CHUNK_PAGES: usize = 64;
/// How often a page that fails its checksum is read again before the backup fails.
const REREADS: u32 = 200;
/// The pause between two reads of such a page (the flusher's write of it is under way).
const REREAD_PAUSE: Duration = Duration::from_millis(1);

/// What a backup copied.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BackupReport {
    pub files: usize,
    pub bytes: u64,
    /// The log the copy recovers from (its redo point) and up to (at least).
    pub redo_from: Lsn,
    pub redo_to: Lsn,
    /// Pages read again because a write of them was under way.
    pub pages_reread: u64,
}

impl std::fmt::Display for BackupReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} files, {} bytes, redo {}..{}, {} pages read again",
            self.files, self.bytes, self.redo_from, self.redo_to, self.pages_reread
        )
    }
}

impl Store {
    /// Copies this open directory into `dest` (new, or an empty directory), consistent as of the
    /// end of the copy; see the module documentation.
    pub fn backup_to(&self, dest: &Path) -> Result<BackupReport> {
        prepare_destination(dest)?;
        let _no_checkpoints = self.pool().hold_checkpoints();
        let wal = self.pool().wal().cloned();
        let mut report = BackupReport {
            redo_from: wal.as_ref().map_or(0, |w| w.checkpoint_lsn()),
            ..BackupReport::default()
        };
        let mut spaces = self.spaces();
        spaces.sort_by_key(|s| s.id());
        for space in spaces {
            match self.vfs().open(&Space::file_name(space.id()), false) {
                Ok(file) => self.copy_space(&space, &*file, dest, &mut report)?,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(StorageError::io("opening a space to back it up", e)),
            }
        }
        if self.vfs().exists(DOUBLEWRITE_FILE) {
            let file = self.open_for_copy(DOUBLEWRITE_FILE, false)?;
            copy_file(&*file, &dest.join(DOUBLEWRITE_FILE), &mut report)?;
        }
        if let Some(wal) = wal {
            wal.flush_all()?;
            report.redo_to = wal.flushed_lsn();
            let file = self.open_for_copy(LOG_FILE, true)?;
            copy_log(&*file, &wal, &dest.join(LOG_FILE), &mut report)?;
        }
        File::open(dest)
            .and_then(|d| d.sync_all())
            .map_err(|e| StorageError::io("syncing the backup directory", e))?;
        Ok(report)
    }

    fn open_for_copy(&self, name: &str, log: bool) -> Result<std::sync::Arc<dyn FileIo>> {
        let opened = match log {
            true => self.vfs().open_log(name, false),
            false => self.vfs().open(name, false),
        };
        opened.map_err(|e| StorageError::io(format!("opening {name} to back it up"), e))
    }

    /// Copies a space file, each page whole: one that fails its checksum (a write of it is under
    /// way) is read again until it passes.
    fn copy_space(
        &self,
        space: &Space,
        file: &dyn FileIo,
        dest: &Path,
        report: &mut BackupReport,
    ) -> Result<()> {
        let page_size = self.page_size();
        let name = Space::file_name(space.id());
        let error = |e| StorageError::io(format!("backing up {name}"), e);
        let length = file.file_len().map_err(error)?;
        let pages = (length / page_size as u64) as usize;
        let mut out = File::create(dest.join(&name)).map_err(error)?;
        let mut buf = AlignedBuf::zeroed(page_size * CHUNK_PAGES);
        let mut page_buf = AlignedBuf::zeroed(page_size);
        for first in (0..pages).step_by(CHUNK_PAGES) {
            let count = CHUNK_PAGES.min(pages - first);
            let chunk = &mut buf[..count * page_size];
            file.read_at(chunk, (first * page_size) as u64)
                .map_err(error)?;
            for (i, page) in chunk.chunks_mut(page_size).enumerate() {
                let offset = ((first + i) * page_size) as u64;
                let mut reads = 0;
                while !is_whole(page) {
                    reads += 1;
                    if reads > REREADS {
                        return Err(StorageError::corrupt(
                            space.id(),
                            (first + i) as u32,
                            "the page fails its checksum at every read (backup)",
                        ));
                    }
                    std::thread::sleep(REREAD_PAUSE);
                    file.read_at(&mut page_buf, offset).map_err(error)?;
                    page.copy_from_slice(&page_buf);
                    report.pages_reread += 1;
                }
            }
            out.write_all(chunk).map_err(error)?;
        }
        out.sync_all().map_err(error)?;
        report.files += 1;
        report.bytes += (pages * page_size) as u64;
        Ok(())
    }
}

/// A page as written whole: never written (zeros) or with its checksum right.
fn is_whole(page: &[u8]) -> bool {
    page.iter().all(|&b| b == 0) || read_u32(page, 0) == compute_checksum(page)
}

/// Copies the doublewrite area whole, as it is now.
fn copy_file(file: &dyn FileIo, to: &Path, report: &mut BackupReport) -> Result<()> {
    let length = file.file_len().map_err(|e| copy_error(to, e))?;
    copy_ranges(file, to, &[(0, length)], report)
}

/// Copies the log's header (its checkpoint slots: the redo point) and the records from the redo
/// point to the end of the durable log, at their places in the ring; the rest of the copy is a
/// hole (zeros, where recovery's scan ends). The copy has the log's size and capacity.
fn copy_log(file: &dyn FileIo, wal: &Wal, to: &Path, report: &mut BackupReport) -> Result<()> {
    let capacity = wal.capacity();
    let block = crate::io::IO_ALIGN as u64;
    let mut ranges = vec![(0, HEADER_BLOCK)];
    let (from, to_lsn) = (
        report.redo_from / block * block,
        report.redo_to.div_ceil(block) * block,
    );
    let (start, length) = (from % capacity, (to_lsn - from).min(capacity));
    let first = length.min(capacity - start);
    ranges.push((HEADER_BLOCK + start, first));
    if first < length {
        ranges.push((HEADER_BLOCK, length - first));
    }
    copy_ranges(file, to, &ranges, report)
}

/// Copies the `(offset, length)` ranges of `file` to the same places of the new file `to`, which
/// gets `file`'s length (what lies outside the ranges is a hole), and syncs it.
fn copy_ranges(
    file: &dyn FileIo,
    to: &Path,
    ranges: &[(u64, u64)],
    report: &mut BackupReport,
) -> Result<()> {
    let error = |e| copy_error(to, e);
    let out = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(to)
        .map_err(error)?;
    out.set_len(file.file_len().map_err(error)?)
        .map_err(error)?;
    let mut buf = AlignedBuf::zeroed(1 << 20);
    for &(offset, length) in ranges {
        let mut done = 0;
        while done < length {
            let n = buf.len().min((length - done) as usize);
            file.read_at(&mut buf[..n], offset + done).map_err(error)?;
            out.write_all_at(&buf[..n], offset + done).map_err(error)?;
            done += n as u64;
        }
        report.bytes += length;
    }
    out.sync_all().map_err(error)?;
    report.files += 1;
    Ok(())
}

fn copy_error(to: &Path, source: std::io::Error) -> StorageError {
    StorageError::io(format!("backing up {}", to.display()), source)
}

/// Creates `dest`, or accepts it empty; anything in it is refused rather than mixed with.
fn prepare_destination(dest: &Path) -> Result<()> {
    let error = |e| {
        StorageError::io(
            format!("preparing the backup directory {}", dest.display()),
            e,
        )
    };
    if dest.exists() {
        let mut entries = std::fs::read_dir(dest).map_err(error)?;
        if entries.next().is_some() {
            return Err(StorageError::io(
                format!("backing up into {}", dest.display()),
                std::io::Error::new(
                    std::io::ErrorKind::AlreadyExists,
                    "the directory is not empty",
                ),
            ));
        }
        return Ok(());
    }
    std::fs::create_dir_all(dest).map_err(error)
}
