// lvsnic_toeplitz: Toeplitz (Microsoft RSS) hash of an IN_BITS-bit input
// (96: IPv4, 288: IPv6) with a fixed 320-bit key, pipelined in two register
// stages.
//
// in_data[IN_BITS-1] is the first bit (MSB of the first byte) of the hashed
// input; for lvsnic the input is source address | destination address |
// source port | destination port in network byte order (docs/hardware.md
// §4). With 288 input bits stage 2 XORs 18 partials (two LUT levels).
// Output bit m of the hash is the XOR of the input bits b for which key bit
// (b + 31 - m) (counted from the key's first bit) is set, so with a constant
// KEY the whole function is a set of fixed XOR trees: stage 1 XORs each
// 16-bit input chunk (<= 16 inputs: two LUT levels), stage 2 XORs the six
// chunk partials (one LUT level). Latency 2 cycles (registers advance on ce).
`default_nettype none

module lvsnic_toeplitz #(
    parameter logic [319:0] KEY     = 320'h0,
    parameter integer       IN_BITS = 96      // input bits: a multiple of 16, at most 288
) (
    input  wire                clk,
    input  wire                ce,
    input  wire [IN_BITS-1:0]  in_data,
    output logic [31:0]        hash
);

    localparam integer CHUNKS = IN_BITS / 16;

    generate
        if (IN_BITS % 16 != 0 || IN_BITS < 16 || IN_BITS + 31 > 320) begin : g_param_check
            $error("lvsnic_toeplitz: IN_BITS must be a multiple of 16 in 16..289 (the key covers input + 31 bits)");
            lvsnic_toeplitz_bad_in_bits u_fail ();
        end
    endgenerate

    // term[m] selects, for output bit m, the input bits whose key window
    // covers it: input bit index i (in_data[i]) is stream bit b = IN_BITS-1 - i; the
    // key bit used is stream key bit (b + 31 - m) = KEY[319 - (b + 31 - m)].
    function automatic logic [IN_BITS-1:0] key_mask(input integer m);
        logic [IN_BITS-1:0] r;
        integer i;
        begin
            for (i = 0; i < IN_BITS; i = i + 1) begin
                r[i] = KEY[319 - ((IN_BITS - 1 - i) + 31 - m)];
            end
            key_mask = r;
        end
    endfunction

    logic [CHUNKS*32-1:0] part;

    genvar m, c;
    generate
        for (m = 0; m < 32; m = m + 1) begin : g_bit
            localparam logic [IN_BITS-1:0] MASK = key_mask(m);
            for (c = 0; c < CHUNKS; c = c + 1) begin : g_chunk
                always_ff @(posedge clk) begin
                    if (ce) part[c*32 + m] <= ^(in_data[c*16 +: 16] & MASK[c*16 +: 16]);
                end
            end
        end
    endgenerate

    logic [31:0] sum;
    always_comb begin
        sum = '0;
        for (int k = 0; k < CHUNKS; k++) sum = sum ^ part[k*32 +: 32];
    end
    always_ff @(posedge clk) begin
        if (ce) hash <= sum;
    end

endmodule

`default_nettype wire
