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

static void hostname_usage(FILE *out)
{
	fprintf(out,
		"usage: fastwall hostname hash [--gateway NAME] WORKSPACE SANDBOX [SERVICE]\n"
		"       fastwall hostname parse --base-domain DOMAIN... [--gateway NAME] HOST\n\n"
		"  -g, --gateway NAME        the gateway's routing name (else $" HOSTNAME_ENV ")\n"
		"  -d, --base-domain DOMAIN  parse: a base domain, or a wildcard name *.DOMAIN;\n"
		"                            repeatable, tried in order\n"
		"  -h, --help                this text\n");
}

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

int fw_cli_hostname(int argc, char **argv)
{
	static const struct option opts[] = {
		{"gateway", required_argument, NULL, 'g'},
		{"base-domain", required_argument, NULL, 'd'},
		{"help", no_argument, NULL, 'h'},
		{},
	};
	struct fw_hostname_domains d = {0};
	const char *gw = NULL, *verb;
	int opt, rc, n;

	optind = 1;
	while ((opt = getopt_long(argc, argv, "g:d:h", opts, NULL)) != -1) {
		switch (opt) {
		case 'g':
			gw = optarg;
			break;
		case 'd':
			rc = fw_hostname_domains_add(&d, optarg, strlen(optarg));
			if (rc) {
				fprintf(stderr, "fastwall hostname: base domain '%s': %s\n", optarg,
					fw_hostname_strerror(rc));
				return HOSTNAME_EXIT_USAGE;
			}
			break;
		case 'h':
			hostname_usage(stdout);
			return 0;
		default:
			hostname_usage(stderr);
			return HOSTNAME_EXIT_USAGE;
		}
	}
	/* flag, then environment; an empty variable counts as unset */
	if (!gw) {
		gw = getenv(HOSTNAME_ENV);
		if (gw && !*gw)
			gw = NULL;
	}
	if (optind >= argc) {
		hostname_usage(stderr);
		return HOSTNAME_EXIT_USAGE;
	}
	verb = argv[optind++];
	n = argc - optind;
	if (strcmp(verb, "hash") == 0) {
		if (n < 2 || n > 3) {
			hostname_usage(stderr);
			return HOSTNAME_EXIT_USAGE;
		}
		return hostname_hash(gw, argv + optind, n);
	}
	if (strcmp(verb, "parse") == 0) {
		if (n != 1) {
			hostname_usage(stderr);
			return HOSTNAME_EXIT_USAGE;
		}
		return hostname_parse(&d, gw, argv[optind]);
	}
	fprintf(stderr, "fastwall hostname: unknown verb '%s'\n", verb);
	hostname_usage(stderr);
	return HOSTNAME_EXIT_USAGE;
}
