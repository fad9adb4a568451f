#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""Helpers for the Sandbox Actions end-to-end tests (actions.sh,
actions-restart.sh): envelopes, and reading/writing the pinned maps.

  actions_client.py env OP UID [--rt R] [--att A] [--ip IP] [--veth V]
        [--gw G] [--cidr C] [--input S | --input-null | --no-binding]
        [--gen N] [--hook NAME] [--seq N] [--inv ID]
        [--del PATH]... [--set PATH=JSON]...
      prints one envelope (PATH is dotted, e.g. attachment.network.ip).
  actions_client.py envs
      reads lines of env arguments (shell-quoted) from stdin and prints
      one envelope a line (one process for many envelopes).
  actions_client.py learned-add PIN ID IP [--secs S]
      inserts a learned address for subject ID into PIN/fastwall_learned.
  actions_client.py learned PIN ID
      prints the learned addresses of subject ID, one a line.
  actions_client.py dispatch PIN IP
      prints the subject id dispatch maps IP to, or "none".
"""
import argparse
import ipaddress
import json
import subprocess
import sys
import time

API = "sandbox.fast.io/actions/v1"
HOOKS = {"runtime-ready": ("sandbox.runtime-ready", 1),
         "data-plane-ready": ("sandbox.data-plane-ready", 2)}


def set_path(obj, path, value, delete=False):
    keys = path.split(".")
    for k in keys[:-1]:
        if not isinstance(obj.get(k), dict):
            obj[k] = {}
        obj = obj[k]
    if delete:
        obj.pop(keys[-1], None)
    else:
        obj[keys[-1]] = value


def cmd_env(a):
    net = {}
    if a.ip is not None:
        net["ip"] = a.ip
    if a.gw is not None:
        net["gateway"] = a.gw
    if a.cidr is not None:
        net["privateCidr"] = a.cidr
    if a.veth is not None:
        net["hostVeth"] = a.veth
    e = {"apiVersion": API, "operation": a.op,
         "invocationId": a.inv or "inv-%s-%s-%d" % (a.op, a.uid, time.monotonic_ns()),
         "sandbox": {"uid": a.uid, "name": "sb-" + a.uid, "namespace": "tenant-e2e"},
         "revision": {"specGeneration": a.gen, "runtimeInstanceId": a.rt,
                      "attachmentId": a.att, "routeGeneration": 1},
         "attachment": {"network": net}}
    if a.op == "SET_BINDING" and not a.no_binding:
        e["binding"] = {"input": None if a.input_null else a.input}
    if a.hook:
        name, seq = HOOKS.get(a.hook, (a.hook, 0))
        e["hook"] = {"name": name, "sequence": a.seq if a.seq is not None else seq}
    for p in a.delete:
        set_path(e, p, None, delete=True)
    for s in a.set:
        p, _, v = s.partition("=")
        set_path(e, p, json.loads(v))
    print(json.dumps(e))
    return 0


def ip16(ip):
    addr = ipaddress.ip_address(ip)
    if addr.version == 4:
        return b"\0" * 10 + b"\xff\xff" + addr.packed
    return addr.packed


def hexs(b):
    return [format(x, "02x") for x in b]


def cmd_learned_add(a):
    key = a.id.to_bytes(4, "little") + b"\0" * 4 + ip16(a.ip)
    now = time.monotonic_ns()
    # struct fw_lease: expires_ns, learned_ns, portset 0 (every port), pad
    val = (now + int(a.secs * 1e9)).to_bytes(8, "little") + now.to_bytes(8, "little") + b"\0" * 8
    subprocess.run(["bpftool", "map", "update", "pinned", a.pin + "/fastwall_learned",
                    "key", "hex"] + hexs(key) + ["value", "hex"] + hexs(val), check=True)
    return 0


def dump(pin, name):
    out = subprocess.run(["bpftool", "-j", "map", "dump", "pinned", pin + "/" + name],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out or "[]")


def raw_bytes(v):
    """bpftool prints raw key/value bytes as ["0x0a", ...]."""
    if isinstance(v, list) and all(isinstance(x, str) for x in v):
        return bytes(int(x, 16) for x in v)
    return None


def addr_of(b):
    if b[:12] == b"\0" * 10 + b"\xff\xff":
        return str(ipaddress.ip_address(b[12:16]))
    return str(ipaddress.ip_address(b))


def formatted_addr(f):
    # BTF-formatted struct fw_ip: {"": {"b": [..16 ints..]}} or similar
    if isinstance(f, dict):
        for v in f.values():
            r = formatted_addr(v)
            if r:
                return r
    if isinstance(f, list) and len(f) == 16 and all(isinstance(x, int) for x in f):
        return addr_of(bytes(f))
    return None


def entries(pin, name):
    """(key bytes or formatted dict, value bytes or formatted dict)."""
    for ent in dump(pin, name):
        k = raw_bytes(ent.get("key"))
        v = raw_bytes(ent.get("value"))
        if k is not None:
            yield k, v, None
        elif "formatted" in ent:
            yield None, None, ent["formatted"]
        else:
            yield None, None, ent


def cmd_learned(a):
    for k, _, f in entries(a.pin, "fastwall_learned"):
        if k is not None:
            if int.from_bytes(k[:4], "little") == a.id:
                print(addr_of(k[8:24]))
        else:
            key = f["key"]
            if key.get("subject") == a.id:
                print(formatted_addr(key.get("addr")))
    return 0


def cmd_dispatch(a):
    want = ip16(a.ip)
    for k, v, f in entries(a.pin, "fastwall_dispatch"):
        if k is not None:
            if k[:16] == want:
                print(int.from_bytes(v[:4], "little"))
                return 0
        else:
            if formatted_addr(f["key"]) == addr_of(want):
                print(f["value"]["id"])
                return 0
    print("none")
    return 0


def parser():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("env")
    e.add_argument("op")
    e.add_argument("uid")
    e.add_argument("--rt", default="rt-1")
    e.add_argument("--att", default="sha256:att-1")
    e.add_argument("--ip")
    e.add_argument("--veth")
    e.add_argument("--gw")
    e.add_argument("--cidr")
    e.add_argument("--input", default='{"defaultAction":"deny"}')
    e.add_argument("--input-null", action="store_true")
    e.add_argument("--no-binding", action="store_true")
    e.add_argument("--gen", type=int, default=1)
    e.add_argument("--hook")
    e.add_argument("--seq", type=int)
    e.add_argument("--inv")
    e.add_argument("--del", dest="delete", action="append", default=[])
    e.add_argument("--set", action="append", default=[])
    la = sub.add_parser("learned-add")
    la.add_argument("pin")
    la.add_argument("id", type=int)
    la.add_argument("ip")
    la.add_argument("--secs", type=float, default=60)
    ll = sub.add_parser("learned")
    ll.add_argument("pin")
    ll.add_argument("id", type=int)
    d = sub.add_parser("dispatch")
    d.add_argument("pin")
    d.add_argument("ip")
    sub.add_parser("envs")
    return p


def cmd_envs(p):
    import shlex
    for line in sys.stdin:
        a = p.parse_args(["env"] + shlex.split(line))
        cmd_env(a)
    return 0


def main():
    p = parser()
    a = p.parse_args()
    if a.cmd == "envs":
        return cmd_envs(p)
    return {"env": cmd_env, "learned-add": cmd_learned_add, "learned": cmd_learned,
            "dispatch": cmd_dispatch}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
