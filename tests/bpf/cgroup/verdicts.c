// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The verdict table of the cgroup programs' packet path (fw_cg_egress):
 * every row a packet, the cgroup the sending socket is in, and the
 * verdict and reason fastwall must give it. State goes in through the
 * real control plane (datapath.h, datapath/cgroup.h, the registry) on maps
 * pinned under a private bpffs directory. A test run's socket belongs to
 * the cgroup of the task that runs it, so this process moves itself into
 * the row's cgroup first. Each row is checked on the verdict, the reason
 * counter (exactly +1), the subject's counter and the deny event. Needs
 * root and a cgroup2 mount (it mounts one when there is none); prints
 * "N passed, N failed". The socket hooks (connect, sendmsg, sock_create)
 * have no test runner: their rows (sock_rows) make real system calls from
 * the row's cgroup, in a network namespace of the test's own; the proxy's
 * redirection through them is tests/e2e/cgroup.sh's. */
#include <arpa/inet.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <net/if.h>
#include <linux/if_ether.h>
#include <netinet/in.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "common/clock.h"
#include "common/addr.h"
#include "common/log.h"
#include "datapath/cgroup.h"
#include "datapath/datapath.h"
#include "datapath/explain.h"
#include "datapath/l7.h"
#include "datapath/leases.h"
#include "datapath/reasons.h"
#include "datapath/stats.h"
#include "pkt.h"
#include "subjects/registry.h"

enum where {
	IN_ALPHA = 1,	 /* the sandbox's own cgroup */
	IN_ALPHA_CHILD,	 /* a cgroup below it */
	IN_ALPHA_NESTED, /* below a cgroup registered to another subject, below alpha */
	IN_DENYING,	 /* a registered, denying subject */
	IN_NONE,	 /* a cgroup of no sandbox */
	IN_BETA,	 /* a sandbox with alpha's rules and lease, not pinned (no l7) */
	IN_COUNT,
};

struct row {
	const char *desc;
	enum where where;
	struct pkt_spec pkt;
	int verdict; /* 1 passes, 0 drops */
	__u32 reason;
	bool uncounted;	    /* no sandbox: nothing counted */
	bool own_alias;	    /* the source is the subject's proxy address (127.254/16 + id) */
	bool own_alias_dst; /* ... the destination is */
	bool l7;	    /* layer-7 pinning decides: not a row for explain (yet) */
};

#define ALPHA_OK4  "192.0.2.10"	      /* allow 192.0.2.0/25 */
#define ALPHA_BAD4 "203.0.113.5"      /* deny 203.0.113.0/24 */
#define NOWHERE4   "198.51.100.1"     /* no rule */
#define ALPHA_OK6  "2001:db8:1::10"   /* allow 2001:db8:1::/48 */
#define ALPHA_BAD6 "2001:db8:dead::5" /* no rule: default deny */
#define NODE4	   "192.0.2.200"      /* the node's own address: the source */
#define NODE6	   "2001:db8:ff::1"
#define DNS_PORT   15353 /* the proxy's, in fastwall_config */
/* Layer-7 pinning: alpha is pinned (FW_SF_L7) and holds a lease of
 * LEARNED4 and LEARNED6; TCP 443 is TLS to the proxy's port 15443, TCP
 * 80 HTTP to 15080 (fastwall_l7_ports). Beta has the same rules and
 * leases, unpinned. */
#define LEARNED4 "198.51.100.7"
#define LEARNED6 "2001:db8:7::7"
#define L7_TLS	 15443
#define L7_HTTP	 15080

static const struct row rows[] = {
	{"TCP SYN to an allowed CIDR passes", IN_ALPHA, TCP4(NODE4, ALPHA_OK4, 40000, 80), 1,
	 FW_PASS_ALLOW_CIDR},
	{"TCP to a deny CIDR drops", IN_ALPHA, TCP4(NODE4, ALPHA_BAD4, 40000, 80), 0,
	 FW_DROP_DENY_CIDR},
	{"UDP nowhere drops by default", IN_ALPHA, UDP4(NODE4, NOWHERE4, 40000, 53), 0,
	 FW_DROP_DEFAULT_DENY},
	{"ICMP echo to a deny CIDR drops", IN_ALPHA, ICMP4(NODE4, ALPHA_BAD4, ICMP4_ECHO), 0,
	 FW_DROP_DENY_CIDR},
	{"ICMP echo to an allowed CIDR passes", IN_ALPHA, ICMP4(NODE4, ALPHA_OK4, ICMP4_ECHO), 1,
	 FW_PASS_ALLOW_CIDR},
	{"DNS over TLS to an allowed address drops", IN_ALPHA, TCP4(NODE4, ALPHA_OK4, 40000, 853),
	 0, FW_DROP_DOT},
	{"IPv6 TCP to an allowed prefix passes", IN_ALPHA, TCP6(NODE6, ALPHA_OK6, 40000, 443), 1,
	 FW_PASS_ALLOW_CIDR},
	{"IPv6 UDP nowhere drops", IN_ALPHA, UDP6(NODE6, ALPHA_BAD6, 40000, 9000), 0,
	 FW_DROP_DEFAULT_DENY},
	{"IPv6 after a hop-by-hop header is still judged", IN_ALPHA,
	 TCP6(NODE6, ALPHA_BAD6, 40000, 80, .ext = {X_HBH}), 0, FW_DROP_DEFAULT_DENY},
	{"IPv6 ICMP echo to an allowed prefix passes", IN_ALPHA,
	 ICMP6(NODE6, ALPHA_OK6, ICMP6_ECHO), 1, FW_PASS_ALLOW_CIDR},
	{"a later IPv4 fragment (no ports) drops", IN_ALPHA,
	 UDP4(NODE4, ALPHA_OK4, 40000, 9000, .frag = {.on = true, .offset = 10, .id = 7}), 0,
	 FW_DROP_FRAGMENT},
	{"an IPv6 fragment header drops", IN_ALPHA,
	 UDP6(NODE6, ALPHA_OK6, 40000, 9000, .frag = {.on = true, .more = true, .id = 7}), 0,
	 FW_DROP_FRAGMENT},
	{"a truncated transport header drops", IN_ALPHA,
	 TCP4(NODE4, ALPHA_OK4, 40000, 80, .truncate = 14 + 20 + 2), 0, FW_DROP_MALFORMED},
	{"a child cgroup is held to alpha's allow", IN_ALPHA_CHILD,
	 TCP4(NODE4, ALPHA_OK4, 40000, 80), 1, FW_PASS_ALLOW_CIDR},
	{"a child cgroup is held to alpha's deny", IN_ALPHA_CHILD,
	 TCP4(NODE4, ALPHA_BAD4, 40000, 80), 0, FW_DROP_DENY_CIDR},
	{"a subject registered below alpha does not loosen it", IN_ALPHA_NESTED,
	 TCP4(NODE4, ALPHA_BAD4, 40000, 80), 0, FW_DROP_DENY_CIDR},
	{"a denying subject sends nothing", IN_DENYING, TCP4(NODE4, ALPHA_OK4, 40000, 80), 0,
	 FW_DROP_DENYING},
	{"no sandbox: passes uncounted", IN_NONE, TCP4(NODE4, ALPHA_BAD4, 40000, 80), 1, 0, true},
	{"to 127.0.0.1's proxy port from its own proxy address: the policy decides", IN_ALPHA,
	 UDP4(NULL, "127.0.0.1", 40000, DNS_PORT), 0, FW_DROP_DEFAULT_DENY, false, true},
	{"from its own proxy address elsewhere: the policy decides", IN_ALPHA,
	 UDP4(NULL, ALPHA_BAD4, 40000, 9000), 0, FW_DROP_DENY_CIDR, false, true},
	{"to the proxy on 127.0.0.1 from another address: the policy decides", IN_ALPHA,
	 UDP4(NODE4, "127.0.0.1", 40000, DNS_PORT), 0, FW_DROP_DEFAULT_DENY},
	{"to its own proxy address on a socket no hook redirected drops", IN_ALPHA,
	 UDP4(NODE4, NULL, 40000, DNS_PORT), 0, FW_DROP_ALIAS_SOURCE, false, false, true},
	{"TCP to its own proxy address on a socket no hook redirected drops", IN_ALPHA,
	 TCP4("127.0.0.1", NULL, 40000, DNS_PORT), 0, FW_DROP_ALIAS_SOURCE, false, false, true},
	{"to its own proxy address on another port drops", IN_ALPHA_CHILD,
	 UDP4("127.0.0.1", NULL, 40000, 53), 0, FW_DROP_ALIAS_SOURCE, false, false, true},
	{"to another subject's proxy address drops", IN_ALPHA,
	 UDP4("127.0.0.1", "127.254.255.254", 40000, DNS_PORT), 0, FW_DROP_ALIAS_SOURCE},
	{"ICMP to another subject's proxy address drops", IN_ALPHA,
	 ICMP4("127.0.0.1", "127.254.0.77", ICMP4_ECHO), 0, FW_DROP_ALIAS_SOURCE},
	{"from another subject's proxy address drops", IN_ALPHA,
	 UDP4("127.254.255.254", "127.0.0.1", 40000, DNS_PORT), 0, FW_DROP_ALIAS_SOURCE},
	{"from another subject's proxy address, anywhere, drops", IN_ALPHA_CHILD,
	 TCP4("127.254.0.77", ALPHA_OK4, 40000, 80), 0, FW_DROP_ALIAS_SOURCE},

/* source routes: the packet goes to its destination (the first hop)
 * and then to every address the route names, so each is judged */
#define OK6B "2001:db8:1::11"
#define OK6C "2001:db8:1::12"
#define OK4B "192.0.2.11"
	{"IPv6 segment routing through a denied first hop drops as that destination", IN_ALPHA,
	 UDP6(NODE6, ALPHA_BAD6, 40000, 9000, .ext = {X_RT}, .route = {ALPHA_OK6}, .rt_type = 4), 0,
	 FW_DROP_DEFAULT_DENY},
	{"IPv6 segment routing naming a denied address after an allowed hop drops", IN_ALPHA,
	 UDP6(NODE6, ALPHA_OK6, 40000, 9000, .ext = {X_RT}, .route = {ALPHA_BAD6}, .rt_type = 4), 0,
	 FW_DROP_SOURCE_ROUTE},
	{"IPv6 routing type 2 naming a denied address drops", IN_ALPHA,
	 UDP6(NODE6, ALPHA_OK6, 40000, 9000, .ext = {X_RT}, .route = {ALPHA_BAD6}, .rt_type = 2), 0,
	 FW_DROP_SOURCE_ROUTE},
	{"IPv6 routing type 0 naming a denied address drops (TCP)", IN_ALPHA,
	 TCP6(NODE6, ALPHA_OK6, 40000, 443, .ext = {X_RT}, .route = {OK6B, ALPHA_BAD6}), 0,
	 FW_DROP_SOURCE_ROUTE},
	{"IPv6 routing type 0 naming a deny-CIDR IPv4 address (v4-mapped) drops", IN_ALPHA,
	 UDP6(NODE6, ALPHA_OK6, 40000, 9000, .ext = {X_RT}, .route = {"::ffff:203.0.113.5"}), 0,
	 FW_DROP_SOURCE_ROUTE},
	{"IPv6 routing header whose every address is allowed passes", IN_ALPHA,
	 UDP6(NODE6, ALPHA_OK6, 40000, 9000, .ext = {X_RT}, .route = {OK6B, OK6C}, .rt_type = 4), 1,
	 FW_PASS_ALLOW_CIDR},
	{"IPv6 routing header after a hop-by-hop header is still read", IN_ALPHA,
	 UDP6(NODE6, ALPHA_OK6, 40000, 9000, .ext = {X_HBH, X_RT}, .route = {ALPHA_BAD6},
	      .rt_type = 4),
	 0, FW_DROP_SOURCE_ROUTE},
	{"nine allowed addresses pass", IN_ALPHA,
	 UDP6(NODE6, ALPHA_OK6, 40000, 9000, .ext = {X_RT},
	      .route = {OK6B, OK6C, OK6B, OK6C, OK6B, OK6C, OK6B, OK6C, OK6B}, .rt_type = 4),
	 1, FW_PASS_ALLOW_CIDR},
	{"a denied ninth address drops", IN_ALPHA,
	 UDP6(NODE6, ALPHA_OK6, 40000, 9000, .ext = {X_RT},
	      .route = {OK6B, OK6C, OK6B, OK6C, OK6B, OK6C, OK6B, OK6C, ALPHA_BAD6}, .rt_type = 4),
	 0, FW_DROP_SOURCE_ROUTE},
	{"ten addresses are more than fastwall reads: drop", IN_ALPHA,
	 UDP6(NODE6, ALPHA_OK6, 40000, 9000, .ext = {X_RT},
	      .route = {OK6B, OK6C, OK6B, OK6C, OK6B, OK6C, OK6B, OK6C, OK6B, OK6C}, .rt_type = 4),
	 0, FW_DROP_SOURCE_ROUTE},
	{"a routing type fastwall cannot read (3, RPL) drops", IN_ALPHA,
	 UDP6(NODE6, ALPHA_OK6, 40000, 9000, .ext = {X_RT}, .route = {OK6B}, .rt_type = 3), 0,
	 FW_DROP_SOURCE_ROUTE},
	{"two routing headers drop", IN_ALPHA,
	 UDP6(NODE6, ALPHA_OK6, 40000, 9000, .ext = {X_RT, X_RT}, .route = {OK6B}, .rt_type = 2), 0,
	 FW_DROP_SOURCE_ROUTE},
	{"a routing header naming a proxy address drops", IN_ALPHA,
	 UDP6(NODE6, ALPHA_OK6, 40000, 9000, .ext = {X_RT}, .route = {"::ffff:127.254.0.9"}), 0,
	 FW_DROP_SOURCE_ROUTE},
	{"IPv4 loose source route naming a denied address drops", IN_ALPHA,
	 UDP4(NODE4, ALPHA_OK4, 40000, 9000, .route = {ALPHA_BAD4}), 0, FW_DROP_SOURCE_ROUTE},
	{"IPv4 source route through a denied first hop drops as that destination", IN_ALPHA,
	 UDP4(NODE4, ALPHA_BAD4, 40000, 9000, .route = {ALPHA_OK4}), 0, FW_DROP_DENY_CIDR},
	{"IPv4 strict source route whose every address is allowed passes", IN_ALPHA,
	 TCP4(NODE4, ALPHA_OK4, 40000, 80, .route = {OK4B}, .rt_type = 0x89), 1,
	 FW_PASS_ALLOW_CIDR},
	{"IPv4 source route of nine addresses, the last denied, drops", IN_ALPHA,
	 UDP4(NODE4, ALPHA_OK4, 40000, 9000,
	      .route = {OK4B, OK4B, OK4B, OK4B, OK4B, OK4B, OK4B, OK4B, NOWHERE4}),
	 0, FW_DROP_SOURCE_ROUTE},
	{"IPv4 source route of nine allowed addresses passes", IN_ALPHA,
	 UDP4(NODE4, ALPHA_OK4, 40000, 9000,
	      .route = {OK4B, OK4B, OK4B, OK4B, OK4B, OK4B, OK4B, OK4B, OK4B}),
	 1, FW_PASS_ALLOW_CIDR},
	{"IPv4 source route naming a proxy address drops", IN_ALPHA,
	 UDP4(NODE4, ALPHA_OK4, 40000, 9000, .route = {"127.254.0.9"}), 0, FW_DROP_SOURCE_ROUTE},
	{"IPv4 options other than a source route drop", IN_ALPHA,
	 UDP4(NODE4, ALPHA_OK4, 40000, 9000, .ip_opt_words = 1), 0, FW_DROP_SOURCE_ROUTE},
	{"a child cgroup's source route is judged too", IN_ALPHA_CHILD,
	 UDP4(NODE4, ALPHA_OK4, 40000, 9000, .route = {ALPHA_BAD4}), 0, FW_DROP_SOURCE_ROUTE},
	{"no sandbox: a source route passes uncounted", IN_NONE,
	 UDP4(NODE4, ALPHA_OK4, 40000, 9000, .route = {ALPHA_BAD4}), 1, 0, true},
	/* DNS over TLS, every family and transport (the socket hooks' rows
	 * are in sock_rows below) */
	{"UDP DNS over TLS to an allowed address drops", IN_ALPHA,
	 UDP4(NODE4, ALPHA_OK4, 40000, 853), 0, FW_DROP_DOT},
	{"IPv6 TCP DNS over TLS to an allowed prefix drops", IN_ALPHA,
	 TCP6(NODE6, ALPHA_OK6, 40000, 853), 0, FW_DROP_DOT},
	{"IPv6 UDP DNS over TLS to an allowed prefix drops", IN_ALPHA,
	 UDP6(NODE6, ALPHA_OK6, 40000, 853), 0, FW_DROP_DOT},
	{"port 853 as the source is no DNS over TLS", IN_ALPHA, UDP4(NODE4, ALPHA_OK4, 853, 9000),
	 1, FW_PASS_ALLOW_CIDR},
	/* layer-7 pinning at egress: a socket connect sent to the proxy
	 * never sends to the pinned destination itself (the live rows at the
	 * end show the one that does pass) */
	{"l7: TCP 443 to a learned address, not through the proxy, drops", IN_ALPHA,
	 TCP4(NODE4, LEARNED4, 40000, 443), 0, FW_DROP_L7_UNTRACKED, .l7 = true},
	{"l7: IPv6 TCP 80 to a learned address, not through the proxy, drops", IN_ALPHA_CHILD,
	 TCP6(NODE6, LEARNED6, 40000, 80), 0, FW_DROP_L7_UNTRACKED, .l7 = true},
	{"l7: UDP 443 to a learned address (QUIC) drops", IN_ALPHA,
	 UDP4(NODE4, LEARNED4, 40000, 443), 0, FW_DROP_L7_QUIC, .l7 = true},
	{"l7: IPv6 UDP 443 to a learned address (QUIC) drops", IN_ALPHA,
	 UDP6(NODE6, LEARNED6, 40000, 443), 0, FW_DROP_L7_QUIC, .l7 = true},
	{"l7: UDP 80 (an HTTP port) to a learned address passes by the lease", IN_ALPHA,
	 UDP4(NODE4, LEARNED4, 40000, 80), 1, FW_PASS_LEARNED, .l7 = true},
	{"l7: TCP to an unpinned port of a learned address passes by the lease", IN_ALPHA,
	 TCP4(NODE4, LEARNED4, 40000, 8443), 1, FW_PASS_LEARNED, .l7 = true},
	{"l7: TCP 443 to an allowed CIDR is not pinned (cidr: pass)", IN_ALPHA,
	 TCP4(NODE4, ALPHA_OK4, 40000, 443), 1, FW_PASS_ALLOW_CIDR, .l7 = true},
	{"l7: TCP to the proxy's port on loopback from a socket it did not send there drops",
	 IN_ALPHA, TCP4("127.0.0.1", "127.0.0.1", 40000, L7_TLS), 0, FW_DROP_POD_LOCAL, .l7 = true},
	{"l7: IPv6 TCP to the proxy's HTTP port on ::1 drops", IN_ALPHA_CHILD,
	 TCP6("::1", "::1", 40000, L7_HTTP), 0, FW_DROP_POD_LOCAL, .l7 = true},
	{"l7: an unpinned sandbox's TCP to the proxy's port on loopback drops too", IN_BETA,
	 TCP4("127.0.0.1", "127.0.0.1", 40000, L7_TLS), 0, FW_DROP_POD_LOCAL, .l7 = true},
	{"l7: an unpinned sandbox's TCP 443 to a learned address passes", IN_BETA,
	 TCP4(NODE4, LEARNED4, 40000, 443), 1, FW_PASS_LEARNED, .l7 = true},
	{"l7: an unpinned sandbox's UDP 443 to a learned address passes", IN_BETA,
	 UDP4(NODE4, LEARNED4, 40000, 443), 1, FW_PASS_LEARNED, .l7 = true},
	{"l7: TCP to another loopback port: the policy decides", IN_ALPHA,
	 TCP4("127.0.0.1", "127.0.0.1", 40000, 15444), 0, FW_DROP_DEFAULT_DENY, .l7 = true},
};

/* The socket hooks. BPF_PROG_TEST_RUN has no runner for the cgroup
 * socket-address programs (connect, sendmsg) nor for cgroup/sock_create
 * (the kernel answers ENOTSUPP), so these rows make the system call from
 * the row's cgroup, the programs attached to the test's cgroups, in a
 * network namespace of the test's own that has no route: a call the
 * hooks let through then fails otherwise (ENETUNREACH) and sends nothing.
 * Each row is checked on the call's EPERM (or not), the reason counter
 * (exactly +1, none for a socket() that passes, which counts nothing)
 * and the deny event. */
enum sock_op {
	OP_SOCKET,  /* socket(family, type, proto) */
	OP_CONNECT, /* socket, then connect(dst, port) */
	OP_SENDTO,  /* socket, then sendto(dst, port) without connect */
	OP_BIND,    /* socket, then bind(dst, port) */
};

struct sock_row {
	const char *desc;
	enum where where;
	enum sock_op op;
	int family, type, proto;
	const char *dst;
	__u16 port;
	int verdict;	 /* 1: the hooks let the call through, 0: EPERM */
	__u32 reason;	 /* counted once ... */
	bool uncounted;	 /* ... unless nothing is (a socket() that passes) */
	__u16 warm_port; /* OP_SENDTO: first a datagram to dst on this port */
	__u32 cfg_off;	 /* fastwall_config flags cleared for the row ... */
	__u32 cfg_on;	 /* ... and set */
};

static const struct sock_row sock_rows[] = {
	/* DNS over TLS: connect and sendmsg, IPv4 and IPv6, TCP and UDP */
	{"connect: TCP to port 853 of an allowed address is refused", IN_ALPHA, OP_CONNECT, AF_INET,
	 SOCK_STREAM, 0, ALPHA_OK4, 853, 0, FW_DROP_DOT},
	{"connect: UDP to port 853 of an allowed address is refused", IN_ALPHA, OP_CONNECT, AF_INET,
	 SOCK_DGRAM, 0, ALPHA_OK4, 853, 0, FW_DROP_DOT},
	{"connect: IPv6 TCP to port 853 of an allowed prefix is refused", IN_ALPHA, OP_CONNECT,
	 AF_INET6, SOCK_STREAM, 0, ALPHA_OK6, 853, 0, FW_DROP_DOT},
	{"connect: IPv6 UDP to port 853 of an allowed prefix is refused", IN_ALPHA_CHILD,
	 OP_CONNECT, AF_INET6, SOCK_DGRAM, 0, ALPHA_OK6, 853, 0, FW_DROP_DOT},
	{"connect: an IPv6 socket's v4-mapped port 853 is refused", IN_ALPHA, OP_CONNECT, AF_INET6,
	 SOCK_STREAM, 0, "::ffff:" ALPHA_OK4, 853, 0, FW_DROP_DOT},
	{"sendmsg: UDP to port 853 of an allowed address is refused", IN_ALPHA, OP_SENDTO, AF_INET,
	 SOCK_DGRAM, 0, ALPHA_OK4, 853, 0, FW_DROP_DOT},
	{"sendmsg: IPv6 UDP to port 853 of an allowed prefix is refused", IN_ALPHA, OP_SENDTO,
	 AF_INET6, SOCK_DGRAM, 0, ALPHA_OK6, 853, 0, FW_DROP_DOT},
	{"sendmsg: an IPv6 socket's v4-mapped port 853 is refused", IN_ALPHA_CHILD, OP_SENDTO,
	 AF_INET6, SOCK_DGRAM, 0, "::ffff:" ALPHA_OK4, 853, 0, FW_DROP_DOT},
	/* an unconnected socket's last verdict is kept for its destination:
	 * another port of the same address is decided afresh */
	{"sendmsg: port 853 after a datagram to port 443 of the same address is refused", IN_ALPHA,
	 OP_SENDTO, AF_INET, SOCK_DGRAM, 0, ALPHA_OK4, 853, 0, FW_DROP_DOT, false, 443},
	{"sendmsg: IPv6 port 853 after a datagram to port 443 of the same address is refused",
	 IN_ALPHA, OP_SENDTO, AF_INET6, SOCK_DGRAM, 0, ALPHA_OK6, 853, 0, FW_DROP_DOT, false, 443},
	/* the same calls elsewhere: the policy decides */
	{"connect: TCP to port 443 of an allowed address goes on", IN_ALPHA, OP_CONNECT, AF_INET,
	 SOCK_STREAM, 0, ALPHA_OK4, 443, 1, FW_PASS_ALLOW_CIDR},
	{"connect: IPv6 UDP to port 443 of an allowed prefix goes on", IN_ALPHA, OP_CONNECT,
	 AF_INET6, SOCK_DGRAM, 0, ALPHA_OK6, 443, 1, FW_PASS_ALLOW_CIDR},
	{"connect: TCP to a deny CIDR is refused", IN_ALPHA, OP_CONNECT, AF_INET, SOCK_STREAM, 0,
	 ALPHA_BAD4, 443, 0, FW_DROP_DENY_CIDR},
	{"sendmsg: UDP to port 443 of an allowed address goes on", IN_ALPHA, OP_SENDTO, AF_INET,
	 SOCK_DGRAM, 0, ALPHA_OK4, 443, 1, FW_PASS_ALLOW_CIDR},
	{"sendmsg: IPv6 UDP nowhere is refused", IN_ALPHA, OP_SENDTO, AF_INET6, SOCK_DGRAM, 0,
	 ALPHA_BAD6, 9000, 0, FW_DROP_DEFAULT_DENY},
	/* fastwall's proxy addresses (127.254.0.0/16): none to connect to,
	 * none of another subject's to bind */
	{"connect: UDP to another subject's proxy address is refused", IN_ALPHA, OP_CONNECT,
	 AF_INET, SOCK_DGRAM, 0, "127.254.255.254", DNS_PORT, 0, FW_DROP_ALIAS_SOURCE},
	{"connect: TCP to a proxy address is refused", IN_ALPHA_CHILD, OP_CONNECT, AF_INET,
	 SOCK_STREAM, 0, "127.254.0.77", 9000, 0, FW_DROP_ALIAS_SOURCE},
	{"connect: an IPv6 socket's v4-mapped proxy address is refused", IN_ALPHA, OP_CONNECT,
	 AF_INET6, SOCK_DGRAM, 0, "::ffff:127.254.0.77", 9000, 0, FW_DROP_ALIAS_SOURCE},
	{"bind: to another subject's proxy address is refused", IN_ALPHA, OP_BIND, AF_INET,
	 SOCK_DGRAM, 0, "127.254.255.254", 0, 0, FW_DROP_ALIAS_SOURCE},
	{"bind: IPv6, to another subject's v4-mapped proxy address is refused", IN_ALPHA_CHILD,
	 OP_BIND, AF_INET6, SOCK_STREAM, 0, "::ffff:127.254.0.77", 0, 0, FW_DROP_ALIAS_SOURCE},
	/* sock_create: no raw IP or packet socket in a sandbox, whatever
	 * its state; ordinary sockets pass uncounted */
	{"socket: raw IPv4 is refused", IN_ALPHA, OP_SOCKET, AF_INET, SOCK_RAW, IPPROTO_ICMP, NULL,
	 0, 0, FW_DROP_SOCKET_TYPE},
	{"socket: raw IPv4 IPPROTO_RAW is refused", IN_ALPHA_CHILD, OP_SOCKET, AF_INET, SOCK_RAW,
	 IPPROTO_RAW, NULL, 0, 0, FW_DROP_SOCKET_TYPE},
	{"socket: raw IPv6 is refused", IN_ALPHA, OP_SOCKET, AF_INET6, SOCK_RAW, IPPROTO_ICMPV6,
	 NULL, 0, 0, FW_DROP_SOCKET_TYPE},
	{"socket: raw IPv6 UDP is refused", IN_ALPHA, OP_SOCKET, AF_INET6, SOCK_RAW, IPPROTO_UDP,
	 NULL, 0, 0, FW_DROP_SOCKET_TYPE},
	{"socket: a denying subject's raw socket is refused", IN_DENYING, OP_SOCKET, AF_INET,
	 SOCK_RAW, IPPROTO_ICMP, NULL, 0, 0, FW_DROP_SOCKET_TYPE},
	{"socket: TCP passes", IN_ALPHA, OP_SOCKET, AF_INET, SOCK_STREAM, 0, NULL, 0, 1, 0, true},
	{"socket: UDP passes", IN_ALPHA, OP_SOCKET, AF_INET, SOCK_DGRAM, 0, NULL, 0, 1, 0, true},
	{"socket: IPv6 TCP passes", IN_ALPHA_CHILD, OP_SOCKET, AF_INET6, SOCK_STREAM, 0, NULL, 0, 1,
	 0, true},
	/* packet sockets never reach an inet hook: the cgroup programs do not
	 * see them (design.md, "Compared with an address subject": fastwall
	 * run drops CAP_NET_RAW instead). A row that starts failing here means
	 * the kernel began running sock_create for them. */
	{"socket: a packet socket is not seen by sock_create (CAP_NET_RAW decides)", IN_ALPHA,
	 OP_SOCKET, AF_PACKET, SOCK_RAW, 0, NULL, 0, 1, 0, true},
	{"socket: IPv6 UDP passes", IN_ALPHA, OP_SOCKET, AF_INET6, SOCK_DGRAM, 0, NULL, 0, 1, 0,
	 true},
	{"socket: no sandbox, a raw socket passes uncounted", IN_NONE, OP_SOCKET, AF_INET, SOCK_RAW,
	 IPPROTO_ICMP, NULL, 0, 1, 0, true},
	/* layer-7 pinning: TCP to a pinned port of a learned address goes
	 * to the proxy (the namespace has no loopback up: the call fails
	 * after the hook, ENETUNREACH; l7_live below connects for real) */
	{"l7 connect: TCP 443 to a learned address goes to the proxy", IN_ALPHA, OP_CONNECT,
	 AF_INET, SOCK_STREAM, 0, LEARNED4, 443, 1, FW_PASS_L7_PROXY},
	{"l7 connect: IPv6 TCP 443 to a learned address goes to the proxy", IN_ALPHA_CHILD,
	 OP_CONNECT, AF_INET6, SOCK_STREAM, 0, LEARNED6, 443, 1, FW_PASS_L7_PROXY},
	{"l7 connect: an IPv6 socket's v4-mapped TCP 80 goes to the proxy", IN_ALPHA, OP_CONNECT,
	 AF_INET6, SOCK_STREAM, 0, "::ffff:" LEARNED4, 80, 1, FW_PASS_L7_PROXY},
	{"l7 connect: while the proxy is down, refused", IN_ALPHA, OP_CONNECT, AF_INET, SOCK_STREAM,
	 0, LEARNED4, 443, 0, FW_DROP_L7_PROXY_DOWN, .cfg_off = FW_CF_L7_UP},
	{"l7 connect: IPv6, while the proxy is down, refused", IN_ALPHA, OP_CONNECT, AF_INET6,
	 SOCK_STREAM, 0, LEARNED6, 80, 0, FW_DROP_L7_PROXY_DOWN, .cfg_off = FW_CF_L7_UP},
	{"l7 connect: pinning off, TCP 443 to a learned address passes by the lease", IN_ALPHA,
	 OP_CONNECT, AF_INET, SOCK_STREAM, 0, LEARNED4, 443, 1, FW_PASS_LEARNED,
	 .cfg_off = FW_CF_L7 | FW_CF_L7_UP},
	{"l7 connect: TCP to an unpinned port of a learned address passes by the lease", IN_ALPHA,
	 OP_CONNECT, AF_INET, SOCK_STREAM, 0, LEARNED4, 8443, 1, FW_PASS_LEARNED},
	{"l7 connect: TCP 443 to an allowed CIDR is not pinned", IN_ALPHA, OP_CONNECT, AF_INET,
	 SOCK_STREAM, 0, ALPHA_OK4, 443, 1, FW_PASS_ALLOW_CIDR},
	{"l7 connect: TCP to the proxy's port on 127.0.0.1 is refused", IN_ALPHA, OP_CONNECT,
	 AF_INET, SOCK_STREAM, 0, "127.0.0.1", L7_TLS, 0, FW_DROP_POD_LOCAL},
	{"l7 connect: TCP to the proxy's port on 0.0.0.0 is refused", IN_ALPHA_CHILD, OP_CONNECT,
	 AF_INET, SOCK_STREAM, 0, "0.0.0.0", L7_HTTP, 0, FW_DROP_POD_LOCAL},
	{"l7 connect: IPv6 TCP to the proxy's port on ::1 is refused", IN_ALPHA, OP_CONNECT,
	 AF_INET6, SOCK_STREAM, 0, "::1", L7_TLS, 0, FW_DROP_POD_LOCAL},
	{"l7 connect: TCP to the proxy's port on v4-mapped loopback is refused", IN_ALPHA,
	 OP_CONNECT, AF_INET6, SOCK_STREAM, 0, "::ffff:127.0.0.2", L7_HTTP, 0, FW_DROP_POD_LOCAL},
	{"l7 connect: UDP 443 to a learned address (QUIC) is refused", IN_ALPHA, OP_CONNECT,
	 AF_INET, SOCK_DGRAM, 0, LEARNED4, 443, 0, FW_DROP_L7_QUIC},
	{"l7 sendmsg: UDP 443 to a learned address (QUIC) is refused", IN_ALPHA, OP_SENDTO, AF_INET,
	 SOCK_DGRAM, 0, LEARNED4, 443, 0, FW_DROP_L7_QUIC},
	{"l7 sendmsg: IPv6 UDP 443 to a learned address (QUIC) is refused", IN_ALPHA_CHILD,
	 OP_SENDTO, AF_INET6, SOCK_DGRAM, 0, LEARNED6, 443, 0, FW_DROP_L7_QUIC},
	{"l7 sendmsg: QUIC after a datagram to port 80 of the same address is refused", IN_ALPHA,
	 OP_SENDTO, AF_INET, SOCK_DGRAM, 0, LEARNED4, 443, 0, FW_DROP_L7_QUIC, false, 80},
	{"l7 sendmsg: UDP 443 with QUIC allowed passes by the lease", IN_ALPHA, OP_SENDTO, AF_INET,
	 SOCK_DGRAM, 0, LEARNED4, 443, 1, FW_PASS_LEARNED, .cfg_on = FW_CF_L7_QUIC},
	{"l7 sendmsg: UDP 80 (an HTTP port) passes by the lease", IN_ALPHA, OP_SENDTO, AF_INET,
	 SOCK_DGRAM, 0, LEARNED4, 80, 1, FW_PASS_LEARNED},
	{"l7 connect: an unpinned sandbox's TCP 443 to a learned address passes", IN_BETA,
	 OP_CONNECT, AF_INET, SOCK_STREAM, 0, LEARNED4, 443, 1, FW_PASS_LEARNED},
	{"l7 sendmsg: an unpinned sandbox's UDP 443 to a learned address passes", IN_BETA,
	 OP_SENDTO, AF_INET, SOCK_DGRAM, 0, LEARNED4, 443, 1, FW_PASS_LEARNED},
	{"l7 connect: an unpinned sandbox's TCP to the proxy's port is refused too", IN_BETA,
	 OP_CONNECT, AF_INET, SOCK_STREAM, 0, "127.0.0.1", L7_TLS, 0, FW_DROP_POD_LOCAL},
};

static struct {
	char pin_root[128];
	char mnt[256];
	bool mounted;
	char base[512]; /* our cgroups: base/{alpha{,/child,/nest},deny,none} */
	char path[IN_COUNT][600];
	__u64 cgid[IN_COUNT];
	struct fw_dp *dp;
	struct fw_registry reg;
	bool reg_on;
	struct fw_cg *cg;
	bool attached; /* the programs on base, for the socket rows */
	int prog;
	struct ring_buffer *rb;
	struct fw_event ev[16];
	size_t nev;
	__u32 id[IN_COUNT];
	struct fw_config cfg;
} t;

static int on_event(void *ctx, void *data, size_t size)
{
	(void)ctx;
	if (size >= sizeof(struct fw_event) && t.nev < 16)
		memcpy(&t.ev[t.nev++], data, sizeof(struct fw_event));
	return 0;
}

static int join(enum where w)
{
	char procs[700];
	int fd, ok;

	snprintf(procs, sizeof(procs), "%s/cgroup.procs", t.path[w]);
	fd = open(procs, O_WRONLY);
	if (fd < 0)
		return -errno;
	ok = write(fd, "0", 1) == 1;
	close(fd);
	return ok ? 0 : -errno;
}

static int subject(const char *name, enum where w, __u8 state, const char *const *rules)
{
	struct fw_subject_spec s = {0};
	char why[256];
	int err = 0;

	snprintf(s.name, sizeof(s.name), "%s", name);
	s.state = state;
	s.cgroup_id = t.cgid[w];
	fw_policy_init(&s.policy);
	for (; *rules && !err; rules += 2)
		err = fw_policy_add_rule(&s.policy, rules[0], rules[1], NULL, 0, why, sizeof(why));
	if (!err)
		err = fw_reg_upsert(&t.reg, &s, FW_ORIGIN_PROCESS, NULL);
	if (!err)
		t.id[w] = fw_reg_find(&t.reg, name)->id;
	fw_policy_free(&s.policy);
	return err;
}

/* The rows set the whole settings record, the layer-7 bits included:
 * fw_dp_config_set keeps those as the data path's layer-7 API left them
 * (datapath/l7.h), so the row's bits go there first. */
static int cfg_write(const struct fw_config *c)
{
	t.dp->l7_flags = c->flags & FW_CF_L7_BITS;
	return fw_dp_config_set(t.dp, c);
}

/* Layer-7 pinning, as fastwalld's l7 configuration will write it: the
 * pinned ports, the configuration flags (the proxy up), alpha's subject
 * pinned, and leases of LEARNED4 and LEARNED6 for alpha and beta. */
static int l7_setup(void)
{
	static const struct {
		__u16 port, proxy;
		enum fw_l7_kind kind;
	} ports[] = {{443, L7_TLS, FW_L7_TLS}, {80, L7_HTTP, FW_L7_HTTP}};
	static const char *const leased[] = {LEARNED4, LEARNED6};
	struct fw_subject s;
	int err;

	for (size_t i = 0; i < sizeof(ports) / sizeof(ports[0]); i++) {
		struct fw_port_key k = {.proto = IPPROTO_TCP, .port = htons(ports[i].port)};
		struct fw_l7_port v = {.proxy_port = htons(ports[i].proxy), .kind = ports[i].kind};

		if (bpf_map_update_elem(t.dp->l7_ports_fd, &k, &v, BPF_ANY))
			return -errno;
	}
	err = fw_cg_l7_sync(t.cg, t.dp);
	if (err)
		return err;
	t.cfg.flags |= FW_CF_L7 | FW_CF_L7_UP;
	if (cfg_write(&t.cfg))
		return -EIO;
	for (size_t i = 0; i < 2; i++) {
		struct fw_ip a;

		if (fw_addr_parse(leased[i], &a, NULL))
			return -EINVAL;
		err = fw_dp_learned_put(t.dp, t.id[IN_ALPHA], &a,
					fw_now_ns() + 3600 * FW_NSEC_PER_SEC);
		if (!err)
			err = fw_dp_learned_put(t.dp, t.id[IN_BETA], &a,
						fw_now_ns() + 3600 * FW_NSEC_PER_SEC);
		if (err)
			return err;
	}
	err = fw_dp_cgroup_lookup(t.dp, t.cgid[IN_ALPHA], &s);
	if (err)
		return err;
	s.flags |= FW_SF_L7;
	return fw_dp_cgroup_put(t.dp, t.cgid[IN_ALPHA], &s);
}

static int setup(void)
{
	static const char *const alpha[] = {"allow", "192.0.2.0/25",	"deny", "203.0.113.0/24",
					    "allow", "2001:db8:1::/48", NULL};
	static const char *const loose[] = {"allow", "0.0.0.0/0", NULL};
	static const char *const none[] = {NULL};
	static const char *const sub[IN_COUNT] = {NULL,	  "alpha", "alpha/child", "alpha/nest",
						  "deny", "none",  "beta"};
	int err;

	fw_log_level = FW_LOG_WARN;
	snprintf(t.pin_root, sizeof(t.pin_root), "/sys/fs/bpf/fastwall-cgtest-%d", (int)getpid());
	if (fw_cg_find_mount(t.mnt, sizeof(t.mnt))) {
		snprintf(t.mnt, sizeof(t.mnt), "/tmp/fastwall-cgtest-%d", (int)getpid());
		if (mkdir(t.mnt, 0700) || mount("none", t.mnt, "cgroup2", 0, NULL)) {
			fprintf(stderr, "can't mount cgroup2 at %s: %s\n", t.mnt, strerror(errno));
			return -errno;
		}
		t.mounted = true;
	}
	snprintf(t.base, sizeof(t.base), "%s/fastwall-cgtest-%d", t.mnt, (int)getpid());
	if (mkdir(t.base, 0755))
		return -errno;
	for (int w = IN_ALPHA; w < IN_COUNT; w++) {
		snprintf(t.path[w], sizeof(t.path[w]), "%s/%s", t.base, sub[w]);
		if (mkdir(t.path[w], 0755) || fw_cg_id_of(t.path[w], &t.cgid[w]))
			return -errno;
	}
	err = fw_dp_open(t.pin_root, &t.dp);
	if (err)
		return err;
	err = fw_reg_init(&t.reg, t.dp);
	if (err)
		return err;
	t.reg_on = true;
	t.cfg = (struct fw_config){.flags = FW_CF_DNS_PROXY,
				   .dns_port = DNS_PORT,
				   .event_burst = 1000,
				   .event_interval_ns = 1000};
	if (fw_reg_reap(&t.reg, 0) < 0 || cfg_write(&t.cfg))
		return -EIO;
	err = fw_cg_load(t.dp, &t.cg);
	if (err)
		return err;
	t.prog = fw_cg_prog_fd(t.cg, "fw_cg_egress");
	t.rb = ring_buffer__new(t.dp->events_fd, on_event, NULL, NULL);
	if (t.prog < 0 || !t.rb)
		return -EINVAL;
	err = subject("alpha", IN_ALPHA, FW_STATE_ACTIVE, alpha);
	if (!err)
		err = subject("nest", IN_ALPHA_NESTED, FW_STATE_ACTIVE, loose);
	if (!err)
		err = subject("deny", IN_DENYING, FW_STATE_DENYING, none);
	if (!err)
		err = subject("beta", IN_BETA, FW_STATE_ACTIVE, alpha);
	if (!err)
		err = l7_setup();
	return err;
}

static void cleanup(void)
{
	char top[600];

	/* back to the top before the cgroups go */
	snprintf(top, sizeof(top), "%s/cgroup.procs", t.mnt);
	{
		int fd = open(top, O_WRONLY);

		if (fd >= 0) {
			if (write(fd, "0", 1) != 1)
				perror("leaving the test cgroups");
			close(fd);
		}
	}
	if (t.attached)
		fw_cg_detach(t.base);
	for (int w = IN_COUNT - 1; w >= IN_ALPHA; w--)
		if (t.path[w][0])
			rmdir(t.path[w]);
	if (t.base[0])
		rmdir(t.base);
	if (t.mounted) {
		umount(t.mnt);
		rmdir(t.mnt);
	}
	ring_buffer__free(t.rb);
	fw_cg_close(t.cg);
	if (t.reg_on)
		fw_reg_free(&t.reg);
	fw_dp_close(t.dp);
	fw_dp_purge(t.pin_root);
}

/* A row that crashes the test (or a ^C) must not leave the pins, cgroups
 * and mount behind: clean up, then die of the same signal. */
static void on_fatal(int sig)
{
	signal(sig, SIG_DFL);
	cleanup();
	raise(sig);
}

static __u64 reason_count(__u32 r)
{
	struct fw_counter c[FW_REASON_MAX];

	return fw_dp_stats_read(t.dp, c) ? 0 : c[r].packets;
}

static __u64 subject_count(__u32 id, __u32 r)
{
	__u64 p[FW_REASON_MAX];

	return fw_dp_subject_stats_read(t.dp, id, p) ? 0 : p[r];
}

static __u64 total_count(void)
{
	struct fw_counter c[FW_REASON_MAX];
	__u64 n = 0;

	if (fw_dp_stats_read(t.dp, c))
		return 0;
	for (int r = 0; r < FW_REASON_MAX; r++)
		n += c[r].packets;
	return n;
}

/* ---- fastwall explain --cgroup against the same maps -------------------- */

static int explained;

/* A row `fastwall explain --cgroup PATH DST PORT/PROTO` can ask about: a
 * packet a socket call of the sandbox sends, as the socket hooks see it
 * (so not DNS, which connect() sends to the proxy before any packet),
 * from an address of the node's, with headers as the stack writes them. */
static bool explainable(const struct row *r)
{
	const struct pkt_spec *p = &r->pkt;

	if (r->l7 || r->own_alias || r->own_alias_dst || !p->dst ||
	    (p->src && strncmp(p->src, "127.254.", 8) == 0) || strcmp(p->dst, "127.0.0.1") == 0 ||
	    strncmp(p->dst, "127.254.", 8) == 0)
		return false;
	if (p->ext[0] || p->frag.on || p->truncate || p->route[0] || p->ip_opt_words)
		return false;
	if ((p->proto == IPPROTO_TCP || p->proto == IPPROTO_UDP) && p->dport == 53)
		return false;
	return p->proto == IPPROTO_TCP || p->proto == IPPROTO_UDP ||
	       (p->proto == IPPROTO_ICMP && p->icmp_type == ICMP4_ECHO) ||
	       (p->proto == IPPROTO_ICMPV6 && p->icmp_type == ICMP6_ECHO);
}

/* 0 when explain agrees with the row (or cannot express it) */
static int explain_row(const struct row *r, __u32 id)
{
	const struct pkt_spec *p = &r->pkt;
	struct fw_xpkt x = {
		.family = p->family == 6 ? FW_FAM_V6 : FW_FAM_V4,
		.proto = p->proto,
		.icmp_type = p->icmp_type,
		.has_ports = p->proto == IPPROTO_TCP || p->proto == IPPROTO_UDP,
		.dport = p->dport,
	};
	struct fw_subject s;
	struct fw_xresult res;
	int err;

	if (!explainable(r))
		return 0;
	explained++;
	err = fw_explain_cgroup_subject(t.dp, t.mnt, t.path[r->where], &s);
	if (r->uncounted) {
		if (err != -ENOENT) {
			printf("not ok - %s: explain finds a sandbox (%d)\n", r->desc, err);
			return -1;
		}
		return 0;
	}
	if (err || s.id != id) {
		printf("not ok - %s: explain's subject %u (%d), want %u\n", r->desc, err ? 0 : s.id,
		       err, id);
		return -1;
	}
	if (fw_addr_parse(p->dst, &x.dst, NULL) ||
	    fw_explain_cgroup(t.dp, &s, &x, fw_now_ns(), &res)) {
		printf("not ok - %s: explain failed\n", r->desc);
		return -1;
	}
	if (res.reason != r->reason) {
		printf("not ok - %s: explain says %s (step %s), the row %s\n", r->desc,
		       fw_reason_name(res.reason), fw_xstep_name(res.step),
		       fw_reason_name(r->reason));
		return -1;
	}
	return 0;
}

/* the subject the row's cgroup is held to: alpha below alpha */
static __u32 row_subject(enum where w)
{
	return w == IN_DENYING || w == IN_BETA ? t.id[w] : t.id[IN_ALPHA];
}

static bool run_row(const struct row *r)
{
	__u8 in[PKT_MAX], out[PKT_MAX + 64];
	LIBBPF_OPTS(bpf_test_run_opts, opts);
	__u32 id = row_subject(r->where);
	struct pkt_spec spec = r->pkt;
	char alias[32];
	size_t len;
	__u64 before = reason_count(r->reason), sbefore = subject_count(id, r->reason);
	__u64 total = total_count();
	bool ok = true;

	snprintf(alias, sizeof(alias), "127.254.%u.%u", id >> 8, id & 0xff);
	if (r->own_alias)
		spec.src = alias;
	if (r->own_alias_dst)
		spec.dst = alias;
	if (explain_row(r, id))
		return false;
	len = pkt_build(&spec, in);
	if (!len || join(r->where)) {
		printf("not ok - %s: can't build the packet or join the cgroup\n", r->desc);
		return false;
	}
	ring_buffer__consume(t.rb);
	t.nev = 0;
	opts.data_in = in;
	opts.data_size_in = (__u32)len;
	opts.data_out = out;
	opts.data_size_out = sizeof(out);
	opts.repeat = 1;
	if (bpf_prog_test_run_opts(t.prog, &opts)) {
		printf("not ok - %s: test run: %s\n", r->desc, strerror(errno));
		return false;
	}
	ring_buffer__consume(t.rb);
	if ((int)opts.retval != r->verdict) {
		printf("not ok - %s: verdict %u, want %d\n", r->desc, opts.retval, r->verdict);
		pkt_hex("#   ", in, len);
		ok = false;
	}
	if (r->uncounted) {
		if (total_count() != total || t.nev) {
			printf("not ok - %s: counted (or reported) outside any sandbox\n", r->desc);
			ok = false;
		}
	} else {
		if (reason_count(r->reason) != before + 1 ||
		    subject_count(id, r->reason) != sbefore + 1 || total_count() != total + 1) {
			printf("not ok - %s: reason %s not counted exactly once for subject %u\n",
			       r->desc, fw_reason_name(r->reason), id);
			ok = false;
		}
		if (!r->verdict &&
		    (t.nev != 1 || t.ev[0].subject != id || t.ev[0].reason != r->reason)) {
			printf("not ok - %s: want one deny event of subject %u, reason %s (got "
			       "%zu)\n",
			       r->desc, id, fw_reason_name(r->reason), t.nev);
			ok = false;
		}
		if (r->verdict && t.nev) {
			printf("not ok - %s: an event for a pass\n", r->desc);
			ok = false;
		}
	}
	if (ok)
		printf("ok - %s\n", r->desc);
	return ok;
}

/* r's destination, on port. */
static socklen_t sock_addr_of(const struct sock_row *r, __u16 port, struct sockaddr_storage *ss)
{
	memset(ss, 0, sizeof(*ss));
	if (r->family == AF_INET) {
		struct sockaddr_in *a = (struct sockaddr_in *)ss;

		a->sin_family = AF_INET;
		a->sin_port = htons(port);
		return inet_pton(AF_INET, r->dst, &a->sin_addr) == 1 ? sizeof(*a) : 0;
	}
	struct sockaddr_in6 *a = (struct sockaddr_in6 *)ss;

	a->sin6_family = AF_INET6;
	a->sin6_port = htons(port);
	return inet_pton(AF_INET6, r->dst, &a->sin6_addr) == 1 ? sizeof(*a) : 0;
}

/* The row's call on fd (socket() itself made it for OP_SOCKET); the errno
 * it ended with, 0 when it succeeded. */
static int sock_call(const struct sock_row *r, int fd, __u16 port)
{
	struct sockaddr_storage ss;
	socklen_t slen;

	if (r->op == OP_SOCKET)
		return 0;
	slen = sock_addr_of(r, port, &ss);
	if (!slen)
		return EINVAL;
	if (r->op == OP_CONNECT)
		return connect(fd, (struct sockaddr *)&ss, slen) ? errno : 0;
	if (r->op == OP_BIND)
		return bind(fd, (struct sockaddr *)&ss, slen) ? errno : 0;
	return sendto(fd, "q", 1, 0, (struct sockaddr *)&ss, slen) < 0 ? errno : 0;
}

static bool sock_row_call(const struct sock_row *r)
{
	__u32 id = row_subject(r->where);
	__u64 before, sbefore, total;
	bool ok = true;
	int fd, err;

	if (join(r->where)) {
		printf("not ok - %s: can't join the cgroup\n", r->desc);
		return false;
	}
	/* socket() is the call of OP_SOCKET rows, counted with it */
	before = reason_count(r->reason);
	sbefore = subject_count(id, r->reason);
	total = total_count();
	ring_buffer__consume(t.rb);
	t.nev = 0;
	fd = socket(r->family, r->type | SOCK_NONBLOCK | SOCK_CLOEXEC, r->proto);
	if (fd < 0 && r->op != OP_SOCKET) {
		printf("not ok - %s: socket: %s\n", r->desc, strerror(errno));
		return false;
	}
	err = fd < 0 ? errno : 0;
	if (fd >= 0 && r->warm_port) {
		/* an earlier datagram of the same socket, which the hook may
		 * remember: it must not decide this one */
		if (sock_call(r, fd, r->warm_port) == EPERM) {
			printf("not ok - %s: the first datagram was refused\n", r->desc);
			close(fd);
			return false;
		}
		ring_buffer__consume(t.rb);
		before = reason_count(r->reason);
		sbefore = subject_count(id, r->reason);
		total = total_count();
		t.nev = 0;
	}
	if (fd >= 0) {
		err = sock_call(r, fd, r->port);
		close(fd);
	}
	ring_buffer__consume(t.rb);
	if (r->verdict ? err == EPERM : err != EPERM) {
		printf("not ok - %s: the call ended with %s, want %s\n", r->desc,
		       err ? strerror(err) : "success", r->verdict ? "no EPERM" : "EPERM");
		ok = false;
	}
	if (r->uncounted) {
		if (total_count() != total || t.nev) {
			printf("not ok - %s: counted (or reported) a call that passes\n", r->desc);
			ok = false;
		}
	} else if (reason_count(r->reason) != before + 1 ||
		   subject_count(id, r->reason) != sbefore + 1 || total_count() != total + 1) {
		printf("not ok - %s: reason %s not counted exactly once for subject %u\n", r->desc,
		       fw_reason_name(r->reason), id);
		ok = false;
	}
	if (!r->uncounted && !r->verdict &&
	    (t.nev != 1 || t.ev[0].subject != id || t.ev[0].reason != r->reason)) {
		printf("not ok - %s: want one deny event of subject %u, reason %s (got %zu)\n",
		       r->desc, id, fw_reason_name(r->reason), t.nev);
		ok = false;
	}
	if (r->verdict && t.nev) {
		printf("not ok - %s: an event for a call that passes\n", r->desc);
		ok = false;
	}
	if (ok)
		printf("ok - %s\n", r->desc);
	return ok;
}

/* A socket row under its configuration (cfg_off, cfg_on), then back. */
static bool run_sock_row(const struct sock_row *r)
{
	struct fw_config c = t.cfg;
	bool ok;

	c.flags = (c.flags & ~r->cfg_off) | r->cfg_on;
	if ((r->cfg_off || r->cfg_on) && cfg_write(&c)) {
		printf("not ok - %s: can't write the configuration\n", r->desc);
		return false;
	}
	ok = sock_row_call(r);
	if ((r->cfg_off || r->cfg_on) && cfg_write(&t.cfg)) {
		printf("not ok - %s: can't restore the configuration\n", r->desc);
		return false;
	}
	return ok;
}

/* ---- layer-7 pinning, live: connections through loopback ---------------- */

/* A listener on addr (127.0.0.1 or ::1) port, made from the cgroup of no
 * sandbox: it plays the proxy. */
static int l7_listen(int family, const char *addr, __u16 port)
{
	struct sock_row r = {.family = family, .dst = addr};
	struct sockaddr_storage ss;
	socklen_t len = sock_addr_of(&r, port, &ss);
	int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), one = 1;

	if (fd < 0)
		return -1;
	if (family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (!len || bind(fd, (struct sockaddr *)&ss, len) || listen(fd, 8)) {
		close(fd);
		return -1;
	}
	return fd;
}

/* A socket address as text: "addr port". */
static void sa_text(const struct sockaddr_storage *ss, char *out, size_t len)
{
	char a[INET6_ADDRSTRLEN] = "?";

	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)ss;

		inet_ntop(AF_INET, &s4->sin_addr, a, sizeof(a));
		snprintf(out, len, "%s %u", a, ntohs(s4->sin_port));
	} else {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ss;

		inet_ntop(AF_INET6, &s6->sin6_addr, a, sizeof(a));
		snprintf(out, len, "%s %u", a, ntohs(s6->sin6_port));
	}
}

/* A connection accepted on lfd within two seconds, or -1. */
static int l7_accept(int lfd)
{
	for (int i = 0; i < 200; i++) {
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

		if (fd >= 0)
			return fd;
		usleep(10000);
	}
	return -1;
}

/* The fastwall_l7_nat entry of the peer of fd (the proxy's accepted end),
 * as the proxy looks it up; -errno when there is none. */
static int l7_entry_of(int fd, __u16 proxy, struct fw_l7_nat_key *k, struct fw_l7_nat *v)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	memset(k, 0, sizeof(*k));
	if (getpeername(fd, (struct sockaddr *)&ss, &len))
		return -errno;
	if (ss.ss_family == AF_INET) {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;

		k->client.b[10] = k->client.b[11] = 0xff;
		memcpy(&k->client.b[12], &a->sin_addr, 4);
		k->client_port = a->sin_port;
	} else {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;

		memcpy(k->client.b, &a->sin6_addr, 16);
		k->client_port = a->sin6_port;
	}
	k->proxy_port = htons(proxy);
	return bpf_map_lookup_elem(t.dp->l7_nat_fd, k, v) ? -errno : 0;
}

struct l7_case {
	const char *desc;
	int family;	  /* the sandbox's socket's */
	const char *dst;  /* a learned address */
	__u16 port;	  /* a pinned port */
	const char *peer; /* what getpeername must say, "addr port" */
	bool at_v6;	  /* the connection arrives at the ::1 listener */
	__u16 proxy;
	enum fw_l7_kind kind;
	__u8 nat_family;  /* the entry's enum fw_family */
	const char *orig; /* the entry's orig_dst (v4-mapped for IPv4) */
	bool seen;	  /* a segment a second later moves the entry's last_seen_ns */
};

/* One connection of alpha's to dst:port: it reaches the listener that
 * plays the proxy, getpeername says dst:port, the entry the proxy reads
 * by its peer holds dst:port, alpha's id and the kind, a byte goes each
 * way, and the entry goes once the connection is closed. */
static bool l7_live_case(const struct l7_case *c, const int lfd[2])
{
	struct sock_row r = {.family = c->family, .dst = c->dst};
	struct sockaddr_storage ss, peer;
	socklen_t len = sizeof(peer);
	struct fw_l7_nat_key k;
	struct fw_l7_nat v;
	struct fw_ip orig;
	char got[80];
	int fd = -1, afd = -1, err;
	bool ok = false;
	__u8 b = 'x';
	__u64 *counts = fw_dp_l7_counts(t.dp), before;

	if (!counts) {
		printf("not ok - l7 live: %s: can't map fastwall_l7_count\n", c->desc);
		return false;
	}
	before = counts[t.id[IN_ALPHA]];
	if (join(IN_ALPHA))
		goto out;
	fd = socket(c->family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	len = sock_addr_of(&r, c->port, &ss);
	if (fd < 0 || !len || connect(fd, (struct sockaddr *)&ss, len)) {
		printf("not ok - l7 live: %s: connect: %s\n", c->desc, strerror(errno));
		goto out;
	}
	len = sizeof(peer);
	if (getpeername(fd, (struct sockaddr *)&peer, &len)) {
		printf("not ok - l7 live: %s: getpeername: %s\n", c->desc, strerror(errno));
		goto out;
	}
	sa_text(&peer, got, sizeof(got));
	if (strcmp(got, c->peer)) {
		printf("not ok - l7 live: %s: getpeername says %s, want %s\n", c->desc, got,
		       c->peer);
		goto out;
	}
	afd = l7_accept(lfd[c->at_v6]);
	if (afd < 0) {
		printf("not ok - l7 live: %s: the proxy's listener got no connection\n", c->desc);
		goto out;
	}
	err = l7_entry_of(afd, c->proxy, &k, &v);
	if (err || fw_addr_parse(c->orig, &orig, NULL)) {
		printf("not ok - l7 live: %s: no fastwall_l7_nat entry for the proxy's peer: %s\n",
		       c->desc, strerror(-err));
		goto out;
	}
	if (memcmp(&v.orig_dst, &orig, sizeof(orig)) || v.orig_port != htons(c->port) ||
	    v.proxy_port != htons(c->proxy) || v.subject != t.id[IN_ALPHA] || v.kind != c->kind ||
	    v.family != c->nat_family || v.closed || !v.last_seen_ns) {
		printf("not ok - l7 live: %s: the entry holds port %u, proxy %u, subject %u, "
		       "kind %u, family %u\n",
		       c->desc, (unsigned)ntohs(v.orig_port), (unsigned)ntohs(v.proxy_port),
		       v.subject, (unsigned)v.kind, (unsigned)v.family);
		goto out;
	}
	if (counts[t.id[IN_ALPHA]] != before + 1) {
		printf("not ok - l7 live: %s: alpha's fastwall_l7_count went from %llu to %llu, "
		       "not one up\n",
		       c->desc, (unsigned long long)before,
		       (unsigned long long)counts[t.id[IN_ALPHA]]);
		goto out;
	}
	/* a byte each way: egress lets the socket's segments to the proxy by */
	if (write(fd, &b, 1) != 1 || read(afd, &b, 1) != 1 || write(afd, &b, 1) != 1 ||
	    read(fd, &b, 1) != 1) {
		printf("not ok - l7 live: %s: no byte through: %s\n", c->desc, strerror(errno));
		goto out;
	}
	if (c->seen) {
		__u64 first = v.last_seen_ns;

		usleep(1100 * 1000);
		if (write(fd, &b, 1) != 1 || read(afd, &b, 1) != 1 ||
		    bpf_map_lookup_elem(t.dp->l7_nat_fd, &k, &v) || v.last_seen_ns <= first) {
			printf("not ok - l7 live: %s: a segment a second later leaves "
			       "last_seen_ns\n",
			       c->desc);
			goto out;
		}
	}
	close(fd);
	fd = -1;
	close(afd);
	afd = -1;
	for (int i = 0; i < 200 && !ok; i++) {
		ok = bpf_map_lookup_elem(t.dp->l7_nat_fd, &k, &v) && errno == ENOENT;
		if (!ok)
			usleep(10000);
	}
	if (!ok)
		printf("not ok - l7 live: %s: the entry stays after the connection closed\n",
		       c->desc);
	if (ok && counts[t.id[IN_ALPHA]] != before) {
		printf("not ok - l7 live: %s: alpha's fastwall_l7_count is %llu after the close, "
		       "want %llu\n",
		       c->desc, (unsigned long long)counts[t.id[IN_ALPHA]],
		       (unsigned long long)before);
		ok = false;
	}
out:
	if (fd >= 0)
		close(fd);
	if (afd >= 0)
		close(afd);
	if (join(IN_NONE))
		ok = false;
	if (ok)
		printf("ok - l7 live: %s\n", c->desc);
	return ok;
}

/* conn_quota of the settings in the map (the rest as they are) */
static int l7_quota(__u32 quota)
{
	struct fw_config c;
	__u32 zero = 0;

	if (bpf_map_lookup_elem(t.dp->config_fd, &zero, &c))
		return -errno;
	c.conn_quota = quota;
	return bpf_map_update_elem(t.dp->config_fd, &zero, &c, BPF_ANY) ? -errno : 0;
}

/* alpha's share of fastwall_l7_nat (conn_quota 1): with one pinned
 * connection open, a second one gets no entry and never reaches the
 * proxy (its SYN drops, l7-full), and the count stays 1; an entry
 * fastwalld collected is taken off the count once, not again when its
 * socket closes and finds nothing to delete. */
static bool l7_quota_case(int lfd)
{
	struct sockaddr_storage ss;
	struct sock_row r = {.family = AF_INET, .dst = LEARNED4};
	socklen_t len = sock_addr_of(&r, 443, &ss);
	__u64 *counts = fw_dp_l7_counts(t.dp);
	__u32 a = t.id[IN_ALPHA];
	int fd1 = -1, fd2 = -1, afd = -1, late;
	const char *why = NULL;
	size_t deleted = 0;

	if (!counts || counts[a] != 0 || l7_quota(1) || join(IN_ALPHA)) {
		why = "fixture: no count, alpha's not 0, or can't set the quota";
		goto out;
	}
	fd1 = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd1 < 0 || !len || connect(fd1, (struct sockaddr *)&ss, len) ||
	    (afd = l7_accept(lfd)) < 0 || counts[a] != 1) {
		why = "the first connection has no entry counted";
		goto out;
	}
	fd2 = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd2 < 0 || (connect(fd2, (struct sockaddr *)&ss, len) && errno != EINPROGRESS)) {
		why = "the second connect failed at once";
		goto out;
	}
	usleep(300 * 1000);
	late = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
	if (late >= 0 || counts[a] != 1) {
		if (late >= 0)
			close(late);
		why = "over the share, the second connection reached the proxy or counted";
		goto out;
	}
	/* fastwalld collects the open entry (idle an hour from now) */
	if (fw_dp_l7_gc(t.dp, fw_now_ns() + 3600 * FW_NSEC_PER_SEC, FW_NSEC_PER_SEC,
			FW_NSEC_PER_SEC, &deleted) ||
	    deleted != 1 || counts[a] != 0) {
		why = "the collection did not take the entry off the count";
		goto out;
	}
	close(fd1);
	fd1 = -1;
	close(afd);
	afd = -1;
	usleep(200 * 1000);
	if (counts[a] != 0)
		why = "the socket's close took its collected entry off the count again";
out:
	if (why)
		printf("not ok - l7 quota: %s (alpha's count %llu)\n", why,
		       counts ? (unsigned long long)counts[a] : 0ull);
	else
		printf("ok - l7 quota: a connection over alpha's share gets no entry; a collected "
		       "entry is taken off once\n");
	if (fd1 >= 0)
		close(fd1);
	if (fd2 >= 0)
		close(fd2);
	if (afd >= 0)
		close(afd);
	if (join(IN_NONE) || l7_quota(0))
		why = "can't leave alpha or clear the quota";
	return !why;
}

/* Layer-7 pinning end to end on the namespace's loopback, listeners of
 * the test's own (in no sandbox) playing the proxy. */
static void l7_live(int *passed, int *failed)
{
	static const struct l7_case cases[] = {
		{"IPv4 TCP 443 reaches the proxy, getpeername and the entry say the original",
		 AF_INET, LEARNED4, 443, LEARNED4 " 443", false, L7_TLS, FW_L7_TLS, FW_FAM_V4,
		 "::ffff:" LEARNED4, true},
		{"IPv6 TCP 443 reaches the proxy on ::1", AF_INET6, LEARNED6, 443, LEARNED6 " 443",
		 true, L7_TLS, FW_L7_TLS, FW_FAM_V6, LEARNED6},
		{"an IPv6 socket's v4-mapped TCP 80 reaches the HTTP proxy on 127.0.0.1", AF_INET6,
		 "::ffff:" LEARNED4, 80, "::ffff:" LEARNED4 " 80", false, L7_HTTP, FW_L7_HTTP,
		 FW_FAM_V4, "::ffff:" LEARNED4},
	};
	int lfd[2][2] = {{-1, -1}, {-1, -1}}; /* [TLS, HTTP][127.0.0.1, ::1] */
	struct ifreq ifr = {0};
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	bool up;

	/* the namespace's loopback up, and the listeners */
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
	up = s >= 0 && ioctl(s, SIOCGIFFLAGS, &ifr) == 0;
	ifr.ifr_flags |= IFF_UP;
	up = up && ioctl(s, SIOCSIFFLAGS, &ifr) == 0 && join(IN_NONE) == 0;
	if (s >= 0)
		close(s);
	if (up) {
		lfd[0][0] = l7_listen(AF_INET, "127.0.0.1", L7_TLS);
		lfd[0][1] = l7_listen(AF_INET6, "::1", L7_TLS);
		lfd[1][0] = l7_listen(AF_INET, "127.0.0.1", L7_HTTP);
		lfd[1][1] = l7_listen(AF_INET6, "::1", L7_HTTP);
	}
	if (!up || lfd[0][0] < 0 || lfd[0][1] < 0 || lfd[1][0] < 0 || lfd[1][1] < 0) {
		printf("not ok - l7 live: can't listen on loopback: %s\n", strerror(errno));
		(*failed)++;
	} else {
		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
			const struct l7_case *c = &cases[i];

			if (l7_live_case(c, lfd[c->kind == FW_L7_HTTP]))
				(*passed)++;
			else
				(*failed)++;
		}
		if (l7_quota_case(lfd[0][0]))
			(*passed)++;
		else
			(*failed)++;
	}
	for (int i = 0; i < 2; i++)
		for (int j = 0; j < 2; j++)
			if (lfd[i][j] >= 0)
				close(lfd[i][j]);
}

int main(void)
{
	static const int fatal[] = {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGINT, SIGTERM, SIGPIPE};
	int passed = 0, failed = 0, err;

	if (geteuid() != 0) {
		fprintf(stderr, "cgroup verdicts: needs root\n");
		return 1;
	}
	for (size_t i = 0; i < sizeof(fatal) / sizeof(fatal[0]); i++)
		signal(fatal[i], on_fatal);
	/* a namespace of our own: the socket rows' calls reach no network */
	if (unshare(CLONE_NEWNET)) {
		fprintf(stderr, "cgroup verdicts: can't make a network namespace: %s\n",
			strerror(errno));
		return 1;
	}
	err = setup();
	if (err) {
		fprintf(stderr, "cgroup verdicts: setup failed: %s\n", strerror(-err));
		cleanup();
		return 1;
	}
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		if (run_row(&rows[i]))
			passed++;
		else
			failed++;
	}
	/* the socket hooks: the programs attached to the test's cgroups */
	err = fw_cg_attach(t.cg, t.base);
	t.attached = !err;
	for (size_t i = 0; i < sizeof(sock_rows) / sizeof(sock_rows[0]); i++) {
		if (!err && run_sock_row(&sock_rows[i]))
			passed++;
		else
			failed++;
	}
	if (err)
		printf("not ok - can't attach the cgroup programs: %s\n", strerror(-err));
	else
		l7_live(&passed, &failed);
	/* explain --cgroup was put every row it can express */
	if (explained >= 12) {
		printf("ok - fastwall explain --cgroup agrees on the %d rows it can express\n",
		       explained);
		passed++;
	} else {
		printf("not ok - fastwall explain --cgroup was put %d rows, want 12\n", explained);
		failed++;
	}
	cleanup();
	printf("cgroup verdicts: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
