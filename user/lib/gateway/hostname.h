/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Exposed-service hostnames: readable <workspace>--<sandbox>[--<service>]
 * labels, hashed labels (base32 of a SHA-256 prefix under a gateway's
 * routing name), base domains and the host parser. Plain C on libc alone,
 * so the CLI and the nginx module compile the same file. Functions return
 * 0 (or a length) or a negative FW_HOSTNAME_E* code; fw_hostname_strerror()
 * names it. */
#ifndef FW_HOSTNAME_H
#define FW_HOSTNAME_H

#include <stddef.h>

#define FW_HOSTNAME_NAME_MAX	19 /* workspace, sandbox, service: 19+2+19+2+19 = 61 */
#define FW_HOSTNAME_ROUTING_MAX 63 /* a gateway's routing name: one DNS label */
#define FW_HOSTNAME_LABEL_LEN	16 /* base32 of 10 bytes, no padding */
#define FW_HOSTNAME_HASH_BYTES	10
#define FW_HOSTNAME_DOMAIN_MAX	253
#define FW_HOSTNAME_DOMAINS_MAX 16
#define FW_HOSTNAME_HOST_MAX	(63 + 1 + FW_HOSTNAME_DOMAIN_MAX)
/* the readable label, NUL included */
#define FW_HOSTNAME_READABLE_MAX (3 * FW_HOSTNAME_NAME_MAX + 4 + 1)

/* One table of the reasons a name or host is refused: code, name, text. */
#define FW_HOSTNAME_ERRORS(X)                                                                      \
	X(NAME, 1, "not 1-19 bytes of [a-z0-9-] without an edge hyphen or \"--\"")                 \
	X(ROUTING_NAME, 2, "not a DNS label (1-63 bytes of [a-z0-9-], no edge hyphen)")            \
	X(DOMAIN, 3, "not a domain of DNS labels [a-z0-9-] up to 253 bytes")                       \
	X(WILDCARD, 4, "not a wildcard name *.DOMAIN")                                             \
	X(DOMAINS_FULL, 5, "more than 16 base domains")                                            \
	X(NO_DOMAIN, 6, "host is under none of the base domains")                                  \
	X(NOT_ONE_LABEL, 7, "more than one label before the base domain")                          \
	X(NO_SEPARATOR, 8, "label holds no \"--\"")                                                \
	X(BAD_PART, 9, "a part is empty, holds \"--\" or is not a name")                           \
	X(HOST, 10, "host is empty, too long or holds a character of no host name")                \
	X(HASHED, 11, "a hashed label: only the gateway's index knows its target")

enum fw_hostname_err {
#define FW_HOSTNAME_ENUM(name, num, text) FW_HOSTNAME_E_##name = num,
	FW_HOSTNAME_ERRORS(FW_HOSTNAME_ENUM)
#undef FW_HOSTNAME_ENUM
		FW_HOSTNAME_E_MAX
};

/* A service: NUL-terminated names, service "" when unnamed. */
struct fw_hostname_target {
	char workspace[FW_HOSTNAME_NAME_MAX + 1];
	char sandbox[FW_HOSTNAME_NAME_MAX + 1];
	char service[FW_HOSTNAME_NAME_MAX + 1];
};

/* Base domains in the order given, lowercase, without duplicates. */
struct fw_hostname_domains {
	unsigned int count;
	struct {
		char name[FW_HOSTNAME_DOMAIN_MAX + 1];
		size_t len;
	} d[FW_HOSTNAME_DOMAINS_MAX];
};

enum fw_hostname_kind {
	FW_HOSTNAME_READABLE = 1,
	FW_HOSTNAME_HASHED = 2,
};

struct fw_hostname_parsed {
	enum fw_hostname_kind kind;
	unsigned int domain;		       /* index of the base domain that decided */
	struct fw_hostname_target target;      /* READABLE */
	char label[FW_HOSTNAME_LABEL_LEN + 1]; /* HASHED */
};

/* text of a refusal (code positive or negative) */
const char *fw_hostname_strerror(int code);

/* A workspace, sandbox or service name (service may not be empty here). */
int fw_hostname_name_ok(const char *s, size_t len);
/* A gateway's routing name. */
int fw_hostname_routing_name_ok(const char *s, size_t len);
/* Fills t from three names (service NULL or "" = unnamed), checked. */
int fw_hostname_target_set(struct fw_hostname_target *t, const char *workspace, const char *sandbox,
			   const char *service);

/* Adds a domain ("*.x" and "x" both give x), lowercased; a duplicate is
 * skipped and returns 0. */
int fw_hostname_domains_add(struct fw_hostname_domains *d, const char *s, size_t len);
/* Adds the base domain of a TLS name, which must be a wildcard "*.x". */
int fw_hostname_domains_add_wildcard(struct fw_hostname_domains *d, const char *s, size_t len);

/* Writes workspace--sandbox[--service] into out; returns its length. */
int fw_hostname_readable(const struct fw_hostname_target *t, char *out, size_t outlen);
/* The 16-character label of t under a routing name; out holds 17 bytes. */
int fw_hostname_hash(const char *routing_name, size_t routing_len,
		     const struct fw_hostname_target *t, char out[FW_HOSTNAME_LABEL_LEN + 1]);
/* 1 when s is 16 characters of [a-z2-7], the shape of a hashed label */
int fw_hostname_is_hash_label(const char *s, size_t len);

/* The host a request names: Host when it has one, else the HTTP/2
 * :authority (NULL when absent). */
const char *fw_hostname_request_host(const char *host, size_t host_len, const char *authority,
				     size_t authority_len, size_t *len);
/* Parses a host (a ":port" is dropped, letters compared without case):
 * the first base domain whose ".domain" suffix matches decides. With
 * hashed set (the gateway has a routing name), a label shaped like a hash
 * is HASHED; otherwise the label must be a readable one. */
int fw_hostname_parse(const struct fw_hostname_domains *d, int hashed, const char *host, size_t len,
		      struct fw_hostname_parsed *out);

#endif /* FW_HOSTNAME_H */
