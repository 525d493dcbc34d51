//! The metadata a split wheel carries so that installers pick it (PEP 825
//! wheel variants, and a PEP 503 index per group for pip): the variant
//! label of a group, the `*.dist-info/variant.json` of one output, the
//! `{name}-{version}-variants.json` beside them, the pieces of a wheel's
//! file name, and an index page. Each writer gives the same bytes for the
//! same input.

use serde_json::{Map, Value, json};

use crate::scan::rule::Rule;
use crate::targets;

/// The schema a `variant.json` and a `-variants.json` name.
const SCHEMA: &str = "https://variants-schema.wheelnext.dev/v0.2.0.json";

/// The longest label PEP 825 allows (`^[0-9a-z_.]{1,16}$`); variantlib
/// 0.2.2 and uv 0.13.8 take longer ones, but a label past it is not a
/// PEP 825 label.
pub(crate) const LABEL_MAX: usize = 16;

/// The label of the variant holding what the input held.
pub(crate) const NULL: &str = "null";

/// The variant label of a group of rules: each rule's target in the
/// characters a label allows (`sm_86` → `sm86`, `gfx90a:xnack+` →
/// `gfx90a_xnackp`), joined by `.`; an error when that is empty, `null`
/// or longer than [`LABEL_MAX`].
pub(crate) fn label(rules: &[Rule]) -> Result<String, String> {
    let tokens: Vec<String> = rules.iter().map(|r| token(&r.to_string())).collect();
    let joined = tokens.join(".");
    let said = rules
        .iter()
        .map(Rule::to_string)
        .collect::<Vec<_>>()
        .join(",");
    if joined.is_empty() || joined == NULL {
        return Err(format!("the group '{said}' gives no variant label"));
    }
    if joined.len() > LABEL_MAX {
        return Err(format!(
            "the group '{said}' would be labelled '{joined}', longer than the {LABEL_MAX} \
             characters a variant label may have: split it into smaller groups"
        ));
    }
    Ok(joined)
}

/// Whether `s` is a variant label PEP 825 takes: `[0-9a-z_.]`, one to
/// [`LABEL_MAX`] characters.
pub(crate) fn is_label(s: &str) -> bool {
    (1..=LABEL_MAX).contains(&s.len())
        && s.bytes()
            .all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'z' | b'_' | b'.'))
}

/// One rule's part of a label: lower case, `sm_` as `sm`, each feature
/// after `_` with a trailing `+` as `p` and `-` as `m`, any other
/// character a label does not allow as `_`.
pub(super) fn token(rule: &str) -> String {
    let mut parts = rule.split(':');
    let head = parts.next().unwrap_or_default().to_ascii_lowercase();
    let mut out = head
        .strip_prefix("sm_")
        .map_or(head.clone(), |n| format!("sm{n}"));
    for f in parts {
        let f = f.to_ascii_lowercase();
        let f = match (f.strip_suffix('+'), f.strip_suffix('-')) {
            (Some(n), _) => format!("{n}p"),
            (_, Some(n)) => format!("{n}m"),
            _ => f,
        };
        out.push('_');
        out.push_str(&f);
    }
    out.chars()
        .map(|c| match c {
            '0'..='9' | 'a'..='z' | '_' | '.' => c,
            _ => '_',
        })
        .collect()
}

/// The properties of one output: NVIDIA's `sm_arch` values and AMD's
/// `gfx_arch` values, each sorted as [`Properties::add`] keeps them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Properties {
    /// `NN_real` for each SASS (cubin) target kept, `NN_virtual` for each
    /// PTX.
    pub(crate) nvidia: Vec<String>,
    /// `gfxNNN` for each AMD processor kept.
    pub(crate) amd: Vec<String>,
}

impl Properties {
    /// Adds the images of `target` (`sm_86`, `gfx90a:xnack+`) of `kind`
    /// (`cubin`, `ptx`, `object`): a cubin as `NN_real` (an arch-specific
    /// `sm_90a` as `90_real`, what a 9.0 device offers), PTX as
    /// `NN_virtual`, an AMD image as its processor; a generic AMD target
    /// (`gfx9-generic`) and any other target add nothing (no device names
    /// itself so). The values stay sorted: NVIDIA's newest first, real
    /// before virtual; AMD's by name.
    pub(crate) fn add(&mut self, target: &str, kind: &str) {
        if let Some((n, _)) = targets::parse_sm(target) {
            let value = match kind {
                "ptx" => format!("{n}_virtual"),
                "cubin" => format!("{n}_real"),
                _ => return,
            };
            if !self.nvidia.contains(&value) {
                self.nvidia.push(value);
            }
            let key = |v: &String| {
                let (n, k) = v.split_once('_').unwrap_or((v, ""));
                (
                    k != "real",
                    std::cmp::Reverse(n.parse::<u32>().unwrap_or(0)),
                )
            };
            self.nvidia.sort_by_key(key);
            return;
        }
        let processor = target.split(':').next().unwrap_or_default();
        let plain = processor.starts_with("gfx")
            && processor.len() > 3
            && processor
                .bytes()
                .all(|b| b.is_ascii_digit() || b.is_ascii_lowercase());
        if plain && !self.amd.iter().any(|v| v == processor) {
            self.amd.push(processor.to_string());
            self.amd.sort();
        }
    }

    /// The properties as a variant's JSON object: `{"nvidia": {"sm_arch":
    /// […]}, "amd": {"gfx_arch": […]}}`, a namespace only where it has
    /// values.
    fn json(&self) -> Value {
        let mut m = Map::new();
        if !self.nvidia.is_empty() {
            m.insert("nvidia".into(), json!({ "sm_arch": self.nvidia }));
        }
        if !self.amd.is_empty() {
            m.insert("amd".into(), json!({ "gfx_arch": self.amd }));
        }
        Value::Object(m)
    }

    /// The properties as `namespace :: feature :: value` lines.
    pub(crate) fn lines(&self) -> Vec<String> {
        let nv = self
            .nvidia
            .iter()
            .map(|v| format!("nvidia :: sm_arch :: {v}"));
        let amd = self.amd.iter().map(|v| format!("amd :: gfx_arch :: {v}"));
        nv.chain(amd).collect()
    }
}

/// The document around the variants: the schema, the priorities and the
/// providers exactly as uv's built-in NVIDIA provider wants them.
fn document(variants: Map<String, Value>) -> Vec<u8> {
    let doc = json!({
        "$schema": SCHEMA,
        "default-priorities": { "namespace": ["nvidia", "amd"] },
        "providers": {
            "nvidia": {
                "requires": ["nvidia-variant-provider>=0.0.1,<1.0.0"],
                "plugin-api": "nvidia_variant_provider.plugin:NvidiaVariantPlugin"
            },
            "amd": {
                "requires": ["amd-variant-provider>=0.0.1,<1.0.0"],
                "plugin-api": "amd_variant_provider.plugin:AMDVariantPlugin"
            }
        },
        "variants": variants,
    });
    let mut out = serde_json::to_vec_pretty(&doc).unwrap_or_default();
    out.push(b'\n');
    out
}

/// The `variant.json` of the output labelled `label` with `props` (the
/// null variant: [`NULL`] with none).
pub(crate) fn variant_json(label: &str, props: &Properties) -> Vec<u8> {
    let mut m = Map::new();
    m.insert(label.to_string(), props.json());
    document(m)
}

/// The `{name}-{version}-variants.json` listing every output's label with
/// its properties.
pub(crate) fn variants_json(outputs: &[(String, Properties)]) -> Vec<u8> {
    let mut m = Map::new();
    for (label, props) in outputs {
        m.insert(label.clone(), props.json());
    }
    document(m)
}

/// A wheel's file name read as PEP 427 writes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct WheelName {
    /// The distribution's name as the file spells it.
    pub(crate) name: String,
    /// Its version.
    pub(crate) version: String,
    /// The whole name without `.whl` (and without a variant's label).
    pub(crate) stem: String,
    /// A variant wheel's label (after its platform tag): an output of a
    /// split, split again.
    pub(crate) label: Option<String>,
}

impl WheelName {
    /// `file` read as `{name}-{version}(-{build})?-{py}-{abi}-{platform}.whl`,
    /// or a variant wheel's name, which has a label (PEP 825:
    /// `[0-9a-z_.]`, at most 16) after its platform; why not, in words.
    pub(crate) fn parse(file: &str) -> Result<WheelName, String> {
        let Some(whole) = file.strip_suffix(".whl") else {
            return Err("a wheel's name ends in .whl".into());
        };
        let mut parts: Vec<&str> = whole.split('-').collect();
        // A build tag starts with a digit; a sixth part that does not is
        // a variant label after the platform.
        let build = parts.len() == 6 && parts[2].starts_with(|c: char| c.is_ascii_digit());
        let mut stem = whole;
        let mut label = None;
        if matches!(parts.len(), 6 | 7) && !build {
            let l = parts.pop().unwrap_or_default();
            if !is_label(l) {
                return Err(format!(
                    "its variant label '{l}' is not one PEP 825 takes ([0-9a-z_.], at most 16)"
                ));
            }
            stem = &whole[..whole.len() - l.len() - 1];
            label = Some(l.to_string());
        }
        match parts.len() {
            5 | 6 if parts.iter().all(|p| !p.is_empty()) => Ok(WheelName {
                name: parts[0].to_string(),
                version: parts[1].to_string(),
                stem: stem.to_string(),
                label,
            }),
            _ => Err(
                "its name is not a wheel's ({name}-{version}(-{build})?-{py}-{abi}-{platform}.whl)"
                    .into(),
            ),
        }
    }

    /// The file name of the variant labelled `label`.
    pub(crate) fn variant(&self, label: &str) -> String {
        format!("{}-{label}.whl", self.stem)
    }

    /// The name of the index file listing the variants.
    pub(crate) fn variants_json(&self) -> String {
        format!("{}-{}-variants.json", self.name, self.version)
    }

    /// The project's name as a PEP 503 index spells it: lower case, each
    /// run of `-`, `_` and `.` one `-`.
    pub(crate) fn project(&self) -> String {
        let mut out = String::new();
        for c in self.name.chars() {
            if matches!(c, '-' | '_' | '.') {
                if !out.ends_with('-') {
                    out.push('-');
                }
            } else {
                out.extend(c.to_lowercase());
            }
        }
        out
    }
}

/// A PEP 503 page titled `title` linking each of `links` (a target,
/// percent-encoded in the link, and the text shown).
pub(crate) fn index_page(title: &str, links: &[(String, String)]) -> Vec<u8> {
    let mut out = String::from("<!DOCTYPE html>\n<html>\n<head>\n");
    out.push_str("<meta name=\"pypi:repository-version\" content=\"1.0\">\n");
    out.push_str(&format!(
        "<title>{}</title>\n</head>\n<body>\n",
        escape(title)
    ));
    for (href, text) in links {
        out.push_str(&format!(
            "<a href=\"{}\">{}</a><br>\n",
            escape(href),
            escape(text)
        ));
    }
    out.push_str("</body>\n</html>\n");
    out.into_bytes()
}

/// `s` percent-encoded but for the characters a URL path keeps as they
/// are (letters, digits, `-._~`, and `/` and `#` and `=`, which the links
/// mean).
pub(crate) fn url_path(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        match b {
            b'a'..=b'z'
            | b'A'..=b'Z'
            | b'0'..=b'9'
            | b'-'
            | b'.'
            | b'_'
            | b'~'
            | b'/'
            | b'#'
            | b'=' => out.push(b as char),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// `s` with `&`, `<`, `>` and `"` escaped for HTML.
fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// The label of each group, each distinct.
pub(super) fn labels(groups: &[Vec<Rule>]) -> Result<Vec<String>, String> {
    let mut out: Vec<String> = Vec::new();
    for g in groups {
        let l = label(g)?;
        if out.contains(&l) {
            return Err(format!(
                "two groups are both labelled '{l}': name each once"
            ));
        }
        out.push(l);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules(text: &[&str]) -> Vec<Rule> {
        text.iter().map(|r| Rule::parse(r).unwrap()).collect()
    }

    #[test]
    fn labels_keep_to_the_characters_and_length_variantlib_takes() {
        assert_eq!(label(&rules(&["sm_86"])).unwrap(), "sm86");
        assert_eq!(label(&rules(&["gfx942"])).unwrap(), "gfx942");
        assert_eq!(
            label(&rules(&["gfx90a", "gfx942"])).unwrap(),
            "gfx90a.gfx942"
        );
        assert_eq!(label(&rules(&["gfx90a:xnack+"])).unwrap(), "gfx90a_xnackp");
        assert_eq!(label(&rules(&["gfx90a:xnack-"])).unwrap(), "gfx90a_xnackm");
        let e = label(&rules(&["gfx90a", "gfx942", "gfx1100"])).unwrap_err();
        assert!(
            e.contains("'gfx90a.gfx942.gfx1100', longer than the 16"),
            "{e}"
        );
        for l in ["sm86", "gfx90a.gfx942", "gfx90a_xnackp"] {
            assert!(
                l.bytes()
                    .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'z' | b'_' | b'.'))
            );
        }
    }

    #[test]
    fn properties_name_sass_as_real_ptx_as_virtual_and_amd_processors() {
        let mut p = Properties::default();
        for (t, k) in [
            ("sm_80", "cubin"),
            ("sm_86", "cubin"),
            ("sm_80", "ptx"),
            ("sm_90a", "cubin"),
            ("sm_86", "cubin"),
            ("gfx90a:xnack+", "object"),
            ("gfx90a:xnack-", "object"),
            ("gfx9-generic", "object"),
            ("gfx1100", "object"),
            ("x86_64-unknown-linux-gnu", "host"),
        ] {
            p.add(t, k);
        }
        assert_eq!(p.nvidia, ["90_real", "86_real", "80_real", "80_virtual"]);
        assert_eq!(p.amd, ["gfx1100", "gfx90a"]);
        assert_eq!(
            p.lines()[0..2],
            [
                "nvidia :: sm_arch :: 90_real",
                "nvidia :: sm_arch :: 86_real"
            ]
        );
    }

    #[test]
    fn variant_json_is_the_documented_document_with_one_entry() {
        let mut p = Properties::default();
        p.add("sm_86", "cubin");
        p.add("sm_80", "cubin");
        let got: Value = serde_json::from_slice(&variant_json("sm86", &p)).unwrap();
        let want = json!({
            "$schema": "https://variants-schema.wheelnext.dev/v0.2.0.json",
            "default-priorities": {"namespace": ["nvidia", "amd"]},
            "providers": {
                "nvidia": {"requires": ["nvidia-variant-provider>=0.0.1,<1.0.0"],
                           "plugin-api": "nvidia_variant_provider.plugin:NvidiaVariantPlugin"},
                "amd": {"requires": ["amd-variant-provider>=0.0.1,<1.0.0"],
                        "plugin-api": "amd_variant_provider.plugin:AMDVariantPlugin"}},
            "variants": {"sm86": {"nvidia": {"sm_arch": ["86_real", "80_real"]}}}
        });
        assert_eq!(got, want);
        let null: Value =
            serde_json::from_slice(&variant_json(NULL, &Properties::default())).unwrap();
        assert_eq!(null["variants"], json!({"null": {}}));
        // The same bytes each time, keys in one order, ending in a line feed.
        assert_eq!(variant_json("sm86", &p), variant_json("sm86", &p));
        assert!(variant_json("sm86", &p).ends_with(b"}\n"));
    }

    #[test]
    fn variants_json_lists_every_label() {
        let mut a = Properties::default();
        a.add("gfx942", "object");
        let v = variants_json(&[("gfx942".into(), a), (NULL.into(), Properties::default())]);
        let got: Value = serde_json::from_slice(&v).unwrap();
        assert_eq!(
            got["variants"],
            json!({"gfx942": {"amd": {"gfx_arch": ["gfx942"]}}, "null": {}})
        );
        assert_eq!(
            got["providers"]["nvidia"]["requires"][0],
            "nvidia-variant-provider>=0.0.1,<1.0.0"
        );
    }

    #[test]
    fn wheel_names_are_read_and_variants_named() {
        let w = WheelName::parse("bitsandbytes-0.45.5-py3-none-manylinux_2_24_x86_64.whl").unwrap();
        assert_eq!(
            (w.name.as_str(), w.version.as_str()),
            ("bitsandbytes", "0.45.5")
        );
        assert_eq!(
            w.variant("sm86"),
            "bitsandbytes-0.45.5-py3-none-manylinux_2_24_x86_64-sm86.whl"
        );
        assert_eq!(w.variants_json(), "bitsandbytes-0.45.5-variants.json");
        let b = WheelName::parse("Foo_Bar.baz-1.0-2-cp312-cp312-linux_x86_64.whl").unwrap();
        assert_eq!(b.project(), "foo-bar-baz");
        let v = WheelName::parse("a-1-py3-none-any-sm86.gfx90a.whl").unwrap();
        assert_eq!(
            (v.stem.as_str(), v.label.as_deref()),
            ("a-1-py3-none-any", Some("sm86.gfx90a"))
        );
        assert_eq!(v.variant("sm86"), "a-1-py3-none-any-sm86.whl");
        let v = WheelName::parse("a-1-2-py3-none-any-null.whl").unwrap();
        assert_eq!(v.label.as_deref(), Some("null"));
        assert_eq!(w.label, None);
        let e = WheelName::parse("a-1-py3-none-any-Sm86.whl").unwrap_err();
        assert!(e.contains("'Sm86'"), "{e}");
        assert!(
            WheelName::parse("a.tar.gz")
                .unwrap_err()
                .contains("a wheel's name ends in .whl")
        );
        assert!(WheelName::parse("a-1.whl").is_err());
    }

    #[test]
    fn index_pages_escape_and_encode() {
        let page = index_page(
            "Links for x",
            &[(
                url_path("x-1.0+cu12-py3-none-any.whl#sha256=ab"),
                "x<1>".into(),
            )],
        );
        let text = String::from_utf8(page).unwrap();
        assert!(
            text.contains("<a href=\"x-1.0%2Bcu12-py3-none-any.whl#sha256=ab\">x&lt;1&gt;</a>"),
            "{text}"
        );
        assert!(text.starts_with("<!DOCTYPE html>\n"));
    }
}
