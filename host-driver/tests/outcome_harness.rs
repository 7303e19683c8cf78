//! Shared by the device tests (included with `#[path]`): two replays of
//! the same input must transmit the same frames at the same times, hand the
//! same frames to the host and end with the same report and listing.

use lvsnic::replay::ReplayOutcome;

/// Asserts that `a` and `b` are the same outcome, frame by frame.
pub fn assert_same(a: &ReplayOutcome, b: &ReplayOutcome) {
    assert_eq!(a.tx.len(), b.tx.len(), "transmitted frame count");
    for (i, (x, y)) in a.tx.iter().zip(&b.tx).enumerate() {
        assert_eq!(x.ts_ns, y.ts_ns, "tx {i} timestamp");
        assert_eq!(x.data, y.data, "tx frame {i} differs");
    }
    assert_eq!(a.host.len(), b.host.len(), "host frame count");
    for (i, (x, y)) in a.host.iter().zip(&b.host).enumerate() {
        assert_eq!(x.data, y.data, "host frame {i} differs");
    }
    assert_eq!(a.report, b.report);
    assert_eq!(a.listing, b.listing);
}
