# shellcheck shell=bash
# Sourced by the scripts that drive real clients: installs through apt-get (as root, else through
# sudo), when any is missing, PostgreSQL 15 (the reference server, psql, pgbench, pg_dump and
# pg_restore), sysbench, fio (which `steady bench fragmented-scan` measures the disk with),
# openssl (the TLS tests make their certificates) and Python's venv and pip (stock Debian's
# python3 has neither; the Python client tests run in a virtual environment).

ensure_clients() {
  if [ -x /usr/lib/postgresql/15/bin/postgres ] && [ -x /usr/lib/postgresql/15/bin/pgbench ] \
    && command -v sysbench >/dev/null && command -v fio >/dev/null && command -v openssl >/dev/null \
    && python3 -c 'import venv, ensurepip' 2>/dev/null; then
    return 0
  fi
  local sudo=""
  if [ "$(id -u)" != 0 ]; then sudo=sudo; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq postgresql-15 postgresql-client-15 \
    sysbench fio openssl python3-venv python3-pip >/dev/null
}

# ensure_python_env DIR: a virtual environment at DIR (made once) holding the Python clients the
# tests use — psycopg 3, pytest, SQLAlchemy 2, Alembic and Django 5 — from PyPI.
ensure_python_env() {
  local dir=$1
  if [ ! -x "$dir/bin/python" ]; then python3 -m venv "$dir"; fi
  if ! "$dir/bin/python" -c 'import psycopg, pytest, sqlalchemy, alembic, django' 2>/dev/null; then
    "$dir/bin/python" -m pip install -q "psycopg[binary]>=3.1" pytest "sqlalchemy>=2,<3" alembic \
      "django>=5,<6"
  fi
}
