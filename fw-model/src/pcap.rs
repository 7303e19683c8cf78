//! pcap files.
