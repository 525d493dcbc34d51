//! The `.deb` rewrite seam on packages built here: one read feeding two
//! outputs, each with its `md5sums` exact, and a row that lies handed to
//! the caller, never rewritten.

use std::io::Read as _;
use std::sync::Arc;

use md5::Digest as _;

use super::md5sums::hex;
use super::{Deb, Decide, Member, Package, Sink, rewrite};
use crate::package::records::Wrong;
use crate::package::{Fate, Held, New};

impl Sink for Vec<u8> {}

/// The regular files of the package (paths as `md5sums` gives them): two
/// the decider reads (`DEV`), one it does not, and one another GPU's.
fn files() -> Vec<(&'static str, Vec<u8>)> {
    let body = |tag: &[u8], n: usize| {
        let mut b = tag.to_vec();
        b.resize(n, b'.');
        b
    };
    vec![
        ("usr/lib/one.so", body(b"DEV one", 3000)),
        ("usr/lib/two.so", body(b"DEV two", 100)),
        ("usr/share/doc/notes", body(b"plain text", 700)),
        ("usr/lib/gfx906/k.co", body(b"per-GPU", 2100)),
    ]
}

/// The data archive: a directory, the [`files`], and a hard link to the
/// first (`usr/lib/one-link.so`).
fn data_tar() -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    let head = |kind: tar::EntryType, size: u64| {
        let mut h = tar::Header::new_gnu();
        h.set_entry_type(kind);
        h.set_mode(0o644);
        h.set_size(size);
        h.set_mtime(1_685_290_000);
        h
    };
    let mut h = head(tar::EntryType::Directory, 0);
    b.append_data(&mut h, "./usr/lib/", &[][..]).unwrap();
    for (path, bytes) in files() {
        let mut h = head(tar::EntryType::Regular, bytes.len() as u64);
        b.append_data(&mut h, format!("./{path}"), &bytes[..])
            .unwrap();
    }
    let mut h = head(tar::EntryType::Link, 0);
    b.append_link(&mut h, "./usr/lib/one-link.so", "./usr/lib/one.so")
        .unwrap();
    b.into_inner().unwrap()
}

fn md5_of(b: &[u8]) -> String {
    hex(&md5::Md5::digest(b).into())
}

/// The `md5sums` of [`files`] and the hard link, the row of `lie` (if
/// any) giving another MD5.
fn md5sums(lie: Option<&str>) -> String {
    let mut text = String::new();
    for (path, bytes) in files() {
        let md5 = match Some(path) == lie {
            true => "0".repeat(32),
            false => md5_of(&bytes),
        };
        text += &format!("{md5}  {path}\n");
        if path == "usr/lib/one.so" {
            text += &format!("{}  usr/lib/one-link.so\n", md5_of(&bytes));
        }
    }
    text
}

/// A tar archive of `files`, each with a GNU header.
fn tar_of(files: &[(&str, &str)]) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for (name, text) in files {
        let mut h = tar::Header::new_gnu();
        h.set_mode(0o644);
        h.set_size(text.len() as u64);
        h.set_mtime(1_685_290_000);
        b.append_data(&mut h, name, text.as_bytes()).unwrap();
    }
    b.into_inner().unwrap()
}

/// An `ar` archive of `members`, as `dpkg-deb` writes one.
fn ar_of(members: &[(&str, &[u8])]) -> Vec<u8> {
    let mut out = b"!<arch>\n".to_vec();
    for (name, bytes) in members {
        let header = format!(
            "{name:<16}{:<12}{:<6}{:<6}{:<8}{:<10}`\n",
            1_685_290_000,
            0,
            0,
            "100644",
            bytes.len()
        );
        out.extend_from_slice(header.as_bytes());
        out.extend_from_slice(bytes);
        if bytes.len() % 2 == 1 {
            out.push(b'\n');
        }
    }
    out
}

/// The package, its `md5sums` row of `lie` lying.
fn deb(lie: Option<&str>) -> Vec<u8> {
    let sums = md5sums(lie);
    let control = "Package: k\nVersion: 1\nInstalled-Size: 10\n";
    let control = tar_of(&[("./control", control), ("./md5sums", &sums)]);
    ar_of(&[
        ("debian-binary", b"2.0\n"),
        ("control.tar", &control),
        ("data.tar", &data_tar()),
    ])
}

/// Decides for two outputs: `one.so` replaced in the first and left out
/// of the second, `two.so` kept in the first and replaced in the second,
/// the per-GPU file left out of the second by its path; the rows that
/// lie noted.
#[derive(Default)]
struct Two {
    wrong: Vec<(String, String, String)>,
    /// The paths read whole.
    read: Vec<String>,
}

impl Decide<Deb> for Two {
    type Bytes = Vec<u8>;
    type Error = String;
    const REACH: usize = 8;

    fn outputs(&self) -> usize {
        2
    }

    fn by_name(&mut self, m: &Member<'_>) -> Result<Option<Vec<Fate>>, String> {
        Ok(m.header
            .path
            .starts_with(b"usr/lib/gfx906/")
            .then(|| vec![Fate::Kept, Fate::Removed]))
    }

    fn wants(&self, _: &Member<'_>, head: &[u8]) -> bool {
        head.starts_with(b"DEV")
    }

    fn sparse(&mut self, _: &Member<'_>, _: &[u8]) -> Result<(), String> {
        Ok(())
    }

    fn inflate(
        &mut self,
        _: &Member<'_>,
        head: &[u8],
        r: &mut dyn std::io::Read,
    ) -> Result<Vec<u8>, String> {
        let mut v = head.to_vec();
        r.read_to_end(&mut v).map_err(|e| e.to_string())?;
        Ok(v)
    }

    fn decide(
        &mut self,
        m: &Member<'_>,
        _: Held<'_, Vec<u8>>,
    ) -> Result<Option<Vec<Fate>>, String> {
        let new = |b: &[u8]| Fate::Replaced(Arc::new(New::bytes(b.to_vec())));
        self.read.push(m.header.path_lossy());
        Ok(match m.header.path.as_slice() {
            b"usr/lib/one.so" => Some(vec![new(b"one, pruned"), Fate::Removed]),
            b"usr/lib/two.so" => Some(vec![Fate::Kept, new(b"two, pruned for the second")]),
            _ => None,
        })
    }

    fn wrong(&mut self, w: &Wrong<'_>) -> Result<(), String> {
        self.wrong
            .push((w.path.to_string(), w.said.clone(), w.is.clone()));
        Ok(())
    }
}

/// The members of the `ar` archive `deb`, by name.
fn members(deb: &[u8]) -> Vec<(String, Vec<u8>)> {
    crate::host::ar::entries(deb)
        .unwrap()
        .iter()
        .map(|e| {
            let start = usize::try_from(e.data).unwrap();
            let end = start + usize::try_from(e.size).unwrap();
            let name = String::from_utf8_lossy(e.name.strip_suffix(b"/").unwrap_or(e.name));
            (name.into_owned(), deb[start..end].to_vec())
        })
        .collect()
}

/// The regular files and hard links of the tar archive `t`: path and
/// bytes (a hard link's: those of the file it names).
fn tar_files(t: &[u8]) -> Vec<(String, Vec<u8>)> {
    let mut out: Vec<(String, Vec<u8>)> = Vec::new();
    for e in tar::Archive::new(t).entries().unwrap() {
        let mut e = e.unwrap();
        let path = e.path().unwrap().to_string_lossy().into_owned();
        let path = path.trim_start_matches("./").to_string();
        let bytes = match e.header().entry_type() {
            tar::EntryType::Regular => {
                let mut b = Vec::new();
                e.read_to_end(&mut b).unwrap();
                b
            }
            tar::EntryType::Link => {
                let target = e.link_name().unwrap().unwrap();
                let target = target.to_string_lossy();
                let target = target.trim_start_matches("./");
                out.iter().find(|(p, _)| p == target).unwrap().1.clone()
            }
            _ => continue,
        };
        out.push((path, bytes));
    }
    out
}

/// The file `name` of the tar archive `t`, as text.
fn text_of(t: &[u8], name: &str) -> String {
    let (_, b) = tar_files(t).into_iter().find(|(p, _)| p == name).unwrap();
    String::from_utf8(b).unwrap()
}

/// Reads `deb` once for [`Two`] and writes both outputs.
fn both(deb: &[u8]) -> (Two, [Vec<u8>; 2]) {
    let p = Package::open(deb, u64::MAX).unwrap();
    let mut two = Two::default();
    let scratch = vec![
        Some(tempfile::tempfile().unwrap()),
        Some(tempfile::tempfile().unwrap()),
    ];
    let mut limit = u64::MAX;
    let mut plan = rewrite(&p, &mut limit, &mut two, scratch, 1).unwrap();
    assert!(!plan.unchanged(0) && !plan.unchanged(1));
    let mut outs = [Vec::new(), Vec::new()];
    for (k, out) in outs.iter_mut().enumerate() {
        plan.write(&p, k, &mut limit, out).unwrap();
    }
    (two, outs)
}

#[test]
fn one_read_writes_two_packages_each_with_its_md5sums_exact() {
    let (two, outs) = both(&deb(None));
    // Each file read once, for both outputs; no row lies.
    assert_eq!(two.read, ["usr/lib/one.so", "usr/lib/two.so"]);
    assert!(two.wrong.is_empty(), "{:?}", two.wrong);
    let old = files();
    let want: [Vec<(&str, Vec<u8>)>; 2] = [
        vec![
            ("usr/lib/one.so", b"one, pruned".to_vec()),
            ("usr/lib/two.so", old[1].1.clone()),
            ("usr/share/doc/notes", old[2].1.clone()),
            ("usr/lib/gfx906/k.co", old[3].1.clone()),
            ("usr/lib/one-link.so", b"one, pruned".to_vec()),
        ],
        vec![
            ("usr/lib/two.so", b"two, pruned for the second".to_vec()),
            ("usr/share/doc/notes", old[2].1.clone()),
        ],
    ];
    for (out, want) in outs.iter().zip(want) {
        let m = members(out);
        let names: Vec<&str> = m.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["debian-binary", "control.tar", "data.tar"]);
        let got = tar_files(&m[2].1);
        let want: Vec<(String, Vec<u8>)> =
            want.into_iter().map(|(p, b)| (p.to_string(), b)).collect();
        assert_eq!(got, want);
        // md5sums: a row for each file there, in the old order, each the
        // MD5 of the bytes written; none for a file left out.
        let sums = text_of(&m[1].1, "md5sums");
        let order = ["usr/lib/one.so", "usr/lib/one-link.so"];
        let order = order
            .iter()
            .chain(["usr/lib/two.so", "usr/share/doc/notes"].iter());
        let order = order.chain(["usr/lib/gfx906/k.co"].iter());
        let exact: String = order
            .filter_map(|p| got.iter().find(|(q, _)| q == p))
            .map(|(p, b)| format!("{}  {p}\n", md5_of(b)))
            .collect();
        assert_eq!(sums, exact);
    }
    // Installed-Size: the second output no longer takes one.so's 3 KiB
    // nor the per-GPU file's 3; the first, one.so's 2 of 3.
    let control = |out: &[u8]| text_of(&members(out)[1].1, "control");
    assert!(control(&outs[0]).contains("Installed-Size: 8\n"));
    assert!(control(&outs[1]).contains("Installed-Size: 4\n"));
}

#[test]
fn a_row_that_lies_goes_to_the_caller_and_stays_as_it_was() {
    for lie in ["usr/lib/two.so", "usr/share/doc/notes"] {
        let (two, outs) = both(&deb(Some(lie)));
        let real = &files().into_iter().find(|(p, _)| *p == lie).unwrap().1;
        assert_eq!(
            two.wrong,
            [(lie.to_string(), "0".repeat(32), md5_of(real))],
            "{lie}"
        );
        // The first output keeps the file as it was, and its row with it:
        // the row is not made to match the bytes.
        let sums = text_of(&members(&outs[0])[1].1, "md5sums");
        assert!(
            sums.contains(&format!("{}  {lie}\n", "0".repeat(32))),
            "{sums}"
        );
        assert!(!sums.contains(&md5_of(real)), "{sums}");
    }
}
