//! The OpenMP object's symbols, in the order LLVM's object writer lists
//! them: the local symbols (by section, or by name on CPUs that relocate
//! against symbols), the ROCm image infos' target IDs, and the runtime's
//! global symbols.

use object::elf;

use super::parts::{
    ARRAY, ArchList, DESC, DataLayout, INFO, Info, Labels, Locals, Placement, Runtime, Sections,
};
use crate::error::Result;
use crate::wrap::arch::{CpuInfo, internal};
use crate::wrap::elf_object::{Flavour, function, local, mapping, undefined};
use crate::wrap::model::STRUCT_SIZE;
use crate::wrap::relocatable::{Place, Relocatable, SectionId, SymbolId};

/// The local symbols, in the order LLVM's object writer lists them (with
/// the mapping symbols where LLVM puts them): first those the code refers
/// to, as it does; then the module's globals that llc leaves alone, in
/// the module's order, each section's symbol after its first; then the
/// sections that hold only merged globals, as GlobalMerge makes them
/// (images, data, target IDs), and the merged members' aliases.
pub(super) fn local_symbols(
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
    let mut consts: Vec<Option<SymbolId>> = vec![None; at.sizes.len()];
    // The constructor's arguments (ROCm: the image infos, then the
    // descriptor), where it refers to them; a merged one is referred to
    // through its merged global, which has no symbol.
    for k in (INFO..at.sizes.len()).chain([DESC]) {
        if at.merge.group[k].is_none() {
            consts[k] = Some(define_structure(obj, s, at, k));
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
    let mut images = vec![unreg; p.placed.len()];
    let offloading = unmerged_images(obj, maps, s, p, &mut images);
    let mut data_started = false;
    unmerged_structures(obj, maps, s, at, archs, &mut consts, &mut data_started)?;
    // The sections of the merged globals, in the order GlobalMerge makes
    // them, then their members' aliases, in the merged order.
    let offloading = offloading.unwrap_or_else(|| obj.section_symbol(s.offloading));
    section_start(obj, maps, s.data, &mut data_started);
    merged_globals(obj, s, at, p, archs, &mut consts, &mut images);
    let data = obj.section_symbol(s.data);
    let consts: Vec<SymbolId> = consts
        .into_iter()
        .map(|c| c.ok_or_else(|| internal("a structure without a symbol")))
        .collect::<Result<_>>()?;
    let infos = section_image_infos(obj, s, at, archs, &consts);
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

/// The name of input `i`'s symbol: `.omp_offloading.device_image`, then
/// `.1`, `.2`, ….
fn image_name(i: usize) -> Vec<u8> {
    match i {
        0 => b".omp_offloading.device_image".to_vec(),
        _ => format!(".omp_offloading.device_image.{i}").into_bytes(),
    }
}

/// The symbol of structure `k` of `.data.rel.ro` (the image array, the
/// descriptor, an image info), where [`DataLayout`] puts it.
fn define_structure(obj: &mut Relocatable, s: &Sections, at: &DataLayout, k: usize) -> SymbolId {
    let name = match k {
        ARRAY => b".omp_offloading.device_images".to_vec(),
        DESC => b".omp_offloading.descriptor".to_vec(),
        _ => format!(".offload_image_info_{}", k - INFO).into_bytes(),
    };
    let off = at.merge.at[k];
    local(obj, &name, s.data, off, at.sizes[k], elf::STT_OBJECT)
}

/// The symbols of the inputs llc does not merge, into `images`, with the
/// image section's symbol after the first (returned) and its `$d`.
fn unmerged_images(
    obj: &mut Relocatable,
    maps: bool,
    s: &Sections,
    p: &Placement,
    images: &mut [SymbolId],
) -> Option<SymbolId> {
    let mut offloading = None;
    let mut data_mapped = false;
    for (i, &(off, len)) in p.placed.iter().enumerate() {
        if p.merged.contains(&i) {
            continue;
        }
        images[i] = local(obj, &image_name(i), s.offloading, off, len, elf::STT_OBJECT);
        if offloading.is_none() {
            offloading = Some(obj.section_symbol(s.offloading));
        }
        // LLVM marks data where the first byte of it is emitted.
        if maps && !data_mapped && len > 0 {
            mapping(obj, b"$d", s.offloading);
            data_mapped = true;
        }
    }
    offloading
}

/// The array and the descriptor, then each image's target ID and info,
/// where llc leaves them alone (not merged), each section's symbol after
/// its first; the structures' symbols go into `consts`.
fn unmerged_structures(
    obj: &mut Relocatable,
    maps: bool,
    s: &Sections,
    at: &DataLayout,
    archs: Option<&ArchList>,
    consts: &mut [Option<SymbolId>],
    data_started: &mut bool,
) -> Result<()> {
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
                        consts[k] = Some(define_structure(obj, s, at, k));
                    }
                    section_start(obj, maps, s.data, data_started);
                }
            }
        }
    }
    Ok(())
}

/// The merged globals' symbols: the target IDs' section symbol where it
/// holds merged ones, then the merged members' aliases in the merged
/// order (images, structures, target IDs) into `images` and `consts`.
fn merged_globals(
    obj: &mut Relocatable,
    s: &Sections,
    at: &DataLayout,
    p: &Placement,
    archs: Option<&ArchList>,
    consts: &mut [Option<SymbolId>],
    images: &mut [SymbolId],
) {
    if let (Some(l), Some(list)) = (archs, s.arch_list)
        && !l.at.groups.is_empty()
    {
        obj.section_symbol(list);
    }
    for &i in &p.merged {
        let (off, len) = p.placed[i];
        images[i] = local(obj, &image_name(i), s.offloading, off, len, elf::STT_OBJECT);
    }
    for k in at.merge.merged() {
        consts[k] = Some(define_structure(obj, s, at, k));
    }
    if let (Some(l), Some(list)) = (archs, s.arch_list) {
        for k in l.at.merged() {
            l.define(obj, list, k);
        }
    }
}

/// ROCm on CPUs that relocate against sections: each image info, relocated
/// against the target IDs' section symbol at its target ID's offset.
fn section_image_infos(
    obj: &mut Relocatable,
    s: &Sections,
    at: &DataLayout,
    archs: Option<&ArchList>,
    consts: &[SymbolId],
) -> Vec<Info> {
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
    infos
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
pub(super) fn local_symbols_by_name(
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
    let (images, array) = image_symbols_by_name(obj, fl, s, at, p);
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

/// After the functions' symbols in [`local_symbols_by_name`]: the dummy
/// global (unless it is global), the images' symbols with the mapping
/// symbol at the first byte of data, and the image array's symbol;
/// returns the images' symbols and the array's.
fn image_symbols_by_name(
    obj: &mut Relocatable,
    fl: &Flavour,
    s: &Sections,
    at: &DataLayout,
    p: &Placement,
) -> (Vec<SymbolId>, SymbolId) {
    let object = elf::STT_OBJECT;
    if !fl.dummy_global {
        local(obj, fl.dummy, s.entries, 0, 0, object);
    }
    let mut images = Vec::with_capacity(p.placed.len());
    let mut data_mapped = false;
    for (i, &(off, len)) in p.placed.iter().enumerate() {
        images.push(local(obj, &image_name(i), s.offloading, off, len, object));
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
    (images, array)
}

/// ROCm on CPUs that relocate against symbols: each image's target ID's
/// symbol in `.offload_arch_list` (section `list`), with the mapping
/// symbol llc lists after the first; and the image infos, whose symbols
/// `info_syms` were made with the code's, each relocated against its
/// target ID's own symbol.
pub(super) fn image_infos(
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

/// The global symbols, in the order LLVM's object writer lists them.
pub(super) fn runtime_symbols(
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
