// rtnetlink constants, with the values of the kernel UAPI headers (linux/netlink.h,
// rtnetlink.h, if_link.h, if_addr.h, neighbour.h, fib_rules.h, if.h, if_arp.h). Only what fibkeeper
// reads or writes; each group is named after its C prefix.

export const AF_UNSPEC = 0;
export const AF_INET = 2;
export const AF_BRIDGE = 7;
export const AF_INET6 = 10;
/** Rule and route families of the multicast routing tables (ip mrule, ip mroute). */
export const RTNL_FAMILY_IPMR = 128;
export const RTNL_FAMILY_IP6MR = 129;

export const NETLINK_ROUTE = 0;

// --- nlmsghdr ---------------------------------------------------------------------------
export const NLMSG_NOOP = 0x1;
export const NLMSG_ERROR = 0x2;
export const NLMSG_DONE = 0x3;
export const NLMSG_OVERRUN = 0x4;
export const NLMSG_MIN_TYPE = 0x10;

export const NLM_F_REQUEST = 0x01;
export const NLM_F_MULTI = 0x02;
export const NLM_F_ACK = 0x04;
export const NLM_F_ECHO = 0x08;
export const NLM_F_DUMP_INTR = 0x10;
export const NLM_F_DUMP_FILTERED = 0x20;
// GET requests
export const NLM_F_ROOT = 0x100;
export const NLM_F_MATCH = 0x200;
export const NLM_F_ATOMIC = 0x400;
export const NLM_F_DUMP = NLM_F_ROOT | NLM_F_MATCH;
// NEW requests
export const NLM_F_REPLACE = 0x100;
export const NLM_F_EXCL = 0x200;
export const NLM_F_CREATE = 0x400;
export const NLM_F_APPEND = 0x800;
// DELETE requests
export const NLM_F_NONREC = 0x100;
export const NLM_F_BULK = 0x200;
// acknowledgements
export const NLM_F_CAPPED = 0x100;
export const NLM_F_ACK_TLVS = 0x200;

export const NLMSGERR_ATTR_MSG = 1;
export const NLMSGERR_ATTR_OFFS = 2;
export const NLMSGERR_ATTR_COOKIE = 3;
export const NLMSGERR_ATTR_POLICY = 4;
export const NLMSGERR_ATTR_MISS_TYPE = 5;
export const NLMSGERR_ATTR_MISS_NEST = 6;

export const NLA_F_NESTED = 1 << 15;
export const NLA_F_NET_BYTEORDER = 1 << 14;
export const NLA_TYPE_MASK = ~(NLA_F_NESTED | NLA_F_NET_BYTEORDER) & 0xffff;

// --- message types ------------------------------------------------------------------------
export const RTM_NEWLINK = 16;
export const RTM_DELLINK = 17;
export const RTM_GETLINK = 18;
export const RTM_SETLINK = 19;
export const RTM_NEWADDR = 20;
export const RTM_DELADDR = 21;
export const RTM_GETADDR = 22;
export const RTM_NEWROUTE = 24;
export const RTM_DELROUTE = 25;
export const RTM_GETROUTE = 26;
export const RTM_NEWNEIGH = 28;
export const RTM_DELNEIGH = 29;
export const RTM_GETNEIGH = 30;
export const RTM_NEWRULE = 32;
export const RTM_DELRULE = 33;
export const RTM_GETRULE = 34;
export const RTM_NEWNSID = 88;
export const RTM_DELNSID = 89;
export const RTM_GETNSID = 90;

// --- multicast groups (RTNLGRP_*) -----------------------------------------------------------
export const RTNLGRP_LINK = 1;
export const RTNLGRP_NOTIFY = 2;
export const RTNLGRP_NEIGH = 3;
export const RTNLGRP_TC = 4;
export const RTNLGRP_IPV4_IFADDR = 5;
export const RTNLGRP_IPV4_MROUTE = 6;
export const RTNLGRP_IPV4_ROUTE = 7;
export const RTNLGRP_IPV4_RULE = 8;
export const RTNLGRP_IPV6_IFADDR = 9;
export const RTNLGRP_IPV6_MROUTE = 10;
export const RTNLGRP_IPV6_ROUTE = 11;
export const RTNLGRP_IPV6_IFINFO = 12;
export const RTNLGRP_IPV6_PREFIX = 18;
export const RTNLGRP_IPV6_RULE = 19;
export const RTNLGRP_NSID = 28;
export const RTNLGRP_NEXTHOP = 32;

// --- links: ifinfomsg + IFLA_* --------------------------------------------------------------
export const IFLA_ADDRESS = 1;
export const IFLA_BROADCAST = 2;
export const IFLA_IFNAME = 3;
export const IFLA_MTU = 4;
export const IFLA_LINK = 5;
export const IFLA_QDISC = 6;
export const IFLA_STATS = 7;
export const IFLA_MASTER = 10;
export const IFLA_TXQLEN = 13;
export const IFLA_OPERSTATE = 16;
export const IFLA_LINKMODE = 17;
export const IFLA_LINKINFO = 18;
export const IFLA_NET_NS_PID = 19;
export const IFLA_IFALIAS = 20;
export const IFLA_STATS64 = 23;
export const IFLA_AF_SPEC = 26;
export const IFLA_GROUP = 27;
export const IFLA_NET_NS_FD = 28;
export const IFLA_EXT_MASK = 29;
export const IFLA_PROMISCUITY = 30;
export const IFLA_NUM_TX_QUEUES = 31;
export const IFLA_NUM_RX_QUEUES = 32;
export const IFLA_CARRIER = 33;
export const IFLA_LINK_NETNSID = 37;
export const IFLA_PROTO_DOWN = 39;
export const IFLA_XDP = 43;
export const IFLA_MIN_MTU = 50;
export const IFLA_MAX_MTU = 51;
export const IFLA_ALT_IFNAME = 53;
export const IFLA_PERM_ADDRESS = 54;

export const IFLA_INFO_KIND = 1;
export const IFLA_INFO_DATA = 2;
export const IFLA_INFO_XSTATS = 3;
export const IFLA_INFO_SLAVE_KIND = 4;
export const IFLA_INFO_SLAVE_DATA = 5;

export const VETH_INFO_PEER = 1;

/** Inside IFLA_XDP. */
export const IFLA_XDP_FD = 1;
export const IFLA_XDP_ATTACHED = 2;
export const IFLA_XDP_FLAGS = 3;
export const IFLA_XDP_PROG_ID = 4;
export const IFLA_XDP_DRV_PROG_ID = 5;
export const IFLA_XDP_SKB_PROG_ID = 6;
export const IFLA_XDP_HW_PROG_ID = 7;
/** IFLA_XDP_ATTACHED values. */
export const XDP_ATTACHED_NONE = 0;
export const XDP_ATTACHED_DRV = 1;
export const XDP_ATTACHED_SKB = 2;
export const XDP_ATTACHED_HW = 3;
export const XDP_ATTACHED_MULTI = 4;

/** IFLA_EXT_MASK bits (RTEXT_FILTER_*). */
export const RTEXT_FILTER_VF = 1 << 0;
export const RTEXT_FILTER_SKIP_STATS = 1 << 3;

export const IFF_UP = 1 << 0;
export const IFF_BROADCAST = 1 << 1;
export const IFF_DEBUG = 1 << 2;
export const IFF_LOOPBACK = 1 << 3;
export const IFF_POINTOPOINT = 1 << 4;
export const IFF_NOTRAILERS = 1 << 5;
export const IFF_RUNNING = 1 << 6;
export const IFF_NOARP = 1 << 7;
export const IFF_PROMISC = 1 << 8;
export const IFF_ALLMULTI = 1 << 9;
export const IFF_MASTER = 1 << 10;
export const IFF_SLAVE = 1 << 11;
export const IFF_MULTICAST = 1 << 12;
export const IFF_PORTSEL = 1 << 13;
export const IFF_AUTOMEDIA = 1 << 14;
export const IFF_DYNAMIC = 1 << 15;
export const IFF_LOWER_UP = 1 << 16;
export const IFF_DORMANT = 1 << 17;
export const IFF_ECHO = 1 << 18;

export const IF_OPER_UNKNOWN = 0;
export const IF_OPER_NOTPRESENT = 1;
export const IF_OPER_DOWN = 2;
export const IF_OPER_LOWERLAYERDOWN = 3;
export const IF_OPER_TESTING = 4;
export const IF_OPER_DORMANT = 5;
export const IF_OPER_UP = 6;

export const ARPHRD_ETHER = 1;
export const ARPHRD_IEEE802 = 6;
export const ARPHRD_INFINIBAND = 32;
export const ARPHRD_TUNNEL = 768;
export const ARPHRD_TUNNEL6 = 769;
export const ARPHRD_LOOPBACK = 772;
export const ARPHRD_SIT = 776;
export const ARPHRD_IPGRE = 778;
export const ARPHRD_IP6GRE = 823;
export const ARPHRD_NONE = 0xfffe;
export const ARPHRD_VOID = 0xffff;

// --- addresses: ifaddrmsg + IFA_* -----------------------------------------------------------
export const IFA_ADDRESS = 1;
export const IFA_LOCAL = 2;
export const IFA_LABEL = 3;
export const IFA_BROADCAST = 4;
export const IFA_ANYCAST = 5;
export const IFA_CACHEINFO = 6;
export const IFA_MULTICAST = 7;
export const IFA_FLAGS = 8;
export const IFA_RT_PRIORITY = 9;
export const IFA_TARGET_NETNSID = 10;
export const IFA_PROTO = 11;

export const IFA_F_SECONDARY = 0x01;
export const IFA_F_TEMPORARY = IFA_F_SECONDARY;
export const IFA_F_NODAD = 0x02;
export const IFA_F_OPTIMISTIC = 0x04;
export const IFA_F_DADFAILED = 0x08;
export const IFA_F_HOMEADDRESS = 0x10;
export const IFA_F_DEPRECATED = 0x20;
export const IFA_F_TENTATIVE = 0x40;
export const IFA_F_PERMANENT = 0x80;
export const IFA_F_MANAGETEMPADDR = 0x100;
export const IFA_F_NOPREFIXROUTE = 0x200;
export const IFA_F_MCAUTOJOIN = 0x400;
export const IFA_F_STABLE_PRIVACY = 0x800;

/** ifa_cacheinfo lifetime meaning "forever". */
export const INFINITY_LIFE_TIME = 0xffffffff;

// --- routes: rtmsg + RTA_* ------------------------------------------------------------------
export const RTA_DST = 1;
export const RTA_SRC = 2;
export const RTA_IIF = 3;
export const RTA_OIF = 4;
export const RTA_GATEWAY = 5;
export const RTA_PRIORITY = 6;
export const RTA_PREFSRC = 7;
export const RTA_METRICS = 8;
export const RTA_MULTIPATH = 9;
export const RTA_FLOW = 11;
export const RTA_CACHEINFO = 12;
export const RTA_TABLE = 15;
export const RTA_MARK = 16;
export const RTA_MFC_STATS = 17;
export const RTA_VIA = 18;
export const RTA_NEWDST = 19;
export const RTA_PREF = 20;
export const RTA_ENCAP_TYPE = 21;
export const RTA_ENCAP = 22;
export const RTA_EXPIRES = 23;
export const RTA_PAD = 24;
export const RTA_UID = 25;
export const RTA_TTL_PROPAGATE = 26;
export const RTA_IP_PROTO = 27;
export const RTA_SPORT = 28;
export const RTA_DPORT = 29;
export const RTA_NH_ID = 30;

export const RTN_UNSPEC = 0;
export const RTN_UNICAST = 1;
export const RTN_LOCAL = 2;
export const RTN_BROADCAST = 3;
export const RTN_ANYCAST = 4;
export const RTN_MULTICAST = 5;
export const RTN_BLACKHOLE = 6;
export const RTN_UNREACHABLE = 7;
export const RTN_PROHIBIT = 8;
export const RTN_THROW = 9;
export const RTN_NAT = 10;
export const RTN_XRESOLVE = 11;

export const RTPROT_UNSPEC = 0;
export const RTPROT_REDIRECT = 1;
export const RTPROT_KERNEL = 2;
export const RTPROT_BOOT = 3;
export const RTPROT_STATIC = 4;
export const RTPROT_RA = 9;
export const RTPROT_ZEBRA = 11;
export const RTPROT_BIRD = 12;
export const RTPROT_DHCP = 16;
export const RTPROT_KEEPALIVED = 18;
export const RTPROT_BABEL = 42;
export const RTPROT_BGP = 186;
export const RTPROT_ISIS = 187;
export const RTPROT_OSPF = 188;
export const RTPROT_RIP = 189;

export const RT_SCOPE_UNIVERSE = 0;
export const RT_SCOPE_SITE = 200;
export const RT_SCOPE_LINK = 253;
export const RT_SCOPE_HOST = 254;
export const RT_SCOPE_NOWHERE = 255;

export const RT_TABLE_UNSPEC = 0;
export const RT_TABLE_COMPAT = 252;
export const RT_TABLE_DEFAULT = 253;
export const RT_TABLE_MAIN = 254;
export const RT_TABLE_LOCAL = 255;

export const RTM_F_NOTIFY = 0x100;
export const RTM_F_CLONED = 0x200;
export const RTM_F_EQUALIZE = 0x400;
export const RTM_F_PREFIX = 0x800;
export const RTM_F_LOOKUP_TABLE = 0x1000;
export const RTM_F_FIB_MATCH = 0x2000;
export const RTM_F_OFFLOAD = 0x4000;
export const RTM_F_TRAP = 0x8000;

export const RTNH_F_DEAD = 1;
export const RTNH_F_PERVASIVE = 2;
export const RTNH_F_ONLINK = 4;
export const RTNH_F_OFFLOAD = 8;
export const RTNH_F_LINKDOWN = 16;
export const RTNH_F_UNRESOLVED = 32;
export const RTNH_F_TRAP = 64;

// --- neighbors: ndmsg + NDA_* ---------------------------------------------------------------
export const NDA_DST = 1;
export const NDA_LLADDR = 2;
export const NDA_CACHEINFO = 3;
export const NDA_PROBES = 4;
export const NDA_VLAN = 5;
export const NDA_PORT = 6;
export const NDA_VNI = 7;
export const NDA_IFINDEX = 8;
export const NDA_MASTER = 9;
export const NDA_LINK_NETNSID = 10;
export const NDA_SRC_VNI = 11;
export const NDA_PROTOCOL = 12;
export const NDA_NH_ID = 13;
export const NDA_FDB_EXT_ATTRS = 14;
export const NDA_FLAGS_EXT = 15;
export const NDA_NDM_STATE_MASK = 16;
export const NDA_NDM_FLAGS_MASK = 17;

export const NTF_USE = 1 << 0;
export const NTF_SELF = 1 << 1;
export const NTF_MASTER = 1 << 2;
export const NTF_PROXY = 1 << 3;
export const NTF_EXT_LEARNED = 1 << 4;
export const NTF_OFFLOADED = 1 << 5;
export const NTF_STICKY = 1 << 6;
export const NTF_ROUTER = 1 << 7;
/** Extended flag carried in NDA_FLAGS_EXT: the kernel keeps the entry resolved (5.16+). */
export const NTF_EXT_MANAGED = 1 << 0;

export const NUD_NONE = 0x00;
export const NUD_INCOMPLETE = 0x01;
export const NUD_REACHABLE = 0x02;
export const NUD_STALE = 0x04;
export const NUD_DELAY = 0x08;
export const NUD_PROBE = 0x10;
export const NUD_FAILED = 0x20;
export const NUD_NOARP = 0x40;
export const NUD_PERMANENT = 0x80;

// --- policy routing rules: fib_rule_hdr + FRA_* (linux/fib_rules.h) -------------------------
export const FRA_DST = 1;
export const FRA_SRC = 2;
export const FRA_IIFNAME = 3;
export const FRA_GOTO = 4;
export const FRA_PRIORITY = 6;
export const FRA_FWMARK = 10;
export const FRA_FLOW = 11;
export const FRA_TUN_ID = 12;
export const FRA_SUPPRESS_IFGROUP = 13;
export const FRA_SUPPRESS_PREFIXLEN = 14;
export const FRA_TABLE = 15;
export const FRA_FWMASK = 16;
export const FRA_OIFNAME = 17;
export const FRA_PAD = 18;
export const FRA_L3MDEV = 19;
export const FRA_UID_RANGE = 20;
export const FRA_PROTOCOL = 21;
export const FRA_IP_PROTO = 22;
export const FRA_SPORT_RANGE = 23;
export const FRA_DPORT_RANGE = 24;

export const FR_ACT_UNSPEC = 0;
export const FR_ACT_TO_TBL = 1;
export const FR_ACT_GOTO = 2;
export const FR_ACT_NOP = 3;
export const FR_ACT_BLACKHOLE = 6;
export const FR_ACT_UNREACHABLE = 7;
export const FR_ACT_PROHIBIT = 8;

export const FIB_RULE_PERMANENT = 0x01;
export const FIB_RULE_INVERT = 0x02;
export const FIB_RULE_UNRESOLVED = 0x04;
export const FIB_RULE_IIF_DETACHED = 0x08;
export const FIB_RULE_OIF_DETACHED = 0x10;

// --- fixed header sizes ---------------------------------------------------------------------
export const SIZEOF_NLMSGHDR = 16;
export const SIZEOF_NLATTR = 4;
export const SIZEOF_NLMSGERR = 20; // int error + the original nlmsghdr
export const SIZEOF_IFINFOMSG = 16;
export const SIZEOF_IFADDRMSG = 8;
export const SIZEOF_RTMSG = 12;
export const SIZEOF_NDMSG = 12;
export const SIZEOF_RTNEXTHOP = 8;
export const SIZEOF_NDA_CACHEINFO = 16;
export const SIZEOF_IFA_CACHEINFO = 16;
export const SIZEOF_RTA_CACHEINFO = 32;
export const SIZEOF_FIB_RULE_HDR = 12;
export const SIZEOF_FIB_RULE_UID_RANGE = 8;
export const SIZEOF_FIB_RULE_PORT_RANGE = 4;
