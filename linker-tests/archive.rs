//! `offload_kit::archive` against LLVM 22's own archive writer.
//!
//! Every test compiles tiny fixtures with clang in a fresh temporary
//! directory, has an LLVM tool write an archive of them, and checks that
//! [`layout_gnu`] gives the same bytes for the same members. The reference
//! is `llvm-ar qcD --format=gnu` (`q` so that members with the same name are
//! all kept), which makes the same `writeArchive` call as
//! `llvm-offload-binary --archive` and `clang-offload-bundler -type=a
//! -unbundle`; two tests go through those tools themselves.
//!
//! The tools are taken from `/usr/lib/llvm-22/bin`, or from the directory in
//! `OFFLOAD_KIT_LLVM_BIN`. A test whose tools are missing is ignored, or
//! fails when `OFFLOAD_KIT_REQUIRE_TOOLS=1`. A failing test keeps its
//! directory and names it in the message.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use libtest_mimic::{Completion, Failed, Trial};
use offload_kit::archive::{Member, SYM64_THRESHOLD, layout_gnu, layout_gnu_with_threshold};

/// The archive trials.
pub fn tests() -> Vec<Trial> {
    // A trial named after its function (`trial_name!`) that runs it in a
    // fresh directory, its tools checked by `run`.
    macro_rules! archive_trial {
        ($f:ident, $tools:expr) => {
            Trial::ignorable_test(trial_name!($f), move || run($tools, $f))
        };
    }
    vec![
        archive_trial!(empty, &["llvm-ar"]),
        archive_trial!(objects_with_symbols, &["clang", "llvm-ar"]),
        archive_trial!(raw_members, &["llvm-ar"]),
        archive_trial!(objects_without_symbols, &["clang", "llvm-ar"]),
        archive_trial!(long_names, &["clang", "llvm-ar"]),
        archive_trial!(same_names, &["clang", "llvm-ar"]),
        archive_trial!(special_elf_symbols, &["clang", "llvm-ar"]),
        archive_trial!(mapping_symbols, &["clang", "llvm-ar"]),
        archive_trial!(bitcode, &["clang", "llvm-ar"]),
        archive_trial!(sym64_threshold, &["clang", "llvm-ar"]),
        archive_trial!(magic_prefixes, &["llvm-ar"]),
        archive_trial!(offload_binary_archive, &["clang", "llvm-offload-binary"]),
        archive_trial!(bundler_archive, &["clang", "llvm-ar", "clang-offload-bundler"]),
    ]
}

fn run(tools: &[&str], body: fn(&Dir) -> Result<(), Failed>) -> Result<Completion, Failed> {
    let missing: Vec<_> = tools.iter().filter(|t| !tool(t).is_file()).collect();
    if !missing.is_empty() {
        let msg = format!("missing {missing:?} in {}", bin_dir().display());
        if std::env::var_os("OFFLOAD_KIT_REQUIRE_TOOLS").is_some_and(|v| v == "1") {
            return Err(msg.into());
        }
        return Ok(Completion::ignored_with(msg));
    }
    let dir = Dir(tempfile::Builder::new()
        .prefix("offload-kit-archive-")
        .tempdir()?);
    match body(&dir) {
        Ok(()) => Ok(Completion::Completed),
        Err(e) => {
            let kept = dir.0.keep();
            let msg = e.message().unwrap_or("failed");
            Err(format!("{msg}\n(files kept in {})", kept.display()).into())
        }
    }
}

fn bin_dir() -> PathBuf {
    std::env::var_os("OFFLOAD_KIT_LLVM_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/usr/lib/llvm-22/bin"))
}

fn tool(name: &str) -> PathBuf {
    bin_dir().join(name)
}

/// The test's temporary directory, with helpers that work inside it.
struct Dir(tempfile::TempDir);

impl Dir {
    fn path(&self, name: &str) -> PathBuf {
        self.0.path().join(name)
    }

    fn write(&self, name: &str, data: &[u8]) -> Result<(), Failed> {
        let p = self.path(name);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent)?;
        }
        std::fs::write(&p, data).map_err(|e| format!("writing {}: {e}", p.display()).into())
    }

    fn read(&self, name: &str) -> Result<Vec<u8>, Failed> {
        let p = self.path(name);
        std::fs::read(&p).map_err(|e| format!("reading {}: {e}", p.display()).into())
    }

    /// Runs an LLVM tool in the directory; fails on a non-zero exit.
    fn run(&self, name: &str, args: &[&str], env: &[(&str, &str)]) -> Result<(), Failed> {
        let (ok, stderr) = self.try_run(name, args, env)?;
        if ok {
            Ok(())
        } else {
            Err(format!("{name} {}: {stderr}", args.join(" ")).into())
        }
    }

    /// Runs an LLVM tool in the directory: whether it succeeded, its stderr.
    fn try_run(
        &self,
        name: &str,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Result<(bool, String), Failed> {
        let mut cmd = Command::new(tool(name));
        cmd.args(args)
            .current_dir(self.0.path())
            .env_remove("SYM64_THRESHOLD");
        for (k, v) in env {
            cmd.env(k, v);
        }
        let out = cmd.output().map_err(|e| format!("running {name}: {e}"))?;
        Ok((
            out.status.success(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        ))
    }

    /// Compiles `src` (saved as `name`) with clang `-c` and `args` into `out`.
    fn cc(&self, name: &str, src: &str, out: &str, args: &[&str]) -> Result<Vec<u8>, Failed> {
        self.write(name, src.as_bytes())?;
        let mut all = vec!["-c", name, "-o", out];
        all.extend_from_slice(args);
        self.run("clang", &all, &[])?;
        self.read(out)
    }

    /// `llvm-ar qcD --format=gnu` of `files` (paths in the directory): the
    /// bytes, and the members as LLVM names them (the file names).
    fn llvm_ar(&self, files: &[&str], env: &[(&str, &str)]) -> Result<Archive, Failed> {
        let out = "llvm.a";
        let _ = std::fs::remove_file(self.path(out));
        let mut args = vec!["qcD", "--format=gnu", out];
        args.extend_from_slice(files);
        self.run("llvm-ar", &args, env)?;
        let mut members = Vec::new();
        for f in files {
            let name = Path::new(f).file_name().ok_or("no file name")?;
            members.push((name.to_string_lossy().into_owned(), self.read(f)?));
        }
        Ok(Archive {
            bytes: self.read(out)?,
            members,
        })
    }

    /// Builds `files` with llvm-ar and with us, and compares.
    fn compare(&self, files: &[&str]) -> Result<(), Failed> {
        let a = self.llvm_ar(files, &[])?;
        same(&ours(&a.members, SYM64_THRESHOLD)?, &a.bytes, files)
    }
}

/// An archive LLVM wrote, and the members it was given.
struct Archive {
    bytes: Vec<u8>,
    members: Vec<(String, Vec<u8>)>,
}

/// Our archive of `members`, with the symbol table on.
fn ours(members: &[(String, Vec<u8>)], threshold: u64) -> Result<Vec<u8>, Failed> {
    let list: Vec<Member<'_>> = members
        .iter()
        .map(|(n, d)| Member {
            name: n.clone(),
            data: d,
        })
        .collect();
    let layout = layout_gnu_with_threshold(&list, true, threshold)
        .map_err(|e| format!("layout_gnu: {e}"))?;
    let images: Vec<&[u8]> = members.iter().map(|(_, d)| d.as_slice()).collect();
    let mut out = Vec::new();
    layout.write_to(&mut out, &images)?;
    if out.len() as u64 != layout.size {
        return Err(format!(
            "layout size {} but {} bytes written",
            layout.size,
            out.len()
        )
        .into());
    }
    Ok(out)
}

/// Fails with the first difference, shown in context, unless equal.
fn same(ours: &[u8], llvm: &[u8], what: &[&str]) -> Result<(), Failed> {
    if ours == llvm {
        return Ok(());
    }
    let at = ours
        .iter()
        .zip(llvm)
        .position(|(a, b)| a != b)
        .unwrap_or(ours.len().min(llvm.len()));
    let from = at.saturating_sub(16);
    let show = |b: &[u8]| {
        let end = b.len().min(at + 32);
        let mut s = String::new();
        for &c in b.get(from..end).unwrap_or(&[]) {
            let _ = write!(s, "{}", std::ascii::escape_default(c));
        }
        s
    };
    Err(format!(
        "archive of {what:?} differs from LLVM's at byte {at} (ours {} bytes, LLVM {})\n  ours: {}\n  llvm: {}",
        ours.len(),
        llvm.len(),
        show(ours),
        show(llvm)
    )
    .into())
}

/// Functions, data, common, weak, hidden and undefined symbols, and locals.
const RICH_C: &str = r#"
int gdata = 1;
int gbss;
int gcommon __attribute__((common));
static int sdata = 2;
__attribute__((weak)) int wdata = 3;
__attribute__((visibility("hidden"))) int hdata = 4;
extern int undef_var;
extern void undef_fn(void);
__attribute__((weak)) extern void weak_undef(void);
static int sfn(void) { return sdata; }
int zfunc(void) { undef_fn(); if (weak_undef) weak_undef(); return undef_var + sfn(); }
__attribute__((weak)) int wfunc(void) { return 1; }
__attribute__((visibility("hidden"))) int hfunc(void) { return 2; }
int afunc(void) { return 3; }
"#;

const SMALL_C: &str = "int b_only(void) { return 7; }\n";

/// Only local and undefined symbols.
const LOCALS_C: &str = r#"
extern int u;
static int x = 3;
static int *q(void) { return &x; }
__attribute__((used)) static int *(*keep)(void) = q;
int *r(void) { extern int *ext(void); return ext(); }
"#;

fn empty(d: &Dir) -> Result<(), Failed> {
    let a = d.llvm_ar(&[], &[])?;
    same(&ours(&[], SYM64_THRESHOLD)?, &a.bytes, &[])?;
    same(&a.bytes, b"!<arch>\n", &[])
}

fn objects_with_symbols(d: &Dir) -> Result<(), Failed> {
    d.cc("a.c", RICH_C, "a.o", &["-O1"])?;
    d.cc("b.c", SMALL_C, "b.o", &[])?;
    d.compare(&["a.o", "b.o"])?;
    d.compare(&["b.o", "a.o", "b.o"])
}

fn raw_members(d: &Dir) -> Result<(), Failed> {
    d.write("odd.bin", b"hello")?;
    d.write("even.bin", b"xy")?;
    d.write("one", b"1")?;
    d.write("empty.bin", b"")?;
    // OffloadBinary, SPIR-V and CUDA fat binary magics are not objects to
    // LLVM, nor is anything shorter than 4 bytes.
    d.write("ob.bin", b"\x10\xff\x10\xad\x01\0\0\0rest")?;
    d.write("spirv.bin", b"\x03\x02\x23\x07\0\0\x01\0")?;
    d.write("fatbin.bin", b"\x50\xed\x55\xba\x01\0\x10\0")?;
    d.write("short.bin", b"\x64\x86\0")?;
    d.compare(&["odd.bin", "even.bin", "one", "empty.bin"])?;
    d.compare(&["ob.bin", "spirv.bin", "fatbin.bin", "short.bin", "odd.bin"])
}

fn objects_without_symbols(d: &Dir) -> Result<(), Failed> {
    d.cc("l.c", LOCALS_C, "l.o", &[])?;
    d.cc("a.c", RICH_C, "a.o", &[])?;
    d.write("raw.bin", b"abc")?;
    // An object with no symbols still brings in an (empty) symbol table.
    d.compare(&["l.o"])?;
    d.compare(&["raw.bin", "l.o"])?;
    d.compare(&["l.o", "raw.bin", "a.o"])
}

fn long_names(d: &Dir) -> Result<(), Failed> {
    d.cc("a.c", RICH_C, "exactly_15_ch.o", &[])?;
    std::fs::copy(d.path("exactly_15_ch.o"), d.path("exactly_16_cha.o"))?;
    d.write("d1/a_rather_long_member_name.bin", b"odd")?;
    d.write("d2/a_rather_long_member_name.bin", b"even")?;
    d.write("another_long_name_here", b"x")?;
    d.write("short", b"yz")?;
    d.compare(&[
        "exactly_15_ch.o",
        "exactly_16_cha.o",
        "d1/a_rather_long_member_name.bin",
        "short",
        "another_long_name_here",
        "d2/a_rather_long_member_name.bin",
        "exactly_16_cha.o",
    ])?;
    // A long-name table of odd length is padded.
    d.compare(&["another_long_name_here", "short"])
}

fn same_names(d: &Dir) -> Result<(), Failed> {
    d.cc("d1/x.c", RICH_C, "d1/x.o", &[])?;
    d.cc("d2/x.c", SMALL_C, "d2/x.o", &[])?;
    d.write("d3/x.o", b"not an object")?;
    d.compare(&["d1/x.o", "d2/x.o", "d3/x.o", "d1/x.o"])
}

/// Absolute, unique, TLS, IFUNC, protected, internal, common, undefined and
/// file symbols, in assembly so that each is exactly as written.
const SPECIAL_S: &str = r#"
    .file "s.c"
    .text
    .globl gfunc
    .type gfunc,@function
gfunc: ret
    .globl abs_sym
    .set abs_sym, 0x1234
    .globl uniq
    .type uniq,@gnu_unique_object
    .data
uniq: .long 1
    .section .tbss,"awT",@nobits
    .globl tlsv
    .type tlsv,@object
tlsv: .zero 4
    .text
    .globl ifn
    .type ifn,@gnu_indirect_function
ifn: ret
    .protected prot
    .globl prot
prot: ret
    .internal intl
    .globl intl
intl: ret
    .comm cm2,8,8
    .lcomm lcm,8
    .weak wund
    .globl gund
    .quad gund
    .quad wund
locsym: ret
"#;

fn special_elf_symbols(d: &Dir) -> Result<(), Failed> {
    d.cc("s.s", SPECIAL_S, "s.o", &["--target=x86_64-linux-gnu"])?;
    d.cc("a32.c", RICH_C, "a32.o", &["--target=i686-linux-gnu"])?;
    d.cc("be.c", RICH_C, "be.o", &["--target=powerpc64-linux-gnu"])?;
    d.cc(
        "gpu.c",
        RICH_C,
        "gpu.o",
        &["--target=amdgcn-amd-amdhsa", "-mcpu=gfx906", "-nogpulib"],
    )?;
    d.compare(&["s.o", "a32.o", "be.o", "gpu.o"])
}

/// Global symbols that look like mapping symbols on some machines.
const MAPPING_S: &str = r#"
    .globl "$d.foo"
"$d.foo":
    .globl "$x.bar"
"$x.bar":
    .globl "$t.baz"
"$t.baz":
    .globl "$a.q"
"$a.q":
    .globl plain
plain:
    .byte 0
"#;

fn mapping_symbols(d: &Dir) -> Result<(), Failed> {
    let targets = [
        "aarch64-linux-gnu",
        "armv7-linux-gnueabihf",
        "riscv64-linux-gnu",
        "x86_64-linux-gnu",
    ];
    let mut files = Vec::new();
    for t in targets {
        let name = format!("m-{t}.o");
        let obj = d.cc(
            &format!("m-{t}.s"),
            MAPPING_S,
            &name,
            &[&format!("--target={t}")],
        )?;
        // The same object with `plain` renamed to the empty string, which
        // Arm treats as a mapping symbol.
        let mut unnamed = obj;
        let at = unnamed
            .windows(7)
            .rposition(|w| w == b"\0plain\0")
            .ok_or("no 'plain' in the string table")?;
        unnamed[at + 1] = 0;
        let name2 = format!("e-{t}.o");
        d.write(&name2, &unnamed)?;
        files.push(name);
        files.push(name2);
    }
    for f in &files {
        d.compare(&[f])?;
    }
    let all: Vec<&str> = files.iter().map(String::as_str).collect();
    d.compare(&all)
}

/// Global values of every IR kind: aliases, module asm, TLS, common,
/// `llvm.used`, constructors, private strings, inline definitions.
const IR_C: &str = r#"
int gdata = 1; int gcommon __attribute__((common)); static int sdata = 2;
__attribute__((weak)) int wdata = 3; __attribute__((visibility("hidden"))) int hdata = 4;
__attribute__((visibility("protected"))) int pdata = 5;
__thread int tlsv;
extern int undef_var; extern void undef_fn(void); __attribute__((weak)) extern void weak_undef(void);
static int sfn(void) { return sdata; }
int zfunc(void) { undef_fn(); if (weak_undef) weak_undef(); return undef_var + sfn() + tlsv; }
int alias_fn(void) __attribute__((alias("zfunc")));
__attribute__((constructor)) static void ctor(void) {}
__attribute__((used)) static int used_static = 9;
const char *str(void) { return "a private string"; }
extern inline int einl(void) { return 1; }
inline int inl(void) { return 2; }
int use_inl(void) { return inl() + einl(); }
__asm__(".globl asm_sym\nasm_sym: .byte 0\n.weak asm_weak\nasm_weak: .byte 0\n");
"#;

/// Templates, vtables, inline functions with statics, anonymous namespaces.
const IR_CC: &str = r#"
template <class T> T tf(T x) { return x + 1; }
struct S { virtual int f(); static int sm; };
int S::f() { return tf(3); }
int S::sm = 4;
inline int ilf() { static int cnt; return ++cnt; }
int use() { return ilf() + tf(2.0); }
namespace { int anon() { return 1; } }
int useanon() { return anon(); }
"#;

fn bitcode(d: &Dir) -> Result<(), Failed> {
    let x86 = "--target=x86_64-linux-gnu";
    d.cc("ir.c", IR_C, "ir.bc", &[x86, "-emit-llvm", "-O1"])?;
    d.cc("cx.cc", IR_CC, "cx.bc", &[x86, "-emit-llvm"])?;
    d.cc("thin.c", IR_C, "thin.o", &[x86, "-flto=thin"])?;
    // Two modules in one file, with one symbol table for both.
    let split = [
        "-flto=thin",
        "-fsplit-lto-unit",
        "-fwhole-program-vtables",
        "-fvisibility=hidden",
    ];
    d.cc("split.cc", IR_CC, "split.o", &[&[x86][..], &split].concat())?;
    let gpu = [
        "--target=amdgcn-amd-amdhsa",
        "-mcpu=gfx906",
        "-nogpulib",
        "-emit-llvm",
    ];
    d.cc("gpu.c", RICH_C, "gpu.bc", &gpu)?;
    d.cc("l.c", LOCALS_C, "l.bc", &[x86, "-emit-llvm"])?;
    d.write("raw.bin", b"raw")?;
    d.compare(&[
        "ir.bc", "cx.bc", "raw.bin", "thin.o", "split.o", "gpu.bc", "l.bc",
    ])?;
    // Bitcode with no listed symbols still makes the table appear.
    d.compare(&["raw.bin", "l.bc"])
}

fn sym64_threshold(d: &Dir) -> Result<(), Failed> {
    d.cc("a.c", RICH_C, "a.o", &[])?;
    d.cc("l.c", LOCALS_C, "l.o", &[])?;
    d.write("raw.bin", b"raw")?;
    for files in [
        &["raw.bin", "a.o", "l.o"][..],
        &["l.o", "raw.bin"],
        &["a.o", "raw.bin"],
    ] {
        // The last member header's offset with a 32-bit table is where the
        // switch happens; LLVM reads SYM64_THRESHOLD to move it.
        let a = d.llvm_ar(files, &[])?;
        let last = last_header_offset(&a.bytes)?;
        for t in [last - 1, last, last + 1] {
            let a = d.llvm_ar(files, &[("SYM64_THRESHOLD", &t.to_string())])?;
            let sym64 = a.bytes.get(8..15) == Some(b"/SYM64/");
            if sym64 != (t <= last) {
                return Err(
                    format!("LLVM: /SYM64/ is {sym64} at threshold {t}, last {last}").into(),
                );
            }
            same(&ours(&a.members, t)?, &a.bytes, files)?;
        }
    }
    Ok(())
}

/// The offset of the last member's header in a GNU archive.
fn last_header_offset(bytes: &[u8]) -> Result<u64, Failed> {
    let ar = object::read::archive::ArchiveFile::parse(bytes)?;
    let mut last = None;
    for m in ar.members() {
        last = Some(m?.file_range().0 - 60);
    }
    last.ok_or_else(|| "no members".into())
}

fn magic_prefixes(d: &Dir) -> Result<(), Failed> {
    // Where LLVM reads the data as an object and fails, we must fail too;
    // where we succeed, the bytes must be LLVM's. (We may refuse more, e.g.
    // objects in formats whose symbols we cannot list.)
    let prefixes: &[&[u8]] = &[
        b"\0\0",
        b"\0\0\0\0",
        b"\0\x01",
        b"\0asm",
        b"\x01\xdf",
        b"\x01\xf7",
        b"\x03\xf0\0",
        b"\xf0\x01",
        b"\xf0\x02",
        b"\x83\x02",
        b"\x84\x01",
        b"\x66\x02",
        b"\x50\x02",
        b"\x4c\x01",
        b"\xc4\x02",
        b"\x90\x01",
        b"\x90\x02",
        b"\x68\x01",
        b"\x68\x02",
        b"\x64\x86",
        b"\x64\xaa",
        b"\x64\x87",
        b"\x41\xa6",
        b"\x4e\xa6",
        b"\x41\xa7",
        b"DXBC",
        b"MZ",
        b"!<arch>\n",
        b"\x7fELF\x02\x01\x01",
        b"\x7fELF",
        b"\xca\xfe\xba\xbe\0\0\0\x01",
        b"\xfe\xed\xfa\xce",
        b"\xfe\xed\xfa\xce\0\0\0\x07\0\0\0\x03\0\0\0\x01",
        b"\xcf\xfa\xed\xfe\x07\0\0\0\x03\0\0\0\x0c\0\0\0",
        b"\xcf\xfa\xed\xfe\x07\0\0\0\x03\0\0\0\x0d\0\0\0",
        b"\0\0\0\0\x20\0\0\0\xff\xff\0\0\xff\xff\0\0",
        b"xyz",
    ];
    for p in prefixes {
        for len in [p.len(), 4, 17, 200] {
            let mut data = p.to_vec();
            data.resize(len.max(p.len()), b'G');
            d.write("f.bin", &data)?;
            let _ = std::fs::remove_file(d.path("llvm.a"));
            let (llvm_ok, _) =
                d.try_run("llvm-ar", &["qcD", "--format=gnu", "llvm.a", "f.bin"], &[])?;
            let members = [("f.bin".to_string(), data.clone())];
            let what = format!("{}", data.escape_ascii());
            match (llvm_ok, ours(&members, SYM64_THRESHOLD)) {
                (true, Ok(o)) => same(&o, &d.read("llvm.a")?, &[&what])?,
                (false, Ok(_)) => return Err(format!("LLVM fails on {what} but we do not").into()),
                (_, Err(_)) => {}
            }
        }
    }
    Ok(())
}

fn offload_binary_archive(d: &Dir) -> Result<(), Failed> {
    let a = d.cc("a.c", RICH_C, "a.o", &[])?;
    let b = d.cc("b.c", SMALL_C, "b.o", &[])?;
    let image = |f: &str| {
        format!("--image=file={f},triple=x86_64-unknown-linux-gnu,arch=generic,kind=openmp")
    };
    d.run(
        "llvm-offload-binary",
        &["-o", "p.bin", &image("a.o"), &image("b.o"), &image("a.o")],
        &[],
    )?;
    let abs = d.path("p.bin");
    let abs = abs.to_str().ok_or("temporary path is not UTF-8")?;
    // Members are named after the input as given: a short name, and a long
    // one with slashes.
    for input in ["p.bin", abs] {
        let _ = std::fs::remove_file(d.path("out.a"));
        d.run(
            "llvm-offload-binary",
            &[input, "--archive", "--image=file=out.a,arch=generic"],
            &[],
        )?;
        let members: Vec<(String, Vec<u8>)> = [&a, &b, &a]
            .iter()
            .map(|data| (input.to_string(), data.to_vec()))
            .collect();
        same(
            &ours(&members, SYM64_THRESHOLD)?,
            &d.read("out.a")?,
            &[input],
        )?;
    }
    // The plain entry point agrees with the threshold one.
    let list = [Member {
        name: "p.bin".into(),
        data: &a,
    }];
    let layout = layout_gnu(&list, true)?;
    let mut bytes = Vec::new();
    layout.write_to(&mut bytes, &[&a])?;
    same(
        &bytes,
        &ours(&[("p.bin".into(), a.clone())], SYM64_THRESHOLD)?,
        &["p.bin"],
    )
}

fn bundler_archive(d: &Dir) -> Result<(), Failed> {
    let gpu = ["--target=amdgcn-amd-amdhsa", "-mcpu=gfx906", "-nogpulib"];
    d.cc(
        "f2.c",
        RICH_C,
        "dev.bc",
        &[&gpu[..], &["-emit-llvm"]].concat(),
    )?;
    d.cc("f3.c", SMALL_C, "dev.o", &gpu)?;
    d.cc("h.c", SMALL_C, "host.o", &[])?;
    let bundle = |target: &str, dev: &str, out: &str| {
        let targets = format!("-targets=host-x86_64-unknown-linux-gnu,{target}");
        let dev = format!("-input={dev}");
        let out = format!("-output={out}");
        d.run(
            "clang-offload-bundler",
            &["-type=o", &targets, "-input=host.o", &dev, &out],
            &[],
        )
    };
    bundle("openmp-amdgcn-amd-amdhsa--gfx906", "dev.bc", "f2.o")?;
    bundle("hipv4-amdgcn-amd-amdhsa--gfx906", "dev.o", "f3.o")?;
    d.run("llvm-ar", &["rcD", "lib.a", "f2.o", "f3.o"], &[])?;
    for target in [
        "openmp-amdgcn-amd-amdhsa--gfx906",
        "hipv4-amdgcn-amd-amdhsa--gfx906",
    ] {
        let _ = std::fs::remove_file(d.path("out.a"));
        let targets = format!("-targets={target}");
        d.run(
            "clang-offload-bundler",
            &[
                "-unbundle",
                "-type=a",
                "-input=lib.a",
                &targets,
                "-output=out.a",
            ],
            &[],
        )?;
        // Rebuild the bundler's archive from its own members.
        let llvm = d.read("out.a")?;
        let ar = object::read::archive::ArchiveFile::parse(&*llvm)?;
        let mut members = Vec::new();
        for m in ar.members() {
            let m = m?;
            let name = String::from_utf8(m.name().to_vec())?;
            members.push((name, m.data(&*llvm)?.to_vec()));
        }
        if members.is_empty() {
            return Err(format!("the bundler wrote no members for {target}").into());
        }
        same(&ours(&members, SYM64_THRESHOLD)?, &llvm, &[target])?;
    }
    Ok(())
}
