//! Trial names derived from the code: [`trial!`] registers a trial by its
//! function, named `<module path>::<function>`, so a failing trial's name
//! says where its code is.

/// The name of the trial that runs the function `f` (a path as written,
/// `f` or `sub::f`) of the module `module` (its `module_path!()`): the
/// module path below the crate root, then `f`, so `diff.rs`'s
/// `library_versions` is `diff::library_versions`. [`trial_name!`] and
/// [`trial!`] call it; names are made nowhere else.
pub fn trial_name(module: &str, f: &str) -> String {
    let below = module.split_once("::").map_or("", |(_, rest)| rest);
    let f: String = f.chars().filter(|c| !c.is_whitespace()).collect();
    if below.is_empty() {
        f
    } else {
        format!("{below}::{f}")
    }
}

/// The name of the trial that runs the function `f` of the calling module
/// (see [`trial_name`]); `trial_name!(f["{x}"])` adds `::` and the
/// formatted suffix, as [`trial!`]'s generated trials do.
macro_rules! trial_name {
    ($($f:ident)::+) => {
        $crate::trials::trial_name(module_path!(), stringify!($($f)::+))
    };
    ($($f:ident)::+ [$($suffix:tt)+]) => {
        format!(
            "{}::{}",
            $crate::trials::trial_name(module_path!(), stringify!($($f)::+)),
            format_args!($($suffix)+)
        )
    };
}

/// Registers the trial that runs the function `f`, needing `tools` (as
/// [`crate::util::trial`]), under a name derived from the code, never
/// written by hand:
///
/// - `trial!(f, tools)` runs `f` and is named `<module>::f`, where
///   `<module>` is the calling module's path below the crate root
///   (`linker-tests/packager/newer.rs`'s `f` is `packager::newer::f`;
///   `trial!(sub::f, tools)` is `<module>::sub::f`).
/// - `trial!(f, tools, body)` is named `<module>::f` too, and runs `body`: a
///   closure calling `f` with values `tests()` made (one trial of `f`).
/// - `trial!(f["FORMAT", ARGS…], tools, body)` is one of the trials a loop
///   makes from one function and several parameters: it runs `body` (a
///   closure calling `f` with them) and is named `<module>::f::SUFFIX`, the
///   suffix formatted from `FORMAT` and `ARGS` (`format!`'s arguments), so
///   each parameter's trial has a name of its own under `f`'s.
///
/// A trial whose body is not one function with parameters gets a function
/// of its own, named for what it shows. Two trials of one name stop the
/// harness before any runs (main.rs's `shared_names`).
macro_rules! trial {
    ($($f:ident)::+, $tools:expr $(,)?) => {
        $crate::util::trial(trial_name!($($f)::+), $tools, $($f)::+)
    };
    ($($f:ident)::+, $tools:expr, $body:expr $(,)?) => {{
        // `f` must exist: renaming it renames the trial.
        let _ = $($f)::+;
        $crate::util::trial(trial_name!($($f)::+), $tools, $body)
    }};
    ($($f:ident)::+ [$($suffix:tt)+], $tools:expr, $body:expr $(,)?) => {{
        // `f` must exist: renaming it renames the trials.
        let _ = $($f)::+;
        $crate::util::trial(trial_name!($($f)::+ [$($suffix)+]), $tools, $body)
    }};
}
