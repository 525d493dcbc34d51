//! Where we differ from LLVM on purpose, and hostile host objects: clean
//! errors, never a panic.

use super::*;

/// HIP-only targets with an object first input: LLVM 22 crashes; we refuse
/// cleanly and write nothing.
fn hip_only_object_is_an_error() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    copy_dir(inputs()?, d)?;
    let a = args(&[
        "-type=o",
        "-targets=hip-amdgcn-amd-amdhsa--gfx906,hip-amdgcn-amd-amdhsa--gfx90a",
        "-input=main.o",
        "-input=d1",
        "-output=x.o",
    ]);
    let before = snapshot(d);
    let r = run(&ours_as(TOOL), &a, d);
    clean_failure("bundling HIP-only into an object", &r, "host target")?;
    same("files after the failure", snapshot(d), before)?;
    let r = run(&llvm(TOOL), &a, d);
    if r.code == 0 {
        return Err("LLVM 22 no longer crashes on HIP-only object bundles: revisit".into());
    }
    Ok(())
}

/// The host object of a compressed object bundle: LLVM 22 runs llvm-objcopy
/// on the compressed file itself, which fails (`'llvm-objcopy' tool
/// failed`, leaving an empty host output); we extract it from the
/// decompressed bundle, the same as from the uncompressed one.
fn host_from_compressed_object_bundle() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    copy_dir(inputs()?, d)?;
    let a = |input: &str, out: &str| {
        args(&[
            "-type=o",
            "-unbundle",
            HD,
            &format!("-input={input}"),
            &format!("-output={out}"),
            "-output=dev",
        ])
    };
    let theirs = run(&llvm(TOOL), &a("fat.ccob", "llvm-host"), d);
    if theirs.code == 0 {
        return Err("LLVM 22 now extracts hosts from compressed object bundles: revisit".into());
    }
    run(&ours_as(TOOL), &a("fat.ccob", "ours-host"), d).ok()?;
    run(&llvm(TOOL), &a("fat.o", "llvm-plain-host"), d).ok()?;
    same_file(d, "ours-host", "llvm-plain-host")
}

/// Byte offset of section `index`'s header field at `field` in an ELF64
/// little-endian file.
fn shdr_field(data: &[u8], index: usize, field: usize) -> usize {
    let shoff = u64::from_le_bytes(data[0x28..0x30].try_into().unwrap()) as usize;
    shoff + index * 64 + field
}

/// The index of the last section.
fn last_section(data: &[u8]) -> usize {
    u16::from_le_bytes([data[0x3c], data[0x3d]]) as usize - 1
}

type Corrupt = fn(&[u8]) -> Vec<u8>;

fn hostile_objects() -> Vec<(&'static str, Corrupt, &'static [&'static str])> {
    const DEV: &[&str] = &["-targets=hip-amdgcn-amd-amdhsa--gfx906"];
    const HOST: &[&str] = &["-targets=host-x86_64-unknown-linux-gnu"];
    vec![
        ("truncated_header", |d| d[..40].to_vec(), DEV),
        ("truncated_in_sections", |d| d[..d.len() / 2].to_vec(), DEV),
        (
            "truncated_section_table",
            |d| d[..d.len() - 1].to_vec(),
            HOST,
        ),
        (
            "bundle_section_past_the_end",
            |d| {
                let mut v = d.to_vec();
                let at = shdr_field(&v, last_section(&v), 24);
                v[at..at + 8].copy_from_slice(&(1u64 << 40).to_le_bytes());
                v
            },
            DEV,
        ),
        (
            "bundle_section_size_past_the_end",
            |d| {
                let mut v = d.to_vec();
                let at = shdr_field(&v, last_section(&v), 32);
                v[at..at + 8].copy_from_slice(&u64::MAX.to_le_bytes());
                v
            },
            DEV,
        ),
        (
            // LLVM reads no name from such a table ("is non-null
            // terminated"), so neither lists nor extracts anything.
            "name_table_not_null_terminated",
            |d| {
                let mut v = d.to_vec();
                let names = u16::from_le_bytes([v[0x3e], v[0x3f]]) as usize;
                let at = |f: usize| shdr_field(&v, names, f);
                let off = u64::from_le_bytes(v[at(24)..at(24) + 8].try_into().unwrap());
                let size = u64::from_le_bytes(v[at(32)..at(32) + 8].try_into().unwrap());
                v[(off + size - 1) as usize] = b'x';
                v
            },
            HOST,
        ),
        (
            "host_strip_with_symbol_table_link_out_of_range",
            |d| {
                let mut v = d.to_vec();
                // .rela.text's sh_link (section 3 in clang's layout).
                let at = shdr_field(&v, 3, 40);
                v[at..at + 4].copy_from_slice(&500u32.to_le_bytes());
                v
            },
            HOST,
        ),
    ]
}

fn run_hostile(corrupt: Corrupt, targets: &[&str]) -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    let bad = corrupt(&std::fs::read(inputs()?.join("fat.o"))?);
    std::fs::write(d.join("bad.o"), &bad)?;
    let before = snapshot(d);
    let mut a = args(&["-type=o", "-unbundle", "-input=bad.o", "-output=out1"]);
    a.extend(targets.iter().map(|s| s.to_string()));
    let r = run(&ours_as(TOOL), &a, d);
    clean_failure("unbundling", &r, "bad.o")?;
    same("files after the failure", snapshot(d), before)?;
    // Listing reads names only, as LLVM's does: where LLVM lists, so do we.
    let l = args(&["-type=o", "-list", "-input=bad.o"]);
    let (theirs, ours) = (run(&llvm(TOOL), &l, d), run(&ours_as(TOOL), &l, d));
    if ours.code == 0 {
        same("-list output", &ours.stdout, &theirs.stdout)?;
    } else {
        // An object we cannot parse: LLVM takes it for a non-bundle.
        clean_failure("listing", &ours, "bad.o")?;
        same("LLVM's -list output", &theirs.stdout[..], b"")?;
    }
    Ok(())
}

/// A kept relocation against a symbol defined in a bundle section: both
/// llvm-objcopy and we refuse to extract the host object.
fn relocation_into_bundle_section() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    let asm = "\t.text\n\t.globl f\nf:\tret\n\
               \t.section __CLANG_OFFLOAD_BUNDLE__host-x86_64-unknown-linux-gnu-,\"e\",@progbits\n\t.byte 0\n\
               \t.section __CLANG_OFFLOAD_BUNDLE__openmp-x86_64-unknown-linux-gnu-,\"e\",@progbits\n\
               inb:\t.long 7\n\
               \t.data\n\t.quad inb\n";
    cc(d, "r.s", asm, "r.o", &[])?;
    let a = args(&[
        "-type=o",
        "-unbundle",
        "-targets=host-x86_64-unknown-linux-gnu",
        "-input=r.o",
        "-output=h.o",
    ]);
    let theirs = run(&llvm(TOOL), &a, d);
    if theirs.code == 0 {
        return Err("LLVM extracted the host object: revisit".into());
    }
    let _ = std::fs::remove_file(d.join("h.o"));
    let r = run(&ours_as(TOOL), &a, d);
    clean_failure("unbundling", &r, "r.o")?;
    if d.join("h.o").exists() {
        return Err("an output was written".into());
    }
    Ok(())
}

/// Symbols defined in bundle sections are dropped with them, and
/// `.llvm_addrsig` loses its link, as llvm-objcopy does; a section named
/// exactly the magic is removed but is not an entry; a name merely
/// containing the magic is kept.
fn symbols_in_bundle_sections() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    let asm = "\t.text\n\t.globl f\nf:\tret\n\
               \t.section __CLANG_OFFLOAD_BUNDLE__host-x86_64-unknown-linux-gnu-,\"e\",@progbits\n\t.byte 0\n\
               \t.section __CLANG_OFFLOAD_BUNDLE__openmp-x86_64-unknown-linux-gnu-,\"e\",@progbits\n\
               inb:\t.long 7\n\t.globl gsym\ngsym:\t.byte 5\n\
               \t.section __CLANG_OFFLOAD_BUNDLE__,\"e\",@progbits\n\t.byte 9\n\
               \t.section xx__CLANG_OFFLOAD_BUNDLE__foo,\"\",@progbits\n\t.byte 7\n\
               \t.addrsig\n\t.addrsig_sym f\n\t.addrsig_sym gsym\n";
    cc(d, "s.s", asm, "s.o", &[])?;
    let a = args(&[
        "-type=o",
        "-unbundle",
        "-targets=host-x86_64-unknown-linux-gnu,openmp-x86_64-unknown-linux-gnu",
        "-input=s.o",
        "-output=h.o",
        "-output=dev",
    ]);
    let (theirs, ours) = run_both(d, d, "syms", &a)?;
    same_outcome("unbundling", &theirs, &ours)?;
    let l = args(&["-type=o", "-list", "-input=s.o"]);
    let (theirs, ours) = run_both(d, d, "list", &l)?;
    same_outcome("listing", &theirs, &ours)
}

/// Symbols removed with the bundle sections renumber the others: the
/// relocations against them, the COMDAT groups' signatures (a local
/// signature loses GRP_COMDAT) and members, for 64- and 32-bit objects;
/// LLVM's bytes.
fn renumbered_relocations_and_groups() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    let asm = |word: &str| {
        format!(
            "\t.text\n\t.globl f\nf:\tcall g\n\tcall h\n\tret\n\
             \t.section __CLANG_OFFLOAD_BUNDLE__host-x86_64-unknown-linux-gnu-,\"e\",@progbits\n\t.byte 0\n\
             \t.section __CLANG_OFFLOAD_BUNDLE__openmp-x86_64-unknown-linux-gnu-,\"e\",@progbits\n\
             \t.globl inb\ninb:\t.long 7\n\t.globl inb2\ninb2:\t.long 8\n\
             \t.section .text.g,\"axG\",@progbits,g,comdat\n\t.weak g\ng:\tret\n\
             \t.section .text.h,\"axG\",@progbits,hgrp,comdat\n\t.globl h\nh:\tret\n\
             \t.section .data.x,\"aw\",@progbits\n\
             \t{word} f\n\t{word} g\n\t{word} h\n\t{word} zext\n\
             \t.addrsig\n\t.addrsig_sym g\n"
        )
    };
    cc(d, "r64.s", &asm(".quad"), "r64.o", &[])?;
    cc(
        d,
        "r32.s",
        &asm(".long"),
        "r32.o",
        &["--target=i386-linux-gnu"],
    )?;
    for f in ["r64.o", "r32.o"] {
        let a = args(&[
            "-type=o",
            "-unbundle",
            "-targets=host-x86_64-unknown-linux-gnu,openmp-x86_64-unknown-linux-gnu",
            &format!("-input={f}"),
            "-output=h.o",
            "-output=dev",
        ]);
        let (theirs, ours) = run_both(d, d, &format!("renumber-{f}"), &a)?;
        same_outcome(&format!("unbundling {f}"), &theirs, &ours)?;
        same(&format!("{f}: success"), ours.code, 0)?;
    }
    Ok(())
}

/// Objects with more than 65279 sections (extended section indices): an
/// object whose symbols need `.symtab_shndx`, bundled and extracted; and
/// a bundle whose removed sections bring the rest back under the limit,
/// where llvm-objcopy drops the table. LLVM's bytes each time.
fn large_section_indices() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    let functions = |n: usize| -> String {
        (0..n)
            .map(|i| format!("\t.section .t{i},\"ax\",@progbits\n\t.globl f{i}\nf{i}:\tret\n"))
            .collect()
    };
    cc(d, "many.s", &functions(66_000), "many.o", &[])?;
    let mut bundled = String::from(
        "\t.section __CLANG_OFFLOAD_BUNDLE__host-x86_64-unknown-linux-gnu-,\"e\",@progbits\n\t.byte 0\n",
    );
    for k in 0..40 {
        bundled.push_str(&format!(
            "\t.section __CLANG_OFFLOAD_BUNDLE__openmp-x86_64-unknown-linux-gnu-{k},\"e\",@progbits\n\t.byte 1\n"
        ));
    }
    bundled.push_str(&functions(65_260));
    cc(d, "over.s", &bundled, "over.o", &[])?;
    std::fs::write(d.join("dev"), b"DEVICE")?;
    let targets = "-targets=host-x86_64-unknown-linux-gnu,openmp-x86_64-unknown-linux-gnu";
    let runs = [
        args(&[
            "-type=o",
            targets,
            "-input=many.o",
            "-input=dev",
            "-output=fat.o",
        ]),
        args(&[
            "-type=o",
            "-unbundle",
            targets,
            "-input=many.o",
            "-output=h1.o",
            "-output=d1",
            "-allow-missing-bundles",
        ]),
        args(&[
            "-type=o",
            "-unbundle",
            "-targets=host-x86_64-unknown-linux-gnu",
            "-input=over.o",
            "-output=h2.o",
        ]),
    ];
    for (k, a) in runs.iter().enumerate() {
        let (theirs, ours) = run_both(d, d, &format!("large-{k}"), a)?;
        same_outcome(&format!("large section indices, run {k}"), &theirs, &ours)?;
        same(&format!("run {k}: success"), ours.code, 0)?;
    }
    // The bundle LLVM made from many.o, extracted by both.
    let fat_dir = d.join("large-0-llvm");
    let a = args(&[
        "-type=o",
        "-unbundle",
        targets,
        "-input=fat.o",
        "-output=h.o",
        "-output=d",
    ]);
    let (theirs, ours) = run_both(&fat_dir, d, "large-fat", &a)?;
    same_outcome("extracting from the large bundle", &theirs, &ours)
}

/// Compact relocations (`SHT_CREL`) after symbols defined in bundle
/// sections go: decoded, renumbered and encoded again as llvm-objcopy
/// does, for x86_64 and i386; LLVM's bytes.
fn crel_with_removed_symbols() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    let asm = "\t.text\n\t.globl f\nf:\tcall g\n\tret\n\
               \t.section __CLANG_OFFLOAD_BUNDLE__host-x86_64-unknown-linux-gnu-,\"e\",@progbits\n\t.byte 0\n\
               \t.section __CLANG_OFFLOAD_BUNDLE__openmp-x86_64-unknown-linux-gnu-,\"e\",@progbits\n\
               \t.globl inb\ninb:\t.long 7\n\
               \t.text\n\t.globl g\ng:\tret\n\t.long zext\n\t.long h2+100000\n\t.long f-8\n";
    let crel = "-Wa,--crel,--allow-experimental-crel";
    cc(d, "c.s", asm, "c64.o", &[crel])?;
    cc(d, "c.s", asm, "c32.o", &[crel, "--target=i386-linux-gnu"])?;
    for f in ["c64.o", "c32.o"] {
        let a = args(&[
            "-type=o",
            "-unbundle",
            "-targets=host-x86_64-unknown-linux-gnu",
            &format!("-input={f}"),
            "-output=h.o",
        ]);
        let (theirs, ours) = run_both(d, d, &format!("crel-{f}"), &a)?;
        same_outcome(&format!("unbundling {f}"), &theirs, &ours)?;
        same(&format!("{f}: success"), ours.code, 0)?;
    }
    Ok(())
}

/// Sets symbol 0's binding to weak in the 64-bit little-endian object
/// `data`, so that llvm-objcopy moves that entry behind the locals.
fn weak_first_symbol(data: &[u8]) -> Vec<u8> {
    let mut v = data.to_vec();
    let shnum = u16::from_le_bytes([v[0x3c], v[0x3d]]) as usize;
    let symtab = (0..shnum)
        .find(|&i| v[shdr_field(&v, i, 4)] == 2)
        .expect("a symbol table");
    let at = shdr_field(&v, symtab, 24);
    let off = u64::from_le_bytes(v[at..at + 8].try_into().unwrap()) as usize;
    v[off + 4] = 0x20;
    v
}

/// Relocations naming no symbol (index 0), in an object whose entry 0 is
/// not the null symbol and moves when locals go first: the relocation
/// keeps index 0, as llvm-objcopy writes it; plain and compact
/// relocations, bundled and extracted, LLVM's bytes.
fn relocation_naming_no_symbol() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    let asm = "\t.text\n\t.globl f\nf:\tret\n\t.reloc 0, R_X86_64_NONE\n\
               \t.data\nlv:\t.quad lv\nlw:\t.quad lw\n\t.reloc 8, R_X86_64_NONE\n\
               \t.section __CLANG_OFFLOAD_BUNDLE__host-x86_64-unknown-linux-gnu-,\"e\",@progbits\n\t.byte 0\n\
               \t.section __CLANG_OFFLOAD_BUNDLE__openmp-x86_64-unknown-linux-gnu-,\"e\",@progbits\n\t.long 7\n";
    let crel = "-Wa,--crel,--allow-experimental-crel";
    cc(d, "z.s", asm, "zrela.o", &[])?;
    cc(d, "z.s", asm, "zcrel.o", &[crel])?;
    std::fs::write(d.join("dev"), b"DEVICE-IMAGE")?;
    for f in ["zrela.o", "zcrel.o"] {
        let weak = format!("weak-{f}");
        std::fs::write(d.join(&weak), weak_first_symbol(&std::fs::read(d.join(f))?))?;
        let unbundle = args(&[
            "-type=o",
            "-unbundle",
            "-targets=host-x86_64-unknown-linux-gnu,openmp-x86_64-unknown-linux-gnu",
            &format!("-input={weak}"),
            "-output=h.o",
            "-output=dev",
        ]);
        let (theirs, ours) = run_both(d, d, &format!("sym0-unbundle-{f}"), &unbundle)?;
        same_outcome(&format!("unbundling {weak}"), &theirs, &ours)?;
        same(&format!("{weak}: success"), ours.code, 0)?;
        let bundle = args(&[
            "-type=o",
            "-targets=host-x86_64-unknown-linux-gnu,openmp-amdgcn-amd-amdhsa--gfx90a",
            &format!("-input={weak}"),
            "-input=dev",
            "-output=fat.o",
        ]);
        let (theirs, ours) = run_both(d, d, &format!("sym0-bundle-{f}"), &bundle)?;
        same_outcome(&format!("bundling {weak}"), &theirs, &ours)?;
        same(&format!("{weak}: bundled"), ours.code, 0)?;
    }
    Ok(())
}

/// Sections whose `sh_entsize` has high bits set (a hostile or damaged
/// object): llvm-objcopy keeps the low 32 bits; so do we. Bundled and
/// extracted, LLVM's bytes.
fn entsize_high_bits() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    cc(
        d,
        "e.c",
        "int f(void) { return 1; }\nint g;\n",
        "e.o",
        &["-fPIC"],
    )?;
    let mut v = std::fs::read(d.join("e.o"))?;
    let shnum = u16::from_le_bytes([v[0x3c], v[0x3d]]) as usize;
    for i in 1..shnum {
        let ty = u32::from_le_bytes(v[shdr_field(&v, i, 4)..][..4].try_into().unwrap());
        // Symbol and relocation tables must keep their entry size.
        if matches!(ty, 2 | 4 | 9 | 11) {
            continue;
        }
        let at = shdr_field(&v, i, 56);
        v[at..at + 8].copy_from_slice(&(0x0101_0246_0000_0000u64 + i as u64).to_le_bytes());
    }
    std::fs::write(d.join("wide.o"), &v)?;
    std::fs::write(d.join("dev"), b"DEVICE-IMAGE")?;
    let bundle = args(&[
        "-type=o",
        "-targets=host-x86_64-unknown-linux-gnu,openmp-amdgcn-amd-amdhsa--gfx90a",
        "-input=wide.o",
        "-input=dev",
        "-output=fat.o",
    ]);
    let (theirs, ours) = run_both(d, d, "entsize-bundle", &bundle)?;
    same_outcome("bundling wide.o", &theirs, &ours)?;
    same("wide.o: bundled", ours.code, 0)?;
    Ok(())
}

/// A section whose name offset is 0, in an object whose name table does
/// not start with a NUL byte (a hostile or damaged object): LLVM reads the
/// name as empty whatever the table holds at offset 0, so the section is
/// no bundle entry, and its rewritten name is the empty one. Listed,
/// bundled and extracted, LLVM's outcome and bytes.
fn section_name_offset_zero() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    cc(
        d,
        "n.c",
        "int f(void) { return 1; }\nint g = 2;\n",
        "n.o",
        &[],
    )?;
    let mut v = std::fs::read(d.join("n.o"))?;
    let shnum = u16::from_le_bytes([v[0x3c], v[0x3d]]) as usize;
    let shstrndx = u16::from_le_bytes([v[0x3e], v[0x3f]]) as usize;
    let field = |v: &[u8], i, f| {
        let at = shdr_field(v, i, f);
        u64::from_le_bytes(v[at..at + 8].try_into().unwrap())
    };
    let (off, size) = (
        field(&v, shstrndx, 24) as usize,
        field(&v, shstrndx, 32) as usize,
    );
    // A new name table at the end of the file: a bundle entry's name at
    // offset 0, then the old table, every name offset moved past it.
    let prefix = b"__CLANG_OFFLOAD_BUNDLE__openmp-x86_64-unknown-linux-gnu-\0";
    let mut table = prefix.to_vec();
    table.extend_from_slice(&v[off..off + size]);
    let mut renamed = 0;
    for i in 1..shnum {
        let at = shdr_field(&v, i, 0);
        let name = u32::from_le_bytes(v[at..at + 4].try_into().unwrap());
        let text = &v[off + name as usize..];
        let is_data = text.starts_with(b".data\0");
        let new = if is_data {
            0
        } else {
            name + prefix.len() as u32
        };
        renamed += usize::from(is_data);
        v[at..at + 4].copy_from_slice(&new.to_le_bytes());
    }
    same("sections named .data", renamed, 1)?;
    let new_off = v.len() as u64;
    v.extend_from_slice(&table);
    let at = shdr_field(&v, shstrndx, 24);
    v[at..at + 8].copy_from_slice(&new_off.to_le_bytes());
    v[at + 8..at + 16].copy_from_slice(&(table.len() as u64).to_le_bytes());
    std::fs::write(d.join("zero.o"), &v)?;
    std::fs::write(d.join("dev"), b"DEVICE-IMAGE")?;
    let cases: [(&str, Vec<String>); 3] = [
        ("list", args(&["-type=o", "-list", "-input=zero.o"])),
        (
            "bundle",
            args(&[
                "-type=o",
                "-targets=host-x86_64-unknown-linux-gnu,openmp-amdgcn-amd-amdhsa--gfx90a",
                "-input=zero.o",
                "-input=dev",
                "-output=fat.o",
            ]),
        ),
        (
            "unbundle",
            args(&[
                "-type=o",
                "-unbundle",
                "-targets=host-x86_64-unknown-linux-gnu,openmp-x86_64-unknown-linux-gnu",
                "-input=zero.o",
                "-output=h.o",
                "-output=d.bin",
            ]),
        ),
    ];
    for (what, a) in cases {
        let (theirs, ours) = run_both(d, d, &format!("name0-{what}"), &a)?;
        same_outcome(&format!("{what} of zero.o"), &theirs, &ours)?;
    }
    Ok(())
}

/// The trials of this file.
pub(super) fn tests() -> Vec<Trial> {
    let mut t = vec![
        trial!(hip_only_object_is_an_error, TOOLS),
        trial!(host_from_compressed_object_bundle, TOOLS),
        trial!(relocation_into_bundle_section, TOOLS),
        trial!(renumbered_relocations_and_groups, TOOLS),
        trial!(crel_with_removed_symbols, TOOLS),
        trial!(relocation_naming_no_symbol, TOOLS),
        trial!(entsize_high_bits, TOOLS),
        trial!(section_name_offset_zero, TOOLS),
        trial!(large_section_indices, TOOLS),
        trial!(symbols_in_bundle_sections, TOOLS),
    ];
    for (name, corrupt, targets) in hostile_objects() {
        t.push(trial!(
            run_hostile["{name}"],
            TOOLS,
            move || run_hostile(corrupt, targets),
        ));
    }
    t
}
