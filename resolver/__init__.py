"""rocm-vllm-resolver: can this AMD GPU node run vLLM, and exactly how?"""

__version__ = "0.1.0"
