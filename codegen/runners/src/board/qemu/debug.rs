//! Runs under QEMU's gdbstub: the connection, and RTT read through it as a probe reads a real
//! board's.

use super::*;

/// What a run under QEMU's gdbstub gave.
pub(in crate::board) struct GdbRun<T> {
    /// QEMU's exit status; `None` when it was killed at the time limit.
    pub status: Option<std::process::ExitStatus>,
    /// Its standard output and error.
    pub output: String,
    /// What the session over the gdbstub gave, or why the stub could not be reached.
    pub session: Result<T, DebugError>,
}

/// QEMU's arguments to start stopped at reset, its gdbstub listening on the Unix socket
/// `socket` (for [`run_under_gdb`]).
pub(in crate::board) fn gdb_args(socket: &Path) -> [String; 3] {
    let listen = format!("unix:{},server=on,wait=off", socket.display());
    ["-S".into(), "-gdb".into(), listen]
}

/// How long QEMU may take to open its gdbstub's socket.
pub(in crate::board) const GDB_CONNECT_TIME: Duration = Duration::from_secs(10);

/// Runs `command` (QEMU, stopped at reset, its gdbstub listening on `socket`) in `dir`, its
/// output captured in files there, and `session` over the gdbstub; QEMU is killed after
/// `timeout`, or at once when `session` says the firmware will not end by itself.
pub(in crate::board) fn run_under_gdb<T>(
    command: &mut Command,
    dir: &Path,
    board: &str,
    socket: &Path,
    timeout: Duration,
    session: impl FnOnce(&mut GdbStub) -> (T, bool),
) -> Result<GdbRun<T>, BoardError> {
    let deadline = Instant::now() + timeout;
    let mut child = spawn_captured(command, dir)?;
    let (session, ends) = match GdbStub::connect(socket, GDB_CONNECT_TIME) {
        Ok(mut stub) => {
            let (result, ends) = session(&mut stub);
            // The firmware goes on (to its exit, or to the kill) without the host.
            let _ = stub.detach();
            (Ok(result), ends)
        }
        Err(error) => (Err(error), false),
    };
    let left = match ends {
        true => deadline.saturating_duration_since(Instant::now()),
        false => Duration::ZERO,
    };
    let status = match wait_or_kill(&mut child, dir, board, left) {
        Ok(status) => Some(status),
        Err(BoardError::Timeout { .. }) => None,
        Err(other) => return Err(other),
    };
    let output = read_captured(dir)?;
    Ok(GdbRun {
        status,
        output,
        session,
    })
}

/// Runs one session over RTT through QEMU's gdbstub (see [`run_under_gdb`]); errors of the
/// debugging link itself are the run's error, the session's own are returned for
/// [`channel_session`].
pub(in crate::board) fn run_rtt(
    command: &mut Command,
    dir: &Path,
    board: &str,
    (socket, block, invocations): (&Path, u32, &[Invocation<'_>]),
    timeout: Duration,
) -> Result<ChannelOutcome, BoardError> {
    let run = run_under_gdb(command, dir, board, socket, timeout, |stub| {
        let session = rtt::stream(stub, block, invocations, timeout);
        // The firmware exits after its session, whether it ran or refused the bundle.
        let ends = matches!(
            session,
            Ok(_) | Err(RttError::Channel(ChannelError::Device(_)))
        );
        (session, ends)
    })?;
    let board = board.to_string();
    let session = match run.session.map_err(RttError::from).and_then(|s| s) {
        Ok(session) => Ok(session),
        Err(RttError::Channel(error)) => Err(error),
        // The firmware stopped mid-session: its exit status and output tell why.
        Err(RttError::Debug(DebugError::Exited)) => Err(ChannelError::Closed(String::new())),
        Err(RttError::Timeout { .. }) => return Err(BoardError::Timeout { board, timeout }),
        Err(source) => return Err(BoardError::Rtt { board, source }),
    };
    match run.status {
        Some(status) => Ok((status, run.output, session)),
        None => Err(BoardError::Timeout { board, timeout }),
    }
}
