//! Dropping a space on the real file system (seed 004): `drop_space` only renames the file to the
//! trash name, the reclaimer shrinks and removes it in the background, a drop interrupted in the
//! middle is finished by the next open, and no new space takes the id of a trash file.

use std::path::Path;
use std::time::{Duration, Instant};

use steady_storage::btree::BTree;
use steady_storage::check::check_directory;
use steady_storage::io::{OsVfs, Vfs};
use steady_storage::space::Space;
use steady_storage::store::{Store, StoreConfig};
use steady_storage::SpaceId;

const MIB: u64 = 1 << 20;
const INDEX: u64 = 1;
const IDLE: Duration = Duration::from_secs(30);

/// A reclaimer that cuts one small slice and then waits a minute: trash files stay around.
fn slow_reclaimer() -> StoreConfig {
    StoreConfig {
        reclaim_slice_bytes: 64 << 10,
        reclaim_pause: Duration::from_secs(60),
        ..Default::default()
    }
}

/// Appends `bytes` of real (non-sparse, synced) data to the file of space `id`. The drop never
/// reads the file, so the bytes need not be pages; what matters is that the file system must free
/// them.
fn append_data(store: &Store, id: SpaceId, bytes: u64) {
    let file = store.vfs().open(&Space::file_name(id), false).unwrap();
    let chunk = vec![0xA5u8; MIB as usize];
    let start = file.file_len().unwrap();
    for offset in (start..start + bytes).step_by(MIB as usize) {
        file.write_at(&chunk, offset).unwrap();
    }
    file.sync_data().unwrap();
}

fn trash_files(dir: &Path) -> Vec<String> {
    let vfs = OsVfs::new(dir, false).unwrap();
    let names = vfs.list().unwrap();
    names
        .into_iter()
        .filter(|n| n.ends_with(".dropped"))
        .collect()
}

fn assert_check_clean(dir: &Path, spaces: usize) {
    let vfs = OsVfs::new(dir, false).unwrap();
    let report = check_directory(&vfs, &mut |_| {}).unwrap();
    assert!(report.problems.is_empty(), "{:?}", report.problems);
    assert_eq!(report.spaces, spaces);
}

fn key(i: usize) -> Vec<u8> {
    format!("key{i:06}").into_bytes()
}

/// Fills a new tree in space `id` with `rows` rows of `value_len` bytes.
fn fill_tree(store: &Store, id: SpaceId, rows: usize, value_len: usize) {
    let tree = BTree::create(store.pool().clone(), store.space(id).unwrap(), INDEX).unwrap();
    for i in 0..rows {
        tree.insert(&key(i), &vec![i as u8; value_len]).unwrap();
    }
}

#[test]
fn dropping_a_large_space_returns_at_once_and_the_reclaimer_removes_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_dir(dir.path(), &StoreConfig::default()).unwrap();
    let id = store.create_space().unwrap().id();
    append_data(&store, id, 256 * MIB);

    let started = Instant::now();
    store.drop_space(id).unwrap();
    let elapsed = started.elapsed();
    eprintln!("drop_space of a 257 MiB space returned after {elapsed:?}");
    assert!(elapsed < Duration::from_millis(200), "took {elapsed:?}");
    assert!(store.space(id).is_none());
    assert!(!dir.path().join(Space::file_name(id)).exists());

    assert!(store.wait_reclaimed(IDLE), "reclaimer still busy");
    assert!(trash_files(dir.path()).is_empty());
    let stats = store.reclaim_stats();
    assert_eq!(
        (stats.pending, stats.files_reclaimed, stats.failures),
        (0, 1, 0)
    );
    assert!(stats.bytes_reclaimed >= 256 * MIB, "{stats:?}");
    assert_eq!(
        store.create_space().unwrap().id(),
        id + 1,
        "an id is not reused within a process, even once its trash is gone"
    );
    store.close().unwrap();
    assert_check_clean(dir.path(), 2);
}

#[test]
fn a_drop_interrupted_in_the_middle_is_finished_at_the_next_open() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_dir(dir.path(), &slow_reclaimer()).unwrap();
    let kept = store.create_space().unwrap().id();
    let dropped = store.create_space().unwrap().id();
    fill_tree(&store, kept, 500, 100);
    fill_tree(&store, dropped, 4000, 1000);
    store.sync_log().unwrap();
    let trash = dir
        .path()
        .join(format!("{}.dropped", Space::file_name(dropped)));
    let len_before = std::fs::metadata(dir.path().join(Space::file_name(dropped)))
        .unwrap()
        .len();

    store.drop_space(dropped).unwrap();
    let deadline = Instant::now() + IDLE;
    while store.reclaim_stats().bytes_reclaimed == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    drop(store); // a crash mid-reclaim: no checkpoint, the log holds changes to the dropped space
    let len_after = std::fs::metadata(&trash).unwrap().len();
    assert!(
        0 < len_after && len_after < len_before,
        "{len_after} of {len_before}"
    );

    let store = Store::open_dir(dir.path(), &StoreConfig::default()).unwrap();
    assert!(
        store.space(dropped).is_none(),
        "recovery ignores the trash file"
    );
    assert!(store.wait_reclaimed(IDLE), "reclaimer still busy");
    assert!(!trash.exists());
    assert_eq!(store.reclaim_stats().files_reclaimed, 1);
    let tree = BTree::open(store.pool().clone(), store.space(kept).unwrap(), INDEX).unwrap();
    for i in 0..500 {
        assert_eq!(tree.get(&key(i)).unwrap(), Some(vec![i as u8; 100]));
    }
    store.close().unwrap();
    assert_check_clean(dir.path(), 2);
}

#[test]
fn new_spaces_never_take_the_id_of_a_trash_file() {
    assert_eq!(Space::id_from_file_name("space_000007.sdb.dropped"), None);
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_dir(dir.path(), &slow_reclaimer()).unwrap();
    store.create_space().unwrap();
    let last = store.create_space().unwrap().id();
    store.drop_space(last).unwrap();
    assert_eq!(store.create_space().unwrap().id(), last + 1);
    assert_eq!(store.pending_reclaims(), 1);
    drop(store);

    let by_hand = format!("{}.dropped", Space::file_name(9));
    std::fs::write(dir.path().join(&by_hand), vec![7u8; MIB as usize]).unwrap();
    let store = Store::open_dir(dir.path(), &slow_reclaimer()).unwrap();
    assert_eq!(store.pending_reclaims(), 2);
    assert_eq!(store.create_space().unwrap().id(), 10);
    drop(store);
    assert_eq!(trash_files(dir.path()).len(), 2);

    let store = Store::open_dir(dir.path(), &StoreConfig::default()).unwrap();
    assert!(store.wait_reclaimed(IDLE), "reclaimer still busy");
    assert!(trash_files(dir.path()).is_empty());
    assert_eq!(store.create_space().unwrap().id(), 11);
    store.close().unwrap();
    assert_check_clean(dir.path(), 5);
}
