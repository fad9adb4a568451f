// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* cp_kernel: what one control-plane operation costs in this kernel, next to
 * a plain array update in the same process (the yardstick).
 *
 *   cp_kernel [-n OPS] [-w WARMUP] [-p PINPREFIX] [-r RULES[,RULES...]]
 *
 * On a fresh pin directory: fw_dp_open (timed: "first start"), a registry
 * over it, then for each policy size of -r (default 4, 16, 32 and 64 CIDR
 * rules) OPS rounds of add (a new active subject, one address, the
 * policy, through fw_reg_upsert), update (a changed policy, same binding:
 * same id), rebind (same name, another address: a new id) and remove
 * (fw_reg_unbind), each round also doing one bpf_map_update_elem on a
 * BPF_MAP_TYPE_ARRAY. Each operation is timed twice: whole, and its
 * kernel writes, the time its thread spent inside bpf(2) (this program's
 * syscall() stands in front of libc's, which libbpf calls for every map
 * operation). The target is for the kernel writes: what the kernel makes
 * an operation wait for, the policy compiler and the registry aside
 * (those run in fastwalld's own time and are the same on every kernel).
 * Emulated kernels are 10-40x slower than real ones, but both sides of
 * p50(op) / p50(plain update) slow down together, so the ratio carries
 * across machines; a kernel that waits for an RCU grace period in an
 * operation shows a ratio in the hundreds or thousands.
 *
 * A policy of at most FW_SET_LARGEST compiled entries is a small set in
 * fastwall_rule_sets, one element per FW_SET_MAX entries (its chunks), one
 * of up to FW_RANGE_RULES a range table in fastwall_rule_ranges (one
 * element), a larger one a generation of LPM trie entries, one insert per
 * entry. The default sizes, 4, 16, 32, 64, 200 and 300 CIDR rules, are a
 * one-chunk set twice, a set of two chunks, two range tables and a trie;
 * the run prints the form each size took, and from the first two sizes
 * what one more rule costs, in plain updates. The target covers the sets
 * and range tables; the trie's figures say what a policy past them
 * costs.
 *
 * Prints a table per size and one machine-readable line per figure ("cp
 * add_r4 p50_us=... p99_us=... ops=... ratio=..."). Never judges timing: the exit
 * status is non-zero only when an operation fails or its effect is wrong
 * (id kept or changed, subject gone). The pin directory is purged on every
 * exit path. */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "common/addr.h"
#include "common/log.h"
#include "datapath/datapath.h"
#include "datapath/rules.h"
#include "policy/policy.h"
#include "subjects/registry.h"

#define RULES_MAX     1024 /* CIDR rules of a policy */
#define SIZES_MAX     6	   /* policy sizes of one run */
#define PLAIN_ENTRIES 1024
#define PLAIN_VALUE   64	  /* bytes: a small record, like most fastwall values */
#define TARGET_RATIO  20	  /* an operation costs at most 20 plain updates */
#define ADD_NET	      0x0a400000u /* 10.64.0.0/16: the added subjects */
#define REBIND_NET    0x0a410000u /* 10.65.0.0/16: where rebinds move them */
#define GATEWAY	      0x0a400001u
#define MAX_OPS	      60000u
#define REAP_EVERY    64 /* rounds; each round retires two ids */
#define NSEC_PER_USEC 1000.0

enum op { OP_ADD, OP_UPDATE, OP_REMOVE, OP_REBIND, OP_PLAIN, OP_MAX };
static const char *const op_name[OP_MAX] = {"add", "update", "remove", "rebind", "plain"};

static __u64 now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
}

static char pin[256];
static unsigned int nrules; /* of the policies being built */

/* The kernel writes of an operation: this thread's time inside bpf(2).
 * libbpf makes every map call through syscall(3), so this program's own
 * syscall() stands in front of libc's for it (the executable's symbol
 * wins) and adds up what each bpf call took; everything else passes
 * through untimed. */
static __thread __u64 bpf_ns;
static __u64 *kw_samples[OP_MAX]; /* per operation: its bpf_ns */

long syscall(long nr, ...)
{
	static long (*real)(long, ...);
	long a[6], ret;
	va_list ap;
	__u64 t0;

	if (!real)
		real = (long (*)(long, ...))dlsym(RTLD_NEXT, "syscall");
	va_start(ap, nr);
	for (int i = 0; i < 6; i++)
		a[i] = va_arg(ap, long); /* as libc's own: unused ones are junk */
	va_end(ap);
	if (nr != __NR_bpf)
		return real(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
	t0 = now_ns();
	ret = real(nr, a[0], a[1], a[2], a[3], a[4], a[5]);
	bpf_ns += now_ns() - t0;
	return ret;
}

static void on_signal(int sig)
{
	if (pin[0])
		fw_dp_purge(pin); /* unlink/rmdir only */
	signal(sig, SIG_DFL);
	raise(sig);
}

static void v4(struct fw_ip *ip, __u32 host_order)
{
	fw_addr_from_v4(ip, htonl(host_order));
}

/* Default deny and nrules CIDR rules (one deny); variant v moves half of them, so
 * an update with another variant is a real change of the rule set. */
static int build_policy(struct fw_policy *p, unsigned int v)
{
	char err[256], cidr[64];
	int ret;

	fw_policy_init(p);
	ret = fw_policy_set_default(p, "deny", err, sizeof(err));
	if (!ret)
		ret = fw_policy_add_rule(p, "deny", "203.0.113.66/32", NULL, 0, err, sizeof(err));
	for (unsigned int k = 1; !ret && k < nrules; k++) {
		unsigned int half = nrules / 2, b = k <= half ? (v * half + k) % 4096 : k;

		snprintf(cidr, sizeof(cidr), "198.%u.%u.%u/28", k <= half ? 18u : 19u, b / 16,
			 (b % 16) * 16);
		ret = fw_policy_add_rule(p, "allow", cidr, NULL, 0, err, sizeof(err));
	}
	if (ret) {
		fprintf(stderr, "cp_kernel: policy: %s\n", err);
		fw_policy_free(p);
	}
	return ret;
}

static int build_spec(struct fw_subject_spec *spec, unsigned int i, __u32 addr, unsigned int v)
{
	memset(spec, 0, sizeof(*spec));
	snprintf(spec->name, sizeof(spec->name), "cpk-%u", i);
	v4(&spec->addrs[0], addr);
	spec->naddrs = 1;
	spec->has_gateway[FW_FAM_V4] = true;
	v4(&spec->gateway[FW_FAM_V4], GATEWAY);
	spec->has_private[FW_FAM_V4] = true;
	v4(&spec->private_net[FW_FAM_V4].net, ADD_NET);
	spec->private_net[FW_FAM_V4].plen = FW_V4_PREFIX_BASE + 15;
	spec->state = FW_STATE_ACTIVE;
	return build_policy(&spec->policy, v);
}

static __u32 id_of(struct fw_registry *r, const char *name)
{
	struct fw_entry *e = fw_reg_find(r, name);

	return e ? e->id : 0;
}

/* One upsert of subject i at addr with policy variant v, timed into *ns. */
static int timed_upsert(struct fw_registry *r, struct fw_subject_spec *spec, unsigned int i,
			__u32 addr, unsigned int v, __u64 *ns, __u64 *kw)
{
	__u64 t0, k0;
	int err = build_spec(spec, i, addr, v);

	if (err)
		return err;
	k0 = bpf_ns;
	t0 = now_ns();
	err = fw_reg_upsert(r, spec, FW_ORIGIN_STATIC, NULL);
	*ns = now_ns() - t0;
	*kw = bpf_ns - k0;
	fw_policy_free(&spec->policy);
	if (err)
		fprintf(stderr, "cp_kernel: upsert %s: %s\n", spec->name, strerror(-err));
	return err;
}

static int timed_unbind(struct fw_registry *r, const char *name, __u64 *ns, __u64 *kw)
{
	struct fw_entry *e;
	__u64 k0 = bpf_ns, t0 = now_ns();
	int err;

	e = fw_reg_get(r, name, false);
	if (!e) {
		fprintf(stderr, "cp_kernel: remove %s: not in the registry\n", name);
		return -ENOENT;
	}
	err = fw_reg_unbind(r, e);
	fw_reg_put(r, e);
	*ns = now_ns() - t0;
	*kw = bpf_ns - k0;
	if (err)
		fprintf(stderr, "cp_kernel: remove %s: %s\n", name, strerror(-err));
	return err;
}

static int timed_plain(int fd, __u32 key, __u64 *ns, __u64 *kw)
{
	unsigned char val[PLAIN_VALUE];
	__u64 t0, k0;
	int err;

	memset(val, (int)(key & 0xff), sizeof(val));
	k0 = bpf_ns;
	t0 = now_ns();
	err = bpf_map_update_elem(fd, &key, val, BPF_ANY);
	*ns = now_ns() - t0;
	*kw = bpf_ns - k0;
	if (err) {
		err = -errno;
		fprintf(stderr, "cp_kernel: array update: %s\n", strerror(-err));
	}
	return err;
}

/* One round: add, update, rebind, remove of subject i, and a plain update.
 * The checks are what a user of the registry would see. samples == NULL
 * for the warm-up. */
/* the form the last add's rules took: FW_GEN_SET (a small set of
 * added_chunks chunks), FW_GEN_RANGE (a range table) or 0 (the slot
 * trie) */
static __u32 added_form;
static unsigned int added_chunks;

static unsigned int chunks_of(struct fw_dp *dp, __u32 id, __u32 gen)
{
	struct fw_rule_set v;
	unsigned int n = 0;

	for (__u32 c = 0; c < FW_SET_CHUNKS; c++) {
		struct fw_set_key k = {.subject = FW_SET_SUBJECT(id, c), .gen = gen};

		n += bpf_map_lookup_elem(dp->rule_sets_fd, &k, &v) == 0;
	}
	return n;
}

static int round_once(struct fw_registry *r, struct fw_subject_spec *spec, int plain_fd,
		      unsigned int i, __u64 *samples[OP_MAX], unsigned int slot)
{
	__u64 t[OP_MAX], w[OP_MAX];
	__u32 id_add, id;
	int err;

	err = timed_upsert(r, spec, i, ADD_NET + 256 + i, 0, &t[OP_ADD], &w[OP_ADD]);
	if (err)
		return err;
	id_add = id_of(r, spec->name);
	if (!id_add) {
		fprintf(stderr, "cp_kernel: add %s: no kernel id\n", spec->name);
		return -EIO;
	}
	added_form = fw_dp_rules_gen(r->dp, id_add) & FW_GEN_FORMS;
	added_chunks = added_form == FW_GEN_SET
			       ? chunks_of(r->dp, id_add, fw_dp_rules_gen(r->dp, id_add))
			       : 0;
	err = timed_upsert(r, spec, i, ADD_NET + 256 + i, 1, &t[OP_UPDATE], &w[OP_UPDATE]);
	if (err)
		return err;
	id = id_of(r, spec->name);
	if (id != id_add) {
		fprintf(stderr, "cp_kernel: update %s: id %u became %u\n", spec->name, id_add, id);
		return -EIO;
	}
	err = timed_plain(plain_fd, i % PLAIN_ENTRIES, &t[OP_PLAIN], &w[OP_PLAIN]);
	if (err)
		return err;
	err = timed_upsert(r, spec, i, REBIND_NET + 256 + i, 1, &t[OP_REBIND], &w[OP_REBIND]);
	if (err)
		return err;
	id = id_of(r, spec->name);
	if (!id || id == id_add) {
		fprintf(stderr, "cp_kernel: rebind %s: id %u, was %u\n", spec->name, id, id_add);
		return -EIO;
	}
	err = timed_unbind(r, spec->name, &t[OP_REMOVE], &w[OP_REMOVE]);
	if (err)
		return err;
	if (id_of(r, spec->name)) {
		fprintf(stderr, "cp_kernel: remove %s: still has a kernel id\n", spec->name);
		return -EIO;
	}
	if (samples)
		for (int k = 0; k < OP_MAX; k++) {
			samples[k][slot] = t[k];
			kw_samples[k][slot] = w[k];
		}
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	__u64 x = *(const __u64 *)a, y = *(const __u64 *)b;

	return x < y ? -1 : x > y;
}

static double pct_us(const __u64 *sorted, size_t n, double p)
{
	size_t i = (size_t)(p / 100.0 * (double)(n - 1) + 0.5);

	return sorted[i < n ? i : n - 1] / NSEC_PER_USEC;
}

static void print_env(void)
{
	struct utsname u;
	char line[256], model[128] = "?", load[64] = "?", exp[16] = "?";
	FILE *f;

	uname(&u);
	f = fopen("/proc/cpuinfo", "r");
	while (f && fgets(line, sizeof(line), f)) {
		char *c = strchr(line, ':');

		if (!strncmp(line, "model name", 10) && c) {
			snprintf(model, sizeof(model), "%s", c + 2);
			model[strcspn(model, "\n")] = '\0';
			break;
		}
	}
	if (f)
		fclose(f);
	f = fopen("/proc/loadavg", "r");
	if (f && fgets(line, sizeof(line), f)) {
		double l1, l5, l15;

		if (sscanf(line, "%lf %lf %lf", &l1, &l5, &l15) == 3)
			snprintf(load, sizeof(load), "%.2f %.2f %.2f", l1, l5, l15);
	}
	if (f)
		fclose(f);
	/* a guest booted with rcupdate.rcu_expedited=1 ends grace periods
	 * early, which shrinks what a grace-period wait costs */
	f = fopen("/sys/kernel/rcu_expedited", "r");
	if (f && fgets(exp, sizeof(exp), f))
		exp[strcspn(exp, "\n")] = '\0';
	if (f)
		fclose(f);
	printf("cp_kernel: kernel %s, %ld CPUs (%s), load %s, rcu_expedited %s\n", u.release,
	       sysconf(_SC_NPROCESSORS_ONLN), model, load, exp);
	printf("cp kernel release=%s cpus=%ld rcu_expedited=%s\n", u.release,
	       sysconf(_SC_NPROCESSORS_ONLN), exp);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: cp_kernel [-n OPS] [-w WARMUP] [-p PINPREFIX] [-r RULES[,RULES...]]\n");
}

struct fig {
	double p50, p99, ops, ratio;	 /* the whole operation */
	double kw_p50, kw_p99, kw_ratio; /* its kernel writes: what the target is for */
	bool met;
};

/* The rounds of one policy size (nrules): its table and machine lines;
 * fig[] gets the figures. */
static int run_size(struct fw_registry *reg, struct fw_subject_spec *spec, int plain_fd,
		    unsigned int nops, unsigned int warm, unsigned int *next_subject,
		    __u64 *samples[OP_MAX], struct fig fig[OP_MAX], bool *small)
{
	double plain_p50, kw_plain;
	char form[64];
	int err;

	for (unsigned int i = 0; i < nops + warm; i++) {
		bool measured = i >= warm;

		/* a new subject name (and address) every round of the run */
		err = round_once(reg, spec, plain_fd, (*next_subject)++, measured ? samples : NULL,
				 measured ? i - warm : 0);
		if (err)
			return err;
		/* removed ids wait for the reaper; the daemon reaps in the
		 * background, so this is not timed */
		if (i % REAP_EVERY == REAP_EVERY - 1 && fw_reg_reap(reg, 0) < 0) {
			fprintf(stderr, "cp_kernel: reap failed\n");
			return -EIO;
		}
	}
	for (int k = 0; k < OP_MAX; k++) {
		qsort(samples[k], nops, sizeof(__u64), cmp_u64);
		qsort(kw_samples[k], nops, sizeof(__u64), cmp_u64);
	}
	plain_p50 = pct_us(samples[OP_PLAIN], nops, 50);
	kw_plain = pct_us(kw_samples[OP_PLAIN], nops, 50);
	*small = added_form != 0;
	if (added_form == FW_GEN_SET)
		snprintf(form, sizeof(form), "a small set of %u chunk%s", added_chunks,
			 added_chunks == 1 ? "" : "s");
	else
		snprintf(form, sizeof(form), "%s",
			 added_form == FW_GEN_RANGE ? "a range table" : "the slot trie");
	printf("cp_kernel: a policy of %u CIDR rules (%s): %u operations each after %u warm-up "
	       "rounds; kernel writes = the operation's time in bpf(2); ratio = p50 / p50 of a "
	       "plain array update, target <= %d for the kernel writes\n",
	       nrules, form, nops, warm, TARGET_RATIO);
	printf("cp form_r%u kind=%s chunks=%u\n", nrules,
	       added_form == FW_GEN_SET	    ? "set"
	       : added_form == FW_GEN_RANGE ? "range"
					    : "trie",
	       added_chunks);
	printf("  %-8s %12s %12s %8s  %12s %12s %10s %8s  %s\n", "op", "kernel p50", "kernel p99",
	       "ratio", "whole p50 us", "whole p99 us", "ops/s", "ratio", "target");
	for (int k = 0; k < OP_MAX; k++) {
		double sum = 0;

		for (unsigned int j = 0; j < nops; j++)
			sum += (double)samples[k][j];
		fig[k].p50 = pct_us(samples[k], nops, 50);
		fig[k].p99 = pct_us(samples[k], nops, 99);
		fig[k].ops = sum > 0 ? nops * 1e9 / sum : 0;
		fig[k].ratio = plain_p50 > 0 ? fig[k].p50 / plain_p50 : 0;
		fig[k].kw_p50 = pct_us(kw_samples[k], nops, 50);
		fig[k].kw_p99 = pct_us(kw_samples[k], nops, 99);
		fig[k].kw_ratio = kw_plain > 0 ? fig[k].kw_p50 / kw_plain : 0;
		fig[k].met = fig[k].kw_ratio <= TARGET_RATIO;
		printf("  %-8s %12.1f %12.1f %8.1f  %12.1f %12.1f %10.0f %8.1f  %s\n", op_name[k],
		       fig[k].kw_p50, fig[k].kw_p99, fig[k].kw_ratio, fig[k].p50, fig[k].p99,
		       fig[k].ops, fig[k].ratio,
		       k == OP_PLAIN ? "(yardstick)"
		       : fig[k].met  ? "met"
				     : "not met");
	}
	for (int k = 0; k < OP_MAX; k++)
		printf("cp %s_r%u p50_us=%.1f p99_us=%.1f ops=%.0f ratio=%.1f kw_p50_us=%.1f "
		       "kw_p99_us=%.1f kw_ratio=%.1f%s\n",
		       op_name[k], nrules, fig[k].p50, fig[k].p99, fig[k].ops, fig[k].ratio,
		       fig[k].kw_p50, fig[k].kw_p99, fig[k].kw_ratio,
		       k == OP_PLAIN ? ""
		       : fig[k].met  ? " target=met"
				     : " target=not-met");
	return 0;
}

/* "4,16" -> sizes; the count, or 0 for a bad list */
static unsigned int parse_sizes(const char *arg, unsigned int sizes[SIZES_MAX])
{
	unsigned int n = 0;
	const char *p = arg;

	while (*p) {
		char *end;
		unsigned long v = strtoul(p, &end, 10);

		if (end == p || v < 1 || v > RULES_MAX || n == SIZES_MAX || (*end && *end != ','))
			return 0;
		sizes[n++] = (unsigned int)v;
		p = *end ? end + 1 : end;
	}
	return n;
}

int main(int argc, char **argv)
{
	const char *prefix = "/sys/fs/bpf/fastwall-cpk";
	unsigned int nops = 300, warm = 10, sizes[SIZES_MAX] = {4, 16, 32, 64, 200, 300},
		     nsizes = 6, next = 0;
	struct fw_registry *reg = NULL;
	struct fw_subject_spec *spec = NULL;
	__u64 *samples[OP_MAX] = {0};
	struct fw_dp *dp = NULL;
	struct fig fig[SIZES_MAX][OP_MAX];
	bool small[SIZES_MAX] = {false};
	double first_ms;
	int opt, plain_fd = -1, err = 0;
	struct stat st;
	__u64 t0;

	while ((opt = getopt(argc, argv, "n:w:p:r:h")) != -1) {
		switch (opt) {
		case 'n':
			nops = (unsigned int)strtoul(optarg, NULL, 10);
			break;
		case 'w':
			warm = (unsigned int)strtoul(optarg, NULL, 10);
			break;
		case 'p':
			prefix = optarg;
			break;
		case 'r':
			nsizes = parse_sizes(optarg, sizes);
			if (!nsizes) {
				fprintf(stderr,
					"cp_kernel: -r takes up to %d sizes of 1..%d, "
					"comma-separated\n",
					SIZES_MAX, RULES_MAX);
				return 2;
			}
			break;
		default:
			usage();
			return 2;
		}
	}
	if (!nops || (nops + warm) * nsizes > MAX_OPS) {
		fprintf(stderr, "cp_kernel: -n must be 1..%u (with the warm-up, per size)\n",
			MAX_OPS / nsizes - warm);
		return 2;
	}
	if (geteuid()) {
		fprintf(stderr, "cp_kernel: needs root (BPF maps and programs)\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	fw_log_level = FW_LOG_WARN;
	fw_dp_quiet();
	snprintf(pin, sizeof(pin), "%s-%d-%llu", prefix, getpid(),
		 (unsigned long long)(now_ns() % 1000000000ull));
	if (!stat(pin, &st)) {
		fprintf(stderr, "cp_kernel: %s already exists\n", pin);
		pin[0] = '\0';
		return 1;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGHUP, on_signal);
	print_env();

	for (int k = 0; k < OP_MAX; k++) {
		samples[k] = calloc(nops, sizeof(__u64));
		kw_samples[k] = calloc(nops, sizeof(__u64));
		if (!samples[k] || !kw_samples[k]) {
			err = -ENOMEM;
			goto cleanup;
		}
	}
	reg = calloc(1, sizeof(*reg));
	spec = calloc(1, sizeof(*spec));
	if (!reg || !spec) {
		err = -ENOMEM;
		goto cleanup;
	}
	plain_fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "cpk_plain", sizeof(__u32), PLAIN_VALUE,
				  PLAIN_ENTRIES, NULL);
	if (plain_fd < 0) {
		err = -errno;
		fprintf(stderr, "cp_kernel: can't create the array: %s\n", strerror(-err));
		goto cleanup;
	}

	t0 = now_ns();
	err = fw_dp_open(pin, &dp);
	first_ms = (now_ns() - t0) / 1e6;
	if (err) {
		fprintf(stderr, "cp_kernel: can't open the data plane at %s: %s\n", pin,
			strerror(-err));
		goto cleanup;
	}
	printf("cp_kernel: first start (fw_dp_open on an empty pin directory) %.1f ms\n", first_ms);
	printf("cp first_start ms=%.1f\n", first_ms);
	err = fw_reg_init(reg, dp);
	if (!err)
		err = fw_reg_reap(reg, 0) < 0 ? -EIO : 0; /* every id starts retired */
	if (err) {
		fprintf(stderr, "cp_kernel: registry: %s\n", strerror(-err));
		goto cleanup;
	}

	for (unsigned int z = 0; z < nsizes && !err; z++) {
		nrules = sizes[z];
		err = run_size(reg, spec, plain_fd, nops, warm, &next, samples, fig[z], &small[z]);
	}
	if (err)
		goto cleanup;
	for (unsigned int z = 0; z < nsizes; z++) {
		bool met = true;

		for (int k = 0; k < OP_MAX; k++)
			met &= k == OP_PLAIN || fig[z][k].met;
		if (small[z])
			printf("cp_kernel: %u CIDR rules: target p50 ratio <= %d %s\n", sizes[z],
			       TARGET_RATIO, met ? "met by every operation" : "not met");
		else
			printf("cp_kernel: %u CIDR rules: in the slot trie, past the largest "
			       "range table (%d entries), one insert per entry: add x%.1f, update "
			       "x%.1f\n",
			       sizes[z], FW_RANGE_RULES, fig[z][OP_ADD].kw_ratio,
			       fig[z][OP_UPDATE].kw_ratio);
	}
	/* what one more entry costs: the slope of add between the sizes */
	if (nsizes >= 2 && sizes[1] != sizes[0]) {
		double d_us = (fig[1][OP_ADD].p50 - fig[0][OP_ADD].p50) /
			      ((double)sizes[1] - (double)sizes[0]);
		double plain = fig[0][OP_PLAIN].p50;

		printf("cp_kernel: each further CIDR rule adds %.2f us to an add (%.1f plain "
		       "updates) from %u to %u rules; a grace-period wait costs thousands\n",
		       d_us, plain > 0 ? d_us / plain : 0, sizes[0], sizes[1]);
		printf("cp per_rule us=%.2f ratio=%.1f\n", d_us, plain > 0 ? d_us / plain : 0);
	}

cleanup:
	if (reg && reg->dp)
		fw_reg_free(reg);
	free(reg);
	free(spec);
	fw_dp_close(dp);
	if (pin[0] && fw_dp_purge(pin) && !stat(pin, &st))
		fprintf(stderr, "cp_kernel: %s left behind\n", pin);
	if (plain_fd >= 0)
		close(plain_fd);
	for (int k = 0; k < OP_MAX; k++) {
		free(samples[k]);
		free(kw_samples[k]);
	}
	if (err)
		printf("cp result=failed error=%s\n", strerror(-err));
	else
		printf("cp result=ok\n");
	return err ? 1 : 0;
}
