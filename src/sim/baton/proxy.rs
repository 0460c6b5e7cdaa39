//! The store as the simulator sees it under the baton: a `System` whose
//! stores and receivers run every call on their connection's coroutine
//! (`Conn`). Arguments are owned copies, since a suspended call outlives
//! the step that asked it. The run's own connections (the observer, the
//! dump, backups) are crashsim's and run as they always do.

use crashsim_vfs::control::Control;

use super::Conn;
use crate::model::{Command, Head, OutboxRow, StoredEvent};
use crate::store::{
    Applied, Artifact, Backed, Handled, Leased, Lookup, Receiver, Request, Result, Retried, RetryPolicy, Snapshot,
    Store, StoreError, System, Timer, Who,
};

/// A `System` whose stores' and receivers' calls can be suspended.
pub struct BatonSystem {
    inner: Box<dyn System>,
    control: &'static Control,
}

impl BatonSystem {
    pub fn new(inner: Box<dyn System>, control: &'static Control) -> BatonSystem {
        BatonSystem { inner, control }
    }

    /// Opens a connection on a coroutine of its own: the open itself may
    /// wait for a lock a suspended call holds. An open that parks is given
    /// up (its connection dies with it) and answers `Busy`: the actor boots
    /// again later.
    fn open<T: ?Sized + 'static>(
        &mut self,
        who: &Who<'_>,
        open: fn(&mut dyn System, &Who<'_>) -> Result<Box<T>>,
    ) -> Result<(Conn, Box<T>)> {
        let mut conn = Conn::new(self.control)?;
        let system: *mut dyn System = &mut *self.inner;
        let (actor, incarnation) = (who.actor.to_string(), who.incarnation);
        let opened = conn.call("open", move || {
            let who = Who {
                actor: &actor,
                incarnation,
            };
            // SAFETY: the system outlives this call: `open` waits for it
            // to return, or kills it, before it returns itself.
            open(unsafe { &mut *system }, &who)
        });
        match opened {
            Ok(opened) => opened.map(|inner| (conn, inner)),
            Err(StoreError::Preempted { .. }) => {
                conn.kill();
                Err(StoreError::Busy)
            }
            Err(error) => Err(error),
        }
    }
}

impl System for BatonSystem {
    fn open_store(&mut self, who: &Who<'_>) -> Result<Box<dyn Store>> {
        let (conn, inner) = self.open(who, |system, who| system.open_store(who))?;
        Ok(Box::new(Handle::<dyn Store> {
            conn,
            inner: Box::into_raw(inner),
        }))
    }

    fn open_observer(&mut self) -> Result<Box<dyn Store>> {
        self.inner.open_observer()
    }

    fn open_receiver(&mut self, who: &Who<'_>) -> Result<Box<dyn Receiver>> {
        let (conn, inner) = self.open(who, |system, who| system.open_receiver(who))?;
        Ok(Box::new(Handle::<dyn Receiver> {
            conn,
            inner: Box::into_raw(inner),
        }))
    }

    fn dump(&mut self) -> Result<Snapshot> {
        self.inner.dump()
    }

    fn offers_peek(&self) -> bool {
        self.inner.offers_peek()
    }

    fn peek(&mut self, store: &std::path::Path, receiver: &std::path::Path) -> Result<Option<Snapshot>> {
        self.inner.peek(store, receiver)
    }

    fn artifacts(&mut self) -> Vec<Artifact> {
        self.inner.artifacts()
    }

    fn backup(&mut self, dest: &std::path::Path, part: u32) -> Result<Backed> {
        self.inner.backup(dest, part)
    }

    fn dump_backup(&mut self, dest: &std::path::Path) -> Result<Snapshot> {
        self.inner.dump_backup(dest)
    }
}

/// Forwards each listed method to the inner connection on its coroutine:
/// `name(args: types) -> result`, each argument turned into an owned value
/// by the expression given and lent back as the inner method wants it.
macro_rules! forward {
    ($($name:ident($($arg:ident: $ty:ty => $own:expr, $lend:expr);*) -> $out:ty;)*) => {
        $(
            // A `Copy` argument is its own owned copy (`x => x`).
            #[allow(clippy::redundant_locals)]
            fn $name(&mut self, $($arg: $ty),*) -> Result<$out> {
                $(let $arg = $own;)*
                let inner = self.inner;
                // SAFETY: `inner` is this handle's connection (`Handle`),
                // freed only in its `Drop`, after the coroutine let go of
                // it; no other call of it runs meanwhile (one per connection).
                self.conn.call(stringify!($name), move || unsafe { (*inner).$name($($lend),*) })?
            }
        )*
    };
}

/// A connection whose calls run on its coroutine: `T` is `dyn Store` or
/// `dyn Receiver`.
struct Handle<T: ?Sized> {
    conn: Conn,
    /// Made by `Box::into_raw` in `open_store` or `open_receiver`, freed
    /// once, in `Drop`.
    inner: *mut T,
}

impl<T: ?Sized> Handle<T> {
    /// A read of the connection's settings, on crashsim's stack: none
    /// while a call is suspended, which still holds the connection.
    fn settings<'a, R: 'a>(&'a self, read: impl FnOnce(&'a T) -> Option<R>) -> Option<R> {
        // SAFETY: as in `forward`; no call of it is under way.
        (!self.conn.parked()).then(|| read(unsafe { &*self.inner })).flatten()
    }
}

impl<T: ?Sized> Drop for Handle<T> {
    /// Closes the connection as a process would end: a killed suspended
    /// call first, and then, if one was, the connection dies with nothing
    /// more reaching the files; else it closes as it always does.
    fn drop(&mut self) {
        let inner = self.inner;
        // SAFETY: see `inner`; no call of it is under way once `kill` returned.
        let drop_inner = || drop(unsafe { Box::from_raw(inner) });
        let killed = self.conn.parked();
        self.conn.kill();
        match killed {
            true => self.conn.dead_while(drop_inner),
            false => drop_inner(),
        }
    }
}

impl Store for Handle<dyn Store> {
    forward! {
        load(workflow_id: &str => workflow_id.to_string(), &workflow_id) -> Vec<StoredEvent>;
        heads() -> Vec<Head>;
        commands(workflow_id: &str => workflow_id.to_string(), &workflow_id; event_seq: u64 => event_seq, event_seq) -> Vec<OutboxRow>;
        pending(limit: usize => limit, limit) -> Vec<OutboxRow>;
        begin() -> ();
        insert_event(
            workflow_id: &str => workflow_id.to_string(), &workflow_id;
            expected_seq: u64 => expected_seq, expected_seq;
            kind: &str => kind.to_string(), &kind;
            payload: &str => payload.to_string(), &payload
        ) -> u64;
        insert_command(
            workflow_id: &str => workflow_id.to_string(), &workflow_id;
            event_seq: u64 => event_seq, event_seq;
            index: usize => index, index;
            command: &Command => command.clone(), &command
        ) -> String;
        commit() -> ();
        rollback() -> ();
        mark_done(
            command_id: &str => command_id.to_string(), &command_id;
            result: Option<&str> => result.map(str::to_string), result.as_deref()
        ) -> bool;
        claim(
            owner: &str => owner.to_string(), &owner;
            lease_ticks: u64 => lease_ticks, lease_ticks;
            limit: usize => limit, limit
        ) -> Vec<Leased>;
        mark_done_leased(
            command_id: &str => command_id.to_string(), &command_id;
            token: u64 => token, token;
            result: Option<&str> => result.map(str::to_string), result.as_deref()
        ) -> bool;
        schedule_retry(
            command_id: &str => command_id.to_string(), &command_id;
            token: Option<u64> => token, token;
            error: &str => error.to_string(), &error;
            policy: &RetryPolicy => *policy, &policy;
            jitter_permille: u64 => jitter_permille, jitter_permille
        ) -> Option<Retried>;
        timers() -> Vec<Timer>;
        append(
            workflow_id: &str => workflow_id.to_string(), &workflow_id;
            expected_seq: u64 => expected_seq, expected_seq;
            kind: &str => kind.to_string(), &kind;
            payload: &str => payload.to_string(), &payload
        ) -> u64;
        append_with_commands(
            workflow_id: &str => workflow_id.to_string(), &workflow_id;
            expected_seq: u64 => expected_seq, expected_seq;
            kind: &str => kind.to_string(), &kind;
            payload: &str => payload.to_string(), &payload;
            commands: &[Command] => commands.to_vec(), &commands
        ) -> (u64, Vec<String>);
    }

    fn connection(&self) -> Option<&rusqlite::Connection> {
        self.settings(|inner| inner.connection())
    }

    fn synchronous(&self) -> Option<u8> {
        self.settings(|inner| inner.synchronous())
    }
}

impl Receiver for Handle<dyn Receiver> {
    forward! {
        begin() -> ();
        lookup(request: &Request => request.clone(), &request) -> Lookup;
        apply(request: &Request => request.clone(), &request) -> Applied;
        commit() -> ();
        rollback() -> ();
        purge_dedup(now: u64 => now, now; retention_ticks: u64 => retention_ticks, retention_ticks) -> u64;
        handle(request: &Request => request.clone(), &request) -> Handled;
    }

    fn connection(&self) -> Option<&rusqlite::Connection> {
        self.settings(|inner| inner.connection())
    }

    fn synchronous(&self) -> Option<u8> {
        self.settings(|inner| inner.synchronous())
    }
}
