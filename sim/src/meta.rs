//! `tuser` values: a raw 160-bit vector and the typed layouts of
//! docs/hardware.md §2 and §5.

use std::fmt;

use lvsnic_regmap::host_meta::*;

/// A `tuser` value of up to 160 bits, little-endian 32-bit words
/// (word 0 = bits 31:0), as on the wire.
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Tuser {
    words: [u32; Tuser::WORDS],
}

impl Tuser {
    /// Words held (160 bits, the widest `tuser`).
    pub const WORDS: usize = 5;
    /// Bits held.
    pub const BITS: u32 = 160;
    /// All bits 0.
    pub const ZERO: Tuser = Tuser {
        words: [0; Tuser::WORDS],
    };

    /// From words, word 0 = bits 31:0; words past the 5th are ignored.
    pub fn from_words(words: &[u32]) -> Tuser {
        let mut t = Tuser::ZERO;
        for (d, s) in t.words.iter_mut().zip(words) {
            *d = *s;
        }
        t
    }

    /// From the low 128 bits.
    pub const fn from_u128(v: u128) -> Tuser {
        Tuser {
            words: [
                v as u32,
                (v >> 32) as u32,
                (v >> 64) as u32,
                (v >> 96) as u32,
                0,
            ],
        }
    }

    /// The words, word 0 = bits 31:0.
    pub const fn words(&self) -> [u32; Tuser::WORDS] {
        self.words
    }

    /// Bit `i` (false past bit 159).
    pub fn bit(&self, i: u32) -> bool {
        i < Self::BITS && (self.words[(i / 32) as usize] >> (i % 32)) & 1 == 1
    }

    /// Bits `[lo + width - 1 : lo]`, `width` ≤ 64 (bits past 159 read as 0).
    pub fn field(&self, lo: u32, width: u32) -> u64 {
        let width = width.min(64);
        let mut v = 0u64;
        for i in 0..width {
            if self.bit(lo + i) {
                v |= 1 << i;
            }
        }
        v
    }

    /// This value with bits `[lo + width - 1 : lo]` replaced by the low bits
    /// of `value` (`width` ≤ 64; bits past 159 are dropped).
    pub fn with_field(mut self, lo: u32, width: u32, value: u64) -> Tuser {
        for i in 0..width.min(64) {
            let b = lo + i;
            if b >= Self::BITS {
                break;
            }
            let (w, s) = ((b / 32) as usize, b % 32);
            self.words[w] = (self.words[w] & !(1 << s)) | ((((value >> i) & 1) as u32) << s);
        }
        self
    }

    /// Width of the value: index of the highest set bit + 1 (0 for zero).
    pub fn significant_bits(&self) -> u32 {
        for w in (0..Self::WORDS).rev() {
            if self.words[w] != 0 {
                return 32 * w as u32 + 32 - self.words[w].leading_zeros();
            }
        }
        0
    }

    /// This value with every bit at or above `bits` cleared.
    pub fn masked(mut self, bits: u32) -> Tuser {
        for (w, word) in self.words.iter_mut().enumerate() {
            let lo = 32 * w as u32;
            if bits <= lo {
                *word = 0;
            } else if bits < lo + 32 {
                *word &= (1u32 << (bits - lo)) - 1;
            }
        }
        self
    }
}

impl fmt::Debug for Tuser {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Tuser(0x")?;
        for w in self.words.iter().rev() {
            write!(f, "{w:08x}")?;
        }
        write!(f, ")")
    }
}

/// `s_axis_rx_tuser` (96 bits): `[63:0]` ingress timestamp, `[95:64]` sequence.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct RxUser {
    /// Ingress timestamp (ns).
    pub timestamp: u64,
    /// Sequence number.
    pub seq: u32,
}

impl RxUser {
    /// The raw value.
    pub fn to_tuser(self) -> Tuser {
        Tuser::ZERO
            .with_field(0, 64, self.timestamp)
            .with_field(64, 32, self.seq.into())
    }
    /// Decodes a raw value (bits above 95 ignored).
    pub fn from_tuser(t: &Tuser) -> RxUser {
        RxUser {
            timestamp: t.field(0, 64),
            seq: t.field(64, 32) as u32,
        }
    }
}

impl From<RxUser> for Tuser {
    fn from(u: RxUser) -> Tuser {
        u.to_tuser()
    }
}

/// `s_axis_inject_tuser` (32 bits): the sequence number.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct InjectUser {
    /// Sequence number (copied to `m_axis_tx_tuser`).
    pub seq: u32,
}

impl InjectUser {
    /// The raw value.
    pub fn to_tuser(self) -> Tuser {
        Tuser::ZERO.with_field(0, 32, self.seq.into())
    }
    /// Decodes a raw value.
    pub fn from_tuser(t: &Tuser) -> InjectUser {
        InjectUser {
            seq: t.field(0, 32) as u32,
        }
    }
}

impl From<InjectUser> for Tuser {
    fn from(u: InjectUser) -> Tuser {
        u.to_tuser()
    }
}

/// `m_axis_tx_tuser` (33 bits): `[31:0]` sequence, `[32]` abort.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct TxUser {
    /// Sequence number of the frame that caused it.
    pub seq: u32,
    /// The MAC must discard the frame (meaningful on the last beat, §3.1).
    pub abort: bool,
}

impl TxUser {
    /// The raw value.
    pub fn to_tuser(self) -> Tuser {
        Tuser::ZERO
            .with_field(0, 32, self.seq.into())
            .with_field(32, 1, self.abort.into())
    }
    /// Decodes a raw value.
    pub fn from_tuser(t: &Tuser) -> TxUser {
        TxUser {
            seq: t.field(0, 32) as u32,
            abort: t.bit(32),
        }
    }
}

/// `m_axis_host_tuser` (160 bits, §5).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct HostUser {
    /// `[7:0]` reason code ([`Reason`](crate::Reason); raw, so a wrong value shows).
    pub reason: u8,
    /// `[8]` a flow entry matched.
    pub hit: bool,
    /// `[9]` the destination is a valid VIP.
    pub vip: bool,
    /// `[31:10]` reserved: must be 0.
    pub reserved: u32,
    /// `[63:32]` Toeplitz hash of way 0 (0 unless classification reached row 12).
    pub hash: u32,
    /// `[95:64]` sequence number from `s_axis_rx_tuser`.
    pub seq: u32,
    /// `[159:96]` ingress timestamp.
    pub timestamp: u64,
}

impl HostUser {
    /// The raw value (`reserved` truncated to its 22 bits).
    pub fn to_tuser(self) -> Tuser {
        Tuser::ZERO
            .with_field(REASON_LSB, REASON_WIDTH, self.reason.into())
            .with_field(HIT_LSB, HIT_WIDTH, self.hit.into())
            .with_field(VIP_LSB, VIP_WIDTH, self.vip.into())
            .with_field(RESERVED_LSB, RESERVED_WIDTH, self.reserved.into())
            .with_field(HASH_0_LSB, HASH_0_WIDTH, self.hash.into())
            .with_field(SEQ_LSB, SEQ_WIDTH, self.seq.into())
            .with_field(TS_LSB, TS_WIDTH, self.timestamp)
    }
    /// Decodes a raw value.
    pub fn from_tuser(t: &Tuser) -> HostUser {
        HostUser {
            reason: t.field(REASON_LSB, REASON_WIDTH) as u8,
            hit: t.bit(HIT_LSB),
            vip: t.bit(VIP_LSB),
            reserved: t.field(RESERVED_LSB, RESERVED_WIDTH) as u32,
            hash: t.field(HASH_0_LSB, HASH_0_WIDTH) as u32,
            seq: t.field(SEQ_LSB, SEQ_WIDTH) as u32,
            timestamp: t.field(TS_LSB, TS_WIDTH),
        }
    }
}

/// `[31:10]` of `m_axis_host_tuser`: the reserved bits of word 0, above the last defined one.
const RESERVED_LSB: u32 = VIP_LSB + VIP_WIDTH;
const RESERVED_WIDTH: u32 = 32 - RESERVED_LSB;
