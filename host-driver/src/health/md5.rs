//! MD5 (RFC 1321), for `HTTP_GET`'s `digest`: keepalived compares the
//! lower-case hex MD5 of the response body (what its `genhash` prints).
//! The digest is RustCrypto's `md-5`.

use ::md5::{Digest, Md5};

/// The lower-case hex MD5 of `data`.
pub fn hex(data: &[u8]) -> String {
    Md5::digest(data).iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn rfc1321_test_suite() {
        // RFC 1321, appendix A.5.
        for (input, md5) in [
            ("", "d41d8cd98f00b204e9800998ecf8427e"),
            ("a", "0cc175b9c0f1b6a831c399e269772661"),
            ("abc", "900150983cd24fb0d6963f7d28e17f72"),
            ("message digest", "f96b697d7cb7938d525a2f31aaf161d0"),
            ("abcdefghijklmnopqrstuvwxyz", "c3fcd3d76192e4007dfb496cca67e13b"),
            (
                "12345678901234567890123456789012345678901234567890123456789012345678901234567890",
                "57edf4a22be3c955ac49da2e2107b67a",
            ),
        ] {
            assert_eq!(super::hex(input.as_bytes()), md5, "{input:?}");
        }
    }
}
