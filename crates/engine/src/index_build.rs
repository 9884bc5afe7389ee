//! Online index builds: CREATE INDEX (UNIQUE too) while the table's writers go on.
//!
//! PostgreSQL's CREATE INDEX CONCURRENTLY and InnoDB's online row log, fitted to secondary entries
//! that are not versioned ([`crate::table`]): once usable, an index must hold an entry for the
//! newest committed version of every row; any other entry is a stale one that readers skip and
//! purge removes. The build goes in four steps:
//!
//! 1. **Start** (a moment): the build takes the table's lock exclusively — waiting for the
//!    transactions that have written to the table to end — registers a *change log* for the table,
//!    takes a snapshot S, and lets the lock go. From then on every write of a new row version to
//!    the table notes the row's primary key in the log ([`Builds::note`]), so every version that S
//!    does not see is a logged row's.
//! 2. **Build**: the rows S sees are sorted and bulk-built bottom-up into the new tree (fully
//!    logged), with no lock held that a writer takes. A table of more than a few leaves is read
//!    and sorted in parts of its key space, one per core (at most [`MAX_BUILD_THREADS`], as
//!    PostgreSQL's parallel builds), and the sorted parts are merged as the tree is built:
//!    CREATE INDEX on 1,000,000 rows went from 221–330 ms to 158–216 ms on 2 cores.
//! 3. **Catch up**: rounds take the logged keys, read each row's newest version and add its entry
//!    if its writer has committed; a row whose writer has not is left for a later round (an entry
//!    for a version that is then rolled back would never be purged). A UNIQUE index's keys are
//!    checked as they are added, against committed rows.
//! 4. **Switch** (a moment): the table's lock, exclusively until the transaction ends, as any DDL
//!    takes it; the rows still logged (their writers have all ended now) get their entries, and the
//!    index joins the table's definition, usable by snapshots taken from then on
//!    ([`crate::catalog::IndexDef::valid_from`]).
//!
//! Step 2 runs on a thread at a lower CPU priority ([`in_background`]) and lets waiting commits
//! sync before it after each page it writes ([`Engine::pace_build`]): its work is of a fixed
//! size and may take longer on a busy machine. Step 3 does not: its work grows with the
//! writers', so it runs at their priority, unpaced, or it would never catch up with them
//! (measured: ALTER COLUMN TYPE of 1 GiB under sysbench oltp_read_write at 8 threads, a paced
//! catch-up at the build's priority applied about 940 rows a second while the writers logged
//! about 1,330, and its backlog grew from 52,847 rows to 95,023 in 110 seconds). Each step shows in
//! [`Engine::builds_in_progress`] (the `steady_progress` view). VACUUM FULL and ALTER COLUMN
//! ... TYPE ([`crate::rebuild`]) go the same way, copying rows instead of adding entries.
//!
//! **Invariants.**
//! * The build holds the table's DDL lock ([`crate::engine::DDL_LOCKS`]) from start to end, so no
//!   other DDL changes the table meanwhile; writers never take it.
//! * S stays open until the switch, so purge removes no version that S does not see before the
//!   index is in the definition: an entry added in a catch-up round for a version overwritten later
//!   is removed by purge, which by then knows the index, when it removes that version.
//! * A transaction that has written to the table before its CREATE INDEX holds the table's lock
//!   already: the build then keeps it exclusively throughout (the table's writers wait, as they do
//!   for PostgreSQL's plain CREATE INDEX), and its change log stays empty.
//! * The change log lives in memory, as InnoDB's does: a crash rolls the build's transaction
//!   back, and the new tree with it.

use std::collections::HashMap;
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;
use steady_storage::btree::BTree;

use crate::catalog::{EntryFormat, IndexDef, TableDef};
use crate::codec::prefix_successor;
use crate::engine::{Engine, Scan, Transaction};
use crate::error::{EngineError, Result};
use crate::lock::{LockKey, LockMode};
use crate::sorter::{KeySorter, MergedKeys, Sorted};
use crate::table::{
    check_key_columns, corrupt_row, entry_key, entry_pk, entry_value, has_null, index_key,
    lacks_entry, wanted_columns,
};
use crate::txn::{Csn, Snapshot, TxnId, TxnStatus};
use crate::version::IndexId;

/// Logged rows left for the switch, when the table's writers wait: catch-up rounds go on until
/// no more than this many remain.
const LEFT_FOR_SWITCH: usize = 1_000;
/// At most this many catch-up rounds (writers faster than the build leave the rest to the switch).
const CATCH_UP_ROUNDS: usize = 32;
/// Catch-up gives up after this many rounds that leave more than three quarters of what they
/// took (the writers log rows about as fast as it applies them: further rounds would only make
/// the build longer; the switch applies the rest with the writers waiting).
const STALLED_ROUNDS: usize = 3;
/// A build looks for a cancel of its statement every this many rows it reads.
const ROWS_PER_CANCEL_CHECK: u64 = 4096;
/// The most threads that read and sort one build's rows (PostgreSQL's default
/// `max_parallel_maintenance_workers` is 2 besides the leader).
const MAX_BUILD_THREADS: usize = 3;
/// Below this many leaves a build reads its table on one thread: starting threads would cost
/// more than they save.
const MIN_PARALLEL_LEAVES: usize = 64;

/// How many threads read and sort one build's rows: one per core, at most
/// [`MAX_BUILD_THREADS`].
fn build_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |cores| cores.get().min(MAX_BUILD_THREADS))
}

/// Runs `work` on each of `parts`, the first on this thread and the others on threads of their
/// own (which, on Linux, take this thread's CPU priority); the results in the parts' order, or
/// the first part's error.
fn on_threads<P: Send, T: Send>(
    parts: Vec<P>,
    work: impl Fn(P) -> Result<T> + Sync,
) -> Result<Vec<T>> {
    std::thread::scope(|scope| {
        let mut parts = parts.into_iter();
        let first = parts.next();
        let work = &work;
        let helpers: Vec<_> = parts
            .map(|part| {
                std::thread::Builder::new()
                    .name("steady-build".into())
                    .spawn_scoped(scope, move || work(part))
                    .expect("spawning a build thread")
            })
            .collect();
        let mut results: Vec<T> = first.into_iter().map(work).collect::<Result<_>>()?;
        for helper in helpers {
            let result = helper
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            results.push(result?);
        }
        Ok(results)
    })
}

/// Runs `work` — a build's scan, sort and bulk build, none of it under a lock a writer
/// waits for — on a thread of its own at a lower CPU priority
/// ([`crate::engine::run_in_background_priority`]): on a busy machine the build takes the CPU
/// time the foreground transactions leave, instead of half their cores. The statement's own
/// thread keeps its priority.
pub(crate) fn in_background<T: Send>(work: impl FnOnce() -> T + Send) -> T {
    std::thread::scope(|scope| {
        let worker = std::thread::Builder::new()
            .name("steady-build".into())
            .spawn_scoped(scope, || {
                crate::engine::run_in_background_priority();
                work()
            })
            .expect("spawning a build thread");
        worker
            .join()
            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

/// The online index builds running, each with the change log of its table.
#[derive(Default)]
pub(crate) struct Builds {
    logs: Mutex<HashMap<IndexId, Vec<Arc<ChangeLog>>>>,
    /// How many builds run: writers look at `logs` only when some do.
    running: AtomicUsize,
}

impl Builds {
    /// Notes that new versions of rows `pks` of table `table` were written (called by the writer
    /// after the write, holding the table's lock shared).
    pub(crate) fn note<'k>(&self, table: IndexId, pks: impl IntoIterator<Item = &'k [u8]>) {
        if self.running.load(Ordering::Acquire) == 0 {
            return;
        }
        let logs = self.logs.lock();
        let Some(logs) = logs.get(&table) else {
            return;
        };
        let pks: Vec<&[u8]> = pks.into_iter().collect();
        for log in logs {
            log.pks.lock().extend(pks.iter().map(|pk| pk.to_vec()));
        }
    }

    /// How many index builds are past their start (their change logs registered).
    pub(crate) fn running(&self) -> usize {
        self.running.load(Ordering::Acquire)
    }

    fn register(&self, log: ChangeLog) -> Arc<ChangeLog> {
        let log = Arc::new(log);
        let table = log.table;
        self.logs.lock().entry(table).or_default().push(log.clone());
        self.running.fetch_add(1, Ordering::AcqRel);
        log
    }

    /// Every running build's progress.
    fn progress(&self) -> Vec<BuildProgress> {
        let logs = self.logs.lock();
        logs.values().flatten().map(|log| log.progress()).collect()
    }

    fn unregister(&self, table: IndexId, log: &Arc<ChangeLog>) {
        let mut logs = self.logs.lock();
        if let Some(of_table) = logs.get_mut(&table) {
            of_table.retain(|l| !Arc::ptr_eq(l, log));
            if of_table.is_empty() {
                logs.remove(&table);
            }
        }
        self.running.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A running build's change log — the primary keys of the rows written to its table since it
/// started (repeats allowed) — and what it shows of its progress.
pub(crate) struct ChangeLog {
    pks: Mutex<Vec<Vec<u8>>>,
    txn: TxnId,
    table: IndexId,
    command: &'static str,
    phase: Mutex<&'static str>,
    pub(crate) rows_done: AtomicU64,
    changes_applied: AtomicU64,
}

/// A running build as the `steady_progress` view shows it (PostgreSQL's
/// `pg_stat_progress_create_index`, also for VACUUM FULL).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BuildProgress {
    /// The transaction running the build.
    pub txn: TxnId,
    pub table: IndexId,
    /// `CREATE INDEX` or `VACUUM FULL`.
    pub command: &'static str,
    /// `waiting for writers`, `building`, `catching up`, `waiting to switch` or `switching`.
    pub phase: &'static str,
    /// Rows of the build's snapshot read so far.
    pub rows_done: u64,
    /// Rows written meanwhile whose new versions have been applied.
    pub changes_applied: u64,
    /// Rows written meanwhile not applied yet.
    pub changes_waiting: u64,
}

impl ChangeLog {
    fn new(txn: TxnId, table: IndexId, command: &'static str) -> Self {
        ChangeLog {
            pks: Mutex::new(Vec::new()),
            txn,
            table,
            command,
            phase: Mutex::new("waiting for writers"),
            rows_done: AtomicU64::new(0),
            changes_applied: AtomicU64::new(0),
        }
    }

    pub(crate) fn set_phase(&self, phase: &'static str) {
        *self.phase.lock() = phase;
    }

    fn progress(&self) -> BuildProgress {
        BuildProgress {
            txn: self.txn,
            table: self.table,
            command: self.command,
            phase: *self.phase.lock(),
            rows_done: self.rows_done.load(Ordering::Relaxed),
            changes_applied: self.changes_applied.load(Ordering::Relaxed),
            changes_waiting: self.len() as u64,
        }
    }

    /// Takes the keys logged so far, ascending and without repeats.
    pub(crate) fn drain(&self) -> Vec<Vec<u8>> {
        let mut pks = std::mem::take(&mut *self.pks.lock());
        pks.sort_unstable();
        pks.dedup();
        pks
    }

    fn len(&self) -> usize {
        self.pks.lock().len()
    }

    fn put_back(&self, pks: Vec<Vec<u8>>) {
        self.pks.lock().extend(pks);
    }
}

/// A build (or an online rebuild, [`crate::rebuild`]) from its start to its switch: its change
/// log registered and its snapshot open; both are given up when it is dropped, whether the build
/// succeeded or not.
pub(crate) struct RunningBuild {
    engine: Arc<Engine>,
    table: IndexId,
    pub(crate) log: Arc<ChangeLog>,
    snapshot: Option<Snapshot>,
}

impl RunningBuild {
    pub(crate) fn snapshot(&self) -> Csn {
        self.snapshot.map_or(0, |s| s.csn)
    }
}

impl Drop for RunningBuild {
    fn drop(&mut self) {
        self.engine.builds.unregister(self.table, &self.log);
        if let Some(snapshot) = self.snapshot.take() {
            self.engine.txns.release_snapshot(snapshot);
        }
    }
}

/// What tells a build that its statement should stop: a cancel of its transaction's statement,
/// or the statement's deadline passing.
#[derive(Clone, Copy)]
pub(crate) struct StopCheck {
    txn: TxnId,
    deadline: Option<Instant>,
}

impl StopCheck {
    /// 57014 if the statement was cancelled while it was not waiting, or timed out.
    fn check(&self, engine: &Engine) -> Result<()> {
        if engine.locks.is_interrupted(self.txn) {
            return Err(crate::lock::LockError::Cancelled.into());
        }
        if self.deadline.is_some_and(|d| Instant::now() >= d) {
            return Err(EngineError::StatementTimeout);
        }
        Ok(())
    }
}

/// What a check of a UNIQUE key against the committed rows found.
enum KeyCheck {
    Unique,
    /// Another row's newest version has the key but its writer has not ended: look again later.
    Undecided,
}

impl Engine {
    /// How many online index builds are running past their start: writes to their tables are
    /// being noted for them.
    pub fn index_builds_running(&self) -> usize {
        self.builds.running()
    }

    /// Counts one more row read by a build in `done`, and now and then fails with 57014 if
    /// `stop` finds its statement cancelled or timed out meanwhile (a build waits for no lock
    /// that a cancel would end).
    pub(crate) fn count_build_row(&self, stop: &StopCheck, done: &AtomicU64) -> Result<()> {
        if done
            .fetch_add(1, Ordering::Relaxed)
            .is_multiple_of(ROWS_PER_CANCEL_CHECK)
        {
            stop.check(self)?;
        }
        Ok(())
    }

    /// The progress of every online index build and rebuild running.
    pub fn builds_in_progress(&self) -> Vec<BuildProgress> {
        self.builds.progress()
    }

    /// Called by a bulk build after each page it writes: lets waiting commits sync first
    /// ([`steady_storage::wal::Wal::yield_to_commits`]).
    pub(crate) fn pace_build(&self) {
        self.store.yield_log_to_commits();
    }
}

impl Transaction {
    /// Builds a secondary index over the table's rows while its writers go on (see the module
    /// documentation) and adds it to the table; 23505 if `unique` and two rows share a key.
    pub fn create_secondary_index(
        &mut self,
        table: &str,
        name: &str,
        columns: Vec<usize>,
        unique: bool,
    ) -> Result<Arc<TableDef>> {
        self.create_covering_index(table, name, columns, Vec::new(), unique)
    }

    /// [`Transaction::create_secondary_index`] with the columns of `INCLUDE (...)` recorded (see
    /// `IndexDef::include`).
    pub fn create_covering_index(
        &mut self,
        table: &str,
        name: &str,
        columns: Vec<usize>,
        include: Vec<usize>,
        unique: bool,
    ) -> Result<Arc<TableDef>> {
        let engine = self.engine();
        let no_table = || EngineError::NoSuchTable(table.to_string());
        let table_id = engine.table(table).ok_or_else(no_table)?.id;
        self.lock_ddl(table_id)?;
        let build = self.start_build(table_id, "CREATE INDEX")?;
        let table = engine.table_by_id(table_id).ok_or_else(no_table)?;
        if table.index(name).is_some() {
            return Err(EngineError::DuplicateIndex(name.to_string()));
        }
        check_key_columns(&table.columns, &columns)?;
        let index = IndexDef {
            id: self.new_tree_id(table.space)?,
            name: name.to_string(),
            columns,
            include,
            unique,
            valid_from: 0,
            entry_format: EntryFormat::PkLength,
        };
        let mut with_index = (*table).clone();
        with_index.indexes.push(index.clone());
        in_background(|| {
            self.bulk_build_index(&with_index, &index, build.snapshot(), &build.log.rows_done)
        })?;
        self.catch_up(&build.log, |txn, pks| {
            txn.add_changed_entries(&with_index, &index, pks)
        })?;
        let table = self.lock_table_for_switch(&build.log, &table.name)?;
        let left = self.add_changed_entries(&with_index, &index, build.log.drain())?;
        debug_assert!(left.is_empty(), "a writer of the table is still running");
        drop(build);
        let _ddl = engine.ddl.write();
        let mut altered = (*table).clone();
        altered.indexes.push(IndexDef {
            valid_from: engine.txns.stats().last_csn,
            ..index
        });
        self.save_table(altered)
    }

    /// Step 1: registers the build's change log and takes its snapshot, with no writer of the
    /// table in the middle of its transaction.
    /// The log is registered before the lock is taken (a writer noting a row it wrote before
    /// the snapshot only costs the build a look at it), so the wait shows in `steady_progress`.
    pub(crate) fn start_build(
        &mut self,
        table: IndexId,
        command: &'static str,
    ) -> Result<RunningBuild> {
        let engine = self.engine();
        let log = engine
            .builds
            .register(ChangeLog::new(self.id, table, command));
        let mut build = RunningBuild {
            engine: engine.clone(),
            table,
            log,
            snapshot: None,
        };
        let key = LockKey::new(table, Vec::new());
        let held_before = engine.locks.holds(self.id, &key).is_some();
        engine
            .locks
            .lock(self.id, key.clone(), LockMode::Exclusive, self.lock_timeout)?;
        build.snapshot = Some(engine.txns.take_snapshot());
        if !held_before {
            engine.locks.release(self.id, &key);
        }
        build.log.set_phase("building");
        Ok(build)
    }

    /// Step 4's lock: the table's, exclusively until the transaction ends.
    pub(crate) fn lock_table_for_switch(
        &mut self,
        log: &ChangeLog,
        name: &str,
    ) -> Result<Arc<TableDef>> {
        log.set_phase("waiting to switch");
        let table = self.lock_table_for_ddl(name)?;
        log.set_phase("switching");
        Ok(table)
    }

    /// Step 2: the entries of the rows `snapshot` sees, sorted and bulk-built into `index`'s tree.
    fn bulk_build_index(
        &mut self,
        table: &TableDef,
        index: &IndexDef,
        snapshot: Csn,
        rows_done: &AtomicU64,
    ) -> Result<()> {
        let engine = self.engine();
        let entries = self.index_entries(table, index, Some(snapshot), Some(rows_done))?;
        let space = engine
            .store
            .space(table.space)
            .ok_or(EngineError::NoSuchIndex(table.id))?;
        let tree = BTree::bulk_build(
            engine.store.pool().clone(),
            space,
            index.id,
            entries
                .iter()
                .map(|(key, pk, _)| Ok((key, entry_value(index.entry_format, pk)))),
            &mut |_| engine.pace_build(),
        )?;
        engine.indexes.write().insert(index.id, Arc::new(tree));
        Ok(())
    }

    /// The sorted entries `(entry key, primary key)` of `index` over the rows `snapshot` sees
    /// (None: the newest versions), counting the rows read in `rows_done`; 23505 if the index is
    /// unique and two of them without NULLs share a key. A large table's rows are read and
    /// sorted in parts, one per thread ([`build_threads`]), merged as they are read.
    pub(crate) fn index_entries(
        &mut self,
        table: &TableDef,
        index: &IndexDef,
        snapshot: Option<Csn>,
        rows_done: Option<&AtomicU64>,
    ) -> Result<MergedKeys> {
        let engine = self.engine();
        let stop = self.stop_check();
        let decoder = table.decoder(Some(wanted_columns(table, &index.columns)));
        let clustered = engine.tree(table.id)?;
        let scans = self.scan_parts_at(&clustered, table.id, snapshot)?;
        let parts = scans.len();
        let sort_part = |mut rows: Scan| -> Result<KeySorter> {
            let mut entries = engine.sorter_for(&clustered, parts)?;
            while let Some(row) = rows.next_entry() {
                let (pk, bytes) = row?;
                let values = decoder.decode(bytes).map_err(corrupt_row)?;
                let comparable = !has_null(&values, &index.columns);
                let key = entry_key(&index_key(&values, &index.columns), pk);
                entries.push(&key, pk, comparable);
                if let Some(done) = rows_done {
                    engine.count_build_row(&stop, done)?;
                }
            }
            entries.sort();
            Ok(entries)
        };
        let entries = MergedKeys::new(on_threads(scans, sort_part)?);
        let same_key = |(a, a_pk, a_comparable): Sorted<'_>, (b, b_pk, _): Sorted<'_>| {
            a_comparable && a[..a.len() - a_pk.len()] == b[..b.len() - b_pk.len()]
        };
        if index.unique && entries.any_neighbours(same_key) {
            return Err(EngineError::UniqueViolation { index: index.id });
        }
        Ok(entries)
    }

    /// Scans of the rows of `table` (whose clustered tree is `clustered`) as `snapshot` sees
    /// them, one per part of its key space: [`build_threads`] parts of about equal size, or one
    /// for a table of fewer than [`MIN_PARALLEL_LEAVES`] leaves.
    fn scan_parts_at(
        &mut self,
        clustered: &BTree,
        table: IndexId,
        snapshot: Option<Csn>,
    ) -> Result<Vec<Scan>> {
        let mut partition =
            clustered.partition(build_threads(), Bound::Unbounded, Bound::Unbounded)?;
        if partition.leaves < MIN_PARALLEL_LEAVES {
            partition.keys.clear();
        }
        partition
            .ranges(Bound::Unbounded, Bound::Unbounded)
            .into_iter()
            .map(|(lower, upper)| self.scan_range_at(table, snapshot, lower, upper))
            .collect()
    }

    /// Step 3: catch-up rounds, each giving the logged rows to `apply` (which returns those it
    /// leaves for later), until few are left for the switch.
    pub(crate) fn catch_up(
        &mut self,
        log: &ChangeLog,
        mut apply: impl FnMut(&mut Transaction, Vec<Vec<u8>>) -> Result<Vec<Vec<u8>>>,
    ) -> Result<()> {
        log.set_phase("catching up");
        let mut stalled = 0;
        for _ in 0..CATCH_UP_ROUNDS {
            if log.len() <= LEFT_FOR_SWITCH || stalled == STALLED_ROUNDS {
                break;
            }
            self.stop_check().check(&self.engine)?;
            let pks = log.drain();
            let taken = pks.len();
            let left = apply(self, pks)?;
            let applied = taken - left.len();
            log.changes_applied
                .fetch_add(applied as u64, Ordering::Relaxed);
            log.put_back(left);
            if log.len() * 4 > taken * 3 {
                stalled += 1;
            }
        }
        Ok(())
    }

    /// Adds to `index` the entries of the newest versions of rows `pks` (ascending) whose
    /// writers have committed, checking a unique index's keys; returns the rows left for later.
    fn add_changed_entries(
        &mut self,
        table: &TableDef,
        index: &IndexDef,
        pks: Vec<Vec<u8>>,
    ) -> Result<Vec<Vec<u8>>> {
        let engine = self.engine();
        let clustered = engine.tree(table.id)?;
        let tree = engine.tree(index.id)?;
        let decoder = table.decoder(Some(wanted_columns(table, &index.columns)));
        let versions = engine.current_versions(&clustered, table.id, &pks)?;
        let mut left = Vec::new();
        for (pk, version) in pks.into_iter().zip(versions) {
            let Some(version) = version else { continue };
            if !self.settled(version.writer) {
                left.push(pk);
                continue;
            }
            if version.deleted {
                continue;
            }
            let values = decoder.decode(&version.row).map_err(corrupt_row)?;
            let sk = index_key(&values, &index.columns);
            let key = entry_key(&sk, &pk);
            if lacks_entry(&tree, index.entry_format, &key, &pk)? {
                tree.insert(&key, &entry_value(index.entry_format, &pk))?;
            }
            if !index.unique || has_null(&values, &index.columns) {
                continue;
            }
            if let KeyCheck::Undecided = self.check_built_key(table, index, &sk, &pk)? {
                left.push(pk);
            }
        }
        Ok(left)
    }

    /// What tells this transaction's build that its statement should stop.
    pub(crate) fn stop_check(&self) -> StopCheck {
        StopCheck {
            txn: self.id,
            deadline: self.statement_deadline,
        }
    }

    /// Whether a version's writer has ended (or is this transaction): its version is the row's
    /// for good.
    pub(crate) fn settled(&self, writer: TxnId) -> bool {
        writer == self.id || matches!(self.engine.txns.status(writer), TxnStatus::Committed(_))
    }

    /// Looks for a row other than `pk` whose newest version has `index` key `sk`: 23505 if a
    /// committed one does.
    fn check_built_key(
        &self,
        table: &TableDef,
        index: &IndexDef,
        sk: &[u8],
        pk: &[u8],
    ) -> Result<KeyCheck> {
        let engine = &self.engine;
        let tree = engine.tree(index.id)?;
        let clustered = engine.tree(table.id)?;
        let decoder = table.decoder(Some(wanted_columns(table, &index.columns)));
        let end = prefix_successor(sk);
        let end = end.as_deref().map_or(Bound::Unbounded, Bound::Excluded);
        let mut check = KeyCheck::Unique;
        for entry in tree.range(Bound::Included(sk), end) {
            let (key, value) = entry?;
            let other = entry_pk(index.entry_format, &key, &value)?;
            if other == pk || key.len() != sk.len() + other.len() {
                continue;
            }
            let Some(version) = engine.current_version(&clustered, table.id, &other)? else {
                continue;
            };
            let has_key = !version.deleted
                && index_key(
                    &decoder.decode(&version.row).map_err(corrupt_row)?,
                    &index.columns,
                ) == sk;
            match (has_key, self.settled(version.writer)) {
                (true, true) => return Err(EngineError::UniqueViolation { index: index.id }),
                (_, false) => check = KeyCheck::Undecided,
                (false, true) => {}
            }
        }
        Ok(check)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::ColumnDef;
    use crate::engine::{EngineConfig, Isolation};
    use steady_storage::io::{MemVfs, Vfs};
    use steady_types::{DataType, Value};

    fn row(id: i64, v: i64) -> Vec<Value> {
        vec![Value::BigInt(id), Value::BigInt(v)]
    }

    /// A catch-up round adds the entry of a row whose writer has committed, and leaves a row
    /// whose writer is still running for a later round: an entry added for its version would
    /// never be purged if it rolled back.
    #[test]
    fn catch_up_adds_only_committed_versions() {
        let config = EngineConfig {
            background_purge: false,
            ..Default::default()
        };
        let vfs: Arc<dyn Vfs> = Arc::new(MemVfs::new());
        let engine = Engine::open_vfs(vfs, &config).unwrap();
        let columns = vec![
            ColumnDef::plain("id", DataType::BigInt),
            ColumnDef::plain("v", DataType::BigInt),
        ];
        let table = engine
            .autocommit(|t| t.create_table("t", columns, vec![0]))
            .unwrap();
        let (settled, running) = (index_key(&row(1, 0), &[0]), index_key(&row(2, 0), &[0]));
        engine
            .autocommit(|t| {
                t.insert_row(&table, &row(1, 10))?;
                t.insert_row(&table, &row(2, 20))
            })
            .unwrap();
        let mut build = engine.begin(Isolation::ReadCommitted).unwrap();
        let index = IndexDef {
            id: build.new_tree_id(table.space).unwrap(),
            name: "by_v".into(),
            columns: vec![1],
            include: Vec::new(),
            unique: false,
            valid_from: 0,
            entry_format: EntryFormat::PkLength,
        };
        let mut with_index = (*table).clone();
        with_index.indexes.push(index.clone());
        let snapshot = engine.txns.take_snapshot().csn;
        build
            .bulk_build_index(&with_index, &index, snapshot, &AtomicU64::new(0))
            .unwrap();
        engine
            .autocommit(|t| t.update_row(&table, &settled, &row(1, 11)))
            .unwrap();
        let mut writer = engine.begin(Isolation::ReadCommitted).unwrap();
        writer.update_row(&table, &running, &row(2, 21)).unwrap();
        let pks = vec![settled.clone(), running.clone()];
        let left = build.add_changed_entries(&with_index, &index, pks).unwrap();
        assert_eq!(left, vec![running.clone()]);
        let entries = |engine: &Engine| -> Vec<Vec<u8>> {
            let tree = engine.tree(index.id).unwrap();
            let all = tree.range(Bound::Unbounded, Bound::Unbounded);
            all.map(|entry| entry.unwrap().0).collect()
        };
        let key = |id: i64, v: i64| {
            entry_key(&index_key(&row(id, v), &[1]), &index_key(&row(id, v), &[0]))
        };
        assert_eq!(entries(&engine), vec![key(1, 10), key(1, 11), key(2, 20)]);
        writer.rollback().unwrap();
        let left = build
            .add_changed_entries(&with_index, &index, left)
            .unwrap();
        assert!(left.is_empty());
        assert_eq!(entries(&engine), vec![key(1, 10), key(1, 11), key(2, 20)]);
    }
}
