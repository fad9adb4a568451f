#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""What a hostile client on the actions listener tries (http.sh): idle
sockets, trickled headers, held bodies, two framings of one body. Each
subcommand prints one line of facts and exits 0 when the server behaved,
1 when it did not, with the reason on stderr."""
import argparse
import resource
import socket
import sys
import time


def die(msg):
    print(msg, file=sys.stderr)
    sys.exit(1)


def raise_nofile():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def connect(src, port, timeout=2.0):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.settimeout(timeout)
    s.bind((src, 0))
    s.connect(("127.0.0.1", port))
    return s


def status(src, port, timeout):
    """GET status from src; returns (code, seconds) or (None, seconds)."""
    t0 = time.monotonic()
    try:
        s = connect(src, port, timeout)
        s.sendall(b"GET /_fastlet/v1/actions/status HTTP/1.1\r\nHost: x\r\n"
                  b"Connection: close\r\n\r\n")
        data = b""
        while b"\r\n" not in data:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
        s.close()
        code = int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/") else None
    except OSError:
        code = None
    return code, time.monotonic() - t0


def reply_code(s, timeout):
    s.settimeout(timeout)
    data = b""
    try:
        while b"\r\n" not in data:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
    except OSError:
        pass
    if not data.startswith(b"HTTP/"):
        return None
    return int(data.split(b" ", 2)[1])


def cmd_idle(a):
    """N idle sockets from --flood-src, then a status request from --src."""
    raise_nofile()
    socks = []
    for _ in range(a.n):
        try:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setblocking(False)
            s.bind((a.flood_src, 0))
            s.connect_ex(("127.0.0.1", a.port))
            socks.append(s)
        except OSError as e:
            die(f"can't open idle socket {len(socks)}: {e}")
    time.sleep(1.0)  # let the server take (or refuse) them
    code, took = status(a.src, a.port, a.timeout)
    print(f"idle={len(socks)} status={code} seconds={took:.2f}")
    for s in socks:
        s.close()
    if code != 200:
        die(f"status not answered within {a.timeout}s while {len(socks)} sockets sat idle")


def cmd_trickle(a):
    """Headers one byte every --every seconds: the server must close the
    connection by --within seconds."""
    s = connect(a.src, a.port)
    t0 = time.monotonic()
    s.sendall(b"GET /_fastlet/v1/actions/status HTTP/1.1\r\n")
    header = b"X-Slow: " + b"a" * 1000
    i = 0
    closed = None
    while time.monotonic() - t0 < a.within + 4:
        try:
            s.sendall(header[i % len(header):i % len(header) + 1])
            s.settimeout(a.every)
            if s.recv(1) == b"":
                closed = time.monotonic() - t0
                break
        except socket.timeout:
            pass
        except OSError:
            closed = time.monotonic() - t0
            break
        i += 1
    s.close()
    print(f"trickle closed_after={closed}")
    if closed is None or closed > a.within:
        die(f"a connection trickling its headers was still open after {a.within}s")


def cmd_framing(a):
    """Two framings of one body: the reply must be 400."""
    # a request that is fine framed either way (status answers 200), so
    # a 400 can only be the framing's
    head = b"GET /_fastlet/v1/actions/status HTTP/1.1\r\nHost: x\r\n"
    bodies = {
        "two-lengths": head + b"Content-Length: 0\r\nContent-Length: 5\r\n\r\n",
        "length-and-chunked": head + b"Content-Length: 5\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
    }
    s = connect(a.src, a.port)
    s.sendall(bodies[a.kind])
    code = reply_code(s, 3)
    s.close()
    print(f"framing {a.kind} code={code}")
    if code != 400:
        die(f"{a.kind}: got {code}, want 400")


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def cmd_bodies(a):
    """--n connections from --srcs each hold a body one byte short of
    --size: the daemon's RSS may grow by at most --max-mib, and the
    requests past its budget are answered 503."""
    raise_nofile()
    before = rss_kib(a.pid)
    chunk = b" " * 65536
    socks = []
    srcs = a.srcs.split(",")
    for i in range(a.n):
        s = connect(srcs[i % len(srcs)], a.port, 5)
        s.sendall(b"POST /_fastlet/v1/actions HTTP/1.1\r\nHost: x\r\n"
                  b"Content-Type: application/json\r\n"
                  b"Content-Length: %d\r\n\r\n" % a.size)
        left = a.size - 1
        while left:
            n = min(left, len(chunk))
            s.sendall(chunk[:n])
            left -= n
        socks.append(s)
    time.sleep(1.0)
    grown = (rss_kib(a.pid) - before) / 1024
    codes = {}
    for s in socks:
        try:
            s.sendall(b" ")
        except OSError:
            pass
        c = reply_code(s, 5)
        codes[c] = codes.get(c, 0) + 1
        s.close()
    print(f"bodies n={a.n} rss_growth_mib={grown:.1f} codes={codes}")
    if grown > a.max_mib:
        die(f"{a.n} held bodies grew the daemon by {grown:.1f} MiB (limit {a.max_mib})")
    if not codes.get(503):
        die(f"no request was refused with 503 past the body budget: {codes}")


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--src", default="127.0.0.1")
    sub = p.add_subparsers(dest="cmd", required=True)
    i = sub.add_parser("idle")
    i.add_argument("--flood-src", required=True)
    i.add_argument("-n", type=int, default=1100)
    i.add_argument("--timeout", type=float, default=3.0)
    t = sub.add_parser("trickle")
    t.add_argument("--every", type=float, default=0.5)
    t.add_argument("--within", type=float, default=13.0)
    f = sub.add_parser("framing")
    f.add_argument("kind", choices=["two-lengths", "length-and-chunked"])
    b = sub.add_parser("bodies")
    b.add_argument("--pid", type=int, required=True)
    b.add_argument("--srcs", required=True)
    b.add_argument("-n", type=int, default=96)
    b.add_argument("--size", type=int, default=1000000)
    b.add_argument("--max-mib", type=float, default=56)
    a = p.parse_args()
    {"idle": cmd_idle, "trickle": cmd_trickle, "framing": cmd_framing,
     "bodies": cmd_bodies}[a.cmd](a)


if __name__ == "__main__":
    main()
