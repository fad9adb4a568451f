// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Layer-7 pinning's settings and the collection of its finished
 * connections (l7.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
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

__u64 *fw_dp_l7_counts(struct fw_dp *dp)
{
	void *p;

	if (dp->l7_count || dp->l7_count_fd < 0)
		return dp->l7_count;
	p = mmap(NULL, FW_MAX_SUBJECTS * sizeof(__u64), PROT_READ | PROT_WRITE, MAP_SHARED,
		 dp->l7_count_fd, 0);
	if (p == MAP_FAILED) {
		fw_err("can't map fastwall_l7_count: %s", strerror(errno));
		return NULL;
	}
	dp->l7_count = p;
	return p;
}

/* One off *count, never below 0 (a count zeroed under an entry, by the
 * reaper or a rewrite, stays 0 rather than wrapping to a full share). */
static void count_down(__u64 *count)
{
	__u64 c = __atomic_load_n(count, __ATOMIC_RELAXED);

	while (c && !__atomic_compare_exchange_n(count, &c, c - 1, false, __ATOMIC_RELAXED,
						 __ATOMIC_RELAXED))
		;
}

struct gc {
	__u64 now, idle, closed;
	struct fw_recs doomed; /* struct fw_l7_nat_key */
	__u64 *found;	       /* per subject: entries the scan keeps; NULL: not counted */
};

/* Not seen for idle_ns, or for closed_ns once either side closed it. */
static bool idle(const struct fw_l7_nat *v, __u64 now, __u64 idle_ns, __u64 closed_ns)
{
	__u64 bound = (v->closed || v->reported) && closed_ns < idle_ns ? closed_ns : idle_ns;

	return v->last_seen_ns <= now && now - v->last_seen_ns >= bound;
}

static int gc_one(const void *key, const void *val, void *ctx)
{
	const struct fw_l7_nat *v = val;
	struct gc *g = ctx;

	if (idle(v, g->now, g->idle, g->closed))
		return fw_recs_push(&g->doomed, key);
	if (g->found && v->subject < FW_MAX_SUBJECTS && !v->reported)
		g->found[v->subject]++;
	return 0;
}

/* The per-subject counts drift when a decrement is lost (fastwalld
 * stopped between a delete and its decrement): a count is replaced by
 * the entries the scan kept, but only where it still is what it was
 * before the scan less the round's own deletes, i.e. no program added
 * or deleted an entry of the subject meanwhile; a busy subject heals in
 * a later round. */
static void counts_heal(__u64 *counts, const __u64 *before, const __u64 *found)
{
	for (__u32 id = 0; id < FW_MAX_SUBJECTS; id++) {
		__u64 expected = before[id];

		if (expected != found[id])
			__atomic_compare_exchange_n(&counts[id], &expected, found[id], false,
						    __ATOMIC_RELAXED, __ATOMIC_RELAXED);
	}
}

int fw_dp_l7_closed(struct fw_dp *dp, const struct fw_l7_nat_key *k, __u32 subject)
{
	struct fw_l7_nat v;
	__u64 *counts;

	if (dp->l7_nat_fd < 0)
		return -ENOENT;
	if (fw_dp_lookup(dp->l7_nat_fd, k, &v) || v.subject != subject || v.sock || v.reported)
		return -ENOENT;
	v.reported = 1;
	if (bpf_map_update_elem(dp->l7_nat_fd, k, &v, BPF_EXIST))
		return -ENOENT; /* deleted meanwhile: by whoever took it off */
	counts = fw_dp_l7_counts(dp);
	if (counts && subject < FW_MAX_SUBJECTS)
		count_down(&counts[subject]);
	return 0;
}

int fw_dp_l7_release(struct fw_dp *dp, const struct fw_l7_nat_key *k)
{
	struct fw_l7_nat v;

	if (dp->l7_nat_fd < 0 || fw_dp_lookup(dp->l7_nat_fd, k, &v) || !v.reported)
		return -ENOENT;
	return fw_dp_delete(dp->l7_nat_fd, k) ? -ENOENT : 0;
}

int fw_dp_l7_gc(struct fw_dp *dp, __u64 now_ns, __u64 idle_ns, __u64 closed_ns, size_t *deleted)
{
	struct gc g = {.now = now_ns,
		       .idle = idle_ns,
		       .closed = closed_ns,
		       .doomed = {.size = sizeof(struct fw_l7_nat_key)}};
	__u64 *counts, *before = NULL;
	size_t n = 0;
	int err;

	if (deleted)
		*deleted = 0;
	if (dp->l7_nat_fd < 0)
		return 0;
	counts = fw_dp_l7_counts(dp);
	if (counts) {
		before = malloc(FW_MAX_SUBJECTS * sizeof(*before));
		g.found = calloc(FW_MAX_SUBJECTS, sizeof(*g.found));
		if (!before || !g.found) {
			free(before);
			free(g.found);
			return -ENOMEM;
		}
		for (__u32 id = 0; id < FW_MAX_SUBJECTS; id++)
			before[id] = __atomic_load_n(&counts[id], __ATOMIC_RELAXED);
	}
	err = fw_dp_scan(dp->l7_nat_fd, gc_one, &g);
	for (size_t i = 0; !err && i < g.doomed.n; i++) {
		const void *k = g.doomed.data + i * g.doomed.size;
		struct fw_l7_nat v;

		/* a new connection may have taken the key since the scan */
		if (fw_dp_lookup(dp->l7_nat_fd, k, &v))
			continue;
		if (!idle(&v, now_ns, idle_ns, closed_ns)) {
			if (g.found && v.subject < FW_MAX_SUBJECTS && !v.reported)
				g.found[v.subject]++;
			continue;
		}
		if (fw_dp_delete(dp->l7_nat_fd, k))
			continue; /* deleted meanwhile: by whoever took it off */
		n++;
		if (counts && v.subject < FW_MAX_SUBJECTS && !v.reported) {
			count_down(&counts[v.subject]);
			if (before[v.subject])
				before[v.subject]--;
		}
	}
	if (counts && !err)
		counts_heal(counts, before, g.found);
	free(before);
	free(g.found);
	free(g.doomed.data);
	if (deleted)
		*deleted = n;
	return err;
}

struct reap {
	const bool *dead;
	struct fw_recs doomed; /* struct fw_l7_nat_key */
};

static int reap_one(const void *key, const void *val, void *ctx)
{
	const struct fw_l7_nat *v = val;
	struct reap *r = ctx;

	if (v->subject < FW_MAX_SUBJECTS && r->dead[v->subject])
		return fw_recs_push(&r->doomed, key);
	return 0;
}

int fw_dp_l7_reap(struct fw_dp *dp, const bool dead[FW_MAX_SUBJECTS])
{
	struct reap r = {.dead = dead, .doomed = {.size = sizeof(struct fw_l7_nat_key)}};
	__u64 *counts;
	int err = 0;

	if (dp->l7_nat_fd >= 0)
		err = fw_dp_scan(dp->l7_nat_fd, reap_one, &r);
	for (size_t i = 0; !err && i < r.doomed.n; i++) {
		int e = fw_dp_delete(dp->l7_nat_fd, r.doomed.data + i * r.doomed.size);

		if (e && e != -ENOENT)
			err = e;
	}
	free(r.doomed.data);
	counts = err ? NULL : fw_dp_l7_counts(dp);
	/* their entries are gone: a dead id holds none */
	for (__u32 id = 0; counts && id < FW_MAX_SUBJECTS; id++)
		if (dead[id])
			__atomic_store_n(&counts[id], 0, __ATOMIC_RELAXED);
	return err;
}
