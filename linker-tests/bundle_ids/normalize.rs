//! Normalization: the generated targets bundled in batches, and the IDs
//! LLVM stores in the header against `BundleId::normalized`.

use super::*;

/// Splits targets into bundle calls: one host each (the default one unless a
/// generated host target takes its place), at most one target per conflict
/// group (kind and the four triple parts as given), and a bounded size.
fn batches(targets: Vec<String>) -> Vec<Vec<String>> {
    struct Batch {
        targets: Vec<String>,
        groups: HashSet<String>,
        host: bool,
        text: usize,
    }
    let mut out: Vec<Batch> = Vec::new();
    for t in targets {
        let group: String = t.splitn(6, '-').take(5).collect::<Vec<_>>().join("-");
        let host = t.starts_with("host-");
        let fits = |b: &Batch| {
            b.targets.len() < MAX_BATCH
                && b.text + t.len() < MAX_TARGETS_TEXT
                && !b.groups.contains(&group)
                && !(host && b.host)
        };
        let i = match out.iter().position(fits) {
            Some(i) => i,
            None => {
                out.push(Batch {
                    targets: Vec::new(),
                    groups: HashSet::new(),
                    host: false,
                    text: 0,
                });
                out.len() - 1
            }
        };
        let b = &mut out[i];
        b.text += t.len() + 1;
        b.groups.insert(group);
        b.host |= host;
        b.targets.push(t);
    }
    out.into_iter()
        .map(|mut b| {
            if !b.host {
                b.targets.insert(0, HOST.to_owned());
            }
            b.targets
        })
        .collect()
}

/// The entry IDs of a binary bundle's header, in header order.
fn header_ids(data: &[u8]) -> Result<Vec<String>, Failed> {
    let bad = || Failed::from("malformed bundle header");
    if data.get(..24) != Some(b"__CLANG_OFFLOAD_BUNDLE__".as_slice()) {
        return Err(bad());
    }
    let u64_at = |at: usize| -> Result<u64, Failed> {
        let b = data.get(at..at + 8).ok_or_else(bad)?;
        Ok(u64::from_le_bytes(b.try_into().map_err(|_| bad())?))
    };
    let n = u64_at(24)?;
    let mut at = 32usize;
    let mut ids = Vec::new();
    for _ in 0..n {
        let len = usize::try_from(u64_at(at + 16)?).map_err(|_| bad())?;
        at += 24;
        let id = data.get(at..at + len).ok_or_else(bad)?;
        ids.push(String::from_utf8_lossy(id).into_owned());
        at += len;
    }
    Ok(ids)
}

pub(super) fn normalized_like_llvm(targets: Vec<String>) -> Result<(), Failed> {
    let dir = tempdir();
    let input = dir.path().join("in.bin");
    std::fs::write(&input, b"payload").map_err(|e| e.to_string())?;
    let mut compared = 0usize;
    let mut wrong = String::new();
    for batch in batches(targets) {
        let ours = check_targets(&batch, true)
            .map_err(|e| format!("our checks reject a batch LLVM should take: {e}"))?;
        let mut args = vec![
            "-type=bc".to_owned(),
            format!("-targets={}", batch.join(",")),
        ];
        args.extend(batch.iter().map(|_| "-input=in.bin".to_owned()));
        args.push("-output=out.bin".to_owned());
        let r = run(&llvm(TOOL), &args, dir.path());
        if r.code != 0 {
            return Err(format!("LLVM rejects a batch we accept: {}", r.stderr).into());
        }
        let data = std::fs::read(dir.path().join("out.bin")).map_err(|e| e.to_string())?;
        let theirs = header_ids(&data)?;
        same("entry count", theirs.len(), batch.len())?;
        for ((target, id), stored) in batch.iter().zip(&ours).zip(&theirs) {
            compared += 1;
            if id.normalized() != *stored {
                let _ = writeln!(wrong, "  {target}: ours {} llvm {stored}", id.normalized());
            }
        }
    }
    if !wrong.is_empty() {
        return Err(format!("normalized IDs differ:\n{wrong}").into());
    }
    if compared < 1000 {
        return Err(format!("only {compared} targets compared").into());
    }
    Ok(())
}
