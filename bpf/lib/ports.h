/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Per-port exceptions of a subject's CIDR rules: a rule that names a
 * port set has its action overridden on the ports listed there.
 * fw_port_exception() returns the listed action, or NULL. */
#ifndef FW_BPF_PORTS_H
#define FW_BPF_PORTS_H

#include "common.h"
#include "parse.h"

/* {subject, port set, port} -> enum fw_action. Writer: fastwalld.
 * Reader: fw_from_sandbox, the cgroup programs. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, FW_MAX_PORT_RULES);
	__type(key, struct fw_port_rule_key);
	__type(value, __u8);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fastwall_ports SEC(".maps");

/* The action port set portset of subject id lists for the packet's
 * TCP or UDP destination port, if any. */
static __always_inline __u8 *fw_port_exception(__u32 id, __u32 portset, const struct fw_pkt *pkt)
{
	if (portset && pkt->has_ports &&
	    (pkt->proto == FW_IPPROTO_TCP || pkt->proto == FW_IPPROTO_UDP)) {
		struct fw_port_rule_key pk = {
			.subject = id,
			.portset = portset,
			.port = bpf_ntohs(pkt->dport),
		};

		return bpf_map_lookup_elem(&fastwall_ports, &pk);
	}
	return NULL;
}

#endif /* FW_BPF_PORTS_H */
