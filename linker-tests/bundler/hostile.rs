//! Clean errors for hostile bundles, an ID duplicated once normalized, and
//! a damaged compressed bundle in an archive.

use super::*;

/// A valid bundle to corrupt: host and two device entries.
fn valid_bundle() -> Vec<u8> {
    use offload_kit::bundle::{self, Format};
    let specs = [
        ("host-x86_64-unknown-linux-gnu-".to_string(), 16),
        ("hip-amdgcn-amd-amdhsa--gfx906".to_string(), 16),
        ("hip-amdgcn-amd-amdhsa--gfx90a".to_string(), 16),
    ];
    let mut out = Vec::new();
    bundle::layout(Format::Binary, &specs, 1)
        .unwrap()
        .write_to(&mut out, &[&[1; 16], &[2; 16], &[3; 16]])
        .unwrap();
    out
}

fn put64(v: &mut [u8], at: usize, x: u64) {
    v[at..at + 8].copy_from_slice(&x.to_le_bytes());
}

type Corrupt = Box<dyn Fn() -> Vec<u8> + Send + Sync>;

fn hostile() -> Vec<(&'static str, &'static str, Corrupt)> {
    let text_no_end: Corrupt = Box::new(|| {
        b"\n// __CLANG_OFFLOAD_BUNDLE____START__ host-x86_64-unknown-linux-gnu-\nint x;\n".to_vec()
    });
    vec![
        (
            "truncated_count",
            "bc",
            Box::new(|| valid_bundle()[..28].to_vec()),
        ),
        (
            "truncated_record",
            "bc",
            Box::new(|| valid_bundle()[..50].to_vec()),
        ),
        (
            "truncated_id",
            "bc",
            Box::new(|| valid_bundle()[..70].to_vec()),
        ),
        (
            "truncated_in_data",
            "bc",
            Box::new(|| {
                let v = valid_bundle();
                v[..v.len() - 5].to_vec()
            }),
        ),
        (
            "absurd_count",
            "bc",
            Box::new(|| {
                let mut v = valid_bundle();
                put64(&mut v, 24, u64::MAX);
                v
            }),
        ),
        (
            "offset_past_end",
            "bc",
            Box::new(|| {
                let mut v = valid_bundle();
                put64(&mut v, 32, 1 << 40);
                v
            }),
        ),
        (
            "size_past_end",
            "bc",
            Box::new(|| {
                let mut v = valid_bundle();
                put64(&mut v, 40, 1 << 40);
                v
            }),
        ),
        (
            "offset_plus_size_overflows",
            "bc",
            Box::new(|| {
                let mut v = valid_bundle();
                put64(&mut v, 32, u64::MAX - 4);
                v
            }),
        ),
        (
            "id_length_overflows",
            "bc",
            Box::new(|| {
                let mut v = valid_bundle();
                put64(&mut v, 48, u64::MAX);
                v
            }),
        ),
        (
            "zero_offset",
            "bc",
            Box::new(|| {
                let mut v = valid_bundle();
                put64(&mut v, 32, 0);
                v
            }),
        ),
        (
            "data_inside_header",
            "bc",
            Box::new(|| {
                let mut v = valid_bundle();
                put64(&mut v, 32, 8);
                v
            }),
        ),
        ("text_without_end_marker", "i", text_no_end),
    ]
}

fn run_hostile(name: &'static str, file_type: &'static str, data: Vec<u8>) -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    let file = format!("{name}.bundle");
    std::fs::write(d.join(&file), &data)?;
    let before = snapshot(d);
    let ty = format!("-type={file_type}");
    let input = format!("-input={file}");
    let r = run(
        &ours_as(TOOL),
        &[
            ty.as_str(),
            "-unbundle",
            input.as_str(),
            "-targets=host-x86_64-unknown-linux-gnu,hip-amdgcn-amd-amdhsa--gfx906",
            "-output=o1",
            "-output=o2",
        ],
        d,
    );
    clean_failure("unbundle", &r, &file)?;
    // Where LLVM 22 fails cleanly too (rather than crashing), ours starts
    // with its line, character for character.
    let l = run(
        &llvm(TOOL),
        &[
            ty.as_str(),
            "-unbundle",
            input.as_str(),
            "-targets=host-x86_64-unknown-linux-gnu,hip-amdgcn-amd-amdhsa--gfx906",
            "-output=l1",
            "-output=l2",
        ],
        d,
    );
    for f in ["l1", "l2"] {
        let _ = std::fs::remove_file(d.join(f));
    }
    let crashed = l.code != 1
        || ["Stack dump", "PLEASE", "LLVM ERROR"]
            .iter()
            .any(|c| l.stderr.contains(c));
    if !crashed {
        let first = |s: &str, p: &std::path::Path| {
            s.lines()
                .next()
                .unwrap_or_default()
                .replace(&p.display().to_string(), "TOOL")
        };
        same(
            "first line",
            first(&r.stderr, &ours_as(TOOL)),
            first(&l.stderr, &llvm(TOOL)),
        )?;
    }
    if file_type == "bc" {
        let r = run(&ours_as(TOOL), &[ty.as_str(), "-list", input.as_str()], d);
        clean_failure("list", &r, &file)?;
    }
    same("files after the failures", snapshot(d), before)
}

/// Two targets that normalize to one ID: LLVM 22 writes a bundle whose first
/// entry points at the wrong bytes (spec §1.5); we refuse, naming both.
pub(super) fn duplicate_after_normalization() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    std::fs::write(d.join("a"), b"DEV1")?;
    std::fs::write(d.join("b"), b"DEVI")?;
    let args = [
        "-type=bc",
        "-targets=hip-amdgcn-amd-amdhsa--gfx906,hip-amdgcn-amd-amdhsa-unknown-gfx906",
        "-input=a",
        "-input=b",
        "-output=x",
    ];
    let r = run(&ours_as(TOOL), &args, d);
    clean_failure("bundle", &r, "hip-amdgcn-amd-amdhsa-unknown-gfx906")?;
    if d.join("x").exists() {
        return Err("an output was written".into());
    }
    // LLVM accepts it and writes a bundle where neither record holds the
    // second input's bytes (the first points at zero padding).
    run(&llvm(TOOL), &args, d).ok()?;
    let x = std::fs::read(d.join("x"))?;
    if record_data(&x).any(|data| data == Some(&b"DEVI"[..])) {
        return Err("LLVM 22 no longer mis-writes this case: revisit the rejection".into());
    }
    Ok(())
}

/// The data each record of the binary bundle `x` points at, in file
/// order (`None` where it lies outside `x`), every record read as it is,
/// duplicate IDs included.
fn record_data(x: &[u8]) -> impl Iterator<Item = Option<&[u8]>> {
    let u64_at = |at: usize| {
        x.get(at..at + 8)
            .map(|b| u64::from_le_bytes(b.try_into().unwrap()) as usize)
    };
    let count = u64_at(24).unwrap_or(0);
    let mut at = 32;
    (0..count).map(move |_| {
        let (offset, size, id_len) = (u64_at(at)?, u64_at(at + 8)?, u64_at(at + 16)?);
        at += 24 + id_len;
        x.get(offset..offset.checked_add(size)?)
    })
}

/// A damaged CCOB member of an archive: LLVM's line, then a note naming the
/// archive, the member and the fault.
pub(super) fn archive_member_ccob_fault() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    std::fs::write(d.join("m1.bc"), b"CCOB\x03\x00\x01\x00")?;
    run(&llvm("llvm-ar"), &["rc", "bad.a", "m1.bc"], d).ok()?;
    let args = [
        "-unbundle",
        "-type=a",
        "-input=bad.a",
        "-targets=hip-amdgcn-amd-amdhsa--gfx906",
        "-output=o.a",
    ];
    let l = run(&llvm(TOOL), &args, d);
    let r = run(&ours_as(TOOL), &args, d);
    same("exit code", r.code, l.code)?;
    let mask = |s: &str, p: &std::path::Path| s.replace(&p.display().to_string(), "TOOL");
    same_messages(
        &mask(&r.stderr, &ours_as(TOOL)),
        &mask(&l.stderr, &llvm(TOOL)),
        Some("bad.a"),
    )?;
    if !r.stderr.contains("member 'm1.bc'") {
        return Err(format!("the note does not name the member: {}", r.stderr).into());
    }
    Ok(())
}

/// The trials of this file (but the two named in `bundler::tests`).
pub(super) fn tests() -> Vec<Trial> {
    let mut t = Vec::new();
    for (name, ft, f) in hostile() {
        t.push(trial!(
            run_hostile["{name}"],
            &[TOOL],
            move || run_hostile(name, ft, f()),
        ));
    }
    t
}
