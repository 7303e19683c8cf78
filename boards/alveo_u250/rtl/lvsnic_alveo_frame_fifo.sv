// lvsnic_alveo_frame_fifo: store-and-forward frame FIFO between the CMAC
// and lvsnic_core (one per direction, one clock: the CMAC's user clock).
//
// * The input is never back-pressured (the CMAC's RX AXI-Stream has no
//   tready). A frame that does not fit in the free space, or arrives while
//   the FIFO is full, is discarded whole and counted in `overflow`: the
//   write pointer rolls back to the last committed frame.
// * A frame whose `s_bad` is set on its last beat is discarded and counted
//   in `bad` (RX: the CMAC's FCS error flag, rx_axis_tuser; TX: the core's
//   abort bit m_axis_tx_tuser[32], docs/hardware.md §3.1), so an aborted
//   frame never reaches the wire.
// * The output only sees complete frames, so a frame leaves without gaps
//   (the CMAC's TX must not underrun inside a frame).
// `tuser` is taken from each frame's first beat and held for the frame.
`default_nettype none

module lvsnic_alveo_frame_fifo #(
    parameter integer DATA_WIDTH = 512,
    parameter integer USER_WIDTH = 32,
    // 2^DEPTH_LOG2 beats; at 512 bits, 512 beats hold 32 KiB (three
    // 9014-byte frames).
    parameter integer DEPTH_LOG2 = 9
) (
    input  wire                       clk,
    input  wire                       rst,

    input  wire [DATA_WIDTH-1:0]      s_tdata,
    input  wire [DATA_WIDTH/8-1:0]    s_tkeep,
    input  wire                       s_tvalid,
    input  wire                       s_tlast,
    input  wire [USER_WIDTH-1:0]      s_tuser,
    input  wire                       s_bad,

    output wire [DATA_WIDTH-1:0]      m_tdata,
    output wire [DATA_WIDTH/8-1:0]    m_tkeep,
    output wire                       m_tvalid,
    input  wire                       m_tready,
    output wire                       m_tlast,
    output wire [USER_WIDTH-1:0]      m_tuser,

    // frames passed, discarded for `s_bad`, discarded for lack of space
    output logic [31:0]               frames,
    output logic [31:0]               bad,
    output logic [31:0]               overflow
);

    localparam integer KEEP_WIDTH = DATA_WIDTH / 8;
    localparam integer WORD       = 1 + USER_WIDTH + KEEP_WIDTH + DATA_WIDTH;
    localparam integer DEPTH      = 1 << DEPTH_LOG2;

    // ---- write side: wr_ptr (this frame so far), cm_ptr (committed)
    logic [DEPTH_LOG2:0]   wr_ptr, cm_ptr, rd_ptr;
    logic                  dropping;     // rest of this frame is discarded
    logic                  in_frame;     // a beat of this frame was seen
    logic [USER_WIDTH-1:0] user_q;       // first beat's tuser

    wire [DEPTH_LOG2:0] used  = wr_ptr - rd_ptr;
    wire                full  = used == DEPTH[DEPTH_LOG2:0];
    wire [USER_WIDTH-1:0] user_now = in_frame ? user_q : s_tuser;
    wire                store = s_tvalid && !dropping && !full;

    always_ff @(posedge clk) begin
        if (rst) begin
            wr_ptr   <= '0;
            cm_ptr   <= '0;
            dropping <= 1'b0;
            in_frame <= 1'b0;
            user_q   <= '0;
            frames   <= '0;
            bad      <= '0;
            overflow <= '0;
        end else if (s_tvalid) begin
            in_frame <= !s_tlast;
            if (!in_frame) user_q <= s_tuser;
            if (!store) begin
                // no room (or already dropping): discard the whole frame
                wr_ptr   <= cm_ptr;
                dropping <= !s_tlast;
                if (s_tlast) overflow <= overflow + 1'b1;
            end else if (s_tlast) begin
                if (s_bad) begin
                    wr_ptr <= cm_ptr;
                    bad    <= bad + 1'b1;
                end else begin
                    wr_ptr <= wr_ptr + 1'b1;
                    cm_ptr <= wr_ptr + 1'b1;
                    frames <= frames + 1'b1;
                end
            end else begin
                wr_ptr <= wr_ptr + 1'b1;
            end
        end
    end

    // ---- storage: block RAM, registered read (one cycle)
    wire                  rd_issue;
    wire [WORD-1:0]       rd_word;
    lvsnic_sdp_ram #(.WIDTH(WORD), .ADDR_WIDTH(DEPTH_LOG2), .OUT_REG(0)) u_mem (
        .clk   (clk),
        .we    (store),
        .waddr (wr_ptr[DEPTH_LOG2-1:0]),
        .wdata ({s_tlast, user_now, s_tkeep, s_tdata}),
        .re    (rd_issue),
        .raddr (rd_ptr[DEPTH_LOG2-1:0]),
        .oce   (1'b0),
        .rdata (rd_word)
    );

    // ---- read side: committed words stream into a 4-entry output queue;
    // a read is issued while the queue plus the read in flight has room.
    logic       rd_inflight;
    wire  [2:0] oq_count;
    wire        oq_valid;
    wire        oq_pop = oq_valid && m_tready;
    assign rd_issue = (cm_ptr != rd_ptr) && ({1'b0, oq_count} + {3'b0, rd_inflight} < 4'd4);

    always_ff @(posedge clk) begin
        if (rst) begin
            rd_ptr      <= '0;
            rd_inflight <= 1'b0;
        end else begin
            rd_inflight <= rd_issue;
            if (rd_issue) rd_ptr <= rd_ptr + 1'b1;
        end
    end

    wire [WORD-1:0] oq_data;
    lvsnic_fifo #(.WIDTH(WORD), .DEPTH_LOG2(2), .OREG(0)) u_outq (
        .clk       (clk),
        .rst       (rst),
        .flush     (1'b0),
        .in_valid  (rd_inflight),
        .in_data   (rd_word),
        .out_valid (oq_valid),
        .out_data  (oq_data),
        .out_pop   (oq_pop),
        .count     (oq_count)
    );

    assign m_tvalid = oq_valid;
    assign {m_tlast, m_tuser, m_tkeep, m_tdata} = oq_data;

endmodule

`default_nettype wire
