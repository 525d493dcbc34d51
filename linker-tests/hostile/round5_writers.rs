//! The fifth round of hostile inputs (issue #57): writers validate what
//! they emit. Each input is damaged in one field that the format's
//! reference tool refuses, or that a rewrite would turn into such a field,
//! and is built here: `ar` archives whose member names point past the
//! long-name table (COFF `.lib`, GNU) or past their member (BSD), a `.deb`
//! whose `data.tar` holds a malformed pax record, a DLL whose fat-binary
//! section's `SizeOfRawData` is not a multiple of `FileAlignment`, and a
//! `/bigobj` object with a special section number a regular object cannot
//! hold. The reference tool is run on each (`llvm-ar t`, `dpkg-deb -c`,
//! Wine's loader and `llvm-readobj`), and `prune` either exits 2 with one
//! line naming the file and the field, writing nothing, or writes a file
//! the reference tool takes as it took the input.

use super::*;
use crate::util::{Wine, llvm, run};

use super::round4::{bundle, one_error};

pub(super) fn tests() -> Vec<Trial> {
    vec![
        trial!(archive_names_that_resolve_nowhere_are_refused, &["llvm-ar"]),
        trial!(a_deb_with_a_malformed_pax_record_is_refused, &["dpkg-deb"]),
        trial!(a_dll_whose_fatbin_section_is_not_file_aligned_still_loads, &[
                "clang",
                "clang++",
                "clang-offload-bundler",
                "lld-link",
                "llvm-dlltool",
                "llvm-readobj",
                "/usr/lib/wine/wine64",
            ]),
        trial!(a_bigobj_symbol_keeps_its_special_section_number, &[
                "clang",
                "clang++",
                "clang-offload-bundler",
                "lld-link",
                "llvm-readobj",
            ]),
    ]
}

/// The bundle every trial prunes: a host entry and two gfx images, of
/// which `--keep gfx90a` drops one.
fn hipfb(d: &Path, out: &str) -> Result<(), Failed> {
    std::fs::write(d.join("host"), b"host code")?;
    std::fs::write(d.join("a90"), crate::util::bytes(1, 5000))?;
    std::fs::write(d.join("a42"), crate::util::bytes(2, 5000))?;
    bundle(
        d,
        out,
        false,
        &[
            "host-x86_64-unknown-linux-gnu=host",
            "hipv4-amdgcn-amd-amdhsa--gfx90a=a90",
            "hipv4-amdgcn-amd-amdhsa--gfx942=a42",
        ],
    )
}

/// `prune --keep gfx90a -o out in` in `d`.
fn prune(d: &Path, input: &str, out: &str) -> crate::util::Run {
    run(&ours(), &["prune", "--keep", "gfx90a", "-o", out, input], d)
}

/// Fails unless `prune` of `input` exits 2 with one line naming it and
/// holding each of `words`, and writes no `out`.
fn refused(d: &Path, input: &str, words: &[&str]) -> Result<(), Failed> {
    let out = format!("{input}.out");
    let r = prune(d, input, &out);
    one_error(&format!("prune {input}"), &r, input, words)?;
    if d.join(&out).exists() {
        return Err(format!("prune {input}: exit 2, but it wrote {out}").into());
    }
    Ok(())
}

/// `b` with the first `from` replaced by `to` (of the same length).
fn replaced(b: &[u8], from: &[u8], to: &[u8]) -> Result<Vec<u8>, Failed> {
    assert_eq!(from.len(), to.len());
    let at = b
        .windows(from.len())
        .position(|w| w == from)
        .ok_or_else(|| format!("{:?} not found", String::from_utf8_lossy(from)))?;
    let mut c = b.to_vec();
    c[at..at + to.len()].copy_from_slice(to);
    Ok(c)
}

/// COFF (`llvm-ar --format=coff`, a `.lib`) and GNU archives whose first
/// long name `/0` becomes `/99`, past the long-name table; a GNU one whose
/// long name loses its `/` before the newline; a BSD archive whose
/// `#1/36` becomes `#1/99999`, past its member. `llvm-ar t` refuses each;
/// `prune` did too for none of the first three and wrote archives
/// `llvm-ar` refuses (the BSD error did not name the file). Undamaged,
/// the COFF and GNU archives prune into ones `llvm-ar t` lists as before.
fn archive_names_that_resolve_nowhere_are_refused() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    hipfb(d, "k.hipfb")?;
    let long = "a_rather_long_member_name.hipfb";
    std::fs::copy(d.join("k.hipfb"), d.join(long))?;
    for (format, out) in [("coff", "k.lib"), ("gnu", "g.a"), ("bsd", "b.a")] {
        let args = [&format!("--format={format}"), "rc", out, long, "k.hipfb"];
        run(&llvm("llvm-ar"), &args, d).ok()?;
    }
    let listing = |f: &str| run(&llvm("llvm-ar"), &["t", f], d);
    let want = format!("{long}\nk.hipfb\n");
    for good in ["k.lib", "g.a"] {
        let out = format!("{good}.out");
        prune(d, good, &out).ok()?;
        let l = listing(&out).ok()?;
        crate::util::same(
            &format!("llvm-ar t {out}"),
            String::from_utf8_lossy(&l.stdout).into_owned(),
            want.clone(),
        )?;
    }
    let at99: (&[u8], &[u8]) = (b"/0              ", b"/99             ");
    let unended: (&[u8], &[u8]) = (b".hipfb/\n", b".hipfbX\n");
    let bsd: (&[u8], &[u8]) = (b"#1/36           ", b"#1/99999        ");
    let cases = [
        (
            "k.lib",
            "past.lib",
            at99,
            "'/99'",
            "past the long-name table",
        ),
        ("g.a", "past.a", at99, "'/99'", "past the long-name table"),
        ("g.a", "unended.a", unended, "'/0'", "does not end"),
        ("b.a", "bsd.a", bsd, "#1/99999", "BSD name"),
    ];
    for (from, to, (old, new), field, why) in cases {
        let b = replaced(&std::fs::read(d.join(from))?, old, new)?;
        std::fs::write(d.join(to), b)?;
        let l = listing(to);
        if l.code == 0 {
            return Err(format!("llvm-ar t {to} takes it: {:?}", l.stdout).into());
        }
        refused(d, to, &[field, why])?;
    }
    Ok(())
}

/// A ustar header block for `name` (`kind` its type flag) of `size`
/// bytes, its checksum set.
fn ustar(name: &str, kind: u8, mode: u32, size: usize) -> Vec<u8> {
    let mut h = vec![0u8; 512];
    h[..name.len()].copy_from_slice(name.as_bytes());
    h[100..108].copy_from_slice(format!("{mode:07o}\0").as_bytes());
    h[108..116].copy_from_slice(b"0000000\0");
    h[116..124].copy_from_slice(b"0000000\0");
    h[124..136].copy_from_slice(format!("{size:011o}\0").as_bytes());
    h[136..148].copy_from_slice(b"00000000000\0");
    h[148..156].copy_from_slice(b"        ");
    h[156] = kind;
    h[257..265].copy_from_slice(b"ustar\x0000");
    h[265..269].copy_from_slice(b"root");
    h[297..301].copy_from_slice(b"root");
    let sum: u32 = h.iter().map(|&b| u32::from(b)).sum();
    h[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
    h
}

/// A tar archive of `(name, type flag, mode, data)` entries, ended and
/// padded to a whole record as GNU tar does.
fn tar(entries: &[(&str, u8, u32, &[u8])]) -> Vec<u8> {
    let mut t = Vec::new();
    for (name, kind, mode, data) in entries {
        t.extend(ustar(name, *kind, *mode, data.len()));
        t.extend_from_slice(data);
        t.resize(t.len().next_multiple_of(512), 0);
    }
    t.resize(t.len() + 1024, 0);
    t.resize(t.len().next_multiple_of(10240), 0);
    t
}

/// A Debian package (an `ar` archive) of uncompressed tar members, whose
/// `data.tar` holds `usr/k.hipfb` (`k`) after a pax header of `record`.
fn deb(k: &[u8], record: &[u8]) -> Vec<u8> {
    let control = b"Package: k\nVersion: 1\nArchitecture: all\nMaintainer: k <k@k>\n\
                    Description: k\n";
    let members: [(&str, Vec<u8>); 3] = [
        ("debian-binary", b"2.0\n".to_vec()),
        (
            "control.tar",
            tar(&[
                ("./", b'5', 0o755, b""),
                ("./control", b'0', 0o644, control),
            ]),
        ),
        (
            "data.tar",
            tar(&[
                ("./", b'5', 0o755, b""),
                ("./usr/", b'5', 0o755, b""),
                ("./usr/PaxHeaders/k.hipfb", b'x', 0o644, record),
                ("./usr/k.hipfb", b'0', 0o644, k),
            ]),
        ),
    ];
    let mut a = b"!<arch>\n".to_vec();
    for (name, data) in members {
        let h = format!(
            "{name:<16}{:<12}{:<6}{:<6}{:<8}{:<10}`\n",
            0,
            0,
            0,
            100644,
            data.len()
        );
        a.extend_from_slice(h.as_bytes());
        a.extend_from_slice(&data);
        if data.len() % 2 == 1 {
            a.push(b'\n');
        }
    }
    a
}

/// `.deb`s whose `data.tar` gives the file to prune a pax header with one
/// malformed record (a length past the header, none, no `=`, no final
/// newline, a `size` that is no number). `dpkg-deb -c` refuses each
/// (GNU tar's words); `prune` wrote each again, and `dpkg-deb` refused
/// the output too. With a well-formed record, the package prunes and
/// `dpkg-deb -c` lists it.
fn a_deb_with_a_malformed_pax_record_is_refused() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    hipfb(d, "k.hipfb")?;
    let k = std::fs::read(d.join("k.hipfb"))?;
    let dpkg = |deb: &str| run(Path::new("/usr/bin/dpkg-deb"), &["-c", deb], d);
    std::fs::write(
        d.join("good.deb"),
        deb(&k, b"30 mtime=1700000000.123456789\n"),
    )?;
    dpkg("good.deb").ok()?;
    prune(d, "good.deb", "good-out.deb").ok()?;
    let listed = String::from_utf8_lossy(&dpkg("good-out.deb").ok()?.stdout).into_owned();
    if !listed.contains("./usr/k.hipfb") {
        return Err(format!("dpkg-deb -c good-out.deb:\n{listed}").into());
    }
    let cases: [(&str, &[u8], &str); 5] = [
        (
            "past",
            b"30 mtime=1700000000.12345678\n",
            "past the header's data",
        ),
        ("nolength", b"x mtime=1\n", "has no length"),
        ("noequals", b"12 mtime1234\n", "has no '='"),
        ("nonewline", b"12 mtime=123x", "does not end in a newline"),
        ("size", b"11 size=4x\n", "not a decimal number"),
    ];
    for (name, record, why) in cases {
        let file = format!("{name}.deb");
        std::fs::write(d.join(&file), deb(&k, record))?;
        let r = dpkg(&file);
        if r.code == 0 {
            return Err(format!("dpkg-deb -c {file} takes it").into());
        }
        let words = [
            "data.tar",
            "pax header",
            "PaxHeaders/k.hipfb",
            "record 1",
            why,
        ];
        refused(d, &file, &words)?;
    }
    Ok(())
}

/// The little-endian `u32` at `at` of `b`.
fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// A PE section header, as the test reads it.
#[derive(Clone)]
struct PeSection {
    name: String,
    /// Where the header lies.
    header: usize,
    /// `PointerToRawData`, `SizeOfRawData`, `VirtualSize`.
    ptr: u32,
    size: u32,
    vsize: u32,
}

/// The PE image `b`'s file alignment and its sections.
fn pe_sections(b: &[u8]) -> (u32, Vec<PeSection>) {
    let pe = u32_at(b, 0x3c) as usize;
    let count = usize::from(u16::from_le_bytes([b[pe + 6], b[pe + 7]]));
    let opt = pe + 24;
    let table = opt + usize::from(u16::from_le_bytes([b[pe + 20], b[pe + 21]]));
    let sections = (0..count)
        .map(|i| {
            let h = table + 40 * i;
            PeSection {
                name: String::from_utf8_lossy(&b[h..h + 8])
                    .trim_end_matches('\0')
                    .to_string(),
                header: h,
                ptr: u32_at(b, h + 20),
                size: u32_at(b, h + 16),
                vsize: u32_at(b, h + 8),
            }
        })
        .collect();
    (u32_at(b, opt + 36), sections)
}

/// What `llvm-readobj --coff-basereloc` says of `dll` (its exit code
/// checked).
fn base_relocations(d: &Path, dll: &str) -> Result<String, Failed> {
    let r = run(&llvm("llvm-readobj"), &["--coff-basereloc", dll], d).ok()?;
    let text = String::from_utf8_lossy(&r.stdout);
    Ok(text
        .lines()
        .skip_while(|l| !l.starts_with("BaseReloc"))
        .collect::<Vec<_>>()
        .join("\n"))
}

/// A DLL linked at the address `load.exe` takes, so that Wine's loader
/// must apply its base relocations, whose `.hip_fat` `SizeOfRawData` is
/// cut to its virtual size rounded up to 64 bytes (not a multiple of
/// `FileAlignment`, 512). `llvm-readobj` reads its base relocations and
/// Wine loads it; `prune` shrank it, moving `.reloc` down by a number of
/// bytes that is no multiple of 512, and Wine, which maps raw data from
/// 512-byte units, read no relocations and the wrapper's pointer was
/// left unrelocated (a page fault). Now each section's raw data lies at a
/// multiple of `FileAlignment` in the file, the base relocations read as
/// before, and the DLL answers under Wine as the input does.
fn a_dll_whose_fatbin_section_is_not_file_aligned_still_loads() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    // The wrapper's pointer is base-relocated: read through it.
    let f = "__declspec(dllexport) int f(int *out) {\n\
             *out = ((const unsigned char *)w.data)[0];\n\
             return w.magic == 0x48495046 ? 0 : 1;\n}\n";
    crate::windows_hostile::build_with(d, f, &["/base:0x140000000"])?;
    let dll = std::fs::read(d.join("dll.dll"))?;
    let (align, sections) = pe_sections(&dll);
    let PeSection {
        header: h,
        size: raw,
        vsize,
        ..
    } = sections
        .iter()
        .find(|s| s.name == ".hip_fat")
        .cloned()
        .ok_or("no .hip_fat")?;
    let mut cut = vsize.next_multiple_of(64);
    if cut % align == 0 {
        cut += 64;
    }
    if cut >= raw {
        return Err(format!("the layout changed: .hip_fat has {raw:#x} raw bytes").into());
    }
    let mut bad = dll.clone();
    bad[h + 16..h + 20].copy_from_slice(&cut.to_le_bytes());
    std::fs::write(d.join("unaligned.dll"), &bad)?;
    let relocs = base_relocations(d, "unaligned.dll")?;
    let wine = Wine::new(d)?;
    let answer = wine.call("unaligned.dll", "f")?;
    if answer != "0 95" {
        return Err(format!("the input answers {answer:?} under Wine").into());
    }
    // The undamaged DLL shrinks and loads.
    prune(d, "dll.dll", "dll-out.dll").ok()?;
    crate::util::same(
        "dll-out.dll under Wine",
        wine.call("dll-out.dll", "f")?,
        answer.clone(),
    )?;
    let r = prune(d, "unaligned.dll", "out.dll");
    if r.code == 2 {
        return refused(d, "unaligned.dll", &["SizeOfRawData"]);
    }
    let r = r.ok()?;
    let loaded = wine.call("out.dll", "f")?;
    crate::util::same("out.dll under Wine", loaded, answer)?;
    let out = std::fs::read(d.join("out.dll"))?;
    let (_, after) = pe_sections(&out);
    for PeSection {
        name, ptr, size, ..
    } in &after
    {
        if *size != 0 && (ptr % align != 0 || (*ptr as usize + *size as usize) > out.len()) {
            return Err(format!(
                "out.dll: section {name}'s raw data at {ptr:#x}, {size:#x} bytes, in a file of \
                 {:#x} (FileAlignment {align:#x}); prune said:\n{}",
                out.len(),
                String::from_utf8_lossy(&r.stdout)
            )
            .into());
        }
    }
    crate::util::same(
        "out.dll: base relocations",
        base_relocations(d, "out.dll")?,
        relocs,
    )
}

/// `data`, a regular COFF object, as a `/bigobj` one (56-byte header,
/// 20-byte symbol records, section numbers widened), the symbol named
/// `name` given section number `number`.
fn to_bigobj(data: &[u8], name: &[u8], number: i32) -> Vec<u8> {
    const MAGIC: [u8; 16] = [
        0xc7, 0xa1, 0xba, 0xd1, 0xee, 0xba, 0xa9, 0x4b, 0xaf, 0x20, 0xfa, 0xf6, 0x6a, 0xa4, 0xdc,
        0xb8,
    ];
    let n = u32::from(u16::from_le_bytes([data[2], data[3]]));
    let (symtab, nsyms) = (u32_at(data, 8), u32_at(data, 12));
    // 36 more bytes of file header move everything after it.
    let shift = 36;
    let mut out = vec![0u8; 56];
    out[2..4].copy_from_slice(&[0xff, 0xff]);
    out[4] = 2;
    out[6..8].copy_from_slice(&data[0..2]);
    out[8..12].copy_from_slice(&data[4..8]);
    out[12..28].copy_from_slice(&MAGIC);
    out[44..48].copy_from_slice(&n.to_le_bytes());
    out[48..52].copy_from_slice(&(symtab + shift).to_le_bytes());
    out[52..56].copy_from_slice(&nsyms.to_le_bytes());
    let (n, symtab, nsyms) = (n as usize, symtab as usize, nsyms as usize);
    for k in 0..n {
        let mut h = data[20 + 40 * k..60 + 40 * k].to_vec();
        for field in [20, 24] {
            let v = u32_at(&h, field);
            if v != 0 {
                h[field..field + 4].copy_from_slice(&(v + shift).to_le_bytes());
            }
        }
        out.extend_from_slice(&h);
    }
    out.extend_from_slice(&data[20 + 40 * n..symtab]);
    let mut i = 0;
    while i < nsyms {
        let r = &data[symtab + 18 * i..symtab + 18 * (i + 1)];
        let mut section = i32::from(i16::from_le_bytes([r[12], r[13]]));
        if r[..8].starts_with(name) && r[name.len()..8].iter().all(|&b| b == 0) {
            section = number;
        }
        out.extend_from_slice(&r[..12]);
        out.extend_from_slice(&section.to_le_bytes());
        out.extend_from_slice(&r[14..18]);
        for a in 0..usize::from(r[17]) {
            let at = symtab + 18 * (i + 1 + a);
            out.extend_from_slice(&data[at..at + 18]);
            out.extend_from_slice(&[0, 0]);
        }
        i += 1 + usize::from(r[17]);
    }
    out.extend_from_slice(&data[symtab + 18 * nsyms..]);
    out
}

/// What `llvm-readobj --symbols` says of the section of `@feat.00` in
/// `obj`.
fn feat_section(d: &Path, obj: &str) -> Result<String, Failed> {
    let r = run(&llvm("llvm-readobj"), &["--symbols", obj], d).ok()?;
    let text = String::from_utf8_lossy(&r.stdout);
    let lines: Vec<&str> = text.lines().collect();
    if let Some(l) = lines.iter().find(|l| l.contains("Invalid section number")) {
        return Err(format!("llvm-readobj --symbols {obj}: {}", l.trim()).into());
    }
    let at = lines
        .iter()
        .position(|l| l.trim() == "Name: @feat.00")
        .ok_or_else(|| format!("llvm-readobj --symbols {obj}: no @feat.00:\n{text}"))?;
    match lines
        .iter()
        .skip(at)
        .find(|l| l.trim_start().starts_with("Section:"))
    {
        Some(l) => Ok(l.trim().to_string()),
        None => Err(format!("llvm-readobj --symbols {obj}: @feat.00 has no section").into()),
    }
}

/// A `/bigobj` form of the HIP host object, `@feat.00`'s section number
/// set to -4092 (`0xfffff004`): `llvm-readobj` reads it as -4092. Pruned,
/// the object came out as a regular one, the number cut to 16 bits:
/// section 61444, which `llvm-readobj` calls invalid. Now it stays
/// `/bigobj`, and the number -4092.
fn a_bigobj_symbol_keeps_its_special_section_number() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    crate::windows_hostile::build(d)?;
    let obj = std::fs::read(d.join("dll.obj"))?;
    std::fs::write(d.join("big.obj"), to_bigobj(&obj, b"@feat.00", -4092))?;
    let want = feat_section(d, "big.obj")?;
    if want != "Section:  (-4092)" {
        return Err(format!("llvm-readobj reads big.obj's @feat.00 as {want:?}").into());
    }
    let r = prune(d, "big.obj", "out.obj");
    if r.code == 2 {
        return refused(d, "big.obj", &["@feat.00", "-4092"]);
    }
    r.ok()?;
    crate::util::same("out.obj: @feat.00", feat_section(d, "out.obj")?, want)
}
