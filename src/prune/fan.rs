//! One read of a package feeding several outputs ([`Fan`]): prune's own
//! decider of one output, one per output, asked about each member in
//! turn, so that each output holds exactly what that output's prune alone
//! would write: the same decisions, made by the same code, on the same
//! bytes. The split of a wheel, a `.deb`, a conda package, an OCI layout
//! and a `docker save` archive reads its input through it, and so does
//! prune's read of a layer shared by several images.
//!
//! What differs between formats is small and said by [`Fanned`]: which
//! member a decision waits for, which members may be per-GPU files, and
//! which members the outputs that did not decide them by name keep unread.

use std::io::{Read, Write};
use std::path::Path;

use crate::files::Input;
use crate::package::deb::{self, Deb};
use crate::package::oci::rewrite::{self as layer, Layer};
use crate::package::zipfile::{MemberRead, Zip};
use crate::package::{Decide, Fate, Format, Held};
use crate::prune::PathError;

/// What [`Fan`] needs to know of a format's members.
pub(crate) trait Fanned: Format {
    /// What tells one member from the next in one read.
    type Key: PartialEq;

    /// The member's key.
    fn key(m: &Self::Member<'_>) -> Self::Key;

    /// The member's name, as prune shows it.
    fn name(m: &Self::Member<'_>) -> String;

    /// Whether the member is a file of its own that may be a per-GPU file
    /// (not a directory, not a link to another member).
    fn is_file(m: &Self::Member<'_>) -> bool;

    /// Whether an output that did not decide the member by its name keeps
    /// it unread where others did decide it (prune reads only files).
    fn kept_unread(m: &Self::Member<'_>) -> bool;

    /// Output `k`'s decider `d` asked about `m` by its name (a member that
    /// says something per output is told output `k`'s part).
    fn by_name_of<D: Decide<Self>>(
        d: &mut D,
        m: &Self::Member<'_>,
        k: usize,
    ) -> Result<Option<Vec<Fate>>, D::Error>
    where
        Self: Sized,
    {
        let _ = k;
        d.by_name(m)
    }
}

impl Fanned for Zip {
    type Key = usize;

    fn key(m: &MemberRead<'_>) -> usize {
        m.index
    }

    fn name(m: &MemberRead<'_>) -> String {
        m.name.to_string()
    }

    fn is_file(m: &MemberRead<'_>) -> bool {
        !m.is_dir
    }

    /// A directory entry, or a member too small to be read as prune reads.
    fn kept_unread(m: &MemberRead<'_>) -> bool {
        m.is_dir || m.size < 64
    }
}

impl Fanned for Deb {
    type Key = Vec<u8>;

    fn key(m: &deb::Member<'_>) -> Vec<u8> {
        m.header.path.clone()
    }

    fn name(m: &deb::Member<'_>) -> String {
        m.header.path_lossy()
    }

    fn is_file(m: &deb::Member<'_>) -> bool {
        m.header.is_file()
    }

    /// A directory or sparse file.
    fn kept_unread(m: &deb::Member<'_>) -> bool {
        !m.header.is_file()
    }
}

impl Fanned for Layer {
    type Key = String;

    fn key(m: &layer::Member<'_>) -> String {
        m.path.to_string()
    }

    fn name(m: &layer::Member<'_>) -> String {
        m.path.to_string()
    }

    fn is_file(m: &layer::Member<'_>) -> bool {
        m.header.is_file() && m.link.is_none()
    }

    /// Anything but a regular file, and a hard link.
    fn kept_unread(m: &layer::Member<'_>) -> bool {
        !Self::is_file(m)
    }

    /// A hard link is told whether its file went in output `k`.
    fn by_name_of<D: Decide<Layer>>(
        d: &mut D,
        m: &layer::Member<'_>,
        k: usize,
    ) -> Result<Option<Vec<Fate>>, D::Error> {
        let link = m
            .link
            .map(|(to, went)| (to, went.get(k..=k).unwrap_or_default()));
        d.by_name(&layer::Member {
            header: m.header,
            path: m.path,
            link,
        })
    }
}

/// Each output's decider, and the per-GPU files met on the way.
pub(crate) struct Fan<F: Fanned, D> {
    /// One decider per output, in the outputs' order.
    pub(crate) each: Vec<D>,
    /// Whether one more output follows them that keeps every member as it
    /// is (a wheel's null variant).
    kept_whole: bool,
    /// A member some outputs decided by its name and the others must
    /// read: its key, and each output's fate where it decided.
    pending: Option<(F::Key, Vec<Option<Fate>>)>,
    /// The name of each per-GPU file met (known by its name, as prune
    /// knows it), with its GPU.
    pub(crate) companions: Vec<(String, crate::companion::Gpu)>,
}

impl<F, D> Fan<F, D>
where
    F: Fanned,
    D: Decide<F, Bytes = Input, Error = PathError>,
{
    /// The decider of outputs each decided by one of `each`.
    pub(crate) fn new(each: Vec<D>) -> Fan<F, D> {
        Fan {
            each,
            kept_whole: false,
            pending: None,
            companions: Vec::new(),
        }
    }

    /// The same, followed by one output that keeps every member.
    pub(crate) fn and_kept_whole(each: Vec<D>) -> Fan<F, D> {
        Fan {
            kept_whole: true,
            ..Fan::new(each)
        }
    }

    /// Whether prune's decider reads whole the member `m` whose first
    /// bytes are `head` (each output's would answer alike: it looks at
    /// the member only).
    fn wanted(&self, m: &F::Member<'_>, head: &[u8]) -> bool {
        let head = &head[..head.len().min(D::REACH)];
        self.each.first().is_some_and(|g| g.wants(m, head))
    }

    /// Each answer as one fate per output: an output that answered `None`
    /// keeps the member, and so does the one that keeps every member.
    fn fates(&self, each: Vec<Option<Fate>>) -> Vec<Fate> {
        let mut v: Vec<Fate> = each.into_iter().map(|f| f.unwrap_or(Fate::Kept)).collect();
        if self.kept_whole {
            v.push(Fate::Kept);
        }
        v
    }
}

/// The one fate of a one-output answer, if any.
fn first(answer: Option<Vec<Fate>>) -> Option<Fate> {
    answer.and_then(|v| v.into_iter().next())
}

impl<F, D> Decide<F> for Fan<F, D>
where
    F: Fanned,
    D: Decide<F, Bytes = Input, Error = PathError>,
{
    type Bytes = Input;
    type Error = PathError;
    const REACH: usize = D::REACH;

    fn outputs(&self) -> usize {
        self.each.len() + usize::from(self.kept_whole)
    }

    /// Each output's answer by the name (a per-GPU file its rules drop
    /// goes unread). Where some outputs decide a member and others do not,
    /// the others must see it as their prune would: one it keeps unread
    /// ([`Fanned::kept_unread`]) is kept, any other is read (see
    /// [`Decide::wants`]), the decided fates waiting for it.
    fn by_name(&mut self, m: &F::Member<'_>) -> Result<Option<Vec<Fate>>, PathError> {
        self.pending = None;
        if F::is_file(m) {
            let name = F::name(m);
            if let Some(c) = crate::companion::companion(&name) {
                self.companions.push((name, c.gpu));
            }
        }
        let mut each = Vec::with_capacity(self.each.len());
        for (k, g) in self.each.iter_mut().enumerate() {
            each.push(first(F::by_name_of(g, m, k)?));
        }
        let decided = each.iter().filter(|f| f.is_some()).count();
        if decided == 0 {
            return Ok(None);
        }
        if decided == each.len() || F::kept_unread(m) {
            return Ok(Some(self.fates(each)));
        }
        self.pending = Some((F::key(m), each));
        Ok(None)
    }

    fn wants(&self, m: &F::Member<'_>, head: &[u8]) -> bool {
        self.pending.is_some() || self.wanted(m, head)
    }

    fn sparse(&mut self, m: &F::Member<'_>, head: &[u8]) -> Result<(), PathError> {
        for g in &mut self.each {
            g.sparse(m, head)?;
        }
        Ok(())
    }

    fn inflate(
        &mut self,
        m: &F::Member<'_>,
        head: &[u8],
        reader: &mut dyn Read,
    ) -> Result<Input, PathError> {
        match self.each.first_mut() {
            Some(g) => g.inflate(m, head, reader),
            None => Err(PathError::write(Path::new(&F::name(m)), None)),
        }
    }

    /// Each output that did not decide the member by its name decides it
    /// from its bytes, as its prune would (a member prune would not read
    /// whole is kept).
    fn decide(
        &mut self,
        m: &F::Member<'_>,
        bytes: Held<'_, Input>,
    ) -> Result<Option<Vec<Fate>>, PathError> {
        let key = F::key(m);
        let pending = self.pending.take().filter(|(k, _)| *k == key);
        let mut decided = pending.map_or_else(|| vec![None; self.each.len()], |(_, f)| f);
        let wanted = self.wanted(m, bytes.bytes());
        for (g, fate) in self.each.iter_mut().zip(decided.iter_mut()) {
            if fate.is_none() && wanted {
                *fate = first(g.decide(m, bytes)?);
            }
        }
        Ok(Some(self.fates(decided)))
    }

    fn write(&self, bytes: &Input, out: &mut dyn Write) -> std::io::Result<()> {
        match self.each.first() {
            Some(g) => g.write(bytes, out),
            None => out.write_all(bytes.bytes()),
        }
    }

    fn wrong(&mut self, w: &crate::package::records::Wrong<'_>) -> Result<(), PathError> {
        for g in &mut self.each {
            g.wrong(w)?;
        }
        Ok(())
    }
}
