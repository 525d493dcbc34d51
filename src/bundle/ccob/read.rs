//! Decompressing CCOBs.

use md5::{Digest, Md5};
use zstd::zstd_safe;

use super::Fault;
use super::header::*;
use super::raw::*;
use crate::Limits;
use crate::error::Result;
use crate::num::{len64, usize_from};

// ---------------------------------------------------------------------------
// Reading

/// What to do with the stored hash.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HashCheck {
    /// Compute the MD5 and fail on a mismatch (the default: a mismatch means
    /// a corrupt file, even though LLVM never checks).
    #[default]
    Enforce,
    /// Compute the MD5 and record the result ([`Decompressed::hash_matches`]),
    /// but do not fail: for a caller that warns instead.
    Report,
    /// Do not compute it, as LLVM does unless verbose (saves ~1.4 s/GiB).
    Skip,
}

/// Options for reading.
#[derive(Debug, Clone, Copy, Default)]
pub struct ReadOptions {
    /// Size bounds: [`Limits::max_uncompressed`] caps one CCOB, and the
    /// sum of all of them in [`decompress_all`].
    pub limits: Limits,
    /// Hash policy.
    pub hash: HashCheck,
}

/// One CCOB found in a buffer, not yet decompressed.
#[derive(Debug, Clone, Copy)]
pub struct Ccob<'data> {
    /// Its header.
    pub header: Header,
    /// The compressed data (between the header and the end of the CCOB).
    pub payload: &'data [u8],
    /// Bytes the CCOB occupies: the header, the payload.
    pub size: u64,
}

impl<'data> Ccob<'data> {
    /// Parses the CCOB at the start of `data`: the header, then its extent
    /// (the total size for v2 and v3; for v1 the zstd frame's own size, or
    /// all of `data` for zlib). Bytes after it are not looked at.
    pub fn parse(data: &'data [u8]) -> Result<Ccob<'data>> {
        parse_ccob(data).map_err(|f| f.at(0))
    }

    /// Parses the one CCOB that `data` holds, as [`decompress`] reads it:
    /// bytes after its end (by its total size) are an error, as they are
    /// for LLVM.
    pub fn parse_whole(data: &'data [u8]) -> Result<Ccob<'data>> {
        let ccob = Ccob::parse(data)?;
        if ccob.size < len64(data) {
            return Err(Fault::TrailingBytes {
                method: ccob.header.method,
                at: ccob.size,
                count: len64(data) - ccob.size,
            }
            .at(0));
        }
        Ok(ccob)
    }

    /// Decompresses the payload, within `opts`' limits and hash policy.
    /// The result's `offset` is 0.
    pub fn decompress(&self, opts: &ReadOptions) -> Result<Decompressed> {
        decompress_ccob(self, opts, opts.limits.max_uncompressed()).map_err(|f| f.at(0))
    }

    /// Fails with [`Fault::ImpossibleSize`] when the header declares more
    /// uncompressed bytes than the payload can possibly produce (zstd
    /// expands at most 32768:1, deflate 1032:1): a lie, found without
    /// decompressing anything. [`Ccob::decompress`] checks it too.
    pub fn check_declared_size(&self) -> Result<()> {
        self.possible().map_err(|f| f.at(0))
    }

    /// The first `n` bytes of the contents (fewer if the header declares
    /// fewer), decoded by a streaming decoder that stops there: memory and
    /// time stay proportional to `n` whatever the declared size. Errors are
    /// the decoder's (a payload that ends early gives fewer bytes).
    pub fn decompress_prefix(&self, n: u64) -> Result<Vec<u8>> {
        use std::io::Read;
        let want = n.min(self.header.uncompressed_size);
        let fail = |e: std::io::Error| {
            Fault::Decompress {
                method: self.header.method,
                detail: e.to_string(),
                llvm: e.to_string(),
            }
            .at(0)
        };
        let mut out = Vec::new();
        if self.header.method == Method::ZSTD {
            zstd::stream::read::Decoder::with_buffer(self.payload)
                .map_err(fail)?
                .take(want)
                .read_to_end(&mut out)
                .map_err(fail)?;
        } else {
            flate2::read::ZlibDecoder::new(self.payload)
                .take(want)
                .read_to_end(&mut out)
                .map_err(fail)?;
        }
        Ok(out)
    }

    fn possible(&self) -> Result<(), Fault> {
        let declared = self.header.uncompressed_size;
        let compressed = len64(self.payload);
        // Headroom for frame/stream headers; the bound itself is generous.
        if declared > compressed.saturating_mul(self.header.method.max_expansion()) {
            return Err(Fault::ImpossibleSize {
                declared,
                compressed,
                method: self.header.method,
            });
        }
        Ok(())
    }
}

pub(super) fn parse_ccob(data: &[u8]) -> Result<Ccob<'_>, Fault> {
    let header = parse_header(data)?;
    let hsize = header.size();
    // The header was read from `data`, so `hsize <= data.len()`.
    let after = data.get(usize_from(hsize)..).unwrap_or_default();
    let size = match header.total_size {
        Some(total) => {
            if total < hsize {
                return Err(Fault::TotalSizeTooSmall {
                    total,
                    header: hsize,
                });
            }
            if total > len64(data) {
                return Err(Fault::TotalSizePastEnd {
                    total,
                    available: len64(data),
                });
            }
            total
        }
        None if header.method == Method::ZSTD => {
            // A frame's blocks say where it ends; if they cannot be walked,
            // take everything and let decompression report the problem.
            match zstd_safe::find_frame_compressed_size(after) {
                Ok(n) if n <= after.len() => hsize + n as u64,
                _ => len64(data),
            }
        }
        None => len64(data),
    };
    let payload = data
        .get(usize_from(hsize)..usize_from(size))
        .unwrap_or_default();
    Ok(Ccob {
        header,
        payload,
        size,
    })
}

/// A decompressed CCOB.
#[derive(Debug, Clone)]
pub struct Decompressed {
    /// Offset of the CCOB in the buffer that was read.
    pub offset: u64,
    /// Its header.
    pub header: Header,
    /// Bytes the CCOB occupies (header and compressed data).
    pub size: u64,
    /// Size of the compressed data alone.
    pub compressed_size: u64,
    /// The uncompressed bundle.
    pub data: Vec<u8>,
    /// The truncated MD5 of `data`, unless [`HashCheck::Skip`].
    pub computed_hash: Option<u64>,
}

impl Decompressed {
    /// Whether the stored hash matches, if it was computed.
    pub fn hash_matches(&self) -> Option<bool> {
        self.computed_hash.map(|h| h == self.header.hash)
    }
}

/// Decompresses the one CCOB that `data` holds. Bytes after its end (by its
/// total size) are an error, as they are for LLVM.
pub fn decompress(data: &[u8], opts: &ReadOptions) -> Result<Decompressed> {
    let ccob = Ccob::parse_whole(data)?;
    decompress_ccob(&ccob, opts, opts.limits.max_uncompressed()).map_err(|f| f.at(0))
}

/// Decompresses every CCOB in `data`: they follow each other, each ending
/// at its total size (v2/v3) or where its zstd frame ends (v1), and zero
/// bytes between them (section alignment) are skipped. Anything else is an
/// error, with its offset. `opts.limits` bounds the sum of the uncompressed
/// sizes. A `"CCOB"` inside compressed data is never mistaken for a start.
pub fn decompress_all(data: &[u8], opts: &ReadOptions) -> Result<Vec<Decompressed>> {
    let mut out = Vec::new();
    let mut at = 0u64;
    let mut budget = opts.limits.max_uncompressed();
    loop {
        let rest = data.get(usize_from(at)..).unwrap_or_default();
        let Some(skip) = rest.iter().position(|&b| b != 0) else {
            break;
        };
        at += skip as u64;
        let rest = &rest[skip..];
        let ccob = parse_ccob(rest).map_err(|f| f.at(at))?;
        let mut d = decompress_ccob(&ccob, opts, budget).map_err(|f| {
            match f {
                // Report the sum against the caller's limit.
                Fault::TooLarge { declared, .. } if budget < opts.limits.max_uncompressed() => {
                    Fault::TooLarge {
                        declared: declared.saturating_add(opts.limits.max_uncompressed() - budget),
                        limit: opts.limits.max_uncompressed(),
                    }
                }
                f => f,
            }
            .at(at)
        })?;
        budget -= len64(&d.data);
        d.offset = at;
        // The CCOB lies within `rest`, so this stays within `data`.
        at += ccob.size;
        out.push(d);
    }
    Ok(out)
}

pub(super) fn decompress_ccob(
    ccob: &Ccob<'_>,
    opts: &ReadOptions,
    limit: u64,
) -> Result<Decompressed, Fault> {
    let h = ccob.header;
    let declared = h.uncompressed_size;
    let compressed = len64(ccob.payload);
    if declared > limit {
        return Err(Fault::TooLarge { declared, limit });
    }
    ccob.possible()?;
    let (data, computed_hash) = match (h.method == Method::ZLIB, opts.hash) {
        (true, HashCheck::Skip) => (inflate_zlib(ccob.payload, declared)?, None),
        (true, _) => {
            let data = inflate_zlib(ccob.payload, declared)?;
            let hash = truncated_md5(&data);
            (data, Some(hash))
        }
        (false, HashCheck::Skip) => (inflate_zstd(ccob.payload, declared)?, None),
        (false, _) => match inflate_zstd_hashing(ccob.payload, declared) {
            Some((data, hash)) => (data, Some(hash)),
            // Anything irregular: LLVM's one-shot call, for its exact error.
            None => {
                let data = inflate_zstd(ccob.payload, declared)?;
                let hash = truncated_md5(&data);
                (data, Some(hash))
            }
        },
    };
    if opts.hash == HashCheck::Enforce && computed_hash != Some(h.hash) {
        return Err(Fault::HashMismatch {
            stored: h.hash,
            computed: computed_hash.unwrap_or_default(),
        });
    }
    Ok(Decompressed {
        offset: 0,
        header: h,
        size: ccob.size,
        compressed_size: compressed,
        data,
        computed_hash,
    })
}

/// An empty vector with room for exactly `n` bytes.
pub(super) fn buffer(n: u64) -> Result<Vec<u8>, Fault> {
    let oom = || Fault::OutOfMemory { bytes: n };
    let cap = usize::try_from(n).map_err(|_| oom())?;
    let mut v = Vec::new();
    v.try_reserve_exact(cap).map_err(|_| oom())?;
    Ok(v)
}

/// zstd: LLVM's own call (`ZSTD_decompressDCtx` into a buffer of the
/// declared size), so the error names are LLVM's.
///
/// libzstd is never handed an output buffer of capacity 0 (a dangling
/// pointer): 1.5.4 writes through it when a block holds sequences but no
/// literals (zstd issue 3507, fixed in 1.5.5). A declared size of 0 gets a
/// 1-byte buffer instead, and a byte landing there is zstd's "buffer too
/// small".
pub(super) fn inflate_zstd(payload: &[u8], declared: u64) -> Result<Vec<u8>, Fault> {
    const TOO_SMALL: &str = "Destination buffer is too small";
    let mut out = buffer(declared.max(1))?;
    let mut dctx = zstd_safe::DCtx::try_create().ok_or(Fault::OutOfMemory { bytes: 0 })?;
    let result = dctx
        .decompress(&mut out, payload)
        .map_err(zstd_safe::get_error_name);
    let n = match result {
        Ok(n) if n as u64 > declared => Err(TOO_SMALL),
        other => other,
    }
    .map_err(|name| {
        let detail = if name == TOO_SMALL {
            format!("it inflates to more than the {declared} bytes the header declares ({name})")
        } else {
            name.to_string()
        };
        Fault::Decompress {
            method: Method::ZSTD,
            detail,
            llvm: name.to_string(),
        }
    })?;
    if n as u64 != declared {
        return Err(Fault::SizeMismatch {
            declared,
            actual: n as u64,
        });
    }
    Ok(out)
}

/// zstd, hashing as it goes: the payload's frames (one from LLVM, several
/// from our worker threads) are decoded chunk by chunk into a buffer of the
/// declared size while another thread computes the MD5 of the chunks
/// already decoded, so the hash costs almost no extra time on two cores.
/// Returns `None` unless the frames decode to exactly the declared size and
/// end exactly at the end of the payload (the caller then repeats the
/// decoding with LLVM's call, for LLVM's error).
pub(super) fn inflate_zstd_hashing(payload: &[u8], declared: u64) -> Option<(Vec<u8>, u64)> {
    use std::sync::mpsc;
    use zstd_safe::{InBuffer, OutBuffer};

    const CHUNK: usize = 8 << 20;
    let len = usize::try_from(declared).ok()?;
    if len == 0 {
        // Nothing to hash; zstd must not get an empty output buffer.
        return None;
    }
    let mut out = Vec::new();
    out.try_reserve_exact(len).ok()?;
    out.resize(len, 0);
    let mut dctx = zstd_safe::DCtx::try_create()?;
    let ok = std::thread::scope(|scope| {
        let (tx, rx) = mpsc::sync_channel::<&[u8]>(8);
        let hasher = scope.spawn(move || {
            let mut md5 = Md5::new();
            for chunk in rx {
                md5.update(chunk);
            }
            truncated(md5)
        });
        let mut input = InBuffer::around(payload);
        let mut rest: &mut [u8] = &mut out[..];
        // Whether the last call finished a frame (all of it decoded and
        // flushed): the payload may only end there.
        let mut at_frame_end = false;
        loop {
            let room = rest.len().min(CHUNK);
            let (chunk, tail) = std::mem::take(&mut rest).split_at_mut(room);
            rest = tail;
            let mut ob = OutBuffer::around(&mut chunk[..]);
            while ob.pos() < room && !(input.pos() == payload.len() && at_frame_end) {
                let before = (input.pos(), ob.pos());
                match dctx.decompress_stream(&mut ob, &mut input) {
                    Err(_) => return None,
                    Ok(hint) => at_frame_end = hint == 0,
                }
                if (input.pos(), ob.pos()) == before {
                    return None; // truncated: zstd wants more input
                }
            }
            let n = ob.pos();
            let done: &[u8] = chunk;
            if tx.send(&done[..n]).is_err() {
                return None;
            }
            if input.pos() == payload.len() && at_frame_end {
                // All decoded: it must fill the declared size exactly.
                if n < room || !rest.is_empty() {
                    return None;
                }
                break;
            }
            if room == 0 {
                // The declared size is filled: only the end of this frame
                // and empty frames may follow.
                // A 1-byte scratch buffer, never an empty one (see
                // `inflate_zstd`); a byte written there is one too many.
                let mut scratch = [0u8; 1];
                while !(input.pos() == payload.len() && at_frame_end) {
                    let before = input.pos();
                    let mut none = OutBuffer::around(&mut scratch[..]);
                    match dctx.decompress_stream(&mut none, &mut input) {
                        Err(_) => return None,
                        Ok(hint) => at_frame_end = hint == 0,
                    }
                    if none.pos() > 0 || input.pos() == before {
                        return None;
                    }
                }
                break;
            }
        }
        drop(tx);
        let hash = hasher.join().ok()?;
        Some(hash)
    });
    ok.map(|hash| (out, hash))
}

/// zlib: inflate into room for the declared size plus one byte; reaching
/// that byte means the data inflates further than declared. LLVM calls
/// zlib's `uncompress`, whose results are mapped to its messages here.
pub(super) fn inflate_zlib(payload: &[u8], declared: u64) -> Result<Vec<u8>, Fault> {
    let room = declared
        .checked_add(1)
        .ok_or(Fault::OutOfMemory { bytes: declared })?;
    let mut out = buffer(room)?;
    let fail = |detail: String, code: &str| Fault::Decompress {
        method: Method::ZLIB,
        detail,
        llvm: format!("zlib error: {code}"),
    };
    let mut z = flate2::Decompress::new(true);
    let ended = loop {
        let (before_in, before_out) = (z.total_in(), z.total_out());
        let rest = payload.get(usize_from(before_in)..).unwrap_or_default();
        let status = z
            .decompress_vec(rest, &mut out, flate2::FlushDecompress::Finish)
            .map_err(|e| fail(format!("corrupt data ({e})"), "Z_DATA_ERROR"))?;
        if status == flate2::Status::StreamEnd {
            break true;
        }
        if len64(&out) >= room || (z.total_in(), z.total_out()) == (before_in, before_out) {
            break false;
        }
    };
    let produced = len64(&out);
    if produced > declared {
        // `uncompress` with a zero-size buffer inflates into a 1-byte
        // scratch buffer and reports Z_DATA_ERROR instead.
        return Err(fail(
            format!("it inflates to more than the {declared} bytes the header declares"),
            if declared == 0 {
                "Z_DATA_ERROR"
            } else {
                "Z_BUF_ERROR"
            },
        ));
    }
    if !ended {
        // zlib's `uncompress` says Z_BUF_ERROR when the input ends with the
        // output buffer full, Z_DATA_ERROR when it ends with room left (and
        // always with a zero-size buffer).
        let code = if produced == declared && declared > 0 {
            "Z_BUF_ERROR"
        } else {
            "Z_DATA_ERROR"
        };
        return Err(fail(
            format!("the data ends after {produced} of the {declared} declared bytes"),
            code,
        ));
    }
    if z.total_in() < len64(payload) {
        return Err(Fault::TrailingBytes {
            method: Method::ZLIB,
            at: z.total_in(),
            count: len64(payload) - z.total_in(),
        });
    }
    if produced != declared {
        return Err(Fault::SizeMismatch {
            declared,
            actual: produced,
        });
    }
    Ok(out)
}
