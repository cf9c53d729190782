#!/usr/bin/env python3
"""A container engine's seccomp profile as the OCI runtime spec's linux.seccomp, for runc or crun.

    oci_seccomp.py PROFILE [--without PREFIX]...

PROFILE is Docker's (moby's profiles/seccomp/default.json) or Podman's (containers-common's
seccomp.json): both give every rule conditions (`includes`, `excludes`: capabilities,
architectures, a minimum kernel) that the engine resolves when it starts a container. This
resolves them as the engine does for a container with Docker's default capabilities on this
machine's architecture and kernel, and prints the result. `--without landlock` drops every
call whose name starts with `landlock`, as a profile written before Landlock does: the calls
then get the profile's default action (Docker: EPERM, Podman: ENOSYS).
"""

import argparse
import json
import os
import sys

# Docker's default capability set (moby's oci/caps/defaults.go), which Podman's default
# matches but for MKNOD, NET_RAW and AUDIT_WRITE: the rules that differ between them need
# CAP_SYS_ADMIN and friends, held by neither.
DEFAULT_CAPS = {
    "CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD", "CAP_NET_RAW",
    "CAP_SETGID", "CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE",
    "CAP_SYS_CHROOT", "CAP_KILL", "CAP_AUDIT_WRITE",
}
# This machine's architecture as the OCI spec names it, and as the profiles' conditions do (Go's
# names).
ARCH, GOARCH = {"x86_64": ("SCMP_ARCH_X86_64", "amd64"),
                "aarch64": ("SCMP_ARCH_AARCH64", "arm64")}[os.uname().machine]


def kernel_at_least(wanted):
    have = tuple(int(n) for n in os.uname().release.split("-")[0].split(".")[:2])
    return have >= tuple(int(n) for n in wanted.split(".")[:2])


def applies(rule):
    inc, exc = rule.get("includes") or {}, rule.get("excludes") or {}
    return (
        set(inc.get("caps") or []) <= DEFAULT_CAPS
        and (not inc.get("arches") or GOARCH in inc["arches"])
        and (not inc.get("minKernel") or kernel_at_least(inc["minKernel"]))
        and not set(exc.get("caps") or []) & DEFAULT_CAPS
        and GOARCH not in (exc.get("arches") or [])
    )


def convert(profile, without):
    arches = [ARCH]
    for entry in profile.get("archMap") or []:
        if entry["architecture"] == ARCH:
            arches += entry.get("subArchitectures") or []
    out = {"defaultAction": profile["defaultAction"], "architectures": arches, "syscalls": []}
    if profile.get("defaultErrnoRet") is not None:
        out["defaultErrnoRet"] = profile["defaultErrnoRet"]
    for rule in profile["syscalls"]:
        if not applies(rule):
            continue
        names = [n for n in rule["names"] if not any(n.startswith(p) for p in without)]
        if not names:
            continue
        converted = {"names": names, "action": rule["action"]}
        if rule.get("errnoRet") is not None:
            converted["errnoRet"] = rule["errnoRet"]
        if rule.get("args"):
            converted["args"] = [
                {k: a[k] for k in ("index", "value", "valueTwo", "op") if k in a}
                for a in rule["args"]
            ]
        out["syscalls"].append(converted)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("profile")
    parser.add_argument("--without", action="append", default=[])
    args = parser.parse_args()
    with open(args.profile) as f:
        profile = json.load(f)
    json.dump(convert(profile, args.without), sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
