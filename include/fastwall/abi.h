/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The BPF/userspace boundary: map keys and values, verdict reasons, events.
 * Compiled by the BPF programs (against vmlinux.h) and by userspace (against
 * <linux/types.h>); everything here is plain data with fixed sizes. */
#ifndef FASTWALL_H
#define FASTWALL_H

#ifndef __VMLINUX_H__
#include <linux/types.h>
#endif

/* Times in the maps are CLOCK_MONOTONIC nanoseconds (bpf_ktime_get_ns in
 * the programs, fw_now_ns in userspace): the one definition of a second
 * and a millisecond in them. */
#define FW_NSEC_PER_SEC	 1000000000ull
#define FW_NSEC_PER_MSEC 1000000ull

#ifndef FW_MAX_SUBJECTS
#define FW_MAX_SUBJECTS 8192 /* subject ids 1..FW_MAX_SUBJECTS-1; 0 = none */
#endif
#ifndef FW_MAX_ADDRS
#define FW_MAX_ADDRS (2 * FW_MAX_SUBJECTS)
#endif
#ifndef FW_MAX_RULES
#define FW_MAX_RULES 4096 /* compiled CIDR entries per subject */
#endif
#ifndef FW_MAX_LEARNED
#define FW_MAX_LEARNED 1048576
#endif
#ifndef FW_MAX_PORT_RULES
#define FW_MAX_PORT_RULES 262144
#endif
#ifndef FW_MAX_LEARNED_PORTS
#define FW_MAX_LEARNED_PORTS 1048576 /* no prealloc; 4,096 per subject at most */
#endif
#ifndef FW_MAX_NAMES
#define FW_MAX_NAMES 262144
#endif
#ifndef FW_MAX_LOCAL
#define FW_MAX_LOCAL 256
#endif
#ifndef FW_MAX_DOH
#define FW_MAX_DOH 4096
#endif
#ifndef FW_MAX_POD_FLOWS
#define FW_MAX_POD_FLOWS 65536
#endif
#ifndef FW_MAX_FRAGS
#define FW_MAX_FRAGS 8192
#endif
#ifndef FW_MAX_DNS_NAT
#define FW_MAX_DNS_NAT 65536
#endif
#ifndef FW_MAX_CONNS
#define FW_MAX_CONNS 1048576 /* no prealloc: memory only for records held */
#endif
#ifndef FW_MAX_L2_PORTS
#define FW_MAX_L2_PORTS 4096 /* sandbox ports with a link-layer binding */
#endif
#ifndef FW_MAX_CGROUPS
#define FW_MAX_CGROUPS FW_MAX_SUBJECTS /* process subjects: one cgroup each */
#endif
/* cgroup levels below the cgroup2 root the programs look through for a
 * sandbox's cgroup; fastwalld refuses a deeper one (it could not be found) */
#ifndef FW_CG_MAX_LEVELS
#define FW_CG_MAX_LEVELS 16
#endif
#ifndef FW_MAX_GUARD_PORTS
#define FW_MAX_GUARD_PORTS 1024 /* {proto, port} entries: 512 ports, TCP and UDP */
#endif
#ifndef FW_MAX_GUARD_TRUSTED
#define FW_MAX_GUARD_TRUSTED 4096 /* trusted CIDRs of the port guard */
#endif
#ifndef FW_MAX_GUARD_HOOKS
#define FW_MAX_GUARD_HOOKS 256 /* uplinks whose guard hook is recorded */
#endif
#ifndef FW_EVENT_RING_BYTES
#define FW_EVENT_RING_BYTES (1 << 20)
#endif
/* fastwall_events_lost: one slot per event type (enum fw_event_type) */
#ifndef FW_EVENT_LOST_SLOTS
#define FW_EVENT_LOST_SLOTS 4
#endif

/* Every address is 128 bits in network order; IPv4 is stored v4-mapped
 * (::ffff:a.b.c.d), so one set of maps and one LPM key serve both families.
 * An IPv4 /n is an LPM prefix of 96 + n. */
struct fw_ip {
	__u8 b[16]; /* network order; the only member, so bpftool prints it once */
} __attribute__((aligned(4)));

/* The address as four 32-bit words in network order, as an lvalue:
 * FW_IP_W(ip)[3] is an IPv4 address's word. may_alias: the words and the
 * bytes are one object to the compiler, whichever a function writes. */
typedef __be32 __attribute__((may_alias)) fw_ip_word;
#define FW_IP_W(ip) ((fw_ip_word *)(ip)->b)

#define FW_V4_PREFIX_BASE 96

enum fw_family {
	FW_FAM_V4 = 0,
	FW_FAM_V6 = 1,
	FW_FAM_MAX,
};

/* The enums that sit in map values are packed to the width of the field
 * they replaced (one byte here), so the layout stays what it was while
 * the BTF names the values: bpftool prints "state": "FW_STATE_ACTIVE". */
enum __attribute__((packed)) fw_subject_state {
	FW_STATE_ABSENT = 0,
	FW_STATE_DENYING = 1,
	FW_STATE_ACTIVE = 2,
};

/* Verdict reasons (enum fw_reason, FW_REASON_SLOTS, the pass/drop mask):
 * one table in reasons.h. */
#include "fastwall/reasons.h"

/* fastwall_abi: the one record (array, key 0) saying which layout the
 * maps pinned beside it have. Pins without it, but with fastwall_dispatch,
 * are ABI 1 (the release before the record). A map whose layout changes
 * gets a new name (fastwall_stats_v2) and a new ABI version; unchanged
 * maps keep their names and their pinned state. Writer and reader:
 * fastwalld (and the CLI, to refuse pins it does not understand). */
#define FW_ABI_MAGIC   0x6c6c617774736166ull /* "fastwall" in little-endian bytes */
#define FW_ABI_VERSION 2

struct fw_abi_record {
	__u64 magic;   /* FW_ABI_MAGIC */
	__u32 version; /* FW_ABI_VERSION of the fastwalld that wrote it */
	__u32 flags;   /* FW_ABI_F_* */
};

/* every slot of fastwall_rules_v2 holds its LPM trie (written once, at
 * the first start): a restart neither looks the slots up nor writes them */
#define FW_ABI_F_RULES_POPULATED (1u << 0)

/* fastwall_dispatch: source address -> subject. One entry per address of
 * every subject; the whole subject travels in the value so one hash lookup
 * dispatches a packet and an update swaps all of it at once (hash values are
 * replaced under RCU, never written in place). Writer: fastwalld. Reader:
 * TC programs. */
#define FW_IFINDEX_ANY	   0	       /* no host interface named */
#define FW_IFINDEX_MISSING 0xffffffffu /* named, but not present: all drop */

#define FW_SF_GATEWAY4 (1u << 0)
#define FW_SF_GATEWAY6 (1u << 1)
/* layer-7 pinning (fastwall_l7_nat below): TCP to a pinned port of a
 * destination a lease opened goes to the proxy at the subject's gateway */
#define FW_SF_L7 (1u << 2)
/* ... and of a destination an allow CIDR opened too (l7: {cidr: pin}) */
#define FW_SF_L7_CIDR (1u << 3)
/* the subject has an egress limit in fastwall_bandwidth (fastwall/
 * bandwidth.h): the bandwidth programs look it up only then, so a subject
 * without one costs them nothing past its dispatch entry */
#define FW_SF_BW (1u << 5)

struct fw_subject {
	__u32 id;
	enum fw_subject_state state;
	__u8 flags;	      /* FW_SF_* */
	__u8 private_plen[2]; /* per family, LPM-style length; 0 = none */
	__u32 ifindex;	      /* anti-spoof binding, FW_IFINDEX_* */
	__u32 rules_gen;      /* of id's rules: FW_GEN_SET, in fastwall_rule_sets; FW_GEN_RANGE, in
			       * fastwall_rule_ranges; else the trie's */
	struct fw_ip gateway[2];
	struct fw_ip private_net[2];
};

/* fastwall_cgroups: cgroup v2 id -> the subject of the processes in that
 * cgroup and every cgroup below it (process sandboxes in the node's own
 * network namespace; fw_subject as in fastwall_dispatch, ifindex
 * FW_IFINDEX_ANY, no gateway or private CIDR). The cgroup programs look
 * up the ancestors of a socket's or task's cgroup from the top, levels 1
 * to FW_CG_MAX_LEVELS, and the first one found decides: nothing below a
 * sandbox's cgroup can leave its policy. Added in ABI 2 without a new
 * version: older pins lack it and fastwalld creates it at start. Writer:
 * fastwalld. Reader: the cgroup programs. */

/* DNS of process subjects goes to fastwalld's proxy at a loopback address
 * of the subject's own, 127.254.0.0/16 + its id, which fastwall_dispatch
 * maps to the subject (with FW_IFINDEX_MISSING, so that no packet on a
 * sandbox port can claim it): the proxy attributes a query by the local
 * address it arrived on, whatever its source. A sandbox process may not
 * address such an address itself, nor bind or send from another's (the
 * socket hooks and the packet path refuse it).
 * fastwall_cg_dns: socket cookie -> the resolver the process addressed
 * (struct fw_dns_nat), so its answers come back from there. LRU. Writer:
 * the cgroup connect and sendmsg programs. Readers: cgroup recvmsg,
 * getpeername, sendmsg4 and egress (only a recorded socket's DNS passes). */
#define FW_CG_DNS_ALIAS_NET 0x7ffe0000u /* 127.254.0.0/16, host order */
#ifndef FW_MAX_CG_DNS
#define FW_MAX_CG_DNS 16384
#endif

/* fastwall_rules_v2: subject id -> that slot's LPM trie {struct
 * fw_rule_key -> struct fw_rule}. The controller resolves "deny beats
 * allow" before insertion, so one longest-prefix lookup is the verdict; the
 * ::/0 entry carries the default action. Each slot gets its trie once, at
 * the first start, and keeps it: a policy swap writes the new rule set
 * under a new generation beside the live one, points the subject's
 * dispatch values at it (fw_subject.rules_gen), and deletes the old
 * generation after an RCU grace period. The generation leads the key, so a
 * lookup of {32 + 128, gen, dst} only ever matches entries of gen. */
struct fw_rule_key {
	__u32 prefixlen; /* 32 (the generation) + the address prefix length */
	__be32 gen;
	struct fw_ip addr;
};

/* The rule key without a generation: fastwall_doh, the compiled rule
 * sets, and ABI 1's per-subject tries. */
struct fw_lpm_key {
	__u32 prefixlen;
	struct fw_ip addr;
};

enum __attribute__((packed)) fw_action {
	FW_ACTION_DENY = 0,
	FW_ACTION_ALLOW = 1,
	FW_ACTION_NONE = 2, /* no rule for every port: on to learned and default */
};

#define FW_RULE_DEFAULT 0xffffffffu

struct fw_rule {
	enum fw_action action; /* for every port */
	__u8 is_default;       /* no rule covers this prefix */
	enum fw_action dflt;   /* the subject's default action */
	__u8 pad;
	__u32 portset; /* per-port exceptions in fastwall_ports; 0 = none */
	__u32 rule;    /* most specific rule's index in the egress list, FW_RULE_DEFAULT */
};

/* fastwall_rule_sets: {subject id, generation} -> struct fw_rule_set, the
 * other form of a generation's rules: a small compiled set (at most
 * FW_SET_MAX entries, the default included) in one hash value, matched by
 * a scan instead of a trie walk. A change then writes one element instead
 * of one trie node per entry. A set of up to FW_SET_CHUNKS * FW_SET_MAX
 * entries takes that many elements, chunks of FW_SET_MAX entries in
 * order, chunk c keyed {id | c << FW_SET_CHUNK_SHIFT, gen} (chunk 0 is
 * the plain key); a lookup scans chunk after chunk and the first match
 * decides, so the chunks are one list. Chunk 0 is written last: where it
 * exists, the whole set does. The generation says which form it is:
 * FW_GEN_SET set in fw_subject.rules_gen names an element of this map,
 * clear names entries of the slot's trie; both forms share one counter,
 * so a generation number is never used twice for a subject. An element is
 * written whole before dispatch names it and never changed: the next
 * change writes a new one, and the old one is deleted an RCU grace period
 * after no dispatch value names it (the kernel may reuse a deleted hash
 * element's memory at once, so no program may still hold it). The entries are
 * in the order of a longest-prefix match (longest prefix first), so the
 * first entry whose prefix holds the destination decides; the last one is
 * the default (::/0). Added in ABI 2 without a new version: older pins
 * lack it and fastwalld creates it at start. Writer: fastwalld. Reader:
 * fw_from_sandbox, the cgroup programs. */
#define FW_GEN_SET (1u << 31)
#ifndef FW_SET_MAX
#define FW_SET_MAX 20
#endif
#define FW_SET_CHUNKS	   3
#define FW_SET_CHUNK_SHIFT 16 /* subject ids stay below 1 << 16 */
/* fw_set_key.subject of chunk c of subject id's set, and back */
#define FW_SET_SUBJECT(id, c) ((__u32)(id) | (__u32)(c) << FW_SET_CHUNK_SHIFT)
#define FW_SET_ID(subject)    ((subject) & ((1u << FW_SET_CHUNK_SHIFT) - 1))
#define FW_SET_CHUNK(subject) ((subject) >> FW_SET_CHUNK_SHIFT)
#define FW_SET_LARGEST	      (FW_SET_CHUNKS * FW_SET_MAX)
#define FW_MAX_SETS	      (4 * FW_MAX_SUBJECTS) /* elements, live and retired, not preallocated */

struct fw_set_key {
	__u32 subject; /* and the chunk, << FW_SET_CHUNK_SHIFT */
	__u32 gen;     /* with FW_GEN_SET */
};

struct fw_set_entry {
	struct fw_ip addr; /* the prefix, bits past its length zero */
	struct fw_ip mask; /* its length as a mask */
	struct fw_rule rule;
};

struct fw_rule_set {
	__u32 n; /* entries used (of this chunk) */
	__u32 pad;
	struct fw_set_entry e[FW_SET_MAX];
};

/* fastwall_rule_ranges: {subject id, generation} -> a slot of
 * fastwall_range_tables, which holds a struct fw_range_set: the third form
 * of a generation's rules, for sets too large to scan (more than
 * FW_SET_LARGEST entries) and of at most FW_RANGE_RULES. The compiled
 * prefixes are cut into the address ranges they decide, sorted, and found
 * by a binary search (FW_RANGE_STEPS steps, whatever the set's size).
 * Range i runs from start[i] to the address before start[i + 1] (the last
 * to the end of the address space), and its longest prefix is entry at[i]
 * (FW_RANGE_NONE: no prefix holds it). Starts are 128-bit addresses (IPv4
 * as ::ffff:a.b.c.d) as four 32-bit words, most significant first, in
 * host order, so the program compares them with subtractions; the ranges
 * past n start at the last address and repeat the last entry.
 *
 * The tables are a preallocated, mmapable array, so a change allocates
 * nothing in the kernel (a hash element of this size would cost a fresh
 * allocation, 20 us, on most writes): fastwalld copies the table into a
 * free slot through its mapping (no program reads a free slot), then
 * writes the element naming it (BPF_NOEXIST, a 4-byte value), then
 * dispatch. A slot is free again when its element is deleted,
 * a grace period after no dispatch value names its generation, when no
 * packet can still hold it. FW_GEN_RANGE in fw_subject.rules_gen names an
 * element of this map; the three forms share one generation counter.
 * When every slot is taken, a change goes to the trie. Both maps were
 * added in ABI 2 without a new version. Writer: fastwalld. Reader: TC
 * ingress, the cgroup programs. */
#define FW_GEN_RANGE   (1u << 30)
#define FW_GEN_FORMS   (FW_GEN_SET | FW_GEN_RANGE) /* the bits that are not the counter */
#define FW_RANGE_STEPS 9
#define FW_RANGE_MAX   (1u << FW_RANGE_STEPS) /* ranges per set */
#define FW_RANGE_RULES 256		      /* entries per set, the default included */
#define FW_RANGE_NONE  0xffff
#ifndef FW_RANGE_SLOTS
#define FW_RANGE_SLOTS 1024 /* tables, live and retired: 12.3 MiB, preallocated */
#endif

struct fw_range_set {
	__u32 n;      /* ranges used */
	__u32 nrules; /* entries */
	__u32 start[FW_RANGE_MAX][4];
	__u16 at[FW_RANGE_MAX];
	__u8 plen[FW_RANGE_RULES]; /* each entry's prefix length (over 128 bits) */
	struct fw_rule rule[FW_RANGE_RULES];
};

/* fastwall_subject_rows: {CPU, subject id} -> struct fw_subject_row, key
 * FW_ROW_KEY(cpu, id): what an allowed packet of the subject touches
 * besides its dispatch value, in one 64-byte cache line per CPU and
 * subject (a plain array of FW_ROW_CPUS(max_entries) CPUs x
 * FW_MAX_SUBJECTS rows; mmapable, so its values start on a page and every
 * row on a line). It holds:
 * - this CPU's last answer of the subject's rule trie, so a subject
 *   sending to the same destination again skips the trie walk (a chain of
 *   cache misses, one per trie level, when many subjects send). An answer
 *   is used only for the same destination, the same generation
 *   (fw_subject.rules_gen) and the same epoch: fastwall_rules_epoch
 *   (array, key 0) is a counter fastwalld bumps after every change to a
 *   generation's entries that dispatch may already name (an in-place
 *   edit), after every write to fastwall_cgroups (for the cgroup sendmsg
 *   hooks' per-socket records, bpf/lib/cgroup.h) and at every start
 *   (generation numbers restart from what the tries hold); the row keeps
 *   its low 32 bits. fastwalld zeroes no
 *   answer, tags expire by themselves.
 * - the subject's packets of the policy's three pass reasons (reasons 0
 *   to FW_ROW_REASONS - 1) on this CPU, which therefore stay 0 in
 *   fastwall_subject_stats_v2 (the readers add both; the cgroup programs
 *   count there).
 * Added in ABI 2 without a new version, replacing fastwall_rule_cache
 * (a per-CPU array of the answers alone, whose rows straddled lines);
 * a start unpins that one. Writers: fw_from_sandbox; fastwalld zeroes the
 * counters of an id it reuses. Readers: fw_from_sandbox, fastwalld, CLI. */
#define FW_ROW_REASONS		 3 /* FW_PASS_ALLOW_CIDR, FW_PASS_LEARNED, FW_PASS_DEFAULT */
#define FW_ROW_KEY(cpu, id)	 ((cpu)*FW_MAX_SUBJECTS + (id))
#define FW_ROW_CPUS(max_entries) ((max_entries) / FW_MAX_SUBJECTS)

struct fw_subject_row {
	__u32 seq;   /* odd while this CPU writes the answer */
	__u32 gen;   /* of the answer */
	__u32 epoch; /* of the answer, fastwall_rules_epoch's low 32 bits */
	struct fw_ip dst;
	struct fw_rule rule;
	__u64 packets[FW_ROW_REASONS];
};

/* fastwall_src_slots: {CPU, slot of an IPv4 source} -> struct fw_src_slot,
 * key FW_SRC_KEY(cpu, FW_SRC_HASH(source)): this CPU's last answer for a
 * source, with the fields of the source's dispatch value that the answer's
 * path reads (its subject and the anti-spoof binding). A packet whose
 * source, destination and epoch match its slot is decided from that one
 * cache line: no dispatch lookup, no subject row read (the row is still
 * written, by the counters). It is a cache, not state: it is filled only
 * by a packet that passed the anti-spoof binding and the denying,
 * pod-local and sibling checks to reach the subject's rules, and it is used
 * only under the fastwall_rules_epoch it was filled under. fastwalld
 * raises that epoch after every write to fastwall_dispatch that replaces
 * or removes an active subject's value (the only kind a slot copies),
 * besides the changes the answer rows already end; a start raises it too.
 * DNS (port 53) and DNS over TLS (853) never take this path. A plain array
 * of possible CPUs x FW_SRC_SLOTS slots (mmapable, so every slot is on a
 * line of its own); its own to the loaded programs and not pinned: a
 * restart or an upgrade starts with empty slots. fw_from_sandbox only, on x86
 * (FW_RULE_CACHE), IPv4 sources only. Writer and reader: fw_from_sandbox. */
#define FW_SRC_SLOTS	   8192 /* per CPU, a power of two */
#define FW_SRC_KEY(cpu, h) ((cpu)*FW_SRC_SLOTS + (h))
/* of the source in host order: addresses handed out in sequence (a
 * pod's sandboxes) fill distinct slots up to FW_SRC_SLOTS of them */
#define FW_SRC_HASH(a) (((a) ^ ((a) >> 13) ^ ((a) >> 26)) & (FW_SRC_SLOTS - 1))

struct fw_src_slot {
	__u32 seq;     /* odd while this CPU writes it */
	__u32 epoch;   /* fastwall_rules_epoch's low 32 bits when filled */
	__be32 src;    /* the IPv4 source it is for */
	__be32 dst;    /* the destination of the answer */
	__u32 id;      /* the source's subject; 0: empty */
	__u32 ifindex; /* the subject's binding, FW_IFINDEX_* */
	struct fw_rule rule;
	__u32 pad[7];
};

/* fastwall_ports: {subject, port set, port} -> enum fw_action, the
 * per-port exceptions of an LPM entry (rules with a `ports` list). TCP and
 * UDP destination ports; a port not listed takes the entry's action.
 * Writer: fastwalld (new sets before the trie swap, old ones after).
 * Reader: fw_from_sandbox. */
#define FW_PORTSET_GEN (1u << 31) /* alternates per swap: old and new sets coexist */

struct fw_port_rule_key {
	__u32 subject;
	__u32 portset;
	__u16 port; /* host order */
	__u16 pad;
};

/* fastwall_learned: {subject, address} -> lease. Writer: fastwalld (DNS
 * proxy, refresh loop, GC). Reader: fw_from_sandbox, against bpf_ktime_get_ns.
 * A lease taught only by domain rules with `ports` names a port set:
 * fastwall_learned_ports holds {subject, set, port} -> 1 for each TCP/UDP
 * destination port the address may be reached on (the union over the
 * rules that taught it); anything else to it drops (learned-port).
 * Writer: fastwalld (a set's ports before the first lease naming it, and
 * deleted after the last one stops). Reader: fw_from_sandbox. */
struct fw_learned_key {
	__u32 subject;
	__u32 pad;
	struct fw_ip addr;
};

struct fw_lease {
	__u64 expires_ns; /* CLOCK_MONOTONIC (bpf_ktime_get_ns) */
	__u64 learned_ns;
	__u32 portset; /* in fastwall_learned_ports; 0 = every port and protocol */
	__u32 pad;
};

/* fastwall_names: name id -> the DNS name (as the query asked it), and
 * fastwall_learned_names: {subject, address} -> the ids of the names that
 * taught the address, so a restarted fastwalld can still revoke an
 * address by name. Writer and reader: fastwalld only (the data plane never
 * reads them; they are maps so they live as long as the leases do). */
#define FW_LEASE_NAMES	 8   /* FW_LEARN_MAX_NAMES */
#define FW_LEASE_NAME_SZ 256 /* a name of at most 253 characters, NUL-terminated */

struct fw_lease_name {
	char text[FW_LEASE_NAME_SZ];
};

struct fw_lease_names {
	__u32 ids[FW_LEASE_NAMES]; /* 0 = none; oldest first */
};

/* fastwall_conns: TCP connections of a subject to learned addresses, so
 * the lease refresh renews the lease of a destination while a connection
 * to it is open (and once more when it ends). Writer: fw_from_sandbox (opens on
 * a SYN without ACK, closes on FIN/RST, last_seen at most once a second),
 * fw_to_sandbox (a RST from the destination), fastwalld (renewed, delete).
 * Reader: fastwalld. A plain hash, never an LRU: one subject's records
 * must not push out another's. fastwall_conn_count: subject id -> records
 * it holds (array, mmapable), capped at fw_config.conn_quota. */
struct fw_conn_key {
	__u32 subject;
	__be16 sport; /* the sandbox's port */
	__be16 dport;
	struct fw_ip dst;
};

struct fw_conn {
	__u64 last_seen_ns;
	__u64 closed_ns; /* FIN or RST seen; 0 = open */
	__u32 renewed;	 /* fastwalld gave the closing grace renewal */
	__u32 pad;
};

/* fastwall_dns_nat: DNS queries redirected to the proxy, keyed by the
 * sandbox's end, with the destination the sandbox addressed, so the
 * proxy's answer leaves with that source. Writer: fw_from_sandbox.
 * Reader: fw_to_sandbox. LRU. */
struct fw_dns_nat_key {
	struct fw_ip client;
	__be16 client_port;
	__u8 proto;
	__u8 pad;
};

struct fw_dns_nat {
	struct fw_ip orig_dst;
	__be16 orig_port;
	__u16 pad[3];
};

/* Layer-7 pinning. fastwall_l7_ports: struct fw_port_key {TCP, port} ->
 * struct fw_l7_port, the destination ports whose connections go to the
 * proxy and the proxy port that reads each kind (a TLS port's UDP is
 * QUIC). Writer: fastwalld. Readers: fw_from_sandbox, the cgroup
 * programs.
 * fastwall_l7_nat: the sandbox's end of a connection sent to the proxy
 * -> where the sandbox meant it to go, and whose it is. The proxy reads
 * it by its peer's address and port to learn the subject and the one
 * address it may connect to; fw_to_sandbox gives the proxy's segments
 * the original source. A plain hash, not an LRU: a sibling's SYNs must
 * not push out a live connection's entry; full is l7-full. A SYN from
 * the same sandbox end to the same proxy port for another destination,
 * while the entry is open and not idle, is l7-port-reuse (the proxy
 * could not tell the two apart). Writers:
 * fw_from_sandbox (at the SYN; last_seen at most once a second), the
 * cgroup sockops program, fastwalld (deletes idle entries). Readers:
 * fw_from_sandbox, fw_to_sandbox, the cgroup programs, the proxy.
 * fastwall_l7_count: subject id -> __u64, the fastwall_l7_nat entries it
 * holds (array of FW_MAX_SUBJECTS, mmapable), capped at
 * fw_config.conn_quota: a new entry is added only as a new key
 * (BPF_NOEXIST) while the count is below it, and counted after the
 * insert; over it is l7-full. Overwriting the subject's own closed or
 * idle entry counts nothing. A connection the proxy reported closed
 * stops counting at once (fastwalld marks its entry `reported` and
 * subtracts), so the share bounds open connections, not the rate of new
 * ones; a SYN that takes a reported entry counts as new. Writers:
 * fw_from_sandbox and the cgroup sockops program (add; the sockops
 * program subtracts when its delete at close found the entry),
 * fastwalld (subtracts for a reported close and for what it deletes
 * uncounted, rewrites a drifted count, zeroes a reaped id's). */
#ifndef FW_MAX_L7_NAT
#define FW_MAX_L7_NAT 65536
#endif
#define FW_MAX_L7_PORTS 64
/* An open fastwall_l7_nat entry of another destination, seen within this
 * (twice the default l7 idle timeout), holds its sandbox end: a new SYN
 * from there to the same proxy port is l7-port-reuse. */
#define FW_L7_REUSE_NS (120ull * 1000000000ull)
/* A connection the proxy reported closed keeps its entry this long, for
 * the last segments of its close (FIN, ACK, a retransmission or two). */
#define FW_L7_RELEASE_NS (1000000000ull)

enum __attribute__((packed)) fw_l7_kind {
	FW_L7_NONE = 0,
	FW_L7_TLS = 1,	/* the server name of the ClientHello, passed through */
	FW_L7_HTTP = 2, /* the Host of every request */
};

struct fw_l7_port {
	__be16 proxy_port; /* where the proxy reads this kind */
	enum fw_l7_kind kind;
	__u8 pad;
};

struct fw_l7_nat_key {
	struct fw_ip client; /* the sandbox's address (process sandboxes: the socket's) */
	__be16 client_port;
	__be16 proxy_port; /* the proxy port it was sent to */
};

struct fw_l7_nat {
	struct fw_ip orig_dst; /* the address the sandbox addressed */
	__be16 orig_port;
	__be16 proxy_port;
	__u32 subject;
	__u64 last_seen_ns;
	enum fw_l7_kind kind;
	__u8 family; /* enum fw_family */
	__u8 closed; /* the sandbox sent FIN or RST: a new SYN may take the entry */
	__u8 sock;   /* written by the cgroup sockops program, which deletes it at close */
	/* fastwalld heard from the proxy that the connection closed: no
	 * longer counted in the subject's share; it goes after
	 * FW_L7_RELEASE_NS (its last segments) */
	__u8 reported;
	__u8 pad[3];
};

/* fastwall_pod_flows: flows the pod opened into a sandbox, keyed as the
 * sandbox's reply will carry them. Writer: fw_to_sandbox.
 * Reader: fw_from_sandbox (pod-local replies). LRU. */
struct fw_flow_key {
	struct fw_ip sandbox;
	struct fw_ip pod;
	__be16 sandbox_port;
	__be16 pod_port;
	__u8 proto;
	__u8 pad[3];
};

struct fw_flow {
	__u64 last_seen_ns;
};

/* fastwall_frags: first fragments that passed, so later fragments of the
 * same datagram (which carry no ports) can follow. LRU. Writer and reader:
 * fw_from_sandbox. */
struct fw_frag_key {
	struct fw_ip src;
	struct fw_ip dst;
	__u32 id;
	__u8 proto;
	__u8 pad[3];
};

struct fw_frag {
	__u64 expires_ns;
	__u32 subject;
	__u16 hdr_end; /* where the first fragment's headers end: later
			* fragments starting before it would rewrite them */
	__u16 pad;
};

/* fastwall_local: pod-local addresses besides the gateways -> flags.
 * fastwall_local_ports: {proto, port} open to the sandboxes on pod-local
 * addresses besides DNS. Writer: fastwalld. Reader: fw_from_sandbox. */
struct fw_local {
	__u32 flags; /* none defined yet: open ports via fastwall_local_ports */
};

struct fw_port_key {
	__u8 proto;
	__u8 pad;
	__be16 port;
};

/* The port guard (bpf/guard.bpf.c, XDP or TC ingress of the pod's uplink):
 * fastwall_guard_ports: struct fw_port_key {proto, port} -> 1, the
 * guarded data-plane ports (TCP and UDP entries apart).
 * fastwall_guard_trusted: struct fw_lpm_key (v4-mapped like every
 * address) -> struct fw_guard_trust, the sources that may reach them.
 * Writer: fastwalld (new entries before removed ones go, so a source
 * trusted before and after a reload is never refused). Reader: the guard.
 * fastwall_guard_frags: struct fw_frag_key -> struct fw_frag (subject 0)
 * of first fragments the guard passed, so their later fragments (which
 * carry no ports) follow. LRU. Writer and reader: the guard. Counters and
 * deny events go to fastwall_stats_v2 and fastwall_events (subject 0). */
struct fw_guard_trust {
	__u32 flags; /* none defined yet */
};

/* fastwall_guard_hooks: ifindex -> struct fw_guard_hook, the hook the
 * guard got on an uplink and why, for fastwall status. Writer: fastwalld
 * at each attach. Reader: the CLI, which believes an entry only while its
 * hook is the one attached (ifindexes are reused). No program reads it.
 * mode and hook hold userspace's enum fw_guard_mode, why its enum
 * fw_guard_why (datapath/guard.h): their numbers are fixed. */
struct fw_guard_hook {
	__u8 mode; /* the configured mode */
	__u8 hook; /* the hook the guard runs on */
	__u8 why;
	__u8 pad;
};

/* fastwall_config: the one global settings record (array, key 0). */
#define FW_CF_DOH_LIST	 (1u << 0) /* drop TCP 443 to fastwall_doh */
#define FW_CF_DOH_STRICT (1u << 1) /* drop all TCP 443 */
#define FW_CF_DNS_PROXY	 (1u << 2) /* DNS to the gateway goes to the proxy */
#define FW_CF_DNS_ALL	 (1u << 3) /* ... and DNS to any destination too */
/* the pod's addresses did not fit in fastwall_local: fail closed, every
 * destination not known to be pod-local drops as pod-local */
#define FW_CF_LOCAL_FULL (1u << 4)
/* monitor.allow_sample: one passed packet in allow_sample is an event */
#define FW_CF_ALLOW_SAMPLE (1u << 5)
/* a layer-7 proxy is configured: fastwall_l7_ports names its ports */
#define FW_CF_L7 (1u << 6)
/* ... and accepts: fastwalld sets it while the proxy is up, and without
 * it a pinned connection's SYN drops (l7-proxy-down), never bypasses */
#define FW_CF_L7_UP (1u << 7)
/* UDP to a pinned TLS port (QUIC) passes by the policy instead of
 * dropping l7-quic (l7.quic: allow) */
#define FW_CF_L7_QUIC (1u << 8)

struct fw_config {
	__u32 flags;		   /* FW_CF_* */
	__u32 event_burst;	   /* events a subject may emit back to back */
	__u64 event_interval_ns;   /* one event per interval after the burst */
	__u64 pod_flow_timeout_ns; /* idle timeout of pod-opened flows */
	__u64 frag_timeout_ns;	   /* how long a first fragment opens the rest */
	__u16 dns_port;		   /* the DNS proxy's port, with FW_CF_DNS_PROXY */
	__u16 allow_sample;	   /* with FW_CF_ALLOW_SAMPLE; was padding (0) */
	__u32 conn_quota;	   /* fastwall_conns records, and fastwall_l7_nat entries,
				    * per subject; 0 = no cap */
};

/* fastwall_stats_v2: reason -> counter (per-CPU array, FW_REASON_SLOTS).
 * fastwall_subject_stats_v2: subject id -> per-reason packets (per-CPU
 * array). Writer: fw_from_sandbox. Reader: fastwalld, CLI. ABI 1 had 29
 * slots under the names without _v2; a migration copies them into
 * fastwall_stats_carried and fastwall_subject_stats_carried (these
 * layouts), which the readers add. */
struct fw_counter {
	__u64 packets;
	__u64 bytes;
};

struct fw_subject_stats {
	__u64 packets[FW_REASON_SLOTS];
};

/* fastwall_event_budget: subject id -> GCRA state (per-CPU array), so a
 * flooding sandbox exhausts only its own share of the event ring. */
struct fw_event_budget {
	__u64 tat_ns;	  /* theoretical arrival time */
	__u64 suppressed; /* events dropped since the last one emitted */
};

/* fastwall_events: ring buffer of deny events and sampled allow events
 * (the same record; reason is a pass reason for an allow). */
enum fw_event_type {
	FW_EVENT_DROP = 1,
	FW_EVENT_ALLOW = 2,
};

struct fw_event {
	__u64 ts_ns;
	enum fw_event_type type;
	__u32 subject; /* 0 when the source is unknown */
	enum fw_reason reason;
	__u32 ifindex;
	__u64 suppressed; /* events this subject lost to rate limiting before */
	struct fw_ip src;
	struct fw_ip dst;
	__be16 sport;
	__be16 dport;
	__u8 proto;
	__u8 family; /* enum fw_family */
	__u8 pad[2];
};

/* Link-layer binding of sandbox ports. fastwall_l2_ports: ifindex ->
 * fw_l2_port, the one MAC a port may send from and the one link-local
 * address it learned. fastwall_l2_macs: fw_mac -> owner ifindex and
 * fastwall_l2_lladdrs: fe80::/10 fw_ip -> owner ifindex, so that one MAC
 * and one link-local address belong to one port only; owner
 * FW_L2_OWNER_POD (no skb has ifindex 0) marks the pod's own MACs and
 * link-local addresses, which no port may claim. Writers: fastwalld (from
 * the link at attach, the pod's reservations, cleanup when a port goes)
 * and fw_from_sandbox (first sight, with BPF_NOEXIST so the first claimant
 * owns it). Reader: fw_from_sandbox. */
#define FW_L2_OWNER_POD 0u

#define FW_L2F_UNBOUND (1u << 0) /* prepared by fastwalld: the MAC is learned on first sight */
#define FW_L2F_LLADDR  (1u << 1) /* lladdr holds a learned link-local address */
#define FW_L2F_PINNED  (1u << 2) /* mac from the link or the configuration, not first sight */

struct fw_mac {
	__u8 b[6];
	__u16 pad;
};

struct fw_l2_port {
	struct fw_mac mac;  /* the peer's MAC: the only Ethernet source accepted */
	struct fw_mac host; /* the port's own MAC when fastwalld bound it, to tell ifindex reuse */
	__u32 flags;	    /* FW_L2F_* */
	__u32 pad;
	struct fw_ip lladdr; /* with FW_L2F_LLADDR */
};

/* fastwall_subject_meta: subject id -> what the controller needs to adopt
 * the subject after a restart. Never read by the data plane. */
#define FW_UID_MAX  128 /* longest sandbox uid the protocol accepts */
#define FW_NAME_LEN 136 /* FW_UID_MAX and a NUL, rounded up to 8 */

enum fw_origin {
	FW_ORIGIN_STATIC = 1,
	FW_ORIGIN_ACTIONS = 2,
	/* removed: its dispatch and rules are gone, its learned addresses,
	 * connection records and port exceptions wait for the reaper, and the
	 * id is not reused before they are gone */
	FW_ORIGIN_RETIRED = 3,
	/* a process sandbox of `fastwall run` (cgroup, no addresses) */
	FW_ORIGIN_PROCESS = 4,
};

struct fw_subject_meta {
	char name[FW_NAME_LEN]; /* static subject name or sandbox uid */
	__u64 binding_hash;	/* addresses, interface, gateway, CIDR */
	__u64 policy_hash;	/* compiled rule set */
	enum fw_origin origin;
	__u32 port_state;      /* FW_PORTSET_GEN of the live sets | their count */
	char ifname[16];       /* host interface by name; "" = none */
	__u64 fence_hash;      /* (runtimeInstanceId, attachmentId); 0 = static */
	__u64 spec_generation; /* of the binding that set the policy */
};

#ifndef __VMLINUX_H__
_Static_assert(sizeof(struct fw_ip) == 16, "fw_ip");
_Static_assert(_Alignof(struct fw_ip) == 4, "fw_ip: as aligned as the union of words it was");
_Static_assert(sizeof(struct fw_subject) == 80, "fw_subject");
_Static_assert(sizeof(struct fw_lpm_key) == 20, "fw_lpm_key");
_Static_assert(sizeof(struct fw_guard_hook) == 4, "fw_guard_hook");
_Static_assert(sizeof(struct fw_rule) == 12, "fw_rule");
_Static_assert(sizeof(struct fw_rule_key) == 24, "fw_rule_key");
_Static_assert(sizeof(struct fw_range_set) == 12552, "fw_range_set: 12.3 KiB a slot");
_Static_assert(sizeof(struct fw_subject_row) == 64, "fw_subject_row: one cache line");
_Static_assert(sizeof(struct fw_src_slot) == 64, "fw_src_slot: one cache line");
_Static_assert(FW_PASS_ALLOW_CIDR == 0 && FW_PASS_LEARNED == 1 && FW_PASS_DEFAULT == 2,
	       "fw_subject_row counts reasons 0 to FW_ROW_REASONS - 1");
_Static_assert(sizeof(struct fw_port_rule_key) == 12, "fw_port_rule_key");
_Static_assert(sizeof(struct fw_learned_key) == 24, "fw_learned_key");
_Static_assert(sizeof(struct fw_lease) == 24, "fw_lease");
_Static_assert(sizeof(struct fw_lease_names) == 32, "fw_lease_names");
_Static_assert(sizeof(struct fw_flow_key) == 40, "fw_flow_key");
_Static_assert(sizeof(struct fw_frag_key) == 40, "fw_frag_key");
_Static_assert(sizeof(struct fw_config) == 40, "fw_config");
_Static_assert(sizeof(struct fw_conn_key) == 24, "fw_conn_key");
_Static_assert(sizeof(struct fw_dns_nat_key) == 20, "fw_dns_nat_key");
_Static_assert(sizeof(struct fw_l7_port) == 4, "fw_l7_port");
_Static_assert(sizeof(struct fw_l7_nat_key) == 20, "fw_l7_nat_key");
_Static_assert(sizeof(struct fw_l7_nat) == 40, "fw_l7_nat");
_Static_assert(sizeof(struct fw_event) == 72, "fw_event");
_Static_assert(sizeof(struct fw_subject_meta) == 192, "fw_subject_meta");
_Static_assert(sizeof(struct fw_mac) == 8, "fw_mac");
_Static_assert(sizeof(struct fw_l2_port) == 40, "fw_l2_port");
_Static_assert(sizeof(struct fw_subject_stats) == 512, "fw_subject_stats");
_Static_assert(sizeof(struct fw_abi_record) == 16, "fw_abi_record");
/* the enums in map values keep the width of the integers they replaced */
_Static_assert(sizeof(enum fw_subject_state) == 1, "fw_subject_state");
_Static_assert(sizeof(enum fw_action) == 1, "fw_action");
_Static_assert(sizeof(enum fw_reason) == 4, "fw_reason");
_Static_assert(sizeof(enum fw_event_type) == 4, "fw_event_type");
_Static_assert(sizeof(enum fw_origin) == 4, "fw_origin");
#endif

#endif /* FASTWALL_H */
