// SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0)
/*
 * fibkeeper watch: a BPF timer that ends XDP forwarding a bounded time after
 * the agent stops watching the kernel (layouts and names: xdp_fwd.h). The
 * agent moves fk_watch.until_ns on every second while it runs; a tick that
 * finds it passed sets fk_state.unwatched, and fk_xdp_fwd then passes every
 * frame to the kernel, which applies whatever policy was added meanwhile.
 * The timer belongs to the pinned fk_watch map: it keeps ticking after the
 * agent exits, and goes when the map is unpinned and closed.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

#include "xdp_fwd.h"

#define CLOCK_MONOTONIC 1

_Static_assert(sizeof(struct fk_watch) == 16, "fk_watch size");
_Static_assert(__builtin_offsetof(struct fk_state, unwatched) == 5, "unwatched");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fk_state);
} fk_state SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct fk_watch);
} fk_watch SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} fk_watch_until SEC(".maps");

/* Every tick: past the agent's deadline, fk_state is no longer vouched for. */
static int tick(void *map, __u32 *key, struct fk_watch *w)
{
	__u32 zero = 0;
	struct fk_state *ks;
	__u64 *until;

	(void)map;
	(void)key;
	ks = bpf_map_lookup_elem(&fk_state, &zero);
	until = bpf_map_lookup_elem(&fk_watch_until, &zero);
	if (ks && until && bpf_ktime_get_ns() > *until)
		ks->unwatched = 1;
	bpf_timer_start(&w->timer, FK_WATCH_TICK_NS, 0);
	return 0;
}

/*
 * Arms the timer (run once by the agent with a test run): initialized the
 * first time (-EBUSY afterwards: it is), this program's tick as callback,
 * started. XDP_PASS when it ticks, XDP_ABORTED when it could not be armed.
 */
SEC("xdp")
int fk_watch_arm(struct xdp_md *ctx)
{
	__u32 zero = 0;
	struct fk_watch *w;

	(void)ctx;
	w = bpf_map_lookup_elem(&fk_watch, &zero);
	if (!w)
		return XDP_ABORTED;
	bpf_timer_init(&w->timer, &fk_watch, CLOCK_MONOTONIC);
	if (bpf_timer_set_callback(&w->timer, tick))
		return XDP_ABORTED;
	if (bpf_timer_start(&w->timer, FK_WATCH_TICK_NS, 0))
		return XDP_ABORTED;
	return XDP_PASS;
}

char _license[] SEC("license") = "GPL";
