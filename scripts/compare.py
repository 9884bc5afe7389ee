"""Formats the figures scripts/compare.sh collected: a Markdown table per workload, or one JSON object.

Input: a meta file of `meta<TAB>key<TAB>value` lines (the run's settings and `checks_passed`) and a
results file of `workload<TAB>figure<TAB>better<TAB>system<TAB>value` lines, where system is
`steady` or `postgres` and better is `higher` (rates), `lower` (times, bytes) or `none` (no ratio).
The ratio is SteadyDB/PostgreSQL for `higher` figures and PostgreSQL/SteadyDB for `lower` ones, so
a ratio above 1 always means SteadyDB is better. Workloads and figures keep the order they ran in.

    python3 scripts/compare.py [--format table|json] META RESULTS
"""

import argparse
import json
import sys

SYSTEMS = ("steady", "postgres")
RATIO_NOTE = (
    "ratio: SteadyDB/PostgreSQL for rates, PostgreSQL/SteadyDB for times and bytes; "
    ">1 means SteadyDB is better"
)


def read_tsv(path, fields):
    with open(path, encoding="utf-8") as file:
        for line in file:
            parts = line.rstrip("\n").split("\t")
            if len(parts) != fields:
                raise ValueError(f"{path}: expected {fields} fields in {line!r}")
            yield parts


def number(text):
    """The value as an int or float, or None when it is not a number."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        return float(text)
    except ValueError:
        return None


def ratio(better, steady, postgres):
    """The figure's ratio (>1: SteadyDB better), or None for no ratio or a zero denominator."""
    steady, postgres = number(steady or ""), number(postgres or "")
    if better == "none" or steady is None or postgres is None or min(steady, postgres) < 0:
        return None
    numerator, denominator = (steady, postgres) if better == "higher" else (postgres, steady)
    return numerator / denominator if denominator > 0 else None


def collect(results_path):
    """{workload: {figure: {"better": ..., "steady": text, "postgres": text}}} in run order."""
    workloads = {}
    for workload, figure, better, system, value in read_tsv(results_path, 5):
        if system not in SYSTEMS:
            raise ValueError(f"unknown system {system!r}")
        entry = workloads.setdefault(workload, {}).setdefault(figure, {"better": better})
        entry[system] = value
    return workloads


def title(workload, meta):
    seconds = f"{meta['seconds']} s per run"
    details = {
        "pgbench": f"scale {meta['pgbench_scale']}, {seconds}",
        "sysbench": f"{meta['sysbench_table_size']} rows, 8 threads, {seconds}",
        "commit": f"one-statement UPDATE by random key, {seconds}",
        "bulk": f"{meta['bulk_rows']} rows",
        "memory": "at the end of the pgbench runs",
        "joins": "2 to 10 tables of 100 to 100,000 rows, after ANALYZE, best of 3",
    }
    return f"{workload} ({details[workload]})" if workload in details else workload


def shown(text):
    value = number(text) if text is not None else None
    if text is None:
        return "-"
    if value is None or isinstance(value, int):
        return text
    return f"{value:,.1f}" if abs(value) >= 100 else f"{value:.4g}"


def markdown(rows):
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = []
    for index, row in enumerate(rows):
        cells = [cell.ljust(widths[0]) if i == 0 else cell.rjust(widths[i]) for i, cell in enumerate(row)]
        lines.append("| " + " | ".join(cells) + " |")
        if index == 0:
            lines.append("|" + "|".join("-" * (w + 1) + (":" if i else "-") for i, w in enumerate(widths)) + "|")
    return "\n".join(lines)


def print_tables(meta, workloads):
    print(
        f"SteadyDB against PostgreSQL {meta['postgres']}: buffer pool / shared_buffers "
        f"{meta['buffer_pool']} each, fsync and synchronous_commit on; {RATIO_NOTE}."
    )
    for workload, figures in workloads.items():
        rows = [("figure", "SteadyDB", "PostgreSQL", "ratio (>1: SteadyDB better)")]
        for figure, entry in figures.items():
            r = ratio(entry["better"], entry.get("steady"), entry.get("postgres"))
            rows.append(
                (figure, shown(entry.get("steady")), shown(entry.get("postgres")), "-" if r is None else f"{r:.2f}x")
            )
        print(f"\n{title(workload, meta)}\n")
        print(markdown(rows))
    print(f"\nchecks passed: {meta['checks_passed']}")


def as_json(meta, workloads):
    def value(text):
        parsed = number(text) if text is not None else None
        return text if parsed is None else parsed

    def rounded(r):
        return None if r is None else round(r, 3)

    return {
        "config": {k: value(v) for k, v in meta.items() if k != "checks_passed"},
        "checks_passed": meta["checks_passed"] == "true",
        "ratio": RATIO_NOTE,
        "workloads": {
            workload: [
                {
                    "figure": figure,
                    "better": entry["better"],
                    "steady": value(entry.get("steady")),
                    "postgres": value(entry.get("postgres")),
                    "ratio": rounded(ratio(entry["better"], entry.get("steady"), entry.get("postgres"))),
                }
                for figure, entry in figures.items()
            ]
            for workload, figures in workloads.items()
        },
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--format", choices=("table", "json"), default="table")
    parser.add_argument("meta")
    parser.add_argument("results")
    args = parser.parse_args()
    meta = {key: value for _, key, value in read_tsv(args.meta, 3)}
    workloads = collect(args.results)
    if args.format == "json":
        json.dump(as_json(meta, workloads), sys.stdout, indent=2)
        print()
    else:
        print_tables(meta, workloads)


if __name__ == "__main__":
    main()
