#!/usr/bin/env python3
"""Expected values of lab captures, from tshark fields (not from rocescope).

usage: expected.py [--tsv] [--detail] FILE...

--tsv     one row per file: file, frames, udp4791_frames, opcode histogram (opcode:count, decimal,
          ascending), naks (AETH syndrome 0x60-0x7f), rnr_naks (0x20-0x3f), ce_frames (ip.dsfield.ecn == 3),
          retransmitted (request frames whose PSN is not greater than the highest PSN consumed before on the
          same (destination IP, destination QP), serial arithmetic mod 2^24; a READ request consumes
          ceil(DMA length / path MTU) PSNs from its own, the path MTU being the payload of the capture's full-size
          READ responses (First and Middle), so that a READ resumed mid-message counts; one PSN without them)
--detail  per file and per (destination IP, destination QP): frames, request/response frames, first and
          last PSN, NAKs by syndrome, retransmitted requests, PSN steps back
Default: both.
"""
import collections
import os
import subprocess
import sys

FIELDS = ["frame.number", "ip.src", "ip.dst", "udp.dstport", "infiniband.bth.opcode", "infiniband.bth.destqp",
          "infiniband.bth.psn", "infiniband.aeth.syndrome", "ip.dsfield.ecn", "udp.length", "infiniband.bth.padcnt",
          "infiniband.reth.dmalen"]
RESPONSES = {13, 14, 15, 16, 17, 18}   # RDMA READ response first/middle/last/only, ACKNOWLEDGE, ATOMIC ACK
CNP = 0x81
READ_REQUEST, READ_FIRST, READ_MIDDLE = 12, 13, 14


def tshark_rows(path):
    out = subprocess.run(["tshark", "-n", "-r", path, "-T", "fields", "-E", "separator=\t", "-E", "occurrence=f"]
                         + sum((["-e", f] for f in FIELDS), []),
                         check=True, capture_output=True, text=True).stdout
    for line in out.splitlines():
        v = line.split("\t")
        v += [""] * (len(FIELDS) - len(v))
        yield dict(zip(FIELDS, v))


def num(s):
    return int(s, 0) if s else None


def is_request(op):
    return op is not None and op != CNP and (op & 0x1F) not in RESPONSES


def analyse(path):
    r = {"file": os.path.basename(path), "frames": 0, "udp4791": 0, "ops": collections.Counter(), "naks": 0,
         "rnr_naks": 0, "ce": 0, "retx": 0, "syndromes": collections.Counter(), "qps": {}}
    high = {}
    rows = list(tshark_rows(path))
    # the path MTU: the payload of a full-size READ response (UDP length - UDP 8 - BTH 12 - AETH 4 on First -
    # ICRC 4 - pad)
    full = [num(f["udp.length"]) - 8 - 12 - (4 if num(f["infiniband.bth.opcode"]) == READ_FIRST else 0) - 4
            - (num(f["infiniband.bth.padcnt"]) or 0) for f in rows
            if f["udp.dstport"] == "4791" and num(f["infiniband.bth.opcode"]) in (READ_FIRST, READ_MIDDLE)]
    mtu = max(full) if full else None
    for f in rows:
        r["frames"] += 1
        if f["ip.dsfield.ecn"] and int(f["ip.dsfield.ecn"], 0) == 3:
            r["ce"] += 1
        if f["udp.dstport"] != "4791":
            continue
        r["udp4791"] += 1
        op = num(f["infiniband.bth.opcode"])
        if op is None:
            continue
        r["ops"][op] += 1
        key = (f["ip.dst"], num(f["infiniband.bth.destqp"]))
        psn = num(f["infiniband.bth.psn"])
        q = r["qps"].setdefault(key, {"frames": 0, "requests": 0, "responses": 0, "first_psn": psn,
                                      "last_psn": psn, "retx": 0, "naks": collections.Counter(), "src": f["ip.src"]})
        q["frames"] += 1
        q["last_psn"] = psn
        syn = num(f["infiniband.aeth.syndrome"])
        if syn is not None:
            if 0x60 <= syn <= 0x7F:
                r["naks"] += 1
                q["naks"][syn] += 1
            elif 0x20 <= syn <= 0x3F:
                r["rnr_naks"] += 1
                q["naks"][syn] += 1
            r["syndromes"][syn] += 1
        if is_request(op):
            q["requests"] += 1
            h = high.get(key)
            if h is not None and not (0 < (psn - h) % (1 << 24) < (1 << 23)):
                r["retx"] += 1
                q["retx"] += 1
            else:
                span = 1
                if op == READ_REQUEST and mtu and num(f["infiniband.reth.dmalen"]):
                    span = -(-num(f["infiniband.reth.dmalen"]) // mtu)
                high[key] = (psn + span - 1) % (1 << 24)
        else:
            q["responses"] += 1
    return r


def tsv_row(r):
    hist = " ".join(f"{k}:{v}" for k, v in sorted(r["ops"].items()))
    return "\t".join(str(x) for x in (r["file"], r["frames"], r["udp4791"], hist, r["naks"], r["rnr_naks"],
                                       r["ce"], r["retx"]))


def detail(r):
    lines = [f"{r['file']}: {r['frames']} frames, {r['udp4791']} UDP-4791, CE-marked {r['ce']}, "
             f"retransmitted requests {r['retx']}, AETH syndromes "
             + (", ".join(f"0x{s:02x}:{c}" for s, c in sorted(r["syndromes"].items())) or "none")]
    for (dst, qp), q in sorted(r["qps"].items()):
        naks = ", ".join(f"0x{s:02x}:{c}" for s, c in sorted(q["naks"].items())) or "none"
        lines.append(f"  {q['src']} -> {dst} QP 0x{qp:06x}: {q['frames']} frames ({q['requests']} requests, "
                     f"{q['responses']} responses), PSN first {q['first_psn']} (0x{q['first_psn']:06x}) last "
                     f"{q['last_psn']} (0x{q['last_psn']:06x}), NAKs {naks}, retransmitted {q['retx']}")
    return "\n".join(lines)


def main(argv):
    tsv = "--tsv" in argv
    det = "--detail" in argv
    if not tsv and not det:
        tsv = det = True
    files = [a for a in argv if not a.startswith("--")]
    if not files:
        print(__doc__, file=sys.stderr)
        return 2
    rs = [analyse(p) for p in files]
    if tsv:
        print("# file\tframes\tudp4791_frames\topcodes\tnaks\trnr_naks\tce_frames\tretransmitted")
        for r in rs:
            print(tsv_row(r))
    if det:
        for r in rs:
            print(detail(r))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
