fn main() {
    kiln_board_build::build(&["-march=rv32imac", "-mabi=ilp32"]);
}
