//! Helpers shared by the harness tests.
#![allow(dead_code)]

use lvsnic_sim::{HostUser, InjectUser, ReceivedFrame, Reason, RxUser, TxUser, RTL_FILELIST};

/// Whether the models were built from the stand-in RTL of testdata/stub_rtl.
pub fn is_stub() -> bool {
    RTL_FILELIST.ends_with("testdata/stub_rtl/lvsnic_core.f")
}

/// Reason an rx frame gets on the host port with the core as reset: the
/// stub reports MISS; the real core, with CTRL.enable = 0 after reset,
/// reports DISABLED.
pub fn reset_reason() -> u8 {
    if is_stub() {
        Reason::Miss as u8
    } else {
        Reason::Disabled as u8
    }
}

/// xorshift64*: deterministic test data.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next_u64() % n
    }
    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        (0..len).map(|_| self.next_u64() as u8).collect()
    }
}

/// An rx frame's tuser for frame number `i`: distinct, with high bits set.
pub fn rx_user(i: u32) -> RxUser {
    RxUser {
        timestamp: 0xF000_0000_0000_0000 | u64::from(i).wrapping_mul(0x1_0000_0001),
        seq: 0x8000_0000 ^ i,
    }
}

/// An inject frame's tuser for frame number `i`.
pub fn inject_user(i: u32) -> InjectUser {
    InjectUser {
        seq: 0xC000_0000 ^ i,
    }
}

/// Checks a host frame against the rx frame it came from.
pub fn check_host(got: &ReceivedFrame, data: &[u8], user: RxUser, what: &str) {
    assert_eq!(got.data.len(), data.len(), "{what}: length");
    assert!(got.data == data, "{what}: bytes differ");
    let m = HostUser::from_tuser(&got.tuser);
    let want = HostUser {
        reason: reset_reason(),
        seq: user.seq,
        timestamp: user.timestamp,
        ..HostUser::default()
    };
    assert_eq!(m, want, "{what}: host tuser");
    assert_eq!(
        got.tuser_last, got.tuser,
        "{what}: tuser held to the last beat"
    );
    assert!(got.last_beat >= got.first_beat, "{what}: timing");
}

/// Checks a tx frame against the inject frame it came from.
pub fn check_tx(got: &ReceivedFrame, data: &[u8], user: InjectUser, what: &str) {
    assert_eq!(got.data.len(), data.len(), "{what}: length");
    assert!(got.data == data, "{what}: bytes differ");
    assert_eq!(
        TxUser::from_tuser(&got.tuser),
        TxUser {
            seq: user.seq,
            abort: false
        },
        "{what}: tx tuser"
    );
    assert_eq!(
        TxUser::from_tuser(&got.tuser_last),
        TxUser {
            seq: user.seq,
            abort: false
        },
        "{what}: tx tuser (last)"
    );
}
