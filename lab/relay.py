#!/usr/bin/env python3
"""The lossy hop of the lab's two-point topology (lab/run points_*): a switch that drops RoCE frames.

usage: relay.py SOCKDIR DROP_FORWARD DROP_REVERSE DROPS_PCAP

eth0's QEMU netdev sends to SOCKDIR/ra.sock and eth1's to SOCKDIR/rb.sock; the relay binds both and forwards
every datagram (one Ethernet frame) from ra.sock to eth1 (SOCKDIR/b.sock) and from rb.sock to eth0
(SOCKDIR/a.sock), in order, except that it drops every DROP_FORWARD-th RoCEv2 frame (UDP destination port
4791) going eth0 -> eth1 and every DROP_REVERSE-th going eth1 -> eth0 (0: none). Each frame it drops is
written to DROPS_PCAP (classic pcap, microseconds, host time) and flushed at once, so the file is what was
lost on this hop, whatever else captured it. Netem cannot stand in for this: Linux taps a frame after the
qdisc on egress and before it on ingress, so a netem drop in the guest is seen by no capture point or by all.
Stops on SIGTERM.
"""
import os
import selectors
import signal
import socket
import struct
import sys
import time


def is_roce(frame):
    if len(frame) < 14 + 20 + 8 or frame[12:14] != b"\x08\x00":
        return False
    ihl = (frame[14] & 0x0F) * 4
    return frame[14 + 9] == 17 and len(frame) >= 14 + ihl + 4 \
        and struct.unpack(">H", frame[14 + ihl + 2:14 + ihl + 4])[0] == 4791


def main():
    sockdir, every_fwd, every_rev, drops_path = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    socks = {}
    for name in ("ra", "rb"):
        path = os.path.join(sockdir, name + ".sock")
        if os.path.exists(path):
            os.remove(path)
        s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        s.bind(path)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
        socks[name] = s
    # (receiving socket, sending socket, destination, drop every n-th RoCE frame)
    routes = {
        "ra": (socks["rb"], os.path.join(sockdir, "b.sock"), every_fwd),
        "rb": (socks["ra"], os.path.join(sockdir, "a.sock"), every_rev),
    }
    roce_seen = {"ra": 0, "rb": 0}
    drops = open(drops_path, "wb")
    drops.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
    drops.flush()
    sel = selectors.DefaultSelector()
    for name, s in socks.items():
        sel.register(s, selectors.EVENT_READ, name)
    while True:
        for key, _ in sel.select():
            name = key.data
            frame = key.fileobj.recv(65536)
            out, dest, every = routes[name]
            if is_roce(frame):
                roce_seen[name] += 1
                if every and roce_seen[name] % every == 0:
                    t = time.time_ns() // 1000
                    drops.write(struct.pack("<IIII", t // 1_000_000, t % 1_000_000, len(frame), len(frame)))
                    drops.write(frame)
                    drops.flush()
                    continue
            try:
                out.sendto(frame, dest)
            except (FileNotFoundError, ConnectionRefusedError):
                pass  # that NIC's QEMU is not up yet (or gone): the frame is lost, as on an unplugged cable


if __name__ == "__main__":
    main()
