/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The monitor protocol between `fastwall monitor` and fastwalld: the
 * reader's request (one JSON line of filters), the filter match, and the
 * events as JSON lines, which the CLI also renders as text. Functions
 * return 0 or a negative errno; errors fill err with a reason. */
#ifndef FW_PROTOCOL_MONITOR_H
#define FW_PROTOCOL_MONITOR_H

#include <stdbool.h>
#include <stddef.h>

#include "fastwall/abi.h"

#define FW_MON_REQ_MAX	   4096 /* bytes of a request line */
#define FW_MON_REASON_LEN  48
#define FW_MON_MAX_LEARNED 16

enum fw_mon_kind {
	FW_MON_DROP = 1u << 0,	/* a packet the data path dropped */
	FW_MON_DNS = 1u << 1,	/* a decision of the DNS proxy */
	FW_MON_ALLOW = 1u << 2, /* a sampled packet the data path passed */
	FW_MON_L7 = 1u << 3,	/* a verdict of the layer-7 proxy */
	FW_MON_ALL = FW_MON_DROP | FW_MON_DNS | FW_MON_ALLOW | FW_MON_L7,
};

/* One event as fastwalld saw it. Strings may be NULL or "" (unknown). */
struct fw_mon_event {
	enum fw_mon_kind kind;
	__u64 time_ns; /* CLOCK_REALTIME */
	__u32 subject; /* kernel id, 0: no subject */
	const char *name;
	const char *reason; /* drop/pass reason name, or the DNS reason */
	/* drop, allow: the packet */
	struct fw_ip src, dst;
	__u16 sport, dport; /* host order */
	__u8 proto;
	const char *ifname;
	__u64 suppressed; /* events of the subject the rate limit left out before */
	__u32 sample;	  /* allow: one packet in this many is sampled */
	/* dns: the client is src; l7: the server name or Host, with the
	 * connection's kind ("tls", "http") in ifname */
	const char *qname;
	__u16 qtype;
	bool allowed;
	__u8 rcode;
	struct fw_ip learned[FW_MON_MAX_LEARNED];
	size_t nlearned;
};

/* What a reader asked for; an empty field matches everything. */
struct fw_mon_filter {
	unsigned int kinds; /* enum fw_mon_kind bits, 0 = all */
	char subject[FW_NAME_LEN];
	bool by_id; /* subject was a number: match the kernel id */
	__u32 subject_id;
	char reason[FW_MON_REASON_LEN];
	bool has_prefix;
	struct fw_ip net;
	__u32 plen;
};

void fw_mon_filter_init(struct fw_mon_filter *f);
/* Sets one filter from text: key "kind" (a comma list of drop, dns,
 * allow), "subject" (a name, or a number for the kernel id), "reason"
 * (a reason name, e.g. default-deny, dns-denied-name), "addr" (an address
 * or CIDR, matched against source, destination and learned addresses).
 * -EINVAL and err for an unknown key or a bad value; f is unchanged then. */
int fw_mon_filter_set(struct fw_mon_filter *f, const char *key, const char *value, char *err,
		      size_t errlen);
bool fw_mon_match(const struct fw_mon_filter *f, const struct fw_mon_event *ev);

/* The request line: a JSON object of the keys above, string values only.
 * Parses untrusted bytes (at most FW_MON_REQ_MAX). */
int fw_mon_request_parse(const char *buf, size_t len, struct fw_mon_filter *f, char *err,
			 size_t errlen);
/* f as a request line (malloc'd, with the newline), NULL on ENOMEM. */
char *fw_mon_request_format(const struct fw_mon_filter *f);

/* ev as one JSON line (malloc'd, with the newline; *len its length), NULL
 * on ENOMEM. */
char *fw_mon_event_json(const struct fw_mon_event *ev, size_t *len);
/* The line that tells a reader it lost n events. */
char *fw_mon_lost_json(__u64 n, size_t *len);

/* One line the daemon sent, as text in out (no newline): an event line
 * like `fastwall monitor` prints it. -EINVAL when the line is no JSON
 * object of a known kind. */
int fw_mon_render_text(const char *line, size_t len, char *out, size_t outlen);

const char *fw_mon_kind_name(enum fw_mon_kind k);
const char *fw_mon_rcode_name(__u8 rcode, char *buf, size_t len);
const char *fw_mon_qtype_name(__u16 qtype, char *buf, size_t len);

#endif /* FW_PROTOCOL_MONITOR_H */
