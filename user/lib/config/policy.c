// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The policy-shaped parts of fastwalld's file: the operator overlay and
 * each subject's egress policy (the reference format, as YAML). */
#include <errno.h>
#include <string.h>

#include "config/parse.h"
#include "fastwall/bandwidth.h"

/* --- policies ----------------------------------------------------------- */

/* Policy errors carry no line; the node they are about supplies it. */
static int cfg_policy_err(struct cfg_ctx *ctx, const yaml_node_t *node, int ret, const char *msg)
{
	if (ret == -ENOMEM)
		return cfg_nomem(ctx, node);
	cfg_fail(ctx, node, "%s", msg);
	return ret;
}

static int overlay_list(struct cfg_ctx *ctx, yaml_node_t *node, const char *action)
{
	char perr[FW_CFG_ERR_LEN];
	size_t n;
	int err;

	err = cfg_list(ctx, node, action, true, FW_POLICY_MAX_RULES, &n);
	if (err)
		return err;
	for (size_t i = 0; i < n; i++) {
		yaml_node_t *item = list_item(ctx, node, i);
		const char *target;

		err = cfg_scalar(ctx, item, "an overlay target", &target);
		if (err)
			return err;
		err = fw_policy_add_rule(&ctx->cfg->overlay, action, target, NULL, 0, perr,
					 sizeof(perr));
		if (err)
			return cfg_policy_err(ctx, item, err, perr);
	}
	return 0;
}

int parse_overlay(struct cfg_ctx *ctx, yaml_node_t *node)
{
	struct cfg_key keys[] = {{.name = "deny"}, {.name = "allow"}};
	yaml_node_t *n;
	int err;

	err = cfg_map(ctx, node, "overlay", keys, 2, true);
	if (err)
		return err;
	/* deny rules first whatever the key order, so a first-match reader
	 * (the DNS proxy) sees the operator's denials before its allowances */
	if ((n = key_value(&keys[0]))) {
		err = overlay_list(ctx, n, "deny");
		if (err)
			return err;
	}
	if ((n = key_value(&keys[1]))) {
		err = overlay_list(ctx, n, "allow");
		if (err)
			return err;
	}
	return 0;
}

static int parse_rule(struct cfg_ctx *ctx, yaml_node_t *node, struct fw_policy *p, size_t idx)
{
	struct cfg_key keys[] = {{.name = "action"}, {.name = "target"}, {.name = "ports"}};
	long ports[FW_POLICY_MAX_PORTS];
	char perr[FW_CFG_ERR_LEN];
	const char *action = "", *target;
	yaml_node_t *n, *bad;
	size_t nports = 0;
	int err;

	if (node->type != YAML_MAPPING_NODE)
		return cfg_fail(ctx, node, "an egress rule must be a mapping, not a %s",
				kind_name(node));
	ctx->rule = idx + 1; /* for the warnings */
	err = cfg_map(ctx, node, "an egress rule", keys, 3, false);
	ctx->rule = 0;
	if (err)
		return err;
	if ((n = key_value(&keys[0]))) {
		err = cfg_scalar(ctx, n, "action", &action);
		if (err)
			return err;
	}
	if (!keys[1].value)
		return cfg_fail(ctx, node, "egress rule has no target");
	err = cfg_scalar(ctx, keys[1].value, "target", &target);
	if (err)
		return err;
	if ((n = key_value(&keys[2]))) {
		err = cfg_list(ctx, n, "ports", false, FW_POLICY_MAX_PORTS, &nports);
		if (err)
			return err;
		for (size_t i = 0; i < nports; i++) {
			unsigned long long v;

			err = cfg_uint(ctx, list_item(ctx, n, i), "port", 1, 65535, &v);
			if (err)
				return err;
			ports[i] = (long)v;
		}
	}
	err = fw_policy_add_rule(p, action, target, nports ? ports : NULL, nports, perr,
				 sizeof(perr));
	if (err) {
		/* point at the part that was wrong */
		if (!strncmp(perr, "invalid action", 14))
			bad = keys[0].value;
		else if (strstr(perr, "port"))
			bad = keys[2].value;
		else
			bad = keys[1].value;
		return cfg_policy_err(ctx, bad ? bad : node, err, perr);
	}
	return 0;
}

/* fastwall's extension, as the policy JSON carries it: {rate, burst} in
 * bytes per second and bytes, or off. Ours alone: unknown keys fail. */
static int parse_bandwidth(struct cfg_ctx *ctx, yaml_node_t *node, struct fw_policy *p)
{
	struct cfg_key keys[] = {{.name = "rate"}, {.name = "burst"}};
	unsigned long long rate, burst = 0;
	char perr[FW_CFG_ERR_LEN];
	const char *s;
	int err;

	if (node->type == YAML_SCALAR_NODE) {
		err = cfg_scalar(ctx, node, "fastwallBandwidth", &s);
		if (err)
			return err;
		if (strcmp(s, "off") && strcmp(s, "false"))
			return cfg_fail(ctx, node,
					"fastwallBandwidth must be {rate: N, burst: N} or off");
		p->bw = FW_POLICY_BW_OFF;
		return 0;
	}
	err = cfg_map(ctx, node, "fastwallBandwidth", keys, 2, true);
	if (err)
		return err;
	if (!key_value(&keys[0]))
		return cfg_fail(ctx, node,
				"fastwallBandwidth: rate (bytes per second) is required");
	err = cfg_uint(ctx, key_value(&keys[0]), "fastwallBandwidth.rate", FW_BW_RATE_MIN,
		       FW_BW_RATE_MAX, &rate);
	if (!err && key_value(&keys[1]))
		err = cfg_uint(ctx, key_value(&keys[1]), "fastwallBandwidth.burst", FW_BW_BURST_MIN,
			       FW_BW_BURST_MAX, &burst);
	if (err)
		return err;
	if (fw_policy_bw_set(p, (long long)rate, key_value(&keys[1]) != NULL, (long long)burst,
			     perr, sizeof(perr)))
		return cfg_fail(ctx, node, "fastwallBandwidth: %s", perr);
	return 0;
}

int parse_policy(struct cfg_ctx *ctx, yaml_node_t *node, struct fw_policy *p)
{
	struct cfg_key keys[] = {{.name = "defaultAction"},
				 {.name = "egress"},
				 {.name = "fastwallL7"},
				 {.name = "fastwallBandwidth"}};
	char perr[FW_CFG_ERR_LEN];
	const char *s;
	yaml_node_t *n;
	size_t nrules;
	int err;

	/* unknown keys are ignored here (the format is the reference's),
	 * with a warning */
	err = cfg_map(ctx, node, "policy", keys, 4, false);
	if (err)
		return err;
	if ((n = key_value(&keys[0]))) {
		err = cfg_scalar(ctx, n, "defaultAction", &s);
		if (err)
			return err;
		err = fw_policy_set_default(p, s, perr, sizeof(perr));
		if (err)
			return cfg_policy_err(ctx, n, err, perr);
	}
	if ((n = key_value(&keys[2]))) {
		/* fastwall's extension, as the policy JSON carries it */
		err = cfg_scalar(ctx, n, "fastwallL7", &s);
		if (err)
			return err;
		if (fw_policy_l7_parse(s, &p->l7, perr, sizeof(perr)))
			return cfg_fail(ctx, n, "fastwallL7: %s", perr);
	}
	if ((n = key_value(&keys[3]))) {
		err = parse_bandwidth(ctx, n, p);
		if (err)
			return err;
	}
	if ((n = key_value(&keys[1]))) {
		err = cfg_list(ctx, n, "egress rules", false, FW_POLICY_MAX_RULES, &nrules);
		if (err)
			return err;
		for (size_t i = 0; i < nrules; i++) {
			err = parse_rule(ctx, list_item(ctx, n, i), p, i);
			if (err)
				return err;
		}
	}
	return 0;
}
