// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The link layer: VLAN tags, ARP, ethertypes, and the binding of each
 * port to its sandbox's MAC and link-local addresses (l2bind.h), rows
 * first, then the scenario of a fresh port. */
#include <unistd.h>

#include "verdicts.h"

/* What fastwalld does at attach for a veth: the port bound to its peer's
 * MAC before the sandbox sends anything. */
static int dummy_bound_from_link(void)
{
	struct fw_mac host = mac_of("02:00:00:00:0d:0d"), peer = mac_of(DUMMY_MAC);

	return fw_l2_bind(t.dp, t.dummy_ifindex, host.b, peer.b) ? -1 : 0;
}

/* What the loopback port sees first: a frame from its sandbox's MAC,
 * which binds the port to it on first sight. */
static int lo_bound_on_sight(void)
{
	const struct pkt_spec first = TCP4(ALPHA4, OK4, 40000, 80);

	return run_frame(prog_fd(FROM_SANDBOX), &first) == TC_ACT_OK ? 0 : -1;
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
void scenario_l2_ports(void)
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

const struct row l2_rows[] = {
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

};
const size_t l2_rows_n = sizeof(l2_rows) / sizeof(l2_rows[0]);
