//! Pruning a wheel (any zip): each ELF, PE or static-archive member pruned
//! into a temporary file (as the file named alone would be), every other
//! member copied as it is stored, and each RECORD that
//! names a pruned member given its new hash and size ([`new_record`]), so
//! that pip installs it.
//!
//! Members are inflated within one decompression budget for the whole
//! wheel, the one `inspect` gives a file of its size
//! ([`crate::scan::default_max_uncompressed`], or
//! [`Options::max_uncompressed`](super::Options::max_uncompressed)):
//! each member's declared size is taken from it before anything is
//! inflated, and a member that inflates to more or fewer bytes than it
//! declares is an error.

use std::collections::BTreeMap;
use std::io::{Read, Seek as _, Write};
use std::path::Path;

use base64::Engine as _;
use sha2::{Digest as _, Sha256};

use super::budget::{Budget, inflate};
use super::model::Selection;
use super::path::{
    PathError, PathErrorKind, PathOptions, PathReport, Pruning, RemovedFile, finish, merge,
    write_through,
};
use crate::files::Input;
use crate::scan::magic::Magic;

mod record;
mod verify;

pub(super) use verify::stored;
use verify::{Member, Zip};

#[cfg(any(test, fuzzing))]
pub(crate) use record::new_record;
pub(crate) use record::{Change, new_record_with};

/// A wheel (any zip), `input` with `meta`, mapped as `file`: each ELF, PE or
/// static-archive member pruned, every other member copied as it is stored, and each
/// `.dist-info/RECORD` that names a pruned member given its new hash and
/// size, so that pip installs it. A signed wheel (`RECORD.jws`,
/// `RECORD.p7s`) that would change is refused: its signature would no
/// longer verify.
pub(crate) fn prune(
    sel: &Selection,
    opts: &PathOptions,
    input: &Path,
    meta: &std::fs::Metadata,
    file: &Input,
) -> Result<PathReport, PathError> {
    let data = file.bytes();
    let name = crate::files::shown(input).into_owned();
    let mut zin =
        zip::ZipArchive::new(std::io::Cursor::new(data)).map_err(|e| PathError::zip(input, e))?;
    super::budget::zip_directory(input, data, &mut zin)?;
    if super::packed::is_conda(&zin) {
        // Refused when it holds what the rules drop; else copied as it is.
        let kind = crate::package::Kind::Zip;
        super::packed::pruning(sel, input, &name, data, kind, &opts.prune)?;
    }
    let mut rep = PathReport::new(&name, data, meta).package();
    let mut budget = Budget::new(data.len() as u64, opts.prune.max_uncompressed);
    // Pass 1: prune each ELF member into a temporary file.
    let mut members = prune_members(sel, opts, input, data, &mut zin, &mut rep, &mut budget)?;
    let mut wrong =
        |w: &super::tamper::Wrong<'_>| super::tamper::settle(opts, input, &name, w, &mut rep);
    let (read, removed) = (&members.read, &members.removed);
    verify::records(
        input,
        data,
        &mut zin,
        read,
        removed,
        &mut budget,
        &mut wrong,
    )?;
    rep.kept = merge(rep.kept);
    rep.dropped = merge(rep.dropped);
    let unchanged = members.pruned.is_empty() && members.removed.is_empty();
    if !unchanged && let Some(sig) = signature(&zin) {
        let why = format!(
            "it is signed ('{sig}'), and a pruned wheel's signature would not verify: remove \
             the signature files from it first"
        );
        return Err(PathError::said(PathErrorKind::Refused, input, &name, why));
    }
    let Some(dest) = opts.output_path(input)? else {
        return Ok(rep);
    };
    if unchanged && opts.destination == super::Destination::InPlace {
        rep.disk_after = Some(rep.disk_before);
        return Ok(rep);
    }
    let records = new_records(input, data, &mut zin, &members, &mut budget)?;
    // Pass 2: the new zip, members in their order.
    let through = write_through(opts, input, meta)?;
    let mut out = crate::prune::path::create(opts, &dest, data.len() as u64)
        .map_err(|e| PathError::write(&dest, e))?;
    let file = out
        .temp_file()
        .ok_or_else(|| PathError::write(&dest, None))?;
    write_wheel(input, &mut zin, &mut members, &records, file)?;
    finish(opts, out, meta, &dest, &mut rep, through)?;
    rep.package_written();
    Ok(rep)
}

/// The members of a wheel that change.
#[derive(Default)]
struct Members {
    /// Those pruned, by index.
    pruned: BTreeMap<usize, PrunedMember>,
    /// Those removed whole (device code alone that the rules drop all
    /// of), by index: their names.
    removed: BTreeMap<usize, String>,
    /// Every member read (whole, or to its end to check its CRC-32), by
    /// name: its size and SHA-256, for its RECORD rows to be checked
    /// ([`verify::records`]).
    read: BTreeMap<String, verify::Seen>,
}

/// Prunes each ELF, PE, static-archive or bare-container member of the
/// wheel `zin` (the file `input`, whose bytes are `data`) into a
/// temporary file, noting what it did in `rep` (the linked members
/// rewritten in place rather than shrunk, and why, in its `not_shrunk`;
/// the members removed whole in its `removed`) and inflating within
/// `budget`; returns the members pruned and removed.
fn prune_members<'a>(
    sel: &Selection,
    opts: &PathOptions,
    input: &Path,
    data: &'a [u8],
    zin: &mut Zip<'a>,
    rep: &mut PathReport,
    budget: &mut Budget,
) -> Result<Members, PathError> {
    let name = crate::files::shown(input);
    let scratch = |e| PathError::io(PathErrorKind::Io, input, e);
    let mut changes = Members::default();
    // The wheel's device code, all members together.
    let mut all = Pruning::default();
    // Each linked member rewritten in place rather than shrunk, and why.
    let mut not_shrunk = Vec::new();
    let each = Pruning::member_options(&opts.prune);
    for i in 0..zin.len() {
        if by_name(sel, opts, input, zin, i, rep, &mut changes)? {
            continue;
        }
        let Some((member, kind)) = host_member(input, data, zin, i, budget, &mut changes.read)?
        else {
            continue;
        };
        let mname = zin
            .name_for_index(i)
            .and_then(Result::ok)
            .unwrap_or_default();
        let full = format!("{name}!/{mname}");
        let p = match Pruning::of(
            sel,
            input,
            &full,
            (member.bytes(), kind),
            &each,
            opts.keep_files,
        ) {
            Ok(p) => p,
            // Left as it is stored, and named; the rest is pruned.
            Err(e) if e.refused() && !opts.strict => {
                rep.members_refused.push(e.chain());
                continue;
            }
            Err(e) => return Err(e),
        };
        if let Some(why) = &p.not_shrunk {
            not_shrunk.push(format!("'{mname}': {why}"));
        }
        all.add_device(&p);
        rep.kept.extend(p.kept);
        rep.dropped.extend(p.dropped);
        if p.remove.is_some() {
            let bytes = member.bytes().len() as u64;
            rep.removed.push(RemovedFile::whole(full, bytes));
            rep.freed += bytes;
            changes.removed.insert(i, mname.into_owned());
            continue;
        }
        let Some(new_member) = p.output else {
            continue;
        };
        rep.emptied += p.emptied;
        rep.containers_rewritten += p.rewritten;
        rep.freed += p.freed;
        let mut hasher = Hashing {
            out: std::io::BufWriter::with_capacity(1 << 20, tempfile::tempfile().map_err(scratch)?),
            sha: Sha256::new(),
            n: 0,
        };
        new_member
            .write_to(&mut hasher, &[member.bytes()])
            .map_err(scratch)?;
        let Hashing { out, n, sha } = hasher;
        let file = out.into_inner().map_err(|e| scratch(e.into_error()))?;
        let sha = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha.finalize());
        let mname = mname.into_owned();
        changes.pruned.insert(
            i,
            PrunedMember {
                name: mname,
                file,
                size: n,
                sha,
            },
        );
    }
    all.check_device_left(input, &name, &opts.prune)?;
    if !not_shrunk.is_empty() {
        rep.not_shrunk = Some(not_shrunk.join("; "));
    }
    Ok(changes)
}

/// With member `i` of the wheel `zin` (the file `input`): when it is a
/// library's per-GPU file whose GPU the rules drop
/// ([`super::companion`]), it goes, unread, and is reported in `rep`
/// (a directory entry of such files goes with them, unreported); whether
/// it was so. [`PathOptions::keep_files`] keeps them.
fn by_name(
    sel: &Selection,
    opts: &PathOptions,
    input: &Path,
    zin: &mut Zip<'_>,
    i: usize,
    rep: &mut PathReport,
    changes: &mut Members,
) -> Result<bool, PathError> {
    if opts.keep_files {
        return Ok(false);
    }
    let f = zin.by_index_raw(i).map_err(|e| PathError::zip(input, e))?;
    let mname = f.name().map_err(|e| PathError::zip(input, e))?.into_owned();
    let Some(c) = super::companion::dropped(sel.by(), &mname) else {
        return Ok(false);
    };
    if !f.is_dir() {
        let full = format!("{}!/{mname}", crate::files::shown(input));
        rep.removed.push(RemovedFile::by_name(full, f.size(), &c));
        rep.freed += f.size();
    }
    changes.removed.insert(i, mname);
    Ok(true)
}

/// Member `i` of the wheel `zin` (the file `path`, whose bytes are
/// `data`) when it is an ELF file, a Windows PE image (a DLL or `.pyd`), a
/// static archive (`!<arch>`; a thin archive holds no member's bytes) or a
/// package (a tar archive, a compressed file, a zip: looked through by
/// [`Pruning::of`]), its bytes read within `budget`; `None` for any other
/// member. A member that cannot be inflated (a compression method not
/// read, corrupt data) is an error: what it holds is not known. Every
/// member's bytes pass here, read whole or to check their CRC-32: their
/// size and SHA-256 go to `seen`, for their RECORD rows to be checked.
fn host_member<'a>(
    path: &Path,
    data: &'a [u8],
    zin: &mut Zip<'a>,
    i: usize,
    budget: &mut Budget,
    seen: &mut BTreeMap<String, verify::Seen>,
) -> Result<Option<(Member<'a>, Option<object::FileKind>)>, PathError> {
    let bad = |e| PathError::zip(path, e);
    let mut f = zin.by_index(i).map_err(bad)?;
    if f.is_dir() {
        return Ok(None);
    }
    let mname = f.name().map_err(bad)?.into_owned();
    let size = f.size();
    let stored_as_is = f.compression() == zip::CompressionMethod::Stored && !f.encrypted();
    let whole = |b: &[u8]| (b.len() as u64, Sha256::digest(b).into());
    if size < 64 {
        // Too small to read, but checked against its CRC-32 as any other.
        let sum = match stored_as_is {
            true => whole(stored(path, &mname, data, &f)?),
            false => verify::rest(path, &mname, &[], &mut f, size, budget)?,
        };
        seen.insert(mname, sum);
        return Ok(None);
    }
    // Whether the member is one of those, with its format when that was
    // read to tell (a PE image), for its prune not to read it again.
    let host = |b: &[u8]| {
        let known = b.starts_with(b"\x7fELF")
            || b.starts_with(crate::host::ar::MAGIC)
            || crate::package::detect(b).is_some()
            || Magic::at_start(b).is_some()
            || crate::scan::unread_format(b).is_some();
        match known {
            true => Some(None),
            false => crate::host::linked::facts::pe::pe_kind(b).map(Some),
        }
    };
    if stored_as_is {
        let bytes = stored(path, &mname, data, &f)?;
        seen.insert(mname, whole(bytes));
        return Ok(host(bytes).map(|kind| (Member::Stored(bytes), kind)));
    }
    // A tar header's block, and as far as the magic of a format not read
    // lies: enough to tell every kind above.
    let reach = crate::scan::UNREAD_REACH.max(512);
    let mut head = Vec::with_capacity(reach);
    (&mut f)
        .take(reach as u64)
        .read_to_end(&mut head)
        .map_err(|e| PathError::member(path, &mname, "cannot be inflated", e))?;
    let maybe = head.starts_with(b"\x7fELF")
        || head.starts_with(&crate::host::ar::MAGIC[..4])
        || head.starts_with(b"MZ")
        || crate::package::detect(&head).is_some()
        || Magic::at_start(&head).is_some()
        || crate::scan::unread_format(&head).is_some();
    if !maybe {
        // Not read, but inflated to its end, where its CRC-32 is checked:
        // a member `check` finds damaged is never copied as it is.
        let sum = verify::rest(path, &mname, &head, &mut f, size, budget)?;
        seen.insert(mname, sum);
        return Ok(None);
    }
    budget.take(path, &mname, size)?;
    let member = inflate(path, &mname, &head, &mut f, size)?;
    seen.insert(mname, whole(member.bytes()));
    // A file that starts as a DOS program is a PE image only if its
    // headers say so.
    Ok(host(member.bytes()).map(|kind| (Member::Inflated(member), kind)))
}

/// The first signature of a RECORD in `zin` (`….dist-info/RECORD.jws` or
/// `RECORD.p7s`), if it has one.
fn signature(zin: &Zip<'_>) -> Option<String> {
    (0..zin.len())
        .filter_map(|i| zin.name_for_index(i).and_then(Result::ok))
        .find(|n| n.ends_with(".dist-info/RECORD.jws") || n.ends_with(".dist-info/RECORD.p7s"))
        .map(std::borrow::Cow::into_owned)
}

/// The new contents of each RECORD (`….dist-info/RECORD`) of the wheel
/// `zin` (the file `path`, whose bytes are `data`) that names a member
/// pruned or removed (`members`), by index; each read within `budget`. A
/// RECORD removed is not rewritten.
fn new_records<'a>(
    path: &Path,
    data: &'a [u8],
    zin: &mut Zip<'a>,
    members: &Members,
    budget: &mut Budget,
) -> Result<BTreeMap<usize, Vec<u8>>, PathError> {
    let bad = |e| PathError::zip(path, e);
    let mut out = BTreeMap::new();
    if members.pruned.is_empty() && members.removed.is_empty() {
        return Ok(out);
    }
    let mut changed: BTreeMap<&str, Change<'_>> = members
        .pruned
        .values()
        .map(|m| (m.name.as_str(), Change::Rewritten(m.size, m.sha.as_str())))
        .collect();
    changed.extend(
        members
            .removed
            .values()
            .map(|n| (n.as_str(), Change::Removed)),
    );
    for i in 0..zin.len() {
        let mut f = zin.by_index(i).map_err(bad)?;
        let rname = f.name().map_err(bad)?.into_owned();
        if f.is_dir() || !rname.ends_with(".dist-info/RECORD") || members.removed.contains_key(&i) {
            continue;
        }
        let size = f.size();
        let text = if f.compression() == zip::CompressionMethod::Stored && !f.encrypted() {
            Member::Stored(stored(path, &rname, data, &f)?)
        } else {
            budget.take(path, &rname, size)?;
            Member::Inflated(inflate(path, &rname, &[], &mut f, size)?)
        };
        let new = new_record_with(text.bytes(), &changed)
            .map_err(|e| PathError::member(path, &rname, "cannot be read as CSV", e))?;
        if let Some(new) = new {
            out.insert(i, new);
        }
    }
    Ok(out)
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

/// A member pruned into a temporary file.
struct PrunedMember {
    /// Its name in the wheel.
    name: String,
    /// The temporary file.
    file: std::fs::File,
    /// Its size.
    size: u64,
    /// Its SHA-256, as a RECORD gives it (unpadded URL-safe base64).
    sha: String,
}

/// Writes the wheel `zin` (the file `path`) to `file`, members in their
/// order: those pruned (`members`) from their temporary files (with
/// their own compression method and mode), the RECORDs in `records` with
/// their new contents, every other member copied as it is stored, but
/// for those removed.
fn write_wheel(
    path: &Path,
    zin: &mut Zip<'_>,
    members: &mut Members,
    records: &BTreeMap<usize, Vec<u8>>,
    file: &std::fs::File,
) -> Result<(), PathError> {
    let bad = |e| PathError::zip(path, e);
    let bare = |e| PathError::io(PathErrorKind::Write, path, e);
    let mut zout = zip::ZipWriter::new(file);
    for i in 0..zin.len() {
        if members.removed.contains_key(&i) {
            continue;
        }
        let f = zin.by_index_raw(i).map_err(bad)?;
        let mut record = records.get(&i).map(Vec::as_slice);
        let new: Option<(&mut dyn Read, u64)> = match (members.pruned.get_mut(&i), &mut record) {
            (Some(m), _) => {
                m.file.seek(std::io::SeekFrom::Start(0)).map_err(bare)?;
                Some((&mut m.file, m.size))
            }
            (None, Some(r)) => {
                let n = r.len() as u64;
                Some((r, n))
            }
            (None, None) => None,
        };
        let Some((from, n)) = new else {
            zout.raw_copy_file(f).map_err(bad)?;
            continue;
        };
        // A member is written with its method where the zip crate writes
        // it; an LZMA or deflate64 member (which it only reads) deflated.
        let method = match f.compression() {
            m @ (zip::CompressionMethod::Stored
            | zip::CompressionMethod::Deflated
            | zip::CompressionMethod::Bzip2) => m,
            _ => zip::CompressionMethod::Deflated,
        };
        let opts = same_header(&f)
            .compression_method(method)
            .large_file(n >= u64::from(u32::MAX));
        let mname = f.name().map_err(bad)?.into_owned();
        drop(f);
        zout.start_file(mname, opts).map_err(bad)?;
        std::io::copy(from, &mut zout).map_err(bare)?;
    }
    zout.finish().map_err(bad)?;
    Ok(())
}

/// The options that write a member rewritten with the header fields of
/// `f`, the member it replaces: its date and time, its external attributes
/// (the mode, or a Windows member's DOS attributes) and its host system
/// (in "version made by"). A date the zip crate cannot read (before 1980,
/// a day 0) is written as 1980-01-01, and a host system it does not know
/// as 255.
pub(super) fn same_header<R: Read>(f: &zip::read::ZipFile<'_, R>) -> zip::write::SimpleFileOptions {
    let opts = zip::write::SimpleFileOptions::default()
        .system(f.system())
        .external_attributes(f.external_attributes());
    match f.last_modified() {
        Some(t) => opts.last_modified_time(t),
        None => opts,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_budget_is_taken_before_inflating_and_named_in_the_error() {
        let mut b = Budget::new(1_536_000, None);
        assert_eq!(b.left, 1_572_864_000);
        let x = Path::new("x.whl");
        b.take(x, "pkg/a.so", 1_000).unwrap();
        let e = b.take(x, "pkg/libbig.so", 1_610_612_800).unwrap_err();
        assert_eq!(
            e.to_string(),
            "'x.whl': member 'pkg/libbig.so' inflates to 1610612800 bytes, more than the \
             1572863000 left of the decompression budget (1024 times the file's size; \
             --max-uncompressed sets it)"
        );
        // Nothing was taken by the refusal.
        assert_eq!(b.left, 1_572_863_000);
        assert!(Budget::new(10, None).why.starts_with("128M"));
        assert!(Budget::new(1 << 40, None).why.starts_with("16G"));
        let mut given = Budget::new(1 << 40, Some(100));
        let e = given.take(x, "m", 101).unwrap_err().to_string();
        assert!(e.ends_with("the 100 left of the decompression budget (--max-uncompressed)"));
    }

    /// A zip of one deflated member `m.so`: `bytes`.
    fn zip_of(bytes: &[u8]) -> Vec<u8> {
        let mut z = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        z.start_file("m.so", opts).unwrap();
        z.write_all(bytes).unwrap();
        z.finish().unwrap().into_inner()
    }

    /// The ELF member of the wheel `data`: its bytes, or the error.
    fn member_of(data: &[u8], budget: &mut Budget) -> Result<Vec<u8>, String> {
        let mut zin = zip::ZipArchive::new(std::io::Cursor::new(data)).unwrap();
        host_member(
            Path::new("x.whl"),
            data,
            &mut zin,
            0,
            budget,
            &mut BTreeMap::new(),
        )
        .map(|m| m.unwrap().0.bytes().to_vec())
        .map_err(|e| chain(&e))
    }

    /// `e` and its causes joined by ": ".
    fn chain(e: &dyn std::error::Error) -> String {
        let mut parts = vec![e.to_string()];
        let mut cause = e.source();
        while let Some(c) = cause {
            parts.push(c.to_string());
            cause = c.source();
        }
        parts.join(": ")
    }

    /// `data` with the uncompressed size of its one member, in the local
    /// header and in the central directory, set to `size`.
    fn declaring(data: &[u8], size: u32) -> Vec<u8> {
        let mut d = data.to_vec();
        d[22..26].copy_from_slice(&size.to_le_bytes());
        let cd = d.windows(4).rposition(|w| w == b"PK\x01\x02").unwrap();
        d[cd + 24..cd + 28].copy_from_slice(&size.to_le_bytes());
        d
    }

    #[test]
    fn members_inflate_to_their_declared_size_within_the_budget() {
        let mut elf = b"\x7fELF".to_vec();
        elf.resize(1000, 7);
        let data = zip_of(&elf);
        let mut b = Budget::new(0, Some(2500));
        assert_eq!(member_of(&data, &mut b).unwrap(), elf);
        assert_eq!(member_of(&data, &mut b).unwrap(), elf);
        assert_eq!(b.left, 500);
        let e = member_of(&data, &mut b).unwrap_err();
        assert!(
            e.contains("member 'm.so' inflates to 1000 bytes, more than the 500 left"),
            "{e}"
        );
        // Declaring fewer bytes than it holds, or more.
        let mut b = Budget::new(0, None);
        let e = member_of(&declaring(&data, 900), &mut b).unwrap_err();
        assert!(e.starts_with("'x.whl': member 'm.so'"), "{e}");
        assert!(e.contains("more") || e.contains("larger"), "{e}");
        let e = member_of(&declaring(&data, 1100), &mut b).unwrap_err();
        assert_eq!(
            e,
            "'x.whl': member 'm.so' inflates to 1000 bytes, fewer than the 1100 it declares"
        );
    }
}
