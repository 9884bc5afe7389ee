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

if ! command -v sysbench >/dev/null || [ ! -x /usr/lib/postgresql/15/bin/psql ]; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq sysbench postgresql-15 >/dev/null
fi

# shellcheck source=scripts/lib/servers.sh
source scripts/lib/servers.sh

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

run_targets "$TARGET" "usage: $0 [steady|postgres|both] [TABLE_SIZE] [SECONDS]"
