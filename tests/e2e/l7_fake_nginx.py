#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""A stand-in for nginx with fastwall's layer-7 module, for testing how
fastwalld supervises the proxy without the module.

usage: l7_fake_nginx.py --state DIR [nginx's -e FILE] [-p PREFIX] -c CONF

It reads CONF as fastwalld writes it: the ports of its `listen` lines
(IPv4, and IPv6 with `listen [::]:PORT`), the descriptors of
`fastwall_l7_maps fd:A,B,C,D;` and `fastwall_l7_report fd:N;`, and with
credential injection `fastwall_l7_vaults fd:V,G;` and `fastwall_l7_ca
fd:C;`. It writes DIR/start.PID, one `key value` a line: its uid, its
effective and ambient capabilities, whether each map descriptor is a BPF
map opened read-only, whether the report descriptor is a datagram socket,
and of the CA descriptor (read to its end, as the
module does) whether it is a pipe, how many certificates came first and
whether a private key followed them (never the key itself). Then it accepts
on every port (a probe's connect) and closes each connection at once.

Signals: SIGQUIT and SIGTERM end it (status 0; DIR/stop.PID says which);
SIGUSR1 sends the reports of DIR/reports, one a line:
  verdict REASON SUBJECT CLIENT CPORT DST DPORT tls|http NAME
  close CLIENT CPORT DST DPORT tls|http UP DOWN
as struct fw_l7_report datagrams on the report descriptor (REASON is the
number of enum fw_l7_reason)."""
import os
import re
import select
import signal
import socket
import struct
import sys

KINDS = {"tls": 1, "http": 2}
NAME_SZ = 256
REPORT_SZ = 336


def ip16(text):
    if ":" in text:
        return socket.inet_pton(socket.AF_INET6, text), 1
    return b"\0" * 10 + b"\xff\xff" + socket.inet_aton(text), 0


def report(typ, kind, subject, reason, client, cport, dst, dport, up=0, down=0, name=""):
    c, _ = ip16(client)
    d, fam = ip16(dst)
    b = struct.pack("=HBBIIB3x", 1, typ, KINDS[kind], subject, reason, fam)
    b += c + d + struct.pack(">HH", cport, dport) + b"\0" * 4
    b += struct.pack("=QQQ", up, down, 0)
    b += name.encode()[:NAME_SZ - 1].ljust(NAME_SZ, b"\0")
    assert len(b) == REPORT_SZ
    return b


def send_reports(state, fd):
    path = os.path.join(state, "reports")
    if not os.path.exists(path):
        return
    s = socket.socket(fileno=os.dup(fd))
    with open(path) as f:
        for line in f:
            w = line.split()
            if not w:
                continue
            if w[0] == "verdict":
                r = report(1, w[7], int(w[2]), int(w[1]), w[3], int(w[4]), w[5], int(w[6]),
                           name=w[8] if len(w) > 8 else "")
            else:
                r = report(2, w[5], 0, 0, w[1], int(w[2]), w[3], int(w[4]), int(w[6]),
                           int(w[7]))
            s.send(r)
    s.detach()


def status_caps():
    caps = {}
    with open("/proc/self/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("CapEff", "CapAmb", "CapPrm"):
                caps[k] = int(v.strip(), 16)
    return caps


def map_ro(fd):
    try:
        if os.readlink(f"/proc/self/fd/{fd}") != "anon_inode:bpf-map":
            return "not-a-map"
        with open(f"/proc/self/fdinfo/{fd}") as f:
            for line in f:
                if line.startswith("flags:"):
                    return "ro" if int(line.split()[1], 8) & 3 == 0 else "rw"
    except OSError:
        return "closed"
    return "unknown"


def ca_pipe(fd):
    """what the module would read on its CA descriptor: never the key"""
    try:
        kind = "pipe" if os.readlink(f"/proc/self/fd/{fd}").startswith("pipe:") else "other"
    except OSError:
        return {"ca": "closed"}
    data = b""
    while True:
        ready, _, _ = select.select([fd], [], [], 2)
        if not ready:
            return {"ca": kind, "ca_eof": "no"}
        chunk = os.read(fd, 65536)
        if not chunk:
            break
        data += chunk
    os.close(fd)
    key_at = data.find(b"-----BEGIN PRIVATE KEY-----")
    head = data[:key_at] if key_at >= 0 else data
    return {"ca": kind, "ca_eof": "yes", "ca_certs": head.count(b"-----BEGIN CERTIFICATE-----"),
            "ca_key": "yes" if key_at > 0 and data.count(b"-----END PRIVATE KEY-----") == 1
            else "no"}


def main():
    args = sys.argv[1:]
    state = args[args.index("--state") + 1]
    conf = args[args.index("-c") + 1]
    with open(conf) as f:
        text = f.read()
    maps = [int(x) for x in re.search(r"fastwall_l7_maps fd:([0-9,]+);", text).group(1).split(",")]
    rfd = int(re.search(r"fastwall_l7_report fd:([0-9]+);", text).group(1))
    try:
        rtype = socket.socket(fileno=os.dup(rfd)).type
        rsock = "dgram" if rtype == socket.SOCK_DGRAM else str(rtype)
    except OSError:
        rsock = "closed"
    listeners = []
    for v6, port in re.findall(r"listen (\[::\]:)?([0-9]+);", text):
        fam = socket.AF_INET6 if v6 else socket.AF_INET
        s = socket.socket(fam, socket.SOCK_STREAM)
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if v6:
            s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
        s.bind(("::" if v6 else "0.0.0.0", int(port)))
        s.listen(64)
        listeners.append(s)
    vm = re.search(r"fastwall_l7_vaults fd:([0-9]+),([0-9]+);", text)
    vaults = [int(vm.group(1)), int(vm.group(2))] if vm else []
    cm = re.search(r"fastwall_l7_ca fd:([0-9]+);", text)
    ca = ca_pipe(int(cm.group(1))) if cm else {}
    caps = status_caps()
    pid = os.getpid()
    with open(os.path.join(state, f"start.{pid}"), "w") as f:
        f.write(f"uid {os.getuid()}\n")
        f.write(f"cap_eff {caps.get('CapEff', -1):x}\n")
        f.write(f"cap_amb {caps.get('CapAmb', -1):x}\n")
        f.write("maps " + ",".join(map_ro(fd) for fd in maps) + "\n")
        f.write(f"report {rsock}\n")
        f.write(f"listen {len(listeners)}\n")
        if vaults:
            f.write("vaults " + ",".join(map_ro(fd) for fd in vaults) + "\n")
        for k, v in ca.items():
            f.write(f"{k} {v}\n")

    print(f"[notice] {pid}#{pid}: fake nginx listening on {len(listeners)} sockets",
          file=sys.stderr, flush=True)

    flags = {"stop": None, "reports": False}

    def on_stop(signo, _frame):
        flags["stop"] = signal.Signals(signo).name

    def on_usr1(_signo, _frame):
        flags["reports"] = True

    signal.signal(signal.SIGQUIT, on_stop)
    signal.signal(signal.SIGTERM, on_stop)
    signal.signal(signal.SIGUSR1, on_usr1)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    while not flags["stop"]:
        if flags["reports"]:
            flags["reports"] = False
            send_reports(state, rfd)
        ready, _, _ = select.select(listeners, [], [], 0.1)
        for s in ready:
            try:
                c, _ = s.accept()
                c.close()
            except OSError:
                pass
    with open(os.path.join(state, f"stop.{pid}"), "w") as f:
        f.write(f"signal {flags['stop']}\n")
    print(f"[notice] {pid}#{pid}: fake nginx exiting on {flags['stop']}", file=sys.stderr,
          flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
