//! Identity columns, `GENERATED { ALWAYS | BY DEFAULT } AS IDENTITY [(START WITH n)]`: an integer
//! column, NOT NULL, whose default is `nextval` of a sequence the table owns (`t_c_seq`, created
//! and dropped with it, as a `serial` column's). ALWAYS refuses a value other than DEFAULT from
//! INSERT and UPDATE (428C9, `planner::bind_write`); COPY may give one, as in PostgreSQL.
//!
//! The sequence options are CREATE SEQUENCE's (`super::sequence`): what SteadyDB's sequences
//! cannot do is refused (0A000) rather than ignored.

use steady_engine::catalog::{ColumnDef, Identity};
use steady_types::DataType;

use super::sequence_name;
use crate::error::{Result, SqlError};

/// Makes `def` an identity column of `table`.
pub(super) fn make_identity(table: &str, def: &mut ColumnDef, identity: Identity) -> Result<()> {
    if !matches!(
        def.data_type,
        DataType::SmallInt | DataType::Integer | DataType::BigInt
    ) {
        return Err(SqlError::new(
            "22023",
            "identity column type must be smallint, integer, or bigint",
        ));
    }
    def.nullable = false;
    def.default = Some(format!("nextval('{}')", sequence_name(table, &def.name)));
    def.identity = Some(identity);
    Ok(())
}
