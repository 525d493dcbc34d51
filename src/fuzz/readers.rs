//! The scan's readers ([`Visit::reader`]) against its hand-overs
//! ([`Visit::image`]): the same bytes for the same images, on any number
//! of threads.

use crate::scan::{self, Image, ImageReader, Options, Unread, Visit};

/// What a visitor got: per image id, a hash of its bytes, or `None` when
/// they could not be had.
type Seen = Vec<(usize, Option<u128>)>;

/// Takes every image: handed over, or with `readers` through a reader.
struct Take {
    readers: bool,
    seen: Seen,
}

/// [`Take`]'s reader.
struct Hash(Option<u128>);

impl ImageReader for Hash {
    fn read(&mut self, bytes: &[u8]) {
        assert!(self.0.is_none(), "a reader read twice");
        self.0 = Some(xxhash_rust::xxh3::xxh3_128(bytes));
    }
}

impl Visit for Take {
    fn wants(&mut self, _: &Image) -> bool {
        true
    }
    fn image(&mut self, img: &Image, bytes: &[u8]) {
        assert!(!self.readers, "handed over to a visitor that reads");
        self.seen
            .push((img.id, Some(xxhash_rust::xxh3::xxh3_128(bytes))));
    }
    fn unavailable(&mut self, img: &Image, _: &crate::scan::Unread) {
        self.seen.push((img.id, None));
    }
    fn reader(&mut self, _: &Image) -> Option<Box<dyn ImageReader>> {
        self.readers
            .then(|| Box::new(Hash(None)) as Box<dyn ImageReader>)
    }
    fn read(&mut self, img: &Image, reader: Box<dyn ImageReader>, end: Result<(), Unread>) {
        let reader: Box<dyn std::any::Any> = reader;
        let hash = reader.downcast::<Hash>().expect("its own reader back");
        match end {
            Ok(()) => {
                assert!(hash.0.is_some(), "a reader back unread");
                self.seen.push((img.id, hash.0));
            }
            Err(_) => self.seen.push((img.id, None)),
        }
    }
}

/// Scans `data` with `opts` handing the images over on one thread and
/// reading them through readers on three: the same report, and the same
/// bytes (or the same failures) for the same images.
pub(super) fn readers_agree(data: &[u8], opts: &Options) {
    let run = |readers: bool, threads: usize| {
        let mut take = Take {
            readers,
            seen: Vec::new(),
        };
        let o = Options { threads, ..*opts };
        let r = scan::scan_with(data, &o, &mut take);
        take.seen.sort_unstable();
        (format!("{r:?}"), take.seen)
    };
    assert_eq!(run(true, 3), run(false, 1));
}
