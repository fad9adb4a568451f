/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Command tables for a program of subcommands, "PROG [OPTION]... COMMAND
 * [ARG]...": each command names its handler, its options and its usage,
 * and that one table dispatches, parses (one getopt per command), prints
 * PROG --help and PROG COMMAND --help, and words the errors. An option
 * before the command word is one of the program's own: it reaches the
 * command by its long name, as if given after the word, and a command that
 * does not take it refuses it. Handlers and fw_cmd_main return the
 * process's exit status (common/exitcodes.h: FW_EXIT_USAGE on a bad
 * command line). */
#ifndef FW_COMMON_CMD_H
#define FW_COMMON_CMD_H

#include <getopt.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* One option: fw_cmd_next returns its key. A letter key is also the short
 * option; keys from FW_CMD_LONG on name options with a long form only. */
struct fw_cmd_opt {
	int key;
	const char *name; /* the long option, without "--" */
	const char *arg;  /* the value's name in the help ("FILE"); NULL: a flag */
	const char *help; /* "\n" starts a line under the first */
};

#define FW_CMD_LONG    256
#define FW_CMD_VERSION (FW_CMD_LONG - 1) /* the program's --version */
#define FW_CMD_OPT_HELP                                                                            \
	{                                                                                          \
		'h', "help", NULL, "this text"                                                     \
	}
#define FW_CMD_OPTS_MAX 24 /* options of one table */

struct fw_cmd_args;

struct fw_cmd {
	const char *name;
	int (*fn)(struct fw_cmd_args *a);
	const struct fw_cmd_opt *opts; /* ends with {0}; NULL: none. -h/--help
					* is honoured whether listed or not */
	/* the synopsis after "usage: PROG ", one line a form; a line that
	 * starts with a blank continues the one above, any other is printed
	 * after "       PROG " */
	const char *usage;
	const char *summary;	/* what it does, one line or a few */
	void (*doc)(FILE *out); /* the description under the usage, or NULL */
	int max_operands;	/* after the options; -1: any number */
	int col;		/* the column of the options' help; 0: just past the widest */
	bool in_order;		/* options end at the first operand (it and the rest are
				 * a command line of their own) */
};

struct fw_cmd_prog {
	const char *name;
	const struct fw_cmd *cmds;
	size_t ncmds;
	const struct fw_cmd_opt *opts; /* the options before the command word */
	int col;		       /* as fw_cmd's */
	/* PROG --help: "usage: PROG " usage, then the commands under
	 * "commands:"; without a usage each command's synopsis is a usage
	 * line and its summary stands beside it at summary_col */
	const char *usage;
	int summary_col;
	const char *epilog;	 /* after the options, or NULL */
	const char *default_cmd; /* without a command word, or NULL: usage error */
	void (*version)(void);	 /* --version, when the options list FW_CMD_VERSION */
};

/* One run of a command, as fw_cmd_main hands it to the handler. */
struct fw_cmd_args {
	const struct fw_cmd_prog *prog;
	const struct fw_cmd *cmd;
	int argc;
	char **argv;	 /* argv[0] is the command's name */
	int key;	 /* the option fw_cmd_next returned */
	const char *arg; /* its value */
	int ind;	 /* once fw_cmd_next returned 0: the first operand */
	int status;	 /* once it returned -1: the exit status */
	/* fw_cmd_next's own */
	bool started;
	char sopts[2 * FW_CMD_OPTS_MAX + 8];
	struct option lopts[FW_CMD_OPTS_MAX + 2];
};

/* Parses argv (argv[0] is the program) and runs the command it names. */
int fw_cmd_main(const struct fw_cmd_prog *p, int argc, char **argv);

/* The next option of the command: its key (a->arg its value), 0 when the
 * options are done (a->ind the first operand; more operands than the
 * command takes are refused), or -1 when the command should exit with
 * a->status: after printing its usage for --help (0), or an error naming
 * the command and the option (FW_EXIT_USAGE). */
int fw_cmd_next(struct fw_cmd_args *a);

/* The value of the option just returned as the index of one of choices
 * (NULL-terminated), or -1 after "PROG CMD: --NAME takes A or B, not 'X'"
 * on stderr (a->status set). */
int fw_cmd_choose(struct fw_cmd_args *a, const char *const *choices);

/* "PROG CMD: " and the message on stderr; returns FW_EXIT_USAGE. */
int fw_cmd_usage_error(const struct fw_cmd_args *a, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

void fw_cmd_help(const struct fw_cmd_prog *p, const struct fw_cmd *c, FILE *out);
void fw_cmd_prog_help(const struct fw_cmd_prog *p, FILE *out);

#endif /* FW_COMMON_CMD_H */
