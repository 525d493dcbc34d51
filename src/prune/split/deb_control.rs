//! The control fields of a split `.deb`'s outputs: each output is the
//! binary package `<package>-<label>` that stands in for the original
//! (`deb-control(5)`, Debian policy §7.5 and §7.6): it `Provides` the
//! original name at the original version, so that a package depending on
//! the original (even with a version) installs against it, and it
//! `Conflicts` with and `Replaces` the original name (which every sibling
//! provides, so any two siblings conflict: dpkg ignores a package's
//! conflict with what it provides itself) and each sibling by name (the
//! same paths are in each). A package without a `Source` field gets the
//! original name as its source, which it was.

/// The fields of the original package a split needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Original {
    /// `Package`.
    pub(super) package: String,
    /// `Version`, epoch and all.
    pub(super) version: String,
    /// `Architecture`.
    pub(super) arch: String,
    /// Whether it has a `Source` field.
    pub(super) has_source: bool,
    /// Where the package is an output of a split already (`P-LABEL`,
    /// providing `P (= VERSION)` and conflicting with `P`): its own name,
    /// and the siblings it conflicts with. `package` is then `P`, the
    /// original's name, so that a split of it again names its outputs as
    /// the first split did.
    pub(super) split: Option<Split>,
}

/// What an output of an earlier split says of itself.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Split {
    /// Its name, `P-LABEL`.
    pub(super) name: String,
    /// The other outputs it conflicts with, in order.
    pub(super) siblings: Vec<String>,
}

impl Original {
    /// The fields of the `control` text `text`; why when one is missing or
    /// not what dpkg takes.
    pub(super) fn read(text: &[u8]) -> Result<Original, String> {
        let fields = parse(text);
        let get = |name: &str| -> Result<String, String> {
            let v = fields
                .iter()
                .find(|f| f.name.eq_ignore_ascii_case(name))
                .map(|f| f.value().trim().to_string())
                .filter(|v| !v.is_empty() && !v.contains(char::is_whitespace));
            v.ok_or_else(|| format!("its control file has no single-word '{name}' field"))
        };
        let mut o = Original {
            package: get("Package")?,
            version: get("Version")?,
            arch: get("Architecture")?,
            has_source: fields.iter().any(|f| f.name.eq_ignore_ascii_case("Source")),
            split: None,
        };
        if !is_package_name(&o.package) {
            return Err(format!(
                "its package name '{}' is not one dpkg takes ([a-z0-9][a-z0-9+.-]+)",
                o.package
            ));
        }
        let list = |name: &str| -> Vec<String> {
            let f = fields.iter().find(|f| f.name.eq_ignore_ascii_case(name));
            f.map(|f| f.value().split(',').map(|e| e.trim().to_string()).collect())
                .unwrap_or_default()
        };
        let conflicts = list("Conflicts");
        let base = list("Provides").into_iter().find_map(|p| {
            let base = p.strip_suffix(&format!(" (= {})", o.version))?.to_string();
            let label = o.package.strip_prefix(&format!("{base}-"))?;
            let ours = !label.is_empty() && is_package_name(&base) && conflicts.contains(&base);
            ours.then_some(base)
        });
        if let Some(base) = base {
            let siblings = conflicts
                .iter()
                .filter(|c| c.starts_with(&format!("{base}-")) && **c != o.package)
                .cloned()
                .collect();
            let name = std::mem::replace(&mut o.package, base);
            o.split = Some(Split { name, siblings });
        }
        Ok(o)
    }

    /// The control text `text` of the package, without what an earlier
    /// split gave it (the `Provides` of the original's name, the
    /// `Conflicts` and `Replaces` of it and its siblings), so that a
    /// split of it again adds them as the first did; `text` itself for a
    /// package no split made.
    pub(super) fn undone<'t>(&self, text: &'t [u8]) -> std::borrow::Cow<'t, [u8]> {
        if self.split.is_none() {
            return text.into();
        }
        let provided = format!("{} (= {})", self.package, self.version);
        let sibling = format!("{}-", self.package);
        let mut out = Vec::new();
        for f in parse(text) {
            let cut = match f.name.to_ascii_lowercase().as_str() {
                "provides" => cut(&f.lines, &provided, |_| false),
                "conflicts" | "replaces" => {
                    cut(&f.lines, &self.package, |e| e.starts_with(&sibling))
                }
                _ => None,
            };
            match cut {
                Some(lines) => out.extend_from_slice(&lines),
                None => out.extend_from_slice(&f.lines),
            }
        }
        out.into()
    }

    /// The name of the output labelled `label`.
    pub(super) fn output(&self, label: &str) -> String {
        format!("{}-{label}", self.package)
    }

    /// The file name of the package `name` (the version without its
    /// epoch, as `dpkg-name` names files).
    pub(super) fn file_name(&self, name: &str) -> String {
        let version = self
            .version
            .split_once(':')
            .map_or(self.version.as_str(), |(_, v)| v);
        format!("{name}_{version}_{}.deb", self.arch)
    }
}

/// Whether `name` is a package name dpkg takes: lowercase letters and
/// digits, `+`, `-`, `.`, at least two, the first a letter or digit.
pub(super) fn is_package_name(name: &str) -> bool {
    let b = name.as_bytes();
    b.len() >= 2
        && b[0].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| matches!(c, b'a'..=b'z' | b'0'..=b'9' | b'+' | b'-' | b'.'))
}

/// One field of a control paragraph: its name and its lines as written
/// (the first with the name, then any continuation lines).
struct Field {
    name: String,
    lines: Vec<u8>,
}

impl Field {
    /// Its value, continuation lines and all.
    fn value(&self) -> String {
        let text = String::from_utf8_lossy(&self.lines);
        let after = text.split_once(':').map_or("", |(_, v)| v);
        after.to_string()
    }
}

/// The fields of a control paragraph, in order; text before the first
/// field (none in a well-formed file) is a field with no name.
fn parse(text: &[u8]) -> Vec<Field> {
    let mut out: Vec<Field> = Vec::new();
    for line in text.split_inclusive(|&b| b == b'\n') {
        let continued = matches!(line.first(), Some(b' ' | b'\t'));
        match out.last_mut() {
            Some(f) if continued => f.lines.extend_from_slice(line),
            _ => {
                let name = line
                    .iter()
                    .position(|&b| b == b':')
                    .map(|c| String::from_utf8_lossy(&line[..c]).trim().to_string())
                    .unwrap_or_default();
                out.push(Field {
                    name,
                    lines: line.to_vec(),
                });
            }
        }
    }
    out
}

/// The field `lines` without the entries a split appended to it: the
/// first entry `first` whose every later entry is one `more` takes, and
/// those (the bytes before its comma, ended by a line feed, as the field
/// was before; nothing where `first` is the field's first entry). `None`
/// where the field ends in no such entries.
fn cut(lines: &[u8], first: &str, more: impl Fn(&str) -> bool) -> Option<Vec<u8>> {
    let text = std::str::from_utf8(lines).ok()?;
    let colon = text.find(':')?;
    let mut starts = vec![colon + 1];
    starts.extend(
        text.match_indices(',')
            .map(|(i, _)| i + 1)
            .filter(|&i| i > colon),
    );
    let entry = |k: usize| {
        let end = starts.get(k + 1).map_or(text.len(), |&e| e - 1);
        text[starts[k]..end].trim()
    };
    let k = (0..starts.len())
        .find(|&k| entry(k) == first && (k + 1..starts.len()).all(|j| more(entry(j))))?;
    if k == 0 {
        return Some(Vec::new());
    }
    let mut kept = text[..starts[k] - 1].trim_end().as_bytes().to_vec();
    kept.push(b'\n');
    Some(kept)
}

/// The control fields an output adds or changes, each name and the
/// value it adds (the report shows them): `Package`, `Source` where the
/// original has none, `Provides`, `Conflicts`, `Replaces`.
pub(super) fn added(o: &Original, name: &str, siblings: &[String]) -> Vec<(String, String)> {
    let mut others = vec![o.package.clone()];
    others.extend(siblings.iter().filter(|s| *s != name).cloned());
    // A package split again still conflicts with its earlier siblings
    // (they hold the same paths), and with itself under its old name.
    if let Some(s) = &o.split {
        for n in s.siblings.iter().chain([&s.name]) {
            if n != name && !others.contains(n) {
                others.push(n.clone());
            }
        }
    }
    let mut out = vec![("Package".into(), name.to_string())];
    if !o.has_source {
        out.push(("Source".into(), o.package.clone()));
    }
    out.extend([
        (
            "Provides".into(),
            format!("{} (= {})", o.package, o.version),
        ),
        ("Conflicts".into(), others.join(", ")),
        ("Replaces".into(), others.join(", ")),
    ]);
    out
}

/// The `control` text `text` of the original with the fields `added`
/// gives: `Package` replaced, `Source` added (where there was none),
/// `Provides`, `Conflicts` and `Replaces` appended
/// to the fields of those names (or added before `Description`, or last).
pub(super) fn edit(text: &[u8], added: &[(String, String)]) -> Vec<u8> {
    let mut fields = parse(text);
    let mut new: Vec<Field> = Vec::new();
    for (name, value) in added {
        let at = fields
            .iter()
            .position(|f| f.name.eq_ignore_ascii_case(name));
        match (name.as_str(), at) {
            ("Package", Some(i)) => fields[i].lines = format!("{name}: {value}\n").into_bytes(),
            (_, Some(i)) => {
                let f = &mut fields[i];
                let ends = f.lines.ends_with(b"\n");
                if ends {
                    f.lines.pop();
                }
                let trimmed = f.lines.trim_ascii_end().len();
                f.lines.truncate(trimmed);
                f.lines.extend_from_slice(format!(", {value}").as_bytes());
                f.lines.push(b'\n');
            }
            (_, None) => new.push(Field {
                name: name.clone(),
                lines: format!("{name}: {value}\n").into_bytes(),
            }),
        }
    }
    // A file that does not end its last line gets one end.
    if let Some(last) = fields.last_mut()
        && !last.lines.ends_with(b"\n")
    {
        last.lines.push(b'\n');
    }
    let source = new.iter().position(|f| f.name == "Source");
    let package = fields
        .iter()
        .position(|f| f.name.eq_ignore_ascii_case("Package"));
    if let (Some(s), Some(p)) = (source, package) {
        fields.insert(p + 1, new.remove(s));
    }
    let at = fields
        .iter()
        .position(|f| f.name.eq_ignore_ascii_case("Description"))
        .unwrap_or(fields.len());
    fields.splice(at..at, new);
    fields.into_iter().flat_map(|f| f.lines).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONTROL: &str = "Package: librocrand1\nSource: rocrand\nVersion: 1:5.3.3-4\n\
        Architecture: amd64\nMulti-Arch: same\nDepends: libc6 (>= 2.14),\n libamdhip64-5\n\
        Provides: librocrand\nInstalled-Size: 24824\nDescription: x\n y\n";

    fn original() -> Original {
        Original::read(CONTROL.as_bytes()).unwrap()
    }

    #[test]
    fn the_original_fields_and_the_file_name_without_epoch() {
        let o = original();
        assert_eq!(
            (o.package.as_str(), o.version.as_str(), o.arch.as_str()),
            ("librocrand1", "1:5.3.3-4", "amd64")
        );
        let name = o.output("gfx90a");
        assert_eq!(o.file_name(&name), "librocrand1-gfx90a_5.3.3-4_amd64.deb");
        let e = Original::read(b"Package: Big\nVersion: 1\nArchitecture: all\n").unwrap_err();
        assert!(e.contains("'Big'"), "{e}");
        let e = Original::read(b"Package: a1\nArchitecture: all\n").unwrap_err();
        assert!(e.contains("'Version'"), "{e}");
    }

    #[test]
    fn an_output_provides_the_original_and_conflicts_with_it_and_its_siblings() {
        let o = original();
        let siblings = [
            "librocrand1-gfx90a".to_string(),
            "librocrand1-gfx942".into(),
        ];
        let add = added(&o, &siblings[0], &siblings);
        let text = String::from_utf8(edit(CONTROL.as_bytes(), &add)).unwrap();
        let want = "Package: librocrand1-gfx90a\nSource: rocrand\nVersion: 1:5.3.3-4\n\
            Architecture: amd64\nMulti-Arch: same\nDepends: libc6 (>= 2.14),\n libamdhip64-5\n\
            Provides: librocrand, librocrand1 (= 1:5.3.3-4)\nInstalled-Size: 24824\n\
            Conflicts: librocrand1, librocrand1-gfx942\n\
            Replaces: librocrand1, librocrand1-gfx942\nDescription: x\n y\n";
        assert_eq!(text, want);
    }

    #[test]
    fn an_output_split_again_for_its_own_group_keeps_its_control_file() {
        let names = [
            "librocrand1-gfx90a".to_string(),
            "librocrand1-gfx942".into(),
        ];
        for text in [
            CONTROL,
            "Package: librocrand1\nVersion: 1:5.3.3-4\nArchitecture: amd64\n",
        ] {
            let o = Original::read(text.as_bytes()).unwrap();
            let first = edit(text.as_bytes(), &added(&o, &names[0], &names));
            let again = Original::read(&first).unwrap();
            assert_eq!(again.package, "librocrand1");
            let split = again.split.clone().unwrap();
            assert_eq!(
                (split.name.as_str(), &split.siblings[..]),
                ("librocrand1-gfx90a", &names[1..])
            );
            // Its own group alone: the same text, siblings and all.
            let one = [names[0].clone()];
            let redo = edit(&again.undone(&first), &added(&again, &one[0], &one));
            assert_eq!(
                String::from_utf8(redo).unwrap(),
                String::from_utf8(first.clone()).unwrap()
            );
            // Another label: the original's name provided once, the old
            // name among the conflicts.
            let other = ["librocrand1-gfx90a-xnackp".to_string()];
            let redo = edit(&again.undone(&first), &added(&again, &other[0], &other));
            let t = String::from_utf8(redo).unwrap();
            assert_eq!(t.matches("librocrand1 (= 1:5.3.3-4)").count(), 1, "{t}");
            assert!(
                t.contains("Conflicts: librocrand1, librocrand1-gfx942, librocrand1-gfx90a\n"),
                "{t}"
            );
        }
        // A package that only provides a name of the same form is no output.
        let plain = "Package: a1-x\nVersion: 2\nArchitecture: all\nProvides: a1 (= 2)\n";
        assert_eq!(Original::read(plain.as_bytes()).unwrap().split, None);
    }

    #[test]
    fn a_package_without_source_names_the_original_as_its_source() {
        let o = Original::read(b"Package: a1\nVersion: 2\nArchitecture: all").unwrap();
        let add = added(&o, "a1-sm86", &["a1-sm86".to_string()]);
        let text = String::from_utf8(edit(b"Package: a1\nVersion: 2\nArchitecture: all", &add));
        assert_eq!(
            text.unwrap(),
            "Package: a1-sm86\nSource: a1\nVersion: 2\nArchitecture: all\n\
             Provides: a1 (= 2)\nConflicts: a1\nReplaces: a1\n"
        );
    }

    #[test]
    fn package_names_keep_to_what_dpkg_takes() {
        assert!(is_package_name("librocrand1-gfx90a.gfx942"));
        assert!(is_package_name("g++-13"));
        for bad in ["a", "-a", "A1", "a_b", "a b"] {
            assert!(!is_package_name(bad), "{bad}");
        }
    }
}
