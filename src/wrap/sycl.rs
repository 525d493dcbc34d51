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

use super::arch::{self, Arg, Call, CpuInfo, Target, addend, internal};
use super::relocatable::{Place, Relocatable, SectionId, SymbolId};
use super::{
    HostOs, SHT_LLVM_OFFLOADING, align_up, byte_array_align, finish_object, function, local,
    mapping, new_object, reloc, undefined,
};
use crate::error::{Error, Result};
use crate::layout::Layout;
use crate::llvm::triple::Arch;
use crate::num::len64;
use crate::offload_binary::{self, Limits, OffloadKind};

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
        let too_large = || Error::usage("the SYCL object would be larger than 2^64 bytes");
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
            .ok_or_else(|| Error::usage("the SYCL object would be larger than 2^64 bytes"))?;
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
    let mut secs: Vec<SectionId> = Vec::with_capacity(m.secs.len());
    for (k, s) in m.secs.iter().enumerate() {
        let id = obj.add_section(&s.name, s.sh_type, s.flags, s.align);
        if s.entsize != 0 {
            obj.set_entsize(id, s.entsize);
        }
        if s.sh_type == elf::SectionType(SHT_LLVM_OFFLOADING) {
            let mut placed = vec![(0, 0); images.len()];
            for g in m.globals.iter().filter(|g| g.sec == k) {
                if let What::Data(i) = g.what {
                    placed[i] = (g.at, g.size);
                }
            }
            obj.set_images(id, placed, s.align);
        }
        secs.push(id);
    }
    let wa = elf::SHF_WRITE | elf::SHF_ALLOC;
    let ctor = obj.add_section(b".init_array.1", elf::SHT_INIT_ARRAY, wa, 8);
    let dtor = obj.add_section(b".fini_array.1", elf::SHT_FINI_ARRAY, wa, 8);

    // Local symbols: the code's first (the section, the constructor, the
    // descriptor it passes, the destructor), then the module's globals in
    // order, each section's symbol after its first.
    let object = elf::STT_OBJECT;
    obj.add_file_symbol(b"offload.wrapper.module");
    let startup = obj.section_symbol(startup_sec);
    let reg = function(&mut obj, cpu, b"sycl.descriptor_reg", startup_sec, 0, 0);
    let maps = cpu.mapping_symbols;
    if maps {
        mapping(&mut obj, b"$x", startup_sec);
    }
    let desc = m.find(What::Desc)?;
    let desc_sym = local(
        &mut obj,
        &desc.name,
        secs[desc.sec],
        desc.at,
        desc.size,
        object,
    );
    let unreg = function(&mut obj, cpu, b"sycl.descriptor_unreg", startup_sec, 0, 0);
    // On CPUs with mapping symbols, a `$d` where a section's first byte of
    // data is emitted (after its section symbol).
    let mut sec_syms: Vec<Option<SymbolId>> = vec![None; m.secs.len()];
    let mut mapped = vec![false; m.secs.len()];
    for g in &m.globals {
        match g.what {
            What::Entry(..) | What::Desc => {}
            _ => {
                local(&mut obj, &g.name, secs[g.sec], g.at, g.size, object);
            }
        }
        if !matches!(g.what, What::Entry(..))
            && m.secs[g.sec].referenced
            && sec_syms[g.sec].is_none()
        {
            sec_syms[g.sec] = Some(obj.section_symbol(secs[g.sec]));
        }
        if maps && g.size > 0 && !mapped[g.sec] {
            mapping(&mut obj, b"$d", secs[g.sec]);
            mapped[g.sec] = true;
        }
    }
    let register = undefined(&mut obj, b"__sycl_register_lib", false);
    let unregister = undefined(&mut obj, b"__sycl_unregister_lib", false);
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

    // Contents and relocations, in the module's order.
    let sym_of =
        |g: &Global| sec_syms[g.sec].ok_or_else(|| internal("a SYCL section without a symbol"));
    let mut bytes: Vec<Vec<u8>> = m.secs.iter().map(|_| Vec::new()).collect();
    let put = |bytes: &mut Vec<Vec<u8>>, g: &Global, b: &[u8]| {
        let buf = &mut bytes[g.sec];
        let at = usize::try_from(g.at).unwrap_or(usize::MAX);
        if buf.len() < at {
            buf.resize(at, 0);
        }
        buf.truncate(at);
        buf.extend_from_slice(b);
    };
    let e = cpu.endian;
    for g in &m.globals {
        match g.what {
            What::Str(i, which) => {
                let s: &[u8] = match which {
                    0 => &images[i].triple,
                    _ => b"",
                };
                put(&mut bytes, g, &[s, b"\0"].concat());
            }
            What::Data(_) => {}
            What::Name(i, k) => put(&mut bytes, g, &[&images[i].symbols[k][..], b"\0"].concat()),
            What::Entry(i, k) => {
                put(&mut bytes, g, &entry_bytes(cpu));
                let name = m.find(What::Name(i, k))?;
                reloc(
                    &mut obj,
                    secs[g.sec],
                    g.at + ENTRY_NAME,
                    sym_of(name)?,
                    addend(name.at)?,
                    cpu.abs64,
                );
            }
            What::Array(i) => {
                let mut b = Vec::new();
                for k in 0..images[i].symbols.len() {
                    let name = m.find(What::Name(i, k))?;
                    let at = g.at + len64(&b) + ENTRY_NAME;
                    b.extend(entry_bytes(cpu));
                    reloc(
                        &mut obj,
                        secs[g.sec],
                        at,
                        sym_of(name)?,
                        addend(name.at)?,
                        cpu.abs64,
                    );
                }
                put(&mut bytes, g, &b);
            }
            What::Images => {
                let mut b = Vec::new();
                for (i, img) in images.iter().enumerate() {
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
                        reloc(
                            &mut obj,
                            secs[g.sec],
                            base + 8 + 8 * k,
                            sym_of(target)?,
                            addend(target.at + off)?,
                            cpu.abs64,
                        );
                    }
                    b.resize(b.len() + 72, 0);
                }
                put(&mut bytes, g, &b);
            }
            What::Desc => {
                let mut b = Vec::new();
                b.extend(e.write_u16(DESC_VERSION));
                let n = u16::try_from(images.len()).map_err(|_| internal("image count"))?;
                b.extend(e.write_u16(n));
                b.resize(usize::try_from(DESC_SIZE).unwrap_or(32), 0);
                let array = m.find(What::Images)?;
                reloc(
                    &mut obj,
                    secs[g.sec],
                    g.at + 8,
                    sym_of(array)?,
                    addend(array.at)?,
                    cpu.abs64,
                );
                put(&mut bytes, g, &b);
            }
        }
    }
    for (k, b) in bytes.into_iter().enumerate() {
        if m.secs[k].sh_type != elf::SectionType(SHT_LLVM_OFFLOADING) {
            let mut b = b;
            b.resize(usize::try_from(m.secs[k].size).unwrap_or(0), 0);
            obj.set_bytes(secs[k], b);
        }
    }

    // The constructor and destructor: each passes the descriptor.
    let data_sym = sym_of(desc)?;
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
    let reg_fn = cpu.code.function(0, &call(register))?;
    let unreg_off = align_up(len64(&reg_fn.code), cpu.code_align)?;
    let unreg_fn = cpu.code.function(unreg_off, &call(unregister))?;
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
            reloc(
                &mut obj,
                startup_sec,
                base + r.offset,
                sym,
                r.addend,
                r.r_type,
            );
        }
    }
    obj.set_extent(reg, 0, len64(&reg_fn.code));
    obj.set_extent(unreg, unreg_off, len64(&unreg_fn.code));
    obj.set_bytes(ctor, vec![0; 8]);
    reloc(&mut obj, ctor, 0, startup, 0, cpu.abs64);
    obj.set_bytes(dtor, vec![0; 8]);
    reloc(&mut obj, dtor, 0, startup, addend(unreg_off)?, cpu.abs64);
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
    finish_object(&mut obj, cpu, os, startup, &fdes, &[ctor, dtor])?;
    Ok(obj)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::offload_binary::{ImageKind, ImageSpec, layout_v1};
    use object::read::elf::{ElfFile64, SectionHeader};
    use object::{Object, ObjectSection, ObjectSymbol, SymbolKind};

    /// The bytes of `r` in `b`.
    fn at<'b>(b: &'b [u8], r: &Range<u64>) -> &'b [u8] {
        &b[usize::try_from(r.start).unwrap()..usize::try_from(r.end).unwrap()]
    }

    #[test]
    fn names_are_made_unique_as_llvm_does() {
        let mut n = Names::default();
        assert_eq!(n.unique(b".a"), b".a");
        assert_eq!(n.unique(b".a"), b".a.1");
        assert_eq!(n.unique(b".b"), b".b");
        // One counter for the whole module.
        assert_eq!(n.unique(b".b"), b".b.2");
        assert_eq!(n.unique(b".a"), b".a.3");
    }

    /// Two OffloadBinaries as a SYCL device link writes them.
    fn linked() -> (Vec<u8>, Vec<(SyclImage, Range<u64>)>) {
        let spec = |symbols: &[u8], size| ImageSpec {
            image_kind: ImageKind(0),
            offload_kind: OffloadKind::OFK_SYCL,
            flags: 0,
            strings: vec![
                (b"triple".to_vec(), b"spirv64-unknown-unknown".to_vec()),
                (b"symbols".to_vec(), symbols.to_vec()),
            ],
            size,
        };
        let images: [&[u8]; 2] = [&[0x11; 40], &[0x22; 24]];
        let layout = layout_v1(&[spec(b"k1\nk2", 40), spec(b"\nk1\n", 24)]).unwrap();
        let mut bytes = Vec::new();
        layout.write_to(&mut bytes, &images).unwrap();
        let read = SyclImage::read_all(&bytes).unwrap();
        (bytes, read)
    }

    #[test]
    fn reads_the_device_link_output() {
        let (bytes, read) = linked();
        assert_eq!(read.len(), 2);
        assert_eq!(read[0].0.symbols, [b"k1".to_vec(), b"k2".to_vec()]);
        // Empty lines are no names.
        assert_eq!(read[1].0.symbols, [b"k1".to_vec()]);
        assert_eq!(read[0].0.offload_kind, 8);
        let r = &read[1].1;
        assert!(at(&bytes, r).iter().all(|&b| b == 0x22));
        assert!(SyclImage::read_all(b"not an offload binary").is_err());
        assert!(SyclImage::read_all(&bytes[..bytes.len() - 1]).is_err());
    }

    #[test]
    fn object_registers_each_image_and_entry() {
        let (bytes, read) = linked();
        let shapes: Vec<SyclImage> = read.iter().map(|(s, _)| s.clone()).collect();
        let layout = sycl_layout("x86_64-unknown-linux-gnu", &shapes).unwrap();
        let slices: Vec<&[u8]> = read.iter().map(|(_, r)| at(&bytes, r)).collect();
        let mut obj = Vec::new();
        layout.write_to(&mut obj, &slices).unwrap();
        let file = ElfFile64::<object::Endianness>::parse(&obj[..]).unwrap();
        let sym = |name: &str| file.symbols().find(|s| s.name() == Ok(name));
        // The second image's k1 gets LLVM's unique name (its entry name took .2).
        for weak in [
            ".offloading.entry.k1",
            ".offloading.entry.k2",
            ".offloading.entry.k1.3",
        ] {
            let s = sym(weak).unwrap_or_else(|| panic!("{weak} missing"));
            assert!(s.is_weak() && s.kind() == SymbolKind::Data, "{weak}");
            assert_eq!(s.size(), ENTRY_SIZE);
        }
        for undefined in ["__sycl_register_lib", "__sycl_unregister_lib"] {
            assert!(sym(undefined).unwrap().is_undefined());
        }
        let images = file.section_by_name(".llvm.offloading").unwrap();
        assert_eq!(
            images.elf_section_header().sh_type(file.endian()),
            elf::SectionType(SHT_LLVM_OFFLOADING)
        );
        let data = images.data().unwrap();
        assert_eq!(&data[..40], &[0x11; 40]);
        assert_eq!(&data[48..72], &[0x22; 24]);
        let desc = sym(".sycl_offloading.descriptor").unwrap();
        assert_eq!(desc.size(), DESC_SIZE);
        let rodata = file
            .section_by_name(".data.rel.ro")
            .unwrap()
            .data()
            .unwrap();
        let off = usize::try_from(desc.address()).unwrap();
        // Version 1, two images.
        assert_eq!(&rodata[off..off + 4], &[1, 0, 2, 0]);
        assert!(file.section_by_name(".init_array.1").is_some());
        assert!(file.section_by_name(".fini_array.1").is_some());
        // Nor yet powerpc64le and riscv64 hosts.
        for host in ["powerpc64le-unknown-linux-gnu", "riscv64-unknown-linux-gnu"] {
            let e = sycl_layout(host, &shapes).unwrap_err();
            assert!(e.to_string().contains("not yet"), "{e}");
        }
        assert!(sycl_layout("aarch64-unknown-linux-gnu", &shapes).is_ok());
        assert!(sycl_layout("x86_64-unknown-linux-gnu", &[]).is_err());
    }
}
