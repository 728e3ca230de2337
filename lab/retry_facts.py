#!/usr/bin/env python3
"""The facts of a retry or reordering capture (lab scenarios read_loss_resp, read_loss_req, gen_read_loss,
atomic_loss, write_reorder_req, write_reorder_resp, read_reorder_resp), from tshark fields and the scenario's
log, not from rocescope. Prints them as JSON (--markdown: the fact list make_testdata.py puts in README.md).

usage: retry_facts.py FILE.pcap [FILE.log] [--markdown]

From `tshark -r FILE -T fields -e frame.number -e frame.time_relative -e ip.src -e ip.dst -e ip.id -e udp.dstport
-e udp.length -e infiniband.bth.opcode -e infiniband.bth.padcnt -e infiniband.bth.destqp -e infiniband.bth.psn
-e infiniband.reth.va -e infiniband.reth.r_key -e infiniband.reth.dmalen -e infiniband.atomiceth.swapdt
-e infiniband.atomiceth.cmpdt -e infiniband.aeth.syndrome -e infiniband.aeth.msn` (the AtomicETH's VA and R_Key
are in tshark's `infiniband.reth.va` / `.r_key` fields):

- a direction is the frames of one (source address, destination address, destination QP) with UDP destination
  port 4791; requests are every opcode but the READ responses (13-16), ACKNOWLEDGE (17) and ATOMIC ACKNOWLEDGE
  (18); a direction is a requester's when it carries requests, a responder's when it carries responses;
- `mtu`: the payload of the full-size READ responses (READ_RESPONSE_FIRST and _MIDDLE, which are full-size by
  definition): UDP length - 8 (UDP) - 12 (BTH) - 4 (AETH, FIRST only) - 4 (ICRC) - the BTH pad count;
- a READ request consumes ceil(DMA length / mtu) PSNs (at least 1). Each READ request, in frame order, is
  `resend` when an earlier READ request of the direction had the same PSN, VA and DMA length (a whole resend);
  `resumed` when its PSN is inside an earlier READ's PSNs at PSN + k (0 < k < that READ's PSN count) with VA =
  that READ's VA + k x mtu and DMA length = its length - k x mtu (IBTA 9.7.?: the requester asks again for the
  rest, from the first response it did not get); `overlap` when its PSN is inside an earlier READ's PSNs
  otherwise (a PSN reused: a real violation); `new` otherwise;
- an atomic request (COMPARE_SWAP 19, FETCH_ADD 20) is a `resend` when an earlier one of the direction had the
  same PSN, VA, R_Key, swap/add and compare data, `reuse` when it had the same PSN with other operands, `new`
  otherwise;
- out of order, per direction: a frame whose PSN arrives for the first time (a READ request sees every PSN it
  consumes) after a higher PSN of the direction was seen (serial arithmetic mod 2^24); its depth = the highest
  PSN seen before it - its PSN. netem drops before the capture point, so the resend of a PSN netem dropped is
  its first copy on the cable and counts here too. Which of them were overtaken on the path says the IPv4
  identification: the kernel numbers the packets of a source-destination pair in the order it sends them (rxe's
  IDs go up by one a packet), so a frame whose ip.id is before (serial arithmetic mod 2^16) that of the frame that
  carried the highest PSN was sent before it and arrived after it: `path` true (reordered on the path); false:
  sent after it (a resend, or the sender's own order). `nak_between` (requests): a NAK or RNR NAK naming a PSN not
  after this one was on the cable between that frame and this one, so that this first copy could be taken for a
  go-back-N resend; `go_back` (requests): a NAK naming a PSN not after this one that no request at or before
  its PSN answered yet, or a go-back-N under way that covers this PSN (begun by a request at or before a NAK's
  PSN, after it, and reaching to the highest PSN sent then), so that this first copy could be taken for its
  resend just as well; `resend_between` (responses): a request whose PSNs cover this one was sent again before this
  frame (before or after the highest response: the responder may have answered that resend), so that it could be
  taken for an answer to it; `unambiguous`: `path`, none of those, and within 0.1 s of that frame
  (far below any retransmit timer): a frame any analysis must call reordered;
- `resent_later` (requests): the frames out of order that only a later request tells of: with the frames out of
  order right before them in PSN sequence (a run of first copies held up together), the first later request
  carrying a PSN seen before carries the run's first PSN again (its resend: only that frame tells that the
  first copies had been held up);
- `retransmitted`: request frames whose PSN was seen before in the direction (the PSNs a READ consumed count as
  seen: a resumed READ is one);
- MSN regressions, per direction: a frame with an AETH whose MSN is lower (serial arithmetic) than the highest
  MSN the direction carried before;
- NAKs: AETH syndrome 0x60-0x7f (0x60 PSN sequence error); RNR NAKs 0x20-0x3f.

From the log: the rxe hw_counters that changed over the scenario (`--- rxe hw_counters that changed`), netem's
statistics (`tc -s qdisc show`: packets sent and dropped per device) and the commands.
"""
import json
import re
import subprocess
import sys

FIELDS = ["frame.number", "frame.time_relative", "ip.src", "ip.dst", "ip.id", "udp.dstport", "udp.length",
          "infiniband.bth.opcode", "infiniband.bth.padcnt", "infiniband.bth.destqp", "infiniband.bth.psn",
          "infiniband.reth.va", "infiniband.reth.r_key", "infiniband.reth.dmalen", "infiniband.atomiceth.swapdt",
          "infiniband.atomiceth.cmpdt", "infiniband.aeth.syndrome", "infiniband.aeth.msn"]
PSN_MOD = 1 << 24
READ_REQUEST, READ_FIRST, READ_MIDDLE, READ_LAST, READ_ONLY, ACK, ATOMIC_ACK = 12, 13, 14, 15, 16, 17, 18
ATOMICS = (19, 20)
RESPONSES = (READ_FIRST, READ_MIDDLE, READ_LAST, READ_ONLY, ACK, ATOMIC_ACK)
WITH_AETH = (READ_FIRST, READ_LAST, READ_ONLY, ACK, ATOMIC_ACK)


def num(s):
    return int(s, 0) if s else None


def tshark(path):
    out = subprocess.run(["tshark", "-n", "-r", path, "-T", "fields", "-E", "separator=\t", "-E",
                          "occurrence=f"] + sum((["-e", f] for f in FIELDS), []),
                         check=True, capture_output=True, text=True).stdout
    rows = []
    for line in out.splitlines():
        v = line.split("\t")
        v += [""] * (len(FIELDS) - len(v))
        f = dict(zip(FIELDS, v))
        if f["udp.dstport"] != "4791" or not f["infiniband.bth.opcode"]:
            continue
        rows.append({"frame": int(f["frame.number"]), "t": float(f["frame.time_relative"]), "src": f["ip.src"],
                     "ipid": num(f["ip.id"]),
                     "dst": f["ip.dst"], "udp_len": num(f["udp.length"]), "op": num(f["infiniband.bth.opcode"]),
                     "pad": num(f["infiniband.bth.padcnt"]) or 0, "qp": num(f["infiniband.bth.destqp"]),
                     "psn": num(f["infiniband.bth.psn"]), "va": num(f["infiniband.reth.va"]),
                     "rkey": num(f["infiniband.reth.r_key"]), "len": num(f["infiniband.reth.dmalen"]),
                     "swap": num(f["infiniband.atomiceth.swapdt"]), "cmp": num(f["infiniband.atomiceth.cmpdt"]),
                     "syn": num(f["infiniband.aeth.syndrome"]), "msn": num(f["infiniband.aeth.msn"])})
    return rows


def diff(a, b):
    """a - b in serial arithmetic mod 2^24: in (-2^23, 2^23]."""
    d = (a - b) % PSN_MOD
    return d - PSN_MOD if d > PSN_MOD // 2 else d


def payload(f):
    aeth = 4 if f["op"] in WITH_AETH else 0
    return f["udp_len"] - 8 - 12 - aeth - 4 - f["pad"]


def log_facts(log):
    r = {"commands": [l[2:] for l in log.splitlines() if l.startswith("+ ")], "counters": {}, "netem": []}
    if "--- rxe hw_counters that changed" in log:
        for l in log.split("--- rxe hw_counters that changed", 1)[1].splitlines()[1:]:
            p = l.split()
            if len(p) == 3 and p[0].startswith("rxe") and p[2][:1] in "+-":
                r["counters"][f"{p[0]} {p[1]}"] = int(p[2])
    for m in re.finditer(r"^\+ /usr/sbin/tc -s qdisc show dev (\S+)\nqdisc netem [^\n]*?root refcnt \d+ limit \d+ "
                         r"([^\n]*)\n Sent (\d+) bytes (\d+) pkt \(dropped (\d+)", log, re.M):
        r["netem"].append({"dev": m.group(1), "netem": m.group(2).strip(), "sent": int(m.group(4)),
                           "dropped": int(m.group(5))})
    return r


def is_nak(g):
    """A NAK or an RNR NAK: what asks the requester to resend from its PSN."""
    return g["syn"] is not None and g["op"] == ACK and (0x20 <= g["syn"] <= 0x3F or g["syn"] >= 0x60)


def asked_again(rows, f, src, dst, p):
    """Whether request frame `f` (PSN `p`, from `src` to `dst`) could be a resend someone asked for: a NAK
    naming a PSN not after `p` with no request at or before that PSN since (unanswered), or a go-back-N under
    way that covers `p` (begun by a request at or before a NAK's PSN after it, reaching to the highest PSN sent
    then, and not passed since)."""
    pending, back, high = None, None, None
    for g in rows:
        if g["frame"] >= f["frame"]:
            break
        if (g["src"], g["dst"]) == (dst, src) and is_nak(g):
            pending = g["psn"] if pending is None or diff(g["psn"], pending) < 0 else pending
        elif (g["src"], g["dst"]) == (src, dst) and g["op"] not in RESPONSES:
            q = g["psn"]
            if pending is not None and diff(q, pending) <= 0:
                pending, back = None, (q, high)
            elif back and diff(q, back[1]) > 0:
                back = None
            if high is None or diff(q, high) > 0:
                high = q
    return (pending is not None and diff(p, pending) >= 0) or \
        (back is not None and back[1] is not None and diff(p, back[0]) >= 0 and diff(p, back[1]) <= 0)


def facts(pcap, log=None):
    rows = tshark(pcap)
    full = [payload(f) for f in rows if f["op"] in (READ_FIRST, READ_MIDDLE)]
    mtu = max(full) if full else None
    dirs = {}
    for f in rows:
        dirs.setdefault((f["src"], f["dst"], f["qp"]), []).append(f)
    out = {"capture": pcap, "roce_frames": len(rows), "mtu": mtu, "directions": [], "reads": [], "atomics": [],
           "naks": [], "rnr_naks": []}
    for (src, dst, qp), fs in dirs.items():
        reqs = [f for f in fs if f["op"] not in RESPONSES]
        d = {"src": src, "dst": dst, "dest_qp": qp, "kind": "requests" if reqs else "responses",
             "packets": len(fs), "first_psn": fs[0]["psn"], "out_of_order": [], "msn_regressions": [],
             "retransmitted": []}
        seen, high, high_msn, high_f = set(), None, None, None
        reads, atomics = [], []
        for f in fs:
            p = f["psn"]
            npsn = 1
            if f["op"] == READ_REQUEST:
                npsn = max(1, -(-f["len"] // mtu)) if mtu and f["len"] else 1
                cls, of, k = "new", None, None
                for e in reads:
                    if (e["psn"], e["va"], e["len"]) == (p, f["va"], f["len"]):
                        cls, of = "resend", e["frame"]
                        break
                if cls == "new":
                    for e in reads:
                        kk = diff(p, e["psn"])
                        if 0 < kk < e["npsn"]:
                            if mtu and f["va"] == e["va"] + kk * mtu and f["len"] == e["len"] - kk * mtu:
                                cls, of, k = "resumed", e["frame"], kk
                                break
                            cls, of, k = "overlap", e["frame"], kk
                rd = {"frame": f["frame"], "t": f["t"], "src": src, "dst": dst, "dest_qp": qp, "psn": p,
                      "va": f["va"], "len": f["len"], "npsn": npsn, "class": cls, "of": of, "k": k}
                reads.append(rd)
                out["reads"].append({k_: v for k_, v in rd.items() if k_ != "npsn"} | {"psns": npsn})
            elif f["op"] in ATOMICS:
                ops = (f["va"], f["rkey"], f["swap"], f["cmp"])
                cls, of = "new", None
                for e in atomics:
                    if e["psn"] == p:
                        cls, of = ("resend" if e["ops"] == ops else "reuse"), e["frame"]
                        break
                atomics.append({"psn": p, "ops": ops, "frame": f["frame"]})
                out["atomics"].append({"frame": f["frame"], "t": f["t"], "dest_qp": qp, "psn": p,
                                       "opcode": f["op"], "va": f["va"], "add_or_swap": f["swap"],
                                       "compare": f["cmp"], "class": cls, "of": of})
            if p not in seen and high is not None and diff(high, p) > 0:
                path = f["ipid"] is not None and high_f["ipid"] is not None and \
                    0 < (high_f["ipid"] - f["ipid"]) % 65536 < 32768
                between = [g for g in rows if high_f["frame"] < g["frame"] < f["frame"]
                           and (g["src"], g["dst"]) == (dst, src)]
                nak = any(is_nak(g) and diff(g["psn"], p) <= 0 for g in between) if reqs else False
                go_back = reqs and asked_again(rows, f, src, dst, p)
                resend = False
                if not reqs:
                    asked = 0
                    for g in rows:
                        if g["frame"] >= f["frame"]:
                            break
                        if (g["src"], g["dst"]) != (dst, src) or g["op"] in RESPONSES:
                            continue
                        n = max(1, -(-g["len"] // mtu)) if g["op"] == READ_REQUEST and mtu and g["len"] else 1
                        asked += 0 <= diff(p, g["psn"]) < n
                    resend = asked > 1
                d["out_of_order"].append({"frame": f["frame"], "psn": p, "highest": high, "depth": diff(high, p),
                                          "opcode": f["op"], "highest_frame": high_f["frame"], "path": path,
                                          "nak_between": nak, "go_back": go_back, "resend_between": resend,
                                          "unambiguous": path and not nak and not go_back and not resend
                                          and f["t"] - high_f["t"] < 0.1})
            if f["op"] not in RESPONSES and p in seen:
                d["retransmitted"].append(f["frame"])
            for i in range(npsn):
                seen.add((p + i) % PSN_MOD)
            if high is None or diff(p, high) > 0:
                high, high_f = p, f
            if f["msn"] is not None and f["op"] in WITH_AETH:
                if high_msn is not None and diff(high_msn, f["msn"]) > 0:
                    d["msn_regressions"].append({"frame": f["frame"], "psn": p, "msn": f["msn"],
                                                 "highest_msn": high_msn, "opcode": f["op"]})
                if high_msn is None or diff(f["msn"], high_msn) > 0:
                    high_msn = f["msn"]
            if f["syn"] is not None and f["op"] in (ACK, ATOMIC_ACK):
                kind = None
                if 0x60 <= f["syn"] <= 0x7F:
                    kind = "naks"
                elif 0x20 <= f["syn"] <= 0x3F:
                    kind = "rnr_naks"
                if kind:
                    out[kind].append({"frame": f["frame"], "t": f["t"], "src": src, "dest_qp": qp, "psn": p,
                                      "syndrome": f["syn"]})
        d["depth_max"] = max((o["depth"] for o in d["out_of_order"]), default=0)
        d["on_the_path"] = sum(1 for o in d["out_of_order"] if o["path"])
        # a request out of order that only a later request tells of: the first request after its run (the
        # out-of-order requests right before it in PSN sequence) that carries a PSN seen before carries the
        # run's first PSN
        ooo = {o["frame"]: o for o in d["out_of_order"]}
        again = set(d["retransmitted"])
        at = {r["frame"]: i for i, r in enumerate(reqs)}
        d["resent_later"] = []
        for o in (o for o in d["out_of_order"] if o["frame"] in at):
            i = at[o["frame"]]
            start = i
            while start > 0 and reqs[start - 1]["frame"] in ooo and \
                    reqs[start - 1]["psn"] == (reqs[start]["psn"] - 1) % PSN_MOD:
                start -= 1
            told = next((r for r in reqs[i + 1:] if r["frame"] in again), None)
            if told is not None and told["psn"] == reqs[start]["psn"]:
                d["resent_later"].append(o["frame"])
        d["unambiguous"] = sum(1 for o in d["out_of_order"] if o["unambiguous"])
        d["unambiguous_depth_max"] = max((o["depth"] for o in d["out_of_order"] if o["unambiguous"]), default=0)
        out["directions"].append(d)
    cnt = {}
    for rd in out["reads"]:
        cnt[rd["class"]] = cnt.get(rd["class"], 0) + 1
    out["read_counts"] = {c: cnt.get(c, 0) for c in ("new", "resend", "resumed", "overlap")}
    cnt = {}
    for a in out["atomics"]:
        cnt[a["class"]] = cnt.get(a["class"], 0) + 1
    out["atomic_counts"] = {c: cnt.get(c, 0) for c in ("new", "resend", "reuse")}
    out["log"] = log_facts(log) if log else None
    return out


def markdown(r):
    out = []
    w = out.append
    lg = r["log"] or {}
    w(f"- {r['roce_frames']} RoCE frames; path MTU from the full-size READ responses: "
      + (f"{r['mtu']}" if r["mtu"] else "none (no READ responses)"))
    for n in lg.get("netem", []):
        w(f"- netem on {n['dev']} (`{n['netem']}`): {n['sent']} packets sent, {n['dropped']} dropped")
    for d in r["directions"]:
        ooo = d["out_of_order"]
        w(f"- {d['src']} -> {d['dst']} QP {d['dest_qp']:#x} ({d['kind']}): {d['packets']} frames, first PSN "
          f"{d['first_psn']}; {len(d['retransmitted'])} request frames with a PSN seen before; {len(ooo)} out of "
          f"order (first copy of a PSN behind a higher one; {d['on_the_path']} of them sent before it, by ip.id: "
          f"reordered on the path; {d['unambiguous']} unambiguous)"
          + (f", depth up to {d['depth_max']}: " + ", ".join(
              f"frame {o['frame']} PSN {o['psn']} behind {o['highest']} ({o['depth']})" for o in ooo[:12])
             + (f", ... ({len(ooo) - 12} more)" if len(ooo) > 12 else "") if ooo else "")
          + (f"; {len(d['msn_regressions'])} with an MSN lower than one before: " + ", ".join(
              f"frame {m['frame']} MSN {m['msn']} after {m['highest_msn']}" for m in d["msn_regressions"][:12])
             + (" ..." if len(d["msn_regressions"]) > 12 else "") if d["msn_regressions"] else ""))
    if r["reads"]:
        c = r["read_counts"]
        w(f"- READ requests: {len(r['reads'])}: {c['new']} new, {c['resend']} whole resends, {c['resumed']} "
          f"resumed mid-message, {c['overlap']} overlapping an earlier READ otherwise")
        res = [x for x in r["reads"] if x["class"] == "resumed"]
        if res:
            w("- resumed READs: " + "; ".join(
                f"frame {x['frame']} PSN {x['psn']} = frame {x['of']}'s + {x['k']}, VA {x['va']:#x}, length "
                f"{x['len']}" for x in res))
    if r["atomics"]:
        c = r["atomic_counts"]
        w(f"- atomic requests: {len(r['atomics'])}: {c['new']} new, {c['resend']} resends (same PSN and operands): "
          + (", ".join(f"frame {a['frame']} PSN {a['psn']} (first frame {a['of']})" for a in r["atomics"]
                       if a["class"] == "resend") or "none")
          + (f"; {c['reuse']} with a PSN reused with other operands" if c["reuse"] else ""))
    w(f"- NAKs: {len(r['naks'])}" + (": " + ", ".join(f"frame {n['frame']} PSN {n['psn']} syndrome {n['syndrome']:#04x}"
                                                     for n in r["naks"]) if r["naks"] else "")
      + (f"; RNR NAKs: {len(r['rnr_naks'])}" if r["rnr_naks"] else ""))
    if lg.get("counters"):
        w("- rxe hw_counters that changed over the scenario: "
          + ", ".join(f"{k} {v:+d}" for k, v in sorted(lg["counters"].items())))
    return "\n".join(out)


def main(argv):
    md = "--markdown" in argv
    argv = [a for a in argv if a != "--markdown"]
    if not argv or len(argv) > 2:
        print(__doc__, file=sys.stderr)
        return 2
    log = open(argv[1]).read() if len(argv) > 1 else None
    r = facts(argv[0], log)
    print(markdown(r) if md else json.dumps(r, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
