// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The port guard's verdict table: every row is a frame arriving on the
 * pod's uplink and what the guard must do with it, checked through both
 * of its programs (XDP and the TC fallback) with bpf_prog_test_run_opts:
 * the verdict, the frame unchanged, the reason counter (exactly +1, or
 * none for traffic the guard leaves untouched) and the deny event. The
 * guard is programmed through fw_guard_set, as fastwalld does. Rows
 * marked .then continue the group before them (the later fragments of a
 * datagram); every group starts with no fragment remembered. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>
#include <linux/pkt_cls.h>

#include "common/addr.h"
#include "datapath/guard.h"
#include "datapath/reasons.h"
#include "datapath/stats.h"
#include "guard_rows.h"
#include "pkt.h"

#define POD4  "192.0.2.1"
#define POD6  "2001:db8:1::1"
#define GW4   "192.0.2.10"     /* trusted: 192.0.2.8/29 */
#define GW6   "2001:db8:1::10" /* trusted: 2001:db8:1::10/124 */
#define SIB4  "192.0.2.20"
#define SIB6  "2001:db8:1::20"
#define GW4M  "::ffff:192.0.2.10" /* the trusted IPv4 address, v4-mapped in IPv6 */
#define GTCP  8443		  /* guarded */
#define GUDP  9443		  /* guarded */
#define OPEN  8080		  /* not guarded */
#define OPENU 9000		  /* not guarded */

#define UNTOUCHED FW_REASON_MAX /* no counter moves */

struct grow {
	const char *desc;
	bool then;
	bool xdp_only; /* the kernel's TC test run refuses a frame without its IP header */
	struct pkt_spec pkt;
	bool drops;
	__u32 reason; /* UNTOUCHED, or the reason counted */
};

#define GPASS(r)	 .drops = false, .reason = (r)
#define GDROP(r)	 .drops = true, .reason = (r)
#define FRAG_FIRST(i)	 .frag = {.on = true, .more = true, .offset = 0, .id = (i)}
#define FRAG_LATER(i, o) .frag = {.on = true, .more = true, .offset = (o), .id = (i)}

static const struct grow grows[] = {
	/* trusted and untrusted sources, each guarded port, both families */
	{"guard: v4 tcp trusted to guarded", .pkt = TCP4(GW4, POD4, 40000, GTCP),
	 GPASS(FW_PASS_GUARD_TRUSTED)},
	{"guard: v4 udp trusted to guarded", .pkt = UDP4(GW4, POD4, 40000, GUDP),
	 GPASS(FW_PASS_GUARD_TRUSTED)},
	{"guard: v6 tcp trusted to guarded", .pkt = TCP6(GW6, POD6, 40000, GTCP),
	 GPASS(FW_PASS_GUARD_TRUSTED)},
	{"guard: v6 udp trusted to guarded", .pkt = UDP6(GW6, POD6, 40000, GUDP),
	 GPASS(FW_PASS_GUARD_TRUSTED)},
	{"guard: v4 tcp untrusted to guarded", .pkt = TCP4(SIB4, POD4, 40000, GTCP),
	 GDROP(FW_DROP_GUARD_UNTRUSTED)},
	{"guard: v4 udp untrusted to guarded", .pkt = UDP4(SIB4, POD4, 40000, GUDP),
	 GDROP(FW_DROP_GUARD_UNTRUSTED)},
	{"guard: v6 tcp untrusted to guarded", .pkt = TCP6(SIB6, POD6, 40000, GTCP),
	 GDROP(FW_DROP_GUARD_UNTRUSTED)},
	{"guard: v6 udp untrusted to guarded", .pkt = UDP6(SIB6, POD6, 40000, GUDP),
	 GDROP(FW_DROP_GUARD_UNTRUSTED)},
	{"guard: v4 tcp ack (no syn) untrusted to guarded",
	 .pkt = TCP4(SIB4, POD4, 40000, GTCP, .tcp_flags = TH_ACK), GDROP(FW_DROP_GUARD_UNTRUSTED)},
	/* a port is guarded for TCP and UDP alike */
	{"guard: v4 udp untrusted to the tcp port", .pkt = UDP4(SIB4, POD4, 40000, GTCP),
	 GDROP(FW_DROP_GUARD_UNTRUSTED)},
	{"guard: v6 tcp untrusted to the udp port", .pkt = TCP6(SIB6, POD6, 40000, GUDP),
	 GDROP(FW_DROP_GUARD_UNTRUSTED)},
	/* unguarded ports, other protocols, other ethertypes: untouched */
	{"guard: v4 tcp untrusted to unguarded", .pkt = TCP4(SIB4, POD4, 40000, OPEN),
	 GPASS(UNTOUCHED)},
	{"guard: v6 udp untrusted to unguarded", .pkt = UDP6(SIB6, POD6, 40000, OPENU),
	 GPASS(UNTOUCHED)},
	{"guard: v4 tcp trusted to unguarded", .pkt = TCP4(GW4, POD4, 40000, OPEN),
	 GPASS(UNTOUCHED)},
	{"guard: a reply from a remote guarded-number port to the pod's ephemeral port",
	 .pkt = TCP4(SIB4, POD4, GTCP, 40000, .tcp_flags = TH_SYN | TH_ACK), GPASS(UNTOUCHED)},
	{"guard: v4 icmp untrusted", .pkt = ICMP4(SIB4, POD4, ICMP4_ECHO), GPASS(UNTOUCHED)},
	{"guard: v6 icmp untrusted", .pkt = ICMP6(SIB6, POD6, ICMP6_ECHO), GPASS(UNTOUCHED)},
	{"guard: arp", .pkt = ARP_REQ(), GPASS(UNTOUCHED)},
	{"guard: another ethertype", .pkt = ETHER(0x88cc), GPASS(UNTOUCHED)},
	/* v4-mapped sources must not borrow the IPv4 trust */
	{"guard: v6 from the trusted address v4-mapped", .pkt = TCP6(GW4M, POD6, 40000, GTCP),
	 GDROP(FW_DROP_GUARD_UNTRUSTED)},
	/* IPv6 extension headers before the transport header */
	{"guard: v6 hop-by-hop + dest options, untrusted",
	 .pkt = TCP6(SIB6, POD6, 40000, GTCP, .ext = {X_HBH, X_DEST}),
	 GDROP(FW_DROP_GUARD_UNTRUSTED)},
	{"guard: v6 routing header, trusted", .pkt = UDP6(GW6, POD6, 40000, GUDP, .ext = {X_RT}),
	 GPASS(FW_PASS_GUARD_TRUSTED)},
	{"guard: v6 nine extension headers hide the port",
	 .pkt = TCP6(
		 GW6, POD6, 40000, OPEN,
		 .ext = {X_DEST, X_DEST, X_DEST, X_DEST, X_DEST, X_DEST, X_DEST, X_DEST, X_DEST}),
	 GDROP(FW_DROP_GUARD_MALFORMED)},
	/* one VLAN tag is looked through, two are refused */
	{"guard: 802.1Q v4 tcp untrusted", .pkt = TCP4(SIB4, POD4, 40000, GTCP, .vlan = {0x8100}),
	 GDROP(FW_DROP_GUARD_UNTRUSTED)},
	{"guard: 802.1Q v6 udp trusted", .pkt = UDP6(GW6, POD6, 40000, GUDP, .vlan = {0x8100}),
	 GPASS(FW_PASS_GUARD_TRUSTED)},
	{"guard: 802.1ad v4 udp untrusted", .pkt = UDP4(SIB4, POD4, 40000, GUDP, .vlan = {0x88a8}),
	 GDROP(FW_DROP_GUARD_UNTRUSTED)},
	{"guard: 802.1Q v4 tcp untrusted to unguarded",
	 .pkt = TCP4(SIB4, POD4, 40000, OPEN, .vlan = {0x8100}), GPASS(UNTOUCHED)},
	{"guard: two tags", .pkt = TCP4(GW4, POD4, 40000, OPEN, .vlan = {0x88a8, 0x8100}),
	 GDROP(FW_DROP_GUARD_MALFORMED)},
	/* truncated and inconsistent headers fail closed */
	{"guard: v4 cut inside the tcp header",
	 .pkt = TCP4(GW4, POD4, 40000, GTCP, .truncate = 14 + 20 + 12),
	 GDROP(FW_DROP_GUARD_MALFORMED)},
	{"guard: v4 tcp header past the declared payload",
	 .pkt = TCP4(GW4, POD4, 40000, GTCP, .len_delta = -10), GDROP(FW_DROP_GUARD_MALFORMED)},
	{"guard: v4 tcp data offset past the payload",
	 .pkt = TCP4(GW4, POD4, 40000, GTCP, .doff = 15), GDROP(FW_DROP_GUARD_MALFORMED)},
	{"guard: v4 tcp data offset below 5", .pkt = TCP4(GW4, POD4, 40000, GTCP, .doff = 4),
	 GDROP(FW_DROP_GUARD_MALFORMED)},
	{"guard: v4 udp header cut", .pkt = UDP4(SIB4, POD4, 40000, OPENU, .truncate = 14 + 20 + 6),
	 GDROP(FW_DROP_GUARD_MALFORMED)},
	{"guard: v4 ihl 4", .pkt = UDP4(GW4, POD4, 40000, GUDP, .ihl = 4),
	 GDROP(FW_DROP_GUARD_MALFORMED)},
	{"guard: v4 header cut", .xdp_only = true,
	 .pkt = UDP4(GW4, POD4, 40000, GUDP, .truncate = 14 + 12), GDROP(FW_DROP_GUARD_MALFORMED)},
	{"guard: v6 header cut", .xdp_only = true,
	 .pkt = TCP6(GW6, POD6, 40000, GTCP, .truncate = 14 + 30), GDROP(FW_DROP_GUARD_MALFORMED)},
	{"guard: v6 udp cut after 4 bytes",
	 .pkt = UDP6(GW6, POD6, 40000, GUDP, .truncate = 14 + 40 + 4),
	 GDROP(FW_DROP_GUARD_MALFORMED)},
	{"guard: 802.1Q tag cut",
	 .pkt = UDP4(GW4, POD4, 40000, GUDP, .vlan = {0x8100}, .truncate = 16),
	 GDROP(FW_DROP_GUARD_MALFORMED)},
	/* fragments: the later ones follow the first the guard passed */
	{"guard: v4 trusted first fragment", .pkt = UDP4(GW4, POD4, 40000, GUDP, FRAG_FIRST(101)),
	 GPASS(FW_PASS_GUARD_TRUSTED)},
	{"guard: its later fragment follows", .then = true,
	 .pkt = UDP4(GW4, POD4, 40000, GUDP, FRAG_LATER(101, 8)), GPASS(UNTOUCHED)},
	{"guard: v4 untrusted first fragment",
	 .pkt = UDP4(SIB4, POD4, 40000, GUDP, FRAG_FIRST(102)), GDROP(FW_DROP_GUARD_UNTRUSTED)},
	{"guard: its later fragment drops", .then = true,
	 .pkt = UDP4(SIB4, POD4, 40000, GUDP, FRAG_LATER(102, 8)), GDROP(FW_DROP_GUARD_FRAGMENT)},
	{"guard: v4 later fragment whose first was not seen",
	 .pkt = TCP4(GW4, POD4, 40000, GTCP, FRAG_LATER(103, 8)), GDROP(FW_DROP_GUARD_FRAGMENT)},
	{"guard: v4 untrusted first fragment to unguarded",
	 .pkt = UDP4(SIB4, POD4, 40000, OPENU, FRAG_FIRST(104)), GPASS(UNTOUCHED)},
	{"guard: its later fragment follows (unguarded)", .then = true,
	 .pkt = UDP4(SIB4, POD4, 40000, OPENU, FRAG_LATER(104, 8)), GPASS(UNTOUCHED)},
	{"guard: v4 tcp first fragment, then a fragment over its tcp header",
	 .pkt = TCP4(GW4, POD4, 40000, GTCP, FRAG_FIRST(105)), GPASS(FW_PASS_GUARD_TRUSTED)},
	{"guard: offset 8 overlaps the 20-byte tcp header", .then = true,
	 .pkt = TCP4(GW4, POD4, 40000, GTCP, FRAG_LATER(105, 1)), GDROP(FW_DROP_GUARD_FRAGMENT)},
	{"guard: offset 24 does not", .then = true,
	 .pkt = TCP4(GW4, POD4, 40000, GTCP, FRAG_LATER(105, 3)), GPASS(UNTOUCHED)},
	{"guard: v4 first fragment whose tcp header does not fit",
	 .pkt = TCP4(GW4, POD4, 40000, GTCP, FRAG_FIRST(106), .doff = 15),
	 GDROP(FW_DROP_GUARD_MALFORMED)},
	{"guard: v6 trusted first fragment", .pkt = UDP6(GW6, POD6, 40000, GUDP, FRAG_FIRST(201)),
	 GPASS(FW_PASS_GUARD_TRUSTED)},
	{"guard: v6 its later fragment follows", .then = true,
	 .pkt = UDP6(GW6, POD6, 40000, GUDP, FRAG_LATER(201, 8)), GPASS(UNTOUCHED)},
	{"guard: v6 untrusted first fragment",
	 .pkt = UDP6(SIB6, POD6, 40000, GUDP, FRAG_FIRST(202)), GDROP(FW_DROP_GUARD_UNTRUSTED)},
	{"guard: v6 its later fragment drops", .then = true,
	 .pkt = UDP6(SIB6, POD6, 40000, GUDP, FRAG_LATER(202, 8)), GDROP(FW_DROP_GUARD_FRAGMENT)},
	{"guard: v6 later fragment whose first was not seen",
	 .pkt = TCP6(SIB6, POD6, 40000, OPEN, FRAG_LATER(203, 8)), GDROP(FW_DROP_GUARD_FRAGMENT)},
	{"guard: v6 atomic fragment is a whole packet",
	 .pkt = TCP6(SIB6, POD6, 40000, GTCP,
		     .frag = {.on = true, .more = false, .offset = 0, .id = 204}),
	 GDROP(FW_DROP_GUARD_UNTRUSTED)},
};

#define NGROWS (sizeof(grows) / sizeof(grows[0]))

static struct {
	struct fw_event ev[8];
	size_t nev;
} seen;

static int on_event(void *ctx, void *data, size_t size)
{
	(void)ctx;
	if (size >= sizeof(struct fw_event) && seen.nev < 8)
		memcpy(&seen.ev[seen.nev++], data, sizeof(struct fw_event));
	return 0;
}

enum hook { HOOK_XDP, HOOK_TC };

static bool dropped(enum hook h, __u32 retval)
{
	return h == HOOK_XDP ? retval == XDP_DROP : retval == TC_ACT_SHOT;
}

static bool passed_(enum hook h, __u32 retval)
{
	return h == HOOK_XDP ? retval == XDP_PASS : retval == TC_ACT_OK;
}

static void frags_forget(struct fw_guard *g)
{
	struct fw_frag_key k;

	while (bpf_map_get_next_key(g->frags_fd, NULL, &k) == 0)
		if (bpf_map_delete_elem(g->frags_fd, &k))
			break;
}

static bool run_grow(struct fw_dp *dp, struct fw_guard *g, struct ring_buffer *rb,
		     const struct grow *r, enum hook h)
{
	struct fw_counter before[FW_REASON_MAX], after[FW_REASON_MAX];
	__u8 in[PKT_MAX], out[PKT_MAX + 64];
	const char *hook = h == HOOK_XDP ? "xdp" : "tc";
	LIBBPF_OPTS(bpf_test_run_opts, opts);
	size_t len = pkt_build(&r->pkt, in);
	int nmoved = 0, err;
	__u32 moved = UNTOUCHED;
	bool ok = true;

	if (!len) {
		printf("FAIL %s [%s]\n  test bug: packet does not build\n", r->desc, hook);
		return false;
	}
	ring_buffer__consume(rb);
	seen.nev = 0;
	if (fw_dp_stats_read(dp, before))
		return false;
	opts.data_in = in;
	opts.data_size_in = len;
	opts.data_out = out;
	opts.data_size_out = sizeof(out);
	opts.repeat = 1;
	err = bpf_prog_test_run_opts(h == HOOK_XDP ? g->xdp_fd : g->tc_fd, &opts);
	if (err) {
		printf("FAIL %s [%s]\n  bpf_prog_test_run_opts: %s\n", r->desc, hook,
		       strerror(-err));
		pkt_hex("  in  ", in, len);
		return false;
	}
	fw_dp_stats_read(dp, after);
	ring_buffer__consume(rb);
	for (__u32 i = 0; i < FW_REASON_MAX; i++) {
		if (after[i].packets == before[i].packets)
			continue;
		nmoved++;
		moved = i;
	}
	if (r->drops ? !dropped(h, opts.retval) : !passed_(h, opts.retval)) {
		printf("FAIL %s [%s]\n  verdict: expected %s, got %u\n", r->desc, hook,
		       r->drops ? "drop" : "pass", opts.retval);
		ok = false;
	} else if (r->reason == UNTOUCHED
			   ? nmoved != 0
			   : nmoved != 1 || moved != r->reason ||
				     after[moved].packets - before[moved].packets != 1 ||
				     after[moved].bytes - before[moved].bytes != len) {
		printf("FAIL %s [%s]\n  reason: expected %s, got %s (%d counters moved)\n", r->desc,
		       hook, r->reason == UNTOUCHED ? "none" : fw_reason_name(r->reason),
		       nmoved ? fw_reason_name(moved) : "none", nmoved);
		ok = false;
	} else if (opts.data_size_out != len || memcmp(in, out, len)) {
		printf("FAIL %s [%s]\n  the frame came out changed\n", r->desc, hook);
		ok = false;
	} else if (r->drops &&
		   (seen.nev != 1 || seen.ev[0].reason != r->reason || seen.ev[0].subject != 0)) {
		printf("FAIL %s [%s]\n  expected one deny event %s, got %zu (reason %s)\n", r->desc,
		       hook, fw_reason_name(r->reason), seen.nev,
		       seen.nev ? fw_reason_name(seen.ev[0].reason) : "-");
		ok = false;
	} else if (!r->drops && seen.nev) {
		printf("FAIL %s [%s]\n  a passed frame emitted %zu events\n", r->desc, hook,
		       seen.nev);
		ok = false;
	}
	if (ok) {
		printf("ok   %s [%s]\n", r->desc, hook);
		return true;
	}
	pkt_hex("  in  ", in, len);
	return false;
}

/* The trusted set swapped the way a reload swaps it: the source trusted
 * before and after passes at every step, the one dropped from the set
 * drops once the swap is done. */
static bool swap_keeps_trust(struct fw_dp *dp, struct fw_guard *g, struct ring_buffer *rb,
			     const __u16 *ports, const struct fw_lpm_key *one, size_t n)
{
	const struct grow gw = {"guard swap: the gateway passes",
				.pkt = TCP4(GW4, POD4, 40000, GTCP), GPASS(FW_PASS_GUARD_TRUSTED)};
	const struct grow gone = {"guard swap: the sibling, no longer trusted, drops",
				  .pkt = TCP4(SIB4, POD4, 40000, GTCP),
				  GDROP(FW_DROP_GUARD_UNTRUSTED)};
	struct fw_lpm_key two[8];
	bool ok = true;

	memcpy(two, one, n * sizeof(*one));
	two[n] = (struct fw_lpm_key){.prefixlen = 128};
	fw_addr_parse(SIB4, &two[n].addr, NULL);
	ok &= fw_guard_set(g, ports, 2, two, n + 1) == 0;
	ok &= run_grow(dp, g, rb, &gw, HOOK_XDP);
	ok &= fw_guard_set(g, ports, 2, one, n) == 0;
	ok &= run_grow(dp, g, rb, &gw, HOOK_XDP);
	ok &= run_grow(dp, g, rb, &gone, HOOK_XDP);
	return ok;
}

void guard_rows_run(struct fw_dp *dp, int *passed, int *failed)
{
	static const __u16 ports[] = {GTCP, GUDP};
	struct fw_lpm_key trusted[2] = {{.prefixlen = 96 + 29}, {.prefixlen = 124}};
	struct ring_buffer *rb = NULL;
	struct fw_guard *g = NULL;

	if (fw_guard_open(dp->pin_root, &g) || fw_addr_parse("192.0.2.8", &trusted[0].addr, NULL) ||
	    fw_addr_parse("2001:db8:1::10", &trusted[1].addr, NULL) ||
	    fw_guard_set(g, ports, 2, trusted, 2)) {
		printf("FAIL guard: can't load and program the guard\n");
		(*failed)++;
		goto out;
	}
	rb = ring_buffer__new(dp->events_fd, on_event, NULL, NULL);
	if (!rb) {
		printf("FAIL guard: can't open the event ring\n");
		(*failed)++;
		goto out;
	}
	for (int h = HOOK_XDP; h <= HOOK_TC; h++) {
		for (size_t i = 0; i < NGROWS; i++) {
			if (h == HOOK_TC && grows[i].xdp_only)
				continue;
			if (!grows[i].then)
				frags_forget(g);
			if (run_grow(dp, g, rb, &grows[i], h))
				(*passed)++;
			else
				(*failed)++;
		}
	}
	if (swap_keeps_trust(dp, g, rb, ports, trusted, 2))
		(*passed)++;
	else
		(*failed)++;
out:
	ring_buffer__free(rb);
	fw_guard_close(g);
}
