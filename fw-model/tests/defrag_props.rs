//! Reassembly properties: any order of a datagram's fragments rebuilds it
//! exactly; arbitrary fragment streams never panic, and every byte
//! buffered is released when the queues complete, fail or expire.

use lvsnic_model::defrag::{Defrag, DefragResult, DefragUser, FRAG_TIMEOUT};
use lvsnic_model::xmit;
use proptest::prelude::*;

/// An Ethernet frame with an IPv4 fragment: `data` at byte `offset` of
/// datagram `id` from 198.51.100.7 to 10.0.0.100.
fn frag(id: u16, offset: usize, mf: bool, data: &[u8]) -> Vec<u8> {
    let mut f = vec![0u8; 14];
    f[12] = 8;
    let tot = 20 + data.len();
    let fo = ((offset >> 3) as u16 & 0x1fff) | if mf { 0x2000 } else { 0 };
    f.extend_from_slice(&[0x45, 0, (tot >> 8) as u8, tot as u8, (id >> 8) as u8, id as u8]);
    f.extend_from_slice(&fo.to_be_bytes());
    f.extend_from_slice(&[64, 17, 0, 0, 198, 51, 100, 7, 10, 0, 0, 100]);
    f.extend_from_slice(data);
    xmit::ip_send_check(&mut f, 14);
    f
}

/// The unfragmented datagram the fragments came from.
fn whole(id: u16, data: &[u8]) -> Vec<u8> {
    frag(id, 0, false, data)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn any_order_rebuilds_the_datagram(
        len in 9usize..6000,
        cuts in proptest::collection::vec(1usize..200, 1..12),
        order in proptest::collection::vec(any::<u32>(), 12),
        seed in any::<u8>(),
    ) {
        let data: Vec<u8> = (0..len).map(|i| (i as u8).wrapping_mul(13).wrapping_add(seed)).collect();
        // Cut points on 8-byte boundaries strictly inside the data.
        let mut points: Vec<usize> = cuts.iter().map(|c| c * 8).filter(|&p| p < len).collect();
        points.sort_unstable();
        points.dedup();
        let mut bounds = vec![0];
        bounds.extend(points);
        bounds.push(len);
        let mut frags: Vec<Vec<u8>> = bounds
            .windows(2)
            .map(|w| frag(9, w[0], w[1] != len, &data[w[0]..w[1]]))
            .collect();
        prop_assume!(frags.len() > 1);
        // A permutation from `order`.
        let mut keyed: Vec<(u32, Vec<u8>)> = frags.drain(..).enumerate().map(|(i, f)| (order[i % order.len()].wrapping_add(i as u32), f)).collect();
        keyed.sort_by_key(|k| k.0);
        let mut d = Defrag::new();
        let n = keyed.len();
        for (i, (_, f)) in keyed.into_iter().enumerate() {
            match d.queue(0, &f, 14, DefragUser::LocalDeliver) {
                DefragResult::Queued => prop_assert!(i + 1 < n, "all in but not complete"),
                DefragResult::Complete(r) => {
                    prop_assert_eq!(i + 1, n, "complete early");
                    prop_assert_eq!(&r.frame, &whole(9, &data));
                    prop_assert_eq!(r.pieces, bounds.windows(2).map(|w| w[1] - w[0]).collect::<Vec<_>>());
                }
                DefragResult::Failed(e) => prop_assert!(false, "{:?}", e),
            }
        }
        prop_assert_eq!(d.memory_bytes(), 0);
        prop_assert!(d.is_empty());
    }

    #[test]
    fn arbitrary_fragments_never_panic_and_memory_is_released(
        frags in proptest::collection::vec((0u16..4, 0usize..9000, any::<bool>(), 0usize..1600, 0u64..40), 1..80),
    ) {
        let mut d = Defrag::new();
        let data = vec![0x5au8; 1600];
        let mut t = 0u64;
        for (id, off, mf, n, dt) in frags {
            t += dt * 1_000_000_000;
            d.expire(t);
            let f = frag(id, off & !7, mf, &data[..n]);
            let _ = d.queue(t, &f, 14, if id & 1 == 0 { DefragUser::LocalDeliver } else { DefragUser::VsOut });
        }
        d.expire(t + FRAG_TIMEOUT);
        prop_assert!(d.is_empty());
        prop_assert_eq!(d.memory_bytes(), 0);
    }
}
