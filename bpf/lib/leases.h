/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* DNS-learned leases: {subject, address} -> expiry and the port set of
 * the rules that taught it. fw_lease_verdict() returns the reason of a
 * destination no CIDR rule decided: learned, lease-expired,
 * learned-port, or default-deny without a lease. */
#ifndef FW_BPF_LEASES_H
#define FW_BPF_LEASES_H

#include "common.h"
#include "parse.h"
#include "conn.h"

/* {subject, address} -> struct fw_lease. Writer: fastwalld.
 * Reader: fw_from_sandbox, the cgroup programs. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, FW_MAX_LEARNED);
	__type(key, struct fw_learned_key);
	__type(value, struct fw_lease);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fastwall_learned SEC(".maps");

/* {subject, learned port set, port} -> 1: the ports a learned address
 * whose lease names the set may be reached on. Writer: fastwalld.
 * Reader: fw_from_sandbox, the cgroup programs. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, FW_MAX_LEARNED_PORTS);
	__type(key, struct fw_port_rule_key);
	__type(value, __u8);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fastwall_learned_ports SEC(".maps");

/* A TCP packet to a live lease opens or updates its connection record
 * (conn.h). */
static __always_inline __u32 fw_lease_verdict(__u32 id, const struct fw_pkt *pkt)
{
	struct fw_learned_key lkey = {};
	struct fw_lease *lease;
	__u64 now;

	lkey.subject = id;
	lkey.addr = pkt->dst;
	lease = bpf_map_lookup_elem(&fastwall_learned, &lkey);
	if (!lease)
		return FW_DROP_DEFAULT_DENY;
	now = bpf_ktime_get_ns();
	if (lease->expires_ns <= now)
		return FW_DROP_LEASE_EXPIRED;
	if (lease->portset) {
		/* only the ports of the rules that taught it: no ports (ICMP,
		 * a first fragment without its header) is none of them */
		struct fw_port_rule_key pk = {
			.subject = id,
			.portset = lease->portset,
			.port = bpf_ntohs(pkt->dport),
		};

		if (!pkt->has_ports ||
		    (pkt->proto != FW_IPPROTO_TCP && pkt->proto != FW_IPPROTO_UDP) ||
		    !bpf_map_lookup_elem(&fastwall_learned_ports, &pk))
			return FW_DROP_LEARNED_PORT;
	}
	if (pkt->proto == FW_IPPROTO_TCP)
		fw_note_conn(id, pkt, now);
	return FW_PASS_LEARNED;
}

#endif /* FW_BPF_LEASES_H */
