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

# shellcheck source=scripts/lib/install.sh
source scripts/lib/install.sh
ensure_clients
# shellcheck source=scripts/lib/servers.sh
source scripts/lib/servers.sh
# shellcheck source=scripts/lib/sysbench.sh
source scripts/lib/sysbench.sh

run_test() {
  local system=$1 test=$2 status=0
  sysbench_test "$test" "$TABLE_SIZE" 8 "$SECONDS_PER_RUN" || status=1
  echo "$system $test tps=$SB_TPS transactions=$SB_TRANSACTIONS ignored_errors=$SB_IGNORED"
  sysbench_errors_ok || status=1
  return $status
}

run_system() {
  local system=$1 status=0
  "start_$system"
  for test in oltp_read_write oltp_update_index oltp_delete oltp_point_select; do
    run_test "$system" "$test" || status=1
  done
  "stop_$system"
  return $status
}

run_targets "$TARGET" "usage: $0 [steady|postgres|both] [TABLE_SIZE] [SECONDS]"
