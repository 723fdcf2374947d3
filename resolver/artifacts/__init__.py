"""What the tool hands over or reads: container images and their registry (``images``,
``registry``, ``credentials``), the Docker Engine and BuildKit (``engine``, ``buildkit``), run
commands (``runcmd``, ``apptainer``, ``parallel``), the source-build Dockerfile (``dockerfile``) and
the audit of an artifact's GPU code (``audit``)."""
