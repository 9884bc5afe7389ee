//! Scans: the rows of a range as a transaction sees them, read in batches per descent and merged
//! with the graveyard when an old snapshot needs it.

use super::*;

impl Scan {
    /// Reads the next batch of in-place records, holding no latch between batches. With an old
    /// snapshot, rows whose delete marks went to the graveyard are merged in. The writers' statuses
    /// are looked up once per batch; only rows whose in-place version the snapshot cannot see go
    /// to the history store.
    fn refill(&mut self) -> Result<()> {
        let start = self.next_start.clone();
        let end = self.end.as_ref().map(Vec::as_slice);
        let mut records = Vec::new();
        let range = self.tree.range(start.as_ref().map(Vec::as_slice), end);
        for entry in range.take(SCAN_BATCH) {
            let (pk, bytes) = entry?;
            records.push((pk, Version::from_record(bytes)?));
        }
        self.exhausted = records.len() < SCAN_BATCH;
        let batch_end = match (self.exhausted, records.last()) {
            (false, Some((last, _))) => Bound::Included(last.clone()),
            _ => self.end.clone(),
        };
        if let Some((last, _)) = records.last() {
            self.next_start = Bound::Excluded(last.clone());
        }
        let engine = Arc::clone(&self.engine);
        let buried = engine.buried_in_range(
            self.index,
            start.as_ref().map(Vec::as_slice),
            batch_end.as_ref().map(Vec::as_slice),
            self.snapshot,
        )?;
        if !buried.is_empty() {
            records.extend(buried);
            records.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        }
        let settled = engine.txns.settled_below();
        let unsettled = records
            .iter()
            .map(|(_, v)| v.writer)
            .filter(|&w| w >= settled);
        let statuses = engine.txns.statuses(unsettled);
        for (pk, version) in records {
            let in_place = self.snapshot.is_none_or(|snapshot| {
                version.writer == self.reader
                    || version.writer < settled
                    || matches!(statuses[&version.writer], TxnStatus::Committed(csn) if csn <= snapshot)
            });
            let seen = if in_place {
                (!version.deleted).then_some(version.row)
            } else {
                let tree = &self.tree;
                let (index, reader, snapshot) = (self.index, self.reader, self.snapshot);
                engine.visible(tree, index, &pk, Some(version), reader, snapshot)?
            };
            if let Some(row) = seen {
                self.batch.push_back((pk, row));
            }
        }
        Ok(())
    }
}

impl Iterator for Scan {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(row) = self.batch.pop_front() {
                return Some(Ok(row));
            }
            if self.exhausted {
                return None;
            }
            if let Err(err) = self.refill() {
                self.exhausted = true;
                return Some(Err(err));
            }
        }
    }
}
