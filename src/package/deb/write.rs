//! A `.deb` written for one output of a [`Plan`]: every `ar` member in its
//! order with its header's fields (name, time, owner, mode), only the
//! sizes of the members rewritten changed: the data archive the read
//! compressed, and the control archive with `md5sums` and
//! `Installed-Size` made true for it. Of the control archive, only the
//! headers of the lists rewritten change, in their size and checksum;
//! every other block is copied as it was read.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, Read as _, Seek as _, Write};

use super::compress;
use super::control;
use super::error::{Error, LIST_MAX};
use super::md5sums;
use super::read::{Package, bytes, method};
use super::rewrite::{Done, Plan};
use crate::host::ar;
use crate::package;
use crate::package::tar::Fault;
use crate::package::tar::walk::{Walk, put_header, put_pad};

/// Where a package is written: any writer, with a faster way to copy the
/// package's own bytes and a scratch file where the caller has one.
pub(crate) trait Sink: Write {
    /// Writes `bytes`, a slice of the package read.
    fn old(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.write_all(bytes)
    }

    /// Writes the first `len` bytes of the scratch file `f`.
    fn scratch(&mut self, f: &File, len: u64) -> io::Result<()> {
        let mut f = f;
        f.seek(io::SeekFrom::Start(0))?;
        let n = io::copy(&mut f.take(len), self)?;
        match n == len {
            true => Ok(()),
            false => Err(io::Error::other("a scratch file was cut short")),
        }
    }
}

/// A member's new bytes.
enum Body {
    /// In memory.
    Bytes(Vec<u8>),
    /// The whole of a scratch file.
    File(File),
}

impl Plan {
    /// Writes output `k` of the package `p` to `out`: its data archive as
    /// the read wrote it and its control archive with `md5sums` and
    /// `Installed-Size` true for it (read again within `limit`, which it
    /// lowers), every other member as it was; the package as it was when
    /// output `k` changes nothing.
    pub(crate) fn write(
        &mut self,
        p: &Package<'_>,
        k: usize,
        limit: &mut u64,
        out: &mut dyn Sink,
    ) -> Result<(), Error> {
        self.write_edited(p, k, limit, None, out)
    }

    /// Writes output `k` as [`Plan::write`] does, the text of its
    /// `control` file given last to `edit` (fields a caller changes), even
    /// where nothing else of output `k` changed; a package whose `control`
    /// file is not read here is refused when there is an `edit`.
    pub(crate) fn write_edited(
        &mut self,
        p: &Package<'_>,
        k: usize,
        limit: &mut u64,
        edit: Option<Edit<'_>>,
        out: &mut dyn Sink,
    ) -> Result<(), Error> {
        let mut bodies = BTreeMap::new();
        if let Some(done) = self.outs.get_mut(k) {
            let data = done.data.take();
            let changed = data.is_some();
            if let Some(data) = data {
                bodies.insert(p.data_at, Body::File(data));
            }
            let control = match p.control {
                Some(at) if changed || edit.is_some() => new_control(p, at, done, edit, limit)?,
                _ => None,
            };
            match (control, p.control) {
                (Some(c), Some(at)) => _ = bodies.insert(at, Body::Bytes(c)),
                _ if edit.is_some() => return Err(no_control()),
                _ => {}
            }
        }
        write_package(p, &mut bodies, out).map_err(Error::Write)
    }
}

/// What changes the text of a package's `control` file as it is written.
type Edit<'e> = &'e dyn Fn(&[u8]) -> Vec<u8>;

/// The refusal of a package whose `control` file a caller would edit but
/// that is not read here.
fn no_control() -> Error {
    Error::Refused("its control archive holds no 'control' file read here".into())
}

/// The control archive (member `at` of `p`) with the MD5 of each file
/// rewritten in its `md5sums` and the rows of the files left out taken
/// out, and `control`'s `Installed-Size` lowered by what they no longer
/// take (`done`), compressed again as it was; `None` when neither
/// changes.
fn new_control(
    p: &Package<'_>,
    at: usize,
    done: &Done,
    edit: Option<Edit<'_>>,
    limit: &mut u64,
) -> Result<Option<Vec<u8>>, Error> {
    let member = p.name(at);
    let bytes = p.bytes(at);
    let Some(c) = method(bytes) else {
        // Not read: dpkg will not install such a package anyway.
        return if edit.is_some() {
            Err(no_control())
        } else {
            Ok(None)
        };
    };
    let fault = |f| Error::fault(&member, f);
    let reader = package::decoder(bytes, c).map_err(|e| Error::Member {
        member: member.clone(),
        doing: "cannot be read",
        source: e.into(),
    })?;
    let encoder = compress::encoder(c, Vec::new(), 1).map_err(Error::Scratch)?;
    let mut walk = Walk::new(reader, encoder, *limit);
    let mut rewritten = false;
    let mut edited = false;
    while let Some(h) = walk.next().map_err(fault)? {
        let which = std::str::from_utf8(&h.path).unwrap_or("");
        let less = done.kib_less > 0 || edit.is_some();
        let read = which == "md5sums" || (which == "control" && less);
        if !h.is_file() || h.size_in_pax || !read {
            walk.copy(&h).map_err(fault)?;
            continue;
        }
        if h.size > LIST_MAX {
            return Err(Error::too_large(&member, which, h.size));
        }
        let mut text = Vec::new();
        walk.body()
            .read_to_end(&mut text)
            .map_err(|e| fault(Fault::Read(e)))?;
        if (text.len() as u64) < h.size {
            return Err(Error::Damaged(format!(
                "member '{member}': its {which} is cut short"
            )));
        }
        walk.skip_body().map_err(fault)?;
        let new = match (which, edit) {
            ("control", Some(edit)) => {
                edited = true;
                let less = control::less_installed(&text, done.kib_less);
                Some(edit(less.as_deref().unwrap_or(&text)))
            }
            ("control", None) => control::less_installed(&text, done.kib_less),
            _ => md5sums::new_md5sums(&text, &done.changed, &done.gone),
        };
        let (size, text) = match &new {
            Some(new) => (Some(new.len() as u64), new),
            None => (None, &text),
        };
        rewritten |= new.is_some();
        put_header(walk.out(), &h, size).map_err(fault)?;
        walk.out()
            .write_all(text)
            .map_err(|e| fault(Fault::Write(e)))?;
        put_pad(walk.out(), text.len() as u64).map_err(fault)?;
    }
    *limit = limit.saturating_sub(walk.read());
    if edit.is_some() && !edited {
        return Err(no_control());
    }
    if !rewritten {
        return Ok(None);
    }
    let new = walk.into_inner().finish().map_err(Error::Scratch)?;
    Ok(Some(new))
}

/// Writes the package `p` to `out`: its magic, then every member in its
/// order, header and bytes as they are, except that the members of
/// `bodies` get those bytes and their size in the header.
fn write_package(
    p: &Package<'_>,
    bodies: &mut BTreeMap<usize, Body>,
    out: &mut dyn Sink,
) -> io::Result<()> {
    let data = p.data;
    out.write_all(&data[..ar::MAGIC.len()])?;
    for (i, e) in p.entries.iter().enumerate() {
        let at = usize::try_from(e.header).map_err(io::Error::other)?;
        let mut header: [u8; 60] = data
            .get(at..at + 60)
            .and_then(|h| h.try_into().ok())
            .ok_or_else(|| io::Error::other("a member header lies outside the package"))?;
        let old = bytes(data, e);
        let size = match bodies.get_mut(&i) {
            None => e.size,
            Some(Body::Bytes(b)) => b.len() as u64,
            Some(Body::File(f)) => f.seek(io::SeekFrom::End(0))?,
        };
        let field = format!("{size:<10}");
        if field.len() > 10 {
            return Err(io::Error::other(format!(
                "a member of {size} bytes is too large for an ar header"
            )));
        }
        header[48..58].copy_from_slice(field.as_bytes());
        out.write_all(&header)?;
        match bodies.get(&i) {
            None => out.old(old)?,
            Some(Body::Bytes(b)) => out.write_all(b)?,
            Some(Body::File(f)) => out.scratch(f, size)?,
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
