fn main() {
    // `-march` again after the one the `cc` crate adds for `thumbv8m.main` (plain
    // armv8-m.main), so that the kernels keep the M33's DSP extension (`__ARM_FEATURE_DSP`).
    kiln_board_build::build(&[
        "-mcpu=cortex-m33",
        "-march=armv8-m.main+dsp+fp",
        "-mfloat-abi=hard",
        "-mfpu=fpv5-sp-d16",
    ]);
}
