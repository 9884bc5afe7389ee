"""PostgreSQL 15's own pg_dump, pg_restore and psql against SteadyDB (issue 17): a database of
pgbench's tables (after a short pgbench run) and of a schema with every supported type, a serial
column, a sequence, a view, defaults, CHECK, UNIQUE and FOREIGN KEY constraints is dumped in plain
and custom format and restored into fresh SteadyDB servers (psql, pg_restore) and into a fresh
PostgreSQL 15 cluster; every table's rows (COPY text of the rows in key order, hashed), every
sequence's position and the view's rows must be equal everywhere, restores must run without one
error, and a plain dump of the restored SteadyDB must be the source's dump again. A database
made by PostgreSQL, dumped by pg_dump, restores into SteadyDB with the same contents too.
"""

import contextlib
import hashlib
import os
import shutil
import subprocess
import tempfile

import psycopg

from conftest import free_port, steady_server

PG_BIN = "/usr/lib/postgresql/15/bin"

SCHEMA = r"""
CREATE TABLE kinds (
  id serial PRIMARY KEY,
  b boolean, s smallint, i integer NOT NULL DEFAULT 7, g bigint, r real, d double precision,
  n numeric(12,2), n2 numeric, c char(5), vc varchar(20), t text DEFAULT 'x', by bytea,
  dt date, ts timestamp, tz timestamptz, tm time, u uuid, iv interval, j json, jb jsonb,
  ta text[], ia integer[], ba boolean[], na numeric[],
  CHECK (i > 0),
  UNIQUE (vc)
);
CREATE TABLE child (id bigint PRIMARY KEY, kind_id integer REFERENCES kinds(id), note text);
CREATE INDEX child_note ON child (note);
CREATE SEQUENCE counter START 5;
CREATE VIEW kind_view AS SELECT id, t FROM kinds WHERE i > 1;
INSERT INTO kinds (b,s,i,g,r,d,n,n2,c,vc,t,by,dt,ts,tz,tm,u,iv,j,jb,ta,ia,ba,na) VALUES
 (true, -1, 2, 9007199254740993, 1.5, 2.25, -3.50, 1234567890.123456789, 'ab', 'v1', 'tab	x',
  '\x00ff0a', '2024-02-29', '2024-01-02 03:04:05.123456', '2024-01-02 03:04:05+00', '23:59:59.5',
  'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '1 year 2 mons 3 days 04:05:06', '{"a": [1, "x"]}',
  '{"b": {"c": null}}', '{a,"b c",NULL,"d\"e"}', '{1,-2,NULL}', '{t,f}', '{1.5,NULL}'),
 (NULL, NULL, 5, NULL, NULL, NULL, NULL, NULL, NULL, 'v2', NULL, NULL, NULL, NULL, NULL, NULL,
  NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
 (false, 32767, 2147483647, -9223372036854775808, -0.25, '1e300', 0, -0.000001, 'abcde', '', '',
  '\x', '1999-01-08', '1999-01-08 00:00:00', '1999-01-08 12:00:00+00', '00:00:00',
  '00000000-0000-0000-0000-000000000000', '-1 days', '[]', '[1, 2.5, "q"]', '{}', '{}', '{}', '{}');
INSERT INTO child VALUES (1, 1, E'tab\tand\nnewline \\ backslash'), (2, NULL, NULL), (3, 3, 'x');
SELECT nextval('counter');
SELECT nextval('counter');
"""

# Each table and the columns its rows are ordered by.
TABLES = {
    "kinds": "id",
    "child": "id",
    "pgbench_accounts": "aid",
    "pgbench_branches": "bid",
    "pgbench_tellers": "tid",
    "pgbench_history": "tid, bid, aid, delta, mtime",
}
SEQUENCES = ["counter", "kinds_id_seq"]


def run(*args, **kwargs):
    """Runs a client program; fails the test with its output when it fails."""
    done = subprocess.run(args, capture_output=True, text=True, **kwargs)
    assert done.returncode == 0, f"{args[0]} failed:\n{done.stdout}\n{done.stderr}"
    return done


def libpq_args(dsn):
    fields = dict(part.split("=", 1) for part in dsn.split())
    return ["-h", fields["host"], "-p", fields["port"], "-U", fields["user"]]


def database(dsn):
    return dict(part.split("=", 1) for part in dsn.split())["dbname"]


def as_postgres(args):
    return ["runuser", "-u", "postgres", "--", *args] if os.getuid() == 0 else list(args)


@contextlib.contextmanager
def postgres_cluster():
    """A throw-away PostgreSQL 15 cluster on a free loopback port; yields its port."""
    work = tempfile.mkdtemp(prefix="steady-pg-")
    if os.getuid() == 0:
        shutil.chown(work, user="postgres")
    data = os.path.join(work, "data")
    port = free_port()
    run(*as_postgres([f"{PG_BIN}/initdb", "-D", data, "-A", "trust", "-U", "postgres"]))
    options = f"-p {port} -k {work} -c listen_addresses=127.0.0.1 -c fsync=off"
    run(*as_postgres([f"{PG_BIN}/pg_ctl", "-D", data, "-l", os.path.join(work, "log"), "-w",
                      "-o", options, "start"]))
    try:
        yield port
    finally:
        subprocess.run(as_postgres([f"{PG_BIN}/pg_ctl", "-D", data, "-m", "immediate", "-w",
                                    "stop"]), capture_output=True)
        shutil.rmtree(work, ignore_errors=True)


def contents(dsn):
    """What must survive a dump: per table its row count and the hash of its rows' COPY text in
    key order, per sequence its position, and the view's rows."""
    found = {}
    with psycopg.connect(dsn, options="-c TimeZone=UTC", autocommit=True) as conn:
        for table, order in TABLES.items():
            digest = hashlib.sha256()
            query = f"COPY (SELECT * FROM {table} ORDER BY {order}) TO STDOUT"
            with conn.cursor().copy(query) as copy:
                for block in copy:
                    digest.update(block)
            count = conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            found[table] = (count, digest.hexdigest())
        for sequence in SEQUENCES:
            found[sequence] = conn.execute(
                f"SELECT last_value, is_called FROM {sequence}").fetchone()
        found["kind_view"] = conn.execute("SELECT * FROM kind_view ORDER BY id").fetchall()
    return found


def dump(dsn, path, *options):
    run(f"{PG_BIN}/pg_dump", *libpq_args(dsn), *options, "-f", path, database(dsn))


def plain_text(path):
    """A plain dump without its `\\restrict` lines, whose key changes with every dump."""
    with open(path) as f:
        return [line for line in f if not line.startswith(("\\restrict", "\\unrestrict"))]


def test_dump_and_restore_into_steadydb_and_postgresql(server, tmp_path):
    with psycopg.connect(server, autocommit=True) as conn:
        conn.execute(SCHEMA)
    source = libpq_args(server)
    run(f"{PG_BIN}/pgbench", "-i", "-s", "1", *source, "steady")
    run(f"{PG_BIN}/pgbench", "-t", "50", "-c", "2", *source, "steady")
    expected = contents(server)
    assert expected["pgbench_accounts"][0] == 100_000
    assert expected["pgbench_history"][0] == 100
    assert expected["kinds"][0] == 3

    plain, custom = str(tmp_path / "plain.sql"), str(tmp_path / "custom.dump")
    dump(server, plain)
    dump(server, custom, "-Fc")

    with steady_server(ssl=False) as from_plain:
        run(f"{PG_BIN}/psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", *libpq_args(from_plain),
            "-d", "steady", "-f", plain)
        assert contents(from_plain) == expected
        again = str(tmp_path / "again.sql")
        dump(from_plain, again)
        assert plain_text(again) == plain_text(plain)

    with steady_server(ssl=False) as from_custom:
        run(f"{PG_BIN}/pg_restore", "--exit-on-error", *libpq_args(from_custom), "-d", "steady",
            custom)
        assert contents(from_custom) == expected

    with postgres_cluster() as port:
        admin = ["-h", "127.0.0.1", "-p", str(port), "-U", "postgres"]
        run(f"{PG_BIN}/psql", "-X", "-q", *admin, "-d", "postgres", "-c", "CREATE ROLE steady",
            "-c", "CREATE DATABASE plain", "-c", "CREATE DATABASE custom")
        run(f"{PG_BIN}/psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", *admin, "-d", "plain",
            "-f", plain)
        run(f"{PG_BIN}/pg_restore", "--exit-on-error", *admin, "-d", "custom", custom)
        for name in ("plain", "custom"):
            dsn = f"host=127.0.0.1 port={port} user=postgres dbname={name}"
            assert contents(dsn) == expected, name

        # And the other way: a database made by PostgreSQL (serial columns' sequences AS integer,
        # pgbench's tables), dumped by pg_dump --no-owner, restored into a fresh SteadyDB.
        run(f"{PG_BIN}/psql", "-X", "-q", *admin, "-d", "postgres", "-c", "CREATE DATABASE origin")
        origin = f"host=127.0.0.1 port={port} user=postgres dbname=origin"
        with psycopg.connect(origin, autocommit=True) as conn:
            conn.execute(SCHEMA)
        run(f"{PG_BIN}/pgbench", "-i", "-s", "1", *admin, "origin")
        run(f"{PG_BIN}/pgbench", "-t", "50", "-c", "2", *admin, "origin")
        from_postgres = str(tmp_path / "from_postgres.sql")
        dump(origin, from_postgres, "--no-owner")
        with steady_server(ssl=False) as target:
            run(f"{PG_BIN}/psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", *libpq_args(target),
                "-d", "steady", "-f", from_postgres)
            assert contents(target) == contents(origin)
