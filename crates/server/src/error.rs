//! The server's own errors ([`ServerError`]: what stops it from serving) and the wire form of the
//! SQL layer's errors and notices (ErrorResponse / NoticeResponse with SQLSTATE, DETAIL, HINT).
//!
//! In the extended protocol an error must travel as `Err(PgWireError::UserError)` so that pgwire
//! skips to the next Sync; [`user_error`] makes that form.

use pgwire::error::{ErrorInfo, PgWireError};
use pgwire::messages::response::{ErrorResponse, NoticeResponse};
use steady_sql::session::Notice;
use steady_sql::SqlError;

/// Why the server could not start or go on serving.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: String,
        source: std::io::Error,
    },
    #[error("cannot read the listening address: {0}")]
    LocalAddr(std::io::Error),
    #[error("cannot start the thread that watches for clients hanging up: {0}")]
    HangupWatch(std::io::Error),
    #[error("cannot set up TLS: {0}")]
    Tls(String),
    #[error("{sessions} session(s) did not stop within the shutdown grace period")]
    ShutdownTimeout { sessions: usize },
}

/// SQLSTATE 57014, PostgreSQL's answer to a cancel request.
pub fn query_canceled() -> SqlError {
    SqlError::new("57014", "canceling statement due to user request")
}

/// The ErrorResponse fields of a failed statement.
pub fn error_info(err: &SqlError) -> ErrorInfo {
    let mut info = ErrorInfo::new("ERROR".to_owned(), err.code.to_owned(), err.message.clone());
    info.detail = err.detail.clone();
    info.hint = err.hint.clone();
    info
}

pub fn error_response(err: &SqlError) -> ErrorResponse {
    error_info(err).into()
}

/// A failed statement as the error pgwire reports (and, in the extended protocol, skips to Sync
/// after).
pub fn user_error(err: &SqlError) -> PgWireError {
    PgWireError::UserError(Box::new(error_info(err)))
}

/// A FATAL error that ends the connection.
pub fn fatal(code: &str, message: impl Into<String>) -> PgWireError {
    PgWireError::UserError(Box::new(ErrorInfo::new(
        "FATAL".to_owned(),
        code.to_owned(),
        message.into(),
    )))
}

pub fn notice_response(notice: &Notice) -> NoticeResponse {
    let mut info = ErrorInfo::new(
        notice.severity.to_owned(),
        notice.code.to_owned(),
        notice.message.clone(),
    );
    info.detail = notice.detail.clone();
    info.into()
}
