/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* What the verdict table's runner (verdicts.c) and its files of rows by
 * feature (rows/<feature>.c) share: who is who (the addresses of the
 * fixture), a row, the test state, and the control-plane helpers the
 * rows' setups call. Setups return 0, or -1 after saying what went
 * wrong; results are counted in passed and failed. */
#ifndef FW_TEST_VERDICTS_H
#define FW_TEST_VERDICTS_H

#include <errno.h>
#include <net/if.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/pkt_cls.h>

#include "common/addr.h"
#include "common/log.h"
#include "datapath/datapath.h"
#include "datapath/dispatch.h"
#include "datapath/l2bind.h"
#include "datapath/l7.h"
#include "datapath/leases.h"
#include "datapath/reasons.h"
#include "datapath/rules.h"
#include "datapath/stats.h"
#include "dns/learn.h"
#include "pkt.h"
#include "subjects/registry.h"

#define DUMMY_IF  "@dummy"	      /* stands for the test's own dummy interface */
#define DUMMY_MAC "02:00:00:00:00:0d" /* the source MAC of frames on the dummy */

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
/* ---- test state ------------------------------------------------------ */

#define MAX_EVENTS 64

struct verdicts_state {
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
};

extern struct verdicts_state t;
extern int passed, failed;

/* ---- the table --------------------------------------------------------- */

enum prog {
	FROM_SANDBOX = 0, /* fw_from_sandbox: judges what a sandbox sends */
	TO_SANDBOX, /* fw_to_sandbox: records pod-opened flows; always TC_ACT_OK, counts nothing */
};

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

enum run_flags {
	RUN_EVENTS = 1 << 0, /* check the deny event (off where a scenario counts them) */
	RUN_QUIET = 1 << 1,  /* print nothing when the row holds */
};

/* ---- the runner's helpers (verdicts.c) ----------------------------------- */

/* The program a row goes through: the one place naming the TC programs. */
int prog_fd(enum prog p);
struct fw_ip ip_of(const char *text);
struct fw_mac mac_of(const char *text);
__u32 id_of(const char *name);
int subject_put(const struct subject_def *d);
int learn(const char *subject, const char *addr, long ttl_s);
__u32 trie_of(__u32 id);
int config_flags(__u32 flags);
int doh_list(void);
int doh_strict(void);
int local_full(void);
int doh_off(void);
int dns_proxy_all(void);
int dns_proxy_gateway_only(void);
/* Runs one frame through prog; returns the TC verdict or -1. */
int run_frame(int prog_fd, const struct pkt_spec *spec);
/* Runs one row; prints the details and returns false on any mismatch. */
bool run_row(const struct row *r, unsigned int flags);
void result(bool ok, const char *desc, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void events_drain(void);
size_t events_of(__u32 id, __u64 *suppressed);
bool row_of(__u32 id, struct fw_subject_row *out);
__u64 stats_row_slot(__u32 id, __u32 reason);
int state_reset(void);
/* How many keys of map fd belong to subject id (rows/forms.c). */
int subject_keys(int fd, size_t key_size, __u32 id);
/* The connection record of subject's flow to dst (rows/conns.c): 0 or
 * -errno; and how many records subject id holds. */
int conn_of(const char *subject, const char *dst, __u16 sport, __u16 dport, struct fw_conn *c);
size_t conns_held(__u32 id);
/* The kernel's expiry of subject id's lease on addr, and the port sets
 * of its learned addresses (rows/learned.c). */
__u64 kernel_expiry(__u32 id, const char *addr);
size_t lports_held(__u32 id);

/* ---- the rows, one table per feature (rows/<feature>.c) ------------------ */

#define ROWS(name)                                                                                 \
	extern const struct row name[];                                                            \
	extern const size_t name##_n
ROWS(policy_rows);
ROWS(dispatch_rows);
ROWS(podlocal_rows);
ROWS(dns_rows);
ROWS(header_rows);
ROWS(l2_rows);
ROWS(nd_rows);
ROWS(fragment_rows);
ROWS(change_rows);
ROWS(l7_rows);
#undef ROWS

/* ---- the scenarios that are not one packet per row ----------------------- */

void explain_no_iface(void);
void scenario_event_rate_limit(void);
void scenario_allow_sample(void);
void scenario_rule_forms(void);
void scenario_range_edges(void);
void scenario_subject_rows(void);
void scenario_events_lost(void);
void scenario_connections(void);
void scenario_conn_quota(void);
void scenario_l7_flood(void);
void scenario_learned_ports(void);
void scenario_learned_ports_share(void);
void scenario_learned_leases(void);
void scenario_l2_ports(void);
void scenario_reap_restart(void);

#endif /* FW_TEST_VERDICTS_H */
