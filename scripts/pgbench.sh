#!/usr/bin/env bash
# pgbench 15 against SteadyDB and, for comparison, PostgreSQL 15 on the same machine with the same
# settings (fsync on for both): for each of the tpcb-like, simple-update and select-only scripts,
# `pgbench -i -s SCALE` with the default init steps, then the script for SECONDS with -c 8 -j 2.
# Checks that no transaction failed and that the balances add up (check_balances in
# scripts/lib/pgbench.sh).
#
#   scripts/pgbench.sh [steady|postgres|both] [SCALE] [SECONDS]
#
# Installs postgresql-15 (for pgbench, psql and the reference server) when missing. Prints one
# line per run: `system script tps failed`. Exits non-zero if a check fails.
set -euo pipefail
cd "$(dirname "$0")/.."

TARGET="${1:-both}"
SCALE="${2:-10}"
SECONDS_PER_RUN="${3:-60}"

# shellcheck source=scripts/lib/install.sh
source scripts/lib/install.sh
ensure_clients
# shellcheck source=scripts/lib/servers.sh
source scripts/lib/servers.sh
# shellcheck source=scripts/lib/pgbench.sh
source scripts/lib/pgbench.sh

run_system() {
  local system=$1 status=0
  "start_$system"
  for script in tpcb-like simple-update select-only; do
    pgbench_init "$SCALE" || return 1
    pgbench_run 8 "$SECONDS_PER_RUN" -b "$script" || status=1
    echo "$system $script tps=$PGBENCH_TPS failed=$PGBENCH_FAILED"
    [ "$PGBENCH_FAILED" = "0" ] || status=1
    check_balances "$script" || status=1
  done
  "stop_$system"
  return $status
}

run_targets "$TARGET" "usage: $0 [steady|postgres|both] [SCALE] [SECONDS]"
