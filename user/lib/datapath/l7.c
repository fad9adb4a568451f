// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Layer-7 pinning's settings and the collection of its finished
 * connections (l7.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include <bpf/bpf.h>

#include "common/log.h"
#include "datapath/l7.h"
#include "datapath/scan.h"

__u32 fw_dp_l7_flags(const struct fw_dp *dp)
{
	return dp->l7_flags;
}

/* Writes dp->l7_flags into the pinned settings, the rest of the record as
 * it is (fw_dp_config_set carries them the same way). */
static int flags_write(struct fw_dp *dp, __u32 flags)
{
	struct fw_config c;
	__u32 zero = 0;

	if (bpf_map_lookup_elem(dp->config_fd, &zero, &c))
		return -errno;
	c.flags = (c.flags & ~(__u32)FW_CF_L7_BITS) | flags;
	dp->l7_flags = flags;
	return fw_dp_update(dp->config_fd, &zero, &c, BPF_ANY, "fastwall_config");
}

static int port_add(struct fw_port_key *keys, struct fw_l7_port *vals, size_t *n, __u16 port,
		    __u16 proxy_port, enum fw_l7_kind kind, const char *what)
{
	struct fw_port_key k = {.proto = IPPROTO_TCP, .port = htons(port)};

	if (!port) {
		fw_err("l7: %s port 0", what);
		return -EINVAL;
	}
	if (!proxy_port) {
		fw_err("l7: %s port %u has no proxy port", what, port);
		return -EINVAL;
	}
	for (size_t i = 0; i < *n; i++) {
		if (keys[i].port == k.port) {
			fw_err("l7: port %u listed twice", port);
			return -EINVAL;
		}
	}
	if (*n >= FW_MAX_L7_PORTS) {
		fw_err("l7: more than %d ports", FW_MAX_L7_PORTS);
		return -EINVAL;
	}
	keys[*n] = k;
	vals[*n] = (struct fw_l7_port){.proxy_port = htons(proxy_port), .kind = kind};
	(*n)++;
	return 0;
}

struct keys {
	const struct fw_port_key *k;
	size_t n;
};

static bool listed(const void *key, const void *ctx)
{
	const struct keys *ks = ctx;

	for (size_t i = 0; i < ks->n; i++)
		if (memcmp(&ks->k[i], key, sizeof(ks->k[i])) == 0)
			return true;
	return false;
}

int fw_dp_l7_apply(struct fw_dp *dp, const struct fw_dp_l7 *l7)
{
	struct fw_port_key keys[FW_MAX_L7_PORTS];
	struct fw_l7_port vals[FW_MAX_L7_PORTS];
	struct keys ks = {keys, 0};
	__u32 flags = 0;
	int err = 0;

	if (l7 && (l7->ntls > FW_MAX_L7_PORTS || l7->nhttp > FW_MAX_L7_PORTS)) {
		fw_err("l7: more than %d ports", FW_MAX_L7_PORTS);
		return -EINVAL;
	}
	for (size_t i = 0; l7 && !err && i < l7->ntls; i++)
		err = port_add(keys, vals, &ks.n, l7->tls_ports[i], l7->proxy_tls_port, FW_L7_TLS,
			       "tls");
	for (size_t i = 0; l7 && !err && i < l7->nhttp; i++)
		err = port_add(keys, vals, &ks.n, l7->http_ports[i], l7->proxy_http_port,
			       FW_L7_HTTP, "http");
	if (err)
		return err;
	if (dp->l7_ports_fd < 0 || dp->config_fd < 0)
		return -ENOENT;

	if (!ks.n) {
		/* off: the flag first, so no packet looks for a port that
		 * went */
		err = flags_write(dp, 0);
		return err ? err : fw_dp_prune(dp->l7_ports_fd, sizeof(keys[0]), listed, &ks);
	}
	/* on: the ports first, then the flag that makes the programs read
	 * them; the proxy's state (FW_CF_L7_UP) stays as it was */
	err = fw_dp_prune(dp->l7_ports_fd, sizeof(keys[0]), listed, &ks);
	for (size_t i = 0; !err && i < ks.n; i++)
		err = fw_dp_update(dp->l7_ports_fd, &keys[i], &vals[i], BPF_ANY,
				   "fastwall_l7_ports");
	if (err)
		return err;
	flags = FW_CF_L7 | (dp->l7_flags & FW_CF_L7_UP);
	if (l7->quic_allowed)
		flags |= FW_CF_L7_QUIC;
	return flags_write(dp, flags);
}

int fw_dp_l7_set_up(struct fw_dp *dp, bool up)
{
	__u32 flags = dp->l7_flags & ~(__u32)FW_CF_L7_UP;

	if (dp->config_fd < 0)
		return -ENOENT;
	return flags_write(dp, up ? flags | FW_CF_L7_UP : flags);
}

struct gc {
	__u64 now, idle;
	struct fw_recs doomed; /* struct fw_l7_nat_key */
};

static bool idle(const struct fw_l7_nat *v, __u64 now, __u64 idle_ns)
{
	return v->last_seen_ns <= now && now - v->last_seen_ns >= idle_ns;
}

static int gc_one(const void *key, const void *val, void *ctx)
{
	struct gc *g = ctx;

	return idle(val, g->now, g->idle) ? fw_recs_push(&g->doomed, key) : 0;
}

int fw_dp_l7_gc(struct fw_dp *dp, __u64 now_ns, __u64 idle_ns, size_t *deleted)
{
	struct gc g = {
		.now = now_ns, .idle = idle_ns, .doomed = {.size = sizeof(struct fw_l7_nat_key)}};
	size_t n = 0;
	int err;

	if (deleted)
		*deleted = 0;
	if (dp->l7_nat_fd < 0)
		return 0;
	err = fw_dp_scan(dp->l7_nat_fd, gc_one, &g);
	for (size_t i = 0; !err && i < g.doomed.n; i++) {
		const void *k = g.doomed.data + i * g.doomed.size;
		struct fw_l7_nat v;

		/* a new connection may have taken the key since the scan */
		if (fw_dp_lookup(dp->l7_nat_fd, k, &v) || !idle(&v, now_ns, idle_ns))
			continue;
		if (fw_dp_delete(dp->l7_nat_fd, k) == 0)
			n++;
	}
	free(g.doomed.data);
	if (deleted)
		*deleted = n;
	return err;
}
