use super::*;

fn layers(ls: &[&[(&str, bool)]]) -> Vec<(String, Seen)> {
    let mut s = Shadow::default();
    let mut out = Vec::new();
    for l in ls.iter().rev() {
        for (p, dir) in *l {
            out.push((p.to_string(), s.entry(normal(p).unwrap(), *dir)));
        }
        s.next_layer();
    }
    out
}

#[test]
fn upper_layers_hide_lower_files() {
    let seen = layers(&[
        &[
            ("usr/lib/a.so", false),
            ("usr/lib/gone.so", false),
            ("opt/x/y.so", false),
            ("etc/d/z.so", false),
            ("replaced.so", false),
        ],
        &[
            ("./usr/lib/.wh.gone.so", false),
            ("opt/x", false),
            ("etc/d/.wh..wh..opq", false),
            ("etc/d/new.so", false),
            ("replaced.so", false),
        ],
    ]);
    let visible: Vec<&str> = seen
        .iter()
        .filter(|(_, s)| *s == Seen::Visible)
        .map(|(p, _)| p.as_str())
        .collect();
    assert_eq!(
        visible,
        ["opt/x", "etc/d/new.so", "replaced.so", "usr/lib/a.so"],
        "{seen:?}"
    );
}

#[test]
fn a_directory_in_a_layer_above_keeps_what_is_below_it() {
    let seen = layers(&[&[("d/f.so", false)], &[("d", true), ("d/g.so", false)]]);
    assert!(seen.iter().all(|(_, s)| *s == Seen::Visible), "{seen:?}");
}

#[test]
fn paths_out_of_the_root_are_refused() {
    assert!(normal("usr/../../etc/passwd").is_err());
    assert_eq!(normal("./a//b/").unwrap(), "a/b");
}

#[test]
fn digests_are_read_strictly() {
    assert!(digest_bytes(&format!("sha256:{}", "ab".repeat(32))).is_some());
    assert!(digest_bytes("sha256:../../x").is_none());
    assert!(digest_bytes(&format!("sha512:{}", "ab".repeat(32))).is_none());
    assert!(digest_bytes(&format!("sha256:{}", "AB".repeat(32))).is_none());
    assert!(digest_bytes(&format!("sha256:+f{}", "ab".repeat(31))).is_none());
}

#[test]
fn docker_archives_are_told_by_their_first_entry() {
    let hex = "0123456789abcdef".repeat(4);
    for yes in [
        format!("{hex}/"),
        format!("{hex}.tar"),
        format!("./{hex}.json"),
        "blobs/".into(),
    ] {
        assert!(may_be_saved(&yes), "{yes}");
    }
    for no in ["usr/", "lib/libfoo.so", &hex[..63], &format!("{hex}x")] {
        assert!(!may_be_saved(no), "{no}");
    }
}

/// A tar of `files` (path, bytes).
fn tar_of(files: &[(String, Vec<u8>)]) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for (path, bytes) in files {
        let mut h = tar::Header::new_ustar();
        h.set_size(bytes.len() as u64);
        h.set_mode(0o644);
        h.set_cksum();
        b.append_data(&mut h, path, bytes.as_slice()).unwrap();
    }
    b.into_inner().unwrap()
}

/// A descriptor of `bytes`, of media type `mt`, as JSON; and the member
/// that holds them.
fn blob(mt: &str, bytes: &[u8]) -> (String, (String, Vec<u8>)) {
    let hex = hex_sha(bytes);
    let d = format!(
        r#"{{"mediaType":"{mt}","digest":"sha256:{hex}","size":{}}}"#,
        bytes.len()
    );
    (d, (format!("blobs/sha256/{hex}"), bytes.to_vec()))
}

/// A `docker save` archive with an OCI layout beside `manifest.json`:
/// one image (named `app`) and one artifact manifest (a non-image
/// config); `size` is what the image's descriptor says of its manifest.
fn archive(image_manifest: &str, size: Option<u64>) -> Vec<u8> {
    let layer_id = format!("sha256:{}", "ab".repeat(32));
    let (cd, config) = blob(
        "application/vnd.oci.image.config.v1+json",
        format!(r#"{{"rootfs":{{"type":"layers","diff_ids":["{layer_id}"]}}}}"#).as_bytes(),
    );
    let (ld, layer) = blob("application/vnd.oci.image.layer.v1.tar", &[0; 1024]);
    let manifest = image_manifest.replace("CONFIG", &cd).replace("LAYER", &ld);
    let (md, manifest) = blob(
        "application/vnd.oci.image.manifest.v1+json",
        manifest.as_bytes(),
    );
    let md = match size {
        Some(n) => md.replace(
            &format!(r#""size":{}"#, manifest.1.len()),
            &format!(r#""size":{n}"#),
        ),
        None => md,
    };
    let md = md.replacen(
        '{',
        r#"{"annotations":{"org.opencontainers.image.ref.name":"app"},"#,
        1,
    );
    let (ad, artifact) = blob(
        "application/vnd.oci.image.manifest.v1+json",
        format!(
            r#"{{"config":{},"layers":[]}}"#,
            blob("application/x-sig", b"{}").0
        )
        .as_bytes(),
    );
    let index = format!(r#"{{"schemaVersion":2,"manifests":[{md},{ad}]}}"#);
    tar_of(&[
        ("manifest.json".into(), b"[]".to_vec()),
        ("index.json".into(), index.into_bytes()),
        manifest,
        config,
        layer,
        artifact,
        blob("application/x-sig", b"{}").1,
    ])
}

const IMAGE: &str = r#"{"schemaVersion":2,"config":CONFIG,"layers":[LAYER]}"#;

#[test]
fn a_layout_is_walked_from_a_tar_as_from_a_directory() {
    let bytes = archive(IMAGE, None);
    let tar = TarIndex::read(&bytes).unwrap();
    let index = read(&tar, Mode::Rewrite).unwrap_or_else(|e| panic!("{e:?}"));
    assert_eq!(index.what, "index.json");
    let [Entry::Image(d, img), Entry::Other] = index.entries.as_slice() else {
        panic!("not one image and one other entry");
    };
    assert_eq!(img.name, "app");
    assert_eq!(img.field, "index.json: manifests[0]");
    assert_eq!(d.hex(), Some(hex_sha(&img.manifest).as_str()));
    assert_eq!(img.layers.len(), 1);
    assert_eq!(img.diff_ids, [format!("sha256:{}", "ab".repeat(32))]);
    // The scanners read every manifest as an image's: the artifact's
    // config is read, and its layers match its (missing) rootfs.
    assert!(matches!(
        read(&tar, Mode::Scan),
        Err(OciError::NotConfig { .. })
    ));
}

#[test]
fn a_blob_that_is_not_its_descriptors_size_is_refused() {
    let bytes = archive(IMAGE, Some(3));
    let tar = TarIndex::read(&bytes).unwrap();
    for mode in [Mode::Scan, Mode::Rewrite] {
        match read(&tar, mode) {
            Err(OciError::Size {
                field, said, is, ..
            }) => {
                assert_eq!((field.as_str(), said), ("index.json: manifests[0]", 3));
                assert!(is > 3);
            }
            other => panic!("{:?}", other.map(|i| i.what)),
        }
    }
}

#[test]
fn a_manifest_without_layers_is_an_error_only_to_the_scanners() {
    let bytes = archive(r#"{"schemaVersion":2,"config":CONFIG}"#, None);
    let tar = TarIndex::read(&bytes).unwrap();
    let index = read(&tar, Mode::Rewrite).unwrap_or_else(|e| panic!("{e:?}"));
    assert!(matches!(
        index.entries.as_slice(),
        [Entry::Other, Entry::Other]
    ));
    match read(&tar, Mode::Scan) {
        Err(OciError::NotManifest { field, why, .. }) => {
            assert_eq!(field, "index.json: manifests[0]");
            assert_eq!(why.to_string(), "it has no 'layers'");
        }
        other => panic!("{:?}", other.map(|i| i.what)),
    }
}

/// A tar of `files` (a directory where the path ends in `/`) and the
/// symbolic links `links` (path, target).
fn tar_with_links(files: &[(&str, &[u8])], links: &[(&str, &str)]) -> Vec<u8> {
    let mut b = tar::Builder::new(Vec::new());
    for (path, bytes) in files {
        let mut h = tar::Header::new_ustar();
        if path.ends_with('/') {
            h.set_entry_type(tar::EntryType::Directory);
        }
        h.set_size(bytes.len() as u64);
        h.set_mode(0o644);
        h.set_cksum();
        b.append_data(&mut h, path, *bytes).unwrap();
    }
    for (path, to) in links {
        let mut h = tar::Header::new_ustar();
        h.set_entry_type(tar::EntryType::Symlink);
        h.set_size(0);
        h.set_mode(0o777);
        b.append_link(&mut h, path, to).unwrap();
    }
    b.into_inner().unwrap()
}

#[test]
fn a_saved_archive_s_links_are_followed_within_it_and_never_out() {
    let bytes = tar_with_links(
        &[
            ("manifest.json", b"[]"),
            ("ab.tar", b"layer"),
            ("c/", b""),
            ("c/d", b"x"),
        ],
        &[
            // Older `docker save`: `<id>/layer.tar -> ../<diff_id>.tar`.
            ("id/layer.tar", "../ab.tar"),
            ("up", "../../ab.tar"),
            ("abs", "/ab.tar"),
            ("loop", "loop"),
            ("dir", "c"),
        ],
    );
    // One index serves the scanners and prune: `read` wants a manifest.
    assert!(TarIndex::read(&tar_with_links(&[("x", b"")], &[])).is_none());
    let tar = TarIndex::read(&bytes).unwrap();
    assert_eq!(tar.get("id/layer.tar"), Some(&b"layer"[..]));
    assert_eq!(tar.resolve("./id//layer.tar").as_deref(), Some("ab.tar"));
    assert_eq!(tar.get("up"), None, "a link above the archive's root");
    assert_eq!(tar.get("abs"), None, "an absolute link");
    assert_eq!(tar.get("loop"), None, "a link to itself");
    assert_eq!(
        tar.get("dir"),
        None,
        "a link to a directory entry is no file"
    );
    assert!(
        tar.entry("id/layer.tar")
            .is_some_and(|e| e.link.is_some() && e.plain)
    );
    assert_eq!(tar.data("c/d"), Some(&b"x"[..]));
}
