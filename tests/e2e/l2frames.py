#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Raw Ethernet frames for the link-layer tests (l2-spoof.sh): what a
sandbox with a raw socket can send, and a sniffer for the far side.

  l2frames.py send IFACE [--src-mac M] [--dst-mac M] [--count N]
                         [--interval S] KIND ARGS...
      KIND nd TYPE SRC DST [--target T] [--lladdr MAC] [--override]
                           [--payload TEXT]   ICMPv6 RS/NS/NA (133/135/136),
                                              hop limit 255
           echo6 SRC DST TEXT                 ICMPv6 echo request
           udp4 SRC DST SPORT DPORT TEXT      IPv4 UDP datagram
           arp OP SHA SPA THA TPA             Ethernet/IPv4 ARP
      --src-mac defaults to IFACE's own address, --dst-mac to broadcast
      (multicast for IPv6 multicast destinations).
  l2frames.py sniff IFACE SECONDS --ready FILE [--marker TEXT]
                    [--dst-mac M] [--ipv4-dst A]
      counts the frames IFACE receives that match every filter given and
      prints the count; FILE is created once the socket listens.
Checksums are real, so receivers accept what fastwall lets through.
"""
import argparse
import ipaddress
import select
import socket
import struct
import sys
import time


def mac_bytes(text):
    return bytes.fromhex(text.replace(":", ""))


def csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def ip6(text):
    return ipaddress.IPv6Address(text).packed


def icmp6(src, dst, body):
    """IPv6 header (hop limit 255) + ICMPv6 body with its checksum filled."""
    s, d = ip6(src), ip6(dst)
    pseudo = s + d + struct.pack("!I3xB", len(body), 58)
    c = csum(pseudo + body)
    body = body[:2] + struct.pack("!H", c) + body[4:]
    return struct.pack("!IHBB", 0x60000000, len(body), 58, 255) + s + d + body


def build_nd(a):
    t = int(a.type)
    payload = a.payload.encode() if a.payload else b""
    opt = b""
    if a.lladdr:
        opt = struct.pack("!BB", 2 if t == 136 else 1, 1) + mac_bytes(a.lladdr)
    if t == 133:
        body = struct.pack("!BBHI", t, 0, 0, 0) + opt
    else:
        flags = 0
        if t == 136:
            flags = 0x20000000 if a.override else 0
        target = ip6(a.target or "::")
        body = struct.pack("!BBHI", t, 0, 0, flags) + target + opt
    # anything after the options rides along: the tunnel an attacker wants
    return icmp6(a.src, a.dst, body + payload), a.dst


def build_echo6(a):
    body = struct.pack("!BBHHH", 128, 0, 0, 0x4242, 1) + a.text.encode()
    return icmp6(a.src, a.dst, body), a.dst


def build_udp4(a):
    s, d = socket.inet_aton(a.src), socket.inet_aton(a.dst)
    data = a.text.encode()
    udp = struct.pack("!HHHH", int(a.sport), int(a.dport), 8 + len(data), 0) + data
    c = csum(s + d + struct.pack("!BBH", 0, 17, len(udp)) + udp) or 0xFFFF
    udp = udp[:6] + struct.pack("!H", c) + udp[8:]
    hdr = struct.pack("!BBHHHBBH", 0x45, 0, 20 + len(udp), 1, 0, 64, 17, 0) + s + d
    hdr = hdr[:10] + struct.pack("!H", csum(hdr)) + hdr[12:]
    return hdr + udp


def build_arp(a):
    return struct.pack("!HHBBH", 1, 0x0800, 6, 4, int(a.op)) + mac_bytes(a.sha) + \
        socket.inet_aton(a.spa) + mac_bytes(a.tha) + socket.inet_aton(a.tpa)


def mcast_mac(dst6):
    b = ip6(dst6)
    return b"\x33\x33" + b[12:]


def cmd_send(a):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((a.iface, 0))
    src = mac_bytes(a.src_mac) if a.src_mac else s.getsockname()[4]
    if a.kind in ("nd", "echo6"):
        pkt, dst6 = build_nd(a) if a.kind == "nd" else build_echo6(a)
        ethertype = 0x86DD
        if a.dst_mac:
            dst = mac_bytes(a.dst_mac)
        elif ipaddress.IPv6Address(dst6).is_multicast:
            dst = mcast_mac(dst6)
        else:
            dst = b"\xff" * 6
    elif a.kind == "udp4":
        pkt, ethertype = build_udp4(a), 0x0800
        dst = mac_bytes(a.dst_mac) if a.dst_mac else b"\xff" * 6
    else:
        pkt, ethertype = build_arp(a), 0x0806
        dst = mac_bytes(a.dst_mac) if a.dst_mac else b"\xff" * 6
    frame = dst + src + struct.pack("!H", ethertype) + pkt
    for i in range(a.count):
        s.send(frame)
        if a.interval and i + 1 < a.count:
            time.sleep(a.interval)
    return 0


def cmd_sniff(a):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
    s.bind((a.iface, 0))
    open(a.ready, "w").close()
    want_mac = mac_bytes(a.dst_mac) if a.dst_mac else None
    want_v4 = socket.inet_aton(a.ipv4_dst) if a.ipv4_dst else None
    marker = a.marker.encode() if a.marker else None
    n = 0
    end = time.monotonic() + float(a.seconds)
    while True:
        left = end - time.monotonic()
        if left <= 0:
            break
        r, _, _ = select.select([s], [], [], left)
        if not r:
            continue
        frame, addr = s.recvfrom(65535)
        if addr[2] == socket.PACKET_OUTGOING:
            continue
        if want_mac and frame[0:6] != want_mac:
            continue
        if want_v4 and (frame[12:14] != b"\x08\x00" or frame[30:34] != want_v4):
            continue
        if marker and marker not in frame:
            continue
        n += 1
    print(n)
    return 0


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    snd = sub.add_parser("send")
    snd.add_argument("iface")
    snd.add_argument("--src-mac")
    snd.add_argument("--dst-mac")
    snd.add_argument("--count", type=int, default=1)
    snd.add_argument("--interval", type=float, default=0)
    kinds = snd.add_subparsers(dest="kind", required=True)
    nd = kinds.add_parser("nd")
    for f in ("type", "src", "dst"):
        nd.add_argument(f)
    nd.add_argument("--target")
    nd.add_argument("--lladdr")
    nd.add_argument("--override", action="store_true")
    nd.add_argument("--payload")
    e6 = kinds.add_parser("echo6")
    for f in ("src", "dst", "text"):
        e6.add_argument(f)
    u4 = kinds.add_parser("udp4")
    for f in ("src", "dst", "sport", "dport", "text"):
        u4.add_argument(f)
    arp = kinds.add_parser("arp")
    for f in ("op", "sha", "spa", "tha", "tpa"):
        arp.add_argument(f)
    sn = sub.add_parser("sniff")
    sn.add_argument("iface")
    sn.add_argument("seconds")
    sn.add_argument("--ready", required=True)
    sn.add_argument("--marker")
    sn.add_argument("--dst-mac")
    sn.add_argument("--ipv4-dst")
    a = p.parse_args()
    return cmd_send(a) if a.cmd == "send" else cmd_sniff(a)


if __name__ == "__main__":
    sys.exit(main())
