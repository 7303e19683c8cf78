// lvsnic_ingress: receive-side beat handling.
//
// Takes the (registered) s_axis_rx stream, already reduced to the beat with
// the bytes outside tkeep zeroed and its byte count (lvsnic_core does that
// before the input register slice), and, for every accepted beat:
//   * writes the beat to the frame buffer (one register stage later), with
//     `last`, the number of valid bytes of the beat and, on the last beat,
//     `short`: the frame is shorter than 14 + its IPv4 total length (bytes
//     16..17; meaningful only for frames long enough to be forwarded);
//   * captures the frame's first 54 bytes (zero-filled past the frame's end)
//     and, on the beat that holds byte 53 or on the frame's last beat if that
//     comes first, pushes the header, the number of header bytes present
//     (min(frame length, 54)) and the first beat's tuser (timestamp,
//     sequence number) to the lookup pipeline;
//   * pulses rx_frame on each frame's last beat (frames-received counter).
// A beat is accepted only when the frame buffer can take it and, if it
// completes a header, the lookup pipeline can take the header.
`default_nettype none

module lvsnic_ingress #(
    parameter integer DATA_WIDTH = 64,
    parameter integer KEEP_WIDTH = DATA_WIDTH/8
) (
    input  wire                     clk,
    input  wire                     rst,

    // input stream (from the rx register slice)
    input  wire                     s_valid,
    output logic                    s_ready,
    input  wire [DATA_WIDTH-1:0]    s_data,      // bytes outside tkeep are zero
    input  wire [$clog2(KEEP_WIDTH)-1:0] s_cnt_m1, // valid bytes - 1
    input  wire                     s_last,
    input  wire [95:0]              s_user,

    // frame buffer write port
    output logic                    fb_valid,
    input  wire                     fb_ready,
    output logic [DATA_WIDTH-1:0]   fb_data,
    output logic                    fb_last,
    output logic [$clog2(KEEP_WIDTH)-1:0] fb_cnt_m1,   // valid bytes - 1
    output logic                    fb_short,    // last beat: frame < 14 + total length

    // header to the lookup pipeline
    output logic                    hdr_valid,
    input  wire                     hdr_ready,
    output logic [431:0]            hdr_data,    // byte i at [8i+7:8i]
    output logic [5:0]              hdr_bytes,   // min(frame length, 54)
    output logic [63:0]             hdr_ts,
    output logic [31:0]             hdr_seq,

    output logic                    rx_frame
);

    localparam integer W         = KEEP_WIDTH;
    localparam integer LW        = $clog2(W);
    localparam integer HB        = 54;
    localparam integer HDR_BEATS = (HB + W - 1) / W;
    localparam integer BIW       = $clog2(HDR_BEATS + 1);   // beat index width

    // beat index within the frame, saturating at HDR_BEATS (header done)
    logic [BIW-1:0]  beat_idx;
    logic [431:0]    cap;
    logic [63:0]     ts_r;
    logic [31:0]     seq_r;

    wire [LW-1:0]         cnt_m1 = s_cnt_m1;
    wire [DATA_WIDTH-1:0] kdata  = s_data;

    wire in_hdr    = (beat_idx < BIW'(HDR_BEATS));
    wire hdr_done  = in_hdr && (s_last || beat_idx == BIW'(HDR_BEATS - 1));
    wire first     = (beat_idx == '0);

    assign s_ready = fb_ready && (!hdr_done || hdr_ready);   // fb_ready has one beat of margin
    wire   acc     = s_valid && s_ready;

    // merged header: bytes of earlier beats from the capture register, bytes
    // of this beat from the bus, bytes of later beats zero.
    logic [431:0] merged;
    always_comb begin
        for (int i = 0; i < HB; i++) begin
            if (BIW'(i / W) == beat_idx)     merged[8*i +: 8] = kdata[8*(i % W) +: 8];
            else if (BIW'(i / W) < beat_idx) merged[8*i +: 8] = cap[8*i +: 8];
            else                             merged[8*i +: 8] = 8'h00;
        end
    end

    // header bytes present: full 54 unless the frame ends inside the header
    wire [LW+BIW:0] bytes_here = {1'b0, beat_idx, {LW{1'b0}}} + {{(BIW+1){1'b0}}, cnt_m1}
                               + {{(LW+BIW){1'b0}}, 1'b1};

    always_ff @(posedge clk) begin
        if (rst) begin
            beat_idx <= '0;
        end else if (acc) begin
            if (s_last)      beat_idx <= '0;
            else if (in_hdr) beat_idx <= beat_idx + 1'b1;
        end
    end

    always_ff @(posedge clk) begin
        if (acc && in_hdr) cap <= merged;
        if (acc && first) begin
            ts_r  <= s_user[63:0];
            seq_r <= s_user[95:64];
        end
    end

    // short-frame flag: rem_m1 = 13 + total length - bytes before this beat
    // (signed, clamped at -1 once negative); the frame is short when its
    // last beat holds fewer than rem_m1 + 1 bytes. The total length is in
    // beat TLB (bytes 16..17).
    localparam integer TLB = 16 / W;
    logic signed [18:0] rem_m1;
    wire  [15:0]        tl_now = {kdata[8*(16 % W) +: 8], kdata[8*(17 % W) +: 8]};
    wire  signed [18:0] rem_here = (beat_idx == BIW'(TLB))
                                   ? 19'sd13 + $signed({3'b0, tl_now}) - $signed(19'(TLB * W))
                                   : rem_m1;
    logic               before_tl;   // total length not yet seen (flag irrelevant then)
    generate
        if (TLB == 0) begin : g_tl0
            assign before_tl = 1'b0;
        end else begin : g_tln
            assign before_tl = (beat_idx < BIW'(TLB));
        end
    endgenerate
    wire                short_here = before_tl || (rem_here > $signed({{(19-LW){1'b0}}, cnt_m1}));
    always_ff @(posedge clk) begin
        if (acc) begin
            if (rem_here < 0) rem_m1 <= -19'sd1;
            else              rem_m1 <= rem_here - $signed(19'(W));
        end
    end

    // frame buffer write, registered
    always_ff @(posedge clk) begin
        if (rst) fb_valid <= 1'b0;
        else     fb_valid <= acc;
        fb_data   <= kdata;
        fb_last   <= s_last;
        fb_cnt_m1 <= s_last ? cnt_m1 : {LW{1'b1}};
        fb_short  <= short_here;
    end

    assign hdr_valid = s_valid && s_ready && hdr_done;
    assign hdr_data  = merged;
    assign hdr_bytes = (s_last && bytes_here < (LW+BIW+1)'(HB)) ? bytes_here[5:0] : 6'd54;
    assign hdr_ts    = first ? s_user[63:0]  : ts_r;
    assign hdr_seq   = first ? s_user[95:64] : seq_r;

    assign rx_frame  = acc && s_last;

endmodule

`default_nettype wire
