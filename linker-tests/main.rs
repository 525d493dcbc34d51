//! Tests that need the built binary or external tools (the LLVM 22 tools,
//! compilers, linkers). One harness (libtest-mimic): trials whose tools are
//! missing are ignored, unless `OFFLOAD_KIT_REQUIRE_TOOLS=1` (CI) makes them
//! fail.

#![allow(
    clippy::cast_possible_truncation,
    reason = "tests truncate on purpose when they make filler bytes and offsets"
)]

/// Declares the test files of this module's directory, `mod NAME;` each,
/// and `file_trials()`: the trials of their `tests()`, in the order listed.
/// A new test file is one name in its directory's list (main.rs for
/// linker-tests/, `X.rs` for linker-tests/X/); a file no module declares
/// stops the harness before any trial runs ([`undeclared_files`]).
macro_rules! test_files {
    ($($vis:vis $name:ident),* $(,)?) => {
        $($vis mod $name;)*

        /// The trials of the test files this module declares.
        fn file_trials() -> Vec<libtest_mimic::Trial> {
            let mut trials = Vec::new();
            $(trials.extend($name::tests());)*
            trials
        }
    };
}

#[macro_use]
mod trials;
mod util;

test_files! {
    packager,
    real_libs,
    windows_libs,
    windows_hostile,
    windows_objects,
    prune,
    archive,
    bitcode,
    bundler,
    bundle_native,
    bundle_ids,
    ccob,
    fatbin_compressed,
    cuda_variants,
    damaged,
    extract_compressed,
    fan_out,
    wrap,
    scan,
    scan_ci,
    scan_rules,
    sycl,
    silent_zeros,
    images,
    packages,
    rpms,
    unread_formats,
    squashfs,
    rpm_prune,
    squashfs_prune,
    squashfs_links,
    hostile,
    hostile_ob,
    linker_wrapper,
    wrapper_select,
    wrapper_parity,
    kernels,
    diff,
    bare,
    per_gpu_gate,
    roc_obj,
    nvprune,
    reports,
    reports_html,
    reports_library,
    cuobjdump,
    first_hour,
}

fn main() {
    let undeclared = undeclared_files();
    if !undeclared.is_empty() {
        eprintln!(
            "no module declares {}: add each to the `test_files!` list of its directory \
             (linker-tests/main.rs, or linker-tests/X.rs for linker-tests/X/), or to a \
             `mod` line if it holds no trials",
            undeclared.join(", ")
        );
        std::process::exit(1);
    }
    let trials = file_trials();
    let shared = shared_names(&trials);
    if !shared.is_empty() {
        eprintln!(
            "more than one trial is named {}: a trial's name is its function's \
             (`trial!`), so give each its own function or parameter suffix",
            shared.join(", ")
        );
        std::process::exit(1);
    }
    let args = libtest_mimic::Arguments::from_args();
    libtest_mimic::run(&args, trials).exit();
}

/// The names that more than one of `trials` has, sorted, each once (a
/// filter or a failure naming one would stand for several).
fn shared_names(trials: &[libtest_mimic::Trial]) -> Vec<String> {
    let mut names: Vec<&str> = trials.iter().map(|t| t.name()).collect();
    names.sort_unstable();
    let mut shared: Vec<String> = names
        .windows(2)
        .filter(|w| w[0] == w[1])
        .map(|w| w[0].to_string())
        .collect();
    shared.dedup();
    shared
}

/// The `.rs` files under linker-tests/ that their parent module does not
/// declare (a file without a `mod` never compiles, so its trials would be
/// lost without a word). The parent of `D/NAME.rs` is `D.rs`, and of a
/// file directly in linker-tests/, main.rs; it declares NAME when a line
/// of it ends in `mod NAME;` or NAME is in its `test_files!` list.
fn undeclared_files() -> Vec<String> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("linker-tests");
    let mut files = Vec::new();
    let mut dirs = vec![root.clone()];
    while let Some(dir) = dirs.pop() {
        for e in std::fs::read_dir(&dir)
            .expect("linker-tests/ reads")
            .flatten()
        {
            let p = e.path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") && p != root.join("main.rs") {
                files.push(p);
            }
        }
    }
    let mut undeclared: Vec<String> = files
        .iter()
        .filter(|f| {
            let name = f.file_stem().and_then(|s| s.to_str()).unwrap_or_default();
            let dir = f.parent().expect("a file has a directory");
            let parent = if dir == root {
                root.join("main.rs")
            } else {
                dir.with_extension("rs")
            };
            let text = std::fs::read_to_string(parent).unwrap_or_default();
            !declares(&text, name)
        })
        .map(|f| f.strip_prefix(&root).unwrap_or(f).display().to_string())
        .collect();
    undeclared.sort();
    undeclared
}

/// Whether the source `text` declares the module `name`: a line ending in
/// `mod NAME;`, or NAME in its `test_files!` list.
fn declares(text: &str, name: &str) -> bool {
    let by_mod = text.lines().any(|l| {
        l.trim_end()
            .strip_suffix(&format!("mod {name};"))
            .is_some_and(|head| head.is_empty() || head.ends_with(' '))
    });
    let listed = text.split("test_files! {").skip(1).any(|rest| {
        let list = rest.split('}').next().unwrap_or_default();
        list.split(',')
            .filter_map(|item| item.split_whitespace().last())
            .any(|word| word == name)
    });
    by_mod || listed
}
