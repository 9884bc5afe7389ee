//! Visibility: which version of a row a snapshot sees — the in-place version if its writer
//! committed at or before the snapshot (or is the reader), else one seek into the history store —
//! and the history store's inserts and removals.

use super::purge::graveyard_key;
use super::*;

impl Engine {
    /// The version of `pk` that `snapshot` sees, given the in-place record read from `tree`
    /// (`snapshot` None: the newest, as READ UNCOMMITTED reads), from the point of view of
    /// transaction `reader`. When the history store is consulted because the writer had not
    /// committed, the in-place record is read again afterwards: if its writer changed meanwhile (it
    /// rolled back, which puts the old version back in place *before* removing it from history),
    /// the decision is made again. A rollback to a savepoint leaves the replaced version in history,
    /// so the same writer coming back in place (it wrote the row again) cannot mislead this check.
    /// A committed writer's replaced version stays in history for as long as this snapshot is
    /// open, so then one seek is the answer.
    pub(crate) fn visible(
        &self,
        tree: &BTree,
        index: IndexId,
        pk: &[u8],
        mut record: Option<Version>,
        reader: TxnId,
        snapshot: Option<Csn>,
    ) -> Result<Option<Vec<u8>>> {
        loop {
            let Some(version) = record else {
                return Ok(None);
            };
            let Some(snapshot) = snapshot else {
                return Ok((!version.deleted).then_some(version.row));
            };
            let status = self.txns.status(version.writer);
            let seen = matches!(status, TxnStatus::Committed(csn) if csn <= snapshot);
            if version.writer == reader || seen {
                return Ok((!version.deleted).then_some(version.row));
            }
            let old = self.older_version(index, pk, &version, snapshot)?;
            if matches!(status, TxnStatus::Committed(_)) {
                return Ok(old);
            }
            record = self.current_version(tree, index, pk)?;
            if record
                .as_ref()
                .is_some_and(|again| again.writer == version.writer)
            {
                return Ok(old);
            }
        }
    }

    /// The newest version of a row: its in-place record, or its delete mark in the graveyard.
    pub(crate) fn current_version(
        &self,
        tree: &BTree,
        index: IndexId,
        pk: &[u8],
    ) -> Result<Option<Version>> {
        if let Some(bytes) = tree.get(pk)? {
            return Ok(Some(Version::from_record(bytes)?));
        }
        if self.graveyard_length.load(Ordering::Acquire) <= 0 {
            return Ok(None);
        }
        self.graveyard
            .get(&graveyard_key(index, pk))?
            .map(Version::from_record)
            .transpose()
    }

    /// The newest versions of `pks` (ascending), as `current_version` reads each, the tree read
    /// in one walk.
    pub(crate) fn current_versions(
        &self,
        tree: &BTree,
        index: IndexId,
        pks: &[Vec<u8>],
    ) -> Result<Vec<Option<Version>>> {
        let records = tree.get_many(pks)?;
        self.with_buried_marks(index, pks, records, true)
    }

    /// As [`Engine::current_versions`], for a reader at `snapshot`: the graveyard is looked in
    /// only where the snapshot may see a row whose mark is buried there as live (it is older
    /// than some buried mark's writer); otherwise a row not in place is gone for it, as it is for
    /// READ UNCOMMITTED (`None`). Seed 000: a `DELETE ... LIMIT` through an index meets the
    /// entries of the rows deleted before it, which an old snapshot keeps, and each cost a
    /// graveyard descent.
    pub(crate) fn versions_for_snapshot(
        &self,
        tree: &BTree,
        index: IndexId,
        pks: &[Vec<u8>],
        snapshot: Option<Csn>,
    ) -> Result<Vec<Option<Version>>> {
        let records = tree.get_many(pks)?;
        // Loaded after the reads: `bury` raises the CSN before it moves a mark out of the tree,
        // so a mark buried before a read missed its row is counted here.
        let older = snapshot.is_some_and(|s| s < self.graveyard_max_csn.load(Ordering::Acquire));
        self.with_buried_marks(index, pks, records, older)
    }

    /// `records` (read for `pks`) as versions, a row not in place looked for in the graveyard
    /// where `look` and the graveyard holds anything.
    fn with_buried_marks(
        &self,
        index: IndexId,
        pks: &[Vec<u8>],
        records: Vec<Option<Vec<u8>>>,
        look: bool,
    ) -> Result<Vec<Option<Version>>> {
        let look = look && self.graveyard_length.load(Ordering::Acquire) > 0;
        let mut versions = Vec::with_capacity(pks.len());
        for (pk, record) in pks.iter().zip(records) {
            versions.push(match record {
                Some(bytes) => Some(Version::from_record(bytes)?),
                None if look => self
                    .graveyard
                    .get(&graveyard_key(index, pk))?
                    .map(Version::from_record)
                    .transpose()?,
                None => None,
            });
        }
        Ok(versions)
    }

    /// Whether `writer` committed at or before `snapshot`.
    pub(crate) fn committed_by(&self, writer: TxnId, snapshot: Csn) -> bool {
        matches!(self.txns.status(writer), TxnStatus::Committed(csn) if csn <= snapshot)
    }

    /// The row as `snapshot` sees it when it does not see `version`, the newest: the row a delete
    /// mark keeps (every snapshot sees that: see `Version::kept`), else from the history store.
    fn older_version(
        &self,
        index: IndexId,
        pk: &[u8],
        version: &Version,
        snapshot: Csn,
    ) -> Result<Option<Vec<u8>>> {
        match version.kept_version() {
            Some(kept) => Ok(Some(kept.row)),
            None => self.history_version(index, pk, snapshot),
        }
    }

    /// The row as `snapshot` saw it, from the history store: one seek.
    pub(crate) fn history_version(
        &self,
        index: IndexId,
        pk: &[u8],
        snapshot: Csn,
    ) -> Result<Option<Vec<u8>>> {
        let from = history_key(index, pk, snapshot);
        let last = history_last(index, pk);
        let Some(entry) = self
            .history
            .range(Bound::Included(&from), Bound::Included(&last))
            .next()
        else {
            return Ok(None);
        };
        let (_, value) = entry?;
        let old = OldVersion::decode(&value)?;
        Ok((!old.version.deleted).then_some(old.version.row))
    }

    pub(super) fn history_insert(&self, key: &[u8], old: &OldVersion) -> Result<()> {
        if self.history.insert(key, &old.encode())?.is_none() {
            self.history_length.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Removes a history entry if transaction `txn` put it there (the same key may since hold a
    /// version a later transaction replaced); returns the removed version.
    pub(super) fn history_delete_if_superseded_by(
        &self,
        key: &[u8],
        txn: TxnId,
    ) -> Result<Option<OldVersion>> {
        let removed = self
            .history
            .delete_if(key, |bytes| OldVersion::superseded_by_is(bytes, txn))?;
        let Some(bytes) = removed else {
            return Ok(None);
        };
        self.history_length.fetch_sub(1, Ordering::Relaxed);
        Ok(Some(OldVersion::decode(&bytes)?))
    }
}
