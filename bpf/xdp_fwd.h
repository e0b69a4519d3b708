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
 *   kind     name            type / key / value                    entries
 *   program  fk_xdp_fwd      XDP, ELF section "xdp"
 *   map      fk_tx_ports     DEVMAP_HASH  u32 ifindex / u32 ifindex   1024
 *   map      fk_stats        PERCPU_ARRAY u32 slot / fk_stats        64
 *   map      fk_miss         LRU_HASH fk_miss_key / fk_miss_val    4096
 *   map      fk_state        ARRAY u32 0 / fk_state                  1
 *   map      fk_local4w      LPM_TRIE fk_lpm4_key / u8           65536
 *   map      fk_mpath4       LPM_TRIE fk_lpm4_key / u8           65536
 *   map      fk_mpath6       LPM_TRIE fk_lpm6_key / u8           65536
 *   map      fk_egress       HASH u32 ifindex / u8 reason          1024
 *   map      fk_rpcache      PERCPU_ARRAY u32 0 / fk_rp_cache        1
 *   rodata   xdp_fwd.rodata  one variable: fk_cfg (fk_config), offset 0
 *
 * Names are at most 15 characters (the kernel truncates object names).
 *
 * Counting design: one program instance per attached device. The loader
 * loads the object once per device with fk_cfg.slot (and, with dmac_check,
 * dev_mac) set, reusing the maps of the first instance for the others
 * (bpf_map__reuse_fd), so all instances share fk_tx_ports, fk_stats and
 * fk_miss and the kernel-state maps (fk_state and the LPM tries). Per packet, counting is one inlined PERCPU_ARRAY lookup with a
 * load-time-constant key plus two counter updates: about 2 ns over no
 * counters in bpf_prog_test_run. Looking the slot up by ingress ifindex
 * cost the same with an ARRAY indexed by ifindex (bounded ifindex) and
 * 30 ns more with a HASH (as did a PERCPU_HASH of stats keyed by ifindex),
 * which is the whole budget. Slot FK_SLOT_OTHER (0) is shared: a device
 * without a slot of its own (more than FK_MAX_SLOTS - 1 devices, or an
 * instance loaded with the default rodata) counts there, so no packet goes
 * uncounted; so does an instance whose slot is >= FK_MAX_SLOTS.
 *
 * Kernel equivalence: the program forwards a frame only when it can tell
 * that the kernel would forward the same frame with the same bytes out of
 * the same device (and multipath leg); everything else is XDP_PASS, and the
 * kernel decides. What the kernel decides from its own configuration (own
 * addresses, local routes, rp_filter, disable_ipv6, multipath routes and
 * hash policies) the agent mirrors into fk_state, fk_local4w, fk_mpath4
 * and fk_mpath6, from netlink events and sysctls. A slot whose
 * fk_state entry is not ready passes everything (FK_REASON_NOT_READY), and
 * so does every slot once no agent vouches for the state any more (the
 * watch timer sets fk_state.unwatched, FK_REASON_UNWATCHED).
 *
 * The node's own policy: a frame that netfilter, tc or xfrm would act on in
 * the kernel's path is never forwarded here. The agent reads the node's
 * nftables, iptables, tc and xfrm configuration and writes, per device, a
 * reason to pass each family (fk_dev_state.policy4/6: the ingress side and
 * the hooks every forwarded frame crosses) and the devices whose egress has
 * a policy of its own (fk_egress, kept out of fk_tx_ports).
 */
#ifndef FIBKEEPER_XDP_FWD_H
#define FIBKEEPER_XDP_FWD_H

#include <linux/types.h>
#include <linux/bpf.h> /* struct bpf_timer (fk_watch) */

/* Names the loader looks up (bpf_object__find_program_by_name & co.). */
#define FK_PROG_NAME	"fk_xdp_fwd"
#define FK_MAP_TX_PORTS "fk_tx_ports"
#define FK_MAP_STATS	"fk_stats"
#define FK_MAP_MISS	"fk_miss"
#define FK_MAP_STATE	"fk_state"
#define FK_MAP_LOCAL4W	"fk_local4w"
#define FK_MAP_MPATH4	"fk_mpath4"
#define FK_MAP_MPATH6	"fk_mpath6"
#define FK_MAP_EGRESS	"fk_egress"
#define FK_MAP_RPCACHE	"fk_rpcache"
#define FK_MAP_RODATA	"xdp_fwd.rodata"
#define FK_CFG_VAR	"fk_cfg"

/* Map sizes (max_entries). */
#define FK_TX_PORTS_MAX 1024
#define FK_MAX_SLOTS	64
#define FK_MISS_MAX	4096
#define FK_LPM_MAX	65536

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
 * Reasons a frame was passed to the kernel. Reasons below
 * FK_REASON_POST_LOOKUP are decided before bpf_fib_lookup (such a frame has
 * no result); the others after a SUCCESS result (counted in both).
 */
#define FK_REASON_ETH_TRUNC	0 /* shorter than an Ethernet header */
#define FK_REASON_L2_MCAST	1 /* destination MAC multicast/broadcast */
#define FK_REASON_L2_OTHERHOST	2 /* destination MAC not dev_mac (check on) */
#define FK_REASON_VLAN		3 /* 802.1Q or 802.1ad tag */
#define FK_REASON_ARP		4 /* ARP */
#define FK_REASON_NON_IP	5 /* any other EtherType */
#define FK_REASON_NOT_READY	6 /* the agent has not written fk_state yet */
#define FK_REASON_IP4_OFF	7 /* IPv4 disabled (ipv4 == 0) */
#define FK_REASON_IP4_BAD	8 /* IPv4 header truncated or invalid */
#define FK_REASON_IP4_CSUM	9 /* IPv4 header checksum wrong */
#define FK_REASON_IP4_OPTIONS	10 /* IPv4 options the kernel must process */
#define FK_REASON_IP6_OFF	11 /* IPv6 disabled (ipv6 == 0) */
#define FK_REASON_IP6_BAD	12 /* IPv6 header truncated or invalid */
#define FK_REASON_IP6_EXT	13 /* hop-by-hop, truncated or long chain */
#define FK_REASON_IP6_DISABLED	14 /* disable_ipv6 / IPv6 forwarding off */
#define FK_REASON_TTL		15 /* TTL or hop limit <= 1 */
#define FK_REASON_MARTIAN_SRC	16 /* source the kernel never forwards */
#define FK_REASON_MARTIAN_DST	17 /* destination the kernel never forwards */
#define FK_REASON_LOCAL_SRC	18 /* source is local (address, local route) */
#define FK_REASON_NDISC		19 /* ICMPv6 neighbor discovery */
/*
 * The node's own policy on the way of every frame of this family from this
 * device (fk_dev_state.policy4/6): a netfilter hook on prerouting, forward
 * or postrouting (nftables chains, iptables tables, conntrack), a netdev
 * ingress chain or a tc filter on the device's ingress, an xfrm policy.
 */
#define FK_REASON_NETFILTER	20 /* netfilter on the forwarding path */
#define FK_REASON_TC		21 /* tc filter on the ingress device */
#define FK_REASON_XFRM		22 /* xfrm (IPsec) policy or default */
/*
 * No agent has vouched for fk_state for a while (fk_state.unwatched, set by
 * the watch timer of xdp_watch.c): a policy added meanwhile is not known.
 */
#define FK_REASON_UNWATCHED	23
#define FK_REASON_POST_LOOKUP	24 /* first reason decided after SUCCESS */
#define FK_REASON_NO_TXPORT	24 /* egress not in fk_tx_ports */
#define FK_REASON_HAIRPIN	25 /* egress is the ingress device */
#define FK_REASON_MULTIPATH	26 /* multipath leg not computable here */
#define FK_REASON_RP_FILTER	27 /* rp_filter check not passed in XDP */
#define FK_REASON_ROUTE_MTU	28 /* above an unlocked route MTU */
#define FK_REASON_TRIM_ERROR	29 /* bpf_xdp_adjust_tail failed */
/*
 * The egress device's own policy (fk_egress, which also keeps the device
 * out of fk_tx_ports): a netdev egress chain, a tc filter on its egress or
 * a queueing discipline the node configured.
 */
#define FK_REASON_EGRESS_NETFILTER 30 /* netdev egress chain on the egress */
#define FK_REASON_EGRESS_TC	31 /* tc egress filter or configured qdisc */
#define FK_REASON_MAX		32

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
 * 8 bytes, so 768 apart); sum them. Every packet counts once in action[];
 * one passed for a reason counts once in reason[]; one that reached
 * bpf_fib_lookup counts once in result[], except a SUCCESS that was
 * redirected: result[SUCCESS] holds only SUCCESS lookups passed afterwards,
 * and readers add action[REDIRECT] (one counter update less per forwarded
 * packet). With that sum as result[SUCCESS]:
 *   sum(action) = sum(result) + sum(reason[0 .. FK_REASON_POST_LOOKUP - 1])
 *   action[REDIRECT] = result[SUCCESS] - sum(reason[FK_REASON_POST_LOOKUP ..])
 * Size 768: action[] at offset 0 (80 bytes), result[] at 80 (176 bytes),
 * reason[] at 256 (512 bytes).
 */
struct fk_stats {
	struct fk_ctr action[FK_ACTION_MAX];
	struct fk_ctr result[FK_RESULT_MAX];
	struct fk_ctr reason[FK_REASON_MAX];
};

#define FK_STATS_SIZE 768

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
	 * offset 18: forward IPv4 with options that the kernel forwards
	 * unchanged (NOP, end of list with zeros after it, and kinds the
	 * kernel does not process) [0]; source routes, record route,
	 * timestamps, router alert, CIPSO and malformed options are always
	 * passed (FK_REASON_IP4_OPTIONS). 0 passes every packet with options.
	 */
	__u8 ip4_options;
	/* offset 19: record NO_NEIGH destinations in fk_miss [1] */
	__u8 miss_track;
	/*
	 * offset 20: pass unicast frames whose destination MAC is not
	 * dev_mac (FK_REASON_L2_OTHERHOST) [0; the loader sets 1]; the stack
	 * drops those (PACKET_OTHERHOST), but a veth or a promiscuous device
	 * (bridge port, tcpdump, macvlan parent) shows them to XDP
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

/*
 * Kernel state of one device (fk_state.dev[slot]), written by the agent.
 * Size 8.
 */
struct fk_dev_state {
	/* offset 0: 1 once the agent wrote this entry; 0 passes everything */
	__u8 ready;
	/* offset 1: effective IPv4 rp_filter (max of all and DEV): 0, 1, 2 */
	__u8 rp_filter;
	/* offset 2: the device has an IPv4 address (loose rp_filter) */
	__u8 v4_addr;
	/*
	 * offset 3: the kernel takes no IPv6 from the device: disable_ipv6
	 * on it, or net.ipv6.conf.all.forwarding 0 (FK_REASON_IP6_DISABLED)
	 */
	__u8 ip6_off;
	/*
	 * offset 4, 5: a reason (FK_REASON_NETFILTER, _TC, _XFRM) to pass
	 * every IPv4 / IPv6 frame from the device to the kernel, 0 for none:
	 * the node's policy acts on that traffic in the kernel's path
	 */
	__u8 policy4;
	__u8 policy6;
	/* offset 6: zero */
	__u8 pad[2];
};

/*
 * fk_state.local4: the node's local IPv4 addresses (every interface
 * address, every /32 of a local, broadcast, anycast, multicast or NAT
 * route) in a hash table of buckets of FK_LOCAL4_PROBES slots: an address
 * a (as the 4 bytes of the packet, loaded as a host-order u32) lives in
 * one of the slots of the bucket starting at FK_LOCAL4_HASH(a) (read with
 * four loads at constant offsets); 0 is an empty slot.
 * What does not fit, and every wider local route, is in fk_local4w
 * instead. Size 16384. (Inside fk_state: one map lookup per packet for
 * both.)
 */
#define FK_LOCAL4_BITS	 12
#define FK_LOCAL4_SLOTS	 (1U << FK_LOCAL4_BITS)
#define FK_LOCAL4_PROBES 4
#define FK_LOCAL4_MUL	 0x9e3779b1U


/* The first slot of address a's bucket (u32 arithmetic). */
#define FK_LOCAL4_HASH(a)                                                      \
	((((__u32)(a) * FK_LOCAL4_MUL) >> (32 - FK_LOCAL4_BITS)) &            \
	 ~(FK_LOCAL4_PROBES - 1))

/*
 * Value of fk_state (one entry, key 0): the namespace's settings, one
 * fk_dev_state per counter slot and the local-address table. Size 16912.
 */
struct fk_state {
	/* offset 0: net.ipv4.fib_multipath_hash_policy */
	__u8 mp_policy4;
	/* offset 1: net.ipv6.fib_multipath_hash_policy */
	__u8 mp_policy6;
	/* offset 2: fk_mpath4 has entries */
	__u8 mpath4;
	/* offset 3: fk_mpath6 has entries */
	__u8 mpath6;
	/* offset 4: fk_local4w has entries */
	__u8 local4w;
	/*
	 * offset 5: set by the watch timer (xdp_watch.c) once the agent has
	 * not vouched for this state for FK_WATCH (fk_watch.until_ns passed):
	 * every frame then goes to the kernel (FK_REASON_UNWATCHED) until an
	 * agent writes the state again (with 0 here). The agent writes 0.
	 */
	__u8 unwatched;
	/*
	 * offset 6, 8: the smallest unlocked route MTU (RTAX_MTU without the
	 * lock) of any IPv4 / IPv6 route, 0 when none: bpf_fib_lookup enforces
	 * only locked ones, the kernel's forwarding both, so larger packets go
	 * to the kernel (FK_REASON_ROUTE_MTU)
	 */
	__u16 route_mtu4;
	__u16 route_mtu6;
	/*
	 * offset 10: the IPv4 policy rules select on what the kernel's
	 * reverse-path lookup and bpf_fib_lookup see differently (the
	 * incoming device, ports, protocol): rp_filter packets go to the
	 * kernel (FK_REASON_RP_FILTER)
	 */
	__u8 rp_rules;
	/* offset 11: zero */
	__u8 pad1;
	/*
	 * offset 12: generation of what the reverse-path check depends on
	 * (routes, rules, addresses, links, sysctls); the agent raises it on
	 * every change it sees, and fk_rpcache entries of another generation
	 * are not used. Never 0 once written.
	 */
	__u32 rp_gen;
	/* offset 16: per counter slot */
	struct fk_dev_state dev[FK_MAX_SLOTS];
	/* offset 528: local IPv4 addresses (see above) */
	__u32 local4[FK_LOCAL4_SLOTS];
};

#define FK_STATE_SIZE 16912

/*
 * Keys of the LPM tries: prefix length, then the address in network
 * order. fk_local4w: local routes wider than /32 (and addresses that did
 * not fit in fk_state.local4); fk_mpath4/6: destinations of multipath routes
 * (any table; a route through a nexthop object counts as multipath).
 * Values: one byte, 1. Sizes 8 and 20.
 */
struct fk_lpm4_key {
	__u32 prefixlen;
	__u32 addr;
};

struct fk_lpm6_key {
	__u32 prefixlen;
	__u8 addr[16];
};

/*
 * fk_egress: devices whose own policy acts on every frame routed out of
 * them (value: FK_REASON_EGRESS_NETFILTER or FK_REASON_EGRESS_TC). The
 * agent keeps them out of fk_tx_ports; the program reads this map only to
 * name the reason when a redirect finds no port. Size of the key: 4.
 */
#define FK_EGRESS_MAX 1024

/*
 * fk_rpcache: the outcome of the reverse-path lookup (rp_filter) per CPU,
 * direct-mapped by FK_RP_HASH of the packet's addresses, so that a flow
 * pays for one lookup per generation (fk_state.rp_gen) instead of one per
 * packet. Written and read only by the program; the :other slot does not
 * use it (its devices differ). Entry size 16, value size 16384.
 */
#define FK_RP_CACHE_BITS  10
#define FK_RP_CACHE_SLOTS (1U << FK_RP_CACHE_BITS)

/* The entry of a packet with source s and destination d (u32 arithmetic). */
#define FK_RP_HASH(s, d)                                                       \
	((((__u32)(s) ^ ((__u32)(d) * 0x85ebca6bU)) * FK_LOCAL4_MUL) >>         \
	 (32 - FK_RP_CACHE_BITS))

/* fk_rp_entry.res: what the reverse lookup found. */
#define FK_RP_NONE   0 /* no unicast route back (rejected by rp_filter 1, 2) */
#define FK_RP_OTHER  1 /* a unicast route back through another device */
#define FK_RP_INGRESS 2 /* a unicast route back through the ingress device */

struct fk_rp_entry {
	/* offset 0, 4: the packet's source and destination, network order */
	__u32 saddr;
	__u32 daddr;
	/* offset 8: fk_state.rp_gen when the entry was written */
	__u32 gen;
	/* offset 12: the packet's TOS, the instance's slot, FK_RP_* */
	__u8 tos;
	__u8 slot;
	__u8 res;
	/* offset 15: zero */
	__u8 pad;
};

struct fk_rp_cache {
	struct fk_rp_entry e[FK_RP_CACHE_SLOTS];
};

/*
 * The watch (bpf/xdp_watch.c, build/bpf/xdp_watch.o): a BPF timer, armed by
 * running fk_watch_arm once (test run), that fires every FK_WATCH_TICK_NS
 * and sets fk_state.unwatched when the agent has not moved fk_watch_until
 * (CLOCK_MONOTONIC ns) past the present. The timer lives in the pinned map
 * fk_watch, so it goes on while no agent runs; user space never writes that
 * map (an update of an array element cancels its timer). Linux 5.15+
 * (bpf_timer); on older kernels there is no watch.
 *
 *   program  fk_watch_arm    XDP (test run only)
 *   map      fk_watch        ARRAY u32 0 / fk_watch (the timer)         1
 *   map      fk_watch_until  ARRAY u32 0 / u64 until_ns                 1
 *   map      fk_state        the forwarder's, reused
 */
#define FK_WATCH_PROG	 "fk_watch_arm"
#define FK_MAP_WATCH	 "fk_watch"
#define FK_MAP_WATCH_UNTIL "fk_watch_until"
#define FK_WATCH_TICK_NS 500000000ULL

/* Value of fk_watch. Size 16. */
struct fk_watch {
	struct bpf_timer timer;
};

/*
 * The redirect-error tracer (bpf/xdp_trace.c, build/bpf/xdp_trace.o): raw
 * tracepoint programs on xdp_redirect_err (a redirect the kernel refused:
 * frame too big, egress down, egress takes no XDP frames) and
 * xdp_devmap_xmit (frames the egress driver dropped), counting per ingress
 * device of one network namespace (fk_trace_cfg.netns_ino, the inode of
 * /proc/self/ns/net there) into fk_rerr.
 *
 *   program  fk_trace_rerr   raw_tp/xdp_redirect_err
 *   program  fk_trace_xmit   raw_tp/xdp_devmap_xmit
 *   map      fk_rerr         HASH fk_rerr_key / u64 (frames)           1024
 *   rodata   xdp_trace.rodata  one variable: fk_trace_cfg, offset 0
 */
#define FK_TRACE_RERR_PROG "fk_trace_rerr"
#define FK_TRACE_XMIT_PROG "fk_trace_xmit"
#define FK_TRACE_RERR_TP   "xdp_redirect_err"
#define FK_TRACE_XMIT_TP   "xdp_devmap_xmit"
#define FK_MAP_RERR	   "fk_rerr"
#define FK_TRACE_CFG_VAR   "fk_trace_cfg"
#define FK_RERR_MAX_ENTRIES 1024

/* Why a redirected frame was lost (fk_rerr_key.reason). */
#define FK_RERR_TOO_BIG	  0 /* EMSGSIZE: larger than the egress MTU */
#define FK_RERR_DOWN	  1 /* ENETDOWN: egress device down */
#define FK_RERR_NO_TARGET 2 /* EOPNOTSUPP: egress takes no XDP frames */
#define FK_RERR_XMIT_DROP 3 /* the egress driver dropped it (ring full, peer) */
#define FK_RERR_OTHER	  4 /* any other error */
#define FK_RERR_MAX	  5

/* Key of fk_rerr. Size 8. */
struct fk_rerr_key {
	/* offset 0: the ingress device (the one whose XDP program redirected) */
	__u32 ifindex;
	/* offset 4: FK_RERR_* */
	__u32 reason;
};

/* The tracer's rodata. Size 8. */
struct fk_trace_config {
	/* offset 0: inode of the namespace whose redirects are counted */
	__u32 netns_ino;
	/* offset 4: zero */
	__u32 pad;
};

#endif /* FIBKEEPER_XDP_FWD_H */
