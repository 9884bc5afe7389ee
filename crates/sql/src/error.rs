//! The error every SQL statement can end with: a PostgreSQL SQLSTATE, its message and the optional
//! DETAIL and HINT lines, as a client shows them.
//!
//! Engine and type errors convert with their own SQLSTATEs; parser errors are 42601. `Display`
//! prints `SQLSTATE: message`, the form the sqllogictest corpus matches on.

use std::fmt;

use steady_engine::error::EngineError;
use steady_types::TypeError;

/// A failed statement.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct SqlError {
    /// The five-character SQLSTATE.
    pub code: &'static str,
    pub message: String,
    pub detail: Option<String>,
    pub hint: Option<String>,
}

impl fmt::Display for SqlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl SqlError {
    pub fn new(code: &'static str, message: impl Into<String>) -> Self {
        SqlError {
            code,
            message: message.into(),
            detail: None,
            hint: None,
        }
    }

    pub fn with_detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = Some(detail.into());
        self
    }

    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// 42601.
    pub fn syntax(message: impl Into<String>) -> Self {
        SqlError::new("42601", message)
    }

    /// 0A000.
    pub fn unsupported(what: impl fmt::Display) -> Self {
        SqlError::new("0A000", format!("{what} is not supported"))
    }

    /// 42P01.
    pub fn undefined_table(name: &str) -> Self {
        SqlError::new("42P01", format!("relation \"{name}\" does not exist"))
    }

    /// 42703.
    pub fn undefined_column(name: &str) -> Self {
        SqlError::new("42703", format!("column \"{name}\" does not exist"))
    }

    /// 42804.
    pub fn datatype_mismatch(message: impl Into<String>) -> Self {
        SqlError::new("42804", message)
    }

    /// 42883: no operator or function for these argument types.
    pub fn undefined_function(message: impl Into<String>) -> Self {
        SqlError::new("42883", message)
    }

    /// 42883 `operator does not exist: left op right`, with PostgreSQL's hint.
    pub fn no_operator(
        left: &dyn fmt::Display,
        op: &dyn fmt::Display,
        right: &dyn fmt::Display,
    ) -> Self {
        SqlError::undefined_function(format!("operator does not exist: {left} {op} {right}"))
            .with_hint(
                "No operator matches the given name and argument types. You might need to add explicit type casts.",
            )
    }

    /// Whether the transaction may simply be retried (serialization failure, deadlock).
    pub fn is_retryable(&self) -> bool {
        matches!(self.code, "40001" | "40P01")
    }
}

impl From<EngineError> for SqlError {
    fn from(err: EngineError) -> Self {
        match err {
            EngineError::Conversion(err) => err.into(),
            err => SqlError::new(err.sqlstate(), err.to_string()),
        }
    }
}

impl From<TypeError> for SqlError {
    fn from(err: TypeError) -> Self {
        let detail = err.detail();
        let mut sql = SqlError::new(err.sqlstate(), err.to_string());
        sql.detail = detail;
        sql
    }
}

impl From<sqlparser::parser::ParserError> for SqlError {
    fn from(err: sqlparser::parser::ParserError) -> Self {
        let message = match err {
            sqlparser::parser::ParserError::TokenizerError(m)
            | sqlparser::parser::ParserError::ParserError(m) => m,
            sqlparser::parser::ParserError::RecursionLimitExceeded => {
                return SqlError::new("54001", "statement is too deeply nested");
            }
        };
        SqlError::syntax(format!("syntax error: {message}"))
    }
}

pub type Result<T, E = SqlError> = std::result::Result<T, E>;
