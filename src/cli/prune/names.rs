//! Whether the name `-o` gives a pruned package is one its installers
//! accept: a wheel's file name is parsed by pip (PEP 427: the project,
//! version, optional build tag, Python, ABI and platform tags), a conda
//! package's names its project, version and build. prune writes the file
//! anyway; the warning says what the name should look like.

use std::path::Path;

/// The warning for writing the package `input` to `output`, when
/// `output`'s file name is one its installer refuses or reads otherwise
/// than the input's.
pub(super) fn warning(input: &Path, output: &Path) -> Option<String> {
    let out = output.file_name()?.to_string_lossy();
    let inp = input.file_name()?.to_string_lossy();
    let shown = crate::files::shown(output);
    if is_wheel_name(&inp) || out.ends_with(".whl") {
        return wheel(&inp, &out).map(|why| {
            format!(
                "warning: '{shown}': {why} (a wheel's file name is \
                 NAME-VERSION[-BUILD]-PYTHON-ABI-PLATFORM.whl; the input's is '{inp}'); \
                 -d DIR writes it under the input's name"
            )
        });
    }
    let conda = [".conda", ".tar.bz2"]
        .into_iter()
        .find(|e| inp.ends_with(e) && inp.len() > e.len())?;
    (out != inp).then(|| {
        format!(
            "warning: '{shown}': conda reads a package's name, version and build from its file \
             name (NAME-VERSION-BUILD{conda}), and this one is not the input's '{inp}'; -d DIR \
             writes it under the input's name"
        )
    })
}

/// What pip would say against the wheel name `out`, written from the
/// wheel `inp`: none when it parses and names the same project and
/// version.
fn wheel(inp: &str, out: &str) -> Option<String> {
    let Some(o) = parse(out) else {
        return Some("pip refuses to install a wheel of this name".into());
    };
    let i = parse(inp)?;
    if normalized(o.name) != normalized(i.name) || o.version != i.version {
        return Some(format!(
            "this name says project '{}' version '{}', the wheel's metadata '{}' '{}': pip \
             refuses a wheel whose name and metadata disagree",
            o.name, o.version, i.name, i.version
        ));
    }
    None
}

/// Whether `name` parses as a wheel's file name.
fn is_wheel_name(name: &str) -> bool {
    parse(name).is_some()
}

/// A wheel file name's project and version.
struct WheelName<'a> {
    name: &'a str,
    version: &'a str,
}

/// `name` read as a wheel file name, as pip reads one: five or six
/// fields between `-`, none empty, a build tag starting with a digit, a
/// project name of letters, digits, `.` and `_` that starts and ends with
/// a letter or digit.
fn parse(name: &str) -> Option<WheelName<'_>> {
    let stem = name.strip_suffix(".whl")?;
    let fields: Vec<&str> = stem.split('-').collect();
    if !(5..=6).contains(&fields.len()) || fields.iter().any(|f| f.is_empty()) {
        return None;
    }
    if fields.len() == 6 && !fields[2].starts_with(|c: char| c.is_ascii_digit()) {
        return None;
    }
    let project = fields[0];
    let edge = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    let inner = project
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '_');
    if !inner || !edge(project.chars().next()) || !edge(project.chars().last()) {
        return None;
    }
    if fields.iter().any(|f| f.chars().any(char::is_whitespace)) {
        return None;
    }
    Some(WheelName {
        name: project,
        version: fields[1],
    })
}

/// A project name as PEP 503 compares them: lowercase, each run of `-`,
/// `_` and `.` one `-`.
fn normalized(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        if matches!(c, '-' | '_' | '.') {
            if !out.ends_with('-') {
                out.push('-');
            }
        } else {
            out.push(c.to_ascii_lowercase());
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const TORCH: &str = "torch-2.5.1-cp312-cp312-manylinux_2_28_x86_64.whl";

    #[test]
    fn names_pip_refuses_are_warned_of() {
        let w = |out: &str| warning(Path::new(TORCH), Path::new(out));
        assert!(w("slim100.whl").unwrap().contains("pip refuses"));
        assert!(w("torch-2.5.1-cp312.whl").is_some());
        assert!(w("torch-2.5.1-x1-cp312-cp312-linux_x86_64.whl").is_some());
        assert!(w("torch-2.6.0-cp312-cp312-manylinux_2_28_x86_64.whl").is_some());
        assert!(w("-2.5.1-cp312-cp312-manylinux_2_28_x86_64.whl").is_some());
    }

    #[test]
    fn names_pip_takes_are_not() {
        let w = |out: &str| warning(Path::new(TORCH), Path::new(out));
        assert_eq!(w(&format!("out/{TORCH}")), None);
        assert_eq!(
            w("Torch-2.5.1-1slim-cp312-cp312-manylinux_2_28_x86_64.whl"),
            None
        );
        assert_eq!(
            warning(
                Path::new("flash_attn-2.7.0-cp312-none-any.whl"),
                Path::new("flash.attn-2.7.0-cp312-none-any.whl")
            ),
            None
        );
    }

    #[test]
    fn conda_names_must_stay_the_inputs() {
        let c = Path::new("cupy-13.3.0-py312h1_0.conda");
        assert!(warning(c, Path::new("slim.conda")).is_some());
        assert!(warning(c, Path::new("cupy-13.3.0-py312h1_0.tar.bz2")).is_some());
        assert_eq!(
            warning(c, Path::new("out/cupy-13.3.0-py312h1_0.conda")),
            None
        );
        assert_eq!(warning(Path::new("lib.so"), Path::new("x.so")), None);
    }
}
