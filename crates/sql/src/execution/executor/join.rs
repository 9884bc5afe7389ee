//! Joins over a materialised inner (right) side — inner, left, right and full, the rest of the
//! join condition evaluated on the joined row — and LATERAL, which reruns its right side per left
//! row.
//!
//! A join with hash keys ([`JoinKey`]) puts the inner rows into buckets by a hash of their key
//! values and tests a left row only against its bucket. The hash is taken of each value's
//! canonical form ([`canonical`]), equal whenever `=` says two values are equal: every integer,
//! integral numeric and integral float as one 64-bit integer, other numerics normalised, other
//! floats by their bits, dates and timestamps as one instant. The only equalities across those
//! forms that it misses are between a float and an exact number beyond a float's precision
//! (`=` compares them as floats), so a left value of one of those classes meeting inner values of
//! the other in one key is tested against every inner row instead. A NULL key matches nothing.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hash, Hasher};

use rust_decimal::prelude::ToPrimitive;

use super::*;
use crate::execution::plan::JoinKey;

/// The inner rows of a hash join by the hash of their key values.
struct Buckets {
    hasher: ahash::RandomState,
    rows: HashMap<u64, Vec<usize>>,
    /// Per key: which number classes ([`NumberClass`]) the inner values have, as bits.
    classes: Vec<u8>,
}

/// The classes of numbers between which `=` compares as floats: a hash of canonical forms can
/// miss an equality only across them.
#[derive(Clone, Copy, PartialEq, Eq)]
enum NumberClass {
    Exact = 1,
    Float = 2,
}

impl NumberClass {
    fn of(value: &Value) -> Option<NumberClass> {
        match value {
            Value::SmallInt(_) | Value::Integer(_) | Value::BigInt(_) | Value::Numeric(_) => {
                Some(NumberClass::Exact)
            }
            Value::Real(_) | Value::Double(_) => Some(NumberClass::Float),
            _ => None,
        }
    }
}

/// A value's form for hashing: equal forms for values `=` calls equal (see the module doc).
#[derive(Hash)]
enum Canonical<'v> {
    Boolean(bool),
    Integer(i64),
    Decimal(u128, u32, bool),
    Float(u64),
    Instant(i128),
    Text(&'v str),
    Bytes(&'v [u8]),
}

fn canonical(value: &Value) -> Option<Canonical<'_>> {
    Some(match value {
        Value::Null => return None,
        Value::Boolean(b) => Canonical::Boolean(*b),
        Value::SmallInt(i) => Canonical::Integer(i64::from(*i)),
        Value::Integer(i) => Canonical::Integer(i64::from(*i)),
        Value::BigInt(i) => Canonical::Integer(*i),
        Value::Real(x) => float(f64::from(*x)),
        Value::Double(x) => float(*x),
        Value::Numeric(d) => match d.is_integer().then(|| d.to_i64()).flatten() {
            Some(i) => Canonical::Integer(i),
            None => {
                let d = d.normalize();
                Canonical::Decimal(d.mantissa().unsigned_abs(), d.scale(), d.is_sign_negative())
            }
        },
        Value::Text(s) => Canonical::Text(s),
        Value::Bytea(b) => Canonical::Bytes(b),
        Value::Date(_) | Value::Timestamp(_) => Canonical::Instant(value.instant()?),
    })
}

fn float(x: f64) -> Canonical<'static> {
    if x.is_nan() {
        Canonical::Float(f64::NAN.to_bits())
    } else if x.fract() == 0.0 && x.abs() < 9.0e18 {
        Canonical::Integer(x as i64)
    } else {
        Canonical::Float(x.to_bits())
    }
}

impl Buckets {
    /// Buckets for `inner`, keyed by `keys` evaluated on each row.
    fn new(inner: &[Row], keys: &[JoinKey], ctx: &mut ExecCtx) -> Result<Buckets> {
        let mut buckets = Buckets {
            hasher: ahash::RandomState::new(),
            rows: HashMap::new(),
            classes: vec![0; keys.len()],
        };
        for (at, row) in inner.iter().enumerate() {
            ctx.check_interrupt()?;
            let values = keys
                .iter()
                .map(|k| k.right.eval(row, ctx))
                .collect::<Result<Vec<Value>>>()?;
            for (classes, value) in buckets.classes.iter_mut().zip(&values) {
                *classes |= NumberClass::of(value).map_or(0, |c| c as u8);
            }
            if let Some(hash) = buckets.hash(&values) {
                buckets.rows.entry(hash).or_default().push(at);
            }
        }
        Ok(buckets)
    }

    /// The hash of a row's key values; None if one is NULL (the row matches nothing).
    fn hash(&self, values: &[Value]) -> Option<u64> {
        let mut hasher = self.hasher.build_hasher();
        for value in values {
            canonical(value)?.hash(&mut hasher);
        }
        Some(hasher.finish())
    }

    /// The inner rows that may match a left row with these key values.
    fn candidates(&self, values: &[Value]) -> Candidates {
        let crosses = values.iter().zip(&self.classes).any(|(value, &classes)| {
            NumberClass::of(value).is_some_and(|c| classes & !(c as u8) != 0)
        });
        if crosses {
            return Candidates::All;
        }
        match self.hash(values) {
            Some(hash) if self.rows.contains_key(&hash) => Candidates::Bucket(hash),
            _ => Candidates::None,
        }
    }
}

/// Which inner rows the current left row is tested against.
#[derive(Clone, Copy)]
enum Candidates {
    All,
    Bucket(u64),
    None,
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
            candidates: Candidates::None,
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
        self.candidates = match &self.buckets {
            None => Candidates::All,
            Some(buckets) => {
                self.current_keys.clear();
                for key in self.keys {
                    self.current_keys.push(key.left.eval(&left, ctx)?);
                }
                buckets.candidates(&self.current_keys)
            }
        };
        self.current = Some(left);
        self.position = 0;
        self.matched = false;
        Ok(true)
    }

    /// The next inner row the current left row is to be tested against.
    fn next_candidate(&mut self) -> Option<usize> {
        let at = match self.candidates {
            Candidates::All => (self.position < self.inner.len()).then_some(self.position),
            Candidates::Bucket(hash) => {
                let bucket = self.buckets.as_ref()?.rows.get(&hash)?;
                bucket.get(self.position).copied()
            }
            Candidates::None => None,
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

    /// The next joined row of the current left row, if any.
    fn next_match(&mut self, ctx: &mut ExecCtx) -> Result<Option<Row>> {
        while let Some(at) = self.next_candidate() {
            ctx.check_interrupt()?;
            if !self.keys_match(at, ctx)? {
                continue;
            }
            let Some(row) = self.current.as_mut() else {
                return Ok(None);
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
                return Ok(Some(row.clone()));
            }
        }
        Ok(None)
    }
}

impl Source for JoinSource<'_> {
    fn next(&mut self, ctx: &mut ExecCtx) -> Result<Option<Row>> {
        loop {
            if self.unmatched.is_some() {
                return Ok(self.next_unmatched());
            }
            if self.current.is_none() && !self.advance(ctx)? {
                if matches!(self.kind, JoinKind::Right | JoinKind::Full) {
                    return Ok(self.next_unmatched());
                }
                return Ok(None);
            }
            if let Some(row) = self.next_match(ctx)? {
                return Ok(Some(row));
            }
            let mut left = self.current.take().unwrap_or_default();
            if matches!(self.kind, JoinKind::Left | JoinKind::Full) && !self.matched {
                left.truncate(self.left_width);
                left.extend(std::iter::repeat_n(Value::Null, self.right_width));
                return Ok(Some(left));
            }
        }
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
