fn main() {
    std::process::exit(kwire::cli::main());
}
