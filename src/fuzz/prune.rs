//! The fuzz body of `prune`.

/// Bytes the scan of one pruned file may decompress, in the `prune` body.
const PRUNE_WORK_BYTES: u64 = 1 << 24;

/// Prunes `data` as `offload-kit prune` does (a static archive member by
/// member, any other file whole), with rules that keep or drop AMDGPU and
/// CUDA targets, shrinking linked files and not: whatever the bytes, no
/// panic (every offset and size is checked, overflow included), and a file
/// that is pruned comes out no larger than it went in (a relocatable
/// object: but for its sections' alignments), holding every image
/// that stayed with its bytes unchanged, and stays as it is when pruned
/// again by the same rules. The work is bounded by the scan's
/// decompression budget ([`PRUNE_WORK_BYTES`]); the fuzzer's time and
/// memory limits for this target (scripts/fuzz.sh) hold each input to it.
pub fn prune(data: &[u8]) {
    use crate::prune::{Ptx, Rules, Selection};
    use crate::scan::Rule;
    let rule = |r: &str| Rule::parse(r).expect("a rule");
    let selections = [
        Selection {
            rules: Rules::Keep(vec![rule("gfx90a")]),
            ptx: Ptx::Newest,
        },
        Selection {
            rules: Rules::Keep(vec![rule("sm_80")]),
            ptx: Ptx::All,
        },
        Selection {
            rules: Rules::Drop(vec![rule("gfx942"), rule("sm_70")]),
            ptx: Ptx::None,
        },
    ];
    let _ = crate::prune::package_not_pruned(data);
    #[cfg(feature = "files")]
    tar_rewrite(data);
    #[cfg(feature = "cli")]
    if crate::package::detect(data) == Some(crate::package::Kind::Zip) {
        wheel(data, &selections);
    }
    prune_with(data, &selections);
}

/// `data` read as a tar archive by the `.deb` rewriter
/// (`package::tar::walk`), within [`PRUNE_WORK_BYTES`]: copied entry by
/// entry, it comes out byte for byte; with every regular file's data
/// replaced by its first half, it reads back with the same entries, each
/// file holding that half.
#[cfg(feature = "files")]
fn tar_rewrite(data: &[u8]) {
    use std::io::{Read, Write};

    use crate::package::tar::walk::{Fault, Walk};
    let mut w = Walk::new(data, Vec::new(), PRUNE_WORK_BYTES);
    let copied = (|| -> Result<(), Fault> {
        while let Some(h) = w.next()? {
            w.copy(&h)?;
        }
        Ok(())
    })();
    if copied.is_ok() {
        assert!(w.into_inner() == data, "a tar archive copied changed");
    }
    // What each entry holds: a file its data, anything else nothing.
    let halved = |h: &crate::package::tar::walk::Header| h.is_file() && !h.size_in_pax;
    let mut w = Walk::new(data, Vec::new(), PRUNE_WORK_BYTES);
    let mut want = Vec::new();
    let rewritten = (|| -> Result<(), Fault> {
        while let Some(h) = w.next()? {
            if !halved(&h) {
                w.copy(&h)?;
                want.push((h.path, None));
                continue;
            }
            let mut body = Vec::new();
            w.body().read_to_end(&mut body).map_err(Fault::Read)?;
            w.skip_body()?;
            let half = &body[..body.len() / 2];
            w.write_header(&h, half.len() as u64)?;
            w.out().write_all(half).map_err(Fault::Write)?;
            w.pad(half.len() as u64)?;
            want.push((h.path, Some(half.to_vec())));
        }
        Ok(())
    })();
    if rewritten.is_err() {
        return;
    }
    let out = w.into_inner();
    let mut r = Walk::new(&out[..], std::io::sink(), u64::MAX);
    let mut got = Vec::new();
    while let Some(h) = r.next().expect("a rewritten tar archive reads") {
        let body = halved(&h).then(|| {
            let mut b = Vec::new();
            r.body()
                .read_to_end(&mut b)
                .expect("a rewritten file reads");
            b
        });
        r.skip_body().expect("a rewritten entry reads");
        got.push((h.path, body));
    }
    assert!(got == want, "a rewritten tar archive reads back otherwise");
}

/// [`prune`]'s rules on one file (an archive, or any other file).
fn prune_with(data: &[u8], selections: &[crate::prune::Selection]) {
    use crate::prune::Options;
    let first = data.first().copied().unwrap_or(0);
    for (k, sel) in selections.iter().enumerate() {
        let opts = Options {
            threads: 1,
            max_uncompressed: Some(PRUNE_WORK_BYTES),
            allow_empty: first & (1 << k) != 0,
            no_shrink: first & 0x80 != 0,
            strip_signature: first & 0x40 != 0,
            keep_string_tables: first & 0x20 != 0,
        };
        let Some(out) = pruned(data, sel, &opts) else {
            continue;
        };
        // A relocatable object is written as llvm-objcopy writes it, each
        // section at its alignment: hostile alignments (up to 16 MiB, past
        // which the rewrite refuses) can make it larger. Anything else only
        // loses bytes.
        let relocatable = crate::host::ar::is_archive(data)
            || crate::host::elf::peek(data).and_then(|h| h.file_type())
                == Some(object::elf::ET_REL);
        let most = if relocatable {
            data.len().saturating_add(256 << 20)
        } else {
            data.len()
        };
        assert!(
            out.len() <= most,
            "pruned to {} bytes from {}",
            out.len(),
            data.len()
        );
        kept_images_are_there(data, &out, sel);
        assert!(
            pruned(&out, sel, &opts).is_none(),
            "pruned again, the file changes"
        );
    }
}

/// A wheel's members (the first 32, up to 1 MiB each): each RECORD
/// rewritten with new hashes for every other file it names
/// ([`record_rewrite`]), each ELF member pruned as a file.
#[cfg(feature = "cli")]
fn wheel(data: &[u8], selections: &[crate::prune::Selection]) {
    use std::io::Read;
    let Ok(mut zip) = zip::ZipArchive::new(std::io::Cursor::new(data)) else {
        return;
    };
    for i in 0..zip.len().min(32) {
        let Ok(f) = zip.by_index(i) else {
            continue;
        };
        let mut bytes = Vec::new();
        if f.take(1 << 20).read_to_end(&mut bytes).is_err() {
            continue;
        }
        record_rewrite(&bytes);
        if bytes.starts_with(b"\x7fELF") {
            prune_with(&bytes, selections);
        }
    }
}

/// `text` read as a wheel's RECORD, every other path it names given a new
/// hash and size: the rewritten RECORD has the same rows, those named with
/// their new hash and size, every other one as it was.
#[cfg(feature = "cli")]
fn record_rewrite(text: &[u8]) {
    use std::collections::BTreeMap;
    let rows = |t: &[u8]| -> Option<Vec<csv::ByteRecord>> {
        let mut r = csv::ReaderBuilder::new()
            .has_headers(false)
            .flexible(true)
            .from_reader(t);
        r.byte_records().collect::<Result<Vec<_>, _>>().ok()
    };
    let Some(before) = rows(text) else {
        return;
    };
    let paths: Vec<String> = before
        .iter()
        .step_by(2)
        .filter_map(|r| std::str::from_utf8(r.get(0)?).ok().map(str::to_string))
        .collect();
    let changed: BTreeMap<&str, (u64, &str)> = paths
        .iter()
        .map(|p| (p.as_str(), (p.len() as u64, "NEWHASH")))
        .collect();
    let Ok(new) = crate::package::zipfile::record::new_record(text, &changed) else {
        return;
    };
    let Some(new) = new else {
        assert!(
            changed.is_empty(),
            "a RECORD naming {paths:?} was left as it was"
        );
        return;
    };
    let after = rows(&new).expect("the rewritten RECORD reads as CSV");
    assert_eq!(after.len(), before.len(), "rows added or lost");
    for (a, b) in before.iter().zip(&after) {
        let path = std::str::from_utf8(a.get(0).unwrap_or_default()).ok();
        match path.and_then(|p| changed.get(p)) {
            Some((n, h)) => {
                let want = [
                    path.unwrap_or_default().to_string(),
                    format!("sha256={h}"),
                    n.to_string(),
                ];
                let got: Vec<&[u8]> = b.iter().collect();
                assert_eq!(got, want.iter().map(|s| s.as_bytes()).collect::<Vec<_>>());
            }
            None => assert_eq!(a, b, "a row not named changed"),
        }
    }
}

/// `data` pruned by `sel` as the command line prunes a file (an `ar`
/// archive member by member), written out; `None` when nothing changes or
/// it is refused.
fn pruned(
    data: &[u8],
    sel: &crate::prune::Selection,
    opts: &crate::prune::Options,
) -> Option<Vec<u8>> {
    let output = if crate::host::ar::is_archive(data) {
        crate::prune::prune_archive(data, |_, member| {
            crate::prune::prune_file(member, sel, opts).map(|p| p.output)
        })
        .ok()?
    } else {
        crate::prune::prune_file(data, sel, opts).ok()?.output
    }?;
    let bytes = output.to_vec(&[data]).expect("write to memory");
    assert_eq!(bytes.len() as u64, output.size());
    Some(bytes)
}

/// Every image of `before` that `sel` keeps (by its target and hash) is an
/// image of `after`, as many times.
fn kept_images_are_there(before: &[u8], after: &[u8], sel: &crate::prune::Selection) {
    use crate::scan::{self, HashAlgo, Options};
    let opts = Options {
        hash: Some(HashAlgo::Xxh3_128),
        max_uncompressed: PRUNE_WORK_BYTES,
        ..Options::default()
    };
    let (r0, r1) = (scan::scan(before, &opts), scan::scan(after, &opts));
    if crate::host::ar::is_archive(before) || r0.stopped.is_some() {
        // (An archive's members are pruned apart: their images are counted
        // by member, which this does not follow.)
        return;
    }
    let verdicts = sel.decide(&r0);
    // An image stays when it and every image it lies in stay.
    let survives = |i: &crate::scan::Image| {
        let mut at = Some(i.id);
        let mut steps = 0;
        while let Some(id) = at {
            let img = &r0.images[id];
            if !verdicts[id].stays() || steps > r0.images.len() {
                return false;
            }
            steps += 1;
            let mut c = img.container;
            at = loop {
                match r0.containers[c].parent {
                    Some(scan::Parent::Image(p)) => break Some(p),
                    Some(scan::Parent::Container(p)) => c = p,
                    None => break None,
                }
            };
        }
        true
    };
    let key = |i: &crate::scan::Image| (i.target_id.clone(), i.hash);
    let mut left: Vec<_> = r1.images.iter().map(key).collect();
    for i in r0.images.iter().filter(|i| i.hash.is_some() && survives(i)) {
        let k = key(i);
        let at = left.iter().position(|l| *l == k);
        assert!(
            at.is_some(),
            "image {} ({}) stayed, but is gone",
            i.id,
            i.target_id
        );
        left.swap_remove(at.unwrap_or_default());
    }
}
