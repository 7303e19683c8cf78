// lvsnic_alveo_bar0: the card's BAR0 decoder (docs/hardware.md §8.2):
// byte addresses 0x800..0x8FF go to the DMA engine (port `dma`), every
// other address to lvsnic_core's AXI4-Lite port (`core`). One write and
// one read in flight at a time (register accesses from the host driver
// are single 32-bit reads and writes); the response comes from the port
// the address selected.
`default_nettype none

module lvsnic_alveo_bar0 #(
    parameter integer ADDR_WIDTH = 16
) (
    input  wire                   clk,
    input  wire                   rst,

    input  wire [ADDR_WIDTH-1:0]  s_awaddr,
    input  wire                   s_awvalid,
    output wire                   s_awready,
    input  wire [31:0]            s_wdata,
    input  wire [3:0]             s_wstrb,
    input  wire                   s_wvalid,
    output wire                   s_wready,
    output wire [1:0]             s_bresp,
    output wire                   s_bvalid,
    input  wire                   s_bready,
    input  wire [ADDR_WIDTH-1:0]  s_araddr,
    input  wire                   s_arvalid,
    output wire                   s_arready,
    output wire [31:0]            s_rdata,
    output wire [1:0]             s_rresp,
    output wire                   s_rvalid,
    input  wire                   s_rready,

    // [0] core, [1] DMA engine
    output wire [ADDR_WIDTH-1:0]  m_awaddr,
    output wire [1:0]             m_awvalid,
    input  wire [1:0]             m_awready,
    output wire [31:0]            m_wdata,
    output wire [3:0]             m_wstrb,
    output wire [1:0]             m_wvalid,
    input  wire [1:0]             m_wready,
    input  wire [3:0]             m_bresp,
    input  wire [1:0]             m_bvalid,
    output wire [1:0]             m_bready,
    output wire [ADDR_WIDTH-1:0]  m_araddr,
    output wire [1:0]             m_arvalid,
    input  wire [1:0]             m_arready,
    input  wire [63:0]            m_rdata,
    input  wire [3:0]             m_rresp,
    input  wire [1:0]             m_rvalid,
    output wire [1:0]             m_rready
);

    function automatic logic is_dma(input logic [ADDR_WIDTH-1:0] a);
        return (a >> 8) == ADDR_WIDTH'(8);
    endfunction

    // ---- writes: address accepted -> forwarded -> data forwarded -> response
    logic                  w_active, aw_pend, w_pend, w_sel;
    logic [ADDR_WIDTH-1:0] w_addr;
    assign s_awready = !w_active;
    assign m_awaddr  = w_addr;
    assign m_awvalid = {w_active && aw_pend && w_sel, w_active && aw_pend && !w_sel};
    assign m_wdata   = s_wdata;
    assign m_wstrb   = s_wstrb;
    assign m_wvalid  = {w_active && w_pend && s_wvalid && w_sel,
                        w_active && w_pend && s_wvalid && !w_sel};
    assign s_wready  = w_active && w_pend && m_wready[w_sel];
    wire   w_done    = w_active && !aw_pend && !w_pend;
    assign s_bvalid  = w_done && m_bvalid[w_sel];
    assign s_bresp   = w_sel ? m_bresp[3:2] : m_bresp[1:0];
    assign m_bready  = {w_done && w_sel && s_bready, w_done && !w_sel && s_bready};

    always_ff @(posedge clk) begin
        if (rst) begin
            w_active <= 1'b0;
            aw_pend  <= 1'b0;
            w_pend   <= 1'b0;
            w_sel    <= 1'b0;
            w_addr   <= '0;
        end else begin
            if (s_awvalid && s_awready) begin
                w_active <= 1'b1;
                aw_pend  <= 1'b1;
                w_pend   <= 1'b1;
                w_sel    <= is_dma(s_awaddr);
                w_addr   <= s_awaddr;
            end
            if (aw_pend && m_awready[w_sel]) aw_pend <= 1'b0;
            if (s_wvalid && s_wready) w_pend <= 1'b0;
            if (s_bvalid && s_bready) w_active <= 1'b0;
        end
    end

    // ---- reads: address accepted -> forwarded -> data
    logic                  r_active, ar_pend, r_sel;
    logic [ADDR_WIDTH-1:0] r_addr;
    assign s_arready = !r_active;
    assign m_araddr  = r_addr;
    assign m_arvalid = {r_active && ar_pend && r_sel, r_active && ar_pend && !r_sel};
    wire   r_wait    = r_active && !ar_pend;
    assign s_rvalid  = r_wait && m_rvalid[r_sel];
    assign s_rdata   = r_sel ? m_rdata[63:32] : m_rdata[31:0];
    assign s_rresp   = r_sel ? m_rresp[3:2] : m_rresp[1:0];
    assign m_rready  = {r_wait && r_sel && s_rready, r_wait && !r_sel && s_rready};

    always_ff @(posedge clk) begin
        if (rst) begin
            r_active <= 1'b0;
            ar_pend  <= 1'b0;
            r_sel    <= 1'b0;
            r_addr   <= '0;
        end else begin
            if (s_arvalid && s_arready) begin
                r_active <= 1'b1;
                ar_pend  <= 1'b1;
                r_sel    <= is_dma(s_araddr);
                r_addr   <= s_araddr;
            end
            if (ar_pend && m_arready[r_sel]) ar_pend <= 1'b0;
            if (s_rvalid && s_rready) r_active <= 1'b0;
        end
    end

endmodule

`default_nettype wire
