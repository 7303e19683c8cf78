// Port stubs of the UltraScale+ primitives used by the generated top
// (UG974). No behaviour: lint only.
`default_nettype none
// one file holds several modules, named as the vendor names them
/* verilator lint_off DECLFILENAME */
/* verilator lint_off UNUSEDSIGNAL */
/* verilator lint_off UNUSEDPARAM */

module IBUFDS #(parameter DIFF_TERM = "FALSE", parameter IOSTANDARD = "DEFAULT") (
    input  wire I,
    input  wire IB,
    output wire O
);
    assign O = 1'b0;
endmodule

module IBUFDS_GTE4 #(
    parameter [0:0] REFCLK_EN_TX_PATH  = 1'b0,
    parameter [1:0] REFCLK_HROW_CK_SEL = 2'b00,
    parameter [1:0] REFCLK_ICNTL_RX    = 2'b00
) (
    input  wire I,
    input  wire IB,
    input  wire CEB,
    output wire O,
    output wire ODIV2
);
    assign O = 1'b0;
    assign ODIV2 = 1'b0;
endmodule

module BUFG (
    input  wire I,
    output wire O
);
    assign O = 1'b0;
endmodule

module BUFG_GT (
    input  wire       I,
    input  wire       CE,
    input  wire       CEMASK,
    input  wire       CLR,
    input  wire       CLRMASK,
    input  wire [2:0] DIV,
    output wire       O
);
    assign O = 1'b0;
endmodule

module MMCME4_BASE #(
    parameter real    CLKIN1_PERIOD    = 0.0,
    parameter real    CLKFBOUT_MULT_F  = 5.0,
    parameter integer DIVCLK_DIVIDE    = 1,
    parameter real    CLKOUT0_DIVIDE_F = 1.0,
    parameter integer CLKOUT1_DIVIDE   = 1,
    parameter string  BANDWIDTH        = "OPTIMIZED"
) (
    input  wire CLKIN1,
    input  wire CLKFBIN,
    input  wire RST,
    input  wire PWRDWN,
    output wire CLKFBOUT,
    output wire CLKFBOUTB,
    output wire CLKOUT0,
    output wire CLKOUT0B,
    output wire CLKOUT1,
    output wire CLKOUT1B,
    output wire CLKOUT2,
    output wire CLKOUT2B,
    output wire CLKOUT3,
    output wire CLKOUT3B,
    output wire CLKOUT4,
    output wire CLKOUT5,
    output wire CLKOUT6,
    output wire LOCKED
);
    assign {CLKFBOUT, CLKFBOUTB, CLKOUT0, CLKOUT0B, CLKOUT1, CLKOUT1B, CLKOUT2, CLKOUT2B,
            CLKOUT3, CLKOUT3B, CLKOUT4, CLKOUT5, CLKOUT6, LOCKED} = '0;
endmodule

/* verilator lint_on UNUSEDPARAM */
/* verilator lint_on UNUSEDSIGNAL */
`default_nettype wire
