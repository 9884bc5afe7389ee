//! Joins: a hash join returns exactly what a nested loop testing every pair returns, for every
//! join kind, key types mixed across integer, numeric, float and text, NULL keys and extra
//! conditions (property test: the same query with each key written `(a = b) IS TRUE`, which is
//! no hash key); and conditions written in WHERE reach the joins they belong to (EXPLAIN).

mod common;

use proptest::prelude::*;
use steady_engine::engine::EngineConfig;
use steady_sql::{Database, QueryResult, Session};

fn open(dir: &std::path::Path) -> std::sync::Arc<Database> {
    let config = EngineConfig {
        background_purge: false,
        ..common::config(512)
    };
    common::open_database(dir, &config)
}

fn run(session: &mut Session, sql: &str) -> QueryResult {
    let mut results = session.execute(sql);
    let last = results.pop().expect("one result");
    last.unwrap_or_else(|err| panic!("{sql}: {err}"))
}

/// The rows of a query, each as text, sorted (join order is not part of the answer).
fn sorted_rows(session: &mut Session, sql: &str) -> Vec<String> {
    let mut rows: Vec<String> = run(session, sql)
        .rows
        .iter()
        .map(|row| format!("{row:?}"))
        .collect();
    rows.sort();
    rows
}

fn plan_text(session: &mut Session, sql: &str) -> String {
    let rows = run(session, &format!("EXPLAIN {sql}")).rows;
    let lines: Vec<String> = rows.iter().map(|r| r[0].to_string()).collect();
    lines.join("\n")
}

const COLUMNS: &str =
    "(id integer PRIMARY KEY, i integer, b bigint, n numeric, d double precision, s text)";

/// One row's values: small domains, so that keys meet, with NULLs; numerics and floats hold
/// integral and fractional values, so integers, numerics and floats compare equal across types.
fn row() -> impl Strategy<Value = String> {
    let int = prop_oneof![
        Just("NULL".to_owned()),
        (0..4i32).prop_map(|v| v.to_string())
    ];
    let numeric = prop_oneof![
        Just("NULL"),
        Just("1"),
        Just("1.0"),
        Just("1.50"),
        Just("1.5"),
        Just("2"),
        Just("0.1")
    ];
    let float = prop_oneof![
        Just("NULL"),
        Just("1"),
        Just("1.5"),
        Just("2"),
        Just("0.1"),
        Just("'NaN'"),
        Just("0"),
        Just("'-0'")
    ];
    let text = prop_oneof![Just("NULL"), Just("'a'"), Just("'b'"), Just("'1'")];
    (int.clone(), int, numeric, float, text)
        .prop_map(|(i, b, n, d, s)| format!("{i}, {b}, {n}, {d}, {s}"))
}

fn table_rows() -> impl Strategy<Value = Vec<String>> {
    proptest::collection::vec(row(), 0..10)
}

/// Key pairs of comparable columns (left table's column, right table's column).
const KEYS: &[(&str, &str)] = &[
    ("i", "i"),
    ("i", "b"),
    ("b", "n"),
    ("n", "n"),
    ("n", "d"),
    ("i", "d"),
    ("d", "d"),
    ("s", "s"),
];

const KINDS: &[&str] = &["JOIN", "LEFT JOIN", "RIGHT JOIN", "FULL JOIN"];

/// Extra conditions: on the ON clause or on WHERE, reading one side, both or none.
const EXTRAS: &[&str] = &[
    "",
    " AND x.id < y.id",
    " AND y.i IS NOT NULL",
    " AND x.b > 0",
    " AND x.s IS DISTINCT FROM y.s",
];
const WHERES: &[&str] = &[
    "",
    " WHERE x.i > 0",
    " WHERE y.i IS NULL",
    " WHERE x.id <> y.id",
];

fn load(session: &mut Session, name: &str, rows: &[String]) {
    run(session, &format!("CREATE TABLE {name} {COLUMNS}"));
    for (id, values) in rows.iter().enumerate() {
        run(
            session,
            &format!("INSERT INTO {name} VALUES ({id}, {values})"),
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn a_hash_join_returns_what_testing_every_pair_returns(
        left in table_rows(),
        right in table_rows(),
        third in table_rows(),
        queries in proptest::collection::vec(
            (0..KEYS.len(), 0..KEYS.len(), 0..KINDS.len(), 0..EXTRAS.len(), 0..WHERES.len(), any::<bool>()),
            6,
        ),
        analyzed in any::<bool>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let db = open(dir.path());
        let mut session = db.session("steady");
        load(&mut session, "x", &left);
        load(&mut session, "y", &right);
        load(&mut session, "z", &third);
        if analyzed {
            // Tables of different sizes: outer joins turn around to hash their smaller side.
            run(&mut session, "ANALYZE");
        }
        for (key, second, kind, extra, filter, two_keys) in queries {
            let (l, r) = KEYS[key];
            let (l2, r2) = KEYS[second];
            let keys = |as_key: bool| {
                let eq = |a: &str, b: &str| match as_key {
                    true => format!("{a} = {b}"),
                    false => format!("({a} = {b}) IS TRUE"),
                };
                let first = eq(&format!("x.{l}"), &format!("y.{r}"));
                match two_keys {
                    true => format!("{first} AND {}", eq(&format!("x.{l2}"), &format!("y.{r2}"))),
                    false => first,
                }
            };
            let (extra, filter) = (EXTRAS[extra], WHERES[filter]);
            let written = |as_key: bool| {
                format!(
                    "SELECT x.id, y.id, z.id FROM x {} y ON {}{extra} JOIN z ON z.i = y.i{filter}",
                    KINDS[kind],
                    keys(as_key)
                )
            };
            let comma = |as_key: bool| {
                format!("SELECT x.id, y.id FROM x, y WHERE {}{extra}", keys(as_key))
            };
            let two = |as_key: bool| {
                format!(
                    "SELECT x.id, y.id FROM x {} y ON {}{extra}{filter}",
                    KINDS[kind],
                    keys(as_key)
                )
            };
            let shapes = [
                (written(true), written(false)),
                (comma(true), comma(false)),
                (two(true), two(false)),
            ];
            for (hashed, tested) in shapes {
                prop_assert!(plan_text(&mut session, &hashed).contains("Hash"), "{hashed}");
                prop_assert!(plan_text(&mut session, &tested).contains("Nested Loop"));
                prop_assert_eq!(
                    sorted_rows(&mut session, &hashed),
                    sorted_rows(&mut session, &tested),
                    "{}", hashed
                );
            }
        }
    }
}

/// Conditions over three tables, any subset of which a query's WHERE holds.
const CONDITIONS: &[&str] = &[
    "x.i = y.i",
    "y.b = z.b",
    "x.n = z.d",
    "x.id < z.id",
    "z.s = 'a'",
    "y.i > 1",
    "x.i = 2",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    #[test]
    fn joins_in_the_order_estimates_choose_return_what_the_written_order_returns(
        tables in proptest::collection::vec(table_rows(), 3),
        queries in proptest::collection::vec(proptest::collection::vec(any::<bool>(), CONDITIONS.len()), 6),
        analyzed in any::<bool>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let db = open(dir.path());
        let mut session = db.session("steady");
        for (name, rows) in ["x", "y", "z"].iter().zip(&tables) {
            load(&mut session, name, rows);
        }
        if analyzed {
            run(&mut session, "ANALYZE");
        }
        for chosen in queries {
            let conditions: Vec<&str> = CONDITIONS
                .iter()
                .zip(&chosen)
                .filter(|(_, &on)| on)
                .map(|(c, _)| *c)
                .collect();
            let filter = match conditions.is_empty() {
                true => String::new(),
                false => format!(" WHERE {}", conditions.join(" AND ")),
            };
            let reordered = format!("SELECT x.*, y.*, z.* FROM z, x, y{filter}");
            // A subquery in a join's condition keeps the written order.
            let written = format!(
                "SELECT x.*, y.*, z.* FROM x JOIN y ON (SELECT true) JOIN z ON (SELECT true){filter}"
            );
            prop_assert_eq!(
                sorted_rows(&mut session, &reordered),
                sorted_rows(&mut session, &written),
                "{}", reordered
            );
        }
    }
}

/// The plan has `joins` joins, each a hash join or an index lookup per row: no product of
/// two inputs filtered afterwards.
fn assert_joined_on_conditions(plan: &str, joins: usize) {
    let node = |line: &str| line.trim_start_matches([' ', '-', '>']).to_owned();
    let nodes: Vec<String> = plan.lines().map(node).collect();
    let hashed = nodes.iter().filter(|n| n.starts_with("Hash Join")).count();
    let lookups = nodes
        .iter()
        .filter(|n| *n == "Nested Loop (lateral)")
        .count();
    assert_eq!(hashed + lookups, joins, "{plan}");
    assert!(!nodes.iter().any(|n| n == "Nested Loop"), "{plan}");
    assert_eq!(
        plan.matches("Index Cond: (x = outer1.#0)").count(),
        lookups,
        "{plan}"
    );
}

#[test]
fn conditions_written_in_where_join_comma_separated_tables_instead_of_filtering_their_product() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut session = db.session("steady");
    for name in ["a", "b", "c", "d"] {
        run(
            &mut session,
            &format!("CREATE TABLE {name} (x integer PRIMARY KEY, y integer)"),
        );
        run(
            &mut session,
            &format!("INSERT INTO {name} SELECT g, g % 7 FROM generate_series(1, 300) g"),
        );
    }
    let query = "SELECT count(*) FROM a, b, c, d \
                 WHERE a.x = b.x AND b.x = c.x AND c.x = d.x AND d.y = 3 AND a.x > 10";
    let plan = plan_text(&mut session, query);
    assert_joined_on_conditions(&plan, 3);
    assert!(plan.contains("Filter: (y = 3)"), "{plan}");
    assert!(plan.contains("Index Cond: (x >= 10)"), "{plan}");
    let written_order = "SELECT count(*) FROM a, c, d, b \
                 WHERE a.x = b.x AND b.x = c.x AND c.x = d.x AND d.y = 3 AND a.x > 10";
    let plan = plan_text(&mut session, written_order);
    assert_joined_on_conditions(&plan, 3);
    let rows = run(&mut session, written_order).rows;
    assert_eq!(rows[0][0].to_string(), "41");
    let rows = run(&mut session, query).rows;
    // x in 11..=300 with x % 7 = 3: 17, 24, ..., 297.
    assert_eq!(rows[0][0].to_string(), "41");
}

#[test]
fn a_where_condition_on_the_null_extended_side_of_an_outer_join_stays_above_it() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut session = db.session("steady");
    run(&mut session, "CREATE TABLE p (id integer PRIMARY KEY)");
    run(
        &mut session,
        "CREATE TABLE q (id integer PRIMARY KEY, p integer, note text)",
    );
    run(&mut session, "INSERT INTO p VALUES (1), (2), (3)");
    run(
        &mut session,
        "INSERT INTO q VALUES (10, 1, 'x'), (11, 1, NULL), (12, 2, 'y')",
    );
    let query = "SELECT p.id, q.id FROM p LEFT JOIN q ON q.p = p.id WHERE q.note IS NULL";
    assert_eq!(
        sorted_rows(&mut session, query),
        vec!["[Integer(1), Integer(11)]", "[Integer(3), Null]"]
    );
    let plan = plan_text(&mut session, query);
    assert!(plan.starts_with("Filter"), "{plan}");
    assert!(plan.contains("Hash Left Join"), "{plan}");
    // In ON, the same condition only decides which q rows match: every p row stays.
    let on = "SELECT p.id, q.id FROM p LEFT JOIN q ON q.p = p.id AND q.note IS NULL";
    assert_eq!(
        sorted_rows(&mut session, on),
        vec![
            "[Integer(1), Integer(11)]",
            "[Integer(2), Null]",
            "[Integer(3), Null]"
        ]
    );
}

#[test]
fn a_left_join_keeping_only_unmatched_rows_is_an_anti_join() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut session = db.session("steady");
    run(
        &mut session,
        "CREATE TABLE p (id integer PRIMARY KEY, v integer)",
    );
    run(
        &mut session,
        "CREATE TABLE q (id integer PRIMARY KEY, p integer, note text)",
    );
    run(
        &mut session,
        "INSERT INTO p VALUES (1, NULL), (2, 5), (3, 6), (4, NULL)",
    );
    run(
        &mut session,
        "INSERT INTO q VALUES (10, 1, NULL), (11, 1, 'x'), (12, 2, 'y'), (13, NULL, 'z')",
    );
    // q.id is NOT NULL (its key), q.p the join's key: each is NULL only where nothing matched.
    for test in ["q.id IS NULL", "q.p IS NULL"] {
        let query = format!("SELECT p.id, q.note FROM p LEFT JOIN q ON q.p = p.id WHERE {test}");
        assert_eq!(
            sorted_rows(&mut session, &query),
            vec!["[Integer(3), Null]", "[Integer(4), Null]"],
            "{query}"
        );
        let plan = plan_text(&mut session, &query);
        assert!(plan.contains("Anti Join"), "{plan}");
        assert!(!plan.contains("Filter: (q."), "{plan}");
    }
    // With q larger than p after ANALYZE, the anti join hashes p and reads q once.
    run(
        &mut session,
        "INSERT INTO q SELECT g, g % 3 + 1, NULL FROM generate_series(100, 400) g",
    );
    run(&mut session, "ANALYZE");
    let query =
        "SELECT p.id FROM p LEFT JOIN q ON q.p = p.id AND q.note IS NULL WHERE q.id IS NULL";
    assert!(plan_text(&mut session, query).contains("Right Anti Join"));
    assert_eq!(sorted_rows(&mut session, query), vec!["[Integer(4)]"]);
    let not_anti =
        "SELECT p.id FROM p LEFT JOIN q ON q.p = p.id AND q.note IS NULL WHERE q.note IS NULL";
    assert!(!plan_text(&mut session, not_anti).contains("Anti"));
}

/// Join columns of the small table `x` against the indexed columns of `big`.
const LOOKUP_KEYS: &[(&str, &str)] = &[
    ("i", "i"),
    ("b", "i"),
    ("n", "i"),
    ("d", "i"),
    ("i", "n"),
    ("d", "n"),
    ("n", "n"),
    ("s", "s"),
    ("id", "id"),
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn an_index_lookup_per_row_returns_what_testing_every_pair_returns(
        small in table_rows(),
        distinct in 1000..3000i32,
        queries in proptest::collection::vec((0..LOOKUP_KEYS.len(), 0..3usize, any::<bool>()), 8),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let db = open(dir.path());
        let mut session = db.session("steady");
        load(&mut session, "x", &small);
        run(&mut session, "CREATE TABLE big (id integer PRIMARY KEY, i integer, n numeric, s text)");
        run(&mut session, &format!(
            "INSERT INTO big SELECT g, CASE WHEN g % 13 = 0 THEN NULL ELSE g % {distinct} END, \
             (g % {distinct}) / 2.0, (g % {distinct})::text FROM generate_series(0, 2999) g"
        ));
        for column in ["i", "n", "s"] {
            run(&mut session, &format!("CREATE INDEX big_{column} ON big ({column})"));
        }
        run(&mut session, "ANALYZE");
        for (key, shape, residual) in queries {
            let (small_column, big_column) = LOOKUP_KEYS[key];
            let residual = if residual { " AND big.id % 3 <> x.id % 3" } else { "" };
            let query = |as_key: bool| {
                let eq = format!("x.{small_column} = big.{big_column}");
                let condition = match as_key {
                    true => eq,
                    false => format!("({eq}) IS TRUE"),
                };
                match shape {
                    0 => format!("SELECT x.id, big.id FROM x JOIN big ON {condition}{residual}"),
                    1 => format!("SELECT x.id, big.id FROM big JOIN x ON {condition}{residual}"),
                    _ => format!("SELECT x.id, big.id FROM x LEFT JOIN big ON {condition}{residual}"),
                }
            };
            let looked_up = query(true);
            let plan = plan_text(&mut session, &looked_up);
            prop_assert!(plan.contains("(lateral)"), "{looked_up}\n{plan}");
            prop_assert_eq!(
                sorted_rows(&mut session, &looked_up),
                sorted_rows(&mut session, &query(false)),
                "{}", looked_up
            );
        }
    }
}

#[test]
fn an_index_lookup_inside_a_correlated_subquery_still_reads_the_enclosing_row() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let mut session = db.session("steady");
    run(
        &mut session,
        "CREATE TABLE t (id integer PRIMARY KEY, n integer)",
    );
    run(
        &mut session,
        "CREATE TABLE x (id integer PRIMARY KEY, i integer)",
    );
    run(
        &mut session,
        "CREATE TABLE big (id integer PRIMARY KEY, i integer, n integer)",
    );
    run(&mut session, "CREATE INDEX big_i ON big (i)");
    run(&mut session, "INSERT INTO t VALUES (1, 1), (2, 2), (3, 7)");
    run(&mut session, "INSERT INTO x VALUES (1, 10), (2, 20)");
    run(
        &mut session,
        "INSERT INTO big SELECT g, g % 500, g % 3 FROM generate_series(1, 5000) g",
    );
    run(&mut session, "ANALYZE");
    let query = |condition: &str| {
        format!(
            "SELECT t.id, (SELECT count(*) FROM x JOIN big ON {condition} WHERE big.n = t.n) FROM t"
        )
    };
    let inner = "SELECT count(*) FROM x JOIN big ON big.i = x.i WHERE big.n = 1";
    assert!(plan_text(&mut session, inner).contains("(lateral)"));
    assert_eq!(
        sorted_rows(&mut session, &query("big.i = x.i")),
        sorted_rows(&mut session, &query("(big.i = x.i) IS TRUE")),
    );
    assert_eq!(
        sorted_rows(&mut session, &query("big.i = x.i")),
        vec![
            "[Integer(1), BigInt(7)]",
            "[Integer(2), BigInt(7)]",
            "[Integer(3), BigInt(0)]"
        ]
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    /// Grouping finds groups by hash: values `=` calls equal (1, 1.0 and 1.00; -0 and 0; NaN and
    /// NaN) and NULLs fall into one group, counted here against a model keyed by the value.
    #[test]
    fn grouping_puts_equal_values_in_one_group(
        values in proptest::collection::vec(
            prop_oneof![Just("NULL"), Just("1"), Just("1.0"), Just("1.00"), Just("2.5"), Just("2.50"),
                        Just("'NaN'"), Just("0"), Just("'-0'"), Just("-3")],
            0..40,
        ),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let db = open(dir.path());
        let mut session = db.session("steady");
        run(&mut session, "CREATE TABLE g (id integer PRIMARY KEY, n numeric, d double precision)");
        for (id, v) in values.iter().enumerate() {
            let numeric = if v.contains("NaN") || v.contains('-') && v.contains('\'') { "NULL" } else { v };
            run(&mut session, &format!("INSERT INTO g VALUES ({id}, {numeric}, {v})"));
        }
        let mut model: std::collections::BTreeMap<String, i64> = Default::default();
        for v in &values {
            let key = match v.trim_matches('\'').parse::<f64>() {
                Ok(x) => format!("{}", x + 0.0),
                Err(_) => "NULL".to_owned(),
            };
            *model.entry(key).or_default() += 1;
        }
        let mut counts: Vec<i64> = model.values().copied().collect();
        counts.sort();
        let mut found: Vec<i64> = run(&mut session, "SELECT count(*) FROM g GROUP BY d")
            .rows
            .iter()
            .map(|r| r[0].to_string().parse().unwrap())
            .collect();
        found.sort();
        prop_assert_eq!(&found, &counts);
        let distinct = run(&mut session, "SELECT count(*) FROM (SELECT DISTINCT n FROM g) s").rows;
        let numeric_groups = run(&mut session, "SELECT n FROM g GROUP BY n").rows.len();
        prop_assert_eq!(distinct[0][0].to_string(), numeric_groups.to_string());
    }
}
