// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Layer-7 pinning: a pinned subject's TCP to a pinned port of a leased
 * address goes to the proxy (the subject's gateway, the proxy port of the
 * kind) and is remembered in fastwall_l7_nat; later segments follow the
 * entry, the proxy's segments leave with the original source, and
 * everything that cannot be handed to the proxy drops with a reason of
 * its own. Pinning is set through the data path's API (fw_dp_l7_apply,
 * fw_dp_l7_set_up); the subject's flags (FW_SF_L7, FW_SF_L7_CIDR) are
 * written into its dispatch values, as fastwalld's registry will. */
#include <arpa/inet.h>

#include "verdicts.h"

#define PROXY_TLS  15443
#define PROXY_HTTP 15080
#define L7_OTHER4  "192.0.2.220" /* alpha, live lease: a second pinned destination */
#define DELTA_GW4  "10.42.3.1"	 /* delta's gateway, given it for the quota rows */

static const char *const alpha_addrs[] = {ALPHA4, ALPHA6};

/* Sets and clears subject flags in the dispatch value of each address. */
static int flags_of(const char *const *addrs, size_t n, __u8 set, __u8 clear)
{
	for (size_t i = 0; i < n; i++) {
		struct fw_ip ip = ip_of(addrs[i]);
		struct fw_subject s;

		if (fw_dp_dispatch_lookup(t.dp, &ip, &s)) {
			printf("no dispatch for %s\n", addrs[i]);
			return -1;
		}
		s.flags = (__u8)((s.flags & ~clear) | set);
		if (fw_dp_dispatch_put(t.dp, &ip, &s)) {
			printf("can't write the dispatch of %s\n", addrs[i]);
			return -1;
		}
	}
	return fw_dp_rules_epoch_bump(t.dp) ? -1 : 0;
}

/* 443 is TLS, 80 HTTP; the proxy accepts (up) or not. */
static int pinning(bool quic, bool up)
{
	struct fw_dp_l7 l7 = {
		.tls_ports = {443},
		.ntls = 1,
		.http_ports = {80},
		.nhttp = 1,
		.proxy_tls_port = PROXY_TLS,
		.proxy_http_port = PROXY_HTTP,
		.quic_allowed = quic,
	};

	if (fw_dp_l7_apply(t.dp, &l7) || fw_dp_l7_set_up(t.dp, up)) {
		printf("can't set layer-7 pinning up\n");
		return -1;
	}
	return learn("alpha", L7_OTHER4, 60);
}

static int l7_alpha(void)
{
	return pinning(false, true) || flags_of(alpha_addrs, 2, FW_SF_L7, 0) ? -1 : 0;
}

static int l7_alpha_down(void)
{
	return pinning(false, false) || flags_of(alpha_addrs, 2, FW_SF_L7, 0) ? -1 : 0;
}

static int l7_alpha_quic(void)
{
	return pinning(true, true) || flags_of(alpha_addrs, 2, FW_SF_L7, 0) ? -1 : 0;
}

static int l7_alpha_cidr(void)
{
	return pinning(false, true) || flags_of(alpha_addrs, 2, FW_SF_L7 | FW_SF_L7_CIDR, 0) ? -1
											     : 0;
}

/* alpha's IPv4 address without a gateway: nowhere to reach the proxy */
static int l7_alpha_no_gateway(void)
{
	return l7_alpha() || flags_of(alpha_addrs, 1, 0, FW_SF_GATEWAY4) ? -1 : 0;
}

/* pinning configured, alpha not pinned */
static int l7_unpinned_subject(void)
{
	return pinning(false, true);
}

/* the ports in the map and alpha pinned, the settings' flag off (as
 * before the proxy was configured, or a settings record of another
 * writer): the program reads nothing of layer 7 */
static int l7_flag_off(void)
{
	struct fw_config c;
	__u32 zero = 0;

	if (l7_alpha() || bpf_map_lookup_elem(t.dp->config_fd, &zero, &c))
		return -1;
	c.flags &= ~(__u32)(FW_CF_L7 | FW_CF_L7_UP);
	return bpf_map_update_elem(t.dp->config_fd, &zero, &c, BPF_ANY) ? -1 : 0;
}

/* The table full of other sandboxes' connections (seen long ago). */
static int l7_alpha_table_full(void)
{
	struct fw_l7_nat v = {.proxy_port = htons(PROXY_TLS), .kind = FW_L7_TLS};
	struct fw_l7_nat_key k = {.proxy_port = htons(PROXY_TLS)};

	if (l7_alpha())
		return -1;
	v.orig_dst = ip_of(OK4);
	v.orig_port = htons(443);
	for (__u32 i = 0; i < FW_MAX_L7_NAT; i++) {
		char a[32];

		snprintf(a, sizeof(a), "10.99.%u.%u", (i >> 8) & 0xff, i & 0xff);
		k.client = ip_of(a);
		k.client_port = htons((__u16)(1024 + (i >> 16)));
		if (bpf_map_update_elem(t.dp->l7_nat_fd, &k, &v, BPF_NOEXIST)) {
			printf("can't fill fastwall_l7_nat at entry %u: %s\n", i, strerror(errno));
			return -1;
		}
	}
	return 0;
}

/* fastwalld's collection empties what went idle: the table has room */
static int l7_gc_all(void)
{
	size_t deleted = 0;

	if (fw_dp_l7_gc(t.dp, fw_now_ns(), 60 * FW_NSEC_PER_SEC, 60 * FW_NSEC_PER_SEC, &deleted))
		return -1;
	if (deleted != FW_MAX_L7_NAT) {
		printf("fw_dp_l7_gc deleted %zu entries, expected %d\n", deleted, FW_MAX_L7_NAT);
		return -1;
	}
	return 0;
}

/* The per-subject share of fastwall_l7_nat: alpha pinned, and delta,
 * given a gateway, pinned for its allow CIDR too; each may hold two
 * entries (fw_config.conn_quota). */
static int l7_quota_of(__u32 quota)
{
	struct fw_ip gw = ip_of(DELTA_GW4), delta4 = ip_of(DELTA4);
	struct fw_subject s;
	struct fw_config c;
	__u32 zero = 0;

	if (l7_alpha() || fw_dp_dispatch_lookup(t.dp, &delta4, &s))
		return -1;
	s.flags |= FW_SF_L7 | FW_SF_L7_CIDR | FW_SF_GATEWAY4;
	s.gateway[0] = gw;
	if (fw_dp_dispatch_put(t.dp, &delta4, &s) || fw_dp_rules_epoch_bump(t.dp) ||
	    bpf_map_lookup_elem(t.dp->config_fd, &zero, &c))
		return -1;
	c.conn_quota = quota;
	return bpf_map_update_elem(t.dp->config_fd, &zero, &c, BPF_ANY) ? -1 : 0;
}

static int l7_quota2(void)
{
	return l7_quota_of(2);
}

/* fastwall_l7_count says alpha holds a and delta b entries. */
static int l7_counts_are(__u64 a, __u64 b)
{
	__u64 *counts = fw_dp_l7_counts(t.dp);
	__u32 ia = id_of("alpha"), ib = id_of("delta");

	if (!counts) {
		printf("can't map fastwall_l7_count\n");
		return -1;
	}
	if (counts[ia] != a || counts[ib] != b) {
		printf("fastwall_l7_count: alpha %llu, delta %llu; expected %llu, %llu\n",
		       (unsigned long long)counts[ia], (unsigned long long)counts[ib],
		       (unsigned long long)a, (unsigned long long)b);
		return -1;
	}
	return 0;
}

static int l7_quota2_empty(void)
{
	return l7_quota2() || l7_counts_are(0, 0) ? -1 : 0;
}

static int l7_counts_1_0(void)
{
	return l7_counts_are(1, 0);
}

static int l7_counts_2_0(void)
{
	return l7_counts_are(2, 0);
}

static int l7_counts_2_1(void)
{
	return l7_counts_are(2, 1);
}

/* fastwalld hears the proxy closed alpha's connection from port cport:
 * fw_dp_l7_closed answers want (0: marked, -ENOENT), and the counts are
 * then a, b. */
static int l7_reported(__u16 cport, int want, __u64 a, __u64 b)
{
	struct fw_l7_nat_key k = {.client = ip_of(ALPHA4),
				  .client_port = htons(cport),
				  .proxy_port = htons(PROXY_TLS)};
	int err = fw_dp_l7_closed(t.dp, &k, id_of("alpha"));

	if (err != want) {
		printf("fw_dp_l7_closed(:%u): %d, expected %d\n", cport, err, want);
		return -1;
	}
	return l7_counts_are(a, b);
}

static int l7_report_40101(void)
{
	return l7_reported(40101, 0, 1, 1);
}

static int l7_report_40101_again(void)
{
	/* marked once: not taken off twice */
	return l7_reported(40101, -ENOENT, 2, 1);
}

static int l7_report_40103_release(void)
{
	struct fw_l7_nat_key k = {.client = ip_of(ALPHA4),
				  .client_port = htons(40103),
				  .proxy_port = htons(PROXY_TLS)};

	if (l7_reported(40103, 0, 1, 1))
		return -1;
	if (fw_dp_l7_release(t.dp, &k) || !fw_dp_l7_release(t.dp, &k) ||
	    !bpf_map_lookup_elem(t.dp->l7_nat_fd, &k, &(struct fw_l7_nat){})) {
		printf("fw_dp_l7_release: the reported entry of :40103 should go, once\n");
		return -1;
	}
	return l7_counts_are(1, 1);
}

static int l7_counts_2_1_after(void)
{
	return l7_counts_are(2, 1);
}

/* The entry of {client, cport, proxy port} says orig:oport, kind, closed. */
static int nat_is(const char *client, __u16 cport, __u16 pport, const char *orig, __u16 oport,
		  enum fw_l7_kind kind, __u8 closed)
{
	struct fw_l7_nat_key k = {
		.client = ip_of(client), .client_port = htons(cport), .proxy_port = htons(pport)};
	struct fw_ip o = ip_of(orig);
	struct fw_l7_nat v;
	__u64 now = fw_now_ns();

	if (bpf_map_lookup_elem(t.dp->l7_nat_fd, &k, &v)) {
		printf("no fastwall_l7_nat entry for %s:%u -> :%u\n", client, cport, pport);
		return -1;
	}
	if (memcmp(&v.orig_dst, &o, sizeof(o)) || v.orig_port != htons(oport) ||
	    v.proxy_port != htons(pport) || v.subject != id_of("alpha") || v.kind != kind ||
	    v.family != (strchr(client, ':') ? FW_FAM_V6 : FW_FAM_V4) || v.closed != closed ||
	    v.last_seen_ns > now || now - v.last_seen_ns > 10 * FW_NSEC_PER_SEC) {
		char a[FW_ADDR_STRLEN];

		printf("fastwall_l7_nat entry of %s:%u: %s:%u proxy %u subject %u kind %u family "
		       "%u closed %u seen %llu ns ago; expected %s:%u proxy %u subject %u kind %u "
		       "closed %u\n",
		       client, cport, fw_addr_str(&v.orig_dst, a, sizeof(a)), ntohs(v.orig_port),
		       ntohs(v.proxy_port), v.subject, (unsigned int)v.kind, v.family, v.closed,
		       (unsigned long long)(now - v.last_seen_ns), orig, oport, pport,
		       id_of("alpha"), (unsigned int)kind, closed);
		return -1;
	}
	return 0;
}

static int nat_learned4_open(void)
{
	return nat_is(ALPHA4, 40000, PROXY_TLS, LEARNED4, 443, FW_L7_TLS, 0);
}

static int nat_learned4_closed(void)
{
	return nat_is(ALPHA4, 40000, PROXY_TLS, LEARNED4, 443, FW_L7_TLS, 1);
}

static int nat_other4_open(void)
{
	return nat_is(ALPHA4, 40000, PROXY_TLS, L7_OTHER4, 443, FW_L7_TLS, 0);
}

static int nat_learned6_open(void)
{
	return nat_is(ALPHA6, 40000, PROXY_TLS, LEARNED6, 443, FW_L7_TLS, 0);
}

static int nat_http_open(void)
{
	return nat_is(ALPHA4, 40010, PROXY_HTTP, LEARNED4, 80, FW_L7_HTTP, 0);
}

#define SYN4(d, sp, dp)	   TCP4(ALPHA4, d, sp, dp, .payload = 0, .csum = true)
#define SEG4(d, sp, dp, f) TCP4(ALPHA4, d, sp, dp, .tcp_flags = (f), .payload = 40, .csum = true)
#define TO_PROXY4(sp, pp)  TCP4(ALPHA4, ALPHA_GW4, sp, pp, .payload = 0, .csum = true)
#define TO_PROXY4F(sp, f)                                                                          \
	TCP4(ALPHA4, ALPHA_GW4, sp, PROXY_TLS, .tcp_flags = (f), .payload = 40, .csum = true)
#define FROM_PROXY4(sp, f)                                                                         \
	TCP4(ALPHA_GW4, ALPHA4, PROXY_TLS, sp, .tcp_flags = (f), .payload = 60, .csum = true)
#define FROM_ORIG4(o, sp, f) TCP4(o, ALPHA4, 443, sp, .tcp_flags = (f), .payload = 60, .csum = true)

const struct row l7_rows[] = {
	/* a connection through the proxy, from the SYN to the close */
	{"l7: syn to a leased address on 443 goes to the proxy", .setup = l7_alpha,
	 .pkt = SYN4(LEARNED4, 40000, 443), OUT(TO_PROXY4(40000, PROXY_TLS)),
	 PASS(FW_PASS_L7_PROXY), .subject = "alpha"},
	{"l7: the segment after it follows the entry written", .then = true,
	 .setup = nat_learned4_open, .pkt = SEG4(LEARNED4, 40000, 443, TH_ACK),
	 OUT(TO_PROXY4F(40000, TH_ACK)), PASS(FW_PASS_L7_PROXY), .subject = "alpha"},
	{"l7: egress: the proxy's segment leaves with the original source", .then = true,
	 .prog = TO_SANDBOX, .pkt = FROM_PROXY4(40000, TH_ACK),
	 OUT(FROM_ORIG4(LEARNED4, 40000, TH_ACK)), .verdict = TC_ACT_OK},
	{"l7: egress: another pod address's port to the same sandbox port is left alone",
	 .then = true, .prog = TO_SANDBOX,
	 .pkt = TCP4(LOCAL4, ALPHA4, PROXY_TLS, 40000, .tcp_flags = TH_ACK, .csum = true),
	 .verdict = TC_ACT_OK},
	{"l7: a syn from the same port to another pinned address while open: port reuse",
	 .then = true, .pkt = SYN4(L7_OTHER4, 40000, 443), DROP(FW_DROP_L7_PORT_REUSE),
	 .subject = "alpha"},
	{"l7: a segment to another address than the entry's: untracked", .then = true,
	 .pkt = SEG4(L7_OTHER4, 40000, 443, TH_ACK), DROP(FW_DROP_L7_UNTRACKED),
	 .subject = "alpha"},
	{"l7: the sandbox's fin goes to the proxy too", .then = true,
	 .pkt = SEG4(LEARNED4, 40000, 443, TH_FIN | TH_ACK),
	 OUT(TO_PROXY4F(40000, TH_FIN | TH_ACK)), PASS(FW_PASS_L7_PROXY), .subject = "alpha"},
	{"l7: after the fin, the port may go to another pinned address", .then = true,
	 .setup = nat_learned4_closed, .pkt = SYN4(L7_OTHER4, 40000, 443),
	 OUT(TO_PROXY4(40000, PROXY_TLS)), PASS(FW_PASS_L7_PROXY), .subject = "alpha"},
	{"l7: egress: and the proxy's answers come from there", .then = true,
	 .setup = nat_other4_open, .prog = TO_SANDBOX, .pkt = FROM_PROXY4(40000, TH_SYN | TH_ACK),
	 OUT(FROM_ORIG4(L7_OTHER4, 40000, TH_SYN | TH_ACK)), .verdict = TC_ACT_OK},
	{"l7: a retransmitted syn keeps the entry", .then = true,
	 .pkt = SYN4(L7_OTHER4, 40000, 443), OUT(TO_PROXY4(40000, PROXY_TLS)),
	 PASS(FW_PASS_L7_PROXY), .subject = "alpha"},
	{"l7: a reset closes the entry and goes to the proxy", .then = true,
	 .pkt = SEG4(L7_OTHER4, 40000, 443, TH_RST | TH_ACK),
	 OUT(TO_PROXY4F(40000, TH_RST | TH_ACK)), PASS(FW_PASS_L7_PROXY), .subject = "alpha"},
	{"l7: then the port is free again", .then = true, .pkt = SYN4(LEARNED4, 40000, 443),
	 OUT(TO_PROXY4(40000, PROXY_TLS)), PASS(FW_PASS_L7_PROXY), .subject = "alpha"},

	/* a subject's share of the table (conn_quota 2) */
	{"l7 quota: a new entry counts one for its subject", .setup = l7_quota2_empty,
	 .pkt = SYN4(LEARNED4, 40100, 443), OUT(TO_PROXY4(40100, PROXY_TLS)),
	 PASS(FW_PASS_L7_PROXY), .subject = "alpha"},
	{"l7 quota: a retransmitted syn counts nothing", .then = true, .setup = l7_counts_1_0,
	 .pkt = SYN4(LEARNED4, 40100, 443), OUT(TO_PROXY4(40100, PROXY_TLS)),
	 PASS(FW_PASS_L7_PROXY), .subject = "alpha"},
	{"l7 quota: the second entry counts one more", .then = true, .setup = l7_counts_1_0,
	 .pkt = SYN4(LEARNED4, 40101, 443), OUT(TO_PROXY4(40101, PROXY_TLS)),
	 PASS(FW_PASS_L7_PROXY), .subject = "alpha"},
	{
		"l7 quota: over the subject's share the syn drops",
		.then = true,
		.setup = l7_counts_2_0,
		.pkt = SYN4(LEARNED4, 40102, 443),
		DROP(FW_DROP_L7_FULL),
		.subject = "alpha",
	},
	{"l7 quota: a sibling still gets its entry", .then = true, .setup = l7_counts_2_0,
	 .on_dummy = true, .pkt = TCP4(DELTA4, OK4, 40100, 443, .payload = 0, .csum = true),
	 OUT(TCP4(DELTA4, DELTA_GW4, 40100, PROXY_TLS, .payload = 0, .csum = true,
		  .eth_src = DUMMY_MAC)),
	 PASS(FW_PASS_L7_PROXY), .subject = "delta"},
	{"l7 quota: the subject closes a connection", .then = true, .setup = l7_counts_2_1,
	 .pkt = SEG4(LEARNED4, 40100, 443, TH_FIN | TH_ACK),
	 OUT(TO_PROXY4F(40100, TH_FIN | TH_ACK)), PASS(FW_PASS_L7_PROXY), .subject = "alpha"},
	{"l7 quota: a syn over its own closed entry overwrites it, at the quota", .then = true,
	 .setup = l7_counts_2_1, .pkt = SYN4(L7_OTHER4, 40100, 443),
	 OUT(TO_PROXY4(40100, PROXY_TLS)), PASS(FW_PASS_L7_PROXY), .subject = "alpha"},
	{"l7 quota: which counted nothing: a new port still drops", .then = true,
	 .setup = l7_counts_2_1, .pkt = SYN4(LEARNED4, 40103, 443), DROP(FW_DROP_L7_FULL),
	 .subject = "alpha"},
	{"l7 quota: a connection the proxy reported closed counts no more: a new port passes",
	 .then = true, .setup = l7_report_40101, .pkt = SYN4(LEARNED4, 40103, 443),
	 OUT(TO_PROXY4(40103, PROXY_TLS)), PASS(FW_PASS_L7_PROXY), .subject = "alpha"},
	{"l7 quota: a syn over a reported entry counts as new: at the quota it drops", .then = true,
	 .setup = l7_report_40101_again, .pkt = SYN4(LEARNED4, 40101, 443), DROP(FW_DROP_L7_FULL),
	 .subject = "alpha"},
	{"l7 quota: a released entry is gone and counted nothing twice", .then = true,
	 .setup = l7_report_40103_release, .pkt = SYN4(LEARNED4, 40101, 443),
	 OUT(TO_PROXY4(40101, PROXY_TLS)), PASS(FW_PASS_L7_PROXY), .subject = "alpha"},
	{
		"l7 quota: which it counted",
		.then = true,
		.setup = l7_counts_2_1_after,
		.pkt = SYN4(LEARNED4, 40105, 443),
		DROP(FW_DROP_L7_FULL),
		.subject = "alpha",
	},

	/* HTTP: its own proxy port and kind */
	{"l7: syn to a leased address on 80 goes to the http proxy port", .setup = l7_alpha,
	 .pkt = SYN4(LEARNED4, 40010, 80), OUT(TO_PROXY4(40010, PROXY_HTTP)),
	 PASS(FW_PASS_L7_PROXY), .subject = "alpha"},
	{"l7: its entry is of the http kind", .then = true, .setup = nat_http_open,
	 .prog = TO_SANDBOX,
	 .pkt = TCP4(ALPHA_GW4, ALPHA4, PROXY_HTTP, 40010, .tcp_flags = TH_SYN | TH_ACK,
		     .csum = true),
	 OUT(TCP4(LEARNED4, ALPHA4, 80, 40010, .tcp_flags = TH_SYN | TH_ACK, .csum = true)),
	 .verdict = TC_ACT_OK},

	/* IPv6 */
	{"l7: v6 syn to a leased address on 443 goes to the proxy", .setup = l7_alpha,
	 .pkt = TCP6(ALPHA6, LEARNED6, 40000, 443, .csum = true),
	 OUT(TCP6(ALPHA6, ALPHA_GW6, 40000, PROXY_TLS, .csum = true)), PASS(FW_PASS_L7_PROXY),
	 .subject = "alpha"},
	{"l7: v6 the segment after it follows the entry", .then = true, .setup = nat_learned6_open,
	 .pkt = TCP6(ALPHA6, LEARNED6, 40000, 443, .tcp_flags = TH_ACK, .payload = 40,
		     .csum = true),
	 OUT(TCP6(ALPHA6, ALPHA_GW6, 40000, PROXY_TLS, .tcp_flags = TH_ACK, .payload = 40,
		  .csum = true)),
	 PASS(FW_PASS_L7_PROXY), .subject = "alpha"},
	{"l7: v6 egress: the proxy's segment leaves with the original source", .then = true,
	 .prog = TO_SANDBOX,
	 .pkt = TCP6(ALPHA_GW6, ALPHA6, PROXY_TLS, 40000, .tcp_flags = TH_ACK, .payload = 60,
		     .csum = true),
	 OUT(TCP6(LEARNED6, ALPHA6, 443, 40000, .tcp_flags = TH_ACK, .payload = 60, .csum = true)),
	 .verdict = TC_ACT_OK},
	{"l7: v6 segment without an entry: untracked", .setup = l7_alpha,
	 .pkt = TCP6(ALPHA6, LEARNED6, 40001, 443, .tcp_flags = TH_ACK, .payload = 40),
	 DROP(FW_DROP_L7_UNTRACKED), .subject = "alpha"},
	{"l7: v6 udp 443 to a leased address: quic", .setup = l7_alpha,
	 .pkt = UDP6(ALPHA6, LEARNED6, 40000, 443), DROP(FW_DROP_L7_QUIC), .subject = "alpha"},
	{"l7: v6 proxy down", .setup = l7_alpha_down, .pkt = TCP6(ALPHA6, LEARNED6, 40000, 443),
	 DROP(FW_DROP_L7_PROXY_DOWN), .subject = "alpha"},

	/* fail closed */
	{"l7: proxy down: the syn drops", .setup = l7_alpha_down, .pkt = SYN4(LEARNED4, 40000, 443),
	 DROP(FW_DROP_L7_PROXY_DOWN), .subject = "alpha"},
	{"l7: no gateway of the family: the syn drops", .setup = l7_alpha_no_gateway,
	 .pkt = SYN4(LEARNED4, 40000, 443), DROP(FW_DROP_L7_PROXY_DOWN), .subject = "alpha"},
	{"l7: segment without an entry: untracked", .setup = l7_alpha,
	 .pkt = SEG4(LEARNED4, 40001, 443, TH_ACK), DROP(FW_DROP_L7_UNTRACKED), .subject = "alpha"},
	{"l7: fin without an entry: untracked", .setup = l7_alpha,
	 .pkt = SEG4(LEARNED4, 40001, 443, TH_FIN | TH_ACK), DROP(FW_DROP_L7_UNTRACKED),
	 .subject = "alpha"},
	/* explain reads no table's fill: forged */
	{"l7: table full: the syn drops", .setup = l7_alpha_table_full,
	 .pkt = SYN4(LEARNED4, 40000, 443), DROP(FW_DROP_L7_FULL), .subject = "alpha",
	 .forged = true},
	{"l7: fastwalld collects the idle entries: the syn goes to the proxy", .then = true,
	 .setup = l7_gc_all, .pkt = SYN4(LEARNED4, 40000, 443), OUT(TO_PROXY4(40000, PROXY_TLS)),
	 PASS(FW_PASS_L7_PROXY), .subject = "alpha"},
	{"l7: first fragment of a pinned connection cannot be redirected", .setup = l7_alpha,
	 .pkt = TCP4(ALPHA4, LEARNED4, 40000, 443, FRAG_FIRST(77), .payload = 64),
	 DROP(FW_DROP_FRAGMENT), .subject = "alpha"},
	{"l7: and its later fragment does not pass", .then = true,
	 .pkt = TCP4(ALPHA4, LEARNED4, 0, 0, FRAG_LAST(77, 8), .payload = 64),
	 DROP(FW_DROP_FRAGMENT)},

	/* QUIC */
	{"l7: udp 443 to a leased address: quic", .setup = l7_alpha,
	 .pkt = UDP4(ALPHA4, LEARNED4, 40000, 443), DROP(FW_DROP_L7_QUIC), .subject = "alpha"},
	{"l7: udp 443 with quic allowed passes as before", .setup = l7_alpha_quic,
	 .pkt = UDP4(ALPHA4, LEARNED4, 40000, 443), PASS(FW_PASS_LEARNED), .subject = "alpha"},
	{"l7: udp 80 (an http port) passes as before", .setup = l7_alpha,
	 .pkt = UDP4(ALPHA4, LEARNED4, 40000, 80), PASS(FW_PASS_LEARNED), .subject = "alpha"},

	/* what pinning leaves alone */
	{"l7: a subject without l7: unchanged", .setup = l7_unpinned_subject,
	 .pkt = SYN4(LEARNED4, 40000, 443), PASS(FW_PASS_LEARNED), .subject = "alpha"},
	{"l7: an allow-cidr pass is not pinned", .setup = l7_alpha, .pkt = SYN4(OK4, 40000, 443),
	 PASS(FW_PASS_ALLOW_CIDR), .subject = "alpha"},
	{"l7: ... unless the subject pins cidrs too", .setup = l7_alpha_cidr,
	 .pkt = SYN4(OK4, 40000, 443), OUT(TO_PROXY4(40000, PROXY_TLS)), PASS(FW_PASS_L7_PROXY),
	 .subject = "alpha"},
	{"l7: a port not pinned: unchanged", .setup = l7_alpha, .pkt = SYN4(LEARNED4, 40000, 8443),
	 PASS(FW_PASS_LEARNED), .subject = "alpha"},
	{"l7: a denied destination on 443 stays denied", .setup = l7_alpha,
	 .pkt = SYN4(BAD4, 40000, 443), DROP(FW_DROP_DENY_CIDR), .subject = "alpha"},
	{"l7: an expired lease on 443 stays expired", .setup = l7_alpha,
	 .pkt = SYN4(EXPIRED4, 40000, 443), DROP(FW_DROP_LEASE_EXPIRED), .subject = "alpha"},
	{"l7: another subject's default allow on 443: unchanged", .setup = l7_alpha,
	 .pkt = TCP4(BETA4, NOWHERE4, 40000, 443), PASS(FW_PASS_DEFAULT), .subject = "beta"},
	{"l7: settings without l7: unchanged", .setup = l7_flag_off,
	 .pkt = SYN4(LEARNED4, 40000, 443), PASS(FW_PASS_LEARNED), .subject = "alpha"},
	{"l7: egress from the proxy port without an entry is left alone", .setup = l7_alpha,
	 .prog = TO_SANDBOX, .pkt = FROM_PROXY4(40099, TH_ACK), .verdict = TC_ACT_OK},
};
const size_t l7_rows_n = sizeof(l7_rows) / sizeof(l7_rows[0]);

/* How many fastwall_l7_nat entries subject id holds. */
static size_t nat_held(__u32 id)
{
	struct fw_l7_nat_key k, next;
	struct fw_l7_nat v;
	size_t n = 0;
	void *prev = NULL;

	while (!bpf_map_get_next_key(t.dp->l7_nat_fd, prev, &next)) {
		k = next;
		prev = &k;
		if (!bpf_map_lookup_elem(t.dp->l7_nat_fd, &k, &v) && v.subject == id)
			n++;
	}
	return n;
}

/* What the share is for: alpha, root in its namespace, sends a SYN to
 * the pinned ports of a leased address from every source port, more
 * than the node's table holds. With a quota of 8 its entries stop at 8,
 * every other SYN drops l7-full, and a sibling's pinned connection
 * still gets its entry. */
void scenario_l7_flood(void)
{
	const struct row sibling = {
		"l7 flood: a sibling's pinned connection still gets its entry",
		.on_dummy = true,
		.pkt = TCP4(DELTA4, OK4, 40100, 443, .payload = 0, .csum = true),
		OUT(TCP4(DELTA4, DELTA_GW4, 40100, PROXY_TLS, .payload = 0, .csum = true,
			 .eth_src = DUMMY_MAC)),
		PASS(FW_PASS_L7_PROXY),
		.subject = "delta"};
	const size_t total = FW_MAX_L7_NAT + 4096;
	__u64 *counts = fw_dp_l7_counts(t.dp);
	__u32 a = id_of("alpha");
	size_t through = 0, dropped = 0, held;

	if (!counts || l7_quota_of(8)) {
		result(false, "l7 flood: fixture", "can't set the quota or map the counts");
		state_reset();
		return;
	}
	for (size_t i = 0; i < total; i++) {
		struct pkt_spec syn = TCP4(ALPHA4, LEARNED4, (__u16)(1024 + i % 64000),
					   i < 64000 ? 443 : 80, .payload = 0, .csum = true);
		int v = run_frame(prog_fd(FROM_SANDBOX), &syn);

		through += v == TC_ACT_OK;
		dropped += v == TC_ACT_SHOT;
	}
	held = nat_held(a);
	result(through == 8 && dropped == total - 8 && held == 8 && counts[a] == 8,
	       "l7 flood: the flooder holds its quota of 8 entries, its other syns drop",
	       "%zu passed, %zu dropped of %zu; %zu entries, count %llu", through, dropped, total,
	       held, (unsigned long long)counts[a]);
	result(run_row(&sibling, RUN_QUIET), sibling.desc, NULL);
	state_reset();
}
