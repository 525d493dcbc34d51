use super::*;
use std::os::unix::fs::PermissionsExt;

fn umask() -> u32 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find_map(|l| l.strip_prefix("Umask:"));
    u32::from_str_radix(line.unwrap().trim(), 8).unwrap()
}

#[test]
fn a_new_output_gets_0666_less_the_umask_and_replaces_the_old_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.o");
    std::fs::write(&path, b"old").unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    let mut out = Output::create(&path).unwrap();
    out.write_all(b"new").unwrap();
    out.commit().unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"new");
    let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o666 & !umask());
    // Nothing else is left in the directory: no temporary, no old file.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn dev_null_is_written_in_place_and_a_fifo_refused() {
    let mut out = Output::create(Path::new("/dev/null")).unwrap();
    out.write_all(b"discarded").unwrap();
    out.commit().unwrap();
    let meta = std::fs::metadata("/dev/null").unwrap();
    assert!(std::os::unix::fs::FileTypeExt::is_char_device(
        &meta.file_type()
    ));
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("fifo");
    let st = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(st.success());
    // No reader: an error at once, not a wait for one.
    let e = Output::create(&fifo).err().unwrap();
    assert!(e.to_string().contains("a FIFO that nothing reads"), "{e}");
    // With a reader, written in place.
    let reader = std::process::Command::new("cat")
        .arg(&fifo)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = loop {
        match Output::create(&fifo) {
            Ok(o) => break o,
            Err(_) => std::thread::sleep(std::time::Duration::from_millis(10)),
        }
    };
    out.write_all(b"through the pipe").unwrap();
    out.commit().unwrap();
    let got = reader.wait_with_output().unwrap();
    assert_eq!(got.stdout, b"through the pipe");
    // Nothing was created beside it.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn an_output_dropped_without_commit_leaves_the_old_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out.o");
    std::fs::write(&path, b"old").unwrap();
    let mut out = Output::create(&path).unwrap();
    out.write_all(b"partial").unwrap();
    drop(out);
    assert_eq!(std::fs::read(&path).unwrap(), b"old");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn a_link_is_written_through() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real.o");
    std::fs::write(&real, b"old").unwrap();
    let link = dir.path().join("link.o");
    std::os::unix::fs::symlink("real.o", &link).unwrap();
    let dangling = dir.path().join("dangling.o");
    std::os::unix::fs::symlink("sub/new.o", &dangling).unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    for (name, target) in [(&link, &real), (&dangling, &dir.path().join("sub/new.o"))] {
        let mut out = Output::create(name).unwrap();
        out.write_all(b"new").unwrap();
        out.commit().unwrap();
        assert!(
            std::fs::symlink_metadata(name)
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(std::fs::read(target).unwrap(), b"new");
    }
}

/// The names in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

#[test]
fn a_directory_moved_meanwhile_gets_the_file_and_keeps_no_temporary() {
    let top = tempfile::tempdir().unwrap();
    let (before, after) = (top.path().join("d"), top.path().join("moved"));
    for commit in [true, false] {
        std::fs::create_dir(&before).unwrap();
        std::fs::write(before.join("out.o"), b"old").unwrap();
        let mut out = Output::create(&before.join("out.o")).unwrap();
        out.write_all(b"new").unwrap();
        // Scratch data in the same directory, which has no name.
        let scratch = out.scratch_file().unwrap().unwrap();
        // The old file stays at its name while the new one is written
        // (with no name of its own: O_TMPFILE on this file system).
        assert_eq!(names(&before), ["out.o"]);
        assert_eq!(std::fs::read(before.join("out.o")).unwrap(), b"old");
        std::fs::rename(&before, &after).unwrap();
        // A new directory at the old name gets nothing.
        std::fs::create_dir(&before).unwrap();
        if commit {
            out.commit().unwrap();
            assert_eq!(std::fs::read(after.join("out.o")).unwrap(), b"new");
        } else {
            drop(out);
            assert_eq!(std::fs::read(after.join("out.o")).unwrap(), b"old");
        }
        drop(scratch);
        assert_eq!(names(&after), ["out.o"]);
        assert!(names(&before).is_empty());
        std::fs::remove_dir_all(&after).unwrap();
        std::fs::remove_dir(&before).unwrap();
    }
}

#[test]
fn outputs_in_one_directory_share_its_handle_and_a_new_directory_gets_its_own() {
    let top = tempfile::tempdir().unwrap();
    let d = top.path().join("d");
    std::fs::create_dir(&d).unwrap();
    let a = Output::create(&d.join("a")).unwrap();
    let b = Output::create(&d.join("b")).unwrap();
    let dir = |o: &Output| Arc::clone(&o.place.as_ref().unwrap().dir);
    assert!(Arc::ptr_eq(&dir(&a), &dir(&b)));
    // Another directory now at the same path: not the old handle.
    std::fs::rename(&d, top.path().join("old")).unwrap();
    std::fs::create_dir(&d).unwrap();
    let c = Output::create(&d.join("c")).unwrap();
    assert!(!Arc::ptr_eq(&dir(&a), &dir(&c)));
    c.commit().unwrap();
    assert_eq!(names(&d), ["c"]);
    drop((a, b));
    assert!(names(&top.path().join("old")).is_empty());
}

#[test]
fn a_name_ending_in_a_slash_is_a_directory() {
    let dir = tempfile::tempdir().unwrap();
    let name = format!("{}/new/", dir.path().display());
    let e = Output::create(Path::new(&name)).err().unwrap();
    assert_eq!(e.raw_os_error(), Some(21));
    assert!(names(dir.path()).is_empty());
}

#[test]
fn an_open_file_named_in_proc_is_written_in_place() {
    use std::os::fd::AsRawFd;
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("f");
    std::fs::write(&real, b"old contents").unwrap();
    let held = std::fs::File::open(&real).unwrap();
    let inode = |p: &Path| std::os::unix::fs::MetadataExt::ino(&std::fs::metadata(p).unwrap());
    let before = inode(&real);
    let name = PathBuf::from(format!("/dev/fd/{}", held.as_raw_fd()));
    let mut out = Output::create(&name).unwrap();
    out.write_all(b"new").unwrap();
    out.commit().unwrap();
    // The same file (not a new one renamed over it), truncated.
    assert_eq!(std::fs::read(&real).unwrap(), b"new");
    assert_eq!(inode(&real), before);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    drop(held);
}

#[test]
fn the_old_file_stays_at_its_path_until_the_new_one_replaces_it() {
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lib.so");
    std::fs::write(&path, b"old").unwrap();
    let before = std::fs::metadata(&path).unwrap().ino();
    let mut out = Output::create(&path).unwrap();
    out.write_all(b"new contents").unwrap();
    out.flush().unwrap();
    // Until the commit, the path holds the old file, the same inode.
    assert_eq!(std::fs::read(&path).unwrap(), b"old");
    assert_eq!(std::fs::metadata(&path).unwrap().ino(), before);
    // A second output of the same path, begun and committed meanwhile,
    // is replaced in turn: the last commit wins, and the path is never
    // empty.
    let mut second = Output::create(&path).unwrap();
    second.write_all(b"second").unwrap();
    second.commit().unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"second");
    out.commit().unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"new contents");
    assert_eq!(names(dir.path()), ["lib.so"]);
}

#[test]
fn a_named_temporary_replaces_an_old_file_and_a_new_name_alike() {
    let dir = tempfile::tempdir().unwrap();
    let fd = open_dir(dir.path()).unwrap();
    for existing in [true, false] {
        let name = OsStr::new("out");
        if existing {
            std::fs::write(dir.path().join("out"), b"old").unwrap();
        }
        let (mut f, temp) = create_temp(&fd, 0o644).unwrap();
        f.write_all(b"new").unwrap();
        replace(&fd, &temp, name).unwrap();
        assert_eq!(std::fs::read(dir.path().join("out")).unwrap(), b"new");
        assert_eq!(names(dir.path()), ["out"]);
        std::fs::remove_file(dir.path().join("out")).unwrap();
    }
    // A directory at the name is not replaced.
    std::fs::create_dir(dir.path().join("out")).unwrap();
    let (_, temp) = create_temp(&fd, 0o644).unwrap();
    let e = replace(&fd, &temp, OsStr::new("out")).unwrap_err();
    assert_eq!(e.raw_os_error(), Some(21));
    assert!(dir.path().join("out").is_dir());
}

#[test]
fn outputs_within_one_allowance_write_no_more_than_it_together() {
    let dir = tempfile::tempdir().unwrap();
    let allowance = Allowance::new(10, "--max-uncompressed");
    let mut a = Output::create(&dir.path().join("a"))
        .unwrap()
        .within(&allowance);
    a.write_all(b"123456").unwrap();
    a.commit().unwrap();
    // The second output has 4 bytes left, not 10.
    let path = dir.path().join("b");
    std::fs::write(&path, b"old").unwrap();
    let mut b = Output::create(&path).unwrap().within(&allowance);
    b.write_all(b"1234").unwrap();
    let e = b.write_all(b"5").unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::FileTooLarge);
    assert!(e.to_string().contains("10 bytes"), "{e}");
    drop(b);
    // Nothing of it left, the old file as it was, its bytes free again.
    assert_eq!(std::fs::read(&path).unwrap(), b"old");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 2);
    assert_eq!(allowance.spent(), 6);
}

#[test]
fn bytes_that_reach_the_file_past_the_writes_count_at_the_commit() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("out");
    let allowance = Allowance::new(100, "--max-uncompressed");
    let mut out = Output::create(&path).unwrap().within(&allowance);
    out.write_all(b"head").unwrap();
    // Grown through the file itself (as a mapping or a copy would).
    out.temp_file().unwrap().set_len(101).unwrap();
    let e = out.commit().unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::FileTooLarge);
    assert!(!path.exists());
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    assert_eq!(allowance.spent(), 0);
    let mut out = Output::create(&path).unwrap().within(&allowance);
    out.temp_file().unwrap().set_len(100).unwrap();
    out.commit().unwrap();
    assert_eq!(allowance.spent(), 100);
}
