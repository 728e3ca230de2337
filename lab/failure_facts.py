#!/usr/bin/env python3
"""The facts of a failure capture (lab scenarios gen_wrong_qpn, gen_responder_killed, gen_no_receive), from
tshark fields and the scenario's log, not from rocescope.

usage: failure_facts.py FILE.pcap [FILE.log]     (prints them; make_testdata.py writes them to README.md)

From `tshark -r FILE -T fields -e frame.number -e frame.time_relative -e frame.time_epoch -e ip.src -e ip.dst
-e udp.dstport -e infiniband.bth.destqp -e infiniband.bth.opcode -e infiniband.bth.psn
-e infiniband.aeth.syndrome -e infiniband.aeth.msn`:

- requests: the frames 10.0.0.1 -> 10.0.0.2 (the requester, rxe0) to UDP 4791; answers: 10.0.0.2 -> 10.0.0.1
  (ACKs: AETH syndrome 0x00-0x1f; RNR NAKs: 0x20-0x3f, the low 5 bits the RNR timer code; NAKs: 0x60-0x7f);
- per PSN, the frames that carried it: the first is its transmission, the others resends;
- the oldest unacknowledged PSN: the first PSN sent after the highest PSN an ACK acknowledged (the first PSN
  sent when nothing was acknowledged); its resends, their times and the intervals between transmissions;
- the resend rounds: each resend of the oldest unacknowledged PSN and the requests that followed it before the
  next one (rxe goes back to that PSN and sends everything after it again);
- the last requester frame, the last answer, and the end of the capture (its last frame: the scenario's
  end-of-capture ping, 10.0.0.1 -> 10.0.0.2 ICMP echo and its reply).

From the log (the scenario's guest output): gen's command, its JSON report (QPNs, first PSN), its error line
and exit status, rxe's hw_counters that changed; for gen_responder_killed the guest uptime of the kill and of
the begin marker (SC_T0), placed in the capture with the host times of the LAB-CABLE line (split_run.py).
"""
import json
import re
import subprocess
import sys

FIELDS = ["frame.number", "frame.time_relative", "frame.time_epoch", "ip.src", "ip.dst", "udp.dstport",
          "infiniband.bth.destqp", "infiniband.bth.opcode", "infiniband.bth.psn", "infiniband.aeth.syndrome",
          "infiniband.aeth.msn", "_ws.col.Protocol"]
REQUESTER, RESPONDER = "10.0.0.1", "10.0.0.2"
PSN_MOD = 1 << 24
# IBTA Table 45 (RNR NAK timer field encodings): milliseconds per code 0..31
RNR_MS = [655.36, 0.01, 0.02, 0.03, 0.04, 0.06, 0.08, 0.12, 0.16, 0.24, 0.32, 0.48, 0.64, 0.96, 1.28, 1.92, 2.56,
          3.84, 5.12, 7.68, 10.24, 15.36, 20.48, 30.72, 40.96, 61.44, 81.92, 122.88, 163.84, 245.76, 327.68,
          491.52]
OPCODES = {4: "RC_SEND_ONLY", 6: "RC_WRITE_FIRST", 7: "RC_WRITE_MIDDLE", 8: "RC_WRITE_LAST", 10: "RC_WRITE_ONLY",
           17: "RC_ACKNOWLEDGE"}


def tshark(path):
    out = subprocess.run(["tshark", "-n", "-r", path, "-T", "fields", "-E", "separator=\t", "-E",
                          "occurrence=f"] + sum((["-e", f] for f in FIELDS), []),
                         check=True, capture_output=True, text=True).stdout
    rows = []
    for line in out.splitlines():
        v = line.split("\t")
        v += [""] * (len(FIELDS) - len(v))
        f = dict(zip(FIELDS, v))
        num = lambda k: int(f[k], 0) if f[k] else None  # noqa: E731
        rows.append({"frame": int(f["frame.number"]), "t": float(f["frame.time_relative"]),
                     "epoch": float(f["frame.time_epoch"]), "src": f["ip.src"], "dst": f["ip.dst"],
                     "roce": f["udp.dstport"] == "4791", "qp": num("infiniband.bth.destqp"),
                     "op": num("infiniband.bth.opcode"), "psn": num("infiniband.bth.psn"),
                     "syn": num("infiniband.aeth.syndrome"), "msn": num("infiniband.aeth.msn"),
                     "proto": f["_ws.col.Protocol"]})
    return rows


def after(a, b):
    """PSN a is after PSN b (serial arithmetic mod 2^24)."""
    return 0 < (a - b) % PSN_MOD < PSN_MOD // 2


def answer_kind(syn):
    if syn is None:
        return "answer without AETH"
    if syn <= 0x1F:
        return "ACK"
    if 0x20 <= syn <= 0x3F:
        return f"RNR NAK (timer code {syn & 0x1F} = {RNR_MS[syn & 0x1F]} ms)"
    if 0x60 <= syn <= 0x7F:
        return {0x60: "NAK (PSN sequence error)", 0x61: "NAK (invalid request)", 0x62: "NAK (remote access error)",
                0x63: "NAK (remote operational error)", 0x64: "NAK (invalid RD request)"}.get(syn, f"NAK {syn:#x}")
    return f"reserved syndrome {syn:#x}"


def log_facts(log):
    """What the scenario's log says: gen's command(s), JSON, error line, exit status, counters, kill time."""
    lines = log.splitlines()
    r = {"commands": [l[2:] for l in lines if l.startswith("+ ")], "counters": {}, "gen": None}
    m = re.search(r"^--- gen (?:client )?standard output\n(\{\n.*?\n\})$", log, re.M | re.S)
    if m:
        r["gen"] = json.loads(m.group(1))
    m = re.search(r"^--- gen (?:client )?standard error\n(.*?)\nexit (\d+)$", log, re.M | re.S)
    if m:
        r["error_lines"] = m.group(1).splitlines()
        r["exit"] = int(m.group(2))
    if "--- rxe hw_counters that changed" in log:
        for l in log.split("--- rxe hw_counters that changed", 1)[1].splitlines()[1:]:
            p = l.split()
            if len(p) == 3 and p[2][0] in "+-":
                r["counters"][f"{p[0]} {p[1]}"] = int(p[2])
    m = re.search(r"@@@ LAB-CABLE begin_marker=(\S+) first_frame=(\S+)", log)
    if m:
        r["begin_marker"], r["first_frame"] = float(m.group(1)), float(m.group(2))
    m = re.search(r"killed the server \(kill -9\) at guest uptime ([\d.]+)\.\.([\d.]+) s, after rxe1 received (\d+) "
                  r"packets; begin marker SC_T0=([\d.]+)", log)
    if m:
        k0, k1, n, t0 = float(m.group(1)), float(m.group(2)), int(m.group(3)), float(m.group(4))
        r["kill"] = {"uptime": (k0, k1), "sc_t0": t0, "rxe1_packets": n}
        if "begin_marker" in r:
            # the guest's uptime from the begin marker on, on the host's clock, relative to the first frame
            off = r["begin_marker"] - r["first_frame"] - t0
            r["kill"]["capture_time"] = (k0 + off, k1 + off)
    m = re.search(r"^the server was reaped at guest uptime ([\d.]+)", log, re.M)
    if m and "kill" in r:
        r["kill"]["reaped"] = float(m.group(1))
        if "capture_time" in r["kill"]:
            r["kill"]["reaped_capture_time"] = float(m.group(1)) + off
    m = re.search(r"^server: exit (\d+)", log, re.M)
    if m:
        r["server_exit"] = int(m.group(1))
    return r


def facts(pcap, log=None):
    rows = tshark(pcap)
    req = [f for f in rows if f["roce"] and f["src"] == REQUESTER]
    ans = [f for f in rows if f["roce"] and f["src"] == RESPONDER]
    other = [f for f in rows if not f["roce"]]
    r = {"frames": len(rows), "requests": req, "answers": ans, "other": other,
         "end": rows[-1] if rows else None, "log": log_facts(log) if log else None}
    r["dest_qps"] = sorted({f["qp"] for f in req})
    r["answer_qps"] = sorted({f["qp"] for f in ans})
    # PSNs in the order first sent, and every frame that carried each
    per_psn = {}
    for f in req:
        per_psn.setdefault(f["psn"], []).append(f)
    r["psns"] = list(per_psn)
    r["per_psn"] = per_psn
    acked = [f["psn"] for f in ans if f["syn"] is not None and f["syn"] <= 0x1F]
    r["acks"] = [f for f in ans if f["syn"] is not None and f["syn"] <= 0x1F]
    r["rnr_naks"] = [f for f in ans if f["syn"] is not None and 0x20 <= f["syn"] <= 0x3F]
    r["naks"] = [f for f in ans if f["syn"] is not None and 0x60 <= f["syn"] <= 0x7F]
    high = None
    for p in acked:
        if high is None or after(p, high):
            high = p
    r["last_acked_psn"] = high
    unacked = [p for p in r["psns"] if high is None or after(p, high)]
    r["unacked_psns"] = unacked
    r["oldest_unacked"] = unacked[0] if unacked else None
    tx = per_psn.get(r["oldest_unacked"], [])
    r["oldest_tx"] = tx
    r["intervals"] = [b["t"] - a["t"] for a, b in zip(tx, tx[1:])]
    # resend rounds: from each transmission of the oldest unacknowledged PSN to the next
    rounds = []
    starts = [f["frame"] for f in tx]
    for i, s in enumerate(starts):
        end = starts[i + 1] if i + 1 < len(starts) else None
        rounds.append([f for f in req if f["frame"] >= s and (end is None or f["frame"] < end)])
    r["rounds"] = rounds
    r["last_request"] = req[-1] if req else None
    r["last_answer"] = ans[-1] if ans else None
    return r


def psn(p):
    return f"{p} ({p:#08x})" if p is not None else "none"


def compress(ns):
    """1, 3, 5, ..., 81 (every 2nd) for an arithmetic run of more than 4, else the list."""
    if len(ns) > 4 and all(b - a == ns[1] - ns[0] for a, b in zip(ns, ns[1:])):
        d = ns[1] - ns[0]
        return f"{ns[0]}, {ns[1]}, ..., {ns[-1]}" + (f" (every {d}nd)" if d == 2 else f" (step {d})")
    return ", ".join(str(n) for n in ns)


def frames_span(fs):
    if not fs:
        return "none"
    if len(fs) == 1:
        return f"frame {fs[0]['frame']}"
    return f"frames {fs[0]['frame']}-{fs[-1]['frame']}"


def markdown(r):
    """A README section's fact list."""
    out = []
    w = out.append
    lg = r["log"] or {}
    g = lg.get("gen") or {}
    req, ans = r["requests"], r["answers"]
    w(f"- {r['frames']} frames: {len(req)} requests 10.0.0.1 -> 10.0.0.2 (UDP 4791), {len(ans)} answers "
      f"10.0.0.2 -> 10.0.0.1, {len(r['other'])} other ("
      + (", ".join(f"frame {f['frame']} {f['proto']} {f['src'] or '?'} -> {f['dst'] or '?'} at {f['t']:.6f} s"
                   for f in r["other"]) or "none") + ")")
    if g:
        rq, rs = g["requester"], g["responder"]
        w(f"- QPNs (gen's report): requester {rq['device']} QP {rq['qpn']:#x} (first PSN {psn(rq['sq_psn'])}), "
          f"responder {rs['device']} QP {rs['qpn']:#x}; the requester's destination QPN "
          f"{g.get('dest_qpn', rs['qpn']):#x}" + (f" ({g['fault_detail']})" if g.get("fault_detail") else ""))
    w(f"- on the wire: requests to destination QP {', '.join(f'{q:#x}' for q in r['dest_qps'])}; answers to "
      + (", ".join(f"{q:#x}" for q in r["answer_qps"]) or "none (no frame from 10.0.0.2)"))
    ps = r["psns"]
    if ps:
        w(f"- PSNs sent: {len(ps)}, {psn(ps[0])} to {psn(ps[-1])}; request frames {len(req)} "
          f"({len(req) - len(ps)} resends); opcodes "
          + ", ".join(f"{OPCODES.get(o, o)}: {n}" for o, n in sorted(
              {o: sum(1 for f in req if f["op"] == o) for o in {f["op"] for f in req}}.items())))
    w(f"- answers: {len(r['acks'])} ACKs, {len(r['rnr_naks'])} RNR NAKs, {len(r['naks'])} NAKs"
      + (f"; the last ACK {frames_span([r['acks'][-1]])} at {r['acks'][-1]['t']:.6f} s acknowledges PSN "
         f"{psn(r['last_acked_psn'])} (MSN {r['acks'][-1]['msn']})" if r["acks"] else "; no ACK"))
    if r["acks"]:
        prev = {}
        last_req = None
        for f in sorted(req + ans, key=lambda f: f["frame"]):
            if f["src"] == REQUESTER:
                last_req = f
            else:
                prev[f["frame"]] = last_req
        same = all(prev[a["frame"]] is not None and prev[a["frame"]]["psn"] == a["psn"] for a in r["acks"])
        acked = [p for p in r["psns"] if not after(p, r["last_acked_psn"])]
        one_each = [a["psn"] for a in r["acks"]] == acked
        w("- ACK frames: " + compress([a["frame"] for a in r["acks"]])
          + (f"; one per request PSN, {psn(acked[0])} to {psn(acked[-1])} in order" if one_each else "")
          + (", each acknowledging the PSN of the request frame just before it" if same else ""))
    if r["rnr_naks"] or r["naks"]:
        w("- NAK frames: " + "; ".join(
            f"frame {f['frame']} at {f['t']:.6f} s PSN {psn(f['psn'])} syndrome {f['syn']:#04x} = "
            f"{answer_kind(f['syn'])}" for f in sorted(r["rnr_naks"] + r["naks"], key=lambda f: f["frame"])))
    u = r["unacked_psns"]
    w(f"- unacknowledged at the end: {len(u)} PSNs" + (f", {psn(u[0])} to {psn(u[-1])}" if u else ""))
    tx = r["oldest_tx"]
    if tx:
        w(f"- the oldest unacknowledged PSN {psn(r['oldest_unacked'])}: first sent in frame {tx[0]['frame']} at "
          f"{tx[0]['t']:.6f} s; resent {len(tx) - 1} times: "
          + ", ".join(f"frame {f['frame']} at {f['t']:.6f} s" for f in tx[1:]))
        w("- intervals between its transmissions: " + ", ".join(f"{d:.6f} s" for d in r["intervals"]))
        rounds = r["rounds"]

        def answered(i):
            """Answers between round i's first frame and the next round's."""
            end = rounds[i + 1][0]["frame"] if i + 1 < len(rounds) else 1 << 60
            return sum(1 for a in ans if rounds[i][0]["frame"] < a["frame"] < end)
        w("- rounds (from each transmission of that PSN to the next): " + "; ".join(
            f"{frames_span(rd)} ({len(rd)} requests, PSN {rd[0]['psn']}..{rd[-1]['psn']}"
            + (f", answered by {answered(i)} frames" if ans else "") + ")" for i, rd in enumerate(rounds)))
    lr, la, end = r["last_request"], r["last_answer"], r["end"]
    w(f"- last requester frame: {lr['frame']} at {lr['t']:.6f} s; last answer: "
      + (f"{la['frame']} at {la['t']:.6f} s" if la else "none")
      + f"; end of the capture: frame {end['frame']} at {end['t']:.6f} s ({end['t'] - lr['t']:.6f} s after the last "
        f"requester frame, with nothing from the requester in between)")
    if lg.get("kill"):
        k = lg["kill"]
        ct = k.get("capture_time")
        w(f"- the kill: `kill -9` of gen server at guest uptime {k['uptime'][0]:.2f}..{k['uptime'][1]:.2f} s "
          f"(the begin marker at {k['sc_t0']:.2f} s), once rxe1 had received {k['rxe1_packets']} packets"
          + (f"; on the capture's clock {ct[0]:.3f}..{ct[1]:.3f} s (the guest's uptime has 10 ms steps and is read "
             f"just after the begin marker's reply, and the QP goes only when the killed process's files are "
             f"closed: ACKs may follow this time by some tens of ms, 32 ms in one run here)" if ct else "")
          + (f"; reaped (its QP gone) at guest uptime {k['reaped']:.2f} s"
             + (f", {k['reaped_capture_time']:.3f} s on the capture's clock" if "reaped_capture_time" in k else "")
             if "reaped" in k else ""))
    if "exit" in lg:
        w(f"- gen: exit {lg['exit']}, standard error: " + " / ".join(f"`{l}`" for l in lg["error_lines"])
          + (f"; gen server: exit {lg['server_exit']} (killed)" if "server_exit" in lg else ""))
    if lg.get("counters"):
        w("- rxe hw_counters that changed over the scenario: "
          + ", ".join(f"{k} {v:+d}" for k, v in sorted(lg["counters"].items())))
    return "\n".join(out)


def main(argv):
    if not argv:
        print(__doc__, file=sys.stderr)
        return 2
    log = open(argv[1]).read() if len(argv) > 1 else None
    print(markdown(facts(argv[0], log)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
