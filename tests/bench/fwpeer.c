// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fwpeer: the fastwall side of the nftables comparison (scripts/bench-nft.sh).
 * It programs fastwalld the way a Fastlet does, through the Sandbox Actions
 * listener, writes learned addresses into the pinned fastwall_learned map
 * the way the DNS proxy does, and times single control-plane operations.
 *
 *   fwpeer [-a ADDR:PORT] setup  -n N -r RULES [-t THREADS] [-H I=IF,...] [-d IF]
 *   fwpeer [-a ADDR:PORT] ops    -n N -r RULES [-k REPS] [-o OFFSET] [-d IF]
 *   fwpeer [-a ADDR:PORT] replay -n N -r RULES [-t THREADS] [-H I=IF,...] [-d IF]
 *                                -L LOG -P PIDFILE -- CMD ARGS...
 *   fwpeer learn-fill -b BPFFS -l LEARNED
 *   fwpeer learn-time -b BPFFS -s SUBJECT_ADDR [-k REPS]
 *   fwpeer learn-count -b BPFFS
 *   fwpeer trivial -s ADDR[,ADDR...] IFNAME...
 *
 * Subjects and policies are those of scripts/nft/reference.sh, so every peer
 * of the comparison enforces the same thing: subject i of N (uid "cmp-i")
 * has address 10.64.8.2 - N/2 + i; its CIDR rules are allow 203.0.113.0/25,
 * deny 203.0.113.128/27 and RULES-2 pseudo-random prefixes (the generator of
 * reference.sh, same seeds; one in three deny); default deny. -H names the
 * host veth of some subjects (I=IF), -d that of all others.
 *
 * Every figure is printed; nothing is judged. Exit status is non-zero when a
 * call fails or a map cannot be written. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "common/addr.h"
#include "bench_trivial.skel.h"
#include "benchlib.h"
#include "fastwall/abi.h"
#include "gateway/policy_port.h"

#define API	     "sandbox.fast.io/actions/v1"
#define ACTIONS_PATH "/_fastlet/v1/actions"
#define STATUS_PATH  "/_fastlet/v1/actions/status"
#define CENTER	     0x0a400802u /* 10.64.8.2 */
#define MAX_RULES    4096
#define MAX_HOSTVETH 16
#define POLICY_MAX   (MAX_RULES * 72)
#define BODY_MAX     (POLICY_MAX + 2048)
#define SWAP_SALT    65536 /* reference.sh's "swap" mode */

static struct sockaddr_in g_addr;
static unsigned g_n, g_rules;
static const char *g_default_veth = "p0";
static struct {
	unsigned idx;
	char ifname[IF_NAMESIZE];
} g_veth[MAX_HOSTVETH];
static unsigned g_nveth;

static void fail(const char *what, const char *detail)
{
	fprintf(stderr, "fwpeer: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
	exit(1);
}

/* --- subjects and policies (as scripts/nft/reference.sh) --------------- */

static uint32_t subject_addr(unsigned i)
{
	return CENTER - g_n / 2 + i;
}

static void ipstr(uint32_t host_order, char *buf, size_t len)
{
	snprintf(buf, len, "%u.%u.%u.%u", host_order >> 24, (host_order >> 16) & 255,
		 (host_order >> 8) & 255, host_order & 255);
}

static uint32_t next_rand(uint32_t *seed)
{
	*seed = *seed * 1664525u + 1013904223u;
	return *seed >> 8;
}

/* Appends the escaped policy JSON of subject i (variant salt) to out, as
 * it sits inside the JSON string binding.input. Returns the length or -1. */
static int policy_input(char *out, size_t len, unsigned i, unsigned salt)
{
	static const unsigned char plens[] = {8, 12, 16, 16, 20, 22, 24, 24, 24, 28, 32, 32};
	uint32_t seed = 2654435769u * (i + 1 + salt);
	int n = snprintf(out, len,
			 "{\\\"defaultAction\\\":\\\"deny\\\",\\\"egress\\\":["
			 "{\\\"action\\\":\\\"allow\\\",\\\"target\\\":\\\"203.0.113.0/25\\\"},"
			 "{\\\"action\\\":\\\"deny\\\",\\\"target\\\":\\\"203.0.113.128/27\\\"}");

	for (unsigned k = 2; k < g_rules && n > 0 && (size_t)n < len; k++) {
		uint32_t plen = plens[next_rand(&seed) % sizeof(plens)], o1, a;
		char net[INET_ADDRSTRLEN];

		do
			o1 = 1 + next_rand(&seed) % 190;
		while (o1 == 10 || o1 == 100 || o1 == 127 || o1 == 169 || o1 == 172);
		a = (o1 << 24) | (next_rand(&seed) & 0xffffff);
		a &= plen == 32 ? ~0u : ~(~0u >> plen);
		ipstr(a, net, sizeof(net));
		n += snprintf(out + n, len - (size_t)n,
			      ",{\\\"action\\\":\\\"%s\\\",\\\"target\\\":\\\"%s/%u\\\"}",
			      k % 3 == 0 ? "deny" : "allow", net, plen);
	}
	if (n > 0 && (size_t)n < len)
		n += snprintf(out + n, len - (size_t)n, "]}");
	return n > 0 && (size_t)n < len ? n : -1;
}

static const char *host_veth(unsigned i)
{
	for (unsigned k = 0; k < g_nveth; k++)
		if (g_veth[k].idx == i)
			return g_veth[k].ifname;
	return g_default_veth;
}

enum op { OP_SET, OP_READY, OP_REMOVE };

/* The envelope of op for subject i (policy variant salt, generation gen). */
static int envelope(char *out, size_t len, enum op op, unsigned i, unsigned salt,
		    unsigned long long gen)
{
	static const char *const names[] = {"SET_BINDING", "LIFECYCLE_HOOK", "REMOVE_BINDING"};
	static unsigned long long seq;
	char ip[INET_ADDRSTRLEN];
	int n, m;

	ipstr(subject_addr(i), ip, sizeof(ip));
	n = snprintf(out, len,
		     "{\"apiVersion\":\"" API "\",\"operation\":\"%s\","
		     "\"invocationId\":\"sha256:cmp-%u-%llu\","
		     "\"sandbox\":{\"uid\":\"cmp-%u\",\"name\":\"cmp-%u\",\"namespace\":\"bench\"},"
		     "\"revision\":{\"specGeneration\":%llu,\"runtimeInstanceId\":\"rt-cmp-%u\","
		     "\"attachmentId\":\"att-cmp-%u\",\"routeGeneration\":1},"
		     "\"attachment\":{\"network\":{\"ip\":\"%s\",\"gateway\":\"10.64.0.1\","
		     "\"privateCidr\":\"10.64.0.0/16\",\"hostVeth\":\"%s\"}},",
		     names[op], i, __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED), i, i, gen, i, i,
		     ip, host_veth(i));
	if (n < 0 || (size_t)n >= len)
		return -1;
	switch (op) {
	case OP_SET:
		m = snprintf(out + n, len - (size_t)n, "\"binding\":{\"input\":\"");
		if (m < 0 || (size_t)(n + m) >= len)
			return -1;
		n += m;
		m = policy_input(out + n, len - (size_t)n, i, salt);
		if (m < 0)
			return -1;
		n += m;
		m = snprintf(out + n, len - (size_t)n, "\"}}");
		break;
	case OP_READY:
		m = snprintf(out + n, len - (size_t)n,
			     "\"hook\":{\"name\":\"sandbox.data-plane-ready\",\"sequence\":2}}");
		break;
	default:
		m = snprintf(out + n, len - (size_t)n, "\"binding\":{\"input\":null}}");
		break;
	}
	if (m < 0 || (size_t)(n + m) >= len)
		return -1;
	return n + m;
}

/* Posts op for subject i; returns the status (200 expected). */
static int post(struct httpc *c, char *body, enum op op, unsigned i, unsigned salt,
		unsigned long long gen)
{
	int n = envelope(body, BODY_MAX, op, i, salt, gen);

	if (n < 0)
		fail("envelope too large", NULL);
	return httpc_request(c, "POST", ACTIONS_PATH, NULL, body, (size_t)n);
}

/* --- setup and replay: every subject bound and made ready ------------------ */

struct worker {
	pthread_t th;
	unsigned id, nthreads;
	unsigned long long ok, failed;
	int bad_status;
	char bad_body[256];
};

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct httpc c = {.addr = &g_addr, .fd = -1};
	char *body = malloc(BODY_MAX);

	if (!body)
		fail("out of memory", NULL);
	/* a thread owns the subjects i = id (mod nthreads): calls per sandbox
	 * are serialised, as a Fastlet serialises them */
	for (unsigned i = w->id; i < g_n; i += w->nthreads) {
		int st = post(&c, body, OP_SET, i, 0, 1);

		if (st == 200)
			st = post(&c, body, OP_READY, i, 0, 1);
		if (st == 200) {
			w->ok++;
			continue;
		}
		if (!w->failed++) {
			w->bad_status = st;
			snprintf(w->bad_body, sizeof(w->bad_body), "%s",
				 st > 0 ? c.last_body : "connection failed");
		}
	}
	httpc_close(&c);
	free(body);
	return NULL;
}

/* Binds and readies all N subjects on nthreads connections; returns the
 * wall time in ns, or 0 when a call failed. */
static uint64_t bind_all(unsigned nthreads)
{
	struct worker ws[64];
	unsigned long long ok = 0, failed = 0;
	uint64_t t0 = bench_now_ns(), wall;

	for (unsigned t = 0; t < nthreads; t++) {
		memset(&ws[t], 0, sizeof(ws[t]));
		ws[t].id = t;
		ws[t].nthreads = nthreads;
		if (pthread_create(&ws[t].th, NULL, worker_main, &ws[t]))
			fail("pthread_create failed", NULL);
	}
	for (unsigned t = 0; t < nthreads; t++) {
		pthread_join(ws[t].th, NULL);
		ok += ws[t].ok;
		failed += ws[t].failed;
		if (ws[t].failed)
			fprintf(stderr, "fwpeer: %llu subjects failed; first: %d %s\n",
				ws[t].failed, ws[t].bad_status, ws[t].bad_body);
	}
	wall = bench_now_ns() - t0;
	printf("bound %llu subjects (SET_BINDING + data-plane-ready, %u rules each) in %.3f s "
	       "(%.0f subjects/s, %u connections)\n",
	       ok, g_rules, wall / 1e9, ok * 1e9 / (double)wall, nthreads);
	return failed ? 0 : wall;
}

static int cmd_replay(int argc, char **argv, unsigned nthreads, const char *log,
		      const char *pidfile)
{
	struct httpc c = {.addr = &g_addr, .fd = -1};
	uint64_t t0, t_ready, wall;
	unsigned polls = 0;
	pid_t pid;
	FILE *f;

	if (!log || !pidfile || optind >= argc)
		fail("replay needs -L LOG -P PIDFILE -- CMD ARGS...", NULL);
	t0 = bench_now_ns();
	pid = fork();
	if (pid < 0)
		fail("fork failed", strerror(errno));
	if (!pid) {
		int fd = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);

		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		setpgid(0, 0);
		execvp(argv[optind], argv + optind);
		_exit(127);
	}
	f = fopen(pidfile, "w");
	if (f) {
		fprintf(f, "%d\n", (int)pid);
		fclose(f);
	}
	/* status every 1 ms until it says ready */
	for (;;) {
		int st;

		if (waitpid(pid, NULL, WNOHANG) == pid)
			fail("the daemon exited while starting", NULL);
		st = httpc_request(&c, "GET", STATUS_PATH, NULL, NULL, 0);
		polls++;
		if (st == 200 && strstr(c.last_body, "\"ready\":true"))
			break;
		httpc_close(&c);
		if (bench_now_ns() - t0 > 60000000000ull)
			fail("status not ready after 60 s", NULL);
		usleep(1000);
	}
	t_ready = bench_now_ns();
	httpc_close(&c);
	wall = bind_all(nthreads);
	printf("restart start_to_ready_ms=%.1f start_to_replayed_ms=%.1f replay_ms=%.1f polls=%u\n",
	       (t_ready - t0) / 1e6, (t_ready - t0 + wall) / 1e6, wall / 1e6, polls);
	return wall ? 0 : 1;
}

/* --- single operations with N subjects present ---------------------------- */

static void print_values(const char *label, const double *v, unsigned n)
{
	printf("op %s", label);
	for (unsigned k = 0; k < n; k++)
		printf(" %.4f", v[k]);
	printf("\n");
}

/* Per repetition k (j = OFFSET + k): add subject N+j (SET_BINDING, then data-plane-ready),
 * replace the whole rule set of one subject (SET_BINDING, same fence, the
 * other policy variant), remove another subject (REMOVE_BINDING). One
 * keep-alive connection; each figure is one request's round trip in ms. */
static int cmd_ops(unsigned reps, unsigned off)
{
	double *set = calloc(reps, sizeof(double)), *ready = calloc(reps, sizeof(double));
	double *add = calloc(reps, sizeof(double)), *upd = calloc(reps, sizeof(double));
	double *rem = calloc(reps, sizeof(double));
	char *body = malloc(BODY_MAX);
	struct httpc c = {.addr = &g_addr, .fd = -1};
	unsigned n0 = g_n;
	int rc = 0;

	if (!set || !ready || !add || !upd || !rem || !body)
		fail("out of memory", NULL);
	for (unsigned k = 0; k < reps; k++) {
		/* spread over the range; the update and the removal never
		 * pick the same subject, nor one removed earlier (also in a
		 * later run with a larger -o) */
		unsigned j = off + k, upd_i = (j * 2u * 37u) % n0,
			 rem_i = (j * 2u * 37u + 37u) % n0;
		uint64_t t0, t1, t2;
		int s1, s2;

		t0 = bench_now_ns();
		s1 = post(&c, body, OP_SET, n0 + j, 0, 1);
		t1 = bench_now_ns();
		s2 = s1 == 200 ? post(&c, body, OP_READY, n0 + j, 0, 1) : s1;
		t2 = bench_now_ns();
		set[k] = (t1 - t0) / 1e6;
		ready[k] = (t2 - t1) / 1e6;
		add[k] = (t2 - t0) / 1e6;
		if (s2 != 200) {
			fprintf(stderr, "fwpeer: add cmp-%u: %d %s\n", n0 + j, s2, c.last_body);
			rc = 1;
		}

		if (n0 > 1) {
			t0 = bench_now_ns();
			s1 = post(&c, body, OP_SET, upd_i, SWAP_SALT + j, 2 + j);
			upd[k] = (bench_now_ns() - t0) / 1e6;
			if (s1 != 200) {
				fprintf(stderr, "fwpeer: update cmp-%u: %d %s\n", upd_i, s1,
					c.last_body);
				rc = 1;
			}
			t0 = bench_now_ns();
			s1 = post(&c, body, OP_REMOVE, rem_i, 0, 1);
			rem[k] = (bench_now_ns() - t0) / 1e6;
			if (s1 != 200) {
				fprintf(stderr, "fwpeer: remove cmp-%u: %d %s\n", rem_i, s1,
					c.last_body);
				rc = 1;
			}
		}
	}
	print_values("add", add, reps);
	print_values("add-set-binding", set, reps);
	print_values("add-ready", ready, reps);
	if (n0 > 1) {
		print_values("update", upd, reps);
		print_values("remove", rem, reps);
	}
	httpc_close(&c);
	free(set);
	free(ready);
	free(add);
	free(upd);
	free(rem);
	free(body);
	return rc;
}

/* --- learned addresses, written as the DNS proxy writes them -------------- */

static int open_pinned(const char *bpffs, const char *name)
{
	char path[512];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", bpffs, name);
	fd = bpf_obj_get(path);
	if (fd < 0)
		fail("can't open pinned map", path);
	return fd;
}

/* learned address k of 512: 198.51.100.k, then 192.0.2.(k-256) */
static uint32_t learned_addr(unsigned k)
{
	return k < 256 ? 0xc6336400u + k : 0xc0000200u + (k - 256);
}

static int cmd_learn_fill(const char *bpffs, unsigned learned)
{
	int dispatch = open_pinned(bpffs, "fastwall_dispatch");
	int lfd = open_pinned(bpffs, "fastwall_learned");
	struct fw_ip key, *prev = NULL;
	struct fw_subject subj;
	unsigned long long written = 0;
	uint64_t t0 = bench_now_ns();
	struct timespec ts;
	__u64 mono;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	mono = (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
	/* one entry per subject address in dispatch; one address each here */
	while (bpf_map_get_next_key(dispatch, prev, &key) == 0) {
		prev = &key;
		if (bpf_map_lookup_elem(dispatch, &key, &subj))
			continue;
		for (unsigned k = 0; k < learned; k++) {
			struct fw_learned_key lk = {.subject = subj.id};
			struct fw_lease lease = {.expires_ns = mono + 7200ull * 1000000000ull,
						 .learned_ns = mono};

			fw_addr_from_v4(&lk.addr, htonl(learned_addr(k)));
			if (bpf_map_update_elem(lfd, &lk, &lease, BPF_ANY)) {
				fprintf(stderr, "fwpeer: learned entry %llu: %s\n", written,
					strerror(errno));
				return 1;
			}
			written++;
		}
	}
	printf("learned %llu addresses (%u per subject) in %.2f s\n", written, learned,
	       (bench_now_ns() - t0) / 1e9);
	return 0;
}

/* Counts the entries of the pinned fastwall_learned map. */
static int cmd_learn_count(const char *bpffs)
{
	int lfd = open_pinned(bpffs, "fastwall_learned");
	struct fw_learned_key key, *prev = NULL;
	unsigned long long n = 0;

	while (bpf_map_get_next_key(lfd, prev, &key) == 0) {
		prev = &key;
		n++;
	}
	printf("%llu\n", n);
	return 0;
}

/* Times REPS writes of a new learned address for the subject at addr: one
 * bpf_map_update_elem each (the DNS proxy's kernel write before it answers),
 * removed again untimed. */
static int cmd_learn_time(const char *bpffs, const char *addr, unsigned reps)
{
	int dispatch = open_pinned(bpffs, "fastwall_dispatch");
	int lfd = open_pinned(bpffs, "fastwall_learned");
	double *v = calloc(reps, sizeof(double));
	struct fw_subject subj;
	struct in_addr a;
	struct fw_ip key;

	if (!v || inet_pton(AF_INET, addr, &a) != 1)
		fail("bad address or out of memory", addr);
	fw_addr_from_v4(&key, a.s_addr);
	if (bpf_map_lookup_elem(dispatch, &key, &subj))
		fail("no subject at", addr);
	for (unsigned k = 0; k < reps; k++) {
		/* 198.18.0.0/15: never among the filled addresses */
		struct fw_learned_key lk = {.subject = subj.id};
		struct fw_lease lease;
		struct timespec ts;
		uint64_t t0, t1;

		fw_addr_from_v4(&lk.addr, htonl(0xc6120000u + k));
		t0 = bench_now_ns();
		clock_gettime(CLOCK_MONOTONIC, &ts);
		lease.learned_ns = (__u64)ts.tv_sec * 1000000000ull + (__u64)ts.tv_nsec;
		lease.expires_ns = lease.learned_ns + 300ull * 1000000000ull;
		if (bpf_map_update_elem(lfd, &lk, &lease, BPF_ANY))
			fail("can't write fastwall_learned", strerror(errno));
		t1 = bench_now_ns();
		v[k] = (t1 - t0) / 1e6;
	}
	for (unsigned k = 0; k < reps; k++) {
		struct fw_learned_key lk = {.subject = subj.id};

		fw_addr_from_v4(&lk.addr, htonl(0xc6120000u + k));
		bpf_map_delete_elem(lfd, &lk);
	}
	print_values("learn", v, reps);
	free(v);
	return 0;
}

/* --- the trivial TC program on several ports ------------------------------ */

static int cmd_trivial(const char *srcs, char **ifnames, int nif)
{
	struct bench_trivial_bpf *skel = bench_trivial_bpf__open_and_load();
	char *copy, *tok, *save = NULL;
	__u64 zero = 0;
	int err = 0;

	if (!skel)
		fail("can't load bench_trivial", strerror(errno));
	copy = strdup(srcs);
	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		struct in_addr a;

		if (inet_pton(AF_INET, tok, &a) != 1)
			fail("bad address", tok);
		bpf_map_update_elem(bpf_map__fd(skel->maps.bench_srcs), &a.s_addr, &zero, BPF_ANY);
	}
	free(copy);
	for (int i = 0; i < nif && !err; i++) {
		int ifindex = (int)if_nametoindex(ifnames[i]);
		LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = BPF_TC_INGRESS);
		LIBBPF_OPTS(bpf_tc_opts, opts, .handle = 1, .priority = 1,
			    .prog_fd = bpf_program__fd(skel->progs.bench_trivial));

		if (!ifindex)
			fail("no interface", ifnames[i]);
		err = bpf_tc_hook_create(&hook);
		if (err == -EEXIST)
			err = 0;
		if (!err)
			err = bpf_tc_attach(&hook, &opts);
		if (err)
			fprintf(stderr, "fwpeer: can't attach to %s: %s\n", ifnames[i],
				strerror(-err));
	}
	/* the filters keep the program alive after we exit */
	bench_trivial_bpf__destroy(skel);
	return err ? 1 : 0;
}

/* --- command line ------------------------------------------------------ */

static void usage(void)
{
	fprintf(stderr,
		"usage: fwpeer [-a ADDR:PORT] setup -n N -r RULES [-t THREADS] [-H "
		"I=IF,...] [-d IF]\n"
		"       fwpeer [-a ADDR:PORT] ops -n N -r RULES [-k REPS] [-o OFFSET] [-d IF]\n"
		"       fwpeer [-a ADDR:PORT] replay -n N -r RULES [-t THREADS] [-H "
		"I=IF,...] [-d IF]\n"
		"                             -L LOG -P PIDFILE -- CMD ARGS...\n"
		"       fwpeer learn-fill -b BPFFS -l LEARNED\n"
		"       fwpeer learn-time -b BPFFS -s SUBJECT_ADDR [-k REPS]\n"
		"       fwpeer learn-count -b BPFFS\n"
		"       fwpeer trivial -s ADDR[,ADDR...] IFNAME...\n");
	exit(2);
}

static void parse_veths(const char *s)
{
	char *copy = strdup(s), *tok, *save = NULL;

	for (tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');

		if (!eq || g_nveth == MAX_HOSTVETH || strlen(eq + 1) >= IF_NAMESIZE)
			usage();
		*eq = '\0';
		g_veth[g_nveth].idx = (unsigned)atoi(tok);
		snprintf(g_veth[g_nveth].ifname, IF_NAMESIZE, "%s", eq + 1);
		g_nveth++;
	}
	free(copy);
}

int main(int argc, char **argv)
{
	const char *cmd, *bpffs = NULL, *src = NULL, *log = NULL, *pidfile = NULL;
	unsigned threads = 4, reps = 20, learned = 512, off = 0;
	int opt;

	setvbuf(stdout, NULL, _IOLBF, 0);
	signal(SIGPIPE, SIG_IGN);
	if (!bench_parse_hostport("127.0.0.1:" FW_POLICY_PORT_STR, &g_addr))
		return 2;
	while ((opt = getopt(argc, argv, "+a:")) != -1) {
		if (opt != 'a' || !bench_parse_hostport(optarg, &g_addr))
			usage();
	}
	if (optind >= argc)
		usage();
	cmd = argv[optind];
	argc -= optind;
	argv += optind;
	optind = 1;
	while ((opt = getopt(argc, argv, "+n:r:t:k:o:H:d:b:l:s:L:P:")) != -1) {
		switch (opt) {
		case 'o':
			off = (unsigned)atoi(optarg);
			break;
		case 'n':
			g_n = (unsigned)atoi(optarg);
			break;
		case 'r':
			g_rules = (unsigned)atoi(optarg);
			break;
		case 't':
			threads = (unsigned)atoi(optarg);
			break;
		case 'k':
			reps = (unsigned)atoi(optarg);
			break;
		case 'H':
			parse_veths(optarg);
			break;
		case 'd':
			g_default_veth = optarg;
			break;
		case 'b':
			bpffs = optarg;
			break;
		case 'l':
			learned = (unsigned)atoi(optarg);
			break;
		case 's':
			src = optarg;
			break;
		case 'L':
			log = optarg;
			break;
		case 'P':
			pidfile = optarg;
			break;
		default:
			usage();
		}
	}
	if (!strcmp(cmd, "trivial")) {
		if (!src || optind >= argc)
			usage();
		return cmd_trivial(src, argv + optind, argc - optind);
	}
	if (!strcmp(cmd, "learn-fill")) {
		if (!bpffs || learned > 512)
			usage();
		return cmd_learn_fill(bpffs, learned);
	}
	if (!strcmp(cmd, "learn-count")) {
		if (!bpffs)
			usage();
		return cmd_learn_count(bpffs);
	}
	if (!strcmp(cmd, "learn-time")) {
		if (!bpffs || !src || !reps)
			usage();
		return cmd_learn_time(bpffs, src, reps);
	}
	if (!g_n || g_n > 8000 || g_rules < 2 || g_rules > MAX_RULES || !threads || threads > 64 ||
	    !reps)
		usage();
	if (!strcmp(cmd, "setup"))
		return bind_all(threads) ? 0 : 1;
	if (!strcmp(cmd, "ops"))
		return cmd_ops(reps, off);
	if (!strcmp(cmd, "replay"))
		return cmd_replay(argc, argv, threads, log, pidfile);
	usage();
	return 2;
}
