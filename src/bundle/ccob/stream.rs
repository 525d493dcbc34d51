//! Reading a CCOB's contents only as far as needed: the bundle header (to
//! list a bomb without inflating it), or the end of a version 1 zlib stream.

use super::raw::*;
use super::read::Ccob;
use crate::error::{Error, ErrorKind, Result};
use crate::num::{len64, usize_from};

/// The largest bundle header [`Ccob::bundle_records`] decompresses.
pub const MAX_BUNDLE_HEADER: u64 = 1 << 20;

fn stream_error(what: &'static str, e: &std::io::Error) -> Error {
    ErrorKind::Decompress {
        what,
        detail: e.to_string(),
    }
    .into()
}

impl Ccob<'_> {
    /// The records of the binary bundle this CCOB holds, in file order,
    /// decompressing only as far as the bundle header (at most
    /// [`MAX_BUNDLE_HEADER`] bytes of it); `None` when the contents are not
    /// a binary bundle. The stored hash is not checked.
    pub fn bundle_records(&self) -> Result<Option<Vec<crate::bundle::binary::Record>>> {
        use crate::bundle::binary::{Prefix, read_prefix};
        use std::io::Read;
        let total = self.header.uncompressed_size;
        let (what, mut dec): (&'static str, Box<dyn Read + '_>) =
            if self.header.method == Method::ZSTD {
                let d = zstd::stream::read::Decoder::with_buffer(self.payload)
                    .map_err(|e| stream_error("zstd data", &e))?;
                ("zstd data", Box::new(d))
            } else {
                (
                    "zlib data",
                    Box::new(flate2::read::ZlibDecoder::new(self.payload)),
                )
            };
        let mut buf = Vec::new();
        let mut want = 32u64.min(total);
        loop {
            let have = len64(&buf);
            if want > have {
                (&mut dec)
                    .take(want - have)
                    .read_to_end(&mut buf)
                    .map_err(|e| stream_error(what, &e))?;
            }
            match read_prefix(&buf, total)? {
                Prefix::Records(r) => return Ok(Some(r)),
                Prefix::NotBinary => return Ok(None),
                Prefix::Need(n) => {
                    if len64(&buf) < want || n > total {
                        return Err(Error::invalid(
                            "compressed bundle",
                            format!(
                                "the contents end after {} bytes, inside the bundle header",
                                buf.len()
                            ),
                        ));
                    }
                    if n > MAX_BUNDLE_HEADER {
                        return Err(ErrorKind::LimitExceeded {
                            what: "bundle header in a compressed bundle".into(),
                            limit: MAX_BUNDLE_HEADER,
                        }
                        .into());
                    }
                    want = n
                        .max(want.saturating_mul(2))
                        .min(total)
                        .min(MAX_BUNDLE_HEADER);
                }
            }
        }
    }

    /// For a version 1 zlib CCOB, which has no total size: ends the payload
    /// (and the CCOB) where its zlib stream ends, inflating into a scratch
    /// buffer and producing at most `limit` bytes. Other CCOBs are left as
    /// they are.
    pub fn end_v1_zlib_stream(&mut self, limit: u64) -> Result<()> {
        if self.header.version != 1 || self.header.method != Method::ZLIB {
            return Ok(());
        }
        let mut z = flate2::Decompress::new(true);
        let mut scratch = vec![0u8; 64 << 10];
        loop {
            let rest = self
                .payload
                .get(usize_from(z.total_in())..)
                .unwrap_or_default();
            let before = (z.total_in(), z.total_out());
            let status = z
                .decompress(rest, &mut scratch, flate2::FlushDecompress::None)
                .map_err(|e| ErrorKind::Decompress {
                    what: "zlib data",
                    detail: e.to_string(),
                })?;
            if status == flate2::Status::StreamEnd {
                let n = z.total_in();
                self.payload = &self.payload[..usize_from(n)];
                self.size = self.header.size() + n;
                return Ok(());
            }
            if z.total_out() > limit {
                return Err(ErrorKind::LimitExceeded {
                    what: "zlib data".into(),
                    limit,
                }
                .into());
            }
            if (z.total_in(), z.total_out()) == before {
                return Err(ErrorKind::Decompress {
                    what: "zlib data",
                    detail: "the stream ends early".into(),
                }
                .into());
            }
        }
    }
}
