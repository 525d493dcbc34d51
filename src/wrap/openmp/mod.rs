//! The OpenMP object (docs/formats/wrapper-objects.md): the images, the descriptor
//! and image array in `.data.rel.ro`, the constructor and destructor, in
//! the order llc writes them. [`build`] is the whole; each step below adds
//! one part, and everything it adds lands where llc puts it (sections in
//! the order they are added, local symbols in the order they are added).
//!
//! This file lays out the sections and the data; `symbols.rs` lists the
//! symbols, `contents.rs` writes the data and the code.

use object::elf;

use super::SHT_LLVM_OFFLOADING;
use super::arch::{CpuInfo, addend};
use super::elf_object::{Flavour, HostOs, finish_object, local, new_object, reloc};
use super::model::{Abi, IMAGE_ALIGN, InputShape, STRUCT_SIZE, align_up, byte_array_align};
use super::relocatable::{Relocatable, SectionId, SymbolId};
use crate::error::{Error, Result};
use crate::num::len64;

mod contents;
mod symbols;

use contents::{data, functions};
use symbols::{image_infos, local_symbols, local_symbols_by_name, runtime_symbols};

/// Where the inputs go in `.llvm.offloading`.
pub(super) struct Placement {
    /// (offset, length) of each input.
    pub placed: Vec<(u64, u64)>,
    /// The inputs llc merges into `_MergedGlobals` (CPUs with
    /// [`CpuInfo::merge_constants`]), in their merged order; they lie after
    /// the others.
    pub merged: Vec<usize>,
    /// The section's size.
    pub end: u64,
}

/// Places the inputs as llc does: each 8-aligned after the one before, in
/// order; on CPUs where llc merges small constants, the merged ones after
/// the others, in their merged globals.
pub(super) fn place(cpu: &CpuInfo, images: &[InputShape]) -> Result<Placement> {
    let too_large = || Error::usage("the images are larger than 2^64 bytes");
    let lens: Vec<u64> = images.iter().map(|i| i.size).collect();
    let groups = match cpu.merge_constants {
        Some(limit) => {
            let consts: Vec<(u64, u64)> = lens.iter().map(|&n| (n, IMAGE_ALIGN)).collect();
            super::merge::groups(&consts, limit)
        }
        None => Vec::new(),
    };
    let mut in_group = vec![false; lens.len()];
    for g in &groups {
        for &(i, _) in &g.members {
            in_group[i] = true;
        }
    }
    let mut placed = vec![(0, 0); lens.len()];
    let mut at = 0u64;
    for (i, &len) in lens.iter().enumerate() {
        if !in_group[i] {
            let off = align_up(at, IMAGE_ALIGN)?;
            placed[i] = (off, len);
            at = off.checked_add(len).ok_or_else(too_large)?;
        }
    }
    let mut merged = Vec::new();
    for g in &groups {
        let base = align_up(at, g.align)?;
        for &(i, off) in &g.members {
            placed[i] = (base + off, lens[i]);
            merged.push(i);
        }
        at = base.checked_add(g.size).ok_or_else(too_large)?;
    }
    Ok(Placement {
        placed,
        merged,
        end: at,
    })
}

/// Builds the object with the inputs at `p` in the image section, which
/// starts at a multiple of `file_align` in the file.
pub(super) fn build(
    abi: Abi,
    relocatable: bool,
    cpu: &'static CpuInfo,
    os: HostOs,
    images: &[InputShape],
    p: Placement,
    file_align: u64,
) -> Result<Relocatable> {
    let mut fl = Flavour::of(abi);
    if relocatable {
        fl.images = ".llvm.offloading.relocatable";
    }
    let at = DataLayout::new(&fl, cpu, images.len())?;
    let archs = match fl.image_info {
        true => Some(ArchList::new(cpu, images)?),
        false => None,
    };
    let placed = p.placed.clone();
    let (mut obj, s) = sections(cpu, os, &fl, &p, &at, archs.as_ref(), file_align);
    let mut syms = if cpu.symbol_relocs {
        local_symbols_by_name(&mut obj, &fl, &s, &at, &p)?
    } else {
        local_symbols(&mut obj, cpu, &fl, &s, &at, &p, archs.as_ref())?
    };
    if let (Some(list), Some(archs)) = (s.arch_list, &archs) {
        if cpu.symbol_relocs {
            syms.infos = image_infos(&mut obj, cpu, archs, list, &syms.info_syms, &at);
        }
        obj.set_bytes(list, archs.bytes.clone());
    }
    let rt = runtime_symbols(&mut obj, cpu, &fl, s.entries);
    let parts = Parts {
        s: &s,
        syms: &syms,
        rt: &rt,
        at: &at,
    };
    data(&mut obj, cpu, images, &placed, &parts)?;
    let (reg_fn, unreg_fn, unreg_off) = functions(&mut obj, cpu, &parts)?;

    // Constructor (and destructor) pointers.
    obj.set_bytes(s.ctor, vec![0; 8]);
    reloc(&mut obj, s.ctor, 0, syms.startup, 0, cpu.abs64);
    if let Some(dtor) = s.dtor {
        obj.set_bytes(dtor, vec![0; 8]);
        // Against the destructor's own symbol where llc relocates against
        // symbols, else the code section's.
        let (target, off) = match syms.labels {
            Some(_) => (syms.unreg, 0),
            None => (syms.startup, unreg_off),
        };
        reloc(&mut obj, dtor, 0, target, addend(off)?, cpu.abs64);
    }

    let data: Vec<SectionId> = [Some(s.ctor), s.dtor].into_iter().flatten().collect();
    let fdes = [
        super::eh_frame::Fde {
            offset: 0,
            len: len64(&reg_fn.code),
            cfi: &reg_fn.cfi,
            anchor: syms.labels.as_ref().map(|l| l.starts[0]),
        },
        super::eh_frame::Fde {
            offset: unreg_off,
            len: len64(&unreg_fn.code),
            cfi: &unreg_fn.cfi,
            anchor: syms.labels.as_ref().map(|l| l.starts[1]),
        },
    ];
    finish_object(&mut obj, cpu, os, syms.startup, &fdes, &data)?;
    Ok(obj)
}

/// The sections before `.note.GNU-stack`, in LLVM's order.
struct Sections {
    /// `.text.startup`: the constructor and destructor.
    startup: SectionId,
    /// The host entry table, whose bounds the linker defines.
    entries: SectionId,
    /// `.llvm.offloading`: the inputs.
    offloading: SectionId,
    /// `.data.rel.ro`: the image array, the descriptor, the image infos.
    data: SectionId,
    /// `.offload_arch_list` (ROCm).
    arch_list: Option<SectionId>,
    /// The constructor pointer's section.
    ctor: SectionId,
    /// The destructor pointer's section (legacy and ROCm).
    dtor: Option<SectionId>,
}

/// A new object with its sections: the inputs at `placed` in the image
/// section, which starts at a multiple of `file_align` in the file; the
/// ROCm target IDs' section (`archs`) aligned for its most aligned string.
///
/// A section whose contents are all merged globals comes after the
/// constructor and destructor pointers (images, data, target IDs: the
/// order in which GlobalMerge makes them): llc writes the merged globals
/// after the module's other globals.
fn sections(
    cpu: &CpuInfo,
    os: HostOs,
    fl: &Flavour,
    p: &Placement,
    at: &DataLayout,
    archs: Option<&ArchList>,
    file_align: u64,
) -> (Relocatable, Sections) {
    let (mut obj, startup) = new_object(cpu, os);
    let a = elf::SHF_ALLOC;
    let wa = elf::SHF_WRITE | elf::SHF_ALLOC;
    let progbits = elf::SHT_PROGBITS;
    let entries = obj.add_section(fl.entries.as_bytes(), progbits, a, 8);
    let add_offloading = |obj: &mut Relocatable| {
        let id = obj.add_section(
            fl.images.as_bytes(),
            elf::SectionType(SHT_LLVM_OFFLOADING),
            a,
            IMAGE_ALIGN,
        );
        obj.set_images(id, p.placed.clone(), file_align);
        id
    };
    let late_images = p.merged.len() == p.placed.len();
    let early = (!late_images).then(|| add_offloading(&mut obj));
    let add_data =
        |obj: &mut Relocatable| obj.add_section(b".data.rel.ro", progbits, wa, cpu.data_align);
    let early_data = (!at.all_merged()).then(|| add_data(&mut obj));
    let add_list = |obj: &mut Relocatable, l: &ArchList| {
        obj.add_section(b".offload_arch_list", progbits, a, l.at.align)
    };
    let early_list = archs
        .filter(|l| !l.at.all_merged())
        .map(|l| add_list(&mut obj, l));
    let ctor = obj.add_section(fl.ctor, elf::SHT_INIT_ARRAY, wa, 8);
    let dtor = fl
        .dtor
        .map(|name| obj.add_section(name, elf::SHT_FINI_ARRAY, wa, 8));
    let offloading = match early {
        Some(id) => id,
        None => add_offloading(&mut obj),
    };
    let data = match early_data {
        Some(id) => id,
        None => add_data(&mut obj),
    };
    let arch_list = match (early_list, archs) {
        (Some(id), _) => Some(id),
        (None, Some(l)) => Some(add_list(&mut obj, l)),
        (None, None) => None,
    };
    let s = Sections {
        startup,
        entries,
        offloading,
        data,
        arch_list,
        ctor,
        dtor,
    };
    (obj, s)
}

/// Where the structures lie in `.data.rel.ro`: the image array, the
/// descriptor, then (ROCm) the image infos, in the module's order; on CPUs
/// where llc merges constants ([`CpuInfo::merge_constants`]), those it
/// merges after the others, in their merged globals (sorted by size: the
/// descriptor and the infos before the array unless there is one image).
struct DataLayout {
    /// Number of images.
    n: u64,
    /// Each constant's size: the image array ([`ARRAY`]), the descriptor
    /// ([`DESC`]), then each image info.
    sizes: Vec<u64>,
    /// Where they lie, and which llc merges.
    merge: super::merge::Layout,
}

/// The image array's index among [`DataLayout`]'s constants.
const ARRAY: usize = 0;
/// The descriptor's index among [`DataLayout`]'s constants.
const DESC: usize = 1;
/// The first image info's index among [`DataLayout`]'s constants.
const INFO: usize = 2;

impl DataLayout {
    fn new(fl: &Flavour, cpu: &CpuInfo, images: usize) -> Result<DataLayout> {
        let too_many = || Error::usage("too many images");
        let n = u64::try_from(images).map_err(|_| too_many())?;
        let mut sizes = vec![
            STRUCT_SIZE.checked_mul(n).ok_or_else(too_many)?,
            STRUCT_SIZE,
        ];
        if fl.image_info {
            sizes.extend((0..images).map(|_| STRUCT_SIZE));
        }
        let consts: Vec<(u64, u64)> = sizes.iter().map(|&n| (n, cpu.data_align)).collect();
        let merge = super::merge::lay_out(&consts, cpu.merge_constants)?;
        Ok(DataLayout { n, sizes, merge })
    }

    /// Offset of the image array.
    fn images(&self) -> u64 {
        self.merge.at[ARRAY]
    }

    /// Offset of `__tgt_bin_desc`.
    fn desc(&self) -> u64 {
        self.merge.at[DESC]
    }

    /// Offset of the `i`th `__tgt_image_info`.
    fn info(&self, i: usize) -> u64 {
        self.merge.at[INFO + i]
    }

    /// Number of image infos (ROCm: one per image).
    fn infos(&self) -> usize {
        self.sizes.len() - INFO
    }

    /// Whether llc merges everything here (then `.data.rel.ro` comes after
    /// the constructor's sections).
    fn all_merged(&self) -> bool {
        self.merge.all_merged()
    }

    /// Size of the section.
    fn len(&self) -> u64 {
        self.merge.end
    }
}

/// A ROCm `__tgt_image_info`: its symbol and offset in `.data.rel.ro`, and
/// where its target ID lies in `.offload_arch_list` (the section symbol
/// and the offset, or, on CPUs that relocate against symbols, the string's
/// own symbol and 0).
struct Info {
    sym: SymbolId,
    off: u64,
    list_sym: SymbolId,
    arch_off: u64,
}

/// The local symbols the code and data refer to.
///
/// On CPUs that relocate against symbols ([`CpuInfo::symbol_relocs`]) there
/// are no section symbols: `startup` is then the constructor's symbol (at
/// 0), `offloading` the first image's and `data` the image array's.
struct Locals {
    /// Section symbol of `.text.startup`.
    startup: SymbolId,
    /// `.omp_offloading.descriptor_reg` (its extent set with the code).
    reg: SymbolId,
    /// `.omp_offloading.descriptor`.
    desc: SymbolId,
    /// `.omp_offloading.descriptor_unreg` (its extent set with the code).
    unreg: SymbolId,
    /// Section symbol of `.llvm.offloading`.
    offloading: SymbolId,
    /// Section symbol of `.data.rel.ro`.
    data: SymbolId,
    /// The image infos (ROCm).
    infos: Vec<Info>,
    /// The image infos' symbols (ROCm), listed where the constructor first
    /// refers to them.
    info_syms: Vec<SymbolId>,
    /// Each input's symbol (`.omp_offloading.device_image`, `.1`, …).
    images: Vec<SymbolId>,
    /// `.omp_offloading.device_images`.
    array: SymbolId,
    /// The code's local labels, on CPUs that relocate against symbols.
    labels: Option<Labels>,
    /// Each merged global of `.data.rel.ro` (CPUs with
    /// [`CpuInfo::merge_constants`]): its first member's symbol, which
    /// stands for it in the code's arguments, and its offset, which llc
    /// adds to the section symbol it relocates against instead.
    anchors: Vec<(SymbolId, u64)>,
}

/// The local labels llc keeps in the symbol table of riscv64 objects.
struct Labels {
    /// `.L0 ` at the start of the constructor and of the destructor, for
    /// their FDEs.
    starts: [SymbolId; 2],
    /// `.Lpcrel_hiN` at each `auipc` of a data address in the constructor
    /// (the ROCm image infos, then the descriptor) and in the destructor
    /// (the descriptor), in code order.
    pcrel: [Vec<SymbolId>; 2],
}

/// ROCm: the images' target IDs in `.offload_arch_list`, each with its
/// NUL and aligned as llc aligns a byte array; on CPUs where llc merges
/// constants, those it merges after the others, in their merged globals
/// (sorted by size).
struct ArchList {
    /// Each target ID's size, with its NUL.
    sizes: Vec<u64>,
    /// Where they lie, and which llc merges.
    at: super::merge::Layout,
    /// The section's contents.
    bytes: Vec<u8>,
}

impl ArchList {
    fn new(cpu: &CpuInfo, images: &[InputShape]) -> Result<ArchList> {
        let mut ids = Vec::with_capacity(images.len());
        for (i, img) in images.iter().enumerate() {
            let Some(arch) = &img.arch else {
                return Err(Error::usage(format!(
                    "image {i} has no offload arch (--abi=rocm needs one per image)"
                )));
            };
            ids.push(arch.as_bytes());
        }
        let sizes: Vec<u64> = ids.iter().map(|id| len64(id) + 1).collect();
        let consts: Vec<(u64, u64)> = sizes
            .iter()
            .map(|&n| (n, byte_array_align(cpu, n)))
            .collect();
        let at = super::merge::lay_out(&consts, cpu.merge_constants)?;
        let too_many = || Error::usage("too many images");
        let mut bytes = vec![0; usize::try_from(at.end).map_err(|_| too_many())?];
        for (id, &off) in ids.iter().zip(&at.at) {
            let off = usize::try_from(off).map_err(|_| too_many())?;
            bytes[off..off + id.len()].copy_from_slice(id);
        }
        Ok(ArchList { sizes, at, bytes })
    }

    /// The symbol of image `i`'s target ID, in `list`.
    fn define(&self, obj: &mut Relocatable, list: SectionId, i: usize) -> SymbolId {
        let name = format!("__offload_arch_{i}");
        let (off, size) = (self.at.at[i], self.sizes[i]);
        local(obj, name.as_bytes(), list, off, size, elf::STT_OBJECT)
    }
}

/// The global symbols: the runtime's functions and the entry table's
/// bounds.
struct Runtime {
    /// The CPU's TOC symbol (`.TOC.`), by name.
    toc: Option<(&'static str, SymbolId)>,
    /// `__tgt_register_image_info` (ROCm).
    register_info: Option<SymbolId>,
    /// `__tgt_register_lib`.
    register: SymbolId,
    /// `atexit`, unless a destructor section unregisters.
    atexit: Option<SymbolId>,
    /// `__tgt_unregister_lib`.
    unregister: SymbolId,
    /// `__start_<entries>`.
    start: SymbolId,
    /// `__stop_<entries>`.
    stop: SymbolId,
}

/// What the steps before the contents built, which the data and the code
/// refer to.
struct Parts<'a> {
    /// The sections.
    s: &'a Sections,
    /// The local symbols.
    syms: &'a Locals,
    /// The global symbols.
    rt: &'a Runtime,
    /// Where the structures lie in `.data.rel.ro`.
    at: &'a DataLayout,
}
