/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Layer-7 pinning's maps (fastwall/abi.h, "Layer-7 pinning"): the
 * pinned ports and the proxy's connection table, shared by the TC
 * programs and the cgroup programs. */
#ifndef FW_BPF_L7_H
#define FW_BPF_L7_H

#include "common.h"

/* struct fw_port_key {TCP, port} -> struct fw_l7_port. Writer:
 * fastwalld. Readers: fw_from_sandbox, the cgroup programs. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, FW_MAX_L7_PORTS);
	__type(key, struct fw_port_key);
	__type(value, struct fw_l7_port);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fastwall_l7_ports SEC(".maps");

/* struct fw_l7_nat_key -> struct fw_l7_nat: a plain hash, so that no
 * sandbox's connections push out another's. Writers: fw_from_sandbox,
 * the cgroup sockops program, fastwalld. Readers: the TC programs, the
 * cgroup programs, the proxy. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, FW_MAX_L7_NAT);
	__type(key, struct fw_l7_nat_key);
	__type(value, struct fw_l7_nat);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fastwall_l7_nat SEC(".maps");

#endif /* FW_BPF_L7_H */
