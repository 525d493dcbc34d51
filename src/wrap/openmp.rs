//! The OpenMP object (docs/formats/wrapper-objects.md): the images, the descriptor
//! and image array in `.data.rel.ro`, the constructor and destructor, in
//! the order llc writes them. [`build`] is the whole; each step below adds
//! one part, and everything it adds lands where llc puts it (sections in
//! the order they are added, local symbols in the order they are added).

use object::elf;

use super::arch::{Arg, Call, CpuInfo, Function, Target, addend, internal};
use super::relocatable::{Place, Relocatable, SectionId, SymbolId};
use super::{
    Abi, Flavour, HostOs, IMAGE_ALIGN, InputShape, SHT_LLVM_OFFLOADING, STRUCT_SIZE, align_up,
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
    data(&mut obj, cpu, images, &placed, &s, &syms, &rt, &at)?;
    let (reg_fn, unreg_fn, unreg_off) = functions(&mut obj, cpu, &s, &syms, &rt, &at)?;

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

/// The local symbols, in the order LLVM's object writer lists them (with
/// the mapping symbols where LLVM puts them): first those the code refers
/// to, as it does; then the module's globals that llc leaves alone, in
/// the module's order, each section's symbol after its first; then the
/// sections that hold only merged globals, as GlobalMerge makes them
/// (images, data, target IDs), and the merged members' aliases.
fn local_symbols(
    obj: &mut Relocatable,
    cpu: &CpuInfo,
    fl: &Flavour,
    s: &Sections,
    at: &DataLayout,
    p: &Placement,
    archs: Option<&ArchList>,
) -> Result<Locals> {
    let object = elf::STT_OBJECT;
    obj.add_file_symbol(fl.file);
    let startup = obj.section_symbol(s.startup);
    let reg = function(obj, cpu, b".omp_offloading.descriptor_reg", s.startup, 0, 0);
    let maps = cpu.mapping_symbols;
    if maps {
        mapping(obj, b"$x", s.startup);
    }
    let const_name = |k: usize| match k {
        ARRAY => b".omp_offloading.device_images".to_vec(),
        DESC => b".omp_offloading.descriptor".to_vec(),
        _ => format!(".offload_image_info_{}", k - INFO).into_bytes(),
    };
    let define = |obj: &mut Relocatable, k: usize| {
        let off = at.merge.at[k];
        local(obj, &const_name(k), s.data, off, at.sizes[k], object)
    };
    let mut consts: Vec<Option<SymbolId>> = vec![None; at.sizes.len()];
    // The constructor's arguments (ROCm: the image infos, then the
    // descriptor), where it refers to them; a merged one is referred to
    // through its merged global, which has no symbol.
    for k in (INFO..at.sizes.len()).chain([DESC]) {
        if at.merge.group[k].is_none() {
            consts[k] = Some(define(obj, k));
        }
    }
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
    // The array and the descriptor, then each image's target ID and info,
    // where llc leaves them alone.
    let mut data_started = false;
    let mut list_started = false;
    let mut order = vec![(false, ARRAY), (false, DESC)];
    for i in 0..at.infos() {
        order.extend([(true, i), (false, INFO + i)]);
    }
    for (arch, k) in order {
        match (arch, archs, s.arch_list) {
            (true, Some(l), Some(list)) => {
                if l.at.group.get(k).is_some_and(Option::is_none) {
                    l.define(obj, list, k);
                    section_start(obj, maps, list, &mut list_started);
                }
            }
            (true, ..) => return Err(internal("an image info without a target ID")),
            (false, ..) => {
                if at.merge.group[k].is_none() {
                    if consts[k].is_none() {
                        consts[k] = Some(define(obj, k));
                    }
                    section_start(obj, maps, s.data, &mut data_started);
                }
            }
        }
    }
    // The sections of the merged globals, in the order GlobalMerge makes
    // them, then their members' aliases, in the merged order.
    let offloading = offloading.unwrap_or_else(|| obj.section_symbol(s.offloading));
    section_start(obj, maps, s.data, &mut data_started);
    if let (Some(l), Some(list)) = (archs, s.arch_list)
        && !l.at.groups.is_empty()
    {
        obj.section_symbol(list);
    }
    for &i in &p.merged {
        let (off, len) = p.placed[i];
        images[i] = local(obj, &name(i), s.offloading, off, len, object);
    }
    for k in at.merge.merged() {
        consts[k] = Some(define(obj, k));
    }
    if let (Some(l), Some(list)) = (archs, s.arch_list) {
        for k in l.at.merged() {
            l.define(obj, list, k);
        }
    }
    let data = obj.section_symbol(s.data);
    let consts: Vec<SymbolId> = consts
        .into_iter()
        .map(|c| c.ok_or_else(|| internal("a structure without a symbol")))
        .collect::<Result<_>>()?;
    let mut infos = Vec::with_capacity(at.infos());
    if let (Some(l), Some(list)) = (archs, s.arch_list) {
        let list_sym = obj.section_symbol(list);
        for i in 0..at.infos() {
            infos.push(Info {
                sym: consts[INFO + i],
                off: at.info(i),
                list_sym,
                arch_off: l.at.at[i],
            });
        }
    }
    let anchors = at
        .merge
        .groups
        .iter()
        .map(|(base, members)| (consts[members[0]], *base))
        .collect();
    Ok(Locals {
        startup,
        reg,
        desc: consts[DESC],
        unreg,
        offloading,
        data,
        infos,
        info_syms: Vec::new(),
        images,
        array: consts[ARRAY],
        labels: None,
        anchors,
    })
}

/// A section's symbol where its first global is listed, and on CPUs with
/// mapping symbols `$d` (LLVM marks data where its first byte is
/// emitted).
fn section_start(obj: &mut Relocatable, maps: bool, section: SectionId, started: &mut bool) {
    if !*started {
        obj.section_symbol(section);
        if maps {
            mapping(obj, b"$d", section);
        }
        *started = true;
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
    let mut reg_pcrel = Vec::new();
    let mut infos = Vec::new();
    for i in 0..at.infos() {
        reg_pcrel.push(label(obj, 0));
        let name = format!(".offload_image_info_{i}");
        let off = at.info(i);
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
        at.desc(),
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
        at.images(),
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
        anchors: Vec::new(),
    })
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

/// ROCm on CPUs that relocate against symbols: each image's target ID's
/// symbol in `.offload_arch_list` (section `list`), with the mapping
/// symbol llc lists after the first; and the image infos, whose symbols
/// `info_syms` were made with the code's, each relocated against its
/// target ID's own symbol.
fn image_infos(
    obj: &mut Relocatable,
    cpu: &CpuInfo,
    archs: &ArchList,
    list: SectionId,
    info_syms: &[SymbolId],
    at: &DataLayout,
) -> Vec<Info> {
    let mut infos = Vec::with_capacity(info_syms.len());
    for (i, &sym) in info_syms.iter().enumerate() {
        let list_sym = archs.define(obj, list, i);
        // LLVM marks the data at its first byte.
        if i == 0 && cpu.mapping_symbols {
            mapping(obj, b"$d", list);
        }
        infos.push(Info {
            sym,
            off: at.info(i),
            list_sym,
            arch_off: 0,
        });
    }
    infos
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
    images: &[InputShape],
    placed: &[(u64, u64)],
    s: &Sections,
    syms: &Locals,
    rt: &Runtime,
    at: &DataLayout,
) -> Result<()> {
    use object::Endian as _;
    let too_many = || Error::usage("too many images");
    let n_i32 = i32::try_from(at.n).map_err(|_| too_many())?;
    let mut bytes = vec![0u8; usize::try_from(at.len()).map_err(|_| too_many())?];
    let mut put = |off: u64, field: &[u8]| {
        let off = usize::try_from(off).unwrap_or(usize::MAX);
        bytes[off..off + field.len()].copy_from_slice(field);
    };
    let e = cpu.endian;
    let by_symbol = syms.labels.is_some();
    // (offset, symbol, addend) of each pointer.
    let mut relocs = Vec::with_capacity(4 * images.len() + 3 + syms.infos.len());
    let desc = at.desc();
    if by_symbol {
        relocs.push((desc + 8, syms.array, 0));
    } else {
        relocs.push((desc + 8, syms.data, addend(at.images())?));
    }
    relocs.push((desc + 16, rt.start, 0));
    relocs.push((desc + 24, rt.stop, 0));
    for (i, (img, &(off, _))) in images.iter().zip(placed).enumerate() {
        let base = at.images() + STRUCT_SIZE * u64::try_from(i).map_err(|_| too_many())?;
        // From the section's start, or from the image's own symbol.
        let (image, off) = match by_symbol {
            true => (syms.images[i], 0),
            false => (syms.offloading, off),
        };
        relocs.push((base, image, addend(off + img.image.start)?));
        relocs.push((base + 8, image, addend(off + img.image.end)?));
        relocs.push((base + 16, rt.start, 0));
        relocs.push((base + 24, rt.stop, 0));
    }
    put(desc, &e.write_i32(n_i32));
    for (i, info) in syms.infos.iter().enumerate() {
        let number = i32::try_from(i).map_err(|_| too_many())?;
        // __tgt_image_info: version 1, image number, image count, padding,
        // offload_arch, compile_opts (null).
        put(info.off, &e.write_i32(1));
        put(info.off + 4, &e.write_i32(number));
        put(info.off + 8, &e.write_i32(n_i32));
        relocs.push((info.off + 16, info.list_sym, addend(info.arch_off)?));
    }
    obj.set_bytes(s.data, bytes);
    // In offset order, as llc lists them, however the structures lie.
    relocs.sort_by_key(|r| r.0);
    for (off, symbol, add) in relocs {
        reloc(obj, s.data, off, symbol, add, cpu.abs64);
    }
    Ok(())
}

/// The constructor (at 0) and destructor of `.text.startup`, their
/// relocations and symbols' extents, the structures as `at` lays them out
/// in `.data.rel.ro`; returns them and the destructor's offset.
///
/// A structure in one of llc's merged globals is passed as an offset from
/// the global's first member (its anchor, [`Locals::anchors`]); the
/// relocations against an anchor are written against the section symbol,
/// the global's offset added, as llc writes them.
fn functions(
    obj: &mut Relocatable,
    cpu: &CpuInfo,
    s: &Sections,
    syms: &Locals,
    rt: &Runtime,
    at: &DataLayout,
) -> Result<(Function, Function, u64)> {
    let arg = |k: usize, symbol: SymbolId| -> Result<Arg> {
        let off = at.merge.at[k];
        Ok(match at.merge.group[k] {
            Some(g) => {
                let &(anchor, base) = syms
                    .anchors
                    .get(g)
                    .ok_or_else(|| internal("a merged global without a symbol"))?;
                Arg::Data {
                    symbol,
                    section: anchor,
                    offset: off - base,
                    merged: true,
                }
            }
            None => Arg::Data {
                symbol,
                section: syms.data,
                offset: off,
                merged: false,
            },
        })
    };
    let desc_arg = arg(DESC, syms.desc)?;
    let mut reg_calls = Vec::with_capacity(syms.infos.len() + 2);
    if let Some(callee) = rt.register_info {
        for (i, info) in syms.infos.iter().enumerate() {
            reg_calls.push(Call {
                callee,
                arg: arg(INFO + i, info.sym)?,
            });
        }
    }
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
            let mut r_addend = r.addend;
            let symbol = match (r.target, rt.toc, &syms.labels) {
                (Target::Symbol(sym), _, _) => match syms.anchors.iter().find(|a| a.0 == sym) {
                    Some(&(_, base)) => {
                        r_addend += addend(base)?;
                        syms.data
                    }
                    None => sym,
                },
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
            reloc(obj, s.startup, offset, symbol, r_addend, r.r_type);
        }
    }
    obj.set_extent(syms.reg, 0, len64(&reg_fn.code));
    obj.set_extent(syms.unreg, unreg_off, len64(&unreg_fn.code));
    if let Some(labels) = &syms.labels {
        obj.set_extent(labels.starts[1], unreg_off, 0);
    }
    Ok((reg_fn, unreg_fn, unreg_off))
}
