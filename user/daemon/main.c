// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fastwalld's command line: its command table (run, check, detach,
 * config-keys), their options, and the configuration key printers. The
 * commands themselves are fastwalld.h's. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cmd.h"
#include "common/exitcodes.h"
#include "common/log.h"
#include "config/config.h"
#include "fastwall/version.h"
#include "fastwalld.h"
#include "notify.h"

enum {
	OPT_PURGE = FW_CMD_LONG,
	OPT_MARKDOWN,
	OPT_SCHEMA,
	OPT_DOC,
};

/* clang-format off */
#define OPT_CONFIG {'c', "config", "FILE", "YAML configuration (default " FW_DEFAULT_CONFIG ")"}
#define OPT_LEVEL  {'l', "log-level", "LVL", "error, warn, info, debug (overrides the config)"}
#define OPT_FORMAT {'o', "log-format", "FMT", "text or json (overrides the config)"}
/* clang-format on */

/* run, check and detach */
struct daemon_opts {
	const char *config;
	const char *bpffs;
	const char *level;
	const char *format;
	bool purge;
};

/* The options into o: -1 when they are good, else the exit status. */
static int daemon_opts(struct fw_cmd_args *a, struct daemon_opts *o)
{
	int key;

	o->config = FW_DEFAULT_CONFIG;
	while ((key = fw_cmd_next(a)) > 0) {
		switch (key) {
		case 'c':
			o->config = a->arg;
			break;
		case 'b':
			o->bpffs = a->arg;
			break;
		case 'l':
			o->level = a->arg;
			break;
		case 'o':
			o->format = a->arg;
			break;
		case OPT_PURGE:
			o->purge = true;
			break;
		}
	}
	if (key < 0)
		return a->status;
	if (o->level && fw_log_level_parse(o->level, &fw_log_level))
		return fw_cmd_usage_error(a, "invalid log level '%s'", o->level);
	if (o->format && fw_log_format_parse(o->format, &fw_log_format))
		return fw_cmd_usage_error(a, "invalid log format '%s' (text or json)", o->format);
	return -1;
}

static int cmd_run(struct fw_cmd_args *a)
{
	struct daemon_opts o = {0};
	struct fw_daemon *d;
	int ret = daemon_opts(a, &o);

	if (ret >= 0)
		return ret;
	/* before any thread or child: journald's priorities, systemd's notify */
	fw_log_journal_detect();
	fw_notify_init();
	d = fw_daemon_new(o.config, o.level != NULL, o.format != NULL);
	if (!d)
		return FW_EXIT_FAILURE;
	ret = run(d);
	fw_daemon_free(d);
	return ret;
}

static int cmd_check(struct fw_cmd_args *a)
{
	struct daemon_opts o = {0};
	int ret = daemon_opts(a, &o);

	if (ret >= 0)
		return ret;
	/* the unit's ExecStartPre: a refused file is an error in the journal */
	fw_log_journal_detect();
	return check(o.config);
}

static int cmd_l7_conf(struct fw_cmd_args *a)
{
	struct daemon_opts o = {0};
	int ret = daemon_opts(a, &o);

	return ret >= 0 ? ret : l7_conf(o.config);
}

static int cmd_detach(struct fw_cmd_args *a)
{
	struct daemon_opts o = {0};
	int ret = daemon_opts(a, &o);

	return ret >= 0 ? ret : detach(o.config, o.bpffs, o.purge);
}

/* FILE with its marked key tables regenerated, on stdout */
static int keys_doc(const char *path)
{
	char err[FW_CFG_ERR_LEN];
	char *text = NULL;
	size_t cap = 0;
	FILE *f;
	int ret;

	f = fopen(path, "r");
	if (!f || getdelim(&text, &cap, '\0', f) < 0) {
		fprintf(stderr, "can't read %s: %s\n", path, strerror(errno));
		if (f)
			fclose(f);
		free(text);
		return FW_EXIT_FAILURE;
	}
	fclose(f);
	ret = fw_cfg_keys_doc(text, stdout, err, sizeof(err));
	if (ret)
		fprintf(stderr, "%s: %s\n", path, err);
	free(text);
	return ret ? FW_EXIT_FAILURE : FW_EXIT_OK;
}

/* config-keys --markdown | --schema | --doc FILE: the configuration key
 * tables as Markdown, as a JSON Schema, or FILE with its marked tables
 * regenerated (how docs/config.md is kept in step with the code). */
static int cmd_config_keys(struct fw_cmd_args *a)
{
	const char *doc = NULL;
	int key, what = 0;

	while ((key = fw_cmd_next(a)) > 0) {
		if (what)
			return fw_cmd_usage_error(a,
						  "takes one of --markdown, --schema, --doc FILE");
		what = key;
		doc = a->arg;
	}
	if (key < 0)
		return a->status;
	switch (what) {
	case OPT_MARKDOWN:
		fw_cfg_keys_markdown(stdout);
		return FW_EXIT_OK;
	case OPT_SCHEMA:
		fw_cfg_keys_schema(stdout);
		return FW_EXIT_OK;
	case OPT_DOC:
		return keys_doc(doc);
	}
	return fw_cmd_usage_error(a, "takes one of --markdown, --schema, --doc FILE");
}

static const struct fw_cmd_opt run_opts[] = {
	OPT_CONFIG, OPT_LEVEL, OPT_FORMAT, FW_CMD_OPT_HELP, {0},
};

static const struct fw_cmd_opt detach_opts[] = {
	OPT_CONFIG,
	{'b', "bpffs", "DIR", "pin directory for --purge (default: the configuration's)"},
	{OPT_PURGE, "purge", NULL, "also unpin the maps"},
	OPT_LEVEL,
	OPT_FORMAT,
	FW_CMD_OPT_HELP,
	{0},
};

static const struct fw_cmd_opt config_keys_opts[] = {
	{OPT_MARKDOWN, "markdown", NULL, "as Markdown tables"},
	{OPT_SCHEMA, "schema", NULL, "as a JSON Schema"},
	{OPT_DOC, "doc", "FILE", "FILE with its marked tables regenerated"},
	FW_CMD_OPT_HELP,
	{0},
};

/* What each command does, between its usage and its options in --help
 * (fastwalld.8 says the same). */
static void run_doc(FILE *out)
{
	fputs("Loads and pins the data plane, attaches it to every sandbox-facing\n"
	      "interface, programs the configured subjects and serves the DNS proxy,\n"
	      "the actions protocol and the metrics until SIGTERM; SIGHUP reloads the\n"
	      "configuration (keys marked restart-only keep their running value).\n",
	      out);
}

static void check_doc(FILE *out)
{
	fputs("Validates the configuration, prints its warnings and exits: 0 when it\n"
	      "would start, 3 when it is refused (with the key and line).\n",
	      out);
}

static void detach_doc(FILE *out)
{
	fputs("Removes fastwall's filters and its port guard from every interface;\n"
	      "--purge also unpins the maps, which ends every lease and counter.\n",
	      out);
}

static void l7_conf_doc(FILE *out)
{
	fputs("Prints the layer-7 proxy's nginx.conf as a start writes it from the\n"
	      "configuration (with the credential lines when l7.credentials is on).\n",
	      out);
}

static void config_keys_doc(FILE *out)
{
	fputs("Prints the configuration's scalar keys (type, bounds, default, reload,\n"
	      "meaning) as Markdown tables or a JSON Schema, or FILE with every table\n"
	      "between its <!-- keys: SECTION --> and <!-- end keys --> markers\n"
	      "regenerated (how docs/config.md is kept current).\n",
	      out);
}

/* fastwalld --help prints each usage with its summary beside it */
static const struct fw_cmd cmds[] = {
	{
		.name = "run",
		.fn = cmd_run,
		.doc = run_doc,
		.opts = run_opts,
		.usage = "[OPTIONS] [run]",
		.summary = "load, attach, enforce (default)",
	},
	{
		.name = "check",
		.fn = cmd_check,
		.doc = check_doc,
		.opts = run_opts,
		.usage = "[OPTIONS] check",
		.summary = "validate the configuration",
	},
	{
		.name = "detach",
		.fn = cmd_detach,
		.doc = detach_doc,
		.opts = detach_opts,
		.usage = "[OPTIONS] detach [--purge]",
		.summary = "remove fastwall from every interface\n(--purge also unpins its maps)",
	},
	{
		.name = "l7-conf",
		.fn = cmd_l7_conf,
		.doc = l7_conf_doc,
		.opts = run_opts,
		.usage = "[OPTIONS] l7-conf",
		.summary = "print the layer-7 proxy's nginx.conf",
	},
	{
		.name = "config-keys",
		.fn = cmd_config_keys,
		.doc = config_keys_doc,
		.opts = config_keys_opts,
		.usage = "config-keys --markdown | --schema | --doc FILE",
		.summary = "the configuration keys as docs",
	},
};

/* Before the word: passed on to the command, which refuses one it does
 * not take (-b names detach's pins only: run and check take the
 * configuration's bpffs). */
static const struct fw_cmd_opt global_opts[] = {
	OPT_CONFIG,
	{'b', "bpffs", "DIR",
	 "detach --purge: the pins to remove (default the\nconfiguration's datapath.bpffs); no "
	 "other command\ntakes it"},
	OPT_LEVEL,
	OPT_FORMAT,
	FW_CMD_OPT_HELP,
	{FW_CMD_VERSION, "version", NULL, "the version and map ABI"},
	{0},
};

static void version(void)
{
	printf("fastwalld %s (map ABI %d)\n", FW_VERSION, FW_ABI_VERSION);
}

static const struct fw_cmd_prog fastwalld = {
	.name = "fastwalld",
	.cmds = cmds,
	.ncmds = sizeof(cmds) / sizeof(cmds[0]),
	.opts = global_opts,
	.col = 24,
	.summary_col = 41,
	.epilog = "signals: SIGHUP reloads the configuration: the whole file is validated\n"
		  "first (a bad one changes nothing), then each changed subject is swapped\n"
		  "atomically; keys that change only on restart keep their running value.\n"
		  "In a Kubernetes ConfigMap volume an update reloads the same way. SIGTERM\n"
		  "stops and leaves the kernel state in place (fail closed).\n",
	.default_cmd = "run",
	.version = version,
};

int main(int argc, char **argv)
{
	return fw_cmd_main(&fastwalld, argc, argv);
}
