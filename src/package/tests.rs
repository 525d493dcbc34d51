use super::*;

/// Records what the walk hands over.
#[derive(Default)]
struct Record(Vec<(String, std::result::Result<Vec<u8>, String>)>);

impl Members for Record {
    fn member(
        &mut self,
        path: &str,
        contents: std::result::Result<Contents<'_, '_>, String>,
    ) -> Result<()> {
        let got = contents.map(|c| match c {
            Contents::Stored(b) => b.to_vec(),
            Contents::Stream { reader, .. } | Contents::Unsized(reader) => {
                let mut v = Vec::new();
                reader.read_to_end(&mut v).map(|_| v).unwrap_or_default()
            }
        });
        self.0.push((path.to_string(), got));
        Ok(())
    }
}

fn tar_of(files: &[(&str, &[u8])]) -> Vec<u8> {
    let mut b = ::tar::Builder::new(Vec::new());
    for (name, data) in files {
        let mut h = ::tar::Header::new_ustar();
        h.set_size(data.len() as u64);
        h.set_mode(0o644);
        h.set_cksum();
        b.append_data(&mut h, name, *data).unwrap();
    }
    b.into_inner().unwrap()
}

#[test]
fn plain_tar_members_are_slices() {
    let t = tar_of(&[("a/one.so", b"ONE"), ("two", b"")]);
    assert_eq!(detect(&t), Some(Kind::Tar(Compression::None)));
    let mut r = Record::default();
    members(&t, Kind::Tar(Compression::None), &mut r).unwrap();
    assert_eq!(
        r.0,
        vec![
            ("a/one.so".to_string(), Ok(b"ONE".to_vec())),
            ("two".to_string(), Ok(Vec::new()))
        ]
    );
}

#[test]
fn compressed_tars_are_detected_and_streamed() {
    let t = tar_of(&[("x", b"payload")]);
    let gz = {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        io::Write::write_all(&mut e, &t).unwrap();
        e.finish().unwrap()
    };
    let zst = zstd::encode_all(&t[..], 1).unwrap();
    for (bytes, c) in [(gz, Compression::Gzip), (zst, Compression::Zstd)] {
        assert_eq!(detect(&bytes), Some(Kind::Tar(c)));
        let mut r = Record::default();
        members(&bytes, Kind::Tar(c), &mut r).unwrap();
        assert_eq!(r.0, vec![("x".to_string(), Ok(b"payload".to_vec()))]);
    }
}

/// `data` as one xz stream written in blocks of `block` bytes.
fn xz_blocks(data: &[u8], block: u64) -> Vec<u8> {
    let stream = liblzma::stream::MtStreamBuilder::new()
        .threads(2)
        .block_size(block)
        .preset(1)
        .encoder()
        .unwrap();
    let mut out = Vec::new();
    liblzma::read::XzEncoder::new_stream(data, stream)
        .read_to_end(&mut out)
        .unwrap();
    out
}

#[test]
fn xz_streams_in_blocks_and_one_after_another() {
    let big: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    let t = tar_of(&[("x", &big), ("y", b"2")]);
    let (a, b) = t.split_at(70_000);
    let mut two = xz_blocks(a, 16 << 10);
    assert!(two.len() > 12 + 12);
    two.extend_from_slice(&[0; 8]);
    two.extend_from_slice(&xz_blocks(b, 1 << 20));
    assert_eq!(detect(&two), Some(Kind::Tar(Compression::Xz)));
    let mut r = Record::default();
    members(&two, Kind::Tar(Compression::Xz), &mut r).unwrap();
    assert_eq!(
        r.0,
        vec![
            ("x".to_string(), Ok(big.clone())),
            ("y".to_string(), Ok(b"2".to_vec()))
        ]
    );
    // Padding that is no multiple of four, and bytes that are no
    // stream, after the first stream: errors.
    for bad in [&[0u8; 3][..], b"garbage!"] {
        let mut x = xz_blocks(a, 16 << 10);
        x.extend_from_slice(bad);
        x.extend_from_slice(&xz_blocks(b, 1 << 20));
        let mut r = Record::default();
        let read = members(&x, Kind::Tar(Compression::Xz), &mut r);
        let whole = r.0.first().is_some_and(|(_, got)| got.as_ref() == Ok(&big));
        assert!(read.is_err() || !whole, "{bad:?}");
    }
}

/// `data` compressed with `c` (gzip, xz, zstd, bzip2 or LZMA).
fn compress(data: &[u8], c: Compression) -> Vec<u8> {
    let mut out = Vec::new();
    match c {
        Compression::None => out.extend_from_slice(data),
        Compression::Gzip => {
            let mut e = flate2::write::GzEncoder::new(&mut out, flate2::Compression::fast());
            io::Write::write_all(&mut e, data).unwrap();
            e.finish().unwrap();
        }
        Compression::Xz => out = xz_blocks(data, 1 << 20),
        Compression::Zstd => out = zstd::encode_all(data, 1).unwrap(),
        Compression::Bzip2 => {
            bzip2::read::BzEncoder::new(data, bzip2::Compression::fast())
                .read_to_end(&mut out)
                .unwrap();
        }
        Compression::Lzma => {
            let o = liblzma::stream::LzmaOptions::new_preset(1).unwrap();
            let s = liblzma::stream::Stream::new_lzma_encoder(&o).unwrap();
            liblzma::read::XzEncoder::new_stream(data, s)
                .read_to_end(&mut out)
                .unwrap();
        }
        Compression::Lz4 => {
            let mut e = lz4_flex::frame::FrameEncoder::new(&mut out);
            io::Write::write_all(&mut e, data).unwrap();
            e.finish().unwrap();
        }
        Compression::Lzip => out = lzip(data),
    }
    out
}

const METHODS: [Compression; 7] = [
    Compression::Gzip,
    Compression::Xz,
    Compression::Zstd,
    Compression::Bzip2,
    Compression::Lzma,
    Compression::Lz4,
    Compression::Lzip,
];

/// `data` as one lzip member, as `lzip` writes it: `LZIP`, version 1,
/// the dictionary size (2^20), a raw LZMA stream (lc 3, lp 0, pb 2, with
/// its end marker), then the data's CRC-32, its size and the member's.
fn lzip(data: &[u8]) -> Vec<u8> {
    let mut o = liblzma::stream::LzmaOptions::new_preset(1).unwrap();
    o.dict_size(1 << 20)
        .literal_context_bits(3)
        .literal_position_bits(0)
        .position_bits(2);
    let mut f = liblzma::stream::Filters::new();
    f.lzma1(&o);
    let s = liblzma::stream::Stream::new_raw_encoder(&f).unwrap();
    let mut out = b"LZIP\x01\x14".to_vec();
    liblzma::read::XzEncoder::new_stream(data, s)
        .read_to_end(&mut out)
        .unwrap();
    out.extend_from_slice(&crc32fast::hash(data).to_le_bytes());
    out.extend_from_slice(&(data.len() as u64).to_le_bytes());
    let member = out.len() as u64 + 8;
    out.extend_from_slice(&member.to_le_bytes());
    out
}

/// A zstd or LZ4 tar that starts with a skippable frame (`pzstd` writes
/// one first) is the compressed tar it is, not bytes without a package.
#[test]
fn skippable_frames_first_are_passed_over() {
    let t = tar_of(&[("lib/a.so", b"device code")]);
    for c in [Compression::Zstd, Compression::Lz4] {
        let mut bytes = vec![0x50, 0x2a, 0x4d, 0x18, 4, 0, 0, 0, 1, 2, 3, 4];
        bytes.extend(compress(&t, c));
        assert_eq!(detect(&bytes), Some(Kind::Tar(c)), "{c:?}");
        let mut r = Record::default();
        members(&bytes, Kind::Tar(c), &mut r).unwrap();
        assert_eq!(
            r.0,
            vec![("lib/a.so".to_string(), Ok(b"device code".to_vec()))]
        );
    }
}

/// Two lzip members read as one stream; bytes after the last member are
/// an error, as are a member whose CRC-32 does not match.
#[test]
fn lzip_members_are_read_one_after_another() {
    let mut two = lzip(b"one, ");
    two.extend(lzip(b"two"));
    let mut got = Vec::new();
    decoder(&two, Compression::Lzip)
        .and_then(|mut r| r.read_to_end(&mut got))
        .unwrap();
    assert_eq!(got, b"one, two");
    let mut trailing = two.clone();
    trailing.extend_from_slice(b"junk");
    let read = decoder(&trailing, Compression::Lzip).and_then(|mut r| r.read_to_end(&mut got));
    assert!(read.is_err());
    let mut bad_crc = lzip(b"one");
    let at = bad_crc.len() - 20;
    bad_crc[at] ^= 1;
    let read = decoder(&bad_crc, Compression::Lzip).and_then(|mut r| r.read_to_end(&mut got));
    assert!(read.is_err());
}

#[test]
fn every_method_gives_a_tar_or_a_compressed_file() {
    let t = tar_of(&[("lib/a.so", b"device code")]);
    let file: Vec<u8> = (0..70_000u32).map(|i| (i % 253) as u8).collect();
    for c in METHODS {
        let packed = compress(&t, c);
        assert_eq!(detect(&packed), Some(Kind::Tar(c)), "{c:?}");
        let mut r = Record::default();
        members(&packed, Kind::Tar(c), &mut r).unwrap();
        assert_eq!(
            r.0,
            vec![("lib/a.so".to_string(), Ok(b"device code".to_vec()))]
        );

        let one = compress(&file, c);
        assert_eq!(detect(&one), Some(Kind::Compressed(c)), "{c:?}");
        let mut r = Record::default();
        members(&one, Kind::Compressed(c), &mut r).unwrap();
        assert_eq!(r.0, vec![(String::new(), Ok(file.clone()))], "{c:?}");
    }
}

#[test]
fn a_damaged_compressed_file_is_an_error_not_a_short_member() {
    let file: Vec<u8> = (0..70_000u32).map(|i| (i * 7 % 251) as u8).collect();
    for c in METHODS {
        let mut bad = compress(&file, c);
        let cut = bad.len() * 2 / 3;
        bad.truncate(cut);
        let mut got = Vec::new();
        let read = decoder(&bad, c).and_then(|mut r| r.read_to_end(&mut got));
        assert!(
            read.is_err(),
            "{c:?}: a cut stream read as {} bytes",
            got.len()
        );
    }
}

#[test]
fn lzma_headers_are_told_from_other_bytes() {
    let lz = compress(b"x", Compression::Lzma);
    assert_eq!(compression_of(&lz), Some(Compression::Lzma));
    // Bytes that start like other files are not LZMA.
    for other in [
        &b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0"[..],
        b"BC\xc0\xde5\x14\0\0\x05\0\0\0b\x0c0$",
        b"\xde\xc0\x17\x0b\0\0\0\0\x14\0\0\0\0\0\0\0",
        b"\x03\x02\x23\x07\0\0\x01\0\0\0\0\0\0\0",
        &[0u8; 16],
    ] {
        assert_eq!(compression_of(other), None, "{other:?}");
    }
    // A header asking for a dictionary no encoder writes, or a
    // nonzero first range coder byte.
    let mut odd = lz.clone();
    odd[1..5].copy_from_slice(&0x0012_3456u32.to_le_bytes());
    assert_eq!(compression_of(&odd), None);
    let mut first = lz.clone();
    first[13] = 1;
    assert_eq!(compression_of(&first), None);
    // LZMA-looking bytes that do not decode are no package at all.
    let mut fake = lz[..13].to_vec();
    fake.extend_from_slice(&[0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]);
    fake.extend_from_slice(&[0xa5; 600]);
    assert_eq!(detect(&fake), None);
}

/// A cpio entry in the `newc` format (`odc`: the octal one).
fn cpio_entry(out: &mut Vec<u8>, name: &str, mode: u32, data: &[u8], odc: bool) {
    let namesize = name.len() + 1;
    if odc {
        out.extend_from_slice(
            format!(
                "070707{:06o}{:06o}{:06o}{:06o}{:06o}{:06o}{:06o}{:011o}{:06o}{:011o}",
                0,
                1,
                mode,
                0,
                0,
                1,
                0,
                0,
                namesize,
                data.len()
            )
            .as_bytes(),
        );
    } else {
        out.extend_from_slice(
            format!(
                "070701{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}{:08x}",
                1, mode, 0, 0, 1, 0, data.len(), 0, 0, 0, 0, namesize, 0
            )
            .as_bytes(),
        );
    }
    out.extend_from_slice(name.as_bytes());
    out.push(0);
    let pad = |v: &mut Vec<u8>| {
        while !odc && !v.len().is_multiple_of(4) {
            v.push(0);
        }
    };
    pad(out);
    out.extend_from_slice(data);
    pad(out);
}

#[test]
fn cpio_archives_hand_over_their_regular_files() {
    for odc in [false, true] {
        let mut a = Vec::new();
        cpio_entry(&mut a, "lib", 0o040_755, b"", odc);
        cpio_entry(&mut a, "./lib/a.so", 0o100_644, b"device code!", odc);
        cpio_entry(&mut a, "lib/link", 0o120_777, b"a.so", odc);
        cpio_entry(&mut a, "TRAILER!!!", 0, b"", odc);
        assert_eq!(detect(&a), Some(Kind::Cpio));
        let mut r = Record::default();
        members(&a, Kind::Cpio, &mut r).unwrap();
        assert_eq!(
            r.0,
            vec![("lib/a.so".to_string(), Ok(b"device code!".to_vec()))]
        );
        // Cut anywhere before the trailer, or with a size that lies: an
        // error, never a short archive.
        for cut in [5, 60, a.len() - 20] {
            let mut r = Record::default();
            assert!(
                members(&a[..cut], Kind::Cpio, &mut r).is_err(),
                "{odc} {cut}"
            );
        }
        let mut lie = a.clone();
        // The second entry's file size.
        let at = if odc { 80 + 65 } else { 116 + 54 };
        let first = lie.iter().skip(at).position(|&b| b != b'0').unwrap() + at;
        lie[first] = b'f';
        let mut r = Record::default();
        assert!(members(&lie, Kind::Cpio, &mut r).is_err(), "{odc}");
    }
}

#[test]
fn a_compressed_file_s_member_is_named_without_the_suffix() {
    assert_eq!(decompressed_name("lib/libfoo.so.gz"), "libfoo.so");
    assert_eq!(
        decompressed_name("pkg.whl!/a/libfoo.so.12.zst"),
        "libfoo.so.12"
    );
    assert_eq!(decompressed_name("x.bz2"), "x");
    assert_eq!(decompressed_name("data.lzma"), "data");
    assert_eq!(decompressed_name("stdin"), "stdin");
    assert_eq!(decompressed_name(".gz"), ".gz");
}

#[test]
fn not_packages() {
    assert_eq!(detect(b""), None);
    assert_eq!(detect(b"\x7fELF\x02\x01\x01"), None);
    assert_eq!(detect(b"!<arch>\nfoo.o/          "), None);
    // A block with the magic but a wrong checksum.
    let mut t = tar_of(&[("x", b"1")]);
    t[148] = b'7';
    assert_eq!(detect(&t), None);
}

#[test]
fn truncated_compressed_tar_is_an_error() {
    let t = tar_of(&[("x", &[1u8; 5000]), ("y", b"2")]);
    let zst = zstd::encode_all(&t[..], 1).unwrap();
    let cut = &zst[..zst.len() / 2];
    assert_eq!(detect(cut), Some(Kind::Tar(Compression::Zstd)));
    let mut r = Record::default();
    assert!(members(cut, Kind::Tar(Compression::Zstd), &mut r).is_err());
}

#[test]
fn zip_members_stored_and_deflated() {
    let mut w = zip::ZipWriter::new(io::Cursor::new(Vec::new()));
    let stored =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    let deflated = zip::write::SimpleFileOptions::default()
        .compression_method(zip::CompressionMethod::Deflated);
    w.add_directory("lib/", stored).unwrap();
    w.start_file("lib/a.so", stored).unwrap();
    io::Write::write_all(&mut w, b"stored bytes").unwrap();
    w.start_file("lib/b.so", deflated).unwrap();
    io::Write::write_all(&mut w, &[9u8; 4000]).unwrap();
    let z = w.finish().unwrap().into_inner();
    assert_eq!(detect(&z), Some(Kind::Zip));
    let mut r = Record::default();
    members(&z, Kind::Zip, &mut r).unwrap();
    assert_eq!(
        r.0,
        vec![
            ("lib/a.so".to_string(), Ok(b"stored bytes".to_vec())),
            ("lib/b.so".to_string(), Ok(vec![9u8; 4000]))
        ]
    );
}

#[test]
fn corrupt_zip_is_an_error() {
    let mut r = Record::default();
    let e = members(b"PK\x03\x04garbage", Kind::Zip, &mut r).unwrap_err();
    assert!(e.to_string().starts_with("invalid zip archive: "), "{e}");
}

/// Takes each member and reads none of it.
struct Lazy;

impl Members for Lazy {
    fn member(&mut self, _: &str, _: std::result::Result<Contents<'_, '_>, String>) -> Result<()> {
        Ok(())
    }
}

#[test]
fn checksums_are_verified_whatever_the_receiver_reads() {
    // A gzip trailer's CRC-32, past the tar archive's end blocks.
    let mut gz = compress(&tar_of(&[("x", b"payload")]), Compression::Gzip);
    members(&gz, Kind::Tar(Compression::Gzip), &mut Lazy).unwrap();
    let n = gz.len();
    gz[n - 8] ^= 1;
    let e = members(&gz, Kind::Tar(Compression::Gzip), &mut Lazy).unwrap_err();
    assert!(e.to_string().contains("checksum"), "{e}");
    // One compressed file, read by no one.
    let mut one = compress(b"a file", Compression::Gzip);
    let n = one.len();
    one[n - 8] ^= 1;
    assert!(members(&one, Kind::Compressed(Compression::Gzip), &mut Lazy).is_err());
    // A zip member's CRC-32 (in the central directory, which the reader
    // goes by), stored or deflated.
    for method in [
        zip::CompressionMethod::Stored,
        zip::CompressionMethod::Deflated,
    ] {
        let mut w = zip::ZipWriter::new(io::Cursor::new(Vec::new()));
        let o = zip::write::SimpleFileOptions::default().compression_method(method);
        w.start_file("lib/a.txt", o).unwrap();
        io::Write::write_all(&mut w, &[7u8; 300]).unwrap();
        let mut z = w.finish().unwrap().into_inner();
        members(&z, Kind::Zip, &mut Lazy).unwrap();
        for (sig, at) in [(&b"PK\x03\x04"[..], 14), (&b"PK\x01\x02"[..], 16)] {
            let i = z.windows(4).position(|w| w == sig).unwrap();
            z[i + at] ^= 1;
        }
        let e = members(&z, Kind::Zip, &mut Lazy).unwrap_err();
        assert!(
            e.to_string()
                .contains("member 'lib/a.txt': its bytes do not match its CRC-32"),
            "{method:?}: {e}"
        );
    }
}

#[test]
fn help_lists_every_kind_and_method_read() {
    let help = super::formats();
    for (c, _) in super::compression::METHODS {
        assert!(help.contains(c.name()), "{help}");
    }
    for what in ["zip", "Debian", "tar", "cpio", "single compressed"] {
        assert!(help.contains(what), "{help}");
    }
}

#[test]
fn each_kind_takes_the_article_it_is_said_with() {
    let said = |k: Kind| format!("{} {k}", k.article());
    assert_eq!(said(Kind::Rpm), "an RPM package");
    assert_eq!(
        said(Kind::Tar(Compression::Xz)),
        "an xz-compressed tar archive"
    );
    assert_eq!(
        said(Kind::Compressed(Compression::Lzma)),
        "an LZMA-compressed file"
    );
    assert_eq!(
        said(Kind::Tar(Compression::Gzip)),
        "a gzip-compressed tar archive"
    );
    assert_eq!(said(Kind::Deb), "a Debian package");
    assert_eq!(said(Kind::Zip), "a zip archive");
}
