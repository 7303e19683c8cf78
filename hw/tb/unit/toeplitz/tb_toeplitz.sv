// tb_toeplitz: test wrapper around lvsnic_toeplitz with the two keys of
// docs/hardware.md §4 (way 0: RSS default key, way 1: rotated by 16 bytes),
// IN_BITS 96 (IPv4 input) or 288 (IPv6 input).
`default_nettype none
module tb_toeplitz #(
    parameter integer IN_BITS = 96
) (
    input  wire         clk,
    input  wire         ce,
    input  wire [IN_BITS-1:0] in_data,
    output logic [31:0] hash0,
    output logic [31:0] hash1
);
    lvsnic_toeplitz #(.IN_BITS(IN_BITS), .KEY(320'h6d5a56da_255b0ec2_4167253d_43a38fb0_d0ca2bcb_ae7b30b4_77cb2da3_8030f20c_6a42b73b_beac01fa))
        u0 (.clk(clk), .ce(ce), .in_data(in_data), .hash(hash0));
    lvsnic_toeplitz #(.IN_BITS(IN_BITS), .KEY(320'hd0ca2bcb_ae7b30b4_77cb2da3_8030f20c_6a42b73b_beac01fa_6d5a56da_255b0ec2_4167253d_43a38fb0))
        u1 (.clk(clk), .ce(ce), .in_data(in_data), .hash(hash1));
endmodule
`default_nettype wire
