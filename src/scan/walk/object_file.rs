//! Object files read through their section headers: the sections that
//! hold containers walked as sequences, fatbin wrapper sections read as
//! wrappers, and bundle-entry sections as one object bundle.

use super::{Expect, Loc, Walker};
use crate::num::len64;
use crate::scan::ContainerKind;
use crate::scan::sections::{ObjectFile, Role};

impl Walker<'_> {
    /// Walks the sections of object file `o` that hold containers, and its
    /// bundle-entry sections as one object bundle.
    pub(super) fn object(&mut self, o: &ObjectFile<'_>, loc: &Loc) {
        let mut bundle_sections = Vec::new();
        for sec in &o.sections {
            if self.stopped() {
                break;
            }
            let l = Loc {
                section: Some(sec.name.clone()),
                ..loc.at(sec.offset)
            };
            match &sec.role {
                Role::OffloadBinaries | Role::Fatbins => {
                    self.region(sec.data, &l, Expect::Sequence { whole: false });
                }
                Role::Mixed => self.region(sec.data, &l, Expect::Among),
                Role::Wrappers => self.wrappers(o, sec, &l, loc.abs),
                Role::BundleEntry(id) => bundle_sections.push((id.clone(), sec, l)),
            }
        }
        for (name, err) in &o.problems {
            let l = Loc {
                section: Some(name.clone()),
                ..loc.clone()
            };
            self.problem(&l, None, format!("cannot read the section: {err}"));
        }
        if bundle_sections.is_empty() {
            return;
        }
        let size = bundle_sections.iter().map(|(_, s, _)| len64(s.data)).sum();
        let id = self.new_container(ContainerKind::ObjectBundle, None, loc, 0, size);
        self.report.containers[id].offset = None;
        for (i, (name, sec, l)) in bundle_sections.into_iter().enumerate() {
            if self.stopped() {
                break;
            }
            let inner = Loc {
                depth: loc.depth + 1,
                ..l
            };
            let at = super::bundle::EntryAt::new(id, i, &name, 0, len64(sec.data));
            self.bundle_entry(&at, Some(sec.data), &inner);
        }
    }
}
