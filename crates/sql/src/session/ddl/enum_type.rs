//! `CREATE TYPE name AS ENUM (...)`, `ALTER TYPE name ADD VALUE [IF NOT EXISTS] 'label'` and
//! `DROP TYPE [IF EXISTS] name` (the engine's `enum_type` module keeps them). Other kinds of
//! type (composite, range), `ADD VALUE ... BEFORE / AFTER` (which would renumber the stored
//! positions) and renames are refused with 0A000.

use sqlparser::ast;

use super::Ddl;
use crate::error::{Result, SqlError};
use crate::session::QueryResult;
use crate::system::public_object_name;

impl Ddl<'_> {
    pub(super) fn create_type(
        &self,
        name: &ast::ObjectName,
        representation: Option<&ast::UserDefinedTypeRepresentation>,
    ) -> Result<QueryResult> {
        let Some(ast::UserDefinedTypeRepresentation::Enum { labels }) = representation else {
            return Err(SqlError::unsupported("CREATE TYPE other than AS ENUM"));
        };
        let name = public_object_name(name)?;
        if crate::types::builtin_type(&name).is_some() {
            return Err(SqlError::new(
                "42710",
                format!("type \"{name}\" already exists"),
            ));
        }
        let labels = labels.iter().map(|l| l.value.clone()).collect();
        self.txn().create_enum_type(&name, labels)?;
        Ok(QueryResult::command("CREATE TYPE"))
    }

    pub(super) fn alter_type(&self, alter: &ast::AlterType) -> Result<QueryResult> {
        let ast::AlterTypeOperation::AddValue(add) = &alter.operation else {
            return Err(SqlError::unsupported(
                "ALTER TYPE other than ADD VALUE (renames)",
            ));
        };
        if add.position.is_some() {
            return Err(SqlError::unsupported(
                "ALTER TYPE ... ADD VALUE BEFORE or AFTER (a new label goes after the others)",
            ));
        }
        if self.session.block.is_some() {
            return Err(SqlError::new(
                "25001",
                "ALTER TYPE ... ADD cannot run inside a transaction block",
            ));
        }
        let name = public_object_name(&alter.name)?;
        let label = &add.value.value;
        self.txn().add_enum_label(&name, label, add.if_not_exists)?;
        Ok(QueryResult::command("ALTER TYPE"))
    }

    pub(super) fn drop_types(
        &self,
        names: &[ast::ObjectName],
        if_exists: bool,
        cascade: bool,
    ) -> Result<QueryResult> {
        if cascade {
            return Err(SqlError::unsupported("DROP TYPE ... CASCADE"));
        }
        let (names, mut result) =
            super::drop_names(names, if_exists, "type", QueryResult::command("DROP TYPE"))?;
        for name in &names {
            if self.engine().enum_type(name)?.is_none() && !if_exists {
                return Err(SqlError::new(
                    "42704",
                    format!("type \"{name}\" does not exist"),
                ));
            }
        }
        for name in &names {
            if !self.txn().drop_enum_type(name)? {
                let message = format!("type \"{name}\" does not exist, skipping");
                result = result.with_notice("NOTICE", "00000", message);
            }
        }
        Ok(result)
    }
}
