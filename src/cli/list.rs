//! `crashsim list`: what there is to run and what is checked.

use super::ListArgs;
use super::sut::Choice;
use crate::check::Invariant;
use crate::exit::Exit;
use crate::sim::faults::KillPoint;
use crate::store::registry;
use crate::vfs::crash::Model;

pub fn list(args: &ListArgs) -> anyhow::Result<Exit> {
    if args.sut.sut.is_some() {
        return describe_sut(args);
    }
    super::scenarios::print_list(args.scenarios.as_deref())?;
    println!("\nimplementations (scenario key `store`):");
    for implementation in registry::all() {
        println!("  {:<16} {}", implementation.name(), implementation.description());
    }
    println!("\nmutants (`--mutant NAME`; `crashsim mutants` measures how fast each is caught):");
    for mutant in &crate::mutants::MUTANTS {
        println!("  {:<26} #{:<3} {}", mutant.name, mutant.mistake, mutant.description);
    }
    println!("\nkill points (scenario keys under [faults.<role>]):");
    for point in KillPoint::ALL {
        println!("  {:<32} {}", point.name(), point.describe());
    }
    println!("\npower-loss disk models ([power] model):");
    for model in Model::ALL {
        println!("  {:<16} {}", model.name(), model.describe());
    }
    println!("\ninvariants:");
    for invariant in Invariant::ALL {
        let status = if invariant.checked() { "" } else { " (not checked yet)" };
        println!("  {:<4} {}{status}", invariant.to_string(), invariant.title());
    }
    Ok(Exit::Pass)
}

/// `list --sut CMD`: the outside store as its handshake describes it, and
/// the kill points it lets the simulator reach.
fn describe_sut(args: &ListArgs) -> anyhow::Result<Exit> {
    let choice = Choice::from_args(&args.sut, super::ModeArg::InProcess, None)?;
    let Choice::Outside(adapter) = &choice else {
        return Ok(Exit::BadInput);
    };
    println!("{}", choice.describe());
    let vfs = adapter.vfs();
    let extension = match (vfs.version_text(), &vfs.unavailable) {
        (Some(version), _) => {
            format!("loaded by its SQLite {version}: power loss, the simulated clock and seeded randomness reach it")
        }
        (None, Some(why)) => format!("not offered: {why}"),
        (None, None) => format!(
            "NOT loaded: scenarios with power loss stop with exit code 2, and its SQLite reads the \
             machine's clock (docs/adapter-protocol.md, \"Power loss\"; its stderr says why: {})",
            crate::vfs::extension::ENV_EXTENSION
        ),
    };
    println!("crash VFS extension: {extension}");
    let unreachable = KillPoint::unreachable_by(&**adapter);
    println!("\nkill points:");
    for point in KillPoint::ALL {
        let reach = if unreachable.contains(&point) {
            "unreachable: the transaction is one call (call granularity)"
        } else {
            point.describe()
        };
        println!("  {:<32} {reach}", point.name());
    }
    if !adapter.files().is_empty() {
        println!("\nfiles its command names (recorded in reports and capsules):");
        for (file, hash) in adapter.files() {
            println!("  {file}  sha256 {hash}…");
        }
    }
    Ok(Exit::Pass)
}
