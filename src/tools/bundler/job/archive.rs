//! `-unbundle -type=a`: one device archive per target, from the bundles
//! in an archive's members.

use std::cell::RefCell;

use crate::bundle::archive_unbundle::{self, Extracted, Member};
use crate::bundle::ccob;
use crate::bundle::id::BundleId;
use crate::bundle::ops;
use crate::files::{Input, write_layout};
use crate::host::ar::thin_member_path;
use crate::{ErrorKind, archive};

use super::check::{Job, read_options, targets};
use super::failure::{Failure, Note, Say, open};
use super::objcopy::{TempFile, command};
use super::verbose::decompress_report;

/// `-unbundle -type=a`: one device archive per target.
pub fn unbundle_archive(job: &Job, say: &mut Say<'_>) -> Result<(), Failure> {
    let requests = targets(job)?;
    let name = &job.inputs[0];
    let input = open(name)?;
    // What is said while the members are read goes on as it comes, as
    // LLVM prints it.
    let say = RefCell::new(say);
    // A member that fails to decompress leaves its full report here.
    let member_fail: RefCell<Option<Failure>> = RefCell::new(None);
    let message = |e: crate::Error| {
        if let Some(f) = member_fail.take() {
            return f;
        }
        match e.kind() {
            // LLVM's own messages, printed as LLVM prints them.
            ErrorKind::Usage(m) => Failure::new(m.clone()),
            _ => Failure::new(format!("'{name}': {e}")),
        }
    };
    // A thin archive's members are files beside it (LLVM reads them too).
    let thin_inputs = match archive_unbundle::thin_member_names(input.bytes()).map_err(message)? {
        None => Vec::new(),
        Some(names) => names
            .iter()
            .map(|m| open(&thin_member_path(std::path::Path::new(name), m).to_string_lossy()))
            .collect::<Result<Vec<_>, Failure>>()?,
    };
    let thin: Vec<&[u8]> = thin_inputs.iter().map(Input::bytes).collect();
    if job.check_archive {
        archive_unbundle::check_archive(input.bytes(), &thin, name).map_err(message)?;
    }
    let inflate = |m: &Member<'_>| -> crate::Result<Option<Vec<u8>>> {
        decompress_member(job, name, m, &mut **say.borrow_mut()).map_err(|f| {
            // The failure's own text replaces this one (see `message`).
            let e = crate::Error::usage("Failed to decompress code object");
            member_fail.replace(Some(f));
            e
        })
    };
    // -###: LLVM writes each host object member to a temporary file and
    // prints the llvm-objcopy command that would strip it into another.
    let mut temp_failure = None;
    let mut print = |_: &Member<'_>| {
        let Some(objcopy) = &job.objcopy else { return };
        let dir = &job.temp_dir;
        match (TempFile::create(dir, b""), TempFile::create(dir, b"")) {
            (Ok(from), Ok(to)) => say.borrow_mut()(Note::Text(command(
                objcopy,
                &[
                    "--regex",
                    "--remove-section=__CLANG_OFFLOAD_BUNDLE__.*",
                    "--",
                    from.name(),
                    to.name(),
                ],
            ))),
            (Err(e), _) | (_, Err(e)) => {
                temp_failure.get_or_insert(e);
            }
        }
    };
    let hosts = if job.objcopy.is_some() {
        archive_unbundle::HostObjects::Empty(&mut print)
    } else {
        archive_unbundle::HostObjects::Strip
    };
    let lists = archive_unbundle::unbundle_with(
        input.bytes(),
        &thin,
        &requests,
        job.hip_openmp,
        inflate,
        hosts,
    )
    .map_err(message)?;
    if let Some(e) = temp_failure {
        return Err(e);
    }
    write_outputs(job, &input, &requests, &lists)
}

/// The device archives of `-unbundle -type=a`: `lists[i]`, the members
/// found for `requests[i]`, each written as a GNU archive to its output.
fn write_outputs(
    job: &Job,
    input: &Input,
    requests: &[BundleId],
    lists: &[Vec<Extracted<'_>>],
) -> Result<(), Failure> {
    let name = &job.inputs[0];
    // LLVM keys outputs by normalized ID: of requests that normalize alike,
    // the last one's output file is written (once per request).
    let keys: Vec<String> = requests.iter().map(BundleId::normalized).collect();
    let last: std::collections::HashMap<&str, usize> = keys
        .iter()
        .enumerate()
        .map(|(i, k)| (k.as_str(), i))
        .collect();
    for (i, list) in lists.iter().enumerate() {
        if list.is_empty() && !job.allow_missing {
            return Err(Failure::new(format!(
                "no compatible code object found for the target '{}' in heterogeneous \
                 archive library: {name}",
                keys[i]
            )));
        }
        let out = &job.outputs[last.get(keys[i].as_str()).copied().unwrap_or(i)];
        // LLVM's archive writer takes `-` as a file name, not standard output.
        let out = if out == "-" { "./-" } else { out.as_str() };
        let members: Vec<archive::Member> = list
            .iter()
            .map(|x| archive::Member {
                name: x.name.clone(),
                data: x.data(),
            })
            .collect();
        let layout = archive::layout_gnu(&members, true)
            .map_err(|e| Failure::new(format!("'{out}': {e}")))?;
        write_layout(out, &layout, |k| (input, list[k].data()))
            .map_err(|e| Failure::file(out, e))?;
    }
    Ok(())
}

/// An archive member decompressed if it is a CCOB (LLVM's "Failed to
/// decompress code object" otherwise, with the member and the exact fault in
/// a note), with LLVM's verbose report.
fn decompress_member(
    job: &Job,
    archive_name: &str,
    m: &Member<'_>,
    say: &mut Say<'_>,
) -> Result<Option<Vec<u8>>, Failure> {
    let start = std::time::Instant::now();
    let d = ops::open(m.data, &read_options(job)).map_err(|e| {
        let note = format!(
            "'{archive_name}', member '{}': {e}",
            String::from_utf8_lossy(m.name)
        );
        match ccob::llvm_message(&e) {
            Some(llvm) => {
                Failure::with_note(format!("Failed to decompress code object: {llvm}"), note)
            }
            // A fault LLVM does not detect: no line of its to keep.
            None => Failure::new(format!("Failed to decompress code object: {note}")),
        }
    })?;
    let Some(d) = d else {
        if job.comp.verbose {
            say(Note::Text("Uncompressed bundle.\n".into()));
        }
        return Ok(None);
    };
    if job.comp.verbose {
        say(Note::Text(decompress_report(&d, start.elapsed())));
    }
    Ok(Some(d.data))
}
