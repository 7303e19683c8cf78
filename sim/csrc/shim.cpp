// extern "C" shim around one verilated lvsnic_core model.
//
// This file is compiled once per model through a wrapper that build.rs
// generates, which first defines:
//   LVSNIC_MODEL          the Verilated class, e.g. Vcore64
//   LVSNIC_MODEL_H        its header, e.g. "Vcore64.h"
//   LVSNIC_FN(name)       the exported name, e.g. lvsnic_sim64_##name
//   LVSNIC_DATA_WIDTH     the model's DATA_WIDTH
//   LVSNIC_HAS_AWPROT, LVSNIC_HAS_ARPROT  1 when the RTL has the optional
//                         AXI-Lite s_axil_awprot / s_axil_arprot inputs
//
// Rules: one VerilatedContext per model; the context is made the thread's
// current one around every call (so $stop etc. land in the right context and
// a model may move between threads); no C++ exception crosses the boundary;
// after an error the model is marked dead and refuses further work.
#include LVSNIC_MODEL_H

#include "hooks.h"
#include "lvsnic_shim.h"
#include "verilated.h"
#include "verilated_fst_c.h"

#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <type_traits>

namespace {

struct Model {
    std::unique_ptr<VerilatedContext> ctx;
    std::unique_ptr<LVSNIC_MODEL> top;
    std::unique_ptr<VerilatedFstC> fst;
    std::string last_error;
    bool dead = false;
};

// ---- port copies between Verilator's types and arrays of u32 words ----
// Scalar ports (CData/SData/IData/QData): at most 64 bits.
template <std::size_t CAP, typename T>
inline void put_port(T& port, const uint32_t (&w)[CAP]) {
    static_assert(std::is_integral<T>::value, "scalar port expected");
    if constexpr (sizeof(T) <= 4) {
        port = static_cast<T>(w[0]);
    } else {
        static_assert(CAP >= 2, "port wider than its array");
        port = static_cast<T>(static_cast<uint64_t>(w[0]) | (static_cast<uint64_t>(w[1]) << 32));
    }
}
template <std::size_t CAP, std::size_t N>
inline void put_port(VlWide<N>& port, const uint32_t (&w)[CAP]) {
    static_assert(N <= CAP, "port wider than its array");
    for (std::size_t i = 0; i < N; ++i) port[i] = w[i];
}
template <std::size_t CAP, typename T>
inline void get_port(const T& port, uint32_t (&w)[CAP]) {
    static_assert(std::is_integral<T>::value, "scalar port expected");
    if constexpr (sizeof(T) <= 4) {
        w[0] = static_cast<uint32_t>(port);
    } else {
        static_assert(CAP >= 2, "port wider than its array");
        w[0] = static_cast<uint32_t>(static_cast<uint64_t>(port));
        w[1] = static_cast<uint32_t>(static_cast<uint64_t>(port) >> 32);
    }
}
template <std::size_t CAP, std::size_t N>
inline void get_port(const VlWide<N>& port, uint32_t (&w)[CAP]) {
    static_assert(N <= CAP, "port wider than its array");
    for (std::size_t i = 0; i < N; ++i) w[i] = port[i];
}
// Scalar ports of at most 64 bits from/to u64 (tkeep, addresses, strobes).
template <typename T>
inline void put_u64(T& port, uint64_t v) {
    static_assert(std::is_integral<T>::value, "tkeep/addr must be scalar");
    port = static_cast<T>(v);
}
template <typename T>
inline uint64_t get_u64(const T& port) {
    static_assert(std::is_integral<T>::value, "tkeep/addr must be scalar");
    return static_cast<uint64_t>(port);
}

void set_inputs(LVSNIC_MODEL& t, const LvsnicInputs& in) {
    t.rst = in.rst;

    put_port(t.s_axis_rx_tdata, in.rx_tdata);
    put_u64(t.s_axis_rx_tkeep, in.rx_tkeep);
    t.s_axis_rx_tvalid = in.rx_tvalid;
    t.s_axis_rx_tlast = in.rx_tlast;
    put_port(t.s_axis_rx_tuser, in.rx_tuser);

    t.m_axis_tx_tready = in.tx_tready;
    t.m_axis_host_tready = in.host_tready;

    put_port(t.s_axis_inject_tdata, in.inject_tdata);
    put_u64(t.s_axis_inject_tkeep, in.inject_tkeep);
    t.s_axis_inject_tvalid = in.inject_tvalid;
    t.s_axis_inject_tlast = in.inject_tlast;
    put_u64(t.s_axis_inject_tuser, in.inject_tuser);

    put_u64(t.s_axil_awaddr, in.axil_awaddr);
#if LVSNIC_HAS_AWPROT
    t.s_axil_awprot = in.axil_awprot;
#endif
    t.s_axil_awvalid = in.axil_awvalid;
    put_u64(t.s_axil_wdata, in.axil_wdata);
    t.s_axil_wstrb = in.axil_wstrb;
    t.s_axil_wvalid = in.axil_wvalid;
    t.s_axil_bready = in.axil_bready;
    put_u64(t.s_axil_araddr, in.axil_araddr);
#if LVSNIC_HAS_ARPROT
    t.s_axil_arprot = in.axil_arprot;
#endif
    t.s_axil_arvalid = in.axil_arvalid;
    t.s_axil_rready = in.axil_rready;
}

void get_outputs(const LVSNIC_MODEL& t, LvsnicOutputs& out) {
    out.rx_tready = t.s_axis_rx_tready;
    out.inject_tready = t.s_axis_inject_tready;

    get_port(t.m_axis_tx_tdata, out.tx_tdata);
    out.tx_tkeep = get_u64(t.m_axis_tx_tkeep);
    out.tx_tvalid = t.m_axis_tx_tvalid;
    out.tx_tlast = t.m_axis_tx_tlast;
    get_port(t.m_axis_tx_tuser, out.tx_tuser);

    get_port(t.m_axis_host_tdata, out.host_tdata);
    out.host_tkeep = get_u64(t.m_axis_host_tkeep);
    out.host_tvalid = t.m_axis_host_tvalid;
    out.host_tlast = t.m_axis_host_tlast;
    get_port(t.m_axis_host_tuser, out.host_tuser);

    out.axil_awready = t.s_axil_awready;
    out.axil_wready = t.s_axil_wready;
    out.axil_bresp = t.s_axil_bresp;
    out.axil_bvalid = t.s_axil_bvalid;
    out.axil_arready = t.s_axil_arready;
    out.axil_rdata = static_cast<uint32_t>(t.s_axil_rdata);
    out.axil_rresp = t.s_axil_rresp;
    out.axil_rvalid = t.s_axil_rvalid;
}

// Runs `f` with the model's context current; turns $stop/$finish, runtime
// fatal errors and C++ exceptions into a status code and a message.
template <typename F>
int guarded(Model* m, F&& f) {
    if (!m) return LVSNIC_ERR_ARG;
    if (m->dead) return LVSNIC_ERR_DEAD;
    Verilated::threadContextp(m->ctx.get());
    lvsnic::g_stop_pending = false;
    int rc = LVSNIC_OK;
    try {
        f();
        if (lvsnic::g_stop_pending) {
            m->last_error = lvsnic::g_stop_msg;
            rc = LVSNIC_ERR_STOP;
        } else if (m->ctx->gotFinish()) {
            m->last_error = "the RTL executed $finish";
            rc = LVSNIC_ERR_FINISH;
        }
    } catch (const lvsnic::FatalError& e) {
        m->last_error = e.msg;
        rc = LVSNIC_ERR_FATAL;
    } catch (const std::exception& e) {
        m->last_error = e.what();
        rc = LVSNIC_ERR_EXCEPTION;
    } catch (...) {
        m->last_error = "unknown C++ exception";
        rc = LVSNIC_ERR_EXCEPTION;
    }
    lvsnic::g_stop_pending = false;
    if (rc != LVSNIC_OK) m->dead = true;
    return rc;
}

}  // namespace

extern "C" {

// The model's DATA_WIDTH (a build-consistency check for the Rust side).
uint32_t LVSNIC_FN(data_width)(void) { return LVSNIC_DATA_WIDTH; }

// sizeof(LvsnicInputs) << 16 | sizeof(LvsnicOutputs): the Rust side checks
// its #[repr(C)] mirrors against these before any other call.
uint32_t LVSNIC_FN(abi_sizes)(void) {
    return static_cast<uint32_t>(sizeof(LvsnicInputs) << 16 | sizeof(LvsnicOutputs));
}

// A new model with its own context, inputs all 0, clk 0, not yet evaluated.
// Null on failure (out of memory, runtime error at construction).
void* LVSNIC_FN(create)(void) {
    Model* m = nullptr;
    try {
        m = new Model();
        m->ctx.reset(new VerilatedContext());
        m->ctx->fatalOnError(false);  // $stop/$fatal: report, do not exit
        m->ctx->randReset(0);         // deterministic initial values (all 0)
        m->ctx->traceEverOn(true);    // FST can be opened at any time
        Verilated::threadContextp(m->ctx.get());
        lvsnic::g_stop_pending = false;
        m->top.reset(new LVSNIC_MODEL(m->ctx.get(), "lvsnic_core"));
        m->top->clk = 0;
        if (lvsnic::g_stop_pending) throw lvsnic::FatalError(lvsnic::g_stop_msg);
    } catch (...) {
        lvsnic::g_stop_pending = false;
        delete m;  // no exception escapes: members' destructors do not throw
        return nullptr;
    }
    return m;
}

void LVSNIC_FN(destroy)(void* h) {
    Model* m = static_cast<Model*>(h);
    if (!m) return;
    Verilated::threadContextp(m->ctx.get());
    try {
        if (m->fst) m->fst->close();
    } catch (...) {
    }
    try {
        if (m->top && !m->dead) m->top->final();
    } catch (...) {
    }
    lvsnic::g_stop_pending = false;
    m->fst.reset();
    m->top.reset();
    m->ctx.reset();
    delete m;
}

int LVSNIC_FN(set_inputs)(void* h, const LvsnicInputs* in) {
    Model* m = static_cast<Model*>(h);
    if (!in) return LVSNIC_ERR_ARG;
    return guarded(m, [&] { set_inputs(*m->top, *in); });
}

int LVSNIC_FN(get_outputs)(void* h, LvsnicOutputs* out) {
    Model* m = static_cast<Model*>(h);
    if (!out) return LVSNIC_ERR_ARG;
    return guarded(m, [&] { get_outputs(*m->top, *out); });
}

int LVSNIC_FN(set_clk)(void* h, uint8_t clk) {
    Model* m = static_cast<Model*>(h);
    return guarded(m, [&] { m->top->clk = clk ? 1 : 0; });
}

int LVSNIC_FN(eval)(void* h) {
    Model* m = static_cast<Model*>(h);
    return guarded(m, [&] { m->top->eval(); });
}

// One clock cycle (the recipe of TOOLCHAIN.md): apply `in` with clk=0, eval,
// dump at `t_low`, sample every output into `out` (the caller decides the
// handshakes on these values), clk=1, eval, dump at `t_high`.
int LVSNIC_FN(cycle)(void* h, const LvsnicInputs* in, LvsnicOutputs* out, uint64_t t_low,
                     uint64_t t_high) {
    Model* m = static_cast<Model*>(h);
    if (!in || !out) return LVSNIC_ERR_ARG;
    return guarded(m, [&] {
        LVSNIC_MODEL& t = *m->top;
        set_inputs(t, *in);
        t.clk = 0;
        t.eval();
        if (m->fst) m->fst->dump(t_low);
        get_outputs(t, *out);
        t.clk = 1;
        t.eval();
        if (m->fst) m->fst->dump(t_high);
    });
}

// Opens an FST dump of the whole hierarchy at `path` (replacing an open one).
int LVSNIC_FN(trace_open)(void* h, const char* path) {
    Model* m = static_cast<Model*>(h);
    if (!path) return LVSNIC_ERR_ARG;
    return guarded(m, [&] {
        if (m->fst) {
            m->fst->close();
            m->fst.reset();
        }
        std::unique_ptr<VerilatedFstC> f(new VerilatedFstC());
        m->top->trace(f.get(), 99);
        f->open(path);
        m->fst = std::move(f);
    });
}

int LVSNIC_FN(trace_dump)(void* h, uint64_t time) {
    Model* m = static_cast<Model*>(h);
    return guarded(m, [&] {
        if (m->fst) m->fst->dump(time);
    });
}

int LVSNIC_FN(trace_flush)(void* h) {
    Model* m = static_cast<Model*>(h);
    return guarded(m, [&] {
        if (m->fst) m->fst->flush();
    });
}

int LVSNIC_FN(trace_close)(void* h) {
    Model* m = static_cast<Model*>(h);
    return guarded(m, [&] {
        if (m->fst) {
            m->fst->close();
            m->fst.reset();
        }
    });
}

// Copies the last error message (NUL-terminated, truncated to `len`) and
// returns its full length.
size_t LVSNIC_FN(last_error)(void* h, char* buf, size_t len) {
    Model* m = static_cast<Model*>(h);
    if (!m) return 0;
    const std::string& e = m->last_error;
    if (buf && len > 0) {
        const size_t n = e.size() < len - 1 ? e.size() : len - 1;
        std::memcpy(buf, e.data(), n);
        buf[n] = '\0';
    }
    return e.size();
}

}  // extern "C"
