//! SHA-256 digests and their hex form: what identifies a plugin file (the registry's cache
//! key, approvals and `[trust] allow_unsigned` pins, the lock file), written `sha256:HEX`.

use sha2::Digest as _;

/// The SHA-256 of `bytes`.
pub fn sha256(bytes: &[u8]) -> [u8; 32] {
    sha2::Sha256::digest(bytes).into()
}

/// The hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(sha256(bytes))
}

/// A SHA-256 written as 64 hex digits, with or without a `sha256:` prefix.
pub fn parse_sha256(text: &str) -> Option<[u8; 32]> {
    let digits = text.strip_prefix("sha256:").unwrap_or(text);
    let mut out = [0u8; 32];
    hex::decode_to_slice(digits, &mut out).ok()?;
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_round_trip() {
        let d = sha256(b"abc");
        assert_eq!(sha256_hex(b"abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert_eq!(parse_sha256(&hex::encode(d)), Some(d));
        assert_eq!(parse_sha256(&format!("sha256:{}", hex::encode(d))), Some(d));
        assert_eq!(parse_sha256("abc"), None);
        assert_eq!(parse_sha256(&"g".repeat(64)), None);
    }
}
