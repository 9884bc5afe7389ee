#!/usr/bin/env bash
# Online DDL under load, SteadyDB beside PostgreSQL 15 in one run (issue 15):
#
#   scripts/online_ddl.sh [--rows N] [--threads N] [--baseline S] [--tail S] [--buffer-pool SIZE]
#                         [--only steady|postgres] [--json]
#
# For each system: sysbench oltp_read_write prepares one table of N rows (default 1,000,000;
# about 4,700,000 make the 1 GiB of the issue), then runs with THREADS threads (default 8) and
# a report every second. After BASELINE seconds (default 20) these statements run one after the
# other on the same table, each timed by the client: CREATE INDEX, ADD COLUMN ... DEFAULT, ALTER
# COLUMN TYPE, VACUUM FULL. TAIL seconds (default 10) after the last, sysbench is stopped.
#
# Printed per system: each statement's time (or its error), the median TPS of the baseline
# seconds, each second's TPS while the statements ran (with the statements it overlapped), the
# lowest and its ratio to the median, the seconds below half the median, and the errors sysbench
# ignored (deadlocks, serialization failures) while they ran. Goal (SteadyDB): no second below 0.5x the baseline median and no
# failed sysbench transaction beyond the ignored ones. PostgreSQL's ALTER TYPE and VACUUM FULL take
# an ACCESS EXCLUSIVE lock and block its writers for their whole run; that is what it is compared
# with. Both servers get BUFFER_POOL (default 1GB) and fsync on. Exits non-zero when the goal is
# not met on SteadyDB or a run fails.

set -euo pipefail
cd "$(dirname "$0")/.."

usage="usage: $0 [--rows N] [--threads N] [--baseline S] [--tail S] [--buffer-pool SIZE] [--only SYSTEM] [--json]"
ROWS=1000000
THREADS=8
BASELINE=20
TAIL=10
BUFFER_POOL=1GB
JSON=0
SYSTEMS=(steady postgres)
while [ $# -gt 0 ]; do
  case "$1" in
    --rows) ROWS=$2; shift 2 ;;
    --threads) THREADS=$2; shift 2 ;;
    --baseline) BASELINE=$2; shift 2 ;;
    --tail) TAIL=$2; shift 2 ;;
    --buffer-pool) BUFFER_POOL=$2; shift 2 ;;
    --only) SYSTEMS=("$2"); shift 2 ;;
    --json) JSON=1; shift ;;
    *) echo "$usage" >&2; exit 2 ;;
  esac
done
export BUFFER_POOL

# shellcheck source=scripts/lib/install.sh
source scripts/lib/install.sh
ensure_clients
# shellcheck source=scripts/lib/servers.sh
source scripts/lib/servers.sh
# shellcheck source=scripts/lib/sysbench.sh
source scripts/lib/sysbench.sh

STATEMENTS=(
  "CREATE INDEX sbtest1_c ON sbtest1 (c)"
  "ALTER TABLE sbtest1 ADD COLUMN extra integer DEFAULT 7"
  "ALTER TABLE sbtest1 ALTER COLUMN extra TYPE bigint"
  "VACUUM FULL sbtest1"
)
progress() { echo "online-ddl: $*" >&2; }

# run_system SYSTEM: the load, the statements in its middle, and the figures into
# $WORK/SYSTEM.ddl (statement, start, end, outcome; epoch seconds) and $WORK/SYSTEM.sysbench.
run_system() {
  local system=$1 load started statement begin end outcome
  "start_$system"
  progress "$system: sysbench prepare, $ROWS rows"
  run_client "$WORK/prepare.log" sb oltp_read_write "$ROWS" prepare || { cat "$WORK/prepare.log" >&2; return 1; }
  progress "$system: oltp_read_write, $THREADS threads; statements after $BASELINE s"
  started=$EPOCHREALTIME
  sb oltp_read_write "$ROWS" --threads="$THREADS" --time=100000 --report-interval=1 run \
    >"$WORK/$system.sysbench" 2>&1 &
  load=$!
  sleep "$BASELINE"
  : >"$WORK/$system.ddl"
  for statement in "${STATEMENTS[@]}"; do
    progress "$system: $statement"
    begin=$EPOCHREALTIME
    if outcome="$(sql -c "$statement" 2>&1)"; then outcome=ok; fi
    end=$EPOCHREALTIME
    printf '%s\t%s\t%s\t%s\n' "$statement" "$begin" "$end" "${outcome//$'\n'/ }" >>"$WORK/$system.ddl"
  done
  sleep "$TAIL"
  # $load is the subshell running sb; sysbench is its child. SIGTERM, not SIGINT: a script run
  # without job control starts its background commands with SIGINT ignored.
  pkill -TERM -P "$load" 2>/dev/null || true
  wait "$load" || true
  printf 'start\t%s\n' "$started" >"$WORK/$system.start"
  run_client /dev/null sb oltp_read_write "$ROWS" cleanup || true
  "stop_$system"
}

for system in "${SYSTEMS[@]}"; do run_system "$system"; done

python3 - "$WORK" "$JSON" "${SYSTEMS[@]}" <<'EOF'
import json, re, statistics, sys

work, as_json, systems = sys.argv[1], sys.argv[2] == "1", sys.argv[3:]
interval = re.compile(r"\[ *(\d+)s \] thds: \d+ tps: ([\d.]+) .* err/s: ([\d.]+)")
report, met = {}, True
for system in systems:
    start = float(open(f"{work}/{system}.start").read().split()[1])
    text = open(f"{work}/{system}.sysbench").read()
    seconds = [(int(s), float(t), float(e)) for s, t, e in interval.findall(text)]
    ddl = [line.rstrip("\n").split("\t") for line in open(f"{work}/{system}.ddl")]
    first, last = float(ddl[0][1]) - start, float(ddl[-1][2]) - start
    # The second ending at s covers (s - 1, s]: it overlaps the statements if s > first.
    base = [t for s, t, _ in seconds if s <= first]
    during = [(s, t, e) for s, t, e in seconds if first < s <= last + 1]
    median = statistics.median(base) if base else 0.0
    lowest = min((t for _, t, _ in during), default=0.0)
    entry = {
        "statements": [
            {"statement": st, "seconds": round(float(e) - float(b), 3), "outcome": o}
            for st, b, e, o in ddl
        ],
        "baseline_median_tps": median,
        "lowest_second_tps": lowest,
        "lowest_ratio": round(lowest / median, 3) if median else None,
        "seconds_below_half": sum(1 for _, t, _ in during if t < 0.5 * median),
        "ignored_errors": round(sum(e for _, _, e in during)),
        "fatal": [line for line in text.splitlines() if "FATAL" in line][:5],
        "seconds": [
            {"second": s, "tps": t, "ignored_errors": e,
             "statements": [st for st, b, en, _ in ddl
                            if float(b) - start < s and float(en) - start > s - 1]}
            for s, t, e in seconds if first - 1 < s <= last + 2
        ],
    }
    report[system] = entry
    if system == "steady":
        met = entry["seconds_below_half"] == 0 and not entry["fatal"] and median > 0
report["goal_met"] = met and "steady" in report
if as_json:
    print(json.dumps(report, indent=2))
else:
    for system in systems:
        r = report[system]
        print(f"{system}:")
        for s in r["statements"]:
            print(f"  {s['statement']:<58} {s['seconds']:>8.3f} s  {s['outcome']}")
        for sec in r["seconds"]:
            running = ", ".join(st.split(" sbtest1")[0] for st in sec["statements"]) or "-"
            print(f"    second {sec['second']:>4}: {sec['tps']:>8.1f} TPS "
                  f"({sec['tps'] / r['baseline_median_tps']:.2f}x), errors {sec['ignored_errors']:.0f}, "
                  f"running: {running}")
        print(f"  baseline median TPS {r['baseline_median_tps']:.1f}; lowest second during DDL "
              f"{r['lowest_second_tps']:.1f} ({r['lowest_ratio']}x); seconds below 0.5x: "
              f"{r['seconds_below_half']}; ignored errors: {r['ignored_errors']}")
        for line in r["fatal"]:
            print(f"  {line}")
    print(f"goal (steady: no second below 0.5x the median, no FATAL): {'met' if report['goal_met'] else 'NOT MET'}")
sys.exit(0 if report["goal_met"] else 1)
EOF
