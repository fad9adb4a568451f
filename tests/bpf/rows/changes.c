// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Subjects changed while their answers are cached: an atomic policy
 * swap and a rebind, a private CIDR or a gateway changed in place, an
 * address that became pod-local, and the per-CPU source slot. */
#include "verdicts.h"

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

static int swap_first_policy(void)
{
	if (subject_put(&swap_v1))
		return -1;
	t.swap_id = id_of("swap");
	return learn("swap", SWAP_LEARNED4, 60);
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

const struct row change_rows[] = {
	/* atomic policy swap, then a rebind */
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
const size_t change_rows_n = sizeof(change_rows) / sizeof(change_rows[0]);
