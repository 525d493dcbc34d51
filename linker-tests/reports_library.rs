//! The reports for CI made by the library (issue #62), byte for byte those
//! of the command line: on the hipBLASLt-style tree of `per_gpu_gate`
//! (gfx942's per-GPU files gone) and a bare code object named beside it,
//! the test walks and scans the files itself through the public API only
//! (`scan::scan_with` with `kernels::Collect`, `scan::check`,
//! `kernels::KernelGate`, `kernels::PerGpuJudgement`,
//! `kernels::CheckReport`, `scan::size`, `report::size_markdown`,
//! `report::size_html`, `report::inspect_markdown`, `prune::prune_tree` and
//! `report::tree_markdown`), and compares what it makes with what
//! `offload-kit check --junit --markdown`, `check --json`, `size
//! --markdown`, `size --html`, `inspect --markdown` and `prune --dry-run
//! --markdown` print.
//! The check has kernel rules and a failing per-GPU judgement, so every
//! part of its report is the library's.

use std::path::{Path, PathBuf};

use libtest_mimic::{Failed, Trial};
use offload_kit::kernels::{self, CheckReport, KernelGate, KernelRule, PerGpuJudgement};
use offload_kit::prune::{self, Destination, PathOptions, Ptx, Rules, Selection};
use offload_kit::report::{self, HtmlFile};
use offload_kit::scan::{self, JsonFile, Report, Requirements, Rule, SizeReport, Unread};

use crate::util::{ours, run, same, tempdir};

pub fn tests() -> Vec<Trial> {
    vec![trial!(the_library_makes_the_command_lines_reports, &[])]
}

/// One file scanned as the command line scans it, with its kernels.
struct Scanned {
    path: String,
    size: u64,
    walked: bool,
    result: Result<Report, Unread>,
    kernels: Vec<kernels::ImageKernels>,
}

/// The files of `dir` (named as `dir/…`), sorted by path, as a walk of
/// the command line finds them.
fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> std::io::Result<()> {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)?
        .map(|e| e.map(|e| e.path()))
        .collect::<Result<_, _>>()?;
    entries.sort();
    for p in entries {
        if p.is_dir() {
            walk(&p, out)?;
        } else {
            out.push(p);
        }
    }
    Ok(())
}

/// `path` scanned (every stored hash checked, as `check` does).
fn scan_one(cwd: &Path, path: &str, walked: bool) -> Result<Scanned, Failed> {
    let bytes = std::fs::read(cwd.join(path))?;
    let mut opts = scan::Options::default();
    opts.verify = true;
    let mut collect = kernels::Collect::default();
    let report = scan::scan_with(&bytes, &opts, &mut collect);
    let kernels = collect.take(Some(&report));
    Ok(Scanned {
        path: path.to_string(),
        size: bytes.len() as u64,
        walked,
        result: Ok(report),
        kernels,
    })
}

/// Compares a report the library made with the command line's, naming
/// the first line that differs.
fn same_text(what: &str, library: &str, command: &[u8]) -> Result<(), Failed> {
    let command = String::from_utf8_lossy(command);
    if library == command {
        return Ok(());
    }
    let at = library
        .lines()
        .zip(command.lines())
        .position(|(a, b)| a != b)
        .unwrap_or_else(|| library.lines().count().min(command.lines().count()));
    Err(format!(
        "{what}: the library's differs from the command line's at line {}:\n  library: {:?}\n  command: {:?}",
        at + 1,
        library.lines().nth(at),
        command.lines().nth(at)
    )
    .into())
}

fn the_library_makes_the_command_lines_reports() -> Result<(), Failed> {
    let tmp = tempdir();
    let cwd = tmp.path();
    crate::per_gpu_gate::write_tree(&cwd.join("t"), &crate::per_gpu_gate::files(false))?;
    std::fs::write(cwd.join("named.co"), crate::reports::code_object(0x3f))?;
    let mut walked = Vec::new();
    walk(&cwd.join("t"), &mut walked)?;
    let mut files = vec![scan_one(cwd, "named.co", false)?];
    for p in &walked {
        let rel = p.strip_prefix(cwd)?.to_str().ok_or("a name not UTF-8")?;
        files.push(scan_one(cwd, rel, true)?);
    }
    check(cwd, &files)?;
    size(cwd, &files)?;
    inspect_and_prune(cwd, &files)
}

/// `check`, with kernel rules and per-GPU files.
fn check(cwd: &Path, files: &[Scanned]) -> Result<(), Failed> {
    let paths: Vec<&str> = files.iter().map(|f| f.path.as_str()).collect();
    let args = [
        "check", "named.co", "t", "--require", "gfx90a,gfx942", "--require-kernel",
        "gemm*@gfx90a", "--forbid-kernel", "*debug*", "--junit", "check.xml", "--markdown",
    ];
    let cli = run(&ours(), &args, cwd);
    let mut req = Requirements::default();
    req.require = vec![Rule::parse("gfx90a")?, Rule::parse("gfx942")?];
    let outcome = scan::check(
        files.iter().map(|f| f.result.as_ref().map_err(Unread::as_str)),
        &req,
    );
    let require = [KernelRule::parse("gemm*@gfx90a")?];
    let forbid = [KernelRule::parse("*debug*")?];
    let gate = KernelGate::judge(
        files.iter().map(|f| (&f.result, &f.kernels[..])),
        &outcome,
        &require,
        &forbid,
        &req,
    );
    let per_gpu = PerGpuJudgement::judge(paths.iter().copied(), &["t"], &req);
    if per_gpu.iter().all(|j| j.passed) || gate.results(0).is_empty() {
        return Err(format!("the check should fail a per-GPU judgement and judge kernels: {per_gpu:?}").into());
    }
    let walked_flags: Vec<bool> = files.iter().map(|f| f.walked).collect();
    let report = CheckReport::new(&req, &paths, &outcome)
        .with_kernel_rules(&gate)
        .with_per_gpu_files(&per_gpu)
        .with_walked(&walked_flags);
    same("check: exit code", i32::from(report.exit_code()), cli.code)?;
    let scans: Vec<Result<Report, Unread>> = files.iter().map(|f| f.result.clone()).collect();
    let json = run(&ours(), &[&args[..11], &["--json"]].concat(), cwd);
    let text = serde_json::to_string_pretty(&report.with_scans(&scans).json())? + "\n";
    same_text("check --json", &text, &json.stdout)?;
    same("check: exit code (fails)", cli.code, 1)?;
    same_text("check --markdown", &report.markdown(), &cli.stdout)?;
    same_text("check --junit", &report.junit(), &std::fs::read(cwd.join("check.xml"))?)
}

/// `size --markdown` and `--html`.
fn size(cwd: &Path, files: &[Scanned]) -> Result<(), Failed> {
    // The rows the command shows (a file found walking a directory
    // with no device code, no error and nothing damaged is left out), the
    // total of every file.
    let sizes: Vec<SizeReport> = files
        .iter()
        .map(|f| match &f.result {
            Ok(r) => scan::size(&f.path, f.size, r),
            Err(e) => SizeReport::unreadable(&f.path, e.as_str()),
        })
        .collect();
    let all = SizeReport::sum("(all inputs)", &sizes);
    let several = sizes.iter().filter(|r| r.error.is_none()).count() > 1;
    let shown: Vec<(&SizeReport, &Scanned)> = sizes
        .iter()
        .zip(files)
        .filter(|(r, f)| !f.walked || r.total.images > 0 || !r.damage.is_empty())
        .collect();
    let rows: Vec<&SizeReport> = shown.iter().map(|s| s.0).collect();
    let cli = run(&ours(), &["size", "named.co", "t", "--markdown", "--html", "size.html"], cwd);
    same("size: exit code", cli.code, 0)?;
    same_text("size --markdown", &report::size_markdown(&rows, several.then_some(&all)), &cli.stdout)?;
    let html: Vec<HtmlFile<'_>> = shown
        .iter()
        .map(|(r, f)| {
            let input = if f.walked { "t" } else { f.path.as_str() };
            HtmlFile::new(input, r, f.result.as_ref().ok())
        })
        .collect();
    same_text(
        "size --html",
        &report::size_html(&html, several.then_some(&all)),
        &std::fs::read(cwd.join("size.html"))?,
    )
}

/// `inspect --markdown` and `prune --dry-run --markdown`.
fn inspect_and_prune(cwd: &Path, files: &[Scanned]) -> Result<(), Failed> {
    // inspect: a file found walking with no container and no problem is
    // left out.
    let cli = run(&ours(), &["inspect", "named.co", "t", "--markdown"], cwd);
    same("inspect: exit code", cli.code, 0)?;
    let listed: Vec<JsonFile<'_>> = files
        .iter()
        .filter(|f| {
            !f.walked
                || f.result
                    .as_ref()
                    .is_ok_and(|r| !r.containers.is_empty() || !r.problems.is_empty())
        })
        .map(|f| JsonFile {
            path: &f.path,
            size: f.size,
            result: f.result.as_ref().map_err(Unread::as_str),
            kernels: None,
        })
        .collect();
    same_text("inspect --markdown", &report::inspect_markdown(&listed), &cli.stdout)?;

    // prune --dry-run, of the inputs by their full paths (the library
    // walks them from this process's directory).
    let inputs = [cwd.join("named.co"), cwd.join("t")];
    let mut args = vec!["prune", "--dry-run", "--markdown", "--keep", "gfx942"];
    args.extend(inputs.iter().map(|p| p.to_str().unwrap_or_default()));
    let cli = run(&ours(), &args, cwd);
    if cli.code > 1 {
        return Err(format!("prune --dry-run: {}", cli.stderr).into());
    }
    let mut opts = PathOptions::default();
    opts.destination = Destination::DryRun;
    let keep = Selection {
        rules: Rules::Keep(vec![Rule::parse("gfx942")?]),
        ptx: Ptx::Newest,
    };
    let entries = prune::prune_tree(&inputs, &keep, &opts, &mut |_, _| {});
    same_text(
        "prune --dry-run --markdown",
        &report::tree_markdown(entries, &opts),
        &cli.stdout,
    )
}
