#!/usr/bin/env python3
"""Cut one lab run into per-scenario results.

usage: split_run.py RUN_DIR OUT_DIR SCENARIO...

RUN_DIR holds data.txt (the guest's data channel, CRs removed) and cable-all.pcap (QEMU filter-dump of the
cable). The guest sends a marker ping 10.0.0.1 -> 10.0.0.2 before and after each scenario: ICMP echo request
with 1200 + 2*index (+1 for the end marker) data bytes filled with 0xa5. Frames strictly between the two
markers of a scenario (echo replies to markers excluded) go to OUT_DIR/<scenario>/cable.pcap; the data
channel's lines between "@@@ LAB-BEGIN i name" and "@@@ LAB-END i name" go to OUT_DIR/<scenario>/perftest.log,
except files the scenario sent back (lab_return in guest/scenarios.sh: "@@@ LAB-FILE name size md5", gzip +
base64 lines, "@@@ LAB-FILE-END name"), which are decoded, checked and written to OUT_DIR/<scenario>/<name>.
The log gets a line "@@@ LAB-CABLE begin_marker=T first_frame=T last_frame=T end_marker=T" with the host's
capture times (seconds since the epoch) of the begin marker request, the scenario's first and last frame and
the end marker request, so that times the guest logs (its uptime, from the begin marker on) can be placed in
the capture.
A points_* run (lab/run) also has cable-b-all.pcap (eth1's end of the cable, after the lossy hop) and
drops-all.pcap (what the hop dropped): they go to OUT_DIR/<scenario>/cable-b.pcap and drops.pcap.
With SPLIT_PREFIX=p (the second guest of a two-guest run: no cable capture of its own), the log and the files
are written as <p>perftest.log and <p><name>, and only files with that prefix are replaced.
"""
import base64
import gzip
import hashlib
import os
import struct
import sys

MARK_BASE = 1200


def frame_time(rec, e, nano):
    """The capture time of a record (its 16-byte header first), in seconds since the epoch."""
    ts_s, ts_f = struct.unpack(e + "II", rec[:8])
    return ts_s + ts_f / (1e9 if nano else 1e6)


def read_pcap(path):
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 24:
        raise ValueError(f"{path}: too short for a pcap file")
    magic = data[:4]
    if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
        e = "<"
    elif magic in (b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"):
        e = ">"
    else:
        raise ValueError(f"{path}: not a classic pcap file")
    nano = magic in (b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\x3c\x4d")
    header = data[:24]
    off = 24
    frames = []
    while off + 16 <= len(data):
        ts_s, ts_f, incl, orig = struct.unpack(e + "IIII", data[off:off + 16])
        rec = data[off:off + 16 + incl]
        frames.append((rec, data[off + 16:off + 16 + incl], frame_time(rec, e, nano)))
        off += 16 + incl
    return header, frames


def marker(frame):
    """(index, is_end, is_request) if the frame is a marker ping or its reply, else None."""
    if len(frame) < 14 + 20 + 8 or frame[12:14] != b"\x08\x00":
        return None
    ip = frame[14:]
    ihl = (ip[0] & 0x0F) * 4
    if ip[0] >> 4 != 4 or ip[9] != 1:
        return None
    total = struct.unpack(">H", ip[2:4])[0]
    icmp = ip[ihl:total]
    if len(icmp) < 8 or icmp[0] not in (0, 8):
        return None
    payload = icmp[8:]
    k = len(payload) - MARK_BASE
    if not 0 <= k < 200 or payload[-16:] != b"\xa5" * 16:
        return None
    return k // 2, k % 2 == 1, icmp[0] == 8


def write_pcap(path, header, recs):
    with open(path, "wb") as f:
        f.write(header)
        for r in recs:
            f.write(r)


def main():
    run, out, scenarios = sys.argv[1], sys.argv[2], sys.argv[3:]
    prefix = os.environ.get("SPLIT_PREFIX", "")
    lines = open(os.path.join(run, "data.txt"), errors="replace").read().splitlines()
    head = [l for l in lines if l.startswith("@@@ LAB-VERSION") or l.startswith("@@@ LAB-BOOT")]
    logs = {}
    cur = None
    for l in lines:
        if l.startswith("@@@ LAB-BEGIN "):
            cur = int(l.split()[2])
            logs[cur] = [l]
        elif cur is not None:
            logs[cur].append(l)
            if l.startswith("@@@ LAB-END "):
                cur = None

    header, parts, marks = cut(os.path.join(run, "cable-all.pcap"))

    qemu_cmd = open(os.path.join(run, "qemu-cmdline")).read().strip() if os.path.exists(os.path.join(run, "qemu-cmdline")) else ""
    ok = True
    for i, name in enumerate(scenarios):
        d = os.path.join(out, name)
        os.makedirs(d, exist_ok=True)
        for old in os.listdir(d):  # nothing stale from an earlier run may pass for this run's result
            if old.startswith(prefix) and os.path.isfile(os.path.join(d, old)):
                os.remove(os.path.join(d, old))
        log = logs.get(i, [])
        end = [l for l in log if l.startswith("@@@ LAB-END")]
        rc = end[0].split("rc=")[1].split()[0] if end else "missing"
        log, files, errors = extract_files(log)
        for fname, data in files.items():
            with open(os.path.join(d, prefix + fname), "wb") as f:
                f.write(data)
            print(f"  {name:12s} returned {prefix}{fname} ({len(data)} bytes)")
        for e in errors:
            print(f"  {name:12s} {e}")
            ok = False
        with open(os.path.join(d, prefix + "perftest.log"), "w") as f:
            f.write("\n".join(head) + "\n")
            f.write(f"@@@ host qemu: {qemu_cmd}\n")
            if not prefix and (i, False) in marks:
                recs = parts.get(i, [])
                when = lambda t: f"{t:.6f}" if t is not None else "none"  # noqa: E731
                f.write(f"@@@ LAB-CABLE begin_marker={when(marks.get((i, False)))} "
                        f"first_frame={when(recs[0][2] if recs else None)} "
                        f"last_frame={when(recs[-1][2] if recs else None)} "
                        f"end_marker={when(marks.get((i, True)))}\n")
            f.write("\n".join(log) + "\n")
        cap = os.path.join(d, "cable.pcap")
        if prefix:
            print(f"  {name:12s} rc={rc:7s} ({prefix}perftest.log)")
            ok = ok and rc == "0"
            continue
        if os.path.exists(cap):
            os.remove(cap)
        if i in parts and header is not None:
            recs = parts[i]
            write_pcap(cap, header, [r for r, _, _ in recs])
            roce = sum(1 for _, fr, _ in recs if is_roce(fr))
            print(f"  {name:12s} rc={rc:7s} frames={len(recs):5d} udp4791={roce:5d} {cap}")
        else:
            print(f"  {name:12s} rc={rc:7s} no capture (markers not seen)")
            ok = False
        if rc != "0":
            ok = False
        cut_points_run(run, d, i, marks)
    return 0 if ok else 1


def cut(pcap):
    """(header, frames per scenario index, host times of the marker requests) of a cable dump."""
    header, frames = read_pcap(pcap) if os.path.exists(pcap) else (None, [])
    parts = {}
    marks = {}   # (index, is_end): host time of the marker request
    cur = None
    for rec, frame, t in frames:
        m = marker(frame)
        if m:
            idx, end, req = m
            if req:
                marks.setdefault((idx, end), t)
            cur = None if end else idx
            if not end:
                parts.setdefault(idx, [])
            continue
        if cur is not None:
            parts[cur].append((rec, frame, t))
    return header, parts, marks


def cut_points_run(run, d, i, marks):
    """A points_* run's other files: eth1's end of the cable (cut at its own sight of the markers) as
    cable-b.pcap, and the hop's drops between the scenario's markers (host times of eth0's end) as drops.pcap."""
    header, parts, _ = cut(os.path.join(run, "cable-b-all.pcap"))
    if header is not None and i in parts:
        write_pcap(os.path.join(d, "cable-b.pcap"), header, [r for r, _, _ in parts[i]])
    drops = os.path.join(run, "drops-all.pcap")
    if os.path.exists(drops) and (i, False) in marks and (i, True) in marks:
        header, frames = read_pcap(drops)
        begin, end = marks[(i, False)], marks[(i, True)]
        write_pcap(os.path.join(d, "drops.pcap"), header, [r for r, _, t in frames if begin < t < end])


def extract_files(log):
    """Splits the files sent back by lab_return out of a scenario's log: (log lines, {name: bytes}, errors)."""
    rest, files, errors = [], {}, []
    cur = None
    for l in log:
        if cur is None:
            if l.startswith("@@@ LAB-FILE "):
                p = l.split()
                if len(p) != 5 or not p[3].isdigit():
                    errors.append(f"bad file header: {l!r}")
                    continue
                cur = (p[2], int(p[3]), p[4], [])
                rest.append(f"{l} (returned to the host)")
            else:
                rest.append(l)
        elif l == f"@@@ LAB-FILE-END {cur[0]}":
            fname, size, md5, body = cur
            cur = None
            try:
                data = gzip.decompress(base64.b64decode("".join(body)))
            except Exception as e:  # noqa: BLE001 - any decoding error is reported the same way
                errors.append(f"file {fname}: cannot decode: {e}")
                continue
            if len(data) != size or hashlib.md5(data).hexdigest() != md5:
                errors.append(f"file {fname}: {len(data)} bytes (md5 {hashlib.md5(data).hexdigest()}), "
                              f"the guest sent {size} (md5 {md5})")
                continue
            if os.sep in fname or fname in ("", ".", "..", "perftest.log", "cable.pcap"):
                errors.append(f"file {fname}: refused name")
                continue
            files[fname] = data
        else:
            cur[3].append(l.strip())
    if cur is not None:
        errors.append(f"file {cur[0]}: no end line (the guest stopped while sending it)")
    return rest, files, errors


def is_roce(frame):
    if len(frame) < 14 + 20 + 8 or frame[12:14] != b"\x08\x00":
        return False
    ip = frame[14:]
    ihl = (ip[0] & 0x0F) * 4
    return ip[9] == 17 and struct.unpack(">H", ip[ihl + 2:ihl + 4])[0] == 4791


if __name__ == "__main__":
    sys.exit(main())
