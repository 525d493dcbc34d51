//! squashfs, SIF and AppImage containers made by hand: each is told by its
//! magic, and every lie in their headers is an error naming what is
//! wrong, never a panic or an empty walk. (Real filesystems, in every
//! compression, are read in linker-tests/squashfs.rs, against mksquashfs
//! and unsquashfs.)

use crate::error::Result;
use crate::package::{Contents, Kind, Members, detect, members};

/// Records the members' paths and whether each could be read.
#[derive(Default)]
struct Record(Vec<(String, bool)>);

impl Members for Record {
    fn member(
        &mut self,
        path: &str,
        contents: std::result::Result<Contents<'_, '_>, String>,
    ) -> Result<()> {
        self.0.push((path.to_string(), contents.is_ok()));
        Ok(())
    }
}

/// A SIF of `objects` (type, filesystem type, partition type, data), its
/// descriptor table at 4096 and its objects after it.
fn sif(objects: &[(i32, i32, i32, &[u8])]) -> Vec<u8> {
    let mut f = vec![0u8; 4096];
    f[32..42].copy_from_slice(b"SIF_MAGIC\0");
    f[42..45].copy_from_slice(b"01\0");
    f[88..96].copy_from_slice(&(objects.len() as u64).to_le_bytes());
    f[96..104].copy_from_slice(&4096u64.to_le_bytes());
    let mut table = vec![0u8; 585 * objects.len()];
    let mut at = 4096 + table.len();
    let mut data = Vec::new();
    for (i, (kind, fs, part, bytes)) in objects.iter().enumerate() {
        let d = &mut table[i * 585..(i + 1) * 585];
        d[..4].copy_from_slice(&kind.to_le_bytes());
        d[4] = 1;
        d[5..9].copy_from_slice(&(u32::try_from(i).unwrap() + 1).to_le_bytes());
        d[17..25].copy_from_slice(&(at as u64).to_le_bytes());
        d[25..33].copy_from_slice(&(bytes.len() as u64).to_le_bytes());
        d[0xc9..0xcd].copy_from_slice(&fs.to_le_bytes());
        d[0xcd..0xd1].copy_from_slice(&part.to_le_bytes());
        data.extend_from_slice(bytes);
        at += bytes.len();
    }
    [f, table, data].concat()
}

#[test]
fn each_container_is_told_by_its_magic() {
    assert_eq!(detect(b"hsqs\0\0\0\0"), Some(Kind::Squashfs));
    assert_eq!(detect(&sif(&[])), Some(Kind::Sif));
    let mut elf = b"\x7fELF\x02\x01\x01\0AI\x02".to_vec();
    elf.resize(64, 0);
    assert_eq!(detect(&elf), Some(Kind::AppImage));
    // An ELF file not marked as an AppImage is no package.
    elf[8] = 0;
    assert_eq!(detect(&elf), None);
}

#[test]
fn a_sif_hands_over_its_objects_and_refuses_what_it_cannot_read() {
    let def = b"Bootstrap: docker\n";
    let ext3 = [0u8; 16];
    let f = sif(&[(0x4001, 0, 0, def), (0x4004, 2, 2, &ext3)]);
    let mut r = Record::default();
    members(&f, Kind::Sif, &mut r).unwrap();
    let want = vec![
        (".sif/1.deffile".to_string(), true),
        (".sif/partition-2".to_string(), false),
    ];
    assert_eq!(r.0, want);
    // A squashfs partition that is no squashfs is an error, not nothing.
    let f = sif(&[(0x4004, 1, 2, b"not a squashfs at all")]);
    let e = members(&f, Kind::Sif, &mut Record::default()).unwrap_err();
    assert!(e.to_string().contains("superblock"), "{e}");
}

#[test]
fn lies_in_a_sif_are_errors() {
    let good = sif(&[(0x4001, 0, 0, b"abc")]);
    let said = |f: &[u8]| {
        members(f, Kind::Sif, &mut Record::default())
            .unwrap_err()
            .to_string()
    };
    assert!(said(&good[..100]).contains("cut short"));
    // An object past the end.
    let mut far = good.clone();
    far[4096 + 25..4096 + 33].copy_from_slice(&u64::MAX.to_le_bytes());
    assert!(
        said(&far).contains("reaches past its end"),
        "{}",
        said(&far)
    );
    // A descriptor count past the end, and a huge one.
    let mut many = good.clone();
    many[88..96].copy_from_slice(&40u64.to_le_bytes());
    assert!(said(&many).contains("descriptors"), "{}", said(&many));
    many[88..96].copy_from_slice(&u64::MAX.to_le_bytes());
    assert!(said(&many).contains("descriptors"), "{}", said(&many));
    let mut v2 = good;
    v2[42..44].copy_from_slice(b"02");
    assert!(said(&v2).contains("version"), "{}", said(&v2));
}

#[test]
fn an_appimage_without_its_squashfs_is_an_error() {
    // An ELF64 header whose section headers end at byte 64 + 2 * 64.
    let mut elf = b"\x7fELF\x02\x01\x01\0AI\x02".to_vec();
    elf.resize(64 + 128, 0);
    elf[0x28..0x30].copy_from_slice(&64u64.to_le_bytes());
    elf[0x3a..0x3c].copy_from_slice(&64u16.to_le_bytes());
    elf[0x3c..0x3e].copy_from_slice(&2u16.to_le_bytes());
    let e = members(&elf, Kind::AppImage, &mut Record::default()).unwrap_err();
    assert!(e.to_string().contains("byte 192"), "{e}");
    // With a (cut) squashfs there, the squashfs is read, and is the error.
    elf.extend_from_slice(b"hsqs");
    let e = members(&elf, Kind::AppImage, &mut Record::default()).unwrap_err();
    assert!(e.to_string().contains("superblock is cut short"), "{e}");
}
