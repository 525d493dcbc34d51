use object::elf;
use object::pod::bytes_of;
use object::{LittleEndian as LE, U16};

use super::containers::{self, Pruned};
use super::{Ptx, Rules, Selection, Verdict};
use crate::bundle::binary::{self, EntrySpec};
use crate::fatbin;
use crate::scan::rule::Rule;
use crate::scan::{self, Options};

mod classes;
#[cfg(feature = "files")]
mod companion;
mod linked;
mod page;
#[cfg(feature = "files")]
mod path;
#[cfg(feature = "files")]
mod reads;
#[cfg(feature = "files")]
pub(super) mod removed;
#[cfg(feature = "files")]
mod tree;
#[cfg(feature = "files")]
mod tree_meta;
#[cfg(feature = "files")]
mod tree_race;
mod windows;

/// A binary bundle of `entries` (ID, data) at `align`.
fn bundle(entries: &[(&str, &[u8])], align: u64) -> Vec<u8> {
    let specs: Vec<EntrySpec> = entries
        .iter()
        .map(|(id, d)| EntrySpec {
            id: id.to_string(),
            size: d.len() as u64,
        })
        .collect();
    let layout = binary::layout(&specs, align).unwrap();
    let bytes: Vec<&[u8]> = entries.iter().map(|e| e.1).collect();
    let mut out = Vec::new();
    layout.write_to(&mut out, &bytes).unwrap();
    out
}

/// An AMDGPU code object's first bytes (enough for the scanner to call it
/// an ELF object), then `fill`.
fn code_object(fill: u8) -> Vec<u8> {
    let mut v = vec![0x7f, b'E', b'L', b'F', 2, 1, 1, 64];
    v.resize(18, 0);
    v.extend_from_slice(bytes_of(&U16::new(LE, elf::EM_AMDGPU)));
    v.resize(300, fill);
    v
}

pub(super) fn keep(rules: &[&str], ptx: Ptx) -> Selection {
    Selection {
        rules: Rules::Keep(rules.iter().map(|r| Rule::parse(r).unwrap()).collect()),
        ptx,
    }
}

fn drop(rules: &[&str]) -> Selection {
    Selection {
        rules: Rules::Drop(rules.iter().map(|r| Rule::parse(r).unwrap()).collect()),
        ptx: Ptx::Newest,
    }
}

/// The verdicts on a file's images, by their arch (`host` for the host
/// entry), in file order.
fn verdicts(data: &[u8], sel: &Selection) -> Vec<(String, Verdict)> {
    let r = scan::scan(data, &Options::default());
    assert!(r.problems.is_empty(), "{:?}", r.problems);
    let v = sel.decide(&r);
    r.images
        .iter()
        .map(|i| {
            let name = if i.offload_kind.is_host() {
                "host".to_string()
            } else if i.image_kind
                == Some(scan::Content::Image(
                    crate::offload_binary::ImageKind::IMG_PTX,
                ))
            {
                format!("ptx:{}", i.arch)
            } else {
                i.target_id.clone()
            };
            (name, v[i.id])
        })
        .collect()
}

pub(super) fn hip_bundle() -> Vec<u8> {
    let host = b"host object".to_vec();
    let (a, b, c, d) = (
        code_object(1),
        code_object(2),
        code_object(3),
        code_object(4),
    );
    bundle(
        &[
            ("host-x86_64-unknown-linux-gnu-", &host),
            ("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack+", &a),
            ("hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-", &b),
            ("hipv4-amdgcn-amd-amdhsa--gfx1030", &c),
            ("hipv4-amdgcn-amd-amdhsa--gfx942", &d),
        ],
        4096,
    )
}

#[test]
fn keeping_a_processor_keeps_every_feature_variant_and_the_host_entry() {
    use Verdict::*;
    let got = verdicts(&hip_bundle(), &keep(&["gfx90a"], Ptx::Newest));
    let want = [
        ("host", Always),
        ("gfx90a:xnack+", Keep),
        ("gfx90a:xnack-", Keep),
        ("gfx1030", Drop),
        ("gfx942", Drop),
    ];
    assert_eq!(got, want.map(|(a, v)| (a.to_string(), v)));
    // A feature in the rule keeps what those devices load.
    let got = verdicts(
        &hip_bundle(),
        &keep(&["gfx90a:xnack-", "gfx942"], Ptx::Newest),
    );
    let stays: Vec<bool> = got.iter().map(|(_, v)| v.stays()).collect();
    assert_eq!(stays, [true, false, true, false, true]);
    // Dropping is the other way round.
    let got = verdicts(&hip_bundle(), &drop(&["gfx90a:xnack+", "gfx1030"]));
    let stays: Vec<bool> = got.iter().map(|(_, v)| v.stays()).collect();
    assert_eq!(stays, [true, false, true, false, true]);
}

/// A fatbin: cubins for sm_80, sm_86, sm_90 and sm_90a, PTX for 52, 80
/// and 90.
fn cuda_fatbin() -> Vec<u8> {
    let cubin = |sm: u32| {
        let mut v = vec![0x7f, b'E', b'L', b'F', 2, 1, 1, 0x33];
        v.resize(18, 0);
        v.extend_from_slice(bytes_of(&U16::new(LE, elf::EM_CUDA)));
        v.resize(200 + sm as usize, u8::try_from(sm).unwrap());
        v
    };
    let ptx = |sm: u32| format!(".version 8.0\n.target sm_{sm}\n").into_bytes();
    let flags = 0x1 | 0x4 | 0x10;
    let (c80, c86, c90, c90a) = (cubin(80), cubin(86), cubin(90), cubin(90));
    let (p52, p80, p90) = (ptx(52), ptx(80), ptx(90));
    fatbin::build(&[
        (fatbin::KIND_ELF, 80, flags, &c80),
        (fatbin::KIND_ELF, 86, flags, &c86),
        (fatbin::KIND_ELF, 90, flags, &c90),
        (
            fatbin::KIND_ELF,
            90,
            flags | fatbin::FLAG_ARCH_SPECIFIC,
            &c90a,
        ),
        (fatbin::KIND_PTX, 52, flags, &p52),
        (fatbin::KIND_PTX, 80, flags, &p80),
        (fatbin::KIND_PTX, 90, flags, &p90),
    ])
}

#[test]
fn keeping_an_sm_keeps_what_its_devices_run_and_the_newest_ptx() {
    let fb = cuda_fatbin();
    let stays = |sel: &Selection| -> Vec<bool> {
        verdicts(&fb, sel).iter().map(|(_, v)| v.stays()).collect()
    };
    // An sm_86 device runs sm_80 and sm_86 cubins, not sm_90; of the PTX
    // it could compile (52, 80) the newest is 80.
    assert_eq!(
        stays(&keep(&["sm_86"], Ptx::Newest)),
        [true, true, false, false, false, true, false]
    );
    assert_eq!(
        stays(&keep(&["sm_86"], Ptx::All)),
        [true, true, false, false, true, true, false]
    );
    assert_eq!(
        stays(&keep(&["sm_86"], Ptx::None)),
        [true, true, false, false, false, false, false]
    );
    // sm_90 runs only 9.x cubins, arch-specific sm_90a ones too.
    assert_eq!(
        stays(&keep(&["sm_90"], Ptx::Newest)),
        [false, false, true, true, false, false, true]
    );
    // Asked for arch-specific code, only that.
    assert_eq!(
        stays(&keep(&["sm_90a"], Ptx::Newest)),
        [false, false, false, true, false, false, false]
    );
    // Dropping sm_80 takes its cubin and its PTX.
    assert_eq!(
        stays(&drop(&["sm_80"])),
        [false, true, true, true, true, false, true]
    );
    // Dropping sm_90 takes the sm_90a cubin too; sm_90a only that one.
    assert_eq!(
        stays(&drop(&["sm_90"])),
        [true, true, false, false, true, true, false]
    );
    assert_eq!(
        stays(&drop(&["sm_90a"])),
        [true, true, true, false, true, true, true]
    );
    // Why each stays: the rule, and how its devices load it.
    let r = scan::scan(&fb, &Options::default());
    let sel = keep(&["sm_86", "sm_90"], Ptx::Newest);
    let why: Vec<Option<String>> = r.images.iter().map(|i| sel.why(i)).collect();
    assert_eq!(
        why[0].as_deref(),
        Some("sm_86: sm_86 devices load sm_80 code (the same major version, an older minor)")
    );
    assert_eq!(
        why[3].as_deref(),
        Some("sm_90: sm_90 devices load sm_90a code (arch-specific: sm_90 devices only)")
    );
    assert_eq!(
        why[5].as_deref(),
        Some("sm_86: sm_86 devices compile sm_80 PTX for themselves")
    );
    assert_eq!(keep(&["sm_86"], Ptx::Newest).why(&r.images[2]), None);
    assert_eq!(drop(&["sm_90"]).why(&r.images[0]), None);
}

/// A fatbin none of whose entries a rule keeps is emptied (its header
/// alone, as `fatbinary` writes a fatbin given no image) when another
/// keeps some, and counted; a file that would keep no device image at all
/// is refused, unless `allow_empty`.
#[test]
fn a_fatbin_that_would_lose_every_entry_is_emptied() {
    let flags = 0x1 | 0x4 | 0x10;
    let a = flags | fatbin::FLAG_ARCH_SPECIFIC;
    let mut data = fatbin::build(&[
        (fatbin::KIND_ELF, 90, a, b"\x7fELF sm_90a"),
        (fatbin::KIND_ELF, 120, a, b"\x7fELF sm_120a"),
    ]);
    let second = data.len();
    data.extend(fatbin::build(&[(
        fatbin::KIND_ELF,
        120,
        a,
        b"\x7fELF 120a",
    )]));
    let sel = keep(&["sm_90"], Ptx::Newest);
    let f = super::prune_file(&data, &sel, &super::Options::default()).unwrap();
    assert_eq!(f.emptied, [1]);
    assert_eq!(f.verdicts, [Verdict::Keep, Verdict::Drop, Verdict::Drop]);
    let out = f.output.unwrap().to_vec(&[&data]).unwrap();
    let first = fatbin::read(&out).unwrap();
    assert_eq!(first.entries.len(), 1);
    let rest = &out[usize::try_from(first.size).unwrap()..];
    // The header as it was, saying that nothing follows it.
    assert_eq!(rest[..8], data[second..second + 8]);
    assert_eq!(rest[8..], [0; 8]);
    assert!(fatbin::read(rest).unwrap().entries.is_empty());
    // Scanned again: two fatbins, one image, nothing damaged.
    let again = scan::scan(&out, &Options::default());
    assert!(!again.damaged());
    assert_eq!((again.containers.len(), again.images.len()), (2, 1));

    // Nothing an sm_80 device loads: the file, fatbins of cubins alone,
    // is to be removed whole; kept (--keep-files), it would keep no device
    // image.
    let none = keep(&["sm_80"], Ptx::Newest);
    let f = super::prune_file(&data, &none, &super::Options::default()).unwrap();
    assert!(f.remove && f.output.is_none());
    assert_eq!(f.freed, data.len() as u64);
    let e = super::file::prune_file_as(&data, None, &none, &super::Options::default(), true)
        .unwrap_err();
    assert_eq!(
        e.to_string(),
        "no device image of the file would stay (2 container(s) would keep none): \
         --allow-empty allows that"
    );
    let opts = super::Options {
        allow_empty: true,
        ..super::Options::default()
    };
    let f = super::file::prune_file_as(&data, None, &none, &opts, true).unwrap();
    assert_eq!(f.emptied, [0, 1]);
    let out = f.output.unwrap().to_vec(&[&data]).unwrap();
    assert_eq!(out.len(), 32);
    assert_eq!(out[..8], data[..8]);
    assert_eq!(out[16..24], data[second..second + 8]);
}

/// The empty fatbin [`containers::fatbin`] makes is the one NVIDIA's
/// `fatbinary` writes when given no image (`fatbinary -64 --create=F`,
/// CUDA 13.0): 16 bytes, size 0.
#[test]
fn an_emptied_fatbin_is_the_one_fatbinary_writes_with_no_image() {
    #[rustfmt::skip]
    let from_fatbinary: [u8; 16] = [
        0x50, 0xed, 0x55, 0xba, // magic 0xBA55ED50
        0x01, 0x00,             // version 1
        0x10, 0x00,             // header size 16
        0, 0, 0, 0, 0, 0, 0, 0, // size of the entries: none
    ];
    let data = cuda_fatbin();
    let n = fatbin::read(&data).unwrap().entries.len();
    let p = containers::fatbin(&data, &vec![false; n]).unwrap();
    assert_eq!((p.kept, p.dropped), (0, n));
    assert_eq!(bytes(&p, &data), from_fatbinary);
    // And read back, it holds nothing.
    assert!(fatbin::read(&from_fatbinary).unwrap().entries.is_empty());
}

/// A HIP bundle none of whose device entries a rule keeps holds its host
/// entry alone, still a bundle the runtime registers; counted as emptied.
#[test]
fn a_bundle_that_would_lose_every_device_entry_keeps_its_host_entry() {
    let host = b"host object".to_vec();
    let old = code_object(5);
    let mut data = hip_bundle();
    data.extend(bundle(
        &[
            ("host-x86_64-unknown-linux-gnu-", &host),
            ("hipv4-amdgcn-amd-amdhsa--gfx1030", &old),
        ],
        4096,
    ));
    let f = super::prune_file(&data, &keep(&["gfx90a"], Ptx::Newest), &Default::default()).unwrap();
    assert_eq!(f.emptied, [1]);
    let out = f.output.unwrap().to_vec(&[&data]).unwrap();
    let again = scan::scan(&out, &Options::default());
    assert!(!again.damaged());
    let second = again
        .containers
        .iter()
        .filter_map(|c| c.offset)
        .max()
        .unwrap();
    let entries = binary::read(&out[usize::try_from(second).unwrap()..]).unwrap();
    let ids: Vec<_> = entries.iter().map(|e| e.id_str().into_owned()).collect();
    assert_eq!(ids, ["host-x86_64-unknown-linux-gnu-"]);
    assert_eq!(entries[0].data, host);
}

/// The container `p` made of `data`, read back.
fn bytes(p: &Pruned, data: &[u8]) -> Vec<u8> {
    let out = p.to_vec(data);
    assert_eq!(out.len() as u64, p.layout.size);
    out
}

#[test]
fn a_pruned_fatbin_holds_the_kept_entries_as_stored() {
    let fb = cuda_fatbin();
    let before = fatbin::read(&fb).unwrap();
    let stays = [false, true, false, true, false, false, true];
    let p = containers::fatbin(&fb, &stays).unwrap();
    assert_eq!((p.kept, p.dropped), (3, 4));
    let out = bytes(&p, &fb);
    let after = fatbin::read(&out).unwrap();
    assert_eq!(after.size, out.len() as u64);
    let kept: Vec<_> = before
        .entries
        .iter()
        .zip(stays)
        .filter_map(|(e, s)| s.then_some(e))
        .collect();
    assert_eq!(after.entries.len(), 3);
    for (a, b) in after.entries.iter().zip(kept) {
        assert_eq!(
            (a.kind, a.arch, a.flags, a.payload),
            (b.kind, b.arch, b.flags, b.payload)
        );
    }
    // Keeping everything gives the container back, byte for byte; keeping
    // nothing, its header alone; a verdict count that is not the entry
    // count is refused.
    let all = containers::fatbin(&fb, &[true; 7]).unwrap();
    assert!(bytes(&all, &fb) == fb);
    assert_eq!(
        containers::fatbin(&fb, &[false; 7]).unwrap().layout.size,
        16
    );
    assert!(containers::fatbin(&fb, &[true; 3]).is_err());
}

#[test]
fn compressed_fatbin_entries_stay_compressed() {
    let text = b".version 8.0\n.target sm_80\n".repeat(40);
    let lz4 = lz4_flex::block::compress(&text);
    let flags = 0x1 | 0x4 | 0x10 | 0x2000;
    let fb = fatbin::build_compressed(&[
        (fatbin::KIND_PTX, 80, flags, &lz4, text.len() as u64),
        (fatbin::KIND_PTX, 90, flags, &lz4, text.len() as u64),
    ]);
    let out = bytes(&containers::fatbin(&fb, &[false, true]).unwrap(), &fb);
    let e = &fatbin::read(&out).unwrap().entries[0];
    assert_eq!((e.arch, e.compression()), (90, Some("lz4")));
    assert_eq!(&e.contents(1 << 20).unwrap()[..], &text[..]);
}

#[test]
fn a_pruned_bundle_is_laid_out_as_the_bundler_lays_out_the_kept_entries() {
    let b = hip_bundle();
    let stays = [true, true, true, false, false];
    let p = containers::bundle(&b, &stays).unwrap();
    assert_eq!((p.kept, p.dropped), (3, 2));
    let out = bytes(&p, &b);
    let entries = binary::read(&b).unwrap();
    let ids: Vec<String> = entries.iter().map(|e| e.id_str().into_owned()).collect();
    let want = bundle(
        &entries[..3]
            .iter()
            .zip(&ids)
            .map(|(e, id)| (id.as_str(), e.data))
            .collect::<Vec<_>>(),
        4096,
    );
    assert!(
        out == want,
        "not what the bundler writes for the kept entries"
    );
    // The alignment is read from the input: a bundle at 8 stays at 8.
    let small = bundle(
        &[
            ("host-x86_64-unknown-linux-gnu-", b"h"),
            ("openmp-amdgcn-amd-amdhsa--gfx90a", b"12345678"),
            ("openmp-amdgcn-amd-amdhsa--gfx1030", b"abc"),
        ],
        8,
    );
    let out = bytes(
        &containers::bundle(&small, &[true, false, true]).unwrap(),
        &small,
    );
    let got = binary::read(&out).unwrap();
    assert_eq!(got.iter().map(|e| e.offset % 8).collect::<Vec<_>>(), [0, 0]);
    assert_eq!(got[1].data, b"abc");
}

/// Issue #57: SYCL's targets are rules too. A bundle of SPIR-V for
/// `spir64` and code for `spir64_gen` (no target IDs): `--drop spir64`
/// drops the SPIR-V and the bundle loses it; `--keep spir64` keeps only
/// it; `--keep` naming a processor keeps neither (no GPU processor loads
/// an image that names none). Before, no rule took them.
#[test]
fn sycl_targets_keep_and_drop_the_images_of_their_triple() {
    use Verdict::*;
    let spirv = b"\x03\x02\x23\x07 SPIR-V".repeat(8);
    let gen_code = b"!<arch>\n".to_vec();
    let b = bundle(
        &[
            ("host-x86_64-unknown-linux-gnu-", b"host object"),
            ("sycl-spir64-unknown-unknown", &spirv),
            ("sycl-spir64_gen-unknown-unknown", &gen_code),
        ],
        8,
    );
    let of =
        |sel: &Selection| -> Vec<Verdict> { verdicts(&b, sel).into_iter().map(|v| v.1).collect() };
    assert_eq!(of(&drop(&["spir64"])), [Always, Drop, Keep]);
    assert_eq!(of(&drop(&["spir64_gen:archive"])), [Always, Keep, Drop]);
    assert_eq!(of(&keep(&["spir64"], Ptx::Newest)), [Always, Keep, Drop]);
    assert_eq!(
        of(&keep(&["gfx90a", "sm_90"], Ptx::Newest)),
        [Always, Drop, Drop]
    );
    let pruning = super::prune_file(&b, &drop(&["spir64"]), &super::Options::default()).unwrap();
    let out = pruning
        .output
        .expect("a pruned bundle")
        .to_vec(&[&b])
        .unwrap();
    let ids: Vec<String> = binary::read(&out)
        .unwrap()
        .iter()
        .map(|e| e.id_str().into_owned())
        .collect();
    assert_eq!(
        ids,
        [
            "host-x86_64-unknown-linux-gnu-",
            "sycl-spir64_gen-unknown-unknown"
        ]
    );
}

#[test]
fn a_compressed_bundle_is_pruned_inside_and_compressed_again() {
    use crate::bundle::ccob;
    let plain = hip_bundle();
    for (method, version) in [(ccob::Method::ZSTD, 3), (ccob::Method::ZLIB, 2)] {
        let opts = ccob::CompressOptions {
            version,
            method,
            ..ccob::CompressOptions::default()
        };
        let (packed, _) = ccob::compress_to_vec(&plain, &opts).unwrap();
        let stays = [true, true, true, false, false];
        let (p, bytes) = containers::ccob(&packed, &stays, 0).unwrap();
        assert_eq!((p.kept, p.dropped), (3, 2));
        assert!(p.to_vec(&bytes) == bytes && p.layout.size == bytes.len() as u64);
        let dec = ccob::decompress(&bytes, &ccob::ReadOptions::default()).unwrap();
        assert_eq!((dec.header.method, dec.header.version), (method, version));
        let want = containers::bundle(&plain, &stays).unwrap().to_vec(&plain);
        assert!(
            dec.data == want,
            "the bundle inside is not the pruned bundle"
        );
    }
}

/// A bare bundle file is cut: the pruned bundle alone, as `containers`
/// makes it; the same bundle in a linked library, in place, keeps the
/// file's size, zeros after.
#[test]
fn bare_containers_are_cut_and_linked_ones_rewritten_in_place() {
    let b = hip_bundle();
    let data = linked::library(&b);
    let (at, tail) = (linked::AT, data.len() - linked::AT - b.len());
    let sel = keep(&["gfx90a"], Ptx::Newest);
    let f = super::prune_file(&b, &sel, &super::Options::default()).unwrap();
    let out = f
        .output
        .expect("the bundle loses entries")
        .to_vec(&[&b])
        .unwrap();
    assert!(out.len() < b.len());
    assert_eq!(f.freed, (b.len() - out.len()) as u64);
    let listed: Vec<String> = binary::read(&out)
        .unwrap()
        .iter()
        .map(|e| e.id_str().into_owned())
        .collect();
    assert!(
        listed
            .iter()
            .all(|id| id.starts_with("host") || id.contains("gfx90a")),
        "{listed:?}"
    );

    // The same edit made in place in a linked library.
    let report = scan::scan(&data, &Options::default());
    let verdicts = sel.decide(&report);
    let mut plan = super::plan::plan(
        &data,
        &report,
        &verdicts,
        super::plan::Host::Linked,
        &super::Options::default(),
    )
    .unwrap();
    let freed = plan.freed();
    let whole = super::output::in_place(data.len() as u64, &mut plan)
        .to_vec(&[&data])
        .unwrap();
    assert_eq!(whole.len(), data.len());
    assert_eq!(&whole[..at], &data[..at]);
    assert_eq!(&whole[at..at + out.len()], &out[..]);
    let zeros = usize::try_from(freed).unwrap();
    assert_eq!(out.len() + zeros, b.len());
    assert!(
        whole[at + out.len()..at + out.len() + zeros]
            .iter()
            .all(|&x| x == 0)
    );
    assert_eq!(&whole[whole.len() - tail..], &data[data.len() - tail..]);
}

/// An archive member's output is moved to the member's place; its built
/// containers follow it.
#[test]
fn appended_outputs_refer_to_the_whole_input() {
    use super::output::Output;
    let input: Vec<u8> = (0..64u8).collect();
    let mut member = Output::default();
    member.span(0, 2, 3);
    member.built.push(vec![9, 9]);
    member.span(1, 0, 2);
    let mut whole = Output::default();
    whole.span(0, 0, 1);
    whole.append_at(10, member);
    assert_eq!(whole.to_vec(&[&input]).unwrap(), vec![0, 12, 13, 14, 9, 9]);
}

/// Shrinking refuses what it does not know, saying why.
#[test]
fn shrinking_refuses_files_it_does_not_know() {
    let plan = super::plan::Plan::default();
    for (data, says) in [
        (
            &b"not an ELF file at all"[..],
            "the ELF header cannot be read",
        ),
        (
            &b"\x7fELF\x01\x01\x01\0\0\0\0\0\0\0\0\0"[..],
            "the ELF headers cannot be read",
        ),
    ] {
        let report = scan::scan(data, &Options::default());
        let facts = crate::host::linked::facts::Facts::new(data, report.host);
        let why = super::shrink::shrink(data, &report, &plan, &facts).unwrap_err();
        assert!(why.contains(says), "{why}");
    }
}
