#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# The JSON Schemas of the configuration and the policy
# (scripts/gen-schema.py, from fastwalld's key tables) against every
# example in the repository, with python3-jsonschema: the example config
# of deploy/, the configs embedded in the Kubernetes manifests, the YAML
# blocks of docs/ that are fastwalld configs, the policy JSON examples
# written inline in docs/, and the fuzz seeds of the config and policy
# parsers. For each, the schema must agree with `fastwalld check`: what
# fastwalld accepts the schema accepts, the seeds fastwalld refuses the
# schema refuses. A table of invalid configs and policies must fail both.
# The keys of the hand-written tables of docs/config.md (subjects[],
# policy, rules, overlay) must be the schema's. Needs no root.
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$ROOT/$BUILD ;; esac
if [ -x /usr/bin/python3 ]; then PY=/usr/bin/python3; else PY=python3; fi
FASTWALLD=$BUILD/fastwalld
[ -x "$FASTWALLD" ] || { echo "fatal: $FASTWALLD missing: run make all" >&2; exit 1; }
"$PY" -c 'import yaml, jsonschema' 2>/dev/null ||
	{ echo "fatal: python3-yaml and python3-jsonschema needed (scripts/install-deps.sh)" >&2; exit 1; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$ROOT" || exit 1
"$PY" scripts/gen-schema.py "$FASTWALLD" "$T/schema" || { echo "fatal: gen-schema.py failed" >&2; exit 1; }

"$PY" - "$FASTWALLD" "$T" <<'PYEOF'
import glob
import json
import os
import re
import subprocess
import sys

import jsonschema
import yaml

fastwalld, tmp = sys.argv[1:]
passed = failed = 0
V = jsonschema.Draft202012Validator
cfg_schema = json.load(open(os.path.join(tmp, "schema", "fastwalld-config.schema.json")))
pol_schema = json.load(open(os.path.join(tmp, "schema", "fastwall-policy.schema.json")))


def check(desc, cond, detail=""):
    global passed, failed
    if cond:
        print(f"ok - {desc}")
        passed += 1
    else:
        print(f"not ok - {desc}" + (f": {detail}" if detail else ""))
        failed += 1


for name, s in (("config", cfg_schema), ("policy", pol_schema)):
    try:
        V.check_schema(s)
        check(f"the {name} schema is a valid draft 2020-12 schema", True)
    except jsonschema.SchemaError as e:
        check(f"the {name} schema is a valid draft 2020-12 schema", False, e.message)
cfg_v, pol_v = V(cfg_schema), V(pol_schema)
n = 0


def daemon_ok(text):
    """fastwalld check's verdict on a config text"""
    global n
    n += 1
    path = os.path.join(tmp, f"c{n}.yaml")
    with open(path, "w") as f:
        f.write(text)
    r = subprocess.run([fastwalld, "-c", path, "check"], capture_output=True, text=True)
    return r.returncode == 0, (r.stdout + r.stderr).strip()


def policy_config(pol_text):
    # a policy is checked by fastwalld as a static subject's (JSON is YAML)
    return ("subjects:\n  - name: p\n    addresses: [192.0.2.2]\n    policy: "
            + " ".join(pol_text.split()) + "\n")


def errors(v, doc):
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in v.iter_errors(doc)]


def valid_config(desc, text):
    ok, out = daemon_ok(text)
    check(f"{desc}: fastwalld check accepts it", ok, out)
    errs = errors(cfg_v, yaml.safe_load(text))
    check(f"{desc}: the schema accepts it", not errs, errs[:3])


def valid_policy(desc, text):
    ok, out = daemon_ok(policy_config(text))
    check(f"{desc}: fastwalld accepts it", ok, out)
    errs = errors(pol_v, json.loads(text))
    check(f"{desc}: the policy schema accepts it", not errs, errs[:3])


# --- every example that is meant to be valid ----------------------------------
valid_config("deploy/fastwalld.yaml", open("deploy/fastwalld.yaml").read())
for m in sorted(glob.glob("deploy/*.yaml")):
    for d in yaml.safe_load_all(open(m)):
        if d and d.get("kind") == "ConfigMap" and "fastwalld.yaml" in d.get("data", {}):
            valid_config(f"{m} ({d['metadata']['name']})", d["data"]["fastwalld.yaml"])
top = set(cfg_schema["properties"])
skipped = 0
for doc in sorted(glob.glob("docs/*.md")) + ["README.md"]:
    text = open(doc).read()
    for i, block in enumerate(re.findall(r"^```yaml\n(.*?)^```", text, re.S | re.M)):
        d = yaml.safe_load(block)
        # Prometheus scrape configs and the like are not fastwalld's
        if isinstance(d, dict) and set(d) <= top:
            valid_config(f"{doc} YAML block {i + 1}", block)
        else:
            skipped += 1
    for i, pol in enumerate(re.findall(r'`(\{"defaultAction".*?\})`', text, re.S)):
        valid_policy(f"{doc} inline policy {i + 1}", pol)
print(f"# {skipped} YAML blocks of docs/ are not fastwalld configs")

# the fuzz seeds: a seed fastwalld accepts is an example; one it refuses
# is a bad input the schema must refuse too (unless YAML itself can't read it)
for seed in sorted(glob.glob("tests/fuzz/seeds/config/*.yaml")):
    text = open(seed).read()
    ok, out = daemon_ok(text)
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError:
        check(f"{seed}: refused by fastwalld and unreadable as YAML", not ok, out)
        continue
    errs = errors(cfg_v, doc)
    check(f"{seed}: schema and fastwalld agree ({'valid' if ok else 'invalid'})",
          ok == (not errs), errs[:3] if ok else out)
for seed in sorted(glob.glob("tests/fuzz/seeds/policy_json/*.json")):
    text = open(seed).read()
    ok, out = daemon_ok(policy_config(text))
    errs = errors(pol_v, json.loads(text))
    check(f"{seed}: schema and fastwalld agree ({'valid' if ok else 'invalid'})",
          ok == (not errs), errs[:3] if ok else out)

# --- invalid ones: both refuse ---------------------------------------------------
BAD_CONFIGS = [
    ("an unknown log level", "log_level: loud\n"),
    ("a relative bpffs", "datapath: {bpffs: fastwall}\n"),
    ("a typo of a key", "metrics: {listne: 127.0.0.1:9464}\n"),
    ("a timeout below its minimum", "dns: {timeout: 0}\n"),
    ("too many DNS workers", "dns: {workers: 17}\n"),
    ("a local port of another protocol", 'datapath: {local_ports: ["sctp/9"]}\n'),
    ("events given as a number", "datapath: {events: 5}\n"),
    ("a guarded port above 65535", "guard: {interfaces: [eth0], ports: [70000]}\n"),
    ("subjects as a mapping", "subjects: {name: a, addresses: [192.0.2.2]}\n"),
    ("a subject with neither addresses nor cgroup", "subjects: [{name: a}]\n"),
    ("keep_caps on a subject without a cgroup",
     "processes: {}\nsubjects: [{name: a, addresses: [192.0.2.2], keep_caps: true}]\n"),
    ("a subject in an unknown state",
     "subjects: [{name: a, addresses: [192.0.2.2], state: paused}]\n"),
    ("a subject with an unknown key",
     "subjects: [{name: a, addresses: [192.0.2.2], adresses: [192.0.2.3]}]\n"),
    ("a MAC of five bytes",
     "subjects: [{name: a, addresses: [192.0.2.2], interface: sb-a, mac: '02:00:5e:10:00'}]\n"),
]
for desc, text in BAD_CONFIGS:
    ok, out = daemon_ok(text)
    check(f"invalid config ({desc}): fastwalld check refuses it", not ok, out)
    check(f"invalid config ({desc}): the schema refuses it",
          bool(errors(cfg_v, yaml.safe_load(text))))
BAD_POLICIES = [
    ("a rule without a target", '{"egress": [{"action": "allow"}]}'),
    ("an unknown action", '{"defaultAction": "permit"}'),
    ("port 0", '{"egress": [{"target": "192.0.2.0/24", "ports": [0]}]}'),
    ("a port twice", '{"egress": [{"target": "192.0.2.0/24", "ports": [80, 80]}]}'),
    ("ports as a number", '{"egress": [{"target": "192.0.2.0/24", "ports": 80}]}'),
    ("a bare * target", '{"egress": [{"action": "allow", "target": "*"}]}'),
]
for desc, text in BAD_POLICIES:
    ok, out = daemon_ok(policy_config(text))
    check(f"invalid policy ({desc}): fastwalld refuses it", not ok, out)
    check(f"invalid policy ({desc}): the policy schema refuses it",
          bool(errors(pol_v, json.loads(text))))

# --- the hand-written tables of docs/config.md name the schema's keys -------------
md = open("docs/config.md").read()


def table_keys(heading, nth=0):
    sec = md.split(heading + "\n", 1)[1].split("\n## ", 1)[0].split("\n### ", 1)[0]
    tables = re.findall(r"((?:^\|.*\n)+)", sec, re.M)
    return {m for m in re.findall(r"^\| `([^`]+)` \|", tables[nth], re.M)}


defs = cfg_schema["$defs"]
overlay = cfg_schema["properties"]["overlay"]["properties"]
for desc, got, want in (
        ("subjects[]", table_keys("### `subjects[]`"), set(defs["subject"]["properties"])),
        ("subjects[].policy", table_keys("### `subjects[].policy`"),
         set(defs["policy"]["properties"])),
        ("a policy rule", table_keys("### `subjects[].policy`", 1), set(defs["rule"]["properties"])),
        ("overlay", table_keys("### `overlay`"), set(overlay))):
    check(f"docs/config.md's {desc} table lists the schema's keys", got == want,
          f"docs only: {sorted(got - want)}, schema only: {sorted(want - got)}")
check("the policy schema is the config's subject policy",
      pol_schema["properties"] == defs["policy"]["properties"]
      and pol_schema["$defs"]["rule"] == defs["rule"])

print(f"schema: {passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
PYEOF
