//! `crashsim list`: what there is to run and what is checked.

use anyhow::Context;

use super::ListArgs;
use crate::check::Invariant;
use crate::exit::Exit;
use crate::scenario;
use crate::sim::faults::KillPoint;
use crate::store::registry;
use crate::vfs::crash::Model;

pub fn list(args: &ListArgs) -> anyhow::Result<Exit> {
    let paths = scenario::files_in(&args.scenarios)
        .with_context(|| format!("{}: cannot list scenarios", args.scenarios.display()))?;
    println!("scenarios in {}:", args.scenarios.display());
    for path in paths {
        match scenario::load(&path) {
            Ok(loaded) => println!("  {:<16} {}", loaded.name, loaded.scenario.description),
            Err(error) => println!("  {:<16} INVALID: {error}", path.display()),
        }
    }
    let demonstrations = args.scenarios.join("demonstrations");
    if demonstrations.is_dir() {
        let paths = scenario::files_in(&demonstrations)
            .with_context(|| format!("{}: cannot list scenarios", demonstrations.display()))?;
        println!(
            "\ndemonstrations in {} (hazards shown, expected to fail):",
            demonstrations.display()
        );
        for path in paths {
            match scenario::load(&path) {
                Ok(loaded) => println!("  {:<16} {}", loaded.name, loaded.scenario.description),
                Err(error) => println!("  {:<16} INVALID: {error}", path.display()),
            }
        }
    }
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
