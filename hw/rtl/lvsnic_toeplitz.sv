// lvsnic_toeplitz: Toeplitz (Microsoft RSS) hash of a 96-bit input with a
// fixed 320-bit key, pipelined in two register stages.
//
// in_data[95] is the first bit (MSB of the first byte) of the hashed input;
// for lvsnic the input is source address | destination address | source
// port | destination port in network byte order (docs/hardware.md §4).
// Output bit m of the hash is the XOR of the input bits b for which key bit
// (b + 31 - m) (counted from the key's first bit) is set, so with a constant
// KEY the whole function is a set of fixed XOR trees: stage 1 XORs each
// 16-bit input chunk (<= 16 inputs: two LUT levels), stage 2 XORs the six
// chunk partials (one LUT level). Latency 2 cycles (registers advance on ce).
`default_nettype none

module lvsnic_toeplitz #(
    parameter logic [319:0] KEY = 320'h0
) (
    input  wire         clk,
    input  wire         ce,
    input  wire [95:0]  in_data,
    output logic [31:0] hash
);

    localparam integer CHUNKS = 6;   // 96 input bits / 16

    // term[m] selects, for output bit m, the input bits whose key window
    // covers it: input bit index i (in_data[i]) is stream bit b = 95 - i; the
    // key bit used is stream key bit (b + 31 - m) = KEY[319 - (b + 31 - m)].
    function automatic logic [95:0] key_mask(input integer m);
        logic [95:0] r;
        integer i;
        begin
            for (i = 0; i < 96; i = i + 1) begin
                r[i] = KEY[319 - ((95 - i) + 31 - m)];
            end
            key_mask = r;
        end
    endfunction

    logic [CHUNKS*32-1:0] part;

    genvar m, c;
    generate
        for (m = 0; m < 32; m = m + 1) begin : g_bit
            localparam logic [95:0] MASK = key_mask(m);
            for (c = 0; c < CHUNKS; c = c + 1) begin : g_chunk
                always_ff @(posedge clk) begin
                    if (ce) part[c*32 + m] <= ^(in_data[c*16 +: 16] & MASK[c*16 +: 16]);
                end
            end
        end
    endgenerate

    always_ff @(posedge clk) begin
        if (ce) hash <= part[0 +: 32] ^ part[32 +: 32] ^ part[64 +: 32]
                      ^ part[96 +: 32] ^ part[128 +: 32] ^ part[160 +: 32];
    end

endmodule

`default_nettype wire
