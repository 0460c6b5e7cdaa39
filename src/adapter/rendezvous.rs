//! crashsim's end of a suspension inside a store's call (`[preempt]`): the
//! store's process parks in crashsim's VFS extension at a scheduling point
//! (`crashsim_vfs::preempt`), says so with one byte in the seed's FIFO, and
//! waits on the control region until crashsim lets it go on or kills it.
//!
//! `AdapterProcess::call` polls the FIFO next to the process's answers: a
//! byte there means the call is parked, and the simulator lets other actors
//! run before it asks the same call again (`AdapterProcess::call` then
//! resumes the process instead of sending a new request).

use std::fs::File;
use std::io::Read;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::atomic::Ordering;

use crashsim_vfs::control::Control;
use crashsim_vfs::extension::CONTROL_FILE;
use crashsim_vfs::preempt::{At, FIFO_FILE};

/// One run's rendezvous: the control region (mapped here) and the FIFO.
pub struct Rendezvous {
    control: &'static Control,
    fifo: File,
}

impl std::fmt::Debug for Rendezvous {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Rendezvous").field("fifo", &self.fifo).finish()
    }
}

impl Rendezvous {
    /// The rendezvous of the shared state in `dir`, if the run suspends
    /// calls (the simulator turned preemption on before the processes start).
    pub fn open(dir: &Path) -> std::io::Result<Option<Rendezvous>> {
        let control = Control::open(&dir.join(CONTROL_FILE))?;
        if control.preempt.load(Ordering::Acquire) == 0 {
            // SAFETY: mapped just now, used by nothing else.
            unsafe { Control::unmap(control) };
            return Ok(None);
        }
        // Read and write: the FIFO never reads as closed, however many
        // processes opened and closed it.
        let fifo = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(dir.join(FIFO_FILE));
        match fifo {
            Ok(fifo) => Ok(Some(Rendezvous { control, fifo })),
            Err(error) => {
                // SAFETY: as above.
                unsafe { Control::unmap(control) };
                Err(error)
            }
        }
    }

    pub fn fd(&self) -> RawFd {
        self.fifo.as_raw_fd()
    }

    /// After the FIFO polled readable: the parked call's ticket and point.
    pub fn take(&self) -> Option<(u64, At)> {
        let mut bytes = [0u8; 64];
        let mut any = false;
        while let Ok(read @ 1..) = (&self.fifo).read(&mut bytes) {
            any = true;
            if read < bytes.len() {
                break;
            }
        }
        any.then(|| {
            self.control.parked_one();
            self.control.parked()
        })
    }

    /// The statement the actor whose step runs was running last (the one a
    /// call that just parked is in), if the ring still holds it.
    pub fn running_statement(&self) -> Option<String> {
        self.control.statements.last_of_running().map(|statement| statement.sql)
    }

    /// A parked call's process was killed: it is parked no more.
    pub fn killed_parked(&self) {
        self.control.unparked();
    }

    /// Lets the process parked with `ticket` go on.
    pub fn resume(&self, ticket: u64) {
        self.control.resume(ticket);
    }
}

impl Drop for Rendezvous {
    fn drop(&mut self) {
        // SAFETY: the mapping is this rendezvous's own, and the processes
        // that used it through here are gone with the run.
        unsafe { Control::unmap(self.control) };
    }
}
