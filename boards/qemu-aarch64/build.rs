fn main() {
    kiln_board_build::build();
}
