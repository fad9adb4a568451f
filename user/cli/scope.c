// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fastwall scope sign --keys FILE --key-id ID NAMESPACE SANDBOX PORT
 * fastwall scope verify --keys FILE SCOPE
 * Exit 0 on success, 1 when a scope or key ring is refused (the reason on
 * stderr), 2 on a usage error (common/exitcodes.h). -o json prints
 * {"scope"} (sign) or {"valid", "namespace", "sandbox", "port"} or
 * {"valid": false, "error"} (verify). */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "common/exitcodes.h"
#include "gateway/scope.h"
#include "scope.h"

enum { SCOPE_EXIT_REFUSED = FW_EXIT_FAILURE, SCOPE_EXIT_USAGE = FW_EXIT_USAGE };

static void json_print(json_t *o)
{
	json_dumpf(o, stdout, JSON_INDENT(2));
	printf("\n");
	json_decref(o);
}

const struct fw_cmd_opt fw_cli_scope_opts[] = {
	{'o', "output", "FMT", "text (default) or json"},
	{'k', "keys", "FILE", "key ring: one id=BASE64 per line"},
	{'i', "key-id", "ID", "sign: the key id, one of [0-9a-z]"},
	FW_CMD_OPT_HELP,
	{0},
};

static int parse_port(const char *s, unsigned long *port)
{
	char *end;

	if (!*s || *s < '0' || *s > '9')
		return -1;
	errno = 0;
	*port = strtoul(s, &end, 10);
	return errno || *end ? -1 : 0;
}

int fw_cli_scope(struct fw_cmd_args *a)
{
	static const char *const formats[] = {"text", "json", NULL};
	const char *keys = NULL, *key_id = NULL, *verb;
	struct fw_scope_keyring kr;
	char err[512], out[FW_SCOPE_TEXT_MAX];
	struct fw_scope sc;
	unsigned long port = 0;
	bool json = false;
	int opt, rc, argc = a->argc;
	char **argv = a->argv;

	/* options anywhere; "--" ends them (a namespace may start with '-') */
	while ((opt = fw_cmd_next(a)) > 0) {
		switch (opt) {
		case 'o':
			rc = fw_cmd_choose(a, formats);
			if (rc < 0)
				return a->status;
			json = rc == 1;
			break;
		case 'k':
			keys = a->arg;
			break;
		case 'i':
			key_id = a->arg;
			break;
		}
	}
	if (opt < 0)
		return a->status;
	optind = a->ind; /* the operands, past the options getopt moved ahead */
	if (optind >= argc) {
		fw_cmd_help(a->prog, a->cmd, stderr);
		return SCOPE_EXIT_USAGE;
	}
	verb = argv[optind++];
	if (!keys) {
		fprintf(stderr, "fastwall scope: --keys FILE is required\n");
		return SCOPE_EXIT_USAGE;
	}
	if (strcmp(verb, "sign") == 0) {
		if (argc - optind != 3 || !key_id) {
			fw_cmd_help(a->prog, a->cmd, stderr);
			return SCOPE_EXIT_USAGE;
		}
		if (strlen(key_id) != 1) {
			fprintf(stderr, "fastwall scope: key id '%s': %s\n", key_id,
				fw_scope_strerror(FW_SCOPE_E_KEY_ID));
			return SCOPE_EXIT_REFUSED;
		}
		if (parse_port(argv[optind + 2], &port) || port < 1 || port > 65535) {
			fprintf(stderr, "fastwall scope: port '%s': %s\n", argv[optind + 2],
				fw_scope_strerror(FW_SCOPE_E_PORT));
			return SCOPE_EXIT_REFUSED;
		}
	} else if (strcmp(verb, "verify") == 0) {
		if (argc - optind != 1) {
			fw_cmd_help(a->prog, a->cmd, stderr);
			return SCOPE_EXIT_USAGE;
		}
	} else {
		fprintf(stderr, "fastwall scope: unknown verb '%s'\n", verb);
		fw_cmd_help(a->prog, a->cmd, stderr);
		return SCOPE_EXIT_USAGE;
	}
	if (fw_scope_keyring_load(&kr, keys, err, sizeof(err))) {
		fprintf(stderr, "fastwall scope: %s\n", err);
		return SCOPE_EXIT_REFUSED;
	}
	if (verb[0] == 's') {
		const char *ns = argv[optind], *sb = argv[optind + 1];

		rc = fw_scope_sign(&kr, key_id[0], ns, strlen(ns), sb, strlen(sb), port, out,
				   sizeof(out));
		fw_scope_keyring_wipe(&kr);
		if (rc < 0) {
			fprintf(stderr, "fastwall scope: can't sign: %s\n", fw_scope_strerror(rc));
			return SCOPE_EXIT_REFUSED;
		}
		if (json)
			json_print(json_pack("{s:s}", "scope", out));
		else
			printf("%s\n", out);
		return 0;
	}
	rc = fw_scope_verify(&kr, argv[optind], strlen(argv[optind]), &sc);
	fw_scope_keyring_wipe(&kr);
	if (rc) {
		fprintf(stderr, "fastwall scope: refused: %s\n", fw_scope_strerror(rc));
		if (json)
			json_print(
				json_pack("{s:b,s:s}", "valid", 0, "error", fw_scope_strerror(rc)));
		return SCOPE_EXIT_REFUSED;
	}
	if (json)
		json_print(json_pack("{s:b,s:s,s:s,s:i}", "valid", 1, "namespace", sc.ns, "sandbox",
				     sc.sandbox, "port", (int)sc.port));
	else
		printf("%s %s %u\n", sc.ns, sc.sandbox, sc.port);
	return 0;
}
