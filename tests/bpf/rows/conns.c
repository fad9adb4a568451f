// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Connection records: TCP to a learned address outlives its lease,
 * and a subject's records stop at its quota. */
#include "verdicts.h"

int conn_of(const char *subject, const char *dst, __u16 sport, __u16 dport, struct fw_conn *c)
{
	struct fw_conn_key k = {
		.subject = id_of(subject),
		.sport = htons(sport),
		.dport = htons(dport),
		.dst = ip_of(dst),
	};

	return bpf_map_lookup_elem(t.dp->conns_fd, &k, c) ? -errno : 0;
}

/* TCP to a learned address leaves a connection record for the lease
 * refresh: open on the first packet, closed by FIN (sandbox) or RST (either
 * side), reopened by a new SYN on the same ports. */
void scenario_connections(void)
{
	const struct pkt_spec syn = TCP4(ALPHA4, LEARNED4, 41000, 443);
	const struct pkt_spec ack = TCP4(ALPHA4, LEARNED4, 41000, 443, .tcp_flags = TH_ACK);
	const struct pkt_spec fin =
		TCP4(ALPHA4, LEARNED4, 41000, 443, .tcp_flags = TH_FIN | TH_ACK);
	const struct pkt_spec syn2 = TCP4(ALPHA4, LEARNED4, 41001, 443);
	const struct pkt_spec rst_in = TCP4(LEARNED4, ALPHA4, 443, 41001, .tcp_flags = TH_RST);
	const struct pkt_spec cidr = TCP4(ALPHA4, OK4, 41002, 443);
	struct fw_conn c;
	int v;

	v = run_frame(prog_fd(FROM_SANDBOX), &syn);
	result(v == TC_ACT_OK && !conn_of("alpha", LEARNED4, 41000, 443, &c) && c.last_seen_ns &&
		       !c.closed_ns,
	       "conns: syn to a learned address opens a record", "verdict %d, closed_ns %llu", v,
	       (unsigned long long)c.closed_ns);
	run_frame(prog_fd(FROM_SANDBOX), &ack);
	result(!conn_of("alpha", LEARNED4, 41000, 443, &c) && !c.closed_ns,
	       "conns: data keeps it open", NULL);
	run_frame(prog_fd(FROM_SANDBOX), &fin);
	result(!conn_of("alpha", LEARNED4, 41000, 443, &c) && c.closed_ns,
	       "conns: the sandbox's fin closes it", NULL);
	run_frame(prog_fd(FROM_SANDBOX), &ack);
	result(!conn_of("alpha", LEARNED4, 41000, 443, &c) && c.closed_ns,
	       "conns: the last ack does not reopen it", NULL);
	c.renewed = 1;
	bpf_map_update_elem(t.dp->conns_fd,
			    &(struct fw_conn_key){.subject = id_of("alpha"),
						  .sport = htons(41000),
						  .dport = htons(443),
						  .dst = ip_of(LEARNED4)},
			    &c, BPF_EXIST);
	run_frame(prog_fd(FROM_SANDBOX), &syn);
	result(!conn_of("alpha", LEARNED4, 41000, 443, &c) && !c.closed_ns && !c.renewed,
	       "conns: a new syn on the same ports reopens it", NULL);
	run_frame(prog_fd(FROM_SANDBOX), &syn2);
	v = run_frame(prog_fd(TO_SANDBOX), &rst_in);
	result(v == TC_ACT_OK && !conn_of("alpha", LEARNED4, 41001, 443, &c) && c.closed_ns,
	       "conns: a rst from the destination closes it (egress)", "verdict %d", v);
	run_frame(prog_fd(FROM_SANDBOX), &cidr);
	result(conn_of("alpha", OK4, 41002, 443, &c) == -ENOENT,
	       "conns: tcp to an allow cidr keeps no record", NULL);
}

/* Records per subject in fastwall_conns (a scan, not the counter). */
size_t conns_held(__u32 id)
{
	return (size_t)subject_keys(t.dp->conns_fd, sizeof(struct fw_conn_key), id);
}

static const struct subject_def pi_def = {
	.name = "pi",
	.addrs = {"10.42.13.10"},
	.default_action = "deny",
};

/* One subject's SYN flood to its own learned address: records stop at its
 * quota (the packets still pass), a sibling's record to the same address
 * stays, and a packet of a connection not tracked makes none. 300,000
 * distinct connections: more than an LRU of FW_MAX_CONNS / 4 would hold. */
void scenario_conn_quota(void)
{
	const struct pkt_spec sib = TCP4("10.42.13.10", LEARNED4, 42000, 443);
	const struct pkt_spec sib2 = TCP4("10.42.13.10", LEARNED4, 42001, 443);
	const struct pkt_spec bare_ack =
		TCP4("10.42.13.10", LEARNED4, 42002, 443, .tcp_flags = TH_ACK);
	const struct pkt_spec bare_fin =
		TCP4("10.42.13.10", LEARNED4, 42003, 443, .tcp_flags = TH_FIN | TH_ACK);
	__u64 *counts = fw_dp_conn_counts(t.dp);
	struct fw_ip la = ip_of(LEARNED4);
	__u32 a = id_of("alpha"), x;
	size_t passed_all = 0, total = 300000, held;
	struct fw_learn_config lc;
	struct fw_learn *l = NULL;
	struct fw_conn c;
	int v;

	if (subject_put(&pi_def) || learn("pi", LEARNED4, 600) || !counts) {
		result(false, "conn quota: fixture", "can't put subject xi or map the counts");
		return;
	}
	x = id_of("pi");
	t.cfg.conn_quota = 8;
	if (fw_dp_config_set(t.dp, &t.cfg)) {
		result(false, "conn quota: config", "can't set the config");
		return;
	}
	v = run_frame(prog_fd(FROM_SANDBOX), &sib);
	result(v == TC_ACT_OK && !conn_of("pi", LEARNED4, 42000, 443, &c),
	       "conn quota: the sibling's connection has a record", "verdict %d", v);

	for (size_t i = 0; i < total; i++) {
		struct pkt_spec syn =
			TCP4(ALPHA4, LEARNED4, (__u16)(1024 + i % 60000), (__u16)(1 + i / 60000));

		passed_all += run_frame(prog_fd(FROM_SANDBOX), &syn) == TC_ACT_OK;
	}
	held = conns_held(a);
	result(passed_all == total, "conn quota: every syn of the flood passes (learned)",
	       "%zu of %zu passed", passed_all, total);
	result(held == 8 && counts[a] == 8,
	       "conn quota: the flooder holds its quota of 8 records, no more",
	       "%zu records, count %llu", held, (unsigned long long)counts[a]);
	result(!conn_of("pi", LEARNED4, 42000, 443, &c) && !c.closed_ns,
	       "conn quota: the sibling's record survived the flood", NULL);
	v = run_frame(prog_fd(FROM_SANDBOX), &sib2);
	result(v == TC_ACT_OK && !conn_of("pi", LEARNED4, 42001, 443, &c) && counts[x] == 2,
	       "conn quota: the sibling still opens records of its own", "verdict %d, count %llu",
	       v, (unsigned long long)counts[x]);
	v = run_frame(prog_fd(FROM_SANDBOX), &bare_ack);
	result(v == TC_ACT_OK && conn_of("pi", LEARNED4, 42002, 443, &c) == -ENOENT,
	       "conn quota: an ack of an untracked connection passes, makes no record",
	       "verdict %d", v);
	v = run_frame(prog_fd(FROM_SANDBOX), &bare_fin);
	result(v == TC_ACT_OK && conn_of("pi", LEARNED4, 42003, 443, &c) == -ENOENT,
	       "conn quota: a fin of an untracked connection passes, makes no record", "verdict %d",
	       v);

	/* the refresh round: records of addresses its table does not hold
	 * go (the flood's: alpha's lease was written behind its back), the
	 * count follows; a drifted count is rewritten to what it found */
	fw_learn_config_init(&lc);
	if (fw_learn_new(&lc, &t.reg, &l) || fw_learn_add(l, x, &la, "pi.example.com", 600)) {
		result(false, "conn quota: learn table", NULL);
		fw_learn_free(l);
		return;
	}
	__atomic_store_n(&counts[x], 100, __ATOMIC_RELAXED);
	fw_learn_tick(l);
	result(conns_held(a) == 0 && counts[a] == 0,
	       "conn quota: the refresh deletes the flood's records and takes them off the count",
	       "%zu records, count %llu", conns_held(a), (unsigned long long)counts[a]);
	result(conns_held(x) == 2 && counts[x] == 2,
	       "conn quota: a drifted count is rewritten to the records found",
	       "%zu records, count %llu", conns_held(x), (unsigned long long)counts[x]);
	fw_learn_free(l);
	t.cfg.conn_quota = 0;
	fw_dp_config_set(t.dp, &t.cfg);
}
