#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Traffic helpers for fastwall's end-to-end tests and demo.

  probe.py serve [--http ADDR:PORT]... [--udp ADDR:PORT]... [--dns ADDR:PORT]...
                 [--udp-logged ADDR:PORT=FILE]...
      HTTP servers (one thread each), UDP echo servers (--udp-logged also
      appends each sender "ADDR PORT" to FILE) and a tiny DNS responder
      (answers every query with an empty NOERROR), in one process.
  probe.py udp HOST PORT [--src ADDR] [--timeout S]
      send one datagram, exit 0 when the echo comes back.
  probe.py dns HOST [--timeout S]
      send one DNS query for example.com A, exit 0 when any answer comes back.
  probe.py icmp HOST [--timeout S]
      one ICMP/ICMPv6 echo (raw socket), exit 0 on a reply.
  probe.py udp-loop HOST PORT --interval S --duration S
      datagrams every interval, prints "sent N received M lost L".
IPv6 addresses may be written in brackets: [2001:db8::10]:80.
"""
import argparse
import http.server
import os
import select
import socket
import socketserver
import struct
import sys
import threading
import time


def split_hostport(s):
    if s.startswith("["):
        host, _, port = s[1:].partition("]:")
    else:
        host, _, port = s.rpartition(":")
    return host, int(port)


def family_of(host):
    return socket.AF_INET6 if ":" in host else socket.AF_INET


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = ("hello from %s:%d\n" % self.server.server_address[:2]).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def http_server(addr):
    host, port = split_hostport(addr)

    class Server(http.server.ThreadingHTTPServer):
        address_family = family_of(host)
        allow_reuse_address = True
        daemon_threads = True

        def server_bind(self):
            # HTTPServer.server_bind calls getfqdn(), a reverse DNS lookup
            # that hangs in a namespace without a resolver
            socketserver.TCPServer.server_bind(self)
            self.server_name, self.server_port = host, port

    srv = Server((host, port), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()


def udp_echo(addr, dns=False, log=None):
    host, port = split_hostport(addr)
    s = socket.socket(family_of(host), socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((host, port))

    def loop():
        while True:
            data, peer = s.recvfrom(65535)
            if log:
                with open(log, "a") as f:
                    f.write("%s %d\n" % peer[:2])
            if dns:
                if len(data) < 12:
                    continue
                # same id and question, QR + RA, NOERROR, no answers
                flags = struct.unpack("!H", data[2:4])[0] | 0x8080
                data = data[:2] + struct.pack("!H", flags) + data[4:6] + b"\0" * 6 + data[12:]
            s.sendto(data, peer)

    threading.Thread(target=loop, daemon=True).start()


def cmd_serve(a):
    for h in a.http:
        http_server(h)
    for u in a.udp:
        udp_echo(u)
    for u in a.udp_logged:
        addr, _, log = u.partition("=")
        udp_echo(addr, log=log)
    for d in a.dns:
        udp_echo(d, dns=True)
    if a.ready:
        open(a.ready, "w").close()
    while True:
        time.sleep(3600)


def udp_sock(host, src):
    s = socket.socket(family_of(host), socket.SOCK_DGRAM)
    if src:
        s.bind((src, 0))
    return s


def cmd_udp(a):
    s = udp_sock(a.host, a.src)
    s.settimeout(a.timeout)
    msg = b"fastwall-probe-%d" % os.getpid()
    s.sendto(msg, (a.host, a.port))
    try:
        data, _ = s.recvfrom(65535)
    except (socket.timeout, OSError):
        return 1
    return 0 if data == msg else 1


def cmd_dns(a):
    s = udp_sock(a.host, None)
    s.settimeout(a.timeout)
    q = struct.pack("!HHHHHH", 0x1234, 0x0100, 1, 0, 0, 0)
    q += b"\x07example\x03com\x00" + struct.pack("!HH", 1, 1)
    s.sendto(q, (a.host, 53))
    try:
        data, _ = s.recvfrom(65535)
    except (socket.timeout, OSError):
        return 1
    return 0 if data[:2] == q[:2] else 1


def checksum(b):
    if len(b) % 2:
        b += b"\0"
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    s = (s >> 16) + (s & 0xFFFF)
    s += s >> 16
    return ~s & 0xFFFF


def cmd_icmp(a):
    v6 = ":" in a.host
    if v6:
        s = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_ICMPV6)
        typ, reply = 128, 129
    else:
        s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
        typ, reply = 8, 0
    ident = os.getpid() & 0xFFFF
    payload = b"fastwall"
    hdr = struct.pack("!BBHHH", typ, 0, 0, ident, 1)
    if not v6:  # the kernel computes the ICMPv6 checksum
        hdr = struct.pack("!BBHHH", typ, 0, checksum(hdr + payload), ident, 1)
    s.sendto(hdr + payload, (a.host, 0))
    deadline = time.time() + a.timeout
    while True:
        left = deadline - time.time()
        if left <= 0 or not select.select([s], [], [], left)[0]:
            return 1
        data = s.recv(65535)
        if not v6:
            data = data[(data[0] & 0xF) * 4:]
        if len(data) >= 8:
            t, _, _, i, _ = struct.unpack("!BBHHH", data[:8])
            if t == reply and i == ident:
                return 0


def cmd_udp_loop(a):
    s = udp_sock(a.host, None)
    s.setblocking(False)
    sent = 0
    got = set()
    end = time.time() + a.duration
    nxt = time.time()
    while True:
        now = time.time()
        if now >= end:
            break
        if now >= nxt:
            try:
                s.sendto(struct.pack("!I", sent), (a.host, a.port))
            except OSError:
                pass
            sent += 1
            nxt += a.interval
        r, _, _ = select.select([s], [], [], max(0.0, min(nxt, end) - time.time()))
        if r:
            try:
                while True:
                    data, _ = s.recvfrom(64)
                    if len(data) == 4:
                        got.add(struct.unpack("!I", data)[0])
            except (BlockingIOError, OSError):
                pass
    # late replies
    t = time.time() + 0.5
    while time.time() < t:
        r, _, _ = select.select([s], [], [], 0.1)
        if r:
            data, _ = s.recvfrom(64)
            if len(data) == 4:
                got.add(struct.unpack("!I", data)[0])
    print("sent %d received %d lost %d" % (sent, len(got), sent - len(got)))
    return 0 if len(got) == sent else 1


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    sv = sub.add_parser("serve")
    sv.add_argument("--http", action="append", default=[])
    sv.add_argument("--udp", action="append", default=[])
    sv.add_argument("--dns", action="append", default=[])
    sv.add_argument("--udp-logged", action="append", default=[],
                    help="ADDR:PORT=FILE: UDP echo that appends each sender to FILE")
    sv.add_argument("--ready")
    u = sub.add_parser("udp")
    u.add_argument("host")
    u.add_argument("port", type=int)
    u.add_argument("--src")
    u.add_argument("--timeout", type=float, default=1.0)
    d = sub.add_parser("dns")
    d.add_argument("host")
    d.add_argument("--timeout", type=float, default=1.0)
    i = sub.add_parser("icmp")
    i.add_argument("host")
    i.add_argument("--timeout", type=float, default=1.0)
    lp = sub.add_parser("udp-loop")
    lp.add_argument("host")
    lp.add_argument("port", type=int)
    lp.add_argument("--interval", type=float, default=0.05)
    lp.add_argument("--duration", type=float, default=5.0)
    a = p.parse_args()
    fn = {"serve": cmd_serve, "udp": cmd_udp, "dns": cmd_dns, "icmp": cmd_icmp,
          "udp-loop": cmd_udp_loop}[a.cmd]
    return fn(a)


if __name__ == "__main__":
    sys.exit(main())
