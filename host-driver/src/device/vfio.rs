//! VFIO backend.
#[derive(Debug, thiserror::Error)]
pub enum VfioError {
    #[error("x")]
    X,
}
