//! What `cuobjdump` reads of a file: its units (the file, or each member
//! of a static archive, in order) and, in each, its device code in file
//! order: the entries of the CUDA fatbins its sections hold, or the file
//! itself when it is a cubin.
//!
//! Fatbins are found by the scanner, through section headers only (no raw
//! scan: cuobjdump reads the fatbin sections): `.nv_fatbin` holds the
//! executable fatbins, `__nv_relfatbin` the relocatable ones (`-rdc`);
//! a PE image names them `.nv_fatb` and `__nv_rel`, Mach-O `__nv_fatbin`.
//! A file that is a fatbin is an executable one. Without `-all` a unit's
//! executable fatbins are read when it has any, its relocatable ones
//! otherwise; with it, the executable ones first.

use crate::fatbin::{self, Entry};
use crate::scan::{self, ContainerKind, Mode, Options, ProblemKind};

/// One piece of device code, in the order cuobjdump meets it.
pub(super) enum Item<'d> {
    /// An entry of a fatbin.
    Entry(Entry<'d>),
    /// A unit that is a cubin: its bytes, and its SM as cuobjdump names
    /// it (`sm_80`, `sm_90a`).
    Cubin { bytes: &'d [u8], arch: String },
}

/// The file, or one member of an archive.
pub(super) struct Unit<'d> {
    /// The member's name, for an archive's member.
    pub member: Option<String>,
    /// Whether it holds device code: a fatbin (even an empty one) or a
    /// cubin.
    pub device_code: bool,
    /// Its device code, in order.
    pub items: Vec<Item<'d>>,
    /// A file that is (or should be) a fatbin, and whose fatbin header
    /// could not be read after `items`: cuobjdump stops there.
    pub broken: bool,
    /// Why part of it could not be read (its host headers are damaged, a
    /// container in it is), when the scan says so: a unit where no device
    /// code was found then says so beside cuobjdump's message.
    pub damage: Option<String>,
    /// An archive member cut short, where cuobjdump stops with its
    /// `archive member size exceeds library bounds`.
    pub cut: bool,
}

/// The units of the file `data`: the archive's members, each read as a
/// file (a thin archive's members, whose bytes lie elsewhere, hold
/// nothing here), or the file itself. `all`: read relocatable fatbins
/// beside executable ones.
pub(super) fn units(data: &[u8], all: bool) -> Vec<Unit<'_>> {
    if !crate::host::ar::is_archive(data) {
        if fatbin::has_magic(data) || data.len() < FATBIN_HEADER {
            return vec![bare_fatbins(data)];
        }
        return vec![unit(None, data, all)];
    }
    let damaged = |why: String| {
        let mut u = unit(None, &[], all);
        u.damage = Some(why);
        u
    };
    let archive = match crate::host::ar::Archive::parse(data) {
        Ok(a) => a,
        Err(e) => return vec![damaged(format!("the archive cannot be read: {e}"))],
    };
    let mut out = Vec::new();
    for m in archive.members() {
        match m {
            // A member whose bytes reach past the archive's end: cuobjdump
            // stops there with two `fatal` lines (exit 1).
            Ok(m) if !m.is_thin() && m.data().is_err() => {
                let mut u = damaged(format!("the member {} is cut short", m.name_lossy()));
                u.cut = true;
                out.push(u);
                break;
            }
            Ok(m) => {
                let bytes = m.data().unwrap_or_default();
                out.push(unit(Some(m.name_lossy()), bytes, all));
            }
            // cuobjdump stops at a damaged member header too.
            Err(e) => {
                out.push(damaged(format!("a member cannot be read: {e}")));
                break;
            }
        }
    }
    out
}

/// Where a fatbin lies: in an executable fatbin section (or is the file),
/// in a relocatable one, or elsewhere (not read).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    Executable,
    Relocatable,
    Elsewhere,
}

fn place(section: Option<&str>) -> Place {
    match section {
        None | Some(".nv_fatbin" | ".nv_fatb" | "__nv_fatbin") => Place::Executable,
        Some("__nv_relfatbin" | "__nv_rel") => Place::Relocatable,
        Some(_) => Place::Elsewhere,
    }
}

/// The bytes of a fatbin container's header: a shorter file is taken as
/// a fatbin whose header cannot be read (cuobjdump 13.5 says so of an
/// empty file, or of 15 bytes of text; 16 bytes without the magic hold
/// no device code).
const FATBIN_HEADER: usize = 16;

/// A file that starts with the fatbin magic (or is too short to tell):
/// its containers back to back, up to the first that does not read.
fn bare_fatbins(data: &[u8]) -> Unit<'_> {
    let mut items = Vec::new();
    let mut at = 0usize;
    let broken = loop {
        let Some(fb) = data.get(at..).and_then(|d| fatbin::read(d).ok()) else {
            break true;
        };
        let size = usize::try_from(fb.size).unwrap_or(usize::MAX);
        items.extend(fb.entries.into_iter().map(Item::Entry));
        at = at.saturating_add(size.max(FATBIN_HEADER));
        if at >= data.len() {
            break false;
        }
    };
    Unit {
        member: None,
        device_code: !broken || !items.is_empty(),
        items,
        broken,
        damage: None,
        cut: false,
    }
}

fn unit<'d>(member: Option<String>, data: &'d [u8], all: bool) -> Unit<'d> {
    if let Some(arch) = cubin_arch(data) {
        return Unit {
            member,
            device_code: true,
            items: vec![Item::Cubin { bytes: data, arch }],
            broken: false,
            damage: None,
            cut: false,
        };
    }
    let opts = Options {
        mode: Mode::Sections,
        ptx_text: false,
        ..Options::default()
    };
    let report = scan::scan(data, &opts);
    let mut found: Vec<(u64, Place)> = report
        .containers
        .iter()
        .filter(|c| c.kind == ContainerKind::CudaFatbin && c.parent.is_none())
        .filter_map(|c| Some((c.offset?, place(c.section.as_deref()))))
        .filter(|&(_, p)| p != Place::Elsewhere)
        .collect();
    found.sort_unstable_by_key(|&(at, _)| at);
    found.dedup_by_key(|&mut (at, _)| at);
    // Executable fatbins first, then relocatable ones, each in file
    // order: what cuobjdump 13.5 does under `-all` with libnvshmem_host,
    // whose `__nv_relfatbin` comes before its `.nv_fatbin`.
    found.sort_by_key(|&(at, p)| (p != Place::Executable, at));
    let device_code = !found.is_empty();
    if !all && found.iter().any(|&(_, p)| p == Place::Executable) {
        found.retain(|&(_, p)| p == Place::Executable);
    }
    let items = found
        .iter()
        .filter_map(|&(at, _)| data.get(usize::try_from(at).ok()?..))
        .filter_map(|bytes| fatbin::read(bytes).ok())
        .flat_map(|fb| fb.entries)
        .map(Item::Entry)
        .collect();
    let damage = report
        .problems
        .iter()
        .find(|p| p.kind == ProblemKind::Damage)
        .map(|p| p.message.clone());
    Unit {
        member,
        device_code,
        items,
        broken: false,
        damage,
        cut: false,
    }
}

/// The SM of `data` as cuobjdump names a cubin (`sm_90a` when the cubin
/// marks arch-specific code), when it is one (an ELF file for `EM_CUDA`).
pub(super) fn cubin_arch(data: &[u8]) -> Option<String> {
    let peek = crate::host::elf::peek(data)?;
    if peek.machine() != Some(object::elf::EM_CUDA) {
        return None;
    }
    let t = fatbin::cubin::read(data)?;
    Some(format!(
        "sm_{}{}",
        t.sm,
        if t.arch_specific { "a" } else { "" }
    ))
}
