//! Where OffloadBinaries are found in a file, as LLVM 22's
//! `extractOffloadBinaries` looks for them: a file that is itself a sequence
//! of binaries; ELF objects, executables and shared libraries, in sections of
//! type `SHT_LLVM_OFFLOADING`; COFF objects, in sections named
//! `.llvm.offloading*`; LLVM bitcode, in the global variables its named
//! metadata `llvm.embedded.objects` lists for `.llvm.offloading`
//! ([`crate::bitcode`]; the bytes are decoded from the bitstream, so such
//! images are owned); and the members of `ar` archives. Other files hold
//! none.

use crate::host::ar::{ArError, Archive};
use object::read::elf::{FileHeader, SectionHeader};
use object::{FileKind, elf};

use std::borrow::Cow;

use super::budget::{Budget, Spent};
use super::inflating::{Attempt, Inflating, attempt};
use super::raw::{ALIGN, align_up};
use super::read::{OffloadImage, has_magic, locate, read_all, read_binary};
use crate::Limits;
use crate::bitcode::{EmbeddedObject, EmbeddedObjects};
use crate::error::{Error, ErrorKind, Result};
use crate::num::len64;

/// Section type of `.llvm.offloading` (`SHT_LLVM_OFFLOADING` in LLVM 22's
/// `BinaryFormat/ELF.h`; older notes giving 0x6fff4c08 are wrong).
pub const SHT_LLVM_OFFLOADING: u32 = 0x6fff_4c0b;

/// The name of the ELF section clang puts OffloadBinaries in (COFF
/// objects use names starting with it).
pub const SECTION: &str = ".llvm.offloading";

/// An image and where it was found.
#[derive(Debug, Clone)]
pub struct FoundImage<'data> {
    /// The archive member it came from, if any (outermost first).
    pub member: Option<String>,
    /// The section it came from, if any.
    pub section: Option<String>,
    /// The image. When [`FoundImage::pending`] is set, its bytes are not
    /// here (`image.image` is empty).
    pub image: OffloadImage<'data>,
    /// For an image of a compressed binary that [`find_images_streamed`]
    /// did not inflate: where its bytes are to be streamed from.
    pub pending: Option<Pending>,
}

impl FoundImage<'_> {
    /// The image's size in bytes, whether its bytes are at hand or pending.
    pub fn size(&self) -> u64 {
        self.pending.map_or(len64(&self.image.image), |p| p.size)
    }
}

/// Where the bytes of an image that was not inflated are: image
/// [`OffloadImage::index`] of the compressed binary [`Streamed::binaries`]
/// `[binary]`, whose [`Inflating::stream`] gives them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Pending {
    /// The binary, by index in [`Streamed::binaries`].
    pub binary: usize,
    /// The image's size in bytes.
    pub size: u64,
}

const MAX_DEPTH: u32 = 4;

/// Every image in `data`, in file order. Compressed binaries are inflated
/// in memory (each once, within `limits`); [`find_images_streamed`] reads
/// them without inflating them.
///
/// An object embedded in LLVM bitcode is decoded into memory; one larger
/// than `limits.max_uncompressed()` is an error.
pub fn find_images<'data>(data: &'data [u8], limits: &Limits) -> Result<Vec<FoundImage<'data>>> {
    let mut out = Vec::new();
    find_in(
        data,
        crate::host::file_kind(data).ok(),
        None,
        0,
        &mut |run, member, section| {
            let found = |image| FoundImage {
                member: member.map(str::to_string),
                section: section.map(str::to_string),
                image,
                pending: None,
            };
            match run {
                Run::Data(bytes) => out.extend(read_all(bytes, limits)?.into_iter().map(found)),
                Run::Bitcode(objects, object) => {
                    if object.size > limits.max_uncompressed() {
                        return Err(ErrorKind::LimitExceeded {
                            what: bitcode_object(object, member),
                            limit: limits.max_uncompressed(),
                        }
                        .into());
                    }
                    let bytes = objects.bytes(object)?;
                    out.extend(
                        read_all(&bytes, limits)?
                            .into_iter()
                            .map(|image| found(image.into_owned())),
                    );
                }
            }
            Ok(())
        },
    )?;
    Ok(out)
}

/// How a message names the object `object` of LLVM bitcode (in archive
/// member `member`).
fn bitcode_object(object: &EmbeddedObject, member: Option<&str>) -> String {
    let mut s = format!(
        "the object @{} embedded in LLVM bitcode ({} bytes)",
        object.global, object.size
    );
    if let Some(m) = member {
        s.push_str(&format!(" in member {m}"));
    }
    s
}

/// A run of OffloadBinaries that [`find_in`] found.
enum Run<'r, 'data> {
    /// In the input (the file, a section, an archive member).
    Data(&'data [u8]),
    /// The initializer of a global variable of LLVM bitcode, to be decoded.
    Bitcode(&'r EmbeddedObjects<'data>, &'r EmbeddedObject),
}

/// What [`find_in`] calls with each run of OffloadBinaries it finds, and
/// the archive member and section it is in.
type ReadRun<'r, 'data> =
    dyn for<'o> FnMut(Run<'o, 'data>, Option<&str>, Option<&str>) -> Result<()> + 'r;

/// Calls `read` with each run of OffloadBinaries in `data` (the file
/// itself, a section, an archive member's), and the archive member and
/// section it is in. `kind` is `data`'s format as `FileKind::parse` reads
/// it (`None` where it reads none), which the caller read once.
fn find_in<'data>(
    data: &'data [u8],
    kind: Option<FileKind>,
    member: Option<&str>,
    depth: u32,
    read: &mut ReadRun<'_, 'data>,
) -> Result<()> {
    if has_magic(data) {
        return read(Run::Data(data), member, None);
    }
    if super::kinds::is_bitcode(data) {
        let objects = crate::bitcode::offloading_objects(data)?;
        for object in &objects.objects {
            read(Run::Bitcode(&objects, object), member, Some(SECTION))?;
        }
        return Ok(());
    }
    match kind {
        Some(FileKind::Elf32) => {
            elf_sections::<elf::FileHeader32<object::Endianness>>(data, &mut |bytes, name| {
                read(Run::Data(bytes), member, Some(name))
            })
        }
        Some(FileKind::Elf64) => {
            elf_sections::<elf::FileHeader64<object::Endianness>>(data, &mut |bytes, name| {
                read(Run::Data(bytes), member, Some(name))
            })
        }
        Some(FileKind::Coff) => {
            use object::{Object, ObjectSection};
            let file = object::read::coff::CoffFile::<&[u8]>::parse(data)
                .map_err(|e| obj_err("COFF object", e))?;
            for s in file.sections() {
                let name = s.name().map_err(|e| obj_err("COFF section name", e))?;
                if name.starts_with(SECTION) {
                    let bytes = s.data().map_err(|e| obj_err("COFF section", e))?;
                    read(Run::Data(bytes), member, Some(name))?;
                }
            }
            Ok(())
        }
        Some(FileKind::Archive) if depth < MAX_DEPTH => {
            let ar = Archive::parse(data).map_err(|e| ar_err("archive", e))?;
            for m in ar.members() {
                let m = m.map_err(|e| ar_err("archive member", e))?;
                let name = m.name_lossy();
                let bytes = m.data().map_err(|e| ar_err("archive member", e))?;
                let full = match member {
                    Some(outer) => format!("{outer}({name})"),
                    None => name,
                };
                let kind = crate::host::file_kind(bytes).ok();
                find_in(bytes, kind, Some(&full), depth + 1, read)?;
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

fn elf_sections<'data, H: FileHeader<Endian = object::Endianness>>(
    data: &'data [u8],
    found: &mut dyn FnMut(&'data [u8], &str) -> Result<()>,
) -> Result<()> {
    let hdr = H::parse(data).map_err(|e| obj_err("ELF header", e))?;
    let endian = hdr.endian().map_err(|e| obj_err("ELF header", e))?;
    let sections = hdr
        .sections(endian, data)
        .map_err(|e| obj_err("ELF section table", e))?;
    for s in sections.iter() {
        if s.sh_type(endian).0 != SHT_LLVM_OFFLOADING {
            continue;
        }
        let name = sections
            .section_name(endian, s)
            .map_err(|e| obj_err("ELF section name", e))?;
        let name = String::from_utf8_lossy(name).into_owned();
        let bytes = s
            .data(endian, data)
            .map_err(|e| obj_err("ELF section", e))?;
        found(bytes, &name)?;
    }
    Ok(())
}

fn obj_err(what: &str, e: object::read::Error) -> Error {
    Error::invalid(what, e.to_string())
}

fn ar_err(what: &str, e: ArError) -> Error {
    Error::invalid(what, e.to_string())
}

/// How much of a compressed binary [`find_images_streamed`] inflates
/// beyond its tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Inflate {
    /// Nothing: its images are [`Pending`], and whoever streams them
    /// ([`Inflating::stream`]) finds out whether the rest of the data is
    /// sound.
    Tables,
    /// All of it, as a stream, checked (it must inflate to exactly its
    /// declared size, without a fault), and thrown away: its images are
    /// [`Pending`].
    Check,
    /// As [`Inflate::Check`], and the images that are OffloadBinaries
    /// themselves (they start with the magic) are kept in memory, to be
    /// read in turn; the others are [`Pending`].
    Nested,
}

/// What [`find_images_streamed`] found: the images, and the compressed
/// binaries the bytes of [`Pending`] images are streamed from.
#[derive(Debug, Default)]
#[non_exhaustive]
pub struct Streamed<'data> {
    /// Every image, in file order.
    pub images: Vec<FoundImage<'data>>,
    /// The compressed binaries read for streaming ([`Pending::binary`]).
    pub binaries: Vec<Inflating<'data>>,
}

/// Every image in `data`, in file order, as [`find_images`] finds them and
/// with its errors, but spending from one command's `budget` (bytes
/// inflated, images) and never holding a compressed binary in memory where
/// its tables come first, as LLVM writes them: its tables are read from
/// its first inflated bytes and its images are [`Pending`], streamed by
/// the caller ([`Inflating::stream`]); how much is inflated now says
/// `inflate`. A compressed binary whose tables lie further in is inflated
/// whole into memory, once (within the budget).
///
/// A compressed binary spends its whole inflated size from the budget
/// before anything of it is inflated, whatever `inflate` says, so a bomb
/// fails at once. An object embedded in LLVM bitcode spends its size
/// ([`Spent::Inflated`]) before it is decoded into memory.
pub fn find_images_streamed<'data>(
    data: &'data [u8],
    budget: &Budget,
    inflate: Inflate,
) -> Result<Streamed<'data>> {
    find_images_streamed_of(data, crate::host::file_kind(data).ok(), budget, inflate)
}

/// [`find_images_streamed`] for a caller that read `data`'s format
/// already: `kind` is what `FileKind::parse` gives for it (`None` where it
/// gives an error), so that a command reads a file's format once.
pub(crate) fn find_images_streamed_of<'data>(
    data: &'data [u8],
    kind: Option<FileKind>,
    budget: &Budget,
    inflate: Inflate,
) -> Result<Streamed<'data>> {
    let mut out = Streamed::default();
    find_in(data, kind, None, 0, &mut |run, member, section| match run {
        Run::Data(bytes) => read_streamed(bytes, member, section, budget, inflate, &mut out),
        Run::Bitcode(objects, object) => {
            let size = object.size;
            budget.spend(Spent::Inflated, size, || bitcode_object(object, member))?;
            let bytes = objects.bytes(object)?;
            let mut found = Streamed::default();
            read_streamed(&bytes, member, section, budget, inflate, &mut found)?;
            // Owned now, the binaries renumbered after those before.
            let base = out.binaries.len();
            out.images
                .extend(found.images.into_iter().map(|f| FoundImage {
                    member: f.member,
                    section: f.section,
                    image: f.image.into_owned(),
                    pending: f.pending.map(|p| Pending {
                        binary: p.binary + base,
                        ..p
                    }),
                }));
            out.binaries
                .extend(found.binaries.into_iter().map(|b| b.into_owned()));
            Ok(())
        }
    })?;
    Ok(out)
}

/// [`read_all`] for [`find_images_streamed`]: the binaries in `data`, in
/// the archive member and section given, appended to `out`.
fn read_streamed<'data>(
    data: &'data [u8],
    member: Option<&str>,
    section: Option<&str>,
    budget: &Budget,
    inflate: Inflate,
    out: &mut Streamed<'data>,
) -> Result<()> {
    let place = |at: u64| {
        let mut s = format!("the OffloadBinary at {at:#x}");
        if let Some(sec) = section {
            s.push_str(&format!(" of section {sec}"));
        }
        if let Some(m) = member {
            s.push_str(&format!(" in member {m}"));
        }
        s
    };
    let found = |image, pending| FoundImage {
        member: member.map(str::to_string),
        section: section.map(str::to_string),
        image,
        pending,
    };
    let unlimited = Limits::uncompressed(u64::MAX);
    let mut at = 0u64;
    while at < len64(data) {
        let located = locate(data, at)?;
        let size = len64(located.bin);
        let mut images = Vec::new();
        if let Some(h3) = located.compressed {
            let inflated = h3.inflated_size.get();
            budget.spend(Spent::Inflated, inflated, || {
                format!("{} inflates to {inflated} bytes", place(at))
            })?;
            match attempt(data, at, &unlimited)? {
                Attempt::Ready(inf) => {
                    let n = len64(&inf.images);
                    budget.spend(Spent::Images, n, || {
                        format!("{} holds {n} images", place(at))
                    })?;
                    let mut kept = match inflate {
                        Inflate::Tables => Vec::new(),
                        Inflate::Check => keep_nested(&inf, false)?,
                        Inflate::Nested => keep_nested(&inf, true)?,
                    };
                    let binary = out.binaries.len();
                    for (i, p) in inf.images.iter().enumerate() {
                        out.images
                            .push(match kept.get_mut(i).and_then(Option::take) {
                                Some(bytes) => {
                                    let image = OffloadImage {
                                        image: Cow::Owned(bytes),
                                        ..p.meta.clone()
                                    };
                                    found(image, None)
                                }
                                None => found(
                                    p.meta.clone(),
                                    Some(Pending {
                                        binary,
                                        size: p.size,
                                    }),
                                ),
                            });
                    }
                    out.binaries.push(inf);
                }
                Attempt::Bad(e) => return Err(e),
                // Its tables lie past the first bytes: whole, in memory.
                Attempt::Beyond | Attempt::Plain => {
                    read_binary(data, at, &unlimited, &mut images)?;
                }
            }
        } else {
            read_binary(data, at, &unlimited, &mut images)?;
        }
        let n = len64(&images);
        if n > 0 {
            budget.spend(Spent::Images, n, || {
                format!("{} holds {n} images", place(at))
            })?;
        }
        out.images
            .extend(images.into_iter().map(|image| found(image, None)));
        // `at + size` is within `data`, so neither step overflows.
        at = align_up(at + size, ALIGN).unwrap_or(u64::MAX);
    }
    Ok(())
}

/// Streams the compressed binary `inf` through, checking it, and keeps
/// the bytes of each image that is an OffloadBinary itself when `nested`
/// (by index; `None` for the others).
fn keep_nested(inf: &Inflating<'_>, nested: bool) -> Result<Vec<Option<Vec<u8>>>> {
    use std::io::Read;
    let mut kept: Vec<Option<Vec<u8>>> = vec![None; inf.images.len()];
    inf.stream(&mut |_| nested, &mut |i, r| {
        let mut magic = Vec::with_capacity(4);
        r.take(4).read_to_end(&mut magic)?;
        if !has_magic(&magic) {
            return Ok(());
        }
        // Within the inflated size, which the budget allowed.
        let size = inf.images[i].size;
        let mut bytes = Vec::new();
        bytes
            .try_reserve_exact(usize::try_from(size).unwrap_or(usize::MAX))
            .map_err(|_| std::io::Error::from(std::io::ErrorKind::OutOfMemory))?;
        bytes.extend_from_slice(&magic);
        r.read_to_end(&mut bytes)?;
        kept[i] = Some(bytes);
        Ok(())
    })
    .map_err(Error::from_io)?;
    Ok(kept)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;
    use crate::Limits;
    use crate::offload_binary::{Compression, ImageSpec, compress, layout};

    /// An uncompressed version 3 binary of `images`.
    fn plain(images: &[&[u8]]) -> Vec<u8> {
        let specs: Vec<ImageSpec> = images
            .iter()
            .map(|b| ImageSpec {
                strings: vec![(b"triple".to_vec(), b"x86_64-unknown-linux-gnu".to_vec())],
                size: len64(b),
                ..ImageSpec::default()
            })
            .collect();
        let mut out = Vec::new();
        layout(&specs, crate::offload_binary::Version::V3)
            .unwrap()
            .write_to(&mut out, images)
            .unwrap();
        out
    }

    /// The bytes of every image of `s`, pending ones streamed.
    fn bytes_of(s: &Streamed<'_>) -> Vec<Vec<u8>> {
        let mut out: Vec<Vec<u8>> = s.images.iter().map(|f| f.image.image.to_vec()).collect();
        for (b, inf) in s.binaries.iter().enumerate() {
            let at: Vec<usize> = (0..s.images.len())
                .filter(|&i| s.images[i].pending.is_some_and(|p| p.binary == b))
                .collect();
            inf.stream(&mut |_| true, &mut |i, r| {
                let k = at
                    .iter()
                    .copied()
                    .find(|&k| s.images[k].image.index == i as u64);
                let mut v = Vec::new();
                r.read_to_end(&mut v)?;
                if let Some(k) = k {
                    out[k] = v;
                }
                Ok(())
            })
            .unwrap();
        }
        out
    }

    #[test]
    fn streamed_images_are_those_read_whole() {
        let big: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        let inner = plain(&[b"inner"]);
        let images: [&[u8]; 4] = [b"one", &big, &[], &inner];
        for how in [Compression::Zstd, Compression::Zlib] {
            let mut data = compress(&plain(&images), how, 3).unwrap();
            data.extend(plain(&[b"plain"]));
            let whole = find_images(&data, &Limits::default()).unwrap();
            let want: Vec<Vec<u8>> = whole.iter().map(|f| f.image.image.to_vec()).collect();
            for inflate in [Inflate::Tables, Inflate::Check, Inflate::Nested] {
                let budget = Budget::default();
                let s = find_images_streamed(&data, &budget, inflate).unwrap();
                assert_eq!(s.images.len(), 5);
                assert_eq!(s.binaries.len(), 1);
                assert_eq!(bytes_of(&s), want, "{how:?} {inflate:?}");
                for (f, w) in s.images.iter().zip(&whole) {
                    assert_eq!(f.size(), len64(&w.image.image));
                    assert_eq!(f.image.strings, w.image.strings);
                    assert_eq!(f.image.compressed, w.image.compressed);
                }
                // Only the nested binary is in memory, and only when asked.
                let kept: Vec<bool> = s.images.iter().map(|f| f.pending.is_none()).collect();
                let nested = inflate == Inflate::Nested;
                assert_eq!(kept, [false, false, false, nested, true], "{inflate:?}");
                assert_eq!(budget.spent(Spent::Images), 5);
                assert_eq!(
                    budget.spent(Spent::Inflated),
                    len64(&plain(&images)),
                    "the inflated size, spent once"
                );
            }
        }
    }

    #[test]
    fn a_bomb_spends_its_budget_before_anything_is_inflated() {
        let data = compress(&plain(&[&[0u8; 4096]]), Compression::Zstd, 3).unwrap();
        let budget = Budget::new(Limits {
            max_uncompressed: Some(4096),
            ..Limits::default()
        });
        let e = find_images_streamed(&data, &budget, Inflate::Tables).unwrap_err();
        assert!(
            matches!(
                e.kind(),
                ErrorKind::BudgetExceeded {
                    what: Spent::Inflated,
                    limit: 4096,
                    ..
                }
            ),
            "{e}"
        );
        assert_eq!(budget.spent(Spent::Inflated), 0);
        // Two reads of one input share the budget: the second is refused.
        let budget = Budget::new(Limits {
            max_uncompressed: Some(len64(&plain(&[&[0u8; 4096]])) * 3 / 2),
            ..Limits::default()
        });
        find_images_streamed(&data, &budget, Inflate::Check).unwrap();
        assert!(find_images_streamed(&data, &budget, Inflate::Check).is_err());
        // Images too.
        let budget = Budget::new(Limits {
            max_images: Some(1),
            ..Limits::default()
        });
        let two = plain(&[b"a", b"b"]);
        let e = find_images_streamed(&two, &budget, Inflate::Check).unwrap_err();
        assert!(e.to_string().contains("limit of 1 images"), "{e}");
    }

    /// `bin` (a compressed binary) with its compressed data followed by
    /// `extra` bytes inside the binary.
    fn with_trailing(bin: &[u8], extra: &[u8]) -> Vec<u8> {
        let stored = usize::try_from(u64::from_le_bytes(bin[8..16].try_into().unwrap())).unwrap();
        let mut out = bin[..stored].to_vec();
        out.extend_from_slice(extra);
        let size = len64(&out);
        out[8..16].copy_from_slice(&size.to_le_bytes());
        out.resize(out.len().div_ceil(8) * 8, 0);
        out
    }

    #[test]
    fn check_finds_what_only_the_end_of_the_stream_shows() {
        // Large enough that its tables are read without its end.
        let big: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        for how in [Compression::Zstd, Compression::Zlib] {
            let good = compress(&plain(&[&big]), how, 3).unwrap();
            let bad = with_trailing(&good, b"GARBAGE!");
            let budget = Budget::default();
            // The tables alone look fine; the whole stream does not.
            let s = find_images_streamed(&bad, &budget, Inflate::Tables).unwrap();
            assert!(
                s.binaries[0]
                    .stream(&mut |_| false, &mut |_, _| Ok(()))
                    .is_err()
            );
            for inflate in [Inflate::Check, Inflate::Nested] {
                let e = find_images_streamed(&bad, &budget, inflate).unwrap_err();
                assert!(matches!(e.kind(), ErrorKind::Decompress { .. }), "{e}");
            }
            // As read whole.
            let e = find_images(&bad, &Limits::default()).unwrap_err();
            assert!(matches!(e.kind(), ErrorKind::Decompress { .. }), "{e}");
            // A small one, inflated in its first read.
            let small = with_trailing(&compress(&plain(&[b"x"]), how, 3).unwrap(), b"GARBAGE!");
            let e = find_images_streamed(&small, &budget, Inflate::Check).unwrap_err();
            assert!(matches!(e.kind(), ErrorKind::Decompress { .. }), "{e}");
        }
    }

    fn fixture(name: &str) -> Vec<u8> {
        let p = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures");
        std::fs::read(p.join(name)).unwrap()
    }

    /// What a found image is, to compare.
    fn summary(f: &FoundImage<'_>) -> (Option<String>, Option<String>, Vec<u8>, Vec<String>) {
        let strings = f
            .image
            .strings
            .iter()
            .map(|(k, v)| {
                format!(
                    "{}={}",
                    String::from_utf8_lossy(k),
                    String::from_utf8_lossy(v)
                )
            })
            .collect();
        (
            f.member.clone(),
            f.section.clone(),
            f.image.image.to_vec(),
            strings,
        )
    }

    #[test]
    fn bitcode_holds_the_images_of_its_embedded_objects() {
        let bc = fixture("bitcode/embedded.bc");
        let multi = fixture("offload_binary/multi.bin");
        let one = fixture("offload_binary/one.bin");
        let mut want = Vec::new();
        for bin in [&multi, &one, &one] {
            for f in find_images(bin, &Limits::default()).unwrap() {
                let (_, _, image, strings) = summary(&f);
                want.push((None, Some(SECTION.to_string()), image, strings));
            }
        }
        assert_eq!(want.len(), 7);
        let whole = find_images(&bc, &Limits::default()).unwrap();
        let got: Vec<_> = whole.iter().map(summary).collect();
        assert_eq!(got, want);
        assert!(whole.iter().all(|f| matches!(f.image.image, Cow::Owned(_))));
        let budget = Budget::default();
        let s = find_images_streamed(&bc, &budget, Inflate::Nested).unwrap();
        let got: Vec<_> = s.images.iter().map(summary).collect();
        assert_eq!(got, want);
        // The decoded bytes were spent.
        assert_eq!(budget.spent(Spent::Inflated), 880 + 176 + 176);
        assert_eq!(budget.spent(Spent::Images), 7);
        // In an archive, with the member named; after an ELF object.
        let ar = fixture("bitcode/archive.a");
        let ar = find_images(&ar, &Limits::default()).unwrap();
        let members: Vec<_> = ar.iter().map(|f| f.member.as_deref().unwrap()).collect();
        let mut names = vec!["embedded.bc"; 7];
        names.push("openmp.o");
        assert_eq!(members, names);
        assert_eq!(&ar[7].image.image[..], fixture("bitcode/openmp.o.image"));
    }

    #[test]
    fn bitcode_objects_spend_their_size_before_they_are_decoded() {
        let bc = fixture("bitcode/embedded.bc");
        let budget = Budget::new(Limits {
            max_uncompressed: Some(1000),
            ..Limits::default()
        });
        let e = find_images_streamed(&bc, &budget, Inflate::Check).unwrap_err();
        assert!(
            matches!(
                e.kind(),
                ErrorKind::BudgetExceeded {
                    what: Spent::Inflated,
                    ..
                }
            ),
            "{e}"
        );
        assert!(
            e.to_string().contains("@one embedded in LLVM bitcode"),
            "{e}"
        );
        assert_eq!(budget.spent(Spent::Inflated), 880);
        let e = find_images(&bc, &Limits::uncompressed(500)).unwrap_err();
        assert!(matches!(e.kind(), ErrorKind::LimitExceeded { .. }), "{e}");
    }

    #[test]
    fn compressed_binaries_in_bitcode_stream_from_owned_bytes() {
        // Two modules in an archive, each embedding a compressed binary:
        // decoded into memory, each is read like one in a file, its images
        // pending, numbered after the binaries before it.
        let big: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        let first = compress(&plain(&[b"one", &big]), Compression::Zstd, 3).unwrap();
        let second = compress(&plain(&[&big[..5000], b"two"]), Compression::Zlib, 6).unwrap();
        let (a, b) = (
            crate::bitcode::tests::module_holding(&first),
            crate::bitcode::tests::module_holding(&second),
        );
        let members = [
            crate::archive::Member {
                name: "a.bc".into(),
                data: &a,
            },
            crate::archive::Member {
                name: "b.bc".into(),
                data: &b,
            },
        ];
        let mut ar = Vec::new();
        crate::archive::layout_gnu(&members, false)
            .unwrap()
            .write_to(&mut ar, &[&a, &b])
            .unwrap();
        let whole = find_images(&ar, &Limits::default()).unwrap();
        let want: Vec<Vec<u8>> = whole.iter().map(|f| f.image.image.to_vec()).collect();
        assert_eq!(want.len(), 4);
        let budget = Budget::default();
        let s = find_images_streamed(&ar, &budget, Inflate::Tables).unwrap();
        assert_eq!(s.binaries.len(), 2);
        let pending: Vec<Option<usize>> = s
            .images
            .iter()
            .map(|f| f.pending.map(|p| p.binary))
            .collect();
        assert_eq!(pending, [Some(0), Some(0), Some(1), Some(1)]);
        assert_eq!(bytes_of(&s), want);
        let members: Vec<_> = s.images.iter().map(|f| f.member.as_deref()).collect();
        assert_eq!(
            members,
            [Some("a.bc"), Some("a.bc"), Some("b.bc"), Some("b.bc")]
        );
    }
}
