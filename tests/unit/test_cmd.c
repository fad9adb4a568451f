// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Command tables (common/cmd.h): what a user of a program built on one
 * sees. The command its word names runs with the options given before the
 * word by their long names; every command prints its own --help; a bad
 * option is refused naming the command and the option, exit 2. */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <stdio.h>
#include <string.h>

#include "common/cmd.h"
#include "common/exitcodes.h"

enum { OPT_FLAG = FW_CMD_LONG };

/* what the last handler saw */
static struct {
	const char *cmd;
	char seen[512]; /* "key=value " per option, then "| operands" */
} got;

static int record(struct fw_cmd_args *a)
{
	static const char *const colors[] = {"red", "green", "blue", NULL};
	size_t n = 0;
	int key;

	got.cmd = a->cmd->name;
	got.seen[0] = '\0';
	while ((key = fw_cmd_next(a)) > 0) {
		if (key == 'k' && fw_cmd_choose(a, colors) < 0)
			return a->status;
		n += (size_t)snprintf(got.seen + n, sizeof(got.seen) - n, "%c=%s ",
				      key == OPT_FLAG ? 'F' : key, a->arg ? a->arg : "");
	}
	if (key < 0)
		return a->status;
	n += (size_t)snprintf(got.seen + n, sizeof(got.seen) - n, "|");
	for (int i = a->ind; i < a->argc; i++)
		n += (size_t)snprintf(got.seen + n, sizeof(got.seen) - n, " %s", a->argv[i]);
	return 42;
}

static const struct fw_cmd_opt show_opts[] = {
	{'d', "dir", "DIR", "where"},
	{'k', "color", "C", "red, green or blue\nsecond line"},
	{OPT_FLAG, "flag", NULL, "a long-only flag"},
	FW_CMD_OPT_HELP,
	{0},
};

static const struct fw_cmd_opt exec_opts[] = {
	{'n', "name", "NAME", "its name"},
	{0},
};

static const struct fw_cmd cmds[] = {
	{.name = "show",
	 .fn = record,
	 .opts = show_opts,
	 .usage = "show [--dir DIR]",
	 .summary = "show things"},
	{.name = "exec",
	 .fn = record,
	 .opts = exec_opts,
	 .usage = "exec [--name NAME] -- CMD\n     [ARGS]",
	 .summary = "run CMD",
	 .max_operands = -1,
	 .in_order = true},
};

static const struct fw_cmd_opt prog_opts[] = {
	{'d', "dir", "DIR", "where"},
	{'v', "verbose", NULL, "more"},
	FW_CMD_OPT_HELP,
	{0},
};

static const struct fw_cmd_prog prog = {
	.name = "tool",
	.cmds = cmds,
	.ncmds = 2,
	.opts = prog_opts,
	.usage = "[--dir DIR] COMMAND",
};

static int run_argv(const struct fw_cmd_prog *p, char **argv)
{
	int argc = 0;

	while (argv[argc])
		argc++;
	got.cmd = NULL;
	return fw_cmd_main(p, argc, argv);
}

Test(cmd, the_word_picks_the_command)
{
	char *argv[] = {"tool", "show", "-d", "/x", "--flag", NULL};

	cr_assert_eq(run_argv(&prog, argv), 42);
	cr_assert_str_eq(got.cmd, "show");
	cr_assert_str_eq(got.seen, "d=/x F= |");
}

Test(cmd, options_before_the_word_reach_the_command_by_long_name)
{
	char *argv[] = {"tool", "-d", "/before", "show", "--color=red", NULL};

	cr_assert_eq(run_argv(&prog, argv), 42);
	cr_assert_str_eq(got.seen, "d=/before k=red |");
}

Test(cmd, options_after_operands_and_in_order_commands)
{
	char *show[] = {"tool", "show", "--flag", NULL};
	char *exec[] = {"tool", "exec", "--name", "w", "sh", "--name", "x", NULL};

	cr_assert_eq(run_argv(&prog, show), 42);
	/* exec's options end at its first operand: the rest is CMD's */
	cr_assert_eq(run_argv(&prog, exec), 42);
	cr_assert_str_eq(got.seen, "n=w | sh --name x");
}

Test(cmd, a_command_with_no_operands_refuses_one, .init = cr_redirect_stderr)
{
	char *argv[] = {"tool", "show", "extra", NULL};

	cr_assert_eq(run_argv(&prog, argv), FW_EXIT_USAGE);
	fflush(stderr);
	cr_assert_stderr_eq_str("tool show: takes no operand 'extra'\n");
}

Test(cmd, every_command_prints_its_own_help, .init = cr_redirect_stdout)
{
	char *show[] = {"tool", "show", "--help", NULL};
	char *exec[] = {"tool", "exec", "-h", NULL};

	cr_assert_eq(run_argv(&prog, show), FW_EXIT_OK);
	/* exec lists no --help, yet takes it */
	cr_assert_eq(run_argv(&prog, exec), FW_EXIT_OK);
	fflush(stdout);
	cr_assert_stdout_eq_str("usage: tool show [--dir DIR]\n"
				"\n"
				"  -d, --dir DIR  where\n"
				"  -k, --color C  red, green or blue\n"
				"                 second line\n"
				"      --flag     a long-only flag\n"
				"  -h, --help     this text\n"
				"usage: tool exec [--name NAME] -- CMD\n"
				"     [ARGS]\n"
				"\n"
				"  -n, --name NAME  its name\n");
}

Test(cmd, an_unknown_option_names_the_command, .init = cr_redirect_stderr)
{
	char *argv[] = {"tool", "show", "--nosuch", NULL};

	cr_assert_eq(run_argv(&prog, argv), FW_EXIT_USAGE);
	fflush(stderr);
	cr_assert_stderr_eq_str("tool show: unknown option '--nosuch' (see tool show --help)\n");
}

Test(cmd, a_program_option_the_command_does_not_take, .init = cr_redirect_stderr)
{
	char *before[] = {"tool", "-v", "show", NULL};
	char *other[] = {"tool", "exec", "--flag", "--", "true", NULL};

	/* -v means --verbose before the word; show has no --verbose */
	cr_assert_eq(run_argv(&prog, before), FW_EXIT_USAGE);
	/* --flag is show's */
	cr_assert_eq(run_argv(&prog, other), FW_EXIT_USAGE);
	fflush(stderr);
	cr_assert_stderr_eq_str("tool show: does not take --verbose (see tool show --help)\n"
				"tool exec: does not take --flag (see tool exec --help)\n");
}

Test(cmd, values_missing_unwanted_or_not_among_the_choices, .init = cr_redirect_stderr)
{
	char *missing[] = {"tool", "show", "--dir", NULL};
	char *unwanted[] = {"tool", "show", "--flag=yes", NULL};
	char *choice[] = {"tool", "show", "-k", "pink", NULL};
	char *unknown_short[] = {"tool", "show", "-z", NULL};

	cr_assert_eq(run_argv(&prog, missing), FW_EXIT_USAGE);
	cr_assert_eq(run_argv(&prog, unwanted), FW_EXIT_USAGE);
	cr_assert_eq(run_argv(&prog, choice), FW_EXIT_USAGE);
	cr_assert_eq(run_argv(&prog, unknown_short), FW_EXIT_USAGE);
	fflush(stderr);
	cr_assert_stderr_eq_str("tool show: --dir needs a value\n"
				"tool show: --flag takes no value\n"
				"tool show: --color takes red, green or blue, not 'pink'\n"
				"tool show: unknown option '-z' (see tool show --help)\n");
}

Test(cmd, program_help_lists_the_table, .init = cr_redirect_stdout)
{
	char *argv[] = {"tool", "--help", NULL};

	cr_assert_eq(run_argv(&prog, argv), FW_EXIT_OK);
	fflush(stdout);
	cr_assert_stdout_eq_str("usage: tool [--dir DIR] COMMAND\n"
				"\n"
				"commands:\n"
				"  show   show things\n"
				"  exec   run CMD\n"
				"\n"
				"options:\n"
				"  -d, --dir DIR  where\n"
				"  -v, --verbose  more\n"
				"  -h, --help     this text\n");
}

static const struct fw_cmd forms_cmds[] = {
	{.name = "serve", .fn = record, .usage = "[OPTIONS] [serve]", .summary = "the default"},
	{.name = "purge",
	 .fn = record,
	 .usage = "[OPTIONS] purge [--everything-at-once]",
	 .summary = "remove it\n(all of it)"},
};

static const struct fw_cmd_prog forms = {
	.name = "svc",
	.cmds = forms_cmds,
	.ncmds = 2,
	.summary_col = 30,
	.epilog = "signals: none\n",
	.default_cmd = "serve",
};

Test(cmd, usage_forms_with_summaries_and_a_default, .init = cr_redirect_stdout)
{
	char *help[] = {"svc", "-h", NULL};
	char *none[] = {"svc", NULL};

	cr_assert_eq(run_argv(&forms, help), FW_EXIT_OK);
	cr_assert_eq(run_argv(&forms, none), 42);
	cr_assert_str_eq(got.cmd, "serve", "no word: the default command");
	fflush(stdout);
	cr_assert_stdout_eq_str("usage: svc [OPTIONS] [serve]  the default\n"
				"       svc [OPTIONS] purge [--everything-at-once]\n"
				"                              remove it\n"
				"                              (all of it)\n"
				"\n"
				"signals: none\n");
}

Test(cmd, an_unknown_command_or_none, .init = cr_redirect_stderr)
{
	char *unknown[] = {"tool", "frob", NULL};
	char *none[] = {"tool", "-d", "/x", NULL};

	cr_assert_eq(run_argv(&prog, unknown), FW_EXIT_USAGE);
	cr_assert_eq(run_argv(&prog, none), FW_EXIT_USAGE);
	cr_assert_null(got.cmd);
}
