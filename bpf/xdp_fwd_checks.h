/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * The checks of fk_xdp_fwd before bpf_fib_lookup, private to bpf/xdp_fwd.c
 * (included once, after its maps and parse structures): what the kernel's
 * receive path and route input check for IPv4 (header, checksum, options,
 * TTL, martians, local sources) and IPv6 (header, lengths, martians,
 * extension headers, neighbor discovery), and what the multipath hash and
 * FIB rules will see (ports and protocol as the flow dissector reads them).
 * Each prepare function returns a reason to pass the frame, or FK_GO.
 */
#ifndef FIBKEEPER_XDP_FWD_CHECKS_H
#define FIBKEEPER_XDP_FWD_CHECKS_H
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
	const __u32 *b = &ks->local4[FK_LOCAL4_HASH(a)];

	_Static_assert(FK_LOCAL4_PROBES == 4, "four loads below");
	if (b[0] == a || b[1] == a || b[2] == a || b[3] == a)
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
	if (!ks->mpath4) {
		/* no multipath route: every hash gives the one leg */
	} else if (pol == 0) {
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
static __noinline int ip6_walk(struct cursor *c, void *limit, int next,
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
	switch (h->nexthdr) {
	case IPPROTO_HOPOPTS:
	case IPPROTO_ROUTING:
	case IPPROTO_DSTOPTS:
	case IPPROTO_FRAGMENT:
		proto = ip6_walk(c, l3_end, h->nexthdr, &walked, &frag);
		if (proto < 0)
			return FK_REASON_IP6_EXT;
		break;
	default:
		proto = h->nexthdr;
	}
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

#endif /* FIBKEEPER_XDP_FWD_CHECKS_H */
