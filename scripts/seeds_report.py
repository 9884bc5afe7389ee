"""Prints the tables of scripts/seeds.sh from its JSON lines (one figure set per system and run),
with each scenario's goal for SteadyDB checked; exits 1 when a goal is missed.

    python3 scripts/seeds_report.py RESULTS.jsonl
"""

import json
import sys


def load(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]


def table(header, rows):
    widths = [max(len(str(cell)) for cell in column) for column in zip(header, *rows)]
    for row in [header, *rows]:
        print("  ".join(str(cell).rjust(width) for cell, width in zip(row, widths)))


def report_000(rows, failures):
    print("\n000: 10% of the rows deleted through the index, then purged (cold, 64MB pool)")
    innodb_chunks = {
        r["modulus"]: r["statements_s"] + r["purge_s"]
        for r in rows
        if r["system"] == "mariadb" and r["way"] == "chunks"
    }
    out = []
    for r in rows:
        total = r["statements_s"] + r["purge_s"]
        read_ratio = r["pages_read"] / r["table_pages"] if r["table_pages"] else float("nan")
        vs_innodb = total / innodb_chunks[r["modulus"]] if r["modulus"] in innodb_chunks else None
        out.append([
            r["system"], f"id % {r['modulus']}", r["way"], f"{r['statements_s']:.2f}",
            f"{r['purge_s']:.2f}", r["pages_read"], r["table_pages"], f"{read_ratio:.2f}x",
            r["disk_mb"], "-" if vs_innodb is None else f"{vs_innodb:.2f}x",
        ])
        if r["system"] == "steady" and r["way"] in ("one", "chunks"):
            if read_ratio > 1.2:
                failures.append(f"000 {r['way']} id % {r['modulus']}: pages read {read_ratio:.2f}x the table (goal <= 1.2x)")
            if vs_innodb is not None and vs_innodb > 0.5:
                failures.append(f"000 {r['way']} id % {r['modulus']}: {vs_innodb:.2f}x InnoDB's chunked time (goal <= 0.5x)")
    table(["system", "v", "way", "stmts s", "purge s", "pages read", "table pages",
           "read/table", "disk MB", "time/InnoDB chunks"], out)


def report_000_limit(rows, failures):
    print("\n000-limit: 200 x DELETE ... LIMIT 1000 of v = 0 (20% of 1,000,000 rows), old snapshot open")
    out = []
    for r in rows:
        ratio = r["last_ms"] / r["first_ms"] if r["first_ms"] else float("nan")
        out.append([r["system"], r["statements"], f"{r['first_ms']:.1f}", f"{r['last_ms']:.1f}",
                    f"{ratio:.2f}x", f"{r['total_ms'] / 1000:.2f}",
                    f"{r.get('read_after_ms', float('nan')):.1f}"])
        if r["system"] == "steady" and ratio > 2:
            failures.append(f"000-limit: last statement {ratio:.2f}x the first (goal <= 2x)")
    table(["system", "statements", "first ms", "last ms", "last/first", "all s", "v = 0 read ms"],
          out)


def report_001(rows, failures):
    print("\n001: 7 indexes built on 100,000 rows of 8 CHAR(255)")
    postgres = next((r["build_s"] for r in rows if r["system"] == "postgres"), None)
    out = []
    for r in rows:
        log_ratio = r["log_bytes"] / r["index_bytes"] if r["index_bytes"] else float("nan")
        vs_pg = r["build_s"] / postgres if postgres else None
        out.append([r["system"], f"{r['build_s']:.2f}", r["log_bytes"] // 1024,
                    r["index_bytes"] // 1024, f"{log_ratio:.2f}x",
                    "-" if vs_pg is None else f"{vs_pg:.2f}x"])
        if r["system"] == "steady":
            if log_ratio > 1.1:
                failures.append(f"001: log {log_ratio:.2f}x the indexes' bytes (goal <= 1.1x)")
            if vs_pg is not None and vs_pg > 1:
                failures.append(f"001: builds {vs_pg:.2f}x PostgreSQL's time (goal <= 1x)")
    table(["system", "build s", "log KiB", "index KiB", "log/index", "time/PostgreSQL"], out)


def report_002(rows, failures):
    print("\n002: sysbench oltp_update_index (pareto, 8 threads, 1,000,000 rows), an RR snapshot held")
    out = []
    for r in rows:
        rc, rr = r["rc_s"] / r["idle_s"], r["rr_s"] / r["idle_s"]
        held = r["held_tps"] / r["base_tps"]
        worst = min(r["held_worst_tps"], r["after_worst_tps"]) / r["base_tps"]
        pages = r["pages_after"] / r["pages_before"]
        out.append([r["system"], f"{r['idle_s']:.2f}", f"{rc:.2f}x", f"{rr:.2f}x",
                    f"{r['base_tps']:.0f}", f"{held:.2f}x", f"{worst:.2f}x", f"{pages:.2f}x"])
        if r["system"] == "steady":
            for name, ratio, goal in [("avg(k) at RC", rc, 1.5), ("avg(k) at RR", rr, 1.5)]:
                if ratio > goal:
                    failures.append(f"002: {name} {ratio:.2f}x idle (goal <= {goal}x)")
            if held < 0.9:
                failures.append(f"002: TPS with the snapshot held {held:.2f}x (goal >= 0.9x)")
            if worst < 0.8:
                failures.append(f"002: worst 5-second interval {worst:.2f}x the median (goal >= 0.8x)")
            if pages > 1.1:
                failures.append(f"002: pages {pages:.2f}x their size before the load (goal <= 1.1x)")
    table(["system", "avg idle s", "RC/idle", "RR/idle", "TPS", "held/base", "worst/base",
           "pages after/before"], out)


def report_004(rows, failures):
    print("\n004: DROP TABLE and TRUNCATE of a big resident table beside sysbench oltp_read_write (8 threads)")
    out = []
    for r in rows:
        base = r["base_tps"]
        out.append([r["system"], r["table_pages"], f"{r['load_s']:.0f}", f"{r['drop_ms']:.1f}",
                    f"{r['truncate_ms']:.1f}", f"{base:.0f}", f"{r['base_worst'] / base:.2f}x",
                    f"{r['drop_worst'] / base:.2f}x", f"{r['truncate_worst'] / base:.2f}x",
                    f"{r['base_max_ms']:.0f}", f"{r['drop_max_ms']:.0f}", f"{r['truncate_max_ms']:.0f}",
                    r["disk_mb"]])
        if r["system"] == "steady":
            for name in ("drop", "truncate"):
                if r[f"{name}_ms"] > 10:
                    failures.append(f"004: {name.upper()} took {r[f'{name}_ms']:.1f} ms (goal <= 10 ms)")
                worst = r[f"{name}_worst"] / base
                if worst < 0.95:
                    failures.append(f"004: worst second with {name.upper()} {worst:.2f}x the median (goal >= 0.95x)")
                if r[f"{name}_max_ms"] > r["base_max_ms"]:
                    failures.append(f"004: max latency with {name.upper()} {r[f'{name}_max_ms']:.0f} ms, "
                                    f"{r['base_max_ms']:.0f} ms without (goal: no worse)")
    table(["system", "table pages", "load s", "DROP ms", "TRUNCATE ms", "TPS", "worst base",
           "worst DROP", "worst TRUNC", "max ms base", "max DROP", "max TRUNC", "disk MB"], out)


REPORTS = {
    "000": report_000,
    "000-limit": report_000_limit,
    "001": report_001,
    "002": report_002,
    "004": report_004,
}


def main():
    results = load(sys.argv[1])
    failures = []
    for scenario, report in REPORTS.items():
        rows = [r for r in results if r["scenario"] == scenario]
        if rows:
            report(rows, failures)
    print()
    for failure in failures:
        print(f"goal missed: {failure}")
    if not failures:
        print("every goal measured here is met")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
