//! RPM packages (`.rpm`): a 96-byte lead (magic `ED AB EE DB`), the
//! signature header (padded to eight bytes), the main header, then the
//! payload: a cpio archive ([`payload`]) compressed by the method the main
//! header's `PAYLOADCOMPRESSOR` names (gzip when it names none). Every
//! count, offset and size is checked against the package's bytes before it
//! is used, the digests the package gives of its main header and payload
//! are verified (with the `files` feature, which brings SHA-2), and the
//! payload is decompressed as a stream, one member at a time.

#[cfg(feature = "files")]
mod digests;
#[cfg(feature = "files")]
mod error;
mod filelist;
mod header;
mod payload;
#[cfg(feature = "files")]
mod retag;
#[cfg(feature = "files")]
pub(crate) mod rewrite;
#[cfg(test)]
mod tests;
#[cfg(feature = "files")]
mod write;

use std::io;

use super::compression::{Compression, decoder};
use super::types::{Kind, Members, corrupt};
use crate::error::Result;
use header::Header;

/// The magic an RPM's lead starts with.
const LEAD_MAGIC: [u8; 4] = [0xed, 0xab, 0xee, 0xdb];

/// The length of the lead.
const LEAD_LEN: usize = 96;

/// The lead's signature type that says a header structure follows (the
/// only one rpm has written since version 3).
const HEADER_SIGNATURE: u16 = 5;

/// Main header tags.
const PAYLOADFORMAT: u32 = 1124;
const PAYLOADCOMPRESSOR: u32 = 1125;

/// Whether `bytes` start an RPM's lead.
pub(super) fn is_rpm(bytes: &[u8]) -> bool {
    bytes.starts_with(&LEAD_MAGIC)
}

/// An RPM's structure: its main header, how its payload is compressed
/// and the payload's bytes.
struct Package<'a> {
    #[cfg_attr(not(feature = "files"), allow(dead_code))]
    sig: Header<'a>,
    main: Header<'a>,
    compression: Compression,
    payload: &'a [u8],
}

impl<'a> Package<'a> {
    /// Reads the lead and the headers of `bytes`.
    fn read(bytes: &'a [u8]) -> std::result::Result<Self, String> {
        let lead = bytes
            .get(..LEAD_LEN)
            .ok_or_else(|| format!("its lead is cut short ({} of 96 bytes)", bytes.len()))?;
        if !is_rpm(lead) {
            return Err("it does not start with the RPM lead's magic".into());
        }
        let signature = crate::bytes::be::<u16>([lead[78], lead[79]]);
        if signature != HEADER_SIGNATURE {
            return Err(format!(
                "its lead gives signature type {signature}, not the header structure (5) rpm \
                 writes"
            ));
        }
        let (sig, end) = Header::parse(bytes, LEAD_LEN, "the signature header")?;
        let main_at = end.next_multiple_of(8);
        let (main, end) = Header::parse(bytes, main_at, "the main header")?;
        let payload = &bytes[end..];
        #[cfg(feature = "files")]
        digests::verify(&sig, (&main, &bytes[main_at..end]), payload)?;
        if let Some(f) = main.string(PAYLOADFORMAT)?
            && f != b"cpio"
        {
            return Err(format!(
                "its payload is in the '{}' format, not cpio",
                String::from_utf8_lossy(f)
            ));
        }
        let compression = match main.string(PAYLOADCOMPRESSOR)? {
            None | Some(b"gzip") => Compression::Gzip,
            Some(b"bzip2") => Compression::Bzip2,
            Some(b"xz") => Compression::Xz,
            Some(b"lzma") => Compression::Lzma,
            Some(b"zstd") => Compression::Zstd,
            Some(other) => {
                return Err(format!(
                    "its payload is compressed with '{}', a method offload-kit does not read",
                    String::from_utf8_lossy(other)
                ));
            }
        };
        Ok(Package {
            sig,
            main,
            compression,
            payload,
        })
    }
}

/// Hands every regular file of the RPM `bytes` to `to`, in the payload's
/// order, named by its path without the leading `./` or `/`. The payload is
/// decompressed to its end, where its method checks what it carries.
pub(super) fn rpm_members(bytes: &[u8], to: &mut dyn Members) -> Result<()> {
    let p = Package::read(bytes).map_err(|e| corrupt(Kind::Rpm, e))?;
    let method = p.compression.name();
    let inflate = |e: io::Error| corrupt(Kind::Rpm, format!("its {method} payload: {e}"));
    let mut reader = decoder(p.payload, p.compression).map_err(inflate)?;
    payload::entries(&mut reader, &p.main, to)?;
    io::copy(&mut reader, &mut io::sink()).map_err(inflate)?;
    Ok(())
}
