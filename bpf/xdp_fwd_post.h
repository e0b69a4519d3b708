/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * The steps of fk_xdp_fwd from bpf_fib_lookup on, private to bpf/xdp_fwd.c
 * (included once, after the checks): the lookup and the counting of its
 * result (a NO_NEIGH destination recorded), what the kernel's forwarding
 * checks after its route lookup (hairpin, multipath leg, rp_filter, an
 * unlocked route MTU), the redirect, trimming the frame to the IP length,
 * and the rewrite (TTL and checksum, hop limit, MACs). The forwarding path
 * decides what needs a closer look before the lookup and keeps one value
 * for it (post_flags); whatever only a passed frame needs is out of line.
 */
#ifndef FIBKEEPER_XDP_FWD_POST_H
#define FIBKEEPER_XDP_FWD_POST_H

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
 * The reverse-path lookup of fib_validate_source: the route back to the
 * source (source and destination swapped, the packet's TOS, no mark), an
 * FK_RP_* answer. The kernel looks it up as arriving from the loopback
 * device; bpf_fib_lookup needs a device and checks that it forwards, so
 * this one names the ingress device, which forwards (the forward lookup
 * said so). The two differ only under policy rules that select on the
 * incoming device, ports or protocol, and then fk_state.rp_rules sends the
 * packet to the kernel before this is asked.
 */
static __always_inline __u8 rp_lookup(struct xdp_md *ctx,
				      const struct iphdr *iph)
{
	struct bpf_fib_lookup r = {};
	__u32 flags = BPF_FIB_LOOKUP_SKIP_NEIGH |
		      (fk_cfg.fib_flags &
		       (BPF_FIB_LOOKUP_DIRECT | BPF_FIB_LOOKUP_TBID));

	r.family = FK_AF_INET;
	r.tos = iph->tos;
	r.ipv4_src = iph->daddr;
	r.ipv4_dst = iph->saddr;
	r.ifindex = ctx->ingress_ifindex;
	if (flags & BPF_FIB_LOOKUP_TBID)
		r.tbid = fk_cfg.tbid;
	if (bpf_fib_lookup(ctx, &r, sizeof(r), flags) !=
	    BPF_FIB_LKUP_RET_SUCCESS)
		return FK_RP_NONE;
	return r.ifindex == ctx->ingress_ifindex ? FK_RP_INGRESS : FK_RP_OTHER;
}

/*
 * rp_filter (fib_validate_source) proven in XDP: the route back to the
 * source is unicast and leaves through the ingress device (strict, 1), or
 * is unicast and the ingress device has an IPv4 address (loose, 2; the
 * kernel accepts then whichever device the route takes). Anything else (a
 * multipath route back whose chosen leg is another device, say) is left to
 * the kernel. The answer of the lookup is cached per CPU (fk_rpcache) for
 * the packet's addresses, TOS and device, as long as fk_state.rp_gen, which
 * the agent raises on every change of routes, rules, addresses, links or
 * sysctls, stays the same.
 */
static __always_inline int rp_ok(struct xdp_md *ctx, const struct iphdr *iph,
				 const struct fk_state *ks,
				 const struct fk_dev_state *dev)
{
	__u32 zero = 0, slot = fk_slot(), gen = ks->rp_gen;
	struct fk_rp_entry *e = NULL;
	struct fk_rp_cache *c;
	__u8 res;

	if (ks->rp_rules)
		return 0;
	if (slot != FK_SLOT_OTHER) {
		c = bpf_map_lookup_elem(&fk_rpcache, &zero);
		if (c) {
			e = &c->e[FK_RP_HASH(iph->saddr, iph->daddr) &
				  (FK_RP_CACHE_SLOTS - 1)];
			if (e->saddr == iph->saddr && e->daddr == iph->daddr &&
			    e->gen == gen && e->tos == iph->tos &&
			    e->slot == slot) {
				res = e->res;
				goto decide;
			}
		}
	}
	res = rp_lookup(ctx, iph);
	if (e) {
		e->saddr = iph->saddr;
		e->daddr = iph->daddr;
		e->gen = gen;
		e->tos = iph->tos;
		e->slot = slot;
		e->res = res;
	}
decide:
	if (res == FK_RP_INGRESS)
		return 1;
	return res == FK_RP_OTHER && dev->rp_filter == 2 && dev->v4_addr;
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
 * Rewrite the Ethernet addresses with the FIB's. smac[6] and dmac[6] are
 * adjacent in bpf_fib_lookup (offsets 52-63), read as three aligned words
 * (the verifier wants stack reads aligned): smac[0-3], smac[4-5] dmac[0-1],
 * dmac[2-5].
 */
static __always_inline void set_macs(void *eth,
				     const struct bpf_fib_lookup *fib)
{
	const __u32 *m = (const __u32 *)fib->smac;
	__u32 mid = m[1];

	_Static_assert(__builtin_offsetof(struct bpf_fib_lookup, smac) == 52,
		       "smac");
	_Static_assert(__builtin_offsetof(struct bpf_fib_lookup, dmac) == 58,
		       "dmac");
	*(__u32 *)(eth + 2) = m[2]; /* dmac[2-5] */
	*(__u32 *)(eth + 6) = m[0]; /* smac[0-3] */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	*(__u16 *)eth = mid >> 16;	    /* dmac[0-1] */
	*(__u16 *)(eth + 10) = (__u16)mid; /* smac[4-5] */
#else
	*(__u16 *)eth = (__u16)mid;
	*(__u16 *)(eth + 10) = mid >> 16;
#endif
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

/* Every result index fits in the mask. */
#define FK_RESULT_MASK 15
_Static_assert(FK_RESULT_MAX <= FK_RESULT_MASK + 1, "result mask");

/*
 * A lookup whose result is not SUCCESS (its counter index): counted, a
 * NO_NEIGH destination recorded for the neighbor subsystem, the frame
 * passed to the kernel.
 */
static __always_inline int lookup_failed(const struct bpf_fib_lookup *fib,
					 struct fk_stats *st, __u64 bytes,
					 void *l3, int v6, __u32 result)
{
	if (result >= FK_RESULT_MAX)
		result = FK_RESULT_ERROR; /* cannot happen */
	/*
	 * clang compares a zero-extended copy of result, so the verifier
	 * loses that bound: mask it too (behind a barrier, or clang drops a
	 * mask it knows to change nothing)
	 */
	barrier_var(result);
	result &= FK_RESULT_MASK;
	ctr_add(&st->result[result], bytes);
	if (result == FK_RESULT_NO_NEIGH && fk_cfg.miss_track)
		record_miss(fib, l3, v6);
	ctr_add(&st->action[XDP_PASS], bytes);
	return XDP_PASS;
}

/*
 * bpf_fib_lookup for the frame that fib describes (the family's fields
 * filled in): FK_GO on SUCCESS, else XDP_PASS with the result counted. A
 * SUCCESS that is redirected is counted once, in action[REDIRECT] (one
 * cache line less per forwarded packet); result[SUCCESS] holds the SUCCESS
 * lookups passed afterwards. User space adds the two.
 */
static __always_inline int lookup(struct xdp_md *ctx,
				  struct bpf_fib_lookup *fib,
				  struct fk_stats *st, __u64 bytes, void *l3,
				  int v6)
{
	__u32 flags = fk_cfg.fib_flags; /* one read: the verifier knows it */
	int rc;

	/* one test on the usual path (the verifier drops the block or not) */
	if (unlikely(flags & (BPF_FIB_LOOKUP_TBID | FK_FIB_LOOKUP_MARK))) {
		if (flags & BPF_FIB_LOOKUP_TBID)
			fib->tbid = fk_cfg.tbid;
		if (flags & FK_FIB_LOOKUP_MARK)
			*(__u32 *)fib->smac = fk_cfg.mark; /* union: smac */
	}
	rc = bpf_fib_lookup(ctx, fib, sizeof(*fib),
			    flags & ~BPF_FIB_LOOKUP_SKIP_NEIGH);
	if (likely(rc == BPF_FIB_LKUP_RET_SUCCESS))
		return FK_GO;
	switch (rc) {
	case BPF_FIB_LKUP_RET_SUCCESS: /* next hop resolved: forward */
		return FK_GO;
	case BPF_FIB_LKUP_RET_BLACKHOLE: /* the stack drops and counts it */
	case BPF_FIB_LKUP_RET_UNREACHABLE: /* the stack sends ICMP unreach */
	case BPF_FIB_LKUP_RET_PROHIBIT: /* the stack sends ICMP prohibited */
	case BPF_FIB_LKUP_RET_NOT_FWDED: /* local/bcast/mcast: for the stack */
	case BPF_FIB_LKUP_RET_FWD_DISABLED: /* stack decides (drop/deliver) */
	case BPF_FIB_LKUP_RET_UNSUPP_LWT: /* stack encapsulates */
	case BPF_FIB_LKUP_RET_FRAG_NEEDED: /* stack fragments or sends ICMP */
	case BPF_FIB_LKUP_RET_NO_SRC_ADDR: /* stack picks a source or drops */
	case BPF_FIB_LKUP_RET_NO_NEIGH: /* stack resolves; recorded */
		return lookup_failed(fib, st, bytes, l3, v6, rc);
	default: /* negative errno or a newer kernel's code */
		return lookup_failed(fib, st, bytes, l3, v6, FK_RESULT_ERROR);
	}
}

/*
 * post_slow's flags: what the forwarding path found before the lookup,
 * put together without branches (post_flags).
 */
#define FK_POST_MP  1 /* the multipath leg may differ: check the route */
#define FK_POST_RP  2 /* rp_filter on the ingress device (IPv4) */
#define FK_POST_MTU 4 /* above the smallest unlocked route MTU */
#define FK_POST_V6  8 /* the packet is IPv6 */

/*
 * The flags for mp_check (0 or 1), the device's rp_filter byte, the
 * family's smallest unlocked route MTU (0: none) and the packet's length
 * (at least 20). rp_filter + 255 reaches bit 8 exactly when the byte is
 * not 0. mtu - 1 wraps 0 to 2^32 - 1: the 64-bit difference is negative
 * exactly when mtu is set and below len.
 */
static __always_inline __u32 post_flags(int mp_check, __u8 rp_filter,
					__u32 mtu, __u32 len)
{
	__u32 rp = ((__u32)rp_filter + 255) >> 8;
	__u64 over = ((__u64)(__u32)(mtu - 1) - (__u64)(len - 1)) >> 63;

	return (mp_check & FK_POST_MP) | rp << 1 | (__u32)over << 2;
}

/*
 * After a SUCCESS whose forwarding path found something to check (flags,
 * FK_POST_*): what the kernel's forwarding does differently, in its order
 * (multipath leg, rp_filter, an unlocked route MTU). A reason to pass, or
 * FK_GO. Out of line: the forwarding path calls it only when a flag is set.
 */
static __noinline int post_slow(struct xdp_md *ctx, void *l3,
				const struct fk_state *ks, __u32 flags)
{
	const struct fk_dev_state *dev;
	int v6 = (flags & FK_POST_V6) != 0;

	if ((flags & FK_POST_MP) && mp_covered(ks, l3, v6))
		return FK_REASON_MULTIPATH;
	if (flags & FK_POST_RP) {
		dev = &ks->dev[fk_slot()];
		if (!rp_ok(ctx, l3, ks, dev))
			return FK_REASON_RP_FILTER;
	}
	if (flags & FK_POST_MTU)
		return FK_REASON_ROUTE_MTU;
	return FK_GO;
}

/*
 * A redirect that found no port: the egress device's own policy keeps it
 * out of fk_tx_ports (fk_egress names it), or fibkeeper does not manage
 * the device. A reason decided after the lookup.
 */
static __noinline int no_port(__u32 ifindex)
{
	__u8 *r = bpf_map_lookup_elem(&fk_egress, &ifindex);
	__u32 reason;

	if (!r)
		return FK_REASON_NO_TXPORT;
	reason = *r;
	if (reason < FK_REASON_POST_LOOKUP || reason >= FK_REASON_MAX)
		return FK_REASON_NO_TXPORT; /* not the agent's: cannot happen */
	return reason;
}

/*
 * After a SUCCESS: the hairpin check, post_slow when a flag other than
 * FK_POST_V6 is set, then the redirect. A reason to pass, or FK_GO with
 * the redirect set up.
 */
static __always_inline int post_lookup(struct xdp_md *ctx,
				       const struct bpf_fib_lookup *fib,
				       __u32 ingress, const struct fk_state *ks,
				       void *l3, __u32 post)
{
	int rc;

	/* The kernel sends a redirect (and forwards) out the same device. */
	if (unlikely(fib->ifindex == ingress))
		return FK_REASON_HAIRPIN;
	if (unlikely(post & ~FK_POST_V6)) {
		rc = post_slow(ctx, l3, ks, post);
		if (rc != FK_GO)
			return rc;
	}
	/*
	 * Only redirect to devices fibkeeper manages and whose egress has no
	 * policy of its own; else the stack.
	 */
	if (unlikely(bpf_redirect_map(&fk_tx_ports, fib->ifindex, XDP_PASS) !=
		     XDP_REDIRECT))
		return no_port(fib->ifindex);
	return FK_GO;
}

/*
 * Cut the frame to the IP packet (Ethernet padding, trailing bytes), as the
 * kernel trims the skb to the IP length, so that what leaves is what the
 * kernel would send and fits the egress MTU the lookup checked. Returns the
 * new start of the frame, with hdr bytes of IP header after the Ethernet
 * header checked, or NULL when the tail cannot be adjusted.
 */
static __always_inline void *trim(struct xdp_md *ctx, long excess, __u32 hdr)
{
	void *data, *data_end;

	if (bpf_xdp_adjust_tail(ctx, (int)-excess))
		return NULL;
	data = (void *)(long)ctx->data;
	data_end = (void *)(long)ctx->data_end;
	if (data + sizeof(struct ethhdr) + hdr > data_end)
		return NULL;
	return data;
}

#endif /* FIBKEEPER_XDP_FWD_POST_H */
