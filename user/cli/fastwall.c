// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fastwall: read-only view of the pinned data plane (status, subjects,
 * leases). It opens the pinned maps directly, so it works whether or not
 * fastwalld is running. And `fastwall run`, which starts a command in a
 * process sandbox of the running fastwalld. */
#include <dirent.h>
#include <errno.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <jansson.h>
#include <linux/capability.h>

#include "common/addr.h"
#include "common/cmd.h"
#include "common/exitcodes.h"
#include "config/config.h"
#include "datapath/bandwidth.h"
#include "datapath/cgroup.h"
#include "datapath/datapath.h"
#include "datapath/guard.h"
#include "datapath/attach.h"
#include "datapath/reasons.h"
#include "datapath/stats.h"
#include "common/log.h"
#include "fastwall/version.h"
#include "subjects/run.h"
#include "explain.h"
#include "hostname.h"
#include "monitor.h"
#include "scope.h"

/* fastwalld's default configuration (fastwalld.8), where explain finds
 * the text of static subjects' rules */
#define FW_CLI_DEFAULT_CONFIG "/etc/fastwall/fastwalld.yaml"

struct cli {
	const char *bpffs;
	struct fw_dp *dp;
	bool all;      /* also zero counters */
	bool markdown; /* reasons: the docs table */
	bool json;     /* -o json: one JSON document on stdout */
	struct fw_explain_args explain;
};

/* Prints o as the command's JSON document and frees it. */
static int json_out(json_t *o)
{
	if (!o)
		return -ENOMEM;
	json_dumpf(o, stdout, JSON_INDENT(2));
	printf("\n");
	json_decref(o);
	return 0;
}

static json_t *counts_json(const __u64 *p, bool all)
{
	json_t *o = json_object();

	for (__u32 r = 0; r < FW_REASON_MAX; r++)
		if (p[r] || (all && fw_reason_meaning(r)))
			json_object_set_new(o, fw_reason_name(r), json_integer((json_int_t)p[r]));
	return o;
}

static const char *state_name(__u8 s)
{
	switch (s) {
	case FW_STATE_ACTIVE:
		return "active";
	case FW_STATE_DENYING:
		return "denying";
	}
	return "absent";
}

/* Why the guard runs on hook m of interface i, as fastwalld recorded it:
 * "auto, veth: native XDP copies each packet on this driver"; "" when it
 * recorded nothing (a fastwalld before the record). */
static void guard_why(struct cli *c, const struct if_nameindex *i, char *buf, size_t len,
		      struct fw_guard_hook *h, char *drv, size_t dlen)
{
	bool copies;

	buf[0] = 0;
	fw_guard_driver((int)i->if_index, drv, dlen);
	if (fw_guard_hook_read(c->bpffs, (int)i->if_index, h)) {
		h->why = FW_GUARD_WHY_MAX;
		return;
	}
	copies = h->hook == FW_GUARD_XDP && fw_guard_xdp_copies(drv);
	snprintf(buf, len, "%s%s%s%s%s", h->mode == FW_GUARD_AUTO ? "auto" : "configured",
		 *drv ? ", " : "", drv, h->why != FW_GUARD_WHY_CONFIGURED || copies ? ": " : "",
		 h->why != FW_GUARD_WHY_CONFIGURED ? fw_guard_why_text(h->why)
		 : copies			   ? fw_guard_why_text(FW_GUARD_WHY_COPIES)
						   : "");
}

/* {interface, mode (the hook), configured, driver, why} */
static json_t *guard_json(struct cli *c, const struct if_nameindex *i, enum fw_guard_mode m)
{
	struct fw_guard_hook h;
	char why[256], drv[64];
	json_t *o;

	guard_why(c, i, why, sizeof(why), &h, drv, sizeof(drv));
	o = json_pack("{s:s,s:s}", "interface", i->if_name, "mode", fw_guard_mode_name(m));
	if (*drv)
		json_object_set_new(o, "driver", json_string(drv));
	if (h.why < FW_GUARD_WHY_MAX) {
		json_object_set_new(o, "configured",
				    json_string(fw_guard_mode_name((enum fw_guard_mode)h.mode)));
		json_object_set_new(o, "why", json_string(fw_guard_why_text(h.why)));
	}
	return o;
}

/* whether process pid holds the map of id (a descriptor of it: fdinfo) */
static bool holds_map(const char *pid, __u32 id)
{
	char path[64], line[128], want[32];
	struct dirent *e;
	bool found = false;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%.16s/fdinfo", pid);
	snprintf(want, sizeof(want), "map_id:\t%u\n", id);
	dir = opendir(path);
	if (!dir)
		return false;
	while (!found && (e = readdir(dir))) {
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%.16s/fdinfo/%.16s", pid, e->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;
		while (!found && fgets(line, sizeof(line), f))
			found = !strcmp(line, want);
		fclose(f);
	}
	closedir(dir);
	return found;
}

/* The interfaces fastwalld attached to in its own network namespace when
 * that is not this one (fastwall run from a pod, a container or the host
 * while fastwalld runs elsewhere): the fastwalld holding these pins' maps
 * whose namespace differs, and a child that enters it and counts. -1 when
 * no such fastwalld is seen (another PID namespace) or it can't be
 * entered. */
static int attached_elsewhere(struct cli *c)
{
	struct bpf_map_info info = {};
	__u32 info_len = sizeof(info);
	struct stat self, ns;
	char path[64], comm[32];
	struct dirent *e;
	int count = -1;
	DIR *proc;

	if (stat("/proc/self/ns/net", &self) ||
	    bpf_obj_get_info_by_fd(c->dp->meta_fd, &info, &info_len))
		return -1;
	proc = opendir("/proc");
	if (!proc)
		return -1;
	while (count < 0 && (e = readdir(proc))) {
		int fd, pipefd[2], n = -1, status;
		ssize_t got;
		pid_t child;
		FILE *f;

		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%.16s/comm", e->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;
		got = fgets(comm, sizeof(comm), f) ? 1 : 0;
		fclose(f);
		if (!got || strcmp(comm, "fastwalld\n") != 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%.16s/ns/net", e->d_name);
		if (stat(path, &ns) || (ns.st_ino == self.st_ino && ns.st_dev == self.st_dev) ||
		    !holds_map(e->d_name, info.id))
			continue;
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		if (pipe2(pipefd, O_CLOEXEC)) {
			close(fd);
			continue;
		}
		child = fork();
		if (child == 0) {
			struct if_nameindex *ifs, *i;

			n = 0;
			if (setns(fd, CLONE_NEWNET))
				_exit(1);
			ifs = if_nameindex();
			for (i = ifs; i && i->if_index; i++)
				n += fw_dp_attached((int)i->if_index);
			if (write(pipefd[1], &n, sizeof(n)) != sizeof(n))
				_exit(1);
			_exit(0);
		}
		close(fd);
		close(pipefd[1]);
		if (child > 0) {
			if (read(pipefd[0], &n, sizeof(n)) == sizeof(n))
				count = n;
			waitpid(child, &status, 0);
		}
		close(pipefd[0]);
	}
	closedir(proc);
	return count;
}

/* status -o json: {pins, subjects, removed, attached[], guard[{interface,
 * mode, driver, configured, why}], verdicts[{reason, number, verdict,
 * packets, bytes}], passed, dropped} */
static int status_json(struct cli *c, struct if_nameindex *ifs, int nsubj, int nretired)
{
	struct fw_counter ctr[FW_REASON_MAX];
	json_t *o, *att = json_array(), *guard = json_array(), *v = json_array();
	__u64 pass = 0, drop = 0;
	int err;

	for (struct if_nameindex *i = ifs; i && i->if_index; i++) {
		enum fw_guard_mode m = fw_guard_attached(i->if_index);

		if (fw_dp_attached(i->if_index))
			json_array_append_new(att, json_string(i->if_name));
		if (m != FW_GUARD_NONE)
			json_array_append_new(guard, guard_json(c, i, m));
	}
	if_freenameindex(ifs);
	err = fw_dp_stats_read(c->dp, ctr);
	if (err) {
		json_decref(att);
		json_decref(guard);
		json_decref(v);
		return err;
	}
	for (__u32 r = 0; r < FW_REASON_MAX; r++) {
		if (!fw_reason_drops(r))
			pass += ctr[r].packets;
		else
			drop += ctr[r].packets;
		if (!ctr[r].packets && (!c->all || !fw_reason_meaning(r)))
			continue;
		json_array_append_new(v, json_pack("{s:s,s:i,s:s,s:I,s:I}", "reason",
						   fw_reason_name(r), "number", r, "verdict",
						   fw_reason_drops(r) ? "drop" : "pass", "packets",
						   (json_int_t)ctr[r].packets, "bytes",
						   (json_int_t)ctr[r].bytes));
	}
	o = json_pack("{s:s,s:i,s:i,s:o,s:o,s:o,s:I,s:I}", "pins", c->bpffs, "subjects", nsubj,
		      "removed", nretired, "attached", att, "guard", guard, "verdicts", v, "passed",
		      (json_int_t)pass, "dropped", (json_int_t)drop);
	/* none here: how many fastwalld attached in its own namespace */
	if (o && !json_array_size(att)) {
		int n = attached_elsewhere(c);

		if (n >= 0)
			json_object_set_new(o, "attached_elsewhere", json_integer(n));
	}
	return json_out(o);
}

static int show_status(struct cli *c)
{
	struct fw_counter ctr[FW_REASON_MAX];
	struct if_nameindex *ifs = if_nameindex(), *i;
	__u64 pass = 0, drop = 0;
	__u32 key, *prev = NULL;
	int nsubj = 0, nretired = 0, nif = 0;
	int err;

	while (bpf_map_get_next_key(c->dp->meta_fd, prev, &key) == 0) {
		struct fw_subject_meta meta;

		prev = &key;
		if (bpf_map_lookup_elem(c->dp->meta_fd, &key, &meta) == 0 &&
		    meta.origin == FW_ORIGIN_RETIRED)
			nretired++;
		else
			nsubj++;
	}
	if (c->json)
		return status_json(c, ifs, nsubj, nretired);
	printf("pins:        %s\n", c->bpffs);
	printf("subjects:    %d\n", nsubj);
	if (nretired)
		printf("removed:     %d (their learned addresses not reaped yet)\n", nretired);
	printf("attached:   ");
	for (i = ifs; i && i->if_index; i++) {
		if (fw_dp_attached(i->if_index)) {
			printf(" %s", i->if_name);
			nif++;
		}
	}
	if (nif) {
		printf("\n");
	} else {
		int n = attached_elsewhere(c);

		if (n >= 0)
			printf(" none in this network namespace; fastwalld attached %d\n", n);
		else
			printf(" (none)\n");
	}
	/* the port guard, only where it runs: a node without one sees no line;
	 * an interface a line: its hook and why */
	nif = 0;
	for (i = ifs; i && i->if_index; i++) {
		enum fw_guard_mode m = fw_guard_attached(i->if_index);
		struct fw_guard_hook h;
		char why[256], drv[64];

		if (m == FW_GUARD_NONE)
			continue;
		guard_why(c, i, why, sizeof(why), &h, drv, sizeof(drv));
		printf("%s %s (%s%s%s)\n", nif++ ? "            " : "guard:      ", i->if_name,
		       fw_guard_mode_name(m), *why ? ": " : "", why);
	}
	if_freenameindex(ifs);

	err = fw_dp_stats_read(c->dp, ctr);
	if (err)
		return err;
	printf("\n%-20s %12s %14s\n", "verdict", "packets", "bytes");
	for (__u32 r = 0; r < FW_REASON_MAX; r++) {
		if (!fw_reason_drops(r))
			pass += ctr[r].packets;
		else
			drop += ctr[r].packets;
		if (!ctr[r].packets && (!c->all || !fw_reason_meaning(r)))
			continue;
		printf("%-5s %-14s %12llu %14llu\n", fw_reason_drops(r) ? "drop" : "pass",
		       fw_reason_name(r), (unsigned long long)ctr[r].packets,
		       (unsigned long long)ctr[r].bytes);
	}
	printf("%-20s %12llu\n%-20s %12llu\n", "total passed", (unsigned long long)pass,
	       "total dropped", (unsigned long long)drop);
	return 0;
}

static void print_counts(const __u64 *p, bool all)
{
	bool any = false;

	for (__u32 r = 0; r < FW_REASON_MAX; r++) {
		if (!p[r] && (!all || !fw_reason_meaning(r)))
			continue;
		printf("%s%s %s=%llu", any ? "," : "      ", fw_reason_drops(r) ? "drop" : "pass",
		       fw_reason_name(r), (unsigned long long)p[r]);
		any = true;
	}
	if (any)
		printf("\n");
}

/* A map of subject entries (the dispatch map: address to subject; the
 * cgroups map: cgroup id to subject), read once into memory. */
struct subject_keys {
	size_t key_size;
	size_t n;
	unsigned char *keys; /* n keys of key_size bytes */
	struct fw_subject *subjects;
};

static void subject_keys_free(struct subject_keys *t)
{
	free(t->keys);
	free(t->subjects);
}

static int subject_keys_read(int fd, size_t key_size, struct subject_keys *t)
{
	unsigned char key[sizeof(struct fw_ip) > 8 ? sizeof(struct fw_ip) : 8], prev[sizeof(key)];
	size_t cap = 0;
	void *at = NULL; /* the key before, none at first */

	memset(t, 0, sizeof(*t));
	t->key_size = key_size;
	if (fd < 0)
		return 0;
	while (bpf_map_get_next_key(fd, at, key) == 0) {
		memcpy(prev, key, key_size);
		at = prev;
		if (t->n == cap) {
			unsigned char *keys;
			struct fw_subject *subjects;

			cap = cap ? 2 * cap : 256;
			keys = realloc(t->keys, cap * key_size);
			if (keys)
				t->keys = keys;
			subjects = realloc(t->subjects, cap * sizeof(*subjects));
			if (subjects)
				t->subjects = subjects;
			if (!keys || !subjects) {
				subject_keys_free(t);
				return -ENOMEM;
			}
		}
		if (bpf_map_lookup_elem(fd, key, &t->subjects[t->n]))
			continue;
		memcpy(t->keys + t->n * key_size, key, key_size);
		t->n++;
	}
	return 0;
}

/* "cgroup:PATH" of process subject id (its fastwall_cgroups entry; the
 * path from the cgroup's id, "cgroup:#ID" when no cgroup2 mount shows it). */
static int cgroup_of(const struct subject_keys *cgroups, __u32 id, char *out, size_t len,
		     struct fw_subject *ks)
{
	char root[256], path[4096];
	__u64 cgid;

	for (size_t i = 0; i < cgroups->n; i++) {
		if (cgroups->subjects[i].id != id)
			continue;
		*ks = cgroups->subjects[i];
		memcpy(&cgid, cgroups->keys + i * sizeof(cgid), sizeof(cgid));
		if (fw_cg_find_mount(root, sizeof(root)) == 0 &&
		    fw_cg_path_of(root, cgid, path, sizeof(path)) == 0)
			snprintf(out, len, "cgroup:%.*s", (int)(len > 8 ? len - 8 : 0), path);
		else
			snprintf(out, len, "cgroup:#%llu", (unsigned long long)cgid);
		return 0;
	}
	return -ENOENT;
}

static int show_subjects(struct cli *c)
{
	struct fw_subject_meta meta;
	__u32 key, *prev = NULL;
	struct fw_ip addr;
	struct fw_subject ks;
	__u64 counts[FW_REASON_MAX];
	char buf[FW_ADDR_STRLEN];
	struct subject_keys dispatch, cgroups;
	json_t *list;
	int err;

	/* each map once, not once a subject */
	err = subject_keys_read(c->dp->dispatch_fd, sizeof(struct fw_ip), &dispatch);
	if (err)
		return err;
	err = subject_keys_read(c->dp->cgroups_fd, sizeof(__u64), &cgroups);
	if (err) {
		subject_keys_free(&dispatch);
		return err;
	}
	list = c->json ? json_array() : NULL;
	if (!c->json)
		printf("%-5s %-24s %-8s %-10s %s\n", "id", "name", "state", "interface",
		       "addresses");
	while (bpf_map_get_next_key(c->dp->meta_fd, prev, &key) == 0) {
		const char *state = "denying";
		bool first = true;

		prev = &key;
		if (bpf_map_lookup_elem(c->dp->meta_fd, &key, &meta) ||
		    meta.origin == FW_ORIGIN_RETIRED)
			continue;
		/* the addresses are the dispatch entries pointing at this id */
		char addrs[512] = "";
		size_t used = 0;
		json_t *jaddrs = json_array();
		const char *cg = NULL;

		for (size_t i = 0; i < dispatch.n; i++) {
			ks = dispatch.subjects[i];
			if (ks.id != key)
				continue;
			memcpy(&addr, dispatch.keys + i * sizeof(addr), sizeof(addr));
			state = state_name(ks.state);
			/* a process subject's DNS proxy address (127.254.0.0/16),
			 * not an address of its own: its cgroup says who it is */
			if (ks.ifindex == FW_IFINDEX_MISSING &&
			    FW_IP_W(&addr)[2] == htonl(0xffff) &&
			    (ntohl(FW_IP_W(&addr)[3]) & 0xffff0000u) == FW_CG_DNS_ALIAS_NET)
				continue;
			used += snprintf(addrs + used, sizeof(addrs) - used, "%s%s",
					 first ? "" : ",", fw_addr_str(&addr, buf, sizeof(buf)));
			json_array_append_new(jaddrs, json_string(buf));
			if (used >= sizeof(addrs))
				used = sizeof(addrs) - 1;
			first = false;
		}
		/* a process subject: its cgroup instead of addresses */
		if (first && cgroup_of(&cgroups, key, addrs, sizeof(addrs), &ks) == 0) {
			state = state_name(ks.state);
			first = false;
			cg = addrs + strlen("cgroup:");
		}
		/* its egress limit, when it has one (-o json: the key only then) */
		__u64 rate = 0, burst = 0;
		bool limited = fw_bw_limit_get(c->dp->bandwidth_fd, key, &rate, &burst) == 0;

		if (list) {
			bool have = fw_dp_subject_stats_read(c->dp, key, counts) == 0;

			json_array_append_new(
				list,
				json_pack("{s:i,s:s,s:s,s:s?,s:o,s:s?,s:o,s:o*}", "id", key, "name",
					  meta.name, "state", first ? "absent" : state, "interface",
					  meta.ifname[0] ? meta.ifname : NULL, "addresses", jaddrs,
					  "cgroup", cg, "counters",
					  have ? counts_json(counts, c->all) : json_object(),
					  "bandwidth",
					  limited ? json_pack("{s:I,s:I}", "rate", (json_int_t)rate,
							      "burst", (json_int_t)burst)
						  : NULL));
			continue;
		}
		json_decref(jaddrs);
		printf("%-5u %-24s %-8s %-10s %s\n", key, meta.name, first ? "absent" : state,
		       meta.ifname[0] ? meta.ifname : "-", first ? "-" : addrs);
		if (limited)
			printf("      bandwidth: %llu bytes/s, burst %llu bytes\n",
			       (unsigned long long)rate, (unsigned long long)burst);
		if (fw_dp_subject_stats_read(c->dp, key, counts) == 0)
			print_counts(counts, c->all);
	}
	subject_keys_free(&dispatch);
	subject_keys_free(&cgroups);
	return list ? json_out(json_pack("{s:o}", "subjects", list)) : 0;
}

static int port_key_cmp(const void *a, const void *b)
{
	const struct fw_port_rule_key *x = a, *y = b;

	if (x->subject != y->subject)
		return x->subject < y->subject ? -1 : 1;
	if (x->portset != y->portset)
		return x->portset < y->portset ? -1 : 1;
	return (int)x->port - (int)y->port;
}

/* " ports=443,8080" for set {id, set} of the learned port entries in
 * all (n of them), "" for every port. */
static void lease_ports(const struct fw_port_rule_key *all, size_t n, __u32 id, __u32 set,
			char *out, size_t size)
{
	size_t used = 0;
	bool first = true;

	out[0] = '\0';
	if (!set)
		return;
	used = (size_t)snprintf(out, size, " ports=");
	for (size_t i = 0; i < n && used < size; i++) {
		if (all[i].subject != id || all[i].portset != set)
			continue;
		used += (size_t)snprintf(out + used, size - used, "%s%u", first ? "" : ",",
					 all[i].port);
		first = false;
	}
	if (first && used < size)
		snprintf(out + used, size - used, "none");
}

/* " names=a,b": the names that taught the lease, as fastwalld kept them
 * (and into arr, when given). */
static void lease_names(struct cli *c, const struct fw_learned_key *k, char *out, size_t size,
			json_t *arr)
{
	struct fw_lease_names ids;
	size_t used = 0;

	out[0] = '\0';
	if (bpf_map_lookup_elem(c->dp->learned_names_fd, k, &ids))
		return;
	for (unsigned int i = 0; i < FW_LEASE_NAMES && used < size; i++) {
		struct fw_lease_name name;

		if (!ids.ids[i] || bpf_map_lookup_elem(c->dp->names_fd, &ids.ids[i], &name))
			continue;
		name.text[sizeof(name.text) - 1] = '\0';
		if (arr)
			json_array_append_new(arr, json_string(name.text));
		used += (size_t)snprintf(out + used, size - used, "%s%s",
					 used ? "," : " names=", name.text);
	}
}

static int show_leases(struct cli *c)
{
	struct fw_learned_key k, *prev = NULL;
	struct fw_port_rule_key pk, last, *pprev = NULL, *ports = NULL;
	size_t nports = 0, cap = 0;
	struct fw_lease v;
	struct fw_subject_meta meta;
	char buf[FW_ADDR_STRLEN], pbuf[512], nbuf[1024];
	__u64 now = fw_now_ns();

	while (bpf_map_get_next_key(c->dp->learned_ports_fd, pprev, &pk) == 0) {
		last = pk;
		pprev = &last;
		if (nports == cap) {
			struct fw_port_rule_key *grown;

			cap = cap ? 2 * cap : 256;
			grown = realloc(ports, cap * sizeof(*ports));
			if (!grown) {
				free(ports);
				return -ENOMEM;
			}
			ports = grown;
		}
		ports[nports++] = pk;
	}
	if (nports)
		qsort(ports, nports, sizeof(*ports), port_key_cmp); /* ports in order */
	json_t *list = c->json ? json_array() : NULL;

	if (!list)
		printf("%-24s %-40s %s\n", "subject", "address", "lease");
	while (bpf_map_get_next_key(c->dp->learned_fd, prev, &k) == 0) {
		prev = &k;
		if (bpf_map_lookup_elem(c->dp->learned_fd, &k, &v))
			continue;
		if (bpf_map_lookup_elem(c->dp->meta_fd, &k.subject, &meta))
			snprintf(meta.name, sizeof(meta.name), "#%u", k.subject);
		else if (meta.origin == FW_ORIGIN_RETIRED)
			continue; /* a removed subject's, waiting for the reaper */
		lease_ports(ports, nports, k.subject, v.portset, pbuf, sizeof(pbuf));
		if (list) {
			json_t *jn = json_array(), *jp = json_array();

			lease_names(c, &k, nbuf, sizeof(nbuf), jn);
			for (size_t i = 0; v.portset && i < nports; i++)
				if (ports[i].subject == k.subject && ports[i].portset == v.portset)
					json_array_append_new(jp, json_integer(ports[i].port));
			json_array_append_new(
				list,
				json_pack("{s:i,s:s,s:s,s:b,s:I,s:o,s:o}", "subject_id", k.subject,
					  "subject", meta.name, "address",
					  fw_addr_str(&k.addr, buf, sizeof(buf)), "expired",
					  v.expires_ns <= now, "expires_in_s",
					  (json_int_t)(v.expires_ns > now ? (v.expires_ns - now) /
										    FW_NSEC_PER_SEC
									  : 0),
					  "ports", v.portset ? jp : (json_decref(jp), json_null()),
					  "names", jn));
			continue;
		}
		lease_names(c, &k, nbuf, sizeof(nbuf), NULL);
		if (v.expires_ns > now)
			printf("%-24s %-40s %llus left%s%s\n", meta.name,
			       fw_addr_str(&k.addr, buf, sizeof(buf)),
			       (unsigned long long)((v.expires_ns - now) / FW_NSEC_PER_SEC), pbuf,
			       nbuf);
		else
			printf("%-24s %-40s expired%s%s\n", meta.name,
			       fw_addr_str(&k.addr, buf, sizeof(buf)), pbuf, nbuf);
	}
	free(ports);
	return list ? json_out(json_pack("{s:o}", "leases", list)) : 0;
}

/* The reason table this build was compiled with; no pins needed. */
static int show_reasons(struct cli *c)
{
	if (c->markdown) {
		fw_reasons_markdown(stdout);
		return 0;
	}
	if (c->json) {
		json_t *list = json_array();

		for (__u32 r = 0; r < FW_REASON_MAX; r++)
			if (fw_reason_meaning(r))
				json_array_append_new(
					list, json_pack("{s:i,s:s,s:s,s:s}", "number", r, "verdict",
							fw_reason_drops(r) ? "drop" : "pass",
							"reason", fw_reason_name(r), "meaning",
							fw_reason_meaning(r)));
		return json_out(json_pack("{s:o}", "reasons", list));
	}
	printf("%-3s %-5s %-18s %s\n", "#", "", "reason", "meaning");
	for (__u32 r = 0; r < FW_REASON_MAX; r++)
		if (fw_reason_meaning(r))
			printf("%-3u %-5s %-18s %s\n", r, fw_reason_drops(r) ? "drop" : "pass",
			       fw_reason_name(r), fw_reason_meaning(r));
	return 0;
}

/* ---- fastwall run ---- */

#define RUN_EXIT_OWN FW_EXIT_RUN_OWN

static volatile sig_atomic_t run_signal;

static void on_run_signal(int sig)
{
	run_signal = sig;
}

/* fastwall run --help: what it does, between the usage and the options */
static void run_doc(FILE *out)
{
	int col = (int)strlen("sandbox (");

	fprintf(out, "Runs CMD in a process sandbox of the running fastwalld (its processes.\n"
		     "section on): a new cgroup below processes.cgroup_parent whose processes,\n"
		     "children and sub-cgroups included, reach only what the policy allows.\n"
		     "A denied connect or sendto fails with EPERM; raw and packet sockets are\n"
		     "refused. CMD runs without the capabilities that would let it leave the\n"
		     "sandbox (");
	/* the names of the table the launcher drops, wrapped at 74 */
	for (size_t i = 0; i < fw_sandbox_ncaps; i++) {
		int w = (int)strlen(fw_sandbox_caps[i].name) + 2;

		if (i && col + w > 74) {
			fputc('\n', out);
			col = 0;
		} else if (i) {
			fputc(' ', out);
			col++;
		}
		col += fprintf(out, "%s%s", fw_sandbox_caps[i].name,
			       i + 1 < fw_sandbox_ncaps ? "," : "), with");
	}
	fprintf(out, "\nno_new_privs, and as root in a cgroup namespace of its own (which needs\n"
		     "cgroup2 mounted with nsdelegate). The exit status is CMD's (128 + N\n"
		     "when a signal N ended it, 125 when fastwall run itself failed). SIGINT\n"
		     "and SIGTERM go to CMD; when it ends, whatever is left in the cgroup is\n"
		     "killed and the subject and the cgroup are removed. With fastwalld's DNS\n"
		     "proxy on, CMD's DNS goes to the proxy whatever resolver it asks, so\n"
		     "domain targets work. For root and the members of processes.run_group.\n");
}

/* One request (with descriptor pass when not -1), its answer. */
static int run_call_fd(int fd, const struct fw_run_req *req, int pass, struct fw_run_reply *rep)
{
	char *text = fw_run_req_format(req), buf[8192];
	union {
		char b[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov;
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
	ssize_t n;

	if (!text)
		return -ENOMEM;
	iov.iov_base = text;
	iov.iov_len = strlen(text);
	if (pass >= 0) {
		struct cmsghdr *cm;

		memset(&ctl, 0, sizeof(ctl));
		msg.msg_control = ctl.b;
		msg.msg_controllen = sizeof(ctl.b);
		cm = CMSG_FIRSTHDR(&msg);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(cm), &pass, sizeof(int));
	}
	n = sendmsg(fd, &msg, MSG_NOSIGNAL);
	free(text);
	if (n < 0)
		return -errno;
	do
		n = recv(fd, buf, sizeof(buf), 0);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if (n == 0)
		return -ECONNRESET;
	return fw_run_reply_parse(buf, (size_t)n, rep);
}

static int run_call(int fd, const struct fw_run_req *req, struct fw_run_reply *rep)
{
	return run_call_fd(fd, req, -1, rep);
}

static int run_connect(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

/* The command's capabilities: each of fw_sandbox_caps (with keep,
 * CAP_NET_RAW alone: a packet socket passes no inet hook, so no policy
 * could hold it) dropped from the bounding set (skipped where the kernel
 * does not know it, EINVAL: CAP_BPF before 5.8), the ambient set and this
 * process's sets; then no_new_privs, so no set-uid program or file
 * capability gives one back. A caller without CAP_SETPCAP (not root)
 * can't shrink the bounding set (EPERM): no_new_privs holds it to the
 * sets it has. *which names the capability a failure was about. */
static int drop_caps(bool keep, const char **which)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[2];
	bool setpcap;

	*which = NULL;
	if (syscall(SYS_capget, &h, d))
		return -errno;
	setpcap = d[CAP_SETPCAP / 32].effective >> (CAP_SETPCAP % 32) & 1;
	for (size_t i = 0; i < fw_sandbox_ncaps; i++) {
		const struct fw_sandbox_cap *c = &fw_sandbox_caps[i];
		__u32 bit = 1u << (c->cap % 32);
		int w = c->cap / 32;

		if (keep && c->cap != CAP_NET_RAW)
			continue;
		*which = c->name;
		if (prctl(PR_CAPBSET_DROP, c->cap, 0, 0, 0) && errno != EINVAL &&
		    (errno != EPERM || setpcap))
			return -errno;
		if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_LOWER, c->cap, 0, 0) && errno != EINVAL)
			return -errno;
		d[w].effective &= ~bit;
		d[w].permitted &= ~bit;
		d[w].inheritable &= ~bit;
	}
	*which = NULL;
	if (syscall(SYS_capset, &h, d) || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -errno;
	return 0;
}

/* Could this process write the cgroup.procs of a cgroup above its own
 * (root's files): uid 0, or CAP_DAC_OVERRIDE. */
static bool may_leave_cgroup(void)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[2];

	if (geteuid() == 0 || syscall(SYS_capget, &h, d))
		return true;
	return d[CAP_DAC_OVERRIDE / 32].permitted >> (CAP_DAC_OVERRIDE % 32) & 1;
}

/* Holds the child (in its cgroup already) there: a cgroup namespace
 * rooted at the sandbox, then its capabilities dropped (see drop_caps). A
 * caller that could write cgroup.procs above the sandbox would otherwise
 * move itself out: in a cgroup namespace of a hierarchy mounted with
 * nsdelegate it can't, and without CAP_SYS_ADMIN it can't enter another
 * namespace or mount a cgroup2 of its own. Fails closed: an error here
 * ends the run before CMD. With keep: CAP_NET_RAW and no_new_privs only. */
static int run_confine(const char *cgroup, bool keep)
{
	const char *which;
	int err;

	if (!keep && may_leave_cgroup()) {
		if (unshare(CLONE_NEWCGROUP)) {
			err = errno;
			fprintf(stderr,
				"fastwall run: can't make a cgroup namespace at %s: %s (without "
				"one the command could leave; --keep-caps runs it so)\n",
				cgroup, strerror(err));
			return -err;
		}
		if (!fw_cg_nsdelegate()) {
			fprintf(stderr,
				"fastwall run: can't hold the command in %s: cgroup2 is not "
				"mounted with nsdelegate (mount -o remount,nsdelegate on a cgroup2 "
				"mount, as systemd mounts it; --keep-caps runs it unconfined)\n",
				cgroup);
			return -EPERM;
		}
	}
	err = drop_caps(keep, &which);
	if (err)
		fprintf(stderr, "fastwall run: can't drop %s: %s\n", which ? which : "capabilities",
			strerror(-err));
	return err;
}

/* Into the sandbox: fastwalld moves this process (a caller other than
 * root could not write the cgroup.procs of a cgroup it does not share an
 * ancestor of its own with). */
static int run_join(const char *sock, const char *name)
{
	struct fw_run_req join = {.op = FW_RUN_JOIN};
	struct fw_run_reply rep;
	int fd = run_connect(sock), err;

	if (fd < 0)
		return fd;
	snprintf(join.name, sizeof(join.name), "%s", name);
	err = run_call(fd, &join, &rep);
	close(fd);
	if (!err && !rep.ok) {
		fprintf(stderr, "fastwall run: %s\n", rep.error);
		err = -EPERM;
	}
	return err;
}

/* The child: into the sandbox's cgroup, then CMD. It never runs CMD
 * outside the cgroup. dfd: the cgroup passed with --cgroup, or -1. */
static void run_child(const char *cgroup, int dfd, const char *sock, const char *name, bool keep,
		      char **cmd)
{
	char procs[4200];
	sigset_t none;
	int fd, err;

	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (dfd < 0 && geteuid() != 0) {
		err = run_join(sock, name);
		if (err) {
			fprintf(stderr, "fastwall run: can't join cgroup %s: %s\n", cgroup,
				strerror(-err));
			_exit(RUN_EXIT_OWN);
		}
	} else {
		snprintf(procs, sizeof(procs), "%s/cgroup.procs", cgroup);
		fd = dfd >= 0 ? openat(dfd, "cgroup.procs", O_WRONLY | O_CLOEXEC)
			      : open(procs, O_WRONLY | O_CLOEXEC);
		if (fd < 0 || write(fd, "0", 1) != 1) {
			fprintf(stderr, "fastwall run: can't join cgroup %s: %s\n", cgroup,
				strerror(errno));
			_exit(RUN_EXIT_OWN);
		}
		close(fd);
		if (dfd >= 0)
			close(dfd);
	}
	if (run_confine(cgroup, keep))
		_exit(RUN_EXIT_OWN);
	execvp(cmd[0], cmd);
	fprintf(stderr, "fastwall run: can't run %s: %s\n", cmd[0], strerror(errno));
	_exit(errno == ENOENT ? FW_EXIT_RUN_NOENT : FW_EXIT_RUN_NOEXEC);
}

/* fastwall run's options and command into r: -1 when they are good,
 * else the exit status (the usage, or the error said). */
static int run_args(struct fw_cmd_args *a, struct fw_run_args *r)
{
	char err[512];
	int ret = fw_run_args_parse(a, (unsigned int)getpid(), r, err, sizeof(err));

	if (ret > 0)
		return a->status;
	return ret ? fw_cmd_usage_error(a, "%s", err) : -1;
}

/* Registers the sandbox with fastwalld, with --cgroup the caller's own
 * cgroup (fastwalld checks what the descriptor names, not the path): the
 * connection to remove it by, or -1 after saying why. *dfd: that cgroup's
 * directory, or -1. */
static int run_register(const struct fw_run_args *r, int *dfd, struct fw_run_reply *rep)
{
	bool made = false;
	int fd, ret;

	*dfd = -1;
	fd = run_connect(r->socket);
	if (fd < 0) {
		fprintf(stderr, "fastwall run: can't reach fastwalld at %s: %s\n", r->socket,
			strerror(-fd));
		return -1;
	}
	if (r->cgroup[0]) {
		made = mkdir(r->cgroup, 0755) == 0;
		*dfd = open(r->cgroup, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (*dfd < 0) {
			fprintf(stderr, "fastwall run: can't open cgroup %s: %s\n", r->cgroup,
				strerror(errno));
			close(fd);
			return -1;
		}
	}
	ret = run_call_fd(fd, &r->req, *dfd, rep);
	if (!ret && rep->ok)
		return fd;
	fprintf(stderr, "fastwall run: %s\n", ret ? strerror(-ret) : rep->error);
	if (made)
		rmdir(r->cgroup);
	if (*dfd >= 0)
		close(*dfd);
	close(fd);
	return -1;
}

/* CMD in the sandbox, to its end: its wait status. */
static int run_command(const struct fw_run_args *r, const struct fw_run_reply *rep, int dfd)
{
	struct sigaction sa = {.sa_handler = on_run_signal};
	int status = 0;
	pid_t child;

	/* before the fork: a signal from then on reaches CMD */
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGHUP, &sa, NULL);
	child = fork();
	if (child == 0)
		run_child(rep->cgroup, dfd, r->socket, r->req.name, r->keep_caps, r->cmd);
	if (dfd >= 0)
		close(dfd);
	if (child < 0) {
		fprintf(stderr, "fastwall run: fork: %s\n", strerror(errno));
		return RUN_EXIT_OWN << 8;
	}
	for (;;) {
		pid_t w = waitpid(child, &status, 0);

		if (w == child || (w < 0 && errno != EINTR))
			return status;
		if (run_signal) {
			kill(child, run_signal);
			run_signal = 0;
		}
	}
}

/* Done: the rest of the sandbox goes, then its subject and cgroup (over a
 * new connection when fastwalld restarted meanwhile). */
static void run_remove(int fd, const struct fw_run_args *r)
{
	struct fw_run_req rm = {.op = FW_RUN_REMOVE};
	struct fw_run_reply rep;
	int ret;

	snprintf(rm.name, sizeof(rm.name), "%s", r->req.name);
	ret = run_call(fd, &rm, &rep);
	close(fd);
	if (ret == -EPIPE || ret == -ECONNRESET || ret == -ENOTCONN) {
		fd = run_connect(r->socket);
		ret = fd < 0 ? fd : run_call(fd, &rm, &rep);
		if (fd >= 0)
			close(fd);
	}
	if (ret || !rep.ok)
		fprintf(stderr, "fastwall run: can't remove run %s: %s\n", rm.name,
			ret ? strerror(-ret) : rep.error);
}

static int cmd_run(struct fw_cmd_args *a)
{
	struct fw_run_args r;
	struct fw_run_reply rep;
	int fd, dfd, status, ret;

	fw_log_level = FW_LOG_ERROR;
	ret = run_args(a, &r);
	if (ret < 0) {
		ret = RUN_EXIT_OWN;
		fd = run_register(&r, &dfd, &rep);
		if (fd >= 0) {
			status = run_command(&r, &rep, dfd);
			run_remove(fd, &r);
			/* CMD's status is ours; a signal N that ended it, 128 + N */
			ret = WIFSIGNALED(status) ? 128 + WTERMSIG(status)
			      : WIFEXITED(status) ? WEXITSTATUS(status)
						  : RUN_EXIT_OWN;
		}
	}
	fw_run_args_free(&r);
	return ret;
}

static int show_explain(struct cli *c)
{
	c->explain.json = c->json;
	return fw_cli_explain(c->dp, &c->explain);
}

/* ---- the command table ---- */

/* The read commands' options (the word's options before it, too). */
/* clang-format off */
#define OPT_BPFFS  {'b', "bpffs", "DIR", "pin directory (default " FW_DEFAULT_BPFFS ")"}
#define OPT_OUTPUT {'o', "output", "FMT", "text (default) or json"}
#define OPT_ALL	   {'a', "all", NULL, "show zero counters too"}
/* clang-format on */

/* Status, subjects, leases, reasons and explain: their options into c */
static int read_options(struct fw_cmd_args *a, struct cli *c)
{
	static const char *const formats[] = {"text", "json", NULL};
	int key;

	c->bpffs = FW_DEFAULT_BPFFS;
	c->explain.config = FW_CLI_DEFAULT_CONFIG;
	while ((key = fw_cmd_next(a)) > 0) {
		switch (key) {
		case 'b':
			c->bpffs = a->arg;
			break;
		case 'o':
			key = fw_cmd_choose(a, formats);
			if (key < 0)
				return -1;
			c->json = key == 1;
			break;
		case 'a':
			c->all = true;
			break;
		case 'm':
			c->markdown = true;
			break;
		case 'i':
			c->explain.iface = a->arg;
			break;
		case 'g':
			c->explain.cgroup = a->arg;
			break;
		case 's':
			c->explain.sport = a->arg;
			break;
		case 'c':
			c->explain.config = a->arg;
			break;
		}
	}
	c->explain.argc = a->argc - a->ind;
	c->explain.argv = a->argv + a->ind;
	return key;
}

#define READ_PINS   (1u << 0) /* opens the pins under --bpffs */
#define READ_STATUS (1u << 1) /* show returns an exit status, not 0 or a negative errno */

static int read_command(struct fw_cmd_args *a, int (*show)(struct cli *c), unsigned int how)
{
	struct cli c = {0};
	int err;

	if (read_options(a, &c) < 0)
		return a->status;
	fw_log_level = FW_LOG_ERROR;
	fw_dp_quiet();
	err = how & READ_PINS ? fw_dp_open_pinned(c.bpffs, &c.dp) : 0;
	if (err == -EPROTO) {
		/* fw_dp_open_pinned said which ABI it found */
		fprintf(stderr, "fastwall: can't read the pins under %s\n", c.bpffs);
		return FW_EXIT_ABI;
	}
	if (err) {
		fprintf(stderr, "fastwall: no data plane pinned under %s: %s\n", c.bpffs,
			strerror(-err));
		return err == -ENOENT ? FW_EXIT_NOSTATE : FW_EXIT_FAILURE;
	}
	err = show(&c);
	fw_dp_close(c.dp);
	if (how & READ_STATUS)
		return err;
	if (err) {
		fprintf(stderr, "fastwall: %s: %s\n", a->cmd->name, strerror(-err));
		return FW_EXIT_FAILURE;
	}
	return FW_EXIT_OK;
}

static int cmd_status(struct fw_cmd_args *a)
{
	return read_command(a, show_status, READ_PINS);
}

static int cmd_subjects(struct fw_cmd_args *a)
{
	return read_command(a, show_subjects, READ_PINS);
}

static int cmd_leases(struct fw_cmd_args *a)
{
	return read_command(a, show_leases, READ_PINS);
}

static int cmd_reasons(struct fw_cmd_args *a)
{
	return read_command(a, show_reasons, 0);
}

static int cmd_explain(struct fw_cmd_args *a)
{
	return read_command(a, show_explain, READ_PINS | READ_STATUS);
}

/* The descriptions of the read-only commands, between the usage and the
 * options of their --help (fastwall.8 says the same at length). */
static void status_doc(FILE *out)
{
	fputs("The number of subjects (and of removed ones the reaper has not finished),\n"
	      "the interfaces fastwall is attached to, the port guard's interfaces and\n"
	      "hook, and the packet counters per verdict reason, read from the pins.\n",
	      out);
}

static void subjects_doc(FILE *out)
{
	fputs("Each subject with its id, state, host interface, addresses (a process\n"
	      "sandbox: cgroup:PATH) and its counters, read from the pins.\n",
	      out);
}

static void leases_doc(FILE *out)
{
	fputs("The addresses each subject learned from DNS answers, with the time left\n"
	      "on their lease and the names that taught them, read from the pins.\n",
	      out);
}

static void reasons_doc(FILE *out)
{
	fputs("The verdict reasons this build knows: number (the counter slot), pass or\n"
	      "drop, name and meaning. Reads no pins.\n",
	      out);
}

static void explain_doc(FILE *out)
{
	fputs("The verdict the data plane would give a packet from SRC to DST (PORT/PROTO\n"
	      "as 443/tcp or 53/udp; default an ICMP echo request), and what decided it:\n"
	      "the subject, the rule of its policy with its text, the DNS lease and the\n"
	      "names that taught it, or the default. It only looks maps up: no counter\n"
	      "moves, nothing is written. Exit 0 when the packet would pass, 7 when it\n"
	      "would drop.\n",
	      out);
}

static const struct fw_cmd_opt status_opts[] = {
	OPT_BPFFS, OPT_OUTPUT, OPT_ALL, FW_CMD_OPT_HELP, {0}};
static const struct fw_cmd_opt leases_opts[] = {OPT_BPFFS, OPT_OUTPUT, FW_CMD_OPT_HELP, {0}};
static const struct fw_cmd_opt reasons_opts[] = {
	OPT_OUTPUT,
	{'m', "markdown", NULL, "as the Markdown table of docs/operations.md"},
	FW_CMD_OPT_HELP,
	{0},
};
static const struct fw_cmd_opt explain_opts[] = {
	OPT_BPFFS,
	OPT_OUTPUT,
	{'i', "iface", "IF", "the interface the packet arrives on"},
	{'g', "cgroup", "PATH", "a process sandbox's cgroup directory"},
	{'s', "sport", "N", "the source port (a reply on a pod-opened flow)"},
	{'c', "config", "FILE",
	 "fastwalld's configuration, for the rule text\n(default " FW_CLI_DEFAULT_CONFIG ")"},
	FW_CMD_OPT_HELP,
	{0},
};

static const struct fw_cmd cmds[] = {
	{
		.name = "status",
		.fn = cmd_status,
		.doc = status_doc,
		.opts = status_opts,
		.usage = "status [--bpffs DIR] [-o json] [--all]",
		.summary = "attached interfaces and verdict counters",
	},
	{
		.name = "subjects",
		.fn = cmd_subjects,
		.doc = subjects_doc,
		.opts = status_opts,
		.usage = "subjects [--bpffs DIR] [-o json] [--all]",
		.summary = "subjects with state, addresses and counters",
	},
	{
		.name = "leases",
		.fn = cmd_leases,
		.doc = leases_doc,
		.opts = leases_opts,
		.usage = "leases [--bpffs DIR] [-o json]",
		.summary = "DNS-learned addresses and their remaining lease",
	},
	{
		.name = "reasons",
		.fn = cmd_reasons,
		.doc = reasons_doc,
		.opts = reasons_opts,
		.usage = "reasons [-o json] [--markdown]",
		.summary = "verdict reasons: number, pass or drop, name, meaning",
	},
	{
		.name = "explain",
		.fn = cmd_explain,
		.doc = explain_doc,
		.opts = explain_opts,
		.usage = "explain [-o json] SRC DST [PORT/PROTO] [--iface IF] [--sport N]\n"
			 "explain [-o json] --cgroup PATH DST [PORT/PROTO]",
		.summary = "the verdict on SRC DST [PORT/PROTO] and what decided it",
		.max_operands = -1, /* fw_cli_explain says which are wrong */
	},
	{
		.name = "run",
		.fn = cmd_run,
		.opts = fw_run_opts,
		.usage = "run [--policy FILE] [--allow TARGET]... [--deny TARGET]...\n"
			 "                    [--name NAME] [--socket PATH] [--cgroup DIR] "
			 "[--keep-caps]\n"
			 "                    -- CMD [ARGS]",
		.summary = "run a command in a process sandbox (fastwall run --help)",
		.doc = run_doc,
		.max_operands = -1,
		.col = 19,
		.in_order = true, /* CMD's options are CMD's */
	},
	{
		.name = "monitor",
		.fn = fw_cli_monitor,
		.opts = fw_cli_monitor_opts,
		.usage = "monitor [OPTIONS]",
		.summary = "live deny, DNS and sampled allow events (fastwall monitor --help)",
		.col = 22,
	},
	{
		.name = "scope",
		.fn = fw_cli_scope,
		.opts = fw_cli_scope_opts,
		.usage = "scope sign --keys FILE --key-id ID NAMESPACE SANDBOX PORT\n"
			 "scope verify --keys FILE SCOPE",
		.summary = "sign or verify a route scope (fastwall scope --help)",
		.max_operands = -1,
	},
	{
		.name = "hostname",
		.fn = fw_cli_hostname,
		.opts = fw_cli_hostname_opts,
		.usage = "hostname hash [--gateway NAME] WORKSPACE SANDBOX [SERVICE]\n"
			 "hostname parse --base-domain DOMAIN... [--gateway NAME] HOST\n"
			 "hostname expose --admin ADDR --port PORT [--public] WORKSPACE SANDBOX "
			 "[SERVICE]\n"
			 "hostname get|delete --admin ADDR WORKSPACE SANDBOX [SERVICE]\n"
			 "hostname list --admin ADDR\n"
			 "hostname delete-sandbox --admin ADDR WORKSPACE SANDBOX",
		.summary = "a service host's label, the service a host names, or a gateway's "
			   "exposed services (fastwall hostname --help)",
		.max_operands = -1,
	},
};

/* Before the word: any read command's option, passed on to the command. */
static const struct fw_cmd_opt global_opts[] = {
	OPT_BPFFS,
	OPT_OUTPUT,
	{'a', "all", NULL, "status, subjects: show zero counters too"},
	{'m', "markdown", NULL, "reasons: as the Markdown table of docs/operations.md"},
	{'i', "iface", "IF", "explain: the interface the packet arrives on"},
	{'g', "cgroup", "PATH", "explain: a process sandbox's cgroup directory"},
	{'s', "sport", "N", "explain: the source port (a reply on a pod-opened flow)"},
	{'c', "config", "FILE",
	 "explain: fastwalld's configuration, for the rule text\n(default " FW_CLI_DEFAULT_CONFIG
	 ")"},
	FW_CMD_OPT_HELP,
	{0},
};

static void version(void)
{
	printf("fastwall %s (map ABI %d)\n", FW_VERSION, FW_ABI_VERSION);
}

static const struct fw_cmd_prog fastwall = {
	.name = "fastwall",
	.cmds = cmds,
	.ncmds = sizeof(cmds) / sizeof(cmds[0]),
	.opts = global_opts,
	.col = 20,
	.usage = "[--bpffs DIR] [-o json] [--all] COMMAND\n"
		 "[-o json] explain SRC DST [PORT/PROTO] [--iface IF] [--sport N]\n"
		 "[-o json] explain --cgroup PATH DST [PORT/PROTO]",
	.version = version,
};

int main(int argc, char **argv)
{
	return fw_cmd_main(&fastwall, argc, argv);
}
