//! Services (in progress).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
pub struct ServiceId(pub u32);
pub struct ServiceTable;
pub struct Service;
#[derive(Debug, thiserror::Error)]
#[error("rule error")]
pub struct RuleError;
