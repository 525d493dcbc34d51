//! The fuzz body of `ar` archives: read, written and scanned.

/// Reads `data` as an `ar` archive, the ways offload-kit does: the
/// drop-in's member reader (a thin archive's member files are `data`
/// itself, cut to the size each claims, or all of it), the writer's symbol
/// reader on each member, a write and re-read of what was read, and the
/// scanner's archive walk with thin members that name the archive again
/// (cycles). Must never panic; members lie inside what was read.
pub fn archive(data: &[u8]) {
    use crate::bundle::archive_unbundle as ar;
    use crate::host::ar::write as writer;
    use crate::scan::{self, Image, Options, ThinMember, Visit};

    // Thin member files: the archive itself.
    let thin: Vec<&[u8]> = match ar::thin_member_names(data) {
        Ok(Some(names)) => names.iter().map(|_| data).collect(),
        _ => Vec::new(),
    };
    if let Ok(members) = ar::members(data, &thin) {
        let within = |m: &[u8]| {
            let (base, start) = (data.as_ptr() as usize, m.as_ptr() as usize);
            m.is_empty() || (start >= base && start + m.len() <= base + data.len())
        };
        for m in &members {
            assert!(within(m.data), "a member outside the archive");
            let _ = writer::member_symbols(m.data);
        }
        // What was read is written and read back the same (names that
        // the writer cannot store, or members it cannot index, are refused).
        let to_write: Vec<writer::Member<'_>> = members
            .iter()
            .map(|m| writer::Member {
                name: String::from_utf8_lossy(m.name).into_owned(),
                data: m.data,
            })
            .collect();
        let bytes: Vec<&[u8]> = members.iter().map(|m| m.data).collect();
        if let Ok(layout) = writer::layout_gnu(&to_write, false) {
            let mut out = Vec::new();
            layout.write_to(&mut out, &bytes).expect("write to memory");
            assert_eq!(out.len() as u64, layout.size);
            let again = ar::members(&out, &[]).expect("re-read what we wrote");
            assert_eq!(again.len(), members.len());
            for (a, b) in members.iter().zip(&again) {
                assert_eq!(a.data, b.data);
            }
        }
    }
    let _ = ar::check_archive(data, &thin, "fuzz.a");

    /// Thin members are this archive again, or a prefix of it.
    struct Thin<'d>(&'d [u8]);
    impl Visit for Thin<'_> {
        fn wants(&mut self, _: &Image) -> bool {
            true
        }
        fn image(&mut self, img: &Image, bytes: &[u8]) {
            // A compressed image is handed over decompressed.
            let n = img.uncompressed_size.unwrap_or(img.size);
            assert_eq!(bytes.len() as u64, n);
        }
        fn thin_member(&mut self, name: &str) -> ThinMember {
            let n = name.len().min(self.0.len());
            let bytes = if name.len().is_multiple_of(2) {
                self.0
            } else {
                &self.0[..n]
            };
            Some(Ok(Box::new(bytes.to_vec())))
        }
    }
    let opts = Options {
        max_uncompressed: 1 << 24,
        ..Options::default()
    };
    let r = scan::scan_with(data, &opts, &mut Thin(data));
    for i in &r.images {
        if let Some(o) = i.offset {
            assert!(
                o.checked_add(i.size)
                    .is_some_and(|e| e <= data.len() as u64)
            );
        }
    }
}
