/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The exit statuses of fastwalld and fastwall, one table for both (and
 * their man pages). A number keeps its meaning across releases: scripts
 * test for them. `fastwall run` passes its command's status on instead
 * (FW_EXIT_RUN_*: its own failures, as env(1) and timeout(1)). */
#ifndef FW_COMMON_EXITCODES_H
#define FW_COMMON_EXITCODES_H

enum fw_exit {
	FW_EXIT_OK = 0,
	FW_EXIT_FAILURE = 1,	  /* at run time; a refused scope */
	FW_EXIT_USAGE = 2,	  /* bad command line: unknown option, command or argument */
	FW_EXIT_CONFIG = 3,	  /* invalid configuration file */
	FW_EXIT_KERNEL = 4,	  /* the kernel refused a load, pin or attach */
	FW_EXIT_NOSTATE = 5,	  /* nothing pinned under the directory */
	FW_EXIT_ABI = 6,	  /* pins of another map ABI (the message says which) */
	FW_EXIT_DROP = 7,	  /* fastwall explain: the packet would be dropped */
	FW_EXIT_RUN_OWN = 125,	  /* fastwall run itself failed */
	FW_EXIT_RUN_NOEXEC = 126, /* fastwall run: the command can't be run */
	FW_EXIT_RUN_NOENT = 127,  /* fastwall run: no such command */
};

#endif /* FW_COMMON_EXITCODES_H */
