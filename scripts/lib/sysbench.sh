# shellcheck shell=bash disable=SC2034  # sets figures for the scripts that source it
# Sourced by scripts/sysbench.sh and scripts/compare.sh (after scripts/lib/servers.sh): one
# sysbench 1.0.20 (--db-driver=pgsql) test against the current server (use_server), its figures
# parsed.

# sb TEST TABLE_SIZE ARGS...: sysbench on one table of TABLE_SIZE rows.
sb() {
  local test=$1 table_size=$2
  shift 2
  sysbench "$test" --db-driver=pgsql --pgsql-host=127.0.0.1 --pgsql-port="$PORT" \
    --pgsql-user="$USER_NAME" --pgsql-password= --pgsql-db=postgres --tables=1 \
    --table-size="$table_size" "$@"
}

# sysbench_test TEST TABLE_SIZE THREADS SECONDS: prepare, run, cleanup. Sets SB_TPS,
# SB_TRANSACTIONS and SB_IGNORED (the errors sysbench ignores and retries: deadlocks,
# serialization failures, duplicate keys). Fails on a failed step or a FATAL error.
sysbench_test() {
  local test=$1 table_size=$2 threads=$3 seconds=$4 out
  SB_TPS="?" SB_TRANSACTIONS="?" SB_IGNORED="?"
  run_client "$WORK/prepare.log" sb "$test" "$table_size" prepare || { cat "$WORK/prepare.log" >&2; return 1; }
  run_client "$WORK/run.log" sb "$test" "$table_size" --threads="$threads" --time="$seconds" --report-interval=0 run || {
    tail -20 "$WORK/run.log" >&2
    run_client /dev/null sb "$test" "$table_size" cleanup || true
    return 1
  }
  out="$(<"$WORK/run.log")"
  run_client "$WORK/cleanup.log" sb "$test" "$table_size" cleanup || { cat "$WORK/cleanup.log" >&2; return 1; }
  SB_TRANSACTIONS="$(grep -Eo 'transactions: +[0-9]+' <<<"$out" | grep -Eo '[0-9]+$')"
  SB_TPS="$(grep -Eo 'transactions: +[0-9]+ +\([0-9.]+' <<<"$out" | grep -Eo '[0-9.]+$')"
  SB_IGNORED="$(grep -Eo 'ignored errors: +[0-9]+' <<<"$out" | grep -Eo '[0-9]+$')"
  ! grep -q FATAL <<<"$out"
}

# True when the ignored errors of the last sysbench_test are under 1% of its transactions.
sysbench_errors_ok() {
  [[ "$SB_IGNORED" =~ ^[0-9]+$ && "$SB_TRANSACTIONS" =~ ^[0-9]+$ ]] \
    && [ $((SB_IGNORED * 100)) -lt $((SB_TRANSACTIONS > 1 ? SB_TRANSACTIONS : 1)) ]
}
