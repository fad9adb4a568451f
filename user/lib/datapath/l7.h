/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Layer-7 pinning as the packet path sees it: the pinned ports
 * (fastwall_l7_ports) and the settings bits FW_CF_L7, FW_CF_L7_QUIC and
 * FW_CF_L7_UP of fastwall_config, and the collection of finished
 * connections from fastwall_l7_nat with their per-subject counts
 * (fastwall_l7_count). The three bits (FW_CF_L7_BITS)
 * belong to the functions here: fw_dp_config_set keeps them as these last set them,
 * whatever the record it is given says, so a write of the other
 * settings can never turn pinning off behind the proxy's back. Functions
 * return 0 or a negative errno. */
#ifndef FW_DATAPATH_L7_H
#define FW_DATAPATH_L7_H

#include <stdbool.h>
#include <stddef.h>

#include "datapath/datapath.h"

/* What the proxy pins: TCP connections to tls_ports go to proxy_tls_port
 * (the server name of the ClientHello), to http_ports to proxy_http_port
 * (every request's Host); UDP to a TLS port (QUIC) drops unless
 * quic_allowed. Ports in host order; a port listed as both is refused. */
struct fw_dp_l7 {
	__u16 tls_ports[FW_MAX_L7_PORTS];
	size_t ntls;
	__u16 http_ports[FW_MAX_L7_PORTS];
	size_t nhttp;
	__u16 proxy_tls_port;
	__u16 proxy_http_port;
	bool quic_allowed;
};

/* Makes fastwall_l7_ports hold exactly l7's ports and sets FW_CF_L7 (and
 * FW_CF_L7_QUIC as quic_allowed says); l7 NULL, or no port listed, turns
 * pinning off: the ports go and FW_CF_L7, FW_CF_L7_QUIC and FW_CF_L7_UP
 * are cleared. Bad input (a port 0, a port listed twice or as both
 * kinds, more than FW_MAX_L7_PORTS in all, a proxy port 0 for a kind
 * that has ports) is -EINVAL and changes nothing. Pinning off, the ports
 * are removed after the flag is cleared; on, the ports are written
 * before it is set. */
int fw_dp_l7_apply(struct fw_dp *dp, const struct fw_dp_l7 *l7);

/* Sets or clears FW_CF_L7_UP: the proxy accepts connections. Without
 * it, a pinned connection's SYN drops (l7-proxy-down). */
int fw_dp_l7_set_up(struct fw_dp *dp, bool up);

/* How long a closed fastwall_l7_nat entry (the sandbox sent FIN or RST)
 * is kept unseen, when that is shorter than the idle timeout: after the
 * close the entry serves only the half-closed direction, whose ACKs
 * keep it seen, and the last retransmissions, seconds apart; the sooner
 * it goes the sooner the subject's share (fastwall_l7_count) has room
 * for the next connection. */
#define FW_DP_L7_CLOSED_NS (10ull * 1000000000ull)

/* Deletes the fastwall_l7_nat entries not seen for idle_ns (last_seen_ns
 * + idle_ns <= now_ns), or for closed_ns (when shorter) once closed, and
 * counts them in *deleted (may be NULL); each entry deleted is taken
 * off its subject's count in fastwall_l7_count (never below 0) unless it
 * was `reported` (counted off already; fw_dp_l7_closed), and a
 * count that drifted from the entries the scan found is rewritten when
 * no program changed it meanwhile. now_ns: CLOCK_MONOTONIC (fw_now_ns). */
int fw_dp_l7_gc(struct fw_dp *dp, __u64 now_ns, __u64 idle_ns, __u64 closed_ns, size_t *deleted);

/* The proxy reported the connection at k closed: its entry, when it is
 * a container's (not the sockops program's) of subject and not marked
 * yet, is marked `reported` and taken off the subject's count, so the
 * share bounds open connections. 0: marked, the caller releases it
 * (fw_dp_l7_release) after FW_L7_RELEASE_NS; -ENOENT: nothing to mark
 * (no entry, another's, the sockops program's, or marked already). A
 * SYN that takes the key between the lookup and the rewrite loses its
 * entry to the old one and drops (l7-untracked): the sandbox reused its
 * end within microseconds of the close. */
int fw_dp_l7_closed(struct fw_dp *dp, const struct fw_l7_nat_key *k, __u32 subject);

/* Deletes the entry at k if it is still marked `reported` (a new SYN that
 * took the key cleared the mark). 0, or -ENOENT when nothing went. */
int fw_dp_l7_release(struct fw_dp *dp, const struct fw_l7_nat_key *k);

/* Deletes the fastwall_l7_nat entries of every subject id with dead[id]
 * set and zeroes their counts (fw_dp_reap's part). */
int fw_dp_l7_reap(struct fw_dp *dp, const bool dead[FW_MAX_SUBJECTS]);

/* fastwall_l7_count mapped into memory (FW_MAX_SUBJECTS counts, which
 * the programs add to atomically: change them only with __atomic
 * operations), or NULL when absent or the kernel refuses the mapping. */
__u64 *fw_dp_l7_counts(struct fw_dp *dp);

/* The FW_CF_L7_BITS last set through the functions above (0 before). */
__u32 fw_dp_l7_flags(const struct fw_dp *dp);

#endif /* FW_DATAPATH_L7_H */
