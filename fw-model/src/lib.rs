//! # lvsnic-model — the golden model of the lvsnic director
//!
//! This crate defines what "correct" means for every other part of lvsnic:
//! what a Linux IPVS director transmits for a given rule set and packet
//! stream. It is usable two ways:
//!
//! * as a whole director ([`director::Director`]): feed Ethernet frames with
//!   their timestamps, get the frames the director transmits, hands to its own
//!   stack, or drops;
//! * as a library: packet views and checksums ([`wire`]), pcap files
//!   ([`pcap`]), ipvsadm rules ([`rules`]), schedulers ([`sched`]), real
//!   servers ([`dest`]) and services ([`ipvs`]), the connection table ([`conn`]) and the
//!   packet transforms ([`xmit`]), which the host driver reuses as its slow
//!   path.
//!
//! No wall clock is used anywhere: time is the packets' timestamps
//! ([`time::Time`], nanoseconds).


pub mod time;
pub mod wire;
pub mod pcap;
pub mod rules;
pub mod dest;
pub mod sched;
pub mod ipvs;
pub mod conn;
pub mod hw;
pub mod xmit;
pub mod defrag;
pub mod defrag6;
pub mod config;
pub mod director;
pub mod stats;
pub mod sync;
pub mod rng;
pub mod fasthash;
