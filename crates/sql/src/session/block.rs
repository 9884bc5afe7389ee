//! Transaction blocks: BEGIN (with its isolation level and READ ONLY), COMMIT, ROLLBACK and
//! savepoints, as PostgreSQL runs them; after an error inside a block only ROLLBACK gets through.

use super::*;

impl Session {
    pub(super) fn begin(&mut self, modes: &[ast::TransactionMode]) -> Result<QueryResult> {
        if self.block.is_some() {
            return Ok(QueryResult::command("BEGIN").with_notice(
                "WARNING",
                "25001",
                "there is already a transaction in progress",
            ));
        }
        let mut block = Block {
            txn: None,
            isolation: self.info.settings.default_isolation(),
            read_only: false,
            failed: false,
            savepoints: Vec::new(),
        };
        apply_modes(&mut block, modes);
        self.block = Some(block);
        Ok(QueryResult::command("BEGIN"))
    }

    pub(super) fn commit(&mut self) -> Result<QueryResult> {
        let Some(block) = self.block.take() else {
            return Ok(QueryResult::command("COMMIT").with_notice(
                "WARNING",
                "25P01",
                "there is no transaction in progress",
            ));
        };
        self.end_block_cursors(!block.failed);
        if block.failed {
            if let Some(txn) = block.txn {
                txn.rollback()?;
            }
            return Ok(QueryResult::command("ROLLBACK"));
        }
        if let Some(txn) = block.txn {
            txn.commit()?;
        }
        Ok(QueryResult::command("COMMIT"))
    }

    pub(super) fn rollback(&mut self) -> Result<QueryResult> {
        let Some(block) = self.block.take() else {
            return Ok(QueryResult::command("ROLLBACK").with_notice(
                "WARNING",
                "25P01",
                "there is no transaction in progress",
            ));
        };
        self.end_block_cursors(false);
        if let Some(txn) = block.txn {
            txn.rollback()?;
        }
        Ok(QueryResult::command("ROLLBACK"))
    }

    pub(super) fn savepoint(&mut self, name: &str) -> Result<QueryResult> {
        let engine = Arc::clone(self.db.engine());
        let Some(_) = self.block.as_ref() else {
            return Err(no_block("SAVEPOINT"));
        };
        let txn = self.take_block_txn(&engine)?;
        let savepoint = txn.savepoint();
        let block = self.block.as_mut().expect("inside a block");
        block.txn = Some(txn);
        block.savepoints.push((name.to_owned(), savepoint));
        Ok(QueryResult::command("SAVEPOINT"))
    }

    pub(super) fn find_savepoint(&self, name: &str) -> Result<usize> {
        let block = self
            .block
            .as_ref()
            .ok_or_else(|| no_block("ROLLBACK TO SAVEPOINT"))?;
        block
            .savepoints
            .iter()
            .rposition(|(n, _)| n == name)
            .ok_or_else(|| SqlError::new("3B001", format!("savepoint \"{name}\" does not exist")))
    }

    pub(super) fn rollback_to(&mut self, name: &str) -> Result<QueryResult> {
        let position = self.find_savepoint(name)?;
        let block = self.block.as_mut().expect("inside a block");
        block.savepoints.truncate(position + 1);
        let savepoint = block.savepoints[position].1.clone();
        if let Some(txn) = block.txn.as_mut() {
            txn.rollback_to(&savepoint)?;
        }
        block.failed = false;
        Ok(QueryResult::command("ROLLBACK"))
    }

    pub(super) fn release(&mut self, name: &str) -> Result<QueryResult> {
        if self.block.is_none() {
            return Err(no_block("RELEASE SAVEPOINT"));
        }
        let position = self.find_savepoint(name)?;
        let block = self.block.as_mut().expect("inside a block");
        block.savepoints.truncate(position);
        Ok(QueryResult::command("RELEASE"))
    }
}

pub(super) fn no_block(what: &str) -> SqlError {
    SqlError::new(
        "25P01",
        format!("{what} can only be used in transaction blocks"),
    )
}

pub(super) fn apply_modes(block: &mut Block, modes: &[ast::TransactionMode]) {
    for mode in modes {
        match mode {
            ast::TransactionMode::IsolationLevel(level) => {
                block.isolation = convert_isolation(level)
            }
            ast::TransactionMode::AccessMode(access) => {
                block.read_only = matches!(access, ast::TransactionAccessMode::ReadOnly)
            }
        }
    }
}

pub(super) fn convert_isolation(level: &ast::TransactionIsolationLevel) -> Isolation {
    match level {
        ast::TransactionIsolationLevel::ReadUncommitted => Isolation::ReadUncommitted,
        ast::TransactionIsolationLevel::ReadCommitted => Isolation::ReadCommitted,
        ast::TransactionIsolationLevel::RepeatableRead
        | ast::TransactionIsolationLevel::Snapshot => Isolation::RepeatableRead,
        ast::TransactionIsolationLevel::Serializable => Isolation::Serializable,
    }
}
