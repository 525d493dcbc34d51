//! Which images nvprune's command line keeps, said as `prune` rules: its
//! exact rule on the files it prunes ([`exact`]), and `offload-kit prune
//! --keep`'s on the files it refuses ([`loader`]).

use crate::prune::{Ptx, Rules, Selection};
use crate::scan::rule::Rule;
use crate::targets;

/// One code nvprune keeps: a cubin for an SM (`sm_80`), or the PTX of a
/// virtual arch (`compute_80`, and `lto_80`, which keeps the same),
/// written as the SM it compiles for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Code {
    /// `sm_80`.
    pub arch: String,
    /// PTX rather than a cubin.
    pub ptx: bool,
}

/// The CUDA arch names an SM number is written as: `sm_N`, and `sm_Na`
/// and `sm_Nf` where they exist.
fn variants(sm: &targets::CudaSm) -> Vec<String> {
    let mut v = vec![format!("sm_{}", sm.number)];
    if sm.a {
        v.push(format!("sm_{}a", sm.number));
    }
    if sm.f {
        v.push(format!("sm_{}f", sm.number));
    }
    v
}

/// nvprune's rule on a relocatable file: every CUDA image goes but the
/// cubins of the SMs named and the PTX of the virtual archs named, as
/// `--drop` rules over every SM offload-kit knows (an SM with a variant
/// kept loses its other variants one by one; its plain code stays then).
pub(super) fn exact(keep: &[Code]) -> Selection {
    let mut rules = Vec::new();
    for sm in targets::CUDA_SMS {
        let names = variants(sm);
        for kind in ["cubin", "ptx"] {
            let kept = |name: &str| {
                keep.iter()
                    .any(|c| c.arch == name && (kind == "ptx") == c.ptx)
            };
            let dropped: Vec<&String> = if names.iter().any(|n| kept(n)) {
                names.iter().skip(1).filter(|n| !kept(n)).collect()
            } else {
                names.iter().take(1).collect()
            };
            rules.extend(
                dropped
                    .into_iter()
                    .filter_map(|n| Rule::parse(&format!("{n}:{kind}")).ok()),
            );
        }
    }
    Selection {
        rules: Rules::Drop(rules),
        ptx: Ptx::None,
    }
}

/// `offload-kit prune --keep`'s rule for the same command line, for the
/// files nvprune refuses. nvprune's `-arch sm_80` keeps the sm_80 cubin and
/// no PTX: the same as `--keep sm_80 --ptx none`, which keeps what sm_80
/// devices load. With PTX named too, an SM named for both keeps what its
/// devices load and the newest PTX they compile (`--keep sm_80`); for its
/// cubin alone, no PTX (`sm_80:cubin`); for its PTX alone, that PTX only
/// (`sm_80:ptx`).
pub(super) fn loader(keep: &[Code]) -> Selection {
    let mut archs: Vec<&str> = keep.iter().map(|c| c.arch.as_str()).collect();
    archs.sort_unstable();
    archs.dedup();
    let any_ptx = keep.iter().any(|c| c.ptx);
    let mut rules: Vec<Rule> = Vec::new();
    for arch in archs {
        let cubin = keep.iter().any(|c| c.arch == arch && !c.ptx);
        let ptx = keep.iter().any(|c| c.arch == arch && c.ptx);
        let text = match (cubin, ptx) {
            (true, false) if any_ptx => format!("{arch}:cubin"),
            (true, _) => arch.to_string(),
            (false, _) => format!("{arch}:ptx"),
        };
        rules.extend(Rule::parse(&text).ok());
    }
    Selection {
        rules: Rules::Keep(rules),
        ptx: if any_ptx { Ptx::Newest } else { Ptx::None },
    }
}
