"""Reads the `mesh` table that tests/mesh.rs had `gen mesh --parquet` write under DIR back (pyarrow) and runs the
fleet jobs' mesh results over DIR (jobs/duckdb/mesh.sql in DuckDB, jobs/spark/mesh.py in Spark's local mode),
each held to EXPECTED.json: {"rows": N, "mesh_hosts": [...]} (worked out by hand in the test).

usage: mesh_check.py DIR EXPECTED.json; prints one line per check and exits 1 with every difference found.
"""
import glob
import json
import math
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "jobs", "spark"))

import duckdb  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

import mesh  # noqa: E402


def same(a, b):
    if isinstance(a, float) or isinstance(b, float):
        return a is not None and b is not None and math.isclose(a, b, rel_tol=1e-9)
    return a == b


def differences(job, got, want):
    out = []
    if len(got) != len(want):
        out.append(f"{job}: {len(got)} rows, expected {len(want)}")
    for g, w in zip(got, want):
        for k, v in w.items():
            if not same(g.get(k), v):
                out.append(f"{job}: host {w['host']}: {k} = {g.get(k)!r}, expected {v!r}")
    return out


def main():
    tree, expected_path = sys.argv[1], sys.argv[2]
    with open(expected_path) as f:
        want = json.load(f)
    bad = []
    files = glob.glob(os.path.join(tree, "**", "mesh.parquet"), recursive=True)
    rows = sum(pq.read_table(p).num_rows for p in files)
    table = pq.read_table(files[0])
    for c in ["started", "pattern", "src", "dst", "pass", "why", "outcome.gbps", "outcome.requester_counters"]:
        if c not in table.column_names:
            bad.append(f"parquet: no column {c}")
    if rows != want["rows"]:
        bad.append(f"parquet: {rows} rows, expected {want['rows']}")
    print(f"parquet: {rows} rows in {len(files)} file(s)")

    con = duckdb.connect()
    con.execute(f"SET VARIABLE root = '{tree}'")
    with open(os.path.join(ROOT, "jobs", "duckdb", "mesh.sql")) as f:
        for statement in f.read().split(";"):
            if statement.strip() and not statement.strip().startswith("SELECT * FROM mesh_hosts"):
                con.execute(statement)
    cur = con.execute("SELECT * FROM mesh_hosts ORDER BY host")
    cols = [d[0] for d in cur.description]
    got = [dict(zip(cols, r)) for r in cur.fetchall()]
    bad += differences("duckdb", got, want["mesh_hosts"])
    print(f"duckdb: mesh_hosts {len(got)} rows")

    from pyspark.sql import SparkSession

    spark = SparkSession.builder.master("local[1]").appName("mesh-check").getOrCreate()
    try:
        got = [r.asDict() for r in mesh.figures(spark, tree)["mesh_hosts"].orderBy("host").collect()]
    finally:
        spark.stop()
    bad += differences("spark", got, want["mesh_hosts"])
    print(f"spark: mesh_hosts {len(got)} rows")
    for b in bad:
        print(b)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
