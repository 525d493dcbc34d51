//! Per-GPU companion files by library convention: files that a library
//! installs once per GPU, named after that GPU, and loads only on it
//! (rocBLAS's `TensileLibrary_gfx906.co`, MIOpen's `gfx90a68.kdb`,
//! TensorRT's `libnvinfer_builder_resource_sm86.so.10`). Their name says
//! which GPU they serve, whatever their bytes hold (code objects, but also
//! msgpack indexes and SQLite databases that no scan can tie to a GPU).
//!
//! [`TABLE`] holds the conventions, one row each: the library, the names,
//! what such a file holds, and where that is documented. [`companion`]
//! tells whether a path inside a tree or package (relative,
//! `/`-separated) is such a file, and of which GPU ([`Gpu`]); [`below`]
//! gives that path for a file found in a directory. Nothing here reads a
//! file. Whether rules keep a GPU's files is [`judge`]'s, for `prune`
//! (which files go) and for `check`'s gate ([`gate`]: every required GPU
//! still has its files, in each library that has some GPU's).
//!
//! A name is matched only when it names a GPU the crate knows
//! ([`targets::amdgpu`], [`targets::is_known_arch`]): an unknown name, and
//! an arch-neutral one (`TensileLibrary.dat`, a `_fallback` index with no
//! GPU in its name, TensorRT's `_ptx` resource), never matches.

use std::path::Path;

use crate::targets;

pub(crate) mod gate;
pub(crate) mod judge;

/// The GPU a companion file serves, as its name spells it, normalized.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Gpu {
    /// An AMDGPU target ID as LLVM spells it: the processor, then its
    /// features with `:` (`gfx90a`, `gfx90a:xnack+`; Tensile writes
    /// `gfx90a-xnack+`).
    Amd(String),
    /// A family of AMDGPU processors, by the start of their names
    /// (`gfx11` for AOTriton's `gfx11xx`, `gfx110` for `gfx110x`): every
    /// known processor whose name starts with it belongs to it.
    AmdFamily(String),
    /// A CUDA compute capability, `sm_86`.
    Cuda(String),
}

impl std::fmt::Display for Gpu {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Gpu::Amd(s) | Gpu::Cuda(s) => f.write_str(s),
            Gpu::AmdFamily(s) => write!(f, "{s}* (family)"),
        }
    }
}

/// One library's convention for per-GPU files: a row of [`TABLE`].
#[derive(Debug)]
pub(crate) struct Convention {
    /// The library (or libraries) that install such files.
    pub(crate) library: &'static str,
    /// The names, as a pattern for people (`<arch>`: a GPU).
    pub(crate) pattern: &'static str,
    /// What such a file holds.
    pub(crate) holds: &'static str,
    /// Where the convention is documented or was seen (docs/prune.md
    /// gives it; a test holds the two together).
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) source: &'static str,
    /// The matcher: the path's components to the GPU, and how many of the
    /// leading components make a per-GPU directory (0 for a file named
    /// after its GPU).
    matcher: fn(&[&str]) -> Option<(Gpu, usize)>,
}

/// A path that is a per-GPU companion file ([`companion`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Companion {
    /// The convention it follows.
    pub(crate) convention: &'static Convention,
    /// The GPU it serves.
    pub(crate) gpu: Gpu,
    /// For a file of a per-GPU directory (`library/gfx942/…`), how many
    /// leading components of the path make that directory; 0 for a file
    /// named after its GPU.
    pub(crate) directory: usize,
}

impl PartialEq for Convention {
    fn eq(&self, other: &Convention) -> bool {
        self.pattern == other.pattern
    }
}

impl Eq for Convention {}

/// The conventions known, one row each.
pub(crate) const TABLE: &[Convention] = &[
    Convention {
        library: "rocBLAS/hipBLASLt/hipSPARSELt (Tensile)",
        pattern: "library/*_<arch>[-xnack±].co, library/*-<arch>[-xnack±].hsaco",
        holds: "the GPU's kernels: raw AMDGPU code objects",
        source: "Debian trixie librocblas0 5.5.1 (rocblas/2.47.0/library/); \
                 ROCm/hipBLASLt library layout",
        matcher: tensile_code,
    },
    Convention {
        library: "rocBLAS/hipBLASLt/hipSPARSELt (Tensile)",
        pattern: "library/*_<arch>[-xnack±].dat[.zlib], \
                  library/TensileLiteLibrary_lazy_<arch>_Mapping.dat",
        holds: "the index of the GPU's kernels (Tensile's lazy-loading catalogue)",
        source: "ROCm/Tensile lazy library loading; ROCm/hipBLASLt library layout",
        matcher: tensile_index,
    },
    Convention {
        library: "hipBLASLt/hipSPARSELt (TensileLite)",
        pattern: "library/<arch>[-xnack±]/…",
        holds: "one directory per GPU: its code objects and indexes",
        source: "ROCm/hipBLASLt per-architecture library directories",
        matcher: tensile_directory,
    },
    Convention {
        library: "MIOpen",
        pattern: "…miopen…/db/<arch><CUs>.{kdb,db,db.txt,fdb.txt,HIP.fdb.txt,OpenCL.fdb.txt}",
        holds: "the GPU's kernel cache and tuning databases (CU count glued on: `_36` \
                in decimal up to 64, hex above, as in gfx90a68)",
        source: "ROCm/MIOpen share/miopen/db",
        matcher: miopen_db,
    },
    Convention {
        library: "MIOpen",
        pattern: "…miopen…/db/<arch>[_*].tn.model, <arch>_*.ktn.model",
        holds: "the GPU's tuning models",
        source: "ROCm/MIOpen share/miopen/db",
        matcher: miopen_model,
    },
    Convention {
        library: "MIOpen",
        pattern: "libMIOpenCK*_<arch>.so[.N…], MIOpenCK*_<arch>.dll",
        holds: "composable_kernel solvers built for the GPU alone",
        source: "ROCm/MIOpen per-GPU CK libraries",
        matcher: miopen_ck,
    },
    Convention {
        library: "composable_kernel",
        pattern: "libdevice_*_<arch>[_…].a",
        holds: "device instances built for the GPU alone",
        source: "ROCm/composable_kernel per-GPU instance archives",
        matcher: ck_archive,
    },
    Convention {
        library: "AOTriton (PyTorch ROCm)",
        pattern: "aotriton.images/amd-<arch or family>/…",
        holds: "one directory per GPU or family: its compiled kernels (.aks2)",
        source: "ROCm/aotriton image trees as PyTorch ships them",
        matcher: aotriton,
    },
    Convention {
        library: "TensorRT (10.16 and later)",
        pattern: "libnvinfer_builder_resource_sm<NN>.so[.N…]",
        holds: "the builder's kernels for one SM (the `_ptx` resource, for any, stays)",
        source: "NVIDIA TensorRT 10.16 packages",
        matcher: tensorrt,
    },
];

/// The per-GPU companion file `path` is, if it is one: `path` relative
/// to a tree or package, its components split by `/` (a leading `./` or
/// `/` and empty components are ignored; a trailing `/` names a
/// directory, which matches only as a per-GPU directory).
pub(crate) fn companion(path: &str) -> Option<Companion> {
    let parts: Vec<&str> = path
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    if parts.is_empty() || parts.contains(&"..") {
        return None;
    }
    let dir = path.ends_with('/');
    TABLE.iter().find_map(|c| {
        let (gpu, directory) = (c.matcher)(&parts)?;
        (directory > 0 || !dir).then_some(Companion {
            convention: c,
            gpu,
            directory,
        })
    })
}

/// `path` below the directory `root`, `root`'s own name first,
/// `/`-separated: the path a companion name is read from for a file
/// found walking `root` (so `…/rocblas/library` named still reads
/// `library/…`). `None` when it is not below `root` or not UTF-8.
pub(crate) fn below(root: &Path, path: &Path) -> Option<String> {
    let rest = path.strip_prefix(root).ok()?;
    let mut out = match root.file_name() {
        Some(n) => n.to_str()?.to_string(),
        None => String::new(),
    };
    for c in rest.components() {
        out.push('/');
        out.push_str(c.as_os_str().to_str()?);
    }
    Some(out)
}

/// The AMDGPU target ID that `s` spells wholly: a known processor, then
/// `xnack±`/`sramecc±` features each after a `-` or `:` (`gfx90a-xnack+`,
/// `gfx90a:xnack-`), each one the processor has, none twice.
fn amd_key(s: &str) -> Option<Gpu> {
    let end = s.find(['-', ':']).unwrap_or(s.len());
    let (processor, mut rest) = s.split_at(end);
    let gpu = targets::amdgpu(processor).filter(|g| g.canonical.starts_with("gfx"))?;
    let mut id = gpu.canonical.to_string();
    let mut seen: Vec<&str> = Vec::new();
    while !rest.is_empty() {
        let after = rest.strip_prefix(['-', ':'])?;
        let (name, sign) = ["xnack", "sramecc"].iter().find_map(|f| {
            let sign = after.strip_prefix(f)?.chars().next()?;
            matches!(sign, '+' | '-').then_some((*f, sign))
        })?;
        if !gpu.features().contains(&name) || seen.contains(&name) {
            return None;
        }
        seen.push(name);
        id.push(':');
        id.push_str(name);
        id.push(sign);
        rest = &after[name.len() + 1..];
    }
    Some(Gpu::Amd(id))
}

/// A processor alone, as [`amd_key`] reads it (no features).
fn amd(s: &str) -> Option<Gpu> {
    amd_key(s).filter(|_| !s.contains(['-', ':']))
}

/// The GPU that ends `stem` after a `_` or `-` (`TensileLibrary_gfx906`,
/// `Kernels.so-000-gfx90a-xnack+`): the last `gfx` so placed from which
/// the rest spells a target ID wholly.
fn trailing_amd(stem: &str) -> Option<Gpu> {
    stem.match_indices("gfx")
        .filter(|(i, _)| *i > 0 && matches!(stem.as_bytes()[i - 1], b'_' | b'-'))
        .filter_map(|(i, _)| amd_key(&stem[i..]))
        .last()
}

/// The file name and the directory holding it.
fn name_and_parent<'a>(parts: &[&'a str]) -> Option<(&'a str, &'a str)> {
    match parts {
        [.., parent, name] => Some((name, parent)),
        _ => None,
    }
}

fn tensile_code(parts: &[&str]) -> Option<(Gpu, usize)> {
    let (name, parent) = name_and_parent(parts)?;
    if parent != "library" {
        return None;
    }
    let stem = name
        .strip_suffix(".co")
        .or_else(|| name.strip_suffix(".hsaco"))?;
    Some((trailing_amd(stem)?, 0))
}

fn tensile_index(parts: &[&str]) -> Option<(Gpu, usize)> {
    let (name, parent) = name_and_parent(parts)?;
    if parent != "library" {
        return None;
    }
    let stem = name
        .strip_suffix(".dat.zlib")
        .or_else(|| name.strip_suffix(".dat"))?;
    let stem = stem.strip_suffix("_Mapping").unwrap_or(stem);
    Some((trailing_amd(stem)?, 0))
}

fn tensile_directory(parts: &[&str]) -> Option<(Gpu, usize)> {
    // `library/<arch>` and something below it, or the directory itself.
    (0..parts.len().saturating_sub(1)).find_map(|i| {
        if parts[i] != "library" {
            return None;
        }
        Some((amd_key(parts[i + 1])?, i + 2))
    })
}

/// Whether some component before the last two names MIOpen.
fn under_miopen(parts: &[&str]) -> bool {
    parts.len() >= 3
        && parts[parts.len() - 2] == "db"
        && parts[..parts.len() - 2]
            .iter()
            .any(|p| p.to_ascii_lowercase().contains("miopen"))
}

fn miopen_db(parts: &[&str]) -> Option<(Gpu, usize)> {
    if !under_miopen(parts) {
        return None;
    }
    let (name, _) = name_and_parent(parts)?;
    let (stem, ext) = name.split_once('.')?;
    const DATABASES: [&str; 6] = [
        "kdb",
        "db",
        "db.txt",
        "fdb.txt",
        "HIP.fdb.txt",
        "OpenCL.fdb.txt",
    ];
    if !DATABASES.contains(&ext) {
        return None;
    }
    Some((with_cus(stem)?, 0))
}

/// The GPU of a MIOpen database name: a processor, then its CU count,
/// `_` and decimal digits (up to 64 CUs) or hex digits glued on
/// (`gfx90878`: gfx908 with 0x78 CUs), or nothing. The longest known
/// processor that leaves such a count is taken.
fn with_cus(stem: &str) -> Option<Gpu> {
    let cus = |rest: &str| {
        rest.is_empty()
            || rest.strip_prefix('_').is_some_and(|d| {
                (1..=3).contains(&d.len()) && d.bytes().all(|b| b.is_ascii_digit())
            })
            || ((2..=3).contains(&rest.len()) && rest.bytes().all(|b| b.is_ascii_hexdigit()))
    };
    (4..=stem.len())
        .rev()
        .filter(|&n| stem.is_char_boundary(n))
        .find_map(|n| {
            let (p, rest) = stem.split_at(n);
            (cus(rest) && targets::amdgpu(p).is_some())
                .then(|| amd(p))
                .flatten()
        })
}

fn miopen_model(parts: &[&str]) -> Option<(Gpu, usize)> {
    if !under_miopen(parts) {
        return None;
    }
    let (name, _) = name_and_parent(parts)?;
    // `<arch>.tn.model`, `<arch>_metadata.tn.model`, `<arch>_3d.tn.model`;
    // `<arch>_<solver>_{encoder,decoder,metadata}.ktn.model`.
    let (stem, whole_allowed) = match name.strip_suffix(".ktn.model") {
        Some(stem) => (stem, false),
        None => (name.strip_suffix(".tn.model")?, true),
    };
    let arch = match stem.split_once('_') {
        Some((arch, rest)) if !rest.is_empty() => arch,
        Some(_) => return None,
        None if whole_allowed => stem,
        None => return None,
    };
    Some((amd(arch)?, 0))
}

/// A shared library's name without its `.so` and version suffixes.
fn so_stem(name: &str) -> Option<&str> {
    let (stem, version) = name.split_once(".so")?;
    let ok = version.is_empty()
        || version.strip_prefix('.').is_some_and(|v| {
            v.split('.')
                .all(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
        });
    ok.then_some(stem)
}

fn miopen_ck(parts: &[&str]) -> Option<(Gpu, usize)> {
    let name = parts.last()?;
    // `libMIOpenCK*_<arch>.so[.N…]` on Linux, `MIOpenCK*_<arch>.dll` on
    // Windows.
    let stem = match name.strip_suffix(".dll") {
        Some(stem) => stem,
        None => so_stem(name)?.strip_prefix("lib")?,
    };
    if !stem.starts_with("MIOpenCK") {
        return None;
    }
    let (_, arch) = stem.rsplit_once('_')?;
    Some((amd(arch)?, 0))
}

fn ck_archive(parts: &[&str]) -> Option<(Gpu, usize)> {
    let stem = parts.last()?.strip_suffix(".a")?;
    let rest = stem.strip_prefix("libdevice_")?;
    // The first `_`-separated word that is a GPU, after the first.
    let gpu = rest.split('_').skip(1).find_map(amd)?;
    Some((gpu, 0))
}

fn aotriton(parts: &[&str]) -> Option<(Gpu, usize)> {
    (0..parts.len().saturating_sub(1)).find_map(|i| {
        if parts[i] != "aotriton.images" {
            return None;
        }
        let key = parts[i + 1].strip_prefix("amd-")?;
        Some((amd_key(key).or_else(|| family(key))?, i + 2))
    })
}

/// An AMDGPU family as AOTriton names one: `gfx` and digits, then `x`s
/// standing for any digit (`gfx11xx`, `gfx110x`, `gfx120X`), or digits
/// alone that no processor is named but some start with (`gfx11`).
fn family(key: &str) -> Option<Gpu> {
    let stem = key.trim_end_matches(['x', 'X']);
    let digits = stem.strip_prefix("gfx")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if stem == key && targets::amdgpu(stem).is_some() {
        return None;
    }
    let some = targets::AMDGCN
        .iter()
        .any(|g| g.canonical.starts_with(stem) && g.canonical.len() > stem.len());
    some.then(|| Gpu::AmdFamily(stem.to_string()))
}

fn tensorrt(parts: &[&str]) -> Option<(Gpu, usize)> {
    let stem = so_stem(parts.last()?)?;
    let sm = stem.strip_prefix("libnvinfer_builder_resource_")?;
    let digits = sm.strip_prefix("sm")?;
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let name = format!("sm_{digits}");
    targets::is_known_arch(&name).then_some((Gpu::Cuda(name), 0))
}

#[cfg(test)]
mod tests;
