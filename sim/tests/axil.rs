//! AXI-Lite accesses: identification and parameter registers, read/write
//! registers with strobes, counters, address checks.

mod common;

use common::*;
use lvsnic_sim::{Core, SimError, Width, ACTION_LOG2, FLOW_BUCKETS_LOG2, VIP_COUNT};

#[test]
fn id_version_caps() {
    for w in Width::ALL {
        let mut core = Core::new(w).unwrap();
        assert_eq!(core.read(0x000).unwrap(), 0x4C56_534E, "{w}: ID");
        assert_eq!(core.read(0x004).unwrap(), 0x0002_0000, "{w}: VERSION (register map 2.0)");
        let caps0 = core.read(0x008).unwrap();
        assert_eq!(caps0 & 0xFFFF, w.bits(), "{w}: CAPS0 DATA_WIDTH");
        assert_eq!((caps0 >> 16) & 0xFF, FLOW_BUCKETS_LOG2);
        assert_eq!(caps0 >> 24, ACTION_LOG2);
        let caps1 = core.read(0x00C).unwrap();
        assert_eq!(caps1 & 0xFF, 4, "slots per bucket");
        assert_eq!((caps1 >> 8) & 0xFF, 2, "ways");
        assert_eq!((caps1 >> 16) & 0xFF, VIP_COUNT);
    }
}

#[test]
fn reset_values_and_read_write() {
    for w in Width::ALL {
        let mut core = Core::new(w).unwrap();
        assert_eq!(
            core.read(0x010).unwrap(),
            0x2,
            "CTRL reset: enable 0, pmtu_disc 1"
        );
        assert_eq!(core.read(0x020).unwrap() & 0xFFFF, 1500, "MTU reset");
        core.write(0x014, 0x0203_0405).unwrap();
        core.write(0x018, 0x0000_0001).unwrap();
        core.write(0x01C, 0x0A00_0001).unwrap();
        assert_eq!(core.read(0x014).unwrap(), 0x0203_0405);
        assert_eq!(core.read(0x018).unwrap() & 0xFFFF, 0x0001);
        assert_eq!(core.read(0x01C).unwrap(), 0x0A00_0001);
        // byte strobes: only byte 1 changes
        core.write_strobe(0x01C, 0xFFFF_FFFF, 0b0010).unwrap();
        assert_eq!(core.read(0x01C).unwrap(), 0x0A00_FF01);
        // VIP table
        for i in 0..VIP_COUNT {
            core.write(0x100 + 4 * i, 0xC0A8_0000 | i).unwrap();
        }
        for i in 0..VIP_COUNT {
            assert_eq!(core.read(0x100 + 4 * i).unwrap(), 0xC0A8_0000 | i);
        }
        // a reset restores the reset values
        core.reset().unwrap();
        assert_eq!(core.read(0x01C).unwrap(), 0);
        assert_eq!(core.read(0x020).unwrap() & 0xFFFF, 1500);
    }
}

#[test]
fn counters_follow_traffic() {
    for w in Width::ALL {
        let mut core = Core::new(w).unwrap();
        for i in 0..37 {
            core.rx().push_bytes(&[1u8; 70], rx_user(i)).unwrap();
        }
        for i in 0..5 {
            core.inject()
                .push_bytes(&[2u8; 70], inject_user(i))
                .unwrap();
        }
        core.run_until_idle(100_000).unwrap();
        assert_eq!(core.read64(0x400).unwrap(), 37, "{w}: CNT[0] received");
        assert_eq!(core.read64(0x410).unwrap(), 37, "{w}: CNT[2] to host");
        assert_eq!(core.read64(0x418).unwrap(), 5, "{w}: CNT[3] injected");
    }
}

#[test]
fn register_access_while_streaming() {
    let mut core = Core::new(Width::W64).unwrap();
    for i in 0..50 {
        core.rx().push_bytes(&[i as u8; 500], rx_user(i)).unwrap();
    }
    core.run(20).unwrap();
    for k in 0..20u32 {
        core.write(0x024, k).unwrap();
        assert_eq!(core.read(0x024).unwrap(), k);
    }
    core.run_until_idle(100_000).unwrap();
    assert_eq!(core.host().len(), 50);
}

#[test]
fn bad_addresses_are_errors() {
    let mut core = Core::new(Width::W64).unwrap();
    assert!(matches!(
        core.read(0x002),
        Err(SimError::BadAddress { addr: 2, .. })
    ));
    assert!(matches!(
        core.write(0x1_0000, 0),
        Err(SimError::BadAddress { .. })
    ));
    // the core is still usable
    assert_eq!(core.read(0).unwrap(), 0x4C56_534E);
}
