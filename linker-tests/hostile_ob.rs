//! Hostile OffloadBinaries (issue #24): a compressed binary of a few
//! hundred kilobytes whose image inflates to 3 GiB, binaries nested in each
//! other that fan out, zlib data with bytes after its end. Every input is
//! made here, and every command runs under a time limit with its peak
//! memory measured ([`ours_peak`]): the image is streamed to where it goes,
//! never held in memory, and one budget per command stops a bomb at once.

use std::io::Write;
use std::path::Path;

use libtest_mimic::{Failed, Trial};
use offload_kit::offload_binary::{
    Compression, ImageKind, ImageSpec, OffloadKind, Version, compress, layout,
};

use crate::util::{Run, ours_as, ours_peak, peak_of, said_once, tempdir};

/// The image of the bomb: 3 GiB of zeros.
const BIG: u64 = 3 << 30;
/// The image of the bomb the commands write out: 1 GiB of zeros. A 3 GiB
/// one is written in the same memory, but takes 6 s on a quiet machine
/// (most of it the kernel's page cache), too long for every CI run.
const WRITTEN: u64 = 1 << 30;
/// Most memory any command may take, in KiB.
const PEAK_KIB: u64 = 256 << 10;
/// The environment variable that raises the drop-ins' budget.
const ENV: &str = "OFFLOAD_KIT_MAX_UNCOMPRESSED";

pub fn tests() -> Vec<Trial> {
        vec![
        trial!(list_of_a_3_gib_image_streams_it, &["/usr/bin/python3"]),
        trial!(unpack_writes_a_1_gib_image_in_bounded_memory, &["/usr/bin/python3"]),
        trial!(packager_extracts_a_1_gib_image_in_bounded_memory, &["/usr/bin/python3"]),
        trial!(
            linker_wrapper_streams_a_1_gib_image_to_its_temporary_file,
            &["/usr/bin/python3", "clang"],
        ),
        trial!(nested_fan_out_ends_at_the_command_budget, &["/usr/bin/python3"]),
        trial!(nesting_too_deep_is_one_error, &["/usr/bin/python3"]),
        trial!(bytes_after_the_compressed_stream_are_an_error, &["/usr/bin/python3"]),
        trial!(list_of_damaged_data_exits_2, &["/usr/bin/python3"]),
        trial!(scanners_of_a_3_gib_image_stream_it, &["/usr/bin/python3"]),
    ]
}

/// What an image holds: zeros, or given bytes.
enum Content<'a> {
    Zeros(u64),
    Bytes(&'a [u8]),
}

fn spec(size: u64, kind: ImageKind) -> ImageSpec {
    ImageSpec {
        image_kind: kind,
        offload_kind: OffloadKind::OFK_OpenMP,
        flags: 0,
        strings: vec![
            (b"triple".to_vec(), b"x86_64-unknown-linux-gnu".to_vec()),
            (b"arch".to_vec(), b"generic".to_vec()),
        ],
        size,
    }
}

/// A compressed (zstd) version 3 OffloadBinary holding `images`, made
/// without ever holding it uncompressed: its tables, then each image,
/// written into the encoder. 3 GiB of zeros make about 100 KB.
fn compressed(images: &[(Content<'_>, ImageKind)]) -> Vec<u8> {
    let specs: Vec<ImageSpec> = images
        .iter()
        .map(|(c, kind)| {
            let size = match c {
                Content::Zeros(n) => *n,
                Content::Bytes(b) => b.len() as u64,
            };
            spec(size, *kind)
        })
        .collect();
    let layout = layout(&specs, Version::V3).unwrap();
    let mut enc = zstd::stream::write::Encoder::new(Vec::new(), 3).unwrap();
    let mut header = Vec::new();
    let zeros = vec![0u8; 1 << 20];
    let write_zeros = |enc: &mut zstd::stream::write::Encoder<'_, Vec<u8>>, mut n: u64| {
        while n > 0 {
            let k = n.min(zeros.len() as u64) as usize;
            enc.write_all(&zeros[..k]).unwrap();
            n -= k as u64;
        }
    };
    for piece in &layout.pieces {
        match piece {
            offload_kit::Piece::Bytes(b) if header.is_empty() => {
                // The 40-byte header stays uncompressed.
                header = b[..40].to_vec();
                enc.write_all(&b[40..]).unwrap();
            }
            offload_kit::Piece::Bytes(b) => enc.write_all(b).unwrap(),
            offload_kit::Piece::Zeros(n) => write_zeros(&mut enc, *n),
            offload_kit::Piece::Image(i) => match &images[*i].0 {
                Content::Zeros(n) => write_zeros(&mut enc, *n),
                Content::Bytes(b) => enc.write_all(b).unwrap(),
            },
        }
    }
    let body = enc.finish().unwrap();
    let mut out = header;
    out[8..16].copy_from_slice(&(40 + body.len() as u64).to_le_bytes());
    out[32..40].copy_from_slice(&layout.size.to_le_bytes());
    out.extend_from_slice(&body);
    out.resize(out.len().div_ceil(8) * 8, 0);
    out
}

/// The bomb: one image of `size` zeros in a compressed binary.
fn bomb(size: u64) -> Vec<u8> {
    compressed(&[(Content::Zeros(size), ImageKind::IMG_Object)])
}

/// Fails unless `r` ran in less than [`PEAK_KIB`].
fn bounded(what: &str, r: &Run, kib: u64) -> Result<(), Failed> {
    if kib >= PEAK_KIB {
        return Err(format!(
            "{what}: peak RSS {kib} KiB (at most {PEAK_KIB}): {}",
            r.stderr
        )
        .into());
    }
    eprintln!("{what}: peak RSS {} MiB", kib >> 10);
    Ok(())
}

/// Fails unless `r` failed with exit code `code` and one error line (and
/// notes) that names `file` and says `limit`.
fn limit_error(what: &str, r: &Run, code: i32, file: &str, limit: &str) -> Result<(), Failed> {
    crate::util::clean_failure_code(what, r, file, code)?;
    let first = r.stderr.lines().next().unwrap_or_default();
    if !first.contains(file) || !first.contains(limit) {
        return Err(format!(
            "{what}: want an error naming {file} and '{limit}': {}",
            r.stderr
        )
        .into());
    }
    Ok(())
}

/// The limit error of the default budget for a 100 KB file: 128 MiB.
const DEFAULT_LIMIT: &str = "over this command's limit of 134217728 bytes decompressed";

fn list_of_a_3_gib_image_streams_it() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    let bin = bomb(BIG);
    eprintln!("3 GiB bomb: {} bytes", bin.len());
    std::fs::write(d.join("bomb.bin"), &bin)?;
    let (r, kib) = ours_peak(5, &["list", "bomb.bin"], d)?;
    limit_error("list", &r, 2, "bomb.bin", DEFAULT_LIMIT)?;
    bounded("list (default budget)", &r, kib)?;
    if !r.stderr.contains("--max-uncompressed") {
        return Err(format!("list: no word of --max-uncompressed: {}", r.stderr).into());
    }
    let args = ["list", "--max-uncompressed", "4G", "bomb.bin"];
    let t = std::time::Instant::now();
    let (r, kib) = ours_peak(60, &args, d)?;
    eprintln!(
        "list --max-uncompressed 4G: {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let r = r.ok()?;
    bounded("list --max-uncompressed 4G", &r, kib)?;
    let out = String::from_utf8_lossy(&r.stdout);
    if !out.contains(&BIG.to_string()) || !out.contains("x86_64-unknown-linux-gnu") {
        return Err(format!("list: no row of the 3 GiB image: {out}").into());
    }
    // A budget of less than the image: refused before anything is inflated.
    let args = ["list", "--max-uncompressed", "3G", "bomb.bin"];
    let (r, kib) = ours_peak(5, &args, d)?;
    limit_error(
        "list --max-uncompressed 3G",
        &r,
        2,
        "bomb.bin",
        "limit of 3221225472",
    )?;
    bounded("list --max-uncompressed 3G", &r, kib)
}

/// Fails unless `path` holds `size` zero bytes (its start and its end
/// read, the size from its metadata).
fn zeros_file(path: &Path, size: u64) -> Result<(), Failed> {
    use std::io::{Read, Seek, SeekFrom};
    let mut f = std::fs::File::open(path)?;
    let len = f.metadata()?.len();
    if len != size {
        return Err(format!("{}: {len} bytes, want {size}", path.display()).into());
    }
    let mut buf = vec![0u8; 1 << 20];
    f.read_exact(&mut buf)?;
    f.seek(SeekFrom::End(-(1 << 20)))?;
    let mut end = vec![0u8; 1 << 20];
    f.read_exact(&mut end)?;
    if buf.iter().chain(&end).any(|&b| b != 0) {
        return Err(format!("{}: not zeros", path.display()).into());
    }
    Ok(())
}

fn unpack_writes_a_1_gib_image_in_bounded_memory() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    std::fs::write(d.join("bomb.bin"), bomb(WRITTEN))?;
    let (r, kib) = ours_peak(5, &["unpack", "bomb.bin", "-o", "out"], d)?;
    limit_error("unpack", &r, 1, "bomb.bin", DEFAULT_LIMIT)?;
    bounded("unpack (default budget)", &r, kib)?;
    if d.join("out")
        .read_dir()
        .is_ok_and(|mut e| e.next().is_some())
    {
        return Err("unpack wrote files past its budget".into());
    }
    let args = [
        "unpack",
        "--max-uncompressed",
        "4G",
        "bomb.bin",
        "-o",
        "out",
    ];
    let t = std::time::Instant::now();
    let (r, kib) = ours_peak(120, &args, d)?;
    eprintln!(
        "unpack --max-uncompressed 4G: {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let r = r.ok()?;
    bounded("unpack --max-uncompressed 4G", &r, kib)?;
    zeros_file(
        &d.join("out/bomb-x86_64-unknown-linux-gnu-generic.0.o"),
        WRITTEN,
    )
}

fn packager_extracts_a_1_gib_image_in_bounded_memory() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    std::fs::write(d.join("bomb.bin"), bomb(WRITTEN))?;
    let tool = ours_as("llvm-offload-binary");
    let (r, kib) = peak_of(5, &tool, &["bomb.bin"], &[], d)?;
    limit_error("llvm-offload-binary", &r, 1, "bomb.bin", DEFAULT_LIMIT)?;
    bounded("llvm-offload-binary (default budget)", &r, kib)?;
    if !r.stderr.contains(ENV) {
        return Err(format!("llvm-offload-binary: no word of {ENV}: {}", r.stderr).into());
    }
    let t = std::time::Instant::now();
    let (r, kib) = peak_of(120, &tool, &["bomb.bin"], &[(ENV, "4G")], d)?;
    eprintln!(
        "llvm-offload-binary ({ENV}=4G): {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let r = r.ok()?;
    bounded("llvm-offload-binary", &r, kib)?;
    let file = "bomb-x86_64-unknown-linux-gnu-generic.0.o";
    if String::from_utf8_lossy(&r.stdout).trim() != format!("Extracted: {file}") {
        return Err(format!("llvm-offload-binary: {:?}", r.stdout).into());
    }
    zeros_file(&d.join(file), WRITTEN)?;
    std::fs::remove_file(d.join(file))?;
    // With a filter, to a named file.
    let args = ["bomb.bin", "--image=file=x.o,arch=generic"];
    let (r, kib) = peak_of(120, &tool, &args, &[(ENV, "4G")], d)?;
    let r = r.ok()?;
    bounded("llvm-offload-binary --image=file=x.o", &r, kib)?;
    zeros_file(&d.join("x.o"), WRITTEN)
}

/// A relocatable x86-64 ELF object whose `.llvm.offloading` section
/// (`SHT_LLVM_OFFLOADING`) holds `data`, as clang makes them.
fn host_object(data: &[u8]) -> Vec<u8> {
    use object::write::Object;
    use object::{Architecture, BinaryFormat, Endianness, SectionFlags, SectionKind, elf};
    let mut obj = Object::new(BinaryFormat::Elf, Architecture::X86_64, Endianness::Little);
    let s = obj.add_section(
        Vec::new(),
        b".llvm.offloading".to_vec(),
        SectionKind::Metadata,
    );
    obj.section_mut(s).flags = SectionFlags::Elf {
        sh_type: elf::SectionType(0x6fff_4c0b),
        sh_flags: elf::SHF_EXCLUDE,
    };
    obj.append_section_data(s, data, 8);
    obj.write().unwrap()
}

fn linker_wrapper_streams_a_1_gib_image_to_its_temporary_file() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    std::fs::write(d.join("host.o"), host_object(&bomb(WRITTEN)))?;
    let tool = ours_as("clang-linker-wrapper");
    let args = [
        "--dry-run",
        "--host-triple=x86_64-pc-linux-gnu",
        "--linker-path=/usr/bin/ld",
        "-o",
        "out",
        "host.o",
    ];
    let (r, kib) = peak_of(5, &tool, &args, &[], d)?;
    limit_error("clang-linker-wrapper", &r, 1, "host.o", DEFAULT_LIMIT)?;
    bounded("clang-linker-wrapper (default budget)", &r, kib)?;
    // Its temporary files beside it, to be sure they are gone after.
    let tmp = d.join("tmp");
    std::fs::create_dir(&tmp)?;
    let tmp_s = tmp.to_string_lossy().into_owned();
    let t = std::time::Instant::now();
    let env = [(ENV, "4G"), ("TMPDIR", tmp_s.as_str())];
    let (r, kib) = peak_of(120, &tool, &args, &env, d)?;
    eprintln!(
        "clang-linker-wrapper --dry-run ({ENV}=4G): {:.1} s",
        t.elapsed().as_secs_f64()
    );
    let r = r.ok()?;
    bounded("clang-linker-wrapper --dry-run", &r, kib)?;
    // The device link it would run takes the extracted image.
    if !r.stderr.contains("host-x86_64-unknown-linux-gnu-generic-") {
        return Err(format!(
            "clang-linker-wrapper: no device link of the image: {}",
            r.stderr
        )
        .into());
    }
    if tmp.read_dir()?.next().is_some() {
        return Err("clang-linker-wrapper left temporary files".into());
    }
    Ok(())
}

/// Binaries nested `levels` deep, each holding `fan` copies of the one
/// inside (the innermost holds one small object): tiny compressed, as zstd
/// finds the copies, but `fan`^`levels` images in all.
fn nested(levels: u32, fan: usize) -> Vec<u8> {
    let mut inner = compressed(&[(Content::Bytes(b"\x7fELF"), ImageKind::IMG_Object)]);
    for _ in 0..levels {
        let images: Vec<(Content<'_>, ImageKind)> = (0..fan)
            .map(|_| (Content::Bytes(&inner), ImageKind::IMG_None))
            .collect();
        inner = compressed(&images);
    }
    inner
}

fn nested_fan_out_ends_at_the_command_budget() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    let bin = nested(14, 4);
    eprintln!("fan-out: {} bytes", bin.len());
    std::fs::write(d.join("fan.bin"), &bin)?;
    let ours = crate::util::ours();
    let t = std::time::Instant::now();
    let (r, kib) = ours_peak(20, &["list", "fan.bin"], d)?;
    eprintln!("list fan.bin: {:.1} s", t.elapsed().as_secs_f64());
    limit_error("list", &r, 2, "fan.bin", "over this command's limit of")?;
    bounded("list fan.bin", &r, kib)?;
    let t = std::time::Instant::now();
    let tool = ours_as("llvm-offload-binary");
    let (r, kib) = peak_of(20, &tool, &["fan.bin"], &[], d)?;
    eprintln!(
        "llvm-offload-binary fan.bin: {:.1} s",
        t.elapsed().as_secs_f64()
    );
    limit_error(
        "llvm-offload-binary",
        &r,
        1,
        "fan.bin",
        "over this command's limit of",
    )?;
    bounded("llvm-offload-binary fan.bin", &r, kib)?;
    let left: Vec<_> = d.read_dir()?.collect();
    if left.len() != 1 {
        return Err(format!("llvm-offload-binary wrote files: {left:?}").into());
    }
    // A smaller fan-out is read whole: 4^5 images.
    std::fs::write(d.join("small.bin"), nested(5, 4))?;
    let r = crate::util::run(&ours, &["list", "small.bin"], d).ok()?;
    let rows = String::from_utf8_lossy(&r.stdout).lines().count();
    // A header, and the rows of every level: 4 + 16 + … + 4^5 + 4^5.
    let want = 1 + (1..=5).map(|k| 4usize.pow(k)).sum::<usize>() + 4usize.pow(5);
    if rows != want {
        return Err(format!("list small.bin: {rows} lines, want {want}").into());
    }
    Ok(())
}

fn nesting_too_deep_is_one_error() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    std::fs::write(d.join("deep.bin"), nested(20, 1))?;
    let ours = crate::util::ours();
    let limit = "over this command's limit of 16 levels";
    let (r, kib) = ours_peak(10, &["list", "deep.bin"], d)?;
    limit_error("list", &r, 2, "deep.bin", limit)?;
    bounded("list deep.bin", &r, kib)?;
    let tool = ours_as("llvm-offload-binary");
    let (r, kib) = peak_of(10, &tool, &["deep.bin"], &[], d)?;
    limit_error("llvm-offload-binary", &r, 1, "deep.bin", limit)?;
    bounded("llvm-offload-binary deep.bin", &r, kib)?;
    // 16 levels are read.
    std::fs::write(d.join("ok.bin"), nested(15, 1))?;
    crate::util::run(&ours, &["list", "ok.bin"], d).ok()?;
    crate::util::run(&tool, &["ok.bin"], d).ok()?;
    Ok(())
}

fn bytes_after_the_compressed_stream_are_an_error() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    let plain = {
        let specs = [spec(5, ImageKind::IMG_Object)];
        let mut v = Vec::new();
        layout(&specs, Version::V3)
            .unwrap()
            .write_to(&mut v, &[b"hello".as_slice()])
            .unwrap();
        v
    };
    let ours = crate::util::ours();
    let tool = ours_as("llvm-offload-binary");
    for (how, name) in [(Compression::Zlib, "zlib"), (Compression::Zstd, "zstd")] {
        let good = compress(&plain, how, 6).unwrap();
        std::fs::write(d.join(format!("{name}.bin")), &good)?;
        crate::util::run(&ours, &["list", &format!("{name}.bin")], d).ok()?;
        // Eight bytes of garbage after the stream, inside the binary.
        let stored = u64::from_le_bytes(good[8..16].try_into().unwrap()) as usize;
        let mut bad = good[..stored].to_vec();
        bad.extend_from_slice(b"GARBAGE!");
        bad[8..16].copy_from_slice(&(stored as u64 + 8).to_le_bytes());
        bad.resize(bad.len().div_ceil(8) * 8, 0);
        let file = format!("{name}-trailing.bin");
        std::fs::write(d.join(&file), &bad)?;
        let r = crate::util::run(&ours, &["list", &file], d);
        crate::util::clean_failure_code(&format!("list {file}"), &r, &file, 2)?;
        let r = crate::util::run(&tool, &[&file], d);
        crate::util::clean_failure(&format!("llvm-offload-binary {file}"), &r, &file)?;
        if name == "zlib" && !r.stderr.contains("after the end of the zlib stream") {
            return Err(format!("{file}: {}", r.stderr).into());
        }
    }
    Ok(())
}

/// `list` of a file without OffloadBinaries whose container the scanner
/// finds damaged (a CUDA fatbin whose size lies): an error line naming it,
/// exit 2 (it was 0).
fn list_of_damaged_data_exits_2() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    let mut fatbin = 0xBA55_ED50u32.to_le_bytes().to_vec();
    fatbin.extend(1u16.to_le_bytes());
    fatbin.extend(16u16.to_le_bytes());
    fatbin.extend(1000u64.to_le_bytes());
    fatbin.resize(80, 0);
    std::fs::write(d.join("lying.fatbin"), &fatbin)?;
    let r = crate::util::run(&crate::util::ours(), &["list", "lying.fatbin"], d);
    crate::util::clean_failure_code("list lying.fatbin", &r, "lying.fatbin", 2)?;
    if !r.stderr.contains("CUDA fatbin") {
        return Err(format!("list lying.fatbin: {}", r.stderr).into());
    }
    Ok(())
}

/// `inspect`, `size`, `check` and `extract` of the bomb: the default budget
/// (1024 times the file's size, at least 128 MiB) stops it with one error
/// naming the file and the option; a budget that allows it lists, hashes
/// and extracts the image streamed, in bounded memory.
fn scanners_of_a_3_gib_image_stream_it() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    std::fs::write(d.join("bomb.bin"), bomb(BIG))?;
    std::fs::write(d.join("written.bin"), bomb(WRITTEN))?;
    for args in [
        &["inspect", "--hash", "bomb.bin"][..],
        &["size", "bomb.bin"],
        &["check", "--require", "generic", "bomb.bin"],
        &["extract", "-o", "out", "bomb.bin"],
    ] {
        let (r, kib) = ours_peak(10, args, d)?;
        let what = format!("{args:?}");
        bounded(&what, &r, kib)?;
        if r.code != 2 {
            return Err(format!("{what}: exit {}: {}", r.code, r.stderr).into());
        }
        said_once(&r, "bomb.bin", "(--max-uncompressed").map_err(|e| format!("{what}: {e}"))?;
    }
    if d.join("out")
        .read_dir()
        .is_ok_and(|mut e| e.next().is_some())
    {
        return Err("extract wrote files past its budget".into());
    }
    // Allowed: listed from the tables, hashed as a stream, extracted.
    let (r, kib) = ours_peak(60, &["inspect", "--max-uncompressed", "4G", "bomb.bin"], d)?;
    let r = r.ok()?;
    bounded("inspect --max-uncompressed 4G", &r, kib)?;
    if !String::from_utf8_lossy(&r.stdout).contains(&BIG.to_string()) {
        return Err(format!(
            "inspect: no 3 GiB image: {}",
            String::from_utf8_lossy(&r.stdout)
        )
        .into());
    }
    let args = [
        "inspect",
        "--hash",
        "--max-uncompressed",
        "2G",
        "written.bin",
    ];
    let (r, kib) = ours_peak(60, &args, d)?;
    bounded("inspect --hash of 1 GiB", &r.ok()?, kib)?;
    let args = [
        "extract",
        "--max-uncompressed",
        "2G",
        "written.bin",
        "-o",
        "out",
    ];
    let (r, kib) = ours_peak(120, &args, d)?;
    let r = r.ok()?;
    bounded("extract --max-uncompressed 2G", &r, kib)?;
    let files: Vec<_> = d
        .join("out")
        .read_dir()?
        .flatten()
        .map(|e| e.path())
        .collect();
    match &files[..] {
        [one] => zeros_file(one, WRITTEN),
        _ => Err(format!("extract wrote {files:?}").into()),
    }
}
