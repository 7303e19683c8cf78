"""generated from hw/regmap/lvsnic.rdl by scripts/gen-regmap.py: do not edit.

Register addresses of lvsnic_core, the shared codes and the bit positions of
the in-band layouts (docs/registers.md), for the cocotb tests."""

import enum

ID = 0x000
ID_RESET = 0x4C56534E
VERSION = 0x004
VERSION_RESET = 0x00010000
VERSION_MINOR_MASK = 0x0000FFFF
VERSION_MINOR_SHIFT = 0
VERSION_MAJOR_MASK = 0xFFFF0000
VERSION_MAJOR_SHIFT = 16
CAPS0 = 0x008
CAPS0_RESET = 0x00000000
CAPS0_DATA_WIDTH_MASK = 0x0000FFFF
CAPS0_DATA_WIDTH_SHIFT = 0
CAPS0_FLOW_BUCKETS_LOG2_MASK = 0x00FF0000
CAPS0_FLOW_BUCKETS_LOG2_SHIFT = 16
CAPS0_ACTION_LOG2_MASK = 0xFF000000
CAPS0_ACTION_LOG2_SHIFT = 24
CAPS1 = 0x00C
CAPS1_RESET = 0x00000000
CAPS1_SLOTS_MASK = 0x000000FF
CAPS1_SLOTS_SHIFT = 0
CAPS1_WAYS_MASK = 0x0000FF00
CAPS1_WAYS_SHIFT = 8
CAPS1_VIP_COUNT_MASK = 0x00FF0000
CAPS1_VIP_COUNT_SHIFT = 16
CTRL = 0x010
CTRL_RESET = 0x00000002
CTRL_ENABLE_MASK = 0x00000001
CTRL_ENABLE_SHIFT = 0
CTRL_PMTU_DISC_MASK = 0x00000002
CTRL_PMTU_DISC_SHIFT = 1
MAC_LO = 0x014
MAC_LO_RESET = 0x00000000
MAC_HI = 0x018
MAC_HI_RESET = 0x00000000
MAC_HI_MAC_MASK = 0x0000FFFF
MAC_HI_MAC_SHIFT = 0
IP = 0x01C
IP_RESET = 0x00000000
MTU = 0x020
MTU_RESET = 0x000005DC
MTU_MTU_MASK = 0x0000FFFF
MTU_MTU_SHIFT = 0
VIP_VALID = 0x024
VIP_VALID_RESET = 0x00000000
VIP_BASE = 0x100
VIP_STRIDE = 4
VIP_LEN = 32
FLOW_DATA_BASE = 0x200
FLOW_DATA_STRIDE = 4
FLOW_DATA_LEN = 4
FLOW_INDEX = 0x210
FLOW_INDEX_RESET = 0x00000000
FLOW_CMD = 0x214
FLOW_CMD_RESET = 0x00000000
FLOW_CMD_CMD_MASK = 0x00000003
FLOW_CMD_CMD_SHIFT = 0
FLOW_STATUS = 0x218
FLOW_STATUS_RESET = 0x00000000
FLOW_STATUS_BUSY_MASK = 0x00000001
FLOW_STATUS_BUSY_SHIFT = 0
FLOW_RDATA_BASE = 0x220
FLOW_RDATA_STRIDE = 4
FLOW_RDATA_LEN = 4
FLOW_HIT_LO = 0x230
FLOW_HIT_LO_RESET = 0x00000000
FLOW_HIT_HI = 0x234
FLOW_HIT_HI_RESET = 0x00000000
ACT_DATA_BASE = 0x300
ACT_DATA_STRIDE = 4
ACT_DATA_LEN = 4
ACT_INDEX = 0x310
ACT_INDEX_RESET = 0x00000000
ACT_CMD = 0x314
ACT_CMD_RESET = 0x00000000
ACT_CMD_CMD_MASK = 0x00000003
ACT_CMD_CMD_SHIFT = 0
ACT_STATUS = 0x318
ACT_STATUS_RESET = 0x00000000
ACT_STATUS_BUSY_MASK = 0x00000001
ACT_STATUS_BUSY_SHIFT = 0
ACT_RDATA_BASE = 0x320
ACT_RDATA_STRIDE = 4
ACT_RDATA_LEN = 4
ACT_PKTS_LO = 0x330
ACT_PKTS_LO_RESET = 0x00000000
ACT_PKTS_HI = 0x334
ACT_PKTS_HI_RESET = 0x00000000
ACT_BYTES_LO = 0x338
ACT_BYTES_LO_RESET = 0x00000000
ACT_BYTES_HI = 0x33C
ACT_BYTES_HI_RESET = 0x00000000
CNT_BASE = 0x400
CNT_STRIDE = 8
CNT_LEN = 64
CNT_LO_OFFSET = 0x0
CNT_HI_OFFSET = 0x4


class TableCmd(enum.IntEnum):
    """`lvsnic_table_cmd`: the values of `FLOW_CMD.cmd`, `ACT_CMD.cmd`."""

    WRITE = 1  # Write the staging entry (and zero its activity).
    READ = 2  # Read the entry and its activity.


class Reason(enum.IntEnum):
    """`lvsnic_reason`: the values of `lvsnic_host_meta.reason`."""

    FORWARDED = 0  # Forwarded (never seen on the host port).
    MALFORMED = 1  # Shorter than 14 bytes, or a malformed IPv4 header.
    L2_MULTICAST = 2  # Group bit set in the destination MAC.
    L2_OTHER_HOST = 3  # Destination MAC is not the director's.
    VLAN = 4  # 802.1Q tagged.
    NON_IPV4 = 5  # EtherType not IPv4.
    IP_CHECKSUM = 6  # IPv4 header checksum wrong.
    IP_OPTIONS = 7  # IHL > 5.
    FRAGMENT = 8  # A fragment.
    NOT_TCP_UDP = 9  # Neither TCP nor UDP.
    L4_TRUNCATED = 10  # Total length too short for the L4 header.
    TTL = 11  # TTL ≤ 1.
    MISS_VIP = 12  # No flow, destination is a VIP.
    MISS_LOCAL = 13  # No flow, destination is the director.
    MISS = 14  # No flow.
    TCP_CONTROL = 15  # TCP SYN/FIN/RST, ACK clear, or `ack_fast` clear.
    UDP_ZERO_CSUM = 16  # UDP checksum 0 on a NAT action.
    TOO_BIG = 17  # Larger than the MTU after rewrite.
    DISABLED = 18  # `CTRL.enable` = 0.
    TRUNCATED = 19  # Forwarding decided, but the frame ended early (also aborted on tx).
    ACTION_HOST = 20  # A flow entry matched, and its action has `host` set.


class ActionOp(enum.IntEnum):
    """`lvsnic_action_op`: the values of `lvsnic_action_word0.op`."""

    ROUTE = 0  # Direct routing: MAC rewrite.
    NAT_DNAT = 1  # NAT request: destination address and port.
    NAT_SNAT = 2  # NAT reply: source address and port.
    TUNNEL = 3  # IPIP encapsulation.


# lvsnic_host_meta: Exception metadata, bit positions
HOST_META_REASON_LSB = 0
HOST_META_REASON_WIDTH = 8
HOST_META_HIT_LSB = 8
HOST_META_HIT_WIDTH = 1
HOST_META_VIP_LSB = 9
HOST_META_VIP_WIDTH = 1
HOST_META_HASH_0_LSB = 32
HOST_META_HASH_0_WIDTH = 32
HOST_META_SEQ_LSB = 64
HOST_META_SEQ_WIDTH = 32
HOST_META_TS_LSB = 96
HOST_META_TS_WIDTH = 64

# lvsnic_action_word0: Action entry word 0, bit positions
ACTION_WORD0_OP_LSB = 0
ACTION_WORD0_OP_WIDTH = 2
ACTION_WORD0_HOST_LSB = 2
ACTION_WORD0_HOST_WIDTH = 1
ACTION_WORD0_MAC_LO_LSB = 16
ACTION_WORD0_MAC_LO_WIDTH = 16
