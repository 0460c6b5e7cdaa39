//! Reading an adapter's answers: one line at a time from its stdout, with
//! a wall-clock limit, and, in a run that suspends calls (`[preempt]`), word
//! from the rendezvous that the process parked instead of answering.

use std::fs::File;
use std::io::Read;
use std::os::fd::{AsRawFd, RawFd};
use std::time::Duration;

use super::rendezvous::Rendezvous;
use crashsim_vfs::preempt::At;

pub(super) enum ReadError {
    Eof,
    Timeout,
    Io(std::io::Error),
    /// The process parked inside its SQLite (its ticket, and where).
    Parked(u64, At),
}

/// Lines from a child's stdout, with a time limit on each.
pub(super) struct Lines {
    stdout: File,
    buffer: Vec<u8>,
    /// Where a read lands: allocated (and zeroed) once per process, not
    /// once per answer.
    chunk: Box<[u8]>,
}

impl Lines {
    pub(super) fn new(stdout: File) -> Lines {
        Lines {
            stdout,
            buffer: Vec::new(),
            chunk: vec![0u8; 16 * 1024].into_boxed_slice(),
        }
    }

    /// The next line, or, with a `rendezvous`, word that the process parked.
    pub(super) fn read_line(
        &mut self,
        timeout: Duration,
        rendezvous: Option<&Rendezvous>,
    ) -> Result<String, ReadError> {
        #[expect(
            clippy::disallowed_methods,
            reason = "a wall-clock limit on an adapter's answer; it never steers a run whose store answers"
        )]
        let started = std::time::Instant::now();
        // Bytes already searched for the end of the line.
        let mut searched = 0;
        loop {
            if let Some(end) = self.buffer[searched..].iter().position(|byte| *byte == b'\n') {
                let line: Vec<u8> = self.buffer.drain(..=searched + end).collect();
                return Ok(match String::from_utf8(line) {
                    Ok(line) => line,
                    Err(error) => String::from_utf8_lossy(error.as_bytes()).into_owned(),
                });
            }
            searched = self.buffer.len();
            let left = timeout.saturating_sub(started.elapsed());
            if left.is_zero() {
                return Err(ReadError::Timeout);
            }
            match rendezvous {
                None => {
                    if !super::fork::readable(self.stdout.as_raw_fd(), left).map_err(ReadError::Io)? {
                        return Err(ReadError::Timeout);
                    }
                }
                Some(rendezvous) => {
                    match readable_either(self.stdout.as_raw_fd(), rendezvous.fd(), left).map_err(ReadError::Io)? {
                        Ready::Neither => return Err(ReadError::Timeout),
                        Ready::Second => {
                            if let Some((ticket, at)) = rendezvous.take() {
                                return Err(ReadError::Parked(ticket, at));
                            }
                            continue;
                        }
                        Ready::First => {}
                    }
                }
            }
            match self.stdout.read(&mut self.chunk) {
                Ok(0) => return Err(ReadError::Eof),
                Ok(read) => self.buffer.extend_from_slice(&self.chunk[..read]),
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
                Err(error) => return Err(ReadError::Io(error)),
            }
        }
    }
}

enum Ready {
    First,
    Second,
    Neither,
}

/// Waits up to `limit` for `first` or `second` to be readable (`first`
/// wins a tie: an answer is read before a park).
fn readable_either(first: RawFd, second: RawFd, limit: Duration) -> std::io::Result<Ready> {
    let poll = |fd| libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    let mut fds = [poll(first), poll(second)];
    let millis = limit.as_millis().clamp(1, i32::MAX as u128) as libc::c_int;
    loop {
        // SAFETY: two valid pollfds, for the duration of the call.
        let ready = unsafe { libc::poll(fds.as_mut_ptr(), 2, millis) };
        match ready {
            0 => return Ok(Ready::Neither),
            n if n > 0 => {
                return Ok(if fds[0].revents != 0 {
                    Ready::First
                } else {
                    Ready::Second
                });
            }
            _ => {
                let error = std::io::Error::last_os_error();
                if error.kind() != std::io::ErrorKind::Interrupted {
                    return Err(error);
                }
            }
        }
    }
}
