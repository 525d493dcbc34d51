//! The fuzz body of packages (`crate::package`).

/// Reads `data` as every kind of package ([`crate::package`]), the kind
/// it is detected as first: every stored member must lie inside `data`, and
/// compressed members are read to their end (at most 16 MiB each). Must
/// never panic.
pub fn package(data: &[u8]) {
    use crate::package::{self, Compression, Contents, Kind, Members};
    use std::io::Read;

    struct Drain<'d> {
        data: &'d [u8],
    }
    impl Members for Drain<'_> {
        fn member(
            &mut self,
            _path: &str,
            contents: std::result::Result<Contents<'_, '_>, String>,
        ) -> crate::error::Result<()> {
            match contents {
                Ok(Contents::Stored(b)) => {
                    let (base, start) = (self.data.as_ptr() as usize, b.as_ptr() as usize);
                    assert!(
                        b.is_empty()
                            || (start >= base && start + b.len() <= base + self.data.len()),
                        "a stored member outside the package"
                    );
                }
                Ok(Contents::Stream { reader, .. } | Contents::Unsized(reader)) => {
                    let mut sink = Vec::new();
                    let _ = reader.take(1 << 24).read_to_end(&mut sink);
                }
                Err(_) => {}
            }
            Ok(())
        }
    }

    let mut kinds = vec![
        Kind::Zip,
        Kind::Deb,
        Kind::Tar(Compression::None),
        Kind::Tar(Compression::Gzip),
        Kind::Tar(Compression::Xz),
        Kind::Tar(Compression::Zstd),
        Kind::Tar(Compression::Bzip2),
        Kind::Tar(Compression::Lzma),
        Kind::Tar(Compression::Lz4),
        Kind::Tar(Compression::Lzip),
        Kind::Compressed(Compression::Gzip),
        Kind::Compressed(Compression::Bzip2),
        Kind::Compressed(Compression::Lzma),
        Kind::Cpio,
        Kind::Rpm,
    ];
    if let Some(k) = package::detect(data) {
        kinds.retain(|&x| x != k);
        kinds.insert(0, k);
    }
    for k in kinds {
        let _ = package::members(data, k, &mut Drain { data });
    }
}
