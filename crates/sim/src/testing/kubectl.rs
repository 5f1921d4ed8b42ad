//! The real kubectl against a sim cluster: what a user's client sends and sees.
//!
//! Why one helper: the sim's and the Deployment controller's kubectl tests each had their own
//! way to run it, and only some kept kubectl's discovery cache out of `$HOME`, where tests
//! running at once would share it.

use std::path::{Path, PathBuf};
use std::process::Output;

use tokio::process::Command;

use crate::SimCluster;

/// The kubectl the tests run (the machine's, 1.27–1.33).
pub const KUBECTL: &str = "/usr/bin/kubectl";

/// kubectl with its kubeconfig, discovery cache and `$HOME` in one directory of the test's.
pub struct Kubectl {
    dir: PathBuf,
}

impl Kubectl {
    /// Writes `cluster`'s kubeconfig into `dir` and runs kubectl with it.
    pub fn for_cluster(cluster: &SimCluster, dir: &Path) -> Self {
        cluster
            .write_kubeconfig(&dir.join("kubeconfig"))
            .unwrap_or_else(|e| panic!("writing the kubeconfig into {}: {e}", dir.display()));
        Self {
            dir: dir.to_path_buf(),
        }
    }

    /// A kubectl command with the cluster's kubeconfig, for a test that needs its pipes.
    pub fn command(&self) -> Command {
        let mut cmd = Command::new(KUBECTL);
        cmd.arg("--kubeconfig")
            .arg(self.dir.join("kubeconfig"))
            .arg("--cache-dir")
            .arg(self.dir.join("cache"))
            .env("HOME", &self.dir)
            .kill_on_drop(true);
        cmd
    }

    /// Runs kubectl with `args` to the end, whether it succeeds or not.
    pub async fn output(&self, args: &[&str]) -> Output {
        self.command()
            .args(args)
            .output()
            .await
            .unwrap_or_else(|e| panic!("running {KUBECTL}: {e}"))
    }

    /// Runs kubectl with `args`; panics with its stderr unless it succeeds; returns stdout.
    pub async fn run(&self, args: &[&str]) -> String {
        let out = self.output(args).await;
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(
            out.status.success(),
            "kubectl {args:?} failed: {}\n{stdout}",
            String::from_utf8_lossy(&out.stderr)
        );
        stdout
    }
}
