//! Command-line interface: the subcommands of the `softbody` binary.

use std::path::PathBuf;

use clap::{Parser, Subcommand};

/// Softbody Studio: author soft bodies from OBJ meshes.
#[derive(Debug, Parser)]
#[command(name = "softbody", version, about)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// Subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Import and validate a mesh, and report what was found and repaired.
    Inspect {
        /// An OBJ file.
        file: PathBuf,
        /// Print one JSON object instead of text.
        #[arg(long)]
        json: bool,
        /// Weld vertices closer than this fraction of the bounding-box diagonal.
        #[arg(long, default_value_t = 1e-6)]
        weld: f64,
    },
}
