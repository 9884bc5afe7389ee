#!/usr/bin/env bash
# The side-by-side harness of issue 12: starts SteadyDB (`steady serve`, buffer_pool_size in its
# steady.toml) and PostgreSQL 15 (a fresh cluster, shared_buffers equal to that pool, fsync and
# synchronous_commit on) side by side, runs the same workloads over the wire on both, one system
# after the other within each step, and prints a table per workload — each figure for SteadyDB,
# for PostgreSQL and their ratio, >1 meaning SteadyDB is better — or, with --json, one JSON object
# (scripts/compare.py formats both).
#
#   scripts/compare.sh [--only pgbench,sysbench,commit,bulk,joins] [--seconds N] [--scale N]
#                      [--table-size N] [--rows N] [--buffer-pool SIZE] [--json]
#
# Workloads:
#   pgbench   `pgbench -i -s SCALE` (timed), then tpcb-like, simple-update and select-only at 1 and
#             8 clients: tps, failed transactions and the balance check after each run; then the
#             resident memory of `steady serve` against the configured buffer pool.
#   sysbench  oltp_point_select, oltp_read_only, oltp_read_write, oltp_update_index, oltp_insert
#             (one table of TABLE_SIZE rows, 8 threads): tps and ignored (retried) errors in %.
#   commit    durable one-row commits: pgbench with a one-statement script (UPDATE of one row by
#             random key) at 1 and 16 clients: tps, and that every counted commit is in the table.
#   bulk      on ROWS rows: INSERT ... SELECT, COPY FROM STDIN, CREATE INDEX, a full-scan aggregate,
#             UPDATE and DELETE of 10% through an index, ADD COLUMN with a constant default: time
#             (psql's \timing; the scan's is the median of SCAN_RUNS runs) and redo (SteadyDB's wal_current_lsn) or WAL (pg_current_wal_lsn)
#             bytes per row affected.
#   joins     joins of 2 to 10 tables of 100 to 100,000 rows (a star around a fact table, a chain
#             of ten tables, self-joins of the fact table, an outer anti-join), each written with
#             commas and conditions in WHERE and with JOIN ... ON in a poor order, after ANALYZE:
#             the best of 3 times (psql's \timing), whether both systems return the same rows, and
#             each plan's join methods (hash, merge, nested loop) and whether they are the same.
#
# Defaults: all workloads, 30 s per timed run, scale 10, 100,000 sysbench rows, 1,000,000 bulk
# rows, a 512MB buffer pool. STEADY_BIN names the binary (default target/release/steady, built
# when missing). Installs postgresql-15 and sysbench when missing. Progress goes to stderr. Exits
# non-zero when a check fails (failed transactions, balances, sysbench errors of 1% or more, lost
# commits), after printing the figures.
set -euo pipefail
cd "$(dirname "$0")/.."

usage="usage: $0 [--only pgbench,sysbench,commit,bulk,joins] [--seconds N] [--scale N] [--table-size N] [--rows N] [--buffer-pool SIZE] [--json]"
ONLY=pgbench,sysbench,commit,bulk,joins
SECONDS_PER_RUN=30
SCALE=10
TABLE_SIZE=100000
ROWS=1000000
# Runs of the full-scan aggregate (its figure is their median).
SCAN_RUNS=5
BUFFER_POOL=512MB
FORMAT=table
while [ $# -gt 0 ]; do
  case "$1" in
    --only) ONLY="$2"; shift 2 ;;
    --seconds) SECONDS_PER_RUN="$2"; shift 2 ;;
    --scale) SCALE="$2"; shift 2 ;;
    --table-size) TABLE_SIZE="$2"; shift 2 ;;
    --rows) ROWS="$2"; shift 2 ;;
    --buffer-pool) BUFFER_POOL="$2"; shift 2 ;;
    --json) FORMAT=json; shift ;;
    -h | --help) echo "$usage"; exit 0 ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
done
for workload in ${ONLY//,/ }; do
  case "$workload" in
    pgbench | sysbench | commit | bulk | joins) ;;
    *) echo "unknown workload $workload; $usage" >&2; exit 2 ;;
  esac
done
export BUFFER_POOL

# shellcheck source=scripts/lib/install.sh
source scripts/lib/install.sh
ensure_clients
# shellcheck source=scripts/lib/servers.sh
source scripts/lib/servers.sh
# shellcheck source=scripts/lib/pgbench.sh
source scripts/lib/pgbench.sh
# shellcheck source=scripts/lib/sysbench.sh
source scripts/lib/sysbench.sh

SYSTEMS=(steady postgres)
RESULTS="$WORK/results.tsv"
CHECKS_FAILED=0

progress() { echo "compare: $*" >&2; }

# record WORKLOAD FIGURE BETTER SYSTEM VALUE — BETTER is higher, lower or none (no ratio).
record() { printf '%s\t%s\t%s\t%s\t%s\n' "$@" >>"$RESULTS"; }

# record_check WORKLOAD FIGURE SYSTEM COMMAND...: records ok or FAILED as COMMAND succeeds.
record_check() {
  local workload=$1 figure=$2 system=$3
  shift 3
  if "$@" >&2; then
    record "$workload" "$figure" none "$system" ok
  else
    record "$workload" "$figure" none "$system" FAILED
    CHECKS_FAILED=1
  fi
}

clients_label() { if [ "$1" = 1 ]; then echo "1 client"; else echo "$1 clients"; fi; }

wants() { [[ ",$ONLY," == *",$1,"* ]]; }

# --- pgbench ---------------------------------------------------------------------------------------

pgbench_script_on() {
  local system=$1 script=$2 clients
  use_server "$system"
  progress "pgbench $script on $system: init -s $SCALE"
  pgbench_init "$SCALE"
  if [ "$script" = tpcb-like ]; then
    record pgbench "init -s $SCALE (s)" lower "$system" "$PGBENCH_INIT_SECONDS"
  fi
  # -n: no vacuum before a run, whose truncation of pgbench_history would break the balances
  # check of the second run (the init has just vacuumed).
  for clients in 1 8; do
    progress "pgbench $script on $system: $(clients_label "$clients"), $SECONDS_PER_RUN s"
    pgbench_run "$clients" "$SECONDS_PER_RUN" -n -b "$script" || CHECKS_FAILED=1
    record pgbench "$script, $(clients_label "$clients") (tps)" higher "$system" "$PGBENCH_TPS"
    record pgbench "$script, $(clients_label "$clients"): failed transactions" none "$system" "$PGBENCH_FAILED"
    [ "$PGBENCH_FAILED" = 0 ] || CHECKS_FAILED=1
    record_check pgbench "$script, $(clients_label "$clients"): balances" "$system" check_balances "$script"
  done
}

steady_memory() {
  local status="/proc/$STEADY_PID/status" frames
  use_server steady
  frames="$(sql -c "SELECT value FROM steady_metrics WHERE name = 'buffer_pool_frames'")"
  record memory "buffer pool (configured)" none steady "$BUFFER_POOL"
  record memory "buffer pool frames" none steady "$frames"
  record memory "steady serve VmRSS (MB)" none steady "$(awk '/^VmRSS/ {printf "%.1f", $2 / 1024}' "$status")"
  record memory "steady serve VmHWM (MB)" none steady "$(awk '/^VmHWM/ {printf "%.1f", $2 / 1024}' "$status")"
  use_server postgres
  record memory "buffer pool (configured)" none postgres "$(sql -c 'SHOW shared_buffers')"
}

run_pgbench() {
  local script system
  for script in tpcb-like simple-update select-only; do
    for system in "${SYSTEMS[@]}"; do pgbench_script_on "$system" "$script"; done
  done
  steady_memory
  for system in "${SYSTEMS[@]}"; do
    use_server "$system"
    for table in pgbench_accounts pgbench_branches pgbench_tellers pgbench_history; do
      sql -c "DROP TABLE $table"
    done
  done
}

# --- sysbench --------------------------------------------------------------------------------------

run_sysbench() {
  local test system
  for test in oltp_point_select oltp_read_only oltp_read_write oltp_update_index oltp_insert; do
    for system in "${SYSTEMS[@]}"; do
      use_server "$system"
      progress "sysbench $test on $system: $TABLE_SIZE rows, 8 threads, $SECONDS_PER_RUN s"
      sysbench_test "$test" "$TABLE_SIZE" 8 "$SECONDS_PER_RUN" || CHECKS_FAILED=1
      record sysbench "$test (tps)" higher "$system" "$SB_TPS"
      record sysbench "$test ignored errors (%)" none "$system" \
        "$(python3 -c "print(f'{100 * $SB_IGNORED / max($SB_TRANSACTIONS, 1):.3f}')" 2>/dev/null || echo '?')"
      sysbench_errors_ok || CHECKS_FAILED=1
    done
  done
}

# --- durable one-row commits -----------------------------------------------------------------------

COMMIT_KEYS=10000

# True when commit_t's counters add up to the commits pgbench counted (EXPECTED).
# shellcheck disable=SC2317  # called through record_check
commits_all_there() {
  local counted
  counted="$(sql -c 'SELECT sum(n) FROM commit_t')"
  echo "  commit_t: sum(n)=$counted, commits counted by pgbench=$1"
  [ "$counted" = "$1" ]
}

run_commit() {
  local system clients committed script="$WORK/commit.sql"
  printf '\\set id random(1, %d)\nUPDATE commit_t SET n = n + 1 WHERE id = :id;\n' "$COMMIT_KEYS" >"$script"
  for system in "${SYSTEMS[@]}"; do
    use_server "$system"
    sql -c "CREATE TABLE commit_t (id integer PRIMARY KEY, n integer NOT NULL)"
    sql -c "INSERT INTO commit_t SELECT g, 0 FROM generate_series(1, $COMMIT_KEYS) g"
  done
  for clients in 1 16; do
    for system in "${SYSTEMS[@]}"; do
      use_server "$system"
      committed="$(sql -c 'SELECT sum(n) FROM commit_t')"
      progress "one-row commits on $system: $(clients_label "$clients"), $SECONDS_PER_RUN s"
      pgbench_run "$clients" "$SECONDS_PER_RUN" -n -f "$script" || CHECKS_FAILED=1
      record commit "$(clients_label "$clients") (tps)" higher "$system" "$PGBENCH_TPS"
      record_check commit "$(clients_label "$clients"): every commit counted is there" "$system" \
        commits_all_there "$((committed + PGBENCH_TRANSACTIONS))"
    done
  done
  for system in "${SYSTEMS[@]}"; do use_server "$system"; sql -c "DROP TABLE commit_t"; done
}

# --- bulk suite ------------------------------------------------------------------------------------

redo_bytes() {
  if [ "$1" = steady ]; then
    sql -c "SELECT value FROM steady_metrics WHERE name = 'wal_current_lsn'"
  else
    sql -c "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint"
  fi
}

# settle_purge SYSTEM: on SteadyDB, waits (at most 60 s) until purge has caught up with earlier
# steps, so that a step's time and redo are its own and not partly the background purge of the
# step before (PostgreSQL's autovacuum of earlier steps is not counted either).
settle_purge() {
  [ "$1" = steady ] || return 0
  local i
  for i in $(seq 1 600); do
    [ "$(sql -c "SELECT value FROM steady_metrics WHERE name = 'purge_lag'")" = 0 ] && return 0
    sleep 0.1
  done
  echo "compare: purge still behind after 60 s" >&2
}

# bulk_step SYSTEM NAME SCRIPT: runs SCRIPT (after `\timing on`, one statement, or one read-only
# statement several times) and records its time (the median of its statements' times) and its
# redo bytes per row affected (the row count of its command tag, else ROWS).
bulk_step() {
  local system=$1 name=$2 script=$3 before after out ms rows
  settle_purge "$system"
  progress "bulk $name on $system"
  before="$(redo_bytes "$system")"
  run_client "$WORK/bulk.log" "$PG_BIN/psql" -X -h 127.0.0.1 -p "$PORT" -U "$USER_NAME" -d postgres \
    -v ON_ERROR_STOP=1 -f "$script" || { cat "$WORK/bulk.log" >&2; return 1; }
  out="$(<"$WORK/bulk.log")"
  after="$(redo_bytes "$system")"
  ms="$(grep -Eo '^Time: [0-9.]+ ms' <<<"$out" | cut -d' ' -f2 | sort -n | python3 -c 'import sys, statistics; print(statistics.median(float(l) for l in sys.stdin))')"
  rows="$(grep -Eo '^(INSERT [0-9]+|UPDATE|DELETE|COPY) [0-9]+$' <<<"$out" | tail -1 | grep -Eo '[0-9]+$' || echo "$ROWS")"
  record bulk "$name (s)" lower "$system" "$(python3 -c "print(f'{$ms / 1000:.4f}')")"
  record bulk "$name redo bytes/row ($rows rows)" lower "$system" \
    "$(python3 -c "print(f'{($after - $before) / max($rows, 1):.1f}')")"
}

# Writes one psql script per bulk step into DIR, in the order they run.
write_bulk_scripts() {
  local dir=$1
  mkdir -p "$dir"
  printf '\\timing on\nINSERT INTO bulk_a SELECT g, g %% 10, g FROM generate_series(1, %d) g;\n' "$ROWS" >"$dir/1-insert-select"
  {
    printf '\\timing on\nCOPY bulk_c FROM STDIN;\n'
    awk -v n="$ROWS" 'BEGIN { for (g = 1; g <= n; g++) printf "%d\t%d\t%d\n", g, g % 10, g }'
    printf '\\.\n'
  } >"$dir/2-copy-from-stdin"
  printf '\\timing on\nCREATE INDEX bulk_a_v ON bulk_a (v);\n' >"$dir/3-create-index"
  # Read-only, so run SCAN_RUNS times: the step's time is their median (one run varies by up to
  # 40% on a 2-core machine, for both systems).
  {
    printf '\\timing on\n'
    for _ in $(seq 1 "$SCAN_RUNS"); do printf 'SELECT count(*), sum(w) FROM bulk_a;\n'; done
  } >"$dir/4-full-scan-aggregate"
  printf '\\timing on\nUPDATE bulk_a SET w = w + 1 WHERE v = 3;\n' >"$dir/5-update-10pct-by-index"
  printf '\\timing on\nDELETE FROM bulk_a WHERE v = 5;\n' >"$dir/6-delete-10pct-by-index"
  printf '\\timing on\nALTER TABLE bulk_a ADD COLUMN x integer DEFAULT 7;\n' >"$dir/7-add-column-default"
}

run_bulk() {
  local dir="$WORK/bulk" system script name
  progress "bulk: writing the $ROWS-row COPY data"
  write_bulk_scripts "$dir"
  for script in "$dir"/*; do
    name="$(basename "$script")"
    name="${name#*-}"
    for system in "${SYSTEMS[@]}"; do
      use_server "$system"
      case "$name" in
        insert-select) sql -c "CREATE TABLE bulk_a (id integer PRIMARY KEY, v integer NOT NULL, w integer NOT NULL)" ;;
        copy-from-stdin) sql -c "CREATE TABLE bulk_c (id integer PRIMARY KEY, v integer NOT NULL, w integer NOT NULL)" ;;
        update-10pct-by-index) sql -c "ANALYZE bulk_a" ;;
      esac
      bulk_step "$system" "$name" "$script"
    done
  done
  for system in "${SYSTEMS[@]}"; do
    use_server "$system"
    sql -c "DROP TABLE bulk_a"
    sql -c "DROP TABLE bulk_c"
  done
}

# --- joins ---------------------------------------------------------------------------------------

JOIN_SETUP="
CREATE TABLE jf (id integer PRIMARY KEY, d1 integer, d2 integer, d3 integer, amount integer);
CREATE TABLE jd1 (id integer PRIMARY KEY, name text, grp integer);
CREATE TABLE jd2 (id integer PRIMARY KEY, name text, grp integer);
CREATE TABLE jd3 (id integer PRIMARY KEY, name text, grp integer);
INSERT INTO jf SELECT g, g % 100 + 1, g % 1000 + 1, g % 10000 + 1, g % 97 FROM generate_series(1, 100000) g;
INSERT INTO jd1 SELECT g, 'a' || g, g % 10 FROM generate_series(1, 100) g;
INSERT INTO jd2 SELECT g, 'b' || g, g % 10 FROM generate_series(1, 1000) g;
INSERT INTO jd3 SELECT g, 'c' || g, g % 10 FROM generate_series(1, 12000) g;
CREATE INDEX jf_d1 ON jf (d1);
$(for i in $(seq 1 10); do
  printf 'CREATE TABLE jc%d (id integer PRIMARY KEY, next integer);\n' "$i"
  printf 'INSERT INTO jc%d SELECT g, (g * 7) %% 1000 + 1 FROM generate_series(1, 1000) g;\n' "$i"
done)
ANALYZE;"

chain_from() { local i; for i in $(seq 1 10); do printf '%sjc%d' "$([ "$i" = 1 ] || echo ', ')" "$i"; done; }
chain_where() { local i; for i in $(seq 1 9); do printf 'jc%d.next = jc%d.id AND ' "$i" $((i + 1)); done; }
chain_on() { local i; printf 'jc10'; for i in $(seq 9 -1 1); do printf ' JOIN jc%d ON jc%d.next = jc%d.id' "$i" "$i" $((i + 1)); done; }

JOIN_QUERIES=(
  "2 tables, commas|SELECT count(*), sum(f.amount) FROM jf f, jd1 d WHERE f.d1 = d.id AND d.grp = 3"
  "2 tables, JOIN ON|SELECT count(*), sum(f.amount) FROM jd1 d JOIN jf f ON f.d1 = d.id WHERE d.grp = 3"
  "2 tables, one row by key|SELECT f.amount, d.name FROM jf f JOIN jd1 d ON d.id = f.d1 WHERE f.id = 777"
  "2 tables, one dimension row by name|SELECT count(*), sum(f.amount) FROM jf f, jd1 d WHERE f.d1 = d.id AND d.name = 'a7'"
  "2 tables, grouped|SELECT d.grp, sum(f.amount) FROM jf f JOIN jd1 d ON f.d1 = d.id GROUP BY d.grp ORDER BY d.grp"
  "4 tables star, commas|SELECT count(*), sum(f.amount) FROM jd3 c, jd2 b, jf f, jd1 a WHERE f.d1 = a.id AND f.d2 = b.id AND f.d3 = c.id AND a.grp = 1 AND b.grp = 2"
  "4 tables star, JOIN ON|SELECT count(*), sum(f.amount) FROM jd3 c JOIN jd2 b ON b.grp = 2 JOIN jf f ON f.d2 = b.id AND f.d3 = c.id JOIN jd1 a ON f.d1 = a.id AND a.grp = 1"
  "3 tables of 100000, commas|SELECT count(*), sum(c.amount) FROM jf a, jf b, jf c WHERE a.id = b.id AND b.id = c.id AND a.d1 = 5"
  "10 tables chain, commas|SELECT count(*) FROM $(chain_from) WHERE $(chain_where)jc1.id <= 100"
  "10 tables chain, JOIN ON|SELECT count(*) FROM $(chain_on) WHERE jc1.id <= 100"
  "outer anti-join|SELECT count(*) FROM jd3 c LEFT JOIN jf f ON f.d3 = c.id WHERE f.id IS NULL"
)

# best_ms QUERY: the best of 3 runs of QUERY on the current server, in ms.
best_ms() {
  local i
  for i in 1 2 3; do
    "$PG_BIN/psql" -X -h 127.0.0.1 -p "$PORT" -U "$USER_NAME" -d postgres -v ON_ERROR_STOP=1 \
      -c '\timing on' -c "$1" | grep -Eo '^Time: [0-9.]+ ms' | cut -d' ' -f2
  done | sort -n | head -1
}

# join_methods QUERY: the join methods of QUERY's plan on the current server, sorted (hash,
# merge, nested loop; one per join node), e.g. "hash, hash, nested loop".
join_methods() {
  sql -c "EXPLAIN $1" | { grep -Eo '(Hash|Merge)( [A-Za-z]+)* Join|Nested Loop' || true; } \
    | sed -E 's/^Hash.*/hash/; s/^Merge.*/merge/; s/^Nested Loop/nested loop/' | sort | paste -sd, - | sed 's/,/, /g'
}

run_joins() {
  local system entry name query answers methods
  for system in "${SYSTEMS[@]}"; do
    use_server "$system"
    progress "joins: loading the tables on $system"
    sql -c "$JOIN_SETUP" >/dev/null
  done
  for entry in "${JOIN_QUERIES[@]}"; do
    name="${entry%%|*}" query="${entry#*|}" answers=() methods=()
    for system in "${SYSTEMS[@]}"; do
      use_server "$system"
      progress "joins: $name on $system"
      record joins "$name (ms)" lower "$system" "$(best_ms "$query")"
      answers+=("$(sql -c "$query" | md5sum)")
      methods+=("$(join_methods "$query")")
      record joins "$name: join methods" none "$system" "${methods[-1]:-none}"
    done
    record_check joins "$name: same rows as PostgreSQL" steady test "${answers[0]}" = "${answers[1]}"
    record_check joins "$name: same join methods as PostgreSQL" steady test "${methods[0]}" = "${methods[1]}"
  done
  for system in "${SYSTEMS[@]}"; do
    use_server "$system"
    sql -c "DROP TABLE jf, jd1, jd2, jd3, $(chain_from)"
  done
}

# --- main ------------------------------------------------------------------------------------------

progress "starting SteadyDB and PostgreSQL 15 (buffer pool $BUFFER_POOL each)"
start_steady
start_postgres
use_server postgres
: >"$RESULTS"
{
  printf 'meta\tseconds\t%s\n' "$SECONDS_PER_RUN"
  printf 'meta\tpgbench_scale\t%s\n' "$SCALE"
  printf 'meta\tsysbench_table_size\t%s\n' "$TABLE_SIZE"
  printf 'meta\tbulk_rows\t%s\n' "$ROWS"
  printf 'meta\tbuffer_pool\t%s\n' "$BUFFER_POOL"
  printf 'meta\tsteady_bin\t%s\n' "$(steady_binary)"
  printf 'meta\tpostgres\t%s\n' "$(sql -c 'SHOW server_version')"
} >"$WORK/meta.tsv"

if wants pgbench; then run_pgbench; fi
if wants sysbench; then run_sysbench; fi
if wants commit; then run_commit; fi
if wants bulk; then run_bulk; fi
if wants joins; then run_joins; fi

printf 'meta\tchecks_passed\t%s\n' "$([ $CHECKS_FAILED = 0 ] && echo true || echo false)" >>"$WORK/meta.tsv"
python3 scripts/compare.py --format "$FORMAT" "$WORK/meta.tsv" "$RESULTS"
exit $CHECKS_FAILED
