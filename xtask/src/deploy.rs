//! `deploy/kubernetes.yaml` checked against the Kubernetes API schemas (`kubernetes-validate
//! --strict`: unknown fields are errors), for an older Kubernetes release and the newest the
//! package ships. The validator is installed at pinned versions into `target/kubevalidate`
//! (deploy/requirements-validate.txt).

use anyhow::Result;
use std::path::Path;
use std::process::Command;

/// Kubernetes releases the example must be valid for.
const VERSIONS: [&str; 2] = ["1.32.0", "1.37.0"];

pub fn validate(root: &Path) -> Result<()> {
    let python = crate::ensure_python_venv("target/kubevalidate", "deploy/requirements-validate.txt")?;
    let bin = python.with_file_name("kubernetes-validate");
    for version in VERSIONS {
        crate::run(Command::new(&bin).current_dir(root).args([
            "--strict",
            "--quiet",
            "-k",
            version,
            "deploy/kubernetes.yaml",
        ]))?;
    }
    Ok(())
}
