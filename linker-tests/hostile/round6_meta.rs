//! The sixth round of hostile inputs (issue #71), privileges and metadata
//! of what prune writes: an output written elsewhere (`-o`, `-d`, the
//! `nvprune` drop-in) of a setuid and setgid file owned by `nobody` is
//! never setuid nor setgid; `--in-place` keeps the owner, every mode bit,
//! every extended attribute (capabilities, ACLs, `user.*`, `trusted.*`)
//! and the times, checked by `getcap`, `getfacl` and Python, or refuses
//! the file and leaves it as it was (a capability that `nobody` cannot
//! set: exit 2 named, exit 1 in a tree); a rewritten wheel member keeps
//! its date, external attributes and host system (a Windows wheel's too),
//! as Python's `zipfile` reads them.
//!
//! These trials give files away (`chown`) and run prune as `nobody`: they
//! need root, as CI has; elsewhere they are ignored (and fail when
//! `OFFLOAD_KIT_REQUIRE_TOOLS=1`).

use std::ffi::OsStr;
use std::os::unix::fs::{MetadataExt, PermissionsExt};

use super::round5_paths::hip_bundle;
use super::*;
use crate::util::{md5_hex, require_tools, same};

const PY: &str = "/usr/bin/python3";
const SETCAP: &str = "/usr/sbin/setcap";
const GETCAP: &str = "/usr/sbin/getcap";
const SETPRIV: &str = "/usr/bin/setpriv";

/// `nobody` and `nogroup` (Debian's ids).
const NOBODY: u32 = 65534;

pub(super) fn tests() -> Vec<Trial> {
    vec![
        as_root(trial!(outputs_written_elsewhere_are_never_setuid, &[])),
        as_root(trial!(
            in_place_keeps_owner_mode_attributes_and_times,
            &[PY, SETCAP, GETCAP, "setfacl", "getfacl"]
        )),
        as_root(trial!(in_place_refuses_what_it_cannot_keep, &[SETCAP, GETCAP, "setpriv"])),
        as_root(trial!(
            as_nobody_in_place_keeps_user_attributes_and_cannot_see_trusted_ones,
            &[PY, "setpriv"]
        )),
        as_root(trial!(the_nvprune_drop_in_never_writes_setuid, &[])),
        trial!(rewritten_wheel_members_keep_their_headers, &[PY]),
    ]
}

/// Whether this process is root.
fn root() -> bool {
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// `t` ignored where the trials cannot run (not root), unless tools are
/// required (CI), when it fails saying so.
fn as_root(t: Trial) -> Trial {
    if root() {
        return t;
    }
    if require_tools() {
        let name = t.name().to_string();
        return Trial::test(name, || {
            Err("this trial gives files away and must run as root".into())
        });
    }
    t.with_ignored_flag(true)
}

/// Gives `path` to nobody:nogroup, then the mode `mode` (a change of
/// owner clears setuid and setgid).
fn give_away(path: &Path, mode: u32) -> Result<(), Failed> {
    std::os::unix::fs::chown(path, Some(NOBODY), Some(NOBODY))?;
    std::fs::set_permissions(path, PermissionsExt::from_mode(mode))?;
    Ok(())
}

/// Runs `prog` with `args` in `d` within the time limit.
fn within<S: AsRef<OsStr>>(d: &Path, prog: &Path, args: &[S]) -> Result<crate::util::Run, Failed> {
    run_within(LIMIT, prog, args, d)
}

/// `-o` and `-d` of a 6755 bundle owned by nobody: each output is
/// pruned, `0755`, owned by root (who ran prune).
fn outputs_written_elsewhere_are_never_setuid() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    hip_bundle(d, OsStr::new("k.hipfb"), 1 << 16)?;
    give_away(&d.join("k.hipfb"), 0o6755)?;
    let keep = ["prune", "--keep", "gfx90a"];
    within(d, &ours(), &[&keep[..], &["-o", "o.hipfb", "k.hipfb"]].concat())?.ok()?;
    within(d, &ours(), &[&keep[..], &["-d", "out", "k.hipfb"]].concat())?.ok()?;
    let input = std::fs::metadata(d.join("k.hipfb"))?;
    same("the input's mode", input.mode() & 0o7777, 0o6755)?;
    for out in ["o.hipfb", "out/k.hipfb"] {
        let m = std::fs::metadata(d.join(out))?;
        same(&format!("{out}: mode"), m.mode() & 0o7777, 0o755)?;
        same(&format!("{out}: owner"), (m.uid(), m.gid()), (0, 0))?;
        if m.len() >= input.len() {
            return Err(format!("{out} was not pruned ({} bytes)", m.len()).into());
        }
    }
    Ok(())
}

/// The `nvprune` drop-in, `-arch sm_80 -o` of an OffloadBinary of an
/// sm_80 and an sm_75 image (made by our `pack`), 6755 and owned by
/// nobody: the output keeps the sm_80 image alone, `0755`, root's.
fn the_nvprune_drop_in_never_writes_setuid() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    for (name, seed) in [("a.cubin", 80u64), ("b.cubin", 75)] {
        let mut elf = b"\x7fELF".to_vec();
        elf.extend(crate::util::bytes(seed, 4096));
        std::fs::write(d.join(name), elf)?;
    }
    let image = |f: &str, sm: &str| format!("--image=file={f},triple=nvptx64-nvidia-cuda,arch={sm},kind=cuda");
    let (a, b) = (image("a.cubin", "sm_80"), image("b.cubin", "sm_75"));
    within(d, &ours(), &["pack", "-o", "dev.bin", &a, &b])?.ok()?;
    give_away(&d.join("dev.bin"), 0o6755)?;
    within(d, &ours_as("nvprune"), &["-arch", "sm_80", "-o", "out.bin", "dev.bin"])?.ok()?;
    let (input, m) = (std::fs::metadata(d.join("dev.bin"))?, std::fs::metadata(d.join("out.bin"))?);
    same("nvprune's output: mode", m.mode() & 0o7777, 0o755)?;
    same("nvprune's output: owner", (m.uid(), m.gid()), (0, 0))?;
    if m.len() >= input.len() {
        return Err(format!("nvprune kept every image ({} bytes)", m.len()).into());
    }
    Ok(())
}

/// What Python sees of `path`: mode, owner, group, access and
/// modification times in nanoseconds, and every extended attribute (hex).
fn meta_of(d: &Path, path: &str) -> Result<String, Failed> {
    let script = "import json, os, sys\n\
        p = sys.argv[1]\n\
        st = os.stat(p)\n\
        x = {n: os.getxattr(p, n).hex() for n in sorted(os.listxattr(p))}\n\
        print(json.dumps({'mode': oct(st.st_mode), 'owner': [st.st_uid, st.st_gid],\n\
            'times': [st.st_atime_ns, st.st_mtime_ns], 'xattrs': x}, sort_keys=True))\n";
    let r = within(d, Path::new(PY), &["-c", script, path])?.ok()?;
    Ok(String::from_utf8_lossy(&r.stdout).into_owned())
}

/// What `getcap` and `getfacl` say of `path`.
fn tools_say(d: &Path, path: &str) -> Result<String, Failed> {
    let cap = within(d, Path::new(GETCAP), &[path])?.ok()?;
    let acl = within(d, Path::new("/usr/bin/getfacl"), &["-n", path])?.ok()?;
    Ok(format!(
        "{}{}",
        String::from_utf8_lossy(&cap.stdout),
        String::from_utf8_lossy(&acl.stdout)
    ))
}

/// A bundle `d/name` owned by nobody, 6755, with `user.test`,
/// `trusted.test`, a capability, an ACL, an old modification time and an
/// access time to come.
fn dressed(d: &Path, name: &str) -> Result<(), Failed> {
    let dir = d.join(name);
    let dir = dir.parent().ok_or("no directory")?;
    let file = Path::new(name).file_name().ok_or("no name")?;
    hip_bundle(dir, file, 1 << 16)?;
    give_away(&d.join(name), 0o6755)?;
    let script = "import os, sys\n\
        p = sys.argv[1]\n\
        os.setxattr(p, 'user.test', b'user value')\n\
        os.setxattr(p, 'trusted.test', b'trusted value')\n";
    within(d, Path::new(PY), &["-c", script, name])?.ok()?;
    within(d, Path::new(SETCAP), &["cap_net_raw+ep", name])?.ok()?;
    within(d, Path::new("/usr/bin/setfacl"), &["-m", "u:1:r", name])?.ok()?;
    // An access time after the change time, which a read (prune's first,
    // under `relatime`) leaves as it is.
    let (secs, day) = (std::time::Duration::from_secs, 86_400);
    let times = std::fs::FileTimes::new()
        .set_accessed(std::time::SystemTime::now() + secs(3650 * day))
        .set_modified(std::time::UNIX_EPOCH + secs(1_000_000_000));
    std::fs::File::options()
        .write(true)
        .open(d.join(name))?
        .set_times(times)?;
    Ok(())
}

/// `--in-place` of such a bundle, named, in a tree, and with another hard
/// link under `--keep-hard-links`: pruned (fewer bytes; a new inode but
/// through the links), with the same metadata as Python, `getcap` and
/// `getfacl` see it.
fn in_place_keeps_owner_mode_attributes_and_times() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    std::fs::create_dir(d.join("tree"))?;
    std::fs::create_dir(d.join("linked"))?;
    let cases = [
        ("k.hipfb", "k.hipfb", false),
        ("tree/k.hipfb", "tree", false),
        ("linked/k.hipfb", "linked/k.hipfb", true),
    ];
    for (name, arg, through) in cases {
        dressed(d, name)?;
        if through {
            // Written through its links, the file keeps its inode: writing
            // to it clears its capability, which must come back.
            std::fs::hard_link(d.join(name), d.join("linked/other-name"))?;
        }
        let before = (meta_of(d, name)?, tools_say(d, name)?);
        for part in [
            "'mode': '0o106755'",
            "user.test",
            "trusted.test",
            "security.capability",
            "system.posix_acl_access",
            "'owner': [65534, 65534]",
        ] {
            let part = part.replace('\'', "\"");
            if !before.0.contains(&part) {
                return Err(format!("{name} was not made as meant ({part}): {}", before.0).into());
            }
        }
        let old = std::fs::metadata(d.join(name))?;
        let mut args = vec!["prune", "--keep", "gfx90a", "--in-place", arg];
        if through {
            args.push("--keep-hard-links");
        }
        within(d, &ours(), &args)?.ok()?;
        let after = (meta_of(d, name)?, tools_say(d, name)?);
        same(&format!("{name}: metadata before and after"), &after, &before)?;
        let new = std::fs::metadata(d.join(name))?;
        if (new.ino() == old.ino()) != through || new.len() >= old.len() {
            return Err(format!("{name} was not pruned").into());
        }
    }
    Ok(())
}

/// As nobody, `--in-place` of a bundle with a capability (which only
/// root may set) is refused and leaves it as it was: exit 2 named, exit
/// 1 in a tree; the same bundle without one is pruned.
fn in_place_refuses_what_it_cannot_keep() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    std::fs::set_permissions(d, PermissionsExt::from_mode(0o755))?;
    // Our binary where nobody can run it.
    let bin = d.join("offload-kit");
    std::fs::copy(ours(), &bin)?;
    std::fs::set_permissions(&bin, PermissionsExt::from_mode(0o755))?;
    let w = d.join("w");
    std::fs::create_dir_all(w.join("tree"))?;
    for name in ["k.hipfb", "tree/k.hipfb", "plain.hipfb"] {
        let p = w.join(name);
        hip_bundle(p.parent().ok_or("no directory")?, p.file_name().ok_or("no name")?, 1 << 16)?;
        give_away(&p, 0o755)?;
        if name != "plain.hipfb" {
            within(&w, Path::new(SETCAP), &["cap_net_raw+ep", name])?.ok()?;
        }
    }
    give_away(&w, 0o755)?;
    give_away(&w.join("tree"), 0o755)?;
    let bin = bin.to_string_lossy().into_owned();
    let nobody = ["--reuid=65534", "--regid=65534", "--clear-groups", "--", &bin];
    let prune = |arg: &str| {
        let args = [&nobody[..], &["prune", "--keep", "gfx90a", "--in-place", arg]].concat();
        within(&w, Path::new(SETPRIV), &args)
    };
    for (name, arg, code) in [("k.hipfb", "k.hipfb", 2), ("tree/k.hipfb", "tree", 1)] {
        let bytes = std::fs::read(w.join(name))?;
        let (old, cap) = (std::fs::metadata(w.join(name))?, tools_say(&w, name)?);
        let r = prune(arg)?;
        let said = format!("{}{}", String::from_utf8_lossy(&r.stdout), r.stderr);
        same(&format!("exit code of {arg}: {said}"), r.code, code)?;
        for part in ["k.hipfb", "\"security.capability\"", "Operation not permitted"] {
            if !said.contains(part) {
                return Err(format!("{arg}: says nothing of {part}: {said}").into());
            }
        }
        let now = std::fs::metadata(w.join(name))?;
        same(&format!("{name}: inode"), now.ino(), old.ino())?;
        same(&format!("{name}: mtime"), now.mtime(), old.mtime())?;
        same(&format!("{name}: capability"), tools_say(&w, name)?, cap)?;
        same(
            &format!("{name}: bytes"),
            md5_hex(&std::fs::read(w.join(name))?),
            md5_hex(&bytes),
        )?;
    }
    // Nobody may prune a file of theirs with nothing to lose.
    let before = std::fs::metadata(w.join("plain.hipfb"))?.len();
    prune("plain.hipfb")?.ok()?;
    let after = std::fs::metadata(w.join("plain.hipfb"))?;
    if after.len() >= before || after.uid() != NOBODY {
        return Err("nobody could not prune a file without capabilities".into());
    }
    Ok(())
}

/// As nobody, `--in-place` of nobody's bundle holding `user.test` and
/// `trusted.test`: pruned (exit 0), `user.test` kept; `trusted.test`,
/// which the kernel lists to root alone, is not on the new file (the
/// documented limit of a run as another user than root: docs/prune.md).
fn as_nobody_in_place_keeps_user_attributes_and_cannot_see_trusted_ones() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    std::fs::set_permissions(d, PermissionsExt::from_mode(0o755))?;
    let bin = d.join("offload-kit");
    std::fs::copy(ours(), &bin)?;
    std::fs::set_permissions(&bin, PermissionsExt::from_mode(0o755))?;
    let w = d.join("w");
    std::fs::create_dir(&w)?;
    hip_bundle(&w, OsStr::new("k.hipfb"), 1 << 16)?;
    give_away(&w.join("k.hipfb"), 0o644)?;
    give_away(&w, 0o755)?;
    let script = "import os, sys\n\
        os.setxattr(sys.argv[1], 'user.test', b'u')\n\
        os.setxattr(sys.argv[1], 'trusted.test', b't')\n";
    within(&w, Path::new(PY), &["-c", script, "k.hipfb"])?.ok()?;
    let before = std::fs::metadata(w.join("k.hipfb"))?;
    let bin = bin.to_string_lossy().into_owned();
    let args = ["--reuid=65534", "--regid=65534", "--clear-groups", "--", &bin];
    let prune = ["prune", "--keep", "gfx90a", "--in-place", "k.hipfb"];
    within(&w, Path::new(SETPRIV), &[&args[..], &prune[..]].concat())?.ok()?;
    let after = std::fs::metadata(w.join("k.hipfb"))?;
    if after.len() >= before.len() || after.ino() == before.ino() {
        return Err("nobody's bundle was not pruned".into());
    }
    let meta = meta_of(&w, "k.hipfb")?;
    if !meta.contains("\"user.test\": \"75\"") || meta.contains("trusted.test") {
        return Err(format!("not user.test alone: {meta}").into());
    }
    Ok(())
}

/// Two wheels made by Python, a member of each a HIP object, its members
/// and RECORD dated 2021 and 2019: one of Unix (mode 0750), one of
/// Windows (`create_system` 0, DOS attributes). Pruned with `-o`, each
/// member of each keeps its date, external attributes and host system;
/// the object and the RECORD were rewritten (their CRC changed).
fn rewritten_wheel_members_keep_their_headers() -> Result<(), Failed> {
    let t = tempdir();
    let d = t.path();
    hip_bundle(d, OsStr::new("b.hipfb"), 1 << 14)?;
    within(d, &ours(), &["wrap", "--kind=hip", "-o", "lib.o", "b.hipfb"])?.ok()?;
    let make = r#"import base64, hashlib, sys, zipfile
system, attr, when, out = int(sys.argv[1]), int(sys.argv[2], 0), eval(sys.argv[3]), sys.argv[4]
files = {
    'demo/__init__.py': b'',
    'demo/lib.so': open('lib.o', 'rb').read(),
    'demo-1.0.dist-info/METADATA': b'Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n',
    'demo-1.0.dist-info/WHEEL': b'Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: py3-none-any\n',
}
def digest(b):
    return 'sha256=' + base64.urlsafe_b64encode(hashlib.sha256(b).digest()).rstrip(b'=').decode()
rows = ''.join(f'{n},{digest(b)},{len(b)}\n' for n, b in files.items())
files['demo-1.0.dist-info/RECORD'] = (rows + 'demo-1.0.dist-info/RECORD,,\n').encode()
with zipfile.ZipFile(out, 'w') as z:
    for n, b in files.items():
        i = zipfile.ZipInfo(n, date_time=when)
        i.create_system, i.external_attr = system, attr
        i.compress_type = zipfile.ZIP_DEFLATED
        z.writestr(i, b)
"#;
    let unix = "demo-1.0-py3-none-linux_x86_64.whl";
    let win = "demo-1.0-py3-none-win_amd64.whl";
    let unix_attr = format!("{:#x}", 0o100750u32 << 16);
    within(d, Path::new(PY), &["-c", make, "3", &unix_attr, "(2021, 6, 7, 8, 9, 10)", unix])?.ok()?;
    within(d, Path::new(PY), &["-c", make, "0", "0x20", "(2019, 2, 3, 4, 5, 6)", win])?.ok()?;
    let compare = r#"import sys, zipfile
a, b = zipfile.ZipFile(sys.argv[1]), zipfile.ZipFile(sys.argv[2])
old = {i.filename: i for i in a.infolist()}
bad = []
for i in b.infolist():
    o = old[i.filename]
    got = (i.date_time, hex(i.external_attr), i.create_system)
    want = (o.date_time, hex(o.external_attr), o.create_system)
    if got != want:
        bad.append(f'{i.filename}: {got} for {want}')
for n in ['demo/lib.so', 'demo-1.0.dist-info/RECORD']:
    if b.getinfo(n).CRC == old[n].CRC:
        bad.append(f'{n} was not rewritten')
print('\n'.join(bad))
"#;
    for whl in [unix, win] {
        let out = format!("out-{whl}");
        within(d, &ours(), &["prune", "--keep", "gfx90a", "-o", &out, whl])?.ok()?;
        let r = within(d, Path::new(PY), &["-c", compare, whl, &out])?.ok()?;
        let said = String::from_utf8_lossy(&r.stdout);
        if !said.trim().is_empty() {
            return Err(format!("{whl}:\n{said}").into());
        }
    }
    Ok(())
}
