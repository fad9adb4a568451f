/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Which names taught a learned address, for revocation after a restart.
 * No program reads or writes these maps: they are here so that they are
 * created and pinned with the rest. */
#ifndef FW_BPF_NAMES_H
#define FW_BPF_NAMES_H

#include "common.h"

/* name id -> name, {subject, address} -> name ids. Writer and reader:
 * fastwalld. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, FW_MAX_NAMES);
	__type(key, __u32);
	__type(value, struct fw_lease_name);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fastwall_names SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, FW_MAX_LEARNED);
	__type(key, struct fw_learned_key);
	__type(value, struct fw_lease_names);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fastwall_learned_names SEC(".maps");

#endif /* FW_BPF_NAMES_H */
