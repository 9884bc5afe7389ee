# shellcheck shell=bash
# Sourced by the benchmark scripts: starts and stops the servers under test — SteadyDB (`steady
# serve`) and PostgreSQL 15 (a throw-away cluster, fsync and synchronous_commit on) — each on a free
# loopback port, in one temporary directory that is removed, with both servers stopped, on exit.
# Both may run at once; `use_server steady|postgres` points PORT and USER_NAME (which `sql` and
# the client helpers connect with) at one of them.
#
# Environment: STEADY_BIN, the binary to serve with (default the checkout's release build,
# target/release/steady or under CARGO_TARGET_DIR, built when missing); BUFFER_POOL, a size such
# as 256MB given to SteadyDB as buffer_pool_size and to PostgreSQL as shared_buffers (unset: each
# system's default); STEADY_DIRECT_IO=1 serves SteadyDB with direct_io = true.

PG_BIN=/usr/lib/postgresql/15/bin

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

WORK="$(mktemp -d)"
chmod 711 "$WORK"
CLIENT_PID=""
STEADY_PID=""
STEADY_PORT=""
POSTGRES_DATA=""
POSTGRES_PORT=""
MARIADB_PID=""
cleanup() {
  if [ -n "$CLIENT_PID" ]; then
    pkill -P "$CLIENT_PID" 2>/dev/null || true # the client a shell function (sb) started
    kill "$CLIENT_PID" 2>/dev/null || true
  fi
  stop_steady
  stop_postgres
  stop_mariadb
  rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

use_server() {
  case "$1" in
    steady) PORT="$STEADY_PORT"; USER_NAME=steady ;;
    postgres) PORT="$POSTGRES_PORT"; USER_NAME=postgres ;;
    *) echo "unknown server $1" >&2; return 1 ;;
  esac
}

# psql on the current server: unaligned, tuples only, stops at the first error.
sql() { "$PG_BIN/psql" -X -h 127.0.0.1 -p "$PORT" -U "$USER_NAME" -d postgres -v ON_ERROR_STOP=1 -Atq "$@"; }

# run_client FILE COMMAND...: runs a client (pgbench, psql, sysbench) with its output in FILE. It
# runs in the background and is waited for, so that Ctrl-C ends the script at once: in the
# foreground, a client that takes SIGINT as a cancel (pgbench, psql) would leave bash going on.
run_client() {
  local out=$1 status=0
  shift
  "$@" >"$out" 2>&1 &
  CLIENT_PID=$!
  wait "$CLIENT_PID" || status=$?
  CLIENT_PID=""
  return $status
}

wait_ready() {
  for _ in $(seq 1 300); do
    if sql -c 'select 1' >/dev/null 2>&1; then return 0; fi
    sleep 0.2
  done
  echo "server on port $PORT did not start" >&2
  return 1
}

# The binary to serve with: STEADY_BIN, else the release build of the checkout (built if stale).
steady_binary() {
  local built="${CARGO_TARGET_DIR:-$PWD/target}/release/steady"
  if [ -n "${STEADY_BIN:-}" ]; then
    echo "$STEADY_BIN"
    return
  fi
  # Always through cargo: an up-to-date build returns at once, a stale binary is never measured.
  cargo build --release -q -p steady >&2
  echo "$built"
}

start_steady() {
  local bin dir="$WORK/steady"
  bin="$(steady_binary)"
  mkdir -p "$dir"
  : >"$dir/steady.toml"
  if [ -n "${BUFFER_POOL:-}" ]; then echo "buffer_pool_size = \"$BUFFER_POOL\"" >>"$dir/steady.toml"; fi
  if [ "${STEADY_DIRECT_IO:-0}" = 1 ]; then echo "direct_io = true" >>"$dir/steady.toml"; fi
  STEADY_PORT="$(free_port)"
  "$bin" serve --data "$dir" --listen "127.0.0.1:$STEADY_PORT" >"$WORK/steady.log" 2>&1 &
  STEADY_PID=$!
  use_server steady
  wait_ready || { cat "$WORK/steady.log" >&2; return 1; }
}

stop_steady() {
  if [ -n "$STEADY_PID" ]; then
    kill "$STEADY_PID" 2>/dev/null || true
    wait "$STEADY_PID" 2>/dev/null || true
  fi
  STEADY_PID=""
}

# Runs a command as the postgres user when root (PostgreSQL refuses to run as root).
as_postgres() {
  if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

start_postgres() {
  local dir="$WORK/postgres" options
  mkdir -p "$dir"
  if [ "$(id -u)" = 0 ]; then chown postgres "$dir"; fi
  if [ ! -d "$dir/data" ]; then
    as_postgres "$PG_BIN/initdb" -D "$dir/data" -A trust -U postgres >"$WORK/initdb.log" 2>&1 \
      || { cat "$WORK/initdb.log" >&2; return 1; }
  fi
  POSTGRES_PORT="$(free_port)"
  options="-p $POSTGRES_PORT -k $dir -c listen_addresses=127.0.0.1 -c fsync=on -c synchronous_commit=on"
  if [ -n "${BUFFER_POOL:-}" ]; then options+=" -c shared_buffers=$BUFFER_POOL"; fi
  if [ -n "${POSTGRES_OPTIONS:-}" ]; then options+=" $POSTGRES_OPTIONS"; fi
  POSTGRES_DATA="$dir/data"
  as_postgres "$PG_BIN/pg_ctl" -D "$POSTGRES_DATA" -l "$dir/postgres.log" -w -o "$options" start >/dev/null \
    || { cat "$dir/postgres.log" >&2; return 1; }
  use_server postgres
  wait_ready
}

stop_postgres() {
  if [ -n "$POSTGRES_DATA" ]; then
    as_postgres "$PG_BIN/pg_ctl" -D "$POSTGRES_DATA" -m fast -w stop >/dev/null 2>&1 || true
  fi
  POSTGRES_DATA=""
}

# MariaDB (mariadb-server from Debian): InnoDB with a commit flushed and synced at each commit,
# no buffer-pool dump or load across restarts (a restart is cold), BUFFER_POOL as its pool.
start_mariadb() {
  local dir="$WORK/mariadb" pool="${BUFFER_POOL:-128MB}"
  mkdir -p "$dir"
  if [ ! -d "$dir/data" ]; then
    mariadb-install-db --no-defaults --datadir="$dir/data" --user="$(id -un)" >"$WORK/mariadb-install.log" 2>&1 \
      || { cat "$WORK/mariadb-install.log" >&2; return 1; }
  fi
  mariadbd --no-defaults --datadir="$dir/data" --socket="$dir/socket" --skip-networking \
    --user="$(id -un)" --innodb-buffer-pool-size="${pool%B}" --innodb-flush-log-at-trx-commit=1 \
    --innodb-buffer-pool-load-at-startup=0 --innodb-buffer-pool-dump-at-shutdown=0 \
    --innodb-log-file-size=512M --max-allowed-packet=64M ${MARIADB_OPTIONS:-} \
    --log-error="$dir/error.log" &
  MARIADB_PID=$!
  for _ in $(seq 1 300); do
    if mariadb --socket="$dir/socket" -uroot -e 'create database if not exists test' >/dev/null 2>&1; then
      return 0
    fi
    sleep 0.2
  done
  echo "MariaDB did not start" >&2
  cat "$dir/error.log" >&2
  return 1
}

stop_mariadb() {
  if [ -n "$MARIADB_PID" ]; then
    kill "$MARIADB_PID" 2>/dev/null || true
    wait "$MARIADB_PID" 2>/dev/null || true
  fi
  MARIADB_PID=""
}

# The mariadb client on the running MariaDB, database test, tab-separated without headers.
msql() { mariadb --socket="$WORK/mariadb/socket" -uroot -N -B test "$@"; }

# Runs the script's run_system for "steady", "postgres" or "both" (usage message otherwise) and
# exits non-zero when a run failed.
run_targets() {
  local overall=0
  case "$1" in
    steady) run_system steady || overall=1 ;;
    postgres) run_system postgres || overall=1 ;;
    both) run_system steady || overall=1; run_system postgres || overall=1 ;;
    *) echo "$2" >&2; exit 2 ;;
  esac
  exit $overall
}
