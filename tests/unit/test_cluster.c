// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Cross-cluster names: the reference grammar [cluster::]name[//image]
 * (image cut first, then the first "::", parts trimmed) and the sandbox id
 * split <cluster>.<uuid> by length from the end. */
#include <criterion/criterion.h>
#include <string.h>

#include "gateway/cluster.h"

#define UUID "0f8fad5b-d9cb-469f-a165-70867728950e"

struct ref_case {
	const char *in;
	int rc;
	const char *cluster, *name, *image; /* NULL: absent */
};

static void span_is(const struct fw_cluster_span *sp, const char *want, const char *what,
		    const char *in)
{
	if (!want) {
		cr_expect_eq(sp->len, 0, "%s: %s should be absent, got '%.*s'", in, what,
			     (int)sp->len, sp->p);
		return;
	}
	cr_expect(sp->len == strlen(want) && memcmp(sp->p, want, sp->len) == 0,
		  "%s: %s is '%.*s', want '%s'", in, what, (int)sp->len, sp->p, want);
}

Test(cluster, reference_table)
{
	static const struct ref_case cases[] = {
		/* the three shapes a user writes */
		{"python", 0, NULL, "python", NULL},
		{"east::python-small", 0, "east", "python-small", NULL},
		{"east::python//registry.example/py:3.12", 0, "east", "python",
		 "registry.example/py:3.12"},
		{"python//img", 0, NULL, "python", "img"},
		/* the image is cut first, so "::" and "//" inside it stay there */
		{"python//reg.example/a::b", 0, NULL, "python", "reg.example/a::b"},
		{"east::py//https://reg.example//x", 0, "east", "py", "https://reg.example//x"},
		/* then the first "::": the rest is the name */
		{"a::b::c", 0, "a", "b::c", NULL},
		/* each part trimmed */
		{"  east :: python  // img  ", 0, "east", "python", "img"},
		{"\tpython\t", 0, NULL, "python", NULL},
		/* one colon is no separator */
		{"east:python", 0, NULL, "east:python", NULL},
		/* refusals */
		{"", -FW_CLUSTER_E_NO_NAME, NULL, NULL, NULL},
		{"   ", -FW_CLUSTER_E_NO_NAME, NULL, NULL, NULL},
		{"east::", -FW_CLUSTER_E_NO_NAME, NULL, NULL, NULL},
		{"::python", -FW_CLUSTER_E_NO_CLUSTER, NULL, NULL, NULL},
		{" :: python", -FW_CLUSTER_E_NO_CLUSTER, NULL, NULL, NULL},
		{"python//", -FW_CLUSTER_E_NO_IMAGE, NULL, NULL, NULL},
		{"python// ", -FW_CLUSTER_E_NO_IMAGE, NULL, NULL, NULL},
		{"//img", -FW_CLUSTER_E_NO_NAME, NULL, NULL, NULL},
		{"ea st::python", -FW_CLUSTER_E_CLUSTER, NULL, NULL, NULL},
		{"east.1::python", -FW_CLUSTER_E_CLUSTER, NULL, NULL, NULL},
		{"py thon", -FW_CLUSTER_E_NAME, NULL, NULL, NULL},
		{"py\x01thon", -FW_CLUSTER_E_NAME, NULL, NULL, NULL},
		{"python//im g", -FW_CLUSTER_E_IMAGE, NULL, NULL, NULL},
		{"python//im\x7fg", -FW_CLUSTER_E_IMAGE, NULL, NULL, NULL},
	};
	struct fw_cluster_ref ref;
	size_t i;
	int rc;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		rc = fw_cluster_ref_parse(cases[i].in, strlen(cases[i].in), &ref);
		cr_expect_eq(rc, cases[i].rc, "'%s': rc %d (%s), want %d", cases[i].in, rc,
			     fw_cluster_strerror(rc), cases[i].rc);
		if (rc || cases[i].rc)
			continue;
		span_is(&ref.cluster, cases[i].cluster, "cluster", cases[i].in);
		span_is(&ref.name, cases[i].name, "name", cases[i].in);
		span_is(&ref.image, cases[i].image, "image", cases[i].in);
	}
}

Test(cluster, reference_bounds)
{
	char buf[FW_CLUSTER_REF_MAX + 2];
	struct fw_cluster_ref ref;

	memset(buf, 'a', sizeof(buf));
	cr_expect_eq(fw_cluster_ref_parse(buf, sizeof(buf), &ref), -FW_CLUSTER_E_TOO_LONG);
	cr_expect_eq(fw_cluster_ref_parse(buf, FW_CLUSTER_NAME_MAX, &ref), 0);
	cr_expect_eq(fw_cluster_ref_parse(buf, FW_CLUSTER_NAME_MAX + 1, &ref), -FW_CLUSTER_E_NAME);
	memcpy(buf, "c::", 3);
	cr_expect_eq(fw_cluster_ref_parse(buf, 3 + FW_CLUSTER_NAME_MAX, &ref), 0);
	/* a 64-byte cluster id is one too many */
	memset(buf, 'c', 64);
	memcpy(buf + 64, "::p", 3);
	cr_expect_eq(fw_cluster_ref_parse(buf, 67, &ref), -FW_CLUSTER_E_CLUSTER);
	cr_expect_eq(fw_cluster_ref_parse(buf + 1, 66, &ref), 0);
	cr_expect_eq(ref.cluster.len, 63);
	/* the parser reads only the bytes it is given: no NUL needed */
	cr_expect_eq(fw_cluster_ref_parse("east::pyX", 8, &ref), 0);
	cr_expect_eq(ref.name.len, 2);
}

struct id_case {
	const char *in;
	int has;
	const char *cluster, *uuid;
};

Test(cluster, sandbox_id_table)
{
	static const struct id_case cases[] = {
		{"east." UUID, 1, "east", UUID},
		/* split by length from the end: dots in the cluster part stay */
		{"us.east.1." UUID, 1, "us.east.1", UUID},
		{"a." UUID, 1, "a", UUID},
		/* an empty cluster part is a cluster part (that names no cluster) */
		{"." UUID, 1, "", UUID},
		/* a bare uuid, and shorter ids: local */
		{UUID, 0, NULL, UUID},
		{"sandbox-123", 0, NULL, "sandbox-123"},
		{"", 0, NULL, ""},
		/* 37 bytes without the dot in place: local */
		{"x" UUID, 0, NULL, "x" UUID},
		{"east-" UUID, 0, NULL, "east-" UUID},
		/* the dot is where the uuid starts, not just anywhere */
		{"east." UUID "x", 0, NULL, "east." UUID "x"},
	};
	struct fw_cluster_span c, u;
	size_t i;
	int has;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		has = fw_cluster_sandbox_split(cases[i].in, strlen(cases[i].in), &c, &u);
		cr_expect_eq(has, cases[i].has, "'%s': has %d", cases[i].in, has);
		if (cases[i].cluster)
			cr_expect(c.len == strlen(cases[i].cluster) &&
					  memcmp(c.p, cases[i].cluster, c.len) == 0,
				  "'%s': cluster '%.*s'", cases[i].in, (int)c.len, c.p);
		else
			cr_expect_eq(c.len, 0, "'%s': no cluster", cases[i].in);
		cr_expect(u.len == strlen(cases[i].uuid) && memcmp(u.p, cases[i].uuid, u.len) == 0,
			  "'%s': uuid '%.*s'", cases[i].in, (int)u.len, u.p);
	}
}

Test(cluster, cluster_ids)
{
	cr_expect(fw_cluster_id_ok("east-1_b", 8));
	cr_expect(!fw_cluster_id_ok("", 0));
	cr_expect(!fw_cluster_id_ok("a.b", 3));
	cr_expect(!fw_cluster_id_ok("a b", 3));
	cr_expect_str_eq(fw_cluster_strerror(-FW_CLUSTER_E_NO_IMAGE), "empty image after //");
	cr_expect_str_eq(fw_cluster_strerror(99), "unknown error");
}
