use super::*;

fn source(path: &str, in_dir: bool) -> Source {
    Source {
        path: PathBuf::from(path),
        error: None,
        in_dir,
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
