// lvsnic_ip_csum: Internet checksum (RFC 1071) of a 20-byte IPv4 header,
// pipelined in three register stages.
//
// hdr is the header in network order: hdr[159:152] is header byte 0, i.e.
// 16-bit word w (0..9) is hdr[159-16w -: 16]. The output is
// ~fold(sum of the ten words): with the checksum field zeroed this is the
// checksum to store (ip_send_check); with the received checksum in place it
// is 0 exactly when the header verifies (fold == 0xFFFF).
// fold = end-around carry until the value fits 16 bits.
// Stages: (1) five pairwise sums, (2) the sum of the five, (3) two
// end-around-carry folds and the complement. Registers advance on ce.
`default_nettype none

module lvsnic_ip_csum (
    input  wire          clk,
    input  wire          ce,
    input  wire [159:0]  hdr,
    output logic [15:0]  csum
);

    logic [16:0] p [0:4];
    logic [19:0] s;

    always_ff @(posedge clk) begin
        if (ce) begin
            for (int i = 0; i < 5; i++) begin
                p[i] <= {1'b0, hdr[159 - 32*i -: 16]} + {1'b0, hdr[143 - 32*i -: 16]};
            end
        end
    end

    always_ff @(posedge clk) begin
        if (ce) s <= {3'b0, p[0]} + {3'b0, p[1]} + {3'b0, p[2]} + {3'b0, p[3]} + {3'b0, p[4]};
    end

    // s <= 10 * 0xFFFF < 2^20: s[15:0] + s[19:16] <= 0x1000E; second fold fits.
    wire [16:0] f1 = {1'b0, s[15:0]} + {13'b0, s[19:16]};
    wire [15:0] f2 = f1[15:0] + {15'b0, f1[16]};

    always_ff @(posedge clk) begin
        if (ce) csum <= ~f2;
    end

endmodule

`default_nettype wire
