fn main() {
    kiln_board_build::build(&["-mcpu=cortex-m33", "-mfloat-abi=hard", "-mfpu=fpv5-sp-d16"]);
}
