// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The `fastwall run` messages: requests and answers as JSON objects. See
 * subjects/run.h. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <linux/capability.h>

#include "common/json.h"
#include "policy/json.h"
#include "subjects/run.h"

#ifndef CAP_PERFMON
#define CAP_PERFMON 38 /* Linux 5.8 */
#endif
#ifndef CAP_BPF
#define CAP_BPF 39 /* Linux 5.8 */
#endif

const struct fw_sandbox_cap fw_sandbox_caps[] = {
	{CAP_SYS_ADMIN, "CAP_SYS_ADMIN"},
	{CAP_NET_ADMIN, "CAP_NET_ADMIN"},
	{CAP_BPF, "CAP_BPF"},
	{CAP_PERFMON, "CAP_PERFMON"},
	{CAP_NET_RAW, "CAP_NET_RAW"},
	{CAP_SYS_MODULE, "CAP_SYS_MODULE"},
	{CAP_SYS_PTRACE, "CAP_SYS_PTRACE"},
	{CAP_SYS_RAWIO, "CAP_SYS_RAWIO"},
	{CAP_SYS_BOOT, "CAP_SYS_BOOT"},
};

const size_t fw_sandbox_ncaps = sizeof(fw_sandbox_caps) / sizeof(fw_sandbox_caps[0]);

const struct fw_sandbox_cap *fw_sandbox_cap_in(unsigned long long mask)
{
	for (size_t i = 0; i < fw_sandbox_ncaps; i++) {
		if (mask >> fw_sandbox_caps[i].cap & 1)
			return &fw_sandbox_caps[i];
	}
	return NULL;
}

bool fw_run_name_ok(const char *name)
{
	size_t n = strnlen(name, FW_RUN_NAME_MAX + 1);

	if (n == 0 || n > FW_RUN_NAME_MAX || name[0] == '.')
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '-' || c == '_' || c == '.'))
			return false;
	}
	return true;
}

void fw_run_req_free(struct fw_run_req *req)
{
	fw_policy_free(&req->policy);
}

int fw_run_req_parse(const char *buf, size_t len, struct fw_run_req *req, char *err, size_t errlen)
{
	json_t *root = NULL, *v;
	json_error_t jerr;
	const char *key, *op;
	char why[128];
	int ret = -EINVAL;

	memset(req, 0, sizeof(*req));
	fw_policy_init(&req->policy);
	if (len > FW_RUN_MSG_MAX) {
		fw_set_reason(err, errlen, "request larger than %d bytes", FW_RUN_MSG_MAX);
		return -EINVAL;
	}
	root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root) {
		fw_set_reason(err, errlen, "invalid JSON: %s",
			      fw_json_error(&jerr, why, sizeof(why)));
		return -EINVAL;
	}
	if (!json_is_object(root)) {
		fw_set_reason(err, errlen, "the request must be a JSON object");
		goto out;
	}
	json_object_foreach(root, key, v)
	{
		if (strcmp(key, "op") && strcmp(key, "name") && strcmp(key, "policy")) {
			fw_set_reason(err, errlen, "unknown key '%.32s'", key);
			goto out;
		}
	}
	v = json_object_get(root, "op");
	op = json_is_string(v) ? json_string_value(v) : NULL;
	if (op && strcmp(op, "add") == 0) {
		req->op = FW_RUN_ADD;
	} else if (op && strcmp(op, "remove") == 0) {
		req->op = FW_RUN_REMOVE;
	} else if (op && strcmp(op, "join") == 0) {
		req->op = FW_RUN_JOIN;
	} else {
		fw_set_reason(err, errlen, "op must be \"add\", \"remove\" or \"join\"");
		goto out;
	}
	v = json_object_get(root, "name");
	if (!json_is_string(v) || json_string_length(v) > FW_RUN_NAME_MAX ||
	    strlen(json_string_value(v)) != json_string_length(v) ||
	    !fw_run_name_ok(json_string_value(v))) {
		fw_set_reason(err, errlen,
			      "name must be 1-%d letters, digits, '-', '_' or '.', not starting "
			      "with '.'",
			      FW_RUN_NAME_MAX);
		goto out;
	}
	snprintf(req->name, sizeof(req->name), "%s", json_string_value(v));
	v = json_object_get(root, "policy");
	if (req->op != FW_RUN_ADD) {
		if (v) {
			fw_set_reason(err, errlen, "%s takes no policy", op);
			goto out;
		}
		ret = 0;
		goto out;
	}
	if (!json_is_string(v)) {
		fw_set_reason(err, errlen, "add needs a policy (a policy JSON string)");
		goto out;
	}
	ret = fw_policy_from_json(json_string_value(v), json_string_length(v), &req->policy, err,
				  errlen);
out:
	json_decref(root);
	if (ret)
		fw_run_req_free(req);
	return ret;
}

char *fw_run_req_format(const struct fw_run_req *req)
{
	json_t *root = json_object();
	char *policy = NULL, *out = NULL;

	if (!root)
		return NULL;
	if (json_object_set_new(root, "op",
				json_string(req->op == FW_RUN_ADD    ? "add"
					    : req->op == FW_RUN_JOIN ? "join"
								     : "remove")) ||
	    json_object_set_new(root, "name", json_string(req->name)))
		goto out;
	if (req->op == FW_RUN_ADD) {
		policy = fw_policy_to_json(&req->policy);
		if (!policy || json_object_set_new(root, "policy", json_string(policy)))
			goto out;
	}
	out = json_dumps(root, JSON_COMPACT);
out:
	free(policy);
	json_decref(root);
	return out;
}

char *fw_run_reply_format(const struct fw_run_reply *r)
{
	json_t *root;
	char *out;

	if (r->ok)
		root = json_pack("{s:b, s:I, s:s}", "ok", 1, "id", (json_int_t)r->id, "cgroup",
				 r->cgroup);
	else
		root = json_pack("{s:b, s:s}", "ok", 0, "error", r->error);
	if (!root)
		return NULL;
	out = json_dumps(root, JSON_COMPACT);
	json_decref(root);
	return out;
}

int fw_run_reply_parse(const char *buf, size_t len, struct fw_run_reply *r)
{
	json_t *root = json_loadb(buf, len, 0, NULL), *v;
	int ret = -EPROTO;

	memset(r, 0, sizeof(*r));
	if (!root)
		return -EPROTO;
	if (!json_is_object(root) || !json_is_boolean(json_object_get(root, "ok")))
		goto out;
	r->ok = json_is_true(json_object_get(root, "ok"));
	if (r->ok) {
		v = json_object_get(root, "id");
		if (json_is_integer(v))
			r->id = (unsigned int)json_integer_value(v);
		v = json_object_get(root, "cgroup");
		if (!json_is_string(v))
			goto out;
		snprintf(r->cgroup, sizeof(r->cgroup), "%s", json_string_value(v));
	} else {
		v = json_object_get(root, "error");
		snprintf(r->error, sizeof(r->error), "%s",
			 json_is_string(v) ? json_string_value(v) : "refused");
	}
	ret = 0;
out:
	json_decref(root);
	return ret;
}

/* The whole of a small file (the policy), NUL-terminated. */
static int read_file(const char *path, char **out, size_t *len, char *err, size_t errlen)
{
	FILE *f = fopen(path, "re");
	char *buf;
	size_t n;
	int ret = 0;

	if (!f) {
		ret = -errno;
		fw_set_reason(err, errlen, "can't open %s: %s", path, strerror(-ret));
		return ret;
	}
	buf = malloc(FW_RUN_MSG_MAX + 1);
	if (!buf) {
		fclose(f);
		return -ENOMEM;
	}
	n = fread(buf, 1, FW_RUN_MSG_MAX + 1, f);
	if (ferror(f)) {
		ret = -EIO;
		fw_set_reason(err, errlen, "can't read %s", path);
	} else if (n > FW_RUN_MSG_MAX / 2) {
		ret = -EINVAL;
		fw_set_reason(err, errlen, "%s: larger than %d bytes", path, FW_RUN_MSG_MAX / 2);
	}
	fclose(f);
	if (ret) {
		free(buf);
		return ret;
	}
	buf[n] = '\0';
	*out = buf;
	*len = n;
	return 0;
}

const struct fw_cmd_opt fw_run_opts[] = {
	{FW_RUN_OPT_POLICY, "policy", "FILE",
	 "the policy JSON: {\"defaultAction\": \"deny\", \"egress\":\n"
	 "[{\"action\": \"allow\", \"target\": \"192.0.2.0/24\"}]}\n"
	 "(default: deny everything)"},
	{FW_RUN_OPT_ALLOW, "allow", "TARGET",
	 "allow an address, CIDR or domain (after FILE's rules)"},
	{FW_RUN_OPT_DENY, "deny", "TARGET", "deny an address, CIDR or domain"},
	{FW_RUN_OPT_NAME, "name", "NAME", "the subject's and the cgroup's name (default run-PID)"},
	{FW_RUN_OPT_SOCKET, "socket", "PATH",
	 "fastwalld's run socket (default " FW_RUN_DEFAULT_SOCKET ")"},
	{FW_RUN_OPT_CGROUP, "cgroup", "DIR",
	 "the sandbox is DIR, a cgroup you may write (made when\n"
	 "missing) below processes.run_parent, e.g. in a subtree\n"
	 "delegated to you; without it fastwalld makes one"},
	{FW_RUN_OPT_KEEP_CAPS, "keep-caps", NULL,
	 "the command keeps its capabilities (all but CAP_NET_RAW)\n"
	 "and the node's cgroup namespace: as root it may leave\n"
	 "the sandbox and change the node's network and BPF"},
	{0},
};

void fw_run_args_init(struct fw_run_args *a, unsigned int pid)
{
	memset(a, 0, sizeof(*a));
	a->req.op = FW_RUN_ADD;
	fw_policy_init(&a->req.policy);
	snprintf(a->socket, sizeof(a->socket), "%s", FW_RUN_DEFAULT_SOCKET);
	snprintf(a->req.name, sizeof(a->req.name), "run-%u", pid);
}

void fw_run_args_free(struct fw_run_args *a)
{
	fw_run_req_free(&a->req);
	free(a->rules);
	a->rules = NULL;
	a->nrules = 0;
}

/* an absolute path that fits dst */
static int set_path(char *dst, size_t size, const char *opt, const char *path, char *err,
		    size_t errlen)
{
	if (path[0] != '/' || strlen(path) >= size) {
		fw_set_reason(err, errlen, "--%s: an absolute path under %zu bytes", opt, size);
		return -EINVAL;
	}
	snprintf(dst, size, "%s", path);
	return 0;
}

int fw_run_args_set(struct fw_run_args *a, int opt, const char *value, char *err, size_t errlen)
{
	struct fw_run_rule *grown;

	switch (opt) {
	case FW_RUN_OPT_POLICY:
		if (a->policy) {
			fw_set_reason(err, errlen, "--policy given twice");
			return -EINVAL;
		}
		a->policy = value;
		return 0;
	case FW_RUN_OPT_ALLOW:
	case FW_RUN_OPT_DENY:
		/* kept for fw_run_args_done: they follow the file's rules,
		 * wherever --policy stands */
		grown = realloc(a->rules, (a->nrules + 1) * sizeof(*a->rules));
		if (!grown)
			return -ENOMEM;
		a->rules = grown;
		a->rules[a->nrules++] = (struct fw_run_rule){opt == FW_RUN_OPT_ALLOW, value};
		return 0;
	case FW_RUN_OPT_NAME:
		if (!fw_run_name_ok(value)) {
			fw_set_reason(err, errlen,
				      "--name %s: 1-%d letters, digits, '-', '_' or '.', not "
				      "starting with '.'",
				      value, FW_RUN_NAME_MAX);
			return -EINVAL;
		}
		snprintf(a->req.name, sizeof(a->req.name), "%s", value);
		return 0;
	case FW_RUN_OPT_SOCKET:
		return set_path(a->socket, sizeof(a->socket), "socket", value, err, errlen);
	case FW_RUN_OPT_CGROUP:
		return set_path(a->cgroup, sizeof(a->cgroup), "cgroup", value, err, errlen);
	case FW_RUN_OPT_KEEP_CAPS:
		a->keep_caps = true;
		return 0;
	}
	fw_set_reason(err, errlen, "unknown option");
	return -EINVAL;
}

int fw_run_args_done(struct fw_run_args *a, char **cmd, char *err, size_t errlen)
{
	char why[256];
	int ret;

	if (a->policy) {
		char *text = NULL;
		size_t len = 0;

		ret = read_file(a->policy, &text, &len, err, errlen);
		if (ret)
			return ret;
		ret = fw_policy_from_json(text, len, &a->req.policy, why, sizeof(why));
		free(text);
		if (ret) {
			fw_set_reason(err, errlen, "%s: %s", a->policy, why);
			return ret;
		}
	}
	for (size_t i = 0; i < a->nrules; i++) {
		const char *action = a->rules[i].allow ? "allow" : "deny";

		ret = fw_policy_add_rule(&a->req.policy, action, a->rules[i].target, NULL, 0, why,
					 sizeof(why));
		if (ret) {
			fw_set_reason(err, errlen, "--%s %s: %s", action, a->rules[i].target, why);
			return ret;
		}
	}
	if (!cmd || !cmd[0]) {
		fw_set_reason(err, errlen,
			      "no command to run (fastwall run [OPTIONS] -- CMD [ARGS])");
		return -EINVAL;
	}
	a->cmd = cmd;
	return 0;
}

int fw_run_args_parse(struct fw_cmd_args *ca, unsigned int pid, struct fw_run_args *a, char *err,
		      size_t errlen)
{
	int key = 0, ret = 0;

	fw_run_args_init(a, pid);
	while (!ret && (key = fw_cmd_next(ca)) > 0)
		ret = fw_run_args_set(a, key, ca->arg, err, errlen);
	if (!ret && key < 0)
		return 1;
	return ret ? ret : fw_run_args_done(a, ca->argv + ca->ind, err, errlen);
}
