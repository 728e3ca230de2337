"""The DuckDB fleet job's per_flow, counted from an export's packets, against the export's own flows table
(the analysis' figures): for every flow in `flows`, its packets, PSN gaps and retransmissions as counted
from the packet rows that name its id. Prints `compared N flows`; exits 1 with each difference.

usage: per_flow_check.py TREE
"""
import os
import sys

import duckdb

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def main(tree):
    con = duckdb.connect()
    con.execute("SET VARIABLE root = ?", [tree])
    con.execute(open(os.path.join(ROOT, "jobs", "duckdb", "fleet.sql")).read()).fetchall()
    got = {(r[0], r[1]): r[2:] for r in con.sql(
        "SELECT capture_file, id, packets, gap_events, retransmitted FROM per_flow").fetchall()}
    flows = con.sql(
        f"SELECT \"capture.file\", id, packets, \"psn.gap_events\", \"psn.retransmitted\" "
        f"FROM read_parquet('{tree}/**/flows.parquet')").fetchall()
    wrong = []
    for f in flows:
        key, want = (f[0], f[1]), tuple(f[2:])
        if got.get(key) != want:
            wrong.append(f"flow {key}: per_flow {got.get(key)}, flows {want}")
    if wrong:
        sys.exit("\n".join(wrong))
    print(f"compared {len(flows)} flows")


if __name__ == "__main__":
    main(sys.argv[1])
