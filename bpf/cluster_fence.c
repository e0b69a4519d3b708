// SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0)
/*
 * fibkeeper's cluster fence: on the external interface's tcx ingress and egress
 * hooks, drops every IPv4/IPv6 packet to (ingress) or from (egress) a cluster IP
 * of this node once the node's hold deadline has passed by the kernel's own
 * CLOCK_MONOTONIC. The agent moves the deadline forward while its etcd lease (or
 * the peers' promises) prove it may hold its IPs; a hung agent cannot, so its
 * kernel stops answering for them at the deadline whether the agent runs or not.
 * Everything else continues to the next program (TCX_NEXT).
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "cluster_fence.h"

_Static_assert(sizeof(struct fk_fence_key) == 16, "fk_fence_key size");
_Static_assert(sizeof(struct fk_fence_deadline) == 8, "fk_fence_deadline size");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, FK_FENCE_MAX_IPS);
	__type(key, struct fk_fence_key);
	__type(value, __u32);
} fk_fence_ips SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fk_fence_deadline);
} fk_fence_deadline SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, FK_FENCE_DROP_SLOTS);
	__type(key, __u32);
	__type(value, __u64);
} fk_fence_drops SEC(".maps");

/* Offsets of the addresses in an Ethernet frame. */
#define ETH_LEN       14
#define IP4_SADDR_OFF (ETH_LEN + 12)
#define IP4_DADDR_OFF (ETH_LEN + 16)
#define IP6_SADDR_OFF (ETH_LEN + 8)
#define IP6_DADDR_OFF (ETH_LEN + 24)

/* Reads the source or destination address as a key; -1 for anything not IPv4/IPv6. */
static __always_inline int read_key(struct __sk_buff *skb, int dst, struct fk_fence_key *k)
{
	__u16 proto;

	if (bpf_skb_load_bytes(skb, 12, &proto, sizeof(proto)) < 0)
		return -1;
	if (proto == bpf_htons(ETH_P_IP)) {
		__builtin_memset(k->addr, 0, 10);
		k->addr[10] = 0xff;
		k->addr[11] = 0xff;
		return bpf_skb_load_bytes(skb, dst ? IP4_DADDR_OFF : IP4_SADDR_OFF, &k->addr[12], 4);
	}
	if (proto == bpf_htons(ETH_P_IPV6))
		return bpf_skb_load_bytes(skb, dst ? IP6_DADDR_OFF : IP6_SADDR_OFF, k->addr, 16);
	return -1;
}

static __always_inline int fence(struct __sk_buff *skb, int dst, __u32 slot)
{
	struct fk_fence_key k = {};
	struct fk_fence_deadline *d;
	__u32 zero = 0, *state;
	__u64 *drops;

	if (read_key(skb, dst, &k) < 0)
		return TC_ACT_UNSPEC; /* not IP, or too short: not ours to judge */
	state = bpf_map_lookup_elem(&fk_fence_ips, &k);
	if (!state)
		return TC_ACT_UNSPEC; /* not a cluster IP of this node */
	d = bpf_map_lookup_elem(&fk_fence_deadline, &zero);
	if (*state == FK_FENCE_FOLLOW && d && bpf_ktime_get_ns() < d->until_ns)
		return TC_ACT_UNSPEC; /* held, and provably so: answer */
	drops = bpf_map_lookup_elem(&fk_fence_drops, &slot);
	if (drops)
		*drops += 1;
	return TC_ACT_SHOT;
}

SEC("tc")
int fk_fence_ingress(struct __sk_buff *skb)
{
	return fence(skb, 1, FK_FENCE_DROP_INGRESS);
}

SEC("tc")
int fk_fence_egress(struct __sk_buff *skb)
{
	return fence(skb, 0, FK_FENCE_DROP_EGRESS);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
