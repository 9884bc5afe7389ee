"""`steady backup` (issue 17): an online physical backup taken while pgbench writes is accepted by
`steady check` and opens with pgbench's invariant intact (the accounts', tellers', branches' and
history's sums equal: no transaction half in the copy); a backup of the stopped directory holds
exactly its rows. The copies are opened by real servers and read over the wire.
"""

import os
import shutil
import subprocess
import tempfile
import time

import psycopg

from conftest import BIN, steady_server

PG_BIN = "/usr/lib/postgresql/15/bin"

SUMS = """SELECT (SELECT sum(abalance) FROM pgbench_accounts), (SELECT sum(tbalance) FROM
pgbench_tellers), (SELECT sum(bbalance) FROM pgbench_branches), (SELECT sum(delta) FROM
pgbench_history), (SELECT count(*) FROM pgbench_history)"""


def pgbench_args(dsn):
    fields = dict(part.split("=", 1) for part in dsn.split())
    return ["-h", fields["host"], "-p", fields["port"], "-U", fields["user"], "steady"]


def sums(dsn):
    with psycopg.connect(dsn) as conn:
        return conn.execute(SUMS).fetchone()


def steady(*args):
    done = subprocess.run([BIN, *args], capture_output=True, text=True)
    assert done.returncode == 0, f"steady {' '.join(args)}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def test_backup_during_pgbench_and_of_a_stopped_directory():
    work = tempfile.mkdtemp(prefix="steady-py-backups-")
    try:
        backup_during_pgbench_and_when_stopped(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def backup_during_pgbench_and_when_stopped(work):
    data = os.path.join(work, "source")
    online, offline = os.path.join(work, "online"), os.path.join(work, "offline")
    with steady_server(ssl=False, data=data) as source:
        subprocess.run([f"{PG_BIN}/pgbench", "-i", "-s", "2", *pgbench_args(source)],
                       check=True, capture_output=True)
        # -n: no TRUNCATE of pgbench_history at the start (history is empty after -i), which
        # would make the polling reads below fail with 40001 when their snapshot predates it.
        load = subprocess.Popen([f"{PG_BIN}/pgbench", "-n", "-c", "4", "-T", "8",
                                 *pgbench_args(source)],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        deadline = time.time() + 60
        while sums(source)[4] < 500:
            assert time.time() < deadline and load.poll() is None, "pgbench did not start"
        port = dict(p.split("=", 1) for p in source.split())["port"]
        printed = steady("backup", data, online, "--listen", f"127.0.0.1:{port}")
        assert "files" in printed, printed
        output, _ = load.communicate(timeout=120)
        assert load.returncode == 0, output
        final = sums(source)
    assert "0 problems" in steady("check", online)
    with steady_server(ssl=False, data=online) as copy:
        accounts, tellers, branches, history, rows = sums(copy)
        assert accounts == tellers == branches == history, (accounts, tellers, branches, history)
        assert 500 <= rows < final[4], (rows, final)

    steady("backup", data, offline)
    assert "0 problems" in steady("check", offline)
    with steady_server(ssl=False, data=offline) as copy:
        assert sums(copy) == final
