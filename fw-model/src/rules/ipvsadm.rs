//! ipvsadm text formats.
