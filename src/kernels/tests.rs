//! Unit tests of the symbol readers on small images made here.

use super::*;

#[test]
fn ptx_entries_functions_and_variables() {
    let ptx = b"//\n// Generated\n//\n\n.version 8.4\n.target sm_90a, texmode_independent\n\
        .address_size 64\n\n/* a block\n .entry not_me( */\n\
        .extern .func (.param .b32 r) vprintf(.param .b64 a);\n\
        .visible .global .align 4 .b32 counter;\n\
        .global .align 4 .b32 hidden_one;\n\
        .visible .const .align 8 .u64 table[4] = {1, 2, 3, 4};\n\
        .visible .func (.param .b32 func_retval0) _Z3addii(\n.param .b32 a,\n.param .b32 b\n)\n\
        {\n.reg .b32 %r<3>;\nret;\n}\n\
        .func internal_fn()\n{\nret;\n}\n\
        .visible .entry _Z4fillPfi(\n.param .u64 p0,\n.param .u32 p1\n)\n.maxntid 256, 1, 1\n\
        {\n.local .align 4 .b8 __local_depot0[16];\nret;\n}\n\
        .weak .entry _Z4zeroPf(\n.param .u64 p0\n)\n{\nret;\n}\n";
    let l = read(ptx).unwrap().unwrap();
    assert_eq!(l.format, Format::Ptx);
    assert_eq!(l.version.as_deref(), Some("8.4"));
    assert_eq!(l.target.as_deref(), Some("sm_90a"));
    let names: Vec<&str> = l.kernels.iter().map(|k| k.name.as_str()).collect();
    assert_eq!(names, ["_Z4fillPfi", "_Z4zeroPf"]);
    let syms: Vec<(&str, SymbolKind)> = l
        .symbols
        .iter()
        .map(|s| (s.name.as_str(), s.kind))
        .collect();
    assert_eq!(
        syms,
        [
            ("_Z3addii", SymbolKind::Function),
            ("counter", SymbolKind::Variable),
            ("table", SymbolKind::Variable)
        ]
    );
}

#[test]
fn other_bytes_are_no_listing() {
    for b in [
        &b""[..],
        b"BC\xc0\xde",
        b"\x10\xff\x10\xad",
        b"version 8.0",
        b"// only a comment",
    ] {
        assert_eq!(read(b).unwrap(), None);
    }
}

/// A section of a [`cubin`] made here: its name, type, `sh_info`, size
/// (for `SHT_NOBITS`) and contents.
pub(crate) struct Sec {
    name: &'static str,
    kind: u32,
    info: u32,
    size: u64,
    data: Vec<u8>,
}

pub(crate) fn sec(name: &'static str, info: u32, data: Vec<u8>) -> Sec {
    Sec {
        name,
        kind: 1,
        info,
        size: data.len() as u64,
        data,
    }
}

fn nobits(name: &'static str, info: u32, size: u64) -> Sec {
    Sec {
        name,
        kind: 8,
        info,
        size,
        data: Vec::new(),
    }
}

/// An attribute record of format 4 (sized) holding `words`.
fn sval(attr: u8, words: &[u32]) -> Vec<u8> {
    let mut v = vec![4, attr];
    v.extend_from_slice(&u16::try_from(words.len() * 4).unwrap().to_le_bytes());
    for w in words {
        v.extend_from_slice(&w.to_le_bytes());
    }
    v
}

/// A section header of [`cubin`]: type, `sh_info`, `sh_link`,
/// `sh_entsize`, size, contents.
type Header<'a> = (u32, u32, u32, u64, u64, &'a [u8]);

/// A little-endian ELF64 cubin (`EM_CUDA`) of `EI_ABIVERSION` `abi` and
/// `e_flags` `flags`: sections 1 to 3 are `.shstrtab`, `.strtab` and
/// `.symtab`, then `secs` from index 4; `syms` are (name, `st_info`,
/// `st_other`, `st_shndx`, `st_size`), after the null symbol.
pub(crate) fn cubin(
    abi: u8,
    flags: u32,
    secs: &[Sec],
    syms: &[(&str, u8, u8, u16, u64)],
) -> Vec<u8> {
    let mut shstr = vec![0u8];
    let mut names = Vec::new();
    for n in [".shstrtab", ".strtab", ".symtab"]
        .into_iter()
        .chain(secs.iter().map(|s| s.name))
    {
        names.push(u32::try_from(shstr.len()).unwrap());
        shstr.extend_from_slice(n.as_bytes());
        shstr.push(0);
    }
    let mut strtab = vec![0u8];
    let mut symtab = vec![0u8; 24];
    for (name, info, other, shndx, size) in syms {
        let at = u32::try_from(strtab.len()).unwrap();
        strtab.extend_from_slice(name.as_bytes());
        strtab.push(0);
        symtab.extend_from_slice(&at.to_le_bytes());
        symtab.extend_from_slice(&[*info, *other]);
        symtab.extend_from_slice(&shndx.to_le_bytes());
        symtab.extend_from_slice(&0u64.to_le_bytes());
        symtab.extend_from_slice(&size.to_le_bytes());
    }
    let mut out = vec![0u8; 64];
    let mut all: Vec<Header<'_>> = vec![
        (3, 0, 0, 0, shstr.len() as u64, &shstr),
        (3, 0, 0, 0, strtab.len() as u64, &strtab),
        (2, 1, 2, 24, symtab.len() as u64, &symtab),
    ];
    all.extend(
        secs.iter()
            .map(|s| (s.kind, s.info, 0, 0, s.size, &s.data[..])),
    );
    let mut offsets = Vec::new();
    for (_, _, _, _, _, data) in &all {
        out.resize(out.len().next_multiple_of(8), 0);
        offsets.push(out.len() as u64);
        out.extend_from_slice(data);
    }
    out.resize(out.len().next_multiple_of(8), 0);
    let shoff = out.len() as u64;
    out.extend_from_slice(&[0u8; 64]);
    for (i, (kind, info, link, entsize, size, _)) in all.iter().enumerate() {
        out.extend_from_slice(&names[i].to_le_bytes());
        out.extend_from_slice(&kind.to_le_bytes());
        out.extend_from_slice(&0u64.to_le_bytes());
        out.extend_from_slice(&0u64.to_le_bytes());
        out.extend_from_slice(&offsets[i].to_le_bytes());
        out.extend_from_slice(&size.to_le_bytes());
        out.extend_from_slice(&link.to_le_bytes());
        out.extend_from_slice(&info.to_le_bytes());
        out.extend_from_slice(&4u64.to_le_bytes());
        out.extend_from_slice(&entsize.to_le_bytes());
    }
    let h = &mut out[..64];
    h[..8].copy_from_slice(&[0x7f, b'E', b'L', b'F', 2, 1, 1, 0x41]);
    h[8] = abi;
    h[16..18].copy_from_slice(&2u16.to_le_bytes());
    h[18..20].copy_from_slice(&190u16.to_le_bytes());
    h[20..24].copy_from_slice(&1u32.to_le_bytes());
    h[40..48].copy_from_slice(&shoff.to_le_bytes());
    h[48..52].copy_from_slice(&flags.to_le_bytes());
    h[52..54].copy_from_slice(&64u16.to_le_bytes());
    h[58..60].copy_from_slice(&64u16.to_le_bytes());
    h[60..62].copy_from_slice(&(u16::try_from(all.len()).unwrap() + 1).to_le_bytes());
    h[62..64].copy_from_slice(&1u16.to_le_bytes());
    out
}

/// Two kernels and a device function: `k_big` (section 4; 40 registers
/// in `.nv.info`, 96 bytes of stack, 2 KiB of shared memory, 64 bytes of
/// local memory, banks 0 and 3, `.maxntid 128,2,1`), `k_small` (section
/// 5; its registers only in its text section's `sh_info`, `.reqntid 64`)
/// and `helper` (section 6), a `__device__` variable and a hidden one.
fn sample_cubin(abi: u8, flags: u32) -> Vec<u8> {
    let mut global = sval(0x2f, &[1, 40]);
    global.extend(sval(0x12, &[1, 96]));
    global.extend(sval(0x11, &[1, 96]));
    global.extend(sval(0x12, &[2, 0]));
    let mut big = sval(0x37, &[129]);
    big.extend([1, 0x35, 0, 0, 3, 0x1b, 0xff, 0]);
    big.extend(sval(0x05, &[128, 2, 1]));
    let mut small = sval(0x37, &[130]);
    small.extend(sval(0x10, &[64, 1, 1]));
    let secs = [
        sec(".text.k_big", 0x2800_0001, vec![0; 16]),
        sec(".text.k_small", 0x1800_0002, vec![0; 16]),
        sec(".text.helper", 0x0800_0003, vec![0; 16]),
        sec(".nv.info", 0, global),
        sec(".nv.info.k_big", 4, big),
        sec(".nv.info.k_small", 5, small),
        nobits(".nv.shared.k_big", 4, 2048),
        nobits(".nv.local.k_big", 4, 64),
        sec(".nv.constant0.k_big", 4, vec![0; 360]),
        sec(".nv.constant3.k_big", 4, vec![0; 24]),
        sec(".nv.constant0.k_small", 5, vec![0; 352]),
        nobits(".nv.shared.reserved.0", 0, 1024),
        nobits(".nv.global", 0, 8),
    ];
    cubin(
        abi,
        flags,
        &secs,
        &[
            ("k_big", 0x12, 0x10, 4, 16),
            ("k_small", 0x12, 0x10, 5, 16),
            ("helper", 0x12, 0, 6, 16),
            ("counter", 0x11, 0, 16, 8),
            ("hidden", 0x11, 2, 16, 4),
        ],
    )
}

#[test]
fn cubin_kernels_resources_and_target() {
    let l = read(&sample_cubin(8, 0x0600_5a04)).unwrap().unwrap();
    assert_eq!(l.format, Format::Cubin);
    assert_eq!(l.target.as_deref(), Some("sm_90"));
    assert_eq!(l.version.as_deref(), Some("13.0"));
    let big = l.kernel("k_big").unwrap();
    assert_eq!(
        big.resources.figures(),
        [
            ("reg", 40),
            ("stack", 96),
            ("shared", 2048),
            ("local", 64),
            ("constant[0]", 360),
            ("constant[3]", 24),
            ("texture", 0),
            ("surface", 0),
            ("sampler", 0),
            ("max_threads", 256),
        ]
        .map(|(n, v)| (n.to_string(), v))
    );
    let small = l.kernel("k_small").unwrap();
    assert_eq!(
        small.resources.figures(),
        [
            ("reg", 24),
            ("stack", 0),
            ("shared", 0),
            ("local", 0),
            ("constant[0]", 352),
            ("texture", 0),
            ("surface", 0),
            ("sampler", 0),
            ("max_threads", 64),
        ]
        .map(|(n, v)| (n.to_string(), v))
    );
    let syms: Vec<(&str, SymbolKind, u64)> = l
        .symbols
        .iter()
        .map(|s| (s.name.as_str(), s.kind, s.size))
        .collect();
    assert_eq!(
        syms,
        [
            ("counter", SymbolKind::Variable, 8),
            ("helper", SymbolKind::Function, 16)
        ]
    );
    // The older ABI keeps the SM in the low byte.
    let old = read(&sample_cubin(7, 0x0046_0546)).unwrap().unwrap();
    assert_eq!(old.target.as_deref(), Some("sm_70"));
    assert_eq!(old.kernels, l.kernels);
}

/// `bytes` with the `n`th occurrence of `what` replaced by `with`.
fn patched(bytes: &[u8], what: &[u8], n: usize, with: &[u8]) -> Vec<u8> {
    let at = bytes
        .windows(what.len())
        .enumerate()
        .filter(|(_, w)| *w == what)
        .nth(n)
        .map(|(i, _)| i)
        .unwrap();
    let mut v = bytes.to_vec();
    v[at..at + with.len()].copy_from_slice(with);
    v
}

#[test]
fn cubin_unknown_stack_textures_and_arch_specific_target() {
    let c = sample_cubin(8, 0x0600_6402);
    // Stack 0xffffffff is unknown.
    let c = patched(
        &c,
        &[1, 0, 0, 0, 96, 0, 0, 0],
        0,
        &[1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff],
    );
    // The hidden variable becomes a texture.
    let c = patched(&c, &[0x11, 2, 16, 0], 0, &[0x1a, 0, 0, 0]);
    let l = read(&c).unwrap().unwrap();
    assert_eq!(l.target.as_deref(), Some("sm_100"));
    let r = &l.kernel("k_big").unwrap().resources;
    assert_eq!((r.stack, r.registers), (None, Some(40)));
    assert_eq!((r.texture, r.surface, r.sampler), (None, None, None));
    // A `.nv.compat` record 9 of value 1 marks sm_100a.
    let mut secs = vec![sec(".nv.compat", 0, vec![2, 2, 1, 0, 2, 9, 1, 0])];
    secs.push(sec(".text.k", 0, vec![0; 16]));
    let c = cubin(8, 0x0600_6402, &secs, &[("k", 0x12, 0x10, 5, 16)]);
    let l = read(&c).unwrap().unwrap();
    assert_eq!(l.target.as_deref(), Some("sm_100a"));
    assert_eq!(l.kernels[0].resources.registers, Some(0));
    // Without the record, `e_flags` bit 0x8 (ABI 8), or 0x800 (ABI 7).
    let target = |abi, flags| read(&sample_cubin(abi, flags)).unwrap().unwrap().target;
    assert_eq!(target(8, 0x0500_6402 | 0x8).as_deref(), Some("sm_100a"));
    assert_eq!(target(7, 0x005a_0d5a).as_deref(), Some("sm_90a"));
    assert_eq!(target(7, 0x005a_055a).as_deref(), Some("sm_90"));
}

#[test]
fn cubin_usage_as_cuobjdump_res_usage() {
    let c = sample_cubin(8, 0x0600_5a04);
    let u = usage(&c, &Allowance::new(u64::MAX)).unwrap();
    assert_eq!(
        (u.global, u.banks.len(), u.textures),
        (8, 0, Textures::Zero)
    );
    /// Name, registers, stack, shared, local, banks.
    type Row<'a> = (&'a str, u32, u32, u64, u64, Vec<(u32, u64)>);
    let rows: Vec<Row<'_>> = u
        .functions
        .iter()
        .map(|f| {
            let banks = f.banks.iter().map(|b| (b.bank, b.size)).collect();
            (
                f.name.as_str(),
                f.registers,
                f.stack,
                f.shared,
                f.local,
                banks,
            )
        })
        .collect();
    // Section order; a kernel's registers from `.nv.info`, the device
    // function's from `sh_info` (the helper has no record).
    assert_eq!(
        rows,
        [
            ("k_big", 40, 96, 2048, 64, vec![(0, 360), (3, 24)]),
            ("k_small", 24, 0, 0, 0, vec![(0, 352)]),
            ("helper", 8, 0, 0, 0, vec![]),
        ]
    );
    // A defined texture in a linked cubin: not read; an undefined one:
    // cuobjdump's own failure; in a relocatable cubin: counted as 0.
    let texture = patched(&c, &[0x11, 2, 16, 0], 0, &[0x1a, 0, 16, 0]);
    let textures = |bytes: &[u8]| usage(bytes, &Allowance::new(u64::MAX)).unwrap().textures;
    assert_eq!(textures(&texture), Textures::Unread);
    let undefined = patched(&c, &[0x11, 2, 16, 0], 0, &[0x1a, 0, 0, 0]);
    assert_eq!(textures(&undefined), Textures::Unresolved);
    let mut relocatable = undefined.clone();
    relocatable[16] = 1;
    assert_eq!(textures(&relocatable), Textures::Zero);
    // A module bank, and `.nv.global.init` counted in `GLOBAL`.
    let secs = [
        sec(".nv.constant3", 0, vec![0; 12]),
        sec(".nv.global.init", 0, vec![0; 16]),
        sec(".nv.constant2.k", 7, vec![0; 40]),
        sec(".text.k", 0x0c00_0000, vec![0; 16]),
        sec(".nv.constant0.k", 7, vec![0; 8]),
    ];
    let c = cubin(8, 0x0600_5a04, &secs, &[("k", 0x12, 0x10, 7, 16)]);
    let u = usage(&c, &Allowance::new(u64::MAX)).unwrap();
    assert_eq!((u.global, u.banks[0].bank, u.banks[0].size), (16, 3, 12));
    let f = &u.functions[0];
    let banks: Vec<u32> = f.banks.iter().map(|b| b.bank).collect();
    assert_eq!((f.registers, banks), (12, vec![2, 0]));
}

#[test]
fn damaged_cubin_records_are_errors() {
    let c = sample_cubin(8, 0x0600_5a04);
    let bad = [
        // An unknown record format.
        patched(&c, &[4, 0x2f, 8, 0], 0, &[9, 0x2f, 8, 0]),
        // A sized record longer than its section.
        patched(&c, &[4, 0x2f, 8, 0], 0, &[4, 0x2f, 0xff, 0]),
        // A register count of the wrong size.
        patched(&c, &[4, 0x2f, 8, 0], 0, &[4, 0x2f, 4, 0]),
        // One naming a symbol past the table.
        patched(&c, &[0x2f, 8, 0, 1, 0, 0, 0], 0, &[0x2f, 8, 0, 99, 0, 0, 0]),
        // `.maxntid` dimensions that overflow.
        patched(&c, &[128, 0, 0, 0, 2, 0, 0, 0, 1, 0, 0, 0], 0, &[0xff; 12]),
    ];
    for (i, b) in bad.iter().enumerate() {
        assert!(read(b).is_err(), "case {i}: {:?}", read(b));
    }
}

#[test]
fn cubin_mutations_never_panic() {
    let c = sample_cubin(8, 0x0600_5a04);
    // The section headers come last: any cut loses some.
    for n in 0..c.len() {
        assert!(!matches!(read(&c[..n]), Ok(Some(_))), "cut at {n}");
    }
    for i in 0..c.len() {
        for v in [0, 1, 4, 0x7f, 0xff, c[i] ^ 0x10] {
            let mut m = c.clone();
            m[i] = v;
            let _ = read(&m);
        }
    }
}

#[test]
fn ptx_bodies_are_passed_over_with_their_comments_and_blocks() {
    let ptx = b".version 8.0\n.target sm_80\n.address_size 64\n\
        .visible .entry first(.param .u64 p)\n{\n.reg .b32 %r<2>;\n// } not the end\n\
        /* { nor a start */\n{\n.reg .pred %p;\n{ ret; }\n}\n.entry not_me;\nret;\n}\n\
        .visible .global .align 4 .b32 t[2] = {1, 2};\n\
        .visible .entry second()\n{\nret;\n}\n.visible .entry cut()\n{\n{\nret;\n";
    let l = read(ptx).unwrap().unwrap();
    let names: Vec<&str> = l.kernels.iter().map(|k| k.name.as_str()).collect();
    assert_eq!(names, ["cut", "first", "second"]);
    assert_eq!(l.symbols.len(), 1);
    assert_eq!(l.symbols[0].name, "t");
}

#[test]
fn ptx_parameter_lists_and_slashes() {
    // Parameter lists are passed over whole (parentheses and comments
    // inside them counted); a `/` inside a word does not end it unless a
    // comment starts there; a lone `/` at the very end is a word.
    let ptx = b".version 8.0\n.target sm_80\n\
        .visible .entry a(.param .u64 p /* ) not the end */, // )\n.param .align 8 .b8 q[(16)]\n)\n{\nret;\n}\n\
        .visible .func (.param .b32 r) f/g(.param .b32 x)\n{\nret;\n}\n\
        .visible .global .b32 v/*c*/;\n\
        .visible .entry b()\n{\nret;\n}\n/";
    let l = read(ptx).unwrap().unwrap();
    let names: Vec<&str> = l.kernels.iter().map(|k| k.name.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
    let syms: Vec<&str> = l.symbols.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(syms, ["f/g", "v"]);
    // Cut anywhere, it still reads (a cut inside a list or a comment ends
    // the text there).
    for n in 0..ptx.len() {
        let _ = read(&ptx[..n]);
    }
}

/// The symbol table as `cuobjdump -symbols` lists it: table order, the
/// section symbols left out, CUDA's marks and undefined symbols kept.
#[test]
fn cubin_symbol_table_rows() {
    let secs = [sec(".text.k", 0, vec![0; 16])];
    let syms = [
        (".text.k", 0x03, 0, 4, 0), // STT_SECTION: left out
        ("k", 0x12, 0x10, 4, 16),   // global function, an entry
        ("ext", 0x21, 0x00, 0, 0),  // weak object, undefined
        ("$buf", 0x0d, 0x41, 4, 8), // local CUDA object, internal
    ];
    let rows = symbol_table(&cubin(8, 0x5000, &secs, &syms)).unwrap();
    let got: Vec<(&str, u8, u8, u8, bool)> = rows
        .iter()
        .map(|r| (r.name.as_str(), r.kind, r.bind, r.other, r.defined))
        .collect();
    assert_eq!(
        got,
        [
            ("k", 2, 1, 0x10, true),
            ("ext", 1, 2, 0, false),
            ("$buf", 13, 0, 0x41, true),
        ]
    );
    assert!(symbol_table(b"\x7fELF\x02\x01").is_err());
}
