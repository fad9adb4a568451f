// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fastwalld: loads and pins the data plane, attaches it to every
 * sandbox-facing interface (including ports that appear later), programs
 * the static subjects of its YAML config, reloads them on SIGHUP, runs the
 * DNS proxy (its own worker threads) and the lease refresh, and reports
 * deny events. One event loop thread (common/loop.h) besides the proxy's,
 * the HTTP server's and the metrics listener's (metrics.h): signals, link
 * events and the deny-event ring are its watches; the actions tick, the
 * reaper and the lease refresh round are its timers. This file holds the
 * commands (run, check, detach, config-keys); daemon.h says which file
 * does which job of run. */
#include <errno.h>
#include <getopt.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/exitcodes.h"
#include "common/log.h"
#include "daemon.h"
#include "fastwall/version.h"

#define FW_DEFAULT_CONFIG "/etc/fastwall/fastwalld.yaml"

/* Removes fastwall's filters from every interface; --purge also unpins. */
static int detach(const char *config_path, const char *bpffs, bool purge)
{
	struct if_nameindex *ifs = if_nameindex(), *i;
	char errbuf[FW_CFG_ERR_LEN];
	struct fw_cfg cfg;
	int n = 0;

	fw_dp_quiet();
	fw_cfg_init(&cfg);
	if (!bpffs && config_path && access(config_path, R_OK) == 0) {
		if (fw_cfg_load_file(config_path, &cfg, errbuf, sizeof(errbuf))) {
			fw_err("%s", errbuf);
			return FW_EXIT_CONFIG;
		}
		bpffs = cfg.bpffs;
	}
	if (!bpffs)
		bpffs = FW_DEFAULT_BPFFS;
	for (i = ifs; i && i->if_index; i++) {
		if (fw_dp_detach(i->if_index) == 0) {
			fw_info("detached from %s", i->if_name);
			n++;
		}
		if (fw_guard_detach(i->if_index) == 0) {
			fw_info("guard detached from %s", i->if_name);
			n++;
		}
	}
	if_freenameindex(ifs);
	fw_info("detached from %d interfaces", n);
	if (cfg.processes_enabled)
		fw_procs_detach(&cfg);
	if (purge && fw_dp_purge(bpffs) == 0)
		fw_info("unpinned maps under %s", bpffs);
	fw_cfg_free(&cfg);
	return FW_EXIT_OK;
}

static int check(const char *config_path)
{
	char errbuf[FW_CFG_ERR_LEN];
	struct fw_cfg cfg;

	fw_cfg_init(&cfg);
	if (fw_cfg_load_file(config_path, &cfg, errbuf, sizeof(errbuf))) {
		fprintf(stderr, "%s\n", errbuf);
		return FW_EXIT_CONFIG;
	}
	cfg_warnings(&cfg, stderr);
	printf("%s: ok, %zu static subjects%s\n", config_path, cfg.nsubjects,
	       cfg.nwarnings ? " (with warnings)" : "");
	fw_cfg_free(&cfg);
	return FW_EXIT_OK;
}

/* config-keys --markdown | --schema | --doc FILE: the configuration key
 * tables as Markdown, as a JSON Schema, or FILE with its marked tables
 * regenerated (how docs/config.md is kept in step with the code). */
static int config_keys(int argc, char **argv)
{
	char err[FW_CFG_ERR_LEN];
	char *text = NULL;
	size_t cap = 0;
	FILE *f;
	int ret;

	if (argc == 2 && strcmp(argv[1], "--markdown") == 0) {
		fw_cfg_keys_markdown(stdout);
		return FW_EXIT_OK;
	}
	if (argc == 2 && strcmp(argv[1], "--schema") == 0) {
		fw_cfg_keys_schema(stdout);
		return FW_EXIT_OK;
	}
	if (argc != 3 || strcmp(argv[1], "--doc") != 0) {
		fprintf(stderr,
			"usage: fastwalld config-keys --markdown | --schema | --doc FILE\n");
		return FW_EXIT_USAGE;
	}
	f = fopen(argv[2], "r");
	if (!f || getdelim(&text, &cap, '\0', f) < 0) {
		fprintf(stderr, "can't read %s: %s\n", argv[2], strerror(errno));
		if (f)
			fclose(f);
		free(text);
		return FW_EXIT_FAILURE;
	}
	fclose(f);
	ret = fw_cfg_keys_doc(text, stdout, err, sizeof(err));
	if (ret)
		fprintf(stderr, "%s: %s\n", argv[2], err);
	free(text);
	return ret ? FW_EXIT_FAILURE : FW_EXIT_OK;
}

static void usage(FILE *out)
{
	fprintf(out,
		"usage: fastwalld [OPTIONS] [run]         load, attach, enforce (default)\n"
		"       fastwalld [OPTIONS] check         validate the configuration\n"
		"       fastwalld [OPTIONS] detach [--purge]\n"
		"                                         remove fastwall from every interface\n"
		"                                         (--purge also unpins its maps)\n"
		"       fastwalld config-keys --markdown | --schema | --doc FILE\n"
		"                                         the configuration keys as docs\n"
		"\n"
		"options:\n"
		"  -c, --config FILE     YAML configuration (default " FW_DEFAULT_CONFIG ")\n"
		"  -b, --bpffs DIR       pin directory for detach --purge\n"
		"  -l, --log-level LVL   error, warn, info, debug (overrides the config)\n"
		"  -o, --log-format FMT  text or json (overrides the config)\n"
		"  -h, --help            this text\n"
		"      --version         the version and map ABI\n"
		"\n"
		"signals: SIGHUP reloads static subjects atomically; SIGTERM stops and\n"
		"leaves the kernel state in place (fail closed).\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{"config", required_argument, NULL, 'c'},
		{"bpffs", required_argument, NULL, 'b'},
		{"log-level", required_argument, NULL, 'l'},
		{"log-format", required_argument, NULL, 'o'},
		{"purge", no_argument, NULL, 'P'},
		{"help", no_argument, NULL, 'h'},
		{"version", no_argument, NULL, 'V'},
		{},
	};
	struct fw_daemon *d;
	const char *bpffs = NULL, *level = NULL, *format = NULL, *cmd = "run";
	bool purge = false;
	int c, ret;

	if (argc >= 2 && strcmp(argv[1], "config-keys") == 0)
		return config_keys(argc - 1, argv + 1);
	while ((c = getopt_long(argc, argv, "c:b:l:o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'c':
			break;
		case 'b':
			bpffs = optarg;
			break;
		case 'l':
			level = optarg;
			break;
		case 'o':
			format = optarg;
			break;
		case 'P':
			purge = true;
			break;
		case 'h':
			usage(stdout);
			return FW_EXIT_OK;
		case 'V':
			printf("fastwalld %s (map ABI %d)\n", FW_VERSION, FW_ABI_VERSION);
			return FW_EXIT_OK;
		default:
			usage(stderr);
			return FW_EXIT_USAGE;
		}
	}
	d = calloc(1, sizeof(*d));
	if (!d)
		return FW_EXIT_FAILURE;
	d->config_path = FW_DEFAULT_CONFIG;
	optind = 1;
	while ((c = getopt_long(argc, argv, "c:b:l:o:h", opts, NULL)) != -1)
		if (c == 'c')
			d->config_path = optarg;
	if (optind < argc)
		cmd = argv[optind++];
	if (optind < argc) {
		fprintf(stderr, "fastwalld: unexpected argument '%s'\n", argv[optind]);
		usage(stderr);
		free(d);
		return FW_EXIT_USAGE;
	}
	/* an option the command does not use is refused, not ignored: -b
	 * names the pins of detach only (run and check take the
	 * configuration's bpffs), --purge belongs to detach */
	if ((bpffs || purge) && strcmp(cmd, "detach") != 0) {
		fprintf(stderr,
			"fastwalld: %s applies to detach only (%s uses the configuration's "
			"bpffs)\n",
			bpffs ? "-b/--bpffs" : "--purge", cmd);
		free(d);
		return FW_EXIT_USAGE;
	}
	if (level && fw_log_level_parse(level, &fw_log_level)) {
		fprintf(stderr, "fastwalld: invalid log level '%s'\n", level);
		free(d);
		return FW_EXIT_USAGE;
	}

	if (format && fw_log_format_parse(format, &fw_log_format)) {
		fprintf(stderr, "fastwalld: invalid log format '%s' (text or json)\n", format);
		free(d);
		return FW_EXIT_USAGE;
	}

	if (strcmp(cmd, "run") == 0) {
		d->level_forced = level != NULL;
		d->format_forced = format != NULL;
		ret = run(d);
	} else if (strcmp(cmd, "check") == 0) {
		ret = check(d->config_path);
	} else if (strcmp(cmd, "detach") == 0) {
		ret = detach(d->config_path, bpffs, purge);
	} else {
		fprintf(stderr, "fastwalld: unknown command '%s'\n", cmd);
		usage(stderr);
		ret = FW_EXIT_USAGE;
	}
	/* first: its requests read everything below */
	fw_metrics_stop(d->metrics);
	fw_http_stop(d->http);
	fw_dnsp_stop(d->dnsp);
	if (d->actions_on)
		fw_actions_fini(&d->actions);
	fw_learn_free(d->learn);
	fw_monitor_stop(d->monitor);
	ring_buffer__free(d->events);
	fw_reg_free(&d->reg);
	fw_guard_close(d->guard);
	fw_dp_close(d->dp);
	fw_cfg_free(&d->cfg);
	fw_loop_free(d->loop);
	if (d->link_fd > 0)
		close(d->link_fd);
	fw_ifset_free(&d->attached);
	free(d->pod_addrs);
	free(d);
	return ret;
}
