fn main() {
    kiln_board_build::build(&["-mcpu=cortex-m4", "-mfloat-abi=hard", "-mfpu=fpv4-sp-d16"]);
}
