// Stand-in for the real lvsnic_core, used ONLY to test the lvsnic-sim
// harness until hw/rtl/ exists. It has exactly the contract's ports and
// parameters (docs/hardware.md §2) but none of its behaviour:
//   * every rx frame goes to m_axis_host unchanged with reason MISS (14),
//     hash 0, and the rx sequence number and timestamp (§5 layout);
//   * every inject frame goes to m_axis_tx unchanged, tuser = {abort 0, seq};
//   * AXI-Lite: ID, VERSION, CAPS0/1, CTRL, MAC, IP, MTU, VIP_VALID, VIP[i],
//     CNT[0]/[2]/[3] (with the LO-latches-HI rule); other addresses read 0;
//   * FIFOs on both paths so that output backpressure reaches the inputs;
//   * writing 0xDEAD0057 to 0xFFC runs $stop (tests the harness's error path).
`default_nettype none

module lvsnic_core #(
    parameter int DATA_WIDTH = 64,
    parameter int KEEP_WIDTH = DATA_WIDTH/8,
    parameter int FLOW_BUCKETS_LOG2 = 10,
    parameter int ACTION_LOG2 = 10,
    parameter int VIP_COUNT = 16,
    parameter int AXIL_ADDR_WIDTH = 16
) (
    input  wire logic                       clk,
    input  wire logic                       rst,

    // from the MAC
    input  wire logic [DATA_WIDTH-1:0]      s_axis_rx_tdata,
    input  wire logic [KEEP_WIDTH-1:0]      s_axis_rx_tkeep,
    input  wire logic                       s_axis_rx_tvalid,
    output      logic                       s_axis_rx_tready,
    input  wire logic                       s_axis_rx_tlast,
    input  wire logic [95:0]                s_axis_rx_tuser,

    // to the MAC
    output      logic [DATA_WIDTH-1:0]      m_axis_tx_tdata,
    output      logic [KEEP_WIDTH-1:0]      m_axis_tx_tkeep,
    output      logic                       m_axis_tx_tvalid,
    input  wire logic                       m_axis_tx_tready,
    output      logic                       m_axis_tx_tlast,
    output      logic [32:0]                m_axis_tx_tuser,

    // to the host (exceptions)
    output      logic [DATA_WIDTH-1:0]      m_axis_host_tdata,
    output      logic [KEEP_WIDTH-1:0]      m_axis_host_tkeep,
    output      logic                       m_axis_host_tvalid,
    input  wire logic                       m_axis_host_tready,
    output      logic                       m_axis_host_tlast,
    output      logic [159:0]               m_axis_host_tuser,

    // from the host (injected frames)
    input  wire logic [DATA_WIDTH-1:0]      s_axis_inject_tdata,
    input  wire logic [KEEP_WIDTH-1:0]      s_axis_inject_tkeep,
    input  wire logic                       s_axis_inject_tvalid,
    output      logic                       s_axis_inject_tready,
    input  wire logic                       s_axis_inject_tlast,
    input  wire logic [31:0]                s_axis_inject_tuser,

    // AXI4-Lite control
    input  wire logic [AXIL_ADDR_WIDTH-1:0] s_axil_awaddr,
    input  wire logic [2:0]                 s_axil_awprot,
    input  wire logic                       s_axil_awvalid,
    output      logic                       s_axil_awready,
    input  wire logic [31:0]                s_axil_wdata,
    input  wire logic [3:0]                 s_axil_wstrb,
    input  wire logic                       s_axil_wvalid,
    output      logic                       s_axil_wready,
    output      logic [1:0]                 s_axil_bresp,
    output      logic                       s_axil_bvalid,
    input  wire logic                       s_axil_bready,
    input  wire logic [AXIL_ADDR_WIDTH-1:0] s_axil_araddr,
    input  wire logic [2:0]                 s_axil_arprot,
    input  wire logic                       s_axil_arvalid,
    output      logic                       s_axil_arready,
    output      logic [31:0]                s_axil_rdata,
    output      logic [1:0]                 s_axil_rresp,
    output      logic                       s_axil_rvalid,
    input  wire logic                       s_axil_rready
);
    // ---- elaboration checks (as the real core does) ----
    if (DATA_WIDTH != 64 && DATA_WIDTH != 128 && DATA_WIDTH != 256 && DATA_WIDTH != 512) begin : g_bad_dw
        $error("lvsnic_core: DATA_WIDTH must be 64, 128, 256 or 512");
    end
    if (KEEP_WIDTH != DATA_WIDTH/8) begin : g_bad_kw
        $error("lvsnic_core: KEEP_WIDTH must be DATA_WIDTH/8");
    end
    if (FLOW_BUCKETS_LOG2 < 4 || FLOW_BUCKETS_LOG2 > 16) begin : g_bad_fb
        $error("lvsnic_core: FLOW_BUCKETS_LOG2 must be 4..16");
    end
    if (ACTION_LOG2 < 4 || ACTION_LOG2 > 16) begin : g_bad_al
        $error("lvsnic_core: ACTION_LOG2 must be 4..16");
    end
    if (VIP_COUNT < 1 || VIP_COUNT > 32) begin : g_bad_vc
        $error("lvsnic_core: VIP_COUNT must be 1..32");
    end
    if (AXIL_ADDR_WIDTH < 12 || AXIL_ADDR_WIDTH > 16) begin : g_bad_aw
        $error("lvsnic_core: AXIL_ADDR_WIDTH must be 12..16");
    end

    localparam logic [7:0] REASON_MISS = 8'd14;

    // ---- rx -> host ----
    localparam int HOST_W = 1 + KEEP_WIDTH + DATA_WIDTH + 160;

    logic         rx_in_frame;   // a frame has started (first beat taken)
    logic [95:0]  rx_tuser_q;    // tuser latched on the first beat
    wire  [95:0]  rx_tuser_f = rx_in_frame ? rx_tuser_q : s_axis_rx_tuser;
    // §5: [7:0] reason, [8] hit, [9] vip, [31:10] 0, [63:32] hash_0,
    //     [95:64] sequence, [159:96] timestamp
    wire  [159:0] host_tuser_in = {rx_tuser_f[63:0], rx_tuser_f[95:64], 32'h0, 24'h0, REASON_MISS};
    wire          rx_fire = s_axis_rx_tvalid && s_axis_rx_tready;

    always_ff @(posedge clk) begin
        if (rst) begin
            rx_in_frame <= 1'b0;
            rx_tuser_q  <= '0;
        end else if (rx_fire) begin
            if (!rx_in_frame) rx_tuser_q <= s_axis_rx_tuser;
            rx_in_frame <= !s_axis_rx_tlast;
        end
    end

    stub_axis_fifo #(.WIDTH(HOST_W), .DEPTH_LOG2(3)) u_host_fifo (
        .clk(clk), .rst(rst),
        .s_data({s_axis_rx_tlast, s_axis_rx_tkeep, s_axis_rx_tdata, host_tuser_in}),
        .s_valid(s_axis_rx_tvalid), .s_ready(s_axis_rx_tready),
        .m_data({m_axis_host_tlast, m_axis_host_tkeep, m_axis_host_tdata, m_axis_host_tuser}),
        .m_valid(m_axis_host_tvalid), .m_ready(m_axis_host_tready)
    );

    // ---- inject -> tx ----
    localparam int TX_W = 1 + KEEP_WIDTH + DATA_WIDTH + 33;

    logic        inj_in_frame;
    logic [31:0] inj_tuser_q;
    wire  [31:0] inj_tuser_f = inj_in_frame ? inj_tuser_q : s_axis_inject_tuser;
    wire         inj_fire = s_axis_inject_tvalid && s_axis_inject_tready;

    always_ff @(posedge clk) begin
        if (rst) begin
            inj_in_frame <= 1'b0;
            inj_tuser_q  <= '0;
        end else if (inj_fire) begin
            if (!inj_in_frame) inj_tuser_q <= s_axis_inject_tuser;
            inj_in_frame <= !s_axis_inject_tlast;
        end
    end

    stub_axis_fifo #(.WIDTH(TX_W), .DEPTH_LOG2(2)) u_tx_fifo (
        .clk(clk), .rst(rst),
        .s_data({s_axis_inject_tlast, s_axis_inject_tkeep, s_axis_inject_tdata, 1'b0, inj_tuser_f}),
        .s_valid(s_axis_inject_tvalid), .s_ready(s_axis_inject_tready),
        .m_data({m_axis_tx_tlast, m_axis_tx_tkeep, m_axis_tx_tdata, m_axis_tx_tuser}),
        .m_valid(m_axis_tx_tvalid), .m_ready(m_axis_tx_tready)
    );

    // ---- counters (CNT[0] received, CNT[2] to host, CNT[3] injected) ----
    logic [63:0] cnt_rx, cnt_host, cnt_inj;
    always_ff @(posedge clk) begin
        if (rst) begin
            cnt_rx   <= '0;
            cnt_host <= '0;
            cnt_inj  <= '0;
        end else begin
            if (rx_fire && s_axis_rx_tlast) cnt_rx <= cnt_rx + 1'b1;
            if (m_axis_host_tvalid && m_axis_host_tready && m_axis_host_tlast) cnt_host <= cnt_host + 1'b1;
            if (inj_fire && s_axis_inject_tlast) cnt_inj <= cnt_inj + 1'b1;
        end
    end

    // ---- AXI-Lite register file ----
    logic [31:0] reg_ctrl, reg_mac_lo, reg_mac_hi, reg_ip, reg_mtu, reg_vip_valid;
    logic [31:0] reg_vip [VIP_COUNT];
    logic [31:0] cnt_hi_latch [3];

    // write channel: AW and W are taken independently, the write happens
    // once both are held and no response is outstanding.
    logic                       aw_held, w_held;
    logic [AXIL_ADDR_WIDTH-1:0] aw_addr_q;
    logic [31:0]                w_data_q;
    logic [3:0]                 w_strb_q;

    assign s_axil_awready = !aw_held;
    assign s_axil_wready  = !w_held;
    assign s_axil_bresp   = 2'b00;

    function automatic logic [31:0] merge(input logic [31:0] old, input logic [31:0] data,
                                          input logic [3:0] strb);
        logic [31:0] r;
        for (int i = 0; i < 4; i++) begin
            r[8*i +: 8] = strb[i] ? data[8*i +: 8] : old[8*i +: 8];
        end
        return r;
    endfunction

    wire do_write = aw_held && w_held && !s_axil_bvalid;
    wire [AXIL_ADDR_WIDTH-1:0] waddr = {aw_addr_q[AXIL_ADDR_WIDTH-1:2], 2'b00};

    always_ff @(posedge clk) begin
        if (rst) begin
            aw_held       <= 1'b0;
            w_held        <= 1'b0;
            aw_addr_q     <= '0;
            w_data_q      <= '0;
            w_strb_q      <= '0;
            s_axil_bvalid <= 1'b0;
            reg_ctrl      <= 32'h0000_0002;
            reg_mac_lo    <= '0;
            reg_mac_hi    <= '0;
            reg_ip        <= '0;
            reg_mtu       <= 32'd1500;
            reg_vip_valid <= '0;
            for (int i = 0; i < VIP_COUNT; i++) reg_vip[i] <= '0;
        end else begin
            if (s_axil_awvalid && s_axil_awready) begin
                aw_held   <= 1'b1;
                aw_addr_q <= s_axil_awaddr;
            end
            if (s_axil_wvalid && s_axil_wready) begin
                w_held   <= 1'b1;
                w_data_q <= s_axil_wdata;
                w_strb_q <= s_axil_wstrb;
            end
            if (s_axil_bvalid && s_axil_bready) s_axil_bvalid <= 1'b0;
            if (do_write) begin
                aw_held       <= 1'b0;
                w_held        <= 1'b0;
                s_axil_bvalid <= 1'b1;
                case (waddr)
                    'h010: reg_ctrl      <= merge(reg_ctrl, w_data_q, w_strb_q) & 32'h3;
                    'h014: reg_mac_lo    <= merge(reg_mac_lo, w_data_q, w_strb_q);
                    'h018: reg_mac_hi    <= merge(reg_mac_hi, w_data_q, w_strb_q) & 32'hFFFF;
                    'h01C: reg_ip        <= merge(reg_ip, w_data_q, w_strb_q);
                    'h020: reg_mtu       <= merge(reg_mtu, w_data_q, w_strb_q) & 32'hFFFF;
                    'h024: reg_vip_valid <= merge(reg_vip_valid, w_data_q, w_strb_q);
                    // stub only: lets the harness test its $stop handling
                    'hFFC: if (w_data_q == 32'hDEAD_0057) $stop;
                    default: begin
                        for (int i = 0; i < VIP_COUNT; i++) begin
                            if (waddr == AXIL_ADDR_WIDTH'('h100 + 4*i)) begin
                                reg_vip[i] <= merge(reg_vip[i], w_data_q, w_strb_q);
                            end
                        end
                    end
                endcase
            end
        end
    end

    // read channel: one outstanding read; data registered with rvalid.
    wire [AXIL_ADDR_WIDTH-1:0] raddr = {s_axil_araddr[AXIL_ADDR_WIDTH-1:2], 2'b00};
    wire                       ar_fire = s_axil_arvalid && s_axil_arready;

    assign s_axil_arready = !s_axil_rvalid;
    assign s_axil_rresp   = 2'b00;

    logic [31:0] rd_val;
    always_comb begin
        rd_val = 32'h0;
        case (raddr)
            'h000: rd_val = 32'h4C56_534E;
            'h004: rd_val = 32'h0001_0000;
            'h008: rd_val = {8'(ACTION_LOG2), 8'(FLOW_BUCKETS_LOG2), 16'(DATA_WIDTH)};
            'h00C: rd_val = {8'h0, 8'(VIP_COUNT), 8'd2, 8'd4};
            'h010: rd_val = reg_ctrl;
            'h014: rd_val = reg_mac_lo;
            'h018: rd_val = reg_mac_hi;
            'h01C: rd_val = reg_ip;
            'h020: rd_val = reg_mtu;
            'h024: rd_val = reg_vip_valid;
            'h400: rd_val = cnt_rx[31:0];
            'h404: rd_val = cnt_hi_latch[0];
            'h410: rd_val = cnt_host[31:0];
            'h414: rd_val = cnt_hi_latch[1];
            'h418: rd_val = cnt_inj[31:0];
            'h41C: rd_val = cnt_hi_latch[2];
            default: begin
                for (int i = 0; i < VIP_COUNT; i++) begin
                    if (raddr == AXIL_ADDR_WIDTH'('h100 + 4*i)) rd_val = reg_vip[i];
                end
            end
        endcase
    end

    always_ff @(posedge clk) begin
        if (rst) begin
            s_axil_rvalid <= 1'b0;
            s_axil_rdata  <= '0;
            for (int i = 0; i < 3; i++) cnt_hi_latch[i] <= '0;
        end else begin
            if (s_axil_rvalid && s_axil_rready) s_axil_rvalid <= 1'b0;
            if (ar_fire) begin
                s_axil_rvalid <= 1'b1;
                s_axil_rdata  <= rd_val;
                if (raddr == 'h400) cnt_hi_latch[0] <= cnt_rx[63:32];
                if (raddr == 'h410) cnt_hi_latch[1] <= cnt_host[63:32];
                if (raddr == 'h418) cnt_hi_latch[2] <= cnt_inj[63:32];
            end
        end
    end
endmodule

`default_nettype wire
