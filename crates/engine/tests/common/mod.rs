//! Helpers shared by the engine's test binaries.

use steady_engine::catalog::ColumnDef;
use steady_types::DataType;

/// A NOT NULL integer column named `name`.
pub fn int_column(name: &str) -> ColumnDef {
    ColumnDef {
        nullable: false,
        ..ColumnDef::plain(name, DataType::Integer)
    }
}
