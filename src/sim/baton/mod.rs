//! The baton: an in-process store's calls suspended inside its own SQLite
//! (`[preempt]`), with no process of their own.
//!
//! Each of the store's connections runs its calls on a coroutine of its own
//! (`corosensei`: a stack of its own, switched to and from on the seed's one
//! thread, in nanoseconds). At a scheduling point the shim asks the baton
//! (`crashsim_vfs::local`): the call is counted in the run's control region
//! and, at the armed point or a wait for a lock, its coroutine yields. The
//! simulator goes on with other actors, and when the actor asks the same
//! call again the coroutine resumes where SQLite stopped. Only one
//! coroutine runs at a time, and where each suspension lands comes from the
//! seed, so a run is as deterministic as one without suspensions.
//!
//! This is what a store's process does at the FIFO (`crashsim_vfs::preempt`),
//! minus the process: the simulator's side is the same (`Control`'s
//! points, parks and tickets), and the store never knows.
//!
//! A suspended call that is killed (its actor killed, a power cut) resumes
//! dead: nothing it does reaches the files, and it returns (`Conn::kill`).
//! A store whose connections share state (one committer for all of them:
//! `group_commit`) cannot be suspended this way.

mod proxy;

pub use proxy::BatonSystem;

use std::any::Any;
use std::cell::{Cell, RefCell};

use corosensei::stack::DefaultStack;
use corosensei::{Coroutine, CoroutineResult, Yielder};
use crashsim_vfs::control::Control;
use crashsim_vfs::preempt::At;

use crate::store::StoreError;

/// Each connection's stack: SQLite and the store above it need far less;
/// pages never touched are never committed.
const STACK_BYTES: usize = 1 << 20;

/// Stacks of closed connections kept for the next ones: a stack is
/// mapped, guarded and faulted in once, not once per connection (actors
/// reconnect at every restart).
const POOLED_STACKS: usize = 32;

type Work = Box<dyn FnOnce() -> Box<dyn Any>>;

/// What the simulator hands a connection's coroutine.
enum Input {
    /// A call to run.
    Run(Work),
    /// The suspended call goes on.
    Resume,
    /// The suspended call goes on dead: it only returns.
    Kill,
    /// The connection is gone: the coroutine ends.
    Close,
}

/// What the coroutine hands back.
enum Output {
    Parked(At),
    Done(Box<dyn Any>),
}

/// The call running on this thread: its coroutine, its run, and whether it
/// was killed.
#[derive(Clone, Copy)]
struct Current {
    yielder: *const Yielder<Input, Output>,
    control: &'static Control,
    dead: bool,
    /// Its last park was a wait at a refused lock, and no sleep has
    /// followed it (`At::parks_after`, the rule the extension keeps too).
    waited: bool,
}

thread_local! {
    static CURRENT: Cell<Option<Current>> = const { Cell::new(None) };
    static STACKS: RefCell<Vec<DefaultStack>> = const { RefCell::new(Vec::new()) };
}

/// A stack for a new connection: a pooled one, or a new mapping.
fn stack() -> Result<DefaultStack, StoreError> {
    match STACKS.with(|stacks| stacks.borrow_mut().pop()) {
        Some(stack) => Ok(stack),
        None => DefaultStack::new(STACK_BYTES)
            .map_err(|error| StoreError::Environment(format!("a coroutine's stack for a connection: {error}"))),
    }
}

/// A finished connection's stack goes back to the pool (or is unmapped).
fn pool(stack: DefaultStack) {
    STACKS.with(|stacks| {
        let mut stacks = stacks.borrow_mut();
        if stacks.len() < POOLED_STACKS {
            stacks.push(stack);
        }
    });
}

fn current() -> Option<Current> {
    CURRENT.with(Cell::get)
}

fn set_current(current: Option<Current>) {
    CURRENT.with(|cell| cell.set(current));
}

/// Installs the baton in the shim (once per process).
pub fn install() {
    crashsim_vfs::local::install(crashsim_vfs::local::Baton { running, park, dead });
}

fn running() -> Option<&'static Control> {
    current()
        .filter(|current| !current.dead && !current.yielder.is_null())
        .map(|current| current.control)
}

fn dead() -> bool {
    current().is_some_and(|current| current.dead)
}

/// The running call parks at `at`: its coroutine yields until the
/// simulator resumes it (or kills it).
fn park(at: At) {
    let Some(now) = current().filter(|current| !current.dead && !current.yielder.is_null()) else {
        return;
    };
    let Some(waited) = at.parks_after(now.waited) else {
        set_current(Some(Current { waited: false, ..now }));
        return;
    };
    now.control.note_park(at);
    // SAFETY: `yielder` is the running coroutine's own, set by its body
    // (`Conn::new`), which is below this frame on the same stack.
    let input = unsafe { &*now.yielder }.suspend(Output::Parked(at));
    set_current(Some(Current {
        dead: matches!(input, Input::Kill),
        waited,
        ..now
    }));
}

/// One connection's coroutine.
pub(crate) struct Conn {
    /// `None` only once dropped (its stack back in the pool).
    coroutine: Option<Coroutine<Input, Output, (), DefaultStack>>,
    control: &'static Control,
    /// The call suspended inside SQLite, by name, if one is.
    parked: Option<&'static str>,
}

impl Conn {
    pub(crate) fn new(control: &'static Control) -> Result<Conn, StoreError> {
        let stack = stack()?;
        let coroutine = Coroutine::with_stack(stack, move |yielder: &Yielder<Input, Output>, first: Input| {
            let mut input = first;
            loop {
                input = match input {
                    Input::Run(work) => {
                        set_current(Some(Current {
                            yielder,
                            control,
                            dead: false,
                            waited: false,
                        }));
                        let out = work();
                        set_current(None);
                        yielder.suspend(Output::Done(out))
                    }
                    Input::Close => return,
                    // Nothing is suspended: nothing to go on with.
                    Input::Resume | Input::Kill => yielder.suspend(Output::Done(Box::new(()))),
                };
            }
        });
        Ok(Conn {
            coroutine: Some(coroutine),
            control,
            parked: None,
        })
    }

    fn resume(&mut self, input: Input) -> Output {
        /// Back on crashsim's own stack no call runs, even when the call
        /// panicked (`resume` passes the panic on): a later connection
        /// of this thread must not find a coroutine that is gone.
        struct Clear;
        impl Drop for Clear {
            fn drop(&mut self) {
                set_current(None);
            }
        }
        let _clear = Clear;
        match self.coroutine.as_mut().map(|coroutine| coroutine.resume(input)) {
            Some(CoroutineResult::Yield(output)) => output,
            Some(CoroutineResult::Return(())) | None => Output::Done(Box::new(())),
        }
    }

    /// Runs call `name` (`work`), or lets it go on if it is the one
    /// suspended. A suspension answers `Preempted`: ask the same call again.
    pub(crate) fn call<T: 'static>(
        &mut self,
        name: &'static str,
        work: impl FnOnce() -> T + 'static,
    ) -> Result<T, StoreError> {
        let output = match self.parked.take() {
            Some(parked) if parked == name => {
                self.control.unparked();
                self.resume(Input::Resume)
            }
            Some(parked) => {
                self.parked = Some(parked);
                return Err(StoreError::Broken(format!(
                    "crashsim asked `{name}` of a connection whose `{parked}` was suspended: a crashsim bug \
                     (a suspended call is asked again)"
                )));
            }
            None => self.resume(Input::Run(Box::new(move || Box::new(work()) as Box<dyn Any>))),
        };
        match output {
            Output::Done(value) => value
                .downcast::<T>()
                .map(|value| *value)
                .map_err(|_| StoreError::Broken(format!("`{name}` answered another call's result: a crashsim bug"))),
            Output::Parked(at) => {
                self.control.parked_one();
                self.parked = Some(name);
                let sql = self.control.statements.last_of_running().map(|statement| statement.sql);
                Err(StoreError::Preempted {
                    point: at.describe(),
                    sql,
                })
            }
        }
    }

    /// Whether a call is suspended.
    pub(crate) fn parked(&self) -> bool {
        self.parked.is_some()
    }

    /// Kills the suspended call, if one is: it goes on dead until it returns
    /// (what it returns is dropped with the connection's process, which
    /// has none).
    pub(crate) fn kill(&mut self) {
        if self.parked.take().is_none() {
            return;
        }
        self.control.unparked();
        // A dead call never parks again (`running` is `None` for it).
        let mut output = self.resume(Input::Kill);
        while let Output::Parked(_) = output {
            output = self.resume(Input::Kill);
        }
        // What it answered (a connection its open made, say) goes dead too.
        self.dead_while(|| drop(output));
    }

    /// Runs `drop` as a dead call would: nothing it writes reaches the files.
    pub(crate) fn dead_while(&self, drop: impl FnOnce()) {
        set_current(Some(Current {
            yielder: std::ptr::null(),
            control: self.control,
            dead: true,
            waited: false,
        }));
        drop();
        set_current(None);
    }
}

impl Drop for Conn {
    fn drop(&mut self) {
        self.kill();
        if self.coroutine.as_ref().is_some_and(|coroutine| !coroutine.done()) {
            let _ = self.resume(Input::Close);
        }
        // Only a coroutine that returned gives its stack back; one that
        // did not (a panic passed on) unwinds and unmaps it when dropped.
        if let Some(coroutine) = self.coroutine.take().filter(Coroutine::done) {
            pool(coroutine.into_stack());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crashsim_vfs::preempt::Kind;

    fn control() -> &'static Control {
        let control = Control::leaked();
        control.enable_preempt(&[Kind::Sync]);
        install();
        control
    }

    /// What a store's call does at a sync: the shim's scheduling point.
    fn sync_point() -> bool {
        crashsim_vfs::local::point(At::sync(2));
        dead()
    }

    #[test]
    fn a_parked_call_answers_preempted_and_goes_on_when_asked_again() {
        let control = control();
        let mut conn = Conn::new(control).unwrap();
        control.arm_preempt(Some(2));
        let work = || (sync_point(), sync_point(), 7);
        let first = conn.call("append", work);
        assert!(
            matches!(&first, Err(StoreError::Preempted { point, .. }) if point == "xSync of the WAL"),
            "{first:?}"
        );
        assert!(running().is_none(), "back on crashsim's stack");
        assert!(
            matches!(conn.call("load", || 0), Err(StoreError::Broken(_))),
            "another call"
        );
        assert_eq!(
            conn.call("append", work).unwrap(),
            (false, false, 7),
            "the same call goes on"
        );
        assert_eq!(
            control.parks[Kind::Sync.index()].load(std::sync::atomic::Ordering::Acquire),
            1
        );
        control.disarm_preempt();
        assert_eq!(conn.call("load", || 3).unwrap(), 3, "the next call runs");
    }

    #[test]
    fn a_killed_call_goes_on_dead_and_writes_nothing() {
        let control = control();
        let mut conn = Conn::new(control).unwrap();
        control.arm_preempt(Some(1));
        let seen = std::rc::Rc::new(Cell::new(None));
        let after = std::rc::Rc::clone(&seen);
        let parked = conn.call("commit", move || {
            sync_point();
            after.set(Some(dead()));
        });
        assert!(matches!(parked, Err(StoreError::Preempted { .. })));
        conn.kill();
        assert_eq!(seen.get(), Some(true), "resumed dead");
        assert!(!conn.parked() && !dead());
        let mut during = false;
        conn.dead_while(|| during = dead());
        assert!(during && !dead());
    }

    #[test]
    fn a_sleep_right_after_a_wait_at_a_refused_lock_does_not_park_again() {
        let control = control();
        control.arm_preempt(None);
        control.parked_one();
        let mut conn = Conn::new(control).unwrap();
        let write_lock = At::shm_busy(0, 1, 2 | 8);
        let work = move || {
            crashsim_vfs::local::refused(write_lock);
            // SQLite's busy handler, about to retry the lock: waited already.
            assert!(crashsim_vfs::local::slept());
            // Refused again: the next sleep is a wait of its own.
            assert!(crashsim_vfs::local::slept());
            5
        };
        assert!(
            matches!(conn.call("append", work), Err(StoreError::Preempted { .. })),
            "at the lock"
        );
        assert!(
            matches!(conn.call("append", work), Err(StoreError::Preempted { point, .. }) if point == "xSleep in the busy handler"),
            "at the second sleep only"
        );
        assert_eq!(conn.call("append", work).unwrap(), 5);
        assert_eq!(
            control.parks[Kind::Busy.index()].load(std::sync::atomic::Ordering::Acquire),
            2
        );
    }

    #[test]
    fn a_closed_connection_gives_its_stack_to_the_next() {
        let control = control();
        let before = STACKS.with(|stacks| stacks.borrow().len());
        drop(Conn::new(control).unwrap());
        assert_eq!(STACKS.with(|stacks| stacks.borrow().len()), before + 1, "pooled");
        let conn = Conn::new(control).unwrap();
        assert_eq!(STACKS.with(|stacks| stacks.borrow().len()), before, "taken again");
        drop(conn);
    }

    #[test]
    fn a_call_that_panics_leaves_no_call_running() {
        let control = control();
        let mut conn = Conn::new(control).unwrap();
        let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let _ = conn.call("heads", || -> u32 { panic!("the store's own bug") });
        }));
        assert!(panicked.is_err());
        assert!(current().is_none());
        drop(conn);
    }
}
