fn main() {
    kiln_board_build::build(&["-mcpu=cortex-m0", "-mfloat-abi=soft"]);
}
