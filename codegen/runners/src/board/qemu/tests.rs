//! The command lines, counts and marks, checked on known text.

use super::*;

#[test]
fn counts_pair_up_into_steps() {
    let dir = IoDir::new().unwrap();
    let log = dir.path.join("insn.log");
    std::fs::write(
        &log,
        "kiln-insn 100\nkiln-insn 160\nkiln-insn 170\nkiln-insn 270\n\
                          kiln-insn-total 900\n",
    )
    .unwrap();
    let counts = read_counts(&log, "b").unwrap();
    assert_eq!(counts.step_instructions, [60, 100]);
    assert_eq!(counts.total_instructions, 900);
    assert!(counts.step_cycles.is_empty());
    assert_eq!(counts.total_cycles, None);
    std::fs::write(&log, "kiln-insn 100\nkiln-insn-total 900\n").unwrap();
    assert!(read_counts(&log, "b").is_err());
}

#[test]
fn cycles_pair_up_next_to_the_counts() {
    let dir = IoDir::new().unwrap();
    let log = dir.path.join("insn.log");
    let text = "kiln-insn 100 150\nkiln-insn 160 240\nkiln-insn 170 260\n\
                kiln-insn 270 400\nkiln-insn-total 900 1300\n";
    std::fs::write(&log, text).unwrap();
    let counts = read_counts(&log, "b").unwrap();
    assert_eq!(counts.step_instructions, [60, 100]);
    assert_eq!(counts.total_instructions, 900);
    assert_eq!(counts.step_cycles, [90, 140]);
    assert_eq!(counts.total_cycles, Some(1300));
    // The batch path reads the marks of whole lines only.
    let marks = read_marks(text);
    assert_eq!(marks[..2], [(100, Some(150)), (160, Some(240))]);
    assert_eq!(marks.len(), 4);
    assert_eq!(
        read_marks("kiln-insn 100 150\nkiln-insn 16"),
        [(100, Some(150))]
    );
    assert_eq!(read_marks("kiln-insn 100\n"), [(100, None)]);
    // Cycles in the total but not in a mark: the log is damaged.
    std::fs::write(
        &log,
        "kiln-insn 100\nkiln-insn 160 240\nkiln-insn-total 9 9\n",
    )
    .unwrap();
    assert!(read_counts(&log, "b").is_err());
    std::fs::write(&log, "kiln-insn 100 x\nkiln-insn 160\nkiln-insn-total 9\n").unwrap();
    assert!(read_counts(&log, "b").is_err());
}

#[test]
fn the_core_comes_from_the_cpu_or_the_machine() {
    let board = |line: &str| BoardInfo {
        name: "b".into(),
        target: "t".into(),
        cpu: kiln_codegen::Cpu::CortexM4F,
        emulated: true,
        flash_bytes: 1,
        ram_bytes: 1,
        code_in_ram: false,
        qemu: Some(line.split_whitespace().map(String::from).collect()),
        probe_chip: None,
    };
    let core = |line: &str| Core::of(&board(line));
    assert_eq!(
        core("qemu-system-arm -machine mps2-an386 -cpu cortex-m4 -nographic -kernel"),
        Some(Core::M4)
    );
    assert_eq!(
        core("qemu-system-arm -machine mps2-an385 -cpu cortex-m3 -kernel"),
        Some(Core::M3)
    );
    assert_eq!(
        core("qemu-system-arm -machine mps2-an505 -cpu cortex-m33"),
        Some(Core::M33)
    );
    assert_eq!(
        core("qemu-system-arm -machine mps2-an500 -cpu cortex-m7"),
        Some(Core::M7)
    );
    assert_eq!(
        core("qemu-system-arm -machine mps3-an547 -cpu cortex-m55"),
        Some(Core::M55)
    );
    assert_eq!(core("qemu-system-arm -machine mps3-an547"), Some(Core::M55));
    assert_eq!(
        core("qemu-system-arm -machine microbit -nographic"),
        Some(Core::M0)
    );
    assert_eq!(
        core("qemu-system-riscv32 -machine virt -bios none -kernel"),
        None
    );
    let plugin = Path::new("/p/libinsn.so");
    assert_eq!(
        plugin_args(plugin, 0x2000_0000, Some(Core::M33)),
        "/p/libinsn.so,marker=0x20000000,core=m33"
    );
    assert_eq!(plugin_args(plugin, 16, None), "/p/libinsn.so,marker=0x10");
}

#[test]
fn the_firmware_message_decides_the_error() {
    let status = Command::new("false").status().unwrap();
    let refused = "kiln: bundle refused: schedule is damaged: body CRC-32 0x1, header says 0x2";
    match failure("b", status, refused.into()) {
        BoardError::Refused { message, .. } => assert!(message.starts_with("schedule is")),
        other => panic!("{other}"),
    }
    match failure(
        "b",
        status,
        "kiln: cannot open input_0.bin on the host\n".into(),
    ) {
        BoardError::DeviceFailed { message, .. } => assert!(message.contains("input_0")),
        other => panic!("{other}"),
    }
    assert!(matches!(
        failure("b", status, "qemu: no such machine".into()),
        BoardError::Qemu { .. }
    ));
    assert_eq!(ran_steps("x\nkiln: ran 12 steps\n"), Some(12));
}

#[test]
fn the_channel_has_stdio_to_itself() {
    let args = ["-machine", "microbit", "-nographic", "-kernel"].map(String::from);
    let line = channel_command_line(&args).join(" ");
    assert_eq!(
        line,
        "-machine microbit -display none -monitor none -serial null -kernel"
    );
}

#[test]
fn the_channel_error_decides_the_error() {
    let failed = Command::new("false").status().unwrap();
    let ok = Command::new("true").status().unwrap();
    let device = |m: &str| Err::<ChannelRun, _>(ChannelError::Device(m.into()));
    let refused = channel_session("b", failed, String::new(), device("bundle refused: x"));
    assert!(matches!(refused, Err(BoardError::Refused { message, .. }) if message == "x"));
    let failed_run = channel_session("b", failed, String::new(), device("run failed: y"));
    assert!(matches!(failed_run, Err(BoardError::DeviceFailed { .. })));
    let stderr = "kiln: channel: the host closed the console\n".to_string();
    let inputs = Err::<ChannelRun, _>(ChannelError::Inputs("sizes".into()));
    let host = channel_session("b", failed, stderr.clone(), inputs);
    assert!(
        matches!(
            &host,
            Err(BoardError::Channel {
                source: ChannelError::Inputs(sizes),
                ..
            }) if sizes == "sizes"
        ),
        "{host:?}"
    );
    let closed = Err::<ChannelRun, _>(ChannelError::Closed(String::new()));
    let device = channel_session("b", failed, stderr, closed);
    assert!(
        matches!(device, Err(BoardError::DeviceFailed { .. })),
        "{device:?}"
    );
    let early = channel_session(
        "b",
        ok,
        String::new(),
        Err::<ChannelRun, _>(ChannelError::Closed("".into())),
    );
    assert!(early.is_err());
}
