//! `ar` archives (regular, thin and AIX big, through [`crate::host::ar`]):
//! each member walked as a file, a thin archive's members read from their
//! own files when the visitor can.

use super::walker::{Loc, Walker, lossy};
use crate::host::ar::{self, Archive};

/// The most thin archives' member files one scan reads.
pub(super) const MAX_THIN_READS: u32 = 100_000;

impl Walker<'_> {
    /// Walks the members of the archive `data` (`nest` archives deep), each
    /// as a file.
    pub(super) fn archive(&mut self, data: &[u8], loc: &Loc, nest: u32) {
        if nest >= self.opts.max_depth {
            self.problem(loc, None, "archives nested too deeply".into());
            return;
        }
        let ar = match Archive::parse(data) {
            Ok(ar) => ar,
            Err(e) => {
                self.problem(loc, None, format!("cannot read the archive: {e}"));
                return;
            }
        };
        for m in ar.members() {
            if self.stopped() {
                return;
            }
            let m = match m {
                Ok(m) => m,
                Err(e) => {
                    self.problem(loc, None, format!("cannot read an archive member: {e}"));
                    return;
                }
            };
            let name = lossy(m.name());
            let (off, _) = m.range();
            let member = match &loc.member {
                Some(outer) => format!("{outer}({name})"),
                None => name.clone(),
            };
            if m.is_thin() {
                self.thin_member(&m, &name, member, loc, nest);
                continue;
            }
            let l = Loc {
                member: Some(member),
                ..loc.at(off)
            };
            match m.data() {
                Ok(bytes) => {
                    self.file(bytes, &l, nest + 1, super::sections::host_kind(bytes));
                }
                Err(e) => self.problem(&l, None, format!("cannot read the member: {e}")),
            }
        }
    }

    /// A thin archive's member, read from its own file if the visitor
    /// can (it has no offset in this file).
    fn thin_member(
        &mut self,
        m: &ar::Member<'_>,
        name: &str,
        member: String,
        loc: &Loc,
        nest: u32,
    ) {
        let l = Loc {
            member: Some(member),
            abs: None,
            ..loc.clone()
        };
        if self.thin_chain.iter().any(|n| n == name) {
            self.problem(
                &l,
                None,
                format!(
                    "the thin archive's member file '{name}' is an archive around it (a \
                     cycle): not read again"
                ),
            );
            return;
        }
        if self.thin_reads == 0 {
            self.problem(
                &l,
                None,
                format!(
                    "member file '{name}' not read: this file's thin archives name more than \
                     {MAX_THIN_READS} member files"
                ),
            );
            return;
        }
        self.thin_reads -= 1;
        match self.visit.thin_member(name) {
            None => self.problem(
                &l,
                None,
                format!("member of a thin archive, kept in the file '{name}': not read"),
            ),
            Some(Err(why)) => self.problem(
                &l,
                None,
                format!("cannot read the thin archive's member file '{name}': {why}"),
            ),
            Some(Ok(held)) => {
                let bytes = (*held).as_ref();
                if let Err(e) = m.thin_data(bytes) {
                    self.problem(&l, None, e.to_string());
                }
                self.thin_chain.push(name.to_string());
                self.file(bytes, &l, nest + 1, super::sections::host_kind(bytes));
                self.thin_chain.pop();
            }
        }
    }
}
