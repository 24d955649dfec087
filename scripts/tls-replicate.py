#!/usr/bin/env python3
"""A large TLS capture for the benchmark: the TLS lab's capture replicated.

    scripts/tls-replicate.py IN.pcap OUT.pcap SIZE_BYTES [SERVER_PORT]

IN is a classic pcap (Ethernet, as `editcap -F pcap` writes from the lab's pcapng).
Each copy gets new client ports (the server port stays) and later times, so every copy
is a connection of its own; the TLS bytes are the same, so the lab's key log decrypts
every copy (kwire and tshark both find keys by the ClientHello random). Standard library
only; TCP checksums are left as they are (neither tool checks them by default).
"""

import struct
import sys


def main():
    src, dst, size = sys.argv[1], sys.argv[2], int(sys.argv[3])
    server = int(sys.argv[4]) if len(sys.argv) > 4 else 9093
    data = open(src, "rb").read()
    magic = data[:4]
    if magic not in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1"):
        sys.exit("not a little-endian pcap")
    nanos = magic == b"\x4d\x3c\xb2\xa1"
    linktype = struct.unpack("<I", data[20:24])[0]
    if linktype != 1:
        sys.exit(f"link type {linktype}, not Ethernet")
    recs, at = [], 24
    while at + 16 <= len(data):
        sec, frac, incl, orig = struct.unpack("<IIII", data[at:at + 16])
        recs.append((sec, frac, orig, data[at + 16:at + 16 + incl]))
        at += 16 + incl
    t0 = recs[0][0]
    span = recs[-1][0] - t0 + 1
    out = open(dst, "wb")
    out.write(data[:24])
    written, copy, next_port = 24, 0, 0
    while written < size:
        ports = {}
        for sec, frac, orig, pkt in recs:
            p = bytearray(pkt)
            if len(p) < 14 + 20 or p[12:14] != b"\x08\x00":
                continue
            ihl = (p[14] & 15) * 4
            t = 14 + ihl
            sport, dport = struct.unpack(">HH", p[t:t + 4])
            client = dport if sport == server else sport
            if client not in ports:
                ports[client] = 1024 + next_port % 64000
                next_port += 1
            new = ports[client]
            if sport == server:
                p[t + 2:t + 4] = struct.pack(">H", new)
            else:
                p[t:t + 2] = struct.pack(">H", new)
            out.write(struct.pack("<IIII", sec + copy * span, frac, len(p), orig))
            out.write(p)
            written += 16 + len(p)
        copy += 1
    out.close()
    print(f"{dst}: {copy} copies, {written} bytes", file=sys.stderr)


if __name__ == "__main__":
    main()
