// File list of the stand-in lvsnic_core (harness tests only).
// Paths are relative to this file's directory.
lvsnic_core.vlt
stub_axis_fifo.sv
lvsnic_core.sv
