#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# The ingress module's directives as its source declares them (the
# ngx_command_t tables of gateway/*.c, with the contexts their flags
# allow) must each have an entry in the man page docs/fastwall-ingress.8
# (under DIRECTIVES, with "Context:" and "Default:") and a row in a
# directive table of docs/ingress.md, both naming the same contexts; and
# neither may list a directive the source lacks. make install must put the
# page beside the other man pages. gateway/sources, the module's source
# list, must name every source of gateway/ and only files that exist.
# Needs no root and no build.
# Prints "ok - ..." / "not ok - ..." per check and "N passed, N failed".
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PY=${FW_PY:-python3}
command -v "$PY" >/dev/null || { echo "fatal: no $PY" >&2; exit 1; }

"$PY" - "$ROOT" <<'EOF'
import re, sys, glob, os

root = sys.argv[1]
passed = failed = 0


def check(ok, what):
    global passed, failed
    print(("ok - " if ok else "not ok - ") + what)
    if ok:
        passed += 1
    else:
        failed += 1


FLAGS = {"NGX_MAIN_CONF": "main", "NGX_HTTP_MAIN_CONF": "http",
         "NGX_HTTP_SRV_CONF": "server", "NGX_HTTP_LOC_CONF": "location",
         "NGX_HTTP_UPS_CONF": "upstream"}
WORDS = set(FLAGS.values())

# a directive: `{ ngx_string("name"),` alone on its line, its flags on the
# next (a variable's entry goes on after the name on the same line)
src = {}
for path in sorted(glob.glob(os.path.join(root, "gateway", "*.c"))):
    lines = open(path).read().split("\n")
    for i, line in enumerate(lines):
        m = re.match(r'\s*\{ ngx_string\("(fastwall[a-z_]*)"\),\s*$', line)
        if m and i + 1 < len(lines):
            flags = re.findall(r"NGX_[A-Z_]*CONF\b", lines[i + 1])
            src[m.group(1)] = {FLAGS[f] for f in flags if f in FLAGS}

check(len(src) >= 20, "the source declares its directives (%d found)" % len(src))


def contexts(text):
    return {w for w in re.findall(r"[a-z]+", text) if w in WORDS}


# the man page: under .SH DIRECTIVES, each .TP's tag line names one
page = open(os.path.join(root, "docs", "fastwall-ingress.8")).read().split("\n")
man = {}
section = None
for i, line in enumerate(page):
    if line.startswith(".SH "):
        section = line[4:].strip()
    if section != "DIRECTIVES" or line != ".TP" or i + 2 >= len(page):
        continue
    m = re.match(r'\.BI?R?\s+"?(fastwall[a-z_]*)', page[i + 1])
    if not m:
        continue
    body = " ".join(page[i + 2:i + 8])
    ctx = re.search(r"Context: (.*?)\. Default:", body)
    man[m.group(1)] = contexts(ctx.group(1)) if ctx else None

# docs/ingress.md: the rows of the tables under a heading with "irectives"
md = {}
heading = ""
for line in open(os.path.join(root, "docs", "ingress.md")).read().split("\n"):
    if line.startswith("#"):
        heading = line
        continue
    cells = [c.strip() for c in re.split(r"(?<!\\)\|", line)]
    if "irectives" not in heading or len(cells) < 4 or cells[0]:
        continue
    m = re.match(r"`(fastwall[a-z_]*)[ `]", cells[1])
    if m:
        md[m.group(1)] = contexts(cells[2])

for d in sorted(src):
    want = ", ".join(sorted(src[d]))
    got = man.get(d, "missing")
    check(got == src[d], "%s: in the man page, context %s%s" %
          (d, want, "" if got == src[d] else " (got %s)" % (got,)))
    got = md.get(d, "missing")
    check(got == src[d], "%s: in docs/ingress.md's tables, context %s%s" %
          (d, want, "" if got == src[d] else " (got %s)" % (got,)))

check(sorted(set(man) - set(src)) == [],
      "the man page lists no directive the source lacks %s" % sorted(set(man) - set(src)))
check(sorted(set(md) - set(src)) == [],
      "docs/ingress.md lists no directive the source lacks %s" % sorted(set(md) - set(src)))

# gateway/sources, the one list of the module's files that gateway/config
# and gateway/gateway.mk read: it names every .c and .h of gateway/, and
# only files that are there
listed = []
try:
    for line in open(os.path.join(root, "gateway", "sources")):
        if line.strip() and not line.startswith("#"):
            listed.append(line.strip())
except OSError as e:
    check(False, "gateway/sources: %s" % e.strerror)
there = sorted(os.path.relpath(p, root)
               for p in glob.glob(os.path.join(root, "gateway", "*.[ch]")))
check(sorted(set(there) - set(listed)) == [] and there != [],
      "gateway/sources names every source of gateway/ %s" % sorted(set(there) - set(listed)))
gone = [f for f in listed if not os.path.isfile(os.path.join(root, f))]
check(gone == [], "every file gateway/sources names exists %s" % gone)

mk = open(os.path.join(root, "Makefile")).read()
check("docs/fastwall-ingress.8 $(DESTDIR)$(PREFIX)/share/man/man8/fastwall-ingress.8" in mk,
      "make install installs the page in man8")

print("%d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
EOF
