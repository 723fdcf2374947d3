"""Fleets: many node reports in, one plan out.

``reports`` reads probe JSON files, ``slurm`` gathers them through ``srun``, ``kube`` reads nodes
from ``kubectl get nodes -o json``; ``plan`` groups nodes by fingerprint and decides each group
once with ``resolver.solve``; ``artifacts`` writes Slurm batch scripts and Kubernetes manifests.
``hostlist`` reads and writes Slurm host lists (``gpu[001-128]``). Nothing here prints or exits.
"""
