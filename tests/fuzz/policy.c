// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* libFuzzer target: the policy model. Input is newline-separated records;
 * "action\ttarget" adds a rule, any other line is looked up as a query
 * name. Every accepted policy is compiled and its invariants checked: no
 * allow entry may sit inside a deny entry, and exactly one ::/0 entry.
 * The compiled set is then cut into a range table (the form the programs
 * search for sets of up to FW_RANGE_RULES entries), whose search must
 * find the longest prefix at both ends of every entry and just past
 * them. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/addr.h"
#include "datapath/ranges.h"
#include "policy/policy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* the longest entry of c[0..n) holding a, or -1 */
static int lpm(const struct fw_compiled *c, size_t n, const struct fw_ip *a)
{
	int best = -1;

	for (size_t i = 0; i < n; i++)
		if (fw_prefix_contains(&c[i].key.addr, c[i].key.prefixlen, a) &&
		    (best < 0 || c[i].key.prefixlen > c[best].key.prefixlen))
			best = (int)i;
	return best;
}

/* a plus d (+1 or -1), wrapping */
static struct fw_ip step(struct fw_ip a, int d)
{
	for (int i = 15; i >= 0; i--) {
		a.b[i] = (__u8)(a.b[i] + d);
		if ((d > 0 && a.b[i]) || (d < 0 && a.b[i] != 0xff))
			break;
	}
	return a;
}

static void check_ranges(const struct fw_compiled *c, size_t n)
{
	static struct fw_range_set t;
	int err = fw_range_build(&t, c, n, 0);

	if (n > FW_RANGE_RULES || err == -E2BIG)
		return; /* the trie's: too many entries or ranges */
	if (err)
		abort(); /* a compiled set is always a valid table */
	for (size_t i = 0; i < n; i++) {
		struct fw_ip lo, hi, mask, probe[4];

		fw_prefix_netmask(&mask, c[i].key.prefixlen);
		fw_ip_and(&lo, &c[i].key.addr, &mask);
		for (int b = 0; b < 16; b++)
			hi.b[b] = (__u8)(lo.b[b] | ~mask.b[b]);
		probe[0] = lo;
		probe[1] = hi;
		probe[2] = step(lo, -1);
		probe[3] = step(hi, +1);
		for (int k = 0; k < 4; k++)
			if (fw_range_find(&t, &probe[k]) != lpm(c, n, &probe[k]))
				abort();
	}
}

static void check_compiled(const struct fw_policy *p)
{
	struct fw_compiled *c;
	size_t n, roots = 0;

	if (fw_policy_compile(NULL, p, &c, &n))
		return;
	for (size_t i = 0; i < n; i++) {
		if (c[i].key.prefixlen == 0)
			roots++;
		if (c[i].key.prefixlen > 128)
			abort();
		for (size_t j = 0; j < n; j++) {
			if (i == j)
				continue;
			if (c[i].key.prefixlen == c[j].key.prefixlen &&
			    !memcmp(&c[i].key.addr, &c[j].key.addr, sizeof(c[i].key.addr)))
				abort(); /* duplicate LPM key */
			/* same family only: IPv6 rules never decide IPv4 */
			if (c[i].rule.action == FW_ACTION_ALLOW && !c[i].rule.is_default &&
			    c[j].rule.action == FW_ACTION_DENY && !c[j].rule.is_default &&
			    (c[j].key.prefixlen >= 96) == (c[i].key.prefixlen >= 96) &&
			    c[j].key.prefixlen <= c[i].key.prefixlen &&
			    fw_prefix_contains(&c[j].key.addr, c[j].key.prefixlen, &c[i].key.addr))
				abort(); /* allow under a deny */
		}
	}
	if (roots != 1)
		abort();
	check_ranges(c, n);
	(void)fw_compiled_hash(c, n);
	free(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf, *line, *save = NULL, err[256];
	struct fw_policy p, copy;
	__u8 action;

	buf = malloc(size + 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	buf[size] = '\0';
	fw_policy_init(&p);
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *tab = strchr(line, '\t');
		long ports[3];
		size_t nports = 0;

		if (!tab) {
			int r = fw_policy_match_domain(&p, line, &action);

			if (r >= (int)p.nrules || (r < 0 && action != p.default_action))
				abort();
			continue;
		}
		*tab = '\0';
		if (!strcmp(line, "default")) {
			fw_policy_set_default(&p, tab + 1, err, sizeof(err));
			continue;
		}
		/* a third field holds up to three port numbers */
		{
			char *ptab = strchr(tab + 1, '\t');

			if (ptab) {
				*ptab = '\0';
				for (char *s = ptab + 1; *s && nports < 3; nports++)
					ports[nports] = strtol(s, &s, 10), s += !!*s;
			}
		}
		fw_policy_add_rule(&p, line, tab + 1, nports ? ports : NULL, nports, err,
				   sizeof(err));
	}
	check_compiled(&p);
	if (fw_policy_copy(&copy, &p) == 0)
		fw_policy_free(&copy);
	fw_policy_free(&p);
	free(buf);
	return 0;
}
