//! The ELF structures the rewrite encodes, across classes, byte orders and
//! machines the host-shape tests do not reach: relocations rewritten with
//! new symbol indices (MIPS64 little-endian's own `r_info` layout, in
//! `SHT_RELA` and `SHT_REL` sections; 32- and 64-bit big-endian; 32-bit
//! `SHT_RELA`), header fields copied from the input (`e_version`, OS ABI,
//! ABI version, `e_entry`), and a 32-bit big-endian object with extended
//! section indices. LLVM's bytes each time.

use super::*;

/// Host assembly whose bundle sections define symbols, so that extracting
/// the host renumbers the symbols after them: the relocations against
/// `g` and `zext` are written again. `text` is the code of `f`.
fn renumbered_asm(text: &str) -> String {
    format!(
        "\t.text\n\t.globl f\nf:\t{text}\n\
         \t.section __CLANG_OFFLOAD_BUNDLE__host-x86_64-unknown-linux-gnu-,\"e\",%progbits\n\t.byte 0\n\
         \t.section __CLANG_OFFLOAD_BUNDLE__openmp-x86_64-unknown-linux-gnu-,\"e\",%progbits\n\
         \t.globl inb\ninb:\t.long 7\n\t.globl inb2\ninb2:\t.long 8\n\
         \t.section .text.g,\"axG\",%progbits,g,comdat\n\t.weak g\ng:\tnop\n\
         \t.section .data.x,\"aw\",%progbits\n\
         \t.long f\n\t.long g + 12\n\t.long zext\n"
    )
}

/// The little-endian ELF64 object `data` with its `SHT_RELA` sections made
/// `SHT_REL` ones (the entries without their addends): MIPS64 objects with
/// `SHT_REL` sections, which no assembler writes.
fn rela_to_rel(data: &[u8]) -> Vec<u8> {
    let mut v = data.to_vec();
    let word = |v: &[u8], at: usize| u64::from_le_bytes(v[at..at + 8].try_into().unwrap());
    let shoff = word(&v, 0x28) as usize;
    let shnum = u16::from_le_bytes([v[0x3c], v[0x3d]]) as usize;
    for i in 1..shnum {
        let h = shoff + i * 64;
        if v[h + 4..h + 8] != 4u32.to_le_bytes() {
            continue;
        }
        let (off, count) = (word(&v, h + 24) as usize, word(&v, h + 32) as usize / 24);
        for k in 0..count {
            v.copy_within(off + k * 24..off + k * 24 + 16, off + k * 16);
        }
        v[h + 4..h + 8].copy_from_slice(&9u32.to_le_bytes());
        v[h + 32..h + 40].copy_from_slice(&(count as u64 * 16).to_le_bytes());
        v[h + 56..h + 64].copy_from_slice(&16u64.to_le_bytes());
    }
    v
}

/// Extracting the host from objects of other machines whose bundle
/// sections defined symbols: the relocations renumbered, LLVM's bytes.
fn renumbered_relocations_across_targets() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    // MIPS64: composite relocation types (three type bytes) in .text.
    let mips = "lui $gp, %hi(%neg(%gp_rel(f)))\n\tdaddiu $gp, $gp, %lo(%neg(%gp_rel(f)))";
    let targets = [
        ("mips64el", "mips64el-linux-gnuabi64", mips),
        ("mips", "mips-linux-gnu", "nop"),
        ("ppc", "powerpc-linux-gnu", "nop"),
        ("ppc64", "powerpc64-linux-gnu", "nop"),
        ("rv32", "riscv32-linux-gnu", "nop"),
    ];
    let mut objects = Vec::new();
    for (name, triple, text) in targets {
        let out = format!("{name}.o");
        cc(
            d,
            &format!("{name}.s"),
            &renumbered_asm(text),
            &out,
            &[&format!("--target={triple}")],
        )?;
        objects.push(out);
    }
    std::fs::write(
        d.join("mips64el-rel.o"),
        rela_to_rel(&std::fs::read(d.join("mips64el.o"))?),
    )?;
    objects.push("mips64el-rel.o".into());
    for f in &objects {
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

/// The object `data` with header fields llvm-objcopy copies set to values
/// no compiler writes: `e_version` 0x1234, OS ABI FreeBSD, ABI version 2
/// and `e_entry` 0x4000, in the file's class and byte order.
fn odd_header(data: &[u8]) -> Vec<u8> {
    let mut v = data.to_vec();
    let (is_64, big) = (v[4] == 2, v[5] == 2);
    let put = |v: &mut Vec<u8>, at: usize, x: u64, len: usize| {
        let b = if big {
            x.to_be_bytes()[8 - len..].to_vec()
        } else {
            x.to_le_bytes()[..len].to_vec()
        };
        v[at..at + len].copy_from_slice(&b);
    };
    v[7] = 9;
    v[8] = 2;
    put(&mut v, 20, 0x1234, 4);
    put(&mut v, 24, 0x4000, if is_64 { 8 } else { 4 });
    v
}

/// Bundling into and extracting the host from objects of both classes and
/// byte orders whose headers hold [`odd_header`]'s values: kept as
/// llvm-objcopy keeps them, LLVM's bytes.
fn header_fields_kept() -> Result<(), Failed> {
    let work = tempdir();
    let w = work.path();
    let src = w.join("in");
    copy_dir(inputs()?, &src)?;
    cc(
        &src,
        "k.c",
        KERNEL_C,
        "kppc.o",
        &["--target=powerpc-linux-gnu"],
    )?;
    for f in ["main.o", "kbe.o", "k32.o", "kppc.o"] {
        let odd = format!("odd-{f}");
        std::fs::write(src.join(&odd), odd_header(&std::fs::read(src.join(f))?))?;
        let bundle = args(&[
            "-type=o",
            HD,
            &format!("-input={odd}"),
            "-input=gfx906.o",
            "-output=fat.o",
        ]);
        let (theirs, ours) = run_both(&src, w, &format!("bundle-{f}"), &bundle)?;
        same_outcome(&format!("bundling {odd}"), &theirs, &ours)?;
        same(&format!("{odd}: bundled"), ours.code, 0)?;
        let unbundle = args(&[
            "-type=o",
            "-unbundle",
            HD,
            "-input=fat.o",
            "-output=h.o",
            "-output=dev",
        ]);
        let (theirs, ours) = run_both(&theirs.dir, w, &format!("unbundle-{f}"), &unbundle)?;
        same_outcome(&format!("extracting from {odd}'s bundle"), &theirs, &ours)?;
        same(&format!("{odd}: extracted"), ours.code, 0)?;
    }
    Ok(())
}

/// A 32-bit big-endian object with more than 65279 sections: section 0
/// holds the count and the name table's index, symbols their indices in
/// `.symtab_shndx`. Bundled, and the host extracted from LLVM's bundle.
fn large_section_indices_ppc32() -> Result<(), Failed> {
    let dir = tempdir();
    let d = dir.path();
    let asm: String = (0..65_300)
        .map(|i| format!("\t.section .t{i},\"ax\",%progbits\n\t.globl f{i}\nf{i}:\tnop\n"))
        .collect();
    cc(d, "many.s", &asm, "many.o", &["--target=powerpc-linux-gnu"])?;
    std::fs::write(d.join("dev"), b"DEVICE")?;
    let targets = "-targets=host-x86_64-unknown-linux-gnu,openmp-x86_64-unknown-linux-gnu";
    let bundle = args(&[
        "-type=o",
        targets,
        "-input=many.o",
        "-input=dev",
        "-output=fat.o",
    ]);
    let (theirs, ours) = run_both(d, d, "large32", &bundle)?;
    same_outcome("bundling many.o", &theirs, &ours)?;
    same("many.o: bundled", ours.code, 0)?;
    let unbundle = args(&[
        "-type=o",
        "-unbundle",
        targets,
        "-input=fat.o",
        "-output=h.o",
        "-output=d",
    ]);
    let (theirs, ours) = run_both(&theirs.dir, d, "large32-fat", &unbundle)?;
    same_outcome("extracting from many.o's bundle", &theirs, &ours)?;
    same("many.o: extracted", ours.code, 0)
}

/// The trials of this file.
pub(super) fn tests() -> Vec<Trial> {
    vec![
        trial!(renumbered_relocations_across_targets, TOOLS),
        trial!(header_fields_kept, TOOLS),
        trial!(large_section_indices_ppc32, TOOLS),
    ]
}
