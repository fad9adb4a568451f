#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Layer-7 pinning of process sandboxes without the real proxy
(tests/e2e/cgroup-l7.sh): the maps written and read with the bpf(2)
system call, raw bytes in the layouts of fastwall/abi.h, and a stand-in
for the proxy.

  cgroup_l7.py config PIN --set FLAGS --clear FLAGS
      ORs and clears fw_config.flags in PIN/fastwall_config.
  cgroup_l7.py port PIN PORT PROXY KIND
      writes fastwall_l7_ports {TCP, PORT} -> {PROXY, KIND (1 TLS, 2 HTTP)}.
  cgroup_l7.py subject PIN CGROUP_ID FLAGS
      ORs FLAGS into fw_subject.flags of the cgroup's fastwall_cgroups value.
  cgroup_l7.py proxy-ports MAP_ID PORT...
      writes the cgroup programs' .bss (fw_cg_l7_proxy), map MAP_ID.
  cgroup_l7.py serve PIN PORT LOG
      listens on 127.0.0.1 and ::1 port PORT (the proxy's), and answers
      each connection with the fastwall_l7_nat entry of its peer,
      "ADDR PORT SUBJECT KIND FAMILY" (or "none"), then closes it; one
      line per connection in LOG.
  cgroup_l7.py connect HOST PORT
      connects (in the caller's sandbox), prints "PEER | ANSWER": what
      getpeername says and the first line the far end sends.
"""
import ctypes
import errno
import ipaddress
import os
import select
import socket
import struct
import sys

BPF_MAP_LOOKUP_ELEM = 1
BPF_MAP_UPDATE_ELEM = 2
BPF_OBJ_GET = 7
BPF_MAP_GET_FD_BY_ID = 14
NR_BPF = 321  # x86_64
libc = ctypes.CDLL(None, use_errno=True)


def bpf(cmd, attr):
    buf = ctypes.create_string_buffer(attr, 128)
    r = libc.syscall(NR_BPF, cmd, buf, 128)
    if r < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return r


def pinned(path):
    p = ctypes.create_string_buffer(path.encode())
    return bpf(BPF_OBJ_GET, struct.pack("QII", ctypes.addressof(p), 0, 0))


def by_id(map_id):
    return bpf(BPF_MAP_GET_FD_BY_ID, struct.pack("III", map_id, 0, 0))


def lookup(fd, key, size):
    k = ctypes.create_string_buffer(key, len(key))
    v = ctypes.create_string_buffer(size)
    bpf(BPF_MAP_LOOKUP_ELEM, struct.pack("IIQQQ", fd, 0, ctypes.addressof(k),
                                          ctypes.addressof(v), 0))
    return v.raw


def update(fd, key, value):
    k = ctypes.create_string_buffer(key, len(key))
    v = ctypes.create_string_buffer(value, len(value))
    bpf(BPF_MAP_UPDATE_ELEM, struct.pack("IIQQQ", fd, 0, ctypes.addressof(k),
                                          ctypes.addressof(v), 0))


def ip16(addr):
    a = ipaddress.ip_address(addr)
    return (b"\0" * 10 + b"\xff\xff" + a.packed) if a.version == 4 else a.packed


def text16(b):
    if b[:12] == b"\0" * 10 + b"\xff\xff":
        return str(ipaddress.ip_address(b[12:16]))
    return str(ipaddress.ip_address(b))


def cmd_config(pin, args):
    on = off = 0
    for i in range(0, len(args), 2):
        if args[i] == "--set":
            on |= int(args[i + 1], 0)
        elif args[i] == "--clear":
            off |= int(args[i + 1], 0)
    fd = pinned(pin + "/fastwall_config")
    v = bytearray(lookup(fd, b"\0" * 4, 40))  # struct fw_config
    flags = (struct.unpack_from("<I", v)[0] | on) & ~off
    struct.pack_into("<I", v, 0, flags)
    update(fd, b"\0" * 4, bytes(v))


def cmd_port(pin, port, proxy, kind):
    fd = pinned(pin + "/fastwall_l7_ports")
    update(fd, struct.pack("!BBH", 6, 0, int(port)), struct.pack("!HBB", int(proxy), int(kind), 0))


def cmd_subject(pin, cgid, flags):
    fd = pinned(pin + "/fastwall_cgroups")
    key = struct.pack("<Q", int(cgid))
    v = bytearray(lookup(fd, key, 80))  # struct fw_subject: flags at 5
    v[5] |= int(flags, 0)
    update(fd, key, bytes(v))


def cmd_proxy_ports(map_id, ports):
    fd = by_id(int(map_id))
    words = [int(p) for p in ports] + [0] * (4 - len(ports))
    update(fd, b"\0" * 4, struct.pack("!4H", *words))


def nat_of(fd, peer, port, proxy):
    key = ip16(peer) + struct.pack("!HH", port, proxy)
    try:
        v = lookup(fd, key, 40)  # struct fw_l7_nat
    except OSError:
        return "none"
    orig_port = struct.unpack_from("!H", v, 16)[0]
    subject = struct.unpack_from("<I", v, 20)[0]
    kind, family = v[32], v[33]
    return "%s %d %d %d %d" % (text16(v[:16]), orig_port, subject, kind, family)


def cmd_serve(pin, port, log):
    fd = pinned(pin + "/fastwall_l7_nat")
    ls = []
    for fam, addr in ((socket.AF_INET, "127.0.0.1"), (socket.AF_INET6, "::1")):
        s = socket.socket(fam, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if fam == socket.AF_INET6:
            s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        s.bind((addr, int(port)))
        s.listen(16)
        ls.append(s)
    print("listening", flush=True)
    while True:
        ready, _, _ = select.select(ls, [], [])
        for s in ready:
            c, peer = s.accept()
            line = nat_of(fd, peer[0], peer[1], int(port))
            with open(log, "a") as f:
                f.write("%s %d -> %s\n" % (peer[0], peer[1], line))
            c.sendall(line.encode() + b"\n")
            c.close()


def cmd_connect(host, port):
    fam = socket.AF_INET6 if ":" in host else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_STREAM)
    s.settimeout(3)
    try:
        s.connect((host, int(port)))
        peer = s.getpeername()
        answer = s.makefile().readline().strip()
        print("%s %d | %s" % (peer[0], peer[1], answer))
    except OSError as e:
        print(errno.errorcode.get(e.errno, type(e).__name__) if e.errno else type(e).__name__)
    finally:
        s.close()


def main():
    a = sys.argv[1:]
    if a[0] == "config":
        cmd_config(a[1], a[2:])
    elif a[0] == "port":
        cmd_port(*a[1:5])
    elif a[0] == "subject":
        cmd_subject(*a[1:4])
    elif a[0] == "proxy-ports":
        cmd_proxy_ports(a[1], a[2:])
    elif a[0] == "serve":
        cmd_serve(*a[1:4])
    elif a[0] == "connect":
        cmd_connect(*a[1:3])
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
