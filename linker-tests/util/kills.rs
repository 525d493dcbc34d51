//! Runs of our binary killed with SIGKILL at points spread over their
//! run, for the trials that show a killed prune leaves the old file or
//! the new one, never a part of either.

use std::path::Path;
use std::process::{Command, Stdio};

use libtest_mimic::Failed;

use super::{md5_hex, ours, run, xorshift};

/// When round `round` of `rounds` kills a run that took `whole` µs once:
/// at random in the round's own slice of the first `1.25 × whole` µs, the
/// slices one after another, so that the kills spread over the whole run
/// whatever the seed (each round drawn from all of it, every kill of 20
/// fell before the end one run in a hundred); the last round, at twice
/// `whole` and more, after the end even on a machine loaded enough to
/// slow the run down by half.
pub fn kill_point(x: &mut u64, round: u64, rounds: u64, whole: u64) -> u64 {
    if round + 1 == rounds {
        return 2 * whole + xorshift(x) % (whole / 4).max(1);
    }
    let span = whole + whole / 4;
    let lo = span * round / rounds;
    let hi = (span * (round + 1) / rounds).max(lo + 1);
    lo + xorshift(x) % (hi - lo)
}

/// Runs our binary with `args` in `cwd`, its output thrown away, and kills
/// it with SIGKILL `micros` microseconds after it started (when it has not
/// ended by then); returns once it is gone.
pub fn ours_killed_after(args: &[&str], cwd: &Path, micros: u64) -> std::io::Result<()> {
    let mut child = Command::new(ours())
        .args(args)
        .current_dir(cwd)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()?;
    std::thread::sleep(std::time::Duration::from_micros(micros));
    let _ = child.kill();
    let _ = child.wait();
    Ok(())
}

/// `prune --keep KEEP --in-place WORK` (in `d`, `WORK` a copy of the file
/// `source` there each time) killed with SIGKILL at `rounds` points of
/// its run ([`kill_point`]): the file is the old one or the pruned one
/// each time, and both are seen.
pub fn old_or_new_when_killed(
    d: &Path,
    (source, work): (&str, &str),
    keep: &str,
    rounds: u64,
) -> Result<(), Failed> {
    let args = ["prune", "--keep", keep, "--in-place", work];
    let md5_of_work = || -> std::io::Result<String> { Ok(md5_hex(&std::fs::read(d.join(work))?)) };
    std::fs::copy(d.join(source), d.join(work))?;
    let old = md5_of_work()?;
    let start = std::time::Instant::now();
    run(&ours(), &args, d).ok()?;
    let whole = start.elapsed().as_micros().max(1000) as u64;
    let new = md5_of_work()?;
    if new == old {
        return Err("the prune changed nothing".into());
    }
    let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ whole;
    let (mut olds, mut news) = (0, 0);
    for round in 0..rounds {
        std::fs::copy(d.join(source), d.join(work))?;
        let after = kill_point(&mut x, round, rounds, whole);
        ours_killed_after(&args, d, after)?;
        match md5_of_work()? {
            h if h == old => olds += 1,
            h if h == new => news += 1,
            _ => {
                return Err(format!(
                    "round {round} (killed after {after} µs of {whole}): neither old nor new"
                )
                .into());
            }
        }
    }
    if olds == 0 || news == 0 {
        return Err(format!("{olds} old and {news} new in {rounds} kills: no spread").into());
    }
    Ok(())
}
