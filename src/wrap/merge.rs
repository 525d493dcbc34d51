//! A model of what LLVM's GlobalMerge pass does to the wrapper's internal
//! constants on CPUs that run it on every constant (powerpc64le): the
//! constants of one section, each smaller than the limit, are sorted by
//! size (stably, so equal sizes keep the module's order) and packed in
//! that order, each at its preferred alignment, into structs of at most
//! the limit's size; every struct of two or more becomes one private global
//! (`_MergedGlobals`, written after the module's other globals) and each
//! member a local alias into it. Constants left alone stay where they
//! were.

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
}
