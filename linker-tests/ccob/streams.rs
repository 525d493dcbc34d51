//! Streamed unbundling: the drop-in's and `offload-kit unbundle`'s, on one
//! and several threads, against LLVM's files, and every damaged bundle an
//! error with nothing left behind.

use super::*;

/// Unbundling compressed bundles, which our drop-in streams: LLVM's CCOB,
/// ours on two threads (several frames) and a zlib one, each target alone
/// and both, with and without `-verbose`: the same files, exit codes and
/// reports as LLVM's. A hash mismatch passes without `-verbose`, as in
/// LLVM, and fails with it; a CCOB whose sizes lie fails and leaves no
/// output behind.
fn streamed_unbundle() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    // Large enough (over 1 MiB compressed) to be read through the file.
    let u = make_inputs(d, 6_000_000, 21)?;
    bundler(&bundle_args("z.ccob", &["-compress"]), &[], d).ok()?;
    let threaded = CompressOptions {
        threads: 2,
        ..CompressOptions::default()
    };
    std::fs::write(d.join("mt.ccob"), ccob::compress_to_vec(&u, &threaded)?.0)?;
    let zlib = CompressOptions {
        method: Method::ZLIB,
        level: 6,
        ..CompressOptions::default()
    };
    std::fs::write(d.join("zlib.ccob"), ccob::compress_to_vec(&u, &zlib)?.0)?;
    let z = std::fs::read(d.join("z.ccob"))?;
    if z.len() < 1 << 20 {
        return Err(format!(
            "z.ccob: {} bytes, too few to be read through the file",
            z.len()
        )
        .into());
    }
    let n = u.len() as u64;
    let lie = |at: usize, v: u64| {
        let mut c = z.clone();
        c[at..at + 8].copy_from_slice(&v.to_le_bytes());
        c
    };
    let mut bad_hash = z.clone();
    bad_hash[24] ^= 1;
    std::fs::write(d.join("bad-hash.ccob"), &bad_hash)?;
    let host = "host-x86_64-unknown-linux-gnu";
    let dev = "hip-amdgcn-amd-amdhsa--gfx90a";
    let unbundle = |file: &str, targets: &[&str], tag: &str| -> Vec<String> {
        let mut a = vec![
            "-type=bc".to_string(),
            "-unbundle".into(),
            format!("-targets={}", targets.join(",")),
            format!("-input={file}"),
        ];
        a.extend((0..targets.len()).map(|i| format!("-output={tag}.{i}")));
        a
    };
    let verbose = [("OFFLOAD_BUNDLER_VERBOSE", "1")];
    for file in ["z.ccob", "mt.ccob", "zlib.ccob", "bad-hash.ccob"] {
        for targets in [&[host][..], &[dev], &[dev, host]] {
            for env in [&[][..], &verbose] {
                let what = format!("{file} {targets:?} {env:?}");
                let theirs = bundler(&unbundle(file, targets, "llvm"), env, d);
                let mine = our_bundler(&unbundle(file, targets, "ours"), env, d);
                if file == "bad-hash.ccob" && !env.is_empty() {
                    // LLVM reports the mismatch and goes on; we refuse.
                    same(&format!("{what}: our exit code"), mine.code, 1)?;
                    for i in 0..targets.len() {
                        if d.join(format!("ours.{i}")).exists() {
                            return Err(format!("{what}: ours.{i} written").into());
                        }
                    }
                    continue;
                }
                same(&format!("{what}: exit code"), mine.code, theirs.code)?;
                same(
                    &format!("{what}: reports"),
                    timeless(&llvm_report(&mine.stderr).join("\n")),
                    timeless(&llvm_report(&theirs.stderr).join("\n")),
                )?;
                for i in 0..targets.len() {
                    let ours = std::fs::read(d.join(format!("ours.{i}")))?;
                    let llvm = std::fs::read(d.join(format!("llvm.{i}")))?;
                    same_bytes(&format!("{what}: output {i}"), &ours, &llvm)?;
                    std::fs::remove_file(d.join(format!("ours.{i}")))?;
                    std::fs::remove_file(d.join(format!("llvm.{i}")))?;
                }
            }
        }
    }
    // Declared sizes that lie (and a cut payload): an error, nothing
    // written, whichever target is wanted.
    let mut cut = z[..z.len() - 9].to_vec();
    let len = cut.len() as u64;
    cut[8..16].copy_from_slice(&len.to_le_bytes());
    for (name, data) in [
        ("short", lie(16, n - 1)),
        ("long", lie(16, n + 1)),
        ("cut", cut),
    ] {
        let file = format!("{name}.ccob");
        std::fs::write(d.join(&file), &data)?;
        for targets in [&[host][..], &[dev]] {
            let mine = our_bundler(&unbundle(&file, targets, "ours"), &[], d);
            same(&format!("{name} {targets:?}: our exit code"), mine.code, 1)?;
            if d.join("ours.0").exists() {
                return Err(format!("{name} {targets:?}: output written").into());
            }
        }
    }
    Ok(())
}

/// `offload-kit unbundle --threads N` on a CCOB of several zstd frames
/// (ours, from `bundle --compress --threads 2`): the files are the same on
/// one, two and three threads, and the same as LLVM's unbundling of it;
/// every cut and every lying size is an error on every thread count, with
/// no file (and no temporary) left in the output directory.
fn native_unbundle_threads() -> Result<(), Failed> {
    let t = Threaded::make()?;
    t.same_files_on_every_thread_count()?;
    for (what, data) in damaged(&t.mt, t.uncompressed) {
        t.damaged_is_refused(&what, &data)?;
    }
    Ok(())
}

/// The host entry of the threaded CCOB.
const HOST_ID: &str = "host-x86_64-unknown-linux-gnu";
/// Its device entry.
const DEV_ID: &str = "hip-amdgcn-amd-amdhsa--gfx90a";

/// `a` as owned arguments.
fn strings(a: &[&str]) -> Vec<String> {
    a.iter().map(|s| s.to_string()).collect()
}

/// A CCOB of several zstd frames, `mt.ccob`, made by `offload-kit bundle
/// --compress --threads 2` in a directory of its own with its inputs.
struct Threaded {
    /// The directory.
    dir: tempfile::TempDir,
    /// The CCOB's bytes.
    mt: Vec<u8>,
    /// The size its header declares once decompressed.
    uncompressed: u64,
}

impl Threaded {
    /// Makes the inputs and the CCOB, and checks that it holds several
    /// frames.
    fn make() -> Result<Threaded, Failed> {
        let dir = tempdir();
        let d = dir.path();
        make_inputs(d, 5_000_000, 33)?;
        run(
            &ours(),
            &strings(&[
                "bundle",
                "--type",
                "bc",
                "--compress",
                "--threads",
                "2",
                "-o",
                "mt.ccob",
                &format!("{HOST_ID}=host.bc"),
                &format!("{DEV_ID}=dev.bc"),
            ]),
            d,
        )
        .ok()?;
        let mt = std::fs::read(d.join("mt.ccob"))?;
        let header = ccob::Header::parse(&mt)?;
        let mut frames = 0;
        let mut rest = &mt[usize::try_from(header.size())?..];
        while !rest.is_empty() {
            let n = zstd::zstd_safe::find_frame_compressed_size(rest)
                .map_err(|_| "mt.ccob: a frame that zstd cannot walk")?;
            rest = &rest[n..];
            frames += 1;
        }
        if frames < 2 {
            return Err(format!("mt.ccob holds {frames} zstd frame(s), not several").into());
        }
        let uncompressed = header.uncompressed_size;
        Ok(Threaded {
            dir,
            mt,
            uncompressed,
        })
    }

    /// `offload-kit unbundle FILE -o OUT --threads THREADS`.
    fn unbundle(&self, file: &str, out: &str, threads: &str) -> Run {
        run(
            &ours(),
            &strings(&[
                "unbundle",
                file,
                &format!("{HOST_ID}=h"),
                &format!("{DEV_ID}=d"),
                "-o",
                out,
                "--threads",
                threads,
            ]),
            self.dir.path(),
        )
    }

    /// `offload-kit extract FILE -o OUT --include-host`, `OUT` removed
    /// first.
    fn extract(&self, file: &str, out: &str) -> Run {
        let d = self.dir.path();
        let _ = std::fs::remove_dir_all(d.join(out));
        run(
            &ours(),
            &strings(&["extract", file, "-o", out, "--include-host"]),
            d,
        )
    }

    /// The files unbundled on one, two and three threads are LLVM's and
    /// the inputs; `extract` streams the entries out: the inputs' bytes.
    fn same_files_on_every_thread_count(&self) -> Result<(), Failed> {
        let d = self.dir.path();
        bundler(
            &[
                "-type=bc".to_string(),
                "-unbundle".into(),
                TARGETS.into(),
                "-input=mt.ccob".into(),
                "-output=llvm.0".into(),
                "-output=llvm.1".into(),
            ],
            &[],
            d,
        )
        .ok()?;
        for threads in ["1", "2", "3"] {
            let out = format!("t{threads}");
            self.unbundle("mt.ccob", &out, threads).ok()?;
            for (name, llvm_file, input) in [("h", "llvm.0", "host.bc"), ("d", "llvm.1", "dev.bc")]
            {
                let got = std::fs::read(d.join(&out).join(name))?;
                let what = format!("--threads {threads}: {name}");
                same_bytes(
                    &format!("{what} vs LLVM"),
                    &got,
                    &std::fs::read(d.join(llvm_file))?,
                )?;
                same_bytes(
                    &format!("{what} vs the input"),
                    &got,
                    &std::fs::read(d.join(input))?,
                )?;
            }
        }
        self.extract("mt.ccob", "x").ok()?;
        for (id, input) in [(HOST_ID, "host.bc"), (DEV_ID, "dev.bc")] {
            let name = std::fs::read_dir(d.join("x"))?
                .filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .find(|n| n.contains(id))
                .ok_or_else(|| format!("extract wrote no file for {id}"))?;
            same_bytes(
                &format!("extract: {name}"),
                &std::fs::read(d.join("x").join(&name))?,
                &std::fs::read(d.join(input))?,
            )?;
        }
        Ok(())
    }

    /// The damaged CCOB `data` (`what`) is an error on one and two threads
    /// naming the file, with nothing left in the output directory; `extract`
    /// fails for it the same way or writes files, and with `--verify` a lie
    /// writes nothing and damage is refused or warned about.
    fn damaged_is_refused(&self, what: &str, data: &[u8]) -> Result<(), Failed> {
        let d = self.dir.path();
        std::fs::write(d.join("bad.ccob"), data)?;
        for threads in ["1", "2"] {
            let out = d.join("bad");
            let _ = std::fs::remove_dir_all(&out);
            let r = self.unbundle("bad.ccob", "bad", threads);
            if r.code == 0 {
                return Err(format!("{what}, --threads {threads}: unbundled").into());
            }
            if !r.stderr.contains("bad.ccob") {
                return Err(
                    format!("{what}: the error does not name the file: {}", r.stderr).into(),
                );
            }
            let left: Vec<_> = match std::fs::read_dir(&out) {
                Ok(rd) => rd.filter_map(|e| e.ok()).map(|e| e.file_name()).collect(),
                Err(_) => Vec::new(),
            };
            if !left.is_empty() {
                return Err(format!("{what}, --threads {threads}: left {left:?}").into());
            }
        }
        // `extract` either fails for it (exit 2, naming the file, nothing
        // left behind) or, where the damage leaves a valid stream (no zstd
        // checksum; the stored hash is checked only with --verify), writes
        // files; with --verify a damaged stream always fails.
        let r = self.extract("bad.ccob", "xb");
        let left = std::fs::read_dir(d.join("xb")).map_or(0, |rd| rd.count());
        if r.code != 0 && r.code != 2 {
            return Err(format!("{what}: extract exit code {}: {}", r.code, r.stderr).into());
        }
        if r.code == 2 && (left != 0 || !r.stderr.contains("bad.ccob")) {
            return Err(format!(
                "{what}: extract failed but left {left} file(s): {}",
                r.stderr
            )
            .into());
        }
        let _ = std::fs::remove_dir_all(d.join("xb"));
        let v = run(
            &ours(),
            &strings(&[
                "extract",
                "bad.ccob",
                "-o",
                "xb",
                "--include-host",
                "--verify",
            ]),
            d,
        );
        let left = std::fs::read_dir(d.join("xb")).map_or(0, |rd| rd.count());
        // With --verify, a lie is an error with nothing written; damage is
        // that, or (if it still decodes) a warning that the stored hash
        // does not match, as for a wrong hash (the images are extracted,
        // as they always were under --verify).
        let warned = v.stderr.contains("does not match the contents");
        let fine = if what.starts_with("declares") {
            left == 0
        } else {
            left == 0 || warned
        };
        if !fine || (what == "bad hash" && !warned) {
            return Err(
                format!("{what}: extract --verify left {left} file(s): {}", v.stderr).into(),
            );
        }
        Ok(())
    }
}

/// The threaded CCOB `mt` (declaring `n` bytes decompressed) damaged every
/// way: cut at frame boundaries and inside frames (the total size fixed up
/// or not), declaring a wrong size, flipped in the middle, a bad hash.
fn damaged(mt: &[u8], n: u64) -> Vec<(String, Vec<u8>)> {
    let set = |c: &mut Vec<u8>, at: usize, v: u64| c[at..at + 8].copy_from_slice(&v.to_le_bytes());
    let mut bad: Vec<(String, Vec<u8>)> = Vec::new();
    for k in 1..16 {
        let keep = 32 + (mt.len() - 32) * k / 16;
        let mut cut = mt[..keep].to_vec();
        bad.push((format!("cut at {keep}"), cut.clone()));
        set(&mut cut, 8, keep as u64);
        bad.push((format!("cut at {keep}, total fixed"), cut));
    }
    for (what, v) in [("short", n - 1), ("long", n + 1), ("zero", 0)] {
        let mut c = mt.to_vec();
        set(&mut c, 16, v);
        bad.push((format!("declares {what}"), c));
    }
    let mut hit = mt.to_vec();
    let mid = mt.len() / 2;
    hit[mid] ^= 0x40;
    bad.push(("damaged in the middle".into(), hit));
    let mut hash = mt.to_vec();
    hash[24] ^= 1;
    bad.push(("bad hash".into(), hash));
    bad
}

/// The trials of this file.
pub(super) fn tests() -> Vec<Trial> {
    vec![
        trial!(streamed_unbundle, &[TOOL]),
        trial!(native_unbundle_threads, &[TOOL]),
    ]
}
