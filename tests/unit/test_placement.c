// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Placement of a bare env name: a table of record sets, each with the step
 * that must decide and the member it must pick; each tie-break and the
 * TTL; then the record text codec. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "gateway/placement.h"

#define NOW 1000000
#define NS  "team-a"
#define ENV "python"

/* one record: cluster, pool, idle, autoscale, headroom, age in seconds */
static struct fw_member rec(const char *cluster, const char *pool, unsigned idle, int autoscale,
			    int headroom, int age)
{
	struct fw_member m;

	memset(&m, 0, sizeof(m));
	snprintf(m.cluster, sizeof(m.cluster), "%s", cluster);
	snprintf(m.ns, sizeof(m.ns), "%s", NS);
	snprintf(m.env, sizeof(m.env), "%s", ENV);
	snprintf(m.pool, sizeof(m.pool), "%s", pool);
	m.idle = idle;
	m.autoscale = (uint8_t)autoscale;
	m.headroom = headroom;
	m.expires = NOW - age + FW_MEMBER_TTL;
	return m;
}

#define U    FW_MEMBER_UNBOUNDED
#define MAXR 6

struct place_case {
	const char *what;
	struct fw_member recs[MAXR];
	size_t n;
	enum fw_place_kind kind;
	int step;
	const char *target; /* "cluster::pool" or NULL */
};

Test(placement, steps_and_tie_breaks)
{
	const struct place_case cases[] = {
		{"1: local idle wins over a foreign member with more idle",
		 {rec("here", "p", 1, 0, 0, 0), rec("b", "p", 9, 1, U, 0)},
		 2,
		 FW_PLACE_LOCAL,
		 1,
		 NULL},
		{"1: local idle summed over pools",
		 {rec("here", "p1", 0, 0, 0, 0), rec("here", "p2", 2, 0, 0, 0)},
		 2,
		 FW_PLACE_LOCAL,
		 1,
		 NULL},
		{"2: no local idle, a foreign member with idle: forward as cluster::pool",
		 {rec("here", "p", 0, 1, U, 0), rec("b", "py-small", 1, 0, 0, 0)},
		 2,
		 FW_PLACE_FORWARD,
		 2,
		 "b::py-small"},
		{"2: idle beats local growth and foreign growth",
		 {rec("here", "p", 0, 1, U, 0), rec("c", "p", 0, 1, U, 0),
		  rec("b", "p", 1, 0, 0, 0)},
		 3,
		 FW_PLACE_FORWARD,
		 2,
		 "b::p"},
		{"3: nobody idle, local can grow: local",
		 {rec("here", "p", 0, 1, 3, 0), rec("b", "p", 0, 1, U, 0)},
		 2,
		 FW_PLACE_LOCAL,
		 3,
		 NULL},
		{"4: only a foreign member can grow: forward there",
		 {rec("here", "p", 0, 1, 0, 0), rec("b", "gpu", 0, 1, 2, 0)},
		 2,
		 FW_PLACE_FORWARD,
		 4,
		 "b::gpu"},
		{"4: local autoscale without headroom does not grow",
		 {rec("here", "p", 0, 1, 0, 0), rec("b", "p", 0, 1, 1, 0)},
		 2,
		 FW_PLACE_FORWARD,
		 4,
		 "b::p"},
		{"5: nothing anywhere: park",
		 {rec("here", "p", 0, 0, 5, 0), rec("b", "p", 0, 0, U, 0)},
		 2,
		 FW_PLACE_PARK,
		 5,
		 NULL},
		{"5: a foreign member that can neither serve nor grow does not count",
		 {rec("b", "p", 0, 1, 0, 0)},
		 1,
		 FW_PLACE_PARK,
		 5,
		 NULL},
		{"5: only foreign records, all spent: park, not not-found",
		 {rec("b", "p", 0, 0, 0, 0)},
		 1,
		 FW_PLACE_PARK,
		 5,
		 NULL},
		{"2: more idle wins",
		 {rec("a", "p", 1, 0, 0, 0), rec("b", "p", 3, 0, 0, 0), rec("c", "p", 2, 0, 0, 0)},
		 3,
		 FW_PLACE_FORWARD,
		 2,
		 "b::p"},
		{"2: the idle tier first: idle 1 beats unbounded growth",
		 {rec("a", "p", 0, 1, U, 0), rec("z", "p", 1, 0, 0, 0)},
		 2,
		 FW_PLACE_FORWARD,
		 2,
		 "z::p"},
		{"2: equal idle: the lower cluster id",
		 {rec("c", "p", 2, 0, 0, 0), rec("b", "p", 2, 0, 0, 0)},
		 2,
		 FW_PLACE_FORWARD,
		 2,
		 "b::p"},
		{"2: equal idle, same cluster: the lower pool name",
		 {rec("b", "small", 2, 0, 0, 0), rec("b", "large", 2, 0, 0, 0)},
		 2,
		 FW_PLACE_FORWARD,
		 2,
		 "b::large"},
		{"2: equal idle: headroom does not count in the idle tier",
		 {rec("c", "p", 2, 1, U, 0), rec("b", "p", 2, 0, 0, 0)},
		 2,
		 FW_PLACE_FORWARD,
		 2,
		 "b::p"},
		{"4: more headroom wins",
		 {rec("a", "p", 0, 1, 2, 0), rec("b", "p", 0, 1, 7, 0)},
		 2,
		 FW_PLACE_FORWARD,
		 4,
		 "b::p"},
		{"4: unbounded counts highest",
		 {rec("a", "p", 0, 1, 1000000, 0), rec("b", "p", 0, 1, U, 0)},
		 2,
		 FW_PLACE_FORWARD,
		 4,
		 "b::p"},
		{"4: equal headroom: the lower cluster id, then pool",
		 {rec("c", "a", 0, 1, 4, 0), rec("b", "z", 0, 1, 4, 0), rec("b", "m", 0, 1, 4, 0)},
		 3,
		 FW_PLACE_FORWARD,
		 4,
		 "b::m"},
		{"TTL: an expired foreign idle member stops counting",
		 {rec("here", "p", 0, 1, U, 0), rec("b", "p", 5, 0, 0, FW_MEMBER_TTL)},
		 2,
		 FW_PLACE_LOCAL,
		 3,
		 NULL},
		{"TTL: one second before expiry it still counts",
		 {rec("here", "p", 0, 1, U, 0), rec("b", "p", 5, 0, 0, FW_MEMBER_TTL - 1)},
		 2,
		 FW_PLACE_FORWARD,
		 2,
		 "b::p"},
		{"TTL: an expired local idle record stops counting",
		 {rec("here", "p", 4, 0, 0, FW_MEMBER_TTL + 5), rec("b", "p", 1, 0, 0, 0)},
		 2,
		 FW_PLACE_FORWARD,
		 2,
		 "b::p"},
	};
	struct fw_place pl;
	char got[FW_CLUSTER_ID_MAX + FW_CLUSTER_NAME_MAX + 3];
	size_t i;
	int rc;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		rc = fw_place("here", cases[i].recs, cases[i].n, NS, ENV, NOW, &pl);
		cr_expect_eq(rc, 0, "%s: rc %d", cases[i].what, rc);
		cr_expect_eq(pl.kind, cases[i].kind, "%s: kind %d", cases[i].what, pl.kind);
		cr_expect_eq(pl.step, cases[i].step, "%s: step %d", cases[i].what, pl.step);
		if (cases[i].target) {
			cr_assert(pl.target, "%s: no target", cases[i].what);
			snprintf(got, sizeof(got), "%s::%s", pl.target->cluster, pl.target->pool);
			cr_expect_str_eq(got, cases[i].target, "%s: target %s", cases[i].what, got);
		} else {
			cr_expect_null(pl.target, "%s: a target", cases[i].what);
		}
	}
}

Test(placement, keyed_by_namespace_and_env)
{
	struct fw_member r[3];
	struct fw_place pl;

	r[0] = rec("here", "p", 0, 0, 0, 0);
	/* idle, but for the same env in another namespace: not the same env */
	r[1] = rec("b", "p", 5, 0, 0, 0);
	snprintf(r[1].ns, sizeof(r[1].ns), "team-b");
	/* and another env in the same namespace */
	r[2] = rec("c", "p", 5, 0, 0, 0);
	snprintf(r[2].env, sizeof(r[2].env), "node");
	cr_expect_eq(fw_place("here", r, 3, NS, ENV, NOW, &pl), 0);
	cr_expect_eq(pl.step, 5);
	cr_expect_eq(fw_place("here", r, 3, "team-b", ENV, NOW, &pl), 0);
	cr_expect_eq(pl.step, 2);
	cr_expect_str_eq(pl.target->cluster, "b");
}

Test(placement, unknown_env_is_not_found)
{
	struct fw_member r[1];
	struct fw_place pl;

	r[0] = rec("b", "p", 5, 0, 0, 0);
	cr_expect_eq(fw_place("here", r, 1, NS, "ruby", NOW, &pl), -ENOENT);
	cr_expect_eq(fw_place("here", NULL, 0, NS, ENV, NOW, &pl), -ENOENT);
	/* every record of it expired: as if it never existed */
	r[0] = rec("b", "p", 5, 0, 0, FW_MEMBER_TTL);
	cr_expect_eq(fw_place("here", r, 1, NS, ENV, NOW, &pl), -ENOENT);
}

Test(placement, record_codec)
{
	static const char text[] =
		"cluster=east&namespace=team-a&env=python&pool=py.small&idle=3&autoscale=1"
		"&headroom=-1";
	struct fw_member m;
	char out[FW_MEMBER_TEXT_MAX];

	cr_assert_eq(fw_member_parse(text, strlen(text), &m), 0);
	cr_expect_str_eq(m.cluster, "east");
	cr_expect_str_eq(m.ns, "team-a");
	cr_expect_str_eq(m.env, "python");
	cr_expect_str_eq(m.pool, "py.small");
	cr_expect_eq(m.idle, 3);
	cr_expect_eq(m.autoscale, 1);
	cr_expect_eq(m.headroom, FW_MEMBER_UNBOUNDED);
	cr_expect_eq(fw_member_format(&m, out, sizeof(out)), (int)strlen(text));
	cr_expect_str_eq(out, text);
	cr_expect_eq(fw_member_format(&m, out, 10), -1);

	/* defaults, any order, a trailing newline */
	cr_assert_eq(fw_member_parse("idle=0&pool=p&env=e&namespace=n&cluster=c\r\n", 43, &m), 0);
	cr_expect_eq(m.autoscale, 0);
	cr_expect_eq(m.headroom, 0);
}

Test(placement, record_refusals)
{
	static const struct {
		const char *in;
		int rc;
	} cases[] = {
		{"", -FW_MEMBER_E_MISSING},
		{"cluster=c&namespace=n&env=e&pool=p", -FW_MEMBER_E_MISSING},
		{"cluster=c&namespace=n&env=e&idle=1", -FW_MEMBER_E_MISSING},
		{"cluster=c&namespace=n&env=e&pool=p&idle=1&", -FW_MEMBER_E_SYNTAX},
		{"cluster=c&&namespace=n", -FW_MEMBER_E_SYNTAX},
		{"cluster", -FW_MEMBER_E_SYNTAX},
		{"=c", -FW_MEMBER_E_SYNTAX},
		{"cluster=c&cluster=d", -FW_MEMBER_E_DUPLICATE},
		{"cluster=c&zone=z", -FW_MEMBER_E_UNKNOWN_KEY},
		{"Cluster=c", -FW_MEMBER_E_UNKNOWN_KEY},
		{"cluster=a.b", -FW_MEMBER_E_CLUSTER},
		{"cluster=", -FW_MEMBER_E_CLUSTER},
		{"namespace=a%20b", -FW_MEMBER_E_NAME},
		{"env=", -FW_MEMBER_E_NAME},
		{"pool=a/b", -FW_MEMBER_E_NAME},
		{"idle=-1", -FW_MEMBER_E_COUNT},
		{"idle=01", -FW_MEMBER_E_COUNT},
		{"idle=1000001", -FW_MEMBER_E_COUNT},
		{"idle=99999999999999999999", -FW_MEMBER_E_COUNT},
		{"idle=+1", -FW_MEMBER_E_COUNT},
		{"headroom=-2", -FW_MEMBER_E_COUNT},
		{"autoscale=yes", -FW_MEMBER_E_FLAG},
		{"autoscale=", -FW_MEMBER_E_FLAG},
	};
	struct fw_member m;
	char big[FW_MEMBER_TEXT_MAX + 1];
	size_t i;
	int rc;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		rc = fw_member_parse(cases[i].in, strlen(cases[i].in), &m);
		cr_expect_eq(rc, cases[i].rc, "'%s': %d (%s), want %d", cases[i].in, rc,
			     fw_member_strerror(rc), cases[i].rc);
	}
	memset(big, 'a', sizeof(big));
	cr_expect_eq(fw_member_parse(big, sizeof(big), &m), -FW_MEMBER_E_TOO_LONG);
}

Test(placement, rank_is_an_order)
{
	struct fw_member a = rec("a", "p", 2, 0, 0, 0), b = rec("b", "p", 2, 0, 0, 0);

	cr_expect_lt(fw_member_rank(&a, &b), 0);
	cr_expect_gt(fw_member_rank(&b, &a), 0);
	cr_expect_eq(fw_member_rank(&a, &a), 0);
	cr_expect(fw_member_live(&a, NOW));
	a.idle = 0;
	cr_expect(!fw_member_live(&a, NOW));
	a.autoscale = 1, a.headroom = U;
	cr_expect(fw_member_live(&a, NOW));
	cr_expect(!fw_member_live(&a, a.expires));
}

/* the answers of pipelined POSTs as a peer gateway's nginx writes them */
Test(placement, answers_scan)
{
	static const char two_ok[] = "HTTP/1.1 204 No Content\r\nServer: nginx\r\n\r\n"
				     "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n";
	static const char refused[] = "HTTP/1.1 204 No Content\r\n\r\n"
				      "HTTP/1.1 403 Forbidden\r\nContent-Length: 40\r\n\r\n"
				      "{\"error\":\"bad or missing token\"}\n"
				      "HTTP/1.1 413 Request Entity Too Large\r\n\r\n";
	static const char plain[] = "HTTP/1.0 200 OK\r\n\r\n{\"method\": \"POST\"}\n";
	struct fw_member_answers a;

	fw_member_answers_scan(two_ok, strlen(two_ok), &a);
	cr_expect_eq(a.ok, 2);
	cr_expect_null(a.bad);
	cr_expect_null(a.why);

	fw_member_answers_scan(refused, strlen(refused), &a);
	cr_expect_eq(a.ok, 1);
	cr_expect_eq(a.bad_len, strlen("403 Forbidden"));
	cr_expect(memcmp(a.bad, "403 Forbidden", a.bad_len) == 0);
	cr_expect_eq(a.why_len, strlen("{\"error\":\"bad or missing token\"}"));
	cr_expect(memcmp(a.why, "{\"error\":\"bad or missing token\"}", a.why_len) == 0);

	/* another body is no reason; a cut answer is no status */
	fw_member_answers_scan(plain, strlen(plain), &a);
	cr_expect_eq(a.ok, 0);
	cr_expect(a.bad && memcmp(a.bad, "200 OK", a.bad_len) == 0 && a.bad_len == 6);
	cr_expect_null(a.why);
	fw_member_answers_scan("HTTP/1.1 20", 11, &a);
	cr_expect_eq(a.ok, 0);
	cr_expect_null(a.bad);
	fw_member_answers_scan("", 0, &a);
	cr_expect_eq(a.ok, 0);
}
