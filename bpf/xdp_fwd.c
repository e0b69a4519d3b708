// SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0)
/*
 * fibkeeper XDP forwarder. Forwards IPv4 and IPv6 with bpf_fib_lookup (the
 * kernel's own routes and neighbors), but only what the kernel itself would
 * forward, with the same bytes and out of the same multipath leg; every
 * other frame goes to the kernel with XDP_PASS, which decides. It never
 * drops. The checks mirror the kernel's receive and forwarding path:
 * ip_rcv_core/ip6_rcv_core (PACKET_OTHERHOST, header, checksum, lengths),
 * ip_route_input_slow and fib_validate_source (martians, local sources,
 * rp_filter), ip_forward/ip6_forward (TTL, options, hairpin) and the
 * multipath hash (fib_multipath_hash, rt6_multipath_hash). Layouts, names
 * and counter indexes: xdp_fwd.h.
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "xdp_fwd.h"

#define IP_MF	  0x2000 /* more fragments */
#define IP_OFFSET 0x1fff /* fragment offset */

/*
 * IPv6 extension headers walked to the upper-layer protocol, as the flow
 * dissector walks them (it allows 15); a longer chain goes to the kernel.
 */
#define IP6_EXT_MAX 8

/* IPv4 options area: at most 40 bytes. */
#define IP4_OPT_MAX 40

/* A step of the forwarding path: go on (else a reason to pass, >= 0). */
#define FK_GO (-1)

_Static_assert(sizeof(struct fk_ctr) == 16, "fk_ctr size");
_Static_assert(sizeof(struct fk_stats) == FK_STATS_SIZE, "fk_stats size");
_Static_assert(__builtin_offsetof(struct fk_stats, result) == 80, "result");
_Static_assert(__builtin_offsetof(struct fk_stats, reason) == 256, "reason");
_Static_assert(sizeof(struct fk_miss_key) == 24, "fk_miss_key size");
_Static_assert(__builtin_offsetof(struct fk_miss_key, addr) == 8, "addr");
_Static_assert(sizeof(struct fk_miss_val) == 40, "fk_miss_val size");
_Static_assert(__builtin_offsetof(struct fk_miss_val, nh_family) == 32, "nhf");
_Static_assert(sizeof(struct fk_config) == FK_CONFIG_SIZE, "fk_config size");
_Static_assert(__builtin_offsetof(struct fk_config, ipv4) == 16, "ipv4");
_Static_assert(__builtin_offsetof(struct fk_config, dev_mac) == 24, "dev_mac");
_Static_assert(sizeof(struct fk_dev_state) == 8, "fk_dev_state size");
_Static_assert(__builtin_offsetof(struct fk_dev_state, policy4) == 4, "policy4");
_Static_assert(__builtin_offsetof(struct fk_state, rp_gen) == 12, "rp_gen");
_Static_assert(sizeof(struct fk_rp_entry) == 16, "fk_rp_entry size");
_Static_assert(sizeof(struct fk_rp_cache) == 16384, "fk_rp_cache size");
_Static_assert(FK_REASON_EGRESS_NETFILTER >= FK_REASON_POST_LOOKUP, "egress");
_Static_assert(sizeof(struct fk_state) == FK_STATE_SIZE, "fk_state size");
_Static_assert(__builtin_offsetof(struct fk_state, dev) == 16, "dev");
_Static_assert(__builtin_offsetof(struct fk_state, route_mtu4) == 6, "mtu4");
_Static_assert(__builtin_offsetof(struct fk_state, local4) == 528, "local4");
_Static_assert((FK_MAX_SLOTS & (FK_MAX_SLOTS - 1)) == 0, "slots: power of 2");
_Static_assert(sizeof(struct fk_lpm4_key) == 8, "fk_lpm4_key size");
_Static_assert(sizeof(struct fk_lpm6_key) == 20, "fk_lpm6_key size");
_Static_assert(FK_RESULT_SUCCESS == BPF_FIB_LKUP_RET_SUCCESS, "result");
_Static_assert(FK_RESULT_BLACKHOLE == BPF_FIB_LKUP_RET_BLACKHOLE, "result");
_Static_assert(FK_RESULT_UNREACHABLE == BPF_FIB_LKUP_RET_UNREACHABLE, "result");
_Static_assert(FK_RESULT_PROHIBIT == BPF_FIB_LKUP_RET_PROHIBIT, "result");
_Static_assert(FK_RESULT_NOT_FWDED == BPF_FIB_LKUP_RET_NOT_FWDED, "result");
_Static_assert(FK_RESULT_FWD_DISABLED == BPF_FIB_LKUP_RET_FWD_DISABLED, "re");
_Static_assert(FK_RESULT_UNSUPP_LWT == BPF_FIB_LKUP_RET_UNSUPP_LWT, "result");
_Static_assert(FK_RESULT_NO_NEIGH == BPF_FIB_LKUP_RET_NO_NEIGH, "result");
_Static_assert(FK_RESULT_FRAG_NEEDED == BPF_FIB_LKUP_RET_FRAG_NEEDED, "result");
_Static_assert(FK_RESULT_NO_SRC_ADDR == BPF_FIB_LKUP_RET_NO_SRC_ADDR, "result");
_Static_assert(FK_ACTION_PASS == XDP_PASS, "action");
_Static_assert(FK_ACTION_REDIRECT == XDP_REDIRECT, "action");
_Static_assert(sizeof(struct bpf_fib_lookup) == 64, "bpf_fib_lookup size");

/* 8-byte aligned: l2_dest reads dev_mac (offset 24) as one u64 */
const volatile struct fk_config fk_cfg __attribute__((aligned(8))) = {
	.ipv4 = 1,
	.ipv6 = 1,
	.miss_track = 1,
};

struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP_HASH);
	__uint(max_entries, FK_TX_PORTS_MAX);
	__type(key, __u32);
	__type(value, __u32);
} fk_tx_ports SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, FK_MAX_SLOTS);
	__type(key, __u32);
	__type(value, struct fk_stats);
} fk_stats SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, FK_MISS_MAX);
	__type(key, struct fk_miss_key);
	__type(value, struct fk_miss_val);
} fk_miss SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fk_state);
} fk_state SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, FK_LPM_MAX);
	__type(key, struct fk_lpm4_key);
	__type(value, __u8);
	__uint(map_flags, BPF_F_NO_PREALLOC);
} fk_local4w SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, FK_LPM_MAX);
	__type(key, struct fk_lpm4_key);
	__type(value, __u8);
	__uint(map_flags, BPF_F_NO_PREALLOC);
} fk_mpath4 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(max_entries, FK_LPM_MAX);
	__type(key, struct fk_lpm6_key);
	__type(value, __u8);
	__uint(map_flags, BPF_F_NO_PREALLOC);
} fk_mpath6 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, FK_EGRESS_MAX);
	__type(key, __u32);
	__type(value, __u8);
} fk_egress SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fk_rp_cache);
} fk_rpcache SEC(".maps");

/* Parse position: the next unread byte and the end of the frame. */
struct cursor {
	void *pos;
	void *end;
};

/* What parsing learned for the steps after the lookup. */
struct pkt {
	/* the IP packet's length per its header (bytes past it are trimmed) */
	__u32 l3_len;
	/* the kernel's multipath hash differs from bpf_fib_lookup's */
	int mp_check;
};

/* This instance's counter slot (the verifier knows it: rodata). */
static __always_inline __u32 fk_slot(void)
{
	__u32 slot = fk_cfg.slot;

	return slot < FK_MAX_SLOTS ? slot : FK_SLOT_OTHER;
}

/* Branch hints: the forwarding path falls through, the rest jumps away. */
#define likely(x)   __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

/*
 * A MAC read as a u64 with the two bytes after it: MAC48 keeps the MAC,
 * MAC_GROUP is its group (multicast) bit, bit 0 of the first byte.
 */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define MAC48(x)  ((x) & 0xffffffffffffULL)
#define MAC_GROUP 1ULL
#else
#define MAC48(x)  ((x) >> 16)
#define MAC_GROUP (1ULL << 40)
#endif

/*
 * The destination MAC checks with dmac_check on, in their order (group
 * address, then not dev_mac): a reason to pass, or FK_GO. The common case
 * is one 8-byte compare (and the group bit): each MAC is read with the two
 * bytes after it (the source MAC's; pad1). dev_mac is rodata: read through
 * volatile, or clang folds the compile-time default (zeros) into the code.
 */
static __always_inline int l2_dest(const struct ethhdr *eth)
{
	__u64 mac = MAC48(*(const volatile __u64 *)fk_cfg.dev_mac);
	__u64 dst = MAC48(*(const __u64 *)eth);

	if (likely(dst == mac && !(dst & MAC_GROUP)))
		return FK_GO;
	if (dst & MAC_GROUP)
		return FK_REASON_L2_MCAST;
	return FK_REASON_L2_OTHERHOST;
}

static __always_inline void ctr_add(struct fk_ctr *ctr, __u64 bytes)
{
	ctr->packets++;
	ctr->bytes += bytes;
}

/*
 * Count a frame passed to the kernel for reason (FK_REASON_*) and return
 * XDP_PASS. Out of line, like every step that only passed frames take:
 * the forwarding path keeps no reason, and the kernel's own path that
 * such a frame takes next costs far more than the call.
 */
static __noinline int pass(struct fk_stats *st, __u32 reason, __u64 bytes)
{
	/*
	 * one 64-bit register, checked and used: a reason read from a map
	 * (fk_dev_state.policy4/6, fk_egress) must stay inside reason[]
	 */
	__u64 r = reason;

	barrier_var(r);
	if (r >= FK_REASON_MAX)
		r = FK_REASON_NON_IP; /* cannot happen */
	barrier_var(r);
	if (r >= FK_REASON_POST_LOOKUP)
		ctr_add(&st->result[FK_RESULT_SUCCESS], bytes);
	if (r < FK_REASON_MAX)
		ctr_add(&st->reason[r], bytes);
	ctr_add(&st->action[XDP_PASS], bytes);
	return XDP_PASS;
}

#include "xdp_fwd_checks.h"
#include "xdp_fwd_post.h"

/*
 * IPv4 from the IP header on: the checks, the lookup, the checks after it,
 * the redirect and the rewrite (TTL, checksum, MACs). Counts the frame and
 * returns the XDP action.
 */
static __always_inline int fwd4(struct xdp_md *ctx, void *data, void *end,
				struct fk_stats *st, const struct fk_state *ks,
				const struct fk_dev_state *dev, __u64 bytes)
{
	struct iphdr *iph = data + sizeof(struct ethhdr);
	struct bpf_fib_lookup fib = {};
	struct pkt pk = {};
	__u32 ingress, post;
	long excess;
	int rc;

	if (unlikely(dev->policy4))
		return pass(st, dev->policy4, bytes);
	if (!fk_cfg.ipv4)
		return pass(st, FK_REASON_IP4_OFF, bytes);
	if ((void *)(iph + 1) > end)
		return pass(st, FK_REASON_IP4_BAD, bytes);
	rc = ip4_prepare(ctx, iph, end, ks, &fib, &pk);
	if (rc != FK_GO)
		return pass(st, rc, bytes);
	/*
	 * What the steps after the lookup need, found before it: two values
	 * to keep over the call (the barriers keep clang from keeping their
	 * parts instead).
	 */
	excess = (long)(end - (void *)iph) - (long)pk.l3_len;
	post = post_flags(pk.mp_check, dev->rp_filter, ks->route_mtu4,
			  pk.l3_len);
	barrier_var(excess);
	barrier_var(post);
	ingress = ctx->ingress_ifindex;
	fib.ifindex = ingress;

	rc = lookup(ctx, &fib, st, bytes, iph, 0);
	if (rc != FK_GO)
		return rc;
	rc = post_lookup(ctx, &fib, ingress, ks, iph, post);
	if (rc != FK_GO)
		return pass(st, rc, bytes);
	if (unlikely(excess > 0)) {
		data = trim(ctx, excess, sizeof(*iph));
		if (!data)
			return pass(st, FK_REASON_TRIM_ERROR, bytes);
		iph = data + sizeof(struct ethhdr);
	}
	ip4_dec_ttl(iph);
	set_macs(data, &fib);
	ctr_add(&st->action[XDP_REDIRECT], bytes);
	return XDP_REDIRECT;
}

/* IPv6 from the IP header on, as fwd4. */
static __always_inline int fwd6(struct xdp_md *ctx, void *data, void *end,
				struct fk_stats *st, const struct fk_state *ks,
				const struct fk_dev_state *dev, __u64 bytes)
{
	struct ipv6hdr *ip6h = data + sizeof(struct ethhdr);
	struct bpf_fib_lookup fib = {};
	struct pkt pk = {};
	__u32 ingress, post;
	long excess;
	int rc;

	if (unlikely(dev->policy6))
		return pass(st, dev->policy6, bytes);
	if (!fk_cfg.ipv6)
		return pass(st, FK_REASON_IP6_OFF, bytes);
	if ((void *)(ip6h + 1) > end)
		return pass(st, FK_REASON_IP6_BAD, bytes);
	rc = ip6_prepare(ip6h, end, ks, dev, &fib, &pk);
	if (rc != FK_GO)
		return pass(st, rc, bytes);
	excess = (long)(end - (void *)ip6h) - (long)pk.l3_len;
	post = FK_POST_V6 |
	       post_flags(pk.mp_check, 0, ks->route_mtu6, pk.l3_len);
	barrier_var(excess);
	barrier_var(post);
	ingress = ctx->ingress_ifindex;
	fib.ifindex = ingress;

	rc = lookup(ctx, &fib, st, bytes, ip6h, 1);
	if (rc != FK_GO)
		return rc;
	rc = post_lookup(ctx, &fib, ingress, ks, ip6h, post);
	if (rc != FK_GO)
		return pass(st, rc, bytes);
	if (unlikely(excess > 0)) {
		data = trim(ctx, excess, sizeof(*ip6h));
		if (!data)
			return pass(st, FK_REASON_TRIM_ERROR, bytes);
		ip6h = data + sizeof(struct ethhdr);
	}
	ip6h->hop_limit--;
	set_macs(data, &fib);
	ctr_add(&st->action[XDP_REDIRECT], bytes);
	return XDP_REDIRECT;
}

SEC("xdp")
int fk_xdp_fwd(struct xdp_md *ctx)
{
	void *data_end = (void *)(long)ctx->data_end;
	void *data = (void *)(long)ctx->data;
	__u64 bytes = data_end - data;
	__u32 slot = fk_slot(), key = slot; /* key: the lookup's copy */
	__u32 zero = 0;
	const struct fk_dev_state *dev;
	const struct fk_state *ks;
	struct ethhdr *eth = data;
	struct fk_stats *st;
	int reason;
	__u16 proto;

	st = bpf_map_lookup_elem(&fk_stats, &key);
	if (!st)
		return XDP_PASS; /* cannot happen: slot < FK_MAX_SLOTS */
	ks = bpf_map_lookup_elem(&fk_state, &zero);
	if (!ks) /* cannot happen: one entry */
		return pass(st, FK_REASON_NOT_READY, bytes);
	dev = &ks->dev[slot]; /* slot < FK_MAX_SLOTS (fk_slot) */
	if (unlikely(!dev->ready))
		return pass(st, FK_REASON_NOT_READY, bytes);
	if (unlikely(ks->unwatched))
		return pass(st, FK_REASON_UNWATCHED, bytes);
	if (unlikely((void *)(eth + 1) > data_end))
		return pass(st, FK_REASON_ETH_TRUNC, bytes);
	if (fk_cfg.dmac_check) {
		reason = l2_dest(eth);
		if (unlikely(reason != FK_GO))
			return pass(st, reason, bytes);
	} else if (unlikely(eth->h_dest[0] & 1)) {
		return pass(st, FK_REASON_L2_MCAST, bytes);
	}

	/* h_proto is in a packed struct: read it as one u16 */
	proto = *(const __u16 *)((const void *)eth + 12);
	if (likely(proto == bpf_htons(ETH_P_IP)))
		return fwd4(ctx, data, data_end, st, ks, dev, bytes);
	switch (proto) {
	case bpf_htons(ETH_P_IPV6):
		return fwd6(ctx, data, data_end, st, ks, dev, bytes);
	case bpf_htons(ETH_P_ARP):
		return pass(st, FK_REASON_ARP, bytes);
	case bpf_htons(ETH_P_8021Q):
	case bpf_htons(ETH_P_8021AD):
		return pass(st, FK_REASON_VLAN, bytes);
	default:
		return pass(st, FK_REASON_NON_IP, bytes);
	}
}

char _license[] SEC("license") = "GPL";
