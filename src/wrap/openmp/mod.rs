//! The OpenMP object (docs/formats/wrapper-objects.md): the images, the descriptor
//! and image array in `.data.rel.ro`, the constructor and destructor, in
//! the order llc writes them. [`build`] is the whole; each step below adds
//! one part, and everything it adds lands where llc puts it (sections in
//! the order they are added, local symbols in the order they are added).
//!
//! This file lays out the sections and the data; `symbols.rs` lists the
//! symbols, `contents.rs` writes the data and the code, and `parts.rs`
//! holds what the steps build and hand on.

use object::elf;

use super::SHT_LLVM_OFFLOADING;
use super::arch::{CpuInfo, addend};
use super::elf_object::{Flavour, HostOs, finish_object, new_object, reloc};
use super::model::{Abi, IMAGE_ALIGN, InputShape, align_up};
use super::relocatable::{Relocatable, SectionId};
use crate::error::{Error, Result};
use crate::num::len64;

mod contents;
mod parts;
mod symbols;

use contents::{data, functions};
use parts::{ArchList, DataLayout, Parts, Placement, Sections};
use symbols::{image_infos, local_symbols, local_symbols_by_name, runtime_symbols};

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
