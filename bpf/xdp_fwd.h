/* SPDX-License-Identifier: (GPL-2.0-only OR Apache-2.0) */
/*
 * fibkeeper XDP forwarder: every layout and constant shared by the BPF
 * program (bpf/xdp_fwd.c), the native addon (native/, C++) and the
 * TypeScript loader (src/fib/). Only fixed-width types, explicit padding
 * and constants live here; all multi-byte fields are host byte order
 * unless the comment says "network order". Sizes and offsets are checked
 * by static asserts in xdp_fwd.c.
 *
 * Object: build/bpf/xdp_fwd.o (libbpf object name "xdp_fwd").
 *
 *   kind     name            type / key / value                   entries
 *   program  fk_xdp_fwd      XDP, ELF section "xdp"
 *   map      fk_tx_ports     DEVMAP_HASH  u32 ifindex / u32 ifindex  1024
 *   map      fk_stats        PERCPU_ARRAY u32 slot / fk_stats      64
 *   map      fk_miss         LRU_HASH fk_miss_key / fk_miss_val  4096
 *   rodata   xdp_fwd.rodata  one variable: fk_cfg (fk_config), offset 0
 *
 * Names are at most 15 characters (the kernel truncates object names).
 *
 * Counting design: one program instance per attached device. The loader
 * loads the object once per device with fk_cfg.slot (and, with dmac_check,
 * dev_mac) set, reusing the maps of the first instance for the others
 * (bpf_map__reuse_fd), so all instances share fk_tx_ports, fk_stats and
 * fk_miss. Per packet, counting is one inlined PERCPU_ARRAY lookup with a
 * load-time-constant key plus two counter updates: about 2 ns over no
 * counters in bpf_prog_test_run. Looking the slot up by ingress ifindex
 * cost the same with an ARRAY indexed by ifindex (bounded ifindex) and
 * 30 ns more with a HASH (as did a PERCPU_HASH of stats keyed by ifindex),
 * which is the whole budget. Slot FK_SLOT_OTHER (0) is shared: a device
 * without a slot of its own (more than FK_MAX_SLOTS - 1 devices, or an
 * instance loaded with the default rodata) counts there, so no packet goes
 * uncounted; so does an instance whose slot is >= FK_MAX_SLOTS.
 */
#ifndef FIBKEEPER_XDP_FWD_H
#define FIBKEEPER_XDP_FWD_H

#include <linux/types.h>

/* Names the loader looks up (bpf_object__find_program_by_name & co.). */
#define FK_PROG_NAME	"fk_xdp_fwd"
#define FK_MAP_TX_PORTS "fk_tx_ports"
#define FK_MAP_STATS	"fk_stats"
#define FK_MAP_MISS	"fk_miss"
#define FK_MAP_RODATA	"xdp_fwd.rodata"
#define FK_CFG_VAR	"fk_cfg"

/* Map sizes (max_entries). */
#define FK_TX_PORTS_MAX 1024
#define FK_MAX_SLOTS	64
#define FK_MISS_MAX	4096

/* Counter slot shared by every device without a slot of its own. */
#define FK_SLOT_OTHER 0

/*
 * Lookup results: counter index = BPF_FIB_LKUP_RET_* value. Index 10
 * counts a negative helper return (-EINVAL, -ENODEV, -EAFNOSUPPORT) or a
 * code this program does not know (a newer kernel's).
 */
#define FK_RESULT_SUCCESS      0 /* forwarded (or no egress port: action) */
#define FK_RESULT_BLACKHOLE    1 /* blackhole route */
#define FK_RESULT_UNREACHABLE  2 /* unreachable route */
#define FK_RESULT_PROHIBIT     3 /* prohibit route */
#define FK_RESULT_NOT_FWDED    4 /* local, broadcast, multicast, link-local */
#define FK_RESULT_FWD_DISABLED 5 /* forwarding off on the ingress device */
#define FK_RESULT_UNSUPP_LWT   6 /* route needs a lightweight tunnel */
#define FK_RESULT_NO_NEIGH     7 /* next hop has no valid neighbor entry */
#define FK_RESULT_FRAG_NEEDED  8 /* larger than the egress MTU */
#define FK_RESULT_NO_SRC_ADDR  9 /* no source address (LOOKUP_SRC flag) */
#define FK_RESULT_ERROR	       10 /* helper error or unknown code */
#define FK_RESULT_MAX	       11

/* Actions: counter index = XDP action value (enum xdp_action). */
#define FK_ACTION_ABORTED  0 /* never returned by fk_xdp_fwd */
#define FK_ACTION_DROP	   1 /* never returned by fk_xdp_fwd */
#define FK_ACTION_PASS	   2 /* to the kernel stack */
#define FK_ACTION_TX	   3 /* never returned by fk_xdp_fwd */
#define FK_ACTION_REDIRECT 4 /* forwarded through fk_tx_ports */
#define FK_ACTION_MAX	   5

/*
 * Reasons a frame was passed before (or instead of) forwarding. Frames
 * that reach bpf_fib_lookup and get a non-SUCCESS result are counted
 * under their result, not here.
 */
#define FK_REASON_ETH_TRUNC    0 /* shorter than an Ethernet header */
#define FK_REASON_L2_MCAST     1 /* destination MAC multicast/broadcast */
#define FK_REASON_L2_OTHERHOST 2 /* destination MAC not dev_mac (check on) */
#define FK_REASON_VLAN	       3 /* 802.1Q or 802.1ad tag */
#define FK_REASON_ARP	       4 /* ARP */
#define FK_REASON_NON_IP       5 /* any other EtherType */
#define FK_REASON_IP4_BAD      6 /* IPv4 header truncated or invalid */
#define FK_REASON_IP4_OPTIONS  7 /* IPv4 options and ip4_options == 0 */
#define FK_REASON_IP4_OFF      8 /* IPv4 disabled (ipv4 == 0) */
#define FK_REASON_IP6_BAD      9 /* IPv6 header truncated or invalid */
#define FK_REASON_IP6_EXT      10 /* extension header not skipped */
#define FK_REASON_IP6_OFF      11 /* IPv6 disabled (ipv6 == 0) */
#define FK_REASON_TTL	       12 /* TTL or hop limit <= 1 */
#define FK_REASON_NO_TXPORT    13 /* SUCCESS, egress not in fk_tx_ports */
#define FK_REASON_MAX	       14

/*
 * A packet and a byte counter. Bytes are frame lengths: Ethernet header
 * included, FCS not. Size 16: packets at offset 0, bytes at offset 8.
 */
struct fk_ctr {
	__u64 packets;
	__u64 bytes;
};

/*
 * Value of fk_stats: every counter of one slot (device) on one CPU. A
 * user-space lookup returns one fk_stats per possible CPU (each rounded to
 * 8 bytes, so 480 apart); sum them. Every packet counts once in action[];
 * one that reached bpf_fib_lookup counts once in result[]; one passed for a
 * reason counts once in reason[]. Hence
 *   sum(action) = sum(result) + sum(reason) - reason[FK_REASON_NO_TXPORT].
 * Size 480: action[] at offset 0 (80 bytes), result[] at 80 (176 bytes),
 * reason[] at 256 (224 bytes).
 */
struct fk_stats {
	struct fk_ctr action[FK_ACTION_MAX];
	struct fk_ctr result[FK_RESULT_MAX];
	struct fk_ctr reason[FK_REASON_MAX];
};

#define FK_STATS_SIZE 480

/* Address families in fk_miss_key and fk_miss_val (AF_INET, AF_INET6). */
#define FK_AF_INET  2
#define FK_AF_INET6 10

/*
 * Key of fk_miss: the packet's destination whose lookup ended in NO_NEIGH,
 * and the egress device the FIB chose for it. Size 24.
 */
struct fk_miss_key {
	/* offset 0: egress ifindex from the FIB */
	__u32 ifindex;
	/* offset 4: family of addr, FK_AF_INET or FK_AF_INET6 */
	__u8 family;
	/* offset 5: zero */
	__u8 pad[3];
	/* offset 8: destination, network order; IPv4 in addr[0], rest 0 */
	__u32 addr[4];
};

/*
 * Value of fk_miss. Size 40. Entries are created with hits = 1; later hits
 * are atomic adds (a race between two first packets can lose one hit).
 */
struct fk_miss_val {
	/* offset 0: NO_NEIGH packets seen for this key */
	__u64 hits;
	/*
	 * offset 8: bpf_ktime_get_coarse_ns() of the latest one, i.e.
	 * CLOCK_MONOTONIC_COARSE (one-tick resolution; 30 ns cheaper per
	 * packet than bpf_ktime_get_ns() here)
	 */
	__u64 last_seen_ns;
	/*
	 * offset 16: the neighbor the FIB wanted (gateway or destination),
	 * network order; IPv4 in nexthop[0], rest 0
	 */
	__u32 nexthop[4];
	/* offset 32: family of nexthop; an IPv4 route can have an IPv6 gw */
	__u8 nh_family;
	/* offset 33: zero */
	__u8 pad[7];
};

/* BPF_FIB_LOOKUP_MARK (Linux 6.10), missing from older UAPI headers. */
#define FK_FIB_LOOKUP_MARK (1U << 5)

/*
 * Configuration: the only variable in .rodata ("fk_cfg", offset 0). The
 * loader sets it before load (bpf_map__initial_value() gives the defaults
 * to start from); libbpf freezes it, and the verifier then knows every
 * field, so the branches of a disabled feature are removed at load time.
 * Size 32. Defaults in brackets.
 */
struct fk_config {
	/*
	 * offset 0: BPF_FIB_LOOKUP_* flags for bpf_fib_lookup [0]: DIRECT
	 * (skip FIB rules), TBID (with DIRECT, use tbid), OUTPUT, SRC,
	 * FK_FIB_LOOKUP_MARK (use mark). SKIP_NEIGH is masked off: the
	 * program needs the neighbor's MAC.
	 */
	__u32 fib_flags;
	/* offset 4: fk_stats slot of this instance [FK_SLOT_OTHER] */
	__u32 slot;
	/* offset 8: FIB table id, used with DIRECT | TBID [0] */
	__u32 tbid;
	/* offset 12: fwmark for FIB rules, used with FK_FIB_LOOKUP_MARK [0] */
	__u32 mark;
	/* offset 16: forward IPv4 [1]; 0 passes it (FK_REASON_IP4_OFF) */
	__u8 ipv4;
	/* offset 17: forward IPv6 [1]; 0 passes it (FK_REASON_IP6_OFF) */
	__u8 ipv6;
	/*
	 * offset 18: forward IPv4 with options [1], like the kernel sample;
	 * 0 passes them (FK_REASON_IP4_OPTIONS) so that the stack updates
	 * record-route/timestamp options and enforces source routes exactly
	 * as it would.
	 */
	__u8 ip4_options;
	/* offset 19: record NO_NEIGH destinations in fk_miss [1] */
	__u8 miss_track;
	/*
	 * offset 20: pass unicast frames whose destination MAC is not
	 * dev_mac (FK_REASON_L2_OTHERHOST) [0]; the stack drops those, but
	 * a promiscuous device (bridge port, tcpdump) shows them to XDP
	 */
	__u8 dmac_check;
	/* offset 21: zero */
	__u8 pad0[3];
	/* offset 24: MAC of this instance's device, used with dmac_check */
	__u8 dev_mac[6];
	/* offset 30: zero */
	__u8 pad1[2];
};

#define FK_CONFIG_SIZE 32

#endif /* FIBKEEPER_XDP_FWD_H */
