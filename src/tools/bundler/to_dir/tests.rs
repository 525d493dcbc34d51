//! `unbundle_to_dir` on bundles made here: plain and compressed binary
//! bundles, every entry and chosen targets, missing ones.

use super::*;
use crate::bundle::ccob::CompressOptions;

const HOST: &str = "host-x86_64-unknown-linux-gnu-";
const GFX: &str = "hip-amdgcn-amd-amdhsa--gfx90a";

/// A binary bundle of a host entry and a gfx90a entry.
fn bundle() -> Vec<u8> {
    let entries = [(HOST.to_string(), 4), (GFX.to_string(), 6)];
    let mut fat = Vec::new();
    crate::bundle::layout(Format::Binary, &entries, 1)
        .unwrap()
        .write_to(&mut fat, &[b"host", b"device"])
        .unwrap();
    fat
}

/// The bundle compressed into a CCOB.
fn compressed() -> Vec<u8> {
    let opts = CompressOptions {
        threads: 0,
        ..CompressOptions::default()
    };
    ccob::compress_to_vec(&bundle(), &opts).unwrap().0
}

/// A job on `input`, writing to `dir`.
fn job<'a>(input: &'a str, targets: &'a [String], dir: &'a Path) -> ToDir<'a> {
    ToDir {
        input,
        targets,
        file_type: None,
        output_dir: dir,
        allow_missing: false,
        hip_openmp: false,
        max_uncompressed: 1 << 30,
        threads: Some(1),
    }
}

/// Runs `job` on `data`: the files listed, as names in the directory.
fn run(job: &ToDir<'_>, data: Vec<u8>) -> Result<Vec<String>, ToDirError> {
    let mut listed = Vec::new();
    unbundle_to_dir(job, &Input::from_vec(data), &mut |p| {
        let name = Path::new(p).strip_prefix(job.output_dir).unwrap();
        listed.push(name.to_string_lossy().into_owned());
        Ok(())
    })?;
    Ok(listed)
}

#[test]
fn files_are_named_after_the_input_and_the_ids() {
    assert_eq!(
        entry_file("dir/fat.bc", b"hip-amdgcn-amd-amdhsa--gfx90a:xnack+", 1),
        "fat-hip-amdgcn-amd-amdhsa--gfx90a_xnack+.1"
    );
    assert_eq!(entry_file("odd name.bc", b"a/b", 0), "odd_name-a_b.0");
    let targets = [format!("{GFX}=out/dev.o"), HOST.to_string()];
    let (names, outs) = target_outputs(&targets);
    assert_eq!(names, [GFX, HOST]);
    assert_eq!(outs, [Some("out/dev.o".to_string()), None]);
    let host = BundleId::parse("host-x86_64-unknown-linux-gnu").unwrap();
    assert_eq!(request_file(None, &host), HOST);
    assert_eq!(request_file(Some("x".into()), &host), "x");
}

#[test]
fn every_entry_is_written_plain_or_streamed() {
    for data in [bundle(), compressed()] {
        let dir = tempfile::tempdir().unwrap();
        let listed = run(&job("d/fat.bc", &[], dir.path()), data).unwrap();
        // Numbered in LLVM's (hash) order, the same either way.
        for (n, name) in listed.iter().enumerate() {
            assert!(name.ends_with(&format!(".{n}")), "{name}");
        }
        let mut got: Vec<(String, Vec<u8>)> = listed
            .iter()
            .map(|n| (n.clone(), std::fs::read(dir.path().join(n)).unwrap()))
            .collect();
        got.sort();
        let host = got.iter().find(|(n, _)| n.starts_with("fat-host")).unwrap();
        let gfx = got.iter().find(|(n, _)| n.starts_with("fat-hip")).unwrap();
        assert_eq!(host.1, b"host");
        assert_eq!(gfx.1, b"device");
        assert_eq!(got.len(), 2);
    }
}

#[test]
fn targets_get_their_entries_and_missing_ones_fail_or_are_empty() {
    for data in [bundle(), compressed()] {
        let dir = tempfile::tempdir().unwrap();
        let targets = [
            format!("{GFX}:xnack+=dev.o"),
            "openmp-nvptx64-nvidia-cuda--sm_80".to_string(),
        ];
        let mut j = job("fat.bc", &targets, dir.path());
        let e = run(&j, data.clone()).unwrap_err();
        let ToDirError::Missing(list) = e else {
            panic!("{e:?}");
        };
        // Named normalized, as LLVM names them.
        let sm_80 = "openmp-nvptx64-nvidia-cuda-unknown-sm_80";
        assert_eq!(list, sm_80);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        j.allow_missing = true;
        let listed = run(&j, data).unwrap();
        assert_eq!(listed, ["dev.o", sm_80]);
        assert_eq!(std::fs::read(dir.path().join("dev.o")).unwrap(), b"device");
        let empty = std::fs::read(dir.path().join(&listed[1])).unwrap();
        assert!(empty.is_empty());
    }
}

#[test]
fn a_streamed_plan_gives_each_file_its_range() {
    let data = compressed();
    let s = compressed::streamable(&data, 1 << 30, |_| Some(Format::Binary)).unwrap();
    let dir = Path::new("out");
    let targets = [GFX.to_string()];
    let (plan, missing) = stream_plan(&job("fat", &targets, dir), &s.records)
        .unwrap()
        .unwrap();
    assert!(missing.is_empty());
    let gfx = s.records.iter().find(|r| r.id == GFX.as_bytes()).unwrap();
    assert_eq!(plan, [(GFX.to_string(), Some(gfx.offset..gfx.offset + 6))]);
    let (plan, _) = stream_plan(&job("fat", &[], dir), &s.records)
        .unwrap()
        .unwrap();
    assert_eq!(plan.len(), 2);
    assert!(
        plan.iter()
            .all(|(name, r)| name.starts_with("fat-") && r.is_some())
    );
    let bad = ["foo".to_string()];
    let e = stream_plan(&job("fat", &bad, dir), &s.records).unwrap();
    assert!(matches!(e, Err(ToDirError::Targets(_))), "{e:?}");
}

#[test]
fn inputs_that_are_no_bundle_are_refused_before_writing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("never");
    let e = run(&job("x", &[], &out), b"plain data".to_vec()).unwrap_err();
    assert!(matches!(e, ToDirError::NotABundle), "{e:?}");
    let mut j = job("x", &[], &out);
    j.file_type = Some("nonsense");
    let e = run(&j, bundle()).unwrap_err();
    assert!(
        matches!(&e, ToDirError::UnknownType(t) if t == "nonsense"),
        "{e:?}"
    );
    assert!(!out.exists());
}
