/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* Subject dispatch by address, and the pod-local address set. */
#ifndef FW_BPF_SUBJECT_H
#define FW_BPF_SUBJECT_H

#include "common.h"

/* address -> struct fw_subject. Writer: fastwalld. Reader: TC programs.
 * No prealloc: updates replace the element under RCU, so a reader sees the
 * whole old subject or the whole new one. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, FW_MAX_ADDRS);
	__type(key, struct fw_ip);
	__type(value, struct fw_subject);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fastwall_dispatch SEC(".maps");

/* cgroup v2 id -> struct fw_subject: process sandboxes (fastwall/abi.h).
 * Writer: fastwalld. Reader: the cgroup programs (bpf/cgroup.bpf.c); the
 * TC programs carry it so that it is created and pinned with the rest. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, FW_MAX_CGROUPS);
	__type(key, __u64);
	__type(value, struct fw_subject);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fastwall_cgroups SEC(".maps");

/* socket cookie -> the resolver a process subject's DNS socket addressed
 * (fastwall/abi.h). Writer: cgroup connect/sendmsg. Reader: cgroup
 * recvmsg. LRU: a socket that closes leaves its entry to age out. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, FW_MAX_CG_DNS);
	__type(key, __u64);
	__type(value, struct fw_dns_nat);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fastwall_cg_dns SEC(".maps");

/* pod-local address (besides each subject's gateway) -> struct fw_local.
 * Writer: fastwalld. Reader: TC programs. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, FW_MAX_LOCAL);
	__type(key, struct fw_ip);
	__type(value, struct fw_local);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fastwall_local SEC(".maps");

/* {proto, port} -> 1: open on pod-local addresses besides DNS. Writer:
 * fastwalld. Reader: fw_from_sandbox. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 256);
	__type(key, struct fw_port_key);
	__type(value, __u8);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fastwall_local_ports SEC(".maps");

/* subject id -> struct fw_subject_meta: what fastwalld needs to adopt its
 * subjects after a restart. Writer and reader: fastwalld; the programs never
 * touch it, it is here so that it is created and pinned with the rest. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, FW_MAX_SUBJECTS);
	__type(key, __u32);
	__type(value, struct fw_subject_meta);
	__uint(pinning, LIBBPF_PIN_BY_NAME);
} fastwall_subject_meta SEC(".maps");

static __always_inline struct fw_subject *fw_subject_of(const struct fw_ip *addr)
{
	return bpf_map_lookup_elem(&fastwall_dispatch, addr);
}

/* The pod's own addresses as seen from this subject: its gateway of the
 * packet's family, every address of the pod's namespace and the configured
 * local addresses (fastwall_local), and by prefix what only the pod's own
 * stack or its link receives: loopback (127.0.0.0/8, ::1: routable into
 * the pod with route_localnet), link-local unicast (fe80::/10), the
 * limited broadcast and link-scope multicast (224.0.0.0/24, ff02::/16;
 * neighbour discovery and MLD have passed before this). */
static __always_inline bool fw_is_pod_local(const struct fw_subject *s, __u8 family,
					    const struct fw_ip *addr)
{
	__u8 gw_flag = family == FW_FAM_V4 ? FW_SF_GATEWAY4 : FW_SF_GATEWAY6;

	if ((s->flags & gw_flag) && fw_ip_eq(addr, &s->gateway[family & 1]))
		return true;
	if (family == FW_FAM_V4) {
		__u32 a = bpf_ntohl(FW_IP_W(addr)[3]);

		if ((a >> 24) == 127 || (a >> 8) == 0xe00000 || a == 0xffffffff)
			return true;
	} else {
		__u32 w0 = bpf_ntohl(FW_IP_W(addr)[0]);

		if ((w0 | FW_IP_W(addr)[1] | FW_IP_W(addr)[2]) == 0 &&
		    FW_IP_W(addr)[3] == bpf_htonl(1))
			return true;
		if ((w0 & 0xffc00000) == 0xfe800000 || (w0 >> 16) == 0xff02)
			return true;
	}
	return bpf_map_lookup_elem(&fastwall_local, addr) != NULL;
}

#endif /* FW_BPF_SUBJECT_H */
