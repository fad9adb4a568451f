/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The messages of `fastwall run` to fastwalld over its unix socket: one
 * JSON object per datagram (SOCK_SEQPACKET), a request and its answer.
 * The request parser takes untrusted bytes: every length is bounded.
 * Functions return 0 or a negative errno (-EINVAL with err saying why). */
#ifndef FW_SUBJECTS_RUN_H
#define FW_SUBJECTS_RUN_H

#include <stdbool.h>
#include <stddef.h>

#include "common/cmd.h"
#include "policy/policy.h"

#define FW_RUN_MSG_MAX	65536 /* a request or an answer, whole */
#define FW_RUN_NAME_MAX 64    /* a run's name: its cgroup and its subject */

enum fw_run_op {
	FW_RUN_ADD = 1, /* a new sandbox: name, policy */
	FW_RUN_REMOVE,	/* the launcher is done with name */
	FW_RUN_JOIN,	/* fastwalld moves the peer into name's cgroup */
};

struct fw_run_req {
	enum fw_run_op op;
	char name[FW_RUN_NAME_MAX + 1];
	struct fw_policy policy; /* FW_RUN_ADD */
};

/* 1-64 of letters, digits, '-', '_', '.', not starting with '.'. */
bool fw_run_name_ok(const char *name);

/* {"op": "add", "name": NAME, "policy": POLICY-JSON-STRING},
 * {"op": "remove", "name": NAME} or {"op": "join", "name": NAME}; the
 * policy string as policy/json.h reads it. An add may come with the
 * descriptor of a cgroup directory (SCM_RIGHTS): the caller's own
 * cgroup to register instead of one fastwalld makes. Unknown keys are refused (a typo must not drop
 * a rule). On success the caller frees req with fw_run_req_free. */
int fw_run_req_parse(const char *buf, size_t len, struct fw_run_req *req, char *err, size_t errlen);
void fw_run_req_free(struct fw_run_req *req);
/* The request as the parser reads it (malloc'd, NUL-terminated). */
char *fw_run_req_format(const struct fw_run_req *req);

/* `fastwall run` arguments: [--policy FILE] [--allow TARGET]...
 * [--deny TARGET]... [--name NAME] [--socket PATH] [--cgroup DIR]
 * [--keep-caps] [--] CMD [ARGS], given one option at a time as the
 * command's option table (common/cmd.h) returns them, then the command.
 * DIR: a cgroup the caller may write (made when missing), registered as
 * the sandbox. --keep-caps: the command keeps the capabilities of
 * fw_sandbox_caps (but CAP_NET_RAW) and the node's cgroup namespace. The
 * policy is FILE's (the policy JSON; default deny with no rules without
 * one) with the --allow and --deny rules after its own, in the order given,
 * wherever --policy stands. */
#define FW_RUN_DEFAULT_SOCKET "/run/fastwall/run.sock"

enum fw_run_opt {
	FW_RUN_OPT_POLICY = FW_CMD_LONG,
	FW_RUN_OPT_ALLOW,
	FW_RUN_OPT_DENY,
	FW_RUN_OPT_NAME,
	FW_RUN_OPT_SOCKET,
	FW_RUN_OPT_CGROUP,
	FW_RUN_OPT_KEEP_CAPS,
};

struct fw_run_args {
	struct fw_run_req req; /* FW_RUN_ADD */
	char socket[108];
	char cgroup[4096]; /* --cgroup, "" without */
	char **cmd;	   /* NULL-terminated, within argv */
	bool keep_caps;	   /* --keep-caps */
	/* until fw_run_args_done: --policy's file and the rules, in order */
	const char *policy;
	struct fw_run_rule {
		bool allow;
		const char *target;
	} * rules;
	size_t nrules;
};

/* pid names an unnamed run ("run-PID"). Whatever follows, the caller
 * frees a with fw_run_args_free. */
void fw_run_args_init(struct fw_run_args *a, unsigned int pid);
/* One option (FW_RUN_OPT_*) and its value, within argv. */
int fw_run_args_set(struct fw_run_args *a, int opt, const char *value, char *err, size_t errlen);
/* The policy: FILE's, then the rules; cmd: the operands after the
 * options (NULL-terminated), at least one. */
int fw_run_args_done(struct fw_run_args *a, char **cmd, char *err, size_t errlen);
void fw_run_args_free(struct fw_run_args *a);

/* The options above, for a command table; their keys are FW_RUN_OPT_*. */
extern const struct fw_cmd_opt fw_run_opts[];

/* All of it from ca (a run of a command whose options are fw_run_opts, in
 * order): fw_run_args_init, each option, fw_run_args_done. 0, a negative
 * errno with err saying why, or 1 when the option parser printed the
 * help or the error (exit with ca->status). */
int fw_run_args_parse(struct fw_cmd_args *ca, unsigned int pid, struct fw_run_args *a, char *err,
		      size_t errlen);

/* The answer: {"ok": true, "id": N, "cgroup": PATH} or {"ok": false,
 * "error": TEXT}. */
struct fw_run_reply {
	bool ok;
	unsigned int id;
	char cgroup[4096];
	char error[512];
};

char *fw_run_reply_format(const struct fw_run_reply *r);
int fw_run_reply_parse(const char *buf, size_t len, struct fw_run_reply *r);

/* The capabilities that take a process out of its sandbox or change
 * what holds it: leave the cgroup or its namespace (CAP_SYS_ADMIN), build
 * a network path or rewrite the node's (CAP_NET_ADMIN), load, detach or
 * read BPF programs and maps (CAP_BPF, CAP_PERFMON), send frames no inet
 * hook sees (CAP_NET_RAW), load kernel code or a kernel (CAP_SYS_MODULE,
 * CAP_SYS_BOOT), reach into a process outside or into raw memory and I/O
 * (CAP_SYS_PTRACE, CAP_SYS_RAWIO). `fastwall run` drops them, fastwalld
 * holds a static process subject denying while a process of its cgroup
 * has one (keep_caps false). */
struct fw_sandbox_cap {
	int cap; /* CAP_* */
	const char *name;
};

extern const struct fw_sandbox_cap fw_sandbox_caps[];
extern const size_t fw_sandbox_ncaps;

/* The first of fw_sandbox_caps set in mask (bit N: capability N, as
 * CapBnd in /proc/PID/status), NULL without one. */
const struct fw_sandbox_cap *fw_sandbox_cap_in(unsigned long long mask);

#endif /* FW_SUBJECTS_RUN_H */
