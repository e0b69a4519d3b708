// SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0)
/*
 * fibkeeper redirect-error tracer: counts the frames fk_xdp_fwd redirected
 * that never left, by ingress device and reason, for one network namespace
 * (layouts and names: xdp_fwd.h). XDP_REDIRECT hands a frame to the devmap
 * after the program returned, so the program itself cannot see a failure;
 * the kernel reports them on two tracepoints. Kernel structures are read
 * with CO-RE (relocated against the running kernel's BTF at load time).
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

#include "xdp_fwd.h"

#define EMSGSIZE   90
#define ENETDOWN   100
#define EOPNOTSUPP 95

_Static_assert(sizeof(struct fk_rerr_key) == 8, "fk_rerr_key size");
_Static_assert(sizeof(struct fk_trace_config) == 8, "fk_trace_config size");

/* The few kernel fields read, as CO-RE relocations (names, not offsets). */
struct ns_common {
	unsigned int inum;
} __attribute__((preserve_access_index));

struct net {
	struct ns_common ns;
} __attribute__((preserve_access_index));

typedef struct {
	struct net *net;
} possible_net_t;

struct net_device {
	int ifindex;
	possible_net_t nd_net;
} __attribute__((preserve_access_index));

const volatile struct fk_trace_config fk_trace_cfg = {};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, FK_RERR_MAX_ENTRIES);
	__type(key, struct fk_rerr_key);
	__type(value, __u64);
} fk_rerr SEC(".maps");

/* Adds n frames lost for reason on the ingress device dev (of our namespace). */
static __always_inline void count(const struct net_device *dev, __u32 reason,
				  __u64 n)
{
	struct fk_rerr_key key = { .reason = reason };
	__u64 *v;

	if (!dev || BPF_CORE_READ(dev, nd_net.net, ns.inum) != fk_trace_cfg.netns_ino)
		return;
	key.ifindex = BPF_CORE_READ(dev, ifindex);
	v = bpf_map_lookup_elem(&fk_rerr, &key);
	if (v) {
		__sync_fetch_and_add(v, n);
		return;
	}
	if (bpf_map_update_elem(&fk_rerr, &key, &n, BPF_NOEXIST) == 0)
		return;
	v = bpf_map_lookup_elem(&fk_rerr, &key); /* another CPU's was first */
	if (v)
		__sync_fetch_and_add(v, n);
}

/* xdp_redirect_err(dev, xdp, tgt, err, map_type, map_id, index) */
SEC("raw_tp/xdp_redirect_err")
int fk_trace_rerr(struct bpf_raw_tracepoint_args *ctx)
{
	const struct net_device *dev = (const void *)ctx->args[0];
	int err = -(int)ctx->args[3];
	__u32 reason;

	switch (err) {
	case EMSGSIZE:
		reason = FK_RERR_TOO_BIG;
		break;
	case ENETDOWN:
		reason = FK_RERR_DOWN;
		break;
	case EOPNOTSUPP:
		reason = FK_RERR_NO_TARGET;
		break;
	default:
		reason = FK_RERR_OTHER;
		break;
	}
	count(dev, reason, 1);
	return 0;
}

/* xdp_devmap_xmit(from_dev, to_dev, sent, drops, err) */
SEC("raw_tp/xdp_devmap_xmit")
int fk_trace_xmit(struct bpf_raw_tracepoint_args *ctx)
{
	const struct net_device *from = (const void *)ctx->args[0];
	int drops = (int)ctx->args[3];

	if (drops > 0)
		count(from, FK_RERR_XMIT_DROP, (__u64)drops);
	return 0;
}

char _license[] SEC("license") = "GPL";
