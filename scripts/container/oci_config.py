#!/usr/bin/env python3
"""The runtime configuration (config.json) of one container of moot's image, for runc or crun.

    oci_config.py CONFIG ROOTFS SECCOMP SCRIPT [--bind SRC:DST[:rw]]...

SCRIPT runs by `/bin/sh -c` as root, with the root read-only, /tmp a tmpfs, the host's network
(a fake model listens on its loopback), Docker's default capabilities and SECCOMP (an OCI
linux.seccomp, oci_seccomp.py's output) as the filter. Each --bind mounts SRC at DST, read-only
unless it ends in :rw. The image has no shell: a bind provides one.
"""

import argparse
import json

# The capabilities the seccomp profile was resolved for (oci_seccomp.py, beside this file).
from oci_seccomp import DEFAULT_CAPS

CAPS = sorted(DEFAULT_CAPS)


def bind(spec):
    source, target, *mode = spec.split(":")
    return {"destination": target, "type": "bind", "source": source,
            "options": ["rbind", "rw" if mode == ["rw"] else "ro"]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("config")
    parser.add_argument("rootfs")
    parser.add_argument("seccomp")
    parser.add_argument("script")
    parser.add_argument("--bind", action="append", default=[])
    args = parser.parse_args()
    with open(args.seccomp) as f:
        seccomp = json.load(f)
    config = {
        "ociVersion": "1.0.2",
        "root": {"path": args.rootfs, "readonly": True},
        "process": {
            "terminal": False, "cwd": "/", "user": {"uid": 0, "gid": 0},
            "args": ["/bin/sh", "-c", args.script],
            "env": ["PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/tmp/home", "TMPDIR=/tmp"],
            "capabilities": {k: CAPS for k in ("bounding", "effective", "permitted")},
            "rlimits": [{"type": "RLIMIT_NOFILE", "hard": 4096, "soft": 4096}],
            "noNewPrivileges": False,
        },
        "hostname": "moot-test",
        "mounts": [
            {"destination": "/proc", "type": "proc", "source": "proc"},
            {"destination": "/dev", "type": "tmpfs", "source": "tmpfs",
             "options": ["nosuid", "strictatime", "mode=755", "size=65536k"]},
            {"destination": "/dev/pts", "type": "devpts", "source": "devpts",
             "options": ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"]},
            {"destination": "/tmp", "type": "tmpfs", "source": "tmpfs",
             "options": ["nosuid", "nodev", "mode=1777", "size=524288k"]},
        ] + [bind(spec) for spec in args.bind],
        "linux": {
            "namespaces": [{"type": t} for t in ("pid", "ipc", "uts", "mount")],
            "seccomp": seccomp,
            "maskedPaths": ["/proc/kcore", "/proc/keys", "/proc/timer_list", "/sys/firmware"],
            "readonlyPaths": ["/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys",
                              "/proc/sysrq-trigger"],
        },
    }
    with open(args.config, "w") as f:
        json.dump(config, f)


if __name__ == "__main__":
    main()
