//! CUDA fatbin containers (`.nv_fatbin`, `__nv_relfatbin`, the data a
//! `.nvFatBinSegment` wrapper points at), and the CUDA/HIP fatbin wrappers.
//!
//! NVIDIA does not document the layout; these facts come from the public
//! readers listed in `docs/formats/cuda-fatbin.md` (n-eiling's
//! cuda-fatbin-decompression, jiegec/fatbinary, nvopen-tools), cross-checked
//! there against the `.quad` data of nvcc-generated `*.fatbin.c` files. All
//! integers are little-endian.
//!
//! Container header (16 bytes):
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 4 | magic `50 ED 55 BA` (0xBA55ED50) |
//! | 4 | 2 | version (1) |
//! | 6 | 2 | header size (16) |
//! | 8 | 8 | size of everything after the header: the entries |
//!
//! Entries follow back to back, each a header of at least 64 bytes and its
//! payload; the next entry starts right after the payload. There may be
//! none: given no image, `fatbinary --create` (CUDA 13.0) writes the header
//! alone with size 0, embeds it for registration like any other, and
//! `cuobjdump` lists it as holding nothing (`prune` empties a fatbin so).
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 2 | kind: 1 PTX, 2 ELF (cubin), 8 NVVM IR (stored opaque); others seen and kept |
//! | 2 | 2 | unknown (0x0101) |
//! | 4 | 4 | header size (64; larger for some PTX and sm_100+ entries) |
//! | 8 | 8 | payload size |
//! | 16 | 4 | compressed size (compressed entries) |
//! | 20 | 4 | options offset |
//! | 24 | 2 | minor version |
//! | 26 | 2 | major version |
//! | 28 | 4 | SM architecture (52, 80, 90, …) |
//! | 32 | 4 | object-name offset, from the entry start |
//! | 36 | 4 | object-name length |
//! | 40 | 8 | flags: 0x1 64-bit, 0x2 debug, 0x4 CUDA, 0x8 OpenCL, 0x10 Linux, 0x20 Mac, 0x40 Windows; compression 0x2000 (LZ4) or 0x8000 (zstd); 0x100000 arch-specific code (`sm_90a`), 0x200000 family code (`sm_100f`); 0x1000000 a cubin of ELF ABI 8 (its header is longer) |
//! | 48 | 8 | reserved |
//! | 56 | 8 | decompressed size (compressed entries) |
//!
//! # Arch-specific and family code
//!
//! CUDA 12 and 13 build code for `sm_90a` (arch-specific: only a 9.0 device
//! runs it) and `sm_100f` (family: 10.0 and the later 10.x run it).
//! `fatbinary` marks such an entry with flag 0x100000 or 0x200000 when it
//! is told the variant (`--image3=kind=elf,sm=90a,…`, as nvcc does).
//! `cuobjdump` 13 names PTX entries from these flags (`sm_90a`,
//! `sm_100f`; both flags: `a`), but cubins from the cubin itself (its
//! `e_flags` and `.nv.compat` record 9: `sm_90a` even when the entry lacks
//! the flag), and a family cubin without its `f` (`sm_100`): nothing in
//! the cubin marks it. The [`Variant`] of an entry follows that: the flags
//! for PTX and for compressed cubins (read without being decompressed),
//! the cubin for the others, with the family flag kept for cubins too.
//!
//! # Compressed entries
//!
//! Found by experiment on what CUDA 13.0's `fatbinary` writes
//! (`--compress-all`, each `--compress-mode`) and on the PTX of NVIDIA's
//! CUDA 12 libraries, checked against `cuobjdump -xelf`/`-xptx`:
//!
//! - flag 0x2000 (`--compress-mode=speed`, and the PTX of CUDA 12
//!   libraries): the payload is one raw LZ4 *block* (no frame header, no
//!   checksum, no size prefix) of exactly the compressed size (offset 16),
//!   which decodes to exactly the decompressed size (offset 56);
//! - flag 0x8000 (`default`, `size`, `balance`): the payload is one zstd
//!   frame of the compressed size, decoding to the decompressed size;
//! - either way the stored payload is the compressed bytes padded with
//!   zeros to a multiple of 8, and the payload size (offset 8) counts the
//!   padding. The decompressed bytes are what cuobjdump writes for a cubin;
//!   for PTX it writes the text before the first NUL ([`ptx_text`]), not
//!   the NUL that ends it nor the padding after it.
//!
//! [`Entry::payload`] is the compressed bytes; [`Entry::reader`] streams
//! the image as the CUDA driver loads it, in constant memory, and
//! [`Entry::contents`] gives it in one piece. No other flag has been seen to mean compression.
//!
//! Wrapper (`.nvFatBinSegment` / `.hipFatBinSegment`, 24 bytes on 64-bit
//! targets): u32 magic (CUDA 0x466243B1, HIP 0x48495046 "HIPF", rocm-kpack's
//! externalised 0x4B504948 "HIPK"), u32 version, pointer to the fatbin data,
//! pointer to a file name or (CUDA version 2) to an array of prelinked
//! fatbins.
//!
//! # Examples
//!
//! Read a fatbin container (here built by hand: one uncompressed 64-bit
//! CUDA cubin for sm_80):
//!
//! ```
//! use offload_kit::fatbin::{self, KIND_ELF};
//!
//! let payload = *b"\x7fELF...";
//! let mut entry = Vec::new();
//! entry.extend_from_slice(&(KIND_ELF as u16).to_le_bytes()); // kind
//! entry.extend_from_slice(&0x0101u16.to_le_bytes());
//! entry.extend_from_slice(&64u32.to_le_bytes()); // header size
//! entry.extend_from_slice(&(payload.len() as u64).to_le_bytes());
//! entry.extend_from_slice(&[0; 8]); // compressed size, options offset
//! entry.extend_from_slice(&[0, 0, 0, 0]); // code version
//! entry.extend_from_slice(&80u32.to_le_bytes()); // sm_80
//! entry.extend_from_slice(&[0; 8]); // no object name
//! entry.extend_from_slice(&(0x1u64 | 0x4).to_le_bytes()); // 64-bit, CUDA
//! entry.extend_from_slice(&[0; 16]); // reserved, decompressed size
//! entry.extend_from_slice(&payload);
//! let mut data = vec![0x50, 0xED, 0x55, 0xBA, 1, 0, 16, 0];
//! data.extend_from_slice(&(entry.len() as u64).to_le_bytes());
//! data.extend_from_slice(&entry);
//!
//! assert!(fatbin::has_magic(&data));
//! let fb = fatbin::read(&data)?;
//! let e = &fb.entries[0];
//! assert_eq!((e.kind, e.arch_name(), e.triple()), (KIND_ELF, "sm_80".to_string(), "nvptx64-nvidia-cuda"));
//! assert_eq!(&e.contents(1 << 20)?[..], &payload[..]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use std::borrow::Cow;
use std::io::Read;

pub(crate) mod cubin;
mod decompress;
pub(crate) mod lz4;

pub use decompress::Method;
pub(crate) use decompress::{decoder, decompress};

use zerocopy::FromBytes;
use zerocopy::little_endian::{U16, U32, U64};
use zerocopy::{Immutable, KnownLayout, Unaligned};

use crate::bytes::Bytes;
use crate::error::{Error, ErrorKind, Result};
use crate::num::{len64, u64_from, usize_from};

/// The four bytes that start a fatbin container (0xBA55ED50 little-endian).
pub(crate) const MAGIC: [u8; 4] = [0x50, 0xED, 0x55, 0xBA];

/// The section clang gives a CUDA fatbin in an ELF host object.
pub(crate) const SECTION_CUDA: &[u8] = b".nv_fatbin";
/// The section clang gives a HIP fatbin in an ELF host object.
pub(crate) const SECTION_HIP: &[u8] = b".hip_fatbin";
/// The section of the CUDA fatbin wrapper in an ELF host object.
pub(crate) const WRAPPER_SECTION_CUDA: &[u8] = b".nvFatBinSegment";
/// The section of the HIP fatbin wrapper in an ELF host object.
pub(crate) const WRAPPER_SECTION_HIP: &[u8] = b".hipFatBinSegment";

/// Magic of a CUDA fatbin wrapper (`__cudaFatBinaryWrapper`).
pub(crate) const WRAPPER_CUDA: u32 = 0x4662_43B1;
/// Magic of a HIP fatbin wrapper ("HIPF" read as a little-endian u32).
pub(crate) const WRAPPER_HIP: u32 = 0x4849_5046;
/// Magic rocm-kpack writes in place of [`WRAPPER_HIP`] when it moved the
/// device code out of the file ("HIPK").
pub(crate) const WRAPPER_HIPK: u32 = 0x4B50_4948;

/// Container header.
#[derive(Debug, Clone, Copy, FromBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
pub(crate) struct Header {
    pub(crate) magic: [u8; 4],
    pub(crate) version: U16,
    pub(crate) header_size: U16,
    /// The bytes of the entries after the header.
    pub(crate) size: U64,
}
const _: () = assert!(size_of::<Header>() == 16);

/// The fixed 64 bytes of an entry header.
#[derive(Debug, Clone, Copy, FromBytes, KnownLayout, Immutable, Unaligned)]
#[repr(C)]
struct EntryHeader {
    kind: U16,
    unknown: U16,
    header_size: U32,
    payload_size: U64,
    compressed_size: U32,
    options_offset: U32,
    minor: U16,
    major: U16,
    arch: U32,
    name_offset: U32,
    name_len: U32,
    flags: U64,
    reserved: U64,
    decompressed_size: U64,
}
const _: () = assert!(size_of::<EntryHeader>() == 64);

const HEADER_SIZE: u64 = size_of::<Header>() as u64;
const ENTRY_HEADER_SIZE: u64 = size_of::<EntryHeader>() as u64;
/// Entry headers larger than this are taken as corrupt.
const MAX_ENTRY_HEADER: u64 = 4096;

/// Entry kind: PTX text.
pub const KIND_PTX: u16 = 1;
/// Entry kind: an ELF cubin.
pub const KIND_ELF: u16 = 2;
/// Entry kind: NVVM IR, for link-time optimisation (`cuobjdump` lists it
/// as "nvvm code", with the `nvvmOptions` its header holds, and will not
/// dump it). Its payload, LZ4-flagged in NVIDIA's libraries, does not
/// decode as LZ4 from any offset: it is stored in a form no public reader
/// undoes, so the scanners take its stored bytes as the image
/// ([`Entry::is_opaque`]).
pub const KIND_NVVM: u16 = 8;

/// The PTX text of a PTX entry's (decompressed) payload: its bytes before
/// the first NUL, which is what `cuobjdump -xptx` writes (the entry stores
/// the text NUL-terminated, and uncompressed entries are padded with zeros
/// to a multiple of 8). A payload without a NUL is all text.
pub fn ptx_text(payload: &[u8]) -> &[u8] {
    match memchr::memchr(0, payload) {
        Some(end) => &payload[..end],
        None => payload,
    }
}

/// Flag: 64-bit code.
pub(crate) const FLAG_64BIT: u64 = 0x1;
/// Flag: CUDA (as opposed to OpenCL, [`FLAG_OPENCL`]).
pub(crate) const FLAG_CUDA: u64 = 0x4;
/// Flag: OpenCL.
pub(crate) const FLAG_OPENCL: u64 = 0x8;
/// Flag: the payload is an LZ4 block.
pub(crate) const FLAG_LZ4: u64 = 0x2000;
/// Flag: the payload is a zstd frame.
pub(crate) const FLAG_ZSTD: u64 = 0x8000;
/// Flags that mark a compressed payload.
pub(crate) const FLAGS_COMPRESSED: u64 = FLAG_LZ4 | FLAG_ZSTD;
/// Flag: architecture-specific code (`sm_90a`).
pub(crate) const FLAG_ARCH_SPECIFIC: u64 = 0x10_0000;
/// Flag: family code (`sm_100f`).
pub(crate) const FLAG_FAMILY: u64 = 0x20_0000;

/// Which code for its SM an entry holds: what the `a` or `f` after the SM
/// number says (`sm_90a`, `sm_100f`), and which devices run it
/// (docs/target-rules.md §3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Variant {
    /// Plain code (`sm_90`): a cubin runs on devices of the same major
    /// version and at least its minor, PTX is compiled for any device at
    /// least as new.
    #[default]
    Plain,
    /// Architecture-specific code (`sm_90a`): only devices of exactly that
    /// SM run it (PTX too).
    ArchSpecific,
    /// Family code (`sm_100f`): devices of the same major version and at
    /// least its minor run it (PTX too: it does not go past the family).
    Family,
}

impl Variant {
    /// The suffix the variant puts after the SM number: ``, `a` or `f`.
    pub fn suffix(self) -> &'static str {
        match self {
            Variant::Plain => "",
            Variant::ArchSpecific => "a",
            Variant::Family => "f",
        }
    }
}

/// One entry of a fatbin container.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Entry<'data> {
    /// Kind: [`KIND_PTX`], [`KIND_ELF`] or another value.
    pub kind: u16,
    /// Offset of the entry header from the container start.
    pub offset: u64,
    /// Offset of the payload from the container start.
    pub payload_offset: u64,
    /// The payload as stored: for a compressed entry, the compressed bytes
    /// without the padding after them ([`Entry::contents`] decompresses).
    pub payload: &'data [u8],
    /// SM architecture number (80 for `sm_80`).
    pub arch: u32,
    /// Which code for the SM it holds (see [`Entry::arch_name`]).
    pub variant: Variant,
    /// Code version (major, minor).
    pub version: (u16, u16),
    /// Flags.
    pub flags: u64,
    /// The object name the entry carries, when it points inside the entry.
    pub name: Option<&'data [u8]>,
    /// The compiler options the entry records (`ptxasOptions` of a PTX
    /// entry, `nvvmOptions` of an NVVM one, as `cuobjdump` prints them),
    /// when its header points at them.
    pub options: Option<&'data [u8]>,
    /// The decompressed size, for compressed entries.
    pub decompressed_size: Option<u64>,
}

impl<'data> Entry<'data> {
    /// Whether the payload is stored in a form that cannot be decoded
    /// ([`KIND_NVVM`]): its stored bytes are the image, whatever its
    /// flags say.
    pub fn is_opaque(&self) -> bool {
        self.kind == KIND_NVVM
    }

    /// Whether the payload is compressed.
    pub fn compressed(&self) -> bool {
        self.flags & FLAGS_COMPRESSED != 0
    }

    /// How the payload is compressed, for compressed entries.
    pub fn method(&self) -> Option<Method> {
        if self.flags & FLAG_ZSTD != 0 {
            Some(Method::Zstd)
        } else if self.flags & FLAG_LZ4 != 0 {
            Some(Method::Lz4)
        } else {
            None
        }
    }

    /// The compression scheme's name (`lz4`, `zstd`), for compressed
    /// entries.
    pub fn compression(&self) -> Option<&'static str> {
        self.method().map(Method::name)
    }

    /// The image as the CUDA driver loads it: the payload, or for a
    /// compressed entry the payload decompressed to exactly its declared
    /// size, which may not exceed `limit` (checked before anything is
    /// decompressed).
    pub fn contents(&self, limit: u64) -> Result<Cow<'data, [u8]>> {
        match (self.method(), self.decompressed_size) {
            (Some(m), Some(size)) => Ok(Cow::Owned(decompress(m, self.payload, size, limit)?)),
            _ => Ok(Cow::Borrowed(self.payload)),
        }
    }

    /// The image as the CUDA driver loads it, as a stream: the payload, or
    /// for a compressed entry its decoder, which yields exactly the
    /// declared size (at most `limit`, checked before anything is
    /// decompressed) or fails the read.
    pub fn reader(&self, limit: u64) -> Result<Box<dyn Read + 'data>> {
        match (self.method(), self.decompressed_size) {
            (Some(m), Some(size)) => decoder(m, self.payload, size, limit),
            _ => Ok(Box::new(self.payload)),
        }
    }

    /// Whether the entry is OpenCL code (the OpenCL flag without the CUDA
    /// one); otherwise it is CUDA code.
    pub fn is_opencl(&self) -> bool {
        self.flags & FLAG_OPENCL != 0 && self.flags & FLAG_CUDA == 0
    }

    /// The architecture name as `cuobjdump` prints it: `sm_<n>`, with `a`
    /// for arch-specific code and, for PTX, `f` for family code (a family
    /// cubin is named as a plain one, `sm_100`; [`Entry::code_arch`] says
    /// `sm_100f`).
    pub fn arch_name(&self) -> String {
        match (self.variant, self.kind) {
            (Variant::Family, k) if k != KIND_PTX => format!("sm_{}", self.arch),
            (v, _) => format!("sm_{}{}", self.arch, v.suffix()),
        }
    }

    /// The architecture the code is built for, as the compilers' `-arch`
    /// names it with `sm_`: `sm_<n>` and the variant's suffix (`sm_100f`
    /// for a family cubin, which [`Entry::arch_name`] calls `sm_100`).
    pub fn code_arch(&self) -> String {
        format!("sm_{}{}", self.arch, self.variant.suffix())
    }

    /// The target triple the code is for.
    pub fn triple(&self) -> &'static str {
        if self.flags & FLAG_64BIT != 0 {
            "nvptx64-nvidia-cuda"
        } else {
            "nvptx-nvidia-cuda"
        }
    }
}

/// A parsed fatbin container.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Fatbin<'data> {
    /// Format version (1).
    pub version: u16,
    /// Bytes the container occupies: its header and its entries.
    pub size: u64,
    /// The entries, in file order.
    pub entries: Vec<Entry<'data>>,
}

/// Whether `data` starts with the fatbin magic.
pub fn has_magic(data: &[u8]) -> bool {
    data.starts_with(&MAGIC)
}

/// Reads the fatbin container at the start of `data`. Every size is checked
/// against the container and the container against `data`; bytes after it
/// are not looked at.
pub fn read(data: &[u8]) -> Result<Fatbin<'_>> {
    let (version, hsize, end) = read_header(data)?;
    let mut entries = Vec::new();
    let mut at = hsize;
    while at < end {
        let (entry, entry_end) = read_entry(data, at, end)?;
        entries.push(entry);
        at = entry_end;
    }
    Ok(Fatbin {
        version,
        size: end,
        entries,
    })
}

/// The container header at the start of `data`, checked against `data`:
/// the version, the header's size and where the entries end.
fn read_header(data: &[u8]) -> Result<(u16, u64, u64)> {
    let len = len64(data);
    if !has_magic(data) {
        return Err(ErrorKind::BadMagic {
            what: "CUDA fatbin",
            offset: 0,
            expected: "50 ED 55 BA",
        }
        .into());
    }
    let Ok((h, _)) = Header::read_from_prefix(data) else {
        return Err(ErrorKind::Truncated {
            what: "CUDA fatbin header",
            offset: 0,
            need: HEADER_SIZE,
            have: len,
        }
        .into());
    };
    let version = h.version.get();
    if version != 1 {
        return Err(ErrorKind::UnsupportedVersion {
            what: "CUDA fatbin",
            version: u64::from(version),
            offset: 0,
        }
        .into());
    }
    let hsize = u64::from(h.header_size.get());
    if !(HEADER_SIZE..=MAX_ENTRY_HEADER).contains(&hsize) {
        return Err(Error::invalid(
            "CUDA fatbin header size",
            format!("{hsize} (expected 16)"),
        ));
    }
    let body = h.size.get();
    let end = hsize
        .checked_add(body)
        .filter(|&e| e <= len)
        .ok_or_else(|| ErrorKind::OutOfBounds {
            what: "CUDA fatbin entries".into(),
            offset: hsize,
            size: body,
            within: "data",
            limit: len,
        })?;
    Ok((version, hsize, end))
}

/// The entry at `at`, checked against the entries, which end at `end`
/// (`at < end <= data.len()`); and where the next entry starts.
fn read_entry(data: &[u8], at: u64, end: u64) -> Result<(Entry<'_>, u64)> {
    let room = end - at;
    // `at < end <= len`, so the slice start is in range.
    let Ok((e, _)) = EntryHeader::read_from_prefix(&data[usize_from(at)..usize_from(end)]) else {
        return Err(ErrorKind::Truncated {
            what: "CUDA fatbin entry header",
            offset: at,
            need: ENTRY_HEADER_SIZE,
            have: room,
        }
        .into());
    };
    let ehsize = u64::from(e.header_size.get());
    if !(ENTRY_HEADER_SIZE..=MAX_ENTRY_HEADER).contains(&ehsize) || ehsize > room {
        return Err(Error::invalid(
            format!("header size of the CUDA fatbin entry at {at:#x}"),
            format!("{ehsize} (at least 64, and {room} bytes remain)"),
        ));
    }
    let psize = e.payload_size.get();
    let payload_at = at + ehsize;
    let payload_end = payload_at
        .checked_add(psize)
        .filter(|&p| p <= end)
        .ok_or_else(|| ErrorKind::OutOfBounds {
            what: format!("payload of the CUDA fatbin entry at {at:#x}"),
            offset: payload_at,
            size: psize,
            within: "container",
            limit: end,
        })?;
    let kind = e.kind.get();
    if kind == 0 {
        return Err(Error::invalid(
            format!("CUDA fatbin entry at {at:#x}"),
            "kind 0",
        ));
    }
    let entry_end = payload_end;
    let name = entry_name(data, &e, at, entry_end);
    let options = entry_options(data, &e, at, entry_end);
    let flags = e.flags.get();
    let compressed = flags & FLAGS_COMPRESSED != 0;
    let stored = if compressed {
        // The compressed bytes, when the size is believable.
        let c = u64::from(e.compressed_size.get());
        if c > 0 && c <= psize { c } else { psize }
    } else {
        psize
    };
    let payload = &data[usize_from(payload_at)..usize_from(payload_at + stored)];
    let entry = Entry {
        kind,
        offset: at,
        payload_offset: payload_at,
        payload,
        arch: e.arch.get(),
        variant: variant(kind, flags, (!compressed).then_some(payload)),
        version: (e.major.get(), e.minor.get()),
        flags,
        name,
        options,
        decompressed_size: compressed.then(|| e.decompressed_size.get()),
    };
    Ok((entry, entry_end))
}

/// The variant of an entry of kind `kind` with flags `flags`, whose
/// payload is `cubin` when it is a cubin that can be read as it is stored:
/// from the cubin where there is one that names its SM (`cuobjdump` names a
/// cubin by its own marks, whatever the entry's flags say), else from the
/// flags (arch-specific before family, as `cuobjdump` reads them); a
/// cubin's family flag counts whatever the cubin says, since no cubin
/// records it.
fn variant(kind: u16, flags: u64, cubin: Option<&[u8]>) -> Variant {
    let from_cubin = match kind {
        KIND_ELF => cubin.and_then(cubin::read).map(|t| t.arch_specific),
        _ => None,
    };
    let arch_specific = from_cubin.unwrap_or(flags & FLAG_ARCH_SPECIFIC != 0);
    if arch_specific {
        Variant::ArchSpecific
    } else if flags & FLAG_FAMILY != 0 {
        Variant::Family
    } else {
        Variant::Plain
    }
}

/// The object name the header `e` of the entry at `at` points at, when it
/// lies in the entry (ending at `entry_end`) after the 64-byte header: up
/// to its first NUL, and only if that is printable ASCII.
fn entry_name<'data>(
    data: &'data [u8],
    e: &EntryHeader,
    at: u64,
    entry_end: u64,
) -> Option<&'data [u8]> {
    let entry = data.get(usize_from(at)..usize_from(entry_end))?;
    let len = u64::from(e.name_len.get());
    if len == 0 {
        return None;
    }
    text_in_entry(entry, u64::from(e.name_offset.get()), len)
        .filter(|b| !b.is_empty() && b.iter().all(|c| c.is_ascii_graphic()))
}

/// The text `len` bytes long at `off` in `entry` (the entry's bytes, its
/// header included), up to its first NUL: `None` when it starts inside
/// the 64-byte header or reaches past the entry.
fn text_in_entry(entry: &[u8], off: u64, len: u64) -> Option<&[u8]> {
    if off < ENTRY_HEADER_SIZE {
        return None;
    }
    let start = usize::try_from(off).ok()?;
    let end = start.checked_add(usize::try_from(len).ok()?)?;
    let text = entry.get(start..end)?;
    Some(text.split(|&c| c == 0).next().unwrap_or_default())
}

/// The options the header `e` of the entry at `at` (ending at
/// `entry_end`) records. Its options-offset field (offset 20), when not 0,
/// gives where in the entry two u32s lie: the text's own offset from the
/// entry start and its length (`fatbinary --cmdline` writes them; an NVVM
/// entry's are at 64, pointing at 72). The text is read up to its first
/// NUL, and must lie after the 64-byte header and inside the entry; an
/// empty text is `Some` (the entry records no options), a pointer that
/// leads outside the entry `None`.
fn entry_options<'data>(
    data: &'data [u8],
    e: &EntryHeader,
    at: u64,
    entry_end: u64,
) -> Option<&'data [u8]> {
    let field = u64::from(e.options_offset.get());
    if field < ENTRY_HEADER_SIZE {
        return None;
    }
    let entry = data.get(usize_from(at)..usize_from(entry_end))?;
    let field = usize::try_from(field).ok()?;
    let off = crate::bytes::le_at::<u32>(entry, field)?;
    let len = crate::bytes::le_at::<u32>(entry, field.checked_add(4)?)?;
    text_in_entry(entry, off.into(), len.into())
}

/// A fatbin wrapper (`{magic, version, data, filename}`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wrapper {
    /// The magic: CUDA's 0x466243B1, HIP's 0x48495046 ("HIPF") or
    /// rocm-kpack's 0x4B504948 ("HIPK"); see [`Wrapper::flavor`].
    pub magic: u32,
    /// The version field.
    pub version: u32,
    /// The pointer to the fatbin data, as stored (0 when a relocation fills
    /// it in).
    pub data: u64,
    /// The second pointer, as stored.
    pub extra: u64,
}

impl Wrapper {
    /// A name for the magic: `cuda`, `hip` or `hipk`.
    pub fn flavor(&self) -> &'static str {
        match self.magic {
            WRAPPER_CUDA => "cuda",
            WRAPPER_HIPK => "hipk",
            _ => "hip",
        }
    }
}

/// The bytes of a fatbin wrapper of a 64-bit target as a compiler emits it
/// before relocation (`__fatBinC_Wrapper_t`, docs/formats/cuda-fatbin.md): `magic`,
/// `version`, then the data pointer and the second pointer as zeros (a
/// relocation fills the data pointer in). `big_endian` picks the byte order
/// of the two 32-bit fields.
pub(crate) fn write_wrapper(magic: u32, version: u32, big_endian: bool) -> [u8; WRAPPER_SIZE_64] {
    let mut out = [0u8; WRAPPER_SIZE_64];
    let (m, v) = if big_endian {
        (magic.to_be_bytes(), version.to_be_bytes())
    } else {
        (magic.to_le_bytes(), version.to_le_bytes())
    };
    out[..4].copy_from_slice(&m);
    out[4..8].copy_from_slice(&v);
    out
}

/// Bytes of a fatbin wrapper on a 64-bit target (two u32, two pointers).
pub(crate) const WRAPPER_SIZE_64: usize = 24;
/// Bytes of a fatbin wrapper on a 32-bit target.
pub(crate) const WRAPPER_SIZE_32: usize = 16;
/// Offset of the data pointer in a fatbin wrapper.
pub(crate) const WRAPPER_DATA_OFFSET: u64 = 8;

/// Reads the wrappers in a `.nvFatBinSegment` / `.hipFatBinSegment` section
/// of a 64-bit (`wide`) or 32-bit file: one every 24 (or 16) bytes, with
/// their offsets in the section. A record with an unknown magic ends the
/// list with an error.
pub fn read_wrappers(data: &[u8], wide: bool) -> Result<Vec<(u64, Wrapper)>> {
    let step = if wide {
        WRAPPER_SIZE_64
    } else {
        WRAPPER_SIZE_32
    };
    let step = u64_from(step);
    let mut out = Vec::new();
    let mut cur = Bytes::new(data);
    while !cur.rest().is_empty() {
        let at = cur.position();
        let truncated = |have: &[u8]| ErrorKind::Truncated {
            what: "fatbin wrapper",
            offset: at,
            need: step,
            have: len64(have),
        };
        let Some(rec) = cur.read_bytes(step) else {
            let rest = cur.rest();
            if rest.iter().all(|&b| b == 0) {
                break;
            }
            return Err(truncated(rest).into());
        };
        let mut fields = Bytes::new(rec);
        let (Some(magic), Some(version)) = (fields.read_u32_le(), fields.read_u32_le()) else {
            // `rec` is a whole record, so this cannot happen.
            return Err(truncated(rec).into());
        };
        if !matches!(magic, WRAPPER_CUDA | WRAPPER_HIP | WRAPPER_HIPK) {
            if rec.iter().all(|&b| b == 0) {
                continue;
            }
            return Err(Error::invalid(
                format!("fatbin wrapper at {at:#x}"),
                format!("unknown magic {magic:#010x}"),
            ));
        }
        let mut ptr = || {
            if wide {
                fields.read_u64_le()
            } else {
                fields.read_u32_le().map(u64::from)
            }
        };
        let (Some(data), Some(extra)) = (ptr(), ptr()) else {
            return Err(truncated(rec).into());
        };
        out.push((
            at,
            Wrapper {
                magic,
                version,
                data,
                extra,
            },
        ));
    }
    Ok(out)
}

/// Builds a fatbin container in memory (for tests): each entry
/// is (kind, sm, flags, payload). Payloads are padded to 8 bytes.
#[cfg(test)]
pub(crate) fn build(entries: &[(u16, u32, u64, &[u8])]) -> Vec<u8> {
    let all: Vec<_> = entries
        .iter()
        .map(|&(kind, sm, flags, payload)| (kind, sm, flags, payload, 0))
        .collect();
    build_compressed(&all)
}

/// [`build`] with compressed entries: each is (kind, sm, flags, payload,
/// decompressed size); an entry whose flags say it is compressed records
/// the payload's length as its compressed size and the decompressed size
/// given (others record zeros, as `fatbinary` does).
#[cfg(test)]
pub(crate) fn build_compressed(entries: &[(u16, u32, u64, &[u8], u64)]) -> Vec<u8> {
    let mut body = Vec::new();
    for &(kind, sm, flags, payload, decompressed) in entries {
        let padded = payload.len().div_ceil(8) * 8;
        let compressed = flags & FLAGS_COMPRESSED != 0;
        let (csize, dsize) = if compressed {
            (
                u32::try_from(payload.len()).expect("a test payload under 4 GiB"),
                decompressed,
            )
        } else {
            (0, 0)
        };
        body.extend_from_slice(&kind.to_le_bytes());
        body.extend_from_slice(&0x0101u16.to_le_bytes());
        body.extend_from_slice(&64u32.to_le_bytes());
        body.extend_from_slice(&(padded as u64).to_le_bytes());
        body.extend_from_slice(&csize.to_le_bytes()); // compressed size
        body.extend_from_slice(&0u32.to_le_bytes()); // options offset
        body.extend_from_slice(&0u16.to_le_bytes()); // minor
        body.extend_from_slice(&1u16.to_le_bytes()); // major
        body.extend_from_slice(&sm.to_le_bytes());
        body.extend_from_slice(&0u32.to_le_bytes()); // name offset
        body.extend_from_slice(&0u32.to_le_bytes()); // name length
        body.extend_from_slice(&flags.to_le_bytes());
        body.extend_from_slice(&0u64.to_le_bytes());
        body.extend_from_slice(&dsize.to_le_bytes()); // decompressed size
        body.extend_from_slice(payload);
        body.resize(body.len() + padded - payload.len(), 0);
    }
    let mut out = Vec::with_capacity(16 + body.len());
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&1u16.to_le_bytes());
    out.extend_from_slice(&16u16.to_le_bytes());
    out.extend_from_slice(&(body.len() as u64).to_le_bytes());
    out.extend_from_slice(&body);
    out
}

#[cfg(test)]
mod tests;
