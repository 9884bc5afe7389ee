#!/usr/bin/env bash
# `steady bench fragmented-scan` through SQL over the wire (seed 003, issue 13): a table of ROWS
# rows `(user_id bigint, object_id bigint, payload char(200), n int, primary key (user_id,
# object_id))` loaded in random key order through psql into `steady serve` with direct_io and a
# 2GB pool, then, each after a restart with a 64MB pool (cold: nothing in the pool, and direct
# I/O keeps the OS cache out), a full scan, a 5% key range, a 2% range of a secondary index and a
# LIMIT 10 scan, each timed by psql, with the pages the server read (steady_metrics) and fio's
# sequential MB/s on the table's file (1 MiB requests, depth 32 and 1) in the same run; then the
# full scan of the same rows loaded in key order, beside fio on that table's file.
#
#   scripts/fragmented_scan.sh            (ROWS=4000000 by default; ROWS=1000000 for a quick run)
set -euo pipefail
cd "$(dirname "$0")/.."
ROWS="${ROWS:-4000000}"
CHUNK=250000
# shellcheck source=scripts/lib/servers.sh
source scripts/lib/servers.sh
export STEADY_DIRECT_IO=1

metric() { sql -c "SELECT value FROM steady_metrics WHERE name = '$1'"; }

# load TABLE USER_ID: creates and fills TABLE (user_id given by the expression USER_ID of g),
# indexes n, and prints the table's space file.
load() {
  local table=$1 user_id=$2 before loaded
  before="$(ls "$WORK"/steady/space_*.sdb)"
  sql -c "CREATE TABLE $table (user_id bigint, object_id bigint, payload char(200), n int,
          PRIMARY KEY (user_id, object_id))"
  loaded=$(date +%s.%N)
  for ((first = 0; first < ROWS; first += CHUNK)); do
    last=$((first + CHUNK < ROWS ? first + CHUNK - 1 : ROWS - 1))
    sql -c "INSERT INTO $table SELECT $user_id, g, repeat('p', 200), g % 1000
            FROM generate_series($first, $last) g"
  done
  sql -c "CREATE INDEX ${table}_n ON $table (n)"
  sql -c "ANALYZE $table"
  python3 -c "import sys; print(f\"loaded and indexed $ROWS rows of $table in {$(date +%s.%N) - $loaded:.1f} s\", file=sys.stderr)"
  comm -13 <(echo "$before") <(ls "$WORK"/steady/space_*.sdb)
}

BUFFER_POOL=2GB start_steady
random_file="$(load random_order '(random() * 999999)::bigint')"
ordered_file="$(load key_order 'g / 4')"
stop_steady

fio_mb() {
  fio --name=sequential --rw=read --bs=1M --iodepth="$2" --direct=1 --ioengine=io_uring --readonly \
    --time_based --runtime=3 --output-format=json --filename="$1" |
    python3 -c 'import json, sys; print(round(json.load(sys.stdin)["jobs"][0]["read"]["bw_bytes"] / 1e6))'
}
# fio_line NAME FILE: prints fio's figures for FILE and sets fio32.
fio_line() {
  fio32="$(fio_mb "$2" 32)"
  printf '%-28s %6s MB, fio sequential read %s MB/s at depth 32, %s MB/s at depth 1\n' \
    "$1" "$(($(stat -c %s "$2") / 1000000))" "$fio32" "$(fio_mb "$2" 1)"
}
fio_line "random-order table" "$random_file"
printf '%-28s %10s %10s %10s %10s %10s\n' query seconds pages "MB/s" "% of fio32" "read ahead"

page_size=16384
measure() {
  local name=$1 query=$2 reads ahead ms
  BUFFER_POOL=64MB start_steady
  reads=$(metric buffer_pool_reads)
  ahead=$(metric buffer_pool_read_ahead_reads)
  ms=$("$PG_BIN/psql" -X -h 127.0.0.1 -p "$PORT" -U "$USER_NAME" -d postgres -v ON_ERROR_STOP=1 \
    -c '\timing on' -c "$query" | sed -n 's/^Time: \([0-9.]*\) ms.*/\1/p')
  reads=$(($(metric buffer_pool_reads) - reads))
  ahead=$(($(metric buffer_pool_read_ahead_reads) - ahead))
  stop_steady
  python3 -c "
s = $ms / 1000; mb = $reads * $page_size / 1e6 / s
print(f'%-28s %10.3f %10d %10.0f %10.1f %10d' % ('$name', s, $reads, mb, 100 * mb / $fio32, $ahead))"
}
measure "full scan" "SELECT sum(n) FROM random_order"
measure "5% key range" "SELECT sum(n) FROM random_order WHERE user_id >= 500000 AND user_id < 550000"
measure "2% index range" "SELECT sum(object_id) FROM random_order WHERE n < 20"
measure "LIMIT 10" "SELECT * FROM random_order LIMIT 10"
fio_line "key-order table" "$ordered_file"
measure "full scan, key order" "SELECT sum(n) FROM key_order"
