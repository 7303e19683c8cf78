//! FST traces on request.

mod common;

use common::*;
use lvsnic_sim::{Core, CoreConfig, SimError, Width};
use std::path::PathBuf;

fn tmp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("lvsnic-sim-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

/// An FST file starts with a header block: type 0 (FST_BL_HDR), then its
/// 64-bit big-endian length 329.
fn assert_fst(path: &PathBuf) {
    let bytes = std::fs::read(path).unwrap();
    assert!(
        bytes.len() > 329,
        "{}: {} bytes",
        path.display(),
        bytes.len()
    );
    assert_eq!(bytes[0], 0, "header block type");
    assert_eq!(
        u64::from_be_bytes(bytes[1..9].try_into().unwrap()),
        329,
        "header length"
    );
}

#[test]
fn fst_dump_on_request() {
    for w in Width::ALL {
        let path = tmp(&format!("core{}.fst", w.bits()));
        let mut core = Core::new(w).unwrap();
        core.enable_trace(&path).unwrap();
        assert_eq!(core.trace_path(), Some(path.as_path()));
        for i in 0..10 {
            core.rx().push_bytes(&[i as u8; 200], rx_user(i)).unwrap();
        }
        core.run_until_idle(100_000).unwrap();
        core.disable_trace().unwrap();
        assert_fst(&path);
        // traffic still works after the trace is closed
        core.rx().push_bytes(&[1; 10], rx_user(99)).unwrap();
        core.run_until_idle(10_000).unwrap();
        assert_eq!(core.host().len(), 11);
        let _ = std::fs::remove_file(&path);
    }
}

#[test]
fn fst_from_cycle_zero_closed_on_drop() {
    let path = tmp("from-zero.fst");
    {
        let mut core = Core::with_config(
            Width::W64,
            CoreConfig {
                trace: Some(path.clone()),
                ..CoreConfig::default()
            },
        )
        .unwrap();
        assert_eq!(core.read(0).unwrap(), 0x4C56_534E);
    }
    assert_fst(&path);
    let _ = std::fs::remove_file(&path);
}

#[test]
fn bad_trace_path_is_an_error() {
    let mut core = Core::new(Width::W64).unwrap();
    let err = core.enable_trace("/nonexistent-dir/x/y.fst").unwrap_err();
    assert!(matches!(err, SimError::Trace { .. }), "{err}");
    assert!(core.trace_path().is_none());
    assert_eq!(core.read(0).unwrap(), 0x4C56_534E);
}
