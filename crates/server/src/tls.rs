//! TLS for client connections (`ssl = true` in steady.toml): the server's certificate chain and
//! private key, read from PEM files when the server starts, make a rustls acceptor that pgwire
//! uses when a client asks for SSL (psql's `sslmode=require`). Clients that do not ask still
//! connect in the clear, as with PostgreSQL's `ssl = on` and a `host` line in pg_hba.conf.
//!
//! Invariant: a server configured for TLS never starts without a usable certificate and key; a
//! missing, unreadable or mismatched file is a start-up error naming the file.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::{self, ServerConfig};
use tokio_rustls::TlsAcceptor;

use crate::error::ServerError;

/// Where the server's certificate chain and private key are (PEM).
#[derive(Debug, Clone)]
pub struct TlsFiles {
    pub certificate: PathBuf,
    pub key: PathBuf,
}

/// The acceptor for `files`.
pub fn acceptor(files: &TlsFiles) -> Result<TlsAcceptor, ServerError> {
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_file_iter(&files.certificate)
        .and_then(|certificates| certificates.collect::<Result<_, _>>())
        .map_err(|err| tls_error(&files.certificate, err))?;
    if chain.is_empty() {
        return Err(tls_error(&files.certificate, "no certificate in the file"));
    }
    let key = PrivateKeyDer::from_pem_file(&files.key).map_err(|err| tls_error(&files.key, err))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|err| tls_error(&files.certificate, err))?
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|err| tls_error(&files.key, err))?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}

fn tls_error(path: &Path, err: impl std::fmt::Display) -> ServerError {
    ServerError::Tls(format!("{}: {err}", path.display()))
}
