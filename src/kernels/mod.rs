//! What is inside a device image: its kernels, the resources each kernel
//! uses, and the other symbols the image exports.
//!
//! [`read`] takes the bytes of one image (as a [scan](crate::scan) hands
//! them to a visitor) and tells its format from them:
//!
//! - **AMDGPU code objects** (ELF, `EM_AMDGPU`, code object v4 to v6, v3
//!   too): the kernels come from the HSA metadata note (`NT_AMDGPU_METADATA`,
//!   a MessagePack map; see docs/formats/kernels.md), each with its register
//!   counts, LDS and scratch sizes, wavefront size and workgroup limit; the
//!   kernel descriptors (`NAME.kd` symbols) name kernels the note leaves out.
//! - **CUDA cubins** (ELF, `EM_CUDA`): the entry functions and, from each
//!   kernel's `.nv.info.NAME` section and its own sections, the figures
//!   `cuobjdump -res-usage` prints.
//! - **PTX**: the `.entry` names, `.target` and `.version`.
//! - **Other ELF files** (OpenMP images for CPUs): the functions and
//!   variables they define and export; `__omp_offloading_*` functions are
//!   the kernels.
//!
//! Other bytes (bitcode, SPIR-V, containers) give `None`. Every size and
//! offset is checked: damaged bytes give an [`Error`](crate::Error), never a panic, and
//! the work is bounded by the image's size.
//!
//! [`Collect`] is a [`Visit`] that reads every image a scan finds,
//! compressed ones included (each handed over alone, decompressed within
//! the scan's budget).
//!
//! # Examples
//!
//! ```
//! use offload_kit::kernels::{self, Format};
//!
//! let ptx = b".version 8.0\n.target sm_80\n.address_size 64\n\
//!             .visible .entry _Z4fillPfi(\n.param .u64 p0,\n.param .u32 p1\n)\n{\nret;\n}\n";
//! let listing = kernels::read(ptx)?.expect("PTX");
//! assert_eq!(listing.format, Format::Ptx);
//! assert_eq!(listing.target.as_deref(), Some("sm_80"));
//! assert_eq!(listing.kernels[0].name, "_Z4fillPfi");
//! # Ok::<(), offload_kit::Error>(())
//! ```

use std::collections::BTreeMap;

use crate::error::Result;
pub(crate) use crate::kernel_listing::Figure;
use crate::kernel_listing::text;
pub use crate::kernel_listing::{
    ConstantBank, Format, ImageKernels, Kernel, Listing, Resources, Symbol, SymbolKind, demangle,
};
use crate::scan::{Content, Image, ImageReader, Unread, Visit};

mod allowance;
mod amdgpu;
mod cubin;
mod elf;
pub(crate) mod gate;
mod host;
mod msgpack;
mod ptx;
mod rule;
#[cfg(test)]
pub(crate) mod tests;

pub use crate::companion::gate::PerGpuJudgement;
pub use allowance::{Allowance, DEFAULT_MAX_LISTED};
pub(crate) use cubin::{TableRow, Textures, symbol_table, usage};
pub use gate::{CheckReport, KernelGate};
pub use rule::{KernelRule, KernelRuleResult, check, combine};

/// The kernels and symbols of an image's bytes: `Ok(None)` for bytes of
/// no format read here (bitcode, SPIR-V, a container, anything else),
/// an error for an image of a known format that is damaged, or that
/// lists more than [`DEFAULT_MAX_LISTED`] kernels and symbols.
pub fn read(bytes: &[u8]) -> Result<Option<Listing>> {
    read_within(bytes, &Allowance::default())
}

/// [`read`], taking the kernels and symbols read from `allowance`.
pub fn read_within(bytes: &[u8], allowance: &Allowance) -> Result<Option<Listing>> {
    if let Some(peek) = crate::host::elf::peek(bytes) {
        let listing = match peek.machine() {
            Some(object::elf::EM_AMDGPU) => amdgpu::read(bytes, allowance)?,
            Some(object::elf::EM_CUDA) => cubin::read(bytes, allowance)?,
            _ => host::read(bytes, allowance)?,
        };
        return Ok(Some(listing.sorted()));
    }
    if ptx::looks_like_ptx(bytes) {
        return Ok(Some(ptx::read(bytes, allowance)?.sorted()));
    }
    Ok(None)
}

/// A [`Visit`] that reads the kernels of every device image a scan hands
/// it ([`read`]); images of no format read here are left out.
///
/// ```
/// use offload_kit::{kernels, scan};
///
/// # let bytes = b"not a binary";
/// let mut collect = kernels::Collect::default();
/// let report = scan::scan_with(bytes, &scan::Options::default(), &mut collect);
/// let found = collect.take(Some(&report));
/// assert!(found.len() <= report.images.len());
/// ```
#[derive(Debug, Default)]
pub struct Collect {
    found: BTreeMap<usize, std::result::Result<Listing, Unread>>,
    allowance: Allowance,
}

impl Collect {
    /// A collector whose listings are taken from `allowance` (one for a
    /// whole command: see [`Allowance`]). Once it is
    /// [exhausted](Allowance::exhausted), what was collected is
    /// incomplete.
    pub fn within(allowance: Allowance) -> Collect {
        Collect {
            found: BTreeMap::new(),
            allowance,
        }
    }

    /// What was found in the scan that gave `report`, by image id (none
    /// when the scan [stopped](crate::scan::Report::stopped) at a limit:
    /// its images are not kept); the collector starts empty again, for
    /// the next file. `None`: the file could not be read, and what was
    /// collected is dropped.
    pub fn take(&mut self, report: Option<&crate::scan::Report>) -> Vec<ImageKernels> {
        let found = std::mem::take(&mut self.found);
        let Some(r) = report.filter(|r| r.stopped.is_none()) else {
            return Vec::new();
        };
        found
            .into_iter()
            .filter(|&(image, _)| image < r.images.len())
            .map(|(image, listing)| ImageKernels { image, listing })
            .collect()
    }
}

/// Whether an image of this kind may hold symbols read here: anything but
/// a container or a kind that is not code (`None`: not known yet).
fn may_hold_symbols(kind: Option<Content>) -> bool {
    use crate::offload_binary::ImageKind;
    match kind {
        None | Some(Content::Unknown) => true,
        Some(Content::Image(k)) => matches!(
            k,
            ImageKind::IMG_Object | ImageKind::IMG_Cubin | ImageKind::IMG_PTX
        ),
        Some(_) => false,
    }
}

impl Visit for Collect {
    fn wants(&mut self, image: &Image) -> bool {
        image.is_read() && !image.offload_kind.is_host() && may_hold_symbols(image.image_kind)
    }

    fn image(&mut self, image: &Image, bytes: &[u8]) {
        let mut r = self.new_reader();
        r.read(bytes);
        self.keep(image, r);
    }

    fn unavailable(&mut self, image: &Image, why: &Unread) {
        self.found.insert(image.id, Err(why.clone()));
    }

    /// Images are read where the scan has their bytes: a compressed
    /// CUDA fatbin's entries on the threads that decode them.
    fn reader(&mut self, _: &Image) -> Option<Box<dyn ImageReader>> {
        Some(Box::new(self.new_reader()))
    }

    fn read(
        &mut self,
        image: &Image,
        reader: Box<dyn ImageReader>,
        end: std::result::Result<(), Unread>,
    ) {
        let reader: Box<dyn std::any::Any> = reader;
        match (end, reader.downcast::<Reader>()) {
            (Ok(()), Ok(r)) => self.keep(image, *r),
            (Err(why), _) => {
                self.found.insert(image.id, Err(why));
            }
            // Only this collector's readers come back to it.
            (Ok(()), Err(_)) => {}
        }
    }
}

impl Collect {
    /// A reader that takes from this collector's allowance.
    fn new_reader(&self) -> Reader {
        Reader {
            found: None,
            allowance: self.allowance.clone(),
        }
    }

    /// Keeps what `r` found in `image`.
    fn keep(&mut self, image: &Image, r: Reader) {
        if let Some(found) = r.found {
            self.found.insert(image.id, found);
        }
    }
}

/// [`Collect`]'s work on one image: [`read_within`] its bytes.
#[derive(Debug)]
struct Reader {
    /// The listing, or why the image's symbols cannot be read; `None` for
    /// bytes of no format read here.
    found: Option<std::result::Result<Listing, Unread>>,
    allowance: Allowance,
}

impl ImageReader for Reader {
    fn read(&mut self, bytes: &[u8]) {
        if self.allowance.exhausted() {
            // Spent by another image: nothing more is read.
            return;
        }
        self.found = read_within(bytes, &self.allowance)
            .map_err(Unread::from)
            .transpose();
    }
}
