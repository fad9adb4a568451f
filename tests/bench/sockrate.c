// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* sockrate: socket-call load for the process-sandbox benchmark
 * (scripts/bench-cgroup.sh), from whatever cgroup it is put in.
 *
 *   sockrate tcp  -d ADDR:PORT [-t SECONDS] [-j CGROUP] [-T]
 *       socket, connect, close in a loop (blocking; the server accepts
 *       and closes): connects per second.
 *   sockrate udp  -d ADDR:PORT [-t SECONDS] [-j CGROUP] [-T]
 *       sendto on one unconnected UDP socket in a loop: sends per second.
 *   sockrate sink -l ADDR:PORT
 *       reads UDP datagrams and drops them, until killed.
 *
 * -j CGROUP: moves itself into the cgroup directory first. -T: attaches
 * a trivial connect4 and sendmsg4 program (return 1) to that cgroup for
 * the run, the cost of having any program at all. Prints one line of
 * key=value pairs; tcp and udp also per second of the process's own CPU
 * time (user and system: the socket calls, the programs they run and
 * loopback delivery), which other load on the machine changes far less
 * than it changes the rate. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/bpf.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "benchlib.h"

static void die(const char *what, const char *detail)
{
	fprintf(stderr, "sockrate: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
	exit(1);
}

static void join(const char *cg)
{
	char path[4200];
	int fd;

	snprintf(path, sizeof(path), "%s/cgroup.procs", cg);
	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, "0", 1) != 1)
		die("can't join cgroup", cg);
	close(fd);
}

/* r0 = 1; exit: allow everything, the floor of any program's cost */
static int trivial(const char *cg, enum bpf_attach_type type)
{
	struct bpf_insn insns[] = {
		{.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 1},
		{.code = BPF_JMP | BPF_EXIT},
	};
	union bpf_attr a;
	int prog, cgfd;

	memset(&a, 0, sizeof(a));
	a.prog_type = BPF_PROG_TYPE_CGROUP_SOCK_ADDR;
	a.expected_attach_type = type;
	a.insns = (uintptr_t)insns;
	a.insn_cnt = 2;
	a.license = (uintptr_t) "GPL";
	prog = (int)syscall(SYS_bpf, BPF_PROG_LOAD, &a, sizeof(a));
	if (prog < 0)
		die("can't load the trivial program", strerror(errno));
	cgfd = open(cg, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (cgfd < 0)
		die("can't open cgroup", cg);
	memset(&a, 0, sizeof(a));
	a.target_fd = (__u32)cgfd;
	a.attach_bpf_fd = (__u32)prog;
	a.attach_type = type;
	a.attach_flags = BPF_F_ALLOW_MULTI;
	if (syscall(SYS_bpf, BPF_PROG_ATTACH, &a, sizeof(a)))
		die("can't attach the trivial program", strerror(errno));
	/* detached when the cgroup goes, or by the script */
	close(cgfd);
	return prog;
}

/* this process's CPU time, user and system */
static uint64_t cpu_ns(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru))
		return 0;
	return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000ull +
	       (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000ull;
}

static double per_cpu_s(uint64_t n, uint64_t cpu0)
{
	uint64_t cpu = cpu_ns() - cpu0;

	return cpu ? (double)n * 1e9 / (double)cpu : 0;
}

static void tcp_loop(const struct sockaddr_in *d, double secs)
{
	uint64_t cpu0 = cpu_ns(), t0 = bench_now_ns(), end = t0 + (uint64_t)(secs * 1e9), n = 0,
		 err = 0, now;

	while ((now = bench_now_ns()) < end) {
		for (int i = 0; i < 64; i++) {
			int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
			struct linger l = {.l_onoff = 1, .l_linger = 0};

			if (fd < 0) {
				err++;
				continue;
			}
			/* RST at close: no TIME_WAIT pile-up over the run */
			setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
			if (connect(fd, (const struct sockaddr *)d, sizeof(*d)))
				err++;
			else
				n++;
			close(fd);
		}
	}
	printf("mode=tcp connects_per_s=%.0f connects_per_cpu_s=%.0f errors=%llu\n",
	       (double)n * 1e9 / (double)(now - t0), per_cpu_s(n, cpu0), (unsigned long long)err);
}

static void udp_loop(const struct sockaddr_in *d, double secs)
{
	uint64_t cpu0 = cpu_ns(), t0 = bench_now_ns(), end = t0 + (uint64_t)(secs * 1e9), n = 0,
		 err = 0, now;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	char buf[64] = "sockrate";

	if (fd < 0)
		die("socket", strerror(errno));
	while ((now = bench_now_ns()) < end) {
		for (int i = 0; i < 256; i++) {
			if (sendto(fd, buf, sizeof(buf), 0, (const struct sockaddr *)d,
				   sizeof(*d)) < 0)
				err++;
			else
				n++;
		}
	}
	printf("mode=udp sends_per_s=%.0f sends_per_cpu_s=%.0f errors=%llu\n",
	       (double)n * 1e9 / (double)(now - t0), per_cpu_s(n, cpu0), (unsigned long long)err);
}

static void sink(const struct sockaddr_in *l)
{
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), one = 1 << 22;
	char buf[2048];

	if (fd < 0 || bind(fd, (const struct sockaddr *)l, sizeof(*l)))
		die("can't bind the sink", strerror(errno));
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &one, sizeof(one));
	for (;;)
		if (recv(fd, buf, sizeof(buf), 0) < 0 && errno != EINTR)
			die("recv", strerror(errno));
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "", *dst = NULL, *cg = NULL;
	struct sockaddr_in sa;
	double secs = 3;
	bool triv = false;
	int opt;

	if (argc < 2)
		die("usage: sockrate tcp|udp|sink -d|-l ADDR:PORT [-t S] [-j CG] [-T]", NULL);
	optind = 2;
	while ((opt = getopt(argc, argv, "d:l:t:j:T")) != -1) {
		switch (opt) {
		case 'd':
		case 'l':
			dst = optarg;
			break;
		case 't':
			secs = atof(optarg);
			break;
		case 'j':
			cg = optarg;
			break;
		case 'T':
			triv = true;
			break;
		default:
			die("unknown option", NULL);
		}
	}
	if (!dst || !bench_parse_hostport(dst, &sa))
		die("-d or -l ADDR:PORT needed", dst);
	if (triv && !cg)
		die("-T needs -j CGROUP", NULL);
	if (triv) {
		trivial(cg, BPF_CGROUP_INET4_CONNECT);
		trivial(cg, BPF_CGROUP_UDP4_SENDMSG);
	}
	if (cg)
		join(cg);
	if (strcmp(mode, "tcp") == 0)
		tcp_loop(&sa, secs);
	else if (strcmp(mode, "udp") == 0)
		udp_loop(&sa, secs);
	else if (strcmp(mode, "sink") == 0)
		sink(&sa);
	else
		die("unknown mode", mode);
	return 0;
}
