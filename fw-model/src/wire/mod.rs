//! Packet views (filled by the wire work).
