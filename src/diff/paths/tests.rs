use super::*;

fn source(path: &str, in_dir: bool) -> Source {
    Source {
        path: PathBuf::from(path),
        error: None,
        in_dir,
        layout: false,
    }
}

fn unit(path: &str) -> Scanned {
    Scanned {
        path: path.into(),
        size: 0,
        found: true,
        result: Ok(Report::default()),
        kernels: Vec::new(),
    }
}

/// The key of `unit`, of the input `src` alone on its side below `root`.
fn relative_key(root: &Path, src: &Source, unit: &str) -> String {
    let [keys, _] = source_keys([&[below(root, src)], &[]]);
    unit_key(&keys[0], src, unit)
}

#[test]
fn keys_are_paths_below_the_roots() {
    let file = source("build/v1.so", false);
    assert_eq!(
        relative_key(Path::new("build/v1.so"), &file, "build/v1.so"),
        ""
    );
    let wheel = source("old.whl", false);
    assert_eq!(
        relative_key(Path::new("old.whl"), &wheel, "old.whl!/torch/lib/a.so"),
        "torch/lib/a.so"
    );
    let walked = source("old/lib/a.so", true);
    assert_eq!(
        relative_key(Path::new("old"), &walked, "old/lib/a.so"),
        "lib/a.so"
    );
    assert_eq!(
        relative_key(Path::new("old/"), &walked, "old/lib/a.so"),
        "lib/a.so"
    );
    // A directory named like a package member is still a directory.
    let odd = source("old/x!/a.so", true);
    assert_eq!(
        relative_key(Path::new("old"), &odd, "old/x!/a.so"),
        "x!/a.so"
    );
    let in_dir_pkg = source("old/p.whl", true);
    assert_eq!(
        relative_key(Path::new("old"), &in_dir_pkg, "old/p.whl!/lib/b.so"),
        "p.whl!/lib/b.so"
    );
    let in_dir_wheel = source("old/dist/Pkg.Name-1.0-py3-none-any.whl", true);
    assert_eq!(
        relative_key(
            Path::new("old"),
            &in_dir_wheel,
            "old/dist/Pkg.Name-1.0-py3-none-any.whl!/lib/b.so"
        ),
        "dist/pkg_name-*.whl!/lib/b.so"
    );
}

fn keys(old: &[&str], new: &[&str]) -> [Vec<String>; 2] {
    let own = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    source_keys([&own(old), &own(new)])
}

#[test]
fn wheels_and_debs_pair_by_name_across_versions() {
    let [o, n] = keys(
        &[
            "dist/pkg-1.0-py3-none-any.whl",
            "pool/librocrand1_5.3.3-4_amd64.deb",
            "dist/notes.txt",
        ],
        &[
            "dist/PKG-2.0-1-cp312-cp312-manylinux_2_28_x86_64.whl",
            "pool/librocrand1_6.0-1_amd64.deb",
            "dist/notes.txt",
        ],
    );
    assert_eq!(o, n);
    assert_eq!(
        o,
        ["dist/pkg-*.whl", "pool/librocrand1_*.deb", "dist/notes.txt"]
    );
    // Names of another shape keep their paths.
    let [o, n] = keys(&["a-1.0.whl", "a_1.deb", "-1-py3-none-any.whl"], &[]);
    assert_eq!(o, ["a-1.0.whl", "a_1.deb", "-1-py3-none-any.whl"]);
    assert!(n.is_empty());
}

#[test]
fn several_packages_of_one_name_pair_by_tags_then_by_file_name() {
    let [o, n] = keys(
        &[
            "d/pkg-1.0-py3-none-manylinux_2_28_x86_64.whl",
            "d/pkg-1.0-py3-none-win_amd64.whl",
            "d/other-1.0-py3-none-any.whl",
            "d/other-1.1-py3-none-any.whl",
        ],
        &[
            "d/pkg-2.0-py3-none-manylinux_2_28_x86_64.whl",
            "d/pkg-2.0-py3-none-win_amd64.whl",
            "d/other-2.0-py3-none-any.whl",
        ],
    );
    assert_eq!(
        o,
        [
            "d/pkg-*-py3-none-manylinux_2_28_x86_64.whl",
            "d/pkg-*-py3-none-win_amd64.whl",
            "d/other-1.0-py3-none-any.whl",
            "d/other-1.1-py3-none-any.whl",
        ]
    );
    assert_eq!(
        n,
        [
            "d/pkg-*-py3-none-manylinux_2_28_x86_64.whl",
            "d/pkg-*-py3-none-win_amd64.whl",
            "d/other-2.0-py3-none-any.whl",
        ]
    );
}

#[test]
fn units_pair_by_key_in_order() {
    let old = vec![
        ("a".to_string(), unit("o/a")),
        ("b".to_string(), unit("o/b")),
        ("d".to_string(), unit("o/d1")),
        ("d".to_string(), unit("o/d2")),
    ];
    let new = vec![
        ("c".to_string(), unit("n/c")),
        ("b".to_string(), unit("n/b")),
        ("d".to_string(), unit("n/d1")),
    ];
    let paired: Vec<(String, Option<String>, Option<String>)> = pair(old, new)
        .into_iter()
        .map(|(k, o, n)| (k, o.map(|s| s.path), n.map(|s| s.path)))
        .collect();
    let s = |v: &str| Some(v.to_string());
    assert_eq!(
        paired,
        [
            ("a".into(), s("o/a"), None),
            ("b".into(), s("o/b"), s("n/b")),
            ("c".into(), None, s("n/c")),
            ("d".into(), s("o/d1"), s("n/d1")),
            ("d".into(), s("o/d2"), None),
        ]
    );
}

#[test]
fn the_json_document_shows_the_files_shown_and_why_they_failed() {
    let mut gone = unit("n/b");
    gone.result = Err(crate::scan::Unread::new("cannot open"));
    let compared = [
        Compared {
            path: "a".into(),
            old: Some(unit("o/a")),
            new: Some(unit("n/a")),
            status: FileStatus::Same,
            diff: None,
            shown: true,
        },
        Compared {
            path: "b".into(),
            old: Some(unit("o/b")),
            new: Some(gone),
            status: FileStatus::Error,
            diff: None,
            shown: true,
        },
        Compared {
            path: "c".into(),
            old: None,
            new: Some(unit("n/c")),
            status: FileStatus::Added,
            diff: None,
            shown: false,
        },
    ];
    let doc = Document::new(Path::new("o"), Path::new("n"), false, &compared);
    let text = serde_json::to_string(&doc).unwrap();
    assert!(
        text.starts_with(r#"{"schema":"offload-kit/diff/1","old":"o","new":"n","kernels":false,"files":[{"path":"a","old_path":"o/a","new_path":"n/a","status":"same"}"#),
        "{text}"
    );
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(value["files"].as_array().unwrap().len(), 2);
    assert_eq!(value["files"][1]["error"], "'n/b': cannot open");
    assert_eq!(value["summary"]["files"], 2);
    assert_eq!(value["summary"]["errors"], 1);
}
