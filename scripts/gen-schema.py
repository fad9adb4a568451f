#!/usr/bin/env python3
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""JSON Schemas of fastwalld's YAML configuration and of the policy JSON.

The scalar keys come from the key tables in the code, through
`fastwalld config-keys --schema` (types, bounds, defaults, enums, docs) and
`fastwalld config-keys --markdown` (every key of every section, the
list-shaped ones included): the same tables docs/config.md is generated
from. What those tables only name (lists, static subjects, the policy) is
described here; a key the tables gain that this file does not describe
stops the build, so the schema never silently lags the code.

The schema follows what fastwalld accepts: a key with an empty value or
null is absent, a single scalar stands for a one-item list where the
daemon allows it, unknown keys are errors except inside a policy and its
rules (where fastwalld warns and ignores them).

usage: gen-schema.py FASTWALLD OUTDIR
writes OUTDIR/fastwalld-config.schema.json, OUTDIR/fastwall-policy.schema.json
"""
import json
import os
import re
import subprocess
import sys

SCHEMA = "https://json-schema.org/draft/2020-12/schema"
BASE_ID = "https://fastwall.invalid/schema/"

ADDR = {"type": "string", "minLength": 2, "maxLength": 45,
        "pattern": "^[0-9A-Fa-f.:]+$", "description": "an IPv4 or IPv6 address"}
CIDR = {"type": "string", "minLength": 2, "maxLength": 49,
        "pattern": "^[0-9A-Fa-f.:]+(/[0-9]{1,3})?$",
        "description": "an address or a CIDR"}
IFNAME = {"type": "string", "minLength": 1, "maxLength": 15,
          "pattern": "^[^/\\s*?\\[]+$", "description": "an interface name"}
IFGLOB = {"type": "string", "minLength": 1, "maxLength": 255,
          "pattern": "^[^/\\s]+$",
          "description": "an interface name (at most 15 characters) or an fnmatch glob"}
PORT = {"type": "integer", "minimum": 1, "maximum": 65535}
ABSPATH = {"type": "string", "minLength": 1, "maxLength": 255, "pattern": "^/"}
TARGET = {"type": "string", "minLength": 1, "maxLength": 253,
          "not": {"const": "*"},
          "description": "an address, a CIDR, a domain or *.domain"}
# "allow", "deny", trimmed, any case; empty means deny
ACTION = {"type": ["string", "null"],
          "pattern": "^\\s*([Aa][Ll][Ll][Oo][Ww]|[Dd][Ee][Nn][Yy])?\\s*$"}


def one_or_list(item, max_items=None, min_items=None):
    """A list of item, or one item alone (fastwalld's one-item shorthand)."""
    arr = {"type": "array", "items": item}
    if max_items is not None:
        arr["maxItems"] = max_items
    if min_items is not None:
        arr["minItems"] = min_items
    return {"anyOf": [item, arr]} if not min_items or min_items <= 1 else arr


# The policy object of the actions protocol, written as YAML in a static
# subject or sent as JSON in a binding's input or a policy push.
RULE = {
    "type": "object",
    "required": ["target"],
    "properties": {
        "action": ACTION,
        "target": TARGET,
        "ports": {"type": ["array", "null"], "items": PORT, "maxItems": 256,
                  "uniqueItems": True},
    },
}
POLICY = {
    "type": ["object", "null"],
    "properties": {
        "defaultAction": ACTION,
        "egress": {"type": ["array", "null"], "items": {"$ref": "#/$defs/rule"},
                   "maxItems": 4096},
        # fastwall's extension: layer-7 pinning of the subject
        "fastwallL7": {"type": ["string", "boolean", "null"],
                       "pattern": "^\\s*([Oo][Nn]|[Oo][Ff][Ff]|[Tt][Rr][Uu][Ee]|[Ff][Aa][Ll][Ss][Ee])\\s*$"},
        # fastwall's extension: the subject's egress rate (docs/bandwidth.md)
        "fastwallBandwidth": {
            "oneOf": [
                {"type": "object", "additionalProperties": False, "required": ["rate"],
                 "properties": {
                     "rate": {"type": "integer", "minimum": 1000, "maximum": 12500000000},
                     "burst": {"type": "integer", "minimum": 65536, "maximum": 4294967296}}},
                {"type": "string", "enum": ["off", "false"]},
                {"type": "boolean", "const": False},
                {"type": "null"}]},
    },
}

SUBJECT = {
    "type": "object",
    "required": ["name"],
    "additionalProperties": False,
    "properties": {
        "name": {"type": "string", "pattern": "^[A-Za-z0-9._-]{1,127}$"},
        "addresses": one_or_list(ADDR, max_items=8),
        "cgroup": {"type": "string", "minLength": 1,
                   "pattern": "^[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*$"},
        "interface": IFNAME,
        "mac": {"type": "string",
                "pattern": "^[0-9A-Fa-f]{2}(:[0-9A-Fa-f]{2}){5}$"},
        "gateway": one_or_list(ADDR, max_items=2),
        "private_cidr": one_or_list(CIDR, max_items=2),
        "state": {"enum": ["active", "denying"]},
        "policy": {"$ref": "#/$defs/policy"},
        "keep_caps": {"type": ["boolean", "null"], "default": False},
        "l7": {"enum": ["on", "off", True, False, None]},
    },
    # a subject has addresses or (a process sandbox) a cgroup, not both
    "oneOf": [
        {"required": ["addresses"], "not": {"required": ["cgroup"]}},
        {"required": ["cgroup"], "not": {"required": ["addresses"]}},
    ],
    # keep_caps (null is absent) is a process sandbox's
    "if": {"required": ["keep_caps"], "properties": {"keep_caps": {"type": "boolean"}}},
    "then": {"required": ["cgroup"]},
}

# Keys the tables name but do not type, by their full name.
SHAPES = {
    "datapath.interfaces": one_or_list(IFGLOB),
    "datapath.bridges": one_or_list(IFNAME),
    "datapath.local_addresses": one_or_list(ADDR, max_items=256),
    "datapath.local_ports": one_or_list(
        {"type": "string", "pattern": "^(tcp|udp)/[0-9]{1,5}$"}, max_items=256),
    "datapath.doh.blocklist": one_or_list(CIDR, max_items=4096),
    "overlay": {"type": "object", "additionalProperties": False,
                "properties": {"deny": one_or_list(TARGET),
                               "allow": one_or_list(TARGET)}},
    "subjects": {"type": "array", "items": {"$ref": "#/$defs/subject"}},
    "dns.upstreams": one_or_list(
        {"type": "string", "pattern": "^(\\[[0-9A-Fa-f:.]+\\]:[0-9]{1,5}|[0-9A-Fa-f:.]+)$"},
        max_items=10),
    "guard.interfaces": one_or_list(IFNAME, min_items=1),
    "guard.ports": one_or_list(PORT, max_items=512, min_items=1),
    "guard.trusted": one_or_list(CIDR, max_items=4096),
    "bandwidth.interfaces": one_or_list(IFNAME, min_items=1),
    "l7.tls_ports": one_or_list(PORT, max_items=64),
    "l7.http_ports": one_or_list(PORT, max_items=64),
    "l7.ca.publish": one_or_list(ABSPATH, max_items=8),
}


def run(fastwalld, *args):
    return subprocess.run([fastwalld, "config-keys", *args], check=True,
                          capture_output=True, text=True).stdout


def sections_of(markdown):
    """{"dns": ["proxy", ...], "": [...top...]} from the generated tables."""
    out, cur = {}, None
    for line in markdown.splitlines():
        m = re.match(r"^### `(.+)`$", line)
        if m:
            cur = "" if m.group(1) == "top" else m.group(1)
            out[cur] = []
            continue
        m = re.match(r"^\| `([^`]+)` \|", line)
        if m and cur is not None:
            out[cur].append(m.group(1))
    return out


def nullable(s):
    """An empty value or null is an absent key."""
    s = dict(s)
    if "$ref" in s or "anyOf" in s:
        return {"anyOf": [{"type": "null"}, s]}
    if "enum" in s:
        s["enum"] = list(s["enum"]) + [None]
        # on/off: a YAML 1.1 reader (the schema's users) loads them as booleans
        if "on" in s["enum"]:
            s["enum"] += [True, False]
        return s
    t = s.get("type")
    if isinstance(t, str):
        s["type"] = [t, "null"]
    return s


def complete(obj, section, sections, errors):
    """Adds the untyped keys of section to obj and closes it to others."""
    props = obj.setdefault("properties", {})
    for key in sections.get(section, []):
        full = f"{section}.{key}" if section else key
        if key in props and full not in SHAPES:
            sub = props[key]
            if sub.get("type") == "object":
                complete(sub, full, sections, errors)
        elif full in SHAPES:
            props[key] = SHAPES[full]
        elif full in sections:
            props[key] = {"type": "object"}
            complete(props[key], full, sections, errors)
        else:
            errors.append(f"{full}: in the key tables but without a schema; "
                          "describe it in scripts/gen-schema.py SHAPES")
    for key in list(props):
        if key not in sections.get(section, []):
            errors.append(f"{section or 'top level'}: '{key}' is not in the key tables")
    obj["additionalProperties"] = False
    for key in props:
        props[key] = nullable(props[key])


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: gen-schema.py FASTWALLD OUTDIR")
    fastwalld, outdir = sys.argv[1:]
    base = json.loads(run(fastwalld, "--schema"))
    sections = sections_of(run(fastwalld, "--markdown"))
    if "" not in sections:
        sys.exit("gen-schema: no top-level table in config-keys --markdown")
    errors = []
    complete(base, "", sections, errors)
    for full in SHAPES:
        sec, _, key = full.rpartition(".")
        if key not in sections.get(sec, []):
            errors.append(f"{full}: described here but not in the key tables")
    if errors:
        sys.exit("gen-schema: " + "\ngen-schema: ".join(errors))

    config = {
        "$schema": SCHEMA,
        "$id": BASE_ID + "fastwalld-config.schema.json",
        "title": "fastwalld configuration (/etc/fastwall/fastwalld.yaml)",
        "$comment": "generated by scripts/gen-schema.py from fastwalld's key tables; "
                    "checks beyond types, bounds and shapes (unique names and "
                    "addresses, dns.port not 53 or 853, the lease rules) are "
                    "fastwalld check's",
        "type": ["object", "null"],
        "properties": base["properties"],
        "additionalProperties": False,
        "$defs": {"subject": SUBJECT, "policy": POLICY, "rule": RULE},
    }
    policy = {
        "$schema": SCHEMA,
        "$id": BASE_ID + "fastwall-policy.schema.json",
        "title": "fastwall egress policy (a binding's input, a policy push, "
                 "fastwall run --policy)",
        "$comment": "generated by scripts/gen-schema.py; unknown keys are "
                    "allowed: fastwalld warns about them and ignores them",
        **POLICY,
        "type": "object",
        "$defs": {"rule": RULE},
    }
    os.makedirs(outdir, exist_ok=True)
    for name, doc in (("fastwalld-config.schema.json", config),
                      ("fastwall-policy.schema.json", policy)):
        tmp = os.path.join(outdir, name + ".tmp")
        with open(tmp, "w", encoding="ascii") as f:
            json.dump(doc, f, indent=1, sort_keys=False)
            f.write("\n")
        os.replace(tmp, os.path.join(outdir, name))


if __name__ == "__main__":
    main()
