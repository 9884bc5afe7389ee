//! Roles and privileges as statements: CREATE ROLE / USER, ALTER ROLE / USER, DROP ROLE / USER,
//! GRANT and REVOKE on tables and views, and SET ROLE / RESET ROLE. What the privileges allow is
//! `execution::privileges`; the engine's `role` module stores them.
//!
//! Passwords are kept as PostgreSQL's SCRAM-SHA-256 verifiers: a clear password is hashed here
//! (a fresh salt, 4096 iterations, as PostgreSQL's `password_encryption = scram-sha-256`), a
//! verifier given as the password (`SCRAM-SHA-256$4096:...`, as `pg_dumpall` writes them) is
//! kept as it is, and an MD5 hash is refused. What SteadyDB does not have is refused rather than
//! ignored: role membership (IN ROLE, ROLE, ADMIN, GRANT role TO role), NOINHERIT, REPLICATION,
//! connection limits, VALID UNTIL, per-role settings, column privileges, WITH GRANT OPTION and
//! privileges on other objects than tables and views.

use sqlparser::ast::{self, Action, AlterRoleOperation, GrantObjects, Privileges, RoleOption};
use steady_engine::engine::Transaction;
use steady_engine::role::RoleDef;

use crate::error::{Result, SqlError};
use crate::execution::privileges::{self, change_letters, Privilege, ScramVerifier};
use crate::session::{QueryResult, Session};
use crate::system::public_object_name;
use crate::types::{normalize_ident, object_name};

/// A role's attributes as CREATE ROLE and ALTER ROLE give them.
#[derive(Default)]
struct RoleOptions {
    superuser: Option<bool>,
    login: Option<bool>,
    create_db: Option<bool>,
    create_role: Option<bool>,
    /// Some(None): PASSWORD NULL.
    password: Option<Option<String>>,
}

impl RoleOptions {
    fn apply(self, role: &mut RoleDef) {
        role.superuser = self.superuser.unwrap_or(role.superuser);
        role.login = self.login.unwrap_or(role.login);
        role.create_db = self.create_db.unwrap_or(role.create_db);
        role.create_role = self.create_role.unwrap_or(role.create_role);
        if let Some(password) = self.password {
            role.password = password;
        }
    }

    fn from_list(options: &[RoleOption]) -> Result<RoleOptions> {
        let mut parsed = RoleOptions::default();
        for option in options {
            match option {
                RoleOption::SuperUser(v) => parsed.superuser = Some(*v),
                RoleOption::Login(v) => parsed.login = Some(*v),
                RoleOption::CreateDB(v) => parsed.create_db = Some(*v),
                RoleOption::CreateRole(v) => parsed.create_role = Some(*v),
                RoleOption::Password(p) => parsed.password = Some(password_verifier(p)?),
                RoleOption::Inherit(true) | RoleOption::BypassRLS(_) => {}
                other => return Err(unsupported_option(&other.to_string())),
            }
        }
        Ok(parsed)
    }

    fn from_create(create: &ast::CreateRole) -> Result<RoleOptions> {
        let refused = [
            (create.inherit == Some(false), "NOINHERIT"),
            (create.replication == Some(true), "REPLICATION"),
            (create.connection_limit.is_some(), "CONNECTION LIMIT"),
            (create.valid_until.is_some(), "VALID UNTIL"),
            (
                !create.in_role.is_empty() || !create.in_group.is_empty(),
                "IN ROLE",
            ),
            (!create.role.is_empty() || !create.user.is_empty(), "ROLE"),
            (!create.admin.is_empty(), "ADMIN"),
        ];
        if let Some((_, option)) = refused.iter().find(|(given, _)| *given) {
            return Err(unsupported_option(option));
        }
        Ok(RoleOptions {
            superuser: create.superuser,
            login: create.login,
            create_db: create.create_db,
            create_role: create.create_role,
            password: create
                .password
                .as_ref()
                .map(password_verifier)
                .transpose()?,
        })
    }
}

fn unsupported_option(option: &str) -> SqlError {
    SqlError::unsupported(format!(
        "role option {option} (roles have no membership, limits or expiry)"
    ))
}

/// The verifier kept for a PASSWORD option: None for NULL or an empty password.
fn password_verifier(password: &ast::Password) -> Result<Option<String>> {
    let ast::Password::Password(expr) = password else {
        return Ok(None);
    };
    let ast::Expr::Value(value) = expr else {
        return Err(SqlError::syntax("PASSWORD takes a string literal"));
    };
    let Some(text) = value.value.clone().into_string() else {
        return Err(SqlError::syntax("PASSWORD takes a string literal"));
    };
    if text.is_empty() {
        return Ok(None);
    }
    if text.starts_with("SCRAM-SHA-256$") {
        return match parse_verifier(&text) {
            true => Ok(Some(text)),
            false => Err(SqlError::new("22023", "malformed SCRAM-SHA-256 verifier")),
        };
    }
    if text.len() == 35 && text.starts_with("md5") {
        return Err(SqlError::unsupported(
            "MD5 password hashes (give the password in clear or as a SCRAM-SHA-256 verifier)",
        ));
    }
    Ok(Some(postgres_protocol::password::scram_sha_256(
        text.as_bytes(),
    )))
}

/// Whether `text` reads as `SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>`.
fn parse_verifier(text: &str) -> bool {
    ScramVerifier::parse(text).is_some()
}

/// Role names PostgreSQL reserves.
fn check_reserved(name: &str) -> Result<()> {
    if name == "public" || name == "none" || name.starts_with("pg_") {
        return Err(SqlError::new(
            "42939",
            format!("role name \"{name}\" is reserved"),
        ));
    }
    Ok(())
}

fn undefined_role(name: &str) -> SqlError {
    SqlError::new("42704", format!("role \"{name}\" does not exist"))
}

impl Session {
    /// Fails with 42501 unless the session's current role is a superuser.
    pub(crate) fn require_superuser(&self, denial: &str) -> Result<()> {
        match privileges::is_superuser(self.db.engine(), self.info.role.as_deref())? {
            true => Ok(()),
            false => Err(SqlError::new("42501", denial.to_owned())),
        }
    }

    /// Whether `name` is the bootstrap superuser this session logged in as.
    pub(crate) fn is_bootstrap_name(&self, name: &str) -> bool {
        self.info.session_role.is_none() && self.info.user == name
    }

    pub(crate) fn create_role(
        &self,
        txn: &mut Transaction,
        create: &ast::CreateRole,
    ) -> Result<QueryResult> {
        self.require_superuser("permission denied to create role")?;
        let options = RoleOptions::from_create(create)?;
        let [name] = create.names.as_slice() else {
            return Err(SqlError::syntax("CREATE ROLE names one role"));
        };
        let name = object_name(name).1;
        check_reserved(&name)?;
        let mut role = RoleDef {
            id: 0,
            name: name.clone(),
            superuser: false,
            login: false,
            create_db: false,
            create_role: false,
            password: None,
        };
        options.apply(&mut role);
        let exists = || SqlError::new("42710", format!("role \"{name}\" already exists"));
        if self.is_bootstrap_name(&name) {
            return Err(exists());
        }
        if !txn.create_role(role)? {
            if create.if_not_exists {
                return Ok(QueryResult::command("CREATE ROLE").with_notice(
                    "NOTICE",
                    "42710",
                    format!("role \"{name}\" already exists, skipping"),
                ));
            }
            return Err(exists());
        }
        Ok(QueryResult::command("CREATE ROLE"))
    }

    pub(crate) fn alter_role(
        &self,
        txn: &mut Transaction,
        name: &ast::Ident,
        operation: &AlterRoleOperation,
    ) -> Result<QueryResult> {
        let name = normalize_ident(name);
        let AlterRoleOperation::WithOptions { options } = operation else {
            return Err(SqlError::unsupported(format!("ALTER ROLE ... {operation}")));
        };
        let options = RoleOptions::from_list(options)?;
        let own_password = self.info.role.as_deref() == Some(name.as_str())
            && options.superuser.is_none()
            && options.login.is_none()
            && options.create_db.is_none()
            && options.create_role.is_none();
        if !own_password {
            self.require_superuser("permission denied to alter role")?;
        }
        if self.is_bootstrap_name(&name) {
            return Err(SqlError::unsupported(format!(
                "ALTER ROLE of the bootstrap superuser \"{name}\" (its password is the server's \
                 `password` setting in steady.toml)"
            )));
        }
        let Some(mut role) = self.db.engine().role(&name)? else {
            return Err(undefined_role(&name));
        };
        options.apply(&mut role);
        txn.alter_role(role)?;
        Ok(QueryResult::command("ALTER ROLE"))
    }

    pub(crate) fn drop_roles(
        &self,
        txn: &mut Transaction,
        names: &[ast::ObjectName],
        if_exists: bool,
    ) -> Result<QueryResult> {
        self.require_superuser("permission denied to drop role")?;
        let engine = self.db.engine();
        let mut result = QueryResult::command("DROP ROLE");
        for name in names {
            let name = object_name(name).1;
            if self.info.role.as_deref() == Some(name.as_str())
                || self.info.session_role.as_deref() == Some(name.as_str())
                || self.is_bootstrap_name(&name)
            {
                return Err(SqlError::new(
                    "55006",
                    "current user cannot be dropped".to_owned(),
                ));
            }
            let granted = engine.relations_granted_to(&name)?;
            if let Some(&relation) = granted.first() {
                let what = relation_name(self, relation)?;
                return Err(SqlError::new(
                    "2BP01",
                    format!("role \"{name}\" cannot be dropped because some objects depend on it"),
                )
                .with_detail(format!("privileges for {what}")));
            }
            if !txn.drop_role(&name)? {
                if !if_exists {
                    return Err(undefined_role(&name));
                }
                result = result.with_notice(
                    "NOTICE",
                    "00000",
                    format!("role \"{name}\" does not exist, skipping"),
                );
            }
        }
        Ok(result)
    }

    /// GRANT (or REVOKE, when `revoke`) privileges on tables and views to roles or PUBLIC.
    pub(crate) fn grant(
        &self,
        txn: &mut Transaction,
        grant: GrantSpec<'_>,
        revoke: bool,
    ) -> Result<QueryResult> {
        let tag = if revoke { "REVOKE" } else { "GRANT" };
        let privileges = grant_privileges(grant.privileges)?;
        let relations = grant_relations(self, grant.objects)?;
        let grantees = grant_grantees(self, grant.grantees)?;
        for (id, name, kind) in relations {
            if !privileges::is_superuser(self.db.engine(), self.info.role.as_deref())? {
                return Err(privileges::denied(kind, &name));
            }
            let mut grants = self.db.engine().grants(id)?;
            for grantee in &grantees {
                let held = grants.get(grantee).map_or("", String::as_str);
                let letters = change_letters(held, &privileges, revoke);
                match letters.is_empty() {
                    true => grants.remove(grantee),
                    false => grants.insert(grantee.clone(), letters),
                };
            }
            txn.set_grants(id, &name, &grants)?;
        }
        Ok(QueryResult::command(tag))
    }

    /// `SET ROLE name` (None: `SET ROLE NONE` / `RESET ROLE`, back to the session user's).
    pub(crate) fn set_role(&mut self, name: Option<&ast::Ident>) -> Result<QueryResult> {
        let Some(name) = name.map(normalize_ident) else {
            self.info.role = self.info.session_role.clone();
            return Ok(QueryResult::command("SET"));
        };
        if !privileges::is_superuser(self.db.engine(), self.info.session_role.as_deref())? {
            return Err(SqlError::new(
                "42501",
                format!("permission denied to set role \"{name}\""),
            ));
        }
        if self.is_bootstrap_name(&name) {
            self.info.role = None;
            return Ok(QueryResult::command("SET"));
        }
        if self.db.engine().role(&name)?.is_none() {
            return Err(SqlError::new(
                "22023",
                format!("role \"{name}\" does not exist"),
            ));
        }
        self.info.role = Some(name);
        Ok(QueryResult::command("SET"))
    }
}

/// The parts of a GRANT or REVOKE.
pub(crate) struct GrantSpec<'a> {
    pub privileges: &'a Privileges,
    pub objects: Option<&'a GrantObjects>,
    pub grantees: &'a [ast::Grantee],
}

fn grant_privileges(privileges: &Privileges) -> Result<Vec<Privilege>> {
    let actions = match privileges {
        Privileges::All { .. } => return Ok(Privilege::ALL.to_vec()),
        Privileges::Actions(actions) => actions,
    };
    actions
        .iter()
        .map(|action| {
            let columns = match action {
                Action::Select { columns }
                | Action::Insert { columns }
                | Action::Update { columns }
                | Action::References { columns } => columns.as_ref(),
                _ => None,
            };
            if columns.is_some() {
                return Err(SqlError::unsupported("column privileges"));
            }
            let word = action.to_string();
            let keyword = word.split_whitespace().next().unwrap_or_default();
            Privilege::from_keyword(keyword).ok_or_else(|| {
                SqlError::new(
                    "0LP01",
                    format!("invalid privilege type {keyword} for relation"),
                )
            })
        })
        .collect()
}

/// The relations a GRANT names: (id, name, kind).
fn grant_relations(
    session: &Session,
    objects: Option<&GrantObjects>,
) -> Result<Vec<(u64, String, privileges::RelationKind)>> {
    use privileges::RelationKind;
    let engine = session.db.engine();
    match objects {
        Some(GrantObjects::Tables(names)) => names
            .iter()
            .map(|name| {
                let name = public_object_name(name)?;
                if let Some(table) = engine.table(&name) {
                    return Ok((table.id, name, RelationKind::Table));
                }
                match engine.view(&name)? {
                    Some(view) => Ok((view.id, name, RelationKind::View)),
                    None => Err(SqlError::undefined_table(&name)),
                }
            })
            .collect(),
        Some(GrantObjects::AllTablesInSchema { schemas }) => {
            for schema in schemas {
                if object_name(schema).1 != "public" {
                    return Err(crate::types::missing_schema(&object_name(schema).1));
                }
            }
            let tables = engine.tables();
            let views = engine.views()?;
            Ok(tables
                .iter()
                .map(|t| (t.id, t.name.clone(), RelationKind::Table))
                .chain(
                    views
                        .into_iter()
                        .map(|v| (v.id, v.name, RelationKind::View)),
                )
                .collect())
        }
        Some(other) => Err(SqlError::unsupported(format!(
            "privileges on {other} (sequences and functions are usable by every role)"
        ))),
        None => Err(SqlError::unsupported(
            "GRANT and REVOKE of roles (roles have no membership)",
        )),
    }
}

/// The grantees' names (`""` for PUBLIC); each must be a role. A grant to the bootstrap
/// superuser changes nothing (it holds every privilege) and is left out.
fn grant_grantees(session: &Session, grantees: &[ast::Grantee]) -> Result<Vec<String>> {
    let mut names = Vec::new();
    for grantee in grantees {
        if matches!(grantee.grantee_type, ast::GranteesType::Public) {
            names.push(String::new());
            continue;
        }
        let Some(ast::GranteeName::ObjectName(name)) = &grantee.name else {
            return Err(SqlError::unsupported(format!("grantee {grantee}")));
        };
        let name = object_name(name).1;
        if name == "public" {
            names.push(String::new());
        } else if session.is_bootstrap_name(&name) {
            continue;
        } else if session.db.engine().role(&name)?.is_some() {
            names.push(name);
        } else {
            return Err(undefined_role(&name));
        }
    }
    Ok(names)
}

/// "table t" or "view v", for relation `id`.
fn relation_name(session: &Session, id: u64) -> Result<String> {
    let engine = session.db.engine();
    if let Some(table) = engine.tables().into_iter().find(|t| t.id == id) {
        return Ok(format!("table {}", table.name));
    }
    let view = engine.views()?.into_iter().find(|v| v.id == id);
    Ok(view.map_or_else(|| format!("relation {id}"), |v| format!("view {}", v.name)))
}

impl Session {
    /// Runs CREATE ROLE, ALTER ROLE, GRANT or REVOKE in `txn`.
    pub(crate) fn role_statement(
        &self,
        txn: &mut Transaction,
        statement: &ast::Statement,
    ) -> Result<QueryResult> {
        match statement {
            ast::Statement::CreateRole(create) => self.create_role(txn, create),
            ast::Statement::AlterRole { name, operation } => self.alter_role(txn, name, operation),
            ast::Statement::Grant(grant) => {
                if grant.with_grant_option || grant.as_grantor.is_some() {
                    return Err(SqlError::unsupported("WITH GRANT OPTION"));
                }
                let spec = GrantSpec {
                    privileges: &grant.privileges,
                    objects: grant.objects.as_ref(),
                    grantees: &grant.grantees,
                };
                self.grant(txn, spec, false)
            }
            ast::Statement::Revoke(revoke) => {
                if revoke.grant_option_for {
                    return Err(SqlError::unsupported("REVOKE GRANT OPTION FOR"));
                }
                let spec = GrantSpec {
                    privileges: &revoke.privileges,
                    objects: revoke.objects.as_ref(),
                    grantees: &revoke.grantees,
                };
                self.grant(txn, spec, true)
            }
            other => Err(SqlError::unsupported(format!("{other}"))),
        }
    }

    /// Fails with 42501 unless the session's role may run DDL `statement`: a superuser may run
    /// any; another role only a TRUNCATE of tables it holds TRUNCATE on (every object belongs
    /// to the bootstrap superuser).
    pub(crate) fn check_ddl_allowed(&self, statement: &ast::Statement) -> Result<()> {
        use privileges::{must_be_owner, RelationKind, Required};
        let engine = self.db.engine();
        let role = self.info.role.as_deref();
        if privileges::is_superuser(engine, role)? {
            return Ok(());
        }
        let first = |names: &[ast::ObjectName]| names.first().map(|n| object_name(n).1);
        let owned = match statement {
            ast::Statement::Truncate(truncate) => {
                let mut required = Vec::new();
                for target in &truncate.table_names {
                    let name = public_object_name(&target.name)?;
                    let table = engine
                        .table(&name)
                        .ok_or_else(|| SqlError::undefined_table(&name))?;
                    required.push(Required {
                        relation: table.id,
                        name,
                        kind: RelationKind::Table,
                        privilege: Privilege::Truncate,
                    });
                }
                return privileges::check(engine, role, &required);
            }
            ast::Statement::Drop {
                names, object_type, ..
            } => first(names).map(|n| (n, *object_type == ast::ObjectType::View)),
            ast::Statement::AlterTable(alter) => Some((object_name(&alter.name).1, false)),
            ast::Statement::CreateIndex(create) => Some((object_name(&create.table_name).1, false)),
            _ => None,
        };
        Err(match owned {
            Some((name, true)) => must_be_owner(RelationKind::View, &name),
            Some((name, false)) => must_be_owner(RelationKind::Table, &name),
            None => SqlError::new("42501", "permission denied for schema public"),
        })
    }
}
