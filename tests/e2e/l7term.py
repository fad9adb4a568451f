#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Helpers of tests/e2e/l7-term.sh (TLS termination in the layer-7 proxy's
nginx module): the two vault maps the module reads (the encoding of
include/fastwall/l7vault.h, written with the bpf() syscall: a blob is
128 KB, too long for a bpftool command line) and clients that choose
their source port (the nat entry is keyed by it) or speak to the
terminating server's unix socket directly.

  put-vault PIN SUBJECT GEN BINDING...   the subject's blob, then its
      generation (the writer's order); BINDING is
      name|header|value|host,host|port,port|schemes[|METHOD,METHOD]
      (schemes: a number of FW_L7_SCHEME_* bits, 0 for none given)
  del-vault PIN SUBJECT                  generation 0, then the blob
  leaf --src A:P --dst A:P --sni N --ca F
      one handshake verified against F: the server's certificate (PEM)
  resume --src A:P1,P2 --dst A:P --sni N --ca F [--tls12]
      two connections, the second offering the first's session: whether
      it was resumed
  unix SOCK PROXY-LINE SNI CA            a PROXY line then TLS on the unix
      socket, GET /; prints "status N" or "refused ERROR"
  upgrade --src A:P --dst A:P --sni N --ca F
      an HTTP/1.1 Upgrade, then "ping": prints the status and the echo
  echo-server ADDR:PORT CERT KEY --ready F
      TLS: 101 to an upgrade, then an echo
  launch PIN REPORT-SOCK CA-PEM -- CMD...
      CMD with the descriptors fastwalld hands the proxy: the pinned maps
      on 3-6, the report socket on 7, the vault maps on 8-9 (all maps
      read-only), the CA through a pipe on 10
"""
import argparse
import ctypes
import os
import socket
import ssl
import struct
import sys

BPF_MAP_UPDATE_ELEM = 2
BPF_MAP_DELETE_ELEM = 3
BPF_OBJ_GET = 7
BPF_F_RDONLY = 1 << 3
NR_BPF = 321  # x86_64
VAULT_MAGIC = 0x564C5746
VAULT_DATA = 128 * 1024 - 16

libc = ctypes.CDLL(None, use_errno=True)


def bpf(cmd, attr):
    buf = ctypes.create_string_buffer(attr, 128)
    r = libc.syscall(NR_BPF, cmd, buf, 128)
    if r < 0:
        raise OSError(ctypes.get_errno(), os.strerror(ctypes.get_errno()))
    return r


def obj_get(path, flags=0):
    p = ctypes.create_string_buffer(path.encode())
    return bpf(BPF_OBJ_GET, struct.pack("<QII", ctypes.addressof(p), 0, flags))


def update(fd, key, value):
    k = ctypes.create_string_buffer(key, len(key))
    v = ctypes.create_string_buffer(value, len(value))
    bpf(BPF_MAP_UPDATE_ELEM, struct.pack("<IIQQQ", fd, 0, ctypes.addressof(k),
                                         ctypes.addressof(v), 0))


def delete(fd, key):
    k = ctypes.create_string_buffer(key, len(key))
    try:
        bpf(BPF_MAP_DELETE_ELEM, struct.pack("<IIQQQ", fd, 0, ctypes.addressof(k), 0, 0))
    except OSError:
        pass


def strs(items):
    return b"".join(struct.pack("<H", len(s)) + s for s in items)


def record(spec):
    f = spec.split("|") + ["", ""]
    name, header, value, hosts, ports, schemes, methods, paths = f[:8]
    name, header, value = name.encode(), header.encode(), value.encode()
    hosts = [h.encode() for h in hosts.split(",") if h]
    ports = [int(p) for p in ports.split(",") if p]
    methods = [m.encode() for m in methods.split(",") if m]
    paths = [x.encode() for x in paths.split(",") if x]
    body = (struct.pack("<%dH" % len(ports), *ports) + name + header + value +
            strs(hosts) + strs(methods) + strs(paths))
    head = struct.Struct("<IBBBBBBHHI")
    return head.pack(head.size + len(body), 1, int(schemes), len(ports),
                     len(hosts), len(methods), len(paths), len(name), len(header),
                     len(value)) + body


def put_vault(a):
    pin, subject, gen = a[0], int(a[1]), int(a[2])
    data = struct.pack("<IHH", VAULT_MAGIC, 1, len(a[3:]))
    data += b"".join(record(s) for s in a[3:])
    blob = struct.pack("<QII", gen, len(data), 0) + data + b"\0" * (VAULT_DATA - len(data))
    update(obj_get(pin + "/fastwall_l7_vaults"), struct.pack("<I", subject), blob)
    update(obj_get(pin + "/fastwall_l7_vault_gen"), struct.pack("<I", subject),
           struct.pack("<Q", gen))


def del_vault(a):
    pin, subject = a[0], int(a[1])
    update(obj_get(pin + "/fastwall_l7_vault_gen"), struct.pack("<I", subject),
           struct.pack("<Q", 0))
    delete(obj_get(pin + "/fastwall_l7_vaults"), struct.pack("<I", subject))


def leaf(argv):
    p = argparse.ArgumentParser(prog="leaf")
    p.add_argument("--src", required=True)
    p.add_argument("--dst", required=True)
    p.add_argument("--sni", required=True)
    p.add_argument("--ca", required=True)
    o = p.parse_args(argv)
    sh, sp = o.src.rsplit(":", 1)
    dh, dp = o.dst.rsplit(":", 1)
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((sh, int(sp)))
    s.settimeout(5)
    s.connect((dh, int(dp)))
    ctx = ssl.create_default_context(cafile=o.ca)
    try:
        t = ctx.wrap_socket(s, server_hostname=o.sni)
    except (ssl.SSLError, OSError) as e:
        print("refused", type(e).__name__)
        return
    print(ssl.DER_cert_to_PEM_cert(t.getpeercert(binary_form=True)), end="")
    t.close()


def resume(argv):
    """Two connections, the second offering the first one's session (a
    TLS 1.3 ticket, or a TLS 1.2 session): whether the server resumed it."""
    p = argparse.ArgumentParser(prog="resume")
    p.add_argument("--src", required=True, help="ADDR:PORT,PORT")
    p.add_argument("--dst", required=True)
    p.add_argument("--sni", required=True)
    p.add_argument("--sni2", help="the second connection's server name")
    p.add_argument("--ca", required=True)
    p.add_argument("--tls12", action="store_true")
    o = p.parse_args(argv)
    sh, ports = o.src.rsplit(":", 1)
    names = [o.sni, o.sni2 or o.sni]
    dh, dp = o.dst.rsplit(":", 1)
    ctx = ssl.create_default_context(cafile=o.ca)
    if o.tls12:
        ctx.maximum_version = ssl.TLSVersion.TLSv1_2
    session = None
    body = b""
    for i, port in enumerate(ports.split(",")):
        name = names[min(i, 1)]
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind((sh, int(port)))
        s.settimeout(5)
        s.connect((dh, int(dp)))
        t = ctx.wrap_socket(s, server_hostname=name, session=session)
        t.sendall(b"GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % name.encode())
        body = b""
        while True:
            b = t.recv(4096)
            if not b:
                break
            body += b
        reused = t.session_reused
        session = t.session
        t.close()
    last = body.split(b"\r\n\r\n", 1)[-1].decode(errors="replace").strip()
    print("reused", reused, "ticket", bool(session and session.has_ticket), "|", last)


def launch(pin, report_sock, ca, cmd):
    """CMD with descriptors as fastwalld hands them to the proxy: the four
    pinned maps read-only on 3-6, the report socket on 7, the two vault
    maps read-only on 8-9, and on 10 a pipe holding the CA's PEM, written
    whole and closed."""
    import fcntl
    names = ["fastwall_l7_nat", "fastwall_learned", "fastwall_learned_names",
             "fastwall_names"]
    fds = [obj_get(f"{pin}/{n}", BPF_F_RDONLY) for n in names]
    r = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    r.connect(report_sock)
    fds.append(r.detach())
    fds += [obj_get(f"{pin}/{n}", BPF_F_RDONLY)
            for n in ["fastwall_l7_vaults", "fastwall_l7_vault_gen"]]
    rd, wr = os.pipe()
    with open(ca, "rb") as f:
        os.write(wr, f.read())
    os.close(wr)
    fds.append(rd)
    # onto 3..10, in order, inheritable (through fds out of that range)
    tmp = [fcntl.fcntl(f, fcntl.F_DUPFD, 100) for f in fds]
    for f in fds:
        os.close(f)
    for i, f in enumerate(tmp):
        os.dup2(f, 3 + i, inheritable=True)
        os.close(f)
    os.execvp(cmd[0], cmd)


def upgrade(argv):
    """An HTTP/1.1 Upgrade through the proxy, then bytes both ways."""
    p = argparse.ArgumentParser(prog="upgrade")
    p.add_argument("--src", required=True)
    p.add_argument("--dst", required=True)
    p.add_argument("--sni", required=True)
    p.add_argument("--ca", required=True)
    o = p.parse_args(argv)
    sh, sp = o.src.rsplit(":", 1)
    dh, dp = o.dst.rsplit(":", 1)
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((sh, int(sp)))
    s.settimeout(5)
    s.connect((dh, int(dp)))
    ctx = ssl.create_default_context(cafile=o.ca)
    ctx.set_alpn_protocols(["http/1.1"])
    t = ctx.wrap_socket(s, server_hostname=o.sni)
    t.sendall(b"GET /chat HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\n"
              b"Connection: Upgrade\r\n\r\n" % o.sni.encode())
    head = b""
    while b"\r\n\r\n" not in head:
        d = t.recv(1)
        if not d:
            break
        head += d
    status = head.split(b" ", 2)[1].decode() if head else "none"
    t.sendall(b"ping")
    print(status, t.recv(100).decode(errors="replace"))


def echo_server(argv):
    """TLS on ADDR:PORT: a request asking for an upgrade gets 101, then
    every byte back; anything else 400."""
    import threading
    addr, cert, key, ready = argv[0], argv[1], argv[2], argv[argv.index("--ready") + 1]
    h, port = addr.rsplit(":", 1)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((h, int(port)))
    ls.listen(16)
    open(ready, "w").close()

    def serve(c):
        try:
            t = ctx.wrap_socket(c, server_side=True)
            head = b""
            while b"\r\n\r\n" not in head:
                d = t.recv(1)
                if not d:
                    return
                head += d
            if b"upgrade: websocket" not in head.lower():
                t.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
                return
            t.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                      b"Connection: Upgrade\r\n\r\n")
            while True:
                d = t.recv(4096)
                if not d:
                    return
                t.sendall(d)
        except (ssl.SSLError, OSError):
            pass
        finally:
            c.close()

    while True:
        c, _ = ls.accept()
        threading.Thread(target=serve, args=(c,), daemon=True).start()


def relay(argv):
    """LISTEN SRC_ADDR:PORT,PORT... DST: one connection at LISTEN per source
    port, relayed from that port to DST (for clients that can't choose
    their source port, openssl s_client)"""
    import select
    (lh, lp), (sh, ports), (dh, dp) = (x.rsplit(":", 1) for x in argv[:3])
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind((lh, int(lp)))
    ls.listen(1)
    with open(argv[argv.index("--ready") + 1], "w"):
        pass
    for port in ports.split(","):
        a, _ = ls.accept()
        b = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        b.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        b.bind((sh, int(port)))
        b.connect((dh, int(dp)))
        open_ = {a: b, b: a}
        while open_:
            r, _, _ = select.select(list(open_), [], [], 10)
            if not r:
                break
            for x in r:
                try:
                    d = x.recv(65536)
                    if d:
                        open_[x].sendall(d)
                        continue
                    open_[x].shutdown(socket.SHUT_WR)
                except OSError:
                    open_ = {}
                    break
                del open_[x]
        a.close()
        b.close()


def hello(sni, share):
    """A TLS 1.3 ClientHello for sni: an X25519 key share, or none (which
    makes the server ask again: a HelloRetryRequest)"""
    u8 = lambda b: bytes([len(b)]) + b  # noqa: E731
    u16 = lambda b: struct.pack(">H", len(b)) + b  # noqa: E731
    ext = lambda t, b: struct.pack(">H", t) + u16(b)  # noqa: E731
    shares = struct.pack(">H", 29) + u16(os.urandom(32)) if share else b""
    exts = (ext(0, u16(b"\0" + u16(sni.encode()))) + ext(10, u16(struct.pack(">H", 29))) +
            ext(13, u16(struct.pack(">HHH", 0x0403, 0x0804, 0x0807))) +
            ext(43, u8(b"\x03\x04")) + ext(45, u8(b"\x01")) + ext(51, u16(shares)))
    body = (b"\x03\x03" + os.urandom(32) + u8(os.urandom(32)) + u16(b"\x13\x01") +
            b"\x01\x00" + u16(exts))
    hs = b"\x01" + struct.pack(">I", len(body))[1:] + body
    return b"\x16\x03\x01" + u16(hs)


def hrr(argv):
    """--src A:P --dst A:P --sni N --sni2 M: a ClientHello the server must
    ask again for, then one for M: "hrr", then "server-hello" when the
    server took the second, else "alert" (or "closed")"""
    p = argparse.ArgumentParser(prog="hrr")
    for a in ("--src", "--dst", "--sni", "--sni2"):
        p.add_argument(a, required=True)
    o = p.parse_args(argv)
    sh, sp = o.src.rsplit(":", 1)
    dh, dp = o.dst.rsplit(":", 1)
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((sh, int(sp)))
    s.settimeout(5)
    s.connect((dh, int(dp)))
    out = []

    def record():
        head = b""
        while len(head) < 5:
            d = s.recv(5 - len(head))
            if not d:
                return None, b""
            head += d
        n = struct.unpack(">H", head[3:5])[0]
        data = b""
        while len(data) < n:
            d = s.recv(n - len(data))
            if not d:
                return None, b""
            data += d
        return head[0], data

    s.sendall(hello(o.sni, False))
    t, data = record()
    # a HelloRetryRequest is a ServerHello of the special random
    if t == 22 and data[6:38] == bytes.fromhex(
            "cf21ad74e59a6111be1d8c021e65b891c2a211167abb8c5e079e09e2c8a8339c"):
        out.append("hrr")
    s.sendall(b"\x14\x03\x03\x00\x01\x01")  # change_cipher_spec, as clients do
    s.sendall(hello(o.sni2, True))
    t, data = record()
    while t == 20:  # the server's change_cipher_spec after its retry request
        t, data = record()
    out.append({22: "server-hello", 21: "alert"}.get(t, "closed"))
    print(" ".join(out))


def twice(argv):
    """--src --dst --sni --ca --wait FILE: a request, then, on the same
    connection once FILE exists, another: "BODY1 | STATUS2 BODY2" (or
    "closed" for the second)"""
    import time
    p = argparse.ArgumentParser(prog="twice")
    for a in ("--src", "--dst", "--sni", "--ca", "--wait"):
        p.add_argument(a, required=True)
    o = p.parse_args(argv)
    sh, sp = o.src.rsplit(":", 1)
    dh, dp = o.dst.rsplit(":", 1)
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind((sh, int(sp)))
    s.settimeout(5)
    s.connect((dh, int(dp)))
    t = ssl.create_default_context(cafile=o.ca).wrap_socket(s, server_hostname=o.sni)
    f = t.makefile("rb")

    def one():
        t.sendall(b"GET / HTTP/1.1\r\nHost: %s\r\n\r\n" % o.sni.encode())
        status = f.readline().split(b" ")
        if len(status) < 2:
            return "closed"
        n = 0
        while True:
            h = f.readline()
            if h in (b"\r\n", b""):
                break
            k, _, v = h.partition(b":")
            if k.strip().lower() == b"content-length":
                n = int(v)
        return status[1].decode() + " " + f.read(n).decode(errors="replace").strip()

    print(one(), end=" ", flush=True)
    for _ in range(200):
        if os.path.exists(o.wait):
            break
        time.sleep(0.05)
    try:
        second = one()
    except (OSError, ValueError):
        second = "closed"
    print("|", second)


def unix(a):
    """PATH LINE SNI CA [body]: a PROXY line, then a TLS request for SNI;
    its status (and, with body, what the origin answered)"""
    path, line, sni, ca = a[:4]
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    try:
        s.connect(path)
        s.sendall(line.encode() + b"\r\n")
        ctx = ssl.create_default_context(cafile=ca)
        t = ctx.wrap_socket(s, server_hostname=sni)
        t.sendall(b"GET / HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % sni.encode())
        data = b""
        while True:
            d = t.recv(4096)
            if not d:
                break
            data += d
        status = data.split(b" ", 2)[1].decode() if data else "none"
        if a[4:] == ["body"]:
            body = data.split(b"\r\n\r\n", 1)[-1].decode(errors="replace").strip()
            print("status", status, "|", body)
        else:
            print("status", status)
    except (ssl.SSLError, OSError) as e:
        print("refused", type(e).__name__)


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "put-vault":
        put_vault(args)
    elif cmd == "del-vault":
        del_vault(args)
    elif cmd == "leaf":
        leaf(args)
    elif cmd == "resume":
        resume(args)
    elif cmd == "unix":
        unix(args)
    elif cmd == "relay":
        relay(args)
    elif cmd == "hrr":
        hrr(args)
    elif cmd == "twice":
        twice(args)
    elif cmd == "upgrade":
        upgrade(args)
    elif cmd == "echo-server":
        echo_server(args)
    elif cmd == "launch":
        i = args.index("--")
        launch(args[0], args[1], args[2], args[i + 1:])
    else:
        sys.exit("unknown command " + cmd)


if __name__ == "__main__":
    main()
