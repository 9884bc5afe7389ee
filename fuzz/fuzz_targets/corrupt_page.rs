//! A page of a B+tree overwritten on disk with arbitrary bytes under a valid checksum (damage the
//! checksum cannot see): opening the directory, looking keys up, scanning the tree and verifying
//! it give results or clear errors — never a panic.
//!
//! The input's first two bytes choose the page (of those the tree's file holds); the rest is the
//! page's new content, repeated to fill it.
#![no_main]

use std::sync::{Arc, OnceLock};

use libfuzzer_sys::fuzz_target;
use steady_storage::btree::BTree;
use steady_storage::io::{MemVfs, Vfs};
use steady_storage::page::stamp_checksum;
use steady_storage::space::Space;
use steady_storage::store::{Store, StoreConfig};

const PAGE_SIZE: usize = 4096;
const INDEX: u64 = 7;
const KEYS: u32 = 600;

fn config() -> StoreConfig {
    StoreConfig {
        page_size: PAGE_SIZE,
        buffer_pool_bytes: 64 * PAGE_SIZE,
        background_flush: false,
        log_capacity: 16 << 20,
        ..Default::default()
    }
}

fn key(n: u32) -> Vec<u8> {
    format!("key-{n:06}").into_bytes()
}

/// The files of a directory holding one tree of [`KEYS`] keys in space 1, closed cleanly: built
/// once, copied for each input.
fn template() -> &'static [(String, Vec<u8>)] {
    static FILES: OnceLock<Vec<(String, Vec<u8>)>> = OnceLock::new();
    FILES.get_or_init(|| {
        let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
        let store = Store::open(vfs.clone(), &config()).expect("store");
        let space = store.create_space().expect("space");
        let entries = (0..KEYS).map(|n| Ok((key(n), vec![b'v'; (n % 40) as usize])));
        BTree::bulk_build(store.pool().clone(), space, INDEX, entries, &mut |_| {}).expect("tree");
        store.close().expect("close");
        vfs.list()
            .expect("files")
            .into_iter()
            .map(|name| {
                let file = vfs.open(&name, false).expect("file");
                let mut bytes = vec![0u8; file.file_len().expect("length") as usize];
                file.read_at(&mut bytes, 0).expect("read");
                (name, bytes)
            })
            .collect()
    })
}

fn directory() -> Arc<dyn Vfs> {
    let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
    for (name, bytes) in template() {
        let file = vfs.open(name, true).expect("file");
        file.write_at(bytes, 0).expect("write");
    }
    vfs
}

fuzz_target!(|input: &[u8]| {
    let Some((choice, content)) = input.split_first_chunk::<2>() else {
        return;
    };
    if content.is_empty() {
        return;
    }
    let vfs = directory();
    let file = vfs.open(&Space::file_name(1), false).expect("space file");
    let pages = file.file_len().expect("length") / PAGE_SIZE as u64;
    let page_no = u64::from(u16::from_le_bytes(*choice)) % pages;
    let mut page: Vec<u8> = content.iter().copied().cycle().take(PAGE_SIZE).collect();
    stamp_checksum(&mut page);
    file.write_at(&page, page_no * PAGE_SIZE as u64)
        .expect("write");
    let Ok(store) = Store::open(vfs.clone(), &config()) else {
        return;
    };
    let Some(space) = store.space(1) else {
        return;
    };
    let Ok(tree) = BTree::open(store.pool().clone(), space, INDEX) else {
        return;
    };
    for n in (0..KEYS).step_by(37) {
        let _ = tree.get(&key(n));
    }
    for entry in tree.range(std::ops::Bound::Unbounded, std::ops::Bound::Unbounded) {
        if entry.is_err() {
            break;
        }
    }
    let _ = tree.verify();
});
