//! Joins: nested loops over a materialised inner side (inner, left, right and full, with the join
//! condition evaluated on the joined row), and LATERAL, which reruns its right side per left row.

use super::*;

pub(super) struct JoinSource<'p> {
    pub(super) left: BoxedSource<'p>,
    pub(super) inner: Vec<Row>,
    pub(super) matched_inner: Vec<bool>,
    pub(super) kind: JoinKind,
    pub(super) on: Option<&'p Expr>,
    pub(super) right_width: usize,
    pub(super) left_width: usize,
    pub(super) current: Option<Row>,
    pub(super) position: usize,
    pub(super) matched: bool,
    /// After the left side ends (right and full joins): the next right row to check.
    pub(super) unmatched: Option<usize>,
}

impl JoinSource<'_> {
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

    /// The next joined row of the current left row, if any.
    fn next_match(&mut self, ctx: &mut ExecCtx) -> Result<Option<Row>> {
        let Some(left) = &self.current else {
            return Ok(None);
        };
        while self.position < self.inner.len() {
            ctx.check_interrupt()?;
            let mut row = left.clone();
            row.extend_from_slice(&self.inner[self.position]);
            let i = self.position;
            self.position += 1;
            let keep = match self.on {
                Some(on) => on.eval_predicate(&row, ctx)?,
                None => true,
            };
            if keep {
                self.matched = true;
                self.matched_inner[i] = true;
                return Ok(Some(row));
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
            if self.current.is_none() {
                match self.left.next(ctx)? {
                    Some(row) => {
                        self.current = Some(row);
                        self.position = 0;
                        self.matched = false;
                    }
                    None if matches!(self.kind, JoinKind::Right | JoinKind::Full) => {
                        return Ok(self.next_unmatched());
                    }
                    None => return Ok(None),
                }
            }
            if let Some(row) = self.next_match(ctx)? {
                return Ok(Some(row));
            }
            let left = self.current.take().unwrap_or_default();
            if matches!(self.kind, JoinKind::Left | JoinKind::Full) && !self.matched {
                let mut row = left;
                row.extend(std::iter::repeat_n(Value::Null, self.right_width));
                return Ok(Some(row));
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
