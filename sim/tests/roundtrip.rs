//! Frames of every length cross the core byte-exactly at both widths, with
//! their tuser fields intact (rx -> host, inject -> tx).

mod common;

use common::*;
use lvsnic_sim::{Core, Width};

fn roundtrip(width: Width, lengths: &[usize], seed: u64) {
    let mut core = Core::new(width).expect("model");
    let mut rng = Rng::new(seed);
    let mut rx_frames = Vec::new();
    let mut inj_frames = Vec::new();
    for (i, &len) in lengths.iter().enumerate() {
        let i = i as u32;
        let rx = rng.bytes(len);
        let inj = rng.bytes(len);
        core.rx().push_bytes(&rx, rx_user(i)).expect("push rx");
        core.inject()
            .push_bytes(&inj, inject_user(i))
            .expect("push inject");
        rx_frames.push(rx);
        inj_frames.push(inj);
    }
    core.run_until_idle(50_000_000).expect("drains");
    let host = core.host().take();
    let tx = core.tx().take();
    assert_eq!(host.len(), lengths.len(), "{width}: host frame count");
    assert_eq!(tx.len(), lengths.len(), "{width}: tx frame count");
    for (i, (got, data)) in host.iter().zip(&rx_frames).enumerate() {
        check_host(
            got,
            data,
            rx_user(i as u32),
            &format!("{width} host frame {i} ({} bytes)", data.len()),
        );
    }
    for (i, (got, data)) in tx.iter().zip(&inj_frames).enumerate() {
        check_tx(
            got,
            data,
            inject_user(i as u32),
            &format!("{width} tx frame {i} ({} bytes)", data.len()),
        );
    }
    // Timing records: one per frame, in order, beats counted.
    let sent = core.rx().take_sent();
    assert_eq!(sent.len(), lengths.len());
    for (k, s) in sent.iter().enumerate() {
        assert_eq!(s.id, k as u64);
        assert_eq!(s.len, lengths[k]);
        assert!(s.last_beat >= s.first_beat);
        assert!(host[k].first_beat > s.first_beat, "output after input");
        assert!(host[k].latency_from(s).is_some());
    }
    let beats: u64 = lengths
        .iter()
        .map(|&l| l.div_ceil(width.bytes()) as u64)
        .sum();
    assert_eq!(core.rx().beats(), beats);
    assert_eq!(core.host().beats(), beats);
    assert_eq!(core.inject().beats(), beats);
    assert_eq!(core.tx().beats(), beats);
}

#[test]
fn lengths_1_to_2000_w64() {
    let lengths: Vec<usize> = (1..=2000).collect();
    roundtrip(Width::W64, &lengths, 1);
}

#[test]
fn lengths_1_to_2000_w512() {
    let lengths: Vec<usize> = (1..=2000).collect();
    roundtrip(Width::W512, &lengths, 2);
}

#[test]
fn jumbo_frames_both_widths() {
    let lengths = [9000, 1, 9001, 8999, 64, 9000, 9018];
    for w in Width::ALL {
        roundtrip(w, &lengths, 3);
    }
}

#[test]
fn tuser_extremes_survive() {
    use lvsnic_sim::{HostUser, InjectUser, RxUser, TxUser};
    for w in Width::ALL {
        let mut core = Core::new(w).unwrap();
        let users = [
            RxUser {
                timestamp: 0,
                seq: 0,
            },
            RxUser {
                timestamp: u64::MAX,
                seq: u32::MAX,
            },
            RxUser {
                timestamp: 0x0123_4567_89AB_CDEF,
                seq: 0xFEDC_BA98,
            },
        ];
        for (k, u) in users.iter().enumerate() {
            core.rx().push_bytes(&vec![k as u8; 100 + k], *u).unwrap();
            core.inject()
                .push_bytes(&[0x55; 3], InjectUser { seq: u.seq })
                .unwrap();
        }
        core.run_until_idle(100_000).unwrap();
        for u in users {
            let h = core.host().pop().unwrap();
            let m = HostUser::from_tuser(&h.tuser);
            assert_eq!(
                (m.seq, m.timestamp, m.hash, m.reserved, m.hit, m.vip),
                (u.seq, u.timestamp, 0, 0, false, false)
            );
            assert_eq!(m.reason, reset_reason());
            let t = core.tx().pop().unwrap();
            assert_eq!(
                TxUser::from_tuser(&t.tuser),
                TxUser {
                    seq: u.seq,
                    abort: false
                }
            );
        }
    }
}
