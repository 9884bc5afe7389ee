#!/usr/bin/env python3
# Usage: python3 crates/sql/tests/slt/validate_pg.py [--dsn "host=/tmp port=5499 user=postgres"] [-v] FILE.slt...
#
# Validates a sqllogictest corpus (sqllogictest-rs format, the subset used here)
# against a real PostgreSQL server (the corpus targets PostgreSQL 15), so the
# expected results in the .slt files are PostgreSQL's true behaviour.
#
# Each file runs in a fresh database (created from template0, UTF8, C.UTF-8
# collation, i.e. code-point order like SteadyDB) on one connection using the
# simple query protocol, record by record.  Checked:
#   * `statement ok`             -> the statement succeeds
#   * `statement error <STATE>`  -> it fails with exactly that SQLSTATE
#   * `query error <STATE>`      -> same
#   * `query <types> [rowsort]`  -> it succeeds, the column count equals the
#     number of type letters, each column's type letter matches the PG type
#     (I = int2/int4/int8, R = float4/float8/numeric, T = anything else), and the
#     rows (PG's text output; NULL -> "NULL", '' -> "(empty)"; rowsort sorts the
#     rows like the Rust runner does) equal the expected lines after the
#     runner's whitespace normalisation.
# Lints: error expectations must be a bare 5-character SQLSTATE; a query that
# returns more than one row must have ORDER BY or rowsort; a record must hold
# exactly one SQL statement; no result value may contain leading, trailing or
# repeated whitespace (the runner's normalisation would hide it); a file must
# drop every relation it created.
# `skipif <label>` / `onlyif <label>` lines apply to the next record; records
# marked `onlyif X` (X not postgres/postgresql/pg) or `skipif postgres|postgresql|pg`
# are not run here.
#
# Connection: --dsn, else $SLT_PG_DSN, else "host=/tmp port=5499 user=postgres".
# Exits 0 when every record matches, 1 on any mismatch (each printed as file:line),
# 2 on usage / connection problems.

import os
import re
import sys

try:
    from psycopg import pq
except ImportError:  # pragma: no cover
    sys.stderr.write("needs psycopg 3: pip install 'psycopg[binary]'\n")
    sys.exit(2)

PG_LABELS = {"postgres", "postgresql", "pg"}
SESSION_OPTIONS = (
    "-c DateStyle=ISO,MDY -c extra_float_digits=1 -c TimeZone=UTC "
    "-c lc_messages=C -c client_encoding=UTF8 -c IntervalStyle=postgres"
)

INT_OIDS = {20, 21, 23}  # int8, int2, int4
REAL_OIDS = {700, 701, 1700}  # float4, float8, numeric
SQLSTATE_RE = re.compile(r"^[0-9A-Z]{5}$")


class Record:
    def __init__(self, kind, line, sql, expect_error=None, types=None,
                 sort=None, results=None, conditions=()):
        self.kind = kind  # "statement" | "query"
        self.line = line
        self.sql = sql
        self.expect_error = expect_error  # SQLSTATE string or None
        self.types = types
        self.sort = sort
        self.results = results or []
        self.conditions = list(conditions)


class ParseError(Exception):
    pass


def parse_file(path):
    """Parse the subset of the sqllogictest-rs format this corpus uses."""
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    records = []
    conditions = []
    i = 0
    n = len(lines)

    def take_sql(start):
        """SQL lines up to a blank line or '----' (like the Rust parser)."""
        j = start
        if j >= n:
            raise ParseError(f"{path}:{start}: unexpected end of file")
        out = [lines[j]]
        j += 1
        found = False
        while j < n:
            if lines[j] == "":
                break
            if lines[j] == "----":
                found = True
                j += 1
                break
            out.append(lines[j])
            j += 1
        return "\n".join(out), found, j

    while i < n:
        line = lines[i]
        lineno = i + 1
        if line.startswith("#") or line == "":
            i += 1
            continue
        tokens = line.split()
        if not tokens:
            i += 1
            continue
        if tokens[0] in ("skipif", "onlyif") and len(tokens) == 2:
            conditions.append((tokens[0], tokens[1]))
            i += 1
            continue
        if tokens[0] == "statement":
            if tokens[1:2] == ["ok"] and len(tokens) == 2:
                err = None
            elif tokens[1:2] == ["error"]:
                err = " ".join(tokens[2:])
            else:
                raise ParseError(f"{path}:{lineno}: unsupported statement line: {line}")
            sql, found, i = take_sql(i + 1)
            if found:
                raise ParseError(f"{path}:{lineno}: statement with results ('----') is not used in this corpus")
            records.append(Record("statement", lineno, sql, expect_error=err,
                                  conditions=conditions))
            conditions = []
            continue
        if tokens[0] == "query":
            if len(tokens) < 2:
                raise ParseError(f"{path}:{lineno}: query without type string")
            if tokens[1] == "error":
                err = " ".join(tokens[2:])
                sql, found, i = take_sql(i + 1)
                if found:
                    raise ParseError(f"{path}:{lineno}: multi-line error messages are not used in this corpus")
                records.append(Record("query", lineno, sql, expect_error=err,
                                      conditions=conditions))
                conditions = []
                continue
            types = tokens[1]
            if not re.fullmatch(r"[ITR]+", types):
                raise ParseError(f"{path}:{lineno}: bad type string {types!r}")
            sort = None
            rest = tokens[2:]
            if rest and rest[0] in ("nosort", "rowsort", "valuesort"):
                sort = rest[0]
                rest = rest[1:]
            if sort == "valuesort":
                raise ParseError(f"{path}:{lineno}: valuesort is not used in this corpus")
            if rest:
                raise ParseError(f"{path}:{lineno}: labels/retry are not used in this corpus: {rest}")
            sql, found, i = take_sql(i + 1)
            results = []
            if found:
                while i < n and lines[i] != "":
                    results.append(lines[i])
                    i += 1
            records.append(Record("query", lineno, sql, types=types, sort=sort,
                                  results=results, conditions=conditions))
            conditions = []
            continue
        raise ParseError(f"{path}:{lineno}: unsupported line: {line}")
    return records


def should_run(rec):
    for kind, label in rec.conditions:
        if kind == "onlyif" and label not in PG_LABELS:
            return False
        if kind == "skipif" and label in PG_LABELS:
            return False
    return True


def normalize(s):
    return " ".join(s.split())


def fmt_value(v):
    if v is None:
        return "NULL"
    s = v.decode("utf-8")
    if s == "":
        return "(empty)"
    return s


def type_letter(oid):
    if oid in INT_OIDS:
        return "I"
    if oid in REAL_OIDS:
        return "R"
    return "T"


def execute(conn, sql):
    """Run one record's SQL with the simple query protocol.

    Returns (results, error) where results is the list of PGresults."""
    try:
        conn.send_query(sql.encode("utf-8"))
    except Exception as e:  # connection-level failure
        raise RuntimeError(str(e) or conn.error_message.decode(errors="replace"))
    results = []
    while True:
        res = conn.get_result()
        if res is None:
            break
        results.append(res)
    return results


def result_error(res):
    if res.status == pq.ExecStatus.FATAL_ERROR:
        state = res.error_field(pq.DiagnosticField.SQLSTATE)
        msg = res.error_field(pq.DiagnosticField.MESSAGE_PRIMARY)
        return (state.decode() if state else "?????",
                msg.decode(errors="replace") if msg else "")
    return None


def ident(s):
    return '"' + s.replace('"', '""') + '"'


def connect(dsn, dbname):
    conn = pq.PGconn.connect(
        f"{dsn} dbname={dbname} options='{SESSION_OPTIONS}'".encode())
    if conn.status != pq.ConnStatus.OK:
        raise RuntimeError(conn.error_message.decode(errors="replace").strip())
    return conn


def admin_exec(conn, sql):
    res = conn.exec_(sql.encode())
    if res.status not in (pq.ExecStatus.COMMAND_OK, pq.ExecStatus.TUPLES_OK):
        raise RuntimeError(f"{sql}: {res.error_message.decode(errors='replace').strip()}")
    return res


def run_file(path, dsn, verbose):
    failures = []
    failed_lines = set()

    def fail(rec, msg):
        failed_lines.add(rec.line)
        failures.append(f"{path}:{rec.line}: {msg}\n    sql: {rec.sql}")

    try:
        records = parse_file(path)
    except ParseError as e:
        return [str(e)], 0, 1

    dbname = "slt_" + re.sub(r"[^a-z0-9_]", "_", os.path.basename(path).lower())
    admin = connect(dsn, "postgres")
    admin_exec(admin, f"DROP DATABASE IF EXISTS {ident(dbname)}")
    admin_exec(admin, f"CREATE DATABASE {ident(dbname)} TEMPLATE template0 "
                      f"ENCODING 'UTF8' LC_COLLATE 'C.UTF-8' LC_CTYPE 'C.UTF-8'")
    ran = 0
    try:
        conn = connect(dsn, dbname)
        try:
            for rec in records:
                if not should_run(rec):
                    continue
                ran += 1
                if rec.expect_error is not None and not SQLSTATE_RE.match(rec.expect_error):
                    fail(rec, f"error expectation must be a bare SQLSTATE, got {rec.expect_error!r}")
                results = execute(conn, rec.sql)
                if len(results) != 1:
                    fail(rec, f"record must contain exactly one SQL statement (got {len(results)} results)")
                    if not results:
                        continue
                res = results[-1]
                err = result_error(res)
                if verbose:
                    print(f"{path}:{rec.line}: {err or getattr(res.status, 'name', res.status)}")
                if rec.expect_error is not None:
                    if err is None:
                        fail(rec, f"expected error {rec.expect_error}, but it succeeded")
                    elif err[0] != rec.expect_error:
                        fail(rec, f"expected error {rec.expect_error}, got {err[0]}: {err[1]}")
                    continue
                if err is not None:
                    fail(rec, f"unexpected error {err[0]}: {err[1]}")
                    continue
                if rec.kind == "statement":
                    continue
                # query with results
                if res.status != pq.ExecStatus.TUPLES_OK:
                    fail(rec, f"query returned no result set (status {res.status.name})")
                    continue
                nf = res.nfields
                actual_types = "".join(type_letter(res.ftype(c)) for c in range(nf))
                if len(rec.types) != nf:
                    fail(rec, f"type string {rec.types!r} has {len(rec.types)} columns, "
                              f"result has {nf} ({actual_types})")
                elif actual_types != rec.types:
                    fail(rec, f"type string {rec.types!r} does not match result types {actual_types!r}")
                rows = [[fmt_value(res.get_value(r, c)) for c in range(nf)]
                        for r in range(res.ntuples)]
                if rec.sort == "rowsort":
                    rows.sort()
                elif len(rows) > 1 and not re.search(r"\border\s+by\b", rec.sql, re.I):
                    fail(rec, "multi-row result without ORDER BY or rowsort")
                for row in rows:
                    for v in row:
                        if normalize(v) != v:
                            fail(rec, f"value {v!r} has leading/trailing/repeated whitespace, which "
                                      "the runner's normalisation hides: rewrite the query")
                actual = [" ".join(normalize(v) for v in row) for row in rows]
                expected = [normalize(l) for l in rec.results]
                if actual != expected:
                    fail(rec, "result mismatch\n    expected:\n"
                         + "".join(f"      {l}\n" for l in rec.results)
                         + "    actual:\n"
                         + "".join(f"      {l}\n" for l in actual))
            # cleanup check: every file must drop what it created
            res = conn.exec_(
                b"SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
                b"WHERE n.nspname = 'public' ORDER BY 1")
            if res.status == pq.ExecStatus.TUPLES_OK and res.ntuples:
                left = [res.get_value(r, 0).decode() for r in range(res.ntuples)]
                failures.append(f"{path}:{len(open(path).read().splitlines())}: "
                                f"file leaves relations behind: {', '.join(left)}")
        finally:
            conn.finish()
    finally:
        admin_exec(admin, f"DROP DATABASE IF EXISTS {ident(dbname)} WITH (FORCE)")
        admin.finish()
    return failures, ran, len(failed_lines)


def main(argv):
    args = argv[1:]
    dsn = os.environ.get("SLT_PG_DSN", "host=/tmp port=5499 user=postgres")
    verbose = False
    files = []
    while args:
        a = args.pop(0)
        if a == "--dsn" and args:
            dsn = args.pop(0)
        elif a in ("-v", "--verbose"):
            verbose = True
        elif a in ("-h", "--help"):
            print(__doc__ or open(__file__).read().split("\n\n")[0])
            return 0
        else:
            files.append(a)
    if not files:
        sys.stderr.write('usage: validate_pg.py [--dsn "host=/tmp port=5499 user=postgres"] [-v] FILE.slt...\n')
        return 2
    total_fail = 0
    total_ran = 0
    total_bad_records = 0
    for path in files:
        try:
            failures, ran, bad_records = run_file(path, dsn, verbose)
        except RuntimeError as e:
            sys.stderr.write(f"{path}: cannot run against PostgreSQL: {e}\n")
            return 2
        total_ran += ran
        total_bad_records += bad_records
        for f in failures:
            print(f)
        total_fail += len(failures)
        print(f"{path}: {ran} records, {len(failures)} mismatches", flush=True)
    print(f"{max(total_ran - total_bad_records, 0)} passed, {total_bad_records} failed")
    return 1 if total_fail else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
