// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The data plane's verdict table, Katran-style: every row is a packet, the
 * program it goes through, and the verdict and reason fastwall must give
 * it. State is set up through the real control-plane API (datapath.h,
 * subjects.h, policy.h) on maps pinned under a private bpffs directory;
 * each row then runs through bpf_prog_test_run_opts and is checked on what
 * a user sees: the TC verdict, the reason counter (exactly +1, no other
 * reason moved), the subject's counter, and the deny event in the ring
 * buffer. A few scenarios (event rate limiting) do not fit one packet per
 * row and follow the table. Needs root; prints "N passed, N failed".
 *
 * No row leans on the rows before it: each group of rows (a row, and the
 * rows after it marked .then, such as the later fragments of a datagram)
 * starts from the fixture's data path and sets up the config it needs
 * itself. --shuffle SEED runs the groups in another order, --only ROW
 * runs the group holding one row. */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/pkt_cls.h>

#include "common/addr.h"
#include "datapath/datapath.h"
#include "common/log.h"
#include "pkt.h"
#include "guard_rows.h"
#include "datapath/explain.h"
#include "datapath/l2bind.h"
#include "datapath/dispatch.h"
#include "datapath/leases.h"
#include "datapath/reasons.h"
#include "datapath/rules.h"
#include "datapath/stats.h"
#include "dns/learn.h"
#include "subjects/registry.h"

#define NSEC_PER_SEC 1000000000ull
#define DUMMY_IF     "@dummy"		 /* stands for the test's own dummy interface */
#define DUMMY_MAC    "02:00:00:00:00:0d" /* the source MAC of frames on the dummy */

/* link layer: frames on loopback come from PKT_MAC_SRC (the port binds it
 * on first sight), on the dummy from DUMMY_MAC (bound from the "link") */
#define LO_LL	      "fe80::ff:fe00:2"		  /* EUI-64 of PKT_MAC_SRC */
#define LO_LL2	      "fe80::1234:5678:9abc:def0" /* stable-privacy style, learned */
#define DUMMY_LL      "fe80::ff:fe00:d"		  /* EUI-64 of DUMMY_MAC */
#define POD_MAC	      "02:fa:57:00:00:01"	  /* the bridge's, reserved for the pod */
#define GW_LL	      "fe80::fa:57ff:fe00:1"	  /* the bridge's link-local, reserved */
#define POD6	      "fd00:42:ff::1"		  /* another of the pod's addresses, reserved */
#define STRANGER_MAC  "02:00:00:00:00:99"
#define DENIED6	      "2001:db8:dead::2" /* alpha: in its deny 2001:db8:dead::/48 */
#define SOLICITED_GW6 "ff02::1:ff00:1"	 /* solicited-node group of fd00:42::1 */

/* ---- who is who ------------------------------------------------------ */

/* sandboxes (private nets) */
#define ALPHA4	     "10.42.0.10"
#define ALPHA6	     "fd00:42::10"
#define ALPHA_GW4    "10.42.0.1"
#define ALPHA_GW6    "fd00:42::1"
#define ALPHA_SIB4   "10.42.0.20"
#define ALPHA_SIB6   "fd00:42::20"
#define BETA4	     "10.42.1.10"
#define BETA6	     "fd00:42:1::10"
#define GAMMA4	     "10.42.2.10"
#define DELTA4	     "10.42.3.10"
#define DELTA6	     "fd00:42:3::10"
#define FLOOD_A4     "10.42.4.10"
#define FLOOD_B4     "10.42.5.10"
#define SWAP4	     "10.42.6.10"
#define SWAP_SIB4    "10.42.6.20"
#define SIGMA4	     "10.42.30.10"
#define SIGMA_SIB4   "10.42.30.200" /* a sibling once sigma's private CIDR grows */
#define SIGMA_SIB4_2 "10.42.30.201" /* sigma's gateway once moved */
#define SIGMA6	     "fd00:42:30::10"
#define SIGMA_SIB6   "fd00:42:30:0:8000::1"
#define EPS4	     "10.42.7.10"
#define ZETA4	     "10.42.8.10"
#define KAPPA4	     "10.42.9.10"
#define LAMBDA4	     "10.42.10.10"
#define MU4	     "10.42.11.10"
#define STRANGER4    "10.42.9.9"
#define STRANGER6    "fd00:42:9::9"

/* pod-local addresses besides the gateways (fw_dp_local_set) */
#define LOCAL4	       "169.254.20.10"
#define LOCAL6	       "fd00:53::53"
#define LOCAL_TCP_PORT 8080
#define DNS_PORT       15353 /* the proxy's */

/* the internet, documentation ranges only */
#define OK4	      "192.0.2.10"	 /* alpha: allow 192.0.2.0/25 */
#define OK6	      "2001:db8:1::10"	 /* alpha: allow 2001:db8:1::/48 */
#define CACHED4	      "192.0.2.77"	 /* alpha: allow 192.0.2.0/25; pod-local later */
#define DOH4	      "192.0.2.53"	 /* in the allow CIDR and on the DoH list */
#define DOH6	      "2001:db8:1::53"	 /* in the allow CIDR and on the DoH list */
#define BAD4	      "203.0.113.5"	 /* alpha, beta: deny 203.0.113.0/24 */
#define BAD6	      "2001:db8:dead::5" /* alpha, beta: deny 2001:db8:dead::/48 */
#define NOWHERE4      "192.0.2.250"	 /* no rule of alpha covers it */
#define NOWHERE6      "2001:db8:ffff::1" /* no rule of alpha covers it */
#define LEARNED4      "192.0.2.200"	 /* alpha, live lease */
#define LEARNED6      "2001:db8:99::1"	 /* alpha, live lease */
#define EXPIRED4      "192.0.2.201"	 /* alpha, lease ran out */
#define EXPIRED6      "2001:db8:99::2"	 /* alpha, lease ran out */
#define BETAS4	      "192.0.2.202"	 /* learned by beta, not by alpha */
#define LEARNED_BAD4  "203.0.113.9"	 /* learned by alpha inside its deny CIDR */
#define SWAP_B4	      "198.51.100.10"	 /* allowed only by the second swap policy */
#define SWAP_LEARNED4 "192.0.2.210"
#define NU4	      "10.42.12.10" /* domain rules, for the learned-lease scenario */
#define OMI4	      "10.42.13.10" /* port 80 only, both families: fragment attacks */
#define OMI6	      "fd00:42:13::10"
#define TAU4	      "10.42.16.10" /* the source slot: bound, changed, rebound */

struct subject_def {
	const char *name;
	const char *addrs[4];
	const char *gateway[FW_FAM_MAX];
	const char *private_net[FW_FAM_MAX];
	const char *ifname; /* NULL = unbound; DUMMY_IF = the test's interface */
	__u8 state;	    /* 0 = active */
	const char *default_action;
	const char *rules[72]; /* "allow 192.0.2.0/25", in policy order */
	const char *fence;     /* an actions-protocol subject's attachment; NULL: static */
};

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

/* kappa after a policy swap: port 22 no longer denied, 443 -> 8443 */
static const struct subject_def kappa_v2 = {
	.name = "kappa",
	.addrs = {KAPPA4},
	.default_action = "deny",
	.rules =
		{
			"allow 192.0.2.0/25 ports=8443",
			"allow 198.51.100.0/24",
			"allow 203.0.113.0/24 ports=53,443",
			"deny 203.0.113.7 ports=443",
		},
};

/* mu: three whole-set changes; the third reuses the trie of the first */
static const struct subject_def mu_v1 = {
	.name = "mu",
	.addrs = {MU4},
	.default_action = "deny",
	.rules = {"allow 192.0.2.0/25", "allow 198.51.100.0/26", "deny 192.0.2.66"},
};

static const struct subject_def mu_v2 = {
	.name = "mu",
	.addrs = {MU4},
	.default_action = "deny",
	.rules = {"allow 203.0.113.0/24", "allow 198.51.100.64/26"},
};

static const struct subject_def mu_v3 = {
	.name = "mu",
	.addrs = {MU4},
	.default_action = "deny",
	.rules = {"allow 192.0.2.128/25", "allow 198.51.100.128/26", "deny 192.0.2.130"},
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

/* the atomic-swap group: same name, policy grows, then the binding changes */
static const struct subject_def swap_v1 = {
	.name = "swap",
	.addrs = {SWAP4},
	.default_action = "deny",
	.rules = {"allow 192.0.2.0/25"},
};

static const struct subject_def swap_v2 = {
	.name = "swap",
	.addrs = {SWAP4},
	.default_action = "deny",
	.rules = {"allow 192.0.2.0/25", "allow 198.51.100.0/25"},
};

static const struct subject_def swap_v3 = {
	.name = "swap",
	.addrs = {SWAP4},
	.private_net = {"10.42.6.0/24"},
	.default_action = "deny",
	.rules = {"allow 192.0.2.0/25", "allow 198.51.100.0/25"},
};

/* An actions-protocol subject changed in place (same fence, same id): a
 * destination allowed, and cached as such, before the change is a
 * sibling (its private CIDR grown) or pod-local (a gateway set on it or
 * moved onto it) after it. The setups below vary one field of this. */
static const struct subject_def sigma_base = {
	.name = "sigma",
	.addrs = {SIGMA4, SIGMA6},
	.private_net = {"10.42.30.0/25", "fd00:42:30::/65"},
	.default_action = "deny",
	.rules = {"allow 10.42.30.0/24", "allow fd00:42:30::/64"},
	.fence = "sigma-attachment",
};

/* ---- test state ------------------------------------------------------ */

#define MAX_EVENTS 64

static struct {
	struct fw_dp *dp;
	struct fw_registry reg;
	struct ring_buffer *rb;
	struct fw_config cfg;
	struct fw_config base_cfg; /* the fixture's */
	char pin_root[64];
	bool pinned;
	char dummy[IF_NAMESIZE];
	int dummy_ifindex;
	char port2[IF_NAMESIZE]; /* a second port, for the l2 scenario */
	int port2_ifindex;
	__u32 swap_id;
	struct subject_def sigma; /* as the sigma setups left it */
	bool dirty;		  /* a subject changed since the fixture was put in */
	struct fw_event ev[MAX_EVENTS];
	size_t nev, ev_lost;
} t;

static struct fw_ip ip_of(const char *text)
{
	struct fw_ip ip;

	if (fw_addr_parse(text, &ip, NULL)) {
		fprintf(stderr, "test bug: bad address %s\n", text);
		exit(2);
	}
	return ip;
}

static __u32 id_of(const char *name)
{
	struct fw_entry *e = fw_reg_find(&t.reg, name);

	return e ? e->id : 0;
}

static int subject_put(const struct subject_def *d)
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

static int learn(const char *subject, const char *addr, long ttl_s)
{
	struct fw_ip ip = ip_of(addr);
	__u32 id = id_of(subject);
	int err;

	if (!id) {
		printf("can't learn %s: no subject %s\n", addr, subject);
		return -ENOENT;
	}
	err = fw_dp_learned_put(t.dp, id, &ip, fw_now_ns() + ttl_s * (long long)NSEC_PER_SEC);
	if (err)
		printf("can't learn %s for %s: %s\n", addr, subject, strerror(-err));
	return err;
}

/* ---- row preconditions (0 or -1; they say what went wrong) ------------ */

static int config_flags(__u32 flags)
{
	t.cfg.flags = flags;
	return fw_dp_config_set(t.dp, &t.cfg) ? -1 : 0;
}

static int doh_list(void)
{
	return config_flags(FW_CF_DOH_LIST);
}

static int doh_strict(void)
{
	return config_flags(FW_CF_DOH_STRICT);
}

static int local_full(void)
{
	return config_flags(FW_CF_LOCAL_FULL);
}

static int doh_off(void)
{
	return config_flags(0);
}

static int dns_proxy_all(void)
{
	return config_flags(FW_CF_DNS_PROXY | FW_CF_DNS_ALL);
}

static int dns_proxy_gateway_only(void)
{
	return config_flags(FW_CF_DNS_PROXY);
}

/* An active subject whose rule set is gone must fail closed. */
static int epsilon_rules_cleared(void)
{
	t.dirty = true;
	return fw_dp_rules_clear(t.dp, id_of("epsilon")) ? -1 : 0;
}

static int swap_first_policy(void)
{
	if (subject_put(&swap_v1))
		return -1;
	t.swap_id = id_of("swap");
	return learn("swap", SWAP_LEARNED4, 60);
}

/* The id of the rule trie in subject id's slot of fastwall_rules. */
static __u32 trie_of(__u32 id)
{
	__u32 inner = 0;

	bpf_map_lookup_elem(t.dp->rules_fd, &id, &inner);
	return inner;
}

static int swap_same_binding(void)
{
	__u32 before = trie_of(t.swap_id);

	if (subject_put(&swap_v2))
		return -1;
	/* one rule added: one entry changes, so the live trie is edited in
	 * place rather than replaced (no outer-map swap) */
	if (trie_of(t.swap_id) != before) {
		printf("a one-entry change replaced the trie %u -> %u\n", before,
		       trie_of(t.swap_id));
		return -1;
	}
	if (id_of("swap") != t.swap_id) {
		printf("policy swap with the same binding changed the id %u -> %u\n", t.swap_id,
		       id_of("swap"));
		return -1;
	}
	return 0;
}

static int sigma_first(void)
{
	t.sigma = sigma_base;
	if (subject_put(&t.sigma))
		return -1;
	t.swap_id = id_of("sigma");
	return 0;
}

/* Sets one field of sigma (one of t.sigma's) to v and puts it under the
 * same fence: the id must stay. */
static int sigma_change(const char **field, const char *v)
{
	*field = v;
	if (subject_put(&t.sigma))
		return -1;
	if (id_of("sigma") != t.swap_id) {
		printf("a binding change under the same fence changed the id %u -> %u\n", t.swap_id,
		       id_of("sigma"));
		return -1;
	}
	return 0;
}

static int sigma_grown4(void)
{
	return sigma_change(&t.sigma.private_net[FW_FAM_V4], "10.42.30.0/24");
}

static int sigma_grown6(void)
{
	return sigma_change(&t.sigma.private_net[FW_FAM_V6], "fd00:42:30::/64");
}

static int sigma_gateway(void)
{
	return sigma_change(&t.sigma.gateway[FW_FAM_V4], SIGMA_SIB4);
}

static int sigma_gateway_moved(void)
{
	return sigma_change(&t.sigma.gateway[FW_FAM_V4], SIGMA_SIB4_2);
}

/* CACHED4 joins the pod-local addresses */
static int local_cached(void)
{
	struct fw_ip local[] = {ip_of(LOCAL4), ip_of(LOCAL6), ip_of(CACHED4)};
	struct fw_port_key ports[] = {{.proto = IPPROTO_TCP, .port = htons(LOCAL_TCP_PORT)}};

	return fw_dp_local_set(t.dp, local, 3, ports, 1) ? -1 : 0;
}

static int swap_rebind(void)
{
	if (subject_put(&swap_v3))
		return -1;
	if (id_of("swap") == t.swap_id) {
		printf("rebind kept the id %u\n", t.swap_id);
		return -1;
	}
	return 0;
}

/* An actions-protocol subject whose dispatch value changes in place
 * (state, binding), then whose address passes to another subject: each
 * change must end this CPU's slot of the address (fastwall_src_slots),
 * which answers the packet without the dispatch value. */
static const struct subject_def tau_base = {
	.name = "tau",
	.addrs = {TAU4},
	.default_action = "deny",
	.rules = {"allow 192.0.2.0/25"},
	.fence = "tau-1",
};

static const struct subject_def upsilon = {
	.name = "upsilon",
	.addrs = {TAU4},
	.default_action = "allow",
	.fence = "upsilon-1",
};

static struct subject_def tau;

static __be32 v4_of(const char *text)
{
	struct fw_ip ip = ip_of(text);

	return FW_IP_W(&ip)[3];
}

/* this CPU's slot of TAU4 (the test runs pinned to one CPU) */
static int tau_slot(int fd, __u32 *key, struct fw_src_slot *out)
{
	int cpu = sched_getcpu();

	*key = FW_SRC_KEY(cpu < 0 ? 0 : (__u32)cpu, FW_SRC_HASH(ntohl(v4_of(TAU4))));
	if (fd < 0 || bpf_map_lookup_elem(fd, key, out)) {
		printf("can't read the source slot of %s: %s\n", TAU4, strerror(errno));
		return -1;
	}
	return 0;
}

static int tau_change(void)
{
	__u32 id = id_of("tau");

	if (subject_put(&tau))
		return -1;
	if (id && id_of("tau") != id) {
		printf("a change under the same fence changed tau's id %u -> %u\n", id,
		       id_of("tau"));
		return -1;
	}
	return 0;
}

static int tau_first(void)
{
	tau = tau_base;
	return tau_change();
}

/* the first packet filled the slot with tau's answer under the live
 * epoch */
static int tau_slot_filled(void)
{
	struct fw_src_slot sl;
	__u64 epoch = 0;
	__u32 key, zero = 0;

	if (tau_slot(fw_dp_src_slots_fd(t.dp), &key, &sl) ||
	    bpf_map_lookup_elem(t.dp->rules_epoch_fd, &zero, &epoch))
		return -1;
	if (sl.id != id_of("tau") || sl.src != v4_of(TAU4) || sl.dst != v4_of(OK4) ||
	    sl.epoch != (__u32)epoch || (sl.seq & 1) || sl.rule.action != FW_ACTION_ALLOW) {
		printf("source slot: id %u (tau %u) src %08x dst %08x epoch %u (live %u) seq %u "
		       "action %u\n",
		       sl.id, id_of("tau"), ntohl(sl.src), ntohl(sl.dst), sl.epoch, (__u32)epoch,
		       sl.seq, (unsigned int)sl.rule.action);
		return -1;
	}
	return 0;
}

/* what the slot says is what the packet gets: a deny written into it
 * (by the test, under the live epoch) drops the next packet */
static int tau_slot_forged(void)
{
	struct fw_src_slot sl;
	__u32 key;
	int fd = fw_dp_src_slots_fd(t.dp);

	if (tau_slot(fd, &key, &sl))
		return -1;
	sl.rule.action = FW_ACTION_DENY;
	sl.rule.is_default = 0;
	sl.rule.portset = 0;
	return bpf_map_update_elem(fd, &key, &sl, BPF_EXIST) ? -1 : 0;
}

static int tau_epoch_raised(void)
{
	return fw_dp_rules_epoch_bump(t.dp) ? -1 : 0;
}

static int tau_denying(void)
{
	tau.state = FW_STATE_DENYING;
	return tau_change();
}

static int tau_active(void)
{
	tau.state = 0;
	return tau_change();
}

static int tau_bound(void)
{
	tau.ifname = DUMMY_IF;
	return tau_change();
}

static int tau_unbound_port(void)
{
	tau.ifname = NULL;
	return tau_change();
}

/* tau leaves and upsilon takes its address (a new id, another policy) */
static int tau_rebound(void)
{
	struct fw_entry *e = fw_reg_get(&t.reg, "tau", false);
	__u32 old = id_of("tau");

	if (!e) {
		printf("no subject tau to unbind\n");
		return -1;
	}
	fw_reg_unbind(&t.reg, e);
	fw_reg_put(&t.reg, e);
	if (subject_put(&upsilon))
		return -1;
	if (id_of("upsilon") == old) {
		printf("upsilon took tau's id %u\n", old);
		return -1;
	}
	return 0;
}

static int tau_gone(void)
{
	struct fw_entry *e = fw_reg_get(&t.reg, "upsilon", false);

	if (!e) {
		printf("no subject upsilon to unbind\n");
		return -1;
	}
	fw_reg_unbind(&t.reg, e);
	fw_reg_put(&t.reg, e);
	return 0;
}

/* ---- the table --------------------------------------------------------- */

enum prog {
	INGRESS = 0,
	EGRESS, /* records pod-opened flows; always TC_ACT_OK, counts nothing */
};

static int kappa_learned(void)
{
	return learn("kappa", "192.0.2.50", 60);
}

/* Swaps kappa's policy and checks that fastwall_ports holds exactly the
 * live generation's exceptions of kappa: none of the old set is left. */
static int kappa_swapped(void)
{
	struct fw_port_rule_key k, *prev = NULL;
	struct fw_entry *e;
	size_t live = 0, stale = 0;
	__u32 id, gen;

	if (subject_put(&kappa_v2))
		return -1;
	/* the old generation's exceptions go one grace period later */
	fw_dp_rules_settle(t.dp);
	e = fw_reg_find(&t.reg, "kappa");
	id = e ? e->id : 0;
	gen = e ? e->meta.port_state & FW_PORTSET_GEN : 0;
	while (bpf_map_get_next_key(t.dp->ports_fd, prev, &k) == 0) {
		prev = &k;
		if (k.subject != id)
			continue;
		if ((k.portset & FW_PORTSET_GEN) == gen)
			live++;
		else
			stale++;
	}
	/* 203.0.113.0/24 {53,443 allow} and 203.0.113.7 {53 allow, 443 deny}
	 * and 192.0.2.0/25 {8443 allow}: 5 exceptions */
	if (stale || live != 5) {
		printf("kappa's port exceptions after the swap: %zu live (want 5), %zu stale\n",
		       live, stale);
		return -1;
	}
	return 0;
}

/* mu v1 -> v2 -> v3: every swap writes a new generation into the trie
 * the slot has held since the first start; the slot itself never changes. */
static int mu_three_swaps(void)
{
	__u32 id, t1, t2, t3;

	if (subject_put(&mu_v1))
		return -1;
	id = id_of("mu");
	t1 = trie_of(id);
	if (subject_put(&mu_v2))
		return -1;
	t2 = trie_of(id);
	if (subject_put(&mu_v3))
		return -1;
	t3 = trie_of(id);
	if (!t1 || t2 != t1 || t3 != t1) {
		printf("mu's tries: v1 %u, v2 %u, v3 %u (want one trie throughout)\n", t1, t2, t3);
		return -1;
	}
	return 0;
}

static struct fw_mac mac_of(const char *text)
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

/* What fastwalld does at attach for a veth: the port bound to its peer's
 * MAC before the sandbox sends anything. */
static int dummy_bound_from_link(void)
{
	struct fw_mac host = mac_of("02:00:00:00:0d:0d"), peer = mac_of(DUMMY_MAC);

	return fw_l2_bind(t.dp, t.dummy_ifindex, host.b, peer.b) ? -1 : 0;
}

static int run_frame(int prog_fd, const struct pkt_spec *spec);

/* What the loopback port sees first: a frame from its sandbox's MAC,
 * which binds the port to it on first sight. */
static int lo_bound_on_sight(void)
{
	const struct pkt_spec first = TCP4(ALPHA4, OK4, 40000, 80);

	return run_frame(t.dp->from_sandbox_fd, &first) == TC_ACT_OK ? 0 : -1;
}

/* A query that went to the proxy (its record is kept), then the proxy
 * turned off: the answers are left alone all the same. */
static int dns_record_then_proxy_off(void)
{
	const struct pkt_spec query =
		UDP4(ALPHA4, ALPHA_GW4, 40001, 53, .payload = 30, .csum = true);

	if (dns_proxy_all() || run_frame(t.dp->from_sandbox_fd, &query) != TC_ACT_OK)
		return -1;
	return config_flags(0);
}

struct row {
	const char *desc;
	int (*setup)(void); /* precondition, through the control plane */
	bool then;	    /* runs on the state the row before left: one group */
	enum prog prog;
	bool on_dummy; /* ctx ifindex = the dummy interface, else loopback */
	bool on_port2; /* ctx ifindex = the second test interface (l2 scenario) */
	struct pkt_spec pkt;
	int verdict;		    /* TC_ACT_OK or TC_ACT_SHOT */
	__u32 reason;		    /* enum fw_reason */
	const char *subject;	    /* whose counter moves; NULL = subject 0 */
	const struct pkt_spec *out; /* the frame expected out; NULL = unchanged */
	__u8 ev_proto;		    /* the deny event's protocol, if not pkt.proto */
	bool forged;		    /* decided by a cache the test wrote: explain can't agree */
};

#define PASS(r)		 .verdict = TC_ACT_OK, .reason = (r)
#define DROP(r)		 .verdict = TC_ACT_SHOT, .reason = (r)
#define OUT(spec)	 .out = &(const struct pkt_spec)spec
#define FRAG_FIRST(i)	 .frag = {.on = true, .more = true, .offset = 0, .id = (i)}
#define FRAG_LATER(i, o) .frag = {.on = true, .more = true, .offset = (o), .id = (i)}
#define FRAG_LAST(i, o)	 .frag = {.on = true, .more = false, .offset = (o), .id = (i)}

static const struct row rows[] = {
	/* policy CIDRs: alpha is default deny */
	{"v4 udp to allow cidr", .pkt = UDP4(ALPHA4, OK4, 40000, 5000), PASS(FW_PASS_ALLOW_CIDR),
	 .subject = "alpha"},
	{"v4 tcp syn to allow cidr", .pkt = TCP4(ALPHA4, OK4, 40000, 80), PASS(FW_PASS_ALLOW_CIDR),
	 .subject = "alpha"},
	{"v6 tcp to allow cidr", .pkt = TCP6(ALPHA6, OK6, 40000, 80), PASS(FW_PASS_ALLOW_CIDR),
	 .subject = "alpha"},
	{"v6 udp to allow cidr", .pkt = UDP6(ALPHA6, OK6, 40000, 5000), PASS(FW_PASS_ALLOW_CIDR),
	 .subject = "alpha"},
	{"v4 tcp to deny cidr", .pkt = TCP4(ALPHA4, BAD4, 40000, 80), DROP(FW_DROP_DENY_CIDR),
	 .subject = "alpha"},
	{"v6 udp to deny cidr", .pkt = UDP6(ALPHA6, BAD6, 40000, 5000), DROP(FW_DROP_DENY_CIDR),
	 .subject = "alpha"},
	{"v4 allow /24: outside the deny /25 passes",
	 .pkt = TCP4(ALPHA4, "198.51.100.10", 40000, 80), PASS(FW_PASS_ALLOW_CIDR),
	 .subject = "alpha"},
	{"v4 allow /24 + deny /25 inside: deny wins",
	 .pkt = TCP4(ALPHA4, "198.51.100.200", 40000, 80), DROP(FW_DROP_DENY_CIDR),
	 .subject = "alpha"},
	{"v6 allow /48: outside the deny /64 passes",
	 .pkt = TCP6(ALPHA6, "2001:db8:a:1::1", 40000, 80), PASS(FW_PASS_ALLOW_CIDR),
	 .subject = "alpha"},
	{"v6 allow /48 + deny /64 inside: deny wins",
	 .pkt = TCP6(ALPHA6, "2001:db8:a:bad::1", 40000, 80), DROP(FW_DROP_DENY_CIDR),
	 .subject = "alpha"},
	{"v4 deny /24 + allow /26 inside: still denied",
	 .pkt = TCP4(ALPHA4, "203.0.113.70", 40000, 80), DROP(FW_DROP_DENY_CIDR),
	 .subject = "alpha"},
	{"v6 deny /48 + allow /64 inside: still denied",
	 .pkt = TCP6(ALPHA6, "2001:db8:dead:1::1", 40000, 80), DROP(FW_DROP_DENY_CIDR),
	 .subject = "alpha"},
	{"v4 no rule matches: default deny", .pkt = TCP4(ALPHA4, NOWHERE4, 40000, 80),
	 DROP(FW_DROP_DEFAULT_DENY), .subject = "alpha"},
	{"v6 no rule matches: default deny", .pkt = UDP6(ALPHA6, NOWHERE6, 40000, 5000),
	 DROP(FW_DROP_DEFAULT_DENY), .subject = "alpha"},
	{"v4 icmp echo to allow cidr", .pkt = ICMP4(ALPHA4, OK4, ICMP4_ECHO),
	 PASS(FW_PASS_ALLOW_CIDR), .subject = "alpha"},
	{"v4 icmp echo to deny cidr", .pkt = ICMP4(ALPHA4, BAD4, ICMP4_ECHO),
	 DROP(FW_DROP_DENY_CIDR), .subject = "alpha"},
	{"v6 icmp echo to allow cidr", .pkt = ICMP6(ALPHA6, OK6, ICMP6_ECHO),
	 PASS(FW_PASS_ALLOW_CIDR), .subject = "alpha"},

	/* beta is default allow */
	{"default-allow subject: v4 unknown dst passes", .pkt = TCP4(BETA4, NOWHERE4, 40000, 80),
	 PASS(FW_PASS_DEFAULT), .subject = "beta"},
	{"default-allow subject: v6 unknown dst passes", .pkt = UDP6(BETA6, NOWHERE6, 40000, 5000),
	 PASS(FW_PASS_DEFAULT), .subject = "beta"},
	{"default-allow subject: v4 deny cidr still drops", .pkt = TCP4(BETA4, BAD4, 40000, 80),
	 DROP(FW_DROP_DENY_CIDR), .subject = "beta"},
	{"default-allow subject: v6 deny cidr still drops", .pkt = TCP6(BETA6, BAD6, 40000, 80),
	 DROP(FW_DROP_DENY_CIDR), .subject = "beta"},

	/* DNS-learned destinations of alpha */
	{"v4 udp to learned address, live lease", .pkt = UDP4(ALPHA4, LEARNED4, 40000, 5000),
	 PASS(FW_PASS_LEARNED), .subject = "alpha"},
	{"v4 tcp to learned address, live lease",
	 .pkt = TCP4(ALPHA4, LEARNED4, 40001, 443, .tcp_flags = TH_ACK), PASS(FW_PASS_LEARNED),
	 .subject = "alpha"},
	{"v6 tcp to learned address, live lease", .pkt = TCP6(ALPHA6, LEARNED6, 40000, 443),
	 PASS(FW_PASS_LEARNED), .subject = "alpha"},
	{"v4 learned address, lease expired", .pkt = TCP4(ALPHA4, EXPIRED4, 40000, 443),
	 DROP(FW_DROP_LEASE_EXPIRED), .subject = "alpha"},
	{"v6 learned address, lease expired", .pkt = TCP6(ALPHA6, EXPIRED6, 40000, 443),
	 DROP(FW_DROP_LEASE_EXPIRED), .subject = "alpha"},
	{"learned address inside a deny cidr: deny wins",
	 .pkt = TCP4(ALPHA4, LEARNED_BAD4, 40000, 443), DROP(FW_DROP_DENY_CIDR),
	 .subject = "alpha"},
	{"address another subject learned does not pass", .pkt = TCP4(ALPHA4, BETAS4, 40000, 443),
	 DROP(FW_DROP_DEFAULT_DENY), .subject = "alpha"},

	/* who is sending */
	{"v4 source of no subject", .pkt = TCP4(STRANGER4, OK4, 40000, 80),
	 DROP(FW_DROP_UNKNOWN_SOURCE)},
	{"v6 source of no subject", .pkt = TCP6(STRANGER6, OK6, 40000, 80),
	 DROP(FW_DROP_UNKNOWN_SOURCE)},
	{"subject still denying", .pkt = TCP4(GAMMA4, OK4, 40000, 80), DROP(FW_DROP_DENYING),
	 .subject = "gamma"},
	/* the first answer is this CPU's cached one when the rule set goes */
	{"default-allow subject passes", .pkt = TCP4(EPS4, OK4, 40000, 80), PASS(FW_PASS_DEFAULT),
	 .subject = "epsilon"},
	{"... and without its rule set fails closed", .then = true, .setup = epsilon_rules_cleared,
	 .pkt = TCP4(EPS4, OK4, 40000, 80), DROP(FW_DROP_NO_POLICY), .subject = "epsilon"},

	/* anti-spoof: delta is bound to the dummy interface */
	{"bound subject seen on another interface (lo)", .pkt = TCP4(DELTA4, OK4, 40000, 80),
	 DROP(FW_DROP_SPOOF), .subject = "delta"},
	{"bound subject v6 seen on another interface (lo)", .pkt = TCP6(DELTA6, OK6, 40000, 80),
	 DROP(FW_DROP_SPOOF), .subject = "delta"},
	{"bound subject on its own interface", .on_dummy = true,
	 .pkt = TCP4(DELTA4, OK4, 40000, 80), PASS(FW_PASS_ALLOW_CIDR), .subject = "delta"},
	{"bound subject v6 on its own interface", .on_dummy = true,
	 .pkt = TCP6(DELTA6, OK6, 40000, 80), PASS(FW_PASS_ALLOW_CIDR), .subject = "delta"},
	{"unbound subject on any interface", .on_dummy = true, .pkt = TCP4(ALPHA4, OK4, 40000, 80),
	 PASS(FW_PASS_ALLOW_CIDR), .subject = "alpha"},
	{"subject bound to a missing interface drops on lo", .pkt = TCP4(ZETA4, OK4, 40000, 80),
	 DROP(FW_DROP_SPOOF), .subject = "zeta"},
	{"subject bound to a missing interface drops on dummy", .on_dummy = true,
	 .pkt = TCP4(ZETA4, OK4, 40000, 80), DROP(FW_DROP_SPOOF), .subject = "zeta"},

	/* the sandbox's own network and the pod */
	{"v4 to a sibling in the private cidr", .pkt = TCP4(ALPHA4, ALPHA_SIB4, 40000, 80),
	 DROP(FW_DROP_SIBLING), .subject = "alpha"},
	{"v6 to a sibling in the private cidr", .pkt = UDP6(ALPHA6, ALPHA_SIB6, 40000, 53),
	 DROP(FW_DROP_SIBLING), .subject = "alpha"},
	{"v4 udp 53 to the gateway", .pkt = UDP4(ALPHA4, ALPHA_GW4, 40000, 53),
	 PASS(FW_PASS_DNS_LOCAL), .subject = "alpha"},
	{"v4 tcp 53 to the gateway", .pkt = TCP4(ALPHA4, ALPHA_GW4, 40000, 53),
	 PASS(FW_PASS_DNS_LOCAL), .subject = "alpha"},
	{"v6 udp 53 to the gateway", .pkt = UDP6(ALPHA6, ALPHA_GW6, 40000, 53),
	 PASS(FW_PASS_DNS_LOCAL), .subject = "alpha"},
	{"v4 tcp 80 to the gateway", .pkt = TCP4(ALPHA4, ALPHA_GW4, 40000, 80),
	 DROP(FW_DROP_POD_LOCAL), .subject = "alpha"},
	{"v6 tcp 80 to the gateway", .pkt = TCP6(ALPHA6, ALPHA_GW6, 40000, 80),
	 DROP(FW_DROP_POD_LOCAL), .subject = "alpha"},
	{"v4 icmp echo to the gateway", .pkt = ICMP4(ALPHA4, ALPHA_GW4, ICMP4_ECHO),
	 DROP(FW_DROP_POD_LOCAL), .subject = "alpha"},
	{"gateway of another subject is no gateway to beta",
	 .pkt = TCP4(BETA4, ALPHA_GW4, 40000, 80), PASS(FW_PASS_DEFAULT), .subject = "beta"},
	{"v4 udp 53 to a configured local address", .pkt = UDP4(ALPHA4, LOCAL4, 40000, 53),
	 PASS(FW_PASS_DNS_LOCAL), .subject = "alpha"},
	{"v4 tcp 80 to a configured local address", .pkt = TCP4(ALPHA4, LOCAL4, 40000, 80),
	 DROP(FW_DROP_POD_LOCAL), .subject = "alpha"},
	{"v4 configured local port on a local address",
	 .pkt = TCP4(ALPHA4, LOCAL4, 40000, LOCAL_TCP_PORT), PASS(FW_PASS_POD_LOCAL),
	 .subject = "alpha"},
	{"v6 configured local port on a local address",
	 .pkt = TCP6(ALPHA6, LOCAL6, 40000, LOCAL_TCP_PORT), PASS(FW_PASS_POD_LOCAL),
	 .subject = "alpha"},
	{"v4 configured local port on the gateway",
	 .pkt = TCP4(ALPHA4, ALPHA_GW4, 40000, LOCAL_TCP_PORT), PASS(FW_PASS_POD_LOCAL),
	 .subject = "alpha"},
	{"local port is per protocol: udp 8080 drops",
	 .pkt = UDP4(ALPHA4, ALPHA_GW4, 40000, LOCAL_TCP_PORT), DROP(FW_DROP_POD_LOCAL),
	 .subject = "alpha"},
	{"default-allow subject to a local address: pod-local still drops",
	 .pkt = TCP4(BETA4, LOCAL4, 40000, 80), DROP(FW_DROP_POD_LOCAL), .subject = "beta"},

	/* flows the pod opens into a sandbox */
	{"egress: pod (gateway) opens tcp to alpha:8000", .prog = EGRESS,
	 .pkt = TCP4(ALPHA_GW4, ALPHA4, 43210, 8000), .verdict = TC_ACT_OK},
	{"v4 tcp reply on the pod-opened flow", .then = true,
	 .pkt = TCP4(ALPHA4, ALPHA_GW4, 8000, 43210, .tcp_flags = TH_SYN | TH_ACK),
	 PASS(FW_PASS_POD_REPLY), .subject = "alpha"},
	{"v4 tcp 'reply' from a port the pod never opened", .then = true,
	 .pkt = TCP4(ALPHA4, ALPHA_GW4, 8001, 43210, .tcp_flags = TH_SYN | TH_ACK),
	 DROP(FW_DROP_POD_LOCAL), .subject = "alpha"},
	{"v4 udp 'reply' on a tcp-only flow", .then = true,
	 .pkt = UDP4(ALPHA4, ALPHA_GW4, 8000, 43210), DROP(FW_DROP_POD_LOCAL), .subject = "alpha"},
	{"egress: pod (gateway) sends udp to alpha:9000", .prog = EGRESS,
	 .pkt = UDP4(ALPHA_GW4, ALPHA4, 43211, 9000), .verdict = TC_ACT_OK},
	{"v4 udp reply on the pod-opened flow", .then = true,
	 .pkt = UDP4(ALPHA4, ALPHA_GW4, 9000, 43211), PASS(FW_PASS_POD_REPLY), .subject = "alpha"},
	{"egress: pod (local address) opens v6 tcp to alpha:8000", .prog = EGRESS,
	 .pkt = TCP6(LOCAL6, ALPHA6, 43212, 8000), .verdict = TC_ACT_OK},
	{"v6 tcp reply on the pod-opened flow", .then = true,
	 .pkt = TCP6(ALPHA6, LOCAL6, 8000, 43212, .tcp_flags = TH_SYN | TH_ACK),
	 PASS(FW_PASS_POD_REPLY), .subject = "alpha"},
	{"egress: the internet talking to alpha records nothing", .prog = EGRESS,
	 .pkt = TCP4(OK4, ALPHA4, 443, 8002), .verdict = TC_ACT_OK},
	{"v4 tcp to the gateway from that port is still pod-local", .then = true,
	 .pkt = TCP4(ALPHA4, ALPHA_GW4, 8002, 443), DROP(FW_DROP_POD_LOCAL), .subject = "alpha"},

	/* DNS that would bypass the proxy */
	{"dot: tcp 853 to an allowed address", .pkt = TCP4(ALPHA4, OK4, 40000, 853),
	 DROP(FW_DROP_DOT), .subject = "alpha"},
	{"dot: v6 udp 853 to an allowed address", .pkt = UDP6(ALPHA6, OK6, 40000, 853),
	 DROP(FW_DROP_DOT), .subject = "alpha"},
	{"dot: tcp 853 to the gateway", .pkt = TCP4(ALPHA4, ALPHA_GW4, 40000, 853),
	 DROP(FW_DROP_DOT), .subject = "alpha"},
	{"doh list: tcp 443 to a listed address", .setup = doh_list,
	 .pkt = TCP4(ALPHA4, DOH4, 40000, 443), DROP(FW_DROP_DOH), .subject = "alpha"},
	{"doh list: v6 tcp 443 to a listed address", .setup = doh_list,
	 .pkt = TCP6(ALPHA6, DOH6, 40000, 443), DROP(FW_DROP_DOH), .subject = "alpha"},
	{"doh list: tcp 443 to an allowed unlisted address", .setup = doh_list,
	 .pkt = TCP4(ALPHA4, OK4, 40000, 443), PASS(FW_PASS_ALLOW_CIDR), .subject = "alpha"},
	{"doh list: tcp 80 to a listed address", .setup = doh_list,
	 .pkt = TCP4(ALPHA4, DOH4, 40000, 80), PASS(FW_PASS_ALLOW_CIDR), .subject = "alpha"},
	{"doh list: udp 443 to a listed address", .setup = doh_list,
	 .pkt = UDP4(ALPHA4, DOH4, 40000, 443), PASS(FW_PASS_ALLOW_CIDR), .subject = "alpha"},
	/* the answer caches key on the destination, not the port: a
	 * destination answered for port 80 is still DoH on 443 (the source's
	 * slot for IPv4, the subject's row for IPv6) */
	{"doh list: tcp 80 to a listed address caches its answer", .setup = doh_list,
	 .pkt = TCP4(ALPHA4, DOH4, 40000, 80), PASS(FW_PASS_ALLOW_CIDR), .subject = "alpha"},
	{"doh list: again (the cached answer)", .then = true, .pkt = TCP4(ALPHA4, DOH4, 40000, 80),
	 PASS(FW_PASS_ALLOW_CIDR), .subject = "alpha"},
	{"doh list: then tcp 443 to it drops", .then = true, .pkt = TCP4(ALPHA4, DOH4, 40001, 443),
	 DROP(FW_DROP_DOH), .subject = "alpha"},
	{"doh list: v6 tcp 80 to a listed address caches its answer", .setup = doh_list,
	 .pkt = TCP6(ALPHA6, DOH6, 40000, 80), PASS(FW_PASS_ALLOW_CIDR), .subject = "alpha"},
	{"doh list: v6 again (the cached answer)", .then = true,
	 .pkt = TCP6(ALPHA6, DOH6, 40000, 80), PASS(FW_PASS_ALLOW_CIDR), .subject = "alpha"},
	{"doh list: v6 then tcp 443 to it drops", .then = true,
	 .pkt = TCP6(ALPHA6, DOH6, 40001, 443), DROP(FW_DROP_DOH), .subject = "alpha"},
	{"doh strict: tcp 443 to an allowed address", .setup = doh_strict,
	 .pkt = TCP4(ALPHA4, OK4, 40000, 443), DROP(FW_DROP_DOH), .subject = "alpha"},
	{"doh strict: v6 tcp 443 to an allowed address", .setup = doh_strict,
	 .pkt = TCP6(ALPHA6, OK6, 40000, 443), DROP(FW_DROP_DOH), .subject = "alpha"},
	{"doh strict: tcp 443 under default allow", .setup = doh_strict,
	 .pkt = TCP4(BETA4, NOWHERE4, 40000, 443), DROP(FW_DROP_DOH), .subject = "beta"},
	{"doh strict: udp 443 (quic) passes", .setup = doh_strict,
	 .pkt = UDP4(ALPHA4, OK4, 40000, 443), PASS(FW_PASS_ALLOW_CIDR), .subject = "alpha"},
	{"doh strict: tcp 80 passes", .setup = doh_strict, .pkt = TCP4(ALPHA4, OK4, 40000, 80),
	 PASS(FW_PASS_ALLOW_CIDR), .subject = "alpha"},
	{"doh off: tcp 443 to a listed address passes", .setup = doh_off,
	 .pkt = TCP4(ALPHA4, DOH4, 40000, 443), PASS(FW_PASS_ALLOW_CIDR), .subject = "alpha"},

	/* IPv4 headers */
	{"v4 with options, ihl 6", .pkt = UDP4(ALPHA4, OK4, 40000, 5000, .ip_opt_words = 1),
	 PASS(FW_PASS_ALLOW_CIDR), .subject = "alpha"},
	{"v4 with options, ihl 15", .pkt = TCP4(ALPHA4, OK4, 40000, 80, .ip_opt_words = 10),
	 PASS(FW_PASS_ALLOW_CIDR), .subject = "alpha"},
	{"v4 with options, ihl 15, to deny cidr",
	 .pkt = TCP4(ALPHA4, BAD4, 40000, 80, .ip_opt_words = 10), DROP(FW_DROP_DENY_CIDR),
	 .subject = "alpha"},
	/* test_run refuses frames shorter than ETH_HLEN, and IPv4/IPv6
	 * ethertype frames shorter than their fixed L3 header (EINVAL before
	 * the program runs): those truncations go behind a VLAN tag, which
	 * the kernel does not look into and fastwall does */
	{"frame ends inside the 802.1Q tag",
	 .pkt = UDP4(ALPHA4, OK4, 40000, 5000, .vlan = {0x8100}, .truncate = 16),
	 DROP(FW_DROP_MALFORMED)},
	{"802.1Q tagged IPv4, frame ends before the IPv4 header",
	 .pkt = UDP4(ALPHA4, OK4, 40000, 5000, .vlan = {0x8100}, .truncate = 18),
	 DROP(FW_DROP_MALFORMED)},
	{"802.1Q tagged IPv4, header cut at 12 bytes",
	 .pkt = UDP4(ALPHA4, OK4, 40000, 5000, .vlan = {0x8100}, .truncate = 18 + 12),
	 DROP(FW_DROP_MALFORMED)},
	{"802.1Q tagged IPv4, header cut at 19 bytes",
	 .pkt = UDP4(ALPHA4, OK4, 40000, 5000, .vlan = {0x8100}, .truncate = 18 + 19),
	 DROP(FW_DROP_MALFORMED)},
	{"v4 with options, frame ends inside the options",
	 .pkt = UDP4(ALPHA4, OK4, 40000, 5000, .ip_opt_words = 4, .truncate = 14 + 28),
	 DROP(FW_DROP_MALFORMED)},
	{"v4 ihl 4", .pkt = UDP4(ALPHA4, OK4, 40000, 5000, .ihl = 4), DROP(FW_DROP_MALFORMED)},
	{"v4 ihl 1", .pkt = UDP4(ALPHA4, OK4, 40000, 5000, .ihl = 1), DROP(FW_DROP_MALFORMED)},
	{"v4 version 6 under ethertype IPv4", .pkt = UDP4(ALPHA4, OK4, 40000, 5000, .version = 6),
	 DROP(FW_DROP_MALFORMED)},
	{"v4 tot_len beyond the frame", .pkt = UDP4(ALPHA4, OK4, 40000, 5000, .len_delta = 20),
	 DROP(FW_DROP_MALFORMED)},
	{"v4 tot_len shorter than ihl",
	 .pkt = UDP4(ALPHA4, OK4, 40000, 5000, .len_delta = -(20 + 8 - 16)),
	 DROP(FW_DROP_MALFORMED)},
	{"v4 tcp doff 4", .pkt = TCP4(ALPHA4, OK4, 40000, 80, .doff = 4), DROP(FW_DROP_MALFORMED)},
	{"v4 tcp doff 15 past the frame", .pkt = TCP4(ALPHA4, OK4, 40000, 80, .doff = 15),
	 DROP(FW_DROP_MALFORMED)},
	{"v4 tcp header cut at 12 bytes",
	 .pkt = TCP4(ALPHA4, OK4, 40000, 80, .truncate = 14 + 20 + 12), DROP(FW_DROP_MALFORMED)},
	{"v4 tcp header cut at 16 bytes (doff 5)",
	 .pkt = TCP4(ALPHA4, OK4, 40000, 80, .truncate = 14 + 20 + 16), DROP(FW_DROP_MALFORMED)},
	{"v4 udp header cut at 6 bytes",
	 .pkt = UDP4(ALPHA4, OK4, 40000, 5000, .truncate = 14 + 20 + 6), DROP(FW_DROP_MALFORMED)},
	{"v4 icmp header cut at 2 bytes",
	 .pkt = ICMP4(ALPHA4, OK4, ICMP4_ECHO, .truncate = 14 + 20 + 2), DROP(FW_DROP_MALFORMED)},

	/* IPv6 headers */
	{"802.1Q tagged IPv6, header cut at 30 bytes",
	 .pkt = UDP6(ALPHA6, OK6, 40000, 5000, .vlan = {0x8100}, .truncate = 18 + 30),
	 DROP(FW_DROP_MALFORMED)},
	{"802.1Q tagged IPv6, header cut at 39 bytes",
	 .pkt = UDP6(ALPHA6, OK6, 40000, 5000, .vlan = {0x8100}, .truncate = 18 + 39),
	 DROP(FW_DROP_MALFORMED)},
	{"v6 udp header cut at 4 bytes",
	 .pkt = UDP6(ALPHA6, OK6, 40000, 5000, .truncate = 14 + 40 + 4), DROP(FW_DROP_MALFORMED)},
	{"v6 payload_len beyond the frame", .pkt = UDP6(ALPHA6, OK6, 40000, 5000, .len_delta = 8),
	 DROP(FW_DROP_MALFORMED)},
	{"v6 payload_len 0 (jumbogram)",
	 .pkt = UDP6(ALPHA6, OK6, 40000, 5000, .zero_payload_len = true), DROP(FW_DROP_MALFORMED)},
	{"v6 hop-by-hop + dest-options + routing to allow cidr",
	 .pkt = UDP6(ALPHA6, OK6, 40000, 5000, .ext = {X_HBH, X_DEST, X_RT}),
	 PASS(FW_PASS_ALLOW_CIDR), .subject = "alpha"},
	{"v6 hop-by-hop + dest-options + routing to deny cidr",
	 .pkt = TCP6(ALPHA6, BAD6, 40000, 80, .ext = {X_HBH, X_DEST, X_RT}),
	 DROP(FW_DROP_DENY_CIDR), .subject = "alpha"},
	{"v6 7 extension headers",
	 .pkt = UDP6(ALPHA6, OK6, 40000, 5000,
		     .ext = {X_HBH, X_DEST, X_RT, X_DEST, X_RT, X_DEST, X_RT}),
	 PASS(FW_PASS_ALLOW_CIDR), .subject = "alpha"},
	{"v6 8 extension headers (FW_IPV6_MAX_EXT)",
	 .pkt = UDP6(ALPHA6, OK6, 40000, 5000,
		     .ext = {X_HBH, X_DEST, X_RT, X_DEST, X_RT, X_DEST, X_RT, X_DEST}),
	 PASS(FW_PASS_ALLOW_CIDR), .subject = "alpha"},
	{"v6 9 extension headers",
	 .pkt = UDP6(ALPHA6, OK6, 40000, 5000,
		     .ext = {X_HBH, X_DEST, X_RT, X_DEST, X_RT, X_DEST, X_RT, X_DEST, X_RT}),
	 DROP(FW_DROP_MALFORMED)},
	{"v6 extension header longer than the payload",
	 .pkt = UDP6(ALPHA6, OK6, 40000, 5000, .ext = {X_DEST}, .ext_hdrlen = 8),
	 DROP(FW_DROP_MALFORMED)},
	{"v6 tcp header cut after extension headers",
	 .pkt = TCP6(ALPHA6, OK6, 40000, 80, .ext = {X_HBH, X_DEST}, .truncate = 14 + 56 + 10),
	 DROP(FW_DROP_MALFORMED)},

	/* link layer */
	{"802.1Q tagged v4 to allow cidr", .pkt = TCP4(ALPHA4, OK4, 40000, 80, .vlan = {0x8100}),
	 PASS(FW_PASS_ALLOW_CIDR), .subject = "alpha"},
	{"802.1ad tagged v6 to allow cidr", .pkt = TCP6(ALPHA6, OK6, 40000, 80, .vlan = {0x88a8}),
	 PASS(FW_PASS_ALLOW_CIDR), .subject = "alpha"},
	{"802.1Q tagged v4 to deny cidr", .pkt = TCP4(ALPHA4, BAD4, 40000, 80, .vlan = {0x8100}),
	 DROP(FW_DROP_DENY_CIDR), .subject = "alpha"},
	{"double 802.1Q tag", .pkt = TCP4(ALPHA4, OK4, 40000, 80, .vlan = {0x8100, 0x8100}),
	 DROP(FW_DROP_MALFORMED)},
	{"QinQ 802.1ad + 802.1Q", .pkt = TCP4(ALPHA4, OK4, 40000, 80, .vlan = {0x88a8, 0x8100}),
	 DROP(FW_DROP_MALFORMED)},
	{"arp request", .pkt = ARP_REQ(), PASS(FW_PASS_NEIGH), .subject = "alpha"},
	{"802.1Q tagged arp request", .pkt = ARP_REQ(.vlan = {0x8100}), PASS(FW_PASS_NEIGH),
	 .subject = "alpha"},
	{"arp probe from 0.0.0.0", .pkt = ARP_REQ(.arp_sender = "0.0.0.0"), PASS(FW_PASS_NEIGH)},
	{"arp claiming the gateway's address", .pkt = ARP_REQ(.arp_sender = ALPHA_GW4),
	 DROP(FW_DROP_UNKNOWN_SOURCE)},
	{"arp claiming a bound subject's address on another interface",
	 .pkt = ARP_REQ(.arp_sender = DELTA4), DROP(FW_DROP_SPOOF), .subject = "delta"},
	{"arp of a bound subject on its own interface", .on_dummy = true,
	 .pkt = ARP_REQ(.arp_sender = DELTA4), PASS(FW_PASS_NEIGH), .subject = "delta"},
	{"lldp ethertype 0x88cc", .pkt = ETHER(0x88cc), DROP(FW_DROP_ETHERTYPE)},
	{"802.1Q tagged 802.1X ethertype 0x888e", .pkt = ETHER(0x888e, .vlan = {0x8100}),
	 DROP(FW_DROP_ETHERTYPE)},

	/* IPv6 neighbour discovery and MLD */
	{"v6 neighbour solicitation, hop limit 255",
	 .pkt = ICMP6(ALPHA6, "ff02::1:ff00:1", ICMP6_NS, .hop_limit = 255), PASS(FW_PASS_NEIGH),
	 .subject = "alpha"},
	{"v6 neighbour advertisement for :: (invalid target)",
	 .pkt = ICMP6(ALPHA6, ALPHA_GW6, ICMP6_NA, .hop_limit = 255), DROP(FW_DROP_ND_TARGET),
	 .subject = "alpha"},
	{"v6 neighbour advertisement for its own address",
	 .pkt = ICMP6(ALPHA6, ALPHA_GW6, ICMP6_NA, .hop_limit = 255, .nd_target = ALPHA6),
	 PASS(FW_PASS_NEIGH), .subject = "alpha"},
	{"v6 neighbour advertisement claiming the gateway's address",
	 .pkt = ICMP6(ALPHA6, ALPHA_GW6, ICMP6_NA, .hop_limit = 255, .nd_target = ALPHA_GW6),
	 DROP(FW_DROP_UNKNOWN_SOURCE), .subject = "alpha"},
	{"v6 neighbour advertisement claiming a configured local address",
	 .pkt = ICMP6(ALPHA6, "ff02::1", ICMP6_NA, .hop_limit = 255, .nd_target = LOCAL6),
	 DROP(FW_DROP_UNKNOWN_SOURCE), .subject = "alpha"},
	{"v6 neighbour advertisement claiming a bound subject on another interface",
	 .pkt = ICMP6(ALPHA6, ALPHA_GW6, ICMP6_NA, .hop_limit = 255, .nd_target = DELTA6),
	 DROP(FW_DROP_SPOOF), .subject = "delta"},
	{"v6 neighbour solicitation from a spoofed global source",
	 .pkt = ICMP6(DELTA6, "ff02::1:ff00:1", ICMP6_NS, .hop_limit = 255), DROP(FW_DROP_SPOOF),
	 .subject = "delta"},
	{"v6 router solicitation, hop limit 255",
	 .pkt = ICMP6(LO_LL, "ff02::2", ICMP6_RS, .hop_limit = 255), PASS(FW_PASS_NEIGH)},
	{"v6 neighbour solicitation, hop limit 64 (routed)",
	 .pkt = ICMP6(ALPHA6, ALPHA_GW6, ICMP6_NS, .hop_limit = 64), DROP(FW_DROP_MALFORMED),
	 .subject = "alpha"},
	{"v6 neighbour solicitation, hop limit 254 (one hop)",
	 .pkt = ICMP6(ALPHA6, ALPHA_GW6, ICMP6_NS, .hop_limit = 254), DROP(FW_DROP_MALFORMED),
	 .subject = "alpha"},
	{"v6 neighbour advertisement, hop limit 254 (one hop)",
	 .pkt = ICMP6(ALPHA6, ALPHA_GW6, ICMP6_NA, .hop_limit = 254, .nd_target = ALPHA6),
	 DROP(FW_DROP_MALFORMED), .subject = "alpha"},
	{"v6 router advertisement from a sandbox",
	 .pkt = ICMP6("fe80::10", "ff02::1", ICMP6_RA, .hop_limit = 255), DROP(FW_DROP_ROGUE_ND)},
	{"v6 redirect from a sandbox",
	 .pkt = ICMP6("fe80::10", "fe80::1", ICMP6_REDIRECT, .hop_limit = 255),
	 DROP(FW_DROP_ROGUE_ND)},
	{"v6 MLDv2 report to ff02::16",
	 .pkt = ICMP6(LO_LL, "ff02::16", ICMP6_MLD2_REPORT, .hop_limit = 1, .ext = {X_HBH}),
	 PASS(FW_PASS_NEIGH)},
	{"v6 MLDv2 report from ::",
	 .pkt = ICMP6("::", "ff02::16", ICMP6_MLD2_REPORT, .hop_limit = 1, .ext = {X_HBH}),
	 PASS(FW_PASS_NEIGH)},
	{"v6 MLDv2 report from its global address",
	 .pkt = ICMP6(ALPHA6, "ff02::16", ICMP6_MLD2_REPORT, .hop_limit = 1, .ext = {X_HBH}),
	 PASS(FW_PASS_NEIGH), .subject = "alpha"},
	{"v6 MLDv2 report from an unbound global source",
	 .pkt = ICMP6(STRANGER6, "ff02::16", ICMP6_MLD2_REPORT, .hop_limit = 1, .ext = {X_HBH}),
	 DROP(FW_DROP_UNKNOWN_SOURCE)},
	{"v6 MLDv2 report from a subject bound to another interface",
	 .pkt = ICMP6(DELTA6, "ff02::16", ICMP6_MLD2_REPORT, .hop_limit = 1, .ext = {X_HBH}),
	 DROP(FW_DROP_SPOOF), .subject = "delta"},
	{"v6 MLDv2 report to a site-scope group goes to policy",
	 .pkt = ICMP6(ALPHA6, "ff05::16", ICMP6_MLD2_REPORT, .hop_limit = 1, .ext = {X_HBH}),
	 DROP(FW_DROP_DEFAULT_DENY), .subject = "alpha"},
	{"v6 MLDv2 report to a denied address goes to policy",
	 .pkt = ICMP6(ALPHA6, DENIED6, ICMP6_MLD2_REPORT, .hop_limit = 1, .ext = {X_HBH}),
	 DROP(FW_DROP_DENY_CIDR), .subject = "alpha"},

	/* neighbour discovery goes only where ND goes: never routed on */
	{"v6 rs to a denied address, any payload",
	 .pkt = ICMP6(ALPHA6, DENIED6, ICMP6_RS, .hop_limit = 255, .payload = 64),
	 DROP(FW_DROP_ND_TARGET), .subject = "alpha"},
	{"v6 rs from its link-local address to a denied address",
	 .pkt = ICMP6(LO_LL, DENIED6, ICMP6_RS, .hop_limit = 255, .payload = 64),
	 DROP(FW_DROP_ND_TARGET)},
	{"v6 ns to a denied address",
	 .pkt = ICMP6(ALPHA6, DENIED6, ICMP6_NS, .hop_limit = 255, .nd_target = DENIED6),
	 DROP(FW_DROP_ND_TARGET), .subject = "alpha"},
	{"v6 na to a denied address",
	 .pkt = ICMP6(ALPHA6, DENIED6, ICMP6_NA, .hop_limit = 255, .nd_target = ALPHA6),
	 DROP(FW_DROP_ND_TARGET), .subject = "alpha"},
	{"v6 rs to an allowed off-link address",
	 .pkt = ICMP6(ALPHA6, OK6, ICMP6_RS, .hop_limit = 255), DROP(FW_DROP_ND_TARGET),
	 .subject = "alpha"},
	{"v6 ns to an allowed off-link address",
	 .pkt = ICMP6(ALPHA6, OK6, ICMP6_NS, .hop_limit = 255, .nd_target = OK6),
	 DROP(FW_DROP_ND_TARGET), .subject = "alpha"},
	{"v6 na to an allowed off-link address",
	 .pkt = ICMP6(ALPHA6, OK6, ICMP6_NA, .hop_limit = 255, .nd_target = ALPHA6),
	 DROP(FW_DROP_ND_TARGET), .subject = "alpha"},
	{"v6 ns to a sibling's address",
	 .pkt = ICMP6(ALPHA6, ALPHA_SIB6, ICMP6_NS, .hop_limit = 255, .nd_target = ALPHA_SIB6),
	 DROP(FW_DROP_ND_TARGET), .subject = "alpha"},
	/* loopback is pod-local, but no neighbour: found by the packet-path fuzzer */
	{"v6 na to ::1",
	 .pkt = ICMP6(ALPHA6, "::1", ICMP6_NA, .hop_limit = 255, .nd_target = ALPHA6),
	 DROP(FW_DROP_ND_TARGET), .subject = "alpha"},
	{"v6 ns to ::1",
	 .pkt = ICMP6(ALPHA6, "::1", ICMP6_NS, .hop_limit = 255, .nd_target = "::1"),
	 DROP(FW_DROP_ND_TARGET), .subject = "alpha"},
	{"v6 rs to a site-scope group", .pkt = ICMP6(ALPHA6, "ff05::2", ICMP6_RS, .hop_limit = 255),
	 DROP(FW_DROP_ND_TARGET), .subject = "alpha"},
	{"v6 ns to a link-scope group that is not solicited-node",
	 .pkt = ICMP6(ALPHA6, "ff02::16", ICMP6_NS, .hop_limit = 255, .nd_target = ALPHA_GW6),
	 DROP(FW_DROP_ND_TARGET), .subject = "alpha"},
	{"v6 ns from a link-local source to the gateway's global address",
	 .pkt = ICMP6(LO_LL, ALPHA_GW6, ICMP6_NS, .hop_limit = 255, .nd_target = ALPHA_GW6),
	 DROP(FW_DROP_ND_TARGET)},
	{"v6 ns (unicast NUD) to its gateway",
	 .pkt = ICMP6(ALPHA6, ALPHA_GW6, ICMP6_NS, .hop_limit = 255, .nd_target = ALPHA_GW6),
	 PASS(FW_PASS_NEIGH), .subject = "alpha"},
	{"v6 na to its gateway",
	 .pkt = ICMP6(ALPHA6, ALPHA_GW6, ICMP6_NA, .hop_limit = 255, .nd_target = ALPHA6),
	 PASS(FW_PASS_NEIGH), .subject = "alpha"},
	{"v6 ns to a configured local address",
	 .pkt = ICMP6(ALPHA6, LOCAL6, ICMP6_NS, .hop_limit = 255, .nd_target = LOCAL6),
	 PASS(FW_PASS_NEIGH), .subject = "alpha"},
	{"v6 ns to the gateway's solicited-node group",
	 .pkt = ICMP6(ALPHA6, SOLICITED_GW6, ICMP6_NS, .hop_limit = 255, .nd_target = ALPHA_GW6),
	 PASS(FW_PASS_NEIGH), .subject = "alpha"},
	{"v6 ns to the gateway's link-local address",
	 .pkt = ICMP6(ALPHA6, GW_LL, ICMP6_NS, .hop_limit = 255, .nd_target = GW_LL),
	 PASS(FW_PASS_NEIGH), .subject = "alpha"},
	{"v6 ns from a subject without a gateway to one of the pod's addresses",
	 .pkt = ICMP6(BETA6, POD6, ICMP6_NS, .hop_limit = 255, .nd_target = POD6),
	 PASS(FW_PASS_NEIGH), .subject = "beta"},
	{"v6 na answering the pod's solicitation at its address",
	 .pkt = ICMP6(BETA6, POD6, ICMP6_NA, .hop_limit = 255, .nd_target = BETA6),
	 PASS(FW_PASS_NEIGH), .subject = "beta"},
	{"v6 na from a subject without a gateway to another's gateway",
	 .pkt = ICMP6(BETA6, ALPHA_GW6, ICMP6_NA, .hop_limit = 255, .nd_target = BETA6),
	 DROP(FW_DROP_ND_TARGET), .subject = "beta"},
	{"v6 na claiming one of the pod's addresses",
	 .pkt = ICMP6(ALPHA6, "ff02::1", ICMP6_NA, .hop_limit = 255, .nd_target = POD6),
	 DROP(FW_DROP_UNKNOWN_SOURCE), .subject = "alpha"},
	{"v6 na to all-nodes",
	 .pkt = ICMP6(ALPHA6, "ff02::1", ICMP6_NA, .hop_limit = 255, .nd_target = ALPHA6),
	 PASS(FW_PASS_NEIGH), .subject = "alpha"},
	/* ... and only from the port's own addresses */
	{"v6 rs from an unbound global source",
	 .pkt = ICMP6(STRANGER6, "ff02::2", ICMP6_RS, .hop_limit = 255),
	 DROP(FW_DROP_UNKNOWN_SOURCE)},
	{"v6 rs from a subject bound to another interface",
	 .pkt = ICMP6(DELTA6, "ff02::2", ICMP6_RS, .hop_limit = 255), DROP(FW_DROP_SPOOF),
	 .subject = "delta"},
	{"v6 na with a link-local target from an unbound source",
	 .pkt = ICMP6(STRANGER6, "ff02::1", ICMP6_NA, .hop_limit = 255, .nd_target = LO_LL),
	 DROP(FW_DROP_UNKNOWN_SOURCE)},
	{"v6 na with a link-local target from a subject bound to another interface",
	 .pkt = ICMP6(DELTA6, "ff02::1", ICMP6_NA, .hop_limit = 255, .nd_target = LO_LL),
	 DROP(FW_DROP_SPOOF), .subject = "delta"},
	{"v6 ns with a link-local target from a subject bound to another interface",
	 .pkt = ICMP6(DELTA6, GW_LL, ICMP6_NS, .hop_limit = 255, .nd_target = GW_LL),
	 DROP(FW_DROP_SPOOF), .subject = "delta"},
	{"v6 rs from ::", .pkt = ICMP6("::", "ff02::2", ICMP6_RS, .hop_limit = 255),
	 PASS(FW_PASS_NEIGH)},
	{"v6 na from ::",
	 .pkt = ICMP6("::", "ff02::1", ICMP6_NA, .hop_limit = 255, .nd_target = ALPHA6),
	 DROP(FW_DROP_ND_TARGET)},
	{"v6 duplicate address detection of its global address",
	 .pkt = ICMP6("::", "ff02::1:ff00:10", ICMP6_NS, .hop_limit = 255, .nd_target = ALPHA6),
	 PASS(FW_PASS_NEIGH)},
	{"v6 duplicate address detection of its link-local address",
	 .pkt = ICMP6("::", "ff02::1:ff00:2", ICMP6_NS, .hop_limit = 255, .nd_target = LO_LL),
	 PASS(FW_PASS_NEIGH)},

	/* link-local addresses are bound to ports like global ones to subjects */
	{"v6 na claiming the gateway's link-local address", .setup = dummy_bound_from_link,
	 .pkt = ICMP6(LO_LL, "ff02::1", ICMP6_NA, .hop_limit = 255, .nd_target = GW_LL),
	 DROP(FW_DROP_SPOOF)},
	{"v6 na from its global address claiming the gateway's link-local address",
	 .setup = dummy_bound_from_link,
	 .pkt = ICMP6(ALPHA6, "ff02::1", ICMP6_NA, .hop_limit = 255, .nd_target = GW_LL),
	 DROP(FW_DROP_SPOOF), .subject = "alpha"},
	{"v6 ns from the gateway's link-local address", .setup = dummy_bound_from_link,
	 .pkt = ICMP6(GW_LL, SOLICITED_GW6, ICMP6_NS, .hop_limit = 255, .nd_target = ALPHA_GW6),
	 DROP(FW_DROP_SPOOF)},
	{"v6 MLDv2 report from the gateway's link-local address", .setup = dummy_bound_from_link,
	 .pkt = ICMP6(GW_LL, "ff02::16", ICMP6_MLD2_REPORT, .hop_limit = 1, .ext = {X_HBH}),
	 DROP(FW_DROP_SPOOF)},
	{"v6 rs from the gateway's link-local address", .setup = dummy_bound_from_link,
	 .pkt = ICMP6(GW_LL, "ff02::2", ICMP6_RS, .hop_limit = 255), DROP(FW_DROP_SPOOF)},
	{"v6 na claiming the sibling port's link-local address", .setup = dummy_bound_from_link,
	 .pkt = ICMP6(LO_LL, "ff02::1", ICMP6_NA, .hop_limit = 255, .nd_target = DUMMY_LL),
	 DROP(FW_DROP_SPOOF)},
	{"v6 duplicate address detection of the sibling port's link-local address",
	 .setup = dummy_bound_from_link,
	 .pkt = ICMP6("::", "ff02::1:ff00:d", ICMP6_NS, .hop_limit = 255, .nd_target = DUMMY_LL),
	 DROP(FW_DROP_SPOOF)},
	{"v6 na for its own link-local address (EUI-64 of its MAC)", .setup = dummy_bound_from_link,
	 .pkt = ICMP6(LO_LL, "ff02::1", ICMP6_NA, .hop_limit = 255, .nd_target = LO_LL,
		      .nd_lladdr = PKT_MAC_SRC),
	 PASS(FW_PASS_NEIGH)},
	{"v6 ns from a new link-local address: learned for the port",
	 .setup = dummy_bound_from_link,
	 .pkt = ICMP6(LO_LL2, SOLICITED_GW6, ICMP6_NS, .hop_limit = 255, .nd_target = ALPHA_GW6),
	 PASS(FW_PASS_NEIGH)},
	{"v6 na for the learned link-local address", .then = true,
	 .pkt = ICMP6(LO_LL2, "ff02::1", ICMP6_NA, .hop_limit = 255, .nd_target = LO_LL2),
	 PASS(FW_PASS_NEIGH)},
	{"v6 ns from a second new link-local address", .then = true,
	 .pkt = ICMP6("fe80::2:2", SOLICITED_GW6, ICMP6_NS, .hop_limit = 255,
		      .nd_target = ALPHA_GW6),
	 DROP(FW_DROP_ND_TARGET)},
	{"v6 na claiming a second new link-local address", .then = true,
	 .pkt = ICMP6(LO_LL, "ff02::1", ICMP6_NA, .hop_limit = 255, .nd_target = "fe80::2:3"),
	 DROP(FW_DROP_ND_TARGET)},
	{"sibling port: na claiming the first port's learned link-local address", .then = true,
	 .on_dummy = true,
	 .pkt = ICMP6(DUMMY_LL, "ff02::1", ICMP6_NA, .hop_limit = 255, .nd_target = LO_LL2),
	 DROP(FW_DROP_SPOOF)},
	{"sibling port: na from its bound subject for its own link-local address",
	 .setup = dummy_bound_from_link, .on_dummy = true,
	 .pkt = ICMP6(DELTA6, "ff02::1", ICMP6_NA, .hop_limit = 255, .nd_target = DUMMY_LL,
		      .nd_lladdr = DUMMY_MAC),
	 PASS(FW_PASS_NEIGH), .subject = "delta"},

	/* the port's MAC: frames, ARP and ND link-layer options */
	{"v4 to an allowed address from the sibling port's MAC", .setup = dummy_bound_from_link,
	 .pkt = UDP4(ALPHA4, OK4, 40000, 5000, .eth_src = DUMMY_MAC), DROP(FW_DROP_MAC_SPOOF),
	 .subject = "alpha"},
	{"v6 to an allowed address from the sibling port's MAC", .setup = dummy_bound_from_link,
	 .pkt = TCP6(ALPHA6, OK6, 40000, 80, .eth_src = DUMMY_MAC), DROP(FW_DROP_MAC_SPOOF),
	 .subject = "alpha"},
	{"v4 to an allowed address from a MAC no port has", .setup = lo_bound_on_sight,
	 .pkt = TCP4(ALPHA4, OK4, 40000, 80, .eth_src = STRANGER_MAC), DROP(FW_DROP_MAC_SPOOF),
	 .subject = "alpha"},
	{"v4 to an allowed address from the pod's MAC", .setup = dummy_bound_from_link,
	 .pkt = TCP4(ALPHA4, OK4, 40000, 80, .eth_src = POD_MAC), DROP(FW_DROP_MAC_SPOOF),
	 .subject = "alpha"},
	{"arp from the sibling port's MAC", .setup = dummy_bound_from_link,
	 .pkt = ARP_REQ(.eth_src = DUMMY_MAC), DROP(FW_DROP_MAC_SPOOF), .subject = "alpha"},
	{"arp with the sibling port's MAC as sender hardware address",
	 .setup = dummy_bound_from_link, .pkt = ARP_REQ(.arp_sha = DUMMY_MAC),
	 DROP(FW_DROP_MAC_SPOOF), .subject = "alpha"},
	{"arp probe with the sibling port's MAC as sender hardware address",
	 .setup = dummy_bound_from_link,
	 .pkt = ARP_REQ(.arp_sender = "0.0.0.0", .arp_sha = DUMMY_MAC), DROP(FW_DROP_MAC_SPOOF)},
	{"v6 ns from the sibling port's MAC", .setup = dummy_bound_from_link,
	 .pkt = ICMP6(ALPHA6, SOLICITED_GW6, ICMP6_NS, .hop_limit = 255, .nd_target = ALPHA_GW6,
		      .eth_src = DUMMY_MAC),
	 DROP(FW_DROP_MAC_SPOOF), .subject = "alpha"},
	{"v6 ns with the sibling port's MAC as source link-layer address",
	 .setup = dummy_bound_from_link,
	 .pkt = ICMP6(ALPHA6, SOLICITED_GW6, ICMP6_NS, .hop_limit = 255, .nd_target = ALPHA_GW6,
		      .nd_lladdr = DUMMY_MAC),
	 DROP(FW_DROP_MAC_SPOOF), .subject = "alpha"},
	{"v6 na with the sibling port's MAC as target link-layer address",
	 .setup = dummy_bound_from_link,
	 .pkt = ICMP6(ALPHA6, "ff02::1", ICMP6_NA, .hop_limit = 255, .nd_target = ALPHA6,
		      .nd_lladdr = DUMMY_MAC),
	 DROP(FW_DROP_MAC_SPOOF), .subject = "alpha"},
	{"v6 rs with the pod's MAC as source link-layer address", .setup = dummy_bound_from_link,
	 .pkt = ICMP6(LO_LL, "ff02::2", ICMP6_RS, .hop_limit = 255, .nd_lladdr = POD_MAC),
	 DROP(FW_DROP_MAC_SPOOF)},
	{"v6 dad with a foreign MAC as source link-layer address", .setup = dummy_bound_from_link,
	 .pkt = ICMP6("::", "ff02::1:ff00:10", ICMP6_NS, .hop_limit = 255, .nd_target = ALPHA6,
		      .nd_lladdr = STRANGER_MAC),
	 DROP(FW_DROP_MAC_SPOOF)},
	{"v6 ns with its own MAC as source link-layer address", .setup = dummy_bound_from_link,
	 .pkt = ICMP6(ALPHA6, SOLICITED_GW6, ICMP6_NS, .hop_limit = 255, .nd_target = ALPHA_GW6,
		      .nd_lladdr = PKT_MAC_SRC),
	 PASS(FW_PASS_NEIGH), .subject = "alpha"},
	{"v6 rs with its own MAC as source link-layer address", .setup = dummy_bound_from_link,
	 .pkt = ICMP6(LO_LL, "ff02::2", ICMP6_RS, .hop_limit = 255, .nd_lladdr = PKT_MAC_SRC),
	 PASS(FW_PASS_NEIGH)},
	{"sibling port: v4 from the first port's MAC", .setup = dummy_bound_from_link,
	 .on_dummy = true, .pkt = TCP4(DELTA4, OK4, 40000, 80, .eth_src = PKT_MAC_SRC),
	 DROP(FW_DROP_MAC_SPOOF), .subject = "delta"},
	{"sibling port: v4 from its own MAC", .setup = dummy_bound_from_link, .on_dummy = true,
	 .pkt = TCP4(DELTA4, OK4, 40000, 80), PASS(FW_PASS_ALLOW_CIDR), .subject = "delta"},
	{"sibling port: arp from its own MAC", .setup = dummy_bound_from_link, .on_dummy = true,
	 .pkt = ARP_REQ(.arp_sender = DELTA4), PASS(FW_PASS_NEIGH), .subject = "delta"},

	/* fragments */
	{"v4 first fragment to allow cidr",
	 .pkt = UDP4(ALPHA4, OK4, 40000, 5000, FRAG_FIRST(0x1234), .payload = 64),
	 PASS(FW_PASS_ALLOW_CIDR), .subject = "alpha"},
	{"v4 its middle fragment follows", .then = true,
	 .pkt = UDP4(ALPHA4, OK4, 0, 0, FRAG_LATER(0x1234, 9)), PASS(FW_PASS_FRAGMENT),
	 .subject = "alpha"},
	{"v4 its last fragment follows", .then = true,
	 .pkt = UDP4(ALPHA4, OK4, 0, 0, FRAG_LAST(0x1234, 18)), PASS(FW_PASS_FRAGMENT),
	 .subject = "alpha"},
	{"v4 later fragment of an unknown datagram", .then = true,
	 .pkt = UDP4(ALPHA4, OK4, 0, 0, FRAG_LATER(0x9999, 9)), DROP(FW_DROP_FRAGMENT)},
	{"v4 later fragment, same id, other protocol", .then = true,
	 .pkt = TCP4(ALPHA4, OK4, 0, 0, FRAG_LATER(0x1234, 9)), DROP(FW_DROP_FRAGMENT)},
	{"v4 later fragment, same id, from another source", .then = true,
	 .pkt = UDP4(BETA4, OK4, 0, 0, FRAG_LATER(0x1234, 9)), DROP(FW_DROP_FRAGMENT)},
	{"v4 first fragment to deny cidr",
	 .pkt = UDP4(ALPHA4, BAD4, 40000, 5000, FRAG_FIRST(0x4444), .payload = 64),
	 DROP(FW_DROP_DENY_CIDR), .subject = "alpha"},
	{"v4 later fragment of the denied datagram", .then = true,
	 .pkt = UDP4(ALPHA4, BAD4, 0, 0, FRAG_LATER(0x4444, 9)), DROP(FW_DROP_FRAGMENT)},
	{"v6 first fragment to allow cidr",
	 .pkt = UDP6(ALPHA6, OK6, 40000, 5000, FRAG_FIRST(0xabcdef01), .payload = 64),
	 PASS(FW_PASS_ALLOW_CIDR), .subject = "alpha"},
	{"v6 its later fragment follows", .then = true,
	 .pkt = UDP6(ALPHA6, OK6, 0, 0, FRAG_LAST(0xabcdef01, 9)), PASS(FW_PASS_FRAGMENT),
	 .subject = "alpha"},
	{"v6 later fragment of an unknown datagram",
	 .pkt = UDP6(ALPHA6, OK6, 0, 0, FRAG_LATER(0x0badf00d, 9)), DROP(FW_DROP_FRAGMENT)},
	{"v6 first fragment behind a hop-by-hop header",
	 .pkt = TCP6(ALPHA6, OK6, 40000, 80, .ext = {X_HBH}, FRAG_FIRST(7), .payload = 64),
	 PASS(FW_PASS_ALLOW_CIDR), .subject = "alpha"},
	{"v6 its later fragment follows", .then = true,
	 .pkt = TCP6(ALPHA6, OK6, 0, 0, .ext = {X_HBH}, FRAG_LAST(7, 12)), PASS(FW_PASS_FRAGMENT),
	 .subject = "alpha"},

	/* fragment attacks: omicron allows port 80 only. Transport headers
	 * are read inside the payload the IP header declares; a first
	 * fragment without its whole transport header is unclassifiable */
	{"v6 frag attack: first fragment ends after a dest header, fake port 80 past the payload",
	 .pkt = UDP6(OMI6, OK6, 40000, 22, FRAG_FIRST(0x5001), .ext_after_frag = {X_DEST},
		     .truncate = 14 + 40 + 8 + 8, .trailer_port = 80),
	 DROP(FW_DROP_FRAG_HEADER)},
	{"v6 frag attack: the second fragment with the real header (port 22) does not follow",
	 .then = true,
	 .pkt = UDP6(OMI6, OK6, 0x1100, 22, FRAG_LAST(0x5001, 1), .ext_after_frag = {X_DEST},
		     .l4_in_later = true),
	 DROP(FW_DROP_FRAGMENT), .ev_proto = 60},
	{"v6 first fragment with a dest header after the fragment header, port 80",
	 .pkt = UDP6(OMI6, OK6, 40000, 80, FRAG_FIRST(0x5002), .ext_after_frag = {X_DEST},
		     .payload = 8),
	 PASS(FW_PASS_ALLOW_CIDR), .subject = "omicron"},
	{"v6 its later fragment follows (its data is not parsed as headers)", .then = true,
	 .pkt = UDP6(OMI6, OK6, 0, 0, FRAG_LAST(0x5002, 3), .ext_after_frag = {X_DEST}),
	 PASS(FW_PASS_FRAGMENT), .subject = "omicron"},
	{"v6 frag attack: a later fragment overlapping the first one's UDP header", .then = true,
	 .pkt = UDP6(OMI6, OK6, 40000, 22, FRAG_LAST(0x5002, 1), .ext_after_frag = {X_DEST},
		     .l4_in_later = true),
	 DROP(FW_DROP_FRAG_HEADER), .subject = "omicron", .ev_proto = 60},
	{"v6 frag attack: tiny first fragment, 8 bytes of TCP",
	 .pkt = TCP6(OMI6, OK6, 40000, 80, FRAG_FIRST(0x5003), .truncate = 14 + 40 + 8 + 8),
	 DROP(FW_DROP_FRAG_HEADER)},
	{"v6 frag attack: first fragment ends inside a dest header",
	 .pkt = UDP6(OMI6, OK6, 40000, 80, FRAG_FIRST(0x5004), .ext_after_frag = {X_DEST},
		     .truncate = 14 + 40 + 8 + 4),
	 DROP(FW_DROP_FRAG_HEADER), .ev_proto = 60},
	{"v6 frag attack: first fragment, TCP data offset past the fragment",
	 .pkt = TCP6(OMI6, OK6, 40000, 80, FRAG_FIRST(0x5005), .doff = 15, .payload = 16),
	 DROP(FW_DROP_FRAG_HEADER)},
	{"v6 frag attack: a second fragment header inside the first fragment",
	 .pkt = UDP6(OMI6, OK6, 40000, 80, FRAG_FIRST(0x5010), .ext_after_frag = {X_FRAG},
		     .payload = 8),
	 DROP(FW_DROP_FRAG_HEADER), .ev_proto = 44},
	{"v6 atomic fragment to port 80 is a whole packet",
	 .pkt = UDP6(OMI6, OK6, 40000, 80, .frag = {.on = true, .id = 0x5006}),
	 PASS(FW_PASS_ALLOW_CIDR), .subject = "omicron"},
	{"v6 atomic fragment to port 22",
	 .pkt = UDP6(OMI6, OK6, 40000, 22, .frag = {.on = true, .id = 0x5007}),
	 DROP(FW_DROP_DEFAULT_DENY), .subject = "omicron"},
	{"v6 atomic fragments open no later fragments",
	 .pkt = UDP6(OMI6, OK6, 0, 0, FRAG_LAST(0x5006, 2)), DROP(FW_DROP_FRAGMENT)},
	{"v6 frag attack: atomic fragment, fake port 80 past the payload",
	 .pkt = UDP6(OMI6, OK6, 40000, 22, .frag = {.on = true, .id = 0x5008},
		     .ext_after_frag = {X_DEST}, .truncate = 14 + 40 + 8 + 8, .trailer_port = 80),
	 DROP(FW_DROP_MALFORMED)},
	{"v6 dest header ends the payload, fake port 80 past it",
	 .pkt = UDP6(OMI6, OK6, 40000, 22, .ext = {X_DEST}, .truncate = 14 + 40 + 8,
		     .trailer_port = 80),
	 DROP(FW_DROP_MALFORMED)},
	{"v4 frag attack: first fragment without L4 bytes, fake port 80 past tot_len",
	 .pkt = UDP4(OMI4, OK4, 40000, 22, FRAG_FIRST(0x5009), .truncate = 14 + 20,
		     .trailer_port = 80),
	 DROP(FW_DROP_FRAG_HEADER)},
	{"v4 frag attack: tiny first fragment, 8 bytes of TCP",
	 .pkt = TCP4(OMI4, OK4, 40000, 80, FRAG_FIRST(0x500a), .truncate = 14 + 20 + 8),
	 DROP(FW_DROP_FRAG_HEADER)},
	{"v4 frag attack: tiny first fragment, 4 bytes of UDP",
	 .pkt = UDP4(OMI4, OK4, 40000, 80, FRAG_FIRST(0x500b), .truncate = 14 + 20 + 4),
	 DROP(FW_DROP_FRAG_HEADER)},
	/* the offset's top bit: a later fragment whatever its other bits,
	 * not a whole datagram whose data would be read as a header */
	{"v4 frag attack: a later fragment at offset 0x1000 (top bit only), a port 80 header",
	 .pkt = UDP4(OMI4, OK4, 40000, 80, FRAG_LAST(0x500e, 0x1000), .l4_in_later = true),
	 DROP(FW_DROP_FRAGMENT)},
	{"v6 frag attack: a later fragment at offset 0x1000 (top bit only), a port 80 header",
	 .pkt = UDP6(OMI6, OK6, 40000, 80, FRAG_LAST(0x500f, 0x1000), .l4_in_later = true),
	 DROP(FW_DROP_FRAGMENT)},
	{"v4 unfragmented, no L4 bytes in tot_len, fake port 80 past it (fast path)",
	 .pkt = UDP4(OMI4, OK4, 40000, 22, .truncate = 14 + 20, .trailer_port = 80),
	 DROP(FW_DROP_MALFORMED)},
	/* a UDP header of 4-7 bytes inside tot_len, the frame long enough for
	 * the fast path to read 8 past it: the ports it shows are real, the
	 * header is not whole */
	{"v4 unfragmented UDP, 4 header bytes in tot_len, a port-like trailer (fast path)",
	 .pkt = UDP4(OMI4, OK4, 40000, 80, .truncate = 14 + 20 + 4, .trailer_port = 80),
	 DROP(FW_DROP_MALFORMED)},
	{"v4 unfragmented UDP, 6 header bytes in tot_len, a port-like trailer (fast path)",
	 .pkt = UDP4(OMI4, OK4, 40000, 80, .truncate = 14 + 20 + 6, .trailer_port = 80),
	 DROP(FW_DROP_MALFORMED)},
	{"v4 unfragmented UDP, 7 header bytes in tot_len, a port-like trailer (fast path)",
	 .pkt = UDP4(OMI4, OK4, 40000, 80, .truncate = 14 + 20 + 7, .trailer_port = 80),
	 DROP(FW_DROP_MALFORMED)},
	{"v4 UDP with options, 6 header bytes in tot_len, a port-like trailer",
	 .pkt = UDP4(OMI4, OK4, 40000, 80, .ip_opt_words = 1, .truncate = 14 + 24 + 6,
		     .trailer_port = 80),
	 DROP(FW_DROP_MALFORMED)},
	{"v6 UDP, 4 header bytes in payload_len, a port-like trailer",
	 .pkt = UDP6(OMI6, OK6, 40000, 80, .truncate = 14 + 40 + 4, .trailer_port = 80),
	 DROP(FW_DROP_MALFORMED)},
	{"v6 UDP, 7 header bytes in payload_len, a port-like trailer",
	 .pkt = UDP6(OMI6, OK6, 40000, 80, .truncate = 14 + 40 + 7, .trailer_port = 80),
	 DROP(FW_DROP_MALFORMED)},
	{"v4 unfragmented TCP, data offset past tot_len (fast path)",
	 .pkt = TCP4(OMI4, OK4, 40000, 80, .doff = 6, .truncate = 14 + 20 + 20, .trailer_port = 80),
	 DROP(FW_DROP_MALFORMED)},
	{"v4 first TCP fragment to port 80",
	 .pkt = TCP4(OMI4, OK4, 40000, 80, FRAG_FIRST(0x500c), .payload = 40),
	 PASS(FW_PASS_ALLOW_CIDR), .subject = "omicron"},
	{"v4 frag attack: a later fragment at offset 8 rewrites its TCP header", .then = true,
	 .pkt = TCP4(OMI4, OK4, 0, 0, FRAG_LAST(0x500c, 1)), DROP(FW_DROP_FRAG_HEADER),
	 .subject = "omicron"},
	{"v4 its later fragment at offset 24 follows", .then = true,
	 .pkt = TCP4(OMI4, OK4, 0, 0, FRAG_LAST(0x500c, 3)), PASS(FW_PASS_FRAGMENT),
	 .subject = "omicron"},
	/* a second first fragment with the same id, denied: the later
	 * fragments can no longer tell whose they are */
	{"v4 first fragment to port 80",
	 .pkt = UDP4(OMI4, OK4, 40000, 80, FRAG_FIRST(0x500d), .payload = 64),
	 PASS(FW_PASS_ALLOW_CIDR), .subject = "omicron"},
	{"v4 frag attack: a second first fragment, same id, port 22", .then = true,
	 .pkt = UDP4(OMI4, OK4, 40000, 22, FRAG_FIRST(0x500d), .payload = 64),
	 DROP(FW_DROP_DEFAULT_DENY), .subject = "omicron"},
	{"v4 frag attack: later fragments of that id no longer follow", .then = true,
	 .pkt = UDP4(OMI4, OK4, 0, 0, FRAG_LAST(0x500d, 9)), DROP(FW_DROP_FRAGMENT)},
	{"v6 first fragment to port 80",
	 .pkt = UDP6(OMI6, OK6, 40000, 80, FRAG_FIRST(0x500e), .payload = 64),
	 PASS(FW_PASS_ALLOW_CIDR), .subject = "omicron"},
	{"v6 frag attack: a second first fragment, same id, port 22", .then = true,
	 .pkt = UDP6(OMI6, OK6, 40000, 22, FRAG_FIRST(0x500e), .payload = 64),
	 DROP(FW_DROP_DEFAULT_DENY), .subject = "omicron"},
	{"v6 frag attack: later fragments of that id no longer follow", .then = true,
	 .pkt = UDP6(OMI6, OK6, 0, 0, FRAG_LAST(0x500e, 9)), DROP(FW_DROP_FRAGMENT)},
	/* ... but a spoofed one must not cancel its victim's datagram */
	{"v4 bound subject's first fragment", .on_dummy = true,
	 .pkt = UDP4(DELTA4, OK4, 40000, 80, FRAG_FIRST(0x500f), .payload = 64),
	 PASS(FW_PASS_ALLOW_CIDR), .subject = "delta"},
	{"v4 the same first fragment spoofed from another port", .then = true,
	 .pkt = UDP4(DELTA4, OK4, 40000, 80, FRAG_FIRST(0x500f), .payload = 64),
	 DROP(FW_DROP_SPOOF), .subject = "delta"},
	{"v4 the bound subject's later fragment still follows", .then = true, .on_dummy = true,
	 .pkt = UDP4(DELTA4, OK4, 0, 0, FRAG_LATER(0x500f, 9)), PASS(FW_PASS_FRAGMENT),
	 .subject = "delta"},
	{"v4 frag attack: its later fragment sent from another port", .then = true,
	 .pkt = UDP4(DELTA4, OK4, 0, 0, FRAG_LAST(0x500f, 18)), DROP(FW_DROP_SPOOF),
	 .subject = "delta"},
	/* ... nor one from another MAC on the subject's own port */
	{"v4 bound subject's first fragment, again", .on_dummy = true,
	 .pkt = UDP4(DELTA4, OK4, 40000, 80, FRAG_FIRST(0x5010), .payload = 64),
	 PASS(FW_PASS_ALLOW_CIDR), .subject = "delta"},
	{"v4 the same first fragment from another MAC on its port", .then = true, .on_dummy = true,
	 .pkt = UDP4(DELTA4, OK4, 40000, 80, FRAG_FIRST(0x5010), .payload = 64,
		     .eth_src = STRANGER_MAC),
	 DROP(FW_DROP_MAC_SPOOF), .subject = "delta"},
	{"v4 the bound subject's later fragment still follows that", .then = true, .on_dummy = true,
	 .pkt = UDP4(DELTA4, OK4, 0, 0, FRAG_LATER(0x5010, 9)), PASS(FW_PASS_FRAGMENT),
	 .subject = "delta"},

	/* v4-mapped addresses in IPv6 packets are not IPv4 */
	{"v6 to ::ffff:(allowed IPv4)", .pkt = UDP6(ALPHA6, "::ffff:192.0.2.10", 40000, 5000),
	 DROP(FW_DROP_V4MAPPED)},
	{"v6 to ::ffff:(the gateway's IPv4)", .pkt = TCP6(ALPHA6, "::ffff:10.42.0.1", 40000, 53),
	 DROP(FW_DROP_V4MAPPED)},
	{"v6 from ::ffff:(a subject's IPv4)", .pkt = UDP6("::ffff:10.42.0.10", OK6, 40000, 5000),
	 DROP(FW_DROP_V4MAPPED)},

	/* pod-local by prefix: loopback and link-local, even for a subject
	 * whose default is allow */
	{"v4 to 127.0.0.1 (route_localnet reaches the pod's loopback)",
	 .pkt = TCP4(BETA4, "127.0.0.1", 40000, 8081), DROP(FW_DROP_POD_LOCAL), .subject = "beta"},
	{"v4 to 127.1.2.3", .pkt = UDP4(BETA4, "127.1.2.3", 40000, 8081), DROP(FW_DROP_POD_LOCAL),
	 .subject = "beta"},
	{"v6 to ::1", .pkt = TCP6(BETA6, "::1", 40000, 8081), DROP(FW_DROP_POD_LOCAL),
	 .subject = "beta"},
	{"v6 to a link-local address of the pod", .pkt = TCP6(BETA6, "fe80::1", 40000, 8081),
	 DROP(FW_DROP_POD_LOCAL), .subject = "beta"},
	{"v4 to the limited broadcast", .pkt = UDP4(BETA4, "255.255.255.255", 40000, 8081),
	 DROP(FW_DROP_POD_LOCAL), .subject = "beta"},
	{"v4 to link-scope multicast 224.0.0.251", .pkt = UDP4(BETA4, "224.0.0.251", 5353, 5353),
	 DROP(FW_DROP_POD_LOCAL), .subject = "beta"},
	{"v6 to link-scope multicast ff02::fb", .pkt = UDP6(BETA6, "ff02::fb", 5353, 5353),
	 DROP(FW_DROP_POD_LOCAL), .subject = "beta"},
	{"v4 239.1.2.3 (wider multicast) goes to policy",
	 .pkt = UDP4(BETA4, "239.1.2.3", 40000, 8081), PASS(FW_PASS_DEFAULT), .subject = "beta"},
	{"v4 128.0.0.1 is not loopback", .pkt = TCP4(BETA4, "128.0.0.1", 40000, 8081),
	 PASS(FW_PASS_DEFAULT), .subject = "beta"},
	{"v6 ::2 is not loopback", .pkt = TCP6(BETA6, "::2", 40000, 8081), PASS(FW_PASS_DEFAULT),
	 .subject = "beta"},
	/* fastwalld could not write every pod address: fail closed */
	{"local set full: everything is pod-local", .setup = local_full,
	 .pkt = TCP4(BETA4, OK4, 40000, 80), DROP(FW_DROP_POD_LOCAL), .subject = "beta"},
	{"local set full: DNS to any other resolver drops", .setup = local_full,
	 .pkt = UDP4(BETA4, OK4, 40000, 53), DROP(FW_DROP_POD_LOCAL), .subject = "beta"},
	{"local set full: DNS to the gateway still passes", .setup = local_full,
	 .pkt = UDP4(ALPHA4, ALPHA_GW4, 40000, 53), PASS(FW_PASS_DNS_LOCAL), .subject = "alpha"},
	{"local set fits again", .setup = doh_off, .pkt = TCP4(BETA4, OK4, 40000, 80),
	 PASS(FW_PASS_DEFAULT), .subject = "beta"},

	/* DNS to the proxy (port DNS_PORT): the gateway's port moves, other
	 * resolvers become the gateway; answers get their source back */
	{"dns proxy: v4 udp 53 to the gateway moves to the proxy port", .setup = dns_proxy_all,
	 .pkt = UDP4(ALPHA4, ALPHA_GW4, 40001, 53, .payload = 30, .csum = true),
	 OUT(UDP4(ALPHA4, ALPHA_GW4, 40001, DNS_PORT, .payload = 30, .csum = true)),
	 PASS(FW_PASS_DNS_PROXY), .subject = "alpha"},
	{"dns proxy: v4 udp without checksum keeps none", .then = true,
	 .pkt = UDP4(ALPHA4, ALPHA_GW4, 40002, 53, .payload = 30),
	 OUT(UDP4(ALPHA4, ALPHA_GW4, 40002, DNS_PORT, .payload = 30)), PASS(FW_PASS_DNS_PROXY),
	 .subject = "alpha"},
	{"dns proxy: v4 tcp 53 to the gateway", .then = true,
	 .pkt = TCP4(ALPHA4, ALPHA_GW4, 40003, 53, .payload = 40, .csum = true),
	 OUT(TCP4(ALPHA4, ALPHA_GW4, 40003, DNS_PORT, .payload = 40, .csum = true)),
	 PASS(FW_PASS_DNS_PROXY), .subject = "alpha"},
	{"dns proxy: v6 udp 53 to the gateway", .then = true,
	 .pkt = UDP6(ALPHA6, ALPHA_GW6, 40001, 53, .payload = 30, .csum = true),
	 OUT(UDP6(ALPHA6, ALPHA_GW6, 40001, DNS_PORT, .payload = 30, .csum = true)),
	 PASS(FW_PASS_DNS_PROXY), .subject = "alpha"},
	{"dns proxy: v4 udp 53 to a configured local address keeps it", .then = true,
	 .pkt = UDP4(ALPHA4, LOCAL4, 40005, 53, .payload = 30, .csum = true),
	 OUT(UDP4(ALPHA4, LOCAL4, 40005, DNS_PORT, .payload = 30, .csum = true)),
	 PASS(FW_PASS_DNS_PROXY), .subject = "alpha"},
	{"dns proxy: v4 udp 53 to another resolver goes to the gateway", .then = true,
	 .pkt = UDP4(ALPHA4, NOWHERE4, 40004, 53, .payload = 30, .csum = true),
	 OUT(UDP4(ALPHA4, ALPHA_GW4, 40004, DNS_PORT, .payload = 30, .csum = true)),
	 PASS(FW_PASS_DNS_PROXY), .subject = "alpha"},
	{"dns proxy: v4 tcp 53 to another resolver (allowed cidr) goes to the gateway",
	 .then = true,
	 .pkt = TCP4(ALPHA4, OK4, 40006, 53, .tcp_flags = TH_ACK, .payload = 40, .csum = true),
	 OUT(TCP4(ALPHA4, ALPHA_GW4, 40006, DNS_PORT, .tcp_flags = TH_ACK, .payload = 40,
		  .csum = true)),
	 PASS(FW_PASS_DNS_PROXY), .subject = "alpha"},
	{"dns proxy: v6 tcp 53 to another resolver goes to the gateway", .then = true,
	 .pkt = TCP6(ALPHA6, NOWHERE6, 40004, 53, .payload = 40, .csum = true),
	 OUT(TCP6(ALPHA6, ALPHA_GW6, 40004, DNS_PORT, .payload = 40, .csum = true)),
	 PASS(FW_PASS_DNS_PROXY), .subject = "alpha"},
	{"dns proxy: egress answer to the other-resolver query gets its source back", .then = true,
	 .prog = EGRESS,
	 .pkt = UDP4(ALPHA_GW4, ALPHA4, DNS_PORT, 40004, .payload = 60, .csum = true),
	 OUT(UDP4(NOWHERE4, ALPHA4, 53, 40004, .payload = 60, .csum = true)), .verdict = TC_ACT_OK},
	{"dns proxy: egress v6 tcp answer gets its source back", .then = true, .prog = EGRESS,
	 .pkt = TCP6(ALPHA_GW6, ALPHA6, DNS_PORT, 40004, .tcp_flags = TH_ACK, .payload = 60,
		     .csum = true),
	 OUT(TCP6(NOWHERE6, ALPHA6, 53, 40004, .tcp_flags = TH_ACK, .payload = 60, .csum = true)),
	 .verdict = TC_ACT_OK},
	{"dns proxy: egress answer from the gateway keeps it, port 53", .then = true,
	 .prog = EGRESS,
	 .pkt = UDP4(ALPHA_GW4, ALPHA4, DNS_PORT, 40001, .payload = 60, .csum = true),
	 OUT(UDP4(ALPHA_GW4, ALPHA4, 53, 40001, .payload = 60, .csum = true)),
	 .verdict = TC_ACT_OK},
	{"dns proxy: egress answer without a record: port 53 only", .setup = dns_proxy_all,
	 .prog = EGRESS,
	 .pkt = UDP4(ALPHA_GW4, ALPHA4, DNS_PORT, 40099, .payload = 60, .csum = true),
	 OUT(UDP4(ALPHA_GW4, ALPHA4, 53, 40099, .payload = 60, .csum = true)),
	 .verdict = TC_ACT_OK},
	{"dns proxy: egress from another pod port is left alone", .setup = dns_proxy_all,
	 .prog = EGRESS, .pkt = UDP4(ALPHA_GW4, ALPHA4, 5353, 40001, .payload = 60, .csum = true),
	 .verdict = TC_ACT_OK},
	{"dns proxy: egress from the proxy port of a non-local address is left alone",
	 .setup = dns_proxy_all, .prog = EGRESS,
	 .pkt = UDP4(OK4, ALPHA4, DNS_PORT, 40001, .payload = 60, .csum = true),
	 .verdict = TC_ACT_OK},
	{"dns proxy: a denying subject's DNS reaches the proxy (NXDOMAIN there)",
	 .setup = dns_proxy_all, .pkt = UDP4(GAMMA4, LOCAL4, 40010, 53, .csum = true),
	 OUT(UDP4(GAMMA4, LOCAL4, 40010, DNS_PORT, .csum = true)), PASS(FW_PASS_DNS_PROXY),
	 .subject = "gamma"},
	{"dns proxy: no gateway, other resolver: policy decides (beta default allow)",
	 .setup = dns_proxy_all, .pkt = UDP4(BETA4, NOWHERE4, 40011, 53, .csum = true),
	 PASS(FW_PASS_DEFAULT), .subject = "beta"},
	{"dns proxy: a spoofed source is dropped, not redirected", .setup = dns_proxy_all,
	 .pkt = UDP4(DELTA4, LOCAL4, 40012, 53, .csum = true), DROP(FW_DROP_SPOOF),
	 .subject = "delta"},
	{"dns proxy: first fragment of a query cannot be redirected", .setup = dns_proxy_all,
	 .pkt = UDP4(ALPHA4, ALPHA_GW4, 40013, 53, FRAG_FIRST(99), .payload = 64),
	 DROP(FW_DROP_FRAGMENT), .subject = "alpha"},
	{"dns proxy: dot still drops", .setup = dns_proxy_all, .pkt = TCP4(ALPHA4, OK4, 40014, 853),
	 DROP(FW_DROP_DOT), .subject = "alpha"},
	{"dns proxy gateway-only: other resolver is policy (default deny)",
	 .setup = dns_proxy_gateway_only, .pkt = UDP4(ALPHA4, NOWHERE4, 40015, 53, .csum = true),
	 DROP(FW_DROP_DEFAULT_DENY), .subject = "alpha"},
	{"dns proxy gateway-only: the gateway still goes to the proxy", .setup = dns_proxy_all,
	 .pkt = UDP4(ALPHA4, ALPHA_GW4, 40016, 53, .csum = true),
	 OUT(UDP4(ALPHA4, ALPHA_GW4, 40016, DNS_PORT, .csum = true)), PASS(FW_PASS_DNS_PROXY),
	 .subject = "alpha"},
	{"dns proxy off: the gateway's own port 53", .setup = doh_off,
	 .pkt = UDP4(ALPHA4, ALPHA_GW4, 40017, 53, .csum = true), PASS(FW_PASS_DNS_LOCAL),
	 .subject = "alpha"},
	{"dns proxy off: egress answers are left alone", .setup = dns_record_then_proxy_off,
	 .prog = EGRESS,
	 .pkt = UDP4(ALPHA_GW4, ALPHA4, DNS_PORT, 40001, .payload = 60, .csum = true),
	 .verdict = TC_ACT_OK},

	/* atomic policy swap, then a rebind */
	/* per-rule ports: an entry's exceptions decide listed ports, others
	 * fall to the entry's verdict for every port, then learned and default */
	{"ports: tcp 443 to a port-limited allow", .pkt = TCP4(KAPPA4, "192.0.2.10", 40000, 443),
	 PASS(FW_PASS_ALLOW_CIDR), .subject = "kappa"},
	{"ports: udp 443 to a port-limited allow", .pkt = UDP4(KAPPA4, "192.0.2.10", 40000, 443),
	 PASS(FW_PASS_ALLOW_CIDR), .subject = "kappa"},
	{"ports: tcp 80 to a port-limited allow falls to default deny",
	 .pkt = TCP4(KAPPA4, "192.0.2.10", 40000, 80), DROP(FW_DROP_DEFAULT_DENY),
	 .subject = "kappa"},
	{"ports: icmp to a port-limited allow falls to default deny",
	 .pkt = ICMP4(KAPPA4, "192.0.2.10", ICMP4_ECHO), DROP(FW_DROP_DEFAULT_DENY),
	 .subject = "kappa"},
	{"ports: tcp 22 denied inside an allow-all cidr",
	 .pkt = TCP4(KAPPA4, "198.51.100.5", 40000, 22), DROP(FW_DROP_DENY_CIDR),
	 .subject = "kappa"},
	{"ports: tcp 80 inside the same cidr passes",
	 .pkt = TCP4(KAPPA4, "198.51.100.5", 40000, 80), PASS(FW_PASS_ALLOW_CIDR),
	 .subject = "kappa"},
	{"ports: deny host port beats allow cidr port",
	 .pkt = TCP4(KAPPA4, "203.0.113.7", 40000, 443), DROP(FW_DROP_DENY_CIDR),
	 .subject = "kappa"},
	{"ports: other allowed port of that host passes",
	 .pkt = UDP4(KAPPA4, "203.0.113.7", 40000, 53), PASS(FW_PASS_ALLOW_CIDR),
	 .subject = "kappa"},
	{"ports: allowed port of a neighbour host passes",
	 .pkt = TCP4(KAPPA4, "203.0.113.8", 40000, 443), PASS(FW_PASS_ALLOW_CIDR),
	 .subject = "kappa"},
	{"ports: a listed allow port under a deny for every port drops",
	 .pkt = TCP4(KAPPA4, "192.0.2.200", 40000, 443), DROP(FW_DROP_DENY_CIDR),
	 .subject = "kappa"},
	{"ports: udp to that listed port drops too", .pkt = UDP4(KAPPA4, "192.0.2.200", 40000, 443),
	 DROP(FW_DROP_DENY_CIDR), .subject = "kappa"},
	{"ports: an unlisted port there drops", .pkt = TCP4(KAPPA4, "192.0.2.200", 40000, 80),
	 DROP(FW_DROP_DENY_CIDR), .subject = "kappa"},
	{"ports: learned address inside a port-limited allow passes other ports",
	 .setup = kappa_learned, .pkt = TCP4(KAPPA4, "192.0.2.50", 40000, 80),
	 PASS(FW_PASS_LEARNED), .subject = "kappa"},
	{"ports swap: the old deny port 22 is gone", .then = true, .setup = kappa_swapped,
	 .pkt = TCP4(KAPPA4, "198.51.100.5", 40000, 22), PASS(FW_PASS_ALLOW_CIDR),
	 .subject = "kappa"},
	{"ports swap: 443 no longer listed falls to default deny", .then = true,
	 .pkt = TCP4(KAPPA4, "192.0.2.10", 40000, 443), DROP(FW_DROP_DEFAULT_DENY),
	 .subject = "kappa"},
	{"ports swap: the new port 8443 passes", .then = true,
	 .pkt = TCP4(KAPPA4, "192.0.2.10", 40000, 8443), PASS(FW_PASS_ALLOW_CIDR),
	 .subject = "kappa"},
	{"ports swap: learned address survived the swap", .then = true,
	 .pkt = TCP4(KAPPA4, "192.0.2.50", 40000, 80), PASS(FW_PASS_LEARNED), .subject = "kappa"},
	/* three swaps in one slot trie: the live generation holds exactly v3 */
	{"three swaps: v3 allow passes", .setup = mu_three_swaps,
	 .pkt = TCP4(MU4, "192.0.2.200", 40000, 80), PASS(FW_PASS_ALLOW_CIDR), .subject = "mu"},
	{"three swaps: v3 deny host", .then = true, .pkt = TCP4(MU4, "192.0.2.130", 40000, 80),
	 DROP(FW_DROP_DENY_CIDR), .subject = "mu"},
	{"three swaps: v3 second allow", .then = true,
	 .pkt = UDP4(MU4, "198.51.100.150", 40000, 53), PASS(FW_PASS_ALLOW_CIDR), .subject = "mu"},
	{"three swaps: v1-only allow is gone", .then = true,
	 .pkt = TCP4(MU4, "192.0.2.10", 40000, 80), DROP(FW_DROP_DEFAULT_DENY), .subject = "mu"},
	{"three swaps: v1-only deny host is gone", .then = true,
	 .pkt = TCP4(MU4, "192.0.2.66", 40000, 80), DROP(FW_DROP_DEFAULT_DENY), .subject = "mu"},
	{"three swaps: v1-only second allow is gone", .then = true,
	 .pkt = TCP4(MU4, "198.51.100.10", 40000, 80), DROP(FW_DROP_DEFAULT_DENY), .subject = "mu"},
	{"three swaps: v2-only allow is gone", .then = true,
	 .pkt = TCP4(MU4, "203.0.113.5", 40000, 80), DROP(FW_DROP_DEFAULT_DENY), .subject = "mu"},
	{"ports: default allow with deny 0.0.0.0/0 port 25",
	 .pkt = TCP4(LAMBDA4, "203.0.113.9", 40000, 25), DROP(FW_DROP_DENY_CIDR),
	 .subject = "lambda"},
	{"ports: default allow, other ports pass", .pkt = TCP4(LAMBDA4, "203.0.113.9", 40000, 587),
	 PASS(FW_PASS_DEFAULT), .subject = "lambda"},

	{"swap v1: allow A passes", .setup = swap_first_policy, .pkt = TCP4(SWAP4, OK4, 40000, 80),
	 PASS(FW_PASS_ALLOW_CIDR), .subject = "swap"},
	{"swap v1: B not allowed yet", .then = true, .pkt = TCP4(SWAP4, SWAP_B4, 40000, 80),
	 DROP(FW_DROP_DEFAULT_DENY), .subject = "swap"},
	{"swap v1: learned address passes", .then = true,
	 .pkt = TCP4(SWAP4, SWAP_LEARNED4, 40000, 80), PASS(FW_PASS_LEARNED), .subject = "swap"},
	/* B's answer is this CPU's cached one when the edit comes: the edit
	 * must end it (fastwall_rules_epoch), or B would still drop */
	{"swap v1: B still not allowed", .then = true, .pkt = TCP4(SWAP4, SWAP_B4, 40000, 80),
	 DROP(FW_DROP_DEFAULT_DENY), .subject = "swap"},
	{"swap v2 (same binding, same id, the trie edited in place): B passes at once",
	 .then = true, .setup = swap_same_binding, .pkt = TCP4(SWAP4, SWAP_B4, 40000, 80),
	 PASS(FW_PASS_ALLOW_CIDR), .subject = "swap"},
	{"swap v2: A still passes", .then = true, .pkt = TCP4(SWAP4, OK4, 40000, 80),
	 PASS(FW_PASS_ALLOW_CIDR), .subject = "swap"},
	{"swap v2: learned address survives the swap", .then = true,
	 .pkt = TCP4(SWAP4, SWAP_LEARNED4, 40000, 80), PASS(FW_PASS_LEARNED), .subject = "swap"},
	{"rebind (private cidr added, new id): learned address flushed", .then = true,
	 .setup = swap_rebind, .pkt = TCP4(SWAP4, SWAP_LEARNED4, 40000, 80),
	 DROP(FW_DROP_DEFAULT_DENY), .subject = "swap"},
	{"rebind: B passes under the new id", .then = true, .pkt = TCP4(SWAP4, SWAP_B4, 40000, 80),
	 PASS(FW_PASS_ALLOW_CIDR), .subject = "swap"},
	{"rebind: the new private cidr holds siblings", .then = true,
	 .pkt = TCP4(SWAP4, SWAP_SIB4, 40000, 80), DROP(FW_DROP_SIBLING), .subject = "swap"},

	/* TC ingress answers a destination it has seen from this CPU's cache,
	 * which skips the sibling check: growing the private CIDR in place
	 * must end those answers, or a sibling stays reachable */
	{"private cidr v1: a sibling inside it drops", .setup = sigma_first,
	 .pkt = TCP4(SIGMA4, "10.42.30.20", 40000, 80), DROP(FW_DROP_SIBLING), .subject = "sigma"},
	{"private cidr v1: a neighbour outside it passes", .then = true,
	 .pkt = TCP4(SIGMA4, SIGMA_SIB4, 40000, 80), PASS(FW_PASS_ALLOW_CIDR), .subject = "sigma"},
	{"private cidr v1: again (the cached answer)", .then = true,
	 .pkt = TCP4(SIGMA4, SIGMA_SIB4, 40000, 80), PASS(FW_PASS_ALLOW_CIDR), .subject = "sigma"},
	{"private cidr grown in place (same fence, same id): the neighbour is a sibling",
	 .then = true, .setup = sigma_grown4, .pkt = TCP4(SIGMA4, SIGMA_SIB4, 40000, 80),
	 DROP(FW_DROP_SIBLING), .subject = "sigma"},
	{"private cidr v6 still as it was: the v6 neighbour passes", .then = true,
	 .pkt = TCP6(SIGMA6, SIGMA_SIB6, 40000, 80), PASS(FW_PASS_ALLOW_CIDR), .subject = "sigma"},
	{"private cidr v6: again (the cached answer)", .then = true,
	 .pkt = TCP6(SIGMA6, SIGMA_SIB6, 40000, 80), PASS(FW_PASS_ALLOW_CIDR), .subject = "sigma"},
	{"private cidr v6 grown in place: the v6 neighbour is a sibling", .then = true,
	 .setup = sigma_grown6, .pkt = TCP6(SIGMA6, SIGMA_SIB6, 40000, 80), DROP(FW_DROP_SIBLING),
	 .subject = "sigma"},

	/* a hit skips the pod-local checks too: what they read (the
	 * pod-local set, the settings, the gateway) must end the answers
	 * when it changes */
	{"pod-local later: an allowed destination passes", .pkt = TCP4(ALPHA4, CACHED4, 40000, 80),
	 PASS(FW_PASS_ALLOW_CIDR), .subject = "alpha"},
	{"pod-local later: again (the cached answer)", .then = true,
	 .pkt = TCP4(ALPHA4, CACHED4, 40000, 80), PASS(FW_PASS_ALLOW_CIDR), .subject = "alpha"},
	{"pod-local later: it joins the pod's addresses and drops as pod-local", .then = true,
	 .setup = local_cached, .pkt = TCP4(ALPHA4, CACHED4, 40000, 80), DROP(FW_DROP_POD_LOCAL),
	 .subject = "alpha"},
	{"pod-local later: DNS to it is the pod's now", .then = true,
	 .pkt = UDP4(ALPHA4, CACHED4, 40000, 53), PASS(FW_PASS_DNS_LOCAL), .subject = "alpha"},
	{"local set full later: an allowed destination passes", .pkt = TCP4(ALPHA4, OK4, 40000, 80),
	 PASS(FW_PASS_ALLOW_CIDR), .subject = "alpha"},
	{"local set full later: again (the cached answer)", .then = true,
	 .pkt = TCP4(ALPHA4, OK4, 40000, 80), PASS(FW_PASS_ALLOW_CIDR), .subject = "alpha"},
	{"local set full later: the cached destination drops as pod-local", .then = true,
	 .setup = local_full, .pkt = TCP4(ALPHA4, OK4, 40000, 80), DROP(FW_DROP_POD_LOCAL),
	 .subject = "alpha"},
	{"gateway later: the neighbour passes", .setup = sigma_first,
	 .pkt = TCP4(SIGMA4, SIGMA_SIB4, 40000, 80), PASS(FW_PASS_ALLOW_CIDR), .subject = "sigma"},
	{"gateway later: again (the cached answer)", .then = true,
	 .pkt = TCP4(SIGMA4, SIGMA_SIB4, 40000, 80), PASS(FW_PASS_ALLOW_CIDR), .subject = "sigma"},
	{"gateway set in place on the neighbour's address: it is pod-local", .then = true,
	 .setup = sigma_gateway, .pkt = TCP4(SIGMA4, SIGMA_SIB4, 40000, 80),
	 DROP(FW_DROP_POD_LOCAL), .subject = "sigma"},
	{"gateway later: a second neighbour passes", .then = true,
	 .pkt = TCP4(SIGMA4, SIGMA_SIB4_2, 40000, 80), PASS(FW_PASS_ALLOW_CIDR),
	 .subject = "sigma"},
	{"gateway later: again (the cached answer)", .then = true,
	 .pkt = TCP4(SIGMA4, SIGMA_SIB4_2, 40000, 80), PASS(FW_PASS_ALLOW_CIDR),
	 .subject = "sigma"},
	{"gateway moved in place onto the second neighbour: it is pod-local", .then = true,
	 .setup = sigma_gateway_moved, .pkt = TCP4(SIGMA4, SIGMA_SIB4_2, 40000, 80),
	 DROP(FW_DROP_POD_LOCAL), .subject = "sigma"},
	{"gateway moved: the first neighbour is no gateway any more", .then = true,
	 .pkt = TCP4(SIGMA4, SIGMA_SIB4, 40000, 80), PASS(FW_PASS_ALLOW_CIDR), .subject = "sigma"},

	/* TC ingress answers a source it has answered for the same
	 * destination from this CPU's slot of the source, without the
	 * dispatch value: every dispatch write must end it */
	{"source slot: the first packet passes", .setup = tau_first,
	 .pkt = TCP4(TAU4, OK4, 40000, 80), PASS(FW_PASS_ALLOW_CIDR), .subject = "tau"},
	{"source slot: it left its answer in this CPU's slot", .then = true,
	 .setup = tau_slot_filled, .pkt = TCP4(TAU4, OK4, 40000, 80), PASS(FW_PASS_ALLOW_CIDR),
	 .subject = "tau"},
	{"source slot: the slot decides (a deny written into it drops)", .then = true,
	 .setup = tau_slot_forged, .pkt = TCP4(TAU4, OK4, 40000, 80), DROP(FW_DROP_DENY_CIDR),
	 .subject = "tau", .forged = true},
	{"source slot: a raised epoch ends it", .then = true, .setup = tau_epoch_raised,
	 .pkt = TCP4(TAU4, OK4, 40000, 80), PASS(FW_PASS_ALLOW_CIDR), .subject = "tau"},
	{"source slot: DNS over TLS to the answered destination still drops", .then = true,
	 .pkt = UDP4(TAU4, OK4, 40000, 853), DROP(FW_DROP_DOT), .subject = "tau"},
	{"source slot: denying in place (same id) drops at once", .then = true,
	 .setup = tau_denying, .pkt = TCP4(TAU4, OK4, 40000, 80), DROP(FW_DROP_DENYING),
	 .subject = "tau"},
	{"source slot: active again passes", .then = true, .setup = tau_active,
	 .pkt = TCP4(TAU4, OK4, 40000, 80), PASS(FW_PASS_ALLOW_CIDR), .subject = "tau"},
	{"source slot: again (from the slot)", .then = true, .pkt = TCP4(TAU4, OK4, 40000, 80),
	 PASS(FW_PASS_ALLOW_CIDR), .subject = "tau"},
	{"source slot: bound to the dummy port in place: loopback is a spoof", .then = true,
	 .setup = tau_bound, .pkt = TCP4(TAU4, OK4, 40000, 80), DROP(FW_DROP_SPOOF),
	 .subject = "tau"},
	{"source slot: bound: its own port passes", .then = true, .on_dummy = true,
	 .pkt = TCP4(TAU4, OK4, 40000, 80), PASS(FW_PASS_ALLOW_CIDR), .subject = "tau"},
	{"source slot: bound: again (from the slot)", .then = true, .on_dummy = true,
	 .pkt = TCP4(TAU4, OK4, 40000, 80), PASS(FW_PASS_ALLOW_CIDR), .subject = "tau"},
	{"source slot: bound: loopback from the slot is still a spoof", .then = true,
	 .pkt = TCP4(TAU4, OK4, 40000, 80), DROP(FW_DROP_SPOOF), .subject = "tau"},
	{"source slot: unbound from the port in place: loopback passes", .then = true,
	 .setup = tau_unbound_port, .pkt = TCP4(TAU4, OK4, 40000, 80), PASS(FW_PASS_ALLOW_CIDR),
	 .subject = "tau"},
	{"source slot: again (from the slot)", .then = true, .pkt = TCP4(TAU4, OK4, 40000, 80),
	 PASS(FW_PASS_ALLOW_CIDR), .subject = "tau"},
	{"source slot: the address rebound to another subject: its policy, its counter",
	 .then = true, .setup = tau_rebound, .pkt = TCP4(TAU4, OK4, 40000, 80),
	 PASS(FW_PASS_DEFAULT), .subject = "upsilon"},
	{"source slot: again (from the slot)", .then = true, .pkt = TCP4(TAU4, OK4, 40000, 80),
	 PASS(FW_PASS_DEFAULT), .subject = "upsilon"},
	{"source slot: the address removed: nobody's", .then = true, .setup = tau_gone,
	 .pkt = TCP4(TAU4, OK4, 40000, 80), DROP(FW_DROP_UNKNOWN_SOURCE)},
};

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

static void events_drain(void)
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

enum run_flags {
	RUN_EVENTS = 1 << 0, /* check the deny event (off where a scenario counts them) */
	RUN_QUIET = 1 << 1,  /* print nothing when the row holds */
};

/* Runs one row; prints the details and returns false on any mismatch. */
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

	if (r->prog != INGRESS || p->kind != PK_IP || r->forged)
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

static bool run_row(const struct row *r, unsigned int flags)
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
	err = bpf_prog_test_run_opts(
		r->prog == EGRESS ? t.dp->to_sandbox_fd : t.dp->from_sandbox_fd, &opts);
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

	if (r->prog == EGRESS) {
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
	if (r->prog == EGRESS)
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

static int passed, failed;

static void result(bool ok, const char *desc, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void result(bool ok, const char *desc, const char *fmt, ...)
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

static size_t events_of(__u32 id, __u64 *suppressed)
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

/* Burst 5, one event a second after it: a flooding subject gets 5 events
 * out of 20 drops, another subject keeps its own budget, and the next
 * event after an interval says how many were suppressed. */
/* fastwall explain without --iface: the packet comes from the subject's
 * own interface, which a subject bound to one that is not there never
 * has (zeta: every packet of it drops), and an unbound one has anywhere. */
static void explain_no_iface(void)
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

static void scenario_event_rate_limit(void)
{
	const struct row flood = {"flood-a: default deny",
				  .pkt = TCP4(FLOOD_A4, NOWHERE4, 40000, 80),
				  DROP(FW_DROP_DEFAULT_DENY), .subject = "flood-a"};
	const struct row other = {"flood-b: default deny",
				  .pkt = TCP4(FLOOD_B4, NOWHERE4, 40000, 80),
				  DROP(FW_DROP_DEFAULT_DENY), .subject = "flood-b"};
	__u32 a = id_of("flood-a"), b = id_of("flood-b");
	struct fw_event got[MAX_EVENTS];
	size_t ngot = 0, n;
	__u64 suppressed = ~0ull;
	bool all = true;

	t.cfg.event_burst = 5;
	t.cfg.event_interval_ns = NSEC_PER_SEC;
	if (fw_dp_config_set(t.dp, &t.cfg)) {
		result(false, "rate limit: config", "can't set the config");
		return;
	}
	events_drain();
	/* run_row drains before each packet: keep what each run produced */
	for (int i = 0; i < 20; i++) {
		all &= run_row(&flood, RUN_QUIET);
		for (size_t j = 0; j < t.nev && ngot < MAX_EVENTS; j++)
			got[ngot++] = t.ev[j];
	}
	result(all, "rate limit: 20 drops of flood-a, all dropped and counted", NULL);
	memcpy(t.ev, got, ngot * sizeof(got[0]));
	t.nev = ngot;
	n = events_of(a, NULL);
	result(n == 5 && ngot == 5, "rate limit: burst 5 -> 5 events out of 20 drops",
	       "flood-a: %zu events (%zu in all), expected 5", n, ngot);

	ngot = 0;
	for (int i = 0; i < 3; i++) {
		all &= run_row(&other, RUN_QUIET);
		for (size_t j = 0; j < t.nev && ngot < MAX_EVENTS; j++)
			got[ngot++] = t.ev[j];
	}
	memcpy(t.ev, got, ngot * sizeof(got[0]));
	t.nev = ngot;
	n = events_of(b, NULL);
	result(n == 3 && ngot == 3, "rate limit: flood-b keeps its own budget (3 of 3)",
	       "flood-b: %zu events (%zu in all), expected 3", n, ngot);

	/* one interval later there is room for one more, carrying the count */
	usleep(1100 * 1000);
	run_row(&flood, RUN_QUIET);
	n = events_of(a, &suppressed);
	result(n == 1 && suppressed == 15,
	       "rate limit: next event after an interval reports 15 suppressed",
	       "%zu events, suppressed %llu, expected 1 event with 15", n,
	       (unsigned long long)suppressed);
}

/* monitor.allow_sample: with the flag a passed packet is an allow event
 * (here one in one), carrying its pass reason; without it none. */
static void scenario_allow_sample(void)
{
	const struct row pass = {"alpha: udp to allow cidr", .pkt = UDP4(ALPHA4, OK4, 40000, 5000),
				 PASS(FW_PASS_ALLOW_CIDR), .subject = "alpha"};
	struct fw_config saved = t.cfg;
	__u32 id = id_of("alpha");
	const struct fw_event *ev = &t.ev[0];
	bool ok;

	t.cfg.flags |= FW_CF_ALLOW_SAMPLE;
	t.cfg.allow_sample = 1;
	t.cfg.event_burst = 1000;
	t.cfg.event_interval_ns = 1000;
	if (fw_dp_config_set(t.dp, &t.cfg)) {
		result(false, "allow sample: config", "can't set the config");
		return;
	}
	ok = run_row(&pass, RUN_QUIET);
	result(ok && t.nev == 1 && ev->type == FW_EVENT_ALLOW && ev->subject == id &&
		       ev->reason == FW_PASS_ALLOW_CIDR && ev->dport == htons(5000) &&
		       ev->proto == IPPROTO_UDP,
	       "allow sample 1 in 1: a passed packet is one allow event with its reason",
	       "%zu events, type %u subject %u reason %s", t.nev, t.nev ? ev->type : 0,
	       t.nev ? ev->subject : 0, t.nev ? fw_reason_name(ev->reason) : "-");
	t.cfg = saved;
	fw_dp_config_set(t.dp, &t.cfg);
	ok = run_row(&pass, RUN_QUIET);
	result(ok && t.nev == 0, "allow sample off: a passed packet emits nothing", "%zu events",
	       t.nev);
}

/* This CPU's row of subject id in fastwall_subject_rows; false when
 * it can't be read. */
static bool row_of(__u32 id, struct fw_subject_row *out)
{
	int cpu = sched_getcpu();
	__u32 key = FW_ROW_KEY(cpu < 0 ? 0 : (__u32)cpu, id);

	return bpf_map_lookup_elem(t.dp->subject_rows_fd, &key, out) == 0;
}

static __u64 stats_row_slot(__u32 id, __u32 reason)
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

/* 24 single addresses, none adjacent (the compiler would merge them): 25
 * compiled entries with the default, more than a small set holds, so its
 * rules go to the slot's trie. */
static const struct subject_def tau_big = {
	.name = "tau",
	.addrs = {"10.42.14.10"},
	.default_action = "deny",
	.rules =
		{
			"allow 192.0.2.100/32", "allow 192.0.2.102/32", "allow 192.0.2.104/32",
			"allow 192.0.2.106/32", "allow 192.0.2.108/32", "allow 192.0.2.110/32",
			"allow 192.0.2.112/32", "allow 192.0.2.114/32", "allow 192.0.2.116/32",
			"allow 192.0.2.118/32", "allow 192.0.2.120/32", "allow 192.0.2.122/32",
			"allow 192.0.2.124/32", "allow 192.0.2.126/32", "allow 192.0.2.128/32",
			"allow 192.0.2.130/32", "allow 192.0.2.132/32", "allow 192.0.2.134/32",
			"allow 192.0.2.136/32", "allow 192.0.2.138/32", "allow 192.0.2.140/32",
			"allow 192.0.2.142/32", "allow 192.0.2.144/32", "allow 192.0.2.146/32",
		},
};

/* 65 entries: more than the chunks of a small set hold */
static const struct subject_def tau_huge = {
	.name = "tau",
	.addrs = {"10.42.14.10"},
	.default_action = "deny",
	.rules =
		{
			"allow 192.0.2.100/32", "allow 192.0.2.101/32", "allow 192.0.2.102/32",
			"allow 192.0.2.103/32", "allow 192.0.2.104/32", "allow 192.0.2.105/32",
			"allow 192.0.2.106/32", "allow 192.0.2.107/32", "allow 192.0.2.108/32",
			"allow 192.0.2.109/32", "allow 192.0.2.110/32", "allow 192.0.2.111/32",
			"allow 192.0.2.112/32", "allow 192.0.2.113/32", "allow 192.0.2.114/32",
			"allow 192.0.2.115/32", "allow 192.0.2.116/32", "allow 192.0.2.117/32",
			"allow 192.0.2.118/32", "allow 192.0.2.119/32", "allow 192.0.2.120/32",
			"allow 192.0.2.121/32", "allow 192.0.2.122/32", "allow 192.0.2.123/32",
			"allow 192.0.2.124/32", "allow 192.0.2.125/32", "allow 192.0.2.126/32",
			"allow 192.0.2.127/32", "allow 192.0.2.128/32", "allow 192.0.2.129/32",
			"allow 192.0.2.130/32", "allow 192.0.2.131/32", "allow 192.0.2.132/32",
			"allow 192.0.2.133/32", "allow 192.0.2.134/32", "allow 192.0.2.135/32",
			"allow 192.0.2.136/32", "allow 192.0.2.137/32", "allow 192.0.2.138/32",
			"allow 192.0.2.139/32", "allow 192.0.2.140/32", "allow 192.0.2.141/32",
			"allow 192.0.2.142/32", "allow 192.0.2.143/32", "allow 192.0.2.144/32",
			"allow 192.0.2.145/32", "allow 192.0.2.146/32", "allow 192.0.2.147/32",
			"allow 192.0.2.148/32", "allow 192.0.2.149/32", "allow 192.0.2.150/32",
			"allow 192.0.2.151/32", "allow 192.0.2.152/32", "allow 192.0.2.153/32",
			"allow 192.0.2.154/32", "allow 192.0.2.155/32", "allow 192.0.2.156/32",
			"allow 192.0.2.157/32", "allow 192.0.2.158/32", "allow 192.0.2.159/32",
			"allow 192.0.2.160/32", "allow 192.0.2.161/32", "allow 192.0.2.162/32",
			"allow 192.0.2.163/32",
		},
};

static const struct subject_def tau_small = {
	.name = "tau",
	.addrs = {"10.42.14.10"},
	.default_action = "deny",
	.rules = {"allow 192.0.2.146/32", "allow 192.0.2.64/26"},
};

/* Whether small sets are on in this run (FASTWALL_RULE_SET_MAX=0: off). */
static bool sets_on(void)
{
	const char *v = getenv("FASTWALL_RULE_SET_MAX");

	return !v || strcmp(v, "0") != 0;
}

/* Whether range tables are on in this run (FASTWALL_RULE_RANGE_MAX=0: off). */
static bool ranges_on(void)
{
	const char *v = getenv("FASTWALL_RULE_RANGE_MAX");

	return !v || strcmp(v, "0") != 0;
}

/* Whether gen is the form a compiled set of n entries takes in this run:
 * a small set up to FW_SET_LARGEST entries, a range table up to
 * FW_RANGE_RULES (it fits, for the sets of these tests), else the trie. */
static bool form_is(__u32 gen, size_t n)
{
	if (sets_on() && n <= FW_SET_LARGEST)
		return (gen & FW_GEN_FORMS) == FW_GEN_SET;
	if (ranges_on() && n <= FW_RANGE_RULES)
		return (gen & FW_GEN_FORMS) == FW_GEN_RANGE;
	return (gen & FW_GEN_FORMS) == 0;
}

static const char *form_name(__u32 gen)
{
	return gen & FW_GEN_RANGE ? "a range table" : gen & FW_GEN_SET ? "a small set" : "the trie";
}

/* How many keys of map fd belong to subject id: the keys of
 * fastwall_rule_sets, fastwall_conns and fastwall_learned_ports all start
 * with the subject's id. */
static int subject_keys_masked(int fd, size_t key_size, __u32 id, __u32 mask)
{
	unsigned char buf[2][64];
	void *prev = NULL;
	int n = 0, i = 0;
	__u32 owner;

	if (key_size > sizeof(buf[0]))
		return -1;
	while (!bpf_map_get_next_key(fd, prev, buf[i])) {
		memcpy(&owner, buf[i], sizeof(owner));
		n += (owner & mask) == id;
		prev = buf[i];
		i ^= 1;
	}
	return n;
}

static int subject_keys(int fd, size_t key_size, __u32 id)
{
	return subject_keys_masked(fd, key_size, id, ~0u);
}

/* The elements (chunks of small sets) of subject id in fastwall_rule_sets. */
static int sets_held(__u32 id)
{
	return subject_keys_masked(t.dp->rule_sets_fd, sizeof(struct fw_set_key), id,
				   FW_SET_ID(~0u));
}

/* The range tables of subject id in fastwall_rule_ranges. */
static int ranges_held(__u32 id)
{
	struct fw_set_key k, prev;
	bool first = true;
	int n = 0;

	while (bpf_map_get_next_key(t.dp->rule_ranges_fd, first ? NULL : &prev, &k) == 0) {
		n += k.subject == id;
		prev = k;
		first = false;
	}
	return n;
}

static bool dispatch_of(const char *addr, struct fw_subject *s)
{
	struct fw_ip key = ip_of(addr);

	return bpf_map_lookup_elem(t.dp->dispatch_fd, &key, s) == 0;
}

static bool mask_is_zero(const struct fw_ip *m)
{
	static const struct fw_ip zero;

	return memcmp(m, &zero, sizeof(zero)) == 0;
}

/* A compiled set of at most FW_SET_MAX entries is one element of
 * fastwall_rule_sets, longest prefix first and the default last; one of
 * up to FW_SET_LARGEST entries is that many chunks of FW_SET_MAX; a larger
 * one goes to the trie; a subject moves between the forms with its
 * verdicts intact, and the form it left is deleted after a grace period. */
static void scenario_rule_forms(void)
{
	const struct pkt_spec last = UDP4("10.42.14.10", "192.0.2.146", 40000, 5000);
	const struct pkt_spec mid = UDP4("10.42.14.10", "192.0.2.130", 40000, 5000);
	const struct pkt_spec wide = UDP4("10.42.14.10", "192.0.2.70", 40000, 5000);
	const struct pkt_spec out = UDP4("10.42.14.10", "192.0.2.147", 40000, 5000);
	const struct pkt_spec odd = UDP4("10.42.14.10", "192.0.2.163", 40000, 5000);
	const struct pkt_spec beyond = UDP4("10.42.14.10", "192.0.2.164", 40000, 5000);
	struct fw_rule_set set;
	struct fw_subject s;
	struct fw_set_key k;
	bool sorted = true;
	int v1, v2, v3, v4;
	__u32 id;

	if (!dispatch_of(ALPHA4, &s)) {
		result(false, "rule forms: alpha's dispatch value", NULL);
		return;
	}
	k = (struct fw_set_key){.subject = s.id, .gen = s.rules_gen};
	if (sets_on()) {
		bool held = !bpf_map_lookup_elem(t.dp->rule_sets_fd, &k, &set);

		for (__u32 i = 1; held && i < set.n && i < FW_SET_MAX; i++)
			sorted = sorted && memcmp(&set.e[i - 1].mask, &set.e[i].mask,
						  sizeof(set.e[i].mask)) >= 0;
		result((s.rules_gen & FW_GEN_SET) && held && set.n >= 2 && sorted &&
			       mask_is_zero(&set.e[set.n - 1].mask) &&
			       set.e[set.n - 1].rule.is_default,
		       "rule forms: a small policy is one set, longest prefix first, default last",
		       "gen %#x, held %d, %u entries, sorted %d", s.rules_gen, held,
		       held ? set.n : 0, sorted);
	} else {
		result(!(s.rules_gen & FW_GEN_SET) && sets_held(s.id) == 0 &&
			       !!(s.rules_gen & FW_GEN_RANGE) == ranges_on(),
		       "rule forms: with FASTWALL_RULE_SET_MAX=0 no policy is a small set (a range "
		       "table, or the trie with FASTWALL_RULE_RANGE_MAX=0 too)",
		       "gen %#x, %d sets", s.rules_gen, sets_held(s.id));
	}

	/* 25 entries: chunk 0 holds the first 20 /32s, chunk 1 the other
	 * four and the default, where "last" and "out" are decided */
	if (subject_put(&tau_big) || !dispatch_of("10.42.14.10", &s)) {
		result(false, "rule forms: fixture", "can't put tau");
		return;
	}
	id = s.id;
	v1 = run_frame(t.dp->from_sandbox_fd, &last);
	v2 = run_frame(t.dp->from_sandbox_fd, &mid);
	v3 = run_frame(t.dp->from_sandbox_fd, &out);
	k = (struct fw_set_key){.subject = FW_SET_SUBJECT(id, 1), .gen = s.rules_gen};
	set.n = 0;
	bpf_map_lookup_elem(t.dp->rule_sets_fd, &k, &set);
	result(!!(s.rules_gen & FW_GEN_SET) == sets_on() && v1 == TC_ACT_OK && v2 == TC_ACT_OK &&
		       v3 == TC_ACT_SHOT && sets_held(id) == (sets_on() ? 2 : 0) &&
		       (!sets_on() || (set.n == 5 && set.e[4].rule.is_default)),
	       "rule forms: 25 entries are a set of two chunks (the default last) and decide",
	       "gen %#x, verdicts %d %d %d, %d elements, chunk 1 holds %u", s.rules_gen, v1, v2, v3,
	       sets_held(id), set.n);

	if (subject_put(&tau_small) || !dispatch_of("10.42.14.10", &s)) {
		result(false, "rule forms: fixture", "can't shrink tau's policy");
		return;
	}
	fw_dp_rules_settle(t.dp);
	v1 = run_frame(t.dp->from_sandbox_fd, &last);
	v2 = run_frame(t.dp->from_sandbox_fd, &mid);
	v3 = run_frame(t.dp->from_sandbox_fd, &wide);
	v4 = run_frame(t.dp->from_sandbox_fd, &out);
	result(s.id == id && !!(s.rules_gen & FW_GEN_SET) == sets_on() && v1 == TC_ACT_OK &&
		       v2 == TC_ACT_SHOT && v3 == TC_ACT_OK && v4 == TC_ACT_SHOT &&
		       sets_held(id) == (sets_on() ? 1 : 0),
	       "rule forms: shrunk to one chunk, the set decides as the new one; both old chunks "
	       "are deleted",
	       "id %u -> %u, gen %#x, verdicts %d %d %d %d, %d elements", id, s.id, s.rules_gen, v1,
	       v2, v3, v4, sets_held(id));

	if (subject_put(&tau_huge) || !dispatch_of("10.42.14.10", &s)) {
		result(false, "rule forms: fixture", "can't grow tau's policy");
		return;
	}
	fw_dp_rules_settle(t.dp);
	v1 = run_frame(t.dp->from_sandbox_fd, &last);
	v2 = run_frame(t.dp->from_sandbox_fd, &odd);
	v3 = run_frame(t.dp->from_sandbox_fd, &wide);
	v4 = run_frame(t.dp->from_sandbox_fd, &beyond);
	result(form_is(s.rules_gen, 65) && v1 == TC_ACT_OK && v2 == TC_ACT_OK &&
		       v3 == TC_ACT_SHOT && v4 == TC_ACT_SHOT && sets_held(id) == 0 &&
		       ranges_held(id) == (ranges_on() ? 1 : 0),
	       "rule forms: 65 entries, more than a set's chunks hold, are one range table (the "
	       "trie with FASTWALL_RULE_RANGE_MAX=0); the retired set is deleted",
	       "gen %#x (%s), verdicts %d %d %d %d, %d elements, %d tables", s.rules_gen,
	       form_name(s.rules_gen), v1, v2, v3, v4, sets_held(id), ranges_held(id));

	if (subject_put(&tau_big) || !dispatch_of("10.42.14.10", &s)) {
		result(false, "rule forms: fixture", "can't shrink tau's policy again");
		return;
	}
	fw_dp_rules_settle(t.dp);
	v1 = run_frame(t.dp->from_sandbox_fd, &last);
	v2 = run_frame(t.dp->from_sandbox_fd, &odd);
	result(form_is(s.rules_gen, 25) && v1 == TC_ACT_OK && v2 == TC_ACT_SHOT &&
		       sets_held(id) == (sets_on() ? 2 : 0) &&
		       ranges_held(id) == (!sets_on() && ranges_on() ? 1 : 0),
	       "rule forms: from 65 entries back to 25 (a set of two chunks); the retired "
	       "table is deleted",
	       "gen %#x (%s), verdicts %d %d, %d elements, %d tables", s.rules_gen,
	       form_name(s.rules_gen), v1, v2, sets_held(id), ranges_held(id));

	/* a start over reused pins, while the programs of the process before
	 * (an older build) may still be attached: no range table, which they
	 * could not read */
	fw_dp_rules_old_programs(t.dp, true);
	v1 = subject_put(&tau_huge) || !dispatch_of("10.42.14.10", &s);
	fw_dp_rules_settle(t.dp);
	v2 = run_frame(t.dp->from_sandbox_fd, &odd);
	v3 = run_frame(t.dp->from_sandbox_fd, &beyond);
	result(!v1 && !(s.rules_gen & FW_GEN_FORMS) && v2 == TC_ACT_OK && v3 == TC_ACT_SHOT &&
		       ranges_held(id) == 0,
	       "rule forms: while older programs may be attached, 65 entries go to the trie",
	       "put %d, gen %#x (%s), verdicts %d %d, %d tables", v1, s.rules_gen,
	       form_name(s.rules_gen), v2, v3, ranges_held(id));
	v1 = subject_put(&tau_big) || !dispatch_of("10.42.14.10", &s);
	fw_dp_rules_settle(t.dp);
	result(!v1 && (s.rules_gen & FW_GEN_FORMS) == (sets_on() ? FW_GEN_SET : 0) &&
		       ranges_held(id) == 0,
	       "rule forms: ... and 25 entries still make a small set (the trie without sets)",
	       "put %d, gen %#x (%s)", v1, s.rules_gen, form_name(s.rules_gen));
	fw_dp_rules_old_programs(t.dp, false);
	v1 = subject_put(&tau_huge) || !dispatch_of("10.42.14.10", &s);
	fw_dp_rules_settle(t.dp);
	v2 = run_frame(t.dp->from_sandbox_fd, &odd);
	result(!v1 && form_is(s.rules_gen, 65) && v2 == TC_ACT_OK &&
		       ranges_held(id) == (ranges_on() ? 1 : 0),
	       "rule forms: once this build's programs are attached, 65 entries are a range "
	       "table again",
	       "put %d, gen %#x (%s), verdict %d, %d tables", v1, s.rules_gen,
	       form_name(s.rules_gen), v2, ranges_held(id));
}

/* tau_edges: nested and touching IPv4 prefixes, allow inside deny inside
 * allow, and runs of single addresses that alternate, 70 rules in all */
static char edge_rules[72][40];

static void edges_def(struct subject_def *d)
{
	static const char *fixed[] = {
		"allow 198.51.100.0/24", "deny 198.51.100.0/26",   "allow 198.51.100.0/28",
		"deny 198.51.100.8/29",	 "allow 198.51.100.15/32", "deny 198.51.100.128/25",
		"allow 192.0.2.0/23",	 "deny 192.0.3.255/32",	   "allow 203.0.113.128/25",
		"deny 203.0.113.0/32",
	};
	size_t n = 0;

	memset(d, 0, sizeof(*d));
	d->name = "tau";
	d->addrs[0] = "10.42.14.10";
	d->default_action = "deny";
	for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++, n++)
		snprintf(edge_rules[n], sizeof(edge_rules[n]), "%s", fixed[i]);
	/* 60 single addresses denied inside the /23's allow, every other
	 * one from 192.0.2.0: 68 compiled entries or more, whatever the
	 * compiler folds of the rules above (an allow inside a deny) */
	for (unsigned int i = 0; i < 60; i++, n++)
		snprintf(edge_rules[n], sizeof(edge_rules[n]), "deny 192.0.2.%u/32", 2 * i);
	for (size_t i = 0; i < n; i++)
		d->rules[i] = edge_rules[i];
}

/* The verdict d's rules give IPv4 dst (host order), as the policy reads
 * them: a deny CIDR that holds it drops, whatever allows a longer prefix
 * of it; else an allow CIDR passes; else the default (deny) drops. */
static int edges_want(const struct subject_def *d, __u32 dst)
{
	bool allowed = false;

	for (size_t i = 0; i < sizeof(d->rules) / sizeof(d->rules[0]) && d->rules[i]; i++) {
		char action[8], target[40];
		unsigned int a, b, c, e, plen;

		if (sscanf(d->rules[i], "%7s %39s", action, target) != 2 ||
		    sscanf(target, "%u.%u.%u.%u/%u", &a, &b, &c, &e, &plen) != 5)
			continue;
		__u32 net = a << 24 | b << 16 | c << 8 | e, mask = plen ? ~0u << (32 - plen) : 0;

		if ((dst & mask) != net)
			continue;
		if (strcmp(action, "allow"))
			return TC_ACT_SHOT;
		allowed = true;
	}
	return allowed ? TC_ACT_OK : TC_ACT_SHOT;
}

/* A destination one past either end of a prefix is where a search over
 * ranges would be off by one: every edge of every rule, and both sides
 * of it, decide as the rules say, in whichever form this
 * run puts the policy (a range table by default, the trie with
 * FASTWALL_RULE_RANGE_MAX=0). */
static void scenario_range_edges(void)
{
	struct subject_def d;
	struct fw_subject s;
	int probes = 0, wrong = 0;
	char first_wrong[64] = "";
	size_t nrules = 0;

	edges_def(&d);
	while (nrules < sizeof(d.rules) / sizeof(d.rules[0]) && d.rules[nrules])
		nrules++;
	if (subject_put(&d) || !dispatch_of("10.42.14.10", &s)) {
		result(false, "range edges: fixture", "can't put tau");
		return;
	}
	for (size_t i = 0; i < nrules; i++) {
		unsigned int a, b, c, e, plen;
		__u32 net, last;

		sscanf(strchr(d.rules[i], ' ') + 1, "%u.%u.%u.%u/%u", &a, &b, &c, &e, &plen);
		net = a << 24 | b << 16 | c << 8 | e;
		last = net | (plen ? ~(~0u << (32 - plen)) : ~0u);
		__u32 probe[4] = {net - 1, net, last, last + 1};

		for (int p = 0; p < 4; p++) {
			char dst[16];
			struct pkt_spec spec = UDP4("10.42.14.10", dst, 40000, 5000);
			int got, want = edges_want(&d, probe[p]);

			snprintf(dst, sizeof(dst), "%u.%u.%u.%u", probe[p] >> 24,
				 probe[p] >> 16 & 255, probe[p] >> 8 & 255, probe[p] & 255);
			got = run_frame(t.dp->from_sandbox_fd, &spec);
			probes++;
			if (got != want && !wrong++)
				snprintf(first_wrong, sizeof(first_wrong), "%s: %d, want %d", dst,
					 got, want);
		}
	}
	result(form_is(s.rules_gen, 68) && wrong == 0 && probes == 4 * (int)nrules,
	       "range edges: both sides of every edge of 70 nested and touching prefixes decide "
	       "as the rules say",
	       "%s, %d probes, %d wrong (first %s)", form_name(s.rules_gen), probes, wrong,
	       first_wrong);
	subject_put(&tau_small);
	fw_dp_rules_settle(t.dp);
}

/* What a passed packet of a subject touches besides its dispatch value is
 * one line of this CPU: its row holds the trie answer and counts the
 * pass; a drop counts in the stats row. The reader adds both. */
static void scenario_subject_rows(void)
{
	const struct pkt_spec pass = UDP4(ALPHA4, OK4, 40000, 5000);
	const struct pkt_spec drop = UDP4(ALPHA4, BAD4, 40000, 5000);
	__u32 id = id_of("alpha");
	struct fw_subject_row r0, r1;
	__u64 before[FW_REASON_MAX], after[FW_REASON_MAX];
	struct fw_subject s;
	struct fw_ip ok, dispatch_key;
	__u64 st0 = stats_row_slot(id, FW_PASS_ALLOW_CIDR);
	int v;

	fw_addr_parse(OK4, &ok, NULL);
	fw_addr_parse(ALPHA4, &dispatch_key, NULL);
	fw_dp_subject_stats_read(t.dp, id, before);
	if (!row_of(id, &r0) || bpf_map_lookup_elem(t.dp->dispatch_fd, &dispatch_key, &s)) {
		result(false, "subject rows: read", "can't read alpha's row or dispatch value");
		return;
	}
	v = run_frame(t.dp->from_sandbox_fd, &pass);
	fw_dp_subject_stats_read(t.dp, id, after);
	result(v == TC_ACT_OK && row_of(id, &r1) &&
		       r1.packets[FW_PASS_ALLOW_CIDR] == r0.packets[FW_PASS_ALLOW_CIDR] + 1 &&
		       stats_row_slot(id, FW_PASS_ALLOW_CIDR) == st0 &&
		       after[FW_PASS_ALLOW_CIDR] == before[FW_PASS_ALLOW_CIDR] + 1,
	       "subject rows: a pass counts in this CPU's row, not the stats row, and is read",
	       "verdict %d, row %llu -> %llu, read %llu -> %llu", v,
	       (unsigned long long)r0.packets[FW_PASS_ALLOW_CIDR],
	       (unsigned long long)r1.packets[FW_PASS_ALLOW_CIDR],
	       (unsigned long long)before[FW_PASS_ALLOW_CIDR],
	       (unsigned long long)after[FW_PASS_ALLOW_CIDR]);
	result(!(r1.seq & 1) && r1.gen == s.rules_gen && memcmp(&r1.dst, &ok, sizeof(ok)) == 0 &&
		       r1.rule.action == FW_ACTION_ALLOW,
	       "subject rows: the row caches the answer for the destination",
	       "seq %u gen %u (dispatch %u) action %u", r1.seq, r1.gen, s.rules_gen,
	       r1.rule.action);
	fw_dp_subject_stats_read(t.dp, id, before);
	v = run_frame(t.dp->from_sandbox_fd, &drop);
	fw_dp_subject_stats_read(t.dp, id, after);
	result(v == TC_ACT_SHOT && row_of(id, &r0) &&
		       r0.packets[FW_PASS_ALLOW_CIDR] == r1.packets[FW_PASS_ALLOW_CIDR] &&
		       stats_row_slot(id, FW_DROP_DENY_CIDR) == after[FW_DROP_DENY_CIDR] &&
		       after[FW_DROP_DENY_CIDR] == before[FW_DROP_DENY_CIDR] + 1,
	       "subject rows: a drop counts in the stats row", "verdict %d, deny-cidr %llu -> %llu",
	       v, (unsigned long long)before[FW_DROP_DENY_CIDR],
	       (unsigned long long)after[FW_DROP_DENY_CIDR]);
}

/* Nobody reads the ring while 20000 denies go in (the rate limit wide
 * open): every event that did not fit is in fastwall_events_lost. */
static void scenario_events_lost(void)
{
	const struct pkt_spec deny = TCP4(FLOOD_B4, NOWHERE4, 40000, 80);
	const __u32 flood = 20000;
	struct fw_config saved = t.cfg;
	__u8 in[PKT_MAX], out[PKT_MAX + 64];
	LIBBPF_OPTS(bpf_test_run_opts, opts);
	__u64 before[FW_EVENT_LOST_SLOTS], after[FW_EVENT_LOST_SLOTS];
	size_t got;
	int err;

	t.cfg.event_burst = 1 << 24;
	t.cfg.event_interval_ns = 1000;
	if (fw_dp_config_set(t.dp, &t.cfg) || fw_dp_events_lost_read(t.dp, before)) {
		result(false, "events lost: setup", "can't set the config or read the counter");
		return;
	}
	events_drain();
	opts.data_in = in;
	opts.data_size_in = pkt_build(&deny, in);
	opts.data_out = out;
	opts.data_size_out = sizeof(out);
	opts.repeat = flood;
	err = bpf_prog_test_run_opts(t.dp->from_sandbox_fd, &opts);
	ring_buffer__consume(t.rb);
	got = t.nev + t.ev_lost;
	events_drain();
	if (err || fw_dp_events_lost_read(t.dp, after)) {
		result(false, "events lost: run", "test run or counter read failed");
	} else {
		__u64 lost = after[FW_EVENT_DROP] - before[FW_EVENT_DROP];

		result(opts.retval == TC_ACT_SHOT && got < flood && lost == flood - got,
		       "events lost: a full ring counts every deny event it could not take",
		       "%u denies, %zu events read, %llu counted lost, expected %llu", flood, got,
		       (unsigned long long)lost, (unsigned long long)(flood - got));
	}
	t.cfg = saved;
	fw_dp_config_set(t.dp, &t.cfg);
}

/* ---- fixture ------------------------------------------------------------ */

/* Runs one frame through prog; returns the TC verdict or -1. */
static int run_frame(int prog_fd, const struct pkt_spec *spec)
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

static int conn_of(const char *subject, const char *dst, __u16 sport, __u16 dport,
		   struct fw_conn *c)
{
	struct fw_conn_key k = {
		.subject = id_of(subject),
		.sport = htons(sport),
		.dport = htons(dport),
		.dst = ip_of(dst),
	};

	return bpf_map_lookup_elem(t.dp->conns_fd, &k, c) ? -errno : 0;
}

/* TCP to a learned address leaves a connection record for the lease
 * refresh: open on the first packet, closed by FIN (sandbox) or RST (either
 * side), reopened by a new SYN on the same ports. */
static void scenario_connections(void)
{
	const struct pkt_spec syn = TCP4(ALPHA4, LEARNED4, 41000, 443);
	const struct pkt_spec ack = TCP4(ALPHA4, LEARNED4, 41000, 443, .tcp_flags = TH_ACK);
	const struct pkt_spec fin =
		TCP4(ALPHA4, LEARNED4, 41000, 443, .tcp_flags = TH_FIN | TH_ACK);
	const struct pkt_spec syn2 = TCP4(ALPHA4, LEARNED4, 41001, 443);
	const struct pkt_spec rst_in = TCP4(LEARNED4, ALPHA4, 443, 41001, .tcp_flags = TH_RST);
	const struct pkt_spec cidr = TCP4(ALPHA4, OK4, 41002, 443);
	struct fw_conn c;
	int v;

	v = run_frame(t.dp->from_sandbox_fd, &syn);
	result(v == TC_ACT_OK && !conn_of("alpha", LEARNED4, 41000, 443, &c) && c.last_seen_ns &&
		       !c.closed_ns,
	       "conns: syn to a learned address opens a record", "verdict %d, closed_ns %llu", v,
	       (unsigned long long)c.closed_ns);
	run_frame(t.dp->from_sandbox_fd, &ack);
	result(!conn_of("alpha", LEARNED4, 41000, 443, &c) && !c.closed_ns,
	       "conns: data keeps it open", NULL);
	run_frame(t.dp->from_sandbox_fd, &fin);
	result(!conn_of("alpha", LEARNED4, 41000, 443, &c) && c.closed_ns,
	       "conns: the sandbox's fin closes it", NULL);
	run_frame(t.dp->from_sandbox_fd, &ack);
	result(!conn_of("alpha", LEARNED4, 41000, 443, &c) && c.closed_ns,
	       "conns: the last ack does not reopen it", NULL);
	c.renewed = 1;
	bpf_map_update_elem(t.dp->conns_fd,
			    &(struct fw_conn_key){.subject = id_of("alpha"),
						  .sport = htons(41000),
						  .dport = htons(443),
						  .dst = ip_of(LEARNED4)},
			    &c, BPF_EXIST);
	run_frame(t.dp->from_sandbox_fd, &syn);
	result(!conn_of("alpha", LEARNED4, 41000, 443, &c) && !c.closed_ns && !c.renewed,
	       "conns: a new syn on the same ports reopens it", NULL);
	run_frame(t.dp->from_sandbox_fd, &syn2);
	v = run_frame(t.dp->to_sandbox_fd, &rst_in);
	result(v == TC_ACT_OK && !conn_of("alpha", LEARNED4, 41001, 443, &c) && c.closed_ns,
	       "conns: a rst from the destination closes it (egress)", "verdict %d", v);
	run_frame(t.dp->from_sandbox_fd, &cidr);
	result(conn_of("alpha", OK4, 41002, 443, &c) == -ENOENT,
	       "conns: tcp to an allow cidr keeps no record", NULL);
}

/* Records per subject in fastwall_conns (a scan, not the counter). */
static size_t conns_held(__u32 id)
{
	return (size_t)subject_keys(t.dp->conns_fd, sizeof(struct fw_conn_key), id);
}

static const struct subject_def pi_def = {
	.name = "pi",
	.addrs = {"10.42.13.10"},
	.default_action = "deny",
};

/* One subject's SYN flood to its own learned address: records stop at its
 * quota (the packets still pass), a sibling's record to the same address
 * stays, and a packet of a connection not tracked makes none. 300,000
 * distinct connections: more than an LRU of FW_MAX_CONNS / 4 would hold. */
static void scenario_conn_quota(void)
{
	const struct pkt_spec sib = TCP4("10.42.13.10", LEARNED4, 42000, 443);
	const struct pkt_spec sib2 = TCP4("10.42.13.10", LEARNED4, 42001, 443);
	const struct pkt_spec bare_ack =
		TCP4("10.42.13.10", LEARNED4, 42002, 443, .tcp_flags = TH_ACK);
	const struct pkt_spec bare_fin =
		TCP4("10.42.13.10", LEARNED4, 42003, 443, .tcp_flags = TH_FIN | TH_ACK);
	__u64 *counts = fw_dp_conn_counts(t.dp);
	struct fw_ip la = ip_of(LEARNED4);
	__u32 a = id_of("alpha"), x;
	size_t passed_all = 0, total = 300000, held;
	struct fw_learn_config lc;
	struct fw_learn *l = NULL;
	struct fw_conn c;
	int v;

	if (subject_put(&pi_def) || learn("pi", LEARNED4, 600) || !counts) {
		result(false, "conn quota: fixture", "can't put subject xi or map the counts");
		return;
	}
	x = id_of("pi");
	t.cfg.conn_quota = 8;
	if (fw_dp_config_set(t.dp, &t.cfg)) {
		result(false, "conn quota: config", "can't set the config");
		return;
	}
	v = run_frame(t.dp->from_sandbox_fd, &sib);
	result(v == TC_ACT_OK && !conn_of("pi", LEARNED4, 42000, 443, &c),
	       "conn quota: the sibling's connection has a record", "verdict %d", v);

	for (size_t i = 0; i < total; i++) {
		struct pkt_spec syn =
			TCP4(ALPHA4, LEARNED4, (__u16)(1024 + i % 60000), (__u16)(1 + i / 60000));

		passed_all += run_frame(t.dp->from_sandbox_fd, &syn) == TC_ACT_OK;
	}
	held = conns_held(a);
	result(passed_all == total, "conn quota: every syn of the flood passes (learned)",
	       "%zu of %zu passed", passed_all, total);
	result(held == 8 && counts[a] == 8,
	       "conn quota: the flooder holds its quota of 8 records, no more",
	       "%zu records, count %llu", held, (unsigned long long)counts[a]);
	result(!conn_of("pi", LEARNED4, 42000, 443, &c) && !c.closed_ns,
	       "conn quota: the sibling's record survived the flood", NULL);
	v = run_frame(t.dp->from_sandbox_fd, &sib2);
	result(v == TC_ACT_OK && !conn_of("pi", LEARNED4, 42001, 443, &c) && counts[x] == 2,
	       "conn quota: the sibling still opens records of its own", "verdict %d, count %llu",
	       v, (unsigned long long)counts[x]);
	v = run_frame(t.dp->from_sandbox_fd, &bare_ack);
	result(v == TC_ACT_OK && conn_of("pi", LEARNED4, 42002, 443, &c) == -ENOENT,
	       "conn quota: an ack of an untracked connection passes, makes no record",
	       "verdict %d", v);
	v = run_frame(t.dp->from_sandbox_fd, &bare_fin);
	result(v == TC_ACT_OK && conn_of("pi", LEARNED4, 42003, 443, &c) == -ENOENT,
	       "conn quota: a fin of an untracked connection passes, makes no record", "verdict %d",
	       v);

	/* the refresh round: records of addresses its table does not hold
	 * go (the flood's: alpha's lease was written behind its back), the
	 * count follows; a drifted count is rewritten to what it found */
	fw_learn_config_init(&lc);
	if (fw_learn_new(&lc, &t.reg, &l) || fw_learn_add(l, x, &la, "pi.example.com", 600)) {
		result(false, "conn quota: learn table", NULL);
		fw_learn_free(l);
		return;
	}
	__atomic_store_n(&counts[x], 100, __ATOMIC_RELAXED);
	fw_learn_tick(l);
	result(conns_held(a) == 0 && counts[a] == 0,
	       "conn quota: the refresh deletes the flood's records and takes them off the count",
	       "%zu records, count %llu", conns_held(a), (unsigned long long)counts[a]);
	result(conns_held(x) == 2 && counts[x] == 2,
	       "conn quota: a drifted count is rewritten to the records found",
	       "%zu records, count %llu", conns_held(x), (unsigned long long)counts[x]);
	fw_learn_free(l);
	t.cfg.conn_quota = 0;
	fw_dp_config_set(t.dp, &t.cfg);
}

/* ---- learned leases: the DNS side of the policy (dns/learn.c) ---------------- */

static const struct subject_def nu_v1 = {
	.name = "nu",
	.addrs = {NU4},
	.default_action = "deny",
	.rules = {"deny bad.example.com", "allow *.example.com", "allow pypi.org"},
};

/* *.example.com is no longer allowed */
static const struct subject_def nu_v2 = {
	.name = "nu",
	.addrs = {NU4},
	.default_action = "deny",
	.rules = {"allow pypi.org", "allow files.example.com"},
};

static int decide(struct fw_learn *l, const char *client, const char *name)
{
	struct fw_dns_query q = {.qtype = FW_DNS_TYPE_A, .qclass = FW_DNS_CLASS_IN};
	struct fw_ip c = ip_of(client);
	__u64 token;

	snprintf(q.name, sizeof(q.name), "%s", name);
	q.name_len = strlen(q.name);
	return fw_learn_decide(l, &c, &q, &token);
}

/* An allowed answer for name from NU4 teaching addrs (ttl each). */
static int answer(struct fw_learn *l, const char *name, const char *const *addrs, __u32 ttl)
{
	struct fw_dns_query q = {.qtype = FW_DNS_TYPE_A, .qclass = FW_DNS_CLASS_IN};
	static struct fw_dns_answer a;
	struct fw_ip c = ip_of(NU4);

	memset(&a, 0, sizeof(a));
	snprintf(q.name, sizeof(q.name), "%s", name);
	q.name_len = strlen(q.name);
	for (size_t i = 0; addrs[i]; i++) {
		a.addrs[a.naddrs].ip = ip_of(addrs[i]);
		a.addrs[a.naddrs++].ttl = ttl;
	}
	return fw_learn_answer(l, &c, &q, id_of("nu"), &a);
}

static int verdict_to(const char *src, const char *dst, __u16 sport, __u8 flags)
{
	struct pkt_spec p = TCP4(src, dst, sport, 443, .tcp_flags = flags);

	return run_frame(t.dp->from_sandbox_fd, &p);
}

static __u64 kernel_expiry(__u32 id, const char *addr)
{
	struct fw_learned_key k = {.subject = id, .addr = ip_of(addr)};
	struct fw_lease v;

	return bpf_map_lookup_elem(t.dp->learned_fd, &k, &v) ? 0 : v.expires_ns;
}

/* ---- learned addresses carry the ports of the rules that taught them ---- */

#define RHO4 "10.42.14.10"

static const struct subject_def rho_v1 = {
	.name = "rho",
	.addrs = {RHO4},
	.default_action = "deny",
	.rules = {"allow api.example.com ports=443", "allow alt.example.com ports=8080,53",
		  "allow open.example.com", "allow 192.0.2.96/30 ports=22"},
};

/* after the restart: api.example.com goes */
static const struct subject_def rho_v3 = {
	.name = "rho",
	.addrs = {RHO4},
	.default_action = "deny",
	.rules = {"allow open.example.com"},
};

/* alt.example.com goes, api.example.com moves to 8443 */
static const struct subject_def rho_v2 = {
	.name = "rho",
	.addrs = {RHO4},
	.default_action = "deny",
	.rules = {"allow api.example.com ports=8443", "allow open.example.com"},
};

static int answer_for(struct fw_learn *l, const char *subject, const char *client, const char *name,
		      const char *addr)
{
	struct fw_dns_query q = {.qtype = FW_DNS_TYPE_A, .qclass = FW_DNS_CLASS_IN};
	static struct fw_dns_answer a;
	struct fw_ip c = ip_of(client);

	memset(&a, 0, sizeof(a));
	snprintf(q.name, sizeof(q.name), "%s", name);
	q.name_len = strlen(q.name);
	a.addrs[0].ip = ip_of(addr);
	a.addrs[0].ttl = 300;
	a.naddrs = 1;
	return fw_learn_answer(l, &c, &q, id_of(subject), &a);
}

struct port_probe {
	const char *what;
	struct pkt_spec pkt;
	int verdict;
	__u32 reason;
};

/* Runs each probe from rho; the reason is read off rho's counters. */
static void probe_all(const char *prefix, const struct port_probe *p, size_t n)
{
	__u32 id = id_of("rho");

	for (size_t i = 0; i < n; i++) {
		__u64 before[FW_REASON_MAX], after[FW_REASON_MAX];
		__u32 reason = FW_REASON_MAX;
		int v;

		fw_dp_subject_stats_read(t.dp, id, before);
		v = run_frame(t.dp->from_sandbox_fd, &p[i].pkt);
		fw_dp_subject_stats_read(t.dp, id, after);
		for (__u32 r = 0; r < FW_REASON_MAX; r++)
			if (after[r] != before[r])
				reason = r;
		result(v == p[i].verdict && (v == TC_ACT_OK || reason == p[i].reason), p[i].what,
		       "%s: verdict %d reason %u", prefix, v, reason);
	}
}

static size_t lports_held(__u32 id)
{
	return (size_t)subject_keys(t.dp->learned_ports_fd, sizeof(struct fw_port_rule_key), id);
}

static void scenario_learned_ports(void)
{
	const struct port_probe v1[] = {
		{"learned ports: 443 of the teaching rule passes",
		 TCP4(RHO4, "192.0.2.91", 40000, 443), TC_ACT_OK, 0},
		{"learned ports: udp 443 passes too", UDP4(RHO4, "192.0.2.91", 40000, 443),
		 TC_ACT_OK, 0},
		{"learned ports: port 80 drops (learned-port)", TCP4(RHO4, "192.0.2.91", 40000, 80),
		 TC_ACT_SHOT, FW_DROP_LEARNED_PORT},
		{"learned ports: icmp drops (no port)", ICMP4(RHO4, "192.0.2.91", ICMP4_ECHO),
		 TC_ACT_SHOT, FW_DROP_LEARNED_PORT},
		{"learned ports: a rule without ports teaches every port",
		 TCP4(RHO4, "192.0.2.92", 40000, 80), TC_ACT_OK, 0},
		{"learned ports: ...and icmp", ICMP4(RHO4, "192.0.2.92", ICMP4_ECHO), TC_ACT_OK, 0},
		{"learned ports: a port-limited cidr's port passes as the cidr",
		 TCP4(RHO4, "192.0.2.97", 40000, 22), TC_ACT_OK, 0},
		{"learned ports: the learned port there passes",
		 TCP4(RHO4, "192.0.2.97", 40000, 443), TC_ACT_OK, 0},
		{"learned ports: neither the cidr's nor the learned port drops",
		 TCP4(RHO4, "192.0.2.97", 40000, 80), TC_ACT_SHOT, FW_DROP_LEARNED_PORT},
	};
	const struct port_probe u[] = {
		{"learned ports: a second rule's ports are added (8080)",
		 TCP4(RHO4, "192.0.2.91", 40000, 8080), TC_ACT_OK, 0},
		{"learned ports: union keeps the first rule's 443",
		 TCP4(RHO4, "192.0.2.91", 40000, 443), TC_ACT_OK, 0},
		{"learned ports: udp 53 of the second rule", UDP4(RHO4, "192.0.2.91", 40000, 53),
		 TC_ACT_OK, 0},
		{"learned ports: still not 80", TCP4(RHO4, "192.0.2.91", 40000, 80), TC_ACT_SHOT,
		 FW_DROP_LEARNED_PORT},
		{"learned ports: every port wins a union", TCP4(RHO4, "192.0.2.92", 40000, 9999),
		 TC_ACT_OK, 0},
	};
	const struct port_probe v2[] = {
		{"learned ports: after the policy change the new port 8443 passes",
		 TCP4(RHO4, "192.0.2.91", 40000, 8443), TC_ACT_OK, 0},
		{"learned ports: the old 443 drops", TCP4(RHO4, "192.0.2.91", 40000, 443),
		 TC_ACT_SHOT, FW_DROP_LEARNED_PORT},
		{"learned ports: the revoked rule's 8080 drops",
		 TCP4(RHO4, "192.0.2.91", 40000, 8080), TC_ACT_SHOT, FW_DROP_LEARNED_PORT},
	};
	const struct port_probe adopted[] = {
		{"learned ports: after a restart the adopted lease keeps 8443",
		 TCP4(RHO4, "192.0.2.91", 40000, 8443), TC_ACT_OK, 0},
		{"learned ports: ...and still drops 443", TCP4(RHO4, "192.0.2.91", 40000, 443),
		 TC_ACT_SHOT, FW_DROP_LEARNED_PORT},
	};
	struct fw_learn_config lc;
	struct fw_learn *l = NULL;
	struct fw_ip a91 = ip_of("192.0.2.91");
	__u32 id;
	int err;

	fw_learn_config_init(&lc);
	lc.event_interval_ns = 0;
	if (subject_put(&rho_v1) || fw_learn_new(&lc, &t.reg, &l)) {
		result(false, "learned ports: setup", NULL);
		return;
	}
	id = id_of("rho");
	err = answer_for(l, "rho", RHO4, "api.example.com", "192.0.2.91");
	err = err ? err : answer_for(l, "rho", RHO4, "open.example.com", "192.0.2.92");
	err = err ? err : answer_for(l, "rho", RHO4, "api.example.com", "192.0.2.97");
	result(!err, "learned ports: answers learned", "err %d", err);
	probe_all("v1", v1, sizeof(v1) / sizeof(v1[0]));
	answer_for(l, "rho", RHO4, "alt.example.com", "192.0.2.91");
	answer_for(l, "rho", RHO4, "api.example.com", "192.0.2.92");
	probe_all("union", u, sizeof(u) / sizeof(u[0]));
	if (subject_put(&rho_v2)) {
		result(false, "learned ports: policy change", NULL);
		fw_learn_free(l);
		return;
	}
	probe_all("v2", v2, sizeof(v2) / sizeof(v2[0]));
	/* .91 on {8443}, .97 on {8443}: one set; .92 every port */
	result(lports_held(id) == 1, "learned ports: sets no lease names are deleted",
	       "%zu port entries", lports_held(id));

	/* a restart of the table: the kernel's sets are read back */
	fw_learn_free(l);
	l = NULL;
	if (fw_learn_new(&lc, &t.reg, &l) || fw_learn_adopt(l, false)) {
		result(false, "learned ports: restart", NULL);
		fw_learn_free(l);
		return;
	}
	probe_all("adopted", adopted, sizeof(adopted) / sizeof(adopted[0]));
	fw_learn_add(l, id, &a91, NULL, 600); /* extended: ports unchanged */
	probe_all("adopted, extended", adopted, sizeof(adopted) / sizeof(adopted[0]));
	result(lports_held(id) == 1, "learned ports: an adopted set stays while leases name it",
	       "%zu port entries", lports_held(id));

	/* the names were kept where the restart found them */
	{
		struct fw_learn_info info;
		struct fw_ip a92 = ip_of("192.0.2.92");
		int e1 = fw_learn_lookup(l, id, &a91, &info);

		result(!e1 && !info.adopted && info.nnames == 1 &&
			       !strcmp(info.names[0], "api.example.com"),
		       "names: after a restart the adopted address knows its name",
		       "err %d adopted %d names %zu", e1, info.adopted, info.nnames);
		e1 = fw_learn_lookup(l, id, &a92, &info);
		result(!e1 && info.nnames == 2, "names: ...both names of a shared one",
		       "err %d names %zu", e1, info.nnames);
	}
	if (subject_put(&rho_v3)) {
		result(false, "names: policy change after the restart", NULL);
		fw_learn_free(l);
		return;
	}
	result(kernel_expiry(id, "192.0.2.91") == 0 &&
		       run_frame(t.dp->from_sandbox_fd,
				 &(struct pkt_spec)TCP4(RHO4, "192.0.2.91", 40000, 8443)) ==
			       TC_ACT_SHOT,
	       "names: an adopted address whose name is denied now is revoked at once", NULL);
	result(kernel_expiry(id, "192.0.2.92") != 0 &&
		       run_frame(t.dp->from_sandbox_fd,
				 &(struct pkt_spec)TCP4(RHO4, "192.0.2.92", 40000, 80)) ==
			       TC_ACT_OK,
	       "names: one another allowed name also taught stays", NULL);
	{
		struct fw_learned_key k = {.subject = id, .addr = a91};
		struct fw_lease_names ln;

		result(bpf_map_lookup_elem(t.dp->learned_names_fd, &k, &ln) && errno == ENOENT,
		       "names: the revoked address's names record is gone", NULL);
	}
	fw_learn_free(l);
}

/* A subject's port sets are unions of its own rules' ports, chosen by the
 * names it resolves: it gets a share of fastwall_learned_ports, no more. */
static void scenario_learned_ports_share(void)
{
	static char rules[12][160];
	struct subject_def sigma = {
		.name = "sigma", .addrs = {"10.42.15.10"}, .default_action = "deny"};
	struct fw_learn_config lc;
	struct fw_learn *l = NULL;
	int refused = 0, learned = 0, err;
	__u32 id;

	for (int r = 0; r < 12; r++) {
		int off = snprintf(rules[r], sizeof(rules[r]), "allow n%d.share.test ports=", r);

		for (int k = 0; k < 16; k++)
			off += snprintf(rules[r] + off, sizeof(rules[r]) - (size_t)off, "%s%d",
					k ? "," : "", 1000 + r * 100 + k);
		sigma.rules[r] = rules[r];
	}
	fw_learn_config_init(&lc);
	lc.event_interval_ns = 0;
	if (subject_put(&sigma) || fw_learn_new(&lc, &t.reg, &l)) {
		result(false, "port share: setup", NULL);
		return;
	}
	id = id_of("sigma");
	/* address a: taught by the 8 names of the a-th 8-of-12 subset of the
	 * rules (subject_put keeps the first dozen ports of each: it reads 63
	 * characters), a union of about 96; 60 distinct sets exceed 4096 */
	for (unsigned int mask = 0, a = 0; mask < 4096 && a < 60; mask++) {
		char addr[32];

		if (__builtin_popcount(mask) != 8)
			continue;
		snprintf(addr, sizeof(addr), "198.51.100.%u", 100 + a++);
		for (int r = 0; r < 12; r++) {
			char name[32];

			if (!(mask & (1u << r)))
				continue;
			snprintf(name, sizeof(name), "n%d.share.test", r);
			err = answer_for(l, "sigma", "10.42.15.10", name, addr);
			refused += err == -ENOSPC;
			learned += !err;
		}
	}
	result(refused > 0 && lports_held(id) <= 4096,
	       "port share: a subject's port sets stop at its share of 4096 entries",
	       "%d refused, %d learned, %zu entries", refused, learned, lports_held(id));
	err = subject_put(&rho_v2);
	err = err ? err : answer_for(l, "rho", RHO4, "api.example.com", "192.0.2.94");
	result(!err && run_frame(t.dp->from_sandbox_fd,
				 &(struct pkt_spec)TCP4(RHO4, "192.0.2.94", 40000, 8443)) ==
			       TC_ACT_OK,
	       "port share: a sibling still learns addresses with ports", "err %d", err);
	fw_learn_free(l);
}

static void scenario_learned_leases(void)
{
	static const char *const api[] = {"192.0.2.77", "2001:db8:77::1", NULL};
	static const char *const pypi[] = {"192.0.2.78", "192.0.2.79", NULL};
	static const char *const shared[] = {"192.0.2.79", NULL};
	static const char *const more[] = {"198.51.100.71", "198.51.100.72", "198.51.100.73", NULL};
	static const char *const one_more[] = {"198.51.100.74", NULL};
	struct fw_learn_config lc;
	struct fw_learn_info info;
	struct fw_learn *l = NULL;
	__u64 now, exp, exp2;
	__u32 id;
	int v, err;

	fw_learn_config_init(&lc);
	lc.event_interval_ns = 0;
	if (subject_put(&nu_v1) || (err = fw_learn_new(&lc, &t.reg, &l))) {
		result(false, "learn: setup", "subject or learn table failed");
		return;
	}
	id = id_of("nu");

	/* decide */
	result(decide(l, NU4, "api.example.com") == -1, "learn: allowed wildcard name is forwarded",
	       NULL);
	result(decide(l, NU4, "API.Example.COM.") == -1,
	       "learn: case and trailing dot do not matter", NULL);
	result(decide(l, NU4, "example.com") == FW_DNS_RCODE_NXDOMAIN,
	       "learn: the wildcard does not cover its own suffix", NULL);
	result(decide(l, NU4, "bad.example.com") == FW_DNS_RCODE_NXDOMAIN,
	       "learn: an earlier deny rule wins (NXDOMAIN)", NULL);
	result(decide(l, NU4, "github.com") == FW_DNS_RCODE_NXDOMAIN,
	       "learn: no rule, default deny (NXDOMAIN)", NULL);
	result(decide(l, STRANGER4, "api.example.com") == FW_DNS_RCODE_NXDOMAIN,
	       "learn: unknown source (NXDOMAIN)", NULL);
	result(decide(l, GAMMA4, "api.example.com") == FW_DNS_RCODE_NXDOMAIN,
	       "learn: denying subject (NXDOMAIN)", NULL);
	result(decide(l, BETA4, "anything.org") == -1, "learn: default-allow subject forwards",
	       NULL);

	/* learn before the answer: the first connect passes */
	v = verdict_to(NU4, "192.0.2.77", 42000, TH_SYN);
	result(v == TC_ACT_SHOT, "learn: before the answer the address drops", "verdict %d", v);
	now = fw_now_ns();
	err = answer(l, "api.example.com", api, 30);
	v = verdict_to(NU4, "192.0.2.77", 42000, TH_SYN);
	result(!err && v == TC_ACT_OK, "learn: after the answer the first connect passes",
	       "err %d verdict %d", err, v);
	exp = kernel_expiry(id, "192.0.2.77");
	result(exp >= now + 89 * NSEC_PER_SEC && exp <= fw_now_ns() + 91 * NSEC_PER_SEC,
	       "learn: ttl 30 gives a 90 s lease in the kernel", "expires in %lld ms",
	       (long long)(exp - now) / 1000000);
	result(kernel_expiry(id, "2001:db8:77::1") != 0, "learn: AAAA learned too", NULL);
	answer(l, "api.example.com", api, 5);
	result(kernel_expiry(id, "192.0.2.77") == exp,
	       "learn: a shorter answer never shortens a lease", NULL);
	answer(l, "x.example.com", api, 86400);
	exp2 = kernel_expiry(id, "192.0.2.77");
	result(exp2 > exp && exp2 <= fw_now_ns() + 361 * NSEC_PER_SEC,
	       "learn: ttl 24 h is capped at 360 s", "expires in %lld s",
	       (long long)(exp2 - fw_now_ns()) / (long long)NSEC_PER_SEC);
	{
		struct fw_ip nowhere = ip_of(NOWHERE4);

		result(fw_learn_lookup(l, id, &nowhere, &info) == -ENOENT,
		       "learn: lookup of an address never learned", NULL);
	}
	{
		struct fw_ip a77 = ip_of("192.0.2.77");

		err = fw_learn_lookup(l, id, &a77, &info);
		result(!err && info.nnames == 2, "learn: both names that taught it are kept",
		       "err %d names %zu", err, info.nnames);
	}

	/* revocation: *.example.com goes; pypi.org stays */
	answer(l, "pypi.org", pypi, 60);
	answer(l, "files.example.com", shared, 60);
	if (subject_put(&nu_v2)) {
		result(false, "learn: policy update", "subject_put failed");
		goto out;
	}
	result(id_of("nu") == id, "learn: the policy update keeps the id", NULL);
	v = verdict_to(NU4, "192.0.2.77", 42001, TH_SYN);
	result(v == TC_ACT_SHOT && kernel_expiry(id, "192.0.2.77") == 0,
	       "learn: revoked at once when its names are no longer allowed", "verdict %d", v);
	v = verdict_to(NU4, "192.0.2.78", 42002, TH_SYN);
	result(v == TC_ACT_OK, "learn: an address of a still-allowed name stays", "verdict %d", v);
	v = verdict_to(NU4, "192.0.2.79", 42003, TH_SYN);
	result(v == TC_ACT_OK, "learn: an address with one name still allowed stays", "verdict %d",
	       v);
	result(decide(l, NU4, "api.example.com") == FW_DNS_RCODE_NXDOMAIN,
	       "learn: the revoked name is now NXDOMAIN", NULL);
	result(answer(l, "api.example.com", api, 30) != 0 && kernel_expiry(id, "192.0.2.77") == 0,
	       "learn: an answer that raced the revocation is not learned", NULL);

	/* the cap: 4 addresses max; the oldest without a connection goes */
	lc.max_per_subject = 4;
	fw_learn_set_config(l, &lc);
	/* 78 has an open connection (42002 above); a tick records it */
	fw_learn_tick(l);
	answer(l, "pypi.org", more, 60); /* 78, 79 + 71, 72 fill it; 73 evicts */
	result(fw_learn_count(l, id) == 4, "learn: the cap holds the count", "count %zu",
	       fw_learn_count(l, id));
	/* 78 and 79 both carry a connection (42002, 42003 above) */
	result(kernel_expiry(id, "192.0.2.78") != 0 && kernel_expiry(id, "192.0.2.79") != 0,
	       "learn: addresses with an open connection are not evicted", NULL);
	result(kernel_expiry(id, "198.51.100.71") == 0 && kernel_expiry(id, "198.51.100.73") != 0,
	       "learn: the oldest address without one is", NULL);
	answer(l, "pypi.org", one_more, 60);
	result(kernel_expiry(id, "198.51.100.72") == 0 && kernel_expiry(id, "198.51.100.74") != 0,
	       "learn: and the next oldest after it", NULL);

	/* refresh: short leases, an open connection's lease is extended */
	lc.max_per_subject = 0;
	lc.lease_add_s = 0;
	lc.lease_min_s = 2;
	lc.lease_max_s = 4;
	lc.refresh_interval_ns = NSEC_PER_SEC;
	lc.gc_grace_ns = 0;
	fw_learn_set_config(l, &lc);
	{
		static const char *const r[] = {"203.0.113.101", "203.0.113.102", "203.0.113.103",
						NULL};

		answer(l, "pypi.org", r, 1);
	}
	exp = kernel_expiry(id, "203.0.113.101");
	verdict_to(NU4, "203.0.113.101", 42010, TH_SYN);
	verdict_to(NU4, "203.0.113.102", 42011, TH_SYN);
	verdict_to(NU4, "203.0.113.102", 42011, TH_FIN | TH_ACK);
	usleep(1100 * 1000);
	fw_learn_tick(l);
	exp2 = kernel_expiry(id, "203.0.113.101");
	result(exp2 > exp, "learn: an open connection renews its destination's lease",
	       "before %llu after %llu", (unsigned long long)exp, (unsigned long long)exp2);
	{
		struct fw_conn c;

		result(!conn_of("nu", "203.0.113.102", 42011, 443, &c) && c.renewed &&
			       kernel_expiry(id, "203.0.113.102") > exp,
		       "learn: a closed connection gets one last renewal", NULL);
	}
	for (int i = 0; i < 3; i++) {
		verdict_to(NU4, "203.0.113.101", 42010, TH_ACK);
		usleep(1100 * 1000);
		fw_learn_tick(l);
	}
	v = verdict_to(NU4, "203.0.113.101", 42010, TH_ACK);
	result(v == TC_ACT_OK, "learn: the connection outlives lease.max (4 s) through renewals",
	       "verdict %d", v);
	v = verdict_to(NU4, "203.0.113.103", 42012, TH_SYN);
	result(v == TC_ACT_SHOT && kernel_expiry(id, "203.0.113.103") == 0,
	       "learn: without a connection the lease ran out and was collected", "verdict %d", v);

	/* release: the subject goes, so do its leases */
	{
		struct fw_entry *e = fw_reg_get(&t.reg, "nu", false);

		if (e) {
			fw_reg_unbind(&t.reg, e);
			fw_reg_put(&t.reg, e);
		}
		result(fw_learn_count(l, id) == 0 && fw_reg_id_state(&t.reg, id, NULL) < 0,
		       "learn: removing the subject drops its leases from the learner and retires "
		       "its id",
		       "count %zu, id state %d", fw_learn_count(l, id),
		       fw_reg_id_state(&t.reg, id, NULL));
		v = verdict_to(NU4, "192.0.2.78", 42020, TH_SYN);
		result(v == TC_ACT_SHOT, "learn: a retired subject's lease lets nothing through",
		       "verdict %d", v);
		/* the id is not handed out again before the reaper ran */
		if (subject_put(&nu_v1) == 0) {
			e = fw_reg_find(&t.reg, "nu");
			result(e && e->id && e->id != id,
			       "learn: a subject added before the reap gets a fresh id",
			       "id %u (retired %u)", e ? e->id : 0, id);
			e = fw_reg_get(&t.reg, "nu", false);
			if (e) {
				fw_reg_unbind(&t.reg, e);
				fw_reg_put(&t.reg, e);
			}
		} else {
			result(false, "learn: a subject added before the reap gets a fresh id",
			       "can't add it");
		}
		result(fw_reg_reap(&t.reg, 60 * NSEC_PER_SEC) == 0 &&
			       kernel_expiry(id, "192.0.2.78") != 0,
		       "learn: the reaper leaves ids retired less than min_age ago", NULL);
		int reaped = fw_reg_reap(&t.reg, 0);
		__u32 key = id;
		struct fw_subject_meta m;

		result(reaped >= 2 && kernel_expiry(id, "192.0.2.78") == 0 &&
			       fw_reg_id_state(&t.reg, id, NULL) == 0 &&
			       bpf_map_lookup_elem(t.dp->meta_fd, &key, &m) != 0,
		       "learn: the reaper deletes the retired ids' leases and metadata, then frees "
		       "them",
		       "reaped %d, expiry %llu, state %d", reaped,
		       (unsigned long long)kernel_expiry(id, "192.0.2.78"),
		       fw_reg_id_state(&t.reg, id, NULL));
	}
out:
	fw_learn_free(l);
}

/* Removal retires an id; the reaper empties it. A restart must neither
 * reuse a retired id nor hand out one under which something was left (a
 * foreign write here), and adopts the learned addresses of the bound ids. */
static const struct subject_def xi_def = {
	.name = "xi",
	.addrs = {"10.42.0.61"},
	.default_action = "deny",
	.rules = {"allow *.example.com"},
};
static const struct subject_def omicron_def = {
	.name = "omicron",
	.addrs = {"10.42.0.62"},
	.default_action = "deny",
	.rules = {"allow *.example.com"},
};

static void scenario_reap_restart(void)
{
	struct fw_learn_config lc;
	struct fw_learn *l = NULL;
	struct fw_subject_meta m;
	__u64 far = fw_now_ns() + 3600 * NSEC_PER_SEC;
	__u32 xi, om, orphan = FW_MAX_SUBJECTS - 7, key;
	struct fw_entry *e;
	int err;

	fw_learn_config_init(&lc);
	if (subject_put(&xi_def) || subject_put(&omicron_def)) {
		result(false, "reap: setup", "subjects failed");
		return;
	}
	xi = id_of("xi");
	om = id_of("omicron");
	{
		struct fw_ip a = ip_of("192.0.2.91"), b = ip_of("192.0.2.92"),
			     c = ip_of("192.0.2.93");

		struct fw_conn_key ck = {.subject = xi, .sport = htons(40000), .dport = htons(443)};
		struct fw_conn cv = {.last_seen_ns = fw_now_ns()};
		struct fw_learned_key nk = {.subject = orphan, .addr = c};
		struct fw_lease_names nv = {.ids = {7}};
		__u16 p443 = 443;

		fw_dp_learned_put(t.dp, xi, &a, far);
		fw_dp_learned_put(t.dp, om, &b, far);
		fw_dp_learned_put(t.dp, orphan, &c, far); /* nobody holds that id */
		/* what else the reaper must clear: a connection record and its
		 * count, a drifted count, a port set, a names record */
		ck.dst = a;
		bpf_map_update_elem(t.dp->conns_fd, &ck, &cv, BPF_NOEXIST);
		if (fw_dp_conn_counts(t.dp)) {
			t.dp->conn_count[xi] = 1;
			t.dp->conn_count[orphan] = 5;
		}
		fw_dp_lports_put(t.dp, xi, 1, &p443, 1);
		bpf_map_update_elem(t.dp->learned_names_fd, &nk, &nv, BPF_ANY);
	}
	e = fw_reg_get(&t.reg, "xi", false);
	if (e) {
		fw_reg_unbind(&t.reg, e);
		fw_reg_put(&t.reg, e);
	}
	key = xi;
	result(bpf_map_lookup_elem(t.dp->meta_fd, &key, &m) == 0 && m.origin == FW_ORIGIN_RETIRED &&
		       kernel_expiry(xi, "192.0.2.91") != 0,
	       "reap: a removed subject's id is marked retired in the kernel, its lease not yet "
	       "reaped",
	       NULL);

	/* restart: the registry and the learner come up again from the pins */
	fw_reg_free(&t.reg);
	err = fw_reg_init(&t.reg, t.dp);
	if (!err)
		err = fw_learn_new(&lc, &t.reg, &l);
	if (err) {
		result(false, "reap: restart", "%s", strerror(-err));
		return;
	}
	result(fw_reg_id_state(&t.reg, xi, NULL) < 0 && fw_reg_id_state(&t.reg, orphan, NULL) < 0 &&
		       fw_reg_id_state(&t.reg, om, NULL) == 1,
	       "reap: after a restart the retired id and every unbound id wait for the reaper",
	       "xi %d, orphan %d, omicron %d", fw_reg_id_state(&t.reg, xi, NULL),
	       fw_reg_id_state(&t.reg, orphan, NULL), fw_reg_id_state(&t.reg, om, NULL));
	err = fw_learn_adopt(l, false);
	result(!err && fw_learn_count(l, om) == 1 && fw_learn_count(l, xi) == 0,
	       "reap: the learner adopts the bound subject's lease and nothing of the retired one",
	       "omicron %zu, xi %zu", fw_learn_count(l, om), fw_learn_count(l, xi));
	err = fw_reg_reap(&t.reg, 0);
	key = xi;
	result(err > 0 && kernel_expiry(xi, "192.0.2.91") == 0 &&
		       kernel_expiry(orphan, "192.0.2.93") == 0 &&
		       kernel_expiry(om, "192.0.2.92") != 0 &&
		       bpf_map_lookup_elem(t.dp->meta_fd, &key, &m) != 0 &&
		       fw_reg_id_state(&t.reg, xi, NULL) == 0 &&
		       fw_reg_id_state(&t.reg, orphan, NULL) == 0,
	       "reap: the reaper deletes the retired and the orphaned leases, keeps the bound one, "
	       "frees the ids",
	       "reaped %d", err);
	{
		struct fw_conn c;
		struct fw_learned_key nk = {.subject = orphan, .addr = ip_of("192.0.2.93")};
		struct fw_lease_names nv;

		result(conn_of("xi", "192.0.2.91", 40000, 443, &c) == -ENOENT &&
			       conns_held(xi) == 0 && t.dp->conn_count &&
			       t.dp->conn_count[xi] == 0 && t.dp->conn_count[orphan] == 0,
		       "reap: connection records go and the removed ids' counts are 0", NULL);
		result(lports_held(xi) == 0 &&
			       bpf_map_lookup_elem(t.dp->learned_names_fd, &nk, &nv) != 0,
		       "reap: learned port sets and names records of removed ids go", NULL);
	}
	fw_learn_free(l);
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
static void on_crash(int sig)
{
	char cmd[96];

	if (t.pinned)
		fw_dp_purge(t.pin_root);
	if (t.dummy_ifindex > 0) {
		snprintf(cmd, sizeof(cmd), "ip link del %s 2>/dev/null", t.dummy);
		if (system(cmd) != 0)
			_exit(128 + sig);
	}
	if (t.port2_ifindex > 0) {
		snprintf(cmd, sizeof(cmd), "ip link del %s 2>/dev/null", t.port2);
		if (system(cmd) != 0)
			_exit(128 + sig);
	}
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
		.pod_flow_timeout_ns = 120 * NSEC_PER_SEC,
		.frag_timeout_ns = 30 * NSEC_PER_SEC,
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
		t.dp->names_fd,	     t.dp->learned_names_fd,
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
static int state_reset(void)
{
	int fds[NSNAP], err;
	size_t n = state_fds(fds);

	events_drain();
	t.swap_id = 0;
	t.cfg = t.base_cfg; /* what config_flags() and the scenarios start from */
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

/* ---- the link-layer binding of ports (l2bind.h) ---------------------------- */

#define PORT2_MAC  "02:00:00:00:00:b2"
#define PORT2_MAC2 "02:00:00:00:00:b3"
#define VICTIM_MAC "02:00:00:00:00:c1"

static bool l2_row(const char *desc, bool port2, const char *mac, __u32 reason, const char *subject)
{
	struct row r = {.desc = desc,
			.on_port2 = port2,
			.on_dummy = !port2,
			.pkt = TCP4(port2 ? BETA4 : DELTA4, OK4, 40000, 80, .eth_src = mac),
			.verdict = fw_reason_drops(reason) ? TC_ACT_SHOT : TC_ACT_OK,
			.reason = reason,
			.subject = subject};
	/* events: the rate-limit scenario before left a small budget */
	bool ok = run_row(&r, 0);

	if (ok)
		passed++;
	else
		failed++;
	return ok;
}

static size_t owned_by(int fd, size_t key_size, int ifindex)
{
	__u8 key[16], next[16];
	void *prev = NULL;
	size_t n = 0;
	__u32 owner;

	while (bpf_map_get_next_key(fd, prev, next) == 0) {
		memcpy(key, next, key_size);
		prev = key;
		if (bpf_map_lookup_elem(fd, key, &owner) == 0 && owner == (__u32)ifindex)
			n++;
	}
	return n;
}

static bool none_live(int ifindex, const void *ctx)
{
	return ifindex != *(const int *)ctx;
}

/* A fresh port (port2, subject beta unbound, default allow) against the
 * dummy's (delta's): first sight, a thief who sends first, the link's word
 * beating first sight, ifindex reuse and cleanup. */
static void scenario_l2_ports(void)
{
	struct fw_mac host_a = mac_of("02:00:00:00:0b:0a"), host_b = mac_of("02:00:00:00:0b:0b");
	struct fw_mac dhost = mac_of("02:00:00:00:0d:0d"), victim = mac_of(VICTIM_MAC);
	struct fw_mac dmac = mac_of(DUMMY_MAC), m2 = mac_of(PORT2_MAC);
	__u32 owner;
	char cmd[96];

	snprintf(t.port2, sizeof(t.port2), "fwt%db", (int)getpid() % 100000);
	snprintf(cmd, sizeof(cmd), "ip link add %s type dummy 2>/dev/null", t.port2);
	if (system(cmd) != 0) {
		snprintf(cmd, sizeof(cmd), "ip link add %s type veth peer name %sp", t.port2,
			 t.port2);
		if (system(cmd) != 0) {
			result(false, "l2: second port", "can't create %s", t.port2);
			return;
		}
	}
	t.port2_ifindex = (int)if_nametoindex(t.port2);
	if (t.port2_ifindex <= 0) {
		result(false, "l2: second port", "no ifindex for %s", t.port2);
		return;
	}
	/* the sibling port (the dummy) bound to its peer's MAC at attach */
	if (dummy_bound_from_link()) {
		result(false, "l2: sibling port", "can't bind %s", t.dummy);
		return;
	}

	l2_row("l2: a new port's first frame from the sibling port's MAC", true, DUMMY_MAC,
	       FW_DROP_MAC_SPOOF, "beta");
	l2_row("l2: a new port's first frame from a group MAC", true, "01:00:5e:00:00:01",
	       FW_DROP_MAC_SPOOF, "beta");
	l2_row("l2: a new port's first frame from the pod's MAC", true, POD_MAC, FW_DROP_MAC_SPOOF,
	       "beta");
	l2_row("l2: a new port's first frame from a MAC nobody has binds it", true, PORT2_MAC,
	       FW_PASS_DEFAULT, "beta");
	l2_row("l2: the new port's next frame from its MAC", true, PORT2_MAC, FW_PASS_DEFAULT,
	       "beta");
	l2_row("l2: the new port from another MAC", true, STRANGER_MAC, FW_DROP_MAC_SPOOF, "beta");
	l2_row("l2: the sibling port from the new port's MAC", false, PORT2_MAC, FW_DROP_MAC_SPOOF,
	       "delta");

	/* the port goes: its binding and everything it owned with it */
	fw_l2_forget(t.dp, t.port2_ifindex);
	result(bpf_map_lookup_elem(t.dp->l2_ports_fd, &t.port2_ifindex, cmd) != 0 &&
		       owned_by(t.dp->l2_macs_fd, sizeof(struct fw_mac), t.port2_ifindex) == 0 &&
		       owned_by(t.dp->l2_lladdrs_fd, sizeof(struct fw_ip), t.port2_ifindex) == 0,
	       "l2: forgetting a port deletes its record, MAC and link-local addresses",
	       "record or owner entries left for ifindex %d", t.port2_ifindex);

	/* a thief sending first takes a MAC no port is bound to yet; the
	 * link's word (fastwalld reads the veth peer's MAC) takes it back */
	l2_row("l2: a thief's first frame from a not yet bound MAC", true, VICTIM_MAC,
	       FW_PASS_DEFAULT, "beta");
	result(fw_l2_bind(t.dp, t.dummy_ifindex, dhost.b, victim.b) == 0,
	       "l2: binding the victim's port from its link", NULL);
	l2_row("l2: the thief's port from the victim's MAC after the bind", true, VICTIM_MAC,
	       FW_DROP_MAC_SPOOF, "beta");
	l2_row("l2: the victim's port from its MAC", false, VICTIM_MAC, FW_PASS_ALLOW_CIDR,
	       "delta");
	result(fw_l2_bind(t.dp, t.dummy_ifindex, dhost.b, dmac.b) == 0 &&
		       bpf_map_lookup_elem(t.dp->l2_macs_fd, &victim, &owner) != 0,
	       "l2: a rebind to another peer MAC releases the old one", NULL);
	l2_row("l2: the dummy's port from its MAC again", false, DUMMY_MAC, FW_PASS_ALLOW_CIDR,
	       "delta");
	result(fw_l2_bind(t.dp, t.dummy_ifindex, dhost.b, dmac.b) == 0 &&
		       bpf_map_lookup_elem(t.dp->l2_macs_fd, &dmac, &owner) == 0 &&
		       owner == (__u32)t.dummy_ifindex,
	       "l2: binding the same link again keeps the binding", NULL);

	/* ifindex reuse: another link (another host-side MAC) on the same
	 * ifindex starts afresh */
	fw_l2_bind(t.dp, t.port2_ifindex, host_a.b, NULL);
	l2_row("l2: a prepared port binds its first MAC", true, PORT2_MAC, FW_PASS_DEFAULT, "beta");
	result(fw_l2_bind(t.dp, t.port2_ifindex, host_a.b, NULL) == 0,
	       "l2: preparing the same link again", NULL);
	l2_row("l2: ... which keeps its binding", true, PORT2_MAC2, FW_DROP_MAC_SPOOF, "beta");
	result(fw_l2_bind(t.dp, t.port2_ifindex, host_b.b, NULL) == 0 &&
		       bpf_map_lookup_elem(t.dp->l2_macs_fd, &m2, &owner) != 0,
	       "l2: a new link on a reused ifindex drops the old binding", NULL);
	l2_row("l2: the new link's sandbox binds its own MAC", true, PORT2_MAC2, FW_PASS_DEFAULT,
	       "beta");

	/* a configured MAC that is removed again: back to first sight */
	{
		struct fw_mac m3 = mac_of("02:00:00:00:00:b4");

		result(fw_l2_bind(t.dp, t.port2_ifindex, host_b.b, m3.b) == 0,
		       "l2: pinning the port to a configured MAC", NULL);
		l2_row("l2: the pinned port from the MAC it had learned", true, PORT2_MAC2,
		       FW_DROP_MAC_SPOOF, "beta");
		l2_row("l2: the pinned port from its configured MAC", true, "02:00:00:00:00:b4",
		       FW_PASS_DEFAULT, "beta");
		result(fw_l2_bind(t.dp, t.port2_ifindex, host_b.b, NULL) == 0 &&
			       bpf_map_lookup_elem(t.dp->l2_macs_fd, &m3, &owner) != 0,
		       "l2: unpinning releases the configured MAC", NULL);
		l2_row("l2: the unpinned port binds on first sight again", true, PORT2_MAC2,
		       FW_PASS_DEFAULT, "beta");
	}
	/* one message with two new link-local addresses learns one at most */
	{
		struct row r = {.desc = "l2: na from a new link-local address claiming another",
				.on_port2 = true,
				.pkt = ICMP6("fe80::b:1", "ff02::1", ICMP6_NA, .hop_limit = 255,
					     .nd_target = "fe80::b:2", .eth_src = PORT2_MAC2),
				DROP(FW_DROP_ND_TARGET)};
		struct row r2 = {.desc = "l2: ... the first one was learned",
				 .on_port2 = true,
				 .pkt = ICMP6("fe80::b:1", "ff02::2", ICMP6_RS, .hop_limit = 255,
					      .eth_src = PORT2_MAC2),
				 PASS(FW_PASS_NEIGH)};

		if (run_row(&r, 0))
			passed++;
		else
			failed++;
		if (run_row(&r2, 0))
			passed++;
		else
			failed++;
	}

	/* a port fastwalld no longer sees */
	fw_l2_prune(t.dp, none_live, &t.port2_ifindex);
	result(bpf_map_lookup_elem(t.dp->l2_ports_fd, &t.port2_ifindex, cmd) != 0 &&
		       owned_by(t.dp->l2_macs_fd, sizeof(struct fw_mac), t.port2_ifindex) == 0 &&
		       owned_by(t.dp->l2_lladdrs_fd, sizeof(struct fw_ip), t.port2_ifindex) == 0 &&
		       bpf_map_lookup_elem(t.dp->l2_ports_fd, &t.dummy_ifindex, cmd) == 0,
	       "l2: pruning drops the ports that are gone, keeps the others", NULL);

	/* a message that drops teaches nothing */
	{
		struct row r = {.desc = "l2: na from a new link-local address for a subject bound "
					"elsewhere",
				.on_port2 = true,
				.pkt = ICMP6("fe80::c:1", "ff02::1", ICMP6_NA, .hop_limit = 255,
					     .nd_target = DELTA6, .eth_src = PORT2_MAC2),
				DROP(FW_DROP_SPOOF),
				.subject = "delta"};
		struct row r2 = {.desc = "l2: ... did not make that address the port's",
				 .on_port2 = true,
				 .pkt = ICMP6("fe80::c:2", "ff02::2", ICMP6_RS, .hop_limit = 255,
					      .eth_src = PORT2_MAC2),
				 PASS(FW_PASS_NEIGH)};

		if (run_row(&r, 0))
			passed++;
		else
			failed++;
		if (run_row(&r2, 0))
			passed++;
		else
			failed++;
	}
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

/* Runs the group of rows that starts at rows[first], on a fresh state. */
static void run_group(size_t first, size_t nrows)
{
	if (state_reset()) {
		printf("FAIL %s\n  state reset failed\n", rows[first].desc);
		failed++;
		return;
	}
	for (size_t i = first; i < nrows && (i == first || rows[i].then); i++) {
		if (run_row(&rows[i], RUN_EVENTS)) {
			passed++;
		} else {
			failed++;
			printf("  (row %zu: bpf_verdicts --only %zu)\n", i + 1, i + 1);
		}
	}
}

int main(int argc, char **argv)
{
	size_t nrows = sizeof(rows) / sizeof(rows[0]);
	static size_t group[sizeof(rows) / sizeof(rows[0])];
	size_t ngroups = 0, only = 0;
	bool shuffle = false;
	__u64 seed = 0;
	char *end;

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
	if (rows[0].then) {
		fprintf(stderr, "test bug: the first row continues no group\n");
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
	signal(SIGABRT, on_crash);
	signal(SIGSEGV, on_crash);
	pin_cpu();

	if (dummy_create() || fixture_setup()) {
		fprintf(stderr, "fixture failed\n");
		printf("0 passed, 1 failed\n");
		return 1;
	}

	for (size_t i = 0; i < nrows; i++)
		if (!rows[i].then)
			group[ngroups++] = i;

	if (only) {
		size_t g = only - 1;

		while (rows[g].then)
			g--;
		run_group(g, nrows);
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
		run_group(group[g], nrows);

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
	scenario_event_rate_limit();
	scenario_allow_sample();
	scenario_rule_forms();
	scenario_range_edges();
	scenario_subject_rows();
	scenario_events_lost();
	scenario_connections();
	scenario_conn_quota();
	scenario_learned_ports();
	scenario_learned_ports_share();
	scenario_learned_leases();
	scenario_l2_ports();
	scenario_reap_restart(); /* last: it restarts the registry */

	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
