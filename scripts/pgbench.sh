#!/usr/bin/env bash
# pgbench 15 against SteadyDB and, for comparison, PostgreSQL 15 on the same machine with the same
# settings (fsync on for both): for each of the tpcb-like, simple-update and select-only scripts,
# `pgbench -i -s SCALE` with the default init steps, then the script for SECONDS with -c 8 -j 2.
# Checks that no transaction failed and that the balances add up: after tpcb-like
# sum(abalance) = sum(bbalance) = sum(tbalance) = sum(delta); after simple-update (which leaves
# branches and tellers alone) sum(abalance) = sum(delta); after select-only nothing changed.
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

if [ ! -x /usr/lib/postgresql/15/bin/pgbench ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql-15 >/dev/null
fi

# shellcheck source=scripts/lib/servers.sh
source scripts/lib/servers.sh

check_balances() {
  local script=$1 sums
  sums="$("$PG_BIN/psql" -h 127.0.0.1 -p "$PORT" -U "$USER_NAME" -d postgres -Atc \
    "select (select sum(abalance) from pgbench_accounts), (select sum(bbalance) from pgbench_branches), (select sum(tbalance) from pgbench_tellers), (select coalesce(sum(delta), 0) from pgbench_history)")"
  IFS='|' read -r a b t h <<<"$sums"
  echo "  balances: accounts=$a branches=$b tellers=$t history=$h"
  case "$script" in
    tpcb-like) [ "$a" = "$b" ] && [ "$b" = "$t" ] && [ "$t" = "$h" ] ;;
    simple-update) [ "$a" = "$h" ] && [ "$b" = 0 ] && [ "$t" = 0 ] ;;
    select-only) [ "$a" = 0 ] && [ "$b" = 0 ] && [ "$t" = 0 ] && [ "$h" = 0 ] ;;
  esac
}

run_system() {
  local system=$1 status=0
  "start_$system"
  for script in tpcb-like simple-update select-only; do
    "$PG_BIN/pgbench" -h 127.0.0.1 -p "$PORT" -U "$USER_NAME" -i -s "$SCALE" postgres >"$WORK/init.log" 2>&1 \
      || { cat "$WORK/init.log"; return 1; }
    local out
    out="$("$PG_BIN/pgbench" -h 127.0.0.1 -p "$PORT" -U "$USER_NAME" -c 8 -j 2 -T "$SECONDS_PER_RUN" -b "$script" postgres 2>&1)" || status=1
    local tps failed
    tps="$(grep -Eo 'tps = [0-9.]+' <<<"$out" | head -1 | cut -d' ' -f3)"
    failed="$(grep -Eo 'number of failed transactions: [0-9]+' <<<"$out" | grep -Eo '[0-9]+$' || echo 0)"
    echo "$system $script tps=${tps:-?} failed=${failed:-?}"
    [ "${failed:-1}" = "0" ] || status=1
    check_balances "$script" || status=1
  done
  stop_server
  return $status
}

run_targets "$TARGET" "usage: $0 [steady|postgres|both] [SCALE] [SECONDS]"
