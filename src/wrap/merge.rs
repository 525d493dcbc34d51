//! A model of what LLVM's GlobalMerge pass does to the wrapper's internal
//! constants on CPUs that run it on every constant (powerpc64le): the
//! constants of one section, each smaller than the limit, are sorted by
//! size (stably, so equal sizes keep the module's order) and packed in
//! that order, each at its preferred alignment, into structs of at most
//! the limit's size; every struct of two or more becomes one private global
//! (`_MergedGlobals`, written after the module's other globals) and each
//! member a local alias into it. Constants left alone stay where they
//! were.

use super::model::align_up;
use crate::error::{Error, Result};

/// One merged global: its members and where each lies in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Group {
    /// (index of the constant in the caller's list, offset in the group),
    /// in the group's order.
    pub members: Vec<(usize, u64)>,
    /// Size of the group (the end of its last member).
    pub size: u64,
    /// Alignment of the group (its members' largest).
    pub align: u64,
}

/// The merged globals of the constants whose (size, preferred alignment)
/// are `consts`, in the module's order, under `limit` bytes (LLVM's
/// `MaxOffset`: each constant must be smaller, each group no larger).
pub(crate) fn groups(consts: &[(u64, u64)], limit: u64) -> Vec<Group> {
    let mut order: Vec<usize> = (0..consts.len()).filter(|&i| consts[i].0 < limit).collect();
    if order.len() < 2 {
        return Vec::new();
    }
    order.sort_by_key(|&i| consts[i].0);
    let mut out = Vec::new();
    let mut at = 0;
    while at < order.len() {
        let mut size = 0u64;
        let mut align = 1u64;
        let mut members = Vec::new();
        while let Some(&i) = order.get(at) {
            let (len, a) = consts[i];
            let off = size.next_multiple_of(a.max(1));
            if off + len > limit {
                break;
            }
            members.push((i, off));
            size = off + len;
            align = align.max(a);
            at += 1;
        }
        if members.len() >= 2 {
            out.push(Group {
                members,
                size,
                align,
            });
        }
    }
    out
}

/// Where a section's constants lie once llc has merged them: those left
/// alone first, in the module's order, each at its preferred alignment
/// (llc emits them with the module's other globals); then each merged
/// global, at its alignment, in the order GlobalMerge makes them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Placement {
    /// Each constant's offset in the section.
    pub at: Vec<u64>,
    /// The merged global (an index into `groups`) each constant is in.
    pub group: Vec<Option<usize>>,
    /// Each merged global: its offset, and its members in its order.
    pub groups: Vec<(u64, Vec<usize>)>,
    /// The end of the last constant.
    pub end: u64,
    /// The largest alignment of them all (1 if there are none).
    pub align: u64,
}

impl Placement {
    /// Whether there are constants and every one is merged: the section
    /// then holds only merged globals, which llc writes after the
    /// module's other globals.
    pub(crate) fn all_merged(&self) -> bool {
        !self.group.is_empty() && self.group.iter().all(Option::is_some)
    }

    /// The constants llc merges, in the order of their merged globals and
    /// of their members (the order of the aliases llc lists for them).
    pub(crate) fn merged(&self) -> impl Iterator<Item = usize> + '_ {
        self.groups
            .iter()
            .flat_map(|(_, members)| members.iter().copied())
    }
}

/// The placement of the constants whose (size, preferred alignment) are
/// `consts`, in the module's order, merged under `limit` bytes (none: no
/// merging, each in turn).
pub(crate) fn place(consts: &[(u64, u64)], limit: Option<u64>) -> Result<Placement> {
    let merged = limit.map_or_else(Vec::new, |limit| groups(consts, limit));
    let mut group = vec![None; consts.len()];
    for (g, m) in merged.iter().enumerate() {
        for &(k, _) in &m.members {
            group[k] = Some(g);
        }
    }
    let too_large = || Error::too_large("the wrapper object");
    let mut at = vec![0; consts.len()];
    let mut end = 0u64;
    let mut align = 1;
    for (k, &(size, a)) in consts.iter().enumerate() {
        if group[k].is_none() {
            at[k] = align_up(end, a.max(1))?;
            end = at[k].checked_add(size).ok_or_else(too_large)?;
            align = align.max(a);
        }
    }
    let mut groups = Vec::with_capacity(merged.len());
    for m in merged {
        let base = align_up(end, m.align)?;
        for &(k, off) in &m.members {
            at[k] = base + off;
        }
        groups.push((base, m.members.iter().map(|&(k, _)| k).collect()));
        end = base.checked_add(m.size).ok_or_else(too_large)?;
        align = align.max(m.align);
    }
    Ok(Placement {
        at,
        group,
        groups,
        end,
        align,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What llc 22 does for powerpc64le (limit 0x7fff), as read from its
    /// objects.
    #[test]
    fn llc_powerpc64le_layouts() {
        // Images of 0, 100 and 176 bytes: all merged, by size.
        let g = groups(&[(0, 8), (176, 8), (100, 8)], 0x7fff);
        assert_eq!(
            g,
            [Group {
                members: vec![(0, 0), (2, 0), (1, 104)],
                size: 280,
                align: 8
            }]
        );
        // A 40000-byte image stays; the small ones merge.
        let g = groups(&[(40000, 8), (100, 8), (50, 8), (176, 8)], 0x7fff);
        assert_eq!(g[0].members, [(2, 0), (1, 56), (3, 160)]);
        // 32766 + 50 do not fit together: nothing merges.
        assert!(groups(&[(32766, 8), (50, 8)], 0x7fff).is_empty());
        // One image array and the descriptor: equal sizes keep their order.
        let g = groups(&[(32, 16), (32, 16)], 0x7fff);
        assert_eq!(g[0].members, [(0, 0), (1, 32)]);
        let g = groups(&[(96, 16), (32, 16)], 0x7fff);
        assert_eq!(g[0].members, [(1, 0), (0, 32)]);
        // A full group closes and the next starts.
        let g = groups(&[(10000, 8); 7], 0x7fff);
        assert_eq!(g.len(), 2);
        assert_eq!(g[0].members.len(), 3);
        assert_eq!(g[1].members, [(3, 0), (4, 10000), (5, 20000)]);
    }

    /// The ROCm data of powerpc64le (the image array, the descriptor, the
    /// infos, 32 bytes each, 16-aligned), as llc 22 lays it out.
    #[test]
    fn llc_powerpc64le_rocm_data() {
        let data = |n: u64| {
            let mut c = vec![(32 * n, 16), (32, 16)];
            c.extend((0..n).map(|_| (32, 16)));
            place(&c, Some(0x7fff)).unwrap()
        };
        // One image: all three merged, in the module's order.
        let l = data(1);
        assert_eq!(l.at, [0, 32, 64]);
        assert!(l.all_merged());
        // 512 images: the array alone first, then the descriptor and
        // the infos.
        let l = data(512);
        assert_eq!((l.at[0], l.at[1], l.at[2]), (0, 0x4000, 0x4020));
        assert_eq!(l.groups.len(), 1);
        assert!(!l.all_merged());
        // 1023: the last info left alone, after the array.
        let l = data(1023);
        assert_eq!((l.at[1], l.at[1024]), (0x8000, 0x7fe0));
        assert_eq!(l.group[1024], None);
        // 1024: a second merged global of the last two infos.
        let l = data(1024);
        assert_eq!(l.groups[1], (0xffe0, vec![1024, 1025]));
        assert_eq!(l.end, 0x10020);
        // Nothing to merge: each in turn.
        let l = place(&[(7, 1), (23, 16), (5, 1)], None).unwrap();
        assert_eq!((l.at, l.end, l.align), (vec![0, 16, 39], 44, 16));
    }
}
