//! Reading the link's device binaries: every file the link names
//! ([`super::inputs`]), in order, read as LLVM 22 reads it —
//! ELF objects and executables, COFF objects, LLVM bitcode, raw
//! OffloadBinaries, archives (regular, thin, nested) — each binary with
//! its target, offload kind, and whether it is an archive's (taken only
//! for a linked target: [`super::select`]).

use std::io::{self, Write};
use std::path::Path;

use super::HostArg;
use super::failure::{Failure, strerror};
use super::inputs::{HostFile, host_files};
use super::job::Found;
use super::plan::Binary;
use super::select::TargetId;
use crate::files::Input;
use crate::host::{ar, elf};
use crate::offload_binary::{self, Budget, Inflate, Streamed};

/// How the caller's images of compressed binaries are streamed, and how
/// its budget is raised.
pub struct Reading<'a> {
    /// The images of one file's compressed binaries that
    /// [`offload_binary::find_images_streamed`] left pending, each
    /// streamed into a temporary file of its own (mapped), in the order of
    /// `images`; `None` for the others, whose bytes are at hand.
    pub inflate: &'a mut dyn FnMut(&Streamed<'_>) -> io::Result<Vec<Option<Input>>>,
    /// The damaged data an error of `inflate` says it met, if that is
    /// what it says (else it could not write a temporary file).
    pub data_error: &'a dyn Fn(&io::Error) -> Option<&crate::Error>,
    /// The hint after an error for going past a limit of the budget: how
    /// to raise it (`None` for other errors).
    pub raise_hint: &'a dyn Fn(&crate::Error) -> Option<String>,
}

/// Whether the file `path` is an archive or a shared object by its magic:
/// what LLVM 22 copies from the host link into a CPU target's device link.
pub fn is_library(path: &str) -> bool {
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
pub struct Extracted {
    /// Where it came from and what it is, as the plan takes it.
    pub found: Found,
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
#[derive(Default)]
pub struct Extraction {
    files: Vec<Input>,
    /// The temporary files images of compressed binaries were streamed to.
    inflated: Vec<Input>,
    /// The binaries, in the order LLVM reads them.
    pub images: Vec<Extracted>,
}

impl Extraction {
    /// Writes the bytes of `e` to `out`, file to file where they lie in a
    /// mapped input or temporary file.
    pub fn write(&self, e: &Extracted, out: &mut std::fs::File) -> io::Result<()> {
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
    pub fn found(&self) -> Vec<Found> {
        self.images.iter().map(|e| e.found.clone()).collect()
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
/// temporary files (by `reading`), pushed to `inflated`.
fn images_of(
    name: &str,
    found: &Streamed<'_>,
    (file, base): (usize, &[u8]),
    lazy: bool,
    (reading, inflated): (&mut Reading<'_>, &mut Vec<Input>),
) -> Result<Vec<Extracted>, Failure> {
    let mut out = Vec::new();
    let temps = (reading.inflate)(found).map_err(|e| match (reading.data_error)(&e) {
        Some(bad) => bad_data(name, bad, reading),
        None => Failure::new(format!(
            "'{name}': cannot write a temporary file: {}",
            strerror(&e)
        )),
    })?;
    for (f, temp) in found.images.iter().zip(temps) {
        let img = &f.image;
        let target = TargetId::new(
            String::from_utf8_lossy(img.triple()),
            String::from_utf8_lossy(img.arch()),
        );
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
            found: Found {
                input,
                binary: Binary {
                    target,
                    kind: img.offload_kind,
                    lazy,
                },
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
fn find<'a>(
    name: &str,
    bytes: &'a [u8],
    budget: &Budget,
    reading: &Reading<'_>,
) -> Result<Streamed<'a>, Failure> {
    offload_binary::find_images_streamed(bytes, budget, Inflate::Check)
        .map_err(|e| bad_data(name, &e, reading))
}

/// Offloading data of the file `name` that cannot be read: LLVM's line
/// first, as the packager drop-in prints it, then ours; past a limit of
/// the budget (LLVM has none), ours, naming the limit and how to raise it.
fn bad_data(name: &str, e: &crate::Error, reading: &Reading<'_>) -> Failure {
    match (reading.raise_hint)(e) {
        Some(hint) => Failure::with_note(format!("'{name}': {e}"), hint),
        None if matches!(e.kind(), crate::ErrorKind::BudgetExceeded { .. }) => {
            Failure::new(format!("'{name}': {e}"))
        }
        None => Failure::with_note(
            e.llvm_message(),
            format!("'{name}': invalid offloading data: {e}"),
        ),
    }
}

/// The members of a thin archive: each name as stored, and the file it
/// names (beside the archive unless absolute).
fn thin_members(name: &str, bytes: &[u8]) -> Result<Vec<(String, String)>, Failure> {
    let bad = |e: &dyn std::fmt::Display| Failure::new(format!("'{name}': {e}"));
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

/// An input that cannot be opened: `'<name>': '<name>': cannot open:
/// <the C library's text>`, as the command line has always worded it.
fn cannot_open(name: &str, e: &io::Error) -> Failure {
    let context = format!("'{name}': cannot open");
    let text = strerror(e);
    // A cause that repeats the context is not said twice.
    let text = if context.ends_with(&text) {
        context
    } else {
        format!("{context}: {text}")
    };
    Failure::new(format!("'{name}': {text}"))
}

/// Reads the device binaries of every file the link names, in order, as
/// LLVM 22's wrapper does: shared objects are skipped, a library that is
/// not found is fatal where it is met, anything unreadable in a file that
/// holds offloading data is fatal. `budget` is the one budget for every
/// input and every binary in them, or why there is none (a wrong setting
/// of the environment: an error here, not before).
pub fn extract(
    host: &[HostArg],
    budget: Result<Budget, Failure>,
    mut reading: Reading<'_>,
) -> Result<Extraction, Failure> {
    let mut out = Vec::new();
    let mut inputs = Vec::new();
    let mut inflated = Vec::new();
    let budget = budget?;
    for f in host_files(host) {
        let (name, whole) = match f {
            HostFile::File { path, whole } => (path, whole),
            HostFile::Missing(l) => {
                return Err(Failure::new(format!("unable to find library -l{l}")));
            }
        };
        let input = Input::open(&name).map_err(|e| cannot_open(&name, &e))?;
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
                    Failure::with_note(
                        format!("'{mname}': {}", strerror(&e)),
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
                let found = find(&full, data, &budget, &reading)?;
                out.extend(images_of(
                    &mname,
                    &found,
                    (file, data),
                    lazy,
                    (&mut reading, &mut inflated),
                )?);
            }
            continue;
        }
        let found = find(&name, bytes, &budget, &reading)?;
        out.extend(images_of(
            &name,
            &found,
            (file, bytes),
            lazy,
            (&mut reading, &mut inflated),
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

    /// Reads `host` as the drop-in does, with no compressed binaries to
    /// stream.
    fn read(host: &[HostArg]) -> Result<Extraction, Failure> {
        let reading = Reading {
            inflate: &mut |found| Ok(found.images.iter().map(|_| None).collect()),
            data_error: &|_| None,
            raise_hint: &|_| None,
        };
        extract(host, Ok(Budget::default()), reading)
    }

    #[test]
    fn binaries_of_the_inputs_in_order() {
        let t = tempfile::tempdir().unwrap();
        let img = b"\x7fELF device code".to_vec();
        let spec =
            super::super::linked_image_spec("amdgcn-amd-amdhsa", "gfx90a", false, img.len() as u64);
        let mut bytes = Vec::new();
        offload_binary::layout_v1(&[spec])
            .unwrap()
            .write_to(&mut bytes, &[&img])
            .unwrap();
        let a = t.path().join("a.o");
        std::fs::write(&a, &bytes).unwrap();
        let a = a.to_string_lossy().into_owned();
        let x = read(&[
            HostArg::Input(a.clone()),
            HostArg::Input("nothere.o".into()),
        ])
        .unwrap();
        assert_eq!(x.images.len(), 1);
        let found = x.found();
        assert_eq!(found[0].input, a);
        assert_eq!(
            found[0].binary.target,
            TargetId::new("amdgcn-amd-amdhsa", "gfx90a")
        );
        assert!(!found[0].binary.lazy);
        let mut out = tempfile::tempfile().unwrap();
        x.write(&x.images[0], &mut out).unwrap();
        let mut back = Vec::new();
        use std::io::{Read, Seek};
        out.rewind().unwrap();
        out.read_to_end(&mut back).unwrap();
        assert_eq!(back, img);
        // Where LLVM stops: a library not found, an unreadable file.
        let missing = read(&[HostArg::Library("nolib".into())]).err().unwrap();
        assert_eq!(missing.llvm, "unable to find library -lnolib");
        let damaged = t.path().join("d.o");
        std::fs::write(&damaged, &bytes[..40]).unwrap();
        let d = damaged.to_string_lossy().into_owned();
        let bad = read(&[HostArg::Input(d.clone())]).err().unwrap();
        assert!(
            bad.note
                .unwrap()
                .starts_with(&format!("'{d}': invalid offloading data: "))
        );
        // A wrong budget setting is an error when the inputs are read.
        let none = Reading {
            inflate: &mut |_| Ok(Vec::new()),
            data_error: &|_| None,
            raise_hint: &|_| None,
        };
        let err = extract(&[], Err(Failure::new("BUDGET: bad")), none)
            .err()
            .unwrap();
        assert_eq!(err.llvm, "BUDGET: bad");
    }

    #[test]
    fn inputs_that_cannot_be_opened() {
        let e = io::Error::from_raw_os_error(13);
        assert_eq!(
            cannot_open("x.o", &e).llvm,
            "'x.o': 'x.o': cannot open: Permission denied"
        );
    }
}
