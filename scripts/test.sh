#!/usr/bin/env bash
# The README's test command: installs what the tests need, then runs formatting, lints, every test
# of the workspace, the psycopg suite against a real server, and short pgbench and sysbench runs.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v cargo >/dev/null; then
  echo "cargo is required (Rust stable)" >&2
  exit 1
fi
if ! cargo nextest --version >/dev/null 2>&1; then
  cargo install cargo-nextest --locked
fi
rustup component add rustfmt clippy >/dev/null 2>&1 || true

# Real clients: psql and pgbench (postgresql-15), sysbench, psycopg 3, SQLAlchemy 2, Alembic,
# Django 5 and pytest.
# shellcheck source=scripts/lib/install.sh
source scripts/lib/install.sh
ensure_clients
PYTHON_ENV="$PWD/target/python-env"
ensure_python_env "$PYTHON_ENV"

cargo fmt --all -- --check
cargo clippy --workspace --all-targets -- -D warnings
cargo nextest run --workspace --no-fail-fast --profile ci

cargo build --release -p steady
STEADY_BIN="$PWD/target/release/steady" "$PYTHON_ENV/bin/python" -m pytest -q tests/python
bash scripts/pgbench.sh steady 1 10
bash scripts/sysbench.sh steady 10000 10
