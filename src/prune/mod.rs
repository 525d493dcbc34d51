//! Pruning: keeping only the device images the GPUs a user ships to would
//! load, container by container (`offload-kit prune`, issue #28).
//!
//! Two halves, apart so that each can be checked on its own:
//! - [`Selection`] decides, image by image of a scan [`Report`], what
//!   stays: with `--keep` rules an image stays when a device the rules name
//!   would load it ([`Rule::loaded_by_some`]: `gfx90a` keeps gfx90a,
//!   `gfx90a:xnack+` and `gfx90a:xnack-` images and generic images that
//!   cover gfx90a; `sm_90` keeps sm_90 and sm_90a cubins and the older
//!   cubins of the 9.x line an sm_90 device runs), and PTX as [`Ptx`]
//!   says; with `--drop` rules an image goes when it is built for a target
//!   a rule names ([`Rule::built_for`]). Bundles' host entries always stay.
//! - `containers` rewrites one container with only the entries that stay:
//!   a CUDA fatbin (entries kept as stored, compressed or not), a binary
//!   clang offload bundle (laid out as LLVM's bundler lays out the same
//!   entries), a compressed one (rebuilt around its pruned bundle); an
//!   OffloadBinary, holding one image, stays or goes whole. Each result is a
//!   [`Layout`](crate::layout::Layout) whose payloads are byte ranges of
//!   the input: the kept entries are copied, never decoded.
//! - [`plan`] finds the containers of a file that lose entries and
//!   rewrites each; [`Output`] describes the file then written, by its
//!   kind: a linked program or library rewritten where each container lies
//!   (nothing moves), a relocatable object whose sections shrink
//!   (`object`), a static archive of them ([`prune_archive`]), or a bare
//!   container file with the freed bytes cut out.
//! - With the `files` feature, [`prune_path`] does all of it to a file on
//!   disk, as `offload-kit prune` does: reads it, prunes it by its kind
//!   (static and thin archives, wheels, Debian packages, the rest as
//!   [`prune_file`]),
//!   writes the result atomically where [`PathOptions`] says (a dry run,
//!   a file, a directory, in place, keeping hard links or not) and
//!   returns a [`PathReport`], or a [`PathError`] naming the file and
//!   what failed; [`prune_tree`] does it to every file under
//!   directories, in place or in a dry run.
//!
//! # Examples
//!
//! Keep only what a gfx90a loads of a HIP bundle built for two GPUs
//! ([`prune_file`] scans, decides and describes the pruned file; a bare
//! container loses the freed bytes, a linked program keeps its layout):
//!
//! ```
//! use offload_kit::bundle::{self, Format};
//! use offload_kit::prune::{self, Options, Ptx, Rules, Selection};
//! use offload_kit::scan::Rule;
//!
//! let (host, gfx90a, gfx942) = (b"host".to_vec(), vec![1u8; 64], vec![2u8; 64]);
//! let entries = [
//!     ("host-x86_64-unknown-linux-gnu-".to_string(), host.len() as u64),
//!     ("hip-amdgcn-amd-amdhsa--gfx90a".to_string(), gfx90a.len() as u64),
//!     ("hip-amdgcn-amd-amdhsa--gfx942".to_string(), gfx942.len() as u64),
//! ];
//! let mut file = Vec::new();
//! bundle::layout(Format::Binary, &entries, 8)?.write_to(&mut file, &[&host, &gfx90a, &gfx942])?;
//!
//! let keep = Selection { rules: Rules::Keep(vec![Rule::parse("gfx90a")?]), ptx: Ptx::Newest };
//! let pruning = prune::prune_file(&file, &keep, &Options::default())?;
//! let pruned = pruning.output.ok_or("nothing to prune")?.to_vec(&file)?;
//! assert_eq!(pruned.len() as u64, file.len() as u64 - pruning.freed);
//!
//! let left = bundle::entries(&pruned, Format::Binary)?;
//! let ids: Vec<&[u8]> = left.iter().map(|e| e.id).collect();
//! assert_eq!(ids.len(), 2);
//! assert!(!ids.contains(&&b"hip-amdgcn-amd-amdhsa--gfx942"[..]));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub(crate) mod archive;
pub(crate) mod companion;
#[cfg(feature = "files")]
mod conda;
pub(crate) mod containers;
#[cfg(feature = "files")]
pub(crate) mod deb;
mod file;
pub(crate) mod object;
pub(crate) mod output;
#[cfg(feature = "files")]
mod packed;
#[cfg(feature = "files")]
mod path;
pub(crate) mod plan;
pub(crate) mod shrink;
#[cfg(feature = "files")]
mod tree;
#[cfg(feature = "files")]
pub(crate) mod wheel;

pub use archive::prune as prune_archive;
pub use containers::Pruned;
pub(crate) use file::package_not_pruned;
pub use file::{FilePruning, prune_file};
pub use output::Output;
#[cfg(feature = "files")]
pub use path::{
    CondaRecords, Destination, ImageGroup, PathError, PathErrorKind, PathOptions, PathReport,
    RemovedFile, prune_path,
};
pub use plan::{Edit, Host, Plan, plan};
pub use shrink::{Segment, Shrunk};
#[cfg(feature = "files")]
pub use tree::{Skip, TreeEntry, TreeOutcome, prune_tree};

use crate::offload_binary::ImageKind;
use crate::scan::rule::{Meets, Rule};
use crate::scan::{Content, Image, Report};
use crate::targets;

/// How a file is pruned, besides the selection.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Options {
    /// The file may lose every device image it holds. Without it such a
    /// file is refused; containers that lose all theirs while others keep
    /// some are emptied either way ([`FilePruning::emptied`]).
    pub allow_empty: bool,
    /// Threads that compress a rebuilt CCOB (0: as many as the machine
    /// has).
    pub threads: u32,
    /// Rewrite a linked program or library only where each container lies
    /// (the file keeps its layout and size), rather than shrink it.
    pub no_shrink: bool,
    /// Bytes the scan of a file may decompress, in all
    /// ([`scan::Options::max_uncompressed`](crate::scan::Options::max_uncompressed));
    /// `None`: as the scanners derive it from the file's size
    /// ([`default_max_uncompressed`](crate::scan::default_max_uncompressed)).
    pub max_uncompressed: Option<u64>,
    /// Remove a Windows PE image's Authenticode signature (its certificate
    /// table), which any change breaks; without it a signed PE image is
    /// refused.
    pub strip_signature: bool,
}

impl Options {
    /// The threads to compress with.
    pub fn threads(&self) -> u32 {
        match self.threads {
            0 => std::thread::available_parallelism()
                .map_or(1, |n| u32::try_from(n.get()).unwrap_or(u32::MAX)),
            n => n,
        }
    }
}

/// Which PTX a `--keep` selection keeps, per container and per rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Ptx {
    /// The newest PTX a device the rule names can compile (what the
    /// driver JIT-compiles when no cubin runs, and what runs on GPUs newer
    /// than any cubin).
    #[default]
    Newest,
    /// Every PTX a device the rule names can compile.
    All,
    /// None.
    None,
}

/// The rules of a selection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rules {
    /// Keep what devices of these targets load; drop the rest.
    Keep(Vec<Rule>),
    /// Drop what is built for these targets; keep the rest.
    Drop(Vec<Rule>),
}

/// What stays of a report's images.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    /// The rules.
    pub rules: Rules,
    /// PTX, for [`Rules::Keep`].
    pub ptx: Ptx,
}

/// What happens to one image.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// It stays: a rule selects it.
    Keep,
    /// It goes.
    Drop,
    /// It stays whatever the rules say: a bundle's host entry, an empty
    /// placeholder, or an image whose kind the scan could not tell (a rule
    /// naming a kind cannot say it is not needed).
    Always,
}

impl Verdict {
    /// Whether the image stays.
    pub fn stays(self) -> bool {
        self != Verdict::Drop
    }
}

fn is_ptx(img: &Image) -> bool {
    img.image_kind == Some(Content::Image(ImageKind::IMG_PTX))
}

/// The SM number of a CUDA image's arch (`sm_90a` → 90), for ordering PTX.
fn sm_number(img: &Image) -> u32 {
    targets::parse_sm(&img.arch).map_or(0, |(n, _)| n)
}

impl Selection {
    /// The rules, as [`companion`] judges a library's per-GPU file by.
    pub(crate) fn by(&self) -> companion::By<'_> {
        match &self.rules {
            Rules::Keep(r) => companion::By::Keep(r),
            Rules::Drop(r) => companion::By::Drop(r),
        }
    }

    /// The verdict on each image of `report`, by image id.
    pub fn decide(&self, report: &Report) -> Vec<Verdict> {
        let mut out: Vec<Verdict> = report
            .images
            .iter()
            .map(|img| {
                if img.offload_kind.is_host() || (img.size == 0 && img.arch.is_empty()) {
                    Verdict::Always
                } else {
                    Verdict::Drop
                }
            })
            .collect();
        match &self.rules {
            Rules::Drop(rules) => {
                for img in &report.images {
                    if out[img.id] == Verdict::Always {
                        continue;
                    }
                    let m = rules
                        .iter()
                        .map(|r| r.built_for(img, false))
                        .find(|m| *m != Meets::No)
                        .unwrap_or(Meets::No);
                    out[img.id] = match m {
                        Meets::No => Verdict::Keep,
                        Meets::Undetermined => Verdict::Always,
                        Meets::Yes | Meets::ByPtxJit => Verdict::Drop,
                    };
                }
            }
            Rules::Keep(rules) => self.decide_keep(report, rules, &mut out),
        }
        out
    }

    /// Why `img` stays when [`Selection::decide`] keeps it, in words for a
    /// report: with [`Rules::Keep`], the first rule a device of which loads
    /// it, and how ([`Rule::loading`]:
    /// `sm_90: sm_90 devices load sm_90a code (arch-specific: sm_90
    /// devices only)`); `None` with [`Rules::Drop`], or when no rule's
    /// device loads it.
    pub fn why(&self, img: &Image) -> Option<String> {
        let Rules::Keep(rules) = &self.rules else {
            return None;
        };
        rules
            .iter()
            .find_map(|r| Some(format!("{r}: {}", r.loading(img)?)))
    }

    fn decide_keep(&self, report: &Report, rules: &[Rule], out: &mut [Verdict]) {
        for img in &report.images {
            if out[img.id] == Verdict::Always || is_ptx(img) {
                continue;
            }
            let m = rules
                .iter()
                .map(|r| r.loaded_by_some(img, false))
                .find(|m| *m != Meets::No)
                .unwrap_or(Meets::No);
            out[img.id] = match m {
                Meets::Yes | Meets::ByPtxJit => Verdict::Keep,
                Meets::Undetermined => Verdict::Always,
                Meets::No => Verdict::Drop,
            };
        }
        if self.ptx == Ptx::None {
            return;
        }
        // PTX, container by container: for each rule, the PTX images a
        // device it names can compile; all of them, or the newest.
        for c in &report.containers {
            let ptx: Vec<&Image> = report
                .images
                .iter()
                .filter(|i| i.container == c.id && is_ptx(i) && out[i.id] != Verdict::Always)
                .collect();
            for rule in rules {
                let usable: Vec<&Image> = ptx
                    .iter()
                    .copied()
                    .filter(|i| rule.loaded_by_some(i, false).yes())
                    .collect();
                let chosen: Vec<&Image> = match self.ptx {
                    Ptx::All => usable,
                    Ptx::Newest => usable
                        .into_iter()
                        .max_by_key(|i| sm_number(i))
                        .into_iter()
                        .collect(),
                    Ptx::None => Vec::new(),
                };
                for i in chosen {
                    out[i.id] = Verdict::Keep;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests;
