#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Source routes as a sandboxed process sets them, for tests/e2e/source-route.sh.

Each mode prints what happened and exits 0 when that is --want: "ok" when
the datagram was sent, the errno's name when the socket option was refused,
"send-" and the errno's name when sendmsg() failed. HOP is the first hop the route names, DST PORT where the
datagram is addressed (what the socket hooks see):

  sockopt-rthdr HOPS DST PORT  setsockopt(IPV6_RTHDR) with a segment routing
                               header (type 4) through HOPS (comma-separated,
                               the first hop first), then
                               sendto(DST); prints the setsockopt's result,
                               or the sendto's when the option was taken
  sockopt-2292 HOP DST PORT    the same with IPV6_2292RTHDR (type 0)
  sockopt-hopopts              setsockopt(IPV6_HOPOPTS) with a PadN option
  sockopt-ipopts HOP DST PORT  setsockopt(IP_OPTIONS) with a loose source
                               route through HOP, then sendto(DST)
  cmsg-rthdr HOP DST PORT      sendmsg(DST) with an IPV6_RTHDR control message,
                               a type 2 routing header naming HOP: the
                               kernel sends the datagram to HOP, the header
                               names DST
  cmsg-retopts HOP DST PORT    sendmsg(DST) with an IP_RETOPTS control
                               message: a loose source route through HOP
                               (needs CAP_NET_RAW)
  plain DST PORT               sendto(DST), nothing else
"""
import argparse
import errno
import socket
import struct
import sys

IPV6_2292RTHDR = 5
IPV6_HOPOPTS = 54
IPV6_RTHDR = 57
IP_OPTIONS = 4
IP_RETOPTS = 7
PAYLOAD = b"fastwall source-route probe"


def result_of(exc):
    if isinstance(exc, OSError) and exc.errno:
        return errno.errorcode.get(exc.errno, str(exc.errno))
    return type(exc).__name__


def a6(text):
    return socket.inet_pton(socket.AF_INET6, text)


def srh(hops):
    """A type 4 header through HOPS (comma-separated, in the order the
    datagram visits them): the kernel puts the destination in segment 0
    and sends to segment "segments left" first."""
    seg = [a6(h) for h in reversed(hops.split(","))]
    n = len(seg)
    return struct.pack("!BBBBBBH", 0, 2 * (n + 1), 4, n, n, 0, 0) + bytes(16) + b"".join(seg)


def rh0(hop):
    """A type 0 header naming HOP (the kernel refuses it today)."""
    return struct.pack("!BBBBI", 0, 2, 0, 1, 0) + a6(hop)


def rh2(hop):
    """A type 2 header (Mobile IPv6): one address."""
    return struct.pack("!BBBBI", 0, 2, 2, 1, 0) + a6(hop)


def lsrr(hop):
    """A loose source route through HOP: the kernel takes the first
    address as the first hop and puts the destination in the last slot;
    padded with end-of-list to a whole word."""
    return bytes([0x83, 7, 4]) + socket.inet_aton(hop) + b"\0"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode")
    ap.add_argument("args", nargs="*")
    ap.add_argument("--want", required=True)
    a = ap.parse_args()
    m = a.mode
    v6 = m in ("sockopt-rthdr", "sockopt-2292", "sockopt-hopopts", "cmsg-rthdr") or (
        m == "plain" and ":" in a.args[0])
    s = socket.socket(socket.AF_INET6 if v6 else socket.AF_INET, socket.SOCK_DGRAM)
    got = "ok"
    try:
        if m == "sockopt-rthdr":
            s.setsockopt(socket.IPPROTO_IPV6, IPV6_RTHDR, srh(a.args[0]))
        elif m == "sockopt-2292":
            s.setsockopt(socket.IPPROTO_IPV6, IPV6_2292RTHDR, rh0(a.args[0]))
        elif m == "sockopt-hopopts":
            s.setsockopt(socket.IPPROTO_IPV6, IPV6_HOPOPTS,
                         struct.pack("!BBBB", 0, 0, 1, 4) + bytes(4))
        elif m == "sockopt-ipopts":
            s.setsockopt(socket.IPPROTO_IP, IP_OPTIONS, lsrr(a.args[0]))
    except OSError as e:
        got = result_of(e)
    if got == "ok" and m != "sockopt-hopopts":
        dst, port = a.args[-2], int(a.args[-1])
        anc = []
        if m == "cmsg-rthdr":
            anc = [(socket.IPPROTO_IPV6, IPV6_RTHDR, rh2(a.args[0]))]
        elif m == "cmsg-retopts":
            anc = [(socket.IPPROTO_IP, IP_RETOPTS, lsrr(a.args[0]))]
        try:
            s.sendmsg([PAYLOAD], anc, 0, (dst, port))
        except OSError as e:
            got = "send-" + result_of(e)
    print(got)
    sys.exit(0 if got == a.want else 1)


if __name__ == "__main__":
    main()
