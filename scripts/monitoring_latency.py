#!/usr/bin/env python3
"""How long `steady_metrics` and `steady_tables` take to answer while long work runs (issue 14:
"monitoring never waits").

    python3 scripts/monitoring_latency.py [--port 5433] [--rows 2000000]

Against a running `steady serve` (127.0.0.1, user steady): creates table `monitoring_t` of ROWS
rows, then for each piece of work — CREATE INDEX on it, a DELETE of 30% and the purge after it
(until `purge_lag` is 0), DROP TABLE, and TRUNCATE of a refilled table — polls both views from a
second connection every 2 ms and prints, per view, the polls' median, 99th percentile and maximum
in ms beside the work's own time. Needs psycopg 3 (`pip install 'psycopg[binary]'`).
"""

import argparse
import threading
import time

import psycopg


def poll_views(dsn, stop, latencies):
    with psycopg.connect(dsn, autocommit=True) as monitor:
        while not stop.is_set():
            start = time.perf_counter()
            monitor.execute("SELECT name, value FROM steady_metrics").fetchall()
            middle = time.perf_counter()
            monitor.execute("SELECT * FROM steady_tables").fetchall()
            latencies.append(((middle - start) * 1000, (time.perf_counter() - middle) * 1000))
            time.sleep(0.002)


def purge_settled(connection):
    lag = "SELECT value FROM steady_metrics WHERE name = 'purge_lag'"
    while connection.execute(lag).fetchone()[0] != 0:
        time.sleep(0.01)


def measure(dsn, name, setup, work, wait_for_purge=False):
    with psycopg.connect(dsn, autocommit=True) as connection:
        for statement in setup:
            connection.execute(statement)
        purge_settled(connection)
        stop, latencies = threading.Event(), []
        poller = threading.Thread(target=poll_views, args=(dsn, stop, latencies))
        poller.start()
        time.sleep(0.1)
        start = time.perf_counter()
        for statement in work:
            connection.execute(statement)
        if wait_for_purge:
            purge_settled(connection)
        took = (time.perf_counter() - start) * 1000
        time.sleep(0.1)
        stop.set()
        poller.join()
    for column, view in enumerate(("steady_metrics", "steady_tables")):
        polls = sorted(latency[column] for latency in latencies)
        print(
            f"{name:28s} {took:9.1f} ms  {view:15s} polls {len(polls):5d}  "
            f"p50 {polls[len(polls) // 2]:6.2f}  p99 {polls[int(len(polls) * 0.99)]:6.2f}  "
            f"max {polls[-1]:6.2f} ms"
        )


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=5433)
    parser.add_argument("--rows", type=int, default=2_000_000)
    args = parser.parse_args()
    dsn = f"host=127.0.0.1 port={args.port} user=steady dbname=postgres"
    fill = [
        "CREATE TABLE monitoring_t (id integer PRIMARY KEY, v integer, c text)",
        "INSERT INTO monitoring_t SELECT g, g % 10, repeat('x', 40) "
        f"FROM generate_series(1, {args.rows}) g",
    ]
    print(f"{'work':28s} {'its time':>12s}  view")
    measure(dsn, "CREATE INDEX", fill, ["CREATE INDEX monitoring_v ON monitoring_t (v)"])
    measure(dsn, "DELETE 30% and its purge", [], ["DELETE FROM monitoring_t WHERE v < 3"], True)
    measure(dsn, "DROP TABLE", [], ["DROP TABLE monitoring_t"])
    measure(dsn, "TRUNCATE", fill, ["TRUNCATE monitoring_t"])
    with psycopg.connect(dsn, autocommit=True) as connection:
        connection.execute("DROP TABLE monitoring_t")


if __name__ == "__main__":
    main()
