// Shared between hooks.cpp and shim.cpp (C++ only): how Verilator's
// $stop/$fatal/$error and internal fatal errors reach the shim instead of
// ending the process.
#ifndef LVSNIC_HOOKS_H
#define LVSNIC_HOOKS_H

#include <exception>
#include <string>

namespace lvsnic {

// Thrown by our vl_fatal(): caught at the extern "C" boundary.
struct FatalError : std::exception {
    std::string msg;
    explicit FatalError(std::string m) : msg(std::move(m)) {}
    const char* what() const noexcept override { return msg.c_str(); }
};

// Set by our vl_stop() ($stop, $fatal, $error): checked after every eval.
// Thread-local because a model is evaluated on the caller's thread.
extern thread_local bool g_stop_pending;
extern thread_local std::string g_stop_msg;

}  // namespace lvsnic

#endif
