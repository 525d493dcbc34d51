//! Target checks: LLVM's message for each list it rejects, against
//! `check_targets`' error, when bundling and when unbundling.

use super::*;

/// What LLVM printed, against what `check_targets` says it should print.
fn expected_stderr(prog: &Path, e: &TargetError) -> String {
    match e {
        TargetError::UnsupportedShaderModel => format!("LLVM ERROR: {e}\n"),
        _ => format!("{}: error: {e}\n", prog.display()),
    }
}

pub(super) fn target_checks_like_llvm(lists: Vec<Vec<String>>) -> Result<(), Failed> {
    let dir = tempdir();
    std::fs::write(dir.path().join("in.bin"), b"payload").map_err(|e| e.to_string())?;
    let prog = llvm(TOOL);
    let mut wrong = String::new();
    let mut undefined = 0usize;
    let total = lists.len();
    for list in lists {
        let mut args = vec![
            "-type=bc".to_owned(),
            format!("-targets={}", list.join(",")),
        ];
        args.extend(list.iter().map(|_| "-input=in.bin".to_owned()));
        args.push("-output=out.bin".to_owned());
        let r = run(&prog, &args, dir.path());
        let ours = check_targets(&list, true);
        let agree = match &ours {
            Ok(_) => r.code == 0,
            // LLVM 22 reads a target ID that does not parse through an
            // empty std::optional: a segfault on some machines, a
            // conflict or a bundle on others. Ours is an error either way
            // (its text is checked by the unit tests).
            Err(TargetError::InvalidTargetId { .. }) => {
                undefined += 1;
                true
            }
            Err(e) => r.code == 1 && r.stderr == expected_stderr(&prog, e),
        };
        if !agree {
            let _ = writeln!(
                wrong,
                "  {list:?}:\n    ours: {:?}\n    llvm: exit {} {:?}",
                ours.map(|_| ()).map_err(|e| e.to_string()),
                r.code,
                r.stderr
            );
        }
    }
    if !wrong.is_empty() {
        return Err(format!("target checks differ:\n{wrong}").into());
    }
    // Most lists must be compared with LLVM, not waved through.
    if undefined * 4 > total {
        return Err(
            format!("{undefined} of {total} lists hold target IDs that do not parse").into(),
        );
    }
    Ok(())
}

/// The same checks when unbundling: no host is fine, two are not.
pub(super) fn unbundle_target_checks_like_llvm() -> Result<(), Failed> {
    let dir = tempdir();
    std::fs::write(dir.path().join("in.bin"), b"not a bundle").map_err(|e| e.to_string())?;
    let prog = llvm(TOOL);
    let lists: Vec<Vec<&str>> = vec![
        vec!["openmp-x86_64-unknown-linux-gnu"],
        vec![HOST, "host-x86_64-pc-linux-gnu"],
        vec![HOST, "hip-amdgcn-amd-amdhsa--gfx906"],
        vec![
            "hip-amdgcn-amd-amdhsa--gfx906",
            "hip-amdgcn-amd-amdhsa--gfx906:xnack+",
        ],
        vec![
            "hip-amdgcn-amd-amdhsa--gfx906:xnack-",
            "hip-amdgcn-amd-amdhsa--gfx906:xnack+",
        ],
        vec!["openmp-nvptx64-nvidia-cuda"],
        vec!["cuda-nvptx64-nvidia-cuda--sm_70"],
        vec![HOST, HOST],
    ];
    for list in lists {
        let mut args = vec![
            "-type=bc".to_owned(),
            "-unbundle".to_owned(),
            "-allow-missing-bundles".to_owned(),
            "-input=in.bin".to_owned(),
            format!("-targets={}", list.join(",")),
        ];
        args.extend((0..list.len()).map(|i| format!("-output=o{i}")));
        let r = run(&prog, &args, dir.path());
        match check_targets(&list, false) {
            Ok(_) => same(&format!("exit code for {list:?}"), r.code, 0)?,
            Err(e) => same(
                &format!("stderr for {list:?}"),
                r.stderr,
                expected_stderr(&prog, &e),
            )?,
        }
    }
    Ok(())
}
