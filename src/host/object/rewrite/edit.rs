//! The edit llvm-objcopy makes to the model between reading and writing:
//! sections removed with what depends on them (`Object::removeSections`),
//! symbols put in their final order, sections added, and the extended
//! index table made or dropped as the new numbering needs.

use std::borrow::Cow;

use object::elf;

use super::Edit;
use super::checked::{invalid, lossy};
use super::model::{Def, Kind, Model, Sec};
use super::model::{SHF_COMPRESSED, SHF_EXCLUDE, SHF_GROUP, STB_LOCAL};
use crate::error::{Error, Result};

impl<'d> Model<'d> {
    /// Removes and adds sections as llvm-objcopy does for `edit`.
    pub(super) fn edit(&mut self, edit: &Edit<'d>) -> Result<()> {
        let mut doomed: Vec<bool> = self
            .secs
            .iter()
            .map(|s| edit.remove_named.is_some_and(|named| named(&s.name)))
            .collect();
        for &i in edit.remove {
            *doomed
                .get_mut(i.wrapping_sub(1))
                .ok_or_else(|| invalid(format!("there is no section {i} to remove")))? = true;
        }
        self.update_sections(edit)?;
        self.remove_sections(&doomed)?;
        self.order_symbols();
        self.add_sections(edit);
        self.settle_extended_indices()
    }

    /// `--update-section`: each updated section takes its new size; its
    /// contents are the update's parts when written. Only sections whose
    /// contents are copied as they are can be given new ones, and none
    /// that a segment holds.
    fn update_sections(&mut self, edit: &Edit<'d>) -> Result<()> {
        for (k, u) in edit.update.iter().enumerate() {
            let s = self
                .secs
                .get_mut(u.index.wrapping_sub(1))
                .ok_or_else(|| invalid(format!("there is no section {} to update", u.index)))?;
            let name = lossy(&s.name);
            if s.sh_type == elf::SHT_NOBITS || !matches!(s.kind, Kind::Plain | Kind::Opaque) {
                return Err(invalid(format!(
                    "section '{name}' cannot be given new contents"
                )));
            }
            if s.parent.is_some() {
                return Err(invalid(format!(
                    "section '{name}' is part of a segment: its size cannot change"
                )));
            }
            s.size = u.size();
            s.update = Some(k);
        }
        Ok(())
    }

    /// The symbols that stay, locals first, each group keeping its order.
    fn order_symbols(&mut self) {
        let kept: Vec<usize> = (0..self.symbols.len())
            .filter(|&k| !self.symbols[k].removed)
            .collect();
        let local = |k: &usize| self.symbols[*k].info >> 4 == STB_LOCAL;
        let mut order: Vec<usize> = kept.iter().copied().filter(local).collect();
        order.extend(kept.iter().copied().filter(|k| !local(k)));
        self.indices_changed |= order.iter().enumerate().any(|(new, &old)| new != old);
        self.order = order;
    }

    /// The added sections, after all others; a section that already has
    /// an added one's name gets its flags.
    fn add_sections(&mut self, edit: &Edit<'d>) {
        for (k, s) in edit.add.iter().enumerate() {
            // --set-section-flags applies to every section of that name.
            for old in self
                .secs
                .iter_mut()
                .filter(|x| !x.removed && *x.name == *s.name)
            {
                set_readonly_exclude(old);
            }
            self.secs.push(Sec::created(
                Cow::Borrowed(s.name),
                Kind::Added(k + 1),
                (elf::SHT_PROGBITS, SHF_EXCLUDE),
                s.data.len() as u64,
                (1, 0),
            ));
        }
    }

    /// The extended index table: needed when a section that had a symbol
    /// defined in it (in the input) gets an index past `SHN_LORESERVE`;
    /// made when missing, removed when not needed.
    fn settle_extended_indices(&mut self) -> Result<()> {
        let reserve = usize::from(elf::SHN_LORESERVE);
        let live: Vec<usize> = (0..self.secs.len())
            .filter(|&i| !self.secs[i].removed)
            .collect();
        let needs_large = live.len() >= reserve && {
            let mut has_symbol = vec![false; self.secs.len()];
            for sym in &self.symbols {
                if let Def::Section(d) = sym.def {
                    has_symbol[d] = true;
                }
            }
            live[reserve - 1..].iter().any(|&i| has_symbol[i])
        };
        let shndx = live
            .iter()
            .copied()
            .find(|&i| self.secs[i].kind == Kind::Shndx);
        match (needs_large, shndx) {
            (true, None) if self.symtab.is_some() => self.secs.push(Sec::created(
                Cow::Borrowed(b".symtab_shndx"),
                Kind::Shndx,
                (elf::SHT_SYMTAB_SHNDX, 0),
                0,
                (4, 4),
            )),
            (false, Some(x)) => {
                let mut doomed = vec![false; self.secs.len()];
                doomed[x] = true;
                self.remove_sections(&doomed)?;
            }
            _ => {}
        }
        Ok(())
    }

    /// llvm-objcopy's `Object::removeSections`: `doomed` sections, the
    /// relocation sections applying to them and groups left without
    /// members go; what still refers to them is an error, or loses it.
    fn remove_sections(&mut self, doomed: &[bool]) -> Result<()> {
        let gone = self.taken_along(doomed);
        if !gone.iter().any(|&g| g) {
            return Ok(());
        }
        // A removed group's members leave the group.
        for (i, &g) in gone.iter().enumerate() {
            if g && let Some((_, members, _)) = self.secs[i].group.clone() {
                for m in members {
                    self.secs[m].flags &= !SHF_GROUP;
                }
            }
        }
        let regrouped = self.drop_references(&gone)?;
        if self.names.is_some_and(|x| gone[x]) {
            return Err(invalid("the section-name string table would be removed"));
        }
        if self.symtab.is_some_and(|x| gone[x]) {
            return Err(invalid("the symbol table would be removed"));
        }
        for (i, members) in regrouped {
            if let Some(g) = &mut self.secs[i].group {
                g.1 = members;
            }
        }
        for (s, g) in self.secs.iter_mut().zip(gone) {
            s.removed |= g;
        }
        Ok(())
    }

    /// The sections that go with `doomed`: those, the relocation sections
    /// applying to one of them, and the groups all of whose members are
    /// among them (sections removed before stay out).
    fn taken_along(&self, doomed: &[bool]) -> Vec<bool> {
        let mut gone = vec![false; self.secs.len()];
        for (i, s) in self.secs.iter().enumerate() {
            if s.removed {
                continue;
            }
            gone[i] = doomed[i]
                || match s.kind {
                    Kind::Rel | Kind::Crel | Kind::DynRel => s.target.is_some_and(|t| doomed[t]),
                    Kind::Group => s
                        .group
                        .as_ref()
                        .is_some_and(|(_, members, _)| members.iter().all(|&m| doomed[m])),
                    _ => false,
                };
        }
        gone
    }

    /// Goes over the sections that stay, in order, for what refers to the
    /// `gone` ones: a link or relocation llvm-objcopy cannot drop is an
    /// error (the first one met); symbols defined in them are removed; each
    /// group's members that stay are returned, (group, members), to be
    /// set once nothing failed.
    fn drop_references(&mut self, gone: &[bool]) -> Result<Vec<(usize, Vec<usize>)>> {
        let name = |i: usize| lossy(&self.secs[i].name);
        let mut regrouped = Vec::new();
        for i in 0..self.secs.len() {
            if gone[i] || self.secs[i].removed {
                continue;
            }
            let s = &self.secs[i];
            let refers = |l: Option<usize>| l.is_some_and(|l| gone[l]);
            match s.kind {
                Kind::SymTab => {
                    if refers(s.link_sec) {
                        return Err(cannot_remove(&name(s.link_sec.unwrap_or(0)), &name(i)));
                    }
                    let mut any = false;
                    for sym in self.symbols.iter_mut().skip(1) {
                        if let Def::Section(d) = sym.def
                            && gone[d]
                            && !sym.removed
                        {
                            sym.removed = true;
                            any = true;
                        }
                    }
                    self.indices_changed |= any;
                }
                Kind::Rel | Kind::Crel => {
                    if s.link != 0 && self.symtab.is_some_and(|t| gone[t]) {
                        return Err(cannot_remove(&name(self.symtab.unwrap_or(0)), &name(i)));
                    }
                    self.check_relocations(i, gone)?;
                }
                Kind::Plain | Kind::DynRel => {
                    if refers(s.link_sec) {
                        return Err(cannot_remove(&name(s.link_sec.unwrap_or(0)), &name(i)));
                    }
                }
                Kind::Group => {
                    let (_, members, sym) = s.group.clone().unwrap_or_default();
                    if s.link != 0 && self.symtab.is_some_and(|t| gone[t]) {
                        return Err(cannot_remove(".symtab", &name(i)));
                    }
                    if let Some(sym) = sym
                        && let Def::Section(d) = self.symbols[sym].def
                        && gone[d]
                    {
                        return Err(Error::usage(format!(
                            "cannot remove the bundle sections: the signature symbol of \
                             group section '{}' is defined in a bundle section",
                            name(i)
                        )));
                    }
                    let members = members.into_iter().filter(|&m| !gone[m]).collect();
                    regrouped.push((i, members));
                }
                Kind::Opaque | Kind::StrTab | Kind::Shndx | Kind::Added(_) => {}
            }
        }
        Ok(regrouped)
    }

    /// Relocation section `i` must not relocate against a symbol defined in
    /// a `gone` section (symbol 0 names none).
    fn check_relocations(&self, i: usize, gone: &[bool]) -> Result<()> {
        let s = &self.secs[i];
        for r in &s.relocs {
            let (sym, r_offset) = (r.r_sym, r.r_offset);
            let Some(symbol) = self.symbols.get(sym as usize).filter(|_| sym != 0) else {
                continue;
            };
            if let Def::Section(d) = symbol.def
                && gone[d]
            {
                let name = |i: usize| lossy(&self.secs[i].name);
                let target = s.target.map_or_else(|| name(i), name);
                return Err(Error::usage(format!(
                    "cannot remove the bundle sections: section '{target}' has a \
                     relocation (offset {:#x}) against symbol '{}', which is \
                     defined in a bundle section",
                    r_offset,
                    lossy(symbol.name)
                )));
            }
        }
        Ok(())
    }
}

/// `--set-section-flags=…=readonly,exclude` on a section that already has
/// the name: only `SHF_EXCLUDE`, plus the flags llvm-objcopy preserves.
fn set_readonly_exclude(s: &mut Sec<'_>) {
    let preserve = (SHF_COMPRESSED
        | SHF_GROUP
        | elf::SHF_LINK_ORDER.0
        | elf::SHF_MASKOS
        | elf::SHF_MASKPROC
        | elf::SHF_TLS.0
        | elf::SHF_INFO_LINK.0)
        & !SHF_EXCLUDE;
    s.flags = (s.flags & preserve) | SHF_EXCLUDE;
    if s.sh_type == elf::SHT_NOBITS {
        // Not allocated any more: it becomes PROGBITS, still without
        // contents.
        s.sh_type = elf::SHT_PROGBITS;
        s.was_nobits = true;
    }
}

/// The error for section `what` still referred to by section `by`.
fn cannot_remove(what: &str, by: &str) -> Error {
    Error::usage(format!(
        "cannot remove the bundle sections: section '{what}' is referenced by the section '{by}'"
    ))
}
