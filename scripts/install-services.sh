#!/usr/bin/env bash
# Debian packages the image tests run for real: the Docker Engine (dockerd), the CNCF distribution
# registry, static busybox (the stand-in images are built FROM scratch with it) and openssl (signs
# the test token server's JWTs); the fleet tests run an eight-node Slurm cluster on this machine
# (slurm-wlm: slurmctld, slurmd, srun, sbatch; munge for its authentication).
# Idempotent: installs only what is missing.
set -euo pipefail
missing=()
command -v dockerd >/dev/null 2>&1 || [ -x /usr/sbin/dockerd ] || missing+=(docker.io)
command -v docker-registry >/dev/null 2>&1 || missing+=(docker-registry)
[ -x /bin/busybox ] && /bin/busybox --list >/dev/null 2>&1 && ldd /bin/busybox 2>&1 | grep -q "not a dynamic" || missing+=(busybox-static)
command -v openssl >/dev/null 2>&1 || missing+=(openssl)
command -v slurmctld >/dev/null 2>&1 || [ -x /usr/sbin/slurmctld ] || missing+=(slurm-wlm)
command -v munged >/dev/null 2>&1 || [ -x /usr/sbin/munged ] || missing+=(munge)
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "install-services: need root to install: ${missing[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
