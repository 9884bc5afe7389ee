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
        self.info.foreign_key_checks.lock().clear();
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
            self.info.foreign_key_checks.lock().clear();
            if let Some(txn) = block.txn {
                txn.rollback()?;
            }
            return Ok(QueryResult::command("ROLLBACK"));
        }
        if let Some(mut txn) = block.txn {
            let engine = Arc::clone(self.db.engine());
            let checked = self.run_deferred_checks(&engine, &mut txn);
            self.info.foreign_key_checks.lock().clear();
            if let Err(err) = checked {
                txn.rollback()?;
                return Err(err);
            }
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
        self.info.foreign_key_checks.lock().clear();
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
        let mark = self.info.foreign_key_checks.lock().mark();
        let block = self.block.as_mut().expect("inside a block");
        block.txn = Some(txn);
        block.savepoints.push((name.to_owned(), savepoint, mark));
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
            .rposition(|(n, _, _)| n == name)
            .ok_or_else(|| SqlError::new("3B001", format!("savepoint \"{name}\" does not exist")))
    }

    pub(super) fn rollback_to(&mut self, name: &str) -> Result<QueryResult> {
        let position = self.find_savepoint(name)?;
        let block = self.block.as_mut().expect("inside a block");
        block.savepoints.truncate(position + 1);
        let (_, savepoint, mark) = block.savepoints[position].clone();
        if let Some(txn) = block.txn.as_mut() {
            txn.rollback_to(&savepoint)?;
        }
        self.info.foreign_key_checks.lock().rollback_to(mark);
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

impl Session {
    /// SET CONSTRAINTS: when the named (or all) deferrable foreign keys are checked for the rest
    /// of the transaction; deferred checks of the keys it makes IMMEDIATE are made now. Outside a
    /// block it has no effect beyond a WARNING (25P01), as in PostgreSQL.
    pub(super) fn set_constraints(
        &mut self,
        names: Option<&[String]>,
        deferred: bool,
    ) -> Result<QueryResult> {
        let engine = Arc::clone(self.db.engine());
        for name in names.into_iter().flatten() {
            crate::execution::fk_checks::check_named(&engine, name)?;
        }
        let done = QueryResult::command("SET CONSTRAINTS");
        if self.block.is_none() {
            return Ok(done.with_notice(
                "WARNING",
                "25P01",
                "SET CONSTRAINTS can only be used in transaction blocks",
            ));
        }
        let named: Vec<Option<String>> = match names {
            None => vec![None],
            Some(names) => names.iter().cloned().map(Some).collect(),
        };
        let now: Vec<_> = named
            .into_iter()
            .flat_map(|name| self.info.foreign_key_checks.lock().set_mode(name, deferred))
            .collect();
        self.in_transaction(|session, txn| {
            session.run_checks(&engine, txn, now)?;
            Ok(done)
        })
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
