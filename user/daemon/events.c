// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fastwalld's events and audit trail: the data path's deny and sampled
 * allow events from its ring, the DNS proxy's decisions and the
 * registry's subject changes, each to the audit trail, the monitor
 * socket, or both. */
#include <arpa/inet.h>
#include <net/if.h>
#include <stdio.h>
#include <time.h>

#include "common/addr.h"
#include "common/log.h"
#include "daemon.h"

static const char *proto_name(__u8 proto)
{
	switch (proto) {
	case 1:
		return "icmp";
	case 6:
		return "tcp";
	case 17:
		return "udp";
	case 58:
		return "icmpv6";
	}
	return "ip";
}

static struct fw_monitor *monitor_of(const struct fw_daemon *d)
{
	return __atomic_load_n(&d->monitor, __ATOMIC_ACQUIRE);
}

static __u64 realtime_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (__u64)ts.tv_sec * FW_NSEC_PER_SEC + (__u64)ts.tv_nsec;
}

/* A deny (audit trail, monitor) or a sampled allow (monitor) from the
 * data path's ring. */
int on_event(void *ctx, void *data, size_t len)
{
	struct fw_daemon *d = ctx;
	const struct fw_event *ev = data;
	char src[FW_ADDR_STRLEN], dst[FW_ADDR_STRLEN], ifname[IF_NAMESIZE] = "?";
	char name[FW_NAME_LEN], sport[8], dport[8];
	struct fw_monitor *m = monitor_of(d);
	enum fw_mon_kind kind;

	if (len < sizeof(*ev) || (ev->type != FW_EVENT_DROP && ev->type != FW_EVENT_ALLOW))
		return 0;
	kind = ev->type == FW_EVENT_DROP ? FW_MON_DROP : FW_MON_ALLOW;
	if (ev->suppressed)
		__atomic_store_n(&d->events_suppressed, d->events_suppressed + ev->suppressed,
				 __ATOMIC_RELAXED);
	if (kind == FW_MON_ALLOW && !fw_monitor_wants(m, kind))
		return 0;
	fw_reg_name_of(&d->reg, ev->subject, name, sizeof(name));
	if_indextoname(ev->ifindex, ifname);
	if (fw_monitor_wants(m, kind)) {
		struct fw_mon_event me = {
			.kind = kind,
			.time_ns = realtime_ns(),
			.subject = ev->subject,
			.name = name,
			.reason = fw_reason_name(ev->reason),
			.src = ev->src,
			.dst = ev->dst,
			.sport = ntohs(ev->sport),
			.dport = ntohs(ev->dport),
			.proto = ev->proto,
			.ifname = ifname,
			.suppressed = ev->suppressed,
			.sample = d->kcfg.allow_sample ? d->kcfg.allow_sample : 1,
		};

		fw_monitor_publish(m, &me);
	}
	if (kind != FW_MON_DROP)
		return 0;
	fw_addr_str(&ev->src, src, sizeof(src));
	fw_addr_str(&ev->dst, dst, sizeof(dst));
	snprintf(sport, sizeof(sport), "%u", ntohs(ev->sport));
	snprintf(dport, sizeof(dport), "%u", ntohs(ev->dport));
	fw_audit("deny", (const char *[]){"subject", name, "reason", fw_reason_name(ev->reason),
					  "proto", proto_name(ev->proto), "src", src, "sport",
					  sport, "dst", dst, "dport", dport, "if", ifname, NULL});
	if (ev->suppressed)
		fw_info("events of subject=%s suppressed by rate limit: %llu", name[0] ? name : "-",
			(unsigned long long)ev->suppressed);
	return 0;
}

void on_events(struct fw_loop *l, int fd, __u32 events, void *ctx)
{
	struct fw_daemon *d = ctx;

	(void)l;
	(void)fd;
	(void)events;
	ring_buffer__consume(d->events);
}

static const char *qtype_name(__u16 qtype, char *buf, size_t len)
{
	switch (qtype) {
	case FW_DNS_TYPE_A:
		return "A";
	case FW_DNS_TYPE_AAAA:
		return "AAAA";
	case FW_DNS_TYPE_CNAME:
		return "CNAME";
	}
	snprintf(buf, len, "TYPE%u", qtype);
	return buf;
}

/* A denied query, in the audit trail like the data plane's denies. */
void on_dns_event(void *ctx, const struct fw_learn_event *ev)
{
	char client[FW_ADDR_STRLEN], type[16];
	const char *who = ev->name && ev->name[0] ? ev->name : "-";
	const char *reason = fw_dns_reason_name(ev->reason);

	(void)ctx;
	fw_addr_str(ev->client, client, sizeof(client));
	fw_audit("deny",
		 (const char *[]){"subject", who, "reason", reason, "name",
				  ev->qname[0] ? ev->qname : ".", "type",
				  qtype_name(ev->qtype, type, sizeof(type)), "src", client, NULL});
	if (ev->suppressed)
		fw_info("events of subject=%s suppressed by rate limit: %llu", who,
			(unsigned long long)ev->suppressed);
}

bool dns_monitor_wants(void *ctx)
{
	return fw_monitor_wants(monitor_of(ctx), FW_MON_DNS);
}

/* Every DNS decision, for the monitor (from the proxy's threads). */
void on_dns_monitor(void *ctx, const struct fw_learn_event *ev)
{
	struct fw_mon_event me = {
		.kind = FW_MON_DNS,
		.time_ns = realtime_ns(),
		.subject = ev->subject,
		.name = ev->name,
		.src = *ev->client,
		.qname = ev->qname,
		.qtype = ev->qtype,
		.allowed = ev->allowed,
		.rcode = ev->rcode,
		.reason = fw_dns_reason_name(ev->reason),
	};

	for (__u32 i = 0; i < ev->nlearned && i < FW_MON_MAX_LEARNED; i++)
		me.learned[me.nlearned++] = ev->learned[i].ip;
	fw_monitor_publish(monitor_of(ctx), &me);
}

/* A subject's change in the kernel, in the audit trail. */
void on_subject_change(void *ctx, const struct fw_reg_change *c)
{
	char old_id[12], id[12], hex[5][20];
	const __u64 v[5] = {c->fence_hash, c->old_policy, c->policy, c->old_domains, c->domains};
	const char *h[5];

	/* a process sandbox's vault goes with it (an actions subject's goes
	 * with REMOVE_BINDING): a later run of the same name gets none */
	if (!strcmp(c->what, "removed") && c->origin == FW_ORIGIN_PROCESS &&
	    ((struct fw_daemon *)ctx)->actions_on)
		fw_vault_store_clear_uid(((struct fw_daemon *)ctx)->actions.vaults, c->name);
	/* the layer-7 proxy's copy of its vault follows its id */
	l7_on_subject(ctx, c);
	snprintf(old_id, sizeof(old_id), "%u", c->old_id);
	snprintf(id, sizeof(id), "%u", c->id);
	for (int i = 0; i < 5; i++) {
		snprintf(hex[i], sizeof(hex[i]), "%016llx", (unsigned long long)v[i]);
		h[i] = v[i] ? hex[i] : "-";
	}
	fw_audit("subject", (const char *[]){"uid",
					     c->name,
					     "change",
					     c->what,
					     "old_id",
					     old_id,
					     "id",
					     id,
					     "fence",
					     h[0],
					     "old_policy",
					     h[1],
					     "policy",
					     h[2],
					     "old_domains",
					     h[3],
					     "domains",
					     h[4],
					     "state",
					     c->state == FW_STATE_DENYING ? "denying" : "active",
					     "origin",
					     c->origin == FW_ORIGIN_STATIC    ? "static"
					     : c->origin == FW_ORIGIN_ACTIONS ? "protocol"
									      : "process",
					     NULL});
}
