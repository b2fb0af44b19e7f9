//! The `volley` binary in a test: where it is ([`volley!`](crate::volley)), a server on a port
//! chosen at run time, a command line, and the workspace's files.

use std::{
    path::{Path, PathBuf},
    process::Command,
};

use crate::VolleyProcess;

/// The `volley` binary of the calling test crate (its `CARGO_BIN_EXE_volley`), as a [`Volley`].
#[macro_export]
macro_rules! volley {
    () => {
        $crate::Volley::new(env!("CARGO_BIN_EXE_volley"))
    };
}

/// The `volley` binary under test.
#[derive(Clone, Copy, Debug)]
pub struct Volley(&'static str);

impl Volley {
    /// The binary at `bin` (use [`volley!`](crate::volley)).
    pub const fn new(bin: &'static str) -> Volley {
        Volley(bin)
    }

    /// Its path.
    pub fn bin(self) -> &'static Path {
        Path::new(self.0)
    }

    /// A command running it, with `args`.
    pub fn command(self, args: &[&str]) -> Command {
        let mut c = Command::new(self.bin());
        c.args(args);
        c
    }

    /// `volley serve --addr 127.0.0.1:0` with `flags`, once it listens.
    pub fn serve(self, flags: &[&str]) -> VolleyProcess {
        let mut args = vec!["serve", "--addr", "127.0.0.1:0"];
        args.extend_from_slice(flags);
        VolleyProcess::start(self.bin(), &args)
    }
}

/// The workspace's root directory.
pub fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A file of the workspace (`proto/api/users.proto`), as a string for a command line.
pub fn workspace_file(relative: &str) -> String {
    workspace().join(relative).display().to_string()
}
