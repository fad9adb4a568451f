// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* STUB, until the data path's layer-7 API is merged (see l7_dp.h): weak
 * definitions the real ones replace. They keep fastwall_config's FW_CF_L7*
 * flags (read, change, write back, on the event loop's thread, as
 * apply_datapath writes it); fastwall_l7_ports and fastwall_l7_nat are
 * not in this data plane yet, so the ports and the collection do nothing. */
#include <errno.h>

#include <bpf/bpf.h>

#include "l7_dp.h"

static int config_flags(struct fw_dp *dp, __u32 set, __u32 clear)
{
	struct fw_config c;
	__u32 key = 0;

	if (bpf_map_lookup_elem(dp->config_fd, &key, &c))
		return -errno;
	c.flags = (c.flags & ~clear) | set;
	return bpf_map_update_elem(dp->config_fd, &key, &c, BPF_ANY) ? -errno : 0;
}

__attribute__((weak)) int fw_dp_l7_apply(struct fw_dp *dp, const struct fw_dp_l7 *l7)
{
	if (!l7)
		return config_flags(dp, 0, FW_CF_L7 | FW_CF_L7_QUIC | FW_CF_L7_UP);
	return config_flags(dp, FW_CF_L7 | (l7->quic_allowed ? FW_CF_L7_QUIC : 0),
			    FW_CF_L7 | FW_CF_L7_QUIC);
}

__attribute__((weak)) int fw_dp_l7_set_up(struct fw_dp *dp, bool up)
{
	return config_flags(dp, up ? FW_CF_L7_UP : 0, FW_CF_L7_UP);
}

__attribute__((weak)) int fw_dp_l7_gc(struct fw_dp *dp, __u64 now_ns, __u64 idle_ns,
				      size_t *deleted)
{
	(void)dp;
	(void)now_ns;
	(void)idle_ns;
	if (deleted)
		*deleted = 0;
	return 0;
}
