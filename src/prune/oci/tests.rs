//! The walk of an image's layers ([`super::layer`]) on small tars built
//! here: whiteouts and opaque directories, a file removed above that
//! would come to light, hard links to a file removed or pruned, names
//! given by a pax header, and a layer over the decompression budget.

use std::io::{Read as _, Seek as _, SeekFrom};
use std::path::Path;

use super::layer::{self, Above, LayerCx, Method};
use crate::prune::path::{PathError, PathOptions, PathReport};
use crate::prune::{Ptx, Selection};

/// One entry of a layer built here.
#[derive(Clone)]
enum E<'a> {
    /// A regular file.
    File(&'a str, &'a [u8]),
    /// A hard link at the first path to the second.
    Link(&'a str, &'a str),
    /// A regular file whose name a pax `path` record gives, the header
    /// holding another name (`decoy/…`).
    Pax(&'a str, &'a [u8]),
}

/// A plain tar of `entries`.
fn tar_of(entries: &[E<'_>]) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for e in entries {
        let mut h = tar::Header::new_ustar();
        h.set_mode(0o644);
        match e {
            E::File(path, data) => {
                h.set_size(data.len() as u64);
                b.append_data(&mut h, path, *data).unwrap();
            }
            E::Link(path, to) => {
                h.set_entry_type(tar::EntryType::Link);
                h.set_size(0);
                b.append_link(&mut h, path, to).unwrap();
            }
            E::Pax(path, data) => {
                b.append_pax_extensions([("path", path.as_bytes())])
                    .unwrap();
                h.set_size(data.len() as u64);
                h.set_path("decoy/k.hipfb").unwrap();
                h.set_cksum();
                b.append(&h, *data).unwrap();
            }
        }
    }
    b.into_inner().unwrap()
}

/// What one layer's walk gave: whether it changed, the paths it removed,
/// and its new tar's entries (path, type, bytes or link target).
struct Layer {
    changed: bool,
    gone: Vec<String>,
    entries: Vec<(String, tar::EntryType, Vec<u8>)>,
}

impl Layer {
    fn get(&self, path: &str) -> Option<&(String, tar::EntryType, Vec<u8>)> {
        self.entries.iter().find(|e| e.0 == path)
    }
}

/// Walks the layers `tars` of one image, the top one first, keeping
/// gfx90a within `budget` bytes, as an image's rewrite does.
fn walk(tars: &[Vec<u8>], budget: u64) -> Result<Vec<Layer>, PathError> {
    walk_with(tars, budget, &PathOptions::default()).map(|(l, _)| l)
}

/// [`walk`] with the options `opts`, the report too.
fn walk_with(
    tars: &[Vec<u8>],
    mut budget: u64,
    opts: &PathOptions,
) -> Result<(Vec<Layer>, PathReport), PathError> {
    let sel: Selection = crate::prune::tests::keep(&["gfx90a"], Ptx::Newest);
    let meta = std::fs::metadata(std::env::temp_dir()).unwrap();
    let mut rep = PathReport::new("layout", &[], &meta);
    let mut above = Above::default();
    let mut out = Vec::new();
    for (i, tar) in tars.iter().enumerate() {
        let cx = LayerCx {
            sel: &sel,
            opts,
            input: Path::new("layout"),
            name: "layout".into(),
            place: format!("layers[{i}]"),
        };
        let scratch = Some((tempfile::tempfile().unwrap(), tempfile::tempfile().unwrap()));
        let r = layer::rewrite(
            &cx,
            &tar[..],
            None,
            Method::Plain,
            scratch,
            &mut above,
            &mut rep,
            &mut budget,
        )?;
        above.shadow.next_layer();
        let mut new = Vec::new();
        let mut f = r.tar.unwrap();
        f.seek(SeekFrom::Start(0)).unwrap();
        f.read_to_end(&mut new).unwrap();
        let mut entries = Vec::new();
        for e in tar::Archive::new(&new[..]).entries().unwrap() {
            let mut e = e.unwrap();
            let path = e.path().unwrap().to_string_lossy().into_owned();
            let kind = e.header().entry_type();
            let mut data = Vec::new();
            match kind {
                tar::EntryType::Link => {
                    let to = e.link_name().unwrap().unwrap();
                    data = to.to_string_lossy().into_owned().into_bytes();
                }
                _ => {
                    e.read_to_end(&mut data).unwrap();
                }
            }
            entries.push((path, kind, data));
        }
        out.push(Layer {
            changed: r.walked.changed,
            gone: r.walked.gone.into_iter().collect(),
            entries,
        });
    }
    Ok((out, rep))
}

/// A per-GPU file of rocBLAS for gfx906, which keeping gfx90a removes by
/// its name.
const GFX906: &str = "opt/rocblas/library/TensileLibrary_lazy_gfx906.dat";

#[test]
fn whiteouts_and_opaque_directories_hide_the_files_below() {
    let k = crate::prune::tests::hip_bundle();
    let upper = tar_of(&[
        E::File("usr/lib/.wh.k.hipfb", b""),
        E::File("etc/.wh..wh..opq", b""),
    ]);
    let lower = tar_of(&[
        E::File("usr/lib/k.hipfb", &k),
        E::File("etc/k.hipfb", &k),
        E::File("opt/k.hipfb", &k),
    ]);
    let l = walk(&[upper, lower], u64::MAX).unwrap();
    assert!(!l[0].changed);
    assert!(l[1].changed);
    // Hidden: copied as they are.
    assert_eq!(l[1].get("usr/lib/k.hipfb").unwrap().2, k);
    assert_eq!(l[1].get("etc/k.hipfb").unwrap().2, k);
    // Seen: pruned.
    let pruned = &l[1].get("opt/k.hipfb").unwrap().2;
    assert!(pruned.len() < k.len());
    assert!(l[1].gone.is_empty());
}

#[test]
fn a_file_removed_above_takes_the_copy_below_with_it() {
    let upper = tar_of(&[E::File(GFX906, &[1; 100])]);
    let lower = tar_of(&[E::File(GFX906, &[2; 100]), E::File("opt/notes", b"kept")]);
    let l = walk(&[upper, lower], u64::MAX).unwrap();
    assert!(l[0].changed && l[0].get(GFX906).is_none());
    // Hidden by the upper copy, which went: it would come to light.
    assert!(l[1].changed && l[1].get(GFX906).is_none());
    assert_eq!(l[1].gone, [GFX906]);
    assert_eq!(l[1].get("opt/notes").unwrap().2, b"kept");

    // A copy hidden by one that stays is left as it is.
    let k = crate::prune::tests::hip_bundle();
    let upper = tar_of(&[E::File("opt/k.hipfb", b"a text file now")]);
    let lower = tar_of(&[E::File("opt/k.hipfb", &k)]);
    let l = walk(&[upper, lower], u64::MAX).unwrap();
    assert!(!l[0].changed && !l[1].changed);
    assert_eq!(l[1].get("opt/k.hipfb").unwrap().2, k);
}

#[test]
fn hard_links_follow_the_file_they_name() {
    let k = crate::prune::tests::hip_bundle();
    let layer = tar_of(&[
        E::File(GFX906, &[1; 100]),
        E::Link("opt/alias.dat", GFX906),
        E::File("usr/lib/k.hipfb", &k),
        E::Link("usr/lib/k2.hipfb", "usr/lib/k.hipfb"),
    ]);
    let l = walk(&[layer], u64::MAX).unwrap();
    // The file removed: its link goes with it.
    assert_eq!(l[0].gone, ["opt/alias.dat", GFX906]);
    assert!(l[0].get("opt/alias.dat").is_none());
    // The file pruned: its link stays a link to it, and so sees it pruned.
    assert!(l[0].get("usr/lib/k.hipfb").unwrap().2.len() < k.len());
    let link = l[0].get("usr/lib/k2.hipfb").unwrap();
    assert_eq!(link.1, tar::EntryType::Link);
    assert_eq!(link.2, b"usr/lib/k.hipfb");
}

#[test]
fn a_name_from_a_pax_header_is_the_one_seen() {
    let k = crate::prune::tests::hip_bundle();
    let dir = format!("opt/{}", "d".repeat(120));
    let long = format!("{dir}/k.hipfb");
    // Alone, the file at the long name is pruned, and keeps its name.
    let l = walk(&[tar_of(&[E::Pax(&long, &k)])], u64::MAX).unwrap();
    assert!(l[0].changed);
    assert!(l[0].get(&long).unwrap().2.len() < k.len());
    // Whited out at the long name (not at the header's), it is hidden.
    let wh = format!("{dir}/.wh.k.hipfb");
    let upper = tar_of(&[E::Pax(&wh, b"")]);
    let l = walk(&[upper, tar_of(&[E::Pax(&long, &k)])], u64::MAX).unwrap();
    assert!(!l[1].changed);
    assert_eq!(l[1].get(&long).unwrap().2, k);
    // Whited out at the header's name only: the file is seen, and pruned.
    let upper = tar_of(&[E::File("decoy/.wh.k.hipfb", b"")]);
    let l = walk(&[upper, tar_of(&[E::Pax(&long, &k)])], u64::MAX).unwrap();
    assert!(l[1].changed);
}

#[test]
fn a_layer_over_the_budget_is_refused_by_name() {
    let k = crate::prune::tests::hip_bundle();
    let layer = tar_of(&[E::File("usr/lib/k.hipfb", &k)]);
    let Err(e) = walk(std::slice::from_ref(&layer), 4096) else {
        panic!("a layer over the budget was walked");
    };
    let said = e.to_string();
    assert!(
        said.contains("layers[0]") && said.contains("budget"),
        "{said}"
    );
    // A file whose header says more bytes than the layer holds.
    let cut = &layer[..layer.len() - 2048];
    let cut = cut[..cut.len() - k.len() / 2].to_vec();
    let Err(e) = walk(&[cut], u64::MAX) else {
        panic!("a layer cut short was walked");
    };
    let said = e.to_string();
    assert!(
        said.contains("usr/lib/k.hipfb") && said.contains("fewer than"),
        "{said}"
    );
}

/// A pip RECORD row for a file of `bytes` at `path`.
fn row(path: &str, bytes: &[u8]) -> String {
    use base64::Engine as _;
    use sha2::Digest as _;
    let sha = sha2::Sha256::digest(bytes);
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha);
    format!("{path},sha256={b64},{}\n", bytes.len())
}

/// Whether every row of the RECORD at `record` in `layers` (the topmost
/// copy) is true of the topmost copy of its file, and how many rows it has.
fn rows_true(layers: &[Layer], record: &str) -> (bool, usize) {
    let find = |p: &str| layers.iter().find_map(|l| l.get(p)).map(|e| e.2.clone());
    let text = String::from_utf8(find(record).unwrap()).unwrap();
    let base = "site";
    let mut n = 0;
    for line in text.lines() {
        let path = line.split(',').next().unwrap();
        let file = match path.strip_prefix("../") {
            Some(up) => up.to_string(),
            None => format!("{base}/{path}"),
        };
        let Some(bytes) = find(&file) else {
            return (false, n);
        };
        if row(path, &bytes).trim_end() != line {
            return (false, n);
        }
        n += 1;
    }
    (true, n)
}

const RECORD: &str = "site/k-1.0.dist-info/RECORD";

#[test]
fn a_layers_records_stay_true_whichever_comes_first() {
    let k = crate::prune::tests::hip_bundle();
    let text = format!(
        "{}{}{}",
        row("k/k.hipfb", &k),
        row(&format!("../{GFX906}"), &[1; 100]),
        row("k/notes", b"kept")
    );
    let files = [
        E::File("site/k/k.hipfb", &k),
        E::File(GFX906, &[1; 100]),
        E::File("site/k/notes", b"kept"),
    ];
    let record = [E::File(RECORD, text.as_bytes())];
    for layer in [
        tar_of(&[&record[..], &files[..]].concat()),
        tar_of(&[&files[..], &record[..]].concat()),
    ] {
        let l = walk(&[layer], u64::MAX).unwrap();
        assert!(l[0].get("site/k/k.hipfb").unwrap().2.len() < k.len());
        // The removed file's row went, the pruned one's is true.
        assert_eq!(rows_true(&l, RECORD), (true, 2));
    }
}

#[test]
fn a_record_below_follows_a_file_changed_above_and_above_is_refused() {
    let k = crate::prune::tests::hip_bundle();
    let upper = tar_of(&[E::File("site/k/k.hipfb", &k)]);
    let text = row("k/k.hipfb", &k);
    let lower = tar_of(&[
        E::File(RECORD, text.as_bytes()),
        E::File("site/k/k.hipfb", b"old"),
    ]);
    let l = walk(&[upper.clone(), lower], u64::MAX).unwrap();
    assert!(l[1].changed);
    assert_eq!(rows_true(&l, RECORD), (true, 1));
    // The record above the file it names: refused, not left wrong.
    let record_only = tar_of(&[E::File(RECORD, text.as_bytes())]);
    let Err(e) = walk(&[record_only, upper], u64::MAX) else {
        panic!("a record above its file was left wrong");
    };
    assert!(e.to_string().contains("lies in a layer above"), "{e}");
}

#[test]
fn a_wrong_row_refuses_the_image_unless_the_bytes_are_trusted() {
    let k = crate::prune::tests::hip_bundle();
    // The row of another file's bytes.
    let text = row("k/k.hipfb", &k[1..]);
    let layer = tar_of(&[
        E::File(RECORD, text.as_bytes()),
        E::File("site/k/k.hipfb", &k),
    ]);
    let Err(e) = walk(std::slice::from_ref(&layer), u64::MAX) else {
        panic!("a wrong row was laundered");
    };
    let said = e.to_string();
    assert!(
        said.contains("the 'hash' of 'k/k.hipfb'") && said.contains("RECORD"),
        "{said}"
    );
    let opts = PathOptions {
        trust_bytes: true,
        ..PathOptions::default()
    };
    let (l, rep) = walk_with(&[layer], u64::MAX, &opts).unwrap();
    assert_eq!(rows_true(&l, RECORD), (true, 1));
    assert_eq!(rep.records_wrong.len(), 1, "{:?}", rep.records_wrong);
}

#[test]
fn a_conda_record_in_a_layer_stays_true() {
    use sha2::Digest as _;
    let k = crate::prune::tests::hip_bundle();
    let hex = |b: &[u8]| crate::package::records::hex(&sha2::Sha256::digest(b));
    let gone = "lib/rocblas/library/TensileLibrary_lazy_gfx906.dat";
    let doc = serde_json::json!({"files": ["lib/k.hipfb", gone],
        "paths_data": {"paths": [
            {"_path": "lib/k.hipfb", "sha256": hex(&k), "size_in_bytes": k.len()},
            {"_path": gone, "sha256": hex(&[1; 100]),
             "size_in_bytes": 100}]}});
    let text = serde_json::to_vec(&doc).unwrap();
    let layer = tar_of(&[
        E::File("env/lib/k.hipfb", &k),
        E::File("env/conda-meta/k-1.0-0.json", &text),
        E::File(&format!("env/{gone}"), &[1; 100]),
    ]);
    let l = walk(&[layer], u64::MAX).unwrap();
    let new = &l[0].get("env/lib/k.hipfb").unwrap().2;
    assert!(new.len() < k.len());
    let doc: serde_json::Value =
        serde_json::from_slice(&l[0].get("env/conda-meta/k-1.0-0.json").unwrap().2).unwrap();
    assert_eq!(doc["files"], serde_json::json!(["lib/k.hipfb"]));
    let rows = doc["paths_data"]["paths"].as_array().unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(rows[0]["sha256"], hex(new));
    assert_eq!(rows[0]["size_in_bytes"], new.len());
}
