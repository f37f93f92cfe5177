//! `--engine=strata` (placeholder until the engine lands on main).

use anyhow::{bail, Result};

use super::Engine;
use crate::config::Config;

pub const VERSION: &str = env!("CARGO_PKG_VERSION");

pub const HONOURED_FLAGS: &[&str] = &[];

pub fn open(_cfg: &Config) -> Result<Box<dyn Engine>> {
    bail!("the strata engine is not integrated in this build yet")
}
