//! The `softbody` binary: parses the command line and dispatches.
//!
//! Exit codes: 0 success, 1 runtime failure, 2 bad input.

use std::process::ExitCode;

use clap::Parser;
use softbody::mesh::{self, ImportOptions, ValidateOptions};
use softbody::model::Springs;

mod cli;

use cli::{Cli, Command};

/// A failure with the exit code it maps to.
enum Failure {
    BadInput(anyhow::Error),
    Runtime(anyhow::Error),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Some(command) => run(command),
        None => {
            use clap::CommandFactory;
            let _ = Cli::command().print_help();
            Ok(())
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::BadInput(e)) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
        Err(Failure::Runtime(e)) => {
            eprintln!("error: {e:#}");
            ExitCode::from(1)
        }
    }
}

fn run(command: Command) -> Result<(), Failure> {
    match command {
        Command::Inspect { file, json, weld } => {
            let validate = ValidateOptions {
                weld_relative: weld,
            };
            let (surface, report) = mesh::load_obj(&file, &ImportOptions::default(), &validate)
                .map_err(|e| Failure::BadInput(e.into()))?;
            let springs = Springs::from_surface(&surface);
            if json {
                let mut value =
                    serde_json::to_value(&report).map_err(|e| Failure::Runtime(e.into()))?;
                value["springs"] = serde_json::json!({
                    "structural": springs.structural.len(),
                    "bending": springs.bending.len(),
                });
                println!("{value}");
            } else {
                print!("{report}");
                println!(
                    "  springs:     {} structural, {} bending",
                    springs.structural.len(),
                    springs.bending.len()
                );
            }
            Ok(())
        }
    }
}
