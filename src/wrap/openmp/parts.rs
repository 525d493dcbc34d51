//! What the OpenMP object's steps build and hand on: where the inputs
//! and the structures lie, its sections, its local and global symbols, and
//! the ROCm target IDs.

use object::elf;

use crate::error::{Error, Result};
use crate::num::len64;
use crate::wrap::arch::CpuInfo;
use crate::wrap::elf_object::{Flavour, local};
use crate::wrap::merge;
use crate::wrap::model::{InputShape, STRUCT_SIZE, byte_array_align};
use crate::wrap::relocatable::{Relocatable, SectionId, SymbolId};

/// Where the inputs go in `.llvm.offloading`.
pub(crate) struct Placement {
    /// (offset, length) of each input.
    pub placed: Vec<(u64, u64)>,
    /// The inputs llc merges into `_MergedGlobals` (CPUs with
    /// [`CpuInfo::merge_constants`]), in their merged order; they lie after
    /// the others.
    pub merged: Vec<usize>,
    /// The section's size.
    pub end: u64,
}

/// The sections before `.note.GNU-stack`, in LLVM's order.
pub(super) struct Sections {
    /// `.text.startup`: the constructor and destructor.
    pub(super) startup: SectionId,
    /// The host entry table, whose bounds the linker defines.
    pub(super) entries: SectionId,
    /// `.llvm.offloading`: the inputs.
    pub(super) offloading: SectionId,
    /// `.data.rel.ro`: the image array, the descriptor, the image infos.
    pub(super) data: SectionId,
    /// `.offload_arch_list` (ROCm).
    pub(super) arch_list: Option<SectionId>,
    /// The constructor pointer's section.
    pub(super) ctor: SectionId,
    /// The destructor pointer's section (legacy and ROCm).
    pub(super) dtor: Option<SectionId>,
}

/// Where the structures lie in `.data.rel.ro`: the image array, the
/// descriptor, then (ROCm) the image infos, in the module's order; on CPUs
/// where llc merges constants ([`CpuInfo::merge_constants`]), those it
/// merges after the others, in their merged globals (sorted by size: the
/// descriptor and the infos before the array unless there is one image).
pub(super) struct DataLayout {
    /// Number of images.
    pub(super) n: u64,
    /// Each constant's size: the image array ([`ARRAY`]), the descriptor
    /// ([`DESC`]), then each image info.
    pub(super) sizes: Vec<u64>,
    /// Where they lie, and which llc merges.
    pub(super) merge: merge::Placement,
}

/// The image array's index among [`DataLayout`]'s constants.
pub(super) const ARRAY: usize = 0;
/// The descriptor's index among [`DataLayout`]'s constants.
pub(super) const DESC: usize = 1;
/// The first image info's index among [`DataLayout`]'s constants.
pub(super) const INFO: usize = 2;

impl DataLayout {
    pub(super) fn new(fl: &Flavour, cpu: &CpuInfo, images: usize) -> Result<DataLayout> {
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
        let merge = merge::place(&consts, cpu.merge_constants)?;
        Ok(DataLayout { n, sizes, merge })
    }

    /// Offset of the image array.
    pub(super) fn images(&self) -> u64 {
        self.merge.at[ARRAY]
    }

    /// Offset of `__tgt_bin_desc`.
    pub(super) fn desc(&self) -> u64 {
        self.merge.at[DESC]
    }

    /// Offset of the `i`th `__tgt_image_info`.
    pub(super) fn info(&self, i: usize) -> u64 {
        self.merge.at[INFO + i]
    }

    /// Number of image infos (ROCm: one per image).
    pub(super) fn infos(&self) -> usize {
        self.sizes.len() - INFO
    }

    /// Whether llc merges everything here (then `.data.rel.ro` comes after
    /// the constructor's sections).
    pub(super) fn all_merged(&self) -> bool {
        self.merge.all_merged()
    }

    /// Size of the section.
    pub(super) fn len(&self) -> u64 {
        self.merge.end
    }
}

/// A ROCm `__tgt_image_info`: its symbol and offset in `.data.rel.ro`, and
/// where its target ID lies in `.offload_arch_list` (the section symbol
/// and the offset, or, on CPUs that relocate against symbols, the string's
/// own symbol and 0).
pub(super) struct Info {
    pub(super) sym: SymbolId,
    pub(super) off: u64,
    pub(super) list_sym: SymbolId,
    pub(super) arch_off: u64,
}

/// The local symbols the code and data refer to.
///
/// On CPUs that relocate against symbols ([`CpuInfo::symbol_relocs`]) there
/// are no section symbols: `startup` is then the constructor's symbol (at
/// 0), `offloading` the first image's and `data` the image array's.
pub(super) struct Locals {
    /// Section symbol of `.text.startup`.
    pub(super) startup: SymbolId,
    /// `.omp_offloading.descriptor_reg` (its extent set with the code).
    pub(super) reg: SymbolId,
    /// `.omp_offloading.descriptor`.
    pub(super) desc: SymbolId,
    /// `.omp_offloading.descriptor_unreg` (its extent set with the code).
    pub(super) unreg: SymbolId,
    /// Section symbol of `.llvm.offloading`.
    pub(super) offloading: SymbolId,
    /// Section symbol of `.data.rel.ro`.
    pub(super) data: SymbolId,
    /// The image infos (ROCm).
    pub(super) infos: Vec<Info>,
    /// The image infos' symbols (ROCm), listed where the constructor first
    /// refers to them.
    pub(super) info_syms: Vec<SymbolId>,
    /// Each input's symbol (`.omp_offloading.device_image`, `.1`, …).
    pub(super) images: Vec<SymbolId>,
    /// `.omp_offloading.device_images`.
    pub(super) array: SymbolId,
    /// The code's local labels, on CPUs that relocate against symbols.
    pub(super) labels: Option<Labels>,
    /// Each merged global of `.data.rel.ro` (CPUs with
    /// [`CpuInfo::merge_constants`]): its first member's symbol, which
    /// stands for it in the code's arguments, and its offset, which llc
    /// adds to the section symbol it relocates against instead.
    pub(super) anchors: Vec<(SymbolId, u64)>,
}

/// The local labels llc keeps in the symbol table of riscv64 objects.
pub(super) struct Labels {
    /// `.L0 ` at the start of the constructor and of the destructor, for
    /// their FDEs.
    pub(super) starts: [SymbolId; 2],
    /// `.Lpcrel_hiN` at each `auipc` of a data address in the constructor
    /// (the ROCm image infos, then the descriptor) and in the destructor
    /// (the descriptor), in code order.
    pub(super) pcrel: [Vec<SymbolId>; 2],
}

/// ROCm: the images' target IDs in `.offload_arch_list`, each with its
/// NUL and aligned as llc aligns a byte array; on CPUs where llc merges
/// constants, those it merges after the others, in their merged globals
/// (sorted by size).
pub(super) struct ArchList {
    /// Each target ID's size, with its NUL.
    pub(super) sizes: Vec<u64>,
    /// Where they lie, and which llc merges.
    pub(super) at: merge::Placement,
    /// The section's contents.
    pub(super) bytes: Vec<u8>,
}

impl ArchList {
    pub(super) fn new(cpu: &CpuInfo, images: &[InputShape]) -> Result<ArchList> {
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
        let at = merge::place(&consts, cpu.merge_constants)?;
        let too_many = || Error::usage("too many images");
        let mut bytes = vec![0; usize::try_from(at.end).map_err(|_| too_many())?];
        for (id, &off) in ids.iter().zip(&at.at) {
            let off = usize::try_from(off).map_err(|_| too_many())?;
            bytes[off..off + id.len()].copy_from_slice(id);
        }
        Ok(ArchList { sizes, at, bytes })
    }

    /// The symbol of image `i`'s target ID, in `list`.
    pub(super) fn define(&self, obj: &mut Relocatable, list: SectionId, i: usize) -> SymbolId {
        let name = format!("__offload_arch_{i}");
        let (off, size) = (self.at.at[i], self.sizes[i]);
        local(obj, name.as_bytes(), list, off, size, elf::STT_OBJECT)
    }
}

/// The global symbols: the runtime's functions and the entry table's
/// bounds.
pub(super) struct Runtime {
    /// The CPU's TOC symbol (`.TOC.`), by name.
    pub(super) toc: Option<(&'static str, SymbolId)>,
    /// `__tgt_register_image_info` (ROCm).
    pub(super) register_info: Option<SymbolId>,
    /// `__tgt_register_lib`.
    pub(super) register: SymbolId,
    /// `atexit`, unless a destructor section unregisters.
    pub(super) atexit: Option<SymbolId>,
    /// `__tgt_unregister_lib`.
    pub(super) unregister: SymbolId,
    /// `__start_<entries>`.
    pub(super) start: SymbolId,
    /// `__stop_<entries>`.
    pub(super) stop: SymbolId,
}

/// What the steps before the contents built, which the data and the code
/// refer to.
pub(super) struct Parts<'a> {
    /// The sections.
    pub(super) s: &'a Sections,
    /// The local symbols.
    pub(super) syms: &'a Locals,
    /// The global symbols.
    pub(super) rt: &'a Runtime,
    /// Where the structures lie in `.data.rel.ro`.
    pub(super) at: &'a DataLayout,
}
