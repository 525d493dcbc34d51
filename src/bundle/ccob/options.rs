//! How to compress, and the zstd context those options make with LLVM's
//! settings: shared by the single-frame writer and the worker threads.

use zstd::zstd_safe;

use super::Fault;
use super::raw::*;
use crate::error::{Error, Result};

/// How to compress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CompressOptions {
    /// Format version: 3 (LLVM 22's default) or 2.
    pub version: u16,
    /// zstd (LLVM's choice when built with it) or zlib.
    pub method: Method,
    /// Compression level, passed on as given: zstd clamps out-of-range values
    /// itself (0 means its default, 3); zlib takes -1 (6) to 9.
    pub level: i32,
    /// zstd worker threads; 0 compresses on the calling thread as LLVM does
    /// (byte-identical output), more compress independent frames in
    /// parallel (see the module docs). Ignored for zlib.
    pub threads: u32,
}

impl Default for CompressOptions {
    /// LLVM 22's defaults: version 3, zstd level 3, one thread.
    fn default() -> Self {
        CompressOptions {
            version: DEFAULT_VERSION,
            method: Method::ZSTD,
            level: ZSTD_DEFAULT_LEVEL,
            threads: 0,
        }
    }
}

pub(super) fn zstd_error(code: usize) -> Error {
    Fault::Compress {
        method: Method::ZSTD,
        detail: zstd_safe::get_error_name(code).to_string(),
    }
    .at(0)
}

/// A compression context with LLVM's two settings: long-distance matching
/// and the level.
pub(super) fn zstd_context(opts: &CompressOptions) -> Result<zstd_safe::CCtx<'static>> {
    use zstd_safe::CParameter;
    let mut cctx = zstd_safe::CCtx::try_create().ok_or_else(|| {
        Fault::Compress {
            method: Method::ZSTD,
            detail: "cannot create a compression context".into(),
        }
        .at(0)
    })?;
    cctx.set_parameter(CParameter::EnableLongDistanceMatching(true))
        .map_err(zstd_error)?;
    cctx.set_parameter(CParameter::CompressionLevel(opts.level))
        .map_err(zstd_error)?;
    Ok(cctx)
}
