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
 * Destination MAC equals the configured one. b is rodata: read it through
 * volatile, or clang folds the compile-time default (zeros) into the code.
 */
static __always_inline int mac_eq(const __u8 *a, const volatile __u8 *b)
{
	const volatile __u16 *w = (const volatile __u16 *)b;
	const __u16 *p = (const __u16 *)a;

	return p[0] == w[0] && p[1] == w[1] && p[2] == w[2];
}

/*
 * The "ports" the kernel's flow dissector reports (proto_ports_offset):
 * bytes 0-3 of TCP, UDP, UDP-Lite, SCTP, DCCP and ESP (the SPI), bytes 4-7
 * of AH (its SPI). limit is the end of the IP packet; ports outside it are
 * left zero, as the dissector leaves them.
 */
static __always_inline void parse_ports(void *l4, void *limit, void *end,
					int proto, struct bpf_fib_lookup *fib)
{
	__be16 *p;

	switch (proto) {
	case IPPROTO_TCP:
	case IPPROTO_UDP:
	case IPPROTO_UDPLITE:
	case IPPROTO_SCTP:
	case IPPROTO_DCCP:
	case IPPROTO_ESP:
		p = l4;
		break;
	case IPPROTO_AH:
		p = l4 + 4;
		break;
	default:
		return;
	}
	if ((void *)(p + 2) > end || (void *)(p + 2) > limit)
		return;
	fib->sport = p[0];
	fib->dport = p[1];
}

/* One's complement sum folded to 16 bits: 0xffff when a header is right. */
static __always_inline __u16 csum_fold_ok(__u64 sum)
{
	sum = (sum & 0xffffffff) + (sum >> 32);
	sum = (sum & 0xffffffff) + (sum >> 32);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return sum == 0xffff;
}

/* The 20 bytes of an IPv4 header without options, as u32 words. */
static __always_inline __u64 csum_hdr20(const struct iphdr *h)
{
	const __u32 *w = (const __u32 *)h;

	return (__u64)w[0] + w[1] + w[2] + w[3] + w[4];
}

/* The options area, copied to the stack (with ip4_options only). */
struct ip4_opts {
	__u8 b[IP4_OPT_MAX];
	__u32 len;
	__u32 i;
	int eol;
	int ok;
};

/*
 * One step of the options walk (a bpf_loop callback, so that the verifier
 * checks it once): the options the kernel forwards unchanged are NOP, end
 * of list followed by zeros only (the kernel zeroes anything else after it),
 * and kinds ip_options_compile does not act on, with a valid length. Record
 * route, timestamp, source routes, router alert and CIPSO are the kernel's.
 */
static long ip4_opt_step(__u32 n, void *arg)
{
	struct ip4_opts *o = arg;
	__u32 i = o->i;
	__u8 t, l;

	(void)n;
	if (i >= o->len) {
		o->ok = 1;
		return 1;
	}
	if (i >= IP4_OPT_MAX)
		return 1;
	t = o->b[i];
	if (o->eol || t <= 1) {
		if (o->eol && t != 0)
			return 1; /* garbage after the end of the list */
		o->eol = o->eol || t == 0;
		o->i = i + 1;
		return 0;
	}
	switch (t) {
	case 7: /* record route */
	case 68: /* timestamp */
	case 131: /* loose source route */
	case 134: /* CIPSO */
	case 137: /* strict source route */
	case 148: /* router alert */
		return 1;
	}
	if (i + 1 >= o->len || i + 1 >= IP4_OPT_MAX)
		return 1;
	l = o->b[i + 1];
	if (l < 2 || l > o->len - i)
		return 1;
	o->i = i + l;
	return 0;
}

/*
 * An IPv4 header with options (ip4_options on): returns FK_GO when the
 * checksum is right and every option is one the kernel forwards unchanged,
 * else the reason. The options are read with bpf_xdp_load_bytes (5.18+)
 * and walked with bpf_loop (5.17+); with ip4_options off none of this is
 * in the verified program.
 */
static __always_inline int ip4_options(struct xdp_md *ctx,
				       const struct iphdr *h, __u32 hlen)
{
	struct ip4_opts o = {};
	__u64 sum = csum_hdr20(h);
	__u64 len = (__u64)hlen - 20; /* 64 bits: compared and passed as is */
	int i;

	/* two separate checks on one register: the verifier must see both */
	barrier_var(len);
	if (len > IP4_OPT_MAX)
		return FK_REASON_IP4_BAD;
	barrier_var(len);
	if (len < 4)
		return FK_REASON_IP4_BAD;
	if (bpf_xdp_load_bytes(ctx, sizeof(struct ethhdr) + 20, o.b, len))
		return FK_REASON_IP4_BAD;
	for (i = 0; i < IP4_OPT_MAX / 4; i++) {
		if ((__u64)i * 4 >= len)
			break;
		sum += *(__u32 *)&o.b[i * 4];
	}
	if (!csum_fold_ok(sum))
		return FK_REASON_IP4_CSUM;
	o.len = len;
	bpf_loop(IP4_OPT_MAX, ip4_opt_step, &o, 0);
	return o.ok ? FK_GO : FK_REASON_IP4_OPTIONS;
}

/*
 * Source or destination class the kernel never forwards (IPv4), from the
 * address's first byte: 0/8, 127/8, multicast, class E, limited broadcast.
 */
static __always_inline int ip4_martian(__u8 top)
{
	return top == 0 || top == 127 || top >= 224;
}

/* The source is one of the node's own (fk_state.local4, fk_local4w). */
static __always_inline int ip4_local(__be32 a, const struct fk_state *ks)
{
	const __u32 m = FK_LOCAL4_SLOTS - 1;
	__u32 i = FK_LOCAL4_HASH(a);

	if (ks->local4[i & m] == a || ks->local4[(i + 1) & m] == a ||
	    ks->local4[(i + 2) & m] == a || ks->local4[(i + 3) & m] == a)
		return 1;
	if (ks->local4w) {
		struct fk_lpm4_key key = { .prefixlen = 32, .addr = a };

		if (bpf_map_lookup_elem(&fk_local4w, &key))
			return 1;
	}
	return 0;
}

/* ICMP types the kernel hashes by the quoted header (icmp_is_err). */
static __always_inline int icmp4_is_err(__u8 type)
{
	return type == 3 || type == 4 || type == 5 || type == 11 || type == 12;
}

/* Protocols the flow dissector enters (encapsulation, policy 2). */
static __always_inline int is_encap(int proto)
{
	return proto == IPPROTO_IPIP || proto == IPPROTO_IPV6 ||
	       proto == IPPROTO_GRE || proto == IPPROTO_MPLS;
}

/*
 * IPv4: every check before the lookup; fills fib. Returns a reason to pass
 * or FK_GO. The order is the kernel's: header, checksum, options, then the
 * routing input checks.
 */
static __always_inline int ip4_prepare(struct xdp_md *ctx, struct cursor *c,
				       const struct fk_state *ks,
				       struct bpf_fib_lookup *fib,
				       struct iphdr **iphp, struct pkt *pk)
{
	struct iphdr *h = c->pos;
	__u32 hlen, tot;
	void *l4, *l3_end;
	int proto, pol, rc;

	if (!fk_cfg.ipv4)
		return FK_REASON_IP4_OFF;
	if ((void *)(h + 1) > c->end)
		return FK_REASON_IP4_BAD;
	if (h->version != 4 || h->ihl < 5)
		return FK_REASON_IP4_BAD;
	hlen = h->ihl * 4;
	tot = bpf_ntohs(h->tot_len);
	if (tot < hlen || (void *)h + tot > c->end)
		return FK_REASON_IP4_BAD;
	if (hlen > 20) {
		if (!fk_cfg.ip4_options)
			return FK_REASON_IP4_OPTIONS;
		rc = ip4_options(ctx, h, hlen);
		if (rc != FK_GO)
			return rc;
	} else if (!csum_fold_ok(csum_hdr20(h))) {
		return FK_REASON_IP4_CSUM;
	}
	if (h->ttl <= 1)
		return FK_REASON_TTL;
	if (ip4_martian(*(__u8 *)&h->saddr))
		return FK_REASON_MARTIAN_SRC;
	if (ip4_martian(*(__u8 *)&h->daddr))
		return FK_REASON_MARTIAN_DST;
	if (ip4_local(h->saddr, ks))
		return FK_REASON_LOCAL_SRC;

	proto = h->protocol;
	l4 = (void *)h + hlen;
	l3_end = (void *)h + tot;
	if (!(h->frag_off & bpf_htons(IP_MF | IP_OFFSET)))
		parse_ports(l4, l3_end, c->end, proto, fib);
	pol = ks->mp_policy4;
	if (pol == 0) {
		if (proto == IPPROTO_ICMP &&
		    !(h->frag_off & bpf_htons(IP_OFFSET))) {
			__u8 *type = l4;

			pk->mp_check = (void *)(type + 1) <= c->end &&
				       icmp4_is_err(*type);
		}
	} else if (pol == 2) {
		pk->mp_check = is_encap(proto);
	} else if (pol != 1) {
		pk->mp_check = 1;
	}
	fib->family = FK_AF_INET;
	fib->tos = h->tos;
	fib->l4_protocol = proto;
	fib->tot_len = tot;
	fib->ipv4_src = h->saddr;
	fib->ipv4_dst = h->daddr;
	pk->l3_len = tot;
	*iphp = h;
	return FK_GO;
}

/*
 * IPv6 extension headers after the fixed header, walked as the flow
 * dissector walks them: destination options and routing headers are
 * skipped; a fragment header ends the walk with its next header (and no
 * ports); anything else (AH and ESP included) is the protocol. Returns it,
 * or -1 for hop-by-hop (the kernel's), a header past limit or a chain
 * longer than IP6_EXT_MAX. *walked: at least one header was skipped.
 */
static __always_inline int ip6_walk(struct cursor *c, void *limit, int next,
				    int *walked, int *frag)
{
	struct ipv6_opt_hdr *h;
	int i;

	for (i = 0; i <= IP6_EXT_MAX; i++) {
		switch (next) {
		case IPPROTO_ROUTING:
		case IPPROTO_DSTOPTS:
		case IPPROTO_FRAGMENT:
			break;
		case IPPROTO_HOPOPTS:
			return -1;
		default:
			return next;
		}
		if (i == IP6_EXT_MAX)
			return -1;
		h = c->pos;
		if ((void *)h + 8 > c->end || (void *)h + 8 > limit)
			return -1;
		*walked = 1;
		if (next == IPPROTO_FRAGMENT) {
			*frag = 1;
			c->pos = (void *)h + 8;
			return h->nexthdr;
		}
		next = h->nexthdr;
		c->pos = (void *)h + (h->hdrlen + 1) * 8;
		if (c->pos > limit)
			return -1;
	}
	return -1;
}

/* Source or destination the kernel never forwards (IPv6). */
static __always_inline int ip6_martian(const struct in6_addr *a)
{
	__u32 w0 = bpf_ntohl(a->in6_u.u6_addr32[0]);

	/* ::/64 (unspecified, loopback, IPv4-mapped), multicast, link-local */
	return (w0 == 0 && a->in6_u.u6_addr32[1] == 0) || (w0 >> 24) == 0xff ||
	       (w0 & 0xffc00000) == 0xfe800000;
}

/* IPv6: every check before the lookup; fills fib. A reason or FK_GO. */
static __always_inline int ip6_prepare(struct cursor *c,
				       const struct fk_state *ks,
				       const struct fk_dev_state *dev,
				       struct bpf_fib_lookup *fib,
				       struct ipv6hdr **ip6hp, struct pkt *pk)
{
	struct ipv6hdr *h = c->pos;
	int proto, pol, walked = 0, frag = 0;
	void *l3_end;
	__u32 plen;

	if (!fk_cfg.ipv6)
		return FK_REASON_IP6_OFF;
	if ((void *)(h + 1) > c->end || h->version != 6)
		return FK_REASON_IP6_BAD;
	if (dev->ip6_off)
		return FK_REASON_IP6_DISABLED;
	plen = bpf_ntohs(h->payload_len);
	if (plen == 0 && h->nexthdr == IPPROTO_HOPOPTS)
		return FK_REASON_IP6_EXT; /* jumbogram */
	l3_end = (void *)(h + 1) + plen;
	if (l3_end > c->end)
		return FK_REASON_IP6_BAD;
	if (ip6_martian(&h->saddr))
		return FK_REASON_MARTIAN_SRC;
	if (ip6_martian(&h->daddr))
		return FK_REASON_MARTIAN_DST;
	c->pos = h + 1;
	proto = ip6_walk(c, l3_end, h->nexthdr, &walked, &frag);
	if (proto < 0)
		return FK_REASON_IP6_EXT;
	if (h->hop_limit <= 1)
		return FK_REASON_TTL;
	if (proto == IPPROTO_ICMPV6 && !frag) {
		__u8 *type = c->pos;

		if ((void *)(type + 1) <= c->end && (void *)(type + 1) <= l3_end) {
			if (*type >= 133 && *type <= 137)
				return FK_REASON_NDISC;
			pk->mp_check = *type < 128;
		}
	}
	if (!frag)
		parse_ports(c->pos, l3_end, c->end, proto, fib);
	pol = ks->mp_policy6;
	if (pol == 0)
		pk->mp_check |= walked;
	else if (pol == 2)
		pk->mp_check = is_encap(proto);
	else if (pol == 1)
		pk->mp_check = 0;
	else
		pk->mp_check = 1;
	fib->family = FK_AF_INET6;
	fib->flowinfo = *(__be32 *)h & bpf_htonl(0x0fffffff);
	fib->l4_protocol = proto;
	fib->tot_len = sizeof(*h) + plen;
	__builtin_memcpy(fib->ipv6_src, &h->saddr, 16);
	__builtin_memcpy(fib->ipv6_dst, &h->daddr, 16);
	pk->l3_len = sizeof(*h) + plen;
	*ip6hp = h;
	return FK_GO;
}

/*
 * The packet's destination is inside a multipath route (fk_mpath4/6). Read
 * from the header: after a lookup, fib->ipv4_dst holds the gateway.
 */
static __always_inline int mp_covered(const struct fk_state *ks,
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
static __always_inline int rp_ok(struct xdp_md *ctx,
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
static __always_inline int trim(struct xdp_md *ctx, long excess,
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
	ctr_add(&st->reason[reason], bytes);
	action = XDP_PASS;
out:
	ctr_add(&st->action[action], bytes);
	return action;
}

char _license[] SEC("license") = "GPL";
