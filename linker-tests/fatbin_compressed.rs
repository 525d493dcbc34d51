//! Compressed CUDA fatbin entries: `extract` writes them decompressed,
//! `inspect --hash` hashes the decompressed bytes and `size` counts both
//! sizes. Two sources of fatbins:
//!
//! - written here, with LZ4 blocks (flag 0x2000) and zstd frames (flag
//!   0x8000) from the lz4_flex and zstd encoders, including corrupt and
//!   lying ones, which must fail with one line naming the file and leave no
//!   file behind;
//! - made by NVIDIA's own `fatbinary --compress-all` (CUDA 13.0, from the
//!   `nvidia-cuda-nvcc` wheel) from cubins `ptxas` compiled, bare and in a
//!   host object's `.nv_fatbin`, in every `--compress-mode`: what `extract`
//!   writes equals what `cuobjdump -xelf all -xptx all` writes, byte for byte
//!   (PTX too: its text, without the NUL the entry stores after it);
//! - NVIDIA's own build of a library, `libnvjpeg.so.12` from the 5 MB
//!   `nvidia-nvjpeg-cu12` wheel, whose cubins are LZ4-compressed: every image
//!   `extract` writes is one `cuobjdump` writes, and the other way round.
//!
//! `scripts/cuda-tools.sh` (run by `scripts/setup.sh`) unpacks the NVIDIA
//! tools from their PyPI wheels.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::Path;

use libtest_mimic::{Failed, Trial};
use serde_json::Value;

use crate::util::{
    clean_failure_code, files, llvm, md5_hex, ours, ours_json as json, run, same, same_bytes,
    tempdir,
};

const PTXAS: &str = "/opt/offload-kit/cuda-tools/bin/ptxas";
const FATBINARY: &str = "/opt/offload-kit/cuda-tools/bin/fatbinary";
const CUOBJDUMP: &str = "/opt/offload-kit/cuda-tools/bin/cuobjdump";
/// NVIDIA's nvJPEG for CUDA 12 (nvidia-nvjpeg-cu12 12.4.0.76): its cubins
/// are stored LZ4-compressed.
const NVJPEG: &str = "/opt/offload-kit/cuda-tools/lib/libnvjpeg.so.12";

const KIND_PTX: u16 = 1;
const KIND_ELF: u16 = 2;
/// 64-bit, CUDA, Linux: what `fatbinary -64` sets.
const FLAGS: u64 = 0x11;
const LZ4: u64 = 0x2000;
const ZSTD: u64 = 0x8000;

pub fn tests() -> Vec<Trial> {
    vec![
        trial!(lz4_and_zstd_entries_written_here, &[]),
        trial!(corrupt_or_lying_entries_fail_cleanly, &[]),
        trial!(
            nvidia_fatbinary_against_cuobjdump,
            &[PTXAS, FATBINARY, CUOBJDUMP, "cc", "llvm-objcopy"],
        ),
        trial!(nvjpeg_library_against_cuobjdump, &[CUOBJDUMP, NVJPEG]),
    ]
}

/// One entry to write: kind, SM, flags, the stored payload, and the
/// declared decompressed size (for compressed entries).
struct Entry<'a> {
    kind: u16,
    sm: u32,
    flags: u64,
    payload: &'a [u8],
    decompressed: u64,
}

/// A fatbin container as `fatbinary` lays one out: a 16-byte header, then
/// per entry a 64-byte header and the payload padded to 8 bytes.
fn fatbin(entries: &[Entry<'_>]) -> Vec<u8> {
    let mut body = Vec::new();
    for e in entries {
        let padded = e.payload.len().div_ceil(8) * 8;
        let compressed = e.flags & (LZ4 | ZSTD) != 0;
        let (csize, dsize) = if compressed {
            (e.payload.len() as u32, e.decompressed)
        } else {
            (0, 0)
        };
        body.extend_from_slice(&e.kind.to_le_bytes());
        body.extend_from_slice(&0x0101u16.to_le_bytes());
        body.extend_from_slice(&64u32.to_le_bytes());
        body.extend_from_slice(&(padded as u64).to_le_bytes());
        body.extend_from_slice(&csize.to_le_bytes());
        body.extend_from_slice(&0u32.to_le_bytes()); // options offset
        body.extend_from_slice(&8u16.to_le_bytes()); // minor version
        body.extend_from_slice(&1u16.to_le_bytes()); // major version
        body.extend_from_slice(&e.sm.to_le_bytes());
        body.extend_from_slice(&0u64.to_le_bytes()); // no object name
        body.extend_from_slice(&e.flags.to_le_bytes());
        body.extend_from_slice(&0u64.to_le_bytes());
        body.extend_from_slice(&dsize.to_le_bytes());
        body.extend_from_slice(e.payload);
        body.resize(body.len() + padded - e.payload.len(), 0);
    }
    let mut out = vec![0x50, 0xED, 0x55, 0xBA, 1, 0, 16, 0];
    out.extend_from_slice(&(body.len() as u64).to_le_bytes());
    out.extend_from_slice(&body);
    out
}

/// Compressible stand-in for a cubin: an ELF magic, then runs of a few
/// pseudo-random words.
fn cubin_like(seed: u64, len: usize) -> Vec<u8> {
    let words = crate::util::bytes(seed, 64);
    let mut out = b"\x7fELF\x02\x01\x01\x41".to_vec();
    let mut i = 0usize;
    while out.len() < len {
        let w = &words[(i * 7) % 56..(i * 7) % 56 + 8];
        out.extend_from_slice(w);
        if i.is_multiple_of(5) {
            out.extend_from_slice(&crate::util::bytes(seed + i as u64, 3));
        }
        i += 1;
    }
    out.truncate(len);
    out
}

/// The bytes `extract` wrote for image `id` of `file` (its names start
/// with `<file>.<id>.`).
fn extracted<'a>(
    got: &'a BTreeMap<String, Vec<u8>>,
    file: &str,
    id: usize,
) -> Result<&'a [u8], Failed> {
    let prefix = format!("{file}.{id}.");
    let mut hits = got.iter().filter(|(n, _)| n.starts_with(&prefix));
    match (hits.next(), hits.next()) {
        (Some((_, b)), None) => Ok(b),
        _ => Err(format!("extract wrote no single file for image {id} of {file}: {got:?}").into()),
    }
}

fn lz4_and_zstd_entries_written_here() -> Result<(), Failed> {
    let d = tempdir();
    let dir = d.path();
    let cubin80 = cubin_like(1, 200_000);
    let cubin90 = cubin_like(2, 4096); // stored as it is: a multiple of 8
    let ptx = b"//\n.version 8.0\n.target sm_80\n.address_size 64\n\n.visible .entry k()\n{\n\tret;\n}\n\0";
    let lz = lz4_flex::block::compress(&cubin80);
    let zs = zstd::bulk::compress(ptx, 19)?;
    let lz_ptx = lz4_flex::block::compress(ptx);
    let f = fatbin(&[
        Entry {
            kind: KIND_ELF,
            sm: 80,
            flags: FLAGS | LZ4,
            payload: &lz,
            decompressed: cubin80.len() as u64,
        },
        Entry {
            kind: KIND_PTX,
            sm: 80,
            flags: FLAGS | ZSTD,
            payload: &zs,
            decompressed: ptx.len() as u64,
        },
        Entry {
            kind: KIND_ELF,
            sm: 90,
            flags: FLAGS,
            payload: &cubin90,
            decompressed: 0,
        },
        Entry {
            kind: KIND_PTX,
            sm: 90,
            flags: FLAGS | LZ4,
            payload: &lz_ptx,
            decompressed: ptx.len() as u64,
        },
    ]);
    std::fs::write(dir.join("f.fatbin"), &f)?;
    // PTX is its text: the NUL the entry stores is no part of it.
    let text = &ptx[..ptx.len() - 1];
    let want: [&[u8]; 4] = [&cubin80, text, &cubin90, text];

    // extract: the decompressed images.
    run(&ours(), &["extract", "f.fatbin", "-o", "out"], dir).ok()?;
    let got = files(&dir.join("out"));
    same("files extract wrote", got.len(), 4)?;
    for (id, w) in want.iter().enumerate() {
        same_bytes(&format!("image {id}"), extracted(&got, "f.fatbin", id)?, w)?;
    }

    let stored: [usize; 4] = [lz.len(), zs.len(), cubin90.len(), lz_ptx.len()];
    inspect_hashes_decompressed(dir, &want, stored)?;
    size_counts_decompressed(dir, &want, stored)
}

/// `inspect --hash` of `f.fatbin` in `dir`: each image's hash is of its
/// decompressed bytes (`want`), its size as `stored`, and its compression
/// method named.
fn inspect_hashes_decompressed(
    dir: &Path,
    want: &[&[u8]; 4],
    stored: [usize; 4],
) -> Result<(), Failed> {
    let v = json(&["inspect", "--json", "--hash=md5", "f.fatbin"], dir)?;
    let images = v["files"][0]["images"].as_array().ok_or("no images")?;
    for (id, img) in images.iter().enumerate() {
        same(
            &format!("image {id} hash"),
            img["hash"].as_str().unwrap_or_default().to_string(),
            format!("md5:{}", md5_hex(want[id])),
        )?;
        same(
            &format!("image {id} size"),
            img["size"].as_u64(),
            Some(stored[id] as u64),
        )?;
        let unc = (id != 2).then_some(want[id].len() as u64);
        same(
            &format!("image {id} uncompressed_size"),
            img["uncompressed_size"].as_u64(),
            unc,
        )?;
    }
    let methods: Vec<String> = images
        .iter()
        .map(|i| {
            i["strings"]
                .as_array()
                .into_iter()
                .flatten()
                .find(|s| s["key"] == "compression")
                .map_or("-".into(), |s| {
                    s["value"].as_str().unwrap_or("?").to_string()
                })
        })
        .collect();
    same(
        "compression methods",
        methods,
        vec!["lz4".into(), "zstd".into(), "-".into(), "lz4".into()],
    )?;

    Ok(())
}

/// `size` of `f.fatbin` in `dir`: the bytes decompressed (`want`), stored
/// as compressed (`stored`).
fn size_counts_decompressed(
    dir: &Path,
    want: &[&[u8]; 4],
    stored: [usize; 4],
) -> Result<(), Failed> {
    let v = json(&["size", "--json", "f.fatbin"], dir)?;
    let kinds = &v["files"][0]["by_kind"];
    same(
        "cubin bytes, stored",
        (
            kinds["cubin"]["bytes"].as_u64(),
            kinds["cubin"]["stored"].as_u64(),
        ),
        (
            Some((want[0].len() + want[2].len()) as u64),
            Some((stored[0] + stored[2]) as u64),
        ),
    )?;
    same(
        "ptx bytes, stored",
        (
            kinds["ptx"]["bytes"].as_u64(),
            kinds["ptx"]["stored"].as_u64(),
        ),
        (
            Some((want[1].len() + want[3].len()) as u64),
            Some((stored[1] + stored[3]) as u64),
        ),
    )?;
    let r = run(&ours(), &["size", "f.fatbin"], dir).ok()?;
    let total: usize = want.iter().map(|w| w.len()).sum();
    let out = String::from_utf8_lossy(&r.stdout);
    if !out.contains(&format!("device code {total} bytes in 4 image(s)")) {
        return Err(format!("size does not count the decompressed bytes:\n{out}").into());
    }
    Ok(())
}

fn corrupt_or_lying_entries_fail_cleanly() -> Result<(), Failed> {
    let d = tempdir();
    let dir = d.path();
    let cubin = cubin_like(3, 30_000);
    let good = cubin_like(4, 800);
    let lz = lz4_flex::block::compress(&cubin);
    let zs = zstd::bulk::compress(&cubin, 3)?;
    let n = cubin.len() as u64;
    // An LZ4 block whose match reaches before the start of the output.
    let mut bad_offset = lz.clone();
    bad_offset.splice(0..0, [0x10, b'x', 0xFF, 0x7F]);
    let cases: Vec<(&str, u64, Vec<u8>, u64, &str)> = vec![
        ("lz4-size-too-large", LZ4, lz.clone(), n + 1, "declares"),
        ("lz4-size-too-small", LZ4, lz.clone(), n - 1, "declares"),
        // More than an LZ4 block that short can hold (within the 16 GiB budget).
        (
            "lz4-size-impossible",
            LZ4,
            lz.clone(),
            1 << 33,
            "cannot hold",
        ),
        ("lz4-truncated", LZ4, lz[..lz.len() - 9].to_vec(), n, "LZ4"),
        ("lz4-bad-offset", LZ4, bad_offset, n + 1, "LZ4"),
        ("zstd-size-too-large", ZSTD, zs.clone(), n + 1, "declares"),
        ("zstd-size-too-small", ZSTD, zs.clone(), n - 1, "declares"),
        ("zstd-garbage", ZSTD, b"not zstd at all".to_vec(), n, "zstd"),
        (
            "zstd-truncated",
            ZSTD,
            zs[..zs.len() / 2].to_vec(),
            n,
            "zstd",
        ),
    ];
    for (name, method, payload, declared, says) in cases {
        let c = Corrupt {
            name,
            method,
            payload,
            declared,
            says,
        };
        corrupt_entry_is_refused(dir, &c, &good)?;
    }
    budget_bounds_decompression(dir)
}

/// A fatbin entry damaged one way: its compression method, its payload,
/// the size it declares and what the error must say.
struct Corrupt<'a> {
    /// The case's name (and file name).
    name: &'a str,
    /// The compression flag.
    method: u64,
    /// The stored bytes.
    payload: Vec<u8>,
    /// The decompressed size the entry declares.
    declared: u64,
    /// What the error names.
    says: &'a str,
}

/// A fatbin of the damaged entry `c` and a good one (`good`, compressed):
/// `extract` fails naming it and keeps nothing of the fatbin, `inspect
/// --hash` reports one problem, hashes the good entry and exits 2 (0 with
/// `--allow-corrupt`), and `size` counts what the headers declare.
fn corrupt_entry_is_refused(dir: &Path, c: &Corrupt<'_>, good: &[u8]) -> Result<(), Failed> {
    let (name, says) = (c.name, c.says);
    let file = format!("{name}.fatbin");
    std::fs::write(
        dir.join(&file),
        fatbin(&[
            Entry {
                kind: KIND_ELF,
                sm: 80,
                flags: FLAGS | c.method,
                payload: &c.payload,
                decompressed: c.declared,
            },
            Entry {
                kind: KIND_ELF,
                sm: 90,
                flags: FLAGS | LZ4,
                payload: &lz4_flex::block::compress(good),
                decompressed: good.len() as u64,
            },
        ]),
    )?;
    // extract: errors naming the file, exit 2; nothing of the damaged
    // fatbin is kept, not even its good entry (no partial or temporary
    // file either).
    let out = format!("out-{name}");
    let r = run(&ours(), &["extract", &file, "-o", &out], dir);
    crate::damaged::damage_failure(&format!("extract {name}"), &r, &file)?;
    if !r.stderr.contains(says) || !r.stderr.contains("image 0") {
        return Err(format!("extract {name}: the error does not say why: {}", r.stderr).into());
    }
    let got = files(&dir.join(&out));
    same(&format!("{name}: files left"), got.len(), 0)?;
    // inspect --hash: a problem, no hash for that image, and exit 2
    // (damaged data; --allow-corrupt: 0).
    let r = run(&ours(), &["inspect", "--json", "--hash=md5", &file], dir);
    if r.code != 2 {
        return Err(format!("inspect --hash {name}: exit {}", r.code).into());
    }
    run(
        &ours(),
        &["inspect", "--json", "--hash=md5", "--allow-corrupt", &file],
        dir,
    )
    .ok()?;
    let v: Value = serde_json::from_slice(&r.stdout)?;
    let f = &v["files"][0];
    same(
        &format!("{name}: image 0 hash"),
        &f["images"][0]["hash"],
        &Value::Null,
    )?;
    same(
        &format!("{name}: image 1 hash"),
        f["images"][1]["hash"].as_str().map(str::to_string),
        Some(format!("md5:{}", md5_hex(good))),
    )?;
    let problems = f["problems"].as_array().map_or(0, Vec::len);
    let msg = f["problems"][0]["message"].as_str().unwrap_or_default();
    if problems != 1 || !msg.contains("CUDA fatbin entry 0 (sm_80 cubin)") || !msg.contains(says) {
        return Err(format!("inspect --hash {name}: problems {}", f["problems"]).into());
    }
    // size decompresses nothing: it counts what the headers declare.
    run(&ours(), &["size", &file], dir).ok()?;
    Ok(())
}

/// The scan's budget bounds what one file may decompress.
fn budget_bounds_decompression(dir: &Path) -> Result<(), Failed> {
    let r = run(
        &ours(),
        &[
            "extract",
            "--max-uncompressed=1K",
            "lz4-size-too-large.fatbin",
            "-o",
            "small",
        ],
        dir,
    );
    clean_failure_code(
        "extract past --max-uncompressed",
        &r,
        "lz4-size-too-large.fatbin",
        2,
    )?;
    if !r.stderr.contains("the scan stopped") || !r.stderr.contains("(--max-uncompressed") {
        return Err(format!("extract past --max-uncompressed: {}", r.stderr).into());
    }
    Ok(())
}

/// A kernel for `ptxas`: adds one to each element.
fn kernel_ptx(sm: u32) -> String {
    format!(
        ".version 8.0\n.target sm_{sm}\n.address_size 64\n\n\
         .visible .entry add1_sm{sm}(.param .u64 p, .param .u32 n)\n{{\n\
         \t.reg .b32 %r<6>;\n\t.reg .b64 %rd<5>;\n\t.reg .pred %p1;\n\
         \tld.param.u64 %rd1, [p];\n\tld.param.u32 %r1, [n];\n\tmov.u32 %r2, %tid.x;\n\
         \tsetp.ge.u32 %p1, %r2, %r1;\n\t@%p1 bra DONE;\n\tcvta.to.global.u64 %rd2, %rd1;\n\
         \tmul.wide.u32 %rd3, %r2, 4;\n\tadd.s64 %rd4, %rd2, %rd3;\n\tld.global.u32 %r3, [%rd4];\n\
         \tadd.s32 %r4, %r3, {sm};\n\tst.global.u32 [%rd4], %r4;\nDONE:\n\tret;\n}}\n"
    )
}

/// What `cuobjdump -xelf all -xptx all FILE` writes in a fresh directory
/// `dir`: (arch, extension) → bytes, from its names `<stem>.<n>.<arch>.<ext>`.
fn cuobjdump(file: &Path, dir: &Path) -> Result<BTreeMap<(String, String), Vec<u8>>, Failed> {
    std::fs::create_dir_all(dir)?;
    let args = [
        OsStr::new("-xelf"),
        OsStr::new("all"),
        OsStr::new("-xptx"),
        OsStr::new("all"),
        file.as_os_str(),
    ];
    run(Path::new(CUOBJDUMP), &args, dir).ok()?;
    let mut out = BTreeMap::new();
    for (name, bytes) in files(dir) {
        let parts: Vec<&str> = name.rsplitn(3, '.').collect();
        if let [ext, arch, _] = parts[..] {
            out.insert((arch.to_string(), ext.to_string()), bytes);
        }
    }
    Ok(out)
}

/// Our view of one image: the bytes `extract` wrote, the hash `inspect
/// --hash=md5` printed, and the compression it names (`none` for none).
type Ours = (Vec<u8>, String, String);

/// Our `extract` of `file` (in `dir`) with the JSON of `inspect --hash=md5`:
/// (arch, extension) → [`Ours`].
fn ours_extract(file: &str, dir: &Path) -> Result<BTreeMap<(String, String), Ours>, Failed> {
    let out = format!("ours-{file}");
    run(&ours(), &["extract", file, "-o", &out], dir).ok()?;
    let got = files(&dir.join(&out));
    let v = json(&["inspect", "--json", "--hash=md5", file], dir)?;
    let mut map = BTreeMap::new();
    for img in v["files"][0]["images"].as_array().ok_or("no images")? {
        let id = img["id"].as_u64().ok_or("no id")? as usize;
        let ext = match img["image_kind"].as_str() {
            Some("cubin") => "cubin",
            Some("ptx") => "ptx",
            k => return Err(format!("{file}: image {id} of kind {k:?}").into()),
        };
        let arch = img["arch"].as_str().unwrap_or_default().to_string();
        let method = img["strings"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|s| s["key"] == "compression")
            .map_or("none".into(), |s| {
                s["value"].as_str().unwrap_or("?").to_string()
            });
        let hash = img["hash"].as_str().unwrap_or_default().to_string();
        let bytes = extracted(&got, file, id)?.to_vec();
        map.insert((arch, ext.to_string()), (bytes, hash, method));
    }
    Ok(map)
}

fn nvidia_fatbinary_against_cuobjdump() -> Result<(), Failed> {
    let d = tempdir();
    let dir = d.path();
    for sm in [80, 90] {
        std::fs::write(dir.join(format!("k{sm}.ptx")), kernel_ptx(sm))?;
        let ptx = format!("k{sm}.ptx");
        let cubin = format!("k{sm}.cubin");
        let arch = format!("-arch=sm_{sm}");
        run(Path::new(PTXAS), &[arch.as_str(), &ptx, "-o", &cubin], dir).ok()?;
    }
    std::fs::write(dir.join("e.c"), "int host_side;\n")?;
    run(Path::new("cc"), &["-c", "e.c", "-o", "e.o"], dir).ok()?;
    // Each mode and the compression it picks (none: --compress=false).
    let modes = [
        ("speed", "lz4"),
        ("default", "zstd"),
        ("size", "zstd"),
        ("balance", "zstd"),
        ("none", "none"),
    ];
    for (mode, method) in modes {
        let fb = format!("{mode}.fatbin");
        let mut args = vec!["-64".to_string(), format!("--create={fb}")];
        if mode == "none" {
            args.push("--compress=false".into());
        } else {
            args.push("--compress-all".into());
            args.push(format!("--compress-mode={mode}"));
        }
        args.push("--image3=kind=elf,sm=80,file=k80.cubin".into());
        args.push("--image3=kind=elf,sm=90,file=k90.cubin".into());
        args.push("--image3=kind=ptx,sm=90,file=k90.ptx".into());
        run(Path::new(FATBINARY), &args, dir).ok()?;
        // The same fatbin in a host object's .nv_fatbin section.
        let obj = format!("{mode}.o");
        run(
            &llvm("llvm-objcopy"),
            &[
                format!("--add-section=.nv_fatbin={fb}"),
                "--set-section-flags=.nv_fatbin=alloc,readonly".into(),
                "e.o".into(),
                obj.clone(),
            ],
            dir,
        )
        .ok()?;
        for file in [fb, obj] {
            let theirs = cuobjdump(&dir.join(&file), &dir.join(format!("cuobjdump-{file}")))?;
            let ours = ours_extract(&file, dir)?;
            same(
                &format!("{file}: images (arch, kind)"),
                ours.keys().collect::<Vec<_>>(),
                theirs.keys().collect::<Vec<_>>(),
            )?;
            for (key, (bytes, hash, got_method)) in &ours {
                let what = format!("{file}: {} {}", key.0, key.1);
                same(&format!("{what}: compression"), got_method.as_str(), method)?;
                let want = &theirs[key];
                if key.1 == "cubin" {
                    same_bytes(&format!("{what}: ours vs cuobjdump -xelf"), bytes, want)?;
                    let sm = &key.0[3..];
                    let ptxas = std::fs::read(dir.join(format!("k{sm}.cubin")))?;
                    same_bytes(&format!("{what}: ours vs ptxas"), bytes, &ptxas)?;
                } else {
                    // PTX, compressed or not: its text, as cuobjdump
                    // writes it (without the NUL and padding stored).
                    same_bytes(&format!("{what}: ours vs cuobjdump -xptx"), bytes, want)?;
                    if bytes.contains(&0) {
                        return Err(format!("{what}: a NUL in the PTX written").into());
                    }
                }
                same(
                    &format!("{what}: --hash"),
                    hash.clone(),
                    format!("md5:{}", md5_hex(bytes)),
                )?;
            }
        }
    }
    Ok(())
}

/// (arch, extension, md5) of each file in `dir` whose name ends
/// `<arch>.<ext>` (`arch` after the last `-` or `.` before it), with how
/// many there are.
fn tally(dir: &Path) -> BTreeMap<(String, String, String), usize> {
    let mut out = BTreeMap::new();
    for (name, bytes) in files(dir) {
        let Some((stem, ext)) = name.rsplit_once('.') else {
            continue;
        };
        let arch = stem.rsplit(['.', '-']).next().unwrap_or_default();
        *out.entry((arch.to_string(), ext.to_string(), md5_hex(&bytes)))
            .or_default() += 1;
    }
    out
}

fn nvjpeg_library_against_cuobjdump() -> Result<(), Failed> {
    let d = tempdir();
    let dir = d.path();
    run(&ours(), &["extract", NVJPEG, "-o", "ours"], dir).ok()?;
    std::fs::create_dir(dir.join("theirs"))?;
    run(
        Path::new(CUOBJDUMP),
        &["-xelf", "all", "-xptx", "all", NVJPEG],
        &dir.join("theirs"),
    )
    .ok()?;
    let (ours_t, theirs) = (tally(&dir.join("ours")), tally(&dir.join("theirs")));
    let count = |t: &BTreeMap<_, usize>| t.values().sum::<usize>();
    if ours_t != theirs {
        let only_ours: Vec<_> = ours_t.keys().filter(|k| !theirs.contains_key(*k)).collect();
        let only_theirs: Vec<_> = theirs.keys().filter(|k| !ours_t.contains_key(*k)).collect();
        return Err(format!(
            "extract wrote {} images, cuobjdump {}; only ours: {only_ours:?}; only cuobjdump's: {only_theirs:?}",
            count(&ours_t),
            count(&theirs)
        )
        .into());
    }
    // The library holds compressed cubins, and they were among those compared.
    let v = json(&["inspect", "--json", "--hash=md5", NVJPEG], dir)?;
    let images = v["files"][0]["images"].as_array().ok_or("no images")?;
    let compressed: Vec<&Value> = images
        .iter()
        .filter(|i| i["uncompressed_size"].is_u64() && i["image_kind"] == "cubin")
        .collect();
    if compressed.len() < 10 {
        return Err(format!("only {} compressed cubins in {NVJPEG}", compressed.len()).into());
    }
    // --hash is of what extract wrote; size counts it decompressed.
    let got = files(&dir.join("ours"));
    let file = "libnvjpeg.so.12";
    let mut total = 0u64;
    for img in images {
        let id = img["id"].as_u64().ok_or("no id")? as usize;
        let bytes = extracted(&got, file, id)?;
        total += bytes.len() as u64;
        same(
            &format!("image {id} hash"),
            img["hash"].as_str().map(str::to_string),
            Some(format!("md5:{}", md5_hex(bytes))),
        )?;
    }
    let v = json(&["size", "--json", NVJPEG], dir)?;
    same(
        "size: bytes",
        v["files"][0]["total"]["bytes"].as_u64(),
        Some(total),
    )?;
    let stored = v["files"][0]["total"]["stored"]
        .as_u64()
        .unwrap_or(u64::MAX);
    if stored >= total {
        return Err(
            format!("size: stored {stored} is not below the {total} bytes decompressed").into(),
        );
    }
    Ok(())
}
