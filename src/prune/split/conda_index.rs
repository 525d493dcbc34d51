//! The `info/index.json` of a split conda package's outputs: each output
//! is one more build of the same name and version, told apart by its
//! build string (the original's, `_`, the group's label) and selected by
//! the virtual packages of the machine it is installed on:
//! - NVIDIA: `__cuda` (CEP 30: a driver is there) and `__cuda_arch` (CEP
//!   46: the lowest compute capability of the machine's devices, as
//!   `major.minor`). An output of SASS for `sm_XY` serves `X.Y` up to the
//!   next major; one of PTX (`compute_XY`) serves `X.Y` and above.
//! - AMD: `__amdgpu` and `__amdgpu_arch` (conda/ceps PR #189, as rattler
//!   implements it), whose value is the ISA version `major.minor.stepping`
//!   of the processor: `gfx942` is `9.4.2`, `gfx90a` is `9.0.10`.
//!
//! Where several outputs fit one machine (an `sm_80` and an `sm_86`
//! build both fit an 8.6 device), the solver takes the highest build
//! number: each output's is the original's plus 100 times its rank, the
//! most specific output (the highest lowest device, then the fewest
//! devices) ranked highest, as conda-forge orders its `cuda-arch` builds.

use serde_json::{Map, Value};

use crate::scan::rule::Rule;

/// The run constraint of one group, and how specific it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Constraint {
    /// The specs added to `depends`.
    pub(super) depends: Vec<String>,
    /// The lowest device served, as `(major, minor, stepping)`, and how
    /// many devices the group names: the rank's key.
    key: ((u32, u32, u32), usize),
}

/// The compute capability of an NVIDIA rule's arch (`sm_86`, `sm_90a`,
/// `compute_80`), and whether it is PTX.
fn cuda_arch(arch: &str) -> Option<((u32, u32), bool)> {
    let (ptx, digits) = match (arch.strip_prefix("sm_"), arch.strip_prefix("compute_")) {
        (Some(d), _) => (false, d),
        (_, Some(d)) => (true, d),
        _ => return None,
    };
    let digits = digits.trim_end_matches(['a', 'f']);
    if digits.len() < 2 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let (major, minor) = digits.split_at(digits.len() - 1);
    Some(((major.parse().ok()?, minor.parse().ok()?), ptx))
}

/// The ISA version of an AMD processor (`gfx942` → 9.4.2, `gfx90a` →
/// 9.0.10, `gfx1100` → 11.0.0), any feature (`:xnack+`) aside.
pub(super) fn amdgpu_arch(arch: &str) -> Option<(u32, u32, u32)> {
    let name = arch.split(':').next()?.strip_prefix("gfx")?;
    if name.len() < 3 || !name.is_ascii() {
        return None;
    }
    let (major, rest) = name.split_at(name.len() - 2);
    let hex = |c: &str| u32::from_str_radix(c, 16).ok();
    Some((major.parse().ok()?, hex(&rest[..1])?, hex(&rest[1..])?))
}

/// The run constraint of the group `rules`: why not, when it mixes
/// vendors or names a processor of neither.
pub(super) fn constraint(rules: &[Rule]) -> Result<Constraint, String> {
    let said = || {
        rules
            .iter()
            .map(Rule::to_string)
            .collect::<Vec<_>>()
            .join(",")
    };
    let archs: Vec<&str> = rules.iter().filter_map(|r| r.arch.as_deref()).collect();
    if archs.is_empty() || archs.len() != rules.len() {
        return Err(format!(
            "the group '{}' names no processor for a conda build to require",
            said()
        ));
    }
    let cuda: Vec<_> = archs.iter().filter_map(|a| cuda_arch(a)).collect();
    let amd: Vec<_> = archs.iter().filter_map(|a| amdgpu_arch(a)).collect();
    if cuda.len() == archs.len() {
        let low = cuda.iter().map(|(v, _)| *v).min().unwrap_or_default();
        // SASS runs up to the next major version; PTX on every newer one.
        let high = match cuda.iter().any(|(_, ptx)| *ptx) {
            true => None,
            false => cuda.iter().map(|((major, _), _)| major + 1).max(),
        };
        let range = match high {
            Some(h) => format!(">={}.{},<{h}.0", low.0, low.1),
            None => format!(">={}.{}", low.0, low.1),
        };
        return Ok(Constraint {
            depends: vec!["__cuda".into(), format!("__cuda_arch {range}")],
            key: ((low.0, low.1, 0), archs.len()),
        });
    }
    if amd.len() == archs.len() {
        let mut versions: Vec<_> = amd.clone();
        versions.sort_unstable();
        versions.dedup();
        let spec: Vec<String> = versions
            .iter()
            .map(|(a, b, c)| format!("=={a}.{b}.{c}"))
            .collect();
        return Ok(Constraint {
            depends: vec![
                "__amdgpu".into(),
                format!("__amdgpu_arch {}", spec.join("|")),
            ],
            key: (
                versions.first().copied().unwrap_or_default(),
                versions.len(),
            ),
        });
    }
    Err(format!(
        "the group '{}' is neither all NVIDIA nor all AMD processors: no one virtual package \
         selects it",
        said()
    ))
}

/// Whether `label` is one a split gives a build string (`labels` in
/// the split of a conda package): targets as [`super::variant::token`]
/// writes them (`sm86`, `sm90a`, `compute_80`, `gfx90a_xnackp`), joined
/// by `_`.
fn is_split_label(label: &str) -> bool {
    let number = |d: &str| {
        let digits = d.trim_end_matches(|c: char| c.is_ascii_lowercase());
        !digits.is_empty()
            && digits.bytes().all(|c| c.is_ascii_digit())
            && d.len() - digits.len() <= 1
    };
    let lower = |p: &str| {
        !p.is_empty()
            && p.bytes()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
    };
    let mut pieces = label.split('_').peekable();
    let mut any = false;
    while let Some(p) = pieces.next() {
        let ok = if p == "compute" {
            pieces.next().is_some_and(number)
        } else if let Some(d) = p.strip_prefix("sm") {
            // `sm_80:ptx` is `sm80_ptx`.
            if pieces.peek().is_some_and(|k| ["ptx", "sass"].contains(k)) {
                pieces.next();
            }
            number(d)
        } else if let Some(n) = p.strip_prefix("gfx") {
            // Its features: `xnackp`, `sramecc_m`'s like, each ending in
            // `p` or `m`, up to the next target.
            while let Some(f) = pieces.peek() {
                let target = ["sm", "gfx", "compute"].iter().any(|t| f.starts_with(t));
                if target || !lower(f) || !(f.ends_with('p') || f.ends_with('m')) {
                    break;
                }
                pieces.next();
            }
            lower(n)
        } else {
            false
        };
        if !ok {
            return false;
        }
        any = true;
    }
    any
}

/// The build number of each of `constraints` (the groups' in order),
/// the original's being `base`: `base + 100 × rank`, rank 1 for the least
/// specific.
pub(super) fn build_numbers(base: u64, constraints: &[Constraint]) -> Vec<u64> {
    let mut order: Vec<usize> = (0..constraints.len()).collect();
    order.sort_by_key(|&i| {
        let (low, n) = constraints[i].key;
        (low, std::cmp::Reverse(n), i)
    });
    let mut out = vec![base; constraints.len()];
    for (rank, i) in order.into_iter().enumerate() {
        out[i] = base + 100 * (rank as u64 + 1);
    }
    out
}

/// The fields of the original `index.json` a split needs.
pub(super) struct Original {
    doc: Map<String, Value>,
    /// `name`.
    pub(super) name: String,
    /// `version`.
    pub(super) version: String,
    /// `build`.
    pub(super) build: String,
    /// `build_number`.
    pub(super) build_number: u64,
    /// Whether the text ended in a newline.
    newline: bool,
    /// Where the package is an output of a split already (its build
    /// string ends in `_LABEL`, its `depends` in the constraint the split
    /// added): that label and its build number. `build` and `depends`
    /// are then the original's, so that a split of it again gives what
    /// the first split gave.
    split: Option<(String, u64)>,
}

impl Original {
    /// The `index.json` `text`; why when it is not what conda writes.
    pub(super) fn read(text: &[u8]) -> Result<Original, String> {
        let doc: Value = serde_json::from_slice(text)
            .map_err(|e| format!("its info/index.json is not JSON: {e}"))?;
        let Value::Object(doc) = doc else {
            return Err("its info/index.json is not a JSON object".into());
        };
        let text_of = |k: &str| -> Result<String, String> {
            match doc.get(k).and_then(Value::as_str) {
                Some(s) if !s.is_empty() => Ok(s.to_string()),
                _ => Err(format!("its info/index.json has no '{k}'")),
            }
        };
        let (name, version, build) = (text_of("name")?, text_of("version")?, text_of("build")?);
        let build_number = match doc.get("build_number") {
            None => 0,
            Some(v) => v
                .as_u64()
                .ok_or("its info/index.json's 'build_number' is not a number")?,
        };
        if doc.get("depends").is_some_and(|d| !d.is_array()) {
            return Err("its info/index.json's 'depends' is not a list".into());
        }
        let mut o = Original {
            doc,
            name,
            version,
            build,
            build_number,
            newline: text.ends_with(b"\n"),
            split: None,
        };
        o.undo();
        Ok(o)
    }

    /// What an earlier split added taken away again (see
    /// [`Original::split`]): the label off the build string, the
    /// constraint (and the bare `__cuda`/`__amdgpu` before it) off the
    /// end of `depends`.
    fn undo(&mut self) {
        let Some(Value::Array(depends)) = self.doc.get_mut("depends") else {
            return;
        };
        let last = depends.last().and_then(Value::as_str).unwrap_or_default();
        let (bare, arch) = match last.split_whitespace().next() {
            Some("__cuda_arch") => ("__cuda", true),
            Some("__amdgpu_arch") => ("__amdgpu", true),
            _ => ("", false),
        };
        let at = self.build.match_indices('_').map(|(i, _)| i);
        let label = at
            .map(|i| (self.build[..i].to_string(), &self.build[i + 1..]))
            .find(|(_, l)| is_split_label(l));
        let Some((build, label)) = label.filter(|_| arch) else {
            return;
        };
        depends.pop();
        if depends.last().and_then(Value::as_str) == Some(bare) {
            depends.pop();
        }
        self.split = Some((label.to_string(), self.build_number));
        self.build = build;
    }

    /// The build number of each output, labelled `labels`, of
    /// `constraints`: [`build_numbers`] from the original's number (an
    /// earlier split's output's less its hundreds), but an output of the
    /// label the input has already keeps the input's number.
    pub(super) fn numbers(&self, labels: &[String], constraints: &[Constraint]) -> Vec<u64> {
        let Some((label, number)) = &self.split else {
            return build_numbers(self.build_number, constraints);
        };
        let mut out = build_numbers(number % 100, constraints);
        for (n, l) in out.iter_mut().zip(labels) {
            if l == label {
                *n = *number;
            }
        }
        out
    }

    /// The build string of the output labelled `label`.
    pub(super) fn build_of(&self, label: &str) -> String {
        format!("{}_{label}", self.build)
    }

    /// The file name of the output of build `build`, with the input's
    /// extension `ext`.
    pub(super) fn file_name(&self, build: &str, ext: &str) -> String {
        format!("{}-{}-{build}{ext}", self.name, self.version)
    }

    /// The `index.json` of an output: `build` and `build_number` set, the
    /// specs of `c` added to `depends` (a bare `__cuda` only where the
    /// package depends on no `__cuda` already); keys sorted and indented
    /// by two, as conda-build writes it.
    pub(super) fn edited(&self, build: &str, number: u64, c: &Constraint) -> Vec<u8> {
        let mut doc = self.doc.clone();
        doc.insert("build".into(), build.into());
        doc.insert("build_number".into(), number.into());
        let mut depends: Vec<Value> = match doc.get("depends") {
            Some(Value::Array(a)) => a.clone(),
            _ => Vec::new(),
        };
        let named = |d: &Value, n: &str| {
            d.as_str()
                .is_some_and(|s| s.split_whitespace().next() == Some(n))
        };
        for spec in &c.depends {
            let n = spec.split_whitespace().next().unwrap_or_default();
            if spec == n && depends.iter().any(|d| named(d, n)) {
                continue;
            }
            depends.push(spec.as_str().into());
        }
        doc.insert("depends".into(), Value::Array(depends));
        let mut out = serde_json::to_vec_pretty(&Value::Object(doc)).unwrap_or_default();
        if self.newline {
            out.push(b'\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(r: &[&str]) -> Vec<Rule> {
        r.iter().map(|s| Rule::parse(s).unwrap()).collect()
    }

    #[test]
    fn isa_versions_are_read_from_the_processor_name() {
        assert_eq!(amdgpu_arch("gfx942"), Some((9, 4, 2)));
        assert_eq!(amdgpu_arch("gfx90a"), Some((9, 0, 10)));
        assert_eq!(amdgpu_arch("gfx1100"), Some((11, 0, 0)));
        assert_eq!(amdgpu_arch("gfx90a:xnack+"), Some((9, 0, 10)));
        assert_eq!(amdgpu_arch("sm_86"), None);
    }

    #[test]
    fn constraints_follow_cep_46_and_the_isa_version() {
        let c = constraint(&rules(&["sm_86"])).unwrap();
        assert_eq!(c.depends, ["__cuda", "__cuda_arch >=8.6,<9.0"]);
        let c = constraint(&rules(&["sm_80", "sm_90a"])).unwrap();
        assert_eq!(c.depends, ["__cuda", "__cuda_arch >=8.0,<10.0"]);
        let c = constraint(&rules(&["gfx942", "gfx90a"])).unwrap();
        assert_eq!(c.depends, ["__amdgpu", "__amdgpu_arch ==9.0.10|==9.4.2"]);
        assert!(constraint(&rules(&["sm_86", "gfx942"])).is_err());
    }

    #[test]
    fn an_output_split_again_gets_what_the_first_split_gave() {
        let text = b"{\n  \"build\": \"py312h0_0\",\n  \"build_number\": 2,\n  \"depends\": [\n    \"__cuda\"\n  ],\n  \"name\": \"k\",\n  \"version\": \"1.0\"\n}";
        let o = Original::read(text).unwrap();
        assert!(o.split.is_none());
        for group in [
            &["sm_86"][..],
            &["gfx90a:xnack+", "gfx942"],
            &["sm_80:ptx", "sm_90"],
        ] {
            let c = constraint(&rules(group)).unwrap();
            let label = super::super::conda::labels(&[rules(group)])
                .unwrap()
                .remove(0);
            let build = o.build_of(&label);
            let first = o.edited(&build, 302, &c);
            let again = Original::read(&first).unwrap();
            assert_eq!(again.split, Some((label.clone(), 302)), "{label}");
            assert_eq!(again.build, "py312h0_0");
            let n = again.numbers(std::slice::from_ref(&label), std::slice::from_ref(&c));
            assert_eq!(n, [302]);
            let redo = again.edited(&again.build_of(&label), n[0], &c);
            assert_eq!(
                String::from_utf8(redo).unwrap(),
                String::from_utf8(first).unwrap()
            );
            // Another label ranks from the original's number.
            assert_eq!(again.numbers(&["x".into()], &[c]), [102]);
        }
        for plain in [
            "sm86",
            "gfx90a",
            "0_sm86",
            "smth",
            "gfx90a_xnack",
            "sm80_compute_90",
        ] {
            let ok = ["sm86", "gfx90a", "sm80_compute_90", "sm80_ptx_sm90"].contains(&plain);
            assert_eq!(is_split_label(plain), ok, "{plain}");
        }
    }

    #[test]
    fn the_most_specific_output_gets_the_highest_build_number() {
        let cs: Vec<_> = [&["sm_86"][..], &["sm_80"], &["sm_80", "sm_90"]]
            .iter()
            .map(|g| constraint(&rules(g)).unwrap())
            .collect();
        assert_eq!(build_numbers(3, &cs), [303, 203, 103]);
    }

    #[test]
    fn index_json_gains_the_build_and_the_constraint() {
        let text = b"{\n  \"build\": \"h0_0\",\n  \"build_number\": 2,\n  \"depends\": [\n    \"__cuda >=12\"\n  ],\n  \"name\": \"k\",\n  \"version\": \"1.0\"\n}";
        let o = Original::read(text).unwrap();
        let c = constraint(&rules(&["sm_86"])).unwrap();
        let got = String::from_utf8(o.edited("h0_0_sm86", 102, &c)).unwrap();
        let want = "{\n  \"build\": \"h0_0_sm86\",\n  \"build_number\": 102,\n  \"depends\": [\n    \"__cuda >=12\",\n    \"__cuda_arch >=8.6,<9.0\"\n  ],\n  \"name\": \"k\",\n  \"version\": \"1.0\"\n}";
        assert_eq!(got, want);
        assert_eq!(o.file_name("h0_0_sm86", ".conda"), "k-1.0-h0_0_sm86.conda");
        assert!(Original::read(b"{\"name\": \"k\"}").is_err());
    }
}
