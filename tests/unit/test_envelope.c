// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The Sandbox Actions envelope: what a well-formed request yields, and for
 * every way a request can be wrong, the exact text after "invalid action
 * envelope: " that the Fastlet sees in its 400. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/addr.h"
#include "protocol/envelope.h"

#define API "\"apiVersion\":\"sandbox.fast.io/actions/v1\""
#define UID "\"sandbox\":{\"uid\":\"u-1\",\"name\":\"sandbox-a\",\"namespace\":\"tenant-a\"}"
#define REV                                                                                        \
	"\"revision\":{\"specGeneration\":4,\"runtimeInstanceId\":\"rt-1\",\"attachmentId\":"      \
	"\"sha256:att\",\"routeGeneration\":2}"
#define NET                                                                                        \
	"\"attachment\":{\"network\":{\"ip\":\"10.42.0.8\",\"gateway\":\"10.42.0.1\","             \
	"\"privateCidr\":\"10.42.0.0/24\",\"hostVeth\":\"veth0\"}}"
#define SET   "\"operation\":\"SET_BINDING\""
#define HOOK  "\"operation\":\"LIFECYCLE_HOOK\""
#define RM    "\"operation\":\"REMOVE_BINDING\""
#define BIND  "\"binding\":{\"input\":\"{}\"}"
#define READY "\"hook\":{\"name\":\"sandbox.data-plane-ready\",\"sequence\":2}"

static char reason[512];

static int parse(const char *body, struct fw_envelope *env)
{
	reason[0] = '\0';
	return fw_envelope_parse(body, body ? strlen(body) : 0, env, reason, sizeof(reason));
}

static void parse_ok(const char *body, struct fw_envelope *env)
{
	int ret = parse(body, env);

	cr_assert_eq(ret, 0, "%s: %d %s", body, ret, reason);
}

Test(envelope, set_binding_fields)
{
	struct fw_envelope env;
	char buf[FW_ADDR_STRLEN];

	parse_ok("{" API "," SET ",\"invocationId\":\"sha256:inv\"," UID "," REV "," NET
		 ",\"binding\":{\"input\":\"{\\\"defaultAction\\\":\\\"allow\\\"}\"}}",
		 &env);
	cr_assert_eq(env.op, FW_OP_SET_BINDING);
	cr_assert_str_eq(env.invocation_id, "sha256:inv");
	cr_assert_str_eq(env.uid, "u-1");
	cr_assert_str_eq(env.name, "sandbox-a");
	cr_assert_str_eq(env.ns, "tenant-a");
	cr_assert_eq(env.spec_generation, 4);
	cr_assert_eq(env.route_generation, 2);
	cr_assert_str_eq(env.runtime_instance_id, "rt-1");
	cr_assert_str_eq(env.attachment_id, "sha256:att");
	cr_assert(env.has_ip && env.has_gateway && env.has_private_cidr);
	cr_assert_str_eq(fw_addr_str(&env.ip, buf, sizeof(buf)), "10.42.0.8");
	cr_assert_eq(env.ip_family, FW_FAM_V4);
	cr_assert_str_eq(fw_addr_str(&env.gateway, buf, sizeof(buf)), "10.42.0.1");
	cr_assert_str_eq(
		fw_prefix_str(&env.private_cidr.net, env.private_cidr.plen, buf, sizeof(buf)),
		"10.42.0.0/24");
	cr_assert_str_eq(env.host_veth, "veth0");
	cr_assert(env.has_binding);
	cr_assert_not(env.input_null);
	cr_assert_str_eq(env.input, "{\"defaultAction\":\"allow\"}");
	cr_assert_eq(env.input_len, strlen(env.input));
	fw_envelope_free(&env);
	cr_assert_null(env.input);
	fw_envelope_free(&env); /* safe twice */
}

Test(envelope, ipv6_and_host_bits)
{
	struct fw_envelope env;
	char buf[FW_ADDR_STRLEN];

	parse_ok("{" API "," SET "," UID "," REV "," BIND
		 ",\"attachment\":{\"network\":{\"ip\":\"fd00::8\",\"gateway\":\"fd00::1\","
		 "\"privateCidr\":\"fd00::5/64\",\"hostVeth\":\"v6\"}}}",
		 &env);
	cr_assert_eq(env.ip_family, FW_FAM_V6);
	cr_assert_str_eq(fw_addr_str(&env.ip, buf, sizeof(buf)), "fd00::8");
	cr_assert_str_eq(
		fw_prefix_str(&env.private_cidr.net, env.private_cidr.plen, buf, sizeof(buf)),
		"fd00::/64");
	fw_envelope_free(&env);

	parse_ok("{" API "," SET "," UID "," REV "," BIND
		 ",\"attachment\":{\"network\":{\"ip\":\"10.42.0.8\","
		 "\"privateCidr\":\"10.42.0.77/24\",\"hostVeth\":\"v\"}}}",
		 &env);
	cr_assert_str_eq(
		fw_prefix_str(&env.private_cidr.net, env.private_cidr.plen, buf, sizeof(buf)),
		"10.42.0.0/24");
	cr_assert_not(env.has_gateway);
	fw_envelope_free(&env);
}

Test(envelope, input_null_needs_no_network)
{
	struct fw_envelope env;

	parse_ok("{" API "," SET "," UID "," REV ",\"binding\":{\"input\":null}}", &env);
	cr_assert(env.has_binding);
	cr_assert(env.input_null);
	cr_assert_null(env.input);
	cr_assert_not(env.has_ip);
	fw_envelope_free(&env);
}

/* "" and "null" are ordinary values, handed on as strings */
Test(envelope, input_empty_and_null_strings)
{
	struct fw_envelope env;

	parse_ok("{" API "," SET "," UID "," REV "," NET ",\"binding\":{\"input\":\"\"}}", &env);
	cr_assert_not(env.input_null);
	cr_assert_not_null(env.input);
	cr_assert_str_eq(env.input, "");
	cr_assert_eq(env.input_len, 0);
	fw_envelope_free(&env);

	parse_ok("{" API "," SET "," UID "," REV "," NET ",\"binding\":{\"input\":\"null\"}}",
		 &env);
	cr_assert_not(env.input_null);
	cr_assert_str_eq(env.input, "null");
	fw_envelope_free(&env);
}

Test(envelope, hooks_with_and_without_attachment)
{
	struct fw_envelope env;

	parse_ok("{" API "," HOOK "," UID "," REV "," NET "," READY "}", &env);
	cr_assert_eq(env.op, FW_OP_LIFECYCLE_HOOK);
	cr_assert_eq(env.hook, FW_HOOK_DATA_PLANE_READY);
	cr_assert_eq(env.hook_sequence, 2);
	cr_assert(env.has_ip);
	cr_assert_null(env.input);
	fw_envelope_free(&env);

	parse_ok("{" API "," HOOK "," UID "," REV ",\"hook\":{\"name\":\"sandbox.runtime-ready\"}}",
		 &env);
	cr_assert_eq(env.hook, FW_HOOK_RUNTIME_READY);
	cr_assert_eq(env.hook_sequence, 0);
	cr_assert_not(env.has_ip);
	cr_assert_str_eq(env.host_veth, "");
	fw_envelope_free(&env);

	/* a binding sent along with a hook is not looked at */
	parse_ok("{" API "," HOOK "," UID "," REV "," READY ",\"binding\":{\"input\":42}}", &env);
	cr_assert_null(env.input);
	fw_envelope_free(&env);
}

Test(envelope, removal_with_and_without_attachment)
{
	struct fw_envelope env;

	parse_ok("{" API "," RM "," UID "," REV "," NET "}", &env);
	cr_assert_eq(env.op, FW_OP_REMOVE_BINDING);
	cr_assert(env.has_ip);
	fw_envelope_free(&env);

	parse_ok("{" API "," RM "," UID "," REV "}", &env);
	cr_assert_not(env.has_ip || env.has_gateway || env.has_private_cidr);
	fw_envelope_free(&env);

	/* empty strings mean absent */
	parse_ok("{" API "," RM "," UID "," REV
		 ",\"attachment\":{\"network\":{\"ip\":\"\",\"gateway\":\"\",\"privateCidr\":\"\","
		 "\"hostVeth\":\"\"}}}",
		 &env);
	cr_assert_not(env.has_ip || env.has_gateway || env.has_private_cidr);
	fw_envelope_free(&env);

	parse_ok("{" API "," RM "," UID "," REV ",\"attachment\":null}", &env);
	fw_envelope_free(&env);
}

Test(envelope, unknown_fields_and_duplicates)
{
	struct fw_envelope env;

	parse_ok("{\"extra\":[1,{\"a\":null}]," API "," SET "," UID "," REV "," NET
		 ",\"binding\":{\"input\":\"{}\",\"format\":\"v2\"},"
		 "\"sandbox\":{\"uid\":\"u-2\",\"labels\":{\"x\":\"y\"}},\"z\":true}",
		 &env);
	/* the last of duplicate keys wins, as with Go's decoder */
	cr_assert_str_eq(env.uid, "u-2");
	cr_assert_str_eq(env.name, "");
	fw_envelope_free(&env);
}

Test(envelope, generations_at_limits)
{
	struct fw_envelope env;

	parse_ok("{" API "," RM "," UID ",\"revision\":{\"specGeneration\":9223372036854775807,"
		 "\"routeGeneration\":0,\"runtimeInstanceId\":\"r\",\"attachmentId\":\"a\"}}",
		 &env);
	cr_assert_eq(env.spec_generation, 9223372036854775807ULL);
	cr_assert_eq(env.route_generation, 0);
	fw_envelope_free(&env);

	parse_ok("{" API "," RM "," UID ",\"revision\":{\"specGeneration\":null,"
		 "\"runtimeInstanceId\":\"r\",\"attachmentId\":\"a\"}}",
		 &env);
	cr_assert_eq(env.spec_generation, 0);
	fw_envelope_free(&env);
}

struct bad_case {
	const char *desc;
	const char *body;
	const char *reason; /* exact, or a prefix when ending in '*' */
};

static const struct bad_case bad_cases[] = {
	/* 1: apiVersion */
	{"no apiVersion", "{" SET "," UID "," REV "," NET "," BIND "}",
	 "unsupported apiVersion \"\""},
	{"wrong apiVersion",
	 "{\"apiVersion\":\"sandbox.fast.io/actions/v2\"," SET "," UID "," REV "," NET "," BIND "}",
	 "unsupported apiVersion \"sandbox.fast.io/actions/v2\""},
	{"apiVersion case differs",
	 "{\"apiVersion\":\"Sandbox.fast.io/actions/v1\"," SET "," UID "," REV "," NET "," BIND "}",
	 "unsupported apiVersion \"Sandbox.fast.io/actions/v1\""},
	{"apiVersion with a quote echoed safely",
	 "{\"apiVersion\":\"a\\\"b\\n\"," SET "," UID "," REV "," NET "," BIND "}",
	 "unsupported apiVersion \"a?b?\""},
	/* order: apiVersion before everything else */
	{"bad apiVersion and no uid", "{\"apiVersion\":\"x\"," SET "," REV "," NET "," BIND "}",
	 "unsupported apiVersion \"x\""},
	{"bad apiVersion and unknown operation",
	 "{\"apiVersion\":\"x\",\"operation\":\"NOPE\"," UID "," REV "}",
	 "unsupported apiVersion \"x\""},
	/* 2: sandbox.uid */
	{"no sandbox", "{" API "," SET "," REV "," NET "," BIND "}", "sandbox.uid is required"},
	{"empty uid", "{" API "," SET ",\"sandbox\":{\"uid\":\"\"}," REV "," NET "," BIND "}",
	 "sandbox.uid is required"},
	{"null uid", "{" API "," SET ",\"sandbox\":{\"uid\":null}," REV "," NET "," BIND "}",
	 "sandbox.uid is required"},
	{"no uid and unknown operation", "{" API ",\"operation\":\"X\"," REV "}",
	 "sandbox.uid is required"},
	{"no uid and no revision", "{" API "," RM "}", "sandbox.uid is required"},
	/* 3: operation */
	{"no operation", "{" API "," UID "," REV "}", "unknown operation \"\""},
	{"lowercase operation", "{" API ",\"operation\":\"set_binding\"," UID "," REV "}",
	 "unknown operation \"set_binding\""},
	{"unknown operation before revision", "{" API ",\"operation\":\"RESET\"," UID "}",
	 "unknown operation \"RESET\""},
	/* 3: SET_BINDING */
	{"no binding", "{" API "," SET "," UID "," REV "," NET "}", "binding is required"},
	{"null binding", "{" API "," SET "," UID "," REV "," NET ",\"binding\":null}",
	 "binding is required"},
	{"no binding.input", "{" API "," SET "," UID "," REV "," NET ",\"binding\":{}}",
	 "binding.input is required"},
	{"binding.input number",
	 "{" API "," SET "," UID "," REV "," NET ",\"binding\":{\"input\":1}}",
	 "binding.input must be a string or null"},
	{"binding.input object",
	 "{" API "," SET "," UID "," REV "," NET ",\"binding\":{\"input\":{\"egress\":[]}}}",
	 "binding.input must be a string or null"},
	{"binding.input array",
	 "{" API "," SET "," UID "," REV "," NET ",\"binding\":{\"input\":[]}}",
	 "binding.input must be a string or null"},
	{"binding.input bool",
	 "{" API "," SET "," UID "," REV "," NET ",\"binding\":{\"input\":false}}",
	 "binding.input must be a string or null"},
	{"no attachment", "{" API "," SET "," UID "," REV "," BIND "}",
	 "attachment.network.ip is required"},
	{"empty network",
	 "{" API "," SET "," UID "," REV "," BIND ",\"attachment\":{\"network\":{}}}",
	 "attachment.network.ip is required"},
	{"empty ip",
	 "{" API "," SET "," UID "," REV "," BIND
	 ",\"attachment\":{\"network\":{\"ip\":\"\",\"hostVeth\":\"v\"}}}",
	 "attachment.network.ip is required"},
	{"bad ip",
	 "{" API "," SET "," UID "," REV "," BIND
	 ",\"attachment\":{\"network\":{\"ip\":\"10.42.0.300\",\"hostVeth\":\"v\"}}}",
	 "invalid attachment.network.ip \"10.42.0.300\""},
	{"ip with a prefix",
	 "{" API "," SET "," UID "," REV "," BIND
	 ",\"attachment\":{\"network\":{\"ip\":\"10.42.0.8/24\",\"hostVeth\":\"v\"}}}",
	 "invalid attachment.network.ip \"10.42.0.8/24\""},
	{"ip with spaces",
	 "{" API "," SET "," UID "," REV "," BIND
	 ",\"attachment\":{\"network\":{\"ip\":\" 10.42.0.8\",\"hostVeth\":\"v\"}}}",
	 "invalid attachment.network.ip \" 10.42.0.8\""},
	{"no hostVeth",
	 "{" API "," SET "," UID "," REV "," BIND
	 ",\"attachment\":{\"network\":{\"ip\":\"10.0.0.1\"}}}",
	 "attachment.network.hostVeth is required"},
	{"binding checked before revision", "{" API "," SET "," UID "," NET "}",
	 "binding is required"},
	{"network checked before revision", "{" API "," SET "," UID "," BIND "}",
	 "attachment.network.ip is required"},
	/* 3: LIFECYCLE_HOOK */
	{"no hook", "{" API "," HOOK "," UID "," REV "}", "hook is required"},
	{"null hook", "{" API "," HOOK "," UID "," REV ",\"hook\":null}", "hook is required"},
	{"hook without name", "{" API "," HOOK "," UID "," REV ",\"hook\":{\"sequence\":1}}",
	 "hook.name is required"},
	{"unknown hook", "{" API "," HOOK "," UID "," REV ",\"hook\":{\"name\":\"sandbox.ready\"}}",
	 "unknown hook \"sandbox.ready\""},
	{"hook checked before revision", "{" API "," HOOK "," UID "}", "hook is required"},
	/* 4: revision */
	{"no revision", "{" API "," SET "," UID "," NET "," BIND "}",
	 "revision.runtimeInstanceId is required"},
	{"no runtimeInstanceId", "{" API "," RM "," UID ",\"revision\":{\"attachmentId\":\"a\"}}",
	 "revision.runtimeInstanceId is required"},
	{"empty runtimeInstanceId",
	 "{" API "," HOOK "," UID "," READY
	 ",\"revision\":{\"runtimeInstanceId\":\"\",\"attachmentId\":\"a\"}}",
	 "revision.runtimeInstanceId is required"},
	{"no attachmentId", "{" API "," RM "," UID ",\"revision\":{\"runtimeInstanceId\":\"r\"}}",
	 "revision.attachmentId is required"},
	{"no attachmentId on SET_BINDING with null input",
	 "{" API "," SET "," UID
	 ",\"binding\":{\"input\":null},\"revision\":{\"runtimeInstanceId\":"
	 "\"r\"}}",
	 "revision.attachmentId is required"},
	/* then the remaining addresses */
	{"bad gateway",
	 "{" API "," SET "," UID "," REV "," BIND
	 ",\"attachment\":{\"network\":{\"ip\":\"10.0.0.2\",\"gateway\":\"10.0.0\",\"hostVeth\":"
	 "\"v\"}}}",
	 "invalid attachment.network.gateway \"10.0.0\""},
	{"gateway given as a CIDR",
	 "{" API "," RM "," UID "," REV
	 ",\"attachment\":{\"network\":{\"gateway\":\"10.0.0.1/24\"}}}",
	 "invalid attachment.network.gateway \"10.0.0.1/24\""},
	{"bad privateCidr",
	 "{" API "," SET "," UID "," REV "," BIND
	 ",\"attachment\":{\"network\":{\"ip\":\"10.0.0.2\",\"privateCidr\":\"10.0.0.0/33\","
	 "\"hostVeth\":\"v\"}}}",
	 "invalid attachment.network.privateCidr \"10.0.0.0/33\""},
	{"bad ip on a removal",
	 "{" API "," RM "," UID "," REV ",\"attachment\":{\"network\":{\"ip\":\"nope\"}}}",
	 "invalid attachment.network.ip \"nope\""},
	{"bad ip on a hook",
	 "{" API "," HOOK "," UID "," REV "," READY
	 ",\"attachment\":{\"network\":{\"ip\":\"::g\"}}}",
	 "invalid attachment.network.ip \"::g\""},
	{"bad ip with null input",
	 "{" API "," SET "," UID "," REV
	 ",\"binding\":{\"input\":null},\"attachment\":{\"network\":{\"ip\":\"x\"}}}",
	 "invalid attachment.network.ip \"x\""},
	/* types, decoded before validation as the reference's decoder does */
	{"uid a number", "{" API "," SET ",\"sandbox\":{\"uid\":7}," REV "," NET "," BIND "}",
	 "sandbox.uid must be a string"},
	{"type error comes before apiVersion", "{\"apiVersion\":\"x\",\"sandbox\":{\"uid\":[]}}",
	 "sandbox.uid must be a string"},
	{"apiVersion a number", "{\"apiVersion\":1," RM "," UID "," REV "}",
	 "apiVersion must be a string"},
	{"operation an object", "{" API ",\"operation\":{}," UID "," REV "}",
	 "operation must be a string"},
	{"sandbox a string", "{" API "," RM ",\"sandbox\":\"u-1\"," REV "}",
	 "sandbox must be an object"},
	{"revision an array", "{" API "," RM "," UID ",\"revision\":[]}",
	 "revision must be an object"},
	{"attachment a string", "{" API "," RM "," UID "," REV ",\"attachment\":\"x\"}",
	 "attachment must be an object"},
	{"network an array", "{" API "," RM "," UID "," REV ",\"attachment\":{\"network\":[]}}",
	 "attachment.network must be an object"},
	{"ip a number", "{" API "," RM "," UID "," REV ",\"attachment\":{\"network\":{\"ip\":1}}}",
	 "attachment.network.ip must be a string"},
	{"hostVeth a bool",
	 "{" API "," RM "," UID "," REV ",\"attachment\":{\"network\":{\"hostVeth\":true}}}",
	 "attachment.network.hostVeth must be a string"},
	{"binding a string", "{" API "," SET "," UID "," REV "," NET ",\"binding\":\"{}\"}",
	 "binding must be an object"},
	{"hook a string", "{" API "," HOOK "," UID "," REV ",\"hook\":\"sandbox.runtime-ready\"}",
	 "hook must be an object"},
	{"hook name a number", "{" API "," HOOK "," UID "," REV ",\"hook\":{\"name\":2}}",
	 "hook.name must be a string"},
	{"invocationId a number", "{" API "," RM ",\"invocationId\":5," UID "," REV "}",
	 "invocationId must be a string"},
	{"runtimeInstanceId a number",
	 "{" API "," RM "," UID ",\"revision\":{\"runtimeInstanceId\":1,\"attachmentId\":\"a\"}}",
	 "revision.runtimeInstanceId must be a string"},
	/* generations */
	{"negative specGeneration",
	 "{" API "," RM "," UID ",\"revision\":{\"specGeneration\":-1,\"runtimeInstanceId\":\"r\","
	 "\"attachmentId\":\"a\"}}",
	 "revision.specGeneration must be a non-negative integer"},
	{"float specGeneration",
	 "{" API "," RM "," UID ",\"revision\":{\"specGeneration\":4.0,\"runtimeInstanceId\":\"r\","
	 "\"attachmentId\":\"a\"}}",
	 "revision.specGeneration must be a non-negative integer"},
	{"exponent specGeneration",
	 "{" API "," RM "," UID ",\"revision\":{\"specGeneration\":1e3,\"runtimeInstanceId\":\"r\","
	 "\"attachmentId\":\"a\"}}",
	 "revision.specGeneration must be a non-negative integer"},
	{"string specGeneration",
	 "{" API "," RM "," UID ",\"revision\":{\"specGeneration\":\"4\",\"runtimeInstanceId\":"
	 "\"r\",\"attachmentId\":\"a\"}}",
	 "revision.specGeneration must be a non-negative integer"},
	{"negative routeGeneration",
	 "{" API "," RM "," UID ",\"revision\":{\"routeGeneration\":-7,\"runtimeInstanceId\":\"r\","
	 "\"attachmentId\":\"a\"}}",
	 "revision.routeGeneration must be a non-negative integer"},
	{"bool routeGeneration",
	 "{" API "," RM "," UID ",\"revision\":{\"routeGeneration\":true,\"runtimeInstanceId\":"
	 "\"r\",\"attachmentId\":\"a\"}}",
	 "revision.routeGeneration must be a non-negative integer"},
	{"negative hook sequence",
	 "{" API "," HOOK "," UID "," REV
	 ",\"hook\":{\"name\":\"sandbox.runtime-ready\",\"sequence\":-1}}",
	 "hook.sequence must be a non-negative integer"},
	{"float hook sequence",
	 "{" API "," HOOK "," UID "," REV
	 ",\"hook\":{\"name\":\"sandbox.runtime-ready\",\"sequence\":1.5}}",
	 "hook.sequence must be a non-negative integer"},
	{"specGeneration beyond 2^63",
	 "{" API "," RM "," UID
	 ",\"revision\":{\"specGeneration\":9223372036854775808,\"runtimeInstanceId\":\"r\","
	 "\"attachmentId\":\"a\"}}",
	 "malformed JSON: too big integer*"},
	{"specGeneration 2^64",
	 "{" API "," RM "," UID
	 ",\"revision\":{\"specGeneration\":18446744073709551616,\"runtimeInstanceId\":\"r\","
	 "\"attachmentId\":\"a\"}}",
	 "malformed JSON: too big integer*"},
	/* malformed JSON */
	{"empty body", "", "malformed JSON: *"},
	{"whitespace body", " \n", "malformed JSON: *"},
	{"truncated", "{" API, "malformed JSON: *"},
	{"trailing garbage", "{" API "," RM "," UID "," REV "} x", "malformed JSON: *"},
	{"two objects", "{" API "," RM "," UID "," REV "}{}", "malformed JSON: *"},
	{"single quotes", "{'apiVersion':'x'}", "malformed JSON: *"},
	{"escaped NUL in uid", "{" API "," RM ",\"sandbox\":{\"uid\":\"u\\u0000x\"}," REV "}",
	 "malformed JSON: *"},
	{"invalid UTF-8", "{" API "," RM ",\"sandbox\":{\"uid\":\"\xff\"}," REV "}",
	 "malformed JSON: *"},
	{"position is named", "{\n\"a\":tru}", "malformed JSON: invalid syntax at line 2 column 8"},
	/* top level */
	{"array", "[]", "body must be a JSON object"},
	{"string", "\"{}\"", "malformed JSON: *"},
	{"null", "null", "malformed JSON: *"},
};

static bool reason_matches(const char *want, const char *got)
{
	size_t n = strlen(want);

	if (n && want[n - 1] == '*')
		return strncmp(want, got, n - 1) == 0;
	return strcmp(want, got) == 0;
}

Test(envelope, validation_table)
{
	for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		const struct bad_case *c = &bad_cases[i];
		struct fw_envelope env;
		int ret;

		memset(&env, 0xa5, sizeof(env));
		ret = parse(c->body, &env);
		cr_expect_eq(ret, -EINVAL, "%s: got %d (%s)", c->desc, ret, reason);
		cr_expect(reason_matches(c->reason, reason), "%s:\n  want %s\n  got  %s", c->desc,
			  c->reason, reason);
		cr_expect_null(env.input, "%s: input left allocated", c->desc);
		fw_envelope_free(&env);
	}
}

static char *repeat(const char *head, char c, size_t n, const char *tail)
{
	size_t hl = strlen(head), tl = strlen(tail);
	char *s = malloc(hl + n + tl + 1);

	cr_assert_not_null(s);
	memcpy(s, head, hl);
	memset(s + hl, c, n);
	memcpy(s + hl + n, tail, tl + 1);
	return s;
}

Test(envelope, string_lengths)
{
	struct fw_envelope env;
	char *body;

	body = repeat("{" API "," RM "," REV ",\"sandbox\":{\"uid\":\"", 'u', FW_ENV_STR - 1,
		      "\"}}");
	parse_ok(body, &env);
	cr_assert_eq(strlen(env.uid), FW_ENV_STR - 1);
	free(body);

	body = repeat("{" API "," RM "," REV ",\"sandbox\":{\"uid\":\"", 'u', FW_ENV_STR, "\"}}");
	cr_assert_eq(parse(body, &env), -EINVAL);
	cr_assert_str_eq(reason, "sandbox.uid too long");
	free(body);

	body = repeat("{" API "," RM "," UID "," REV
		      ",\"attachment\":{\"network\":{\"hostVeth\":\"",
		      'v', FW_ENV_STR, "\"}}}");
	cr_assert_eq(parse(body, &env), -EINVAL);
	cr_assert_str_eq(reason, "attachment.network.hostVeth too long");
	free(body);

	/* a long apiVersion is only echoed in part */
	body = repeat("{\"apiVersion\":\"", 'a', 10000, "\"}");
	cr_assert_eq(parse(body, &env), -EINVAL);
	cr_assert(strncmp(reason, "unsupported apiVersion \"aaaa", 28) == 0, "%s", reason);
	cr_assert_lt(strlen(reason), 120);
	free(body);
}

Test(envelope, big_input_within_cap)
{
	struct fw_envelope env;
	size_t n = FW_ENV_BODY_MAX - 1000;
	char *body;

	body = repeat("{" API "," SET "," UID "," REV "," NET ",\"binding\":{\"input\":\"", ' ', n,
		      "\"}}");
	parse_ok(body, &env);
	cr_assert_eq(env.input_len, n);
	fw_envelope_free(&env);
	free(body);
}

Test(envelope, body_too_large)
{
	struct fw_envelope env;
	char *body = repeat("{", ' ', FW_ENV_BODY_MAX, "}");

	cr_assert_eq(fw_envelope_parse(body, FW_ENV_BODY_MAX + 1, &env, reason, sizeof(reason)),
		     -E2BIG);
	cr_assert_str_eq(reason, "request body too large");
	cr_assert_null(env.input);
	/* exactly at the cap is parsed */
	cr_assert_eq(fw_envelope_parse(body, FW_ENV_BODY_MAX, &env, reason, sizeof(reason)),
		     -EINVAL);
	cr_assert(strncmp(reason, "malformed JSON", 14) == 0, "%s", reason);
	free(body);
}

Test(envelope, null_body_and_embedded_nul)
{
	struct fw_envelope env;
	static const char body[] = "{" API "," RM "," UID "," REV "}";
	char with_nul[sizeof(body)];

	cr_assert_eq(fw_envelope_parse(NULL, 0, &env, reason, sizeof(reason)), -EINVAL);
	cr_assert(strncmp(reason, "malformed JSON", 14) == 0, "%s", reason);

	/* the length rules, not a NUL: a NUL byte inside is an error */
	memcpy(with_nul, body, sizeof(body));
	with_nul[5] = '\0';
	cr_assert_eq(fw_envelope_parse(with_nul, sizeof(body) - 1, &env, reason, sizeof(reason)),
		     -EINVAL);
	cr_assert_eq(fw_envelope_parse(body, sizeof(body) - 1, &env, reason, sizeof(reason)), 0);
	/* and bytes after len are not read */
	cr_assert_eq(fw_envelope_parse(body, sizeof(body) - 2, &env, reason, sizeof(reason)),
		     -EINVAL);
}

Test(envelope, deep_nesting)
{
	struct fw_envelope env;
	char *body;

	body = repeat("", '[', 100000, "");
	cr_assert_eq(parse(body, &env), -EINVAL);
	cr_assert(strncmp(reason, "malformed JSON", 14) == 0, "%s", reason);
	free(body);

	body = repeat("{" API "," RM "," UID "," REV ",\"x\":", '[', 100000, "");
	cr_assert_eq(parse(body, &env), -EINVAL);
	free(body);
}

Test(envelope, tiny_reason_buffer)
{
	struct fw_envelope env;
	char r[8];

	cr_assert_eq(fw_envelope_parse("[]", 2, &env, r, sizeof(r)), -EINVAL);
	cr_assert_str_eq(r, "body mu");
	cr_assert_eq(fw_envelope_parse("[]", 2, &env, NULL, 0), -EINVAL);
}

/* A uid is a subject's name in logs, the CLI and metrics: a newline or a
 * terminal escape in it (which forged a log record) is refused. */
Test(envelope, uid_control_characters)
{
	static const char *const bad[] = {
		"sb-1\\n2026-12-01T00:00:00.000Z info  subject sb-2: removed",
		"sb-1\\u001b[31m",
		"sb-1\\r",
		"sb-1\\t",
		"sb-1\\u007f",
	};
	struct fw_envelope env;
	char body[512];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(body, sizeof(body),
			 "{" API "," RM ",\"sandbox\":{\"uid\":\"%s\"}," REV "}", bad[i]);
		cr_assert_eq(parse(body, &env), -EINVAL, "%s accepted", bad[i]);
		cr_assert_str_eq(reason, "sandbox.uid must not contain control characters");
	}
	/* UTF-8 and punctuation stay valid uids */
	parse_ok("{" API "," RM ",\"sandbox\":{\"uid\":\"sb-é:1 x\"}," REV "}", &env);
	cr_assert_str_eq(env.uid, "sb-é:1 x");
	fw_envelope_free(&env);
}
