// lvsnic_regs: AXI4-Lite register block of lvsnic_core (docs/hardware.md §6).
//
// Identification and capability registers, CTRL/MAC/IP/MTU/VIP
// configuration, the flow and action staging registers with their command
// state machines (write: steal one pipeline cycle to write the entry, a
// 160-bit flow slot, both slots of an aligned pair for FLOW_CMD WRITE_PAIR,
// or a 256-bit action, then zero its last_hit (both for a pair) / counters;
// read: send a read token down the lookup pipeline, which returns the slot
// and its pair partner (320 bits) or the action, and read last_hit /
// counters, busy until both returned),
// and the 64-bit global and per-reason frame counters (reading a counter's
// LO half latches its HI half, per counter).
//
// AXI4-Lite: one outstanding write and one outstanding read; a write is
// taken when AW and W are both valid and performed the next cycle (B
// response then); the read data is returned two cycles after the address
// is taken (address register, register/counter multiplexers, final
// select). Responses are always OKAY; unmapped addresses read 0 and ignore
// writes. Byte strobes apply to the read/write registers; a command
// register acts on the strobed value (1 or 2, or 3 for FLOW_CMD). Read/write registers keep
// only their defined bits. A command latches the staging entry and index,
// so the host may rewrite the staging registers while it is busy.
//
// Addresses, identification values and reset values come from
// lvsnic_regs.vh, generated from hw/regmap/lvsnic.rdl (the single source of
// the register map, also of the Rust definitions and docs/registers.md).
// The read multiplexer groups registers by address (256-byte groups);
// elaboration fails if the generated map no longer fits that grouping or
// the staging / read-back arrays no longer match the entry layouts (the
// port widths below: flow 320 = LVSNIC_FLOW_DATA_LEN words, action 256 =
// LVSNIC_ACT_DATA_LEN words).
`default_nettype none

module lvsnic_regs #(
    parameter integer DATA_WIDTH        = 64,
    parameter integer FLOW_BUCKETS_LOG2 = 10,
    parameter integer ACTION_LOG2       = 10,
    parameter integer VIP_COUNT         = 16,
    parameter integer IPV6              = 1,
    parameter integer AXIL_ADDR_WIDTH   = 16
) (
    input  wire                         clk,
    input  wire                         rst,

    input  wire [AXIL_ADDR_WIDTH-1:0]   s_axil_awaddr,
    input  wire [2:0]                   s_axil_awprot,
    input  wire                         s_axil_awvalid,
    output logic                        s_axil_awready,
    input  wire [31:0]                  s_axil_wdata,
    input  wire [3:0]                   s_axil_wstrb,
    input  wire                         s_axil_wvalid,
    output logic                        s_axil_wready,
    output logic [1:0]                  s_axil_bresp,
    output logic                        s_axil_bvalid,
    input  wire                         s_axil_bready,
    input  wire [AXIL_ADDR_WIDTH-1:0]   s_axil_araddr,
    input  wire [2:0]                   s_axil_arprot,
    input  wire                         s_axil_arvalid,
    output logic                        s_axil_arready,
    output logic [31:0]                 s_axil_rdata,
    output logic [1:0]                  s_axil_rresp,
    output logic                        s_axil_rvalid,
    input  wire                         s_axil_rready,

    // configuration
    output logic                        cfg_enable,
    output logic                        cfg_pmtu,
    output logic [47:0]                 cfg_mac,
    output logic [31:0]                 cfg_ip,
    output logic [127:0]                cfg_ip6,      // IP6[0] in [127:96]; 0 when IPV6 = 0
    output logic [15:0]                 cfg_mtu,
    output logic [VIP_COUNT-1:0]        cfg_vip_valid,
    output logic [VIP_COUNT*32-1:0]     cfg_vip,

    // lookup pipeline access
    output logic                        steal,
    output logic                        flow_wr,
    output logic                        flow_wr_pair, // with flow_wr: WRITE_PAIR (index even)
    output logic [FLOW_BUCKETS_LOG2+2:0]                flow_wr_idx,
    output logic [319:0]                flow_wr_data,  // pair: even slot 159:0, odd 319:160
    output logic                        act_wr,
    output logic [ACTION_LOG2-1:0]                act_wr_idx,
    output logic [255:0]                act_wr_data,
    output logic                        tok_req,
    output logic                        tok_is_act,
    output logic [((FLOW_BUCKETS_LOG2 + 3 > ACTION_LOG2) ? FLOW_BUCKETS_LOG2 + 3 : ACTION_LOG2)-1:0]             tok_idx,
    input  wire                         tok_ack,
    input  wire                         flow_rd_valid,
    input  wire [319:0]                 flow_rd_data,  // slot 159:0, slot ^ 1 319:160
    input  wire                         act_rd_valid,
    input  wire [255:0]                 act_rd_data,

    // statistics access
    output logic                        st_req,
    output logic [1:0]                  st_op,
    output logic [((FLOW_BUCKETS_LOG2 + 3 > ACTION_LOG2) ? FLOW_BUCKETS_LOG2 + 3 : ACTION_LOG2)-1:0]             st_idx,
    input  wire                         st_ack,
    input  wire                         lh_rd_valid,
    input  wire [63:0]                  lh_rd_data,
    input  wire                         cnt_rd_valid,
    input  wire [63:0]                  cnt_rd_pkts,
    input  wire [63:0]                  cnt_rd_bytes,

    input  wire                         init_busy,

    // counter events
    input  wire                         ev_rx,
    input  wire                         ev_fwd,
    input  wire                         ev_host,
    input  wire [4:0]                   ev_host_reason,
    input  wire                         ev_inj
);

    `include "lvsnic_regs.vh"

    localparam integer B    = FLOW_BUCKETS_LOG2;
    localparam integer A    = ACTION_LOG2;
    localparam integer TOKW = (B + 3 > A) ? B + 3 : A;
    localparam integer AW   = AXIL_ADDR_WIDTH;

    // staging and read-back widths (words of the generated arrays)
    localparam integer FDW  = LVSNIC_FLOW_DATA_LEN * 32;     // flow staging: a slot pair
    localparam integer FRW  = LVSNIC_FLOW_RDATA_LEN * 32;    // flow read-back: slot, slot ^ 1
    localparam integer SW   = LVSNIC_FLOW_ENTRY_WORDS * 32;  // one slot
    localparam integer ADW  = LVSNIC_ACT_DATA_LEN * 32;
    localparam integer ARW  = LVSNIC_ACT_RDATA_LEN * 32;

    // word select within a 256-byte register group
    function automatic logic [5:0] wsel(input logic [15:0] addr);
        wsel = addr[7:2];
    endfunction
    // byte address of word i of an array
    function automatic logic [15:0] elem(input logic [15:0] base, input integer stride, input integer i);
        elem = base + 16'(stride * i);
    endfunction

    // The decoder's assumptions about the generated map: misc registers in
    // 0x000..0x0FF, VIPs from 0x100 (32 words), flow registers in
    // 0x200..0x2FF, action registers in 0x300..0x3FF, counters from 0x400
    // as LO, HI pairs; the flow staging / read-back arrays hold a slot pair
    // (lvsnic_flow6_entry, two lvsnic_flow_entry slots), the action ones an
    // lvsnic_action_entry, at the port widths.
    localparam logic MAP_OK =
           LVSNIC_VIP_BASE == 16'h0100 && LVSNIC_VIP_STRIDE == 4 && LVSNIC_VIP_LEN == 32
        && LVSNIC_VIP_VALID[15:8] == 8'h0 && LVSNIC_MTU[15:8] == 8'h0
        && LVSNIC_IP6_LEN == 4 && LVSNIC_IP6_STRIDE == 4 && elem(LVSNIC_IP6_BASE, 4, 3) >> 8 == 16'h0
        && LVSNIC_FLOW_DATA_BASE[15:8] == 8'h02 && LVSNIC_FLOW_DATA_STRIDE == 4
        && elem(LVSNIC_FLOW_DATA_BASE, 4, LVSNIC_FLOW_DATA_LEN - 1) >> 8 == 16'h02
        && LVSNIC_FLOW_RDATA_BASE[15:8] == 8'h02 && LVSNIC_FLOW_RDATA_STRIDE == 4
        && elem(LVSNIC_FLOW_RDATA_BASE, 4, LVSNIC_FLOW_RDATA_LEN - 1) >> 8 == 16'h02
        && LVSNIC_FLOW_INDEX[15:8] == 8'h02 && LVSNIC_FLOW_CMD[15:8] == 8'h02
        && LVSNIC_FLOW_STATUS[15:8] == 8'h02
        && LVSNIC_FLOW_HIT_LO[15:8] == 8'h02 && LVSNIC_FLOW_HIT_HI[15:8] == 8'h02
        && LVSNIC_ACT_DATA_BASE[15:8] == 8'h03 && LVSNIC_ACT_DATA_STRIDE == 4
        && elem(LVSNIC_ACT_DATA_BASE, 4, LVSNIC_ACT_DATA_LEN - 1) >> 8 == 16'h03
        && LVSNIC_ACT_RDATA_BASE[15:8] == 8'h03 && LVSNIC_ACT_RDATA_STRIDE == 4
        && elem(LVSNIC_ACT_RDATA_BASE, 4, LVSNIC_ACT_RDATA_LEN - 1) >> 8 == 16'h03
        && LVSNIC_ACT_INDEX[15:8] == 8'h03 && LVSNIC_ACT_CMD[15:8] == 8'h03
        && LVSNIC_ACT_STATUS[15:8] == 8'h03
        && LVSNIC_ACT_PKTS_LO[15:8] == 8'h03 && LVSNIC_ACT_PKTS_HI[15:8] == 8'h03
        && LVSNIC_ACT_BYTES_LO[15:8] == 8'h03 && LVSNIC_ACT_BYTES_HI[15:8] == 8'h03
        && LVSNIC_CNT_BASE == 16'h0400 && LVSNIC_CNT_STRIDE == 8 && LVSNIC_CNT_LEN == 64
        && LVSNIC_CNT_LO_OFFSET == 16'h0 && LVSNIC_CNT_HI_OFFSET == 16'h4;
    localparam logic WIDTH_OK =
           FDW == 2 * SW && FRW == 2 * SW && LVSNIC_FLOW6_ENTRY_WORDS * 32 == 2 * SW
        && FDW == 320 && ADW == LVSNIC_ACTION_ENTRY_WORDS * 32 && ARW == ADW && ADW == 256;
    generate
        if (!MAP_OK) begin : g_map_check
            $error("lvsnic_regs: hw/rtl/lvsnic_regs.vh no longer fits the read decoder's address groups");
            lvsnic_regs_map_mismatch u_fail ();
        end
        if (!WIDTH_OK) begin : g_width_check
            $error("lvsnic_regs: the staging / read-back arrays of hw/rtl/lvsnic_regs.vh no longer fit the table ports");
            lvsnic_regs_width_mismatch u_fail ();
        end
        if (VIP_COUNT > LVSNIC_VIP_LEN) begin : g_vip_check
            $error("lvsnic_regs: VIP_COUNT exceeds the register map's VIP array");
            lvsnic_regs_vip_count_too_large u_fail ();
        end
    endgenerate

    // ------------------------------------------------------------------
    // registers
    // ------------------------------------------------------------------
    logic [31:0]  mac_lo;
    logic [15:0]  mac_hi;
    logic [FDW-1:0] flow_data;
    logic [ADW-1:0] act_data;
    logic [B+2:0] flow_index;
    logic [A-1:0] act_index;
    logic [FRW-1:0] flow_rdata;
    logic [ARW-1:0] act_rdata;
    logic [63:0]  flow_hit, act_pkts, act_bytes;

    assign cfg_mac = {mac_hi, mac_lo};

    // counters: n = 0..3 global, CNT_REASON + r per reason r (1 to LVSNIC_REASON_COUNT - 1)
    localparam integer NCNT = 64;
    localparam integer CNT_REASON = 32;
    function automatic logic cnt_impl(input integer n);
        cnt_impl = (n < 4) || (n > CNT_REASON && n < CNT_REASON + LVSNIC_REASON_COUNT);
    endfunction

    wire [NCNT*64-1:0] cnt;
    wire [NCNT*32-1:0] cnt_hi;     // HI halves latched by LO reads

    function automatic logic [31:0] merge(input logic [31:0] old, input logic [31:0] d, input logic [31:0] m);
        merge = (old & ~m) | (d & m);
    endfunction

    // a: word address (byte address bits AW-1:2); r: register byte address
    function automatic logic hit_addr(input logic [AW-3:0] a, input integer r);
        hit_addr = ({{(32-AW){1'b0}}, a, 2'b00} == r[31:0]);
    endfunction

    // ------------------------------------------------------------------
    // AXI-Lite write: take AW+W, perform the next cycle
    // ------------------------------------------------------------------
    logic          wr_pend;
    logic [AW-3:0] wa;                          // word address
    logic [31:0]   wd, wm;
    logic          w_fcmd, w_acmd, w_cmd1, w_cmd2, w_cmd3;   // pre-decoded command writes
    wire           wr_take = s_axil_awvalid && s_axil_wvalid && !wr_pend && !s_axil_bvalid;
    wire           wr_en   = wr_pend;
    assign s_axil_awready = wr_take;
    assign s_axil_wready  = wr_take;
    assign s_axil_bresp   = 2'b00;

    wire [31:0] in_wm = {{8{s_axil_wstrb[3]}}, {8{s_axil_wstrb[2]}}, {8{s_axil_wstrb[1]}}, {8{s_axil_wstrb[0]}}};

    always_ff @(posedge clk) begin
        if (rst) wr_pend <= 1'b0;
        else     wr_pend <= wr_take;
        if (wr_take) begin
            wa <= s_axil_awaddr[AW-1:2];
            wd <= s_axil_wdata;
            wm <= {{8{s_axil_wstrb[3]}}, {8{s_axil_wstrb[2]}}, {8{s_axil_wstrb[1]}}, {8{s_axil_wstrb[0]}}};
            w_fcmd <= hit_addr(s_axil_awaddr[AW-1:2], 32'(LVSNIC_FLOW_CMD));
            w_acmd <= hit_addr(s_axil_awaddr[AW-1:2], 32'(LVSNIC_ACT_CMD));
            w_cmd1 <= (s_axil_wdata & in_wm) == 32'(LVSNIC_TABLE_CMD_WRITE);
            w_cmd2 <= (s_axil_wdata & in_wm) == 32'(LVSNIC_TABLE_CMD_READ);
            w_cmd3 <= (s_axil_wdata & in_wm) == 32'(LVSNIC_TABLE_CMD_WRITE_PAIR);
        end
    end

    // command state machines
    localparam logic [2:0] S_IDLE = 3'd0, S_STEAL = 3'd1, S_ZERO = 3'd2,
                           S_TOK  = 3'd3, S_SRD   = 3'd4, S_WAIT = 3'd5;
    logic [2:0] f_st, a_st;
    logic       f_got_e, f_got_s, a_got_e, a_got_s;

    wire        f_cmd_ok = wr_en && w_fcmd && (f_st == S_IDLE) && !init_busy;
    wire        a_cmd_ok = wr_en && w_acmd && (a_st == S_IDLE) && !init_busy;
    wire        f_cmd_wr = f_cmd_ok && w_cmd1;
    wire        f_cmd_rd = f_cmd_ok && w_cmd2;
    wire        f_cmd_wp = f_cmd_ok && w_cmd3;      // WRITE_PAIR (flow only)
    wire        a_cmd_wr = a_cmd_ok && w_cmd1;
    wire        a_cmd_rd = a_cmd_ok && w_cmd2;

    always_ff @(posedge clk) begin
        if (rst) begin
            s_axil_bvalid <= 1'b0;
            cfg_enable    <= 1'b0;
            cfg_pmtu      <= 1'b1;
            mac_lo        <= 32'h0;
            mac_hi        <= 16'h0;
            cfg_ip        <= 32'h0;
            cfg_ip6       <= '0;
            cfg_mtu       <= 16'd1500;
            cfg_vip_valid <= '0;
            cfg_vip       <= '0;
            flow_data     <= '0;
            flow_index    <= '0;
            act_data      <= '0;
            act_index     <= '0;
        end else begin
            if (s_axil_bvalid && s_axil_bready) s_axil_bvalid <= 1'b0;
            if (wr_en) begin
                s_axil_bvalid <= 1'b1;
                if (hit_addr(wa, 32'(LVSNIC_CTRL))) {cfg_pmtu, cfg_enable} <= 2'(merge({30'h0, cfg_pmtu, cfg_enable}, wd, wm));
                if (hit_addr(wa, 32'(LVSNIC_MAC_LO))) mac_lo  <= merge(mac_lo, wd, wm);
                if (hit_addr(wa, 32'(LVSNIC_MAC_HI))) mac_hi  <= 16'(merge({16'h0, mac_hi}, wd, wm));
                if (hit_addr(wa, 32'(LVSNIC_IP))) cfg_ip  <= merge(cfg_ip, wd, wm);
                for (int i = 0; i < LVSNIC_IP6_LEN; i++) begin
                    if (IPV6 != 0 && hit_addr(wa, 32'(LVSNIC_IP6_BASE) + LVSNIC_IP6_STRIDE*i))
                        cfg_ip6[127 - 32*i -: 32] <= merge(cfg_ip6[127 - 32*i -: 32], wd, wm);
                end
                if (hit_addr(wa, 32'(LVSNIC_MTU))) cfg_mtu <= 16'(merge({16'h0, cfg_mtu}, wd, wm));
                if (hit_addr(wa, 32'(LVSNIC_VIP_VALID))) cfg_vip_valid <= VIP_COUNT'(merge(32'(cfg_vip_valid), wd, wm));
                for (int i = 0; i < VIP_COUNT; i++) begin
                    if (hit_addr(wa, 32'(LVSNIC_VIP_BASE) + LVSNIC_VIP_STRIDE*i)) cfg_vip[32*i +: 32] <= merge(cfg_vip[32*i +: 32], wd, wm);
                end
                for (int i = 0; i < LVSNIC_FLOW_DATA_LEN; i++) begin
                    if (hit_addr(wa, 32'(LVSNIC_FLOW_DATA_BASE) + LVSNIC_FLOW_DATA_STRIDE*i)) flow_data[32*i +: 32] <= merge(flow_data[32*i +: 32], wd, wm);
                end
                for (int i = 0; i < LVSNIC_ACT_DATA_LEN; i++) begin
                    if (hit_addr(wa, 32'(LVSNIC_ACT_DATA_BASE) + LVSNIC_ACT_DATA_STRIDE*i)) act_data[32*i +: 32]  <= merge(act_data[32*i +: 32], wd, wm);
                end
                if (hit_addr(wa, 32'(LVSNIC_FLOW_INDEX))) flow_index <= (B+3)'(merge(32'(flow_index), wd, wm));
                if (hit_addr(wa, 32'(LVSNIC_ACT_INDEX))) act_index  <= A'(merge(32'(act_index), wd, wm));
            end
        end
    end

    // ------------------------------------------------------------------
    // flow command
    // ------------------------------------------------------------------
    logic f_steal, a_steal;
    wire  f_tok_req = (f_st == S_TOK);
    wire  a_tok_req = (a_st == S_TOK);
    wire  f_st_req  = (f_st == S_ZERO) || (f_st == S_SRD);
    wire  a_st_req  = (a_st == S_ZERO) || (a_st == S_SRD);

    // command operands, latched when the command is taken (WRITE_PAIR: the
    // even slot of the index's pair)
    logic [B+2:0]   f_idx;
    logic [FDW-1:0] f_data;
    logic           f_pair;     // WRITE_PAIR
    logic           f_z2;       // WRITE_PAIR: zeroing the odd slot's last_hit
    logic [A-1:0]   a_idx;
    logic [ADW-1:0] a_data;
    always_ff @(posedge clk) begin
        if (f_cmd_ok) begin
            f_idx  <= {flow_index[B+2:1], flow_index[0] && !w_cmd3};
            f_data <= flow_data;
            f_pair <= w_cmd3;
        end
        if (a_cmd_ok) begin
            a_idx  <= act_index;
            a_data <= act_data;
        end
    end

    assign tok_req    = f_tok_req || a_tok_req;
    assign tok_is_act = !f_tok_req;
    assign tok_idx    = f_tok_req ? TOKW'(f_idx) : TOKW'(a_idx);
    wire   f_tok_ack  = tok_ack && f_tok_req;
    wire   a_tok_ack  = tok_ack && !f_tok_req;

    assign st_req   = f_st_req || a_st_req;
    assign st_op    = f_st_req ? ((f_st == S_ZERO) ? 2'd0 : 2'd1) : ((a_st == S_ZERO) ? 2'd2 : 2'd3);
    assign st_idx   = f_st_req ? TOKW'({f_idx[B+2:1], f_idx[0] | f_z2}) : TOKW'(a_idx);
    wire   f_st_ack = st_ack && f_st_req;
    wire   a_st_ack = st_ack && !f_st_req;

    assign steal        = f_steal || a_steal;
    assign flow_wr      = f_steal;
    assign flow_wr_pair = f_pair;
    assign flow_wr_idx  = f_idx;
    assign flow_wr_data = f_data;
    assign act_wr       = a_steal;
    assign act_wr_idx   = a_idx;
    assign act_wr_data  = a_data;

    always_ff @(posedge clk) begin
        if (rst) begin
            f_st    <= S_IDLE;
            f_steal <= 1'b0;
            f_got_e <= 1'b0;
            f_got_s <= 1'b0;
            f_z2    <= 1'b0;
        end else begin
            f_steal <= 1'b0;
            if (flow_rd_valid) f_got_e <= 1'b1;
            if (lh_rd_valid)   f_got_s <= 1'b1;
            case (f_st)
                S_IDLE: begin
                    if (f_cmd_wr || f_cmd_wp) begin
                        f_st    <= S_STEAL;
                        f_steal <= 1'b1;
                        f_z2    <= 1'b0;
                    end else if (f_cmd_rd) begin
                        f_st    <= S_TOK;
                        f_got_e <= 1'b0;
                        f_got_s <= 1'b0;
                    end
                end
                S_STEAL: f_st <= S_ZERO;                 // entry (pair) written this cycle
                S_ZERO:  if (f_st_ack) begin             // last_hit zeroed (a pair: both)
                    if (f_pair && !f_z2) f_z2 <= 1'b1;
                    else begin
                        f_st <= S_IDLE;
                        f_z2 <= 1'b0;
                    end
                end
                S_TOK:   if (f_tok_ack) f_st <= S_SRD;
                S_SRD:   if (f_st_ack)  f_st <= S_WAIT;
                S_WAIT:  if ((f_got_e || flow_rd_valid) && (f_got_s || lh_rd_valid)) f_st <= S_IDLE;
                default: f_st <= S_IDLE;
            endcase
        end
        if (flow_rd_valid) flow_rdata <= flow_rd_data;
        if (lh_rd_valid)   flow_hit   <= lh_rd_data;
    end

    // ------------------------------------------------------------------
    // action command
    // ------------------------------------------------------------------
    always_ff @(posedge clk) begin
        if (rst) begin
            a_st    <= S_IDLE;
            a_steal <= 1'b0;
            a_got_e <= 1'b0;
            a_got_s <= 1'b0;
        end else begin
            a_steal <= 1'b0;
            if (act_rd_valid) a_got_e <= 1'b1;
            if (cnt_rd_valid) a_got_s <= 1'b1;
            case (a_st)
                S_IDLE: begin
                    if (a_cmd_wr) begin
                        a_st    <= S_STEAL;
                        a_steal <= 1'b1;
                    end else if (a_cmd_rd) begin
                        a_st    <= S_TOK;
                        a_got_e <= 1'b0;
                        a_got_s <= 1'b0;
                    end
                end
                S_STEAL: a_st <= S_ZERO;                 // action written this cycle
                S_ZERO:  if (a_st_ack)  a_st <= S_IDLE;  // counters zeroed
                S_TOK:   if (a_tok_ack) a_st <= S_SRD;
                S_SRD:   if (a_st_ack)  a_st <= S_WAIT;
                S_WAIT:  if ((a_got_e || act_rd_valid) && (a_got_s || cnt_rd_valid)) a_st <= S_IDLE;
                default: a_st <= S_IDLE;
            endcase
        end
        if (act_rd_valid) act_rdata <= act_rd_data;
        if (cnt_rd_valid) begin
            act_pkts  <= cnt_rd_pkts;
            act_bytes <= cnt_rd_bytes;
        end
    end

    logic f_busy, a_busy;      // registered for the read multiplexer
    always_ff @(posedge clk) begin
        f_busy <= (f_st != S_IDLE) || init_busy;
        a_busy <= (a_st != S_IDLE) || init_busy;
    end

    // ------------------------------------------------------------------
    // counters
    // ------------------------------------------------------------------

    // ------------------------------------------------------------------
    // AXI-Lite read: address register -> (register mux, counter mux)
    // registers -> select -> rdata
    // ------------------------------------------------------------------
    logic          rd_pend, rd_pend2;
    logic [AW-3:0] ra;                          // word address
    assign s_axil_arready = s_axil_arvalid && !rd_pend && !rd_pend2 && !s_axil_rvalid;
    assign s_axil_rresp   = 2'b00;

    wire       ra_hi0 = (ra[AW-3:9] == '0);
    wire       ra_reg = ra_hi0 && !ra[8];              // 0x000..0x3FF
    wire       ra_cnt = ra_hi0 && ra[8] && !ra[7];     // 0x400..0x5FF
    wire [5:0] ra_n   = ra[6:1];
    wire       ra_lo  = !ra[0];

    // group multiplexers by word address bits 7:6 (misc, VIP, flow, action)
    logic [31:0] g_misc, g_vip, g_flow, g_act;
    logic [31:0] g_misc_q, g_vip_q, g_flow_q, g_act_q, rm_cnt_q;
    logic [1:0]  rm_grp;
    logic        rm_is_reg, rm_is_cnt;
    always_comb begin
        case (ra[5:0])
            wsel(LVSNIC_ID):        g_misc = LVSNIC_ID_RESET;
            wsel(LVSNIC_VERSION):   g_misc = LVSNIC_VERSION_RESET;
            wsel(LVSNIC_CAPS0):     g_misc = {8'(ACTION_LOG2), 8'(FLOW_BUCKETS_LOG2), 16'(DATA_WIDTH)};
            wsel(LVSNIC_CAPS1):     g_misc = {6'h0, 1'(IPV6 != 0), 1'(IPV6 != 0), 8'(VIP_COUNT), 8'd2, 8'd4};   // tun6, ipv6
            wsel(LVSNIC_CTRL):      g_misc = {30'h0, cfg_pmtu, cfg_enable};
            wsel(LVSNIC_MAC_LO):    g_misc = mac_lo;
            wsel(LVSNIC_MAC_HI):    g_misc = {16'h0, mac_hi};
            wsel(LVSNIC_IP):        g_misc = cfg_ip;
            wsel(elem(LVSNIC_IP6_BASE, LVSNIC_IP6_STRIDE, 0)): g_misc = cfg_ip6[127:96];
            wsel(elem(LVSNIC_IP6_BASE, LVSNIC_IP6_STRIDE, 1)): g_misc = cfg_ip6[95:64];
            wsel(elem(LVSNIC_IP6_BASE, LVSNIC_IP6_STRIDE, 2)): g_misc = cfg_ip6[63:32];
            wsel(elem(LVSNIC_IP6_BASE, LVSNIC_IP6_STRIDE, 3)): g_misc = cfg_ip6[31:0];
            wsel(LVSNIC_MTU):       g_misc = {16'h0, cfg_mtu};
            wsel(LVSNIC_VIP_VALID): g_misc = 32'(cfg_vip_valid);
            default: g_misc = 32'h0;
        endcase
        g_vip = (32'(ra[4:0]) < VIP_COUNT) ? cfg_vip[32*ra[4:0] +: 32] : 32'h0;
        // flow group: the read-back array word by word (the addresses are
        // distinct, at most one term selects); the staging words are
        // write-only (they read 0: 18 words fewer on this multiplexer)
        g_flow = 32'h0;
        for (int i = 0; i < LVSNIC_FLOW_RDATA_LEN; i++)
            if (ra[5:0] == wsel(elem(LVSNIC_FLOW_RDATA_BASE, LVSNIC_FLOW_RDATA_STRIDE, i))) g_flow = flow_rdata[32*i +: 32];
        if (ra[5:0] == wsel(LVSNIC_FLOW_INDEX))  g_flow = 32'(flow_index);
        if (ra[5:0] == wsel(LVSNIC_FLOW_STATUS)) g_flow = {31'h0, f_busy};
        if (ra[5:0] == wsel(LVSNIC_FLOW_HIT_LO)) g_flow = flow_hit[31:0];
        if (ra[5:0] == wsel(LVSNIC_FLOW_HIT_HI)) g_flow = flow_hit[63:32];
        g_act = 32'h0;
        for (int i = 0; i < LVSNIC_ACT_RDATA_LEN; i++)
            if (ra[5:0] == wsel(elem(LVSNIC_ACT_RDATA_BASE, LVSNIC_ACT_RDATA_STRIDE, i))) g_act = act_rdata[32*i +: 32];
        if (ra[5:0] == wsel(LVSNIC_ACT_INDEX))    g_act = 32'(act_index);
        if (ra[5:0] == wsel(LVSNIC_ACT_STATUS))   g_act = {31'h0, a_busy};
        if (ra[5:0] == wsel(LVSNIC_ACT_PKTS_LO))  g_act = act_pkts[31:0];
        if (ra[5:0] == wsel(LVSNIC_ACT_PKTS_HI))  g_act = act_pkts[63:32];
        if (ra[5:0] == wsel(LVSNIC_ACT_BYTES_LO)) g_act = act_bytes[31:0];
        if (ra[5:0] == wsel(LVSNIC_ACT_BYTES_HI)) g_act = act_bytes[63:32];
    end
    // every group is decoded on all 64 words of its 256 bytes, except the
    // VIPs (0x100..0x17F, 32 words: the upper half reads 0)
    wire ra_grp_ok = (ra[7:6] != 2'd1) || !ra[5];

    always_ff @(posedge clk) begin
        if (rst) begin
            rd_pend       <= 1'b0;
            rd_pend2      <= 1'b0;
            s_axil_rvalid <= 1'b0;
        end else begin
            if (s_axil_rvalid && s_axil_rready) s_axil_rvalid <= 1'b0;
            rd_pend  <= s_axil_arvalid && s_axil_arready;
            rd_pend2 <= rd_pend;
            if (rd_pend2) s_axil_rvalid <= 1'b1;
        end
        if (s_axil_arvalid && s_axil_arready) ra <= s_axil_araddr[AW-1:2];
        if (rd_pend) begin
            g_misc_q  <= g_misc;
            g_vip_q   <= g_vip;
            g_flow_q  <= g_flow;
            g_act_q   <= g_act;
            rm_grp    <= ra[7:6];
            rm_is_reg <= ra_reg && ra_grp_ok;
            rm_cnt_q  <= ra_lo ? cnt[64*ra_n +: 32] : cnt_hi[32*ra_n +: 32];
            rm_is_cnt <= ra_cnt;
        end
        if (rd_pend2) begin
            s_axil_rdata <= rm_is_cnt ? rm_cnt_q
                          : !rm_is_reg ? 32'h0
                          : (rm_grp == 2'd0) ? g_misc_q
                          : (rm_grp == 2'd1) ? g_vip_q
                          : (rm_grp == 2'd2) ? g_flow_q
                          :                    g_act_q;
        end
    end

    // counters and HI latches (a LO read and an increment in the same cycle
    // both see the value before the increment)
    genvar gc;
    generate
        for (gc = 0; gc < NCNT; gc = gc + 1) begin : g_cnt
            if (cnt_impl(gc)) begin : g_impl
                logic [63:0] c;
                logic [31:0] h;
                wire inc = (gc == 0) ? ev_rx
                         : (gc == 1) ? ev_fwd
                         : (gc == 2) ? ev_host
                         : (gc == 3) ? ev_inj
                         : (ev_host && ev_host_reason == 5'(gc - CNT_REASON));
                always_ff @(posedge clk) begin
                    if (rst) begin
                        c <= 64'h0;
                        h <= 32'h0;
                    end else begin
                        if (inc) c <= c + 64'd1;
                        if (rd_pend && ra_cnt && ra_lo && ra_n == 6'(gc)) h <= c[63:32];
                    end
                end
                assign cnt[64*gc +: 64]    = c;
                assign cnt_hi[32*gc +: 32] = h;
            end else begin : g_zero
                assign cnt[64*gc +: 64]    = 64'h0;
                assign cnt_hi[32*gc +: 32] = 32'h0;
            end
        end
    endgenerate

endmodule

`default_nettype wire
