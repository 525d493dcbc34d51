//! One layer of an image rewritten as it streams: its blob read through
//! the decoder its media type names (its size and SHA-256 checked on the
//! way), its tar walked entry by entry into an uncompressed scratch file
//! (the format's [`crate::package::oci::rewrite`], asking [`Entries`] what
//! each entry becomes), and, when an entry changed, that tar compressed
//! again with the layer's own method into a new blob.
//!
//! An entry is rewritten only when the container sees it ([`Shadow`]:
//! the layers above read first): a library pruned as if named alone, a
//! per-GPU file whose GPU the rules drop left out. An entry that a layer
//! above hides is copied as it is, unless a layer above had the same
//! path removed, which would bring it to light: then it goes too. Every
//! other entry is copied block for block, metadata and order kept.

use std::collections::BTreeSet;
use std::fs::File;
use std::io::{BufWriter, Read, Seek as _, SeekFrom};
use std::path::Path;
use std::sync::Arc;

use sha2::{Digest as _, Sha256};

use super::super::Selection;
use super::super::budget::inflate;
use super::super::member::{Became, Member as Step, write_input, write_pruned};
use super::super::output::Output as NewFile;
use super::super::path::{PathError, PathErrorKind, PathOptions, PathReport, Pruning, RemovedFile};
use super::records::{Down, Fate, Found, MAX_RECORD, Sum};
use crate::files::Input;
pub(super) use crate::package::oci::layer::{
    Method, is_foreign, method, method_of_bytes, offsets_annotation, pack,
};
use crate::package::oci::rewrite::{self as package, Layer, Member};
use crate::package::oci::{Desc, Seen, Shadow};
use crate::package::tar::walk::Fault;
use crate::package::{self as packages, Decide, Hashing, Held, New};
use crate::prune::fan::Fan;

/// Files smaller than this hold no container worth reading.
const MIN_SIZE: u64 = 64;

/// What the rewrite of one layer works with.
pub(super) struct LayerCx<'a> {
    pub(super) sel: &'a Selection,
    pub(super) opts: &'a PathOptions,
    /// The layout.
    pub(super) input: &'a Path,
    /// The image's name for its files (`LAYOUT` or `LAYOUT:NAME`).
    pub(super) name: String,
    /// The layer, for messages (`sha256:… manifest: layers[1] (sha256:…)`).
    pub(super) place: String,
}

impl LayerCx<'_> {
    /// `'LAYOUT': PLACE: WHY`.
    pub(super) fn said(&self, why: &str) -> PathError {
        let shown = crate::files::shown(self.input).into_owned();
        PathError::said(
            PathErrorKind::Content,
            self.input,
            &shown,
            format!("{}: {why}", self.place),
        )
    }

    /// The error of a layer's rewrite.
    fn failed(&self, e: packages::Failed<package::Error, PathError>) -> PathError {
        match e {
            packages::Failed::Caller(e) => e,
            packages::Failed::Package(package::Error::Tar(f)) => self.fault(f),
            packages::Failed::Package(package::Error::Entry(why)) => self.said(&why),
        }
    }

    fn fault(&self, f: Fault) -> PathError {
        match f {
            Fault::Write(e) => PathError::io(PathErrorKind::Write, self.input, e),
            Fault::Read(e) => self.said(&format!("cannot be read as a tar archive: {e}")),
            Fault::Damaged(why) => self.said(&why),
            Fault::Budget(n) => self.said(&format!(
                "inflates to more than the {n} bytes left of the decompression budget \
                 (--max-uncompressed sets it)"
            )),
        }
    }
}

/// What the walk of one layer did.
#[derive(Default)]
pub(super) struct Walked {
    /// Whether an entry changed.
    pub(super) changed: bool,
    /// Paths removed (normalized): files, their hard links, directories.
    pub(super) gone: BTreeSet<String>,
    /// Files of the layer left as they were, prune refusing them.
    pub(super) refused: Vec<String>,
    /// The device code of every file.
    pub(super) all: Pruning,
    /// The files it changed and the records it holds, for the records.
    pub(super) records: Found,
}

/// A layer rewritten: its new tar, uncompressed, and its new diff_id.
pub(super) struct Rewritten {
    pub(super) walked: Walked,
    /// The SHA-256 of the old uncompressed tar.
    pub(super) old_diff: String,
    /// The SHA-256 of the new one.
    pub(super) new_diff: String,
    /// The new tar (`None` in a dry run).
    pub(super) tar: Option<File>,
}

/// What the layers above the one being rewritten did: what they hide
/// ([`Shadow`]), and the paths they lost to the prune.
#[derive(Default)]
pub(super) struct Above {
    pub(super) shadow: Shadow,
    pub(super) removed: BTreeSet<String>,
    /// What the records below need to know of the layers above.
    pub(super) records: Down,
}

/// Walks the layer whose blob `src` gives (compressed with `m`) into
/// the first of `scratch` (none in a dry run), the layers above it in
/// `above`; the second takes the tar again when records in it change
/// ([`super::records`]).
/// Checks the blob against `expect`'s size and digest, when there is one.
/// The blob is read and decompressed on a thread of its own
/// ([`crate::package::oci::layer::stream`]).
#[cfg(test)]
#[allow(clippy::too_many_arguments)]
pub(super) fn rewrite<S: Read + Send>(
    cx: &LayerCx<'_>,
    src: S,
    expect: Option<&Desc>,
    m: Method,
    scratch: Option<(File, File)>,
    above: &mut Above,
    rep: &mut PathReport,
    budget: &mut u64,
) -> Result<Rewritten, PathError> {
    let part = Part {
        cx,
        above,
        rep,
        scratch,
    };
    let (mut done, _) = rewrite_each(src, expect, m, vec![part], budget)?;
    done.pop()
        .ok_or_else(|| cx.said("it was written to no output"))
}

/// One output of a layer's rewrite: what decides it (a group's
/// selection, in `cx`), what the layers above did in it, its report, and
/// its two scratch files (none in a dry run), as [`rewrite`] takes them.
pub(super) struct Part<'a, 'c> {
    pub(super) cx: &'a LayerCx<'c>,
    pub(super) above: &'a mut Above,
    pub(super) rep: &'a mut PathReport,
    pub(super) scratch: Option<(File, File)>,
}

/// Walks the layer whose blob `src` gives (compressed with `m`, checked
/// against `expect`) once, into every one of `parts` (at least one),
/// each decided by prune's own decider of a layer's entries as
/// [`rewrite`] decides its one: what each output became, in their order,
/// and the per-GPU files met (with their GPUs).
pub(super) fn rewrite_each<S: Read + Send>(
    src: S,
    expect: Option<&Desc>,
    m: Method,
    parts: Vec<Part<'_, '_>>,
    budget: &mut u64,
) -> Result<(Vec<Rewritten>, Companions), PathError> {
    let Some(cx) = parts.first().map(|p| p.cx) else {
        return Ok((Vec::new(), Vec::new()));
    };
    let mut firsts = Vec::with_capacity(parts.len());
    let mut agains = Vec::with_capacity(parts.len());
    let mut each = Vec::with_capacity(parts.len());
    for p in parts {
        let (first, again) = p.scratch.map_or((None, None), |(f, a)| (Some(f), Some(a)));
        firsts.push(first);
        agains.push(again);
        each.push(Entries {
            cx: p.cx,
            above: p.above,
            rep: p.rep,
            w: Walked::default(),
        });
    }
    let mut d = Fan::new(each);
    let (decoded, outs, old) = package::rewrite(src, m, budget, &mut d, firsts);
    let decoded = decoded.map_err(|()| cx.said("its reading thread failed"))?;
    decoded
        .opened
        .as_ref()
        .map_err(|e| cx.said(&format!("cannot be read: {e}")))?;
    // A blob that is not the one its descriptor names is the first
    // thing wrong with it.
    if let Some(d) = expect.filter(|_| decoded.rest.is_ok())
        && let Some(why) = decoded.wrong(d)
    {
        return Err(cx.said(&why));
    }
    let outs = outs.map_err(|e| cx.failed(e))?;
    if outs.len() != d.each.len() {
        return Err(cx.said("it was written to no output"));
    }
    (decoded.rest).map_err(|e| cx.said(&format!("cannot be read: {e}")))?;
    let old = old.digest();
    let done = d
        .each
        .into_iter()
        .zip(outs)
        .zip(agains)
        .map(|((e, out), again)| finish(e, out, again, old.clone()))
        .collect::<Result<_, _>>()?;
    Ok((done, d.companions))
}

/// Per-GPU files by path, with their GPUs.
pub(super) type Companions = Vec<(String, crate::companion::Gpu)>;

/// One output of a layer's walk settled: its records kept true (the tar
/// copied once more into `again` when they change), its tar rewound.
fn finish(
    e: Entries<'_, '_>,
    out: package::Out,
    again: Option<File>,
    old_diff: String,
) -> Result<Rewritten, PathError> {
    let Entries { cx, above, rep, w } = e;
    let mut walked = w;
    walked.changed = out.changed;
    walked.gone = out.gone;
    let mut new_diff = out.diff;
    let said = |why: &str| cx.said(why);
    let fault = |f| cx.fault(f);
    let rcx = super::records::Cx {
        opts: cx.opts,
        input: cx.input,
        name: &cx.name,
        said: &said,
        fault: &fault,
    };
    let records = super::records::settle(&rcx, &walked.records, &mut above.records, rep)?;
    walked.changed |= !records.is_empty();
    let tar = match (out.tar, again) {
        (Some(mut f), Some(again)) if !records.is_empty() => {
            let (f, diff) = super::records::replace(&rcx, &mut f, again, &records)?;
            new_diff = diff;
            Some(f)
        }
        (Some(mut f), _) => {
            f.seek(SeekFrom::Start(0))
                .map_err(|e| PathError::io(PathErrorKind::Io, cx.input, e))?;
            Some(f)
        }
        (None, _) => None,
    };
    Ok(Rewritten {
        walked,
        old_diff,
        new_diff,
        tar,
    })
}

/// What prune decides of a layer's entries, one output: what a layer
/// above hides is kept (unless a layer above lost the path that hid it);
/// a record of installed packages is held to be kept true
/// ([`super::records`]); a library's per-GPU file whose GPU the rules
/// drop goes, unread; a file prune reads is pruned as if named alone.
pub(super) struct Entries<'a, 'c> {
    cx: &'a LayerCx<'c>,
    above: &'a mut Above,
    rep: &'a mut PathReport,
    w: Walked,
}

impl Entries<'_, '_> {
    /// The entry's name in messages (`IMAGE!/PATH`).
    fn full(&self, path: &str) -> String {
        format!("{}!/{path}", self.cx.name)
    }

    /// The visible entry `m` by its name, when it is a library's per-GPU
    /// file or directory whose GPU the rules drop: left out unread, and
    /// said so.
    fn dropped(&mut self, m: &Member<'_>) -> Option<Vec<packages::Fate>> {
        let h = m.header;
        let directory = h.kind() == b'5';
        if self.cx.opts.keep_files || !(h.is_file() || directory) {
            return None;
        }
        let c = super::super::companion::dropped(self.cx.sel.by(), m.path)?;
        if !directory {
            let full = self.full(m.path);
            self.rep
                .removed
                .push(RemovedFile::by_name(full, h.size, &c));
            self.rep.freed += h.size;
        }
        let path = m.path.to_string();
        self.w
            .records
            .fates
            .insert(path.clone(), Fate::Removed(None));
        self.above.removed.insert(path);
        Some(vec![packages::Fate::Removed])
    }
}

/// Whether the entry `m` is a record of installed packages.
fn is_record(m: &Member<'_>) -> bool {
    m.header.is_file() && super::records::is_kept(m.path)
}

impl Decide<Layer> for Entries<'_, '_> {
    type Bytes = Input;
    type Error = PathError;
    const REACH: usize = super::super::job::REACH;

    fn outputs(&self) -> usize {
        1
    }

    fn by_name(&mut self, m: &Member<'_>) -> Result<Option<Vec<packages::Fate>>, PathError> {
        let path = m.path.to_string();
        if let Some((_, went)) = m.link {
            self.above.shadow.entry(path.clone(), false);
            if went.first() == Some(&true) {
                self.w.records.fates.insert(path, Fate::Removed(None));
            }
            return Ok(None);
        }
        let dir = m.header.kind() == b'5';
        let mut seen = self.above.shadow.entry(path.clone(), dir);
        let base = path.rsplit('/').next().unwrap_or_default();
        if seen == Seen::Hidden && !base.starts_with(".wh.") && self.above.removed.contains(&path) {
            // Its cover was removed above: it would come to light.
            seen = Seen::Visible;
        }
        if seen == Seen::Hidden {
            return Ok(Some(vec![packages::Fate::Kept]));
        }
        if is_record(m) {
            if m.header.size > MAX_RECORD {
                self.w.records.too_big.push((path, m.header.size));
                return Ok(Some(vec![packages::Fate::Kept]));
            }
            return Ok(None);
        }
        Ok(self.dropped(m))
    }

    fn wants(&self, m: &Member<'_>, head: &[u8]) -> bool {
        is_record(m) || (m.header.size >= MIN_SIZE && super::super::file::readable(head).is_some())
    }

    fn inflate(
        &mut self,
        m: &Member<'_>,
        head: &[u8],
        reader: &mut dyn Read,
    ) -> Result<Input, PathError> {
        if is_record(m) {
            let mut bytes = head.to_vec();
            reader.read_to_end(&mut bytes).map_err(|e| {
                self.cx
                    .said(&format!("the data of '{}' cannot be read: {e}", m.path))
            })?;
            return Ok(Input::from_vec(bytes));
        }
        let full = self.full(m.path);
        inflate(self.cx.input, &full, head, reader, m.header.size)
    }

    /// As a file read whole is written everywhere in prune: a chunk at a
    /// time, each chunk's pages given back once written.
    fn write(&self, bytes: &Input, out: &mut dyn std::io::Write) -> std::io::Result<()> {
        write_input(out, bytes)
    }

    fn decide(
        &mut self,
        m: &Member<'_>,
        bytes: Held<'_, Input>,
    ) -> Result<Option<Vec<packages::Fate>>, PathError> {
        let Held::Read(file) = bytes else {
            return Ok(None);
        };
        if is_record(m) {
            let held = file.bytes().to_vec();
            self.w.records.held.push((m.path.to_string(), held));
            return Ok(None);
        }
        let head = &file.bytes()[..file.bytes().len().min(Self::REACH)];
        let kind = super::super::file::readable(head).flatten();
        let full = self.full(m.path);
        let cx = self.cx;
        let step = Step::new(cx.sel, cx.opts, cx.input, &full);
        let found = (&mut self.w.refused, &mut self.w.all);
        let path = m.path.to_string();
        let new = match step.judge(m.header, (file.bytes(), kind), found, self.rep)? {
            Became::AsItWas => return Ok(None),
            Became::Removed => {
                let old = Sum::of(file.bytes());
                self.w
                    .records
                    .fates
                    .insert(path.clone(), Fate::Removed(Some(old)));
                self.above.removed.insert(path);
                return Ok(Some(vec![packages::Fate::Removed]));
            }
            Became::Rewritten(new) => new,
        };
        let old = Sum::of(file.bytes());
        let (new, sum) =
            spooled(&new, file).map_err(|e| PathError::io(PathErrorKind::Write, cx.input, e))?;
        self.w.records.fates.insert(path, Fate::Rewritten(old, sum));
        Ok(Some(vec![packages::Fate::Replaced(Arc::new(new))]))
    }
}

/// The pruned form `new` of `file` written into a scratch file, and the
/// size and SHA-256 of what was written (for the records).
fn spooled(new: &NewFile, file: &Input) -> std::io::Result<(New, Sum)> {
    let spool = BufWriter::with_capacity(1 << 20, tempfile::tempfile()?);
    let mut hashing = Hashing::<_, Sha256>::new(spool);
    write_pruned(new, file, &mut hashing)?;
    let Hashing { out, digest, n } = hashing;
    let spool = out
        .into_inner()
        .map_err(std::io::IntoInnerError::into_error)?;
    let sum = Sum {
        size: n,
        sha: digest.finalize().into(),
    };
    Ok((New::file(spool)?, sum))
}
