// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Command tables: dispatch, one getopt_long per command built from its
 * option table, and the help texts printed from the same tables. */
#include <ctype.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/cmd.h"
#include "common/exitcodes.h"

static bool is_short(int key)
{
	return key > 0 && key < FW_CMD_LONG && isalnum(key);
}

static const struct fw_cmd_opt *opt_by_key(const struct fw_cmd_opt *opts, int key)
{
	for (; opts && opts->name; opts++)
		if (opts->key == key)
			return opts;
	return NULL;
}

static const struct fw_cmd_opt *opt_by_name(const struct fw_cmd_opt *opts, const char *name,
					    size_t len)
{
	for (; opts && opts->name; opts++)
		if (strlen(opts->name) == len && strncmp(opts->name, name, len) == 0)
			return opts;
	return NULL;
}

/* getopt_long's tables for opts, with --help (and --version when asked)
 * added when the table does not list them. */
static void build(const struct fw_cmd_opt *opts, bool in_order, bool version, char *sopts,
		  struct option *lopts)
{
	size_t s = 0, l = 0;

	if (in_order)
		sopts[s++] = '+';
	sopts[s++] = ':'; /* a missing value apart from an unknown option */
	for (const struct fw_cmd_opt *o = opts; o && o->name && l < FW_CMD_OPTS_MAX; o++) {
		if (is_short(o->key)) {
			sopts[s++] = (char)o->key;
			if (o->arg)
				sopts[s++] = ':';
		}
		lopts[l++] = (struct option){o->name, o->arg ? required_argument : no_argument,
					     NULL, o->key};
	}
	if (!opt_by_key(opts, 'h')) {
		sopts[s++] = 'h';
		lopts[l++] = (struct option){"help", no_argument, NULL, 'h'};
	}
	if (version && !opt_by_key(opts, FW_CMD_VERSION))
		lopts[l++] = (struct option){"version", no_argument, NULL, FW_CMD_VERSION};
	sopts[s] = '\0';
	lopts[l] = (struct option){0};
}

/* "  -b, --bpffs DIR   text", the text at col (0: past the widest) */
static void print_opts(FILE *out, const struct fw_cmd_opt *opts, int col)
{
	bool shorts = false;
	int widest = 0;

	for (const struct fw_cmd_opt *o = opts; o && o->name; o++) {
		shorts |= is_short(o->key);
		int w = 4 + (int)strlen(o->name) + (o->arg ? 1 + (int)strlen(o->arg) : 0);

		widest = w > widest ? w : widest;
	}
	if (!col)
		col = widest + (shorts ? 4 : 0) + 2;
	for (const struct fw_cmd_opt *o = opts; o && o->name; o++) {
		const char *h = o->help, *nl;
		int n;

		if (is_short(o->key))
			n = fprintf(out, "  -%c, --%s", o->key, o->name);
		else
			n = fprintf(out, "  %s--%s", shorts ? "    " : "", o->name);
		if (o->arg)
			n += fprintf(out, " %s", o->arg);
		fprintf(out, "%*s", n < col ? col - n : 1, "");
		while ((nl = strchr(h, '\n'))) {
			fprintf(out, "%.*s\n%*s", (int)(nl - h), h, col, "");
			h = nl + 1;
		}
		fprintf(out, "%s\n", h);
	}
}

/* "usage: PROG FORM", each next form under it */
static void print_usage(FILE *out, const char *prog, const char *usage)
{
	const char *line = usage, *nl;
	bool first = true;

	for (;;) {
		nl = strchr(line, '\n');
		if (first)
			fprintf(out, "usage: %s ", prog);
		else if (*line != ' ')
			fprintf(out, "       %s ", prog);
		fprintf(out, "%.*s\n", nl ? (int)(nl - line) : (int)strlen(line), line);
		if (!nl)
			return;
		line = nl + 1;
		first = false;
	}
}

void fw_cmd_help(const struct fw_cmd_prog *p, const struct fw_cmd *c, FILE *out)
{
	print_usage(out, p->name, c->usage);
	if (c->doc) {
		fputc('\n', out);
		c->doc(out);
	}
	if (c->opts && c->opts->name) {
		fputc('\n', out);
		print_opts(out, c->opts, c->col);
	}
}

/* the commands as usage lines, each summary beside its synopsis */
static void print_forms(const struct fw_cmd_prog *p, FILE *out)
{
	for (size_t i = 0; i < p->ncmds; i++) {
		const struct fw_cmd *c = &p->cmds[i];
		const char *s = c->summary, *nl;
		int n = fprintf(out, "%s%s %s", i ? "       " : "usage: ", p->name, c->usage);

		if (n >= p->summary_col) {
			fputc('\n', out);
			n = 0;
		}
		fprintf(out, "%*s", p->summary_col - n, "");
		while ((nl = strchr(s, '\n'))) {
			fprintf(out, "%.*s\n%*s", (int)(nl - s), s, p->summary_col, "");
			s = nl + 1;
		}
		fprintf(out, "%s\n", s);
	}
}

void fw_cmd_prog_help(const struct fw_cmd_prog *p, FILE *out)
{
	int w = 0;

	if (p->usage) {
		print_usage(out, p->name, p->usage);
		for (size_t i = 0; i < p->ncmds; i++)
			if ((int)strlen(p->cmds[i].name) > w)
				w = (int)strlen(p->cmds[i].name);
		fprintf(out, "\ncommands:\n");
		for (size_t i = 0; i < p->ncmds; i++)
			fprintf(out, "  %-*s %s\n", w + 2, p->cmds[i].name, p->cmds[i].summary);
	} else {
		print_forms(p, out);
	}
	if (p->opts && p->opts->name) {
		fprintf(out, "\noptions:\n");
		print_opts(out, p->opts, p->col);
	}
	if (p->epilog)
		fprintf(out, "\n%s", p->epilog);
}

int fw_cmd_usage_error(const struct fw_cmd_args *a, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s %s: ", a->prog->name, a->cmd->name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return FW_EXIT_USAGE;
}

/* an option of the program's, or of one of its commands */
static bool known(const struct fw_cmd_prog *p, const char *name, size_t len)
{
	if (opt_by_name(p->opts, name, len))
		return true;
	for (size_t i = 0; i < p->ncmds; i++)
		if (opt_by_name(p->cmds[i].opts, name, len))
			return true;
	return false;
}

/* What was wrong with the option getopt_long refused (argv[optind - 1]) */
static void bad_option(struct fw_cmd_args *a)
{
	const char *text = a->argv[optind - 1], *eq;
	const struct fw_cmd_opt *o;
	size_t len;

	a->status = FW_EXIT_USAGE;
	if (strncmp(text, "--", 2) != 0) {
		fw_cmd_usage_error(a, "unknown option '-%c' (see %s %s --help)", optopt,
				   a->prog->name, a->cmd->name);
		return;
	}
	text += 2;
	eq = strchr(text, '=');
	len = eq ? (size_t)(eq - text) : strlen(text);
	o = opt_by_name(a->cmd->opts, text, len);
	if (o && eq && !o->arg)
		fw_cmd_usage_error(a, "--%s takes no value", o->name);
	else if (!o && known(a->prog, text, len))
		fw_cmd_usage_error(a, "does not take --%.*s (see %s %s --help)", (int)len, text,
				   a->prog->name, a->cmd->name);
	else
		fw_cmd_usage_error(a, "unknown option '--%.*s' (see %s %s --help)", (int)len, text,
				   a->prog->name, a->cmd->name);
}

int fw_cmd_next(struct fw_cmd_args *a)
{
	const struct fw_cmd_opt *o;
	int key, extra;

	if (!a->started) {
		build(a->cmd->opts, a->cmd->in_order, false, a->sopts, a->lopts);
		a->started = true;
		optind = 0; /* glibc: start over, with the new optstring */
		opterr = 0;
	}
	key = getopt_long(a->argc, a->argv, a->sopts, a->lopts, NULL);
	a->key = key;
	a->arg = optarg;
	switch (key) {
	case -1:
		a->ind = optind;
		extra = a->argc - optind - a->cmd->max_operands;
		if (a->cmd->max_operands < 0 || extra <= 0)
			return 0;
		a->status = FW_EXIT_USAGE;
		if (a->cmd->max_operands == 0)
			fw_cmd_usage_error(a, "takes no operand '%s'", a->argv[optind]);
		else
			fw_cmd_usage_error(a, "takes at most %d operands ('%s' is one more)",
					   a->cmd->max_operands,
					   a->argv[optind + a->cmd->max_operands]);
		return -1;
	case 'h':
		fw_cmd_help(a->prog, a->cmd, stdout);
		a->status = FW_EXIT_OK;
		return -1;
	case ':':
		o = opt_by_key(a->cmd->opts, optopt);
		a->status = fw_cmd_usage_error(a, "--%s needs a value", o ? o->name : "?");
		return -1;
	case '?':
		bad_option(a);
		return -1;
	}
	return key;
}

int fw_cmd_choose(struct fw_cmd_args *a, const char *const *choices)
{
	const struct fw_cmd_opt *o = opt_by_key(a->cmd->opts, a->key);
	char list[256] = "";
	size_t used = 0;
	int i;

	for (i = 0; choices[i]; i++)
		if (strcmp(choices[i], a->arg) == 0)
			return i;
	for (i = 0; choices[i] && used < sizeof(list); i++)
		used += (size_t)snprintf(list + used, sizeof(list) - used, "%s%s",
					 !i		  ? ""
					 : choices[i + 1] ? ", "
							  : " or ",
					 choices[i]);
	a->status =
		fw_cmd_usage_error(a, "--%s takes %s, not '%s'", o ? o->name : "?", list, a->arg);
	return -1;
}

static const struct fw_cmd *cmd_by_name(const struct fw_cmd_prog *p, const char *name)
{
	for (size_t i = 0; i < p->ncmds; i++)
		if (strcmp(p->cmds[i].name, name) == 0)
			return &p->cmds[i];
	return NULL;
}

__attribute__((format(printf, 2, 3))) static int prog_usage_error(const struct fw_cmd_prog *p,
								  const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s: ", p->name);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fw_cmd_prog_help(p, stderr);
	return FW_EXIT_USAGE;
}

int fw_cmd_main(const struct fw_cmd_prog *p, int argc, char **argv)
{
	struct option lopts[FW_CMD_OPTS_MAX + 3];
	char sopts[2 * FW_CMD_OPTS_MAX + 8];
	struct fw_cmd_args a = {.prog = p};
	const struct fw_cmd_opt *o;
	const char *word;
	char **fwd;
	int nfwd = 0, key, ret = FW_EXIT_USAGE;

	/* the options before the word, each to be passed on as --NAME[=VALUE] */
	fwd = calloc((size_t)argc + 1, sizeof(*fwd));
	if (!fwd)
		return FW_EXIT_FAILURE;
	build(p->opts, true, p->version != NULL, sopts, lopts);
	optind = 0;
	opterr = 0;
	while ((key = getopt_long(argc, argv, sopts, lopts, NULL)) != -1) {
		if (key == 'h') {
			fw_cmd_prog_help(p, stdout);
			ret = FW_EXIT_OK;
			goto out;
		}
		if (key == FW_CMD_VERSION) {
			p->version();
			ret = FW_EXIT_OK;
			goto out;
		}
		if (key == ':' || key == '?') {
			o = key == ':' ? opt_by_key(p->opts, optopt) : NULL;
			if (o)
				prog_usage_error(p, "--%s needs a value", o->name);
			else
				prog_usage_error(p, "unknown option '%s'", argv[optind - 1]);
			goto out;
		}
		o = opt_by_key(p->opts, key);
		if ((o->arg ? asprintf(&fwd[nfwd], "--%s=%s", o->name, optarg)
			    : asprintf(&fwd[nfwd], "--%s", o->name)) < 0) {
			fwd[nfwd] = NULL;
			ret = FW_EXIT_FAILURE;
			goto out;
		}
		nfwd++;
	}
	word = optind < argc ? argv[optind++] : p->default_cmd;
	if (!word) {
		fw_cmd_prog_help(p, stderr);
		goto out;
	}
	a.cmd = cmd_by_name(p, word);
	if (!a.cmd) {
		prog_usage_error(p, "unknown command '%s'", word);
		goto out;
	}
	/* COMMAND, the options given before it, then what followed it */
	a.argv = calloc((size_t)(1 + nfwd + argc - optind + 1), sizeof(*a.argv));
	if (!a.argv) {
		ret = FW_EXIT_FAILURE;
		goto out;
	}
	a.argv[a.argc++] = (char *)a.cmd->name;
	for (int i = 0; i < nfwd; i++)
		a.argv[a.argc++] = fwd[i];
	for (int i = optind; i < argc; i++)
		a.argv[a.argc++] = argv[i];
	ret = a.cmd->fn(&a);
	free(a.argv);
out:
	for (int i = 0; i < nfwd; i++)
		free(fwd[i]);
	free(fwd);
	return ret;
}
