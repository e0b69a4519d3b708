/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * The fence of cluster mode (cluster_fence.c), shared with the agent
 * (src/extip/fence.ts): map names, key and value layouts.
 */
#ifndef FK_CLUSTER_FENCE_H
#define FK_CLUSTER_FENCE_H

#include <linux/types.h>

/* Cluster IPs on this node's cluster holder; an IPv4 address as ::ffff:a.b.c.d. */
#define FK_FENCE_MAX_IPS 65536

/* Values of fk_fence_ips: answered until the deadline, or dropped (leaving the holder). */
#define FK_FENCE_DROP   0
#define FK_FENCE_FOLLOW 1

struct fk_fence_key {
	__u8 addr[16];
};

/* Index 0 of fk_fence_deadline: CLOCK_MONOTONIC ns until which the node may answer. */
struct fk_fence_deadline {
	__u64 until_ns;
};

/* Indexes of fk_fence_drops (per CPU). */
#define FK_FENCE_DROP_INGRESS 0
#define FK_FENCE_DROP_EGRESS  1
#define FK_FENCE_DROP_SLOTS   2

#endif
