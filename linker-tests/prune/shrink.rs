//! Linked programs and libraries that `prune` makes smaller (issue #29):
//! three HIP translation units for gfx90a, gfx1030 and gfx942 (one
//! compressed, one with an 800 KB table in each code object), linked by GNU
//! ld, lld and mold into PIE and non-PIE programs and shared libraries, for
//! x86-64 and for AArch64 (run under qemu-aarch64, whose 64 KiB load
//! alignment makes the hole coarser). Pruned to gfx90a, each file is
//! smaller by at least 95 % of the dropped image bytes; it runs and
//! registers exactly what it did less the dropped entries, with the
//! loader's view of its program headers intact (`prune/main.c` checks them
//! through `dl_iterate_phdr`); `llvm-readelf -a` gives no warning and
//! `eu-elflint --gnu-ld` nothing it did not say of the original.
//!
//! 32-bit files shrink too (issue #42): [`i686_and_arm_programs_and_libraries_get_smaller`], for i686 and
//! 32-bit Arm. Libraries whose layout a rewrite would damage (issue #41)
//! are refused whole: [`hostile_layouts_are_refused`].

use std::path::Path;

use libtest_mimic::{Failed, Trial};
use object::LittleEndian as LE;
use object::elf::{FileHeader64, SectionHeader64};
use object::pod::{bytes_of_slice, from_bytes_mut};
use object::read::elf::{FileHeader as _, SectionHeader as _};

use super::objects::hip_args;
use super::{dropped_bytes, output, readelf_clean, src};
use crate::util::{clean_failure_code, llvm, ours, ours_json, run, same, tempdir};

const SYSROOT_ARM64: &str = "/opt/offload-kit/sysroot-arm64";

pub fn tests() -> Vec<Trial> {
    let tools = [
        "clang",
        "clang++",
        "ld.bfd",
        "ld.lld",
        "ld.mold",
        "eu-elflint",
        "llvm-readelf",
        "/usr/lib/x86_64-linux-gnu/libzstd.so",
    ];
    let mut arm = tools.to_vec();
    arm.extend(["qemu-aarch64", "aarch64-linux-gnu-ld"]);
    vec![
        trial!(x86_64_programs_and_libraries_get_smaller, &tools),
        trial!(aarch64_programs_and_libraries_get_smaller, &arm),
        // All but the C library's zstd: nothing is run.
        trial!(i686_and_arm_programs_and_libraries_get_smaller, &tools[..7]),
        trial!(hostile_layouts_are_refused, &["clang", "clang++", "ld.lld"]),
    ]
}

fn x86_64_programs_and_libraries_get_smaller() -> Result<(), Failed> {
    shrink(&X86_64)
}

fn aarch64_programs_and_libraries_get_smaller() -> Result<(), Failed> {
    shrink(&AARCH64)
}

/// How programs for one host CPU are built and run.
struct Cpu {
    /// clang's `--target`, if not this machine's.
    target: Option<&'static str>,
    /// The C library's zstd for the stand-in runtime, and link flags.
    zstd: &'static str,
    link: &'static [&'static str],
    /// The program that runs them, if not this machine.
    qemu: Option<&'static str>,
}

const X86_64: Cpu = Cpu {
    target: None,
    zstd: "-lzstd",
    link: &[],
    qemu: None,
};

const AARCH64: Cpu = Cpu {
    target: Some("--target=aarch64-linux-gnu"),
    zstd: "/opt/offload-kit/sysroot-arm64/usr/lib/aarch64-linux-gnu/libzstd.so.1",
    link: &["-Wl,-rpath-link,/opt/offload-kit/sysroot-arm64/usr/lib/aarch64-linux-gnu"],
    qemu: Some("qemu-aarch64"),
};

impl Cpu {
    fn clang(&self, d: &Path, cxx: bool, args: &[&str]) -> Result<(), Failed> {
        let mut all: Vec<&str> = self.target.into_iter().collect();
        all.extend(args);
        run(&llvm(if cxx { "clang++" } else { "clang" }), &all, d).ok()?;
        Ok(())
    }

    /// What `prog` in `dir` prints.
    fn output(&self, dir: &Path, prog: &str) -> Result<String, Failed> {
        match self.qemu {
            None => output(dir, prog, &[]),
            Some(q) => {
                let r = run(
                    Path::new(q),
                    &["-L", SYSROOT_ARM64, &format!("./{prog}")],
                    dir,
                )
                .ok()?;
                Ok(String::from_utf8_lossy(&r.stdout).into_owned())
            }
        }
    }
}

/// eu-elflint's complaints about `file`, with segment numbers left out
/// (splitting a segment renumbers those after it).
pub(super) fn elflint(d: &Path, file: &str) -> Vec<String> {
    let r = run(Path::new("/usr/bin/eu-elflint"), &["--gnu-ld", file], d);
    String::from_utf8_lossy(&r.stdout)
        .lines()
        .map(|l| {
            l.split("program header entry ")
                .next()
                .unwrap_or(l)
                .to_string()
        })
        .collect()
}

fn shrink(cpu: &Cpu) -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    for (k, extra) in [
        ("k1", Some("--offload-compress")),
        ("k2", None),
        ("k3", None),
    ] {
        let source = src(&format!("{k}.hip"));
        let object = format!("{k}.o");
        cpu.clang(d, true, &hip_args(&source, &object, extra.as_slice()))?;
    }
    let stub = src("hip_stub.c");
    let mut args = vec!["-fuse-ld=lld", "-shared", "-fPIC", &stub, cpu.zstd];
    args.extend(["-o", "libhipstub.so"]);
    cpu.clang(d, false, &args)?;
    std::fs::create_dir(d.join("pruned"))?;
    std::fs::copy(d.join("libhipstub.so"), d.join("pruned/libhipstub.so"))?;
    let main = src("main.c");
    let objects = ["k1.o", "k2.o", "k3.o"];
    for ld in ["bfd", "lld", "mold"] {
        let fuse = format!("-fuse-ld={ld}");
        let link = |args: &[&str], out: &str| -> Result<(), Failed> {
            let mut all = vec![fuse.as_str()];
            all.extend(args);
            all.extend(cpu.link);
            all.extend(["-L.", "-lhipstub", "-Wl,-rpath,$ORIGIN", "-o", out]);
            cpu.clang(d, false, &all)
        };
        let (pie, nopie, lib, app) = (
            format!("pie-{ld}"),
            format!("nopie-{ld}"),
            format!("libk{ld}.so"),
            format!("app-{ld}"),
        );
        let with = |first: &[&str], out: &str| {
            let mut a = first.to_vec();
            a.extend(objects);
            link(&a, out)
        };
        with(&[&main], &pie)?;
        with(&["-no-pie", &main], &nopie)?;
        with(&["-shared"], &lib)?;
        link(&[&main, &format!("-lk{ld}")], &app)?;
        std::fs::copy(d.join(&app), d.join("pruned").join(&app))?;
        for f in [&pie, &nopie, &lib] {
            check_shrunk(d, f)?;
        }
        for prog in [&pie, &nopie, &app] {
            let before = cpu.output(d, prog)?;
            if before.matches("entry hipv4").count() != 9 || !before.contains("program headers ok")
            {
                return Err(format!("{prog} printed:\n{before}").into());
            }
            let want: String = before
                .lines()
                .filter(|l| !l.contains("gfx1030") && !l.contains("gfx942"))
                .map(|l| format!("{l}\n"))
                .collect();
            same(
                &format!("{prog} pruned"),
                cpu.output(&d.join("pruned"), prog)?,
                want,
            )?;
        }
    }
    Ok(())
}

/// Prunes `f` into `pruned/`: it shrinks by 95 % of the dropped bytes and
/// the ELF checkers find nothing new.
fn check_shrunk(d: &Path, f: &str) -> Result<(), Failed> {
    let doc = ours_json(
        &["prune", "--keep", "gfx90a", "--json", "-d", "pruned", f],
        d,
    )?;
    let file = &doc["files"][0];
    if let Some(why) = file["not_shrunk"].as_str() {
        return Err(format!("{f} was not shrunk: {why}").into());
    }
    let dropped = dropped_bytes(&doc);
    let size = |p: &str| std::fs::metadata(d.join(p)).map(|m| m.len());
    let pruned = format!("pruned/{f}");
    let freed = size(f)?.saturating_sub(size(&pruned)?);
    if freed * 100 < dropped * 95 {
        return Err(
            format!("{f}: {freed} bytes smaller, under 95 % of the {dropped} dropped").into(),
        );
    }
    readelf_clean(d, &pruned)?;
    let (before, after) = (elflint(d, f), elflint(d, &pruned));
    let new: Vec<&String> = after.iter().filter(|l| !before.contains(l)).collect();
    if !new.is_empty() {
        return Err(format!("eu-elflint on the pruned {f}: {new:?}").into());
    }
    Ok(())
}

/// 32-bit little-endian files (issue #42): the three HIP translation
/// units built for i686 and for 32-bit Arm, linked with `-nostdlib` (this
/// machine has no C library for either, so nothing runs them) by lld and
/// mold, and GNU ld for i686, into shared libraries (their pointers to the
/// fat binaries relocated by `SHT_REL` relative relocations, or packed
/// `SHT_RELR` ones), PIE programs and static ones, `nostdlib_stub.c`
/// standing in for the HIP runtime. Pruned to gfx90a, each is smaller by
/// at least 95 % of the dropped bytes, the ELF checkers find nothing new,
/// and each fatbin wrapper points at the bundle it pointed at, which holds
/// the gfx90a images it held, byte for byte.
fn i686_and_arm_programs_and_libraries_get_smaller() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    std::fs::create_dir(d.join("pruned"))?;
    let cpus = [
        ("i686-linux-gnu", &["bfd", "lld", "mold"][..]),
        ("armv7a-linux-gnueabihf", &["lld", "mold"][..]),
    ];
    for (triple, linkers) in cpus {
        let target = format!("--target={triple}");
        let mut objects = Vec::new();
        for (k, extra) in [
            ("k1", Some("--offload-compress")),
            ("k2", None),
            ("k3", None),
        ] {
            let (source, object) = (src(&format!("{k}.hip")), format!("{triple}-{k}.o"));
            let mut args = vec![target.as_str()];
            args.extend(hip_args(&source, &object, extra.as_slice()));
            run(&llvm("clang++"), &args, d).ok()?;
            objects.push(object);
        }
        let stub = format!("{triple}-stub.o");
        let args = [&target, "-fPIC", "-c", &src("nostdlib_stub.c"), "-o", &stub];
        run(&llvm("clang"), &args, d).ok()?;
        let kinds: [(&str, &[&str]); 4] = [
            ("lib.so", &["-shared"]),
            ("relr.so", &["-shared", "-Wl,-z,pack-relative-relocs"]),
            ("pie", &["-pie", &stub]),
            ("static", &["-static", &stub]),
        ];
        for ld in linkers {
            for (kind, extra) in kinds {
                let out = format!("{triple}-{ld}-{kind}");
                let fuse = format!("-fuse-ld={ld}");
                let mut args = vec![target.as_str(), &fuse, "-nostdlib"];
                args.extend(extra);
                args.extend(objects.iter().map(String::as_str));
                args.extend(["-o", &out]);
                run(&llvm("clang"), &args, d).ok()?;
                check_shrunk(d, &out)?;
                let want: Vec<Vec<(String, String)>> = wrapped(d, &out)?
                    .into_iter()
                    .map(|w| {
                        w.into_iter()
                            .filter(|(id, _)| id.ends_with("gfx90a"))
                            .collect()
                    })
                    .collect();
                same(
                    &format!("{out}: what each wrapper points at"),
                    wrapped(d, &format!("pruned/{out}"))?,
                    want,
                )?;
            }
        }
    }
    Ok(())
}

/// What each fatbin wrapper of `file` points at, in file order: the images
/// (bundle ID, MD5) of the container its data pointer resolves to and of
/// the containers inside that one, as `inspect --json` gives them.
fn wrapped(d: &Path, file: &str) -> Result<Vec<Vec<(String, String)>>, Failed> {
    let doc = ours_json(&["inspect", "--json", "--hash=md5", file], d)?;
    let f = &doc["files"][0];
    let containers = f["containers"].as_array().ok_or("no containers")?;
    let images = f["images"].as_array().ok_or("no images")?;
    // Whether container `c` is `top` or lies inside it (a parent comes
    // before what it holds).
    let within = |mut c: u64, top: u64| loop {
        if c == top {
            return true;
        }
        match containers.get(usize::try_from(c).unwrap_or(usize::MAX)) {
            Some(k) if k["parent"]["container"].as_u64().is_some_and(|p| p < c) => {
                c = k["parent"]["container"].as_u64().unwrap_or(top);
            }
            _ => return false,
        }
    };
    let mut out = Vec::new();
    for w in containers.iter().filter(|c| c["kind"] == "fatbin-wrapper") {
        let top = w["wrapper"]["target_container"]
            .as_u64()
            .ok_or_else(|| format!("{file}: a wrapper points at no container"))?;
        let text = |v: &serde_json::Value| v.as_str().unwrap_or_default().to_string();
        out.push(
            images
                .iter()
                .filter(|i| i["container"].as_u64().is_some_and(|c| within(c, top)))
                .map(|i| (text(&i["bundle_id"]), text(&i["hash"])))
                .collect(),
        );
    }
    if out.len() != 3 {
        return Err(format!("{file}: {} fatbin wrappers, not 3", out.len()).into());
    }
    Ok(out)
}

/// `f`'s section headers.
fn section_headers(f: &[u8]) -> Result<Vec<SectionHeader64<LE>>, Failed> {
    let h = FileHeader64::<LE>::parse(f)?;
    Ok(h.section_headers(LE, f)?.to_vec())
}

/// `f` with its ELF header's `e_shoff` and `e_shnum` set.
fn with_table_at(mut f: Vec<u8>, at: usize, count: usize) -> Result<Vec<u8>, Failed> {
    let (h, _) = from_bytes_mut::<FileHeader64<LE>>(&mut f).map_err(|()| "no ELF header")?;
    h.e_shoff.set(LE, u64::try_from(at)?);
    h.e_shnum.set(LE, u16::try_from(count)?);
    Ok(f)
}

/// `f` with its section header table copied into its gfx942 code object
/// (`e_shoff` there), and the table's range.
fn table_in_gfx942(f: &[u8]) -> Result<(Vec<u8>, String), Failed> {
    let report = offload_kit::scan::scan(f, &offload_kit::scan::Options::default());
    let image = report
        .images
        .iter()
        .find(|i| i.arch == "gfx942")
        .ok_or("no gfx942 image")?;
    let at = usize::try_from(image.offset.ok_or("no offset")? + image.size / 2)?;
    let at = at.next_multiple_of(8);
    let headers = section_headers(f)?;
    let table = bytes_of_slice(&headers);
    let mut g = f.to_vec();
    g[at..at + table.len()].copy_from_slice(table);
    let range = format!("({at:#x}..{:#x})", at + table.len());
    Ok((with_table_at(g, at, headers.len())?, range))
}

/// `f` with its `.hip_fatbin` section header listed twice: the table, and
/// that header again, appended (`e_shoff` and `e_shnum` saying so).
fn fatbin_listed_twice(f: &[u8]) -> Result<Vec<u8>, Failed> {
    let h = FileHeader64::<LE>::parse(f)?;
    let mut headers = section_headers(f)?;
    let names = h.section_strings(LE, f, &headers)?;
    let fatbin = *headers
        .iter()
        .find(|s| s.name(LE, names).is_ok_and(|n| n == b".hip_fatbin"))
        .ok_or("no .hip_fatbin")?;
    headers.push(fatbin);
    let mut g = f.to_vec();
    g.resize(g.len().next_multiple_of(8), 0);
    let at = g.len();
    g.extend_from_slice(bytes_of_slice(&headers));
    with_table_at(g, at, headers.len())
}

/// Shared libraries that clang-22 and lld link from one HIP translation
/// unit for gfx90a and gfx942 (`k2.hip`, small code objects; `k3.hip`,
/// 800 KB ones), made hostile: their section header table copied into the
/// gfx942 code object, the bytes pruning frees; their `.hip_fatbin`
/// listed twice in the table (which counted the freed bytes twice: the
/// small file failed to be written, the large one came out right only
/// because the sums wrapped). `prune --keep gfx90a`, shrinking or with
/// `--no-shrink`, to a new file or `--in-place`, exits 2 with one line
/// that names the file and what lies where, writes nothing and leaves the
/// file as it was. The libraries as linked are pruned and shrunk.
fn hostile_layouts_are_refused() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    for (k, lib) in [("k2", "libsmall.so"), ("k3", "liblarge.so")] {
        let (source, object) = (src(&format!("{k}.hip")), format!("{k}.o"));
        let args = [
            "-x",
            "hip",
            "--offload-arch=gfx90a",
            "--offload-arch=gfx942",
            "-nogpulib",
            "-nogpuinc",
            "-fPIC",
            "-c",
            &source,
            "-o",
            &object,
        ];
        run(&llvm("clang++"), &args, d).ok()?;
        let args = ["-fuse-ld=lld", "-shared", &object, "-o", lib];
        run(&llvm("clang"), &args, d).ok()?;
        let doc = ours_json(
            &[
                "prune",
                "--keep",
                "gfx90a",
                "--json",
                "-o",
                "as-linked.so",
                lib,
            ],
            d,
        )?;
        if let Some(why) = doc["files"][0]["not_shrunk"].as_str() {
            return Err(format!("{lib} as linked was not shrunk: {why}").into());
        }
        let f = std::fs::read(d.join(lib))?;
        let (in_gfx942, range) = table_in_gfx942(&f)?;
        let table = format!("the section header table {range} lies inside the bytes");
        let cases = [
            ("table-in-gfx942.so", in_gfx942, table.as_str()),
            (
                "listed-twice.so",
                fatbin_listed_twice(&f)?,
                "the bundle at 0x1000 is found twice through two section headers \
                 `.hip_fatbin` (one section listed twice)",
            ),
        ];
        for (name, bytes, says) in cases {
            std::fs::write(d.join(name), &bytes)?;
            for how in [&[][..], &["--no-shrink"][..]] {
                let what = format!("{k}: {name} {how:?}");
                let mut args = vec!["prune", "--keep", "gfx90a", "-o", "out.so", name];
                args.extend(how);
                let r = run(&ours(), &args, d);
                clean_failure_code(&what, &r, name, 2)?;
                if !r.stderr.contains(says) {
                    return Err(format!("{what}: want {says:?}, got {}", r.stderr).into());
                }
                same(&format!("{what}: output"), d.join("out.so").exists(), false)?;
                let mut args = vec!["prune", "--keep", "gfx90a", "--in-place", name];
                args.extend(how);
                let r = run(&ours(), &args, d);
                clean_failure_code(&format!("{what} --in-place"), &r, name, 2)?;
                if std::fs::read(d.join(name))? != bytes {
                    return Err(format!("{what}: --in-place changed the file").into());
                }
            }
        }
    }
    Ok(())
}
