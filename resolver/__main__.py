"""The process around the CLI: ``rocm-vllm`` (the console script) and ``python -m resolver``.

A CLI process lives for one command and allocates tens of thousands of objects that live until
it ends (typer's command tree, the data, the records). With the default gen-0 threshold (700)
the cyclic collector walks them some fifty times during a ``check`` and once more at exit, about
a sixth of its run. The threshold is raised, not the collector turned off (a long fleet run still
frees its cycles), and everything alive when the command returns is frozen out of the final
collection. What the imports made (the modules, typer, click: some 28,000 objects that live as
long as the process) is frozen too, as soon as they are imported: the first collection of a
``check`` otherwise walks all of them with the matrix (16 ms of a 110 ms run at four times
today's data), and freezing also restarts the count toward it. Here, not in ``resolver.cli``:
importing the CLI (tests do) leaves the interpreter as it was.
"""

import gc


def run() -> None:
    gc.set_threshold(50_000, 20, 10)
    from resolver.cli import main

    gc.freeze()
    try:
        main()
    finally:
        gc.freeze()


if __name__ == "__main__":
    run()
