/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The settings record fastwalld writes for every program (struct
 * fw_config). fw_config() returns it, or NULL before fastwalld wrote it. */
#ifndef FW_BPF_CONFIG_H
#define FW_BPF_CONFIG_H

#include "common.h"

/* key 0 -> struct fw_config. Writer: fastwalld. Reader: every program. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fw_config);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fastwall_config SEC(".maps");

static __always_inline struct fw_config *fw_config(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&fastwall_config, &zero);
}

#endif /* FW_BPF_CONFIG_H */
