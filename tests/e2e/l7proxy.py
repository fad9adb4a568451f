#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Helpers of tests/e2e/l7-proxy.sh (the layer-7 proxy's nginx module on
its own): writing the four maps the module reads with bpftool, the report
listener, and clients that choose their source port (the nat entry is
keyed by it) and write ClientHellos the way the cases need them: a real
one cut into pieces, a built one with padding, an ECH extension or two
server names, and raw HTTP requests.

  put-nat PIN CLIENT CPORT PPORT DST DPORT SUBJECT KIND
  put-lease PIN SUBJECT DST TTL_SECONDS NAME_ID...
  put-name PIN ID TEXT
  reports SOCK OUT --ready F  decode struct fw_l7_report datagrams into OUT
  tls ...                     one TLS connection (see --help)
  limit ...                   the per-subject limit: two held, a third refused
  http SRC DST REQUEST...     raw requests on one connection; prints statuses
  launch PIN REPORT-SOCK -- CMD...
                              CMD with the four maps opened read-only as fds
                              3-6 and a datagram socket connected to
                              REPORT-SOCK as fd 7, the way fastwalld starts
                              the proxy
"""
import argparse
import ipaddress
import socket
import ssl
import struct
import subprocess
import sys
import time

REASONS = ["l7-pinned", "l7-name", "l7-no-name", "l7-ech", "l7-bad-hello",
           "l7-lease", "l7-untracked-peer", "l7-limit", "l7-upstream-failed",
           "l7-injected", "l7-misdirected", "l7-upstream-cert", "l7-no-cert"]
KINDS = {"none": 0, "tls": 1, "http": 2}
REPORT = struct.Struct("<HBBIIB3x16s16s2s2sIQQQ256s")
assert REPORT.size == 336


def ip16(addr):
    a = ipaddress.ip_address(addr)
    if a.version == 4:
        return b"\0" * 10 + b"\xff\xff" + a.packed, 0
    return a.packed, 1


def bpftool_update(pin, name, key, value):
    def hx(b):
        return ["hex"] + ["%02x" % x for x in b]
    subprocess.run(["bpftool", "map", "update", "pinned", f"{pin}/{name}",
                    "key"] + hx(key) + ["value"] + hx(value), check=True)


def put_nat(a):
    client, _ = ip16(a[0])
    dst, fam = ip16(a[3])
    key = client + struct.pack(">HH", int(a[1]), int(a[2]))
    now = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    value = (dst + struct.pack(">HH", int(a[4]), int(a[2])) +
             struct.pack("<IQBBB5x", int(a[5]), now, KINDS[a[6]], fam, 0))
    assert len(key) == 20 and len(value) == 40
    bpftool_update(a[7] if len(a) > 7 else PIN, "fastwall_l7_nat", key, value)


def put_lease(pin, a):
    dst, _ = ip16(a[1])
    key = struct.pack("<II", int(a[0]), 0) + dst
    now = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    expires = now + int(float(a[2]) * 1e9)
    bpftool_update(pin, "fastwall_learned", key,
                   struct.pack("<QQII", expires, now, 0, 0))
    ids = [int(x) for x in a[3:]] + [0] * (8 - len(a[3:]))
    bpftool_update(pin, "fastwall_learned_names", key, struct.pack("<8I", *ids))


def put_name(pin, a):
    text = a[1].encode()
    bpftool_update(pin, "fastwall_names", struct.pack("<I", int(a[0])),
                   text + b"\0" * (256 - len(text)))


def reports(sock_path, out, ready):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(sock_path)
    open(ready, "w").close()
    while True:
        d = s.recv(4096)
        with open(out, "a") as f:
            if len(d) != REPORT.size:
                f.write(f"bad-size {len(d)}\n")
                continue
            (ver, typ, kind, subject, reason, fam, client, dst, cport, dport,
             _, up, down, dur, name) = REPORT.unpack(d)
            def addr(b):
                a = ipaddress.ip_address(b)
                return str(a.ipv4_mapped or a)
            f.write("type=%s kind=%s subject=%d reason=%s client=%s:%d "
                    "dst=%s:%d up=%d down=%d dur_ms=%d name=%s version=%d\n" % (
                        {1: "verdict", 2: "close"}.get(typ, typ),
                        {v: k for k, v in KINDS.items()}.get(kind, kind),
                        subject,
                        REASONS[reason] if reason < len(REASONS) else reason,
                        addr(client), struct.unpack(">H", cport)[0],
                        addr(dst), struct.unpack(">H", dport)[0],
                        up, down, dur // 1000000,
                        name.split(b"\0")[0].decode(errors="replace") or "-",
                        ver))


def connect(src, dst):
    sh, sp = src.rsplit(":", 1)
    dh, dp = dst.rsplit(":", 1)
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((sh, int(sp)))
    s.settimeout(5)
    s.connect((dh, int(dp)))
    return s


def send_pieces(s, data, pieces, delay):
    step = max(1, -(-len(data) // pieces))
    for i in range(0, len(data), step):
        s.sendall(data[i:i + step])
        if i + step < len(data):
            time.sleep(delay)


def ext(t, d):
    return struct.pack(">HH", t, len(d)) + d


def sni_ext(names):
    lst = b"".join(b"\0" + struct.pack(">H", len(n)) + n for n in names)
    return ext(0, struct.pack(">H", len(lst)) + lst)


def built_hello(names, ech=False, dup=False, pad=0):
    """A TLS 1.2 ClientHello a server answers with its ServerHello."""
    exts = []
    if names:
        if dup:
            exts += [sni_ext(names[:1]), sni_ext(names[1:] or names[:1])]
        else:
            exts.append(sni_ext(names))
    exts += [ext(0x000a, b"\x00\x04\x00\x1d\x00\x17"),   # x25519, P-256
             ext(0x000b, b"\x01\x00"),
             ext(0x000d, b"\x00\x08\x04\x03\x08\x04\x04\x01\x05\x01"),
             ext(0xff01, b"\x00")]
    if ech:
        exts.append(ext(0xfe0d, b"\x00\x00\x01\x00\x01\x05" + b"\x00\x20" +
                        bytes(32) + b"\x00\x10" + bytes(16)))
    if pad:
        exts.append(ext(0x0015, bytes(pad)))
    e = b"".join(exts)
    suites = b"\xc0\x2b\xc0\x2f\xc0\x2c\xc0\x30\x00\x9c"
    body = (b"\x03\x03" + bytes(range(32)) + b"\x00" +
            struct.pack(">H", len(suites)) + suites + b"\x01\x00" +
            struct.pack(">H", len(e)) + e)
    msg = b"\x01" + len(body).to_bytes(3, "big") + body
    return b"\x16\x03\x01" + struct.pack(">H", len(msg)) + msg


def read_answer(s, limit=5.0):
    """What came back before EOF (or limit seconds)."""
    got = b""
    end = time.time() + limit
    while time.time() < end:
        try:
            d = s.recv(65536)
        except socket.timeout:
            break
        except ConnectionResetError:
            break
        if not d:
            break
        got += d
        if len(got) >= 6 and got[0] == 0x16 and got[5] == 2:
            break
    return got


def verdict_of(got):
    if not got:
        return "closed 0"
    if got[0] == 0x16 and len(got) >= 6 and got[5] == 2:
        return "serverhello"
    return "other %d %s" % (len(got), got[:8].hex())


def real_tls(s, sni, ca, pieces, delay):
    """A real handshake (Python's ssl) with its ClientHello in pieces, then
    GET /: 'page <first body line>' or 'closed <bytes seen>'."""
    ctx = ssl.create_default_context(cafile=ca)
    inc, out = ssl.MemoryBIO(), ssl.MemoryBIO()
    obj = ctx.wrap_bio(inc, out, server_hostname=sni)
    first = True
    seen = 0
    while True:
        try:
            obj.do_handshake()
            break
        except ssl.SSLWantReadError:
            data = out.read()
            if data:
                if first:
                    send_pieces(s, data, pieces, delay)
                    first = False
                else:
                    s.sendall(data)
            try:
                d = s.recv(65536)
            except (socket.timeout, ConnectionResetError):
                d = b""
            if not d:
                return "closed %d" % seen
            seen += len(d)
            inc.write(d)
        except ssl.SSLError as e:
            return "tls-error %s" % e.reason
    s.sendall(out.read())
    obj.write(b"GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % sni.encode())
    s.sendall(out.read())
    resp = b""
    while True:
        try:
            d = obj.read(65536)
            if not d:
                break
            resp += d
        except ssl.SSLWantReadError:
            d = s.recv(65536)
            if not d:
                break
            inc.write(d)
        except (ssl.SSLZeroReturnError, ssl.SSLEOFError):
            break
    body = resp.split(b"\r\n\r\n", 1)[-1].decode(errors="replace").strip()
    return "page " + (body.splitlines() or [""])[0]


def tls_main(argv):
    p = argparse.ArgumentParser(prog="l7proxy.py tls")
    p.add_argument("--src", required=True)
    p.add_argument("--dst", required=True)
    p.add_argument("--sni", action="append", default=[])
    p.add_argument("--ca")
    p.add_argument("--pieces", type=int, default=1)
    p.add_argument("--delay", type=float, default=0.2)
    p.add_argument("--built", action="store_true", help="a built hello, not Python's own")
    p.add_argument("--ech", action="store_true")
    p.add_argument("--dup", action="store_true")
    p.add_argument("--pad", type=int, default=0)
    o = p.parse_args(argv)
    s = connect(o.src, o.dst)
    if o.built:
        hello = built_hello([n.encode() for n in o.sni], o.ech, o.dup, o.pad)
        print("hello %d bytes" % len(hello), file=sys.stderr)
        send_pieces(s, hello, o.pieces, o.delay)
        print(verdict_of(read_answer(s)))
    else:
        print(real_tls(s, o.sni[0], o.ca, o.pieces, o.delay))
    s.close()


def limit_main(argv):
    """Ports a, b, c, d: a and b hold handshaken connections; c must be
    refused while they do; after a closes, d gets through."""
    p = argparse.ArgumentParser(prog="l7proxy.py limit")
    p.add_argument("--src", required=True, help="address")
    p.add_argument("--ports", required=True)
    p.add_argument("--dst", required=True)
    p.add_argument("--sni", required=True)
    o = p.parse_args(argv)
    a, b, c, d = o.ports.split(",")
    held = []
    for port in (a, b):
        s = connect(f"{o.src}:{port}", o.dst)
        s.sendall(built_hello([o.sni.encode()]))
        held.append((s, verdict_of(read_answer(s))))
    s = connect(f"{o.src}:{c}", o.dst)
    s.sendall(built_hello([o.sni.encode()]))
    third = verdict_of(read_answer(s))
    s.close()
    held[0][0].close()
    time.sleep(0.5)
    s = connect(f"{o.src}:{d}", o.dst)
    s.sendall(built_hello([o.sni.encode()]))
    fourth = verdict_of(read_answer(s))
    s.close()
    held[1][0].close()
    print("held=%s,%s third=%s after=%s" % (held[0][1], held[1][1], third, fourth))


def http_main(argv):
    """Requests (with \\r\\n written as \\r\\n escapes) sent one after the
    other on one connection: the status of each answer, then 'closed'
    when the proxy closed the connection."""
    src, dst = argv[0], argv[1]
    s = connect(src, dst)
    out = []
    buf = b""
    for req in argv[2:]:
        try:
            s.sendall(req.encode().decode("unicode_escape").encode("latin-1"))
        except (BrokenPipeError, ConnectionResetError):
            out.append("closed")
            break
        while b"\r\n\r\n" not in buf:
            try:
                d = s.recv(65536)
            except ConnectionResetError:
                d = b""
            if not d:
                break
            buf += d
        if b"\r\n\r\n" not in buf:
            out.append("closed")
            break
        head, buf = buf.split(b"\r\n\r\n", 1)
        status = head.split(b" ", 2)[1].decode()
        clen = 0
        for line in head.split(b"\r\n")[1:]:
            k, _, v = line.partition(b":")
            if k.strip().lower() == b"content-length":
                clen = int(v)
        while len(buf) < clen:
            d = s.recv(65536)
            if not d:
                break
            buf += d
        body, buf = buf[:clen], buf[clen:]
        first = (body.decode(errors="replace").strip().splitlines() or [""])[0]
        out.append(status + ":" + first.replace(" ", "_"))
    else:
        s.settimeout(2)
        try:
            d = s.recv(1)
            out.append("closed" if not d else "open")
        except socket.timeout:
            out.append("open")
        except ConnectionResetError:
            out.append("closed")
    s.close()
    print(" ".join(out))


PIN = None
BPF_OBJ_GET = 7
BPF_F_RDONLY = 1 << 3


def obj_get_rdonly(path):
    import ctypes
    import os
    libc = ctypes.CDLL(None, use_errno=True)
    p = ctypes.create_string_buffer(path.encode())
    # union bpf_attr for BPF_OBJ_GET: pathname, bpf_fd, file_flags
    attr = struct.pack("<QII", ctypes.addressof(p), 0, BPF_F_RDONLY) + bytes(112)
    buf = ctypes.create_string_buffer(attr, len(attr))
    fd = libc.syscall(321, BPF_OBJ_GET, buf, len(attr))  # __NR_bpf, x86_64
    if fd < 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()), path)
    return fd


def launch(pin, report_sock, cmd):
    import os
    names = ["fastwall_l7_nat", "fastwall_learned", "fastwall_learned_names",
             "fastwall_names"]
    fds = [obj_get_rdonly(f"{pin}/{n}") for n in names]
    r = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    r.connect(report_sock)
    fds.append(r.detach())
    # onto 3..7, in order, inheritable (through fds out of that range)
    import fcntl
    tmp = [fcntl.fcntl(f, fcntl.F_DUPFD, 100) for f in fds]
    for f in fds:
        os.close(f)
    for i, f in enumerate(tmp):
        os.dup2(f, 3 + i, inheritable=True)
        os.close(f)
    os.execvp(cmd[0], cmd)


def main():
    global PIN
    cmd, argv = sys.argv[1], sys.argv[2:]
    if cmd == "put-nat":
        PIN = argv[0]
        put_nat(argv[1:])
    elif cmd == "put-lease":
        put_lease(argv[0], argv[1:])
    elif cmd == "put-name":
        put_name(argv[0], argv[1:])
    elif cmd == "reports":
        reports(argv[0], argv[1], argv[argv.index("--ready") + 1])
    elif cmd == "tls":
        tls_main(argv)
    elif cmd == "limit":
        limit_main(argv)
    elif cmd == "http":
        http_main(argv)
    elif cmd == "launch":
        launch(argv[0], argv[1], argv[argv.index("--") + 1:])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
