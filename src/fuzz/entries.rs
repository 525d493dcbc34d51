//! What the scan body asks of every report about the images a container
//! lists.

use crate::scan::Report;

/// The images of one container that were read never share bytes of the
/// file (issue #57): a bundle's entries, a SYCL image table's rows (where
/// 2,000 rows over one image made `extract` write 94 MB) and those of
/// every other container that lists its images; those that would are
/// damage, left unread.
pub(super) fn disjoint(r: &Report) {
    let mut spans: Vec<(usize, u64, u64)> = r
        .images
        .iter()
        .filter(|i| i.is_read() && !i.in_compressed && i.size > 0)
        .filter_map(|i| Some((i.container, i.offset?, i.size)))
        .collect();
    spans.sort_unstable();
    for w in spans.windows(2) {
        let ((c, a, n), (d, b, _)) = (w[0], w[1]);
        assert!(
            c != d || a.saturating_add(n) <= b,
            "container {c}: the image at {a:#x} ({n} bytes) overlaps the one at {b:#x}"
        );
    }
}
