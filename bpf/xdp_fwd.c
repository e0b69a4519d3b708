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

/* Continue to bpf_fib_lookup (the parse helpers return a reason or this). */
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

const volatile struct fk_config fk_cfg = {
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

/* Ethernet header: returns the EtherType (network order) or -1. */
static __always_inline int parse_ethhdr(struct cursor *c, struct ethhdr **eth)
{
	struct ethhdr *h = c->pos;

	if ((void *)(h + 1) > c->end)
		return -1;
	c->pos = h + 1;
	*eth = h;
	return h->h_proto;
}

/*
 * Destination MAC equals the configured one, as a 4-byte and a 2-byte
 * compare. b is rodata: read it through volatile, or clang folds the
 * compile-time default (zeros) into the code.
 */
static __always_inline int mac_eq(const __u8 *a, const volatile __u8 *b)
{
	return *(const __u32 *)a == *(const volatile __u32 *)b &&
	       *(const __u16 *)(a + 4) == *(const volatile __u16 *)(b + 4);
}

#include "xdp_fwd_checks.h"

/*
 * The packet's destination is inside a multipath route (fk_mpath4/6). Read
 * from the header: after a lookup, fib->ipv4_dst holds the gateway.
 */
static __noinline int mp_covered(const struct fk_state *ks,
				      const void *l3, int v6)
{
	if (v6) {
		struct fk_lpm6_key k6 = { .prefixlen = 128 };

		if (!ks->mpath6)
			return 0;
		__builtin_memcpy(k6.addr, &((struct ipv6hdr *)l3)->daddr, 16);
		return bpf_map_lookup_elem(&fk_mpath6, &k6) != NULL;
	} else {
		struct fk_lpm4_key k4 = { .prefixlen = 32,
					  .addr = ((struct iphdr *)l3)->daddr };

		if (!ks->mpath4)
			return 0;
		return bpf_map_lookup_elem(&fk_mpath4, &k4) != NULL;
	}
}

/*
 * rp_filter (fib_validate_source) proven in XDP: the route back to the
 * source, looked up as the kernel does (from the egress device, source and
 * destination swapped), is unicast and leaves through the ingress device
 * (strict, 1), or is unicast and the ingress device has an IPv4 address
 * (loose, 2). Anything else (a multipath route back whose chosen leg is
 * another device, say) is left to the kernel.
 */
static __noinline int rp_ok(struct xdp_md *ctx,
				 const struct bpf_fib_lookup *fwd,
				 const struct iphdr *iph,
				 const struct fk_dev_state *dev)
{
	struct bpf_fib_lookup r = {};
	__u32 flags = BPF_FIB_LOOKUP_SKIP_NEIGH |
		      (fk_cfg.fib_flags &
		       (BPF_FIB_LOOKUP_DIRECT | BPF_FIB_LOOKUP_TBID));
	int rc;

	r.family = FK_AF_INET;
	r.tos = iph->tos;
	r.ipv4_src = iph->daddr;
	r.ipv4_dst = iph->saddr;
	r.ifindex = fwd->ifindex;
	if (flags & BPF_FIB_LOOKUP_TBID)
		r.tbid = fk_cfg.tbid;
	rc = bpf_fib_lookup(ctx, &r, sizeof(r), flags);
	if (rc != BPF_FIB_LKUP_RET_SUCCESS)
		return 0;
	if (r.ifindex == ctx->ingress_ifindex)
		return 1;
	return dev->rp_filter == 2 && dev->v4_addr;
}

/* Decrement the TTL and patch the header checksum (RFC 1624). */
static __always_inline void ip4_dec_ttl(struct iphdr *iph)
{
	__u32 sum = iph->check;

	sum += bpf_htons(0x0100);
	iph->check = (__sum16)(sum + (sum >= 0xffff));
	iph->ttl--;
}

/* Rewrite the Ethernet addresses with the FIB's (16-bit stores). */
static __always_inline void set_macs(struct ethhdr *eth,
				     const struct bpf_fib_lookup *fib)
{
	__u16 *d = (__u16 *)eth;
	const __u16 *m = (const __u16 *)fib->smac;

	/* smac[6] and dmac[6] are adjacent in bpf_fib_lookup */
	d[0] = m[3];
	d[1] = m[4];
	d[2] = m[5];
	d[3] = m[0];
	d[4] = m[1];
	d[5] = m[2];
}

static __always_inline void ctr_add(struct fk_ctr *ctr, __u64 bytes)
{
	ctr->packets++;
	ctr->bytes += bytes;
}

/* Remember a NO_NEIGH destination for the neighbor subsystem. */
static __always_inline void record_miss(const struct bpf_fib_lookup *fib,
					void *l3, int v6)
{
	struct fk_miss_key key = { .ifindex = fib->ifindex };
	struct fk_miss_val *val, init = { .hits = 1 };
	__u64 now = bpf_ktime_get_coarse_ns();

	if (v6) {
		key.family = FK_AF_INET6;
		__builtin_memcpy(key.addr, &((struct ipv6hdr *)l3)->daddr, 16);
	} else {
		key.family = FK_AF_INET;
		key.addr[0] = ((struct iphdr *)l3)->daddr;
	}
	val = bpf_map_lookup_elem(&fk_miss, &key);
	if (!val) {
		val = &init;
		val->last_seen_ns = now;
	} else {
		__sync_fetch_and_add(&val->hits, 1);
		val->last_seen_ns = now;
	}
	val->nh_family = fib->family;
	if (fib->family == FK_AF_INET6) {
		__builtin_memcpy(val->nexthop, fib->ipv6_dst, 16);
	} else {
		val->nexthop[0] = fib->ipv4_dst;
		val->nexthop[1] = 0;
		val->nexthop[2] = 0;
		val->nexthop[3] = 0;
	}
	if (val == &init)
		bpf_map_update_elem(&fk_miss, &key, &init, BPF_NOEXIST);
}

/*
 * Cut the frame to the IP packet (Ethernet padding, trailing bytes), as
 * the kernel trims the skb to the IP length, so that what leaves is what
 * the kernel would send and fits the egress MTU the lookup checked. Only
 * called when there is something to cut. Returns 0 and points eth/l3 at
 * the new data, or -1 when the tail cannot be adjusted.
 */
static __noinline int trim(struct xdp_md *ctx, long excess,
				struct ethhdr **eth, void **l3)
{
	void *data, *data_end;

	if (bpf_xdp_adjust_tail(ctx, (int)-excess))
		return -1;
	data = (void *)(long)ctx->data;
	data_end = (void *)(long)ctx->data_end;
	if (data + sizeof(struct ethhdr) > data_end)
		return -1;
	*eth = data;
	*l3 = data + sizeof(struct ethhdr);
	return 0;
}

SEC("xdp")
int fk_xdp_fwd(struct xdp_md *ctx)
{
	void *data_end = (void *)(long)ctx->data_end;
	void *data = (void *)(long)ctx->data;
	struct cursor c = { .pos = data, .end = data_end };
	__u64 bytes = data_end - data;
	struct bpf_fib_lookup fib = {};
	struct pkt pk = {};
	struct ipv6hdr *ip6h = NULL;
	struct iphdr *iph = NULL;
	__u32 slot = fk_cfg.slot < FK_MAX_SLOTS ? fk_cfg.slot : FK_SLOT_OTHER;
	__u32 zero = 0;
	const struct fk_dev_state *dev;
	const struct fk_state *ks;
	struct ethhdr *eth;
	struct fk_stats *st;
	int action = XDP_PASS;
	int reason, proto, rc;
	long excess;
	void *l3;

	st = bpf_map_lookup_elem(&fk_stats, &slot);
	if (!st)
		return XDP_PASS; /* cannot happen: slot < FK_MAX_SLOTS */
	ks = bpf_map_lookup_elem(&fk_state, &zero);
	if (!ks) {
		reason = FK_REASON_NOT_READY; /* cannot happen: one entry */
		goto pass;
	}
	/* slot went through the stack (the lookup's key): bound it again */
	dev = &ks->dev[slot & (FK_MAX_SLOTS - 1)];
	if (!dev->ready) {
		reason = FK_REASON_NOT_READY;
		goto pass;
	}

	proto = parse_ethhdr(&c, &eth);
	if (proto < 0) {
		reason = FK_REASON_ETH_TRUNC;
		goto pass;
	}
	if (eth->h_dest[0] & 1) {
		reason = FK_REASON_L2_MCAST;
		goto pass;
	}
	if (fk_cfg.dmac_check && !mac_eq(eth->h_dest, fk_cfg.dev_mac)) {
		reason = FK_REASON_L2_OTHERHOST;
		goto pass;
	}
	l3 = c.pos;

	switch (proto) {
	case bpf_htons(ETH_P_IP):
		reason = ip4_prepare(ctx, &c, ks, &fib, &iph, &pk);
		break;
	case bpf_htons(ETH_P_IPV6):
		reason = ip6_prepare(&c, ks, dev, &fib, &ip6h, &pk);
		break;
	case bpf_htons(ETH_P_ARP):
		reason = FK_REASON_ARP;
		break;
	case bpf_htons(ETH_P_8021Q):
	case bpf_htons(ETH_P_8021AD):
		reason = FK_REASON_VLAN;
		break;
	default:
		reason = FK_REASON_NON_IP;
		break;
	}
	if (reason != FK_GO)
		goto pass;

	fib.ifindex = ctx->ingress_ifindex;
	if (fk_cfg.fib_flags & BPF_FIB_LOOKUP_TBID)
		fib.tbid = fk_cfg.tbid;
	if (fk_cfg.fib_flags & FK_FIB_LOOKUP_MARK)
		*(__u32 *)fib.smac = fk_cfg.mark; /* union with smac */

	rc = bpf_fib_lookup(ctx, &fib, sizeof(fib),
			    fk_cfg.fib_flags & ~BPF_FIB_LOOKUP_SKIP_NEIGH);
	/*
	 * A SUCCESS that is redirected is counted once, in action[REDIRECT]
	 * (one cache line less per forwarded packet); result[SUCCESS] holds
	 * the SUCCESS lookups passed afterwards. User space adds the two.
	 */
	if (rc != BPF_FIB_LKUP_RET_SUCCESS)
		ctr_add(&st->result[(__u32)rc < FK_RESULT_ERROR ? rc :
							       FK_RESULT_ERROR],
			bytes);

	switch (rc) {
	case BPF_FIB_LKUP_RET_SUCCESS: /* next hop resolved: forward */
		break;
	case BPF_FIB_LKUP_RET_BLACKHOLE: /* the stack drops and counts it */
	case BPF_FIB_LKUP_RET_UNREACHABLE: /* the stack sends ICMP unreach */
	case BPF_FIB_LKUP_RET_PROHIBIT: /* the stack sends ICMP prohibited */
	case BPF_FIB_LKUP_RET_NOT_FWDED: /* local/bcast/mcast: for the stack */
	case BPF_FIB_LKUP_RET_FWD_DISABLED: /* stack decides (drop/deliver) */
	case BPF_FIB_LKUP_RET_UNSUPP_LWT: /* stack encapsulates */
	case BPF_FIB_LKUP_RET_FRAG_NEEDED: /* stack fragments or sends ICMP */
	case BPF_FIB_LKUP_RET_NO_SRC_ADDR: /* stack picks a source or drops */
		goto out;
	case BPF_FIB_LKUP_RET_NO_NEIGH: /* stack resolves; remember it */
		if (fk_cfg.miss_track)
			record_miss(&fib, l3, ip6h != NULL);
		goto out;
	default: /* negative errno or a newer kernel's code */
		goto out;
	}

	/* The kernel sends a redirect (and forwards) out the same device. */
	if (fib.ifindex == ctx->ingress_ifindex) {
		reason = FK_REASON_HAIRPIN;
		goto pass;
	}
	if (pk.mp_check && mp_covered(ks, l3, ip6h != NULL)) {
		reason = FK_REASON_MULTIPATH;
		goto pass;
	}
	if (iph && dev->rp_filter && !rp_ok(ctx, &fib, iph, dev)) {
		reason = FK_REASON_RP_FILTER;
		goto pass;
	}
	/* fib.tot_len holds the MTU now (a union): the packet's length is pk's */
	rc = iph ? ks->route_mtu4 : ks->route_mtu6;
	if (rc && pk.l3_len > (__u32)rc) {
		reason = FK_REASON_ROUTE_MTU;
		goto pass;
	}
	/* Only redirect to devices fibkeeper manages; else the stack. */
	action = bpf_redirect_map(&fk_tx_ports, fib.ifindex, XDP_PASS);
	if (action != XDP_REDIRECT) {
		reason = FK_REASON_NO_TXPORT;
		goto pass;
	}
	excess = (long)(data_end - l3) - (long)pk.l3_len;
	if (excess > 0) {
		if (trim(ctx, excess, &eth, &l3)) {
			reason = FK_REASON_TRIM_ERROR;
			goto pass;
		}
		data_end = (void *)(long)ctx->data_end;
		if (iph) {
			iph = l3;
			if ((void *)(iph + 1) > data_end) {
				reason = FK_REASON_TRIM_ERROR;
				goto pass;
			}
		} else if (ip6h) {
			ip6h = l3;
			if ((void *)(ip6h + 1) > data_end) {
				reason = FK_REASON_TRIM_ERROR;
				goto pass;
			}
		}
	}
	if (iph)
		ip4_dec_ttl(iph);
	else if (ip6h)
		ip6h->hop_limit--;
	set_macs(eth, &fib);
	goto out;

pass:
	if ((__u32)reason >= FK_REASON_MAX)
		reason = FK_REASON_NON_IP; /* cannot happen */
	if (reason >= FK_REASON_POST_LOOKUP)
		ctr_add(&st->result[FK_RESULT_SUCCESS], bytes);
	ctr_add(&st->reason[reason], bytes);
	action = XDP_PASS;
out:
	ctr_add(&st->action[action], bytes);
	return action;
}

char _license[] SEC("license") = "GPL";
