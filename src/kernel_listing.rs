//! What a device image's kernels and symbols are, as `kernels` reads them:
//! the [`Listing`] of one image with its [`Kernel`]s, [`Symbol`]s and
//! their [`Resources`], and [`ImageKernels`], a listing by the id of the
//! scanned image it was read from. `kernels` re-exports them (their public
//! paths are there); they live apart, below `scan`, because the scanner's
//! JSON document carries them, while `kernels` collects them from a scan.

use std::fmt;

use serde::Serialize;

use crate::error::unread::Unread;

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
    pub(crate) fn new(format: Format) -> Listing {
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
    pub(crate) fn sorted(mut self) -> Listing {
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
    pub(crate) fn new(name: impl Into<String>) -> Kernel {
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
    pub(crate) fn new(name: &[u8], kind: SymbolKind, size: u64) -> Symbol {
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
    /// tables print and [`diff`](crate::diff) compares. AMDGPU: `sgpr`,
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
pub(crate) fn text(name: &[u8]) -> String {
    String::from_utf8_lossy(name).into_owned()
}

/// What [`Collect`](crate::kernels::Collect) found in one image.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ImageKernels {
    /// The image's id in the scan's [`Report`](crate::scan::Report).
    pub image: usize,
    /// What was read, or why it could not be (the image is damaged).
    #[serde(flatten, serialize_with = "listing_or_error")]
    pub listing: std::result::Result<Listing, Unread>,
}

fn listing_or_error<S: serde::Serializer>(
    l: &std::result::Result<Listing, Unread>,
    s: S,
) -> std::result::Result<S::Ok, S::Error> {
    use serde::ser::SerializeMap;
    match l {
        Ok(l) => l.serialize(s),
        Err(e) => {
            let mut m = s.serialize_map(Some(1))?;
            m.serialize_entry("error", e.as_str())?;
            m.end()
        }
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
