//! CUDA/HIP fatbin wrappers (the wrapper sections of host objects,
//! `.nvFatBinSegment`, `.hipFatBinSegment` and their kin): each wrapper a
//! container, its data pointer resolved to a file offset, and after the
//! walk to the container found there.

use super::walker::{Check, Loc, Walker};
use crate::fatbin;
use crate::scan::sections::{self, ObjectFile};
use crate::scan::{ContainerKind, WrapperInfo};

impl Walker<'_> {
    /// The fatbin wrappers of section `sec`; `base` is the file offset of
    /// the object (an archive member's start), which their pointers'
    /// object-relative targets are moved by, so that they are file offsets
    /// as the containers' are (`None`, a thin archive's member: left
    /// object-relative).
    pub(super) fn wrappers(
        &mut self,
        o: &ObjectFile<'_>,
        sec: &sections::Section<'_>,
        loc: &Loc,
        base: Option<u64>,
    ) {
        let list = match fatbin::read_wrappers(sec.data, o.wide) {
            Ok(l) => l,
            Err(e) => {
                self.problem(loc, None, e.to_string());
                return;
            }
        };
        let ptr_at = fatbin::WRAPPER_DATA_OFFSET;
        let size = if o.wide {
            fatbin::WRAPPER_SIZE_64
        } else {
            fatbin::WRAPPER_SIZE_32
        } as u64;
        for (at, w) in list {
            if self.stopped() {
                break;
            }
            let target = o
                .resolve_pointer(sec, at + ptr_at, w.data)
                .and_then(|t| t.checked_add(base.unwrap_or(0)));
            let id = self.new_container(
                ContainerKind::FatbinWrapper,
                Some(w.version),
                &loc.at(at),
                at,
                size,
            );
            if base.is_some() && w.flavor() != "hipk" {
                self.wrapper_checks.push(Check {
                    id,
                    loc: loc.at(at),
                    stored: w.data,
                    must_resolve: o.format == "PE",
                });
            }
            self.report.containers[id].wrapper = Some(WrapperInfo {
                flavor: w.flavor(),
                magic: w.magic,
                version: w.version,
                target,
                target_container: None,
            });
        }
    }

    /// Sets each wrapper's target container: the first container that is
    /// not a wrapper at the file offset its pointer names.
    pub(super) fn resolve_wrappers(&mut self) {
        // The first container that is no wrapper at each file offset.
        let mut at: std::collections::HashMap<u64, usize> = std::collections::HashMap::new();
        for c in &self.report.containers {
            if let Some(o) = c.offset
                && c.kind != ContainerKind::FatbinWrapper
            {
                at.entry(o).or_insert(c.id);
            }
        }
        for c in &mut self.report.containers {
            if let Some(w) = &mut c.wrapper
                && let Some(t) = w.target
            {
                w.target_container = at.get(&t).copied();
            }
        }
        // A wrapper that leads nowhere is damage, never a silent zero: the
        // runtime would register garbage, and the inventory would miss
        // the device code it should have listed.
        for check in std::mem::take(&mut self.wrapper_checks) {
            let Some(w) = &self.report.containers[check.id].wrapper else {
                continue;
            };
            let stored = check.stored;
            let message = match w.target {
                Some(t) if w.target_container.is_none() => format!(
                    "the fatbin wrapper's data pointer {stored:#x} leads to file offset {t:#x}, \
                     where no container was found"
                ),
                None if check.must_resolve => format!(
                    "the fatbin wrapper's data pointer {stored:#x} lies in no section of the file"
                ),
                _ => continue,
            };
            // In a linked image every wrapper is an address the image
            // registers: one that leads nowhere makes the whole file
            // suspect, not only the wrapper.
            match check.must_resolve {
                true => self.damaged_file(&check.loc, Some(check.id), message),
                false => self.problem(&check.loc, Some(check.id), message),
            }
        }
    }
}
