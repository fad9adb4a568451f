#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""DNS-then-connect clients and a TCP echo server for tests/e2e/dns.sh.

  dnsclient.py echo-serve PORT --ready FILE
      TCP echo on [::]:PORT and 0.0.0.0:PORT (every local address).
  dnsclient.py race RESOLVER NAME_FMT COUNT PORT [--qtype AAAA]
      COUNT times: resolve NAME_FMT % i over UDP, then connect at once to
      the first address of the answer; prints "ok N fail N slow N" and
      exits 1 on any failure (no answer, refused or dropped connect, or a
      connect that needed a SYN retransmission: slower than 0.5 s).
  dnsclient.py hold RESOLVER NAME PORT SECONDS [--qtype A] [--idle-until FILE]
      resolves once, connects, then sends a byte every 0.25 s and reads
      its echo for SECONDS; exits 1 when an echo does not come back.
      --idle-until: stays silent until FILE exists, then SECONDS more,
      then one echo (an idle connection that must still be alive).
  dnsclient.py synflood RESOLVER NAME PORTS COUNT
      resolves NAME (AAAA), then sends COUNT raw TCP SYNs to it (each one
      twice), source ports 1024-61023 in random order times PORTS
      destination ports (every one a distinct connection; bad checksums,
      so nothing answers).
  dnsclient.py resolve RESOLVER NAME_FMT COUNT
      COUNT queries (A) for NAME_FMT % i, one after the other; prints
      "answered N of COUNT".
  dnsclient.py forge-serve ADDR ANSWER FORGED PORTS_FILE --ready FILE
      an upstream on ADDR:53 (UDP) that answers every A query with ANSWER,
      appends each query's source port to PORTS_FILE, and before each
      answer sends what an attacker who knows the port would: 50 answers
      with wrong ids, then with the right id answers for no question, for
      two questions, for another type, and the right answer from ADDR:5353;
      every forgery carries the address FORGED.
  dnsclient.py cross-serve ADDR ANSWER FORGED PORTS_FILE --ready FILE
      an upstream on ADDR:53 (UDP) for queries that arrive together: it
      takes what arrives within 0.3 s (32 at most), then sends what an
      attacker who saw them all would: each query's id with each other
      query's question, to both their source ports, and each query's
      whole answer to every other query's port; 20 ms later the real
      answers (ANSWER). Each forgery carries the address FORGED.
      PORTS_FILE gets "port id" per query.
  dnsclient.py burst RESOLVER NAME_FMT COUNT ROUNDS FORGED
      ROUNDS times, COUNT queries (A) at once, each from its own socket;
      prints "answered N of M forged K" (K: answers naming FORGED).
  dnsclient.py trickle ADDR PORT COUNT SECONDS
      opens COUNT TCP connections to ADDR:PORT and sends one byte of a
      never-ending DNS frame a second on each; after SECONDS prints
      "opened N closed N" (closed: by the peer, EOF or reset).
"""
import argparse
import os
import random
import socket
import struct
import sys
import threading
import time


def build_query(name, qtype):
    qid = random.randrange(65536)
    hdr = struct.pack("!HHHHHH", qid, 0x0100, 1, 0, 0, 0)
    q = b"".join(bytes([len(p)]) + p.encode() for p in name.rstrip(".").split(".")) + b"\0"
    return qid, hdr + q + struct.pack("!HH", qtype, 1)


def skip_name(msg, off):
    while True:
        n = msg[off]
        if n == 0:
            return off + 1
        if n & 0xC0 == 0xC0:
            return off + 2
        off += 1 + n


def parse_addrs(msg, qid):
    """(rcode, [addresses]) of an answer to qid."""
    rid, flags, qd, an, _, _ = struct.unpack("!HHHHHH", msg[:12])
    if rid != qid:
        raise ValueError("id mismatch")
    off = 12
    for _ in range(qd):
        off = skip_name(msg, off) + 4
    out = []
    for _ in range(an):
        off = skip_name(msg, off)
        rtype, _, _, rdlen = struct.unpack("!HHIH", msg[off:off + 10])
        off += 10
        if rtype == 1 and rdlen == 4:
            out.append(socket.inet_ntop(socket.AF_INET, msg[off:off + 4]))
        elif rtype == 28 and rdlen == 16:
            out.append(socket.inet_ntop(socket.AF_INET6, msg[off:off + 16]))
        off += rdlen
    return flags & 0xF, out


def resolve(resolver, name, qtype, timeout=3.0):
    fam = socket.AF_INET6 if ":" in resolver else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_DGRAM)
    s.settimeout(timeout)
    try:
        qid, q = build_query(name, qtype)
        s.sendto(q, (resolver, 53))
        msg, _ = s.recvfrom(4096)
        return parse_addrs(msg, qid)
    finally:
        s.close()


def connect(addr, port, timeout):
    fam = socket.AF_INET6 if ":" in addr else socket.AF_INET
    c = socket.socket(fam, socket.SOCK_STREAM)
    c.settimeout(timeout)
    c.connect((addr, port))
    return c


QTYPES = {"A": 1, "AAAA": 28}


def cmd_race(a):
    ok = fail = slow = 0
    for i in range(a.count):
        name = a.name_fmt % i
        try:
            rcode, addrs = resolve(a.resolver, name, QTYPES[a.qtype])
            if rcode != 0 or not addrs:
                raise OSError("rcode %d, %d addresses" % (rcode, len(addrs)))
            t0 = time.monotonic()
            c = connect(addrs[0], a.port, 3.0)
            dt = time.monotonic() - t0
            c.close()
            if dt > 0.5:
                slow += 1
                print("slow connect %s -> %s: %.3f s" % (name, addrs[0], dt), file=sys.stderr)
            else:
                ok += 1
        except OSError as e:
            fail += 1
            print("failed %s: %s" % (name, e), file=sys.stderr)
    print("ok %d fail %d slow %d" % (ok, fail, slow))
    return 0 if fail == 0 else 1


def cmd_hold(a):
    rcode, addrs = resolve(a.resolver, a.name, QTYPES[a.qtype])
    if rcode != 0 or not addrs:
        print("resolve failed: rcode %d" % rcode, file=sys.stderr)
        return 1
    c = connect(addrs[0], a.port, 3.0)
    c.settimeout(2.0)
    if a.idle_until:
        t0 = time.monotonic()
        while not os.path.exists(a.idle_until):
            time.sleep(0.1)
        time.sleep(a.seconds)
        idle = time.monotonic() - t0
        try:
            c.sendall(b"x")
            if c.recv(1) != b"x":
                raise OSError("connection closed")
        except OSError as e:
            print("echo after %.1f s idle failed: %s" % (idle, e), file=sys.stderr)
            return 1
        c.close()
        print("held %s:%d idle for %.1f s" % (addrs[0], a.port, idle))
        return 0
    end = time.monotonic() + a.seconds
    n = 0
    try:
        while time.monotonic() < end:
            c.sendall(b"x")
            if c.recv(1) != b"x":
                raise OSError("connection closed")
            n += 1
            time.sleep(0.25)
    except OSError as e:
        print("echo %d failed after %.1f s: %s" % (n, a.seconds - (end - time.monotonic()), e),
              file=sys.stderr)
        return 1
    c.close()
    print("held %s:%d for %.1f s, %d echoes" % (addrs[0], a.port, a.seconds, n))
    return 0


def cmd_synflood(a):
    rcode, addrs = resolve(a.resolver, a.name, QTYPES["AAAA"])
    if rcode != 0 or not addrs:
        print("resolve failed: rcode %d" % rcode, file=sys.stderr)
        return 1
    s = socket.socket(socket.AF_INET6, socket.SOCK_RAW, socket.IPPROTO_TCP)
    dst = (addrs[0], 0)
    sports = list(range(1024, 61024))
    random.shuffle(sports)
    sent = 0
    for dport in range(1, a.ports + 1):
        for sp in sports:
            if sent == a.count:
                break
            # seq, ack 0, offset 5 words, SYN, window, checksum 0 (wrong);
            # twice, as a retransmission would: a record seen again is
            # "recently used" to an LRU, so the flood's records are not
            # the first to go
            syn = struct.pack("!HHIIBBHHH", sp, dport, sent, 0, 0x50, 0x02, 1024, 0, 0)
            s.sendto(syn, dst)
            s.sendto(syn, dst)
            sent += 1
    print("sent %d syns to %s" % (sent, addrs[0]))
    return 0


def echo_conn(c):
    try:
        while True:
            b = c.recv(4096)
            if not b:
                break
            c.sendall(b)
    except OSError:
        pass
    finally:
        c.close()


def cmd_echo_serve(a):
    socks = []
    for fam, host in ((socket.AF_INET6, "::"), (socket.AF_INET, "0.0.0.0")):
        s = socket.socket(fam, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if fam == socket.AF_INET6:
            s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        s.bind((host, a.port))
        s.listen(512)
        socks.append(s)

    def accept_loop(s):
        while True:
            c, _ = s.accept()
            threading.Thread(target=echo_conn, args=(c,), daemon=True).start()

    for s in socks:
        threading.Thread(target=accept_loop, args=(s,), daemon=True).start()
    if a.ready:
        open(a.ready, "w").close()
    while True:
        time.sleep(3600)


def cmd_resolve(a):
    n = 0
    for i in range(a.count):
        try:
            rcode, addrs = resolve(a.resolver, a.name_fmt % i, 1)
            if rcode == 0 and addrs:
                n += 1
        except OSError as e:
            print("failed %s: %s" % (a.name_fmt % i, e), file=sys.stderr)
    print("answered %d of %d" % (n, a.count))
    return 0


def question_of(msg):
    """(id, question bytes, qtype) of a query."""
    off = skip_name(msg, 12)
    return struct.unpack("!H", msg[:2])[0], msg[12:off + 4], struct.unpack("!H", msg[off:off + 2])[0]


def cmd_forge_serve(a):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((a.addr, 53))
    other = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    other.bind((a.addr, 5353))
    ports = open(a.ports_file, "a", buffering=1)
    if a.ready:
        open(a.ready, "w").close()
    while True:
        msg, peer = s.recvfrom(4096)
        try:
            qid, question, qtype = question_of(msg)
        except (IndexError, struct.error):
            continue
        ports.write("%d\n" % peer[1])
        name_wire = question[:-4]
        rr = lambda addr: struct.pack("!HHIH", 1, 1, 60, 4) + socket.inet_aton(addr)
        hdr = lambda i, qd: struct.pack("!HHHHHH", i, 0x8180, qd, 1, 0, 0)
        forged = []
        for _ in range(50):
            forged.append(hdr((qid + random.randrange(1, 65536)) & 0xFFFF, 1) + question +
                          b"\xc0\x0c" + rr(a.forged))
        # the right id: no question (the owner spelled out), two questions,
        # another type
        forged.append(hdr(qid, 0) + name_wire + rr(a.forged))
        forged.append(hdr(qid, 2) + question + b"\x06forged\x04test\x00\x00\x01\x00\x01" +
                      b"\xc0\x0c" + rr(a.forged))
        forged.append(hdr(qid, 1) + name_wire + struct.pack("!HH", 28 if qtype == 1 else 1, 1) +
                      b"\xc0\x0c" + rr(a.forged))
        for f in forged:
            s.sendto(f, peer)
        # everything right, from another port of the same address
        other.sendto(hdr(qid, 1) + question + b"\xc0\x0c" + rr(a.forged), peer)
        time.sleep(0.02)
        s.sendto(hdr(qid, 1) + question + b"\xc0\x0c" + rr(a.answer), peer)


def cmd_cross_serve(a):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind((a.addr, 53))
    ports = open(a.ports_file, "a", buffering=1)
    rr = lambda addr: struct.pack("!HHIH", 1, 1, 60, 4) + socket.inet_aton(addr)
    hdr = lambda i: struct.pack("!HHHHHH", i, 0x8180, 1, 1, 0, 0)
    if a.ready:
        open(a.ready, "w").close()
    while True:
        s.settimeout(None)
        got = [s.recvfrom(4096)]
        s.settimeout(0.3)
        while len(got) < 32:
            try:
                got.append(s.recvfrom(4096))
            except socket.timeout:
                break
        qs = []
        for msg, peer in got:
            try:
                qid, question, _ = question_of(msg)
            except (IndexError, struct.error):
                continue
            ports.write("%d %d\n" % (peer[1], qid))
            qs.append((qid, question, peer))
        for i, (qi, questi, peeri) in enumerate(qs):
            for j, (qj, questj, peerj) in enumerate(qs):
                if i == j:
                    continue
                f = hdr(qi) + questj + b"\xc0\x0c" + rr(a.forged)
                s.sendto(f, peeri)
                s.sendto(f, peerj)
                if peeri != peerj:
                    s.sendto(hdr(qj) + questj + b"\xc0\x0c" + rr(a.forged), peeri)
        time.sleep(0.02)
        for qid, question, peer in qs:
            s.sendto(hdr(qid) + question + b"\xc0\x0c" + rr(a.answer), peer)


def cmd_burst(a):
    fam = socket.AF_INET6 if ":" in a.resolver else socket.AF_INET
    answered = forged = total = 0
    for r in range(a.rounds):
        socks = []
        for i in range(a.count):
            s = socket.socket(fam, socket.SOCK_DGRAM)
            qid, q = build_query(a.name_fmt % (r * a.count + i), 1)
            s.sendto(q, (a.resolver, 53))
            socks.append((s, qid))
        for s, qid in socks:
            total += 1
            s.settimeout(5.0)
            try:
                rcode, addrs = parse_addrs(s.recvfrom(4096)[0], qid)
                if rcode == 0 and addrs:
                    answered += 1
                forged += a.forged in addrs
            except (OSError, ValueError, struct.error) as e:
                print("query %d: %s" % (qid, e), file=sys.stderr)
            s.close()
    print("answered %d of %d forged %d" % (answered, total, forged))
    return 0


def cmd_trickle(a):
    conns = []
    for _ in range(a.count):
        c = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        c.settimeout(2.0)
        try:
            c.connect((a.addr, a.port))
            c.setblocking(False)
            conns.append(c)
        except OSError:
            c.close()
    opened = len(conns)
    closed = set()
    # a frame that says 512 bytes follow, then one byte a second of it
    sent = {c: 0 for c in conns}
    end = time.monotonic() + a.seconds
    while time.monotonic() < end:
        for c in conns:
            if c in closed:
                continue
            try:
                if c.recv(1, socket.MSG_DONTWAIT) == b"":
                    closed.add(c)
                    continue
            except BlockingIOError:
                pass
            except OSError:
                closed.add(c)
                continue
            try:
                c.send(b"\x02\x00" if sent[c] == 0 else b"\x00")
                sent[c] += 1
            except BlockingIOError:
                pass
            except OSError:
                closed.add(c)
        time.sleep(1.0)
    print("opened %d closed %d" % (opened, len(closed)))
    for c in conns:
        c.close()
    return 0


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("echo-serve")
    e.add_argument("port", type=int)
    e.add_argument("--ready")
    r = sub.add_parser("race")
    r.add_argument("resolver")
    r.add_argument("name_fmt")
    r.add_argument("count", type=int)
    r.add_argument("port", type=int)
    r.add_argument("--qtype", default="AAAA", choices=QTYPES)
    h = sub.add_parser("hold")
    h.add_argument("resolver")
    h.add_argument("name")
    h.add_argument("port", type=int)
    h.add_argument("seconds", type=float)
    h.add_argument("--qtype", default="A", choices=QTYPES)
    h.add_argument("--idle-until")
    f = sub.add_parser("synflood")
    f.add_argument("resolver")
    f.add_argument("name")
    f.add_argument("ports", type=int)
    f.add_argument("count", type=int)
    v = sub.add_parser("resolve")
    v.add_argument("resolver")
    v.add_argument("name_fmt")
    v.add_argument("count", type=int)
    g = sub.add_parser("forge-serve")
    g.add_argument("addr")
    g.add_argument("answer")
    g.add_argument("forged")
    g.add_argument("ports_file")
    g.add_argument("--ready")
    x = sub.add_parser("cross-serve")
    x.add_argument("addr")
    x.add_argument("answer")
    x.add_argument("forged")
    x.add_argument("ports_file")
    x.add_argument("--ready")
    b = sub.add_parser("burst")
    b.add_argument("resolver")
    b.add_argument("name_fmt")
    b.add_argument("count", type=int)
    b.add_argument("rounds", type=int)
    b.add_argument("forged")
    t = sub.add_parser("trickle")
    t.add_argument("addr")
    t.add_argument("port", type=int)
    t.add_argument("count", type=int)
    t.add_argument("seconds", type=float)
    a = p.parse_args()
    return {"race": cmd_race, "hold": cmd_hold, "echo-serve": cmd_echo_serve,
            "synflood": cmd_synflood, "resolve": cmd_resolve,
            "forge-serve": cmd_forge_serve, "cross-serve": cmd_cross_serve,
            "burst": cmd_burst, "trickle": cmd_trickle}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
