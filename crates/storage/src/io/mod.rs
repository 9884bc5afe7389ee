//! The file I/O seam: everything above talks to [`Vfs`] and [`FileIo`], never to `std::fs` directly.
//!
//! The seam is as narrow as redb's `StorageBackend` so that tests can swap in [`MemVfs`] (and, for the
//! crash tests of the redo log, a backend that forgets unsynced writes). [`OsVfs`] is the real one:
//! positioned reads and writes (`pread`/`pwrite`), optional `O_DIRECT`, and `fsync` of the directory
//! after a file is created, renamed or removed.
//!
//! An [`OsVfs`] owns its directory for its process: the process holds an exclusive `flock` on the
//! file [`LOCK_FILE`] (which names the holder's pid and start time) while any `OsVfs` of it uses
//! the directory, so a second process — a second `steady serve`, or `steady shell` / `steady
//! check` on a served directory — gets a clear error instead of corrupting the data. The kernel
//! drops the lock when the process ends, however it ends.
//!
//! Invariant: page I/O always uses [`AlignedBuf`] buffers and page-aligned offsets, so `O_DIRECT`
//! can be switched on without touching callers (the kernel here does not reject misaligned direct I/O,
//! so the alignment is enforced by the type, not by a test failure).

pub mod batch;

use std::alloc::{self, Layout};
use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io;
use std::ops::{Deref, DerefMut};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parking_lot::Mutex;

/// Alignment of every page buffer: enough for `O_DIRECT` on any block device.
pub const IO_ALIGN: usize = 4096;

/// One open file: positioned reads and writes, length, durability.
pub trait FileIo: Send + Sync {
    /// Fills `buf` from `offset`; a read past the end of the file is an `UnexpectedEof` error.
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()>;
    /// Writes all of `buf` at `offset`, extending the file if needed.
    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()>;
    /// Current length in bytes.
    fn file_len(&self) -> io::Result<u64>;
    /// Grows (with zeros) or shrinks the file.
    fn set_len(&self, len: u64) -> io::Result<()>;
    /// Makes every completed write durable.
    fn sync_data(&self) -> io::Result<()>;
    /// The descriptor to hand to the kernel for batched reads ([`batch`]); `None` for files that
    /// only this process's code can read.
    fn raw_fd(&self) -> Option<std::os::fd::RawFd> {
        None
    }
}

/// A directory of files.
pub trait Vfs: Send + Sync {
    /// Opens `name`, creating it empty if `create` is set and it does not exist.
    fn open(&self, name: &str, create: bool) -> io::Result<Arc<dyn FileIo>>;
    /// Opens the redo log: like [`Vfs::open`], but always through the page cache, for its reads
    /// (recovery) and its small writes (checkpoint slots) at any offset and length.
    fn open_log(&self, name: &str, create: bool) -> io::Result<Arc<dyn FileIo>> {
        self.open(name, create)
    }
    /// A second handle on the existing log `name` for its record writes, which are whole
    /// [`IO_ALIGN`] blocks from [`AlignedBuf`]s at aligned offsets: with `O_DIRECT` where the file
    /// system allows it (a commit's sync then writes only its blocks, not the page cache's), else
    /// as [`Vfs::open_log`].
    fn open_log_writes(&self, name: &str) -> io::Result<Arc<dyn FileIo>> {
        self.open_log(name, false)
    }
    /// Removes `name` (the directory entry; open handles stay usable).
    fn remove(&self, name: &str) -> io::Result<()>;
    /// Renames `from` to `to` atomically, replacing `to` if it exists (open handles stay usable).
    fn rename(&self, from: &str, to: &str) -> io::Result<()>;
    /// Whether `name` exists.
    fn exists(&self, name: &str) -> bool;
    /// The names of all files in the directory.
    fn list(&self) -> io::Result<Vec<String>>;
    /// Makes creations, renames and removals of directory entries durable.
    fn sync_dir(&self) -> io::Result<()>;
}

/// The operating system's file system, rooted at one directory.
pub struct OsVfs {
    dir: PathBuf,
    direct_io: bool,
    /// The directory's lock, shared by this process's `OsVfs`s of it; released with the last.
    _lock: Arc<File>,
}

/// The file in a data directory whose `flock` says which process uses the directory.
pub const LOCK_FILE: &str = "steady.lock";

impl OsVfs {
    /// Uses `dir` (created if missing) and takes its lock; `direct_io` opens files with `O_DIRECT`.
    /// Fails with [`io::ErrorKind::WouldBlock`] when another process holds the directory.
    pub fn new(dir: &Path, direct_io: bool) -> io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        Ok(OsVfs {
            dir: dir.to_path_buf(),
            direct_io,
            _lock: lock_directory(dir)?,
        })
    }

    /// The directory this file system is rooted at.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn open_file(&self, name: &str, create: bool, direct: bool) -> io::Result<Arc<dyn FileIo>> {
        let mut options = OpenOptions::new();
        options.read(true).write(true).create(create);
        if direct {
            options.custom_flags(libc::O_DIRECT);
        }
        let file = options.open(self.dir.join(name))?;
        Ok(Arc::new(OsFile { file }))
    }
}

/// The lock of `dir` for this process: the one already held, or a new one.
fn lock_directory(dir: &Path) -> io::Result<Arc<File>> {
    static HELD: Mutex<Vec<(PathBuf, std::sync::Weak<File>)>> = Mutex::new(Vec::new());
    let dir = dir.canonicalize()?;
    let mut held = HELD.lock();
    held.retain(|(_, lock)| lock.strong_count() > 0);
    if let Some(lock) = held
        .iter()
        .find(|(path, _)| *path == dir)
        .and_then(|(_, lock)| lock.upgrade())
    {
        return Ok(lock);
    }
    let lock = Arc::new(take_lock(&dir)?);
    held.push((dir, Arc::downgrade(&lock)));
    Ok(lock)
}

/// Takes the exclusive lock of `dir` and writes the holder's description into the lock file.
fn take_lock(dir: &Path) -> io::Result<File> {
    use std::io::Read;
    use std::os::fd::AsRawFd;
    let mut file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(dir.join(LOCK_FILE))?;
    // SAFETY: flock only takes the descriptor of a file this function owns.
    if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        let err = io::Error::last_os_error();
        if err.raw_os_error() != Some(libc::EWOULDBLOCK) {
            return Err(err);
        }
        let mut holder = String::new();
        let _ = file.read_to_string(&mut holder);
        return Err(io::Error::new(
            io::ErrorKind::WouldBlock,
            format!(
                "data directory {} is in use by another process ({})",
                dir.display(),
                holder.trim()
            ),
        ));
    }
    let started = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    file.set_len(0)?;
    file.write_all_at(
        format!(
            "pid {}, started at unix time {started}\n",
            std::process::id()
        )
        .as_bytes(),
        0,
    )?;
    Ok(file)
}

impl Vfs for OsVfs {
    fn open(&self, name: &str, create: bool) -> io::Result<Arc<dyn FileIo>> {
        self.open_file(name, create, self.direct_io)
    }

    fn open_log(&self, name: &str, create: bool) -> io::Result<Arc<dyn FileIo>> {
        self.open_file(name, create, false)
    }

    fn open_log_writes(&self, name: &str) -> io::Result<Arc<dyn FileIo>> {
        match self.open_file(name, false, true) {
            Err(err) if err.raw_os_error() == Some(libc::EINVAL) => {
                self.open_file(name, false, false)
            }
            opened => opened,
        }
    }

    fn remove(&self, name: &str) -> io::Result<()> {
        std::fs::remove_file(self.dir.join(name))
    }

    fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        std::fs::rename(self.dir.join(from), self.dir.join(to))
    }

    fn exists(&self, name: &str) -> bool {
        self.dir.join(name).exists()
    }

    fn list(&self) -> io::Result<Vec<String>> {
        let mut names = Vec::new();
        for entry in std::fs::read_dir(&self.dir)? {
            let entry = entry?;
            let name = entry.file_name().to_string_lossy().into_owned();
            if entry.file_type()?.is_file() && name != LOCK_FILE {
                names.push(name);
            }
        }
        names.sort();
        Ok(names)
    }

    fn sync_dir(&self) -> io::Result<()> {
        File::open(&self.dir)?.sync_all()
    }
}

struct OsFile {
    file: File,
}

impl FileIo for OsFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        self.file.read_exact_at(buf, offset)
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        self.file.write_all_at(buf, offset)
    }

    fn file_len(&self) -> io::Result<u64> {
        Ok(self.file.metadata()?.len())
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.file.set_len(len)
    }

    fn sync_data(&self) -> io::Result<()> {
        self.file.sync_data()
    }

    fn raw_fd(&self) -> Option<std::os::fd::RawFd> {
        use std::os::fd::AsRawFd;
        Some(self.file.as_raw_fd())
    }
}

/// An in-memory file system for tests: fast, and inspectable.
#[derive(Default)]
pub struct MemVfs {
    files: Mutex<HashMap<String, Arc<MemFile>>>,
}

impl MemVfs {
    pub fn new() -> Self {
        Self::default()
    }
}

impl Vfs for MemVfs {
    fn open(&self, name: &str, create: bool) -> io::Result<Arc<dyn FileIo>> {
        let mut files = self.files.lock();
        match files.get(name) {
            Some(file) => Ok(file.clone()),
            None if create => {
                let file = Arc::new(MemFile::default());
                files.insert(name.to_string(), file.clone());
                Ok(file)
            }
            None => Err(io::Error::new(io::ErrorKind::NotFound, name.to_string())),
        }
    }

    fn remove(&self, name: &str) -> io::Result<()> {
        match self.files.lock().remove(name) {
            Some(_) => Ok(()),
            None => Err(io::Error::new(io::ErrorKind::NotFound, name.to_string())),
        }
    }

    fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        let mut files = self.files.lock();
        let file = files
            .remove(from)
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, from.to_string()))?;
        files.insert(to.to_string(), file);
        Ok(())
    }

    fn exists(&self, name: &str) -> bool {
        self.files.lock().contains_key(name)
    }

    fn list(&self) -> io::Result<Vec<String>> {
        let mut names: Vec<String> = self.files.lock().keys().cloned().collect();
        names.sort();
        Ok(names)
    }

    fn sync_dir(&self) -> io::Result<()> {
        Ok(())
    }
}

/// One in-memory file.
#[derive(Default)]
pub struct MemFile {
    data: Mutex<Vec<u8>>,
}

impl FileIo for MemFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let data = self.data.lock();
        let start = offset as usize;
        let end = start + buf.len();
        if end > data.len() {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "read past end of file",
            ));
        }
        buf.copy_from_slice(&data[start..end]);
        Ok(())
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        let mut data = self.data.lock();
        let start = offset as usize;
        let end = start + buf.len();
        if end > data.len() {
            data.resize(end, 0);
        }
        data[start..end].copy_from_slice(buf);
        Ok(())
    }

    fn file_len(&self) -> io::Result<u64> {
        Ok(self.data.lock().len() as u64)
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        self.data.lock().resize(len as usize, 0);
        Ok(())
    }

    fn sync_data(&self) -> io::Result<()> {
        Ok(())
    }
}

/// A zero-initialised heap buffer aligned to [`IO_ALIGN`], the only kind of buffer page I/O uses.
pub struct AlignedBuf {
    ptr: std::ptr::NonNull<u8>,
    len: usize,
}

// SAFETY: AlignedBuf owns its allocation exclusively, like a Box<[u8]>.
unsafe impl Send for AlignedBuf {}
// SAFETY: shared access only hands out `&[u8]`.
unsafe impl Sync for AlignedBuf {}

impl AlignedBuf {
    /// A zeroed buffer of `len` bytes (`len` > 0).
    pub fn zeroed(len: usize) -> Self {
        assert!(len > 0, "empty aligned buffer");
        let layout = Self::layout(len);
        // SAFETY: the layout has a non-zero size.
        let raw = unsafe { alloc::alloc_zeroed(layout) };
        let ptr = std::ptr::NonNull::new(raw).unwrap_or_else(|| alloc::handle_alloc_error(layout));
        AlignedBuf { ptr, len }
    }

    fn layout(len: usize) -> Layout {
        Layout::from_size_align(len, IO_ALIGN).expect("page buffer layout")
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in `zeroed` with the same layout.
        unsafe { alloc::dealloc(self.ptr.as_ptr(), Self::layout(self.len)) }
    }
}

impl Deref for AlignedBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: ptr is valid for len bytes for the life of self.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl DerefMut for AlignedBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: ptr is valid for len bytes, and &mut self is exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_buffers_are_aligned_and_zeroed() {
        let buf = AlignedBuf::zeroed(16384);
        assert_eq!(buf.as_ptr() as usize % IO_ALIGN, 0);
        assert!(buf.iter().all(|&b| b == 0));
    }

    #[test]
    fn os_files_read_back_what_was_written_with_direct_io() {
        let dir = tempfile::tempdir().unwrap();
        let vfs = OsVfs::new(dir.path(), true).unwrap();
        let file = vfs.open("a", true).unwrap();
        let mut page = AlignedBuf::zeroed(4096);
        page[10] = 7;
        file.write_at(&page, 8192).unwrap();
        file.sync_data().unwrap();
        assert_eq!(file.file_len().unwrap(), 12288);
        let mut back = AlignedBuf::zeroed(4096);
        file.read_at(&mut back, 8192).unwrap();
        assert_eq!(back[10], 7);
        assert!(file.read_at(&mut back, 12288).is_err());
        assert_eq!(vfs.list().unwrap(), vec!["a".to_string()]);
        vfs.rename("a", "b").unwrap();
        assert_eq!(vfs.list().unwrap(), vec!["b".to_string()]);
        vfs.remove("b").unwrap();
        assert!(!vfs.exists("b"));
    }
}
