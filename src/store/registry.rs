//! Implementations of the protocol, by name: what a scenario's `store` key
//! and the CLI's `list` command refer to.

use super::Implementation;
use super::group_commit::GroupCommit;
use super::reference::Reference;

/// Every implementation crashsim knows, the reference first.
pub fn all() -> Vec<&'static dyn Implementation> {
    vec![&Reference, &GroupCommit]
}

/// The implementation called `name`.
pub fn by_name(name: &str) -> Option<&'static dyn Implementation> {
    all().into_iter().find(|implementation| implementation.name() == name)
}

/// The names, for error messages.
pub fn names() -> Vec<&'static str> {
    all().iter().map(|implementation| implementation.name()).collect()
}
