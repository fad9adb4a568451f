/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* A subject's credential vault as the layer-7 proxy reads it: the blob
 * of include/fastwall/l7vault.h checked whole and indexed in place (the
 * index points into the caller's bytes, nothing is copied or allocated),
 * and the rule that picks the binding a request gets. Plain C for the
 * nginx module in egress/, the unit tests and the fuzz target. Functions
 * return 0 or a negative errno; a blob that does not decode injects
 * nothing. */
#ifndef FW_L7_VAULT_H
#define FW_L7_VAULT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "fastwall/l7vault.h"

/* One record of the blob. The strings are not NUL-terminated; the
 * lists are walked with fw_l7_vault_next(). */
struct fw_l7_binding {
	const uint8_t *rec; /* the record, its struct fw_l7_vault_rec first */
	uint32_t size;	    /* the record's length, its head included */
	uint32_t tail;	    /* bytes at the record's end this reader does not know */
	uint8_t auth;	    /* enum fw_l7_auth */
	uint8_t schemes;    /* FW_L7_SCHEME_*, as the record has it (0: https) */
	uint8_t nports, nhosts, nmethods, npaths;
	const uint8_t *ports; /* nports __u16, host order, unaligned */
	const char *name;     /* the binding's name (reports; no secret) */
	uint16_t name_len;
	const char *header; /* the header field name to set */
	uint16_t header_len;
	const char *value; /* the header's value: the secret */
	uint32_t value_len;
	const uint8_t *hosts, *methods, *paths; /* each list's first entry */
};

struct fw_l7_vault {
	unsigned int nbindings;
	struct fw_l7_binding *bindings; /* in the vault's order */
};

/* A request as the matcher sees it. host: normalised (lower case, no
 * port, no trailing dot). path: the decoded and normalised path, without
 * the query; raw_path (may be NULL): the same as the client sent it,
 * which a path rule must match too, so that dot segments or escapes
 * cannot carry a request past the rule that names another path. */
struct fw_l7_request {
	unsigned int scheme; /* FW_L7_SCHEME_HTTP or FW_L7_SCHEME_HTTPS */
	uint16_t port;	     /* the original destination port */
	const char *host;
	size_t host_len;
	const char *method;
	size_t method_len;
	const char *path;
	size_t path_len;
	const char *raw_path;
	size_t raw_path_len;
};

/* The binding count data's head announces: >= 0, or -EINVAL when data
 * is no vault of this version (too short, magic, version). The room
 * fw_l7_vault_decode() needs. */
int fw_l7_vault_count(const uint8_t *data, size_t len);

/* Decodes data[0..len) into v, with room bindings at v->bindings: 0, or
 * -EINVAL when the blob does not parse exactly (a length past its end,
 * trailing bytes, a count over FW_L7_VAULT_MAX_LIST, an unknown auth or
 * scheme, a header name that is no field name or one the proxy must not
 * set, a value with CR, LF or NUL, an empty list entry, a path not
 * starting with "/"), -ENOSPC when room is short. *why (may be NULL)
 * says what failed, never quoting a byte of the blob. v->bindings point
 * into data, which must outlive them. */
int fw_l7_vault_decode(const uint8_t *data, size_t len, struct fw_l7_vault *v, unsigned int room,
		       const char **why);

/* The entry at *at of a decoded list: its bytes, its length in *len;
 * *at moves to the next entry. Only for lists fw_l7_vault_decode()
 * checked, and at most their count of times. */
const char *fw_l7_vault_next(const uint8_t **at, size_t *len);

/* The i-th port of b (i < b->nports). */
uint16_t fw_l7_vault_port(const struct fw_l7_binding *b, unsigned int i);

/* Whether b applies to host (normalised) reached with scheme on port:
 * its hosts (exact, or "*.domain": any name strictly under domain; case
 * ignored), its schemes (0: https only) and its ports (none: any). */
bool fw_l7_binding_names(const struct fw_l7_binding *b, const char *host, size_t host_len,
			 unsigned int scheme, uint16_t port);

/* Whether b applies to r: fw_l7_binding_names() and its methods (none:
 * any; case ignored) and its paths (none: any; else equal to the path,
 * or its prefix when the rule ends in "*"). */
bool fw_l7_binding_matches(const struct fw_l7_binding *b, const struct fw_l7_request *r);

/* The first binding of v that r matches, in the vault's order, or NULL. */
const struct fw_l7_binding *fw_l7_vault_match(const struct fw_l7_vault *v,
					      const struct fw_l7_request *r);

/* Whether a binding of v names host for scheme on port. */
bool fw_l7_vault_names(const struct fw_l7_vault *v, const char *host, size_t host_len,
		       unsigned int scheme, uint16_t port);

#endif /* FW_L7_VAULT_H */
