// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The bandwidth programs' verdict table: every row is a frame leaving the
 * node's uplink from a subject whose limit state the row sets first (the
 * departure time or theoretical arrival time of its last packet, relative
 * to now), run through fw_bw_edt or fw_bw_police with
 * bpf_prog_test_run_opts: the verdict, the departure time written to
 * skb->tstamp (edt), the reason counter (exactly +1, or none) and the
 * state left behind. Limits are written through fw_dp_bandwidth_set, as
 * the registry does; the subjects' addresses through fw_dp_dispatch_put,
 * with FW_SF_BW for the limited one. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>
#include <linux/pkt_cls.h>

#include "bw_rows.h"
#include "common/addr.h"
#include "common/clock.h"
#include "datapath/bandwidth.h"
#include "datapath/dispatch.h"
#include "datapath/reasons.h"
#include "datapath/stats.h"
#include "pkt.h"

#define SRV4	"198.51.100.10"
#define LIM4	"10.42.40.10" /* limited */
#define LIM6	"fd00:42:40::10"
#define FREE4	"10.42.41.10" /* a subject without a limit */
#define NOONE4	"10.42.42.10" /* no subject */
#define LIM_ID	(FW_MAX_SUBJECTS - 3)
#define FREE_ID (FW_MAX_SUBJECTS - 2)
#define RATE	1000000ull /* bytes per second: a byte a microsecond */
#define BURST	65536ull   /* 65.536 ms at RATE */
#define HORIZON (2 * FW_NSEC_PER_SEC)
#define MS	((long long)FW_NSEC_PER_MSEC)

#define UNTOUCHED FW_REASON_MAX	 /* no reason counter moves */
#define NO_STATE  (-(1ll << 62)) /* the subject's state left alone (the last row's) */

enum brow_prog { EDT, POLICE };

struct brow {
	const char *desc;
	enum brow_prog prog;
	struct pkt_spec pkt;
	long long last; /* the state to set, ns relative to now; 0: nothing sent yet */
	bool drops;
	__u32 reason; /* UNTOUCHED, or the drop reason counted */
	/* edt: the departure time expected, ns relative to the state's
	 * last + the packet's time at RATE (paced), or none (0) */
	bool paced;
};

static const struct brow brows[] = {
	{"bw: no subject, untouched (edt)", EDT, .pkt = TCP4(NOONE4, SRV4, 40000, 443),
	 .last = NO_STATE, .reason = UNTOUCHED},
	{"bw: a subject without FW_SF_BW, untouched (police)", POLICE,
	 .pkt = TCP4(FREE4, SRV4, 40000, 443), .last = NO_STATE, .reason = UNTOUCHED},
	{"bw edt: first packet leaves now", EDT, .pkt = TCP4(LIM4, SRV4, 40000, 443), .last = 0,
	 .reason = UNTOUCHED},
	{"bw edt: behind a departure 50 ms ahead, paced after it", EDT,
	 .pkt = TCP4(LIM4, SRV4, 40000, 443), .last = 50 * MS, .reason = UNTOUCHED, .paced = true},
	{"bw edt: v6, behind a departure 1 s ahead, paced", EDT,
	 .pkt = UDP6(LIM6, "2001:db8::10", 40000, 53), .last = 1000 * MS, .reason = UNTOUCHED,
	 .paced = true},
	{"bw edt: a departure past the horizon drops", EDT, .pkt = TCP4(LIM4, SRV4, 40000, 443),
	 .last = HORIZON + MS, .drops = true, .reason = FW_DROP_BW_HORIZON},
	{"bw edt: a departure long past leaves now", EDT, .pkt = TCP4(LIM4, SRV4, 40000, 443),
	 .last = -500 * MS, .reason = UNTOUCHED},
	{"bw police: an empty bucket passes", POLICE, .pkt = TCP4(LIM4, SRV4, 40000, 443),
	 .last = 0, .reason = UNTOUCHED},
	{"bw police: within the burst passes", POLICE, .pkt = UDP4(LIM4, SRV4, 40000, 53),
	 .last = 30 * MS, .reason = UNTOUCHED},
	{"bw police: over the burst drops", POLICE, .pkt = UDP4(LIM4, SRV4, 40000, 53),
	 .last = 70 * MS, .drops = true, .reason = FW_DROP_BW_POLICE},
	{"bw police: v6 over the burst drops", POLICE,
	 .pkt = TCP6(LIM6, "2001:db8::10", 40000, 443), .last = 500 * MS, .drops = true,
	 .reason = FW_DROP_BW_POLICE},
};

#define NBROWS (sizeof(brows) / sizeof(brows[0]))

static int state_set(struct fw_dp *dp, long long last_rel, __u64 now)
{
	struct fw_bandwidth v = {.rate = RATE, .burst = BURST};
	__u32 id = LIM_ID;

	v.t_last = last_rel ? now + last_rel : 0;
	return bpf_map_update_elem(dp->bandwidth_fd, &id, &v, BPF_EXIST) ? -errno : 0;
}

static __u64 state_get(struct fw_dp *dp)
{
	struct fw_bandwidth v = {};
	__u32 id = LIM_ID;

	bpf_map_lookup_elem(dp->bandwidth_fd, &id, &v);
	return v.t_last;
}

static bool run_brow(struct fw_dp *dp, const struct fw_bw *bw, const struct brow *r)
{
	struct fw_counter before[FW_REASON_MAX], after[FW_REASON_MAX];
	struct __sk_buff ctx = {}, ctx_out = {};
	__u8 in[PKT_MAX], out[PKT_MAX + 64];
	const char *prog = r->prog == EDT ? "edt" : "police";
	LIBBPF_OPTS(bpf_test_run_opts, opts);
	size_t len = pkt_build(&r->pkt, in);
	__u64 now = fw_now_ns(), last = 0, delay = 0, t_after;
	__u32 moved = UNTOUCHED;
	int nmoved = 0, err;
	bool ok = true;

	if (!len) {
		printf("FAIL %s [%s]\n  test bug: packet does not build\n", r->desc, prog);
		return false;
	}
	if (r->last != NO_STATE) {
		err = state_set(dp, r->last, now);
		if (err) {
			printf("FAIL %s [%s]\n  can't set the state: %s\n", r->desc, prog,
			       strerror(-err));
			return false;
		}
		last = r->last ? now + r->last : 0;
		delay = len * FW_NSEC_PER_SEC / RATE;
	}
	if (fw_dp_stats_read(dp, before))
		return false;
	opts.data_in = in;
	opts.data_size_in = len;
	opts.data_out = out;
	opts.data_size_out = sizeof(out);
	opts.ctx_in = &ctx;
	opts.ctx_size_in = sizeof(ctx);
	opts.ctx_out = &ctx_out;
	opts.ctx_size_out = sizeof(ctx_out);
	opts.repeat = 1;
	err = bpf_prog_test_run_opts(r->prog == EDT ? bw->edt_fd : bw->police_fd, &opts);
	if (err) {
		printf("FAIL %s [%s]\n  bpf_prog_test_run_opts: %s\n", r->desc, prog,
		       strerror(-err));
		pkt_hex("  in  ", in, len);
		return false;
	}
	fw_dp_stats_read(dp, after);
	t_after = r->last != NO_STATE ? state_get(dp) : 0;
	for (__u32 i = 0; i < FW_REASON_MAX; i++) {
		if (after[i].packets == before[i].packets)
			continue;
		nmoved++;
		moved = i;
	}
	if (r->drops ? opts.retval != TC_ACT_SHOT : opts.retval != TC_ACT_OK) {
		printf("FAIL %s [%s]\n  verdict: expected %s, got %u\n", r->desc, prog,
		       r->drops ? "drop" : "pass", opts.retval);
		ok = false;
	} else if (r->reason == UNTOUCHED
			   ? nmoved != 0
			   : nmoved != 1 || moved != r->reason ||
				     after[moved].packets - before[moved].packets != 1 ||
				     after[moved].bytes - before[moved].bytes != len) {
		printf("FAIL %s [%s]\n  reason: expected %s, got %s (%d counters moved)\n", r->desc,
		       prog, r->reason == UNTOUCHED ? "none" : fw_reason_name(r->reason),
		       nmoved ? fw_reason_name(moved) : "none", nmoved);
		ok = false;
	} else if (r->paced ? ctx_out.tstamp != last + delay : ctx_out.tstamp != 0) {
		printf("FAIL %s [%s]\n  departure time: expected %s%llu ns, got %llu ns\n", r->desc,
		       prog, r->paced ? "now + " : "", r->paced ? last + delay - now : 0ull,
		       ctx_out.tstamp ? (unsigned long long)(ctx_out.tstamp - now) : 0ull);
		ok = false;
	} else if (r->last != NO_STATE && r->drops && t_after != last) {
		printf("FAIL %s [%s]\n  a dropped packet moved the state\n", r->desc, prog);
		ok = false;
	} else if (r->last != NO_STATE && !r->drops &&
		   (t_after < now || (r->paced && t_after != last + delay) ||
		    (r->prog == POLICE && t_after < (last > now ? last : now) + delay))) {
		printf("FAIL %s [%s]\n  state after: %lld ns from now\n", r->desc, prog,
		       (long long)(t_after - now));
		ok = false;
	} else if (opts.data_size_out != len || memcmp(in, out, len)) {
		printf("FAIL %s [%s]\n  the frame came out changed\n", r->desc, prog);
		ok = false;
	}
	if (ok) {
		printf("ok   %s [%s]\n", r->desc, prog);
		return true;
	}
	pkt_hex("  in  ", in, len);
	return false;
}

static int subject_put(struct fw_dp *dp, const char *addr, __u32 id, __u8 flags)
{
	struct fw_subject ks = {
		.id = id, .state = FW_STATE_ACTIVE, .flags = flags, .ifindex = FW_IFINDEX_ANY};
	struct fw_ip a;

	if (fw_addr_parse(addr, &a, NULL))
		return -EINVAL;
	return fw_dp_dispatch_put(dp, &a, &ks);
}

static int subject_del(struct fw_dp *dp, const char *addr)
{
	struct fw_ip a;

	if (fw_addr_parse(addr, &a, NULL))
		return -EINVAL;
	return fw_dp_dispatch_drop(dp, &a);
}

void bw_rows_run(struct fw_dp *dp, int *passed, int *failed)
{
	struct fw_bw *bw = NULL;

	/* FREE has an entry in fastwall_bandwidth but not the flag: the
	 * flag alone decides whether the program looks */
	if (fw_bw_open(dp->pin_root, HORIZON, false, &bw) ||
	    subject_put(dp, LIM4, LIM_ID, FW_SF_BW) || subject_put(dp, LIM6, LIM_ID, FW_SF_BW) ||
	    subject_put(dp, FREE4, FREE_ID, 0) || fw_dp_bandwidth_set(dp, LIM_ID, RATE, BURST) ||
	    fw_dp_bandwidth_set(dp, FREE_ID, RATE, BURST)) {
		printf("FAIL bw: can't load the bandwidth programs and set the limits\n");
		(*failed)++;
		goto out;
	}
	/* out of range: refused, the limit unchanged */
	if (fw_dp_bandwidth_set(dp, LIM_ID, 0 + FW_BW_RATE_MAX + 1, BURST) == -EINVAL &&
	    fw_dp_bandwidth_set(dp, LIM_ID, RATE, FW_BW_BURST_MIN - 1) == -EINVAL) {
		printf("ok   bw: limits out of range refused\n");
		(*passed)++;
	} else {
		printf("FAIL bw: limits out of range refused\n");
		(*failed)++;
	}
	for (size_t i = 0; i < NBROWS; i++) {
		if (run_brow(dp, bw, &brows[i]))
			(*passed)++;
		else
			(*failed)++;
	}
	/* a limit removed: the subject's packets are untouched again */
	if (fw_dp_bandwidth_set(dp, LIM_ID, 0, 0) == 0) {
		const struct brow gone = {"bw: a removed limit no longer drops", POLICE,
					  .pkt = TCP4(LIM4, SRV4, 40000, 443), .last = NO_STATE,
					  .reason = UNTOUCHED};

		if (run_brow(dp, bw, &gone))
			(*passed)++;
		else
			(*failed)++;
	}
out:
	subject_del(dp, LIM4);
	subject_del(dp, LIM6);
	subject_del(dp, FREE4);
	fw_dp_bandwidth_set(dp, FREE_ID, 0, 0);
	fw_bw_close(bw);
}
