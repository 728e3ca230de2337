"""The tables of several exports of the same capture are the same: packets, flows and events, row by row
and column by column, but for the columns that name where the capture was read from (`capture.file`,
`capture.point`, `capture.path`). Prints each table's row count; exits 1 with the first difference.

usage: same_tables.py DIR DIR...
"""
import sys

import pyarrow.parquet as pq

TABLES = ["packets", "flows", "events"]


def table(d, name):
    t = pq.read_table(f"{d}/{name}.parquet")
    keep = [c for c in t.column_names if not c.startswith("capture.")]
    return t.select(keep)


def main(dirs):
    for name in TABLES:
        first = table(dirs[0], name)
        for d in dirs[1:]:
            other = table(d, name)
            if other.column_names != first.column_names:
                sys.exit(f"{name}: columns {other.column_names} in {d}, {first.column_names} in {dirs[0]}")
            for col in first.column_names:
                a, b = first.column(col).to_pylist(), other.column(col).to_pylist()
                if a != b:
                    at = next(i for i, (x, y) in enumerate(zip(a, b)) if x != y) if len(a) == len(b) else None
                    sys.exit(f"{name}.{col}: {d} differs from {dirs[0]} (rows {len(b)}, {len(a)}; first at {at})")
        print(f"{name}: {first.num_rows} rows")


if __name__ == "__main__":
    main(sys.argv[1:])
