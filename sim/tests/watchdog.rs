//! The harness never hangs and reports bad input as typed errors.

mod common;

use common::*;
use lvsnic_sim::{
    Core, CoreConfig, Frame, Limits, Pattern, Port, RtlFailure, SimError, Tuser, Width,
};

#[test]
fn stalled_sink_fires_the_watchdog() {
    for w in Width::ALL {
        let mut core = Core::new(w).unwrap();
        core.host().set_pattern(Pattern::never());
        for i in 0..100 {
            core.rx().push_bytes(&[0xAB; 1000], rx_user(i)).unwrap();
        }
        let err = core.run_until_idle(10_000_000).unwrap_err();
        match &err {
            SimError::Stalled { idle, detail, .. } => {
                assert!(*idle >= core.limits().stall_cycles);
                assert!(
                    detail.contains("m_axis_host: tvalid high, tready low"),
                    "{detail}"
                );
            }
            e => panic!("expected Stalled, got {e}"),
        }
        // one line
        assert!(!err.to_string().contains('\n'));
        // well before the cycle budget: the watchdog, not the budget, ended it
        assert!(core.cycle() < 100_000);
    }
}

#[test]
fn stall_after_the_sources_drained() {
    // Everything is inside the core, the sink never takes it: still a stall.
    let mut core = Core::new(Width::W64).unwrap();
    core.tx().set_pattern(Pattern::never());
    core.inject().push_bytes(&[1, 2, 3], Tuser::ZERO).unwrap();
    let mut limits = core.limits();
    limits.stall_cycles = 500;
    core.set_limits(limits);
    assert!(matches!(
        core.run_until_idle(1_000_000),
        Err(SimError::Stalled { .. })
    ));
}

#[test]
fn cycle_budget_is_a_timeout() {
    let mut core = Core::new(Width::W64).unwrap();
    core.rx().push_bytes(&vec![0u8; 9000], rx_user(0)).unwrap();
    let start = core.cycle();
    assert!(matches!(
        core.run_until_idle(100),
        Err(SimError::Timeout { cycles: 100, .. })
    ));
    assert_eq!(core.cycle() - start, 100);
}

#[test]
fn idle_core_returns_after_the_idle_window() {
    let config = CoreConfig {
        limits: Limits {
            idle_cycles: 10,
            ..Limits::default()
        },
        trace: None,
    };
    let mut core = Core::with_config(Width::W512, config).unwrap();
    assert_eq!(core.run_until_idle(1000).unwrap(), 10);
}

#[test]
fn bad_frames_are_errors() {
    let mut core = Core::new(Width::W64).unwrap();
    assert_eq!(
        core.rx().push(Frame::new(Vec::new(), Tuser::ZERO)),
        Err(SimError::EmptyFrame { port: Port::Rx })
    );
    let wide = Tuser::ZERO.with_field(96, 1, 1);
    assert_eq!(
        core.rx().push_bytes(&[1], wide),
        Err(SimError::TuserTooWide {
            port: Port::Rx,
            bits: 96
        })
    );
    let wide = Tuser::ZERO.with_field(32, 1, 1);
    assert_eq!(
        core.inject().push_bytes(&[1], wide),
        Err(SimError::TuserTooWide {
            port: Port::Inject,
            bits: 32
        })
    );
    assert_eq!(core.rx().pending(), 0);
}

#[test]
fn rtl_stop_is_an_error_not_an_exit() {
    if !is_stub() {
        return; // the $stop trigger exists only in the stand-in RTL
    }
    let mut core = Core::new(Width::W64).unwrap();
    let err = core.write(0xFFC, 0xDEAD_0057).unwrap_err();
    match &err {
        SimError::Rtl {
            kind: RtlFailure::Stop,
            msg,
            ..
        } => assert!(msg.contains("lvsnic_core.sv"), "{msg}"),
        e => panic!("expected Rtl/Stop, got {e}"),
    }
    assert!(matches!(core.step(), Err(SimError::Dead { .. })));
    assert!(matches!(core.read(0), Err(SimError::Dead { .. })));
    // other cores are unaffected
    let mut other = Core::new(Width::W64).unwrap();
    assert_eq!(other.read(0).unwrap(), 0x4C56_534E);
}

#[test]
fn cores_can_move_between_threads() {
    let mut core = Core::new(Width::W64).unwrap();
    core.rx().push_bytes(&[9; 99], rx_user(0)).unwrap();
    let mut core = std::thread::spawn(move || {
        core.run_until_idle(10_000).unwrap();
        core
    })
    .join()
    .unwrap();
    assert_eq!(core.host().pop().unwrap().data, vec![9; 99]);
}
