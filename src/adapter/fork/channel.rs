//! The control channel: a `SOCK_SEQPACKET` Unix socket, so one `sendmsg` is
//! one message (no framing to get wrong), and file descriptors ride along
//! as `SCM_RIGHTS` ancillary data. Thin `libc` wrappers; nothing here knows
//! what the messages say.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

/// The largest message either side sends (answers are a few dozen bytes;
/// a longer one is cut, and then does not parse).
const MAX_MESSAGE: usize = 4 * 1024;
/// The most descriptors one message carries (a child's stdin, stdout, stderr).
const MAX_FDS: usize = 3;

/// A connected pair of sockets, both close-on-exec: crashsim keeps the
/// first, the server gets the second as its stdin (which `dup2` makes
/// inheritable).
pub fn pair() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: `fds` has room for the two descriptors socketpair writes.
    let done = unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds.as_mut_ptr()) };
    if done != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created and are owned by no one else.
    let pair = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    close_on_exec(&[fds[0], fds[1]])?;
    Ok(pair)
}

// Linux makes descriptors close-on-exec as it creates them; elsewhere (macOS)
// `close_on_exec` sets the flag right after, and a process that another
// job's thread starts in between may inherit them (a pipe then closes late).
#[cfg(target_os = "linux")]
const SOCK_CLOEXEC: libc::c_int = libc::SOCK_CLOEXEC;
#[cfg(not(target_os = "linux"))]
const SOCK_CLOEXEC: libc::c_int = 0;
#[cfg(target_os = "linux")]
const MSG_CMSG_CLOEXEC: libc::c_int = libc::MSG_CMSG_CLOEXEC;
#[cfg(not(target_os = "linux"))]
const MSG_CMSG_CLOEXEC: libc::c_int = 0;

#[cfg(target_os = "linux")]
fn close_on_exec(_fds: &[RawFd]) -> io::Result<()> {
    Ok(())
}

#[cfg(not(target_os = "linux"))]
fn close_on_exec(fds: &[RawFd]) -> io::Result<()> {
    for &fd in fds {
        // SAFETY: F_SETFD on a descriptor this process owns.
        if unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) } != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

#[cfg(target_os = "linux")]
fn raw_pipe(fds: &mut [libc::c_int; 2]) -> libc::c_int {
    // SAFETY: `fds` has room for the two descriptors pipe2 writes.
    unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) }
}

#[cfg(not(target_os = "linux"))]
fn raw_pipe(fds: &mut [libc::c_int; 2]) -> libc::c_int {
    // SAFETY: `fds` has room for the two descriptors pipe writes.
    unsafe { libc::pipe(fds.as_mut_ptr()) }
}

/// A pipe, both ends close-on-exec: (read end, write end).
pub fn pipe() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as libc::c_int; 2];
    if raw_pipe(&mut fds) != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: both descriptors were just created and are owned by no one else.
    let pipe = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    close_on_exec(&fds)?;
    Ok(pipe)
}

/// Sends `message` as one datagram, with `fds` attached.
pub fn send(socket: &impl AsRawFd, message: &[u8], fds: &[RawFd]) -> io::Result<()> {
    assert!(fds.len() <= MAX_FDS, "at most {MAX_FDS} descriptors per message");
    let mut iov = libc::iovec {
        iov_base: message.as_ptr() as *mut libc::c_void,
        iov_len: message.len(),
    };
    let fd_bytes = std::mem::size_of_val(fds) as libc::c_uint;
    // SAFETY: CMSG_SPACE only computes a size.
    let space = unsafe { libc::CMSG_SPACE(fd_bytes) } as usize;
    // u64s keep the buffer aligned for `cmsghdr`.
    let mut control = vec![0u64; space.div_ceil(8).max(1)];
    // SAFETY: zeroed msghdr is a valid "no name, no data" header.
    let mut header: libc::msghdr = unsafe { std::mem::zeroed() };
    header.msg_iov = &mut iov;
    header.msg_iovlen = 1;
    if !fds.is_empty() {
        header.msg_control = control.as_mut_ptr() as *mut libc::c_void;
        header.msg_controllen = space as _;
        // SAFETY: the control buffer is `space` bytes, room for one cmsghdr
        // with `fds.len()` descriptors, as CMSG_SPACE computed.
        unsafe {
            let cmsg = libc::CMSG_FIRSTHDR(&header);
            (*cmsg).cmsg_level = libc::SOL_SOCKET;
            (*cmsg).cmsg_type = libc::SCM_RIGHTS;
            (*cmsg).cmsg_len = libc::CMSG_LEN(fd_bytes) as _;
            std::ptr::copy_nonoverlapping(fds.as_ptr(), libc::CMSG_DATA(cmsg) as *mut RawFd, fds.len());
        }
    }
    loop {
        // SAFETY: the header points at live buffers for the call.
        let sent = unsafe { libc::sendmsg(socket.as_raw_fd(), &header, libc::MSG_NOSIGNAL) };
        if sent >= 0 {
            return Ok(());
        }
        let error = io::Error::last_os_error();
        if error.kind() != io::ErrorKind::Interrupted {
            return Err(error);
        }
    }
}

/// What `receive` got.
pub enum Received {
    Message(Vec<u8>, Vec<OwnedFd>),
    /// The other side closed the channel (it exited).
    Closed,
    /// Nothing came within the limit.
    TimedOut,
}

/// Waits for one datagram (at most `limit`, or for ever with `None`), with
/// the descriptors attached to it.
pub fn receive(socket: &impl AsRawFd, limit: Option<Duration>) -> io::Result<Received> {
    if let Some(limit) = limit
        && !readable(socket.as_raw_fd(), limit)?
    {
        return Ok(Received::TimedOut);
    }
    let mut buffer = vec![0u8; MAX_MESSAGE];
    let mut iov = libc::iovec {
        iov_base: buffer.as_mut_ptr() as *mut libc::c_void,
        iov_len: buffer.len(),
    };
    // SAFETY: CMSG_SPACE only computes a size.
    let space = unsafe { libc::CMSG_SPACE((MAX_FDS * std::mem::size_of::<RawFd>()) as libc::c_uint) } as usize;
    let mut control = vec![0u64; space.div_ceil(8)];
    // SAFETY: zeroed msghdr is a valid "no name, no data" header.
    let mut header: libc::msghdr = unsafe { std::mem::zeroed() };
    header.msg_iov = &mut iov;
    header.msg_iovlen = 1;
    header.msg_control = control.as_mut_ptr() as *mut libc::c_void;
    header.msg_controllen = space as _;
    let read = loop {
        // SAFETY: the header points at live buffers for the call.
        let read = unsafe { libc::recvmsg(socket.as_raw_fd(), &mut header, MSG_CMSG_CLOEXEC) };
        if read >= 0 {
            break read as usize;
        }
        let error = io::Error::last_os_error();
        if error.kind() != io::ErrorKind::Interrupted {
            return Err(error);
        }
    };
    let mut fds = Vec::new();
    // SAFETY: walks the control messages recvmsg filled in, within
    // `msg_controllen`; each SCM_RIGHTS payload is an array of descriptors
    // now owned by this process.
    unsafe {
        let mut cmsg = libc::CMSG_FIRSTHDR(&header);
        while !cmsg.is_null() {
            if (*cmsg).cmsg_level == libc::SOL_SOCKET && (*cmsg).cmsg_type == libc::SCM_RIGHTS {
                let data = libc::CMSG_DATA(cmsg) as *const RawFd;
                let count = ((*cmsg).cmsg_len as usize - libc::CMSG_LEN(0) as usize) / std::mem::size_of::<RawFd>();
                for index in 0..count {
                    fds.push(OwnedFd::from_raw_fd(std::ptr::read_unaligned(data.add(index))));
                }
            }
            cmsg = libc::CMSG_NXTHDR(&header, cmsg);
        }
    }
    #[cfg(not(target_os = "linux"))]
    close_on_exec(&fds.iter().map(AsRawFd::as_raw_fd).collect::<Vec<_>>())?;
    if read == 0 && fds.is_empty() {
        return Ok(Received::Closed);
    }
    buffer.truncate(read);
    Ok(Received::Message(buffer, fds))
}

/// Waits until `fd` has something to read (or is closed), at most `limit`.
pub fn readable(fd: RawFd, limit: Duration) -> io::Result<bool> {
    let mut poll = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    let millis = limit.as_millis().clamp(1, i32::MAX as u128) as libc::c_int;
    loop {
        // SAFETY: one valid pollfd, for the duration of the call.
        let ready = unsafe { libc::poll(&mut poll, 1, millis) };
        match ready {
            0 => return Ok(false),
            n if n > 0 => return Ok(true),
            _ => {
                let error = io::Error::last_os_error();
                if error.kind() != io::ErrorKind::Interrupted {
                    return Err(error);
                }
            }
        }
    }
}
