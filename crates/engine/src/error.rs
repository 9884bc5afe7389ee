//! The one error type of the engine, each with the PostgreSQL SQLSTATE a client should see.

use steady_storage::StorageError;

use crate::lock::LockError;

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(transparent)]
    Storage(#[from] StorageError),
    #[error(transparent)]
    Lock(#[from] LockError),
    #[error("could not serialize access due to concurrent update")]
    SerializationFailure,
    #[error("could not serialize access due to read/write dependencies among transactions")]
    SerializationDependency,
    #[error("duplicate key value violates unique constraint on index {index}")]
    UniqueViolation { index: u64 },
    #[error("snapshot too old: it is older than max_snapshot_age")]
    SnapshotTooOld,
    #[error("no index {0}")]
    NoSuchIndex(u64),
    #[error("relation \"{0}\" does not exist")]
    NoSuchTable(String),
    #[error("relation \"{0}\" already exists")]
    DuplicateTable(String),
    #[error("index \"{0}\" does not exist")]
    NoSuchIndexName(String),
    #[error("relation \"{0}\" already exists")]
    DuplicateIndex(String),
    #[error("index \"{0}\" was built after this transaction's snapshot")]
    IndexNotReady(String),
    #[error("relation \"{0}\" was dropped, truncated or rebuilt; repeat the statement")]
    TableChanged(String),
    #[error("could not serialize access: relation \"{0}\" was truncated or rebuilt after this transaction's snapshot was taken")]
    TableRewritten(String),
    #[error("column of the primary key of \"{0}\" contains null values")]
    NotNullViolation(String),
    #[error("canceling statement due to statement timeout")]
    StatementTimeout,
    #[error("the transaction has already ended")]
    TransactionEnded,
    #[error("column \"{column}\" of type {ty} cannot be part of a primary key or an index")]
    UnsupportedKeyType {
        column: String,
        ty: steady_types::DataType,
    },
    #[error("corrupt engine data: {0}")]
    Corrupt(String),
    #[error("nextval: reached maximum value of sequence \"{name}\" ({max})")]
    SequenceExhausted { name: String, max: i64 },
    #[error("type \"{0}\" already exists")]
    DuplicateType(String),
    #[error("type \"{0}\" does not exist")]
    NoSuchType(String),
    #[error("cannot drop type {name} because other objects depend on it (column {column} of table {table})")]
    TypeInUse {
        name: String,
        table: String,
        column: String,
    },
    #[error("enum label \"{0}\" already exists")]
    DuplicateLabel(String),
    /// A stored value that does not convert to a column's new type (ALTER COLUMN ... TYPE).
    #[error(transparent)]
    Conversion(#[from] steady_types::TypeError),
}

impl EngineError {
    /// The PostgreSQL SQLSTATE of this error.
    pub fn sqlstate(&self) -> &'static str {
        match self {
            EngineError::Storage(StorageError::KeyTooLarge { .. })
            | EngineError::Storage(StorageError::ValueTooLarge { .. }) => "54000",
            EngineError::Storage(StorageError::Corrupt { .. }) | EngineError::Corrupt(_) => "XX001",
            EngineError::SequenceExhausted { .. } => "2200H",
            EngineError::Storage(StorageError::Io { source, .. })
                if source.kind() == std::io::ErrorKind::StorageFull =>
            {
                "53100"
            }
            EngineError::Storage(_) => "58030",
            EngineError::Lock(err) => err.sqlstate(),
            EngineError::SerializationFailure | EngineError::SerializationDependency => "40001",
            EngineError::UniqueViolation { .. } => "23505",
            EngineError::SnapshotTooOld => "72000",
            EngineError::NoSuchIndex(_) | EngineError::NoSuchTable(_) => "42P01",
            EngineError::NoSuchIndexName(_) => "42704",
            EngineError::DuplicateTable(_) | EngineError::DuplicateIndex(_) => "42P07",
            EngineError::IndexNotReady(_) => "0A000",
            EngineError::TableChanged(_) | EngineError::TableRewritten(_) => "40001",
            EngineError::NotNullViolation(_) => "23502",
            EngineError::TransactionEnded => "25P01",
            EngineError::StatementTimeout => "57014",
            EngineError::UnsupportedKeyType { .. } => "0A000",
            EngineError::Conversion(err) => err.sqlstate(),
            EngineError::DuplicateType(_) | EngineError::DuplicateLabel(_) => "42710",
            EngineError::NoSuchType(_) => "42704",
            EngineError::TypeInUse { .. } => "2BP01",
        }
    }
}

/// Result of every fallible engine operation.
pub type Result<T> = std::result::Result<T, EngineError>;
