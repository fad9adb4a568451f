// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* cgfuzz: a process sandbox under random socket calls, judged by what
 * arrives in the simulated internet. Each input is a program of 8-byte
 * operations (socket, setsockopt with routing headers and IPv4 source
 * routes, bind, connect, sendto, sendmsg with control messages, sendmmsg,
 * io_uring, fork, threads); a child joins the sandbox's cgroup, drops to
 * an unprivileged uid and runs it. An AF_PACKET socket on the internet
 * side of the pod's uplink sees every frame that arrives there, and the
 * oracle (the subject's policy, known here) says whether it may: a frame
 * the policy does not allow, or one whose IPv6 routing header or IPv4
 * source route names an address it does not allow (the first allowed hop
 * would forward it there), ends the run with exit 1 and the input kept.
 *
 * Inputs decode the same way every time; the runner (tests/e2e/cgfuzz.sh)
 * sets up the pod, the internet, fastwalld and the subject. Without coverage
 * feedback from the kernel, inputs whose calls end in results not seen
 * before (the operation, its variant, its errno) join the corpus.
 * Exit: 0 no violation, 1 a violation (input saved), 2 a setup error. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <linux/io_uring.h>
#include <linux/ipv6.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/tcp.h>
#include <netinet/udp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/sendfile.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <dirent.h>
#include <grp.h>
#include <time.h>
#include <unistd.h>

#ifndef IPV6_2292RTHDR
#define IPV6_2292RTHDR 5
#endif
#ifndef IPV6_RTHDR
#define IPV6_RTHDR 57
#endif
#ifndef IP_RETOPTS
#define IP_RETOPTS 7
#endif
#ifndef TCP_FASTOPEN_CONNECT
#define TCP_FASTOPEN_CONNECT 30
#endif
#ifndef UDP_CORK
#define UDP_CORK 1
#endif
#ifndef IPV6_ADDRFORM
#define IPV6_ADDRFORM 1
#endif
#ifndef IPV6_FREEBIND
#define IPV6_FREEBIND 78
#endif
#ifndef IP_UNICAST_IF
#define IP_UNICAST_IF 50
#endif
#ifndef IPV6_UNICAST_IF
#define IPV6_UNICAST_IF 76
#endif

#define OP_LEN	   8  /* bytes per operation */
#define MAX_OPS	   48 /* operations per input */
#define INPUT_MAX  (OP_LEN * MAX_OPS)
#define NSLOTS	   4 /* sockets an input juggles */
#define NFEATURES  65536
#define MAX_CORPUS 4096

/* ---- the address pool and the policy ----------------------------------- */

/* The subject's policy, as fastwalld is given it by the runner:
 *   allow 198.51.100.10 and 2001:db8::10 (any protocol, any port),
 *   allow 198.51.100.20 and 2001:db8::20 TCP and UDP port 443,
 *   deny everything else. */
struct pool_addr {
	int family;
	const char *text;
	unsigned char a[16]; /* v4 in the first 4 bytes */
};

static struct pool_addr pool[16] = {
	{AF_INET, "198.51.100.10", {0}},    /* allowed */
	{AF_INET, "198.51.100.20", {0}},    /* port 443 only */
	{AF_INET, "198.51.100.66", {0}},    /* denied */
	{AF_INET, "203.0.113.10", {0}},	    /* denied */
	{AF_INET, "192.0.2.254", {0}},	    /* denied, the uplink's peer */
	{AF_INET, "192.0.2.1", {0}},	    /* the pod's own */
	{AF_INET, "127.0.0.1", {0}},	    /* local */
	{AF_INET, "127.254.0.1", {0}},	    /* a proxy alias */
	{AF_INET6, "2001:db8::10", {0}},    /* allowed */
	{AF_INET6, "2001:db8::20", {0}},    /* port 443 only */
	{AF_INET6, "2001:db8::66", {0}},    /* denied */
	{AF_INET6, "2001:db8:1::254", {0}}, /* denied, the uplink's peer */
	{AF_INET6, "2001:db8:3::1", {0}},   /* denied, routed */
	{AF_INET6, "2001:db8:1::1", {0}},   /* the pod's own */
	{AF_INET6, "::1", {0}},		    /* local */
	{AF_INET6, "::", {0}},		    /* unspecified */
};

/* IPv4 source-route hops and IPv6 routing-header segments */
static const char *const hops4[8] = {"198.51.100.10", "198.51.100.20", "198.51.100.66",
				     "203.0.113.10",  "192.0.2.254",   "192.0.2.1",
				     "203.0.113.99",  "224.0.0.1"};
static const char *const segs6[16] = {
	"2001:db8::10",
	"2001:db8::20",
	"2001:db8::66",
	"2001:db8:1::254",
	"2001:db8:3::1",
	"2001:db8:1::1",
	"::1",
	"::ffff:198.51.100.10",
	"::ffff:198.51.100.20",
	"::ffff:198.51.100.66",
	"::ffff:203.0.113.10",
	"::ffff:192.0.2.254",
	"fe80::1",
	"ff02::1",
	"2001:db8::66",
	"2001:db8:3::1",
};
static unsigned char hop4[8][4], seg6[16][16];

static const unsigned short ports[8] = {443, 80, 53, 9000, 0, 7, 65535, 22};

enum { PROTO_UNKNOWN_PORT = -2, PROTO_NO_PORT = -1 };

/* May a packet of proto to port reach the IPv4 address a? port is
 * PROTO_NO_PORT for protocols without ports and PROTO_UNKNOWN_PORT for a
 * later fragment (its first fragment was judged with the port). */
static bool allowed4(const unsigned char *a, int proto, int port)
{
	if (!memcmp(a, pool[0].a, 4))
		return true;
	if (!memcmp(a, pool[1].a, 4))
		return (proto == IPPROTO_TCP || proto == IPPROTO_UDP) &&
		       (port == 443 || port == PROTO_UNKNOWN_PORT);
	return false;
}

static bool allowed6(const unsigned char *a, int proto, int port)
{
	static const unsigned char mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

	if (!memcmp(a, mapped, 12)) /* the policy reads ::ffff:a.b.c.d as IPv4 */
		return allowed4(a + 12, proto, port);
	if (!memcmp(a, pool[8].a, 16))
		return true;
	if (!memcmp(a, pool[9].a, 16))
		return (proto == IPPROTO_TCP || proto == IPPROTO_UDP) &&
		       (port == 443 || port == PROTO_UNKNOWN_PORT);
	return false;
}

/* ---- the oracle -------------------------------------------------------- */

struct verdict {
	const char *why; /* NULL: may arrive */
	char detail[256];
};

static void fmt_addr(int family, const unsigned char *a, char *out, size_t n)
{
	inet_ntop(family, a, out, n);
}

static int ports_of(const unsigned char *l4, size_t len, int proto)
{
	if ((proto == IPPROTO_TCP || proto == IPPROTO_UDP || proto == IPPROTO_UDPLITE) && len >= 4)
		return l4[2] << 8 | l4[3];
	if (proto == IPPROTO_TCP || proto == IPPROTO_UDP || proto == IPPROTO_UDPLITE)
		return PROTO_UNKNOWN_PORT;
	return PROTO_NO_PORT;
}

/* UDP-Lite is judged as UDP by port: the policy's port rules name TCP and
 * UDP only, so to 198.51.100.20 it may not arrive at all. */
static void judge4(const unsigned char *p, size_t len, struct verdict *v)
{
	char s[INET6_ADDRSTRLEN], d[INET6_ADDRSTRLEN], h[INET6_ADDRSTRLEN];
	size_t ihl;
	int proto, port, frag;

	if (len < 20) {
		v->why = "short IPv4 header";
		return;
	}
	ihl = (size_t)(p[0] & 15) * 4;
	if (ihl < 20 || ihl > len) {
		v->why = "bad IPv4 header length";
		return;
	}
	proto = p[9];
	frag = (p[6] << 8 | p[7]) & 0x1fff;
	fmt_addr(AF_INET, p + 12, s, sizeof(s));
	fmt_addr(AF_INET, p + 16, d, sizeof(d));
	/* IGMP reports for the groups the kernel joins on its own */
	if (proto == IPPROTO_IGMP && p[16] == 224 && p[17] == 0 && p[18] == 0)
		return;
	port = frag ? PROTO_UNKNOWN_PORT : ports_of(p + ihl, len - ihl, proto);
	snprintf(v->detail, sizeof(v->detail), "IPv4 %s -> %s proto %d port %d", s, d, proto, port);
	if (!allowed4(p + 16, proto, port)) {
		v->why = "the policy does not allow this destination";
		return;
	}
	/* LSRR and SSRR: every hop named is a destination too */
	for (size_t o = 20; o < ihl;) {
		unsigned char t = p[o];
		size_t ol;

		if (t == 0)
			break;
		if (t == 1) {
			o++;
			continue;
		}
		if (o + 1 >= ihl || p[o + 1] < 2 || o + p[o + 1] > ihl)
			break;
		ol = p[o + 1];
		if (t == 131 || t == 137) {
			for (size_t a = o + 3; a + 4 <= o + ol; a += 4) {
				if (allowed4(p + a, proto, port))
					continue;
				fmt_addr(AF_INET, p + a, h, sizeof(h));
				v->why =
					"a source route names an address the policy does not allow";
				snprintf(v->detail + strlen(v->detail),
					 sizeof(v->detail) - strlen(v->detail), ", %s hop %s",
					 t == 131 ? "LSRR" : "SSRR", h);
				return;
			}
		}
		o += ol;
	}
}

static void judge6(const unsigned char *p, size_t len, struct verdict *v)
{
	char s[INET6_ADDRSTRLEN], d[INET6_ADDRSTRLEN], h[INET6_ADDRSTRLEN];
	const unsigned char *route[16];
	int nroute = 0, rtype = -1;
	size_t off = 40;
	int nh, port = PROTO_NO_PORT;
	bool later_frag = false;

	if (len < 40) {
		v->why = "short IPv6 header";
		return;
	}
	nh = p[6];
	for (int i = 0; i < 8; i++) {
		size_t hl;

		if (nh != 0 && nh != 43 && nh != 60 && nh != 44 && nh != 51)
			break;
		if (off + 8 > len) {
			v->why = "truncated IPv6 extension header";
			return;
		}
		if (nh == 44) {
			later_frag = ((p[off + 2] << 8 | p[off + 3]) & 0xfff8) != 0;
			nh = p[off];
			off += 8;
			if (later_frag)
				break;
			continue;
		}
		hl = nh == 51 ? ((size_t)p[off + 1] + 2) * 4 : ((size_t)p[off + 1] + 1) * 8;
		if (off + hl > len) {
			v->why = "truncated IPv6 extension header";
			return;
		}
		if (nh == 43) {
			/* types 0 and 2: addresses from byte 8; 4 (SRH): last entry + 1 */
			size_t n = p[off + 1] / 2;

			rtype = p[off + 2];
			if (rtype == 4 && (size_t)p[off + 4] + 1 < n)
				n = (size_t)p[off + 4] + 1;
			for (size_t k = 0; k < n && nroute < 16; k++)
				if (off + 8 + 16 * (k + 1) <= off + hl)
					route[nroute++] = p + off + 8 + 16 * k;
		}
		nh = p[off];
		off += hl;
	}
	fmt_addr(AF_INET6, p + 8, s, sizeof(s));
	fmt_addr(AF_INET6, p + 24, d, sizeof(d));
	/* neighbour discovery and MLD, which the kernel sends on its own
	 * (a ping socket sends echo requests only) */
	if (nh == IPPROTO_ICMPV6 && !later_frag && off < len) {
		unsigned char t = p[off];

		if ((t >= 133 && t <= 137 && p[7] == 255) ||
		    ((t == 130 || t == 131 || t == 132 || t == 143) && p[7] == 1))
			return;
	}
	if (later_frag)
		port = PROTO_UNKNOWN_PORT;
	else if (off <= len)
		port = ports_of(p + off, len - off, nh);
	snprintf(v->detail, sizeof(v->detail), "IPv6 %s -> %s next header %d port %d", s, d, nh,
		 port);
	if (!allowed6(p + 24, nh, port)) {
		v->why = "the policy does not allow this destination";
		return;
	}
	for (int k = 0; k < nroute; k++) {
		if (allowed6(route[k], nh, port))
			continue;
		fmt_addr(AF_INET6, route[k], h, sizeof(h));
		v->why = "a routing header names an address the policy does not allow";
		snprintf(v->detail + strlen(v->detail), sizeof(v->detail) - strlen(v->detail),
			 ", routing header type %d segment %s", rtype, h);
		return;
	}
}

/* A frame that arrived on the internet side of the uplink. */
static void judge_frame(const unsigned char *f, size_t len, struct verdict *v)
{
	int type;

	v->why = NULL;
	v->detail[0] = '\0';
	if (len < 14) {
		v->why = "runt frame";
		return;
	}
	type = f[12] << 8 | f[13];
	if (type == ETH_P_ARP)
		return;
	if (type == ETH_P_IP)
		judge4(f + 14, len - 14, v);
	else if (type == ETH_P_IPV6)
		judge6(f + 14, len - 14, v);
	else {
		v->why = "an ethertype a socket of the sandbox can't send";
		snprintf(v->detail, sizeof(v->detail), "ethertype 0x%04x", type);
	}
}

/* ---- the program an input decodes to --------------------------------- */

enum op {
	OP_SOCKET,
	OP_SETSOCKOPT,
	OP_BIND,
	OP_CONNECT,
	OP_SENDTO,
	OP_SENDMSG,
	OP_SENDMMSG,
	OP_URING,
	OP_FORK,
	OP_THREAD,
	OP_CLOSE,
	OP_DUP,
	OP_RECV,
	OP_SLEEP,
	OP_SHUTDOWN,
	OP_WRITE,
	OP_MAX,
};

static const char *const op_names[OP_MAX] = {
	"socket", "setsockopt", "bind",	 "connect", "sendto", "sendmsg", "sendmmsg", "io_uring",
	"fork",	  "thread",	"close", "dup",	    "recv",   "sleep",	 "shutdown", "write",
};

struct prog {
	const unsigned char *ops;
	size_t nops;
};

/* the sockets of the running input (shared by its threads; a fork copies) */
static int slots[NSLOTS] = {-1, -1, -1, -1};
static int trace_fd = -1;
static bool trace_verbose; /* CGFUZZ_VERBOSE=1: every call's result on stderr */
static unsigned char payload[2048];

/* One record per call: the operation with its variant, and the result. */
static void trace(unsigned op, unsigned variant, int rc)
{
	unsigned char r[3] = {(unsigned char)op, (unsigned char)variant,
			      (unsigned char)(rc < 0 ? (errno & 0x7f) : 0x80)};

	if (trace_verbose)
		fprintf(stderr, "#   %s/%u: %s\n", op < OP_MAX ? op_names[op] : "?", variant,
			rc < 0 ? strerror(errno) : "ok");
	if (trace_fd >= 0 && write(trace_fd, r, sizeof(r)) < 0)
		trace_fd = -1;
}

/* A destination from a selector byte: low 4 bits the pool entry; bit 4 an
 * IPv4 entry as v4-mapped IPv6; bit 5 the family AF_UNSPEC; bit 6 a short
 * length; bit 7 a scope id and flow label. */
static socklen_t make_addr(unsigned char sel, unsigned char portsel, struct sockaddr_storage *ss)
{
	const struct pool_addr *p = &pool[sel & 15];
	unsigned short port =
		portsel < 0xc0 ? ports[portsel & 7] : (unsigned short)(1024 + portsel);
	socklen_t len;

	memset(ss, 0, sizeof(*ss));
	if (p->family == AF_INET && !(sel & 0x10)) {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;

		sin->sin_family = AF_INET;
		sin->sin_port = htons(port);
		memcpy(&sin->sin_addr, p->a, 4);
		len = sizeof(*sin);
	} else {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons(port);
		if (p->family == AF_INET) {
			sin6->sin6_addr.s6_addr[10] = 0xff;
			sin6->sin6_addr.s6_addr[11] = 0xff;
			memcpy(&sin6->sin6_addr.s6_addr[12], p->a, 4);
		} else {
			memcpy(&sin6->sin6_addr, p->a, 16);
		}
		if (sel & 0x80) {
			sin6->sin6_scope_id = 1 + (portsel & 3);
			sin6->sin6_flowinfo = htonl(portsel);
		}
		len = sizeof(*sin6);
	}
	if (sel & 0x20)
		ss->ss_family = AF_UNSPEC;
	if (sel & 0x40)
		len = (sel & 0x80) ? 2 : len - 4;
	return len;
}

/* An IPv6 routing header: b the type (4, 4, 2, 0) and segment count, c
 * and d the segments (4 bits each), e segments_left (bit 7: as given,
 * else the count the kernel accepts), f the SRH flags. */
static size_t make_rthdr(const unsigned char *x, unsigned char *buf)
{
	static const unsigned char types[4] = {4, 4, 2, 0};
	unsigned type = types[x[1] & 3], n = ((x[1] >> 2) & 3) + 1;
	unsigned nib[4] = {x[2] & 15u, x[2] >> 4, x[3] & 15u, x[3] >> 4};

	if (type == 2 && !(x[1] & 0x80))
		n = 1;
	memset(buf, 0, 8 + 16 * n);
	buf[0] = 0;			 /* next header: the kernel's */
	buf[1] = (unsigned char)(2 * n); /* length in 8-byte units, after the first 8 */
	buf[2] = (unsigned char)type;
	if (x[4] & 0x80)
		buf[3] = x[4] & 7;
	else
		buf[3] = (unsigned char)(type == 4 ? n - 1 : n);
	if (type == 4) {
		buf[4] = (unsigned char)(n - 1); /* last entry */
		buf[5] = x[5];			 /* flags */
	}
	for (unsigned k = 0; k < n; k++)
		memcpy(buf + 8 + 16 * k, seg6[nib[k]], 16);
	return 8 + 16 * n;
}

/* IPv4 options: b the kind (LSRR, SSRR, RR, TS) and hop count, c..e the
 * hops (3 bits each), f bit 0 a NOP first, bit 1 a pointer past 4. */
static size_t make_ipopt(const unsigned char *x, unsigned char *buf)
{
	static const unsigned char kinds[4] = {131, 137, 7, 68};
	unsigned kind = kinds[x[1] & 3], n = ((x[1] >> 2) & 7) + 1;
	unsigned bits = (unsigned)x[2] | (unsigned)x[3] << 8 | (unsigned)x[4] << 16;
	size_t o = 0;

	if (n > 8)
		n = 8;
	if (x[5] & 1)
		buf[o++] = 1;
	buf[o++] = (unsigned char)kind;
	buf[o++] = (unsigned char)(3 + 4 * n + (kind == 68));
	buf[o++] = (x[5] & 2) ? 8 : (kind == 68 ? 5 : 4);
	if (kind == 68)
		buf[o++] = 1; /* timestamps with addresses */
	for (unsigned k = 0; k < n; k++, o += 4)
		memcpy(buf + o, hop4[(bits >> (3 * k)) & 7], 4);
	while (o % 4)
		buf[o++] = 0;
	return o;
}

/* Control messages for sendmsg: sel picks one, x its argument bytes. */
static size_t add_cmsg(unsigned char *ctl, size_t used, size_t cap, unsigned char sel,
		       const unsigned char *x)
{
	unsigned char data[200];
	size_t dlen = 0;
	int level, type;
	struct cmsghdr *c;

	switch (sel % 12) {
	case 0:
	case 1:
		level = IPPROTO_IPV6;
		type = sel % 12 ? IPV6_2292RTHDR : IPV6_RTHDR;
		dlen = make_rthdr(x, data);
		break;
	case 2: {
		struct in6_pktinfo pi = {.ipi6_ifindex = (unsigned)(x[1] & 3)};

		memcpy(&pi.ipi6_addr, pool[8 + (x[2] & 7)].a, 16);
		level = IPPROTO_IPV6;
		type = IPV6_PKTINFO;
		memcpy(data, &pi, sizeof(pi));
		dlen = sizeof(pi);
		break;
	}
	case 3: {
		struct in_pktinfo pi = {.ipi_ifindex = x[1] & 3};

		memcpy(&pi.ipi_spec_dst, pool[x[2] & 7].a, 4);
		memcpy(&pi.ipi_addr, pool[x[3] & 7].a, 4);
		level = IPPROTO_IP;
		type = IP_PKTINFO;
		memcpy(data, &pi, sizeof(pi));
		dlen = sizeof(pi);
		break;
	}
	case 4:
	case 5:
		level = IPPROTO_IP;
		type = sel % 12 == 4 ? IP_RETOPTS : IP_OPTIONS;
		dlen = make_ipopt(x, data);
		break;
	case 6:
	case 7:
		/* hop-by-hop and destination options: a PadN (needs CAP_NET_RAW) */
		level = IPPROTO_IPV6;
		type = sel % 12 == 6 ? IPV6_HOPOPTS : IPV6_DSTOPTS;
		memset(data, 0, 8);
		data[2] = 1;
		data[3] = 4;
		dlen = 8;
		break;
	case 8: {
		int ttl = x[1];

		level = x[2] & 1 ? IPPROTO_IPV6 : IPPROTO_IP;
		type = x[2] & 1 ? IPV6_HOPLIMIT : IP_TTL;
		memcpy(data, &ttl, sizeof(ttl));
		dlen = sizeof(ttl);
		break;
	}
	case 9: {
		int one = 1;

		level = IPPROTO_IPV6;
		type = IPV6_DONTFRAG;
		memcpy(data, &one, sizeof(one));
		dlen = sizeof(one);
		break;
	}
	case 10: {
		int tc = x[1];

		level = IPPROTO_IPV6;
		type = IPV6_TCLASS;
		memcpy(data, &tc, sizeof(tc));
		dlen = sizeof(tc);
		break;
	}
	default: {
		/* IPV6_NEXTHOP: a sockaddr_in6 first hop */
		struct sockaddr_in6 nh = {.sin6_family = AF_INET6};

		memcpy(&nh.sin6_addr, seg6[x[2] & 15], 16);
		level = IPPROTO_IPV6;
		type = IPV6_NEXTHOP;
		memcpy(data, &nh, sizeof(nh));
		dlen = sizeof(nh);
		break;
	}
	}
	if (used + CMSG_SPACE(dlen) > cap)
		return used;
	c = (struct cmsghdr *)(ctl + used);
	c->cmsg_level = level;
	c->cmsg_type = type;
	c->cmsg_len = CMSG_LEN(dlen);
	memcpy(CMSG_DATA(c), data, dlen);
	return used + CMSG_SPACE(dlen);
}

static int slot_fd(unsigned char s)
{
	return slots[s % NSLOTS];
}

static void op_socket(const unsigned char *x)
{
	static const int fams[6] = {AF_INET, AF_INET6, AF_INET, AF_INET6, AF_PACKET, AF_UNSPEC};
	static const int types[5] = {SOCK_DGRAM, SOCK_STREAM, SOCK_DGRAM, SOCK_RAW, SOCK_SEQPACKET};
	static const int protos[8] = {0,
				      0,
				      IPPROTO_UDP,
				      IPPROTO_TCP,
				      IPPROTO_ICMP,
				      IPPROTO_ICMPV6,
				      IPPROTO_UDPLITE,
				      IPPROTO_SCTP};
	int fam = fams[x[2] % 6], type = types[x[3] % 5], proto = protos[x[4] % 8];
	int fd, s = x[1] % NSLOTS;

	if (fam == AF_PACKET)
		proto = htons(ETH_P_ALL);
	if (x[4] >= 0xf0)
		proto = x[5];
	fd = socket(fam, type | SOCK_NONBLOCK, proto);
	trace(OP_SOCKET, (unsigned)(x[2] % 6 * 40 + x[3] % 5 * 8 + x[4] % 8), fd);
	if (fd < 0)
		return;
	if (slots[s] >= 0)
		close(slots[s]);
	slots[s] = fd;
}

static void op_setsockopt(const unsigned char *x)
{
	unsigned char buf[256];
	int fd = slot_fd(x[1]), v = x[3] & 1, rc;
	unsigned which = x[2] % 20;
	const unsigned char *arg = x + 2; /* the builders read x[1..5] of this */
	size_t len;

	switch (which) {
	case 0:
		len = make_rthdr(arg, buf);
		rc = setsockopt(fd, IPPROTO_IPV6, IPV6_RTHDR, buf, (socklen_t)len);
		break;
	case 1:
		len = make_rthdr(arg, buf);
		rc = setsockopt(fd, IPPROTO_IPV6, IPV6_2292RTHDR, buf, (socklen_t)len);
		break;
	case 2:
	case 3:
	case 4:
		memset(buf, 0, 8);
		buf[2] = 1;
		buf[3] = 4;
		rc = setsockopt(fd, IPPROTO_IPV6,
				which == 2 ? IPV6_HOPOPTS
					   : (which == 3 ? IPV6_DSTOPTS : IPV6_RTHDRDSTOPTS),
				buf, 8);
		break;
	case 5:
		len = make_ipopt(arg, buf);
		rc = setsockopt(fd, IPPROTO_IP, IP_OPTIONS, buf, (socklen_t)len);
		break;
	case 6:
		len = make_ipopt(arg, buf);
		rc = setsockopt(fd, IPPROTO_IP, IP_RETOPTS, buf, (socklen_t)len);
		break;
	case 7:
		rc = setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v, sizeof(v));
		break;
	case 8: {
		int af = AF_INET;

		rc = setsockopt(fd, IPPROTO_IPV6, IPV6_ADDRFORM, &af, sizeof(af));
		break;
	}
	case 9:
		v = 1;
		rc = setsockopt(fd, x[3] & 1 ? IPPROTO_IPV6 : IPPROTO_IP,
				x[3] & 1 ? IPV6_FREEBIND : IP_FREEBIND, &v, sizeof(v));
		break;
	case 10:
		v = 1;
		rc = setsockopt(fd, IPPROTO_IP, IP_TRANSPARENT, &v, sizeof(v));
		break;
	case 11: {
		struct in6_pktinfo pi = {.ipi6_ifindex = (unsigned)(x[4] & 3)};

		memcpy(&pi.ipi6_addr, pool[8 + (x[3] & 7)].a, 16);
		rc = setsockopt(fd, IPPROTO_IPV6, IPV6_PKTINFO, &pi, sizeof(pi));
		break;
	}
	case 12: {
		int ifx = x[4] & 3;

		if (x[3] & 1)
			rc = setsockopt(fd, IPPROTO_IPV6, IPV6_UNICAST_IF, &ifx, sizeof(ifx));
		else {
			ifx = (int)htonl((uint32_t)ifx);
			rc = setsockopt(fd, IPPROTO_IP, IP_UNICAST_IF, &ifx, sizeof(ifx));
		}
		break;
	}
	case 13: {
		static const char *const devs[4] = {"up0", "lo", "br0", ""};
		const char *dev = devs[x[3] & 3];

		rc = setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, dev, (socklen_t)strlen(dev));
		break;
	}
	case 14:
		v = 1;
		rc = setsockopt(fd, IPPROTO_TCP, TCP_FASTOPEN_CONNECT, &v, sizeof(v));
		break;
	case 15:
		rc = setsockopt(fd, IPPROTO_UDP, UDP_CORK, &v, sizeof(v));
		break;
	case 16:
		v = x[3] & 3; /* IP_PMTUDISC_*: DONT, WANT, DO, PROBE */
		rc = setsockopt(fd, x[4] & 1 ? IPPROTO_IPV6 : IPPROTO_IP,
				x[4] & 1 ? IPV6_MTU_DISCOVER : IP_MTU_DISCOVER, &v, sizeof(v));
		break;
	case 17:
		v = 1;
		rc = setsockopt(fd, IPPROTO_IP, IP_HDRINCL, &v, sizeof(v));
		break;
	case 18: {
		static const int levels[5] = {SOL_SOCKET, IPPROTO_IP, IPPROTO_IPV6, IPPROTO_TCP,
					      IPPROTO_UDP};
		int val = x[4] | x[5] << 8;

		rc = setsockopt(fd, levels[x[3] % 5], x[4] & 0x7f, &val, sizeof(val));
		break;
	}
	default:
		v = 1;
		rc = setsockopt(fd, SOL_SOCKET, x[3] & 1 ? SO_REUSEPORT : SO_REUSEADDR, &v,
				sizeof(v));
		break;
	}
	trace(OP_SETSOCKOPT, which, rc);
}

static void op_bind(const unsigned char *x)
{
	struct sockaddr_storage ss;
	socklen_t len = make_addr(x[2], x[3] | 0xc0, &ss);
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;

	/* a source port of its own, or any */
	sin6->sin6_port = x[4] & 1 ? 0 : htons((unsigned short)(20000 + x[5]));
	trace(OP_BIND, x[2] & 0x3f, bind(slot_fd(x[1]), (struct sockaddr *)&ss, len));
}

static void op_connect(const unsigned char *x)
{
	struct sockaddr_storage ss;
	socklen_t len = make_addr(x[2], x[3], &ss);

	trace(OP_CONNECT, x[2] & 0x3f, connect(slot_fd(x[1]), (struct sockaddr *)&ss, len));
}

static int send_flags(unsigned char f)
{
	static const int flags[8] = {
		0, 0, MSG_MORE, MSG_FASTOPEN, MSG_CONFIRM, MSG_DONTROUTE, MSG_OOB, MSG_ZEROCOPY};

	return flags[f & 7] | MSG_DONTWAIT | MSG_NOSIGNAL;
}

static void op_sendto(const unsigned char *x)
{
	struct sockaddr_storage ss;
	socklen_t len = make_addr(x[2], x[3], &ss);
	size_t n = (size_t)x[5] * 8;

	payload[0] = x[4] & 0x40 ? 128 : 8; /* an echo request to a ping socket, v6 or v4 */
	if (x[4] & 0x80)
		trace(OP_SENDTO, 64, (int)send(slot_fd(x[1]), payload, n, send_flags(x[4])));
	else
		trace(OP_SENDTO, x[2] & 0x3f,
		      (int)sendto(slot_fd(x[1]), payload, n, send_flags(x[4]),
				  (struct sockaddr *)&ss, len));
}

/* A message from x[1..7]: x[2] the address (x[4] bit 7: none), x[3] the
 * port, x[4] bit 6 a control message x[4] & 0x3f, x[5] the length (bits
 * 0-5) and bit 6 a second control message; x[6], x[7] (with x[2], x[3],
 * x[5]) their arguments. */
static void build_msg(struct msghdr *m, struct iovec *iov, struct sockaddr_storage *ss,
		      unsigned char *ctl, size_t ctlcap, const unsigned char *x)
{
	const unsigned char arg1[6] = {0, x[6], x[7], x[3], x[5], x[2]};
	const unsigned char arg2[6] = {0, x[7], x[6], x[2], x[3], x[5]};
	size_t used = 0;

	memset(m, 0, sizeof(*m));
	iov->iov_base = payload;
	iov->iov_len = 64 + (x[5] & 0x3f) * 8;
	m->msg_iov = iov;
	m->msg_iovlen = 1;
	if (!(x[4] & 0x80)) {
		m->msg_namelen = make_addr(x[2], x[3], ss);
		m->msg_name = ss;
	}
	if (x[4] & 0x40)
		used = add_cmsg(ctl, used, ctlcap, x[4] & 0x3f, arg1);
	if (x[5] & 0x40)
		used = add_cmsg(ctl, used, ctlcap, x[6], arg2);
	if (used) {
		m->msg_control = ctl;
		m->msg_controllen = used;
	}
}

static void op_sendmsg(const unsigned char *x)
{
	struct sockaddr_storage ss;
	struct msghdr m;
	struct iovec iov;
	unsigned char ctl[512] __attribute__((aligned(8)));

	build_msg(&m, &iov, &ss, ctl, sizeof(ctl), x);
	trace(OP_SENDMSG, (x[4] & 0x40 ? 1 + x[4] % 12 : 0) * 16 + (x[2] & 15),
	      (int)sendmsg(slot_fd(x[1]), &m, MSG_DONTWAIT | MSG_NOSIGNAL));
}

static void op_sendmmsg(const unsigned char *x)
{
	struct mmsghdr mm[3];
	struct sockaddr_storage ss[3];
	struct iovec iov[3];
	unsigned char ctl[3][512] __attribute__((aligned(8)));
	unsigned n = x[7] % 3 + 1;

	for (unsigned i = 0; i < n; i++) {
		/* x[2..4] the addresses, x[5] the port, x[6] the first's flags */
		const unsigned char y[8] = {0,
					    x[1],
					    x[2 + i],
					    (unsigned char)(x[5] + i),
					    (unsigned char)(i ? x[6] & 0x80 : x[6]),
					    x[7],
					    x[3],
					    x[4]};

		build_msg(&mm[i].msg_hdr, &iov[i], &ss[i], ctl[i], sizeof(ctl[i]), y);
		mm[i].msg_len = 0;
	}
	trace(OP_SENDMMSG, x[2] & 15, sendmmsg(slot_fd(x[1]), mm, n, MSG_DONTWAIT | MSG_NOSIGNAL));
}

/* ---- io_uring, from the system calls (no liburing) --------------------- */

struct uring {
	int fd;
	unsigned *sq_tail, *sq_mask, *sq_array;
	struct io_uring_sqe *sqes;
};

static struct uring ring = {.fd = -1};
/* what a submission points at lives until the child exits */
static struct {
	struct msghdr m;
	struct iovec iov;
	struct sockaddr_storage ss;
	unsigned char ctl[512] __attribute__((aligned(8)));
} uring_bufs[16];
static unsigned uring_used;

static int uring_setup(void)
{
	struct io_uring_params p;
	void *sq, *sqes;
	size_t sqlen;

	memset(&p, 0, sizeof(p));
	ring.fd = (int)syscall(__NR_io_uring_setup, 8, &p);
	if (ring.fd < 0)
		return -errno;
	sqlen = p.sq_off.array + p.sq_entries * sizeof(unsigned);
	sq = mmap(NULL, sqlen, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_POPULATE, ring.fd,
		  IORING_OFF_SQ_RING);
	sqes = mmap(NULL, p.sq_entries * sizeof(struct io_uring_sqe), PROT_READ | PROT_WRITE,
		    MAP_SHARED | MAP_POPULATE, ring.fd, IORING_OFF_SQES);
	if (sq == MAP_FAILED || sqes == MAP_FAILED) {
		close(ring.fd);
		ring.fd = -1;
		return -ENOMEM;
	}
	ring.sq_tail = (unsigned *)((char *)sq + p.sq_off.tail);
	ring.sq_mask = (unsigned *)((char *)sq + p.sq_off.ring_mask);
	ring.sq_array = (unsigned *)((char *)sq + p.sq_off.array);
	ring.sqes = sqes;
	return 0;
}

static void op_uring(const unsigned char *x)
{
	static const unsigned char uops[4] = {IORING_OP_SENDMSG, IORING_OP_CONNECT, IORING_OP_SEND,
					      IORING_OP_SENDMSG};
	unsigned uop = x[2] & 3, tail, idx;
	struct io_uring_sqe *sqe;
	int rc;

	if (ring.fd < 0 && uring_setup() < 0) {
		trace(OP_URING, 15, -1);
		return;
	}
	if (uring_used >= 16) {
		trace(OP_URING, 14, 0);
		return;
	}
	tail = *ring.sq_tail;
	idx = tail & *ring.sq_mask;
	sqe = &ring.sqes[idx];
	memset(sqe, 0, sizeof(*sqe));
	sqe->opcode = uops[uop];
	sqe->fd = slot_fd(x[1]);
	sqe->flags = x[6] & 1 ? IOSQE_ASYNC : 0;
	if (uops[uop] == IORING_OP_SENDMSG) {
		/* x[3] the address, x[4] the port, x[5] the flags (with a
		 * control message for the fourth kind), x[7] the length */
		const unsigned char y[8] = {0,
					    x[1],
					    x[3],
					    x[4],
					    (unsigned char)(uop == 3 ? x[5] | 0x40 : x[5] & 0x80),
					    x[7],
					    x[2],
					    x[6]};

		build_msg(&uring_bufs[uring_used].m, &uring_bufs[uring_used].iov,
			  &uring_bufs[uring_used].ss, uring_bufs[uring_used].ctl,
			  sizeof(uring_bufs[uring_used].ctl), y);
		sqe->addr = (uintptr_t)&uring_bufs[uring_used].m;
		sqe->len = 1;
		sqe->msg_flags = MSG_NOSIGNAL;
	} else if (uops[uop] == IORING_OP_CONNECT) {
		socklen_t len = make_addr(x[3], x[4], &uring_bufs[uring_used].ss);

		sqe->addr = (uintptr_t)&uring_bufs[uring_used].ss;
		sqe->off = len; /* addrlen by value */
	} else {
		sqe->addr = (uintptr_t)payload;
		sqe->len = 64 + x[5];
		sqe->msg_flags = MSG_NOSIGNAL;
	}
	uring_used++;
	ring.sq_array[idx] = idx;
	__atomic_store_n(ring.sq_tail, tail + 1, __ATOMIC_RELEASE);
	rc = (int)syscall(__NR_io_uring_enter, ring.fd, 1, 0, 0, NULL, 0);
	trace(OP_URING, uop * 2 + (x[6] & 1), rc);
}

/* ---- running a program ------------------------------------------------- */

static void run_ops(const unsigned char *ops, size_t nops);

struct thread_arg {
	const unsigned char *ops;
	size_t nops;
};

static void *thread_main(void *p)
{
	struct thread_arg *a = p;

	run_ops(a->ops, a->nops);
	return NULL;
}

static void run_ops(const unsigned char *ops, size_t nops)
{
	for (size_t i = 0; i < nops; i++) {
		const unsigned char *x = ops + i * OP_LEN;
		unsigned op = x[0] % OP_MAX;

		switch (op) {
		case OP_SOCKET:
			op_socket(x);
			break;
		case OP_SETSOCKOPT:
			op_setsockopt(x);
			break;
		case OP_BIND:
			op_bind(x);
			break;
		case OP_CONNECT:
			op_connect(x);
			break;
		case OP_SENDTO:
			op_sendto(x);
			break;
		case OP_SENDMSG:
			op_sendmsg(x);
			break;
		case OP_SENDMMSG:
			op_sendmmsg(x);
			break;
		case OP_URING:
			op_uring(x);
			break;
		case OP_FORK:
		case OP_THREAD: {
			/* the next 1-4 operations in a child process or a thread */
			size_t n = (size_t)(x[1] % 4) + 1;

			if (n > nops - i - 1)
				n = nops - i - 1;
			if (op == OP_FORK) {
				pid_t pid = fork();

				if (pid == 0) {
					run_ops(x + OP_LEN, n);
					_exit(0);
				}
				trace(OP_FORK, 0, pid);
				if (pid > 0)
					waitpid(pid, NULL, 0);
			} else {
				struct thread_arg a = {x + OP_LEN, n};
				pthread_t t;
				int rc = pthread_create(&t, NULL, thread_main, &a);

				trace(OP_THREAD, 0, rc ? -1 : 0);
				if (!rc)
					pthread_join(t, NULL);
			}
			i += n;
			break;
		}
		case OP_CLOSE:
			if (slots[x[1] % NSLOTS] >= 0) {
				close(slots[x[1] % NSLOTS]);
				slots[x[1] % NSLOTS] = -1;
			}
			break;
		case OP_DUP: {
			int fd = slot_fd(x[1]), to = x[2] % NSLOTS;

			if (fd >= 0 && to != x[1] % NSLOTS) {
				int nfd = dup(fd);

				trace(OP_DUP, 0, nfd);
				if (nfd >= 0) {
					if (slots[to] >= 0)
						close(slots[to]);
					slots[to] = nfd;
				}
			}
			break;
		}
		case OP_RECV: {
			unsigned char buf[512], ctl[256];
			struct iovec iov = {buf, sizeof(buf)};
			struct sockaddr_storage ss;
			struct msghdr m = {&ss, sizeof(ss), &iov, 1, ctl, sizeof(ctl), 0};

			trace(OP_RECV, x[2] & 1,
			      (int)recvmsg(slot_fd(x[1]), &m,
					   MSG_DONTWAIT | (x[2] & 1 ? MSG_ERRQUEUE : 0)));
			break;
		}
		case OP_SLEEP:
			usleep(250u * (x[1] % 8));
			break;
		case OP_SHUTDOWN:
			trace(OP_SHUTDOWN, x[2] % 3, shutdown(slot_fd(x[1]), x[2] % 3));
			break;
		case OP_WRITE:
			trace(OP_WRITE, 0, (int)write(slot_fd(x[1]), payload, 16 + x[2]));
			break;
		}
	}
}

/* ---- the harness ------------------------------------------------------- */

struct opts {
	const char *cgroup;  /* the subject's cgroup: each input runs in a leaf of it */
	const char *inet_ns; /* the internet namespace (a path under /run/netns) */
	const char *ifname;  /* its interface facing the pod */
	const char *crashes; /* where a violating input is written */
	const char *corpus;  /* where new inputs are written (optional) */
	unsigned uid;
	unsigned seconds;
	unsigned long runs;
	unsigned long long seed;
	unsigned settle_ms;
	bool unsandboxed; /* the oracle's own check: no cgroup, so denied frames arrive */
	bool quiet;
};

static struct opts o = {
	.ifname = "eth0",
	.crashes = ".",
	.uid = 65534,
	.settle_ms = 5,
};

static int cap_fd = -1;
static char leaf[4096];
static unsigned char seen[NFEATURES / 8];
static unsigned long nfeatures, frames_allowed, frames_total, execs;
static struct timespec t_start;

static double elapsed(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)(t.tv_sec - t_start.tv_sec) + (double)(t.tv_nsec - t_start.tv_nsec) / 1e9;
}

static unsigned long long hash64(const unsigned char *d, size_t n)
{
	unsigned long long h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < n; i++)
		h = (h ^ d[i]) * 0x100000001b3ULL;
	return h;
}

static int write_file(const char *path, const unsigned char *d, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	ssize_t w;

	if (fd < 0)
		return -errno;
	w = write(fd, d, n);
	close(fd);
	return w == (ssize_t)n ? 0 : -EIO;
}

static int open_capture(void)
{
	int self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	int inet = open(o.inet_ns, O_RDONLY | O_CLOEXEC);
	int fd = -1, err = 0, buf = 8 << 20;
	struct sockaddr_ll sll = {.sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL)};

	if (self < 0 || inet < 0) {
		fprintf(stderr, "cgfuzz: can't open %s: %s\n", o.inet_ns, strerror(errno));
		return -1;
	}
	if (setns(inet, CLONE_NEWNET)) {
		fprintf(stderr, "cgfuzz: can't enter %s: %s\n", o.inet_ns, strerror(errno));
		return -1;
	}
	sll.sll_ifindex = (int)if_nametoindex(o.ifname);
	fd = socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, htons(ETH_P_ALL));
	if (!sll.sll_ifindex || fd < 0 || bind(fd, (struct sockaddr *)&sll, sizeof(sll)))
		err = errno;
	setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof(buf));
	if (setns(self, CLONE_NEWNET))
		err = errno;
	close(self);
	close(inet);
	if (err) {
		fprintf(stderr, "cgfuzz: can't capture on %s in %s: %s\n", o.ifname, o.inet_ns,
			strerror(err));
		return -1;
	}
	return fd;
}

/* What arrived during the current input: the count of frames the policy
 * does not allow, and the first of them. */
static struct {
	int bad;
	struct verdict v;
	unsigned char frame[256];
	size_t frame_len;
} arrived;

/* Reads every frame queued into arrived. Frames the internet side sends
 * are not judged. */
static void drain(void)
{
	unsigned char f[65536];

	for (;;) {
		struct sockaddr_ll from;
		socklen_t fl = sizeof(from);
		ssize_t n =
			recvfrom(cap_fd, f, sizeof(f), MSG_DONTWAIT, (struct sockaddr *)&from, &fl);
		struct verdict fv;

		if (n < 0)
			return;
		if (from.sll_pkttype == PACKET_OUTGOING)
			continue;
		frames_total++;
		judge_frame(f, (size_t)n, &fv);
		if (trace_verbose)
			fprintf(stderr, "#   frame %s: %s\n",
				fv.detail[0] ? fv.detail : "(not judged)",
				fv.why ? fv.why : "may arrive");
		if (!fv.why) {
			frames_allowed += fv.detail[0] != '\0';
			continue;
		}
		if (!arrived.bad++) {
			arrived.v = fv;
			arrived.frame_len = (size_t)n < sizeof(arrived.frame)
						    ? (size_t)n
						    : sizeof(arrived.frame);
			memcpy(arrived.frame, f, arrived.frame_len);
		}
	}
}

/* Reads frames until none has come for settle_ms. */
static void settle(void)
{
	struct pollfd p = {.fd = cap_fd, .events = POLLIN};

	while (poll(&p, 1, (int)o.settle_ms) > 0)
		drain();
	drain();
}

static void empty_leaf(void)
{
	char path[4200];
	int fd;

	snprintf(path, sizeof(path), "%s/cgroup.kill", leaf);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd >= 0) {
		if (write(fd, "1", 1) < 0)
			fprintf(stderr, "cgfuzz: can't write %s: %s\n", path, strerror(errno));
		close(fd);
	}
}

/* The child drops to o.uid first and only then is moved into the leaf
 * (by its parent, root): a subject without keep_caps is held denying
 * while a root process is in its cgroup, and a root moment there would
 * make inputs depend on when fastwalld looked. sync[0] is read for the
 * go, sync[1] written when ready. */
static void child_main(const unsigned char *in, size_t len, int tfd, const int *sync)
{
	char go;

	setpgid(0, 0);
	/* an unprivileged process, as a sandbox's would be: setuid() clears
	 * the permitted set, the bounding set goes first (fastwalld holds a
	 * subject without keep_caps denying while one of its processes has
	 * CAP_SYS_ADMIN there, as `fastwall run` drops it) */
	if (o.uid != 0)
		for (int cap = 0; cap < 64; cap++)
			if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) && errno != EINVAL) {
				fprintf(stderr, "cgfuzz: can't drop capability %d: %s\n", cap,
					strerror(errno));
				_exit(3);
			}
	if (setgroups(0, NULL) || setgid(o.uid) || setuid(o.uid) ||
	    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)) {
		fprintf(stderr, "cgfuzz: can't drop to uid %u: %s\n", o.uid, strerror(errno));
		_exit(3);
	}
	if (write(sync[1], "r", 1) != 1 || read(sync[0], &go, 1) != 1 || go != 'g')
		_exit(3);
	close(sync[0]);
	close(sync[1]);
	alarm(2);
	trace_fd = tfd;
	trace_verbose = getenv("CGFUZZ_VERBOSE") != NULL;
	for (size_t i = 0; i < sizeof(payload); i++)
		payload[i] = (unsigned char)i;
	run_ops(in, len / OP_LEN);
	/* io_uring work and connects under way: a moment to reach the wire */
	if (ring.fd >= 0 || len / OP_LEN > 0)
		usleep(2000);
	_exit(0);
}

/* Moves process pid into the leaf cgroup; 0 or a negative errno. */
static int join_leaf(pid_t pid)
{
	char path[4200], num[32];
	int fd, err = 0;

	snprintf(path, sizeof(path), "%s/cgroup.procs", leaf);
	snprintf(num, sizeof(num), "%d", (int)pid);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, num, strlen(num)) < 0)
		err = -errno;
	if (fd >= 0)
		close(fd);
	if (err)
		fprintf(stderr, "cgfuzz: can't move %d into %s: %s\n", (int)pid, leaf,
			strerror(-err));
	return err;
}

/* Runs one input; returns 1 if a frame the policy does not allow arrived
 * (v says which), 0 if none did, -1 on a setup failure. New results of
 * calls are counted in *fresh. */
static int run_one(const unsigned char *in, size_t len, struct verdict *v, unsigned char *frame,
		   size_t *frame_len, unsigned *fresh)
{
	int tp[2], to_child[2], from_child[2], status = 0;
	char ready;
	unsigned char tr[4096];
	ssize_t n;
	pid_t pid;

	*fresh = 0;
	len -= len % OP_LEN;
	memset(&arrived, 0, sizeof(arrived));
	if (pipe2(tp, O_CLOEXEC))
		return -1;
	if (pipe2(to_child, O_CLOEXEC) || pipe2(from_child, O_CLOEXEC))
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int sync[2] = {to_child[0], from_child[1]};

		close(tp[0]);
		close(to_child[1]);
		close(from_child[0]);
		child_main(in, len, tp[1], sync);
	}
	close(tp[1]);
	close(to_child[0]);
	close(from_child[1]);
	/* the child has dropped its privileges: into the sandbox with it */
	if (read(from_child[0], &ready, 1) != 1 || (!o.unsandboxed && join_leaf(pid)) ||
	    write(to_child[1], "g", 1) != 1) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		close(to_child[1]);
		close(from_child[0]);
		close(tp[0]);
		return -1;
	}
	close(to_child[1]);
	close(from_child[0]);
	for (int waited = 0;; waited++) {
		pid_t r = waitpid(pid, &status, WNOHANG);

		if (r == pid)
			break;
		if (waited > 3000) { /* 3 s */
			kill(-pid, SIGKILL);
			empty_leaf();
			waitpid(pid, &status, 0);
			break;
		}
		usleep(1000);
	}
	/* forks of the input that outlived it */
	kill(-pid, SIGKILL);
	if (!o.unsandboxed)
		empty_leaf();
	if (WIFEXITED(status) && WEXITSTATUS(status) == 3) {
		close(tp[0]);
		return -1;
	}
	while ((n = read(tp[0], tr, sizeof(tr))) > 0)
		for (ssize_t i = 0; i + 3 <= n; i += 3) {
			unsigned f =
				(unsigned)(tr[i] << 11 ^ tr[i + 1] << 3 ^ tr[i + 2] * 2654435761u) %
				NFEATURES;

			if (!(seen[f / 8] & 1 << (f % 8))) {
				seen[f / 8] |= (unsigned char)(1 << (f % 8));
				nfeatures++;
				(*fresh)++;
			}
		}
	close(tp[0]);
	settle();
	execs++;
	*v = arrived.v;
	memcpy(frame, arrived.frame, arrived.frame_len);
	*frame_len = arrived.frame_len;
	return arrived.bad > 0;
}

static void describe(const unsigned char *in, size_t len)
{
	for (size_t i = 0; i + OP_LEN <= len; i += OP_LEN) {
		fprintf(stderr, "#   %-10s", op_names[in[i] % OP_MAX]);
		for (size_t k = 1; k < OP_LEN; k++)
			fprintf(stderr, " %02x", in[i + k]);
		fprintf(stderr, "\n");
	}
}

/* The violation: say what arrived, keep the input, exit 1. */
static void report(const unsigned char *in, size_t len, const struct verdict *v,
		   const unsigned char *frame, size_t frame_len, const char *origin, bool again)
{
	char path[4200];

	snprintf(path, sizeof(path), "%s/crash-%016llx", o.crashes, hash64(in, len));
	if (write_file(path, in, len))
		fprintf(stderr, "cgfuzz: can't write %s: %s\n", path, strerror(errno));
	printf("VIOLATION after %.1f s and %lu executions (%s): %s\n", elapsed(), execs, origin,
	       v->why);
	printf("  frame: %s\n", v->detail);
	printf("  frame bytes:");
	for (size_t i = 0; i < frame_len; i++)
		printf("%s%02x", i % 32 ? "" : "\n    ", frame[i]);
	printf("\n  input (%zu operations) kept in %s; it %s when run again\n", len / OP_LEN, path,
	       again ? "violates again" : "did NOT violate");
	printf("  input bytes: ");
	for (size_t i = 0; i < len; i++)
		printf("%02x", in[i]);
	printf("\n");
	fflush(stdout);
	describe(in, len);
}

/* Runs an input and, if a frame violates, once more to see that it
 * repeats; then reports and exits. */
static int check_input(const unsigned char *in, size_t len, const char *origin, unsigned *fresh)
{
	struct verdict v, v2;
	unsigned char frame[256], frame2[256];
	size_t fl, fl2;
	unsigned f2;
	int r = run_one(in, len, &v, frame, &fl, fresh);

	if (r < 0) {
		fprintf(stderr, "cgfuzz: a run failed to start (%s)\n", origin);
		exit(2);
	}
	if (r == 0)
		return 0;
	report(in, len, &v, frame, fl, origin, run_one(in, len, &v2, frame2, &fl2, &f2) == 1);
	exit(1);
}

/* ---- inputs: files, the corpus, mutation -------------------------------- */

struct input {
	unsigned char d[INPUT_MAX];
	size_t len;
};

static struct input *corpus;
static size_t ncorpus;
static unsigned long long rng;

static unsigned long long rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static size_t read_input(const char *path, unsigned char *d)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0) {
		fprintf(stderr, "cgfuzz: can't read %s: %s\n", path, strerror(errno));
		exit(2);
	}
	n = read(fd, d, INPUT_MAX);
	close(fd);
	return n > 0 ? (size_t)n - (size_t)n % OP_LEN : 0;
}

static void corpus_add(const unsigned char *d, size_t len)
{
	if (ncorpus >= MAX_CORPUS || !len)
		return;
	memcpy(corpus[ncorpus].d, d, len);
	corpus[ncorpus].len = len;
	ncorpus++;
	if (o.corpus) {
		char path[4200];

		snprintf(path, sizeof(path), "%s/%016llx", o.corpus, hash64(d, len));
		write_file(path, d, len);
	}
}

/* A new input from the corpus: byte and field changes, operations
 * inserted, dropped, copied or spliced in from another input; or, one
 * time in eight, operations made up from nothing. */
static size_t mutate(unsigned char *d)
{
	size_t len = 0, nops;
	unsigned rounds = 1 + (unsigned)(rnd() % 4);

	if (!ncorpus || rnd() % 8 == 0) {
		nops = 2 + rnd() % 10;
		for (size_t i = 0; i < nops * OP_LEN; i++)
			d[i] = (unsigned char)rnd();
		/* half of them on one socket: calls on a socket no call made do little */
		if (rnd() % 2)
			for (size_t i = 0; i < nops; i++)
				d[i * OP_LEN + 1] = d[1];
		return nops * OP_LEN;
	}
	{
		const struct input *c = &corpus[rnd() % ncorpus];

		memcpy(d, c->d, c->len);
		len = c->len;
	}
	while (rounds--) {
		nops = len / OP_LEN;
		switch (rnd() % 8) {
		case 0: /* a bit */
			if (len)
				d[rnd() % len] ^= (unsigned char)(1 << rnd() % 8);
			break;
		case 1:
		case 2: /* a field */
			if (len)
				d[rnd() % len] = (unsigned char)rnd();
			break;
		case 3: /* an operation's kind */
			if (nops)
				d[rnd() % nops * OP_LEN] = (unsigned char)(rnd() % OP_MAX);
			break;
		case 4: /* a new operation */
			if (nops < MAX_OPS) {
				size_t at = rnd() % (nops + 1) * OP_LEN;

				memmove(d + at + OP_LEN, d + at, len - at);
				for (size_t k = 0; k < OP_LEN; k++)
					d[at + k] = (unsigned char)rnd();
				if (nops &&
				    rnd() % 2) /* on the socket of the one before or after */
					d[at + 1] = d[(at ? at - OP_LEN : at + OP_LEN) + 1];
				len += OP_LEN;
			}
			break;
		case 5: /* one dropped */
			if (nops > 1) {
				size_t at = rnd() % nops * OP_LEN;

				memmove(d + at, d + at + OP_LEN, len - at - OP_LEN);
				len -= OP_LEN;
			}
			break;
		case 6: /* one copied */
			if (nops && nops < MAX_OPS) {
				size_t from = rnd() % nops * OP_LEN,
				       at = rnd() % (nops + 1) * OP_LEN;
				unsigned char op[OP_LEN];

				memcpy(op, d + from, OP_LEN);
				memmove(d + at + OP_LEN, d + at, len - at);
				memcpy(d + at, op, OP_LEN);
				len += OP_LEN;
			}
			break;
		default: { /* operations of another input spliced in */
			const struct input *c = &corpus[rnd() % ncorpus];
			size_t cn = c->len / OP_LEN, from = cn ? rnd() % cn : 0,
			       k = cn ? 1 + rnd() % (cn - from) : 0,
			       at = rnd() % (nops + 1) * OP_LEN;

			if (nops + k > MAX_OPS)
				k = MAX_OPS - nops;
			memmove(d + at + k * OP_LEN, d + at, len - at);
			memcpy(d + at, c->d + from * OP_LEN, k * OP_LEN);
			len += k * OP_LEN;
			break;
		}
		}
	}
	return len;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: cgfuzz --cgroup DIR --inet-ns PATH [--ifname IF] [--uid UID]\n"
		"              [--crashes DIR] [--corpus DIR] [--seconds N] [--runs N]\n"
		"              [--seed N] [--settle-ms N] [--unsandboxed] [--quiet] [INPUT...]\n"
		"Runs each INPUT (files; directories: every file in them), then, with\n"
		"--seconds or --runs, inputs mutated from them. Run it in the pod's\n"
		"network namespace; DIR is the cgroup of a subject whose policy allows\n"
		"198.51.100.10 and 2001:db8::10, and 198.51.100.20 and 2001:db8::20 on\n"
		"port 443, and nothing else. Exit 1: a frame the policy does not allow\n"
		"arrived (the input is kept in the crashes directory).\n");
	exit(2);
}

static void add_path(const char *path, char ***files, size_t *nfiles)
{
	struct stat st;

	if (stat(path, &st)) {
		fprintf(stderr, "cgfuzz: can't read %s: %s\n", path, strerror(errno));
		exit(2);
	}
	if (S_ISDIR(st.st_mode)) {
		struct dirent **ents;
		int n = scandir(path, &ents, NULL, alphasort);

		for (int i = 0; i < n; i++) {
			char p[4200];

			if (ents[i]->d_name[0] != '.') {
				snprintf(p, sizeof(p), "%s/%s", path, ents[i]->d_name);
				add_path(p, files, nfiles);
			}
			free(ents[i]);
		}
		free(ents);
		return;
	}
	*files = realloc(*files, (*nfiles + 1) * sizeof(**files));
	if (!*files)
		exit(2);
	(*files)[(*nfiles)++] = strdup(path);
}

int main(int argc, char **argv)
{
	char **files = NULL;
	size_t nfiles = 0;
	struct input in;
	unsigned fresh;
	double last_status = 0;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--unsandboxed"))
			o.unsandboxed = true;
		else if (!strcmp(a, "--quiet"))
			o.quiet = true;
		else if (a[0] == '-' && a[1] == '-' && !val)
			usage();
		else if (!strcmp(a, "--cgroup"))
			o.cgroup = argv[++i];
		else if (!strcmp(a, "--inet-ns"))
			o.inet_ns = argv[++i];
		else if (!strcmp(a, "--ifname"))
			o.ifname = argv[++i];
		else if (!strcmp(a, "--crashes"))
			o.crashes = argv[++i];
		else if (!strcmp(a, "--corpus"))
			o.corpus = argv[++i];
		else if (!strcmp(a, "--uid"))
			o.uid = (unsigned)strtoul(argv[++i], NULL, 10);
		else if (!strcmp(a, "--seconds"))
			o.seconds = (unsigned)strtoul(argv[++i], NULL, 10);
		else if (!strcmp(a, "--runs"))
			o.runs = strtoul(argv[++i], NULL, 10);
		else if (!strcmp(a, "--seed"))
			o.seed = strtoull(argv[++i], NULL, 10);
		else if (!strcmp(a, "--settle-ms"))
			o.settle_ms = (unsigned)strtoul(argv[++i], NULL, 10);
		else if (a[0] == '-')
			usage();
		else
			add_path(a, &files, &nfiles);
	}
	if ((!o.cgroup && !o.unsandboxed) || !o.inet_ns)
		usage();
	for (int i = 0; i < 16; i++)
		inet_pton(pool[i].family, pool[i].text, pool[i].a);
	for (int i = 0; i < 8; i++)
		inet_pton(AF_INET, hops4[i], hop4[i]);
	for (int i = 0; i < 16; i++)
		inet_pton(AF_INET6, segs6[i], seg6[i]);
	trace_verbose = getenv("CGFUZZ_VERBOSE") != NULL;
	corpus = calloc(MAX_CORPUS, sizeof(*corpus));
	if (!corpus)
		return 2;
	if (!o.unsandboxed) {
		snprintf(leaf, sizeof(leaf), "%s/cgfuzz-%d", o.cgroup, getpid());
		if (mkdir(leaf, 0755) && errno != EEXIST) {
			fprintf(stderr, "cgfuzz: can't make cgroup %s: %s\n", leaf,
				strerror(errno));
			return 2;
		}
	}
	cap_fd = open_capture();
	if (cap_fd < 0)
		return 2;
	signal(SIGPIPE, SIG_IGN);
	clock_gettime(CLOCK_MONOTONIC, &t_start);
	settle(); /* what arrived before the first input is no input's */

	for (size_t i = 0; i < nfiles; i++) {
		in.len = read_input(files[i], in.d);
		check_input(in.d, in.len, files[i], &fresh);
		corpus_add(in.d, in.len);
		free(files[i]);
	}
	free(files);
	if (!o.quiet)
		printf("cgfuzz: %zu inputs replayed, %lu frames seen (%lu judged and allowed)\n",
		       nfiles, frames_total, frames_allowed);
	if (o.seconds || o.runs) {
		unsigned long start_execs = execs;

		rng = o.seed ? o.seed : 0x9e3779b97f4a7c15ULL;
		printf("cgfuzz: fuzzing with seed %llu\n", o.seed);
		while ((!o.seconds || elapsed() < o.seconds) &&
		       (!o.runs || execs - start_execs < o.runs)) {
			in.len = mutate(in.d);
			check_input(in.d, in.len, "mutated", &fresh);
			if (fresh)
				corpus_add(in.d, in.len);
			if (!o.quiet && elapsed() - last_status >= 10) {
				last_status = elapsed();
				printf("cgfuzz: %.0f s, %lu executions (%.0f/s), corpus %zu, %lu "
				       "results, %lu frames (%lu allowed)\n",
				       last_status, execs, (double)execs / last_status, ncorpus,
				       nfeatures, frames_total, frames_allowed);
				fflush(stdout);
			}
		}
	}
	printf("cgfuzz: no violation: %lu executions in %.1f s, %lu frames seen, %lu judged and "
	       "allowed, corpus %zu\n",
	       execs, elapsed(), frames_total, frames_allowed, ncorpus);
	if (!o.unsandboxed)
		rmdir(leaf);
	return 0;
}
