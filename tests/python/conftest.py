"""The server every test module runs against: `steady serve` (STEADY_BIN) on a fresh data
directory (removed afterwards) and a free port on 127.0.0.1, with TLS on (a self-signed
certificate made by openssl), so clients that prefer SSL (libpq's default) use it. One server per
test module.
"""

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
import time

import psycopg
import pytest

BIN = os.environ.get("STEADY_BIN", "target/release/steady")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def add_settings(path, lines):
    """Appends to the steady.toml at `path` each of `lines` it does not hold yet."""
    present = open(path).read().splitlines() if os.path.exists(path) else []
    with open(path, "a") as config:
        config.writelines(f"{line}\n" for line in lines if line not in present)


@contextlib.contextmanager
def steady_server(ssl=True, data=None):
    """A `steady serve` on `data` (default: a fresh data directory, removed afterwards; TLS on
    with `ssl`); yields its conninfo."""
    owned = data is None
    data = data or tempfile.mkdtemp(prefix="steady-py-")
    settings = []
    if not os.path.exists(os.path.join(data, "space_000000.sdb")):
        # A new directory: a 64 MB redo log instead of the default 1 GB (a CI disk is small).
        os.makedirs(data, exist_ok=True)
        settings.append('redo_log_size = "64MB"')
    if ssl:
        subprocess.run(
            ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
             "-subj", "/CN=localhost", "-keyout", os.path.join(data, "server.key"),
             "-out", os.path.join(data, "server.crt")],
            check=True, capture_output=True,
        )
        settings.append("ssl = true")
    add_settings(os.path.join(data, "steady.toml"), settings)
    port = free_port()
    proc = subprocess.Popen(
        [BIN, "serve", "--data", data, "--listen", f"127.0.0.1:{port}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            psycopg.connect(f"host=127.0.0.1 port={port} user=steady dbname=steady").close()
            break
        except psycopg.OperationalError:
            if proc.poll() is not None:
                raise RuntimeError(proc.stdout.read().decode())
            time.sleep(0.2)
    else:
        proc.kill()
        raise RuntimeError("the server did not start")
    try:
        yield f"host=127.0.0.1 port={port} user=steady dbname=steady"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if owned:
            shutil.rmtree(data, ignore_errors=True)


@pytest.fixture(scope="module")
def server():
    with steady_server() as dsn:
        yield dsn
