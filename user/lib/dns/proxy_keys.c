// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* The dns.* keys of the proxy engine (dns/proxy_keys.h). */
#include <errno.h>

#include "dns/proxy.h"
#include "dns/proxy_keys.h"

/* the data plane rewrites 53 to the proxy's port, and 853 is DoT's */
static int check_port(const char *name, const char *s, unsigned long long v, char *msg,
		      size_t msglen)
{
	(void)s;
	if (v == 53 || v == 853) {
		snprintf(msg, msglen, "%s must not be 53 or 853", name);
		return -EINVAL;
	}
	return 0;
}

#define F(m) FW_CK_FIELD(struct fw_dnsp_config, m)

static const struct fw_cfgkey keys[] = {
	{.key = "port",
	 .type = FW_CK_UINT,
	 F(port),
	 .min = 1,
	 .max = 65535,
	 .def = 15353,
	 .check = check_port,
	 .type_doc = "1-65535, not 53 or 853",
	 .doc = "the proxy's UDP and TCP port on every pod address; the data plane rewrites port "
		"53 to it and back",
	 .reload = FW_CK_RESTART},
	{.key = "timeout",
	 .type = FW_CK_DURATION,
	 F(timeout_ns),
	 .min = 1,
	 .max = 60,
	 .def = 5,
	 .scale = FW_NSEC_PER_SEC,
	 .doc = "per upstream exchange",
	 .reload = FW_CK_RESTART},
	{.key = "probe_interval",
	 .type = FW_CK_DURATION,
	 F(probe_interval_ns),
	 .min = 0,
	 .max = 3600,
	 .def = 10,
	 .scale = FW_NSEC_PER_SEC,
	 .doc = "health probe of each upstream (`. NS`); failing upstreams are tried after "
		"healthy ones. 0: no probes",
	 .reload = FW_CK_RESTART},
	{.key = "workers",
	 .type = FW_CK_UINT,
	 F(workers),
	 .min = 1,
	 .max = FW_DNSP_MAX_WORKERS,
	 .def = 2,
	 .doc = "proxy threads (each with its own sockets, `SO_REUSEPORT`)",
	 .reload = FW_CK_RESTART},
	{.key = "max_tcp_clients",
	 .type = FW_CK_UINT,
	 F(max_tcp_clients),
	 .min = 1,
	 .max = 65536,
	 .def = 256,
	 .doc = "open client TCP connections, all workers; when all are taken, a new connection "
		"evicts the least recently active connection of the client address holding the "
		"most (if it holds at least two more than the newcomer), else it is closed at "
		"once",
	 .reload = FW_CK_RESTART},
	{.key = "max_tcp_per_client",
	 .type = FW_CK_UINT,
	 F(max_tcp_per_client),
	 .min = 1,
	 .max = 65536,
	 .def = 16,
	 .doc = "open client TCP connections per client address (one sandbox address); more are "
		"closed at once",
	 .reload = FW_CK_RESTART},
	{.key = "case_randomize",
	 .type = FW_CK_BOOL,
	 F(case_randomize),
	 .def = 0,
	 .doc = "0x20: send each query name upstream with its letters in a random case and take "
		"only an answer in that case ([dns.md](dns.md)); only for upstreams that echo the "
		"question's case",
	 .reload = FW_CK_RESTART},
	{.key = "tcp_query_timeout",
	 .type = FW_CK_DURATION,
	 F(tcp_idle_ns),
	 .min = 1,
	 .max = 3600,
	 .def = 10,
	 .scale = FW_NSEC_PER_SEC,
	 .doc = "a client TCP connection that has not completed a query (and has none in flight "
		"and no answer being written) for this long since it opened or since its last "
		"answer is closed; bytes of an unfinished query do not count",
	 .reload = FW_CK_RESTART},
};

const struct fw_cfgtable fw_dnsp_keys = FW_CK_TABLE("dns", keys);
