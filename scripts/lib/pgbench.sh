# shellcheck shell=bash disable=SC2034  # sets figures for the scripts that source it
# Sourced by scripts/pgbench.sh and scripts/compare.sh (after scripts/lib/servers.sh): pgbench's
# initialisation, a timed run with its figures parsed, and the balance check of the built-in scripts,
# all against the current server (use_server).

# pgbench -i -s SCALE with the default init steps; sets PGBENCH_INIT_SECONDS.
pgbench_init() {
  local scale=$1 started=$EPOCHREALTIME
  run_client "$WORK/init.log" "$PG_BIN/pgbench" -h 127.0.0.1 -p "$PORT" -U "$USER_NAME" -i -s "$scale" postgres \
    || { cat "$WORK/init.log" >&2; return 1; }
  PGBENCH_INIT_SECONDS="$(python3 -c "print(f'{$EPOCHREALTIME - $started:.3f}')")"
}

# pgbench_run CLIENTS SECONDS ARGS...: runs pgbench with -c CLIENTS, -j 2 (at most one thread per
# client) for SECONDS and the given script arguments; sets PGBENCH_TPS, PGBENCH_FAILED and
# PGBENCH_TRANSACTIONS ("?" when not reported) and fails when pgbench does.
pgbench_run() {
  local clients=$1 seconds=$2 threads=2 out status=0
  shift 2
  if [ "$clients" -lt "$threads" ]; then threads=$clients; fi
  run_client "$WORK/pgbench.log" "$PG_BIN/pgbench" -h 127.0.0.1 -p "$PORT" -U "$USER_NAME" \
    -c "$clients" -j "$threads" -T "$seconds" "$@" postgres || status=1
  out="$(<"$WORK/pgbench.log")"
  PGBENCH_TPS="$(grep -Eo 'tps = [0-9.]+' <<<"$out" | head -1 | cut -d' ' -f3)"
  PGBENCH_TPS="${PGBENCH_TPS:-?}"
  PGBENCH_FAILED="$(grep -Eo 'number of failed transactions: [0-9]+' <<<"$out" | grep -Eo '[0-9]+$' || echo 0)"
  PGBENCH_TRANSACTIONS="$(grep -Eo 'number of transactions actually processed: [0-9]+' <<<"$out" | grep -Eo '[0-9]+$' || echo '?')"
  if [ $status != 0 ]; then tail -20 <<<"$out" >&2; fi
  return $status
}

# check_balances SCRIPT: after tpcb-like sum(abalance) = sum(bbalance) = sum(tbalance) =
# sum(delta); after simple-update (which leaves branches and tellers alone) sum(abalance) =
# sum(delta); after select-only nothing changed. Prints the sums; fails when they do not add up.
check_balances() {
  local script=$1 sums a b t h
  sums="$(sql -c "select (select sum(abalance) from pgbench_accounts), (select sum(bbalance) from pgbench_branches), (select sum(tbalance) from pgbench_tellers), (select coalesce(sum(delta), 0) from pgbench_history)")"
  IFS='|' read -r a b t h <<<"$sums"
  echo "  balances: accounts=$a branches=$b tellers=$t history=$h"
  case "$script" in
    tpcb-like) [ "$a" = "$b" ] && [ "$b" = "$t" ] && [ "$t" = "$h" ] ;;
    simple-update) [ "$a" = "$h" ] && [ "$b" = 0 ] && [ "$t" = 0 ] ;;
    select-only) [ "$a" = 0 ] && [ "$b" = 0 ] && [ "$t" = 0 ] && [ "$h" = 0 ] ;;
  esac
}
