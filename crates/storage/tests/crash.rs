//! Crash test with real processes: a child runs a random B+tree workload and prints the id of every
//! operation whose mini-transaction is durable; the parent SIGKILLs it at a random moment, reopens
//! the directory (recovery), and requires every acknowledged change to be present, nothing
//! half-applied (the one unacknowledged operation is either wholly there or wholly absent), and the
//! offline check to be clean. The directory carries over from cycle to cycle, so recovery also runs on
//! recovered data. `STEADY_CRASH_CYCLES` sets the number of cycles (default 50).

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::ops::Bound;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use rand::{rngs::StdRng, Rng, SeedableRng};
use steady_storage::btree::BTree;
use steady_storage::io::OsVfs;
use steady_storage::store::{Store, StoreConfig};

const CHILD_ENV: &str = "STEADY_CRASH_CHILD_DIR";
const SEED_ENV: &str = "STEADY_CRASH_CHILD_SEED";
const INDEX: u64 = 1;

#[derive(Debug, Clone)]
enum Op {
    Put(Vec<u8>, Vec<u8>),
    Delete(Vec<u8>),
}

/// The deterministic operation sequence of one cycle.
fn operations(seed: u64) -> impl Iterator<Item = Op> {
    let mut rng = StdRng::seed_from_u64(seed);
    std::iter::from_fn(move || {
        let key = format!("key{:05}", rng.gen_range(0..3000)).into_bytes();
        Some(if rng.gen_bool(0.25) {
            Op::Delete(key)
        } else {
            let len = if rng.gen_bool(0.05) {
                rng.gen_range(5000..20000)
            } else {
                rng.gen_range(0..200)
            };
            let fill = rng.gen::<u8>();
            Op::Put(key, vec![fill; len])
        })
    })
}

fn apply(model: &mut BTreeMap<Vec<u8>, Vec<u8>>, op: &Op) {
    match op {
        Op::Put(k, v) => {
            model.insert(k.clone(), v.clone());
        }
        Op::Delete(k) => {
            model.remove(k);
        }
    }
}

fn config() -> StoreConfig {
    StoreConfig {
        page_size: 4096,
        buffer_pool_bytes: 256 * 4096,
        log_capacity: 16 << 20,
        ..Default::default()
    }
}

fn open_tree(store: &Store) -> BTree {
    let space = store
        .space(1)
        .unwrap_or_else(|| store.create_space().unwrap());
    if space.trees().iter().any(|t| t.index_id == INDEX) {
        BTree::open(store.pool().clone(), space, INDEX).unwrap()
    } else {
        let tree = BTree::create(store.pool().clone(), space, INDEX).unwrap();
        store.sync_log().unwrap();
        tree
    }
}

/// The child: runs operations until killed, acknowledging each once it is durable.
#[test]
#[ignore = "run only as the child process of crash_kill_recover_cycles"]
fn crash_child() {
    let dir = std::env::var(CHILD_ENV).expect("child needs a directory");
    let seed: u64 = std::env::var(SEED_ENV).unwrap().parse().unwrap();
    let store = Store::open_dir(Path::new(&dir), &config()).unwrap();
    let tree = open_tree(&store);
    let mut out = std::io::stdout().lock();
    writeln!(out, "ready").unwrap();
    out.flush().unwrap();
    for (id, op) in operations(seed).enumerate() {
        match &op {
            Op::Put(k, v) => drop(tree.insert(k, v).unwrap()),
            Op::Delete(k) => drop(tree.delete(k).unwrap()),
        }
        store.sync_log().unwrap();
        writeln!(out, "{id}").unwrap();
        out.flush().unwrap();
    }
}

fn content(tree: &BTree) -> BTreeMap<Vec<u8>, Vec<u8>> {
    tree.range(Bound::Unbounded, Bound::Unbounded)
        .map(|e| e.unwrap())
        .collect()
}

#[test]
fn crash_kill_recover_cycles() {
    let cycles: u64 = std::env::var("STEADY_CRASH_CYCLES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(50);
    let dir = tempfile::tempdir().unwrap();
    let mut model = BTreeMap::new();
    let mut rng = StdRng::seed_from_u64(2026);
    for cycle in 0..cycles {
        let acknowledged = run_child_until_killed(dir.path(), cycle, rng.gen_range(20..400));
        let ops: Vec<Op> = operations(cycle).take(acknowledged + 1).collect();
        for op in &ops[..acknowledged] {
            apply(&mut model, op);
        }
        let store = Store::open_dir(dir.path(), &config()).unwrap();
        let tree = open_tree(&store);
        let found = content(&tree);
        if found != model {
            let mut with_pending = model.clone();
            apply(&mut with_pending, &ops[acknowledged]);
            assert!(
                found == with_pending,
                "cycle {cycle}: after {acknowledged} acknowledged operations the tree holds neither \
                 the acknowledged state nor it plus the one operation in flight"
            );
            model = with_pending;
        }
        let verified = tree.verify().unwrap();
        assert!(
            verified.problems.is_empty(),
            "cycle {cycle}: {:?}",
            verified.problems
        );
        drop(tree);
        store.close().unwrap();
        let report = steady_storage::check::check_directory(
            &OsVfs::new(dir.path(), false).unwrap(),
            &mut |_| {},
        )
        .unwrap();
        assert!(
            report.problems.is_empty(),
            "cycle {cycle}: {:?}",
            report.problems
        );
    }
}

/// Starts the child, lets it run for `millis` after it is ready, SIGKILLs it, and returns how many
/// operations it acknowledged.
fn run_child_until_killed(dir: &Path, seed: u64, millis: u64) -> usize {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "crash_child",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, dir)
        .env(SEED_ENV, seed.to_string())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (ready_tx, ready_rx) = mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut acknowledged = 0;
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if line.ends_with("ready") {
                let _ = ready_tx.send(());
            } else if let Ok(id) = line.trim().parse::<usize>() {
                acknowledged = id + 1;
            }
        }
        acknowledged
    });
    let ready = ready_rx.recv_timeout(Duration::from_secs(60));
    std::thread::sleep(Duration::from_millis(millis));
    child.kill().unwrap();
    child.wait().unwrap();
    let acknowledged = reader.join().unwrap();
    assert!(ready.is_ok(), "the child never became ready");
    acknowledged
}

const BUILD_CHILD_ENV: &str = "STEADY_BUILD_CHILD_DIR";
const SMALL_INDEX: u64 = 1;
const BUILT_INDEX: u64 = 2;
const BUILD_ENTRIES: u32 = 2_000_000;

fn build_entry(i: u32) -> (Vec<u8>, Vec<u8>) {
    (i.to_be_bytes().to_vec(), vec![(i % 251) as u8; 40])
}

/// The child of the bulk-build crash test: a small tree made durable, then a long bulk build.
#[test]
#[ignore = "run only as the child process of a_crash_during_a_bulk_build_leaves_no_trace"]
fn build_child() {
    let dir = std::env::var(BUILD_CHILD_ENV).expect("child needs a directory");
    let store = Store::open_dir(Path::new(&dir), &config()).unwrap();
    let space = store.create_space().unwrap();
    let small = BTree::create(store.pool().clone(), space.clone(), SMALL_INDEX).unwrap();
    for i in 0..500u32 {
        small.insert(&i.to_be_bytes(), b"small").unwrap();
    }
    store.sync_log().unwrap();
    let mut out = std::io::stdout().lock();
    writeln!(out, "ready").unwrap();
    out.flush().unwrap();
    let entries = (0..BUILD_ENTRIES).map(|i| Ok(build_entry(i)));
    BTree::bulk_build(
        store.pool().clone(),
        space,
        BUILT_INDEX,
        entries,
        &mut |_| {},
    )
    .unwrap();
    store.sync_log().unwrap();
    writeln!(out, "built").unwrap();
    out.flush().unwrap();
}

/// A bulk build killed at a random moment leaves the database as if it had never started: the other
/// tree is intact, the built index is absent (or, if the build finished, complete), and the offline
/// check finds no leaked page.
#[test]
fn a_crash_during_a_bulk_build_leaves_no_trace() {
    let mut rng = StdRng::seed_from_u64(1);
    let mut interrupted = 0;
    for cycle in 0..6 {
        let dir = tempfile::tempdir().unwrap();
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "build_child",
                "--exact",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(BUILD_CHILD_ENV, dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let ready = lines
            .by_ref()
            .map_while(Result::ok)
            .any(|l| l.ends_with("ready"));
        assert!(ready, "cycle {cycle}: the child never became ready");
        std::thread::sleep(Duration::from_millis(rng.gen_range(10..800)));
        child.kill().unwrap();
        child.wait().unwrap();
        let built = lines.map_while(Result::ok).any(|l| l == "built");

        let store = Store::open_dir(dir.path(), &config()).unwrap();
        let space = store.space(1).unwrap();
        let small = BTree::open(store.pool().clone(), space.clone(), SMALL_INDEX).unwrap();
        assert_eq!(small.range(Bound::Unbounded, Bound::Unbounded).count(), 500);
        let indexes: Vec<u64> = space.trees().iter().map(|t| t.index_id).collect();
        if built {
            let tree = BTree::open(store.pool().clone(), space, BUILT_INDEX).unwrap();
            assert_eq!(
                tree.range(Bound::Unbounded, Bound::Unbounded).count(),
                BUILD_ENTRIES as usize
            );
        } else {
            interrupted += 1;
            assert_eq!(
                indexes,
                vec![SMALL_INDEX],
                "cycle {cycle}: an unfinished build survived"
            );
        }
        drop(small);
        store.close().unwrap();
        let vfs = OsVfs::new(dir.path(), false).unwrap();
        let report = steady_storage::check::check_directory(&vfs, &mut |_| {}).unwrap();
        assert!(
            report.problems.is_empty(),
            "cycle {cycle}: {:?}",
            report.problems
        );
    }
    assert!(
        interrupted > 0,
        "no build was interrupted: make the build longer"
    );
}
