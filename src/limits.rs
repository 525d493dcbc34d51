//! What reading untrusted input may cost ([`Limits`]), and the one
//! default of each cap, in one place.

/// Most bytes decompression may produce where no cap is given: fat
/// binaries of a few GiB exist (CCOB v3 exists for more than 4 GiB);
/// beyond this, a declared size is far more likely a bomb.
pub const MAX_UNCOMPRESSED: u64 = 16 << 30;

/// Least bytes a budget derived from its inputs' size may decompress
/// (some containers must be held in memory whole).
pub const MIN_UNCOMPRESSED: u64 = 128 << 20;

/// Bytes a budget derived from its inputs' size may decompress per byte
/// of input. zlib cannot compress beyond about 1032 to 1 and device code
/// compresses 3 to 20 times, so only data made to do it reaches this.
pub const UNCOMPRESSED_PER_INPUT_BYTE: u64 = 1024;

/// Least images a command may read when the cap is derived.
pub const MIN_IMAGES: u64 = 1 << 16;

/// Least files a command may write when the cap is derived.
pub const MIN_FILES: u64 = 4096;

/// How deep binaries may nest in images by default.
pub const DEFAULT_DEPTH: u64 = 16;

/// Most bytes read from standard input (or from a regular file whose size
/// reads as 0, as `/proc` files do), which cannot be mapped: 4 GiB. More is
/// an error, so `/dev/zero` piped in cannot exhaust memory.
pub const MAX_STREAM_BYTES: u64 = 4 << 30;

/// Most bytes of text read as arguments: the response files (`@FILE`) of
/// one command line, all of them together, those they name included, and
/// the URIs `roc-obj-extract` reads from standard input: 16 MiB (a link
/// line of 100,000 objects takes about 10 MiB). More is an error, so a
/// response file of `/dev/zero`, or naming itself, cannot exhaust memory.
pub const MAX_ARGUMENT_BYTES: u64 = 16 << 20;

/// Most arguments response files may expand to: 1,048,576.
pub const MAX_ARGUMENTS: usize = 1 << 20;

/// Memory the LZMA decoder of a package may take (its dictionary, which
/// the header names: `xz --format=lzma -9` asks 64 MiB; the format allows
/// 4 GiB). A stream that asks for more is refused as damaged.
pub const LZMA_MEMORY: u64 = 1 << 30;

/// The decompression cap derived from `size` bytes of input:
/// [`UNCOMPRESSED_PER_INPUT_BYTE`] times it, at least
/// [`MIN_UNCOMPRESSED`] and at most [`MAX_UNCOMPRESSED`].
pub(crate) fn uncompressed_for(size: u64) -> u64 {
    size.saturating_mul(UNCOMPRESSED_PER_INPUT_BYTE)
        .clamp(MIN_UNCOMPRESSED, MAX_UNCOMPRESSED)
}

/// Caps on what reading untrusted input may cost, for every reader that
/// decompresses (OffloadBinary, CCOB) and for a command's work budget
/// ([`Budget`](crate::offload_binary::Budget)). A cap left at `None`
/// takes its default:
///
/// | cap | one read of one buffer | a command's budget |
/// |---|---|---|
/// | bytes decompressed | 16 GiB | 1024 × the inputs' size, at least 128 MiB, at most 16 GiB |
/// | images read | no cap | the inputs' size / 16, at least 65,536 |
/// | files written | no cap | the inputs' size / 1024, at least 4,096 |
/// | levels of nesting | no cap | 16 |
///
/// Fat binaries of a few GiB exist (CCOB v3 exists for more than 4 GiB);
/// beyond 16 GiB a declared size is far more likely a bomb. zlib cannot
/// compress beyond about 1032 to 1 and device code compresses 3 to 20
/// times, so only data made to do it reaches 1024 × its size.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Limits {
    /// Most bytes decompressed: by one read (for a CCOB read, every CCOB
    /// of the buffer together), or by a command in all.
    pub max_uncompressed: Option<u64>,
    /// Most images a command reads, in all.
    pub max_images: Option<u64>,
    /// Most files a command writes, in all.
    pub max_files: Option<u64>,
    /// Most levels of binaries nested in images.
    pub max_depth: Option<u64>,
}

impl Limits {
    /// Limits that cap decompression at `bytes` and leave the rest at
    /// their defaults.
    pub fn uncompressed(bytes: u64) -> Limits {
        Limits {
            max_uncompressed: Some(bytes),
            ..Limits::default()
        }
    }

    /// The cap on the bytes one read decompresses: the one given, or
    /// 16 GiB.
    pub fn max_uncompressed(&self) -> u64 {
        self.max_uncompressed.unwrap_or(MAX_UNCOMPRESSED)
    }
}
