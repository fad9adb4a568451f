// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The pinned state as an ABI, on the real kernel: ABI-1 pins (built here
 * as the release before the ABI record left them: no fastwall_abi, the
 * counters in fastwall_stats and fastwall_subject_stats with 29 slots)
 * are migrated by fw_dp_open and fw_dp_migrate_finish with their
 * counters (carried into the _carried maps the readers add, the live
 * ones never written) and state; a crash between the two is redone
 * without counting twice; a newer ABI, a foreign record and a map of the wrong layout are
 * refused with a message naming it, and nothing pinned changes. Each case
 * pins under its own directory. Needs root; prints "N passed, N failed". */
#include <dirent.h>
#include <arpa/inet.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "common/addr.h"
#include "common/log.h"
#include "datapath/datapath.h"
#include "datapath/dispatch.h"
#include "datapath/stats.h"
#include "swaps.h"

#define OLD_SLOTS 29

static int passed, failed, ncpu;
static char root[128];

void check(bool ok, const char *fmt, ...)
{
	va_list ap;

	printf("%s ", ok ? "ok  " : "FAIL");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	if (ok)
		passed++;
	else
		failed++;
}

static void dir_for(const char *name)
{
	snprintf(root, sizeof(root), "/sys/fs/bpf/fastwall-abi-%d-%s", getpid(), name);
}

static bool has_pin(const char *name)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", root, name);
	return access(path, F_OK) == 0;
}

static int pin_fd(const char *name)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", root, name);
	return bpf_obj_get(path);
}

/* The pins under root, each with its map id, as one string: two equal
 * listings mean nothing was pinned, unpinned or replaced. */
static void listing(char *out, size_t size)
{
	struct dirent **ents;
	size_t used = 0;
	int n = scandir(root, &ents, NULL, alphasort);

	out[0] = '\0';
	for (int i = 0; i < n; i++) {
		struct bpf_map_info info = {};
		__u32 len = sizeof(info);
		int fd = ents[i]->d_name[0] == '.' ? -1 : pin_fd(ents[i]->d_name);

		if (fd >= 0 && bpf_obj_get_info_by_fd(fd, &info, &len) == 0 && used < size)
			used += snprintf(out + used, size - used, "%s=%u ", ents[i]->d_name,
					 info.id);
		if (fd >= 0)
			close(fd);
		free(ents[i]);
	}
	if (n >= 0)
		free(ents);
}

/* stderr into a buffer around a call, to check what the refusal says */
static FILE *capture_start(int *saved)
{
	FILE *f = tmpfile();

	fflush(stderr);
	*saved = dup(2);
	dup2(fileno(f), 2);
	return f;
}

static void capture_end(FILE *f, int saved, char *out, size_t size)
{
	size_t n;

	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	rewind(f);
	n = fread(out, 1, size - 1, f);
	out[n] = '\0';
	fclose(f);
	fputs(out, stderr);
}

static int open_captured(struct fw_dp **dp, char *msg, size_t size)
{
	int saved, err;
	FILE *f = capture_start(&saved);

	err = fw_dp_open(root, dp);
	capture_end(f, saved, msg, size);
	return err;
}

/* Adds packets (and bytes) to slot key of a per-CPU map whose values
 * are u64s, on cpu. */
static int percpu_add(int fd, __u32 key, int cpu, size_t value_size, __u32 word, __u64 n)
{
	__u64 *v = calloc(ncpu, value_size);
	int err = 0;

	if (!v)
		return -ENOMEM;
	if (bpf_map_lookup_elem(fd, &key, v) == 0) {
		v[(size_t)cpu * (value_size / 8) + word] += n;
		if (bpf_map_update_elem(fd, &key, v, BPF_ANY))
			err = -errno;
	} else {
		err = -errno;
	}
	free(v);
	return err;
}

static __u64 percpu_sum(int fd, __u32 key, size_t value_size, __u32 word)
{
	__u64 *v = calloc(ncpu, value_size), sum = 0;

	if (v && bpf_map_lookup_elem(fd, &key, v) == 0)
		for (int c = 0; c < ncpu; c++)
			sum += v[(size_t)c * (value_size / 8) + word];
	free(v);
	return sum;
}

static int create_pinned(const char *name, enum bpf_map_type type, __u32 key, __u32 value,
			 __u32 max)
{
	char path[512];
	int fd = bpf_map_create(type, name, key, value, max, NULL);

	snprintf(path, sizeof(path), "%s/%s", root, name);
	if (fd < 0 || bpf_obj_pin(fd, path)) {
		fprintf(stderr, "can't create %s: %s\n", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

static void unpin(const char *name)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", root, name);
	unlink(path);
}

static const struct fw_ip alpha = {.b = {[10] = 0xff, [11] = 0xff, 10, 42, 0, 10}};

/* ABI 1's fastwall_rules: one LPM trie per subject behind an array of
 * maps. Subject 3's: 10.0.0.0/8 allowed, everything else denied. */
static const struct fw_ip net10 = {.b = {[10] = 0xff, [11] = 0xff, 10, 0, 0, 0}};

static int make_abi1_rules(void)
{
	LIBBPF_OPTS(bpf_map_create_opts, lo, .map_flags = BPF_F_NO_PREALLOC);
	LIBBPF_OPTS(bpf_map_create_opts, oo);
	struct fw_lpm_key all = {.prefixlen = 0}, ten = {.prefixlen = 96 + 8, .addr = net10};
	struct fw_rule deny = {.action = FW_ACTION_DENY, .is_default = 1, .rule = FW_RULE_DEFAULT};
	struct fw_rule allow = {.action = FW_ACTION_ALLOW, .rule = 0};
	__u32 id = 3;
	char path[512];
	int inner, outer, err = 0;

	inner = bpf_map_create(BPF_MAP_TYPE_LPM_TRIE, "fw_rules_3", sizeof(struct fw_lpm_key),
			       sizeof(struct fw_rule), FW_MAX_RULES, &lo);
	if (inner < 0)
		return -1;
	oo.inner_map_fd = inner;
	outer = bpf_map_create(BPF_MAP_TYPE_ARRAY_OF_MAPS, "fastwall_rules", 4, 4, FW_MAX_SUBJECTS,
			       &oo);
	snprintf(path, sizeof(path), "%s/fastwall_rules", root);
	if (outer < 0 || bpf_map_update_elem(inner, &all, &deny, BPF_ANY) ||
	    bpf_map_update_elem(inner, &ten, &allow, BPF_ANY) ||
	    bpf_map_update_elem(outer, &id, &inner, BPF_ANY) || bpf_obj_pin(outer, path))
		err = -1;
	close(inner);
	if (outer >= 0)
		close(outer);
	return err;
}

/* The rule subject 3's slot trie of fastwall_rules_v2 gives addr under
 * generation gen: 0 deny, 1 allow, -1 none. */
static int rule_v2(struct fw_dp *dp, const struct fw_ip *addr, __u32 gen)
{
	struct fw_rule_key k = {.prefixlen = 32 + 128, .gen = htonl(gen), .addr = *addr};
	struct fw_rule v;
	__u32 id = 3, inner;
	int fd, ret = -1;

	if (bpf_map_lookup_elem(dp->rules_fd, &id, &inner))
		return -1;
	fd = bpf_map_get_fd_by_id(inner);
	if (fd < 0)
		return -1;
	if (bpf_map_lookup_elem(fd, &k, &v) == 0)
		ret = v.action;
	close(fd);
	return ret;
}

/* ABI-1 pins under root: the maps that kept their layout (pinned by this
 * build, which defines them as ABI 1 did), no record, the two counter maps
 * in their 29-slot layout, and some state: a dispatch entry for subject 3
 * and counters on two CPUs. */
static int make_abi1(void)
{
	struct fw_subject s = {.id = 3, .state = FW_STATE_ACTIVE};
	struct fw_dp *dp;
	int st, ss, err;

	if (fw_dp_open(root, &dp))
		return -1;
	err = fw_dp_dispatch_put(dp, &alpha, &s);
	fw_dp_close(dp);
	if (err)
		return -1;
	unpin("fastwall_abi");
	unpin("fastwall_stats_v2");
	unpin("fastwall_subject_stats_v2");
	unpin("fastwall_rules_v2");
	if (make_abi1_rules())
		return -1;
	st = create_pinned("fastwall_stats", BPF_MAP_TYPE_PERCPU_ARRAY, 4, 16, OLD_SLOTS);
	ss = create_pinned("fastwall_subject_stats", BPF_MAP_TYPE_PERCPU_ARRAY, 4, OLD_SLOTS * 8,
			   FW_MAX_SUBJECTS);
	if (st < 0 || ss < 0)
		return -1;
	/* default-deny: 5 packets of 100 bytes on CPU 0; allow-cidr: 7 on the last */
	err = percpu_add(st, FW_DROP_DEFAULT_DENY, 0, 16, 0, 5);
	err = err ?: percpu_add(st, FW_DROP_DEFAULT_DENY, 0, 16, 1, 500);
	err = err ?: percpu_add(st, FW_PASS_ALLOW_CIDR, ncpu - 1, 16, 0, 7);
	/* subject 3: 4 default-deny, 2 learned-port (the last of the 29 slots) */
	err = err ?: percpu_add(ss, 3, 0, OLD_SLOTS * 8, FW_DROP_DEFAULT_DENY, 4);
	err = err ?: percpu_add(ss, 3, ncpu - 1, OLD_SLOTS * 8, FW_DROP_LEARNED_PORT, 2);
	close(st);
	close(ss);
	return err;
}

static bool record_is(__u32 version)
{
	struct fw_abi_record rec = {};
	__u32 zero = 0;
	int fd = pin_fd("fastwall_abi");
	bool ok;

	if (fd < 0)
		return false;
	ok = bpf_map_lookup_elem(fd, &zero, &rec) == 0 && rec.magic == FW_ABI_MAGIC &&
	     rec.version == version;
	close(fd);
	return ok;
}

static void check_counters(struct fw_dp *dp, __u64 deny, const char *when)
{
	struct fw_counter c[FW_REASON_MAX] = {};
	__u64 s[FW_REASON_MAX] = {};
	int e1 = fw_dp_stats_read(dp, c), e2 = fw_dp_subject_stats_read(dp, 3, s);

	check(e1 == 0 && c[FW_DROP_DEFAULT_DENY].packets == deny &&
		      c[FW_DROP_DEFAULT_DENY].bytes == 500 && c[FW_PASS_ALLOW_CIDR].packets == 7,
	      "%s: global counters carried (default-deny %llu, want %llu; allow-cidr %llu)", when,
	      (unsigned long long)c[FW_DROP_DEFAULT_DENY].packets, (unsigned long long)deny,
	      (unsigned long long)c[FW_PASS_ALLOW_CIDR].packets);
	check(e2 == 0 && s[FW_DROP_DEFAULT_DENY] == 4 && s[FW_DROP_LEARNED_PORT] == 2,
	      "%s: subject 3's counters carried (default-deny %llu, learned-port %llu)", when,
	      (unsigned long long)s[FW_DROP_DEFAULT_DENY],
	      (unsigned long long)s[FW_DROP_LEARNED_PORT]);
}

static void case_migrate(void)
{
	struct fw_dp *dp = NULL, *cli = NULL;
	struct fw_subject s;
	char msg[4096];
	int old, err;

	dir_for("migrate");
	if (make_abi1()) {
		check(false, "migrate: ABI-1 pins built");
		return;
	}
	err = fw_dp_open(root, &dp);
	check(err == 0, "migrate: fw_dp_open takes ABI-1 pins (%d)", err);
	if (err)
		goto out;
	check(dp->migrating && dp->pinned_abi == 1, "migrate: it says it migrates from ABI 1");
	check(bpf_map_lookup_elem(dp->dispatch_fd, &alpha, &s) == 0 && s.id == 3,
	      "migrate: the dispatch entry is the pinned one, reused");
	check(has_pin("fastwall_stats") && has_pin("fastwall_subject_stats") &&
		      has_pin("fastwall_stats_v2") && !has_pin("fastwall_abi"),
	      "migrate: old maps stay pinned beside the new ones until finish, no record yet");
	{
		struct fw_ip in10 = alpha, out10 = alpha;

		out10.b[12] = 192;
		check(rule_v2(dp, &in10, 0) == FW_ACTION_ALLOW &&
			      rule_v2(dp, &out10, 0) == FW_ACTION_DENY &&
			      rule_v2(dp, &in10, 1) == -1,
		      "migrate: subject 3's ABI-1 rules are in its slot trie, generation 0");
		check(has_pin("fastwall_rules") && has_pin("fastwall_rules_v2"),
		      "migrate: ABI 1's rule tries stay pinned until finish");
	}
	{
		int saved;
		FILE *f = capture_start(&saved);

		err = fw_dp_open_pinned(root, &cli);
		capture_end(f, saved, msg, sizeof(msg));
	}
	check(err == -EPROTO && strstr(msg, "ABI 1"),
	      "migrate: the CLI refuses the pins of ABI 1 meanwhile, saying so");
	/* the old programs count on until they are replaced, the new ones
	 * count in the live _v2 maps from their attach on */
	old = pin_fd("fastwall_stats");
	percpu_add(old, FW_DROP_DEFAULT_DENY, 0, 16, 0, 3);
	close(old);
	percpu_add(dp->stats_fd, FW_DROP_DEFAULT_DENY, ncpu - 1, 16, 0, 1);
	err = fw_dp_migrate_finish(dp);
	check(err == 0, "migrate: finish (%d)", err);
	check_counters(dp, 9, "migrate after finish");
	check(has_pin("fastwall_stats_carried") && has_pin("fastwall_subject_stats_carried"),
	      "migrate: the old counters are pinned in the _carried maps");
	check(percpu_sum(dp->stats_fd, FW_DROP_DEFAULT_DENY, 16, 0) == 1 &&
		      percpu_sum(dp->subject_stats_fd, 3, sizeof(struct fw_subject_stats),
				 FW_DROP_DEFAULT_DENY) == 0,
	      "migrate: the live counters hold only what the data plane counted (never written)");

	check(!has_pin("fastwall_stats") && !has_pin("fastwall_subject_stats") &&
		      !has_pin("fastwall_rules"),
	      "migrate: old maps unpinned by finish");
	check(record_is(FW_ABI_VERSION), "migrate: record says ABI %d", FW_ABI_VERSION);
	check(fw_dp_migrate_finish(dp) == 0, "migrate: a second finish is nothing");
	fw_dp_close(dp);
	dp = NULL;
	err = fw_dp_open_pinned(root, &cli);
	check(err == 0, "migrate: the CLI opens the migrated pins (%d)", err);
	fw_dp_close(cli);
	err = fw_dp_open(root, &dp);
	check(err == 0 && !dp->migrating && dp->pinned_abi == FW_ABI_VERSION,
	      "migrate: the next start reuses ABI %d as it is", FW_ABI_VERSION);
	if (!err) {
		__u64 s3[FW_REASON_MAX] = {};

		check_counters(dp, 9, "migrate after restart");
		check(fw_dp_subject_reset(dp, 3) == 0 && fw_dp_subject_stats_read(dp, 3, s3) == 0 &&
			      s3[FW_DROP_DEFAULT_DENY] == 0 && s3[FW_DROP_LEARNED_PORT] == 0,
		      "migrate: an id's reset zeroes its carried counters too");
	}
out:
	fw_dp_close(dp);
	check(fw_dp_purge(root) == 0 && access(root, F_OK) != 0, "migrate: purge removes all");
}

static void case_crash(void)
{
	struct fw_dp *dp = NULL;
	int old, err;

	dir_for("crash");
	if (make_abi1()) {
		check(false, "crash: ABI-1 pins built");
		return;
	}
	err = fw_dp_open(root, &dp);
	fw_dp_close(dp); /* dies before finish */
	dp = NULL;
	check(err == 0 && has_pin("fastwall_stats") && !has_pin("fastwall_abi"),
	      "crash: open without finish leaves the old pins and no record");
	old = pin_fd("fastwall_stats");
	percpu_add(old, FW_DROP_DEFAULT_DENY, 1 % ncpu, 16, 0, 2);
	close(old);
	err = fw_dp_open(root, &dp);
	check(err == 0 && dp->migrating, "crash: the next start migrates again (%d)", err);
	if (err)
		goto out;
	err = fw_dp_migrate_finish(dp);
	check(err == 0 && record_is(FW_ABI_VERSION) && !has_pin("fastwall_stats"),
	      "crash: finish completes it");
	check_counters(dp, 7, "crash, finish");
out:
	fw_dp_close(dp);
	check(fw_dp_purge(root) == 0 && access(root, F_OK) != 0, "crash: purge removes all");
}

static void write_record(__u64 magic, __u32 version)
{
	struct fw_abi_record rec = {.magic = magic, .version = version};
	__u32 zero = 0;
	int fd = pin_fd("fastwall_abi");

	bpf_map_update_elem(fd, &zero, &rec, BPF_ANY);
	close(fd);
}

/* fw_dp_open on root must refuse with -EPROTO, say each of the words,
 * and leave the pins as they were. */
static void refused(const char *what, const char *const words[])
{
	char before[4096], after[4096], msg[4096];
	struct fw_dp *dp = NULL;
	bool said = true;
	int err;

	listing(before, sizeof(before));
	err = open_captured(&dp, msg, sizeof(msg));
	listing(after, sizeof(after));
	for (size_t i = 0; words[i]; i++)
		said = said && strstr(msg, words[i]);
	check(err == -EPROTO && said, "%s: refused (%d), the message names it", what, err);
	check(strcmp(before, after) == 0 && before[0], "%s: nothing pinned changed", what);
	if (!err)
		fw_dp_close(dp);
}

static void case_refusals(void)
{
	struct fw_dp *dp;
	int fd;

	dir_for("refuse");
	if (fw_dp_open(root, &dp)) {
		check(false, "refuse: ABI-2 pins built");
		return;
	}
	fw_dp_close(dp);
	check(record_is(FW_ABI_VERSION), "fresh: the record is written");

	write_record(FW_ABI_MAGIC, FW_ABI_VERSION + 1);
	refused("newer ABI", (const char *const[]){"ABI 3", "newer", "--purge", NULL});
	write_record(0x1234, FW_ABI_VERSION);
	refused("foreign record", (const char *const[]){"fastwall_abi", "--purge", NULL});
	write_record(FW_ABI_MAGIC, FW_ABI_VERSION);

	/* a fastwall_learned of another layout: value 16 where fw_lease is 24 */
	unpin("fastwall_learned");
	fd = create_pinned("fastwall_learned", BPF_MAP_TYPE_HASH, sizeof(struct fw_learned_key), 16,
			   64);
	close(fd);
	refused("wrong layout",
		(const char *const[]){"fastwall_learned", "value 16", "value 24", "--purge", NULL});
	check(fw_dp_purge(root) == 0 && access(root, F_OK) != 0, "refuse: purge removes all");

	/* ABI 1 with a counter map of yet another layout (an older release) */
	dir_for("refuse-old");
	if (make_abi1()) {
		check(false, "refuse-old: ABI-1 pins built");
		return;
	}
	unpin("fastwall_stats");
	fd = create_pinned("fastwall_stats", BPF_MAP_TYPE_PERCPU_ARRAY, 4, 16, 23);
	close(fd);
	refused("ABI 1, stats of 23 slots",
		(const char *const[]){"fastwall_stats", "23 entries", "29 entries", NULL});
	check(!has_pin("fastwall_stats_v2"), "ABI 1, stats of 23 slots: no new map created");
	check(fw_dp_purge(root) == 0 && access(root, F_OK) != 0,
	      "refuse-old: purge removes every ABI's maps");
}

/* The rows of fastwall_subject_rows (an answer cache and the policy
 * passes, one line per CPU and subject), added to ABI 2 in place of
 * fastwall_rule_cache: pins of the build before have the cache and count
 * every pass in fastwall_subject_stats_v2. A start adopts them: it
 * unpins the cache, creates the rows for every possible CPU, and the
 * readers add what each counted. */
static void case_rows(void)
{
	struct fw_subject_row row = {.seq = 2, .gen = 7, .dst = alpha, .packets = {5, 1, 0}};
	struct bpf_map_info info = {};
	__u32 len = sizeof(info), key;
	__u64 s[FW_REASON_MAX];
	struct fw_dp *dp;
	int fd, err;

	dir_for("rows");
	if (fw_dp_open(root, &dp)) {
		check(false, "rows: ABI-2 pins built");
		return;
	}
	fw_dp_close(dp);
	fd = pin_fd("fastwall_subject_rows");
	err = fd < 0 ? fd : bpf_obj_get_info_by_fd(fd, &info, &len);
	check(err == 0 && info.type == BPF_MAP_TYPE_ARRAY && info.value_size == 64 &&
		      (info.map_flags & BPF_F_MMAPABLE) &&
		      info.max_entries == (__u32)ncpu * FW_MAX_SUBJECTS,
	      "rows: one 64-byte row per CPU (%d) and subject, mmapable (%u entries)", ncpu,
	      info.max_entries);
	if (fd >= 0)
		close(fd);

	/* the pins of the build before: no rows, an answer cache, and the
	 * passes of subject 3 in its stats row */
	unpin("fastwall_subject_rows");
	close(create_pinned("fastwall_rule_cache", BPF_MAP_TYPE_PERCPU_ARRAY, 4, 48,
			    FW_MAX_SUBJECTS));
	fd = pin_fd("fastwall_subject_stats_v2");
	err = fd < 0 ? fd
		     : percpu_add(fd, 3, 0, sizeof(struct fw_subject_stats), FW_PASS_ALLOW_CIDR, 4);
	if (fd >= 0)
		close(fd);
	err = err ? err : fw_dp_open_pinned(root, &dp);
	check(err == 0 && dp->subject_rows_fd < 0 && fw_dp_subject_stats_read(dp, 3, s) == 0 &&
		      s[FW_PASS_ALLOW_CIDR] == 4,
	      "rows: the CLI reads pins without rows (%d)", err);
	if (!err)
		fw_dp_close(dp);

	err = fw_dp_open(root, &dp);
	check(err == 0 && !has_pin("fastwall_rule_cache") && has_pin("fastwall_subject_rows"),
	      "rows: a start unpins fastwall_rule_cache and pins the rows (%d)", err);
	if (err)
		return;
	/* what the new programs count, on the first and the last CPU */
	key = FW_ROW_KEY(0, 3);
	err = bpf_map_update_elem(dp->subject_rows_fd, &key, &row, BPF_ANY);
	key = FW_ROW_KEY(ncpu - 1, 3);
	row.packets[2] = 2;
	err = err ? err : bpf_map_update_elem(dp->subject_rows_fd, &key, &row, BPF_ANY);
	err = err ? err : fw_dp_subject_stats_read(dp, 3, s);
	check(err == 0 && s[FW_PASS_ALLOW_CIDR] == 4 + 5 * (ncpu > 1 ? 2 : 1) &&
		      s[FW_PASS_LEARNED] == (ncpu > 1 ? 2 : 1) && s[FW_PASS_DEFAULT] == 2 &&
		      s[FW_DROP_DEFAULT_DENY] == 0,
	      "rows: the readers add the rows' passes to the stats row's (allow-cidr %llu)",
	      (unsigned long long)s[FW_PASS_ALLOW_CIDR]);
	check(fw_dp_subject_stats_read(dp, 4, s) == 0 && s[FW_PASS_ALLOW_CIDR] == 0,
	      "rows: another subject's passes are its own");
	memset(&row, 0, sizeof(row));
	key = FW_ROW_KEY(ncpu - 1, 3);
	err = fw_dp_subject_reset(dp, 3);
	check(err == 0 && fw_dp_subject_stats_read(dp, 3, s) == 0 && s[FW_PASS_ALLOW_CIDR] == 0 &&
		      s[FW_PASS_DEFAULT] == 0 &&
		      bpf_map_lookup_elem(dp->subject_rows_fd, &key, &row) == 0 && row.seq == 2 &&
		      row.gen == 7 && memcmp(&row.dst, &alpha, sizeof(alpha)) == 0,
	      "rows: a reset zeroes the passes in every CPU's row, not the cached answer (%d)",
	      err);
	fw_dp_close(dp);
	close(create_pinned("fastwall_rule_cache", BPF_MAP_TYPE_PERCPU_ARRAY, 4, 48,
			    FW_MAX_SUBJECTS));
	check(fw_dp_purge(root) == 0 && access(root, F_OK) != 0,
	      "rows: purge removes all, fastwall_rule_cache too");
}

/* The maps added to ABI 2 after its release, without a new version (the
 * late column of datapath/maps.h, written out here so that a map marked
 * wrongly fails): pins of that ABI may lack them. The CLI reads such
 * pins, finding -1 for each; a map of the release missing is an error;
 * a start creates the missing ones. */
static const char *const late_maps[] = {
	"fastwall_cgroups",	 "fastwall_cg_dns",	 "fastwall_subject_rows",
	"fastwall_rules_epoch",	 "fastwall_rule_sets",	 "fastwall_rule_ranges",
	"fastwall_range_tables", "fastwall_events_lost",
};

static void case_late(void)
{
	const size_t n = sizeof(late_maps) / sizeof(late_maps[0]);
	char msg[4096];
	struct fw_dp *dp;
	bool all = true;
	int err, fd;

	dir_for("late");
	if (fw_dp_open(root, &dp)) {
		check(false, "late: ABI-2 pins built");
		return;
	}
	fw_dp_close(dp);
	for (size_t i = 0; i < n; i++)
		unpin(late_maps[i]);
	err = fw_dp_open_pinned(root, &dp);
	check(err == 0, "late: the CLI opens pins without the %zu late maps (%d)", n, err);
	if (!err) {
		check(dp->cgroups_fd < 0 && dp->cg_dns_fd < 0 && dp->subject_rows_fd < 0 &&
			      dp->rules_epoch_fd < 0 && dp->rule_sets_fd < 0 &&
			      dp->rule_ranges_fd < 0 && dp->range_tables_fd < 0 &&
			      dp->events_lost_fd < 0 && dp->names_fd >= 0,
		      "late: each of them is -1, the others open");
		fw_dp_close(dp);
	}
	/* fastwall_names came with the release: pins without it are broken */
	fd = pin_fd("fastwall_names");
	unpin("fastwall_names");
	{
		int saved;
		FILE *f = capture_start(&saved);

		err = fw_dp_open_pinned(root, &dp);
		capture_end(f, saved, msg, sizeof(msg));
	}
	check(err == -ENOENT && strstr(msg, "fastwall_names"),
	      "late: a missing map of the release is an error that names it (%d)", err);
	if (!err)
		fw_dp_close(dp);
	if (fd >= 0) {
		char path[512];

		snprintf(path, sizeof(path), "%s/fastwall_names", root);
		bpf_obj_pin(fd, path);
		close(fd);
	}
	err = fw_dp_open(root, &dp);
	for (size_t i = 0; i < n; i++)
		all = all && has_pin(late_maps[i]);
	check(err == 0 && all, "late: a start pins the late maps again (%d)", err);
	if (!err)
		fw_dp_close(dp);
	check(fw_dp_purge(root) == 0 && access(root, F_OK) != 0, "late: purge removes all");
}

int main(void)
{
	if (geteuid() != 0) {
		fprintf(stderr, "abi_migrate needs root (BPF maps and programs, bpffs)\n");
		return 77;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	fw_log_level = FW_LOG_WARN;
	fw_dp_quiet();
	ncpu = libbpf_num_possible_cpus();
	if (ncpu <= 0) {
		printf("0 passed, 1 failed\n");
		return 1;
	}
	case_migrate();
	case_crash();
	case_refusals();
	case_swaps();
	case_rows();
	case_late();
	printf("abi: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
