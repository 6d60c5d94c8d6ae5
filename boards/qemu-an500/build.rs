fn main() {
    // QEMU's cortex-m7 has the double-precision FPU (FPv5-D16: MVFR0 0x10110221) and the DSP
    // extension.
    kiln_board_build::build(&["-mcpu=cortex-m7", "-mfloat-abi=hard", "-mfpu=fpv5-d16"]);
}
