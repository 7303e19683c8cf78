// tb_csum: test wrapper with one lvsnic_ip_csum and one lvsnic_l4_csum.
`default_nettype none
module tb_csum (
    input  wire          clk,
    input  wire          ce,
    input  wire [159:0]  hdr,
    output logic [15:0]  ip_csum,
    input  wire [15:0]   old_csum,
    input  wire [15:0]   delta,
    input  wire          is_udp,
    output logic [15:0]  l4_csum
);
    lvsnic_ip_csum u_ip (.clk(clk), .ce(ce), .hdr(hdr), .csum(ip_csum));
    lvsnic_l4_csum u_l4 (.clk(clk), .ce(ce), .old_csum(old_csum), .delta(delta),
                         .is_udp(is_udp), .new_csum(l4_csum));
endmodule
`default_nettype wire
