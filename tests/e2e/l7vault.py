#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""A test writer of the credential vault maps the layer-7 proxy reads
(include/fastwall/l7vault.h), for tests/e2e/l7-inject-http.sh: the blob
encoded from the header's layout alone (fastwalld's encoder is another),
written with the bpf() system call (a blob is 128 KiB, too long for a
bpftool command line) in the header's order: the blob, then the
generation; a delete zeroes the generation, then deletes the blob.

  put PIN SUBJECT GENERATION BINDINGS-JSON
      BINDINGS-JSON: a list of {"auth": "apiKey"|"bearer"|"basic", "name",
      "header", "value", "hosts": [...], "schemes": ["http", "https"],
      "ports": [...], "methods": [...], "paths": [...]}; a list left out
      is absent (schemes absent: 0, https only)
  put-raw PIN SUBJECT GENERATION HEX   a blob of these bytes, as they are
  delete PIN SUBJECT
  launch PIN REPORT-SOCK -- CMD...     CMD the way fastwalld starts the proxy:
                                       the four pinning maps read-only as fds
                                       3-6, a datagram socket connected to
                                       REPORT-SOCK as fd 7, the two vault
                                       maps read-only as fds 8 and 9
  seeds DIR                            the fuzz target's seed blobs
"""
import ctypes
import json
import os
import struct
import sys

MAGIC = 0x564C5746
VERSION = 1
DATA = 128 * 1024 - 16
AUTH = {"apiKey": 1, "bearer": 2, "basic": 3}
SCHEME = {"http": 1, "https": 2}

BPF_MAP_UPDATE_ELEM = 2
BPF_MAP_DELETE_ELEM = 3
BPF_OBJ_GET = 7
BPF_F_RDONLY = 1 << 3
NR_BPF = 321  # x86_64

libc = ctypes.CDLL(None, use_errno=True)


def bpf(cmd, attr):
    buf = ctypes.create_string_buffer(attr, len(attr))
    r = libc.syscall(NR_BPF, cmd, buf, len(attr))
    if r < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return r


def obj_get(path, flags=0):
    p = ctypes.create_string_buffer(path.encode())
    return bpf(BPF_OBJ_GET, struct.pack("<QII", ctypes.addressof(p), 0, flags) + bytes(112))


def update(fd, key, value):
    k = ctypes.create_string_buffer(key, len(key))
    v = ctypes.create_string_buffer(value, len(value))
    bpf(BPF_MAP_UPDATE_ELEM, struct.pack("<IIQQQ", fd, 0, ctypes.addressof(k),
                                         ctypes.addressof(v), 0) + bytes(96))


def delete(fd, key):
    k = ctypes.create_string_buffer(key, len(key))
    try:
        bpf(BPF_MAP_DELETE_ELEM, struct.pack("<IIQ", fd, 0, ctypes.addressof(k)) + bytes(112))
    except FileNotFoundError:
        pass


def strings(items):
    out = b""
    for s in items:
        b = s.encode() if isinstance(s, str) else s
        out += struct.pack("<H", len(b)) + b
    return out


def record(b):
    """struct fw_l7_vault_rec, then the ports, name, header, value and the
    host, method and path lists, as l7vault.h orders them."""
    ports = b.get("ports", [])
    hosts, methods, paths = b.get("hosts", []), b.get("methods", []), b.get("paths", [])
    name, header, value = (b[k].encode() for k in ("name", "header", "value"))
    schemes = 0
    for s in b.get("schemes", []):
        schemes |= SCHEME[s]
    body = (struct.pack("<%dH" % len(ports), *ports) + name + header + value +
            strings(hosts) + strings(methods) + strings(paths))
    head = struct.pack("<IBBBBBBHHI", 18 + len(body), AUTH[b["auth"]], schemes,
                       len(ports), len(hosts), len(methods), len(paths),
                       len(name), len(header), len(value))
    assert len(head) == 18
    return head + body


def encode(bindings):
    return struct.pack("<IHH", MAGIC, VERSION, len(bindings)) + b"".join(
        record(b) for b in bindings)


def put(pin, subject, generation, data):
    assert len(data) <= DATA
    vaults = obj_get(f"{pin}/fastwall_l7_vaults")
    gens = obj_get(f"{pin}/fastwall_l7_vault_gen")
    key = struct.pack("<I", subject)
    blob = struct.pack("<QII", generation, len(data), 0) + data + bytes(DATA - len(data))
    update(vaults, key, blob)
    update(gens, key, struct.pack("<Q", generation))


def remove(pin, subject):
    vaults = obj_get(f"{pin}/fastwall_l7_vaults")
    gens = obj_get(f"{pin}/fastwall_l7_vault_gen")
    key = struct.pack("<I", subject)
    update(gens, key, struct.pack("<Q", 0))
    delete(vaults, key)


def launch(pin, report_sock, cmd):
    import fcntl
    import socket
    names = ["fastwall_l7_nat", "fastwall_learned", "fastwall_learned_names",
             "fastwall_names"]
    fds = [obj_get(f"{pin}/{n}", BPF_F_RDONLY) for n in names]
    r = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    r.connect(report_sock)
    fds.append(r.detach())
    fds += [obj_get(f"{pin}/{n}", BPF_F_RDONLY)
            for n in ("fastwall_l7_vaults", "fastwall_l7_vault_gen")]
    # onto 3..9, in order, inheritable (through fds out of that range)
    tmp = [fcntl.fcntl(f, fcntl.F_DUPFD, 100) for f in fds]
    for f in fds:
        os.close(f)
    for i, f in enumerate(tmp):
        os.dup2(f, 3 + i, inheritable=True)
        os.close(f)
    os.execvp(cmd[0], cmd)


def seeds(d):
    os.makedirs(d, exist_ok=True)
    api = {"auth": "apiKey", "name": "api", "header": "X-Api-Key", "value": "k",
           "hosts": ["api.example.com"]}
    full = {"auth": "bearer", "name": "gh", "header": "Authorization",
            "value": "Bearer t", "hosts": ["*.github.com", "github.com"],
            "schemes": ["http", "https"], "ports": [443, 8443],
            "methods": ["GET", "POST"], "paths": ["/v1/*", "/login"]}
    cases = {"empty": [], "api": [api], "full": [full], "two": [api, full]}
    for name, bindings in cases.items():
        with open(os.path.join(d, name), "wb") as f:
            f.write(encode(bindings))
    # a record longer than its known fields (a later version's)
    r = bytearray(record(api) + b"\x01\x02\x03")
    r[0:4] = struct.pack("<I", len(r))
    with open(os.path.join(d, "tail"), "wb") as f:
        f.write(struct.pack("<IHH", MAGIC, VERSION, 1) + bytes(r))


def main():
    cmd, a = sys.argv[1], sys.argv[2:]
    if cmd == "put":
        put(a[0], int(a[1]), int(a[2]), encode(json.loads(a[3])))
    elif cmd == "put-raw":
        put(a[0], int(a[1]), int(a[2]), bytes.fromhex(a[3]))
    elif cmd == "delete":
        remove(a[0], int(a[1]))
    elif cmd == "launch":
        launch(a[0], a[1], a[a.index("--") + 1:])
    elif cmd == "seeds":
        seeds(a[0])
    else:
        sys.exit(f"l7vault.py: unknown command {cmd}")


if __name__ == "__main__":
    main()
