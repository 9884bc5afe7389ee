//! Privileges: which role may read and write which relation (PostgreSQL's ACL checks).
//!
//! A session runs as a role. The names that are not roles of the catalog stand for the
//! bootstrap superuser (PostgreSQL's `postgres`; SteadyDB has no fixed name for it): a session
//! that logs in under such a name, with the server's password or trusted on loopback, may do
//! everything, as before roles existed, and so may a role created SUPERUSER. Any other role
//! needs a grant (to itself or to PUBLIC) for each relation a statement reads or writes:
//!
//! * the binder records what a statement needs ([`Required`]): SELECT on each table and view it
//!   names in FROM (a view's own tables are the view owner's business, as in PostgreSQL, and
//!   every view is owned by the bootstrap superuser); INSERT, UPDATE or DELETE on a write's
//!   target, and SELECT on it too when the write reads its rows (a WHERE clause, FROM / USING,
//!   RETURNING), or UPDATE for `ON CONFLICT DO UPDATE`;
//! * [`check`] runs before each execution of the plan, kept plans included, so a REVOKE takes
//!   effect at the next statement; a denial is SQLSTATE 42501, "permission denied for table t".
//!
//! Objects belong to the bootstrap superuser: a role that is not a superuser creates, alters
//! and drops nothing (42501, as PostgreSQL 15 refuses CREATE in schema `public` to ordinary
//! roles), and may TRUNCATE a table only with the TRUNCATE privilege. System views are readable
//! by every role; sequences are usable by every role (privileges on sequences are refused, not
//! ignored, by GRANT).

use std::sync::Arc;

use steady_engine::engine::Engine;
use steady_engine::role::Grants;
use steady_types::Value;

use crate::error::{Result, SqlError};

/// A privilege on a relation; `letter` is its `aclitem` letter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Privilege {
    Select,
    Insert,
    Update,
    Delete,
    Truncate,
    References,
    Trigger,
}

impl Privilege {
    /// Every privilege a table has, in `aclitem` order (`arwdDxt`).
    pub const ALL: [Privilege; 7] = [
        Privilege::Insert,
        Privilege::Select,
        Privilege::Update,
        Privilege::Delete,
        Privilege::Truncate,
        Privilege::References,
        Privilege::Trigger,
    ];

    pub fn letter(self) -> char {
        match self {
            Privilege::Select => 'r',
            Privilege::Insert => 'a',
            Privilege::Update => 'w',
            Privilege::Delete => 'd',
            Privilege::Truncate => 'D',
            Privilege::References => 'x',
            Privilege::Trigger => 't',
        }
    }

    pub fn keyword(self) -> &'static str {
        match self {
            Privilege::Select => "SELECT",
            Privilege::Insert => "INSERT",
            Privilege::Update => "UPDATE",
            Privilege::Delete => "DELETE",
            Privilege::Truncate => "TRUNCATE",
            Privilege::References => "REFERENCES",
            Privilege::Trigger => "TRIGGER",
        }
    }

    pub fn from_keyword(keyword: &str) -> Option<Privilege> {
        Privilege::ALL
            .into_iter()
            .find(|p| p.keyword().eq_ignore_ascii_case(keyword))
    }
}

/// What a relation is, for messages ("permission denied for view v").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RelationKind {
    Table,
    View,
}

impl RelationKind {
    pub fn word(self) -> &'static str {
        match self {
            RelationKind::Table => "table",
            RelationKind::View => "view",
        }
    }
}

/// A privilege a statement needs on a relation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Required {
    /// The relation's id (a table's or a view's).
    pub relation: u64,
    pub name: String,
    pub kind: RelationKind,
    pub privilege: Privilege,
}

/// Fails with 42501 unless role `role` (None: the bootstrap superuser) holds every privilege
/// in `required`.
pub fn check(engine: &Arc<Engine>, role: Option<&str>, required: &[Required]) -> Result<()> {
    let Some(role) = role else { return Ok(()) };
    if required.is_empty() || is_superuser(engine, Some(role))? {
        return Ok(());
    }
    for need in required {
        if !allows(&engine.grants(need.relation)?, role, need.privilege) {
            return Err(denied(need.kind, &need.name));
        }
    }
    Ok(())
}

/// Whether `role` (None: the bootstrap superuser) is a superuser. A role dropped while its
/// session runs is none.
pub fn is_superuser(engine: &Arc<Engine>, role: Option<&str>) -> Result<bool> {
    match role {
        None => Ok(true),
        Some(role) => Ok(engine.role(role)?.is_some_and(|r| r.superuser)),
    }
}

/// Whether `grants` give `role`, or PUBLIC, `privilege`.
pub fn allows(grants: &Grants, role: &str, privilege: Privilege) -> bool {
    [role, ""].iter().any(|grantee| {
        grants
            .get(*grantee)
            .is_some_and(|letters| letters.contains(privilege.letter()))
    })
}

/// `letters` with `privileges` added (or taken away when `revoke`), in `aclitem` order.
pub fn change_letters(letters: &str, privileges: &[Privilege], revoke: bool) -> String {
    Privilege::ALL
        .into_iter()
        .filter(|p| {
            let held = letters.contains(p.letter());
            match revoke {
                true => held && !privileges.contains(p),
                false => held || privileges.contains(p),
            }
        })
        .map(Privilege::letter)
        .collect()
}

/// The 42501 of a relation the role may not use.
pub fn denied(kind: RelationKind, name: &str) -> SqlError {
    SqlError::new(
        "42501",
        format!("permission denied for {} {name}", kind.word()),
    )
}

/// The 42501 of a statement only a superuser (the objects' owner) may run.
pub fn must_be_owner(kind: RelationKind, name: &str) -> SqlError {
    SqlError::new("42501", format!("must be owner of {} {name}", kind.word()))
}

/// A relation's `relacl`: NULL without grants (the default: everything for its owner), else
/// the owner's entry and each grantee's, as PostgreSQL materialises them on the first GRANT.
pub fn acl_value(grants: &Grants, owner: &str) -> Value {
    if grants.is_empty() {
        return Value::Null;
    }
    let owner = crate::types::quote_ident(owner);
    let all: String = Privilege::ALL.into_iter().map(Privilege::letter).collect();
    let mut items = vec![format!("{owner}={all}/{owner}")];
    for (grantee, letters) in grants {
        let grantee = match grantee.as_str() {
            "" => String::new(),
            name => crate::types::quote_ident(name),
        };
        items.push(format!("{grantee}={letters}/{owner}"));
    }
    let items: Vec<Value> = items.into_iter().map(Value::Text).collect();
    Value::Text(steady_types::array::array_text(&items))
}

/// A SCRAM-SHA-256 verifier's parts (base64 decoded).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScramVerifier {
    pub iterations: usize,
    pub salt: Vec<u8>,
    pub stored_key: Vec<u8>,
    pub server_key: Vec<u8>,
}

impl ScramVerifier {
    /// Parses PostgreSQL's `SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>`.
    pub fn parse(text: &str) -> Option<ScramVerifier> {
        use base64::Engine as _;
        let decode = |s: &str| base64::engine::general_purpose::STANDARD.decode(s).ok();
        let rest = text.strip_prefix("SCRAM-SHA-256$")?;
        let (params, keys) = rest.split_once('$')?;
        let (iterations, salt) = params.split_once(':')?;
        let (stored_key, server_key) = keys.split_once(':')?;
        let verifier = ScramVerifier {
            iterations: iterations.parse().ok().filter(|&i| i > 0)?,
            salt: decode(salt)?,
            stored_key: decode(stored_key)?,
            server_key: decode(server_key)?,
        };
        (verifier.stored_key.len() == 32 && verifier.server_key.len() == 32).then_some(verifier)
    }
}
