"""The rules ``containerlint`` applies: Apptainer's own lists (what its definition parser accepts)
and the project's (required sections, labels and arguments). Data only."""

from __future__ import annotations

import re

# Apptainer's lists (pkg/build/types/parser/deffile.go)
VALID_SECTIONS = {
    "help",
    "setup",
    "files",
    "labels",
    "environment",
    "pre",
    "post",
    "runscript",
    "test",
    "startscript",
    "arguments",
}
APP_SECTIONS = {"appinstall", "applabels", "appfiles", "appenv", "apptest", "apphelp", "apprun", "appstart"}
VALID_HEADERS = {
    "bootstrap",
    "from",
    "includecmd",
    "mirrorurl",
    "updateurl",
    "osversion",
    "include",
    "library",
    "registry",
    "namespace",
    "stage",
    "product",
    "user",
    "regcode",
    "productpgp",
    "registerurl",
    "modules",
    "otherurl&n",
    "fingerprints",
    "confurl",
    "setopt",
}
BOOTSTRAP_AGENTS = {
    "library",
    "docker",
    "shub",
    "oras",
    "localimage",
    "yum",
    "zypper",
    "debootstrap",
    "arch",
    "busybox",
    "scratch",
    "docker-daemon",
    "docker-archive",
    "oci",
    "oci-archive",
    "dnf",
    "sif",
}
REGISTRY_AGENTS = {"docker", "oras", "library"}
BUILD_ARG_RE = re.compile(r"{{\s*(\w+)\s*}}")
COMMENT_BEFORE_RE = re.compile(r"\s*[#][^!]\s*.*")  # Apptainer's commentLineRegexp (unanchored)

SHELL_SECTIONS = {
    "post",
    "test",
    "runscript",
    "environment",
    "startscript",
    "setup",
    "pre",
    "appinstall",
    "apptest",
    "apprun",
    "appenv",
    "appstart",
}
# Project rules
REQUIRED_SECTIONS = ("help", "test", "runscript", "labels", "arguments")
FORBIDDEN_SECTIONS = {"setup": "runs on the build host as root", "pre": "runs on the build host as root"}
REQUIRED_LABELS = ("BaseImage", "BaseTag", "CudaVersion", "TorchVersion", "ScorePVersion", "Dnabert2Revision")
REQUIRED_ARGUMENTS = ("CUDA_VERSION", "TORCH_VERSION", "SCOREP_VERSION", "SCOREP_SHA256", "DNABERT2_REVISION")
DIGEST_RE = re.compile(
    r"^(?P<name>[a-z0-9][a-z0-9._/-]*(?::\d+)?(?:/[a-z0-9._-]+)*)(?::(?P<tag>[\w][\w.-]{0,127}))?@sha256:(?P<hex>[0-9a-f]{64})$"
)
