//! The OpenMP registration of a linked program or shared library, found
//! and edited so that OffloadBinaries can go (issue #44).
//!
//! The OpenMP wrapper registers a program's device images with one call,
//! `__tgt_register_lib(&descriptor)`. The descriptor (`__tgt_bin_desc`)
//! holds the number of images, a 32-bit integer stored in the data, and a
//! pointer to an array of `__tgt_device_image`s, each four pointers: the
//! image's first byte and its end, then the host entry table's bounds.
//! The images are the OffloadBinaries in `.llvm.offloading`, and an
//! image's pointers lie inside its OffloadBinary: at its first entry's
//! image and at that image's end (docs/formats/wrapper-objects.md).
//!
//! Once linked, nothing names these structures (their symbols are local,
//! and may be stripped): they are recognised by what they hold. Each
//! pointer is read as the program sees it once loaded ([`Words`]): the
//! addend of a relative `RELA` relocation at its place, the word stored
//! there when a `REL` or `RELR` relocation or nothing (a program not
//! linked position-independent) relocates it. A slot is a pair of
//! pointers, at an OffloadBinary's image and at its end; an array is the
//! slots a descriptor's pointer and count cover, every one of them a
//! slot; the descriptor is the word before that pointer.
//!
//! When images go, their slots go from the array: the slots that stay
//! move to its front, in order, the count says how many there are, and
//! the slots after them are cleared (their pointers 0: the runtime reads
//! as many as the count says). The host entry bounds are the same in every
//! slot (the wrapper gives each image the same table) and are left alone.

use std::collections::{BTreeMap, HashMap, HashSet};

use object::elf::{self, FileHeader32, FileHeader64};
use object::read::elf::{Rel as _, Rela as _};
use object::{Endianness, U32};

use super::checked::{Refusal, add};
use super::file::{Class, Elf, entries, file_offset, relr_places};
use crate::num::u64_from;

/// A top-level OffloadBinary of the file, as the caller's scan found it:
/// its id (the caller's), where it starts in the file, and where its
/// first image lies in it and its size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Binary {
    /// Its id.
    pub(crate) id: usize,
    /// Its file offset.
    pub(crate) offset: u64,
    /// Where its first image starts in it.
    pub(crate) inner: u64,
    /// The first image's size.
    pub(crate) size: u64,
}

/// A pointer the loaded program reads: where it lies and where the file
/// keeps its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pointer {
    /// Its address.
    pub(crate) place: u64,
    /// The file offset of the word at its place, when the file keeps its
    /// value there (a `REL` or `RELR` relocation, a program that is not
    /// position-independent, or a linker that writes a `RELA` relocation's
    /// addend to its place too).
    stored: Option<u64>,
    /// The file offset of the `r_addend` of the relative `RELA`
    /// relocation that gives its value.
    addend: Option<u64>,
}

/// One image of a descriptor's array.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Slot {
    /// The pointers to the image's first byte and its end.
    start: Pointer,
    end: Pointer,
    /// The image they point at.
    image: Target,
}

/// One descriptor whose images change: what is rewritten.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Registration {
    /// The file offset of its image count.
    count_at: u64,
    /// Its slots, in array order.
    slots: Vec<Slot>,
    /// Which of them stay.
    stays: Vec<bool>,
    /// The file's byte order and word size.
    big_endian: bool,
    is_64: bool,
}

impl Registration {
    /// How many images it keeps.
    pub(crate) fn kept(&self) -> usize {
        self.stays.iter().filter(|&&s| s).count()
    }

    /// The places of its slots' image pointers: what the relocations
    /// fixed elsewhere leave to [`Registration::patches`].
    pub(crate) fn places(&self) -> impl Iterator<Item = u64> + '_ {
        self.slots.iter().flat_map(|s| [s.start.place, s.end.place])
    }

    /// The bytes to write, by file offset: the count, and each slot's
    /// pointers, the slots that stay first with their images where `moved`
    /// says their OffloadBinaries now start (given an old start address),
    /// then cleared ones.
    pub(crate) fn patches(
        &self,
        moved: &dyn Fn(u64) -> Result<u64, Refusal>,
    ) -> Result<Vec<(u64, Vec<u8>)>, Refusal> {
        let endian = match self.big_endian {
            true => Endianness::Big,
            false => Endianness::Little,
        };
        let word = |v: u64| -> Result<Vec<u8>, Refusal> {
            let w = match self.is_64 {
                true => FileHeader64::<Endianness>::word(endian, v),
                false => FileHeader32::<Endianness>::word(endian, v),
            };
            w.ok_or_else(|| format!("{v:#x} does not fit in a word of the file"))
        };
        let kept = u32::try_from(self.kept()).map_err(|_| "too many images".to_string())?;
        let mut out = vec![(
            self.count_at,
            object::pod::bytes_of(&U32::new(endian, kept)).to_vec(),
        )];
        let mut put = |p: &Pointer, v: u64| -> Result<(), Refusal> {
            for at in [p.addend, p.stored].into_iter().flatten() {
                out.push((at, word(v)?));
            }
            Ok(())
        };
        let mut staying = self
            .slots
            .iter()
            .zip(&self.stays)
            .filter(|&(_, &s)| s)
            .map(|(slot, _)| slot);
        for place in &self.slots {
            match staying.next() {
                Some(slot) => {
                    let image = &slot.image;
                    let start = add(moved(image.container_address)?, image.inner)?;
                    put(&place.start, start)?;
                    put(&place.end, add(start, image.size)?)?;
                }
                None => {
                    put(&place.start, 0)?;
                    put(&place.end, 0)?;
                }
            }
        }
        out.sort_unstable();
        Ok(out)
    }
}

/// The descriptors of the linked ELF file `data` (of the format `kind`,
/// its top-level OffloadBinaries `binaries`, in file order) that register
/// the OffloadBinaries `dropped` (ids, with their file offsets), each with
/// the slots that stay; refused when one of them is registered in no
/// descriptor found, or in a way not known here.
pub(crate) fn registrations(
    data: &[u8],
    kind: Option<object::FileKind>,
    binaries: &[Binary],
    dropped: &[(usize, u64)],
) -> Result<Vec<Registration>, Refusal> {
    let of = (binaries, dropped);
    match kind {
        Some(object::FileKind::Elf32) => find::<FileHeader32<Endianness>>(data, of),
        Some(object::FileKind::Elf64) => find::<FileHeader64<Endianness>>(data, of),
        _ => Err(
            "OpenMP descriptors are found in ELF files only, not yet in Windows PE images".into(),
        ),
    }
}

/// An OffloadBinary's image, as the loaded program sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Target {
    /// The OffloadBinary it lies in (its id).
    container: usize,
    /// Where that OffloadBinary starts (its address), where the image
    /// lies in it, and the image's size.
    container_address: u64,
    inner: u64,
    size: u64,
}

/// The pointers of a linked file as the loaded program reads them.
struct Words<'d, 'e, H: Class> {
    data: &'d [u8],
    elf: &'e Elf<'d, H>,
    /// Relative `RELA` relocations by place: addend, and the file offset
    /// of the addend.
    rela: HashMap<u64, (u64, u64)>,
    /// Places a `REL` or `RELR` relative relocation fixes up from the word
    /// stored there.
    in_place: HashSet<u64>,
    /// Places any other dynamic relocation writes (their value is not the
    /// file's to tell).
    other: HashSet<u64>,
    /// Whether a word with no relocation is an address (a program linked
    /// at a fixed address).
    fixed: bool,
}

impl<'d, 'e, H: Class> Words<'d, 'e, H> {
    fn read(data: &'d [u8], elf: &'e Elf<'d, H>) -> Result<Self, Refusal> {
        let endian = elf.endian;
        let relative = elf.relative()?;
        let is_mips64el = elf.header.is_mips64el(endian);
        let mut w = Words {
            data,
            elf,
            rela: HashMap::new(),
            in_place: HashSet::new(),
            other: HashSet::new(),
            fixed: elf.header.e_type(endian) == elf::ET_EXEC,
        };
        for (i, h) in elf.shdrs.iter().enumerate() {
            if h.sh_type == elf::SHT_RELA {
                let size = size_of::<H::Rela>();
                for (k, r) in entries::<H, H::Rela>(data, elf, i)?.iter().enumerate() {
                    let place: u64 = r.r_offset(endian).into();
                    if r.r_type(endian, is_mips64el) != relative {
                        w.other.insert(place);
                        continue;
                    }
                    let addend: i64 = r.r_addend(endian).into();
                    let addend = addend.cast_unsigned() & H::WORD_MAX;
                    let at = add(add(h.sh_offset, u64_from(k * size))?, u64_from(H::R_ADDEND))?;
                    w.rela.insert(place, (addend, at));
                }
            } else if h.sh_type == elf::SHT_REL {
                for r in entries::<H, H::Rel>(data, elf, i)? {
                    let place: u64 = r.r_offset(endian).into();
                    match r.r_type(endian) == relative {
                        true => w.in_place.insert(place),
                        false => w.other.insert(place),
                    };
                }
            } else if h.sh_type == elf::SHT_RELR {
                w.in_place.extend(relr_places(data, elf, i)?);
            }
        }
        Ok(w)
    }

    /// The file offset of the word at address `v`.
    fn offset(&self, v: u64) -> Option<u64> {
        file_offset(&self.elf.phdrs, v, u64_from(size_of::<H::Word>()))
    }

    /// The pointer at address `place`, and its value once loaded; `None`
    /// when it is no address the file tells.
    fn pointer(&self, place: u64) -> Option<(Pointer, u64)> {
        if self.other.contains(&place) {
            return None;
        }
        let at = self.offset(place);
        let stored = at.and_then(|at| self.elf.word_at(self.data, at));
        if let Some(&(value, addend)) = self.rela.get(&place) {
            // The linker may write the addend to the place too.
            let stored = at.filter(|_| stored == Some(value) && value != 0);
            return Some((
                Pointer {
                    place,
                    stored,
                    addend: Some(addend),
                },
                value,
            ));
        }
        if self.in_place.contains(&place) || self.fixed {
            return Some((
                Pointer {
                    place,
                    stored: at,
                    addend: None,
                },
                stored?,
            ));
        }
        None
    }

    /// Places that may hold a pointer to one of `values`: the relocated
    /// ones of a position-independent file, every word of the allocated,
    /// non-executable sections of one linked at a fixed address.
    fn candidates(&self, values: &HashSet<u64>) -> Vec<u64> {
        let mut out: Vec<u64> = self
            .rela
            .iter()
            .filter(|&(_, (v, _))| values.contains(v))
            .map(|(&p, _)| p)
            .collect();
        let word = size_of::<H::Word>();
        let stored_at = |place: u64| {
            self.offset(place)
                .and_then(|at| self.elf.word_at(self.data, at))
        };
        out.extend(
            self.in_place
                .iter()
                .copied()
                .filter(|&p| stored_at(p).is_some_and(|v| values.contains(&v))),
        );
        if self.fixed {
            for h in &self.elf.shdrs {
                let alloc = h.sh_flags.contains(elf::SHF_ALLOC);
                let exec = h.sh_flags.contains(elf::SHF_EXECINSTR);
                if h.sh_type != elf::SHT_PROGBITS || !alloc || exec {
                    continue;
                }
                let (Ok(start), Ok(size)) =
                    (usize::try_from(h.sh_offset), usize::try_from(h.sh_size))
                else {
                    continue;
                };
                let Some(bytes) = self.data.get(start..start.saturating_add(size)) else {
                    continue;
                };
                // Words aligned in memory (the pointers are).
                let w = u64_from(word);
                let mut k = (w - h.sh_addr % w) % w;
                while k.saturating_add(w) <= u64_from(bytes.len()) {
                    let v = H::word_at(self.elf.endian, bytes, k);
                    if v.is_some_and(|v| values.contains(&v)) {
                        out.push(h.sh_addr.saturating_add(k));
                    }
                    k += w;
                }
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }
}

/// [`registrations`] for a file of class `H`.
fn find<H: Class>(
    data: &[u8],
    (binaries, dropped): (&[Binary], &[(usize, u64)]),
) -> Result<Vec<Registration>, Refusal> {
    let is_dropped = |id: usize| dropped.iter().any(|&(d, _)| d == id);
    let elf = Elf::<H>::read(data)?;
    let words = Words::read(data, &elf)?;
    let targets = targets(&elf, binaries, &is_dropped)?;
    let slots = slots(&words, &targets)?;
    let mut found = Vec::new();
    let mut registered: HashMap<usize, usize> = HashMap::new();
    let arrays: HashSet<u64> = slots.keys().copied().collect();
    for place in words.candidates(&arrays) {
        let Some((count_at, these)) = descriptor(&words, &slots, place)? else {
            continue;
        };
        for s in &these {
            *registered.entry(s.image.container).or_default() += 1;
        }
        let stays = these
            .iter()
            .map(|s| !is_dropped(s.image.container))
            .collect();
        found.push(Registration {
            count_at,
            slots: these,
            stays,
            big_endian: elf.endian == Endianness::Big,
            is_64: elf.encoder.is_64(),
        });
    }
    for &(c, offset) in dropped {
        match registered.get(&c) {
            Some(1) => {}
            None => {
                return Err(format!(
                    "no OpenMP descriptor that registers the offload-binary at {offset:#x} \
                     was found"
                ));
            }
            Some(n) => {
                return Err(format!(
                    "the offload-binary at {offset:#x} is registered {n} times"
                ));
            }
        }
    }
    found.retain(|r| r.stays.iter().any(|&s| !s));
    Ok(found)
}

/// Every top-level OffloadBinary of the file (`binaries`), by the address
/// where its (first) image starts; refused when a dropped one is not
/// loaded.
fn targets<H: Class>(
    elf: &Elf<'_, H>,
    binaries: &[Binary],
    is_dropped: &dyn Fn(usize) -> bool,
) -> Result<BTreeMap<u64, Target>, Refusal> {
    let mut targets = BTreeMap::new();
    for c in binaries {
        let offset = c.offset;
        let Some(address) = address_of(elf, offset) else {
            if is_dropped(c.id) {
                return Err(format!(
                    "the offload-binary at {offset:#x} is not loaded with the program"
                ));
            }
            continue;
        };
        targets.insert(
            add(address, c.inner)?,
            Target {
                container: c.id,
                container_address: address,
                inner: c.inner,
                size: c.size,
            },
        );
    }
    Ok(targets)
}

/// The slots of the file, by address: a pointer at an image of `targets`,
/// and after it one at that image's end.
fn slots<H: Class>(
    words: &Words<'_, '_, H>,
    targets: &BTreeMap<u64, Target>,
) -> Result<BTreeMap<u64, Slot>, Refusal> {
    let w = u64_from(size_of::<H::Word>());
    let starts: HashSet<u64> = targets.keys().copied().collect();
    let mut slots = BTreeMap::new();
    for place in words.candidates(&starts) {
        let (Some((start, v)), Some((end, e))) =
            (words.pointer(place), words.pointer(add(place, w)?))
        else {
            continue;
        };
        let Some(t) = targets.get(&v) else { continue };
        if Some(e) != v.checked_add(t.size) {
            continue;
        }
        slots.insert(
            place,
            Slot {
                start,
                end,
                image: *t,
            },
        );
    }
    Ok(slots)
}

/// The descriptor whose array pointer lies at `place`, when there is one
/// as the wrapper writes them: the file offset of its count, and the slots
/// of its array. A count, zero padding (64-bit files), the pointer to an
/// array of that many slots, and the host entry bounds every slot names.
fn descriptor<H: Class>(
    words: &Words<'_, '_, H>,
    slots: &BTreeMap<u64, Slot>,
    place: u64,
) -> Result<Option<(u64, Vec<Slot>)>, Refusal> {
    let w = u64_from(size_of::<H::Word>());
    let Some((_, array)) = words.pointer(place) else {
        return Ok(None);
    };
    let Some(count_at) = words.offset(place.saturating_sub(w)) else {
        return Ok(None);
    };
    let Some(n) = count_at_offset(words, count_at) else {
        return Ok(None);
    };
    if n == 0 || n > slots.len() || !padding_is_zero(words.data, count_at, w) {
        return Ok(None);
    }
    let mut these = Vec::with_capacity(n);
    for k in 0..u64_from(n) {
        let Some(slot) = slots.get(&add(array, k * 4 * w)?) else {
            return Ok(None);
        };
        these.push(slot.clone());
    }
    // The host entry bounds: the descriptor's, and the same in every slot.
    let bounds = |at: u64| -> Option<(u64, u64)> {
        let b = words.pointer(at.checked_add(w)?)?.1;
        let e = words.pointer(at.checked_add(2 * w)?)?.1;
        Some((b, e))
    };
    let own = bounds(place);
    let same = these
        .iter()
        .all(|s| s.start.place.checked_add(w).and_then(bounds) == own);
    Ok((own.is_some() && same).then_some((count_at, these)))
}

/// The address file offset `at` is loaded at, when a load segment maps it.
fn address_of<H: Class>(elf: &Elf<'_, H>, at: u64) -> Option<u64> {
    elf.phdrs.iter().find_map(|p| {
        let into = at.checked_sub(p.p_offset)?;
        (p.p_type == elf::PT_LOAD && into < p.p_filesz).then(|| p.p_vaddr.checked_add(into))?
    })
}

/// Whether the bytes between a descriptor's 32-bit count at file offset
/// `at` and its pointer (a word of `w` bytes after it) are zeros.
fn padding_is_zero(data: &[u8], at: u64, w: u64) -> bool {
    let (Ok(from), Ok(to)) = (
        usize::try_from(at.saturating_add(4)),
        usize::try_from(at.saturating_add(w)),
    ) else {
        return false;
    };
    data.get(from..to)
        .is_some_and(|b| b.iter().all(|&x| x == 0))
}

/// The 32-bit image count at file offset `at`.
fn count_at_offset<H: Class>(words: &Words<'_, '_, H>, at: u64) -> Option<usize> {
    use object::ReadRef as _;
    let v: &U32<Endianness> = words.data.read_at(at).ok()?;
    usize::try_from(v.get(words.elf.endian)).ok()
}
