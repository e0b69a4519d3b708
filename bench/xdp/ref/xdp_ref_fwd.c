// SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0)
/*
 * Bare reference forwarder for benchmarks only: the same work as the
 * kernel's samples/bpf/xdp_fwd_kern.c (bpf_fib_lookup, egress check in a
 * DEVMAP_HASH, TTL/hop limit decrement, MAC rewrite, bpf_redirect_map) and
 * nothing else: no counters, no configuration, no L4 ports, no extension
 * headers. Lookup flags are 0 (FIB rules honoured), like the sample's
 * default. Benchmarks run it next to fk_xdp_fwd in the same run.
 *
 *   program ref_xdp_fwd (section "xdp")
 *   map     ref_tx_ports  DEVMAP_HASH, key u32 ifindex, value u32 ifindex, 64
 */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/ip.h>
#include <linux/ipv6.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#define AF_INET	 2
#define AF_INET6 10

struct {
	__uint(type, BPF_MAP_TYPE_DEVMAP_HASH);
	__uint(max_entries, 64);
	__type(key, __u32);
	__type(value, __u32);
} ref_tx_ports SEC(".maps");

/* TTL decrement with the incremental checksum update (RFC 1624). */
static __always_inline void ref_dec_ttl(struct iphdr *iph)
{
	__u32 sum = iph->check;

	sum += bpf_htons(0x0100);
	iph->check = (__sum16)(sum + (sum >= 0xffff));
	iph->ttl--;
}

SEC("xdp")
int ref_xdp_fwd(struct xdp_md *ctx)
{
	void *data_end = (void *)(long)ctx->data_end;
	void *data = (void *)(long)ctx->data;
	struct bpf_fib_lookup fib = {};
	struct ethhdr *eth = data;
	struct ipv6hdr *ip6h;
	struct iphdr *iph;
	__u16 proto;

	if ((void *)(eth + 1) > data_end)
		return XDP_PASS;
	proto = eth->h_proto;
	if (proto == bpf_htons(ETH_P_IP)) {
		iph = (void *)(eth + 1);
		if ((void *)(iph + 1) > data_end)
			return XDP_PASS;
		if (iph->ttl <= 1)
			return XDP_PASS;
		fib.family = AF_INET;
		fib.tos = iph->tos;
		fib.l4_protocol = iph->protocol;
		fib.tot_len = bpf_ntohs(iph->tot_len);
		fib.ipv4_src = iph->saddr;
		fib.ipv4_dst = iph->daddr;
	} else if (proto == bpf_htons(ETH_P_IPV6)) {
		ip6h = (void *)(eth + 1);
		if ((void *)(ip6h + 1) > data_end)
			return XDP_PASS;
		if (ip6h->hop_limit <= 1)
			return XDP_PASS;
		fib.family = AF_INET6;
		fib.flowinfo = *(__be32 *)ip6h & bpf_htonl(0x0fffffff);
		fib.l4_protocol = ip6h->nexthdr;
		fib.tot_len = sizeof(*ip6h) + bpf_ntohs(ip6h->payload_len);
		__builtin_memcpy(fib.ipv6_src, &ip6h->saddr, 16);
		__builtin_memcpy(fib.ipv6_dst, &ip6h->daddr, 16);
	} else {
		return XDP_PASS;
	}
	fib.ifindex = ctx->ingress_ifindex;

	if (bpf_fib_lookup(ctx, &fib, sizeof(fib), 0) !=
	    BPF_FIB_LKUP_RET_SUCCESS)
		return XDP_PASS;
	if (!bpf_map_lookup_elem(&ref_tx_ports, &fib.ifindex))
		return XDP_PASS;
	if (proto == bpf_htons(ETH_P_IP))
		ref_dec_ttl(iph);
	else
		ip6h->hop_limit--;
	__builtin_memcpy(eth->h_dest, fib.dmac, ETH_ALEN);
	__builtin_memcpy(eth->h_source, fib.smac, ETH_ALEN);
	return bpf_redirect_map(&ref_tx_ports, fib.ifindex, 0);
}

char _license[] SEC("license") = "GPL";
