//! `offload-kit diff OLD NEW`: the device code of two builds compared,
//! file by file, as a table or JSON (schema `offload-kit/diff/1`,
//! documented in docs/diff.md). The files are paired, compared and the
//! JSON document made by the library's [`crate::diff::paths`].

use std::io::Write;
use std::path::PathBuf;

use anyhow::Result;

use super::scan::{Common, Scanned, exit, exit_code_after_inputs, kernel_errors, with_progress};
use crate::diff::paths::{self, Compared, Document};
use crate::scan::HashAlgo;

/// Compare the device code of two builds: files, directories or packages.
#[derive(clap::Args)]
#[command(
    mut_arg("paths", |a| {
        let help = "The old and the new build: two files (compared with each other whatever \
            their names), two directories or two packages (wheels, .conda and other zip \
            archives, tar archives, .deb packages), whose files are paired by their paths \
            below the path given (wheels and .debs by their names, across versions). `-` is \
            standard input.";
        a.num_args(2).action(clap::ArgAction::Set).value_names(["OLD", "NEW"]).help(help).long_help(help)
    }),
    after_help = "Images are compared per target key (offload kind, triple, target ID, image \
kind) by their content hashes (xxh3-128): images of the same contents pair first, those left \
pair in scan order (changed), the rest are added or removed. With --kernels, the kernels of \
each target key on both sides are compared by name: added, removed, or changed when a \
resource figure (registers, LDS, scratch, ...) differs. Files found in directories or \
packages are reported only when they hold device code (--all: also those on one side only \
 without device code). The matching \
rules and the --json schema (\"offload-kit/diff/1\") are documented in docs/diff.md.\n\n\
Examples:\n  \
offload-kit diff build-old/libfoo.so build-new/libfoo.so\n  \
offload-kit diff --kernels --demangle old.whl new.whl\n  \
offload-kit diff --json old/ new/ > diff.json\n\n\
Exit codes, as diff(1): 0 no differences in device code, 1 differences, 2 an input could \
not be read, held damaged data (--allow-corrupt: compared as far as it could be read) or \
went past a limit."
)]
pub struct DiffOpts {
    #[command(flatten)]
    common: Common,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// Also compare the kernels of each target: added, removed, and those
    /// whose registers or memory changed (AMDGPU code objects, CUDA
    /// cubins, PTX, CPU images).
    #[arg(long)]
    kernels: bool,
    /// Show C++ kernel names demangled (with --kernels).
    #[arg(long, requires = "kernels")]
    demangle: bool,
    /// Also report the files found on one side only that hold no device
    /// code (by default only those with device code are).
    #[arg(long)]
    all: bool,
}

impl DiffOpts {
    pub fn run(self) -> Result<std::process::ExitCode> {
        let mut opts = self.common.options();
        opts.hash = Some(HashAlgo::Xxh3_128);
        let roots: Vec<PathBuf> = self.common.paths().to_vec();
        let [old_root, new_root] = &roots[..] else {
            anyhow::bail!("diff compares two paths (OLD NEW), not {}", roots.len());
        };
        if old_root.as_os_str() == "-" && new_root.as_os_str() == "-" {
            anyhow::bail!("'-' (standard input) is given for both sides");
        }
        let sides = [
            self.common.files_of(old_root)?,
            self.common.files_of(new_root)?,
        ];
        // The names of both sides, and their paths below the roots.
        let mut names = super::io::RawNames::of(roots.iter().map(PathBuf::as_path));
        for (root, side) in [old_root, new_root].into_iter().zip(&sides) {
            names.extend(side.iter().map(|s| s.path.as_path()));
            names.extend(side.iter().filter_map(|s| s.path.strip_prefix(root).ok()));
        }
        let how = paths::Options {
            scan: &opts,
            jobs: self.common.jobs(),
            allowance: &self.common.allowance(),
            kernels: self.kernels,
            demangle: self.demangle,
            all: self.all,
        };
        let total = sides[0].len() + sides[1].len();
        let compared = with_progress(total, |done| {
            paths::compare_paths([old_root, new_root], sides, &how, done)
        });
        let mut out = super::io::Report::stdout();
        if self.json {
            let doc = Document::new(old_root, new_root, self.kernels, &compared);
            super::io::write_json(&mut out, &doc, &names)?;
        } else {
            crate::report::diff_table(&mut out, &compared)?;
        }
        out.flush()?;
        Ok(self.exit_code(&compared).into())
    }

    /// 2 when an input could not be read, or held damaged data (unless
    /// --allow-corrupt); else 1 when a file differs; else 0. Prints a line
    /// on standard error for each input error.
    fn exit_code(&self, compared: &[Compared]) -> u8 {
        let scanned: Vec<&Scanned> = compared
            .iter()
            .flat_map(|c| [c.old.as_ref(), c.new.as_ref()])
            .flatten()
            .collect();
        let damaged = report_damage(&scanned, self.common.allow_corrupt);
        let owned: Vec<Scanned> = scanned.iter().filter_map(|s| unreadable(s)).collect();
        let mut code = exit_code_after_inputs(&owned, self.common.allow_corrupt);
        if self.kernels && kernel_errors(scanned.iter().copied()) && !self.common.allow_corrupt {
            code = exit::INPUT_ERROR;
        }
        if damaged && !self.common.allow_corrupt {
            code = exit::INPUT_ERROR;
        }
        if code == exit::OK && compared.iter().any(Compared::differs) {
            code = exit::FAILED;
        }
        code
    }
}

/// A copy of `s` for [`exit_code_after_inputs`] when it could not be read
/// (what that reports), else `None`.
fn unreadable(s: &Scanned) -> Option<Scanned> {
    let e = s.result.as_ref().err()?;
    Some(Scanned {
        path: s.path.clone(),
        size: s.size,
        found: s.found,
        result: Err(e.clone()),
        kernels: Vec::new(),
    })
}

/// Prints a line on standard error for each input that holds damaged data
/// (an error, or with `allow_corrupt` a warning), its problems grouped;
/// whether there was one.
fn report_damage(scanned: &[&Scanned], allow_corrupt: bool) -> bool {
    super::scan::report_damaged(scanned.iter().copied(), allow_corrupt)
}
