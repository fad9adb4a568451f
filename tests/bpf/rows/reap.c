// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Removal retires an id and the reaper empties it; a restart neither
 * brings a removed subject back nor loses a live one. */
#include "verdicts.h"

/* Removal retires an id; the reaper empties it. A restart must neither
 * reuse a retired id nor hand out one under which something was left (a
 * foreign write here), and adopts the learned addresses of the bound ids. */
static const struct subject_def xi_def = {
	.name = "xi",
	.addrs = {"10.42.0.61"},
	.default_action = "deny",
	.rules = {"allow *.example.com"},
};
static const struct subject_def omicron_def = {
	.name = "omicron",
	.addrs = {"10.42.0.62"},
	.default_action = "deny",
	.rules = {"allow *.example.com"},
};

void scenario_reap_restart(void)
{
	struct fw_learn_config lc;
	struct fw_learn *l = NULL;
	struct fw_subject_meta m;
	__u64 far = fw_now_ns() + 3600 * FW_NSEC_PER_SEC;
	__u32 xi, om, orphan = FW_MAX_SUBJECTS - 7, key;
	struct fw_entry *e;
	int err;

	fw_learn_config_init(&lc);
	if (subject_put(&xi_def) || subject_put(&omicron_def)) {
		result(false, "reap: setup", "subjects failed");
		return;
	}
	xi = id_of("xi");
	om = id_of("omicron");
	{
		struct fw_ip a = ip_of("192.0.2.91"), b = ip_of("192.0.2.92"),
			     c = ip_of("192.0.2.93");

		struct fw_conn_key ck = {.subject = xi, .sport = htons(40000), .dport = htons(443)};
		struct fw_conn cv = {.last_seen_ns = fw_now_ns()};
		struct fw_learned_key nk = {.subject = orphan, .addr = c};
		struct fw_lease_names nv = {.ids = {7}};
		__u16 p443 = 443;

		fw_dp_learned_put(t.dp, xi, &a, far);
		fw_dp_learned_put(t.dp, om, &b, far);
		fw_dp_learned_put(t.dp, orphan, &c, far); /* nobody holds that id */
		/* what else the reaper must clear: a connection record and its
		 * count, a drifted count, a port set, a names record */
		ck.dst = a;
		bpf_map_update_elem(t.dp->conns_fd, &ck, &cv, BPF_NOEXIST);
		if (fw_dp_conn_counts(t.dp)) {
			t.dp->conn_count[xi] = 1;
			t.dp->conn_count[orphan] = 5;
		}
		fw_dp_lports_put(t.dp, xi, 1, &p443, 1);
		bpf_map_update_elem(t.dp->learned_names_fd, &nk, &nv, BPF_ANY);
	}
	e = fw_reg_get(&t.reg, "xi", false);
	if (e) {
		fw_reg_unbind(&t.reg, e);
		fw_reg_put(&t.reg, e);
	}
	key = xi;
	result(bpf_map_lookup_elem(t.dp->meta_fd, &key, &m) == 0 && m.origin == FW_ORIGIN_RETIRED &&
		       kernel_expiry(xi, "192.0.2.91") != 0,
	       "reap: a removed subject's id is marked retired in the kernel, its lease not yet "
	       "reaped",
	       NULL);

	/* restart: the registry and the learner come up again from the pins */
	fw_reg_free(&t.reg);
	err = fw_reg_init(&t.reg, t.dp);
	if (!err)
		err = fw_learn_new(&lc, &t.reg, &l);
	if (err) {
		result(false, "reap: restart", "%s", strerror(-err));
		return;
	}
	result(fw_reg_id_state(&t.reg, xi, NULL) < 0 && fw_reg_id_state(&t.reg, orphan, NULL) < 0 &&
		       fw_reg_id_state(&t.reg, om, NULL) == 1,
	       "reap: after a restart the retired id and every unbound id wait for the reaper",
	       "xi %d, orphan %d, omicron %d", fw_reg_id_state(&t.reg, xi, NULL),
	       fw_reg_id_state(&t.reg, orphan, NULL), fw_reg_id_state(&t.reg, om, NULL));
	err = fw_learn_adopt(l, false);
	result(!err && fw_learn_count(l, om) == 1 && fw_learn_count(l, xi) == 0,
	       "reap: the learner adopts the bound subject's lease and nothing of the retired one",
	       "omicron %zu, xi %zu", fw_learn_count(l, om), fw_learn_count(l, xi));
	err = fw_reg_reap(&t.reg, 0);
	key = xi;
	result(err > 0 && kernel_expiry(xi, "192.0.2.91") == 0 &&
		       kernel_expiry(orphan, "192.0.2.93") == 0 &&
		       kernel_expiry(om, "192.0.2.92") != 0 &&
		       bpf_map_lookup_elem(t.dp->meta_fd, &key, &m) != 0 &&
		       fw_reg_id_state(&t.reg, xi, NULL) == 0 &&
		       fw_reg_id_state(&t.reg, orphan, NULL) == 0,
	       "reap: the reaper deletes the retired and the orphaned leases, keeps the bound one, "
	       "frees the ids",
	       "reaped %d", err);
	{
		struct fw_conn c;
		struct fw_learned_key nk = {.subject = orphan, .addr = ip_of("192.0.2.93")};
		struct fw_lease_names nv;

		result(conn_of("xi", "192.0.2.91", 40000, 443, &c) == -ENOENT &&
			       conns_held(xi) == 0 && t.dp->conn_count &&
			       t.dp->conn_count[xi] == 0 && t.dp->conn_count[orphan] == 0,
		       "reap: connection records go and the removed ids' counts are 0", NULL);
		result(lports_held(xi) == 0 &&
			       bpf_map_lookup_elem(t.dp->learned_names_fd, &nk, &nv) != 0,
		       "reap: learned port sets and names records of removed ids go", NULL);
	}
	fw_learn_free(l);
}
