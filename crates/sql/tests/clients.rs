//! The statements pgbench 15 and sysbench 1.0.20 send (as captured from the real clients), run
//! through a session as the server runs them: pgbench's initialisation and its tpcb-like
//! transaction (balances stay consistent), and sysbench's table, bulk insert and prepared
//! statements with typed parameters.

mod common;

use std::sync::Arc;

use rand::Rng;
use steady_sql::{Database, QueryResult, Session};
use steady_types::{DataType, Value};

fn open() -> (tempfile::TempDir, Arc<Database>) {
    let dir = tempfile::tempdir().unwrap();
    let db = common::open_database(dir.path(), &common::config(2048));
    (dir, db)
}

fn ok(session: &mut Session, sql: &str) -> QueryResult {
    let mut last = None;
    for result in session.execute(sql) {
        last = Some(result.unwrap_or_else(|err| panic!("{sql}: {err}")));
    }
    last.expect("a statement")
}

fn number(session: &mut Session, sql: &str) -> i64 {
    match &ok(session, sql).rows[0][0] {
        Value::BigInt(v) => *v,
        Value::Integer(v) => i64::from(*v),
        Value::Numeric(d) => i64::try_from(*d).unwrap(),
        Value::Null => 0,
        other => panic!("{sql}: {other:?}"),
    }
}

const ACCOUNTS: i64 = 10_000;
const TELLERS: i64 = 10;

fn pgbench_init(session: &mut Session) {
    for sql in [
        "drop table if exists pgbench_accounts, pgbench_branches, pgbench_history, pgbench_tellers",
        "create table pgbench_history(tid int,bid int,aid int,delta int,mtime timestamp,filler char(22))",
        "create table pgbench_tellers(tid int not null,bid int,tbalance int,filler char(84)) with (fillfactor=100)",
        "create table pgbench_accounts(aid int not null,bid int,abalance int,filler char(84)) with (fillfactor=100)",
        "create table pgbench_branches(bid int not null,bbalance int,filler char(88)) with (fillfactor=100)",
        "begin",
        "truncate table pgbench_accounts, pgbench_branches, pgbench_history, pgbench_tellers",
        "insert into pgbench_branches(bid,bbalance) select bid, 0 from generate_series(1, 1) as bid",
        "insert into pgbench_tellers(tid,bid,tbalance) select tid, (tid - 1) / 10 + 1, 0 from generate_series(1, 10) as tid",
        "insert into pgbench_accounts(aid,bid,abalance,filler) select aid, (aid - 1) / 100000 + 1, 0, '' from generate_series(1, 10000) as aid",
        "commit",
        "vacuum analyze pgbench_branches",
        "vacuum analyze pgbench_tellers",
        "vacuum analyze pgbench_accounts",
        "vacuum analyze pgbench_history",
        "alter table pgbench_branches add primary key (bid)",
        "alter table pgbench_tellers add primary key (tid)",
        "alter table pgbench_accounts add primary key (aid)",
        "alter table pgbench_tellers add constraint pgbench_tellers_bid_fkey foreign key (bid) references pgbench_branches",
        "alter table pgbench_accounts add constraint pgbench_accounts_bid_fkey foreign key (bid) references pgbench_branches",
        "alter table pgbench_history add constraint pgbench_history_bid_fkey foreign key (bid) references pgbench_branches",
        "alter table pgbench_history add constraint pgbench_history_tid_fkey foreign key (tid) references pgbench_tellers",
        "alter table pgbench_history add constraint pgbench_history_aid_fkey foreign key (aid) references pgbench_accounts",
    ] {
        ok(session, sql);
    }
}

const PARTITION_QUERY: &str = "select o.n, p.partstrat, pg_catalog.count(i.inhparent) \
    from pg_catalog.pg_class as c join pg_catalog.pg_namespace as n on (n.oid = c.relnamespace) \
    cross join lateral (select pg_catalog.array_position(pg_catalog.current_schemas(true), n.nspname)) as o(n) \
    left join pg_catalog.pg_partitioned_table as p on (p.partrelid = c.oid) \
    left join pg_catalog.pg_inherits as i on (c.oid = i.inhparent) \
    where c.relname = 'pgbench_accounts' and o.n is not null \
    group by 1, 2 order by 1 asc limit 1";

#[test]
fn pgbench_initialises_and_its_transactions_keep_the_balances_consistent() {
    let (_dir, db) = open();
    let mut session = db.session("pgbench");
    pgbench_init(&mut session);
    assert_eq!(
        number(&mut session, "select count(*) from pgbench_accounts"),
        ACCOUNTS
    );
    assert_eq!(
        number(&mut session, "select count(*) from pgbench_branches"),
        1
    );
    let partitions = ok(&mut session, PARTITION_QUERY);
    assert_eq!(partitions.rows.len(), 1);
    assert_eq!(partitions.rows[0][1], Value::Null);
    assert_eq!(partitions.rows[0][2], Value::BigInt(0));
    ok(&mut session, "vacuum pgbench_branches");
    ok(&mut session, "truncate pgbench_history");

    let mut rng = rand::thread_rng();
    for _ in 0..300 {
        let aid = rng.gen_range(1..=ACCOUNTS);
        let tid = rng.gen_range(1..=TELLERS);
        let delta = rng.gen_range(-5000..=5000);
        let script = format!(
            "BEGIN;\
             UPDATE pgbench_accounts SET abalance = abalance + {delta} WHERE aid = {aid};\
             SELECT abalance FROM pgbench_accounts WHERE aid = {aid};\
             UPDATE pgbench_tellers SET tbalance = tbalance + {delta} WHERE tid = {tid};\
             UPDATE pgbench_branches SET bbalance = bbalance + {delta} WHERE bid = 1;\
             INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES ({tid}, 1, {aid}, {delta}, CURRENT_TIMESTAMP);\
             END;"
        );
        ok(&mut session, &script);
    }
    let accounts = number(&mut session, "select sum(abalance) from pgbench_accounts");
    let branches = number(&mut session, "select sum(bbalance) from pgbench_branches");
    let tellers = number(&mut session, "select sum(tbalance) from pgbench_tellers");
    let history = number(&mut session, "select sum(delta) from pgbench_history");
    assert_eq!((accounts, tellers, history), (branches, branches, branches));
    assert_eq!(
        number(&mut session, "select count(*) from pgbench_history"),
        300
    );
}

#[test]
fn pgbench_extended_statements_infer_their_parameter_types() {
    let (_dir, db) = open();
    let mut session = db.session("pgbench");
    pgbench_init(&mut session);
    let update = session
        .prepare(
            "UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2;",
            &[],
        )
        .unwrap();
    assert_eq!(
        update.params,
        vec![Some(DataType::Integer), Some(DataType::Integer)]
    );
    let select = session
        .prepare("SELECT abalance FROM pgbench_accounts WHERE aid = $1;", &[])
        .unwrap();
    assert_eq!(select.columns[0].name, "abalance");
    let text = |s: &str| Value::Text(s.to_owned());
    session
        .execute_prepared(&update, &[text("25"), text("7")])
        .unwrap();
    let result = session.execute_prepared(&select, &[text("7")]).unwrap();
    assert_eq!(result.rows, vec![vec![Value::Integer(25)]]);
}

#[test]
fn sysbench_prepares_a_table_and_runs_its_prepared_statements() {
    let (_dir, db) = open();
    let mut session = db.session("sysbench");
    ok(
        &mut session,
        "CREATE TABLE sbtest1(id SERIAL, k INTEGER DEFAULT '0' NOT NULL, c CHAR(120) DEFAULT '' NOT NULL, pad CHAR(60) DEFAULT '' NOT NULL, PRIMARY KEY (id))",
    );
    let values: Vec<String> = (0..2900)
        .map(|i| format!("({}, '{:0>119}', '{:0>59}')", i % 1000, i, i))
        .collect();
    let insert = format!(
        "INSERT INTO sbtest1 (k, c, pad) VALUES {}",
        values.join(",")
    );
    assert_eq!(ok(&mut session, &insert).tag, "INSERT 0 2900");
    ok(&mut session, "CREATE INDEX k_1 ON sbtest1(k)");

    let point = session
        .prepare(
            "SELECT c FROM sbtest1 WHERE id=$1",
            &[Some(DataType::BigInt)],
        )
        .unwrap();
    let found = session
        .execute_prepared(&point, &[Value::BigInt(42)])
        .unwrap();
    assert_eq!(found.rows.len(), 1);
    let update_index = session
        .prepare(
            "UPDATE sbtest1 SET k=k+1 WHERE id=$1",
            &[Some(DataType::BigInt)],
        )
        .unwrap();
    assert_eq!(
        session
            .execute_prepared(&update_index, &[Value::BigInt(42)])
            .unwrap()
            .tag,
        "UPDATE 1"
    );
    let range = session
        .prepare(
            "SELECT DISTINCT c FROM sbtest1 WHERE id BETWEEN $1 AND $2 ORDER BY c",
            &[Some(DataType::BigInt), Some(DataType::BigInt)],
        )
        .unwrap();
    let rows = session
        .execute_prepared(&range, &[Value::BigInt(10), Value::BigInt(109)])
        .unwrap();
    assert_eq!(rows.rows.len(), 100);
    let delete = session
        .prepare("DELETE FROM sbtest1 WHERE id=$1", &[Some(DataType::BigInt)])
        .unwrap();
    let insert = session
        .prepare(
            "INSERT INTO sbtest1 (id, k, c, pad) VALUES ($1, $2, $3, $4)",
            &[
                Some(DataType::BigInt),
                Some(DataType::BigInt),
                Some(DataType::Varchar(None)),
                Some(DataType::Varchar(None)),
            ],
        )
        .unwrap();
    session
        .execute_prepared(&delete, &[Value::BigInt(42)])
        .unwrap();
    let args = [
        Value::BigInt(42),
        Value::BigInt(7),
        Value::Text("c".into()),
        Value::Text("p".into()),
    ];
    session.execute_prepared(&insert, &args).unwrap();
    let err = session.execute_prepared(&insert, &args).unwrap_err();
    assert_eq!(err.code, "23505");
    assert_eq!(number(&mut session, "SELECT count(*) FROM sbtest1"), 2900);
    assert_eq!(
        number(&mut session, "SELECT k FROM sbtest1 WHERE id = 42"),
        7
    );
}
