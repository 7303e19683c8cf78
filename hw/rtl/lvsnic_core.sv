// lvsnic_core: vendor-free data plane of the lvsnic LVS/IPVS director
// (docs/hardware.md is the normative contract).
//
// Frames from the MAC (s_axis_rx) are classified on their first 54 bytes
// and either forwarded, rewritten, to the MAC (m_axis_tx: established
// offloaded flows, DR / NAT / IPIP) or passed unchanged to the host with a
// reason code and metadata (m_axis_host). Frames from the host
// (s_axis_inject) are transmitted unchanged. Tables and registers are
// reached through AXI4-Lite.
//
//   s_axis_rx -> skid -> lvsnic_ingress --beats--> lvsnic_egress (frame
//                            |                     buffer, reader, rewrite,
//                            +--header--> lvsnic_lookup --decision--^
//   lvsnic_egress --tx--> lvsnic_tx_arb <-- skid <-- s_axis_inject
//   lvsnic_tx_arb -> skid -> m_axis_tx;  lvsnic_egress --host--> skid -> m_axis_host
//   lvsnic_egress --events--> lvsnic_stats (action counters, last_hit)
//   s_axil <-> lvsnic_regs (registers, commands, global counters)
`default_nettype none

// Parameters (docs/hardware.md §2). Each is checked at elaboration below:
// an out-of-range value is a `$error` plus an instance of a nonexistent
// module named after the parameter (lvsnic_core_invalid_parameter_<NAME>),
// which stops both Verilator and Yosys.
module lvsnic_core #(
    // Width in bits of every AXI-Stream tdata (rx, tx, host, inject); the
    // frame buffer, egress realignment and beat counts scale with it.
    // Legal: 64, 128, 256 or 512 (checked: exactly one of these).
    parameter integer DATA_WIDTH        = 64,
    // Width of every AXI-Stream tkeep, one bit per tdata byte. Not a free
    // choice: it exists so the port declarations read like the AXI-Stream
    // convention. Legal: DATA_WIDTH/8 (checked: KEEP_WIDTH*8 == DATA_WIDTH).
    parameter integer KEEP_WIDTH        = DATA_WIDTH/8,
    // log2 of the buckets per way of the flow table (2 ways x 2^N buckets
    // x 4 slots of 160 bit, plus a 64-bit last_hit per slot; an IPv6 entry
    // takes an aligned pair of slots). The bucket
    // of a way is the low N bits of its Toeplitz hash; FLOW_INDEX and the
    // slot index are N+3 bits; the reset sweep takes 2^max(N, ACTION_LOG2)
    // cycles. Reported in CAPS0[23:16]. Legal: 4..16 (checked).
    parameter integer FLOW_BUCKETS_LOG2 = 10,
    // log2 of the number of action entries (256 bit each) and of the
    // per-action packet/byte counter pairs. A flow entry's 16-bit action
    // index uses its low ACTION_LOG2 bits; ACT_INDEX keeps ACTION_LOG2
    // bits. Reported in CAPS0[31:24]. Legal: 4..16 (checked).
    parameter integer ACTION_LOG2       = 10,
    // Number of VIP match entries (VIP[i] registers, VIP_VALID bits,
    // parallel compares in lookup S1); VIP[i] for i >= VIP_COUNT reads 0.
    // Reported in CAPS1[23:16]. Legal: 1..32 (checked here; lvsnic_regs
    // also checks it against the register map's 32-entry VIP array).
    parameter integer VIP_COUNT         = 16,
    // 1: IPv6 frames (EtherType 0x86DD) are parsed, hashed over the 36-byte
    // IPv6 input and matched against IPv6 entries (slot pairs), and DR/NAT
    // rewritten (docs/hardware.md §3, §4); 0: they go to the host as
    // NON_IPV4 and none of that logic is built (the Versa ECP5 board, whose
    // LUTs it would overfill). IPv6 entries are laid out the same either
    // way. Reported in CAPS1[24]. Legal: 0 or 1 (checked).
    parameter integer IPV6              = 1,
    // Width of the AXI4-Lite byte addresses. The register map occupies
    // 0x000..0x5FF, so 12 bits hold it; every address bit is decoded (no
    // aliasing), unmapped addresses read 0. Legal: 12..16 (checked).
    parameter integer AXIL_ADDR_WIDTH   = 16
) (
    input  wire                         clk,
    input  wire                         rst,

    // from the MAC
    input  wire [DATA_WIDTH-1:0]        s_axis_rx_tdata,
    input  wire [KEEP_WIDTH-1:0]        s_axis_rx_tkeep,
    input  wire                         s_axis_rx_tvalid,
    output wire                         s_axis_rx_tready,
    input  wire                         s_axis_rx_tlast,
    input  wire [95:0]                  s_axis_rx_tuser,

    // to the MAC
    output wire [DATA_WIDTH-1:0]        m_axis_tx_tdata,
    output wire [KEEP_WIDTH-1:0]        m_axis_tx_tkeep,
    output wire                         m_axis_tx_tvalid,
    input  wire                         m_axis_tx_tready,
    output wire                         m_axis_tx_tlast,
    output wire [32:0]                  m_axis_tx_tuser,

    // exceptions to the host
    output wire [DATA_WIDTH-1:0]        m_axis_host_tdata,
    output wire [KEEP_WIDTH-1:0]        m_axis_host_tkeep,
    output wire                         m_axis_host_tvalid,
    input  wire                         m_axis_host_tready,
    output wire                         m_axis_host_tlast,
    output wire [159:0]                 m_axis_host_tuser,

    // frames from the host
    input  wire [DATA_WIDTH-1:0]        s_axis_inject_tdata,
    input  wire [KEEP_WIDTH-1:0]        s_axis_inject_tkeep,
    input  wire                         s_axis_inject_tvalid,
    output wire                         s_axis_inject_tready,
    input  wire                         s_axis_inject_tlast,
    input  wire [31:0]                  s_axis_inject_tuser,

    // control
    input  wire [AXIL_ADDR_WIDTH-1:0]   s_axil_awaddr,
    input  wire [2:0]                   s_axil_awprot,
    input  wire                         s_axil_awvalid,
    output wire                         s_axil_awready,
    input  wire [31:0]                  s_axil_wdata,
    input  wire [3:0]                   s_axil_wstrb,
    input  wire                         s_axil_wvalid,
    output wire                         s_axil_wready,
    output wire [1:0]                   s_axil_bresp,
    output wire                         s_axil_bvalid,
    input  wire                         s_axil_bready,
    input  wire [AXIL_ADDR_WIDTH-1:0]   s_axil_araddr,
    input  wire [2:0]                   s_axil_arprot,
    input  wire                         s_axil_arvalid,
    output wire                         s_axil_arready,
    output wire [31:0]                  s_axil_rdata,
    output wire [1:0]                   s_axil_rresp,
    output wire                         s_axil_rvalid,
    input  wire                         s_axil_rready
);

    // ------------------------------------------------------------------
    // parameter checks (elaboration errors in Verilator and Yosys)
    // ------------------------------------------------------------------
    generate
        if (DATA_WIDTH != 64 && DATA_WIDTH != 128 && DATA_WIDTH != 256 && DATA_WIDTH != 512) begin : g_bad_dw
            $error("lvsnic_core: DATA_WIDTH must be 64, 128, 256 or 512");
            lvsnic_core_invalid_parameter_DATA_WIDTH u_bad ();
        end
        if (KEEP_WIDTH * 8 != DATA_WIDTH) begin : g_bad_kw
            $error("lvsnic_core: KEEP_WIDTH must be DATA_WIDTH/8");
            lvsnic_core_invalid_parameter_KEEP_WIDTH u_bad ();
        end
        if (FLOW_BUCKETS_LOG2 < 4 || FLOW_BUCKETS_LOG2 > 16) begin : g_bad_fb
            $error("lvsnic_core: FLOW_BUCKETS_LOG2 must be 4..16");
            lvsnic_core_invalid_parameter_FLOW_BUCKETS_LOG2 u_bad ();
        end
        if (ACTION_LOG2 < 4 || ACTION_LOG2 > 16) begin : g_bad_al
            $error("lvsnic_core: ACTION_LOG2 must be 4..16");
            lvsnic_core_invalid_parameter_ACTION_LOG2 u_bad ();
        end
        if (VIP_COUNT < 1 || VIP_COUNT > 32) begin : g_bad_vc
            $error("lvsnic_core: VIP_COUNT must be 1..32");
            lvsnic_core_invalid_parameter_VIP_COUNT u_bad ();
        end
        if (IPV6 != 0 && IPV6 != 1) begin : g_bad_ipv6
            $error("lvsnic_core: IPV6 must be 0 or 1");
            lvsnic_core_invalid_parameter_IPV6 u_bad ();
        end
        if (AXIL_ADDR_WIDTH < 12 || AXIL_ADDR_WIDTH > 16) begin : g_bad_aw
            $error("lvsnic_core: AXIL_ADDR_WIDTH must be 12..16");
            lvsnic_core_invalid_parameter_AXIL_ADDR_WIDTH u_bad ();
        end
    endgenerate

    localparam integer W         = KEEP_WIDTH;
    localparam integer LW        = $clog2(W);
    localparam integer B         = FLOW_BUCKETS_LOG2;
    localparam integer A         = ACTION_LOG2;
    localparam integer TOKW      = (B + 3 > A) ? B + 3 : A;
    localparam integer DEC_DEPTH = 32;
    localparam integer EV_DEPTH  = 8;

`define LVSNIC_DECISION_BODY
`include "lvsnic_decision.vh"
`undef LVSNIC_DECISION_BODY

    // ------------------------------------------------------------------
    // receive register slice and ingress
    // ------------------------------------------------------------------
    // The register slice carries the beat with the bytes outside tkeep
    // zeroed and the beat's byte count - 1 (tkeep is 2^n - 1: the count is
    // the index of its last set bit, encoded from the one-hot of that bit).
    localparam integer RXW = DATA_WIDTH + LW + 1 + 96;

    logic [DATA_WIDTH-1:0] in_kdata;
    logic [LW-1:0]         in_cnt_m1;
    wire  [KEEP_WIDTH-1:0] in_top = s_axis_rx_tkeep & ~(s_axis_rx_tkeep >> 1);
    always_comb begin
        for (int k = 0; k < W; k++) begin
            in_kdata[8*k +: 8] = s_axis_rx_tkeep[k] ? s_axis_rx_tdata[8*k +: 8] : 8'h00;
        end
        in_cnt_m1 = '0;
        for (int k = 0; k < W; k++) begin
            in_cnt_m1 = in_cnt_m1 | (in_top[k] ? LW'(k) : '0);
        end
    end

    wire                   rx_valid, rx_ready;
    wire [DATA_WIDTH-1:0]  rx_data;
    wire [LW-1:0]          rx_cnt_m1;
    wire                   rx_last;
    wire [95:0]            rx_user;

    lvsnic_axis_skid #(.WIDTH(RXW)) u_rx_skid (
        .clk(clk), .rst(rst),
        .s_valid(s_axis_rx_tvalid), .s_ready(s_axis_rx_tready),
        .s_data({in_kdata, in_cnt_m1, s_axis_rx_tlast, s_axis_rx_tuser}),
        .m_valid(rx_valid), .m_ready(rx_ready),
        .m_data({rx_data, rx_cnt_m1, rx_last, rx_user})
    );

    wire                   fb_valid, fb_ready, fb_last, fb_short;
    wire [DATA_WIDTH-1:0]  fb_data;
    wire [LW-1:0]          fb_cnt_m1;
    wire                   hdr_valid, hdr_ready;
    wire [591:0]           hdr_data;
    wire [6:0]             hdr_bytes;
    wire [63:0]            hdr_ts;
    wire [31:0]            hdr_seq;
    wire                   ev_rx;

    lvsnic_ingress #(.DATA_WIDTH(DATA_WIDTH), .KEEP_WIDTH(KEEP_WIDTH), .IPV6(IPV6)) u_ingress (
        .clk(clk), .rst(rst),
        .s_valid(rx_valid), .s_ready(rx_ready), .s_data(rx_data), .s_cnt_m1(rx_cnt_m1),
        .s_last(rx_last), .s_user(rx_user),
        .fb_valid(fb_valid), .fb_ready(fb_ready), .fb_data(fb_data), .fb_last(fb_last),
        .fb_cnt_m1(fb_cnt_m1), .fb_short(fb_short),
        .hdr_valid(hdr_valid), .hdr_ready(hdr_ready), .hdr_data(hdr_data),
        .hdr_bytes(hdr_bytes), .hdr_ts(hdr_ts), .hdr_seq(hdr_seq),
        .rx_frame(ev_rx)
    );

    // ------------------------------------------------------------------
    // registers
    // ------------------------------------------------------------------
    wire                    cfg_enable, cfg_pmtu;
    wire [47:0]             cfg_mac;
    wire [31:0]             cfg_ip;
    wire [127:0]            cfg_ip6;
    wire [15:0]             cfg_mtu;
    wire [VIP_COUNT-1:0]    cfg_vip_valid;
    wire [VIP_COUNT*32-1:0] cfg_vip;

    wire                    steal, flow_wr, flow_wr_pair, act_wr;
    wire [B+2:0]            flow_wr_idx;
    wire [319:0]            flow_wr_data;           // a slot pair (lvsnic_flow6_entry)
    wire [255:0]            act_wr_data;            // lvsnic_action_entry
    wire [A-1:0]            act_wr_idx;
    wire                    tok_req, tok_is_act, tok_ack;
    wire [TOKW-1:0]         tok_idx;
    wire                    flow_rd_valid, act_rd_valid;
    wire [319:0]            flow_rd_data;           // {slot ^ 1, slot}
    wire [255:0]            act_rd_data;
    wire                    st_req, st_ack;
    wire [1:0]              st_op;
    wire [TOKW-1:0]         st_idx;
    wire                    lh_rd_valid, cnt_rd_valid;
    wire [63:0]             lh_rd_data, cnt_rd_pkts, cnt_rd_bytes;
    wire                    lk_init, st_init;
    wire                    ev_fwd, ev_host, ev_inj;
    wire [4:0]              ev_host_reason;

    lvsnic_regs #(
        .DATA_WIDTH(DATA_WIDTH), .FLOW_BUCKETS_LOG2(B), .ACTION_LOG2(A),
        .VIP_COUNT(VIP_COUNT), .IPV6(IPV6), .AXIL_ADDR_WIDTH(AXIL_ADDR_WIDTH)
    ) u_regs (
        .clk(clk), .rst(rst),
        .s_axil_awaddr(s_axil_awaddr), .s_axil_awprot(s_axil_awprot),
        .s_axil_awvalid(s_axil_awvalid), .s_axil_awready(s_axil_awready),
        .s_axil_wdata(s_axil_wdata), .s_axil_wstrb(s_axil_wstrb),
        .s_axil_wvalid(s_axil_wvalid), .s_axil_wready(s_axil_wready),
        .s_axil_bresp(s_axil_bresp), .s_axil_bvalid(s_axil_bvalid), .s_axil_bready(s_axil_bready),
        .s_axil_araddr(s_axil_araddr), .s_axil_arprot(s_axil_arprot),
        .s_axil_arvalid(s_axil_arvalid), .s_axil_arready(s_axil_arready),
        .s_axil_rdata(s_axil_rdata), .s_axil_rresp(s_axil_rresp),
        .s_axil_rvalid(s_axil_rvalid), .s_axil_rready(s_axil_rready),
        .cfg_enable(cfg_enable), .cfg_pmtu(cfg_pmtu), .cfg_mac(cfg_mac), .cfg_ip(cfg_ip), .cfg_ip6(cfg_ip6),
        .cfg_mtu(cfg_mtu), .cfg_vip_valid(cfg_vip_valid), .cfg_vip(cfg_vip),
        .steal(steal), .flow_wr(flow_wr), .flow_wr_pair(flow_wr_pair), .flow_wr_idx(flow_wr_idx),
        .flow_wr_data(flow_wr_data),
        .act_wr(act_wr), .act_wr_idx(act_wr_idx), .act_wr_data(act_wr_data),
        .tok_req(tok_req), .tok_is_act(tok_is_act), .tok_idx(tok_idx), .tok_ack(tok_ack),
        .flow_rd_valid(flow_rd_valid), .flow_rd_data(flow_rd_data),
        .act_rd_valid(act_rd_valid), .act_rd_data(act_rd_data),
        .st_req(st_req), .st_op(st_op), .st_idx(st_idx), .st_ack(st_ack),
        .lh_rd_valid(lh_rd_valid), .lh_rd_data(lh_rd_data),
        .cnt_rd_valid(cnt_rd_valid), .cnt_rd_pkts(cnt_rd_pkts), .cnt_rd_bytes(cnt_rd_bytes),
        .init_busy(lk_init || st_init),
        .ev_rx(ev_rx), .ev_fwd(ev_fwd), .ev_host(ev_host), .ev_host_reason(ev_host_reason),
        .ev_inj(ev_inj)
    );

    // ------------------------------------------------------------------
    // lookup pipeline
    // ------------------------------------------------------------------
    wire                dec_valid, dec_pop;
    wire [DEC_W-1:0]    dec_data;        // the decision bundle (lvsnic_decision.vh)

    lvsnic_lookup #(
        .DATA_WIDTH(DATA_WIDTH), .FLOW_BUCKETS_LOG2(B), .ACTION_LOG2(A),
        .VIP_COUNT(VIP_COUNT), .IPV6(IPV6), .DEC_DEPTH(DEC_DEPTH)
    ) u_lookup (
        .clk(clk), .rst(rst),
        .cfg_enable(cfg_enable), .cfg_pmtu(cfg_pmtu), .cfg_mac(cfg_mac), .cfg_ip(cfg_ip), .cfg_ip6(cfg_ip6),
        .cfg_mtu(cfg_mtu), .cfg_vip_valid(cfg_vip_valid), .cfg_vip(cfg_vip),
        .hdr_valid(hdr_valid), .hdr_ready(hdr_ready), .hdr_data(hdr_data),
        .hdr_bytes(hdr_bytes), .hdr_ts(hdr_ts), .hdr_seq(hdr_seq),
        .steal(steal), .flow_wr(flow_wr), .flow_wr_pair(flow_wr_pair), .flow_wr_idx(flow_wr_idx),
        .flow_wr_data(flow_wr_data),
        .act_wr(act_wr), .act_wr_idx(act_wr_idx), .act_wr_data(act_wr_data),
        .tok_req(tok_req), .tok_is_act(tok_is_act), .tok_idx(tok_idx), .tok_ack(tok_ack),
        .flow_rd_valid(flow_rd_valid), .flow_rd_data(flow_rd_data),
        .act_rd_valid(act_rd_valid), .act_rd_data(act_rd_data),
        .init_busy(lk_init),
        .dec_valid(dec_valid), .dec_data(dec_data), .dec_pop(dec_pop)
    );

    // ------------------------------------------------------------------
    // egress: frame buffer, reader, rewrite, output queues
    // ------------------------------------------------------------------
    wire                   ftx_valid, ftx_ready, ftx_last;
    wire [DATA_WIDTH-1:0]  ftx_data;
    wire [KEEP_WIDTH-1:0]  ftx_keep;
    wire [32:0]            ftx_user;
    wire                   hq_valid, hq_ready, hq_last;
    wire [DATA_WIDTH-1:0]  hq_data;
    wire [KEEP_WIDTH-1:0]  hq_keep;
    wire [159:0]           hq_user;
    wire                   ev_valid, ev_pop;
    wire [A-1:0]           ev_act;
    wire [15:0]            ev_tl;
    wire [B+2:0]           ev_slot;
    wire [63:0]            ev_ts;

    lvsnic_egress #(
        .DATA_WIDTH(DATA_WIDTH), .KEEP_WIDTH(KEEP_WIDTH), .FLOW_BUCKETS_LOG2(B),
        .ACTION_LOG2(A), .IPV6(IPV6), .DEC_DEPTH(DEC_DEPTH), .EV_DEPTH(EV_DEPTH)
    ) u_egress (
        .clk(clk), .rst(rst),
        .fb_valid(fb_valid), .fb_ready(fb_ready), .fb_data(fb_data), .fb_last(fb_last),
        .fb_cnt_m1(fb_cnt_m1), .fb_short(fb_short),
        .dec_valid(dec_valid), .dec_data(dec_data), .dec_pop(dec_pop),
        .tx_valid(ftx_valid), .tx_ready(ftx_ready), .tx_data(ftx_data), .tx_keep(ftx_keep),
        .tx_last(ftx_last), .tx_user(ftx_user),
        .host_valid(hq_valid), .host_ready(hq_ready), .host_data(hq_data), .host_keep(hq_keep),
        .host_last(hq_last), .host_user(hq_user),
        .ev_valid(ev_valid), .ev_act(ev_act), .ev_tl(ev_tl), .ev_slot(ev_slot), .ev_ts(ev_ts),
        .ev_pop(ev_pop),
        .cnt_fwd(ev_fwd), .cnt_host(ev_host), .cnt_host_reason(ev_host_reason)
    );

    lvsnic_stats #(.FLOW_BUCKETS_LOG2(B), .ACTION_LOG2(A), .EV_DEPTH(EV_DEPTH)) u_stats (
        .clk(clk), .rst(rst),
        .ev_valid(ev_valid), .ev_act(ev_act), .ev_tl(ev_tl), .ev_slot(ev_slot), .ev_ts(ev_ts),
        .ev_pop(ev_pop),
        .host_req(st_req), .host_op(st_op), .host_idx(st_idx), .host_ack(st_ack),
        .lh_rd_valid(lh_rd_valid), .lh_rd_data(lh_rd_data),
        .cnt_rd_valid(cnt_rd_valid), .cnt_rd_pkts(cnt_rd_pkts), .cnt_rd_bytes(cnt_rd_bytes),
        .init_busy(st_init)
    );

    // ------------------------------------------------------------------
    // host output
    // ------------------------------------------------------------------
    localparam integer HOW = DATA_WIDTH + KEEP_WIDTH + 1 + 160;
    lvsnic_axis_skid #(.WIDTH(HOW)) u_host_skid (
        .clk(clk), .rst(rst),
        .s_valid(hq_valid), .s_ready(hq_ready), .s_data({hq_data, hq_keep, hq_last, hq_user}),
        .m_valid(m_axis_host_tvalid), .m_ready(m_axis_host_tready),
        .m_data({m_axis_host_tdata, m_axis_host_tkeep, m_axis_host_tlast, m_axis_host_tuser})
    );

    // ------------------------------------------------------------------
    // inject and tx arbitration
    // ------------------------------------------------------------------
    localparam integer IJW = DATA_WIDTH + KEEP_WIDTH + 1 + 32;
    wire                   ij_valid, ij_ready, ij_last;
    wire [DATA_WIDTH-1:0]  ij_data;
    wire [KEEP_WIDTH-1:0]  ij_keep;
    wire [31:0]            ij_user;

    lvsnic_axis_skid #(.WIDTH(IJW)) u_inj_skid (
        .clk(clk), .rst(rst),
        .s_valid(s_axis_inject_tvalid), .s_ready(s_axis_inject_tready),
        .s_data({s_axis_inject_tdata, s_axis_inject_tkeep, s_axis_inject_tlast, s_axis_inject_tuser}),
        .m_valid(ij_valid), .m_ready(ij_ready), .m_data({ij_data, ij_keep, ij_last, ij_user})
    );

    wire                   tx_valid, tx_ready, tx_last;
    wire [DATA_WIDTH-1:0]  tx_data;
    wire [KEEP_WIDTH-1:0]  tx_keep;
    wire [32:0]            tx_user;

    lvsnic_tx_arb #(.DATA_WIDTH(DATA_WIDTH), .KEEP_WIDTH(KEEP_WIDTH)) u_tx_arb (
        .clk(clk), .rst(rst),
        .fwd_valid(ftx_valid), .fwd_ready(ftx_ready), .fwd_data(ftx_data), .fwd_keep(ftx_keep),
        .fwd_last(ftx_last), .fwd_user(ftx_user),
        .inj_valid(ij_valid), .inj_ready(ij_ready), .inj_data(ij_data), .inj_keep(ij_keep),
        .inj_last(ij_last), .inj_user(ij_user),
        .m_valid(tx_valid), .m_ready(tx_ready), .m_data(tx_data), .m_keep(tx_keep),
        .m_last(tx_last), .m_user(tx_user),
        .inj_frame(ev_inj)
    );

    localparam integer TXW = DATA_WIDTH + KEEP_WIDTH + 1 + 33;
    lvsnic_axis_skid #(.WIDTH(TXW)) u_tx_skid (
        .clk(clk), .rst(rst),
        .s_valid(tx_valid), .s_ready(tx_ready), .s_data({tx_data, tx_keep, tx_last, tx_user}),
        .m_valid(m_axis_tx_tvalid), .m_ready(m_axis_tx_tready),
        .m_data({m_axis_tx_tdata, m_axis_tx_tkeep, m_axis_tx_tlast, m_axis_tx_tuser})
    );

endmodule

`default_nettype wire
