//! The decider of a split `.deb`'s one read of its data archive: prune's
//! own decider of a package ([`Files`]), one per group, asked about each
//! file in turn, so that each group's output holds exactly what `prune
//! --keep GROUP` keeps: the same decisions, made by the same code, on the
//! same bytes. (Unlike a wheel's split, there is no null output: the
//! input itself is the package for every GPU.)

use std::io::{Read, Write};

use super::super::deb::Files;
use crate::files::Input;
use crate::package::deb::{Deb, Decide, Member};
use crate::package::records::Wrong;
use crate::package::{Fate, Held};
use crate::prune::PathError;

/// Each group's [`Files`], and the per-GPU files met on the way.
pub(super) struct Groups<'a> {
    /// One decider per group, in the groups' order.
    pub(super) each: Vec<Files<'a>>,
    /// A regular file some groups decided by its path and the others must
    /// read: its path, and each group's fate where it decided.
    pending: Option<(Vec<u8>, Vec<Option<Fate>>)>,
    /// The path of each per-GPU file met (known by its path, as prune
    /// knows it), with its GPU.
    pub(super) companions: Vec<(String, crate::companion::Gpu)>,
}

impl<'a> Groups<'a> {
    /// The decider of groups each decided by one of `each` (at least one).
    pub(super) fn new(each: Vec<Files<'a>>) -> Groups<'a> {
        Groups {
            each,
            pending: None,
            companions: Vec::new(),
        }
    }

    /// Whether prune's decider reads whole the file `m` whose first bytes
    /// are `head` (each group's would answer alike: it looks at the file
    /// only).
    fn wanted(&self, m: &Member<'_>, head: &[u8]) -> bool {
        self.each.first().is_some_and(|g| g.wants(m, head))
    }
}

/// Each group's answer as one fate per output: a group that answered
/// `None` keeps the file.
fn fates(each: Vec<Option<Fate>>) -> Vec<Fate> {
    each.into_iter().map(|f| f.unwrap_or(Fate::Kept)).collect()
}

/// The one fate of a one-output answer, if any.
fn first(answer: Option<Vec<Fate>>) -> Option<Fate> {
    answer.and_then(|v| v.into_iter().next())
}

impl Decide<Deb> for Groups<'_> {
    type Bytes = Input;
    type Error = PathError;
    const REACH: usize = <Files<'_> as Decide<Deb>>::REACH;

    fn outputs(&self) -> usize {
        self.each.len()
    }

    /// Each group's answer by the path (a per-GPU file its rules drop
    /// goes unread). Where some groups decide a regular file and others
    /// do not, the others must see it as prune would: it is read (see
    /// [`Decide::wants`]), the decided fates waiting for it. A directory
    /// or sparse file that only some groups decide is kept by the others,
    /// as prune keeps one it does not decide by name.
    fn by_name(&mut self, m: &Member<'_>) -> Result<Option<Vec<Fate>>, PathError> {
        self.pending = None;
        let h = m.header;
        if h.is_file()
            && let Some(c) = crate::companion::companion(&h.path_lossy())
        {
            self.companions.push((h.path_lossy(), c.gpu));
        }
        let mut each = Vec::with_capacity(self.each.len());
        for g in &mut self.each {
            each.push(first(g.by_name(m)?));
        }
        let decided = each.iter().filter(|f| f.is_some()).count();
        if decided == 0 {
            return Ok(None);
        }
        if decided == each.len() || !h.is_file() {
            return Ok(Some(fates(each)));
        }
        self.pending = Some((h.path.clone(), each));
        Ok(None)
    }

    fn wants(&self, m: &Member<'_>, head: &[u8]) -> bool {
        self.pending.is_some() || self.wanted(m, head)
    }

    fn sparse(&mut self, m: &Member<'_>, head: &[u8]) -> Result<(), PathError> {
        for g in &mut self.each {
            g.sparse(m, head)?;
        }
        Ok(())
    }

    fn inflate(
        &mut self,
        m: &Member<'_>,
        head: &[u8],
        reader: &mut dyn Read,
    ) -> Result<Input, PathError> {
        match self.each.first_mut() {
            Some(g) => g.inflate(m, head, reader),
            None => Err(PathError::write(
                std::path::Path::new(&m.header.path_lossy()),
                None,
            )),
        }
    }

    /// Each group that did not decide the file by its path decides it
    /// from its bytes, as prune would (a file prune would not read whole
    /// is kept).
    fn decide(
        &mut self,
        m: &Member<'_>,
        bytes: Held<'_, Input>,
    ) -> Result<Option<Vec<Fate>>, PathError> {
        let pending = self.pending.take().filter(|(p, _)| *p == m.header.path);
        let mut decided = pending.map_or_else(|| vec![None; self.each.len()], |(_, f)| f);
        let all = bytes.bytes();
        let wanted = self.wanted(m, &all[..all.len().min(Self::REACH)]);
        for (g, fate) in self.each.iter_mut().zip(decided.iter_mut()) {
            if fate.is_none() && wanted {
                *fate = first(g.decide(m, bytes)?);
            }
        }
        Ok(Some(fates(decided)))
    }

    fn write(&self, bytes: &Input, out: &mut dyn Write) -> std::io::Result<()> {
        match self.each.first() {
            Some(g) => g.write(bytes, out),
            None => out.write_all(bytes.bytes()),
        }
    }

    fn wrong(&mut self, w: &Wrong<'_>) -> Result<(), PathError> {
        for g in &mut self.each {
            g.wrong(w)?;
        }
        Ok(())
    }
}
