// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fastwall hostname hash [--gateway NAME] WORKSPACE SANDBOX [SERVICE]
 * fastwall hostname parse --base-domain DOMAIN... [--gateway NAME] HOST
 * The routing name comes from --gateway, else FASTWALL_ROUTING_NAME. Exit 0
 * on success, 1 when a name or host is refused (the reason on stderr), 2 on
 * a usage error. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gateway/hostname.h"
#include "hostname.h"

enum { HOSTNAME_EXIT_REFUSED = 1, HOSTNAME_EXIT_USAGE = 2 };

#define HOSTNAME_ENV "FASTWALL_ROUTING_NAME"

const struct fw_cmd_opt fw_cli_hostname_opts[] = {
	{'g', "gateway", "NAME", "the gateway's routing name (else $" HOSTNAME_ENV ")"},
	{'d', "base-domain", "DOMAIN",
	 "parse: a base domain, or a wildcard name *.DOMAIN;\n"
	 "repeatable, tried in order"},
	FW_CMD_OPT_HELP,
	{0},
};

static int hostname_hash(const char *gw, char **names, int n)
{
	struct fw_hostname_target t;
	char label[FW_HOSTNAME_LABEL_LEN + 1];
	int rc, i;

	if (!gw) {
		fprintf(stderr, "fastwall hostname: no routing name: give --gateway NAME or set "
				"" HOSTNAME_ENV "\n");
		return HOSTNAME_EXIT_USAGE;
	}
	if (fw_hostname_routing_name_ok(gw, strlen(gw))) {
		fprintf(stderr, "fastwall hostname: routing name '%s': %s\n", gw,
			fw_hostname_strerror(FW_HOSTNAME_E_ROUTING_NAME));
		return HOSTNAME_EXIT_REFUSED;
	}
	for (i = 0; i < n; i++) {
		static const char *const what[] = {"workspace", "sandbox", "service"};

		if (fw_hostname_name_ok(names[i], strlen(names[i]))) {
			fprintf(stderr, "fastwall hostname: %s '%s': %s\n", what[i], names[i],
				fw_hostname_strerror(FW_HOSTNAME_E_NAME));
			return HOSTNAME_EXIT_REFUSED;
		}
	}
	rc = fw_hostname_target_set(&t, names[0], names[1], n > 2 ? names[2] : NULL);
	if (!rc)
		rc = fw_hostname_hash(gw, strlen(gw), &t, label);
	if (rc) {
		fprintf(stderr, "fastwall hostname: %s\n", fw_hostname_strerror(rc));
		return HOSTNAME_EXIT_REFUSED;
	}
	printf("%s\n", label);
	return 0;
}

static int hostname_parse(const struct fw_hostname_domains *d, const char *gw, const char *host)
{
	struct fw_hostname_parsed p;
	int rc;

	if (!d->count) {
		fprintf(stderr, "fastwall hostname: parse needs --base-domain DOMAIN\n");
		return HOSTNAME_EXIT_USAGE;
	}
	rc = fw_hostname_parse(d, gw != NULL, host, strlen(host), &p);
	if (!rc && p.kind == FW_HOSTNAME_HASHED)
		rc = -FW_HOSTNAME_E_HASHED;
	if (rc) {
		fprintf(stderr, "fastwall hostname: '%s': not a service host: %s\n", host,
			fw_hostname_strerror(rc));
		return HOSTNAME_EXIT_REFUSED;
	}
	printf("%s %s %s\n", p.target.workspace, p.target.sandbox,
	       p.target.service[0] ? p.target.service : "-");
	return 0;
}

int fw_cli_hostname(struct fw_cmd_args *a)
{
	struct fw_hostname_domains d = {0};
	const char *gw = NULL, *verb;
	int opt, rc, n, argc = a->argc;
	char **argv = a->argv;

	while ((opt = fw_cmd_next(a)) > 0) {
		switch (opt) {
		case 'g':
			gw = a->arg;
			break;
		case 'd':
			rc = fw_hostname_domains_add(&d, a->arg, strlen(a->arg));
			if (rc) {
				fprintf(stderr, "fastwall hostname: base domain '%s': %s\n", a->arg,
					fw_hostname_strerror(rc));
				return HOSTNAME_EXIT_USAGE;
			}
			break;
		}
	}
	if (opt < 0)
		return a->status;
	optind = a->ind; /* the operands, past the options getopt moved ahead */
	/* flag, then environment; an empty variable counts as unset */
	if (!gw) {
		gw = getenv(HOSTNAME_ENV);
		if (gw && !*gw)
			gw = NULL;
	}
	if (optind >= argc) {
		fw_cmd_help(a->prog, a->cmd, stderr);
		return HOSTNAME_EXIT_USAGE;
	}
	verb = argv[optind++];
	n = argc - optind;
	if (strcmp(verb, "hash") == 0) {
		if (n < 2 || n > 3) {
			fw_cmd_help(a->prog, a->cmd, stderr);
			return HOSTNAME_EXIT_USAGE;
		}
		return hostname_hash(gw, argv + optind, n);
	}
	if (strcmp(verb, "parse") == 0) {
		if (n != 1) {
			fw_cmd_help(a->prog, a->cmd, stderr);
			return HOSTNAME_EXIT_USAGE;
		}
		return hostname_parse(&d, gw, argv[optind]);
	}
	fprintf(stderr, "fastwall hostname: unknown verb '%s'\n", verb);
	fw_cmd_help(a->prog, a->cmd, stderr);
	return HOSTNAME_EXIT_USAGE;
}
