/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Inside the configuration loader: the parse context, the YAML node
 * helpers (yaml.c) and the sections each file parses (policy.c,
 * subjects.c), plus config's own key tables (keys.c). Not for use outside
 * user/lib/config. Parsers return 0 or a negative errno with ctx->err set
 * to "file:line: message (value 'x')". */
#ifndef FW_CONFIG_PARSE_H
#define FW_CONFIG_PARSE_H

#include <yaml.h>

#include "common/cfgkeys.h"
#include "config/config.h"

#define CFG_MAX_BYTES (4u << 20)
#define CFG_MAX_DEPTH 32
/* far above any real file, far below what 4 MiB of "[1,1,1,..." would
 * make the document loader allocate */
#define CFG_MAX_NODES	 (1u << 20)
#define CFG_MAX_IFACES	 1024
#define CFG_ECHO_MAX	 64
#define CFG_SECTION_KEYS 32 /* keys one table may hold */

struct cfg_ctx {
	yaml_document_t doc;
	const char *name;
	char *err;
	size_t errlen;
	struct fw_cfg *cfg;
	/* where a warning is: whose policy is being read (NULL elsewhere),
	 * which of its egress rules (1-based, 0 for none) */
	const char *subject;
	size_t rule;
};

/* --- yaml.c --- */

const char *kind_name(const yaml_node_t *node);
int cfg_fail(struct cfg_ctx *ctx, const yaml_node_t *node, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int cfg_nomem(struct cfg_ctx *ctx, const yaml_node_t *node);
/* A warning at node's line into ctx->cfg->warnings (no error: the load
 * goes on; a warning that does not fit is counted as lost). */
void cfg_warn(struct cfg_ctx *ctx, const yaml_node_t *node, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
yaml_node_t *node_at(struct cfg_ctx *ctx, int idx);
/* An empty plain scalar, "~" or "null": the key is as good as absent. */
bool is_null(const yaml_node_t *node);
int cfg_scalar(struct cfg_ctx *ctx, const yaml_node_t *node, const char *what, const char **out);
int cfg_uint(struct cfg_ctx *ctx, const yaml_node_t *node, const char *what, unsigned long long min,
	     unsigned long long max, unsigned long long *out);
int cfg_list(struct cfg_ctx *ctx, const yaml_node_t *node, const char *what, bool scalar_ok,
	     size_t max, size_t *n);
yaml_node_t *list_item(struct cfg_ctx *ctx, yaml_node_t *node, size_t i);

struct cfg_key {
	const char *name;
	yaml_node_t *key;
	yaml_node_t *value;
};

/* The keys of a mapping: an unknown one is an error when strict, else a
 * warning naming it and the known key it looks like. */
int cfg_map(struct cfg_ctx *ctx, yaml_node_t *node, const char *what, struct cfg_key *keys,
	    size_t nkeys, bool strict);
yaml_node_t *key_value(const struct cfg_key *k);

/* One table's keys found in a mapping, and the struct they fill. */
struct cfg_bind {
	const struct fw_cfgtable *t;
	void *base;
	yaml_node_t *key[CFG_SECTION_KEYS]; /* as found, NULL when absent */
	yaml_node_t *value[CFG_SECTION_KEYS];
};

/* Sorts a mapping over the tables of b (every key must be in one of them,
 * once), then parses each scalar key that is not null into its field, in
 * file order. SECTION keys are left to the caller (cfg_sub). */
int cfg_section(struct cfg_ctx *ctx, yaml_node_t *node, const char *what, struct cfg_bind *b,
		size_t nb);
/* A SECTION key's value: NULL when absent or null; *present (if not NULL)
 * tells absent from null. */
yaml_node_t *cfg_sub(const struct cfg_bind *b, size_t nb, const char *key, bool *present);

int cfg_addr(struct cfg_ctx *ctx, const yaml_node_t *node, const char *what, struct fw_ip *ip,
	     enum fw_family *fam);
int cfg_prefix(struct cfg_ctx *ctx, const yaml_node_t *node, const char *what,
	       struct fw_prefix *pfx, enum fw_family *fam);
int cfg_ifname(struct cfg_ctx *ctx, const yaml_node_t *node, const char *what, bool glob_ok,
	       char **out);
int cfg_strv(struct cfg_ctx *ctx, yaml_node_t *node, const char *what, bool glob_ok, char ***out,
	     size_t *nout);

/* --- policy.c, subjects.c --- */

int parse_overlay(struct cfg_ctx *ctx, yaml_node_t *node);
int parse_policy(struct cfg_ctx *ctx, yaml_node_t *node, struct fw_policy *p);
int parse_subjects(struct cfg_ctx *ctx, yaml_node_t *node);

/* --- keys.c: the keys whose fields are struct fw_cfg's --- */

/* A cgroup path relative to another ("fastwall", "a/b"): no "." or ".."
 * component, letters, digits, '-', '_', '.'; a key table check. */
int fw_cfg_check_cgroup_path(const char *name, const char *s, unsigned long long v, char *msg,
			     size_t msglen);

extern const struct fw_cfgtable cfg_top_keys;	    /* "" */
extern const struct fw_cfgtable cfg_datapath_keys;  /* datapath */
extern const struct fw_cfgtable cfg_doh_keys;	    /* datapath.doh */
extern const struct fw_cfgtable cfg_events_keys;    /* datapath.events */
extern const struct fw_cfgtable cfg_actions_keys;   /* actions */
extern const struct fw_cfgtable cfg_processes_keys; /* processes */
extern const struct fw_cfgtable cfg_dns_keys;	    /* dns, besides the proxy's and learner's */
extern const struct fw_cfgtable cfg_metrics_keys;   /* metrics */
extern const struct fw_cfgtable cfg_monitor_keys;   /* monitor */
extern const struct fw_cfgtable cfg_audit_keys;	    /* audit */
extern const struct fw_cfgtable cfg_guard_keys;	    /* guard */
extern const struct fw_cfgtable cfg_bw_keys;	    /* bandwidth */
extern const struct fw_cfgtable cfg_l7_keys;	    /* l7 */
extern const struct fw_cfgtable cfg_l7_ca_keys;	    /* l7.ca */

#endif /* FW_CONFIG_PARSE_H */
