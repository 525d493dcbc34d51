//! `prune` on a wheel (any zip): each ELF member pruned into a temporary
//! file, every other member copied as it is stored, and the RECORD given
//! the pruned members' new hashes and sizes, so that pip installs it.

use std::collections::BTreeMap;
use std::io::{Read as _, Write};
use std::path::Path;

use anyhow::{Context, Result, anyhow};
use base64::Engine as _;
use sha2::{Digest as _, Sha256};

use super::{FileReport, PruneOpts, Pruning, merge};
use crate::cli::io::{Input, Output};
use crate::prune::Selection;

impl PruneOpts {
    /// A wheel (any zip): each ELF member pruned, every other member
    /// copied as it is stored, and the `.dist-info/RECORD` given the new
    /// hash and size of each pruned member, so that pip installs it.
    pub(super) fn wheel(
        &self,
        sel: &Selection,
        input: &Path,
        meta: &std::fs::Metadata,
        data: &[u8],
    ) -> Result<FileReport> {
        let name = input.to_string_lossy().into_owned();
        let bad = |e: zip::result::ZipError| anyhow!("'{name}': {e}");
        let mut zin = zip::ZipArchive::new(std::io::Cursor::new(data)).map_err(bad)?;
        let mut rep = FileReport::new(&name, data, meta);
        // Pass 1: prune each ELF member into a temporary file.
        let (mut pruned, record) = self.prune_members(sel, &name, &mut zin, &mut rep)?;
        rep.kept = merge(rep.kept);
        rep.dropped = merge(rep.dropped);
        let Some(dest) = self.destination(input)? else {
            return Ok(rep);
        };
        if pruned.is_empty() && self.in_place {
            rep.disk_after = Some(rep.disk_before);
            return Ok(rep);
        }
        // Pass 2: the new zip, members in their order.
        let cannot = || format!("'{}': cannot write", dest.display());
        let through = self.write_through(input, meta)?;
        let mut out = Output::create(&dest).with_context(cannot)?;
        let file = out.temp_file().ok_or_else(|| anyhow!("{}", cannot()))?;
        write_wheel(&name, &mut zin, &mut pruned, record, file)?;
        self.finish(out, meta, &dest, &mut rep, through)?;
        Ok(rep)
    }

    /// Prunes each ELF member of the wheel `zin` (the file `name`) into a
    /// temporary file, noting what it did in `rep`; returns the pruned
    /// members by index, and the index of the RECORD.
    fn prune_members(
        &self,
        sel: &Selection,
        name: &str,
        zin: &mut zip::ZipArchive<std::io::Cursor<&[u8]>>,
        rep: &mut FileReport,
    ) -> Result<(BTreeMap<usize, PrunedMember>, Option<usize>)> {
        let bad = |e: zip::result::ZipError| anyhow!("'{name}': {e}");
        let mut pruned: BTreeMap<usize, PrunedMember> = BTreeMap::new();
        let mut record = None;
        for i in 0..zin.len() {
            let mut f = zin.by_index(i).map_err(bad)?;
            let mname = f.name().map_err(bad)?.to_string();
            if mname.ends_with(".dist-info/RECORD") {
                record = Some(i);
            }
            let mut head = [0u8; 4];
            if f.is_dir()
                || f.size() < 64
                || f.read_exact(&mut head).is_err()
                || head != *b"\x7fELF"
            {
                continue;
            }
            // The member, spooled: its head, then the rest.
            let mut spool = tempfile::tempfile()?;
            spool.write_all(&head)?;
            crate::cli::io::copy_in_pieces(&mut f, &mut spool)
                .with_context(|| format!("'{name}!/{mname}': cannot inflate"))?;
            drop(f);
            let member = Input::from_temp_file(spool)?;
            let full = format!("{name}!/{mname}");
            let p = Pruning::of(sel, &full, member.bytes(), &self.options())?;
            rep.kept.extend(p.kept);
            rep.dropped.extend(p.dropped);
            let Some(new_member) = p.output else {
                continue;
            };
            rep.containers_rewritten += p.rewritten;
            rep.freed += p.freed;
            let mut hasher = Hashing {
                out: std::io::BufWriter::with_capacity(1 << 20, tempfile::tempfile()?),
                sha: Sha256::new(),
                n: 0,
            };
            new_member.write_to(member.bytes(), &mut hasher)?;
            let Hashing { out, n, sha } = hasher;
            let out = out
                .into_inner()
                .map_err(std::io::IntoInnerError::into_error)?;
            let sha = sha.finalize();
            let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha);
            pruned.insert(i, (out, n, b64));
        }
        Ok((pruned, record))
    }
}

/// A writer that hashes and counts what passes through it.
struct Hashing<W: Write> {
    out: W,
    sha: Sha256,
    n: u64,
}

impl<W: Write> Write for Hashing<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let k = self.out.write(buf)?;
        self.sha.update(&buf[..k]);
        self.n += k as u64;
        Ok(k)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

/// A wheel's RECORD (`path,sha256=HASH,size` per line) with the hash and
/// size of each file in `changed` replaced; every other line as it was.
fn new_record(text: &str, changed: &BTreeMap<String, (u64, String)>) -> String {
    let mut out = String::with_capacity(text.len());
    for line in text.split_inclusive('\n') {
        let body = line.trim_end_matches(['\n', '\r']);
        let path = body.rsplitn(3, ',').nth(2).unwrap_or(body);
        match changed.get(path) {
            Some((n, sha)) => {
                out.push_str(&format!("{path},sha256={sha},{n}"));
                out.push_str(&line[body.len()..]);
            }
            None => out.push_str(line),
        }
    }
    out
}

/// A member pruned into a temporary file: the file, its size, its SHA-256
/// in a RECORD's form.
type PrunedMember = (std::fs::File, u64, String);

/// Writes the wheel `zin` (the file `name`) to `file`, members in their
/// order: those in `pruned` from their temporary files (with their own
/// compression method and mode), the RECORD at index `record` with the
/// pruned members' new hashes and sizes, every other member copied as it
/// is stored.
fn write_wheel(
    name: &str,
    zin: &mut zip::ZipArchive<std::io::Cursor<&[u8]>>,
    pruned: &mut BTreeMap<usize, PrunedMember>,
    record: Option<usize>,
    file: &std::fs::File,
) -> Result<()> {
    let bad = |e: zip::result::ZipError| anyhow!("'{name}': {e}");
    let mut changed = BTreeMap::new();
    for (k, (_, n, sha)) in pruned.iter() {
        let m = zin.by_index_raw(*k).map_err(bad)?;
        changed.insert(m.name().map_err(bad)?.to_string(), (*n, sha.clone()));
    }
    let mut zout = zip::ZipWriter::new(file);
    for i in 0..zin.len() {
        if let Some((tmp, n, _)) = pruned.get_mut(&i) {
            let f = zin.by_index_raw(i).map_err(bad)?;
            let opts = zip::write::SimpleFileOptions::default()
                .compression_method(f.compression())
                .unix_permissions(f.unix_mode().unwrap_or(0o644))
                .large_file(*n >= u64::from(u32::MAX));
            let mname = f.name().map_err(bad)?.to_string();
            drop(f);
            zout.start_file(mname, opts).map_err(bad)?;
            use std::io::Seek;
            tmp.seek(std::io::SeekFrom::Start(0))?;
            std::io::copy(tmp, &mut zout)?;
        } else if Some(i) == record {
            let mut f = zin.by_index(i).map_err(bad)?;
            let mut text = String::new();
            f.read_to_string(&mut text)
                .with_context(|| format!("'{name}': its RECORD is not text"))?;
            let opts = zip::write::SimpleFileOptions::default()
                .compression_method(f.compression())
                .unix_permissions(f.unix_mode().unwrap_or(0o644));
            let mname = f.name().map_err(bad)?.to_string();
            drop(f);
            zout.start_file(mname, opts).map_err(bad)?;
            zout.write_all(new_record(&text, &changed).as_bytes())?;
        } else {
            let f = zin.by_index_raw(i).map_err(bad)?;
            zout.raw_copy_file(f).map_err(bad)?;
        }
    }
    zout.finish().map_err(bad)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_lines_of_pruned_files_are_replaced() {
        let text = "a/x.so,sha256=old,10\r\nb.py,sha256=keep,3\r\npkg.dist-info/RECORD,,\r\n";
        let mut changed = BTreeMap::new();
        changed.insert("a/x.so".to_string(), (7u64, "new".to_string()));
        assert_eq!(
            new_record(text, &changed),
            "a/x.so,sha256=new,7\r\nb.py,sha256=keep,3\r\npkg.dist-info/RECORD,,\r\n"
        );
    }
}
