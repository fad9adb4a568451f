#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Raw frames for the end-to-end attack tests, standard library only.

  frames.py send ATTACK --src4 A --src6 A --dst4 A --dst6 A --gw-mac MAC
      sends the frames of one named attack on eth0 (AF_PACKET, so nothing
      of the sandbox's own stack touches them); every frame of ATTACK
      carries the same IPv4 id / IPv6 fragment id, printed on stdout
  frames.py capture --iface IF --out FILE --ready FILE --seconds S
      writes one line per IPv4/IPv6 frame seen on IF for S seconds:
      "4 SRC DST proto=P id=ID off=OFF mf=M" or
      "6 SRC DST nh=NH frag=ID/OFF/M" (frag=- without a fragment header),
      where OFF is in bytes and ID is hex
"""
import argparse
import os
import random
import socket
import struct
import sys
import time

ETH_P_ALL = 0x0003


def csum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return ~s & 0xFFFF


def ip4(src, dst, proto, payload, ident, off=0, mf=False, tot_len=None):
    """IPv4 header (valid checksum: the pod checks it) + payload."""
    flags = (0x2000 if mf else 0) | (off // 8)
    n = 20 + len(payload) if tot_len is None else tot_len
    h = struct.pack("!BBHHHBBH4s4s", 0x45, 0, n, ident, flags, 64, proto, 0,
                    socket.inet_aton(src), socket.inet_aton(dst))
    h = h[:10] + struct.pack("!H", csum(h)) + h[12:]
    return h + payload


def ip6(src, dst, nh, payload, plen=None):
    n = len(payload) if plen is None else plen
    return struct.pack("!IHBB16s16s", 0x60000000, n, nh, 64,
                       socket.inet_pton(socket.AF_INET6, src),
                       socket.inet_pton(socket.AF_INET6, dst)) + payload


def frag6(nh, off, more, ident):
    return struct.pack("!BBHI", nh, 0, off | (1 if more else 0), ident)


def dest_opts(nh):
    return bytes([nh, 0, 1, 4, 0, 0, 0, 0])  # PadN: 8 bytes in all


def udp(sport, dport, data=b""):
    return struct.pack("!HHHH", sport, dport, 8 + len(data), 0) + data


def tcp_syn(sport, dport):
    return struct.pack("!HHIIBBHHH", sport, dport, 1000, 0, 5 << 4, 0x02, 65535, 0, 0)


UDP, TCP, DEST, FRAG = 17, 6, 60, 44


def attack(name, a, ident):
    """The IP packets (without Ethernet) of one attack."""
    s4, d4, s6, d6 = a.src4, a.dst4, a.src6, a.dst6
    data = b"x" * 32
    if name == "v6-dest-trailer":
        # the red team's: the first fragment ends with a destination
        # options header, the frame goes on with bytes that look like UDP
        # to port 80; the real UDP header (port 22) is in the second one
        first = ip6(s6, d6, FRAG, frag6(DEST, 0, True, ident) + dest_opts(UDP))
        first += udp(40000, 80)  # past payload_len: trailer
        second = ip6(s6, d6, FRAG, frag6(DEST, 8, False, ident) + udp(0x1100, 22, data))
        return [first, second]
    if name == "v6-frag-ok":
        # control: a datagram to port 80 split after its UDP header
        body = udp(40000, 80, data)
        return [ip6(s6, d6, FRAG, frag6(UDP, 0, True, ident) + body[:16]),
                ip6(s6, d6, FRAG, frag6(UDP, 16, False, ident) + body[16:])]
    if name == "v6-tiny-tcp":
        syn = tcp_syn(40000, 80)
        return [ip6(s6, d6, FRAG, frag6(TCP, 0, True, ident) + syn[:8]),
                ip6(s6, d6, FRAG, frag6(TCP, 8, False, ident) + syn[8:])]
    if name == "v6-atomic-22":
        return [ip6(s6, d6, FRAG, frag6(UDP, 0, False, ident) + udp(40000, 22, data))]
    if name == "v6-atomic-80":
        return [ip6(s6, d6, FRAG, frag6(UDP, 0, False, ident) + udp(40000, 80, data))]
    if name == "v6-ext-past-payload":
        # not fragmented: a destination options header ends the payload,
        # the frame goes on with a UDP header to port 80
        return [ip6(s6, d6, DEST, dest_opts(UDP)) + udp(40000, 80, data)]
    if name == "v4-tiny-tcp":
        # 8 bytes of TCP in the first fragment, the frame padded with the
        # rest of a TCP header past tot_len
        syn = tcp_syn(40000, 80)
        first = ip4(s4, d4, TCP, syn[:8], ident, mf=True) + syn[8:]
        return [first, ip4(s4, d4, TCP, syn[8:] + data[:4], ident, off=8)]
    if name == "v4-reused-id":
        # a first fragment to port 80 passes; a second "first fragment"
        # with the same id, to port 22, is dropped; the later fragment must
        # not follow on the first one's record
        return [ip4(s4, d4, UDP, udp(40000, 80, data[:8]), ident, mf=True),
                ip4(s4, d4, UDP, udp(40000, 22, data[:8]), ident, mf=True),
                ip4(s4, d4, UDP, data, ident, off=16)]
    if name == "v4-frag-ok":
        body = udp(40000, 80, data)
        return [ip4(s4, d4, UDP, body[:16], ident, mf=True),
                ip4(s4, d4, UDP, body[16:], ident, off=16)]
    if name == "v4-loopback":
        return [ip4(s4, "127.0.0.1", UDP, udp(40000, 8081, data), ident)]
    if name == "v4-bcast":
        return [ip4(s4, "255.255.255.255", UDP, udp(40000, 8081, data), ident)]
    if name == "v6-loopback":
        return [ip6(s6, "::1", UDP, udp(40000, 8081, data))]
    if name == "v4mapped-dst":
        return [ip6(s6, "::ffff:" + d4, UDP, udp(40000, 80, data))]
    if name == "v4mapped-src":
        return [ip6("::ffff:" + s4, d6, UDP, udp(40000, 80, data))]
    sys.exit("frames.py: unknown attack " + name)


def cmd_send(a):
    ident = random.randrange(0x1000, 0xFFFF)
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind(("eth0", 0))
    me = s.getsockname()[4]
    gw = bytes.fromhex(a.gw_mac.replace(":", ""))
    for pkt in attack(a.attack, a, ident):
        et = 0x0800 if pkt[0] >> 4 == 4 else 0x86DD
        s.send(gw + me + struct.pack("!H", et) + pkt)
        time.sleep(0.01)
    print("%x" % ident)


def describe(frame):
    et = struct.unpack("!H", frame[12:14])[0]
    p = frame[14:]
    if et == 0x0800 and len(p) >= 20:
        ident, flags = struct.unpack("!HH", p[4:8])
        return "4 %s %s proto=%d id=%x off=%d mf=%d" % (
            socket.inet_ntoa(p[12:16]), socket.inet_ntoa(p[16:20]), p[9], ident,
            (flags & 0x1FFF) * 8, (flags >> 13) & 1)
    if et == 0x86DD and len(p) >= 40:
        src = socket.inet_ntop(socket.AF_INET6, p[8:24])
        dst = socket.inet_ntop(socket.AF_INET6, p[24:40])
        nh, off, frag = p[6], 40, "-"
        # walk to a fragment header through the unfragmentable part
        while nh in (0, 43, 60) and len(p) >= off + 2:
            nh, off = p[off], off + (p[off + 1] + 1) * 8
        if nh == FRAG and len(p) >= off + 8:
            fo, ident = struct.unpack("!HI", p[off + 2:off + 8])
            frag = "%x/%d/%d" % (ident, fo & 0xFFF8, fo & 1)
            nh = p[off]
        return "6 %s %s nh=%d frag=%s" % (src, dst, nh, frag)
    return None


def cmd_capture(a):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
    s.bind((a.iface, 0))
    s.settimeout(0.1)
    end = time.time() + a.seconds
    with open(a.out, "w", buffering=1) as out:
        open(a.ready, "w").close()
        while time.time() < end:
            try:
                frame, addr = s.recvfrom(65535)
            except socket.timeout:
                continue
            if addr[2] == socket.PACKET_OUTGOING:
                continue
            line = describe(frame)
            if line:
                out.write(line + "\n")


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    sd = sub.add_parser("send")
    sd.add_argument("attack")
    for opt in ("--src4", "--dst4", "--src6", "--dst6", "--gw-mac"):
        sd.add_argument(opt, required=True)
    cp = sub.add_parser("capture")
    cp.add_argument("--iface", required=True)
    cp.add_argument("--out", required=True)
    cp.add_argument("--ready", required=True)
    cp.add_argument("--seconds", type=float, default=60)
    a = ap.parse_args()
    if a.cmd == "send":
        cmd_send(a)
    else:
        cmd_capture(a)


if __name__ == "__main__":
    main()
