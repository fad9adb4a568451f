#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Sequence-numbered traffic for fastwall's upgrade test (upgrade.sh).

  streams.py recv --udp ADDR:PORT... [--tcp ADDR:PORT...] --out FILE --ready FILE
      counts every datagram by the stream id and sequence number it
      carries, echoes TCP lines; on SIGTERM writes what it saw to FILE.
  streams.py send --stream ID=HOST:PORT@RATE... --stop FILE --out FILE
      sends RATE datagrams a second on each stream until FILE exists, then
      writes the count sent per stream to the --out FILE.
  streams.py tcp HOST:PORT --interval S --stop FILE --out FILE
      one TCP connection held open: a line every interval, each echo
      checked, until the stop file exists; writes the outcome.
  streams.py report --sent FILE... --recv FILE --allowed ID,... --denied ID,...
      compares the two sides: every allowed datagram arrived exactly once,
      no denied one arrived; prints a line per stream (with the missing
      sequence numbers when some were lost), exit 0 when all hold.
IPv6 addresses may be written in brackets: [2001:db8::10]:80.
"""
import argparse
import json
import os
import select
import signal
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from probe import family_of, split_hostport  # noqa: E402

MAGIC = b"FWUP"
PAD = b"." * 48


def ranges(nums):
    """Sorted integers as [first, last] runs."""
    out = []
    for n in sorted(nums):
        if out and n == out[-1][1] + 1:
            out[-1][1] = n
        else:
            out.append([n, n])
    return out


def tcp_echo(addr):
    host, port = split_hostport(addr)
    ls = socket.socket(family_of(host), socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((host, port))
    ls.listen(16)

    def serve(c):
        with c:
            while True:
                try:
                    data = c.recv(4096)
                except OSError:
                    return
                if not data:
                    return
                c.sendall(data)

    def accept():
        while True:
            c, _ = ls.accept()
            threading.Thread(target=serve, args=(c,), daemon=True).start()

    threading.Thread(target=accept, daemon=True).start()


def cmd_recv(a):
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    socks = []
    for u in a.udp:
        host, port = split_hostport(u)
        s = socket.socket(family_of(host), socket.SOCK_DGRAM)
        # a stall of this process must not overflow the socket: the test
        # counts every datagram the firewall let through
        s.setsockopt(socket.SOL_SOCKET, 33, 64 << 20)  # SO_RCVBUFFORCE
        s.bind((host, port))
        s.setblocking(False)
        socks.append(s)
    for t in a.tcp:
        tcp_echo(t)
    seen = {}  # stream id -> set of sequence numbers
    dups = {}
    peers = {}
    drops = {}
    if a.ready:
        open(a.ready, "w").close()
    while not stop:
        try:
            r, _, _ = select.select(socks, [], [], 0.1)
        except InterruptedError:
            continue
        for s in r:
            for _ in range(256):
                try:
                    data, peer = s.recvfrom(256)
                except (BlockingIOError, InterruptedError):
                    break
                parts = data.split(b" ")
                if len(parts) < 3 or parts[0] != MAGIC:
                    continue
                sid, seq = parts[1].decode(), int(parts[2])
                got = seen.setdefault(sid, set())
                if seq in got:
                    dups[sid] = dups.get(sid, 0) + 1
                got.add(seq)
                peers.setdefault(sid, set()).add("%s:%d" % peer[:2])
    # the kernel's own count of datagrams dropped at a full socket, to tell
    # a slow receiver from a firewall that lost packets
    ports = {s.getsockname()[1] for s in socks}
    for fn in ("/proc/net/udp", "/proc/net/udp6"):
        try:
            with open(fn) as f:
                for line in f.readlines()[1:]:
                    col = line.split()
                    port = int(col[1].rpartition(":")[2], 16)
                    if port in ports:
                        drops[port] = drops.get(port, 0) + int(col[-1])
        except OSError:
            pass
    out = {"socket_drops": sum(drops.values()), "streams": {sid: {"received": len(got), "ranges": ranges(got),
                             "duplicates": dups.get(sid, 0),
                             "from": sorted(peers.get(sid, ()))}
                       for sid, got in seen.items()}}
    with open(a.out + ".tmp", "w") as f:
        json.dump(out, f)
    os.rename(a.out + ".tmp", a.out)
    return 0


def cmd_send(a):
    streams = []
    for spec in a.stream:
        sid, _, rest = spec.partition("=")
        hp, _, rate = rest.rpartition("@")
        host, port = split_hostport(hp)
        s = socket.socket(family_of(host), socket.SOCK_DGRAM)
        streams.append({"id": sid, "sock": s, "dst": (host, port),
                        "rate": float(rate), "sent": 0, "errors": 0, "error": ""})
    t0 = time.monotonic()
    while not os.path.exists(a.stop):
        el = time.monotonic() - t0
        for st in streams:
            # paced by elapsed time; a late wake-up catches up in bursts of
            # at most 32, small enough for the veth backlog
            due = min(int(el * st["rate"]) - st["sent"], 32)
            for _ in range(due):
                msg = b"%s %s %d %s" % (MAGIC, st["id"].encode(), st["sent"], PAD)
                try:
                    st["sock"].sendto(msg, st["dst"])
                except OSError as e:
                    # not sent: not counted, but reported
                    st["errors"] += 1
                    st["error"] = str(e)
                    continue
                st["sent"] += 1
        time.sleep(0.001)
    el = time.monotonic() - t0
    out = {st["id"]: {"sent": st["sent"], "errors": st["errors"], "error": st["error"],
                      "seconds": round(el, 2)} for st in streams}
    with open(a.out + ".tmp", "w") as f:
        json.dump(out, f)
    os.rename(a.out + ".tmp", a.out)
    return 0


def cmd_tcp(a):
    host, port = split_hostport(a.hostport)
    res = {"exchanges": 0, "error": ""}
    try:
        c = socket.create_connection((host, port), timeout=3)
        c.settimeout(a.timeout)
        f = c.makefile("rb")
        n = 0
        while not os.path.exists(a.stop):
            line = b"line %d\n" % n
            c.sendall(line)
            back = f.readline()
            if back != line:
                raise OSError("echo %r, want %r" % (back, line))
            n += 1
            res["exchanges"] = n
            time.sleep(a.interval)
        c.close()
    except (OSError, socket.timeout) as e:
        res["error"] = "after %d exchanges: %s" % (res["exchanges"], e or type(e).__name__)
    with open(a.out + ".tmp", "w") as f:
        json.dump(res, f)
    os.rename(a.out + ".tmp", a.out)
    return 0 if not res["error"] else 1


def gaps(rs, sent):
    """The sequence numbers below sent that the runs rs do not cover."""
    out, nxt = [], 0
    for lo, hi in rs:
        if lo > nxt:
            out.append((nxt, min(lo, sent) - 1))
        nxt = max(nxt, hi + 1)
    if nxt < sent:
        out.append((nxt, sent - 1))
    return ["%d" % lo if lo == hi else "%d-%d" % (lo, hi) for lo, hi in out if lo <= hi]


def cmd_report(a):
    sent = {}
    for fn in a.sent:
        with open(fn) as f:
            sent.update(json.load(f))
    with open(a.recv) as f:
        whole = json.load(f)
    recv = whole["streams"]
    ok = True
    if whole.get("socket_drops"):
        print("note: the receiver's sockets dropped %d datagrams (receiver too slow)"
              % whole["socket_drops"])
    for sid in [s for s in a.allowed.split(",") if s]:
        s = sent.get(sid, {"sent": 0, "errors": 0})
        r = recv.get(sid, {"received": 0, "ranges": [], "duplicates": 0})
        g = gaps(r["ranges"], s["sent"])
        good = s["sent"] > 0 and r["received"] == s["sent"] and not g and s["errors"] == 0
        line = "allowed %s: sent %d received %d lost %d" % (
            sid, s["sent"], r["received"], s["sent"] - r["received"])
        if r["duplicates"]:
            line += " duplicates %d" % r["duplicates"]
        if s["errors"]:
            line += " send errors %d (%s)" % (s["errors"], s["error"])
        if g:
            line += " missing " + ",".join(g[:20]) + (" ..." if len(g) > 20 else "")
        print(("" if good else "FAIL ") + line)
        ok = ok and good
    for sid in [s for s in a.denied.split(",") if s]:
        s = sent.get(sid, {"sent": 0})
        r = recv.get(sid, {"received": 0, "from": []})
        good = s["sent"] > 0 and r["received"] == 0
        line = "denied %s: sent %d received %d" % (sid, s["sent"], r["received"])
        if r["received"]:
            line += " from " + ",".join(r["from"])
        print(("" if good else "FAIL ") + line)
        ok = ok and good
    return 0 if ok else 1


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("recv")
    r.add_argument("--udp", action="append", default=[])
    r.add_argument("--tcp", action="append", default=[])
    r.add_argument("--out", required=True)
    r.add_argument("--ready")
    s = sub.add_parser("send")
    s.add_argument("--stream", action="append", default=[], required=True)
    s.add_argument("--stop", required=True)
    s.add_argument("--out", required=True)
    t = sub.add_parser("tcp")
    t.add_argument("hostport")
    t.add_argument("--interval", type=float, default=0.05)
    t.add_argument("--timeout", type=float, default=2.0)
    t.add_argument("--stop", required=True)
    t.add_argument("--out", required=True)
    rp = sub.add_parser("report")
    rp.add_argument("--sent", action="append", default=[], required=True)
    rp.add_argument("--recv", required=True)
    rp.add_argument("--allowed", default="")
    rp.add_argument("--denied", default="")
    a = p.parse_args()
    return {"recv": cmd_recv, "send": cmd_send, "tcp": cmd_tcp, "report": cmd_report}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
