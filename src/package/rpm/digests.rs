//! The digests an RPM carries of itself, verified before its payload is
//! read: the signature header's SHA-256 of the main header (tag 273), and
//! the main header's digest of the compressed payload (`PAYLOADDIGEST`,
//! 5092, in the algorithm `PAYLOADDIGESTALGO`, 5093, names: SHA-256, -384
//! or -512 are checked). A payload compressed without a checksum of its
//! own (zstd as rpm writes it) is then still checked whole.

use sha2::{Digest, Sha256, Sha384, Sha512};

use super::header::Header;

/// Signature header tag: the SHA-256 of the main header, in hex.
const SHA256_OF_HEADER: u32 = 273;
/// Main header tags: the payload's digests, and their algorithm.
const PAYLOADDIGEST: u32 = 5092;
const PAYLOADDIGESTALGO: u32 = 5093;

/// The lowercase hex of `bytes`.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Checks the digests `sig` and `main` give of `main_bytes` (the main
/// header as stored) and of `payload`; a digest the package does not
/// carry, or in an algorithm not read here, is not checked.
pub(super) fn verify(
    sig: &Header<'_>,
    (main, main_bytes): (&Header<'_>, &[u8]),
    payload: &[u8],
) -> Result<(), String> {
    if let Some(said) = sig.string(SHA256_OF_HEADER)? {
        let got = hex(&Sha256::digest(main_bytes));
        if !said.eq_ignore_ascii_case(got.as_bytes()) {
            return Err(format!(
                "its main header does not match the SHA-256 its signature gives (it says {}, \
                 the header's is {got})",
                String::from_utf8_lossy(said)
            ));
        }
    }
    let Some(said) = main
        .strings(PAYLOADDIGEST)?
        .and_then(|v| v.into_iter().next())
    else {
        return Ok(());
    };
    // rpm's numbers for the hash algorithms: 8, 9 and 10 are SHA-256,
    // SHA-384 and SHA-512; with no algorithm tag, the payload digest is
    // SHA-256.
    let algo = main
        .int32s(PAYLOADDIGESTALGO)?
        .and_then(|v| v.first().copied());
    let (name, got) = match algo {
        None | Some(8) => ("SHA-256", hex(&Sha256::digest(payload))),
        Some(9) => ("SHA-384", hex(&Sha384::digest(payload))),
        Some(10) => ("SHA-512", hex(&Sha512::digest(payload))),
        Some(_) => return Ok(()),
    };
    if !said.eq_ignore_ascii_case(got.as_bytes()) {
        return Err(format!(
            "its payload does not match the {name} its header gives (it says {}, the payload's \
             is {got})",
            String::from_utf8_lossy(said)
        ));
    }
    Ok(())
}
