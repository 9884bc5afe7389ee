#!/usr/bin/env bash
# sysbench 1.0.20 (--db-driver=pgsql) against SteadyDB and, for comparison, PostgreSQL 15 on the
# same machine: oltp_read_write, oltp_update_index, oltp_delete and oltp_point_select, each
# prepare, run (SECONDS, 8 threads) and cleanup. A run fails on any fatal error, or when the errors
# sysbench ignores and retries (deadlocks, serialization failures, duplicate keys) exceed 1% of the
# transactions.
#
#   scripts/sysbench.sh [steady|postgres|both] [TABLE_SIZE] [SECONDS]
#
# Prints one line per test: `system test tps transactions ignored_errors`.
set -euo pipefail
cd "$(dirname "$0")/.."

TARGET="${1:-both}"
TABLE_SIZE="${2:-100000}"
SECONDS_PER_RUN="${3:-60}"
PG_BIN=/usr/lib/postgresql/15/bin

if ! command -v sysbench >/dev/null || [ ! -x "$PG_BIN/psql" ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq sysbench postgresql-15 >/dev/null
fi

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

WORK="$(mktemp -d)"
SERVER_PID=""
cleanup() {
  if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

wait_ready() {
  for _ in $(seq 1 300); do
    if "$PG_BIN/psql" -h 127.0.0.1 -p "$PORT" -U "$USER_NAME" -d postgres -Atc 'select 1' >/dev/null 2>&1; then return 0; fi
    sleep 0.2
  done
  echo "server on port $PORT did not start" >&2
  return 1
}

start_steady() {
  cargo build --release -q -p steady
  PORT="$(free_port)"
  USER_NAME=steady
  ./target/release/steady serve --data "$WORK/steady" --listen "127.0.0.1:$PORT" >"$WORK/steady.log" 2>&1 &
  SERVER_PID=$!
  wait_ready
}

start_postgres() {
  PORT="$(free_port)"
  USER_NAME=postgres
  chown -R postgres "$WORK" 2>/dev/null || true
  su postgres -c "$PG_BIN/initdb -D $WORK/pg -A trust -U postgres" >/dev/null
  su postgres -c "$PG_BIN/postgres -D $WORK/pg -p $PORT -k $WORK -c listen_addresses=127.0.0.1" >"$WORK/pg.log" 2>&1 &
  SERVER_PID=$!
  wait_ready
}

stop_server() {
  kill "$SERVER_PID" && wait "$SERVER_PID" 2>/dev/null || true
  SERVER_PID=""
}

sb() {
  local test=$1
  shift
  sysbench "$test" --db-driver=pgsql --pgsql-host=127.0.0.1 --pgsql-port="$PORT" \
    --pgsql-user="$USER_NAME" --pgsql-password= --pgsql-db=postgres --tables=1 \
    --table-size="$TABLE_SIZE" "$@"
}

run_test() {
  local system=$1 test=$2 out
  sb "$test" prepare >"$WORK/prepare.log" 2>&1 || { cat "$WORK/prepare.log"; return 1; }
  out="$(sb "$test" --threads=8 --time="$SECONDS_PER_RUN" --report-interval=0 run 2>&1)" || {
    echo "$out" | tail -20
    sb "$test" cleanup >/dev/null 2>&1 || true
    return 1
  }
  sb "$test" cleanup >"$WORK/cleanup.log" 2>&1 || { cat "$WORK/cleanup.log"; return 1; }
  local transactions ignored tps
  transactions="$(grep -Eo 'transactions: +[0-9]+' <<<"$out" | grep -Eo '[0-9]+$')"
  tps="$(grep -Eo 'transactions: +[0-9]+ +\([0-9.]+' <<<"$out" | grep -Eo '[0-9.]+$')"
  ignored="$(grep -Eo 'ignored errors: +[0-9]+' <<<"$out" | grep -Eo '[0-9]+$')"
  echo "$system $test tps=$tps transactions=$transactions ignored_errors=$ignored"
  if grep -q FATAL <<<"$out"; then return 1; fi
  python3 -c "import sys; sys.exit(0 if $ignored * 100 < max($transactions, 1) else 1)"
}

run_system() {
  local system=$1 status=0
  "start_$system"
  for test in oltp_read_write oltp_update_index oltp_delete oltp_point_select; do
    run_test "$system" "$test" || status=1
  done
  stop_server
  return $status
}

overall=0
case "$TARGET" in
  steady) run_system steady || overall=1 ;;
  postgres) run_system postgres || overall=1 ;;
  both) run_system steady || overall=1; run_system postgres || overall=1 ;;
  *) echo "usage: $0 [steady|postgres|both] [TABLE_SIZE] [SECONDS]" >&2; exit 2 ;;
esac
exit $overall
