#!/usr/bin/env bash
# make image: an OCI image of moot with no registry and no container engine: the static release
# binaries (make build), their man pages, the adapters and the shell completions, as
# `make install DESTDIR=... PREFIX=/usr/local` lays them out, in one layer FROM scratch.
#
#   build.sh OUT      OUT/oci: the OCI image layout (tag latest); OUT/moot-oci.tar: the same as
#                     one archive (`podman load -i`, `skopeo copy oci-archive:...`)
#
# The layer is reproducible (sorted, owned by root, mtime 0), so the same binaries give the same
# image digest. The image holds no shell: a job image adds one CLI and its runtime on top
# (examples/container/Containerfile). Prints the image's digest and sizes.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
out=${1:?usage: build.sh OUT}
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/moot-image.XXXXXX")
trap 'rm -rf "$work"' EXIT

make -s -C "$root" install DESTDIR="$work/rootfs" PREFIX=/usr/local >"$work/install.log" ||
    { echo "image: make install failed: $(tail -n 3 "$work/install.log")" >&2; exit 1; }
# Every binary static: FROM scratch has no loader to run anything else. (An ELF program header
# of type PT_INTERP names the loader a dynamic binary needs.)
python3 - "$work"/rootfs/usr/local/bin/* <<'PY'
import struct, sys
for path in sys.argv[1:]:
    with open(path, "rb") as f:
        elf = f.read(64)
        phoff, = struct.unpack_from("<Q", elf, 32)
        phentsize, phnum = struct.unpack_from("<HH", elf, 54)
        f.seek(phoff)
        headers = f.read(phentsize * phnum)
    if any(struct.unpack_from("<I", headers, i * phentsize)[0] == 3 for i in range(phnum)):
        sys.exit("image: %s is dynamically linked; build it with make build" % path)
PY
mkdir -p "$work/rootfs/tmp" && chmod 1777 "$work/rootfs/tmp"

tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner \
    -C "$work/rootfs" -cf "$work/layer.tar" .
gzip -9n <"$work/layer.tar" >"$work/layer.tar.gz"

rm -rf "$out/oci"
mkdir -p "$out/oci/blobs/sha256"
python3 - "$work" "$out/oci" <<'PY'
import hashlib, json, os, shutil, sys
work, layout = sys.argv[1], sys.argv[2]

def digest(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return "sha256:" + h.hexdigest()

def blob(data_or_path, media_type):
    if isinstance(data_or_path, bytes):
        path = os.path.join(work, "blob")
        with open(path, "wb") as f:
            f.write(data_or_path)
    else:
        path = data_or_path
    d = digest(path)
    shutil.copyfile(path, os.path.join(layout, "blobs", "sha256", d.split(":")[1]))
    return {"mediaType": media_type, "digest": d, "size": os.path.getsize(path)}

layer = blob(os.path.join(work, "layer.tar.gz"), "application/vnd.oci.image.layer.v1.tar+gzip")
config = {
    "architecture": {"x86_64": "amd64", "aarch64": "arm64"}[os.uname().machine],
    "os": "linux",
    "config": {
        "Env": ["PATH=/usr/local/bin", "MANPATH=/usr/local/share/man"],
        "WorkingDir": "/",
        "Labels": {"org.opencontainers.image.title": "moot"},
    },
    "rootfs": {"type": "layers", "diff_ids": [digest(os.path.join(work, "layer.tar"))]},
    "history": [{"created_by": "make image (scripts/image/build.sh)"}],
}
config_blob = blob(json.dumps(config, sort_keys=True).encode(), "application/vnd.oci.image.config.v1+json")
manifest = {
    "schemaVersion": 2,
    "mediaType": "application/vnd.oci.image.manifest.v1+json",
    "config": config_blob,
    "layers": [layer],
}
manifest_blob = blob(json.dumps(manifest, sort_keys=True).encode(), "application/vnd.oci.image.manifest.v1+json")
manifest_blob["annotations"] = {"org.opencontainers.image.ref.name": "latest"}
with open(os.path.join(layout, "index.json"), "w") as f:
    json.dump({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
               "manifests": [manifest_blob]}, f, sort_keys=True)
with open(os.path.join(layout, "oci-layout"), "w") as f:
    json.dump({"imageLayoutVersion": "1.0.0"}, f)
print("image: %s, layer %d bytes compressed (%d unpacked)" % (
    manifest_blob["digest"], layer["size"], os.path.getsize(os.path.join(work, "layer.tar"))))
PY
tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner \
    -C "$out/oci" -cf "$out/moot-oci.tar" .
echo "image: $out/oci (tag latest), $out/moot-oci.tar ($(stat -c %s "$out/moot-oci.tar") bytes)"
