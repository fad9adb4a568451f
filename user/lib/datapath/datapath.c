// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Attaching and map programming (loading and pinning: load.c). See
 * datapath.h. */
#include <errno.h>
#include <fcntl.h>
#include <linux/pkt_cls.h>
#include <net/if.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "datapath/datapath.h"
#include "datapath/rules.h"
#include "egress.skel.h"
#include "common/log.h"

static int attach_one(int ifindex, enum bpf_tc_attach_point where, int prog_fd)
{
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = where);
	LIBBPF_OPTS(bpf_tc_opts, opts, .handle = FW_TC_HANDLE, .priority = FW_TC_PRIORITY,
		    .prog_fd = prog_fd, .flags = BPF_TC_F_REPLACE);
	int err;

	err = bpf_tc_hook_create(&hook);
	if (err && err != -EEXIST)
		return err;
	return bpf_tc_attach(&hook, &opts);
}

int fw_dp_attach(struct fw_dp *dp, int ifindex)
{
	char name[IF_NAMESIZE] = "?";
	int err;

	/* ingress first: it is the one that enforces */
	err = attach_one(ifindex, BPF_TC_INGRESS, dp->from_sandbox_fd);
	if (!err)
		err = attach_one(ifindex, BPF_TC_EGRESS, dp->to_sandbox_fd);
	if (err) {
		if_indextoname(ifindex, name);
		fw_err("can't attach to %s (ifindex %d): %s", name, ifindex, strerror(-err));
	}
	return err;
}

static int detach_one(int ifindex, enum bpf_tc_attach_point where)
{
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = where);
	LIBBPF_OPTS(bpf_tc_opts, opts, .handle = FW_TC_HANDLE, .priority = FW_TC_PRIORITY);

	return bpf_tc_detach(&hook, &opts);
}

int fw_dp_detach(int ifindex)
{
	int e1 = detach_one(ifindex, BPF_TC_INGRESS);
	int e2 = detach_one(ifindex, BPF_TC_EGRESS);

	if (e1 && e1 != -ENOENT)
		return e1;
	if (e2 && e2 != -ENOENT)
		return e2;
	return e1 == -ENOENT && e2 == -ENOENT ? -ENOENT : 0;
}

bool fw_dp_attached(int ifindex)
{
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = BPF_TC_INGRESS);
	LIBBPF_OPTS(bpf_tc_opts, opts, .handle = FW_TC_HANDLE, .priority = FW_TC_PRIORITY);

	return bpf_tc_query(&hook, &opts) == 0;
}

static int update(int fd, const void *key, const void *val, __u64 flags, const char *what)
{
	if (bpf_map_update_elem(fd, key, val, flags)) {
		int err = -errno;

		fw_err("can't update %s: %s", what, strerror(-err));
		return err;
	}
	return 0;
}

int fw_dp_config_set(struct fw_dp *dp, const struct fw_config *c)
{
	__u32 zero = 0;
	int err = update(dp->config_fd, &zero, c, BPF_ANY, "fastwall_config");

	/* TC ingress's cached answers passed the settings' checks (the
	 * pod-local set full or not) under the old ones */
	return err ? err : fw_dp_rules_epoch_bump(dp);
}

/* Hash maps are read in batches of this many entries (one syscall each). */
#define SCAN_BATCH 4096

int fw_dp_scan(int fd, int (*fn)(const void *key, const void *val, void *ctx), void *ctx)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info), chunk = SCAN_BATCH, in_tok = 0, out_tok = 0;
	char *keys = NULL, *vals = NULL, *prev = NULL;
	bool first = true;
	int err = 0;

	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return -errno;
	if (!info.key_size || info.key_size > 64 || info.value_size > 4096)
		return -EINVAL;
	/* batches: hash maps (5.6+); tries and older kernels go key by key */
	if (info.type != BPF_MAP_TYPE_HASH && info.type != BPF_MAP_TYPE_LRU_HASH)
		goto by_key;
	for (;;) {
		__u32 count = chunk;
		int ret;

		if (!keys) {
			keys = malloc((size_t)chunk * info.key_size);
			vals = malloc((size_t)chunk * (info.value_size ? info.value_size : 1));
			if (!keys || !vals) {
				err = -ENOMEM;
				goto out;
			}
		}
		ret = bpf_map_lookup_batch(fd, first ? NULL : &in_tok, &out_tok, keys, vals, &count,
					   NULL);
		if (ret && errno == ENOSPC && count == 0 && chunk < (1u << 20)) {
			/* one bucket holds more than a batch: retry larger */
			chunk *= 2;
			free(keys);
			free(vals);
			keys = vals = NULL;
			continue;
		}
		if (ret && errno != ENOENT) {
			if (first && (errno == EINVAL || errno == EOPNOTSUPP || errno == 524)) {
				free(keys);
				free(vals);
				keys = vals = NULL;
				goto by_key; /* ENOTSUPP: no batch operations here */
			}
			err = -errno;
			goto out;
		}
		first = false;
		for (__u32 i = 0; i < count; i++) {
			err = fn(keys + (size_t)i * info.key_size,
				 vals + (size_t)i * info.value_size, ctx);
			if (err)
				goto out;
		}
		if (ret) /* ENOENT: that was the last batch */
			goto out;
		in_tok = out_tok;
	}

by_key:
	keys = malloc(2 * (size_t)info.key_size);
	vals = malloc(info.value_size ? info.value_size : 1);
	if (!keys || !vals) {
		err = -ENOMEM;
		goto out;
	}
	for (int i = 0; bpf_map_get_next_key(fd, prev, keys + i * info.key_size) == 0; i ^= 1) {
		char *cur = keys + i * info.key_size;

		prev = cur;
		if (bpf_map_lookup_elem(fd, cur, vals))
			continue; /* deleted meanwhile */
		err = fn(cur, vals, ctx);
		if (err)
			break;
	}
out:
	free(keys);
	free(vals);
	return err;
}

int fw_recs_push(struct fw_recs *r, const void *rec)
{
	if (r->n == r->cap) {
		size_t nc = r->cap ? r->cap * 2 : 256;
		char *grown = realloc(r->data, nc * r->size);

		if (!grown)
			return -ENOMEM;
		r->data = grown;
		r->cap = nc;
	}
	memcpy(r->data + r->n++ * r->size, rec, r->size);
	return 0;
}

struct prune_ctx {
	bool (*keep)(const void *key, const void *ctx);
	const void *ctx;
	struct fw_recs doomed;
};

static int prune_one(const void *key, const void *val, void *ctx)
{
	struct prune_ctx *p = ctx;

	(void)val;
	return p->keep(key, p->ctx) ? 0 : fw_recs_push(&p->doomed, key);
}

/* Deletes every key of fd for which keep() says no: one scan collects
 * them (deleting while walking would restart the walk), then they go in
 * batches where the kernel has them. */
int fw_dp_prune(int fd, size_t key_size, bool (*keep)(const void *key, const void *ctx),
		const void *ctx)
{
	struct prune_ctx p = {.keep = keep, .ctx = ctx, .doomed = {.size = key_size}};
	int err = fw_dp_scan(fd, prune_one, &p);

	if (!err)
		err = fw_dp_delete_keys(fd, p.doomed.data, p.doomed.n, key_size);
	free(p.doomed.data);
	return err;
}

int fw_dp_delete_keys(int fd, const void *keys, size_t n, size_t key_size)
{
	const char *k = keys;
	bool batch = true;
	size_t done = 0;
	int err = 0;

	while (done < n) {
		__u32 count = (__u32)(n - done > SCAN_BATCH ? SCAN_BATCH : n - done);

		if (batch && bpf_map_delete_batch(fd, k + done * key_size, &count, NULL) == 0) {
			done += count;
			continue;
		}
		if (!batch || errno != ENOENT) {
			batch = false; /* no batches for this map (or kernel) */
			count = 0;
		}
		/* a batch stops at a key that is gone already: skip it */
		done += count;
		if (bpf_map_delete_elem(fd, k + done * key_size) && errno != ENOENT && !err)
			err = -errno;
		done++;
	}
	return err;
}

struct keyset {
	const void *keys;
	size_t n, size;
};

static bool in_keyset(const void *key, const void *ctx)
{
	const struct keyset *ks = ctx;

	for (size_t i = 0; i < ks->n; i++)
		if (memcmp((const char *)ks->keys + i * ks->size, key, ks->size) == 0)
			return true;
	return false;
}

int fw_dp_local_set(struct fw_dp *dp, const struct fw_ip *addrs, size_t naddrs,
		    const struct fw_port_key *ports, size_t nports)
{
	struct keyset ka = {addrs, naddrs, sizeof(*addrs)};
	struct keyset kp = {ports, nports, sizeof(*ports)};
	struct fw_local l = {};
	__u8 one = 1;
	int err;

	/* what goes first: a full map (the pod had more addresses than fit)
	 * would refuse a new address while the ones that left still sit in
	 * it; an address in both sets stays in the map throughout */
	err = fw_dp_prune(dp->local_fd, sizeof(*addrs), in_keyset, &ka);
	if (!err)
		err = fw_dp_prune(dp->local_ports_fd, sizeof(*ports), in_keyset, &kp);
	if (err)
		return err;
	for (size_t i = 0; !err && i < naddrs; i++)
		err = update(dp->local_fd, &addrs[i], &l, BPF_ANY, "fastwall_local");
	for (size_t i = 0; !err && i < nports; i++)
		err = update(dp->local_ports_fd, &ports[i], &one, BPF_ANY, "fastwall_local_ports");
	/* TC ingress's cached answers are for destinations that were not
	 * pod-local: one that now is must be checked again (after a partial
	 * write too) */
	if (naddrs) {
		int e = fw_dp_rules_epoch_bump(dp);

		err = err ? err : e;
	}
	return err;
}

int fw_dp_doh_set(struct fw_dp *dp, const struct fw_lpm_key *keys, size_t n)
{
	struct keyset ks = {keys, n, sizeof(*keys)};
	__u8 one = 1;
	int err;

	/* stale prefixes first, so a full map takes the new ones */
	err = fw_dp_prune(dp->doh_fd, sizeof(*keys), in_keyset, &ks);
	if (err)
		return err;
	for (size_t i = 0; i < n; i++) {
		err = update(dp->doh_fd, &keys[i], &one, BPF_ANY, "fastwall_doh");
		if (err)
			return err;
	}
	return 0;
}

/* TC ingress keeps per CPU a copy of what a source's dispatch value
 * says (fastwall_src_slots), tagged with fastwall_rules_epoch, and only
 * of an active subject's value (the denying check comes before a slot
 * is filled). So a write that replaces or removes an active value
 * raises the epoch once it is made, and no packet that starts after
 * the write returns uses a copy of the old value; a write to an address
 * that had no value, or a non-active one, needs no raise: no slot holds
 * a copy of it (the write that ended the last active value raised it).
 * The check and the write are one step under dispatch_lock, so two
 * writers of one address can't both skip the raise. */
static pthread_mutex_t dispatch_lock = PTHREAD_MUTEX_INITIALIZER;

/* Whether addr's value may be in a slot: it exists and is active (or
 * it can't be read, so assume it). */
static bool dispatch_copied(struct fw_dp *dp, const struct fw_ip *addr, struct fw_subject *cur)
{
	if (bpf_map_lookup_elem(dp->dispatch_fd, addr, cur))
		return errno != ENOENT;
	return cur->state == FW_STATE_ACTIVE;
}

int fw_dp_dispatch_put(struct fw_dp *dp, const struct fw_ip *addr, const struct fw_subject *s)
{
	struct fw_subject cur;
	bool copied;
	int err, e = 0;

	pthread_mutex_lock(&dispatch_lock);
	copied = dispatch_copied(dp, addr, &cur);
	err = update(dp->dispatch_fd, addr, s, BPF_ANY, "fastwall_dispatch");
	if (copied)
		e = fw_dp_rules_epoch_bump(dp);
	pthread_mutex_unlock(&dispatch_lock);
	return err ? err : e;
}

/* Deletes addr's value and, where that value may be in a slot (copied),
 * raises the epoch; under dispatch_lock. */
static int dispatch_delete(struct fw_dp *dp, const struct fw_ip *addr, bool copied)
{
	int err = 0, e = 0;

	if (bpf_map_delete_elem(dp->dispatch_fd, addr) && errno != ENOENT)
		err = -errno;
	if (copied)
		e = fw_dp_rules_epoch_bump(dp);
	return err ? err : e;
}

int fw_dp_dispatch_del(struct fw_dp *dp, const struct fw_ip *addr, __u32 id)
{
	struct fw_subject cur;
	int err = 0;

	pthread_mutex_lock(&dispatch_lock);
	if (bpf_map_lookup_elem(dp->dispatch_fd, addr, &cur))
		err = errno == ENOENT ? 0 : -errno;
	else if (cur.id == id)
		err = dispatch_delete(dp, addr, cur.state == FW_STATE_ACTIVE);
	pthread_mutex_unlock(&dispatch_lock);
	return err;
}

int fw_dp_dispatch_drop(struct fw_dp *dp, const struct fw_ip *addr)
{
	struct fw_subject cur;
	int err;

	pthread_mutex_lock(&dispatch_lock);
	err = dispatch_delete(dp, addr, dispatch_copied(dp, addr, &cur));
	pthread_mutex_unlock(&dispatch_lock);
	return err;
}

static bool not_ports_of(const void *key, const void *ctx)
{
	const struct fw_port_rule_key *k = key;
	const __u32 *want = ctx; /* {subject, generation bit or ~0u for all} */

	if (k->subject != want[0])
		return true;
	return want[1] != ~0u && (k->portset & FW_PORTSET_GEN) != want[1];
}

int fw_dp_ports_flush(struct fw_dp *dp, __u32 id)
{
	__u32 want[2] = {id, ~0u};

	return fw_dp_prune(dp->ports_fd, sizeof(struct fw_port_rule_key), not_ports_of, want);
}

struct ports_sweep_ctx {
	bool (*live)(__u32 id, __u32 *gen, const void *ctx);
	const void *ctx;
};

static bool port_rule_live(const void *key, const void *ctx)
{
	const struct fw_port_rule_key *k = key;
	const struct ports_sweep_ctx *c = ctx;
	__u32 gen;

	return c->live(k->subject, &gen, c->ctx) && (k->portset & FW_PORTSET_GEN) == gen;
}

/* Deletes per-port exceptions that no live trie can reference: those of
 * unknown subjects and of the generation a subject does not use (left by a
 * swap interrupted by a crash). live(id, &gen) says whether id is known
 * and its live generation. */
int fw_dp_ports_sweep(struct fw_dp *dp, bool (*live)(__u32 id, __u32 *gen, const void *ctx),
		      const void *ctx)
{
	struct ports_sweep_ctx c = {live, ctx};

	return fw_dp_prune(dp->ports_fd, sizeof(struct fw_port_rule_key), port_rule_live, &c);
}

int fw_dp_lease_put(struct fw_dp *dp, __u32 id, const struct fw_ip *addr, __u64 expires_ns,
		    __u32 portset)
{
	struct fw_learned_key k = {.subject = id, .addr = *addr};
	struct fw_lease v = {
		.expires_ns = expires_ns,
		.learned_ns = fw_now_ns(),
		.portset = portset,
	};

	return update(dp->learned_fd, &k, &v, BPF_ANY, "fastwall_learned");
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
		int err = update(dp->learned_ports_fd, &k, &one, BPF_ANY, "fastwall_learned_ports");

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

/* The keys of fastwall_learned, fastwall_conns, fastwall_ports and
 * fastwall_learned_ports all start with the subject id. */
static bool subject_alive(const void *key, const void *ctx)
{
	const bool *dead = ctx;
	__u32 id;

	memcpy(&id, key, sizeof(id));
	return id >= FW_MAX_SUBJECTS || !dead[id];
}

static int subject_zero(struct fw_dp *dp, __u32 id);

int fw_dp_reap(struct fw_dp *dp, const bool dead[FW_MAX_SUBJECTS])
{
	int err = fw_dp_prune(dp->learned_fd, sizeof(struct fw_learned_key), subject_alive, dead);

	if (!err)
		err = fw_dp_prune(dp->conns_fd, sizeof(struct fw_conn_key), subject_alive, dead);
	if (!err)
		err = fw_dp_prune(dp->ports_fd, sizeof(struct fw_port_rule_key), subject_alive,
				  dead);
	if (!err)
		err = fw_dp_prune(dp->learned_ports_fd, sizeof(struct fw_port_rule_key),
				  subject_alive, dead);
	if (!err)
		err = fw_dp_prune(dp->learned_names_fd, sizeof(struct fw_learned_key),
				  subject_alive, dead);
	if (!err)
		err = fw_dp_rules_reap(dp, dead);
	if (!err && fw_dp_conn_counts(dp)) {
		/* their records are gone: a dead id holds none */
		for (__u32 id = 0; id < FW_MAX_SUBJECTS; id++)
			if (dead[id])
				__atomic_store_n(&dp->conn_count[id], 0, __ATOMIC_RELAXED);
	}
	/* zeroed here, off the request path, the next subject of the id
	 * starts without a kernel write for them */
	for (__u32 id = 0; id < FW_MAX_SUBJECTS && !err && dp->clean; id++)
		if (dead[id] && !dp->clean[id] && subject_zero(dp, id) == 0)
			dp->clean[id] = true;
	return err;
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

/* fastwall_subject_rows, mapped on first use: NULL (and rows_cpus 0)
 * while it is not pinned (an older fastwalld of this ABI) or can't be
 * mapped (said). */
static struct fw_subject_row *subject_rows(struct fw_dp *dp)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);
	void *p;

	if (dp->rows || dp->subject_rows_fd < 0)
		return dp->rows;
	if (bpf_obj_get_info_by_fd(dp->subject_rows_fd, &info, &len)) {
		fw_err("can't query fastwall_subject_rows: %s", strerror(errno));
		return NULL;
	}
	if (info.value_size != sizeof(struct fw_subject_row) || !FW_ROW_CPUS(info.max_entries)) {
		fw_err("fastwall_subject_rows has %u entries of %u bytes, not rows of %d subjects",
		       info.max_entries, info.value_size, FW_MAX_SUBJECTS);
		return NULL;
	}
	p = mmap(NULL, (size_t)info.max_entries * sizeof(struct fw_subject_row),
		 PROT_READ | PROT_WRITE, MAP_SHARED, dp->subject_rows_fd, 0);
	dp->rows_writable = p != MAP_FAILED;
	if (p == MAP_FAILED && (errno == EACCES || errno == EPERM))
		/* a reader of pins it may not write: enough to count */
		p = mmap(NULL, (size_t)info.max_entries * sizeof(struct fw_subject_row), PROT_READ,
			 MAP_SHARED, dp->subject_rows_fd, 0);
	if (p == MAP_FAILED) {
		fw_err("can't map fastwall_subject_rows: %s", strerror(errno));
		return NULL;
	}
	dp->rows = p;
	dp->rows_cpus = FW_ROW_CPUS(info.max_entries);
	return p;
}

/* Zeroes id's pass counters in every CPU's row, not its cached answer:
 * the data plane may be writing that, and its tags expire anyway. One
 * 8-byte store per counter, as the data plane's increments are. */
static int rows_zero(struct fw_dp *dp, __u32 id)
{
	struct fw_subject_row *rows = subject_rows(dp);

	if (!rows)
		return dp->subject_rows_fd < 0 ? 0 : -EIO;
	if (!dp->rows_writable)
		return -EACCES;
	for (__u32 c = 0; c < dp->rows_cpus; c++)
		for (int r = 0; r < FW_ROW_REASONS; r++)
			__atomic_store_n(&rows[FW_ROW_KEY(c, id)].packets[r], 0, __ATOMIC_RELAXED);
	return 0;
}

static int percpu_zero(int fd, __u32 key, size_t value_size)
{
	int ncpu = libbpf_num_possible_cpus();
	void *zero;
	int err = 0;

	if (ncpu < 0)
		return ncpu;
	zero = calloc(ncpu, (value_size + 7) & ~7ul);
	if (!zero)
		return -ENOMEM;
	if (bpf_map_update_elem(fd, &key, zero, BPF_ANY))
		err = -errno;
	free(zero);
	return err;
}

static int subject_zero(struct fw_dp *dp, __u32 id)
{
	int err = percpu_zero(dp->subject_stats_fd, id, sizeof(struct fw_subject_stats));

	if (!err && dp->subject_stats_carried_fd >= 0)
		err = percpu_zero(dp->subject_stats_carried_fd, id,
				  sizeof(struct fw_subject_stats));
	if (!err)
		err = rows_zero(dp, id);
	if (!err)
		err = percpu_zero(dp->budget_fd, id, sizeof(struct fw_event_budget));
	return err;
}

int fw_dp_subject_reset(struct fw_dp *dp, __u32 id)
{
	if (id >= FW_MAX_SUBJECTS)
		return -EINVAL;
	/* the id is taken: its packets count from now on */
	if (dp->clean && dp->clean[id]) {
		dp->clean[id] = false;
		return 0;
	}
	return subject_zero(dp, id);
}

int fw_dp_meta_put(struct fw_dp *dp, __u32 id, const struct fw_subject_meta *m)
{
	return update(dp->meta_fd, &id, m, BPF_ANY, "fastwall_subject_meta");
}

int fw_dp_meta_del(struct fw_dp *dp, __u32 id)
{
	if (bpf_map_delete_elem(dp->meta_fd, &id) && errno != ENOENT)
		return -errno;
	return 0;
}

/* the live counters, then (when an earlier ABI's were carried over) those */
int fw_dp_stats_read(struct fw_dp *dp, struct fw_counter out[FW_REASON_MAX])
{
	int ncpu = libbpf_num_possible_cpus(), fds[2] = {dp->stats_fd, dp->stats_carried_fd};
	struct fw_counter *vals;

	if (ncpu < 0)
		return ncpu;
	vals = calloc(ncpu, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	memset(out, 0, sizeof(*out) * FW_REASON_MAX);
	for (int f = 0; f < 2; f++) {
		for (__u32 r = 0; fds[f] >= 0 && r < FW_REASON_MAX; r++) {
			if (bpf_map_lookup_elem(fds[f], &r, vals))
				continue;
			for (int c = 0; c < ncpu; c++) {
				out[r].packets += vals[c].packets;
				out[r].bytes += vals[c].bytes;
			}
		}
	}
	free(vals);
	return 0;
}

int fw_dp_subject_stats_read(struct fw_dp *dp, __u32 id, __u64 out[FW_REASON_MAX])
{
	int ncpu = libbpf_num_possible_cpus();
	int fds[2] = {dp->subject_stats_fd, dp->subject_stats_carried_fd};
	struct fw_subject_stats *vals;
	int err = 0;

	if (ncpu < 0)
		return ncpu;
	vals = calloc(ncpu, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	memset(out, 0, sizeof(__u64) * FW_REASON_MAX);
	for (int f = 0; f < 2 && !err; f++) {
		if (fds[f] < 0)
			continue;
		if (bpf_map_lookup_elem(fds[f], &id, vals)) {
			err = -errno;
			break;
		}
		for (int c = 0; c < ncpu; c++)
			for (int r = 0; r < FW_REASON_MAX; r++)
				out[r] += vals[c].packets[r];
	}
	free(vals);
	if (!err && id < FW_MAX_SUBJECTS && subject_rows(dp)) {
		for (__u32 c = 0; c < dp->rows_cpus; c++)
			for (int r = 0; r < FW_ROW_REASONS; r++)
				out[r] += __atomic_load_n(&dp->rows[FW_ROW_KEY(c, id)].packets[r],
							  __ATOMIC_RELAXED);
	} else if (!err && dp->subject_rows_fd >= 0) {
		err = -EIO;
	}
	return err;
}

_Static_assert(FW_EVENT_ALLOW < FW_EVENT_LOST_SLOTS, "an event type without a lost slot");

int fw_dp_events_lost_read(struct fw_dp *dp, __u64 out[FW_EVENT_LOST_SLOTS])
{
	int ncpu = libbpf_num_possible_cpus();
	__u64 *vals;
	int err = 0;

	memset(out, 0, sizeof(__u64) * FW_EVENT_LOST_SLOTS);
	if (dp->events_lost_fd < 0)
		return 0;
	if (ncpu < 0)
		return ncpu;
	vals = calloc(ncpu, sizeof(*vals));
	if (!vals)
		return -ENOMEM;
	for (__u32 k = 0; k < FW_EVENT_LOST_SLOTS && !err; k++) {
		if (bpf_map_lookup_elem(dp->events_lost_fd, &k, vals)) {
			err = -errno;
			break;
		}
		for (int c = 0; c < ncpu; c++)
			out[k] += vals[c];
	}
	free(vals);
	return err;
}

/* ---- the registry's and the learner's map accesses ---------------------- */

static int dp_lookup(int fd, const void *key, void *val)
{
	return bpf_map_lookup_elem(fd, key, val) ? -errno : 0;
}

static int dp_delete(int fd, const void *key)
{
	return bpf_map_delete_elem(fd, key) ? -errno : 0;
}

int fw_dp_dispatch_lookup(struct fw_dp *dp, const struct fw_ip *addr, struct fw_subject *out)
{
	return dp_lookup(dp->dispatch_fd, addr, out);
}

int fw_dp_dispatch_scan(struct fw_dp *dp, fw_dp_scan_fn fn, void *ctx)
{
	return fw_dp_scan(dp->dispatch_fd, fn, ctx);
}

int fw_dp_meta_scan(struct fw_dp *dp, fw_dp_scan_fn fn, void *ctx)
{
	return fw_dp_scan(dp->meta_fd, fn, ctx);
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
	return dp_delete(dp->conns_fd, k);
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
	return dp_delete(dp->names_fd, &id);
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
	return dp_lookup(dp->learned_names_fd, k, out);
}

int fw_dp_lease_names_del(struct fw_dp *dp, const struct fw_learned_key *k)
{
	return dp_delete(dp->learned_names_fd, k);
}
