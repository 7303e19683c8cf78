// C ABI between the verilated lvsnic_core models and Rust (sim/src/ffi.rs).
// The two structs are mirrored there with #[repr(C)]; keep them in sync.
// Wide ports are little-endian arrays of 32-bit words (word 0 = bits 31:0),
// sized for the widest model (DATA_WIDTH 512); a narrower model uses the
// first words only. Every value must be clean: no bits set above the port
// width (the Rust side guarantees it).
#ifndef LVSNIC_SHIM_H
#define LVSNIC_SHIM_H

#include <stddef.h>
#include <stdint.h>

#define LVSNIC_DATA_WORDS 16 /* 512-bit tdata */
#define LVSNIC_RX_TUSER_WORDS 3 /* 96 bits */
#define LVSNIC_TX_TUSER_WORDS 2 /* 33 bits */
#define LVSNIC_HOST_TUSER_WORDS 5 /* 160 bits */

/* Status codes returned by the shim functions. */
#define LVSNIC_OK 0
#define LVSNIC_ERR_STOP 1      /* the RTL ran $stop, $fatal or $error */
#define LVSNIC_ERR_FINISH 2    /* the RTL ran $finish */
#define LVSNIC_ERR_FATAL 3     /* the Verilator runtime reported a fatal error */
#define LVSNIC_ERR_EXCEPTION 4 /* a C++ exception (e.g. out of memory) */
#define LVSNIC_ERR_ARG 5       /* null handle or argument */
#define LVSNIC_ERR_DEAD 6      /* an earlier error left the model unusable */

#ifdef __cplusplus
extern "C" {
#endif

/* Every input port of lvsnic_core except clk. */
typedef struct LvsnicInputs {
    uint32_t rx_tdata[LVSNIC_DATA_WORDS];
    uint32_t inject_tdata[LVSNIC_DATA_WORDS];
    uint64_t rx_tkeep;
    uint64_t inject_tkeep;
    uint32_t rx_tuser[LVSNIC_RX_TUSER_WORDS];
    uint32_t inject_tuser;
    uint32_t axil_awaddr;
    uint32_t axil_wdata;
    uint32_t axil_araddr;
    uint8_t rst;
    uint8_t rx_tvalid;
    uint8_t rx_tlast;
    uint8_t inject_tvalid;
    uint8_t inject_tlast;
    uint8_t tx_tready;
    uint8_t host_tready;
    uint8_t axil_awprot;
    uint8_t axil_awvalid;
    uint8_t axil_wstrb;
    uint8_t axil_wvalid;
    uint8_t axil_bready;
    uint8_t axil_arprot;
    uint8_t axil_arvalid;
    uint8_t axil_rready;
} LvsnicInputs;

/* Every output port of lvsnic_core. */
typedef struct LvsnicOutputs {
    uint32_t tx_tdata[LVSNIC_DATA_WORDS];
    uint32_t host_tdata[LVSNIC_DATA_WORDS];
    uint64_t tx_tkeep;
    uint64_t host_tkeep;
    uint32_t tx_tuser[LVSNIC_TX_TUSER_WORDS];
    uint32_t host_tuser[LVSNIC_HOST_TUSER_WORDS];
    uint32_t axil_rdata;
    uint8_t rx_tready;
    uint8_t inject_tready;
    uint8_t tx_tvalid;
    uint8_t tx_tlast;
    uint8_t host_tvalid;
    uint8_t host_tlast;
    uint8_t axil_awready;
    uint8_t axil_wready;
    uint8_t axil_bresp;
    uint8_t axil_bvalid;
    uint8_t axil_arready;
    uint8_t axil_rresp;
    uint8_t axil_rvalid;
} LvsnicOutputs;

#ifdef __cplusplus
}
#endif

#endif
