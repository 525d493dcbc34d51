//! `offload-kit completions SHELL` and `offload-kit manpages DIR`: shell
//! completions and man pages made from the command line's own definition,
//! so they never drift from `--help`.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Command;

use super::io::Output;

/// Print a shell completion script for offload-kit.
#[derive(clap::Args)]
#[command(after_help = "Examples:\n  \
    offload-kit completions bash > ~/.local/share/bash-completion/completions/offload-kit\n  \
    offload-kit completions zsh > ~/.zfunc/_offload-kit\n  \
    offload-kit completions fish > ~/.config/fish/completions/offload-kit.fish")]
pub struct CompletionsOpts {
    /// The shell to complete for.
    #[arg(value_enum)]
    shell: clap_complete::Shell,
}

impl CompletionsOpts {
    /// Prints the script for `cmd`, the whole command line's definition.
    pub fn run(self, mut cmd: Command) -> Result<()> {
        // Rendered in memory first: the generator panics on a write error.
        let mut script = Vec::new();
        clap_complete::generate(self.shell, &mut cmd, "offload-kit", &mut script);
        let mut out = std::io::stdout().lock();
        out.write_all(&script)
            .and_then(|()| out.flush())
            .context("cannot write the completion script")
    }
}

/// Write man pages: offload-kit.1 and one offload-kit-COMMAND.1 per command.
#[derive(clap::Args)]
#[command(after_help = "Example: offload-kit manpages ~/.local/share/man/man1")]
pub struct ManpagesOpts {
    /// Directory to write the pages in (created if missing). Pages of the
    /// same names are replaced.
    dir: PathBuf,
}

impl ManpagesOpts {
    /// Writes the pages of `cmd`, the whole command line's definition.
    pub fn run(self, cmd: Command) -> Result<()> {
        std::fs::create_dir_all(&self.dir)
            .with_context(|| format!("'{}': cannot create directory", self.dir.display()))?;
        let mut pages = vec![("offload-kit".to_string(), cmd.clone())];
        for sub in cmd.get_subcommands() {
            let name = format!("offload-kit-{}", sub.get_name());
            // The page's title and synopsis name the full command.
            let usage = format!("offload-kit {}", sub.get_name());
            let sub = sub.clone().name(name.clone()).bin_name(usage);
            pages.push((name, sub));
        }
        let mut written = Vec::new();
        for (name, page) in pages {
            let path = self.dir.join(format!("{name}.1"));
            let mut bytes = Vec::new();
            clap_mangen::Man::new(page)
                .render(&mut bytes)
                .with_context(|| format!("cannot render the page {name}.1"))?;
            let mut out = Output::create(&path)
                .with_context(|| format!("'{}': cannot create", path.display()))?;
            out.write_all(&bytes)
                .and_then(|()| out.commit())
                .with_context(|| format!("'{}': cannot write", path.display()))?;
            written.push(path);
        }
        // Named once all are written, so a closed pipe loses no page.
        let mut stdout = super::io::Report::stdout();
        for path in written {
            writeln!(stdout, "{}", path.display()).context("cannot write to stdout")?;
        }
        stdout.flush().context("cannot write to stdout")
    }
}
