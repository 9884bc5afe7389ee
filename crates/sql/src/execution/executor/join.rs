//! Joins over a materialised inner (right) side — inner, left, right, full, anti (left rows
//! without a match) and right anti, the rest of the join condition evaluated on the joined row — and LATERAL, which reruns its right side per left
//! row.
//!
//! A join with hash keys ([`JoinKey`]) orders the inner rows by the hash of their key values
//! ([`RowHasher`]) and tests a left row only against the run of inner rows with its key's hash,
//! comparing the key values as `=` does before the rest of the condition. A NULL key matches
//! nothing.

use std::collections::HashMap;

use super::hashing::RowHasher;
use super::*;
use crate::execution::plan::JoinKey;

/// The inner rows of a hash join grouped by the hash of their key values.
struct Buckets {
    hasher: RowHasher,
    /// Inner row numbers, those of one hash together.
    order: Vec<usize>,
    /// Per hash, its run in `order`.
    runs: HashMap<u64, (usize, usize), ahash::RandomState>,
}

impl Buckets {
    /// Buckets for `inner`, keyed by `keys` evaluated on each row.
    fn new(inner: &[Row], keys: &[JoinKey], ctx: &mut ExecCtx) -> Result<Buckets> {
        let hasher = RowHasher::new();
        let mut hashed = Vec::with_capacity(inner.len());
        let mut values = Vec::with_capacity(keys.len());
        for (at, row) in inner.iter().enumerate() {
            ctx.check_interrupt()?;
            values.clear();
            for key in keys {
                values.push(key.right.eval(row, ctx)?);
            }
            if let Some(hash) = hasher.hash_key(&values) {
                hashed.push((hash, at));
            }
        }
        hashed.sort_unstable();
        let mut runs = HashMap::with_capacity_and_hasher(hashed.len(), Default::default());
        for (position, &(hash, _)) in hashed.iter().enumerate() {
            runs.entry(hash)
                .and_modify(|run: &mut (usize, usize)| run.1 = position + 1)
                .or_insert((position, position + 1));
        }
        let order = hashed.into_iter().map(|(_, at)| at).collect();
        Ok(Buckets {
            hasher,
            order,
            runs,
        })
    }

    /// The positions in `order` of the inner rows that may match a left row with these key
    /// values.
    fn candidates(&self, values: &[Value]) -> Candidates {
        let run = self
            .hasher
            .hash_key(values)
            .and_then(|hash| self.runs.get(&hash));
        match run {
            Some(&(start, end)) => Candidates::Run(start, end),
            None => Candidates::Run(0, 0),
        }
    }
}

/// Which inner rows the current left row is tested against.
#[derive(Clone, Copy)]
enum Candidates {
    /// Every inner row (a nested loop).
    All,
    /// The rows at these positions of the buckets' order.
    Run(usize, usize),
}

pub(super) struct JoinSource<'p> {
    left: BoxedSource<'p>,
    inner: Vec<Row>,
    matched_inner: Vec<bool>,
    kind: JoinKind,
    keys: &'p [JoinKey],
    /// With keys: the inner rows by key hash.
    buckets: Option<Buckets>,
    on: Option<&'p Expr>,
    right_width: usize,
    left_width: usize,
    /// The current left row followed by the inner row last tested.
    current: Option<Row>,
    current_keys: Vec<Value>,
    candidates: Candidates,
    position: usize,
    matched: bool,
    /// After the left side ends (right and full joins): the next right row to check.
    unmatched: Option<usize>,
}

impl<'p> JoinSource<'p> {
    pub(super) fn new(
        left: BoxedSource<'p>,
        inner: Vec<Row>,
        (kind, keys, on): (JoinKind, &'p [JoinKey], Option<&'p Expr>),
        (left_width, right_width): (usize, usize),
        ctx: &mut ExecCtx,
    ) -> Result<Self> {
        let buckets = match keys.is_empty() {
            true => None,
            false => Some(Buckets::new(&inner, keys, ctx)?),
        };
        Ok(JoinSource {
            left,
            matched_inner: vec![false; inner.len()],
            inner,
            kind,
            keys,
            buckets,
            on,
            right_width,
            left_width,
            current: None,
            current_keys: Vec::new(),
            candidates: Candidates::All,
            position: 0,
            matched: false,
            unmatched: None,
        })
    }

    /// The right rows no left row matched, NULL-extended on the left.
    fn next_unmatched(&mut self) -> Option<Row> {
        let position = self.unmatched.get_or_insert(0);
        while *position < self.inner.len() {
            let i = *position;
            *position += 1;
            if !self.matched_inner[i] {
                let mut row = vec![Value::Null; self.left_width];
                row.extend_from_slice(&self.inner[i]);
                return Some(row);
            }
        }
        None
    }

    /// Takes the next left row as the current one; false when the left side has ended.
    fn advance(&mut self, ctx: &mut ExecCtx) -> Result<bool> {
        let Some(left) = self.left.next(ctx)? else {
            return Ok(false);
        };
        self.find_candidates(&left, ctx)?;
        self.current = Some(left);
        Ok(true)
    }

    /// Sets the inner rows the left row `left` is to be tested against, from the first.
    fn find_candidates(&mut self, left: &Row, ctx: &mut ExecCtx) -> Result<()> {
        self.candidates = match &self.buckets {
            None => Candidates::All,
            Some(buckets) => {
                self.current_keys.clear();
                for key in self.keys {
                    self.current_keys.push(key.left.eval(left, ctx)?);
                }
                buckets.candidates(&self.current_keys)
            }
        };
        self.position = 0;
        self.matched = false;
        Ok(())
    }

    /// Joins the lent left row `left` for [`Source::for_each_row`]: lends `visit` each joined row
    /// (built in the storage of the one before), marks the matched inner rows, and lends the
    /// left row NULL-extended where the kind keeps it unmatched.
    fn join_lent(&mut self, left: &Row, ctx: &mut ExecCtx, visit: &mut RowVisitor) -> Result<()> {
        self.find_candidates(left, ctx)?;
        let keeps_unmatched = matches!(self.kind, JoinKind::Left | JoinKind::Full | JoinKind::Anti);
        if matches!(self.candidates, Candidates::Run(start, end) if start == end)
            && !keeps_unmatched
        {
            return Ok(());
        }
        self.current.get_or_insert_with(Vec::new).clone_from(left);
        if matches!(self.kind, JoinKind::Anti | JoinKind::RightAnti) {
            self.mark_matches(ctx)?;
        } else {
            while self.find_match(ctx)? {
                if let Some(row) = &self.current {
                    visit(row, ctx)?;
                }
            }
        }
        if keeps_unmatched && !self.matched {
            if let Some(row) = self.current.as_mut() {
                row.truncate(self.left_width);
                row.extend(std::iter::repeat_n(Value::Null, self.right_width));
                visit(row, ctx)?;
            }
        }
        Ok(())
    }

    /// The next inner row the current left row is to be tested against.
    fn next_candidate(&mut self) -> Option<usize> {
        let at = match (self.candidates, &self.buckets) {
            (Candidates::All, _) => (self.position < self.inner.len()).then_some(self.position),
            (Candidates::Run(start, end), Some(buckets)) => {
                let position = start + self.position;
                (position < end).then(|| buckets.order[position])
            }
            (Candidates::Run(..), None) => None,
        };
        self.position += 1;
        at
    }

    /// Whether the current left row and inner row `at` satisfy the keys (compared as `=` does).
    fn keys_match(&self, at: usize, ctx: &mut ExecCtx) -> Result<bool> {
        for (key, left) in self.keys.iter().zip(&self.current_keys) {
            let right = key.right.eval(&self.inner[at], ctx)?;
            if left.compare(&right) != Some(std::cmp::Ordering::Equal) {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Marks the inner rows the current left row matches without building the joined rows, which
    /// the anti joins never return: an anti join stops at the first match (one is enough to drop
    /// the left row), a right anti join marks every match.
    fn mark_matches(&mut self, ctx: &mut ExecCtx) -> Result<()> {
        while let Some(at) = self.next_candidate() {
            ctx.check_interrupt()?;
            if !self.keys_match(at, ctx)? {
                continue;
            }
            if let (Some(on), Some(row)) = (self.on, self.current.as_mut()) {
                row.truncate(self.left_width);
                row.extend_from_slice(&self.inner[at]);
                if !on.eval_predicate(row, ctx)? {
                    continue;
                }
            }
            self.matched = true;
            self.matched_inner[at] = true;
            if self.kind == JoinKind::Anti {
                break;
            }
        }
        Ok(())
    }

    /// The next joined row of the current left row, if any.
    fn next_match(&mut self, ctx: &mut ExecCtx) -> Result<Option<Row>> {
        Ok(match self.find_match(ctx)? {
            true => self.current.clone(),
            false => None,
        })
    }

    /// Builds the next joined row of the current left row in `current`; false if there is none.
    fn find_match(&mut self, ctx: &mut ExecCtx) -> Result<bool> {
        while let Some(at) = self.next_candidate() {
            ctx.check_interrupt()?;
            if !self.keys_match(at, ctx)? {
                continue;
            }
            let Some(row) = self.current.as_mut() else {
                return Ok(false);
            };
            row.truncate(self.left_width);
            row.extend_from_slice(&self.inner[at]);
            let keep = match self.on {
                Some(on) => on.eval_predicate(row, ctx)?,
                None => true,
            };
            if keep {
                self.matched = true;
                self.matched_inner[at] = true;
                return Ok(true);
            }
        }
        Ok(false)
    }
}

impl Source for JoinSource<'_> {
    fn next(&mut self, ctx: &mut ExecCtx) -> Result<Option<Row>> {
        loop {
            if self.unmatched.is_some() {
                return Ok(self.next_unmatched());
            }
            if self.current.is_none() && !self.advance(ctx)? {
                if matches!(
                    self.kind,
                    JoinKind::Right | JoinKind::Full | JoinKind::RightAnti
                ) {
                    return Ok(self.next_unmatched());
                }
                return Ok(None);
            }
            if matches!(self.kind, JoinKind::Anti | JoinKind::RightAnti) {
                self.mark_matches(ctx)?;
            } else if let Some(row) = self.next_match(ctx)? {
                return Ok(Some(row));
            }
            let mut left = self.current.take().unwrap_or_default();
            let keeps_unmatched =
                matches!(self.kind, JoinKind::Left | JoinKind::Full | JoinKind::Anti);
            if keeps_unmatched && !self.matched {
                left.truncate(self.left_width);
                left.extend(std::iter::repeat_n(Value::Null, self.right_width));
                return Ok(Some(left));
            }
        }
    }

    /// Reads the left side lent row by row (a scan decodes each into the storage of the one
    /// before) and lends each joined row, built in one reused row: no row is allocated per left
    /// row or per match (aggregates over a join read it so).
    fn for_each_row(&mut self, ctx: &mut ExecCtx, visit: &mut RowVisitor) -> Result<()> {
        if self.current.is_some() || self.unmatched.is_some() {
            return visit_each_next(self, ctx, visit);
        }
        let mut left = std::mem::replace(&mut self.left, Box::new(RowsSource::new(Vec::new())));
        let joined = left.for_each_row(ctx, &mut |row, ctx| self.join_lent(row, ctx, visit));
        self.left = left;
        joined?;
        self.current = None;
        if matches!(
            self.kind,
            JoinKind::Right | JoinKind::Full | JoinKind::RightAnti
        ) {
            while let Some(row) = self.next_unmatched() {
                visit(&row, ctx)?;
            }
        }
        Ok(())
    }
}

pub(super) struct LateralSource<'p> {
    pub(super) left: BoxedSource<'p>,
    pub(super) right: &'p Plan,
    pub(super) kind: JoinKind,
    pub(super) on: Option<&'p Expr>,
    pub(super) right_width: usize,
    pub(super) pending: std::collections::VecDeque<Row>,
}

impl Source for LateralSource<'_> {
    fn next(&mut self, ctx: &mut ExecCtx) -> Result<Option<Row>> {
        loop {
            if let Some(row) = self.pending.pop_front() {
                return Ok(Some(row));
            }
            let Some(left) = self.left.next(ctx)? else {
                return Ok(None);
            };
            for right in ctx.run_with_outer(self.right, &left)? {
                let mut row = left.clone();
                row.extend(right);
                let keep = match self.on {
                    Some(on) => on.eval_predicate(&row, ctx)?,
                    None => true,
                };
                if keep {
                    self.pending.push_back(row);
                }
            }
            if self.pending.is_empty() && self.kind == JoinKind::Left {
                let mut row = left;
                row.extend(std::iter::repeat_n(Value::Null, self.right_width));
                return Ok(Some(row));
            }
        }
    }
}
