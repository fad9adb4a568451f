/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* fastwall explain SRC DST [PORT/PROTO] [--iface IF] [--sport N]
 * fastwall explain --cgroup PATH DST [PORT/PROTO]
 * The verdict the data plane would give such a packet and what decided
 * it, from the pinned maps (datapath/explain.h), as text or JSON. */
#ifndef FW_CLI_EXPLAIN_H
#define FW_CLI_EXPLAIN_H

#include <stdbool.h>

#include "datapath/datapath.h"

struct fw_explain_args {
	const char *iface;  /* --iface: where the packet arrives */
	const char *cgroup; /* --cgroup: a process sandbox's directory */
	const char *config; /* fastwalld's configuration, for the rule text */
	const char *sport;  /* --sport */
	bool json;
	int argc; /* the operands: [SRC] DST [PORT/PROTO] */
	char **argv;
};

/* An exit status of common/exitcodes.h: FW_EXIT_OK when the packet would
 * pass, FW_EXIT_DROP when it would drop, FW_EXIT_USAGE on bad operands. */
int fw_cli_explain(struct fw_dp *dp, const struct fw_explain_args *a);

#endif /* FW_CLI_EXPLAIN_H */
