// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* libFuzzer target for the port guard: mutated frames run through its real
 * XDP program and its TC fallback (bpf_prog_test_run_opts), programmed
 * through fw_guard_set, against an oracle here that parses each frame
 * itself and decides it as docs/design.md ("Port guard") says. The
 * properties (any violation is an abort(), so a crash):
 *  - both programs give the oracle's verdict and reason (or leave the
 *    frame untouched when the oracle does), and never rewrite it;
 *  - exactly the reason's counter moves, by one packet and the frame's
 *    bytes; untouched frames move none.
 *
 * Input: up to FUZZ_MAX_FRAMES records, each a 16-bit big-endian length
 * and the frame (cut to what is left); later records see the fragments
 * the earlier ones left (the oracle keeps its own record of them), which
 * are forgotten before every input. Needs root: it runs in its own network
 * and mount namespaces with a private bpffs. FW_FUZZ_WRITE_SEEDS=DIR
 * writes a seed corpus (tests/bpf/pkt.c) into DIR and exits. */
#include <arpa/inet.h>
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>
#include <linux/pkt_cls.h>

#include "common/addr.h"
#include "common/log.h"
#include "datapath/datapath.h"
#include "datapath/guard.h"
#include "datapath/reasons.h"
#include "pkt.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_MAX_FRAMES 8
#define FUZZ_FRAME_MAX	2048
#define PIN		"/sys/fs/bpf/fwfuzz-guard"
#define UNTOUCHED	FW_REASON_MAX
#define O_OK		(FW_REASON_MAX + 1) /* parsed, decide */

static const __u16 ports[] = {8443, 9443};
static const char *const trusted_text[] = {"192.0.2.8/29", "2001:db8:1::10/124"};

static struct {
	struct fw_guard *g;
	int stats_fd;
	struct fw_prefix trusted[2];
	bool ready;
} h;

/* ---- the oracle -------------------------------------------------------- */

struct ofrag {
	__u8 src[16], dst[16];
	__u32 id;
	__u8 proto;
	__u16 hdr_end;
};

static struct {
	struct ofrag f[FUZZ_MAX_FRAMES];
	size_t n;
} of;

static __u16 rd16(const __u8 *p)
{
	return (__u16)(p[0] << 8 | p[1]);
}

static bool o_trusted(const __u8 *a)
{
	for (size_t i = 0; i < 2; i++) {
		const struct fw_prefix *t = &h.trusted[i];
		__u32 bits = t->plen;
		size_t k = 0;

		for (; bits >= 8; bits -= 8, k++)
			if (a[k] != t->net.b[k])
				break;
		if (bits >= 8)
			continue;
		if (bits && ((a[k] ^ t->net.b[k]) & (0xff00 >> bits) & 0xff))
			continue;
		return true;
	}
	return false;
}

static bool o_guarded(__u16 port)
{
	return port == ports[0] || port == ports[1];
}

struct opkt {
	__u8 src[16], dst[16];
	__u32 id;
	__u8 proto;
	bool first, later, v4mapped, has_ports;
	__u16 dport, frag_off, hdr_end;
};

/* the transport header at off, inside the payload ending at end */
static __u32 o_l4(const __u8 *f, struct opkt *p, size_t off, size_t end, size_t frag_start)
{
	size_t hlen = 0;

	if (p->proto == 6) {
		if (off + 20 > end)
			return FW_DROP_GUARD_MALFORMED;
		if ((f[off + 12] >> 4) < 5)
			return FW_DROP_GUARD_MALFORMED;
		hlen = (size_t)(f[off + 12] >> 4) * 4;
	} else if (p->proto == 17) {
		hlen = 8;
		if (off + 8 > end)
			return FW_DROP_GUARD_MALFORMED;
	}
	if (off + hlen > end)
		return FW_DROP_GUARD_MALFORMED;
	if (hlen) {
		p->has_ports = true;
		p->dport = rd16(f + off + 2);
	}
	if (p->first)
		p->hdr_end = (__u16)(off + hlen - frag_start);
	return O_OK;
}

static __u32 oracle(const __u8 *f, size_t len, struct opkt *p)
{
	size_t off = 14;
	__u16 proto;

	memset(p, 0, sizeof(*p));
	if (len < 14)
		return UNTOUCHED;
	proto = rd16(f + 12);
	if (proto == 0x8100 || proto == 0x88a8) {
		if (len < 18)
			return FW_DROP_GUARD_MALFORMED;
		proto = rd16(f + 16);
		off = 18;
		if (proto == 0x8100 || proto == 0x88a8)
			return FW_DROP_GUARD_MALFORMED;
	}
	if (proto == 0x0800) {
		size_t ihl, tot;
		__u16 fo;

		if (off + 20 > len)
			return FW_DROP_GUARD_MALFORMED;
		ihl = (size_t)(f[off] & 0xf) * 4;
		tot = rd16(f + off + 2);
		if ((f[off] >> 4) != 4 || ihl < 20 || tot < ihl || off + tot > len)
			return FW_DROP_GUARD_MALFORMED;
		p->proto = f[off + 9];
		memset(p->src, 0, 10);
		memset(p->dst, 0, 10);
		p->src[10] = p->src[11] = p->dst[10] = p->dst[11] = 0xff;
		memcpy(p->src + 12, f + off + 12, 4);
		memcpy(p->dst + 12, f + off + 16, 4);
		fo = rd16(f + off + 6);
		p->later = fo & 0x1fff;
		p->first = !p->later && (fo & 0x2000);
		p->frag_off = (__u16)((fo & 0x1fff) * 8);
		p->id = rd16(f + off + 4);
		if (p->later)
			return O_OK;
		return o_l4(f, p, off + ihl, off + tot, off + ihl);
	}
	if (proto == 0x86dd) {
		size_t end, frag_start = 0;
		__u8 nh;
		int frags = 0;

		if (off + 40 > len)
			return FW_DROP_GUARD_MALFORMED;
		end = off + 40 + rd16(f + off + 4);
		if ((f[off] >> 4) != 6 || end > len || (end == off + 40 && f[off + 6] != 59))
			return FW_DROP_GUARD_MALFORMED;
		memcpy(p->src, f + off + 8, 16);
		memcpy(p->dst, f + off + 24, 16);
		p->v4mapped = !memcmp(p->src, "\0\0\0\0\0\0\0\0\0\0\xff\xff", 12);
		nh = f[off + 6];
		off += 40;
		for (int i = 0; i < 8; i++) {
			__u16 fr;

			p->proto = nh;
			switch (nh) {
			case 0:
			case 43:
			case 60:
			case 51: {
				__u8 next, hl;

				if (off + 8 > end)
					return FW_DROP_GUARD_MALFORMED;
				next = f[off];
				hl = f[off + 1];
				off += nh == 51 ? (size_t)(hl + 2) * 4 : (size_t)(hl + 1) * 8;
				nh = next;
				break;
			}
			case 44:
				if (frags++ || off + 8 > end)
					return FW_DROP_GUARD_MALFORMED;
				nh = f[off];
				fr = rd16(f + off + 2);
				p->later = fr & 0xfff8;
				p->first = !p->later && (fr & 1);
				p->frag_off = fr & 0xfff8;
				p->id = (__u32)f[off + 4] << 24 | (__u32)f[off + 5] << 16 |
					(__u32)f[off + 6] << 8 | f[off + 7];
				off += 8;
				frag_start = off;
				if (p->later) {
					p->proto = nh;
					return O_OK;
				}
				break;
			default:
				p->proto = nh;
				return o_l4(f, p, off, end, frag_start);
			}
			if (off > end)
				return FW_DROP_GUARD_MALFORMED;
		}
		return FW_DROP_GUARD_MALFORMED;
	}
	return UNTOUCHED;
}

static struct ofrag *o_frag_find(const struct opkt *p)
{
	for (size_t i = 0; i < of.n; i++) {
		const struct ofrag *r = &of.f[i];

		if (!memcmp(r->src, p->src, 16) && !memcmp(r->dst, p->dst, 16) && r->id == p->id &&
		    r->proto == p->proto)
			return &of.f[i];
	}
	return NULL;
}

static __u32 o_decide(const __u8 *f, size_t len)
{
	struct opkt p;
	__u32 r = oracle(f, len, &p);
	struct ofrag *rec;

	if (r != O_OK)
		return r;
	if (p.later) {
		rec = o_frag_find(&p);
		return rec && p.frag_off >= rec->hdr_end ? UNTOUCHED : FW_DROP_GUARD_FRAGMENT;
	}
	r = UNTOUCHED;
	if (p.has_ports && o_guarded(p.dport))
		r = !p.v4mapped && o_trusted(p.src) ? FW_PASS_GUARD_TRUSTED
						    : FW_DROP_GUARD_UNTRUSTED;
	if (p.first && (r == UNTOUCHED || r == FW_PASS_GUARD_TRUSTED)) {
		rec = o_frag_find(&p);
		if (!rec && of.n < FUZZ_MAX_FRAMES)
			rec = &of.f[of.n++];
		if (rec) {
			memcpy(rec->src, p.src, 16);
			memcpy(rec->dst, p.dst, 16);
			rec->id = p.id;
			rec->proto = p.proto;
			rec->hdr_end = p.hdr_end;
		}
	}
	return r;
}

/* ---- the harness ------------------------------------------------------- */

static void fail(const char *what, const __u8 *f, size_t len)
{
	fprintf(stderr, "guard fuzz: %s\n", what);
	pkt_hex("  ", f, len);
	abort();
}

static void stats(struct fw_counter out[FW_REASON_MAX])
{
	int ncpu = libbpf_num_possible_cpus();
	struct fw_counter v[512];

	if (ncpu <= 0 || ncpu > 512)
		abort();
	for (__u32 r = 0; r < FW_REASON_MAX; r++) {
		out[r].packets = out[r].bytes = 0;
		if (bpf_map_lookup_elem(h.stats_fd, &r, v))
			abort();
		for (int c = 0; c < ncpu; c++) {
			out[r].packets += v[c].packets;
			out[r].bytes += v[c].bytes;
		}
	}
}

/* One frame through one program: -1 when the kernel's test run refuses
 * it (TC wants its IP header whole), else checked against want. */
static void run(int fd, bool xdp, const __u8 *f, size_t len, __u32 want)
{
	struct fw_counter before[FW_REASON_MAX], after[FW_REASON_MAX];
	__u8 out[FUZZ_FRAME_MAX + 256];
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = f, .data_size_in = (__u32)len,
		    .data_out = out, .data_size_out = sizeof(out), .repeat = 1);
	bool drops = want != UNTOUCHED && FW_REASON_DROPS(want);

	stats(before);
	if (bpf_prog_test_run_opts(fd, &opts)) {
		if (xdp)
			fail("the XDP test run refused a frame", f, len);
		return;
	}
	stats(after);
	if (xdp ? opts.retval != (drops ? XDP_DROP : XDP_PASS)
		: opts.retval != (drops ? (__u32)TC_ACT_SHOT : (__u32)TC_ACT_OK)) {
		fprintf(stderr, "%s: verdict %u, the oracle says %s\n", xdp ? "xdp" : "tc",
			opts.retval, want == UNTOUCHED ? "untouched" : fw_reason_name(want));
		fail("verdict", f, len);
	}
	for (__u32 r = 0; r < FW_REASON_MAX; r++) {
		__u64 dp = after[r].packets - before[r].packets;
		__u64 db = after[r].bytes - before[r].bytes;

		if (r == want ? dp != 1 || db != len : dp != 0) {
			fprintf(stderr, "%s: counter %s moved by %llu, the oracle says %s\n",
				xdp ? "xdp" : "tc", fw_reason_name(r), (unsigned long long)dp,
				want == UNTOUCHED ? "untouched" : fw_reason_name(want));
			fail("counter", f, len);
		}
	}
	if (opts.data_size_out != len || memcmp(out, f, len))
		fail("the frame came out rewritten", f, len);
}

static void frags_forget(void)
{
	struct fw_frag_key k;

	while (bpf_map_get_next_key(h.g->frags_fd, NULL, &k) == 0)
		if (bpf_map_delete_elem(h.g->frags_fd, &k))
			abort();
	of.n = 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t off = 0;

	if (!h.ready)
		return 0;
	frags_forget();
	for (int i = 0; i < FUZZ_MAX_FRAMES && off + 2 <= size; i++) {
		size_t len = rd16(data + off);
		__u32 want;

		off += 2;
		if (len > size - off)
			len = size - off;
		if (len > FUZZ_FRAME_MAX)
			len = FUZZ_FRAME_MAX;
		if (len >= 14) {
			want = o_decide(data + off, len);
			/* the TC program first: a first fragment it records is what
			 * the XDP run of the same frame would record */
			run(h.g->tc_fd, false, data + off, len, want);
			run(h.g->xdp_fd, true, data + off, len, want);
		}
		off += len;
	}
	return 0;
}

/* ---- seeds and setup --------------------------------------------------- */

static int write_seeds(const char *dir)
{
	static const struct pkt_spec seeds[] = {
		TCP4("192.0.2.10", "192.0.2.1", 40000, 8443),
		TCP4("192.0.2.20", "192.0.2.1", 40000, 8443),
		UDP6("2001:db8:1::10", "2001:db8:1::1", 40000, 9443),
		UDP6("2001:db8:1::20", "2001:db8:1::1", 40000, 9443, .ext = {X_HBH, X_DEST}),
		TCP4("192.0.2.20", "192.0.2.1", 40000, 8080, .vlan = {0x8100}),
		UDP4("192.0.2.10", "192.0.2.1", 40000, 9443,
		     .frag = {.on = true, .more = true, .offset = 0, .id = 7}),
		UDP4("192.0.2.10", "192.0.2.1", 40000, 9443,
		     .frag = {.on = true, .more = true, .offset = 8, .id = 7}),
		TCP6("::ffff:192.0.2.10", "2001:db8:1::1", 40000, 8443),
		ICMP4("192.0.2.20", "192.0.2.1", ICMP4_ECHO),
		ARP_REQ(),
	};
	__u8 buf[2 * (PKT_MAX + 2)];
	char path[512];

	for (size_t i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++) {
		size_t len = pkt_build(&seeds[i], buf + 2), n = len + 2;
		FILE *out;

		buf[0] = (__u8)(len >> 8);
		buf[1] = (__u8)len;
		/* the fragment pair: one input, first then later */
		if (i == 5) {
			size_t l2 = pkt_build(&seeds[6], buf + n + 2);

			buf[n] = (__u8)(l2 >> 8);
			buf[n + 1] = (__u8)l2;
			n += l2 + 2;
		}
		snprintf(path, sizeof(path), "%s/seed-%02zu.bin", dir, i);
		out = fopen(path, "wb");
		if (!out || fwrite(buf, 1, n, out) != n) {
			fprintf(stderr, "can't write %s\n", path);
			if (out)
				fclose(out);
			return -1;
		}
		fclose(out);
	}
	return 0;
}

static int setup(void)
{
	struct fw_lpm_key keys[2];

	if (unshare(CLONE_NEWNET | CLONE_NEWNS) ||
	    mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
	    mount("bpf", "/sys/fs/bpf", "bpf", 0, "mode=0700")) {
		fprintf(stderr, "can't isolate: %s\n", strerror(errno));
		return -1;
	}
	for (size_t i = 0; i < 2; i++) {
		if (fw_prefix_parse(trusted_text[i], &h.trusted[i].net, &h.trusted[i].plen, NULL))
			return -1;
		keys[i].prefixlen = h.trusted[i].plen;
		keys[i].addr = h.trusted[i].net;
	}
	if (fw_guard_open(PIN, &h.g) || fw_guard_set(h.g, ports, 2, keys, 2))
		return -1;
	/* the guard counts in the pinned fastwall_stats_v2 it shares */
	h.stats_fd = bpf_obj_get(PIN "/fastwall_stats_v2");
	if (h.stats_fd < 0)
		return -1;
	return 0;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *seeds = getenv("FW_FUZZ_WRITE_SEEDS");

	(void)argc;
	(void)argv;
	if (seeds)
		exit(write_seeds(seeds) ? 1 : 0);
	if (geteuid() != 0) {
		fprintf(stderr, "the guard fuzzer needs root (BPF programs, namespaces)\n");
		exit(1);
	}
	fw_log_level = FW_LOG_ERROR;
	fw_dp_quiet();
	if (setup()) {
		fprintf(stderr, "guard fuzz: the guard could not be set up\n");
		exit(1);
	}
	h.ready = true;
	return 0;
}
