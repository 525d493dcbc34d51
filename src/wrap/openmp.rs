//! The OpenMP object (wrapper-abi.md §4, §7): the images, the descriptor
//! and image array in `.data.rel.ro`, the constructor and destructor, in
//! the order llc writes them. [`build`] is the whole; each step below adds
//! one part, and everything it adds lands where llc puts it (sections in
//! the order they are added, local symbols in the order they are added).

use object::elf;

use super::arch::{Arg, Call, CpuInfo, Function, Target, addend, internal};
use super::relocatable::{Place, Relocatable, SectionId, SymbolId};
use super::{
    Abi, Flavour, HostOs, IMAGE_ALIGN, Image, SHT_LLVM_OFFLOADING, STRUCT_SIZE, align_up,
    byte_array_align, finish_object, function, local, mapping, new_object, reloc, undefined,
};
use crate::error::{Error, Result};
use crate::num::len64;

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
pub(super) fn place(cpu: &CpuInfo, images: &[Image<'_>]) -> Result<Placement> {
    let too_large = || Error::usage("the images are larger than 2^64 bytes");
    let lens: Vec<u64> = images.iter().map(|i| len64(i.bytes)).collect();
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
    cpu: &'static CpuInfo,
    os: HostOs,
    images: &[Image<'_>],
    p: Placement,
    file_align: u64,
) -> Result<Relocatable> {
    let fl = Flavour::of(abi);
    let at = DataLayout::new(&fl, cpu, images.len())?;
    // GlobalMerge would merge the ROCm image infos with the descriptor
    // too (not modelled).
    if cpu.merge_constants.is_some() && abi == Abi::Rocm {
        return Err(Error::usage(format!(
            "--abi=rocm is not supported yet for {}",
            cpu.names[0]
        )));
    }
    let placed = p.placed.clone();
    // The target IDs' section is aligned for its most aligned string.
    let arch_align = images
        .iter()
        .filter_map(|i| i.arch.as_ref())
        .map(|a| byte_array_align(cpu, len64(a.as_bytes()) + 1))
        .max()
        .unwrap_or(1);
    let (mut obj, s) = sections(cpu, os, &fl, &p, &at, (file_align, arch_align));
    let mut syms = if cpu.symbol_relocs {
        local_symbols_by_name(&mut obj, &fl, &s, &at, &p)?
    } else {
        local_symbols(&mut obj, cpu, &fl, &s, &at, &p)
    };
    if let Some(list) = s.arch_list {
        let by_symbol = syms.labels.is_some();
        syms.infos = image_infos(&mut obj, cpu, images, list, &syms.info_syms, by_symbol, &at)?;
    }
    let rt = runtime_symbols(&mut obj, cpu, &fl, s.entries);
    data(&mut obj, cpu, images, &placed, &s, &syms, &rt, &at)?;
    let (reg_fn, unreg_fn, unreg_off) =
        functions(&mut obj, cpu, &s, &syms, &rt, (at.desc, at.merged))?;

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
/// ROCm target IDs' section aligned to `arch_align`.
///
/// A section whose contents are all merged globals comes after the
/// constructor and destructor pointers: llc writes the merged globals
/// after the module's other globals.
fn sections(
    cpu: &CpuInfo,
    os: HostOs,
    fl: &Flavour,
    p: &Placement,
    at: &DataLayout,
    (file_align, arch_align): (u64, u64),
) -> (Relocatable, Sections) {
    let (mut obj, startup) = new_object(cpu, os);
    let a = elf::SHF_ALLOC;
    let wa = elf::SHF_WRITE | elf::SHF_ALLOC;
    let progbits = elf::SHT_PROGBITS;
    let entries = obj.add_section(fl.entries.as_bytes(), progbits, a, 8);
    let add_offloading = |obj: &mut Relocatable| {
        let id = obj.add_section(
            crate::offload_binary::container::SECTION.as_bytes(),
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
    let early_data = (!at.merged).then(|| add_data(&mut obj));
    let arch_list = fl
        .image_info
        .then(|| obj.add_section(b".offload_arch_list", progbits, a, arch_align));
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
/// descriptor, then (ROCm) the image infos.
struct DataLayout {
    /// Number of images.
    n: u64,
    /// Offset of the image array.
    images: u64,
    /// Offset of `__tgt_bin_desc`.
    desc: u64,
    /// Whether llc merges the image array and the descriptor into one
    /// global (then sorted by size: the descriptor first unless there is
    /// one image).
    merged: bool,
    /// Offset of the first `__tgt_image_info`.
    info: u64,
    /// Size of the section.
    len: u64,
}

impl DataLayout {
    fn new(fl: &Flavour, cpu: &CpuInfo, images: usize) -> Result<DataLayout> {
        let n = u64::try_from(images).map_err(|_| Error::usage("too many images"))?;
        if let Some(limit) = cpu.merge_constants {
            // The image array, the descriptor, then (ROCm) the image infos,
            // in the module's order.
            let mut consts = vec![
                (STRUCT_SIZE * n, cpu.data_align),
                (STRUCT_SIZE, cpu.data_align),
            ];
            if fl.image_info {
                consts.extend((0..images).map(|_| (STRUCT_SIZE, cpu.data_align)));
            }
            let groups = super::merge::groups(&consts, limit);
            match groups.first() {
                // All in one merged global: the descriptor and the infos
                // (equal sizes keep the module's order) before the array,
                // unless there is one image.
                Some(g) if groups.len() == 1 && g.members.len() == consts.len() => {
                    let off = |k: usize| g.members.iter().find(|m| m.0 == k).map_or(0, |m| m.1);
                    return Ok(DataLayout {
                        n,
                        images: off(0),
                        desc: off(1),
                        merged: true,
                        info: off(2),
                        len: g.size,
                    });
                }
                // More than 1022 images: the array and the descriptor do
                // not fit together under the limit, so nothing merges and
                // they lie as on other CPUs.
                None if !fl.image_info => {}
                // ROCm with more than 511 images: the array, then the infos
                // too, fall out of the merged global (not modelled).
                _ => {
                    return Err(Error::usage(format!(
                        "more than {} images with --abi=rocm are not supported yet for {}",
                        (limit - STRUCT_SIZE) / (2 * STRUCT_SIZE),
                        cpu.names[0]
                    )));
                }
            }
        }
        let desc = STRUCT_SIZE * n;
        let info = desc + STRUCT_SIZE;
        let len = if fl.image_info {
            info + STRUCT_SIZE * n
        } else {
            info
        };
        Ok(DataLayout {
            n,
            images: 0,
            desc,
            merged: false,
            info,
            len,
        })
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

/// The local symbols up to `.data.rel.ro`'s, in the order LLVM's object
/// writer lists them (with the mapping symbols where LLVM puts them).
fn local_symbols(
    obj: &mut Relocatable,
    cpu: &CpuInfo,
    fl: &Flavour,
    s: &Sections,
    at: &DataLayout,
    p: &Placement,
) -> Locals {
    let object = elf::STT_OBJECT;
    obj.add_file_symbol(fl.file);
    let startup = obj.section_symbol(s.startup);
    let reg = function(obj, cpu, b".omp_offloading.descriptor_reg", s.startup, 0, 0);
    let maps = cpu.mapping_symbols;
    if maps {
        mapping(obj, b"$x", s.startup);
    }
    // ROCm: the image infos, which the constructor registers first.
    let n_infos = if fl.image_info { at.n } else { 0 };
    let info_syms = (0..n_infos)
        .map(|i| {
            let name = format!(".offload_image_info_{i}");
            let off = at.info + STRUCT_SIZE * i;
            local(obj, name.as_bytes(), s.data, off, STRUCT_SIZE, object)
        })
        .collect();
    let desc_name = b".omp_offloading.descriptor";
    // Listed here when the code refers to it; else with the merged data.
    let desc = (!at.merged).then(|| local(obj, desc_name, s.data, at.desc, STRUCT_SIZE, object));
    let unreg = function(
        obj,
        cpu,
        b".omp_offloading.descriptor_unreg",
        s.startup,
        0,
        0,
    );
    if !fl.dummy_global {
        local(obj, fl.dummy, s.entries, 0, 0, object);
    }
    let mut offloading = None;
    let mut data_mapped = false;
    let mut images = vec![unreg; p.placed.len()];
    let name = |i: usize| match i {
        0 => b".omp_offloading.device_image".to_vec(),
        _ => format!(".omp_offloading.device_image.{i}").into_bytes(),
    };
    for (i, &(off, len)) in p.placed.iter().enumerate() {
        if p.merged.contains(&i) {
            continue;
        }
        images[i] = local(obj, &name(i), s.offloading, off, len, object);
        if offloading.is_none() {
            offloading = Some(obj.section_symbol(s.offloading));
        }
        // LLVM marks data where the first byte of it is emitted.
        if maps && !data_mapped && len > 0 {
            mapping(obj, b"$d", s.offloading);
            data_mapped = true;
        }
    }
    let images_name = b".omp_offloading.device_images";
    let array_len = STRUCT_SIZE * at.n;
    // The merged globals' aliases, after the section symbols, in the
    // merged order.
    let aliases = |obj: &mut Relocatable, images: &mut [SymbolId]| {
        for &i in &p.merged {
            let (off, len) = p.placed[i];
            images[i] = local(obj, &name(i), s.offloading, off, len, object);
        }
    };
    let array;
    let (desc, offloading) = match desc {
        Some(desc) => {
            array = local(obj, images_name, s.data, at.images, array_len, object);
            obj.section_symbol(s.data);
            let offloading = offloading.unwrap_or_else(|| obj.section_symbol(s.offloading));
            aliases(obj, &mut images);
            (desc, offloading)
        }
        None => {
            // Then the array and the descriptor by offset.
            let offloading = offloading.unwrap_or_else(|| obj.section_symbol(s.offloading));
            obj.section_symbol(s.data);
            aliases(obj, &mut images);
            let add_array = |obj: &mut Relocatable| {
                local(obj, images_name, s.data, at.images, array_len, object)
            };
            let descriptor =
                |obj: &mut Relocatable| local(obj, desc_name, s.data, at.desc, STRUCT_SIZE, object);
            let desc = if at.desc < at.images {
                let d = descriptor(obj);
                array = add_array(obj);
                d
            } else {
                array = add_array(obj);
                descriptor(obj)
            };
            (desc, offloading)
        }
    };
    let data = obj.section_symbol(s.data);
    if maps {
        mapping(obj, b"$d", s.data);
    }
    Locals {
        startup,
        reg,
        desc,
        unreg,
        offloading,
        data,
        infos: Vec::new(),
        info_syms,
        images,
        array,
        labels: None,
    }
}

/// The local symbols of a CPU that relocates against symbols, not
/// sections (riscv64), in the order LLVM's object writer lists them: as
/// the code first mentions them, with the labels llc keeps (`.L0 ` at
/// each function for `.eh_frame`, `.Lpcrel_hiN` at each `auipc` whose low
/// half is relocated) and the mapping symbols. The functions each pass
/// data addresses (the constructor: the ROCm image infos, then the
/// descriptor; the destructor: the descriptor) and, with the LLVM ABI, the
/// constructor then `atexit`s the destructor; the labels' offsets are set
/// with the code. The ROCm target IDs' symbols come with
/// [`image_infos`].
fn local_symbols_by_name(
    obj: &mut Relocatable,
    fl: &Flavour,
    s: &Sections,
    at: &DataLayout,
    p: &Placement,
) -> Result<Locals> {
    let object = elf::STT_OBJECT;
    let notype = elf::STT_NOTYPE;
    obj.add_file_symbol(fl.file);
    let func = elf::STT_FUNC;
    let reg = local(
        obj,
        b".omp_offloading.descriptor_reg",
        s.startup,
        0,
        0,
        func,
    );
    let reg_start = local(obj, b".L0 ", s.startup, 0, 0, notype);
    mapping(obj, b"$x", s.startup);
    // llc numbers the labels from 0 in code order, one per address
    // computed; the constructor's `atexit` argument (LLVM ABI) is resolved
    // in place and not listed, but counted.
    let mut number = 0u32;
    let mut label = |obj: &mut Relocatable, skip: u32| {
        number += skip;
        let name = format!(".Lpcrel_hi{number}");
        number += 1;
        local(obj, name.as_bytes(), s.startup, 0, 0, notype)
    };
    let n_infos = if fl.image_info { at.n } else { 0 };
    let mut reg_pcrel = Vec::new();
    let mut infos = Vec::new();
    for i in 0..n_infos {
        reg_pcrel.push(label(obj, 0));
        let name = format!(".offload_image_info_{i}");
        let off = at.info + STRUCT_SIZE * i;
        infos.push(local(
            obj,
            name.as_bytes(),
            s.data,
            off,
            STRUCT_SIZE,
            object,
        ));
    }
    reg_pcrel.push(label(obj, 0));
    let desc = local(
        obj,
        b".omp_offloading.descriptor",
        s.data,
        at.desc,
        STRUCT_SIZE,
        object,
    );
    // `atexit`'s argument, counted before the destructor's label.
    let atexit_arg = u32::from(fl.dtor.is_none());
    let unreg = local(
        obj,
        b".omp_offloading.descriptor_unreg",
        s.startup,
        0,
        0,
        func,
    );
    let unreg_start = local(obj, b".L0 ", s.startup, 0, 0, notype);
    let unreg_pcrel = vec![label(obj, atexit_arg)];
    if !fl.dummy_global {
        local(obj, fl.dummy, s.entries, 0, 0, object);
    }
    let mut images = Vec::with_capacity(p.placed.len());
    let mut data_mapped = false;
    for (i, &(off, len)) in p.placed.iter().enumerate() {
        let name = match i {
            0 => b".omp_offloading.device_image".to_vec(),
            _ => format!(".omp_offloading.device_image.{i}").into_bytes(),
        };
        images.push(local(obj, &name, s.offloading, off, len, object));
        // LLVM marks data where the first byte of it is emitted.
        if !data_mapped && len > 0 {
            mapping(obj, b"$d", s.offloading);
            data_mapped = true;
        }
    }
    let array_len = STRUCT_SIZE * at.n;
    let array = local(
        obj,
        b".omp_offloading.device_images",
        s.data,
        at.images,
        array_len,
        object,
    );
    mapping(obj, b"$d", s.data);
    Ok(Locals {
        startup: reg,
        reg,
        desc,
        unreg,
        offloading: array,
        data: array,
        infos: Vec::new(),
        info_syms: infos,
        images,
        array,
        labels: Some(Labels {
            starts: [reg_start, unreg_start],
            pcrel: [reg_pcrel, unreg_pcrel],
        }),
    })
}

/// ROCm: each image's target ID in `.offload_arch_list` (section
/// `list`), each aligned as llc aligns a byte array, with the symbol and
/// mapping symbol llc lists after the first (the section symbol, unless
/// the CPU relocates against symbols); and the image infos, whose symbols
/// `info_syms` were made with the code's, the first at `at.info` in
/// `.data.rel.ro`.
fn image_infos(
    obj: &mut Relocatable,
    cpu: &CpuInfo,
    images: &[Image<'_>],
    list: SectionId,
    info_syms: &[SymbolId],
    by_symbol: bool,
    at: &DataLayout,
) -> Result<Vec<Info>> {
    let mut strings = Vec::new();
    let mut targets = Vec::new();
    let mut list_sym = None;
    for (i, img) in images.iter().enumerate() {
        let Some(arch) = &img.arch else {
            return Err(Error::usage(format!(
                "image {i} has no offload arch (--abi=rocm needs one per image)"
            )));
        };
        let size = len64(arch.as_bytes()) + 1;
        let off = align_up(len64(&strings), byte_array_align(cpu, size))?;
        strings.resize(
            usize::try_from(off).map_err(|_| Error::usage("too many images"))?,
            0,
        );
        strings.extend_from_slice(arch.as_bytes());
        strings.push(0);
        let name = format!("__offload_arch_{i}");
        let sym = local(obj, name.as_bytes(), list, off, size, elf::STT_OBJECT);
        if i == 0 {
            if !by_symbol {
                list_sym = Some(obj.section_symbol(list));
            }
            // LLVM marks the data at its first byte.
            if cpu.mapping_symbols {
                mapping(obj, b"$d", list);
            }
        }
        targets.push(match list_sym {
            Some(section) => (section, off),
            None => (sym, 0),
        });
    }
    obj.set_bytes(list, strings);
    Ok(info_syms
        .iter()
        .zip(targets)
        .zip(0..)
        .map(|((&sym, (list_sym, arch_off)), i)| Info {
            sym,
            off: at.info + STRUCT_SIZE * i,
            list_sym,
            arch_off,
        })
        .collect())
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

/// The global symbols, in the order LLVM's object writer lists them.
fn runtime_symbols(
    obj: &mut Relocatable,
    cpu: &CpuInfo,
    fl: &Flavour,
    entries: SectionId,
) -> Runtime {
    let toc = cpu
        .toc_symbol
        .map(|name| (name, undefined(obj, name.as_bytes(), false)));
    let register_info = fl
        .image_info
        .then(|| undefined(obj, b"__tgt_register_image_info", false));
    let register = undefined(obj, b"__tgt_register_lib", false);
    let atexit = fl.dtor.is_none().then(|| undefined(obj, b"atexit", false));
    let unregister = undefined(obj, b"__tgt_unregister_lib", false);
    if fl.dummy_global {
        obj.add_symbol(
            fl.dummy,
            elf::SymbolInfo::new(elf::STB_GLOBAL, elf::STT_OBJECT),
            elf::SymbolOther::from(elf::STV_HIDDEN),
            Place::Section(entries),
            0,
            0,
        );
    }
    let start = undefined(obj, format!("__start_{}", fl.entries).as_bytes(), true);
    let stop = undefined(obj, format!("__stop_{}", fl.entries).as_bytes(), true);
    Runtime {
        toc,
        register_info,
        register,
        atexit,
        unregister,
        start,
        stop,
    }
}

/// `.data.rel.ro`'s contents (in the CPU's byte order) and relocations:
/// the image array, the descriptor, the image infos.
#[expect(
    clippy::too_many_arguments,
    reason = "the parts built before, each named"
)]
fn data(
    obj: &mut Relocatable,
    cpu: &CpuInfo,
    images: &[Image<'_>],
    placed: &[(u64, u64)],
    s: &Sections,
    syms: &Locals,
    rt: &Runtime,
    at: &DataLayout,
) -> Result<()> {
    use object::Endian as _;
    let too_many = || Error::usage("too many images");
    let n_i32 = i32::try_from(at.n).map_err(|_| too_many())?;
    let mut bytes = vec![0u8; usize::try_from(at.len).map_err(|_| too_many())?];
    let mut put = |off: u64, field: &[u8]| {
        let off = usize::try_from(off).unwrap_or(usize::MAX);
        bytes[off..off + field.len()].copy_from_slice(field);
    };
    let (abs, data, e) = (cpu.abs64, s.data, cpu.endian);
    let by_symbol = syms.labels.is_some();
    let descriptor = |obj: &mut Relocatable| -> Result<()> {
        if by_symbol {
            reloc(obj, data, at.desc + 8, syms.array, 0, abs);
        } else {
            reloc(obj, data, at.desc + 8, syms.data, addend(at.images)?, abs);
        }
        reloc(obj, data, at.desc + 16, rt.start, 0, abs);
        reloc(obj, data, at.desc + 24, rt.stop, 0, abs);
        Ok(())
    };
    // Relocations in offset order, as llc lists them.
    if at.desc < at.images {
        descriptor(obj)?;
    }
    for (i, (img, &(off, _))) in images.iter().zip(placed).enumerate() {
        let base = at.images + STRUCT_SIZE * u64::try_from(i).map_err(|_| too_many())?;
        // From the section's start, or from the image's own symbol.
        let (image, off) = match by_symbol {
            true => (syms.images[i], 0),
            false => (syms.offloading, off),
        };
        reloc(obj, data, base, image, addend(off + img.image.start)?, abs);
        reloc(
            obj,
            data,
            base + 8,
            image,
            addend(off + img.image.end)?,
            abs,
        );
        reloc(obj, data, base + 16, rt.start, 0, abs);
        reloc(obj, data, base + 24, rt.stop, 0, abs);
    }
    if at.desc > at.images {
        descriptor(obj)?;
    }
    put(at.desc, &e.write_i32(n_i32));
    for (i, info) in syms.infos.iter().enumerate() {
        let number = i32::try_from(i).map_err(|_| too_many())?;
        // __tgt_image_info: version 1, image number, image count, padding,
        // offload_arch, compile_opts (null).
        put(info.off, &e.write_i32(1));
        put(info.off + 4, &e.write_i32(number));
        put(info.off + 8, &e.write_i32(n_i32));
        let arch = addend(info.arch_off)?;
        reloc(obj, data, info.off + 16, info.list_sym, arch, abs);
    }
    obj.set_bytes(data, bytes);
    Ok(())
}

/// The constructor (at 0) and destructor of `.text.startup`, their
/// relocations and symbols' extents, the descriptor at `desc_off` in
/// `.data.rel.ro` (in llc's merged global if `merged`); returns them and
/// the destructor's offset.
fn functions(
    obj: &mut Relocatable,
    cpu: &CpuInfo,
    s: &Sections,
    syms: &Locals,
    rt: &Runtime,
    (desc_off, merged): (u64, bool),
) -> Result<(Function, Function, u64)> {
    let desc_arg = Arg::Data {
        symbol: syms.desc,
        section: syms.data,
        offset: desc_off,
        merged,
    };
    let mut reg_calls: Vec<Call> = syms
        .infos
        .iter()
        .filter_map(|info| {
            Some(Call {
                callee: rt.register_info?,
                arg: Arg::Data {
                    symbol: info.sym,
                    section: syms.data,
                    offset: info.off,
                    merged,
                },
            })
        })
        .collect();
    reg_calls.push(Call {
        callee: rt.register,
        arg: desc_arg,
    });
    let unreg_calls = [Call {
        callee: rt.unregister,
        arg: desc_arg,
    }];
    // The constructor's size does not depend on where `unreg` lands, so
    // encode it once to learn its size, then again with the real offset.
    let with_atexit = |unreg_off: u64| {
        let mut calls = reg_calls.clone();
        if let Some(atexit) = rt.atexit {
            calls.push(Call {
                callee: atexit,
                arg: Arg::Code {
                    section: syms.startup,
                    offset: unreg_off,
                },
            });
        }
        calls
    };
    let probe = cpu.code.function(0, &with_atexit(0))?;
    let unreg_off = align_up(len64(&probe.code), cpu.code_align)?;
    let reg_fn = cpu.code.function(0, &with_atexit(unreg_off))?;
    let unreg_fn = cpu.code.function(unreg_off, &unreg_calls)?;
    debug_assert_eq!(reg_fn.code.len(), probe.code.len());

    let mut code = reg_fn.code.clone();
    let pad = usize::try_from(unreg_off - len64(&code)).unwrap_or(0);
    code.extend(cpu.code.padding(pad));
    code.extend_from_slice(&unreg_fn.code);
    obj.set_bytes(s.startup, code);
    for (k, (f, base)) in [(&reg_fn, 0), (&unreg_fn, unreg_off)]
        .into_iter()
        .enumerate()
    {
        let mut pcrel = 0;
        for r in &f.relocs {
            let offset = base + r.offset;
            let symbol = match (r.target, rt.toc, &syms.labels) {
                (Target::Symbol(sym), _, _) => sym,
                (Target::Runtime(name), Some((toc, sym)), _) if name == toc => sym,
                // The next `.Lpcrel_hiN` laid out for this function.
                (Target::Label(at, _), _, Some(labels)) if pcrel < labels.pcrel[k].len() => {
                    let sym = labels.pcrel[k][pcrel];
                    pcrel += 1;
                    obj.set_extent(sym, base + at, 0);
                    sym
                }
                _ => return Err(internal("a function refers to a symbol the object lacks")),
            };
            reloc(obj, s.startup, offset, symbol, r.addend, r.r_type);
        }
    }
    obj.set_extent(syms.reg, 0, len64(&reg_fn.code));
    obj.set_extent(syms.unreg, unreg_off, len64(&unreg_fn.code));
    if let Some(labels) = &syms.labels {
        obj.set_extent(labels.starts[1], unreg_off, 0);
    }
    Ok((reg_fn, unreg_fn, unreg_off))
}
