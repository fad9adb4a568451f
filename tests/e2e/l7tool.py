#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Clients and a capture for the layer-7 pinning tests (tests/e2e/l7.sh,
l7-process.sh) and their benchmark (scripts/bench-l7.sh), standard
library only.

  l7tool.py hello HOST PORT [--sni NAME] [--ca FILE] [--pieces N]
        [--pause S] [--size BYTES] [--pad BYTES] [--ech] [--dup-sni NAME]
        [--two-names NAME] [--host NAME] [--want OUTCOME]
      A ClientHello written by OpenSSL (Python's ssl), sent as it is or
      edited, in one write or N (--pieces: the first cut inside the record
      header, one inside the server name, the others spread evenly, --pause
      seconds between them, TCP_NODELAY). --size grows the hello to about
      BYTES with an ALPN list (http/1.1 first, then filler names), which the
      handshake keeps. An unedited hello completes the handshake (the peer
      certificate checked against --ca for NAME) and sends GET / with Host
      NAME (or --host), and prints "ok STATUS BODY-FIRST-LINE". An edited
      hello can't complete a handshake (the transcript differs), so it is
      answered by its first record: "serverhello" or "alert". Edits: --pad
      adds a padding extension (21) of BYTES, --ech an
      encrypted_client_hello extension (0xfe0d, outer, random payload),
      --dup-sni a second server_name extension naming NAME, --two-names a
      second host_name entry in the one server_name extension. Without
      --sni the hello has no server_name. "refused" means the connection
      closed or was reset with no byte back, "timeout" no answer at all.
      --want OUTCOME: exit 0 when the first word printed is OUTCOME (or,
      for "ok", "ok 200"-like: --want "ok 200"), else 1.
  l7tool.py http HOST PORT REQUEST... [--want STATUSES]
      One TCP connection; each REQUEST (with \\r\\n escapes) is sent after
      the response to the one before has been read. Prints the statuses
      space-separated, "closed" for a request the peer closed on. --want
      "200 403|200 closed": exit 0 when the line is one of those.
  l7tool.py hold HOST PORT --sni NAME --ca FILE -n N --out FILE
      N TLS connections opened one after another (handshake done, nothing
      sent), then held until SIGTERM; writes "ready OK FAILED" to FILE.
  l7tool.py connlat HOST PORT --sni NAME --ca FILE -n N [--warmup N]
      N full handshakes one after another: prints the p50 and p99 of the
      TCP connect, of the TLS handshake and of both, in microseconds.
  l7tool.py peer HOST PORT
      Connects and prints getpeername(): "ADDRESS PORT".
  l7tool.py udp HOST PORT
      One datagram shaped like a QUIC Initial; exit 0 once sent.
  l7tool.py capture --iface IF --out FILE --ready FILE
      One line per TCP or UDP packet arriving on IF (AF_PACKET, outgoing
      ones left out) until SIGTERM:
      "tcp SRC SPORT DST DPORT FLAGS len=N [sni=NAME] [req=METHOD TARGET]
      [host=NAME]" or "udp SRC SPORT DST DPORT len=N". sni is read from a
      ClientHello whole in one segment, req and host from a request's first
      segment.
"""
import argparse
import codecs
import os
import random
import signal
import socket
import ssl
import statistics
import struct
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from frames import csum  # noqa: E402  (the raw frames' checksum, shared)


# --- ClientHello parsing and editing ----------------------------------


def split_hello(rec):
    """(head, exts, tail_ok): the ClientHello's fixed part up to the
    extensions and its extensions as (type, data) pairs."""
    if len(rec) < 9 or rec[0] != 0x16 or rec[5] != 1:
        raise ValueError("not a ClientHello record")
    body = rec[9:]
    p = 2 + 32
    p += 1 + body[p]  # session id
    p += 2 + struct.unpack("!H", body[p:p + 2])[0]  # cipher suites
    p += 1 + body[p]  # compression methods
    head = body[:p]
    n = struct.unpack("!H", body[p:p + 2])[0]
    p += 2
    exts = []
    end = p + n
    while p < end:
        t, ln = struct.unpack("!HH", body[p:p + 4])
        exts.append((t, body[p + 4:p + 4 + ln]))
        p += 4 + ln
    return head, exts


def join_hello(head, exts, version=b"\x03\x01"):
    ext = b"".join(struct.pack("!HH", t, len(d)) + d for t, d in exts)
    body = head + struct.pack("!H", len(ext)) + ext
    hs = b"\x01" + struct.pack("!I", len(body))[1:] + body
    return b"\x16" + version + struct.pack("!H", len(hs)) + hs


def sni_ext(*names):
    entries = b"".join(b"\x00" + struct.pack("!H", len(n)) + n.encode() for n in names)
    return struct.pack("!H", len(entries)) + entries


def insert_ext(exts, t, data):
    """before a pre_shared_key extension, which must stay last"""
    at = len(exts)
    if exts and exts[-1][0] == 41:
        at -= 1
    exts.insert(at, (t, data))


def sni_of(exts):
    for t, d in exts:
        if t == 0 and len(d) >= 5:
            n = struct.unpack("!H", d[3:5])[0]
            return d[5:5 + n].decode("ascii", "replace")
    return None


def alpn_filler(size, base):
    """ALPN names after http/1.1 that grow a hello of base bytes to size"""
    names = ["http/1.1"]
    left = size - base - 2 - 9  # the extension's own list and the first name
    i = 0
    while left > 4:
        n = min(255, left - 1)
        names.append(("x%d-" % i + "f" * 255)[:n])
        left -= n + 1
        i += 1
    return names


def make_context(ca, alpn=None):
    if ca:
        c = ssl.create_default_context(cafile=ca)
    else:
        c = ssl.create_default_context()
        c.check_hostname = False
        c.verify_mode = ssl.CERT_NONE
    if alpn:
        c.set_alpn_protocols(alpn)
    return c


def first_hello(ctx, sni):
    inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    if not sni:
        ctx.check_hostname = False
    obj = ctx.wrap_bio(inc, out, server_hostname=sni or None)
    try:
        obj.do_handshake()
    except ssl.SSLWantReadError:
        pass
    return obj, inc, out, out.read()


def cuts_for(hello, sni, pieces):
    if pieces <= 1:
        return [0, len(hello)]
    want = {3}
    if sni:
        at = hello.find(sni.encode())
        if at > 0:
            want.add(at + max(1, len(sni) // 2))
    k = 1
    while len(want) < pieces - 1 and k < 64:
        want.add(len(hello) * k // pieces)
        k += 1
    inner = sorted(c for c in want if 0 < c < len(hello))[:pieces - 1]
    return [0] + inner + [len(hello)]


def read_record(s, deadline):
    """the first TLS record's first bytes, or b"" on close/reset"""
    got = b""
    while len(got) < 6:
        s.settimeout(max(0.05, deadline - time.monotonic()))
        try:
            d = s.recv(4096)
        except (ConnectionResetError, BrokenPipeError):
            return got, "reset"
        except socket.timeout:
            return got, "timeout"
        if not d:
            return got, "closed"
        got += d
    return got, "data"


def hello_main(a):
    alpn = None
    if a.size:
        _, _, _, probe = first_hello(make_context(a.ca), a.sni)
        # without the padding OpenSSL adds to hellos of 256-511 bytes
        pad = [d for t, d in split_hello(probe)[1] if t == 21]
        alpn = alpn_filler(a.size, len(probe) - (4 + len(pad[0]) if pad else 0))
    ctx = make_context(a.ca, alpn)
    obj, inc, out, hello = first_hello(ctx, a.sni)
    edited = False
    if a.pad or a.ech or a.dup_sni or a.two_names:
        head, exts = split_hello(hello)
        if a.two_names:
            exts = [(t, sni_ext(a.sni, a.two_names) if t == 0 else d) for t, d in exts]
        if a.dup_sni:
            insert_ext(exts, 0, sni_ext(a.dup_sni))
        if a.ech:
            enc = os.urandom(32)
            payload = os.urandom(208)
            ech = (b"\x00" + struct.pack("!HH", 1, 1) + bytes([random.randrange(256)]) +
                   struct.pack("!H", len(enc)) + enc + struct.pack("!H", len(payload)) + payload)
            insert_ext(exts, 0xFE0D, ech)
        if a.pad:
            # OpenSSL pads some hellos itself: one padding extension only
            exts = [(t, d) for t, d in exts if t != 21]
            insert_ext(exts, 21, b"\0" * a.pad)
        hello = join_hello(head, exts, hello[1:3])
        edited = True
    cuts = cuts_for(hello, a.sni, a.pieces)
    deadline = time.monotonic() + a.timeout
    try:
        s = socket.create_connection((a.host, a.port), timeout=a.timeout)
    except OSError as e:
        return report(a, "refused", "connect: %s" % e.strerror)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    try:
        for i, (x, y) in enumerate(zip(cuts, cuts[1:])):
            if i:
                time.sleep(a.pause)
            s.sendall(hello[x:y])
    except OSError as e:
        return report(a, "refused", "send: %s" % e.strerror)
    note = "%d-byte hello in %d writes" % (len(hello), len(cuts) - 1)
    first, how = read_record(s, deadline)
    if not first:
        return report(a, "refused" if how != "timeout" else "timeout", "%s, no byte back; %s" % (how, note))
    if edited:
        if first[0] == 0x16 and first[5] == 2:
            return report(a, "serverhello", note)
        if first[0] == 0x15:
            return report(a, "alert", note)
        return report(a, "other", "%r; %s" % (first[:8], note))
    # finish the handshake through the memory BIOs
    inc.write(first)
    s.settimeout(max(0.1, deadline - time.monotonic()))
    resp = b""
    try:
        while True:
            try:
                obj.do_handshake()
                break
            except ssl.SSLWantReadError:
                pending = out.read()
                if pending:
                    s.sendall(pending)
                d = s.recv(65536)
                if not d:
                    return report(a, "refused", "closed mid-handshake; " + note)
                inc.write(d)
        pending = out.read()
        if pending:
            s.sendall(pending)
        host = a.host_header or a.sni or a.host
        obj.write(("GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % host).encode())
        s.sendall(out.read())
        while True:
            try:
                chunk = obj.read(65536)
                if not chunk:  # close_notify read
                    break
                resp += chunk
                continue
            except ssl.SSLWantReadError:
                pass
            except (ssl.SSLZeroReturnError, ssl.SSLEOFError):
                break
            d = s.recv(65536)
            if not d:
                break
            inc.write(d)
    except ssl.SSLError as e:
        return report(a, "tls-error", "%s; %s" % (e.reason or e, note))
    except (socket.timeout, OSError) as e:
        if not resp:
            return report(a, "timeout" if isinstance(e, socket.timeout) else "refused", note)
    lines = resp.decode("latin-1").split("\r\n")
    status = lines[0].split(" ")[1] if lines and " " in lines[0] else "none"
    body = resp.decode("latin-1").split("\r\n\r\n", 1)[-1].strip().split("\n")[0]
    cn = dict(x[0] for x in obj.getpeercert().get("subject", ())).get("commonName", "?") if a.ca else "?"
    return report(a, "ok %s %s" % (status, body), "cert %s, %s, %s" % (cn, obj.version(), note))


def report(a, outcome, detail):
    print("%s (%s)" % (outcome, detail))
    if not a.want:
        return 0
    return 0 if outcome == a.want or outcome.startswith(a.want + " ") else 1


# --- HTTP on one connection --------------------------------------------


def read_response(s):
    """the status of one response (its body read by Content-Length or
    chunked), "closed" when none came; and whether the peer closes"""
    buf = b""
    while b"\r\n\r\n" not in buf:
        try:
            d = s.recv(65536)
        except (ConnectionResetError, socket.timeout):
            d = b""
        if not d:
            return "closed", True
        buf += d
    head, rest = buf.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    status = lines[0].split(" ")[1]
    hdr = {}
    for ln in lines[1:]:
        k, _, v = ln.partition(":")
        hdr[k.strip().lower()] = v.strip().lower()
    closes = hdr.get("connection") == "close"
    if "content-length" in hdr:
        need = int(hdr["content-length"]) - len(rest)
        while need > 0:
            d = s.recv(min(65536, need))
            if not d:
                break
            need -= len(d)
    elif hdr.get("transfer-encoding") == "chunked":
        while not rest.endswith(b"0\r\n\r\n"):
            d = s.recv(65536)
            if not d:
                break
            rest += d
    return status, closes


def http_main(a):
    s = socket.create_connection((a.host, a.port), timeout=a.timeout)
    got = []
    for r in a.requests:
        req = codecs.decode(r, "unicode_escape").encode("latin-1")
        try:
            s.sendall(req)
        except OSError:
            got.append("closed")
            break
        status, closes = read_response(s)
        got.append(status)
        if status == "closed" or closes:
            break
    line = " ".join(got)
    print(line)
    if a.want is None:
        return 0
    return 0 if line in a.want.split("|") else 1


# --- idle connections and connect latency --------------------------------


def hold_main(a):
    ctx = make_context(a.ca)
    conns, failed = [], 0
    for _ in range(a.n):
        try:
            s = socket.create_connection((a.host, a.port), timeout=10)
            conns.append(ctx.wrap_socket(s, server_hostname=a.sni))
        except OSError:
            failed += 1
    with open(a.out + ".tmp", "w") as f:
        f.write("ready %d %d\n" % (len(conns), failed))
    os.rename(a.out + ".tmp", a.out)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    while True:
        time.sleep(3600)


def pct(v, q):
    v = sorted(v)
    return v[min(len(v) - 1, int(round(q * (len(v) - 1))))]


def connlat_main(a):
    ctx = make_context(a.ca)
    tcp, tls, both, failed = [], [], [], 0
    for i in range(a.warmup + a.n):
        try:
            t0 = time.perf_counter()
            s = socket.create_connection((a.host, a.port), timeout=5)
            t1 = time.perf_counter()
            w = ctx.wrap_socket(s, server_hostname=a.sni)
            t2 = time.perf_counter()
            w.close()
        except OSError:
            failed += 1
            continue
        if i >= a.warmup:
            tcp.append((t1 - t0) * 1e6)
            tls.append((t2 - t1) * 1e6)
            both.append((t2 - t0) * 1e6)
    if not both:
        print("failed %d" % failed)
        return 1
    print("n=%d failed=%d connect_p50_us=%.0f connect_p99_us=%.0f tls_p50_us=%.0f tls_p99_us=%.0f "
          "total_p50_us=%.0f total_p99_us=%.0f" % (
              len(both), failed, pct(tcp, .5), pct(tcp, .99), pct(tls, .5), pct(tls, .99),
              statistics.median(both), pct(both, .99)))
    return 0


def peer_main(a):
    s = socket.create_connection((a.host, a.port), timeout=5)
    print("%s %d" % s.getpeername()[:2])
    return 0


def udp_main(a):
    fam = socket.AF_INET6 if ":" in a.host else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_DGRAM)
    # long header, Initial, version 1, random connection ids, padded to 1200
    dg = b"\xc3\x00\x00\x00\x01\x08" + os.urandom(8) + b"\x08" + os.urandom(8)
    s.sendto(dg + b"\0" * (1200 - len(dg)), (a.host, a.port))
    return 0


def synflood_main(a):
    """-n SYNs from -n source ports (a raw socket: no handshake, no RST of
    our own), IPv4; prints how many went out."""
    s = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_TCP)
    src = socket.inet_aton(a.src)
    dst = socket.inet_aton(a.host)
    sent = 0
    for i in range(a.n):
        sport = 20000 + (i % 40000)
        hdr = struct.pack("!HHIIBBHHH", sport, a.port, random.getrandbits(32), 0, 5 << 4, 0x02,
                          64240, 0, 0)
        pseudo = src + dst + struct.pack("!BBH", 0, 6, len(hdr))
        hdr = hdr[:16] + struct.pack("!H", csum(pseudo + hdr)) + hdr[18:]
        s.sendto(hdr, (a.host, 0))
        sent += 1
    print("sent %d" % sent)
    return 0


# --- capture -------------------------------------------------------------

METHODS = (b"GET ", b"POST ", b"HEAD ", b"PUT ", b"DELETE ", b"OPTIONS ", b"CONNECT ", b"PATCH ")


def describe_payload(p):
    out = []
    if len(p) > 9 and p[0] == 0x16 and p[5] == 1:
        try:
            n = sni_of(split_hello(p)[1])
            out.append("sni=%s" % (n if n else "-"))
        except (ValueError, struct.error, IndexError):
            out.append("sni=?")
    elif p.startswith(METHODS):
        first = p.split(b"\r\n", 1)[0].decode("latin-1").split(" ")
        out.append("req=%s %s" % (first[0], first[1] if len(first) > 1 else ""))
        for ln in p.split(b"\r\n")[1:]:
            if ln.lower().startswith(b"host:"):
                out.append("host=%s" % ln[5:].strip().decode("latin-1"))
    return out


def capture_main(a):
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
    s.bind((a.iface, 0))
    out = open(a.out, "a", buffering=1)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    open(a.ready, "w").close()
    while True:
        frame, addr = s.recvfrom(65535)
        if addr[2] == socket.PACKET_OUTGOING:
            continue
        et = struct.unpack("!H", frame[12:14])[0]
        if et == 0x0800:
            ip = frame[14:]
            ihl = (ip[0] & 15) * 4
            proto, src, dst = ip[9], socket.inet_ntop(socket.AF_INET, ip[12:16]), socket.inet_ntop(socket.AF_INET, ip[16:20])
            total = struct.unpack("!H", ip[2:4])[0]
            l4 = ip[ihl:total]
        elif et == 0x86DD:
            ip = frame[14:]
            proto = ip[6]
            src, dst = socket.inet_ntop(socket.AF_INET6, ip[8:24]), socket.inet_ntop(socket.AF_INET6, ip[24:40])
            l4 = ip[40:40 + struct.unpack("!H", ip[4:6])[0]]
        else:
            continue
        if proto == 6 and len(l4) >= 20:
            sp, dp = struct.unpack("!HH", l4[:4])
            off = (l4[12] >> 4) * 4
            fl = l4[13]
            flags = "".join(c for c, b in (("S", 2), ("F", 1), ("R", 4), ("P", 8), ("A", 16)) if fl & b)
            payload = l4[off:]
            words = ["tcp", src, str(sp), dst, str(dp), flags or "-", "len=%d" % len(payload)]
            words += describe_payload(payload)
        elif proto == 17 and len(l4) >= 8:
            sp, dp = struct.unpack("!HH", l4[:4])
            words = ["udp", src, str(sp), dst, str(dp), "len=%d" % (len(l4) - 8)]
        else:
            continue
        out.write(" ".join(words) + "\n")


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    h = sub.add_parser("hello")
    h.add_argument("host")
    h.add_argument("port", type=int)
    h.add_argument("--sni")
    h.add_argument("--ca")
    h.add_argument("--pieces", type=int, default=1)
    h.add_argument("--pause", type=float, default=0.3)
    h.add_argument("--size", type=int, default=0)
    h.add_argument("--pad", type=int, default=0)
    h.add_argument("--ech", action="store_true")
    h.add_argument("--dup-sni")
    h.add_argument("--two-names")
    h.add_argument("--host", dest="host_header")
    h.add_argument("--timeout", type=float, default=5)
    h.add_argument("--want")
    r = sub.add_parser("http")
    r.add_argument("host")
    r.add_argument("port", type=int)
    r.add_argument("requests", nargs="+")
    r.add_argument("--timeout", type=float, default=5)
    r.add_argument("--want")
    o = sub.add_parser("hold")
    o.add_argument("host")
    o.add_argument("port", type=int)
    o.add_argument("--sni", required=True)
    o.add_argument("--ca")
    o.add_argument("-n", type=int, required=True)
    o.add_argument("--out", required=True)
    c = sub.add_parser("connlat")
    c.add_argument("host")
    c.add_argument("port", type=int)
    c.add_argument("--sni", required=True)
    c.add_argument("--ca")
    c.add_argument("-n", type=int, default=500)
    c.add_argument("--warmup", type=int, default=20)
    e = sub.add_parser("peer")
    e.add_argument("host")
    e.add_argument("port", type=int)
    u = sub.add_parser("udp")
    u.add_argument("host")
    u.add_argument("port", type=int)
    f = sub.add_parser("synflood")
    f.add_argument("host")
    f.add_argument("port", type=int)
    f.add_argument("--src", required=True)
    f.add_argument("-n", type=int, default=1000)
    k = sub.add_parser("capture")
    k.add_argument("--iface", required=True)
    k.add_argument("--out", required=True)
    k.add_argument("--ready", required=True)
    a = p.parse_args()
    return {"hello": hello_main, "http": http_main, "hold": hold_main, "connlat": connlat_main,
            "peer": peer_main, "udp": udp_main, "synflood": synflood_main,
            "capture": capture_main}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
