// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Counters and deny events: the per-subject event budget, allow
 * samples, the per-CPU subject rows, and a ring nobody reads. */
#include <unistd.h>

#include "verdicts.h"

/* Burst 5, one event a second after it: a flooding subject gets 5 events
 * out of 20 drops, another subject keeps its own budget, and the next
 * event after an interval says how many were suppressed. */
void scenario_event_rate_limit(void)
{
	const struct row flood = {"flood-a: default deny",
				  .pkt = TCP4(FLOOD_A4, NOWHERE4, 40000, 80),
				  DROP(FW_DROP_DEFAULT_DENY), .subject = "flood-a"};
	const struct row other = {"flood-b: default deny",
				  .pkt = TCP4(FLOOD_B4, NOWHERE4, 40000, 80),
				  DROP(FW_DROP_DEFAULT_DENY), .subject = "flood-b"};
	__u32 a = id_of("flood-a"), b = id_of("flood-b");
	struct fw_event got[MAX_EVENTS];
	size_t ngot = 0, n;
	__u64 suppressed = ~0ull;
	bool all = true;

	t.cfg.event_burst = 5;
	t.cfg.event_interval_ns = FW_NSEC_PER_SEC;
	if (fw_dp_config_set(t.dp, &t.cfg)) {
		result(false, "rate limit: config", "can't set the config");
		return;
	}
	events_drain();
	/* run_row drains before each packet: keep what each run produced */
	for (int i = 0; i < 20; i++) {
		all &= run_row(&flood, RUN_QUIET);
		for (size_t j = 0; j < t.nev && ngot < MAX_EVENTS; j++)
			got[ngot++] = t.ev[j];
	}
	result(all, "rate limit: 20 drops of flood-a, all dropped and counted", NULL);
	memcpy(t.ev, got, ngot * sizeof(got[0]));
	t.nev = ngot;
	n = events_of(a, NULL);
	result(n == 5 && ngot == 5, "rate limit: burst 5 -> 5 events out of 20 drops",
	       "flood-a: %zu events (%zu in all), expected 5", n, ngot);

	ngot = 0;
	for (int i = 0; i < 3; i++) {
		all &= run_row(&other, RUN_QUIET);
		for (size_t j = 0; j < t.nev && ngot < MAX_EVENTS; j++)
			got[ngot++] = t.ev[j];
	}
	memcpy(t.ev, got, ngot * sizeof(got[0]));
	t.nev = ngot;
	n = events_of(b, NULL);
	result(n == 3 && ngot == 3, "rate limit: flood-b keeps its own budget (3 of 3)",
	       "flood-b: %zu events (%zu in all), expected 3", n, ngot);

	/* one interval later there is room for one more, carrying the count */
	usleep(1100 * 1000);
	run_row(&flood, RUN_QUIET);
	n = events_of(a, &suppressed);
	result(n == 1 && suppressed == 15,
	       "rate limit: next event after an interval reports 15 suppressed",
	       "%zu events, suppressed %llu, expected 1 event with 15", n,
	       (unsigned long long)suppressed);
}

/* monitor.allow_sample: with the flag a passed packet is an allow event
 * (here one in one), carrying its pass reason; without it none. */
void scenario_allow_sample(void)
{
	const struct row pass = {"alpha: udp to allow cidr", .pkt = UDP4(ALPHA4, OK4, 40000, 5000),
				 PASS(FW_PASS_ALLOW_CIDR), .subject = "alpha"};
	struct fw_config saved = t.cfg;
	__u32 id = id_of("alpha");
	const struct fw_event *ev = &t.ev[0];
	bool ok;

	t.cfg.flags |= FW_CF_ALLOW_SAMPLE;
	t.cfg.allow_sample = 1;
	t.cfg.event_burst = 1000;
	t.cfg.event_interval_ns = 1000;
	if (fw_dp_config_set(t.dp, &t.cfg)) {
		result(false, "allow sample: config", "can't set the config");
		return;
	}
	ok = run_row(&pass, RUN_QUIET);
	result(ok && t.nev == 1 && ev->type == FW_EVENT_ALLOW && ev->subject == id &&
		       ev->reason == FW_PASS_ALLOW_CIDR && ev->dport == htons(5000) &&
		       ev->proto == IPPROTO_UDP,
	       "allow sample 1 in 1: a passed packet is one allow event with its reason",
	       "%zu events, type %u subject %u reason %s", t.nev, t.nev ? ev->type : 0,
	       t.nev ? ev->subject : 0, t.nev ? fw_reason_name(ev->reason) : "-");
	t.cfg = saved;
	fw_dp_config_set(t.dp, &t.cfg);
	ok = run_row(&pass, RUN_QUIET);
	result(ok && t.nev == 0, "allow sample off: a passed packet emits nothing", "%zu events",
	       t.nev);
}

/* What a passed packet of a subject touches besides its dispatch value is
 * one line of this CPU: its row holds the trie answer and counts the
 * pass; a drop counts in the stats row. The reader adds both. */
void scenario_subject_rows(void)
{
	const struct pkt_spec pass = UDP4(ALPHA4, OK4, 40000, 5000);
	const struct pkt_spec drop = UDP4(ALPHA4, BAD4, 40000, 5000);
	__u32 id = id_of("alpha");
	struct fw_subject_row r0, r1;
	__u64 before[FW_REASON_MAX], after[FW_REASON_MAX];
	struct fw_subject s;
	struct fw_ip ok, dispatch_key;
	__u64 st0 = stats_row_slot(id, FW_PASS_ALLOW_CIDR);
	int v;

	fw_addr_parse(OK4, &ok, NULL);
	fw_addr_parse(ALPHA4, &dispatch_key, NULL);
	fw_dp_subject_stats_read(t.dp, id, before);
	if (!row_of(id, &r0) || bpf_map_lookup_elem(t.dp->dispatch_fd, &dispatch_key, &s)) {
		result(false, "subject rows: read", "can't read alpha's row or dispatch value");
		return;
	}
	v = run_frame(prog_fd(FROM_SANDBOX), &pass);
	fw_dp_subject_stats_read(t.dp, id, after);
	result(v == TC_ACT_OK && row_of(id, &r1) &&
		       r1.packets[FW_PASS_ALLOW_CIDR] == r0.packets[FW_PASS_ALLOW_CIDR] + 1 &&
		       stats_row_slot(id, FW_PASS_ALLOW_CIDR) == st0 &&
		       after[FW_PASS_ALLOW_CIDR] == before[FW_PASS_ALLOW_CIDR] + 1,
	       "subject rows: a pass counts in this CPU's row, not the stats row, and is read",
	       "verdict %d, row %llu -> %llu, read %llu -> %llu", v,
	       (unsigned long long)r0.packets[FW_PASS_ALLOW_CIDR],
	       (unsigned long long)r1.packets[FW_PASS_ALLOW_CIDR],
	       (unsigned long long)before[FW_PASS_ALLOW_CIDR],
	       (unsigned long long)after[FW_PASS_ALLOW_CIDR]);
	result(!(r1.seq & 1) && r1.gen == s.rules_gen && memcmp(&r1.dst, &ok, sizeof(ok)) == 0 &&
		       r1.rule.action == FW_ACTION_ALLOW,
	       "subject rows: the row caches the answer for the destination",
	       "seq %u gen %u (dispatch %u) action %u", r1.seq, r1.gen, s.rules_gen,
	       r1.rule.action);
	fw_dp_subject_stats_read(t.dp, id, before);
	v = run_frame(prog_fd(FROM_SANDBOX), &drop);
	fw_dp_subject_stats_read(t.dp, id, after);
	result(v == TC_ACT_SHOT && row_of(id, &r0) &&
		       r0.packets[FW_PASS_ALLOW_CIDR] == r1.packets[FW_PASS_ALLOW_CIDR] &&
		       stats_row_slot(id, FW_DROP_DENY_CIDR) == after[FW_DROP_DENY_CIDR] &&
		       after[FW_DROP_DENY_CIDR] == before[FW_DROP_DENY_CIDR] + 1,
	       "subject rows: a drop counts in the stats row", "verdict %d, deny-cidr %llu -> %llu",
	       v, (unsigned long long)before[FW_DROP_DENY_CIDR],
	       (unsigned long long)after[FW_DROP_DENY_CIDR]);
}

/* Nobody reads the ring while 20000 denies go in (the rate limit wide
 * open): every event that did not fit is in fastwall_events_lost. */
void scenario_events_lost(void)
{
	const struct pkt_spec deny = TCP4(FLOOD_B4, NOWHERE4, 40000, 80);
	const __u32 flood = 20000;
	struct fw_config saved = t.cfg;
	__u8 in[PKT_MAX], out[PKT_MAX + 64];
	LIBBPF_OPTS(bpf_test_run_opts, opts);
	__u64 before[FW_EVENT_LOST_SLOTS], after[FW_EVENT_LOST_SLOTS];
	size_t got;
	int err;

	t.cfg.event_burst = 1 << 24;
	t.cfg.event_interval_ns = 1000;
	if (fw_dp_config_set(t.dp, &t.cfg) || fw_dp_events_lost_read(t.dp, before)) {
		result(false, "events lost: setup", "can't set the config or read the counter");
		return;
	}
	events_drain();
	opts.data_in = in;
	opts.data_size_in = pkt_build(&deny, in);
	opts.data_out = out;
	opts.data_size_out = sizeof(out);
	opts.repeat = flood;
	err = bpf_prog_test_run_opts(prog_fd(FROM_SANDBOX), &opts);
	ring_buffer__consume(t.rb);
	got = t.nev + t.ev_lost;
	events_drain();
	if (err || fw_dp_events_lost_read(t.dp, after)) {
		result(false, "events lost: run", "test run or counter read failed");
	} else {
		__u64 lost = after[FW_EVENT_DROP] - before[FW_EVENT_DROP];

		result(opts.retval == TC_ACT_SHOT && got < flood && lost == flood - got,
		       "events lost: a full ring counts every deny event it could not take",
		       "%u denies, %zu events read, %llu counted lost, expected %llu", flood, got,
		       (unsigned long long)lost, (unsigned long long)(flood - got));
	}
	t.cfg = saved;
	fw_dp_config_set(t.dp, &t.cfg);
}
