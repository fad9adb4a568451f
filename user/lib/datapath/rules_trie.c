// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The rule store's first form: one LPM trie per slot of
 * fastwall_rules_v2, written into the slot once, with the subject's
 * rules under generations inside it (the key's gen field), and the lists
 * of keys each generation was written with. See rules_store.h. */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>

#include "common/log.h"
#include "datapath/rules_store.h"

static void keys_lose(struct keys *l)
{
	fw_rs_keys_free(l);
	l->lost = true;
}

void fw_rs_keys_free(struct keys *l)
{
	free(l->k);
	*l = (struct keys){0};
}

void fw_rs_keys_push(struct keys *l, const struct fw_rule_key *k)
{
	if (l->lost)
		return;
	if (l->n == l->cap) {
		__u32 cap = l->cap ? 2 * l->cap : 16;
		struct fw_rule_key *grown = realloc(l->k, cap * sizeof(*grown));

		if (!grown) {
			keys_lose(l);
			return;
		}
		l->k = grown;
		l->cap = cap;
	}
	l->k[l->n++] = *k;
}

/* Moves every key of from to the end of to; from is left empty. */
void fw_rs_keys_move(struct keys *to, struct keys *from)
{
	if (from->lost || to->lost) {
		fw_rs_keys_free(from);
		keys_lose(to);
		return;
	}
	if (!to->n) {
		fw_rs_keys_free(to);
		*to = *from;
		*from = (struct keys){0};
		return;
	}
	for (__u32 i = 0; i < from->n && !to->lost; i++)
		fw_rs_keys_push(to, &from->k[i]);
	fw_rs_keys_free(from);
}

void fw_rs_keys_drop(struct keys *l, const struct fw_rule_key *k)
{
	for (__u32 i = 0; i < l->n; i++) {
		if (!memcmp(&l->k[i], k, sizeof(*k))) {
			l->k[i] = l->k[--l->n];
			return;
		}
	}
}

/* Writes a generation's entries in one BPF_MAP_UPDATE_BATCH where the
 * kernel has batches for LPM tries (one syscall instead of one per
 * entry); returns how many it wrote, the caller writes the rest one by
 * one (all of them on kernels without, which the first refusal records). */
#define BATCH_MAX 256

static size_t batch_put(struct fw_dp_rules *r, int fd, const struct fw_compiled_set *set, __u32 gen,
			__u32 pgen)
{
	struct fw_rule_key keys[BATCH_MAX];
	struct fw_rule vals[BATCH_MAX];
	size_t done = 0;

	while (!r->no_batch && done < set->n) {
		__u32 n = (__u32)(set->n - done > BATCH_MAX ? BATCH_MAX : set->n - done);
		__u32 count = n;

		for (__u32 i = 0; i < n; i++) {
			key_of(&keys[i], &set->entries[done + i].key, gen);
			vals[i] = set->entries[done + i].rule;
			if (set->nports && vals[i].portset)
				vals[i].portset |= pgen;
		}
		if (bpf_map_update_batch(fd, keys, vals, &count, NULL)) {
			if (errno == EINVAL || errno == ENOTSUPP || errno == EOPNOTSUPP) {
				/* refused before any entry: the kernel leaves
				 * count as it was given */
				r->no_batch = true;
				return done;
			}
			/* count: how many went in before the failure */
			return done + (count < n ? count : 0);
		}
		done += n;
	}
	return done;
}

/* The BTF of struct fw_rule_key and struct fw_rule, built here because
 * the programs' BTF has no fw_rule_key (they only use it on the stack), so
 * that `bpftool map dump id N` of a slot's trie prints fields and action
 * names instead of bytes. Best effort: without it the tries work the same. */
static void rules_btf(struct fw_dp_rules *r)
{
	struct btf *btf = btf__new_empty();
	int u8, u32, be32, b16, ip, act, key, val, err = 0;

	if (!btf)
		return;
#define BTF_OK(x) (err |= (x) < 0 ? 1 : 0)
	u8 = btf__add_int(btf, "__u8", 1, 0);
	u32 = btf__add_int(btf, "__u32", 4, 0);
	be32 = btf__add_typedef(btf, "__be32", u32);
	b16 = btf__add_array(btf, u32, u8, 16);
	ip = btf__add_struct(btf, "fw_ip", sizeof(struct fw_ip));
	BTF_OK(u8), BTF_OK(u32), BTF_OK(be32), BTF_OK(b16), BTF_OK(ip);
	BTF_OK(btf__add_field(btf, "b", b16, 0, 0));
	act = btf__add_enum(btf, "fw_action", sizeof(enum fw_action));
	BTF_OK(act);
	BTF_OK(btf__add_enum_value(btf, "FW_ACTION_DENY", FW_ACTION_DENY));
	BTF_OK(btf__add_enum_value(btf, "FW_ACTION_ALLOW", FW_ACTION_ALLOW));
	BTF_OK(btf__add_enum_value(btf, "FW_ACTION_NONE", FW_ACTION_NONE));
	key = btf__add_struct(btf, "fw_rule_key", sizeof(struct fw_rule_key));
	BTF_OK(key);
	BTF_OK(btf__add_field(btf, "prefixlen", u32, 8 * offsetof(struct fw_rule_key, prefixlen),
			      0));
	BTF_OK(btf__add_field(btf, "gen", be32, 8 * offsetof(struct fw_rule_key, gen), 0));
	BTF_OK(btf__add_field(btf, "addr", ip, 8 * offsetof(struct fw_rule_key, addr), 0));
	val = btf__add_struct(btf, "fw_rule", sizeof(struct fw_rule));
	BTF_OK(val);
	BTF_OK(btf__add_field(btf, "action", act, 8 * offsetof(struct fw_rule, action), 0));
	BTF_OK(btf__add_field(btf, "is_default", u8, 8 * offsetof(struct fw_rule, is_default), 0));
	BTF_OK(btf__add_field(btf, "dflt", act, 8 * offsetof(struct fw_rule, dflt), 0));
	BTF_OK(btf__add_field(btf, "pad", u8, 8 * offsetof(struct fw_rule, pad), 0));
	BTF_OK(btf__add_field(btf, "portset", u32, 8 * offsetof(struct fw_rule, portset), 0));
	BTF_OK(btf__add_field(btf, "rule", u32, 8 * offsetof(struct fw_rule, rule), 0));
#undef BTF_OK
	if (err || btf__load_into_kernel(btf)) {
		fw_debug("rule tries without BTF: the kernel refused the key and value types");
		btf__free(btf);
		return;
	}
	r->btf = btf;
	r->btf_key = key;
	r->btf_value = val;
}

/* Whether the kernel takes a trie with BTF into a slot whose template has
 * none (the programs' inner map definition gives sizes, not types): 6.1
 * compares what the BTF says of a value's special fields and refuses it,
 * 5.10 and 6.12 on do not. Tried once on a private outer map, whose write
 * waits for no program. */
static bool trie_btf_fits(struct fw_dp_rules *r)
{
	LIBBPF_OPTS(bpf_map_create_opts, plain, .map_flags = BPF_F_NO_PREALLOC);
	LIBBPF_OPTS(bpf_map_create_opts, typed, .map_flags = BPF_F_NO_PREALLOC);
	LIBBPF_OPTS(bpf_map_create_opts, outer);
	int tmpl, trie = -1, o = -1;
	__u32 zero = 0;
	bool fits = false;

	typed.btf_fd = btf__fd(r->btf);
	typed.btf_key_type_id = r->btf_key;
	typed.btf_value_type_id = r->btf_value;
	tmpl = bpf_map_create(BPF_MAP_TYPE_LPM_TRIE, "fw_probe_t", sizeof(struct fw_rule_key),
			      sizeof(struct fw_rule), SLOT_ROOM, &plain);
	if (tmpl < 0)
		return false;
	outer.inner_map_fd = tmpl;
	o = bpf_map_create(BPF_MAP_TYPE_ARRAY_OF_MAPS, "fw_probe_o", 4, 4, 1, &outer);
	if (o >= 0)
		trie = bpf_map_create(BPF_MAP_TYPE_LPM_TRIE, "fw_probe_b",
				      sizeof(struct fw_rule_key), sizeof(struct fw_rule), SLOT_ROOM,
				      &typed);
	if (trie >= 0)
		fits = bpf_map_update_elem(o, &zero, &trie, BPF_ANY) == 0;
	if (trie >= 0)
		close(trie);
	if (o >= 0)
		close(o);
	close(tmpl);
	return fits;
}

int fw_rs_trie_create(struct fw_dp_rules *r)
{
	LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = BPF_F_NO_PREALLOC);
	struct btf *btf = r->btf; /* set before any trie is made */
	int fd;

	if (btf) {
		opts.btf_fd = btf__fd(btf);
		opts.btf_key_type_id = r->btf_key;
		opts.btf_value_type_id = r->btf_value;
		fd = bpf_map_create(BPF_MAP_TYPE_LPM_TRIE, "fw_rules", sizeof(struct fw_rule_key),
				    sizeof(struct fw_rule), SLOT_ROOM, &opts);
		if (fd >= 0)
			return fd;
		opts.btf_fd = opts.btf_key_type_id = opts.btf_value_type_id = 0;
	}
	fd = bpf_map_create(BPF_MAP_TYPE_LPM_TRIE, "fw_rules", sizeof(struct fw_rule_key),
			    sizeof(struct fw_rule), SLOT_ROOM, &opts);
	return fd < 0 ? -errno : fd;
}

void fw_rs_trie_btf(struct fw_dp_rules *r)
{
	rules_btf(r);
	if (r->btf && !trie_btf_fits(r)) {
		fw_debug("rule tries without BTF: this kernel refuses them in the slots");
		btf__free(r->btf);
		r->btf = NULL;
	}
}

int fw_rs_trie_put(struct fw_dp_rules *r, int fd, __u32 id, const struct fw_compiled_set *set,
		   __u32 gen, __u32 pgen)
{
	size_t written = batch_put(r, fd, set, gen, pgen);
	int err = 0;

	for (; written < set->n; written++) {
		struct fw_rule v = set->entries[written].rule;
		struct fw_rule_key k;

		key_of(&k, &set->entries[written].key, gen);
		if (set->nports && v.portset)
			v.portset |= pgen;
		if (bpf_map_update_elem(fd, &k, &v, BPF_ANY)) {
			err = -errno;
			fw_err("subject %u: can't write rule trie: %s", id, strerror(-err));
			break;
		}
	}
	if (!err)
		return 0;
	/* nothing names the new generation yet: it goes at once */
	for (size_t i = 0; i < written; i++) {
		struct fw_rule_key k;

		key_of(&k, &set->entries[i].key, gen);
		bpf_map_delete_elem(fd, &k);
	}
	return err;
}

struct older {
	__u32 keep;
	struct fw_recs keys;
};

static int collect_older(const void *key, const void *val, void *ctx)
{
	const struct fw_rule_key *k = key;
	struct older *o = ctx;

	(void)val;
	return ntohl(k->gen) < o->keep ? fw_recs_push(&o->keys, key) : 0;
}

/* Deletes the generations of fd before keep (~0u: all). */
int fw_rs_trie_delete_older(int fd, __u32 keep)
{
	struct older o = {.keep = keep, .keys = {.size = sizeof(struct fw_rule_key)}};
	int err = fw_dp_scan(fd, collect_older, &o);

	if (!err)
		err = fw_dp_delete_keys(fd, o.keys.data, o.keys.n, o.keys.size);
	free(o.keys.data);
	return err;
}
