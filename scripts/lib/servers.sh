# Sourced by scripts/pgbench.sh and scripts/sysbench.sh: starts and stops the server under test —
# SteadyDB (`steady serve`, release build) or PostgreSQL 15 (a throw-away cluster, fsync on) — on a
# free loopback port and a temporary directory removed on exit. Sets PORT, USER_NAME, SERVER_PID.

PG_BIN=/usr/lib/postgresql/15/bin

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

WORK="$(mktemp -d)"
SERVER_PID=""
cleanup() {
  if [ -n "$SERVER_PID" ]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

wait_ready() {
  for _ in $(seq 1 300); do
    if "$PG_BIN/psql" -h 127.0.0.1 -p "$PORT" -U "$USER_NAME" -d postgres -Atc 'select 1' >/dev/null 2>&1; then return 0; fi
    sleep 0.2
  done
  echo "server on port $PORT did not start" >&2
  return 1
}

start_steady() {
  cargo build --release -q -p steady
  PORT="$(free_port)"
  USER_NAME=steady
  ./target/release/steady serve --data "$WORK/steady" --listen "127.0.0.1:$PORT" >"$WORK/steady.log" 2>&1 &
  SERVER_PID=$!
  wait_ready
}

start_postgres() {
  PORT="$(free_port)"
  USER_NAME=postgres
  chown -R postgres "$WORK" 2>/dev/null || true
  su postgres -c "$PG_BIN/initdb -D $WORK/pg -A trust -U postgres" >/dev/null
  su postgres -c "$PG_BIN/postgres -D $WORK/pg -p $PORT -k $WORK -c listen_addresses=127.0.0.1 -c fsync=on -c synchronous_commit=on" >"$WORK/pg.log" 2>&1 &
  SERVER_PID=$!
  wait_ready
}

stop_server() {
  kill "$SERVER_PID" && wait "$SERVER_PID" 2>/dev/null || true
  SERVER_PID=""
}

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
