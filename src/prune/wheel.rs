//! Pruning a wheel (any zip): each ELF, PE or static-archive member pruned
//! into a temporary file (as the file named alone would be), every other
//! member copied as it is stored, and each RECORD that
//! names a pruned member given its new hash and size ([`new_record`]), so
//! that pip installs it.
//!
//! Members are inflated within one decompression budget for the whole
//! wheel, the one `inspect` gives a file of its size
//! ([`crate::scan::default_max_uncompressed`], or
//! [`Options::max_uncompressed`](super::Options::max_uncompressed)):
//! each member's declared size is taken from it before anything is
//! inflated, and a member that inflates to more or fewer bytes than it
//! declares is an error.

use std::path::Path;
use std::sync::Arc;

#[cfg(test)]
use super::budget::Budget;
use super::budget::inflate;
use super::job::{Found, Job};
use super::member::Became;
use super::model::Selection;
use super::path::{PathError, PathErrorKind, PathOptions, PathReport, Pruning};
use crate::files::Input;
use crate::package::Held;
use crate::package::zipfile::{self, Archive, Decide, Fate, MemberRead, New, Zip};

/// A wheel (any zip), `input` with `meta`, mapped as `file`: each ELF, PE or
/// static-archive member pruned, every other member copied as it is stored, and each
/// `.dist-info/RECORD` that names a pruned member given its new hash and
/// size, so that pip installs it. A signed wheel (`RECORD.jws`,
/// `RECORD.p7s`) that would change is refused: its signature would no
/// longer verify.
pub(crate) fn prune(
    sel: &Selection,
    opts: &PathOptions,
    input: &Path,
    meta: &std::fs::Metadata,
    file: &Input,
) -> Result<PathReport, PathError> {
    let data = file.bytes();
    let job = Job::new(sel, opts, input);
    let name = job.name.clone();
    let mut archive = Archive::open(data).map_err(|e| PathError::zip_file(input, e))?;
    if super::packed::is_conda(&archive.zip) {
        // Refused when it holds what the rules drop; else copied as it is.
        let kind = crate::package::Kind::Zip;
        super::packed::pruning(sel, input, &name, data, kind, &opts.prune)?;
    }
    let mut budget = job.budget(data);
    let mut d = Members::new(sel, opts, input, &name, PathReport::new(&name, data, meta));
    let plan = zipfile::rewrite(&mut archive, &mut budget, &mut d)
        .map_err(|e| PathError::failed(input, e))?;
    let rep = d.finish()?;
    let unchanged = plan.unchanged(0);
    if !unchanged {
        not_signed(&archive, input, &name)?;
    }
    let dest = opts.output_path(input)?;
    let size = data.len() as u64;
    job.write((meta, size), (dest, unchanged), rep, |out, dest| {
        let file = out
            .temp_file()
            .ok_or_else(|| PathError::write(dest, None))?;
        plan.write(&mut archive, 0, file)
            .map_err(|e| PathError::zip_file(input, e))
    })
}

/// Refuses the wheel `archive` (`input`, named `name`) when it is signed
/// (`RECORD.jws`, `RECORD.p7s`): a changed wheel's signature would not
/// verify.
pub(super) fn not_signed(archive: &Archive<'_>, input: &Path, name: &str) -> Result<(), PathError> {
    let signed =
        |n: &str| n.ends_with(".dist-info/RECORD.jws") || n.ends_with(".dist-info/RECORD.p7s");
    let Some(sig) = archive.find(signed) else {
        return Ok(());
    };
    let why = format!(
        "it is signed ('{sig}'), and a pruned wheel's signature would not verify: remove the \
         signature files from it first"
    );
    Err(PathError::said(PathErrorKind::Refused, input, name, why))
}

/// What prune decides of a wheel's members, one output: each ELF, PE,
/// static-archive or package member pruned as the file named alone
/// would be, each per-GPU file whose GPU the rules drop removed unread,
/// noting in the report what it did (the linked members rewritten in
/// place rather than shrunk, and why, in its `not_shrunk`; the members
/// removed whole in its `removed`). `split` asks one per group.
pub(super) struct Members<'a> {
    /// The wheel and how it is pruned.
    job: Job<'a>,
    /// The options each member is pruned with.
    each: super::Options,
    /// What its members held.
    found: Found,
}

impl<'a> Members<'a> {
    /// The decider of the wheel `input` (named `name`) for the selection
    /// `sel`, reporting into `rep` (the wheel's [`PathReport::new`]).
    pub(super) fn new(
        sel: &'a Selection,
        opts: &'a PathOptions,
        input: &'a Path,
        name: &'a str,
        rep: PathReport,
    ) -> Members<'a> {
        Members {
            job: Job {
                name: name.to_string(),
                ..Job::new(sel, opts, input)
            },
            each: Pruning::member_options(&opts.prune),
            found: Found::new(rep),
        }
    }

    /// The report so far.
    pub(super) fn report(&self) -> &PathReport {
        &self.found.rep
    }

    /// The report, once the read is over: refused when no device image
    /// of the wheel would stay (unless the options allow it).
    pub(super) fn finish(self) -> Result<PathReport, PathError> {
        self.found.finish(&self.job)
    }
}

impl Decide<Zip> for Members<'_> {
    type Bytes = Input;
    type Error = PathError;
    const REACH: usize = super::job::REACH;

    fn outputs(&self) -> usize {
        1
    }

    /// A library's per-GPU file whose GPU the rules drop
    /// ([`super::companion`]) goes, unread, and is reported (a directory
    /// entry of such files goes with them, unreported).
    /// [`PathOptions::keep_files`] keeps them.
    fn by_name(&mut self, m: &MemberRead<'_>) -> Result<Option<Vec<Fate>>, PathError> {
        let Some(c) = self.job.dropped(m.name) else {
            return Ok(None);
        };
        if !m.is_dir {
            self.job
                .removed_by_name(&mut self.found.rep, m.name, m.size, &c);
        }
        Ok(Some(vec![Fate::Removed]))
    }

    /// An ELF file, a Windows PE image (a DLL or `.pyd`), a static archive
    /// or a package (a tar archive, a compressed file, a zip: looked
    /// through by [`Pruning::of`]) may start so; a DOS program is a PE
    /// image only if its headers say so, which [`Self::decide`] reads.
    fn wants(&self, _: &MemberRead<'_>, head: &[u8]) -> bool {
        super::job::wanted(head)
    }

    fn inflate(
        &mut self,
        m: &MemberRead<'_>,
        head: &[u8],
        reader: &mut dyn std::io::Read,
    ) -> Result<Input, PathError> {
        inflate(self.job.input, m.name, head, reader, m.size)
    }

    fn decide(
        &mut self,
        m: &MemberRead<'_>,
        bytes: Held<'_, Input>,
    ) -> Result<Option<Vec<Fate>>, PathError> {
        let bytes = bytes.bytes();
        let new_member = match self.found.whole(&self.job, &self.each, m.name, bytes)? {
            Became::AsItWas => return Ok(None),
            Became::Removed => return Ok(Some(vec![Fate::Removed])),
            Became::Rewritten(new) => new,
        };
        let new = New::written(|w| new_member.write_to(w, &[bytes])).map_err(|e| self.job.io(e))?;
        Ok(Some(vec![Fate::Replaced(Arc::new(new))]))
    }

    fn wrong(&mut self, w: &super::tamper::Wrong<'_>) -> Result<(), PathError> {
        let job = &self.job;
        super::tamper::settle(job.opts, job.input, &job.name, w, &mut self.found.rep)
    }
}

#[cfg(test)]
mod tests {
    use std::io::{Read, Write as _};

    use super::*;

    #[test]
    fn the_budget_is_taken_before_inflating_and_named_in_the_error() {
        let mut b = Budget::new(1_536_000, None);
        assert_eq!(b.left, 1_572_864_000);
        let x = Path::new("x.whl");
        b.take(x, "pkg/a.so", 1_000).unwrap();
        let e = b.take(x, "pkg/libbig.so", 1_610_612_800).unwrap_err();
        assert_eq!(
            e.to_string(),
            "'x.whl': member 'pkg/libbig.so' inflates to 1610612800 bytes, more than the \
             1572863000 left of the decompression budget (1024 times the file's size; \
             --max-uncompressed sets it)"
        );
        // Nothing was taken by the refusal.
        assert_eq!(b.left, 1_572_863_000);
        assert!(Budget::new(10, None).why.starts_with("128M"));
        assert!(Budget::new(1 << 40, None).why.starts_with("16G"));
        let mut given = Budget::new(1 << 40, Some(100));
        let e = given.take(x, "m", 101).unwrap_err().to_string();
        assert!(e.ends_with("the 100 left of the decompression budget (--max-uncompressed)"));
    }

    /// A zip of one deflated member `m.so`: `bytes`.
    fn zip_of(bytes: &[u8]) -> Vec<u8> {
        let mut z = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated);
        z.start_file("m.so", opts).unwrap();
        z.write_all(bytes).unwrap();
        z.finish().unwrap().into_inner()
    }

    /// Grabs the one ELF member a rewrite reads whole.
    struct Grab(Option<Vec<u8>>);

    impl Decide<Zip> for Grab {
        type Bytes = Input;
        type Error = PathError;
        const REACH: usize = 512;
        fn outputs(&self) -> usize {
            1
        }
        fn by_name(&mut self, _: &MemberRead<'_>) -> Result<Option<Vec<Fate>>, PathError> {
            Ok(None)
        }
        fn wants(&self, _: &MemberRead<'_>, head: &[u8]) -> bool {
            head.starts_with(b"\x7fELF")
        }
        fn inflate(
            &mut self,
            m: &MemberRead<'_>,
            head: &[u8],
            reader: &mut dyn Read,
        ) -> Result<Input, PathError> {
            inflate(Path::new("x.whl"), m.name, head, reader, m.size)
        }
        fn decide(
            &mut self,
            _: &MemberRead<'_>,
            b: Held<'_, Input>,
        ) -> Result<Option<Vec<Fate>>, PathError> {
            self.0 = Some(b.bytes().to_vec());
            Ok(None)
        }
        fn wrong(&mut self, _: &super::super::tamper::Wrong<'_>) -> Result<(), PathError> {
            Ok(())
        }
    }

    /// The ELF member of the wheel `data`: its bytes, or the error.
    fn member_of(data: &[u8], budget: &mut Budget) -> Result<Vec<u8>, String> {
        let x = Path::new("x.whl");
        let mut a = Archive::open(data).map_err(|e| chain(&PathError::zip_file(x, e)))?;
        let mut grab = Grab(None);
        zipfile::rewrite(&mut a, budget, &mut grab).map_err(|e| chain(&PathError::failed(x, e)))?;
        Ok(grab.0.unwrap())
    }

    /// `e` and its causes joined by ": ".
    fn chain(e: &dyn std::error::Error) -> String {
        let mut parts = vec![e.to_string()];
        let mut cause = e.source();
        while let Some(c) = cause {
            parts.push(c.to_string());
            cause = c.source();
        }
        parts.join(": ")
    }

    /// `data` with the uncompressed size of its one member, in the local
    /// header and in the central directory, set to `size`.
    fn declaring(data: &[u8], size: u32) -> Vec<u8> {
        let mut d = data.to_vec();
        d[22..26].copy_from_slice(&size.to_le_bytes());
        let cd = d.windows(4).rposition(|w| w == b"PK\x01\x02").unwrap();
        d[cd + 24..cd + 28].copy_from_slice(&size.to_le_bytes());
        d
    }

    #[test]
    fn members_inflate_to_their_declared_size_within_the_budget() {
        let mut elf = b"\x7fELF".to_vec();
        elf.resize(1000, 7);
        let data = zip_of(&elf);
        let mut b = Budget::new(0, Some(2500));
        assert_eq!(member_of(&data, &mut b).unwrap(), elf);
        assert_eq!(member_of(&data, &mut b).unwrap(), elf);
        assert_eq!(b.left, 500);
        let e = member_of(&data, &mut b).unwrap_err();
        assert!(
            e.contains("member 'm.so' inflates to 1000 bytes, more than the 500 left"),
            "{e}"
        );
        // Declaring fewer bytes than it holds, or more.
        let mut b = Budget::new(0, None);
        let e = member_of(&declaring(&data, 900), &mut b).unwrap_err();
        assert!(e.starts_with("'x.whl': member 'm.so'"), "{e}");
        assert!(e.contains("more") || e.contains("larger"), "{e}");
        let e = member_of(&declaring(&data, 1100), &mut b).unwrap_err();
        assert_eq!(
            e,
            "'x.whl': member 'm.so' inflates to 1000 bytes, fewer than the 1100 it declares"
        );
    }
}
