//! The sixth round (issue #71): the `roc-obj` drop-ins write only inside
//! their output folder. The scripts join bundle entry IDs and URI file
//! names into paths as they are: an ID holding `/..` wrote through a
//! folder named after the input's start (`k.elf:1.x`) to anywhere, a link
//! at an output's name was written through, an empty entry truncated and
//! then deleted whatever its path named, and 256 failing URIs exited 0.

use super::*;
use crate::util::{llvm, run_within};

pub(super) fn tests() -> Vec<Trial> {
    let tools = &["llvm-objcopy"];
    vec![
        trial!(roc_obj_writes_entry_ids_as_one_file_name, tools),
        trial!(roc_obj_refuses_a_link_at_an_output, tools),
        trial!(roc_obj_extract_refuses_a_link_and_never_exits_0_after_errors, &[]),
    ]
}

/// An uncompressed offload bundle of `entries` (ID, bytes), as the
/// bundler lays one out.
fn bundle(entries: &[(&[u8], &[u8])]) -> Vec<u8> {
    let mut head = b"__CLANG_OFFLOAD_BUNDLE__".to_vec();
    head.extend((entries.len() as u64).to_le_bytes());
    let table: usize = entries.iter().map(|(id, _)| 24 + id.len()).sum();
    let mut at = (head.len() + table) as u64;
    let mut data = Vec::new();
    for (id, bytes) in entries {
        head.extend(at.to_le_bytes());
        head.extend((bytes.len() as u64).to_le_bytes());
        head.extend((id.len() as u64).to_le_bytes());
        head.extend_from_slice(id);
        data.extend_from_slice(bytes);
        at += bytes.len() as u64;
    }
    head.extend(data);
    head
}

/// `d/k.elf`: a host program whose `.hip_fatbin` is a bundle of `entries`.
fn elf(d: &Path, entries: &[(&[u8], &[u8])]) -> Result<(), Failed> {
    std::fs::write(d.join("fatbin.bin"), bundle(entries))?;
    let args = ["--add-section=.hip_fatbin=fatbin.bin", "/usr/bin/dd", "k.elf"];
    run_within(LIMIT, &llvm("llvm-objcopy"), &args, d)?.ok()?;
    Ok(())
}

/// IDs that climb out of the output folder through a folder named after
/// the input's start, one of them an empty entry naming a file that
/// exists: each code object lands in the output folder under its ID with
/// `/` as `%2F`; nothing outside is written, truncated or deleted.
fn roc_obj_writes_entry_ids_as_one_file_name() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    let w = d.join("w");
    std::fs::create_dir_all(w.join("k.elf:1.x"))?;
    std::fs::write(d.join("victim"), b"keep me")?;
    elf(
        d,
        &[
            (b"host-x86_64-unknown-linux-gnu-", b""),
            (b"x/../../evil", b"attacker's bytes"),
            (b"x/../../victim", b""),
            (b"hipv4-amdgcn-amd-amdhsa--gfx90a", b"code object"),
        ],
    )?;
    let r = run_within(LIMIT, &ours_as("roc-obj"), &["../k.elf"], &w)?;
    if d.join("evil").exists() {
        return Err("roc-obj wrote outside its folder".into());
    }
    if std::fs::read(d.join("victim"))? != b"keep me" {
        return Err("roc-obj changed a file outside its folder".into());
    }
    let got = std::fs::read(w.join("k.elf:1.x%2F..%2F..%2Fevil"))
        .map_err(|e| format!("the escaping ID's file: {e} ({})", r.stderr))?;
    if got != b"attacker's bytes" {
        return Err(format!("the escaping ID's file holds {got:?}").into());
    }
    let benign = std::fs::read(w.join("k.elf:1.hipv4-amdgcn-amd-amdhsa--gfx90a"))?;
    if benign != b"code object" {
        return Err(format!("the benign ID's file holds {benign:?}").into());
    }
    // The script's exit code after a run without -d.
    if r.code != 1 || r.stderr.contains("panicked") {
        return Err(format!("roc-obj: exit {}: {}", r.code, r.stderr).into());
    }
    Ok(())
}

/// A symbolic link at a code object's name, in the output folder: refused
/// by name (exit 1 even when `-d` succeeds afterwards), the file it leads
/// to left as it was.
fn roc_obj_refuses_a_link_at_an_output() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    std::fs::create_dir_all(d.join("out"))?;
    std::fs::write(d.join("target"), b"keep me")?;
    let name = "k.elf:1.hipv4-amdgcn-amd-amdhsa--gfx90a";
    std::os::unix::fs::symlink(d.join("target"), d.join("out").join(name))?;
    elf(
        d,
        &[(b"hipv4-amdgcn-amd-amdhsa--gfx90a", b"attacker's bytes")],
    )?;
    // `:` `!` runs a command (true) that succeeds on each object written.
    let args = ["-o", "out", "k.elf", ":", "!", "true", ";"];
    let r = run_within(LIMIT, &ours_as("roc-obj"), &args, d)?;
    if std::fs::read(d.join("target"))? != b"keep me" {
        return Err("roc-obj wrote through a link".into());
    }
    if !std::fs::symlink_metadata(d.join("out").join(name))?.file_type().is_symlink() {
        return Err("roc-obj replaced the link".into());
    }
    if r.code == 0 || !r.stderr.contains("symbolic link") || !r.stderr.contains(name) {
        return Err(format!("roc-obj: exit {}: {}", r.code, r.stderr).into());
    }
    Ok(())
}

/// `roc-obj-extract`: a link at an output's name refused, the file it
/// leads to kept; 256 failing URIs exit 255, not 0 (the script's count
/// modulo 256).
fn roc_obj_extract_refuses_a_link_and_never_exits_0_after_errors() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    std::fs::create_dir_all(d.join("out"))?;
    std::fs::write(d.join("in.bin"), b"0123456789")?;
    std::fs::write(d.join("target"), b"keep me")?;
    std::os::unix::fs::symlink(d.join("target"), d.join("out/in.bin-offset2-size3.co"))?;
    let ex = ours_as("roc-obj-extract");
    let uri = "file://in.bin#offset=2&size=3";
    let r = run_within(LIMIT, &ex, &["-o", "out", uri, "file://in.bin#offset=4&size=2"], d)?;
    if std::fs::read(d.join("target"))? != b"keep me" {
        return Err("roc-obj-extract wrote through a link".into());
    }
    if std::fs::read(d.join("out/in.bin-offset4-size2.co"))? != b"45" {
        return Err("roc-obj-extract did not write the other URI's file".into());
    }
    if r.code != 1 || !r.stderr.contains("symbolic link") {
        return Err(format!("roc-obj-extract: exit {}: {}", r.code, r.stderr).into());
    }
    let bad: Vec<&str> = std::iter::repeat_n("http://x", 256).collect();
    let r = run_within(LIMIT, &ex, &bad, d)?;
    if r.code != 255 {
        return Err(format!("256 failing URIs: exit {}", r.code).into());
    }
    Ok(())
}
