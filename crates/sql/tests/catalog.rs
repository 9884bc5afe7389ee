//! The system catalog as clients read it: every query psql 15 sends for `\d`, `\dt`, `\l`,
//! `\d NAME`, `\di`, `\dn` and `\du` (`tests/clients/psql15_catalog_queries.sql`, captured from
//! psql against PostgreSQL 15), run in psql's order with psql's substitutions, plus the type
//! lookups drivers make. Each scenario checks the answers psql prints.

mod common;

use std::sync::Arc;

use steady_sql::{Database, Session};
use steady_types::{DataType, Value};

/// The queries, in the file's order (psql's order within each command).
const QUERIES: &str = include_str!("clients/psql15_catalog_queries.sql");

const LIST_RELATIONS: usize = 0;
const LIST_TABLES: usize = 1;
const LIST_DATABASES: usize = 2;
const LOOKUP: usize = 3;
const TABLE_INFO: usize = 4;
const COLUMNS: usize = 5;
const INDEXES: usize = 6;
const POLICIES: usize = 7;
const STATISTICS: usize = 8;
const PUBLICATIONS: usize = 9;
const PARENTS: usize = 10;
const PARTITIONS: usize = 11;
const LIST_INDEXES: usize = 12;
const LIST_SCHEMAS: usize = 13;
const LIST_ROLES: usize = 14;
const FOREIGN_KEYS: usize = 15;
const REFERENCED_BY: usize = 16;
const TRIGGERS: usize = 17;
const COMPLETION: usize = 18;

const SCHEMA: &str = "
    CREATE TABLE accounts (id integer PRIMARY KEY, owner varchar(20) NOT NULL,
                           balance numeric(12,2) DEFAULT 0);
    CREATE INDEX accounts_owner_idx ON accounts (owner);
    CREATE TABLE transfers (id integer PRIMARY KEY, account integer NOT NULL,
                            amount numeric(12,2), note text UNIQUE,
                            FOREIGN KEY (account) REFERENCES accounts (id));
";

fn query_text(n: usize) -> &'static str {
    QUERIES
        .split(";\n\n")
        .nth(n)
        .unwrap_or_else(|| panic!("query {n} of the psql corpus"))
}

fn open(dir: &std::path::Path) -> Arc<Database> {
    common::open_database(dir, &common::config(256))
}

/// A fresh database with [`SCHEMA`] and a session of user `steady` in it.
fn setup() -> (tempfile::TempDir, Session) {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut session = open(dir.path()).session("steady");
    for result in session.execute(SCHEMA) {
        result.expect("schema");
    }
    (dir, session)
}

fn cell(value: &Value) -> String {
    match value {
        Value::Null => "NULL".to_owned(),
        other => other.to_string(),
    }
}

/// The rows of `sql` as text (NULL as `NULL`); any error fails the test.
fn rows(session: &mut Session, sql: &str) -> Vec<Vec<String>> {
    let mut results = session.execute(sql);
    assert_eq!(results.len(), 1, "{sql}");
    let result = results
        .pop()
        .expect("one result")
        .unwrap_or_else(|err| panic!("{sql}\nfailed: {err}"));
    result
        .rows
        .iter()
        .map(|row| row.iter().map(cell).collect())
        .collect()
}

/// Runs psql query `n` with `$NAME`, `$OID` and `$PREFIX` substituted.
fn psql(session: &mut Session, n: usize, name: &str, oid: &str) -> Vec<Vec<String>> {
    let sql = query_text(n)
        .replace("$NAME", name)
        .replace("$OID", oid)
        .replace("$PREFIX", name);
    rows(session, &sql)
}

/// `\d NAME` as psql 15 runs it for a table; returns the answers by query number.
fn describe(session: &mut Session, name: &str) -> Vec<(usize, Vec<Vec<String>>)> {
    let found = psql(session, LOOKUP, name, "");
    assert_eq!(found.len(), 1, "{name} is found");
    let oid = found[0][0].clone();
    let mut answers = vec![(LOOKUP, found)];
    let info = psql(session, TABLE_INFO, name, &oid);
    let has_triggers = info[0][4] == "t";
    answers.push((TABLE_INFO, info));
    let mut steps = vec![COLUMNS, INDEXES];
    if has_triggers {
        steps.extend([FOREIGN_KEYS, REFERENCED_BY]);
    }
    steps.extend([POLICIES, STATISTICS, PUBLICATIONS]);
    if has_triggers {
        steps.push(TRIGGERS);
    }
    steps.extend([PARENTS, PARTITIONS]);
    for step in steps {
        answers.push((step, psql(session, step, name, &oid)));
    }
    answers
}

fn answer(answers: &[(usize, Vec<Vec<String>>)], n: usize) -> &Vec<Vec<String>> {
    &answers
        .iter()
        .find(|(step, _)| *step == n)
        .unwrap_or_else(|| panic!("query {n} ran"))
        .1
}

fn strings(row: &[&str]) -> Vec<String> {
    row.iter().map(|s| s.to_string()).collect()
}

#[test]
fn list_tables_shows_both_tables_and_relations_adds_the_views() {
    let (_dir, mut session) = setup();
    rows(
        &mut session,
        "CREATE VIEW big_accounts AS SELECT * FROM accounts",
    );
    let tables = psql(&mut session, LIST_TABLES, "", "");
    assert_eq!(
        tables,
        vec![
            strings(&["public", "accounts", "table", "steady"]),
            strings(&["public", "transfers", "table", "steady"]),
        ]
    );
    let relations = psql(&mut session, LIST_RELATIONS, "", "");
    let names: Vec<&str> = relations.iter().map(|r| r[1].as_str()).collect();
    assert_eq!(
        names,
        ["accounts", "big_accounts", "transfers"],
        "SteadyDB's own views are in pg_catalog, as PostgreSQL's pg_stat_* views, and not listed"
    );
    assert_eq!(relations[1][2], "view");
}

#[test]
fn list_databases_shows_the_session_database_in_utf8() {
    let (_dir, mut session) = setup();
    assert_eq!(
        psql(&mut session, LIST_DATABASES, "", ""),
        vec![strings(&[
            "steady", "steady", "UTF8", "C", "C", "NULL", "libc", "NULL"
        ])]
    );
}

#[test]
fn describe_accounts_shows_columns_defaults_and_indexes() {
    let (_dir, mut session) = setup();
    let answers = describe(&mut session, "accounts");
    let oid = &answer(&answers, LOOKUP)[0][0];
    let pg_class_oid = rows(
        &mut session,
        "SELECT oid FROM pg_catalog.pg_class WHERE relname = 'accounts'",
    );
    assert_eq!(&pg_class_oid[0][0], oid);
    assert_eq!(
        answer(&answers, LOOKUP)[0][1..],
        strings(&["public", "accounts"])
    );

    let info = &answer(&answers, TABLE_INFO)[0];
    assert_eq!(info[..5], strings(&["0", "r", "t", "f", "t"]));
    assert_eq!(info[14], "heap");

    assert_eq!(
        answer(&answers, COLUMNS),
        &vec![
            strings(&["id", "integer", "NULL", "t", "NULL", "", ""]),
            strings(&[
                "owner",
                "character varying(20)",
                "NULL",
                "t",
                "NULL",
                "",
                ""
            ]),
            strings(&["balance", "numeric(12,2)", "0", "f", "NULL", "", ""]),
        ]
    );

    let indexes = answer(&answers, INDEXES);
    assert_eq!(indexes.len(), 2);
    assert_eq!(
        indexes[0],
        strings(&[
            "accounts_pkey",
            "t",
            "t",
            "f",
            "t",
            "CREATE UNIQUE INDEX accounts_pkey ON public.accounts USING btree (id)",
            "PRIMARY KEY (id)",
            "p",
            "f",
            "f",
            "f",
            "0",
        ])
    );
    assert_eq!(indexes[1][0], "accounts_owner_idx");
    assert_eq!(
        indexes[1][5],
        "CREATE INDEX accounts_owner_idx ON public.accounts USING btree (owner)"
    );
    assert_eq!(indexes[1][6..8], strings(&["NULL", "NULL"]));

    let referenced_by = answer(&answers, REFERENCED_BY);
    assert_eq!(
        referenced_by,
        &vec![strings(&[
            "transfers_account_fkey",
            "transfers",
            "FOREIGN KEY (account) REFERENCES accounts(id)",
        ])]
    );
    for empty in [
        FOREIGN_KEYS,
        POLICIES,
        STATISTICS,
        PUBLICATIONS,
        TRIGGERS,
        PARENTS,
        PARTITIONS,
    ] {
        assert!(answer(&answers, empty).is_empty(), "query {empty}");
    }
}

#[test]
fn describe_transfers_shows_its_foreign_key_and_unique_constraint() {
    let (_dir, mut session) = setup();
    let answers = describe(&mut session, "transfers");
    let foreign_keys = answer(&answers, FOREIGN_KEYS);
    assert_eq!(
        foreign_keys,
        &vec![strings(&[
            "t",
            "transfers_account_fkey",
            "FOREIGN KEY (account) REFERENCES accounts(id)",
            "transfers",
        ])]
    );
    let indexes = answer(&answers, INDEXES);
    let unique: Vec<&str> = indexes.iter().map(|r| r[0].as_str()).collect();
    assert_eq!(unique, ["transfers_pkey", "transfers_note_key"]);
    assert_eq!(indexes[1][6..8], strings(&["UNIQUE (note)", "u"]));
}

#[test]
fn list_indexes_names_their_tables() {
    let (_dir, mut session) = setup();
    let indexes = psql(&mut session, LIST_INDEXES, "", "");
    let shown: Vec<(&str, &str, &str)> = indexes
        .iter()
        .map(|r| (r[1].as_str(), r[2].as_str(), r[4].as_str()))
        .collect();
    assert_eq!(
        shown,
        [
            ("accounts_owner_idx", "index", "accounts"),
            ("accounts_pkey", "index", "accounts"),
            ("transfers_note_key", "index", "transfers"),
            ("transfers_pkey", "index", "transfers"),
        ]
    );
}

#[test]
fn list_schemas_roles_and_completions() {
    let (_dir, mut session) = setup();
    assert_eq!(
        psql(&mut session, LIST_SCHEMAS, "", ""),
        vec![strings(&["public", "pg_database_owner"])],
        "public belongs to pg_database_owner, as in PostgreSQL 15"
    );
    let roles = psql(&mut session, LIST_ROLES, "", "");
    assert_eq!(roles.len(), 1);
    assert_eq!(roles[0][0], "steady");
    assert_eq!(roles[0][8], "{}");
    assert_eq!(
        psql(&mut session, COMPLETION, "acc", ""),
        vec![strings(&["accounts", "NULL"])]
    );
}

#[test]
fn every_system_view_scans_with_its_declared_width() {
    let (_dir, mut session) = setup();
    for view in steady_sql::system::all() {
        let sql = format!("SELECT * FROM {}.{}", view.schema, view.name);
        for row in rows(&mut session, &sql) {
            assert_eq!(row.len(), view.columns.len(), "{sql}");
        }
    }
}

#[test]
fn reg_casts_convert_between_names_and_oids() {
    let (_dir, mut session) = setup();
    let oid = rows(
        &mut session,
        "SELECT oid FROM pg_class WHERE relname = 'accounts'",
    )[0][0]
        .clone();
    assert_eq!(
        rows(&mut session, "SELECT 'accounts'::regclass::oid")[0][0],
        oid
    );
    assert_eq!(
        rows(
            &mut session,
            "SELECT count(*) FROM pg_attribute WHERE attrelid = 'public.accounts'::regclass AND attnum > 0"
        )[0][0],
        "3"
    );
    assert_eq!(
        rows(
            &mut session,
            &format!("SELECT {oid}::regclass, c.oid::regclass FROM pg_class c WHERE c.oid = {oid}")
        )[0],
        strings(&[&oid, "accounts"])
    );
    let by_param = "SELECT relname FROM pg_class WHERE oid = $1::regclass";
    let as_oid = oid.parse::<i32>().expect("an int4 oid");
    for (declared, param) in [
        (None, Value::Text("accounts".into())),
        (Some(DataType::Integer), Value::Integer(as_oid)),
    ] {
        let prepared = session.prepare(by_param, &[declared]).expect("prepares");
        let result = session.execute_prepared(&prepared, &[param]).expect("runs");
        assert_eq!(result.rows, vec![vec![Value::Text("accounts".into())]]);
    }
    let missing = session.execute("SELECT 'nowhere'::regclass").pop();
    let err = missing.expect("a result").expect_err("no such relation");
    assert_eq!(err.code, "42P01");
}

#[test]
fn pg_typeof_names_the_argument_type() {
    let (_dir, mut session) = setup();
    rows(&mut session, "INSERT INTO accounts VALUES (1, 'ann', 10)");
    assert_eq!(
        rows(
            &mut session,
            "SELECT pg_typeof(owner), pg_typeof(balance), pg_typeof(id + 1), pg_typeof('x'), \
             pg_typeof(NULL) FROM accounts"
        ),
        vec![strings(&[
            "character varying",
            "numeric",
            "integer",
            "unknown",
            "unknown"
        ])]
    );
}

#[test]
fn driver_type_lookups_find_postgres_type_oids() {
    let (_dir, mut session) = setup();
    let info = "SELECT typname AS name, oid, typarray AS array_oid, oid::regtype::text AS regtype, \
                typdelim AS delimiter FROM pg_type t WHERE t.oid = to_regtype('int4') ORDER BY t.oid";
    assert_eq!(
        rows(&mut session, info),
        vec![strings(&["int4", "23", "1007", "integer", ","])]
    );
    assert_eq!(
        rows(
            &mut session,
            "SELECT 'character varying'::regtype::oid, 'text[]'::regtype::oid"
        )[0],
        strings(&["1043", "1009"])
    );
    assert!(rows(&mut session, "SELECT to_regtype('hstore')")[0][0] == "NULL");
}

#[test]
fn information_schema_describes_columns() {
    let (_dir, mut session) = setup();
    assert_eq!(
        rows(
            &mut session,
            "SELECT column_name, ordinal_position, data_type, is_nullable, column_default, \
             character_maximum_length, numeric_precision, numeric_scale \
             FROM information_schema.columns WHERE table_name = 'accounts' ORDER BY 2"
        ),
        vec![
            strings(&["id", "1", "integer", "NO", "NULL", "NULL", "32", "0"]),
            strings(&[
                "owner",
                "2",
                "character varying",
                "NO",
                "NULL",
                "20",
                "NULL",
                "NULL"
            ]),
            strings(&["balance", "3", "numeric", "YES", "0", "NULL", "12", "2"]),
        ]
    );
    assert_eq!(
        rows(
            &mut session,
            "SELECT table_schema, table_name, table_type FROM information_schema.tables \
             WHERE table_schema = 'public' AND table_type = 'BASE TABLE' ORDER BY 2"
        ),
        vec![
            strings(&["public", "accounts", "BASE TABLE"]),
            strings(&["public", "transfers", "BASE TABLE"]),
        ]
    );
}

#[test]
fn regular_expression_operators_match_posix_style() {
    let (_dir, mut session) = setup();
    assert_eq!(
        rows(
            &mut session,
            "SELECT 'accounts' ~ '^acc', 'Accounts' ~* '^acc', 'accounts' !~ 'x$', 'ab' !~* 'B'"
        ),
        vec![strings(&["t", "t", "t", "f"])]
    );
    let bad = session.execute("SELECT 'a' ~ '('").pop().expect("a result");
    assert_eq!(bad.expect_err("bad pattern").code, "2201B");
}
