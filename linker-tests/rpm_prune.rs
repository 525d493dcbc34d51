//! Pruning RPM packages (issue #73): the RPMs rpms.rs builds with
//! `rpmbuild` (gzip, xz and zstd payloads, HIP and OpenMP libraries for
//! gfx90a and gfx1030) pruned `--keep gfx1030 -o`: `rpm -K` finds every
//! digest true, `rpm -qp --dump` gives each file the size and digest of
//! the bytes `rpm -i --root` installs, and each library installed is byte
//! for byte the library pruned alone. Per-GPU files go by name; a signed
//! RPM comes out unsigned, the report naming what went (a dry run names
//! what would go; `--strict` refuses it), its signature header as long
//! as before so that `rpmsign` signs it in place again; a damaged one is
//! exit 2, nothing written; a killed `--in-place` run leaves the old file
//! or the new one. A package holding a (sparse) 4 GiB file, whose payload
//! rpm writes in its stripped cpio form, is pruned in that form.

use std::path::Path;

use libtest_mimic::{Failed, Trial};
use sha2::{Digest, Sha256};

use crate::rpms::{METHODS, fixture, main_header, rpmbuild, spec};
use crate::util::{ours, run, same, trial};

/// The tools the trials run.
const TOOLS: &[&str] = &["clang", "rpmbuild", "rpm2cpio", "rpm", "rpmsign", "gpg"];

pub fn tests() -> Vec<Trial> {
    let t = |name: &str, f: fn() -> Result<(), Failed>| trial(format!("prune::rpms::{name}"), TOOLS, f);
    vec![
        t("pruned_rpms_verify_and_install_the_libraries_pruned_alone", pruned_install),
        t("per_gpu_files_go_by_name", per_gpu_files),
        t("a_signed_rpm_comes_out_unsigned_and_says_so", signed),
        t("a_damaged_rpm_is_exit_2_and_nothing_written", damaged),
        t("a_killed_in_place_run_leaves_the_old_rpm_or_the_new", killed),
        t("a_stripped_payload_with_a_4_gib_file_is_pruned_in_its_form", stripped),
    ]
}

/// `rpm ARGS` with its database under `d`: its output, or the failure.
fn rpm(d: &Path, args: &[&str]) -> Result<String, Failed> {
    let db = d.join("rpmdb");
    let db = db.to_string_lossy();
    let mut a = vec!["--dbpath", &*db];
    a.extend(args);
    let r = run(Path::new("rpm"), &a, d).ok()?;
    Ok(String::from_utf8_lossy(&r.stdout).into_owned())
}

/// `rpm -K` of `file` (signatures checked when `sigs`): every digest
/// `OK`, none `NOT OK`.
fn verified(d: &Path, file: &str, sigs: bool) -> Result<String, Failed> {
    let mut a = vec!["-Kv"];
    if !sigs {
        a.push("--nosignature");
    }
    a.push(file);
    let said = rpm(d, &a)?;
    if said.contains("NOT OK") || said.contains("BAD") || !said.contains("Payload SHA256 digest: OK") {
        return Err(format!("rpm -Kv {file}:\n{said}").into());
    }
    Ok(said)
}

/// Installs `file` under `d/name` (a root of its own); that root.
fn install(d: &Path, file: &str, name: &str) -> Result<std::path::PathBuf, Failed> {
    let root = d.join(name);
    let _ = std::fs::remove_dir_all(&root);
    std::fs::create_dir_all(&root)?;
    let r = root.to_string_lossy();
    let args = ["--root", &*r, "--dbpath", "/rpmdb", "--nodeps", "--nosignature", "--noscripts", "-i", file];
    run(Path::new("rpm"), &args, d).ok()?;
    Ok(root)
}

/// Each file `rpm -qp --dump` lists of `file`, with the size and digest it
/// gives: `(path, size, digest)`.
fn dump(d: &Path, file: &str) -> Result<Vec<(String, u64, String)>, Failed> {
    let said = rpm(d, &["-qp", "--dump", file])?;
    let mut out = Vec::new();
    for line in said.lines() {
        let f: Vec<&str> = line.split(' ').collect();
        let size = f.get(1).and_then(|s| s.parse().ok()).ok_or_else(|| format!("dump: {line}"))?;
        out.push((f[0].to_string(), size, f.get(3).unwrap_or(&"").to_string()));
    }
    Ok(out)
}

/// Each RPM pruned `--keep gfx1030 -o` passes `rpm -K`; `--dump`'s sizes
/// and SHA-256 digests are those of the files installed; each library
/// installed is the one `prune --keep gfx1030` makes of it alone, not
/// what it was; the text file is as it was.
fn pruned_install() -> Result<(), Failed> {
    let d = fixture()?;
    let src = d.join("root/usr/lib");
    for lib in ["libhipk.so", "libompk.so"] {
        let out = d.join(format!("alone-{lib}"));
        let lib = src.join(lib);
        run(&ours(), &["prune", "--keep", "gfx1030", "-o", &out.to_string_lossy(), &lib.to_string_lossy()], d).ok()?;
    }
    for (_, method, name) in METHODS {
        let out = format!("pruned-{method}.rpm");
        let r = run(&ours(), &["prune", "--keep", "gfx1030", "-o", &out, name], d).ok()?;
        let said = String::from_utf8_lossy(&r.stdout).into_owned();
        if said.contains("nothing to remove") {
            return Err(format!("{name}: {said}").into());
        }
        verified(d, &out, false)?;
        let compressor = rpm(d, &["-qp", "--qf", "%{PAYLOADCOMPRESSOR}", &out])?;
        same(&format!("{out}: payload method"), compressor.as_str(), *method)?;
        let root = install(d, &out, &format!("root-{method}"))?;
        let listed = dump(d, &out)?;
        same(&format!("{out}: files listed"), listed.len(), 3)?;
        for (path, size, digest) in &listed {
            let bytes = std::fs::read(root.join(path.trim_start_matches('/')))?;
            same(&format!("{out}: {path}: size"), *size, bytes.len() as u64)?;
            let sha = format!("{:x}", Sha256::digest(&bytes));
            same(&format!("{out}: {path}: digest"), digest.as_str(), sha.as_str())?;
            let base = path.rsplit('/').next().unwrap_or_default();
            let was = std::fs::read(src.join(base))?;
            let want = match base.ends_with(".so") {
                true => std::fs::read(d.join(format!("alone-{base}")))?,
                false => was.clone(),
            };
            if bytes != want || (base.ends_with(".so") && bytes == was) {
                return Err(format!("{out}: {path}: not the library pruned alone ({} bytes, was {})", bytes.len(), was.len()).into());
            }
        }
    }
    Ok(())
}

/// An RPM with rocBLAS-style per-GPU files beside a library, pruned
/// `--keep gfx90a`: the gfx906 file goes (named in the report), the
/// gfx90a one stays, and the package verifies and lists what stays.
fn per_gpu_files() -> Result<(), Failed> {
    let d = fixture()?;
    let src = d.join("gpu-src");
    std::fs::create_dir_all(&src)?;
    for gpu in ["gfx906", "gfx90a"] {
        std::fs::write(src.join(format!("TensileLibrary_{gpu}.co")), format!("code objects of {gpu}\n").repeat(40))?;
    }
    std::fs::copy(d.join("root/usr/lib/libhipk.so"), src.join("libhipk.so"))?;
    // rocBLAS's layout: the per-GPU files in `rocblas/library/`.
    let lib = "/usr/lib64/rocblas/library";
    let more = format!(
        "mkdir -p %{{buildroot}}{lib}\ncp {}/TensileLibrary_* %{{buildroot}}{lib}/\n%files\n\
         {lib}/TensileLibrary_gfx906.co\n{lib}/TensileLibrary_gfx90a.co\n",
        src.display()
    );
    let text = spec("w9.gzdio", &src, &["libhipk.so"]).replace("%files\n", &more);
    rpmbuild(d, &text, "gpu", "gpu.rpm")?;
    let r = run(&ours(), &["prune", "--keep", "gfx90a", "-o", "gpu-pruned.rpm", "gpu.rpm"], d).ok()?;
    let said = String::from_utf8_lossy(&r.stdout).into_owned();
    if !said.contains("gpu.rpm!/usr/lib64/rocblas/library/TensileLibrary_gfx906.co") {
        return Err(format!("the report names no per-GPU file removed:\n{said}").into());
    }
    verified(d, "gpu-pruned.rpm", false)?;
    let listed = rpm(d, &["-qpl", "gpu-pruned.rpm"])?;
    let want = "/usr/lib64/libhipk.so\n/usr/lib64/rocblas/library/TensileLibrary_gfx90a.co\n";
    same("files of the pruned package", listed.as_str(), want)?;
    let root = install(d, "gpu-pruned.rpm", "root-gpu")?;
    if root.join("usr/lib64/rocblas/library/TensileLibrary_gfx906.co").exists() {
        return Err("the gfx906 file was installed".into());
    }
    Ok(())
}

/// `rpmsign --addsign FILE` in `d` with the throwaway key in `home`
/// (made when not there yet).
fn sign(d: &Path, file: &str) -> Result<(), Failed> {
    let home = d.join("gnupg");
    let h = home.to_string_lossy();
    if !home.exists() {
        std::fs::create_dir_all(&home)?;
        std::fs::set_permissions(&home, std::os::unix::fs::PermissionsExt::from_mode(0o700))?;
        let keygen = ["--homedir", &*h, "--batch", "--passphrase", "", "--quick-gen-key", "Throwaway <t@example.com>", "rsa2048", "sign", "never"];
        run(Path::new("gpg"), &keygen, d).ok()?;
    }
    let name = "_gpg_name Throwaway <t@example.com>";
    let path = format!("_gpg_path {h}");
    // rpm's default `%__gpg` is gpg2, which Debian does not ship.
    let gpg = "__gpg /usr/bin/gpg";
    let sign = ["--define", gpg, "--define", name, "--define", &path, "--addsign", file];
    run(Path::new("rpmsign"), &sign, d).ok()?;
    Ok(())
}

/// The value of `key` in `v`, wherever it is first found.
fn field<'v>(v: &'v serde_json::Value, key: &str) -> Option<&'v serde_json::Value> {
    match v {
        serde_json::Value::Object(m) => m.get(key).or_else(|| m.values().find_map(|x| field(x, key))),
        serde_json::Value::Array(a) => a.iter().find_map(|x| field(x, key)),
        _ => None,
    }
}

/// An RPM signed with a throwaway key (`rpmsign --addsign`) and pruned
/// comes out without its signatures, verifying with `rpm -K` as an
/// unsigned package does; the report and `--json` name what went, a dry
/// run what would go; `--strict` refuses it; its signature header keeps
/// its length (the reserved space grown), and `rpmsign` signs it again in
/// place.
fn signed() -> Result<(), Failed> {
    let d = fixture()?;
    std::fs::copy(d.join("gz.rpm"), d.join("signed.rpm"))?;
    sign(d, "signed.rpm")?;
    let before = rpm(d, &["-Kv", "--nosignature", "signed.rpm"])?;
    let sigs = rpm(d, &["-qp", "--qf", "%{RSAHEADER:pgpsig}", "signed.rpm"])?;
    if !sigs.contains("RSA") {
        return Err(format!("rpmsign did not sign it: {sigs}\n{before}").into());
    }
    let r = run(&ours(), &["prune", "--keep", "gfx1030", "-o", "signed-pruned.rpm", "signed.rpm"], d).ok()?;
    let said = String::from_utf8_lossy(&r.stdout).into_owned();
    if !said.contains("signatures removed") || !said.contains("rpmsign") {
        return Err(format!("the report does not say the signatures went:\n{said}").into());
    }
    let all = verified(d, "signed-pruned.rpm", true)?;
    if all.contains("Header V4") || all.contains("Signature") {
        return Err(format!("signatures left:\n{all}").into());
    }
    let doc = crate::util::ours_json(&["prune", "--json", "--keep", "gfx1030", "-o", "signed-pruned-2.rpm", "signed.rpm"], d)?;
    let gone = doc.to_string();
    if !gone.contains("signatures_removed") || !gone.contains("RSA header signature") {
        return Err(format!("--json names no signature removed: {gone}").into());
    }
    dry_run_names_them(d, field(&doc, "signatures_removed"))?;
    strict_refuses(d)?;
    resigned_in_place(d)
}

/// `--dry-run` of the signed package: the text says which signatures
/// would be removed, and `--json` names the ones a written run `wrote`.
fn dry_run_names_them(d: &Path, wrote: Option<&serde_json::Value>) -> Result<(), Failed> {
    let r = run(&ours(), &["prune", "--dry-run", "--keep", "gfx1030", "signed.rpm"], d).ok()?;
    let said = String::from_utf8_lossy(&r.stdout).into_owned();
    if !said.contains("signatures would be removed (") || !said.contains("RSA header signature") {
        return Err(format!("the dry run does not say the signatures would go:\n{said}").into());
    }
    let doc = crate::util::ours_json(&["prune", "--dry-run", "--json", "--keep", "gfx1030", "signed.rpm"], d)?;
    let would = field(&doc, "signatures_removed");
    if would.is_none_or(|w| w.as_array().is_none_or(Vec::is_empty)) || would != wrote {
        return Err(format!("--dry-run --json: {would:?}, a written run: {wrote:?}").into());
    }
    Ok(())
}

/// `--strict`: the signed package is refused by name, exit 2, saying it
/// is signed, nothing written (with `-o`, and with `--in-place`).
fn strict_refuses(d: &Path) -> Result<(), Failed> {
    let out = d.join("strict-pruned.rpm");
    let o = out.to_string_lossy();
    std::fs::copy(d.join("signed.rpm"), d.join("strict-in-place.rpm"))?;
    let before = std::fs::read(d.join("strict-in-place.rpm"))?;
    for args in [vec!["-o", &*o, "signed.rpm"], vec!["--in-place", "strict-in-place.rpm"], vec!["--dry-run", "signed.rpm"]] {
        let mut a = vec!["prune", "--strict", "--keep", "gfx1030"];
        a.extend(&args);
        let r = run(&ours(), &a, d);
        let name = args.last().copied().unwrap_or_default();
        let e = &r.stderr;
        if r.code != 2 || !e.contains(name) || !e.contains("it is signed (") || !e.contains("without --strict") || out.exists() {
            return Err(format!("{a:?}: exit {}, written {}: {e}", r.code, out.exists()).into());
        }
    }
    if std::fs::read(d.join("strict-in-place.rpm"))? != before {
        return Err("--strict --in-place changed the signed package".into());
    }
    Ok(())
}

/// The pruned package's signature header is as long as the signed one's
/// (rpm's reserved space grown by what the signatures took, as `rpmsign
/// --delsign` leaves it), and `rpmsign --addsign` signs it again in
/// place: the main header does not move, and `rpm -K` finds the new
/// signature good.
fn resigned_in_place(d: &Path) -> Result<(), Failed> {
    let signed = main_header(&std::fs::read(d.join("signed.rpm"))?)?;
    let pruned = main_header(&std::fs::read(d.join("signed-pruned.rpm"))?)?;
    if pruned != signed {
        return Err(format!("the main header moved from {signed} to {pruned}").into());
    }
    std::fs::copy(d.join("signed-pruned.rpm"), d.join("resigned.rpm"))?;
    sign(d, "resigned.rpm")?;
    let again = main_header(&std::fs::read(d.join("resigned.rpm"))?)?;
    let said = rpm(d, &["-Kv", "--nosignature", "resigned.rpm"])?;
    let sigs = rpm(d, &["-qp", "--qf", "%{RSAHEADER:pgpsig}", "resigned.rpm"])?;
    if again != signed || !sigs.contains("RSA") || said.contains("NOT OK") {
        return Err(format!("signed again, the main header is at {again}, not {signed}: {sigs}\n{said}").into());
    }
    Ok(())
}

/// An RPM with a payload byte changed, or cut short: `prune -o` is exit
/// 2 naming it, and writes nothing.
fn damaged() -> Result<(), Failed> {
    let d = fixture()?;
    for (_, method, name) in METHODS {
        let good = std::fs::read(d.join(name))?;
        let mut flipped = good.clone();
        let at = good.len() - good.len() / 5;
        flipped[at] ^= 0x55;
        for (what, bytes) in [("flipped", flipped), ("cut", good[..good.len() - 100].to_vec())] {
            let file = format!("bad-{what}-{method}.rpm");
            std::fs::write(d.join(&file), &bytes)?;
            let out = d.join(format!("bad-out-{method}.rpm"));
            let r = run(&ours(), &["prune", "--keep", "gfx1030", "-o", &out.to_string_lossy(), &file], d);
            if r.code != 2 || !r.stderr.contains(&file) || out.exists() {
                return Err(format!("{file}: exit {}, written {}: {}", r.code, out.exists(), r.stderr).into());
            }
        }
    }
    Ok(())
}

/// `--in-place` killed with SIGKILL at ten points of its run: the file is
/// the old RPM or the new one each time, both seen.
fn killed() -> Result<(), Failed> {
    let d = fixture()?;
    crate::util::old_or_new_when_killed(d, ("zst.rpm", "work.rpm"), "gfx1030", 10)
}

/// The first bytes of the zstd payload of the RPM `bytes` (after its
/// main header), decompressed.
fn payload_start(bytes: &[u8]) -> Result<Vec<u8>, Failed> {
    let main = crate::rpms::main_header(bytes)?;
    let at = bytes[main..].windows(4).position(|w| w == [0x28, 0xb5, 0x2f, 0xfd]).ok_or("no zstd payload")?;
    let mut start = vec![0u8; 16];
    let mut z = zstd::stream::read::Decoder::new(&bytes[main + at..])?;
    std::io::Read::read_exact(&mut z, &mut start)?;
    Ok(start)
}

/// A package of the HIP library, a per-GPU file and a sparse 4 GiB file
/// (zstd payload): rpm writes its payload in the stripped cpio form
/// (`07070X`, files named by their index in the header's sorted list).
/// Pruned `--keep gfx1030 -o`, the per-GPU file (the second of the list)
/// goes, so the large file after it is named by a new index; the payload
/// is in the stripped form still; `rpm -K` finds every digest true, `rpm
/// -qp --dump` gives the library the size and digest of the bytes `rpm -i
/// --root` installs, which are the library pruned alone, and the large
/// file its 4 GiB.
fn stripped() -> Result<(), Failed> {
    let d = fixture()?;
    let src = d.join("big-src");
    std::fs::create_dir_all(&src)?;
    std::fs::copy(d.join("root/usr/lib/libhipk.so"), src.join("libhipk.so"))?;
    std::fs::write(src.join("TensileLibrary_gfx906.co"), "code objects of gfx906\n".repeat(40))?;
    std::fs::File::create(src.join("zz-huge.bin"))?.set_len(4 << 30)?;
    let lib = "/usr/lib64/rocblas/library";
    let more = format!(
        "mkdir -p %{{buildroot}}{lib}\ncp {}/TensileLibrary_* %{{buildroot}}{lib}/\n%files\n{lib}/TensileLibrary_gfx906.co\n",
        src.display()
    );
    let text = spec("w3.zstdio", &src, &["zz-huge.bin", "libhipk.so"]).replace("cp ", "cp --sparse=always ").replace("%files\n", &more);
    rpmbuild(d, &text, "big", "big.rpm")?;
    let old = std::fs::read(d.join("big.rpm"))?;
    same("big.rpm: its payload's form", &payload_start(&old)?[..6], b"07070X")?;
    let alone = d.join("big-alone.so");
    run(&ours(), &["prune", "--keep", "gfx1030", "-o", &alone.to_string_lossy(), &src.join("libhipk.so").to_string_lossy()], d).ok()?;
    let args = ["prune", "--max-uncompressed", "8G", "--keep", "gfx1030", "-o", "big-pruned.rpm", "big.rpm"];
    let r = run(&ours(), &args, d).ok()?;
    if !String::from_utf8_lossy(&r.stdout).contains("TensileLibrary_gfx906.co") {
        return Err(format!("the report names no per-GPU file removed:\n{}", String::from_utf8_lossy(&r.stdout)).into());
    }
    same("big-pruned.rpm: its payload's form", &payload_start(&std::fs::read(d.join("big-pruned.rpm"))?)?[..6], b"07070X")?;
    verified(d, "big-pruned.rpm", false)?;
    let listed = dump(d, "big-pruned.rpm")?;
    let sizes: Vec<(&str, u64)> = listed.iter().map(|(p, s, _)| (p.as_str(), *s)).collect();
    let want_len = std::fs::metadata(&alone)?.len();
    same("big-pruned.rpm: files listed", sizes, vec![("/usr/lib64/libhipk.so", want_len), ("/usr/lib64/zz-huge.bin", 4 << 30)])?;
    let root = install(d, "big-pruned.rpm", "root-big")?;
    let lib = std::fs::read(root.join("usr/lib64/libhipk.so"))?;
    let sha = format!("{:x}", Sha256::digest(&lib));
    same("big-pruned.rpm: the library's digest", listed[0].2.as_str(), sha.as_str())?;
    if lib != std::fs::read(&alone)? {
        return Err("big-pruned.rpm: the library installed is not the library pruned alone".into());
    }
    let huge = std::fs::metadata(root.join("usr/lib64/zz-huge.bin"))?.len();
    let per_gpu = root.join("usr/lib64/rocblas/library/TensileLibrary_gfx906.co").exists();
    std::fs::remove_dir_all(&root)?;
    same("big-pruned.rpm: the per-GPU file installed", per_gpu, false)?;
    same("big-pruned.rpm: the large file installed", huge, 4 << 30)
}
