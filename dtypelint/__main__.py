"""Allow ``python -m dtypelint``."""

from dtypelint.cli import main

if __name__ == "__main__":
    main()
