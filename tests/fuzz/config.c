// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* libFuzzer target: arbitrary bytes as a fastwalld configuration file. A
 * load must either succeed or fail with a "name:line:" message, and leave
 * nothing allocated after fw_cfg_free. */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char err[FW_CFG_ERR_LEN];
	struct fw_cfg cfg;
	int ret;

	ret = fw_cfg_load_buffer((const char *)data, size, "fuzz.yaml", &cfg, err, sizeof(err));
	if (ret == 0) {
		/* a loaded subject must always fit the data plane's limits:
		 * addresses, or (a process sandbox) a cgroup and none */
		for (size_t i = 0; i < cfg.nsubjects; i++) {
			const struct fw_subject_spec *sp = &cfg.subjects[i];

			if ((!sp->naddrs && !sp->cgroup[0]) || (sp->naddrs && sp->cgroup[0]) ||
			    sp->naddrs > FW_SUBJECT_MAX_ADDRS || !sp->name[0])
				abort();
		}
	} else {
		if (ret != -EINVAL && ret != -ENOMEM)
			abort();
		if (strncmp(err, "fuzz.yaml:", 10) != 0)
			abort();
		/* a failed load leaves defaults behind */
		if (cfg.nsubjects || cfg.overlay.nrules || cfg.subjects)
			abort();
	}
	fw_cfg_free(&cfg);
	fw_cfg_free(&cfg);
	return 0;
}
