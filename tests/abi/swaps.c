// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Policy changes without map-in-map slot writes: after the first start's
 * pre-population, hundreds of adds, updates, removes and rebinds through
 * the registry make no slot write, and the programs (bpf_prog_test_run)
 * see at every step the whole old or the whole new rule set: an address
 * both allow stays allowed throughout (also from a thread sending while
 * the swaps run), an old-only address drops after, a new-only passes
 * after, and a rebind's learned addresses are gone. Needs root. */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/pkt_cls.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "common/addr.h"
#include "common/clock.h"
#include "datapath/datapath.h"
#include "datapath/leases.h"
#include "datapath/rules.h"
#include "subjects/registry.h"
#include "swaps.h"

#define ROUNDS 200

static struct fw_ip ip(const char *text)
{
	struct fw_ip a;

	if (fw_addr_parse(text, &a, NULL)) {
		fprintf(stderr, "test bug: bad address %s\n", text);
		exit(2);
	}
	return a;
}

/* How many entries subject id's slot trie holds: of generation gen, and
 * of any other; -1 when the trie can't be read. */
static int trie_count(struct fw_dp *dp, __u32 id, __u32 gen, int *others)
{
	struct fw_rule_key k, *prev = NULL;
	__u32 inner;
	int fd, n = 0;

	*others = 0;
	if (bpf_map_lookup_elem(dp->rules_fd, &id, &inner))
		return -1;
	fd = bpf_map_get_fd_by_id(inner);
	if (fd < 0)
		return -1;
	while (bpf_map_get_next_key(fd, prev, &k) == 0) {
		if (ntohl(k.gen) == gen)
			n++;
		else
			(*others)++;
		prev = &k;
	}
	close(fd);
	return n;
}

/* How many sets subject id holds in map fd (fastwall_rule_sets, chunked:
 * a set counted once, by its chunk 0; or fastwall_rule_ranges): of
 * generation gen, and of any other. */
static int hashed_count(int fd, bool chunked, __u32 id, __u32 gen, int *others)
{
	struct fw_set_key k, *prev = NULL, next;
	int n = 0;

	*others = 0;
	while (bpf_map_get_next_key(fd, prev, &next) == 0) {
		k = next;
		prev = &k;
		if ((chunked ? FW_SET_ID(k.subject) : k.subject) != id ||
		    (chunked && FW_SET_CHUNK(k.subject)))
			continue;
		if (k.gen == gen)
			n++;
		else
			(*others)++;
	}
	return n;
}

static const char *form_name(__u32 gen)
{
	return gen & FW_GEN_RANGE ? "a range table"
	       : gen & FW_GEN_SET ? "a small set"
				  : "the slot trie";
}

/* How many chunks of small set {id, gen} fastwall_rule_sets holds. */
static int set_chunks(struct fw_dp *dp, __u32 id, __u32 gen)
{
	struct fw_rule_set v;
	int n = 0;

	for (__u32 c = 0; c < FW_SET_CHUNKS; c++) {
		struct fw_set_key k = {.subject = FW_SET_SUBJECT(id, c), .gen = gen};

		n += bpf_map_lookup_elem(dp->rule_sets_fd, &k, &v) == 0;
	}
	return n;
}

static __u32 c_id;
static struct fw_set_key c_orphan;

/* After the worker ran: subject name's rules are its live generation and
 * nothing older (the deletions by key list missed no key, no retired set
 * is left), in the trie or as one small set. */
static bool trie_clean(struct fw_dp *dp, struct fw_registry *reg, const char *name,
		       const char *what)
{
	struct fw_entry *e = fw_reg_find(reg, name);
	int others, live, sets_others, sets, ranges_others, ranges;
	__u32 gen;
	bool ok;

	fw_dp_rules_settle(dp);
	if (!e)
		return false;
	gen = fw_dp_rules_gen(dp, e->id);
	live = trie_count(dp, e->id, gen, &others);
	sets = hashed_count(dp->rule_sets_fd, true, e->id, gen, &sets_others);
	ranges = hashed_count(dp->rule_ranges_fd, false, e->id, gen, &ranges_others);
	ok = others == 0 && sets_others == 0 && ranges_others == 0;
	if (gen & FW_GEN_SET)
		ok = ok && live == 0 && sets == 1 && ranges == 0;
	else if (gen & FW_GEN_RANGE)
		ok = ok && live == 0 && sets == 0 && ranges == 1;
	else
		ok = ok && live > 0 && sets == 0 && ranges == 0;
	check(ok,
	      "swaps: %s: the live generation only (%s; trie %d live, %d older; sets %d live, "
	      "%d older; range tables %d live, %d older)",
	      what, form_name(gen), live, others, sets, sets_others, ranges, ranges_others);
	return ok;
}

/* The ingress verdict of a UDP packet src -> dst (IPv4), TC_ACT_*. */
static int verdict(struct fw_dp *dp, const char *src, const char *dst)
{
	unsigned char p[42] = {0x02, 0,	   0,	 0, 0, 0x01, 0x02, 0, 0, 0, 0,	0x02,
			       0x08, 0x00, 0x45, 0, 0, 28,   0,	   1, 0, 0, 64, 17};
	unsigned char out[128];
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = p, .data_size_in = sizeof(p),
		    .data_out = out, .data_size_out = sizeof(out), .repeat = 1);
	struct in_addr s, d;

	inet_pton(AF_INET, src, &s);
	inet_pton(AF_INET, dst, &d);
	memcpy(p + 26, &s, 4);
	memcpy(p + 30, &d, 4);
	p[34] = 0x9c; /* sport 40000 */
	p[35] = 0x40;
	p[37] = 53; /* dport 53 */
	p[39] = 8;
	if (bpf_prog_test_run_opts(dp->from_sandbox_fd, &opts))
		return -1;
	return (int)opts.retval;
}

static int put(struct fw_registry *r, const char *name, const char *const *addrs,
	       const char *const *allow)
{
	struct fw_subject_spec spec;
	char err[256] = "";
	int ret;

	memset(&spec, 0, sizeof(spec));
	snprintf(spec.name, sizeof(spec.name), "%s", name);
	for (; *addrs; addrs++)
		spec.addrs[spec.naddrs++] = ip(*addrs);
	spec.state = FW_STATE_ACTIVE;
	fw_policy_init(&spec.policy);
	ret = fw_policy_set_default(&spec.policy, "deny", err, sizeof(err));
	for (; !ret && *allow; allow++)
		ret = fw_policy_add_rule(&spec.policy, "allow", *allow, NULL, 0, err, sizeof(err));
	if (!ret)
		ret = fw_reg_upsert(r, &spec, FW_ORIGIN_STATIC, NULL);
	fw_policy_free(&spec.policy);
	if (ret)
		printf("can't put %s: %s %s\n", name, strerror(-ret), err);
	return ret;
}

static int unbind(struct fw_registry *r, const char *name)
{
	struct fw_entry *e = fw_reg_get(r, name, false);
	int err;

	if (!e)
		return -ENOENT;
	err = fw_reg_unbind(r, e);
	fw_reg_put(r, e);
	return err;
}

#define SRC  "10.42.0.10"
#define BOTH "192.0.2.10"    /* allowed by every version */
#define ODD  "198.51.100.10" /* allowed by the odd versions only */
#define EVEN "203.0.113.10"  /* allowed by the even versions only */

static const char *const s_addrs[] = {SRC, NULL};
static const char *const s_addrs2[] = {SRC, "10.42.0.11", NULL};
static const char *const v_odd[] = {"192.0.2.0/24", "198.51.100.0/24", "100.64.0.0/16", NULL};
static const char *const v_even[] = {"192.0.2.0/24", "203.0.113.0/24", "100.65.0.0/16", NULL};

#define C_SRC "10.42.3.10"
static const char *const c_addrs[] = {C_SRC, NULL};

/* 24 /32s, 192.0.2.100 to .122 and then last: 25 compiled entries with
 * the default, a set of two chunks (valid until the next call) */
static const char *const *c_policy(unsigned int last)
{
	static char text[24][24];
	static const char *list[25];

	for (unsigned int i = 0; i < 24; i++) {
		snprintf(text[i], sizeof(text[i]), "192.0.2.%u/32", i < 23 ? 100 + i : last);
		list[i] = text[i];
	}
	return list; /* list[24] stays NULL */
}

static bool sets_on(void)
{
	const char *v = getenv("FASTWALL_RULE_SET_MAX");

	return !v || strcmp(v, "0") != 0;
}

struct sender {
	struct fw_dp *dp;
	volatile bool stop;
	long sent, dropped;
};

static void *send_loop(void *arg)
{
	struct sender *s = arg;

	while (!s->stop) {
		if (verdict(s->dp, SRC, BOTH) != TC_ACT_OK)
			s->dropped++;
		s->sent++;
	}
	return NULL;
}

static double ms_since(__u64 t0)
{
	return (double)(fw_now_ns() - t0) / 1e6;
}

/* fastwall_rules_epoch's value: cached trie answers of an older one are
 * not used */
static __u64 epoch_of(struct fw_dp *dp)
{
	__u32 zero = 0;
	__u64 v = 0;

	bpf_map_lookup_elem(dp->rules_epoch_fd, &zero, &v);
	return v;
}

void case_swaps(void)
{
	struct fw_config cfg = {
		.event_burst = 1u << 30,
		.event_interval_ns = 1,
		.pod_flow_timeout_ns = 120ull * FW_NSEC_PER_SEC,
		.frag_timeout_ns = 30ull * FW_NSEC_PER_SEC,
		.dns_port = 53,
	};
	struct fw_registry reg = {};
	struct sender snd = {};
	struct fw_dp *dp = NULL;
	char root[128];
	pthread_t th;
	__u64 t0, w0, w1, epoch;
	double t_open, t_reopen, t_upd = 0, t_add = 0, t_del = 0, t_rebind = 0;
	bool both_ok = true, after_ok = true, rebind_ok = true;
	int err;

	snprintf(root, sizeof(root), "/sys/fs/bpf/fastwall-swaps-%d", (int)getpid());
	t0 = fw_now_ns();
	err = fw_dp_open(root, &dp);
	t_open = ms_since(t0);
	check(err == 0, "swaps: first start (%d), slot tries written in %.0f ms", err, t_open);
	if (err)
		goto out;
	check(fw_dp_slot_writes(dp) == FW_MAX_SUBJECTS, "swaps: first start wrote %llu slots",
	      (unsigned long long)fw_dp_slot_writes(dp));
	err = fw_reg_init(&reg, dp);
	err = err ?: fw_dp_config_set(dp, &cfg);
	/* warm-up: the first add, swap, rebind and remove, and the first reap */
	err = err ?: put(&reg, "s", s_addrs, v_odd);
	err = err ?: put(&reg, "s", s_addrs, v_even);
	err = err ?: put(&reg, "w", (const char *const[]){"10.42.2.1", NULL}, v_odd);
	err = err ?: put(&reg, "w", (const char *const[]){"10.42.2.2", NULL}, v_odd);
	err = err ?: unbind(&reg, "w");
	check(err == 0, "swaps: warm-up (%d)", err);
	if (err)
		goto out;
	fw_reg_reap(&reg, 0);
	w0 = fw_dp_slot_writes(dp);

	snd.dp = dp;
	if (pthread_create(&th, NULL, send_loop, &snd)) {
		check(false, "swaps: sender thread");
		goto out;
	}
	for (int i = 0; i < ROUNDS; i++) {
		bool odd = i % 2 == 0;
		char name[32], a[32];
		int st;

		/* an update: the rule set changes in two entries */
		t0 = fw_now_ns();
		err = put(&reg, "s", s_addrs, odd ? v_odd : v_even);
		t_upd += ms_since(t0);
		if (err)
			break;
		both_ok = both_ok && verdict(dp, SRC, BOTH) == TC_ACT_OK;
		st = verdict(dp, SRC, odd ? ODD : EVEN) == TC_ACT_OK &&
		     verdict(dp, SRC, odd ? EVEN : ODD) == TC_ACT_SHOT;
		if (!st && after_ok)
			printf("  round %d: new-only or old-only wrong\n", i);
		after_ok = after_ok && st;

		/* an add and a remove */
		snprintf(name, sizeof(name), "x%d", i);
		snprintf(a, sizeof(a), "10.42.1.%d", 1 + i % 250);
		t0 = fw_now_ns();
		err = put(&reg, name, (const char *const[]){a, NULL}, v_odd);
		t_add += ms_since(t0);
		if (!err && verdict(dp, a, ODD) != TC_ACT_OK)
			after_ok = false;
		t0 = fw_now_ns();
		err = err ?: unbind(&reg, name);
		t_del += ms_since(t0);
		if (err)
			break;
		if (verdict(dp, a, ODD) != TC_ACT_SHOT)
			after_ok = false;

		/* a rebind every 10 rounds: what the old id learned is gone */
		if (i % 10 == 0) {
			struct fw_entry *e = fw_reg_find(&reg, "s");
			struct fw_ip learned = ip("100.66.0.1");
			__u32 old_id = e ? e->id : 0;

			if (!e ||
			    fw_dp_learned_put(dp, e->id, &learned, fw_now_ns() + 60000000000ull))
				break;
			if (verdict(dp, SRC, "100.66.0.1") != TC_ACT_OK) {
				printf("  round %d: the learned address does not pass\n", i);
				rebind_ok = false;
			}
			t0 = fw_now_ns();
			err = put(&reg, "s", s_addrs2, odd ? v_odd : v_even); /* a new binding */
			t_rebind += ms_since(t0);
			if (err)
				break;
			if (verdict(dp, SRC, "100.66.0.1") != TC_ACT_SHOT ||
			    verdict(dp, SRC, BOTH) != TC_ACT_OK || e->id == old_id) {
				printf("  round %d: after the rebind learned %d, both %d\n", i,
				       verdict(dp, SRC, "100.66.0.1"), verdict(dp, SRC, BOTH));
				rebind_ok = false;
			}
		}
		if (i % 50 == 49)
			fw_reg_reap(&reg, 0); /* ids come back for reuse */
	}
	snd.stop = true;
	pthread_join(th, NULL);
	w1 = fw_dp_slot_writes(dp);
	check(err == 0, "swaps: %d rounds of update, add, remove (and rebinds) (%d)", ROUNDS, err);
	check(w1 == w0, "swaps: no map-in-map slot write after warm-up (%llu)",
	      (unsigned long long)(w1 - w0));
	check(both_ok && snd.dropped == 0 && snd.sent > 0,
	      "swaps: the address both versions allow never dropped (%ld of %ld sent "
	      "meanwhile dropped)",
	      snd.dropped, snd.sent);
	check(after_ok, "swaps: after each change the new-only address passes, the old-only one "
			"and a removed subject's traffic drop");
	check(rebind_ok, "swaps: a rebind's learned address is gone, its rules live");
	printf("# per op, mean over %d: update %.3f ms, add %.3f ms, remove %.3f ms, rebind "
	       "%.3f ms\n",
	       ROUNDS, t_upd / ROUNDS, t_add / ROUNDS, t_del / ROUNDS, t_rebind / (ROUNDS / 10));
	trie_clean(dp, &reg, "s", "after the rounds");

	/* the same swaps one entry at a time, as kernels without LPM batches
	 * (5.10) write them */
	fw_dp_rules_no_batch(dp);
	after_ok = true;
	for (int i = 0; i < 20 && !err; i++) {
		bool odd = i % 2 == 0;

		err = put(&reg, "s", s_addrs, odd ? v_odd : v_even);
		after_ok = after_ok && !err && verdict(dp, SRC, BOTH) == TC_ACT_OK &&
			   verdict(dp, SRC, odd ? ODD : EVEN) == TC_ACT_OK &&
			   verdict(dp, SRC, odd ? EVEN : ODD) == TC_ACT_SHOT;
	}
	check(err == 0 && after_ok && fw_dp_slot_writes(dp) == w0,
	      "swaps: 20 more swaps written entry by entry hold the same verdicts (%d)", err);
	trie_clean(dp, &reg, "s", "after the entry-by-entry swaps");

	/* a set of two chunks, then a write of its next generation cut short
	 * before its chunk 0 (what a crash there leaves): the restart must
	 * delete that chunk, or the generation's next write would collide */
	err = put(&reg, "c", c_addrs, c_policy(123));
	{
		struct fw_entry *e = fw_reg_find(&reg, "c");
		__u32 gen = e ? fw_dp_rules_gen(dp, e->id) : 0;
		struct fw_rule_set chunk = {0};

		c_id = e ? e->id : 0;
		c_orphan = (struct fw_set_key){
			.subject = FW_SET_SUBJECT(c_id, 1),
			.gen = (((gen & ~FW_GEN_SET) + 1) & ~FW_GEN_SET) | FW_GEN_SET,
		};
		check(!err && !!(gen & FW_GEN_SET) == sets_on() &&
			      verdict(dp, C_SRC, "192.0.2.123") == TC_ACT_OK &&
			      verdict(dp, C_SRC, "192.0.2.124") == TC_ACT_SHOT &&
			      (!sets_on() || set_chunks(dp, c_id, gen) == 2),
		      "swaps: 25 entries are %s and decide (%d, gen %#x, %d chunks)",
		      sets_on() ? "one set of two chunks" : form_name(gen), err, gen,
		      set_chunks(dp, c_id, gen));
		if (sets_on()) {
			struct fw_set_key k1 = {.subject = c_orphan.subject, .gen = gen};

			bpf_map_lookup_elem(dp->rule_sets_fd, &k1, &chunk);
			check(bpf_map_update_elem(dp->rule_sets_fd, &c_orphan, &chunk,
						  BPF_NOEXIST) == 0,
			      "swaps: a chunk of the next generation, without its chunk 0, "
			      "planted");
		}
	}

	/* a restart adopts: no slot is written, the rules still hold */
	fw_dp_rules_settle(dp);
	fw_reg_free(&reg);
	epoch = epoch_of(dp);
	fw_dp_close(dp);
	t0 = fw_now_ns();
	err = fw_dp_open(root, &dp);
	t_reopen = ms_since(t0);
	check(err == 0 && fw_dp_slot_writes(dp) == 0,
	      "swaps: a restart opens in %.0f ms and writes no slot (%d)", t_reopen, err);
	if (err)
		goto out;
	/* generations restart from what the tries hold: answers cached
	 * before must not match a reused one */
	check(epoch_of(dp) > epoch, "swaps: a restart raises the rule cache's epoch (%llu -> %llu)",
	      (unsigned long long)epoch, (unsigned long long)epoch_of(dp));
	err = fw_reg_init(&reg, dp);
	check(err == 0 && verdict(dp, SRC, BOTH) == TC_ACT_OK,
	      "swaps: after the restart the adopted rules hold (%d)", err);
	fw_dp_slots_warm(dp);
	err = put(&reg, "s", s_addrs, v_odd);
	err = err ?: put(&reg, "s", s_addrs, v_even);
	check(err == 0 && fw_dp_slot_writes(dp) == 0 && verdict(dp, SRC, EVEN) == TC_ACT_OK &&
		      verdict(dp, SRC, ODD) == TC_ACT_SHOT,
	      "swaps: swaps after the restart write no slot either");
	/* the keys of what the restart found came from its scan */
	trie_clean(dp, &reg, "s", "swaps after the restart");
	/* and the range tables it adopted kept their slots: every element
	 * names a slot of its own, counted as taken, so no swap since wrote
	 * over another subject's table */
	{
		struct fw_set_key k, *prev = NULL, next;
		static bool seen[FW_RANGE_SLOTS];
		__u32 slot, n = 0;
		bool distinct = true;

		fw_dp_rules_settle(dp);
		memset(seen, 0, sizeof(seen));
		while (bpf_map_get_next_key(dp->rule_ranges_fd, prev, &next) == 0) {
			k = next;
			prev = &k;
			if (bpf_map_lookup_elem(dp->rule_ranges_fd, &k, &slot) ||
			    slot >= FW_RANGE_SLOTS || seen[slot])
				distinct = false;
			else
				seen[slot] = true;
			n++;
		}
		check(distinct && fw_dp_range_slots_used(dp) == n,
		      "swaps: after the restart every range table has a slot of its own, and "
		      "those are the slots taken (%u tables, %u taken)",
		      n, fw_dp_range_slots_used(dp));
	}
	/* a subject the restart adopted decides as before */
	check(verdict(dp, C_SRC, "192.0.2.123") == TC_ACT_OK &&
		      verdict(dp, C_SRC, "192.0.2.124") == TC_ACT_SHOT,
	      "swaps: a subject the restart adopted still decides after the others' swaps (%s)",
	      form_name(fw_dp_rules_gen(dp, c_id)));
	if (sets_on()) {
		struct fw_rule_set chunk;
		bool gone = bpf_map_lookup_elem(dp->rule_sets_fd, &c_orphan, &chunk) != 0;

		err = put(&reg, "c", c_addrs, c_policy(124));
		check(gone && !err && verdict(dp, C_SRC, "192.0.2.124") == TC_ACT_OK &&
			      verdict(dp, C_SRC, "192.0.2.123") == TC_ACT_SHOT &&
			      fw_dp_rules_gen(dp, c_id) == c_orphan.gen &&
			      set_chunks(dp, c_id, c_orphan.gen) == 2,
		      "swaps: the restart deleted the cut-short chunk, and the generation it "
		      "carried is written whole (%d, gone %d)",
		      err, gone);
		fw_dp_rules_settle(dp);
		trie_clean(dp, &reg, "c", "a set of two chunks after the restart");
	}
	fw_reg_free(&reg);
out:
	fw_dp_close(dp);
	fw_dp_purge(root);
}
