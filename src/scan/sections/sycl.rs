//! The image table of Intel's SYCL wrapper (`.tgtimg`) and the device
//! image descriptors that name each image's target (docs/formats/sycl.md).

use std::collections::{HashMap, HashSet};

use object::{
    Object, ObjectSection, ObjectSymbol, ObjectSymbolTable, RelocationTarget, SectionKind,
};

use super::{ObjectFile, Section};
use crate::bytes::{le_at, uint_le};
use crate::num::{len64, usize_from};

/// `Kind` of a SYCL device image descriptor.
const SYCL_KIND: u8 = 4;

/// The longest target name read from a descriptor.
const MAX_TARGET: usize = 64;

/// One row of an image table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::scan) struct TableEntry {
    /// Its index in the table.
    pub index: usize,
    /// The address the row holds.
    pub address: u64,
    /// The image's size the row holds: its bytes, or, for an image the
    /// wrapper compressed, the bytes it decompresses to.
    pub size: u64,
    /// Where the image starts in the file.
    pub offset: u64,
}

/// Why a row of an image table leads to no image bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::scan) enum RowError {
    /// The table's last row is cut short: its bytes, and a row's.
    Partial {
        /// The bytes the row has.
        len: usize,
        /// The bytes a row takes.
        row: usize,
    },
    /// Row `index` gives an address no section's bytes hold.
    Unplaced {
        /// The row.
        index: usize,
        /// The address it gives.
        address: u64,
    },
    /// Row `index` gives an image (of `size` bytes, or a zstd frame when
    /// `None`) at `offset` that runs past the end of its section or the
    /// file.
    PastEnd {
        /// The row.
        index: usize,
        /// The image's size; `None` for a zstd frame.
        size: Option<u64>,
        /// Where it starts in the file.
        offset: u64,
        /// The section it starts in.
        section: String,
    },
}

impl std::fmt::Display for RowError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RowError::Partial { len, row } => {
                write!(f, "the image table's last row is {len} bytes, not {row}")
            }
            RowError::Unplaced { index, address } => write!(
                f,
                "the image table's row {index} gives the address {address:#x}, which no \
                 section's bytes hold"
            ),
            RowError::PastEnd {
                index,
                size,
                offset,
                section,
            } => {
                write!(f, "the image table's row {index} gives ")?;
                match size {
                    Some(n) => write!(f, "an image of {n} bytes")?,
                    None => f.write_str("a zstd frame")?,
                }
                write!(
                    f,
                    " at {offset:#x}, which runs past the end of section {section} or of the file"
                )
            }
        }
    }
}

/// A section that holds file bytes: its name and range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(in crate::scan) struct Span {
    /// The section's name.
    pub name: String,
    /// Its first byte's file offset.
    pub start: u64,
    /// The file offset just past its last byte.
    pub end: u64,
}

/// The sections that hold file bytes, by where they start.
pub(in crate::scan) struct Spans(Vec<Span>);

impl Spans {
    /// The section that holds offset `offset`: of those that start at or
    /// before it, the last (sections of a sane file do not overlap).
    pub(in crate::scan) fn at(&self, offset: u64) -> Option<&Span> {
        let i = self.0.partition_point(|s| s.start <= offset);
        self.0[..i].last().filter(|s| offset < s.end)
    }
}

/// The sections' addresses and file bytes, by address, for
/// [`ObjectFile::offset_of_address`]'s answer in a binary search.
struct AddressIndex {
    /// Start address, bytes that map to the file, file offset.
    ranges: Vec<(u64, u64, u64)>,
}

impl AddressIndex {
    fn of(o: &ObjectFile<'_>) -> AddressIndex {
        let pe = o.format == "PE";
        let mut ranges: Vec<(u64, u64, u64)> = o
            .file
            .sections()
            .filter_map(|s| {
                let (off, size) = s.file_range()?;
                (size > 0 && (pe || s.size() == size)).then(|| (s.address(), size, off))
            })
            .collect();
        ranges.sort_unstable();
        AddressIndex { ranges }
    }

    /// The file offset of address `addr` (never of address 0).
    fn offset(&self, addr: u64) -> Option<u64> {
        if addr == 0 {
            return None;
        }
        let i = self.ranges.partition_point(|r| r.0 <= addr);
        let &(start, size, off) = self.ranges[..i].last()?;
        (addr - start < size).then(|| off.checked_add(addr - start))?
    }
}

impl<'data> ObjectFile<'data> {
    /// The whole file.
    pub(in crate::scan) fn bytes(&self) -> &'data [u8] {
        self.data
    }

    /// The rows of the image table `sec`: pairs of pointer-sized fields,
    /// an image's address and its size. Rows of size 0 (an image with no
    /// bytes) are left out; a row whose address leads to no byte of the
    /// file is an `Err` with what is wrong. A table whose size is not a
    /// whole number of rows has its last, partial row reported.
    ///
    /// An address is what the field holds (a linked file), or what a
    /// relocation there gives: the section's own in a relocatable object,
    /// a dynamic one where a library's linker left the field zero. Those
    /// and the sections' addresses are gathered once, not looked up per
    /// row.
    pub(in crate::scan) fn image_table(
        &self,
        sec: &Section<'_>,
    ) -> Vec<Result<TableEntry, RowError>> {
        let width = if self.wide { 8 } else { 4 };
        let relocatable = self.file.kind() == object::ObjectKind::Relocatable;
        let own: HashMap<u64, object::Relocation> = if relocatable {
            self.file
                .sections()
                .find(|s| {
                    s.file_range().is_some_and(|(o, _)| o == sec.offset)
                        && s.address() == sec.address
                })
                .map(|s| s.relocations().collect())
                .unwrap_or_default()
        } else {
            HashMap::new()
        };
        let addresses = AddressIndex::of(self);
        let mut dynamic = None;
        let mut out = Vec::new();
        for (index, row) in sec.data.chunks(2 * width).enumerate() {
            if row.len() < 2 * width {
                out.push(Err(RowError::Partial {
                    len: row.len(),
                    row: 2 * width,
                }));
                break;
            }
            // `row` holds 2 * width bytes, width 4 or 8.
            let field = |b: &[u8]| uint_le(b, width).unwrap_or_default();
            let (address, size) = (field(&row[..width]), field(&row[width..]));
            if size == 0 {
                continue;
            }
            let at = len64(&sec.data[..index * 2 * width]);
            let resolved = if relocatable {
                own.get(&at).and_then(|r| self.relocated(r, address))
            } else if let Some(off) = addresses.offset(address) {
                Some(off)
            } else {
                // A library's linker may leave the field zero, to a
                // dynamic relocation.
                let targets = dynamic.get_or_insert_with(|| self.dynamic_targets());
                sec.address
                    .checked_add(at)
                    .and_then(|field| targets.get(&field))
                    .and_then(|&a| addresses.offset(a))
            };
            match resolved {
                Some(offset) => out.push(Ok(TableEntry {
                    index,
                    address,
                    size,
                    offset,
                })),
                None => out.push(Err(RowError::Unplaced { index, address })),
            }
        }
        out
    }

    /// Where each dynamic relocation of the file points, by the address it
    /// applies to: a relative one's addend, or a symbol's address plus the
    /// addend for a symbol the file defines.
    fn dynamic_targets(&self) -> HashMap<u64, u64> {
        let mut out = HashMap::new();
        let Some(relocations) = self.file.dynamic_relocations() else {
            return out;
        };
        let symbols = self.file.dynamic_symbol_table();
        for (at, r) in relocations {
            let base = match r.target() {
                RelocationTarget::Absolute => 0,
                RelocationTarget::Symbol(i) => {
                    let Some(sym) = symbols.as_ref().and_then(|t| t.symbol_by_index(i).ok()) else {
                        continue;
                    };
                    if sym.is_undefined() {
                        continue;
                    }
                    sym.address()
                }
                _ => continue,
            };
            if let Some(a) = base.checked_add_signed(r.addend()) {
                out.insert(at, a);
            }
        }
        out
    }

    /// The sections that hold file bytes, to find the one that holds an
    /// offset ([`Spans::at`]).
    pub(in crate::scan) fn spans(&self) -> Spans {
        let mut v: Vec<Span> = self
            .file
            .sections()
            .filter_map(|s| {
                let (start, size) = s.file_range()?;
                Some(Span {
                    name: String::from_utf8_lossy(s.name_bytes().unwrap_or_default()).into_owned(),
                    start,
                    end: start.checked_add(size)?,
                })
            })
            .filter(|s| s.end > s.start)
            .collect();
        v.sort_by_key(|s| s.start);
        Spans(v)
    }

    /// The target each image at an address of `addresses` is built for,
    /// as its SYCL device image descriptor names it (`spir64_gen`), where
    /// one is found: in a PE image, whose pointers hold their addresses
    /// (an ELF library's hold zero, and their relocations the addresses;
    /// there the sections' names say the targets). A descriptor starts
    /// with its version (2 or 3) and kind (4, SYCL) and holds the target
    /// name's address at 8 and the image's at 48 (version 2) or 32
    /// (version 3), 8-byte aligned. The data sections searched add up to
    /// at most the file's size.
    pub(in crate::scan) fn sycl_targets(&self, addresses: &HashSet<u64>) -> HashMap<u64, String> {
        let mut out = HashMap::new();
        if self.format != "PE" || !self.wide || addresses.is_empty() {
            return out;
        }
        let kinds = [SectionKind::Data, SectionKind::ReadOnlyData];
        for (s, data) in self.data_sections(&kinds, |_| true) {
            let skip = usize_from(s.address().wrapping_neg() % 8);
            let Some(aligned) = data.get(skip..) else {
                continue;
            };
            for (i, word) in aligned.chunks_exact(8).enumerate() {
                let value = le_at::<u64>(word, 0).unwrap_or_default();
                if !addresses.contains(&value) || out.contains_key(&value) {
                    continue;
                }
                let at = skip + i * 8;
                if let Some(target) = self.descriptor_target(data, at) {
                    out.insert(value, target);
                }
            }
        }
        out
    }

    /// The target name of the descriptor whose image address lies at
    /// `data[at..]`, if the bytes before it are one.
    fn descriptor_target(&self, data: &[u8], at: usize) -> Option<String> {
        for (version, image_at) in [(3u16, 32usize), (2, 48)] {
            let Some(start) = at.checked_sub(image_at) else {
                continue;
            };
            let Some(head) = data.get(start..start + 16) else {
                continue;
            };
            if le_at::<u16>(head, 0) != Some(version) || head[2] != SYCL_KIND {
                continue;
            }
            let target = le_at::<u64>(head, 8)?;
            let off = usize_from(self.offset_of_address(target)?);
            let bytes = self.bytes().get(off..)?;
            let name = &bytes[..bytes.len().min(MAX_TARGET)];
            let end = name.iter().position(|&b| b == 0)?;
            let name = &name[..end];
            if name.is_empty() || !name.iter().all(|b| b.is_ascii_graphic()) {
                return None;
            }
            return Some(String::from_utf8_lossy(name).into_owned());
        }
        None
    }
}
