//! COFF host objects (`*-pc-windows-msvc` and MinGW, x86-64, ARM64 and
//! i686) against LLVM 22, whose bundler runs llvm-objcopy's COFF writer:
//! the same bundle bytes, each tool listing the other's bundle alike and
//! unbundling it to the same files (the host's: the stripped object, byte
//! for byte), from the drop-in and from native `offload-kit bundle`.
//!
//! The host objects are made at test time by clang-22: C with relocations,
//! `.bss`, long function names (so the string table matters),
//! `-ffunction-sections`, CodeView debug info, C++ COMDATs with associative
//! unwind sections, and control-flow-guard tables.

use super::*;
use crate::util::ours;

/// C with code and data relocations, `.bss`, a string literal COMDAT, an
/// external call and names longer than 8 bytes.
const COFF_C: &str = r#"int an_external_function_with_a_long_name(int);
static int counter;
int zeroed_buffer[64];
const char *message = "hello";
double table[4] = {1, 2, 3, 4};
int a_function_whose_name_is_long_enough_for_the_string_table(int x) {
  return x * 3 + zeroed_buffer[x & 63];
}
int another_function_with_a_long_name(int y) {
  counter += y;
  return a_function_whose_name_is_long_enough_for_the_string_table(y) + counter;
}
int (*pick)(int) = another_function_with_a_long_name;
int caller(void) { return an_external_function_with_a_long_name(3) + pick(2) + message[0]; }
"#;

/// C++ with inline and template functions (COMDAT sections, with
/// associative `.pdata`/`.xdata` on x86-64 and ARM64) and exceptions.
const COFF_CPP: &str = r#"int external(int);
inline int twice_the_value_of_its_argument(int x) { return 2 * external(x); }
template <typename T> T thrice(T x) { return 3 * x; }
struct Thrower { ~Thrower(); };
static int next_value(int y) { Thrower t; return y + 1; }
int use_them_all(int y) {
  try { return twice_the_value_of_its_argument(y) + thrice(y) + thrice(2.0 * y) + next_value(y); }
  catch (...) { return -1; }
}
"#;

/// A COFF host shape: (test name, triple, C++?, flags).
type CoffShape = (&'static str, &'static str, bool, &'static [&'static str]);

const X64: &str = "x86_64-pc-windows-msvc";
const ARM64: &str = "aarch64-pc-windows-msvc";

/// The COFF hosts.
const COFF_SHAPES: &[CoffShape] = &[
    ("x86_64_O0", X64, false, &["-O0"]),
    (
        "x86_64_O2_function_sections",
        X64,
        false,
        &["-O2", "-ffunction-sections", "-fdata-sections"],
    ),
    ("x86_64_debug_info", X64, false, &["-O1", "-g"]),
    (
        "x86_64_cfguard",
        X64,
        false,
        &["-O1", "-Xclang", "-cfguard"],
    ),
    (
        "x86_64_cxx_comdat_eh",
        X64,
        true,
        &[
            "-O1",
            "-ffunction-sections",
            "-fexceptions",
            "-fcxx-exceptions",
        ],
    ),
    ("aarch64_O0", ARM64, false, &["-O0"]),
    (
        "aarch64_O2_function_sections",
        ARM64,
        false,
        &["-O2", "-ffunction-sections", "-fdata-sections"],
    ),
    ("aarch64_debug_info", ARM64, false, &["-O1", "-g"]),
    (
        "aarch64_cxx_comdat_eh",
        ARM64,
        true,
        &[
            "-O1",
            "-ffunction-sections",
            "-fexceptions",
            "-fcxx-exceptions",
        ],
    ),
    ("x86_64_bigobj_input", X64, false, &["-O1", "-g", BIGOBJ]),
    ("x86_64_code_without_data", X64, false, &["-O1", NO_DATA]),
    (
        "x86_64_bigobj_many_sections",
        X64,
        false,
        &["-O2", "-ffunction-sections", MANY],
    ),
    ("i686_O2", "i686-pc-windows-msvc", false, &["-O2"]),
    (
        "x86_64_mingw_g",
        "x86_64-w64-windows-gnu",
        false,
        &["-O1", "-g"],
    ),
];

/// Not a compiler flag: the shape's object is made `/bigobj` (see
/// [`to_bigobj`]).
const BIGOBJ: &str = "--bigobj";

/// Not a compiler flag: the source is 65300 functions, which
/// `-ffunction-sections` puts in as many sections, making clang write a
/// `/bigobj` object.
const MANY: &str = "--many-sections";

/// Not a compiler flag: the first code section with contents keeps its
/// size but loses its data (a zero `PointerToRawData`), which objcopy
/// fills with `int3` bytes.
const NO_DATA: &str = "--code-without-data";

/// Clears the data pointer of the first code section of the regular COFF
/// object `d` that has a size.
fn drop_code_data(d: &mut [u8]) -> Option<()> {
    let n = usize::from(u16::from_le_bytes(d.get(2..4)?.try_into().ok()?));
    for k in 0..n {
        let h = 20 + 40 * k;
        if u32_at(d, h + 36)? & 0x20 != 0 && u32_at(d, h + 16)? > 0 {
            d.get_mut(h + 20..h + 24)?.fill(0);
            return Some(());
        }
    }
    None
}

/// Compiles `shape` into `host.obj` in `dir`, with the device inputs
/// `d1` (raw bytes) and `d3` (100 kB) beside it.
fn coff_inputs(dir: &Path, shape: &CoffShape) -> Result<(), Failed> {
    let (name, triple, cxx, flags) = *shape;
    let (src, text) = if cxx {
        (format!("{name}.cpp"), COFF_CPP)
    } else {
        (format!("{name}.c"), COFF_C)
    };
    let target = format!("--target={triple}");
    let mut a = vec![target.as_str()];
    a.extend(
        flags
            .iter()
            .filter(|f| ![BIGOBJ, MANY, NO_DATA].contains(*f)),
    );
    let many;
    let text = if flags.contains(&MANY) {
        // One section per function: more than 65279 sections in all.
        many = (0..65300)
            .map(|i| format!("int f{i}(int x) {{ return x + {i}; }}\n"))
            .collect::<String>();
        &many
    } else {
        text
    };
    cc(dir, &src, text, "host.obj", &a)?;
    if flags.contains(&MANY) && !std::fs::read(dir.join("host.obj"))?.starts_with(b"\0\0\xff\xff") {
        return Err("clang did not write a /bigobj object".into());
    }
    if flags.contains(&NO_DATA) {
        let mut d = std::fs::read(dir.join("host.obj"))?;
        drop_code_data(&mut d).ok_or("host.obj has no code section with data")?;
        std::fs::write(dir.join("host.obj"), d)?;
    }
    if flags.contains(&BIGOBJ) {
        let regular = std::fs::read(dir.join("host.obj"))?;
        let big = to_bigobj(&regular).ok_or("host.obj is not a regular COFF object")?;
        std::fs::write(dir.join("host.obj"), big)?;
    }
    std::fs::write(dir.join("d1"), b"DEVICE-ONE")?;
    let big: Vec<u8> = (0..100_000u32).map(|i| (i * 7 + i / 251) as u8).collect();
    std::fs::write(dir.join("d3"), big)?;
    Ok(())
}

/// The little-endian `u32` at `at`.
fn u32_at(d: &[u8], at: usize) -> Option<u32> {
    Some(u32::from_le_bytes(d.get(at..at + 4)?.try_into().ok()?))
}

/// The regular COFF object `d` as a `/bigobj` one (the 56-byte header,
/// 20-byte symbol records, the rest moved along), as MSVC's `/bigobj`
/// writes it; `None` if `d` is not a regular object with its tables in
/// the usual order.
fn to_bigobj(d: &[u8]) -> Option<Vec<u8>> {
    const MAGIC: [u8; 16] = [
        0xc7, 0xa1, 0xba, 0xd1, 0xee, 0xba, 0xa9, 0x4b, 0xaf, 0x20, 0xfa, 0xf6, 0x6a, 0xa4, 0xdc,
        0xb8,
    ];
    let n = usize::from(u16::from_le_bytes(d.get(2..4)?.try_into().ok()?));
    let (symtab, count) = (u32_at(d, 8)? as usize, u32_at(d, 12)? as usize);
    let shift = 36u32;
    let mut out = vec![0u8; 56];
    out[2..4].copy_from_slice(&[0xff, 0xff]);
    out[4] = 2;
    out[6..8].copy_from_slice(&d[0..2]);
    out[8..12].copy_from_slice(&d[4..8]);
    out[12..28].copy_from_slice(&MAGIC);
    out[44..48].copy_from_slice(&u32::try_from(n).ok()?.to_le_bytes());
    out[48..52].copy_from_slice(&(u32::try_from(symtab).ok()? + shift).to_le_bytes());
    out[52..56].copy_from_slice(&u32::try_from(count).ok()?.to_le_bytes());
    for k in 0..n {
        let mut h = d.get(20 + 40 * k..60 + 40 * k)?.to_vec();
        for field in [20, 24] {
            let v = u32_at(&h, field)?;
            if v != 0 {
                h[field..field + 4].copy_from_slice(&(v + shift).to_le_bytes());
            }
        }
        out.extend_from_slice(&h);
    }
    out.extend_from_slice(d.get(20 + 40 * n..symtab)?);
    let mut i = 0;
    while i < count {
        let r = d.get(symtab + 18 * i..symtab + 18 * (i + 1))?;
        // Section numbers above 65279 are the special negative ones.
        let raw = u16::from_le_bytes([r[12], r[13]]);
        let number = if raw <= 65279 {
            i32::from(raw)
        } else {
            i32::from(raw as i16)
        };
        out.extend_from_slice(&r[..12]);
        out.extend_from_slice(&number.to_le_bytes());
        out.extend_from_slice(&r[14..18]);
        for a in 0..usize::from(r[17]) {
            let at = symtab + 18 * (i + 1 + a);
            out.extend_from_slice(d.get(at..at + 18)?);
            out.extend_from_slice(&[0, 0]);
        }
        i += 1 + usize::from(r[17]);
    }
    out.extend_from_slice(d.get(symtab + 18 * count..)?);
    Some(out)
}

/// The targets bundled with a host of `triple`: the host, a HIP device
/// and an OpenMP offload to the host machine.
fn coff_targets(triple: &str) -> [String; 3] {
    [
        format!("host-{triple}"),
        "hip-amdgcn-amd-amdhsa--gfx90a".into(),
        format!("openmp-{triple}"),
    ]
}

/// Bundles the shape's host with both tools (the same bytes), lists both
/// bundles with both tools (the same lines), and unbundles every target
/// from both bundles with both tools (the same files; the host's is
/// LLVM's stripped object).
fn coff_shape(shape: &CoffShape) -> Result<(), Failed> {
    let work = tempdir();
    let w = work.path();
    let src = w.join("in");
    std::fs::create_dir_all(&src)?;
    coff_inputs(&src, shape)?;
    let targets = coff_targets(shape.1).join(",");
    let bundle = args(&[
        "-type=o",
        &format!("-targets={targets}"),
        "-input=host.obj",
        "-input=d3",
        "-input=d1",
        "-output=fat.obj",
    ]);
    let (theirs, ours) = run_both(&src, w, "bundle", &bundle)?;
    same_outcome("bundling", &theirs, &ours)?;
    if ours.code != 0 {
        return Err(format!("bundling failed: {}", ours.stderr).into());
    }
    let both = w.join("both");
    copy_dir(&src, &both)?;
    std::fs::copy(ours.dir.join("fat.obj"), both.join("ours.obj"))?;
    std::fs::copy(theirs.dir.join("fat.obj"), both.join("llvm.obj"))?;
    same_file(&both, "ours.obj", "llvm.obj")?;
    let mut lists = Vec::new();
    for prog in [llvm(TOOL), ours_as(TOOL)] {
        for f in ["ours.obj", "llvm.obj"] {
            let r = run(&prog, &["-type=o", "-list", &format!("-input={f}")], &both).ok()?;
            lists.push(String::from_utf8_lossy(&r.stdout).into_owned());
        }
    }
    if lists[0].lines().count() != 3 {
        return Err(format!("LLVM lists {:?}", lists[0]).into());
    }
    for l in &lists[1..] {
        same("-list output", l, &lists[0])?;
    }
    let mut tags = Vec::new();
    for (who, prog) in [("llvm", llvm(TOOL)), ("ours", ours_as(TOOL))] {
        for f in ["llvm.obj", "ours.obj"] {
            let mut a = vec![
                "-type=o".to_string(),
                "-unbundle".into(),
                format!("-targets={targets}"),
                format!("-input={f}"),
            ];
            a.extend((0..3).map(|i| format!("-output={who}-{f}-{i}")));
            let r = run(&prog, &a, &both);
            if r.code != 0 {
                return Err(format!("{who} unbundling {f}: {}", r.stderr).into());
            }
            tags.push(format!("{who}-{f}"));
        }
    }
    for (i, input) in ["", "d3", "d1"].iter().enumerate() {
        let reference = format!("{}-{i}", tags[0]);
        if !input.is_empty() {
            same_file(&both, &reference, input)?;
        }
        for tag in &tags[1..] {
            same_file(&both, &format!("{tag}-{i}"), &reference)?;
        }
    }
    // The stripped host object is a valid COFF object LLVM reads.
    run(
        &llvm("llvm-readobj"),
        &["--sections", "ours-ours.obj-0"],
        &both,
    )
    .ok()?;
    Ok(())
}

/// Bundling a COFF bundle again, with the same targets (objcopy then also
/// sets the flags of the existing sections of those names) and unbundling
/// the result: LLVM's bytes.
fn coff_rebundle() -> Result<(), Failed> {
    let work = tempdir();
    let w = work.path();
    let src = w.join("in");
    std::fs::create_dir_all(&src)?;
    coff_inputs(&src, &COFF_SHAPES[0])?;
    let targets = format!("-targets={}", coff_targets(X64).join(","));
    llvm_fat_obj(&src, &targets)?;
    let again = args(&[
        "-type=o",
        &targets,
        "-input=fat.obj",
        "-input=d1",
        "-input=d3",
        "-output=twice.obj",
    ]);
    let (theirs, ours) = run_both(&src, w, "bundle", &again)?;
    same_outcome("bundling a bundle", &theirs, &ours)?;
    if ours.code != 0 {
        return Err(format!("bundling a bundle failed: {}", ours.stderr).into());
    }
    let unbundle = args(&[
        "-type=o",
        "-unbundle",
        &targets,
        "-input=twice.obj",
        "-output=h",
        "-output=a",
        "-output=b",
    ]);
    let (t, o) = run_both(&theirs.dir, w, "unbundle", &unbundle)?;
    same_outcome("unbundling it", &t, &o)
}

/// `-type=a` unbundling of a COFF static library holding a bundle and a
/// plain object, host target included: the same archives as LLVM's, whose
/// symbol tables list the COFF members' defined globals.
fn coff_archive(shape: &CoffShape) -> Result<(), Failed> {
    let work = tempdir();
    let w = work.path();
    let src = w.join("in");
    std::fs::create_dir_all(&src)?;
    coff_inputs(&src, shape)?;
    let t = coff_targets(shape.1);
    let targets = format!("-targets={}", t.join(","));
    llvm_fat_obj(&src, &targets)?;
    run(
        &llvm("llvm-ar"),
        &["rc", "fat.lib", "fat.obj", "host.obj"],
        &src,
    )
    .ok()?;
    let unbundle = args(&[
        "-type=a",
        "-unbundle",
        &targets,
        "-input=fat.lib",
        "-output=host.a",
        "-output=hip.a",
        "-output=omp.a",
        "-allow-missing-bundles",
    ]);
    let (theirs, ours) = run_both(&src, w, "unbundle", &unbundle)?;
    same_outcome("unbundling the archive", &theirs, &ours)?;
    if ours.code != 0 {
        return Err(format!("unbundling failed: {}", ours.stderr).into());
    }
    Ok(())
}

/// Native `offload-kit bundle --type o` and `unbundle` with a COFF host:
/// the drop-in's bytes, which are LLVM's.
fn coff_native(shape: &CoffShape) -> Result<(), Failed> {
    let work = tempdir();
    let d = work.path();
    coff_inputs(d, shape)?;
    let t = coff_targets(shape.1);
    run(
        &llvm(TOOL),
        &[
            "-type=o",
            &format!("-targets={}", t.join(",")),
            "-input=host.obj",
            "-input=d3",
            "-input=d1",
            "-output=llvm.obj",
        ],
        d,
    )
    .ok()?;
    let inputs = [
        format!("{}=host.obj", t[0]),
        format!("{}=d3", t[1]),
        format!("{}=d1", t[2]),
    ];
    let mut a = vec!["bundle", "--type", "o", "-o", "native.obj"];
    a.extend(inputs.iter().map(String::as_str));
    run(&ours(), &a, d).ok()?;
    same_file(d, "native.obj", "llvm.obj")?;
    run(
        &llvm(TOOL),
        &[
            "-type=o",
            "-unbundle",
            &format!("-targets={}", t[0]),
            "-input=llvm.obj",
            "-output=llvm_host.obj",
        ],
        d,
    )
    .ok()?;
    run(&ours(), &["unbundle", "llvm.obj", "-o", "all"], d).ok()?;
    let all = snapshot(&d.join("all"));
    same("entries written", all.len(), 3)?;
    let host = std::fs::read(d.join("llvm_host.obj"))?;
    let hosts = all.iter().filter(|(_, b)| *b == host).count();
    same("stripped host objects among them", hosts, 1)?;
    Ok(())
}

/// The trials of this file.
pub(super) fn tests() -> Vec<Trial> {
    let mut t = Vec::new();
    let tools = [TOOL, "clang", "llvm-readobj"];
    for (i, shape) in COFF_SHAPES.iter().enumerate() {
        t.push(trial!(
            coff_shape["{}", shape.0],
            &tools,
            move || coff_shape(&COFF_SHAPES[i]),
        ));
    }
    t.push(trial!(coff_rebundle, &tools));
    for i in [1, 4, 6, 8] {
        t.push(trial!(
            coff_archive["{}", COFF_SHAPES[i].0],
            &[TOOL, "clang", "llvm-ar"],
            move || coff_archive(&COFF_SHAPES[i]),
        ));
    }
    for i in [2, 7] {
        t.push(trial!(
            coff_native["{}", COFF_SHAPES[i].0],
            &tools,
            move || coff_native(&COFF_SHAPES[i]),
        ));
    }
    t
}

/// LLVM's bundle `fat.obj` (in `src`) of `host.obj`, `d3` and `d1` for
/// `targets` (a `-targets=` argument).
fn llvm_fat_obj(src: &Path, targets: &str) -> Result<(), Failed> {
    run(
        &llvm(TOOL),
        &[
            "-type=o",
            targets,
            "-input=host.obj",
            "-input=d3",
            "-input=d1",
            "-output=fat.obj",
        ],
        src,
    )
    .ok()
    .map(drop)
}
