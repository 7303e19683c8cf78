//! lvsnic host driver library.
