//! Formats the scanners recognise by their magic but do not read
//! ([`UNREAD_FORMATS`]): packages, disc and file-system images and
//! compressed files that may well hold CUDA or HIP libraries. A file, or a
//! package's member, of one of them is never taken for a file without
//! device code: the scanner commands report it as unread (exit 2, or
//! listed as unread in a walked tree) and prune refuses it by name.
//!
//! One table, so that a format that becomes readable leaves it by the
//! removal of its row (the tests iterate the same table).

/// A format the scanners recognise but do not read: its magic, where the
/// magic lies, and its name in words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UnreadFormat {
    /// The bytes that tell the format.
    pub magic: &'static [u8],
    /// Where they lie, from the file's first byte.
    pub offset: usize,
    /// What the format is, as a message says it ("a squashfs image").
    pub name: &'static str,
}

impl UnreadFormat {
    /// Why a file of this format is not read, as reports say it.
    pub fn why(&self) -> String {
        format!(
            "it is {}, a format offload-kit does not read: whether it holds device code is not \
             known",
            self.name
        )
    }
}

/// Every format the scanners recognise and do not read, by magic at a
/// fixed offset (for makeself's `.run` installers: the first two lines of
/// the script it writes). A file that starts as an ELF, PE or Mach-O file, a
/// static archive or a device-code container is read as that, whatever
/// lies further on, unless a row's magic starts with that format's own (an
/// AppImage: an ELF program whose identification bytes say a file system
/// follows it); packages the scanners read (zip, tar, `.deb`, RPM, cpio,
/// gzip, xz, zstd, bzip2, LZMA, LZ4 frames, lzip) are told before this
/// table is asked.
pub const UNREAD_FORMATS: &[UnreadFormat] = &[
    // squashfs in the big-endian byte order (the little-endian one, and
    // SIF images and AppImages of type 2 around it, are read:
    // package::squashfs).
    row(b"sqsh", 0, "a squashfs image (big-endian)"),
    // Singularity 2's images: a launch line, then an ext3 or squashfs
    // file system (a SIF file starts with the same line, and is told as
    // SIF by its magic before this table is asked).
    row(
        b"#!/usr/bin/env run-singularity\n",
        0,
        "a Singularity 2 image",
    ),
    // AppImages of type 1: the ELF runtime (64- or 32-bit, little-endian)
    // whose identification bytes 8 to 10 are "AI" and 1: an ISO 9660 image
    // follows it.
    row(
        b"\x7fELF\x02\x01\x01\x00AI\x01",
        0,
        "an AppImage (ISO 9660)",
    ),
    row(
        b"\x7fELF\x01\x01\x01\x00AI\x01",
        0,
        "an AppImage (ISO 9660)",
    ),
    // EROFS, the read-only file system of Android and of some container
    // image stores: its superblock at 1 KiB.
    row(&[0xe2, 0xe1, 0xf5, 0xe0], 1024, "an EROFS image"),
    // cramfs, both byte orders.
    row(&[0x45, 0x3d, 0xcd, 0x28], 0, "a cramfs image"),
    row(&[0x28, 0xcd, 0x3d, 0x45], 0, "a cramfs image (big-endian)"),
    // LZ4 frames and lzip are read (package::Compression); the legacy
    // LZ4 format, which has no end mark to tell a cut file by, is not.
    row(
        &[0x02, 0x21, 0x4c, 0x18],
        0,
        "an LZ4-compressed file (legacy format)",
    ),
    row(b"7z\xbc\xaf\x27\x1c", 0, "a 7-Zip archive"),
    row(b"\x89LZO\x00\r\n\x1a\n", 0, "an lzop-compressed file"),
    row(&[0x1f, 0x9d], 0, "a compress (.Z) file"),
    row(b"xar!", 0, "a xar archive"),
    row(b"Rar!\x1a\x07", 0, "a RAR archive"),
    row(b"LRZI", 0, "an lrzip-compressed file"),
    row(b"MSWIM\0\0\0", 0, "a Windows imaging (.wim) file"),
    row(b"MSCF\0\0\0\0", 0, "a Microsoft cabinet (.cab)"),
    // ISO 9660: the primary volume descriptor of the 17th sector.
    row(b"CD001", 0x8001, "an ISO 9660 disc image"),
    // makeself's self-extracting archives (NVIDIA's `cuda_*_linux.run`
    // installers): a shell script whose second line names makeself, its
    // compressed tar after the script's lines.
    row(
        b"#!/bin/sh\n# This script was generated using Makeself",
        0,
        "a makeself self-extracting archive (.run installer)",
    ),
    row(
        b"#!/bin/bash\n# This script was generated using Makeself",
        0,
        "a makeself self-extracting archive (.run installer)",
    ),
];

/// A row of [`UNREAD_FORMATS`].
const fn row(magic: &'static [u8], offset: usize, name: &'static str) -> UnreadFormat {
    UnreadFormat {
        magic,
        offset,
        name,
    }
}

/// How many bytes from a file's start [`unread_format`] may look at: the
/// end of the farthest magic of [`UNREAD_FORMATS`]. A caller that reads
/// only a file's head reads this much to tell them all.
pub const UNREAD_REACH: usize = {
    let mut reach = 0;
    let mut i = 0;
    while i < UNREAD_FORMATS.len() {
        let end = UNREAD_FORMATS[i].offset + UNREAD_FORMATS[i].magic.len();
        if end > reach {
            reach = end;
        }
        i += 1;
    }
    reach
};

/// The format of [`UNREAD_FORMATS`] `bytes` are, if any: its magic at its
/// offset. Bytes that start as a format the scan reads (an ELF, PE or
/// Mach-O file, a static archive, a device-code container) are none of
/// them, whatever lies further on. The caller tells the packages it reads
/// first.
pub fn unread_format(bytes: &[u8]) -> Option<&'static UnreadFormat> {
    const READ: &[&[u8]] = &[
        b"\x7fELF",
        b"MZ",
        b"!<arch>\n",
        b"!<thin>\n",
        &[0xcf, 0xfa, 0xed, 0xfe],
        &[0xce, 0xfa, 0xed, 0xfe],
        &[0xca, 0xfe, 0xba, 0xbe],
    ];
    if crate::package::is_sif(bytes) {
        // Read (package::sif), though it starts as Singularity 2's images do.
        return None;
    }
    let at = |f: &&UnreadFormat| {
        bytes
            .get(f.offset..)
            .is_some_and(|rest| rest.starts_with(f.magic))
    };
    // Rows that are a read format, told by more (an AppImage's runtime).
    let within_read = |f: &&UnreadFormat| READ.iter().any(|m| f.magic.starts_with(m));
    if let Some(f) = UNREAD_FORMATS.iter().filter(within_read).find(at) {
        return Some(f);
    }
    if READ.iter().any(|m| bytes.starts_with(m)) || super::magic::Magic::at_start(bytes).is_some() {
        return None;
    }
    UNREAD_FORMATS.iter().find(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_magic_counts_only_at_its_offset() {
        for f in UNREAD_FORMATS {
            let mut at = vec![0u8; f.offset];
            at.extend_from_slice(f.magic);
            at.extend_from_slice(&[0u8; 64]);
            assert_eq!(unread_format(&at), Some(f), "{}", f.name);
            // One byte later it is nothing.
            let mut later = vec![0u8; f.offset + 1];
            later.extend_from_slice(f.magic);
            if f.offset + 1 < UNREAD_REACH {
                assert_eq!(unread_format(&later), None, "{} one byte on", f.name);
            }
            // In an ELF file, at the same offset, it is the ELF file.
            let mut elf = at.clone();
            if elf.len() >= 4 && f.offset >= 4 {
                elf[..4].copy_from_slice(b"\x7fELF");
                assert_eq!(unread_format(&elf), None, "{} in an ELF file", f.name);
            }
        }
        const { assert!(UNREAD_REACH >= 0x8006) };
        assert_eq!(unread_format(b""), None);
    }

    /// The library's own scan never reads such a file as holding nothing:
    /// alone or as a static archive's member, its report says it was not
    /// read, is damaged, and `check` judges it unreadable, even with
    /// damage allowed (issue #71).
    #[test]
    fn the_scan_says_unread_and_check_never_passes_it() {
        use crate::scan::{Options, Requirements, Rule, Verdict, check, scan};
        let mut req = Requirements::default();
        req.forbid.push(Rule::parse("sm_50").unwrap());
        for f in UNREAD_FORMATS {
            let mut bytes = vec![0u8; f.offset];
            bytes.extend_from_slice(f.magic);
            bytes.extend(
                (0..4096u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13).to_le_bytes()[0]),
            );
            let mut ar = b"!<arch>\n".to_vec();
            ar.extend(
                format!(
                    "{:<16}{:<12}{:<6}{:<6}{:<8}{:<10}`\n",
                    "x.bin/",
                    0,
                    0,
                    0,
                    644,
                    bytes.len()
                )
                .bytes(),
            );
            ar.extend_from_slice(&bytes);
            for (what, data, member) in [
                ("alone", &bytes, None),
                ("in an archive", &ar, Some("x.bin")),
            ] {
                let r = scan(data, &Options::default());
                assert_eq!(r.unread, Some(*f), "{} {what}", f.name);
                assert!(r.damaged() && r.images.is_empty(), "{} {what}", f.name);
                let why = r.unread_why().unwrap();
                assert!(why.ends_with(&f.why()), "{why}");
                assert_eq!(why.starts_with("member 'x.bin'"), member.is_some(), "{why}");
                for allow_corrupt in [false, true] {
                    req.allow_corrupt = allow_corrupt;
                    let out = check([Ok(&r)], &req);
                    assert!(!out.passed(), "{} {what}", f.name);
                    assert!(
                        matches!(out.files[0], Verdict::Unreadable(_)),
                        "{} {what}",
                        f.name
                    );
                }
                let json = serde_json::to_value(&r).unwrap();
                assert_eq!(json["unread"], f.name, "{} {what}", f.name);
            }
        }
    }
}
