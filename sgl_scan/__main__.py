"""`python -m sgl_scan` entry point."""

from sgl_scan.cli import main

if __name__ == "__main__":
    main()
