// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* Putting the TC programs on an interface and taking them off (see
 * attach.h). */
#include <errno.h>
#include <linux/pkt_cls.h>
#include <net/if.h>
#include <string.h>

#include <bpf/libbpf.h>

#include "common/log.h"
#include "datapath/attach.h"

static int attach_one(int ifindex, enum bpf_tc_attach_point where, int prog_fd)
{
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = where);
	LIBBPF_OPTS(bpf_tc_opts, opts, .handle = FW_TC_HANDLE, .priority = FW_TC_PRIORITY,
		    .prog_fd = prog_fd, .flags = BPF_TC_F_REPLACE);
	int err;

	err = bpf_tc_hook_create(&hook);
	if (err && err != -EEXIST)
		return err;
	return bpf_tc_attach(&hook, &opts);
}

int fw_dp_attach(struct fw_dp *dp, int ifindex)
{
	char name[IF_NAMESIZE] = "?";
	int err;

	/* ingress first: it is the one that enforces */
	err = attach_one(ifindex, BPF_TC_INGRESS, dp->from_sandbox_fd);
	if (!err)
		err = attach_one(ifindex, BPF_TC_EGRESS, dp->to_sandbox_fd);
	if (err) {
		if_indextoname(ifindex, name);
		fw_err("can't attach to %s (ifindex %d): %s", name, ifindex, strerror(-err));
	}
	return err;
}

static int detach_one(int ifindex, enum bpf_tc_attach_point where)
{
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = where);
	LIBBPF_OPTS(bpf_tc_opts, opts, .handle = FW_TC_HANDLE, .priority = FW_TC_PRIORITY);

	return bpf_tc_detach(&hook, &opts);
}

int fw_dp_detach(int ifindex)
{
	int e1 = detach_one(ifindex, BPF_TC_INGRESS);
	int e2 = detach_one(ifindex, BPF_TC_EGRESS);

	if (e1 && e1 != -ENOENT)
		return e1;
	if (e2 && e2 != -ENOENT)
		return e2;
	return e1 == -ENOENT && e2 == -ENOENT ? -ENOENT : 0;
}

bool fw_dp_attached(int ifindex)
{
	LIBBPF_OPTS(bpf_tc_hook, hook, .ifindex = ifindex, .attach_point = BPF_TC_INGRESS);
	LIBBPF_OPTS(bpf_tc_opts, opts, .handle = FW_TC_HANDLE, .priority = FW_TC_PRIORITY);

	return bpf_tc_query(&hook, &opts) == 0;
}
