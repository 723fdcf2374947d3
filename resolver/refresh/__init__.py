"""Keep the data current: read upstream sources and diff (or write) refreshed records.

One module per upstream (``vllm``, ``images``, ``wheels``, ``rocm``), one HTTP session
(``http``), the Dockerfile reader (``dockerfile_parse``), the comparison (``diff``) and the run
(``runner.refresh``). Nothing here is imported on the ``check`` path.
"""
