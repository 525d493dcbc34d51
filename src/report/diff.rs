//! The table `diff` prints: for each file that differs, a line for the
//! file and one for each of its targets (the same ones too, so that the
//! bytes per target before and after are all there), then its kernels
//! that differ; a summary line at the end. Nothing when nothing differs,
//! but a note for each file holding CUDA fatbins the scan counted and did
//! not read (a library's own, in its data sections).
//!
//! ```text
//! ~ lib/libfoo.so: 4 -> 6 images, 20480 -> 30720 bytes (+10240)
//!   ~ hip amdgcn-amd-amdhsa gfx90a object: 2 -> 2 images, 10240 -> 10496 bytes (+256); 1 changed
//!       - kernel dropped
//!       ~ kernel reduce: lds 256 -> 1024
//!   + hip amdgcn-amd-amdhsa gfx942 object: 0 -> 2 images, 0 -> 10240 bytes (+10240); 2 added
//! 1 file: 1 changed
//! ```

use std::io::Write;

use anyhow::Result;

use super::print_line;
use crate::diff::paths::{Compared, FileStatus, summary};
use crate::diff::{Change, Count, KernelDiff, Status, TargetDiff};
use crate::kernels::Kernel;

/// Prints the files that differ or could not be compared, then the
/// summary line (when one did).
pub(crate) fn print(out: &mut impl Write, compared: &[Compared]) -> Result<()> {
    let mut any = false;
    for c in compared
        .iter()
        .filter(|c| c.shown && c.status != FileStatus::Same)
    {
        any = true;
        let mark = match c.status {
            FileStatus::Same => '=',
            FileStatus::Changed => '~',
            FileStatus::Added => '+',
            FileStatus::Removed => '-',
            FileStatus::Error => '!',
        };
        let Some(d) = &c.diff else {
            print_line(
                out,
                &format!("{mark} {}: not compared (an input error)", c.name()),
            )?;
            continue;
        };
        print_line(
            out,
            &format!("{mark} {}: {}", c.name(), counts(&d.old, &d.new)),
        )?;
        for t in &d.targets {
            print_target(out, t)?;
        }
    }
    if any {
        let s = summary(compared);
        let mut parts = Vec::new();
        for (n, what) in [
            (s.changed, "changed"),
            (s.added, "added"),
            (s.removed, "removed"),
            (s.errors, "not compared"),
            (s.same, "the same"),
        ] {
            if n > 0 {
                parts.push(format!("{n} {what}"));
            }
        }
        let files = if s.files == 1 { "file" } else { "files" };
        print_line(out, &format!("{} {files}: {}", s.files, parts.join(", ")))?;
    }
    // Device code the comparison did not read, whatever it found: fatbins
    // a library keeps in its own data (without them, two versions of
    // cuFFT compare as the same).
    let mut noted = std::collections::HashSet::new();
    for side in compared.iter().flat_map(|c| [&c.old, &c.new]).flatten() {
        if let Ok(r) = &side.result
            && let Some(note) = r.elsewhere_note()
            && noted.insert(side.path.as_str())
        {
            print_line(out, &format!("note: {}: {note}", side.path))?;
        }
    }
    Ok(())
}

/// `2 -> 3 images, 100 -> 150 bytes (+50)`.
fn counts(old: &Count, new: &Count) -> String {
    let delta = i128::from(new.bytes) - i128::from(old.bytes);
    format!(
        "{} -> {} images, {} -> {} bytes ({delta:+})",
        old.images, new.images, old.bytes, new.bytes
    )
}

fn print_target(out: &mut impl Write, t: &TargetDiff) -> Result<()> {
    let mark = match t.status {
        Status::Same if t.differs() => '~',
        Status::Same => '=',
        Status::Changed => '~',
        Status::Added => '+',
        Status::Removed => '-',
    };
    let kind = t
        .image_kind
        .map_or_else(|| "-".to_string(), |k| k.to_string());
    let dash = |s: &str| {
        if s.is_empty() {
            "-".to_string()
        } else {
            s.to_string()
        }
    };
    let mut line = format!(
        "  {mark} {} {} {} {kind}: {}",
        t.offload_kind,
        dash(&t.triple),
        dash(&t.target_id),
        counts(&t.old, &t.new)
    );
    let images: Vec<String> = [
        (t.changed.len(), "changed"),
        (t.added.len(), "added"),
        (t.removed.len(), "removed"),
    ]
    .iter()
    .filter(|(n, _)| *n > 0)
    .map(|(n, what)| format!("{n} {what}"))
    .collect();
    if !images.is_empty() {
        line.push_str("; ");
        line.push_str(&images.join(", "));
    }
    print_line(out, &line)?;
    if let Some(k) = &t.kernels {
        print_kernels(out, k)?;
    }
    Ok(())
}

/// A kernel's name as shown: demangled when it was.
fn name(k: &Kernel) -> &str {
    k.demangled.as_deref().unwrap_or(&k.name)
}

fn print_kernels(out: &mut impl Write, k: &KernelDiff) -> Result<()> {
    for r in &k.removed {
        print_line(out, &format!("      - kernel {}", name(r)))?;
    }
    for a in &k.added {
        print_line(out, &format!("      + kernel {}", name(a)))?;
    }
    for c in &k.changed {
        let value = |v: Option<u64>| v.map_or_else(|| "-".to_string(), |v| v.to_string());
        let figures: Vec<String> = c
            .figures
            .iter()
            .map(|(f, Change { old, new })| format!("{f} {} -> {}", value(*old), value(*new)))
            .collect();
        let shown = c.demangled.as_deref().unwrap_or(&c.name);
        print_line(
            out,
            &format!("      ~ kernel {shown}: {}", figures.join(", ")),
        )?;
    }
    Ok(())
}
