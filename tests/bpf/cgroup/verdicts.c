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
 * are exercised through real system calls by tests/e2e/cgroup.sh. */
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "common/clock.h"
#include "common/addr.h"
#include "common/log.h"
#include "datapath/cgroup.h"
#include "datapath/datapath.h"
#include "datapath/explain.h"
#include "pkt.h"
#include "subjects/registry.h"

enum where {
	IN_ALPHA = 1,	 /* the sandbox's own cgroup */
	IN_ALPHA_CHILD,	 /* a cgroup below it */
	IN_ALPHA_NESTED, /* below a cgroup registered to another subject, below alpha */
	IN_DENYING,	 /* a registered, denying subject */
	IN_NONE,	 /* a cgroup of no sandbox */
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
};

#define ALPHA_OK4  "192.0.2.10"	      /* allow 192.0.2.0/25 */
#define ALPHA_BAD4 "203.0.113.5"      /* deny 203.0.113.0/24 */
#define NOWHERE4   "198.51.100.1"     /* no rule */
#define ALPHA_OK6  "2001:db8:1::10"   /* allow 2001:db8:1::/48 */
#define ALPHA_BAD6 "2001:db8:dead::5" /* no rule: default deny */
#define NODE4	   "192.0.2.200"      /* the node's own address: the source */
#define NODE6	   "2001:db8:ff::1"
#define DNS_PORT   15353 /* the proxy's, in fastwall_config */

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
};

static struct {
	char pin_root[128];
	char mnt[256];
	bool mounted;
	char base[512]; /* our cgroups: base/{alpha{,/child,/nest},deny,none} */
	char path[6][600];
	__u64 cgid[6];
	struct fw_dp *dp;
	struct fw_registry reg;
	bool reg_on;
	struct fw_cg *cg;
	int prog;
	struct ring_buffer *rb;
	struct fw_event ev[16];
	size_t nev;
	__u32 id[6];
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

static int setup(void)
{
	static const char *const alpha[] = {"allow", "192.0.2.0/25",	"deny", "203.0.113.0/24",
					    "allow", "2001:db8:1::/48", NULL};
	static const char *const loose[] = {"allow", "0.0.0.0/0", NULL};
	static const char *const none[] = {NULL};
	static const char *const sub[6] = {NULL,	 "alpha", "alpha/child",
					   "alpha/nest", "deny",  "none"};
	struct fw_config cfg = {.flags = FW_CF_DNS_PROXY,
				.dns_port = DNS_PORT,
				.event_burst = 1000,
				.event_interval_ns = 1000};
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
	for (int w = IN_ALPHA; w <= IN_NONE; w++) {
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
	if (fw_reg_reap(&t.reg, 0) < 0 || fw_dp_config_set(t.dp, &cfg))
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
	for (int w = IN_NONE; w >= IN_ALPHA; w--)
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

	if (r->own_alias || r->own_alias_dst || !p->dst ||
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

static bool run_row(const struct row *r)
{
	__u8 in[PKT_MAX], out[PKT_MAX + 64];
	LIBBPF_OPTS(bpf_test_run_opts, opts);
	/* the subject the row's cgroup is held to: alpha below alpha */
	__u32 id = r->where == IN_DENYING ? t.id[IN_DENYING] : t.id[IN_ALPHA];
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

int main(void)
{
	static const int fatal[] = {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGINT, SIGTERM};
	int passed = 0, failed = 0, err;

	if (geteuid() != 0) {
		fprintf(stderr, "cgroup verdicts: needs root\n");
		return 1;
	}
	for (size_t i = 0; i < sizeof(fatal) / sizeof(fatal[0]); i++)
		signal(fatal[i], on_fatal);
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
