// lvsnic_dma: the card's DMA engine of docs/hardware.md §8, between the
// core's host streams and host memory. Its behaviour is the Rust model's
// (host-driver/src/device/dma_model.rs); the Alveo board top
// (boards/alveo_u250/generate.py) instantiates it.
//
// * AXI4-Lite slave: the lvsnic_dma registers (BAR0 0x800..0x8FF, offset
//   from 0x800): DMA_CAPS, the RX queue block at 0x40 and the TX queue
//   block at 0x80 (hw/regmap/lvsnic.rdl). Writes merge byte strobes into
//   the register's current value, then act as a full write of the model.
//   Address bits 1:0 are ignored (AXI-Lite byte addresses; the strobes say
//   which bytes). Unlisted addresses read 0 and ignore writes.
// * RX queue: a frame from s_axis_host (the core's m_axis_host, tuser the
//   160-bit exception metadata, sampled on the first beat) is held whole
//   in a MAX_FRAME buffer (one frame; the stream waits while it is held),
//   then written into the buffer of the descriptor at DQ_CONS with its
//   completion, or dropped and counted in DROP (queue stopped, empty or
//   longer than MAX_FRAME, no descriptor posted, no completion room,
//   longer than the buffer). Malformed descriptors are consumed with a
//   status-1 completion and the next one is tried.
// * TX queue: while enabled with descriptors posted and completion room,
//   each descriptor is fetched, its frame read into a MAX_FRAME buffer,
//   streamed whole on m_axis_inject (tuser = the descriptor's sequence
//   number), then completed.
// * Completions: bytes 0..30 in one write, then byte 31 (the phase), so a
//   host that sees the phase sees the record. A failed (SLVERR/DECERR)
//   access to a ring halts the queue (STATUS.fault); to a buffer, status 2.
// * AXI4 master: one burst at a time, INCR, full-width beats (AxSIZE =
//   log2(DATA_WIDTH/8)), any byte address (realigned here, strobes on
//   writes), bursts split at 4 KiB boundaries and at 256 beats. IDs 0.
// * irq[q]: a one-cycle pulse when a completion is written with IRQ.arm
//   set (arm then clears).
//
// One engine FSM does register writes, RX and TX in turn (a register write
// waits for the operation in progress); register reads are answered at any
// time. The two frame buffers are lvsnic_sdp_ram block RAMs (one write
// port, one registered read port): each is addressed with the word index
// the next cycle needs (mk_next, tx_j_next), so the word is on the RAM's
// output when its beat goes out and no cycle is added.
`default_nettype none

module lvsnic_dma #(
    // AXI-Stream and AXI4 data width in bits: 64, 128, 256 or 512
    parameter integer DATA_WIDTH = 512,
    // DMA_CAPS.MAX_FRAME (bytes): the longest frame moved, 1514..65535
    parameter integer MAX_FRAME  = 16384
) (
    input  wire                     clk,
    input  wire                     rst,

    input  wire [7:0]               s_axil_awaddr,
    input  wire                     s_axil_awvalid,
    output wire                     s_axil_awready,
    input  wire [31:0]              s_axil_wdata,
    input  wire [3:0]               s_axil_wstrb,
    input  wire                     s_axil_wvalid,
    output wire                     s_axil_wready,
    output wire [1:0]               s_axil_bresp,
    output wire                     s_axil_bvalid,
    input  wire                     s_axil_bready,
    input  wire [7:0]               s_axil_araddr,
    input  wire                     s_axil_arvalid,
    output wire                     s_axil_arready,
    output wire [31:0]              s_axil_rdata,
    output wire [1:0]               s_axil_rresp,
    output wire                     s_axil_rvalid,
    input  wire                     s_axil_rready,

    input  wire [DATA_WIDTH-1:0]    s_axis_host_tdata,
    input  wire [DATA_WIDTH/8-1:0]  s_axis_host_tkeep,
    input  wire                     s_axis_host_tvalid,
    output wire                     s_axis_host_tready,
    input  wire                     s_axis_host_tlast,
    input  wire [159:0]             s_axis_host_tuser,

    output wire [DATA_WIDTH-1:0]    m_axis_inject_tdata,
    output wire [DATA_WIDTH/8-1:0]  m_axis_inject_tkeep,
    output wire                     m_axis_inject_tvalid,
    input  wire                     m_axis_inject_tready,
    output wire                     m_axis_inject_tlast,
    output wire [31:0]              m_axis_inject_tuser,

    output wire [3:0]               m_axi_awid,
    output wire [63:0]              m_axi_awaddr,
    output wire [7:0]               m_axi_awlen,
    output wire [2:0]               m_axi_awsize,
    output wire [1:0]               m_axi_awburst,
    output wire                     m_axi_awvalid,
    input  wire                     m_axi_awready,
    output wire [DATA_WIDTH-1:0]    m_axi_wdata,
    output wire [DATA_WIDTH/8-1:0]  m_axi_wstrb,
    output wire                     m_axi_wlast,
    output wire                     m_axi_wvalid,
    input  wire                     m_axi_wready,
    input  wire [3:0]               m_axi_bid,
    input  wire [1:0]               m_axi_bresp,
    input  wire                     m_axi_bvalid,
    output wire                     m_axi_bready,
    output wire [3:0]               m_axi_arid,
    output wire [63:0]              m_axi_araddr,
    output wire [7:0]               m_axi_arlen,
    output wire [2:0]               m_axi_arsize,
    output wire [1:0]               m_axi_arburst,
    output wire                     m_axi_arvalid,
    input  wire                     m_axi_arready,
    input  wire [3:0]               m_axi_rid,
    input  wire [DATA_WIDTH-1:0]    m_axi_rdata,
    input  wire [1:0]               m_axi_rresp,
    input  wire                     m_axi_rlast,
    input  wire                     m_axi_rvalid,
    output wire                     m_axi_rready,

    // IRQ.arm fired: [0] RX queue (vector 0), [1] TX queue (vector 1); one-cycle pulses
    output wire [1:0]               irq
);

    // ------------------------------------------------------------------
    // parameter checks (elaboration errors in Verilator and Yosys)
    // ------------------------------------------------------------------
    generate
        if (DATA_WIDTH != 64 && DATA_WIDTH != 128 && DATA_WIDTH != 256 && DATA_WIDTH != 512) begin : g_bad_dw
            $error("lvsnic_dma: DATA_WIDTH must be 64, 128, 256 or 512");
            lvsnic_dma_invalid_parameter_DATA_WIDTH u_bad ();
        end
        if (MAX_FRAME < 1514 || MAX_FRAME > 65535) begin : g_bad_mf
            $error("lvsnic_dma: MAX_FRAME must be 1514..65535");
            lvsnic_dma_invalid_parameter_MAX_FRAME u_bad ();
        end
    endgenerate

    localparam integer W      = DATA_WIDTH / 8;             // bytes per beat
    localparam integer WL     = $clog2(W);
    localparam integer DEPTH  = (MAX_FRAME + W - 1) / W;    // frame buffer words
    localparam integer IW     = $clog2(DEPTH + 1);          // word index (up to DEPTH)
    localparam integer AW     = $clog2(DEPTH);              // frame buffer address
    localparam integer DESCN  = (128 + DATA_WIDTH - 1) / DATA_WIDTH;  // words per descriptor
    localparam integer CPLN   = (256 + DATA_WIDTH - 1) / DATA_WIDTH;  // words per completion
    // DMA_CAPS: ring sizes 2^2..2^15 (the model's), MAX_FRAME
    localparam [7:0]  MIN_LOG2 = 8'd2;
    localparam [7:0]  MAX_LOG2 = 8'd15;
    localparam [31:0] CAPS = {16'(MAX_FRAME), MAX_LOG2, MIN_LOG2};
    localparam [16:0] MAXF = 17'(MAX_FRAME);

    // queue register offsets (docs/hardware.md §8.2)
    localparam [5:0] O_DQ_BASE_LO = 6'h00, O_DQ_BASE_HI = 6'h04, O_CQ_BASE_LO = 6'h08, O_CQ_BASE_HI = 6'h0C,
                     O_SIZE_LOG2 = 6'h10, O_CTRL = 6'h14, O_STATUS = 6'h18, O_IRQ = 6'h1C,
                     O_DQ_PROD = 6'h20, O_DQ_CONS = 6'h24, O_CQ_PROD = 6'h28, O_CQ_CONS = 6'h2C,
                     O_ERR_DESC = 6'h30, O_ERR_INDEX = 6'h34, O_ERR_DMA = 6'h38, O_DROP = 6'h3C;

    // ------------------------------------------------------------------
    // queue state, [0] RX, [1] TX
    // ------------------------------------------------------------------
    logic [63:0] dq_base [2];
    logic [63:0] cq_base [2];
    logic [3:0]  qlog2 [2];          // 0: never set
    logic        qen [2];
    logic        qfault [2];
    logic        qarm [2];
    logic [15:0] dq_prod [2];
    logic [15:0] dq_cons [2];
    logic [15:0] cq_prod [2];
    logic [15:0] cq_cons [2];
    logic [31:0] err_desc [2];
    logic [31:0] err_index [2];
    logic [31:0] err_dma [2];
    logic [31:0] qdrop [2];

    function automatic [31:0] qread(input logic q, input logic [5:0] off);
        case (off)
            O_DQ_BASE_LO: qread = dq_base[q][31:0];
            O_DQ_BASE_HI: qread = dq_base[q][63:32];
            O_CQ_BASE_LO: qread = cq_base[q][31:0];
            O_CQ_BASE_HI: qread = cq_base[q][63:32];
            O_SIZE_LOG2:  qread = {28'd0, qlog2[q]};
            O_CTRL:       qread = {31'd0, qen[q]};
            O_STATUS:     qread = {30'd0, qfault[q], qen[q] & ~qfault[q]};
            O_IRQ:        qread = {31'd0, qarm[q]};
            O_DQ_PROD:    qread = {16'd0, dq_prod[q]};
            O_DQ_CONS:    qread = {16'd0, dq_cons[q]};
            O_CQ_PROD:    qread = {16'd0, cq_prod[q]};
            O_CQ_CONS:    qread = {16'd0, cq_cons[q]};
            O_ERR_DESC:   qread = err_desc[q];
            O_ERR_INDEX:  qread = err_index[q];
            O_ERR_DMA:    qread = err_dma[q];
            O_DROP:       qread = qdrop[q];
            default:      qread = 32'd0;
        endcase
    endfunction

    // a: byte address bits 7:2
    function automatic [31:0] reg_read(input logic [7:2] a);
        if (a[7:6] == 2'd1)      reg_read = qread(1'b0, {a[5:2], 2'b00});
        else if (a[7:6] == 2'd2) reg_read = qread(1'b1, {a[5:2], 2'b00});
        else if (a == 6'd0)      reg_read = CAPS;
        else                     reg_read = 32'd0;
    endfunction

    // a queue is running: enabled and not halted
    function automatic logic running(input logic q);
        running = qen[q] & ~qfault[q];
    endfunction
    function automatic logic has_desc(input logic q);
        has_desc = dq_cons[q] != dq_prod[q];
    endfunction
    function automatic logic cq_room(input logic q);
        logic [15:0] d;
        d = cq_prod[q] - cq_cons[q];
        cq_room = {1'b0, d} < (17'd1 << qlog2[q]);
    endfunction
    function automatic [15:0] slot(input logic q, input logic [15:0] pos);
        slot = pos & 16'((17'd1 << qlog2[q]) - 17'd1);
    endfunction

    // ------------------------------------------------------------------
    // AXI4-Lite read channel (independent of the engine)
    // ------------------------------------------------------------------
    logic        rvalid_q;
    logic [31:0] rdata_q;
    assign s_axil_arready = ~rvalid_q;
    assign s_axil_rvalid  = rvalid_q;
    assign s_axil_rdata   = rdata_q;
    assign s_axil_rresp   = 2'b00;
    always_ff @(posedge clk) begin
        if (rst) begin
            rvalid_q <= 1'b0;
            rdata_q  <= 32'd0;
        end else if (rvalid_q) begin
            if (s_axil_rready) rvalid_q <= 1'b0;
        end else if (s_axil_arvalid) begin
            rvalid_q <= 1'b1;
            rdata_q  <= reg_read(s_axil_araddr[7:2]);
        end
    end

    // ------------------------------------------------------------------
    // RX frame buffer: one whole frame from s_axis_host
    // ------------------------------------------------------------------
    logic [IW-1:0]  rx_widx;
    logic [16:0]    rx_len;          // bytes, saturates at MAX_FRAME + 1
    logic [159:0]   rx_meta;
    logic           rx_first;
    logic           rx_full;         // a whole frame is held
    wire            rx_release;      // engine: done with the held frame

    logic [WL:0] keep_n;
    always_comb begin
        keep_n = '0;
        for (int i = 0; i < W; i++) keep_n = keep_n + {{WL{1'b0}}, s_axis_host_tkeep[i]};
    end
    wire [17:0] rx_sum = (rx_first ? 18'd0 : {1'b0, rx_len}) + 18'(keep_n);

    assign s_axis_host_tready = ~rx_full;
    // rx_rdata: word mk of the held frame (read with mk_next the cycle before)
    wire [DATA_WIDTH-1:0] rx_rdata;
    logic [17:0]          mk_next;   // mk after this clock edge (the mover below)
    lvsnic_sdp_ram #(.WIDTH(DATA_WIDTH), .ADDR_WIDTH(AW), .OUT_REG(0)) u_rx_ram (
        .clk   (clk),
        .we    (s_axis_host_tvalid && !rx_full && rx_widx < IW'(DEPTH)),
        .waddr (rx_widx[AW-1:0]),
        .wdata (s_axis_host_tdata),
        .re    (1'b1),
        .raddr (mk_next[AW-1:0]),
        .oce   (1'b1),
        .rdata (rx_rdata)
    );
    always_ff @(posedge clk) begin
        if (rst) begin
            rx_widx  <= '0;
            rx_len   <= '0;
            rx_meta  <= '0;
            rx_first <= 1'b1;
            rx_full  <= 1'b0;
        end else begin
            if (rx_release) rx_full <= 1'b0;
            if (s_axis_host_tvalid && !rx_full) begin
                if (rx_first) rx_meta <= s_axis_host_tuser;
                rx_len   <= (rx_sum > {1'b0, MAXF}) ? MAXF + 17'd1 : rx_sum[16:0];
                rx_first <= s_axis_host_tlast;
                if (s_axis_host_tlast) begin
                    rx_full <= 1'b1;
                    rx_widx <= '0;
                end else if (rx_widx < IW'(DEPTH)) begin
                    rx_widx <= rx_widx + 1'b1;
                end
            end
        end
    end

    // ------------------------------------------------------------------
    // TX frame buffer (written by the mover, streamed by the engine; the
    // RAM is instantiated below the mover, which drives its write port)
    // ------------------------------------------------------------------
    wire [DATA_WIDTH-1:0] tx_rdata;  // word tx_j (read with tx_j_next the cycle before)

    // ------------------------------------------------------------------
    // mover: one read (host memory -> tx_ram or the descriptor register)
    // or one write (rx_ram or the completion register -> host memory) of
    // mv_len bytes at byte address mv_addr
    // ------------------------------------------------------------------
    localparam [2:0] M_IDLE = 3'd0, M_AR = 3'd1, M_R = 3'd2, M_FLUSH = 3'd3,
                     M_AW = 3'd4, M_W = 3'd5, M_B = 3'd6, M_DONE = 3'd7;
    logic [2:0]  mst;
    // requests (engine-owned)
    logic        mv_go;
    logic        mv_wr;          // 1: write to host memory
    logic        mv_cpl;         // write source: cpl_buf (else rx_ram)
    logic        mv_ram;         // read destination: tx_ram (else desc_buf)
    logic [63:0] mv_addr;
    logic [16:0] mv_len;
    logic [DESCN*DATA_WIDTH-1:0] desc_buf;
    logic [CPLN*DATA_WIDTH-1:0]  cpl_buf;
    // mover state
    logic        mv_err;
    logic [17:0] mk;             // beats done (whole operation)
    logic [17:0] mnb;            // beats of the operation
    logic [17:0] mnw;            // frame words of the operation
    logic [8:0]  mleft;          // beats left in the burst
    logic [DATA_WIDTH-1:0] mprev;      // read: the previous beat
    logic [DATA_WIDTH-1:0] msrc_prev;  // write: source word k-1 (0 before the first)

    wire [WL-1:0]  mo      = mv_addr[WL-1:0];
    wire [63:0]    mcur    = {mv_addr[63:WL], {WL{1'b0}}} + {46'd0, mk} * 64'(W);
    wire [12:0]    to4k    = (13'd4096 - {1'b0, mcur[11:0]}) >> WL;
    wire [17:0]    mrem    = mnb - mk;
    wire [17:0]    mb1     = (mrem < 18'(to4k)) ? mrem : 18'(to4k);
    wire [8:0]     mblen   = (mb1 > 18'd256) ? 9'd256 : mb1[8:0];

    // source word j of a write (0 outside the frame)
    function automatic [DATA_WIDTH-1:0] src_word(input logic [17:0] j);
        if (j >= mnw) src_word = '0;
        else if (mv_cpl) src_word = cpl_buf[j[$clog2(CPLN+1)-1:0] * DATA_WIDTH +: DATA_WIDTH];
        else src_word = rx_rdata;       // j is always mk: the RAM's word
    endfunction
    logic [2*DATA_WIDTH-1:0] wpair;
    logic [DATA_WIDTH-1:0]   wbeat;
    logic [W-1:0]            wstrb;
    always_comb begin
        wpair = {src_word(mk), msrc_prev};
        wbeat = DATA_WIDTH'(wpair >> ((W - 32'(mo)) * 8));
        for (int b = 0; b < W; b++) begin
            wstrb[b] = 32'({mk, {WL{1'b0}}}) + 32'(b) >= 32'(mo)
                       && 32'({mk, {WL{1'b0}}}) + 32'(b) < 32'(mo) + 32'(mv_len);
        end
    end
    // realigned read word: ({this beat, previous beat} >> offset)
    wire [2*DATA_WIDTH-1:0] rpair = {(mst == M_FLUSH) ? {DATA_WIDTH{1'b0}} : m_axi_rdata, mprev};
    wire [DATA_WIDTH-1:0]   rword = DATA_WIDTH'(rpair >> (32'(mo) * 8));
    wire [17:0]             ridx  = mk - 18'd1;   // word k-1 at beat k (and in the flush)
    wire                    rput  = ((mst == M_R && m_axi_rvalid && mk != 18'd0) || mst == M_FLUSH) && ridx < mnw;

    assign m_axi_awid    = 4'd0;
    assign m_axi_awaddr  = mcur;
    assign m_axi_awlen   = 8'(mblen - 9'd1);
    assign m_axi_awsize  = 3'(WL);
    assign m_axi_awburst = 2'b01;
    assign m_axi_awvalid = mst == M_AW;
    assign m_axi_wdata   = wbeat;
    assign m_axi_wstrb   = wstrb;
    assign m_axi_wlast   = mleft == 9'd1;
    assign m_axi_wvalid  = mst == M_W;
    assign m_axi_bready  = mst == M_B;
    assign m_axi_arid    = 4'd0;
    assign m_axi_araddr  = mcur;
    assign m_axi_arlen   = 8'(mblen - 9'd1);
    assign m_axi_arsize  = 3'(WL);
    assign m_axi_arburst = 2'b01;
    assign m_axi_arvalid = mst == M_AR;
    assign m_axi_rready  = mst == M_R;

    // the tx_ram read address: the stream's word in the next cycle
    wire [IW-1:0] tx_j_next;
    lvsnic_sdp_ram #(.WIDTH(DATA_WIDTH), .ADDR_WIDTH(AW), .OUT_REG(0)) u_tx_ram (
        .clk   (clk),
        .we    (rput && mv_ram && ridx < 18'(DEPTH)),
        .waddr (ridx[AW-1:0]),
        .wdata (rword),
        .re    (1'b1),
        .raddr (tx_j_next[AW-1:0]),
        .oce   (1'b1),
        .rdata (tx_rdata)
    );

    // beats done after this clock edge: 0 at the start, +1 per read beat,
    // flush and write beat (the mover assigns mk <= mk_next)
    always_comb begin
        mk_next = mk;
        case (mst)
            M_IDLE:  if (mv_go) mk_next = '0;
            M_R:     if (m_axi_rvalid) mk_next = mk + 18'd1;
            M_FLUSH: mk_next = mk + 18'd1;
            M_W:     if (m_axi_wready) mk_next = mk + 18'd1;
            default: ;
        endcase
    end
    always_ff @(posedge clk) begin
        if (rst) begin
            mst    <= M_IDLE;
            mv_err <= 1'b0;
            mk     <= '0;
            mnb    <= '0;
            mnw    <= '0;
            mleft  <= '0;
            mprev  <= '0;
            msrc_prev <= '0;
            desc_buf <= '0;
        end else begin
            mk <= mk_next;
            if (rput && !mv_ram && ridx < 18'(DESCN))
                desc_buf[ridx[$clog2(DESCN+1)-1:0] * DATA_WIDTH +: DATA_WIDTH] <= rword;
            case (mst)
                M_IDLE: if (mv_go) begin
                    mv_err <= 1'b0;
                    msrc_prev <= '0;
                    mnb    <= (18'(mo) + 18'(mv_len) + 18'(W - 1)) >> WL;
                    mnw    <= (18'(mv_len) + 18'(W - 1)) >> WL;
                    mst    <= mv_wr ? M_AW : M_AR;
                end
                M_AR: if (m_axi_arready) mst <= M_R;
                M_R: if (m_axi_rvalid) begin
                    if (m_axi_rresp[1]) mv_err <= 1'b1;
                    mprev <= m_axi_rdata;
                    if (m_axi_rlast) begin
                        if (mk + 18'd1 < mnb) mst <= M_AR;
                        else if (mnw == mnb) mst <= M_FLUSH;
                        else mst <= M_DONE;
                    end
                end
                M_FLUSH: mst <= M_DONE;
                M_AW: if (m_axi_awready) begin
                    mleft <= mblen;
                    mst   <= M_W;
                end
                M_W: if (m_axi_wready) begin
                    msrc_prev <= wpair[2*DATA_WIDTH-1:DATA_WIDTH];
                    mleft <= mleft - 9'd1;
                    if (mleft == 9'd1) mst <= M_B;
                end
                M_B: if (m_axi_bvalid) begin
                    if (m_axi_bresp[1]) mv_err <= 1'b1;
                    mst <= (mk < mnb) ? M_AW : M_DONE;
                end
                default: mst <= M_IDLE;   // M_DONE: the engine sees it for one cycle
            endcase
        end
    end

    // ------------------------------------------------------------------
    // engine
    // ------------------------------------------------------------------
    localparam [4:0] S_IDLE = 5'd0, S_BRESP = 5'd1, S_WAIT = 5'd2,
                     S_RX_CHECK = 5'd3, S_RX_DESC = 5'd4, S_RX_BUF = 5'd5,
                     S_RX_INV = 5'd6, S_RX_DROP = 5'd7, S_RX_RELEASE = 5'd8,
                     S_TX_DESC = 5'd9, S_TX_BUF = 5'd10, S_TX_STREAM = 5'd11,
                     S_CPL_A = 5'd12, S_CPL_B = 5'd13, S_CPL_C = 5'd14;
    logic [4:0]   st;
    logic [4:0]   ret;            // S_WAIT: state after the mover is done
    logic [4:0]   cpl_next;       // state after a completion
    logic         cq;             // queue of the operation: 0 RX, 1 TX
    logic [31:0]  d_len;
    logic [31:0]  d_w3;
    logic [15:0]  c_len;
    logic [159:0] c_meta;
    logic [7:0]   c_status;
    logic [IW-1:0] tx_j;
    logic [1:0]   irq_q;

    wire [127:0] desc = desc_buf[127:0];
    assign rx_release = st == S_RX_RELEASE;
    wire         do_write = st == S_IDLE && s_axil_awvalid && s_axil_wvalid;
    wire [31:0]  wm = {{8{s_axil_wstrb[3]}}, {8{s_axil_wstrb[2]}}, {8{s_axil_wstrb[1]}}, {8{s_axil_wstrb[0]}}};
    wire [31:0]  wv = (reg_read(s_axil_awaddr[7:2]) & ~wm) | (s_axil_wdata & wm);
    wire         wq = s_axil_awaddr[7];          // with awaddr[7:6] 1 or 2
    wire [5:0]   wo = {s_axil_awaddr[5:2], 2'b00};
    wire         wqsel = s_axil_awaddr[7:6] == 2'd1 || s_axil_awaddr[7:6] == 2'd2;

    assign s_axil_awready = do_write;
    assign s_axil_wready  = do_write;
    assign s_axil_bvalid  = st == S_BRESP;
    assign s_axil_bresp   = 2'b00;
    assign irq = irq_q;

    wire [IW-1:0] tx_nw = IW'((d_len + 32'(W - 1)) >> WL);
    wire          tx_last = tx_j + 1'b1 == tx_nw;
    wire [31:0]   tx_lastn = d_len - 32'(W) * 32'(tx_nw - 1'b1);   // bytes in the last beat
    assign m_axis_inject_tvalid = st == S_TX_STREAM;
    assign m_axis_inject_tdata  = tx_rdata;
    // tx_j after this clock edge (the engine assigns tx_j <= tx_j_next)
    assign tx_j_next = (st == S_TX_BUF && !mv_err) ? '0
                     : (st == S_TX_STREAM && m_axis_inject_tready) ? tx_j + 1'b1 : tx_j;
    assign m_axis_inject_tlast  = tx_last;
    assign m_axis_inject_tkeep  = tx_last ? W'(({{W{1'b0}}, {W{1'b1}}}) >> (32'(W) - tx_lastn)) : {W{1'b1}};
    assign m_axis_inject_tuser  = d_w3;

    // the completion record at the current CQ_PROD (docs/hardware.md §8.4)
    wire [255:0] cpl_rec = {~cq_prod[cq][qlog2[cq]], 7'd0, c_status, 48'd0, c_meta, c_len, dq_cons[cq]};
    wire [63:0]  cpl_addr = cq_base[cq] + {43'd0, slot(cq, cq_prod[cq]), 5'd0};

    task automatic start_mover(input logic wr, input logic from_cpl, input logic to_ram,
                               input logic [63:0] a, input logic [16:0] n, input logic [4:0] after);
        mv_go   <= 1'b1;
        mv_wr   <= wr;
        mv_cpl  <= from_cpl;
        mv_ram  <= to_ram;
        mv_addr <= a;
        mv_len  <= n;
        ret     <= after;
        st      <= S_WAIT;
    endtask

    task automatic complete(input logic [15:0] n, input logic [159:0] meta, input logic [7:0] status,
                            input logic [4:0] after);
        c_len    <= n;
        c_meta   <= meta;
        c_status <= status;
        cpl_next <= after;
        st       <= S_CPL_A;
    endtask

    always_ff @(posedge clk) begin
        if (rst) begin
            for (int q = 0; q < 2; q++) begin
                dq_base[q] <= '0; cq_base[q] <= '0; qlog2[q] <= '0;
                qen[q] <= 1'b0; qfault[q] <= 1'b0; qarm[q] <= 1'b0;
                dq_prod[q] <= '0; dq_cons[q] <= '0; cq_prod[q] <= '0; cq_cons[q] <= '0;
                err_desc[q] <= '0; err_index[q] <= '0; err_dma[q] <= '0; qdrop[q] <= '0;
            end
            st <= S_IDLE; ret <= S_IDLE; cpl_next <= S_IDLE; cq <= 1'b0;
            mv_go <= 1'b0; mv_wr <= 1'b0; mv_cpl <= 1'b0; mv_ram <= 1'b0; mv_addr <= '0; mv_len <= '0;
            cpl_buf <= '0; d_len <= '0; d_w3 <= '0;
            c_len <= '0; c_meta <= '0; c_status <= '0; tx_j <= '0; irq_q <= '0;
        end else begin
            irq_q      <= 2'b00;
            mv_go      <= 1'b0;
            tx_j       <= tx_j_next;
            case (st)
                S_IDLE: begin
                    if (do_write) begin
                        st <= S_BRESP;
                        if (wqsel) begin
                            case (wo)
                                O_DQ_BASE_LO: if (!qen[wq]) dq_base[wq][31:0]  <= wv;
                                O_DQ_BASE_HI: if (!qen[wq]) dq_base[wq][63:32] <= wv;
                                O_CQ_BASE_LO: if (!qen[wq]) cq_base[wq][31:0]  <= wv;
                                O_CQ_BASE_HI: if (!qen[wq]) cq_base[wq][63:32] <= wv;
                                O_SIZE_LOG2:
                                    if (!qen[wq] && wv >= 32'(MIN_LOG2) && wv <= 32'(MAX_LOG2)) qlog2[wq] <= wv[3:0];
                                O_CTRL:
                                    if (wv[0] && !qen[wq] && qlog2[wq] != 4'd0) begin
                                        qen[wq]     <= 1'b1;
                                        qfault[wq]  <= 1'b0;
                                        dq_prod[wq] <= '0;
                                        dq_cons[wq] <= '0;
                                        cq_prod[wq] <= '0;
                                        cq_cons[wq] <= '0;
                                    end else if (!wv[0]) begin
                                        qen[wq] <= 1'b0;
                                    end
                                O_IRQ: qarm[wq] <= wv[0];
                                O_DQ_PROD: if (qen[wq]) begin
                                    if (wv[31:16] == 16'd0
                                        && {1'b0, wv[15:0] - cq_cons[wq]} <= (17'd1 << qlog2[wq])
                                        && {1'b0, wv[15:0] - dq_cons[wq]} <= (17'd1 << qlog2[wq])
                                        && wv[15:0] - dq_cons[wq] >= dq_prod[wq] - dq_cons[wq])
                                        dq_prod[wq] <= wv[15:0];
                                    else
                                        err_index[wq] <= err_index[wq] + 32'd1;
                                end
                                O_CQ_CONS: if (qen[wq]) begin
                                    if (wv[31:16] == 16'd0 && wv[15:0] - cq_cons[wq] <= cq_prod[wq] - cq_cons[wq])
                                        cq_cons[wq] <= wv[15:0];
                                    else
                                        err_index[wq] <= err_index[wq] + 32'd1;
                                end
                                default: ;
                            endcase
                        end
                    end else if (rx_full) begin
                        cq <= 1'b0;
                        st <= S_RX_CHECK;
                    end else if (running(1'b1) && has_desc(1'b1) && cq_room(1'b1)) begin
                        cq <= 1'b1;
                        start_mover(1'b0, 1'b0, 1'b0, dq_base[1] + {44'd0, slot(1'b1, dq_cons[1]), 4'd0}, 17'd16, S_TX_DESC);
                    end
                end
                S_BRESP: if (s_axil_bready) st <= S_IDLE;
                S_WAIT: if (mst == M_DONE) st <= ret;

                // ---------------- RX
                S_RX_CHECK:
                    if (!running(1'b0) || rx_len > MAXF || rx_len == 17'd0 || !has_desc(1'b0) || !cq_room(1'b0))
                        st <= S_RX_DROP;
                    else
                        start_mover(1'b0, 1'b0, 1'b0, dq_base[0] + {44'd0, slot(1'b0, dq_cons[0]), 4'd0}, 17'd16, S_RX_DESC);
                S_RX_DESC: begin
                    d_len  <= desc[95:64];
                    d_w3   <= desc[127:96];
                    if (mv_err) begin
                        err_dma[0] <= err_dma[0] + 32'd1;
                        qfault[0]  <= 1'b1;
                        st <= S_RX_DROP;
                    end else if (desc[95:64] < 32'd64 || desc[95:64] > 32'd65535 || desc[127:96] != 32'd0) begin
                        err_desc[0] <= err_desc[0] + 32'd1;
                        complete(16'd0, 160'd0, 8'd1, S_RX_INV);
                    end else if ({15'd0, rx_len} > desc[95:64]) begin
                        st <= S_RX_DROP;               // the buffer stays posted
                    end else begin
                        start_mover(1'b1, 1'b0, 1'b0, desc[63:0], rx_len, S_RX_BUF);
                    end
                end
                S_RX_BUF:
                    if (mv_err) begin
                        err_dma[0] <= err_dma[0] + 32'd1;
                        complete(16'd0, 160'd0, 8'd2, S_RX_DROP);
                    end else begin
                        complete(rx_len[15:0], rx_meta, 8'd0, S_RX_RELEASE);
                    end
                S_RX_INV: st <= qfault[0] ? S_RX_DROP : S_RX_CHECK;
                S_RX_DROP: begin
                    qdrop[0] <= qdrop[0] + 32'd1;
                    st <= S_RX_RELEASE;
                end
                S_RX_RELEASE: st <= S_IDLE;            // rx_release: rx_full clears now

                // ---------------- TX
                S_TX_DESC: begin
                    d_len  <= desc[95:64];
                    d_w3   <= desc[127:96];
                    if (mv_err) begin
                        err_dma[1] <= err_dma[1] + 32'd1;
                        qfault[1]  <= 1'b1;
                        st <= S_IDLE;
                    end else if (desc[95:64] < 32'd14 || desc[95:64] > 32'(MAX_FRAME)) begin
                        err_desc[1] <= err_desc[1] + 32'd1;
                        complete(16'd0, {128'd0, desc[127:96]}, 8'd1, S_IDLE);
                    end else begin
                        start_mover(1'b0, 1'b0, 1'b1, desc[63:0], desc[80:64], S_TX_BUF);
                    end
                end
                S_TX_BUF:
                    if (mv_err) begin
                        err_dma[1] <= err_dma[1] + 32'd1;
                        complete(16'd0, {128'd0, d_w3}, 8'd2, S_IDLE);
                    end else begin
                        st   <= S_TX_STREAM;
                    end
                S_TX_STREAM: if (m_axis_inject_tready) begin
                    if (tx_last) complete(d_len[15:0], {128'd0, d_w3}, 8'd0, S_IDLE);
                end

                // ---------------- completion: bytes 0..30, then byte 31
                S_CPL_A: begin
                    cpl_buf <= (CPLN * DATA_WIDTH)'(cpl_rec);
                    start_mover(1'b1, 1'b1, 1'b0, cpl_addr, 17'd31, S_CPL_B);
                end
                S_CPL_B:
                    if (mv_err) begin
                        err_dma[cq] <= err_dma[cq] + 32'd1;
                        qfault[cq]  <= 1'b1;
                        st <= cpl_next;
                    end else begin
                        cpl_buf <= (CPLN * DATA_WIDTH)'(cpl_rec[255:248]);
                        start_mover(1'b1, 1'b1, 1'b0, cpl_addr + 64'd31, 17'd1, S_CPL_C);
                    end
                S_CPL_C: begin
                    if (mv_err) begin
                        err_dma[cq] <= err_dma[cq] + 32'd1;
                        qfault[cq]  <= 1'b1;
                    end else begin
                        dq_cons[cq] <= dq_cons[cq] + 16'd1;
                        cq_prod[cq] <= cq_prod[cq] + 16'd1;
                        if (qarm[cq]) begin
                            qarm[cq] <= 1'b0;
                            irq_q[cq] <= 1'b1;
                        end
                    end
                    st <= cpl_next;
                end
                default: st <= S_IDLE;
            endcase
        end
    end

    // unused: address bits 1:0 (strobes select bytes), the AXI IDs (one ID, in order), bit 0 of the responses (SLVERR
    // and DECERR both count as failed), the descriptor buffer's spare words
    wire unused = &{1'b0, s_axil_awaddr[1:0], s_axil_araddr[1:0], m_axi_bid, m_axi_rid, m_axi_bresp[0], m_axi_rresp[0], desc_buf};

endmodule

`default_nettype wire
