//! The fuzz body of the symbol readers (`crate::kernels`).

/// Reads `data` as a device image's symbols (`kernels::read`): no panic,
/// the same answer twice, names sorted and each once, and no more kernels
/// or symbols than the bytes could describe. Then the whole scan with the
/// kernel collector, which reads every image found inside.
pub fn kernels(data: &[u8]) {
    use crate::kernels::{self, Listing};
    let first = kernels::read(data);
    let again = kernels::read(data);
    assert_eq!(format!("{first:?}"), format!("{again:?}"));
    if let Ok(Some(Listing {
        kernels, symbols, ..
    })) = &first
    {
        assert!(kernels.windows(2).all(|w| w[0].name < w[1].name));
        assert!(symbols.windows(2).all(|w| w[0].name < w[1].name));
        assert!(kernels.len() + symbols.len() <= data.len());
    }
    let mut collect = kernels::Collect::default();
    let opts = crate::scan::Options {
        max_uncompressed: 1 << 24,
        ..Default::default()
    };
    let report = crate::scan::scan_with(data, &opts, &mut collect);
    for k in collect.take(Some(&report)) {
        assert!(k.image < report.images.len());
    }
}
