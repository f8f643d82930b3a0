"""`python -m sgl_scan` entry point."""

from sgl_scan.cli import run

if __name__ == "__main__":
    run()
