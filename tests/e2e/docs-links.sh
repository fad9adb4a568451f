#!/usr/bin/env bash
# SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
# Every relative link of README.md and docs/*.md must resolve: the file
# (or folder) it names exists inside the repository, and its #anchor is a
# heading of that page (GitHub's anchors: lower case, punctuation dropped,
# spaces to hyphens, -1, -2 ... for repeats) or an explicit <a name>/id.
# No link may leave the repository. A section named in words
# (design.md, "Port guard") must be a heading or a bold run-in heading
# of that page. A repository path a page names (tests/e2e/x.sh) exists. Needs no root and no build.
# Prints "ok - PAGE" / "not ok - PAGE: ..." per page and "N passed, N failed".
set -uo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PY=${FW_PY:-python3}
command -v "$PY" >/dev/null || { echo "fatal: no $PY" >&2; exit 1; }

"$PY" - "$ROOT" <<'EOF'
import os, re, sys, glob

root = os.path.realpath(sys.argv[1])
pages = [os.path.join(root, "README.md")] + sorted(glob.glob(os.path.join(root, "docs", "*.md")))
pages += sorted(glob.glob(os.path.join(root, "docs", "*.8")))
anchors_of = {}


def strip_code(text):
    # fenced blocks and inline code hold no links
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    return re.sub(r"`[^`\n]*`", "", text)


def slug(heading):
    h = heading.strip().lower()
    h = re.sub(r"<[^>]+>", "", h)
    h = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", h)
    h = h.replace("`", "")
    h = re.sub(r"[^\w\- ]", "", h)
    return h.replace(" ", "-")


def anchors(path):
    if path in anchors_of:
        return anchors_of[path]
    found, seen = set(), {}
    fence = False
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith("```"):
                fence = not fence
                continue
            if fence:
                continue
            m = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
            if m:
                s = slug(m.group(1))
                n = seen.get(s, 0)
                seen[s] = n + 1
                found.add(s if n == 0 else "%s-%d" % (s, n))
            for a in re.findall(r"<a\s+(?:name|id)=\"([^\"]+)\"", line):
                found.add(a)
    anchors_of[path] = found
    return found


def sections(path):
    # headings and bold run-in headings ("**The answer cache.** ...")
    if path in sections_of:
        return sections_of[path]
    text = open(path, encoding="utf-8").read()
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M).replace("`", "")
    found = set(re.findall(r"^#{1,6}\s+(.*?)\s*$", text, flags=re.M))
    found |= set(re.findall(r"\*\*([^*]+?)\.?\*\*", text))
    sections_of[path] = found
    return found


sections_of = {}
passed = failed = 0
for page in pages:
    text = strip_code(open(page, encoding="utf-8").read())
    bad = []
    links = re.findall(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)", text)
    links += re.findall(r"^\[[^\]]+\]:\s*(\S+)", text, flags=re.M)
    for link in links:
        if re.match(r"^[a-z][a-z0-9+.-]*:", link):
            continue  # http:, https:, mailto:
        target, _, frag = link.partition("#")
        if target:
            path = os.path.realpath(os.path.join(os.path.dirname(page), target))
            if not (path == root or path.startswith(root + os.sep)):
                bad.append(link + " (outside the repository)")
                continue
            if not os.path.exists(path):
                bad.append(link + " (no such file)")
                continue
        else:
            path = page
        if frag and path.endswith(".md") and frag not in anchors(path):
            bad.append(link + " (no such anchor)")
    # a section named in words: [design.md](design.md), "Port guard"
    for m in re.finditer(r"\b([a-z-]+\.md)(?:\]\([^)]*\))?,?\s+\(?\"([^\"]+)\"", text):
        name, sec = m.group(1), " ".join(m.group(2).replace("`", "").split())
        path = os.path.join(os.path.dirname(page), name)
        if not os.path.exists(path):
            path = os.path.join(root, "docs", name)
        if not os.path.exists(path):
            continue  # a file name in passing, not a page reference
        if not any(h == sec or h.startswith(sec + " ") or h.startswith(sec + ":") or h.startswith(sec + ".")
                   for h in sections(path)):
            bad.append('%s, "%s" (no such section)' % (name, sec))
    # a source file named in passing (`tests/e2e/guard.sh`) must exist
    raw = open(page, encoding="utf-8").read()
    for f in sorted(set(re.findall(
            r"\b((?:tests|scripts|deploy|user|bpf|include|ingress|docs)/[\w./-]+"
            r"\.(?:c|h|sh|py|yaml|md|8|svg|service|proto|mk))\b", raw))):
        if not os.path.exists(os.path.join(root, f)):
            bad.append(f + " (no such file in the repository)")
    rel = os.path.relpath(page, root)
    if bad:
        failed += 1
        print("not ok - %s: %s" % (rel, "; ".join(bad)))
    else:
        passed += 1
        print("ok - %s (%d links)" % (rel, len(links)))
print("docs-links: %d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
EOF
