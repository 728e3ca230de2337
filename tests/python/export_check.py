"""Reads `rocescope export --parquet DIR` back with pyarrow and holds it against what tshark and
`rocescope analyze --json --all-flows` say of the same captures (tests/export.rs writes EXPECTED):

- packets: for each capture, the frame numbers of its rows are the frames tshark takes for RoCE (dissected
  as InfiniBand, or UDP to port 4791: tshark gives some of those to the dissector of their source port),
  but for the known disagreements below, and as many as the report's `capture.roce_frames`; each row's
  `ip.id` and `infiniband.invariant.crc` equal to tshark's where tshark shows them;
- flows: one row per flow of the JSON, every figure of the flow equal (nested objects flattened to dotted
  column names, `opcodes` and `rnr_timers_ms` as maps, a null object as null columns), no other column
  but where it was captured (each capture a point of its own);
- events: the JSON's events, in order, every field equal (`detail` as JSON text);
- every row group of every table holds at most 65,536 rows.

usage: export_check.py DIR EXPECTED.json; prints one line per table and exits 1 with every difference found.
"""
import json
import sys

import pyarrow.parquet as pq

ROW_GROUP = 64 * 1024
MAPS = {"opcodes", "rnr_timers_ms"}

# (capture, frame): why rocescope and tshark disagree on whether the frame is RoCE.
KNOWN = {
    ("testdata/edge/damaged.pcap", 3): "its IPv4 total length (1084) runs past the 36 bytes in the frame: "
    "rocescope stops at the IP header (a malformed frame, not RoCE); tshark decodes UDP and the BTH anyway",
}

problems = []


def problem(text):
    if len(problems) < 50:
        problems.append(text)


def flatten(obj, prefix=""):
    """A flow's JSON as {dotted path: value}; a null object as {path: None} (its columns must be null)."""
    out = {}
    for k, v in obj.items():
        name = prefix + k
        if isinstance(v, dict) and k not in MAPS:
            out.update(flatten(v, name + "."))
        else:
            out[name] = v
    return out


def row_value(name, v):
    # A map column reads back as a list of (key, value) pairs.
    if name in MAPS and v is not None:
        return dict(v)
    return v


def check_flow(file, flow, row):
    want = flatten(flow)
    for name, v in want.items():
        if isinstance(v, dict) or name in MAPS or v is not None or name in row:
            got = row_value(name, row.get(name, "<no column>"))
            if got != v:
                problem(f"{file}: flow {flow['id']}: {name} is {got!r} in the table, {v!r} in the JSON")
        else:
            # A null object: each of its columns is null.
            cols = [c for c in row if c.startswith(name + ".")]
            if not cols:
                problem(f"{file}: flow {flow['id']}: no column for {name}")
            for c in cols:
                if row[c] is not None:
                    problem(f"{file}: flow {flow['id']}: {c} is {row[c]!r}, the JSON's {name} is null")
    where = {k: row.get(k) for k in ("capture.point", "capture.path", "capture.point_index")}
    if where != {"capture.point": file, "capture.path": None, "capture.point_index": None}:
        problem(f"{file}: flow {flow['id']}: captured at {where}, not at a point of its own")
    for c in row:
        if not c.startswith("capture.") and c not in want and c.split(".")[0] not in want:
            problem(f"{file}: flow {flow['id']}: column {c} is not in the JSON")


def check_event(file, i, event, row):
    for name, v in event.items():
        got = row.get(name, "<no column>")
        if name == "detail":
            got = json.loads(got)
        if got != v:
            problem(f"{file}: event {i} ({event['kind']}): {name} is {got!r} in the table, {v!r} in the JSON")


def by_file(rows):
    out = {}
    for r in rows:
        out.setdefault(r["capture.file"], []).append(r)
    return out


def row_groups(path):
    meta = pq.ParquetFile(path).metadata
    for g in range(meta.num_row_groups):
        n = meta.row_group(g).num_rows
        if n > ROW_GROUP:
            problem(f"{path}: row group {g} has {n} rows (at most {ROW_GROUP})")
    return meta.num_row_groups


def main(dir, expected):
    captures = json.load(open(expected))
    tables = {t: f"{dir}/{t}.parquet" for t in ("packets", "flows", "events")}
    groups = {t: row_groups(p) for t, p in tables.items()}
    packets = by_file(pq.read_table(tables["packets"], columns=[
        "capture.file", "frame.number", "ip.id", "infiniband.invariant.crc"]).to_pylist())
    flows = by_file(pq.read_table(tables["flows"]).to_pylist())
    events = by_file(pq.read_table(tables["events"]).to_pylist())
    counted = {"packets": 0, "flows": 0, "events": 0, "known": 0, "fields": 0}
    for c in captures:
        file, report = c["file"], c["report"]
        numbers = [r["frame.number"] for r in packets.get(file, [])]
        counted["packets"] += len(numbers)
        if len(numbers) != report["capture"]["roce_frames"]:
            problem(f"{file}: {len(numbers)} packet rows, the report's roce_frames is "
                    f"{report['capture']['roce_frames']}")
        if c["tshark"] is not None:
            ours, theirs = set(numbers), {n for n, _, _ in c["tshark"]}
            rows_of = {r["frame.number"]: r for r in packets.get(file, [])}
            for n, ip_id, icrc in c["tshark"]:
                r = rows_of.get(n)
                # Where tshark shows the field, the row holds the same value.
                for col, v in (("ip.id", ip_id), ("infiniband.invariant.crc", icrc)):
                    if r is None or v is None:
                        continue
                    counted["fields"] += 1
                    if r[col] != v:
                        problem(f"{file}: frame {n}: {col} is {r[col]!r} in the table, {v} to tshark")
            ours, theirs = set(numbers), theirs
            for n in sorted(ours ^ theirs):
                if (file, n) in KNOWN:
                    counted["known"] += 1
                else:
                    side = "rocescope" if n in ours else "tshark"
                    problem(f"{file}: frame {n} is RoCE to {side} only")
        rows = {r["id"]: r for r in flows.get(file, [])}
        if sorted(rows) != sorted(f["id"] for f in report["flows"]):
            problem(f"{file}: flow ids {sorted(rows)} in the table, {sorted(f['id'] for f in report['flows'])} in the JSON")
        for f in report["flows"]:
            if f["id"] in rows:
                check_flow(file, f, rows[f["id"]])
        counted["flows"] += len(rows)
        got = events.get(file, [])
        if len(got) != len(report["events"]):
            problem(f"{file}: {len(got)} events in the table, {len(report['events'])} in the JSON")
        for i, (e, r) in enumerate(zip(report["events"], got)):
            check_event(file, i, e, r)
        counted["events"] += len(got)
    for t in ("packets", "flows", "events"):
        print(f"{t}: {counted[t]} rows of {len(captures)} captures in {groups[t]} row groups")
    print(f"known disagreements with tshark: {counted['known']} frames")
    print(f"ip.id and infiniband.invariant.crc held against tshark's: {counted['fields']} values")
    for p in problems:
        print("DIFF", p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
