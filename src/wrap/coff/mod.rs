//! The wrapper object for Windows hosts: a COFF relocatable, byte for byte
//! what `llvm-offload-wrapper` + `llc -filetype=obj` write with LLVM 22
//! for `x86_64-pc-windows-msvc` and `aarch64-pc-windows-msvc`, and for
//! MinGW (`*-windows-gnu`), whose object differs only in its constructor
//! section and a linker directive (docs/formats/wrapper-objects.md §8).
//!
//! | section | flags, align | contents |
//! |---|---|---|
//! | `.text`, `.data` | code / data, 4 | empty |
//! | `.bss` | uninitialised, 4 (8 with the CUDA/HIP handle) | the handle (CUDA/HIP) |
//! | `.text.startup` | code, 16 (x64) or 4 (ARM64) | the functions |
//! | `.xdata` | read-only, 4 | the unwind records |
//! | `.rdata` (x64 HIP) | read-only, 4 | the entry loop's jump table |
//! | `llvm_offload_entries$OA`, `$OZ` | read-only, 8 | empty: where the linker's sort puts the bounds of the entries (`$OM`) |
//! | `.llvm.offloading` / `.nv_fatbin` / `.hip_fatbin` | read-only, 8 / 16 (1 up to 16 bytes) | the inputs, unchanged |
//! | `.rdata` (OpenMP) | read-only, 16 | N × `__tgt_device_image`, then `__tgt_bin_desc` |
//! | `.nvFatBinSegment` / `.hipFatBinSegment` | read-only, 8 | the 24-byte fatbin wrapper |
//! | `.CRT$XCA00101` (MinGW: `.ctors.65434`, writable) | read-only, 8 | the constructor's address |
//! | `.drectve` (MinGW) | linker info, removed | `-exclude-symbols:` for the two bounds |
//! | `.pdata` | read-only, 4 | one entry per function |
//!
//! What differs from ELF: the entry bounds are weak externals
//! (`__start_llvm_offload_entries` with a default `.weak.….default` in
//! `$OA`, `__stop_…` in `$OZ`), since no COFF linker defines
//! `__start_`/`__stop_` symbols; the constructor runs from the C
//! runtime's initializer table (`.CRT$XC*`, priority 101 in the name);
//! relocations keep their addends in the section's bytes and refer to
//! the symbols themselves (`.omp_offloading.device_image.1` plus the
//! image's offset in it), never to sections, except in `.pdata` and the
//! jump table; constant data is read-only (`.rdata`, not `.data.rel.ro`).
//! llc's special cases for tiny OpenMP images on ELF (mergeable sections)
//! do not exist on COFF: every image lies in the one `.llvm.offloading`.
//!
//! The layout (see `object.rs`): headers, then each section's bytes and
//! relocations with no padding, the symbols, the strings. With
//! [`Options::llc_layout`](super::Options::llc_layout) off, an image
//! section of 1 MiB or more starts at a multiple of 64 KiB in the file
//! instead (the zeros skipped belong to no section), as on ELF.
//!
//! Each section symbol carries the JamCRC checksum of its section's bytes,
//! images included, so the inputs' checksums must be known
//! ([`InputShape::crc`](super::InputShape)): they are read once for it,
//! never copied.
//!
//! i686 (`i686-pc-windows-msvc`: 32-bit pointers, `_`-prefixed names, no
//! `.pdata`) and the legacy and ROCm ABIs are refused.

mod aarch64;
mod asm;
mod object;
mod x86_64;

use ::object::pe;

use self::asm::{Code, Target, Unwind};
use self::object::{Coff, Data, Place, Ref, Reloc, Section, SectionId, Symbol, SymbolId};
use super::arch::Fatbin;
use super::model::{
    Abi, IMAGE_ALIGN, IMAGE_FILE_ALIGN, IMAGE_FILE_ALIGN_FROM, InputShape, Kind, Options,
};
use crate::error::{Error, ErrorKind, Result};
use crate::layout::Layout;
use crate::llvm::jam_crc::JamCrc;
use crate::llvm::triple::{Arch, CanonicalForm, Environment, ObjectFormat, Os, Triple, normalize};

/// A Windows host the wrapper writes objects for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Host {
    /// The CPU.
    machine: Machine,
    /// MinGW (`*-windows-gnu`): constructors in `.ctors`, and a
    /// `.drectve` that keeps the bounds from being exported.
    mingw: bool,
}

/// The CPUs of [`Host`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Machine {
    /// x64.
    X64,
    /// ARM64.
    Arm64,
}

impl Machine {
    fn id(self) -> u16 {
        match self {
            Machine::X64 => pe::IMAGE_FILE_MACHINE_AMD64.0,
            Machine::Arm64 => pe::IMAGE_FILE_MACHINE_ARM64.0,
        }
    }

    /// The relocation type of a 64-bit address in data.
    fn addr64(self) -> u16 {
        match self {
            Machine::X64 => pe::IMAGE_REL_AMD64_ADDR64.0,
            Machine::Arm64 => pe::IMAGE_REL_ARM64_ADDR64.0,
        }
    }

    /// The relocation type of a 32-bit image-relative address (`.pdata`).
    fn addr32nb(self) -> u16 {
        match self {
            Machine::X64 => pe::IMAGE_REL_AMD64_ADDR32NB.0,
            Machine::Arm64 => pe::IMAGE_REL_ARM64_ADDR32NB.0,
        }
    }

    /// Alignment of the code section (`IMAGE_SCN_ALIGN_*`).
    fn code_align(self) -> u32 {
        match self {
            Machine::X64 => ALIGN_16,
            Machine::Arm64 => ALIGN_4,
        }
    }

    fn openmp_code(self) -> Result<Code> {
        match self {
            Machine::X64 => x86_64::openmp_code(),
            Machine::Arm64 => aarch64::openmp_code(),
        }
    }

    fn fatbin_code(self, which: Fatbin) -> Result<Code> {
        match self {
            Machine::X64 => x86_64::fatbin_code(which),
            Machine::Arm64 => aarch64::fatbin_code(which),
        }
    }
}

/// The host for `text` if its objects are COFF (a Windows triple); an
/// error if it is one the wrapper does not write; `None` if its objects
/// are not COFF.
pub(super) fn host(text: &str) -> Result<Option<Host>> {
    let triple = Triple::parse(text);
    // The object format as written, as llc takes it from the module
    // (`x86_64-w64-mingw32` gets ELF objects from llc 22; clang passes the
    // normal form, `x86_64-w64-windows-gnu`); the OS and environment as
    // normalized.
    let normal = Triple::parse(&normalize(text, CanonicalForm::Any));
    if triple.object_format() != ObjectFormat::Coff || normal.os() != Os::Win32 {
        return Ok(None);
    }
    let unsupported = |why: String| {
        Err(ErrorKind::UnsupportedTriple {
            triple: text.to_string(),
            detail: why,
        }
        .into())
    };
    let machine = match (triple.arch(), triple.arch_name()) {
        (Arch::X86_64, "x86_64" | "amd64") => Machine::X64,
        (Arch::Aarch64, "aarch64" | "arm64") => Machine::Arm64,
        (Arch::X86, _) => {
            return unsupported(
                "32-bit Windows objects are not written (only x86_64 and aarch64 Windows)".into(),
            );
        }
        (_, arch) => {
            return unsupported(format!(
                "'{arch}' Windows objects are not written (only x86_64 and aarch64 Windows)"
            ));
        }
    };
    let mingw = match normal.environment() {
        Environment::Msvc | Environment::Unknown => false,
        Environment::Gnu => true,
        _ => {
            return unsupported(format!(
                "the '{}' Windows environment is not supported (msvc and gnu are)",
                normal.environment_name()
            ));
        }
    };
    Ok(Some(Host { machine, mingw }))
}

// Section flags, as `IMAGE_SCN_*`.
const CODE: u32 = pe::IMAGE_SCN_CNT_CODE.0 | pe::IMAGE_SCN_MEM_EXECUTE.0 | pe::IMAGE_SCN_MEM_READ.0;
const RDATA: u32 = pe::IMAGE_SCN_CNT_INITIALIZED_DATA.0 | pe::IMAGE_SCN_MEM_READ.0;
const DATA: u32 = RDATA | pe::IMAGE_SCN_MEM_WRITE.0;
const BSS: u32 =
    pe::IMAGE_SCN_CNT_UNINITIALIZED_DATA.0 | pe::IMAGE_SCN_MEM_READ.0 | pe::IMAGE_SCN_MEM_WRITE.0;
const INFO: u32 = pe::IMAGE_SCN_LNK_INFO.0 | pe::IMAGE_SCN_LNK_REMOVE.0;
const ALIGN_1: u32 = pe::IMAGE_SCN_ALIGN_1BYTES.0;
const ALIGN_4: u32 = pe::IMAGE_SCN_ALIGN_4BYTES.0;
const ALIGN_8: u32 = pe::IMAGE_SCN_ALIGN_8BYTES.0;
const ALIGN_16: u32 = pe::IMAGE_SCN_ALIGN_16BYTES.0;

/// The `.file` symbol's name (LLVM's module id).
const FILE: &[u8] = b"offload.wrapper.module";
const START: &str = "__start_llvm_offload_entries";
const STOP: &str = "__stop_llvm_offload_entries";
/// Size of `__tgt_device_image` and `__tgt_bin_desc`.
const STRUCT: u32 = 32;

/// The COFF wrapper object for `images`.
pub(super) fn layout(host: Host, opts: &Options, images: &[InputShape]) -> Result<Layout> {
    if opts.abi != Abi::Llvm {
        return Err(Error::unsupported(format!(
            "--abi={} is not written for Windows hosts (only the default ABI)",
            match opts.abi {
                Abi::Legacy => "legacy",
                _ => "rocm",
            }
        )));
    }
    let big = |size: u64| size >= IMAGE_FILE_ALIGN_FROM && !opts.llc_layout;
    let mut b = Builder::new(host);
    match opts.kind {
        Kind::OpenMp => {
            let code = host.machine.openmp_code()?;
            let placed = place(images)?;
            let file_align = if big(placed.size()) {
                IMAGE_FILE_ALIGN
            } else {
                1
            };
            b.openmp(code, opts.relocatable, images, placed, file_align)?;
        }
        Kind::Cuda | Kind::Hip => {
            let which = if opts.kind == Kind::Cuda {
                Fatbin::Cuda
            } else {
                Fatbin::Hip
            };
            let [image] = images else {
                return Err(Error::usage(
                    "CUDA / HIP offloading uses a single fatbinary or offload bundle",
                ));
            };
            let code = host.machine.fatbin_code(which)?;
            let crc = checksum(image)?;
            let file_align = if big(image.size) { IMAGE_FILE_ALIGN } else { 1 };
            b.fatbin(which, code, image.size, crc, file_align)?;
        }
    }
    b.finish()?.write()
}

/// An input's checksum, which its shape must carry for COFF.
fn checksum(image: &InputShape) -> Result<JamCrc> {
    image.crc.ok_or_else(|| {
        Error::write(
            "COFF object",
            "internal error: an input's checksum is missing",
        )
    })
}

/// Where the OpenMP inputs go in `.llvm.offloading`: each 8-aligned after
/// the one before.
struct Placed(Vec<(u64, u64)>);

impl Placed {
    fn size(&self) -> u64 {
        self.0.last().map_or(0, |&(off, len)| off + len)
    }
}

fn place(images: &[InputShape]) -> Result<Placed> {
    let mut at = 0u64;
    let mut placed = Vec::with_capacity(images.len());
    for i in images {
        let off = at
            .checked_next_multiple_of(IMAGE_ALIGN)
            .ok_or_else(|| Error::too_large("the wrapper object"))?;
        placed.push((off, i.size));
        at = off
            .checked_add(i.size)
            .ok_or_else(|| Error::too_large("the wrapper object"))?;
    }
    Ok(Placed(placed))
}

/// What a symbol of the object is, before it is listed.
#[derive(Debug, Clone, Copy)]
enum Def {
    /// A static symbol: in this section at this offset; a function or not.
    Local(SectionId, u32, bool),
    /// A weak external whose default lies at the start of this section.
    Weak(SectionId),
}

/// The object being put together: its sections, the symbols it defines,
/// and the symbols listed so far, in the order llc's assembler first
/// meets them (the code from start to end, then the data sections).
struct Builder {
    host: Host,
    coff: Coff,
    defs: Vec<(String, Def)>,
    /// Listed symbols by name.
    listed: Vec<(String, SymbolId)>,
}

impl Builder {
    fn new(host: Host) -> Builder {
        Builder {
            host,
            coff: Coff {
                machine: host.machine.id(),
                sections: Vec::new(),
                symbols: Vec::new(),
                file: FILE,
                labels: host.machine == Machine::Arm64,
            },
            defs: Vec::new(),
            listed: Vec::new(),
        }
    }

    fn add(&mut self, name: &[u8], flags: u32, bytes: Vec<u8>) -> SectionId {
        self.coff.sections.push(Section::new(name, flags, bytes));
        SectionId(self.coff.sections.len() - 1)
    }

    fn section(&mut self, id: SectionId) -> &mut Section {
        &mut self.coff.sections[id.0]
    }

    fn define(&mut self, name: &str, def: Def) {
        self.defs.push((name.to_string(), def));
    }

    /// The symbol `name`, listed now if it was not: as defined, else as an
    /// external defined elsewhere. A weak external is followed by its
    /// default.
    fn mention(&mut self, name: &str) -> SymbolId {
        if let Some(&(_, id)) = self.listed.iter().find(|(n, _)| n == name) {
            return id;
        }
        let def = self.defs.iter().find(|(n, _)| n == name).map(|&(_, d)| d);
        let push = |coff: &mut Coff, name: &str, value, place, function, class| {
            coff.symbols.push(Symbol {
                name: name.as_bytes().to_vec(),
                value,
                place,
                function,
                class,
                weak_default: None,
            });
            SymbolId(coff.symbols.len() - 1)
        };
        let static_ = pe::IMAGE_SYM_CLASS_STATIC.0;
        let external = pe::IMAGE_SYM_CLASS_EXTERNAL.0;
        let id = match def {
            Some(Def::Local(s, value, function)) => push(
                &mut self.coff,
                name,
                value,
                Place::Section(s),
                function,
                static_,
            ),
            Some(Def::Weak(s)) => {
                let weak = pe::IMAGE_SYM_CLASS_WEAK_EXTERNAL.0;
                let id = push(&mut self.coff, name, 0, Place::Undefined, false, weak);
                let default = format!(".weak.{name}.default");
                let d = push(
                    &mut self.coff,
                    &default,
                    0,
                    Place::Section(s),
                    false,
                    external,
                );
                self.coff.symbols[id.0].weak_default = Some(d);
                id
            }
            None => push(&mut self.coff, name, 0, Place::Undefined, false, external),
        };
        self.listed.push((name.to_string(), id));
        id
    }

    /// The first sections, every object's: `.text`, `.data`, `.bss` (with
    /// `bss` bytes), `.text.startup` (the code), `.xdata`.
    fn start(&mut self, code: &Code, bss: u32) -> (SectionId, SectionId, SectionId) {
        self.add(b".text", CODE | ALIGN_4, Vec::new());
        self.add(b".data", DATA | ALIGN_4, Vec::new());
        let bss_align = if bss > 0 { ALIGN_8 } else { ALIGN_4 };
        let bss_id = self.add(b".bss", BSS | bss_align, Vec::new());
        self.section(bss_id).data = Data::Bss(bss);
        let code_align = self.host.machine.code_align();
        let text = self.add(b".text.startup", CODE | code_align, code.bytes.clone());
        let xdata = self.add(b".xdata", RDATA | ALIGN_4, Vec::new());
        (bss_id, text, xdata)
    }

    /// The entry bounds' sections, with the bounds defined in them.
    fn bounds(&mut self) {
        let oa = self.add(b"llvm_offload_entries$OA", RDATA | ALIGN_8, Vec::new());
        let oz = self.add(b"llvm_offload_entries$OZ", RDATA | ALIGN_8, Vec::new());
        self.define(START, Def::Weak(oa));
        self.define(STOP, Def::Weak(oz));
    }

    /// The functions' symbols and the code's relocations, listing the
    /// symbols in the order the code meets them; `table`: the jump
    /// table's section.
    fn code(&mut self, text: SectionId, code: &Code, table: Option<SectionId>) -> Result<()> {
        for f in &code.funcs {
            self.define(&f.name, Def::Local(text, f.offset, true));
        }
        let mut events: Vec<(u32, Option<&Target>, &str)> = code
            .funcs
            .iter()
            .map(|f| (f.offset, None, &f.name[..]))
            .collect();
        events.extend(code.relocs.iter().map(|r| (r.offset, Some(&r.target), "")));
        // Functions before the relocations at the same offset.
        events.sort_by_key(|&(at, r, _)| (at, r.is_some()));
        for (_, target, name) in events {
            match target {
                None => {
                    self.mention(name);
                }
                Some(Target::Named(n)) => {
                    self.mention(n);
                }
                Some(Target::JumpTable) => {}
            }
        }
        let mut relocs = Vec::with_capacity(code.relocs.len());
        for r in &code.relocs {
            let target =
                match &r.target {
                    Target::Named(n) => Ref::Symbol(self.mention(n)),
                    Target::JumpTable => Ref::Section(table.ok_or_else(|| {
                        Error::write("COFF object", "internal error: no jump table")
                    })?),
                };
            relocs.push(Reloc {
                offset: r.offset,
                target,
                r_type: r.r_type,
            });
        }
        self.section(text).relocs = relocs;
        Ok(())
    }

    /// The constructor's section (pointing at `reg`), MinGW's `.drectve`,
    /// then `.pdata` for the functions of `code`, whose unwind records go
    /// to `xdata`.
    fn finish_sections(
        &mut self,
        reg: &str,
        code: &Code,
        (text, xdata): (SectionId, SectionId),
    ) -> Result<()> {
        let m = self.host.machine;
        let (name, flags) = if self.host.mingw {
            // GNU constructors run from `.ctors` in reverse order, so the
            // priority is written 65535 - 101.
            (&b".ctors.65434"[..], DATA | ALIGN_8)
        } else {
            (&b".CRT$XCA00101"[..], RDATA | ALIGN_8)
        };
        let ctor = self.add(name, flags, vec![0; 8]);
        let reg = self.mention(reg);
        self.section(ctor).relocs.push(Reloc {
            offset: 0,
            target: Ref::Symbol(reg),
            r_type: m.addr64(),
        });
        if self.host.mingw {
            // The bounds are hidden: not exported from a DLL.
            let directive = format!(" -exclude-symbols:{START} -exclude-symbols:{STOP}");
            self.add(b".drectve", INFO | ALIGN_1, directive.into_bytes());
        }
        let mut pdata = Vec::new();
        let mut xbytes = Vec::new();
        let mut relocs = Vec::new();
        let nb = m.addr32nb();
        let at_reloc = |pdata: &Vec<u8>, s: SectionId, relocs: &mut Vec<Reloc>| {
            relocs.push(Reloc {
                offset: u32::try_from(pdata.len()).unwrap_or(u32::MAX),
                target: Ref::Section(s),
                r_type: nb,
            });
        };
        for f in &code.funcs {
            at_reloc(&pdata, text, &mut relocs);
            pdata.extend_from_slice(&f.offset.to_le_bytes());
            if m == Machine::X64 {
                at_reloc(&pdata, text, &mut relocs);
                pdata.extend_from_slice(&(f.offset + f.len).to_le_bytes());
            }
            match &f.unwind {
                Unwind::Packed(word) => pdata.extend_from_slice(&word.to_le_bytes()),
                Unwind::Xdata(record) => {
                    at_reloc(&pdata, xdata, &mut relocs);
                    let at = u32::try_from(xbytes.len()).unwrap_or(u32::MAX);
                    pdata.extend_from_slice(&at.to_le_bytes());
                    xbytes.extend_from_slice(record);
                }
            }
        }
        self.section(xdata).data = Data::Bytes(xbytes);
        let p = self.add(b".pdata", RDATA | ALIGN_4, pdata);
        self.section(p).relocs = relocs;
        Ok(())
    }

    /// The OpenMP object.
    fn openmp(
        &mut self,
        code: Code,
        relocatable: bool,
        images: &[InputShape],
        placed: Placed,
        file_align: u64,
    ) -> Result<()> {
        let (_, text, xdata) = self.start(&code, 0);
        self.bounds();
        let name: &[u8] = if relocatable {
            b".llvm.offloading.relocatable"
        } else {
            b".llvm.offloading"
        };
        let offloading = self.add(name, RDATA | ALIGN_8, Vec::new());
        let size = placed.size();
        let mut crc = JamCrc::new();
        for (image, &(off, _)) in images.iter().zip(&placed.0) {
            crc.zeros(off - crc.len());
            crc.then(&checksum(image)?);
        }
        {
            let s = self.section(offloading);
            s.data = Data::Images {
                placed: placed.0.clone(),
                size,
                crc: crc.value(),
            };
            s.file_align = file_align;
        }
        // The image array and the descriptor.
        let count = u32::try_from(images.len()).map_err(|_| Error::usage("too many images"))?;
        let desc_at = count
            .checked_mul(STRUCT)
            .ok_or_else(|| Error::usage("too many images"))?;
        let rdata = self.add(b".rdata", RDATA | ALIGN_16, Vec::new());
        let image_name = |i: usize| match i {
            0 => ".omp_offloading.device_image".to_string(),
            i => format!(".omp_offloading.device_image.{i}"),
        };
        for (i, &(off, _)) in placed.0.iter().enumerate() {
            let off = u32::try_from(off).map_err(|_| Error::too_large("the wrapper object"))?;
            self.define(&image_name(i), Def::Local(offloading, off, false));
        }
        self.define(".omp_offloading.device_images", Def::Local(rdata, 0, false));
        self.define(
            ".omp_offloading.descriptor",
            Def::Local(rdata, desc_at, false),
        );
        self.code(text, &code, None)?;
        // The data, in the order llc emits it.
        self.mention(START);
        self.mention(STOP);
        for i in 0..images.len() {
            self.mention(&image_name(i));
        }
        let images_sym = self.mention(".omp_offloading.device_images");
        let (start, stop) = (self.mention(START), self.mention(STOP));
        let abs = self.host.machine.addr64();
        let mut bytes = Vec::new();
        let mut relocs = Vec::new();
        let mut field = |bytes: &mut Vec<u8>, target: Option<SymbolId>, value: u64| {
            if let Some(s) = target {
                relocs.push(Reloc {
                    offset: u32::try_from(bytes.len()).unwrap_or(u32::MAX),
                    target: Ref::Symbol(s),
                    r_type: abs,
                });
            }
            bytes.extend_from_slice(&value.to_le_bytes());
        };
        for (i, image) in images.iter().enumerate() {
            let sym = self.mention(&image_name(i));
            // ImageStart and ImageEnd: the device image within the input.
            field(&mut bytes, Some(sym), image.image.start);
            field(&mut bytes, Some(sym), image.image.end);
            field(&mut bytes, Some(start), 0);
            field(&mut bytes, Some(stop), 0);
        }
        // NumDeviceImages (4 bytes and 4 of padding), DeviceImages,
        // HostEntriesBegin, HostEntriesEnd.
        field(&mut bytes, None, u64::from(count));
        field(&mut bytes, Some(images_sym), 0);
        field(&mut bytes, Some(start), 0);
        field(&mut bytes, Some(stop), 0);
        let s = self.section(rdata);
        s.data = Data::Bytes(bytes);
        s.relocs = relocs;
        self.mention(".omp_offloading.descriptor");
        self.finish_sections(".omp_offloading.descriptor_reg", &code, (text, xdata))
    }

    /// The CUDA or HIP object for a fatbin of `len` bytes.
    fn fatbin(
        &mut self,
        which: Fatbin,
        code: Code,
        len: u64,
        crc: JamCrc,
        file_align: u64,
    ) -> Result<()> {
        let (p, image_name, wrapper_name, magic) = match which {
            Fatbin::Cuda => (
                "cuda",
                crate::fatbin::SECTION_CUDA,
                crate::fatbin::WRAPPER_SECTION_CUDA,
                crate::fatbin::WRAPPER_CUDA,
            ),
            Fatbin::Hip => (
                "hip",
                crate::fatbin::SECTION_HIP,
                crate::fatbin::WRAPPER_SECTION_HIP,
                crate::fatbin::WRAPPER_HIP,
            ),
        };
        let (bss, text, xdata) = self.start(&code, 8);
        // The entry loop's jump table (x64 HIP): 32-bit offsets of the
        // cases from the table's start, relocated against the code; the
        // relocation subtracts the field's end, so the addend is the case
        // plus the field's offset plus 4.
        let table = if code.jump_table.is_empty() {
            None
        } else {
            let mut bytes = Vec::new();
            let mut relocs = Vec::new();
            for &case in &code.jump_table {
                let at = u32::try_from(bytes.len()).unwrap_or(u32::MAX);
                relocs.push(Reloc {
                    offset: at,
                    target: Ref::Section(text),
                    r_type: pe::IMAGE_REL_AMD64_REL32.0,
                });
                bytes.extend_from_slice(&(case + at + 4).to_le_bytes());
            }
            let t = self.add(b".rdata", RDATA | ALIGN_4, bytes);
            self.section(t).relocs = relocs;
            Some(t)
        };
        self.bounds();
        // llc aligns a byte array of more than 16 bytes to 16; a smaller
        // one to 1 (the Windows data layouts align i8 to 1 on both CPUs).
        let align = if len > 16 { ALIGN_16 } else { ALIGN_1 };
        let image = self.add(image_name, RDATA | align, Vec::new());
        {
            let s = self.section(image);
            s.data = Data::Images {
                placed: vec![(0, len)],
                size: len,
                crc: crc.value(),
            };
            s.file_align = file_align;
        }
        let big_endian = false;
        let wrapper_bytes = crate::fatbin::write_wrapper(magic, 1, big_endian).to_vec();
        let wrapper = self.add(wrapper_name, RDATA | ALIGN_8, wrapper_bytes);
        let handle = format!(".{p}.binary_handle");
        self.define(".fatbin_wrapper", Def::Local(wrapper, 0, false));
        self.define(&handle, Def::Local(bss, 0, false));
        self.define(".fatbin_image", Def::Local(image, 0, false));
        self.code(text, &code, table)?;
        self.mention(START);
        self.mention(STOP);
        let image_sym = self.mention(".fatbin_image");
        self.mention(".fatbin_wrapper");
        let r_type = self.host.machine.addr64();
        self.section(wrapper).relocs.push(Reloc {
            offset: u32::try_from(crate::fatbin::WRAPPER_DATA_OFFSET).unwrap_or(8),
            target: Ref::Symbol(image_sym),
            r_type,
        });
        self.mention(&handle);
        self.finish_sections(&format!(".{p}.fatbin_reg"), &code, (text, xdata))
    }

    /// The object: `@feat.00` first among the symbols.
    fn finish(mut self) -> Result<Coff> {
        // `@feat.00`: the object's features for the linker, none here.
        self.coff.symbols.insert(
            0,
            Symbol {
                name: b"@feat.00".to_vec(),
                value: 0,
                place: Place::Absolute,
                function: false,
                class: pe::IMAGE_SYM_CLASS_STATIC.0,
                weak_default: None,
            },
        );
        for s in &mut self.coff.symbols {
            if let Some(d) = &mut s.weak_default {
                d.0 += 1;
            }
        }
        for sec in &mut self.coff.sections {
            for r in &mut sec.relocs {
                if let Ref::Symbol(s) = &mut r.target {
                    s.0 += 1;
                }
            }
        }
        Ok(self.coff)
    }
}

#[cfg(test)]
mod tests;
