//! The decider of one read of a layer into several outputs: a decider of
//! one output (prune's own decider of a layer's entries), one per output, asked
//! about each entry in turn, so that each output holds exactly what that
//! output's prune alone would write: the same decisions, made by the same
//! code, on the same bytes. (One output is prune's own read.)

use std::io::{Read, Write};

use crate::files::Input;
use crate::package::oci::rewrite::{Layer, Member};
use crate::package::{Decide, Fate, Held};
use crate::prune::PathError;

/// Each output's decider, and the per-GPU files met on the way.
pub(super) struct Each<D> {
    /// One decider per output, in the outputs' order.
    pub(super) each: Vec<D>,
    /// A regular file some outputs decided by its path and the others
    /// must read: its path, and each output's fate where it decided.
    pending: Option<(String, Vec<Option<Fate>>)>,
    /// The path of each per-GPU file met (known by its path, as prune
    /// knows it), with its GPU.
    pub(super) companions: Vec<(String, crate::companion::Gpu)>,
}

impl<D: Decide<Layer, Bytes = Input, Error = PathError>> Each<D> {
    /// The decider of outputs each decided by one of `each`.
    pub(super) fn new(each: Vec<D>) -> Each<D> {
        Each {
            each,
            pending: None,
            companions: Vec::new(),
        }
    }

    /// Whether prune's decider reads whole the file `m` whose first bytes
    /// are `head` (each output's would answer alike: it looks at the
    /// entry only).
    fn wanted(&self, m: &Member<'_>, head: &[u8]) -> bool {
        self.each.first().is_some_and(|g| g.wants(m, head))
    }
}

/// Each output's answer as one fate per output: one that answered `None`
/// keeps the entry.
fn fates(each: Vec<Option<Fate>>) -> Vec<Fate> {
    each.into_iter().map(|f| f.unwrap_or(Fate::Kept)).collect()
}

/// The one fate of a one-output answer, if any.
fn first(answer: Option<Vec<Fate>>) -> Option<Fate> {
    answer.and_then(|v| v.into_iter().next())
}

impl<D: Decide<Layer, Bytes = Input, Error = PathError>> Decide<Layer> for Each<D> {
    type Bytes = Input;
    type Error = PathError;
    const REACH: usize = D::REACH;

    fn outputs(&self) -> usize {
        self.each.len()
    }

    /// Each output's answer by the path (a per-GPU file its rules drop
    /// goes unread, what a layer above hides is kept). Where some
    /// outputs decide a regular file and others do not, the others must
    /// see it as their prune would: it is read (see [`Decide::wants`]),
    /// the decided fates waiting for it. An entry of another kind that
    /// only some decide is kept by the others, as prune keeps one it
    /// does not decide by name.
    fn by_name(&mut self, m: &Member<'_>) -> Result<Option<Vec<Fate>>, PathError> {
        self.pending = None;
        if m.header.is_file()
            && m.link.is_none()
            && let Some(c) = crate::companion::companion(m.path)
        {
            self.companions.push((m.path.to_string(), c.gpu));
        }
        let mut each = Vec::with_capacity(self.each.len());
        for (k, g) in self.each.iter_mut().enumerate() {
            // A hard link is told whether its file went in this output.
            let link = m
                .link
                .map(|(to, went)| (to, went.get(k..=k).unwrap_or_default()));
            let one = Member {
                header: m.header,
                path: m.path,
                link,
            };
            each.push(first(g.by_name(&one)?));
        }
        let decided = each.iter().filter(|f| f.is_some()).count();
        if decided == 0 {
            return Ok(None);
        }
        if decided == each.len() || !m.header.is_file() || m.link.is_some() {
            return Ok(Some(fates(each)));
        }
        self.pending = Some((m.path.to_string(), each));
        Ok(None)
    }

    fn wants(&self, m: &Member<'_>, head: &[u8]) -> bool {
        self.pending.is_some() || self.wanted(m, head)
    }

    fn inflate(
        &mut self,
        m: &Member<'_>,
        head: &[u8],
        reader: &mut dyn Read,
    ) -> Result<Input, PathError> {
        match self.each.first_mut() {
            Some(g) => g.inflate(m, head, reader),
            None => Err(PathError::write(std::path::Path::new(m.path), None)),
        }
    }

    /// Each output that did not decide the file by its path decides it
    /// from its bytes, as its prune would (a file prune would not read
    /// whole is kept).
    fn decide(
        &mut self,
        m: &Member<'_>,
        bytes: Held<'_, Input>,
    ) -> Result<Option<Vec<Fate>>, PathError> {
        let pending = self.pending.take().filter(|(p, _)| p == m.path);
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
}
