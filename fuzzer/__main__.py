"""``python -m fuzzer`` is the same program as the ``numfuzz`` console script."""

from fuzzer.cli import main

if __name__ == "__main__":
    main(prog_name="numfuzz")
