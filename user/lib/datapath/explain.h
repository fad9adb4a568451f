/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The data plane's decision, computed in userspace from the pinned maps:
 * what fw_from_sandbox (TC) or the cgroup programs would answer for a
 * packet from SRC to DST with a protocol and destination port, in the
 * order the programs decide, and which piece of state decided it. Only
 * map lookups of the syscall kind: no counter moves, no event is sent,
 * no LRU entry is refreshed, nothing is written. Link-layer checks (the
 * port's bound MAC) and fragments are outside what SRC DST PORT/PROTO
 * can say: the packet is taken as an unfragmented one from the port's
 * own MAC. Functions return 0 or a negative errno. */
#ifndef FW_DATAPATH_EXPLAIN_H
#define FW_DATAPATH_EXPLAIN_H

#include <stdbool.h>

#include "datapath/datapath.h"

/* The packet, as the programs parse it. */
struct fw_xpkt {
	struct fw_ip src, dst; /* v4-mapped for IPv4 */
	__u8 family;	       /* enum fw_family */
	__u8 proto;	       /* IPPROTO_TCP, IPPROTO_UDP, IPPROTO_ICMP(V6) */
	__u8 icmp_type;	       /* with ICMP: echo request unless asked */
	bool has_ports;	       /* TCP and UDP */
	__u16 dport;	       /* host order */
	__u16 sport;	       /* host order; 0 = not known (no pod-opened flow) */
	__u8 tcp_flags;	       /* with TCP: TH_* bits; 0 = a SYN (a new connection) */
	__u32 ifindex;	       /* where it arrives; FW_IFINDEX_ANY: the subject's own */
};

/* What decided, one step of the decision order. */
#define FW_XSTEPS(X)                                                                               \
	X(FW_XS_V4MAPPED, "v4-mapped")                                                             \
	X(FW_XS_NO_SUBJECT, "no-subject")                                                          \
	X(FW_XS_NO_CONFIG, "no-config")                                                            \
	X(FW_XS_INTERFACE, "interface")                                                            \
	X(FW_XS_DNS_REDIRECT, "dns-redirect")                                                      \
	X(FW_XS_STATE, "state")                                                                    \
	X(FW_XS_DOT, "dns-over-tls")                                                               \
	X(FW_XS_POD_LOCAL, "pod-local")                                                            \
	X(FW_XS_LOCAL_FULL, "pod-local-full")                                                      \
	X(FW_XS_SIBLING, "sibling")                                                                \
	X(FW_XS_DOH, "dns-over-https")                                                             \
	X(FW_XS_NO_POLICY, "no-policy")                                                            \
	X(FW_XS_PORT_RULE, "port-rule")                                                            \
	X(FW_XS_RULE, "rule")                                                                      \
	X(FW_XS_DEFAULT, "default")                                                                \
	X(FW_XS_LEASE, "lease")                                                                    \
	X(FW_XS_L7, "l7")

#define FW_XSTEP_ENUM_(id, name) id,
enum fw_xstep { FW_XSTEPS(FW_XSTEP_ENUM_) FW_XS_MAX };
#undef FW_XSTEP_ENUM_

struct fw_xresult {
	__u32 reason; /* enum fw_reason */
	enum fw_xstep step;
	bool has_subject;
	struct fw_subject subject; /* the dispatch (or cgroup) entry */
	/* FW_XS_RULE, FW_XS_PORT_RULE, FW_XS_DEFAULT, FW_XS_LEASE: the trie
	 * entry the destination fell in and its prefix (over 128 bits;
	 * has_prefix false when the walk for it found none) */
	bool has_entry, has_prefix;
	struct fw_rule entry;
	struct fw_ip prefix;
	__u32 prefix_len;
	__u8 port_action; /* FW_XS_PORT_RULE: enum fw_action of the port */
	/* FW_XS_LEASE (and a default deny with an expired lease) */
	bool has_lease;
	struct fw_lease lease;
	struct fw_lease_names names; /* ids in fastwall_names; zero when none kept */
	__u64 now_ns;		     /* the clock the lease was read against */
	/* FW_XS_POD_LOCAL, dropped with no source port given: a reply on a
	 * flow the pod opened would pass (pod-reply) */
	bool pod_reply_possible;
	/* FW_XS_L7: the policy passed the packet (l7_pass: learned or
	 * allow-cidr, decided at step l7_step, whose details stay above) to
	 * a pinned port (l7_port); the connection goes to the proxy, or
	 * drops with a layer-7 reason. has_l7_nat: the proxy's table holds
	 * l7_nat for the source port (--sport) */
	__u32 l7_pass;
	enum fw_xstep l7_step;
	struct fw_l7_port l7_port;
	bool has_l7_nat;
	struct fw_l7_nat l7_nat;
};

const char *fw_xstep_name(enum fw_xstep s);

/* TC ingress of a sandbox port. now_ns: CLOCK_MONOTONIC (fw_now_ns). */
int fw_explain_tc(struct fw_dp *dp, const struct fw_xpkt *p, __u64 now_ns, struct fw_xresult *r);
/* A process sandbox's connect() (the cgroup programs): s is the subject
 * its cgroup resolves to (fw_explain_cgroup_subject). */
int fw_explain_cgroup(struct fw_dp *dp, const struct fw_subject *s, const struct fw_xpkt *p,
		      __u64 now_ns, struct fw_xresult *r);
/* The subject of cgroup directory path as the programs find it: the
 * first of its ancestors from the top (levels 1 to FW_CG_MAX_LEVELS
 * below root) that fastwall_cgroups knows. -ENOENT when none. */
int fw_explain_cgroup_subject(struct fw_dp *dp, const char *root, const char *path,
			      struct fw_subject *out);

/* The descriptor of the rule trie subject s looks its destinations up
 * in (the caller closes it), or a negative errno. */
int fw_explain_trie_fd(struct fw_dp *dp, const struct fw_subject *s);

#endif /* FW_DATAPATH_EXPLAIN_H */
