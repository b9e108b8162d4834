use clap::Parser;
use multi_subnet::cli::Cli;
use std::process::ExitCode;

// `serve` and `network` answer a request that panicked with an error and
// keep serving the others: that takes unwinding, which every native build
// keeps (the canisters abort, wasm32's own strategy). A build that aborts
// on a panic does not compile.
const _: () = assert!(cfg!(panic = "unwind"), "the servers catch panics: build with panic = \"unwind\"");

/// Failures end the program with one line on stderr: no backtrace, no usage dump.
fn one_line(text: &str) -> String {
    text.lines().map(str::trim).filter(|l| !l.is_empty()).collect::<Vec<_>>().join("; ")
}

fn main() -> ExitCode {
    // The report is ours to print: keep a PocketIC server's logs out of it
    // unless asked for.
    if std::env::var_os("POCKET_IC_MUTE_SERVER").is_none() {
        // SAFETY: no other thread exists yet.
        unsafe { std::env::set_var("POCKET_IC_MUTE_SERVER", "1") };
    }
    // The pocket-ic client panics on a server's errors; those end in one line too.
    std::panic::set_hook(Box::new(|info| eprintln!("error: {}", one_line(&info.to_string()))));
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => {
            let _ = e.print();
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            // clap's lines up to its usage: a list of what is missing
            // follows a line that ends with ':'.
            let rendered = e.render().to_string();
            let lines: Vec<&str> = rendered.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
            let said = lines
                .iter()
                .take_while(|l| !["Usage:", "tip:", "For more information"].iter().any(|p| l.starts_with(p)));
            eprintln!("{} (see --help)", said.copied().collect::<Vec<_>>().join(" "));
            return ExitCode::from(2);
        }
    };
    match cli.execute() {
        Ok(output) => {
            if let Some(note) = output.fallback_note {
                eprintln!("note: {note}");
            }
            print!("{}", output.stdout);
            match output.failure {
                None => ExitCode::SUCCESS,
                Some(failure) => {
                    eprintln!("error: {failure}");
                    ExitCode::FAILURE
                }
            }
        }
        Err(e) => {
            eprintln!("error: {}", one_line(&format!("{e:#}")));
            ExitCode::FAILURE
        }
    }
}
