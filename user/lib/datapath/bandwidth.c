// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Per-subject egress bandwidth: the limits and counters in the pinned
 * maps, the programs on the uplinks' TC egress, and the fq root qdisc
 * (rtnetlink) that edt needs. See bandwidth.h. */
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/netlink.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>

#include "bandwidth.skel.h"
#include "common/log.h"
#include "datapath/bandwidth.h"
#include "datapath/stats.h"

#define BW_EDT_NAME    "fw_bw_edt"
#define BW_POLICE_NAME "fw_bw_police"

static const char *const mode_names[] = {
	[FW_BW_AUTO] = "auto",
	[FW_BW_EDT] = "edt",
	[FW_BW_POLICE] = "police",
	[FW_BW_NONE] = "none",
};

const char *fw_bw_mode_name(enum fw_bw_mode m)
{
	return m <= FW_BW_NONE ? mode_names[m] : "unknown";
}

/* ---- limits and counters ------------------------------------------------ */

int fw_dp_bandwidth_set(struct fw_dp *dp, __u32 id, __u64 rate, __u64 burst)
{
	struct fw_bandwidth v = {.rate = rate, .burst = burst};
	int err;

	if (dp->bandwidth_fd < 0)
		return rate ? -EOPNOTSUPP : 0;
	if (!rate) {
		if (bpf_map_delete_elem(dp->bandwidth_fd, &id) && errno != ENOENT) {
			err = -errno;
			fw_err("can't delete subject %u from fastwall_bandwidth: %s", id,
			       strerror(-err));
			return err;
		}
		return 0;
	}
	if (rate < FW_BW_RATE_MIN || rate > FW_BW_RATE_MAX || burst < FW_BW_BURST_MIN ||
	    burst > FW_BW_BURST_MAX)
		return -EINVAL;
	if (bpf_map_update_elem(dp->bandwidth_fd, &id, &v, BPF_ANY)) {
		err = -errno;
		fw_err("can't write subject %u to fastwall_bandwidth: %s", id, strerror(-err));
		return err;
	}
	return 0;
}

int fw_dp_bandwidth_get(struct fw_dp *dp, __u32 id, __u64 *rate, __u64 *burst)
{
	int err = fw_bw_limit_get(dp->bandwidth_fd, id, rate, burst);

	if (err == -ENOENT) {
		*rate = *burst = 0;
		return 0;
	}
	return err;
}

int fw_bw_limit_get(int fd, __u32 id, __u64 *rate, __u64 *burst)
{
	struct fw_bandwidth v;

	if (fd < 0)
		return -ENOENT;
	if (bpf_map_lookup_elem(fd, &id, &v))
		return -errno;
	*rate = v.rate;
	*burst = v.burst;
	return 0;
}

int fw_bw_stats_read(int fd, struct fw_counter out[FW_BW_STAT_MAX])
{
	memset(out, 0, sizeof(*out) * FW_BW_STAT_MAX);
	return fw_counters_add(fd, FW_BW_STAT_MAX, out);
}

/* ---- the programs ------------------------------------------------------- */

int fw_bw_open(const char *pin_root, __u64 horizon_ns, bool processes, struct fw_bw **out)
{
	LIBBPF_OPTS(bpf_object_open_opts, oopts, .pin_root_path = pin_root);
	struct fw_bw *bw;
	int err;

	bw = calloc(1, sizeof(*bw));
	if (!bw)
		return -ENOMEM;
	bw->skel = bandwidth_bpf__open_opts(&oopts);
	if (!bw->skel) {
		err = -errno;
		fw_err("can't open the bandwidth BPF object: %s", strerror(-err));
		free(bw);
		return err;
	}
	bw->skel->rodata->fw_bw_horizon_ns = horizon_ns;
	bw->skel->rodata->fw_bw_processes = processes;
	err = bandwidth_bpf__load(bw->skel);
	if (err) {
		fw_err("can't load the bandwidth programs (pins under %s): %s", pin_root,
		       strerror(-err));
		bandwidth_bpf__destroy(bw->skel);
		free(bw);
		return err;
	}
	bw->edt_fd = bpf_program__fd(bw->skel->progs.fw_bw_edt);
	bw->police_fd = bpf_program__fd(bw->skel->progs.fw_bw_police);
	*out = bw;
	return 0;
}

void fw_bw_close(struct fw_bw *bw)
{
	if (!bw)
		return;
	bandwidth_bpf__destroy(bw->skel);
	free(bw);
}

/* ---- the root qdisc (rtnetlink) ----------------------------------------- */

struct qdisc_req {
	struct nlmsghdr nh;
	struct tcmsg tc;
	char attrs[32];
};

/* Sends req and reads its acknowledgement (NLM_F_ACK), or walks a dump,
 * calling cb for each message of it. */
static int nl_talk(struct qdisc_req *req, void (*cb)(const struct nlmsghdr *nh, void *ctx),
		   void *ctx)
{
	const size_t size = 32768;
	char *buf = malloc(size);
	int s, err = 0;

	if (!buf)
		return -ENOMEM;
	s = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
	if (s < 0) {
		err = -errno;
		free(buf);
		return err;
	}
	if (send(s, req, req->nh.nlmsg_len, 0) < 0) {
		err = -errno;
		goto out;
	}
	for (;;) {
		ssize_t n = recv(s, buf, size, 0);
		struct nlmsghdr *nh;
		int len;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			err = n < 0 ? -errno : -EIO;
			goto out;
		}
		len = (int)n;
		/* NLMSG_OK compares the header's __u32 length with len, an int
		 * as netlink(3) has it: clang warns inside the macro (links.c) */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wsign-compare"
		for (nh = (struct nlmsghdr *)buf; NLMSG_OK(nh, len); nh = NLMSG_NEXT(nh, len)) {
			if (nh->nlmsg_type == NLMSG_DONE)
				goto out;
			if (nh->nlmsg_type == NLMSG_ERROR) {
				const struct nlmsgerr *e = NLMSG_DATA(nh);

				err = nh->nlmsg_len >= NLMSG_LENGTH(sizeof(*e)) ? e->error : -EIO;
				goto out;
			}
			if (cb)
				cb(nh, ctx);
		}
#pragma GCC diagnostic pop
	}
out:
	close(s);
	free(buf);
	return err;
}

struct root_qdisc {
	int ifindex;
	__u32 handle;
	char kind[16];
	bool found;
};

static void root_cb(const struct nlmsghdr *nh, void *ctx)
{
	const struct tcmsg *tc = NLMSG_DATA(nh);
	struct root_qdisc *q = ctx;
	const struct rtattr *a;
	int len;

	if (nh->nlmsg_type != RTM_NEWQDISC || nh->nlmsg_len < NLMSG_LENGTH(sizeof(*tc)) ||
	    tc->tcm_ifindex != q->ifindex || tc->tcm_parent != TC_H_ROOT)
		return;
	q->found = true;
	q->handle = tc->tcm_handle;
	len = (int)nh->nlmsg_len - NLMSG_LENGTH(sizeof(*tc));
	for (a = (const struct rtattr *)((const char *)tc + NLMSG_ALIGN(sizeof(*tc)));
	     RTA_OK(a, len); a = RTA_NEXT(a, len))
		if (a->rta_type == TCA_KIND)
			snprintf(q->kind, sizeof(q->kind), "%.*s", (int)RTA_PAYLOAD(a),
				 (const char *)RTA_DATA(a));
}

static int root_qdisc(int ifindex, struct root_qdisc *q)
{
	struct qdisc_req req = {
		.nh = {.nlmsg_len = NLMSG_LENGTH(sizeof(struct tcmsg)),
		       .nlmsg_type = RTM_GETQDISC,
		       .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP},
		.tc = {.tcm_family = AF_UNSPEC, .tcm_ifindex = ifindex},
	};

	memset(q, 0, sizeof(*q));
	q->ifindex = ifindex;
	return nl_talk(&req, root_cb, q);
}

static int qdisc_change(int ifindex, __u16 type, __u16 flags)
{
	struct qdisc_req req = {
		.nh = {.nlmsg_type = type, .nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | flags},
		.tc = {.tcm_family = AF_UNSPEC,
		       .tcm_ifindex = ifindex,
		       .tcm_parent = TC_H_ROOT,
		       .tcm_handle = FW_BW_FQ_HANDLE},
	};
	struct rtattr *a = (struct rtattr *)req.attrs;

	a->rta_type = TCA_KIND;
	a->rta_len = RTA_LENGTH(sizeof("fq"));
	memcpy(RTA_DATA(a), "fq", sizeof("fq"));
	req.nh.nlmsg_len = NLMSG_LENGTH(sizeof(struct tcmsg)) + RTA_ALIGN(a->rta_len);
	return nl_talk(&req, NULL, NULL);
}

/* fq as ifindex's root qdisc: kept when it is fastwall's or an fq
 * already; put in place of the kernel's default one (handle 0, which
 * comes back when fastwall's goes); never in place of one an operator
 * configured (-EBUSY). -ENOENT: the kernel has no fq. */
static int fq_ensure(int ifindex, char *why, size_t len)
{
	struct root_qdisc q;
	int err = root_qdisc(ifindex, &q);

	if (err) {
		snprintf(why, len, "can't read the root qdisc: %s", strerror(-err));
		return err;
	}
	if (q.found && !strcmp(q.kind, "fq"))
		return 0;
	if (q.found && q.handle != 0) {
		snprintf(why, len, "its root qdisc is a configured %s (handle %x:), not replaced",
			 q.kind, q.handle >> 16);
		return -EBUSY;
	}
	err = qdisc_change(ifindex, RTM_NEWQDISC, NLM_F_CREATE | NLM_F_REPLACE);
	if (err)
		snprintf(why, len, "%s",
			 err == -ENOENT ? "this kernel has no fq qdisc (sch_fq)" : strerror(-err));
	return err;
}

/* ---- hooks -------------------------------------------------------------- */

static __u32 tc_id(int ifindex)
{
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = BPF_TC_EGRESS);
	LIBBPF_OPTS(bpf_tc_opts, opts, .handle = FW_BW_TC_HANDLE, .priority = FW_BW_TC_PRIORITY);

	return bpf_tc_query(&hook, &opts) == 0 ? opts.prog_id : 0;
}

static enum fw_bw_mode prog_mode(__u32 id)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);
	enum fw_bw_mode m = FW_BW_NONE;
	int fd;

	if (!id)
		return FW_BW_NONE;
	fd = bpf_prog_get_fd_by_id(id);
	if (fd < 0)
		return FW_BW_NONE;
	if (!bpf_obj_get_info_by_fd(fd, &info, &len))
		m = !strcmp(info.name, BW_EDT_NAME)	 ? FW_BW_EDT
		    : !strcmp(info.name, BW_POLICE_NAME) ? FW_BW_POLICE
							 : FW_BW_NONE;
	close(fd);
	return m;
}

enum fw_bw_mode fw_bw_attached(int ifindex)
{
	return prog_mode(tc_id(ifindex));
}

static int tc_attach(int ifindex, int prog_fd)
{
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = BPF_TC_EGRESS);
	LIBBPF_OPTS(bpf_tc_opts, opts, .handle = FW_BW_TC_HANDLE, .priority = FW_BW_TC_PRIORITY,
		    .prog_fd = prog_fd, .flags = BPF_TC_F_REPLACE);
	int err = bpf_tc_hook_create(&hook);

	if (err && err != -EEXIST)
		return err;
	return bpf_tc_attach(&hook, &opts);
}

int fw_bw_attach(struct fw_bw *bw, int ifindex, enum fw_bw_mode want, enum fw_bw_mode *used)
{
	enum fw_bw_mode was = fw_bw_attached(ifindex), m = want;
	char name[IF_NAMESIZE] = "?", why[128] = "";
	int err = 0;

	if_indextoname(ifindex, name);
	if (want == FW_BW_EDT || want == FW_BW_AUTO) {
		err = fq_ensure(ifindex, why, sizeof(why));
		if (err && want == FW_BW_EDT) {
			fw_err("bandwidth: can't pace on %s (edt): %s", name, why);
			return err;
		}
		m = err ? FW_BW_POLICE : FW_BW_EDT;
		/* said once, when the mode changes */
		if (err && was != FW_BW_POLICE)
			fw_info("bandwidth: %s: %s; policing instead of pacing", name, why);
	}
	err = tc_attach(ifindex, m == FW_BW_EDT ? bw->edt_fd : bw->police_fd);
	if (err) {
		fw_err("can't attach the bandwidth program to %s (%s): %s", name,
		       fw_bw_mode_name(m), strerror(-err));
		return err;
	}
	/* police where edt ran: fastwall's fq has nothing left to do */
	if (m == FW_BW_POLICE && was == FW_BW_EDT) {
		struct root_qdisc q;

		if (!root_qdisc(ifindex, &q) && q.found && q.handle == FW_BW_FQ_HANDLE)
			qdisc_change(ifindex, RTM_DELQDISC, 0);
	}
	if (used)
		*used = m;
	return 0;
}

int fw_bw_detach(int ifindex)
{
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = BPF_TC_EGRESS);
	LIBBPF_OPTS(bpf_tc_opts, opts, .handle = FW_BW_TC_HANDLE, .priority = FW_BW_TC_PRIORITY);
	struct root_qdisc q;
	int n = 0;

	if (fw_bw_attached(ifindex) != FW_BW_NONE && bpf_tc_detach(&hook, &opts) == 0)
		n++;
	/* the kernel's default qdisc returns when fastwall's root goes */
	if (!root_qdisc(ifindex, &q) && q.found && q.handle == FW_BW_FQ_HANDLE &&
	    qdisc_change(ifindex, RTM_DELQDISC, 0) == 0)
		n++;
	return n ? 0 : -ENOENT;
}
