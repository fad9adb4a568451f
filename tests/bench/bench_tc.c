// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* bench_tc: the in-kernel half of `make bench` (scripts/bench.sh).
 *
 *   bench_tc cost  [-s 1,64,1024,4096] [-r ROUNDS] [-n REPEAT] [-p PINPREFIX] [-o DATFILE]
 *       Per-packet cost of fw_from_sandbox with bpf_prog_test_run_opts
 *       (opts.repeat runs, opts.duration = mean ns per run), for every
 *       scale side by side in one process, rounds interleaved, against the
 *       trivial and the empty baseline programs of bpf/bench_trivial.bpf.c.
 *       With -S CALLS, a second table: one packet per call (repeat=1), CALLS
 *       calls, either always from the middle subject or with the source
 *       cycling over every subject of the scale ("spread"), so each call
 *       finds another subject's map entries cold, as many-subject traffic
 *       does; the difference is the cost of those cache misses.
 *   bench_tc serve -i IFNAME [-s 1,64,1024] [-p PINPREFIX]
 *       Sets up one fastwall data plane per scale, then reads commands on
 *       stdin ("none", "trivial", "trivial N", "fw N", "stats N", "quit")
 *       and switches what runs at the TC hooks of IFNAME; answers one line
 *       per command. "trivial N" is the trivial program with the N sources
 *       of N-subject spread traffic in its map.
 *   bench_tc drop IFNAME
 *       Attaches a drop-everything program at TC ingress of IFNAME (the
 *       sink of the packet-rate test) and exits; the filter stays.
 *
 * Every scale is built through the real control plane: fw_dp_open under its
 * own pin root, fw_dp_config_set, fw_reg_upsert of fw_subject_spec specs
 * whose policies come from fw_policy_add_rule, fw_dp_learned_put with live
 * leases. Pin roots are purged on every exit path. Never asserts timing;
 * exits non-zero only when something fails or a verdict is wrong. */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <net/if.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "common/addr.h"
#include "bench_trivial.skel.h"
#include "config/config.h"
#include "datapath/datapath.h"
#include "datapath/attach.h"
#include "datapath/leases.h"
#include "datapath/reasons.h"
#include "datapath/stats.h"
#include "common/log.h"
#include "policy/policy.h"
#include "subjects/registry.h"

#define MAX_SCALES	    8
#define MAX_ROUNDS	    64
#define RULES_PER_SUBJECT   64
#define LEARNED_PER_SUBJECT 512
#define SUBJECT_CENTER	    0x0a400802u /* 10.64.8.2: the traffic's source */
#define SUBJECT_GATEWAY	    0x0a400001u /* 10.64.0.1 */
#define SUBJECT_NET	    0x0a400000u /* 10.64.0.0/16 */
#define NSEC_PER_SEC	    1000000000ull

struct scale {
	unsigned int n;	      /* subjects */
	unsigned int learned; /* learned addresses per subject */
	char pin[256];
	struct fw_dp *dp;
	struct fw_registry *reg;
	__u32 mid_id; /* the subject the measured packets come from */
	double setup_s;
};

static struct scale scales[MAX_SCALES];
static unsigned int nscales;
static char pin_prefix[200];
static struct bench_trivial_bpf *trivial;

/* --- cleanup on every path ---------------------------------------------- */

static void purge_all(void)
{
	for (unsigned int i = 0; i < nscales; i++) {
		if (!scales[i].pin[0])
			continue;
		fw_dp_purge(scales[i].pin);
		scales[i].pin[0] = '\0';
	}
}

static void teardown(void)
{
	for (unsigned int i = 0; i < nscales; i++) {
		if (scales[i].reg) {
			fw_reg_free(scales[i].reg);
			free(scales[i].reg);
			scales[i].reg = NULL;
		}
		fw_dp_close(scales[i].dp);
		scales[i].dp = NULL;
	}
	purge_all();
	bench_trivial_bpf__destroy(trivial);
	trivial = NULL;
}

static void on_signal(int sig)
{
	purge_all(); /* unlink/rmdir only; good enough on the way out */
	signal(sig, SIG_DFL);
	raise(sig);
}

/* --- helpers ------------------------------------------------------------ */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void v4(struct fw_ip *ip, __u32 host_order)
{
	fw_addr_from_v4(ip, htonl(host_order));
}

static const char *v4str(__u32 host_order, char *buf)
{
	struct in_addr a = {.s_addr = htonl(host_order)};

	return inet_ntop(AF_INET, &a, buf, INET_ADDRSTRLEN);
}

/* The traffic's source is subject N/2 of N; the others sit around it. */
static __u32 subject_addr(unsigned int n, unsigned int i)
{
	return SUBJECT_CENTER - n / 2 + i;
}

static __u32 lcg(__u32 *s)
{
	*s = *s * 1664525u + 1013904223u;
	return *s >> 8;
}

/* 64 CIDR rules: the allow the traffic uses, a deny next to it, and 62
 * pseudo-random v4 prefixes (/8 to /32, one in three deny) spread over
 * public space below 192/8, different for every subject. */
static int build_policy(struct fw_policy *p, unsigned int subject)
{
	static const unsigned char plens[] = {8, 12, 16, 16, 20, 22, 24, 24, 24, 28, 32, 32};
	char err[256], cidr[64];
	__u32 seed = 0x9e3779b9u * (subject + 1);
	int ret;

	fw_policy_init(p);
	ret = fw_policy_set_default(p, "deny", err, sizeof(err));
	if (!ret)
		ret = fw_policy_add_rule(p, "allow", "203.0.113.0/25", NULL, 0, err, sizeof(err));
	if (!ret)
		ret = fw_policy_add_rule(p, "deny", "203.0.113.128/27", NULL, 0, err, sizeof(err));
	for (int k = 2; !ret && k < RULES_PER_SUBJECT; k++) {
		__u32 a, o1, plen = plens[lcg(&seed) % sizeof(plens)];
		char buf[INET_ADDRSTRLEN];

		do
			o1 = 1 + lcg(&seed) % 190;
		while (o1 == 10 || o1 == 100 || o1 == 127 || o1 == 169 || o1 == 172);
		a = (o1 << 24) | (lcg(&seed) & 0xffffff);
		a &= plen == 32 ? ~0u : ~(~0u >> plen);
		snprintf(cidr, sizeof(cidr), "%s/%u", v4str(a, buf), plen);
		ret = fw_policy_add_rule(p, k % 3 == 0 ? "deny" : "allow", cidr, NULL, 0, err,
					 sizeof(err));
	}
	if (ret)
		fprintf(stderr, "bench_tc: policy: %s\n", err);
	return ret;
}

/* learned address k of 512: 198.51.100.0/24, then 192.0.2.0/24 */
static __u32 learned_addr(unsigned int k)
{
	return k < 256 ? 0xc6336400u + k : 0xc0000200u + (k - 256);
}

static int setup_scale(struct scale *sc)
{
	struct fw_config cfg = {
		.flags = 0,
		.event_burst = 200,			 /* fastwalld's defaults: */
		.event_interval_ns = NSEC_PER_SEC / 100, /* 100 events/s, burst 200 */
		.pod_flow_timeout_ns = 300 * NSEC_PER_SEC,
		.frag_timeout_ns = 5 * NSEC_PER_SEC,
	};
	struct fw_subject_spec *spec;
	double t0 = now_s();
	__u64 expires;
	int err;

	snprintf(sc->pin, sizeof(sc->pin), "%s-n%u", pin_prefix, sc->n);
	err = fw_dp_open(sc->pin, &sc->dp);
	if (err)
		return err;
	err = fw_dp_config_set(sc->dp, &cfg);
	if (err)
		return err;
	sc->reg = calloc(1, sizeof(*sc->reg));
	spec = calloc(1, sizeof(*spec));
	if (!sc->reg || !spec) {
		free(spec);
		return -ENOMEM;
	}
	err = fw_reg_init(sc->reg, sc->dp);
	/* every subject first, then the learned addresses: a new subject's
	 * upsert flushes its id from the learned map by walking all of it */
	for (unsigned int i = 0; !err && i < sc->n; i++) {
		memset(spec, 0, sizeof(*spec));
		snprintf(spec->name, sizeof(spec->name), "bench-%u", i);
		v4(&spec->addrs[0], subject_addr(sc->n, i));
		spec->naddrs = 1;
		spec->has_gateway[FW_FAM_V4] = true;
		v4(&spec->gateway[FW_FAM_V4], SUBJECT_GATEWAY);
		spec->has_private[FW_FAM_V4] = true;
		v4(&spec->private_net[FW_FAM_V4].net, SUBJECT_NET);
		spec->private_net[FW_FAM_V4].plen = FW_V4_PREFIX_BASE + 16;
		spec->state = FW_STATE_ACTIVE;
		err = build_policy(&spec->policy, i);
		if (!err)
			err = fw_reg_upsert(sc->reg, spec, FW_ORIGIN_STATIC, NULL);
		fw_policy_free(&spec->policy);
		if (!err && i == sc->n / 2) {
			struct fw_entry *e = fw_reg_find(sc->reg, spec->name);

			sc->mid_id = e ? e->id : 0;
		}
	}
	free(spec);
	if (err)
		return err;
	expires = fw_now_ns() + 3600 * NSEC_PER_SEC;
	for (__u32 id = 1; id < FW_MAX_SUBJECTS; id++) {
		if (!sc->reg->by_id[id])
			continue;
		for (unsigned int k = 0; k < sc->learned; k++) {
			struct fw_ip a;

			v4(&a, learned_addr(k));
			err = fw_dp_learned_put(sc->dp, id, &a, expires);
			if (err)
				return err;
		}
	}
	sc->setup_s = now_s() - t0;
	return 0;
}

static int parse_scales(const char *s)
{
	char *copy = strdup(s), *tok, *save = NULL;

	nscales = 0;
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		long n = strtol(tok, NULL, 10);

		if (n < 1 || n >= FW_MAX_SUBJECTS || nscales == MAX_SCALES) {
			fprintf(stderr, "bench_tc: bad scale '%s' (1..%u, at most %u)\n", tok,
				FW_MAX_SUBJECTS - 1, MAX_SCALES);
			free(copy);
			return -1;
		}
		scales[nscales].n = (unsigned int)n;
		/* the learned map holds FW_MAX_LEARNED entries in all */
		scales[nscales].learned = LEARNED_PER_SUBJECT;
		if ((unsigned long)n * LEARNED_PER_SUBJECT > FW_MAX_LEARNED)
			scales[nscales].learned = FW_MAX_LEARNED / n - 1;
		nscales++;
	}
	free(copy);
	return nscales ? 0 : -1;
}

static int setup_all(void)
{
	for (unsigned int i = 0; i < nscales; i++) {
		int err = setup_scale(&scales[i]);

		if (err) {
			fprintf(stderr, "bench_tc: setting up %u subjects failed: %s\n",
				scales[i].n, strerror(-err));
			return err;
		}
		fprintf(stderr,
			"bench_tc: %u subjects x (%d CIDR rules + %u learned) set up in %.1f s\n",
			scales[i].n, RULES_PER_SUBJECT, scales[i].learned, scales[i].setup_s);
	}
	return 0;
}

/* n sources of the trivial program's map: the n of a spread peer (the
 * addresses of subjects 0 to n - 1 of n), or, for n = 0, the traffic's
 * source and a few around it. */
static int trivial_fill(unsigned int n)
{
	int fd = bpf_map__fd(trivial->maps.bench_srcs);
	unsigned int count = n ? n : 32;
	__u64 zero = 0;

	for (unsigned int i = 0; i < count; i++) {
		__be32 k = htonl(n ? subject_addr(n, i) : SUBJECT_CENTER - 16 + i);

		if (bpf_map_update_elem(fd, &k, &zero, BPF_ANY))
			return -errno;
	}
	return 0;
}

static int load_trivial(void)
{
	trivial = bench_trivial_bpf__open_and_load();
	if (!trivial) {
		fprintf(stderr, "bench_tc: can't load bench_trivial: %s\n", strerror(errno));
		return -1;
	}
	return trivial_fill(0);
}

/* --- part A: bpf_prog_test_run ----------------------------------------- */

enum kind { K_ALLOW, K_LEARNED, K_DENY, K_MAX };

static const struct {
	const char *name;
	__u32 dst;
	__u32 retval;
	__u32 reason;
} kinds[K_MAX] = {
	[K_ALLOW] = {"udp allow-cidr", 0xcb00710au /* 203.0.113.10 */, 0, FW_PASS_ALLOW_CIDR},
	[K_LEARNED] = {"udp learned", 0xc633644du /* 198.51.100.77 */, 0, FW_PASS_LEARNED},
	[K_DENY] = {"udp default-deny", 0xcb0071c8u /* 203.0.113.200 */, 2, FW_DROP_DEFAULT_DENY},
};

struct pkt {
	unsigned char b[14 + 20 + 8 + 64];
};

static __u16 csum16(const void *p, size_t len)
{
	const unsigned char *b = p;
	__u32 s = 0;

	for (size_t i = 0; i + 1 < len; i += 2)
		s += (b[i] << 8) | b[i + 1];
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (__u16)~s;
}

static void build_pkt(struct pkt *p, __u32 src, __u32 dst)
{
	unsigned char *eth = p->b, *ip = p->b + 14, *udp = ip + 20;
	__u16 c;

	memset(p, 0, sizeof(*p));
	memcpy(eth, "\x02\x00\x00\x00\x00\x01\x02\x00\x00\x00\x00\x02\x08\x00", 14);
	ip[0] = 0x45;
	ip[2] = 0;
	ip[3] = 20 + 8 + 64;
	ip[4] = 0x12;
	ip[8] = 64;
	ip[9] = 17;
	src = htonl(src);
	dst = htonl(dst);
	memcpy(ip + 12, &src, 4);
	memcpy(ip + 16, &dst, 4);
	c = csum16(ip, 20);
	ip[10] = c >> 8;
	ip[11] = c & 0xff;
	udp[0] = 40000 >> 8;
	udp[1] = 40000 & 0xff;
	udp[2] = 0x01; /* 443 */
	udp[3] = 0xbb;
	udp[5] = 8 + 64;
	memset(udp + 8, 'x', 64);
}

static int test_run(int fd, const struct pkt *p, __u32 repeat, __u32 *ns, __u32 *retval)
{
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = p->b, .data_size_in = sizeof(p->b),
		    .repeat = repeat);

	if (bpf_prog_test_run_opts(fd, &o))
		return -errno;
	*ns = o.duration;
	*retval = o.retval;
	return 0;
}

struct meas {
	const char *label;
	int scale; /* index, -1 for baselines */
	int kind;
	int fd;
	struct pkt pkt;
	__u32 ns[MAX_ROUNDS];
};

/* One packet per call: pkts[0..npkts-1] in turn, calls calls; the mean of
 * the in-kernel durations (opts.duration of a single run). */
struct spread_meas {
	int scale;
	int kind;
	bool spread; /* the source cycles over every subject */
	struct pkt *pkts;
	unsigned int npkts;
	__u32 ns[MAX_ROUNDS];
};

static int cmp_u32(const void *a, const void *b)
{
	__u32 x = *(const __u32 *)a, y = *(const __u32 *)b;

	return x < y ? -1 : x > y;
}

static void summarize(const struct meas *m, int rounds, double *med, __u32 *mn, __u32 *mx)
{
	__u32 v[MAX_ROUNDS];

	memcpy(v, m->ns, sizeof(__u32) * rounds);
	qsort(v, rounds, sizeof(v[0]), cmp_u32);
	*mn = v[0];
	*mx = v[rounds - 1];
	*med = rounds % 2 ? v[rounds / 2] : (v[rounds / 2 - 1] + v[rounds / 2]) / 2.0;
}

/* One run with repeat=1 and the counters around it: the packet must get the
 * verdict and reason its kind promises, or the timing means nothing. */
static int check_verdict(const struct scale *sc, const struct meas *m)
{
	struct fw_counter before[FW_REASON_MAX], after[FW_REASON_MAX];
	__u32 ns = 0, ret = 0;
	int err;

	err = fw_dp_stats_read(sc->dp, before);
	if (!err)
		err = test_run(m->fd, &m->pkt, 1, &ns, &ret);
	if (!err)
		err = fw_dp_stats_read(sc->dp, after);
	if (err) {
		fprintf(stderr, "bench_tc: verdict check failed: %s\n", strerror(-err));
		return err;
	}
	if (ret != kinds[m->kind].retval ||
	    after[kinds[m->kind].reason].packets != before[kinds[m->kind].reason].packets + 1) {
		fprintf(stderr,
			"bench_tc: WRONG VERDICT for %s at %u subjects: TC %u (want %u), reason %s "
			"not counted\n",
			kinds[m->kind].name, sc->n, ret, kinds[m->kind].retval,
			fw_reason_name(kinds[m->kind].reason));
		return -EPROTO;
	}
	return 0;
}

static int spread_run(const struct scale *sc, const struct spread_meas *m, __u32 calls, __u32 *ns)
{
	unsigned long long sum = 0;
	__u32 d = 0, ret = 0;
	int err;

	for (__u32 i = 0; i < calls; i++) {
		err = test_run(sc->dp->from_sandbox_fd, &m->pkts[i % m->npkts], 1, &d, &ret);
		if (err)
			return err;
		sum += d;
	}
	*ns = (__u32)((sum + calls / 2) / calls);
	return 0;
}

/* Every packet of the measurement once: each gets its kind's verdict and
 * reason, or the spread figure would time something else. */
static int spread_check(const struct scale *sc, const struct spread_meas *m)
{
	struct fw_counter before[FW_REASON_MAX], after[FW_REASON_MAX];
	__u32 want = kinds[m->kind].reason, ns = 0, ret = 0;
	int err;

	err = fw_dp_stats_read(sc->dp, before);
	for (unsigned int i = 0; !err && i < m->npkts; i++) {
		err = test_run(sc->dp->from_sandbox_fd, &m->pkts[i], 1, &ns, &ret);
		if (!err && ret != kinds[m->kind].retval)
			err = -EPROTO;
	}
	if (!err)
		err = fw_dp_stats_read(sc->dp, after);
	if (!err && after[want].packets != before[want].packets + m->npkts)
		err = -EPROTO;
	if (err)
		fprintf(stderr, "bench_tc: WRONG VERDICT for %s%s at %u subjects: %s\n",
			kinds[m->kind].name, m->spread ? " spread" : "", sc->n, strerror(-err));
	return err;
}

static int cmd_spread(int rounds, __u32 calls, const char *dat)
{
	static const int skinds[] = {K_ALLOW, K_LEARNED};
	const int nk = (int)(sizeof(skinds) / sizeof(skinds[0]));
	struct spread_meas *ms = calloc(MAX_SCALES * 2 * nk, sizeof(*ms));
	unsigned int nm = 0;
	double one, many;
	__u32 mn, mx;
	FILE *f = NULL;
	int err = 0;

	if (!ms)
		return -ENOMEM;
	for (unsigned int s = 0; s < nscales; s++) {
		for (int k = 0; k < nk; k++) {
			for (int sp = 0; sp < 2; sp++) {
				struct spread_meas *m = &ms[nm++];
				unsigned int n = sp ? scales[s].n : 1;

				m->scale = (int)s;
				m->kind = skinds[k];
				m->spread = sp;
				m->npkts = n;
				m->pkts = calloc(n, sizeof(*m->pkts));
				if (!m->pkts) {
					err = -ENOMEM;
					goto out;
				}
				for (unsigned int i = 0; i < n; i++)
					build_pkt(
						&m->pkts[i],
						subject_addr(scales[s].n, sp ? i : scales[s].n / 2),
						kinds[m->kind].dst);
				err = spread_check(&scales[s], m);
				if (err)
					goto out;
			}
		}
	}
	fprintf(stderr, "bench_tc: %d rounds x %u spread measurements, %u calls each\n", rounds, nm,
		calls);
	for (int r = 0; r < rounds; r++) {
		for (unsigned int j = 0; j < nm; j++) {
			struct spread_meas *m = &ms[(j + (unsigned int)r) % nm];

			err = spread_run(&scales[m->scale], m, calls, &m->ns[r]);
			if (err) {
				fprintf(stderr, "bench_tc: test run failed: %s\n", strerror(-err));
				goto out;
			}
		}
	}

	printf("\nOne packet per call (repeat=1, %u calls, %d interleaved rounds; mean ns per\n"
	       "packet, median and min-max over rounds): 'one source' always from the middle\n"
	       "subject, 'spread' with the source cycling over every subject of the scale.\n\n",
	       calls, rounds);
	printf("%-9s %-18s %-8s %8s %13s %10s\n", "subjects", "packet", "source", "ns/pkt",
	       "(min-max)", "spread-one");
	if (dat) {
		f = fopen(dat, "w");
		if (f)
			fprintf(f, "# subjects kind one min max spread min max\n");
	}
	for (unsigned int i = 0; i + 1 < nm; i += 2) {
		struct meas tmp;

		for (int sp = 0; sp < 2; sp++) {
			const struct spread_meas *m = &ms[i + (unsigned int)sp];
			char range[32], extra[16] = "";

			memcpy(tmp.ns, m->ns, sizeof(tmp.ns));
			summarize(&tmp, rounds, sp ? &many : &one, &mn, &mx);
			snprintf(range, sizeof(range), "(%u-%u)", mn, mx);
			if (sp)
				snprintf(extra, sizeof(extra), "%+.1f", many - one);
			printf("%-9u %-18s %-8s %8.1f %13s %10s\n", scales[m->scale].n,
			       kinds[m->kind].name, sp ? "spread" : "one", sp ? many : one, range,
			       extra);
			if (f)
				fprintf(f, "%s%u %d %.1f %u %u", sp ? " " : "", scales[m->scale].n,
					m->kind, sp ? many : one, mn, mx);
		}
		if (f)
			fprintf(f, "\n");
	}
	if (f)
		fclose(f);
out:
	for (unsigned int i = 0; i < MAX_SCALES * 2 * (unsigned int)nk; i++)
		free(ms[i].pkts);
	free(ms);
	return err;
}

static int cmd_cost(int rounds, __u32 repeat, __u32 spread_calls, const char *dat,
		    const char *spread_dat)
{
	struct meas *ms = calloc(2 + MAX_SCALES * K_MAX, sizeof(*ms));
	double med, base_med[K_MAX], base_min[K_MAX];
	unsigned int nm = 0;
	__u32 mn, mx, ret = 0;
	FILE *f;
	int err;

	if (!ms)
		return 1;
	err = setup_all();
	if (!err)
		err = load_trivial();
	if (err)
		goto out;

	ms[nm] = (struct meas){.label = "empty program",
			       .scale = -1,
			       .kind = K_ALLOW,
			       .fd = bpf_program__fd(trivial->progs.bench_empty)};
	build_pkt(&ms[nm].pkt, SUBJECT_CENTER, kinds[K_ALLOW].dst);
	nm++;
	ms[nm] = (struct meas){.label = "trivial program",
			       .scale = -1,
			       .kind = K_ALLOW,
			       .fd = bpf_program__fd(trivial->progs.bench_trivial)};
	build_pkt(&ms[nm].pkt, SUBJECT_CENTER, kinds[K_ALLOW].dst);
	nm++;
	for (unsigned int s = 0; s < nscales; s++) {
		for (int k = 0; k < K_MAX; k++) {
			ms[nm] = (struct meas){.label = kinds[k].name,
					       .scale = (int)s,
					       .kind = k,
					       .fd = scales[s].dp->from_sandbox_fd};
			build_pkt(&ms[nm].pkt, subject_addr(scales[s].n, scales[s].n / 2),
				  kinds[k].dst);
			err = check_verdict(&scales[s], &ms[nm]);
			if (err)
				goto out;
			nm++;
		}
	}

	fprintf(stderr, "bench_tc: %d rounds x %u measurements, repeat=%u each\n", rounds, nm,
		repeat);
	for (int r = 0; r < rounds; r++) {
		/* rotate the order every round so drift hits all alike */
		for (unsigned int j = 0; j < nm; j++) {
			struct meas *m = &ms[(j + (unsigned int)r * 3) % nm];

			err = test_run(m->fd, &m->pkt, repeat, &m->ns[r], &ret);
			if (err) {
				fprintf(stderr, "bench_tc: test run failed: %s\n", strerror(-err));
				goto out;
			}
		}
	}

	printf("Per-packet cost of the TC ingress program (bpf_prog_test_run_opts, repeat=%u,\n"
	       "%d interleaved rounds; ns per packet, median and min-max over rounds).\n"
	       "Each subject: %d CIDR rules (v4, allow and deny) and up to %d learned addresses;\n"
	       "the packet's source is the subject in the middle of the id range.\n\n",
	       repeat, rounds, RULES_PER_SUBJECT, LEARNED_PER_SUBJECT);
	printf("%-9s %-18s %8s %13s %8s %10s\n", "subjects", "packet", "ns/pkt", "(min-max)",
	       "vs N=1", "(of mins)");
	for (unsigned int i = 0; i < nm; i++) {
		const struct meas *m = &ms[i];
		char scale[32], range[32], ratio[16] = "", ratio_min[16] = "";

		summarize(m, rounds, &med, &mn, &mx);
		if (m->scale < 0) {
			snprintf(scale, sizeof(scale), "-");
		} else {
			snprintf(scale, sizeof(scale), "%u", scales[m->scale].n);
			if (m->scale == 0) {
				base_med[m->kind] = med;
				base_min[m->kind] = mn;
			}
			snprintf(ratio, sizeof(ratio), "%.2fx", med / base_med[m->kind]);
			snprintf(ratio_min, sizeof(ratio_min), "(%.2fx)", mn / base_min[m->kind]);
		}
		snprintf(range, sizeof(range), "(%u-%u)", mn, mx);
		printf("%-9s %-18s %8.1f %13s %8s %10s\n", scale, m->label, med, range, ratio,
		       ratio_min);
		if (i == 1 || (m->scale >= 0 && m->kind == K_MAX - 1 && i + 1 < nm))
			printf("\n");
	}
	if (scales[0].n != 1)
		printf("(ratios are against %u subjects, the smallest scale run)\n", scales[0].n);

	/* targets: stated, never asserted */
	printf("\nTargets: <= 150 ns per packet at 1024 subjects; cost at 1024 <= 1.3x cost at "
	       "1.\n");
	for (unsigned int s = 0; s < nscales; s++) {
		if (scales[s].n != 1024)
			continue;
		for (int k = 0; k < K_MAX; k++) {
			const struct meas *m = &ms[2 + s * K_MAX + k];

			summarize(m, rounds, &med, &mn, &mx);
			printf("  %-18s at 1024: %6.1f ns (%s 150 ns), %.2fx N=%u (%s 1.3x)\n",
			       kinds[k].name, med, med <= 150 ? "meets" : "MISSES",
			       med / base_med[k], scales[0].n,
			       med / base_med[k] <= 1.3 ? "meets" : "MISSES");
		}
	}

	if (dat) {
		f = fopen(dat, "w");
		if (!f) {
			fprintf(stderr, "bench_tc: %s: %s\n", dat, strerror(errno));
			err = -errno;
			goto out;
		}
		fprintf(f, "# subjects");
		for (int k = 0; k < K_MAX; k++)
			fprintf(f, " \"%s\" min max", kinds[k].name);
		fprintf(f, " trivial min max empty min max\n");
		for (unsigned int s = 0; s < nscales; s++) {
			fprintf(f, "%u", scales[s].n);
			for (int k = 0; k < K_MAX; k++) {
				summarize(&ms[2 + s * K_MAX + k], rounds, &med, &mn, &mx);
				fprintf(f, " %.1f %u %u", med, mn, mx);
			}
			for (int b = 1; b >= 0; b--) {
				summarize(&ms[b], rounds, &med, &mn, &mx);
				fprintf(f, " %.1f %u %u", med, mn, mx);
			}
			fprintf(f, "\n");
		}
		fclose(f);
	}
	if (spread_calls)
		err = cmd_spread(rounds, spread_calls, spread_dat);
out:
	free(ms);
	teardown();
	return err ? 1 : 0;
}

/* --- part B helpers: switch what runs on an interface ------------------- */

static int tc_clear(int ifindex)
{
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex,
		    .attach_point = BPF_TC_INGRESS | BPF_TC_EGRESS);
	int err = bpf_tc_hook_destroy(&hook);

	return err == -ENOENT || err == -EINVAL ? 0 : err;
}

static int tc_put(int ifindex, int prog_fd)
{
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = BPF_TC_INGRESS);
	LIBBPF_OPTS(bpf_tc_opts, opts, .handle = FW_TC_HANDLE, .priority = FW_TC_PRIORITY,
		    .prog_fd = prog_fd, .flags = BPF_TC_F_REPLACE);
	int err = bpf_tc_hook_create(&hook);

	if (err && err != -EEXIST)
		return err;
	return bpf_tc_attach(&hook, &opts);
}

static struct scale *find_scale(unsigned int n)
{
	for (unsigned int i = 0; i < nscales; i++)
		if (scales[i].n == n)
			return &scales[i];
	return NULL;
}

static int cmd_serve(const char *ifname)
{
	char line[128];
	int ifindex = (int)if_nametoindex(ifname), err;

	if (!ifindex) {
		fprintf(stderr, "bench_tc: no interface %s\n", ifname);
		return 1;
	}
	err = setup_all();
	if (!err)
		err = load_trivial();
	if (err) {
		printf("err setup\n");
		fflush(stdout);
		teardown();
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin)) {
		unsigned int n = 0;
		struct scale *sc;

		line[strcspn(line, "\n")] = '\0';
		if (strcmp(line, "quit") == 0)
			break;
		if (strcmp(line, "none") == 0) {
			err = tc_clear(ifindex);
		} else if (strcmp(line, "trivial") == 0 ||
			   (sscanf(line, "trivial %u", &n) == 1 && n >= 1 && n <= 4096)) {
			err = trivial_fill(n);
			if (!err)
				err = tc_clear(ifindex);
			if (!err)
				err = tc_put(ifindex,
					     bpf_program__fd(trivial->progs.bench_trivial));
		} else if (sscanf(line, "fw %u", &n) == 1 && (sc = find_scale(n))) {
			err = tc_clear(ifindex);
			if (!err)
				err = fw_dp_attach(sc->dp, ifindex);
		} else if (sscanf(line, "stats %u", &n) == 1 && (sc = find_scale(n))) {
			struct fw_counter c[FW_REASON_MAX];
			unsigned long long pass = 0, drop = 0;

			err = fw_dp_stats_read(sc->dp, c);
			for (int r = 0; !err && r < FW_REASON_MAX; r++) {
				if (!fw_reason_drops(r))
					pass += c[r].packets;
				else
					drop += c[r].packets;
			}
			if (!err) {
				printf("ok allow_cidr=%llu pass=%llu drop=%llu\n",
				       (unsigned long long)c[FW_PASS_ALLOW_CIDR].packets, pass,
				       drop);
				fflush(stdout);
				continue;
			}
		} else {
			err = -EINVAL;
		}
		if (err)
			printf("err %s: %s\n", line, strerror(-err));
		else
			printf("ok\n");
		fflush(stdout);
	}
	tc_clear(ifindex);
	teardown();
	return 0;
}

static int cmd_drop(const char *ifname)
{
	int ifindex = (int)if_nametoindex(ifname), err;

	if (!ifindex) {
		fprintf(stderr, "bench_tc: no interface %s\n", ifname);
		return 1;
	}
	trivial = bench_trivial_bpf__open_and_load();
	if (!trivial) {
		fprintf(stderr, "bench_tc: can't load bench_trivial: %s\n", strerror(errno));
		return 1;
	}
	err = tc_put(ifindex, bpf_program__fd(trivial->progs.bench_drop));
	if (err)
		fprintf(stderr, "bench_tc: can't attach to %s: %s\n", ifname, strerror(-err));
	bench_trivial_bpf__destroy(trivial);
	return err ? 1 : 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: bench_tc cost [-s SCALES] [-r ROUNDS] [-n REPEAT] [-p PINPREFIX] "
		   "[-o DATFILE] [-S CALLS [-O DATFILE]]\n"
		   "       bench_tc serve -i IFNAME [-s SCALES] [-p PINPREFIX]\n"
		   "       bench_tc drop IFNAME\n");
}

int main(int argc, char **argv)
{
	const char *cmd, *dat = NULL, *sdat = NULL, *ifname = NULL, *scale_list = "1,64,1024";
	int c, rounds = 5, ret;
	long repeat = 1000000, spread_calls = 0;

	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	cmd = argv[1];
	if (strcmp(cmd, "drop") == 0) {
		if (argc != 3) {
			usage(stderr);
			return 2;
		}
		return cmd_drop(argv[2]);
	}
	snprintf(pin_prefix, sizeof(pin_prefix), "/sys/fs/bpf/fastwall-bench-%d", (int)getpid());
	optind = 2;
	while ((c = getopt(argc, argv, "s:r:n:p:o:i:S:O:h")) != -1) {
		switch (c) {
		case 's':
			scale_list = optarg;
			break;
		case 'r':
			rounds = atoi(optarg);
			break;
		case 'n':
			repeat = atol(optarg);
			break;
		case 'p':
			snprintf(pin_prefix, sizeof(pin_prefix), "%s", optarg);
			break;
		case 'o':
			dat = optarg;
			break;
		case 'i':
			ifname = optarg;
			break;
		case 'S':
			spread_calls = atol(optarg);
			break;
		case 'O':
			sdat = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (rounds < 1 || rounds > MAX_ROUNDS || repeat < 1 || repeat > 100000000 ||
	    spread_calls < 0 || spread_calls > 10000000 || parse_scales(scale_list)) {
		usage(stderr);
		return 2;
	}
	fw_log_level = FW_LOG_WARN;
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGHUP, on_signal);
	signal(SIGPIPE, on_signal);

	if (strcmp(cmd, "cost") == 0) {
		ret = cmd_cost(rounds, (__u32)repeat, (__u32)spread_calls, dat, sdat);
	} else if (strcmp(cmd, "serve") == 0 && ifname) {
		ret = cmd_serve(ifname);
	} else {
		usage(stderr);
		ret = 2;
	}
	purge_all();
	return ret;
}
