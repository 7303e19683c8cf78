// lvsnic_l4_csum: NAT incremental TCP/UDP checksum update (docs/hardware.md
// §4, RFC 1624 eqn. 3 as Linux IPVS evaluates it):
//
//   new = ~fold16(0xFFFF + (~old & 0xFFFF) + l4_delta)
//
// where fold16 adds the carries back twice; for UDP a result of 0 is sent as
// 0xFFFF. Three register stages (sum, first fold, second fold + complement
// + UDP fix-up); registers advance on ce.
`default_nettype none

module lvsnic_l4_csum (
    input  wire          clk,
    input  wire          ce,
    input  wire [15:0]   old_csum,
    input  wire [15:0]   delta,
    input  wire          is_udp,
    output logic [15:0]  new_csum
);

    logic [17:0] s;       // <= 3 * 0xFFFF
    logic        udp1, udp2;
    logic [16:0] f1;

    always_ff @(posedge clk) begin
        if (ce) begin
            s    <= 18'h0FFFF + {2'b0, ~old_csum} + {2'b0, delta};
            udp1 <= is_udp;
        end
    end

    always_ff @(posedge clk) begin
        if (ce) begin
            f1   <= {1'b0, s[15:0]} + {15'b0, s[17:16]};
            udp2 <= udp1;
        end
    end

    wire [15:0] f2 = f1[15:0] + {15'b0, f1[16]};
    wire [15:0] r  = ~f2;

    always_ff @(posedge clk) begin
        if (ce) new_csum <= (udp2 && r == 16'h0000) ? 16'hFFFF : r;
    end

endmodule

`default_nettype wire
