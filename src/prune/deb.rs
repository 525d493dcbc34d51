//! Pruning a Debian package (`.deb`): every file of its `data.tar` pruned
//! as if it were named alone, the archive compressed again with its own
//! method, and the `md5sums` of its control archive given the new hashes,
//! so that `dpkg -i` installs it and `dpkg --verify` finds every file as
//! the package says.
//!
//! A `.deb` is an `ar` archive: `debian-binary`, `control.tar[.gz|.xz|.zst]`
//! (the package's metadata, `md5sums` among it), `data.tar[…]` (the files),
//! in that order (`deb(5)`). The output keeps every member in its order
//! with its header's fields (name, time, owner, mode); only the sizes of
//! the members rewritten change. Of the tar archives, only the headers of
//! the files rewritten change, in their size and checksum
//! ([`tar`]); every other block is copied as it was read.
//!
//! `data.tar` is streamed: inflated, walked and compressed again into a
//! scratch file beside the output, one file of it in memory (or, past
//! 64 MiB, in a temporary file) at a time, within the decompression
//! budget a wheel gets. `control.tar` is rewritten only when `md5sums`
//! changes, and the members not rewritten are copied file to file.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io::{BufWriter, Read as _, Seek as _, Write};
use std::path::Path;

use md5::Digest as _;

use super::Selection;
use super::budget::{Budget, inflate};
use super::member::{Became, Hashing, Member, write_as_it_was, write_pruned};
use super::path::{
    PathError, PathErrorKind, PathOptions, PathReport, Pruning, RemovedFile, finish, merge,
    write_through,
};
use super::tamper::{Wrong, settle};
use crate::files::{Input, Output, SPOOL_IN_MEMORY, Sink};
use crate::host::ar;
use crate::package::{self, Compression};

use crate::package::deb::{compress, control, md5sums};
use crate::package::tar::walk::{Fault, Header, Walk};

/// Files smaller than this hold no container worth reading (as for wheels).
const MIN_SIZE: u64 = 64;

/// What the pruning of one package works with.
struct Cx<'a> {
    sel: &'a Selection,
    opts: &'a PathOptions,
    /// The package.
    input: &'a Path,
    /// Its name, for messages.
    name: String,
    /// Why the decompression budget is what it is, for messages.
    why: &'static str,
    /// The package's conffiles (paths as `md5sums` gives them): never
    /// removed.
    conffiles: BTreeSet<Vec<u8>>,
    /// The MD5 `md5sums` gives each file (lowercase hexadecimal), by
    /// path: each file prune reads whole is checked against it
    /// ([`verify`]).
    md5sums: Md5s,
}

impl Cx<'_> {
    /// The error for `fault`, met in the member `member` of the package.
    fn fault(&self, member: &str, fault: Fault) -> PathError {
        match fault {
            Fault::Read(e) => PathError::member(self.input, member, "cannot be read", e),
            // The new package cannot be written (a full disk): its name.
            Fault::Write(e) => {
                let out = self.opts.output_path(self.input).ok().flatten();
                PathError::write(out.as_deref().unwrap_or(self.input), e)
            }
            Fault::Damaged(why) => self.said(format!("member '{member}': {why}")),
            Fault::Budget(limit) => self.said(format!(
                "member '{member}' inflates to more than the {limit} bytes left of the \
                 decompression budget ({})",
                self.why
            )),
        }
    }

    /// `'PACKAGE': WHY`, about what it holds.
    fn said(&self, why: String) -> PathError {
        PathError::said(PathErrorKind::Content, self.input, &self.name, why)
    }

    /// The control file `which` of the member `member`, of `size` bytes,
    /// is more than prune reads into memory: refused, never taken as
    /// empty.
    fn too_large(&self, member: &str, which: &str, size: u64) -> PathError {
        self.said(format!(
            "member '{member}': its {which} holds {size} bytes, more than the \
             {SPOOL_IN_MEMORY} read"
        ))
    }

    /// The file `full` of the package refused for `why`: noted in `w`, to
    /// be left as it was, or with [`PathOptions::strict`] the error.
    fn refuse_member(&self, w: &mut Walked, full: &str, why: &str) -> Result<(), PathError> {
        let e = PathError::said(PathErrorKind::Refused, self.input, full, why);
        if self.opts.strict {
            return Err(e);
        }
        w.refused.push(e.chain());
        Ok(())
    }
}

/// A member's name without the `/` GNU `ar` ends names with.
fn member_name<'a>(e: &ar::RawEntry<'a>) -> &'a [u8] {
    e.name.strip_suffix(b"/").unwrap_or(e.name)
}

/// A member's bytes in the package `data`.
fn member_bytes<'a>(data: &'a [u8], e: &ar::RawEntry<'_>) -> &'a [u8] {
    let start = usize::try_from(e.data).unwrap_or(usize::MAX);
    let end = usize::try_from(e.data.saturating_add(e.size)).unwrap_or(usize::MAX);
    data.get(start..end).unwrap_or_default()
}

/// The compression of a member holding a tar archive, by its first bytes.
fn method(bytes: &[u8]) -> Option<Compression> {
    if package::is_tar_header(bytes) {
        return Some(Compression::None);
    }
    package::compression_of(bytes)
}

/// A Debian package, `input` with `meta`, mapped as `file`: each file of
/// its `data.tar` pruned, the package written where `opts` says. A file
/// of it that cannot be pruned for a refusal stays as it was and is
/// listed in [`PathReport::members_refused`]; damaged data anywhere, or a
/// refusal of the whole (no device image left without
/// [`Options::allow_empty`](super::Options::allow_empty); a signed package
/// that would change), is an error and nothing is written.
pub(crate) fn prune(
    sel: &Selection,
    opts: &PathOptions,
    input: &Path,
    meta: &std::fs::Metadata,
    file: &Input,
) -> Result<PathReport, PathError> {
    let data = file.bytes();
    let mut budget = Budget::new(data.len() as u64, opts.prune.max_uncompressed);
    let mut cx = Cx {
        sel,
        opts,
        input,
        name: crate::files::shown(input).into_owned(),
        why: budget.why,
        conffiles: BTreeSet::new(),
        md5sums: BTreeMap::new(),
    };
    let entries = ar::entries(data).map_err(|e| cx.said(e.to_string()))?;
    let find = |prefix: &[u8]| {
        entries
            .iter()
            .position(|e| member_name(e).starts_with(prefix))
    };
    let data_at = find(b"data.tar").ok_or_else(|| cx.said("it has no data.tar member".into()))?;
    if let Some(at) = find(b"control.tar") {
        (cx.conffiles, cx.md5sums) = control_lists(&cx, &entries[at], data, &budget)?;
    }
    let mut rep = PathReport::new(&cx.name, data, meta).package();
    let dest = opts.output_path(input)?;
    let mut out = match &dest {
        Some(d) => Some(
            crate::prune::path::create(opts, d, data.len() as u64)
                .map_err(|e| PathError::write(d, e))?,
        ),
        None => None,
    };
    // `data.tar` is read once, front to back: its pages are given back
    // as the walk goes (a package of hundreds of MB would stay mapped).
    let walked = file.releasing(|| {
        prune_data(
            &cx,
            &entries[data_at],
            data,
            out.as_ref(),
            &mut budget,
            &mut rep,
        )
    })?;
    walked.all.check_device_left(input, &cx.name, &opts.prune)?;
    rep.kept = merge(std::mem::take(&mut rep.kept));
    rep.dropped = merge(std::mem::take(&mut rep.dropped));
    rep.members_refused = walked.refused;
    let unchanged = walked.changed.is_empty() && walked.gone.is_empty();
    if !unchanged && let Some(sig) = entries.iter().find(|e| member_name(e).starts_with(b"_gpg")) {
        let why = format!(
            "it is signed ('{}'), and a pruned package's signature would not verify: remove \
             the signature members from it first",
            String::from_utf8_lossy(member_name(sig))
        );
        return Err(PathError::said(
            PathErrorKind::Refused,
            input,
            &cx.name,
            why,
        ));
    }
    let (Some(dest), Some(mut out)) = (dest, out.take()) else {
        return Ok(rep);
    };
    if unchanged && opts.destination == super::Destination::InPlace {
        rep.disk_after = Some(rep.disk_before);
        return Ok(rep);
    }
    let mut bodies: BTreeMap<usize, New> = BTreeMap::new();
    if let Some(new) = walked.data {
        bodies.insert(data_at, new);
        let changed = with_links(walked.changed, &walked.links);
        let sums = Sums {
            changed: &changed,
            gone: &walked.gone,
            kib_less: walked.kib_less,
        };
        if let Some(at) = find(b"control.tar")
            && let Some(control) = new_control(&cx, &entries[at], data, &sums, &mut budget)?
        {
            bodies.insert(at, New::Bytes(control));
        }
    }
    let through = write_through(opts, input, meta)?;
    write_package(file, &entries, &mut bodies, &mut out).map_err(|e| PathError::write(&dest, e))?;
    finish(opts, out, meta, &dest, &mut rep, through)?;
    rep.package_written();
    Ok(rep)
}

/// A member's new bytes.
enum New {
    /// In memory.
    Bytes(Vec<u8>),
    /// The whole of a scratch file.
    File(File),
}

/// The MD5 `md5sums` gives each file (lowercase hexadecimal), by path.
type Md5s = BTreeMap<Vec<u8>, String>;

/// What the walk of `data.tar` did.
#[derive(Default)]
struct Walked {
    /// The new MD5 of each file rewritten, by path (as `md5sums` gives it).
    changed: BTreeMap<Vec<u8>, [u8; 16]>,
    /// Each hard link's path and the path of the file it names.
    links: Vec<(Vec<u8>, Vec<u8>)>,
    /// The paths of the files removed (device code alone that the rules
    /// drop all of), and of the hard links to them, removed with them.
    gone: BTreeSet<Vec<u8>>,
    /// The KiB an install no longer takes, as `dpkg-gencontrol` counts
    /// them ([`control::kib`]), for `Installed-Size`.
    kib_less: u64,
    /// The refusals of files left as they were, as messages.
    refused: Vec<String>,
    /// The device code of every file, together.
    all: Pruning,
    /// The new `data.tar`, compressed; `None` in a dry run, or when
    /// nothing changed.
    data: Option<New>,
}

/// `changed` with each hard link to a changed file added under its own
/// path (`md5sums` lists every name of a file).
fn with_links(
    mut changed: BTreeMap<Vec<u8>, [u8; 16]>,
    links: &[(Vec<u8>, Vec<u8>)],
) -> BTreeMap<Vec<u8>, [u8; 16]> {
    for (path, target) in links {
        if let Some(md5) = changed.get(target).copied() {
            changed.insert(path.clone(), md5);
        }
    }
    changed
}

/// Walks the package's `data.tar` (the member `e` of `data`), pruning each
/// file, into a scratch file beside `out` compressed as it was (into
/// nothing in a dry run, `out` being `None`).
fn prune_data(
    cx: &Cx<'_>,
    e: &ar::RawEntry<'_>,
    data: &[u8],
    out: Option<&Output>,
    budget: &mut Budget,
    rep: &mut PathReport,
) -> Result<Walked, PathError> {
    let member = String::from_utf8_lossy(member_name(e)).into_owned();
    let bytes = member_bytes(data, e);
    let c = method(bytes).ok_or_else(|| {
        let why = format!(
            "its member '{member}' is neither a tar archive nor compressed with gzip, xz or \
             zstd: prune does not rewrite it"
        );
        PathError::said(PathErrorKind::Refused, cx.input, &cx.name, why)
    })?;
    let reader = package::decoder(bytes, c)
        .map_err(|e| PathError::member(cx.input, &member, "cannot be read", e))?;
    let scratch = |e| PathError::io(PathErrorKind::Io, cx.input, e);
    let Some(out) = out else {
        let mut walk = Walk::new(reader, std::io::sink(), budget.left);
        let walked = walk_data(cx, &mut walk, &member, rep)?;
        budget.left = budget.left.saturating_sub(walk.read());
        return Ok(walked);
    };
    let file = match out.scratch_file() {
        Some(f) => f,
        None => tempfile::tempfile(),
    }
    .map_err(scratch)?;
    let threads = cx.opts.prune.threads();
    let encoder =
        compress::encoder(c, BufWriter::with_capacity(1 << 20, file), threads).map_err(scratch)?;
    let mut walk = Walk::new(reader, encoder, budget.left);
    let mut walked = walk_data(cx, &mut walk, &member, rep)?;
    budget.left = budget.left.saturating_sub(walk.read());
    if walked.changed.is_empty() && walked.gone.is_empty() {
        return Ok(walked);
    }
    let file = walk
        .into_inner()
        .finish()
        .and_then(|w| w.into_inner().map_err(|e| e.into_error()))
        .map_err(scratch)?;
    walked.data = Some(New::File(file));
    Ok(walked)
}

/// Walks `data.tar`: each regular file whose first bytes are of a format
/// prune reads is pruned as if named alone, and written with its new size
/// when it changes, or left out (with its hard links, which follow it in
/// the archive) when it is device code alone that the rules drop all of;
/// everything else is copied.
fn walk_data<R: std::io::Read, W: Write>(
    cx: &Cx<'_>,
    walk: &mut Walk<R, W>,
    member: &str,
    rep: &mut PathReport,
) -> Result<Walked, PathError> {
    let fault = |f| cx.fault(member, f);
    let mut w = Walked::default();
    let mut paths = package::TarPaths::default();
    while let Some(h) = walk.next().map_err(fault)? {
        if let Some(why) = paths.note(&h.path, h.kind() == b'5') {
            return Err(fault(Fault::Damaged(why)));
        }
        if h.is_hard_link() {
            if w.gone.contains(&h.link) {
                // A name of a file removed: it goes too.
                w.gone.insert(h.path.clone());
                continue;
            }
            w.links.push((h.path.clone(), h.link.clone()));
        }
        if by_name(cx, walk, &h, &mut w, rep, member)? {
            continue;
        }
        if !(h.is_file() || h.is_sparse()) {
            walk.copy(&h).map_err(fault)?;
            continue;
        }
        let path = h.path_lossy();
        let head = super::file::read_head(&mut walk.body(), h.size)
            .map_err(|e| PathError::member(cx.input, &path, "cannot be read", e))?;
        let full = format!("{}!/{path}", cx.name);
        let readable = match h.size < MIN_SIZE {
            true => None,
            false => super::file::readable(&head),
        };
        if h.is_sparse() {
            if readable.is_some() {
                let why = "it is stored sparse (GNU tar's 'S' entry), which prune does not \
                           rewrite";
                cx.refuse_member(&mut w, &full, why)?;
            }
            // Its data is the file's without its holes: not what
            // `md5sums` hashes, and copied as it is.
            walk.copy_header(&h).map_err(fault)?;
            walk.out()
                .write_all(&head)
                .map_err(|e| fault(Fault::Write(e)))?;
            walk.pass_body().map_err(fault)?;
            continue;
        }
        if readable.is_none() {
            // Copied as it is, and checked against its row on the way: a
            // package whose record lies is never written anew.
            let mut md5 = md5::Md5::new();
            walk.copy_seen(&h, &head, &mut |b| md5.update(b))
                .map_err(fault)?;
            verify(cx, &h.path, &md5.finalize().into(), rep)?;
            continue;
        }
        let file = inflate(cx.input, &path, &head, &mut walk.body(), h.size)?;
        walk.skip_body().map_err(fault)?;
        verify(cx, &h.path, &md5::Md5::digest(file.bytes()).into(), rep)?;
        let step = Member {
            keep: cx.conffiles.contains(&h.path).then_some(CONFFILE),
            ..Member::new(cx.sel, cx.opts, cx.input, &full, &fault)
        };
        let found = (&mut w.refused, &mut w.all);
        let new = match step.prune(walk, &h, (&file, readable.flatten()), found, rep)? {
            Became::AsItWas => continue,
            Became::Removed => {
                w.kib_less += control::kib(h.size);
                w.gone.insert(h.path.clone());
                continue;
            }
            Became::Rewritten(new) => new,
        };
        w.kib_less += control::kib(h.size).saturating_sub(control::kib(new.size()));
        walk.write_header(&h, new.size()).map_err(fault)?;
        let mut hashing = Hashing {
            out: walk.out(),
            digest: md5::Md5::new(),
        };
        write_pruned(&new, &file, &mut hashing).map_err(|e| fault(Fault::Write(e)))?;
        let md5 = hashing.digest.finalize().into();
        walk.pad(new.size()).map_err(fault)?;
        w.changed.insert(h.path.clone(), md5);
    }
    Ok(w)
}

/// Why a conffile that would be removed stays.
const CONFFILE: &str = "it is a conffile of the package (dpkg keeps a user's changes to it): \
                        prune never removes one";

/// With the entry `h` of `data.tar` read: when it is a library's per-GPU
/// file whose GPU the rules drop ([`super::companion`]), a regular file,
/// it is left out unread (its hard links follow it) and reported removed,
/// and a directory of such files is left out with it; a conffile is
/// refused instead. Whether it was handled so.
fn by_name<R: std::io::Read, W: Write>(
    cx: &Cx<'_>,
    walk: &mut Walk<R, W>,
    h: &Header,
    w: &mut Walked,
    rep: &mut PathReport,
    member: &str,
) -> Result<bool, PathError> {
    let fault = |f| cx.fault(member, f);
    let directory = h.kind() == b'5';
    if cx.opts.keep_files || !(h.is_file() || h.is_sparse() || directory) {
        return Ok(false);
    }
    let Some(c) = super::companion::dropped(cx.sel.by(), &h.path_lossy()) else {
        return Ok(false);
    };
    if directory {
        // Only a directory of per-GPU files (`library/gfx906/`) matches.
        w.kib_less += 1;
        walk.skip_body().map_err(fault)?;
        return Ok(true);
    }
    let full = format!("{}!/{}", cx.name, h.path_lossy());
    if cx.conffiles.contains(&h.path) {
        cx.refuse_member(w, &full, CONFFILE)?;
        if h.is_sparse() {
            walk.copy(h).map_err(fault)?;
            return Ok(true);
        }
        // Kept as it is: checked against its row as it passes.
        let mut md5 = md5::Md5::new();
        walk.copy_seen(h, &[], &mut |b| md5.update(b))
            .map_err(fault)?;
        verify(cx, &h.path, &md5.finalize().into(), rep)?;
        return Ok(true);
    }
    rep.removed.push(RemovedFile::by_name(full, h.size, &c));
    rep.freed += h.size;
    w.kib_less += control::kib(h.size);
    w.gone.insert(h.path.clone());
    walk.skip_body().map_err(fault)?;
    Ok(true)
}

/// Checks `md5`, the MD5 of the file `path` of `data.tar` (rewritten or
/// copied as it is), against its line of `md5sums`, if it has one: a line they do not match is settled by
/// [`settle`] (an error, or with
/// [`PathOptions::trust_bytes`] a line of `rep`).
fn verify(cx: &Cx<'_>, path: &[u8], md5: &[u8; 16], rep: &mut PathReport) -> Result<(), PathError> {
    let Some(said) = cx.md5sums.get(path) else {
        return Ok(());
    };
    let is = md5sums::hex(md5);
    if *said == is {
        return Ok(());
    }
    let path = String::from_utf8_lossy(path);
    let wrong = Wrong {
        record: "md5sums",
        path: &path,
        field: "MD5",
        said: said.clone(),
        is,
    };
    settle(cx.opts, cx.input, &cx.name, &wrong, rep)
}

/// The paths `conffiles` in the package's `control.tar` (the member `e`
/// of `data`) lists, as `md5sums` gives paths (no leading `/`), and the
/// MD5 `md5sums` gives each file ([`md5sums::parse`]); none when it has
/// none or the member is not read. Read within `budget`, which it leaves
/// as it was: the small archive is read again, and charged, when
/// `md5sums` changes.
fn control_lists(
    cx: &Cx<'_>,
    e: &ar::RawEntry<'_>,
    data: &[u8],
    budget: &Budget,
) -> Result<(BTreeSet<Vec<u8>>, Md5s), PathError> {
    let member = String::from_utf8_lossy(member_name(e)).into_owned();
    let bytes = member_bytes(data, e);
    let mut out = BTreeSet::new();
    let mut sums = BTreeMap::new();
    let Some(c) = method(bytes) else {
        return Ok((out, sums));
    };
    let fault = |f| cx.fault(&member, f);
    let reader = package::decoder(bytes, c)
        .map_err(|e| PathError::member(cx.input, &member, "cannot be read", e))?;
    let mut walk = Walk::new(reader, std::io::sink(), budget.left);
    while let Some(h) = walk.next().map_err(fault)? {
        let listed = h.path == b"conffiles" || h.path == b"md5sums";
        if !(h.is_file() && listed) {
            walk.copy(&h).map_err(fault)?;
            continue;
        }
        // A list too large to read is refused, never taken as empty: its
        // rows would go unchecked (`check` calls it damage too).
        if h.size > SPOOL_IN_MEMORY {
            return Err(cx.too_large(&member, &String::from_utf8_lossy(&h.path), h.size));
        }
        let mut text = Vec::new();
        walk.body()
            .read_to_end(&mut text)
            .map_err(|e| fault(Fault::Read(e)))?;
        walk.skip_body().map_err(fault)?;
        if h.path == b"md5sums" {
            sums = md5sums::parse(&text);
            continue;
        }
        for line in text.split(|&b| b == b'\n') {
            // `remove-on-upgrade /etc/x` names a conffile too.
            let path = line.rsplit(|&b| b == b' ').next().unwrap_or_default();
            let path = path.strip_suffix(b"\r").unwrap_or(path);
            let mut path = path.trim_ascii();
            while let Some(p) = path.strip_prefix(b"/") {
                path = p;
            }
            if !path.is_empty() {
                out.insert(path.to_vec());
            }
        }
    }
    Ok((out, sums))
}

/// What `md5sums` is to say of the files of `data.tar` that changed.
struct Sums<'a> {
    /// The new MD5 of each file rewritten (and of its hard links).
    changed: &'a BTreeMap<Vec<u8>, [u8; 16]>,
    /// The files removed (and their hard links): their lines go.
    gone: &'a BTreeSet<Vec<u8>>,
    /// The KiB `control`'s `Installed-Size` loses.
    kib_less: u64,
}

/// The package's `control.tar` (the member `e` of `data`) with the MD5 of
/// each file rewritten in its `md5sums` and the lines of the files
/// removed taken out, and `control`'s `Installed-Size` lowered by what
/// they no longer take (`sums`), compressed again as it was; `None` when
/// neither changes.
fn new_control(
    cx: &Cx<'_>,
    e: &ar::RawEntry<'_>,
    data: &[u8],
    sums: &Sums<'_>,
    budget: &mut Budget,
) -> Result<Option<Vec<u8>>, PathError> {
    let member = String::from_utf8_lossy(member_name(e)).into_owned();
    let bytes = member_bytes(data, e);
    let Some(c) = method(bytes) else {
        // Not read: dpkg will not install such a package anyway.
        return Ok(None);
    };
    let fault = |f| cx.fault(&member, f);
    let reader = package::decoder(bytes, c)
        .map_err(|e| PathError::member(cx.input, &member, "cannot be read", e))?;
    let encoder = compress::encoder(c, Vec::new(), 1)
        .map_err(|e| PathError::io(PathErrorKind::Io, cx.input, e))?;
    let mut walk = Walk::new(reader, encoder, budget.left);
    let mut rewritten = false;
    while let Some(h) = walk.next().map_err(fault)? {
        let which = std::str::from_utf8(&h.path).unwrap_or("");
        let read = which == "md5sums" || (which == "control" && sums.kib_less > 0);
        if !h.is_file() || h.size_in_pax || !read {
            walk.copy(&h).map_err(fault)?;
            continue;
        }
        if h.size > SPOOL_IN_MEMORY {
            return Err(cx.too_large(&member, which, h.size));
        }
        let mut text = Vec::new();
        walk.body()
            .read_to_end(&mut text)
            .map_err(|e| fault(Fault::Read(e)))?;
        if (text.len() as u64) < h.size {
            return Err(cx.said(format!("member '{member}': its {which} is cut short")));
        }
        walk.skip_body().map_err(fault)?;
        let new = match which {
            "control" => control::less_installed(&text, sums.kib_less),
            _ => md5sums::new_md5sums(&text, sums.changed, sums.gone),
        };
        match new {
            Some(new) => {
                rewritten = true;
                walk.write_header(&h, new.len() as u64).map_err(fault)?;
                walk.out()
                    .write_all(&new)
                    .map_err(|e| fault(Fault::Write(e)))?;
                walk.pad(new.len() as u64).map_err(fault)?;
            }
            None => write_as_it_was(&mut walk, &h, &Input::from_vec(text)).map_err(fault)?,
        }
    }
    budget.left = budget.left.saturating_sub(walk.read());
    if !rewritten {
        return Ok(None);
    }
    let new = walk
        .into_inner()
        .finish()
        .map_err(|e| PathError::io(PathErrorKind::Io, cx.input, e))?;
    Ok(Some(new))
}

/// Writes the package `file` (an `ar` archive of `entries`) to `out`:
/// its magic, then every member in its order, header and bytes as they
/// are, except that the members of `bodies` get those bytes and their
/// size in the header.
fn write_package(
    file: &Input,
    entries: &[ar::RawEntry<'_>],
    bodies: &mut BTreeMap<usize, New>,
    out: &mut Output,
) -> std::io::Result<()> {
    let data = file.bytes();
    out.write_all(&data[..crate::host::ar::MAGIC.len()])?;
    for (i, e) in entries.iter().enumerate() {
        let at = usize::try_from(e.header).map_err(std::io::Error::other)?;
        let mut header: [u8; 60] = data
            .get(at..at + 60)
            .and_then(|h| h.try_into().ok())
            .ok_or_else(|| std::io::Error::other("a member header lies outside the package"))?;
        let old = member_bytes(data, e);
        let size = match bodies.get_mut(&i) {
            None => e.size,
            Some(New::Bytes(b)) => b.len() as u64,
            Some(New::File(f)) => f.seek(std::io::SeekFrom::End(0))?,
        };
        let field = format!("{size:<10}");
        if field.len() > 10 {
            return Err(std::io::Error::other(format!(
                "a member of {size} bytes is too large for an ar header"
            )));
        }
        header[48..58].copy_from_slice(field.as_bytes());
        out.write_all(&header)?;
        match bodies.get_mut(&i) {
            None => file.copy_to(old, out)?,
            Some(New::Bytes(b)) => out.write_all(b)?,
            Some(New::File(f)) => {
                let dst = out
                    .file()
                    .ok_or_else(|| std::io::Error::other("no file to write to"))?;
                crate::files::copy_file_range_all(f, 0, size, dst)?;
            }
        }
        if size % 2 == 1 {
            // The byte that pads a member of odd size: the package's own
            // where it had one.
            let pad = match e.size % 2 {
                1 => data.get(at + 60 + old.len()).copied().unwrap_or(b'\n'),
                _ => b'\n',
            };
            out.write_all(&[pad])?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
