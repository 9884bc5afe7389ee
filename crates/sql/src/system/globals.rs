//! The `pg_catalog` views of everything that is not a relation: namespaces, types, access methods,
//! the database, the role, tablespaces, collations and settings, plus the catalogs of features
//! SteadyDB does not have (policies, statistics objects, publications, inheritance, partitioning,
//! triggers, comments, extensions, enum types), which exist so that client queries bind and return no rows.
//!
//! There is one database (the session's), one role (the session's user, oid 10, a superuser that
//! owns everything) and the `UTF8` encoding with the `C` locale.

use steady_types::{DataType, Value};

use super::pg_type::{enum_type_row, pg_type_rows, PG_TYPE_COLUMNS};
use super::rows::{flag, name, oid, Rows};
use super::{oids, SystemTable};
use crate::error::Result;
use crate::execution::executor::ExecCtx;
use crate::execution::settings::Settings;

use DataType::{
    BigInt, Boolean, Bytea, Double, Integer, Real, SmallInt, Text, TextArray, Timestamp,
};

pub const VIEWS: &[SystemTable] = &[
    SystemTable {
        schema: "pg_catalog",
        name: "pg_namespace",
        columns: &[
            ("oid", BigInt),
            ("nspname", Text),
            ("nspowner", BigInt),
            ("nspacl", Text),
        ],
        rows: pg_namespace,
    },
    SystemTable {
        schema: "pg_catalog",
        name: "pg_type",
        columns: PG_TYPE_COLUMNS,
        rows: pg_type,
    },
    SystemTable {
        schema: "pg_catalog",
        name: "pg_am",
        columns: &[
            ("oid", BigInt),
            ("amname", Text),
            ("amhandler", Text),
            ("amtype", Text),
        ],
        rows: pg_am,
    },
    SystemTable {
        schema: "pg_catalog",
        name: "pg_database",
        columns: &[
            ("oid", BigInt),
            ("datname", Text),
            ("datdba", BigInt),
            ("encoding", Integer),
            ("datlocprovider", Text),
            ("datistemplate", Boolean),
            ("datallowconn", Boolean),
            ("datconnlimit", Integer),
            ("dattablespace", BigInt),
            ("datcollate", Text),
            ("datctype", Text),
            ("daticulocale", Text),
            ("datcollversion", Text),
            ("datacl", Text),
            ("datfrozenxid", BigInt),
            ("datminmxid", BigInt),
        ],
        rows: pg_database,
    },
    SystemTable {
        schema: "pg_catalog",
        name: "pg_roles",
        columns: &[
            ("rolname", Text),
            ("rolsuper", Boolean),
            ("rolinherit", Boolean),
            ("rolcreaterole", Boolean),
            ("rolcreatedb", Boolean),
            ("rolcanlogin", Boolean),
            ("rolreplication", Boolean),
            ("rolconnlimit", Integer),
            ("rolpassword", Text),
            ("rolvaliduntil", Timestamp),
            ("rolbypassrls", Boolean),
            ("rolconfig", Text),
            ("oid", BigInt),
        ],
        rows: pg_roles,
    },
    SystemTable {
        schema: "pg_catalog",
        name: "pg_authid",
        columns: &[
            ("oid", BigInt),
            ("rolname", Text),
            ("rolsuper", Boolean),
            ("rolinherit", Boolean),
            ("rolcreaterole", Boolean),
            ("rolcreatedb", Boolean),
            ("rolcanlogin", Boolean),
            ("rolreplication", Boolean),
            ("rolbypassrls", Boolean),
            ("rolconnlimit", Integer),
            ("rolpassword", Text),
            ("rolvaliduntil", Timestamp),
        ],
        rows: pg_authid,
    },
    SystemTable {
        schema: "pg_catalog",
        name: "pg_user",
        columns: &[
            ("usename", Text),
            ("usesysid", BigInt),
            ("usecreatedb", Boolean),
            ("usesuper", Boolean),
            ("userepl", Boolean),
            ("usebypassrls", Boolean),
            ("passwd", Text),
            ("valuntil", Timestamp),
            ("useconfig", Text),
        ],
        rows: pg_user,
    },
    SystemTable {
        schema: "pg_catalog",
        name: "pg_tablespace",
        columns: &[
            ("oid", BigInt),
            ("spcname", Text),
            ("spcowner", BigInt),
            ("spcacl", Text),
            ("spcoptions", Text),
        ],
        rows: pg_tablespace,
    },
    SystemTable {
        schema: "pg_catalog",
        name: "pg_collation",
        columns: &[
            ("oid", BigInt),
            ("collname", Text),
            ("collnamespace", BigInt),
            ("collowner", BigInt),
            ("collprovider", Text),
            ("collisdeterministic", Boolean),
            ("collencoding", Integer),
            ("collcollate", Text),
            ("collctype", Text),
        ],
        rows: pg_collation,
    },
    SystemTable {
        schema: "pg_catalog",
        name: "pg_settings",
        columns: &[
            ("name", Text),
            ("setting", Text),
            ("unit", Text),
            ("category", Text),
            ("short_desc", Text),
            ("context", Text),
            ("vartype", Text),
            ("source", Text),
            ("boot_val", Text),
            ("reset_val", Text),
            ("pending_restart", Boolean),
        ],
        rows: pg_settings,
    },
    empty(
        "pg_auth_members",
        &[
            ("roleid", BigInt),
            ("member", BigInt),
            ("grantor", BigInt),
            ("admin_option", Boolean),
        ],
    ),
    empty(
        "pg_opclass",
        &[
            ("oid", BigInt),
            ("opcmethod", BigInt),
            ("opcname", Text),
            ("opcnamespace", BigInt),
            ("opcowner", BigInt),
            ("opcfamily", BigInt),
            ("opcintype", BigInt),
            ("opcdefault", Boolean),
            ("opckeytype", BigInt),
        ],
    ),
    SystemTable {
        schema: "pg_catalog",
        name: "pg_description",
        columns: &[
            ("objoid", BigInt),
            ("classoid", BigInt),
            ("objsubid", Integer),
            ("description", Text),
        ],
        rows: pg_description,
    },
    empty(
        "pg_inherits",
        &[
            ("inhrelid", BigInt),
            ("inhparent", BigInt),
            ("inhseqno", Integer),
            ("inhdetachpending", Boolean),
        ],
    ),
    empty(
        "pg_policy",
        &[
            ("oid", BigInt),
            ("polname", Text),
            ("polrelid", BigInt),
            ("polcmd", Text),
            ("polpermissive", Boolean),
            ("polroles", Text),
            ("polqual", Text),
            ("polwithcheck", Text),
        ],
    ),
    empty(
        "pg_statistic_ext",
        &[
            ("oid", BigInt),
            ("stxrelid", BigInt),
            ("stxname", Text),
            ("stxnamespace", BigInt),
            ("stxowner", BigInt),
            ("stxstattarget", Integer),
            ("stxkeys", Text),
            ("stxkind", Text),
            ("stxexprs", Text),
        ],
    ),
    empty(
        "pg_publication",
        &[
            ("oid", BigInt),
            ("pubname", Text),
            ("pubowner", BigInt),
            ("puballtables", Boolean),
            ("pubinsert", Boolean),
            ("pubupdate", Boolean),
            ("pubdelete", Boolean),
            ("pubtruncate", Boolean),
            ("pubviaroot", Boolean),
        ],
    ),
    empty(
        "pg_publication_rel",
        &[
            ("oid", BigInt),
            ("prpubid", BigInt),
            ("prrelid", BigInt),
            ("prqual", Text),
            ("prattrs", Text),
        ],
    ),
    empty(
        "pg_publication_namespace",
        &[("oid", BigInt), ("pnpubid", BigInt), ("pnnspid", BigInt)],
    ),
    empty(
        "pg_partitioned_table",
        &[
            ("partrelid", BigInt),
            ("partstrat", Text),
            ("partnatts", SmallInt),
            ("partdefid", BigInt),
            ("partattrs", Text),
            ("partclass", Text),
            ("partcollation", Text),
            ("partexprs", Text),
        ],
    ),
    SystemTable {
        schema: "pg_catalog",
        name: "pg_enum",
        columns: &[
            ("oid", BigInt),
            ("enumtypid", BigInt),
            ("enumsortorder", Double),
            ("enumlabel", Text),
        ],
        rows: pg_enum,
    },
    empty(
        "pg_extension",
        &[
            ("oid", BigInt),
            ("extname", Text),
            ("extowner", BigInt),
            ("extnamespace", BigInt),
            ("extrelocatable", Boolean),
            ("extversion", Text),
            ("extconfig", Text),
            ("extcondition", Text),
        ],
    ),
    empty(
        "pg_trigger",
        &[
            ("oid", BigInt),
            ("tgrelid", BigInt),
            ("tgparentid", BigInt),
            ("tgname", Text),
            ("tgfoid", BigInt),
            ("tgtype", SmallInt),
            ("tgenabled", Text),
            ("tgisinternal", Boolean),
            ("tgconstrrelid", BigInt),
            ("tgconstrindid", BigInt),
            ("tgconstraint", BigInt),
            ("tgdeferrable", Boolean),
            ("tginitdeferred", Boolean),
            ("tgnargs", SmallInt),
            ("tgattr", Text),
            ("tgargs", Bytea),
            ("tgqual", Text),
        ],
    ),
    // The catalogs of objects SteadyDB has none of: functions and aggregates of users (the
    // built-in ones are not listed), procedural languages, operators, operator classes and
    // families, text search, foreign data, default privileges, conversions, casts, ranges,
    // transforms, event triggers, rules, subscriptions, large objects, security labels and
    // initial privileges of extensions.
    empty(
        "pg_proc",
        &[
            ("oid", BigInt),
            ("proname", Text),
            ("pronamespace", BigInt),
            ("proowner", BigInt),
            ("prolang", BigInt),
            ("procost", Real),
            ("prorows", Real),
            ("provariadic", BigInt),
            ("prosupport", BigInt),
            ("prokind", Text),
            ("prosecdef", Boolean),
            ("proleakproof", Boolean),
            ("proisstrict", Boolean),
            ("proretset", Boolean),
            ("provolatile", Text),
            ("proparallel", Text),
            ("pronargs", SmallInt),
            ("pronargdefaults", SmallInt),
            ("prorettype", BigInt),
            ("proargtypes", Text),
            ("proallargtypes", Text),
            ("proargmodes", Text),
            ("proargnames", TextArray),
            ("proargdefaults", Text),
            ("protrftypes", Text),
            ("prosrc", Text),
            ("probin", Text),
            ("prosqlbody", Text),
            ("proconfig", TextArray),
            ("proacl", Text),
        ],
    ),
    empty(
        "pg_init_privs",
        &[
            ("objoid", BigInt),
            ("classoid", BigInt),
            ("objsubid", Integer),
            ("privtype", Text),
            ("initprivs", Text),
        ],
    ),
    empty(
        "pg_language",
        &[
            ("oid", BigInt),
            ("lanname", Text),
            ("lanowner", BigInt),
            ("lanispl", Boolean),
            ("lanpltrusted", Boolean),
            ("lanplcallfoid", BigInt),
            ("laninline", BigInt),
            ("lanvalidator", BigInt),
            ("lanacl", Text),
        ],
    ),
    empty(
        "pg_operator",
        &[
            ("oid", BigInt),
            ("oprname", Text),
            ("oprnamespace", BigInt),
            ("oprowner", BigInt),
            ("oprkind", Text),
            ("oprcanmerge", Boolean),
            ("oprcanhash", Boolean),
            ("oprleft", BigInt),
            ("oprright", BigInt),
            ("oprresult", BigInt),
            ("oprcom", BigInt),
            ("oprnegate", BigInt),
            ("oprcode", BigInt),
            ("oprrest", BigInt),
            ("oprjoin", BigInt),
        ],
    ),
    empty(
        "pg_opfamily",
        &[
            ("oid", BigInt),
            ("opfmethod", BigInt),
            ("opfname", Text),
            ("opfnamespace", BigInt),
            ("opfowner", BigInt),
        ],
    ),
    empty(
        "pg_amop",
        &[
            ("oid", BigInt),
            ("amopfamily", BigInt),
            ("amoplefttype", BigInt),
            ("amoprighttype", BigInt),
            ("amopstrategy", SmallInt),
            ("amoppurpose", Text),
            ("amopopr", BigInt),
            ("amopmethod", BigInt),
            ("amopsortfamily", BigInt),
        ],
    ),
    empty(
        "pg_amproc",
        &[
            ("oid", BigInt),
            ("amprocfamily", BigInt),
            ("amproclefttype", BigInt),
            ("amprocrighttype", BigInt),
            ("amprocnum", SmallInt),
            ("amproc", BigInt),
        ],
    ),
    empty(
        "pg_ts_parser",
        &[
            ("oid", BigInt),
            ("prsname", Text),
            ("prsnamespace", BigInt),
            ("prsstart", BigInt),
            ("prstoken", BigInt),
            ("prsend", BigInt),
            ("prsheadline", BigInt),
            ("prslextype", BigInt),
        ],
    ),
    empty(
        "pg_ts_template",
        &[
            ("oid", BigInt),
            ("tmplname", Text),
            ("tmplnamespace", BigInt),
            ("tmplinit", BigInt),
            ("tmpllexize", BigInt),
        ],
    ),
    empty(
        "pg_ts_dict",
        &[
            ("oid", BigInt),
            ("dictname", Text),
            ("dictnamespace", BigInt),
            ("dictowner", BigInt),
            ("dicttemplate", BigInt),
            ("dictinitoption", Text),
        ],
    ),
    empty(
        "pg_ts_config",
        &[
            ("oid", BigInt),
            ("cfgname", Text),
            ("cfgnamespace", BigInt),
            ("cfgowner", BigInt),
            ("cfgparser", BigInt),
        ],
    ),
    empty(
        "pg_foreign_data_wrapper",
        &[
            ("oid", BigInt),
            ("fdwname", Text),
            ("fdwowner", BigInt),
            ("fdwhandler", BigInt),
            ("fdwvalidator", BigInt),
            ("fdwacl", Text),
            ("fdwoptions", TextArray),
        ],
    ),
    empty(
        "pg_foreign_server",
        &[
            ("oid", BigInt),
            ("srvname", Text),
            ("srvowner", BigInt),
            ("srvfdw", BigInt),
            ("srvtype", Text),
            ("srvversion", Text),
            ("srvacl", Text),
            ("srvoptions", TextArray),
        ],
    ),
    empty(
        "pg_foreign_table",
        &[
            ("ftrelid", BigInt),
            ("ftserver", BigInt),
            ("ftoptions", TextArray),
        ],
    ),
    empty(
        "pg_default_acl",
        &[
            ("oid", BigInt),
            ("defaclrole", BigInt),
            ("defaclnamespace", BigInt),
            ("defaclobjtype", Text),
            ("defaclacl", Text),
        ],
    ),
    empty(
        "pg_conversion",
        &[
            ("oid", BigInt),
            ("conname", Text),
            ("connamespace", BigInt),
            ("conowner", BigInt),
            ("conforencoding", Integer),
            ("contoencoding", Integer),
            ("conproc", BigInt),
            ("condefault", Boolean),
        ],
    ),
    empty(
        "pg_cast",
        &[
            ("oid", BigInt),
            ("castsource", BigInt),
            ("casttarget", BigInt),
            ("castfunc", BigInt),
            ("castcontext", Text),
            ("castmethod", Text),
        ],
    ),
    empty(
        "pg_range",
        &[
            ("rngtypid", BigInt),
            ("rngsubtype", BigInt),
            ("rngmultitypid", BigInt),
            ("rngcollation", BigInt),
            ("rngsubopc", BigInt),
            ("rngcanonical", BigInt),
            ("rngsubdiff", BigInt),
        ],
    ),
    empty(
        "pg_transform",
        &[
            ("oid", BigInt),
            ("trftype", BigInt),
            ("trflang", BigInt),
            ("trffromsql", BigInt),
            ("trftosql", BigInt),
        ],
    ),
    empty(
        "pg_event_trigger",
        &[
            ("oid", BigInt),
            ("evtname", Text),
            ("evtevent", Text),
            ("evtowner", BigInt),
            ("evtfoid", BigInt),
            ("evtenabled", Text),
            ("evttags", TextArray),
        ],
    ),
    empty(
        "pg_rewrite",
        &[
            ("oid", BigInt),
            ("rulename", Text),
            ("ev_class", BigInt),
            ("ev_type", Text),
            ("ev_enabled", Text),
            ("is_instead", Boolean),
            ("ev_qual", Text),
            ("ev_action", Text),
        ],
    ),
    empty(
        "pg_subscription",
        &[
            ("oid", BigInt),
            ("subdbid", BigInt),
            ("subname", Text),
            ("subowner", BigInt),
            ("subenabled", Boolean),
            ("subbinary", Boolean),
            ("substream", Boolean),
            ("subtwophasestate", Text),
            ("subdisableonerr", Boolean),
            ("subconninfo", Text),
            ("subslotname", Text),
            ("subsynccommit", Text),
            ("subpublications", TextArray),
        ],
    ),
    empty(
        "pg_largeobject_metadata",
        &[("oid", BigInt), ("lomowner", BigInt), ("lomacl", Text)],
    ),
    empty(
        "pg_db_role_setting",
        &[
            ("setdatabase", BigInt),
            ("setrole", BigInt),
            ("setconfig", TextArray),
        ],
    ),
    empty(
        "pg_shseclabel",
        &[
            ("objoid", BigInt),
            ("classoid", BigInt),
            ("provider", Text),
            ("label", Text),
        ],
    ),
    empty(
        "pg_seclabels",
        &[
            ("objoid", BigInt),
            ("classoid", BigInt),
            ("objsubid", Integer),
            ("objtype", Text),
            ("objnamespace", BigInt),
            ("objname", Text),
            ("provider", Text),
            ("label", Text),
        ],
    ),
];

/// The comment PostgreSQL 15 gives schema `public` (pg_dump compares against it); SteadyDB
/// has no COMMENT ON, so it is the only description.
fn pg_description(_: &mut ExecCtx) -> Result<Rows> {
    Ok(vec![vec![
        oid(oids::PUBLIC),
        oid(super::catalog_oid("pg_namespace")),
        Value::Integer(0),
        name(oids::PUBLIC_DESCRIPTION),
    ]])
}

/// A `pg_catalog` view that never has rows.
const fn empty(name: &'static str, columns: &'static [(&'static str, DataType)]) -> SystemTable {
    SystemTable {
        schema: "pg_catalog",
        name,
        columns,
        rows: no_rows,
    }
}

fn no_rows(_: &mut ExecCtx) -> Result<Rows> {
    Ok(Vec::new())
}

fn pg_namespace(_: &mut ExecCtx) -> Result<Rows> {
    Ok(oids::NAMESPACES
        .iter()
        .map(|(id, nsp)| {
            let owner = if *id == oids::PUBLIC {
                oids::DATABASE_OWNER
            } else {
                oids::SUPERUSER
            };
            // PostgreSQL 15's: public's owner may create in it, everyone may use it.
            let acl = if *id == oids::PUBLIC {
                Value::Text(format!(
                    "{{{owner}=UC/{owner},=U/{owner}}}",
                    owner = oids::DATABASE_OWNER_NAME
                ))
            } else {
                Value::Null
            };
            vec![oid(*id), name(nsp), oid(owner), acl]
        })
        .collect())
}

/// Every base type and its array type, then the enum types.
fn pg_type(ctx: &mut ExecCtx) -> Result<Rows> {
    let mut rows = pg_type_rows();
    for enum_type in ctx.engine()?.enum_types()? {
        rows.push(enum_type_row(&enum_type));
    }
    Ok(rows)
}

/// One row per label of each enum type, its position (from 1) the sort order. A label's oid is
/// made from its type's and its position (no other catalog names labels).
fn pg_enum(ctx: &mut ExecCtx) -> Result<Rows> {
    let mut rows = Vec::new();
    for enum_type in ctx.engine()?.enum_types()? {
        for (position, label) in enum_type.labels.iter().enumerate() {
            rows.push(vec![
                Value::BigInt((i64::from(enum_type.oid) << 16) + position as i64),
                oid(enum_type.oid),
                Value::Double(position as f64 + 1.0),
                Value::Text(label.clone()),
            ]);
        }
    }
    Ok(rows)
}

fn pg_am(_: &mut ExecCtx) -> Result<Rows> {
    Ok(vec![
        vec![
            oid(oids::HEAP),
            name("heap"),
            name("heap_tableam_handler"),
            name("t"),
        ],
        vec![
            oid(oids::BTREE),
            name("btree"),
            name("bthandler"),
            name("i"),
        ],
    ])
}

fn pg_database(ctx: &mut ExecCtx) -> Result<Rows> {
    Ok(vec![vec![
        oid(oids::DATABASE),
        name(&ctx.database_name()),
        oid(oids::SUPERUSER),
        Value::Integer(oids::UTF8),
        name("c"),
        flag(false),
        flag(true),
        Value::Integer(-1),
        oid(oids::DEFAULT_TABLESPACE),
        name("C"),
        name("C"),
        Value::Null,
        Value::Null,
        Value::Null,
        Value::BigInt(0),
        Value::BigInt(0),
    ]])
}

/// A role as the role catalogs show it: the bootstrap superuser (oid 10), each role of the
/// catalog, and `pg_database_owner` (no rights, no login, as in PostgreSQL, where it owns
/// schema `public`).
struct RoleRow {
    oid: i64,
    name: String,
    superuser: bool,
    login: bool,
    create_db: bool,
    create_role: bool,
    password: Option<String>,
}

impl RoleRow {
    /// `rolsuper`, `rolinherit`, `rolcreaterole`, `rolcreatedb`, `rolcanlogin`.
    fn attributes(&self) -> [Value; 5] {
        [
            flag(self.superuser),
            flag(true),
            flag(self.create_role),
            flag(self.create_db),
            flag(self.login),
        ]
    }
}

fn role_rows(ctx: &mut ExecCtx) -> Result<Vec<RoleRow>> {
    let bootstrap = RoleRow {
        oid: oids::SUPERUSER,
        name: ctx.bootstrap_name(),
        superuser: true,
        login: true,
        create_db: true,
        create_role: true,
        password: None,
    };
    let mut rows = vec![bootstrap];
    for role in ctx.engine()?.roles()? {
        rows.push(RoleRow {
            oid: oids::role(role.id),
            name: role.name,
            superuser: role.superuser,
            login: role.login,
            create_db: role.create_db,
            create_role: role.create_role,
            password: role.password,
        });
    }
    rows.push(RoleRow {
        oid: oids::DATABASE_OWNER,
        name: oids::DATABASE_OWNER_NAME.to_owned(),
        superuser: false,
        login: false,
        create_db: false,
        create_role: false,
        password: None,
    });
    Ok(rows)
}

fn pg_roles(ctx: &mut ExecCtx) -> Result<Rows> {
    Ok(role_rows(ctx)?
        .into_iter()
        .map(|r| {
            let mut row = vec![name(&r.name)];
            row.extend(r.attributes());
            row.extend([
                flag(r.superuser),
                Value::Integer(-1),
                name("********"),
                Value::Null,
                flag(r.superuser),
                Value::Null,
                oid(r.oid),
            ]);
            row
        })
        .collect())
}

/// `pg_authid`, with each role's password verifier shown to superusers only.
fn pg_authid(ctx: &mut ExecCtx) -> Result<Rows> {
    let shown = ctx.is_superuser()?;
    Ok(role_rows(ctx)?
        .into_iter()
        .map(|r| {
            let password = r
                .password
                .clone()
                .filter(|_| shown)
                .map_or(Value::Null, Value::Text);
            let mut row = vec![oid(r.oid), name(&r.name)];
            row.extend(r.attributes());
            row.extend([
                flag(r.superuser),
                flag(r.superuser),
                Value::Integer(-1),
                password,
                Value::Null,
            ]);
            row
        })
        .collect())
}

fn pg_user(ctx: &mut ExecCtx) -> Result<Rows> {
    Ok(role_rows(ctx)?
        .into_iter()
        .filter(|r| r.login)
        .map(|r| {
            vec![
                name(&r.name),
                oid(r.oid),
                flag(r.create_db),
                flag(r.superuser),
                flag(r.superuser),
                flag(r.superuser),
                name("********"),
                Value::Null,
                Value::Null,
            ]
        })
        .collect())
}

fn pg_tablespace(_: &mut ExecCtx) -> Result<Rows> {
    let row = |id, spcname| {
        vec![
            oid(id),
            name(spcname),
            oid(oids::SUPERUSER),
            Value::Null,
            Value::Null,
        ]
    };
    Ok(vec![
        row(oids::DEFAULT_TABLESPACE, "pg_default"),
        row(oids::GLOBAL_TABLESPACE, "pg_global"),
    ])
}

fn pg_collation(_: &mut ExecCtx) -> Result<Rows> {
    use super::pg_type::{C_COLLATION, DEFAULT_COLLATION};
    let row = |id: u32, collname, provider, locale: Option<&str>| {
        let locale = locale.map_or(Value::Null, name);
        vec![
            oid(id),
            name(collname),
            oid(oids::PG_CATALOG),
            oid(oids::SUPERUSER),
            name(provider),
            flag(true),
            Value::Integer(-1),
            locale.clone(),
            locale,
        ]
    };
    Ok(vec![
        row(DEFAULT_COLLATION, "default", "d", None),
        row(C_COLLATION, "C", "c", Some("C")),
        row(C_COLLATION + 1, "POSIX", "c", Some("POSIX")),
    ])
}

fn pg_settings(ctx: &mut ExecCtx) -> Result<Rows> {
    let mut rows = Vec::new();
    for (parameter, boot) in Settings::default().all() {
        let setting = ctx.setting(&parameter)?;
        let source = if setting == boot {
            "default"
        } else {
            "session"
        };
        rows.push(vec![
            name(&parameter),
            Value::Text(setting),
            Value::Null,
            name(""),
            name(""),
            name("user"),
            name("string"),
            name(source),
            name(&boot),
            Value::Text(boot.clone()),
            flag(false),
        ]);
    }
    Ok(rows)
}
