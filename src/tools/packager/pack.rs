//! Packing image files into an OffloadBinary file as `llvm-offload-binary`
//! does ([`pack_files`], shared with `offload-kit pack`), and the
//! `--compress` options of newer upstream releases ([`compression`]).

use crate::error::Error;
use crate::files::{Input, write_bytes, write_layout};
use crate::offload_binary::{self, Compression, ImageArgs, Version};

/// How [`pack_files`] packs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Packing {
    /// Uncompressed binaries of this version.
    Plain(Version),
    /// One compressed version-3 binary holding every image (newer LLVM's
    /// `--compress`), at this level.
    Compressed(Compression, i32),
}

/// Why [`pack_files`] failed.
#[derive(Debug)]
pub enum PackError {
    /// This `--image` argument names no file.
    NoFile(String),
    /// An image file could not be opened.
    Open(String, std::io::Error),
    /// The binary cannot be laid out or compressed.
    Layout(Error),
    /// The output could not be written.
    Write(String, std::io::Error),
}

/// Packs the files named by the `--image` arguments `images` (each parsed
/// as LLVM 22 parses it, a repeated `file` key packing several files) into
/// `output`, atomically: image kinds from the files, binaries as `packing`
/// says. Uncompressed, the images are copied file to file; compressed, the
/// whole binary is built in memory, as compression needs it there.
pub fn pack_files<'a>(
    images: impl IntoIterator<Item = &'a str>,
    output: &str,
    packing: Packing,
) -> Result<(), PackError> {
    let mut specs = Vec::new();
    let mut inputs = Vec::new();
    for image in images {
        let args = ImageArgs::parse(image);
        let Some(files) = args.files() else {
            return Err(PackError::NoFile(image.to_string()));
        };
        for file in files {
            let input = Input::open(file).map_err(|e| PackError::Open(file.to_string(), e))?;
            specs.push(args.image_spec(file, input.bytes()));
            inputs.push(input);
        }
    }
    let failed = |e| PackError::Write(output.to_string(), e);
    let (how, level) = match packing {
        Packing::Plain(version) => {
            let layout = offload_binary::layout(&specs, version).map_err(PackError::Layout)?;
            return write_layout(output, &layout, |i| (&inputs[i], inputs[i].bytes()))
                .map_err(failed);
        }
        Packing::Compressed(how, level) => (how, level),
    };
    let layout = offload_binary::layout_v3(&specs).map_err(PackError::Layout)?;
    let mut plain = Vec::new();
    let sources: Vec<&[u8]> = inputs.iter().map(Input::bytes).collect();
    layout.write_to(&mut plain, &sources).map_err(failed)?;
    let packed = offload_binary::compress(&plain, how, level).map_err(PackError::Layout)?;
    drop(plain);
    let packed = Input::from_vec(packed);
    write_bytes(output, &packed, packed.bytes()).map_err(failed)
}

/// Why `--compression-format` or `--compression-level` is refused (newer
/// LLVM's messages).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CompressionError {
    /// A format other than zstd and zlib.
    Format(String),
    /// A level that is not an integer.
    NotInteger(String),
    /// A level outside the format's range: the format, the level, the
    /// range.
    Level(&'static str, i32, std::ops::RangeInclusive<i32>),
}

impl std::fmt::Display for CompressionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CompressionError::Format(other) => write!(
                f,
                "invalid compression format '{other}'; expected 'zstd' or 'zlib'"
            ),
            CompressionError::NotInteger(v) => write!(
                f,
                "for the --compression-level option: '{v}' value invalid for integer argument!"
            ),
            CompressionError::Level(name, level, range) => write!(
                f,
                "invalid {name} compression level {level}; expected a value in [{}, {}]",
                range.start(),
                range.end()
            ),
        }
    }
}

impl std::error::Error for CompressionError {}

/// The compression `--compress` asks for, given `--compression-format`
/// and `--compression-level`, checked as newer LLVM checks them (its
/// messages). zstd at level 5 unless told otherwise; zlib at 6.
pub fn compression(
    format: Option<&str>,
    level: Option<&str>,
) -> Result<(Compression, i32), CompressionError> {
    let how = match format.unwrap_or("zstd") {
        "zstd" => Compression::Zstd,
        "zlib" => Compression::Zlib,
        other => return Err(CompressionError::Format(other.to_string())),
    };
    let (name, default, range) = match how {
        Compression::Zstd => ("zstd", 5, zstd::compression_level_range()),
        Compression::Zlib => ("zlib", 6, 0..=9),
    };
    let level = match level {
        None => default,
        Some(v) => v
            .parse::<i32>()
            .map_err(|_| CompressionError::NotInteger(v.to_string()))?,
    };
    if !range.contains(&level) {
        return Err(CompressionError::Level(name, level, range));
    }
    Ok((how, level))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compression_options_are_checked_as_newer_llvm_does() {
        assert_eq!(compression(None, None), Ok((Compression::Zstd, 5)));
        assert_eq!(compression(Some("zlib"), None), Ok((Compression::Zlib, 6)));
        assert_eq!(
            compression(Some("zlib"), Some("9")),
            Ok((Compression::Zlib, 9))
        );
        assert_eq!(
            compression(Some("lz4"), Some("x")).unwrap_err().to_string(),
            "invalid compression format 'lz4'; expected 'zstd' or 'zlib'"
        );
        assert_eq!(
            compression(None, Some("x")).unwrap_err().to_string(),
            "for the --compression-level option: 'x' value invalid for integer argument!"
        );
        assert_eq!(
            compression(Some("zlib"), Some("10"))
                .unwrap_err()
                .to_string(),
            "invalid zlib compression level 10; expected a value in [0, 9]"
        );
    }
}
