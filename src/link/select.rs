//! Which device binaries a link takes, and which device link each goes
//! into, as LLVM 22's `clang-linker-wrapper` decides it (`getDeviceInput`).
//!
//! LLVM 22 looks at no symbols. Every binary of an object on the command
//! line (and of an archive under `--whole-archive`) is taken and filed
//! under its own target — the (triple, arch) pair, compared as strings —
//! and also under every target already filed that is *compatible* with it
//! ([`compatible`]). Then, in one pass with no second round, each binary
//! of an archive joins its own target and the compatible ones, but only
//! those already filed, or whose arch `--should-extract` names. Each
//! target filed is one device link, in the order the targets were first
//! filed; a link's binaries are in the order they were filed.
//!
//! The consequences people trip over: a static library member whose
//! target no object has is never linked (unless `--should-extract` names
//! it), a member for a linked target always is (whatever it defines), and
//! the result depends on the order of the inputs (`gfx90a` then
//! `gfx90a:xnack+` puts both objects in the `gfx90a` link but only one in
//! the other). See `docs/linker-wrapper-inputs.md`.

use std::collections::HashMap;

use crate::llvm::triple::Triple;

/// A device target as LLVM's wrapper keys its links: the `triple` and
/// `arch` strings of an OffloadBinary, verbatim (no normalization).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TargetId {
    /// The device triple (`amdgcn-amd-amdhsa`).
    pub triple: String,
    /// The architecture or target ID (`gfx90a:xnack+`, `sm_70`,
    /// `generic`); may be empty.
    pub arch: String,
}

impl TargetId {
    /// A target from its triple and arch.
    pub fn new(triple: impl Into<String>, arch: impl Into<String>) -> TargetId {
        TargetId {
            triple: triple.into(),
            arch: arch.into(),
        }
    }
}

/// Whether two *different* targets can share device code, as LLVM 22's
/// `areTargetsCompatible` says: never for the same pair (an exact match is
/// not "compatible", it is the same target) or different triple strings;
/// always when either arch is `generic`; otherwise only for AMDGPU, when
/// the processors (before the first `:`) are equal and no feature is on in
/// one and off in the other (`xnack+` against `xnack-`, `sramecc+` against
/// `sramecc-`; a feature not given means either). Like LLVM, the features
/// are found by substring, not parsed.
pub fn compatible(a: &TargetId, b: &TargetId) -> bool {
    if a == b || a.triple != b.triple {
        return false;
    }
    if a.arch == "generic" || b.arch == "generic" {
        return true;
    }
    if !Triple::parse(&a.triple).is_amdgpu() {
        return false;
    }
    let processor = |s: &str| s.split(':').next().unwrap_or("").to_string();
    if processor(&a.arch) != processor(&b.arch) {
        return false;
    }
    let clash = |on: &str, off: &str| {
        (a.arch.contains(on) && b.arch.contains(off))
            || (a.arch.contains(off) && b.arch.contains(on))
    };
    !clash("xnack+", "xnack-") && !clash("sramecc+", "sramecc-")
}

/// One device binary offered to the link, in command-line order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Offered {
    /// Its target.
    pub target: TargetId,
    /// It came from an archive that is not under `--whole-archive`: it is
    /// taken only for a target already linked or named by
    /// `--should-extract`.
    pub lazy: bool,
}

/// One device link: its target and the binaries it takes (indices into
/// the offered list), in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    /// The link's target: the first binary filed under it.
    pub target: TargetId,
    /// The binaries, by index into what [`select`] was given.
    pub members: Vec<usize>,
}

/// Files the offered binaries into device links as LLVM 22 does (see the
/// module documentation). `should_extract` holds the arch strings of
/// `--should-extract` (compared with the arch only, whatever the triple).
/// A binary may be in several groups; one in none is not linked.
pub fn select(offered: &[Offered], should_extract: &[String]) -> Vec<Group> {
    let mut groups: Vec<Group> = Vec::new();
    let mut index: HashMap<TargetId, usize> = HashMap::new();
    for lazy in [false, true] {
        for (i, b) in offered.iter().enumerate().filter(|(_, b)| b.lazy == lazy) {
            // Its own target first, then every compatible one filed so far,
            // in filing order.
            let mut targets = vec![b.target.clone()];
            targets.extend(
                groups
                    .iter()
                    .filter(|g| compatible(&b.target, &g.target))
                    .map(|g| g.target.clone()),
            );
            for t in targets {
                let at = match index.get(&t) {
                    Some(&at) => at,
                    None if !lazy || should_extract.contains(&t.arch) => {
                        groups.push(Group {
                            target: t.clone(),
                            members: Vec::new(),
                        });
                        index.insert(t, groups.len() - 1);
                        groups.len() - 1
                    }
                    None => continue,
                };
                groups[at].members.push(i);
            }
        }
    }
    groups
}

#[cfg(test)]
mod tests {
    use super::*;

    const AMD: &str = "amdgcn-amd-amdhsa";
    const NV: &str = "nvptx64-nvidia-cuda";

    fn t(triple: &str, arch: &str) -> TargetId {
        TargetId::new(triple, arch)
    }

    fn obj(triple: &str, arch: &str) -> Offered {
        Offered {
            target: t(triple, arch),
            lazy: false,
        }
    }

    fn member(triple: &str, arch: &str) -> Offered {
        Offered {
            target: t(triple, arch),
            lazy: true,
        }
    }

    /// The groups as `arch: members` strings.
    fn shape(groups: &[Group]) -> Vec<String> {
        groups
            .iter()
            .map(|g| format!("{}:{:?}", g.target.arch, g.members))
            .collect()
    }

    #[test]
    fn compatibility_as_llvm_22() {
        assert!(compatible(&t(AMD, "gfx90a"), &t(AMD, "gfx90a:xnack+")));
        assert!(compatible(&t(AMD, "gfx90a:xnack+"), &t(AMD, "gfx90a")));
        assert!(!compatible(
            &t(AMD, "gfx90a:xnack+"),
            &t(AMD, "gfx90a:xnack-")
        ));
        assert!(compatible(
            &t(AMD, "gfx90a:xnack+"),
            &t(AMD, "gfx90a:sramecc-")
        ));
        assert!(!compatible(
            &t(AMD, "gfx90a:sramecc+"),
            &t(AMD, "gfx90a:sramecc-:xnack+")
        ));
        assert!(!compatible(&t(AMD, "gfx90a"), &t(AMD, "gfx908")));
        assert!(!compatible(&t(AMD, "gfx90a"), &t(AMD, "gfx90a")));
        assert!(compatible(&t(AMD, "generic"), &t(AMD, "gfx908")));
        assert!(compatible(&t(NV, "sm_70"), &t(NV, "generic")));
        assert!(!compatible(&t(NV, "sm_70"), &t(NV, "sm_80")));
        assert!(!compatible(&t(AMD, "generic"), &t(NV, "sm_70")));
        // Triples are strings: no normalization.
        assert!(!compatible(
            &t(AMD, "gfx90a"),
            &t("amdgcn-amd-amdhsa-", "generic")
        ));
        // CPU arches never mix, but generic does.
        let x = "x86_64-unknown-linux-gnu";
        assert!(!compatible(&t(x, "znver4"), &t(x, "")));
        assert!(compatible(&t(x, "generic"), &t(x, "")));
    }

    #[test]
    fn members_only_for_linked_targets() {
        // E1: an sm_70 object and an archive of sm_70 and sm_52 members.
        let offered = [obj(NV, "sm_70"), member(NV, "sm_70"), member(NV, "sm_52")];
        assert_eq!(shape(&select(&offered, &[])), ["sm_70:[0, 1]"]);
        // E2: --should-extract names sm_52.
        assert_eq!(
            shape(&select(&offered, &["sm_52".into()])),
            ["sm_70:[0, 1]", "sm_52:[2]"]
        );
        // E3c: an archive alone gives nothing.
        assert!(select(&offered[1..], &[]).is_empty());
        // E3b: archives before objects change nothing (phase B comes after).
        let later = [member(NV, "sm_70"), member(NV, "sm_52"), obj(NV, "sm_70")];
        assert_eq!(shape(&select(&later, &[])), ["sm_70:[2, 0]"]);
        // --should-extract compares the arch alone, whatever the triple.
        let amd = [member(AMD, "sm_52")];
        assert_eq!(shape(&select(&amd, &["sm_52".into()])), ["sm_52:[0]"]);
    }

    #[test]
    fn target_ids_and_order() {
        // E4: an archive's gfx90a member joins both xnack links, and there
        // is no plain gfx90a link.
        let e4 = [
            obj(AMD, "gfx90a:xnack+"),
            obj(AMD, "gfx90a:xnack-"),
            member(AMD, "gfx90a"),
        ];
        assert_eq!(
            shape(&select(&e4, &[])),
            ["gfx90a:xnack+:[0, 2]", "gfx90a:xnack-:[1, 2]"]
        );
        // E4b/E4c: the order of the objects decides.
        let b = [obj(AMD, "gfx90a"), obj(AMD, "gfx90a:xnack+")];
        assert_eq!(
            shape(&select(&b, &[])),
            ["gfx90a:[0, 1]", "gfx90a:xnack+:[1]"]
        );
        let c = [obj(AMD, "gfx90a:xnack+"), obj(AMD, "gfx90a")];
        assert_eq!(
            shape(&select(&c, &[])),
            ["gfx90a:xnack+:[0, 1]", "gfx90a:[1]"]
        );
        // E5: a generic member joins every link of its triple.
        let e5 = [
            obj(AMD, "gfx90a"),
            obj(AMD, "gfx908"),
            member(AMD, "generic"),
        ];
        assert_eq!(shape(&select(&e5, &[])), ["gfx90a:[0, 2]", "gfx908:[1, 2]"]);
        // E5c: a generic object first takes the later ones too.
        let e5c = [obj(AMD, "generic"), obj(AMD, "gfx908")];
        assert_eq!(shape(&select(&e5c, &[])), ["generic:[0, 1]", "gfx908:[1]"]);
    }

    #[test]
    fn one_pass_over_archives() {
        // A member that --should-extract brings in creates its target;
        // later members of that target join it, earlier ones are not
        // visited again.
        let o = [
            member(AMD, "gfx90a:xnack+"),
            member(AMD, "gfx90a"),
            member(AMD, "gfx90a:xnack+"),
        ];
        assert_eq!(shape(&select(&o, &["gfx90a".into()])), ["gfx90a:[1, 2]"]);
    }
}
