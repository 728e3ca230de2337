"""Runs the fleet jobs on a tree of exports and holds them against `rocescope analyze --json --all-flows`
of the same captures (tests/export.rs writes EXPECTED): jobs/spark/fleet.py in Spark's local mode (one
session for every capture) and jobs/duckdb/fleet.sql in DuckDB.

- per_flow, from each job: every flow of the JSON, with the figures the job counts from the packets table
  (packets, bytes, PSN gaps, retransmissions, NAKs by code, RNR NAKs, CE marks, CNPs, bad ICRCs) and those
  it takes from the flows table (missing PSNs, duplicates), each equal to the JSON's, also in captures
  whose flows were evicted (a flow's id is never reused: its packets join its row). The packets' class is
  how each frame was counted when read; a later frame can tell that a packet had been held up on the way
  (`psn.reordered`: a gap whose PSNs all came after, a first copy taken for a resend): there the jobs'
  PSN gaps and retransmissions may exceed the JSON's, by at most the flow's `psn.reordered` each;
- per_segment, from each job: exactly the segments of SEGMENTS.json (made by the test from the frames it
  dropped), each way;
- every other result (per connection, host pair and capture point, the worst QPs and hosts per window) is
  the same from both jobs.

usage: fleet_check.py TREE EXPECTED.json SEGMENTS.json; prints one line per job and exits 1 with every
difference found.
"""
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "jobs", "spark"))

import duckdb  # noqa: E402
import fleet  # noqa: E402
from pyspark.sql import SparkSession  # noqa: E402

problems = []


def problem(text):
    if len(problems) < 50:
        problems.append(text)


def want(flow):
    """The JSON's figures under the jobs' names."""
    w = {
        "src": flow["src"],
        "dst": flow["dst"],
        "dest_qp": flow["dest_qp"],
        "role": flow["role"],
        "connection": flow["connection"],
        "missing": flow["psn"]["missing"],
        "duplicates": flow["psn"]["duplicates"],
        "packets": flow["packets"],
        "bytes": flow["bytes"],
        "gap_events": flow["psn"]["gap_events"],
        "retransmitted": flow["psn"]["retransmitted"],
        "rnr_naks": flow["rnr_naks"],
        "ce": flow["ecn"]["ce"],
        "cnp": flow["cnp"],
        "icrc_bad": flow["icrc_bad"],
    }
    for code, n in flow["naks"].items():
        w[f"naks_{code}"] = n
    return w


def check_flows(job, rows, captures):
    got = {(r["capture_file"], r["id"]): r for r in rows}
    compared = 0
    for c in captures:
        for f in c["report"]["flows"]:
            row = got.get((c["file"], f["id"]))
            if row is None:
                problem(f"{job}: {c['file']}: no row for flow {f['id']}")
                continue
            held_up = f["psn"]["reordered"]
            for k, v in want(f).items():
                revised = k in ("gap_events", "retransmitted") and isinstance(row.get(k), int)
                if revised and 0 <= row[k] - v <= held_up:
                    continue
                if row.get(k) != v:
                    problem(f"{job}: {c['file']}: flow {f['id']}: {k} is {row.get(k)!r}, the JSON's {v!r}")
            compared += 1
    return compared


def spark_results(tree):
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("rocescope-fleet-test")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    results = {n: [r.asDict() for r in df.collect()] for n, df in fleet.figures(spark, tree).items()}
    spark.stop()
    return results


def duckdb_results(tree, names):
    con = duckdb.connect()
    con.execute("SET VARIABLE root = ?", [tree])
    con.execute(open(os.path.join(ROOT, "jobs", "duckdb", "fleet.sql")).read()).fetchall()
    out = {}
    for n in names:
        rel = con.sql(f"SELECT * FROM {n}")
        out[n] = [dict(zip(rel.columns, r)) for r in rel.fetchall()]
    return out


def canonical(rows):
    return sorted(json.dumps(r, sort_keys=True, default=str) for r in rows)


def main(tree, expected, segments):
    captures = json.load(open(expected))
    segments = json.load(open(segments))
    t = time.time()
    spark = spark_results(tree)
    spark_s = time.time() - t
    t = time.time()
    duck = duckdb_results(tree, spark.keys())
    duck_s = time.time() - t
    evicted = sum("evicted" in c["report"] for c in captures)
    for job, results, secs in (("spark", spark, spark_s), ("duckdb", duck, duck_s)):
        n = check_flows(job, results["per_flow"], captures)
        print(f"{job}: {n} flows of {len(captures)} captures equal to the JSON "
              f"({evicted} of them with evicted flows), {secs:.1f} s")
        if canonical(results["per_segment"]) != canonical(segments):
            problem(f"{job}: per_segment is {results['per_segment']}, the drops made {segments}")
    for name in spark:
        if canonical(spark[name]) != canonical(duck[name]):
            a, b = set(canonical(spark[name])), set(canonical(duck[name]))
            problem(f"{name}: Spark and DuckDB differ ({len(spark[name])} and {len(duck[name])} rows): "
                    f"Spark alone {sorted(a - b)[:3]}, DuckDB alone {sorted(b - a)[:3]}")
        print(f"{name}: {len(spark[name])} rows, the same from both jobs")
    for p in problems:
        print("DIFF", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3]))
