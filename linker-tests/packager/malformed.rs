//! A clean error for each kind of malformed input.

use super::*;

/// A valid two-image pack, to corrupt.
fn valid_pack() -> Vec<u8> {
    use offload_kit::offload_binary::{ImageSpec, OffloadKind, Version, layout};
    let specs: Vec<ImageSpec> = (0..2)
        .map(|i| ImageSpec {
            offload_kind: OffloadKind::OFK_OpenMP,
            strings: vec![
                (b"triple".to_vec(), b"amdgcn-amd-amdhsa".to_vec()),
                (b"arch".to_vec(), format!("gfx90{i}").into_bytes()),
            ],
            size: 24,
            ..Default::default()
        })
        .collect();
    let imgs = [bytes(1, 24), bytes(2, 24)];
    let refs: Vec<&[u8]> = imgs.iter().map(|v| v.as_slice()).collect();
    let mut out = Vec::new();
    layout(&specs, Version::V1)
        .unwrap()
        .write_to(&mut out, &refs)
        .unwrap();
    out
}

fn put64(v: &mut [u8], at: usize, x: u64) {
    v[at..at + 8].copy_from_slice(&x.to_le_bytes());
}

/// Malformed inputs LLVM 22 rejects for the same reason we do, so that our
/// message must contain its text. (For the others LLVM crashes, reads
/// garbage, or trips over something else first.)
const SAME_REASON_AS_LLVM: &[&str] = &[
    "truncated_header",
    "magic_only",
    "size_past_end",
    "unknown_version",
    "bad_magic_of_second_binary",
    "trailing_garbage",
];

/// Makes one malformed input.
type Corrupt = Box<dyn Fn() -> Vec<u8> + Send + Sync>;

/// Malformed inputs: name and the corruption.
#[allow(
    clippy::too_many_lines,
    reason = "a table of the corruptions, one closure each"
)]
fn malformed() -> Vec<(&'static str, Corrupt)> {
    let second = valid_pack().len() / 2; // both binaries have the same size
    vec![
        ("truncated_header", Box::new(|| valid_pack()[..20].to_vec())),
        (
            "magic_only",
            Box::new(|| vec![0x10, 0xFF, 0x10, 0xAD, 0x01]),
        ),
        (
            "truncated_in_image",
            Box::new(|| {
                let v = valid_pack();
                v[..v.len() - 9].to_vec()
            }),
        ),
        (
            "size_past_end",
            Box::new(|| {
                let mut v = valid_pack();
                put64(&mut v, 8, 1 << 40);
                v
            }),
        ),
        (
            "size_overflows",
            Box::new(|| {
                let mut v = valid_pack();
                put64(&mut v, 8, u64::MAX);
                v
            }),
        ),
        (
            "image_offset_past_end",
            Box::new(|| {
                let mut v = valid_pack();
                put64(&mut v, 32 + 24, 0xFFFF_0000);
                v
            }),
        ),
        (
            "image_size_overflows",
            Box::new(|| {
                let mut v = valid_pack();
                put64(&mut v, 32 + 32, u64::MAX - 8);
                v
            }),
        ),
        (
            "string_offset_past_end",
            Box::new(|| {
                let mut v = valid_pack();
                put64(&mut v, 32 + 8, 1 << 33);
                v
            }),
        ),
        (
            "string_value_offset_past_end",
            Box::new(|| {
                let mut v = valid_pack();
                put64(&mut v, 72 + 8, 1 << 20);
                v
            }),
        ),
        (
            "absurd_string_count",
            Box::new(|| {
                let mut v = valid_pack();
                put64(&mut v, 32 + 16, u64::MAX / 3);
                v
            }),
        ),
        (
            "image_overlaps_header",
            Box::new(|| {
                let mut v = valid_pack();
                put64(&mut v, 32 + 24, 8);
                v
            }),
        ),
        (
            "entry_overlaps_header",
            Box::new(|| {
                let mut v = valid_pack();
                put64(&mut v, 16, 8);
                v
            }),
        ),
        (
            "unknown_version",
            Box::new(|| {
                let mut v = valid_pack();
                v[4] = 9;
                v
            }),
        ),
        (
            "bad_magic_of_second_binary",
            Box::new(move || {
                let mut v = valid_pack();
                v[second + 1] = 0;
                v
            }),
        ),
        (
            "trailing_garbage",
            Box::new(|| {
                let mut v = valid_pack();
                v.extend_from_slice(&[0; 8]);
                v
            }),
        ),
        (
            "absurd_entry_count_v2",
            Box::new(|| {
                let mut v = valid_pack();
                v[4] = 2;
                put64(&mut v, 24, u64::MAX / 8);
                v
            }),
        ),
        (
            "misaligned_second_binary",
            Box::new(|| {
                let v = valid_pack();
                let mut w = v[..v.len() / 2].to_vec();
                w.extend_from_slice(&[0; 4]);
                w.extend_from_slice(&v[v.len() / 2..]);
                put64(&mut w, 8, (v.len() / 2 + 4) as u64);
                w
            }),
        ),
    ]
}

fn run_malformed(name: &'static str, data: Vec<u8>) -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    let file = format!("{name}.bin");
    std::fs::write(d.join(&file), &data)?;
    let before = snapshot(d);
    let r = run(
        &ours_as(TOOL),
        &[
            file.as_str(),
            "--image=file=out.o,arch=gfx900",
            "--image=kind=openmp",
        ],
        d,
    );
    clean_failure("llvm-offload-binary", &r, &file)?;
    let r = run(&ours(), &["list", file.as_str()], d);
    clean_failure_code("list", &r, &file, 2)?;
    let r = run(&ours(), &["unpack", file.as_str(), "-o", "outdir"], d);
    clean_failure("unpack", &r, &file)?;
    same("files after the failures", snapshot(d), before)?;
    // Where LLVM 22 reports an error too (rather than crashing or accepting
    // the file), our line contains its text.
    let l = run(&llvm(TOOL), &[file.as_str(), "--image=kind=openmp"], d);
    let mine = run(&ours_as(TOOL), &[file.as_str(), "--image=kind=openmp"], d);
    if SAME_REASON_AS_LLVM.contains(&name) {
        if l.code != 1 {
            return Err(format!("LLVM accepted {name}: {}", l.stderr).into());
        }
        // LLVM's line first, character for character; the file and the
        // exact fault on a note after it.
        let mask = |r: &crate::util::Run, prog: &std::path::Path| {
            r.stderr.replace(&prog.display().to_string(), "TOOL")
        };
        same_messages(
            &mask(&mine, &ours_as(TOOL)),
            &mask(&l, &llvm(TOOL)),
            Some(&file),
        )?;
    }
    Ok(())
}

/// The trials of this file.
pub(super) fn tests() -> Vec<Trial> {
    let mut t = Vec::new();
    for (name, f) in malformed() {
        t.push(trial!(
            run_malformed["{name}"],
            &[TOOL],
            move || run_malformed(name, f()),
        ));
    }
    t
}
