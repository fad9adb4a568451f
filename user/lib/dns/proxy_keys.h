/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The DNS proxy's configuration keys (dns.*): struct fw_dnsp_config's
 * fields that fastwalld's file sets, with their bounds and defaults
 * (common/cfgkeys.h). fw_dnsp_config_init takes its defaults from here. */
#ifndef FW_DNSPROXY_KEYS_H
#define FW_DNSPROXY_KEYS_H

#include "common/cfgkeys.h"

extern const struct fw_cfgtable fw_dnsp_keys;

#endif /* FW_DNSPROXY_KEYS_H */
