//! The SYCL object: what LLVM 22's `clang-linker-wrapper` compiles for the
//! host from the SYCL device link's output (`wrapSYCLBinaries`), written
//! directly. `llvm-offload-wrapper` has no SYCL kind; the reference is the
//! wrapper object `clang-linker-wrapper --save-temps` keeps.
//!
//! The device link (`clang-sycl-linker`) writes OffloadBinaries. Each one's
//! image is embedded on its own (not its OffloadBinary) and described by a
//! `__sycl.tgt_device_image` (80 bytes on LP64 hosts):
//!
//! | offset | field |
//! |---:|---|
//! | 0 | `u16` version (3), `u8` offload kind, `u8` image kind |
//! | 8 | the binary's `triple` string |
//! | 16, 24 | compile and link options (always empty strings) |
//! | 32, 40 | the image's start and end |
//! | 48, 56 | the image's entry array: start and end |
//! | 64, 72 | properties (always null) |
//!
//! The image's entry array holds one `__tgt_offload_entry` (56 bytes,
//! offload kind 8) per name in the binary's `symbols` string (names one to
//! a line; empty lines skipped), naming it through a string in
//! `.llvm.rodata.offloading`. Each entry is also defined as a weak global
//! `.offloading.entry.<name>` in `llvm_offload_entries`. A
//! `__sycl.tgt_bin_desc` (version 1, the image count, the array of image
//! descriptions, two null pointers) is what the constructor (priority 1,
//! `.init_array.1`) passes to `__sycl_register_lib`, and the destructor
//! (`.fini_array.1`) to `__sycl_unregister_lib`.
//!
//! Every global lands where llc puts it: the module's globals in order,
//! each in the section its kind and size choose (strings in `.rodata.str1.N`
//! by their alignment; an empty entry array in `.rodata`), sections in the
//! order first used, local symbols in module order with each section's
//! symbol after its first global, names made unique as LLVM's symbol table
//! makes them (`.N` from one counter for the whole module). Written for
//! x86-64, AArch64 and IBM Z hosts, those checked against LLVM's bytes
//! (powerpc64le merges the constants and riscv64 relocates against
//! symbols; neither is written yet).

use std::collections::{HashMap, HashSet};
use std::ops::Range;

use object::{Endian, elf};

use super::SHT_LLVM_OFFLOADING;
use super::arch::{self, Arg, Call, CpuInfo, Function, Target, addend, internal};
use super::elf_object::{
    HostOs, finish_object, function, local, mapping, new_object, reloc, undefined,
};
use super::model::{align_up, byte_array_align};
use super::relocatable::{Place, Relocatable, SectionId, SymbolId};
use crate::Limits;
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::llvm::triple::Arch;
use crate::num::len64;
use crate::offload_binary::{self, OffloadKind};

/// The host CPUs whose SYCL objects are checked against LLVM 22's.
const SYCL_CPUS: &[Arch] = &[Arch::X86_64, Arch::Aarch64, Arch::Systemz];

/// `__tgt_offload_entry` on LP64 hosts.
const ENTRY_SIZE: u64 = 56;
/// `__sycl.tgt_device_image` on LP64 hosts.
const IMAGE_SIZE: u64 = 80;
/// `__sycl.tgt_bin_desc` on LP64 hosts.
const DESC_SIZE: u64 = 32;
/// Versions LLVM 22 writes: the image description, the descriptor, an
/// entry.
const IMAGE_VERSION: u16 = 3;
const DESC_VERSION: u16 = 1;
const ENTRY_VERSION: u16 = 1;

/// One device image the SYCL object registers, as read from the
/// OffloadBinary the device link wrote.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyclImage {
    /// The binary's offload kind, as its low byte (LLVM keeps 8 bits).
    pub offload_kind: u8,
    /// The binary's image kind, as its low byte.
    pub image_kind: u8,
    /// The binary's `triple` string (empty if it has none).
    pub triple: Vec<u8>,
    /// The names of the binary's `symbols` string, in order.
    pub symbols: Vec<Vec<u8>>,
    /// The image's length in bytes.
    pub len: u64,
}

impl SyclImage {
    /// Reads the OffloadBinaries of a SYCL device link's output: each
    /// image, and where its bytes lie in `bytes`. Anything but a run of
    /// uncompressed OffloadBinaries is an error (LLVM would wrap no image).
    pub fn read_all(bytes: &[u8]) -> Result<Vec<(SyclImage, Range<u64>)>> {
        if !offload_binary::has_magic(bytes) {
            return Err(Error::invalid(
                "SYCL device image",
                "the device link did not write an OffloadBinary",
            ));
        }
        let found = offload_binary::read_all(bytes, &Limits::default())?;
        let mut images = Vec::with_capacity(found.len());
        for b in found {
            if b.compressed {
                return Err(Error::usage(
                    "a compressed SYCL image cannot be registered (the runtime needs it in place)",
                ));
            }
            let start = b.binary_offset + b.image_offset;
            let len = len64(&b.image);
            let symbols = b
                .string("symbols")
                .split(|&c| c == b'\n')
                .filter(|s| !s.is_empty())
                .map(<[u8]>::to_vec)
                .collect();
            images.push((
                SyclImage {
                    offload_kind: b.offload_kind.0.to_le_bytes()[0],
                    image_kind: b.image_kind.0.to_le_bytes()[0],
                    triple: b.triple().to_vec(),
                    symbols,
                    len,
                },
                start..start + len,
            ));
        }
        Ok(images)
    }

    /// What LLVM 22 wraps under `--dry-run`, where nothing was linked: an
    /// empty SYCL image of no triple with one entry, `stub`.
    pub fn dry_run() -> SyclImage {
        SyclImage {
            offload_kind: OffloadKind::OFK_SYCL.0.to_le_bytes()[0],
            image_kind: 0,
            triple: Vec::new(),
            symbols: vec![b"stub".to_vec()],
            len: 0,
        }
    }
}

/// Describes the SYCL object for `images` on the host `triple`:
/// [`Piece::Image`](crate::layout::Piece::Image)`(i)` is where image `i`'s
/// bytes go.
pub fn sycl_layout(triple: &str, images: &[SyclImage]) -> Result<Layout> {
    let cpu = arch::for_triple(triple)?;
    if !SYCL_CPUS.contains(&cpu.arch) {
        return Err(Error::usage(format!(
            "SYCL images are wrapped for x86_64, aarch64 and s390x hosts only, not yet for \
             '{triple}'"
        )));
    }
    if images.is_empty() {
        return Err(Error::usage("no SYCL images to wrap"));
    }
    if u16::try_from(images.len()).is_err() {
        return Err(Error::usage("more than 65535 SYCL images"));
    }
    build(cpu, HostOs::of(triple), images)?.write()
}

/// The module's names, made unique as LLVM's symbol table makes them: a
/// taken name gets `.N`, N from one counter for the whole module.
#[derive(Default)]
struct Names {
    taken: HashSet<Vec<u8>>,
    last: u64,
}

impl Names {
    fn unique(&mut self, base: &[u8]) -> Vec<u8> {
        if self.taken.insert(base.to_vec()) {
            return base.to_vec();
        }
        loop {
            self.last += 1;
            let name = [base, format!(".{}", self.last).as_bytes()].concat();
            if self.taken.insert(name.clone()) {
                return name;
            }
        }
    }
}

/// What a global of the module is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum What {
    /// Image `i`'s triple (0), compile options (1) or link options (2).
    Str(usize, u8),
    /// Image `i`'s bytes.
    Data(usize),
    /// The name of entry `k` of image `i`.
    Name(usize, usize),
    /// Entry `k` of image `i` (the weak global).
    Entry(usize, usize),
    /// Image `i`'s entry array.
    Array(usize),
    /// The image descriptions.
    Images,
    /// The descriptor.
    Desc,
}

/// A section of the module's globals, as first used.
#[derive(Debug)]
struct Sec {
    name: Vec<u8>,
    sh_type: elf::SectionType,
    flags: elf::SectionFlags,
    entsize: u64,
    align: u64,
    size: u64,
    /// Whether relocations refer to it through its section symbol.
    referenced: bool,
}

/// A global: its name, section, offset and size.
#[derive(Debug)]
struct Global {
    what: What,
    name: Vec<u8>,
    sec: usize,
    at: u64,
    size: u64,
}

/// The module's globals, in its order, placed in their sections.
struct Module {
    secs: Vec<Sec>,
    globals: Vec<Global>,
    /// Where each global is in `globals`.
    index: HashMap<What, usize>,
}

impl Module {
    fn plan(cpu: &CpuInfo, images: &[SyclImage]) -> Result<Module> {
        let mut m = Module {
            secs: Vec::new(),
            globals: Vec::new(),
            index: HashMap::new(),
        };
        let mut names = Names::default();
        let progbits = elf::SHT_PROGBITS;
        let a = elf::SHF_ALLOC;
        let wa = elf::SHF_WRITE | elf::SHF_ALLOC;
        let ams = elf::SHF_ALLOC | elf::SHF_MERGE | elf::SHF_STRINGS;
        let too_large = || Error::too_large("the SYCL object");
        for (i, img) in images.iter().enumerate() {
            for (which, base, len) in [
                (0, "target", len64(&img.triple) + 1),
                (1, "opts.compile", 1),
                (2, "opts.link", 1),
            ] {
                let align = byte_array_align(cpu, len);
                let sec = format!(".rodata.str1.{align}").into_bytes();
                let name = names.unique(format!(".sycl_offloading.{base}.{i}").as_bytes());
                m.add(
                    What::Str(i, which),
                    name,
                    (sec, progbits, ams, 1),
                    align,
                    len,
                )?;
            }
            let name = names.unique(format!(".sycl_offloading.{i}.data").as_bytes());
            let sec = (
                b".llvm.offloading".to_vec(),
                elf::SectionType(SHT_LLVM_OFFLOADING),
                a,
                0,
            );
            m.add(
                What::Data(i),
                name,
                sec,
                byte_array_align(cpu, img.len),
                img.len,
            )?;
            for (k, sym) in img.symbols.iter().enumerate() {
                let len = len64(sym).checked_add(1).ok_or_else(too_large)?;
                let name = names.unique(b".offloading.entry_name");
                let sec = (b".llvm.rodata.offloading".to_vec(), progbits, ams, 1);
                m.add(What::Name(i, k), name, sec, 1, len)?;
                let name = names.unique(&[&b".offloading.entry."[..], sym].concat());
                let sec = (b"llvm_offload_entries".to_vec(), progbits, wa, 0);
                m.add(What::Entry(i, k), name, sec, 8, ENTRY_SIZE)?;
            }
            let n = len64(&img.symbols);
            let size = n.checked_mul(ENTRY_SIZE).ok_or_else(too_large)?;
            let name = names.unique(b".sycl_offloading.entries_arr");
            // An empty array has no relocations: plain read-only data, at
            // the structure's own alignment.
            let (sec, align) = match n {
                0 => ((b".rodata".to_vec(), progbits, a, 0), 8),
                _ => ((b".data.rel.ro".to_vec(), progbits, wa, 0), 16),
            };
            m.add(What::Array(i), name, sec, align, size)?;
        }
        let data = (b".data.rel.ro".to_vec(), progbits, wa, 0);
        let size = len64(images)
            .checked_mul(IMAGE_SIZE)
            .ok_or_else(too_large)?;
        let name = names.unique(b".sycl_offloading.device_images");
        m.add(What::Images, name, data.clone(), 16, size)?;
        let name = names.unique(b".sycl_offloading.descriptor");
        m.add(What::Desc, name, data, 16, DESC_SIZE)?;
        for g in &m.globals {
            if !matches!(g.what, What::Entry(..)) {
                m.secs[g.sec].referenced = true;
            }
        }
        Ok(m)
    }

    /// Adds a global of `size` bytes at `align` to the section `sec`
    /// (name, type, flags, entry size), made where first used.
    fn add(
        &mut self,
        what: What,
        name: Vec<u8>,
        sec: (Vec<u8>, elf::SectionType, elf::SectionFlags, u64),
        align: u64,
        size: u64,
    ) -> Result<()> {
        let (sec_name, sh_type, flags, entsize) = sec;
        let s = match self.secs.iter().position(|s| s.name == sec_name) {
            Some(s) => s,
            None => {
                self.secs.push(Sec {
                    name: sec_name,
                    sh_type,
                    flags,
                    entsize,
                    align: 1,
                    size: 0,
                    referenced: false,
                });
                self.secs.len() - 1
            }
        };
        let sec = &mut self.secs[s];
        let at = align_up(sec.size, align)?;
        sec.size = at
            .checked_add(size)
            .ok_or_else(|| Error::too_large("the SYCL object"))?;
        sec.align = sec.align.max(align);
        self.index.insert(what, self.globals.len());
        self.globals.push(Global {
            what,
            name,
            sec: s,
            at,
            size,
        });
        Ok(())
    }

    fn find(&self, what: What) -> Result<&Global> {
        self.index
            .get(&what)
            .and_then(|&i| self.globals.get(i))
            .ok_or_else(|| internal("a SYCL global is missing"))
    }
}

/// One `__tgt_offload_entry` of the SYCL kind, its name pointer zero (a
/// relocation sets it).
fn entry_bytes(cpu: &CpuInfo) -> Vec<u8> {
    let e = cpu.endian;
    let mut b = vec![0u8; 8];
    b.extend(e.write_u16(ENTRY_VERSION));
    b.extend(e.write_u16(OffloadKind::OFK_SYCL.0));
    b.resize(usize::try_from(ENTRY_SIZE).unwrap_or(56), 0);
    b
}

/// Offset of the name pointer in an entry.
const ENTRY_NAME: u64 = 24;

fn build(cpu: &'static CpuInfo, os: HostOs, images: &[SyclImage]) -> Result<Relocatable> {
    let m = Module::plan(cpu, images)?;
    let (mut obj, startup_sec) = new_object(cpu, os);
    let secs = add_sections(&mut obj, &m, images.len());
    let wa = elf::SHF_WRITE | elf::SHF_ALLOC;
    let ctor = obj.add_section(b".init_array.1", elf::SHT_INIT_ARRAY, wa, 8);
    let dtor = obj.add_section(b".fini_array.1", elf::SHT_FINI_ARRAY, wa, 8);
    let syms = local_symbols(&mut obj, cpu, &m, &secs, startup_sec)?;
    let register = undefined(&mut obj, b"__sycl_register_lib", false);
    let unregister = undefined(&mut obj, b"__sycl_unregister_lib", false);
    entry_symbols(&mut obj, &m, &secs);

    let w = Contents {
        cpu,
        m: &m,
        images,
        secs: &secs,
        sec_syms: &syms.sections,
    };
    w.write(&mut obj)?;
    let (reg_fn, unreg_fn, unreg_off) =
        w.functions(&mut obj, startup_sec, syms.desc, [register, unregister])?;
    obj.set_extent(syms.reg, 0, len64(&reg_fn.code));
    obj.set_extent(syms.unreg, unreg_off, len64(&unreg_fn.code));
    obj.set_bytes(ctor, vec![0; 8]);
    reloc(&mut obj, ctor, 0, syms.startup, 0, cpu.abs64);
    obj.set_bytes(dtor, vec![0; 8]);
    reloc(
        &mut obj,
        dtor,
        0,
        syms.startup,
        addend(unreg_off)?,
        cpu.abs64,
    );
    let fdes = [
        super::eh_frame::Fde {
            offset: 0,
            len: len64(&reg_fn.code),
            cfi: &reg_fn.cfi,
            anchor: None,
        },
        super::eh_frame::Fde {
            offset: unreg_off,
            len: len64(&unreg_fn.code),
            cfi: &unreg_fn.cfi,
            anchor: None,
        },
    ];
    finish_object(&mut obj, cpu, os, syms.startup, &fdes, &[ctor, dtor])?;
    Ok(obj)
}

/// Adds the sections of the module's globals, in the order they were first
/// used; the images' section holds the `n` images where the plan puts
/// them.
fn add_sections(obj: &mut Relocatable, m: &Module, n: usize) -> Vec<SectionId> {
    let mut secs: Vec<SectionId> = Vec::with_capacity(m.secs.len());
    for (k, s) in m.secs.iter().enumerate() {
        let id = obj.add_section(&s.name, s.sh_type, s.flags, s.align);
        if s.entsize != 0 {
            obj.set_entsize(id, s.entsize);
        }
        if s.sh_type == elf::SectionType(SHT_LLVM_OFFLOADING) {
            let mut placed = vec![(0, 0); n];
            for g in m.globals.iter().filter(|g| g.sec == k) {
                if let What::Data(i) = g.what {
                    placed[i] = (g.at, g.size);
                }
            }
            obj.set_images(id, placed, s.align);
        }
        secs.push(id);
    }
    secs
}

/// The local symbols the code and the data refer to.
struct Locals {
    /// Section symbol of `.text.startup`.
    startup: SymbolId,
    /// `sycl.descriptor_reg` (its extent set with the code).
    reg: SymbolId,
    /// `sycl.descriptor_unreg` (its extent set with the code).
    unreg: SymbolId,
    /// The descriptor's symbol.
    desc: SymbolId,
    /// Each module section's symbol, where relocations refer to it.
    sections: Vec<Option<SymbolId>>,
}

/// The local symbols: the code's first (the section, the constructor, the
/// descriptor it passes, the destructor), then the module's globals in
/// order, each section's symbol after its first.
fn local_symbols(
    obj: &mut Relocatable,
    cpu: &CpuInfo,
    m: &Module,
    secs: &[SectionId],
    startup_sec: SectionId,
) -> Result<Locals> {
    let object = elf::STT_OBJECT;
    obj.add_file_symbol(b"offload.wrapper.module");
    let startup = obj.section_symbol(startup_sec);
    let reg = function(obj, cpu, b"sycl.descriptor_reg", startup_sec, 0, 0);
    let maps = cpu.mapping_symbols;
    if maps {
        mapping(obj, b"$x", startup_sec);
    }
    let desc = m.find(What::Desc)?;
    let desc_sym = local(obj, &desc.name, secs[desc.sec], desc.at, desc.size, object);
    let unreg = function(obj, cpu, b"sycl.descriptor_unreg", startup_sec, 0, 0);
    // On CPUs with mapping symbols, a `$d` where a section's first byte of
    // data is emitted (after its section symbol).
    let mut sec_syms: Vec<Option<SymbolId>> = vec![None; m.secs.len()];
    let mut mapped = vec![false; m.secs.len()];
    for g in &m.globals {
        match g.what {
            What::Entry(..) | What::Desc => {}
            _ => {
                local(obj, &g.name, secs[g.sec], g.at, g.size, object);
            }
        }
        if !matches!(g.what, What::Entry(..))
            && m.secs[g.sec].referenced
            && sec_syms[g.sec].is_none()
        {
            sec_syms[g.sec] = Some(obj.section_symbol(secs[g.sec]));
        }
        if maps && g.size > 0 && !mapped[g.sec] {
            mapping(obj, b"$d", secs[g.sec]);
            mapped[g.sec] = true;
        }
    }
    Ok(Locals {
        startup,
        reg,
        unreg,
        desc: desc_sym,
        sections: sec_syms,
    })
}

/// The entries' weak globals (`.offloading.entry.<name>`), in the module's
/// order.
fn entry_symbols(obj: &mut Relocatable, m: &Module, secs: &[SectionId]) {
    let weak = elf::SymbolInfo::new(elf::STB_WEAK, elf::STT_OBJECT);
    for g in m
        .globals
        .iter()
        .filter(|g| matches!(g.what, What::Entry(..)))
    {
        obj.add_symbol(
            &g.name,
            weak,
            elf::SymbolOther::from(elf::STV_DEFAULT),
            Place::Section(secs[g.sec]),
            g.at,
            g.size,
        );
    }
}

/// What the contents and the code are written from: the plan, the inputs,
/// the sections and their symbols.
struct Contents<'a> {
    /// The CPU.
    cpu: &'a CpuInfo,
    /// The module's globals.
    m: &'a Module,
    /// The images.
    images: &'a [SyclImage],
    /// Each module section.
    secs: &'a [SectionId],
    /// Each module section's symbol, where relocations refer to it.
    sec_syms: &'a [Option<SymbolId>],
}

impl Contents<'_> {
    /// The section symbol relocations against `g` use.
    fn sym_of(&self, g: &Global) -> Result<SymbolId> {
        self.sec_syms[g.sec].ok_or_else(|| internal("a SYCL section without a symbol"))
    }

    /// Adds a pointer-sized relocation at `at` in `g`'s section, to
    /// `target` plus `off`.
    fn pointer(
        &self,
        obj: &mut Relocatable,
        g: &Global,
        at: u64,
        target: &Global,
        off: u64,
    ) -> Result<()> {
        reloc(
            obj,
            self.secs[g.sec],
            at,
            self.sym_of(target)?,
            addend(target.at + off)?,
            self.cpu.abs64,
        );
        Ok(())
    }

    /// The contents of the module's sections (but the images') and their
    /// relocations, in the module's order.
    fn write(&self, obj: &mut Relocatable) -> Result<()> {
        let m = self.m;
        let mut bytes: Vec<Vec<u8>> = m.secs.iter().map(|_| Vec::new()).collect();
        for g in &m.globals {
            let Some(b) = self.global(obj, g)? else {
                continue;
            };
            let buf = &mut bytes[g.sec];
            let at = usize::try_from(g.at).unwrap_or(usize::MAX);
            if buf.len() < at {
                buf.resize(at, 0);
            }
            buf.truncate(at);
            buf.extend_from_slice(&b);
        }
        for (k, b) in bytes.into_iter().enumerate() {
            if m.secs[k].sh_type != elf::SectionType(SHT_LLVM_OFFLOADING) {
                let mut b = b;
                b.resize(usize::try_from(m.secs[k].size).unwrap_or(0), 0);
                obj.set_bytes(self.secs[k], b);
            }
        }
        Ok(())
    }

    /// The bytes of global `g`, its relocations added; `None` for an
    /// image, whose bytes are the input's.
    fn global(&self, obj: &mut Relocatable, g: &Global) -> Result<Option<Vec<u8>>> {
        let (m, images, e) = (self.m, self.images, self.cpu.endian);
        Ok(Some(match g.what {
            What::Str(i, which) => {
                let s: &[u8] = match which {
                    0 => &images[i].triple,
                    _ => b"",
                };
                [s, b"\0"].concat()
            }
            What::Data(_) => return Ok(None),
            What::Name(i, k) => [&images[i].symbols[k][..], b"\0"].concat(),
            What::Entry(i, k) => {
                let name = m.find(What::Name(i, k))?;
                self.pointer(obj, g, g.at + ENTRY_NAME, name, 0)?;
                entry_bytes(self.cpu)
            }
            What::Array(i) => {
                let mut b = Vec::new();
                for k in 0..images[i].symbols.len() {
                    let name = m.find(What::Name(i, k))?;
                    let at = g.at + len64(&b) + ENTRY_NAME;
                    b.extend(entry_bytes(self.cpu));
                    self.pointer(obj, g, at, name, 0)?;
                }
                b
            }
            What::Images => self.image_descriptions(obj, g)?,
            What::Desc => {
                let mut b = Vec::new();
                b.extend(e.write_u16(DESC_VERSION));
                let n = u16::try_from(images.len()).map_err(|_| internal("image count"))?;
                b.extend(e.write_u16(n));
                b.resize(usize::try_from(DESC_SIZE).unwrap_or(32), 0);
                let array = m.find(What::Images)?;
                self.pointer(obj, g, g.at + 8, array, 0)?;
                b
            }
        }))
    }

    /// The `__sycl.tgt_device_image`s of global `g`, one per image, with
    /// their pointers' relocations.
    fn image_descriptions(&self, obj: &mut Relocatable, g: &Global) -> Result<Vec<u8>> {
        let (m, e) = (self.m, self.cpu.endian);
        let mut b = Vec::new();
        for (i, img) in self.images.iter().enumerate() {
            let base = g.at + len64(&b);
            b.extend(e.write_u16(IMAGE_VERSION));
            b.extend([img.offload_kind, img.image_kind]);
            b.resize(b.len() + 4, 0);
            let data = m.find(What::Data(i))?;
            let array = m.find(What::Array(i))?;
            let mut ptrs: Vec<(&Global, u64)> = Vec::new();
            for which in 0..3 {
                ptrs.push((m.find(What::Str(i, which))?, 0));
            }
            ptrs.extend([
                (data, 0),
                (data, data.size),
                (array, 0),
                (array, array.size),
            ]);
            for (k, (target, off)) in (0u64..).zip(ptrs) {
                self.pointer(obj, g, base + 8 + 8 * k, target, off)?;
            }
            b.resize(b.len() + 72, 0);
        }
        Ok(b)
    }

    /// The constructor (at 0) and the destructor in `.text.startup`
    /// (`startup_sec`), each passing the descriptor (`desc_sym`) to its
    /// runtime function (`runtime`: register, unregister), and their
    /// relocations; returns them and the destructor's offset.
    fn functions(
        &self,
        obj: &mut Relocatable,
        startup_sec: SectionId,
        desc_sym: SymbolId,
        runtime: [SymbolId; 2],
    ) -> Result<(Function, Function, u64)> {
        let cpu = self.cpu;
        let desc = self.m.find(What::Desc)?;
        let data_sym = self.sym_of(desc)?;
        let call = |callee: SymbolId| {
            [Call {
                callee,
                arg: Arg::Data {
                    symbol: desc_sym,
                    section: data_sym,
                    offset: desc.at,
                    merged: false,
                },
            }]
        };
        let reg_fn = cpu.code.function(0, &call(runtime[0]))?;
        let unreg_off = align_up(len64(&reg_fn.code), cpu.code_align)?;
        let unreg_fn = cpu.code.function(unreg_off, &call(runtime[1]))?;
        let mut code = reg_fn.code.clone();
        let pad = usize::try_from(unreg_off - len64(&code)).unwrap_or(0);
        code.extend(cpu.code.padding(pad));
        code.extend_from_slice(&unreg_fn.code);
        obj.set_bytes(startup_sec, code);
        for (f, base) in [(&reg_fn, 0), (&unreg_fn, unreg_off)] {
            for r in &f.relocs {
                let Target::Symbol(sym) = r.target else {
                    return Err(internal(
                        "a SYCL function refers to a symbol the object lacks",
                    ));
                };
                reloc(obj, startup_sec, base + r.offset, sym, r.addend, r.r_type);
            }
        }
        Ok((reg_fn, unreg_fn, unreg_off))
    }
}

#[cfg(test)]
mod tests;
