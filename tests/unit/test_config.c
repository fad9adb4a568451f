// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/* fastwalld's YAML configuration: a complete file read back field by field,
 * defaults, and a table of mistakes each reported at the right line with
 * the offending value. */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/addr.h"
#include "config/config.h"
#include "datapath/bandwidth.h"

static struct fw_cfg cfg;
static char err[FW_CFG_ERR_LEN];

static void setup(void)
{
	fw_cfg_init(&cfg);
	err[0] = '\0';
}

static void teardown(void)
{
	fw_cfg_free(&cfg);
}

TestSuite(config, .init = setup, .fini = teardown);

static int load(const char *yaml)
{
	fw_cfg_free(&cfg);
	return fw_cfg_load_buffer(yaml, strlen(yaml), "t.yaml", &cfg, err, sizeof(err));
}

static void expect_ip(const struct fw_ip *ip, const char *text)
{
	char buf[FW_ADDR_STRLEN];

	cr_expect_str_eq(fw_addr_str(ip, buf, sizeof(buf)), text);
}

static void expect_prefix(const struct fw_ip *net, __u32 plen, const char *text)
{
	char buf[FW_ADDR_STRLEN];

	cr_expect_str_eq(fw_prefix_str(net, plen, buf, sizeof(buf)), text);
}

static const char full[] = "# every key there is\n"
			   "log_level: debug\n"
			   "datapath:\n"
			   "  bpffs: /sys/fs/bpf/fw-test\n"
			   "  interfaces: [\"veth-*\", tap0]\n"
			   "  bridges: [br0, br1]\n"
			   "  local_addresses: [10.42.0.1, \"fd00::1\"]\n"
			   "  local_ports: [\"tcp/8080\", \"udp/5353\"]\n"
			   "  doh:\n"
			   "    block: true\n"
			   "    blocklist: [192.0.2.53, \"2001:db8::53/128\", 198.51.100.0/24]\n"
			   "  events: { rate: 50, burst: 10 }\n"
			   "  pod_flow_timeout: 120\n"
			   "  fragment_timeout: 2\n"
			   "overlay:\n"
			   "  allow: [\"198.51.100.10\"]\n"
			   "  deny: [\"192.0.2.66\", \"*.bad.example\"]\n"
			   "subjects:\n"
			   "  - name: sandbox-a\n"
			   "    addresses: [10.42.0.2, \"fd00::2\"]\n"
			   "    interface: veth-a\n"
			   "    gateway: [10.42.0.1, \"fd00::1\"]\n"
			   "    private_cidr: [10.42.0.0/24, \"fd00::/64\"]\n"
			   "    policy:\n"
			   "      defaultAction: allow\n"
			   "      comment: ignored, as the reference does\n"
			   "      egress:\n"
			   "        - action: deny\n"
			   "          target: 203.0.113.0/24\n"
			   "          ports: [80, 443]\n"
			   "          note: also ignored\n"
			   "        - action: ALLOW\n"
			   "          target: \"*.example.com\"\n"
			   "        - target: evil.example.com\n"
			   "  - name: sandbox_b.2\n"
			   "    addresses: 10.42.0.3\n"
			   "    gateway: 10.42.0.1\n"
			   "    private_cidr: 10.42.0.0/24\n"
			   "    state: denying\n";

Test(config, full_file)
{
	const struct fw_subject_spec *a, *b;

	cr_assert_eq(load(full), 0, "%s", err);
	cr_expect_eq(cfg.log_level, FW_LOG_DEBUG);
	cr_expect_str_eq(cfg.bpffs, "/sys/fs/bpf/fw-test");
	cr_assert_eq(cfg.ninterfaces, 2);
	cr_expect_str_eq(cfg.interfaces[0], "veth-*");
	cr_expect_str_eq(cfg.interfaces[1], "tap0");
	cr_assert_eq(cfg.nbridges, 2);
	cr_expect_str_eq(cfg.bridges[1], "br1");
	cr_assert_eq(cfg.nlocal, 2);
	expect_ip(&cfg.local[0], "10.42.0.1");
	expect_ip(&cfg.local[1], "fd00::1");
	cr_assert_eq(cfg.nlocal_ports, 2);
	cr_expect_eq(cfg.local_ports[0].proto, 6);
	cr_expect_eq(cfg.local_ports[0].port, htons(8080));
	cr_expect_eq(cfg.local_ports[1].proto, 17);
	cr_expect_eq(cfg.local_ports[1].port, htons(5353));
	cr_expect_eq(cfg.doh_mode, FW_DOH_LIST);
	cr_assert_eq(cfg.ndoh_blocklist, 3);
	expect_prefix(&cfg.doh_blocklist[0].net, cfg.doh_blocklist[0].plen, "192.0.2.53/32");
	expect_prefix(&cfg.doh_blocklist[1].net, cfg.doh_blocklist[1].plen, "2001:db8::53/128");
	expect_prefix(&cfg.doh_blocklist[2].net, cfg.doh_blocklist[2].plen, "198.51.100.0/24");
	cr_expect_eq(cfg.event_rate, 50);
	cr_expect_eq(cfg.event_burst, 10);
	cr_expect_eq(cfg.pod_flow_timeout_ns, 120ULL * 1000000000);
	cr_expect_eq(cfg.frag_timeout_ns, 2ULL * 1000000000);

	/* deny list first although allow came first in the file */
	cr_assert_eq(cfg.overlay.nrules, 3);
	cr_expect_eq(cfg.overlay.default_action, FW_ACTION_DENY);
	cr_expect_eq(cfg.overlay.rules[0].action, FW_ACTION_DENY);
	cr_expect_eq(cfg.overlay.rules[0].kind, FW_TARGET_IP);
	cr_expect_eq(cfg.overlay.rules[1].kind, FW_TARGET_WILDCARD);
	cr_expect_str_eq(cfg.overlay.rules[1].domain, "bad.example");
	cr_expect_eq(cfg.overlay.rules[2].action, FW_ACTION_ALLOW);
	expect_ip(&cfg.overlay.rules[2].addr, "198.51.100.10");

	cr_assert_eq(cfg.nsubjects, 2);
	a = &cfg.subjects[0];
	cr_expect_str_eq(a->name, "sandbox-a");
	cr_assert_eq(a->naddrs, 2);
	expect_ip(&a->addrs[0], "10.42.0.2");
	expect_ip(&a->addrs[1], "fd00::2");
	cr_expect_str_eq(a->ifname, "veth-a");
	cr_expect(a->has_gateway[FW_FAM_V4]);
	cr_expect(a->has_gateway[FW_FAM_V6]);
	expect_ip(&a->gateway[FW_FAM_V4], "10.42.0.1");
	expect_ip(&a->gateway[FW_FAM_V6], "fd00::1");
	cr_expect(a->has_private[FW_FAM_V4]);
	cr_expect(a->has_private[FW_FAM_V6]);
	expect_prefix(&a->private_net[FW_FAM_V4].net, a->private_net[FW_FAM_V4].plen,
		      "10.42.0.0/24");
	expect_prefix(&a->private_net[FW_FAM_V6].net, a->private_net[FW_FAM_V6].plen, "fd00::/64");
	cr_expect_eq(a->state, FW_STATE_ACTIVE);
	cr_expect_eq(a->policy.default_action, FW_ACTION_ALLOW);
	cr_assert_eq(a->policy.nrules, 3);
	cr_expect_eq(a->policy.rules[0].action, FW_ACTION_DENY);
	cr_expect_eq(a->policy.rules[0].kind, FW_TARGET_CIDR);
	cr_assert_eq(a->policy.rules[0].nports, 2);
	cr_expect_eq(a->policy.rules[0].ports[0], 80);
	cr_expect_eq(a->policy.rules[0].ports[1], 443);
	cr_expect_eq(a->policy.rules[1].action, FW_ACTION_ALLOW);
	cr_expect_eq(a->policy.rules[1].kind, FW_TARGET_WILDCARD);
	cr_expect_eq(a->policy.rules[2].action, FW_ACTION_DENY, "missing action is deny");
	cr_expect_eq(a->policy.rules[2].kind, FW_TARGET_DOMAIN);

	b = &cfg.subjects[1];
	cr_expect_str_eq(b->name, "sandbox_b.2");
	cr_assert_eq(b->naddrs, 1);
	expect_ip(&b->addrs[0], "10.42.0.3");
	cr_expect_str_eq(b->ifname, "");
	cr_expect(b->has_gateway[FW_FAM_V4]);
	cr_expect_not(b->has_gateway[FW_FAM_V6]);
	cr_expect_not(b->has_private[FW_FAM_V6]);
	cr_expect_eq(b->state, FW_STATE_DENYING);
	cr_expect_eq(b->policy.default_action, FW_ACTION_DENY);
	cr_expect_eq(b->policy.nrules, 0);
}

static void expect_defaults(void)
{
	cr_expect_str_eq(cfg.bpffs, FW_DEFAULT_BPFFS);
	cr_expect_eq(cfg.log_level, FW_LOG_INFO);
	cr_expect_eq(cfg.ninterfaces, 0);
	cr_expect_eq(cfg.nbridges, 0);
	cr_expect_eq(cfg.nlocal, 0);
	cr_expect_eq(cfg.nlocal_ports, 0);
	cr_expect_eq(cfg.doh_mode, FW_DOH_OFF);
	cr_expect_eq(cfg.ndoh_blocklist, 0);
	cr_expect_eq(cfg.event_rate, 100);
	cr_expect_eq(cfg.event_burst, 200);
	cr_expect_eq(cfg.pod_flow_timeout_ns, 300ULL * 1000000000);
	cr_expect_eq(cfg.frag_timeout_ns, 5ULL * 1000000000);
	cr_expect_eq(cfg.overlay.nrules, 0);
	cr_expect_eq(cfg.overlay.default_action, FW_ACTION_DENY);
	cr_expect_eq(cfg.nsubjects, 0);
	cr_expect_null(cfg.subjects);
}

Test(config, empty_inputs_give_defaults)
{
	static const char *const empty[] = {
		"",
		"\n",
		"# only a comment\n",
		"---\n",
		"~\n",
		"---\n...\n",
		"{}\n",
		"datapath:\noverlay:\nsubjects:\n",
		"datapath: {}\nsubjects: []\n",
	};

	for (size_t i = 0; i < sizeof(empty) / sizeof(empty[0]); i++) {
		cr_assert_eq(load(empty[i]), 0, "\"%s\": %s", empty[i], err);
		expect_defaults();
	}
}

Test(config, doh_modes)
{
	cr_assert_eq(load("datapath:\n  doh: {block: true}\n"), 0, "%s", err);
	cr_expect_eq(cfg.doh_mode, FW_DOH_STRICT);
	cr_assert_eq(load("datapath:\n  doh: {block: true, blocklist: []}\n"), 0, "%s", err);
	cr_expect_eq(cfg.doh_mode, FW_DOH_STRICT);
	cr_assert_eq(load("datapath:\n  doh: {block: false, blocklist: [192.0.2.1]}\n"), 0, "%s",
		     err);
	cr_expect_eq(cfg.doh_mode, FW_DOH_OFF);
	cr_expect_eq(cfg.ndoh_blocklist, 1, "the list is kept while off");
	cr_assert_eq(load("datapath:\n  doh: {blocklist: 192.0.2.1}\n"), 0, "%s", err);
	cr_expect_eq(cfg.doh_mode, FW_DOH_OFF);
	cr_assert_eq(load("datapath:\n  doh: {block: True, blocklist: 192.0.2.1}\n"), 0, "%s", err);
	cr_expect_eq(cfg.doh_mode, FW_DOH_LIST);
}

Test(config, events_zero_rate)
{
	cr_assert_eq(load("datapath:\n  events:\n    rate: 0\n"), 0, "%s", err);
	cr_expect_eq(cfg.event_rate, 0);
	cr_expect_eq(cfg.event_burst, 200);
}

Test(config, policy_null_and_empty_default)
{
	cr_assert_eq(load("subjects:\n"
			  "  - name: a\n"
			  "    addresses: 10.0.0.2\n"
			  "    policy:\n"
			  "      defaultAction: \"\"\n"
			  "      egress:\n"
			  "  - name: b\n"
			  "    addresses: 10.0.0.3\n"
			  "    policy:\n"),
		     0, "%s", err);
	cr_assert_eq(cfg.nsubjects, 2);
	cr_expect_eq(cfg.subjects[0].policy.default_action, FW_ACTION_DENY);
	cr_expect_eq(cfg.subjects[0].policy.nrules, 0);
	cr_expect_eq(cfg.subjects[1].policy.nrules, 0);
}

struct bad_case {
	const char *yaml;
	int line;
	const char *needle;
};

static const struct bad_case bad[] = {
	/* shape of the document */
	{"- a\n- b\n", 1, "must be a mapping"},
	{"just text\n", 1, "value 'just text'"},
	{"a: 1\n---\nb: 2\n", 2, "more than one YAML document"},
	{"log_level: info\nlog_level: debug\n", 2, "duplicate key"},
	{"log_level: info\nfoo: bar\n", 2, "unknown key"},
	{"log_level: info\nfoo: bar\n", 2, "value 'foo'"},
	{"? [a, b]\n: c\n", 1, "key must be a scalar"},
	/* syntax */
	{"a: b\nc: [d\n", 3, "invalid YAML"},
	{"a: b\n  c: d\n", 2, "invalid YAML"},
	{"a: \"unterminated\n", 2, "invalid YAML"},
	{"a:\tb\n\tc: d\n", 2, "invalid YAML"},
	/* aliases and anchors */
	{"x: &anc 1\ny: *anc\n", 1, "anchors are not supported"},
	{"x: &anc 1\n", 1, "value 'anc'"},
	{"subjects: &s []\n", 1, "anchors are not supported"},
	{"a: 1\nb: *nope\n", 2, "aliases are not supported (value 'nope')"},
	/* depth */
	{"a: [[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]\n", 1,
	 "nesting too deep"},
	/* log level */
	{"log_level: verbose\n", 1, "value 'verbose'"},
	{"log_level: [info]\n", 1, "log_level must be a scalar, not a list"},
	/* datapath */
	{"datapath: 3\n", 1, "datapath must be a mapping, not a scalar"},
	{"datapath:\n  bpfs: /x\n", 2, "unknown key in datapath (value 'bpfs')"},
	{"datapath:\n  bpffs: relative/path\n", 2, "absolute path"},
	{"datapath:\n  interfaces: {a: b}\n", 2, "interfaces must be a list"},
	{"datapath:\n  interfaces:\n    - eth0\n    - [x]\n", 4, "must be a scalar"},
	{"datapath:\n  interfaces: [\"a b\"]\n", 2, "value 'a b'"},
	{"datapath:\n  interfaces: [averyveryverylongname0]\n", 2,
	 "value 'averyveryverylongname0'"},
	{"datapath:\n  interfaces: [eth0, eth0]\n", 2, "duplicate entry"},
	{"datapath:\n  bridges: [\"br*\"]\n", 2, "value 'br*'"},
	{"datapath:\n  local_addresses: [10.0.0.1/24]\n", 2, "value '10.0.0.1/24'"},
	{"datapath:\n  local_addresses:\n    - 10.0.0.1\n    - 10.0.0.1\n", 4,
	 "duplicate local address"},
	{"datapath:\n  local_ports: [\"sctp/80\"]\n", 2, "value 'sctp/80'"},
	{"datapath:\n  local_ports: [\"tcp/0\"]\n", 2, "value 'tcp/0'"},
	{"datapath:\n  local_ports: [\"tcp/65536\"]\n", 2, "value 'tcp/65536'"},
	{"datapath:\n  local_ports: [\"tcp/\"]\n", 2, "value 'tcp/'"},
	{"datapath:\n  local_ports: [\"tcp/80x\"]\n", 2, "value 'tcp/80x'"},
	{"datapath:\n  local_ports: [8080]\n", 2, "value '8080'"},
	{"datapath:\n  local_ports: [tcp/53, tcp/53]\n", 2, "duplicate local port"},
	{"datapath:\n  doh:\n    block: yes\n", 3, "true or false (value 'yes')"},
	{"datapath:\n  doh:\n    blok: true\n", 3, "unknown key in doh"},
	{"datapath:\n  doh:\n    blocklist: [300.1.1.1]\n", 3, "value '300.1.1.1'"},
	{"datapath:\n  doh:\n    blocklist: [example.com]\n", 3, "value 'example.com'"},
	{"datapath:\n  doh:\n    blocklist: [10.0.0.0/8, 10.1.0.0/8]\n", 3, "duplicate doh"},
	{"datapath:\n  events:\n    rate: -1\n", 3, "non-negative integer (value '-1')"},
	{"datapath:\n  events:\n    rate: 1.5\n", 3, "value '1.5'"},
	{"datapath:\n  events:\n    rate: 99999999999999999999999\n", 3, "between 0 and"},
	{"datapath:\n  events:\n    burst: 0\n", 3, "value '0'"},
	{"datapath:\n  events:\n    rates: 1\n", 3, "unknown key in events"},
	{"datapath:\n  events: [1, 2]\n", 2, "events must be a mapping"},
	{"datapath:\n  pod_flow_timeout: 5m\n", 2, "value '5m'"},
	{"datapath:\n  pod_flow_timeout: 0\n", 2, "value '0'"},
	{"datapath:\n  pod_flow_timeout: \"\"\n", 2, "non-negative integer"},
	{"datapath:\n  fragment_timeout: 0x10\n", 2, "value '0x10'"},
	{"datapath:\n  fragment_timeout: 100000\n", 2, "between 1 and 300"},
	/* overlay */
	{"overlay: [a]\n", 1, "overlay must be a mapping"},
	{"overlay:\n  denny: [1.2.3.4]\n", 2, "unknown key in overlay (value 'denny')"},
	{"overlay:\n  deny:\n    - 1.2.3.4\n    - \"*\"\n", 4, "bare wildcard"},
	{"overlay:\n  allow: [\"10.0.0.0/33\"]\n", 2, "value '10.0.0.0/33'"},
	{"overlay:\n  allow: [{a: b}]\n", 2, "must be a scalar, not a mapping"},
	/* subjects */
	{"subjects: {a: b}\n", 1, "subjects must be a list"},
	{"subjects:\n  - sandbox\n", 2,
	 "a subject must be a mapping, not a scalar (value 'sandbox')"},
	{"subjects:\n  - addresses: 10.0.0.2\n", 2, "has no name"},
	{"subjects:\n  - name: \"\"\n    addresses: 10.0.0.2\n", 2, "invalid subject name"},
	{"subjects:\n  - name: a b\n    addresses: 10.0.0.2\n", 2, "value 'a b'"},
	{"subjects:\n  - name: a\n", 2, "subject \"a\" has no addresses"},
	{"subjects:\n  - name: a\n    addresses: []\n", 3, "has no addresses"},
	{"subjects:\n  - name: a\n    addresses: [1,2,3,4,5,6,7,8,9]\n", 3, "too many addresses"},
	{"subjects:\n  - name: a\n    address: 10.0.0.2\n", 3, "unknown key in subject"},
	{"subjects:\n  - name: a\n    addresses: 10.0.0.2/32\n", 3, "value '10.0.0.2/32'"},
	{"subjects:\n  - name: a\n    addresses: [10.0.0.2, 10.0.0.3, 10.0.0.2]\n", 3,
	 "duplicate address in subject \"a\""},
	{"subjects:\n"
	 "  - name: a\n"
	 "    addresses: [10.0.0.2, \"fd00::2\"]\n"
	 "  - name: b\n"
	 "    addresses:\n"
	 "      - 10.0.0.9\n"
	 "      - \"FD00:0::2\"\n",
	 7, "already belongs to subject \"a\""},
	{"subjects:\n"
	 "  - name: a\n"
	 "    addresses: 10.0.0.2\n"
	 "  - name: a\n"
	 "    addresses: 10.0.0.3\n",
	 4, "duplicate subject name \"a\""},
	{"subjects:\n  - name: a\n    addresses: 10.0.0.2\n    name: b\n", 4, "duplicate key"},
	{"subjects:\n  - name: a\n    addresses: 10.0.0.2\n    interface: \"veth*\"\n", 4,
	 "value 'veth*'"},
	{"subjects:\n  - name: a\n    addresses: 10.0.0.2\n    gateway: \"fd00::1\"\n", 4,
	 "IPv6 gateway but subject \"a\" has no IPv6 address"},
	{"subjects:\n  - name: a\n    addresses: 10.0.0.2\n    gateway: [10.0.0.1, 10.0.0.254]\n",
	 4, "more than one IPv4 gateway (value '10.0.0.254')"},
	{"subjects:\n  - name: a\n    addresses: 10.0.0.2\n    gateway: 10.0.0.2\n", 4,
	 "gateway is one of the subject's addresses"},
	{"subjects:\n  - name: a\n    addresses: 10.0.0.2\n    gateway: [1, 2, 3]\n", 4,
	 "too many gateways"},
	{"subjects:\n  - name: a\n    addresses: 10.0.0.2\n    gateway: gw\n", 4, "value 'gw'"},
	{"subjects:\n  - name: a\n    addresses: 10.0.0.2\n    private_cidr: \"fd00::/64\"\n", 4,
	 "IPv6 private_cidr"},
	{"subjects:\n  - name: a\n    addresses: 10.0.0.2\n"
	 "    private_cidr: [10.0.0.0/24, 10.0.0.0/16]\n",
	 4, "more than one IPv4 private_cidr"},
	{"subjects:\n  - name: a\n    addresses: 10.0.0.2\n    private_cidr: 0.0.0.0/0\n", 4,
	 "covers everything"},
	{"subjects:\n  - name: a\n    addresses: 10.0.0.2\n    private_cidr: 10.0.0.0/40\n", 4,
	 "value '10.0.0.0/40'"},
	{"subjects:\n  - name: a\n    addresses: 10.0.0.2\n    state: paused\n", 4,
	 "invalid state"},
	{"subjects:\n  - name: a\n    addresses: 10.0.0.2\n    mac: 02:00:00:00:00:01\n", 4,
	 "mac needs the subject's interface"},
	{"subjects:\n  - name: a\n    addresses: 10.0.0.2\n    interface: sb-a\n"
	 "    mac: 02:00:00:00:00\n",
	 5, "invalid MAC, expected six hex bytes like 02:00:5e:10:00:01 (value '02:00:00:00:00')"},
	{"subjects:\n  - name: a\n    addresses: 10.0.0.2\n    interface: sb-a\n"
	 "    mac: 02:00:00:00:00:0g\n",
	 5, "invalid MAC"},
	{"subjects:\n  - name: a\n    addresses: 10.0.0.2\n    interface: sb-a\n"
	 "    mac: 02-00-00-00-00-01\n",
	 5, "invalid MAC"},
	{"subjects:\n  - name: a\n    addresses: 10.0.0.2\n    interface: sb-a\n"
	 "    mac: 02:00:00:00:00:01:02\n",
	 5, "invalid MAC"},
	{"subjects:\n  - name: a\n    addresses: 10.0.0.2\n    interface: sb-a\n"
	 "    mac: 01:00:5e:00:00:01\n",
	 5, "mac must be a unicast, non-zero address"},
	{"subjects:\n  - name: a\n    addresses: 10.0.0.2\n    interface: sb-a\n"
	 "    mac: 00:00:00:00:00:00\n",
	 5, "mac must be a unicast, non-zero address"},
	{"subjects:\n  - name: a\n    addresses: 10.0.0.2\n    interface: sb-a\n"
	 "    mac: [02:00:00:00:00:01]\n",
	 5, "must be a scalar"},
	{"subjects:\n"
	 "  - { name: a, addresses: 10.0.0.2, interface: sb-a, mac: \"02:00:00:00:00:01\" }\n"
	 "  - { name: b, addresses: 10.0.0.3, interface: sb-b, mac: \"02:00:00:00:00:01\" }\n",
	 3, "subject \"b\" has the mac of subject \"a\" on another interface"},
	{"subjects:\n"
	 "  - { name: a, addresses: 10.0.0.2, interface: sb-a, mac: \"02:00:00:00:00:01\" }\n"
	 "  - { name: b, addresses: 10.0.0.3, interface: sb-a, mac: \"02:00:00:00:00:02\" }\n",
	 3, "gives interface sb-a another mac than subject \"a\""},
	/* policies */
	{"subjects:\n  - name: a\n    addresses: 10.0.0.2\n    policy: deny\n", 4,
	 "policy must be a mapping"},
	{"subjects:\n  - name: a\n    addresses: 10.0.0.2\n    policy:\n      defaultAction: "
	 "block\n",
	 5, "invalid action \"block\""},
	{"subjects:\n  - name: a\n    addresses: 10.0.0.2\n    policy:\n      egress: {a: b}\n", 5,
	 "egress rules must be a list"},
	{"subjects:\n  - name: a\n    addresses: 10.0.0.2\n    policy:\n      egress: [allow]\n", 5,
	 "egress rule must be a mapping"},
	{"subjects:\n  - name: a\n    addresses: 10.0.0.2\n    policy:\n      egress:\n"
	 "        - action: allow\n",
	 6, "has no target"},
	{"subjects:\n  - name: a\n    addresses: 10.0.0.2\n    policy:\n      egress:\n"
	 "        - action: allow\n          target:\n",
	 7, "empty target"},
	{"subjects:\n  - name: a\n    addresses: 10.0.0.2\n    policy:\n      egress:\n"
	 "        - target: example.com\n          action: permit\n",
	 7, "invalid action \"permit\", expected allow or deny (value 'permit')"},
	{"subjects:\n  - name: a\n    addresses: 10.0.0.2\n    policy:\n      egress:\n"
	 "        - target: \"a..b\"\n",
	 6, "value 'a..b'"},
	{"subjects:\n  - name: a\n    addresses: 10.0.0.2\n    policy:\n      egress:\n"
	 "        - target: \"a\\0b\"\n",
	 6, "NUL byte"},
	{"subjects:\n  - name: a\n    addresses: 10.0.0.2\n    policy:\n      egress:\n"
	 "        - target: example.com\n          ports: [80, 0]\n",
	 7, "between 1 and 65535 (value '0')"},
	{"subjects:\n  - name: a\n    addresses: 10.0.0.2\n    policy:\n      egress:\n"
	 "        - target: example.com\n          ports:\n            - 80\n            - http\n",
	 9, "value 'http'"},
	{"subjects:\n  - name: a\n    addresses: 10.0.0.2\n    policy:\n      egress:\n"
	 "        - target: example.com\n          ports: [443, 80, 443]\n",
	 7, "duplicate port 443"},
	{"subjects:\n  - name: a\n    addresses: 10.0.0.2\n    policy:\n      egress:\n"
	 "        - target: example.com\n          ports: 443\n",
	 7, "ports must be a list"},
	{"subjects:\n  - name: a\n    addresses: 10.0.0.2\n    policy:\n      egress:\n"
	 "        - target: example.com\n          target: other.com\n",
	 7, "duplicate key"},
	{"subjects:\n  - name: a\n    addresses: 10.0.0.2\n    policy:\n      egress:\n"
	 "        - target: [example.com]\n",
	 6, "target must be a scalar"},
	/* dns */
	{"dns:\n  port: 53\n", 2, "must not be 53 or 853"},
	{"dns:\n  max_connections_per_subject: 0\n", 2, "dns.max_connections_per_subject"},
	{"dns:\n  max_connections_per_subject: 1048577\n", 2, "dns.max_connections_per_subject"},
	{"dns:\n  port: 70000\n", 2, "dns.port"},
	{"dns:\n  upstreams: [\"resolver.example\"]\n", 2, "expected IP[:PORT]"},
	{"dns:\n  upstreams: [\"192.0.2.1:0\"]\n", 2, "invalid port"},
	{"dns:\n  upstreams: [\"[2001:db8::1\"]\n", 2, "invalid address"},
	{"dns:\n  lease: { min: 400, max: 360 }\n", 2, "dns.lease.min (400) is above"},
	{"dns:\n  lease: { min: 10 }\n  refresh_interval: 6\n", 2, "at most half of dns.lease.min"},
	{"dns:\n  workers: 0\n", 2, "dns.workers"},
	{"dns:\n  resolv_conf: etc/resolv.conf\n", 2, "absolute path"},
	{"dns:\n  redirect_all: maybe\n", 2, "dns.redirect_all"},
	{"dns:\n  lease: { ttl: 5 }\n", 2, "unknown key in dns.lease"},
	{"dns:\n  upstream: [192.0.2.1]\n", 2, "unknown key in dns"},
	/* processes */
	{"processes:\n  cgroup_parent: /abs\n", 2, "relative to cgroup_root"},
	{"processes:\n  cgroup_parent: a/../b\n", 2, "'..' component"},
	{"processes:\n  cgroup_parent: a//b\n", 2, "empty"},
	{"processes:\n  cgroup_parent: \"a b\"\n", 2, "a character other than"},
	{"processes:\n  cgroup_root: relative\n", 2, "absolute path"},
	{"processes:\n  sockets: /run/x\n", 2, "unknown key in processes"},
	{"processes:\n  run_group: \"wheel users\"\n", 2, "not a group name or number"},
	{"processes:\n  run_parent: a/../b\n", 2, "'..' component"},
	{"processes:\n  run_parent: /users\n", 2, "relative to cgroup_root"},
	{"subjects:\n  - name: a\n    cgroup: a\n", 1, "needs the processes section"},
	{"processes:\nsubjects:\n  - name: a\n    cgroup: a\n    addresses: [10.0.0.2]\n", 5,
	 "addresses is not for it"},
	{"processes:\nsubjects:\n  - name: a\n    cgroup: a\n    interface: sb-a\n", 5,
	 "interface is not for it"},
	{"processes:\nsubjects:\n  - name: a\n    cgroup: ../a\n", 4, "'..' component"},
	{"processes:\nsubjects:\n  - name: a\n    cgroup: [a]\n", 4, "cgroup must be a scalar"},
	{"processes:\nsubjects:\n  - { name: a, cgroup: x }\n  - { name: b, cgroup: x }\n", 1,
	 "the same cgroup"},
	{"processes:\nsubjects:\n  - name: a\n    addresses: [10.0.0.2]\n    keep_caps: true\n", 5,
	 "keep_caps is for a subject with a cgroup"},
	{"processes:\nsubjects:\n  - name: a\n    cgroup: a\n    keep_caps: sometimes\n", 5,
	 "subjects[].keep_caps must be true or false"},
	{"processes:\nsubjects:\n  - name: a\n    cgroup: a\n    keep_caps: [true]\n", 5,
	 "keep_caps must be a scalar"},
	/* guard */
	{"guard:\n  ports: [8443]\n", 2, "guard.interfaces: at least one interface"},
	{"guard:\n  interfaces: [eth0]\n", 2, "guard.ports: at least one port"},
	{"guard:\n  interfaces: [eth0]\n  ports: []\n", 3, "guard.ports: at least one port"},
	{"guard:\n  interfaces: [eth0]\n  ports: [0]\n", 3,
	 "guard.ports must be between 1 and 65535"},
	{"guard:\n  interfaces: [eth0]\n  ports: [65536]\n", 3, "value '65536'"},
	{"guard:\n  interfaces: [eth0]\n  ports: [https]\n", 3, "guard.ports"},
	{"guard:\n  interfaces: [eth0]\n  ports: [80, 80]\n", 3, "duplicate guard port"},
	{"guard:\n  interfaces: [\"eth*\"]\n  ports: [80]\n", 2, "guard.interfaces"},
	{"guard:\n  interfaces: [eth0]\n  ports: [80]\n  trusted: [10.0.0.0/33]\n", 4,
	 "invalid guard.trusted entry"},
	{"guard:\n  interfaces: [eth0]\n  ports: [80]\n  trusted: [\"fd00::/129\"]\n", 4,
	 "invalid guard.trusted entry"},
	{"guard:\n  interfaces: [eth0]\n  ports: [80]\n  trusted: [10.0.0.1, 10.0.0.1]\n", 4,
	 "duplicate guard.trusted"},
	{"guard:\n  interfaces: [eth0]\n  ports: [80]\n  mode: ebpf\n", 4, "guard.mode"},
	{"guard:\n  interfaces: [eth0]\n  ports: [80]\n  trust: [10.0.0.1]\n", 4,
	 "unknown key in guard"},
	/* bandwidth, and the limits of subjects */
	{"bandwidth:\n  mode: edt\n", 2, "bandwidth.interfaces: at least one"},
	{"bandwidth:\n  interfaces: [eth0]\n  mode: shape\n", 3, "bandwidth.mode"},
	{"bandwidth:\n  interfaces: [eth0]\n  horizon: 0\n", 3, "bandwidth.horizon"},
	{"bandwidth:\n  interfaces: [eth0]\n  rate: 5\n", 3, "unknown key in bandwidth"},
	{"subjects:\n  - name: a\n    addresses: [10.0.0.2]\n    policy:\n"
	 "      fastwallBandwidth: { rate: -5 }\n",
	 5, "fastwallBandwidth.rate"},
	{"subjects:\n  - name: a\n    addresses: [10.0.0.2]\n    policy:\n"
	 "      fastwallBandwidth: { rate: 0 }\n",
	 5, "fastwallBandwidth.rate"},
	{"subjects:\n  - name: a\n    addresses: [10.0.0.2]\n    policy:\n"
	 "      fastwallBandwidth: { rate: 12500000001 }\n",
	 5, "fastwallBandwidth.rate"},
	{"subjects:\n  - name: a\n    addresses: [10.0.0.2]\n    policy:\n"
	 "      fastwallBandwidth: { rate: 1000000, burst: 65535 }\n",
	 5, "fastwallBandwidth.burst"},
	{"subjects:\n  - name: a\n    addresses: [10.0.0.2]\n    policy:\n"
	 "      fastwallBandwidth: { burst: 1000000 }\n",
	 5, "rate (bytes per second) is required"},
	{"subjects:\n  - name: a\n    addresses: [10.0.0.2]\n    policy:\n"
	 "      fastwallBandwidth: { rate: 1000000, ceil: 2 }\n",
	 5, "ceil"},
	{"subjects:\n  - name: a\n    addresses: [10.0.0.2]\n    policy:\n"
	 "      fastwallBandwidth: fast\n",
	 5, "fastwallBandwidth must be"},
	/* l7 */
	{"l7:\n  enabled: yes\n", 2, "l7.enabled"},
	{"l7:\n  tls_ports: [443, 443]\n", 2, "duplicate port in l7.tls_ports"},
	{"l7:\n  tls_ports: [0]\n", 2, "l7.tls_ports must be between 1 and 65535"},
	{"l7:\n  tls_ports: [443, 80]\n", 2, "port 80 is in both"},
	{"l7:\n  proxy_tls_port: 15080\n", 2, "are both 15080"},
	{"l7:\n  proxy_http_port: 70000\n", 2, "l7.proxy_http_port"},
	{"l7:\n  cidr: block\n", 2, "l7.cidr"},
	{"l7:\n  user: \"a b\"\n", 2, "not a user name"},
	{"l7:\n  module: relative.so\n", 2, "l7.module"},
	{"l7:\n  workers: 0\n", 2, "l7.workers"},
	{"l7:\n  idle_timeout: 0\n", 2, "l7.idle_timeout"},
	{"l7:\n  enable: true\n", 2, "unknown key in l7"},
	{"l7:\n  enabled: true\n  proxy_http_port: 15353\n", 2, "may not be dns.port"},
	{"subjects:\n  - name: a\n    addresses: [10.0.0.2]\n    l7: maybe\n", 4,
	 "invalid l7 \"maybe\""},
	{"subjects:\n  - name: a\n    addresses: [10.0.0.2]\n    policy:\n"
	 "      fastwallL7: off\n    l7: on\n",
	 6, "disagree"},
	{"subjects:\n  - name: a\n    addresses: [10.0.0.2]\n    policy:\n"
	 "      fastwallL7: sometimes\n",
	 5, "fastwallL7"},
};

Test(config, bandwidth)
{
	cr_assert_eq(load(""), 0, "%s", err);
	cr_expect_not(cfg.bw_enabled);
	fw_cfg_free(&cfg);
	cr_assert_eq(load("bandwidth:\n"
			  "  interfaces: [eth0, eth1]\n"
			  "subjects:\n"
			  "  - name: a\n"
			  "    addresses: [10.0.0.2]\n"
			  "    policy: {fastwallBandwidth: {rate: 1250000}}\n"
			  "  - name: b\n"
			  "    addresses: [10.0.0.3]\n"
			  "    policy: {fastwallBandwidth: {rate: 100000000, burst: 65536}}\n"
			  "  - name: c\n"
			  "    addresses: [10.0.0.4]\n"
			  "    policy: {fastwallBandwidth: off}\n"),
		     0, "%s", err);
	cr_expect(cfg.bw_enabled);
	cr_expect_eq(cfg.nbw_interfaces, 2);
	cr_expect_str_eq(cfg.bw_interfaces[1], "eth1");
	cr_expect_eq(cfg.bw_mode, FW_BW_AUTO);
	cr_expect_eq(cfg.bw_horizon_ns, 2 * FW_NSEC_PER_SEC);
	cr_expect_eq(cfg.subjects[0].policy.bw, FW_POLICY_BW_ON);
	cr_expect_eq(cfg.subjects[0].policy.bw_rate, 1250000);
	cr_expect_eq(cfg.subjects[0].policy.bw_burst, 1 << 20, "the 1 MiB floor");
	cr_expect_eq(cfg.subjects[1].policy.bw_burst, 65536);
	cr_expect_eq(fw_policy_bw_rate(&cfg.subjects[2].policy), 0);
	cr_expect_eq(cfg.nwarnings, 0);
	fw_cfg_free(&cfg);
	/* a limit with no section to enforce it is a warning */
	cr_assert_eq(load("subjects:\n"
			  "  - name: a\n"
			  "    addresses: [10.0.0.2]\n"
			  "    policy: {fastwallBandwidth: {rate: 1250000}}\n"),
		     0, "%s", err);
	cr_expect_eq(cfg.nwarnings, 1);
	cr_expect(strstr(cfg.warnings[0], "not enforced") != NULL, "%s", cfg.warnings[0]);
}

Test(config, l7_section)
{
	cr_assert_eq(load(""), 0, "%s", err);
	cr_expect_not(cfg.l7_enabled);
	cr_expect_eq(cfg.nl7_tls_ports, 1);
	cr_expect_eq(cfg.l7_tls_ports[0], 443);
	cr_expect_eq(cfg.nl7_http_ports, 1);
	cr_expect_eq(cfg.l7_http_ports[0], 80);
	cr_expect_eq(cfg.l7_proxy_tls_port, 15443);
	cr_expect_eq(cfg.l7_proxy_http_port, 15080);
	cr_expect(cfg.l7_default_on);
	cr_expect_not(cfg.l7_cidr_pin);
	cr_expect_str_eq(cfg.l7_nginx, "/usr/sbin/nginx");
	cr_expect_str_eq(cfg.l7_module, "/usr/lib/nginx/modules/ngx_fastwall_l7_module.so");
	cr_expect_str_eq(cfg.l7_stream_module, "/usr/lib/nginx/modules/ngx_stream_module.so");
	cr_expect_str_eq(cfg.l7_user, "nobody");
	cr_expect_eq(cfg.l7_workers, 1);
	cr_expect_eq(cfg.l7_idle_timeout_ns, 60 * FW_NSEC_PER_SEC);

	cr_assert_eq(load("l7:\n"
			  "  enabled: true\n"
			  "  tls_ports: [443, 8443]\n"
			  "  http_ports: 8080\n"
			  "  proxy_tls_port: 16443\n"
			  "  proxy_http_port: 16080\n"
			  "  default: off\n"
			  "  cidr: pin\n"
			  "  ech: allow\n"
			  "  quic: allow\n"
			  "  nginx: /opt/nginx\n"
			  "  module: /opt/l7.so\n"
			  "  user: \"65534\"\n"
			  "  workers: 2\n"
			  "  max_connections: 100\n"
			  "  subject_connections: 7\n"
			  "  idle_timeout: 30\n"
			  "subjects:\n"
			  "  - name: a\n"
			  "    addresses: [10.0.0.2]\n"
			  "    l7: on\n"
			  "  - name: b\n"
			  "    addresses: [10.0.0.3]\n"
			  "    policy: {fastwallL7: \"off\"}\n"
			  "  - name: c\n"
			  "    addresses: [10.0.0.4]\n"),
		     0, "%s", err);
	cr_expect(cfg.l7_enabled);
	cr_expect_eq(cfg.nl7_tls_ports, 2);
	cr_expect_eq(cfg.l7_tls_ports[1], 8443);
	cr_expect_eq(cfg.nl7_http_ports, 1);
	cr_expect_eq(cfg.l7_http_ports[0], 8080);
	cr_expect_eq(cfg.l7_proxy_tls_port, 16443);
	cr_expect_eq(cfg.l7_proxy_http_port, 16080);
	cr_expect_not(cfg.l7_default_on);
	cr_expect(cfg.l7_cidr_pin);
	cr_expect(cfg.l7_ech_allow);
	cr_expect(cfg.l7_quic_allow);
	cr_expect_str_eq(cfg.l7_user, "65534");
	cr_expect_eq(cfg.l7_workers, 2);
	cr_expect_eq(cfg.l7_max_connections, 100);
	cr_expect_eq(cfg.l7_subject_connections, 7);
	cr_expect_eq(cfg.l7_idle_timeout_ns, 30 * FW_NSEC_PER_SEC);
	cr_expect_eq(cfg.subjects[0].policy.l7, FW_POLICY_L7_ON);
	cr_expect_eq(cfg.subjects[1].policy.l7, FW_POLICY_L7_OFF);
	cr_expect_eq(cfg.subjects[2].policy.l7, FW_POLICY_L7_DEFAULT);
}

Test(config, l7_without_the_dns_proxy_is_a_warning)
{
	cr_assert_eq(load("dns:\n  proxy: false\nl7:\n  enabled: true\n"), 0, "%s", err);
	cr_assert_eq(cfg.nwarnings, 1);
	cr_expect(strstr(cfg.warnings[0], "t.yaml:4: l7.enabled without dns.proxy") != NULL, "%s",
		  cfg.warnings[0]);
}

Test(config, l7_on_without_l7_enabled_is_a_warning)
{
	cr_assert_eq(load("subjects:\n  - {name: a, addresses: [10.0.0.2], l7: on}\n"
			  "  - {name: b, addresses: [10.0.0.3], l7: off}\n"),
		     0, "%s", err);
	cr_assert_eq(cfg.nwarnings, 1);
	cr_expect(strstr(cfg.warnings[0], "subject \"a\" has l7 on, but l7.enabled is false") !=
			  NULL,
		  "%s", cfg.warnings[0]);
}

/* A reload keeps the restart-only l7 keys and takes the others. */
static void kept_name(void *ctx, const char *name, const char *running)
{
	(void)running;
	strncat(ctx, name, 255 - strlen(ctx));
	strncat(ctx, " ", 255 - strlen(ctx));
}

Test(config, l7_reload_keeps_restart_keys)
{
	struct fw_cfg next;
	char kept[256] = "";

	cr_assert_eq(load("l7: {enabled: true, workers: 2, idle_timeout: 30}\n"), 0, "%s", err);
	cr_assert_eq(fw_cfg_load_buffer("l7: {enabled: false, workers: 3, idle_timeout: 90, "
					"tls_ports: [443, 853], quic: allow}\n",
					strlen("l7: {enabled: false, workers: 3, idle_timeout: 90, "
					       "tls_ports: [443, 853], quic: allow}\n"),
					"t.yaml", &next, err, sizeof(err)),
		     0, "%s", err);
	cr_expect_eq(fw_cfg_keep_restart_keys(&next, &cfg, kept_name, kept), 2);
	cr_expect_str_eq(kept, "l7.enabled l7.workers ");
	cr_expect(next.l7_enabled);
	cr_expect_eq(next.l7_workers, 2);
	cr_expect_eq(next.l7_idle_timeout_ns, 90 * FW_NSEC_PER_SEC);
	cr_expect_eq(next.nl7_tls_ports, 2);
	cr_expect(next.l7_quic_allow);
	fw_cfg_free(&next);
}

Test(config, processes_section)
{
	cr_assert_eq(load("log_level: info\n"), 0, "%s", err);
	cr_assert_not(cfg.processes_enabled, "absent: off");
	cr_assert_str_eq(cfg.cgroup_root, "/sys/fs/cgroup");
	cr_assert_str_eq(cfg.cgroup_parent, "fastwall");
	cr_assert_str_eq(cfg.processes_socket, "/run/fastwall/run.sock");
	cr_assert_str_eq(cfg.run_group, "", "root only unless named");
	cr_assert_str_eq(cfg.run_parent, "", "cgroup_parent itself");
	fw_cfg_free(&cfg);
	fw_cfg_init(&cfg);
	cr_assert_eq(load("processes:\n"), 0, "%s", err);
	cr_assert(cfg.processes_enabled, "present, even empty: on");
	fw_cfg_free(&cfg);
	fw_cfg_init(&cfg);
	cr_assert_eq(load("processes:\n  cgroup_root: /tmp/cg\n  cgroup_parent: sb/run\n"
			  "  socket: /run/x.sock\n  run_group: fastwall\n  run_parent: "
			  "users\nsubjects:\n  - name: svc\n    cgroup: svc/main\n"
			  "    state: denying\n"),
		     0, "%s", err);
	cr_assert_str_eq(cfg.cgroup_root, "/tmp/cg");
	cr_assert_str_eq(cfg.cgroup_parent, "sb/run");
	cr_assert_str_eq(cfg.processes_socket, "/run/x.sock");
	cr_assert_str_eq(cfg.run_group, "fastwall");
	cr_assert_str_eq(cfg.run_parent, "users");
	cr_assert_eq(cfg.nsubjects, 1);
	cr_assert_str_eq(cfg.subjects[0].cgroup, "svc/main");
	cr_assert_eq(cfg.subjects[0].naddrs, 0);
	cr_assert_eq(cfg.subjects[0].state, FW_STATE_DENYING);
	cr_assert_eq(cfg.subjects[0].cgroup_id, 0, "resolved by fastwalld, not the parser");
	cr_assert_not(cfg.subjects[0].keep_caps, "capabilities held to by default");
}

Test(config, subject_keep_caps)
{
	cr_assert_eq(load("processes:\nsubjects:\n  - { name: a, cgroup: a, keep_caps: true }\n"
			  "  - { name: b, cgroup: b, keep_caps: False }\n"
			  "  - { name: c, cgroup: c, keep_caps: }\n"),
		     0, "%s", err);
	cr_assert_eq(cfg.nsubjects, 3);
	cr_assert(cfg.subjects[0].keep_caps);
	cr_assert_not(cfg.subjects[1].keep_caps);
	cr_assert_not(cfg.subjects[2].keep_caps, "empty: absent, the default");
	cr_assert_not(cfg.subjects[0].caps_held, "fastwalld decides that, not the parser");
}

Test(config, monitor_and_audit_sections)
{
	static const struct {
		const char *yaml, *needle;
	} refused[] = {
		{"log_format: xml\n", "log_format"},
		{"monitor:\n  socket: run/monitor.sock\n", "absolute path or \"\""},
		{"monitor:\n  reader_queue: 0\n", "reader_queue"},
		{"monitor:\n  allow_sample: 65536\n", "allow_sample"},
		{"monitor:\n  sockett: /run/x\n", "sockett"},
		{"audit:\n  destination: syslog\n", "stderr, stdout, off or an absolute path"},
	};

	cr_assert_eq(load("log_level: info\n"), 0, "%s", err);
	cr_assert_eq(cfg.log_format, FW_LOG_TEXT);
	cr_assert_str_eq(cfg.monitor_socket, "/run/fastwall/monitor.sock");
	cr_assert_eq(cfg.monitor_queue, 4096);
	cr_assert_eq(cfg.monitor_allow_sample, 0, "allow events are opt-in");
	cr_assert_str_eq(cfg.audit_destination, "stderr");
	cr_assert_eq(load("log_format: json\nmonitor:\n  socket: \"\"\n  reader_queue: 8\n"
			  "  allow_sample: 100\naudit:\n  destination: /var/log/fw-audit.log\n"),
		     0, "%s", err);
	cr_assert_eq(cfg.log_format, FW_LOG_JSON);
	cr_assert_str_eq(cfg.monitor_socket, "", "\"\" turns the socket off");
	cr_assert_eq(cfg.monitor_queue, 8);
	cr_assert_eq(cfg.monitor_allow_sample, 100);
	cr_assert_str_eq(cfg.audit_destination, "/var/log/fw-audit.log");
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		err[0] = '\0';
		cr_expect_eq(load(refused[i].yaml), -EINVAL, "accepted: %s", refused[i].yaml);
		cr_expect(strstr(err, refused[i].needle), "%s: want \"%s\", got: %s",
			  refused[i].yaml, refused[i].needle, err);
	}
}

Test(config, guard_section)
{
	cr_assert_eq(load("dns: {proxy: false}\n"), 0, "%s", err);
	cr_assert_not(cfg.guard_enabled);
	fw_cfg_free(&cfg);
	cr_assert_eq(load("guard:\n  interfaces: [eth0, eth1]\n  ports: [8443, 9443]\n"
			  "  trusted: [10.0.8.0/24, \"fd00:8::/64\", 192.0.2.7]\n  mode: tc\n"),
		     0, "%s", err);
	cr_assert(cfg.guard_enabled);
	cr_assert_eq(cfg.nguard_interfaces, 2);
	cr_assert_str_eq(cfg.guard_interfaces[1], "eth1");
	cr_assert_eq(cfg.nguard_ports, 2);
	cr_assert_eq(cfg.guard_ports[0], 8443);
	cr_assert_eq(cfg.guard_ports[1], 9443);
	cr_assert_eq(cfg.nguard_trusted, 3);
	expect_prefix(&cfg.guard_trusted[0].net, cfg.guard_trusted[0].plen, "10.0.8.0/24");
	expect_prefix(&cfg.guard_trusted[1].net, cfg.guard_trusted[1].plen, "fd00:8::/64");
	expect_prefix(&cfg.guard_trusted[2].net, cfg.guard_trusted[2].plen, "192.0.2.7/32");
	cr_assert_eq(cfg.guard_mode, 3); /* FW_GUARD_TC */
	fw_cfg_free(&cfg);
	/* a single port and no trusted sources: everything to it drops */
	cr_assert_eq(load("guard:\n  interfaces: eth0\n  ports: 8443\n"), 0, "%s", err);
	cr_assert_eq(cfg.nguard_ports, 1);
	cr_assert_eq(cfg.nguard_trusted, 0);
	cr_assert_eq(cfg.guard_mode, 0); /* FW_GUARD_AUTO */
}

Test(config, dns_defaults)
{
	cr_assert_eq(load("log_level: info\n"), 0, "%s", err);
	cr_expect(cfg.dns_proxy);
	cr_expect(cfg.dns_redirect_all);
	cr_expect_eq(cfg.dnsp.port, 15353);
	cr_expect_eq(cfg.dns_nupstreams, 0);
	cr_expect_str_eq(cfg.dns_resolv_conf, "/etc/resolv.conf");
	cr_expect_eq(cfg.learn.lease_add_s, 60);
	cr_expect_eq(cfg.learn.lease_min_s, 60);
	cr_expect_eq(cfg.learn.lease_max_s, 360);
	cr_expect_eq(cfg.dnsp.timeout_ns, 5000000000ull);
	cr_expect_eq(cfg.learn.max_per_subject, 4096);
	cr_expect_eq(cfg.max_conns_per_subject, 1024);
}

Test(config, dns_section)
{
	static const char y[] =
		"dns:\n"
		"  proxy: true\n"
		"  redirect_all: false\n"
		"  port: 5300\n"
		"  upstreams: [198.51.100.53, \"198.51.100.54:5353\", \"2001:db8::53\",\n"
		"              \"[2001:db8::54]:5353\"]\n"
		"  resolv_conf: /run/resolv.conf\n"
		"  timeout: 2\n"
		"  probe_interval: 0\n"
		"  workers: 4\n"
		"  max_tcp_clients: 64\n"
		"  max_tcp_per_client: 8\n"
		"  tcp_query_timeout: 3\n"
		"  case_randomize: true\n"
		"  lease: { add: 0, min: 2, max: 4 }\n"
		"  max_learned_per_subject: 0\n"
		"  max_connections_per_subject: 16\n"
		"  refresh_interval: 1\n"
		"  tcp_idle_timeout: 600\n";

	cr_assert_eq(load(y), 0, "%s", err);
	cr_expect(cfg.dns_proxy);
	cr_expect(!cfg.dns_redirect_all);
	cr_expect_eq(cfg.dnsp.port, 5300);
	cr_assert_eq(cfg.dns_nupstreams, 4);
	expect_ip(&cfg.dns_upstreams[0].ip, "198.51.100.53");
	cr_expect_eq(cfg.dns_upstreams[0].port, 53);
	expect_ip(&cfg.dns_upstreams[1].ip, "198.51.100.54");
	cr_expect_eq(cfg.dns_upstreams[1].port, 5353);
	expect_ip(&cfg.dns_upstreams[2].ip, "2001:db8::53");
	cr_expect_eq(cfg.dns_upstreams[2].port, 53);
	expect_ip(&cfg.dns_upstreams[3].ip, "2001:db8::54");
	cr_expect_eq(cfg.dns_upstreams[3].port, 5353);
	cr_expect_str_eq(cfg.dns_resolv_conf, "/run/resolv.conf");
	cr_expect_eq(cfg.dnsp.timeout_ns, 2000000000ull);
	cr_expect_eq(cfg.dnsp.probe_interval_ns, 0);
	cr_expect_eq(cfg.dnsp.workers, 4);
	cr_expect_eq(cfg.dnsp.max_tcp_clients, 64);
	cr_expect_eq(cfg.dnsp.max_tcp_per_client, 8);
	cr_expect_eq(cfg.dnsp.tcp_idle_ns, 3000000000ull);
	cr_expect(cfg.dnsp.case_randomize);
	cr_expect_eq(cfg.learn.lease_add_s, 0);
	cr_expect_eq(cfg.learn.lease_min_s, 2);
	cr_expect_eq(cfg.learn.lease_max_s, 4);
	cr_expect_eq(cfg.learn.max_per_subject, 0);
	cr_expect_eq(cfg.max_conns_per_subject, 16);
	cr_expect_eq(cfg.learn.refresh_interval_ns, FW_NSEC_PER_SEC);
	cr_expect_eq(cfg.learn.tcp_idle_ns, 600000000000ull);
}

Test(config, malformed_table)
{
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char where[32];
		int ret;

		err[0] = '\0';
		ret = load(bad[i].yaml);
		snprintf(where, sizeof(where), "t.yaml:%d: ", bad[i].line);
		cr_expect_eq(ret, -EINVAL, "case %zu accepted:\n%s", i, bad[i].yaml);
		cr_expect(strncmp(err, where, strlen(where)) == 0, "case %zu: want %s, got: %s", i,
			  where, err);
		cr_expect(strstr(err, bad[i].needle), "case %zu: want \"%s\", got: %s", i,
			  bad[i].needle, err);
		/* all-or-nothing: a failed load leaves nothing behind */
		cr_expect_eq(cfg.nsubjects, 0, "case %zu", i);
		cr_expect_eq(cfg.overlay.nrules, 0, "case %zu", i);
		cr_expect_eq(cfg.ninterfaces, 0, "case %zu", i);
		cr_expect_eq(cfg.nlocal, 0, "case %zu", i);
	}
}

Test(config, failure_after_partial_load_frees_everything)
{
	/* leaks here would show under the sanitizer build */
	cr_assert_eq(load("datapath:\n"
			  "  interfaces: [a, b]\n"
			  "  local_addresses: [10.0.0.1]\n"
			  "  local_ports: [tcp/1]\n"
			  "  doh: {blocklist: [10.0.0.0/8]}\n"
			  "overlay: {deny: [x.example]}\n"
			  "subjects:\n"
			  "  - name: a\n"
			  "    addresses: 10.0.0.2\n"
			  "    policy: {egress: [{target: y.example}]}\n"
			  "  - name: b\n"
			  "    addresses: 10.0.0.3\n"
			  "    policy: {egress: [{target: z.example}, {target: \"*\"}]}\n"),
		     -EINVAL);
	cr_assert(strstr(err, "t.yaml:13: "), "%s", err);
	expect_defaults();
	fw_cfg_free(&cfg);
	fw_cfg_free(&cfg);
	expect_defaults();
}

Test(config, rejects_oversized_buffer)
{
	size_t len = (4u << 20) + 1;
	char *big = malloc(len);

	cr_assert_not_null(big);
	memset(big, '#', len);
	cr_assert_eq(fw_cfg_load_buffer(big, len, "big.yaml", &cfg, err, sizeof(err)), -EINVAL);
	cr_assert(strstr(err, "big.yaml:1: file too large"), "%s", err);
	free(big);
}

Test(config, long_value_is_truncated_in_message)
{
	char yaml[2048];

	snprintf(yaml, sizeof(yaml), "log_level: %01000d\n", 7);
	cr_assert_eq(load(yaml), -EINVAL);
	cr_assert(strstr(err, "t.yaml:1: "), "%s", err);
	cr_assert(strstr(err, "...')"), "%s", err);
	cr_assert_lt(strlen(err), 200);
}

Test(config, load_file)
{
	char path[] = "/tmp/fastwall-cfg-XXXXXX";
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, full, strlen(full)), (ssize_t)strlen(full));
	close(fd);
	fw_cfg_free(&cfg);
	cr_assert_eq(fw_cfg_load_file(path, &cfg, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(cfg.nsubjects, 2);
	fw_cfg_free(&cfg);

	fd = open(path, O_WRONLY | O_APPEND);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, "bogus: 1\n", 9), 9);
	close(fd);
	cr_assert_eq(fw_cfg_load_file(path, &cfg, err, sizeof(err)), -EINVAL);
	{
		char want[64];

		snprintf(want, sizeof(want), "%s:40: unknown key", path);
		cr_assert(strstr(err, want), "%s", err);
	}
	unlink(path);

	cr_assert_eq(fw_cfg_load_file("/nonexistent/fastwall.yaml", &cfg, err, sizeof(err)),
		     -ENOENT);
	cr_assert_str_eq(err, "can't read /nonexistent/fastwall.yaml: No such file or directory");
	cr_assert_eq(fw_cfg_load_file("/tmp", &cfg, err, sizeof(err)), -EISDIR);
	cr_assert(strstr(err, "can't read /tmp: Is a directory"), "%s", err);
	expect_defaults();
}

Test(config, subject_mac)
{
	cr_assert_eq(load("subjects:\n"
			  "  - name: a\n"
			  "    addresses: 10.0.0.2\n"
			  "    interface: sb-a\n"
			  "    mac: 02:AB:cd:00:10:ff\n"
			  "  - name: b\n"
			  "    addresses: 10.0.0.3\n"
			  "    interface: sb-b\n"),
		     0, "%s", err);
	cr_assert_eq(cfg.nsubjects, 2);
	cr_expect(cfg.subjects[0].has_mac);
	cr_expect_arr_eq(cfg.subjects[0].mac, ((__u8[6]){0x02, 0xab, 0xcd, 0x00, 0x10, 0xff}), 6);
	cr_expect_not(cfg.subjects[1].has_mac);
}
