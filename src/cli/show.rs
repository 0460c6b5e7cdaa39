//! `crashsim show NAME [--out FILE [--force]]`: a built-in scenario's TOML,
//! printed or written to a file, as the starting point of one's own
//! scenario when there is no `scenarios/` folder at hand.

use std::io::{ErrorKind, Write};
use std::path::Path;

use anyhow::{Context, bail};

use super::ShowArgs;
use super::output::replay_command_prefix;
use crate::exit::Exit;
use crate::report::atomic;
use crate::scenario::builtin;

pub fn show(args: &ShowArgs) -> anyhow::Result<Exit> {
    let Some(builtin) = builtin::find(Path::new(&args.name)) else {
        bail!(
            "{:?} is not a built-in scenario (built-in: {}; `crashsim list` describes them)",
            args.name,
            builtin::names()
        );
    };
    let Some(out) = &args.out else {
        return match std::io::stdout().lock().write_all(builtin.text.as_bytes()) {
            // `crashsim show smoke | head` is fine: the reader has what it wanted.
            Err(error) if error.kind() != ErrorKind::BrokenPipe => Err(error).context("writing to stdout"),
            _ => Ok(Exit::Pass),
        };
    };
    // `symlink_metadata`: a dangling link is still something not to clobber.
    if !args.force && out.symlink_metadata().is_ok() {
        bail!("{}: already exists; pass --force to replace it", out.display());
    }
    atomic::write(out, builtin.text.as_bytes()).with_context(|| format!("writing {}", out.display()))?;
    eprintln!(
        "note: built-in scenario {} written to {}; run it with `{} run {}`",
        builtin.name,
        out.display(),
        replay_command_prefix(),
        out.display()
    );
    Ok(Exit::Pass)
}
