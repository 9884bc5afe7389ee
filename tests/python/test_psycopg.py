"""psycopg 3 against a real `steady serve` on 127.0.0.1 (extended protocol for parameters).

Run by scripts/test.sh: `python3 -m pytest tests/python` with STEADY_BIN pointing at the binary;
the `server` fixture (conftest.py) starts one server for the module, with TLS on.
"""

import threading
import time
from datetime import date, datetime, timedelta, timezone
from datetime import time as time_of_day
from decimal import Decimal
from uuid import UUID

import psycopg
import pytest
from psycopg import errors
from psycopg.types.json import Json, Jsonb


def connect(dsn, **kwargs):
    return psycopg.connect(dsn, **kwargs)


def test_tls_when_asked_and_plain_when_not(server):
    with connect(server, sslmode="require") as conn:
        assert conn.pgconn.ssl_in_use
        assert conn.execute("SELECT 1").fetchone() == (1,)
    with connect(server, sslmode="disable") as conn:
        assert not conn.pgconn.ssl_in_use
        assert conn.execute("SELECT 2").fetchone() == (2,)


def test_type_round_trips(server):
    with connect(server, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS rt")
        conn.execute(
            "CREATE TABLE rt (id integer PRIMARY KEY, b boolean, s smallint, big bigint,"
            " r real, d double precision, n numeric(12,2), c char(3), v varchar(10), t text,"
            " by bytea, dt date, ts timestamp, u uuid, iv interval)"
        )
        row = (
            1, True, -7, 9_000_000_000, 1.5, 2.25, Decimal("1234.50"), "ab ", "hello",
            "some text", b"\x00\xff", date(2024, 2, 29), datetime(2024, 2, 29, 13, 5, 7, 250000),
            UUID("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"), timedelta(days=-1, hours=2, microseconds=5),
        )
        conn.execute(
            "INSERT INTO rt VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)", row
        )
        got = conn.execute("SELECT * FROM rt WHERE id = %s", (1,)).fetchone()
        assert got == row
        with conn.cursor(binary=True) as cur:
            cur.execute("SELECT * FROM rt WHERE id = %s", (1,))
            assert cur.fetchone() == row
        aware = datetime(2024, 7, 1, 12, 0, 0, 500000, tzinfo=timezone(timedelta(hours=2)))
        conn.execute("SET TimeZone = 'America/New_York'")
        got = conn.execute("SELECT %s::timestamptz, now() > %s", (aware, aware)).fetchone()
        assert got == (aware, True) and got[0].utcoffset() == timedelta(hours=-4)
        with conn.cursor(binary=True) as cur:
            cur.execute("SELECT %s::timestamptz + interval '1 day'", (aware,))
            assert cur.fetchone() == (aware + timedelta(days=1),)
        conn.execute("RESET TimeZone")
        nulls = conn.execute("SELECT NULL::integer, NULL::text, %s::date", (None,)).fetchone()
        assert nulls == (None, None, None)
        with conn.cursor(binary=True) as cur:
            cur.execute("SELECT u FROM rt WHERE u = %s", (row[-2],))
            assert cur.fetchone() == (row[-2],)
            cur.execute("SELECT ts + iv, iv * 2 FROM rt WHERE iv < %s", (timedelta(0),))
            assert cur.fetchone() == (row[12] + row[14], row[14] * 2)


def test_json_and_jsonb(server):
    with connect(server, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS docs")
        conn.execute("CREATE TABLE docs (id integer PRIMARY KEY, doc jsonb, raw json)")
        doc = {"name": "a", "tags": ["x", "y"], "n": 1.5, "none": None}
        conn.execute("INSERT INTO docs VALUES (%s, %s, %s)", (1, Jsonb(doc), Json([1, "two"])))
        with conn.cursor(binary=True) as cur:
            cur.execute("INSERT INTO docs VALUES (%s, %s, %s)", (2, Jsonb({"tags": ["y"]}), Json({})))
            cur.execute("SELECT doc, raw FROM docs ORDER BY id")
            assert cur.fetchall() == [(doc, [1, "two"]), ({"tags": ["y"]}, {})]
        rows = conn.execute(
            "SELECT id, doc->>'name', doc->'tags' FROM docs WHERE doc @> %s ORDER BY id",
            (Jsonb({"tags": ["y"]}),),
        ).fetchall()
        assert rows == [(1, "a", ["x", "y"]), (2, None, ["y"])]
        (agg,) = conn.execute("SELECT jsonb_agg(doc->'tags' ORDER BY id) FROM docs").fetchone()
        assert agg == [["x", "y"], ["y"]]
        conn.execute("UPDATE docs SET doc = doc || %s WHERE doc ? %s", (Jsonb({"n": 2}), "name"))
        (n,) = conn.execute("SELECT (doc->>'n')::int FROM docs WHERE id = 1").fetchone()
        assert n == 2
        with pytest.raises(errors.InvalidTextRepresentation):
            conn.execute("SELECT %s::jsonb", ("{not json",))


def test_text_arrays(server):
    with connect(server, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS tagged")
        conn.execute("CREATE TABLE tagged (id integer PRIMARY KEY, tags text[])")
        conn.execute("INSERT INTO tagged VALUES (%s, %s), (%s, %s)", (1, ["a", "b c", None], 2, []))
        with conn.cursor(binary=True) as cur:
            cur.execute("INSERT INTO tagged VALUES (%s, %s)", (3, ['q"uote', "x,y"]))
            cur.execute("SELECT tags FROM tagged ORDER BY id")
            assert [r[0] for r in cur.fetchall()] == [["a", "b c", None], [], ['q"uote', "x,y"]]
        rows = conn.execute(
            "SELECT id FROM tagged WHERE id = ANY(%s) ORDER BY id", ([1, 3],)
        ).fetchall()
        assert rows == [(1,), (3,)]
        (names,) = conn.execute(
            "SELECT array_agg(t ORDER BY t) FROM unnest(%s::text[]) t", (["b", "a"],)
        ).fetchone()
        assert names == ["a", "b"]
        with pytest.raises(errors.FeatureNotSupported):
            conn.execute("CREATE TABLE bad (x varchar(5)[])")


def test_number_and_boolean_arrays(server):
    """Lists of ints, floats, decimals and bools go in and come back as lists, in text and in
    binary, with the element types PostgreSQL gives them."""
    with connect(server, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS nums")
        conn.execute(
            "CREATE TABLE nums (id integer PRIMARY KEY, xs integer[], big bigint[],"
            " fs double precision[], ds numeric[], bs boolean[])"
        )
        row = ([1, None, -3], [10**12], [1.5, -0.25], [Decimal("1.50"), None], [True, False])
        conn.execute("INSERT INTO nums VALUES (1, %s, %s, %s, %s, %s)", row)
        for binary in (False, True):
            with conn.cursor(binary=binary) as cur:
                cur.execute("INSERT INTO nums VALUES (%s, %s, %s, %s, %s, %s)", (2 + binary, *row))
                cur.execute("SELECT xs, big, fs, ds, bs FROM nums WHERE id = %s", (2 + binary,))
                assert cur.fetchone() == row
        (total,) = conn.execute(
            "SELECT sum(x) FROM (SELECT unnest(xs) AS x FROM nums WHERE id = 1) s"
        ).fetchone()
        assert total == -2
        (agg,) = conn.execute("SELECT array_agg(id ORDER BY id) FROM nums").fetchone()
        assert agg == [1, 2, 3]
        (first,) = conn.execute("SELECT xs[1] + 1 FROM nums WHERE id = 1").fetchone()
        assert first == 2
        with pytest.raises(errors.InvalidTextRepresentation):
            conn.execute("INSERT INTO nums (id, xs) VALUES (9, '{1,x}')")


def test_date_time_and_uuid_arrays(server):
    """Lists of dates, datetimes, times, timedeltas and UUIDs go in and come back as lists of
    those types, in text and in binary; array_agg of such a column is an array of its type."""
    with connect(server, autocommit=True) as conn:
        conn.execute("SET TimeZone = 'UTC'")
        conn.execute("DROP TABLE IF EXISTS dated")
        conn.execute(
            "CREATE TABLE dated (id integer PRIMARY KEY, ds date[], ts timestamp[],"
            " tzs timestamptz[], ti time[], iv interval[], us uuid[])"
        )
        row = (
            [date(2024, 1, 1), None],
            [datetime(2024, 1, 1, 10, 30, 0, 500)],
            [datetime(2024, 1, 1, 8, 0, tzinfo=timezone.utc)],
            [time_of_day(11, 30, 1)],
            [timedelta(days=1, hours=2)],
            [UUID("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11")],
        )
        for binary in (False, True):
            with conn.cursor(binary=binary) as cur:
                cur.execute("INSERT INTO dated VALUES (%s, %s, %s, %s, %s, %s, %s)", (int(binary), *row))
                cur.execute("SELECT ds, ts, tzs, ti, iv, us FROM dated WHERE id = %s", (int(binary),))
                assert cur.fetchone() == row
        (days,) = conn.execute("SELECT array_agg(ds[1] ORDER BY id) FROM dated").fetchone()
        assert days == [date(2024, 1, 1)] * 2


def test_json_arrays(server):
    """Lists of Json/Jsonb values go into json[] and jsonb[] columns and come back as lists of
    the decoded values, in text and in binary."""
    from psycopg.types.json import Json, Jsonb

    with connect(server, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS tagged")
        conn.execute("CREATE TABLE tagged (id integer PRIMARY KEY, j json[], b jsonb[])")
        values = [{"a": 1, "s": "x,\"y\"}"}, [1, 2], None]
        for binary in (False, True):
            with conn.cursor(binary=binary) as cur:
                cur.execute(
                    "INSERT INTO tagged VALUES (%s, %s, %s)",
                    (int(binary), [Json(v) for v in values], [Jsonb(v) for v in values]),
                )
                cur.execute("SELECT j, b, b[1] ->> 's' FROM tagged WHERE id = %s", (int(binary),))
                assert cur.fetchone() == (values, values, 'x,"y"}')


def test_parameters_and_prepared_statements(server):
    with connect(server, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS p")
        conn.execute("CREATE TABLE p (id integer PRIMARY KEY, name text)")
        with conn.cursor() as cur:
            cur.executemany("INSERT INTO p VALUES (%s, %s)", [(i, f"n{i}") for i in range(20)])
        for _ in range(8):
            (count,) = conn.execute("SELECT count(*) FROM p WHERE id < %s", (10,)).fetchone()
            assert count == 10
        (name,) = conn.execute("SELECT name FROM p WHERE id = %s AND name = %s", (3, "n3")).fetchone()
        assert name == "n3"
        rows = conn.execute("SELECT id FROM p WHERE name LIKE %s ORDER BY id", ("n1%",)).fetchall()
        assert [r[0] for r in rows] == [1] + list(range(10, 20))


def test_transactions_and_savepoints(server):
    with connect(server) as conn:
        conn.execute("DROP TABLE IF EXISTS tx")
        conn.execute("CREATE TABLE tx (id integer PRIMARY KEY, v integer)")
        conn.commit()
        conn.execute("INSERT INTO tx VALUES (1, 1)")
        conn.rollback()
        assert conn.execute("SELECT count(*) FROM tx").fetchone()[0] == 0
        conn.execute("INSERT INTO tx VALUES (1, 1)")
        with conn.transaction():
            conn.execute("INSERT INTO tx VALUES (2, 2)")
        try:
            with conn.transaction():
                conn.execute("INSERT INTO tx VALUES (3, 3)")
                raise RuntimeError("roll back to the savepoint")
        except RuntimeError:
            pass
        conn.commit()
        ids = [r[0] for r in conn.execute("SELECT id FROM tx ORDER BY id").fetchall()]
        assert ids == [1, 2]


def test_constraint_violations(server):
    with connect(server, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS child")
        conn.execute("DROP TABLE IF EXISTS parent")
        conn.execute("CREATE TABLE parent (id integer PRIMARY KEY)")
        conn.execute("CREATE TABLE child (id integer PRIMARY KEY, pid integer REFERENCES parent (id))")
        conn.execute("INSERT INTO parent VALUES (1)")
        with pytest.raises(errors.UniqueViolation) as unique:
            conn.execute("INSERT INTO parent VALUES (%s)", (1,))
        assert unique.value.sqlstate == "23505"
        with pytest.raises(errors.ForeignKeyViolation) as fk:
            conn.execute("INSERT INTO child VALUES (1, %s)", (2,))
        assert fk.value.sqlstate == "23503"
        conn.execute("INSERT INTO child VALUES (1, 1)")
        with pytest.raises(errors.ForeignKeyViolation):
            conn.execute("DELETE FROM parent WHERE id = 1")


def test_serialization_failure(server):
    with connect(server, autocommit=True) as setup:
        setup.execute("DROP TABLE IF EXISTS ser")
        setup.execute("CREATE TABLE ser (id integer PRIMARY KEY, v integer)")
        setup.execute("INSERT INTO ser VALUES (1, 0)")
    a = connect(server)
    a.isolation_level = psycopg.IsolationLevel.REPEATABLE_READ
    b = connect(server, autocommit=True)
    a.execute("SELECT v FROM ser WHERE id = 1").fetchone()
    b.execute("UPDATE ser SET v = v + 1 WHERE id = 1")
    with pytest.raises(errors.SerializationFailure) as failure:
        a.execute("UPDATE ser SET v = v + 10 WHERE id = 1")
    assert failure.value.sqlstate == "40001"
    a.rollback()
    a.close()
    b.close()


def lock_waits(dsn):
    with connect(dsn, autocommit=True) as conn:
        (waits,) = conn.execute(
            "SELECT value FROM steady_metrics WHERE name = 'lock_waits'"
        ).fetchone()
        return int(waits)


def test_deadlock(server):
    with connect(server, autocommit=True) as setup:
        setup.execute("DROP TABLE IF EXISTS dl")
        setup.execute("CREATE TABLE dl (id integer PRIMARY KEY, v integer)")
        setup.execute("INSERT INTO dl VALUES (1, 0), (2, 0)")
    a = connect(server)
    b = connect(server)
    a.execute("UPDATE dl SET v = 1 WHERE id = 1")
    b.execute("UPDATE dl SET v = 2 WHERE id = 2")
    outcome = {}

    def second():
        try:
            b.execute("UPDATE dl SET v = 2 WHERE id = 1")
            outcome["b"] = "ok"
        except psycopg.Error as err:
            outcome["b"] = err.sqlstate
        b.rollback()

    waits = lock_waits(server)
    thread = threading.Thread(target=second)
    thread.start()
    while lock_waits(server) == waits:  # b waits for a's row lock before a asks for b's
        time.sleep(0.01)
    try:
        a.execute("UPDATE dl SET v = 1 WHERE id = 2")
        outcome["a"] = "ok"
    except psycopg.Error as err:
        outcome["a"] = err.sqlstate
    a.rollback()
    thread.join()
    assert sorted(outcome.values()) == ["40P01", "ok"]
    a.close()
    b.close()


def test_server_side_cursors(server):
    """psycopg's named cursors: DECLARE, a Describe of the cursor as a portal, FETCH in chunks."""
    with connect(server) as conn:
        conn.execute("CREATE TABLE cursor_rows (id integer PRIMARY KEY, v text)")
        conn.execute("INSERT INTO cursor_rows SELECT g, 'v' || g FROM generate_series(1, 2500) g")
        conn.commit()
        with conn.cursor(name="walk") as cur:
            cur.itersize = 1000
            cur.execute("SELECT id, v FROM cursor_rows WHERE id > %s ORDER BY id", (500,))
            assert [d.name for d in cur.description] == ["id", "v"]
            rows = list(cur)
        assert len(rows) == 2000
        assert rows[0] == (501, "v501") and rows[-1] == (2500, "v2500")
        conn.commit()
        with conn.cursor(name="kept", withhold=True) as cur:
            cur.execute("SELECT count(*) FROM cursor_rows")
            conn.commit()
            assert cur.fetchone() == (2500,)


def test_copy_both_directions(server):
    with connect(server, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS cp")
        conn.execute("CREATE TABLE cp (id integer PRIMARY KEY, name text, amount numeric(8,2))")
        with conn.cursor() as cur:
            with cur.copy("COPY cp (id, name, amount) FROM STDIN") as copy:
                for i in range(1000):
                    copy.write_row((i, f"row {i}" if i % 10 else None, Decimal(i) / 4))
            with cur.copy("COPY cp FROM STDIN WITH (FORMAT csv)") as copy:
                copy.write(b"1000,csv row,1.50\n1001,,2.00\n")
        assert conn.execute("SELECT count(*), count(name) FROM cp").fetchone() == (1002, 901)
        with conn.cursor() as cur:
            out = []
            with cur.copy("COPY (SELECT id, name FROM cp WHERE id < 3 ORDER BY id) TO STDOUT") as copy:
                for row in copy.rows():
                    out.append(row)
        assert out == [("0", None), ("1", "row 1"), ("2", "row 2")]


def test_cancel(server):
    with connect(server, autocommit=True) as conn:
        timer = threading.Timer(0.5, conn.cancel)
        timer.start()
        started = time.time()
        with pytest.raises(errors.QueryCanceled):
            conn.execute("SELECT count(*) FROM generate_series(1, 2000000000)")
        assert time.time() - started < 10
        assert conn.execute("SELECT 1").fetchone() == (1,)


def test_fifty_concurrent_connections(server):
    with connect(server, autocommit=True) as conn:
        conn.execute("DROP TABLE IF EXISTS hits")
        conn.execute("CREATE TABLE hits (id integer PRIMARY KEY, n integer)")
        conn.execute("INSERT INTO hits SELECT i, 0 FROM generate_series(0, 9) AS g(i)")
    errors_seen = []

    def worker(k):
        try:
            with connect(server, autocommit=True) as c:
                for i in range(20):
                    c.execute("UPDATE hits SET n = n + 1 WHERE id = %s", ((k + i) % 10,))
        except Exception as err:  # noqa: BLE001 - collected and asserted below
            errors_seen.append(err)

    threads = [threading.Thread(target=worker, args=(k,)) for k in range(50)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors_seen == []
    with connect(server) as conn:
        assert conn.execute("SELECT sum(n) FROM hits").fetchone()[0] == 1000
