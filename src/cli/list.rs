//! `crashsim list`: what there is to run and what is checked, and which
//! kill points each scenario leaves out (a hazard a scenario never reaches
//! is a blind spot its verdicts cannot show: issue 25 §4).

use super::ListArgs;
use std::path::Path;

use super::sut::Choice;
use crate::check::Invariant;
use crate::exit::Exit;
use crate::faults::KillPoint;
use crate::scenario::builtin::{BUILTINS, Kind};
use crate::scenario::{self, Scenario};
use crate::store::registry;
use crate::vfs::crash::Model;

pub fn list(args: &ListArgs) -> anyhow::Result<Exit> {
    if args.sut.sut.is_some() {
        return describe_sut(args);
    }
    super::scenarios::print_list(args.scenarios.as_deref())?;
    print_left_out(args.scenarios.as_deref());
    outln!("\nimplementations (scenario key `store`):");
    for implementation in registry::all() {
        outln!("  {:<16} {}", implementation.name(), implementation.description());
    }
    outln!("\nmutants (`--mutant NAME`; `crashsim mutants` measures how fast each is caught):");
    for mutant in &crate::mutants::MUTANTS {
        outln!("  {:<26} #{:<3} {}", mutant.name, mutant.mistake, mutant.description);
    }
    outln!("\nkill points (scenario keys under [faults.<role>]):");
    for point in KillPoint::ALL {
        outln!("  {:<32} {}", point.name(), point.describe());
    }
    outln!("\npower-loss disk models ([power] model):");
    for model in Model::ALL {
        outln!("  {:<16} {}", model.name(), model.describe());
    }
    outln!("\ninvariants:");
    for invariant in Invariant::ALL {
        let status = if invariant.checked() { "" } else { " (not checked yet)" };
        outln!("  {:<4} {}{status}", invariant.to_string(), invariant.title());
    }
    Ok(Exit::Pass)
}

/// The kill points `scenario` never fires: those at rate 0 (none with
/// swarm, which may draw any), then those its store cannot reach.
pub fn left_out(scenario: &Scenario) -> (Vec<KillPoint>, Vec<KillPoint>) {
    let declared = scenario.faults.declared();
    let unreachable = registry::by_name(&scenario.store)
        .map(KillPoint::unreachable_by)
        .unwrap_or_default();
    let off = KillPoint::ALL
        .into_iter()
        .filter(|point| !declared.contains(point) && !unreachable.contains(point))
        .collect();
    (off, unreachable)
}

/// One line: `none`, or `leaves out: …` and `unreachable by its store: …`.
fn describe_left_out(scenario: &Scenario) -> String {
    let names = |points: &[KillPoint]| points.iter().map(|point| point.name()).collect::<Vec<_>>().join(", ");
    let (off, unreachable) = left_out(scenario);
    let mut parts = Vec::new();
    if !off.is_empty() {
        parts.push(format!("leaves out: {}", names(&off)));
    }
    if !unreachable.is_empty() {
        parts.push(format!("unreachable by its store: {}", names(&unreachable)));
    }
    match parts.is_empty() {
        true => "every kill point".to_string(),
        false => parts.join("; "),
    }
}

/// The kill points of each built-in scenario, then of each file in the
/// scenarios folder that is not a built-in's text (a folder that cannot be
/// read was reported by `print_list`).
fn print_left_out(dir: Option<&Path>) {
    outln!(
        "
kill points each scenario reaches (its file's comments say why it leaves any out):"
    );
    let builtins: Vec<_> = BUILTINS
        .iter()
        .filter(|builtin| builtin.kind == Kind::Scenario)
        .collect();
    for builtin in &builtins {
        if let Ok(loaded) = builtin.load() {
            outln!("  {:<16} {}", builtin.name, describe_left_out(&loaded.scenario));
        }
    }
    let dir = dir.unwrap_or(Path::new("scenarios"));
    let Ok(paths) = scenario::files_in(dir) else { return };
    for path in paths {
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        if builtins.iter().any(|builtin| builtin.text == text) {
            continue;
        }
        if let Ok(loaded) = scenario::load(&path) {
            outln!("  {:<16} {}", path.display(), describe_left_out(&loaded.scenario));
        }
    }
}

/// `list --sut CMD`: the outside store as its handshake describes it, and
/// the kill points it lets the simulator reach.
fn describe_sut(args: &ListArgs) -> anyhow::Result<Exit> {
    let choice = Choice::from_args(&args.sut, super::ModeArg::InProcess, None)?;
    let Choice::Outside(adapter) = &choice else {
        return Ok(Exit::BadInput);
    };
    outln!("{}", choice.describe());
    let vfs = adapter.vfs();
    let extension = match (vfs.version_text(), &vfs.unavailable) {
        (Some(version), _) => {
            format!(
                "loaded by its SQLite {version}: power loss, the simulated clock, seeded randomness and \
                 suspensions inside its calls ([preempt]) reach it"
            )
        }
        (None, Some(why)) => format!("not offered: {why}"),
        (None, None) => format!(
            "NOT loaded: scenarios with power loss or [preempt] stop with exit code 2, and its SQLite reads the \
             machine's clock (docs/adapter-protocol.md, \"Power loss\"; its stderr says why: {})",
            crate::vfs::extension::ENV_EXTENSION
        ),
    };
    outln!("crash VFS extension: {extension}");
    let capabilities = &adapter.identity().capabilities;
    outln!(
        "capabilities: {}",
        match capabilities.is_empty() {
            true => "none beyond version 1's ops".to_string(),
            false => capabilities.join(", "),
        }
    );
    outln!("\nbuilt-in scenarios (`run --skip-unsupported` skips those it cannot run):");
    for builtin in BUILTINS.iter().filter(|builtin| builtin.kind == Kind::Scenario) {
        let loaded = builtin.load()?;
        match crate::runner::unsupported(&loaded, &**adapter) {
            None => outln!("  {:<16} runs", builtin.name),
            Some(why) => outln!("  {:<16} cannot run: {why}", builtin.name),
        }
    }
    let unreachable = KillPoint::unreachable_by(&**adapter);
    outln!("\nkill points:");
    for point in KillPoint::ALL {
        let reach = if unreachable.contains(&point) {
            "unreachable: the transaction is one call (call granularity)"
        } else {
            point.describe()
        };
        outln!("  {:<32} {reach}", point.name());
    }
    if !adapter.files().is_empty() {
        outln!(
            "\nfiles of the store (its command names them or its hello lists them as `sources`; recorded in reports and capsules):"
        );
        for (file, hash) in adapter.files() {
            outln!("  {file}  sha256 {hash}…");
        }
    }
    Ok(Exit::Pass)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::faults::KILL_POINTS;

    fn parse(text: &str) -> Scenario {
        scenario::parse(text, Path::new("test.toml")).expect("valid")
    }

    #[test]
    fn every_shipped_scenario_reaches_every_kill_point() {
        for builtin in BUILTINS.iter().filter(|builtin| builtin.kind == Kind::Scenario) {
            let loaded = builtin.load().expect("valid");
            assert_eq!(
                left_out(&loaded.scenario),
                (Vec::new(), Vec::new()),
                "{} leaves out kill points; turn them on or say why in the file and here",
                builtin.name
            );
        }
    }

    #[test]
    fn a_scenario_that_turns_points_off_is_told_which() {
        let scenario =
            parse("[faults.writer]\nbefore_commit = \"1/10\"\n[faults.receiver]\nafter_effect_commit = \"1/9\"\n");
        let (off, unreachable) = left_out(&scenario);
        assert_eq!(off.len(), KILL_POINTS - 2);
        assert!(!off.contains(&KillPoint::WriterBeforeCommit));
        assert!(off.contains(&KillPoint::ReceiverBeforeEffectCommit));
        assert!(unreachable.is_empty());
        assert!(describe_left_out(&scenario).starts_with("leaves out: writer.after_commit, "));
        let swarm = parse("[faults]\nswarm = true\n");
        assert_eq!(describe_left_out(&swarm), "every kill point");
    }
}
