// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The data plane's verdict table, Katran-style: every row is a packet, the
 * program it goes through, and the verdict and reason fastwall must give
 * it. The rows live in one file per feature (rows/<feature>.c, listed in
 * tables[] below) with the setups and scenarios of that feature; this
 * runner holds the fixture, the checks and main. State is set up through
 * the real control-plane API (datapath.h, subjects.h, policy.h) on maps
 * pinned under a private bpffs directory; each row then runs through
 * bpf_prog_test_run_opts and is checked on what a user sees: the TC
 * verdict, the reason counter (exactly +1, no other reason moved), the
 * subject's counter, and the deny event in the ring buffer. A few
 * scenarios (event rate limiting) do not fit one packet per row and
 * follow the table. Needs root; prints "N passed, N failed".
 *
 * No row leans on the rows before it: each group of rows (a row, and the
 * rows after it marked .then, such as the later fragments of a datagram)
 * starts from the fixture's data path and sets up the config it needs
 * itself. --shuffle SEED runs the groups in another order, --only ROW
 * runs the group holding one row (numbered across the files, in the
 * order of tables[]). */
#include <arpa/inet.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <time.h>
#include <unistd.h>

#include "datapath/explain.h"
#include "bw_rows.h"
#include "guard_rows.h"
#include "verdicts.h"

/* ---- the fixture's subjects -------------------------------------------- */

static const struct subject_def alpha = {
	.name = "alpha",
	.addrs = {ALPHA4, ALPHA6},
	.gateway = {ALPHA_GW4, ALPHA_GW6},
	.private_net = {"10.42.0.0/24", "fd00:42::/64"},
	.default_action = "deny",
	.rules =
		{
			"allow 192.0.2.0/25",
			"allow 2001:db8:1::/48",
			/* deny beats allow, whichever is wider and whatever the order */
			"allow 198.51.100.0/24",
			"deny 198.51.100.128/25",
			"allow 2001:db8:a::/48",
			"deny 2001:db8:a:bad::/64",
			"deny 203.0.113.0/24",
			"allow 203.0.113.64/26",
			"deny 2001:db8:dead::/48",
			"allow 2001:db8:dead:1::/64",
		},
};

static const struct subject_def beta = {
	.name = "beta",
	.addrs = {BETA4, BETA6},
	.default_action = "allow",
	.rules = {"deny 203.0.113.0/24", "deny 2001:db8:dead::/48"},
};

static const struct subject_def gamma_ = {
	.name = "gamma",
	.addrs = {GAMMA4},
	.state = FW_STATE_DENYING,
	.default_action = "allow",
};

static const struct subject_def delta = {
	.name = "delta",
	.addrs = {DELTA4, DELTA6},
	.ifname = DUMMY_IF,
	.default_action = "deny",
	.rules = {"allow 192.0.2.0/25", "allow 2001:db8:1::/48"},
};

static const struct subject_def epsilon = {
	.name = "epsilon",
	.addrs = {EPS4},
	.default_action = "allow",
};

static const struct subject_def zeta = {
	.name = "zeta",
	.addrs = {ZETA4},
	.ifname = "fwt-absent0", /* bound to an interface that does not exist */
	.default_action = "allow",
};

static const struct subject_def flood_a = {
	.name = "flood-a",
	.addrs = {FLOOD_A4},
	.default_action = "deny",
};

static const struct subject_def flood_b = {
	.name = "flood-b",
	.addrs = {FLOOD_B4},
	.default_action = "deny",
};

/* per-rule ports (the `ports` extension) */
static const struct subject_def kappa = {
	.name = "kappa",
	.addrs = {KAPPA4},
	.default_action = "deny",
	.rules =
		{
			"allow 192.0.2.0/25 ports=443",
			"allow 198.51.100.0/24",
			"deny 198.51.100.0/24 ports=22",
			"allow 203.0.113.0/24 ports=53,443",
			"deny 203.0.113.7 ports=443",
			/* a deny for every port is not reopened by a narrower
			 * allow's ports */
			"deny 192.0.2.128/25",
			"allow 192.0.2.192/26 ports=443",
		},
};

static const struct subject_def lambda = {
	.name = "lambda",
	.addrs = {LAMBDA4},
	.default_action = "allow",
	.rules = {"deny 0.0.0.0/0 ports=25"},
};

/* omicron: port 80 only, so that a port read from the wrong bytes shows */
static const struct subject_def omicron = {
	.name = "omicron",
	.addrs = {OMI4, OMI6},
	.default_action = "deny",
	.rules = {"allow 192.0.2.0/25 ports=80", "allow 2001:db8:1::/48 ports=80"},
};

static const struct subject_def *const fixture[] = {
	&alpha,	  &beta,    &gamma_, &delta,  &epsilon, &zeta,
	&flood_a, &flood_b, &kappa,  &lambda, &omicron,
};

/* ---- test state ------------------------------------------------------ */

struct verdicts_state t;

struct fw_ip ip_of(const char *text)
{
	struct fw_ip ip;

	if (fw_addr_parse(text, &ip, NULL)) {
		fprintf(stderr, "test bug: bad address %s\n", text);
		exit(2);
	}
	return ip;
}

__u32 id_of(const char *name)
{
	struct fw_entry *e = fw_reg_find(&t.reg, name);

	return e ? e->id : 0;
}

int subject_put(const struct subject_def *d)
{
	struct fw_subject_spec spec;
	char err[256] = "";
	int ret;

	memset(&spec, 0, sizeof(spec));
	snprintf(spec.name, sizeof(spec.name), "%s", d->name);
	for (size_t i = 0; i < 4 && d->addrs[i]; i++)
		spec.addrs[spec.naddrs++] = ip_of(d->addrs[i]);
	if (d->ifname)
		snprintf(spec.ifname, sizeof(spec.ifname), "%s",
			 strcmp(d->ifname, DUMMY_IF) ? d->ifname : t.dummy);
	for (int f = 0; f < FW_FAM_MAX; f++) {
		if (d->gateway[f]) {
			spec.has_gateway[f] = true;
			spec.gateway[f] = ip_of(d->gateway[f]);
		}
		if (d->private_net[f]) {
			spec.has_private[f] = true;
			if (fw_prefix_parse(d->private_net[f], &spec.private_net[f].net,
					    &spec.private_net[f].plen, NULL)) {
				fprintf(stderr, "test bug: bad prefix %s\n", d->private_net[f]);
				exit(2);
			}
		}
	}
	spec.state = d->state ? d->state : FW_STATE_ACTIVE;

	fw_policy_init(&spec.policy);
	ret = fw_policy_set_default(&spec.policy, d->default_action, err, sizeof(err));
	for (size_t i = 0; !ret && i < sizeof(d->rules) / sizeof(d->rules[0]) && d->rules[i]; i++) {
		char action[8], target[64], ports[64] = "";
		long port_list[16];
		size_t nports = 0;

		if (sscanf(d->rules[i], "%7s %63s %63s", action, target, ports) < 2) {
			fprintf(stderr, "test bug: bad rule '%s'\n", d->rules[i]);
			exit(2);
		}
		/* "ports=22,443" */
		for (char *tok = strncmp(ports, "ports=", 6) ? NULL : strtok(ports + 6, ",");
		     tok && nports < 16; tok = strtok(NULL, ","))
			port_list[nports++] = strtol(tok, NULL, 10);
		ret = fw_policy_add_rule(&spec.policy, action, target, nports ? port_list : NULL,
					 nports, err, sizeof(err));
	}
	t.dirty = true;
	if (!ret && d->fence) {
		struct fw_entry *e = fw_reg_get(&t.reg, d->name, true);

		ret = e ? fw_reg_apply(&t.reg, e, &spec, FW_ORIGIN_ACTIONS,
				       fw_fence_hash("verdicts", d->fence), NULL)
			: -ENOMEM;
		if (e)
			fw_reg_put(&t.reg, e);
	} else if (!ret) {
		ret = fw_reg_upsert(&t.reg, &spec, FW_ORIGIN_STATIC, NULL);
	}
	fw_policy_free(&spec.policy);
	if (ret)
		printf("can't put subject %s: %s %s\n", d->name, strerror(-ret), err);
	return ret;
}

int learn(const char *subject, const char *addr, long ttl_s)
{
	struct fw_ip ip = ip_of(addr);
	__u32 id = id_of(subject);
	int err;

	if (!id) {
		printf("can't learn %s: no subject %s\n", addr, subject);
		return -ENOENT;
	}
	err = fw_dp_learned_put(t.dp, id, &ip, fw_now_ns() + ttl_s * (long long)FW_NSEC_PER_SEC);
	if (err)
		printf("can't learn %s for %s: %s\n", addr, subject, strerror(-err));
	return err;
}

/* ---- row preconditions (0 or -1; they say what went wrong) ------------ */

int config_flags(__u32 flags)
{
	t.cfg.flags = flags;
	return fw_dp_config_set(t.dp, &t.cfg) ? -1 : 0;
}

int doh_list(void)
{
	return config_flags(FW_CF_DOH_LIST);
}

int doh_strict(void)
{
	return config_flags(FW_CF_DOH_STRICT);
}

int local_full(void)
{
	return config_flags(FW_CF_LOCAL_FULL);
}

int doh_off(void)
{
	return config_flags(0);
}

int dns_proxy_all(void)
{
	return config_flags(FW_CF_DNS_PROXY | FW_CF_DNS_ALL);
}

int dns_proxy_gateway_only(void)
{
	return config_flags(FW_CF_DNS_PROXY);
}

/* The id of the rule trie in subject id's slot of fastwall_rules. */
__u32 trie_of(__u32 id)
{
	__u32 inner = 0;

	bpf_map_lookup_elem(t.dp->rules_fd, &id, &inner);
	return inner;
}
struct fw_mac mac_of(const char *text)
{
	struct fw_mac m = {};
	unsigned int b[6];

	if (sscanf(text, "%x:%x:%x:%x:%x:%x", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5]) != 6) {
		fprintf(stderr, "test bug: bad MAC %s\n", text);
		exit(2);
	}
	for (int i = 0; i < 6; i++)
		m.b[i] = (__u8)b[i];
	return m;
}

/* ---- running a row ------------------------------------------------------ */

static int on_event(void *ctx, void *data, size_t size)
{
	(void)ctx;
	if (size < sizeof(struct fw_event) || t.nev >= MAX_EVENTS) {
		t.ev_lost++;
		return 0;
	}
	memcpy(&t.ev[t.nev++], data, sizeof(struct fw_event));
	return 0;
}

void events_drain(void)
{
	ring_buffer__consume(t.rb);
	t.nev = 0;
	t.ev_lost = 0;
}

static const char *verdict_name(int v)
{
	return v == TC_ACT_OK ? "TC_ACT_OK" : v == TC_ACT_SHOT ? "TC_ACT_SHOT" : "?";
}

struct report {
	char text[2048];
	size_t len;
};

static void note(struct report *rep, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void note(struct report *rep, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (rep->len >= sizeof(rep->text))
		return;
	va_start(ap, fmt);
	n = vsnprintf(rep->text + rep->len, sizeof(rep->text) - rep->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		rep->len += (size_t)n;
}

/* What the event of a drop must carry about the packet. */
static void check_event(struct report *rep, const struct row *r, __u32 id, int ifindex)
{
	const struct pkt_spec *p = &r->pkt;
	const struct fw_event *ev = &t.ev[0];
	bool l4 = p->kind == PK_IP && !(p->frag.on && p->frag.offset) &&
		  (p->proto == IPPROTO_TCP || p->proto == IPPROTO_UDP);
	char a[FW_ADDR_STRLEN], b[FW_ADDR_STRLEN];

	if (t.nev != 1 || t.ev_lost) {
		note(rep, "  event: expected 1 deny event, got %zu (+%zu unreadable)\n", t.nev,
		     t.ev_lost);
		return;
	}
	if (ev->type != FW_EVENT_DROP || ev->subject != id || ev->reason != r->reason ||
	    ev->ifindex != (__u32)ifindex)
		note(rep,
		     "  event: type %u subject %u reason %s ifindex %u, expected subject %u "
		     "reason %s ifindex %d\n",
		     ev->type, ev->subject, fw_reason_name(ev->reason), ev->ifindex, id,
		     fw_reason_name(r->reason), ifindex);
	if (p->kind != PK_IP || r->reason == FW_DROP_MALFORMED || r->reason == FW_DROP_V4MAPPED)
		return;
	/* an unclassifiable first fragment has no ports */
	if (r->reason == FW_DROP_FRAG_HEADER)
		l4 = false;
	{
		struct fw_ip src = ip_of(p->src), dst = ip_of(p->dst);
		__be16 dport = l4 ? htons(p->dport) : 0, sport = l4 ? htons(p->sport) : 0;

		if (memcmp(&ev->src, &src, sizeof(src)) || memcmp(&ev->dst, &dst, sizeof(dst)) ||
		    ev->dport != dport || ev->sport != sport ||
		    ev->proto != (r->ev_proto ? r->ev_proto : p->proto) ||
		    ev->family != (p->family == 4 ? FW_FAM_V4 : FW_FAM_V6))
			note(rep,
			     "  event: %s:%u -> %s:%u proto %u family %u, expected %s:%u -> "
			     "%s:%u proto %u\n",
			     fw_addr_str(&ev->src, a, sizeof(a)), ntohs(ev->sport),
			     fw_addr_str(&ev->dst, b, sizeof(b)), ntohs(ev->dport), ev->proto,
			     ev->family, p->src, ntohs(sport), p->dst, ntohs(dport), p->proto);
	}
}

/* ---- fastwall explain against the same maps ---------------------------- */

static int explained, explain_disagreed;

#define EXPLAIN_MIN_ROWS 100

/* A row a user can ask `fastwall explain SRC DST PORT/PROTO` about: an
 * unfragmented IP packet through TC ingress, TCP, UDP or an ICMP echo,
 * from the port's own MAC, headers as any stack writes them. */
static bool explainable(const struct row *r, const struct pkt_spec *p)
{
	bool echo = (p->proto == IPPROTO_ICMP && p->icmp_type == ICMP4_ECHO) ||
		    (p->proto == IPPROTO_ICMPV6 && p->icmp_type == ICMP6_ECHO);

	if (r->prog != FROM_SANDBOX || p->kind != PK_IP || r->forged)
		return false;
	if (p->proto != IPPROTO_TCP && p->proto != IPPROTO_UDP && !echo)
		return false;
	if (p->frag.on || p->ext[0] || p->ext_after_frag[0] || p->vlan[0] || p->ip_opt_words ||
	    p->ihl || p->version || p->zero_payload_len || p->len_delta || p->doff || p->truncate ||
	    p->trailer_port || p->l4_in_later || p->ext_hdrlen)
		return false;
	if (p->hop_limit && p->hop_limit != 64)
		return false;
	if (p->arp_sha || p->nd_lladdr || p->nd_target)
		return false;
	/* the MAC the port is (or will be) bound to: the loopback's default,
	 * the dummy's own */
	if (p->eth_src && !(r->on_dummy && strcmp(p->eth_src, DUMMY_MAC) == 0))
		return false;
	return true;
}

/* What explain says of the row's packet on the state the row runs on,
 * before the program runs; a disagreement with the row goes to rep. */
static void explain_row(struct report *rep, const struct row *r, const struct pkt_spec *p,
			int ifindex)
{
	struct fw_xpkt x = {
		.family = p->family == 6 ? FW_FAM_V6 : FW_FAM_V4,
		.proto = p->proto,
		.icmp_type = p->icmp_type,
		.has_ports = p->proto == IPPROTO_TCP || p->proto == IPPROTO_UDP,
		.dport = p->dport,
		.sport = p->sport,
		.tcp_flags = p->tcp_flags,
		.ifindex = (__u32)ifindex,
	};
	struct fw_xresult res;
	__u32 want_id = r->subject ? id_of(r->subject) : 0;

	if (!explainable(r, p))
		return;
	x.src = ip_of(p->src);
	x.dst = ip_of(p->dst);
	if (fw_explain_tc(t.dp, &x, fw_now_ns(), &res)) {
		note(rep, "  explain failed\n");
		explain_disagreed++;
		return;
	}
	explained++;
	if (res.reason != r->reason || (res.has_subject ? res.subject.id : 0) != want_id) {
		note(rep, "  explain: %s (step %s, subject %u), the row: %s (subject %u)\n",
		     fw_reason_name(res.reason), fw_xstep_name(res.step),
		     res.has_subject ? res.subject.id : 0, fw_reason_name(r->reason), want_id);
		explain_disagreed++;
	}
}

/* Runs one row; prints the details and returns false on any mismatch. */
bool run_row(const struct row *r, unsigned int flags)
{
	struct fw_counter before[FW_REASON_MAX], after[FW_REASON_MAX];
	__u64 sbefore[FW_REASON_MAX], safter[FW_REASON_MAX];
	__u8 in[PKT_MAX], out[PKT_MAX + 64];
	struct __sk_buff ctx = {};
	struct report rep = {.len = 0};
	struct pkt_spec spec;
	int ifindex = r->on_port2 ? t.port2_ifindex : r->on_dummy ? t.dummy_ifindex : 1;
	bool check_events = flags & RUN_EVENTS;
	__u32 id = 0, moved = FW_REASON_MAX;
	int nmoved = 0, err;
	bool show_out = false;
	size_t len;
	LIBBPF_OPTS(bpf_test_run_opts, opts);

	if (r->setup && r->setup()) {
		printf("FAIL %s\n  setup failed\n", r->desc);
		return false;
	}
	/* the dummy's sandbox has a MAC of its own: a port binds one */
	spec = r->pkt;
	if (r->on_dummy && !spec.eth_src)
		spec.eth_src = DUMMY_MAC;
	len = pkt_build(&spec, in);
	if (!len) {
		printf("FAIL %s\n  test bug: packet does not build\n", r->desc);
		return false;
	}
	if (r->subject) {
		id = id_of(r->subject);
		if (!id) {
			printf("FAIL %s\n  no subject %s\n", r->desc, r->subject);
			return false;
		}
	}
	if ((r->on_dummy || r->on_port2) && ifindex <= 0) {
		printf("FAIL %s\n  no dummy interface\n", r->desc);
		return false;
	}

	explain_row(&rep, r, &spec, ifindex);
	fw_dp_stats_read(t.dp, before);
	fw_dp_subject_stats_read(t.dp, id, sbefore);
	events_drain();

	opts.data_in = in;
	opts.data_size_in = len;
	opts.data_out = out;
	opts.data_size_out = sizeof(out);
	opts.repeat = 1;
	if (r->on_dummy || r->on_port2) {
		ctx.ifindex = ifindex;
		opts.ctx_in = &ctx;
		opts.ctx_size_in = sizeof(ctx);
	}
	err = bpf_prog_test_run_opts(prog_fd(r->prog), &opts);
	if (err) {
		printf("FAIL %s\n  bpf_prog_test_run_opts: %s\n", r->desc, strerror(-err));
		pkt_hex("  in  ", in, len);
		return false;
	}

	fw_dp_stats_read(t.dp, after);
	fw_dp_subject_stats_read(t.dp, id, safter);
	ring_buffer__consume(t.rb);

	for (__u32 i = 0; i < FW_REASON_MAX; i++) {
		if (after[i].packets == before[i].packets)
			continue;
		nmoved++;
		moved = i;
	}

	if ((int)opts.retval != r->verdict)
		note(&rep, "  verdict: expected %s, got %s (%d)\n", verdict_name(r->verdict),
		     verdict_name((int)opts.retval), (int)opts.retval);
	if (r->out) {
		__u8 want[PKT_MAX];
		size_t wlen = pkt_build(r->out, want);

		if (opts.data_size_out != wlen || memcmp(want, out, wlen)) {
			note(&rep, "  the packet did not come out as expected\n");
			show_out = true;
		}
	} else if (opts.data_size_out != len || memcmp(in, out, len)) {
		note(&rep, "  the packet came out rewritten (%u bytes)\n", opts.data_size_out);
	}

	if (r->prog == TO_SANDBOX) {
		if (nmoved)
			note(&rep, "  egress moved the %s counter\n", fw_reason_name(moved));
		if (t.nev)
			note(&rep, "  egress emitted %zu events\n", t.nev);
	} else {
		if (nmoved != 1 || moved != r->reason) {
			note(&rep, "  reason: expected %s, got", fw_reason_name(r->reason));
			for (__u32 i = 0; i < FW_REASON_MAX; i++)
				if (after[i].packets != before[i].packets)
					note(&rep, " %s(+%llu)", fw_reason_name(i),
					     (unsigned long long)(after[i].packets -
								  before[i].packets));
			note(&rep, "%s\n", nmoved ? "" : " no counter");
		} else if (after[moved].packets - before[moved].packets != 1 ||
			   after[moved].bytes - before[moved].bytes != len) {
			note(&rep, "  counter %s: +%llu packets +%llu bytes, expected +1 +%zu\n",
			     fw_reason_name(moved),
			     (unsigned long long)(after[moved].packets - before[moved].packets),
			     (unsigned long long)(after[moved].bytes - before[moved].bytes), len);
		}
		for (__u32 i = 0; i < FW_REASON_MAX; i++) {
			__u64 want = sbefore[i] + (i == r->reason);

			if (safter[i] != want)
				note(&rep, "  subject %u counter %s: %llu -> %llu, expected %llu\n",
				     id, fw_reason_name(i), (unsigned long long)sbefore[i],
				     (unsigned long long)safter[i], (unsigned long long)want);
		}
		if (check_events && r->verdict == TC_ACT_SHOT)
			check_event(&rep, r, id, ifindex);
		else if (check_events && t.nev)
			note(&rep, "  a passed packet emitted %zu events\n", t.nev);
	}

	if (!rep.len) {
		if (!(flags & RUN_QUIET))
			printf("ok   %s\n", r->desc);
		return true;
	}
	printf("FAIL %s\n", r->desc);
	if (r->prog == TO_SANDBOX)
		printf("  expected: egress %s\n", verdict_name(r->verdict));
	else
		printf("  expected: %s %s (subject %u)\n", verdict_name(r->verdict),
		       fw_reason_name(r->reason), id);
	printf("  actual:   %s %s\n", verdict_name((int)opts.retval),
	       nmoved == 1 ? fw_reason_name(moved)
	       : nmoved	   ? "(several)"
			   : "(none)");
	fputs(rep.text, stdout);
	pkt_hex("  in  ", in, len);
	if (show_out) {
		__u8 want[PKT_MAX];
		size_t wlen = pkt_build(r->out, want);

		pkt_hex("  want", want, wlen);
		pkt_hex("  got ", out, opts.data_size_out);
	}
	return false;
}

/* ---- scenarios that are not one packet per row ---------------------------- */

int passed, failed;

void result(bool ok, const char *desc, const char *fmt, ...)
{
	va_list ap;

	printf("%s %s\n", ok ? "ok  " : "FAIL", desc);
	if (!ok && fmt) {
		printf("  ");
		va_start(ap, fmt);
		vprintf(fmt, ap);
		va_end(ap);
		printf("\n");
	}
	if (ok)
		passed++;
	else
		failed++;
}

size_t events_of(__u32 id, __u64 *suppressed)
{
	size_t n = 0;

	for (size_t i = 0; i < t.nev; i++) {
		if (t.ev[i].subject != id)
			continue;
		n++;
		if (suppressed)
			*suppressed = t.ev[i].suppressed;
	}
	return n;
}

/* fastwall explain without --iface: the packet comes from the subject's
 * own interface, which a subject bound to one that is not there never
 * has (zeta: every packet of it drops), and an unbound one has anywhere. */
void explain_no_iface(void)
{
	static const struct {
		const char *desc, *src, *dst;
		__u32 reason;
	} cases[] = {
		{"explain, no --iface: bound to a missing interface, spoofed", ZETA4, NOWHERE4,
		 FW_DROP_SPOOF},
		{"explain, no --iface: bound to the dummy, from it", DELTA4, OK4,
		 FW_PASS_ALLOW_CIDR},
		{"explain, no --iface: unbound, from anywhere", ALPHA4, OK4, FW_PASS_ALLOW_CIDR},
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct fw_xpkt x = {
			.src = ip_of(cases[i].src),
			.dst = ip_of(cases[i].dst),
			.family = FW_FAM_V4,
			.proto = IPPROTO_TCP,
			.has_ports = true,
			.dport = 80,
			.ifindex = FW_IFINDEX_ANY,
		};
		struct fw_xresult res;
		int err = fw_explain_tc(t.dp, &x, fw_now_ns(), &res);

		result(!err && res.reason == cases[i].reason, cases[i].desc,
		       "%s -> %s: %s, want %s", cases[i].src, cases[i].dst,
		       err ? strerror(-err) : fw_reason_name(res.reason),
		       fw_reason_name(cases[i].reason));
	}
}

/* This CPU's row of subject id in fastwall_subject_rows; false when
 * it can't be read. */
bool row_of(__u32 id, struct fw_subject_row *out)
{
	int cpu = sched_getcpu();
	__u32 key = FW_ROW_KEY(cpu < 0 ? 0 : (__u32)cpu, id);

	return bpf_map_lookup_elem(t.dp->subject_rows_fd, &key, out) == 0;
}

__u64 stats_row_slot(__u32 id, __u32 reason)
{
	int ncpu = libbpf_num_possible_cpus();
	struct fw_subject_stats *v = calloc(ncpu > 0 ? ncpu : 1, sizeof(*v));
	__u64 sum = 0;

	if (v && bpf_map_lookup_elem(t.dp->subject_stats_fd, &id, v) == 0)
		for (int c = 0; c < ncpu; c++)
			sum += v[c].packets[reason];
	free(v);
	return sum;
}

/* ---- fixture ------------------------------------------------------------ */

/* The one place naming the TC programs under test. */
int prog_fd(enum prog p)
{
	return p == TO_SANDBOX ? t.dp->to_sandbox_fd : t.dp->from_sandbox_fd;
}

int run_frame(int prog_fd, const struct pkt_spec *spec)
{
	__u8 in[PKT_MAX], out[PKT_MAX + 64];
	LIBBPF_OPTS(bpf_test_run_opts, opts);
	size_t len = pkt_build(spec, in);

	opts.data_in = in;
	opts.data_size_in = len;
	opts.data_out = out;
	opts.data_size_out = sizeof(out);
	opts.repeat = 1;
	if (!len || bpf_prog_test_run_opts(prog_fd, &opts))
		return -1;
	return (int)opts.retval;
}

static void cleanup(void)
{
	char cmd[96];

	ring_buffer__free(t.rb);
	t.rb = NULL;
	if (t.dp) {
		fw_reg_free(&t.reg);
		fw_dp_close(t.dp);
		t.dp = NULL;
	}
	if (t.pinned) {
		fw_dp_purge(t.pin_root);
		t.pinned = false;
	}
	if (t.dummy_ifindex > 0) {
		snprintf(cmd, sizeof(cmd), "ip link del %s 2>/dev/null", t.dummy);
		if (system(cmd) != 0)
			fprintf(stderr, "can't remove test interface %s\n", t.dummy);
		t.dummy_ifindex = 0;
	}
	if (t.port2_ifindex > 0) {
		snprintf(cmd, sizeof(cmd), "ip link del %s 2>/dev/null", t.port2);
		if (system(cmd) != 0)
			fprintf(stderr, "can't remove test interface %s\n", t.port2);
		t.port2_ifindex = 0;
	}
}

static void on_signal(int sig)
{
	/* not async-signal-safe, but a test killed mid-run must not leave pins */
	cleanup();
	_exit(128 + sig);
}

/* A crash or a sanitizer's abort: the state may be broken, so only what
 * outlives the process goes (pins, the test interface), then the signal's
 * own action runs (a core, the sanitizer's exit status). */
static void leave_nothing(void)
{
	char cmd[96];

	if (t.pinned)
		fw_dp_purge(t.pin_root);
	t.pinned = false;
	if (t.dummy_ifindex > 0) {
		snprintf(cmd, sizeof(cmd), "ip link del %s 2>/dev/null", t.dummy);
		if (system(cmd) != 0)
			fprintf(stderr, "can't remove test interface %s\n", t.dummy);
		t.dummy_ifindex = 0;
	}
	if (t.port2_ifindex > 0) {
		snprintf(cmd, sizeof(cmd), "ip link del %s 2>/dev/null", t.port2);
		if (system(cmd) != 0)
			fprintf(stderr, "can't remove test interface %s\n", t.port2);
		t.port2_ifindex = 0;
	}
}

static void on_crash(int sig)
{
	leave_nothing();
	signal(sig, SIG_DFL);
	raise(sig);
}

/* test_run takes ctx->ifindex only for a device that exists: make one
 * (a dummy, or a veth pair where the dummy driver is missing) */
static int dummy_create(void)
{
	char cmd[96];

	snprintf(t.dummy, sizeof(t.dummy), "fwt%d", (int)getpid() % 1000000);

	snprintf(cmd, sizeof(cmd), "ip link add %s type dummy 2>/dev/null", t.dummy);
	if (system(cmd) != 0) {
		/* kernels without the dummy driver: a veth pair, deleted as one */
		snprintf(cmd, sizeof(cmd), "ip link add %s type veth peer name %sp", t.dummy,
			 t.dummy);
		if (system(cmd) != 0) {
			fprintf(stderr, "can't create a test interface %s\n", t.dummy);
			return -1;
		}
	}
	t.dummy_ifindex = (int)if_nametoindex(t.dummy);
	return t.dummy_ifindex > 0 ? 0 : -1;
}

/* The per-subject event budget is per CPU; keep every run on one CPU. */
static void pin_cpu(void)
{
	cpu_set_t set;
	int cpu = sched_getcpu();

	CPU_ZERO(&set);
	CPU_SET(cpu < 0 ? 0 : cpu, &set);
	if (sched_setaffinity(0, sizeof(set), &set))
		fprintf(stderr, "can't pin to cpu %d: %s\n", cpu, strerror(errno));
}

static int fixture_populate(void);

static int fixture_setup(void)
{
	int err;

	snprintf(t.pin_root, sizeof(t.pin_root), "/sys/fs/bpf/fastwall-test-%d", (int)getpid());
	err = fw_dp_open(t.pin_root, &t.dp);
	/* fw_dp_open may have pinned some maps before failing */
	t.pinned = true;
	if (err) {
		fprintf(stderr, "can't open the data plane under %s: %s\n", t.pin_root,
			strerror(-err));
		return err;
	}
	t.rb = ring_buffer__new(t.dp->events_fd, on_event, NULL, NULL);
	if (!t.rb) {
		fprintf(stderr, "can't open the event ring: %s\n", strerror(errno));
		return -errno;
	}
	return fixture_populate();
}

/* The fixture put through the control plane on empty maps. */
static int fixture_populate(void)
{
	struct fw_ip local[] = {ip_of(LOCAL4), ip_of(LOCAL6)};
	struct fw_port_key ports[] = {{.proto = IPPROTO_TCP, .port = htons(LOCAL_TCP_PORT)}};
	struct fw_lpm_key doh[2];
	int err;

	err = fw_reg_init(&t.reg, t.dp);
	if (err)
		return err;

	/* events unlimited for the table: the rate limit has its own scenario */
	t.cfg = (struct fw_config){
		.flags = 0,
		.event_burst = 1u << 30,
		.event_interval_ns = 1,
		.pod_flow_timeout_ns = 120 * FW_NSEC_PER_SEC,
		.frag_timeout_ns = 30 * FW_NSEC_PER_SEC,
		.dns_port = DNS_PORT,
	};
	t.base_cfg = t.cfg;
	err = fw_dp_config_set(t.dp, &t.cfg);
	if (!err)
		err = fw_dp_local_set(t.dp, local, 2, ports, 1);
	if (err)
		return err;
	/* what fastwalld reserves for the pod: the bridge's MAC and the
	 * pod's IPv6 addresses */
	{
		struct fw_mac pod_mac = mac_of(POD_MAC);
		struct fw_ip pod_ip[] = {ip_of(GW_LL), ip_of(POD6)};

		err = fw_l2_reserve(t.dp, &pod_mac, 1, pod_ip, 2);
		if (err)
			return err;
	}

	doh[0] = (struct fw_lpm_key){.prefixlen = 96 + 28, .addr = ip_of("192.0.2.48")};
	doh[1] = (struct fw_lpm_key){.prefixlen = 128, .addr = ip_of(DOH6)};
	err = fw_dp_doh_set(t.dp, doh, 2);
	if (err)
		return err;

	for (size_t i = 0; i < sizeof(fixture) / sizeof(fixture[0]); i++) {
		err = subject_put(fixture[i]);
		if (err)
			return err;
	}

	err = learn("alpha", LEARNED4, 60);
	if (!err)
		err = learn("alpha", LEARNED6, 60);
	if (!err)
		err = learn("alpha", LEARNED_BAD4, 60);
	if (!err)
		err = learn("beta", BETAS4, 60);
	if (err)
		return err;
	/* a lease that ran out a nanosecond ago (the GC has not run yet) */
	{
		struct fw_ip e4 = ip_of(EXPIRED4), e6 = ip_of(EXPIRED6);
		__u32 id = id_of("alpha");

		err = fw_dp_learned_put(t.dp, id, &e4, fw_now_ns() - 1);
		if (!err)
			err = fw_dp_learned_put(t.dp, id, &e6, fw_now_ns() - 1);
	}
	return err;
}

#define NSNAP	     24
#define SNAP_KEY_MAX 64 /* the largest key of a state map, for the restore's walk */

/* The fixture's contents of every map but the rule tries, taken once the
 * fixture is in: a group of rows that changed no subject is undone by
 * putting these back, which is much cheaper than the control plane (an
 * outer-map update waits for an RCU grace period). */
static struct snap {
	int fd;
	__u32 type, key_size, value_size, n;
	__u8 *keys, *vals;
} snaps[NSNAP];
static size_t nsnaps;

static void snaps_free(void)
{
	for (size_t i = 0; i < nsnaps; i++) {
		free(snaps[i].keys);
		free(snaps[i].vals);
	}
	memset(snaps, 0, sizeof(snaps));
	nsnaps = 0;
}

static bool is_array(__u32 type)
{
	return type == BPF_MAP_TYPE_ARRAY || type == BPF_MAP_TYPE_PERCPU_ARRAY;
}

static int snap_take(struct snap *sn, int fd)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info), cap;
	int ncpus = libbpf_num_possible_cpus();
	__u8 *prev = NULL;

	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return -errno;
	if (info.key_size > SNAP_KEY_MAX)
		return -E2BIG;
	sn->fd = fd;
	sn->type = info.type;
	sn->key_size = info.key_size;
	sn->value_size = info.value_size;
	if (info.type == BPF_MAP_TYPE_PERCPU_ARRAY)
		sn->value_size = ((info.value_size + 7) & ~7u) * (__u32)(ncpus > 0 ? ncpus : 1);
	cap = info.max_entries;
	sn->keys = calloc(cap, sn->key_size);
	sn->vals = calloc(cap, sn->value_size);
	if (!sn->keys || !sn->vals)
		return -ENOMEM;
	if (is_array(info.type)) {
		for (__u32 k = 0; k < cap; k++) {
			memcpy(sn->keys + (size_t)k * sn->key_size, &k, sizeof(k));
			if (bpf_map_lookup_elem(fd, &k, sn->vals + (size_t)k * sn->value_size))
				return -errno;
		}
		sn->n = cap;
		return 0;
	}
	for (sn->n = 0; sn->n < cap; sn->n++) {
		__u8 *key = sn->keys + (size_t)sn->n * sn->key_size;

		if (bpf_map_get_next_key(fd, prev, key))
			break;
		if (bpf_map_lookup_elem(fd, key, sn->vals + (size_t)sn->n * sn->value_size))
			return -errno;
		prev = key;
	}
	return 0;
}

static bool snap_has(const struct snap *sn, const void *key)
{
	for (__u32 i = 0; i < sn->n; i++)
		if (!memcmp(sn->keys + (size_t)i * sn->key_size, key, sn->key_size))
			return true;
	return false;
}

/* Makes the map hold exactly what the snapshot does. */
static int snap_restore(const struct snap *sn)
{
	__u8 key[SNAP_KEY_MAX], *cur = malloc(sn->value_size);
	int err = 0;

	if (!cur)
		return -ENOMEM;
	if (!is_array(sn->type)) {
		/* keys the rows added go first; restart the walk after each
		 * delete, which would otherwise lose its place */
		bool again = true;

		while (again && !err) {
			__u8 *prev = NULL;

			again = false;
			while (bpf_map_get_next_key(sn->fd, prev, key) == 0) {
				if (!snap_has(sn, key)) {
					if (bpf_map_delete_elem(sn->fd, key))
						err = -errno;
					again = !err;
					break;
				}
				prev = key;
			}
		}
	}
	for (__u32 i = 0; !err && i < sn->n; i++) {
		const __u8 *k = sn->keys + (size_t)i * sn->key_size;
		const __u8 *v = sn->vals + (size_t)i * sn->value_size;

		if (!bpf_map_lookup_elem(sn->fd, k, cur) && !memcmp(cur, v, sn->value_size))
			continue;
		if (bpf_map_update_elem(sn->fd, k, v, BPF_ANY))
			err = -errno;
	}
	free(cur);
	return err;
}

/* Every map a row can touch but the rule tries (the registry owns those;
 * a row that changes them marks the state dirty). The counters are not
 * state: rows compare them before and after. */
static size_t state_fds(int *fds)
{
	const int all[] = {
		t.dp->dispatch_fd,   t.dp->learned_fd,	     t.dp->conns_fd,
		t.dp->local_fd,	     t.dp->local_ports_fd,   t.dp->doh_fd,
		t.dp->config_fd,     t.dp->budget_fd,	     t.dp->meta_fd,
		t.dp->pod_flows_fd,  t.dp->frags_fd,	     t.dp->ports_fd,
		t.dp->dns_nat_fd,    t.dp->l2_ports_fd,	     t.dp->l2_macs_fd,
		t.dp->l2_lladdrs_fd, t.dp->conn_count_fd,    t.dp->learned_ports_fd,
		t.dp->names_fd,	     t.dp->learned_names_fd, t.dp->l7_ports_fd,
		t.dp->l7_nat_fd,     t.dp->l7_count_fd,
	};
	_Static_assert(sizeof(all) / sizeof(all[0]) <= NSNAP, "NSNAP too small");

	memcpy(fds, all, sizeof(all));
	return sizeof(all) / sizeof(all[0]);
}

/* Empties one map: arrays are zeroed, an array of maps loses its inner
 * maps, the rest lose every key. */
static int map_clear(int fd)
{
	struct snap empty = {};
	struct bpf_map_info info = {};
	__u32 len = sizeof(info), inner;
	int err;

	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return -errno;
	if (info.type == BPF_MAP_TYPE_ARRAY_OF_MAPS) {
		/* the slots keep their tries (written once, at the first
		 * start): the tries lose every key */
		for (__u32 k = 0; k < info.max_entries; k++) {
			int ifd;

			if (bpf_map_lookup_elem(fd, &k, &inner))
				continue;
			ifd = bpf_map_get_fd_by_id(inner);
			if (ifd < 0)
				return -errno;
			err = map_clear(ifd);
			close(ifd);
			if (err)
				return err;
		}
		return 0;
	}
	err = snap_take(&empty, fd);
	if (!err && is_array(empty.type))
		memset(empty.vals, 0, (size_t)empty.n * empty.value_size);
	else
		empty.n = 0;
	if (!err)
		err = snap_restore(&empty);
	free(empty.keys);
	free(empty.vals);
	return err;
}

/* Every group of rows starts from the same data path, the fixture's, so
 * a row's result never depends on what the rows before it did. After a
 * group that changed a subject (t.dirty), each map is emptied and the
 * fixture put back through the control plane; otherwise the snapshot of
 * the fixture's maps is put back. The programs stay loaded. */
int state_reset(void)
{
	int fds[NSNAP], err;
	size_t n = state_fds(fds);

	events_drain();
	t.swap_id = 0;
	t.cfg = t.base_cfg; /* what config_flags() and the scenarios start from */
	/* layer-7 pinning off: fw_dp_config_set writes what this sets */
	err = fw_dp_l7_apply(t.dp, NULL);
	if (err) {
		printf("can't turn layer-7 pinning off: %s\n", strerror(-err));
		return err;
	}
	if (!t.dirty && nsnaps == n) {
		for (size_t i = 0; i < nsnaps; i++) {
			err = snap_restore(&snaps[i]);
			if (err) {
				printf("can't restore map fd %d: %s\n", snaps[i].fd,
				       strerror(-err));
				return err;
			}
		}
		return 0;
	}

	snaps_free();
	fw_reg_free(&t.reg);
	for (size_t i = 0; i < n; i++) {
		err = map_clear(fds[i]);
		if (err) {
			printf("can't empty map fd %d: %s\n", fds[i], strerror(-err));
			return err;
		}
	}
	err = map_clear(t.dp->rules_fd);
	if (!err)
		err = fixture_populate();
	for (size_t i = 0; !err && i < n; i++, nsnaps++)
		err = snap_take(&snaps[i], fds[i]);
	if (err) {
		printf("can't reset the data path: %s\n", strerror(-err));
		return err;
	}
	t.dirty = false;
	return 0;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: bpf_verdicts [--shuffle SEED | --only ROW]\n"
		"  --shuffle SEED  run the table's groups of rows in an order drawn from SEED\n"
		"  --only ROW      run only the group holding row ROW (1-based), no scenarios\n");
}

/* A small xorshift: the same SEED gives the same order on every libc. */
static __u64 shuffle_next(__u64 *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* ---- the table: one file of rows per feature ---------------------------- */

/* The feature files in the order an unshuffled run takes them; a group of
 * rows never crosses from one file into the next. */
static const struct {
	const char *file;
	const struct row *rows;
	const size_t *n;
} tables[] = {
	{"rows/policy.c", policy_rows, &policy_rows_n},
	{"rows/dispatch.c", dispatch_rows, &dispatch_rows_n},
	{"rows/podlocal.c", podlocal_rows, &podlocal_rows_n},
	{"rows/dns.c", dns_rows, &dns_rows_n},
	{"rows/headers.c", header_rows, &header_rows_n},
	{"rows/l2.c", l2_rows, &l2_rows_n},
	{"rows/nd.c", nd_rows, &nd_rows_n},
	{"rows/fragments.c", fragment_rows, &fragment_rows_n},
	{"rows/changes.c", change_rows, &change_rows_n},
	{"rows/l7.c", l7_rows, &l7_rows_n},
};

/* Every row of every table, numbered from 1 across them (--only ROW),
 * and the first row of each group, in the order they run. */
static const struct row **rows;
static size_t nrows, *group;

static int rows_gather(void)
{
	size_t n = 0;

	for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++) {
		if (*tables[i].n && tables[i].rows[0].then) {
			fprintf(stderr, "test bug: the first row of %s continues no group\n",
				tables[i].file);
			return -1;
		}
		n += *tables[i].n;
	}
	rows = calloc(n, sizeof(*rows));
	if (!rows)
		return -1;
	for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++)
		for (size_t j = 0; j < *tables[i].n; j++)
			rows[nrows++] = &tables[i].rows[j];
	return 0;
}

/* Runs the group of rows that starts at rows[first], on a fresh state. */
static void run_group(size_t first)
{
	if (state_reset()) {
		printf("FAIL %s\n  state reset failed\n", rows[first]->desc);
		failed++;
		return;
	}
	for (size_t i = first; i < nrows && (i == first || rows[i]->then); i++) {
		if (run_row(rows[i], RUN_EVENTS)) {
			passed++;
		} else {
			failed++;
			printf("  (row %zu: bpf_verdicts --only %zu)\n", i + 1, i + 1);
		}
	}
}

int main(int argc, char **argv)
{
	size_t ngroups = 0, only = 0;
	bool shuffle = false;
	__u64 seed = 0;
	char *end;

	if (rows_gather())
		return 2;
	for (int i = 1; i < argc; i++) {
		bool has_value = i + 1 < argc;
		unsigned long long v = 0;

		if (has_value) {
			errno = 0;
			v = strtoull(argv[i + 1], &end, 10);
			has_value = !errno && *argv[i + 1] && !*end;
		}
		if (!strcmp(argv[i], "--shuffle") && has_value) {
			shuffle = true;
			seed = v;
		} else if (!strcmp(argv[i], "--only") && has_value && v >= 1 && v <= nrows) {
			only = v;
		} else {
			usage();
			return 2;
		}
		i++;
	}
	if (shuffle && only) {
		usage();
		return 2;
	}

	if (geteuid() != 0) {
		fprintf(stderr, "bpf_verdicts needs root (BPF programs, bpffs, a dummy link)\n");
		return 77;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	fw_log_level = FW_LOG_WARN;
	atexit(cleanup);
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGHUP, on_signal);
	signal(SIGPIPE, on_signal); /* its output piped into head(1) */
	signal(SIGABRT, on_crash);
	signal(SIGSEGV, on_crash);
	pin_cpu();

	if (dummy_create() || fixture_setup()) {
		fprintf(stderr, "fixture failed\n");
		printf("0 passed, 1 failed\n");
		return 1;
	}

	group = calloc(nrows, sizeof(*group));
	if (!group) {
		printf("0 passed, 1 failed\n");
		return 1;
	}
	for (size_t i = 0; i < nrows; i++)
		if (!rows[i]->then)
			group[ngroups++] = i;
	printf("table: %zu rows in %zu groups, from %zu files of rows\n", nrows, ngroups,
	       sizeof(tables) / sizeof(tables[0]));

	if (only) {
		size_t g = only - 1;

		while (rows[g]->then)
			g--;
		run_group(g);
		printf("%d passed, %d failed\n", passed, failed);
		return failed ? 1 : 0;
	}

	if (shuffle) {
		__u64 s = seed ? seed : 0x9e3779b97f4a7c15ull; /* xorshift never leaves 0 */

		printf("shuffled with seed %llu\n", (unsigned long long)seed);
		for (size_t i = ngroups - 1; i > 0; i--) {
			size_t j = shuffle_next(&s) % (i + 1), tmp = group[i];

			group[i] = group[j];
			group[j] = tmp;
		}
	}
	for (size_t g = 0; g < ngroups; g++)
		run_group(group[g]);

	/* every row a user can put to fastwall explain was put to it (a
	 * disagreement failed its row); the table holds dozens of them */
	result(explained >= EXPLAIN_MIN_ROWS && !explain_disagreed,
	       "fastwall explain agrees with the program on every row it can express",
	       "%d rows explained (want at least %d), %d disagreed", explained, EXPLAIN_MIN_ROWS,
	       explain_disagreed);

	printf("explain: %d rows of the table cross-checked\n", explained);
	/* the scenarios set up what they need on the fixture alone */
	if (state_reset()) {
		fprintf(stderr, "fixture failed\n");
		printf("%d passed, %d failed\n", passed, failed + 1);
		return 1;
	}
	explain_no_iface();
	/* the port guard's rows, through its XDP and TC programs */
	guard_rows_run(t.dp, &passed, &failed);
	/* the bandwidth programs' rows, through fw_bw_edt and fw_bw_police */
	bw_rows_run(t.dp, &passed, &failed);
	scenario_event_rate_limit();
	scenario_allow_sample();
	scenario_rule_forms();
	scenario_range_edges();
	scenario_subject_rows();
	scenario_events_lost();
	scenario_connections();
	scenario_conn_quota();
	scenario_l7_flood();
	scenario_learned_ports();
	scenario_learned_ports_share();
	scenario_learned_leases();
	scenario_l2_ports();
	scenario_reap_restart(); /* last: it restarts the registry */

	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
