//! From the device binaries of a link to what LLVM 22's
//! `clang-linker-wrapper` does with them: which device links run
//! ([`super::select`]), which offload kinds each link's output is recorded
//! under, and in which order the kinds are bundled and wrapped — one
//! wrapper object per kind, placed on the host link in that order.
//!
//! A linked image is recorded once for each offload kind among its
//! inputs, in the kinds' bit order (OpenMP, CUDA, HIP, SYCL); the kinds
//! are then handled in the order they were first recorded. Images of no
//! kind are linked with the others but recorded under none. SYCL cannot
//! share a link with another kind.

use super::failure::Failure;
use super::select::{self, Group, Offered, TargetId};
use crate::llvm::triple::{Arch, Triple};
use crate::offload_binary::OffloadKind;

/// A device binary offered to the link.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Binary {
    /// Its target (triple and arch strings).
    pub target: TargetId,
    /// Its offload kind (any value; unknown bits are linked, not recorded).
    pub kind: OffloadKind,
    /// From an archive not under `--whole-archive`.
    pub lazy: bool,
}

/// One device link of the plan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Link {
    /// The link's target, as filed ([`select`]).
    pub target: TargetId,
    /// The binaries it links, by index, in order.
    pub members: Vec<usize>,
    /// The offload kinds its output is recorded under, in bit order.
    pub kinds: Vec<OffloadKind>,
}

impl Link {
    /// The arch the link is built for: the target's, but none for
    /// `generic` (LLVM passes no `-mcpu`/`-march` then).
    pub fn arch(&self) -> &str {
        link_arch(&self.target.arch)
    }
}

/// The arch a device link is built for: `generic` means none.
pub fn link_arch(arch: &str) -> &str {
    if arch == "generic" { "" } else { arch }
}

/// The kinds a linked image is recorded under, in order.
const KINDS: [OffloadKind; 4] = [
    OffloadKind::OFK_OpenMP,
    OffloadKind::OFK_Cuda,
    OffloadKind::OFK_HIP,
    OffloadKind::OFK_SYCL,
];

/// The device links for `binaries`, in LLVM 22's order, each with its
/// members and kinds. `should_extract`: the `--should-extract` archs.
pub fn links(binaries: &[Binary], should_extract: &[String]) -> Vec<Link> {
    let offered: Vec<Offered> = binaries
        .iter()
        .map(|b| Offered {
            target: b.target.clone(),
            lazy: b.lazy,
        })
        .collect();
    select::select(&offered, should_extract)
        .into_iter()
        .map(|Group { target, members }| {
            let mask = members.iter().fold(0u16, |m, &i| m | binaries[i].kind.0);
            let kinds = KINDS.into_iter().filter(|k| mask & k.0 != 0).collect();
            Link {
                target,
                members,
                kinds,
            }
        })
        .collect()
}

/// Why a device link cannot run, as LLVM 22 says it (its error line).
pub fn check(link: &Link, binaries: &[Binary]) -> Result<(), Failure> {
    let mask = link
        .members
        .iter()
        .fold(0u16, |m, &i| m | binaries[i].kind.0);
    let sycl = OffloadKind::OFK_SYCL.0;
    if mask & sycl != 0 && mask != sycl {
        return Err(Failure::new(
            "Linking images of SYCL offload kind with images of any other kind is not supported",
        ));
    }
    let triple = Triple::parse(&link.target.triple);
    let linked = matches!(
        triple.arch(),
        Arch::Nvptx
            | Arch::Nvptx64
            | Arch::Amdgcn
            | Arch::X86
            | Arch::X86_64
            | Arch::Aarch64
            | Arch::Aarch64Be
            | Arch::Ppc64
            | Arch::Ppc64le
            | Arch::Spirv64
            | Arch::Systemz
            | Arch::Loongarch64
    );
    if !linked {
        return Err(Failure::new(format!(
            "{} linking is not supported",
            triple.arch_name()
        )));
    }
    Ok(())
}

/// The offload kinds in the order LLVM 22 bundles and wraps them when its
/// links run one after another (the default): the order each kind was
/// first recorded.
pub fn kind_order(links: &[Link]) -> Vec<OffloadKind> {
    let mut out: Vec<OffloadKind> = Vec::new();
    for k in links.iter().flat_map(|l| &l.kinds) {
        if !out.contains(k) {
            out.push(*k);
        }
    }
    out
}

/// Whether a device triple is a GPU (its device link gets none of the
/// host's libraries): AMDGPU, NVPTX or SPIR-V.
pub fn is_gpu(triple: &str) -> bool {
    let t = Triple::parse(triple);
    t.is_amdgpu()
        || matches!(
            t.arch(),
            Arch::Nvptx | Arch::Nvptx64 | Arch::Spirv | Arch::Spirv32 | Arch::Spirv64
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(triple: &str, arch: &str, kind: OffloadKind) -> Binary {
        Binary {
            target: TargetId::new(triple, arch),
            kind,
            lazy: false,
        }
    }

    const AMD: &str = "amdgcn-amd-amdhsa";
    const HIP: OffloadKind = OffloadKind::OFK_HIP;
    const OMP: OffloadKind = OffloadKind::OFK_OpenMP;

    #[test]
    fn kinds_in_first_recorded_order() {
        // E6: hip gfx90a, openmp gfx90a, hip gfx908: the gfx90a link
        // records openmp then hip.
        let e6 = [
            b(AMD, "gfx90a", HIP),
            b(AMD, "gfx90a", OMP),
            b(AMD, "gfx908", HIP),
        ];
        let l = links(&e6, &[]);
        assert_eq!(l.len(), 2);
        assert_eq!(l[0].kinds, [OMP, HIP]);
        assert_eq!(kind_order(&l), [OMP, HIP]);
        // E6c: hip gfx90a alone, then openmp gfx908.
        let e6c = [b(AMD, "gfx90a", HIP), b(AMD, "gfx908", OMP)];
        assert_eq!(kind_order(&links(&e6c, &[])), [HIP, OMP]);
        // Images of no kind are linked, recorded under none.
        let none = [b(AMD, "gfx90a", OffloadKind::OFK_None)];
        let l = links(&none, &[]);
        assert_eq!(l.len(), 1);
        assert!(l[0].kinds.is_empty());
        assert!(kind_order(&l).is_empty());
    }

    #[test]
    fn what_cannot_link() {
        let sycl = [
            b("spirv64-unknown-unknown", "", OffloadKind::OFK_SYCL),
            b("spirv64-unknown-unknown", "", OMP),
        ];
        let l = links(&sycl, &[]);
        assert!(check(&l[0], &sycl).unwrap_err().llvm.contains("SYCL"));
        let alone = &sycl[..1];
        assert_eq!(check(&links(alone, &[])[0], alone), Ok(()));
        let rv = [b("riscv64-unknown-linux-gnu", "", OMP)];
        assert_eq!(
            check(&links(&rv, &[])[0], &rv),
            Err(Failure::new("riscv64 linking is not supported"))
        );
    }

    #[test]
    fn generic_links_have_no_arch() {
        let g = [b(AMD, "generic", OMP)];
        assert_eq!(links(&g, &[])[0].arch(), "");
        assert!(is_gpu(AMD) && is_gpu("nvptx64-nvidia-cuda") && is_gpu("spirv64-intel"));
        assert!(!is_gpu("x86_64-unknown-linux-gnu"));
    }
}
