//! Running the job: the device input read ([`super::extract`]), the job
//! planned ([`super::job::plan`]) on this system ([`System`]), and its
//! steps taken in order — files written, programs run (or, under
//! `--dry-run`, only printed), wrapper objects written in process. The
//! command lines LLVM prints go to the caller's `say`; nothing else is
//! printed.

use std::path::Path;
use std::process::Command;

use super::extract::{Extraction, Reading, extract};
use super::failure::{Failure, open, strerror};
use super::job::{self, Options, Plan, Step};
use super::system::System;
use super::wrapping::{pack_image, wrap_fatbin, wrap_images, wrap_sycl};
use crate::files::Output;
use crate::offload_binary::Budget;

/// Where the command lines go (`--dry-run`, `--wrapper-verbose`), each as
/// LLVM 22 prints it; called from the threads of the device links too.
pub type Say<'a> = dyn Fn(&str) + Sync + 'a;

/// The whole job, in LLVM 22's three phases: read the device input, link
/// each target and bundle and wrap each offload kind, run the host
/// linker. `budget` and `reading` are how the inputs are read
/// ([`extract`]).
pub fn run(
    o: &Options,
    budget: Result<Budget, Failure>,
    reading: Reading<'_>,
    say: &Say<'_>,
) -> Result<(), Failure> {
    // With --override-image, LLVM reads no device input at all.
    let extraction = if o.override_images.is_empty() {
        extract(&o.host, budget, reading)?
    } else {
        Extraction::default()
    };
    // The temporary files live as long as `system`.
    let mut system = System::default();
    let plan = job::plan(o, &extraction.found(), &mut system);
    execute(&plan, o, &extraction, say)
}

/// Takes the steps of `plan`, in order, until one fails. `extraction`
/// holds the device binaries the plan was made for.
pub fn execute(
    plan: &Plan,
    o: &Options,
    extraction: &Extraction,
    say: &Say<'_>,
) -> Result<(), Failure> {
    let host_triple = plan.host_triple.as_str();
    let mut md5 = crate::bundle::ccob::truncated_md5(b"");
    for step in &plan.steps {
        match step {
            Step::WriteInput { image, path } => {
                let e = extraction
                    .images
                    .get(*image)
                    .ok_or_else(|| Failure::new("internal error: no such device binary"))?;
                let mut f = create(path)?;
                extraction
                    .write(e, &mut f)
                    .map_err(|err| Failure::file(path, &err))?;
            }
            Step::DeviceLinks(commands) => run_all(o, commands, say)?,
            Step::Run(c) => execute_one(o, c, say)?,
            Step::WrapOpenMp {
                images,
                overrides,
                output,
            } => wrap_images(
                o,
                host_triple,
                images,
                overrides,
                (&mut create(output)?, output),
            )?,
            Step::WrapFatbin {
                kind,
                fatbin,
                output,
            } => wrap_fatbin(
                host_triple,
                *kind,
                fatbin,
                o.dry_run,
                (&mut create(output)?, output),
            )?,
            Step::WrapSycl { image, output } => {
                wrap_sycl(o, host_triple, image, (&mut create(output)?, output))?;
            }
            Step::PackImage { image, output } => {
                pack_image(o, image, (&mut create(output)?, output))?;
            }
            Step::EmitFatbin { fatbin, output } => emit_fatbin(o, fatbin, output)?,
            Step::Checksum { output } => {
                if !o.dry_run {
                    md5 = crate::bundle::ccob::truncated_md5(open(output)?.bytes());
                }
            }
            Step::RenameEntries { program, output } => {
                execute_one(o, &job::rename_entries(program, output, md5), say)?;
            }
            Step::Fail(f) => return Err(f.clone()),
        }
    }
    Ok(())
}

/// A file a step writes, made (or emptied) for writing.
///
/// The plan made the temporary files empty. Opening one with `O_TRUNC`
/// would make ext4 write its data to disk when it is closed (its
/// replace-by-truncate heuristic, `auto_da_alloc`): a 256 MiB device image
/// then costs a disk write the wrapper never needed. So a file is emptied
/// only when it holds something.
fn create(name: &str) -> Result<std::fs::File, Failure> {
    let fail = |e: std::io::Error| Failure::file(name, &e);
    let f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(false)
        .open(name)
        .map_err(fail)?;
    if f.metadata().map_err(fail)?.len() != 0 {
        f.set_len(0).map_err(fail)?;
    }
    Ok(f)
}

/// Runs (or with `--dry-run` only prints) one command; a failure is
/// reported as LLVM does, as `'<name>' failed`.
fn execute_one(o: &Options, c: &job::Command, say: &Say<'_>) -> Result<(), Failure> {
    let (name, program, args) = (&c.name, &c.program, &c.args);
    if o.verbose || o.dry_run {
        say(&c.line());
    }
    if o.dry_run {
        return Ok(());
    }
    let status = Command::new(program).args(args).status().map_err(|e| {
        Failure::with_note(
            format!("'{name}' failed"),
            format!("'{program}': {}", strerror(&e)),
        )
    })?;
    if status.success() {
        return Ok(());
    }
    let how = match status.code() {
        Some(c) => format!("exit code {c}"),
        None => "killed by a signal".into(),
    };
    Err(Failure::with_note(
        format!("'{name}' failed"),
        format!("{how}: {}", c.line().trim_start()),
    ))
}

/// Runs the device links `commands`, up to `--wrapper-jobs` of them at
/// once. Every link runs to its end, as in LLVM 22, and every failure is
/// reported, in command order: LLVM's one `'clang' failed` line for each,
/// then our note for each.
fn run_all(o: &Options, commands: &[job::Command], say: &Say<'_>) -> Result<(), Failure> {
    let jobs = o.jobs.clamp(1, commands.len().max(1));
    let results: Vec<Result<(), Failure>> = if jobs == 1 || o.dry_run {
        commands
            .iter()
            .map(|cmd| execute_one(o, cmd, say))
            .collect()
    } else {
        let next = std::sync::atomic::AtomicUsize::new(0);
        let mut results: Vec<Option<Result<(), Failure>>> = Vec::new();
        results.resize_with(commands.len(), || None);
        let results = std::sync::Mutex::new(results);
        std::thread::scope(|scope| {
            for _ in 0..jobs {
                scope.spawn(|| {
                    loop {
                        let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        let Some(cmd) = commands.get(i) else { break };
                        let r = execute_one(o, cmd, say);
                        if let Ok(mut all) = results.lock() {
                            all[i] = Some(r);
                        }
                    }
                });
            }
        });
        results
            .into_inner()
            .map_err(|_| Failure::new("a device link thread panicked"))?
            .into_iter()
            .map(|r| r.unwrap_or_else(|| Err(Failure::new("a device link did not run"))))
            .collect()
    };
    let failed: Vec<Failure> = results.into_iter().filter_map(Result::err).collect();
    if failed.is_empty() {
        return Ok(());
    }
    Err(Failure::joined(failed))
}

/// `--emit-fatbin-only`: copies the fat binary to the output (`-o`),
/// through a temporary file renamed at the end (nothing with `--dry-run`).
fn emit_fatbin(o: &Options, fatbin: &str, output: &str) -> Result<(), Failure> {
    if o.dry_run {
        return Ok(());
    }
    let input = open(fatbin)?;
    let io = |e: std::io::Error| Failure::file(output, &e);
    let mut out = Output::create(Path::new(output)).map_err(io)?;
    input.copy_to(input.bytes(), &mut out).map_err(io)?;
    out.commit().map_err(io)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_a_step_writes_starts_empty_whatever_was_there() {
        let t = tempfile::tempdir().unwrap();
        let path = t.path().join("out.o");
        let name = path.to_str().unwrap();
        for before in [None, Some(&b""[..]), Some(&b"old bytes"[..])] {
            if let Some(b) = before {
                std::fs::write(&path, b).unwrap();
            }
            let mut f = create(name).unwrap();
            std::io::Write::write_all(&mut f, b"new").unwrap();
            drop(f);
            assert_eq!(std::fs::read(&path).unwrap(), b"new", "{before:?}");
            std::fs::remove_file(&path).unwrap();
        }
    }

    #[test]
    fn steps_run_in_order_until_one_fails() {
        let t = tempfile::tempdir().unwrap();
        let out = t.path().join("fatbin");
        let out = out.to_str().unwrap();
        let src = t.path().join("in");
        std::fs::write(&src, b"fat binary").unwrap();
        let o = Options::default();
        let plan = Plan {
            host_triple: "x86_64-unknown-linux-gnu".into(),
            steps: vec![
                Step::EmitFatbin {
                    fatbin: src.to_string_lossy().into_owned(),
                    output: out.into(),
                },
                Step::Fail(Failure::new("stop")),
                Step::EmitFatbin {
                    fatbin: "nowhere".into(),
                    output: out.into(),
                },
            ],
        };
        let said = std::sync::Mutex::new(Vec::new());
        let say = |l: &str| said.lock().unwrap().push(l.to_string());
        let err = execute(&plan, &o, &Extraction::default(), &say).unwrap_err();
        assert_eq!(err, Failure::new("stop"));
        assert_eq!(std::fs::read(out).unwrap(), b"fat binary");
        assert!(said.lock().unwrap().is_empty());
    }

    #[test]
    fn dry_run_prints_and_runs_nothing() {
        let o = Options {
            dry_run: true,
            ..Options::default()
        };
        let c = job::Command {
            name: "ld".into(),
            program: "/nonexistent/ld".into(),
            args: vec!["-o".into(), "a".into()],
            output: "a".into(),
        };
        let plan = Plan {
            host_triple: "x86_64-unknown-linux-gnu".into(),
            steps: vec![
                Step::Run(c),
                Step::Checksum { output: "a".into() },
                Step::RenameEntries {
                    program: "llvm-objcopy".into(),
                    output: "a".into(),
                },
            ],
        };
        let said = std::sync::Mutex::new(Vec::new());
        let say = |l: &str| said.lock().unwrap().push(l.to_string());
        execute(&plan, &o, &Extraction::default(), &say).unwrap();
        assert_eq!(*said.lock().unwrap(), plan.dry_run_text());
    }

    #[test]
    fn a_failing_program_is_llvms_line() {
        let o = Options::default();
        let c = job::Command {
            name: "ld".into(),
            program: "false".into(),
            args: vec!["x".into()],
            output: "a".into(),
        };
        let say = |_: &str| {};
        let f = execute_one(&o, &c, &say).unwrap_err();
        assert_eq!(f.llvm, "'ld' failed");
        assert_eq!(f.note.as_deref(), Some("exit code 1: \"false\" x"));
    }
}
