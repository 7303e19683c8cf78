// lvsnic_ingress: receive-side beat handling.
//
// Takes the (registered) s_axis_rx stream, already reduced to the beat with
// the bytes outside tkeep zeroed and its byte count (lvsnic_core does that
// before the input register slice), and, for every accepted beat:
//   * writes the beat to the frame buffer (one register stage later), with
//     `last`, the number of valid bytes of the beat and, on the last beat,
//     `short`: the frame is shorter than 14 + its IPv4 total length (bytes
//     16..17), or for an IPv6 frame (EtherType 0x86DD) 54 + its payload
//     length (bytes 18..19) (meaningful only for frames long enough to be
//     forwarded);
//   * captures the frame's first 74 bytes (zero-filled past the frame's end
//     and past the header) and pushes the header, the number of header
//     bytes present (min(frame length, HL)) and the first beat's tuser
//     (timestamp, sequence number) to the lookup pipeline on the beat that
//     holds byte HL - 1 or on the frame's last beat if that comes first; HL
//     is 74 for an IPv6 frame (Ethernet, the fixed IPv6 header, the fixed
//     TCP header) and 54 for every other (Ethernet, IPv4, TCP), so an IPv4
//     header leaves as early as before;
//   * pulses rx_frame on each frame's last beat (frames-received counter).
// A beat is accepted only when the frame buffer can take it and, if it
// completes a header, the lookup pipeline can take the header.
`default_nettype none

module lvsnic_ingress #(
    parameter integer DATA_WIDTH = 64,
    parameter integer KEEP_WIDTH = DATA_WIDTH/8,
    parameter integer IPV6       = 1          // 0: no frame is taken as IPv6 (54-byte headers only)
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
    output logic [591:0]            hdr_data,    // byte i at [8i+7:8i]
    output logic [6:0]              hdr_bytes,   // min(frame length, 54 or 74)
    output logic [63:0]             hdr_ts,
    output logic [31:0]             hdr_seq,

    output logic                    rx_frame
);

    localparam integer W         = KEEP_WIDTH;
    localparam integer LW        = $clog2(W);
    localparam integer HB4       = 54;                 // header bytes, IPv4 and others
    localparam integer HB        = 74;                 // header bytes, IPv6
    localparam integer HDR4_BEATS = (HB4 + W - 1) / W;
    localparam integer HDR_BEATS = (HB + W - 1) / W;
    localparam integer BIW       = $clog2(HDR_BEATS + 1);   // beat index width

    // beat index within the frame, saturating at HDR_BEATS (header done)
    logic [BIW-1:0]  beat_idx;
    logic [591:0]    cap;
    logic [63:0]     ts_r;
    logic [31:0]     seq_r;

    wire [LW-1:0]         cnt_m1 = s_cnt_m1;
    wire [DATA_WIDTH-1:0] kdata  = s_data;

    // the EtherType (bytes 12..13) is in this beat or an earlier one when
    // the IPv4 header is complete (byte 13 < 54)
    logic [591:0] merged;
    wire is6       = (IPV6 != 0) && ({merged[12*8 +: 8], merged[13*8 +: 8]} == 16'h86DD);
    // in the header until its family's last header beat has been taken
    // (the header is pushed exactly once)
    wire in_hdr    = (beat_idx < (is6 ? BIW'(HDR_BEATS) : BIW'(HDR4_BEATS)));
    wire hdr_done  = in_hdr && (s_last || beat_idx == (is6 ? BIW'(HDR_BEATS - 1) : BIW'(HDR4_BEATS - 1)));
    wire first     = (beat_idx == '0);

    assign s_ready = fb_ready && (!hdr_done || hdr_ready);   // fb_ready has one beat of margin
    wire   acc     = s_valid && s_ready;

    // merged header: bytes of earlier beats from the capture register, bytes
    // of this beat from the bus, bytes of later beats zero.
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
    // beat TLB (bytes 16..17; IPv6: 53 + the payload length of bytes 18..19,
    // in the same beat for every width, after the EtherType's).
    localparam integer TLB = 16 / W;
    generate
        if (18 / W != TLB || 12 / W > TLB) begin : g_tlb_check
            $error("lvsnic_ingress: the length fields must share a beat after the EtherType's");
            lvsnic_ingress_tlb_mismatch u_fail ();
        end
    endgenerate
    logic signed [18:0] rem_m1;
    wire  [15:0]        tl_now = {kdata[8*(16 % W) +: 8], kdata[8*(17 % W) +: 8]};
    wire  [15:0]        pl_now = {kdata[8*(18 % W) +: 8], kdata[8*(19 % W) +: 8]};
    wire  signed [18:0] rem_here = (beat_idx == BIW'(TLB))
                                   ? (is6 ? 19'sd53 + $signed({3'b0, pl_now}) : 19'sd13 + $signed({3'b0, tl_now}))
                                     - $signed(19'(TLB * W))
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
    assign hdr_data  = is6 ? merged : {160'h0, merged[8*HB4-1:0]};   // 54 bytes unless IPv6
    wire [LW+BIW:0] hb_fam = is6 ? (LW+BIW+1)'(HB) : (LW+BIW+1)'(HB4);
    assign hdr_bytes = (s_last && bytes_here < hb_fam) ? bytes_here[6:0] : hb_fam[6:0];
    assign hdr_ts    = first ? s_user[63:0]  : ts_r;
    assign hdr_seq   = first ? s_user[95:64] : seq_r;

    assign rx_frame  = acc && s_last;

endmodule

`default_nettype wire
