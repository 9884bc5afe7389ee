//! Scans: the rows of a range as a transaction sees them, read a leaf at a time and merged with
//! the graveyard when an old snapshot needs it.
//!
//! A leaf's records are copied out under its latch into one reused buffer; visibility is then
//! decided on the copies in place, so a row the snapshot sees in place costs no allocation until
//! the caller asks for owned bytes ([`Scan::next_entry`] lends them).

use super::*;

/// A row of the current leaf the scan's transaction sees.
enum Seen {
    /// The in-place record at this entry of the leaf's copy.
    InPlace(usize),
    /// An older version, from the history store, of the row at this entry.
    Older(usize, Vec<u8>),
}

/// The leaf a scan is on: its records as stored and the rows of them the transaction sees.
#[derive(Default)]
pub(super) struct ScanLeaf {
    /// Where the scan stands among the tree's leaves.
    walk: LeafWalk,
    records: Entries,
    seen: Vec<Seen>,
    /// The next of `seen` to give.
    position: usize,
}

impl Scan {
    /// The space of the tree the scan reads.
    pub(crate) fn space(&self) -> steady_storage::SpaceId {
        self.tree.space().id()
    }

    /// The next row as `(pk, row bytes)`, lent until the next call.
    ///
    /// Inlined where it is called: a scan calls it once per row, and returned through memory its
    /// result was stored in parts and loaded whole, a store-forwarding stall per row.
    #[inline]
    pub fn next_entry(&mut self) -> Option<Result<(&[u8], &[u8])>> {
        if self.leaf.position == self.leaf.seen.len() {
            if let Err(err) = self.next_leaf_with_rows()? {
                return Some(Err(err));
            }
        }
        let leaf = &mut self.leaf;
        let seen = &leaf.seen[leaf.position];
        leaf.position += 1;
        Some(match seen {
            Seen::InPlace(entry) => {
                let key = leaf.records.key(*entry);
                Version::record_row(leaf.records.value(*entry)).map(|row| (key, row))
            }
            Seen::Older(entry, row) => Ok((leaf.records.key(*entry), row.as_slice())),
        })
    }

    /// Reads leaves until one has a row to give: None at the end of the range.
    #[inline(never)]
    fn next_leaf_with_rows(&mut self) -> Option<Result<()>> {
        while self.leaf.position == self.leaf.seen.len() {
            self.next_start.as_ref()?;
            if let Err(err) = self.read_next_leaf() {
                self.next_start = None;
                self.leaf.seen.clear();
                return Some(Err(err));
            }
        }
        Some(Ok(()))
    }

    /// Reads the next leaf of the range, holding no latch once it is copied. With an old
    /// snapshot, rows whose delete marks went to the graveyard are merged in. The writers'
    /// statuses are looked up once per leaf; only rows whose in-place version the snapshot cannot
    /// see go to the history store.
    fn read_next_leaf(&mut self) -> Result<()> {
        let Some(start) = self.next_start.take() else {
            return Ok(());
        };
        let start = start.as_ref().map(Vec::as_slice);
        let leaf = &mut self.leaf;
        leaf.seen.clear();
        leaf.position = 0;
        let end = self.end.as_ref().map(Vec::as_slice);
        let next = self
            .tree
            .read_leaf(&mut leaf.walk, start, end, &mut leaf.records)?;
        let leaf_end = match &next {
            Some(key) => Bound::Excluded(key.as_slice()),
            None => end,
        };
        let engine = Arc::clone(&self.engine);
        let buried = engine.buried_in_range(self.index, start, leaf_end, self.snapshot)?;
        if !buried.is_empty() {
            // Purge puts a delete mark in the graveyard before it leaves the tree: one moved
            // between the two reads is in both, and counts once.
            let in_leaf = |pk: &[u8], writer: TxnId| {
                let record = leaf.records.find(pk).map(|at| leaf.records.value(at));
                record.and_then(|r| Version::in_record(r).ok()) == Some((writer, true))
            };
            let moved: Vec<bool> = buried.iter().map(|(pk, v)| in_leaf(pk, v.writer)).collect();
            for ((pk, version), moved) in buried.iter().zip(moved) {
                if !moved {
                    leaf.records.push(pk, &version.encode());
                }
            }
            leaf.records.sort_by_key();
        }
        self.next_start = next.map(Bound::Included);
        self.note_visible_rows(&engine)
    }

    /// Fills `seen` with the rows of the leaf's records the transaction sees.
    fn note_visible_rows(&mut self, engine: &Engine) -> Result<()> {
        let (reader, snapshot) = (self.reader, self.snapshot);
        let records = &self.leaf.records;
        let settled = engine.txns.settled_below();
        let mut unsettled = Vec::new();
        for entry in 0..records.len() {
            let (writer, _) = Version::in_record(records.value(entry))?;
            if writer >= settled && writer != reader {
                unsettled.push(writer);
            }
        }
        let statuses = if unsettled.is_empty() {
            HashMap::new()
        } else {
            engine.txns.statuses(unsettled)
        };
        for entry in 0..records.len() {
            let (writer, deleted) = Version::in_record(records.value(entry))?;
            let in_place = snapshot.is_none_or(|snapshot| {
                writer == reader
                    || writer < settled
                    || matches!(statuses[&writer], TxnStatus::Committed(csn) if csn <= snapshot)
            });
            if in_place {
                if !deleted {
                    self.leaf.seen.push(Seen::InPlace(entry));
                }
                continue;
            }
            let version = Version::from_record(records.value(entry).to_vec())?;
            let (tree, pk) = (&self.tree, records.key(entry));
            if let Some(row) =
                engine.visible(tree, self.index, pk, Some(version), reader, snapshot)?
            {
                self.leaf.seen.push(Seen::Older(entry, row));
            }
        }
        Ok(())
    }
}

impl Iterator for Scan {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        let entry = self.next_entry()?;
        Some(entry.map(|(pk, row)| (pk.to_vec(), row.to_vec())))
    }
}
