// Overrides of Verilator's user-definable error hooks (verilated.cpp is
// compiled with -DVL_USER_FATAL -DVL_USER_STOP). The defaults exit the whole
// process; a test harness must report the error instead.
#include "hooks.h"

#include "verilated.h"

#include <string>

namespace lvsnic {
thread_local bool g_stop_pending = false;
thread_local std::string g_stop_msg;
}  // namespace lvsnic

static std::string lvsnic_where(const char* filename, int linenum, const char* hier) {
    std::string s;
    if (filename && filename[0]) {
        s += filename;
        s += ":";
        s += std::to_string(linenum);
        s += ": ";
    }
    if (hier && hier[0]) {
        s += "(";
        s += hier;
        s += ") ";
    }
    return s;
}

// $stop, $fatal, $error (after the error limit): remember, keep simulating
// the current eval, report at the shim boundary.
void vl_stop(const char* filename, int linenum, const char* hier) VL_MT_UNSAFE {
    Verilated::threadContextp()->gotError(true);
    Verilated::threadContextp()->gotFinish(true);
    if (!lvsnic::g_stop_pending) {
        lvsnic::g_stop_pending = true;
        lvsnic::g_stop_msg = lvsnic_where(filename, linenum, hier) + "Verilog $stop/$fatal/$error";
    }
}

// Internal fatal errors of the runtime: unwind to the shim boundary.
void vl_fatal(const char* filename, int linenum, const char* hier, const char* msg) VL_MT_UNSAFE {
    Verilated::threadContextp()->gotError(true);
    Verilated::threadContextp()->gotFinish(true);
    throw lvsnic::FatalError(lvsnic_where(filename, linenum, hier) + (msg ? msg : "fatal error"));
}
