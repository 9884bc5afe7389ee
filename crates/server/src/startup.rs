//! Connection startup: authentication, the parameters reported to the client, and the session.
//!
//! Without a configured password, clients on the loopback interface are trusted (any user name;
//! any database name means the one database) and others are refused with 28000. With a password,
//! every client authenticates with SCRAM-SHA-256: a role of the catalog against its own
//! password's verifier (a role without one cannot log in), any other user name — the bootstrap
//! superuser's — against the configured password. A role without LOGIN is refused (28000)
//! either way.
//!
//! After authentication the settings the client asked for — its `options` switches, then its
//! other startup parameters, as PostgreSQL applies them — become the new session's values and
//! its RESET values; one that is unknown or invalid ends the connection with a FATAL error
//! carrying the SQLSTATE a SET would get. The server then reports ParameterStatus values (the
//! session's own for the reported settings) clients branch on — notably
//! `server_version` 15.x, so psql 15 and pgbench pick the SQL they send a PostgreSQL 15 — then
//! BackendKeyData (registered for cancel requests) and ReadyForQuery.

use std::collections::hash_map::RandomState;
use std::collections::HashMap;
use std::fmt::Debug;
use std::hash::BuildHasher;
use std::sync::Arc;

use async_trait::async_trait;
use futures::Sink;
use pgwire::api::auth::mechanism::AuthMechanismFactory;
use pgwire::api::auth::sasl::scram::{gen_salted_password, ScramAuth, ScramSecret};
use pgwire::api::auth::{
    protocol_negotiation, save_startup_parameters_to_metadata, AuthOutcome, AuthSource, LoginInfo,
    Password, ServerParameterProvider, StartupHandler,
};
use pgwire::api::{ClientInfo, METADATA_USER};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::{PgWireBackendMessage, PgWireFrontendMessage};
use steady_sql::execution::activity::Peer;
use steady_sql::execution::privileges::ScramVerifier;
use steady_sql::execution::settings::{REPORTED_PARAMETERS, SERVER_VERSION};
use steady_sql::Database;

use crate::connection::Connection;
use crate::error::fatal;

/// The user name of a client that sends none.
const DEFAULT_USER: &str = "steady";

/// SCRAM's PBKDF2 iteration count (PostgreSQL's default).
const SCRAM_ITERATIONS: usize = 4096;

/// The SCRAM credentials of the configured password, and the roles of the database.
struct PasswordSource {
    salt: Vec<u8>,
    salted_password: Vec<u8>,
    db: Arc<Database>,
}

impl Debug for PasswordSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("PasswordSource")
    }
}

#[async_trait]
impl AuthSource for PasswordSource {
    async fn get_password(&self, _login: &LoginInfo) -> PgWireResult<Password> {
        Ok(Password::new(
            Some(self.salt.clone()),
            self.salted_password.clone(),
        ))
    }

    async fn get_scram_secret(&self, login: &LoginInfo) -> PgWireResult<(ScramSecret, Option<()>)> {
        let user = login.user().unwrap_or(DEFAULT_USER);
        let Some(password) = login_role(&self.db, user)? else {
            let secret = ScramSecret::SaltedPassword {
                salt: self.salt.clone(),
                salted_password: self.salted_password.clone(),
            };
            return Ok((secret, None));
        };
        match password.as_deref().and_then(ScramVerifier::parse) {
            Some(verifier) => Ok((
                ScramSecret::Verifier {
                    salt: verifier.salt,
                    iterations: verifier.iterations,
                    stored_key: verifier.stored_key,
                    server_key: verifier.server_key,
                },
                None,
            )),
            None => Err(fatal(
                "28P01",
                format!("password authentication failed for user \"{user}\""),
            )),
        }
    }
}

/// If `user` is a role of the catalog, its password verifier (None: it has no password); 28000
/// if it may not log in.
fn login_role(db: &Database, user: &str) -> PgWireResult<Option<Option<String>>> {
    let role = db
        .engine()
        .role(user)
        .map_err(|e| fatal("XX000", e.to_string()))?;
    match role {
        Some(role) if !role.login => Err(fatal(
            "28000",
            format!("role \"{user}\" is not permitted to log in"),
        )),
        other => Ok(other.map(|role| role.password)),
    }
}

/// SCRAM-SHA-256 with `password` for the bootstrap superuser, and each role's own.
pub fn scram(password: &str, db: &Arc<Database>) -> ScramAuth {
    let salt = random_bytes();
    let source = PasswordSource {
        salted_password: gen_salted_password(password, &salt, SCRAM_ITERATIONS),
        salt,
        db: Arc::clone(db),
    };
    let mut auth = ScramAuth::new(Arc::new(source));
    auth.set_iterations(SCRAM_ITERATIONS);
    auth
}

/// 16 random bytes from the standard library's randomly keyed hasher.
fn random_bytes() -> Vec<u8> {
    (0..2u8)
        .flat_map(|i| RandomState::new().hash_one(i).to_be_bytes())
        .collect()
}

/// The ParameterStatus values sent after authentication.
pub struct Parameters;

impl ServerParameterProvider for Parameters {
    fn server_parameters<C>(&self, client: &C) -> Option<HashMap<String, String>>
    where
        C: ClientInfo,
    {
        let metadata = client.metadata();
        let user = metadata
            .get(METADATA_USER)
            .map_or(DEFAULT_USER, String::as_str);
        let fixed = [
            ("server_version", SERVER_VERSION),
            ("server_encoding", "UTF8"),
            ("integer_datetimes", "on"),
            ("is_superuser", "on"),
            ("in_hot_standby", "off"),
            ("session_authorization", user),
        ];
        let session = REPORTED_PARAMETERS
            .iter()
            .filter_map(|(name, _)| Some((*name, metadata.get(*name)?.as_str())));
        Some(
            fixed
                .into_iter()
                .chain(session)
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect(),
        )
    }
}

#[async_trait]
impl StartupHandler for Connection {
    async fn on_startup<C>(
        &self,
        client: &mut C,
        message: PgWireFrontendMessage,
    ) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let outcome = match message {
            PgWireFrontendMessage::Startup(ref startup) => {
                protocol_negotiation(client, startup).await?;
                save_startup_parameters_to_metadata(client, startup);
                match &self.shared.scram {
                    Some(scram) => {
                        self.driver
                            .begin_authentication(client, scram.create())
                            .await?
                    }
                    None if client.socket_addr().ip().is_loopback() => {
                        let user = startup
                            .parameters
                            .get("user")
                            .map_or(DEFAULT_USER, String::as_str);
                        login_role(&self.shared.db, user)?;
                        AuthOutcome::Authenticated {
                            identity: None,
                            final_message: None,
                        }
                    }
                    None => {
                        return Err(fatal(
                            "28000",
                            "no password is configured: only loopback clients may connect \
                             (set `password` in steady.toml)",
                        ))
                    }
                }
            }
            PgWireFrontendMessage::PasswordMessageFamily(message) => {
                self.driver.advance_authentication(client, message).await?
            }
            _ => return Ok(()),
        };
        if let AuthOutcome::Authenticated { final_message, .. } = outcome {
            let requested = requested_settings(client.metadata())?;
            let settings = self
                .shared
                .db
                .session_settings(&requested)
                .map_err(|e| fatal(e.code, e.message))?;
            let reported = settings.reported();
            client
                .metadata_mut()
                .extend(reported.into_iter().map(|(k, v)| (k.to_owned(), v)));
            self.driver
                .complete_authentication(client, final_message)
                .await?;
            let metadata = client.metadata();
            let peer = Peer {
                user: metadata
                    .get(METADATA_USER)
                    .map_or(DEFAULT_USER, String::as_str)
                    .to_owned(),
                application_name: settings.show("application_name").unwrap_or_default(),
                address: Some(client.socket_addr()),
            };
            let (pid, secret) = client.pid_and_secret_key();
            self.open(&peer, settings, pid, secret);
        }
        Ok(())
    }
}

/// Startup-packet parameters that are not settings.
const CONNECTION_PARAMETERS: &[&str] = &["user", "database", "options", "replication"];

/// The settings a client asked for when it connected, in the order PostgreSQL applies them: the
/// `-c name=value` / `--name=value` switches of its `options` parameter (`PGOPTIONS`), then
/// every other startup-packet parameter (`DateStyle`, `extra_float_digits`, `TimeZone`...).
/// Protocol extensions (`_pq_.`) are left to protocol negotiation; a replication connection is
/// refused (0A000), and any other switch is a syntax error (42601), as PostgreSQL's are.
fn requested_settings(parameters: &HashMap<String, String>) -> PgWireResult<Vec<(String, String)>> {
    if let Some(replication) = parameters.get("replication") {
        if !matches!(
            replication.to_lowercase().as_str(),
            "false" | "off" | "no" | "0"
        ) {
            return Err(fatal("0A000", "replication connections are not supported"));
        }
    }
    let mut requested = match parameters.get("options") {
        Some(options) => option_switches(options)?,
        None => Vec::new(),
    };
    let mut others: Vec<_> = parameters
        .iter()
        .filter(|(name, _)| {
            !CONNECTION_PARAMETERS.contains(&name.as_str()) && !name.starts_with("_pq_.")
        })
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect();
    others.sort();
    requested.extend(others);
    Ok(requested)
}

/// The settings of an `options` string: its words split at unescaped white space (a backslash
/// takes the next character literally, as PostgreSQL's `pg_split_opts`), read as `-c name=value`,
/// `-cname=value` or `--name=value` (a dash in the name stands for an underscore).
fn option_switches(options: &str) -> PgWireResult<Vec<(String, String)>> {
    let mut words = option_words(options).into_iter();
    let mut switches = Vec::new();
    while let Some(word) = words.next() {
        let assignment = match word.as_str() {
            "-c" => words.next().unwrap_or_default(),
            _ => match word.strip_prefix("--").or_else(|| word.strip_prefix("-c")) {
                Some(rest) => rest.to_owned(),
                None => {
                    return Err(fatal(
                        "42601",
                        format!("invalid command-line argument for server process: {word}"),
                    ))
                }
            },
        };
        let Some((name, value)) = assignment.split_once('=') else {
            return Err(fatal("42601", format!("-c {assignment} requires a value")));
        };
        switches.push((name.replace('-', "_"), value.to_owned()));
    }
    Ok(switches)
}

fn option_words(options: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut chars = options.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => word.extend(chars.next()),
            c if c.is_whitespace() => {
                if !word.is_empty() {
                    words.push(std::mem::take(&mut word));
                }
            }
            c => word.push(c),
        }
    }
    if !word.is_empty() {
        words.push(word);
    }
    words
}
