use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read as _, Write as _};

use super::compress::{self, bzip2_level};
use super::info::{self, Finder, Row};

#[test]
fn the_bzip2_block_size_is_read_from_the_header() {
    assert_eq!(bzip2_level(b"BZh91AY&SY"), Some(9));
    assert_eq!(bzip2_level(b"BZh1"), Some(1));
    assert_eq!(bzip2_level(b"BZh0"), None);
    assert_eq!(bzip2_level(b"BZ"), None);
    let mut p = compress::bzip2(Vec::new(), 3);
    p.write_all(&[7u8; 1000]).unwrap();
    assert!(p.finish().unwrap().starts_with(b"BZh3"));
}

#[test]
fn zstd_gives_the_same_bytes_on_any_number_of_threads() {
    let data: Vec<u8> = (0..3u32 << 20)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13).to_le_bytes()[0] & 0x0f)
        .collect();
    let packed = |threads| {
        let mut p = compress::zstd(Vec::new(), threads).unwrap();
        p.write_all(&data).unwrap();
        p.finish().unwrap()
    };
    let one = packed(1);
    assert_eq!(one, packed(3));
    let mut back = Vec::new();
    crate::package::decoder(&one, crate::package::Compression::Zstd)
        .unwrap()
        .read_to_end(&mut back)
        .unwrap();
    assert_eq!(back, data);
}

const PATHS: &[u8] = br#"{
  "paths": [
    {
      "_path": "lib/liba.so",
      "path_type": "hardlink",
      "sha256": "AA",
      "size_in_bytes": 10
    },
    {
      "_path": "lib/gfx906.co",
      "path_type": "hardlink",
      "prefix_placeholder": "/opt/build_placehold",
      "sha256": "bb",
      "size_in_bytes": 20
    },
    {
      "_path": "lib/other",
      "path_type": "softlink",
      "sha256": "cc",
      "size_in_bytes": 3
    }
  ],
  "paths_version": 1
}
"#;

#[test]
fn rows_are_read_with_their_fields_and_a_bad_field_is_named() {
    let rows = info::rows(PATHS).unwrap();
    assert_eq!(
        rows[&b"lib/liba.so"[..]],
        Row {
            sha256: Some("aa".into()),
            size: Some(10),
            placeholder: None,
            softlink: false,
        }
    );
    assert!(rows[&b"lib/other"[..]].softlink);
    assert_eq!(
        rows[&b"lib/gfx906.co"[..]].placeholder.as_deref(),
        Some(&b"/opt/build_placehold"[..])
    );
    let bad = br#"{"paths": [{"_path": "x", "size_in_bytes": "7"}]}"#;
    assert_eq!(
        info::rows(bad).unwrap_err(),
        "the 'size_in_bytes' of 'x' is not a size"
    );
    assert_eq!(info::rows(b"{}").unwrap_err(), "it has no 'paths' list");
}

#[test]
fn rows_of_files_rewritten_and_removed_change_and_nothing_else() {
    let changed = BTreeMap::from([(b"lib/liba.so".to_vec(), (7, "ff".to_string()))]);
    let gone = BTreeSet::from([b"lib/gfx906.co".to_vec()]);
    let (text, rewritten, removed) = info::new_paths_json(PATHS, &changed, &gone)
        .unwrap()
        .unwrap();
    assert_eq!((rewritten, removed), (1, 1));
    // conda-build's layout: two-space indents, keys sorted, the newline kept.
    let want = br#"{
  "paths": [
    {
      "_path": "lib/liba.so",
      "path_type": "hardlink",
      "sha256": "ff",
      "size_in_bytes": 7
    },
    {
      "_path": "lib/other",
      "path_type": "softlink",
      "sha256": "cc",
      "size_in_bytes": 3
    }
  ],
  "paths_version": 1
}
"#;
    assert_eq!(
        String::from_utf8_lossy(&text),
        String::from_utf8_lossy(want)
    );
    assert!(
        info::new_paths_json(PATHS, &BTreeMap::new(), &BTreeSet::new())
            .unwrap()
            .is_none()
    );
    let files = b"lib/liba.so\nlib/gfx906.co\r\nlib/other";
    let (new, n) = info::new_files(files, &gone).unwrap();
    assert_eq!((&new[..], n), (&b"lib/liba.so\nlib/other"[..], 1));
    assert!(info::new_files(files, &BTreeSet::new()).is_none());
}

#[test]
fn a_placeholder_is_found_across_writes() {
    let hay = b"..abcab..abc.abcabc";
    let want = Finder::all(b"abc", hay);
    assert_eq!(want, [2, 9, 13, 16]);
    for cut in 0..hay.len() {
        let mut f = Finder::new(b"abc");
        for piece in [&hay[..cut], &hay[cut..]] {
            for b in piece.chunks(2) {
                f.write_all(b).unwrap();
            }
        }
        assert_eq!(f.found, want, "cut at {cut}");
    }
}
