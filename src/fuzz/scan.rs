//! The fuzz body of the scan.

/// The decompression budget of the [`scan`] body.
const WORK_BYTES: u64 = 1 << 24;

/// The image and container limits of the [`scan`] body.
const WORK_IMAGES: usize = 20_000;

/// The visitor of the [`scan`] body: takes every image and checks its
/// bytes against the input (`data`).
struct Check<'d> {
    data: &'d [u8],
    /// Images handed over.
    given: usize,
}
impl crate::scan::Visit for Check<'_> {
    fn wants(&mut self, _: &crate::scan::Image) -> bool {
        true
    }
    fn image(&mut self, img: &crate::scan::Image, bytes: &[u8]) {
        self.given += 1;
        // A compressed image (a CUDA fatbin entry) is handed over
        // decompressed.
        if let Some(n) = img.uncompressed_size {
            assert_eq!(bytes.len() as u64, n);
            return;
        }
        assert_eq!(bytes.len() as u64, img.size);
        if let Some(o) = img.offset {
            let o = usize::try_from(o).expect("offset fits");
            assert_eq!(&self.data[o..o + bytes.len()], bytes);
        }
    }
}

/// Scans `data` in every mode, listing only and decompressing everything,
/// with a visitor that takes every image: the report must be consistent
/// (ranges inside the file, parents before children, image counts) and the
/// bytes handed out must be the ones the offsets name. Must never panic.
pub fn scan(data: &[u8]) {
    use crate::scan::{self, HashAlgo, Mode, Options, Parent};

    let len = data.len() as u64;
    for mode in [Mode::Auto, Mode::Sections, Mode::Raw] {
        for full in [false, true] {
            let opts = Options {
                mode,
                verify: full,
                hash: full.then_some(HashAlgo::Xxh3_128),
                max_uncompressed: WORK_BYTES,
                max_images: WORK_IMAGES,
                max_containers: WORK_IMAGES,
                report_rejects: true,
                ..Options::default()
            };
            let mut check = Check { data, given: 0 };
            let r = if full {
                scan::scan_with(data, &opts, &mut check)
            } else {
                scan::scan(data, &opts)
            };
            // The work one input may cause, whatever its bytes: within the
            // limits, each stream decoded at most twice (once to list and
            // hash, once for the visitor), each image handed over once.
            assert!(r.images.len() <= WORK_IMAGES && r.containers.len() <= WORK_IMAGES);
            // `size` and a sum of files: the sizes a file declares (near
            // 2^64) add up without overflowing.
            let one = scan::size("f", len, &r);
            let all = scan::SizeReport::sum("all", [&one, &one]);
            assert!(all.total.images == one.total.images.saturating_mul(2));
            assert!(
                check.given <= WORK_IMAGES,
                "{} images handed over",
                check.given
            );
            assert!(
                r.decompressed <= 2 * WORK_BYTES,
                "{} bytes decompressed",
                r.decompressed
            );
            if r.stopped.is_some() {
                assert!(r.images.is_empty() && r.containers.is_empty());
            }
            for c in &r.containers {
                if let Some(o) = c.offset {
                    assert!(o.checked_add(c.size).is_some_and(|e| e <= len));
                }
                match c.parent {
                    Some(Parent::Container(p)) => assert!(p < c.id),
                    Some(Parent::Image(i)) => assert!(i < r.images.len()),
                    None => {}
                }
            }
            for i in &r.images {
                if let Some(o) = i.offset {
                    assert!(o.checked_add(i.size).is_some_and(|e| e <= len));
                }
                assert!(i.container < r.containers.len());
            }
            let held: usize = r.containers.iter().map(|c| c.images).sum();
            assert_eq!(held, r.images.len());
            super::entries::disjoint(&r);
            // CUDA fatbin entries decoded on several threads: the same
            // report.
            if full && mode == Mode::Auto {
                let threads = Options { threads: 3, ..opts };
                let mut again = Check { data, given: 0 };
                let r3 = scan::scan_with(data, &threads, &mut again);
                assert_eq!(format!("{r3:?}"), format!("{r:?}"));
                assert_eq!(again.given, check.given);
                super::readers::readers_agree(data, &opts);
            }
        }
    }
}
