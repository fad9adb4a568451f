/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* TCP connections to learned addresses, for the lease refresh: a record
 * per connection, opened on its SYN and closed on FIN or RST, within a
 * per-subject quota. fastwalld renews the lease of an address with an
 * open record. The functions return nothing: the packet passes either
 * way. */
#ifndef FW_BPF_CONN_H
#define FW_BPF_CONN_H

#include "common.h"
#include "parse.h"
#include "config.h"

/* {subject, sandbox port, port, learned address} -> struct fw_conn: TCP
 * connections to learned addresses, for the lease refresh. Writer:
 * fw_from_sandbox and fw_to_sandbox, the cgroup programs, fastwalld. Reader: fastwalld. A plain
 * hash, not an LRU: a full LRU evicts whoever is oldest, so one sandbox's SYN flood could end a
 * sibling's records and with them its leases. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, FW_MAX_CONNS);
	__type(key, struct fw_conn_key);
	__type(value, struct fw_conn);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fastwall_conns SEC(".maps");

/* subject id -> fastwall_conns records it holds. Writer: fw_note_conn (adds
 * before an insert, undoes it when the insert fails), fastwalld (takes
 * off what it deletes, rewrites what its scan found). Mmapable, so
 * fastwalld's writes are atomic against the data plane's. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, FW_MAX_SUBJECTS);
	__type(key, __u32);
	__type(value, __u64); /* an array's slots are 8 bytes apart anyway */
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fastwall_conn_count SEC(".maps");

/* A new record for subject id, within its quota: false when the subject
 * holds conn_quota records already or the map is full. The count is
 * checked, then added to (a fetching atomic needs 5.12), so concurrent
 * SYNs on several CPUs can pass the quota by at most one each. */
static __always_inline bool fw_conn_insert(__u32 id, const struct fw_conn_key *k,
					   const struct fw_conn *v)
{
	struct fw_config *cfg = fw_config();
	__u64 *count = bpf_map_lookup_elem(&fastwall_conn_count, &id);

	if (!cfg || !count)
		return false;
	if (cfg->conn_quota && *count >= cfg->conn_quota)
		return false;
	__sync_fetch_and_add(count, 1);
	if (bpf_map_update_elem(&fastwall_conns, k, v, BPF_NOEXIST)) {
		__sync_fetch_and_add(count, -1);
		return false;
	}
	return true;
}

/* TCP to a learned address: a record opens on the connection's SYN (and
 * on nothing else: a packet of a connection not tracked, a bare ACK or
 * FIN, makes none, so records cost a flooder its own quota only), closes
 * on FIN or RST and reopens on a new SYN (the same ports reused);
 * last_seen is written at most once a second, so a busy flow costs one
 * lookup per packet. The packet passes either way. */
static __always_inline void fw_note_conn(__u32 id, const struct fw_pkt *pkt, __u64 now)
{
	struct fw_conn_key k = {
		.subject = id,
		.sport = pkt->sport,
		.dport = pkt->dport,
		.dst = pkt->dst,
	};
	bool syn = (pkt->tcp_flags & (FW_TCP_SYN | FW_TCP_ACK)) == FW_TCP_SYN;
	bool closing = pkt->tcp_flags & (FW_TCP_FIN | FW_TCP_RST);
	struct fw_conn *c, fresh = {};

	if (!pkt->has_ports)
		return;
	c = bpf_map_lookup_elem(&fastwall_conns, &k);
	if (!c) {
		if (!syn || closing)
			return;
		fresh.last_seen_ns = now;
		fw_conn_insert(id, &k, &fresh);
		return;
	}
	if (c->closed_ns) {
		if (syn) {
			c->closed_ns = 0;
			c->renewed = 0;
			c->last_seen_ns = now;
		}
		return;
	}
	if (closing)
		c->closed_ns = now;
	if (now - c->last_seen_ns > FW_NSEC_PER_SEC)
		c->last_seen_ns = now;
}

/* A RST from a learned destination ends the connection as a RST from the
 * sandbox would (fw_to_sandbox: the packet is going to the sandbox). */
static __always_inline void fw_note_conn_reset(__u32 id, const struct fw_pkt *pkt)
{
	struct fw_conn_key k = {
		.subject = id,
		.sport = pkt->dport,
		.dport = pkt->sport,
		.dst = pkt->src,
	};
	struct fw_conn *c;

	if (pkt->proto != FW_IPPROTO_TCP || !(pkt->tcp_flags & FW_TCP_RST))
		return;
	c = bpf_map_lookup_elem(&fastwall_conns, &k);
	if (c && !c->closed_ns)
		c->closed_ns = bpf_ktime_get_ns();
}

#endif /* FW_BPF_CONN_H */
