/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * The checks of fk_xdp_fwd before bpf_fib_lookup, private to bpf/xdp_fwd.c
 * (included once, after its maps and parse structures): what the kernel's
 * receive path and route input check for IPv4 (header, checksum, options,
 * TTL, martians, local sources) and IPv6 (header, lengths, martians,
 * extension headers, neighbor discovery), and what the multipath hash and
 * FIB rules will see (ports and protocol as the flow dissector reads them).
 * Each prepare function returns a reason to pass the frame, or FK_GO; the
 * forwarding path calls them with the header's bounds already checked.
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
	__be16 *p = l4;

	/* the common two first: two compares instead of the whole switch */
	if (likely(proto == IPPROTO_UDP || proto == IPPROTO_TCP))
		goto read;
	switch (proto) {
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
read:
	if ((void *)(p + 2) > end || (void *)(p + 2) > limit)
		return;
	fib->sport = p[0];
	fib->dport = p[1];
}

/*
 * A header's checksum is right: its one's complement sum, folded to 16
 * bits, is 0xffff. sum is the plain sum of the header's 32-bit words (at
 * most 15, so below 2^36; a u32 adds its two 16-bit words, as 2^16 = 1
 * mod 0xffff). Two folds leave s <= 0xffff + 16 with s = sum (mod 0xffff),
 * and s = 0 only for sum = 0: the folded sum is 0xffff (sum a nonzero
 * multiple of 0xffff) exactly when s is 0xffff. Two folds where a sum of
 * any size needs four.
 */
static __always_inline int csum_fold_ok(__u64 sum)
{
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return sum == 0xffff;
}

/* The plain sum of the 20 bytes of an IPv4 header without options. */
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
 * top - 1 wraps 0 to 255: one compare for 0 and 224-255.
 */
static __always_inline int ip4_martian(__u8 top)
{
	return (__u8)(top - 1) >= 223 || top == 127;
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
 * The IPv4 header checks of the kernel's receive path and route input, in
 * its order: version and header length, total length, options (with
 * ip4_options) or checksum, TTL, martian source and destination. A reason
 * to pass, or FK_GO. Out of line: the forwarding path calls it only when
 * its own test of the same conditions (ip4_prepare) fails, to find which.
 */
static __noinline int ip4_header(struct xdp_md *ctx, struct iphdr *h,
				 void *end)
{
	__u8 vihl = *(__u8 *)h;
	__u32 hlen, tot;
	int rc;

	if ((vihl & 0xf0) != 0x40 || (vihl & 0x0f) < 5)
		return FK_REASON_IP4_BAD;
	hlen = (vihl & 0x0f) * 4;
	tot = bpf_ntohs(h->tot_len);
	if (tot < hlen || (void *)h + tot > end)
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
	return FK_GO;
}

/*
 * IPv4: every check before the lookup; fills fib and pk. Returns a reason
 * to pass or FK_GO. h is the header (20 bytes checked), end the end of the
 * frame. The common case (no options, lengths, checksum, TTL and addresses
 * right) is one chain of compares without a reason to keep; any of them
 * failing asks ip4_header, which applies the kernel's order. The local
 * source comes last in that order.
 */
static __always_inline int ip4_prepare(struct xdp_md *ctx, struct iphdr *h,
				       void *end, const struct fk_state *ks,
				       struct bpf_fib_lookup *fib,
				       struct pkt *pk)
{
	__u32 tot = bpf_ntohs(h->tot_len), hlen = sizeof(*h);
	void *l4, *l3_end;
	int proto, pol, rc;

	if (unlikely(*(__u8 *)h != 0x45 || tot < sizeof(*h) ||
		     (void *)h + tot > end || !csum_fold_ok(csum_hdr20(h)) ||
		     h->ttl <= 1 || ip4_martian(*(__u8 *)&h->saddr) ||
		     ip4_martian(*(__u8 *)&h->daddr))) {
		rc = ip4_header(ctx, h, end);
		if (rc != FK_GO)
			return rc;
		hlen = (*(__u8 *)h & 0x0f) * 4; /* options the kernel allows */
	}
	if (unlikely(ip4_local(h->saddr, ks)))
		return FK_REASON_LOCAL_SRC;

	proto = h->protocol;
	l4 = (void *)h + hlen;
	l3_end = (void *)h + tot;
	if (likely(!(h->frag_off & bpf_htons(IP_MF | IP_OFFSET))))
		parse_ports(l4, l3_end, end, proto, fib);
	pol = ks->mp_policy4;
	if (likely(!ks->mpath4)) {
		/* no multipath route: every hash gives the one leg */
	} else if (pol == 0) {
		if (proto == IPPROTO_ICMP &&
		    !(h->frag_off & bpf_htons(IP_OFFSET))) {
			__u8 *type = l4;

			pk->mp_check = (void *)(type + 1) <= end &&
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
	return FK_GO;
}

/* ip6_walk: a fragment header ended the walk (added to the protocol). */
#define IP6_WALK_FRAG 0x100

/*
 * IPv6 extension headers after the fixed header, walked as the flow
 * dissector walks them: destination options and routing headers are
 * skipped; a fragment header ends the walk with its next header (and no
 * ports); anything else (AH and ESP included) is the protocol. Called with
 * an extension header first; returns the protocol (| IP6_WALK_FRAG after a
 * fragment header) with c->pos at its header, or -1 for hop-by-hop (the
 * kernel's), a header past limit or a chain longer than IP6_EXT_MAX.
 */
static __noinline int ip6_walk(struct cursor *c, void *limit, int next)
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
		if (next == IPPROTO_FRAGMENT) {
			c->pos = (void *)h + 8;
			return h->nexthdr | IP6_WALK_FRAG;
		}
		next = h->nexthdr;
		c->pos = (void *)h + (h->hdrlen + 1) * 8;
		if (c->pos > limit)
			return -1;
	}
	return -1;
}

/*
 * Source or destination the kernel never forwards (IPv6): ::/64
 * (unspecified, loopback, IPv4-mapped), link-local fe80::/10, multicast
 * ff00::/8. Global and unique-local addresses (below fe80::) take two
 * compares.
 */
static __always_inline int ip6_martian(const struct in6_addr *a)
{
	__u32 w0 = bpf_ntohl(a->in6_u.u6_addr32[0]);

	if (w0 >= 0xfe800000)
		return w0 < 0xfec00000 || w0 >= 0xff000000;
	return w0 == 0 && a->in6_u.u6_addr32[1] == 0;
}

/*
 * The IPv6 header checks before the extension headers, in the kernel's
 * order: version, IPv6 off on the device, jumbogram, payload length,
 * martian source and destination. A reason or FK_GO; out of line, called
 * when ip6_prepare's own test of the same conditions fails.
 */
static __noinline int ip6_header(struct ipv6hdr *h, void *end,
				 const struct fk_dev_state *dev)
{
	__u32 plen;

	if (h->version != 6)
		return FK_REASON_IP6_BAD;
	if (dev->ip6_off)
		return FK_REASON_IP6_DISABLED;
	plen = bpf_ntohs(h->payload_len);
	if (plen == 0 && h->nexthdr == IPPROTO_HOPOPTS)
		return FK_REASON_IP6_EXT; /* jumbogram */
	if ((void *)(h + 1) + plen > end)
		return FK_REASON_IP6_BAD;
	if (ip6_martian(&h->saddr))
		return FK_REASON_MARTIAN_SRC;
	if (ip6_martian(&h->daddr))
		return FK_REASON_MARTIAN_DST;
	return FK_GO;
}

/*
 * IPv6: every check before the lookup; fills fib and pk. A reason or
 * FK_GO. h is the header (40 bytes checked), end the end of the frame. As
 * for IPv4, the common case is one chain of compares (ip6_header finds the
 * reason when it fails); then the extension headers, the hop limit and
 * neighbor discovery, in the kernel's order.
 */
static __always_inline int ip6_prepare(struct ipv6hdr *h, void *end,
				       const struct fk_state *ks,
				       const struct fk_dev_state *dev,
				       struct bpf_fib_lookup *fib,
				       struct pkt *pk)
{
	__u32 plen = bpf_ntohs(h->payload_len);
	void *l3_end = (void *)(h + 1) + plen, *l4 = h + 1;
	int proto, pol, rc, walked = 0, frag = 0;

	if (unlikely(h->version != 6 || dev->ip6_off || plen == 0 ||
		     l3_end > end || ip6_martian(&h->saddr) ||
		     ip6_martian(&h->daddr))) {
		rc = ip6_header(h, end, dev);
		if (rc != FK_GO)
			return rc;
	}
	proto = h->nexthdr;
	switch (proto) {
	case IPPROTO_HOPOPTS:
	case IPPROTO_ROUTING:
	case IPPROTO_DSTOPTS:
	case IPPROTO_FRAGMENT: {
		struct cursor c = { .pos = l4, .end = end };

		proto = ip6_walk(&c, l3_end, proto);
		if (proto < 0)
			return FK_REASON_IP6_EXT;
		l4 = c.pos;
		walked = 1;
		frag = proto & IP6_WALK_FRAG;
		proto &= 0xff;
		break;
	}
	}
	if (h->hop_limit <= 1)
		return FK_REASON_TTL;
	if (proto == IPPROTO_ICMPV6 && !frag) {
		__u8 *type = l4;

		if ((void *)(type + 1) <= end && (void *)(type + 1) <= l3_end) {
			if (*type >= 133 && *type <= 137)
				return FK_REASON_NDISC;
			pk->mp_check = *type < 128;
		}
	}
	if (!frag)
		parse_ports(l4, l3_end, end, proto, fib);
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
	return FK_GO;
}

#endif /* FIBKEEPER_XDP_FWD_CHECKS_H */
