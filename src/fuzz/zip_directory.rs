//! The fuzz body of a zip's central directory: entries whose data
//! overlap and entries of one name (what `crate::package` counts and
//! refuses).

/// Reads `data` as a zip, its stored members' repeats counted as the
/// scanners count them: the members read for free (the first to name
/// their bytes) never add up to more than the zip's size, a repeat costs
/// at least its size and the floor, every name [`duplicate_names`] gives
/// is given at least twice, and a zip holding such names is an error of
/// the walk. Must never panic.
///
/// [`duplicate_names`]: crate::package::duplicate_names
pub fn zip_directory(data: &[u8]) {
    use crate::package::{self, Contents, Kind, Members, Overlaps, REPEAT_COST_FLOOR};

    struct Count<'d> {
        data: &'d [u8],
        overlaps: Overlaps,
        free: u64,
    }
    impl Members for Count<'_> {
        fn member(
            &mut self,
            _path: &str,
            contents: std::result::Result<Contents<'_, '_>, String>,
        ) -> crate::error::Result<()> {
            if let Ok(Contents::Stored(b)) = contents {
                match self.overlaps.cost(self.data, b) {
                    0 => self.free += b.len() as u64,
                    c => assert!(
                        c >= b.len() as u64 && c >= REPEAT_COST_FLOOR,
                        "a repeat costs less than its size"
                    ),
                }
            }
            Ok(())
        }
    }

    let mut count = Count {
        data,
        overlaps: Overlaps::default(),
        free: 0,
    };
    let walked = package::members(data, Kind::Zip, &mut count);
    assert!(
        count.free <= data.len() as u64,
        "members read for free overlap"
    );
    if let Ok(zip) = zip::ZipArchive::new(std::io::Cursor::new(data)) {
        let dups = package::duplicate_names(data, &zip);
        assert!(dups.iter().all(|(_, n)| *n >= 2), "a name given once");
        assert!(
            dups.is_empty() || walked.is_err(),
            "a zip of duplicate names walked as sound"
        );
    }
}
