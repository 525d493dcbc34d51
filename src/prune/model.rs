//! The words pruning is asked in: the [`Selection`] of what stays (its
//! [`Rules`] and [`Ptx`]), the [`Verdict`] on each image, and the
//! [`Options`] a file is pruned with. Every other part of `prune` reads
//! them; they read none of it.

use super::companion;
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
    /// some are emptied either way ([`FilePruning::emptied`](super::FilePruning::emptied)).
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
    /// Keep a relocatable ELF object's string tables as they were read,
    /// every name where it was (what NVIDIA's `nvprune` writes), rather
    /// than build them anew as llvm-objcopy does. The two agree on what
    /// LLVM wrote; they differ on objects of other compilers (GCC's).
    pub keep_string_tables: bool,
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

pub(crate) fn is_ptx(img: &Image) -> bool {
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
