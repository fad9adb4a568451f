#!/usr/bin/env python3
"""Tables and plots of scripts/bench-nft.sh (fastwall against nftables).

usage: report.py OUTDIR [all|udp|tcp|cp]

Reads OUTDIR/peers.txt, udp.raw, tcp.raw and cp.raw as bench-nft.sh writes
them, prints the tables (also saved as udp.txt, tcp.txt, cp.txt), and, when
gnuplot is installed, draws rate.svg, tcp.svg and control.svg from .dat
files it writes next to them. Medians and spreads only; never judges a run
as failed.
"""
import os
import shutil
import subprocess
import sys
from collections import defaultdict

KINDS = ("reference", "best", "fastwall")
NAMES = {"reference": "nft reference", "best": "nft best (vmap)", "fastwall": "fastwall"}


def median(v):
    v = sorted(v)
    n = len(v)
    if not n:
        return float("nan")
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def pctl(v, p):
    v = sorted(v)
    if not v:
        return float("nan")
    return v[min(len(v) - 1, int(p / 100 * (len(v) - 1) + 0.5))]


def read_meta(out):
    meta = {}
    try:
        with open(os.path.join(out, "meta.txt")) as f:
            for line in f:
                k, _, v = line.strip().partition("=")
                meta[k] = v
    except OSError:
        pass
    return meta


def read_peers(out):
    peers = []
    with open(os.path.join(out, "peers.txt")) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            label, kind, n, rules, learned, sb, base = line.split()
            peers.append(dict(label=label, kind=kind, n=int(n), rules=int(rules),
                              learned=int(learned), sb=int(sb), base=base))
    return peers


def tee(out, name, lines):
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    with open(os.path.join(out, name), "w") as f:
        f.write(text)


def find(peers, kind, n, rules):
    for p in peers:
        if p["kind"] == kind and p["n"] == n and p["rules"] == rules:
            return p
    return None


def bracket(samples, label, base, value):
    """{round: value / baseline} for every sample of label, the baseline being
    the mean of the base samples measured just before and just after it (by
    sequence number); samples: list of dicts with label, round, seq"""
    bs = sorted((x["seq"], value(x)) for x in samples if x["label"] == base and value(x) > 0)
    out = {}
    for x in samples:
        if x["label"] != label:
            continue
        before = [v for q, v in bs if q < x["seq"]]
        after = [v for q, v in bs if q > x["seq"]]
        near = ([before[-1]] if before else []) + ([after[0]] if after else [])
        if near and value(x) > 0:
            out[x["round"]] = value(x) / (sum(near) / len(near))
    return out


def ratio_of(a, b):
    """per-round a/b (two {round: share} maps)"""
    return [a[r] / b[r] for r in a if r in b and b[r] > 0]


def gnuplot(script, size):
    """runs script once for SVG and once for PNG (its first two lines are
    @TERM@ and @EXT@ stand for the terminal and the file extension)"""
    if not shutil.which("gnuplot"):
        return False
    for term, ext, font in (("svg", "svg", "dynamic font 'sans,11'"), ("pngcairo", "png", "font 'sans,9'")):
        body = script.replace("@TERM@", f"{term} size {size} {font}").replace("@EXT@", ext)
        subprocess.run(["gnuplot"], input=body.encode(), check=True)
    return True


LINE = {"reference": 'lc rgb "#c0392b" pt 7', "best": 'lc rgb "#2471a3" pt 5',
        "fastwall": 'lc rgb "#1e8449" pt 9'}
DASH = {16: "dt 1", 256: "dt 2"}


# --------------------------------------------------------------------- UDP --
def udp(out, peers):
    samples = []
    with open(os.path.join(out, "udp.raw")) as f:
        for line in f:
            x = line.split()
            samples.append(dict(label=x[0], round=int(x[1]), pps=float(x[2]), wall=float(x[3]),
                                share=float(x[4]), seq=int(x[6]), other=float(x[7])))
    rounds = max((x["round"] for x in samples), default=0)
    meta = read_meta(out)
    lines = [
        "Small UDP (64-byte payload) from each peer's sandboxes (one sender thread taking",
        f"them in turn; a new source port on every packet, {meta.get('flows', '?')} distinct flows in all)",
        f"through veth -> bridge -> forward -> veth -> sink; {rounds} interleaved rounds of "
        f"{meta.get('seconds_udp', '?')} s.",
        "pps/core = packets reaching the sink per second of CPU time of the sender and",
        "ksoftirqd on its CPU (median, min-max over rounds). '% none' = median over rounds",
        "of the ratio to the no-filter runs just before and after it (same number of",
        "sandboxes); 'x ref' / 'x best' = median over rounds of the ratio of those shares",
        "to the reference / best nft peer's at the same N and rules. 'other CPU' = how",
        "busy the other CPU was (neighbours), median.",
        "",
        f"{'peer':<26} {'sb':>2} {'pps/core':>9} {'(min-max)':>19} {'% none':>7} "
        f"{'(min-max)':>13} {'x ref':>7} {'x best':>7} {'wall pps':>9} {'CPU':>4} {'other CPU':>9}",
    ]
    pps = lambda x: x["pps"]
    shares = {p["label"]: bracket(samples, p["label"], p["base"], pps) for p in peers}
    res = {}
    for p in peers:
        mine = [x for x in samples if x["label"] == p["label"]]
        rn = list(shares[p["label"]].values())
        if not mine or not rn:
            continue
        ref = find(peers, "reference", p["n"], p["rules"])
        best = find(peers, "best", p["n"], p["rules"])
        xr = median(ratio_of(shares[p["label"]], shares[ref["label"]])) \
            if ref and p["kind"] != "reference" and ref["label"] in shares else None
        xb = median(ratio_of(shares[p["label"]], shares[best["label"]])) \
            if best and p["kind"] == "fastwall" and best["label"] in shares else None
        res[p["label"]] = dict(pct=100 * median(rn), lo=100 * min(rn), hi=100 * max(rn), xref=xr, xbest=xb)
        v = [x["pps"] for x in mine]
        is_base = p["label"] == p["base"]
        lines.append(
            f"{p['label']:<26} {p['sb']:>2} {median(v):>9.0f} "
            f"{'(%.0f-%.0f)' % (min(v), max(v)):>19} "
            + (f"{'base':>7} {'':>13} " if is_base else
               f"{100 * median(rn):>6.1f}% {'(%.0f-%.0f)' % (100 * min(rn), 100 * max(rn)):>13} ") +
            f"{'%.1fx' % xr if xr else '':>7} {'%.2fx' % xb if xb else '':>7} "
            f"{median([x['wall'] for x in mine]):>9.0f} {100 * median([x['share'] for x in mine]):>3.0f}% "
            f"{100 * median([x['other'] for x in mine]):>8.0f}%")
    # the matrix a reader wants: share of no filter per peer, N and rules
    rules_list = sorted({p["rules"] for p in peers if p["kind"] in KINDS})
    scales = sorted({p["n"] for p in peers if p["kind"] in KINDS})
    lines += ["", "Share of the no-filter packet rate (median over rounds, % of the bracketing none runs):", "",
              f"{'rules':>5} {'N':>5}  {'reference':>10} {'best':>10} {'fastwall':>10}   "
              f"{'fastwall/ref':>12} {'fastwall/best':>13}"]
    for r in rules_list:
        for n in scales:
            cells = []
            for k in KINDS:
                p = find(peers, k, n, r)
                cells.append(res.get(p["label"]) if p else None)
            if not any(cells):
                continue
            fw = cells[2]
            lines.append(f"{r:>5} {n:>5}  " + " ".join(
                f"{c['pct']:>9.1f}%" if c else f"{'-':>10}" for c in cells) +
                f"   {'%.1fx' % fw['xref'] if fw and fw['xref'] else '-':>12}"
                f" {'%.2fx' % fw['xbest'] if fw and fw['xbest'] else '-':>13}")
    for extra in ("nft-ctonly", "trivial"):
        if extra in res:
            lines.append(f"{extra}: {res[extra]['pct']:.1f}% of none")
    lines += ["", "Targets (stated, not asserted):"]
    for r in rules_list:
        for n in scales:
            p = find(peers, "fastwall", n, r)
            if not p or p["label"] not in res:
                continue
            c = res[p["label"]]
            notes = []
            if n >= 1024:
                notes.append(f">= 90% of none: {'met' if c['pct'] >= 90 else 'MISSED by %.1f points' % (90 - c['pct'])}")
            if n == 1024 and c["xref"]:
                notes.append(f">= 10x reference: {'met' if c['xref'] >= 10 else 'MISSED'} ({c['xref']:.1f}x)")
            if c["xbest"]:
                notes.append(f"ahead of best: {'met' if c['xbest'] > 1 else 'MISSED'} ({c['xbest']:.2f}x)")
            lines.append(f"  fastwall N={n:<5} rules={r:<4} {c['pct']:5.1f}% of none; " + "; ".join(notes))
    tee(out, "udp.txt", lines)

    # plot: % of none against N, one line per peer and rule count
    series = []
    for k in KINDS:
        for r in rules_list:
            rows = []
            for n in scales:
                p = find(peers, k, n, r)
                if p and p["label"] in res:
                    c = res[p["label"]]
                    rows.append(f"{n} {c['pct']:.2f} {c['lo']:.2f} {c['hi']:.2f}")
            if rows:
                fn = os.path.join(out, f"udp-{k}-{r}.dat")
                with open(fn, "w") as f:
                    f.write("\n".join(rows) + "\n")
                series.append(f'"{fn}" using 1:2:3:4 with yerrorlines lw 2 {LINE[k]} {DASH.get(r, "dt 3")} '
                              f'title "{NAMES[k]}, {r} rules"')
    for extra, style in (("nft-ctonly", 'dt 4 lc rgb "#7f8c8d"'), ("trivial", 'dt 3 lc rgb "#8e44ad"')):
        if extra in res:
            title = "nftables conntrack rule alone" if extra == "nft-ctonly" else "trivial TC program"
            series.append(f'{res[extra]["pct"]:.2f} with lines lw 1.5 {style} title "{title}"')
    series.append('90 with lines lw 1 lc rgb "red" dt 3 title "target 90 %"')
    script = f"""
set terminal @TERM@
set output "{out}/rate.@EXT@"
set bmargin 4
set title "Small new-flow UDP through bridge + forward: share of the no-filter rate" noenhanced
set logscale x 2
set xrange [0.7:6000]
set xtics ("1" 1, "4" 4, "16" 16, "64" 64, "256" 256, "1024" 1024, "4096" 4096)
set xlabel "subjects (each with its CIDR rules and learned addresses)"
set ylabel "% of no filter (packets/s per core, paired per round)"
set yrange [0:115]
set ytics 10
set grid ytics
set key outside right top noenhanced
plot {", ".join(series)}
"""
    if gnuplot(script, "900,520"):
        print(f"plot: {out}/rate.svg")


# --------------------------------------------------------------------- TCP --
def tcp(out, peers):
    path = os.path.join(out, "tcp.raw")
    if not os.path.exists(path) or not os.path.getsize(path):
        return
    samples = []
    with open(path) as f:
        for line in f:
            x = line.split()
            samples.append(dict(label=x[0], round=int(x[1]), mode=x[2], rate=float(x[4]),
                                core=float(x[5]), p50=float(x[7]), p99=float(x[9]), err=int(x[11]),
                                seq=int(x[12])))
    meta = read_meta(out)
    lines = [
        "TCP from each peer's sandboxes to an echo server behind the pod (64-byte",
        "messages; client and server on the sender's CPU). rr: "
        f"{meta.get('tcp_conns', '?')} long-lived connections,",
        f"one request in flight each; crr: {meta.get('crr_conc', '?')} slots of connect, "
        "one request/response, close.",
        "Latencies in microseconds (median over runs of each run's percentile);",
        "rates per second of CPU time (client, server, ksoftirqd); '% none' as for UDP",
        "(against the no-filter runs just before and after).",
        "",
        f"{'peer':<26} {'sb':>2} {'rr p50':>8} {'rr p99':>8} {'rr/s/core':>10} {'% none':>7}  "
        f"{'crr/s/core':>10} {'% none':>7} {'crr p50':>8} {'crr p99':>8} {'errors':>6}",
    ]
    res = {}
    for p in peers:
        row = {}
        for mode in ("rr", "crr"):
            ms = [x for x in samples if x["mode"] == mode]
            m = [x for x in ms if x["label"] == p["label"]]
            if not m:
                continue
            sh = bracket(ms, p["label"], p["base"], lambda x: x["core"])
            row[mode] = dict(p50=median([x["p50"] for x in m]), p99=median([x["p99"] for x in m]),
                             core=median([x["core"] for x in m]),
                             pct=100 * median(list(sh.values())) if sh else float("nan"),
                             err=sum(x["err"] for x in m))
        if not row:
            continue
        res[p["label"]] = row
        rr, crr = row.get("rr"), row.get("crr")

        def f(x, key, fmt):
            return (fmt % x[key]) if x else "-"
        lines.append(f"{p['label']:<26} {p['sb']:>2} {f(rr, 'p50', '%.1f'):>8} {f(rr, 'p99', '%.1f'):>8} "
                     f"{f(rr, 'core', '%.0f'):>10} {f(rr, 'pct', '%.1f%%'):>7}  {f(crr, 'core', '%.0f'):>10} "
                     f"{f(crr, 'pct', '%.1f%%'):>7} {f(crr, 'p50', '%.1f'):>8} {f(crr, 'p99', '%.1f'):>8} "
                     f"{(crr or {}).get('err', 0):>6}")
    tee(out, "tcp.txt", lines)

    rules_list = sorted({p["rules"] for p in peers if p["kind"] in KINDS})
    scales = sorted({p["n"] for p in peers if p["kind"] in KINDS})
    lat, crr_s = [], []
    for k in KINDS:
        for r in rules_list:
            rows = []
            for n in scales:
                p = find(peers, k, n, r)
                x = res.get(p["label"]) if p else None
                if x and "rr" in x and "crr" in x:
                    rows.append(f"{n} {x['rr']['p50']:.2f} {x['rr']['p99']:.2f} {x['crr']['pct']:.2f}")
            if rows:
                fn = os.path.join(out, f"tcp-{k}-{r}.dat")
                with open(fn, "w") as fh:
                    fh.write("\n".join(rows) + "\n")
                t = f'{NAMES[k]}, {r} rules'
                lat.append(f'"{fn}" using 1:2 with linespoints lw 2 {LINE[k]} {DASH.get(r, "dt 3")} title "{t}"')
                crr_s.append(f'"{fn}" using 1:4 with linespoints lw 2 {LINE[k]} {DASH.get(r, "dt 3")} title "{t}"')
    if "none" in res and "rr" in res["none"]:
        lat.append(f'{res["none"]["rr"]["p50"]:.2f} with lines lw 1.5 dt 4 lc rgb "#7f8c8d" title "no filter"')
    crr_s.append('100 with lines lw 1.5 dt 4 lc rgb "#7f8c8d" title "no filter"')
    if not lat:
        return
    script = f"""
set terminal @TERM@
set output "{out}/tcp.@EXT@"
set multiplot layout 1,2 title "TCP through bridge + forward" noenhanced
set logscale x 2
set xrange [0.7:6000]
set xtics ("1" 1, "16" 16, "64" 64, "256" 256, "1024" 1024, "4096" 4096)
set xlabel "subjects"
set grid ytics
set key top left noenhanced font ',9'
set logscale y 10
set ylabel "request/response p50 latency (us)"
set title "latency on long-lived connections"
plot {", ".join(lat)}
unset logscale y
set yrange [0:115]
set ylabel "% of no-filter connections/s per core"
set title "connect + request/response + close"
set key bottom left
plot {", ".join(crr_s)}
unset multiplot
"""
    if gnuplot(script, "980,440"):
        print(f"plot: {out}/tcp.svg")


# ----------------------------------------------------------- control plane --
OPS = [("add", "add a subject"), ("update", "update one subject's policy"), ("learn", "learn one address"),
       ("remove", "remove a subject"), ("rebuild", "rebuild all after a restart")]


def cp(out, peers):
    path = os.path.join(out, "cp.raw")
    if not os.path.exists(path):
        return
    d = defaultdict(list)  # (peer, n, rules, op) -> ms values
    with open(path) as f:
        for line in f:
            x = line.split()
            if len(x) != 5:
                continue  # a step that printed nothing; its absence shows in the table
            peer, n, rules, op, v = x
            d[(peer, int(n), int(rules), op)].append(float(v))
    scales = sorted({k[1] for k in d if k[3] in dict(OPS)})
    rules = sorted({k[2] for k in d if k[3] in dict(OPS)})

    def cell(vals):
        if not vals:
            return "-"
        m = median(vals)
        fmt = (lambda x: "%.3f" % x) if m < 1 else (lambda x: "%.1f" % x) if m < 1000 else (lambda x: "%.0f" % x)
        return f"{fmt(m)} ({fmt(min(vals))}-{fmt(max(vals))})"

    lines = [
        "Control plane with N subjects present, milliseconds: median (min-max).",
        "nft: one `ip netns exec POD nft -f FILE` per operation, process start included",
        "('nft no-op' is `add table` of the existing table: nft's own fixed cost).",
        "fastwall: add = SET_BINDING + sandbox.data-plane-ready, update = SET_BINDING with",
        "a new rule set, remove = REMOVE_BINDING, each an HTTP round trip to fastwalld's",
        "actions listener (keep-alive, loopback); learn = one bpf_map_update_elem into",
        "the pinned fastwall_learned map, the DNS proxy's kernel write (the end-to-end",
        "DNS figure is in the DNS benchmark); rebuild = fastwalld start -> status ready",
        "-> every subject's SET_BINDING + data-plane-ready replayed (kernel state kept).",
    ]
    for r in rules:
        lines += ["", f"{r} CIDR rules per subject:",
                  f"{'operation':<30} {'N':>5}  {'nft reference':>24} {'nft best (vmap)':>24} {'fastwall':>24}"]
        for op, name in OPS + [("noop", "nft no-op")]:
            for n in scales:
                cells = [cell(d.get((k, n, r, op), [])) for k in KINDS]
                if all(c == "-" for c in cells):
                    continue
                lines.append(f"{name:<30} {n:>5}  {cells[0]:>24} {cells[1]:>24} {cells[2]:>24}")
        lines.append("fastwall details:")
        for n in scales:
            parts = []
            for op, name in (("add-set-binding", "SET_BINDING"), ("add-ready", "ready"),
                             ("restart-ready", "start->ready"), ("cold-setup", "all N from empty")):
                v = d.get(("fastwall", n, r, op), [])
                if v:
                    parts.append(f"{name} {median(v):.{3 if median(v) < 1 else 1}f}")
            for op in ("add", "update", "remove", "learn"):
                v = d.get(("fastwall", n, r, op), [])
                if v:
                    parts.append(f"{op} p90 {pctl(v, 90):.3f}")
            le = d.get(("fastwall", n, r, "learned-entries"), [])
            la = d.get(("fastwall", n, r, "learned-entries-after-restart"), [])
            if parts:
                lines.append(f"  N={n:<5} " + ", ".join(parts) + " (ms)" +
                             (f"; learned map: {le[0]:.0f} entries" if le else "") +
                             (f", {la[0]:.0f} after the restarts" if la else ""))
        lines.append("Target: every operation under 1 ms and flat as N grows (rebuild: growth only):")
        for op, name in OPS:
            vals = [(n, median(d.get(("fastwall", n, r, op), [])) if d.get(("fastwall", n, r, op)) else None)
                    for n in scales]
            vals = [(n, v) for n, v in vals if v is not None]
            if not vals:
                continue
            worst = max(v for _, v in vals)
            growth = vals[-1][1] / vals[0][1] if vals[0][1] else float("nan")
            verdict = "met" if worst < 1 else f"MISSED ({worst:.3f} ms at worst)"
            if op == "rebuild":
                verdict = "n/a (all N subjects)"
            lines.append(f"  fastwall {name:<28} " + ", ".join(f"N={n}: {v:.3f}" for n, v in vals) +
                         f"  -> under 1 ms: {verdict}; N={vals[-1][0]} / N={vals[0][0]}: {growth:.2f}x")
    tee(out, "cp.txt", lines)

    # plot: one panel per operation, ms against N, log-log
    r = CP_RULES_PLOT if CP_RULES_PLOT in rules else (rules[0] if rules else None)
    if r is None:
        return
    panels = []
    for op, name in OPS:
        series = []
        for k in KINDS:
            rows = []
            for n in scales:
                v = d.get((k, n, r, op), [])
                if v:
                    rows.append(f"{n} {median(v):.5f} {min(v):.5f} {max(v):.5f}")
            if rows:
                fn = os.path.join(out, f"cp-{op}-{k}.dat")
                with open(fn, "w") as fh:
                    fh.write("\n".join(rows) + "\n")
                series.append(f'"{fn}" using 1:2:3:4 with yerrorlines lw 2 {LINE[k]} title "{NAMES[k]}"')
        if series:
            series.append('1 with lines lw 1 lc rgb "red" dt 3 title "1 ms"')
            # one legend, in the first panel
            panels.append(f'set title "{name}"\n{"" if not panels else "unset key"}\nplot {", ".join(series)}')
    if not panels:
        return
    script = f"""
set terminal @TERM@
set output "{out}/control.@EXT@"
set multiplot layout 2,3 title "Control plane: time per operation with N subjects present ({r} rules each)" noenhanced
set logscale x 2
set logscale y 10
set xrange [40:6500]
set xtics ("64" 64, "256" 256, "1024" 1024, "4096" 4096)
set format y "%g"
set yrange [0.001:100000]
set xlabel "subjects present"
set ylabel "ms (log)"
set grid ytics
set key top left noenhanced font ',9'
{chr(10).join(panels)}
unset multiplot
"""
    if gnuplot(script, "1100,680"):
        print(f"plot: {out}/control.svg")


CP_RULES_PLOT = int(os.environ.get("CP_RULES", "16"))


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    out = sys.argv[1]
    what = sys.argv[2] if len(sys.argv) > 2 else "all"
    peers = read_peers(out)
    if what in ("all", "udp"):
        udp(out, peers)
        print()
    if what in ("all", "tcp"):
        tcp(out, peers)
        print()
    if what in ("all", "cp"):
        cp(out, peers)


if __name__ == "__main__":
    main()
