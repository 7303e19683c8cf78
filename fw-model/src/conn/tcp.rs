//! IPVS TCP connection states, transitions and timeouts
//! (`net/netfilter/ipvs/ip_vs_proto_tcp.c`: `tcp_states[]`,
//! `tcp_states_dos[]`, `tcp_timeouts[]`, `tcp_state_active_table[]`,
//! `set_tcp_state`).

use crate::time::{secs, Time};

/// `enum ip_vs_tcp_states` (include/net/ip_vs.h).
pub mod state {
    /// `IP_VS_TCP_S_NONE`: a new entry, no segment processed yet.
    pub const NONE: u8 = 0;
    /// `IP_VS_TCP_S_ESTABLISHED`: an ACK seen after the SYN (handshake done).
    pub const ESTABLISHED: u8 = 1;
    /// `IP_VS_TCP_S_SYN_SENT`: a SYN seen in the output direction (from the
    /// real server) first.
    pub const SYN_SENT: u8 = 2;
    /// `IP_VS_TCP_S_SYN_RECV`: the client's SYN seen, no ACK yet.
    pub const SYN_RECV: u8 = 3;
    /// `IP_VS_TCP_S_FIN_WAIT`: established, then a FIN from the real server
    /// (or, input-only, from the client).
    pub const FIN_WAIT: u8 = 4;
    /// `IP_VS_TCP_S_TIME_WAIT`: closing, the second FIN seen.
    pub const TIME_WAIT: u8 = 5;
    /// `IP_VS_TCP_S_CLOSE`: closed, mostly by an RST.
    pub const CLOSE: u8 = 6;
    /// `IP_VS_TCP_S_CLOSE_WAIT`: established, then a FIN from the client
    /// (with replies seen).
    pub const CLOSE_WAIT: u8 = 7;
    /// `IP_VS_TCP_S_LAST_ACK`: kept for the kernel's numbering; the tables
    /// never enter it from another state.
    pub const LAST_ACK: u8 = 8;
    /// `IP_VS_TCP_S_LISTEN`: kept for the kernel's numbering; the tables
    /// never enter it from another state.
    pub const LISTEN: u8 = 9;
    /// `IP_VS_TCP_S_SYNACK`: with `secure_tcp` only (`tcp_states_dos`): the
    /// real server answered the SYN, or, input-only, a client SYN.
    pub const SYNACK: u8 = 10;
    /// `IP_VS_TCP_S_LAST`
    pub const LAST: u8 = 11;
}

/// Number of TCP states (`IP_VS_TCP_S_LAST`).
pub const TCP_STATES: usize = state::LAST as usize;

/// State names as `/proc/net/ip_vs_conn` and `ipvsadm -L -c` print them
/// (`tcp_state_name_table`).
pub const STATE_NAMES: [&str; TCP_STATES] = [
    "NONE",
    "ESTABLISHED",
    "SYN_SENT",
    "SYN_RECV",
    "FIN_WAIT",
    "TIME_WAIT",
    "CLOSE",
    "CLOSE_WAIT",
    "LAST_ACK",
    "LISTEN",
    "SYNACK",
];

/// `tcp_state_active_table`: states counted in `activeconns`.
pub fn is_active(s: u8) -> bool {
    matches!(s, state::ESTABLISHED | state::SYN_SENT | state::SYN_RECV | state::SYNACK)
}

/// Packet direction (`IP_VS_DIR_INPUT` / `IP_VS_DIR_OUTPUT`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// Client → real server.
    Input,
    /// Real server → client (seen by the director for NAT only).
    Output,
}

use state::*;
const ES: u8 = ESTABLISHED;
const SS: u8 = SYN_SENT;
const SR: u8 = SYN_RECV;
const FW: u8 = FIN_WAIT;
const TW: u8 = TIME_WAIT;
const CL: u8 = CLOSE;
const CW: u8 = CLOSE_WAIT;
const LA: u8 = LAST_ACK;
const LI: u8 = LISTEN;
const SA: u8 = SYNACK;

type Row = [u8; TCP_STATES];

/// `tcp_states[]`: rows INPUT(syn fin ack rst), OUTPUT(...), INPUT_ONLY(...).
const TCP_STATES_NORMAL: [Row; 12] = [
    // INPUT
    /*syn*/ [SR, ES, ES, SR, SR, SR, SR, SR, SR, SR, SR],
    /*fin*/ [CL, CW, SS, TW, TW, TW, CL, CW, LA, LI, TW],
    /*ack*/ [ES, ES, SS, ES, FW, TW, CL, CW, CL, LI, ES],
    /*rst*/ [CL, CL, CL, SR, CL, CL, CL, CL, LA, LI, SR],
    // OUTPUT
    /*syn*/ [SS, ES, SS, SR, SS, SS, SS, SS, SS, LI, SR],
    /*fin*/ [TW, FW, SS, TW, FW, TW, CL, TW, LA, LI, TW],
    /*ack*/ [ES, ES, SS, ES, FW, TW, CL, CW, LA, ES, ES],
    /*rst*/ [CL, CL, SS, CL, CL, TW, CL, CL, CL, CL, CL],
    // INPUT-ONLY
    /*syn*/ [SR, ES, ES, SR, SR, SR, SR, SR, SR, SR, SR],
    /*fin*/ [CL, FW, SS, TW, FW, TW, CL, CW, LA, LI, TW],
    /*ack*/ [ES, ES, SS, ES, FW, TW, CL, CW, CL, LI, ES],
    /*rst*/ [CL, CL, CL, SR, CL, CL, CL, CL, LA, LI, CL],
];

/// `tcp_states_dos[]` (used when `secure_tcp` is on).
const TCP_STATES_DOS: [Row; 12] = [
    // INPUT
    /*syn*/ [SR, ES, ES, SR, SR, SR, SR, SR, SR, SR, SA],
    /*fin*/ [CL, CW, SS, TW, TW, TW, CL, CW, LA, LI, SA],
    /*ack*/ [ES, ES, SS, SR, FW, TW, CL, CW, CL, LI, SA],
    /*rst*/ [CL, CL, CL, SR, CL, CL, CL, CL, LA, LI, CL],
    // OUTPUT
    /*syn*/ [SS, ES, SS, SA, SS, SS, SS, SS, SS, LI, SA],
    /*fin*/ [TW, FW, SS, TW, TW, TW, CL, TW, LA, LI, TW],
    /*ack*/ [ES, ES, SS, ES, FW, TW, CL, CW, LA, ES, ES],
    /*rst*/ [CL, CL, SS, CL, CL, TW, CL, CL, CL, CL, CL],
    // INPUT-ONLY
    /*syn*/ [SA, ES, ES, SR, SA, SA, SA, SA, SA, SA, SA],
    /*fin*/ [CL, FW, SS, TW, FW, TW, CL, CW, LA, LI, TW],
    /*ack*/ [ES, ES, SS, ES, FW, TW, CL, CW, CL, LI, ES],
    /*rst*/ [CL, CL, CL, SR, CL, CL, CL, CL, LA, LI, CL],
];

/// Row offsets `tcp_state_off[]`: INPUT 0, OUTPUT 4, INPUT_ONLY 8.
const OFF_INPUT: usize = 0;
const OFF_OUTPUT: usize = 4;
const OFF_INPUT_ONLY: usize = 8;

/// `tcp_state_idx`: RST(3) > SYN(0) > FIN(1) > ACK(2); none of them → None.
pub fn state_idx(tcp_flags: u8) -> Option<usize> {
    const FIN: u8 = 0x01;
    const SYN: u8 = 0x02;
    const RST: u8 = 0x04;
    const ACK: u8 = 0x10;
    if tcp_flags & RST != 0 {
        Some(3)
    } else if tcp_flags & SYN != 0 {
        Some(0)
    } else if tcp_flags & FIN != 0 {
        Some(1)
    } else if tcp_flags & ACK != 0 {
        Some(2)
    } else {
        None
    }
}

/// Result of a TCP state transition (`set_tcp_state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transition {
    /// The state after the segment ([`state`]).
    pub new_state: u8,
    /// Whether the conn's `NOOUTPUT` flag must be cleared (first output
    /// packet of a conn that had it).
    pub clear_nooutput: bool,
}

/// The next state for a TCP segment with `tcp_flags` in `direction`, for a
/// conn in `cur` with `nooutput` (IP_VS_CONN_F_NOOUTPUT) set or not.
/// `secure_tcp` selects `tcp_states_dos`.
pub fn next_state(cur: u8, direction: Direction, nooutput: bool, tcp_flags: u8, secure_tcp: bool) -> Transition {
    let mut off = match direction {
        Direction::Input => OFF_INPUT,
        Direction::Output => OFF_OUTPUT,
    };
    let mut clear_nooutput = false;
    if nooutput {
        if off == OFF_OUTPUT {
            clear_nooutput = true;
        } else {
            off = OFF_INPUT_ONLY;
        }
    }
    let new_state = match state_idx(tcp_flags) {
        None => CLOSE,
        Some(idx) => {
            let table = if secure_tcp { &TCP_STATES_DOS } else { &TCP_STATES_NORMAL };
            let c = (cur as usize).min(TCP_STATES - 1);
            table[off + idx][c]
        }
    };
    Transition { new_state, clear_nooutput }
}

/// Per-state timeouts (`tcp_timeouts[]`), settable per director.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TcpTimeouts(pub [Time; TCP_STATES]);

impl Default for TcpTimeouts {
    /// Kernel defaults: NONE 2 s, ESTABLISHED 15 min, SYN_SENT 2 min,
    /// SYN_RECV 1 min, FIN_WAIT 2 min, TIME_WAIT 2 min, CLOSE 10 s,
    /// CLOSE_WAIT 60 s, LAST_ACK 30 s, LISTEN 2 min, SYNACK 2 min.
    fn default() -> Self {
        TcpTimeouts([
            secs(2),
            secs(15 * 60),
            secs(2 * 60),
            secs(60),
            secs(2 * 60),
            secs(2 * 60),
            secs(10),
            secs(60),
            secs(30),
            secs(2 * 60),
            secs(2 * 60),
        ])
    }
}

/// UDP timeout (`udp_timeouts[IP_VS_UDP_S_NORMAL]`, 5 min).
pub const UDP_DEFAULT_TIMEOUT: Time = 5 * 60 * crate::time::SEC;

#[cfg(test)]
mod tests {
    use super::*;

    const SYN: u8 = 0x02;
    const ACK: u8 = 0x10;
    const FIN: u8 = 0x01;
    const RST: u8 = 0x04;

    #[test]
    fn nat_handshake_and_close() {
        // Client SYN, server SYN+ACK (output), client ACK, data, FINs.
        let t = next_state(NONE, Direction::Input, false, SYN, false);
        assert_eq!(t.new_state, SYN_RECV);
        let t = next_state(SYN_RECV, Direction::Output, false, SYN | ACK, false);
        assert_eq!(t.new_state, SYN_RECV, "SYN wins over ACK in the OUTPUT syn row");
        let t = next_state(SYN_RECV, Direction::Input, false, ACK, false);
        assert_eq!(t.new_state, ESTABLISHED);
        let t = next_state(ESTABLISHED, Direction::Input, false, FIN | ACK, false);
        assert_eq!(t.new_state, CLOSE_WAIT);
        let t = next_state(CLOSE_WAIT, Direction::Output, false, FIN | ACK, false);
        assert_eq!(t.new_state, TIME_WAIT);
    }

    #[test]
    fn dr_uses_input_only_and_output_clears_flag() {
        let t = next_state(ESTABLISHED, Direction::Input, true, FIN | ACK, false);
        assert_eq!(t.new_state, FIN_WAIT, "INPUT_ONLY fin from ES goes to FW, not CW");
        assert!(!t.clear_nooutput);
        let t = next_state(ESTABLISHED, Direction::Output, true, ACK, false);
        assert!(t.clear_nooutput);
        assert_eq!(t.new_state, ESTABLISHED);
    }

    #[test]
    fn rst_has_priority_and_no_flags_means_close() {
        assert_eq!(next_state(ESTABLISHED, Direction::Input, false, RST | SYN | ACK, false).new_state, CLOSE);
        assert_eq!(next_state(ESTABLISHED, Direction::Input, false, 0, false).new_state, CLOSE);
        assert_eq!(next_state(SYNACK, Direction::Input, true, RST, false).new_state, CLOSE);
        assert_eq!(next_state(SYNACK, Direction::Input, false, RST, false).new_state, SYN_RECV);
    }

    #[test]
    fn secure_tcp_table_differs() {
        assert_eq!(next_state(SYN_RECV, Direction::Input, false, ACK, true).new_state, SYN_RECV);
        assert_eq!(next_state(SYN_RECV, Direction::Input, false, ACK, false).new_state, ESTABLISHED);
        assert_eq!(next_state(NONE, Direction::Input, true, SYN, true).new_state, SYNACK);
    }

    #[test]
    fn active_states() {
        let active: Vec<u8> = (0..state::LAST).filter(|&s| is_active(s)).collect();
        assert_eq!(active, vec![ESTABLISHED, SYN_SENT, SYN_RECV, SYNACK]);
    }
}
