#!/usr/bin/env bash
# The seed scenarios (../shared/seeds, issue 14) side by side: SteadyDB, PostgreSQL 15 and, where
# mariadb-server is installed, MariaDB 10.11's InnoDB, each over its own client (psql, mariadb) in
# one run, each with its own counters (SteadyDB steady_metrics, PostgreSQL pg_statio_user_tables,
# InnoDB Innodb_pages_read) and the bytes read from the disk (/proc/diskstats), fsync on for all.
#
#   scripts/seeds.sh [--only LIST] [--systems LIST] [--rows N] [--json FILE]
#
#   --only     scenarios, comma-separated (default all): 000 000-limit 001 002 004
#   --systems  default steady,postgres,mariadb (mariadb left out when mariadbd is missing)
#   --rows     rows of scenario 000's table (default 4,000,000, the issue's size)
#
# 000  A table (id bigint primary key, c char(60), v int) with an index on v, v = id % 50 and
#      id % 100, loaded with a 1GB pool, then restarted cold (the OS cache dropped, a 64MB pool,
#      SteadyDB with direct_io, InnoDB with O_DIRECT as it defaults; PostgreSQL reads through the
#      OS cache by design). 10% of the rows deleted three ways, each on a fresh load: one
#      statement through the index (v < 5, v < 10), 40 primary-key-range chunks (v < K AND id
#      BETWEEN ...), and one statement per value (v = i); then purge until the history is empty
#      (SteadyDB: history_length and purge_lag 0; InnoDB: trx_rseg_history_len 0; PostgreSQL,
#      autovacuum off: VACUUM of the table). Printed: the statements' and purge's time, the pages
#      read by both against the table's pages (table and indexes), the disk bytes read. Goal: pages
#      read <= 1.2x the table's and statements plus purge <= 0.5x InnoDB's primary-key-range way.
# 000-limit  1,000,000 rows, index on v = id % 5, an old REPEATABLE READ snapshot open in another
#      session; 200 statements each deleting 1,000 rows of v = 0 (DELETE ... LIMIT 1000; on
#      PostgreSQL DELETE ... WHERE ctid IN (SELECT ctid ... LIMIT 1000)). Goal: the last
#      statement's time within 2x the first's (each the median of ten: the first ten, the last
#      ten). LIMIT_TIMES=PREFIX keeps every statement's time in PREFIX.SYSTEM. Then, the old
#      snapshot still open, SELECT count(*) FROM t WHERE v = 0 (best of three): a read through
#      the 200,000 entries of rows deleted that the snapshot keeps.
# 001  7 indexes built one after the other on 100,000 rows of 8 CHAR(255): each system's log
#      bytes written by the builds (SteadyDB wal_current_lsn, PostgreSQL pg_current_wal_lsn,
#      InnoDB Innodb_lsn_current) against the bytes of the indexes built, and the builds' time.
#      Goal: log bytes <= 1.1x the indexes' bytes and time <= PostgreSQL's.
# 002  sysbench oltp_update_index (pareto, 8 threads) on 1,000,000 rows: SELECT avg(k) idle and
#      under the load at READ COMMITTED and REPEATABLE READ; each 5-second TPS of 60 s without a
#      snapshot held and of HOLD_SECONDS (default 135) with a REPEATABLE READ snapshot held, then
#      45 s after its release; the table's pages before the load and 30 s after the release.
#      Goals: avg(k) under load <= 1.5x idle; held median >= 0.9x the baseline median; no
#      interval held or after below 0.8x of it; pages after <= 1.1x before.
# 004  Two tables (id bigint primary key, pad varchar(300), 300 bytes) of BIG_GB GiB each (default 3) loaded
#      (BIG_ROWS rows if set) into a POOL_004 pool (default 12GB) and resident (PostgreSQL: pg_prewarm), beside sysbench
#      oltp_read_write (8 threads) on a table of 100,000 rows: 30 s without DDL (the baseline),
#      30 s with DROP TABLE of one big table 10 s in, 30 s with TRUNCATE of the other. Printed:
#      each statement's time (the client's), the worst 1-second TPS of each run against the
#      baseline's median (the baseline's own worst too: the noise floor), the max latency of each
#      run, the bytes read from the disk during the runs. Goal: DROP and TRUNCATE <= 10 ms, worst second >= 0.95x, max latency no worse than
#      the baseline's. KEEP_004=PREFIX keeps each run's sysbench output in PREFIX.SYSTEM.RUN.
#
# Each scenario's table is printed at its end; --json FILE also writes every figure as JSON
# lines. Needs root for dropping the OS cache (/proc/sys/vm/drop_caches).
set -euo pipefail
cd "$(dirname "$0")/.."

usage="usage: $0 [--only 000,000-limit,001,002,004] [--systems steady,postgres,mariadb] [--rows N] [--json FILE]"
ONLY="000,000-limit,001,002,004"
SYSTEMS="steady,postgres,mariadb"
ROWS=4000000
JSON=""
while [ $# -gt 0 ]; do
  case "$1" in
    --only) ONLY="$2"; shift 2 ;;
    --systems) SYSTEMS="$2"; shift 2 ;;
    --rows) ROWS="$2"; shift 2 ;;
    --json) JSON="$2"; shift 2 ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
done
if ! command -v mariadbd >/dev/null && ! [ -x /usr/sbin/mariadbd ]; then
  echo "mariadbd not installed (apt-get install mariadb-server): MariaDB left out" >&2
  SYSTEMS="$(echo "$SYSTEMS" | tr ',' '\n' | grep -vx mariadb | paste -sd, -)"
fi
export PATH="$PATH:/usr/sbin"
# shellcheck source=scripts/lib/servers.sh
source scripts/lib/servers.sh
export POSTGRES_OPTIONS="-c autovacuum=off -c max_wal_size=4GB"
RESULTS="$WORK/results.jsonl"
: >"$RESULTS"

wanted() { [[ ",$1," == *",$2,"* ]]; }
# on_each_system RUN: RUN SYSTEM for each system asked for, in turn.
on_each_system() {
  local system
  for system in ${SYSTEMS//,/ }; do "$1" "$system"; done
}
now() { date +%s.%N; }
elapsed() { python3 -c "print(f'{$(now) - $1:.3f}')"; }

# record SCENARIO SYSTEM KEY=VALUE...: one result line.
record() {
  python3 - "$@" >>"$RESULTS" <<'EOF'
import json, sys
scenario, system, *pairs = sys.argv[1:]
row = {"scenario": scenario, "system": system}
for pair in pairs:
    key, value = pair.split("=", 1)
    try:
        row[key] = float(value) if "." in value else int(value)
    except ValueError:
        row[key] = value
print(json.dumps(row))
EOF
}

# The device under the work directory and the bytes read from it so far.
DEVICE="$(basename "$(df --output=source "$WORK" | tail -1)")"
disk_read_bytes() { awk -v d="$DEVICE" '$3 == d { print $6 * 512 }' /proc/diskstats; }
drop_os_cache() { sync; echo 3 >/proc/sys/vm/drop_caches; }

# --- one interface over the three systems -------------------------------------------------------

# start SYSTEM POOL / stop SYSTEM: a start after a stop keeps the data.
start() {
  case "$1" in
    steady) BUFFER_POOL="$2" start_steady ;;
    postgres) BUFFER_POOL="$2" start_postgres ;;
    mariadb) BUFFER_POOL="$2" start_mariadb ;;
  esac
}
stop() {
  case "$1" in
    steady) stop_steady ;;
    postgres) stop_postgres ;;
    mariadb) stop_mariadb ;;
  esac
}
# Stops SYSTEM, removes its data and starts it fresh with POOL.
fresh() {
  stop "$1"
  rm -rf "${WORK:?}/$1"
  start "$1" "$2"
}
# A cold restart: the server stopped (its pages written), the OS cache dropped, a POOL pool.
cold_restart() {
  stop "$1"
  drop_os_cache
  STEADY_DIRECT_IO=1 start "$1" "$2"
}

# q SYSTEM SQL...: runs statements on SYSTEM, printing rows tab-separated.
q() {
  local system=$1
  shift
  case "$system" in
    steady) use_server steady; sql -F $'\t' "$@" ;;
    postgres) use_server postgres; sql -F $'\t' "$@" ;;
    mariadb) msql "$@" ;;
  esac
}

# Pages read from the disk so far by SYSTEM's own count. PostgreSQL's statistics reach shared
# memory when a backend exits or idles, so its count is read until two reads agree.
pages_read() {
  case "$1" in
    steady) q steady -c "SELECT value FROM steady_metrics WHERE name = 'buffer_pool_reads'" ;;
    mariadb) q mariadb -e "SHOW GLOBAL STATUS LIKE 'Innodb_pages_read'" | cut -f2 ;;
    postgres)
      local count="" last=""
      for _ in $(seq 1 20); do
        count=$(q postgres -c "SELECT pg_stat_clear_snapshot();
          SELECT coalesce(sum(coalesce(heap_blks_read, 0) + coalesce(idx_blks_read, 0)
            + coalesce(toast_blks_read, 0) + coalesce(tidx_blks_read, 0)), 0)
          FROM pg_statio_user_tables" | tail -1)
        [ "$count" = "$last" ] && break
        last=$count
        sleep 0.5
      done
      echo "$count"
      ;;
  esac
}

# The pages (of the system's own size) of TABLE and its indexes, and that page size.
table_pages() {
  case "$1" in
    steady) q steady -c "SELECT tree_pages FROM steady_tables WHERE name = '$2'" ;;
    postgres) q postgres -c "SELECT (pg_relation_size('$2') + pg_indexes_size('$2')) / 8192" ;;
    mariadb)
      q mariadb -e "ANALYZE TABLE $2" >/dev/null
      q mariadb -e "SELECT (data_length + index_length) DIV @@innodb_page_size
        FROM information_schema.tables WHERE table_schema = 'test' AND table_name = '$2'"
      ;;
  esac
}

# Waits until SYSTEM's purge has removed every old version and delete mark (PostgreSQL: VACUUM
# of TABLE, autovacuum being off).
purge() {
  case "$1" in
    steady)
      until [ "$(q steady -c "SELECT sum(value) FROM steady_metrics
                 WHERE name IN ('history_length', 'purge_lag')")" = 0 ]; do sleep 0.1; done
      ;;
    postgres) q postgres -c "VACUUM $2" ;;
    mariadb)
      until [ "$(q mariadb -e "SELECT count FROM information_schema.innodb_metrics
                 WHERE name = 'trx_rseg_history_len'")" = 0 ]; do sleep 0.1; done
      ;;
  esac
}

# The bytes of redo (WAL) SYSTEM has generated so far.
log_position() {
  case "$1" in
    steady) q steady -c "SELECT value FROM steady_metrics WHERE name = 'wal_current_lsn'" ;;
    postgres) q postgres -c "SELECT pg_current_wal_lsn() - '0/0'" ;;
    mariadb) q mariadb -e "SHOW GLOBAL STATUS LIKE 'Innodb_lsn_current'" | cut -f2 ;;
  esac
}

# Makes SYSTEM's loaded tables durable in place and its history empty before a cold restart.
settle() {
  case "$1" in
    steady) purge steady; q steady -c "CHECKPOINT" ;;
    postgres) q postgres -c "CHECKPOINT" ;;
    mariadb) purge mariadb ;;
  esac
}

# hold_snapshot SYSTEM SQL: a session of its own opens a REPEATABLE READ transaction, runs SQL
# in it (which takes its snapshot) and stays in it until release_snapshot.
SNAPSHOT_HOLDER=""
hold_snapshot() {
  local system=$1 statement=$2 fifo="$WORK/snapshot"
  mkfifo "$fifo"
  q "$system" <"$fifo" >/dev/null &
  SNAPSHOT_HOLDER=$!
  exec 7>"$fifo"
  if [ "$system" = mariadb ]; then
    echo "SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ; START TRANSACTION WITH CONSISTENT SNAPSHOT; $statement;" >&7
  else
    echo "BEGIN ISOLATION LEVEL REPEATABLE READ; $statement;" >&7
  fi
}

release_snapshot() {
  echo "COMMIT;" >&7
  exec 7>&-
  wait "$SNAPSHOT_HOLDER" || true
  rm -f "$WORK/snapshot"
}

# best_ms SYSTEM SQL: the best of three runs of one statement, in milliseconds.
best_ms() {
  local system=$1 statement=$2
  if [ "$system" = mariadb ]; then
    for _ in 1 2 3; do echo "$statement;"; done | q mariadb -vvv \
      | sed -n 's/^[0-9]* rows\? in set.*(\([0-9.]*\) sec)$/\1/p' | awk '{ print $1 * 1000 }' | sort -n | head -1
  else
    { echo '\timing on'; for _ in 1 2 3; do echo "$statement;"; done; } \
      | q "$system" -f - | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' | sort -n | head -1
  fi
}

# --- 000: deletes through an index ---------------------------------------------------------------

# create_loaded SYSTEM TABLE DEFINITION ROWS VALUES MARIADB_VALUES: creates TABLE (DEFINITION)
# and loads ROWS rows in statements of a million: the rows are VALUES over generate_series as g
# (SteadyDB, PostgreSQL) or MARIADB_VALUES over MariaDB's seq_N_to_M as seq.
create_loaded() {
  local system=$1 table=$2 definition=$3 rows=$4 values=$5 first last chunk=1000000
  if [ "$system" = mariadb ]; then
    q mariadb -e "CREATE TABLE $table $definition ENGINE=InnoDB"
    values=$6
  else
    q "$system" -c "CREATE TABLE $table $definition"
  fi
  for ((first = 1; first <= rows; first += chunk)); do
    last=$((first + chunk - 1 < rows ? first + chunk - 1 : rows))
    if [ "$system" = mariadb ]; then
      q mariadb -e "INSERT INTO $table SELECT $values FROM seq_${first}_to_${last}"
    else
      q "$system" -c "INSERT INTO $table SELECT $values FROM generate_series($first, $last) g"
    fi
  done
}

# load_000 SYSTEM MODULUS: the table t of ROWS rows, v = id % MODULUS, indexed on v.
load_000() {
  local system=$1 modulus=$2
  create_loaded "$system" t "(id bigint PRIMARY KEY, c char(60), v int)" "$ROWS" \
    "g, lpad(g::text, 60, 'x'), g % $modulus" "seq, lpad(seq, 60, 'x'), seq % $modulus"
  case "$system" in
    mariadb) q mariadb -e "CREATE INDEX t_v ON t (v); ANALYZE TABLE t" >/dev/null ;;
    postgres) q postgres -c "CREATE INDEX t_v ON t (v)" -c "VACUUM ANALYZE t" ;;
    steady) q steady -c "CREATE INDEX t_v ON t (v)" -c "ANALYZE t" ;;
  esac
}

# The statements of one way of deleting the rows with v < LIMIT, one per line.
statements_000() {
  local way=$1 limit=$2 chunks=40 i first last
  case "$way" in
    one) echo "DELETE FROM t WHERE v < $limit;" ;;
    chunks)
      for ((i = 0; i < chunks; i++)); do
        first=$((i * ROWS / chunks + 1))
        last=$(((i + 1) * ROWS / chunks))
        echo "DELETE FROM t WHERE v < $limit AND id BETWEEN $first AND $last;"
      done
      ;;
    each) for ((i = 0; i < limit; i++)); do echo "DELETE FROM t WHERE v = $i;"; done ;;
  esac
}

run_000() {
  local system=$1 modulus=$2 way=$3 limit=$(($2 / 10)) pages reads0 disk0 started statements purged
  fresh "$system" 1GB
  load_000 "$system" "$modulus"
  settle "$system"
  cold_restart "$system" 64MB
  pages=$(table_pages "$system" t)
  reads0=$(pages_read "$system")
  disk0=$(disk_read_bytes)
  started=$(now)
  if [ "$system" = mariadb ]; then
    statements_000 "$way" "$limit" | q mariadb
  else
    statements_000 "$way" "$limit" | q "$system" -f -
  fi
  statements=$(elapsed "$started")
  started=$(now)
  purge "$system" t
  purged=$(elapsed "$started")
  local reads=$(($(pages_read "$system") - reads0)) disk=$(($(disk_read_bytes) - disk0))
  record 000 "$system" modulus="$modulus" way="$way" statements_s="$statements" purge_s="$purged" \
    pages_read="$reads" table_pages="$pages" disk_mb="$((disk / 1048576))"
  echo "000 $system v = id % $modulus, $way: statements $statements s, purge $purged s, $reads pages read for $pages" >&2
}

scenario_000() {
  local system modulus way
  for system in ${SYSTEMS//,/ }; do
    for modulus in 50 100; do
      for way in one chunks each; do run_000 "$system" "$modulus" "$way"; done
    done
    stop "$system"
  done
}

# --- 000-limit: repeated DELETE ... LIMIT with an old snapshot open -------------------------------

run_000_limit() {
  local system=$1 rows=1000000 i
  fresh "$system" 1GB
  ROWS=$rows load_000 "$system" 5
  settle "$system"
  hold_snapshot "$system" "SELECT count(*) FROM t"
  local statement="DELETE FROM t WHERE v = 0 LIMIT 1000;"
  if [ "$system" = postgres ]; then
    statement="DELETE FROM t WHERE ctid IN (SELECT ctid FROM t WHERE v = 0 LIMIT 1000);"
  fi
  local times="$WORK/limit_times"
  case "$system" in
    mariadb)
      for ((i = 0; i < 200; i++)); do echo "$statement"; done | q mariadb -vvv \
        | sed -n 's/^Query OK.*(\([0-9.]*\) sec)$/\1/p' | awk '{ print $1 * 1000 }' >"$times"
      ;;
    *)
      { echo '\timing on'; for ((i = 0; i < 200; i++)); do echo "$statement"; done; } \
        | q "$system" -f - | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p' >"$times"
      ;;
  esac
  # A read of the range the statements emptied, the old snapshot still open: every entry there
  # belongs to a deleted row that snapshot keeps.
  if [ "$system" = steady ]; then
    until [ "$(q steady -c "SELECT value FROM steady_metrics WHERE name = 'purge_queued'")" = 0 ]; do sleep 0.1; done
  fi
  local read_after
  read_after=$(best_ms "$system" "SELECT count(*) FROM t WHERE v = 0")
  release_snapshot
  # The first and the last statement's time, each as the median of ten (one statement's time
  # alone is as noisy as a scheduler tick).
  local first last total
  first=$(head -10 "$times" | sort -n | sed -n 5p)
  last=$(tail -10 "$times" | sort -n | sed -n 5p)
  if [ -n "${LIMIT_TIMES:-}" ]; then cp "$times" "$LIMIT_TIMES.$system"; fi
  total=$(awk '{ s += $1 } END { printf "%.1f", s }' "$times")
  record 000-limit "$system" statements="$(wc -l <"$times")" first_ms="$first" last_ms="$last" total_ms="$total" \
    read_after_ms="$read_after"
  echo "000-limit $system: first $first ms, last $last ms, all $total ms; v = 0 read after $read_after ms" >&2
  stop "$system"
}

# --- 001: index builds and their log --------------------------------------------------------------

run_001() {
  local system=$1 i columns="" create log0 index_bytes started built
  fresh "$system" 1GB
  for i in 1 2 3 4 5 6 7 8; do columns+=", c$i char(255)"; done
  create="CREATE TABLE w (id int PRIMARY KEY$columns)"
  local load="INSERT INTO w SELECT g, md5(g::text), md5((g + 1)::text), md5((g + 2)::text),
    md5((g + 3)::text), md5((g + 4)::text), md5((g + 5)::text), md5((g + 6)::text),
    md5((g + 7)::text) FROM generate_series(1, 100000) g"
  if [ "$system" = mariadb ]; then
    q mariadb -e "$create ENGINE=InnoDB"
    q mariadb -e "INSERT INTO w SELECT seq, md5(seq), md5(seq + 1), md5(seq + 2), md5(seq + 3),
           md5(seq + 4), md5(seq + 5), md5(seq + 6), md5(seq + 7) FROM seq_1_to_100000"
  else
    q "$system" -c "$create" -c "$load"
  fi
  settle "$system"
  local tree_pages0=""
  if [ "$system" = steady ]; then tree_pages0=$(q steady -c "SELECT tree_pages FROM steady_tables WHERE name = 'w'"); fi
  log0=$(log_position "$system")
  started=$(now)
  for i in 1 2 3 4 5 6 7; do
    if [ "$system" = mariadb ]; then
      q mariadb -e "CREATE INDEX w_c$i ON w (c$i)"
    else
      q "$system" -c "CREATE INDEX w_c$i ON w (c$i)"
    fi
  done
  built=$(elapsed "$started")
  local log=$(($(log_position "$system") - log0))
  case "$system" in
    steady)
      index_bytes=$(( ($(q steady -c "SELECT tree_pages FROM steady_tables WHERE name = 'w'") - tree_pages0) * 16384 ))
      ;;
    postgres) index_bytes=$(q postgres -c "SELECT pg_indexes_size('w') - pg_relation_size('w_pkey')") ;;
    mariadb)
      q mariadb -e "ANALYZE TABLE w" >/dev/null
      index_bytes=$(q mariadb -e "SELECT index_length FROM information_schema.tables
                                  WHERE table_schema = 'test' AND table_name = 'w'")
      ;;
  esac
  record 001 "$system" build_s="$built" log_bytes="$log" index_bytes="$index_bytes"
  echo "001 $system: 7 indexes in $built s, log $log bytes for $index_bytes bytes of index" >&2
  stop "$system"
}

# --- 002: MVCC bloat and long version chains under sysbench oltp_update_index ---------------------

# sysbench_on SYSTEM ARGS...: sysbench oltp_update_index (pareto) on SYSTEM's one table of 1,000,000 rows.
sysbench_on() {
  local system=$1
  shift
  sysbench_test_on "$system" oltp_update_index --table-size=1000000 --rand-type=pareto "$@"
}

# sysbench_test_on SYSTEM TEST ARGS...: sysbench TEST on SYSTEM's one table.
sysbench_test_on() {
  local system=$1 test=$2
  shift 2
  local target=(--db-driver=pgsql --pgsql-host=127.0.0.1 --pgsql-db=postgres --pgsql-password=)
  case "$system" in
    steady) target+=(--pgsql-port="$STEADY_PORT" --pgsql-user=steady) ;;
    postgres) target+=(--pgsql-port="$POSTGRES_PORT" --pgsql-user=postgres) ;;
    mariadb) target=(--db-driver=mysql --mysql-socket="$WORK/mariadb/socket" --mysql-user=root --mysql-db=test) ;;
  esac
  sysbench "$test" "${target[@]}" --tables=1 "$@"
}

# timed_query SYSTEM ISOLATION SQL: the seconds one statement takes in a transaction at ISOLATION.
timed_query() {
  local system=$1 isolation=$2 statement=$3 started
  started=$(now)
  if [ "$system" = mariadb ]; then
    q mariadb -e "SET SESSION TRANSACTION ISOLATION LEVEL $isolation; $statement" >/dev/null
  else
    q "$system" -c "BEGIN ISOLATION LEVEL $isolation" -c "$statement" -c "COMMIT" >/dev/null
  fi
  elapsed "$started"
}

run_002() {
  local system=$1 pages0 idle rc rr out="$WORK/sb_002" hold=${HOLD_SECONDS:-135} after=45
  fresh "$system" 1GB
  sysbench_on "$system" prepare >/dev/null
  if [ "$system" = postgres ]; then q postgres -c "VACUUM ANALYZE sbtest1"; fi
  settle "$system"
  pages0=$(table_pages "$system" sbtest1)
  timed_query "$system" "READ COMMITTED" "SELECT avg(k) FROM sbtest1" >/dev/null
  idle=$(timed_query "$system" "READ COMMITTED" "SELECT avg(k) FROM sbtest1")
  # Without a snapshot held: the baseline intervals, and avg(k) under the load at RC and RR.
  sysbench_on "$system" --threads=8 --time=60 --report-interval=5 run >"$out.base" 2>&1 &
  local load=$!
  sleep 20
  rc=$(timed_query "$system" "READ COMMITTED" "SELECT avg(k) FROM sbtest1")
  rr=$(timed_query "$system" "REPEATABLE READ" "SELECT avg(k) FROM sbtest1")
  wait "$load"
  # With a REPEATABLE READ snapshot held for HOLD seconds from the start, then released.
  hold_snapshot "$system" "SELECT count(*) FROM sbtest1 WHERE id < 10"
  sysbench_on "$system" --threads=8 --time=$((hold + after)) --report-interval=5 run >"$out.held" 2>&1 7>&- &
  load=$!
  sleep "$hold"
  release_snapshot
  wait "$load"
  # The table's pages 30 s after the release (PostgreSQL: after a VACUUM, autovacuum being off).
  sleep 30
  if [ "$system" = postgres ]; then q postgres -c "VACUUM sbtest1"; fi
  local pages1 base_median held_worst after_worst held_median
  pages1=$(table_pages "$system" sbtest1)
  read -r base_median held_median held_worst after_worst < <(python3 - "$out.base" "$out.held" "$hold" <<'PY'
import re, statistics, sys
def tps(path):
    return [(int(t), float(v)) for t, v in re.findall(r"\[ *(\d+)s \].*? tps: ([0-9.]+)", open(path).read())]
base = [v for _, v in tps(sys.argv[1])]
held_run = tps(sys.argv[2]); hold = int(sys.argv[3])
held = [v for t, v in held_run if t <= hold]
after = [v for t, v in held_run if t > hold]
print(statistics.median(base), statistics.median(held), min(held), min(after) if after else 0)
PY
)
  record 002 "$system" idle_s="$idle" rc_s="$rc" rr_s="$rr" base_tps="$base_median" held_tps="$held_median" \
    held_worst_tps="$held_worst" after_worst_tps="$after_worst" pages_before="$pages0" pages_after="$pages1" \
    hold_s="$hold"
  echo "002 $system: avg(k) idle $idle s, RC $rc s, RR $rr s; TPS $base_median, held $held_median (worst $held_worst), after $after_worst; pages $pages0 -> $pages1" >&2
  stop "$system"
}

# --- 004: DROP TABLE and TRUNCATE of big resident tables beside a write load ---------------------

# load_big SYSTEM TABLE ROWS: TABLE (id bigint primary key, pad varchar(300)) of ROWS rows.
load_big() {
  create_loaded "$1" "$2" "(id bigint PRIMARY KEY, pad varchar(300))" "$3" \
    "g, lpad(g::text, 300, 'x')" "seq, lpad(seq, 300, 'x')"
}

# ddl_ms SYSTEM SQL: one statement's time as its client reports it, in milliseconds.
ddl_ms() {
  local system=$1 statement=$2
  if [ "$system" = mariadb ]; then
    echo "$statement;" | q mariadb -vvv | sed -n 's/^Query OK.*(\([0-9.]*\) sec)$/\1/p' | awk '{ print $1 * 1000 }'
  else
    { echo '\timing on'; echo "$statement;"; } | q "$system" -f - | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p'
  fi
}

# load_run_004 SYSTEM NAME [SQL]: 30 s of oltp_read_write with 1-second reports in $WORK/sb_004.NAME,
# SQL run 10 s in (its time in $WORK/ddl_004.NAME).
load_run_004() {
  local system=$1 name=$2 statement=${3:-} load
  sysbench_test_on "$system" oltp_read_write --table-size=100000 --threads=8 --time=30 \
    --report-interval=1 run >"$WORK/sb_004.$name" 2>&1 &
  load=$!
  if [ -n "$statement" ]; then
    sleep 10
    ddl_ms "$system" "$statement" >"$WORK/ddl_004.$name"
  fi
  wait "$load"
}

run_004() {
  local system=$1 rows=${BIG_ROWS:-$((${BIG_GB:-3} * 1073741824 / 340))} started loaded resident
  fresh "$system" "${POOL_004:-12GB}"
  started=$(now)
  load_big "$system" big1 "$rows"
  load_big "$system" big2 "$rows"
  loaded=$(elapsed "$started")
  settle "$system"
  if [ "$system" = postgres ]; then
    q postgres -c "CREATE EXTENSION IF NOT EXISTS pg_prewarm" -c "SELECT pg_prewarm('big1'), pg_prewarm('big2')" >/dev/null
  fi
  resident=$(table_pages "$system" big1)
  sysbench_test_on "$system" oltp_read_write --table-size=100000 prepare >/dev/null
  local disk0
  disk0=$(disk_read_bytes)
  load_run_004 "$system" base
  load_run_004 "$system" drop "DROP TABLE big1"
  load_run_004 "$system" truncate "TRUNCATE big2"
  local disk=$(($(disk_read_bytes) - disk0)) figures
  figures=$(python3 - "$WORK"/sb_004.{base,drop,truncate} <<'PY'
import re, statistics, sys
def run(path):
    text = open(path).read()
    tps = [float(v) for t, v in re.findall(r"\[ *(\d+)s \].*? tps: ([0-9.]+)", text) if int(t) > 2]
    peak = float(re.search(r"max: +([0-9.]+)", text).group(1))
    return tps, peak
(base, base_max), (drop, drop_max), (trunc, trunc_max) = map(run, sys.argv[1:])
median = statistics.median(base)
print(f"base_tps={median} base_worst={min(base)} drop_worst={min(drop)} truncate_worst={min(trunc)} "
      f"base_max_ms={base_max} drop_max_ms={drop_max} truncate_max_ms={trunc_max}")
PY
)
  # shellcheck disable=SC2086 # figures is KEY=VALUE words
  record 004 "$system" table_pages="$resident" load_s="$loaded" drop_ms="$(<"$WORK/ddl_004.drop")" \
    truncate_ms="$(<"$WORK/ddl_004.truncate")" disk_mb="$((disk / 1048576))" $figures
  echo "004 $system: loaded in $loaded s ($resident pages a table); DROP $(<"$WORK/ddl_004.drop") ms, TRUNCATE $(<"$WORK/ddl_004.truncate") ms; $figures; $((disk / 1048576)) MB read from the disk" >&2
  if [ -n "${KEEP_004:-}" ]; then
    for name in base drop truncate; do cp "$WORK/sb_004.$name" "$KEEP_004.$system.$name"; done
  fi
  stop "$system"
  rm -rf "${WORK:?}/$system"
}

# --- the run ----------------------------------------------------------------------------------

wanted "$ONLY" 000 && scenario_000
wanted "$ONLY" 000-limit && on_each_system run_000_limit
wanted "$ONLY" 001 && on_each_system run_001
wanted "$ONLY" 002 && on_each_system run_002
wanted "$ONLY" 004 && on_each_system run_004
python3 scripts/seeds_report.py "$RESULTS"
if [ -n "$JSON" ]; then cp "$RESULTS" "$JSON"; fi
