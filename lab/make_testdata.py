#!/usr/bin/env python3
"""Copy lab captures to testdata/lab/ and write expected.tsv and README.md there.

usage: lab/make_testdata.py [SCENARIO...]
    (default: write send read atomic write_loss write_ecn send_rnr gen_wrong_qpn gen_responder_killed
    gen_no_receive conn_rping conn_write_cm conn_reject conn_write conn_rc_pingpong read_loss_resp read_loss_req
    gen_read_loss atomic_loss write_reorder_req write_reorder_resp read_reorder_resp; --readme: none, only
    expected.tsv and README.md are written again)

Takes lab/out/<scenario>/cable.pcap and perftest.log (from `lab/run ...`) of the scenarios named, as
testdata/lab/<name>.pcap and .log (the gen_* failure scenarios lose their prefix: wrong_qpn.pcap, ...), checks
every ICRC with lab/icrc_check.py (refuses on any failure), then writes expected.tsv and README.md for every
capture of the list above that is in testdata/lab/ (those not named are taken as they are there), with the
expected values from lab/expected.py and, for the failure captures, the facts from lab/failure_facts.py, for the
connection captures (conn_*) those from lab/conn_facts.py, for the retry and reordering captures (RETRIES) those
from lab/retry_facts.py (tshark fields + Python and the scenario's log; rocescope is not involved).
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
import conn_facts  # noqa: E402
import failure_facts  # noqa: E402
import retry_facts  # noqa: E402

DEFAULT = ["write", "send", "read", "atomic", "write_loss", "write_ecn", "send_rnr", "gen_wrong_qpn",
           "gen_responder_killed", "gen_no_receive", "conn_rping", "conn_write_cm", "conn_reject", "conn_write",
           "conn_rc_pingpong", "read_loss_resp", "read_loss_req", "gen_read_loss", "atomic_loss", "write_reorder_req",
           "write_reorder_resp", "read_reorder_resp"]
# the connection captures (issue 12): facts from conn_facts.py
CONNECTIONS = ["conn_rping", "conn_write_cm", "conn_reject", "conn_write", "conn_rc_pingpong"]
# the failure captures: testdata name of the scenario
FAILURES = {"gen_wrong_qpn": "wrong_qpn", "gen_responder_killed": "responder_killed",
            "gen_no_receive": "no_receive"}
# the retry and reordering captures (READs resumed mid-message, atomics resent, reordering on the path): facts from
# retry_facts.py
RETRIES = ["read_loss_resp", "read_loss_req", "gen_read_loss", "atomic_loss", "write_reorder_req",
           "write_reorder_resp", "read_reorder_resp"]


def name_of(scenario):
    return FAILURES.get(scenario, scenario)

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
    "wrong_qpn": "A requester whose destination QPN does not exist (`rocescope gen loopback --fault wrong-qpn`): "
                 "rxe0's QP is connected to rxe1's QPN + 0x100, which no QP has. 8 RDMA WRITEs of 4096 bytes "
                 "(32 packets) go out; rxe1 drops every one without an answer. rxe0's retransmit timer (QP timeout "
                 "14: 4.096 us * 2^14, about 67 ms) expires three times, and each time rxe0 sends all 32 packets "
                 "again from the oldest unacknowledged PSN (--retry-count 3); at the fourth expiry it gives up: the "
                 "first WRITE completes with IBV_WC_RETRY_EXC_ERR, the others are flushed, and the requester is "
                 "silent from then on. Nothing in the capture is an answer.",
    "responder_killed": "A responder process that dies mid-transfer: `rocescope gen server` on rxe1 and `gen "
                        "client` on rxe0 in one guest (their out-of-band TCP exchange over 127.0.0.1, not on the "
                        "cable), 1024-byte WRITEs (one packet each, RC_WRITE_ONLY) paced at 100 messages/s with at "
                        "most 4 in flight, each answered by an ACK; once rxe1 had received at least 40 packets "
                        "the server got `kill -9`, and its QP went with it. rxe0 sent the requests its window "
                        "still allowed, then, on its retransmit timer (QP timeout 17, about 0.54 s), the "
                        "unacknowledged ones again three "
                        "times (--retry-count 3), unanswered; at the fourth expiry it gave up "
                        "(IBV_WC_RETRY_EXC_ERR) and was silent from then on. rxe's timer does not restart with "
                        "every transmission: in the runs here the first resend came 0.14 to 0.56 s after the first "
                        "unanswered request, the later ones about 0.55 s apart (0.54-0.57 s).",
    "no_receive": "A receiver that never posts receives (`rocescope gen loopback --op send --fault no-receive`): "
                  "4 SENDs of 1024 bytes (one packet each) to rxe1's QP, which has no receive work request. The "
                  "first SEND gets an RNR NAK (syndrome 0x2c: RNR, timer code 12 = 0.64 ms, gen's min_rnr_timer); "
                  "the SENDs behind it are out of sequence for the responder, which answers the first of them with "
                  "a PSN sequence error NAK (0x60) carrying the PSN it expects (the RNR-NAK'd one). After the RNR "
                  "timer rxe0 sends from that PSN again; 3 retries (--rnr-retry 3), so 4 RNR NAKs in all, then the "
                  "first SEND completes with IBV_WC_RNR_RETRY_EXC_ERR and the requester is silent. No ACK.",
    "conn_rping": "An RDMA CM connection (`rping`, librdmacm's example; the RDMA CM's TCP port space, port 7174): the "
                  "client (10.0.0.1, rxe0) connects to the server (10.0.0.2, rxe1) with REQ, REP and RTU (CM MADs "
                  "on QP 1: RoCEv2 UD_SEND_ONLY frames to destination QP 1), then 4 pings of 64 bytes: each is the "
                  "client's SEND (its buffer's address and R_Key), the server's RDMA READ of it, the server's SEND, "
                  "the client's SEND, the server's RDMA WRITE and the server's SEND, each request acknowledged; then "
                  "the client disconnects: DREQ and DREP. Both sides are requesters. rxe1's QP numbers were moved on "
                  "before (`qpn_skew`), so that the two ends' QPNs differ.",
    "conn_write_cm": "perftest over RDMA CM (`ib_write_bw -R`): the client makes two RC connections to the server, "
                     "each with REQ, REP and RTU: first perftest's own exchange (its parameters, SENDs both ways, "
                     "and more SENDs after the test), then the test's QP (16 RDMA WRITEs of 4096 bytes, First/Middle/"
                     "Last at path MTU 1024, one ACK per message); at the end both connections are disconnected "
                     "(DREQs from both sides, DREPs). perftest prints the QPNs of the test's QPs, and PSNs that "
                     "those QPs do NOT use: the CM chose the starting PSNs (in the REQ and the REP).",
    "conn_reject": "Two RDMA CM connection attempts to ports nobody listens on: rping's client to port 7999, then "
                   "`ib_write_bw -R`'s to port 18541. Each REQ is answered by a REJ from ib_cm on rxe1: reason 8 "
                   "(invalid service ID: no listener for the REQ's service ID), message rejected 0 (the REQ), "
                   "local communication ID 0 (no connection was made on that side). No REP, no RTU, no data; both "
                   "clients fail (rping exit 255, `cma event RDMA_CM_EVENT_REJECTED, error 8`; perftest exit 1, "
                   "`Unexpected CM event bl blka 8`).",
    "conn_write": "perftest without CM (`ib_write_bw`, its out-of-band exchange over TCP on 127.0.0.1, not on the "
                  "cable), the client run under the project's own live capture (`rocescope capture -i eth0 -q -w "
                  "own.pcapng --json -- ib_write_bw ...`: issue scenario 5): 16 RDMA WRITEs of 4096 bytes, one ACK "
                  "per message, no loss. With no CM on the cable, what perftest printed is the only record of the "
                  "connection: each side's QPN and the PSN its own requests start with (the `local address` line; "
                  "the peer's as `remote address`). rxe1's QP numbers were moved on before (`qpn_skew`).",
    "conn_rc_pingpong": "`ibv_rc_pingpong` (rdma-core's example, out-of-band exchange over TCP on 127.0.0.1): 8 "
                        "round trips of 1024 bytes, a SEND each way per iteration, each acknowledged; QP timeout 14 "
                        "(fixed in the tool). It prints its own QPN and first PSN and the peer's in one line each, "
                        "in its own format (`  local address:  LID 0x0000, QPN 0x000011, PSN 0x2b7c8d, GID "
                        "::ffff:10.0.0.1`). rxe1's QP numbers were moved on before (`qpn_skew`).",
    "read_loss_resp": "RC RDMA READs of 8192 bytes (8 response packets each at path MTU 1024, 4 in flight: `-t 4 -o 4`) "
                      "with netem dropping 4% of eth1's egress (the READ responses, before the cable). rxe's "
                      "requester drops the responses behind a missing one and asks again for the rest of the READ "
                      "from the first response it lacks: a READ request at the first READ's PSN + k, VA + k x 1024, "
                      "DMA length 8192 - k x 1024 (a READ resumed mid-message: a retransmission, not a new request "
                      "on a consumed PSN), then resends the READs behind it whole. It retries when a response of a "
                      "later READ arrives, or on its timer (QP timeout 17, about 0.5 s) when none does.",
    "read_loss_req": "RC RDMA READs of 4096 bytes (4 PSNs each, 4 in flight) with netem dropping 10% (15% in the "
                     "scenario now) of eth0's egress (the READ requests, before the cable): the responder answers the next READ with a NAK "
                     "(PSN sequence error) naming the lost one, or the requester's timer fires; the READs are resent "
                     "whole.",
    "gen_read_loss": "The project's generator (`rocescope gen loopback --op read -s 8192 -n 32 --depth 4`) with netem "
                     "dropping 4% of eth1's egress (the READ responses): resumed READs as in read_loss_resp, from "
                     "another requester (its buffers, VAs and R_Keys).",
    "atomic_loss": "RC FETCH_AND_ADD with netem dropping 5% of each direction (eth0: requests, eth1: ATOMIC "
                   "ACKNOWLEDGEs): a lost request gets the next one NAKed (PSN sequence error) and is resent; a lost "
                   "ATOMIC ACKNOWLEDGE makes the requester resend the atomic with the same PSN and operands (on the "
                   "next atomic's ACK or on its timer), which the responder answers from its cache of atomic "
                   "results without adding again.",
    "write_reorder_req": "RC RDMA WRITE (4096 bytes, 4 packets each, 8 in flight) with netem reordering eth0's egress "
                         "(`delay 1ms reorder 25% 50%`: 75% of the requests delayed by 1 ms, 25% sent at once, ahead "
                         "of them; nothing dropped): the responder takes a request ahead of the one it expects as a "
                         "sequence error (NAK) and the requester goes back to it; the delayed ones arrive after "
                         "higher PSNs (reordered) and the go-back-N resends arrive as duplicates.",
    "write_reorder_resp": "RC RDMA WRITE (1024 bytes, one packet and one ACK each, 16 in flight) with netem "
                          "reordering eth1's egress (the ACKs; `delay 1ms reorder 25% 50%` for this capture, 5 ms in the scenario now; nothing dropped): ACKs "
                          "with a lower PSN and MSN arrive after higher ones (the requester takes them as the "
                          "duplicates they are); no NAK, no retransmission.",
    "read_reorder_resp": "RC RDMA READs of 4096 bytes (4 response packets each, 4 in flight) with netem reordering "
                         "eth1's egress (the READ responses; `delay 1ms reorder 25% 50%`, nothing dropped): rxe's "
                         "requester drops the responses behind one that has not arrived yet and asks for the rest "
                         "of the READ again (resumed READs, as with loss), and the late ones arrive behind higher "
                         "PSNs.",
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
    scen = [] if argv == ["--readme"] else argv or DEFAULT
    unknown = [s for s in scen if s not in DEFAULT]
    if unknown:
        sys.exit(f"make_testdata: not a testdata scenario: {' '.join(unknown)} (known: {' '.join(DEFAULT)})")
    os.makedirs(DEST, exist_ok=True)
    for s in scen:
        src = os.path.join(LAB, "out", s)
        pcap = os.path.join(DEST, f"{name_of(s)}.pcap")
        shutil.copyfile(os.path.join(src, "cable.pcap"), pcap)
        log = open(os.path.join(src, "perftest.log")).read()
        log = log.replace(ROOT + "/", "")                       # repository-relative paths
        log = re.sub(r"/tmp/rocelab\.\w+/", "/tmp/rocelab.XXXXXX/", log)
        with open(os.path.join(DEST, f"{name_of(s)}.log"), "w") as f:
            f.write(log)
    results = []
    for s in DEFAULT:
        name = name_of(s)
        pcap = os.path.join(DEST, f"{name}.pcap")
        if not os.path.exists(pcap):
            continue
        icrc = subprocess.run([sys.executable, os.path.join(LAB, "icrc_check.py"), pcap], capture_output=True,
                              text=True)
        if icrc.returncode != 0:
            sys.exit(f"ICRC check failed for {pcap}:\n{icrc.stdout}")
        r = expected.analyse(pcap)
        r["icrc"] = icrc.stdout.strip().split(": ", 1)[1]
        r["size"] = os.path.getsize(pcap)
        logfile = os.path.join(DEST, f"{name}.log")
        r["log"] = log_info(logfile)
        r["name"] = name
        r["scenario"] = s
        if s in FAILURES:
            r["facts"] = failure_facts.markdown(failure_facts.facts(pcap, open(logfile).read()))
        if s in CONNECTIONS:
            r["conn_facts"] = conn_facts.markdown(conn_facts.facts(pcap, open(logfile).read()))
        if s in RETRIES:
            r["retry_facts"] = retry_facts.markdown(retry_facts.facts(pcap, open(logfile).read()))
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
      "is RoCEv2 but for the end-of-capture ping of the three failure captures (below). The perftest client "
      "(rxe0, 10.0.0.1) is the requester; the server (rxe1, 10.0.0.2) the responder. The out-of-band exchange "
      "of perftest ran over 127.0.0.1 and is not on the cable.\n")
    w("The failure captures (`wrong_qpn`, `responder_killed`, `no_receive`) are the project's generator "
      "(`rocescope gen`, lab scenarios `gen_wrong_qpn`, `gen_responder_killed`, `gen_no_receive`) with retry "
      "counts below 7 (rxe, like the IBTA, retries for ever with 7), so that the requester gives up. After gen "
      "ended, each scenario waited (1 s, 2 s for responder_killed) and sent one ping 10.0.0.1 -> 10.0.0.2 (ICMP "
      "echo, 64 data bytes of 0x5a): its request and reply are the capture's last two frames, so that the "
      "capture shows the requester silent from its last frame until then. Their sections give the facts a "
      "diagnosis must agree with, derived from tshark and the scenario's log by `lab/failure_facts.py`.\n")
    w("The connection captures (`conn_rping`, `conn_write_cm`, `conn_reject`, `conn_write`, `conn_rc_pingpong`, "
      "lab scenarios of the same names) are for a connection table: RDMA CM connections (rping, `ib_write_bw -R`) "
      "with their handshake on the cable (REQ, REP, RTU, DREQ, DREP: MADs to QP 1 in RoCEv2 UD_SEND_ONLY frames), "
      "two connection attempts rejected (REJ), and connections made out of band (perftest without CM under "
      "`rocescope capture`, `ibv_rc_pingpong`), whose only record is what the tools printed. Their sections give "
      "the facts a connection analysis must agree with, derived from tshark and the scenario's log by "
      "`lab/conn_facts.py`: per connection the CM frames, each side's QPN and the starting PSN it announced, the "
      "REQ's path MTU, retry and RNR retry counts and ACK timeout, the QPNs the data went to, the first request "
      "PSN each way against the announced one, and what the tools printed. How to read a starting PSN: Linux's "
      "ib_cm (and so rxe) takes the one a side announces as the PSN its own receive queue expects first, so the "
      "PEER sends with it: the passive side's (server's) first request PSN is the REQ's starting PSN, the active "
      "side's (client's) the REP's. perftest and ibv_rc_pingpong without CM print, as `local address`, the PSN "
      "their own requests start with.\n")
    w("The retry and reordering captures (`read_loss_resp`, `read_loss_req`, `gen_read_loss`, `atomic_loss`, "
      "`write_reorder_req`, `write_reorder_resp`, `read_reorder_resp`, lab scenarios of the same names) are what "
      "a NIC legitimately does under loss and reordering, which an analysis must not call a protocol violation: "
      "READs resumed mid-message after lost or reordered READ responses, atomics resent with the same PSN and "
      "operands, requests and responses (ACKs with their MSNs) reordered on the path. netem on eth0 acts on the "
      "requests, on eth1 on the responses, inside the guest, before the cable: a packet netem drops is on no "
      "capture. Their sections give the facts from tshark and the scenario's log by `lab/retry_facts.py`.\n")
    w(f"Regenerate: `lab/setup && lab/run all && EXTRA_BINARIES=$PWD/target/debug/rocescope lab/run info "
      f"gen_wrong_qpn gen_responder_killed gen_no_receive && EXTRA_BINARIES=$PWD/target/debug/rocescope lab/run "
      f"info {' '.join(CONNECTIONS)} && EXTRA_BINARIES=$PWD/target/debug/rocescope lab/run info "
      f"{' '.join(RETRIES)} && lab/make_testdata.py` (loss, reordering, ECN marks, RNR NAKs and "
      f"the timing of a kill are random, so a new run gives other counts; the values below belong to these "
      f"files; `info` goes first because it takes the IPv6 chatter of link-up; `lab/make_testdata.py SCENARIO...` "
      f"replaces only the captures named). Total size: {total / 1000:.0f} kB.\n")
    w("## Versions\n")
    w("- guest: " + "; ".join(versions))
    conn_versions = next((r["log"][0] for r in results if r["scenario"] in CONNECTIONS), None)
    if conn_versions and conn_versions != versions:
        w("- guest, for the connection captures: " + "; ".join(conn_versions))
    w(f"- host: {qemu_ver}; captures checked with {tshark_ver}")
    w("- every perftest command ran with `-F -x 1 -u 17`: no CPU-frequency check, GID index 1 (the RoCEv2 "
      "IPv4-mapped GID ::ffff:10.0.0.x), QP timeout 17 (4.096 us * 2^17, about 0.5 s; rxe's retransmit timer "
      "fires spuriously on this slow emulated guest with perftest's default 14). Path MTU 1024 (rxe's active MTU "
      "on a 1500-byte link).")
    w("- the failure captures: `rocescope gen` (this repository's, the debug build of its commit) with its "
      "defaults but where the command says otherwise: path MTU 1024, GID index 1 found by itself, QP timeout 17, "
      "min_rnr_timer 12 (0.64 ms), retry count and RNR retry count 7 (for ever) unless given.\n")
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
        w("Made with (guest, in this order; `lab/run " + r["scenario"] + "`):\n")
        w("```")
        for c in cmds:
            if c.startswith("/usr/sbin/tc -s"):
                continue
            if r["scenario"] in CONNECTIONS:
                note = {"server": "    # server (rxe1, 10.0.0.2)", "client": "    # client (rxe0, 10.0.0.1)"}
            else:
                note = {"server": "    # server, responder", "client": "    # client, requester"}
            w(c.replace("server: ", "").replace("client: ", "") + note.get(c.split(":")[0], ""))
        w("```\n")
        syn = ", ".join(f"0x{s:02x}: {c}" for s, c in sorted(r["syndromes"].items())) or "none"
        w(f"- {r['frames']} frames, {r['udp4791']} UDP-4791 (RoCEv2), {r['size']} bytes")
        w(f"- AETH syndromes (all): {syn}" + (" (0x1f = ACK with credit count 31, 'invalid': no end-to-end "
                                             "credits)" if 0x1F in r["syndromes"] else ""))
        naks = ", ".join(f"0x{s:02x}: {c}" for s, c in sorted(
            sum((list(q["naks"].items()) for q in r["qps"].values()), []))) or "none"
        w(f"- NAKs by syndrome: {naks}; CE-marked frames: {r['ce']}; retransmitted requests: {r['retx']}")
        w(f"- ICRC: {r['icrc']}")
        if r.get("facts"):
            w("- per destination QP (as for the other captures; the facts below go further):")
        else:
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
        if local and r["scenario"] not in CONNECTIONS:
            parts = []
            for side, dev in (("client", "rxe0"), ("server", "rxe1")):
                if side in local:
                    parts.append(f"{side} ({dev}) QPN 0x{local[side][0]:04x} initial PSN 0x{local[side][1]:06x}")
            w("- perftest reported: " + "; ".join(parts))
        if r.get("facts"):
            w("")
            w("Facts (tshark fields `frame.number`, `frame.time_relative`, `ip.src`, `ip.dst`, "
              "`infiniband.bth.destqp`, `infiniband.bth.opcode`, `infiniband.bth.psn`, `infiniband.aeth.syndrome`, "
              "`infiniband.aeth.msn`; gen's report, error line and exit status and rxe's hw_counters from the "
              "`.log`; times are `frame.time_relative`, seconds from the capture's first frame):\n")
            w(r["facts"])
        if r.get("conn_facts"):
            w("")
            w("Facts (tshark fields `frame.number`, `frame.time_relative`, `ip.src`, `ip.dst`, "
              "`infiniband.bth.destqp`, `infiniband.bth.opcode`, `infiniband.bth.psn`, `infiniband.mad.attributeid` "
              "and the `infiniband.cm.*` fields of each CM message; the tools' printouts and exit statuses from the "
              "`.log`; times are `frame.time_relative`, seconds from the capture's first frame; \"requests\": every "
              "opcode but the READ responses, ACKNOWLEDGE and ATOMIC ACKNOWLEDGE):\n")
            w(r["conn_facts"])
        if r.get("retry_facts"):
            w("")
            w("Facts (`lab/retry_facts.py`: tshark fields `frame.number`, `ip.src`, `ip.dst`, `udp.length`, "
              "`infiniband.bth.opcode`, `.padcnt`, `.destqp`, `.psn`, `infiniband.reth.va`, `.r_key`, `.dmalen`, "
              "`infiniband.atomiceth.swapdt`, `.cmpdt`, `infiniband.aeth.syndrome`, `.msn`; netem's statistics "
              "and rxe's hw_counters from the `.log`. Out of order: the first copy of a PSN on the cable after a "
              "higher PSN of the same direction, depth = that higher PSN - its PSN; where netem dropped packets "
              "before the cable, the resend of a dropped PSN is its first copy and counts too. Resumed: a READ "
              "request at an earlier READ's PSN + k with VA + k x MTU and DMA length - k x MTU; a whole resend "
              "has an earlier one's PSN, VA and length):\n")
            w(r["retry_facts"])
        w("")
    with open(os.path.join(DEST, "README.md"), "w") as f:
        f.write("\n".join(out))
    print(f"wrote {len(results)} captures ({total} bytes), expected.tsv and README.md to {DEST}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
