//! Runtime state of services and real servers, as the kernel keeps it
//! (`struct ip_vs_service`, `struct ip_vs_dest`, `struct ip_vs_kstats`).
//!
//! The service table is [`service`]; the real servers, their counters and
//! rate estimator are defined in [`crate::dest`] (below the schedulers) and
//! re-exported here.

pub mod service;

pub use crate::dest::{estimator, Dest, DestId, Estimator, Rates, ServiceId, Stats};
pub use service::{RuleError, Service, ServiceTable};
