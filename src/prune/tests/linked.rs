//! Linked files whose layout a rewrite would damage (issue #41): a small
//! x86-64 shared library built here ([`library`]: the ELF header, one load
//! segment, `.hip_fatbin` holding HIP bundles of gfx90a and gfx942 code
//! objects, `.shstrtab`, the section header table), then made hostile
//! with `object`'s ELF structures: a header table, a segment or another
//! section moved into a container's bytes, the fat-binary section listed
//! twice or overlapped by another. Pruned to gfx90a, each is refused whole,
//! shrunk or not, naming what lies where; the library as it was is pruned
//! and shrunk, so each refusal is the layout's doing.

use object::elf::{self, FileHeader64, ProgramHeader64, SectionHeader64};
use object::pod::{bytes_of, bytes_of_slice, from_bytes_mut};
use object::read::elf::FileHeader as _;
use object::{LittleEndian as LE, U16, U32, U64};

use super::{Ptx, bundle, keep};
use crate::error::Result;
use crate::prune::{FilePruning, Options, prune_file};
use crate::scan;

/// Where `.hip_fatbin` starts, in the file and in memory.
pub(super) const AT: usize = 0x1000;

/// An offset of a test file, as an index.
fn us(x: u64) -> usize {
    usize::try_from(x).unwrap()
}

/// A HIP bundle (entries 4096-aligned, as clang writes them): a host
/// entry, then gfx90a and gfx942 code objects of `len` bytes each.
pub(super) fn hip_bundle(len: usize) -> Vec<u8> {
    let object = |fill: u8| {
        let mut v = super::code_object(fill);
        v.resize(len, fill);
        v
    };
    let (a, b) = (object(1), object(2));
    bundle(
        &[
            ("host-x86_64-unknown-linux-gnu-", b""),
            ("hipv4-amdgcn-amd-amdhsa--gfx90a", &a),
            ("hipv4-amdgcn-amd-amdhsa--gfx942", &b),
        ],
        4096,
    )
}

/// A section header.
fn section(
    name: u32,
    sh_type: elf::SectionType,
    flags: elf::SectionFlags,
    offset: usize,
    size: usize,
    align: u64,
) -> SectionHeader64<LE> {
    let addr = if flags.contains(elf::SHF_ALLOC) {
        offset as u64
    } else {
        0
    };
    SectionHeader64 {
        sh_name: U32::new(LE, name),
        sh_type: U32::new(LE, sh_type),
        sh_flags: U64::new(LE, flags),
        sh_addr: U64::new(LE, addr),
        sh_offset: U64::new(LE, offset as u64),
        sh_size: U64::new(LE, size as u64),
        sh_link: U32::new(LE, 0),
        sh_info: U32::new(LE, 0),
        sh_addralign: U64::new(LE, align),
        sh_entsize: U64::new(LE, 0),
    }
}

/// A linked x86-64 shared library holding `fatbin`: the ELF header, its
/// one program header (a read-only load segment from the file's start to
/// `fatbin`'s end, at address 0), `fatbin` in `.hip_fatbin` at 0x1000,
/// then `.shstrtab` and the section header table.
pub(super) fn library(fatbin: &[u8]) -> Vec<u8> {
    let names = b"\0.hip_fatbin\0.shstrtab\0";
    let mut f = vec![0u8; AT];
    f.extend_from_slice(fatbin);
    let end = f.len();
    f.extend_from_slice(names);
    f.resize(f.len().next_multiple_of(8), 0);
    let shoff = f.len();
    let none = elf::SectionFlags(0);
    let sections = [
        section(0, elf::SHT_NULL, none, 0, 0, 0),
        section(1, elf::SHT_PROGBITS, elf::SHF_ALLOC, AT, fatbin.len(), 4096),
        section(13, elf::SHT_STRTAB, none, end, names.len(), 1),
    ];
    f.extend_from_slice(bytes_of_slice(&sections));
    let header = FileHeader64::<LE> {
        e_ident: elf::Ident {
            magic: elf::ELFMAG,
            class: elf::ELFCLASS64,
            data: elf::ELFDATA2LSB,
            version: elf::EV_CURRENT,
            os_abi: elf::ELFOSABI_NONE,
            abi_version: 0,
            padding: [0; 7],
        },
        e_type: U16::new(LE, elf::ET_DYN),
        e_machine: U16::new(LE, elf::EM_X86_64),
        e_version: U32::new(LE, 1),
        e_entry: U64::new(LE, 0),
        e_phoff: U64::new(LE, 64),
        e_shoff: U64::new(LE, shoff as u64),
        e_flags: U32::new(LE, elf::FileFlags(0)),
        e_ehsize: U16::new(LE, 64),
        e_phentsize: U16::new(LE, 56),
        e_phnum: U16::new(LE, 1),
        e_shentsize: U16::new(LE, 64),
        e_shnum: U16::new(LE, 3),
        e_shstrndx: U16::new(LE, elf::SymbolSection(2)),
    };
    let load = ProgramHeader64::<LE> {
        p_type: U32::new(LE, elf::PT_LOAD),
        p_flags: U32::new(LE, elf::PF_R),
        p_offset: U64::new(LE, 0),
        p_vaddr: U64::new(LE, 0),
        p_paddr: U64::new(LE, 0),
        p_filesz: U64::new(LE, end as u64),
        p_memsz: U64::new(LE, end as u64),
        p_align: U64::new(LE, 0x1000),
    };
    f[..64].copy_from_slice(bytes_of(&header));
    f[64..120].copy_from_slice(bytes_of(&load));
    f
}

/// `f`'s ELF header, to change.
fn header(f: &mut [u8]) -> &mut FileHeader64<LE> {
    from_bytes_mut(f).unwrap().0
}

/// `f`'s section headers.
fn sections(f: &[u8]) -> Vec<SectionHeader64<LE>> {
    let h = FileHeader64::<LE>::parse(f).unwrap();
    h.section_headers(LE, f).unwrap().to_vec()
}

/// `f`'s section header table, as bytes.
fn section_table(f: &[u8]) -> Vec<u8> {
    bytes_of_slice(&sections(f)).to_vec()
}

/// `f` with `table` (header table bytes) copied to `at`.
fn put(f: &[u8], at: usize, table: &[u8]) -> Vec<u8> {
    let mut g = f.to_vec();
    g[at..at + table.len()].copy_from_slice(table);
    g
}

/// `f` with its section header table copied to `at`, `e_shoff` there.
fn section_table_at(f: &[u8], at: usize) -> Vec<u8> {
    let mut g = put(f, at, bytes_of_slice(&sections(f)));
    header(&mut g).e_shoff.set(LE, at as u64);
    g
}

/// `f` with its section header table and `extra` (one more header)
/// appended, `e_shoff` and `e_shnum` saying so.
fn with_section(f: &[u8], extra: SectionHeader64<LE>) -> Vec<u8> {
    let mut table = sections(f);
    table.push(extra);
    let mut g = f.to_vec();
    g.resize(g.len().next_multiple_of(8), 0);
    let at = g.len() as u64;
    g.extend_from_slice(bytes_of_slice(&table));
    let h = header(&mut g);
    h.e_shoff.set(LE, at);
    h.e_shnum.set(LE, u16::try_from(table.len()).unwrap());
    g
}

/// The file offset of `f`'s gfx942 code object and its size.
fn gfx942(f: &[u8]) -> (usize, usize) {
    let r = scan::scan(f, &scan::Options::default());
    let i = r.images.iter().find(|i| i.arch == "gfx942").unwrap();
    (us(i.offset.unwrap()), us(i.size))
}

/// `f` pruned to gfx90a, shrunk (unless `no_shrink`) or not.
pub(super) fn prune(f: &[u8], no_shrink: bool) -> Result<FilePruning> {
    let opts = Options {
        no_shrink,
        ..Options::default()
    };
    prune_file(f, &keep(&["gfx90a"], Ptx::Newest), &opts)
}

/// `f`, pruned either way, is refused with one message that says `says`.
fn refused(f: &[u8], says: &[&str]) {
    for no_shrink in [false, true] {
        let why = match prune(f, no_shrink) {
            Ok(p) => panic!(
                "pruned (no_shrink {no_shrink}; freed {}, not shrunk: {:?})",
                p.freed, p.not_shrunk
            ),
            Err(e) => e.to_string(),
        };
        assert!(!why.contains('\n'), "{why}");
        for s in says {
            assert!(why.contains(s), "no_shrink {no_shrink}: {why}");
        }
    }
}

/// The library as built is pruned and shrunk, and pruned in place: what
/// the hostile layouts below are refused against.
#[test]
fn the_library_as_built_shrinks_and_prunes_in_place() {
    let f = library(&hip_bundle(3 * 4096));
    let p = prune(&f, false).unwrap();
    assert_eq!(p.not_shrunk, None);
    let out = p.output.unwrap().to_vec(&[&f]).unwrap();
    assert!(
        out.len() + 3 * 4096 <= f.len(),
        "{} of {}",
        out.len(),
        f.len()
    );
    let shrunk = prune(&out, false).unwrap();
    assert!(shrunk.output.is_none(), "the shrunk file prunes again");
    let p = prune(&f, true).unwrap();
    let out = p.output.unwrap().to_vec(&[&f]).unwrap();
    assert_eq!(out.len(), f.len());
    assert!(section_table(&out) == section_table(&f));
}

/// The section header table in the bytes that pruning frees (the dropped
/// gfx942 code object) would be zeroed in place, or cut out: refused,
/// naming the table and where it lies. Elsewhere in the file it is fine.
#[test]
fn a_section_header_table_in_freed_bytes_is_refused() {
    let f = library(&hip_bundle(3 * 4096));
    let (at, size) = gfx942(&f);
    let inside = (at + size / 2).next_multiple_of(8);
    let g = section_table_at(&f, inside);
    let table = format!(
        "the section header table ({inside:#x}..{:#x})",
        inside + 3 * 64
    );
    refused(&g, &[&table, "would free", "bundle at 0x1000"]);
    // The same table appended to the file is no problem.
    let mut g = f.clone();
    g.resize(f.len() + 3 * 64, 0);
    let g = section_table_at(&g, f.len());
    assert!(prune(&g, false).unwrap().not_shrunk.is_none());
    assert!(prune(&g, true).is_ok());
}

/// The program header table, a segment or a section other than the
/// fat-binary one in a container that pruning rewrites: refused, each
/// named, shrunk or not.
#[test]
fn headers_segments_and_sections_in_a_rewritten_container_are_refused() {
    let f = library(&hip_bundle(3 * 4096));
    let (at, size) = gfx942(&f);
    let inside = (at + size / 2).next_multiple_of(8);

    // The program header table copied into the gfx942 code object.
    let mut g = put(&f, inside, &f[64..120]);
    header(&mut g).e_phoff.set(LE, inside as u64);
    refused(&g, &["the program header table", "would free"]);

    // A second segment (a note) whose bytes lie there.
    let note = ProgramHeader64::<LE> {
        p_type: U32::new(LE, elf::PT_NOTE),
        p_flags: U32::new(LE, elf::PF_R),
        p_offset: U64::new(LE, inside as u64),
        p_vaddr: U64::new(LE, inside as u64),
        p_paddr: U64::new(LE, inside as u64),
        p_filesz: U64::new(LE, 16),
        p_memsz: U64::new(LE, 16),
        p_align: U64::new(LE, 4),
    };
    let mut g = put(&f, 120, bytes_of(&note));
    header(&mut g).e_phnum.set(LE, 2);
    refused(&g, &["segment 1 PT_NOTE", "would free"]);

    // `.shstrtab` moved there.
    let mut g = f.clone();
    let strings = sections(&f)[2];
    let (from, len) = (us(strings.sh_offset.get(LE)), us(strings.sh_size.get(LE)));
    g.copy_within(from..from + len, inside);
    let shoff = us(header(&mut g).e_shoff.get(LE));
    let at = shoff + 2 * size_of::<SectionHeader64<LE>>();
    let (strings, _) = from_bytes_mut::<SectionHeader64<LE>>(&mut g[at..]).unwrap();
    strings.sh_offset.set(LE, inside as u64);
    refused(&g, &["section 2 `.shstrtab`", "would free"]);
}

/// A library of two bundles, the first losing its gfx942 code object
/// when pruned to gfx90a, the second holding gfx90a only; with `inside`,
/// its section header table copied into the second bundle's code object
/// (which shrinking would move down), at the offset it returns.
pub(super) fn two_bundles(inside: bool) -> (Vec<u8>, usize) {
    let first = hip_bundle(3 * 4096);
    let mut both = first.clone();
    both.resize(first.len().next_multiple_of(4096), 0);
    let second_at = AT + both.len();
    // The second bundle holds gfx90a only: it stays whole.
    let mut kept = super::code_object(3);
    kept.resize(2 * 4096, 3);
    both.extend_from_slice(&bundle(
        &[
            ("host-x86_64-unknown-linux-gnu-", b""),
            ("hipv4-amdgcn-amd-amdhsa--gfx90a", &kept),
        ],
        4096,
    ));
    let f = library(&both);
    if !inside {
        return (f, 0);
    }
    let at = second_at + 4096 + 1024;
    (section_table_at(&f, at), at)
}

/// The section header table in a bundle that stays whole but that
/// shrinking would move down (after one that shrinks): the file is not
/// shrunk, saying why, and is pruned in place, the table where it was.
#[test]
fn a_section_header_table_in_a_container_shrinking_moves_is_not_shrunk() {
    let (f, _) = two_bundles(false);
    let p = prune(&f, false).unwrap();
    assert_eq!(p.not_shrunk, None, "the library as built shrinks");

    let (g, inside) = two_bundles(true);
    let p = prune(&g, false).unwrap();
    let why = p.not_shrunk.expect("not shrunk");
    assert!(
        why.contains(&format!("the section header table ({inside:#x}..")),
        "{why}"
    );
    let out = p.output.unwrap().to_vec(&[&g]).unwrap();
    assert_eq!(out.len(), g.len());
    assert!(section_table(&out) == section_table(&g));
}

/// A program header table after the pages that shrinking removes moves
/// down with what follows them, and `e_phoff` with it: it still describes
/// the load segment, which now ends where the packed section does.
#[test]
fn a_program_header_table_after_the_hole_moves_down_with_it() {
    let f = library(&hip_bundle(3 * 4096));
    let at = f.len();
    let mut g = f.clone();
    g.extend_from_slice(&f[64..120]);
    header(&mut g).e_phoff.set(LE, at as u64);
    let p = prune(&g, false).unwrap();
    assert_eq!(p.not_shrunk, None);
    let out = p.output.unwrap().to_vec(&[&g]).unwrap();
    let removed = g.len() - out.len();
    assert!(removed >= 3 * 4096, "{removed}");
    let h = FileHeader64::<LE>::parse(&*out).unwrap();
    assert_eq!(h.e_phoff(LE), (at - removed) as u64);
    let load = h.program_headers(LE, &*out).unwrap()[0];
    let fatbin = sections(&out)[1];
    assert_eq!(
        load.p_filesz.get(LE),
        fatbin.sh_offset.get(LE) + fatbin.sh_size.get(LE)
    );
}

/// A fat-binary section listed twice (its header appended again) would
/// have its containers rewritten twice, the freed bytes counted twice:
/// refused, small file or large, shrunk or not. So is a section that
/// overlaps it; and, in any file, a container found twice.
#[test]
fn a_section_listed_twice_or_overlapped_is_refused() {
    for len in [300, 3 * 4096, 1 << 20] {
        let f = library(&hip_bundle(len));
        assert!(prune(&f, true).unwrap().output.is_some());
        let fatbin = sections(&f)[1];
        let g = with_section(&f, fatbin);
        refused(
            &g,
            &[
                "the bundle at 0x1000 is found twice",
                "two section headers `.hip_fatbin` (one section listed twice)",
            ],
        );
        // As a bare file the same container is still found twice.
        let r = scan::scan(&g, &scan::Options::default());
        let v = keep(&["gfx90a"], Ptx::Newest).decide(&r);
        let why = super::super::plan::plan(
            &g,
            &r,
            &v,
            super::super::plan::Host::Raw,
            &Options::default(),
        )
        .unwrap_err()
        .to_string();
        assert!(why.contains("the bundle at 0x1000 is found twice"), "{why}");

        // A section (nameless, so not scanned) that holds it too: the same
        // bytes, or more.
        let mut same = fatbin;
        same.sh_name.set(LE, 0);
        refused(
            &with_section(&f, same),
            &[
                "section 1 `.hip_fatbin` (0x1000..",
                "listed twice in the section header table, again as section 3 ``",
            ],
        );
        let mut wider = fatbin;
        wider.sh_name.set(LE, 0);
        wider.sh_offset.set(LE, AT as u64 - 8);
        wider.sh_size.set(LE, fatbin.sh_size.get(LE) + 8);
        refused(&with_section(&f, wider), &["overlap", "both holding"]);
    }
}

/// Two shared objects the prune fuzzer made (fixtures/fuzz/prune): section
/// headers whose name table lies in a bundle's bytes and names nothing
/// readable, so the scan read the files raw. Pruned in place, the freed
/// zeros made the names readable, the rescan went by the (garbage)
/// headers and found no bundle: the kept images were gone. Such a file is
/// refused; with its section headers removed (`e_shoff`, `e_shnum` 0) the
/// same bytes prune as the fuzz body checks (every kept image still
/// there).
#[test]
fn a_file_read_raw_despite_its_section_headers_is_refused() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/fuzz/prune");
    for name in [
        "crash-0dbd2235bf6aaa75eb7830e9679b183678442949",
        "crash-2e4839f1303fb91180cae5740a990f6286253fcb",
    ] {
        let f = std::fs::read(dir.join(name)).unwrap();
        refused(
            &f,
            &["it has section headers, but none the scanner can read"],
        );
        let mut stripped = f.clone();
        header(&mut stripped).e_shoff.set(LE, 0);
        header(&mut stripped).e_shnum.set(LE, 0);
        header(&mut stripped)
            .e_shstrndx
            .set(LE, elf::SymbolSection(0));
        // The fuzz body's checks hold: every kept image is there after.
        crate::fuzz::prune(&stripped);
        let r = scan::scan(&stripped, &scan::Options::default());
        assert!(r.images.len() >= 2, "{name}: {} images", r.images.len());
    }
}
