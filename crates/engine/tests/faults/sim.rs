//! A simulated file system for the fault tests: [`SimVfs`] keeps, for each file, what a power
//! loss would leave — its contents as of its last sync — apart from the writes made since, and
//! fails on demand:
//!
//! * **A crash at the n-th write** ([`SimVfs::crash_at_write`]): that write, and every write,
//!   resize, sync, rename or removal after it, fails (the process is gone; reads still answer, so
//!   threads still running see only failing writes). [`SimVfs::crash_image`] is then what the disk
//!   could hold after the power loss: each file's synced contents with each later write (the one
//!   the crash interrupted included) applied whole, in part (a prefix of its 512-byte sectors — a
//!   torn write) or not at all, in order, chosen by a seed. Directory entries created, renamed or
//!   removed since the last `sync_dir` are as before it.
//! * **A full disk** ([`SimVfs::set_capacity`]): a write or resize that would take the files
//!   past the capacity fails with `StorageFull` (ENOSPC) and changes nothing.
//! * **A failing sync** ([`SimVfs::fail_next_syncs`]): `sync_data` of a file whose name starts
//!   with a given prefix fails with an I/O error and, as
//!   Linux does (it marks the pages clean after reporting the error), the writes that sync should
//!   have made durable never will be: a later successful sync does not bring them back.
//!
//! Every write and resize is counted, so a test can crash a workload at each of its write points
//! in turn, until one runs to its end before the crash point.

use std::collections::HashMap;
use std::io;
use std::sync::Arc;

use parking_lot::Mutex;
use rand::{Rng, SeedableRng};
use steady_storage::io::{FileIo, Vfs};

/// Sector size: the unit a torn write keeps or loses.
const SECTOR: usize = 512;

type FileId = usize;

#[derive(Clone)]
enum Pending {
    Write { offset: u64, bytes: Vec<u8> },
    SetLen(u64),
}

#[derive(Clone, Default)]
struct FileData {
    /// What reads see.
    current: Vec<u8>,
    /// What survives a power loss for certain.
    durable: Vec<u8>,
    /// Changes since the last sync, in order: each may or may not survive.
    pending: Vec<Pending>,
}

#[derive(Default)]
struct State {
    files: Vec<FileData>,
    names: HashMap<String, FileId>,
    /// The directory as of its last sync.
    durable_names: HashMap<String, FileId>,
    writes: u64,
    crash_at: Option<u64>,
    crashed: bool,
    capacity: Option<u64>,
    /// Syncs of files whose names start with `.0` to fail, and how many.
    failing_syncs: Option<(String, u32)>,
}

/// See the module doc. Clones share one file system.
#[derive(Clone, Default)]
pub struct SimVfs {
    state: Arc<Mutex<State>>,
}

struct SimFile {
    state: Arc<Mutex<State>>,
    id: FileId,
}

fn crashed() -> io::Error {
    io::Error::other("simulated crash: the process is gone")
}

fn disk_full() -> io::Error {
    io::Error::new(
        io::ErrorKind::StorageFull,
        "No space left on device (simulated)",
    )
}

impl SimVfs {
    pub fn new() -> Self {
        Self::default()
    }

    /// Crashes at the `n`-th write or resize from the start (1-based).
    pub fn crash_at_write(&self, n: u64) {
        self.state.lock().crash_at = Some(n);
    }

    /// Whether the crash has happened.
    pub fn has_crashed(&self) -> bool {
        self.state.lock().crashed
    }

    /// Limits the files' total length to `bytes` (None: unlimited).
    pub fn set_capacity(&self, bytes: Option<u64>) {
        self.state.lock().capacity = bytes;
    }

    /// The files' total length.
    pub fn used(&self) -> u64 {
        let state = self.state.lock();
        used(&state)
    }

    /// Makes the next `n` syncs of files whose names start with `prefix` fail.
    pub fn fail_next_syncs(&self, prefix: &str, n: u32) {
        self.state.lock().failing_syncs = Some((prefix.to_owned(), n));
    }

    /// What the disk may hold after a power loss now (see the module doc), as a new file system
    /// without faults, its every file synced.
    pub fn crash_image(&self, seed: u64) -> SimVfs {
        let state = self.state.lock();
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let mut image = State::default();
        let mut names: Vec<(&String, &FileId)> = state.durable_names.iter().collect();
        names.sort();
        for (name, &id) in names {
            let file = &state.files[id];
            let mut data = file.durable.clone();
            for change in &file.pending {
                survive(&mut data, change, &mut rng);
            }
            let id = image.files.len();
            image.files.push(FileData {
                current: data.clone(),
                durable: data,
                pending: Vec::new(),
            });
            image.names.insert(name.clone(), id);
        }
        image.durable_names = image.names.clone();
        SimVfs {
            state: Arc::new(Mutex::new(image)),
        }
    }
}

fn used(state: &State) -> u64 {
    let live = state.names.values().chain(state.durable_names.values());
    let mut ids: Vec<FileId> = live.copied().collect();
    ids.sort_unstable();
    ids.dedup();
    ids.iter()
        .map(|&id| state.files[id].current.len() as u64)
        .sum()
}

/// Applies `change` to `data` whole, in part or not at all, as a power loss may leave it.
fn survive(data: &mut Vec<u8>, change: &Pending, rng: &mut rand::rngs::StdRng) {
    match change {
        Pending::SetLen(len) => {
            if rng.gen_bool(0.5) {
                data.resize(*len as usize, 0);
            }
        }
        Pending::Write { offset, bytes } => {
            let sectors = bytes.len().div_ceil(SECTOR);
            let kept = match rng.gen_range(0..4) {
                0 => 0,
                1 => rng.gen_range(0..=sectors),
                _ => sectors,
            };
            let kept = (kept * SECTOR).min(bytes.len());
            if kept > 0 {
                apply_write(data, *offset, &bytes[..kept]);
            }
        }
    }
}

fn apply_write(data: &mut Vec<u8>, offset: u64, bytes: &[u8]) {
    let start = offset as usize;
    let end = start + bytes.len();
    if end > data.len() {
        data.resize(end, 0);
    }
    data[start..end].copy_from_slice(bytes);
}

impl State {
    /// Counts a write or resize of a file growing by `growth` bytes: fails it if it is the crash
    /// point (the change is then left pending, as in flight), comes after it, or would pass the
    /// capacity. Returns whether the caller should apply it.
    fn admit(&mut self, growth: u64) -> io::Result<bool> {
        if self.crashed {
            return Err(crashed());
        }
        if let Some(capacity) = self.capacity {
            if growth > 0 && used(self) + growth > capacity {
                return Err(disk_full());
            }
        }
        self.writes += 1;
        if self.crash_at == Some(self.writes) {
            self.crashed = true;
            return Ok(false);
        }
        Ok(true)
    }
}

impl State {
    /// Whether this sync of file `id` is one to fail (and counts it).
    fn sync_fails(&mut self, id: FileId) -> bool {
        let name = self
            .names
            .iter()
            .find(|(_, &file)| file == id)
            .map(|(n, _)| n);
        let Some((prefix, left)) = &mut self.failing_syncs else {
            return false;
        };
        let fails = *left > 0 && name.is_some_and(|n| n.starts_with(prefix.as_str()));
        if fails {
            *left -= 1;
        }
        fails
    }
}

impl FileIo for SimFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<()> {
        let state = self.state.lock();
        let data = &state.files[self.id].current;
        let start = offset as usize;
        match data.get(start..start + buf.len()) {
            Some(bytes) => {
                buf.copy_from_slice(bytes);
                Ok(())
            }
            None => Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "read past end of file",
            )),
        }
    }

    fn write_at(&self, buf: &[u8], offset: u64) -> io::Result<()> {
        let mut state = self.state.lock();
        let len = state.files[self.id].current.len() as u64;
        let growth = (offset + buf.len() as u64).saturating_sub(len);
        let applied = state.admit(growth)?;
        let file = &mut state.files[self.id];
        file.pending.push(Pending::Write {
            offset,
            bytes: buf.to_vec(),
        });
        if !applied {
            return Err(crashed());
        }
        apply_write(&mut file.current, offset, buf);
        Ok(())
    }

    fn file_len(&self) -> io::Result<u64> {
        Ok(self.state.lock().files[self.id].current.len() as u64)
    }

    fn set_len(&self, len: u64) -> io::Result<()> {
        let mut state = self.state.lock();
        let growth = len.saturating_sub(state.files[self.id].current.len() as u64);
        let applied = state.admit(growth)?;
        let file = &mut state.files[self.id];
        file.pending.push(Pending::SetLen(len));
        if !applied {
            return Err(crashed());
        }
        file.current.resize(len as usize, 0);
        Ok(())
    }

    fn sync_data(&self) -> io::Result<()> {
        let mut state = self.state.lock();
        if state.crashed {
            return Err(crashed());
        }
        let failing = state.sync_fails(self.id);
        let file = &mut state.files[self.id];
        if failing {
            file.pending.clear();
            return Err(io::Error::other(
                "Input/output error (simulated fsync failure)",
            ));
        }
        for change in std::mem::take(&mut file.pending) {
            match change {
                Pending::Write { offset, bytes } => apply_write(&mut file.durable, offset, &bytes),
                Pending::SetLen(len) => file.durable.resize(len as usize, 0),
            }
        }
        Ok(())
    }
}

impl Vfs for SimVfs {
    fn open(&self, name: &str, create: bool) -> io::Result<Arc<dyn FileIo>> {
        let mut state = self.state.lock();
        let id = match state.names.get(name) {
            Some(&id) => id,
            None if create => {
                if state.crashed {
                    return Err(crashed());
                }
                let id = state.files.len();
                state.files.push(FileData::default());
                state.names.insert(name.to_owned(), id);
                id
            }
            None => return Err(io::Error::new(io::ErrorKind::NotFound, name.to_owned())),
        };
        Ok(Arc::new(SimFile {
            state: Arc::clone(&self.state),
            id,
        }))
    }

    fn remove(&self, name: &str) -> io::Result<()> {
        let mut state = self.state.lock();
        if state.crashed {
            return Err(crashed());
        }
        match state.names.remove(name) {
            Some(_) => Ok(()),
            None => Err(io::Error::new(io::ErrorKind::NotFound, name.to_owned())),
        }
    }

    fn rename(&self, from: &str, to: &str) -> io::Result<()> {
        let mut state = self.state.lock();
        if state.crashed {
            return Err(crashed());
        }
        let id = state
            .names
            .remove(from)
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, from.to_owned()))?;
        state.names.insert(to.to_owned(), id);
        Ok(())
    }

    fn exists(&self, name: &str) -> bool {
        self.state.lock().names.contains_key(name)
    }

    fn list(&self) -> io::Result<Vec<String>> {
        let mut names: Vec<String> = self.state.lock().names.keys().cloned().collect();
        names.sort();
        Ok(names)
    }

    fn sync_dir(&self) -> io::Result<()> {
        let mut state = self.state.lock();
        if state.crashed {
            return Err(crashed());
        }
        state.durable_names = state.names.clone();
        Ok(())
    }
}
