//! The recursive walk: files, archive members, sections, byte ranges that
//! hold containers, containers and their images.
//!
//! This file holds the entry points and what a file is and where its walk
//! starts; `walker` holds what the parts share (the [`Walker`]'s state, the
//! limits and the budget, recording what is found, the helpers the
//! container kinds have in common); each kind's walk is its own file:
//! `archive` (`ar` archives), `object_file` (object files' sections),
//! `wrappers` (fatbin wrappers), `raw` (byte ranges: sequences of
//! containers and the raw scan), `offload_binary`, `bundle` (binary and
//! text bundles, object bundles' entries), `ccob` (compressed bundles),
//! `cuda_fatbin`, `stream` (compressed contents streamed through taps), and
//! `bare` (files that are themselves one device image).

mod archive;
mod bare;
mod bundle;
mod ccob;
mod cuda_fatbin;
mod object_file;
mod offload_binary;
mod raw;
mod stream;
mod walker;
mod wrappers;

use super::magic::{Finders, Magic};
use super::sections;
use super::{Mode, NoVisit, Options, Report, Visit};
use archive::MAX_THIN_READS;
use walker::{Expect, Loc, Walker};

#[cfg(test)]
pub(super) use walker::DECODER_SETUP;

/// Whether `head`, the first bytes of a file, say the file is one device
/// image (a cubin, an AMDGPU code object, PTX, SPIR-V or GPU bitcode), as
/// the scan tells such a file.
pub(crate) fn is_image_file(head: &[u8]) -> bool {
    bare::detect(head).is_some()
}

/// Scans `data`, the bytes of a whole file. See the [module docs](super).
pub fn scan(data: &[u8], opts: &Options) -> Report {
    scan_with(data, opts, &mut NoVisit)
}

/// [`scan`], handing the bytes of the images `visit` wants to `visit`.
pub fn scan_with(data: &[u8], opts: &Options, visit: &mut dyn Visit) -> Report {
    scan_of(data, opts, visit, crate::host::file_kind(data).ok())
}

/// [`scan_with`] for a caller that read the format of `data` already:
/// `kind` is what `object::FileKind::parse` gives for it (`None` for an
/// error), so that a command reads a file's format once.
pub(crate) fn scan_of(
    data: &[u8],
    opts: &Options,
    visit: &mut dyn Visit,
    kind: Option<object::FileKind>,
) -> Report {
    let finders = Finders::new();
    let mut w = Walker {
        opts,
        finders: &finders,
        visit,
        report: Report::default(),
        budget: opts.max_uncompressed,
        thin_chain: Vec::new(),
        thin_reads: MAX_THIN_READS,
        spare: Vec::new(),
        decoding: Vec::new(),
        wrapper_checks: Vec::new(),
    };
    let top = Loc {
        abs: Some(0),
        ..Loc::default()
    };
    w.report.host = sections::host_of(kind);
    w.report.format = w.file(data, &top, 0, w.report.host);
    w.resolve_wrappers();
    if w.report.stopped.is_some() {
        // Incomplete, and possibly large: what was found is not kept.
        w.report.images = Vec::new();
        w.report.containers = Vec::new();
    }
    w.report
}

impl Walker<'_> {
    /// Scans a whole file (or archive member) whose host format is `host`
    /// ([`sections::host_kind`]); returns what it is.
    fn file(
        &mut self,
        data: &[u8],
        loc: &Loc,
        nest: u32,
        host: Option<object::FileKind>,
    ) -> &'static str {
        if let Some(f) = super::unread_format(data) {
            // Not read: its bytes say nothing of what it holds.
            self.problem(loc, None, f.why());
            if self.report.unread.is_none() {
                self.report.unread = Some(*f);
                self.report.unread_member = loc.member.clone();
            }
            return "unread";
        }
        let starts = Magic::at_start(data);
        let raw_format = match starts {
            Some(Magic::OffloadBinary) => "offload-binary",
            Some(Magic::Bundle) => "bundle",
            Some(Magic::Ccob) => "ccob",
            Some(Magic::Fatbin) => "cuda-fatbin",
            // What the file is, even when its structure is not used.
            None if data.starts_with(crate::host::ar::MAGIC)
                || data.starts_with(crate::host::ar::THIN_MAGIC) =>
            {
                "archive"
            }
            None => host.map_or("data", sections::format_name),
        };
        if self.opts.mode == Mode::Raw {
            self.report.used_raw_scan = true;
            self.region(data, loc, Expect::Raw { whole: true });
            return raw_format;
        }
        if data.starts_with(crate::host::ar::MAGIC) || data.starts_with(crate::host::ar::THIN_MAGIC)
        {
            self.archive(data, loc, nest);
            return "archive";
        }
        if let Some(b) = bare::detect(data) {
            let format = b.format;
            self.bare_image(data, b, loc);
            return format;
        }
        let parsed = host.map(|k| sections::parse(data, k));
        if let Some(Ok(o)) = &parsed
            && let Some(d) = &o.damage
        {
            self.damaged_file(loc, None, d.clone());
        }
        match parsed {
            Some(Ok(o)) if o.has_sections => {
                self.report.used_sections = true;
                self.object(&o, loc);
                for (name, n) in o.fatbins_elsewhere() {
                    sections::add_elsewhere(&mut self.report.fatbins_elsewhere, &name, n);
                }
                return o.format;
            }
            Some(Ok(o)) => {
                if self.opts.mode == Mode::Auto {
                    self.report.used_raw_scan = true;
                    self.region(data, loc, Expect::Raw { whole: false });
                } else {
                    self.problem(loc, None, "the file has no section headers".into());
                }
                return o.format;
            }
            Some(Err(e)) => {
                let msg = format!("cannot read the object file: {e}");
                if self.opts.mode == Mode::Auto {
                    self.report.used_raw_scan = true;
                    self.damaged_file(loc, None, format!("{msg}; scanned it raw instead"));
                    self.region(data, loc, Expect::Raw { whole: false });
                } else {
                    self.damaged_file(loc, None, msg);
                }
                return "object";
            }
            None => {}
        }
        match (self.opts.mode, starts) {
            (_, Some(_)) => self.region(data, loc, Expect::Sequence { whole: true }),
            (Mode::Auto, None) => {
                self.report.used_raw_scan = true;
                self.region(data, loc, Expect::Raw { whole: true });
            }
            _ => {}
        }
        raw_format
    }
}
