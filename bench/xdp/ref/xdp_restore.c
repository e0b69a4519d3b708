// SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0)
/*
 * Benchmark harness: makes repeated bpf_prog_test_run fair for programs that
 * rewrite the packet. The kernel runs an XDP program `repeat` times on the
 * same buffer (plain mode) or on recycled pages whose content is not reset
 * (BPF_F_TEST_XDP_LIVE_FRAMES), so a forwarder sees TTL 64, 63, ... 1 and
 * from then on measures its XDP_PASS path. rs_restore writes the frame's
 * first RS_LEN bytes back from rodata on every run, then tail-calls the
 * program under test (slot 0 of rs_target). Its own cost (a 32-byte copy
 * and a tail call) is the same for every target; measure it with a target
 * that returns at once and subtract, or compare targets with each other.
 *
 *   program rs_restore (section "xdp"); rs_pass: a target returning XDP_PASS
 *   map     rs_target   PROG_ARRAY, key u32 0, value prog fd, 1 entry
 *   rodata  rs_hdr      __u8[RS_LEN]: the pristine first bytes of the frame
 *
 * Frames must be at least RS_LEN bytes; shorter ones are not restored.
 */
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>

/*
 * Bytes restored: the MACs (0-11), the IPv4 TTL and checksum (22-25) and the
 * IPv6 hop limit (21), which is all a forwarder rewrites.
 */
#define RS_LEN 32

const volatile __u8 rs_hdr[RS_LEN];

struct {
	__uint(type, BPF_MAP_TYPE_PROG_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u32);
} rs_target SEC(".maps");

SEC("xdp")
int rs_restore(struct xdp_md *ctx)
{
	void *data_end = (void *)(long)ctx->data_end;
	void *data = (void *)(long)ctx->data;
	__u64 *dst = data;
	int i;

	if (data + RS_LEN <= data_end) {
#pragma unroll
		for (i = 0; i < RS_LEN / 8; i++)
			dst[i] = ((const volatile __u64 *)rs_hdr)[i];
	}
	bpf_tail_call(ctx, &rs_target, 0);
	return XDP_ABORTED; /* no target: visible as an error */
}

SEC("xdp")
int rs_pass(struct xdp_md *ctx __attribute__((unused)))
{
	return XDP_PASS;
}

char _license[] SEC("license") = "GPL";
