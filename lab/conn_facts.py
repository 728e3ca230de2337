#!/usr/bin/env python3
"""The facts of a connection capture (lab scenarios conn_rping, conn_write_cm, conn_reject, conn_write,
conn_rc_pingpong), from tshark fields and the scenario's log, not from rocescope.

usage: conn_facts.py FILE.pcap [FILE.log]     (prints them; make_testdata.py writes them to README.md)

From `tshark -r FILE -T fields -e frame.number -e frame.time_relative -e ip.src -e ip.dst -e udp.dstport
-e infiniband.bth.opcode -e infiniband.bth.destqp -e infiniband.bth.psn -e infiniband.aeth.syndrome
-e infiniband.mad.attributeid` and the CM fields (`infiniband.cm.*`: the REQ's local communication ID, service ID,
local QPN, starting PSN, path MTU, retry and RNR retry counts, local ACK timeout, responder resources, initiator
depth, IP CM private data; the REP's local QPN, starting PSN, RNR retry count; the REJ's reason; the DREQ's remote
QPN; each message's local and remote communication IDs):

- the CM messages: the frames to destination QP 1 (RoCEv2 UD SEND ONLY, a MAD of management class 7), by attribute
  ID (0x10 REQ, 0x12 REJ, 0x13 REP, 0x14 RTU, 0x15 DREQ, 0x16 DREP, ...);
- the connections: one per REQ, keyed by the REQ's local communication ID (the active side's); a REP, RTU, REJ,
  DREQ or DREP belongs to the connection whose active or passive communication ID it names;
- per connection, each side's QPN and the starting PSN it announced (REQ: the active side, REP: the passive side);
  Linux's ib_cm (and rxe) take a side's announced starting PSN as the PSN its receive queue expects first, so the
  PEER starts sending with it: the passive side's first request PSN is the REQ's starting PSN, the active side's
  the REP's;
- the data: every other frame (RC), per direction and destination QP; the requests (every opcode but the READ
  responses, ACKNOWLEDGE and ATOMIC ACKNOWLEDGE) with their first PSN; a frame belongs to a connection when it goes
  from one side's address to the other's and to that side's QPN.

From the log: each tool's printout, per side ("--- server output (exit N)" / "--- client output (exit N)"): perftest's
" local address: LID 0000 QPN 0x0011 PSN 0x3d8265[ RKey ... VAddr ...]" and " remote address: ..." lines, each
followed by " GID: 00:...:255:255:10:00:00:01" (the 16 bytes of the GID in decimal), ibv_rc_pingpong's
"  local address:  LID 0x0000, QPN 0x000011, PSN 0x2b7c8d, GID ::ffff:10.0.0.1", rping's "ping data: ..." lines and
error lines, and the exit statuses.
"""
import ipaddress
import re
import subprocess
import sys

FIELDS = ["frame.number", "frame.time_relative", "ip.src", "ip.dst", "udp.dstport", "infiniband.bth.opcode",
          "infiniband.bth.destqp", "infiniband.bth.psn", "infiniband.aeth.syndrome", "infiniband.mad.attributeid",
          # REQ
          "infiniband.cm.req", "infiniband.cm.req.serviceid", "infiniband.cm.req.localqpn",
          "infiniband.cm.req.startpsn", "infiniband.cm.req.pppmtu", "infiniband.cm.req.retrcount",
          "infiniband.cm.req.rnrretrcount", "infiniband.cm.req.prim_localacktout", "infiniband.cm.req.responderres",
          "infiniband.cm.req.initdepth", "infiniband.cm.req.transpsvctype", "infiniband.cm.req.maxcmretr",
          "infiniband.cm.req.remoteresptout", "infiniband.cm.req.localresptout", "infiniband.cm.req.srq",
          "infiniband.cm.req.pkey", "infiniband.cm.req.prim_localgid_ipv4", "infiniband.cm.req.prim_remotegid_ipv4",
          "infiniband.cm.req.ip_cm.sip4", "infiniband.cm.req.ip_cm.dip4", "infiniband.cm.req.ip_cm.sport",
          # REP
          "infiniband.cm.rep", "infiniband.cm.rep.remotecommid", "infiniband.cm.rep.localqpn",
          "infiniband.cm.rep.startpsn", "infiniband.cm.rep.rnrretrcount", "infiniband.cm.rep.respres",
          "infiniband.cm.rep.initdepth", "infiniband.cm.rep.tgtackdelay", "infiniband.cm.rep.srq",
          # RTU, REJ, DREQ, DREP
          "infiniband.cm.rtu.localcommid", "infiniband.cm.rtu.remotecommid",
          "infiniband.cm.rej.localcommid", "infiniband.cm.rej.remotecommid", "infiniband.cm.rej.msgrej",
          "infiniband.cm.rej.reason", "infiniband.cm.rej.rejinfolen",
          "infiniband.cm.dreq.localcommid", "infiniband.cm.dreq.remotecommid", "infiniband.cm.req.remoteqpneecn",
          "infiniband.cm.drsp.localcommid", "infiniband.cm.drsp.remotecommid"]
PSN_MOD = 1 << 24
RESPONSES = {13, 14, 15, 16, 17, 18}   # READ response first/middle/last/only, ACKNOWLEDGE, ATOMIC ACKNOWLEDGE
CM_MSG = {0x10: "REQ", 0x11: "MRA", 0x12: "REJ", 0x13: "REP", 0x14: "RTU", 0x15: "DREQ", 0x16: "DREP",
          0x17: "SIDR_REQ", 0x18: "SIDR_REP", 0x19: "LAP", 0x1A: "APR"}
# IBTA Table 112 (REJ reason codes), the ones Linux's ib_cm sends (include/rdma/ib_cm.h)
REJ_REASON = {1: "no QP", 2: "no EEC", 3: "no resources", 4: "timeout", 5: "unsupported request",
              6: "invalid communication ID", 7: "invalid communication instance", 8: "invalid service ID",
              9: "invalid transport service type", 10: "stale connection", 11: "RDC does not exist",
              12: "invalid primary GID", 13: "invalid primary LID", 14: "invalid primary SL",
              15: "invalid primary traffic class", 16: "invalid primary hop limit",
              17: "invalid primary packet rate", 18: "invalid alternate GID", 19: "invalid alternate LID",
              20: "invalid alternate SL", 21: "invalid alternate traffic class", 22: "invalid alternate hop limit",
              23: "invalid alternate packet rate", 24: "port CM redirect", 25: "port redirect",
              26: "invalid MTU", 27: "insufficient responder resources", 28: "consumer defined",
              29: "invalid RNR retry", 30: "duplicate local communication ID", 31: "invalid class version",
              32: "invalid flow label", 33: "invalid alternate flow label", 35: "vendor option not supported"}
MSG_REJECTED = {0: "REQ", 1: "REP", 2: "other"}
MTU = {1: 256, 2: 512, 3: 1024, 4: 2048, 5: 4096}
OPCODES = {0: "RC_SEND_FIRST", 1: "RC_SEND_MIDDLE", 2: "RC_SEND_LAST", 4: "RC_SEND_ONLY", 6: "RC_WRITE_FIRST",
           7: "RC_WRITE_MIDDLE", 8: "RC_WRITE_LAST", 10: "RC_WRITE_ONLY", 12: "RC_READ_REQUEST",
           13: "RC_READ_RESPONSE_FIRST", 14: "RC_READ_RESPONSE_MIDDLE", 15: "RC_READ_RESPONSE_LAST",
           16: "RC_READ_RESPONSE_ONLY", 17: "RC_ACKNOWLEDGE", 18: "RC_ATOMIC_ACKNOWLEDGE", 100: "UD_SEND_ONLY"}
CLIENT, SERVER = "10.0.0.1", "10.0.0.2"


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
        r = {"frame": int(f["frame.number"]), "t": float(f["frame.time_relative"]), "src": f["ip.src"],
             "dst": f["ip.dst"], "roce": f["udp.dstport"] == "4791", "op": num(f["infiniband.bth.opcode"]),
             "qp": num(f["infiniband.bth.destqp"]), "psn": num(f["infiniband.bth.psn"]),
             "syn": num(f["infiniband.aeth.syndrome"]), "attr": num(f["infiniband.mad.attributeid"]), "cm": {}}
        for k in FIELDS[10:]:
            if f[k]:
                short = k.replace("infiniband.cm.", "")
                r["cm"][short] = f[k] if re.search(r"gid_ipv4$|sip4$|dip4$", k) else int(f[k], 0)
        rows.append(r)
    return rows


def is_request(op):
    return op is not None and (op & 0x1F) not in RESPONSES


def ack_timeout(code):
    return 4.096e-6 * (1 << code)


def log_sides(log):
    """Each tool run's printout: [{"side": "server"|"client", "exit": N, "lines": [...], "local": {...},
    "remote": {...}, "pings": N, "command": "..."}], in the order of the log."""
    runs = []
    cmds = {"server": [], "client": []}
    cur = None
    for line in log.splitlines():
        m = re.match(r"^\+ (server|client): (.*)$", line)
        if m:
            cmds[m.group(1)].append(m.group(2))
            continue
        m = re.match(r"^--- (server|client) output(?: \(exit (\d+)\))?$", line)
        if m:
            side = m.group(1)
            cur = {"side": side, "exit": num(m.group(2)), "lines": [],
                   "command": cmds[side].pop(0) if cmds[side] else None}
            runs.append(cur)
            continue
        if line.startswith("--- ") or line.startswith("@@@ ") or line.startswith("+ "):
            cur = None
            continue
        if cur is not None:
            cur["lines"].append(line)
    for r in runs:
        addr = {}
        last = None
        for line in r["lines"]:
            # perftest: " local address: LID 0000 QPN 0x0011 PSN 0x3d8265 RKey 0x000261 VAddr 0x0055b50d3bf000"
            m = re.match(r"^ (local|remote) address: LID (\S+) QPN (0x[0-9a-f]+) PSN (0x[0-9a-f]+)"
                         r"(?: RKey (0x[0-9a-f]+) VAddr (0x[0-9a-f]+))?\s*$", line)
            if m:
                last = addr[m.group(1)] = {"lid": m.group(2), "qpn": int(m.group(3), 16),
                                           "psn": int(m.group(4), 16), "format": "perftest"}
                if m.group(5):
                    last["rkey"], last["vaddr"] = int(m.group(5), 16), int(m.group(6), 16)
                continue
            # perftest's GID line, the 16 bytes in decimal: " GID: 00:00:...:255:255:10:00:00:02"
            m = re.match(r"^ GID: ((?:\d+:){15}\d+)\s*$", line)
            if m and last is not None and "gid" not in last:
                g = ipaddress.IPv6Address(bytes(int(b) for b in m.group(1).split(":")))
                last["gid"] = f"::ffff:{g.ipv4_mapped}" if g.ipv4_mapped else str(g)
                continue
            # ibv_*_pingpong: "  local address:  LID 0x0000, QPN 0x000011, PSN 0x2b7c8d, GID ::ffff:10.0.0.1"
            m = re.match(r"^\s+(local|remote) address:\s+LID (0x[0-9a-f]+), QPN (0x[0-9a-f]+), PSN (0x[0-9a-f]+)"
                         r"[,:] GID (\S+)\s*$", line)
            if m:
                last = addr[m.group(1)] = {"lid": m.group(2), "qpn": int(m.group(3), 16),
                                           "psn": int(m.group(4), 16), "gid": m.group(5), "format": "pingpong"}
        r["local"], r["remote"] = addr.get("local"), addr.get("remote")
        r["pings"] = sum(1 for line in r["lines"] if re.match(r"^ping data: rdma-ping-\d+: ", line))
    return runs


def facts(pcap, log=None):
    rows = tshark(pcap)
    cm = [f for f in rows if f["roce"] and f["qp"] == 1 and f["attr"] is not None]
    data = [f for f in rows if f["roce"] and f["qp"] != 1]
    r = {"frames": len(rows), "cm": cm, "data": data, "other": [f for f in rows if not f["roce"]],
         "runs": log_sides(log) if log else [], "connections": []}
    by_id = {}
    for f in cm:
        f["msg"] = CM_MSG.get(f["attr"], f"attribute {f['attr']:#x}")
        c = f["cm"]
        if f["msg"] == "REQ":
            conn = {"active": f["src"], "passive": f["dst"], "active_id": c["req"], "passive_id": None,
                    "req": f, "rep": None, "messages": [f], "active_qpn": c["req.localqpn"],
                    "active_psn": c["req.startpsn"], "passive_qpn": None, "passive_psn": None}
            r["connections"].append(conn)
            by_id[c["req"]] = conn
            continue
        ids = {"REP": ("rep.remotecommid", "rep"), "RTU": ("rtu.localcommid", "rtu.remotecommid"),
               "REJ": ("rej.remotecommid", "rej.localcommid"), "DREQ": ("dreq.localcommid", "dreq.remotecommid"),
               "DREP": ("drsp.localcommid", "drsp.remotecommid")}.get(f["msg"], ())
        conn = next((by_id[c[k]] for k in ids if c.get(k) in by_id), None)
        if conn is None:
            r.setdefault("orphans", []).append(f)
            continue
        conn["messages"].append(f)
        if f["msg"] == "REP":
            conn["rep"] = f
            conn["passive_id"] = c["rep"]
            conn["passive_qpn"], conn["passive_psn"] = c["rep.localqpn"], c["rep.startpsn"]
            by_id[c["rep"]] = conn
        elif f["msg"] == "REJ":
            conn["rej"] = f
    # the data of each connection: from one side's address to the other's, to that side's QPN
    claimed = set()
    for conn in r["connections"]:
        conn["dirs"] = []
        if conn["passive_qpn"] is None:
            continue
        for src, dst, qpn, want_psn in ((conn["active"], conn["passive"], conn["passive_qpn"], conn["passive_psn"]),
                                        (conn["passive"], conn["active"], conn["active_qpn"], conn["active_psn"])):
            fs = [f for f in data if f["src"] == src and f["dst"] == dst and f["qp"] == qpn]
            claimed.update(f["frame"] for f in fs)
            req = [f for f in fs if is_request(f["op"])]
            conn["dirs"].append({"src": src, "dst": dst, "qpn": qpn, "frames": fs, "requests": req,
                                 "announced_psn": want_psn})
    r["unclaimed"] = [f for f in data if f["frame"] not in claimed] if r["connections"] else []
    # without CM: the data per direction and destination QP
    dirs = {}
    for f in data:
        d = dirs.setdefault((f["src"], f["dst"], f["qp"]), {"src": f["src"], "dst": f["dst"], "qpn": f["qp"],
                                                            "frames": [], "requests": []})
        d["frames"].append(f)
        if is_request(f["op"]):
            d["requests"].append(f)
    r["data_dirs"] = list(dirs.values())
    return r


def hx(v, w=6):
    return f"{v:#0{w + 2}x}" if v is not None else "none"


def psn(p):
    return f"{p:#08x} ({p})" if p is not None else "none"


def ops(fs):
    c = {}
    for f in fs:
        c[f["op"]] = c.get(f["op"], 0) + 1
    return ", ".join(f"{OPCODES.get(o, o)}: {n}" for o, n in sorted(c.items()))


def side_name(ip):
    return {CLIENT: "client 10.0.0.1 (rxe0)", SERVER: "server 10.0.0.2 (rxe1)"}.get(ip, ip)


def cm_msg_line(f):
    c = f["cm"]
    ids = {"REQ": f"local comm ID {hx(c.get('req'), 8)}",
           "REP": f"local comm ID {hx(c.get('rep'), 8)}, remote {hx(c.get('rep.remotecommid'), 8)}",
           "RTU": f"local comm ID {hx(c.get('rtu.localcommid'), 8)}, remote {hx(c.get('rtu.remotecommid'), 8)}",
           "REJ": f"local comm ID {hx(c.get('rej.localcommid'), 8)}, remote {hx(c.get('rej.remotecommid'), 8)}",
           "DREQ": f"local comm ID {hx(c.get('dreq.localcommid'), 8)}, remote {hx(c.get('dreq.remotecommid'), 8)}, "
                   f"remote QPN {hx(c.get('req.remoteqpneecn'))}",
           "DREP": f"local comm ID {hx(c.get('drsp.localcommid'), 8)}, remote {hx(c.get('drsp.remotecommid'), 8)}"}
    return (f"frame {f['frame']} at {f['t']:.6f} s {f['msg']} {f['src']} -> {f['dst']} (BTH PSN {f['psn']}; "
            f"{ids.get(f['msg'], '')})")


def printed(run):
    parts = []
    for k in ("local", "remote"):
        a = run.get(k)
        if a:
            s = f"{k} QPN {hx(a['qpn'])} PSN {hx(a['psn'])}"
            if "gid" in a:
                s += f" GID {a['gid']}"
            if "rkey" in a:
                s += f" RKey {hx(a['rkey'])}"
            parts.append(s)
    return "; ".join(parts)


def markdown(r):
    out = []
    w = out.append
    w(f"- {r['frames']} frames: {len(r['cm'])} CM MADs (to QP 1: UD_SEND_ONLY, management class 7), "
      f"{len(r['data'])} RC frames, {len(r['other'])} other")
    if r["cm"]:
        w("- CM messages in order: " + "; ".join(cm_msg_line(f) for f in r["cm"]))
    for i, conn in enumerate(r["connections"], 1):
        req = conn["req"]["cm"]
        port = req["req.serviceid"] & 0xFFFF
        w(f"- connection {i} (REQ frame {conn['req']['frame']}; service ID {req['req.serviceid']:#018x}: RDMA CM "
          f"port space {(req['req.serviceid'] >> 16) & 0xFF:#04x} = TCP, port {port}; the active side "
          f"{side_name(conn['active'])}, comm ID {hx(conn['active_id'], 8)}; the passive side "
          f"{side_name(conn['passive'])}, comm ID {hx(conn['passive_id'], 8)}):")
        w("  - messages: " + ", ".join(f"{f['msg']} frame {f['frame']} at {f['t']:.6f} s ({f['src']} -> {f['dst']})"
                                       for f in conn["messages"]))
        w(f"  - REQ: active QPN {hx(conn['active_qpn'])}, starting PSN {psn(conn['active_psn'])}; path MTU code "
          f"{req['req.pppmtu']} = {MTU.get(req['req.pppmtu'], '?')} bytes; retry count {req['req.retrcount']}, RNR "
          f"retry count {req['req.rnrretrcount']}; primary local ACK timeout {req['req.prim_localacktout']} "
          f"(4.096 us * 2^{req['req.prim_localacktout']} = {ack_timeout(req['req.prim_localacktout']):.3f} s); "
          f"responder resources {req['req.responderres']}, initiator depth {req['req.initdepth']}; transport service "
          f"type {req['req.transpsvctype']} (RC), SRQ {req['req.srq']}, P_Key {req['req.pkey']:#06x}; CM response "
          f"timeouts remote {req['req.remoteresptout']}, local {req['req.localresptout']}, max CM retries "
          f"{req['req.maxcmretr']}; primary path GIDs {req.get('req.prim_localgid_ipv4')} -> "
          f"{req.get('req.prim_remotegid_ipv4')}; IP CM private data {req.get('req.ip_cm.sip4')} port "
          f"{req.get('req.ip_cm.sport', 0)} -> {req.get('req.ip_cm.dip4')} port {port}")
        if conn.get("rej"):
            c = conn["rej"]["cm"]
            w(f"  - REJ frame {conn['rej']['frame']} at {conn['rej']['t']:.6f} s ({conn['rej']['t'] - conn['req']['t']:.6f} "
              f"s after the REQ): reason {c['rej.reason']} ({REJ_REASON.get(c['rej.reason'], '?')}), message "
              f"rejected {c['rej.msgrej']} ({MSG_REJECTED.get(c['rej.msgrej'], '?')}), reject info length "
              f"{c.get('rej.rejinfolen', 0)}, local comm ID {hx(c.get('rej.localcommid'), 8)}, remote comm ID "
              f"{hx(c.get('rej.remotecommid'), 8)} (the REQ's); no REP, no RTU, no data")
        if conn["rep"]:
            c = conn["rep"]["cm"]
            w(f"  - REP: passive QPN {hx(conn['passive_qpn'])}, starting PSN {psn(conn['passive_psn'])}; RNR retry "
              f"count {c['rep.rnrretrcount']}; responder resources {c['rep.respres']}, initiator depth "
              f"{c['rep.initdepth']}; target ACK delay {c['rep.tgtackdelay']}; SRQ {c['rep.srq']}")
        for d in conn["dirs"]:
            fs, rq = d["frames"], d["requests"]
            first = rq[0] if rq else None
            who = "REP" if d["src"] == conn["active"] else "REQ"
            w(f"  - data {d['src']} -> {d['dst']}, to QP {hx(d['qpn'])} (the {'passive' if who == 'REP' else 'active'} "
              f"side's, from the {'REP' if who == 'REP' else 'REQ'}): {len(fs)} frames"
              + (f", frames {fs[0]['frame']}-{fs[-1]['frame']} ({fs[0]['t']:.6f}-{fs[-1]['t']:.6f} s)" if fs else "")
              + f"; {len(rq)} requests ({ops(rq) or 'none'})"
              + (f"; the first request frame {first['frame']} PSN {psn(first['psn'])}, "
                 + ("equal to" if first["psn"] == d["announced_psn"] else "NOT equal to")
                 + f" the {who}'s starting PSN {psn(d['announced_psn'])}" if first else ""))
        rtu = next((f for f in conn["messages"] if f["msg"] == "RTU"), None)
        qp_frames = sorted((f for d in conn["dirs"] for f in d["frames"]), key=lambda f: f["frame"])
        if rtu and qp_frames:
            first = qp_frames[0]
            early = [f for f in qp_frames if f["frame"] < rtu["frame"]]
            w(f"  - the first data frame {first['frame']} at {first['t']:.6f} s ({first['src']} -> {first['dst']}) "
              + (f"comes before the RTU (frame {rtu['frame']}): {len(early)} data frame{'s' if len(early) > 1 else ''} before it (the active side "
                 f"may send once it has the REP)" if early else f"follows the RTU (frame {rtu['frame']})"))
        if conn["dirs"]:
            disc = [f for f in conn["messages"] if f["msg"] in ("DREQ", "DREP")]
            if qp_frames and disc:
                last = max(qp_frames, key=lambda f: f["frame"])
                after = [f for f in qp_frames if f["frame"] > disc[0]["frame"]]
                w(f"  - the last data frame of the connection: frame {last['frame']} at {last['t']:.6f} s; the first "
                  f"DREQ frame {disc[0]['frame']} at {disc[0]['t']:.6f} s; data frames after it: {len(after)}")
    if r["connections"]:
        w("- data frames that belong to no connection: "
          + (", ".join(str(f["frame"]) for f in r["unclaimed"]) or "none"))
    if r.get("orphans"):
        w("- CM messages that name no REQ of the capture: " + ", ".join(str(f["frame"]) for f in r["orphans"]))
    if not r["connections"]:
        for d in r["data_dirs"]:
            rq = d["requests"]
            w(f"- data {d['src']} -> {d['dst']}, to QP {hx(d['qpn'])}: {len(d['frames'])} frames, {len(rq)} requests "
              f"({ops(rq) or 'none'})" + (f"; the first request frame {rq[0]['frame']} at {rq[0]['t']:.6f} s PSN "
                                         f"{psn(rq[0]['psn'])}, the last request PSN {psn(rq[-1]['psn'])}"
                                         if rq else ""))
    for run in r["runs"]:
        lines = [l for l in run["lines"] if l.strip()]
        s = f"- {run['side']} `{run['command']}`: exit {run['exit']}"
        if run["local"] or run["remote"]:
            s += f"; printed {printed(run)}"
        if run["pings"]:
            s += f"; {run['pings']} \"ping data\" lines"
        if not (run["local"] or run["remote"] or run["pings"]):
            s += "; printed " + (" / ".join(f"`{l.strip()}`" for l in lines) or "nothing")
        w(s)
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
