// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Layer-7 pinning's datapath API (datapath/l7.h) on maps of the kernel's
 * own, made here with the layouts the programs give them (no programs
 * loaded): fw_dp_l7_apply writes exactly the ports listed and the
 * settings bits, refuses bad input without changing anything,
 * fw_dp_l7_set_up flips the proxy's bit alone, fw_dp_config_set keeps
 * the bits these set, fw_dp_l7_gc deletes only what went idle (closed
 * entries sooner) and takes it off its subject's count, and
 * fw_dp_l7_reap empties a dead subject's entries and count.
 * Needs CAP_BPF (root); skipped without it. */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include <bpf/bpf.h>

#include "common/addr.h"
#include "datapath/l7.h"

static struct fw_dp dp;

static int map_new(enum bpf_map_type type, const char *name, __u32 key, __u32 value, __u32 max,
		   __u32 flags)
{
	LIBBPF_OPTS(bpf_map_create_opts, o, .map_flags = flags);

	return bpf_map_create(type, name, key, value, max, &o);
}

static void setup(void)
{
	struct fw_config c = {.flags = FW_CF_DNS_PROXY, .dns_port = 15353};
	__u32 zero = 0;
	__u64 epoch = 0;

	memset(&dp, 0, sizeof(dp));
	dp.config_fd = map_new(BPF_MAP_TYPE_ARRAY, "fwt_config", 4, sizeof(struct fw_config), 1, 0);
	if (dp.config_fd < 0)
		cr_skip_test("can't create BPF maps (needs root): %s", strerror(errno));
	dp.l7_ports_fd = map_new(BPF_MAP_TYPE_HASH, "fwt_l7_ports", sizeof(struct fw_port_key),
				 sizeof(struct fw_l7_port), FW_MAX_L7_PORTS, 0);
	dp.l7_nat_fd = map_new(BPF_MAP_TYPE_HASH, "fwt_l7_nat", sizeof(struct fw_l7_nat_key),
			       sizeof(struct fw_l7_nat), 1024, BPF_F_NO_PREALLOC);
	dp.rules_epoch_fd = map_new(BPF_MAP_TYPE_ARRAY, "fwt_epoch", 4, 8, 1, 0);
	dp.l7_count_fd = map_new(BPF_MAP_TYPE_ARRAY, "fwt_l7_count", 4, sizeof(__u64),
				 FW_MAX_SUBJECTS, BPF_F_MMAPABLE);
	cr_assert(dp.l7_ports_fd >= 0 && dp.l7_nat_fd >= 0 && dp.rules_epoch_fd >= 0 &&
		  dp.l7_count_fd >= 0);
	cr_assert_eq(bpf_map_update_elem(dp.config_fd, &zero, &c, BPF_ANY), 0);
	cr_assert_eq(bpf_map_update_elem(dp.rules_epoch_fd, &zero, &epoch, BPF_ANY), 0);
}

static void teardown(void)
{
	int fds[] = {dp.config_fd, dp.l7_ports_fd, dp.l7_nat_fd, dp.rules_epoch_fd, dp.l7_count_fd};

	if (dp.l7_count)
		munmap(dp.l7_count, FW_MAX_SUBJECTS * sizeof(__u64));

	for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		if (fds[i] > 0)
			close(fds[i]);
}

static __u32 cfg_flags(void)
{
	struct fw_config c;
	__u32 zero = 0;

	cr_assert_eq(bpf_map_lookup_elem(dp.config_fd, &zero, &c), 0);
	return c.flags;
}

/* The pinned port's entry: 0, or -ENOENT. */
static int port_get(__u16 port, struct fw_l7_port *out)
{
	struct fw_port_key k = {.proto = IPPROTO_TCP, .port = htons(port)};

	return bpf_map_lookup_elem(dp.l7_ports_fd, &k, out) ? -errno : 0;
}

static size_t count(int fd, size_t key_size)
{
	char key[64], prev[64];
	size_t n = 0;

	while (bpf_map_get_next_key(fd, n ? prev : NULL, key) == 0) {
		memcpy(prev, key, key_size);
		n++;
	}
	return n;
}

static const struct fw_dp_l7 std = {
	.tls_ports = {443, 8443},
	.ntls = 2,
	.http_ports = {80},
	.nhttp = 1,
	.proxy_tls_port = 15443,
	.proxy_http_port = 15080,
};

TestSuite(l7_datapath, .init = setup, .fini = teardown);

Test(l7_datapath, apply_writes_the_ports_and_the_flag)
{
	struct fw_l7_port v;

	cr_assert_eq(fw_dp_l7_apply(&dp, &std), 0);
	cr_assert_eq(count(dp.l7_ports_fd, sizeof(struct fw_port_key)), 3);
	cr_assert_eq(port_get(443, &v), 0);
	cr_assert_eq(v.kind, FW_L7_TLS);
	cr_assert_eq(ntohs(v.proxy_port), 15443);
	cr_assert_eq(port_get(8443, &v), 0);
	cr_assert_eq(v.kind, FW_L7_TLS);
	cr_assert_eq(port_get(80, &v), 0);
	cr_assert_eq(v.kind, FW_L7_HTTP);
	cr_assert_eq(ntohs(v.proxy_port), 15080);
	/* on, QUIC denied, the proxy not yet up; the other settings kept */
	cr_assert_eq(cfg_flags(), FW_CF_DNS_PROXY | FW_CF_L7);
	cr_assert_eq(fw_dp_l7_flags(&dp), FW_CF_L7);
}

Test(l7_datapath, apply_removes_ports_no_longer_listed)
{
	struct fw_dp_l7 fewer = std;
	struct fw_l7_port v;

	cr_assert_eq(fw_dp_l7_apply(&dp, &std), 0);
	fewer.tls_ports[0] = 4443;
	fewer.ntls = 1;
	fewer.nhttp = 0;
	fewer.quic_allowed = true;
	cr_assert_eq(fw_dp_l7_apply(&dp, &fewer), 0);
	cr_assert_eq(count(dp.l7_ports_fd, sizeof(struct fw_port_key)), 1);
	cr_assert_eq(port_get(4443, &v), 0);
	cr_assert_eq(port_get(443, &v), -ENOENT);
	cr_assert_eq(port_get(80, &v), -ENOENT);
	cr_assert_eq(cfg_flags(), FW_CF_DNS_PROXY | FW_CF_L7 | FW_CF_L7_QUIC);
}

Test(l7_datapath, apply_null_or_no_ports_turns_pinning_off)
{
	struct fw_dp_l7 none = std;

	cr_assert_eq(fw_dp_l7_apply(&dp, &std), 0);
	cr_assert_eq(fw_dp_l7_set_up(&dp, true), 0);
	none.ntls = none.nhttp = 0;
	cr_assert_eq(fw_dp_l7_apply(&dp, &none), 0);
	cr_assert_eq(count(dp.l7_ports_fd, sizeof(struct fw_port_key)), 0);
	cr_assert_eq(cfg_flags(), FW_CF_DNS_PROXY);
	cr_assert_eq(fw_dp_l7_apply(&dp, &std), 0);
	cr_assert_eq(fw_dp_l7_apply(&dp, NULL), 0);
	cr_assert_eq(count(dp.l7_ports_fd, sizeof(struct fw_port_key)), 0);
	cr_assert_eq(cfg_flags(), FW_CF_DNS_PROXY);
	cr_assert_eq(fw_dp_l7_flags(&dp), 0);
}

Test(l7_datapath, bad_input_is_refused_and_changes_nothing)
{
	struct fw_dp_l7 bad[5];
	struct fw_l7_port v;

	cr_assert_eq(fw_dp_l7_apply(&dp, &std), 0);
	for (size_t i = 0; i < 5; i++)
		bad[i] = std;
	bad[0].tls_ports[1] = 0;	   /* port 0 */
	bad[1].http_ports[0] = 443;	   /* both kinds */
	bad[2].tls_ports[1] = 443;	   /* twice */
	bad[3].proxy_http_port = 0;	   /* a kind without its proxy port */
	bad[4].ntls = FW_MAX_L7_PORTS + 1; /* too many */
	for (size_t i = 0; i < 5; i++) {
		cr_assert_eq(fw_dp_l7_apply(&dp, &bad[i]), -EINVAL, "case %zu", i);
		cr_assert_eq(count(dp.l7_ports_fd, sizeof(struct fw_port_key)), 3, "case %zu", i);
		cr_assert_eq(port_get(80, &v), 0);
		cr_assert_eq(cfg_flags(), FW_CF_DNS_PROXY | FW_CF_L7, "case %zu", i);
	}
}

Test(l7_datapath, set_up_flips_its_bit_alone)
{
	cr_assert_eq(fw_dp_l7_apply(&dp, &std), 0);
	cr_assert_eq(fw_dp_l7_set_up(&dp, true), 0);
	cr_assert_eq(cfg_flags(), FW_CF_DNS_PROXY | FW_CF_L7 | FW_CF_L7_UP);
	/* a new port list keeps the proxy's state */
	cr_assert_eq(fw_dp_l7_apply(&dp, &std), 0);
	cr_assert_eq(cfg_flags(), FW_CF_DNS_PROXY | FW_CF_L7 | FW_CF_L7_UP);
	cr_assert_eq(fw_dp_l7_set_up(&dp, false), 0);
	cr_assert_eq(cfg_flags(), FW_CF_DNS_PROXY | FW_CF_L7);
}

Test(l7_datapath, config_set_keeps_the_l7_bits)
{
	struct fw_config c = {.flags = FW_CF_DOH_STRICT | FW_CF_L7_QUIC, .dns_port = 53};

	cr_assert_eq(fw_dp_l7_apply(&dp, &std), 0);
	cr_assert_eq(fw_dp_l7_set_up(&dp, true), 0);
	/* a writer of the other settings that knows nothing of layer 7 */
	cr_assert_eq(fw_dp_config_set(&dp, &c), 0);
	cr_assert_eq(cfg_flags(), FW_CF_DOH_STRICT | FW_CF_L7 | FW_CF_L7_UP);
	cr_assert_eq(fw_dp_l7_apply(&dp, NULL), 0);
	c.flags = FW_CF_L7 | FW_CF_L7_UP;
	cr_assert_eq(fw_dp_config_set(&dp, &c), 0);
	cr_assert_eq(cfg_flags(), 0);
}

static void nat_put_of(__u32 subject, __u16 cport, __u64 seen, __u8 closed)
{
	struct fw_l7_nat_key k = {.client_port = htons(cport), .proxy_port = htons(15443)};
	struct fw_l7_nat v = {.orig_port = htons(443),
			      .proxy_port = htons(15443),
			      .subject = subject,
			      .last_seen_ns = seen,
			      .kind = FW_L7_TLS,
			      .closed = closed};

	cr_assert_eq(fw_addr_parse("10.42.0.10", &k.client, NULL), 0);
	cr_assert_eq(fw_addr_parse("192.0.2.10", &v.orig_dst, NULL), 0);
	cr_assert_eq(bpf_map_update_elem(dp.l7_nat_fd, &k, &v, BPF_ANY), 0);
}

static void nat_put(__u16 cport, __u64 seen, __u8 closed)
{
	nat_put_of(0, cport, seen, closed);
}

static bool nat_has(__u16 cport)
{
	struct fw_l7_nat_key k = {.client_port = htons(cport), .proxy_port = htons(15443)};
	struct fw_l7_nat v;

	cr_assert_eq(fw_addr_parse("10.42.0.10", &k.client, NULL), 0);
	return bpf_map_lookup_elem(dp.l7_nat_fd, &k, &v) == 0;
}

Test(l7_datapath, gc_deletes_what_went_idle)
{
	const __u64 s = 1000000000ull, now = 1000 * s, idle = 60 * s;
	size_t deleted = 99;

	nat_put(1, now - 61 * s, 0); /* open, idle too long */
	nat_put(2, now - 61 * s, 1); /* closed, too long ago */
	nat_put(3, now - 59 * s, 0); /* open, recent */
	nat_put(4, now - 59 * s, 1); /* closed, recently */
	nat_put(5, now + 5 * s, 0);  /* seen after now (another clock): kept */
	nat_put(6, now - idle, 0);   /* exactly idle */
	cr_assert_eq(fw_dp_l7_gc(&dp, now, idle, idle, &deleted), 0);
	cr_assert_eq(deleted, 3);
	cr_assert(!nat_has(1) && !nat_has(2) && !nat_has(6));
	cr_assert(nat_has(3) && nat_has(4) && nat_has(5));
	/* nothing left to collect; NULL count is fine */
	cr_assert_eq(fw_dp_l7_gc(&dp, now, idle, idle, &deleted), 0);
	cr_assert_eq(deleted, 0);
	cr_assert_eq(fw_dp_l7_gc(&dp, now + 3600 * s, idle, idle, NULL), 0);
	cr_assert_eq(count(dp.l7_nat_fd, sizeof(struct fw_l7_nat_key)), 0);
}

Test(l7_datapath, gc_without_the_map_is_nothing_to_do)
{
	size_t deleted = 7;
	int fd = dp.l7_nat_fd;

	dp.l7_nat_fd = -1;
	cr_assert_eq(fw_dp_l7_gc(&dp, 1, 1, 1, &deleted), 0);
	cr_assert_eq(deleted, 0);
	dp.l7_nat_fd = fd;
}

Test(l7_datapath, gc_takes_what_it_deletes_off_the_subjects_count)
{
	const __u64 s = 1000000000ull, now = 1000 * s, idle = 60 * s, closed = 10 * s;
	__u64 *counts;
	size_t deleted = 0;

	counts = fw_dp_l7_counts(&dp);
	cr_assert_not_null(counts);
	nat_put_of(5, 1, now - 61 * s, 0); /* open, idle too long */
	nat_put_of(5, 2, now - 11 * s, 1); /* closed, past the closed bound */
	nat_put_of(5, 3, now - 11 * s, 0); /* open, within the idle timeout */
	nat_put_of(5, 4, now - 9 * s, 1);  /* closed, within the closed bound */
	nat_put_of(6, 5, now - 61 * s, 1); /* another subject's, idle */
	nat_put_of(7, 6, now - 61 * s, 0); /* a count already zeroed under it */
	nat_put_of(8, 7, now - 1 * s, 0);  /* a drifted count: 2 entries, counts 50 */
	nat_put_of(8, 8, now - 1 * s, 0);
	counts[5] = 4;
	counts[6] = 1;
	counts[8] = 50;
	cr_assert_eq(fw_dp_l7_gc(&dp, now, idle, closed, &deleted), 0);
	cr_assert_eq(deleted, 4);
	cr_assert(!nat_has(1) && !nat_has(2) && !nat_has(5) && !nat_has(6));
	cr_assert(nat_has(3) && nat_has(4) && nat_has(7) && nat_has(8));
	cr_assert_eq(counts[5], 2, "subject 5 holds 2 entries, counts %llu",
		     (unsigned long long)counts[5]);
	cr_assert_eq(counts[6], 0);
	cr_assert_eq(counts[7], 0, "a count at 0 wrapped to %llu", (unsigned long long)counts[7]);
	cr_assert_eq(counts[8], 2, "a drifted count stays %llu", (unsigned long long)counts[8]);
	/* a closed bound longer than the idle timeout: the idle timeout */
	cr_assert_eq(fw_dp_l7_gc(&dp, now + 50 * s, idle, 3600 * s, &deleted), 0);
	cr_assert_eq(deleted, 1);
	cr_assert(!nat_has(3) && nat_has(4));
	cr_assert_eq(counts[5], 1);
}

static struct fw_l7_nat_key nat_key(__u16 cport)
{
	struct fw_l7_nat_key k = {.client_port = htons(cport), .proxy_port = htons(15443)};

	cr_assert_eq(fw_addr_parse("10.42.0.10", &k.client, NULL), 0);
	return k;
}

Test(l7_datapath, a_reported_close_counts_off_once_and_the_release_deletes_it)
{
	const __u64 s = 1000000000ull, now = 1000 * s;
	struct fw_l7_nat_key k1 = nat_key(1), k2 = nat_key(2), k3 = nat_key(3);
	__u64 *counts = fw_dp_l7_counts(&dp);
	struct fw_l7_nat v;

	cr_assert_not_null(counts);
	nat_put_of(5, 1, now - s, 0);
	nat_put_of(5, 2, now - s, 0);
	nat_put_of(5, 3, now - s, 0);
	cr_assert_eq(bpf_map_lookup_elem(dp.l7_nat_fd, &k3, &v), 0);
	v.sock = 1; /* the sockops program's: it deletes its own */
	cr_assert_eq(bpf_map_update_elem(dp.l7_nat_fd, &k3, &v, BPF_EXIST), 0);
	counts[5] = 3;

	cr_assert_eq(fw_dp_l7_closed(&dp, &k1, 6), -ENOENT, "another subject's");
	cr_assert_eq(fw_dp_l7_closed(&dp, &k3, 5), -ENOENT, "the sockops program's");
	cr_assert_eq(counts[5], 3);
	cr_assert_eq(fw_dp_l7_closed(&dp, &k1, 5), 0);
	cr_assert_eq(counts[5], 2);
	cr_assert_eq(fw_dp_l7_closed(&dp, &k1, 5), -ENOENT, "marked already");
	cr_assert_eq(counts[5], 2);
	cr_assert(nat_has(1), "kept for its last segments");

	/* the collector neither counts it nor takes it off again */
	cr_assert_eq(fw_dp_l7_gc(&dp, now, 60 * s, 10 * s, NULL), 0);
	cr_assert_eq(counts[5], 2, "a reported entry counted by the scan: %llu",
		     (unsigned long long)counts[5]);
	cr_assert_eq(fw_dp_l7_gc(&dp, now + 11 * s, 60 * s, 10 * s, NULL), 0);
	cr_assert(!nat_has(1), "a reported entry goes at the closed bound");
	cr_assert_eq(counts[5], 2);

	cr_assert_eq(fw_dp_l7_release(&dp, &k2), -ENOENT, "not reported: kept");
	cr_assert(nat_has(2));
	cr_assert_eq(fw_dp_l7_closed(&dp, &k2, 5), 0);
	cr_assert_eq(fw_dp_l7_release(&dp, &k2), 0);
	cr_assert(!nat_has(2));
	cr_assert_eq(counts[5], 1);
	cr_assert_eq(fw_dp_l7_release(&dp, &k2), -ENOENT);
	cr_assert_eq(bpf_map_delete_elem(dp.l7_nat_fd, &k3), 0);
	counts[5] = 0;
}

Test(l7_datapath, reap_empties_a_dead_subjects_entries_and_count)
{
	static bool dead[FW_MAX_SUBJECTS];
	__u64 *counts = fw_dp_l7_counts(&dp);

	cr_assert_not_null(counts);
	nat_put_of(5, 1, 1, 0);
	nat_put_of(5, 2, 1, 1);
	nat_put_of(6, 3, 1, 0);
	counts[5] = 2;
	counts[6] = 1;
	dead[5] = true;
	cr_assert_eq(fw_dp_l7_reap(&dp, dead), 0);
	cr_assert(!nat_has(1) && !nat_has(2) && nat_has(3));
	cr_assert_eq(counts[5], 0);
	cr_assert_eq(counts[6], 1);
	dead[5] = false;
}
