//! Damaged data, one rule for every scanner command: a CUDA fatbin with a
//! corrupt LZ4 or zstd entry, a compressed bundle (CCOB) whose stored hash
//! or stream is damaged, a compressed OffloadBinary whose stream is
//! damaged. `--verify` decodes every compressed thing and checks every
//! stored hash; whatever fails makes `inspect`, `size`, `check` and
//! `extract` exit 2 naming the file; `extract` and `check` always verify
//! (a gate never passes damaged data); `extract` leaves
//! no file of the damaged container; `check` blames the damage, never "no
//! input carries device images".

use std::path::Path;

use libtest_mimic::{Failed, Trial};
use offload_kit::offload_binary::Compression;

use crate::util::{Run, bytes, files, ours, run, tempdir};

pub fn tests() -> Vec<Trial> {
    vec![
        trial!(every_command_fails_on_damaged_data_and_extract_keeps_nothing, &[]),
        trial!(repeated_problems_are_grouped_and_said_on_stderr, &[]),
    ]
}

/// A bundle of 120 entries that all claim the same bytes: 119 problems of
/// one shape ("entry N overlaps entry 0"). Every scanner command exits 2,
/// names the file on standard error in one line that counts them, and
/// prints no line over 1,000 bytes; the text shows the first problem and
/// how many more are like it, and `--json` keeps all 119.
fn repeated_problems_are_grouped_and_said_on_stderr() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    let ids: Vec<String> = (0..120)
        .map(|i| format!("hip-amdgcn-amd-amdhsa--gfx{}", 900 + i))
        .collect();
    let header: usize = 24 + 8 + ids.iter().map(|i| 24 + i.len()).sum::<usize>();
    let at = header.div_ceil(4096) * 4096;
    let mut b = b"__CLANG_OFFLOAD_BUNDLE__".to_vec();
    b.extend_from_slice(&120u64.to_le_bytes());
    for id in &ids {
        for v in [at as u64, 16, id.len() as u64] {
            b.extend_from_slice(&v.to_le_bytes());
        }
        b.extend_from_slice(id.as_bytes());
    }
    b.resize(at, 0);
    b.extend_from_slice(b"\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0");
    std::fs::write(d.join("bad.bundle"), &b)?;
    for args in [
        &["inspect", "bad.bundle"][..],
        &["inspect", "--kernels", "bad.bundle"],
        &["size", "bad.bundle"],
        &["check", "--require", "sm_70", "bad.bundle"],
        &["extract", "-o", "out", "bad.bundle"],
        &["diff", "bad.bundle", "bad.bundle"],
        &["list", "bad.bundle"],
        &["list", "--json", "bad.bundle"],
    ] {
        let r = run(&ours(), args, d);
        damage_failure(&format!("{args:?}"), &r, "bad.bundle")?;
        let text = format!("{}{}", String::from_utf8_lossy(&r.stdout), r.stderr);
        if let Some(l) = text.lines().find(|l| l.len() > 1000) {
            return Err(format!("{args:?}: a line of {} bytes: {l:.200}…", l.len()).into());
        }
        if !r.stderr.lines().any(|l| l.contains("'bad.bundle'")) {
            return Err(format!("{args:?}: no line on stderr names the file: {}", r.stderr).into());
        }
        if args[0] != "extract" && !r.stderr.contains("119 problems: entry 1 ") {
            return Err(
                format!("{args:?}: stderr does not count the problems: {}", r.stderr).into(),
            );
        }
        if !text.contains("(and 118 more like it)") {
            return Err(format!("{args:?}: the problems are not grouped: {text}").into());
        }
    }
    let r = run(&ours(), &["inspect", "--json", "bad.bundle"], d);
    let j: serde_json::Value = serde_json::from_slice(&r.stdout)?;
    let n = j["files"][0]["problems"].as_array().map_or(0, Vec::len);
    if n != 119 {
        return Err(format!("--json lists {n} problems, not 119").into());
    }
    Ok(())
}

/// Fails unless `r` is the exit 2 of damaged data: no panic, and a line
/// naming `file`.
pub fn damage_failure(what: &str, r: &Run, file: &str) -> Result<(), Failed> {
    if r.code != 2 {
        return Err(format!(
            "{what}: exit code {} (want 2); stderr: {}",
            r.code, r.stderr
        )
        .into());
    }
    if r.stderr.contains("panicked") || r.stderr.contains("RUST_BACKTRACE") {
        return Err(format!("{what}: panicked: {}", r.stderr).into());
    }
    let stdout = String::from_utf8_lossy(&r.stdout);
    if !r.stderr.contains(file) && !stdout.contains(file) {
        return Err(format!("{what}: nothing names '{file}': {}{stdout}", r.stderr).into());
    }
    Ok(())
}

/// A CUDA fatbin: a cubin for sm_80, compressed with `method` (0x2000
/// LZ4, 0x8000 zstd) and then damaged, and a good plain cubin for sm_90.
fn fatbin(method: u64) -> Vec<u8> {
    let mut cubin = b"\x7fELF\x02\x01\x01\x41".to_vec();
    cubin.extend(bytes(5, 4000).iter().map(|b| b % 8));
    let mut payload = if method == 0x2000 {
        lz4_flex::block::compress(&cubin)
    } else {
        zstd::bulk::compress(&cubin, 3).expect("zstd compresses")
    };
    if method == 0x2000 {
        // A match reaching before the start of the output.
        payload.splice(0..0, [0x10, b'x', 0xFF, 0x7F]);
    } else {
        // No zstd frame magic any more.
        payload[1] ^= 0xff;
    }
    let plain = b"\x7fELF\x02\x01\x01\x41plain-cubin-90\0\0".to_vec();
    let entries: [(u32, u64, &[u8], u64); 2] = [
        (80, 0x11 | method, &payload, cubin.len() as u64),
        (90, 0x11, &plain, 0),
    ];
    let mut body = Vec::new();
    for (sm, flags, data, declared) in entries {
        let padded = data.len().div_ceil(8) * 8;
        let (csize, dsize) = if declared > 0 {
            (data.len() as u32, declared)
        } else {
            (0, 0)
        };
        body.extend_from_slice(&2u16.to_le_bytes()); // cubin
        body.extend_from_slice(&0x0101u16.to_le_bytes());
        body.extend_from_slice(&64u32.to_le_bytes());
        body.extend_from_slice(&(padded as u64).to_le_bytes());
        body.extend_from_slice(&csize.to_le_bytes());
        body.extend_from_slice(&0u32.to_le_bytes());
        body.extend_from_slice(&8u16.to_le_bytes());
        body.extend_from_slice(&1u16.to_le_bytes());
        body.extend_from_slice(&sm.to_le_bytes());
        body.extend_from_slice(&0u64.to_le_bytes());
        body.extend_from_slice(&flags.to_le_bytes());
        body.extend_from_slice(&0u64.to_le_bytes());
        body.extend_from_slice(&dsize.to_le_bytes());
        body.extend_from_slice(data);
        body.resize(body.len() + padded - data.len(), 0);
    }
    let mut out = vec![0x50, 0xED, 0x55, 0xBA, 1, 0, 16, 0];
    out.extend_from_slice(&(body.len() as u64).to_le_bytes());
    out.extend_from_slice(&body);
    out
}

/// A compressed bundle of a host entry and two gfx images, made by
/// `offload-kit bundle --compress` (CCOB version 3).
fn ccob(dir: &Path) -> Result<Vec<u8>, Failed> {
    for (name, seed) in [("a.o", 1), ("b.o", 2)] {
        let mut elf = b"\x7fELF".to_vec();
        elf.extend(bytes(seed, 20_000).iter().map(|b| b % 8));
        std::fs::write(dir.join(name), elf)?;
    }
    std::fs::write(dir.join("h.o"), b"")?;
    run(
        &ours(),
        &[
            "bundle",
            "--type",
            "o",
            "--compress",
            "-o",
            "c.ccob",
            "host-x86_64-unknown-linux-gnu=h.o",
            "hip-amdgcn-amd-amdhsa--gfx90a=a.o",
            "hip-amdgcn-amd-amdhsa--gfx942=b.o",
        ],
        dir,
    )
    .ok()?;
    Ok(std::fs::read(dir.join("c.ccob"))?)
}

/// A zlib-compressed version 3 OffloadBinary of two gfx90a images.
fn compressed_offload_binary() -> Result<Vec<u8>, Failed> {
    let images: Vec<Vec<u8>> = (1..3)
        .map(|seed| {
            let mut v = b"\x7fELF".to_vec();
            v.extend(bytes(seed, 30_000).iter().map(|b| b % 8));
            v
        })
        .collect();
    crate::extract_compressed::openmp_v3(&images, &["gfx90a"; 2], Compression::Zlib, 6)
}

/// One damaged input: its file, the rule `check` is given, and whether the
/// damage is seen without `--verify` (a stream read to list the file).
struct Case {
    file: &'static str,
    require: &'static str,
    seen_listing: bool,
}

fn every_command_fails_on_damaged_data_and_extract_keeps_nothing() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    let c = damaged_inputs(d)?;
    for case in &CASES {
        every_command_on(d, case)?;
    }
    beside_a_good_input(d, &c)
}

/// The damaged inputs of [`CASES`], written in `d`; returns the good CCOB
/// the damaged ones were made from.
fn damaged_inputs(d: &Path) -> Result<Vec<u8>, Failed> {
    std::fs::write(d.join("lz4.fatbin"), fatbin(0x2000))?;
    std::fs::write(d.join("zstd.fatbin"), fatbin(0x8000))?;
    let c = ccob(d)?;
    // The stored hash is the last 8 bytes of the 32-byte header.
    let mut hash = c.clone();
    hash[31] ^= 0x5a;
    std::fs::write(d.join("hash.ccob"), hash)?;
    // Its stream damaged in its middle, inside the last entry's data, past
    // what listing decodes (up to each entry's first bytes): it no longer
    // decodes, or decodes to bytes that fail the hash.
    let mut stream = c.clone();
    let mid = 32 + (stream.len() - 32) / 2;
    stream[mid] ^= 0x55;
    std::fs::write(d.join("stream.ccob"), stream)?;
    let mut o = compressed_offload_binary()?;
    // The zlib stream, after the header, damaged in its middle.
    let mid = o.len() / 2;
    o[mid] ^= 0x55;
    std::fs::write(d.join("ob.bin"), o)?;
    Ok(c)
}

/// The damaged inputs and what is expected of them.
const CASES: [Case; 5] = [
    Case {
        file: "lz4.fatbin",
        require: "sm_80",
        seen_listing: false,
    },
    Case {
        file: "zstd.fatbin",
        require: "sm_80",
        seen_listing: false,
    },
    Case {
        file: "hash.ccob",
        require: "gfx90a",
        seen_listing: false,
    },
    Case {
        file: "stream.ccob",
        require: "gfx90a",
        seen_listing: false,
    },
    Case {
        file: "ob.bin",
        require: "gfx90a",
        seen_listing: true,
    },
];

/// Every command on one damaged input in `d`: `inspect`, `size` and `check`
/// fail for the damage where they see it (and blame it), `--allow-corrupt`
/// reports it with exit 0, and `extract` fails leaving nothing behind.
fn every_command_on(d: &Path, case: &Case) -> Result<(), Failed> {
    let f = case.file;
    let req = format!("--require={}", case.require);
    let commands: [(&str, Vec<&str>, bool); 6] = [
        ("inspect", vec!["inspect", f], case.seen_listing),
        ("inspect --verify", vec!["inspect", "--verify", f], true),
        ("size", vec!["size", f], case.seen_listing),
        ("size --verify", vec!["size", "--verify", f], true),
        // A gate always verifies.
        ("check", vec!["check", &req, f], true),
        ("check --verify", vec!["check", "--verify", &req, f], true),
    ];
    for (what, args, seen) in commands {
        let what = format!("{what} {f}");
        let r = run(&ours(), &args, d);
        if seen {
            damage_failure(&what, &r, f)?;
        } else if r.code != 0 {
            // Not decoded when only listing: nothing is known wrong.
            return Err(format!("{what}: exit {} (want 0): {}", r.code, r.stderr).into());
        }
        let stdout = String::from_utf8_lossy(&r.stdout);
        if stdout.contains("no input carries device images") {
            return Err(format!("{what}: blames no device code: {stdout}").into());
        }
        if seen && what.starts_with("check") && !stdout.contains(&format!("ERROR {f}: corrupt")) {
            return Err(format!("{what}: does not blame the damage: {stdout}").into());
        }
    }
    // The other commands that read it: when they fail, it is for the
    // damage, said on standard error in a line naming the file.
    for args in [
        vec!["list", f],
        vec!["list", "--json", f],
        vec!["diff", f, f],
        vec!["diff", "--kernels", f, f],
        vec!["inspect", "--kernels", f],
    ] {
        let r = run(&ours(), &args, d);
        if r.code == 0 {
            continue;
        }
        damage_failure(&format!("{args:?}"), &r, f)?;
        let line = format!("error: '{f}'");
        if !r.stderr.lines().any(|l| l.starts_with(&line)) {
            return Err(
                format!("{args:?}: no error line on stderr names {f}: {}", r.stderr).into(),
            );
        }
    }
    // --allow-corrupt: the damage is reported, the exit is 0.
    let r = run(&ours(), &["inspect", "--verify", "--allow-corrupt", f], d);
    let stdout = String::from_utf8_lossy(&r.stdout);
    if r.code != 0 || !stdout.contains("problem") {
        return Err(format!("inspect --allow-corrupt {f}: {} {stdout}", r.code).into());
    }
    // extract always verifies: exit 2, and no file of the damaged
    // container left (nor a temporary one).
    for verify in [false, true] {
        let out = format!("out-{f}-{verify}");
        let mut args = vec!["extract", f, "-o", &out];
        if verify {
            args.push("--verify");
        }
        let r = run(&ours(), &args, d);
        damage_failure(&format!("{args:?}"), &r, f)?;
        let left = files(&d.join(&out));
        if !left.is_empty() {
            return Err(format!("{args:?}: left {:?}", left.keys()).into());
        }
    }
    Ok(())
}

/// The same damage beside a good input (`c`, written in `d`): the good one
/// is still extracted and checked, the command still exits 2, and `check`
/// does not say that no input carries device code.
fn beside_a_good_input(d: &Path, c: &[u8]) -> Result<(), Failed> {
    std::fs::write(d.join("good.ccob"), c)?;
    let r = run(
        &ours(),
        &["extract", "good.ccob", "hash.ccob", "-o", "both"],
        d,
    );
    damage_failure("extract good.ccob hash.ccob", &r, "hash.ccob")?;
    let left = files(&d.join("both"));
    let names: Vec<&String> = left.keys().collect();
    if left.len() != 2 || !names.iter().all(|n| n.starts_with("good.ccob.")) {
        return Err(format!("extract good.ccob hash.ccob: left {names:?}").into());
    }
    let r = run(
        &ours(),
        &[
            "check",
            "--verify",
            "--require=gfx90a",
            "hash.ccob",
            "good.ccob",
        ],
        d,
    );
    damage_failure("check hash.ccob good.ccob", &r, "hash.ccob")?;
    let stdout = String::from_utf8_lossy(&r.stdout);
    if !stdout.contains("ok   good.ccob") || stdout.contains("no input carries") {
        return Err(format!("check hash.ccob good.ccob: {stdout}").into());
    }
    Ok(())
}
