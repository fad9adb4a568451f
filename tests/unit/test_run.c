// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* `fastwall run`: its command line, the requests it sends to fastwalld
 * (parsed there from untrusted bytes) and the answers it reads back. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "policy/json.h"
#include "subjects/run.h"

static char err[512];

static int req(const char *s, struct fw_run_req *r)
{
	err[0] = '\0';
	return fw_run_req_parse(s, strlen(s), r, err, sizeof(err));
}

static void req_fails(const char *s, const char *why)
{
	struct fw_run_req r;

	cr_assert_eq(req(s, &r), -EINVAL, "%s parsed", s);
	cr_assert(strstr(err, why), "%s: '%s' does not say '%s'", s, err, why);
}

static void assert_policy(const struct fw_policy *p, const char *want)
{
	char *got = fw_policy_to_json(p);

	cr_assert_not_null(got);
	cr_assert_str_eq(got, want);
	free(got);
}

Test(run, add_request_parses_name_and_policy)
{
	struct fw_run_req r;

	cr_assert_eq(req("{\"op\":\"add\",\"name\":\"web-1\",\"policy\":"
			 "\"{\\\"defaultAction\\\":\\\"deny\\\",\\\"egress\\\":[{\\\"action\\\":"
			 "\\\"allow\\\",\\\"target\\\":\\\"192.0.2.0/24\\\"}]}\"}",
			 &r),
		     0, "%s", err);
	cr_assert_eq(r.op, FW_RUN_ADD);
	cr_assert_str_eq(r.name, "web-1");
	cr_assert_eq(r.policy.nrules, 1);
	cr_assert_eq(r.policy.default_action, FW_ACTION_DENY);
	fw_run_req_free(&r);
}

Test(run, remove_request_has_a_name_only)
{
	struct fw_run_req r;

	cr_assert_eq(req("{\"op\":\"remove\",\"name\":\"web-1\"}", &r), 0, "%s", err);
	cr_assert_eq(r.op, FW_RUN_REMOVE);
	cr_assert_str_eq(r.name, "web-1");
	fw_run_req_free(&r);
	req_fails("{\"op\":\"remove\",\"name\":\"web-1\",\"policy\":\"\"}", "no policy");
}

Test(run, join_request_has_a_name_only_and_formats_back)
{
	struct fw_run_req r, j = {.op = FW_RUN_JOIN};
	char *text;

	cr_assert_eq(req("{\"op\":\"join\",\"name\":\"web-1\"}", &r), 0, "%s", err);
	cr_assert_eq(r.op, FW_RUN_JOIN);
	cr_assert_str_eq(r.name, "web-1");
	fw_run_req_free(&r);
	req_fails("{\"op\":\"join\",\"name\":\"web-1\",\"policy\":\"\"}", "join takes no policy");
	req_fails("{\"op\":\"join\"}", "name must be");
	snprintf(j.name, sizeof(j.name), "%s", "w.2");
	fw_policy_init(&j.policy);
	text = fw_run_req_format(&j);
	cr_assert_str_eq(text, "{\"op\":\"join\",\"name\":\"w.2\"}");
	free(text);
}

Test(run, bad_requests_say_why)
{
	req_fails("", "invalid JSON");
	req_fails("[1]", "JSON object");
	req_fails("{\"op\":\"add\",\"name\":\"a\",\"policy\":\"\",\"extra\":1}", "unknown key");
	req_fails("{\"op\":\"start\",\"name\":\"a\"}", "op must be");
	req_fails("{\"name\":\"a\",\"policy\":\"\"}", "op must be");
	req_fails("{\"op\":\"add\",\"policy\":\"\"}", "name must be");
	req_fails("{\"op\":\"add\",\"name\":\"../etc\",\"policy\":\"\"}", "name must be");
	req_fails("{\"op\":\"add\",\"name\":\".hidden\",\"policy\":\"\"}", "name must be");
	req_fails("{\"op\":\"add\",\"name\":\"a/b\",\"policy\":\"\"}", "name must be");
	req_fails("{\"op\":\"add\",\"name\":\"a\\u0000b\",\"policy\":\"\"}", "invalid JSON");
	req_fails("{\"op\":\"add\",\"name\":\"\",\"policy\":\"\"}", "name must be");
	req_fails("{\"op\":\"add\",\"name\":7,\"policy\":\"\"}", "name must be");
	req_fails("{\"op\":\"add\",\"name\":\"a\"}", "needs a policy");
	req_fails("{\"op\":\"add\",\"name\":\"a\",\"policy\":{}}", "needs a policy");
	req_fails("{\"op\":\"add\",\"name\":\"a\",\"policy\":\"{\\\"egress\\\":5}\"}", "egress");
	req_fails("{\"op\":\"add\",\"op\":\"remove\",\"name\":\"a\",\"policy\":\"\"}",
		  "invalid JSON");
}

Test(run, names_are_bounded)
{
	char name[FW_RUN_NAME_MAX + 2], text[256];
	struct fw_run_req r;

	memset(name, 'a', sizeof(name));
	name[FW_RUN_NAME_MAX] = '\0';
	cr_assert(fw_run_name_ok(name));
	snprintf(text, sizeof(text), "{\"op\":\"remove\",\"name\":\"%s\"}", name);
	cr_assert_eq(req(text, &r), 0, "%s", err);
	fw_run_req_free(&r);
	name[FW_RUN_NAME_MAX] = 'a';
	name[FW_RUN_NAME_MAX + 1] = '\0';
	cr_assert_not(fw_run_name_ok(name));
	snprintf(text, sizeof(text), "{\"op\":\"remove\",\"name\":\"%s\"}", name);
	req_fails(text, "name must be");
}

Test(run, oversized_request_is_refused_unread)
{
	size_t n = FW_RUN_MSG_MAX + 1;
	char *big = malloc(n);
	struct fw_run_req r;

	cr_assert_not_null(big);
	memset(big, ' ', n);
	cr_assert_eq(fw_run_req_parse(big, n, &r, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "larger than"), "%s", err);
	free(big);
}

Test(run, formatted_request_parses_back)
{
	struct fw_run_req a = {.op = FW_RUN_ADD}, b;
	char why[256], *text;

	snprintf(a.name, sizeof(a.name), "%s", "db.2");
	fw_policy_init(&a.policy);
	cr_assert_eq(fw_policy_add_rule(&a.policy, "allow", "198.51.100.0/24", NULL, 0, why,
					sizeof(why)),
		     0);
	cr_assert_eq(
		fw_policy_add_rule(&a.policy, "deny", "example.com", NULL, 0, why, sizeof(why)), 0);
	text = fw_run_req_format(&a);
	cr_assert_not_null(text);
	cr_assert_eq(req(text, &b), 0, "%s: %s", text, err);
	cr_assert_str_eq(b.name, "db.2");
	assert_policy(&b.policy, "{\"defaultAction\":\"deny\",\"egress\":[{\"action\":\"allow\","
				 "\"target\":\"198.51.100.0/24\"},{\"action\":\"deny\",\"target\":"
				 "\"example.com\"}]}");
	free(text);
	fw_run_req_free(&a);
	fw_run_req_free(&b);
}

Test(run, replies_round_trip)
{
	struct fw_run_reply ok = {.ok = true, .id = 12}, no = {.ok = false}, got;
	char *text;

	snprintf(ok.cgroup, sizeof(ok.cgroup), "%s", "/sys/fs/cgroup/fastwall/web");
	text = fw_run_reply_format(&ok);
	cr_assert_eq(fw_run_reply_parse(text, strlen(text), &got), 0);
	cr_assert(got.ok);
	cr_assert_eq(got.id, 12);
	cr_assert_str_eq(got.cgroup, "/sys/fs/cgroup/fastwall/web");
	free(text);
	snprintf(no.error, sizeof(no.error), "%s", "a subject named web exists");
	text = fw_run_reply_format(&no);
	cr_assert_eq(fw_run_reply_parse(text, strlen(text), &got), 0);
	cr_assert_not(got.ok);
	cr_assert_str_eq(got.error, "a subject named web exists");
	free(text);
	cr_assert_eq(fw_run_reply_parse("{\"ok\":true}", 11, &got), -EPROTO, "no cgroup");
	cr_assert_eq(fw_run_reply_parse("nope", 4, &got), -EPROTO);
}

/* ---- the command line ---- */

static int status; /* the exit status when the option parser refused */

/* argv as fastwall's command table hands it to run */
static int args(struct fw_run_args *a, char **argv)
{
	static const struct fw_cmd cmd = {.name = "run",
					  .opts = fw_run_opts,
					  .usage = "run",
					  .max_operands = -1,
					  .in_order = true};
	static const struct fw_cmd_prog prog = {.name = "fastwall", .cmds = &cmd, .ncmds = 1};
	struct fw_cmd_args ca = {.prog = &prog, .cmd = &cmd, .argv = argv};
	int ret;

	while (argv[ca.argc])
		ca.argc++;
	err[0] = '\0';
	status = -1;
	ret = fw_run_args_parse(&ca, 4321, a, err, sizeof(err));
	if (ret == 1)
		status = ca.status;
	if (ret)
		fw_run_args_free(a);
	return ret;
}

Test(run, args_defaults_and_command)
{
	char *argv[] = {"run", "--", "curl", "-s", "http://192.0.2.1/", NULL};
	struct fw_run_args a;

	cr_assert_eq(args(&a, argv), 0, "%s", err);
	cr_assert_str_eq(a.req.name, "run-4321");
	cr_assert_str_eq(a.socket, FW_RUN_DEFAULT_SOCKET);
	cr_assert_str_eq(a.cgroup, "", "no --cgroup: fastwalld makes the cgroup");
	cr_assert_eq(a.cmd, argv + 2, "the command starts after --");
	cr_assert_str_eq(a.cmd[1], "-s", "the command's own options stay its own");
	assert_policy(&a.req.policy, "{\"defaultAction\":\"deny\",\"egress\":[]}");
	fw_run_args_free(&a);
}

Test(run, args_rules_in_order_after_the_policy_file)
{
	char path[] = "/tmp/fastwall-test-run-XXXXXX";
	int fd = mkstemp(path);
	const char *text = "{\"defaultAction\":\"allow\",\"egress\":[{\"action\":\"deny\","
			   "\"target\":\"203.0.113.0/24\"}]}";
	char *argv[] = {"run",	      "--allow", "192.0.2.10", "--policy", path, "--deny",
			"192.0.2.11", "--name",	 "w1",	       "sleep",	   "1",	 NULL};
	struct fw_run_args a;

	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	cr_assert_eq(args(&a, argv), 0, "%s", err);
	unlink(path);
	cr_assert_str_eq(a.req.name, "w1");
	cr_assert_str_eq(a.cmd[0], "sleep", "the first word that is no option is the command");
	assert_policy(&a.req.policy,
		      "{\"defaultAction\":\"allow\",\"egress\":[{\"action\":\"deny\",\"target\":"
		      "\"203.0.113.0/24\"},{\"action\":\"allow\",\"target\":\"192.0.2.10\"},{"
		      "\"action\":\"deny\",\"target\":\"192.0.2.11\"}]}");
	fw_run_args_free(&a);
}

static void args_fail(char **argv, const char *why)
{
	struct fw_run_args a;

	cr_assert_neq(args(&a, argv), 0, "%s parsed", argv[1]);
	cr_assert(strstr(err, why), "'%s' does not say '%s'", err, why);
}

Test(run, bad_args_say_why)
{
	char *nocmd[] = {"run", "--allow", "192.0.2.1", NULL};
	char *dashdash[] = {"run", "--", NULL};
	char *badname[] = {"run", "--name", "a/b", "--", "true", NULL};
	char *badtarget[] = {"run", "--allow", "not a target!", "--", "true", NULL};
	char *nofile[] = {"run", "--policy", "/nonexistent/p.json", "--", "true", NULL};
	char *twice[] = {"run", "--policy", "/a", "--policy", "/b", "--", "true", NULL};
	char *relsock[] = {"run", "--socket", "run.sock", "--", "true", NULL};
	char *unknown[] = {"run", "--bogus", "--", "true", NULL};
	char *novalue[] = {"run", "--name", NULL};
	struct fw_run_args a;
	char *relcg[] = {"run", "--cgroup", "user.slice/x", "--", "true", NULL};

	args_fail(nocmd, "no command");
	args_fail(dashdash, "no command");
	args_fail(badname, "--name a/b");
	args_fail(badtarget, "--allow not a target!");
	args_fail(nofile, "can't open /nonexistent/p.json");
	args_fail(twice, "--policy given twice");
	args_fail(relsock, "--socket");
	/* the option parser's own refusals (it said why): a usage error */
	cr_assert_eq(args(&a, unknown), 1);
	cr_assert_eq(status, 2);
	cr_assert_eq(args(&a, novalue), 1);
	cr_assert_eq(status, 2);
	args_fail(relcg, "--cgroup: an absolute path");
}

Test(run, args_cgroup_is_kept)
{
	char *argv[] = {"run", "--cgroup", "/sys/fs/cgroup/u/r1", "--", "true", NULL};
	struct fw_run_args a;

	cr_assert_eq(args(&a, argv), 0, "%s", err);
	cr_assert_str_eq(a.cgroup, "/sys/fs/cgroup/u/r1");
	fw_run_args_free(&a);
}

Test(run, args_keep_caps_only_when_asked)
{
	char *plain[] = {"run", "--allow", "192.0.2.1", "--", "id", NULL};
	char *keep[] = {"run", "--keep-caps", "--name", "k", "--", "id", NULL};
	char *after[] = {"run", "--", "sh", "--keep-caps", NULL};
	char *withval[] = {"run", "--keep-caps=yes", "--", "id", NULL};
	struct fw_run_args a;

	cr_assert_eq(args(&a, plain), 0, "%s", err);
	cr_assert_not(a.keep_caps, "the default drops them");
	fw_run_args_free(&a);
	cr_assert_eq(args(&a, keep), 0, "%s", err);
	cr_assert(a.keep_caps);
	cr_assert_str_eq(a.req.name, "k");
	cr_assert_eq(a.cmd, keep + 5);
	fw_run_args_free(&a);
	cr_assert_eq(args(&a, after), 0, "%s", err);
	cr_assert_not(a.keep_caps, "the command's own --keep-caps is its own");
	cr_assert_str_eq(a.cmd[1], "--keep-caps");
	fw_run_args_free(&a);
	cr_assert_eq(args(&a, withval), 1, "--keep-caps takes no value");
	cr_assert_eq(status, 2);
}

Test(run, sandbox_caps_table)
{
	static const struct {
		int cap;
		const char *name;
	} want[] = {
		{21, "CAP_SYS_ADMIN"},	{12, "CAP_NET_ADMIN"}, {39, "CAP_BPF"},
		{38, "CAP_PERFMON"},	{13, "CAP_NET_RAW"},   {16, "CAP_SYS_MODULE"},
		{19, "CAP_SYS_PTRACE"}, {17, "CAP_SYS_RAWIO"}, {22, "CAP_SYS_BOOT"},
	};
	const struct fw_sandbox_cap *c;

	cr_assert_eq(fw_sandbox_ncaps, sizeof(want) / sizeof(want[0]));
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		c = fw_sandbox_cap_in(1ull << want[i].cap);
		cr_assert_not_null(c, "%s", want[i].name);
		cr_assert_str_eq(c->name, want[i].name);
	}
	/* CapBnd of a command of fastwall run as root: all but those */
	cr_assert_null(
		fw_sandbox_cap_in(0x000001fffeffffffull &
				  ~(1ull << 21 | 1ull << 12 | 1ull << 39 | 1ull << 38 | 1ull << 13 |
				    1ull << 16 | 1ull << 19 | 1ull << 17 | 1ull << 22)));
	cr_assert_null(fw_sandbox_cap_in(1ull << 1 | 1ull << 7), "CAP_DAC_OVERRIDE, CAP_SETUID");
	c = fw_sandbox_cap_in(0x000001fffeffffffull);
	cr_assert_str_eq(c->name, "CAP_SYS_ADMIN", "named first");
}

Test(run, args_bad_policy_file_names_the_file)
{
	char path[] = "/tmp/fastwall-test-run-XXXXXX";
	int fd = mkstemp(path);
	char *argv[] = {"run", "--policy", path, "--", "true", NULL};
	struct fw_run_args a;

	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, "{\"egress\": 3}", 13), 13);
	close(fd);
	cr_assert_eq(args(&a, argv), -EINVAL);
	unlink(path);
	cr_assert(strstr(err, path) && strstr(err, "egress"), "%s", err);
}
