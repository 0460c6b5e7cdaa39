//! `crashsim list`: what there is to run and what is checked.

use super::ListArgs;
use crate::check::Invariant;
use crate::exit::Exit;
use crate::sim::faults::KillPoint;
use crate::store::registry;
use crate::vfs::crash::Model;

pub fn list(args: &ListArgs) -> anyhow::Result<Exit> {
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
        let status = if invariant.checked() {
            ""
        } else {
            " (not checked yet: needs leases)"
        };
        println!("  {:<4} {}{status}", invariant.to_string(), invariant.title());
    }
    Ok(Exit::Pass)
}
