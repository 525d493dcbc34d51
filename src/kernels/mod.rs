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
use std::fmt;

use serde::Serialize;

use crate::error::Result;
use crate::scan::{Content, Image, ImageReader, Visit};

mod amdgpu;
mod cubin;
mod elf;
mod host;
mod msgpack;
mod ptx;
mod rule;
#[cfg(test)]
pub(crate) mod tests;

pub use rule::{KernelRule, KernelRuleResult, check, combine};

/// What kind of image a [`Listing`] was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Format {
    /// An AMDGPU code object.
    Amdgpu,
    /// A CUDA cubin.
    Cubin,
    /// PTX text.
    Ptx,
    /// Another ELF file (an OpenMP image for a CPU).
    Elf,
}

impl Format {
    /// The name reports use: `amdgpu`, `cubin`, `ptx`, `elf`.
    pub fn name(self) -> &'static str {
        match self {
            Format::Amdgpu => "amdgpu",
            Format::Cubin => "cubin",
            Format::Ptx => "ptx",
            Format::Elf => "elf",
        }
    }
}

/// The kernels and other exported symbols of one image.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Listing {
    /// What the image is.
    pub format: Format,
    /// The target the image names for itself: an AMDGPU code object's
    /// `amdhsa.target`, a cubin's `sm_NN`, PTX's `.target`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// Its format's version: `v5` (AMDGPU code object), `8.0` (PTX ISA);
    /// for a cubin, the CUDA release that built it (`12.9`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// Its kernels, by name.
    pub kernels: Vec<Kernel>,
    /// The other symbols it defines and exports (device functions and
    /// variables), by name.
    pub symbols: Vec<Symbol>,
}

impl Listing {
    fn new(format: Format) -> Listing {
        Listing {
            format,
            target: None,
            version: None,
            kernels: Vec::new(),
            symbols: Vec::new(),
        }
    }

    /// Sorts the kernels and symbols by name (a name that appears twice
    /// is kept once: the first one read).
    fn sorted(mut self) -> Listing {
        self.kernels.sort_by(|a, b| a.name.cmp(&b.name));
        self.kernels.dedup_by(|a, b| a.name == b.name);
        self.symbols.sort_by(|a, b| a.name.cmp(&b.name));
        self.symbols.dedup_by(|a, b| a.name == b.name);
        self
    }

    /// Fills in the demangled names of the kernels and symbols
    /// ([`demangle`]).
    pub fn demangle(&mut self) {
        for k in &mut self.kernels {
            k.demangled = demangle(&k.name);
        }
        for s in &mut self.symbols {
            s.demangled = demangle(&s.name);
        }
    }

    /// The kernel named `name`.
    pub fn kernel(&self, name: &str) -> Option<&Kernel> {
        self.kernels
            .binary_search_by(|k| k.name.as_str().cmp(name))
            .ok()
            .map(|i| &self.kernels[i])
    }
}

/// One kernel: its (mangled) name and what it uses.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Kernel {
    /// Its symbol name, as the compiler mangled it.
    pub name: String,
    /// Its name demangled, once [`Listing::demangle`] asked for it (and
    /// the name is a mangled C++ name).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub demangled: Option<String>,
    /// The resources its image records for it (none for PTX and ELF).
    pub resources: Resources,
}

impl Kernel {
    fn new(name: impl Into<String>) -> Kernel {
        Kernel {
            name: name.into(),
            demangled: None,
            resources: Resources::default(),
        }
    }
}

/// What a [`Symbol`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SymbolKind {
    /// A device function that is not a kernel.
    Function,
    /// A variable (a `__device__` or declare-target global).
    Variable,
}

/// An exported symbol that is not a kernel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Symbol {
    /// Its name.
    pub name: String,
    /// Its name demangled, once [`Listing::demangle`] asked for it (and
    /// the name is a mangled C++ name).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub demangled: Option<String>,
    /// A function or a variable.
    pub kind: SymbolKind,
    /// Its size in bytes, as its symbol records it.
    pub size: u64,
}

impl Symbol {
    fn new(name: &[u8], kind: SymbolKind, size: u64) -> Symbol {
        Symbol {
            name: text(name),
            demangled: None,
            kind,
            size,
        }
    }
}

/// A constant bank a CUDA kernel uses, and how many bytes of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ConstantBank {
    /// The bank (`CONSTANT[n]` in `cuobjdump -res-usage`).
    pub bank: u32,
    /// Its size in bytes.
    pub size: u64,
}

/// The resources a kernel uses, as its image records them: the AMDGPU
/// fields carry the HSA metadata's key names, the CUDA fields
/// `cuobjdump -res-usage`'s figures. A field the image does not record is
/// `None` (and left out of JSON).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Resources {
    /// AMDGPU: scalar registers (`.sgpr_count`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sgpr_count: Option<u64>,
    /// AMDGPU: vector registers (`.vgpr_count`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vgpr_count: Option<u64>,
    /// AMDGPU: accumulation registers (`.agpr_count`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agpr_count: Option<u64>,
    /// AMDGPU: scalar registers spilled (`.sgpr_spill_count`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sgpr_spill_count: Option<u64>,
    /// AMDGPU: vector registers spilled (`.vgpr_spill_count`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub vgpr_spill_count: Option<u64>,
    /// AMDGPU: LDS bytes (`.group_segment_fixed_size`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub group_segment_fixed_size: Option<u64>,
    /// AMDGPU: scratch bytes per work-item
    /// (`.private_segment_fixed_size`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub private_segment_fixed_size: Option<u64>,
    /// AMDGPU: kernel argument bytes (`.kernarg_segment_size`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kernarg_segment_size: Option<u64>,
    /// AMDGPU: work-items per wavefront (`.wavefront_size`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub wavefront_size: Option<u64>,
    /// AMDGPU: the largest workgroup (`.max_flat_workgroup_size`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_flat_workgroup_size: Option<u64>,
    /// AMDGPU: whether the stack grows at run time
    /// (`.uses_dynamic_stack`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uses_dynamic_stack: Option<bool>,
    /// CUDA: registers per thread (`REG`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub registers: Option<u64>,
    /// CUDA: stack bytes per thread (`STACK`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stack: Option<u64>,
    /// CUDA: static shared memory bytes (`SHARED`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shared: Option<u64>,
    /// CUDA: local memory bytes per thread (`LOCAL`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub local: Option<u64>,
    /// CUDA: the constant banks used (`CONSTANT[n]`), by bank.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub constant: Vec<ConstantBank>,
    /// CUDA: textures (`TEXTURE`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub texture: Option<u64>,
    /// CUDA: surfaces (`SURFACE`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub surface: Option<u64>,
    /// CUDA: samplers (`SAMPLER`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sampler: Option<u64>,
    /// CUDA: the most threads per block the kernel was built for
    /// (`.maxntid`), when it was given one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub max_threads: Option<u64>,
}

impl Resources {
    /// Every figure recorded, by a short name, in a fixed order: what
    /// tables print and [`diff`](crate::kernels) compares. AMDGPU: `sgpr`,
    /// `vgpr`, `agpr`, `sgpr_spill`, `vgpr_spill`, `lds`, `scratch`,
    /// `kernarg`, `wavefront`, `max_workgroup`, `dynamic_stack` (0 or 1);
    /// CUDA: `reg`, `stack`, `shared`, `local`, `constant[N]`, `texture`,
    /// `surface`, `sampler`, `max_threads`.
    pub fn figures(&self) -> Vec<(String, u64)> {
        let mut out = Vec::new();
        self.each_figure(|name, v| out.push((name.to_string(), v)));
        out
    }

    /// [`Resources::figures`] one at a time, with no text made for them.
    pub(crate) fn each_figure(&self, mut f: impl FnMut(Figure, u64)) {
        let amdgpu_and_cuda = [
            ("sgpr", self.sgpr_count),
            ("vgpr", self.vgpr_count),
            ("agpr", self.agpr_count),
            ("sgpr_spill", self.sgpr_spill_count),
            ("vgpr_spill", self.vgpr_spill_count),
            ("lds", self.group_segment_fixed_size),
            ("scratch", self.private_segment_fixed_size),
            ("kernarg", self.kernarg_segment_size),
            ("wavefront", self.wavefront_size),
            ("max_workgroup", self.max_flat_workgroup_size),
            ("dynamic_stack", self.uses_dynamic_stack.map(u64::from)),
            ("reg", self.registers),
            ("stack", self.stack),
            ("shared", self.shared),
            ("local", self.local),
        ];
        let after_constants = [
            ("texture", self.texture),
            ("surface", self.surface),
            ("sampler", self.sampler),
            ("max_threads", self.max_threads),
        ];
        fn present(list: &[(&'static str, Option<u64>)], f: &mut impl FnMut(Figure, u64)) {
            for &(name, v) in list {
                if let Some(v) = v {
                    f(Figure::Named(name), v);
                }
            }
        }
        present(&amdgpu_and_cuda, &mut f);
        for c in &self.constant {
            f(Figure::Constant(c.bank), c.size);
        }
        present(&after_constants, &mut f);
    }
}

/// The name of one of [`Resources::figures`].
#[derive(Debug, Clone, Copy)]
pub(crate) enum Figure {
    /// A figure of its own: `sgpr`, `reg`, …
    Named(&'static str),
    /// CUDA's constant bank N: `constant[N]`.
    Constant(u32),
}

impl fmt::Display for Figure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Figure::Named(n) => f.write_str(n),
            Figure::Constant(b) => write!(f, "constant[{b}]"),
        }
    }
}

/// A symbol name as text (names are bytes; a name that is not UTF-8 is
/// shown with replacement characters).
fn text(name: &[u8]) -> String {
    String::from_utf8_lossy(name).into_owned()
}

/// The default limit of an [`Allowance`]: the kernels and symbols one
/// command may list. A kernel takes about 400 bytes with its figures, so
/// the listings stay under about 100 MiB; the largest library seen
/// (libcusparse) lists about 70,000 kernels.
pub const DEFAULT_MAX_LISTED: u64 = 250_000;

/// How many kernels and symbols listings may hold in all: one allowance
/// for a whole command, shared by every [`Collect`] and [`read_within`]
/// of it, on every thread. Each kernel and symbol read is taken from it
/// before it is kept; past the limit the reading stops with an
/// [`ErrorKind::CountExceeded`](crate::ErrorKind::CountExceeded) error,
/// so that no image, whatever counts its tables declare, makes listings
/// larger than the limit. Clones share one count.
///
/// ```
/// use offload_kit::kernels::{self, Allowance};
///
/// let ptx = b".version 8.0\n.target sm_80\n.entry a\n{\n}\n.entry b\n{\n}\n";
/// let allowance = Allowance::new(1);
/// assert!(kernels::read_within(ptx, &allowance).is_err());
/// assert!(allowance.exhausted());
/// assert_eq!(kernels::read_within(ptx, &Allowance::new(2))?.unwrap().kernels.len(), 2);
/// # Ok::<(), offload_kit::Error>(())
/// ```
#[derive(Debug, Clone)]
pub struct Allowance(std::sync::Arc<Spending>);

/// An [`Allowance`]'s count, shared by its clones.
#[derive(Debug)]
struct Spending {
    limit: u64,
    spent: std::sync::atomic::AtomicU64,
}

impl Allowance {
    /// An allowance of `limit` kernels and symbols.
    pub fn new(limit: u64) -> Allowance {
        Allowance(std::sync::Arc::new(Spending {
            limit,
            spent: std::sync::atomic::AtomicU64::new(0),
        }))
    }

    /// The limit it started from.
    pub fn limit(&self) -> u64 {
        self.0.limit
    }

    /// Whether some reading went past the limit (and was stopped).
    pub fn exhausted(&self) -> bool {
        self.0.spent.load(std::sync::atomic::Ordering::Relaxed) > self.0.limit
    }

    /// Takes `n` entries; an error once the limit is passed.
    fn spend(&self, n: u64) -> Result<()> {
        let before = self
            .0
            .spent
            .fetch_add(n, std::sync::atomic::Ordering::Relaxed);
        if before.saturating_add(n) > self.0.limit {
            return Err(crate::error::ErrorKind::CountExceeded {
                what: "kernels and symbols listed (--max-kernels)".into(),
                limit: self.0.limit,
            }
            .into());
        }
        Ok(())
    }
}

impl Default for Allowance {
    /// An allowance of [`DEFAULT_MAX_LISTED`].
    fn default() -> Allowance {
        Allowance::new(DEFAULT_MAX_LISTED)
    }
}

/// The kernels and symbols of an image's bytes: `Ok(None)` for bytes of
/// no format read here (bitcode, SPIR-V, a container, anything else),
/// an error for an image of a known format that is damaged, or that
/// lists more than [`DEFAULT_MAX_LISTED`] kernels and symbols.
pub fn read(bytes: &[u8]) -> Result<Option<Listing>> {
    read_within(bytes, &Allowance::default())
}

/// [`read`], taking the kernels and symbols read from `allowance`.
pub fn read_within(bytes: &[u8], allowance: &Allowance) -> Result<Option<Listing>> {
    if let Some(peek) = crate::container::elf::peek(bytes) {
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

/// What [`Collect`] found in one image.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ImageKernels {
    /// The image's id in the scan's [`Report`](crate::scan::Report).
    pub image: usize,
    /// What was read, or why it could not be (the image is damaged).
    #[serde(flatten, serialize_with = "listing_or_error")]
    pub listing: std::result::Result<Listing, String>,
}

fn listing_or_error<S: serde::Serializer>(
    l: &std::result::Result<Listing, String>,
    s: S,
) -> std::result::Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    match l {
        Ok(l) => l.serialize(s),
        Err(e) => {
            let mut m = s.serialize_map(Some(1))?;
            m.serialize_entry("error", e)?;
            m.end()
        }
    }
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
    found: BTreeMap<usize, std::result::Result<Listing, String>>,
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

    fn unavailable(&mut self, image: &Image, why: &str) {
        self.found.insert(image.id, Err(why.to_string()));
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
        end: std::result::Result<(), String>,
    ) {
        let reader: Box<dyn std::any::Any> = reader;
        match (end, reader.downcast::<Reader>()) {
            (Ok(()), Ok(r)) => self.keep(image, *r),
            (Err(why), _) => self.unavailable(image, &why),
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
    found: Option<std::result::Result<Listing, String>>,
    allowance: Allowance,
}

impl ImageReader for Reader {
    fn read(&mut self, bytes: &[u8]) {
        if self.allowance.exhausted() {
            // Spent by another image: nothing more is read.
            return;
        }
        self.found = read_within(bytes, &self.allowance)
            .map_err(|e| e.to_string())
            .transpose();
    }
}

/// The demangled form of an Itanium-mangled C++ name (`_Z…`, as CUDA and
/// HIP kernels are named), or `None` for a name that is not one. Bounded:
/// names nested past the demangler's recursion limits are left as they
/// are.
pub fn demangle(name: &str) -> Option<String> {
    if !name.starts_with("_Z") {
        return None;
    }
    let parse = cpp_demangle::ParseOptions::default().recursion_limit(256);
    let sym = cpp_demangle::Symbol::new_with_options(name, &parse).ok()?;
    let show = cpp_demangle::DemangleOptions::new().recursion_limit(256);
    sym.demangle_with_options(&show).ok()
}
