fn main() {
    kiln_board_build::build(&["-mcpu=cortex-m0plus", "-mfloat-abi=soft"]);
}
