//! The `tomii` command; see `tomii_core::cli::app` for what it does.

use std::process::ExitCode;

fn main() -> ExitCode {
    std::panic::set_hook(Box::new(|info| {
        let message = tomii_types::panic_message(info.payload());
        let place = info.location().map(|l| format!(" at {}:{}", l.file(), l.line())).unwrap_or_default();
        eprintln!("error: internal error (please report it): {message}{place}");
    }));
    ExitCode::from(tomii_core::cli::app::main(std::env::args_os(), None))
}
