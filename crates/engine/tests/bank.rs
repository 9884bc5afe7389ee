//! The bank test: threads move money between accounts while readers check that every snapshot sees
//! the same total, at READ COMMITTED, REPEATABLE READ and SERIALIZABLE; then a real process doing the
//! same is killed with SIGKILL, and after recovery the total is unchanged, every acknowledged
//! transfer is present and nothing else is (beyond the one transfer each thread had in flight).
//! `STEADY_BANK_SECONDS` sets the run time per level (default 20).

use std::io::{BufRead, BufReader, Write};
use std::ops::Bound;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::{rngs::StdRng, Rng, SeedableRng};
use steady_engine::engine::{Engine, EngineConfig, Isolation, Transaction};
use steady_engine::error::EngineError;
use steady_engine::version::IndexId;
use steady_storage::store::StoreConfig;

const ACCOUNTS: u32 = 50;
const INITIAL: i64 = 1000;
const WRITERS: usize = 4;
const CHILD_ENV: &str = "STEADY_BANK_CHILD_DIR";

fn config() -> EngineConfig {
    EngineConfig {
        store: StoreConfig {
            page_size: 4096,
            buffer_pool_bytes: 1024 * 4096,
            log_capacity: 32 << 20,
            ..Default::default()
        },
        lock_timeout: Some(Duration::from_secs(10)),
        ..Default::default()
    }
}

fn run_seconds() -> f64 {
    std::env::var("STEADY_BANK_SECONDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20.0)
}

fn account(id: u32) -> [u8; 4] {
    id.to_be_bytes()
}

fn balance(row: &[u8]) -> i64 {
    i64::from_le_bytes(row.try_into().expect("a balance is 8 bytes"))
}

fn open_bank(dir: &Path) -> (Arc<Engine>, IndexId) {
    let engine = Engine::open(dir, &config()).unwrap();
    let index = match engine.index_ids().first().copied() {
        Some(index) => index,
        None => {
            let index = engine.create_index().unwrap();
            let mut txn = engine.begin(Isolation::ReadCommitted).unwrap();
            for id in 0..ACCOUNTS {
                txn.insert(index, &account(id), &INITIAL.to_le_bytes())
                    .unwrap();
            }
            txn.commit().unwrap();
            index
        }
    };
    (engine, index)
}

fn total(txn: &mut Transaction, index: IndexId) -> Result<i64, EngineError> {
    let mut sum = 0;
    for row in txn.scan(index, Bound::Unbounded, Bound::Unbounded)? {
        sum += balance(&row?.1);
    }
    Ok(sum)
}

/// Moves `amount` from one account to another; the caller retries on a retryable error.
fn transfer(
    engine: &Arc<Engine>,
    index: IndexId,
    isolation: Isolation,
    from: u32,
    to: u32,
    amount: i64,
) -> Result<(), EngineError> {
    let mut txn = engine.begin(isolation)?;
    let mut balances = [0i64; 2];
    for (slot, id) in [from, to].into_iter().enumerate() {
        let row = match isolation {
            Isolation::ReadCommitted => txn.lock_row(index, &account(id))?,
            _ => txn.get(index, &account(id))?,
        };
        balances[slot] = balance(&row.expect("accounts are never deleted"));
    }
    txn.update(index, &account(from), &(balances[0] - amount).to_le_bytes())?;
    txn.update(index, &account(to), &(balances[1] + amount).to_le_bytes())?;
    txn.commit()
}

fn retryable(err: &EngineError) -> bool {
    matches!(err.sqlstate(), "40001" | "40P01")
}

fn random_transfer(rng: &mut StdRng) -> (u32, u32, i64) {
    let from = rng.gen_range(0..ACCOUNTS);
    let to = (from + rng.gen_range(1..ACCOUNTS)) % ACCOUNTS;
    (from, to, rng.gen_range(1..50))
}

fn bank_run(isolation: Isolation) {
    let dir = tempfile::tempdir().unwrap();
    let (engine, index) = open_bank(dir.path());
    let stop = AtomicBool::new(false);
    let (commits, retries, checks) = (AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0));
    std::thread::scope(|scope| {
        for seed in 0..WRITERS as u64 {
            let (engine, stop, commits, retries) = (&engine, &stop, &commits, &retries);
            scope.spawn(move || {
                let mut rng = StdRng::seed_from_u64(seed);
                while !stop.load(Ordering::Relaxed) {
                    let (from, to, amount) = random_transfer(&mut rng);
                    match transfer(engine, index, isolation, from, to, amount) {
                        Ok(()) => commits.fetch_add(1, Ordering::Relaxed),
                        Err(err) if retryable(&err) => retries.fetch_add(1, Ordering::Relaxed),
                        Err(err) => panic!("transfer failed: {err}"),
                    };
                }
            });
        }
        let (engine, stop, checks) = (&engine, &stop, &checks);
        scope.spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                let mut txn = engine.begin(isolation).unwrap();
                let sum = match total(&mut txn, index) {
                    Err(err) if retryable(&err) => continue,
                    sum => sum.unwrap(),
                };
                assert_eq!(
                    sum,
                    INITIAL * ACCOUNTS as i64,
                    "a snapshot saw money appear or vanish"
                );
                match txn.commit() {
                    Err(err) if retryable(&err) => continue,
                    committed => committed.unwrap(),
                }
                checks.fetch_add(1, Ordering::Relaxed);
            }
        });
        std::thread::sleep(Duration::from_secs_f64(run_seconds()));
        stop.store(true, Ordering::Relaxed);
    });
    let commits = commits.load(Ordering::Relaxed);
    eprintln!(
        "{isolation:?}: {commits} transfers, {} retries, {} total checks",
        retries.load(Ordering::Relaxed),
        checks.load(Ordering::Relaxed)
    );
    assert!(commits > 100, "too few transfers committed: {commits}");
    assert!(checks.load(Ordering::Relaxed) > 10);
    let mut txn = engine.begin(Isolation::RepeatableRead).unwrap();
    assert_eq!(total(&mut txn, index).unwrap(), INITIAL * ACCOUNTS as i64);
    drop(txn);
    engine.close().unwrap();
}

#[test]
fn bank_read_committed() {
    bank_run(Isolation::ReadCommitted);
}

#[test]
fn bank_repeatable_read() {
    bank_run(Isolation::RepeatableRead);
}

#[test]
fn bank_serializable() {
    bank_run(Isolation::Serializable);
}

/// The child of the crash test: transfers until killed, printing `thread from to amount` for each
/// transfer once its commit returned (durable).
#[test]
#[ignore = "run only as the child process of bank_survives_sigkill"]
fn bank_child() {
    let dir = std::env::var(CHILD_ENV).expect("child needs a directory");
    let (engine, index) = open_bank(Path::new(&dir));
    let out = std::sync::Mutex::new(std::io::stdout());
    writeln!(out.lock().unwrap(), "ready").unwrap();
    std::thread::scope(|scope| {
        for thread in 0..WRITERS as u64 {
            let (engine, out) = (&engine, &out);
            scope.spawn(move || {
                let mut rng = StdRng::seed_from_u64(thread + 100);
                loop {
                    let (from, to, amount) = random_transfer(&mut rng);
                    writeln!(out.lock().unwrap(), "try {thread} {from} {to} {amount}").unwrap();
                    match transfer(engine, index, Isolation::RepeatableRead, from, to, amount) {
                        Ok(()) => writeln!(out.lock().unwrap(), "ok {thread}").unwrap(),
                        Err(err) if retryable(&err) => {
                            writeln!(out.lock().unwrap(), "retry {thread}").unwrap()
                        }
                        Err(err) => panic!("transfer failed: {err}"),
                    }
                }
            });
        }
    });
}

#[test]
fn bank_survives_sigkill() {
    let dir = tempfile::tempdir().unwrap();
    let mut expected = vec![INITIAL; ACCOUNTS as usize];
    let mut rng = StdRng::seed_from_u64(5);
    for cycle in 0..5 {
        let in_flight = run_child(dir.path(), rng.gen_range(200..1500), &mut expected);
        let (engine, index) = open_bank(dir.path());
        let mut txn = engine.begin(Isolation::RepeatableRead).unwrap();
        let found: Vec<i64> = txn
            .scan(index, Bound::Unbounded, Bound::Unbounded)
            .unwrap()
            .map(|row| balance(&row.unwrap().1))
            .collect();
        drop(txn);
        assert_eq!(
            found.iter().sum::<i64>(),
            INITIAL * ACCOUNTS as i64,
            "cycle {cycle}"
        );
        expected = explained_by(&expected, &in_flight, &found).unwrap_or_else(|| {
            panic!("cycle {cycle}: balances are not the acknowledged transfers plus in-flight ones")
        });
        engine.close().unwrap();
    }
}

/// The balances after the acknowledged transfers plus some subset of the in-flight ones, if `found`
/// is one of them.
fn explained_by(
    acknowledged: &[i64],
    in_flight: &[(u32, u32, i64)],
    found: &[i64],
) -> Option<Vec<i64>> {
    (0..1u32 << in_flight.len()).find_map(|subset| {
        let mut balances = acknowledged.to_vec();
        for (i, &(from, to, amount)) in in_flight.iter().enumerate() {
            if subset & (1 << i) != 0 {
                balances[from as usize] -= amount;
                balances[to as usize] += amount;
            }
        }
        (balances == found).then_some(balances)
    })
}

/// How long the child may take to open the bank and print "ready".
const CHILD_READY_TIMEOUT: Duration = Duration::from_secs(120);

/// Runs the child for `millis` after it is ready, SIGKILLs it, applies the acknowledged transfers to
/// `expected`, and returns the transfers that were in flight. The run is timed from the child's
/// "ready" line, however long the child takes to open (a loaded machine).
fn run_child(dir: &Path, millis: u64, expected: &mut [i64]) -> Vec<(u32, u32, i64)> {
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([
            "bank_child",
            "--exact",
            "--ignored",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if sender.send(line).is_err() {
                return;
            }
        }
    });
    let mut lines = Vec::new();
    let started = Instant::now();
    while !lines.last().is_some_and(|l: &String| l.ends_with("ready")) {
        match receiver.recv_timeout(CHILD_READY_TIMEOUT) {
            Ok(line) => lines.push(line),
            Err(err) => {
                let _ = child.kill();
                panic!(
                    "the child never became ready ({err}, {:?})",
                    started.elapsed()
                );
            }
        }
    }
    std::thread::sleep(Duration::from_millis(millis));
    child.kill().unwrap();
    child.wait().unwrap();
    lines.extend(receiver.iter());
    let mut pending: Vec<Option<(u32, u32, i64)>> = vec![None; WRITERS];
    for line in lines {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["try", thread, from, to, amount] => {
                pending[thread.parse::<usize>().unwrap()] = Some((
                    from.parse().unwrap(),
                    to.parse().unwrap(),
                    amount.parse().unwrap(),
                ));
            }
            ["ok", thread] => {
                let (from, to, amount) = pending[thread.parse::<usize>().unwrap()].take().unwrap();
                expected[from as usize] -= amount;
                expected[to as usize] += amount;
            }
            ["retry", thread] => pending[thread.parse::<usize>().unwrap()] = None,
            _ => {}
        }
    }
    pending.into_iter().flatten().collect()
}
