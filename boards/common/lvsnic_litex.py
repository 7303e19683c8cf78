#
# lvsnic_core inside a LiteX SoC: the core as a Verilog instance (the same
# RTL as everywhere else, sources from hw/rtl/lvsnic_core.f), its AXI-Lite
# port on the SoC bus, and the glue between its AXI-Stream ports and LiteEth:
#
#   data port  MAC rx (64 bit) -> FrameBuffer (drops bad-FCS / overlong frames)
#                              -> s_axis_rx (ingress timestamp, sequence number)
#              m_axis_tx -> FrameBuffer (discards aborted frames) -> MAC tx
#   management UDP port LVSNIC_UDP_PORT:
#              m_axis_host -> FrameBuffer -> ExceptionPacketizer -> UDP tx
#              UDP rx -> InjectDepacketizer -> FrameBuffer -> s_axis_inject
#
# Framing on the management port: boards/README.md, "Management port".
#
# Board tops (boards/<board>/) add only clocks, PHYs and this glue.

import os

from migen import *
from migen.genlib.fifo import SyncFIFO

from litex.gen import LiteXModule
from litex.soc.interconnect import stream, wishbone
from litex.soc.interconnect.axi import AXILiteInterface, Wishbone2AXILite
from litex.soc.interconnect.csr import CSRStatus, CSRStorage

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

LVSNIC_UDP_PORT = 0x4C56      # exception / inject datagrams ("LV")
INJECT_MAGIC    = 0x4A4E564C  # "LVNJ" little-endian, bytes 4..8 of an inject datagram
EXCEPT_MAGIC    = 0x5843564C  # "LVCX" little-endian, bytes 20..24 of an exception datagram
HEADER_BYTES    = {"exception": 24, "inject": 8}


def core_sources():
    """(sources, include dirs) of lvsnic_core, from hw/rtl/lvsnic_core.f."""
    sources, incdirs = [], []
    with open(os.path.join(REPO, "hw", "rtl", "lvsnic_core.f")) as f:
        for line in f:
            line = line.strip()
            if not line or line.startswith("#") or line.endswith(".vlt"):
                continue
            if line.startswith("+incdir+"):
                incdirs.append(os.path.join(REPO, line[len("+incdir+"):]))
            else:
                sources.append(os.path.join(REPO, line))
    return sources, incdirs


def axis_layout(dw, user_width):
    return [("data", dw), ("keep", dw // 8), ("user", user_width)]


def keep_from_count(count_m1, kw):
    """tkeep of a beat holding count_m1 + 1 bytes (contiguous from byte 0)."""
    return Array([(1 << (n + 1)) - 1 for n in range(kw)])[count_m1]


def lowest_set(sig, kw):
    """Index of the lowest set bit of sig (kw - 1 when none is set)."""
    r = kw - 1
    for i in reversed(range(kw)):
        r = Mux(sig[i], i, r)
    return r


# lvsnic_core --------------------------------------------------------------------------------------

class LvsnicCorePorts(LiteXModule):
    """lvsnic_core's ports as LiteX streams (rx/tx/host/inject, keep and
    user carried as payload fields) and AXI-Lite (`axil`), and the register
    map on the SoC bus: what the core and its stub share."""
    def _ports(self, dw, flow_buckets_log2, action_log2, vip_count, ipv6=True):
        self.rx     = stream.Endpoint(axis_layout(dw, 96))
        self.tx     = stream.Endpoint(axis_layout(dw, 33))
        self.host   = stream.Endpoint(axis_layout(dw, 160))
        self.inject = stream.Endpoint(axis_layout(dw, 32))
        self.axil   = AXILiteInterface(data_width=32, address_width=32)
        self.params = dict(data_width=dw, flow_buckets_log2=flow_buckets_log2,
                           action_log2=action_log2, vip_count=vip_count, ipv6=ipv6)

    def add_to_bus(self, soc, origin=0x0000_0000, size=0x1_0000):
        """The register map (docs/hardware.md §6) at `origin` on the SoC bus."""
        from litex.soc.integration.soc import SoCRegion
        wb = wishbone.Interface(data_width=32, adr_width=30, addressing="word")
        self.wb2axil = Wishbone2AXILite(wb, self.axil, base_address=origin)
        soc.bus.add_slave("lvsnic", wb, SoCRegion(origin=origin, size=size, cached=False))


class LvsnicCore(LvsnicCorePorts):
    """lvsnic_core as an instance on the ports of LvsnicCorePorts."""
    def __init__(self, platform, data_width=64, flow_buckets_log2=6, action_log2=6, vip_count=16, ipv6=True):
        dw, kw = data_width, data_width // 8
        self._ports(dw, flow_buckets_log2, action_log2, vip_count, ipv6)

        sources, incdirs = core_sources()
        for path in incdirs:
            platform.add_verilog_include_path(path)
        for path in sources:
            platform.add_source(path, language="systemverilog")

        a = self.axil
        self.specials += Instance("lvsnic_core",
            p_DATA_WIDTH        = dw,
            p_KEEP_WIDTH        = kw,
            p_FLOW_BUCKETS_LOG2 = flow_buckets_log2,
            p_ACTION_LOG2       = action_log2,
            p_VIP_COUNT         = vip_count,
            p_IPV6              = int(ipv6),
            p_AXIL_ADDR_WIDTH   = 16,
            i_clk = ClockSignal("sys"),
            i_rst = ResetSignal("sys"),
            i_s_axis_rx_tdata  = self.rx.data,   i_s_axis_rx_tkeep  = self.rx.keep,
            i_s_axis_rx_tvalid = self.rx.valid,  o_s_axis_rx_tready = self.rx.ready,
            i_s_axis_rx_tlast  = self.rx.last,   i_s_axis_rx_tuser  = self.rx.user,
            o_m_axis_tx_tdata  = self.tx.data,   o_m_axis_tx_tkeep  = self.tx.keep,
            o_m_axis_tx_tvalid = self.tx.valid,  i_m_axis_tx_tready = self.tx.ready,
            o_m_axis_tx_tlast  = self.tx.last,   o_m_axis_tx_tuser  = self.tx.user,
            o_m_axis_host_tdata  = self.host.data,  o_m_axis_host_tkeep  = self.host.keep,
            o_m_axis_host_tvalid = self.host.valid, i_m_axis_host_tready = self.host.ready,
            o_m_axis_host_tlast  = self.host.last,  o_m_axis_host_tuser  = self.host.user,
            i_s_axis_inject_tdata  = self.inject.data,  i_s_axis_inject_tkeep  = self.inject.keep,
            i_s_axis_inject_tvalid = self.inject.valid, o_s_axis_inject_tready = self.inject.ready,
            i_s_axis_inject_tlast  = self.inject.last,  i_s_axis_inject_tuser  = self.inject.user,
            i_s_axil_awaddr  = a.aw.addr[:16], i_s_axil_awprot = 0,
            i_s_axil_awvalid = a.aw.valid,     o_s_axil_awready = a.aw.ready,
            i_s_axil_wdata   = a.w.data,       i_s_axil_wstrb   = a.w.strb,
            i_s_axil_wvalid  = a.w.valid,      o_s_axil_wready  = a.w.ready,
            o_s_axil_bresp   = a.b.resp,       o_s_axil_bvalid  = a.b.valid,
            i_s_axil_bready  = a.b.ready,
            i_s_axil_araddr  = a.ar.addr[:16], i_s_axil_arprot = 0,
            i_s_axil_arvalid = a.ar.valid,     o_s_axil_arready = a.ar.ready,
            o_s_axil_rdata   = a.r.data,       o_s_axil_rresp   = a.r.resp,
            o_s_axil_rvalid  = a.r.valid,      i_s_axil_rready  = a.r.ready,
        )


class LvsnicCoreStub(LvsnicCorePorts):
    """A stand-in for lvsnic_core with the same ports, for timing analysis of
    everything around the core in minutes instead of hours (lvsnic_versa.py
    --core-stub): rx frames go out on host (user: rx tuser, zero-extended),
    inject frames go out on tx (user: inject tuser, never aborted); AXI-Lite
    answers reads of 0x0 with the core's ID ("LVSN") and of any other address
    with the last word written. No flow table, no frame buffer: the glue's
    buffers, LiteEth and Etherbone are all that is left to place."""
    def __init__(self, platform, data_width=64, flow_buckets_log2=6, action_log2=6, vip_count=16, ipv6=True):
        dw = data_width
        self._ports(dw, flow_buckets_log2, action_log2, vip_count, ipv6)
        self.comb += [
            self.rx.connect(self.host, omit={"user"}),
            self.host.user.eq(self.rx.user),
            self.inject.connect(self.tx, omit={"user"}),
            self.tx.user.eq(self.inject.user),
        ]
        a = self.axil
        reg    = Signal(32)
        bvalid = Signal()
        rvalid = Signal()
        rdata  = Signal(32)
        take_w = Signal()
        self.comb += [
            take_w.eq(a.aw.valid & a.w.valid & ~bvalid),
            a.aw.ready.eq(take_w), a.w.ready.eq(take_w),
            a.b.valid.eq(bvalid), a.b.resp.eq(0),
            a.ar.ready.eq(~rvalid),
            a.r.valid.eq(rvalid), a.r.data.eq(rdata), a.r.resp.eq(0),
        ]
        self.sync += [
            If(take_w, bvalid.eq(1), reg.eq(a.w.data)).Elif(a.b.ready, bvalid.eq(0)),
            If(a.ar.valid & ~rvalid,
                rvalid.eq(1),
                rdata.eq(Mux(a.ar.addr[:16] == 0, 0x4C56534E, reg)),
            ).Elif(a.r.ready, rvalid.eq(0)),
        ]


# Store-and-forward frame buffer -------------------------------------------------------------------

class FrameBuffer(LiteXModule):
    """Store-and-forward buffer of whole frames (64-bit beats in block RAM).

    sink: data/keep/last plus `drop` (on any beat: discard the frame) and
    `user` (sampled on the first beat). A frame is readable once its last
    beat is in; a dropped frame is rewound. A frame that cannot fit (longer
    than the buffer) is discarded and counted in `overflow`; `dropped`
    counts frames discarded by `drop`. With backpressure=False the sink never
    stalls and a frame that meets a full buffer is discarded (counted in
    `overflow`); with backpressure=True the sink waits for space, except for
    a frame longer than the whole buffer, which is discarded.

    source: data/keep/last, `user` (as sampled) and `length` (frame bytes)."""
    def __init__(self, dw=64, depth_log2=10, user_width=1, frames_log2=5, backpressure=True):
        kw  = dw // 8
        lw  = log2_int(kw)
        D   = depth_log2
        self.sink   = sink   = stream.Endpoint([("data", dw), ("keep", kw), ("drop", 1), ("user", user_width)])
        self.source = source = stream.Endpoint([("data", dw), ("keep", kw), ("user", user_width), ("length", 16)])
        self.overflow = Signal(32)
        self.dropped  = Signal(32)
        self.frames   = Signal(32)

        # # #

        mem = Memory(dw + lw + 1, 2**D)
        wp  = mem.get_port(write_capable=True)
        rp  = mem.get_port(async_read=False)
        self.specials += mem, wp, rp

        params = SyncFIFO(user_width + 16, 2**frames_log2)
        self.submodules += params

        wr_ptr  = Signal(D + 1)   # next beat written
        cm_ptr  = Signal(D + 1)   # end of the committed frames
        cm_d    = Signal(D + 1)   # cm_ptr one cycle later (the RAM write has landed)
        rd_ptr  = Signal(D + 1)   # next beat read
        used    = Signal(D + 1)
        in_frame = Signal()       # a frame is being written
        discard  = Signal()       # the frame being written is discarded
        flen     = Signal(17)     # bytes of the frame being written
        fuser    = Signal(user_width)
        dropping = Signal()

        cnt_m1 = Signal(lw)
        self.comb += cnt_m1.eq(lowest_set(~Cat(sink.keep[1:], 0), kw))   # highest kept byte

        full       = (wr_ptr - rd_ptr) == 2**D
        frame_full = (wr_ptr - cm_ptr) == 2**D          # this frame alone fills the buffer
        room       = ~full & params.writable
        self.comb += used.eq(wr_ptr - rd_ptr)
        if backpressure:
            self.comb += sink.ready.eq(room | discard | frame_full)
        else:
            self.comb += sink.ready.eq(1)
        write = Signal()
        self.comb += [
            write.eq(sink.valid & sink.ready & ~discard & room),
            wp.adr.eq(wr_ptr[:D]),
            wp.dat_w.eq(Cat(sink.data, cnt_m1, sink.last)),
            wp.we.eq(write),
        ]
        lost = Signal()     # this beat cannot be stored: the frame is lost
        self.comb += lost.eq(sink.valid & sink.ready & ~discard & ~room)
        self.comb += dropping.eq(discard | lost | sink.drop)
        end_len = Signal(17)
        self.comb += end_len.eq(flen + cnt_m1 + 1)
        first_user = Signal(user_width)
        self.comb += first_user.eq(Mux(in_frame, fuser, sink.user))
        self.comb += [
            params.din.eq(Cat(first_user, end_len[:16])),
            params.we.eq(sink.valid & sink.ready & sink.last & ~dropping & (end_len < 2**16)),
        ]
        self.sync += [
            cm_d.eq(cm_ptr),
            If(write, wr_ptr.eq(wr_ptr + 1)),
            If(sink.valid & sink.ready,
                If(~in_frame, fuser.eq(sink.user)),
                flen.eq(flen + kw),
                in_frame.eq(~sink.last),
                If(lost, discard.eq(1)),
                If(sink.last,
                    flen.eq(0),
                    discard.eq(0),
                    If(dropping | (end_len >= 2**16),
                        wr_ptr.eq(cm_ptr),
                        If(discard | lost | (end_len >= 2**16),
                            self.overflow.eq(self.overflow + 1)
                        ).Else(
                            self.dropped.eq(self.dropped + 1)
                        )
                    ).Else(
                        cm_ptr.eq(wr_ptr + 1),
                        self.frames.eq(self.frames + 1)
                    )
                )
            )
        ]

        # Read side: registered RAM read at rd_ptr, advanced on a pop.
        pop   = Signal()
        avail = Signal()
        self.comb += [
            avail.eq(rd_ptr != cm_d),
            pop.eq(source.valid & source.ready),
            rp.adr.eq(Mux(pop, rd_ptr + 1, rd_ptr)[:D]),
        ]
        # The address presented in a cycle is rd_ptr of the next one, so
        # rp.dat_r always holds the beat at rd_ptr; it was read at least one
        # cycle after that beat was written, since avail uses cm_d.
        self.sync += If(pop, rd_ptr.eq(rd_ptr + 1))
        q_last = rp.dat_r[dw + lw]
        q_cnt  = rp.dat_r[dw:dw + lw]
        self.comb += [
            source.valid.eq(avail & params.readable),
            source.data.eq(rp.dat_r[:dw]),
            source.keep.eq(Mux(q_last, keep_from_count(q_cnt, kw), 2**kw - 1)),
            source.last.eq(q_last),
            source.user.eq(params.dout[:user_width]),
            source.length.eq(params.dout[user_width:]),
            params.re.eq(pop & q_last),
        ]


# Management port: exception datagrams ------------------------------------------------------------

class ExceptionPacketizer(LiteXModule):
    """Frames from m_axis_host (whole, with length, via a FrameBuffer) to UDP
    datagrams: 24-byte header (160-bit metadata little-endian, EXCEPT_MAGIC)
    then the frame. Sent from LVSNIC_UDP_PORT to host_ip:host_port."""
    def __init__(self, udp_port, host_ip, host_port, dw=64):
        from liteeth.common import eth_udp_user_description
        kw = dw // 8
        self.sink = sink = stream.Endpoint([("data", dw), ("keep", kw), ("user", 160), ("length", 16)])
        source = udp_port.sink
        meta = sink.user
        hdr  = Array([meta[0:64], meta[64:128], Cat(meta[128:160], Constant(EXCEPT_MAGIC, 32))])
        beat = Signal(2)
        last_be = Signal(kw)
        self.comb += last_be.eq(sink.keep ^ Cat(sink.keep[1:], 0))   # one-hot: highest kept byte
        self.comb += [
            source.src_port.eq(LVSNIC_UDP_PORT),
            source.dst_port.eq(host_port),
            source.ip_address.eq(host_ip),
            source.length.eq(sink.length + HEADER_BYTES["exception"]),
            source.valid.eq(sink.valid),
            If(beat < 3,
                source.data.eq(hdr[beat]),
                source.last_be.eq(0),
            ).Else(
                source.data.eq(sink.data),
                source.last.eq(sink.last),
                source.last_be.eq(Mux(sink.last, last_be, 0)),
                sink.ready.eq(source.ready),
            ),
        ]
        self.sync += If(source.valid & source.ready,
            If(beat < 3, beat.eq(beat + 1)),
            If(sink.last & (beat == 3), beat.eq(0)),
        )


# Management port: inject datagrams ---------------------------------------------------------------

class InjectDepacketizer(LiteXModule):
    """UDP datagrams to LVSNIC_UDP_PORT -> frames for s_axis_inject (through a
    FrameBuffer): bytes 0..4 the sequence number (little-endian), 4..8
    INJECT_MAGIC, then the frame (14..MAX bytes). Datagrams with another
    magic or a frame shorter than 14 bytes are dropped (`drop` to the
    buffer, counted there)."""
    def __init__(self, udp_port, dw=64):
        kw = dw // 8
        src = udp_port.source
        self.source = source = stream.Endpoint([("data", dw), ("keep", kw), ("drop", 1), ("user", 32)])
        first = Signal(reset=1)
        seq   = Signal(32)
        bad   = Signal()
        left  = Signal(16)   # frame bytes not yet passed on
        frame_len = Signal(16)
        self.comb += frame_len.eq(src.length - HEADER_BYTES["inject"])
        is_bad = (src.data[32:64] != INJECT_MAGIC) | (src.length < HEADER_BYTES["inject"] + 14)
        cnt_m1 = Signal(log2_int(kw))
        self.comb += cnt_m1.eq(Mux(left >= kw, kw - 1, left - 1))
        self.comb += [
            src.ready.eq(first | source.ready),
            source.valid.eq(src.valid & ~first),
            source.data.eq(src.data),
            source.keep.eq(keep_from_count(cnt_m1, kw)),
            source.last.eq(src.last),
            source.user.eq(seq),
            source.drop.eq(bad | (src.error != 0) | (left <= kw) & ~src.last | (left > kw) & src.last),
        ]
        self.sync += If(src.valid & src.ready,
            first.eq(src.last),
            If(first,
                seq.eq(src.data[0:32]),
                bad.eq(is_bad),
                left.eq(frame_len),
            ).Else(
                left.eq(left - kw),
            ),
        )
        # A datagram that is only a header never reaches the buffer: it is
        # counted here.
        self.header_only = Signal(32)
        self.sync += If(src.valid & src.ready & first & src.last, self.header_only.eq(self.header_only + 1))


# Data port glue -----------------------------------------------------------------------------------

class MacToBuffer(LiteXModule):
    """LiteEth MAC core source (data/last_be/error) -> FrameBuffer sink, with
    the ingress timestamp taken on the first beat."""
    def __init__(self, mac_source, buf_sink, timestamp, dw=64):
        kw = dw // 8
        cnt_m1 = Signal(log2_int(kw))
        self.comb += cnt_m1.eq(lowest_set(mac_source.last_be, kw))
        self.comb += [
            buf_sink.valid.eq(mac_source.valid),
            mac_source.ready.eq(buf_sink.ready),
            buf_sink.data.eq(mac_source.data),
            buf_sink.last.eq(mac_source.last),
            buf_sink.keep.eq(Mux(mac_source.last, keep_from_count(cnt_m1, kw), 2**kw - 1)),
            buf_sink.drop.eq((mac_source.error != 0)),
            buf_sink.user.eq(timestamp),
        ]


class Timestamp(LiteXModule):
    """Free-running 64-bit nanosecond counter of the sys clock (16
    fractional bits)."""
    def __init__(self, clk_freq):
        self.ns = Signal(64)
        acc  = Signal(80)
        step = int(round(1e9 / clk_freq * 65536))
        self.sync += acc.eq(acc + step)
        self.comb += self.ns.eq(acc[16:])


class LvsnicGlue(LiteXModule):
    """Everything between lvsnic_core and LiteEth: data-port buffers,
    management-port framing, timestamps, sequence numbers, counters."""
    def __init__(self, core, mac, udp_port, clk_freq, depth_log2=10, host_ip=0xC0A80164):
        dw = core.params["data_width"]
        assert dw == 64, "the LiteEth glue is written for 64-bit beats"
        kw = dw // 8

        self._host_ip   = CSRStorage(32, reset=host_ip, description="IPv4 address exception datagrams go to.")
        self._host_port = CSRStorage(16, reset=LVSNIC_UDP_PORT, description="UDP port exception datagrams go to.")
        names = ["rx_frames", "rx_bad_fcs", "rx_overflow", "tx_frames", "tx_aborted", "tx_overflow",
                 "host_frames", "host_overflow", "inject_frames", "inject_bad", "inject_overflow"]
        csrs = {n: CSRStatus(32, name=n) for n in names}
        for n, c in csrs.items():
            setattr(self, "_" + n, c)

        self.timestamp = Timestamp(clk_freq)

        # data port rx: MAC -> buffer -> core (sequence number given here)
        self.rx_buf = FrameBuffer(dw, depth_log2, user_width=64, backpressure=False)
        self.mac_rx = MacToBuffer(mac.source, self.rx_buf.sink, self.timestamp.ns, dw)
        seq = Signal(32)
        self.comb += [
            self.rx_buf.source.connect(core.rx, omit={"user", "length"}),
            core.rx.user.eq(Cat(self.rx_buf.source.user, seq)),
        ]
        self.sync += If(core.rx.valid & core.rx.ready & core.rx.last, seq.eq(seq + 1))

        # data port tx: core -> buffer (aborted frames dropped) -> MAC
        self.tx_buf = FrameBuffer(dw, depth_log2, user_width=1, backpressure=True)
        self.comb += [
            core.tx.connect(self.tx_buf.sink, omit={"user"}),
            self.tx_buf.sink.drop.eq(core.tx.last & core.tx.user[32]),
        ]
        src = self.tx_buf.source
        self.comb += [
            mac.sink.valid.eq(src.valid), src.ready.eq(mac.sink.ready),
            mac.sink.data.eq(src.data), mac.sink.last.eq(src.last),
            mac.sink.last_be.eq(Mux(src.last, src.keep ^ Cat(src.keep[1:], 0), 0)),
            mac.sink.error.eq(0),
        ]

        # exceptions: core -> buffer -> UDP datagrams
        self.host_buf = FrameBuffer(dw, depth_log2, user_width=160, backpressure=True)
        self.comb += core.host.connect(self.host_buf.sink, omit={"drop"})
        self.packetizer = ExceptionPacketizer(udp_port, self._host_ip.storage, self._host_port.storage, dw)
        self.comb += self.host_buf.source.connect(self.packetizer.sink)

        # inject: UDP datagrams -> buffer -> core
        self.depacketizer = InjectDepacketizer(udp_port, dw)
        self.inject_buf = FrameBuffer(dw, depth_log2, user_width=32, backpressure=False)
        self.comb += [
            self.depacketizer.source.connect(self.inject_buf.sink),
            self.inject_buf.source.connect(core.inject, omit={"length"}),
        ]

        self.comb += [
            csrs["rx_frames"].status.eq(self.rx_buf.frames),
            csrs["rx_bad_fcs"].status.eq(self.rx_buf.dropped),
            csrs["rx_overflow"].status.eq(self.rx_buf.overflow),
            csrs["tx_frames"].status.eq(self.tx_buf.frames),
            csrs["tx_aborted"].status.eq(self.tx_buf.dropped),
            csrs["tx_overflow"].status.eq(self.tx_buf.overflow),
            csrs["host_frames"].status.eq(self.host_buf.frames),
            csrs["host_overflow"].status.eq(self.host_buf.overflow),
            csrs["inject_frames"].status.eq(self.inject_buf.frames),
            csrs["inject_bad"].status.eq(self.inject_buf.dropped + self.depacketizer.header_only),
            csrs["inject_overflow"].status.eq(self.inject_buf.overflow),
        ]
