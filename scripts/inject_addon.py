# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
"""mitmproxy addon for scripts/bench-inject.sh: credential injection the way
the reference's engine does it, so the benchmark compares fastwalld's proxy
with a mitmproxy doing the same work.

  mitmdump -s scripts/inject_addon.py --set inject_vault=VAULT.json ...

VAULT.json is the body of a credential-vault push (docs/protocol.md):
{"credentials": [{"name", "source": {"type": "inline", "value"}}],
 "bindings": [{"name", "match": {"schemes", "ports", "hosts", "methods",
 "paths"}, "auth": {"type": "apiKey"|"bearer"|"basic", "name",
 "credential"}}]}. On each request the first binding that matches sets its
header, every value the client sent under that name replaced; a request
no binding matches passes unchanged. Matching is fastwalld's (egress-l7.md,
"Credentials"): hosts exact (any case) or "*.domain" (a name strictly under
domain); ports the destination port (none: any); schemes none: https only;
methods none: any; paths none: any, else the path without its query exact,
or a prefix when the pattern ends in "*".
"""
import base64
import json

from mitmproxy import ctx


def host_matches(pattern, host):
    pattern = pattern.lower()
    if pattern.startswith("*."):
        return host.endswith(pattern[1:]) and len(host) > len(pattern) - 1
    return host == pattern


def path_matches(pattern, path):
    if pattern.endswith("*"):
        return path.startswith(pattern[:-1])
    return path == pattern


class Binding:
    def __init__(self, b, creds):
        m = b.get("match") or {}
        auth = b["auth"]
        value = creds[auth["credential"]]
        kind = auth.get("type", "apiKey")
        if kind == "bearer":
            self.header, self.value = "Authorization", "Bearer " + value
        elif kind == "basic":
            self.header = "Authorization"
            self.value = "Basic " + base64.b64encode(value.encode()).decode()
        else:
            self.header, self.value = auth["name"], value
        self.schemes = [s.lower() for s in m.get("schemes") or ["https"]]
        self.ports = [int(p) for p in m.get("ports") or []]
        self.hosts = [h.lower() for h in m.get("hosts") or []]
        self.methods = [x.upper() for x in m.get("methods") or []]
        self.paths = list(m.get("paths") or [])

    def matches(self, scheme, port, host, method, path):
        return (scheme in self.schemes
                and (not self.ports or port in self.ports)
                and any(host_matches(h, host) for h in self.hosts)
                and (not self.methods or method in self.methods)
                and (not self.paths or any(path_matches(p, path) for p in self.paths)))


class Inject:
    def __init__(self):
        self.bindings = []

    def load(self, loader):
        loader.add_option("inject_vault", str, "",
                          "a credential-vault body (JSON) whose bindings are injected")

    def configure(self, updated):
        if "inject_vault" not in updated or not ctx.options.inject_vault:
            return
        with open(ctx.options.inject_vault, encoding="utf-8") as f:
            vault = json.load(f)
        creds = {c["name"]: c["source"]["value"] for c in vault.get("credentials", [])}
        self.bindings = [Binding(b, creds) for b in vault.get("bindings", [])]

    def request(self, flow):
        req = flow.request
        host = (req.host_header or req.host or "").split(":")[0].lower().rstrip(".")
        path = req.path.split("?", 1)[0]
        for b in self.bindings:
            if b.matches(req.scheme, req.port, host, req.method.upper(), path):
                req.headers[b.header] = b.value  # replaces every value sent
                return


addons = [Inject()]
