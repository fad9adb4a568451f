// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* libFuzzer target for the BPF packet path: mutated frames run through the
 * real fw_from_sandbox (and fw_to_sandbox) programs with
 * bpf_prog_test_run_opts, against a fixed world programmed through the real
 * control-plane API, and an oracle in userspace that parses each frame
 * itself and decides it from the verdict order of docs/design.md. The
 * properties (any violation is an abort(), so a crash):
 *  - a frame the program passes is allowed by the oracle, with the same
 *    reason; drops are never questioned, so a new drop never trips it;
 *  - exactly one reason counter moves, by one packet and the frame's bytes,
 *    and it is a pass reason iff the program returned TC_ACT_OK; a pass
 *    moves its subject's counter, a drop emits one deny event with its
 *    reason, a pass none;
 *  - a frame comes out rewritten only as a DNS redirect (TCP/UDP to port 53,
 *    to the proxy's port and, with redirect_all, the gateway), as a pinned
 *    connection sent to the layer-7 proxy (the gateway, the proxy port of the
 *    kind) or, into a sandbox, as either proxy's answer getting its source
 *    back, with consistent checksums and nothing else touched.
 *
 * Input: one mode byte, then up to FUZZ_MAX_FRAMES records, each a control
 * byte, a 16-bit big-endian length and the frame (cut to what is left):
 *   mode bits 0-1: DNS proxy off / on for the gateway / on with redirect_all
 *        (3 = 2); bits 2-3: DoH off / list / strict (3 = list); bit 4:
 *        layer-7 pinning on (TCP 443 TLS, 80 HTTP; alpha pinned, delta its
 *        CIDR passes too), bit 5: the proxy up, bit 6: QUIC allowed
 *   ctl  bits 0-1: the receiving interface lo / port A / port B (3 = lo);
 *        bit 2: the frame goes through fw_to_sandbox (traffic into a
 *        sandbox: it can open pod flows and carries the proxy's answers);
 *        bit 3: keep the frame's source MAC (otherwise the harness gives
 *        pkt.c's MAC the port's own, see world_mac); bit 4: before the
 *        frame, the proxy reports a pinned connection closed (entry
 *        bits 6-7 of the oracle's table, fw_dp_l7_closed), bit 5: and
 *        fastwalld releases it (fw_dp_l7_release)
 * State the programs keep (fragments, DNS NAT, pod flows, connections, the
 * layer-7 table) is
 * emptied before every input, so an input decides the same way every run.
 *
 * Holes the data path once had can be tolerated, to study the old
 * behaviour: FW_FUZZ_TOLERATE=nd,l4-bounds,v4-mapped,mac (or "all").
 * Default: none, every rule strict. FW_FUZZ_WRITE_SEEDS=DIR writes the seed corpus (built
 * with tests/bpf/pkt.c) into DIR and exits. Needs root: it runs in its own
 * network and mount namespaces, with a private bpffs, so nothing of it is
 * visible outside and nothing outlives it. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "common/addr.h"
#include "datapath/datapath.h"
#include "datapath/dispatch.h"
#include "datapath/l7.h"
#include "datapath/l2bind.h"
#include "datapath/leases.h"
#include "datapath/reasons.h"
#include "datapath/stats.h"
#include "common/log.h"
#include "pkt.h"
#include "subjects/registry.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_MAX_FRAMES 8
#define FUZZ_FRAME_MAX	2048  /* test_run wants a frame that fits a page */
#define DNS_PORT	15353 /* the proxy's */
#define L7_TLS_PORT	15443 /* the layer-7 proxy's, for TCP 443 */
#define L7_HTTP_PORT	15080 /* ... for TCP 80 */
#define O_MAX_FRAG_IDS	8     /* fragment headers remembered per frame */

#define PORT_A	  "fzport-a"
#define PORT_B	  "fzport-b"
#define PORT_GONE "fzport-gone" /* named by a subject, never created */

/* ---- the world ------------------------------------------------------------
 * Written once as text; the control plane gets it through the registry, the
 * oracle parses the same text itself (inet_pton, its own prefix matching). */

enum port { P_ANY = 0, P_A, P_B, P_GONE };

struct world_subject {
	const char *name;
	const char *addrs[3];
	const char *gateway[2]; /* IPv4, IPv6 */
	const char *private_net[2];
	enum port port;
	__u8 state;
	const char *dflt;
	const char *rules[16]; /* "allow 192.0.2.128/26 443,8443" */
	const char *leases[6]; /* live */
	const char *expired[3];
	__u8 l7; /* FW_SF_L7, FW_SF_L7_CIDR */
};

static const struct world_subject world[] = {
	{
		.name = "alpha",
		.addrs = {"10.42.0.10", "fd00:42::10"},
		.gateway = {"10.42.0.1", "fd00:42::1"},
		.private_net = {"10.42.0.0/24", "fd00:42::/64"},
		.port = P_A,
		.dflt = "deny",
		.rules =
			{
				"allow 192.0.2.0/25",
				"allow 2001:db8:1::/48",
				"allow 198.51.100.0/24",
				"deny 198.51.100.128/25",
				"deny 198.51.100.0/26 22",
				"deny 203.0.113.0/24",
				"allow 203.0.113.64/26",
				"deny 2001:db8:dead::/48",
				"allow 2001:db8:dead:1::/64",
				"allow 192.0.2.128/26 443,8443",
				"deny 192.0.2.160/27 8443",
				"allow 2001:db8:2::/48 53,443",
			},
		.leases = {"192.0.2.200", "192.0.2.150", "2001:db8:99::1", "203.0.113.9",
			   "2001:db8:2::99"},
		.expired = {"192.0.2.201", "2001:db8:99::2"},
		.l7 = FW_SF_L7,
	},
	{
		.name = "beta",
		.addrs = {"10.42.0.30", "fd00:42::30"},
		.gateway = {"10.42.0.1", "fd00:42::1"},
		.private_net = {"10.42.0.0/24", "fd00:42::/64"},
		.port = P_B,
		.dflt = "allow",
		.rules =
			{
				"deny 203.0.113.0/24",
				"deny 2001:db8:dead::/48",
				"deny 0.0.0.0/0 25",
				"deny 2000::/3 25",
				"allow 203.0.113.7 443",
			},
		.leases = {"198.51.100.77"},
	},
	{
		.name = "gamma",
		.addrs = {"10.42.0.40", "fd00:42::40"},
		.gateway = {"10.42.0.1", "fd00:42::1"},
		.private_net = {"10.42.0.0/24", "fd00:42::/64"},
		.state = FW_STATE_DENYING,
		.dflt = "allow",
	},
	{
		/* IPv6 only, no private network, an IPv4 rule it can only reach
		 * through a v4-mapped destination */
		.name = "delta",
		.addrs = {"fd00:42::50"},
		.gateway = {NULL, "fd00:42::1"},
		.dflt = "deny",
		.rules = {"allow 2001:db8::/32 80,443", "deny 2001:db8:dead::/48",
			  "allow 192.0.2.0/24"},
		.leases = {"2001:db8:77::1"},
		.l7 = FW_SF_L7 | FW_SF_L7_CIDR,
	},
	{
		.name = "zeta",
		.addrs = {"10.42.0.60"},
		.port = P_GONE,
		.dflt = "allow",
	},
	{
		/* no gateway: redirect_all has nowhere to send its DNS */
		.name = "epsilon",
		.addrs = {"10.42.0.70"},
		.dflt = "allow",
	},
};

#define NSUBJECTS (sizeof(world) / sizeof(world[0]))

/* The MAC tests/bpf/pkt.c sends from. Each port is bound to a MAC of its
 * own (a MAC belongs to one port only): port A to this one, port B and lo
 * to the next ones; the harness gives a frame its port's MAC unless the
 * input asks to keep the frame's own (ctl bit 3). A frame from any other
 * source MAC, or an ARP claim with any other sender MAC, is a sandbox
 * posing as another. */
static const __u8 world_mac[6] = {2, 0, 0, 0, 0, 2};

static void port_mac(int ifindex, __u8 mac[6]);
static void ports_bind(void);

static const char *const world_local[] = {"10.42.0.2", "fd00:42::2"};
static const struct {
	__u8 proto;
	__u16 port;
} world_local_ports[] = {{IPPROTO_TCP, 8080}, {IPPROTO_UDP, 8125}};
static const char *const world_doh[] = {"192.0.2.48/28", "2001:db8:1::53/128"};

/* ---- the oracle's view of the world ---------------------------------------- */

struct o_prefix {
	struct fw_ip net;
	unsigned int plen; /* over 128 bits */
	int family;	   /* 4 or 6 */
};

struct o_rule {
	bool allow;
	struct o_prefix pfx;
	__u16 ports[8];
	size_t nports; /* 0: every port (and every protocol) */
};

struct o_subject {
	const struct world_subject *def;
	__u32 id; /* the kernel's, for the counters */
	struct fw_ip addrs[3];
	size_t naddrs;
	int ifindex; /* 0 = any, -1 = bound to an interface that does not exist */
	bool active;
	bool has_gw[2];
	struct fw_ip gw[2];
	bool has_private[2];
	struct o_prefix private_net[2];
	bool dflt_allow;
	struct o_rule rules[16];
	size_t nrules;
	struct fw_ip leases[6];
	size_t nleases;
	struct fw_ip expired[3];
	size_t nexpired;
	__u8 l7;
};

static struct {
	struct o_subject subj[NSUBJECTS];
	struct fw_ip local[2];
	struct o_prefix doh[2];
	int ifindex_a, ifindex_b;
	unsigned int tolerate; /* TOL_* */
} o;

enum {
	TOL_ND = 1 << 0,	/* ND/MLD to any destination, RS/NA from anyone */
	TOL_L4_BOUNDS = 1 << 1, /* transport header read up to the frame's end */
	TOL_V4MAPPED = 1 << 2,	/* IPv6 with ::ffff:a.b.c.d addresses decided as IPv4 */
	TOL_MAC = 1 << 3,	/* any source MAC (Ethernet, ARP sender) on any port */
};

static void world_bug(const char *what, const char *text)
{
	fprintf(stderr, "fuzz world: bad %s '%s'\n", what, text);
	exit(2);
}

static int o_addr(const char *text, struct fw_ip *ip)
{
	struct in_addr a4;

	memset(ip, 0, sizeof(*ip));
	if (inet_pton(AF_INET, text, &a4) == 1) {
		ip->b[10] = ip->b[11] = 0xff;
		memcpy(&ip->b[12], &a4, 4);
		return 4;
	}
	if (inet_pton(AF_INET6, text, ip->b) == 1)
		return 6;
	world_bug("address", text);
	return 0;
}

static struct o_prefix o_prefix_parse(const char *text)
{
	char buf[64];
	char *slash;
	struct o_prefix p;
	long len;

	snprintf(buf, sizeof(buf), "%s", text);
	slash = strchr(buf, '/');
	if (slash)
		*slash = 0;
	p.family = o_addr(buf, &p.net);
	len = slash ? strtol(slash + 1, NULL, 10) : (p.family == 4 ? 32 : 128);
	p.plen = (unsigned int)len + (p.family == 4 ? 96 : 0);
	return p;
}

static bool ip_eq(const struct fw_ip *a, const struct fw_ip *b)
{
	return !memcmp(a->b, b->b, 16);
}

static bool in_prefix(const struct fw_ip *a, const struct o_prefix *p)
{
	for (unsigned int bit = 0; bit < p->plen; bit++) {
		__u8 m = 0x80 >> (bit % 8);

		if ((a->b[bit / 8] & m) != (p->net.b[bit / 8] & m))
			return false;
	}
	return true;
}

static bool ip_zero(const struct fw_ip *a)
{
	static const struct fw_ip zero;

	return ip_eq(a, &zero);
}

static bool ip_link_local(const struct fw_ip *a)
{
	return a->b[0] == 0xfe && (a->b[1] & 0xc0) == 0x80;
}

static bool ip_ff02(const struct fw_ip *a)
{
	return a->b[0] == 0xff && a->b[1] == 0x02;
}

static bool ip_v4mapped(const struct fw_ip *a)
{
	static const __u8 pfx[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	return !memcmp(a->b, pfx, 12);
}

static void o_rule_parse(const char *text, struct o_rule *r)
{
	char action[8], target[64], ports[64] = "";

	memset(r, 0, sizeof(*r));
	if (sscanf(text, "%7s %63s %63s", action, target, ports) < 2)
		world_bug("rule", text);
	r->allow = !strcmp(action, "allow");
	r->pfx = o_prefix_parse(target);
	for (char *tok = strtok(ports, ","); tok && r->nports < 8; tok = strtok(NULL, ","))
		r->ports[r->nports++] = (__u16)strtol(tok, NULL, 10);
}

static void oracle_world_init(void)
{
	for (size_t i = 0; i < NSUBJECTS; i++) {
		const struct world_subject *d = &world[i];
		struct o_subject *s = &o.subj[i];

		s->def = d;
		for (size_t a = 0; a < 3 && d->addrs[a]; a++)
			o_addr(d->addrs[a], &s->addrs[s->naddrs++]);
		s->ifindex = d->port == P_A	 ? o.ifindex_a
			     : d->port == P_B	 ? o.ifindex_b
			     : d->port == P_GONE ? -1
						 : 0;
		s->active = d->state != FW_STATE_DENYING;
		for (int f = 0; f < 2; f++) {
			if (d->gateway[f]) {
				s->has_gw[f] = true;
				o_addr(d->gateway[f], &s->gw[f]);
			}
			if (d->private_net[f]) {
				s->has_private[f] = true;
				s->private_net[f] = o_prefix_parse(d->private_net[f]);
			}
		}
		s->dflt_allow = !strcmp(d->dflt, "allow");
		for (size_t r = 0; r < 16 && d->rules[r]; r++)
			o_rule_parse(d->rules[r], &s->rules[s->nrules++]);
		for (size_t l = 0; l < 6 && d->leases[l]; l++)
			o_addr(d->leases[l], &s->leases[s->nleases++]);
		for (size_t l = 0; l < 3 && d->expired[l]; l++)
			o_addr(d->expired[l], &s->expired[s->nexpired++]);
		s->l7 = d->l7;
	}
	for (size_t i = 0; i < 2; i++) {
		o_addr(world_local[i], &o.local[i]);
		o.doh[i] = o_prefix_parse(world_doh[i]);
	}
}

static struct o_subject *o_subject_of(const struct fw_ip *addr)
{
	for (size_t i = 0; i < NSUBJECTS; i++)
		for (size_t a = 0; a < o.subj[i].naddrs; a++)
			if (ip_eq(&o.subj[i].addrs[a], addr))
				return &o.subj[i];
	return NULL;
}

static bool o_on_its_port(const struct o_subject *s, int ifindex)
{
	return s->ifindex == 0 || s->ifindex == ifindex;
}

/* ---- the oracle's frame parser --------------------------------------------- */

enum fkind { FK_MALFORMED, FK_ETHERTYPE, FK_ARP, FK_IP };

struct frame {
	enum fkind kind;
	__u8 eth_src[6], arp_sha[6];
	const char *why; /* FK_MALFORMED: what */
	int family;	 /* 4 or 6 */
	struct fw_ip src, dst;
	__u8 proto, hop_limit, icmp_type;
	bool has_ports, has_icmp, frag_first, frag_later;
	bool tcp_doff_ok; /* TCP data offset 5 or more, the options in the frame */
	__u8 tcp_flags;
	__u16 sport, dport; /* host order */
	__u32 frag_ids[O_MAX_FRAG_IDS];
	size_t nfrag_ids;
	struct fw_ip nd_target;
	size_t l3, l4, ip_end, len;
};

static __u16 be16(const __u8 *p)
{
	return (__u16)(p[0] << 8 | p[1]);
}

static void v4_to_ip(const __u8 *p, struct fw_ip *ip)
{
	memset(ip, 0, sizeof(*ip));
	ip->b[10] = ip->b[11] = 0xff;
	memcpy(&ip->b[12], p, 4);
}

static bool malformed(struct frame *f, const char *why)
{
	f->kind = FK_MALFORMED;
	f->why = why;
	return false;
}

/* The transport header, which must lie inside the payload the IP header
 * declares (bound = its end), or with TOL_L4_BOUNDS inside the frame. Only
 * what classification needs is required: the ports of TCP and UDP, the
 * type of ICMPv6 (and an advertisement's target). */
static bool parse_l4(const __u8 *p, size_t bound, struct frame *f)
{
	size_t l4 = f->l4;

	switch (f->proto) {
	case IPPROTO_TCP:
		if (l4 + 20 > bound)
			return malformed(f, "tcp header incomplete");
		f->tcp_doff_ok = p[l4 + 12] >> 4 >= 5 && l4 + (p[l4 + 12] >> 4) * 4 <= f->len;
		f->tcp_flags = p[l4 + 13];
		break;
	case IPPROTO_UDP:
		if (l4 + 8 > bound)
			return malformed(f, "udp header incomplete");
		break;
	case IPPROTO_ICMPV6:
		if (f->family != 6)
			return true;
		if (l4 + 4 > bound)
			return malformed(f, "icmpv6 header incomplete");
		f->has_icmp = true;
		f->icmp_type = p[l4];
		if (f->icmp_type == ICMP6_NA) {
			if (l4 + 24 > bound)
				return malformed(f, "neighbour advertisement without its target");
			memcpy(f->nd_target.b, p + l4 + 8, 16);
		}
		return true;
	default:
		return true;
	}
	f->sport = be16(p + l4);
	f->dport = be16(p + l4 + 2);
	f->has_ports = true;
	return true;
}

static bool parse_ipv4(const __u8 *p, size_t len, size_t off, struct frame *f, bool lax)
{
	size_t ihl, tot;
	__u16 frag;

	if (off + 20 > len)
		return malformed(f, "ipv4 header truncated");
	if (p[off] >> 4 != 4)
		return malformed(f, "ipv4 version");
	ihl = (size_t)(p[off] & 0xf) * 4;
	tot = be16(p + off + 2);
	if (ihl < 20 || tot < ihl || off + tot > len)
		return malformed(f, "ipv4 lengths");
	f->family = 4;
	f->l3 = off;
	f->ip_end = off + tot;
	f->proto = p[off + 9];
	f->hop_limit = p[off + 8];
	v4_to_ip(p + off + 12, &f->src);
	v4_to_ip(p + off + 16, &f->dst);
	frag = be16(p + off + 6);
	f->frag_later = frag & 0x1fff;
	f->frag_first = !f->frag_later && (frag & 0x2000);
	f->frag_ids[0] = be16(p + off + 4);
	f->nfrag_ids = 1;
	f->l4 = off + ihl;
	f->kind = FK_IP;
	if (f->frag_later)
		return true;
	return parse_l4(p, lax ? len : f->ip_end, f);
}

static bool parse_ipv6(const __u8 *p, size_t len, size_t off, struct frame *f, bool lax)
{
	size_t end;
	__u8 nh;
	int next = 0;

	if (off + 40 > len)
		return malformed(f, "ipv6 header truncated");
	if (p[off] >> 4 != 6)
		return malformed(f, "ipv6 version");
	end = off + 40 + be16(p + off + 4);
	nh = p[off + 6];
	/* payload length 0 is a jumbogram; only "no next header" may be empty */
	if (end == off + 40 && nh != 59)
		return malformed(f, "ipv6 payload length 0");
	if (end > len)
		return malformed(f, "ipv6 payload beyond the frame");
	f->family = 6;
	f->l3 = off;
	f->ip_end = end;
	f->hop_limit = p[off + 7];
	memcpy(f->src.b, p + off + 8, 16);
	memcpy(f->dst.b, p + off + 24, 16);
	off += 40;
	/* hop-by-hop, routing, destination options, fragment, AH: at most 8,
	 * each inside the payload */
	for (;;) {
		size_t hlen;

		if (nh != 0 && nh != 43 && nh != 60 && nh != 44 && nh != 51)
			break;
		if (next++ == 8)
			return malformed(f, "more than 8 extension headers");
		if (off + 2 > end)
			return malformed(f, "extension header beyond the payload");
		hlen = nh == 44	  ? 8
		       : nh == 51 ? ((size_t)p[off + 1] + 2) * 4
				  : ((size_t)p[off + 1] + 1) * 8;
		if (off + hlen > end)
			return malformed(f, "extension header beyond the payload");
		if (nh == 44) {
			__u16 fo = be16(p + off + 2);

			if (fo & 0xfff8)
				f->frag_later = true;
			else if (fo & 1)
				f->frag_first = true;
			if (f->nfrag_ids < O_MAX_FRAG_IDS)
				f->frag_ids[f->nfrag_ids++] =
					(__u32)be16(p + off + 4) << 16 | be16(p + off + 6);
		}
		nh = p[off];
		off += hlen;
		/* what follows a later fragment's fragment header is data of
		 * the datagram, not headers (the reassembled packet takes its
		 * chain from the first fragment) */
		if (f->frag_later)
			break;
	}
	if (f->frag_later)
		f->frag_first = false;
	f->proto = nh;
	f->l4 = off;
	f->kind = FK_IP;
	if (f->frag_later)
		return true;
	return parse_l4(p, lax ? len : end, f);
}

/* lax: transport headers may be read up to the end of the frame */
static void parse_frame(const __u8 *p, size_t len, struct frame *f, bool lax)
{
	size_t off = 14;
	__u16 et;

	memset(f, 0, sizeof(*f));
	if (len < 14) {
		malformed(f, "shorter than ethernet");
		return;
	}
	memcpy(f->eth_src, p + 6, 6);
	f->len = len;
	et = be16(p + 12);
	if (et == 0x8100 || et == 0x88a8) {
		if (off + 4 > len) {
			malformed(f, "vlan tag truncated");
			return;
		}
		et = be16(p + 16);
		off += 4;
		if (et == 0x8100 || et == 0x88a8) {
			malformed(f, "two vlan tags");
			return;
		}
	}
	switch (et) {
	case 0x0800:
		parse_ipv4(p, len, off, f, lax);
		return;
	case 0x86dd:
		parse_ipv6(p, len, off, f, lax);
		return;
	case 0x0806:
		/* Ethernet/IPv4 ARP up to the sender's protocol address */
		if (off + 18 > len) {
			malformed(f, "arp truncated");
			return;
		}
		if (be16(p + off) != 1 || be16(p + off + 2) != 0x0800 || p[off + 4] != 6 ||
		    p[off + 5] != 4) {
			malformed(f, "arp not ethernet/ipv4");
			return;
		}
		f->kind = FK_ARP;
		f->family = 4;
		memcpy(f->arp_sha, p + off + 8, 6);
		v4_to_ip(p + off + 14, &f->src);
		return;
	default:
		f->kind = FK_ETHERTYPE;
		return;
	}
}

/* ---- the oracle's per-input state ------------------------------------------
 * What the programs remember between the frames of one input: first
 * fragments that may open their datagram, DNS queries redirected, flows the
 * pod opened. The oracle may remember more than the kernel (an LRU may
 * forget, which only drops), never less. */

#define O_STATE_MAX (FUZZ_MAX_FRAMES * O_MAX_FRAG_IDS)

struct o_frag {
	int family;
	struct fw_ip src, dst;
	__u32 id;
	__u8 proto; /* IPv4 only: IPv6 reassembles by addresses and id */
	__u32 subject;
};

struct o_nat {
	struct fw_ip client;
	__u16 client_port;
	__u8 proto;
	struct fw_ip orig_dst;
	__u16 orig_port;
};

/* a connection sent to the layer-7 proxy (fastwall_l7_nat) */
struct o_l7 {
	struct fw_ip client, orig;
	__u16 client_port, proxy_port, orig_port;
	__u32 subject;
	bool closed; /* a FIN or RST passed, or the proxy reported it closed */
};

struct o_flow {
	struct fw_ip sandbox, pod;
	__u16 sandbox_port, pod_port;
	__u8 proto;
};

static struct {
	struct o_frag frags[O_STATE_MAX];
	size_t nfrags;
	struct o_nat nat[FUZZ_MAX_FRAMES];
	size_t nnat;
	struct o_flow flows[FUZZ_MAX_FRAMES];
	size_t nflows;
	struct o_l7 l7[FUZZ_MAX_FRAMES];
	size_t nl7;
	bool dns_proxy, dns_all, doh_list, doh_strict, l7_on, l7_up, l7_quic;
	int ifindex;
	char trace[512]; /* how the oracle decided the last frame */
} st;

struct verdict {
	bool allow;
	__u32 reason;	 /* with allow: the pass reason fastwall must count */
	__u32 subject;	 /* with allow: whose counter moves; 0 = not checked */
	bool redirect;	 /* with allow: DNS sent to the proxy, or a pinned connection */
	struct fw_ip to; /* ... at this address */
	__u16 to_port;	 /* ... and port */
	bool l7;	 /* the redirect is layer-7 pinning's */
};

static bool decided(struct verdict *v, bool allow, __u32 reason, const struct o_subject *s,
		    const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static bool decided(struct verdict *v, bool allow, __u32 reason, const struct o_subject *s,
		    const char *fmt, ...)
{
	va_list ap;

	v->allow = allow;
	v->reason = reason;
	v->subject = s ? s->id : 0;
	va_start(ap, fmt);
	vsnprintf(st.trace, sizeof(st.trace), fmt, ap);
	va_end(ap);
	return true;
}

#define ALLOW(v, r, s, ...) decided(v, true, r, s, __VA_ARGS__)
#define DENY(v, ...)	    decided(v, false, FW_REASON_MAX, NULL, __VA_ARGS__)

/* ---- the verdict steps, in the order of docs/design.md ---------------------
 * Each returns true when it decided the frame (v says how), false to go on
 * to the next step. A step may deny where fastwall drops for a reason the
 * oracle does not model: only passes are checked. */

/* Neighbour claims (ARP sender, NS source, NA target) must come from the
 * subject that owns the address, on its own port, in any state. */
static bool o_claim_ok(const struct fw_ip *addr)
{
	const struct o_subject *s = o_subject_of(addr);

	return s && o_on_its_port(s, st.ifindex);
}

/* 0. The port's own MAC: as the Ethernet source of everything, and as
 * the sender hardware address of ARP. */
static bool step_mac(const struct frame *f, struct verdict *v)
{
	if (o.tolerate & TOL_MAC)
		return false;
	__u8 mac[6];

	port_mac(st.ifindex, mac);
	if (memcmp(f->eth_src, mac, 6))
		return DENY(v, "source mac not the port's");
	if (f->kind == FK_ARP && memcmp(f->arp_sha, mac, 6))
		return DENY(v, "arp sender mac not the port's");
	return false;
}

/* 1. ARP: an address probe (sender 0.0.0.0) or a claim by its owner. */
static bool step_arp(const struct frame *f, struct verdict *v)
{
	static const struct fw_ip probe = {.b = {[10] = 0xff, [11] = 0xff}};

	if (ip_eq(&f->src, &probe))
		return ALLOW(v, FW_PASS_NEIGH, NULL, "arp probe");
	if (o_claim_ok(&f->src))
		return ALLOW(v, FW_PASS_NEIGH, NULL, "arp from the sender's own port");
	return DENY(v, "arp claiming an address that is not the sender's");
}

/* Where neighbour discovery goes: link-scope multicast, link-local, the
 * gateway of the sending subject (any subject's when the source is :: or
 * link-local, whose port the oracle does not know). */
static bool o_nd_destination_ok(const struct frame *f, const struct o_subject *from)
{
	if (ip_ff02(&f->dst) || ip_link_local(&f->dst))
		return true;
	for (size_t i = 0; i < NSUBJECTS; i++) {
		const struct o_subject *s = &o.subj[i];

		if ((!from || from == s) && s->has_gw[1] && ip_eq(&s->gw[1], &f->dst))
			return true;
	}
	/* unicast neighbour unreachability detection of a pod-local address */
	for (size_t i = 0; from && i < 2; i++)
		if (ip_eq(&o.local[i], &f->dst))
			return true;
	return false;
}

/* The source of ND and MLD: :: (only NS for duplicate address detection,
 * RS and MLD), link-local (which the oracle cannot bind to a port), or one
 * of the sending port's own addresses. */
static bool o_nd_source_ok(const struct frame *f, const struct o_subject **from)
{
	*from = NULL;
	if (ip_zero(&f->src))
		return f->icmp_type != ICMP6_NA;
	if (ip_link_local(&f->src))
		return true;
	*from = o_subject_of(&f->src);
	return *from && o_on_its_port(*from, st.ifindex);
}

/* 2a. ND (RS, NS, NA with hop limit 255), strict: only where ND goes, only
 * from the port's own addresses, NA only for a target the port owns. */
static bool step_nd_strict(const struct frame *f, struct verdict *v)
{
	const struct o_subject *from;

	if (f->hop_limit != 255)
		return DENY(v, "nd with hop limit %u", f->hop_limit);
	if (!o_nd_source_ok(f, &from))
		return DENY(v, "nd from a source that is not the port's");
	if (!o_nd_destination_ok(f, from))
		return DENY(v, "nd to a destination nd never goes to");
	if (f->icmp_type == ICMP6_NA) {
		if (ip_zero(&f->nd_target) || f->nd_target.b[0] == 0xff)
			return DENY(v, "na for :: or a multicast target");
		if (!ip_link_local(&f->nd_target) && !o_claim_ok(&f->nd_target))
			return DENY(v, "na claiming an address that is not the sender's");
	}
	return ALLOW(v, FW_PASS_NEIGH, NULL, "nd type %u on the link", f->icmp_type);
}

/* 2a'. ND as fastwall decided it before destinations were checked
 * (TOL_ND): any destination, RS and link-local NA targets from anyone. */
static bool step_nd_tolerant(const struct frame *f, struct verdict *v)
{
	if (f->hop_limit != 255)
		return DENY(v, "nd with hop limit %u", f->hop_limit);
	if (f->icmp_type == ICMP6_NA && !ip_zero(&f->nd_target) && !ip_link_local(&f->nd_target) &&
	    !o_claim_ok(&f->nd_target))
		return DENY(v, "na claiming an address that is not the sender's");
	if (f->icmp_type == ICMP6_NS && !ip_zero(&f->src) && !ip_link_local(&f->src) &&
	    !o_claim_ok(&f->src))
		return DENY(v, "ns from an address that is not the sender's");
	return ALLOW(v, FW_PASS_NEIGH, NULL, "nd (tolerant)");
}

/* 2. Link-local control: ND, router advertisements and redirects (never
 * from a sandbox), MLD to link-scope multicast (from the port's own
 * addresses). Anything else goes on as ordinary ICMPv6. */
static bool step_icmp6_control(const struct frame *f, struct verdict *v)
{
	const struct o_subject *from;

	if (f->family != 6 || !f->has_icmp || f->frag_later)
		return false;
	switch (f->icmp_type) {
	case ICMP6_RS:
	case ICMP6_NS:
	case ICMP6_NA:
		return o.tolerate & TOL_ND ? step_nd_tolerant(f, v) : step_nd_strict(f, v);
	case ICMP6_RA:
	case ICMP6_REDIRECT:
		return DENY(v, "router advertisement or redirect from a sandbox");
	case 130: /* MLD query, report, done */
	case 131:
	case 132:
	case ICMP6_MLD2_REPORT:
		if (!ip_ff02(&f->dst))
			return false;
		if (!(o.tolerate & TOL_ND) && !o_nd_source_ok(f, &from))
			return DENY(v, "mld from a source that is not the port's");
		return ALLOW(v, FW_PASS_NEIGH, NULL, "mld to ff02::/16");
	default:
		return false;
	}
}

/* 3. A non-first fragment passes only behind a first fragment of the same
 * datagram that passed (IPv4: addresses, id, protocol; IPv6: addresses, id). */
static bool step_fragment(const struct frame *f, struct verdict *v)
{
	if (!f->frag_later)
		return false;
	for (size_t i = 0; i < st.nfrags; i++) {
		const struct o_frag *r = &st.frags[i];

		if (r->family != f->family || !ip_eq(&r->src, &f->src) || !ip_eq(&r->dst, &f->dst))
			continue;
		if (f->family == 4 && r->proto != f->proto)
			continue;
		for (size_t k = 0; k < f->nfrag_ids; k++) {
			if (r->id == f->frag_ids[k]) {
				v->allow = true;
				v->reason = FW_PASS_FRAGMENT;
				v->subject = r->subject;
				snprintf(st.trace, sizeof(st.trace),
					 "later fragment of a passed one");
				return true;
			}
		}
	}
	return DENY(v, "later fragment of no passed datagram");
}

/* v4-mapped addresses in an IPv6 packet are not IPv4 (unless TOL_V4MAPPED,
 * under which they are looked up as the 128-bit addresses they are). */
static bool step_v4mapped(const struct frame *f, struct verdict *v)
{
	if (f->family != 6 || (o.tolerate & TOL_V4MAPPED))
		return false;
	if (ip_v4mapped(&f->src) || ip_v4mapped(&f->dst))
		return DENY(v, "ipv6 with a v4-mapped address");
	return false;
}

static bool o_is_l4_port(const struct frame *f, __u16 port)
{
	return f->has_ports && f->dport == port;
}

static int fam_index(const struct frame *f)
{
	return f->family == 4 ? 0 : 1;
}

/* Destinations that are the pod's whatever its interfaces hold: loopback
 * (127.0.0.0/8, ::1), link-local (fe80::/10), the limited broadcast and
 * link-scope multicast (224.0.0.0/24, ff02::/16). */
static bool o_pod_local_by_prefix(int family, const struct fw_ip *a)
{
	static const struct fw_ip lo6 = {.b = {[15] = 1}};

	if (family == 4)
		return a->b[12] == 127 || (a->b[12] == 224 && a->b[13] == 0 && a->b[14] == 0) ||
		       (a->b[12] == 255 && a->b[13] == 255 && a->b[14] == 255 && a->b[15] == 255);
	return ip_eq(a, &lo6) || ip_link_local(a) || ip_ff02(a);
}

/* The pod's own addresses as this subject sees them: its gateway of the
 * frame's family, the configured local addresses, and those matched by
 * prefix. */
static bool o_pod_local(const struct o_subject *s, int family, const struct fw_ip *a)
{
	int fi = family == 4 ? 0 : 1;

	if (s->has_gw[fi] && ip_eq(&s->gw[fi], a))
		return true;
	for (size_t i = 0; i < 2; i++)
		if (ip_eq(&o.local[i], a))
			return true;
	return o_pod_local_by_prefix(family, a);
}

/* 6. DNS: with the proxy on, TCP/UDP 53 to a pod-local address keeps its
 * address and moves to the proxy's port; with redirect_all, to any other
 * address it goes to the subject's gateway. A first fragment can't be
 * redirected. Before the state check. */
static bool step_dns(const struct frame *f, const struct o_subject *s, struct verdict *v)
{
	int fi = fam_index(f);

	if (!st.dns_proxy || !o_is_l4_port(f, 53))
		return false;
	if (o_pod_local(s, f->family, &f->dst))
		v->to = f->dst;
	else if (st.dns_all && s->has_gw[fi])
		v->to = s->gw[fi];
	else
		return false;
	if (f->frag_first)
		return DENY(v, "first fragment of a dns query");
	v->redirect = true;
	v->to_port = DNS_PORT;
	return ALLOW(v, FW_PASS_DNS_PROXY, s, "dns to the proxy");
}

/* 9. Pod-local: DNS, the configured local ports, replies on flows the pod
 * opened; nothing else. */
static bool step_pod_local(const struct frame *f, const struct o_subject *s, struct verdict *v)
{
	if (!o_pod_local(s, f->family, &f->dst))
		return false;
	if (o_is_l4_port(f, 53))
		return ALLOW(v, FW_PASS_DNS_LOCAL, s, "dns to the pod");
	for (size_t i = 0;
	     f->has_ports && i < sizeof(world_local_ports) / sizeof(world_local_ports[0]); i++)
		if (world_local_ports[i].proto == f->proto && world_local_ports[i].port == f->dport)
			return ALLOW(v, FW_PASS_POD_LOCAL, s, "a configured local port");
	for (size_t i = 0; f->has_ports && i < st.nflows; i++) {
		const struct o_flow *fl = &st.flows[i];

		if (fl->proto == f->proto && ip_eq(&fl->sandbox, &f->src) &&
		    ip_eq(&fl->pod, &f->dst) && fl->sandbox_port == f->sport &&
		    fl->pod_port == f->dport)
			return ALLOW(v, FW_PASS_POD_REPLY, s, "reply on a flow the pod opened");
	}
	return DENY(v, "pod-local");
}

/* 11. DoH: TCP 443 to the list (list mode) or anywhere (strict mode). */
static bool step_doh(const struct frame *f, struct verdict *v)
{
	if (f->proto != IPPROTO_TCP || !o_is_l4_port(f, 443))
		return false;
	if (st.doh_strict)
		return DENY(v, "doh strict");
	for (size_t i = 0; st.doh_list && i < 2; i++)
		if (in_prefix(&f->dst, &o.doh[i]))
			return DENY(v, "doh list");
	return false;
}

/* A rule applies when its prefix covers the destination and, with ports,
 * the frame is TCP/UDP to one of them. */
static bool o_rule_applies(const struct o_rule *r, const struct frame *f)
{
	if (!in_prefix(&f->dst, &r->pfx))
		return false;
	/* same family only (a v4-mapped IPv6 destination is IPv4 when tolerated) */
	if (r->pfx.family != f->family && !(o.tolerate & TOL_V4MAPPED))
		return false;
	if (!r->nports)
		return true;
	if (!f->has_ports || (f->proto != IPPROTO_TCP && f->proto != IPPROTO_UDP))
		return false;
	for (size_t i = 0; i < r->nports; i++)
		if (r->ports[i] == f->dport)
			return true;
	return false;
}

/* 12. Policy: any deny that applies beats any allow that applies, whatever
 * their order or lengths; then learned leases (default deny only), then the
 * default. */
static bool step_policy(const struct frame *f, const struct o_subject *s, struct verdict *v)
{
	bool allow = false;

	for (size_t i = 0; i < s->nrules; i++) {
		if (!o_rule_applies(&s->rules[i], f))
			continue;
		if (!s->rules[i].allow)
			return DENY(v, "deny rule %zu", i);
		allow = true;
	}
	if (allow)
		return ALLOW(v, FW_PASS_ALLOW_CIDR, s, "allow rule");
	if (s->dflt_allow)
		return ALLOW(v, FW_PASS_DEFAULT, s, "default allow");
	for (size_t i = 0; i < s->nleases; i++)
		if (ip_eq(&s->leases[i], &f->dst))
			return ALLOW(v, FW_PASS_LEARNED, s, "learned, live lease");
	for (size_t i = 0; i < s->nexpired; i++)
		if (ip_eq(&s->expired[i], &f->dst))
			return DENY(v, "learned, lease expired");
	return DENY(v, "default deny");
}

/* The entry of the layer-7 table for {client, client port, proxy port}. */
static struct o_l7 *o_l7_of(const struct fw_ip *client, __u16 cport, __u16 pport)
{
	for (size_t i = 0; i < st.nl7; i++)
		if (ip_eq(&st.l7[i].client, client) && st.l7[i].client_port == cport &&
		    st.l7[i].proxy_port == pport)
			return &st.l7[i];
	return NULL;
}

/* 13. Layer-7 pinning, after a pass: a learned one (or an allow-cidr one
 * of a subject that pins CIDRs too) of a pinned subject to TCP or UDP 443
 * (TLS) or 80 (HTTP). UDP to 443 is QUIC; TCP goes to the proxy at the
 * subject's gateway: a SYN while the proxy is up, unless an open entry of
 * another destination holds its port (every entry of an input is recent);
 * any other segment only on its entry. */
static void step_l7(const struct frame *f, const struct o_subject *s, struct verdict *v)
{
	int fi = fam_index(f);
	bool syn = (f->tcp_flags & (TH_SYN | TH_ACK)) == TH_SYN;
	__u16 pport;
	struct o_l7 *e;

	if (!st.l7_on || !v->allow || !(s->l7 & FW_SF_L7))
		return;
	if (v->reason != FW_PASS_LEARNED &&
	    !(v->reason == FW_PASS_ALLOW_CIDR && (s->l7 & FW_SF_L7_CIDR)))
		return;
	if (!f->has_ports || (f->dport != 443 && f->dport != 80))
		return;
	if (f->proto == IPPROTO_UDP) {
		if (f->dport == 443 && !st.l7_quic)
			DENY(v, "quic to a pinned port");
		return;
	}
	if (f->proto != IPPROTO_TCP)
		return;
	if (f->frag_first) {
		DENY(v, "first fragment of a pinned connection");
		return;
	}
	if (!s->has_gw[fi]) {
		DENY(v, "pinned, no gateway to reach the proxy at");
		return;
	}
	pport = f->dport == 443 ? L7_TLS_PORT : L7_HTTP_PORT;
	e = o_l7_of(&f->src, f->sport, pport);
	if (syn) {
		if (!st.l7_up) {
			DENY(v, "pinned, the proxy is down");
			return;
		}
		if (e && !e->closed && !(ip_eq(&e->orig, &f->dst) && e->orig_port == f->dport)) {
			DENY(v, "pinned, the port holds an open connection elsewhere");
			return;
		}
	} else if (!e || !ip_eq(&e->orig, &f->dst) || e->orig_port != f->dport) {
		DENY(v, "pinned segment without its entry");
		return;
	}
	v->redirect = true;
	v->l7 = true;
	v->to = s->gw[fi];
	v->to_port = pport;
	ALLOW(v, FW_PASS_L7_PROXY, s, "pinned: to the layer-7 proxy");
}

/* The whole decision of fw_from_sandbox. */
static void oracle_from_sandbox(const struct frame *f, struct verdict *v)
{
	const struct o_subject *s;
	int fi;

	memset(v, 0, sizeof(*v));
	if (f->kind == FK_MALFORMED) {
		DENY(v, "malformed: %s", f->why);
		return;
	}
	if (f->kind == FK_ETHERTYPE) {
		DENY(v, "ethertype");
		return;
	}
	if (step_mac(f, v))
		return;
	if (f->kind == FK_ARP) {
		step_arp(f, v);
		return;
	}
	if (step_v4mapped(f, v) || step_icmp6_control(f, v) || step_fragment(f, v))
		return;
	/* 4. dispatch by source, 5. anti-spoof */
	s = o_subject_of(&f->src);
	if (!s) {
		DENY(v, "unknown source");
		return;
	}
	if (!o_on_its_port(s, st.ifindex)) {
		DENY(v, "%s seen on the wrong port", s->def->name);
		return;
	}
	if (step_dns(f, s, v))
		return;
	/* 7. state */
	if (!s->active) {
		DENY(v, "%s denying", s->def->name);
		return;
	}
	/* 8. DoT, for everyone */
	if (o_is_l4_port(f, 853) && (f->proto == IPPROTO_TCP || f->proto == IPPROTO_UDP)) {
		DENY(v, "dot");
		return;
	}
	if (step_pod_local(f, s, v))
		return;
	/* 10. siblings */
	fi = fam_index(f);
	if (s->has_private[fi] && in_prefix(&f->dst, &s->private_net[fi])) {
		DENY(v, "sibling");
		return;
	}
	if (step_doh(f, v))
		return;
	if (!step_policy(f, s, v))
		abort(); /* step_policy always decides */
	step_l7(f, s, v);
}

/* What a frame the oracle allowed leaves behind for the next ones. */
static void oracle_remember(const struct frame *f, const struct verdict *v)
{
	if (!v->allow)
		return;
	if (f->frag_first && v->reason != FW_PASS_FRAGMENT) {
		for (size_t k = 0; k < f->nfrag_ids && st.nfrags < O_STATE_MAX; k++)
			st.frags[st.nfrags++] = (struct o_frag){
				.family = f->family,
				.src = f->src,
				.dst = f->dst,
				.id = f->frag_ids[k],
				.proto = f->proto,
				.subject = v->subject,
			};
	}
	if (v->l7) {
		struct o_l7 *e = o_l7_of(&f->src, f->sport, v->to_port);

		if ((f->tcp_flags & (TH_SYN | TH_ACK)) == TH_SYN) {
			if (!e && st.nl7 < FUZZ_MAX_FRAMES)
				e = &st.l7[st.nl7++];
			if (e)
				*e = (struct o_l7){.client = f->src,
						   .client_port = f->sport,
						   .proxy_port = v->to_port,
						   .orig = f->dst,
						   .orig_port = f->dport,
						   .subject = v->subject};
		} else if (e && (f->tcp_flags & (TH_FIN | TH_RST))) {
			e->closed = true;
		}
		return;
	}
	if (v->redirect && st.nnat < FUZZ_MAX_FRAMES) {
		struct o_nat *n = NULL;

		for (size_t i = 0; i < st.nnat; i++)
			if (ip_eq(&st.nat[i].client, &f->src) &&
			    st.nat[i].client_port == f->sport && st.nat[i].proto == f->proto)
				n = &st.nat[i];
		if (!n)
			n = &st.nat[st.nnat++];
		*n = (struct o_nat){.client = f->src,
				    .client_port = f->sport,
				    .proto = f->proto,
				    .orig_dst = f->dst,
				    .orig_port = f->dport};
	}
}

/* Egress (traffic into a sandbox, sent by the pod or through it): the
 * proxy's answer gets back the source the query was sent to; other TCP/UDP
 * from a pod-local address opens a flow the sandbox may answer. The pod is
 * trusted, so its ports are taken as the frame carries them. Returns true
 * and the expected source when the frame is to be rewritten. */
static bool oracle_to_sandbox(const struct frame *f, struct fw_ip *new_src, __u16 *new_sport)
{
	const struct o_subject *s;

	if (f->kind != FK_IP || !f->has_ports ||
	    (f->proto != IPPROTO_TCP && f->proto != IPPROTO_UDP))
		return false;
	/* a TCP header with a bad data offset is no segment a stack takes: it
	 * opens nothing and is not the proxy's answer */
	if (f->proto == IPPROTO_TCP && !f->tcp_doff_ok)
		return false;
	s = o_subject_of(&f->dst);
	if (!s || !o_pod_local(s, f->family, &f->src))
		return false;
	if (st.dns_proxy && f->sport == DNS_PORT) {
		*new_src = f->src;
		*new_sport = 53;
		for (size_t i = 0; i < st.nnat; i++) {
			if (ip_eq(&st.nat[i].client, &f->dst) &&
			    st.nat[i].client_port == f->dport && st.nat[i].proto == f->proto) {
				*new_src = st.nat[i].orig_dst;
				*new_sport = st.nat[i].orig_port;
			}
		}
		return true;
	}
	/* the layer-7 proxy's segment of a pinned connection */
	if (st.l7_on && f->proto == IPPROTO_TCP && s->has_gw[fam_index(f)] &&
	    ip_eq(&f->src, &s->gw[fam_index(f)])) {
		const struct o_l7 *e = o_l7_of(&f->dst, f->dport, f->sport);

		if (e) {
			*new_src = e->orig;
			*new_sport = e->orig_port;
			return true;
		}
	}
	if (st.nflows < FUZZ_MAX_FRAMES)
		st.flows[st.nflows++] = (struct o_flow){.sandbox = f->dst,
							.pod = f->src,
							.sandbox_port = f->dport,
							.pod_port = f->sport,
							.proto = f->proto};
	return false;
}

/* ---- the harness ------------------------------------------------------------ */

static struct {
	struct fw_dp *dp;
	struct fw_registry reg;
	struct ring_buffer *rb;
	struct fw_config cfg;
	char pin_root[64];
	bool ready;
	int ncpu;
	struct fw_counter stats[FW_REASON_MAX]; /* as of the last frame */
	__u64 subj_pass[NSUBJECTS][FW_REASON_MAX];
	__u32 ev_reason[4];
	size_t nev;
	/* the input being run, for the report */
	const uint8_t *input;
	size_t input_len;
	/* what the oracle saw: frames, passes, and where it allowed more */
	__u64 frames, refused, passes[FW_REASON_MAX], stricter[FW_REASON_MAX];
	__u64 l7_closed, l7_released; /* the proxy's close reports, releases */
} h;

/* libFuzzer's coverage sees only this process: the program's reason paired
 * with the oracle's verdict is fed back as extra features, so an input that
 * makes the kernel decide a new way is kept even when no oracle branch is
 * new. */
static uint8_t reason_features[FW_REASON_MAX][FW_REASON_MAX + 1]
	__attribute__((section("__libfuzzer_extra_counters"), used));

static void report_input(void)
{
	fprintf(stderr, "input (%zu bytes):", h.input_len);
	for (size_t i = 0; i < h.input_len; i++)
		fprintf(stderr, "%s%02x", i % 32 ? " " : "\n  ", h.input[i]);
	fprintf(stderr, "\n");
}

static void fail(const __u8 *frame, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4), noreturn));

static void fail(const __u8 *frame, size_t len, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "\n==== fastwall TC fuzz: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\noracle: %s\nframe (%zu bytes, interface %d):", st.trace, len,
		st.ifindex);
	for (size_t i = 0; i < len; i++)
		fprintf(stderr, "%s%02x", i % 16 ? " " : "\n  ", frame[i]);
	fprintf(stderr, "\n");
	report_input();
	abort();
}

static int on_event(void *ctx, void *data, size_t size)
{
	const struct fw_event *ev = data;

	(void)ctx;
	if (size >= sizeof(*ev) && h.nev < 4)
		h.ev_reason[h.nev] = ev->reason;
	h.nev++;
	return 0;
}

/* The global counters, summed over CPUs, in one batched lookup. */
static void stats_read(struct fw_counter out[FW_REASON_MAX])
{
	static struct fw_counter *vals;
	static __u32 keys[FW_REASON_MAX];
	__u32 count = FW_REASON_MAX, out_batch;
	LIBBPF_OPTS(bpf_map_batch_opts, opts);

	if (!vals) {
		vals = calloc((size_t)FW_REASON_MAX * h.ncpu, sizeof(*vals));
		if (!vals)
			abort();
	}
	if (bpf_map_lookup_batch(h.dp->stats_fd, NULL, &out_batch, keys, vals, &count, &opts) &&
	    errno != ENOENT) {
		/* kernels without batched array lookups */
		if (fw_dp_stats_read(h.dp, out))
			abort();
		return;
	}
	memset(out, 0, sizeof(*out) * FW_REASON_MAX);
	for (__u32 i = 0; i < count; i++) {
		if (keys[i] >= FW_REASON_MAX)
			continue;
		for (int c = 0; c < h.ncpu; c++) {
			out[keys[i]].packets += vals[(size_t)i * h.ncpu + c].packets;
			out[keys[i]].bytes += vals[(size_t)i * h.ncpu + c].bytes;
		}
	}
}

/* ones' complement sums, compared modulo 0xffff (0 and 0xffff are one) */
static __u32 sum16(const __u8 *p, size_t n, __u32 acc)
{
	for (size_t i = 0; i + 1 < n; i += 2)
		acc += be16(p + i);
	if (n & 1)
		acc += (__u32)p[n - 1] << 8;
	return acc;
}

static __u32 fold_mod(__u32 acc)
{
	while (acc >> 16)
		acc = (acc & 0xffff) + (acc >> 16);
	return acc == 0xffff ? 0 : acc;
}

/* A rewrite changes addresses and ports with incremental checksum updates:
 * the sum over the pseudo-header addresses and the transport header (and
 * the IPv4 header) stays what it was, and a UDP checksum of 0 stays 0. */
static void check_csums(const __u8 *in, const __u8 *out, size_t len, const struct frame *f)
{
	size_t alen = f->family == 4 ? 4 : 16;
	size_t aoff = f->l3 + (f->family == 4 ? 12 : 8);
	size_t hlen = f->proto == IPPROTO_TCP ? 20 : 8;
	size_t coff = f->l4 + (f->proto == IPPROTO_TCP ? 16 : 6);
	__u32 a, b;

	if (f->l4 + hlen > len)
		fail(in, len, "rewritten transport header beyond the frame");
	a = sum16(in + f->l4, hlen, sum16(in + aoff, 2 * alen, 0));
	b = sum16(out + f->l4, hlen, sum16(out + aoff, 2 * alen, 0));
	if (f->proto == IPPROTO_UDP && !be16(in + coff)) {
		if (be16(out + coff))
			fail(in, len, "a udp checksum of 0 (none) was rewritten");
	} else if (fold_mod(a) != fold_mod(b)) {
		fail(in, len, "transport checksum not updated with the rewrite");
	}
	if (f->family == 4) {
		size_t ihl = (size_t)(in[f->l3] & 0xf) * 4;

		if (fold_mod(sum16(in + f->l3, ihl, 0)) != fold_mod(sum16(out + f->l3, ihl, 0)))
			fail(in, len, "ipv4 header checksum not updated with the rewrite");
	}
}

/* out must be in with the address at aoff set to addr, the port at poff set
 * to port, and checksums updated: nothing else may change. */
static void check_rewrite(const __u8 *in, const __u8 *out, size_t len, const struct frame *f,
			  bool src, const struct fw_ip *addr, __u16 port)
{
	size_t alen = f->family == 4 ? 4 : 16;
	size_t aoff = f->l3 + (f->family == 4 ? (src ? 12 : 16) : (src ? 8 : 24));
	size_t poff = f->l4 + (src ? 0 : 2);
	size_t coff = f->l4 + (f->proto == IPPROTO_TCP ? 16 : 6);
	__u8 want[FUZZ_FRAME_MAX];

	memcpy(want, in, len);
	memcpy(want + aoff, f->family == 4 ? &addr->b[12] : addr->b, alen);
	want[poff] = port >> 8;
	want[poff + 1] = port & 0xff;
	for (size_t i = 0; i < len; i++) {
		bool csum = (i == coff || i == coff + 1) ||
			    (f->family == 4 && (i == f->l3 + 10 || i == f->l3 + 11));

		if (!csum && want[i] != out[i])
			fail(in, len, "rewrite touched byte %zu (%02x -> %02x, expected %02x)", i,
			     in[i], out[i], want[i]);
	}
	check_csums(in, out, len, f);
}

static int run_prog(int fd, const __u8 *frame, size_t len, __u8 *out, __u32 *out_len, __u32 *retval)
{
	struct __sk_buff ctx = {.ifindex = (__u32)st.ifindex};
	LIBBPF_OPTS(bpf_test_run_opts, opts);
	int err;

	opts.data_in = frame;
	opts.data_size_in = (__u32)len;
	opts.data_out = out;
	opts.data_size_out = FUZZ_FRAME_MAX + 256;
	opts.ctx_in = &ctx;
	opts.ctx_size_in = sizeof(ctx);
	opts.repeat = 1;
	err = bpf_prog_test_run_opts(fd, &opts);
	*out_len = opts.data_size_out;
	*retval = opts.retval;
	return err;
}

static size_t subj_index(__u32 id)
{
	for (size_t i = 0; i < NSUBJECTS; i++)
		if (o.subj[i].id == id)
			return i;
	return NSUBJECTS;
}

static void run_to_sandbox(const __u8 *frame, size_t len)
{
	static __u8 out[FUZZ_FRAME_MAX + 256];
	struct frame f;
	struct fw_ip new_src;
	__u16 new_sport = 0;
	__u32 out_len, retval;
	bool rewrite;

	parse_frame(frame, len, &f, true);
	snprintf(st.trace, sizeof(st.trace), "egress");
	rewrite = oracle_to_sandbox(&f, &new_src, &new_sport);
	if (run_prog(h.dp->to_sandbox_fd, frame, len, out, &out_len, &retval)) {
		if (errno == EINVAL)
			return; /* see run_from_sandbox */
		fail(frame, len, "fw_to_sandbox test run: %s", strerror(errno));
	}
	if (retval != 0)
		fail(frame, len, "fw_to_sandbox returned %u: it never drops", retval);
	if (out_len != len)
		fail(frame, len, "fw_to_sandbox changed the frame's length to %u", out_len);
	if (rewrite)
		check_rewrite(frame, out, len, &f, true, &new_src, new_sport);
	else if (memcmp(frame, out, len))
		fail(frame, len, "fw_to_sandbox rewrote a frame that is not the proxy's answer");
}

static void run_from_sandbox(const __u8 *frame, size_t len)
{
	static __u8 out[FUZZ_FRAME_MAX + 256];
	struct fw_counter after[FW_REASON_MAX];
	struct frame f, fl;
	struct verdict v;
	__u32 out_len, retval, reason = FW_REASON_MAX;
	int moved = 0;

	parse_frame(frame, len, &f, o.tolerate & TOL_L4_BOUNDS);
	oracle_from_sandbox(&f, &v);

	h.nev = 0;
	if (run_prog(h.dp->from_sandbox_fd, frame, len, out, &out_len, &retval)) {
		/* newer kernels refuse to test an IP frame whose network header
		 * is cut short (it never reaches the program): nothing ran */
		if (errno == EINVAL && f.kind == FK_MALFORMED) {
			h.refused++;
			return;
		}
		fail(frame, len, "fw_from_sandbox test run: %s", strerror(errno));
	}
	stats_read(after);
	ring_buffer__consume(h.rb);
	h.frames++;

	/* exactly one reason counted, +1 packet, +len bytes */
	for (__u32 r = 0; r < FW_REASON_MAX; r++) {
		if (after[r].packets == h.stats[r].packets && after[r].bytes == h.stats[r].bytes)
			continue;
		if (moved++ || after[r].packets != h.stats[r].packets + 1 ||
		    after[r].bytes != h.stats[r].bytes + len)
			fail(frame, len, "counters: %s moved by %llu packets %llu bytes (%d moved)",
			     fw_reason_name(r),
			     (unsigned long long)(after[r].packets - h.stats[r].packets),
			     (unsigned long long)(after[r].bytes - h.stats[r].bytes), moved);
		reason = r;
	}
	memcpy(h.stats, after, sizeof(after));
	if (!moved)
		fail(frame, len, "no reason counted");
	reason_features[reason][v.allow ? v.reason : FW_REASON_MAX]++;
	if (retval != 0 && retval != 2)
		fail(frame, len, "fw_from_sandbox returned %u", retval);
	if ((retval == 0) != !fw_reason_drops(reason))
		fail(frame, len, "returned %s with reason %s", retval ? "TC_ACT_SHOT" : "TC_ACT_OK",
		     fw_reason_name(reason));
	if (!fw_reason_drops(reason) ? h.nev != 0 : h.nev != 1 || h.ev_reason[0] != reason)
		fail(frame, len, "%zu deny events (reason %s) for %s", h.nev,
		     h.nev ? fw_reason_name(h.ev_reason[0]) : "-", fw_reason_name(reason));

	if (retval != 0) {
		/* a drop is never questioned, but a drop the oracle would have
		 * allowed is counted: the oracle says where it is wider */
		if (v.allow)
			h.stricter[reason]++;
		/* a query the redirect began to rewrite may drop (the rewrite
		 * failed); nothing else may come out changed */
		parse_frame(frame, len, &fl, true);
		if (out_len != len ||
		    (memcmp(frame, out, len) &&
		     !(fl.has_ports &&
		       (fl.dport == 53 || (st.l7_on && (fl.dport == 443 || fl.dport == 80))))))
			fail(frame, len,
			     "a dropped frame that is not dns or pinned came out rewritten");
		return;
	}

	h.passes[reason]++;
	if (!v.allow)
		fail(frame, len, "passed (%s), the oracle does not allow it",
		     fw_reason_name(reason));
	if (reason != v.reason)
		fail(frame, len, "passed as %s, the oracle allows it as %s", fw_reason_name(reason),
		     fw_reason_name(v.reason));
	if (out_len != len)
		fail(frame, len, "the frame came out %u bytes long", out_len);
	if (v.redirect)
		check_rewrite(frame, out, len, &f, false, &v.to, v.to_port);
	else if (memcmp(frame, out, len))
		fail(frame, len, "a %s frame came out rewritten", fw_reason_name(reason));

	/* the pass is counted for its subject (neighbour discovery is counted
	 * for whoever the source is, which the oracle does not pin down) */
	if (v.subject && reason != FW_PASS_NEIGH) {
		size_t si = subj_index(v.subject);
		__u64 sstats[FW_REASON_MAX];

		if (si == NSUBJECTS || fw_dp_subject_stats_read(h.dp, v.subject, sstats))
			fail(frame, len, "can't read subject %u's counters", v.subject);
		h.subj_pass[si][reason]++;
		for (__u32 r = 0; r < FW_REASON_MAX; r++)
			if (!fw_reason_drops(r) && r != FW_PASS_NEIGH &&
			    sstats[r] != h.subj_pass[si][r])
				fail(frame, len, "%s's %s counter is %llu, expected %llu",
				     o.subj[si].def->name, fw_reason_name(r),
				     (unsigned long long)sstats[r],
				     (unsigned long long)h.subj_pass[si][r]);
	}
	oracle_remember(&f, &v);
}

/* Empties the maps the programs write, so the next input starts clean. */
static void map_empty(int fd, size_t key_size)
{
	__u8 key[64];

	if (key_size > sizeof(key))
		abort();
	while (!bpf_map_get_next_key(fd, NULL, key))
		if (bpf_map_delete_elem(fd, key))
			abort();
}

static void state_reset(void)
{
	map_empty(h.dp->frags_fd, sizeof(struct fw_frag_key));
	map_empty(h.dp->dns_nat_fd, sizeof(struct fw_dns_nat_key));
	map_empty(h.dp->pod_flows_fd, sizeof(struct fw_flow_key));
	map_empty(h.dp->conns_fd, sizeof(struct fw_conn_key));
	map_empty(h.dp->l7_nat_fd, sizeof(struct fw_l7_nat_key));
	/* the entries' counts with them (the oracle sets no quota) */
	if (fw_dp_l7_counts(h.dp))
		memset(h.dp->l7_count, 0, FW_MAX_SUBJECTS * sizeof(__u64));
	ports_bind();
	memset(&st, 0, offsetof(typeof(st), trace));
}

/* Layer-7 pinning by the mode's bits 4-6, through the data path's API
 * (it owns those settings bits), written only when they change. */
static void l7_set(__u8 mode)
{
	static const struct fw_dp_l7 l7 = {
		.tls_ports = {443},
		.ntls = 1,
		.http_ports = {80},
		.nhttp = 1,
		.proxy_tls_port = L7_TLS_PORT,
		.proxy_http_port = L7_HTTP_PORT,
	};
	struct fw_dp_l7 q = l7;
	bool on = mode & 0x10, up = on && (mode & 0x20), quic = on && (mode & 0x40);
	__u32 want = (on ? FW_CF_L7 : 0) | (up ? FW_CF_L7_UP : 0) | (quic ? FW_CF_L7_QUIC : 0);

	st.l7_on = on;
	st.l7_up = up;
	st.l7_quic = quic;
	if (fw_dp_l7_flags(h.dp) == want)
		return;
	q.quic_allowed = quic;
	if (fw_dp_l7_apply(h.dp, on ? &q : NULL) || fw_dp_l7_set_up(h.dp, up))
		abort();
}

static void mode_set(__u8 mode)
{
	__u32 flags = 0;

	switch (mode & 3) {
	case 1:
		flags |= FW_CF_DNS_PROXY;
		break;
	case 2:
	case 3:
		flags |= FW_CF_DNS_PROXY | FW_CF_DNS_ALL;
		break;
	}
	switch ((mode >> 2) & 3) {
	case 1:
	case 3:
		flags |= FW_CF_DOH_LIST;
		break;
	case 2:
		flags |= FW_CF_DOH_STRICT;
		break;
	}
	st.dns_proxy = flags & FW_CF_DNS_PROXY;
	st.dns_all = flags & FW_CF_DNS_ALL;
	st.doh_list = flags & FW_CF_DOH_LIST;
	st.doh_strict = flags & FW_CF_DOH_STRICT;
	l7_set(mode);
	if (flags != h.cfg.flags) {
		h.cfg.flags = flags;
		if (fw_dp_config_set(h.dp, &h.cfg))
			abort();
	}
}

static void port_mac(int ifindex, __u8 mac[6])
{
	memcpy(mac, world_mac, 6);
	if (ifindex == o.ifindex_b)
		mac[5] += 1;
	else if (ifindex != o.ifindex_a)
		mac[5] += 2;
}

/* Gives the frame its port's MAC where it carries pkt.c's: the Ethernet
 * source, and an untagged ARP sender hardware address. */
static void frame_own_mac(__u8 *frame, size_t len)
{
	__u8 mac[6];

	port_mac(st.ifindex, mac);
	if (!memcmp(frame + 6, world_mac, 6))
		memcpy(frame + 6, mac, 6);
	if (len >= 28 && frame[12] == 0x08 && frame[13] == 0x06 &&
	    !memcmp(frame + 22, world_mac, 6))
		memcpy(frame + 22, mac, 6);
}

/* Binds the three ports afresh: what a frame taught the binding (a
 * link-local address learned on first use) must not outlive its input. */
static void ports_bind(void)
{
	int ifs[3] = {o.ifindex_a, o.ifindex_b, 1};

	for (size_t i = 0; i < 3; i++) {
		__u8 host[6] = {2, 0, 0, 0, 1, (__u8)i}, peer[6];

		port_mac(ifs[i], peer);
		if (fw_l2_forget(h.dp, ifs[i]) || fw_l2_bind(h.dp, ifs[i], host, peer))
			abort();
	}
}

/* The proxy reports the connection of entry ctl >> 6 (of those the
 * oracle holds) closed, as fastwalld passes it on (fw_dp_l7_closed); with
 * ctl & 0x20 the release follows at once (fw_dp_l7_release). The entry
 * then no longer holds its port against another destination, and once
 * released its segments have no entry, both ways. */
static void l7_report_closed(__u8 ctl)
{
	struct o_l7 *e;
	struct fw_l7_nat_key k = {};
	int err;

	if (!st.nl7)
		return;
	e = &st.l7[(ctl >> 6) % st.nl7];
	k.client = e->client;
	k.client_port = htons(e->client_port);
	k.proxy_port = htons(e->proxy_port);
	err = fw_dp_l7_closed(h.dp, &k, e->subject);
	/* marked once: a second report of the same entry finds it marked */
	if (err && err != -ENOENT)
		abort();
	h.l7_closed += !err;
	e->closed = true;
	if (!(ctl & 0x20))
		return;
	if (fw_dp_l7_release(h.dp, &k) && !err) {
		fprintf(stderr,
			"fw_dp_l7_release: the entry fw_dp_l7_closed marked is not released\n");
		abort();
	}
	if (fw_dp_l7_release(h.dp, &k) != -ENOENT)
		abort();
	h.l7_released++;
	*e = st.l7[--st.nl7];
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t off = 1;

	if (!h.ready || size < 1)
		return 0;
	h.input = data;
	h.input_len = size;
	state_reset();
	mode_set(data[0]);
	for (int n = 0; n < FUZZ_MAX_FRAMES && off + 3 <= size; n++) {
		__u8 ctl = data[off];
		size_t len = be16(data + off + 1);

		off += 3;
		if (len > size - off)
			len = size - off;
		switch (ctl & 3) {
		case 1:
			st.ifindex = o.ifindex_a;
			break;
		case 2:
			st.ifindex = o.ifindex_b;
			break;
		default:
			st.ifindex = 1; /* lo */
		}
		if (ctl & 0x10)
			l7_report_closed(ctl);
		/* test_run takes neither runts nor frames beyond a page */
		if (len >= 14 && len <= FUZZ_FRAME_MAX) {
			static __u8 frame[FUZZ_FRAME_MAX];

			memcpy(frame, data + off, len);
			if (!(ctl & 8))
				frame_own_mac(frame, len);
			if (ctl & 4)
				run_to_sandbox(frame, len);
			else
				run_from_sandbox(frame, len);
		}
		off += len;
	}
	return 0;
}

/* ---- setup -------------------------------------------------------------- */

static void summary(void)
{
	if (!h.frames)
		return;
	fprintf(stderr, "TC fuzz: %llu frames (%llu more refused by test_run); passes:",
		(unsigned long long)h.frames, (unsigned long long)h.refused);
	for (__u32 r = 0; r < FW_REASON_MAX; r++)
		if (!fw_reason_drops(r) && h.passes[r])
			fprintf(stderr, " %s %llu", fw_reason_name(r),
				(unsigned long long)h.passes[r]);
	fprintf(stderr, "\n  the proxy's close reports: %llu marked, %llu released",
		(unsigned long long)h.l7_closed, (unsigned long long)h.l7_released);
	fprintf(stderr, "\n  dropped though the oracle allows:");
	for (__u32 r = 0; r < FW_REASON_MAX; r++)
		if (h.stricter[r])
			fprintf(stderr, " %s %llu", fw_reason_name(r),
				(unsigned long long)h.stricter[r]);
	fprintf(stderr, "\n");
}

static void teardown(void)
{
	summary();
	ring_buffer__free(h.rb);
	h.rb = NULL;
	if (h.dp) {
		fw_reg_free(&h.reg);
		fw_dp_close(h.dp);
		h.dp = NULL;
	}
	if (h.pin_root[0])
		fw_dp_purge(h.pin_root);
}

static int link_add(const char *name)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "ip link add %s type dummy 2>/dev/null", name);
	if (system(cmd) == 0)
		return (int)if_nametoindex(name);
	snprintf(cmd, sizeof(cmd), "ip link add %s type veth peer name %sp 2>/dev/null", name,
		 name);
	if (system(cmd) == 0)
		return (int)if_nametoindex(name);
	return 0;
}

/* A network namespace (the ports and lo exist only here) and a mount
 * namespace with a bpffs of its own: what the fuzzer pins disappears with
 * it, even when it crashes. */
static int isolate(void)
{
	if (unshare(CLONE_NEWNET | CLONE_NEWNS)) {
		fprintf(stderr, "can't unshare network and mount namespaces: %s\n",
			strerror(errno));
		return -errno;
	}
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
	    mount("bpf", "/sys/fs/bpf", "bpf", 0, "mode=0700")) {
		fprintf(stderr, "can't mount a private bpffs: %s\n", strerror(errno));
		return -errno;
	}
	o.ifindex_a = link_add(PORT_A);
	o.ifindex_b = link_add(PORT_B);
	if (!o.ifindex_a || !o.ifindex_b) {
		fprintf(stderr, "can't create the test ports %s, %s\n", PORT_A, PORT_B);
		return -ENODEV;
	}
	return 0;
}

static int subject_put(const struct world_subject *d)
{
	struct fw_subject_spec spec;
	char err[256] = "";
	int ret;

	memset(&spec, 0, sizeof(spec));
	snprintf(spec.name, sizeof(spec.name), "%s", d->name);
	for (size_t i = 0; i < 3 && d->addrs[i]; i++)
		if (fw_addr_parse(d->addrs[i], &spec.addrs[spec.naddrs++], NULL))
			world_bug("address", d->addrs[i]);
	if (d->port != P_ANY)
		snprintf(spec.ifname, sizeof(spec.ifname), "%s",
			 d->port == P_A	  ? PORT_A
			 : d->port == P_B ? PORT_B
					  : PORT_GONE);
	for (int f = 0; f < FW_FAM_MAX; f++) {
		if (d->gateway[f]) {
			spec.has_gateway[f] = true;
			if (fw_addr_parse(d->gateway[f], &spec.gateway[f], NULL))
				world_bug("gateway", d->gateway[f]);
		}
		if (d->private_net[f]) {
			spec.has_private[f] = true;
			if (fw_prefix_parse(d->private_net[f], &spec.private_net[f].net,
					    &spec.private_net[f].plen, NULL))
				world_bug("prefix", d->private_net[f]);
		}
	}
	spec.state = d->state ? d->state : FW_STATE_ACTIVE;
	fw_policy_init(&spec.policy);
	ret = fw_policy_set_default(&spec.policy, d->dflt, err, sizeof(err));
	for (size_t i = 0; !ret && i < 16 && d->rules[i]; i++) {
		char action[8], target[64], ports[64] = "";
		long port_list[8];
		size_t nports = 0;

		sscanf(d->rules[i], "%7s %63s %63s", action, target, ports);
		for (char *tok = strtok(ports, ","); tok && nports < 8; tok = strtok(NULL, ","))
			port_list[nports++] = strtol(tok, NULL, 10);
		ret = fw_policy_add_rule(&spec.policy, action, target, nports ? port_list : NULL,
					 nports, err, sizeof(err));
	}
	if (!ret)
		ret = fw_reg_upsert(&h.reg, &spec, FW_ORIGIN_STATIC, NULL);
	fw_policy_free(&spec.policy);
	if (ret)
		fprintf(stderr, "can't put subject %s: %s %s\n", d->name, strerror(-ret), err);
	return ret;
}

/* The subject's layer-7 flags, in its dispatch values (as fastwalld's
 * registry writes them). */
static int subject_pin(const struct world_subject *d)
{
	for (size_t i = 0; d->l7 && i < 3 && d->addrs[i]; i++) {
		struct fw_subject v;
		struct fw_ip ip;
		int err;

		if (fw_addr_parse(d->addrs[i], &ip, NULL))
			world_bug("address", d->addrs[i]);
		err = fw_dp_dispatch_lookup(h.dp, &ip, &v);
		if (!err) {
			v.flags |= d->l7;
			err = fw_dp_dispatch_put(h.dp, &ip, &v);
		}
		if (err)
			return err;
	}
	return d->l7 ? fw_dp_rules_epoch_bump(h.dp) : 0;
}

static int world_setup(void)
{
	struct fw_ip local[2];
	struct fw_port_key ports[2];
	struct fw_lpm_key doh[2];
	__u64 now = fw_now_ns();
	int err;

	snprintf(h.pin_root, sizeof(h.pin_root), "/sys/fs/bpf/fastwall-fuzz-%d", (int)getpid());
	err = fw_dp_open(h.pin_root, &h.dp);
	if (err) {
		fprintf(stderr, "can't open the data plane under %s: %s\n", h.pin_root,
			strerror(-err));
		return err;
	}
	h.rb = ring_buffer__new(h.dp->events_fd, on_event, NULL, NULL);
	if (!h.rb)
		return -errno;
	err = fw_reg_init(&h.reg, h.dp);
	if (err)
		return err;
	/* every drop emits its event: the budget never runs out */
	h.cfg = (struct fw_config){
		.event_burst = 1u << 30,
		.event_interval_ns = 1,
		.pod_flow_timeout_ns = 3600 * FW_NSEC_PER_SEC,
		.frag_timeout_ns = 3600 * FW_NSEC_PER_SEC,
		.dns_port = DNS_PORT,
	};
	err = fw_dp_config_set(h.dp, &h.cfg);
	if (err)
		return err;
	for (size_t i = 0; i < 2; i++) {
		fw_addr_parse(world_local[i], &local[i], NULL);
		ports[i] = (struct fw_port_key){.proto = world_local_ports[i].proto,
						.port = htons(world_local_ports[i].port)};
		if (fw_prefix_parse(world_doh[i], &doh[i].addr, &doh[i].prefixlen, NULL))
			world_bug("doh prefix", world_doh[i]);
	}
	err = fw_dp_local_set(h.dp, local, 2, ports, 2);
	if (!err)
		err = fw_dp_doh_set(h.dp, doh, 2);
	for (size_t i = 0; !err && i < NSUBJECTS; i++)
		err = subject_put(&world[i]);
	for (size_t i = 0; !err && i < NSUBJECTS; i++)
		err = subject_pin(&world[i]);
	if (err)
		return err;

	oracle_world_init();
	for (size_t i = 0; i < NSUBJECTS; i++) {
		struct o_subject *s = &o.subj[i];
		struct fw_entry *e = fw_reg_find(&h.reg, s->def->name);
		struct fw_ip ip;

		if (!e || !e->id)
			return -ENOENT;
		s->id = e->id;
		for (size_t l = 0; !err && l < 6 && s->def->leases[l]; l++) {
			fw_addr_parse(s->def->leases[l], &ip, NULL);
			err = fw_dp_learned_put(h.dp, s->id, &ip, now + 86400 * FW_NSEC_PER_SEC);
		}
		/* ran out a moment ago: the collector has not run */
		for (size_t l = 0; !err && l < 3 && s->def->expired[l]; l++) {
			fw_addr_parse(s->def->expired[l], &ip, NULL);
			err = fw_dp_learned_put(h.dp, s->id, &ip, now - 1);
		}
	}
	if (err)
		return err;
	h.ncpu = libbpf_num_possible_cpus();
	if (h.ncpu <= 0)
		return -EINVAL;
	stats_read(h.stats);
	return 0;
}

static int tolerate_parse(const char *s)
{
	static const struct {
		const char *name;
		unsigned int bit;
	} names[] = {{"nd", TOL_ND},
		     {"l4-bounds", TOL_L4_BOUNDS},
		     {"v4-mapped", TOL_V4MAPPED},
		     {"mac", TOL_MAC},
		     {"all", TOL_ND | TOL_L4_BOUNDS | TOL_V4MAPPED | TOL_MAC}};
	char buf[128];

	snprintf(buf, sizeof(buf), "%s", s);
	for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
		size_t i;

		for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
			if (!strcmp(tok, names[i].name))
				break;
		if (i == sizeof(names) / sizeof(names[0])) {
			fprintf(stderr,
				"FW_FUZZ_TOLERATE: unknown hole '%s' (nd, l4-bounds, "
				"v4-mapped, mac, all)\n",
				tok);
			return -EINVAL;
		}
		o.tolerate |= names[i].bit;
	}
	return 0;
}

static int write_seeds(const char *dir);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *seeds = getenv("FW_FUZZ_WRITE_SEEDS");
	const char *tol = getenv("FW_FUZZ_TOLERATE");

	(void)argc;
	(void)argv;
	if (seeds)
		exit(write_seeds(seeds) ? 1 : 0);
	if (tol && tolerate_parse(tol))
		exit(2);
	if (geteuid() != 0) {
		fprintf(stderr, "the TC fuzzer needs root (BPF programs, namespaces)\n");
		exit(1);
	}
	fw_log_level = FW_LOG_ERROR;
	fw_dp_quiet();
	if (isolate() || world_setup()) {
		fprintf(stderr, "TC fuzz: the world could not be set up\n");
		teardown();
		exit(1);
	}
	atexit(teardown);
	h.ready = true;
	if (o.tolerate)
		fprintf(stderr, "TC fuzz: tolerating known holes:%s%s%s%s\n",
			o.tolerate & TOL_ND ? " nd" : "",
			o.tolerate & TOL_L4_BOUNDS ? " l4-bounds" : "",
			o.tolerate & TOL_V4MAPPED ? " v4-mapped" : "",
			o.tolerate & TOL_MAC ? " mac" : "");
	return 0;
}

/* ---- the seed corpus ------------------------------------------------------ */

#define A4			"10.42.0.10"
#define A6			"fd00:42::10"
#define B4			"10.42.0.30"
#define B6			"fd00:42::30"
#define G4			"10.42.0.40"
#define D6			"fd00:42::50"
#define GW4			"10.42.0.1"
#define GW6			"fd00:42::1"
#define L4_			"10.42.0.2"
#define L6_			"fd00:42::2"
#define SOLN			"ff02::1:ff00:1"
#define MODE_PROXY_ALL_DOH_LIST 0x06
#define MODE_L7_UP		0x30
#define CTL_A			1
#define CTL_B			2
#define CTL_EG			4

struct seed_frame {
	__u8 ctl;
	struct pkt_spec spec;
	__u8 mac_last; /* non-zero: the source MAC's last byte (another port's peer) */
};

struct seed {
	const char *name;
	__u8 mode;
	struct seed_frame frames[3];
};

#define F(c_, ...)                                                                                 \
	{                                                                                          \
		.ctl = (c_), .spec = __VA_ARGS__                                                   \
	}
#define FIRST(i) .frag = {.on = true, .more = true, .offset = 0, .id = (i)}
#define LAST(i)	 .frag = {.on = true, .more = false, .offset = 3, .id = (i)}

static const struct seed seeds[] = {
	{"tcp4_allow", 0, {F(CTL_A, TCP4(A4, "192.0.2.10", 40000, 80, .csum = true))}},
	{"udp4_allow",
	 0,
	 {F(CTL_A, UDP4(A4, "192.0.2.10", 40000, 5000, .payload = 32, .csum = true))}},
	{"tcp6_allow", 0, {F(CTL_A, TCP6(A6, "2001:db8:1::10", 40000, 443, .csum = true))}},
	{"udp6_allow", 0, {F(CTL_A, UDP6(A6, "2001:db8:1::10", 40000, 5000, .csum = true))}},
	{"tcp4_deny_port", 0, {F(CTL_A, TCP4(A4, "198.51.100.10", 40000, 22, .csum = true))}},
	{"tcp4_port_rule", 0, {F(CTL_A, TCP4(A4, "192.0.2.170", 40000, 8443, .csum = true))}},
	{"tcp4_learned",
	 0,
	 {F(CTL_A, TCP4(A4, "192.0.2.150", 40000, 80, .tcp_flags = TH_ACK, .csum = true))}},
	{"tcp6_learned", 0, {F(CTL_A, TCP6(A6, "2001:db8:99::1", 40000, 80))}},
	{"icmp4_echo", 0, {F(CTL_A, ICMP4(A4, "192.0.2.10", ICMP4_ECHO, .payload = 16))}},
	{"icmp6_echo", 0, {F(CTL_A, ICMP6(A6, "2001:db8:1::10", ICMP6_ECHO, .payload = 16))}},
	{"tcp4_beta_default", 0, {F(CTL_B, TCP4(B4, "198.51.100.200", 40000, 80, .csum = true))}},
	{"tcp6_beta_smtp", 0, {F(CTL_B, TCP6(B6, "2001:db8:5::1", 40000, 25))}},
	{"tcp6_delta_port", 0, {F(0, TCP6(D6, "2001:db8:5::1", 40000, 443))}},
	{"hole_udp6_v4mapped", 0, {F(0, UDP6(D6, "::ffff:192.0.2.10", 40000, 5000))}},
	{"tcp4_gamma_denying", 0, {F(0, TCP4(G4, "192.0.2.10", 40000, 80))}},
	{"tcp4_sibling", 0, {F(CTL_A, TCP4(A4, B4, 40000, 80))}},
	{"tcp4_pod_local_port", 0, {F(CTL_A, TCP4(A4, L4_, 40000, 8080))}},
	{"udp6_pod_local_port", 0, {F(CTL_A, UDP6(A6, GW6, 40000, 8125))}},
	{"udp4_dns_local", 0, {F(CTL_A, UDP4(A4, GW4, 40000, 53, .payload = 29, .csum = true))}},
	{"udp4_dns_proxy", 1, {F(CTL_A, UDP4(A4, GW4, 40000, 53, .payload = 29, .csum = true))}},
	{"tcp6_dns_proxy", 1, {F(CTL_A, TCP6(A6, L6_, 40000, 53, .csum = true))}},
	{"udp4_dns_redirect_all",
	 2,
	 {F(CTL_A, UDP4(A4, "198.51.100.53", 40000, 53, .payload = 29, .csum = true)),
	  F(CTL_A | CTL_EG, UDP4(GW4, A4, DNS_PORT, 40000, .payload = 45, .csum = true))}},
	{"udp6_dns_redirect_all",
	 2,
	 {F(CTL_A, UDP6(A6, "2001:db8:53::53", 40001, 53, .payload = 29, .csum = true)),
	  F(CTL_A | CTL_EG, UDP6(GW6, A6, DNS_PORT, 40001, .payload = 45, .csum = true))}},
	{"tcp4_dot", 0, {F(CTL_A, TCP4(A4, "192.0.2.10", 40000, 853))}},
	{"tcp4_doh_list", MODE_PROXY_ALL_DOH_LIST, {F(CTL_A, TCP4(A4, "192.0.2.53", 40000, 443))}},
	{"tcp4_pod_reply",
	 0,
	 {F(CTL_A | CTL_EG, TCP4(GW4, A4, 43210, 8000, .csum = true)),
	  F(CTL_A, TCP4(A4, GW4, 8000, 43210, .tcp_flags = TH_SYN | TH_ACK, .csum = true))}},
	{"udp6_pod_reply",
	 0,
	 {F(CTL_A | CTL_EG, UDP6(L6_, A6, 43211, 9000)), F(CTL_A, UDP6(A6, L6_, 9000, 43211))}},
	{"udp4_fragments",
	 0,
	 {F(CTL_A, UDP4(A4, "192.0.2.10", 40000, 5000, .payload = 16, FIRST(77))),
	  F(CTL_A, UDP4(A4, "192.0.2.10", 40000, 5000, .payload = 8, LAST(77)))}},
	{"udp6_fragments",
	 0,
	 {F(CTL_A, UDP6(A6, "2001:db8:1::10", 40000, 5000, .payload = 16, FIRST(78))),
	  F(CTL_A, UDP6(A6, "2001:db8:1::10", 40000, 5000, .payload = 8, LAST(78)))}},
	{"udp6_frag_ext",
	 0,
	 {F(CTL_A, UDP6(A6, "2001:db8:1::10", 40000, 80, .ext = {X_HBH, X_DEST}, FIRST(79)))}},
	{"tcp6_ext_chain",
	 0,
	 {F(CTL_A, TCP6(A6, "2001:db8:1::10", 40000, 80, .ext = {X_HBH, X_RT, X_DEST}))}},
	{"tcp4_options", 0, {F(CTL_A, TCP4(A4, "192.0.2.10", 40000, 80, .ip_opt_words = 3))}},
	{"tcp4_vlan", 0, {F(CTL_A, TCP4(A4, "192.0.2.10", 40000, 80, .vlan = {0x8100}))}},
	{"udp6_qinq", 0, {F(CTL_A, UDP6(A6, "2001:db8:1::10", 40000, 80, .vlan = {0x88a8}))}},
	{"arp_request", 0, {F(CTL_A, ARP_REQ(.arp_sender = A4))}},
	{"arp_probe", 0, {F(CTL_B, ARP_REQ(.arp_sender = "0.0.0.0"))}},
	{"nd_rs", 0, {F(CTL_A, ICMP6("fe80::10", "ff02::2", ICMP6_RS, .hop_limit = 255))}},
	{"nd_ns", 0, {F(CTL_A, ICMP6(A6, SOLN, ICMP6_NS, .hop_limit = 255, .nd_target = GW6))}},
	{"nd_ns_dad",
	 0,
	 {F(CTL_A, ICMP6("::", "ff02::1:ff00:10", ICMP6_NS, .hop_limit = 255, .nd_target = A6))}},
	{"nd_na", 0, {F(CTL_A, ICMP6(A6, "fe80::1", ICMP6_NA, .hop_limit = 255, .nd_target = A6))}},
	{"nd_ra", 0, {F(CTL_A, ICMP6("fe80::10", "ff02::1", ICMP6_RA, .hop_limit = 255))}},
	{"mld2_report",
	 0,
	 {F(CTL_A,
	    ICMP6("fe80::10", "ff02::16", ICMP6_MLD2_REPORT, .hop_limit = 1, .ext = {X_HBH}))}},
	{"ether_other", 0, {F(CTL_A, ETHER(0x88cc))}},
	/* drops, one per reason and kind of subject: the mutations that turn
	 * them into passes are the ones that matter */
	{"tcp6_deny", 0, {F(CTL_A, TCP6(A6, "2001:db8:dead::5", 40000, 80))}},
	{"udp4_default_deny", 0, {F(CTL_A, UDP4(A4, "192.0.2.250", 40000, 5000))}},
	{"tcp4_expired", 0, {F(CTL_A, TCP4(A4, "192.0.2.201", 40000, 443))}},
	{"tcp6_expired", 0, {F(CTL_A, TCP6(A6, "2001:db8:99::2", 40000, 443))}},
	{"tcp4_learned_in_deny", 0, {F(CTL_A, TCP4(A4, "203.0.113.9", 40000, 443))}},
	{"tcp6_learned_port_rule", 0, {F(CTL_A, TCP6(A6, "2001:db8:2::99", 40000, 80))}},
	{"tcp4_beta_sibling", 0, {F(CTL_B, TCP4(B4, A4, 40000, 80))}},
	{"udp6_beta_sibling", 0, {F(CTL_B, UDP6(B6, A6, 40000, 5000))}},
	{"tcp4_gateway_http", 0, {F(CTL_A, TCP4(A4, GW4, 40000, 80))}},
	{"tcp4_spoofed_port", 0, {F(CTL_B, TCP4(A4, "192.0.2.10", 40000, 80))}},
	{"tcp4_unknown_source", 0, {F(CTL_A, TCP4("10.42.0.99", "192.0.2.10", 40000, 80))}},
	{"tcp4_zeta_missing_port", 0, {F(CTL_A, TCP4("10.42.0.60", "192.0.2.10", 40000, 80))}},
	{"udp4_epsilon_no_gateway",
	 2,
	 {F(0, UDP4("10.42.0.70", "198.51.100.53", 40000, 53, .payload = 29))}},
	{"tcp4_doh_strict", 8, {F(CTL_B, TCP4(B4, "198.51.100.9", 40000, 443))}},
	{"tcp4_beta_smtp", 0, {F(CTL_B, TCP4(B4, "192.0.2.10", 40000, 25))}},
	{"udp4_fragment_alone",
	 0,
	 {F(CTL_A, UDP4(A4, "192.0.2.10", 40000, 5000, .payload = 8, LAST(81)))}},
	{"udp4_dns_first_fragment",
	 1,
	 {F(CTL_A, UDP4(A4, GW4, 40000, 53, .payload = 16, FIRST(82)))}},
	/* layer-7 pinning: a connection through the proxy and back, QUIC, a
	 * pinned CIDR, the proxy down */
	{"tcp4_l7_pinned",
	 MODE_L7_UP,
	 {F(CTL_A, TCP4(A4, "192.0.2.200", 40000, 443, .csum = true)),
	  F(CTL_A,
	    TCP4(A4, "192.0.2.200", 40000, 443, .tcp_flags = TH_ACK, .payload = 32, .csum = true)),
	  F(CTL_A | CTL_EG,
	    TCP4(GW4, A4, L7_TLS_PORT, 40000, .tcp_flags = TH_ACK, .payload = 32, .csum = true))}},
	{"tcp6_l7_pinned_http",
	 MODE_L7_UP,
	 {F(CTL_A, TCP6(A6, "2001:db8:99::1", 40001, 80, .csum = true)),
	  F(CTL_A | CTL_EG,
	    TCP6(GW6, A6, L7_HTTP_PORT, 40001, .tcp_flags = TH_SYN | TH_ACK, .csum = true)),
	  F(CTL_A,
	    TCP6(A6, "2001:db8:99::1", 40001, 80, .tcp_flags = TH_FIN | TH_ACK, .csum = true))}},
	{"tcp6_l7_delta_cidr",
	 MODE_L7_UP,
	 {F(0, TCP6(D6, "2001:db8:5::1", 40000, 443, .csum = true))}},
	{"udp4_l7_quic", MODE_L7_UP, {F(CTL_A, UDP4(A4, "192.0.2.200", 40000, 443, .csum = true))}},
	{"udp4_l7_quic_allowed",
	 MODE_L7_UP | 0x40,
	 {F(CTL_A, UDP4(A4, "192.0.2.200", 40000, 443, .csum = true))}},
	{"tcp4_l7_proxy_down", 0x10, {F(CTL_A, TCP4(A4, "192.0.2.150", 40000, 443, .csum = true))}},
	{"tcp4_l7_untracked",
	 MODE_L7_UP,
	 {F(CTL_A, TCP4(A4, "192.0.2.200", 40002, 443, .tcp_flags = TH_ACK, .csum = true))}},
	/* the holes FW_FUZZ_TOLERATE names, as a sandbox would try them */
	{"hole_mac_of_a_sibling",
	 0,
	 {{.ctl = CTL_A,
	   .spec = UDP4(A4, "192.0.2.10", 40000, 5000, .payload = 32),
	   .mac_last = 3}}},
	{"hole_nd_rs_to_denied",
	 0,
	 {F(CTL_A, ICMP6(A6, "2001:db8:dead::2", ICMP6_RS, .hop_limit = 255, .payload = 32))}},
	{"hole_udp6_ports_past_payload",
	 0,
	 {F(CTL_A,
	    UDP6(A6, "2001:db8:1::10", 40000, 80, .ext = {X_DEST}, FIRST(80), .len_delta = -8))}},
};

static int write_seeds(const char *dir)
{
	for (size_t i = 0; i < sizeof(seeds) / sizeof(seeds[0]); i++) {
		const struct seed *s = &seeds[i];
		__u8 buf[1 + 3 * (3 + PKT_MAX)];
		size_t n = 0;
		char path[512];
		FILE *fp;

		buf[n++] = s->mode;
		for (size_t k = 0; k < 3 && s->frames[k].spec.family | s->frames[k].spec.kind;
		     k++) {
			size_t len = pkt_build(&s->frames[k].spec, buf + n + 3);

			if (!len) {
				fprintf(stderr, "seed %s: frame %zu does not build\n", s->name, k);
				return -EINVAL;
			}
			if (s->frames[k].mac_last)
				buf[n + 3 + 11] = s->frames[k].mac_last;
			buf[n] = s->frames[k].ctl;
			buf[n + 1] = (__u8)(len >> 8);
			buf[n + 2] = (__u8)len;
			n += 3 + len;
		}
		snprintf(path, sizeof(path), "%s/%s.bin", dir, s->name);
		fp = fopen(path, "wb");
		if (!fp || fwrite(buf, 1, n, fp) != n || fclose(fp)) {
			fprintf(stderr, "can't write %s: %s\n", path, strerror(errno));
			return -errno;
		}
	}
	return 0;
}
