use super::*;
use std::sync::atomic::AtomicBool;
use std::sync::{mpsc, Barrier};
use std::thread::{self, JoinHandle};

use LockMode::{Exclusive, Shared};

/// A bound on every wait that should end, so a bug fails a test instead of hanging it.
const LONG: Option<Duration> = Some(Duration::from_secs(10));

fn key(k: u8) -> LockKey {
    LockKey::new(1, vec![k])
}

fn spawn_lock(
    lm: &Arc<LockManager>,
    txn: TxnId,
    key: LockKey,
    mode: LockMode,
    timeout: Option<Duration>,
) -> JoinHandle<Result<(), LockError>> {
    let lm = Arc::clone(lm);
    thread::spawn(move || lm.lock(txn, key, mode, timeout))
}

/// Polls (test side only) until `txn` waits for exactly `blockers`.
fn wait_blocked(lm: &LockManager, txn: TxnId, blockers: &[TxnId]) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while lm.waiting_for(txn).as_deref() != Some(blockers) {
        assert!(
            Instant::now() < deadline,
            "txn {txn} never waited for {blockers:?}"
        );
        thread::sleep(Duration::from_millis(1));
    }
}

fn assert_clean(lm: &LockManager) {
    assert!(lm.shards.iter().all(|s| s.lock().is_empty()), "lock table");
    assert!(lm.txns.iter().all(|s| s.lock().is_empty()), "txn table");
    assert!(lm.waits.lock().is_empty(), "waits-for view");
    assert!(lm.interrupted.lock().is_empty(), "interrupts");
    assert_eq!(lm.stats().locks_held, 0);
}

#[test]
fn shared_locks_are_compatible() {
    let lm = LockManager::new();
    lm.lock(1, key(0), Shared, Some(Duration::ZERO)).unwrap();
    lm.lock(2, key(0), Shared, Some(Duration::ZERO)).unwrap();
    assert_eq!(lm.holds(1, &key(0)), Some(Shared));
    assert_eq!(lm.holds(2, &key(0)), Some(Shared));
    assert_eq!(lm.holds(3, &key(0)), None);
    assert_eq!(lm.stats().locks_held, 2);
    assert_eq!(
        lm.lock(3, key(0), Exclusive, Some(Duration::ZERO)),
        Err(LockError::Timeout)
    );
    lm.release_all(1);
    lm.release_all(2);
    assert_clean(&lm);
    assert_eq!(lm.stats().lock_waits, 0);
}

#[test]
fn exclusive_waits_until_release() {
    let lm = Arc::new(LockManager::new());
    lm.lock(1, key(0), Exclusive, None).unwrap();
    let t2 = spawn_lock(&lm, 2, key(0), Exclusive, LONG);
    wait_blocked(&lm, 2, &[1]);
    assert_eq!(lm.holds(2, &key(0)), None);
    lm.release_all(1);
    t2.join().unwrap().unwrap();
    assert_eq!(lm.holds(2, &key(0)), Some(Exclusive));
    assert_eq!(lm.waiting_for(2), None);
    lm.release_all(2);
    assert_clean(&lm);
    assert_eq!(lm.stats().lock_waits, 1);
}

#[test]
fn exclusive_waiter_is_not_starved_by_later_shared_requests() {
    let lm = Arc::new(LockManager::new());
    lm.lock(1, key(0), Shared, None).unwrap();
    let t2 = spawn_lock(&lm, 2, key(0), Exclusive, LONG);
    wait_blocked(&lm, 2, &[1]);
    let t3 = spawn_lock(&lm, 3, key(0), Shared, LONG);
    wait_blocked(&lm, 3, &[2]);
    lm.release_all(1);
    t2.join().unwrap().unwrap();
    assert_eq!(lm.waiting_for(3), Some(vec![2]));
    lm.release_all(2);
    t3.join().unwrap().unwrap();
    lm.release_all(3);
    assert_clean(&lm);
}

#[test]
fn upgrade_and_reacquire() {
    let lm = Arc::new(LockManager::new());
    // A sole holder upgrades at once; re-acquiring a weaker mode returns at once.
    lm.lock(1, key(0), Shared, Some(Duration::ZERO)).unwrap();
    lm.lock(1, key(0), Exclusive, Some(Duration::ZERO)).unwrap();
    lm.lock(1, key(0), Shared, Some(Duration::ZERO)).unwrap();
    assert_eq!(lm.holds(1, &key(0)), Some(Exclusive));
    assert_eq!(lm.stats().locks_held, 1);
    // With another reader, the upgrade waits, ahead of an earlier queued writer.
    lm.lock(1, key(1), Shared, None).unwrap();
    lm.lock(2, key(1), Shared, None).unwrap();
    let t3 = spawn_lock(&lm, 3, key(1), Exclusive, LONG);
    wait_blocked(&lm, 3, &[1, 2]);
    let t1 = spawn_lock(&lm, 1, key(1), Exclusive, LONG);
    wait_blocked(&lm, 1, &[2]);
    wait_blocked(&lm, 3, &[1, 2]);
    lm.release_all(2);
    t1.join().unwrap().unwrap();
    assert_eq!(lm.holds(1, &key(1)), Some(Exclusive));
    assert_eq!(lm.stats().locks_held, 2);
    lm.release_all(1);
    t3.join().unwrap().unwrap();
    lm.release_all(3);
    assert_clean(&lm);
    assert_eq!(lm.stats().deadlocks, 0);
}

#[test]
fn two_upgraders_deadlock() {
    let lm = Arc::new(LockManager::new());
    lm.lock(1, key(0), Shared, None).unwrap();
    lm.lock(2, key(0), Shared, None).unwrap();
    let t1 = spawn_lock(&lm, 1, key(0), Exclusive, LONG);
    wait_blocked(&lm, 1, &[2]);
    let err = lm.lock(2, key(0), Exclusive, LONG).unwrap_err();
    assert_eq!(err.sqlstate(), "40P01");
    assert_eq!(lm.holds(2, &key(0)), Some(Shared));
    lm.release_all(2);
    t1.join().unwrap().unwrap();
    lm.release_all(1);
    assert_clean(&lm);
}

/// Transaction i+1 takes key i, then (after all have) key i+1 mod n: a cycle of n.
fn run_cycle(n: u8) -> (Vec<Result<(), LockError>>, LockStats) {
    let lm = Arc::new(LockManager::new());
    let barrier = Arc::new(Barrier::new(n.into()));
    let threads: Vec<_> = (0..n)
        .map(|i| {
            let (lm, barrier) = (Arc::clone(&lm), Arc::clone(&barrier));
            thread::spawn(move || {
                let txn = TxnId::from(i) + 1;
                lm.lock(txn, key(i), Exclusive, None).unwrap();
                barrier.wait();
                let result = lm.lock(txn, key((i + 1) % n), Exclusive, LONG);
                lm.release_all(txn);
                result
            })
        })
        .collect();
    let results = threads.into_iter().map(|t| t.join().unwrap()).collect();
    assert_clean(&lm);
    (results, lm.stats())
}

fn check_one_victim(n: u8) {
    let (results, stats) = run_cycle(n);
    let victims: Vec<_> = results.iter().filter_map(|r| r.clone().err()).collect();
    assert_eq!(victims.len(), 1, "{results:?}");
    let LockError::Deadlock { cycle, .. } = &victims[0] else {
        panic!("{victims:?}");
    };
    assert_eq!(victims[0].sqlstate(), "40P01");
    let mut members = cycle.clone();
    members.sort_unstable();
    assert_eq!(members, (1..=TxnId::from(n)).collect::<Vec<_>>());
    let detail = victims[0].detail().unwrap();
    for txn in 1..=n {
        assert!(
            detail.contains(&format!("Transaction {txn} waits")),
            "{detail}"
        );
    }
    assert_eq!(stats.deadlocks, 1);
    assert_eq!(stats.timeouts, 0);
}

#[test]
fn two_transaction_deadlock_has_one_victim() {
    for _ in 0..20 {
        check_one_victim(2);
    }
}

#[test]
fn three_transaction_cycle_has_one_victim() {
    for _ in 0..20 {
        check_one_victim(3);
    }
}

#[test]
fn timeout_leaves_no_trace_and_unblocks_waiters_behind() {
    let lm = Arc::new(LockManager::new());
    lm.lock(1, key(0), Shared, None).unwrap();
    let start = Instant::now();
    let t2 = spawn_lock(&lm, 2, key(0), Exclusive, Some(Duration::from_millis(100)));
    wait_blocked(&lm, 2, &[1]);
    let t3 = spawn_lock(&lm, 3, key(0), Shared, LONG);
    wait_blocked(&lm, 3, &[2]);
    let err = t2.join().unwrap().unwrap_err();
    assert!(start.elapsed() >= Duration::from_millis(100));
    assert_eq!(
        (err.sqlstate(), err.to_string().as_str()),
        ("55P03", "canceling statement due to lock timeout")
    );
    t3.join().unwrap().unwrap();
    assert_eq!(lm.holds(1, &key(0)), Some(Shared));
    assert_eq!(lm.waiting_for(2), None);
    assert_eq!(lm.holds(2, &key(0)), None);
    lm.release_all(1);
    lm.release_all(2);
    lm.release_all(3);
    assert_clean(&lm);
    assert_eq!(lm.stats().timeouts, 1);
}

#[test]
fn cancel_ends_the_current_wait() {
    let lm = Arc::new(LockManager::new());
    assert!(!lm.cancel(2));
    lm.lock(1, key(0), Exclusive, None).unwrap();
    let t2 = spawn_lock(&lm, 2, key(0), Exclusive, None);
    wait_blocked(&lm, 2, &[1]);
    assert!(lm.cancel(2));
    let err = t2.join().unwrap().unwrap_err();
    assert_eq!(err, LockError::Cancelled);
    assert_eq!(err.sqlstate(), "57014");
    assert!(!lm.cancel(2));
    assert_eq!(lm.waiting_for(2), None);
    lm.release_all(1);
    lm.release_all(2);
    assert_clean(&lm);
}

#[test]
fn an_interrupt_before_a_wait_ends_that_wait_at_once_until_forgotten() {
    let lm = Arc::new(LockManager::new());
    lm.lock(1, key(0), Exclusive, None).unwrap();
    lm.interrupt(2);
    // A grant needs no wait: the interrupt stays for the next wait.
    lm.lock(2, key(1), Exclusive, None).unwrap();
    assert_eq!(
        lm.lock(2, key(0), Exclusive, None),
        Err(LockError::Cancelled)
    );
    assert_eq!(lm.waiting_for(2), None);
    // Used up: the next wait waits, and a plain interrupt ends it.
    let t2 = spawn_lock(&lm, 2, key(0), Exclusive, None);
    wait_blocked(&lm, 2, &[1]);
    lm.interrupt(2);
    assert_eq!(t2.join().unwrap().unwrap_err(), LockError::Cancelled);
    // Forgotten (the statement ended) or released with the transaction: a wait runs its course.
    lm.interrupt(2);
    lm.forget_interrupt(2);
    lm.interrupt(3);
    lm.release_all(3);
    assert_eq!(
        lm.lock(2, key(0), Exclusive, Some(Duration::from_millis(20))),
        Err(LockError::Timeout)
    );
    assert_eq!(
        lm.lock(3, key(0), Exclusive, Some(Duration::from_millis(20))),
        Err(LockError::Timeout)
    );
    lm.release_all(1);
    lm.release_all(2);
    lm.release_all(3);
    assert_clean(&lm);
}

/// xorshift64*: enough randomness for the hammer, no dependency.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) % n
    }
}

/// The holders as the test threads saw them: added after a grant, removed before release.
#[derive(Default)]
struct Tracker {
    holders: Mutex<HashMap<LockKey, Vec<(TxnId, LockMode)>>>,
    violations: AtomicUsize,
}

impl Tracker {
    fn acquired(&self, txn: TxnId, key: &LockKey, mode: LockMode) {
        let mut holders = self.holders.lock();
        let list = holders.entry(key.clone()).or_default();
        if list.iter().any(|&(t, m)| t != txn && !m.compatible(mode)) {
            self.violations.fetch_add(1, Relaxed);
        }
        match list.iter_mut().find(|(t, _)| *t == txn) {
            Some(held) => held.1 = held.1.max(mode),
            None => list.push((txn, mode)),
        }
    }

    fn released(&self, txn: TxnId) {
        for list in self.holders.lock().values_mut() {
            list.retain(|&(t, _)| t != txn);
        }
    }
}

struct Hammer {
    lm: LockManager,
    tracker: Tracker,
    next_txn: AtomicU64,
    stop: AtomicBool,
}

impl Hammer {
    /// One transaction: 1–4 random locks (random key, mode, timeout), then release.
    fn transaction(&self, rng: &mut Rng) -> bool {
        let txn = self.next_txn.fetch_add(1, Relaxed);
        let committed = (0..=rng.below(4)).all(|_| {
            let key = LockKey::new(rng.below(2), vec![rng.below(6) as u8]);
            let mode = if rng.below(3) == 0 { Exclusive } else { Shared };
            let timeout = match rng.below(4) {
                0 => Some(Duration::ZERO),
                1 => None,
                n => Some(Duration::from_millis(n * 5)),
            };
            let granted = self.lm.lock(txn, key.clone(), mode, timeout).is_ok();
            if granted {
                self.tracker.acquired(txn, &key, mode);
                thread::yield_now();
            }
            granted
        });
        self.tracker.released(txn);
        self.lm.release_all(txn);
        committed
    }

    fn worker(&self, seed: u64) -> (u64, u64) {
        let mut rng = Rng(seed);
        let (mut committed, mut aborted) = (0, 0);
        while !self.stop.load(Relaxed) {
            match self.transaction(&mut rng) {
                true => committed += 1,
                false => aborted += 1,
            }
        }
        (committed, aborted)
    }

    fn canceller(&self) -> u64 {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let mut cancelled = 0;
        while !self.stop.load(Relaxed) {
            let txn = self.next_txn.load(Relaxed).saturating_sub(1 + rng.below(8));
            cancelled += u64::from(self.lm.cancel(txn));
            thread::sleep(Duration::from_micros(500));
        }
        cancelled
    }
}

#[test]
fn hammer_random_keys_modes_and_release_order() {
    const THREADS: u64 = 8;
    let hammer = Arc::new(Hammer {
        lm: LockManager::new(),
        tracker: Tracker::default(),
        next_txn: AtomicU64::new(1),
        stop: AtomicBool::new(false),
    });
    let (done, results) = mpsc::channel();
    for seed in 1..=THREADS {
        let (hammer, done) = (Arc::clone(&hammer), done.clone());
        thread::spawn(move || done.send(hammer.worker(seed * 0x1234_5678_9abc_def1)));
    }
    let canceller = {
        let hammer = Arc::clone(&hammer);
        thread::spawn(move || hammer.canceller())
    };
    thread::sleep(Duration::from_secs(2));
    hammer.stop.store(true, Relaxed);
    let (mut committed, mut aborted) = (0, 0);
    for _ in 0..THREADS {
        let (c, a) = results
            .recv_timeout(Duration::from_secs(20))
            .expect("a worker hung or panicked");
        (committed, aborted) = (committed + c, aborted + a);
    }
    let cancelled = canceller.join().unwrap();
    let stats = hammer.lm.stats();
    eprintln!("committed {committed}, aborted {aborted}, cancelled {cancelled}, {stats:?}");
    assert_eq!(hammer.tracker.violations.load(Relaxed), 0);
    assert!(committed > 0 && stats.lock_waits > 0 && stats.deadlocks > 0);
    assert_clean(&hammer.lm);
}
