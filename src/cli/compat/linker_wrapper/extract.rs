//! Reading the link's device binaries: every file the link names
//! ([`crate::link::inputs`]), in order, read as LLVM 22 reads it —
//! ELF objects and executables, COFF objects, LLVM bitcode, raw
//! OffloadBinaries, archives (regular, thin, nested) — each binary with
//! its target, offload kind, and whether it is an archive's (taken only
//! for a linked target: [`crate::link::select`]).

use std::io::Write;
use std::path::Path;

use super::super::Fail;
use crate::cli::images::{self, Streams};
use crate::cli::io::{Input, open_input};
use crate::container::{ar, elf};
use crate::link::HostArg;
use crate::link::inputs::{HostFile, host_files};
use crate::link::plan::Binary;
use crate::link::select::TargetId;
use crate::offload_binary::{self, Budget, Inflate, Streamed};

/// Whether the file `path` is an archive or a shared object by its magic:
/// what LLVM 22 copies from the host link into a CPU target's device link.
pub(super) fn is_library(path: &str) -> bool {
    use std::io::Read;
    let p = Path::new(path);
    if !p.is_file() {
        return false;
    }
    let mut head = [0u8; 20];
    let n = std::fs::File::open(p)
        .and_then(|mut f| f.read(&mut head))
        .unwrap_or(0);
    let head = &head[..n];
    ar::is_archive(head) || elf::is_shared_object(head)
}

/// One device binary of the link.
pub(super) struct Extracted {
    /// The file it came from (an archive member's name for members),
    /// whose stem names its temporary file.
    pub input: String,
    /// What the plan needs: target, kind, from an archive.
    pub binary: Binary,
    /// Where its bytes are.
    source: Source,
}

/// Where an extracted image's bytes are: a slice of one of the mapped
/// inputs (the usual case: they are never copied into memory), the whole
/// of a mapped temporary file (an image of a compressed OffloadBinary,
/// streamed into it), or owned (an image whose bytes are not a slice of
/// its input, such as one decoded from LLVM bitcode).
enum Source {
    Slice {
        file: usize,
        start: usize,
        len: usize,
    },
    Inflated(usize),
    Owned(Vec<u8>),
}

/// The link's device binaries, and the mapped inputs their bytes lie in.
pub(super) struct Extraction {
    files: Vec<Input>,
    /// The temporary files images of compressed binaries were streamed to.
    inflated: Vec<Input>,
    pub images: Vec<Extracted>,
}

impl Extraction {
    /// Writes the bytes of `e` to `out`, file to file where they lie in a
    /// mapped input or temporary file.
    pub fn write(&self, e: &Extracted, out: &mut std::fs::File) -> std::io::Result<()> {
        match &e.source {
            Source::Slice { file, start, len } => {
                let input = &self.files[*file];
                input.copy_to(&input.bytes()[*start..*start + *len], out)
            }
            Source::Inflated(k) => {
                let temp = &self.inflated[*k];
                temp.copy_to(temp.bytes(), out)
            }
            Source::Owned(v) => out.write_all(v),
        }
    }

    /// The binaries, as the plan takes them.
    pub fn binaries(&self) -> Vec<Binary> {
        self.images.iter().map(|e| e.binary.clone()).collect()
    }
}

/// The innermost archive member of a found image's member path
/// (`outer.a(inner.o)` → `inner.o`).
fn innermost(member: &str) -> &str {
    match (member.rfind('('), member.strip_suffix(')')) {
        (Some(open), Some(_)) if open + 2 < member.len() => &member[open + 1..member.len() - 1],
        _ => member,
    }
}

/// The device binaries of one file (or thin archive member) `name`,
/// mapped as input `file`; `lazy` for an archive's not under
/// `--whole-archive`. Images of compressed binaries are streamed into
/// temporary files, pushed to `inflated`.
fn images_of(
    name: &str,
    found: &Streamed<'_>,
    (file, base): (usize, &[u8]),
    lazy: bool,
    inflated: &mut Vec<Input>,
) -> Result<Vec<Extracted>, Fail> {
    let mut out = Vec::new();
    let mut streams = Streams::new(found);
    for f in &found.images {
        let img = &f.image;
        let target = TargetId::new(
            String::from_utf8_lossy(img.triple()),
            String::from_utf8_lossy(img.arch()),
        );
        let temp = streams
            .inflate_to_temp_file(f)
            .map_err(|e| match images::data_error(&e) {
                Some(bad) => bad_data(name, bad),
                None => Fail::new(format!(
                    "'{name}': cannot write a temporary file: {}",
                    crate::cli::io::strerror(&e)
                )),
            })?;
        let source = match (temp, &img.image) {
            (Some(temp), _) => {
                inflated.push(temp);
                Source::Inflated(inflated.len() - 1)
            }
            (None, std::borrow::Cow::Borrowed(b)) => match slice_at(base, b) {
                Some(start) => Source::Slice {
                    file,
                    start,
                    len: b.len(),
                },
                None => Source::Owned(b.to_vec()),
            },
            (None, std::borrow::Cow::Owned(v)) => Source::Owned(v.clone()),
        };
        let input = f.member.as_deref().map_or(name, innermost).to_string();
        out.push(Extracted {
            input,
            binary: Binary {
                target,
                kind: img.offload_kind,
                lazy,
            },
            source,
        });
    }
    Ok(out)
}

/// Where `sub` starts in `base`, if it is a slice of it.
fn slice_at(base: &[u8], sub: &[u8]) -> Option<usize> {
    let start = (sub.as_ptr() as usize).checked_sub(base.as_ptr() as usize)?;
    (start.checked_add(sub.len())? <= base.len()).then_some(start)
}

/// The images in `bytes` (of the file `name`), spending from `budget`;
/// those of compressed binaries pending, their data checked (streamed
/// through), and streamed again by [`images_of`].
fn find<'a>(name: &str, bytes: &'a [u8], budget: &Budget) -> Result<Streamed<'a>, Fail> {
    offload_binary::find_images_streamed(bytes, budget, Inflate::Check)
        .map_err(|e| bad_data(name, &e))
}

/// Offloading data of the file `name` that cannot be read: LLVM's line
/// first, as the packager drop-in prints it, then ours; past a limit of
/// the budget (LLVM has none), ours, naming the limit and how to raise it.
fn bad_data(name: &str, e: &crate::Error) -> Fail {
    let env = format!("{}=SIZE", images::MAX_UNCOMPRESSED_ENV);
    match images::raise_hint(e, &env) {
        Some(hint) => Fail::with_note(format!("'{name}': {e}"), hint),
        None if matches!(e.kind(), crate::ErrorKind::BudgetExceeded { .. }) => {
            Fail::new(format!("'{name}': {e}"))
        }
        None => Fail::with_note(
            e.llvm_message(),
            format!("'{name}': invalid offloading data: {e}"),
        ),
    }
}

/// The members of a thin archive: each name as stored, and the file it
/// names (beside the archive unless absolute).
fn thin_members(name: &str, bytes: &[u8]) -> Result<Vec<(String, String)>, Fail> {
    let bad = |e: &dyn std::fmt::Display| Fail::new(format!("'{name}': {e}"));
    let archive = ar::Archive::parse(bytes).map_err(|e| bad(&e))?;
    let mut out = Vec::new();
    for m in archive.members() {
        let m = m.map_err(|e| bad(&e))?;
        let mname = m.name_lossy();
        let path = ar::thin_member_path(Path::new(name), &mname);
        out.push((mname, path.to_string_lossy().into_owned()));
    }
    Ok(out)
}

/// Reads the device binaries of every file the link names, in order, as
/// LLVM 22's wrapper does: shared objects are skipped, a library that is
/// not found is fatal where it is met, anything unreadable in a file that
/// holds offloading data is fatal.
pub(super) fn extract(host: &[HostArg]) -> Result<Extraction, Fail> {
    let mut out = Vec::new();
    let mut inputs = Vec::new();
    let mut inflated = Vec::new();
    // One budget for every input and every binary in them.
    let budget = images::dropin_budget().map_err(Fail::new)?;
    for f in host_files(host) {
        let (name, whole) = match f {
            HostFile::File { path, whole } => (path, whole),
            HostFile::Missing(l) => {
                return Err(Fail::new(format!("unable to find library -l{l}")));
            }
        };
        let input = open_input(&name)
            .map_err(|e| Fail::new(format!("'{name}': {}", crate::cli::io::error_text(&e))))?;
        if elf::is_shared_object(input.bytes()) {
            continue; // LLVM takes no device code from shared objects.
        }
        budget.add_input(input.bytes().len() as u64);
        inputs.push(input);
        let file = inputs.len() - 1;
        let bytes = inputs[file].bytes();
        let lazy = ar::is_archive(bytes) && !whole;
        if ar::is_thin(bytes) {
            // The members are files beside the archive, read (and mapped)
            // as LLVM reads them.
            for (mname, path) in thin_members(&name, bytes)? {
                // LLVM's line names the member; the note, where it was looked for.
                let member = Input::open(&path).map_err(|e| {
                    Fail::with_note(
                        format!("'{mname}': {}", crate::cli::io::strerror(&e)),
                        format!("'{path}': a member of the thin archive '{name}'"),
                    )
                })?;
                if elf::is_shared_object(member.bytes()) {
                    continue;
                }
                budget.add_input(member.bytes().len() as u64);
                inputs.push(member);
                let file = inputs.len() - 1;
                let data = inputs[file].bytes();
                let full = format!("{name}({mname})");
                let found = find(&full, data, &budget)?;
                out.extend(images_of(
                    &mname,
                    &found,
                    (file, data),
                    lazy,
                    &mut inflated,
                )?);
            }
            continue;
        }
        let found = find(&name, bytes, &budget)?;
        out.extend(images_of(
            &name,
            &found,
            (file, bytes),
            lazy,
            &mut inflated,
        )?);
    }
    Ok(Extraction {
        files: inputs,
        inflated,
        images: out,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn member_names() {
        assert_eq!(innermost("m.o"), "m.o");
        assert_eq!(innermost("lib.a(m.o)"), "m.o");
        assert_eq!(innermost("b.a(c.a)(d.o)"), "d.o");
        assert_eq!(innermost("x()"), "x()");
    }
}
