/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* The port of a pod's policy handler, the Sandbox Actions endpoint on
 * the pod's loopback: fastwalld listens there by default (actions.listen)
 * and the gateway never forwards a request to it (route scopes and service
 * hostnames refuse it). The one definition of that number. */
#ifndef FW_GATEWAY_POLICY_PORT_H
#define FW_GATEWAY_POLICY_PORT_H

#define FW_POLICY_PORT	   18080
#define FW_POLICY_PORT_STR "18080"

#endif /* FW_GATEWAY_POLICY_PORT_H */
