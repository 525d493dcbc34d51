//! The fourth round of hostile inputs (issue #41): kernel listings that
//! declare millions of kernels, in-place prunes killed or run twice at
//! once, and files whose outer format says where their members lie (tar,
//! cpio, a zip with bytes in front) or says nothing (unknown bytes around a
//! bundle). Each input ends in one clear line and exit 2, or a correct
//! output, within [`SECONDS`] and [`MIB`] of memory; a killed in-place
//! prune leaves the old file or the new one at the path, never nothing.

use super::*;
use crate::util::{bytes, md5_hex, ours_peak, run, run_within};

/// Seconds each command may take.
const SECONDS: u64 = 5;
/// Peak resident memory each command may reach, in MiB.
const MIB: u64 = 512;

pub(super) fn tests() -> Vec<Trial> {
    vec![
        trial!(kernel_listings_stop_at_the_command_allowance, &[]),
        trial!(an_in_place_prune_killed_anywhere_leaves_the_old_or_the_new_file, &[]),
        trial!(two_in_place_prunes_of_one_file_both_find_it, &[]),
        trial!(prune_cuts_only_files_made_of_containers, &["tar", "zip"]),
        trial!(every_scanner_command_over_the_fuzz_corpora_ends_without_a_panic, &[]),
    ]
}

/// Every scanner command over the committed fuzz corpora (thousands of
/// hostile files, each the input of a fuzz target): each ends with exit 0,
/// 1 or 2, never a panic. The totals of `size` (two fatbin entries that
/// declare sizes near 2^64) and its row order (target names with spaces)
/// panicked here once, paths the fuzz bodies do not take.
fn every_scanner_command_over_the_fuzz_corpora_ends_without_a_panic() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    let fuzz = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/fuzz");
    let (f, k, s) = (
        fuzz.to_string_lossy().into_owned(),
        fuzz.join("kernels").to_string_lossy().into_owned(),
        fuzz.join("scan").to_string_lossy().into_owned(),
    );
    let out = d.join("out").to_string_lossy().into_owned();
    let commands: [&[&str]; 9] = [
        &["size", &f],
        &["size", "--json", &f],
        &["inspect", &f],
        &["inspect", "--json", "--kernels", "--demangle", &f],
        &["check", "--require", "sm_80", "--require-kernel", "k*", &f],
        &["check", "--json", "--forbid", "gfx90a", "--any", &f],
        &["extract", "-o", &out, &f],
        &["diff", "--kernels", &k, &s],
        &["diff", "--json", &s, &k],
    ];
    for args in commands {
        let r = crate::util::run(&crate::util::ours(), args, d);
        if !(0..=2).contains(&r.code) || r.stderr.contains("panicked") {
            let tail: String = r
                .stderr
                .lines()
                .rev()
                .take(12)
                .collect::<Vec<_>>()
                .join("\n");
            return Err(format!("{args:?}: exit {}:\n{tail}", r.code).into());
        }
    }
    Ok(())
}

/// Runs our binary with `args` in `d` within [`SECONDS`] and [`MIB`]; what
/// it did.
fn bounded(args: &[&str], d: &Path) -> Result<crate::util::Run, Failed> {
    let (r, kib) = ours_peak(SECONDS + 15, args, d)?;
    if kib > MIB << 10 {
        return Err(format!("{args:?}: peak RSS {} MiB, over {MIB}", kib >> 10).into());
    }
    Ok(r)
}

/// Fails unless `r` is exit 2 with exactly one line on standard error,
/// which names `file` and holds each of `words`.
pub(super) fn one_error(
    what: &str,
    r: &crate::util::Run,
    file: &str,
    words: &[&str],
) -> Result<(), Failed> {
    let lines: Vec<&str> = r.stderr.lines().filter(|l| !l.is_empty()).collect();
    let line = lines.first().copied().unwrap_or_default();
    let named = line.contains(&format!("'{file}'"));
    if r.code != 2 || lines.len() != 1 || !named || words.iter().any(|w| !line.contains(w)) {
        return Err(format!(
            "{what}: want exit 2 and one line naming '{file}' with {words:?}; got exit {}:\n{}",
            r.code, r.stderr
        )
        .into());
    }
    Ok(())
}

/// A binary bundle of `entries` (`ID=FILE` in `d`), compressed (a CCOB at
/// zstd level 19) or not, written to `d/out`.
pub(super) fn bundle(d: &Path, out: &str, compress: bool, entries: &[&str]) -> Result<(), Failed> {
    let mut args = vec!["bundle", "--type", "o", "-o", out];
    if compress {
        args.extend(["--compress", "--level", "19"]);
    }
    args.extend(entries);
    run_within(60, &ours(), &args, d)?.ok()?;
    Ok(())
}

/// PTX text with `n` kernels, each `.entry a`: 9 bytes a kernel.
fn ptx_bomb(n: usize) -> Vec<u8> {
    let mut v = b".version 8.0\n.target sm_80\n.address_size 64\n".to_vec();
    v.reserve(n * 9);
    for _ in 0..n {
        v.extend_from_slice(b".entry a\n");
    }
    v
}

/// A 64-bit little-endian ELF file of machine `machine`, with one `.text`
/// section and `n` global functions defined in it, all named `a`, whose
/// `st_other` is `other` (`STO_CUDA_ENTRY` makes them a cubin's kernels):
/// 24 bytes a symbol. Laid out by hand: the header, `.text`, the symbol
/// table, the two string tables, the section headers (null, `.text`,
/// `.symtab`, `.strtab`, `.shstrtab`).
fn elf_with_symbols(machine: u16, flags: u32, n: usize, other: u8) -> Vec<u8> {
    let shstrtab = b"\0.text\0.symtab\0.strtab\0.shstrtab\0";
    let strtab = b"\0a\0";
    let text_at = 64u64;
    let symtab_at = 80u64;
    let symtab_len = 24 * (n as u64 + 1);
    let strtab_at = symtab_at + symtab_len;
    let shstrtab_at = strtab_at + strtab.len() as u64;
    let shoff = (shstrtab_at + shstrtab.len() as u64).next_multiple_of(8);
    let mut e = Vec::with_capacity(shoff as usize + 5 * 64);
    e.extend_from_slice(b"\x7fELF\x02\x01\x01\x33\x07");
    e.resize(16, 0);
    e.extend_from_slice(&2u16.to_le_bytes()); // ET_EXEC
    e.extend_from_slice(&machine.to_le_bytes());
    e.extend_from_slice(&1u32.to_le_bytes());
    e.extend_from_slice(&0u64.to_le_bytes()); // e_entry
    e.extend_from_slice(&0u64.to_le_bytes()); // e_phoff
    e.extend_from_slice(&shoff.to_le_bytes());
    e.extend_from_slice(&flags.to_le_bytes());
    for v in [64u16, 56, 0, 64, 5, 4] {
        e.extend_from_slice(&v.to_le_bytes());
    }
    e.resize(80, 0); // .text: 16 zero bytes
    e.resize(80 + 24, 0); // the null symbol
    let mut sym = Vec::with_capacity(24);
    sym.extend_from_slice(&1u32.to_le_bytes()); // "a"
    sym.push(0x12); // STB_GLOBAL, STT_FUNC
    sym.push(other);
    sym.extend_from_slice(&1u16.to_le_bytes()); // .text
    sym.extend_from_slice(&0u64.to_le_bytes());
    sym.extend_from_slice(&16u64.to_le_bytes());
    for _ in 0..n {
        e.extend_from_slice(&sym);
    }
    e.extend_from_slice(strtab);
    e.extend_from_slice(shstrtab);
    e.resize(shoff as usize, 0);
    let mut section = |name: u32,
                       kind: u32,
                       flags: u64,
                       at: u64,
                       len: u64,
                       link: u32,
                       info: u32,
                       entsize: u64| {
        e.extend_from_slice(&name.to_le_bytes());
        e.extend_from_slice(&kind.to_le_bytes());
        e.extend_from_slice(&flags.to_le_bytes());
        e.extend_from_slice(&0u64.to_le_bytes());
        e.extend_from_slice(&at.to_le_bytes());
        e.extend_from_slice(&len.to_le_bytes());
        e.extend_from_slice(&link.to_le_bytes());
        e.extend_from_slice(&info.to_le_bytes());
        e.extend_from_slice(&8u64.to_le_bytes());
        e.extend_from_slice(&entsize.to_le_bytes());
    };
    section(0, 0, 0, 0, 0, 0, 0, 0);
    section(1, 1, 6, text_at, 16, 0, 0, 0); // .text: SHF_ALLOC | SHF_EXECINSTR
    section(7, 2, 0, symtab_at, symtab_len, 3, 1, 24); // .symtab, linked to .strtab
    section(15, 3, 0, strtab_at, strtab.len() as u64, 0, 0, 0);
    section(23, 3, 0, shstrtab_at, shstrtab.len() as u64, 0, 0, 0);
    e
}

/// An AMDGPU code object (`EM_AMDGPU`, code object v5) whose metadata note
/// lists `n` kernels, each the map `{".name": "a"}`: 9 bytes a kernel.
fn amdgpu_bomb(n: u32) -> Vec<u8> {
    let mut doc = vec![0x81, 0xae];
    doc.extend_from_slice(b"amdhsa.kernels");
    doc.push(0xdd);
    doc.extend_from_slice(&n.to_be_bytes());
    for _ in 0..n {
        doc.extend_from_slice(&[0x81, 0xa5, b'.', b'n', b'a', b'm', b'e', 0xa1, b'a']);
    }
    let mut note = Vec::new();
    note.extend_from_slice(&7u32.to_le_bytes());
    note.extend_from_slice(&(doc.len() as u32).to_le_bytes());
    note.extend_from_slice(&32u32.to_le_bytes());
    note.extend_from_slice(b"AMDGPU\0\0");
    note.extend_from_slice(&doc);
    while note.len() % 4 != 0 {
        note.push(0);
    }
    let mut elf = elf_with_symbols(224, 0x30, 0, 0); // EM_AMDGPU
    // The note section, appended: one more section header after the
    // table (moved to the end), pointing at the note.
    let note_at = elf.len().next_multiple_of(8);
    elf.resize(note_at, 0);
    elf.extend_from_slice(&note);
    let shoff = u64::from_le_bytes(elf[0x28..0x30].try_into().unwrap()) as usize;
    let shnum = u16::from_le_bytes(elf[0x3c..0x3e].try_into().unwrap()) as usize;
    let mut table = elf[shoff..shoff + 64 * shnum].to_vec();
    let mut hdr = vec![0u8; 64];
    hdr[4..8].copy_from_slice(&7u32.to_le_bytes()); // SHT_NOTE
    hdr[24..32].copy_from_slice(&(note_at as u64).to_le_bytes());
    hdr[32..40].copy_from_slice(&(note.len() as u64).to_le_bytes());
    hdr[48..56].copy_from_slice(&4u64.to_le_bytes());
    table.extend_from_slice(&hdr);
    let new_shoff = elf.len().next_multiple_of(8);
    elf.resize(new_shoff, 0);
    elf.extend_from_slice(&table);
    elf[0x28..0x30].copy_from_slice(&(new_shoff as u64).to_le_bytes());
    elf[0x3c..0x3e].copy_from_slice(&((shnum + 1) as u16).to_le_bytes());
    elf[7] = 64; // ELFOSABI_AMDGPU_HSA
    elf[8] = 3; // code object v5
    elf
}

/// Inputs whose images declare millions of kernels (PTX, cubin and AMDGPU
/// metadata, in compressed bundles of a few kilobytes, and 16 MB of PTX in
/// a plain one): `inspect --kernels`, `check --require-kernel` and `diff
/// --kernels` each stop at the command's allowance with one line naming
/// the file and `--max-kernels` (for `diff`, one for each of its two
/// inputs), exit 2, within the time and memory bounds. Raised past what the file holds, the limit lets the listing
/// through, complete.
fn kernel_listings_stop_at_the_command_allowance() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    std::fs::write(d.join("host"), b"").unwrap();
    std::fs::write(d.join("ptx"), ptx_bomb(14 << 20)).unwrap();
    std::fs::write(d.join("ptx16"), ptx_bomb((16 << 20) / 9)).unwrap();
    let cubin = elf_with_symbols(190, 0x50, 4 << 20, 0x10); // EM_CUDA, sm_80
    std::fs::write(d.join("cubin"), cubin).unwrap();
    std::fs::write(d.join("amdgpu"), amdgpu_bomb(6 << 20)).unwrap();
    std::fs::write(d.join("small.ptx"), ptx_bomb(3)).unwrap();
    let host = "host-x86_64-unknown-linux-gnu=host";
    bundle(
        d,
        "ptx.ccob",
        true,
        &[host, "hip-nvptx64-nvidia-cuda--sm_80=ptx"],
    )?;
    bundle(
        d,
        "ptx16.bundle",
        false,
        &[host, "hip-nvptx64-nvidia-cuda--sm_80=ptx16"],
    )?;
    bundle(
        d,
        "cubin.ccob",
        true,
        &[host, "hip-nvptx64-nvidia-cuda--sm_80=cubin"],
    )?;
    bundle(
        d,
        "amdgpu.ccob",
        true,
        &[host, "hipv4-amdgcn-amd-amdhsa--gfx90a=amdgpu"],
    )?;
    bundle(
        d,
        "small.bundle",
        false,
        &[host, "hip-nvptx64-nvidia-cuda--sm_80=small.ptx"],
    )?;
    let size = std::fs::metadata(d.join("ptx.ccob")).unwrap().len();
    if size > 64 << 10 {
        return Err(format!("the PTX bomb takes {size} bytes, not a few kilobytes").into());
    }
    for f in ["ptx.ccob", "ptx16.bundle", "cubin.ccob", "amdgpu.ccob"] {
        let runs: [(&str, Vec<&str>); 3] = [
            ("inspect", vec!["inspect", "--kernels", f]),
            ("check", vec!["check", "--require-kernel", "a", f]),
            ("diff", vec!["diff", "--kernels", "small.bundle", f]),
        ];
        for (what, args) in runs {
            let r = bounded(&args, d)?;
            let words = ["--max-kernels", "250000"];
            if what == "diff" {
                // Every input of the command is an error, each named (which
                // of two inputs scanned at once were cut would depend on
                // their timing), the small one too: two lines.
                let lines: Vec<&str> = r.stderr.lines().collect();
                let names = |f: &str| lines.iter().any(|l| l.contains(&format!("'{f}'")));
                let all = lines.iter().all(|l| words.iter().all(|w| l.contains(w)));
                if r.code != 2 || lines.len() != 2 || !names(f) || !names("small.bundle") || !all {
                    return Err(format!("diff {f}: exit {}: {}", r.code, r.stderr).into());
                }
                continue;
            }
            if what == "check" {
                // check reports its inputs on standard output.
                let out = String::from_utf8_lossy(&r.stdout);
                if r.code != 2 || !out.contains(f) || !out.contains("--max-kernels") {
                    return Err(format!("check {f}: exit {}:\n{out}{}", r.code, r.stderr).into());
                }
                continue;
            }
            one_error(&format!("{what} {f}"), &r, f, &words)?;
        }
    }
    // Raised past what it holds, the limit lets a listing through whole:
    // 1,864,135 PTX kernels of one name, listed once.
    let r = run_within(
        60,
        &ours(),
        &[
            "inspect",
            "--kernels",
            "--max-kernels",
            "2000000",
            "ptx16.bundle",
        ],
        d,
    )?;
    let out = String::from_utf8_lossy(&r.stdout);
    if r.code != 0 || !out.contains("a") || !r.stderr.is_empty() {
        return Err(format!("--max-kernels 2000000: exit {}: {}", r.code, r.stderr).into());
    }
    Ok(())
}

/// A bare bundle of three entries (two of 32 MiB) and what `prune --keep
/// gfx90a` makes of it, in `d`: `orig.hipfb` and `new.hipfb`; their MD5s.
fn bundle_and_pruned(d: &Path) -> Result<(String, String), Failed> {
    std::fs::write(d.join("host"), b"host code").unwrap();
    std::fs::write(d.join("a90"), bytes(90, 32 << 20)).unwrap();
    std::fs::write(d.join("a42"), bytes(42, 32 << 20)).unwrap();
    bundle(
        d,
        "orig.hipfb",
        false,
        &[
            "host-x86_64-unknown-linux-gnu=host",
            "hipv4-amdgcn-amd-amdhsa--gfx90a=a90",
            "hipv4-amdgcn-amd-amdhsa--gfx942=a42",
        ],
    )?;
    let r = run(
        &ours(),
        &["prune", "--keep", "gfx90a", "-o", "new.hipfb", "orig.hipfb"],
        d,
    );
    r.ok()?;
    let old = md5_hex(&std::fs::read(d.join("orig.hipfb")).unwrap());
    let new = md5_hex(&std::fs::read(d.join("new.hipfb")).unwrap());
    if old == new {
        return Err("the prune changed nothing".into());
    }
    Ok((old, new))
}

/// A seed for the kill points: the time, printed so that a failure can be
/// replayed.
fn seed() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |t| t.as_nanos() as u64)
        | 1
}

/// `prune --in-place` killed with SIGKILL 40 times at random points of its
/// run (from before it opens the file to after it has replaced it): each
/// time the file at the path is whole, the old one or the new one, and any
/// `.offload-kit-*` name left beside it (only a kill between the two
/// system calls of the commit can leave one) is a whole copy of either.
fn an_in_place_prune_killed_anywhere_leaves_the_old_or_the_new_file() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    let (old, new) = bundle_and_pruned(d)?;
    let args = ["prune", "--keep", "gfx90a", "--in-place", "work.hipfb"];
    // How long a whole run takes here.
    std::fs::copy(d.join("orig.hipfb"), d.join("work.hipfb")).unwrap();
    let start = std::time::Instant::now();
    run(&ours(), &args, d).ok()?;
    let whole = start.elapsed().as_micros().max(1000) as u64;
    let mut x = seed();
    let (mut olds, mut news) = (0, 0);
    for round in 0..40 {
        std::fs::copy(d.join("orig.hipfb"), d.join("work.hipfb")).unwrap();
        let after = crate::util::kill_point(&mut x, round, 40, whole);
        crate::util::ours_killed_after(&args, d, after).unwrap();
        let at_path = std::fs::read(d.join("work.hipfb"))
            .map_err(|e| format!("round {round} (killed after {after} µs of {whole}): {e}"))?;
        match md5_hex(&at_path) {
            h if h == old => olds += 1,
            h if h == new => news += 1,
            _ => {
                return Err(format!(
                    "round {round} (seed {x}, killed after {after} µs of {whole}): the file \
                     holds {} bytes, neither the old nor the new file",
                    at_path.len()
                )
                .into());
            }
        }
        for name in leftovers(d) {
            let h = md5_hex(&std::fs::read(d.join(&name)).unwrap());
            if h != old && h != new {
                return Err(format!("round {round}: {name} is a partial file").into());
            }
            std::fs::remove_file(d.join(&name)).unwrap();
        }
    }
    // Most points fall inside the run: both outcomes show up.
    if olds == 0 || news == 0 {
        return Err(format!("{olds} old and {news} new files in 40 kills: no spread").into());
    }
    Ok(())
}

/// Two `prune --in-place` of one file started together, ten times: each
/// finds the file (no ENOENT: the path is never empty), each exits 0 or,
/// when the other replaced the file while it ran, exits 2 saying so
/// (round 5: a file changed under an in-place prune is left as it is),
/// and the file ends as the pruned one (the second run finds nothing
/// left to remove, or prunes the same bytes again, or leaves the first
/// run's file).
fn two_in_place_prunes_of_one_file_both_find_it() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    let (_, new) = bundle_and_pruned(d)?;
    let args = ["prune", "--keep", "gfx90a", "--in-place", "work.hipfb"];
    for round in 0..10 {
        std::fs::copy(d.join("orig.hipfb"), d.join("work.hipfb")).unwrap();
        let spawn = || {
            std::process::Command::new(ours())
                .args(args)
                .current_dir(d)
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        };
        let (a, b) = (spawn(), spawn());
        for c in [a, b] {
            let out = c.wait_with_output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            let changed = out.status.code() == Some(2)
                && err.contains("'work.hipfb': it changed while it was pruned");
            if !out.status.success() && !changed {
                return Err(format!("round {round}: {:?}: {err}", out.status).into());
            }
        }
        let h = md5_hex(&std::fs::read(d.join("work.hipfb")).unwrap());
        if h != new || !leftovers(d).is_empty() {
            return Err(
                format!("round {round}: not the pruned file, or {:?}", leftovers(d)).into(),
            );
        }
    }
    Ok(())
}

/// Files whose outer format says where their members lie, and files of
/// unknown format with a bundle inside: `prune --in-place` (and `-o`)
/// refuses each with one line saying what it is, the file unchanged. A
/// bare bundle is pruned.
fn prune_cuts_only_files_made_of_containers() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    std::fs::write(d.join("host"), b"host code").unwrap();
    std::fs::write(d.join("a90"), bytes(1, 5000)).unwrap();
    std::fs::write(d.join("a42"), bytes(2, 5000)).unwrap();
    bundle(
        d,
        "k.hipfb",
        false,
        &[
            "host-x86_64-unknown-linux-gnu=host",
            "hipv4-amdgcn-amd-amdhsa--gfx90a=a90",
            "hipv4-amdgcn-amd-amdhsa--gfx942=a42",
        ],
    )?;
    run(Path::new("tar"), &["cf", "k.tar", "k.hipfb"], d).ok()?;
    run(Path::new("tar"), &["czf", "k.tar.gz", "k.hipfb"], d).ok()?;
    // Zips with bytes in front: stored and deflated, offsets from the zip's
    // own start and (zip -A) from the file's.
    run(Path::new("zip"), &["-q", "-0", "stored.zip", "k.hipfb"], d).ok()?;
    run(
        Path::new("zip"),
        &["-q", "-9", "deflated.zip", "k.hipfb"],
        d,
    )
    .ok()?;
    let stub = bytes(3, 3000);
    for z in ["stored", "deflated"] {
        let zip = std::fs::read(d.join(format!("{z}.zip"))).unwrap();
        let mut sfx = stub.clone();
        sfx.extend_from_slice(&zip);
        std::fs::write(d.join(format!("sfx-{z}.zip")), &sfx).unwrap();
        std::fs::write(d.join(format!("sfx-{z}-adjusted.zip")), &sfx).unwrap();
        run(
            Path::new("zip"),
            &["-q", "-A", &format!("sfx-{z}-adjusted.zip")],
            d,
        )
        .ok()?;
    }
    sfx_members_are_read(d)?;
    // Unknown bytes in front of a bundle, and behind it.
    let k = std::fs::read(d.join("k.hipfb")).unwrap();
    let mut front = bytes(4, 1000);
    front.extend_from_slice(&k);
    std::fs::write(d.join("front.bin"), front).unwrap();
    let mut behind = k.clone();
    behind.extend_from_slice(&bytes(5, 1000));
    std::fs::write(d.join("behind.bin"), behind).unwrap();
    let cases = [
        ("k.tar", "a tar archive"),
        ("k.tar.gz", "a tar archive"),
        ("sfx-stored.zip", "a zip archive with bytes in front of it"),
        (
            "sfx-deflated.zip",
            "a zip archive with bytes in front of it",
        ),
        (
            "sfx-stored-adjusted.zip",
            "a zip archive with bytes in front of it",
        ),
        (
            "sfx-deflated-adjusted.zip",
            "a zip archive with bytes in front of it",
        ),
        (
            "front.bin",
            "its format is not known (the bytes at 0x0 belong to no container)",
        ),
        // A file that starts with a bundle is read as containers one after
        // the other: what follows is damage.
        ("behind.bin", "it holds damaged data"),
    ];
    for (f, says) in cases {
        let before = std::fs::read(d.join(f)).unwrap();
        for how in [&["--in-place", f][..], &["-o", "out", f]] {
            let mut args = vec!["prune", "--keep", "gfx90a"];
            args.extend(how);
            let r = bounded(&args, d)?;
            one_error(&format!("prune {how:?}"), &r, f, &[says])?;
            if std::fs::read(d.join(f)).unwrap() != before || d.join("out").exists() {
                return Err(format!("prune {how:?}: the file changed, or out was written").into());
            }
            if !leftovers(d).is_empty() {
                return Err(format!("prune {how:?}: left {:?}", leftovers(d)).into());
            }
        }
    }
    zip_behind_bytes_without_device_code(d)?;
    // The bare bundle itself is pruned, and its gfx942 entry goes.
    let r = bounded(&["prune", "--keep", "gfx90a", "--in-place", "k.hipfb"], d)?;
    let after = std::fs::read(d.join("k.hipfb")).unwrap();
    if r.code != 0 || after.len() >= k.len() - 5000 || after.windows(6).any(|w| w == b"gfx942") {
        return Err(format!("the bare bundle: exit {}: {}", r.code, r.stderr).into());
    }
    Ok(())
}

/// The scanners read the members of a zip with bytes in front of it,
/// compressed ones included: a deflated bundle behind a stub is no file
/// without device code.
fn sfx_members_are_read(d: &Path) -> Result<(), Failed> {
    for z in ["sfx-deflated.zip", "sfx-deflated-adjusted.zip"] {
        let r = bounded(&["check", "--forbid", "gfx942", z], d)?;
        let out = String::from_utf8_lossy(&r.stdout);
        if r.code != 1 || !out.contains(&format!("{z}!/k.hipfb: forbidden arch gfx942")) {
            return Err(format!("check --forbid gfx942 {z}: exit {}: {out}{}", r.code, r.stderr).into());
        }
    }
    Ok(())
}

/// A zip with bytes in front that holds no device code (an Excel
/// workbook's OLE2 container carries one, as two of statsmodels' test
/// files in a venv do) is a file without device code: nothing to remove,
/// exit 0, not a refusal.
fn zip_behind_bytes_without_device_code(d: &Path) -> Result<(), Failed> {
    std::fs::write(d.join("notes.txt"), b"no device code here").unwrap();
    run(Path::new("zip"), &["-q", "-9", "notes.zip", "notes.txt"], d).ok()?;
    let mut xls = bytes(6, 12000);
    xls.extend_from_slice(&std::fs::read(d.join("notes.zip")).unwrap());
    xls.extend_from_slice(&bytes(7, 4000));
    std::fs::write(d.join("book.xls"), &xls).unwrap();
    std::fs::create_dir(d.join("tree")).unwrap();
    std::fs::write(d.join("tree/book.xls"), &xls).unwrap();
    for args in [
        &["prune", "--keep", "gfx90a", "--in-place", "book.xls"][..],
        &["prune", "--keep", "gfx90a", "--dry-run", "tree"],
        &["prune", "--keep", "gfx90a", "--in-place", "tree"],
    ] {
        let r = bounded(args, d)?;
        let out = String::from_utf8_lossy(&r.stdout);
        let quiet = !out.contains("not pruned") && r.stderr.is_empty();
        if r.code != 0 || !quiet || std::fs::read(d.join("book.xls")).unwrap() != xls {
            return Err(format!("{args:?}: exit {}: {out}{}", r.code, r.stderr).into());
        }
        if args.contains(&"tree") && !out.contains("1 without device code") {
            return Err(format!("{args:?}: not counted without device code: {out}").into());
        }
    }
    Ok(())
}
