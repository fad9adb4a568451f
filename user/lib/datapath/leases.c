// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* What the learner writes: leases, their port sets and names, and the
 * connection records (see leases.h). */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>

#include <bpf/bpf.h>

#include "common/clock.h"
#include "common/log.h"
#include "datapath/leases.h"

int fw_dp_lease_put(struct fw_dp *dp, __u32 id, const struct fw_ip *addr, __u64 expires_ns,
		    __u32 portset)
{
	struct fw_learned_key k = {.subject = id, .addr = *addr};
	struct fw_lease v = {
		.expires_ns = expires_ns,
		.learned_ns = fw_now_ns(),
		.portset = portset,
	};

	return fw_dp_update(dp->learned_fd, &k, &v, BPF_ANY, "fastwall_learned");
}

int fw_dp_learned_put(struct fw_dp *dp, __u32 id, const struct fw_ip *addr, __u64 expires_ns)
{
	return fw_dp_lease_put(dp, id, addr, expires_ns, 0);
}

int fw_dp_lports_put(struct fw_dp *dp, __u32 id, __u32 set, const __u16 *ports, size_t n)
{
	__u8 one = 1;

	for (size_t i = 0; i < n; i++) {
		struct fw_port_rule_key k = {.subject = id, .portset = set, .port = ports[i]};
		int err = fw_dp_update(dp->learned_ports_fd, &k, &one, BPF_ANY,
				       "fastwall_learned_ports");

		if (err)
			return err;
	}
	return 0;
}

void fw_dp_lports_del(struct fw_dp *dp, __u32 id, __u32 set, const __u16 *ports, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct fw_port_rule_key k = {.subject = id, .portset = set, .port = ports[i]};

		bpf_map_delete_elem(dp->learned_ports_fd, &k);
	}
}

int fw_dp_learned_del(struct fw_dp *dp, __u32 id, const struct fw_ip *addr)
{
	struct fw_learned_key k = {.subject = id, .addr = *addr};

	if (bpf_map_delete_elem(dp->learned_fd, &k) && errno != ENOENT)
		return -errno;
	return 0;
}

int fw_dp_learned_scan(struct fw_dp *dp, fw_dp_scan_fn fn, void *ctx)
{
	return fw_dp_scan(dp->learned_fd, fn, ctx);
}

int fw_dp_lports_scan(struct fw_dp *dp, fw_dp_scan_fn fn, void *ctx)
{
	return fw_dp_scan(dp->learned_ports_fd, fn, ctx);
}

int fw_dp_conns_scan(struct fw_dp *dp, fw_dp_scan_fn fn, void *ctx)
{
	return fw_dp_scan(dp->conns_fd, fn, ctx);
}

int fw_dp_conn_del(struct fw_dp *dp, const struct fw_conn_key *k)
{
	return fw_dp_delete(dp->conns_fd, k);
}

int fw_dp_conn_update(struct fw_dp *dp, const struct fw_conn_key *k, const struct fw_conn *v)
{
	return bpf_map_update_elem(dp->conns_fd, k, v, BPF_EXIST) ? -errno : 0;
}

int fw_dp_name_add(struct fw_dp *dp, __u32 id, const struct fw_lease_name *v)
{
	return bpf_map_update_elem(dp->names_fd, &id, v, BPF_NOEXIST) ? -errno : 0;
}

int fw_dp_name_del(struct fw_dp *dp, __u32 id)
{
	return fw_dp_delete(dp->names_fd, &id);
}

int fw_dp_names_scan(struct fw_dp *dp, fw_dp_scan_fn fn, void *ctx)
{
	return fw_dp_scan(dp->names_fd, fn, ctx);
}

int fw_dp_lease_names_put(struct fw_dp *dp, const struct fw_learned_key *k,
			  const struct fw_lease_names *v)
{
	return bpf_map_update_elem(dp->learned_names_fd, k, v, BPF_ANY) ? -errno : 0;
}

int fw_dp_lease_names_get(struct fw_dp *dp, const struct fw_learned_key *k,
			  struct fw_lease_names *out)
{
	return fw_dp_lookup(dp->learned_names_fd, k, out);
}

int fw_dp_lease_names_del(struct fw_dp *dp, const struct fw_learned_key *k)
{
	return fw_dp_delete(dp->learned_names_fd, k);
}

__u64 *fw_dp_conn_counts(struct fw_dp *dp)
{
	void *p;

	if (dp->conn_count || dp->conn_count_fd < 0)
		return dp->conn_count;
	p = mmap(NULL, FW_MAX_SUBJECTS * sizeof(__u64), PROT_READ | PROT_WRITE, MAP_SHARED,
		 dp->conn_count_fd, 0);
	if (p == MAP_FAILED) {
		fw_err("can't map fastwall_conn_count: %s", strerror(errno));
		return NULL;
	}
	dp->conn_count = p;
	return p;
}
