//! The test-vector channel on QEMU's standard input and output: the command line that asks
//! the firmware for it, and one session per batch.

use super::*;

/// The word on the semihosting command line that asks the firmware for the channel; the
/// board crates' `host::CHANNEL_WORD`.
pub(in crate::board) const CHANNEL_WORD: &str = "kiln-channel";

/// The board's QEMU arguments for a run over the channel: standard input and output are the
/// semihosting console's alone (`-nographic` would put the serial port and monitor there).
pub(in crate::board) fn channel_command_line(args: &[String]) -> Vec<String> {
    let mut out = Vec::with_capacity(args.len() + 6);
    for arg in args {
        match arg.as_str() {
            "-nographic" => out.extend(
                ["-display", "none", "-monitor", "none", "-serial", "null"].map(String::from),
            ),
            _ => out.push(arg.clone()),
        }
    }
    out
}

/// What a run over the channel left: QEMU's exit status, its standard error, and the session's
/// runs or the error it ended in.
pub(in crate::board) type ChannelOutcome = (
    std::process::ExitStatus,
    String,
    Result<Vec<ChannelRun>, ChannelError>,
);

/// Runs `command` in `dir` with its standard input and output as the channel, on which a thread
/// runs the session of `invocations`; its standard error is captured. Kills QEMU after
/// `timeout`.
pub(in crate::board) fn run_channel(
    command: &mut Command,
    dir: &Path,
    board: &str,
    invocations: &[Invocation<'_>],
    timeout: Duration,
) -> Result<ChannelOutcome, BoardError> {
    let err = dir.join("qemu.stderr");
    let file = std::fs::File::create(&err).map_err(io_error(&err))?;
    let mut child = command
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(file)
        .spawn()
        .map_err(io_error(Path::new(command.get_program())))?;
    let (Some(to_device), Some(from_device)) = (child.stdin.take(), child.stdout.take()) else {
        unreachable!("both were asked to be piped")
    };
    // The session's thread owns its invocations: `None` is a reset.
    let owned: Vec<Option<Vec<Vec<u8>>>> = (invocations.iter())
        .map(|i| match i {
            Invocation::Run(inputs) => Some(inputs.to_vec()),
            Invocation::Reset => None,
        })
        .collect();
    let session = std::thread::spawn(move || {
        let mut from_device = from_device;
        let invocations: Vec<Invocation> = (owned.iter())
            .map(|i| {
                i.as_ref()
                    .map_or(Invocation::Reset, |inputs| Invocation::Run(inputs))
            })
            .collect();
        let result = channel::Host::new(&mut from_device, to_device).session(&invocations);
        // Whatever else the device writes, so that it never blocks on a full pipe.
        let _ = std::io::copy(&mut from_device, &mut std::io::sink());
        result
    });
    let status = match wait_or_kill(&mut child, dir, board, timeout) {
        Ok(status) => status,
        Err(e) => {
            let _ = session.join();
            return Err(e);
        }
    };
    let session = session
        .join()
        .unwrap_or_else(|_| Err(ChannelError::Protocol("the session thread panicked".into())));
    let mut output = String::new();
    std::fs::File::open(&err)
        .and_then(|mut f| f.read_to_string(&mut output))
        .map_err(io_error(&err))?;
    Ok((status, output, session))
}

/// What a session gave, or the error it ended in: the firmware's own message when it sent
/// one.
pub(in crate::board) fn channel_session<T>(
    board: &str,
    status: std::process::ExitStatus,
    output: String,
    session: Result<T, ChannelError>,
) -> Result<T, BoardError> {
    let board = board.to_string();
    match session {
        Ok(run) if status.success() => Ok(run),
        Ok(_) => Err(BoardError::Qemu {
            board,
            status: format!("{status} after the session ended well"),
            output,
        }),
        Err(ChannelError::Device(message)) => Err(BoardError::from_device(board, message)),
        // The host gave up first (inputs that do not fit, another version, a frame it could
        // not read): its reason, not the device's reaction to the closed channel.
        Err(
            error @ (ChannelError::Inputs(_)
            | ChannelError::Version { .. }
            | ChannelError::Protocol(_)),
        ) => Err(BoardError::Channel {
            board,
            source: error,
        }),
        Err(error) => Err(match failure(&board, status, output) {
            BoardError::Qemu {
                board,
                status,
                output,
            } => BoardError::Qemu {
                board,
                status: format!("{status}; {}", kiln_codegen::error::chain(&error)),
                output,
            },
            other => other,
        }),
    }
}
