/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The global DNS-over-HTTPS blocklist: fw_doh_blocked() says whether a
 * packet is DoH the settings drop (TCP 443 to a listed prefix, or to any
 * address in strict mode). */
#ifndef FW_BPF_DOH_H
#define FW_BPF_DOH_H

#include "common.h"
#include "parse.h"

/* prefix -> 1: TCP 443 destinations dropped in DoH list mode. Writer:
 * fastwalld. Reader: fw_from_sandbox, the cgroup programs. */
struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, FW_MAX_DOH);
	__type(key, struct fw_lpm_key);
	__type(value, __u8);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fastwall_doh SEC(".maps");

static __always_inline bool fw_doh_blocked(const struct fw_config *cfg, const struct fw_pkt *pkt)
{
	struct fw_lpm_key key;

	if (pkt->proto != FW_IPPROTO_TCP || pkt->dport != bpf_htons(443))
		return false;
	if (cfg->flags & FW_CF_DOH_STRICT)
		return true;
	if (!(cfg->flags & FW_CF_DOH_LIST))
		return false;
	key.prefixlen = 128;
	key.addr = pkt->dst;
	return bpf_map_lookup_elem(&fastwall_doh, &key) != NULL;
}

#endif /* FW_BPF_DOH_H */
