#!/usr/bin/env python3
"""Copy lab captures to testdata/lab/ and write expected.tsv and README.md there.

usage: lab/make_testdata.py [SCENARIO...]     (default: write send read atomic write_loss write_ecn send_rnr)

Takes lab/out/<scenario>/cable.pcap and perftest.log (from `lab/run ...`), checks every ICRC with
lab/icrc_check.py (refuses on any failure), and derives the expected values with lab/expected.py (tshark
fields + Python; rocescope is not involved).
"""
import os
import re
import shutil
import subprocess
import sys

LAB = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(LAB)
DEST = os.path.join(ROOT, "testdata", "lab")
sys.path.insert(0, LAB)
import expected  # noqa: E402

DEFAULT = ["write", "send", "read", "atomic", "write_loss", "write_ecn", "send_rnr"]
WHAT = {
    "write": "RC RDMA WRITE, 4096-byte messages (WRITE First/Middle/Last at path MTU 1024), one ACK per "
             "message, no loss: PSNs strictly increasing, no NAK, no retransmission.",
    "send": "RC SEND, 4096-byte messages (SEND First/Middle/Last), one ACK per message, no loss.",
    "read": "RC RDMA READ: one READ request per 4096-byte message (the request PSN advances by 4), "
            "answered by READ response First/Middle/Last (the response's AETH carries the ACK), no loss.",
    "atomic": "RC FETCH_AND_ADD (8 bytes) and its ATOMIC ACKNOWLEDGE, no loss.",
    "write_loss": "RC RDMA WRITE with netem dropping 3% of eth0's egress frames (the requests; dropped "
                  "frames never reach the cable, so the capture shows PSN gaps): the responder answers a gap "
                  "with a NAK (PSN sequence error, syndrome 0x60) and the requester goes back to the NAK'd PSN "
                  "(go-back-N), which shows as PSNs going back.",
    "write_ecn": "RC RDMA WRITE with GRH traffic class 2, which rxe copies into the IP TOS byte: ECN = "
                 "ECT(0) on every frame of both directions; netem (loss 5% ecn) on eth0 marks about 5% of the "
                 "requests CE (ECN = 3) instead of dropping them. rxe (kernel 6.1) sends no CNP and does not "
                 "react to CE, so there is no loss, NAK or retransmission.",
    "send_rnr": "RC SEND (1024 bytes, one packet per message) to a receiver with a tiny receive queue: "
                "`-r 1` was asked for, perftest 4.5 used an RX depth of 2 (its report says so), and reposts "
                "receive WQEs only as it polls completions. SENDs that find no receive WQE get an RNR NAK "
                "(syndrome 0x2c: RNR, timer code 12 = 0.64 ms); the requester waits and resends from that PSN. "
                "The packet in flight behind the RNR-NAK'd one is out of sequence for the responder, which "
                "answers it with a PSN sequence error NAK (0x60) carrying the PSN it expects (the RNR-NAK'd "
                "one). So the capture has both kinds of NAK, and retransmitted SENDs.",
}


def sh(*cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def log_info(path):
    lines = open(path).read().splitlines()
    versions = [l.split(" ", 2)[2] for l in lines if l.startswith("@@@ LAB-VERSION")]
    cmds = [l[2:] for l in lines if l.startswith("+ ")]
    # perftest's own view of the connection: "local address: LID 0000 QPN 0x0011 PSN 0x3d8265 ..."
    side = None
    local = {}
    for l in lines:
        if l.startswith("--- server output"):
            side = "server"
        elif l.startswith("--- client output"):
            side = "client"
        m = re.search(r"local address: LID \S+ QPN (0x[0-9a-f]+) PSN (0x[0-9a-f]+)", l)
        if m and side and side not in local:
            local[side] = (int(m.group(1), 16), int(m.group(2), 16))
    return versions, cmds, local


def main(argv):
    scen = argv or DEFAULT
    os.makedirs(DEST, exist_ok=True)
    results = []
    for s in scen:
        src = os.path.join(LAB, "out", s)
        pcap = os.path.join(DEST, f"{s}.pcap")
        shutil.copyfile(os.path.join(src, "cable.pcap"), pcap)
        log = open(os.path.join(src, "perftest.log")).read()
        log = log.replace(ROOT + "/", "")                       # repository-relative paths
        log = re.sub(r"/tmp/rocelab\.\w+/", "/tmp/rocelab.XXXXXX/", log)
        with open(os.path.join(DEST, f"{s}.log"), "w") as f:
            f.write(log)
        icrc = subprocess.run([sys.executable, os.path.join(LAB, "icrc_check.py"), pcap], capture_output=True,
                              text=True)
        if icrc.returncode != 0:
            sys.exit(f"ICRC check failed for {pcap}:\n{icrc.stdout}")
        r = expected.analyse(pcap)
        r["icrc"] = icrc.stdout.strip().split(": ", 1)[1]
        r["size"] = os.path.getsize(pcap)
        r["log"] = log_info(os.path.join(DEST, f"{s}.log"))
        r["name"] = s
        results.append(r)

    with open(os.path.join(DEST, "expected.tsv"), "w") as f:
        f.write("# file\tframes\tudp4791_frames\topcodes\tnaks\trnr_naks\tce_frames\tretransmitted\n")
        for r in results:
            f.write(expected.tsv_row(r) + "\n")

    versions = results[0]["log"][0]
    tshark_ver = sh("tshark", "--version").splitlines()[0]
    qemu_ver = sh("qemu-system-x86_64", "--version").splitlines()[0]
    total = sum(r["size"] for r in results)
    out = []
    w = out.append
    w("# Soft-RoCE lab captures (real RoCEv2 traffic)\n")
    w("Made by the project's Soft-RoCE lab (`lab/`, see `lab/README.md`): one QEMU guest (TCG) running the Debian "
      "kernel's `rdma_rxe`, with rxe0 on eth0 (10.0.0.1) and rxe1 on eth1 (10.0.0.2), the two NICs cabled to each "
      "other through unix datagram sockets on the host. Each capture is QEMU's `filter-dump` of eth0's end of the "
      "cable (both directions, taken on the host, outside the guest), cut to one scenario: the marker pings the "
      "guest sends before and after each scenario and everything outside them are removed, so every frame here "
      "is RoCEv2. The perftest client (rxe0, 10.0.0.1) is the requester; the server (rxe1, 10.0.0.2) the "
      "responder. The out-of-band exchange of perftest ran over 127.0.0.1 and is not on the cable.\n")
    w(f"Regenerate: `lab/setup && lab/run all && lab/make_testdata.py` (loss, ECN marks and RNR NAKs are "
      f"random, so a new run gives other counts; the values below belong to these files). Total size: "
      f"{total / 1000:.0f} kB.\n")
    w("## Versions\n")
    w("- guest: " + "; ".join(versions))
    w(f"- host: {qemu_ver}; captures checked with {tshark_ver}")
    w("- every perftest command ran with `-F -x 1 -u 17`: no CPU-frequency check, GID index 1 (the RoCEv2 "
      "IPv4-mapped GID ::ffff:10.0.0.x), QP timeout 17 (4.096 us * 2^17, about 0.5 s; rxe's retransmit timer "
      "fires spuriously on this slow emulated guest with perftest's default 14). Path MTU 1024 (rxe's active MTU "
      "on a 1500-byte link).\n")
    w("## How the expected values were derived\n")
    w("From the traffic and tshark, not from rocescope: `lab/expected.py` reads "
      "`tshark -r FILE -T fields -e frame.number -e ip.src -e ip.dst -e udp.dstport -e infiniband.bth.opcode "
      "-e infiniband.bth.destqp -e infiniband.bth.psn -e infiniband.aeth.syndrome -e ip.dsfield.ecn` and counts:\n")
    w("- `frames`: all frames; `udp4791_frames`: frames with UDP destination port 4791;")
    w("- `opcodes`: histogram of `infiniband.bth.opcode` (decimal, `opcode:count`);")
    w("- `naks`: frames whose AETH syndrome is 0x60-0x7f (NAK); `rnr_naks`: syndrome 0x20-0x3f (RNR NAK);")
    w("- `ce_frames`: frames with `ip.dsfield.ecn == 3` (CE);")
    w("- `retransmitted`: request frames (every opcode but READ responses 13-16, ACKNOWLEDGE 17, ATOMIC "
      "ACKNOWLEDGE 18 and CNP 0x81) whose PSN is not greater (serial arithmetic mod 2^24) than the highest PSN "
      "seen before on the same destination (IP, QP).\n")
    w("`lab/icrc_check.py` recomputed the ICRC of every UDP-4791 frame independently (zlib.crc32 over the "
      "masked headers and payload, compared with the trailing 4 bytes read little-endian).\n")
    w("`expected.tsv` has one row per capture with the columns above. The `.log` files are the guest's output "
      "for each scenario (exact commands, perftest's report, netem statistics, rxe's hw_counters that changed): "
      "perftest's \"local address ... QPN ... PSN\" lines are a further independent check of the QPNs and "
      "initial PSNs below.\n")
    w("## Summary\n")
    w("| file | frames | UDP-4791 | opcodes | NAKs (0x60-0x7f) | RNR NAKs | CE | retransmitted | ICRC |")
    w("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in results:
        hist = " ".join(f"{k}:{v}" for k, v in sorted(r["ops"].items()))
        w(f"| {r['name']}.pcap | {r['frames']} | {r['udp4791']} | {hist} | {r['naks']} | {r['rnr_naks']} | "
          f"{r['ce']} | {r['retx']} | all {r['udp4791']} valid |")
    w("")
    for r in results:
        versions_, cmds, local = r["log"]
        w(f"## {r['name']}.pcap\n")
        w(WHAT.get(r["name"], "") + "\n")
        w("Made with (guest, in this order; `lab/run " + r["name"] + "`):\n")
        w("```")
        for c in cmds:
            if c.startswith("/usr/sbin/tc -s"):
                continue
            w(c.replace("server: ", "").replace("client: ", "") + ("    # server, responder" if c.startswith("server") else "    # client, requester" if c.startswith("client") else ""))
        w("```\n")
        syn = ", ".join(f"0x{s:02x}: {c}" for s, c in sorted(r["syndromes"].items()))
        w(f"- {r['frames']} frames, {r['udp4791']} UDP-4791 (RoCEv2), {r['size']} bytes")
        w(f"- AETH syndromes (all): {syn} (0x1f = ACK with credit count 31, 'invalid': no end-to-end credits)")
        naks = ", ".join(f"0x{s:02x}: {c}" for s, c in sorted(
            sum((list(q["naks"].items()) for q in r["qps"].values()), []))) or "none"
        w(f"- NAKs by syndrome: {naks}; CE-marked frames: {r['ce']}; retransmitted requests: {r['retx']}")
        w(f"- ICRC: {r['icrc']}")
        w("- per destination QP:")
        for (dst, qp), q in sorted(r["qps"].items(), key=lambda kv: kv[1]["src"]):
            kind = []
            if q["requests"]:
                kind.append(f"{q['requests']} requests")
            if q["responses"]:
                kind.append(f"{q['responses']} responses")
            w(f"  - {q['src']} -> {dst}, dest QP 0x{qp:06x}: {q['frames']} frames ({', '.join(kind)}), "
              f"first PSN 0x{q['first_psn']:06x} ({q['first_psn']}), last PSN 0x{q['last_psn']:06x} "
              f"({q['last_psn']})")
        if local:
            parts = []
            for side, dev in (("client", "rxe0"), ("server", "rxe1")):
                if side in local:
                    parts.append(f"{side} ({dev}) QPN 0x{local[side][0]:04x} initial PSN 0x{local[side][1]:06x}")
            w("- perftest reported: " + "; ".join(parts))
        w("")
    with open(os.path.join(DEST, "README.md"), "w") as f:
        f.write("\n".join(out))
    print(f"wrote {len(results)} captures ({total} bytes), expected.tsv and README.md to {DEST}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
