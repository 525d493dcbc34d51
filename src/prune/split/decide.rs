//! The decider of a split wheel's one read: prune's own decider of a
//! wheel ([`Members`]), one per group, asked about each member in turn,
//! and one more output, the null variant, that keeps every member as it
//! is. So each group's output holds exactly what `prune --keep GROUP`
//! keeps: the same decisions, made by the same code, on the same bytes.

use std::path::Path;

use super::super::wheel::Members;
use crate::files::Input;
use crate::package::Held;
use crate::package::zipfile::{Decide, Fate, MemberRead, Zip};
use crate::prune::PathError;

/// Each group's [`Members`], and the per-GPU files met on the way.
pub(super) struct Groups<'a> {
    /// One decider per group, in the groups' order.
    pub(super) each: Vec<Members<'a>>,
    /// A member some groups decided by its name and others must read: its
    /// index, and each group's fate where it decided (see
    /// [`Groups::by_name`]).
    pending: Option<(usize, Vec<Option<Fate>>)>,
    /// The name of each per-GPU file met (known by its name, as prune
    /// knows it), with its GPU's name.
    pub(super) companions: Vec<(String, crate::companion::Gpu)>,
}

impl<'a> Groups<'a> {
    /// The decider of groups each decided by one of `each` (at least one).
    pub(super) fn new(each: Vec<Members<'a>>) -> Groups<'a> {
        Groups {
            each,
            pending: None,
            companions: Vec::new(),
        }
    }

    /// Whether prune's decider would read whole the member `m` starting
    /// with `bytes` (what it is asked with: its first [`Decide::REACH`]
    /// bytes).
    fn wanted(&self, m: &MemberRead<'_>, bytes: &[u8]) -> bool {
        let head = &bytes[..bytes.len().min(<Members<'_> as Decide<Zip>>::REACH)];
        self.each.first().is_some_and(|g| g.wants(m, head))
    }
}

/// Each answer as one fate per output: a group that answered `None` keeps
/// the member, and the null variant keeps it.
fn fates(each: Vec<Option<Fate>>) -> Vec<Fate> {
    let mut v: Vec<Fate> = each.into_iter().map(|f| f.unwrap_or(Fate::Kept)).collect();
    v.push(Fate::Kept);
    v
}

/// The one fate of a one-output answer, if any.
fn first(answer: Option<Vec<Fate>>) -> Option<Fate> {
    answer.and_then(|v| v.into_iter().next())
}

impl Decide<Zip> for Groups<'_> {
    type Bytes = Input;
    type Error = PathError;
    const REACH: usize = <Members<'_> as Decide<Zip>>::REACH;

    fn outputs(&self) -> usize {
        self.each.len() + 1
    }

    /// Each group's answer by the member's name (a per-GPU file its rules
    /// drop goes unread). Where some groups decide and others do not, the
    /// others must see the member as prune would: a directory entry or a
    /// member too small to read is kept by them; any other is read
    /// ([`Groups::wants`]), the decided fates waiting for it.
    fn by_name(&mut self, m: &MemberRead<'_>) -> Result<Option<Vec<Fate>>, PathError> {
        self.pending = None;
        if !m.is_dir
            && let Some(c) = crate::companion::companion(m.name)
        {
            self.companions.push((m.name.to_string(), c.gpu));
        }
        let mut each = Vec::with_capacity(self.each.len());
        for g in &mut self.each {
            each.push(first(g.by_name(m)?));
        }
        let decided = each.iter().filter(|f| f.is_some()).count();
        if decided == 0 {
            return Ok(None);
        }
        if decided == each.len() || m.is_dir || m.size < 64 {
            return Ok(Some(fates(each)));
        }
        self.pending = Some((m.index, each));
        Ok(None)
    }

    fn wants(&self, m: &MemberRead<'_>, head: &[u8]) -> bool {
        self.pending.is_some() || self.wanted(m, head)
    }

    fn inflate(
        &mut self,
        m: &MemberRead<'_>,
        head: &[u8],
        reader: &mut dyn std::io::Read,
    ) -> Result<Input, PathError> {
        let Some(g) = self.each.first_mut() else {
            return Err(PathError::write(Path::new(m.name), None));
        };
        g.inflate(m, head, reader)
    }

    /// Each group that did not decide the member by its name decides it
    /// from its bytes, as prune would (a member prune would not read
    /// whole is kept).
    fn decide(
        &mut self,
        m: &MemberRead<'_>,
        bytes: Held<'_, Input>,
    ) -> Result<Option<Vec<Fate>>, PathError> {
        let pending = self.pending.take().filter(|(i, _)| *i == m.index);
        let mut decided = pending.map_or_else(|| vec![None; self.each.len()], |(_, f)| f);
        let wanted = self.wanted(m, bytes.bytes());
        for (g, fate) in self.each.iter_mut().zip(decided.iter_mut()) {
            if fate.is_none() && wanted {
                *fate = first(g.decide(m, bytes)?);
            }
        }
        Ok(Some(fates(decided)))
    }

    fn wrong(&mut self, w: &crate::package::records::Wrong<'_>) -> Result<(), PathError> {
        for g in &mut self.each {
            g.wrong(w)?;
        }
        Ok(())
    }
}
