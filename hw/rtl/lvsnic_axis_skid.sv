// lvsnic_axis_skid: full-throughput valid/ready register slice (skid buffer).
//
// Registers both the forward path (valid/payload) and the backward path
// (ready): s_ready is a flip-flop output, so long combinational ready chains
// are cut. Two payload registers (output and skid); one transfer per cycle
// in steady state. The payload is an opaque vector of WIDTH bits.
`default_nettype none

module lvsnic_axis_skid #(
    parameter integer WIDTH = 8
) (
    input  wire              clk,
    input  wire              rst,

    input  wire              s_valid,
    output logic             s_ready,
    input  wire [WIDTH-1:0]  s_data,

    output logic             m_valid,
    input  wire              m_ready,
    output logic [WIDTH-1:0] m_data
);

    logic             skid_valid;
    logic [WIDTH-1:0] skid_data;

    // Accept into the output register when it is empty or being drained,
    // otherwise into the skid register. s_ready drops only when the skid
    // register is occupied.
    always_ff @(posedge clk) begin
        if (rst) begin
            m_valid    <= 1'b0;
            skid_valid <= 1'b0;
            s_ready    <= 1'b1;
        end else begin
            if (skid_valid) begin
                if (m_ready) begin
                    // output drained: move skid -> output, reopen input
                    m_valid    <= 1'b1;
                    skid_valid <= 1'b0;
                    s_ready    <= 1'b1;
                end
            end else if (s_valid && s_ready) begin
                if (m_ready || !m_valid) begin
                    m_valid <= 1'b1;
                end else begin
                    skid_valid <= 1'b1;
                    s_ready    <= 1'b0;
                end
            end else if (m_ready) begin
                m_valid <= 1'b0;
            end
        end
    end

    // Payload registers have no reset (allows SRL/LUT-free mapping).
    always_ff @(posedge clk) begin
        if (skid_valid) begin
            if (m_ready) m_data <= skid_data;
        end else if (s_valid && s_ready) begin
            if (m_ready || !m_valid) m_data <= s_data;
            else                     skid_data <= s_data;
        end
    end

endmodule

`default_nettype wire
