#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Socket calls as a sandboxed process makes them, for tests/e2e/cgroup.sh.

Each mode prints what happened ("ok", or the errno's name, or "timeout")
and exits 0 when that is --want:

  tcp HOST PORT              connect()
  udp HOST PORT              sendto() and wait for the echo
  raw                        socket(AF_INET, SOCK_RAW, IPPROTO_ICMP)
  packet                     socket(AF_PACKET, SOCK_RAW)
  ping HOST                  an ICMP echo over a ping socket
  before CGROUP HOST PORT    a UDP socket made outside CGROUP, then joins it
                             and sendto()
  subcgroup HOST PORT        makes a cgroup below its own, joins it, connect()
  request SOCKET JSON        one request to fastwalld's run socket: "ok" or
                             "refused" as fastwalld answers [--uid N: as N]
  dns SERVER NAME            an A query to SERVER:53 with sendto() (--connect:
                             connect() and send()): "A=ADDR", "NXDOMAIN" or
                             "rcode=N"; "bad-source" when the answer does not
                             come from SERVER:53; --tcp: over TCP; --bind:
                             the socket is bound to the wildcard address,
                             port 0, before sendto() or connect();
                             --src ADDR: bound to ADDR instead; --port N:
                             to SERVER:N
  bind ADDR                  bind() a UDP socket to ADDR
  pktinfo SRC HOST PORT      sendmsg() to HOST:PORT with IP_PKTINFO source SRC
  keep                       one unconnected UDP socket per family for the
                             whole run, commands on stdin, one answer line
                             each (what udp prints); --want is ignored:
                               send HOST PORT         sendto() and the echo
                               join CGROUP            moves itself to CGROUP
                               child CGROUP HOST PORT a child in CGROUP sends
                                                      on the same socket
                               dns SERVER NAME        an A query to SERVER:53
                                                      (what dns prints)
"""
import argparse
import errno
import json
import os
import socket
import struct
import sys


def result_of(exc):
    if isinstance(exc, socket.timeout):
        return "timeout"
    if isinstance(exc, OSError) and exc.errno:
        return errno.errorcode.get(exc.errno, str(exc.errno))
    return type(exc).__name__


def family_of(host):
    return socket.AF_INET6 if ":" in host else socket.AF_INET


def tcp(host, port):
    s = socket.socket(family_of(host), socket.SOCK_STREAM)
    s.settimeout(3)
    try:
        s.connect((host, port))
        return "ok"
    finally:
        s.close()


def udp_send(s, host, port):
    s.settimeout(2)
    s.sendto(b"fastwall-probe", (host, port))
    data, _ = s.recvfrom(2048)
    return "ok" if data == b"fastwall-probe" else "bad-echo"


def udp(host, port):
    with socket.socket(family_of(host), socket.SOCK_DGRAM) as s:
        return udp_send(s, host, port)


def raw():
    socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP).close()
    return "ok"


def packet():
    socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0).close()
    return "ok"


def ping(host):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM, socket.IPPROTO_ICMP) as s:
        s.settimeout(2)
        # echo request: type 8, code 0, checksum (the kernel fills it), id, seq
        s.sendto(b"\x08\x00\x00\x00\x00\x00\x00\x01fastwall", (host, 0))
        data, _ = s.recvfrom(2048)
        return "ok" if data[:1] == b"\x00" else "bad-reply"


def join(cgroup):
    with open(os.path.join(cgroup, "cgroup.procs"), "w") as f:
        f.write("0")


def before(cgroup, host, port):
    with socket.socket(family_of(host), socket.SOCK_DGRAM) as s:
        join(cgroup)
        return udp_send(s, host, port)


def subcgroup(host, port):
    with open("/proc/self/cgroup") as f:
        own = [line.split("::", 1)[1].strip() for line in f if line.startswith("0::")][0]
    sub = os.environ["FW_CG_MNT"] + own + "/sub"
    os.makedirs(sub, exist_ok=True)
    join(sub)
    return tcp(host, port)


def request(path, text, uid):
    if uid is not None:
        os.setgid(uid)
        os.setuid(uid)
    with socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET) as s:
        s.settimeout(3)
        s.connect(path)
        # a peer fastwalld refuses gets its answer at once, unasked
        if uid is None:
            s.send(text.encode())
        answer = json.loads(s.recv(65536))
        return "ok" if answer.get("ok") else "refused"


def dns_query(name):
    qid = os.getpid() & 0xffff
    q = struct.pack("!HHHHHH", qid, 0x0100, 1, 0, 0, 0)
    for label in name.rstrip(".").split("."):
        q += bytes([len(label)]) + label.encode()
    return qid, q + b"\0" + struct.pack("!HH", 1, 1)


def skip_name(data, off):
    while data[off]:
        if data[off] & 0xc0 == 0xc0:
            return off + 2
        off += data[off] + 1
    return off + 1


def dns_answer(data, qid):
    rid, flags, qd, an = struct.unpack("!HHHH", data[:8])
    if rid != qid:
        return "bad-id"
    rcode = flags & 0xf
    if rcode == 3:
        return "NXDOMAIN"
    if rcode:
        return "rcode=%d" % rcode
    off = 12
    for _ in range(qd):
        off = skip_name(data, off) + 4
    for _ in range(an):
        off = skip_name(data, off)
        rtype, _, _, rdlen = struct.unpack("!HHIH", data[off:off + 10])
        off += 10
        if rtype == 1 and rdlen == 4:
            return "A=" + socket.inet_ntoa(data[off:off + 4])
        off += rdlen
    return "no-A"


def bind_any(s, server, src=None):
    if src:
        s.bind((src, 0))
    else:
        s.bind(("::" if family_of(server) == socket.AF_INET6 else "0.0.0.0", 0))


def dns_tcp(server, name, bind_first):
    qid, q = dns_query(name)
    with socket.socket(family_of(server), socket.SOCK_STREAM) as s:
        s.settimeout(3)
        if bind_first:
            bind_any(s, server)
        s.connect((server, 53))
        if s.getpeername()[1] != 53:
            return "bad-peer"
        s.sendall(struct.pack("!H", len(q)) + q)
        data = b""
        while len(data) < 2 or len(data) < 2 + struct.unpack("!H", data[:2])[0]:
            chunk = s.recv(4096)
            if not chunk:
                return "closed"
            data += chunk
        return dns_answer(data[2:], qid)


def dns(server, name, connect, bind_first, src=None, port=53):
    qid, q = dns_query(name)
    with socket.socket(family_of(server), socket.SOCK_DGRAM) as s:
        s.settimeout(3)
        if bind_first or src:
            bind_any(s, server, src)
        if connect:
            s.connect((server, port))
            s.send(q)
        else:
            s.sendto(q, (server, port))
        data, frm = s.recvfrom(4096)
        if frm[0] != server or frm[1] != port:
            return "bad-source %s:%d" % (frm[0], frm[1])
        return dns_answer(data, qid)


def bind(addr):
    with socket.socket(family_of(addr), socket.SOCK_DGRAM) as s:
        s.bind((addr, 0))
        return "ok"


def pktinfo(src, host, port):
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        # struct in_pktinfo {ifindex, spec_dst, addr}; IP_PKTINFO is 8 on Linux
        info = struct.pack("I4s4s", 0, socket.inet_aton(src), b"\0" * 4)
        s.sendmsg([b"fastwall-probe"], [(socket.IPPROTO_IP, 8, info)], 0,
                  (host, port))
        return "sent"


def keep_child(s, cgroup, host, port):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            join(cgroup)
            got = udp_send(s, host, port)
        except Exception as exc:  # reported to the parent
            got = result_of(exc)
        os.write(w, got.encode())
        os._exit(0)
    os.close(w)
    got = os.read(r, 256).decode() or "child-died"
    os.close(r)
    os.waitpid(pid, 0)
    return got


def keep_dns(s, server, name):
    qid, q = dns_query(name)
    s.settimeout(3)
    s.sendto(q, (server, 53))
    data, frm = s.recvfrom(4096)
    if frm[0] != server or frm[1] != 53:
        return "bad-source %s:%d" % (frm[0], frm[1])
    return dns_answer(data, qid)


def keep():
    socks = {}
    for line in sys.stdin:
        w = line.split()
        try:
            if w[0] == "join":
                join(w[1])
                got = "ok"
            else:
                host = w[1] if w[0] == "dns" else w[-2]
                fam = family_of(host)
                if fam not in socks:
                    socks[fam] = socket.socket(fam, socket.SOCK_DGRAM)
                if w[0] == "dns":
                    got = keep_dns(socks[fam], host, w[2])
                elif w[0] == "send":
                    got = udp_send(socks[fam], host, int(w[-1]))
                else:
                    got = keep_child(socks[fam], w[1], host, int(w[-1]))
        except Exception as exc:  # the outcome is what we report
            got = result_of(exc)
        print(got, flush=True)
    return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode")
    ap.add_argument("args", nargs="*")
    ap.add_argument("--want", required=True)
    ap.add_argument("--uid", type=int)
    ap.add_argument("--connect", action="store_true")
    ap.add_argument("--tcp", action="store_true")
    ap.add_argument("--bind", action="store_true")
    ap.add_argument("--src")
    ap.add_argument("--port", type=int, default=53)
    a = ap.parse_args()
    if a.mode == "keep":
        sys.exit(keep())
    try:
        if a.mode == "tcp":
            got = tcp(a.args[0], int(a.args[1]))
        elif a.mode == "udp":
            got = udp(a.args[0], int(a.args[1]))
        elif a.mode == "raw":
            got = raw()
        elif a.mode == "packet":
            got = packet()
        elif a.mode == "ping":
            got = ping(a.args[0])
        elif a.mode == "before":
            got = before(a.args[0], a.args[1], int(a.args[2]))
        elif a.mode == "subcgroup":
            got = subcgroup(a.args[0], int(a.args[1]))
        elif a.mode == "dns" and a.tcp:
            got = dns_tcp(a.args[0], a.args[1], a.bind)
        elif a.mode == "dns":
            got = dns(a.args[0], a.args[1], a.connect, a.bind, a.src, a.port)
        elif a.mode == "bind":
            got = bind(a.args[0])
        elif a.mode == "pktinfo":
            got = pktinfo(a.args[0], a.args[1], int(a.args[2]))
        elif a.mode == "request":
            got = request(a.args[0], a.args[1], a.uid)
        else:
            ap.error("unknown mode " + a.mode)
    except Exception as exc:  # the outcome is what we report
        got = result_of(exc)
    print(got)
    sys.exit(0 if got == a.want else 1)


if __name__ == "__main__":
    main()
