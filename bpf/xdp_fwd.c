// SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0)
/*
 * fibkeeper XDP forwarder. Forwards IPv4 and IPv6 with bpf_fib_lookup (the
 * kernel's own routes and neighbors) and hands everything it cannot forward
 * to the kernel with XDP_PASS; it never drops. Layouts, names and counter
 * indexes: xdp_fwd.h.
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

/* IPv6 extension headers skipped on the way to the L4 header. */
#define IP6_EXT_MAX 4

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
	.ip4_options = 1,
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

/* Parse position: the next unread byte and the end of the frame. */
struct cursor {
	void *pos;
	void *end;
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
 * IPv4 header with options (IHL words): returns the L4 protocol or -1 if
 * truncated or invalid (version, IHL < 5, total length below the header
 * or beyond the frame). Leaves the cursor on the L4 header.
 */
static __always_inline int parse_iphdr(struct cursor *c, struct iphdr **iph)
{
	struct iphdr *h = c->pos;
	__u32 hlen, tot;

	if ((void *)(h + 1) > c->end)
		return -1;
	if (h->version != 4 || h->ihl < 5)
		return -1;
	hlen = h->ihl * 4;
	tot = bpf_ntohs(h->tot_len);
	if (tot < hlen || (void *)h + tot > c->end)
		return -1;
	c->pos = (void *)h + hlen;
	*iph = h;
	return h->protocol;
}

/*
 * IPv6 fixed header: returns the next header value or -1 if truncated or
 * invalid (version, payload beyond the frame). Cursor after the header.
 */
static __always_inline int parse_ip6hdr(struct cursor *c, struct ipv6hdr **ip6h)
{
	struct ipv6hdr *h = c->pos;

	if ((void *)(h + 1) > c->end)
		return -1;
	if (h->version != 6 ||
	    (void *)(h + 1) + bpf_ntohs(h->payload_len) > c->end)
		return -1;
	c->pos = h + 1;
	*ip6h = h;
	return h->nexthdr;
}

/*
 * IPv6 extension headers after the fixed header: skips up to IP6_EXT_MAX
 * routing, destination options, fragment and AH headers and returns the
 * upper-layer protocol, or -1 for a hop-by-hop header (the stack must see
 * it), a header that does not fit in the frame, or a longer chain. *frag is
 * set if a fragment header was seen (then there are no ports to read).
 */
static __always_inline int parse_ip6ext(struct cursor *c, int nexthdr,
					int *frag)
{
	struct ipv6_opt_hdr *h;
	__u32 len;
	int i;

#pragma unroll
	for (i = 0; i <= IP6_EXT_MAX; i++) {
		switch (nexthdr) {
		case IPPROTO_ROUTING:
		case IPPROTO_DSTOPTS:
		case IPPROTO_FRAGMENT:
		case IPPROTO_AH:
			break;
		case IPPROTO_HOPOPTS:
			return -1;
		default:
			return nexthdr;
		}
		if (i == IP6_EXT_MAX)
			return -1;
		h = c->pos;
		if ((void *)h + 8 > c->end)
			return -1;
		if (nexthdr == IPPROTO_FRAGMENT) {
			*frag = 1;
			len = 8;
		} else if (nexthdr == IPPROTO_AH) {
			len = (h->hdrlen + 2) * 4;
		} else {
			len = (h->hdrlen + 1) * 8;
		}
		if ((void *)h + len > c->end)
			return -1;
		nexthdr = h->nexthdr;
		c->pos = (void *)h + len;
	}
	return -1;
}

/*
 * Source and destination ports of TCP, UDP, UDP-Lite, SCTP and DCCP for the
 * multipath hash, as the kernel's flow dissector reads them. limit is the
 * end of the L3 packet; ports outside it are left zero.
 */
static __always_inline void parse_ports(struct cursor *c, void *limit,
					int proto, struct bpf_fib_lookup *fib)
{
	__be16 *p = c->pos;

	switch (proto) {
	case IPPROTO_TCP:
	case IPPROTO_UDP:
	case IPPROTO_UDPLITE:
	case IPPROTO_SCTP:
	case IPPROTO_DCCP:
		break;
	default:
		return;
	}
	if ((void *)(p + 2) > c->end || (void *)(p + 2) > limit)
		return;
	fib->sport = p[0];
	fib->dport = p[1];
}

/* Decrement the TTL and patch the header checksum (RFC 1624). */
static __always_inline void ip4_dec_ttl(struct iphdr *iph)
{
	__u32 sum = iph->check;

	sum += bpf_htons(0x0100);
	iph->check = (__sum16)(sum + (sum >= 0xffff));
	iph->ttl--;
}

/*
 * Destination MAC equals the configured one. b is rodata: read it through
 * volatile, or clang folds the compile-time default (zeros) into the code.
 */
static __always_inline int mac_eq(const __u8 *a, const volatile __u8 *b)
{
	const volatile __u16 *w = (const volatile __u16 *)b;
	const __u16 *p = (const __u16 *)a;

	return p[0] == w[0] && p[1] == w[1] && p[2] == w[2];
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

SEC("xdp")
int fk_xdp_fwd(struct xdp_md *ctx)
{
	void *data_end = (void *)(long)ctx->data_end;
	void *data = (void *)(long)ctx->data;
	struct cursor c = { .pos = data, .end = data_end };
	__u64 bytes = data_end - data;
	struct bpf_fib_lookup fib = {};
	struct ipv6hdr *ip6h = NULL;
	struct iphdr *iph = NULL;
	__u32 slot = fk_cfg.slot < FK_MAX_SLOTS ? fk_cfg.slot : FK_SLOT_OTHER;
	struct ethhdr *eth;
	struct fk_stats *st;
	int action = XDP_PASS;
	int reason, proto, rc;
	void *l3, *l3_end;

	st = bpf_map_lookup_elem(&fk_stats, &slot);
	if (!st)
		return XDP_PASS; /* cannot happen: slot < FK_MAX_SLOTS */

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
		if (!fk_cfg.ipv4) {
			reason = FK_REASON_IP4_OFF;
			goto pass;
		}
		proto = parse_iphdr(&c, &iph);
		if (proto < 0) {
			reason = FK_REASON_IP4_BAD;
			goto pass;
		}
		if (!fk_cfg.ip4_options && iph->ihl != 5) {
			reason = FK_REASON_IP4_OPTIONS;
			goto pass;
		}
		if (iph->ttl <= 1) {
			reason = FK_REASON_TTL;
			goto pass;
		}
		l3_end = l3 + bpf_ntohs(iph->tot_len);
		if (!(iph->frag_off & bpf_htons(IP_MF | IP_OFFSET)))
			parse_ports(&c, l3_end, proto, &fib);
		fib.family = FK_AF_INET;
		fib.tos = iph->tos;
		fib.l4_protocol = proto;
		fib.tot_len = bpf_ntohs(iph->tot_len);
		fib.ipv4_src = iph->saddr;
		fib.ipv4_dst = iph->daddr;
		break;
	case bpf_htons(ETH_P_IPV6): {
		int frag = 0;

		if (!fk_cfg.ipv6) {
			reason = FK_REASON_IP6_OFF;
			goto pass;
		}
		proto = parse_ip6hdr(&c, &ip6h);
		if (proto < 0) {
			reason = FK_REASON_IP6_BAD;
			goto pass;
		}
		proto = parse_ip6ext(&c, proto, &frag);
		if (proto < 0) {
			reason = FK_REASON_IP6_EXT;
			goto pass;
		}
		if (ip6h->hop_limit <= 1) {
			reason = FK_REASON_TTL;
			goto pass;
		}
		l3_end = (void *)(ip6h + 1) + bpf_ntohs(ip6h->payload_len);
		if (!frag)
			parse_ports(&c, l3_end, proto, &fib);
		fib.family = FK_AF_INET6;
		fib.flowinfo = *(__be32 *)ip6h & bpf_htonl(0x0fffffff);
		fib.l4_protocol = proto;
		fib.tot_len = sizeof(*ip6h) + bpf_ntohs(ip6h->payload_len);
		__builtin_memcpy(fib.ipv6_src, &ip6h->saddr, 16);
		__builtin_memcpy(fib.ipv6_dst, &ip6h->daddr, 16);
		break;
	}
	case bpf_htons(ETH_P_ARP):
		reason = FK_REASON_ARP;
		goto pass;
	case bpf_htons(ETH_P_8021Q):
	case bpf_htons(ETH_P_8021AD):
		reason = FK_REASON_VLAN;
		goto pass;
	default:
		reason = FK_REASON_NON_IP;
		goto pass;
	}

	fib.ifindex = ctx->ingress_ifindex;
	if (fk_cfg.fib_flags & BPF_FIB_LOOKUP_TBID)
		fib.tbid = fk_cfg.tbid;
	if (fk_cfg.fib_flags & FK_FIB_LOOKUP_MARK)
		*(__u32 *)fib.smac = fk_cfg.mark; /* union with smac */

	rc = bpf_fib_lookup(ctx, &fib, sizeof(fib),
			    fk_cfg.fib_flags & ~BPF_FIB_LOOKUP_SKIP_NEIGH);
	ctr_add(&st->result[(__u32)rc < FK_RESULT_ERROR ? rc : FK_RESULT_ERROR],
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

	/* Only redirect to devices fibkeeper manages; else the stack. */
	action = bpf_redirect_map(&fk_tx_ports, fib.ifindex, XDP_PASS);
	if (action != XDP_REDIRECT) {
		action = XDP_PASS;
		reason = FK_REASON_NO_TXPORT;
		goto pass;
	}
	if (iph)
		ip4_dec_ttl(iph);
	else if (ip6h)
		ip6h->hop_limit--;
	set_macs(eth, &fib);
	goto out;

pass:
	ctr_add(&st->reason[reason], bytes);
	action = XDP_PASS;
out:
	ctr_add(&st->action[action], bytes);
	return action;
}

char _license[] SEC("license") = "GPL";
