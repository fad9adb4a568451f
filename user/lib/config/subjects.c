// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The subjects list of fastwalld's file: each static subject's name,
 * addresses, binding, gateways, private networks, state and policy, and
 * the checks across subjects (unique names, addresses and MACs). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "common/addr.h"
#include "config/parse.h"

/* --- subjects ----------------------------------------------------------- */

enum {
	SK_NAME,
	SK_ADDRESSES,
	SK_INTERFACE,
	SK_MAC,
	SK_GATEWAY,
	SK_PRIVATE_CIDR,
	SK_STATE,
	SK_POLICY,
	SK_CGROUP,
	SK_KEEP_CAPS,
	SK_L7,
	SK_MAX,
};

/* the scalar keys of a subject, parsed as the key tables' */
static const struct fw_cfgkey subject_scalars[] = {
	{.key = "keep_caps",
	 .type = FW_CK_BOOL,
	 FW_CK_FIELD(struct fw_subject_spec, keep_caps),
	 .def = 0,
	 .doc = "with `cgroup`: its processes may hold the capabilities that leave a sandbox"},
};

static const struct fw_cfgtable subject_table = FW_CK_TABLE("subjects[]", subject_scalars);

/* "02:00:5e:10:00:01": six bytes of two hex digits, colon-separated */
static int parse_mac(const char *v, __u8 out[6])
{
	for (int i = 0; i < 6; i++) {
		unsigned int b = 0;

		for (int j = 0; j < 2; j++, v++) {
			char c = *v;

			if (c >= '0' && c <= '9')
				b = b * 16 + (unsigned int)(c - '0');
			else if (c >= 'a' && c <= 'f')
				b = b * 16 + (unsigned int)(c - 'a' + 10);
			else if (c >= 'A' && c <= 'F')
				b = b * 16 + (unsigned int)(c - 'A' + 10);
			else
				return -EINVAL;
		}
		out[i] = (__u8)b;
		if (*v != (i == 5 ? '\0' : ':'))
			return -EINVAL;
		if (i < 5)
			v++;
	}
	return 0;
}

static bool has_family(const struct fw_subject_spec *s, enum fw_family fam)
{
	for (size_t i = 0; i < s->naddrs; i++) {
		if (fw_addr_family(&s->addrs[i]) == fam)
			return true;
	}
	return false;
}

static const char *const fam_name[FW_FAM_MAX] = {"IPv4", "IPv6"};

static bool valid_name(const char *s)
{
	for (; *s; s++) {
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || strchr("._-", *s)))
			return false;
	}
	return true;
}

static int parse_subject(struct cfg_ctx *ctx, yaml_node_t *node, struct fw_subject_spec *s)
{
	struct cfg_key keys[SK_MAX] = {
		[SK_NAME] = {.name = "name"},
		[SK_ADDRESSES] = {.name = "addresses"},
		[SK_INTERFACE] = {.name = "interface"},
		[SK_MAC] = {.name = "mac"},
		[SK_GATEWAY] = {.name = "gateway"},
		[SK_PRIVATE_CIDR] = {.name = "private_cidr"},
		[SK_STATE] = {.name = "state"},
		[SK_POLICY] = {.name = "policy"},
		[SK_CGROUP] = {.name = "cgroup"},
		[SK_KEEP_CAPS] = {.name = "keep_caps"},
		[SK_L7] = {.name = "l7"},
	};
	enum fw_family fam;
	yaml_node_t *n;
	const char *v;
	size_t cnt;
	char *ifname;
	int err;

	if (node->type != YAML_MAPPING_NODE)
		return cfg_fail(ctx, node, "a subject must be a mapping, not a %s",
				kind_name(node));
	err = cfg_map(ctx, node, "subject", keys, SK_MAX, true);
	if (err)
		return err;

	if (!(n = key_value(&keys[SK_NAME])))
		return cfg_fail(ctx, node, "subject has no name");
	err = cfg_scalar(ctx, n, "name", &v);
	if (err)
		return err;
	if (!*v || strlen(v) >= sizeof(s->name) || !valid_name(v))
		return cfg_fail(ctx, n,
				"invalid subject name, use 1 to %zu letters, digits, '.', '_' "
				"or '-'",
				sizeof(s->name) - 1);
	snprintf(s->name, sizeof(s->name), "%s", v);

	if ((n = key_value(&keys[SK_CGROUP]))) {
		char msg[256];

		/* a process sandbox: its cgroup is what tells it apart */
		err = cfg_scalar(ctx, n, "cgroup", &v);
		if (err)
			return err;
		if (strlen(v) >= sizeof(s->cgroup) ||
		    fw_cfg_check_cgroup_path("cgroup", v, 0, msg, sizeof(msg)))
			return cfg_fail(ctx, n, "%s",
					strlen(v) >= sizeof(s->cgroup) ? "cgroup path too long"
								       : msg);
		for (int k = SK_ADDRESSES; k <= SK_PRIVATE_CIDR; k++)
			if (key_value(&keys[k]))
				return cfg_fail(ctx, key_value(&keys[k]),
						"subject \"%s\" has a cgroup: %s is not for it",
						s->name, keys[k].name);
		snprintf(s->cgroup, sizeof(s->cgroup), "%s", v);
		if ((n = key_value(&keys[SK_KEEP_CAPS]))) {
			err = cfg_scalar(ctx, n, "keep_caps", &v);
			if (err)
				return err;
			if (fw_ck_parse(&subject_table, &subject_scalars[0], v, s, msg,
					sizeof(msg)))
				return cfg_fail(ctx, n, "%s", msg);
		}
		goto state;
	}
	if ((n = key_value(&keys[SK_KEEP_CAPS])))
		return cfg_fail(ctx, n, "subject \"%s\": keep_caps is for a subject with a cgroup",
				s->name);
	if (!(n = key_value(&keys[SK_ADDRESSES])))
		return cfg_fail(ctx, node, "subject \"%s\" has no addresses", s->name);
	err = cfg_list(ctx, n, "addresses", true, FW_SUBJECT_MAX_ADDRS, &cnt);
	if (err)
		return err;
	if (!cnt)
		return cfg_fail(ctx, n, "subject \"%s\" has no addresses", s->name);
	for (size_t i = 0; i < cnt; i++) {
		err = cfg_addr(ctx, list_item(ctx, n, i), "address", &s->addrs[i], NULL);
		if (err)
			return err;
	}
	s->naddrs = cnt;

	if ((n = key_value(&keys[SK_INTERFACE]))) {
		err = cfg_ifname(ctx, n, "interface", false, &ifname);
		if (err)
			return err;
		snprintf(s->ifname, sizeof(s->ifname), "%s", ifname);
		free(ifname);
	}

	if ((n = key_value(&keys[SK_MAC]))) {
		err = cfg_scalar(ctx, n, "mac", &v);
		if (err)
			return err;
		if (!s->ifname[0])
			return cfg_fail(ctx, n, "mac needs the subject's interface");
		if (parse_mac(v, s->mac))
			return cfg_fail(ctx, n,
					"invalid MAC, expected six hex bytes like "
					"02:00:5e:10:00:01");
		if ((s->mac[0] & 1) || !memcmp(s->mac, "\0\0\0\0\0\0", 6))
			return cfg_fail(ctx, n, "mac must be a unicast, non-zero address");
		s->has_mac = true;
	}

	if ((n = key_value(&keys[SK_GATEWAY]))) {
		err = cfg_list(ctx, n, "gateways", true, FW_FAM_MAX, &cnt);
		if (err)
			return err;
		for (size_t i = 0; i < cnt; i++) {
			yaml_node_t *item = list_item(ctx, n, i);
			struct fw_ip ip;

			err = cfg_addr(ctx, item, "gateway", &ip, &fam);
			if (err)
				return err;
			if (s->has_gateway[fam])
				return cfg_fail(ctx, item, "more than one %s gateway",
						fam_name[fam]);
			if (!has_family(s, fam))
				return cfg_fail(ctx, item,
						"%s gateway but subject \"%s\" has no "
						"%s address",
						fam_name[fam], s->name, fam_name[fam]);
			for (size_t j = 0; j < s->naddrs; j++) {
				if (!memcmp(&s->addrs[j], &ip, sizeof(ip)))
					return cfg_fail(
						ctx, item,
						"gateway is one of the subject's addresses");
			}
			s->has_gateway[fam] = true;
			s->gateway[fam] = ip;
		}
	}

	if ((n = key_value(&keys[SK_PRIVATE_CIDR]))) {
		err = cfg_list(ctx, n, "private CIDRs", true, FW_FAM_MAX, &cnt);
		if (err)
			return err;
		for (size_t i = 0; i < cnt; i++) {
			yaml_node_t *item = list_item(ctx, n, i);
			struct fw_prefix pfx;

			err = cfg_prefix(ctx, item, "private_cidr", &pfx, &fam);
			if (err)
				return err;
			/* the data plane keeps one IPv4 and one IPv6 net */
			if (fam == FW_FAM_V4 ? pfx.plen <= FW_V4_PREFIX_BASE : pfx.plen == 0)
				return cfg_fail(ctx, item, "private_cidr covers everything");
			if (s->has_private[fam])
				return cfg_fail(ctx, item, "more than one %s private_cidr",
						fam_name[fam]);
			if (!has_family(s, fam))
				return cfg_fail(ctx, item,
						"%s private_cidr but subject \"%s\" has no %s "
						"address",
						fam_name[fam], s->name, fam_name[fam]);
			s->has_private[fam] = true;
			s->private_net[fam] = pfx;
		}
	}

state:
	s->state = FW_STATE_ACTIVE;
	if ((n = key_value(&keys[SK_STATE]))) {
		err = cfg_scalar(ctx, n, "state", &v);
		if (err)
			return err;
		if (!strcmp(v, "active"))
			s->state = FW_STATE_ACTIVE;
		else if (!strcmp(v, "denying"))
			s->state = FW_STATE_DENYING;
		else
			return cfg_fail(ctx, n, "invalid state, expected active or denying");
	}

	if ((n = key_value(&keys[SK_POLICY]))) {
		ctx->subject = s->name; /* for the warnings */
		err = parse_policy(ctx, n, &s->policy);
		ctx->subject = NULL;
		if (err)
			return err;
	}
	/* layer-7 pinning: the subject's own word over l7.default; the
	 * policy's fastwallL7 says the same thing, once is enough */
	if ((n = key_value(&keys[SK_L7]))) {
		char msg[128];
		__u8 l7;

		err = cfg_scalar(ctx, n, "l7", &v);
		if (err)
			return err;
		if (fw_policy_l7_parse(v, &l7, msg, sizeof(msg)))
			return cfg_fail(ctx, n, "subject \"%s\": %s", s->name, msg);
		if (s->policy.l7 != FW_POLICY_L7_DEFAULT && s->policy.l7 != l7)
			return cfg_fail(ctx, n,
					"subject \"%s\": l7 and its policy's fastwallL7 disagree",
					s->name);
		s->policy.l7 = l7;
	}
	return 0;
}

struct addr_ref {
	struct fw_ip ip;
	yaml_node_t *node;
	size_t subject;
	size_t order;
};

static int addr_ref_cmp(const void *a, const void *b)
{
	const struct addr_ref *x = a, *y = b;
	int c = memcmp(&x->ip, &y->ip, sizeof(x->ip));

	if (c)
		return c;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* Every address dispatches to exactly one subject, so none may repeat,
 * within a subject or across subjects. Sorting keeps this n log n for
 * thousands of subjects; the later occurrence in the file is reported. */
static int check_unique_addresses(struct cfg_ctx *ctx, yaml_node_t *list)
{
	struct fw_cfg *cfg = ctx->cfg;
	struct addr_ref *refs;
	size_t n = 0;
	int err = 0;

	for (size_t i = 0; i < cfg->nsubjects; i++)
		n += cfg->subjects[i].naddrs;
	if (n < 2)
		return 0;
	refs = calloc(n, sizeof(*refs));
	if (!refs)
		return cfg_nomem(ctx, list);
	n = 0;
	for (size_t i = 0; i < cfg->nsubjects; i++) {
		yaml_node_t *subj = list_item(ctx, list, i), *addrs = NULL;
		yaml_node_pair_t *pair;

		/* parse_subject already checked the shape, so this finds it */
		for (pair = subj->data.mapping.pairs.start; pair < subj->data.mapping.pairs.top;
		     pair++) {
			yaml_node_t *k = node_at(ctx, pair->key);

			if (!strcmp((const char *)k->data.scalar.value, "addresses"))
				addrs = node_at(ctx, pair->value);
		}
		for (size_t j = 0; j < cfg->subjects[i].naddrs; j++) {
			refs[n].ip = cfg->subjects[i].addrs[j];
			refs[n].node = list_item(ctx, addrs, j);
			refs[n].subject = i;
			refs[n].order = n;
			n++;
		}
	}
	qsort(refs, n, sizeof(*refs), addr_ref_cmp);
	for (size_t i = 1; i < n; i++) {
		const struct addr_ref *first = &refs[i - 1], *dup = &refs[i];

		if (memcmp(&first->ip, &dup->ip, sizeof(dup->ip)))
			continue;
		if (first->subject == dup->subject)
			err = cfg_fail(ctx, dup->node, "duplicate address in subject \"%s\"",
				       cfg->subjects[dup->subject].name);
		else
			err = cfg_fail(
				ctx, dup->node,
				"address of subject \"%s\" already belongs to subject \"%s\"",
				cfg->subjects[dup->subject].name,
				cfg->subjects[first->subject].name);
		break;
	}
	free(refs);
	return err;
}

int parse_subjects(struct cfg_ctx *ctx, yaml_node_t *node)
{
	struct fw_cfg *cfg = ctx->cfg;
	size_t n;
	int err;

	err = cfg_list(ctx, node, "subjects", false, FW_MAX_SUBJECTS - 1, &n);
	if (err || !n)
		return err;
	cfg->subjects = calloc(n, sizeof(*cfg->subjects));
	if (!cfg->subjects)
		return cfg_nomem(ctx, node);
	for (size_t i = 0; i < n; i++) {
		yaml_node_t *item = list_item(ctx, node, i);
		struct fw_subject_spec *s = &cfg->subjects[i];

		fw_policy_init(&s->policy);
		/* counted before parsing so a half-built policy is freed */
		cfg->nsubjects = i + 1;
		err = parse_subject(ctx, item, s);
		if (err)
			return err;
		/* linear: names are checked once per subject at load time */
		for (size_t j = 0; j < i; j++) {
			const struct fw_subject_spec *o = &cfg->subjects[j];

			if (!strcmp(o->name, s->name))
				return cfg_fail(ctx, item, "duplicate subject name \"%s\"",
						s->name);
			/* one MAC is one port's; one port has one MAC */
			if (s->has_mac && o->has_mac && !memcmp(o->mac, s->mac, 6) &&
			    strcmp(o->ifname, s->ifname))
				return cfg_fail(ctx, item,
						"subject \"%s\" has the mac of subject \"%s\" on "
						"another interface",
						s->name, o->name);
			if (s->has_mac && o->has_mac && !strcmp(o->ifname, s->ifname) &&
			    memcmp(o->mac, s->mac, 6))
				return cfg_fail(
					ctx, item,
					"subject \"%s\" gives interface %s another mac than "
					"subject \"%s\"",
					s->name, s->ifname, o->name);
		}
	}
	return check_unique_addresses(ctx, node);
}
