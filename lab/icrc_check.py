#!/usr/bin/env python3
"""Independent ICRC check of every RoCEv2 (UDP destination port 4791) frame in pcap/pcapng files.

usage: icrc_check.py [-v] FILE...

For each RoCEv2 frame the invariant CRC is recomputed as zlib.crc32 over
  8 bytes 0xFF (the masked LRH of the IBA spec),
  the IP header with the variant fields masked to ones
      IPv4: TOS (DSCP+ECN), TTL and header checksum; IPv6: traffic class, flow label and hop limit,
  the UDP header with its checksum set to 0xFFFF,
  the BTH with byte 4 (reserved) set to 0xFF,
  the rest of the UDP payload up to (not including) its last 4 bytes,
and compared with the last 4 bytes of the UDP payload read little-endian.
Prints one summary line per file (and each bad frame); exits 1 if any ICRC is wrong.
Handles Ethernet with 802.1Q/802.1ad tags; frames truncated by the capture are reported as 'truncated'.
"""
import struct
import sys
import zlib


def frames(path):
    """Yield (frame_number, linktype, data, orig_len)."""
    with open(path, "rb") as f:
        buf = f.read()
    magic = buf[:4]
    n = 0
    if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1", b"\xa1\xb2\xc3\xd4", b"\xa1\xb2\x3c\x4d"):
        e = "<" if magic[0] in (0xD4, 0x4D) else ">"
        linktype = struct.unpack(e + "I", buf[20:24])[0] & 0x0FFFFFFF
        off = 24
        while off + 16 <= len(buf):
            _s, _f, incl, orig = struct.unpack(e + "IIII", buf[off:off + 16])
            n += 1
            yield n, linktype, buf[off + 16:off + 16 + incl], orig
            off += 16 + incl
    elif magic == b"\x0a\x0d\x0d\x0a":
        e = "<"
        links = []
        off = 0
        while off + 12 <= len(buf):
            btype = struct.unpack(e + "I", buf[off:off + 4])[0]
            if btype == 0x0A0D0D0A:
                bom = buf[off + 8:off + 12]
                e = "<" if bom == b"\x4d\x3c\x2b\x1a" else ">"
                links = []
            blen = struct.unpack(e + "I", buf[off + 4:off + 8])[0]
            body = buf[off + 8:off + blen - 4]
            if btype == 1:  # interface description
                links.append(struct.unpack(e + "H", body[:2])[0])
            elif btype == 6:  # enhanced packet
                ifid, _th, _tl, cap, orig = struct.unpack(e + "IIIII", body[:20])
                n += 1
                yield n, links[ifid], body[20:20 + cap], orig
            elif btype == 3:  # simple packet
                orig = struct.unpack(e + "I", body[:4])[0]
                n += 1
                yield n, links[0], body[4:4 + orig], orig
            if blen < 12:
                break
            off += blen
    else:
        raise ValueError(f"{path}: not a pcap or pcapng file")


def roce_parts(linktype, data):
    """Return (masked_ip_header, udp_header, udp_payload) of a RoCEv2 frame, else None."""
    if linktype == 1:  # Ethernet
        off = 12
        etype = struct.unpack(">H", data[off:off + 2])[0]
        while etype in (0x8100, 0x88A8, 0x9100) and len(data) >= off + 6:
            off += 4
            etype = struct.unpack(">H", data[off:off + 2])[0]
        off += 2
    elif linktype == 101:  # raw IP
        off = 0
        etype = 0x0800 if data and data[0] >> 4 == 4 else 0x86DD
    elif linktype == 113:  # Linux cooked
        off = 16
        etype = struct.unpack(">H", data[14:16])[0]
    else:
        return None
    if etype == 0x0800 and len(data) >= off + 20:
        ihl = (data[off] & 0x0F) * 4
        ip = bytearray(data[off:off + ihl])
        if ip[9] != 17:
            return None
        ip[1] = 0xFF            # TOS
        ip[8] = 0xFF            # TTL
        ip[10:12] = b"\xff\xff"  # header checksum
        total = struct.unpack(">H", data[off + 2:off + 4])[0]
        end = off + total
        off += ihl
    elif etype == 0x86DD and len(data) >= off + 40:
        ip = bytearray(data[off:off + 40])
        if ip[6] != 17:  # extension headers are not expected on RoCEv2
            return None
        ip[0] |= 0x0F                 # low half of traffic class
        ip[1:4] = b"\xff\xff\xff"     # rest of traffic class + flow label
        ip[7] = 0xFF                  # hop limit
        end = off + 40 + struct.unpack(">H", data[off + 4:off + 6])[0]
        off += 40
    else:
        return None
    if len(data) < off + 8:
        return None
    udp = bytearray(data[off:off + 8])
    if struct.unpack(">H", udp[2:4])[0] != 4791:
        return None
    udp_len = struct.unpack(">H", udp[4:6])[0]
    udp[6:8] = b"\xff\xff"
    payload = data[off + 8:min(end, off + udp_len)]
    return bytes(ip), bytes(udp), payload, off + udp_len <= len(data)


def check(path, verbose=False):
    total = good = bad = trunc = 0
    for n, lt, data, _orig in frames(path):
        parts = roce_parts(lt, data)
        if parts is None:
            continue
        ip, udp, payload, complete = parts
        total += 1
        if not complete or len(payload) < 12 + 4:
            trunc += 1
            print(f"{path}: frame {n}: truncated")
            continue
        bth = bytearray(payload[:12])
        bth[4] = 0xFF
        calc = zlib.crc32(b"\xff" * 8 + ip + udp + bytes(bth) + payload[12:-4]) & 0xFFFFFFFF
        got = struct.unpack("<I", payload[-4:])[0]
        if calc == got:
            good += 1
            if verbose:
                print(f"{path}: frame {n}: ICRC 0x{got:08x} ok")
        else:
            bad += 1
            print(f"{path}: frame {n}: ICRC 0x{got:08x} != computed 0x{calc:08x}")
    print(f"{path}: {total} RoCEv2 frames, {good} ICRC valid, {bad} invalid, {trunc} truncated")
    return bad == 0 and trunc == 0


def main(argv):
    verbose = "-v" in argv
    files = [a for a in argv if a != "-v"]
    if not files:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    ok = all([check(p, verbose) for p in files])
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
